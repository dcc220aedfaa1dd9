#!/usr/bin/python3
"""e2e_triggers — a trigger stops the job on a slow iteration and keeps what led to it (docs/usage.md,
"Triggers"). The stencil's last rank sleeps in one iteration (--slow-iteration, --slow-ms), so that the
other ranks' MPI_Allreduce of that iteration takes seconds; otfx-run --trigger watches for it on ranks
served by two event places. Asserted: the trigger fires once for the job (the other place's report is
merged), the application is paused and resumes on command, the snapshot holds the slow iteration and
every iteration before it, the clients get the notices, otfxctl trigger add/list/remove work and bad
triggers are refused with the column of the error. A second trigger, late-sender, cannot see the halo
messages between the two places' ranks: trigger list counts them as unseen and a place says so."""
import os
import subprocess
import time

import otf2

from e2e_job import Failure, Job, check, run

SLOW_ITERATION = 12
SLOW_MS = 3000
THRESHOLD = "2s"  # far above any iteration of the loaded machine, far below the slow one


def ctl(args, job, *words):
    result = subprocess.run([os.path.abspath(args.otfxctl), *words], capture_output=True, text=True,
                            env=dict(os.environ, OTFX_SESSION_DIR=job.work), timeout=60)
    return result.returncode, result.stdout, result.stderr


def wait_for(what, probe, timeout=90.0, interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"not within {timeout} s: {what}")
        time.sleep(interval)


def triggers(client):
    return {line.int("id"): line for line in client.request("trigger list") if line.type == "trigger"}


def allreduce_durations(archive, rank):
    """MPI_Allreduce durations of `rank` in the archive, in order (ns)."""
    durations, open_since = [], []
    with otf2.reader.open(archive) as trace:
        resolution = trace.definitions.clock_properties.timer_resolution
        for location, event in trace.events:
            name = location.name or ""
            if name != f"rank {rank}" and not name.startswith(f"rank {rank} "):
                continue
            kind = type(event).__name__
            if kind == "Enter":
                open_since.append((event.region.name, event.time))
            elif kind == "Leave" and open_since:
                region, since = open_since.pop()
                if region == "MPI_Allreduce":
                    durations.append((event.time - since) * 1_000_000_000 // resolution)
    return durations


def main(args):
    # a bad trigger is refused before the job starts, with its column
    result = subprocess.run([os.path.abspath(args.otfx_run), "-n", "1", "--trigger",
                             "duration(MPI_Send) > fast => notify", "--", "true"], capture_output=True, text=True)
    check(result.returncode == 2 and "at column 22" in result.stderr,
          f"otfx-run refuses a bad --trigger with its column (exit {result.returncode}: {result.stderr.strip()})")

    spec = f"duration(MPI_Allreduce) > {THRESHOLD} on ranks 0-3 => pause-app, snapshot(-60s,+0.5s) to slow, notify"
    # never fires (no receive waits that long); there only for the messages it cannot see
    late = "late-sender > 1000s => notify"
    job = Job(args, ranks=4, places=3, name="triggers", extra=["--buffer", "4M", "--trigger", spec, "--trigger", late],
              example_args=["--slow-iteration", str(SLOW_ITERATION), "--slow-ms", str(SLOW_MS)])
    session = job.start()
    try:
        with job.client(session) as client:
            listed = triggers(client)
            check(sorted(listed) == [1, 2] and listed[1]["state"] in ("armed", "firing", "spent") and
                  listed[2]["spec"].startswith("late-sender > 1000000000000ns"),
                  f"trigger list shows otfx-run's triggers as 1 and 2 ({listed})")

            # otfxctl: a bad trigger is refused with its column; a good one is added, listed and removed
            code, _, err = ctl(args, job, "trigger", "add", "marker(x)", "=>", "explode")
            check(code == 2 and "column 14" in err, f"otfxctl refuses a bad trigger with its column ({err.strip()})")
            code, out, err = ctl(args, job, "trigger", "add", "marker(never)", "=>", "notify")
            check(code == 0 and "3" in out, f"otfxctl trigger add answers with the new trigger ({out.strip()} {err})")
            check(sorted(triggers(client)) == [1, 2, 3], "trigger list shows the three triggers")
            code, out, err = ctl(args, job, "trigger", "remove", "3")
            check(code == 0, f"otfxctl trigger remove 3 ({out.strip()} {err})")
            code, _, err = ctl(args, job, "trigger", "remove", "3")
            check(code == 1 and "no trigger 3" in err, f"a removed trigger is gone ({err.strip()})")
            check(sorted(triggers(client)) == [1, 2], "trigger list shows otfx-run's triggers only")

            fired = wait_for("trigger 1 fired and acted",
                             lambda: (lambda t: t if t["state"] == "spent" else None)(triggers(client)[1]))
            check(fired.int("fired") == 1, "the trigger fired once")
            check("MPI_Allreduce took" in fired["detail"], f"the firing says what it saw: {fired['detail']}")
            check(fired.int("pause_latency_ns") > 0, f"every rank paused {fired.int('pause_latency_ns')} ns after "
                  "the firing event")
            # the other event place saw the same slow iteration: merged, not acted on again
            merged = wait_for("the other place's report merged",
                              lambda: (lambda t: t if t.int("merged") >= 1 else None)(triggers(client)[1]))
            check(merged.int("merged") == 1 and merged.int("fired") == 1,
                  f"two event places reported, the job acted once (fired=1 merged={merged.int('merged')})")

            unseen = wait_for("late-sender's unseen messages counted",
                              lambda: (lambda t: t if t.int("unseen") > 0 else None)(triggers(client)[2]))
            check(unseen.int("fired") == 0 and "unseen" not in triggers(client)[1].fields,
                  f"late-sender counts the messages between the places' ranks as unseen "
                  f"(unseen={unseen.int('unseen')}), and only late-sender has the field")

            status = client.request("status")
            summary = [line for line in status if line.type == "summary"][0]
            check(summary["app_state"] == "paused", f"the application is paused ({summary['app_state']})")

            archive = fired["archive"]
            check(os.path.exists(archive) and archive.endswith("slow.otf2"), f"the snapshot was written: {archive}")
            check(not os.path.exists(os.path.join(job.work, "slow-2.otf2")), "and only one snapshot")
            check(fired.int("window_reduced") == 0, "no reduction took part of the window")
            durations = allreduce_durations(archive, 0)
            slow = [i for i, d in enumerate(durations) if d > 2_000_000_000]
            check(slow and slow[0] == SLOW_ITERATION - 1,
                  f"the snapshot holds the slow iteration ({SLOW_ITERATION}) and the {SLOW_ITERATION - 1} before it "
                  f"(slow MPI_Allreduce at index {slow[:1]} of {len(durations)})")

            client.request("app resume")
            wait_for("the application runs again",
                     lambda: [l for l in client.request("status") if l.type == "summary"][0]["app_state"] == "running")
            check(True, "the application resumed on command")
            client.request("status")  # take the notices sent meanwhile
            events = [n["event"] for n in client.notices if n.get("trigger") == "1"]
            check(events.count("trigger-fired") == 1 and events.count("trigger-acted") == 1 and
                  events.count("trigger-merged") == 1, f"the clients got one firing, its end, one merged report ({events})")
        output = job.finish()
        check("otfx: trigger 1 fired (1 of 1)" in output, "the root said so on stderr")
        check(output.count("(late-sender): rank") >= 1 and "which another event place serves" in output,
              "a place warned that late-sender cannot see messages from the other place's ranks")
        check("otfx: trigger 2 fired" not in output, "late-sender did not fire")
    finally:
        job.kill()


if __name__ == "__main__":
    run(main)

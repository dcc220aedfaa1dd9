#!/usr/bin/python3
"""trigger_bench — how fast a trigger stops the job and how much history its snapshot holds (a benchmark).

    tbon/bench/trigger_bench.py --otfx-run build/dev/capture/otfx-run --example build/dev/examples/stencil \\
        [--ranks 4] [--places 3] [--repeat 5] [--buffer 64M] [--slow-iteration 2000] [--before 60]

Runs the stencil REPEAT times under otfx-run with one trigger,

    duration(MPI_Allreduce) > 1s => pause-app, pause-recording, snapshot(-BEFOREs) to bench-K

and the stencil's test option --slow-iteration SLOW --slow-ms 2000 (its last rank sleeps 2 s in
iteration SLOW, so the other ranks' MPI_Allreduce of that iteration fires the trigger). From `trigger list`
and the snapshot's place lines it prints key=value lines, the median (and max) over the runs of
  pause_latency_ms        the firing event (the slow MPI_Allreduce's end on the first rank that saw it)
                          until every application rank acknowledged being paused, on the job's clock
  recording_latency_ms    the same until every rank acknowledged recording stopped
  history_s               how far back the snapshot reaches: the firing event minus the oldest event held
                          (the window asks for BEFORE seconds; a full buffer keeps less)
  snapshot_events         events in the snapshot
  window_reduced          traces a reduction took part of the window from (0: the window is whole)
  merged                  reports of other event places merged into the firing
and the CPU time (user + system) of the job per run. The figures include the ranks' flush period while a
trigger is armed (0.1 s): the firing event reaches its place at the rank's next flush."""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import otfx_client  # noqa: E402


def one_run(args, work, run):
    stop = os.path.join(work, "stop")
    if os.path.exists(stop):
        os.unlink(stop)
    spec = (f"duration(MPI_Allreduce) > 1s => pause-app, pause-recording, snapshot(-{args.before}s) "
            f"to bench-{run}")
    env = dict(os.environ)
    env.setdefault("MPIR_CVAR_POLLS_BEFORE_YIELD", "10")
    started = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = open(os.path.join(work, f"job-{run}.log"), "wb")
    job = subprocess.Popen([args.otfx_run, "-n", str(args.ranks), "--places", str(args.places), "--session-dir",
                            work, "--snapshot-dir", work, "--job-id", f"bench{run}", "--buffer", args.buffer,
                            "--trigger", spec, "--", args.example, "--until-file", stop, "--slow-iteration",
                            str(args.slow_iteration), "--slow-ms", "2000"],
                           stdout=log, stderr=subprocess.STDOUT, cwd=work, env=env)
    try:
        session = otfx_client.read_session(work, timeout=120, newer_than=started - 1)
        with otfx_client.Client(session, timeout=120) as client:
            deadline = time.monotonic() + 300
            while True:
                trigger = [line for line in client.request("trigger list") if line.type == "trigger"][0]
                if trigger["state"] == "spent":
                    break
                if time.monotonic() > deadline or job.poll() is not None:
                    raise RuntimeError(f"the trigger did not act (see {log.name})")
                time.sleep(0.2)
            time.sleep(1.0)  # the other places' reports
            trigger = [line for line in client.request("trigger list") if line.type == "trigger"][0]
            client.request("app resume")
            client.request("record resume")
    finally:
        open(stop, "w").close()
        job.wait(timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    fired = trigger.int("last_time")
    return {
        "pause_latency_ms": trigger.int("pause_latency_ns") / 1e6,
        "recording_latency_ms": trigger.int("recording_latency_ns") / 1e6,
        "history_s": (fired - trigger.int("held_from")) / 1e9,
        "snapshot_events": trigger.int("snapshot_events"),
        "window_reduced": trigger.int("window_reduced"),
        "merged": trigger.int("merged"),
        "job_cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--places", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--buffer", default="64M")
    parser.add_argument("--slow-iteration", type=int, default=2000)
    parser.add_argument("--before", type=int, default=60)
    args = parser.parse_args()
    args.otfx_run, args.example = os.path.abspath(args.otfx_run), os.path.abspath(args.example)
    work = tempfile.mkdtemp(prefix="otfx-trigger-bench-")
    runs = [one_run(args, work, run) for run in range(1, args.repeat + 1)]
    shutil.rmtree(work, ignore_errors=True)  # kept when a run failed: its job log says why
    print(f"ranks={args.ranks} places={args.places} buffer={args.buffer} slow_iteration={args.slow_iteration} "
          f"before_s={args.before} runs={len(runs)}")
    for key in runs[0]:
        values = sorted(run[key] for run in runs)
        print(f"{key}={statistics.median(values):.6g} {key}_max={values[-1]:.6g}")
    print("load=" + open("/proc/loadavg").read().split(" ")[0])


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""e2e.long_run — a run far longer than the buffer: 8 stencil ranks, 3 places in a tree of fan-in 2, 64K per
rank. While it runs, status, profile and timeline queries come every half second and every place must stay
within its budget; once the buffers have filled and been reduced the reduction switches from ring to time,
and the run goes on until both places have reduced by time; at the end every rank's held calls (exact
profiles under reduction) equal the calls the program made, and every place's peak memory stays under
budget x traces + a constant.

The phases wait for states, not for a time: 8 ranks on 2 cores run the stencil's MPI_Allreduce of doubles
at the pace of MPICH's blocking reduction (exact results: capture/README.md, "Blocking calls stay
steerable"), a few hundred iterations a second or fewer under load."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_job  # noqa: E402
from e2e_job import check  # noqa: E402

CONSTANT_KIB = 48 * 1024  # MPI, libevent, threads, scratch: a place holds ~28 MiB without traces here


def main(args):
    """long run under a small buffer"""
    job = e2e_job.Job(args, ranks=8, places=3, extra=["--fanin", "2", "--buffer", "64K"], name="e2e-long")
    session = job.start()
    try:
        reduced = watch(job, session, seconds=float(os.environ.get("OTFX_E2E_SECONDS", "15")))
    except BaseException:
        job.kill()
        print(job.output())
        raise
    check(reduced, "the buffers filled and were reduced during the run")
    output = job.finish()
    compare_calls(output)
    check_memory(output)


def watch(job, session, seconds):
    """Queries every half second for at least `seconds`, until the buffers have been reduced (then the
    switch to time reduction) and until both places have reduced by time; each phase within 120 s."""
    queries = 0
    start = time.monotonic()
    phase_end = start + 120
    switched = reduced = time_reduced = False
    with job.client(session) as client:
        while True:
            now = time.monotonic()
            if not switched and reduced and now >= start + seconds / 2:
                reply = client.request("reduction time")
                check(len([line for line in reply if line.type == "place"]) == 2,
                      "both event places switched to time reduction once the buffers were reduced")
                switched = True
                phase_end = now + 120
            lines = client.request("status")
            places = [line for line in lines if line.type == "place"]
            for place in places:
                if place.int("buffer_used") > place.int("buffer_budget"):
                    raise e2e_job.Failure(f"place over budget: {place}")
                reduced = reduced or place.int("events_reduced") > 0
            client.request("profile")
            client.request("timeline --bins 200 --rows 8")
            queries += 3
            time_reduced = switched and all(p["strategy"] == "time" and int(p.get("reduced_time", "0")) > 0
                                            for p in places)
            if time_reduced and now >= start + seconds:
                break
            if now > phase_end:
                raise e2e_job.Failure("the buffers were not reduced within 120 s" if not switched else
                                      "the places did not reduce by time within 120 s of the switch")
            time.sleep(0.5)
    check(queries > 0, f"{queries} queries answered while the buffers were full, every place within budget")
    check(time_reduced, "after the switch both places reduce by time")
    return reduced


def compare_calls(output):
    text = re.sub(r"(.)(expected-calls: \d|otfx-place: rank \d)", r"\1\n\2", output)
    expected, held = {}, {}
    for line in text.splitlines():
        m = re.match(r"expected-calls: (\d+) (.*)", line)
        if m:
            expected[int(m.group(1))] = m.group(2).split()
        m = re.match(r"otfx-place: rank (\d+) held-calls (.*)", line)
        if m:
            held[int(m.group(1))] = m.group(2).split()
    check(sorted(expected) == list(range(8)) and sorted(held) == list(range(8)), "8 expected-calls and 8 held-calls lines")
    for rank in range(8):
        check(expected[rank] == held[rank], f"rank {rank}: the places' exact profile holds every call the program made")


def check_memory(output):
    budget_ok = True
    for m in re.finditer(r"otfx-place: rank (\d+) events .*?bytes_used=(\d+)/(\d+)", output):
        budget_ok = budget_ok and int(m.group(2)) <= int(m.group(3))
    check(budget_ok, "every rank's trace within its budget at the end")
    places = 0
    for m in re.finditer(r"otfx-place (\d+): memory vmhwm_kib=(\d+) at_start_kib=(\d+) traces=(\d+) budget_total_kib=(\d+)",
                         output):
        places += 1
        peak, budget_total = int(m.group(2)), int(m.group(5))
        check(peak <= budget_total + CONSTANT_KIB,
              f"place {m.group(1)}: peak {peak} KiB <= {budget_total} KiB of budgets + {CONSTANT_KIB} KiB")
    check(places >= 2, f"{places} event places reported their memory")


if __name__ == "__main__":
    e2e_job.run(main)

#!/usr/bin/python3
"""e2e.metric_queries — metrics queried while the job runs: 2 ranks of the imbalance example (busy loops
in serial_setup on rank 0 and late_compute on rank 1, both instrumented functions) under otfx-run
--metrics task-clock,page-faults with 2 places.

* `profile --metrics task-clock` (otfxctl --json): late_compute and serial_setup are there; a busy loop's
  task-clock (its CPU time) is at most its duration and, however loaded the machine, a fair part of it;
  a region's exclusive part is at most its inclusive one; MPI_Allreduce is there too.
* `metric-timeline task-clock`: one row per rank, every cell's mean rate at most one CPU second per
  second.
No assertion on speed: only what holds whatever the load."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import e2e_job  # noqa: E402
from e2e_job import check  # noqa: E402

# A thread's CPU time never exceeds the time it ran; timestamps and counters are read a few hundred ns
# apart, so allow that per visit. Under two busy processes per core a busy loop still gets a share of it.
SLACK_NS_PER_VISIT = 20_000
LEAST_SHARE = 0.02


def otfxctl(args, session_dir, *words):
    result = subprocess.run([args.otfxctl, "--json", *words], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, OTFX_SESSION_DIR=session_dir))
    if result.returncode != 0:
        raise e2e_job.Failure(f"otfxctl {' '.join(words)} failed ({result.returncode}): {result.stderr}{result.stdout}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def query(job, args):
    # wait until both busy functions have complete visits measured
    deadline = time.monotonic() + 120
    while True:
        lines = otfxctl(args, job.work, "profile", "--metrics", "task-clock")
        regions = {line["name"]: line for line in lines if line["record"] == "region-metric"}
        if {"late_compute", "serial_setup"} <= set(regions) and all(
                regions[n]["visits"] >= 2 for n in ("late_compute", "serial_setup")):
            break
        if time.monotonic() > deadline:
            raise e2e_job.Failure(f"no task-clock of late_compute and serial_setup after 120 s: {lines}")
        time.sleep(0.5)
    header = lines[0]
    check(header["record"] == "metric-profile" and header["metrics"] == "task-clock", "a metric profile answers")
    for name in ("late_compute", "serial_setup"):
        r = regions[name]
        check(r["metric"] == "task-clock" and r["unit"] == "ns", f"{name}: task-clock in ns")
        check(r["inclusive"] <= r["inclusive_ns"] + SLACK_NS_PER_VISIT * r["visits"],
              f"{name}: its CPU time {r['inclusive']} ns is at most its duration {r['inclusive_ns']} ns")
        check(r["inclusive"] >= LEAST_SHARE * r["inclusive_ns"],
              f"{name}: a busy loop's CPU time is a fair part of its duration "
              f"({r['inclusive'] / r['inclusive_ns']:.2f})")
        check(0 <= r["exclusive"] <= r["inclusive"], f"{name}: exclusive within inclusive")
    check(any(line.get("name") == "MPI_Allreduce" for line in lines), "MPI calls carry metrics too")

    timeline = otfxctl(args, job.work, "metric-timeline", "task-clock", "--bins", "20")
    header = timeline[0]
    check(header["record"] == "metric-timeline" and header["unit"] == "ns" and header["mode"] == "held",
          f"a metric timeline answers ({header})")
    rows = [line for line in timeline if line["record"] == "row"]
    check(sorted(row["first_rank"] for row in rows) == [0, 1], "one row per rank")
    for row in rows:
        # the mean: over a short interval (an MPI call) the reads' own cost can outweigh the timestamps'
        # difference, so the max of a cell may exceed it
        rates = [float(v) for v in str(row["mean_per_s"]).split(",") if v != "-"]
        check(rates and max(rates) <= 1.05e9,
              f"rank {row['first_rank']}: task-clock grows by at most one CPU second per second in every "
              f"cell ({max(rates):.3g})")


def main(args):
    """metric queries end to end"""
    job = e2e_job.Job(args, ranks=2, places=2, name="e2e-metric-queries",
                      extra=["--metrics", "task-clock,page-faults"], example_args=["--size", "200000"])
    job.start()
    try:
        query(job, args)
    except BaseException:
        job.kill()
        print(job.output())
        raise
    job.finish()


if __name__ == "__main__":
    e2e_job.run(main)

#!/usr/bin/env python3
"""latency_bench.py: small-message MPI latency traced, with recording off and untraced, in one go.

Runs capture-latency (capture/bench/latency.c) repeatedly, the modes alternating so that they see the
same machine load:

  recording     OTFX_PLACES=1, 3 processes: the wrappers record (the place ingests the records)
  no-record     the same with OTFX_RECORD=0 (otfx-run --no-record): wrappers on, nothing recorded
  pass-through  2 processes, no place: every call goes straight to PMPI

Each run measures both sides in the same processes (PMPI_* = untraced, MPI_* = wrapped) and prints the
median of its repetitions; this script prints, per figure and mode, the median over the runs of the
wrapped side, the untraced side of the same runs, their difference, and the rank's CPU time per call.
It also prints the load average before and after, which belongs beside every figure.

  capture/bench/latency_bench.py --binary build-rel/capture/capture-latency [--runs 5] [--rounds 20000]
"""
import argparse
import os
import statistics
import subprocess
import sys

MODES = {
    "recording": (3, {"OTFX_PLACES": "1", "OTFX_RECORD": "1"}),
    "no-record": (3, {"OTFX_PLACES": "1", "OTFX_RECORD": "0"}),
    "pass-through": (2, {"OTFX_PLACES": "0"}),
}
FIGURES = ["pingpong_0", "pingpong_4", "allreduce_int", "allreduce_double"]


def run_once(binary, mpiexec, processes, variables, rounds, repetitions):
    command = [mpiexec, "-n", str(processes)]
    for name, value in variables.items():
        command += ["-genv", name, value]
    command += [binary, str(rounds), str(repetitions)]
    environment = dict(os.environ)
    environment.setdefault("MPIR_CVAR_POLLS_BEFORE_YIELD", "10")
    environment.setdefault("HWLOC_COMPONENTS", "-pci")
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        sys.exit(f"latency_bench: {' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    figures = {}
    for line in result.stdout.splitlines():
        key, _, rest = line.partition("=")
        if key.endswith("_us"):
            figures[key] = float(rest.split()[0])
    return figures


def load_average():
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="capture-latency from a Release build")
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--runs", type=int, default=5, help="runs per mode, alternating (default 5)")
    parser.add_argument("--rounds", type=int, default=20000, help="calls per repetition (default 20000)")
    parser.add_argument("--repetitions", type=int, default=5, help="repetitions per run (default 5)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma list of " + ", ".join(MODES))
    arguments = parser.parse_args()
    modes = arguments.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            sys.exit(f"latency_bench: unknown mode {mode!r} (one of {', '.join(MODES)})")
    print(f"load_average_before={load_average()}")
    results = {mode: [] for mode in modes}
    for _ in range(arguments.runs):
        for mode in modes:
            processes, variables = MODES[mode]
            results[mode].append(run_once(arguments.binary, arguments.mpiexec, processes, variables,
                                          arguments.rounds, arguments.repetitions))
    print(f"load_average_after={load_average()}")
    print(f"runs={arguments.runs} rounds={arguments.rounds} repetitions={arguments.repetitions}")
    print(f"{'figure (us per call, median of runs)':<38}{'mode':<14}{'wrapped':>9}{'untraced':>10}"
          f"{'difference':>12}{'wrapped cpu':>13}")
    for figure in FIGURES:
        for mode in modes:
            def median(key):
                return statistics.median(run[key] for run in results[mode])
            wrapped, untraced = median(f"{figure}_wrapped_us"), median(f"{figure}_untraced_us")
            difference = statistics.median(run[f"{figure}_wrapped_us"] - run[f"{figure}_untraced_us"]
                                           for run in results[mode])
            print(f"{figure:<38}{mode:<14}{wrapped:>9.3f}{untraced:>10.3f}{difference:>12.3f}"
                  f"{median(f'{figure}_wrapped_cpu_us'):>13.3f}")


if __name__ == "__main__":
    main()

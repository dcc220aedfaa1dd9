#!/usr/bin/python3
"""check_snapshot_of_run — a job's snapshot at exit is a consistent trace (tests/harness/check-snapshot).

    check_snapshot_of_run.py --otfx-run PATH --checker PATH --work DIR --ranks N --places P
                             [--buffer SIZE --reduction STRATEGY] -- PROGRAM [ARGS...]

Runs PROGRAM on N ranks with P event places under otfx-run with --snapshot-at-exit, then runs
check-snapshot on the archive. Passes when the job exits 0, the places confirm the snapshot, and
check-snapshot finds no violation. With --reduction the buffer must actually have filled: the places'
reports count reduced (or, with `stop`, dropped) events on at least one rank, else the run proves
nothing about lossy snapshots and the test fails. Prints "PASS" or "FAIL: why".
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

CEILING = 600  # seconds for the job on a loaded machine


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--checker", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--places", type=int, required=True)
    parser.add_argument("--buffer")
    parser.add_argument("--reduction")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    archive = os.path.join(args.work, "trace.otf2")
    command = [args.otfx_run, "-n", str(args.ranks), "--places", str(args.places), "--snapshot-at-exit", archive]
    if args.buffer:
        command += ["--buffer", args.buffer]
    if args.reduction:
        command += ["--reduction", args.reduction]
    command += ["--", *program]
    print("job: " + " ".join(command), flush=True)
    env = dict(os.environ, MPIR_CVAR_POLLS_BEFORE_YIELD="10")
    try:
        job = subprocess.run(command, cwd=args.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=CEILING)
    except subprocess.TimeoutExpired:
        fail(f"the job did not end within {CEILING} s")
    output = job.stdout.decode("utf-8", "replace")
    print(output, flush=True)
    if job.returncode != 0:
        fail(f"otfx-run exited {job.returncode}")
    if not re.search(r"otfx: snapshot at exit .*: [1-9][0-9]* places ok, 0 failed", output):
        fail("the places did not confirm the snapshot at exit")
    if args.reduction:
        counted = "dropped" if args.reduction == "stop" else "reduced"
        lossy = [int(n) for n in re.findall(rf"^otfx-place: rank \d+ events .* {counted}=(\d+)", output, re.M)]
        if not any(lossy):
            fail(f"no rank's buffer filled (no {counted} events): raise the program's iterations")
        print(f"ok: {counted} events on {sum(1 for n in lossy if n)} of {len(lossy)} ranks", flush=True)
    check = subprocess.run([args.checker, archive], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    report = check.stdout.decode("utf-8", "replace")
    print(report, flush=True)
    if check.returncode != 0:
        fail(f"check-snapshot exited {check.returncode}")
    print("PASS", flush=True)


if __name__ == "__main__":
    main()

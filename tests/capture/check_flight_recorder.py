#!/usr/bin/python3
"""check_flight_recorder — the trace of a failed job (docs/usage.md, "When the application fails").

    check_flight_recorder.py --otfx-run PATH --program dying_app --work DIR MODE

Runs tests/capture/dying_app.c on 4 ranks under otfx-run with --snapshot-at-exit (or, for on-failure,
--snapshot-on-failure) and makes it fail as MODE says: segv, abort, exit, kill (the test sends rank 1
SIGKILL), sigint and sigterm (the test interrupts otfx-run), on-failure (segv, its own archive), or not
at all (finish); place-crash sends the first place SIGSEGV (the job must end, not hang); existing checks that an archive already there is refused (exit 2) unless
--overwrite-snapshot. Every state is waited for (the program's "ready" and "pid" lines), never slept for.
Checks: otfx-run's exit status (the failure's: the signal's number, MPI_Abort's code, exit()'s status, 128 +
the signal of an interruption), its last line (one line saying what happened and where the trace is), the
archive (otf2-print reads it; python3-otf2 finds the dead rank's events up to its last iteration and the
phase saying how it ended), and that no session or status file is left behind. Prints "PASS" or "FAIL: why".
"""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import otf2

RANKS, ITERATIONS, KILL_ITERATIONS = 4, 500, 3000
CEILING = 60.0  # seconds any awaited state may take on a loaded machine


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)
    print(f"ok: {message}", flush=True)


def wait_for(path, pattern, process):
    deadline = time.monotonic() + CEILING
    while time.monotonic() < deadline:
        with open(path, "rb") as handle:
            match = re.search(pattern, handle.read().decode("utf-8", "replace"), re.M)
        if match:
            return match
        if process.poll() is not None:
            raise Failure(f"the job ended before /{pattern}/ appeared")
        time.sleep(0.05)
    raise Failure(f"no /{pattern}/ after {CEILING} s")


def place_process(world_rank, program):
    """The pid of the process that is the tool place on `world_rank` (the program run by otfx-run's guard)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environment = handle.read().split(b"\0")
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().split(b"\0")
        except OSError:
            continue
        if f"PMI_RANK={world_rank}".encode() in environment and b"--guard" not in command and \
                b"OTFX_PLACES=2" in environment and os.path.basename(command[0]) == os.path.basename(program).encode():
            return int(entry)
    raise Failure(f"no process is the place on world rank {world_rank}")


def place_crash(args):
    """A place that crashes ends the job at once with one clear line: it never hangs."""
    status, output = run(args, "place-crash", "--snapshot-at-exit", "place-crash-trace")
    check(status != 0, f"otfx-run exits non-zero (got {status})")
    check(re.search(rf"^otfx-run: the tool place on world rank {RANKS} died of signal 11 \(Segmentation fault\): "
                    r"the job cannot go on without it and is ended; this is a defect of otfx", output, re.M)
          is not None, "a line says which place died of what")
    no_leftovers(args.work)


def run(args, mode, archive_option, archive, extra=()):
    log_path = os.path.join(args.work, f"{mode}.log")
    command = [args.otfx_run, "-n", str(RANKS), "--places", "2", archive_option, archive, *extra, "--",
               args.program]
    program_mode = {"sigint": "wait", "sigterm": "wait", "on-failure": "segv", "place-crash": "wait"}.get(mode, mode)
    iterations = KILL_ITERATIONS if mode == "kill" else ITERATIONS
    command += [program_mode, str(iterations)]
    print("job: " + " ".join(command), flush=True)
    env = dict(os.environ, MPIR_CVAR_POLLS_BEFORE_YIELD="10")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=args.work, env=env)
        try:
            if mode == "kill":
                pid = int(wait_for(log_path, r"dying-app: rank 1 ends at iteration \d+ pid (\d+)", process).group(1))
                os.kill(pid, signal.SIGKILL)
            elif mode == "place-crash":
                wait_for(log_path, r"^dying-app: ready", process)
                os.kill(place_process(RANKS, args.program), signal.SIGSEGV)
            elif mode in ("sigint", "sigterm"):
                wait_for(log_path, r"^dying-app: ready", process)
                process.send_signal(signal.SIGINT if mode == "sigint" else signal.SIGTERM)
            status = process.wait(timeout=CEILING * 3)
        except (subprocess.TimeoutExpired, Failure):
            process.kill()
            process.wait()
            raise
    with open(log_path, "rb") as handle:
        output = handle.read().decode("utf-8", "replace")
    print(output, flush=True)
    return status, output


def last_iterations(archive):
    """Per rank: the value of its last MPI_Pcontrol phase and the name of its otfx end phase (or None)."""
    last, ends = {}, {}
    with otf2.reader.open(archive) as trace:
        for location, event in trace.events:
            if type(event).__name__ != "Enter":
                continue
            name = event.region.name
            if name == "MPI_Pcontrol level":
                values = [value for attribute, value in (event.attributes or {}).items()
                          if attribute.name == "otfx::phase_value"]
                last[location.name] = values[0] if values else None
            elif name.startswith("otfx: rank "):
                ends[location.name] = name
    return last, ends


EXPECTED = {
    # mode: (exit status, the last line, ranks that end, the cause in their end phase)
    "segv": (11, r"the application failed: rank 1 died of SIGSEGV \(Segmentation fault\) at address 0x0 in crash_here",
             [1], r"died of SIGSEGV \(Segmentation fault\) at address 0x0 in crash_here"),
    "on-failure": (11, r"the application failed: rank 1 died of SIGSEGV", [1], r"died of SIGSEGV"),
    "abort": (7, r"the application failed: rank 1 called MPI_Abort with error code 7", [1],
              r"called MPI_Abort with error code 7"),
    "exit": (5, r"the application failed: rank 1 called exit\(5\) without MPI_Finalize", [1],
             r"called exit\(5\) without MPI_Finalize"),
    "kill": (9, r"the application failed: rank 1 died without a word", [1], r"died without a word"),
    "sigint": (130, r"interrupted by SIGINT", [0, 1, 2, 3], r"died of SIGINT"),
    "sigterm": (143, r"interrupted by SIGTERM", [0, 1, 2, 3], r"died of SIGTERM"),
}


def no_leftovers(work):
    left = glob.glob(os.path.join(work, "otfx-session-*.txt")) + glob.glob(os.path.join(work, ".otfx-run-*"))
    check(not left, f"no session or status file left behind ({left})")


def failing(args, mode):
    code, line, dead, cause = EXPECTED[mode]
    option = "--snapshot-on-failure" if mode == "on-failure" else "--snapshot-at-exit"
    status, output = run(args, mode, option, f"{mode}-trace")
    check(status == code, f"otfx-run exits with {code} (got {status})")
    last = output.rstrip("\n").split("\n")[-1]
    check(re.match(rf"^otfx-run: {line}.*; the trace is in ", last) is not None, f"its last line says so: {last}")
    archive = last.split("; the trace is in ", 1)[1]
    check(archive == os.path.join(args.work, f"{mode}-trace.otf2") and os.path.exists(archive),
          f"the archive is where it was asked for ({archive})")
    printed = subprocess.run(["otf2-print", archive], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check(printed.returncode == 0, f"otf2-print reads it {printed.stderr.decode()[:200]}")
    last_values, ends = last_iterations(archive)
    for rank in dead:
        name = ends.get(f"rank {rank}")
        check(name is not None and re.search(cause, name) is not None, f"rank {rank} ends with the phase {name!r}")
        value = last_values.get(f"rank {rank}")
        if mode == "kill":  # nothing runs on a rank killed so: what it had sent, the last batch is lost
            check(value is not None and 0 < value <= KILL_ITERATIONS,
                  f"rank {rank}'s events up to iteration {value} of {KILL_ITERATIONS} (sent before SIGKILL)")
        else:
            check(value == ITERATIONS, f"rank {rank}'s events up to its last iteration ({value} of {ITERATIONS})")
    for rank in range(RANKS):
        check(f"rank {rank}" in last_values, f"the archive holds rank {rank}")
    no_leftovers(args.work)


def finishing(args):
    status, output = run(args, "finish", "--snapshot-at-exit", "finish-trace")
    check(status == 0, f"a job that finishes exits 0 (got {status})")
    last = output.rstrip("\n").split("\n")[-1]
    check(not last.startswith("otfx-run: "), f"and otfx-run adds no line ({last})")
    check(os.path.exists(os.path.join(args.work, "finish-trace.otf2")), "its snapshot at exit is written")
    no_leftovers(args.work)


def snapshot_fails(args):
    """A job that finishes but whose snapshot at exit cannot be written never exits 0."""
    open(os.path.join(args.work, "blocker"), "w").close()  # a file where the archive's directory would be
    status, output = run(args, "finish", "--snapshot-at-exit", "blocker/trace")
    check(status == 1, f"otfx-run exits 1 (got {status})")
    last = output.rstrip("\n").split("\n")[-1]
    check(last == f"otfx-run: the application finished, but its snapshot at exit failed: "
                  f"{os.path.join(args.work, 'blocker')} is not a directory", f"and says why: {last}")
    no_leftovers(args.work)


def untraced_failure(args):
    """A failed job without a snapshot asked for: the same status and line, no trace."""
    status, output = run(args, "segv", "--snapshot-dir", args.work)
    check(status == 11, f"otfx-run exits with 11 (got {status})")
    last = output.rstrip("\n").split("\n")[-1]
    check(last.startswith("otfx-run: the application failed: rank 1 died of SIGSEGV") and
          last.endswith("; no trace was written (--snapshot-at-exit or --snapshot-on-failure asks for one)"),
          f"its last line says so: {last}")
    no_leftovers(args.work)


def refused(args, name, expected):
    result = subprocess.run([args.otfx_run, "-n", str(RANKS), "--snapshot-at-exit", name, "--", args.program,
                             "finish", str(ITERATIONS)], cwd=args.work, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    output = result.stdout.decode()
    print(output, flush=True)
    check(result.returncode == 2, f"an existing {expected} is refused before the job starts (exit {result.returncode})")
    archive = os.path.join(args.work, f"{name}.otf2")
    check(f"otfx-run: --snapshot-at-exit: {archive} already exists (--overwrite-snapshot replaces it)" in output,
          "with a message saying which and how to replace it")
    check("dying-app" not in output, "no rank ran")


def existing(args):
    archive = os.path.join(args.work, "existing-trace.otf2")
    open(archive, "w").close()
    refused(args, "existing-trace", "archive")
    os.unlink(archive)
    os.makedirs(os.path.join(args.work, "existing-trace"))  # an archive's directory counts too
    refused(args, "existing-trace", "archive directory")
    os.rmdir(os.path.join(args.work, "existing-trace"))
    open(archive, "w").close()
    status, output = run(args, "finish", "--snapshot-at-exit", "existing-trace", ["--overwrite-snapshot"])
    check(status == 0 and "otfx: snapshot at exit existing-trace: 1 places ok, 0 failed" in output,
          "--overwrite-snapshot replaces it")
    printed = subprocess.run(["otf2-print", archive], stdout=subprocess.DEVNULL)
    check(printed.returncode == 0, "with a readable archive")
    no_leftovers(args.work)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("mode", choices=[*EXPECTED, "finish", "existing", "snapshot-fails", "no-snapshot",
                                             "place-crash"])
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        if args.mode == "finish":
            finishing(args)
        elif args.mode == "existing":
            existing(args)
        elif args.mode == "snapshot-fails":
            snapshot_fails(args)
        elif args.mode == "no-snapshot":
            untraced_failure(args)
        elif args.mode == "place-crash":
            place_crash(args)
        else:
            failing(args, args.mode)
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        sys.exit(1)
    print("PASS", flush=True)


if __name__ == "__main__":
    main()

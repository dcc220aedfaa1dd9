#!/usr/bin/python3
"""steer_bench — the tree's responsiveness on a live job (a benchmark).

    tbon/bench/steer_bench.py --otfx-run build/capture/otfx-run --example build/examples/stencil \\
        [--ranks 8] [--places 3] [--events 1000000] [--repeat 20]

Runs the stencil example on RANKS ranks under otfx-run, waits until every rank holds EVENTS events, stops
recording (so every query sees the same data), then measures from a client on the same node:
  app_pause_round_trip_ms   `app pause` until the reply (every application rank acknowledged being
                            blocked), median of REPEAT pause/resume pairs; also _p90 and _max
  app_resume_round_trip_ms  the same for `app resume`
  profile_query_ms          a `profile` query over everything held (RANKS x EVENTS events), median; _p90
  timeline_query_ms         a `timeline --bins 1000 --rows RANKS` query, median
  status_query_ms           a `status` query, median
Prints key=value lines. Targets: app pause round trip <= 5 ms, profile <= 100 ms for 8 x 1M."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import otfx_client  # noqa: E402


def timed(client, command, repeat):
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.request(command)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(name, samples):
    samples = sorted(samples)
    print(f"{name}={statistics.median(samples):.3f}")
    print(f"{name}_p90={samples[min(len(samples) - 1, int(len(samples) * 0.9))]:.3f}")
    print(f"{name}_max={samples[-1]:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--places", type=int, default=3)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    args.otfx_run, args.example = os.path.abspath(args.otfx_run), os.path.abspath(args.example)

    work = tempfile.mkdtemp(prefix="otfx-steer-bench-")
    stop = os.path.join(work, "stop")
    env = dict(os.environ)
    env.setdefault("MPIR_CVAR_POLLS_BEFORE_YIELD", "10")
    log = open(os.path.join(work, "job.log"), "wb")
    job = subprocess.Popen([args.otfx_run, "-n", str(args.ranks), "--places", str(args.places), "--session-dir", work,
                            "--buffer", "256M", "--", args.example, "--until-file", stop],
                           stdout=log, stderr=subprocess.STDOUT, cwd=work, env=env)
    try:
        session = otfx_client.read_session(work, timeout=120)
        with otfx_client.Client(session, timeout=120) as client:
            started = time.monotonic()
            while True:
                lines = client.request("status")
                held = [line.int("events_held") for line in lines if line.type == "rank"]
                if len(held) == args.ranks and min(held) >= args.events:
                    break
                if time.monotonic() - started > 600:
                    sys.exit(f"steer_bench: ranks hold only {held} events after 600 s")
                time.sleep(1)
            print(f"fill_seconds={time.monotonic() - started:.1f}")
            client.request("record pause")
            lines = client.request("status")
            held = [line.int("events_held") for line in lines if line.type == "rank"]
            print(f"ranks={args.ranks}")
            print(f"places={args.places}")
            print(f"events_held_total={sum(held)}")
            print(f"events_held_min_per_rank={min(held)}")
            pause, resume = [], []
            for _ in range(args.repeat):
                pause += timed(client, "app pause", 1)
                resume += timed(client, "app resume", 1)
                time.sleep(0.05)
            report("app_pause_round_trip_ms", pause)
            report("app_resume_round_trip_ms", resume)
            report("profile_query_ms", timed(client, "profile", args.repeat))
            report("timeline_query_ms", timed(client, f"timeline --bins 1000 --rows {args.ranks}", args.repeat))
            report("status_query_ms", timed(client, "status", args.repeat))
    finally:
        open(stop, "w").close()
        try:
            job.wait(timeout=120)
        except subprocess.TimeoutExpired:
            job.kill()


if __name__ == "__main__":
    main()

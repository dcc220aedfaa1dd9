#!/usr/bin/python3
"""query_bench — do heavy queries slow the application down? (the places' trace locks, docs/benchmarks.md)

    tbon/bench/query_bench.py --otfx-run build/release/capture/otfx-run \\
        --example build/release/examples/stencil [--ranks 4] [--places 3] [--events 2000000] [--seconds 10]

Runs the stencil example on RANKS ranks under otfx-run (query memory bound 256M, so that an `events`
query reads millions of events before it stops), waits until the ranks hold EVENTS events, then for
SECONDS each:
  quiet   a `status` every second only
  heavy   a client asks `events --limit 10000000` and `timeline --bins 10000 --rows RANKS` back to back
and prints, from the status summaries at the start and end of each phase:
  blocked_ns_per_s_quiet / _heavy   the application ranks' time waiting for their batches to leave (the
                                    places' back-pressure), summed over the ranks, per second of the phase
  events_per_s_quiet / _heavy       events the places received per second
  heavy_queries                     queries answered in the heavy phase; events_query_ms, timeline_query_ms
                                    their median latency
A query that held a trace's read lock for its whole length would stall the place's appends, and with them
the ranks, for that long: blocked_ns would grow by about the ranks' share of the queries' time."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import otfx_client  # noqa: E402


def summary(client):
    return [line for line in client.request("status") if line.type == "summary"][0]


def phase(client, seconds, heavy, session, ranks):
    start = summary(client)
    started = time.monotonic()
    latencies = {"events": [], "timeline": []}
    stop = threading.Event()

    def hammer():
        with otfx_client.Client(session, timeout=600) as heavy_client:
            while not stop.is_set():
                for name, command in (("events", "events --limit 10000000"),
                                      ("timeline", f"timeline --bins 10000 --rows {ranks}")):
                    began = time.perf_counter()
                    try:
                        heavy_client.request(command)
                    except otfx_client.ServerError:
                        pass  # "too large" is an answer too
                    latencies[name].append((time.perf_counter() - began) * 1000)
                    if stop.is_set():
                        break

    worker = threading.Thread(target=hammer) if heavy else None
    if worker:
        worker.start()
    while time.monotonic() < started + seconds:
        time.sleep(1)
        summary(client)
    stop.set()
    if worker:
        worker.join()
    end = summary(client)
    elapsed = time.monotonic() - started
    return {
        "blocked_ns_per_s": (end.int("blocked_ns") - start.int("blocked_ns")) / elapsed,
        "events_per_s": (end.int("events_received") - start.int("events_received")) / elapsed,
        "latencies": latencies,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--places", type=int, default=3)
    parser.add_argument("--events", type=int, default=2000000, help="events every rank must hold first")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--query-memory", default="256M",
                        help="otfx-run --query-memory ('' for an otfx-run without the option)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="otfx-query-bench-")
    stop_file = os.path.join(work, "stop")
    command = [os.path.abspath(args.otfx_run), "-n", str(args.ranks), "--places", str(args.places), "--session-dir", work,
               "--buffer", "64M", *(["--query-memory", args.query_memory] if args.query_memory else []),
               "--job-id", "query-bench", "--",
               os.path.abspath(args.example), "--until-file", stop_file]
    log = open(os.path.join(work, "job.log"), "wb")
    job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    try:
        session = otfx_client.read_session(work, timeout=60)
        with otfx_client.Client(session, timeout=600) as client:
            while summary(client).int("events_held") < args.events * args.ranks:
                time.sleep(1)
            print(f"events_held={summary(client).int('events_held')}")
            quiet = phase(client, args.seconds, False, session, args.ranks)
            heavy = phase(client, args.seconds, True, session, args.ranks)
        for name, result in (("quiet", quiet), ("heavy", heavy)):
            print(f"blocked_ns_per_s_{name}={result['blocked_ns_per_s']:.0f}")
            print(f"events_per_s_{name}={result['events_per_s']:.0f}")
        lat = heavy["latencies"]
        print(f"heavy_queries={len(lat['events']) + len(lat['timeline'])}")
        for name in ("events", "timeline"):
            if lat[name]:
                print(f"{name}_query_ms={statistics.median(lat[name]):.1f}")
    finally:
        open(stop_file, "w").close()
        job.wait(timeout=300)
        log.close()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""e2e.scale — 32 stencil ranks under otfx-run with 7 places at fan-in 2 (4 event places, two inner
levels), as oversubscribed as the suite affords: the application paused for a while still lets every
query through the two levels answer for all ranks (paused ranks wait with a growing sleep, not a
200 µs poll that would take the cores from the places), and resumes, records on and verifies."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_job  # noqa: E402
from e2e_job import check  # noqa: E402

RANKS, PLACES, FANIN = 32, 7, 2


def held(client):
    lines = client.request("status")
    return {line.int("rank"): line.int("events_held") for line in lines if line.type == "rank"}, lines


def summary(lines):
    return next(line for line in lines if line.type == "summary")


def main(args):
    job = e2e_job.Job(args, ranks=RANKS, places=PLACES, extra=["--fanin", str(FANIN), "--buffer", "4M"],
                      name="scale")
    session = job.start(timeout=240)
    try:
        with job.client(session, timeout=240) as client:
            output = job.output()
            check(output.count("(event)") == 4 and "children 4 5" in output,
                  "4 event places under two inner levels (the root's children are the inner places 4 and 5)")
            deadline = time.monotonic() + 240
            while True:
                events, _ = held(client)
                if len(events) == RANKS and min(events.values()) > 0:
                    break
                if time.monotonic() > deadline:
                    raise e2e_job.Failure(f"not every rank holds events after 240 s: {events}")
                time.sleep(1)
            check(True, f"all {RANKS} ranks hold events")

            client.request("app pause")
            paused = summary(client.request("status"))
            check(paused["app_state"] == "paused" and paused.int("ranks_paused") == RANKS,
                  f"app pause: all {RANKS} ranks paused")
            time.sleep(2)  # long enough for the paused ranks' waits to grow to their longest
            events, lines = held(client)
            check(len(events) == RANKS and summary(lines).int("places_answered") == 4,
                  "status while paused: every rank through every place")
            profile = client.request("profile")
            check(any(line.type == "region" for line in profile), "profile while paused answers with regions")
            timeline = client.request(f"timeline --bins 50 --rows {RANKS}")
            rows = [line for line in timeline if line.type == "row"]
            check(len(rows) == RANKS and sorted(line.int("first_rank") for line in rows) == list(range(RANKS)),
                  f"timeline while paused: one row per rank, all {RANKS}")
            frozen, _ = held(client)

            client.request("app resume")
            check(summary(client.request("status"))["app_state"] == "running", "app resume: running again")
            deadline = time.monotonic() + 240
            while True:
                events, _ = held(client)
                if all(events[rank] > frozen[rank] for rank in range(RANKS)):
                    break
                if time.monotonic() > deadline:
                    raise e2e_job.Failure(f"ranks did not record on after resuming: {events} vs {frozen}")
                time.sleep(1)
            check(True, "every rank records on after resuming")
        job.finish(timeout=240)
    finally:
        job.kill()


if __name__ == "__main__":
    e2e_job.run(main)

#!/usr/bin/python3
"""e2e.steering — 8 stencil ranks under otfx-run with 3 places (2 event places, 1 analysis root): status,
pause/resume recording, pause/resume the application, reset, a recorded window, snapshots (the window and
a part of it) read back with python3-otf2 and otf2-print, refused snapshot paths. (The reduction switch
under a small buffer is in e2e_long_run.py.) The job keeps running
throughout and must end verified."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import e2e_job  # noqa: E402
from e2e_job import check  # noqa: E402

SUMMARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otf2_summary.py")
CHECK_SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness", "check-snapshot")
MARGIN_NS = 2_000_000  # clock conversion and delivery slack
LATE_LEAVE_NS = 1_000_000_000  # the LEAVE of a call open at a window's end, on an oversubscribed node


def lines_of(lines, type_):
    return [line for line in lines if line.type == type_]


def one(lines, type_):
    found = lines_of(lines, type_)
    if len(found) != 1:
        raise e2e_job.Failure(f"expected one '{type_}' line in {lines}")
    return found[0]


def held_per_rank(client):
    """Events held per application rank, from the status query."""
    lines = client.request("status")
    return {line.int("rank"): line.int("events_held") for line in lines_of(lines, "rank")}, lines


def events_between(client, first, last):
    """Events of every rank whose time lies in [first, last]."""
    lines = client.request(f"events --from {first}ns --to {last}ns --limit 1000")
    return [line for line in lines_of(lines, "event") if first <= line.int("time") <= last]


def snapshot_archive(reply):
    """The archive's anchor file, the same on every place line; every place wrote its part."""
    places = lines_of(reply, "place")
    archives = {line["archive"] for line in places}
    summary = one(reply, "summary")
    if len(archives) != 1 or summary.int("ok") != summary.int("places"):
        raise e2e_job.Failure(f"snapshot not written by every place: {reply}")
    return archives.pop()


def read_archive(path):
    result = subprocess.run(["/usr/bin/python3", SUMMARY, path], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise e2e_job.Failure(f"python3-otf2 could not read {path}:\n{result.stderr}")
    return json.loads(result.stdout)


def otf2_print_ok(path):
    result = subprocess.run(["otf2-print", path], capture_output=True, text=True, timeout=300)
    return result.returncode == 0 and "ENTER" in result.stdout


def main(args):
    """steering end to end"""
    job = e2e_job.Job(args, ranks=8, places=3, name="e2e-steering")
    session = job.start()
    try:
        steer(job, session)
    except BaseException:
        job.kill()
        print(job.output())
        raise
    output = job.finish()
    check(output.count("otfx-place: rank ") >= 8, "every rank's place report was printed")


def steer(job, session):
    client = job.client(session)
    held, lines = held_per_rank(client)
    check(sorted(held) == list(range(8)), f"status lists all 8 ranks ({sorted(held)})")
    summary = one(lines, "summary")
    check(summary["app_state"] == "running" and summary["recording"] == "on", "application running, recording on")
    time.sleep(1.0)

    # -- pause / resume recording: nothing recorded in between --------------------------------------------
    asked_at = time.monotonic_ns()
    client.request("record pause")
    paused_at = time.monotonic_ns()
    summary = one(client.request("status"), "summary")
    check(summary["recording"] == "off", "recording is off after record pause")
    # the places' clock is this machine's CLOCK_MONOTONIC: the start lies between asking and the answer
    check(asked_at <= summary.int("not_recording_since") <= paused_at,
          "status says when recording stopped (not_recording_since), between the request and its answer")
    time.sleep(1.0)
    resumed_at = time.monotonic_ns()
    client.request("record resume")
    inside = events_between(client, paused_at + MARGIN_NS, resumed_at - MARGIN_NS)
    check(not inside, f"no events inside the paused interval ({len(inside)} found)")
    time.sleep(0.5)

    # -- pause / resume the application: no MPI progress while paused -----------------------------------
    started = time.monotonic_ns()
    client.request("app pause")
    round_trip_ms = (time.monotonic_ns() - started) / 1e6
    paused_at = time.monotonic_ns()
    summary = one(client.request("status"), "summary")
    check(summary["app_state"] == "paused",
          f"application paused (acknowledged by all ranks in {round_trip_ms:.1f} ms)")
    check(started <= summary.int("paused_since") <= paused_at,
          "status says when the last rank paused (paused_since), between the request and its answer")
    time.sleep(1.0)
    resumed_at = time.monotonic_ns()
    client.request("app resume")
    inside = events_between(client, paused_at + MARGIN_NS, resumed_at - MARGIN_NS)
    check(not inside, f"no MPI call recorded while the application was paused ({len(inside)} found)")
    summary = one(client.request("status"), "summary")
    check(summary["app_state"] == "running" and summary.get("paused_since") is None,
          "application running again, no paused_since")

    # -- a recorded window: pause, reset, record 2 s -----------------------------------------------------
    client.request("record pause")
    client.request("reset")
    held, _ = held_per_rank(client)
    check(all(n == 0 for n in held.values()), f"reset dropped what was held ({held})")
    window = one(client.request("record window 2s"), "window")
    first, last = window.int("from"), window.int("to")
    check(last - first == 2_000_000_000, "the window is 2 s long on the global clock")
    while time.monotonic_ns() < last + 500_000_000:
        time.sleep(0.1)
    reply = client.request("snapshot window.otf2")
    archive = snapshot_archive(reply)
    held, lines = held_per_rank(client)  # after the snapshot's flush: everything the ranks recorded
    check(all(n > 0 for n in held.values()), "every rank recorded events in the window")
    check(one(lines, "summary")["recording"] == "off", "recording stopped by itself at the window's end")
    check(otf2_print_ok(archive), f"otf2-print reads {archive}")
    summary = read_archive(archive)
    # The ranks start and stop recording at slightly different moments, so a message near an edge of the
    # window may have one end recorded only: the snapshot leaves those out (one or two records each: the
    # message and its request's other record), and the places say how many (unpaired=).
    # Likewise a collective near an edge that some rank holds only in part: left out on every rank (its
    # begin and end; incomplete_collectives= counts each instance once per place).
    unpaired = sum(line.int("unpaired") for line in lines_of(reply, "place"))
    incomplete = sum(line.int("incomplete_collectives") for line in lines_of(reply, "place"))
    collective_records = 2 * 8 * incomplete
    read = sum(data["events"] for data in summary["ranks"].values())
    check(held.keys() == {int(rank) for rank in summary["ranks"]} and
          sum(held.values()) - 2 * unpaired - collective_records <= read <= sum(held.values()) - unpaired,
          f"python3-otf2 reads {read} events, the places held {sum(held.values())} and left out the records of "
          f"{unpaired} messages without their other end and of {incomplete} incomplete collectives")
    pairs = subprocess.run(["/usr/bin/python3", CHECK_SNAPSHOT, archive], capture_output=True, text=True, timeout=300)
    check(pairs.returncode == 0, f"the window's snapshot is consistent (its messages pair): {pairs.stdout.strip()}")
    for rank in range(8):
        data = summary["ranks"].get(str(rank))
        check(data is not None and held[rank] - 2 * unpaired - 2 * incomplete <= data["events"] <= held[rank],
              f"rank {rank}: python3-otf2 reads {data and data['events']} events, the places held {held[rank]}")
        # A call in progress at the window's end is recorded whole: its LEAVE may come later (on 2 cores
        # shared by 11 processes, a blocking call can outlast the margin), but nothing starts after it.
        check(first - MARGIN_NS <= data["first"] and data["last_enter"] <= last + MARGIN_NS,
              f"rank {rank}: events only inside the window (events {data['first']}..{data['last']}, last "
              f"enter {data['last_enter']}, window {first}..{last}, margin {MARGIN_NS} ns)")
        check(data["last"] <= last + LATE_LEAVE_NS,
              f"rank {rank}: the calls open at the window's end left within {LATE_LEAVE_NS} ns of it "
              f"(last event {data['last']}, window end {last})")

    # -- snapshot of a window of the window ---------------------------------------------------------------
    sub_first, sub_last = first + 500_000_000, first + 1_000_000_000
    reply = client.request(f"snapshot sub.otf2 --from {sub_first}ns --to {sub_last}ns --ranks 0-3")
    archive = snapshot_archive(reply)
    summary = read_archive(archive)
    check(sorted(int(r) for r in summary["ranks"]) == [0, 1, 2, 3], "the sub-window snapshot holds ranks 0-3")
    for rank, data in summary["ranks"].items():
        check(sub_first <= data["first"] and data["last"] <= sub_last, f"rank {rank}: events inside the sub-window")
    try:
        client.request("snapshot sub.otf2")
        check(False, "an existing archive is refused")
    except e2e_job.otfx_client.ServerError as error:
        check("exist" in error.details, f"an existing archive is refused ({error.details})")
    try:
        client.request("snapshot ../escape.otf2")
        check(False, "a path leaving the snapshot directory is refused")
    except e2e_job.otfx_client.ServerError as error:
        check(error.code == "failed" and error.details, f"a path leaving the snapshot directory is refused ({error.details})")

    # -- the job goes on recording -------------------------------------------------------------------------
    client.request("record resume")
    profile = client.request("profile")
    check(any(line.type == "region" and line["name"] == "MPI_Allreduce" for line in profile),
          "the profile lists MPI_Allreduce")
    client.close()


if __name__ == "__main__":
    e2e_job.run(main)

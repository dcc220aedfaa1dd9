#!/usr/bin/python3
"""check_message_pairs.py — do an archive's point-to-point messages pair as OTF2 readers pair them?

    check_message_pairs.py ANCHOR.otf2 [--min-messages N]

Readers (Vampir, Scalasca) pair the n-th MpiSend/MpiIsend from S to R on a (communicator, tag) with the
n-th MpiRecv/MpiIrecv at R from S on it. Per channel this checks: as many sends as receives, each pair of
the same size, and the send begun no later than its receive ended (the export moves receives that the
clocks put earlier: docs/otfx-format.md, "Clock condition"). Per rank (its threads' locations together, by
time): a request id is not started again while it is outstanding, and every completion (MpiIsendComplete,
MpiIrecv, MpiRequestCancelled, NonBlockingCollectiveComplete) ends an outstanding request. Needs Debian's
python3-otf2 (hence /usr/bin/python3).
"""
import re
import sys

import otf2

SENDS = ("MpiSend", "MpiIsend")
RECEIVES = ("MpiRecv", "MpiIrecv")
STARTS = ("MpiIsend", "MpiIrecvRequest", "NonBlockingCollectiveRequest")
COMPLETIONS = ("MpiIsendComplete", "MpiIrecv", "MpiRequestCancelled", "NonBlockingCollectiveComplete")


def rank_of(name):
    match = re.match(r"rank (\d+)", name)
    return int(match[1]) if match else None


def world_rank(comm, rank_in_comm, cache):
    """A communicator's members are the MPI locations of its world ranks ("rank R")."""
    key = id(comm)
    if key not in cache:
        cache[key] = [rank_of(member.name) for member in comm.group.members]
    return cache[key][rank_in_comm]


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--min-messages"):
        sys.exit("check_message_pairs.py: usage: check_message_pairs.py ANCHOR [--min-messages N]")
    minimum = int(sys.argv[3]) if len(sys.argv) == 4 else 1
    sends, receives, per_rank, members = {}, {}, {}, {}
    with otf2.reader.open(sys.argv[1]) as trace:
        resolution = float(trace.definitions.clock_properties.timer_resolution)  # ticks per second
        for location, event in trace.events:
            kind = type(event).__name__
            rank = rank_of(location.name)
            if kind in SENDS or kind in RECEIVES:
                peer = world_rank(event.communicator, event.receiver if kind in SENDS else event.sender, members)
                channel = (rank, peer, event.communicator.name, event.msg_tag) if kind in SENDS else (
                    peer, rank, event.communicator.name, event.msg_tag)
                (sends if kind in SENDS else receives).setdefault(channel, []).append(
                    (event.time, event.msg_length, location.name))
            if kind in STARTS or kind in COMPLETIONS:
                per_rank.setdefault(rank, []).append((event.time, kind, event.request_id, location.name))
    problems = []
    messages = 0
    for channel in sorted(set(sends) | set(receives), key=str):
        sent = sorted(sends.get(channel, []))
        received = sorted(receives.get(channel, []))
        if len(sent) != len(received):
            problems.append("%s: %d sends, %d receives" % (channel, len(sent), len(received)))
        for n, (send, receive) in enumerate(zip(sent, received)):
            if send[1] != receive[1]:
                problems.append("%s: message %d: %d bytes sent, %d received" % (channel, n, send[1], receive[1]))
            elif send[0] > receive[0]:
                problems.append("%s: message %d: sent %.9f s after it was received" % (
                    channel, n, (send[0] - receive[0]) / resolution))
            messages += 1
    requests = 0
    for rank, events in sorted(per_rank.items()):
        outstanding = {}
        for time, kind, request, where in sorted(events, key=lambda e: (e[0], e[1] not in STARTS)):
            if kind in STARTS:
                requests += 1
                if request in outstanding:
                    problems.append("rank %d: request %d started again in %s while outstanding since %s"
                                    % (rank, request, where, outstanding[request]))
                outstanding[request] = where
            elif outstanding.pop(request, None) is None:
                problems.append("rank %d: %s of request %d in %s, which is not outstanding" % (rank, kind, request, where))
    for problem in problems[:20]:
        print("check-message-pairs: FAIL: " + problem)
    if len(problems) > 20:
        print("check-message-pairs: FAIL: ... and %d more" % (len(problems) - 20))
    if messages < minimum:
        print("check-message-pairs: FAIL: %d messages, expected at least %d" % (messages, minimum))
    if problems or messages < minimum:
        sys.exit(1)
    print("check-message-pairs: OK: %d messages on %d channels, %d requests" % (
        messages, len(set(sends) | set(receives)), requests))


if __name__ == "__main__":
    main()

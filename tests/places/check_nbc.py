#!/usr/bin/python3
"""check_nbc.py — the nonblocking collectives of a snapshot against what nbc_collectives printed.

    check_nbc.py --app-ranks N ANCHOR.otf2 PROGRAM-OUTPUT

Per application rank (its main thread's location "rank R"): every NonBlockingCollectiveRequest lies in
the call that started the collective (MPI_Start, MPI_Startall, MPI_I<collective>) and is completed by
exactly one NonBlockingCollectiveComplete with the same request id, later, inside a Wait/Test call; the
completions carry the operation, communicator, root and bytes the program expects ("expect" lines, in
the order the collectives started); the blocking collectives still come as MpiCollectiveBegin/End
pairs, as many as the program made. Needs Debian's python3-otf2 (hence /usr/bin/python3).
"""
import re
import sys

import otf2

NO_ROOT = 4294967295


def integer(value):
    return int(getattr(value, "value", value))


def read_output(path):
    with open(path, errors="replace") as f:
        text = f.read()
    # mpiexec may glue one rank's line into another's unterminated one: every report starts a line.
    text = re.sub(r"(.)(nbc-collectives: rank \d)", r"\1\n\2", text)
    expected, summary = {}, {}
    for line in text.splitlines():
        m = re.match(r"nbc-collectives: rank (\d+) expect op=(\d+) comm=(world|half) root=(\d+) "
                     r"sent=(\d+) received=(\d+)$", line)
        if m:
            expected.setdefault(int(m[1]), []).append((int(m[2]), m[3], int(m[4]), int(m[5]), int(m[6])))
            continue
        m = re.match(r"nbc-collectives: rank (\d+) blocking=(\d+) nonblocking=(\d+) half=([0-9,]+) OK$", line)
        if m:
            summary[int(m[1])] = (int(m[2]), int(m[3]), [int(r) for r in m[4].split(",")])
    return expected, summary


def comm_kind(comm, half_members):
    if comm.name == "MPI_COMM_WORLD":
        return "world"
    # Members of a communicator's group are the MPI locations of its world ranks ("rank R").
    members = [int(re.match(r"rank (\d+)", m.name)[1]) for m in comm.group.members]
    if comm.name.startswith("MPI_Comm_split") and members == half_members:
        return "half"
    return "%s %s" % (comm.name, members)


def check_rank(rank, events, expected, summary, problems):
    blocking, nonblocking, half_members = summary
    stack, open_requests, completed = [], {}, []
    begins = ends = requests = 0
    for event in events:
        kind = type(event).__name__
        if kind == "Enter":
            stack.append(event.region.name)
        elif kind == "Leave":
            stack.pop()
        elif kind == "MpiCollectiveBegin":
            begins += 1
        elif kind == "MpiCollectiveEnd":
            ends += 1
        elif kind == "NonBlockingCollectiveRequest":
            requests += 1
            caller = stack[-1] if stack else ""
            if caller not in ("MPI_Start", "MPI_Startall") and not caller.startswith("MPI_I"):
                problems.append("rank %d: request %d started in %r" % (rank, event.request_id, caller))
            if event.request_id in open_requests:
                problems.append("rank %d: request %d started twice" % (rank, event.request_id))
            open_requests[event.request_id] = event.time
        elif kind == "NonBlockingCollectiveComplete":
            caller = stack[-1] if stack else ""
            if not caller.startswith(("MPI_Wait", "MPI_Test")):
                problems.append("rank %d: request %d completed in %r" % (rank, event.request_id, caller))
            started = open_requests.pop(event.request_id, None)
            if started is None or started > event.time:
                problems.append("rank %d: request %d completed but not started before" % (rank, event.request_id))
            completed.append((integer(event.collective_op), comm_kind(event.communicator, half_members),
                              integer(event.root), event.size_sent, event.size_received))
    if open_requests:
        problems.append("rank %d: requests never completed: %s" % (rank, sorted(open_requests)))
    if requests != nonblocking or len(completed) != nonblocking:
        problems.append("rank %d: %d requests and %d completions, want %d of each"
                        % (rank, requests, len(completed), nonblocking))
    if sorted(completed) != sorted(expected):
        problems.append("rank %d: completions %s, want %s" % (rank, completed, expected))
    if begins != blocking or ends != blocking:
        problems.append("rank %d: %d MpiCollectiveBegin and %d MpiCollectiveEnd, want %d of each"
                        % (rank, begins, ends, blocking))
    print("check-nbc: rank %d: %d request/complete pairs, %d blocking collectives" % (rank, len(completed), ends))


def main():
    if len(sys.argv) != 5 or sys.argv[1] != "--app-ranks":
        sys.exit("check_nbc.py: usage: check_nbc.py --app-ranks N ANCHOR OUTPUT")
    app_ranks = int(sys.argv[2])
    expected, summary = read_output(sys.argv[4])
    problems = []
    if sorted(summary) != list(range(app_ranks)):
        problems.append("summary lines of ranks %s, want 0..%d" % (sorted(summary), app_ranks - 1))
    events = {}
    with otf2.reader.open(sys.argv[3]) as trace:
        for location, event in trace.events:
            events.setdefault(location.name, []).append(event)
    for rank in sorted(summary):
        if len(expected.get(rank, [])) != summary[rank][1]:
            problems.append("rank %d: %d expect lines, summary says %d" % (rank, len(expected.get(rank, [])),
                                                                            summary[rank][1]))
        check_rank(rank, events.get("rank %d" % rank, []), expected.get(rank, []), summary[rank], problems)
    for problem in problems:
        print("check-nbc: FAIL: " + problem)
    if problems:
        sys.exit(1)
    print("check-nbc: OK: %d ranks" % app_ranks)


if __name__ == "__main__":
    main()

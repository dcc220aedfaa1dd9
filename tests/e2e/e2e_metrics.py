#!/usr/bin/python3
"""e2e.metrics — metrics switched while the job runs (docs/usage.md, "Metrics"): 2 stencil ranks under
otfx-run with 2 places, started without metrics. `metrics list` and `metrics available` answer per rank
and per metric (hardware events counted where the machine has a PMU, refused with the reason where it
has none); `metrics set task-clock`, `add page-faults`, `remove task-clock`, `set cycles` switch every
rank; an unknown name is refused. A snapshot then shows, on every location, one `otfx:metric-set` mark
per switch, each between the command that asked for it and the next one, and after every ENTER and LEAVE
exactly the metrics of the set in force there: no value straddles two sets."""
import collections
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import e2e_job  # noqa: E402
from e2e_job import check  # noqa: E402

MARK = "otfx:metric-set"
MARGIN_NS = 2_000_000  # the ranks' clock conversion
SETTLE_S = 1.0  # time for the ranks to record events under each set
HAS_PMU = os.path.isdir("/sys/bus/event_source/devices/cpu")


def lines_of(lines, type_):
    return [line for line in lines if line.type == type_]


def selection(reply):
    """{ranks: (selected, counted, refused)} of a metrics command's answer; every place said ok."""
    summary = lines_of(reply, "summary")[0]
    check(summary.int("ok") == summary.int("places"), f"every event place carried out {summary['command']}")
    return {line["ranks"]: (line["selected"], line["counted"], line["refused"]) for line in lines_of(reply, "metrics")}


def switch(client, command, expected_selected, times):
    times.append(time.monotonic_ns())
    reply = client.request(command)
    seen = selection(reply)
    check(seen and all(s[0] == expected_selected for s in seen.values()),
          f"`{command}`: every rank reads {expected_selected} ({seen})")
    time.sleep(SETTLE_S)
    return reply


def read_snapshot(path):
    """Per location: the marks (time, set id) and, per ENTER/LEAVE, (time, the metrics read there, in
    order: [(name, value)])."""
    events = subprocess.run(["otf2-print", path], capture_output=True, text=True, timeout=300)
    if events.returncode != 0:
        raise e2e_job.Failure(f"otf2-print could not read {path}: {events.stderr}")
    pattern = re.compile(r'^(\w+)\s+(\d+)\s+(\d+)\s+(.*)$')
    value_pattern = re.compile(r'\("([^"]+)" <\d+>; \w+; (\d+)\)')
    marks = collections.defaultdict(list)
    reads = collections.defaultdict(list)
    for line in events.stdout.splitlines():
        m = pattern.match(line)
        if not m:
            continue
        kind, location, at = m.group(1), int(m.group(2)), int(m.group(3))
        if kind == "METRIC":
            v = value_pattern.search(m.group(4))
            if not v:
                raise e2e_job.Failure(f"a METRIC record without a value: {line}")
            name, value = v.group(1), int(v.group(2))
            if name == MARK:
                marks[location].append((at, value))
            elif not reads[location] or reads[location][-1][0] != at:
                raise e2e_job.Failure(f"location {location}: {name} at {at} follows no ENTER or LEAVE at its time")
            else:
                reads[location][-1][1].append((name, value))
        elif kind in ("ENTER", "LEAVE"):
            reads[location].append((at, []))
    return marks, reads


def check_sets(marks, reads, sets, times):
    """sets[i] is in force from mark i on; mark i lies between times[i] and times[i + 1]."""
    check(len(marks) == 2, f"both ranks' locations have set marks ({sorted(marks)})")
    for location in sorted(marks):
        at = [t for t, _ in marks[location]]
        ids = [v for _, v in marks[location]]
        check(len(at) == len(sets), f"location {location}: one mark per switch ({len(at)} of {len(sets)})")
        check(ids == sorted(set(ids)), f"location {location}: the set ids grow ({ids})")
        for i, t in enumerate(at):
            upper = times[i + 1] if i + 1 < len(times) else float("inf")
            if not times[i] - MARGIN_NS <= t <= upper + MARGIN_NS:
                raise e2e_job.Failure(f"location {location}: mark {i} at {t} is not between its command at "
                                      f"{times[i]} and the next at {upper}")
        check(True, f"location {location}: every switch is recorded after its command and before the next")
        counted = collections.Counter()
        for t, values in reads[location]:
            segment = sum(1 for m in at if m <= t) - 1  # a mark belongs to the event it comes with
            expected = sets[segment] if segment >= 0 else []
            names = [n for n, _ in values]
            if names != expected:
                raise e2e_job.Failure(f"location {location}: at {t} the metrics {names} were read, the set in "
                                      f"force was {expected}")
            counted[segment] += 1
        check(all(counted[i] > 0 for i in range(len(sets))),
              f"location {location}: events recorded under every set ({dict(counted)})")
        # accumulated counters never go down within a set (a new set starts new counters)
        for segment in range(len(sets)):
            last = {}
            for t, values in reads[location]:
                if sum(1 for m in at if m <= t) - 1 != segment:
                    continue
                for name, value in values:
                    if value < last.get(name, 0):
                        raise e2e_job.Failure(f"location {location}: {name} went down at {t} within set {segment}")
                    last[name] = value
        check(True, f"location {location}: no value straddles two sets, counters grow within each")


def steer(job, session):
    client = job.client(session)
    listed = selection(client.request("metrics list"))
    check(listed and all(s[0] == "none" for s in listed.values()), f"started without metrics ({listed})")

    available = {line["name"]: line for line in lines_of(client.request("metrics available"), "metric")}
    check(available["task-clock"].int("counted_ranks") == 2 and available["page-faults"].int("counted_ranks") == 2,
          "both ranks can count the software events")
    cycles = available["cycles"]
    if HAS_PMU:
        check(cycles.int("counted_ranks") == 2, "this machine has a PMU: cycles is counted")
    else:
        check(cycles.int("refused_ranks") == 2 and "no hardware PMU" in cycles.get("reason", ""),
              f"no PMU here: cycles is refused with the reason ({cycles.get('reason')})")

    # built with PAPI: its presets are in the table, each counted or refused with PAPI's reason
    papi = [line for name, line in available.items() if name.startswith("papi:")]
    if papi:
        check(all(line.int("counted_ranks") == 2 or
                  (line.int("refused_ranks") == 2 and line.get("reason", "").startswith("PAPI: ")) for line in papi),
              f"every PAPI preset is counted or refused with PAPI's reason ({papi[0].get('reason')})")

    times = []
    switch(client, "metrics set task-clock", "task-clock", times)
    switch(client, "metrics add page-faults", "task-clock,page-faults", times)
    switch(client, "metrics remove task-clock", "page-faults", times)
    reply = switch(client, "metrics set cycles", "cycles", times)
    refused = lines_of(reply, "refused")
    if HAS_PMU:
        check(not refused, "cycles is counted where there is a PMU")
    else:
        check(len(refused) >= 1 and all(line["metric"] == "cycles" and "PMU" in line["reason"] for line in refused),
              f"`metrics set cycles` says per rank why cycles is not counted ({refused})")
    try:
        client.request("metrics add no-such-metric")
        raise e2e_job.Failure("an unknown metric was accepted")
    except e2e_job.otfx_client.ServerError as error:
        check("no-such-metric" in error.details, f"an unknown metric is refused ({error.details})")
    listed = selection(client.request("metrics list"))
    check(all(s[0] == "cycles" for s in listed.values()), f"`metrics list` shows the selection ({listed})")

    reply = client.request("snapshot metrics.otf2")
    archive = {line["archive"] for line in lines_of(reply, "place")}.pop()
    marks, reads = read_snapshot(archive)
    sets = [["task-clock"], ["task-clock", "page-faults"], ["page-faults"], ["cycles"] if HAS_PMU else []]
    check_sets(marks, reads, sets, times)
    client.close()


def main(args):
    """metrics switched at run time"""
    job = e2e_job.Job(args, ranks=2, places=2, name="e2e-metrics")
    session = job.start()
    try:
        steer(job, session)
    except BaseException:
        job.kill()
        print(job.output())
        raise
    job.finish()


if __name__ == "__main__":
    e2e_job.run(main)

#!/usr/bin/python3
"""otf2_summary ARCHIVE.otf2 — per-rank event counts and time range of an OTF2 archive, read with Debian's
python3-otf2 (run with /usr/bin/python3). Prints one JSON object:
    {"ranks": {"0": {"events": N, "first": T, "last": T, "last_enter": T, "enters": {region: n}}, ...},
     "regions": [...], "clock": {"resolution": R, "offset": O}}
Times are converted to ns on the trace's clock (offset included)."""
import collections
import json
import re
import sys

import otf2


def main(path):
    ranks = {}
    with otf2.reader.open(path) as trace:
        props = trace.definitions.clock_properties
        resolution = props.timer_resolution
        offset = props.global_offset
        for location, event in trace.events:
            match = re.match(r"rank (\d+)", location.name or "")
            if not match or "not exported" in (location.name or ""):
                continue
            rank = ranks.setdefault(match.group(1), {"events": 0, "first": None, "last": None, "last_enter": None,
                                                     "enters": collections.Counter(), "types": collections.Counter()})
            # events carry ticks since the global offset; convert to ns
            t = event.time
            ns = int(t * 1_000_000_000 // resolution) if resolution != 1_000_000_000 else t
            rank["events"] += 1
            rank["first"] = ns if rank["first"] is None else min(rank["first"], ns)
            rank["last"] = ns if rank["last"] is None else max(rank["last"], ns)
            rank["types"][type(event).__name__] += 1
            if type(event).__name__ == "Enter":
                rank["enters"][event.region.name] += 1
                rank["last_enter"] = ns if rank["last_enter"] is None else max(rank["last_enter"], ns)
        regions = sorted(r.name for r in trace.definitions.regions)
    print(json.dumps({"ranks": ranks, "regions": regions, "clock": {"resolution": resolution, "offset": offset}}))


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/python3
"""scale_bench — steering and query costs against ranks and tree depth (a benchmark).

    tbon/bench/scale_bench.py --otfx-run build/dev/capture/otfx-run --example build/dev/examples/stencil \\
        [--config RANKS:PLACES:FANIN ...] [--events 20000] [--repeat 5] [--bins 1000]

For every configuration it runs the example on RANKS ranks under `otfx-run --places PLACES --fanin FANIN`
(the layout the root prints gives the event places E and the inner levels), waits until every rank holds
EVENTS events, stops recording and pauses the application (so every query sees the same data and the
places get the cores the ranks would otherwise take), then measures from one client on this node:
  app_pause_ms / app_resume_ms  round trip of `app resume` and `app pause` (the reply comes when every
                                rank acknowledged), REPEAT pairs, median
  record_ms                     round trip of `record resume` / `record pause`, median
  <query>_ms                    `status`, `profile` and `timeline --bins BINS --rows RANKS`, median
  <query>_answer_bytes          the answer's payload in the client protocol
  <query>_cpu_root_us           CPU time per query of the root place (all its threads, from
                                /proc/PID/task/*/schedstat), mean over the repeats; also _cpu_inner_us
                                (mean over the inner places but the root) and _cpu_leaf_us (mean per
                                event place) and _cpu_places_us (all places together); what the
                                places use idle over the same time (measured for 2 s) is subtracted
Prints one block of key=value lines per configuration, and the load average before and after.
CPU times are what to compare under load; wall times include waiting for the cores."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import otfx_client  # noqa: E402

DEFAULT_CONFIGS = ["16:3:16", "16:7:2", "64:5:16", "64:9:2", "128:17:16", "128:11:2"]


def answer(client, command):
    """Sends COMMAND and returns (lines, payload bytes of the final answer)."""
    request = client.send(command)
    while True:
        kind, got, payload = client.read_frame()
        if got != request or kind in (otfx_client.NOTICE, otfx_client.PARTIAL):
            continue
        lines = otfx_client.parse_lines(payload)
        if kind == otfx_client.ERROR:
            raise otfx_client.ServerError(lines[0].get("code") if lines else None,
                                          lines[0].get("message") if lines else "", lines)
        return lines, len(payload)


def place_pids(example, total_ranks, first_place):
    """World rank -> pid of the example's processes that are places (ranks first_place...)."""
    name = os.path.basename(example)[:15]
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        except OSError:
            continue
        rank = int(environ.get(b"PMI_RANK", b"-1"))
        if first_place <= rank < total_ranks:
            found[rank] = int(entry)
    return found


def cpu_ns(pid):
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except OSError:
        pass
    return total


def parse_layout(log_path):
    """(event places, inner levels, largest fan-in) from the layout the root printed."""
    with open(log_path, errors="replace") as f:
        text = f.read()
    events = len(re.findall(r"^place \d+ \((?:root, )?event\)", text, re.M))
    inner = {int(m.group(1)): [int(c) for c in m.group(2).split()]
             for m in re.finditer(r"^place (\d+) \((?:root, )?analysis\): children([ \d]*)$", text, re.M)}
    if not events:
        return None
    depth = {}

    def level(place):
        if place not in inner:
            return 0
        if place not in depth:
            depth[place] = 1 + max(level(c) for c in inner[place])
        return depth[place]

    levels = max((level(p) for p in inner), default=0)
    widest = max((len(c) for c in inner.values()), default=0)
    return events, levels, widest, sorted(inner)


def measure(args, config, work):
    ranks, places, fanin = (int(x) for x in config.split(":"))
    stop = os.path.join(work, "stop")
    log_path = os.path.join(work, "job.log")
    env = dict(os.environ)
    env.setdefault("MPIR_CVAR_POLLS_BEFORE_YIELD", "10")
    with open(log_path, "wb") as log:
        job = subprocess.Popen([args.otfx_run, "-n", str(ranks), "--places", str(places), "--fanin", str(fanin),
                                "--session-dir", work, "--buffer", args.buffer, "--", args.example,
                                "--until-file", stop], stdout=log, stderr=subprocess.STDOUT, cwd=work, env=env)
    out = {"ranks": ranks, "places": places, "fanin": fanin}
    started = time.monotonic()
    try:
        session = otfx_client.read_session(work, timeout=args.timeout)
        out["start_s"] = round(time.monotonic() - started, 1)
        layout = parse_layout(log_path)
        for _ in range(60):  # the root prints it beside the session file: stderr may come later
            if layout:
                break
            time.sleep(1)
            layout = parse_layout(log_path)
        if not layout:
            sys.exit(f"scale_bench: no layout in {log_path}")
        out["event_places"], out["levels"], out["widest_fanin"], inner = layout
        with otfx_client.Client(session, timeout=args.timeout) as client:
            filling = time.monotonic()
            while True:
                lines = client.request("status")
                held = [line.int("events_held") for line in lines if line.type == "rank"]
                if len(held) == ranks and min(held) >= args.events:
                    break
                if time.monotonic() - filling > args.timeout:
                    sys.exit(f"scale_bench: {config}: ranks hold {min(held, default=0)} events at least "
                             f"after {args.timeout} s")
                time.sleep(1)
            out["fill_s"] = round(time.monotonic() - filling, 1)
            client.request("record pause")
            lines = client.request("status")
            out["events_held_total"] = sum(line.int("events_held") for line in lines if line.type == "rank")

            # Steering with the application running: pause, resume; it ends paused for the queries.
            pause, resume, record = [], [], []
            for _ in range(args.repeat):
                t = time.perf_counter()
                client.request("app pause")
                pause.append((time.perf_counter() - t) * 1000)
                time.sleep(0.2)
                t = time.perf_counter()
                client.request("app resume")
                resume.append((time.perf_counter() - t) * 1000)
                time.sleep(0.2)
            for _ in range(args.repeat):
                for command in ("record resume", "record pause"):
                    t = time.perf_counter()
                    client.request(command)
                    record.append((time.perf_counter() - t) * 1000)
            client.request("app pause")
            out["app_pause_ms"] = statistics.median(pause)
            out["app_resume_ms"] = statistics.median(resume)
            out["record_ms"] = statistics.median(record)

            pids = place_pids(args.example, ranks + places, ranks)
            leaves = [ranks + p for p in range(out["event_places"])]
            root = ranks + places - 1
            inner_but_root = [ranks + p for p in inner if ranks + p != root]
            queries = {"status": "status", "profile": "profile",
                       "timeline": f"timeline --bins {args.bins} --rows {ranks}"}
            # What the places burn idle (their loops' timed waits), subtracted from every query's figure.
            before, idle_started = {rank: cpu_ns(pid) for rank, pid in pids.items()}, time.perf_counter()
            time.sleep(2)
            idle_s = time.perf_counter() - idle_started
            idle_rate = {rank: (cpu_ns(pid) - before[rank]) / idle_s for rank, pid in pids.items()}
            out["idle_cpu_per_place_us_per_s"] = statistics.mean(idle_rate.values()) / 1000
            for name, command in queries.items():
                answer(client, command)  # warm: first use of the module on every place
                before = {rank: cpu_ns(pid) for rank, pid in pids.items()}
                walls, size, measured_from = [], 0, time.perf_counter()
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    _, size = answer(client, command)
                    walls.append((time.perf_counter() - t) * 1000)
                elapsed = time.perf_counter() - measured_from
                used = {rank: max(0.0, cpu_ns(pid) - before[rank] - idle_rate[rank] * elapsed) / args.repeat / 1000
                        for rank, pid in pids.items()}
                out[f"{name}_ms"] = statistics.median(walls)
                out[f"{name}_answer_bytes"] = size
                out[f"{name}_cpu_root_us"] = used.get(root, float("nan"))
                out[f"{name}_cpu_leaf_us"] = statistics.mean(used[r] for r in leaves if r in used and r != root) \
                    if any(r in used and r != root for r in leaves) else float("nan")
                out[f"{name}_cpu_inner_us"] = statistics.mean(used[r] for r in inner_but_root if r in used) \
                    if any(r in used for r in inner_but_root) else float("nan")
                out[f"{name}_cpu_places_us"] = sum(used.values())
            client.request("app resume")
    finally:
        open(stop, "w").close()
        try:
            job.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()
    out["job_exit"] = job.returncode
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--config", action="append", help="RANKS:PLACES:FANIN (repeatable); default: "
                        + " ".join(DEFAULT_CONFIGS))
    parser.add_argument("--events", type=int, default=20000, help="events every rank holds first")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bins", type=int, default=1000)
    parser.add_argument("--buffer", default="16M")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    args.otfx_run, args.example = os.path.abspath(args.otfx_run), os.path.abspath(args.example)
    for config in args.config or DEFAULT_CONFIGS:
        work = tempfile.mkdtemp(prefix="otfx-scale-bench-")
        print(f"# config {config}: load average {os.getloadavg()[0]:.1f} before", flush=True)
        out = measure(args, config, work)
        for key, value in out.items():
            print(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}")
        print(f"# load average {os.getloadavg()[0]:.1f} after; job log {work}/job.log", flush=True)


if __name__ == "__main__":
    main()

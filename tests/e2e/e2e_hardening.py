#!/usr/bin/python3
"""e2e.hardening — no query or client can kill or stall the job: 4 stencil ranks, 2 event places under a
root, a query memory bound of 4 MiB. Idle unauthenticated connections do not lock otfxctl out; a record
window that would overflow the clock is refused; `events --limit 10000000` is refused as too large while
the places stay within budget + bound (their reports' peak memory) and status counts the refusal;
clients that never read their replies leave the root within its bound of unread answers (its peak
memory, from /proc) while a client that reads is answered; a session file of mode 0644 is ignored by the
Python client. The job completes and verifies itself."""
import contextlib
import io
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import e2e_job  # noqa: E402
import otfx_client  # noqa: E402
from e2e_job import check  # noqa: E402

QUERY_MEMORY_MIB = 4
# An event in an events answer takes at least 52 bytes (tbon/src/modules/events.c): a place holding more
# than this many events cannot answer `events --limit 10000000` within the query memory bound.
EVENTS_OVER_BOUND = QUERY_MEMORY_MIB * 1024 * 1024 // 52 + 1
UNREAD_TOTAL_MIB = 256  # the root's bound of unread answers of all clients (docs/protocol.md)
PLACE_SLACK_MIB = 64  # what a place's MPI, threads and scratch take beyond its traces (e2e_long_run: ~48)


def main(args):
    """hardening"""
    job = e2e_job.Job(args, ranks=4, places=3, name="e2e-hardening",
                      extra=["--buffer", "32M", "--query-memory", f"{QUERY_MEMORY_MIB}M"])
    session = job.start()
    try:
        session_files(job, session)
        idle_connections(args, job, session)
        window_overflow(args, job, session)
        wait_for_events(job, session, EVENTS_OVER_BOUND)
        too_large(args, job, session)
        lazy_clients(job, session)
    except BaseException:
        job.kill()
        print(job.output())
        raise
    output = job.finish()
    place_memory(output)


def otfxctl(args, job, *words):
    return subprocess.run([args.otfxctl, *words], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, OTFX_SESSION_DIR=job.work))


def session_files(job, session):
    """A copy of the session file that others could read (0644) is not used, and the client says so."""
    other = tempfile.mkdtemp(prefix="otfx-e2e-sessions-")
    try:
        copy = os.path.join(other, "otfx-session-copy.txt")
        shutil.copy(os.path.join(job.work, "otfx-session-e2e-hardening.txt"), copy)
        os.chmod(copy, 0o644)
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            try:
                otfx_client.read_session(other, timeout=0.5)
                found = True
            except TimeoutError:
                found = False
        check(not found and "ignoring the session file" in said.getvalue() and "mode 0644" in said.getvalue(),
              "a session file of mode 0644 is ignored, and the client says so")
    finally:
        shutil.rmtree(other, ignore_errors=True)


def idle_connections(args, job, session):
    """70 connections that never authenticate (more than the server's 16 before HELLO and its 64 clients)
    do not keep otfxctl out."""
    idle = [socket.create_connection((session["address"], int(session["port"])), timeout=10) for _ in range(70)]
    try:
        for attempt in range(3):
            result = otfxctl(args, job, "status")
            check(result.returncode == 0 and "summary" in result.stdout,
                  f"otfxctl status answered with 70 idle unauthenticated connections open (try {attempt + 1})")
        closed = 0
        for sock in idle:
            sock.settimeout(0.05)
            try:
                if sock.recv(65536) == b"":
                    closed += 1
            except (socket.timeout, ConnectionResetError):
                closed += isinstance(sys.exc_info()[1], ConnectionResetError)
        check(closed >= 70 - 16, f"the server cut {closed} of the idle connections (all but at most 16)")
    finally:
        for sock in idle:
            sock.close()


def window_overflow(args, job, session):
    """record window 18446744073s would end past the 64-bit clock: refused, recording goes on."""
    result = otfxctl(args, job, "record", "window", "18446744073s")
    check(result.returncode == 2 and "too long" in result.stderr, "otfxctl refuses the window before sending it")
    with otfx_client.Client(session) as client:
        try:
            client.request("record window 18446744073s")
            refused = None
        except otfx_client.ServerError as error:
            refused = error
        check(refused is not None and refused.code == "bad-command" and "too long" in refused.message,
              f"the server refuses it too: {refused}")
        summary = [line for line in client.request("status") if line.type == "summary"][0]
        check(summary["recording"] == "on", "recording goes on")


def wait_for_events(job, session, count, timeout=180.0):
    """Until every event place holds at least `count` events: the application runs until the test stops
    it, so this is a state it reaches at any speed; the ceiling only catches a job that stopped."""
    deadline = time.monotonic() + timeout
    with otfx_client.Client(session) as client:
        while True:
            held = [line.int("events_held") for line in client.request("status") if line.type == "place"]
            if held and min(held) >= count:
                check(True, f"every event place holds at least {count} events: {held}")
                return
            if time.monotonic() > deadline:
                raise e2e_job.Failure(f"the event places hold only {held} events after {timeout} s "
                                      f"(waiting for {count} each)")
            time.sleep(0.5)


def too_large(args, job, session):
    """events --limit 10000000 while each place holds more events than fit in the query memory bound:
    refused at the bound by both places, with the reason."""
    result = otfxctl(args, job, "events", "--limit", "10000000")
    check(result.returncode == 1 and "too large" in result.stderr and "query memory bound" in result.stderr,
          "otfxctl events --limit 10000000: refused as too large, the reason in plain output")
    with otfx_client.Client(session) as client:
        summary = [line for line in client.request("status") if line.type == "summary"][0]
        check(summary.int("queries_too_large") >= 2, "status counts the refusals at the places")
        lines = client.request("events --limit 10 --ranks 0")
        check(any(line.type == "event" for line in lines), "a small events query is answered as before")


def vm_kib(pid, key):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise e2e_job.Failure(f"no {key} for pid {pid}")


def lazy_clients(job, session):
    """16 clients send 8 events queries each (~6 MB answers) and never read: without a bound the root
    would queue ~770 MB for them. It stays within its bound of unread answers; a client that reads still
    gets its answers."""
    root = int(session["pid"])
    before = vm_kib(root, "VmRSS")
    lazy = []
    for c in range(16):
        sock = socket.create_connection((session["address"], int(session["port"])), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hello = f"hello token={session['token']} client=lazy{c}".encode()
        sock.sendall(otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.HELLO, 0, len(hello)) + hello)
        for r in range(1, 9):
            line = b"events --limit 15000"
            sock.sendall(otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.REQUEST, r, len(line)) + line)
        lazy.append(sock)
    try:
        # Each place's worker takes the jobs in order: once this status is answered, every events leaf is
        # done; the root has had them all.
        with otfx_client.Client(session, timeout=300) as reader:
            reader.request("status")
            time.sleep(3)
            lines = reader.request("events --limit 100 --ranks 0")
            check(any(line.type == "event" for line in lines), "a client that reads is answered meanwhile")
        peak = vm_kib(root, "VmHWM")
        growth_mib = (peak - before) / 1024
        bound_mib = UNREAD_TOTAL_MIB + 160  # plus answers on their way through the root, and allocator slack
        check(growth_mib <= bound_mib,
              f"the root grew by {growth_mib:.0f} MiB (peak) with 16 clients not reading 128 answers of ~6 MB "
              f"(bound {bound_mib} MiB)")
    finally:
        for sock in lazy:
            sock.close()


def place_memory(output):
    """Every event place's peak stayed within what its traces hold, three times the query bound (a result
    being built, results waiting to be sent) and a constant: unbounded, the events query alone would take
    ~60 bytes per event held, and the 128 lazy answers ~2 MB each until the root took them."""
    held_kib = sum(int(m.group(1)) for m in re.finditer(r"^otfx-place: rank \d+ events .* bytes_used=(\d+)/", output,
                                                          re.M)) // 1024
    lines = re.findall(r"^otfx-place (\d+): memory vmhwm_kib=(\d+) at_start_kib=(\d+) traces=(\d+) ", output, re.M)
    check(len(lines) == 2, "both event places reported their memory")
    for place, peak, start, traces in lines:
        growth = int(peak) - int(start)
        bound = held_kib + 512 * int(traces) + 3 * QUERY_MEMORY_MIB * 1024 + PLACE_SLACK_MIB * 1024
        check(growth <= bound, f"place {place} grew by {growth} KiB (bound {bound} KiB: the traces held "
                               f"{held_kib} KiB, 3 x the query bound, {PLACE_SLACK_MIB} MiB for MPI and scratch)")


if __name__ == "__main__":
    e2e_job.run(main)

#!/usr/bin/python3
"""e2e.clients — the root server under hostile and careless clients: two clients at once, a client killed
in the middle of a query, a wrong token, random and truncated frames, an oversized frame. After each the
server still answers, and the job completes correctly."""
import os
import random
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import e2e_job  # noqa: E402
import otfx_client  # noqa: E402
from e2e_job import check  # noqa: E402


def raw_connection(session):
    return socket.create_connection((session["address"], int(session["port"])), timeout=10)


def read_until_closed(sock):
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False
    except ConnectionResetError:
        return data, True


def error_codes(data):
    codes = []
    while len(data) >= 16:
        magic, version, kind, request, length = otfx_client.HEADER.unpack(data[:16])
        payload = data[16:16 + length]
        data = data[16 + length:]
        if kind == otfx_client.ERROR:
            codes += [line.get("code") for line in otfx_client.parse_lines(payload)]
    return codes


def still_serving(session, what):
    with otfx_client.Client(session) as client:
        lines = client.request("status")
        check(any(line.type == "summary" for line in lines), f"the server still answers after {what}")


def main(args):
    """hostile clients"""
    job = e2e_job.Job(args, ranks=8, places=2, name="e2e-clients")
    session = job.start()
    try:
        attack(session)
    except BaseException:
        job.kill()
        print(job.output())
        raise
    job.finish()


def attack(session):
    # Two clients at once, each with several queries in flight.
    results = {}

    def worker(name):
        with otfx_client.Client(session) as client:
            requests = [client.send(command) for command in ("status", "profile", "timeline --bins 50 --rows 4",
                                                             "messages", "status")]
            results[name] = [client.wait(r) for r in requests]

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check(len(results) == 2 and all(len(r) == 5 for r in results.values()),
          "two clients with five queries in flight each got every answer")

    # A client killed mid-query.
    for _ in range(3):
        client = otfx_client.Client(session)
        client.send("profile")
        client.send("timeline --bins 1000 --rows 8")
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # RST, with both queries in flight
    still_serving(session, "three clients vanished mid-query")

    # A wrong token, no HELLO, garbage.
    try:
        otfx_client.Client(session, token="0" * 32)
        check(False, "a wrong token is refused")
    except otfx_client.ServerError as error:
        check(error.code == "auth", f"a wrong token is refused ({error.code}: {error.message})")
    sock = raw_connection(session)
    sock.sendall(otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.REQUEST, 1, 6) + b"status")
    data, closed = read_until_closed(sock)
    check(closed and "auth" in error_codes(data), "a request before HELLO is refused and the connection closed")
    sock.close()

    rng = random.Random(42)
    for i in range(20):
        sock = raw_connection(session)
        if i % 3 == 0:
            payload = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        elif i % 3 == 1:  # a valid header, truncated payload, then close
            payload = otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.HELLO, 0, 100) + b"hello tok"
        else:  # a HELLO, then a request with random bytes as its command
            hello = f"hello token={session['token']} client=fuzz".encode()
            junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 100)))
            payload = (otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.HELLO, 0, len(hello)) + hello +
                       otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.REQUEST, 7, len(junk)) + junk)
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)  # the end of the stream: a frame cut short stays cut short
        read_until_closed(sock)
        sock.close()
    still_serving(session, "20 connections of random and truncated frames")

    sock = raw_connection(session)
    hello = f"hello token={session['token']} client=big".encode()
    sock.sendall(otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.HELLO, 0, len(hello)) + hello +
                 otfx_client.HEADER.pack(otfx_client.MAGIC, 1, otfx_client.REQUEST, 2, 1 << 30))
    data, closed = read_until_closed(sock)
    check(closed and "bad-frame" in error_codes(data), "an oversized frame gets bad-frame and the connection closed")
    sock.close()
    still_serving(session, "an oversized frame")

    # A bad command gets an error reply, the connection stays.
    with otfx_client.Client(session) as client:
        try:
            client.request("frobnicate --now")
            check(False, "an unknown command is refused")
        except otfx_client.ServerError as error:
            check(error.code == "bad-command", f"an unknown command is refused ({error.message})")
        check(any(line.type == "summary" for line in client.request("status")), "and the connection stays usable")


if __name__ == "__main__":
    e2e_job.run(main)

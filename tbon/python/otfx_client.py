"""otfx_client — a small third-party client of the otfx root server in Python, written from docs/protocol.md
only (the end-to-end tests and the steering benchmark use it). It finds jobs by the same rules as the C
client library of otfxctl and the viewer (tbon/include/otfx/client.h): the newest otfx-session-*.txt of
the user's own and mode 0600, its first line a "session" line with address, port and a 32-digit token.

The end-to-end tests use it to speak the protocol directly (frames, record lines), next to otfxctl:
    session = read_session(directory)          # newest otfx-session-*.txt
    with Client(session) as client:
        lines = client.request("status")       # [Line(type, {key: value})], raises ServerError
"""
import glob
import os
import socket
import stat
import struct
import sys
import time

MAGIC = 0x4F544658
VERSION = 1
HELLO, WELCOME, REQUEST, PARTIAL, REPLY, ERROR, NOTICE = 1, 2, 3, 4, 5, 6, 7
HEADER = struct.Struct(">IHHII")


class ServerError(Exception):
    """An ERROR frame: its first line's code and message, and every line (places say why they failed)."""

    def __init__(self, code, message, lines=()):
        details = "; ".join(line.get("error") for line in lines if line.get("error"))
        super().__init__(f"{code}: {message}" + (f" ({details})" if details else ""))
        self.code = code
        self.message = message
        self.lines = list(lines)
        self.details = details


class Line:
    def __init__(self, type_, fields):
        self.type = type_
        self.fields = fields

    def __getitem__(self, key):
        return self.fields[key]

    def get(self, key, default=None):
        return self.fields.get(key, default)

    def int(self, key):
        return int(self.fields[key])

    def __repr__(self):
        return f"{self.type} {self.fields}"


def decode_value(text):
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
        if raw[i] == 0x25:  # '%'
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


def parse_lines(payload):
    lines = []
    for text in payload.decode("utf-8", "replace").splitlines():
        if not text:
            continue
        parts = text.split(" ")
        fields = {}
        for part in parts[1:]:
            if not part:
                continue
            key, _, value = part.partition("=")
            fields[key] = decode_value(value)
        lines.append(Line(parts[0], fields))
    return lines


def untrusted_session(info):
    """Why a session file (its os.stat result) must not be trusted, or None: it names the server the
    token goes to, so it must be the user's own and private to them, as the job writes it."""
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_uid != os.geteuid():
        return f"owned by uid {info.st_uid}, not by you (uid {os.geteuid()})"
    if stat.S_IMODE(info.st_mode) != 0o600:
        return f"mode {stat.S_IMODE(info.st_mode):04o}, not 0600 (others could read it or have written it)"
    return None


def usable_session(line):
    """Whether a session file's first line names a job: a "session" line with address, port (1 to 65535)
    and a 32-digit lower-case token, as otfxctl and the viewer require (tbon/include/otfx/client.h)."""
    port, token = line.get("port", ""), line.get("token", "")
    return (line.type == "session" and bool(line.get("address"))
            and port.isdigit() and 1 <= int(port) <= 65535
            and len(token) == 32 and all(c in "0123456789abcdef" for c in token))


def trusted_session_files(directory, newer_than=0.0, warned=None):
    """The otfx-session-*.txt files of `directory` that may be used; the others are named on stderr
    (once per file when `warned` is a set)."""
    files = []
    for path in glob.glob(os.path.join(directory, "otfx-session-*.txt")):
        try:
            info = os.stat(path)
        except OSError:
            continue
        why = untrusted_session(info)
        if why:
            if warned is None or path not in warned:
                print(f"otfx_client: ignoring the session file {path}: {why}", file=sys.stderr, flush=True)
                if warned is not None:
                    warned.add(path)
            continue
        if info.st_mtime >= newer_than:
            files.append(path)
    return files


def read_session(directory, timeout=60.0, newer_than=0.0):
    """The newest session file's record line, waiting up to `timeout` seconds for one to appear. Files
    not owned by the user or not of mode 0600 are ignored (and named on stderr)."""
    deadline = time.monotonic() + timeout
    warned = set()
    while True:
        files = trusted_session_files(directory, newer_than, warned)
        if files:
            newest = max(files, key=os.path.getmtime)
            try:
                with open(newest, "rb") as handle:
                    lines = parse_lines(handle.readline())
                if lines and usable_session(lines[0]):
                    return lines[0]
            except OSError:
                pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no session file in {directory} after {timeout} s")
        time.sleep(0.1)


class Client:
    def __init__(self, session, token=None, timeout=30.0):
        self.sock = socket.create_connection((session["address"], int(session["port"])), timeout=timeout)
        self.next_request = 1
        self.notices = []
        self.send_frame(HELLO, 0, f"hello token={token or session['token']} client=e2e".encode())
        kind, _, payload = self.read_frame()
        if kind == ERROR:
            line = parse_lines(payload)[0]
            raise ServerError(line.get("code"), line.get("message"))
        if kind != WELCOME:
            raise RuntimeError(f"expected WELCOME, got frame kind {kind}")
        self.welcome = parse_lines(payload)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_frame(self, kind, request, payload):
        self.sock.sendall(HEADER.pack(MAGIC, VERSION, kind, request, len(payload)) + payload)

    def read_exact(self, size):
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("server closed the connection")
            data += chunk
        return bytes(data)

    def read_frame(self):
        magic, version, kind, request, length = HEADER.unpack(self.read_exact(HEADER.size))
        if magic != MAGIC or version != VERSION:
            raise RuntimeError(f"bad frame from server: magic {magic:#x} version {version}")
        return kind, request, self.read_exact(length)

    def send(self, command):
        request = self.next_request
        self.next_request += 1
        self.send_frame(REQUEST, request, command.encode())
        return request

    def wait(self, request, partial=None):
        while True:
            kind, got, payload = self.read_frame()
            if kind == NOTICE:
                self.notices.extend(parse_lines(payload))
                continue
            if got != request:
                continue
            if kind == PARTIAL:
                if partial is not None:
                    partial.append(parse_lines(payload))
                continue
            lines = parse_lines(payload)
            if kind == ERROR:
                line = lines[0] if lines else Line("error", {})
                raise ServerError(line.get("code"), line.get("message"), lines)
            return lines

    def request(self, command, partial=None):
        return self.wait(self.send(command), partial)

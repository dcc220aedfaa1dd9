#!/usr/bin/python3
"""record_replies — records the final REPLY payloads of a running job into tests/gui/replies/, the
answers the viewer's model tests (test_models.cpp) and the gui fake root (gui_fake_root.c) replay.

    otfx-run -n 4 --places 3 --session-dir /tmp/s -- stencil --until-file /tmp/s/stop &
    tests/gui/record_replies.py /tmp/s tests/gui/replies

Each file NAME.txt holds the payload of one command, exactly as the server sent it.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import otfx_client  # noqa: E402


def main():
    session_dir, out = sys.argv[1], sys.argv[2]
    session = otfx_client.read_session(session_dir, timeout=60)
    client = otfx_client.Client(session)
    status = client.request("status")
    first = min(int(line.get("first_time", 0)) for line in status if line.type == "place")
    last = max(int(line.get("last_time", 0)) for line in status if line.type == "place")
    middle = (first + last) // 2
    commands = {
        "status": "status",
        "timeline": "timeline --bins 200 --rows 64",
        "timeline_window": f"timeline --from {first}ns --to {last}ns --bins 100 --rows 2",
        "profile": "profile",
        "events": f"events --from {middle}ns --to {middle + 30000000}ns --ranks all --limit 2000",
    }
    for name, command in commands.items():
        request = client.send(command)
        while True:
            kind, number, payload = client.read_frame()
            if number == request and kind in (otfx_client.REPLY, otfx_client.ERROR):
                break
        with open(os.path.join(out, name + ".txt"), "wb") as handle:
            handle.write(payload)
        print(f"{name}: {command} -> {len(payload)} bytes, kind {kind}")
    client.close()


if __name__ == "__main__":
    main()

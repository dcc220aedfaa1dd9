#!/usr/bin/python3
"""e2e_snapshot_faults — snapshots of a running job into places that cannot hold them.

Run by tests/harness/with-scratch-mounts SCRATCH, which mounts SCRATCH/ro (a read-only tmpfs) and
SCRATCH/full (a small tmpfs, filled here before the snapshot) in a mount namespace of the test's own. The
job (stencil on 4 ranks, 2 event places under a root) is asked for a snapshot into each: the answer is
an error naming the system's reason on every place, nothing is left behind, the job goes on recording;
a snapshot into a good directory afterwards is written and read by otf2-print; the application ends
verified, and every rank's held calls are exactly the calls it counted (expected-calls).
"""
import os
import re
import subprocess

import e2e_job
from e2e_job import check


def expect_refusal(client, path, reason, directory):
    try:
        client.request(f"snapshot {path}")
        check(False, f"the snapshot {path} fails")
    except e2e_job.otfx_client.ServerError as error:
        places = [line for line in error.lines if line.type == "place"]
        check(len(places) == 2 and all(reason in (line.get("error") or "") for line in places),
              f"the snapshot {path} fails on every place with '{reason}' ({error.details})")
    left = os.listdir(directory)
    check(left in ([], ["filler"]), f"nothing of it is left in {directory} ({left})")


def fill(directory):
    """Fills the file system of `directory`: the next write there fails with ENOSPC."""
    with open(os.path.join(directory, "filler"), "wb") as filler:
        block = b"\0" * 65536
        try:
            while True:
                filler.write(block)
                filler.flush()
        except OSError:
            pass
    statistics = os.statvfs(directory)
    check(statistics.f_bavail == 0, f"{directory} is full")


def calls(output, pattern):
    found = {}
    for line in re.sub(r"(.)(expected-calls: [0-9]|otfx-place: rank [0-9])", "\\1\n\\2", output).splitlines():
        match = re.match(pattern, line)
        if match:
            found[int(match.group(1))] = match.group(2).strip()
    return found


def main(args):
    scratch = os.path.dirname(os.path.abspath(args.work))
    job = e2e_job.Job(args, ranks=4, places=3, extra=["--fanin", "2", "--snapshot-dir", scratch],
                      name="snapshot-faults")
    try:
        session = job.start()
        client = job.client(session)
        client.request("status")
        expect_refusal(client, "ro/a.otf2", "Read-only file system", os.path.join(scratch, "ro"))
        fill(os.path.join(scratch, "full"))
        expect_refusal(client, "full/b.otf2", "No space left on device", os.path.join(scratch, "full"))
        expect_refusal(client, "full/b.otf2", "No space left on device", os.path.join(scratch, "full"))
        reply = client.request("snapshot good/c.otf2")
        places = [line for line in reply if line.type == "place"]
        check(len(places) == 2 and all(line.get("ok") == "1" for line in places), "a snapshot into a good directory is written")
        archive = places[0]["archive"]
        printed = subprocess.run(["otf2-print", archive], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        check(printed.returncode == 0, f"otf2-print reads {archive}")
        client.request("status")
        client.close()
        output = job.finish()
        expected = calls(output, r"^expected-calls: (\d+)(.*)$")
        held = calls(output, r"^otfx-place: rank (\d+) held-calls(.*)$")
        check(len(expected) == 4 and expected == held, "every rank's held calls are the calls it counted")
    finally:
        job.kill()


if __name__ == "__main__":
    e2e_job.run(main)

"""e2e_gui — otfx-gui on a real job: the stencil example on 4 ranks under otfx-run with 3 places; the
viewer (driven by its --script mode, under Xvfb) connects, shows a non-empty timeline and profile,
pauses and resumes recording, records a 2-second window, saves a snapshot, zooms in to single events and
writes a PNG screenshot of its window into the build tree. Then otf2-print must read the snapshot, and
the job must end with exit 0 once the stop file exists. After the run, the viewer opens the snapshot as
an archive (--archive: served in-process, the same views) and runs every analysis on it.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_job  # noqa: E402
from e2e_job import Failure, check  # noqa: E402

# Single events are asked for while recording has run without a break: the middle of the view, where
# zoom-events zooms in, may otherwise fall into the pause below, where no rank recorded anything.
SCRIPT = """\
timeout 60
wait-connected
wait-timeline-nonempty
wait-profile-nonempty
wait status_replies >= 1
assert places == 2
assert recording == on
assert app_state == running
zoom-events
wait-events
show-all
record pause
wait recording == off
record resume
wait recording == on
record window 2
wait windows_ended >= 1 30
record resume
wait recording == on
snapshot {snapshot}
assert last_ok == 1
assert last_answer contains ok=2
show-all
wait-timeline-nonempty
wait-profile-nonempty
sleep 1
highlight
screenshot {screenshot}
print
"""

# The snapshot after the run: every view and analysis from the archive, served in the viewer's process.
ARCHIVE_SCRIPT = """\
timeout 120
wait-connected
wait-timeline-nonempty
wait-profile-nonempty
wait status_replies >= 1
assert app_state == finished
assert job contains archive:
assert places == 1
analysis rank-profile
assert rank_profile_rows > 0
assert rank_profile_groups == 4
analysis matrix
assert matrix_messages > 0
analysis wait-states
assert ws_slices_answered > 0
analysis structure
assert structure_groups >= 1
analysis compensated
assert rank_profile_compensated == 1
analysis critical-path
assert cp_length_ns > 0
wait overlay_segments > 0
expect-fail record pause
screenshot {screenshot}
print
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--otfxctl", default="otfxctl")
    parser.add_argument("--example", required=True)
    parser.add_argument("--gui", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--screenshot", required=True)
    args = parser.parse_args()

    job = e2e_job.Job(args, ranks=4, places=3, name="gui")
    try:
        job.start()
        snapshot = "gui-e2e-snapshot"
        script = os.path.join(job.work, "e2e.script")
        if os.path.exists(args.screenshot):
            os.unlink(args.screenshot)
        with open(script, "w") as handle:
            handle.write(SCRIPT.format(snapshot=snapshot, screenshot=args.screenshot))
        print("viewer: " + " ".join([args.gui, "--session-dir", job.work, "--script", script]), flush=True)
        viewer = subprocess.run([args.gui, "--session-dir", job.work, "--script", script], cwd=job.work,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400)
        print(viewer.stdout, flush=True)
        check(viewer.returncode == 0, f"the viewer's script passed (exit {viewer.returncode})")
        check("timeline_busy_cells" in viewer.stdout, "the viewer printed its state")
        with open(args.screenshot, "rb") as handle:
            check(handle.read(8) == b"\x89PNG\r\n\x1a\n", f"the screenshot {args.screenshot} is a PNG")
        archive = os.path.join(job.work, snapshot + ".otf2")
        check(os.path.exists(archive), f"the snapshot {archive} exists")
        printed = subprocess.run(["otf2-print", archive], capture_output=True, text=True, timeout=300)
        events = sum(1 for line in printed.stdout.splitlines() if line.startswith(("ENTER", "LEAVE")))
        check(printed.returncode == 0 and events > 0,
              f"otf2-print reads the snapshot ({events} ENTER/LEAVE records, exit {printed.returncode})")
        job.finish()

        archive_script = os.path.join(job.work, "archive.script")
        archive_screenshot = args.screenshot.replace(".png", "-archive.png")
        with open(archive_script, "w") as handle:
            handle.write(ARCHIVE_SCRIPT.format(screenshot=archive_screenshot))
        command = [args.gui, "--archive", archive, "--script", archive_script]
        print("viewer: " + " ".join(command), flush=True)
        viewer = subprocess.run(command, cwd=job.work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=400)
        print(viewer.stdout, flush=True)
        check(viewer.returncode == 0, f"the viewer's script on the archive passed (exit {viewer.returncode})")
        with open(archive_screenshot, "rb") as handle:
            check(handle.read(8) == b"\x89PNG\r\n\x1a\n", f"the screenshot {archive_screenshot} is a PNG")
        # the command line asks the archive the same way
        asked = subprocess.run([args.otfxctl, "--json", "--archive", archive, "wait-states"], capture_output=True,
                               text=True, timeout=300)
        check(asked.returncode == 0 and '"record":"wait-states"' in asked.stdout and "ws-rank" in asked.stdout,
              f"otfxctl --archive answers wait-states (exit {asked.returncode}): {asked.stderr.strip()}")
    except (Failure, subprocess.TimeoutExpired, OSError) as failure:
        print(f"FAIL: {failure}", flush=True)
        if job.process:
            print(job.output(), flush=True)
        job.kill()
        sys.exit(1)
    print("PASS", flush=True)


if __name__ == "__main__":
    main()

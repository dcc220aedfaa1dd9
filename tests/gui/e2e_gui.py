"""e2e_gui — otfx-gui on a real job: the stencil example on 4 ranks under otfx-run with 3 places; the
viewer (driven by its --script mode, under Xvfb, through the same code as its widgets) connects, shows a
non-empty timeline and profile, zooms in to single events, selects ranks (a filter, a vertical window,
back in the history, keys), pauses and resumes the application (the pause is drawn as a period), pauses
and resumes recording, records a 2-second window, saves a snapshot of everything and one of the visible
window, and writes PNG screenshots of its window into the build tree. The screen is checked by its
structure, not its pixels: every row drawn, the ruler's and the rank labels distinct. Then otf2-print
must read both snapshots (the window's holding fewer events), and the job must end with exit 0 once the
stop file exists. After the run, the viewer opens the snapshot of everything as an archive (--archive:
served in-process, the same views) and runs every analysis on it (a structure group's ranks becoming the
rank filter, the profile's function search and a message filter on the way), and otfxctl --archive asks it
too.
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
assert total_ranks == 4
wait overview_columns > 0
check-screen 4
zoom-events
wait-events
check-screen 4
# a filter of ranks, then a vertical window of it, then back in the history
ranks 0,2-3
wait timeline_slots == 3
assert visible_ranks == 0,2-3
check-screen 3
rank-window 1 2
wait timeline_slots == 2
assert visible_ranks == 2-3
check-screen 2
back
wait timeline_slots == 3
assert visible_ranks == 0,2-3
snapshot {window_snapshot} --window
assert last_ok == 1
assert last_command contains --ranks 0,2-3
ranks all
key Home
wait timeline_mode == held
key Plus
wait timeline_mode == window
key Backspace
wait timeline_mode == held
# steering: an application pause is drawn as a period
app pause
wait app_state == paused
sleep 1
app resume
wait app_state == running
assert paused_periods >= 1
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
check-screen 4
highlight
screenshot {screenshot}
colour function
zoom-events
wait-events
check-screen 4
screenshot {events_screenshot}
# the places' rate covers about ten seconds: batches arriving in bursts do not make it read 0
assert events_per_s > 0
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
# a group's ranks as the rank filter, the profile's function search, a message filter
group-ranks 0
assert rank_count >= 1
wait-timeline-nonempty
find-function mpi_
assert highlight contains MPI_
find-function
messages tag=0-1000000 min=0
assert messages_filter == tag=0-1000000
messages all
ranks all
wait-timeline-nonempty
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
        window_snapshot = "gui-e2e-window"
        events_screenshot = args.screenshot.replace(".png", "-events.png")
        script = os.path.join(job.work, "e2e.script")
        if os.path.exists(args.screenshot):
            os.unlink(args.screenshot)
        with open(script, "w") as handle:
            handle.write(SCRIPT.format(snapshot=snapshot, window_snapshot=window_snapshot,
                                       screenshot=args.screenshot, events_screenshot=events_screenshot))
        print("viewer: " + " ".join([args.gui, "--session-dir", job.work, "--script", script]), flush=True)
        viewer = subprocess.run([args.gui, "--session-dir", job.work, "--script", script], cwd=job.work,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400)
        print(viewer.stdout, flush=True)
        check(viewer.returncode == 0, f"the viewer's script passed (exit {viewer.returncode})")
        check("timeline_busy_cells" in viewer.stdout, "the viewer printed its state")
        for png in (args.screenshot, events_screenshot):
            with open(png, "rb") as handle:
                check(handle.read(8) == b"\x89PNG\r\n\x1a\n", f"the screenshot {png} is a PNG")
        check("check-screen" in viewer.stdout and "rows drawn" in viewer.stdout,
              "the screen's structure was checked")
        counts = {}
        for name in (snapshot, window_snapshot):
            archive = os.path.join(job.work, name + ".otf2")
            check(os.path.exists(archive), f"the snapshot {archive} exists")
            printed = subprocess.run(["otf2-print", archive], capture_output=True, text=True, timeout=300)
            counts[name] = sum(1 for line in printed.stdout.splitlines() if line.startswith(("ENTER", "LEAVE")))
            check(printed.returncode == 0 and counts[name] > 0,
                  f"otf2-print reads {name} ({counts[name]} ENTER/LEAVE records, exit {printed.returncode})")
        check(counts[window_snapshot] < counts[snapshot],
              f"the visible window's snapshot holds less than everything ({counts[window_snapshot]} < "
              f"{counts[snapshot]} ENTER/LEAVE records)")
        job.finish()

        archive = os.path.join(job.work, snapshot + ".otf2")
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

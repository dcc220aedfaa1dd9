"""screenshots — the images of docs/gui.md, taken by the real viewer (its --script mode, under Xvfb)
from a real job: the stencil example on 8 ranks under otfx-run with 3 places.

    xvfb-run -a -s "-screen 0 1600x1000x24" /usr/bin/python3 tests/gui/screenshots.py \\
        --otfx-run build/dev/capture/otfx-run --example build/dev/examples/example_stencil \\
        --gui build/dev/gui/otfx-gui --out docs/images

otfx-gui.png: everything held after an application pause (the veil) and a recording pause; colours by
role. otfx-gui-events.png: the ranks 0-1,6-7 picked by the rank filter, zoomed in to single events and
messages, colours by function with its legend.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_job  # noqa: E402

SCRIPT = """\
timeout 90
wait-connected
wait-timeline-nonempty
wait-profile-nonempty
sleep 4
app pause
wait app_state == paused
sleep 2
app resume
wait app_state == running
sleep 3
record pause
wait recording == off
sleep 2
record resume
wait recording == on
sleep 3
show-all
wait-timeline-nonempty
sleep 2
check-screen 8
screenshot {out}/otfx-gui.png
ranks 0-1,6-7
wait timeline_slots == 4
colour function
zoom 0.3 0.3
zoom-events
wait-events
sleep 2
check-screen 4
screenshot {out}/otfx-gui-events.png
print
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--gui", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", default=None)
    parser.add_argument("--events-below", default="60000")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    job = e2e_job.Job(args, ranks=8, places=3, name="shots")
    try:
        job.start()
        script = os.path.join(job.work, "shots.script")
        with open(script, "w") as handle:
            handle.write(SCRIPT.format(out=out))
        gui = os.path.abspath(args.gui)  # the viewer runs in the job's directory
        viewer = subprocess.run([gui, "--session-dir", job.work, "--events-below", args.events_below,
                                 "--script", script], cwd=job.work, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=600)
        print(viewer.stdout, flush=True)
        job.finish()
        sys.exit(viewer.returncode)
    except (e2e_job.Failure, subprocess.TimeoutExpired, OSError) as failure:
        print(f"FAIL: {failure}", flush=True)
        job.kill()
        sys.exit(1)


if __name__ == "__main__":
    main()

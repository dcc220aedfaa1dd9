#!/usr/bin/python3
"""e2e_trigger_marker — a marker trigger raised from Fortran (otfx_trigger of module otfx_f): the last rank
of fortran_ring_marked raises 'ring-check' after iteration MARKER_AT; the trigger pauses recording and the
application, and the snapshot before it holds the marker (a phase 'trigger:ring-check') and every
iteration before it. Then the application resumes and ends verified. A second trigger on the same marker
asks for the 1000 s after it: its snapshot is taken when the job ends, with everything up to the end."""
import os

import otf2

from e2e_job import Job, check, run
from e2e_triggers import triggers, wait_for

MARKER_AT = 7


def main(args):
    spec = "marker(ring-check) => pause-recording, pause-app, snapshot(-60s) to marked"
    late = "marker(ring-check) => snapshot(-1s,+1000s) to late"
    job = Job(args, ranks=3, places=1, name="trigger_marker", extra=["--trigger", spec, "--trigger", late])
    # fortran_ring has no --until-file: it runs its iterations for at least 8 s (the pause must find it
    # running) and ends
    job.command = job.command[:job.command.index("--") + 2] + ["--iterations", "30", "--seconds", "8",
                                                               "--marker-at", str(MARKER_AT)]
    session = job.start()
    try:
        with job.client(session) as client:
            fired = wait_for("the marker trigger fired and acted",
                             lambda: (lambda t: t if t["state"] == "spent" else None)(triggers(client)[1]))
            check(fired["detail"] == "marker ring-check raised by rank 2", f"the marker came from rank 2: "
                  f"{fired['detail']}")
            check(fired.int("recording_latency_ns") > 0 and fired.int("pause_latency_ns") > 0,
                  "recording stopped and the application paused")
            summary = [line for line in client.request("status") if line.type == "summary"][0]
            check(summary["recording"] == "off" and summary["app_state"] == "paused",
                  f"status: recording {summary['recording']}, application {summary['app_state']}")
            archive = fired["archive"]
            markers, sendrecvs_before = [], 0
            with otf2.reader.open(archive) as trace:
                for location, event in trace.events:
                    if (location.name or "") != "rank 2":
                        continue
                    kind = type(event).__name__
                    if kind == "Enter" and event.region.name == "trigger:ring-check":
                        markers.append(event.time)
                    elif kind == "Enter" and event.region.name == "MPI_Sendrecv" and not markers:
                        sendrecvs_before += 1
            check(len(markers) == 1, f"the snapshot holds the marker once ({len(markers)})")
            check(sendrecvs_before == 3 * MARKER_AT,
                  f"and the {MARKER_AT} iterations before it ({sendrecvs_before} MPI_Sendrecv of rank 2)")
            client.request("app resume")
            client.request("record resume")
            check(triggers(client)[2]["state"] == "firing", "the second trigger waits for the time after the marker")
        output = job.finish()
        check("fortran_ring: verification OK" in output, "fortran_ring verified its result")
        check("otfx: trigger 2 acted (firing 1, 0 reports merged)\n" in output,
              "the second trigger's snapshot was taken at the end of the job")
        finalizes = 0
        with otf2.reader.open(os.path.join(job.work, "late.otf2")) as trace:
            for location, event in trace.events:
                finalizes += type(event).__name__ == "Enter" and event.region.name == "MPI_Finalize"
        check(finalizes == 3, f"and holds the job up to its end ({finalizes} MPI_Finalize calls)")
    finally:
        job.kill()


if __name__ == "__main__":
    run(main)

/*
 * otfx.h — marking regions and phases of an MPI program traced by otfx (libotfx-capture).
 *
 * Link the program with -lotfx-capture (before the MPI libraries; -Wl,--no-as-needed if it calls
 * nothing else of it) and run it under otfx-run, or as any traced program (capture/README.md). Without
 * places (pass-through) and outside MPI_Init … MPI_Finalize every call returns at once.
 *
 *   otfx_region_begin("solve");   …   otfx_region_end("solve");
 *   otfx_phase("checkpoint");
 *   otfx_trigger("diverged");     raises the marker that triggers `marker(diverged)` wait for
 *
 * Regions nest with each other, with MPI calls and with -finstrument-functions regions; end closes the
 * innermost open region (its name is for the reader: it is not checked). Each thread sends a name to
 * its place once, then only a small id: names may be any string, built at run time or not (the
 * text is what counts, not the pointer). A region begun before recording started is not recorded,
 * and neither is its end. Phases are markers: an event at that time on a region of role PHASE.
 * otfx_trigger("NAME") records a phase "trigger:NAME" (never filtered): the places fire every armed trigger
 * `marker(NAME)` on it (docs/usage.md, "Triggers"). Like any event it needs recording on and the user
 * class enabled, and reaches the places with the rank's next batch (within about 0.1 s while a trigger is
 * armed: the places ask for it).
 *
 * Fortran: capture/fortran/otfx_f.f90 (installed as share/otfx/fortran/otfx_f.f90) is a module `otfx_f`
 * with the same four subroutines taking a Fortran character string.
 */
#ifndef OTFX_H
#define OTFX_H

#ifdef __cplusplus
extern "C" {
#endif

void otfx_region_begin(const char *name);
void otfx_region_end(const char *name);
void otfx_phase(const char *name);
void otfx_trigger(const char *name);

#ifdef __cplusplus
}
#endif
#endif

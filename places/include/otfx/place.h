/*
 * otfx/place.h — the event place: the tool rank that holds the traces of the application ranks it serves.
 *
 * An event place receives the batches of raw records its application ranks send
 * (capture/include/otfx/capture_wire.h), converts each batch into otfx events and appends them with one
 * otfx_trace_append call to the otfx trace of that rank and thread. All traces of a place share one
 * otfx_defs: regions come from the MPI function table (role from the function's event class), user
 * functions from their addresses and the rank's load map (libdwfl), otfx.h names,
 * communicators from the ranks' communicator records, phases from MPI_Pcontrol. Every trace has the
 * same fixed budget (OTFX_BUFFER, default 64M) and reduction strategy (OTFX_REDUCTION, default ring).
 *
 * The place's main loop polls its communicators and sleeps on a condition variable when nothing came
 * (50 µs growing to 1 ms, woken at once by its own threads): it never spins. A malformed batch is
 * reported on stderr, counted and dropped whole: it never reaches a trace.
 *
 * Every place also runs its part of the tool tree (otfx/tbon.h, otfx/tree.h): queries and
 * steering commands come down from the root, whose server (otfx/server.h) takes them from clients;
 * analysis modules' leaf computations run on a worker thread, snapshots on a thread of their own
 * (MPI_THREAD_MULTIPLE). The root prints the layout and the session file's path on stderr at start.
 *
 * A job fails when an application rank ends without MPI_Finalize (a fatal signal, MPI_Abort, exit(), or
 * its process vanished) or when the places get SIGINT or SIGTERM: the places then write what they hold to
 * snapshot_on_failure (else snapshot_at_exit), print their reports and the root ends the job with
 * MPI_Abort and the exit status the failure gives (docs/architecture.md, "A failed job").
 *
 * At the end (every served rank sent its goodbye batch) it prints one report per rank:
 *   otfx-place: rank R events received=… held=… reduced=… dropped=… blocked_ns=… bytes_used=U/B
 *   otfx-place: rank R held-calls MPI_X=C …      (ENTER events per MPI function, from the traces)
 *   otfx-place: rank R held-functions NAME=C …   (the same for user functions and otfx.h regions)
 *   otfx-place: rank R held-phases NAME=C …      (PHASE events per phase region)
 *   otfx-place: rank R throttled NAME(calls=C,mean_ns=T,skipped)=S …   (only when functions were; one
 *                                     entry per thread that throttled NAME: throttling is per thread)
 * and one line about its own memory (VmHWM, the peak resident set of the place process).
 *
 * libotfx-capture runs it inside MPI_Init on the place ranks (in-binary places and otfx-place, MPMD).
 */
#ifndef OTFX_PLACE_H
#define OTFX_PLACE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

struct otfx_tbon_layout;

#ifdef __cplusplus
extern "C" {
#endif

/* The MPI functions records name by index (function_id): their names and event classes, the class
 * column of capture/mpi_functions.tsv ("p2p-send", "collective", "other", …). */
typedef struct otfx_place_functions {
    const char *const *names;
    const char *const *classes;
    int count;
} otfx_place_functions;

/* The place's settings from the environment (the launcher sets them; otfx_place_settings_from_env reads
 * them through otfx/settings.h, capture/settings/settings.tsv). */
typedef struct otfx_place_settings {
    const char *listen;              /* OTFX_LISTEN: the root's server address; NULL: 127.0.0.1:0 */
    const char *session_dir;         /* OTFX_SESSION_DIR: where the root writes its session file; NULL: the
                                      * working directory */
    const char *snapshot_dir;        /* OTFX_SNAPSHOT_DIR: snapshots are written under it; NULL: the working
                                      * directory */
    const char *snapshot_at_exit;    /* OTFX_SNAPSHOT_AT_EXIT: archive written by all event places when the
                                      * application ended; NULL: none */
    const char *snapshot_on_failure; /* OTFX_SNAPSHOT_ON_FAILURE: archive written when the job fails (an
                                      * application rank ended without MPI_Finalize, or the job was
                                      * interrupted); NULL: snapshot_at_exit's, if given */
    int snapshot_overwrite;          /* OTFX_SNAPSHOT_OVERWRITE=1: those two replace an existing archive */
    const char *run_status;          /* OTFX_RUN_STATUS: the root writes how the job ended there (otfx-run
                                      * reads it); NULL: nowhere */
    const char *job_id;              /* OTFX_JOB_ID; NULL: derived from the root's pid and start time */
    const char *triggers; /* OTFX_TRIGGERS: triggers separated by ';' (otfx/trigger.h); NULL: none */
} otfx_place_settings;

/* Reads the settings above (pointers into the settings library's copies; empty values count as unset). */
void otfx_place_settings_from_env(otfx_place_settings *settings);

typedef struct otfx_event_place_setup {
    MPI_Comm tool_comm; /* the batches arrive on it; an application rank's rank in it is its world rank */
    int place_rank;     /* this place's rank in tool_comm (for messages) */
    int first_served;   /* application ranks first_served … first_served + served_count - 1 */
    int served_count;   /* may be 0: the place then ends at once */
    otfx_place_functions functions;
    /* The tree. places_comm MPI_COMM_NULL (or layout NULL): a standalone event place, no
     * tree and no server, that ends once its ranks said goodbye (the tests of places/ run it so). */
    MPI_Comm places_comm; /* the places only, place index = rank in it (from the world split) */
    const struct otfx_tbon_layout *layout;
    int place_index;     /* 0 … P-1; event places 0 … E-1 serve ranks, the others are inner nodes */
    int thread_provided; /* MPI's thread level: MPI_THREAD_MULTIPLE lets snapshots run on a thread */
    otfx_place_settings settings;
} otfx_event_place_setup;

/* Runs the place: an event place receives its ranks' batches and answers the tree's queries and
 * commands; an analysis place (not an event place in the layout) only runs its part of the tree; the
 * root (place P-1) also runs the client server. Every event place prints its report once its ranks said
 * goodbye; the place returns when the root shut the tree down (a standalone place: at once after its
 * report). Returns 0, or 2 after printing why when OTFX_BUFFER, OTFX_REDUCTION, OTFX_QUERY_MEMORY or
 * OTFX_MODULE_TIMEOUT is invalid (nothing received then: the caller ends the job). Runs MPI through
 * PMPI_* only. */
int otfx_event_place_run(const otfx_event_place_setup *setup);

#ifdef __cplusplus
}
#endif
#endif

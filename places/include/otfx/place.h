/*
 * otfx/place.h — the event place: the tool rank that holds the traces of the application ranks it serves.
 *
 * An event place receives the batches of raw records its application ranks send
 * (capture/src/record_format.h), converts each batch into otfx events and appends them with one
 * otfx_trace_append call to the otfx trace of that rank and thread. All traces of a place share one
 * otfx_defs: regions come from the MPI function table (role from the function's event class), user
 * functions from their addresses and the rank's load map (libdwfl), otfx.h names,
 * communicators from the ranks' communicator records, phases from MPI_Pcontrol. Every trace has the
 * same fixed budget (OTFX_BUFFER, default 64M) and reduction strategy (OTFX_REDUCTION, default ring).
 *
 * The place blocks in MPI while its queue is empty (it never spins in its own code), and a malformed
 * batch is reported on stderr, counted and dropped whole: it never reaches a trace.
 *
 * At the end (every served rank sent its goodbye batch) it prints one report per rank:
 *   otfx-place: rank R events received=… held=… reduced=… dropped=… blocked_ns=… bytes_used=U/B
 *   otfx-place: rank R held-calls MPI_X=C …      (ENTER events per MPI function, from the traces)
 *   otfx-place: rank R held-functions NAME=C …   (the same for user functions and otfx.h regions)
 *   otfx-place: rank R held-phases NAME=C …      (PHASE events per phase region)
 *   otfx-place: rank R throttled NAME(calls=C,mean_ns=T,skipped)=S …   (only when functions were)
 * and one line about its own memory (VmHWM, the peak resident set of the place process).
 *
 * libotfx-capture runs it inside MPI_Init on the place ranks (in-binary places and otfx-place, MPMD).
 */
#ifndef OTFX_PLACE_H
#define OTFX_PLACE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

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

typedef struct otfx_event_place_setup {
    MPI_Comm tool_comm; /* the batches arrive on it; an application rank's rank in it is its world rank */
    int place_rank;     /* this place's rank in tool_comm (for messages) */
    int first_served;   /* application ranks first_served … first_served + served_count - 1 */
    int served_count;   /* may be 0: the place then ends at once */
    otfx_place_functions functions;
} otfx_event_place_setup;

/* Runs the place until every served rank said goodbye, prints the report and frees everything.
 * Returns 0, or 2 after printing why when OTFX_BUFFER or OTFX_REDUCTION is invalid (nothing received
 * then: the caller ends the job). Runs MPI through PMPI_* only. */
int otfx_event_place_run(const otfx_event_place_setup *setup);

/* Parses a buffer size: a positive integer with an optional suffix K, M or G (powers of 1024, an
 * optional trailing "B" or "iB" allowed, case-insensitive): "65536", "256K", "64M", "1GiB". Returns 0
 * and sets *bytes, or -1 for anything else (empty, negative, garbage, overflow). */
int otfx_place_parse_size(const char *text, size_t *bytes);

/* The smallest OTFX_BUFFER a trace accepts (otfx's minimum budget). */
#define OTFX_PLACE_MIN_BUFFER ((size_t)64 * 1024)

#ifdef __cplusplus
}
#endif
#endif

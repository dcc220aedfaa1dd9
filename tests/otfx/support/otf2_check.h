/* otf2_check.h — helpers for the OTF2 export/import tests: traces from random streams, events of a
 * trace as an array, event comparison across definition stores, and reading archives back with
 * otf2-print and with Debian's python3-otf2. */
#ifndef OTFX_TEST_OTF2_CHECK_H
#define OTFX_TEST_OTF2_CHECK_H

#include "otfx/trace.h"
#include "random_stream.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A fresh directory under OTFX_TEST_TMPDIR named after `tag` (and the process); caller frees. */
char *otf2_check_scratch_dir(const char *tag);
/* rm -r of a scratch directory (only below OTFX_TEST_TMPDIR). */
void otf2_check_remove_tree(const char *path);

/* One trace per rank 0..count-1, each fed `events` events of a random stream of `kind` (seed = base
 * seed + rank) and then closed (every region left). Budget and strategy as given. The streams' world
 * is their default (16 ranks) or `traces` if larger; otf2_check_job_world sets it explicitly. */
typedef struct otf2_check_job {
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
} otf2_check_job;
void otf2_check_job_create(otf2_check_job *job, random_stream_kind kind, uint64_t seed, size_t traces,
                           size_t events, size_t budget_bytes, otfx_reduction strategy);
void otf2_check_job_world(otf2_check_job *job, random_stream_kind kind, uint64_t seed, size_t traces,
                          size_t events, size_t budget_bytes, otfx_reduction strategy, uint32_t world_size);
void otf2_check_job_destroy(otf2_check_job *job);

/* Events of query_events(trace, from, to, context) as a malloc'ed array. */
typedef struct otf2_check_events {
    otfx_event *events;
    size_t count, capacity;
} otf2_check_events;
void otf2_check_collect(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                        otf2_check_events *out);
void otf2_check_events_free(otf2_check_events *events);
/* What an export writes of a rank's events (one trace per rank), by the rule for requests (trace.h,
 * otfx_otf2_export_shared): a completion whose request's start (ISEND, IRECV_REQUEST, NBC_REQUEST) is not
 * among the events is left out, an IRECV whose IRECV_REQUEST is not among them becomes a RECV. For
 * events without message ordinals (seq 0), which are not paired. */
void otf2_check_expect_requests(otf2_check_events *events);

/* Compares two events of (possibly) different definition stores by what their references mean.
 * Returns true when equal; otherwise writes a description of the difference. */
bool otf2_check_same_event(const otfx_defs *defs_a, const otfx_event *a, const otfx_defs *defs_b,
                           const otfx_event *b, char *why, size_t why_size);

/* Records of one location as otf2-print lists them. */
enum { OTF2_CHECK_MAX_RECORD_KINDS = 32 };
typedef struct otf2_check_location {
    uint64_t location;
    uint64_t total;
    char names[OTF2_CHECK_MAX_RECORD_KINDS][64];
    uint64_t counts[OTF2_CHECK_MAX_RECORD_KINDS];
    uint64_t reduction_records; /* ENTERs of "otfx reduced: " regions that start a reduced range */
    uint64_t reduced_enters;    /* all ENTERs of "otfx reduced: " regions (pieces) */
    bool well_nested;           /* every LEAVE closes the innermost region, none left open */
    bool ordered;               /* timestamps never decrease */
    uint64_t first_time, last_time;
} otf2_check_location;

typedef struct otf2_check_print {
    int exit_code;
    otf2_check_location *locations;
    size_t count;
} otf2_check_print;

/* Runs otf2-print on the anchor file and parses its event listing. */
void otf2_check_print_run(const char *anchor, otf2_check_print *out);
void otf2_check_print_free(otf2_check_print *print);
const otf2_check_location *otf2_check_print_find(const otf2_check_print *print, uint64_t location);
uint64_t otf2_check_count(const otf2_check_location *location, const char *record_name);

/* The records of one location as "<RECORD> <time>[ <region name>]" lines (region events only carry
 * the name), in archive order, as one malloc'ed string with '\n' after each line. */
char *otf2_check_print_listing(const char *anchor, uint64_t location);

/* 0 when /usr/bin/python3 can `import otf2`; otherwise a reason is written to `why`. */
bool otf2_check_python_available(char *why, size_t why_size);
/* Runs a python script that reads the archive with the otf2 module and prints, per location,
 * "<location id> <record class name> <count>" lines; parses them into per-location counts (record
 * names are OTF2's event class names, e.g. "MpiSend"). Returns the script's exit code. */
int otf2_check_python_counts(const char *anchor, otf2_check_print *out);

#endif

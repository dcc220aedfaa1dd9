/* otf2_export_internal.h — what the files of the OTF2 export share (private to libotfx).
 *
 * otf2_export.c          the entry points: arguments, sizes, the exchanges of a shared export
 * otf2_export_archive.c  the archive's files and directory
 * otf2_export_trace.c    one trace: its frozen copy and the passes over its events
 * otf2_export_ranges.c   reduced ranges: the plan and the stack of open regions
 * otf2_export_records.c  the OTF2 records of one event
 * otf2_export_defs.c     global and local definitions, placeholder locations
 *
 * The archive is written in the order OTF2 allows and Score-P uses: first every trace's events (so
 * the clock properties and the definitions can say what the events used), then empty local
 * definition files, then the global definitions. How events, windows and reduced ranges map to OTF2
 * is described in docs/otfx-format.md, "OTF2 export and import". */
#ifndef OTFX_OTF2_EXPORT_INTERNAL_H
#define OTFX_OTF2_EXPORT_INTERNAL_H

#include "otf2_clock_condition.h"
#include "otf2_common.h"
#include "otf2_pairing.h"
#include "otf2_unify.h"
#include "trace_copy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* OTF2 3.0.2's file layer collects writes smaller than OTF2_FILE_BUFFER_SIZE (4 MiB, OTF2_File.h) in a
 * buffer of that size and writes it out when it is full. When that write fails (a full disk), it frees
 * the buffer but keeps using it: the next write copies into freed memory and closing the file writes it
 * and frees it again (otf2_file_write_buffered, otf2_file_finalize: double free, or SIGSEGV in fwrite).
 * Writes of at least the buffer's size go to the file directly and fail cleanly, and a file smaller than
 * the buffer is written once, when it is closed, where a failure does no harm (OTF2 then goes on as if
 * it had been written: otfx_otf2_system_error finds it). OTF2 writes a file chunk by chunk, whole chunks
 * and then the used part of the last one. So event files, whose size a live trace does not tell in
 * advance, use chunks of 4 MiB; definition files use small chunks only while their definitions are
 * known to fit in the buffer (definition_chunk_bytes). Readers hold one chunk per location they read
 * (measured: otf2-print of 8 locations of 200 KB each, 11 MB resident with 1 MiB event chunks, 36 MB
 * with 4 MiB). */
#define OTF2_FILE_BUFFER_BYTES (4u << 20)

enum {
    EVENT_CHUNK_BYTES = OTF2_FILE_BUFFER_BYTES,
    /* A compressed 64-bit group member takes at most 9 bytes; the rest of a Group record is small. */
    GROUP_MEMBER_BYTES = 9,
    GROUP_RECORD_SLACK = 64 << 10,
    /* definition_bytes_bound: a definition record but a Group at its largest (refs and numbers of up to
     * 9 bytes each, the record's framing), a String's framing; a location's records (Location,
     * LocationGroup, SystemTreeNode, their names); what every archive holds besides (otfx's strings and
     * attributes, the clock, the system tree's root, paradigms). */
    DEFINITION_RECORD_BYTES = 96,
    DEFINITION_LOCATION_BYTES = 4 * 96 + 64,
    DEFINITION_FIXED_BYTES = 64 << 10,
    /* Definitions whose bound stays below this fit in OTF2's file buffer with room for what the
     * store gains while the export runs; above it, definition chunks are the buffer's size. */
    DEFINITIONS_IN_BUFFER = 2 << 20,
    /* OTF2 region refs: reduced-range regions first (one per strategy), then otfx region r at
     * REGION_REF_OFFSET + r, so regions defined while the export runs can never collide with them. */
    REGION_REF_OFFSET = OTFX_REDUCE_COUNT,
    /* String refs written first, in this order, so events can use them before definitions exist. */
    STRING_EMPTY = 0,
    STRING_STRATEGY_FIRST = 1,
    /* Group refs: the MPI location group, then one group per communicator. */
    GROUP_COMM_LOCATIONS = 0,
    GROUP_COMM_FIRST = 1,
};

/* Prefix of the error messages of OTF2_TRY (otf2_common.h). */
#define OTF2_TRY_CONTEXT "OTF2 export: "

/* World rank -> rank in one communicator (OTF2 events name peers and roots by communicator rank). */
typedef struct rank_pair {
    uint32_t world, local;
} rank_pair;

typedef struct comm_ranks {
    bool built;
    bool identity; /* member i is world rank i: no lookup needed */
    uint32_t size;
    rank_pair *by_world; /* sorted by world rank */
} comm_ranks;

typedef struct exported_location {
    uint32_t rank, thread;
    uint64_t events;
    bool placeholder; /* not exported; completes the MPI location group */
} exported_location;

/* Chunks of the archive's event chunk size that OTF2's buffers gave back, for the next buffer to take
 * (otf2_export_archive.c says why). */
typedef struct export_chunk_pool {
    void **free;
    size_t free_count, free_capacity;
} export_chunk_pool;

typedef struct exporter {
    otfx_defs *defs;           /* this process's definitions: what its events refer to */
    otfx_defs *global_defs;    /* the union of every process's: what the global definitions hold */
    otfx_otf2_def_map map;     /* this process's references -> global_defs' */
    bool map_identity;         /* no mapping tables needed */
    bool master;               /* writes the anchor, the global definitions and the placeholders */
    uint64_t definition_chunk; /* the archive's definition chunk size */
    OTF2_Archive *archive;
    export_chunk_pool chunks; /* outlives the archive */
    OTF2_AttributeList *attributes;
    OTF2_GlobalDefWriter *global;
    OTF2_StringRef next_string;

    /* Lazily cached definitions (the store may grow while the export runs; it never shrinks). */
    uint32_t known_regions, known_comms, known_metrics;
    comm_ranks *comms;
    size_t comm_capacity;
    otfx_metric_type *metric_types;
    size_t metric_type_capacity;

    bool any_time;
    otfx_time earliest, latest;

    exported_location *locations; /* every process's, and the placeholders (master) */
    size_t location_count, location_capacity;
    exported_location *own; /* this process's */
    size_t own_count, own_capacity;

    otfx_pairing *pairing;       /* which point-to-point records are written (otf2_pairing.h) */
    otfx_clock_condition *clock; /* receives moved after their sends (otf2_clock_condition.h) */
} exporter;

/* A reduction record and the region that shows its range (see "Reduced ranges" below). */
typedef enum range_state {
    RANGE_WAITING, /* its begin has not come yet */
    RANGE_OPEN,    /* its region is open (or is about to be re-entered) */
    RANGE_CLOSING, /* its end has passed, but regions entered inside it are still open above it */
    RANGE_DONE
} range_state;

typedef struct reduced_range {
    otfx_event record;    /* as the trace reported it (its time clamped to the window) */
    otfx_time begin, end; /* clipped to the window: where its region is shown */
    uint32_t pieces;      /* Enters written so far; the first one carries the record */
    range_state state;
} reduced_range;

/* A region open in the archive: an otfx region or a piece of a reduced range. */
typedef struct open_frame {
    bool reduced;
    uint32_t index; /* otfx region ref, or index into ranges */
} open_frame;

/* Planning pass: an open region and the earliest end of the ranges that were open when it was entered. */
typedef struct planned_frame {
    uint64_t sequence;
    otfx_time time, earliest_range_end;
    otfx_ref region;
} planned_frame;

/* A region entered inside a reduced range that is still open after the range's end. */
typedef struct outliving_enter {
    uint64_t sequence; /* which ENTER of the trace's stream */
    otfx_time time, leave;
    otfx_ref region;
} outliving_enter;

typedef enum export_pass { PASS_COLLECT, PASS_CLOCK, PASS_PLAN, PASS_WRITE } export_pass;

typedef struct trace_export {
    exporter *x;
    OTF2_EvtWriter *writer;
    uint32_t rank, thread;
    otfx_time from, to;
    export_pass pass;
    otfx_time position;        /* time of the record being placed: records never go back in time */
    otfx_clock_location clock; /* PASS_CLOCK, PASS_WRITE: the correction at position */
    uint64_t enter_sequence;
    /* A collective's COLL_BEGIN was met and its COLL_END not yet: range boundaries wait (on_event). */
    bool in_collective;
    /* COLL_BEGINs without an ordinal (the place wrote one before its record came: something was recorded
     * inside the call), in trace order, with the communicator and ordinal of the COLL_END that closed
     * each (0: none); found by the first read, used by the write to judge such a begin as its end. */
    struct unnumbered_begin {
        otfx_ref comm;
        uint64_t seq;
    } * unnumbered;
    size_t unnumbered_count, unnumbered_capacity, next_unnumbered;
    bool unnumbered_open;
    bool wrote_any;
    otfx_time first_written, last_written;

    reduced_range *ranges; /* [0, range_count) from the first pass; late ones after */
    size_t range_count, range_capacity, late_count;
    size_t *by_begin, *by_end; /* range indices in order of begin and of end */
    otfx_time last_range_end;
    size_t next_begin, next_end;

    /* PASS_PLAN */
    otfx_time *open_range_ends; /* min-heap */
    size_t open_range_count, open_range_capacity;
    planned_frame *planned;
    size_t planned_depth, planned_capacity;
    outliving_enter *outliving; /* sorted by sequence after the plan */
    size_t outliving_count, outliving_capacity, next_outliving;

    /* PASS_WRITE */
    open_frame *frames;
    size_t depth, frame_capacity;
    open_frame *lifted; /* range pieces taken off the stack to let a region pass, re-entered after it */
    size_t lifted_capacity;

    otfx_status status;
} trace_export;

/* Where the archive gets what is placed at te->position: its time corrected (otf2_clock_condition.h). */
static inline OTF2_TimeStamp stamp(const trace_export *te)
{
    return otfx_clock_map(&te->clock, te->position);
}

static inline void wrote(trace_export *te, otfx_time time)
{
    if (!te->wrote_any)
        te->first_written = time;
    te->wrote_any = true;
    te->last_written = time;
}

static inline otfx_status out_of_memory(void)
{
    return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory");
}

/* A trace read once and waiting to be written. Every trace of the export is read before any is written:
 * which messages the archive gets depends on every trace of every process. The reads and the writing
 * use a frozen copy (trace_copy.h), so they see the same events, and the live trace's read lock is held
 * only while it is copied (the copy shares its sealed chunks), so appends to it wait for that, not for
 * the export. */
typedef struct prepared_trace {
    otfx_trace *copy;
    otfx_location_def where;
    trace_export te;
} prepared_trace;

typedef struct archive_paths {
    char *directory; /* <dir>/<name>: the per-location files */
    char *anchor;    /* <dir>/<name>.otf2 */
    char *global;    /* <dir>/<name>.def */
    char *marker;    /* <dir>/<name>.marker (OTF2 writes it only on request; removed on overwrite) */
} archive_paths;

/* ---- otf2_export_archive.c ---- */

/* The paths of archive `name` in `directory` (free with export_archive_paths_free, also after a failure). */
otfx_status export_archive_paths_make(archive_paths *paths, const char *directory, const char *name);
void export_archive_paths_free(archive_paths *paths);
/* Exchange 1 on the master: the existing archive is refused or removed, the directory created. */
otfx_status export_prepare_directory(const archive_paths *paths, const char *directory, bool overwrite);
/* After a failure: nothing half-written is left behind, and the failure's message is kept. */
void export_discard_partial_archive(const archive_paths *paths, otfx_status failure);
/* The archive's buffers take their chunks from x->chunks and give them back to it (right after
 * OTF2_Archive_Open); export_chunk_pool_free after OTF2_Archive_Close. */
otfx_status export_pool_chunks(exporter *x);
void export_chunk_pool_free(export_chunk_pool *pool);

/* ---- otf2_export_trace.c ---- */

/* Copies and reads every trace (*prepared: one per trace, free with export_free_prepared). */
otfx_status export_prepare_traces(exporter *x, otfx_trace *const *traces, size_t trace_count,
                                  const otfx_export_options *options, prepared_trace **prepared);
void export_free_prepared(prepared_trace *prepared, size_t trace_count);
/* Writes the event file of every prepared trace. */
otfx_status export_traces(exporter *x, prepared_trace *prepared, size_t trace_count);
/* One read of a trace's events in the export's window. */
otfx_status export_run_pass(trace_export *te, otfx_trace *trace, export_pass pass);
/* After the pairing is decided: one read that plans the trace's reduced ranges (when it has any) and,
 * with note_dropped, notes the requests of its messages left out (otfx_pairing_needs_dropped). */
otfx_status export_plan_trace(trace_export *te, otfx_trace *trace, bool note_dropped);

/* ---- otf2_export_ranges.c ---- */

bool export_clip_range(const trace_export *te, const otfx_event *event, reduced_range *range);
otfx_status export_add_range(trace_export *te, const reduced_range *range);
otfx_status export_order_ranges(trace_export *te);
otfx_status export_plan_record(trace_export *te, const otfx_event *event);
otfx_status export_note_outliving(trace_export *te, const planned_frame *frame, otfx_time leave);
int export_compare_outliving(const void *a, const void *b);
otfx_status export_pass_boundaries(trace_export *te, otfx_time time, bool through);
otfx_status export_place_record(trace_export *te, const otfx_event *event);
otfx_status export_place_late_range(trace_export *te, const reduced_range *range);
otfx_status export_write_piece_leave(trace_export *te, size_t index);

/* ---- otf2_export_records.c ---- */

otfx_status export_add_attribute(exporter *x, otfx_otf2_attribute attribute, OTF2_AttributeValue value);
/* Writes the record(s) of one event that is not a reduction record. */
otfx_status export_write_event(trace_export *te, OTF2_TimeStamp time, const otfx_event *event);

/* ---- otf2_export_defs.c ---- */

otfx_status export_add_location(exporter *x, uint32_t rank, uint32_t thread, uint64_t events,
                                bool placeholder);
int export_compare_locations(const void *a, const void *b);
otfx_status export_add_placeholders(exporter *x, uint32_t *world_size);
otfx_status export_write_placeholder_event_files(exporter *x);
otfx_status export_write_local_definition_files(exporter *x);
otfx_status export_write_global_definitions(exporter *x, uint32_t world_size);

#endif

/* otf2_export.c — writes otfx traces as one OTF2 archive (serial, POSIX, uncompressed).
 *
 * The archive is written in the order OTF2 allows and Score-P uses: first every trace's events (so
 * the clock properties and the definitions can say what the events used), then empty local
 * definition files, then the global definitions. How events, windows and reduced ranges map to OTF2
 * is described in docs/otfx-format.md, "OTF2 export and import". */
#define _POSIX_C_SOURCE 200809L
#include "otf2_clock_condition.h"
#include "otf2_common.h"
#include "otf2_pairing.h"
#include "otf2_unify.h"
#include "trace_copy.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

otfx_export_options otfx_export_options_default(void)
{
    return (otfx_export_options){.from = 0, .to = OTFX_TIME_MAX, .overwrite = false, .creator = NULL};
}

/* Grows *items (of `size` bytes each) to hold at least `needed`. */
static bool reserve(void **items, size_t *capacity, size_t needed, size_t size)
{
    if (needed <= *capacity)
        return true;
    size_t grown = *capacity ? *capacity * 2 : 16;
    while (grown < needed)
        grown *= 2;
    void *moved = realloc(*items, grown * size);
    if (!moved)
        return false;
    *items = moved;
    *capacity = grown;
    return true;
}

static otfx_status out_of_memory(void)
{
    return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory");
}

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

typedef struct exporter {
    otfx_defs *defs;           /* this process's definitions: what its events refer to */
    otfx_defs *global_defs;    /* the union of every process's: what the global definitions hold */
    otfx_otf2_def_map map;     /* this process's references -> global_defs' */
    bool map_identity;         /* no mapping tables needed */
    bool master;               /* writes the anchor, the global definitions and the placeholders */
    uint64_t definition_chunk; /* the archive's definition chunk size */
    OTF2_Archive *archive;
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
static OTF2_TimeStamp stamp(const trace_export *te)
{
    return otfx_clock_map(&te->clock, te->position);
}

static void wrote(trace_export *te, otfx_time time)
{
    if (!te->wrote_any)
        te->first_written = time;
    te->wrote_any = true;
    te->last_written = time;
}

/* ---------------------------------------------------------------------------------------------
 * Definitions used by events
 * -------------------------------------------------------------------------------------------- */

static otfx_status check_region(exporter *x, otfx_ref region)
{
    if (region >= x->known_regions)
        x->known_regions = otfx_defs_count_regions(x->defs);
    if (region >= x->known_regions || region > UINT32_MAX - 1 - REGION_REF_OFFSET)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: event refers to undefined region %u", region);
    return OTFX_OK;
}

static int compare_rank_pairs(const void *a, const void *b)
{
    const rank_pair *left = a, *right = b;
    return (left->world > right->world) - (left->world < right->world);
}

static otfx_status comm_ranks_get(exporter *x, otfx_ref comm, const comm_ranks **out)
{
    if (comm >= x->known_comms)
        x->known_comms = otfx_defs_count_comms(x->defs);
    if (comm >= x->known_comms)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: event refers to undefined communicator %u", comm);
    if (comm >= x->comm_capacity) {
        size_t old = x->comm_capacity;
        if (!reserve((void **)&x->comms, &x->comm_capacity, (size_t)comm + 1, sizeof *x->comms))
            return out_of_memory();
        memset(x->comms + old, 0, (x->comm_capacity - old) * sizeof *x->comms);
    }
    comm_ranks *ranks = &x->comms[comm];
    if (!ranks->built) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(x->defs, comm, &def));
        ranks->size = def.size;
        ranks->identity = true;
        for (uint32_t i = 0; i < def.size; i++)
            ranks->identity = ranks->identity && def.world_ranks[i] == i;
        if (!ranks->identity) {
            ranks->by_world = malloc((def.size ? def.size : 1) * sizeof *ranks->by_world);
            if (!ranks->by_world)
                return out_of_memory();
            for (uint32_t i = 0; i < def.size; i++)
                ranks->by_world[i] = (rank_pair){def.world_ranks[i], i};
            otfx_otf2_sort(ranks->by_world, def.size, sizeof *ranks->by_world, compare_rank_pairs);
        }
        ranks->built = true;
    }
    *out = ranks;
    return OTFX_OK;
}

/* The rank of world rank `world` in communicator `comm`. */
static otfx_status comm_rank_of(exporter *x, otfx_ref comm, uint32_t world, uint32_t *local)
{
    const comm_ranks *ranks = NULL;
    OTFX_TRY(comm_ranks_get(x, comm, &ranks));
    if (ranks->identity && world < ranks->size) {
        *local = world;
        return OTFX_OK;
    }
    if (!ranks->identity) {
        rank_pair key = {world, 0};
        const rank_pair *found =
            otfx_otf2_search(&key, ranks->by_world, ranks->size, sizeof key, compare_rank_pairs);
        if (found) {
            *local = found->local;
            return OTFX_OK;
        }
    }
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: world rank %u is not a member of communicator %u", world,
                     comm);
}

static otfx_status metric_type_of(exporter *x, otfx_ref metric, OTF2_Type *type)
{
    if (metric >= x->known_metrics) {
        uint32_t count = otfx_defs_count_metrics(x->defs);
        if (metric >= count)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: event refers to undefined metric %u", metric);
        if (!reserve((void **)&x->metric_types, &x->metric_type_capacity, count, sizeof *x->metric_types))
            return out_of_memory();
        for (uint32_t m = x->known_metrics; m < count; m++) {
            otfx_metric_def def = {0};
            OTFX_TRY(otfx_defs_get_metric(x->defs, m, &def));
            x->metric_types[m] = def.type;
        }
        x->known_metrics = count;
    }
    switch (x->metric_types[metric]) {
    case OTFX_METRIC_INT64:
        *type = OTF2_TYPE_INT64;
        return OTFX_OK;
    case OTFX_METRIC_UINT64:
        *type = OTF2_TYPE_UINT64;
        return OTFX_OK;
    case OTFX_METRIC_DOUBLE:
        *type = OTF2_TYPE_DOUBLE;
        return OTFX_OK;
    }
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: metric %u has an unknown value type", metric);
}

/* ---------------------------------------------------------------------------------------------
 * Event records: one writer per payload shape of OTFX_OTF2_RECORD_TABLE
 * -------------------------------------------------------------------------------------------- */

static otfx_status write_REGION(trace_export *te, otfx_otf2_REGION_writer record, OTF2_TimeStamp time,
                                const otfx_event *event)
{
    OTFX_TRY(check_region(te->x, event->u.region.region));
    OTF2_TRY(record(te->writer, NULL, time, REGION_REF_OFFSET + event->u.region.region),
             "writing a region event");
    return OTFX_OK;
}

static otfx_status write_MESSAGE(trace_export *te, otfx_otf2_MESSAGE_writer record, OTF2_TimeStamp time,
                                 const otfx_event *event)
{
    uint32_t peer = 0;
    OTFX_TRY(comm_rank_of(te->x, event->u.msg.comm, event->u.msg.peer, &peer));
    OTF2_TRY(record(te->writer, NULL, time, peer, event->u.msg.comm, event->u.msg.tag, event->u.msg.bytes),
             "writing a message event");
    return OTFX_OK;
}

static otfx_status write_MESSAGE_REQUEST(trace_export *te, otfx_otf2_MESSAGE_REQUEST_writer record,
                                         OTF2_TimeStamp time, const otfx_event *event)
{
    uint32_t peer = 0;
    OTFX_TRY(comm_rank_of(te->x, event->u.msg.comm, event->u.msg.peer, &peer));
    OTF2_TRY(record(te->writer, NULL, time, peer, event->u.msg.comm, event->u.msg.tag, event->u.msg.bytes,
                    event->u.msg.request),
             "writing a nonblocking message event");
    return OTFX_OK;
}

static otfx_status write_REQUEST(trace_export *te, otfx_otf2_REQUEST_writer record, OTF2_TimeStamp time,
                                 const otfx_event *event)
{
    OTF2_TRY(record(te->writer, NULL, time, event->u.request.request), "writing a request event");
    return OTFX_OK;
}

static otfx_status write_NONE(trace_export *te, otfx_otf2_NONE_writer record, OTF2_TimeStamp time,
                              const otfx_event *event)
{
    (void)event;
    OTF2_TRY(record(te->writer, NULL, time), "writing a collective begin");
    return OTFX_OK;
}

/* The root as a rank of the collective's communicator (OTF2's numbering). */
static otfx_status collective_root(trace_export *te, const otfx_event *event, uint32_t *root)
{
    const comm_ranks *ranks = NULL; /* also checks that the communicator is defined when there is no root */
    OTFX_TRY(comm_ranks_get(te->x, event->u.coll.comm, &ranks));
    *root = OTF2_UNDEFINED_UINT32; /* otfx and OTF2 both use UINT32_MAX for "no root" */
    if (event->u.coll.root != UINT32_MAX)
        OTFX_TRY(comm_rank_of(te->x, event->u.coll.comm, event->u.coll.root, root));
    return OTFX_OK;
}

static otfx_status write_COLLECTIVE(trace_export *te, otfx_otf2_COLLECTIVE_writer record, OTF2_TimeStamp time,
                                    const otfx_event *event)
{
    uint32_t root;
    OTFX_TRY(collective_root(te, event, &root));
    OTF2_TRY(record(te->writer, NULL, time, (OTF2_CollectiveOp)event->u.coll.op, event->u.coll.comm, root,
                    event->u.coll.sent, event->u.coll.received),
             "writing a collective end");
    return OTFX_OK;
}

static otfx_status write_COLLECTIVE_REQUEST(trace_export *te, otfx_otf2_COLLECTIVE_REQUEST_writer record,
                                            OTF2_TimeStamp time, const otfx_event *event)
{
    uint32_t root;
    OTFX_TRY(collective_root(te, event, &root));
    OTF2_TRY(record(te->writer, NULL, time, (OTF2_CollectiveOp)event->u.coll.op, event->u.coll.comm, root,
                    event->u.coll.sent, event->u.coll.received, event->u.coll.request),
             "writing a nonblocking collective's completion");
    return OTFX_OK;
}

static otfx_status write_METRIC(trace_export *te, otfx_otf2_METRIC_writer record, OTF2_TimeStamp time,
                                const otfx_event *event)
{
    OTF2_Type type = OTF2_TYPE_NONE;
    OTFX_TRY(metric_type_of(te->x, event->u.metric.metric, &type));
    OTF2_MetricValue value;
    value.unsigned_int = event->u.metric.value; /* the event holds the value's bits */
    OTF2_TRY(record(te->writer, NULL, time, event->u.metric.metric, 1, &type, &value),
             "writing a metric event");
    return OTFX_OK;
}

static otfx_status add_attribute(exporter *x, otfx_otf2_attribute attribute, OTF2_AttributeValue value)
{
    OTF2_TRY(OTF2_AttributeList_AddAttribute(x->attributes, attribute, otfx_otf2_attributes[attribute].type,
                                             value),
             "adding an attribute");
    return OTFX_OK;
}

static otfx_status write_phase(trace_export *te, OTF2_TimeStamp time, const otfx_event *event)
{
    OTFX_TRY(check_region(te->x, event->u.phase.region));
    OTF2_AttributeValue value;
    value.int64 = event->u.phase.value;
    OTFX_TRY(add_attribute(te->x, OTFX_OTF2_ATTR_PHASE_VALUE, value));
    OTF2_RegionRef region = REGION_REF_OFFSET + event->u.phase.region;
    OTF2_TRY(OTF2_EvtWriter_Enter(te->writer, te->x->attributes, time, region), "writing a phase marker");
    OTF2_TRY(OTF2_EvtWriter_Leave(te->writer, NULL, time, region), "writing a phase marker");
    return OTFX_OK;
}

/* Writes the record(s) of one event that is not a reduction record. */
static otfx_status write_event(trace_export *te, OTF2_TimeStamp time, const otfx_event *event)
{
    switch (event->type) {
#define OTFX_WRITE_RECORD(otfx_type, record, printed, payload)                                               \
    case otfx_type:                                                                                          \
        return write_##payload(te, OTF2_EvtWriter_##record, time, event);
        OTFX_OTF2_RECORD_TABLE(OTFX_WRITE_RECORD)
#undef OTFX_WRITE_RECORD
    case OTFX_EV_PHASE:
        return write_phase(te, time, event);
    default:
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: unknown event type %d", (int)event->type);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Reduced ranges. A reduction record says that detail of [begin, end) was removed; its range is shown
 * as the region "otfx reduced: <strategy>" entered at the begin and left at the end, on the trace's own
 * location. OTF2 needs each location's regions well nested, so the region
 *  - nests the detail that begins and ends inside the range;
 *  - is left and entered again on top of a region that begins inside the range and outlives it (a
 *    planning pass finds those), and likewise on top of a range that begins inside it and outlives it;
 *  - is left and entered again one level lower when a region that was open before it is left.
 * So a range may be shown as several pieces; each Enter carries otfx::piece, the first one also the
 * record itself (strategy, events removed, unclipped range, the record's own time), which is what the
 * importer rebuilds the record from. At one timestamp: ranges that begin there, then the trace's
 * records there, then ranges that end there.
 *
 * The trace is read three times (collect ranges, plan, write). A live trace may change in between; a
 * range whose end then finds regions above it is left as soon as they are (the archive stays well
 * nested, the range looks longer), and a reduction record that appeared in between is written as a
 * piece of length zero where it is met.
 * -------------------------------------------------------------------------------------------- */

static bool clip_range(const trace_export *te, const otfx_event *event, reduced_range *range)
{
    otfx_time begin = event->u.reduction.begin, end = event->u.reduction.end;
    if (end < begin)
        end = begin;
    if (begin < te->from)
        begin = te->from;
    if (end > te->to)
        end = te->to;
    if (end < begin || (unsigned)event->u.reduction.strategy >= OTFX_REDUCE_COUNT)
        return false;
    *range = (reduced_range){.record = *event, .begin = begin, .end = end, .state = RANGE_WAITING};
    if (range->record.time < te->from)
        range->record.time = te->from;
    return true;
}

static int compare_values(uint64_t left, uint64_t right)
{
    return (left > right) - (left < right);
}

/* Identity of a range: the record as reported. */
static int compare_ranges(const void *a, const void *b)
{
    const otfx_event *left = &((const reduced_range *)a)->record,
                     *right = &((const reduced_range *)b)->record;
    int order = compare_values(left->time, right->time);
    if (!order)
        order = compare_values(left->u.reduction.strategy, right->u.reduction.strategy);
    if (!order)
        order = compare_values(left->u.reduction.begin, right->u.reduction.begin);
    if (!order)
        order = compare_values(left->u.reduction.end, right->u.reduction.end);
    if (!order)
        order = compare_values(left->u.reduction.events_removed, right->u.reduction.events_removed);
    return order;
}

typedef struct range_key {
    otfx_time time;
    size_t index;
} range_key;

static int compare_keys(const void *a, const void *b)
{
    const range_key *left = a, *right = b;
    int order = compare_values(left->time, right->time);
    return order ? order : compare_values(left->index, right->index);
}

static otfx_status add_range(trace_export *te, const reduced_range *range)
{
    if (!reserve((void **)&te->ranges, &te->range_capacity, te->range_count + 1, sizeof *te->ranges))
        return out_of_memory();
    te->ranges[te->range_count++] = *range;
    return OTFX_OK;
}

/* After the first pass: ranges in identity order, and their orders of begin and of end. */
static otfx_status order_ranges(trace_export *te)
{
    size_t count = te->range_count;
    otfx_otf2_sort(te->ranges, count, sizeof *te->ranges, compare_ranges);
    te->by_begin = malloc((count + 1) * sizeof *te->by_begin);
    te->by_end = malloc((count + 1) * sizeof *te->by_end);
    range_key *keys = malloc((count + 1) * sizeof *keys);
    if (!te->by_begin || !te->by_end || !keys) {
        free(keys);
        return out_of_memory();
    }
    for (size_t r = 0; r < count; r++)
        keys[r] = (range_key){te->ranges[r].begin, r};
    otfx_otf2_sort(keys, count, sizeof *keys, compare_keys);
    for (size_t r = 0; r < count; r++)
        te->by_begin[r] = keys[r].index;
    for (size_t r = 0; r < count; r++)
        keys[r] = (range_key){te->ranges[r].end, r};
    otfx_otf2_sort(keys, count, sizeof *keys, compare_keys);
    for (size_t r = 0; r < count; r++)
        te->by_end[r] = keys[r].index;
    te->last_range_end = count ? te->ranges[te->by_end[count - 1]].end : 0;
    free(keys);
    return OTFX_OK;
}

/* ---- planning pass: which regions begin inside a range and outlive it ---- */

static otfx_status push_range_end(trace_export *te, otfx_time end)
{
    if (!reserve((void **)&te->open_range_ends, &te->open_range_capacity, te->open_range_count + 1,
                 sizeof *te->open_range_ends))
        return out_of_memory();
    size_t at = te->open_range_count++;
    while (at > 0 && te->open_range_ends[(at - 1) / 2] > end) {
        te->open_range_ends[at] = te->open_range_ends[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    te->open_range_ends[at] = end;
    return OTFX_OK;
}

static void pop_range_end(trace_export *te)
{
    if (te->open_range_count == 0)
        return;
    otfx_time moved = te->open_range_ends[--te->open_range_count];
    size_t at = 0, count = te->open_range_count;
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= count)
            break;
        if (child + 1 < count && te->open_range_ends[child + 1] < te->open_range_ends[child])
            child++;
        if (te->open_range_ends[child] >= moved)
            break;
        te->open_range_ends[at] = te->open_range_ends[child];
        at = child;
    }
    if (count > 0)
        te->open_range_ends[at] = moved;
}

static otfx_status note_outliving(trace_export *te, const planned_frame *frame, otfx_time leave)
{
    if (leave <= frame->earliest_range_end)
        return OTFX_OK;
    if (!reserve((void **)&te->outliving, &te->outliving_capacity, te->outliving_count + 1,
                 sizeof *te->outliving))
        return out_of_memory();
    te->outliving[te->outliving_count++] =
        (outliving_enter){frame->sequence, frame->time, leave, frame->region};
    return OTFX_OK;
}

static otfx_status plan_record(trace_export *te, const otfx_event *event)
{
    if (event->type == OTFX_EV_ENTER) {
        if (!reserve((void **)&te->planned, &te->planned_capacity, te->planned_depth + 1,
                     sizeof *te->planned))
            return out_of_memory();
        otfx_time earliest = te->open_range_count ? te->open_range_ends[0] : OTFX_TIME_MAX;
        te->planned[te->planned_depth++] =
            (planned_frame){te->enter_sequence++, te->position, earliest, event->u.region.region};
    } else if (event->type == OTFX_EV_LEAVE && te->planned_depth > 0) {
        planned_frame frame = te->planned[--te->planned_depth];
        OTFX_TRY(note_outliving(te, &frame, te->position));
    }
    return OTFX_OK;
}

static int compare_outliving(const void *a, const void *b)
{
    return compare_values(((const outliving_enter *)a)->sequence, ((const outliving_enter *)b)->sequence);
}

/* When the region of the write pass's ENTER number `sequence` is left: OTFX_TIME_MAX if it stays open,
 * 0 if it outlives no range that is open when it is entered. */
static otfx_time outliving_leave(trace_export *te, const otfx_event *event, otfx_time time)
{
    uint64_t sequence = te->enter_sequence++;
    while (te->next_outliving < te->outliving_count && te->outliving[te->next_outliving].sequence < sequence)
        te->next_outliving++;
    if (te->next_outliving == te->outliving_count)
        return 0;
    const outliving_enter *found = &te->outliving[te->next_outliving];
    if (found->sequence != sequence || found->time != time || found->region != event->u.region.region)
        return 0; /* the trace changed since the plan */
    return found->leave;
}

/* ---- writing pass: the stack of regions open in the archive ---- */

static otfx_status push_frame(trace_export *te, open_frame frame)
{
    if (!reserve((void **)&te->frames, &te->frame_capacity, te->depth + 1, sizeof *te->frames))
        return out_of_memory();
    te->frames[te->depth++] = frame;
    return OTFX_OK;
}

static otfx_status write_piece_enter(trace_export *te, size_t index)
{
    exporter *x = te->x;
    reduced_range *range = &te->ranges[index];
    const otfx_event *record = &range->record;
    OTF2_AttributeValue value;
    value.uint32 = range->pieces;
    OTFX_TRY(add_attribute(x, OTFX_OTF2_ATTR_PIECE, value));
    if (range->pieces == 0) {
        value.stringRef = STRING_STRATEGY_FIRST + record->u.reduction.strategy;
        OTFX_TRY(add_attribute(x, OTFX_OTF2_ATTR_STRATEGY, value));
        value.uint64 = record->u.reduction.events_removed;
        OTFX_TRY(add_attribute(x, OTFX_OTF2_ATTR_EVENTS_REMOVED, value));
        value.uint64 = record->u.reduction.begin;
        OTFX_TRY(add_attribute(x, OTFX_OTF2_ATTR_RANGE_BEGIN, value));
        value.uint64 = record->u.reduction.end;
        OTFX_TRY(add_attribute(x, OTFX_OTF2_ATTR_RANGE_END, value));
        value.uint64 = record->time;
        OTFX_TRY(add_attribute(x, OTFX_OTF2_ATTR_RECORD_TIME, value));
    }
    range->pieces++;
    OTF2_TRY(OTF2_EvtWriter_Enter(te->writer, x->attributes, stamp(te), record->u.reduction.strategy),
             "writing a reduced range");
    wrote(te, stamp(te));
    return OTFX_OK;
}

static otfx_status write_piece_leave(trace_export *te, size_t index)
{
    OTF2_TRY(OTF2_EvtWriter_Leave(te->writer, NULL, stamp(te), te->ranges[index].record.u.reduction.strategy),
             "writing a reduced range");
    wrote(te, stamp(te));
    return OTFX_OK;
}

/* Leaves the ranges on top of the stack whose end has passed. */
static otfx_status leave_closing(trace_export *te)
{
    while (te->depth > 0 && te->frames[te->depth - 1].reduced &&
           te->ranges[te->frames[te->depth - 1].index].state == RANGE_CLOSING) {
        size_t index = te->frames[--te->depth].index;
        OTFX_TRY(write_piece_leave(te, index));
        te->ranges[index].state = RANGE_DONE;
    }
    return OTFX_OK;
}

/* Takes off the stack the ranges on top that end before `until` (or every range on top for
 * OTFX_TIME_MAX + lift_all), keeping the open ones to be entered again by restore_lifted. */
static otfx_status lift_ranges(trace_export *te, otfx_time until, bool lift_all, size_t *lifted)
{
    *lifted = 0;
    while (te->depth > 0 && te->frames[te->depth - 1].reduced) {
        size_t index = te->frames[te->depth - 1].index;
        if (!lift_all && te->ranges[index].end >= until)
            break;
        te->depth--;
        OTFX_TRY(write_piece_leave(te, index));
        if (te->ranges[index].state != RANGE_OPEN) {
            te->ranges[index].state = RANGE_DONE;
            continue;
        }
        if (!reserve((void **)&te->lifted, &te->lifted_capacity, *lifted + 1, sizeof *te->lifted))
            return out_of_memory();
        te->lifted[(*lifted)++] = te->frames[te->depth];
    }
    return OTFX_OK;
}

/* Enters the lifted ranges again, in their old order (they were lifted from the top down). */
static otfx_status restore_lifted(trace_export *te, size_t lifted)
{
    while (lifted > 0) {
        open_frame frame = te->lifted[--lifted];
        OTFX_TRY(write_piece_enter(te, frame.index));
        OTFX_TRY(push_frame(te, frame));
    }
    return OTFX_OK;
}

static otfx_status begin_range(trace_export *te, size_t index)
{
    reduced_range *range = &te->ranges[index];
    range->state = RANGE_OPEN;
    if (te->pass == PASS_PLAN)
        return push_range_end(te, range->end);
    if (range->begin > te->position)
        te->position = range->begin;
    OTFX_TRY(leave_closing(te));
    size_t lifted;
    OTFX_TRY(lift_ranges(te, range->end, false, &lifted)); /* ranges it outlives go on top of it */
    OTFX_TRY(write_piece_enter(te, index));
    OTFX_TRY(push_frame(te, (open_frame){true, (uint32_t)index}));
    return restore_lifted(te, lifted);
}

static otfx_status end_range(trace_export *te, size_t index)
{
    reduced_range *range = &te->ranges[index];
    if (te->pass == PASS_PLAN) {
        range->state = RANGE_DONE;
        pop_range_end(te);
        return OTFX_OK;
    }
    if (range->end > te->position)
        te->position = range->end;
    range->state = RANGE_CLOSING;
    return leave_closing(te); /* unless regions entered inside it are still open above it */
}

/* Processes the range boundaries before a record at `time`: begins at or before it and ends before it
 * (or at it too, with `through`), in time order, a begin before an end of the same time. */
static otfx_status pass_boundaries(trace_export *te, otfx_time time, bool through)
{
    for (;;) {
        const reduced_range *begin =
            te->next_begin < te->range_count ? &te->ranges[te->by_begin[te->next_begin]] : NULL;
        const reduced_range *end =
            te->next_end < te->range_count ? &te->ranges[te->by_end[te->next_end]] : NULL;
        bool begin_due = begin && begin->begin <= time;
        bool end_due = end && (end->end < time || (through && end->end == time));
        if (begin_due && (!end_due || begin->begin <= end->end))
            OTFX_TRY(begin_range(te, te->by_begin[te->next_begin++]));
        else if (end_due)
            OTFX_TRY(end_range(te, te->by_end[te->next_end++]));
        else
            return OTFX_OK;
    }
}

/* Writes one of the trace's records (not a reduction record) at te->position. */
static otfx_status place_record(trace_export *te, const otfx_event *event)
{
    OTFX_TRY(leave_closing(te));
    size_t lifted = 0;
    if (event->type == OTFX_EV_ENTER) {
        otfx_time leave = outliving_leave(te, event, te->position);
        OTFX_TRY(lift_ranges(te, leave, false, &lifted));
        OTFX_TRY(write_event(te, stamp(te), event));
        OTFX_TRY(push_frame(te, (open_frame){false, event->u.region.region}));
    } else if (event->type == OTFX_EV_LEAVE) {
        OTFX_TRY(lift_ranges(te, OTFX_TIME_MAX, true, &lifted));
        if (te->depth == 0 || te->frames[te->depth - 1].reduced ||
            te->frames[te->depth - 1].index != event->u.region.region)
            return otfx_fail(OTFX_ERR_CORRUPT,
                             "OTF2 export: the trace of rank %u thread %u leaves region %u, which is not the "
                             "innermost open region",
                             te->rank, te->thread, event->u.region.region);
        OTFX_TRY(write_event(te, stamp(te), event));
        te->depth--;
    } else {
        OTFX_TRY(write_event(te, stamp(te), event));
    }
    wrote(te, stamp(te));
    OTFX_TRY(restore_lifted(te, lifted));
    return leave_closing(te);
}

/* A reduction record the first pass did not see (the trace reduced meanwhile): a piece of length
 * zero here, carrying the whole record. */
static otfx_status place_late_range(trace_export *te, const reduced_range *range)
{
    if (otfx_otf2_search(range, te->ranges, te->range_count, sizeof *range, compare_ranges))
        return OTFX_OK;
    size_t index = te->range_count + te->late_count;
    if (!reserve((void **)&te->ranges, &te->range_capacity, index + 1, sizeof *te->ranges))
        return out_of_memory();
    te->ranges[index] = *range;
    te->late_count++;
    OTFX_TRY(write_piece_enter(te, index));
    return write_piece_leave(te, index);
}

/* ---------------------------------------------------------------------------------------------
 * One trace
 * -------------------------------------------------------------------------------------------- */

/* The first read: a COLL_BEGIN without an ordinal takes its COLL_END's (unnumbered_begin). */
static otfx_status note_unnumbered_begin(trace_export *te, const otfx_event *event)
{
    if (event->type == OTFX_EV_COLL_BEGIN && event->u.coll.seq == 0) {
        if (!reserve((void **)&te->unnumbered, &te->unnumbered_capacity, te->unnumbered_count + 1,
                     sizeof *te->unnumbered))
            return out_of_memory();
        te->unnumbered[te->unnumbered_count++] = (struct unnumbered_begin){OTFX_REF_NONE, 0};
        te->unnumbered_open = true;
    } else if (event->type == OTFX_EV_COLL_BEGIN) {
        te->unnumbered_open = false;
    } else if (event->type == OTFX_EV_COLL_END && te->unnumbered_open) {
        te->unnumbered_open = false;
        te->unnumbered[te->unnumbered_count - 1] =
            (struct unnumbered_begin){event->u.coll.comm, event->u.coll.seq};
        if (event->u.coll.seq != 0) {
            const otfx_event begin = {.time = event->time,
                                      .type = OTFX_EV_COLL_BEGIN,
                                      .u.coll = {.comm = event->u.coll.comm, .seq = event->u.coll.seq}};
            return otfx_pairing_note(te->x->pairing, te->rank, &begin);
        }
    }
    return OTFX_OK;
}

/* A record placed at te->position: the location's correction advances to it. */
static otfx_status clock_event(trace_export *te, const otfx_event *event)
{
    uint32_t channel = 0;
    const bool named = otfx_pairing_channel(te->x->pairing, te->rank, event, &channel);
    otfx_time corrected;
    return otfx_clock_event(te->x->clock, &te->clock, te->position, event, named, channel, &corrected);
}

static int on_event(const otfx_event *event, void *user)
{
    trace_export *te = user;
    if (event->type == OTFX_EV_REDUCTION) {
        reduced_range range;
        if ((te->pass == PASS_COLLECT || te->pass == PASS_WRITE) && clip_range(te, event, &range))
            te->status = te->pass == PASS_COLLECT ? add_range(te, &range) : place_late_range(te, &range);
        return te->status != OTFX_OK;
    }
    if (te->pass == PASS_COLLECT) {
        te->status = note_unnumbered_begin(te, event);
        if (te->status == OTFX_OK)
            te->status = otfx_pairing_note(te->x->pairing, te->rank, event);
        return te->status != OTFX_OK;
    }
    /* A reduced range's boundary inside a blocking collective would put its begin and end into different
     * regions (the range's pieces are regions): the boundaries met between them wait for its end. Both
     * the plan and the write wait alike, whatever the pairing keeps. */
    const bool in_collective = te->in_collective;
    if (event->type == OTFX_EV_COLL_BEGIN)
        te->in_collective = true;
    else if (event->type == OTFX_EV_COLL_END)
        te->in_collective = false;
    otfx_event as_receive, numbered;
    if (te->pass == PASS_WRITE || te->pass == PASS_CLOCK) {
        const otfx_event *judged = event;
        if (event->type == OTFX_EV_COLL_BEGIN && event->u.coll.seq == 0 &&
            te->next_unnumbered < te->unnumbered_count) {
            numbered = *event;
            numbered.u.coll.comm = te->unnumbered[te->next_unnumbered].comm;
            numbered.u.coll.seq = te->unnumbered[te->next_unnumbered++].seq;
            if (numbered.u.coll.seq != 0)
                judged = &numbered;
        }
        switch (otfx_pairing_judge(te->x->pairing, te->rank, judged)) {
        case OTFX_PAIRING_WRITE:
            break;
        case OTFX_PAIRING_LEAVE:
            return 0;
        case OTFX_PAIRING_AS_RECV:
            as_receive = *event;
            as_receive.type = OTFX_EV_RECV;
            event = &as_receive;
            break;
        }
    }
    /* Regions open at the window's start come with their enter times: they enter at the start. */
    otfx_time time = event->time > te->position ? event->time : te->position;
    if (time >= te->to)
        return 1;
    /* A region still open after the last range's end outlives every range: the plan can stop there. */
    if (te->pass == PASS_PLAN && time > te->last_range_end)
        return 1;
    if (te->pass == PASS_CLOCK) { /* range boundaries never move records: the same times as the write */
        te->position = time;
        te->status = clock_event(te, event);
        return te->status != OTFX_OK;
    }
    te->status = in_collective ? OTFX_OK : pass_boundaries(te, time, false);
    if (te->status == OTFX_OK) {
        te->position = time;
        if (te->pass == PASS_WRITE)
            te->status = clock_event(te, event);
        if (te->status == OTFX_OK)
            te->status = te->pass == PASS_PLAN ? plan_record(te, event) : place_record(te, event);
    }
    return te->status != OTFX_OK;
}

/* Where the trace's part of the archive ends: its last record, its last reduced range, and what it
 * has received (a region still open was open until then); never past the window. */
static otfx_time trace_end(const trace_export *te, const otfx_trace_status *status)
{
    otfx_time end = te->position;
    for (size_t r = 0; r < te->range_count; r++)
        if (te->ranges[r].end > end)
            end = te->ranges[r].end;
    if (te->depth > 0 && status->first_time <= status->last_time) {
        otfx_time received = status->last_time < te->to ? status->last_time : te->to;
        if (received > end)
            end = received;
    }
    return end;
}

static otfx_status run_pass(trace_export *te, otfx_trace *trace, export_pass pass)
{
    te->pass = pass;
    te->position = te->from;
    te->clock = (otfx_clock_location){.last = te->from, .shift = 0};
    te->enter_sequence = 0;
    te->in_collective = false;
    te->next_unnumbered = 0;
    te->unnumbered_open = false;
    if (pass == PASS_COLLECT)
        te->unnumbered_count = 0;
    te->next_begin = te->next_end = 0;
    for (size_t r = 0; r < te->range_count; r++)
        te->ranges[r] = (reduced_range){.record = te->ranges[r].record,
                                        .begin = te->ranges[r].begin,
                                        .end = te->ranges[r].end,
                                        .state = RANGE_WAITING};
    otfx_status status = otfx_query_events(trace, te->from, te->to, true, on_event, te);
    return status != OTFX_OK ? status : te->status;
}

/* The first read: reduction records and the messages (otf2_pairing.h). */
static otfx_status collect_trace_events(trace_export *te, otfx_trace *trace)
{
    OTFX_TRY(run_pass(te, trace, PASS_COLLECT));
    return order_ranges(te);
}

/* The plan (when there are reduced ranges) and the write. */
static otfx_status write_trace_events(trace_export *te, otfx_trace *trace)
{
    if (te->range_count > 0) {
        OTFX_TRY(run_pass(te, trace, PASS_PLAN));
        OTFX_TRY(pass_boundaries(te, OTFX_TIME_MAX, true));
        while (te->planned_depth > 0) /* open at the end (of the plan): they outlive every range */
            OTFX_TRY(note_outliving(te, &te->planned[--te->planned_depth], OTFX_TIME_MAX));
        otfx_otf2_sort(te->outliving, te->outliving_count, sizeof *te->outliving, compare_outliving);
    }

    OTFX_TRY(run_pass(te, trace, PASS_WRITE));
    otfx_trace_status trace_status;
    OTFX_TRY(otfx_trace_status_get(trace, &trace_status));
    otfx_time end = trace_end(te, &trace_status);
    OTFX_TRY(pass_boundaries(te, end, true));
    if (end > te->position)
        te->position = end;
    while (te->depth > 0) {
        open_frame frame = te->frames[--te->depth];
        if (frame.reduced) {
            OTFX_TRY(write_piece_leave(te, frame.index));
            continue;
        }
        OTF2_TRY(OTF2_EvtWriter_Leave(te->writer, NULL, stamp(te), REGION_REF_OFFSET + frame.index),
                 "writing a leave at the window's end");
        wrote(te, stamp(te));
    }
    return OTFX_OK;
}

static void trace_export_free(trace_export *te)
{
    free(te->ranges);
    free(te->by_begin);
    free(te->by_end);
    free(te->open_range_ends);
    free(te->planned);
    free(te->outliving);
    free(te->frames);
    free(te->lifted);
    free(te->unnumbered);
}

static otfx_status add_location(exporter *x, uint32_t rank, uint32_t thread, uint64_t events,
                                bool placeholder)
{
    if (!reserve((void **)&x->locations, &x->location_capacity, x->location_count + 1, sizeof *x->locations))
        return out_of_memory();
    x->locations[x->location_count++] = (exported_location){rank, thread, events, placeholder};
    return OTFX_OK;
}

static otfx_status add_own_location(exporter *x, uint32_t rank, uint32_t thread, uint64_t events)
{
    if (!reserve((void **)&x->own, &x->own_capacity, x->own_count + 1, sizeof *x->own))
        return out_of_memory();
    x->own[x->own_count++] = (exported_location){rank, thread, events, false};
    return OTFX_OK;
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

static otfx_status prepare_trace(exporter *x, otfx_trace *live, const otfx_location_def *where,
                                 const otfx_export_options *options, prepared_trace *prepared)
{
    prepared->where = *where;
    prepared->te = (trace_export){.x = x,
                                  .rank = where->rank,
                                  .thread = where->thread,
                                  .from = options->from,
                                  .to = options->to,
                                  .position = options->from,
                                  .status = OTFX_OK};
    OTFX_TRY(otfx_trace_copy(live, &prepared->copy));
    OTFX_TRY(otfx_pairing_cover(x->pairing, where->rank));
    return collect_trace_events(&prepared->te, prepared->copy);
}

static void prepared_trace_free(prepared_trace *prepared)
{
    trace_export_free(&prepared->te);
    prepared->te = (trace_export){0};
    if (prepared->copy)
        otfx_trace_destroy(prepared->copy);
    prepared->copy = NULL;
}

static otfx_status export_trace(exporter *x, prepared_trace *prepared)
{
    const otfx_location_def *where = &prepared->where;
    uint64_t location = otfx_otf2_location_id(where->rank, where->thread);
    OTF2_EvtWriter *writer = OTF2_Archive_GetEvtWriter(x->archive, location);
    if (!writer) {
        prepared_trace_free(prepared);
        return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening an event writer");
    }
    trace_export te = prepared->te;
    te.writer = writer;
    otfx_trace *trace = prepared->copy;
    otfx_status status = write_trace_events(&te, trace);
    uint64_t events = 0;
    if (status == OTFX_OK) {
        OTF2_ErrorCode code = OTF2_EvtWriter_GetNumberOfEvents(writer, &events);
        if (code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 export: counting the events written");
    }
    if (status == OTFX_OK && te.wrote_any) {
        if (!x->any_time || te.first_written < x->earliest)
            x->earliest = te.first_written;
        if (!x->any_time || te.last_written > x->latest)
            x->latest = te.last_written;
        x->any_time = true;
    }
    OTF2_ErrorCode code = OTF2_Archive_CloseEvtWriter(x->archive, writer);
    if (status == OTFX_OK && code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 export: closing an event writer");
    prepared->te = te;
    const otfx_location_def written = *where;
    prepared_trace_free(prepared);
    if (status == OTFX_OK)
        status = add_own_location(x, written.rank, written.thread, events);
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * Global definitions
 * -------------------------------------------------------------------------------------------- */

static otfx_status define_string(exporter *x, const char *text, OTF2_StringRef *ref)
{
    *ref = x->next_string++;
    OTF2_TRY(OTF2_GlobalDefWriter_WriteString(x->global, *ref, text), "writing a string definition");
    return OTFX_OK;
}

static otfx_status define_stringf(exporter *x, OTF2_StringRef *ref, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static otfx_status define_stringf(exporter *x, OTF2_StringRef *ref, const char *format, ...)
{
    char text[128];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return define_string(x, text, ref);
}

static int compare_locations(const void *a, const void *b)
{
    const exported_location *left = a, *right = b;
    if (left->rank != right->rank)
        return (left->rank > right->rank) - (left->rank < right->rank);
    return (left->thread > right->thread) - (left->thread < right->thread);
}

/* The MPI location group must list a location for every world rank a communicator names, in world
 * rank order: ranks whose main thread is not exported get an empty placeholder location. Returns the
 * number of world ranks (0 when there are no communicators, and then no MPI groups are written). */
static otfx_status add_placeholders(exporter *x, uint32_t *world_size)
{
    uint32_t comms = otfx_defs_count_comms(x->global_defs);
    uint64_t size = 0;
    for (uint32_t c = 0; c < comms; c++) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(x->global_defs, c, &def));
        for (uint32_t i = 0; i < def.size; i++)
            if ((uint64_t)def.world_ranks[i] + 1 > size)
                size = (uint64_t)def.world_ranks[i] + 1;
    }
    if (comms > 0)
        for (size_t l = 0; l < x->location_count; l++)
            if ((uint64_t)x->locations[l].rank + 1 > size)
                size = (uint64_t)x->locations[l].rank + 1;
    if (size > UINT32_MAX)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: communicator names world rank %u",
                         (unsigned)(size - 1));
    otfx_otf2_sort(x->locations, x->location_count, sizeof *x->locations, compare_locations);
    size_t exported = x->location_count;
    for (uint32_t rank = 0; rank < size; rank++) {
        exported_location key = {.rank = rank, .thread = 0};
        if (!otfx_otf2_search(&key, x->locations, exported, sizeof key, compare_locations))
            OTFX_TRY(add_location(x, rank, 0, 0, true));
    }
    otfx_otf2_sort(x->locations, x->location_count, sizeof *x->locations, compare_locations);
    *world_size = (uint32_t)size;
    return OTFX_OK;
}

/* Placeholders get an empty event file, like every other location, so every reader finds one. */
static otfx_status write_placeholder_event_files(exporter *x)
{
    for (size_t l = 0; l < x->location_count; l++) {
        if (!x->locations[l].placeholder)
            continue;
        OTF2_EvtWriter *writer =
            OTF2_Archive_GetEvtWriter(x->archive, otfx_otf2_location_id(x->locations[l].rank, 0));
        if (!writer)
            return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening an event writer");
        OTF2_TRY(OTF2_Archive_CloseEvtWriter(x->archive, writer), "closing an event writer");
    }
    return OTFX_OK;
}

/* One mapping table: OTF2 ref i of this process -> ref of the global definitions. `offset` refs at the
 * start map to themselves (the reduced-range regions), then local ref offset + i -> offset + refs[i]. */
static otfx_status write_mapping(OTF2_DefWriter *writer, OTF2_MappingType type, const otfx_ref *refs,
                                 uint32_t count, uint32_t offset)
{
    uint64_t length = (uint64_t)offset + count;
    bool identity = true;
    for (uint32_t i = 0; i < count; i++)
        identity = identity && refs[i] == i;
    if (identity)
        return OTFX_OK; /* (OTF2_IdMap_CreateFromUint64Array returns NULL for it) */
    uint64_t *mappings = malloc(length * sizeof *mappings);
    if (!mappings)
        return out_of_memory();
    for (uint64_t i = 0; i < offset; i++)
        mappings[i] = i;
    for (uint32_t i = 0; i < count; i++)
        mappings[offset + i] = (uint64_t)offset + refs[i];
    OTF2_IdMap *map = OTF2_IdMap_CreateFromUint64Array(length, mappings, true);
    free(mappings);
    if (!map)
        return out_of_memory();
    OTF2_ErrorCode code = OTF2_DefWriter_WriteMappingTable(writer, type, map);
    OTF2_IdMap_Free(map);
    if (code != OTF2_SUCCESS)
        return otfx_otf2_fail_call(code, "OTF2 export: writing a mapping table");
    return OTFX_OK;
}

static otfx_status write_local_definitions(exporter *x, uint32_t rank, uint32_t thread, bool mapped)
{
    OTF2_DefWriter *writer = OTF2_Archive_GetDefWriter(x->archive, otfx_otf2_location_id(rank, thread));
    if (!writer)
        return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening a local definition writer");
    otfx_status status = OTFX_OK;
    if (mapped) {
        status = write_mapping(writer, OTF2_MAPPING_REGION, x->map.regions, x->map.region_count,
                               REGION_REF_OFFSET);
        if (status == OTFX_OK)
            status = write_mapping(writer, OTF2_MAPPING_COMM, x->map.comms, x->map.comm_count, 0);
        if (status == OTFX_OK)
            status = write_mapping(writer, OTF2_MAPPING_METRIC, x->map.metrics, x->map.metric_count, 0);
    }
    OTF2_ErrorCode code = OTF2_Archive_CloseDefWriter(x->archive, writer);
    if (status == OTFX_OK && code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 export: closing a local definition writer");
    return status;
}

/* The local definition files of this process's locations (their mapping tables, when its references
 * are not the global ones) and, on the master, the placeholders' (empty). */
static otfx_status write_local_definition_files(exporter *x)
{
    for (size_t l = 0; l < x->own_count; l++)
        OTFX_TRY(write_local_definitions(x, x->own[l].rank, x->own[l].thread, !x->map_identity));
    for (size_t l = 0; x->master && l < x->location_count; l++)
        if (x->locations[l].placeholder)
            OTFX_TRY(write_local_definitions(x, x->locations[l].rank, 0, false));
    return OTFX_OK;
}

static otfx_status define_system_tree(exporter *x, OTF2_StringRef placeholder_name)
{
    OTF2_StringRef name = STRING_EMPTY, class_name = STRING_EMPTY;
    OTFX_TRY(define_string(x, "job", &name));
    OTFX_TRY(define_string(x, "machine", &class_name));
    OTF2_TRY(OTF2_GlobalDefWriter_WriteSystemTreeNode(x->global, 0, name, class_name,
                                                      OTF2_UNDEFINED_SYSTEM_TREE_NODE),
             "writing the system tree");
    for (size_t l = 0; l < x->location_count; l++) {
        const exported_location *location = &x->locations[l];
        if (l == 0 || location->rank != x->locations[l - 1].rank) {
            OTFX_TRY(define_stringf(x, &name, "rank %u", location->rank));
            OTF2_TRY(OTF2_GlobalDefWriter_WriteLocationGroup(x->global, location->rank, name,
                                                             OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                             OTF2_UNDEFINED_LOCATION_GROUP),
                     "writing a location group");
        }
    }
    for (size_t l = 0; l < x->location_count; l++) {
        const exported_location *location = &x->locations[l];
        if (location->placeholder)
            OTFX_TRY(define_stringf(x, &name, "rank %u (not exported)", location->rank));
        else if (location->thread == 0)
            OTFX_TRY(define_stringf(x, &name, "rank %u", location->rank));
        else
            OTFX_TRY(define_stringf(x, &name, "rank %u thread %u", location->rank, location->thread));
        uint64_t id = otfx_otf2_location_id(location->rank, location->thread);
        OTF2_TRY(OTF2_GlobalDefWriter_WriteLocation(x->global, id, name, OTF2_LOCATION_TYPE_CPU_THREAD,
                                                    location->events, location->rank),
                 "writing a location");
    }
    for (size_t l = 0; l < x->location_count; l++) {
        if (!x->locations[l].placeholder)
            continue;
        OTF2_AttributeValue yes;
        yes.uint8 = 1;
        OTF2_TRY(OTF2_GlobalDefWriter_WriteLocationProperty(
                     x->global, otfx_otf2_location_id(x->locations[l].rank, 0), placeholder_name,
                     otfx_otf2_attributes[OTFX_OTF2_ATTR_PLACEHOLDER].type, yes),
                 "writing a location property");
    }
    return OTFX_OK;
}

static otfx_status define_regions(exporter *x)
{
    /* All of them, used or not: readers expect region refs to be dense and in definition order. */
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++) {
        OTF2_StringRef name = STRING_EMPTY, description = STRING_EMPTY;
        OTFX_TRY(define_stringf(x, &name, "%s%s", OTFX_OTF2_REDUCED_PREFIX,
                                otfx_reduction_name((otfx_reduction)strategy)));
        OTFX_TRY(define_string(x, "detail removed by otfx: see otfx::events_removed", &description));
        OTF2_TRY(OTF2_GlobalDefWriter_WriteRegion(
                     x->global, (OTF2_RegionRef)strategy, name, name, description, OTFX_OTF2_REDUCED_ROLE,
                     OTFX_OTF2_REDUCED_PARADIGM, OTF2_REGION_FLAG_NONE, STRING_EMPTY, 0, 0),
                 "writing a region");
    }
    uint32_t regions = otfx_defs_count_regions(x->global_defs);
    for (uint32_t r = 0; r < regions; r++) {
        otfx_region_def def = {0};
        OTFX_TRY(otfx_defs_get_region(x->global_defs, r, &def));
        const otfx_otf2_role_mapping *mapping = otfx_otf2_role_to_otf2(def.role);
        OTF2_StringRef name = STRING_EMPTY;
        OTFX_TRY(define_string(x, def.name, &name));
        OTF2_TRY(OTF2_GlobalDefWriter_WriteRegion(x->global, REGION_REF_OFFSET + r, name, name, STRING_EMPTY,
                                                  mapping->otf2_role, mapping->paradigm,
                                                  OTF2_REGION_FLAG_NONE, STRING_EMPTY, 0, 0),
                 "writing a region");
    }
    return OTFX_OK;
}

/* Communicators: the MPI location group (member i = location of world rank i), then per
 * communicator a group of its members as world ranks, i.e. indexes into that group. */
static otfx_status define_comms(exporter *x, uint32_t world_size)
{
    uint32_t comms = otfx_defs_count_comms(x->global_defs);
    if (comms == 0)
        return OTFX_OK;
    uint64_t *members = malloc(((size_t)world_size + 1) * sizeof *members);
    if (!members)
        return out_of_memory();
    otfx_status status = OTFX_OK;
    for (uint32_t rank = 0; rank < world_size; rank++)
        members[rank] = otfx_otf2_location_id(rank, 0);
    OTF2_ErrorCode code = OTF2_GlobalDefWriter_WriteGroup(x->global, GROUP_COMM_LOCATIONS, STRING_EMPTY,
                                                          OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                                          OTF2_GROUP_FLAG_NONE, world_size, members);
    if (code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 export: writing the MPI location group");
    for (uint32_t c = 0; c < comms && status == OTFX_OK; c++) {
        otfx_comm_def def;
        OTF2_StringRef name;
        status = otfx_defs_get_comm(x->global_defs, c, &def);
        if (status == OTFX_OK)
            status = define_string(x, def.name, &name);
        if (status != OTFX_OK)
            break;
        for (uint32_t i = 0; i < def.size; i++)
            members[i] = def.world_ranks[i];
        code =
            OTF2_GlobalDefWriter_WriteGroup(x->global, GROUP_COMM_FIRST + c, name, OTF2_GROUP_TYPE_COMM_GROUP,
                                            OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, def.size, members);
        if (code == OTF2_SUCCESS)
            code = OTF2_GlobalDefWriter_WriteComm(x->global, c, name, GROUP_COMM_FIRST + c,
                                                  OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
        if (code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 export: writing a communicator");
    }
    free(members);
    return status;
}

/* Each otfx metric is a metric member with a metric class of its own (the class is what Metric
 * records refer to), asynchronous: otfx records metric values whenever they come. */
static otfx_status define_metrics(exporter *x)
{
    uint32_t metrics = otfx_defs_count_metrics(x->global_defs);
    for (uint32_t m = 0; m < metrics; m++) {
        otfx_metric_def def = {0};
        OTFX_TRY(otfx_defs_get_metric(x->global_defs, m, &def));
        OTF2_Type type = def.type == OTFX_METRIC_INT64    ? OTF2_TYPE_INT64
                         : def.type == OTFX_METRIC_UINT64 ? OTF2_TYPE_UINT64
                                                          : OTF2_TYPE_DOUBLE;
        OTF2_StringRef name = STRING_EMPTY, unit = STRING_EMPTY;
        OTFX_TRY(define_string(x, def.name, &name));
        OTFX_TRY(define_string(x, def.unit ? def.unit : "", &unit));
        OTF2_TRY(OTF2_GlobalDefWriter_WriteMetricMember(x->global, m, name, STRING_EMPTY,
                                                        OTF2_METRIC_TYPE_USER, OTF2_METRIC_ABSOLUTE_POINT,
                                                        type, OTF2_BASE_DECIMAL, 0, unit),
                 "writing a metric member");
        OTF2_MetricMemberRef member = m;
        OTF2_TRY(OTF2_GlobalDefWriter_WriteMetricClass(x->global, m, 1, &member, OTF2_METRIC_ASYNCHRONOUS,
                                                       OTF2_RECORDER_KIND_ABSTRACT),
                 "writing a metric class");
    }
    return OTFX_OK;
}

static otfx_status write_global_definitions(exporter *x, uint32_t world_size)
{
    x->global = OTF2_Archive_GetGlobalDefWriter(x->archive);
    if (!x->global)
        return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening the global definition writer");
    otfx_time offset = x->any_time ? x->earliest : 0;
    otfx_time length = x->any_time ? x->latest - x->earliest : 0;
    OTF2_TRY(OTF2_GlobalDefWriter_WriteClockProperties(x->global, OTFX_OTF2_TIMER_RESOLUTION, offset, length,
                                                       OTF2_UNDEFINED_TIMESTAMP),
             "writing the clock properties");

    /* The string refs events already used: "" and the strategy names. */
    OTF2_StringRef ref;
    OTFX_TRY(define_string(x, "", &ref));
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++)
        OTFX_TRY(define_string(x, otfx_reduction_name((otfx_reduction)strategy), &ref));

    OTF2_StringRef placeholder_name = STRING_EMPTY;
    for (int a = 0; a < OTFX_OTF2_ATTR_COUNT; a++) {
        OTF2_StringRef name = STRING_EMPTY, description = STRING_EMPTY;
        OTFX_TRY(define_string(x, otfx_otf2_attributes[a].name, &name));
        OTFX_TRY(define_string(x, otfx_otf2_attributes[a].description, &description));
        if (a == OTFX_OTF2_ATTR_PLACEHOLDER)
            placeholder_name = name;
        OTF2_TRY(OTF2_GlobalDefWriter_WriteAttribute(x->global, (OTF2_AttributeRef)a, name, description,
                                                     otfx_otf2_attributes[a].type),
                 "writing an attribute definition");
    }
    OTFX_TRY(define_system_tree(x, placeholder_name));
    OTFX_TRY(define_regions(x));
    OTFX_TRY(define_comms(x, world_size));
    OTFX_TRY(define_metrics(x));
    OTF2_TRY(OTF2_Archive_CloseGlobalDefWriter(x->archive, x->global), "closing the global definitions");
    x->global = NULL;
    return OTFX_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Archive files
 * -------------------------------------------------------------------------------------------- */

typedef struct archive_paths {
    char *directory; /* <dir>/<name>: the per-location files */
    char *anchor;    /* <dir>/<name>.otf2 */
    char *global;    /* <dir>/<name>.def */
    char *marker;    /* <dir>/<name>.marker (OTF2 writes it only on request; removed on overwrite) */
} archive_paths;

static char *join(const char *directory, const char *name, const char *suffix)
{
    size_t size = strlen(directory) + strlen(name) + strlen(suffix) + 2;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%s/%s%s", directory, name, suffix);
    return path;
}

static void archive_paths_free(archive_paths *paths)
{
    free(paths->directory);
    free(paths->anchor);
    free(paths->global);
    free(paths->marker);
}

static bool exists(const char *path)
{
    struct stat info;
    return lstat(path, &info) == 0;
}

static bool archive_exists(const archive_paths *paths)
{
    return exists(paths->anchor) || exists(paths->global) || exists(paths->directory);
}

static bool is_archive_file(const char *entry)
{
    static const char *const suffixes[] = {".evt", ".def", ".snap"};
    size_t length = strlen(entry);
    for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes; s++) {
        size_t suffix = strlen(suffixes[s]);
        if (length > suffix && strcmp(entry + length - suffix, suffixes[s]) == 0)
            return true;
    }
    return false;
}

/* Removes an existing archive. Only files an OTF2 archive consists of are removed: a directory that
 * holds anything else is not ours to delete, and the export is refused. */
static otfx_status remove_archive(const archive_paths *paths)
{
    DIR *dir = opendir(paths->directory);
    if (!dir && errno != ENOENT)
        return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot read %s: %s", paths->directory, strerror(errno));
    if (dir) {
        otfx_status status = OTFX_OK;
        struct dirent *entry;
        while (status == OTFX_OK && (entry = readdir(dir)) != NULL) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
                continue;
            char *path = join(paths->directory, entry->d_name, "");
            struct stat info;
            if (!path)
                status = out_of_memory();
            else if (lstat(path, &info) != 0 || !S_ISREG(info.st_mode) || !is_archive_file(entry->d_name))
                status = otfx_fail(OTFX_ERR_IO,
                                   "OTF2 export: will not overwrite %s: %s is not part of an OTF2 archive",
                                   paths->directory, entry->d_name);
            else if (unlink(path) != 0)
                status = otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s: %s", path, strerror(errno));
            free(path);
        }
        closedir(dir);
        if (status != OTFX_OK)
            return status;
        if (rmdir(paths->directory) != 0)
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s: %s", paths->directory,
                             strerror(errno));
    }
    const char *files[] = {paths->anchor, paths->global, paths->marker};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++)
        if (exists(files[f]) && unlink(files[f]) != 0 && errno != ENOENT) /* read-only: EROFS, not ENOENT */
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s: %s", files[f], strerror(errno));
    return OTFX_OK;
}

/* mkdir -p */
static otfx_status make_directory(const char *directory)
{
    char *path = strdup(directory);
    if (!path)
        return out_of_memory();
    otfx_status status = OTFX_OK;
    for (char *slash = path + 1;; slash++) {
        bool last = *slash == '\0';
        if (*slash != '/' && !last)
            continue;
        *slash = '\0';
        struct stat info;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            status = otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot create %s: %s", path, strerror(errno));
            break;
        }
        if (stat(path, &info) != 0 || !S_ISDIR(info.st_mode)) {
            status = otfx_fail(OTFX_ERR_IO, "OTF2 export: %s is not a directory", path);
            break;
        }
        if (last)
            break;
        *slash = '/';
    }
    free(path);
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * Entry point
 * -------------------------------------------------------------------------------------------- */

static otfx_status check_arguments(const char *directory, const char *name, otfx_defs *defs,
                                   otfx_trace *const *traces, size_t trace_count,
                                   const otfx_export_options *options)
{
    if (!directory || !*directory || !name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: needs a directory and an archive name without '/'");
    if (!defs || (trace_count > 0 && !traces) || !options)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: needs definitions, traces and options");
    if (options->from >= options->to)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: empty window [%llu, %llu)",
                         (unsigned long long)options->from, (unsigned long long)options->to);
    for (size_t t = 0; t < trace_count; t++) {
        if (!traces[t] || otfx_trace_defs(traces[t]) != defs)
            return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: trace %zu does not use the given definitions",
                             t);
        for (size_t u = 0; u < t; u++)
            if (otfx_trace_location(traces[u]) == otfx_trace_location(traces[t]))
                return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: traces %zu and %zu record the same location",
                                 u, t);
    }
    return OTFX_OK;
}

/* Members of the largest group this process knows of: the MPI location group (one member per world
 * rank) or its largest communicator. */
static otfx_status group_members(otfx_defs *defs, otfx_trace *const *traces, size_t trace_count,
                                 uint64_t *members)
{
    *members = 0;
    uint32_t comms = otfx_defs_count_comms(defs);
    for (uint32_t c = 0; c < comms; c++) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(defs, c, &def));
        if (def.size > *members)
            *members = def.size;
        for (uint32_t i = 0; i < def.size; i++)
            if ((uint64_t)def.world_ranks[i] + 1 > *members)
                *members = (uint64_t)def.world_ranks[i] + 1;
    }
    for (size_t t = 0; t < trace_count; t++) {
        otfx_location_def where = {0};
        OTFX_TRY(otfx_defs_get_location(defs, otfx_trace_location(traces[t]), &where));
        if ((uint64_t)where.rank + 1 > *members)
            *members = (uint64_t)where.rank + 1;
    }
    return OTFX_OK;
}

/* The definition chunk size: a record must fit in one chunk, and the largest is the Group of the
 * largest group (every process uses the same size: readers read every file with the anchor's).
 * Readers allocate (and clear) a chunk per definition file they read, so it is no larger than that
 * needs while the definitions fit in OTF2's file buffer; beyond, it is the buffer's size
 * (OTF2_FILE_BUFFER_BYTES says why), which is OTF2's default. */
static otfx_status definition_chunk_bytes(uint64_t members, uint64_t definition_bytes, uint64_t *bytes)
{
    uint64_t needed = members * GROUP_MEMBER_BYTES + GROUP_RECORD_SLACK;
    if (members > OTF2_CHUNK_SIZE_MAX / GROUP_MEMBER_BYTES || needed > OTF2_CHUNK_SIZE_MAX)
        return otfx_fail(OTFX_ERR_INVALID,
                         "OTF2 export: a group of %llu members does not fit in an OTF2 definition chunk",
                         (unsigned long long)members);
    *bytes = definition_bytes < DEFINITIONS_IN_BUFFER ? OTF2_CHUNK_SIZE_MIN : OTF2_FILE_BUFFER_BYTES;
    while (*bytes < needed)
        *bytes *= 2;
    return OTFX_OK;
}

/* An upper bound of the bytes a store's definitions take in OTF2 definition files (every record at the
 * largest encoding of its fields, strings whole, mapping table entries included): the global definitions
 * of the union of every process's stores, and each process's local definitions, stay below the sum. */
static otfx_status definition_bytes_bound(otfx_defs *defs, uint64_t *bytes)
{
    uint64_t total = DEFINITION_FIXED_BYTES;
    const uint32_t strings = otfx_defs_count_strings(defs);
    for (uint32_t i = 0; i < strings; i++) {
        const char *text = NULL;
        OTFX_TRY(otfx_defs_get_string(defs, i, &text));
        total += DEFINITION_RECORD_BYTES + strlen(text);
    }
    const uint32_t regions = otfx_defs_count_regions(defs);
    for (uint32_t i = 0; i < regions; i++) {
        otfx_region_def def = {0};
        OTFX_TRY(otfx_defs_get_region(defs, i, &def));
        total += 3 * DEFINITION_RECORD_BYTES + strlen(def.name);
    }
    const uint32_t comms = otfx_defs_count_comms(defs);
    for (uint32_t i = 0; i < comms; i++) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(defs, i, &def));
        total += 4 * DEFINITION_RECORD_BYTES + strlen(def.name) + (uint64_t)def.size * GROUP_MEMBER_BYTES;
    }
    const uint32_t metrics = otfx_defs_count_metrics(defs);
    for (uint32_t i = 0; i < metrics; i++) {
        otfx_metric_def def = {0};
        OTFX_TRY(otfx_defs_get_metric(defs, i, &def));
        total += 4 * DEFINITION_RECORD_BYTES + strlen(def.name) + strlen(def.unit ? def.unit : "");
    }
    total += (uint64_t)otfx_defs_count_locations(defs) * DEFINITION_LOCATION_BYTES;
    *bytes = total;
    return OTFX_OK;
}

/* ---------------------------------------------------------------------------------------------
 * What the processes of a shared export tell each other. Every exchange is an allgather (one process:
 * a copy); every contribution starts with the process's status and message, so a failure anywhere
 * is known everywhere and every process takes the same path through OTF2's collective calls.
 *   1. before the archive is created: arguments, the existing archive (master), group sizes;
 *   2. after the events: clock range, locations with their record counts, definitions;
 *   3. after the archive was closed: whether the definitions were written.
 * -------------------------------------------------------------------------------------------- */

typedef struct shared_run {
    const otfx_otf2_collective *collective; /* NULL: one process, serial OTF2 collectives */
    uint32_t size, rank;
} shared_run;

typedef struct gathered {
    unsigned char *all;
    size_t *sizes;
    otfx_byte_reader *parts; /* per process, just after its status */
} gathered;

static void gathered_free(gathered *g)
{
    free(g->all);
    free(g->sizes);
    free(g->parts);
    *g = (gathered){0};
}

static void put_status(otfx_bytes *bytes, otfx_status status)
{
    otfx_bytes_u32(bytes, (uint32_t)status);
    otfx_bytes_text(bytes, status == OTFX_OK ? "" : otfx_last_error());
}

/* Exchanges `mine` and returns the first failure any process reported (OTFX_OK when none). */
static otfx_status exchange(const shared_run *run, const otfx_bytes *mine, gathered *g)
{
    *g = (gathered){0};
    if (mine->out_of_memory)
        return out_of_memory(); /* would leave the others waiting: the process is in trouble anyway */
    g->sizes = calloc(run->size, sizeof *g->sizes);
    g->parts = calloc(run->size, sizeof *g->parts);
    if (!g->sizes || !g->parts)
        return out_of_memory();
    if (!run->collective) {
        g->all = malloc(mine->size ? mine->size : 1);
        if (!g->all)
            return out_of_memory();
        if (mine->size)
            memcpy(g->all, mine->data, mine->size);
        g->sizes[0] = mine->size;
    } else {
        void *all = NULL;
        if (run->collective->allgather(mine->data, mine->size, &all, g->sizes, run->collective->user) != 0) {
            free(all);
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: the processes could not exchange their data");
        }
        g->all = all;
    }
    otfx_status first = OTFX_OK;
    size_t offset = 0;
    for (uint32_t p = 0; p < run->size; p++) {
        g->parts[p] = (otfx_byte_reader){g->all + offset, g->sizes[p], false};
        offset += g->sizes[p];
        otfx_status status = (otfx_status)otfx_read_u32(&g->parts[p]);
        const char *message = otfx_read_text(&g->parts[p]);
        if (g->parts[p].bad)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed data from process %u", p);
        if (status == OTFX_OK || first != OTFX_OK)
            continue;
        first = status;
        if (p == run->rank)
            otfx_fail(status, "%s", message);
        else
            otfx_fail(status, "OTF2 export: process %u failed: %s", p, message);
    }
    return first;
}

/* Exchange 2 on this process: its clock range, locations and definitions. */
static otfx_status describe_part(exporter *x, otfx_status status, otfx_bytes *mine)
{
    put_status(mine, status);
    if (status != OTFX_OK)
        return OTFX_OK;
    otfx_bytes_u32(mine, x->any_time);
    otfx_bytes_u64(mine, x->earliest);
    otfx_bytes_u64(mine, x->latest);
    otfx_bytes_u32(mine, (uint32_t)x->own_count);
    for (size_t l = 0; l < x->own_count; l++) {
        otfx_bytes_u32(mine, x->own[l].rank);
        otfx_bytes_u32(mine, x->own[l].thread);
        otfx_bytes_u64(mine, x->own[l].events);
    }
    otfx_status written = otfx_otf2_defs_write(x->defs, mine);
    if (written != OTFX_OK) {
        /* Still tell the others: a contribution that says so. */
        char message[512];
        snprintf(message, sizeof message, "%s", otfx_last_error());
        otfx_bytes_free(mine);
        put_status(mine, otfx_fail(written, "%s", message));
    }
    return OTFX_OK;
}

/* After exchange 2: every process's clock range and locations, the union of the definitions and this
 * process's map into it. */
static otfx_status unify(exporter *x, const shared_run *run, gathered *g)
{
    x->global_defs = otfx_defs_create();
    if (!x->global_defs)
        return out_of_memory();
    x->any_time = false;
    x->location_count = 0;
    for (uint32_t p = 0; p < run->size; p++) {
        otfx_byte_reader *in = &g->parts[p];
        bool any_time = otfx_read_u32(in) != 0;
        otfx_time earliest = otfx_read_u64(in), latest = otfx_read_u64(in);
        if (any_time) {
            if (!x->any_time || earliest < x->earliest)
                x->earliest = earliest;
            if (!x->any_time || latest > x->latest)
                x->latest = latest;
            x->any_time = true;
        }
        uint32_t locations = otfx_read_u32(in);
        for (uint32_t l = 0; l < locations && !in->bad; l++) {
            uint32_t rank = otfx_read_u32(in), thread = otfx_read_u32(in);
            uint64_t events = otfx_read_u64(in);
            if (!in->bad)
                OTFX_TRY(add_location(x, rank, thread, events, false));
        }
        if (in->bad)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed data from process %u", p);
        OTFX_TRY(otfx_otf2_defs_merge(in, x->global_defs, p == run->rank ? &x->map : NULL));
    }
    otfx_otf2_sort(x->locations, x->location_count, sizeof *x->locations, compare_locations);
    for (size_t l = 1; l < x->location_count; l++)
        if (compare_locations(&x->locations[l - 1], &x->locations[l]) == 0)
            return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: rank %u thread %u is exported by two processes",
                             x->locations[l].rank, x->locations[l].thread);
    x->map_identity = otfx_otf2_def_map_is_identity(&x->map);
    return OTFX_OK;
}

/* OTF2 creates the archive's own directory on the master while the collective callbacks are installed,
 * and says only that it could not. Creating it once first gives the system's reason for a directory
 * that cannot be written (read-only, no permission) before any process has started. */
static otfx_status probe_archive_directory(const archive_paths *paths)
{
    if (mkdir(paths->directory, 0777) != 0)
        return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot create %s: %s", paths->directory, strerror(errno));
    if (rmdir(paths->directory) != 0)
        return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s again: %s", paths->directory,
                         strerror(errno));
    return OTFX_OK;
}

/* Exchange 1 on the master: the existing archive is refused or removed, the directory created. */
static otfx_status prepare_directory(const archive_paths *paths, const char *directory, bool overwrite)
{
    if (archive_exists(paths) && !overwrite) {
        /* say what is there: an archive, or only a directory of the name its files would go into */
        if (exists(paths->anchor) || exists(paths->global))
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: %s already exists (set overwrite to replace it)",
                             exists(paths->anchor) ? paths->anchor : paths->global);
        return otfx_fail(OTFX_ERR_IO,
                         "OTF2 export: the directory %s already exists, but there is no archive (no %s): "
                         "choose another name (or set overwrite if it holds only an old archive's files)",
                         paths->directory, paths->anchor);
    }
    if (archive_exists(paths))
        OTFX_TRY(remove_archive(paths));
    OTFX_TRY(make_directory(directory));
    return probe_archive_directory(paths);
}

/* A failed system call OTF2 went on after (otfx_otf2_system_error): the step failed all the same. */
static otfx_status system_error_of(const char *what)
{
    char where[512] = "";
    const int value = otfx_otf2_system_error(where, sizeof where);
    if (!value)
        return OTFX_OK;
    return otfx_fail(OTFX_ERR_IO, "OTF2 export: %s: %s%s%s", what, where, where[0] ? ": " : "",
                     strerror(value));
}

static otfx_status open_event_files(exporter *x, const otfx_export_options *options)
{
    OTF2_TRY(OTF2_Archive_SetFlushCallbacks(x->archive, &otfx_otf2_flush_always, NULL),
             "setting up the archive");
    OTF2_TRY(OTF2_Archive_SetCreator(x->archive, options->creator ? options->creator : "otfx"),
             "setting the creator");
    char description[96];
    snprintf(description, sizeof description, "otfx export of [%llu, %llu) ns",
             (unsigned long long)options->from, (unsigned long long)options->to);
    OTF2_TRY(OTF2_Archive_SetDescription(x->archive, description), "setting the description");
    OTF2_TRY(OTF2_Archive_OpenEvtFiles(x->archive), "opening the event files");
    return OTFX_OK;
}

/* Copies and reads every trace (*prepared: one per trace, free with free_prepared). */
static otfx_status prepare_traces(exporter *x, otfx_trace *const *traces, size_t trace_count,
                                  const otfx_export_options *options, prepared_trace **prepared)
{
    *prepared = calloc(trace_count ? trace_count : 1, sizeof **prepared);
    if (!*prepared)
        return out_of_memory();
    for (size_t t = 0; t < trace_count; t++) {
        otfx_location_def where = {0};
        OTFX_TRY(otfx_defs_get_location(x->defs, otfx_trace_location(traces[t]), &where));
        OTFX_TRY(prepare_trace(x, traces[t], &where, options, &(*prepared)[t]));
    }
    return OTFX_OK;
}

/* After exchange 2: definitions written in chunks smaller than OTF2's file buffer must stay below it
 * (OTF2_FILE_BUFFER_BYTES says why): the stores may have grown since the archive was opened. */
static otfx_status definitions_still_fit(exporter *x)
{
    if (x->definition_chunk >= OTF2_FILE_BUFFER_BYTES)
        return OTFX_OK;
    uint64_t bytes = 0;
    OTFX_TRY(definition_bytes_bound(x->global_defs, &bytes));
    bytes += (uint64_t)x->location_count * DEFINITION_LOCATION_BYTES;
    if (bytes < OTF2_FILE_BUFFER_BYTES)
        return OTFX_OK;
    return otfx_fail(OTFX_ERR_INVALID,
                     "OTF2 export: the definitions grew from under %u to %llu bytes while the archive was "
                     "written, more than its definition chunks allow: export again",
                     (unsigned)DEFINITIONS_IN_BUFFER, (unsigned long long)bytes);
}

static void free_prepared(prepared_trace *prepared, size_t trace_count)
{
    for (size_t t = 0; prepared && t < trace_count; t++)
        prepared_trace_free(&prepared[t]);
    free(prepared);
}

static otfx_status export_traces(exporter *x, prepared_trace *prepared, size_t trace_count)
{
    for (size_t t = 0; t < trace_count; t++)
        OTFX_TRY(export_trace(x, &prepared[t]));
    return OTFX_OK;
}

/* Keeps the first failure: later steps still run their collective parts. */
static void keep_first(otfx_status *status, otfx_status next)
{
    if (*status == OTFX_OK)
        *status = next;
}

static otfx_status otf2_step(OTF2_ErrorCode code, const char *what)
{
    return code == OTF2_SUCCESS ? OTFX_OK : otfx_otf2_fail_call(code, "OTF2 export: %s", what);
}

/* The second read of this process's traces, when some of their messages are left out: the requests
 * those messages used (otfx_pairing_note_dropped). */
static int on_dropped(const otfx_event *event, void *user)
{
    trace_export *te = user;
    te->status = otfx_pairing_note_dropped(te->x->pairing, te->rank, event);
    return te->status != OTFX_OK;
}

/* Which messages the archive gets (otf2_pairing.h): this process's channel ends are exchanged with every
 * process's — on every process, whatever failed before — and each process keeps the ends whose other
 * end is held somewhere. Returns this process's status. */
static otfx_status pair_messages(exporter *x, const shared_run *run, otfx_status status,
                                 prepared_trace *prepared, size_t trace_count)
{
    otfx_bytes mine = {0};
    put_status(&mine, status);
    if (status == OTFX_OK) {
        otfx_status written = otfx_pairing_write(x->pairing, x->defs, &mine);
        if (written != OTFX_OK) {
            char message[512];
            snprintf(message, sizeof message, "%s", otfx_last_error());
            otfx_bytes_free(&mine);
            put_status(&mine, otfx_fail(written, "%s", message));
        }
    }
    gathered g;
    otfx_status agreed = exchange(run, &mine, &g);
    otfx_bytes_free(&mine);
    if (agreed == OTFX_OK)
        agreed = otfx_pairing_decide(x->pairing, g.parts, run->size, run->rank);
    gathered_free(&g);
    keep_first(&status, agreed);
    for (size_t t = 0; status == OTFX_OK && otfx_pairing_needs_dropped(x->pairing) && t < trace_count; t++) {
        trace_export *te = &prepared[t].te;
        status = otfx_query_events(prepared[t].copy, te->from, te->to, false, on_dropped, te);
        if (status == OTFX_OK)
            status = te->status;
    }
    if (status == OTFX_OK && x->master) {
        /* Readers that know no otfx attribute still see that messages were left out, and how many. */
        char unpaired[32];
        snprintf(unpaired, sizeof unpaired, "%llu",
                 (unsigned long long)otfx_pairing_unpaired_everywhere(x->pairing));
        status = otf2_step(OTF2_Archive_SetProperty(x->archive, "OTFX::UNPAIRED_MESSAGES", unpaired, true),
                           "setting the archive's properties");
        snprintf(unpaired, sizeof unpaired, "%llu",
                 (unsigned long long)otfx_pairing_collectives_left_out_everywhere(x->pairing));
        if (status == OTFX_OK)
            status = otf2_step(
                OTF2_Archive_SetProperty(x->archive, "OTFX::INCOMPLETE_COLLECTIVES", unpaired, true),
                "setting the archive's properties");
    }
    return status;
}

/* The receives that would end before their sends began are moved (otf2_clock_condition.h): rounds of
 * a pass over this process's traces and an exchange of the send times that changed, until none changed
 * anywhere or the rounds run out. On every process, whatever failed before (each round's exchange says
 * so). Process 0 records the result in the archive's properties. Returns this process's status. */
static otfx_status correct_clocks(exporter *x, const shared_run *run, otfx_status status,
                                  prepared_trace *prepared, size_t trace_count)
{
    for (uint32_t round = 0; round < CLOCK_MAX_ROUNDS; round++) {
        otfx_clock_round_begin(x->clock);
        for (size_t t = 0; status == OTFX_OK && t < trace_count; t++)
            status = run_pass(&prepared[t].te, prepared[t].copy, PASS_CLOCK);
        otfx_bytes mine = {0};
        put_status(&mine, status);
        if (status == OTFX_OK)
            otfx_clock_write_round(x->clock, &mine);
        gathered g;
        otfx_status agreed = exchange(run, &mine, &g);
        otfx_bytes_free(&mine);
        bool settled = false;
        if (agreed == OTFX_OK)
            agreed = otfx_clock_read_round(x->clock, g.parts, run->size, run->rank, &settled);
        gathered_free(&g);
        keep_first(&status, agreed);
        if (status != OTFX_OK || settled)
            break; /* every process reads the same parts: all of them stop at the same round */
    }
    otfx_clock_settle(x->clock);
    if (status == OTFX_OK && x->master) {
        const struct {
            const char *name;
            uint64_t value;
        } properties[] = {{"OTFX::CLOCK_CORRECTED_EVENTS", otfx_clock_events_moved(x->clock)},
                          {"OTFX::CLOCK_MAX_CORRECTION_NS", otfx_clock_max_correction(x->clock)},
                          {"OTFX::CLOCK_UNRESOLVED_MESSAGES", otfx_clock_unresolved(x->clock)}};
        for (size_t p = 0; status == OTFX_OK && p < sizeof properties / sizeof *properties; p++) {
            char value[32];
            snprintf(value, sizeof value, "%llu", (unsigned long long)properties[p].value);
            status = otf2_step(OTF2_Archive_SetProperty(x->archive, properties[p].name, value, true),
                               "setting the archive's properties");
        }
    }
    return status;
}

/* Everything after exchange 1. `status` says whether the archive was created here; the exchanges
 * happen on every process whatever failed. Returns this process's status. */
static otfx_status write_shared_archive(exporter *x, const shared_run *run, otfx_status status,
                                        otfx_trace *const *traces, size_t trace_count,
                                        const otfx_export_options *options)
{
    bool opened = status == OTFX_OK;
    if (status == OTFX_OK && run->collective) {
        if (run->collective->archive_opened(x->archive, run->collective->user) != 0) {
            /* OTF2 creates the archive's directory there */
            status = system_error_of("creating the archive");
            if (status == OTFX_OK)
                status = otfx_fail(OTFX_ERR_OTF2, "OTF2 export: installing the collective callbacks failed");
        }
    } else if (status == OTFX_OK) {
        status = otf2_step(OTF2_Archive_SetSerialCollectiveCallbacks(x->archive), "setting up the archive");
    }
    if (status == OTFX_OK)
        status = open_event_files(x, options);
    opened = opened && status == OTFX_OK;
    prepared_trace *prepared = NULL;
    if (status == OTFX_OK)
        status = prepare_traces(x, traces, trace_count, options, &prepared);
    status = pair_messages(x, run, status, prepared, trace_count);
    status = correct_clocks(x, run, status, prepared, trace_count);
    if (status == OTFX_OK)
        status = export_traces(x, prepared, trace_count);
    free_prepared(prepared, trace_count);
    if (status == OTFX_OK)
        status = system_error_of("writing the event files");

    otfx_bytes mine = {0};
    describe_part(x, status, &mine);
    gathered g;
    otfx_status agreed = exchange(run, &mine, &g);
    otfx_bytes_free(&mine);
    if (agreed == OTFX_OK)
        agreed = unify(x, run, &g);
    gathered_free(&g);
    if (agreed == OTFX_OK)
        agreed = definitions_still_fit(x); /* the same union on every process */
    keep_first(&status, agreed);
    uint32_t world_size = 0;
    if (status == OTFX_OK && x->master)
        status = add_placeholders(x, &world_size);
    if (status == OTFX_OK && x->master)
        status = write_placeholder_event_files(x);
    if (opened)
        keep_first(&status, otf2_step(OTF2_Archive_CloseEvtFiles(x->archive), "closing the event files"));
    if (status == OTFX_OK) {
        status = otf2_step(OTF2_Archive_OpenDefFiles(x->archive), "opening the local definition files");
        if (status == OTFX_OK)
            status = write_local_definition_files(x);
        keep_first(&status,
                   otf2_step(OTF2_Archive_CloseDefFiles(x->archive), "closing the local definition files"));
    }
    if (status == OTFX_OK && x->master)
        status = write_global_definitions(x, world_size);
    if (status == OTFX_OK)
        status = system_error_of("writing the definition files");
    return status;
}

/* After a failure: nothing half-written is left behind, and the failure's message is kept. */
static void discard_partial_archive(const archive_paths *paths, otfx_status failure)
{
    char message[512], removal[512];
    snprintf(message, sizeof message, "%s", otfx_last_error());
    if (remove_archive(paths) == OTFX_OK) {
        otfx_fail(failure, "%s", message);
        return;
    }
    snprintf(removal, sizeof removal, "%s", otfx_last_error());
    otfx_fail(failure, "%s (and the partial archive could not be removed: %s)", message, removal);
}

static void exporter_free(exporter *x)
{
    otfx_pairing_destroy(x->pairing);
    otfx_clock_destroy(x->clock);
    for (size_t c = 0; c < x->comm_capacity; c++)
        free(x->comms[c].by_world);
    free(x->comms);
    free(x->metric_types);
    free(x->locations);
    free(x->own);
    otfx_otf2_def_map_free(&x->map);
    if (x->global_defs)
        otfx_defs_destroy(x->global_defs);
}

otfx_status otfx_otf2_export_shared(const char *directory, const char *name, otfx_defs *defs,
                                    otfx_trace *const *traces, size_t trace_count,
                                    const otfx_export_options *options,
                                    const otfx_otf2_collective *collective, otfx_export_stats *stats)
{
    otfx_otf2_capture_errors();
    if (stats)
        *stats = (otfx_export_stats){0};
    shared_run run = {collective, 1, 0};
    if (collective) {
        if (collective->size == 0 || collective->rank >= collective->size || !collective->archive_opened ||
            !collective->allgather)
            return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: invalid description of the processes");
        run.size = collective->size;
        run.rank = collective->rank;
    }
    bool master = run.rank == 0;

    /* Exchange 1. */
    archive_paths paths = {0};
    uint64_t members = 0, definition_bytes = 0;
    otfx_status status = check_arguments(directory, name, defs, traces, trace_count, options);
    if (status == OTFX_OK) {
        paths = (archive_paths){join(directory, name, ""), join(directory, name, ".otf2"),
                                join(directory, name, ".def"), join(directory, name, ".marker")};
        if (!paths.directory || !paths.anchor || !paths.global || !paths.marker)
            status = out_of_memory();
    }
    if (status == OTFX_OK)
        status = group_members(defs, traces, trace_count, &members);
    if (status == OTFX_OK)
        status = definition_bytes_bound(defs, &definition_bytes);
    if (status == OTFX_OK && master)
        status = prepare_directory(&paths, directory, options->overwrite);
    otfx_bytes mine = {0};
    put_status(&mine, status);
    otfx_bytes_u64(&mine, members);
    otfx_bytes_u64(&mine, definition_bytes);
    gathered g;
    status = exchange(&run, &mine, &g);
    otfx_bytes_free(&mine);
    uint64_t all_definition_bytes = 0;
    for (uint32_t p = 0; status == OTFX_OK && p < run.size; p++) {
        uint64_t theirs = otfx_read_u64(&g.parts[p]);
        if (theirs > members)
            members = theirs;
        all_definition_bytes += otfx_read_u64(&g.parts[p]);
    }
    gathered_free(&g);
    all_definition_bytes += members * DEFINITION_LOCATION_BYTES; /* the master's placeholders */
    uint64_t definition_chunk = 0;
    if (status == OTFX_OK) /* the same on every process */
        status = definition_chunk_bytes(members, all_definition_bytes, &definition_chunk);
    if (status != OTFX_OK) {
        archive_paths_free(&paths);
        return status;
    }

    exporter x = {.defs = defs,
                  .master = master,
                  .next_string = 0,
                  .definition_chunk = definition_chunk,
                  .pairing = otfx_pairing_create(),
                  .clock = otfx_clock_create()};
    if (!x.pairing || !x.clock)
        status = out_of_memory(); /* still takes part in every exchange: the others learn of it */
    x.archive = OTF2_Archive_Open(directory, name, OTF2_FILEMODE_WRITE, EVENT_CHUNK_BYTES, definition_chunk,
                                  OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    x.attributes = OTF2_AttributeList_New();
    if (!x.archive)
        status = otfx_otf2_fail_call(OTF2_ERROR_FILE_CAN_NOT_OPEN, "OTF2 export: creating the archive");
    else if (!x.attributes)
        status = out_of_memory();
    status = write_shared_archive(&x, &run, status, traces, trace_count, options);
    if (x.archive) {
        OTF2_ErrorCode code = OTF2_Archive_Close(x.archive);
        if (status == OTFX_OK && code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 export: closing the archive");
        if (status == OTFX_OK)
            status = system_error_of("closing the archive"); /* the anchor file */
    }
    if (x.attributes)
        OTF2_AttributeList_Delete(x.attributes);

    /* Exchange 3: whether every process (the master's global definitions) succeeded. */
    put_status(&mine, status);
    otfx_status agreed = exchange(&run, &mine, &g);
    otfx_bytes_free(&mine);
    gathered_free(&g);
    if (agreed != OTFX_OK && master)
        discard_partial_archive(&paths, agreed);
    if (agreed == OTFX_OK && stats) {
        stats->locations = (uint32_t)x.own_count;
        for (size_t l = 0; l < x.own_count; l++)
            stats->events += x.own[l].events;
        stats->messages_unpaired = otfx_pairing_unpaired(x.pairing);
        stats->messages_unpaired_everywhere = otfx_pairing_unpaired_everywhere(x.pairing);
        stats->collectives_incomplete = otfx_pairing_collectives_left_out(x.pairing);
        stats->collectives_incomplete_everywhere = otfx_pairing_collectives_left_out_everywhere(x.pairing);
        stats->clock_corrected_events = otfx_clock_events_moved(x.clock);
        stats->clock_max_correction_ns = otfx_clock_max_correction(x.clock);
        stats->clock_unresolved_messages = otfx_clock_unresolved(x.clock);
    }
    exporter_free(&x);
    archive_paths_free(&paths);
    return agreed;
}

otfx_status otfx_otf2_export(const char *directory, const char *name, otfx_defs *defs,
                             otfx_trace *const *traces, size_t trace_count,
                             const otfx_export_options *options)
{
    return otfx_otf2_export_shared(directory, name, defs, traces, trace_count, options, NULL, NULL);
}

/* trace.c — appending, sealing and the budget; the reduction strategies are in reduction.c.
 *
 * Every byte the trace allocates for data is counted in bytes_used: sealed chunks (detail and
 * summary-only), segments with their summed statistics and the segment table. Before a chunk is
 * stored, reduction_make_room() runs the trace's strategy until the chunk fits. Working memory of fixed size
 * (open chunk, stacks, seal and reduction scratch) is outside the budget and documented in
 * docs/otfx-format.md.
 */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "trace_internal.h"

#include "defs_internal.h"
#include "error.h"
#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>

/* Events the task activity graph is fed at a time: a slice the append has just encoded is still in the
 * first-level cache (256 events of 64 bytes: 16 KiB), a whole batch (thousands of events) no longer. */
#define STRUCTURE_FEED_SLICE 256u

otfx_trace_config otfx_trace_config_default(size_t budget_bytes)
{
    otfx_trace_config config = {
        .budget_bytes = budget_bytes,
        .strategy = OTFX_REDUCE_RING,
        .compress = true,
        .chunk_bytes = 32 * 1024,
        .type_priority = {OTFX_CLASS_USER_FUNCTION, OTFX_CLASS_MPI_OTHER, OTFX_CLASS_MPI_P2P,
                          OTFX_CLASS_MPI_COLLECTIVE, OTFX_CLASS_COUNT},
        .structure = true,
    };
    return config;
}

static otfx_status validate_config(const otfx_trace_config *config)
{
    if (config->budget_bytes < MIN_BUDGET_BYTES)
        return otfx_fail(OTFX_ERR_INVALID, "budget of %zu bytes is below the minimum of %u",
                         config->budget_bytes, MIN_BUDGET_BYTES);
    if (config->strategy > OTFX_REDUCE_STOP)
        return otfx_fail(OTFX_ERR_INVALID, "strategy %d is not one of ring, time, type, depth, stop",
                         (int)config->strategy);
    if (config->chunk_bytes < MIN_CHUNK_BYTES || config->chunk_bytes > MAX_CHUNK_BYTES ||
        config->chunk_bytes > config->budget_bytes / 4)
        return otfx_fail(OTFX_ERR_INVALID,
                         "chunk size %u must lie in [%u, %u] and be at most a quarter of the budget",
                         config->chunk_bytes, MIN_CHUNK_BYTES, MAX_CHUNK_BYTES);
    for (int i = 0; i < OTFX_CLASS_COUNT; i++) {
        if ((unsigned)config->type_priority[i] > OTFX_CLASS_COUNT)
            return otfx_fail(OTFX_ERR_INVALID, "type priority %d names no event class", i);
    }
    return OTFX_OK;
}

/* ---- accounting ---- */

static size_t summary_allocations(const summary *s)
{
    return summary_heap_bytes(s) + (s->region_capacity ? ALLOCATION_OVERHEAD : 0) +
           (s->peer_capacity ? ALLOCATION_OVERHEAD : 0);
}

static size_t segment_cost(const segment *seg)
{
    return sizeof *seg + ALLOCATION_OVERHEAD + summary_allocations(&seg->total);
}

size_t trace_piece_cost(uint32_t blob_size)
{
    return (size_t)blob_size + ALLOCATION_OVERHEAD;
}

static size_t table_cost(uint32_t capacity)
{
    return capacity ? capacity * sizeof(segment *) + ALLOCATION_OVERHEAD : 0;
}

void piece_blob_release(uint8_t *blob, blob_share *share)
{
    if (!share) {
        free(blob);
    } else if (__atomic_sub_fetch(&share->holders, 1, __ATOMIC_ACQ_REL) == 0) {
        free(blob);
        free(share);
    }
}

/* Replaces a piece's blob (NULL: frees it) and flags, keeping the byte counters right. */
void trace_piece_replace_blob(otfx_trace *trace, piece *p, uint8_t *blob, uint32_t size, uint8_t flags)
{
    if (p->blob) {
        trace->layout_epoch++;
        trace->bytes_used -= trace_piece_cost(p->blob_size);
        if (p->flags & CHUNK_SUMMARY_ONLY)
            trace->summary_only_bytes -= trace_piece_cost(p->blob_size);
        piece_blob_release(p->blob, p->share);
    }
    p->share = NULL;
    p->blob = blob;
    p->blob_size = size;
    p->flags = flags;
    if (blob) {
        trace->bytes_used += trace_piece_cost(size);
        if (flags & CHUNK_SUMMARY_ONLY)
            trace->summary_only_bytes += trace_piece_cost(size);
    }
}

/* Adds `s` to a segment's total, accounting the growth of its arrays. */
otfx_status trace_segment_add(otfx_trace *trace, segment *seg, const summary *s)
{
    size_t before = summary_allocations(&seg->total);
    otfx_status status = summary_add(&seg->total, s);
    trace->bytes_used += summary_allocations(&seg->total) - before;
    return status;
}

/* ---- reading stored pieces ---- */

otfx_status trace_piece_summary(const piece *p, summary *into)
{
    chunk_info info;
    otfx_status status = chunk_parse(p->blob, p->blob_size, true, &info);
    if (status == OTFX_OK)
        status = chunk_read_summary(&info, into);
    return status;
}

/* ---- segments ---- */

static otfx_status segment_table_reserve(otfx_trace *trace, uint32_t count)
{
    if (count <= trace->segment_capacity)
        return OTFX_OK;
    const uint32_t old_capacity = trace->segment_capacity;
    if (!otfx_reserve_u32((void **)&trace->segments, &trace->segment_capacity, count, sizeof *trace->segments,
                          16))
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory growing the segment table");
    trace->bytes_used += table_cost(trace->segment_capacity) - table_cost(old_capacity);
    return OTFX_OK;
}

static void segment_destroy(otfx_trace *trace, segment *seg)
{
    for (uint32_t i = 0; i < seg->count; i++)
        trace_piece_replace_blob(trace, &seg->pieces[i], NULL, 0, 0);
    trace->bytes_used -= segment_cost(seg);
    summary_free(&seg->total);
    free(seg);
}

static void segment_remove(otfx_trace *trace, uint32_t index)
{
    trace->layout_epoch++;
    segment_destroy(trace, trace->segments[index]);
    memmove(&trace->segments[index], &trace->segments[index + 1],
            (trace->segment_count - index - 1) * sizeof *trace->segments);
    trace->segment_count--;
}

/* Bytes that appending a piece with summary `s` may take beyond its blob. */
size_t trace_append_overhead_bound(const otfx_trace *trace, const summary *s)
{
    if (trace->segment_count && trace->segments[trace->segment_count - 1]->count < SEGMENT_PIECES) {
        const segment *last = trace->segments[trace->segment_count - 1];
        return summary_add_growth_bound(&last->total, s) + 2 * ALLOCATION_OVERHEAD;
    }
    summary empty;
    summary_init(&empty);
    size_t table_growth = trace->segment_count == trace->segment_capacity
                              ? table_cost(trace->segment_capacity ? trace->segment_capacity * 2 : 16) -
                                    table_cost(trace->segment_capacity)
                              : 0;
    return sizeof(segment) + ALLOCATION_OVERHEAD + summary_add_growth_bound(&empty, s) +
           2 * ALLOCATION_OVERHEAD + table_growth;
}

/* Appends a piece (taking its blob) whose statistics are `s`. */
static otfx_status append_piece(otfx_trace *trace, piece *added, const summary *s)
{
    segment *last = trace->segment_count ? trace->segments[trace->segment_count - 1] : NULL;
    otfx_status status;
    if (!last || last->count == SEGMENT_PIECES) {
        status = segment_table_reserve(trace, trace->segment_count + 1);
        if (status != OTFX_OK)
            return status;
        last = calloc(1, sizeof *last);
        if (!last)
            return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a segment");
        summary_init(&last->total);
        if (summary_add(&last->total, s) != OTFX_OK) {
            summary_free(&last->total);
            free(last);
            return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a segment");
        }
        trace->bytes_used += segment_cost(last);
        trace->segments[trace->segment_count++] = last;
        last->begin = added->begin;
    } else {
        status = trace_segment_add(trace, last, s);
        if (status != OTFX_OK)
            return status;
    }
    uint8_t *blob = added->blob;
    uint32_t size = added->blob_size;
    piece *stored = &last->pieces[last->count++];
    *stored = *added;
    stored->blob = NULL;
    trace_piece_replace_blob(trace, stored, blob, size, added->flags);
    last->end = added->end;
    trace->events_in_pieces += added->events;
    if (!(added->flags & CHUNK_SUMMARY_ONLY))
        trace->detail_pieces++;
    return OTFX_OK;
}

bool trace_next_position(const otfx_trace *trace, piece_position *position)
{
    if (position->index + 1 < trace->segments[position->segment]->count) {
        position->index++;
        return true;
    }
    if (position->segment + 1 < trace->segment_count) {
        position->segment++;
        position->index = 0;
        return true;
    }
    return false;
}

piece *trace_piece_at(const otfx_trace *trace, piece_position position)
{
    return trace_piece(trace, position.segment, position.index);
}

/* Merges two adjacent segments when the pieces of both fit into one. */
static void compact_segments(otfx_trace *trace, uint32_t first)
{
    if (first + 1 >= trace->segment_count)
        return;
    segment *a = trace->segments[first], *b = trace->segments[first + 1];
    if (a->count + b->count > SEGMENT_PIECES)
        return;
    size_t growth = summary_add_growth_bound(&a->total, &b->total);
    /* Never let compaction itself push the trace over its budget. */
    if (trace->bytes_used + growth > trace->config.budget_bytes)
        return;
    if (trace_segment_add(trace, a, &b->total) != OTFX_OK)
        return; /* out of memory: the segments simply stay apart */
    memcpy(&a->pieces[a->count], b->pieces, b->count * sizeof *b->pieces);
    trace->layout_epoch++;
    a->count += b->count;
    a->end = b->end;
    b->count = 0; /* the pieces moved; destroying b must not free their blobs */
    segment_remove(trace, first + 1);
}

/* Removes the piece at `position` (its blob already freed or moved) and its statistics `s` from the
 * segment's total, dropping the segment when it empties. */
void trace_remove_piece(otfx_trace *trace, piece_position position, const summary *s)
{
    segment *seg = trace->segments[position.segment];
    trace->layout_epoch++;
    size_t before = summary_allocations(&seg->total);
    summary_subtract(&seg->total, s);
    trace->bytes_used -= before - summary_allocations(&seg->total);
    memmove(&seg->pieces[position.index], &seg->pieces[position.index + 1],
            (seg->count - position.index - 1) * sizeof *seg->pieces);
    seg->count--;
    if (seg->count == 0) {
        segment_remove(trace, position.segment);
        return;
    }
    seg->begin = seg->pieces[0].begin;
    seg->end = seg->pieces[seg->count - 1].end;
    if (position.segment > 0)
        compact_segments(trace, position.segment - 1);
}

/* ---- the open chunk ---- */

static void start_open_chunk(otfx_trace *trace, otfx_time begin, bool begin_known)
{
    /* Time coding follows whichever mode would have been cheaper for the chunk just sealed. */
    bool predict_time = trace->encoder.time_bytes[1] < trace->encoder.time_bytes[0];
    trace->open_events = 0;
    trace->open_operand_bytes = 0;
    trace->open_begin = begin;
    trace->open_begin_set = begin_known;
    trace->open_first_event = begin;
    trace->open_refused = trace->stopped;
    trace->open_first_ordinal = trace->event_ordinal;
    memcpy(trace->open_context, trace->stack, trace->depth * sizeof *trace->stack);
    for (uint32_t i = 0; i < trace->depth; i++)
        trace->open_context[i].entered_here = 0; /* their visits were counted where they were entered */
    trace->open_context_depth = trace->depth;
    codec_state_init(&trace->encoder, begin, predict_time);
}

otfx_status trace_seal_summary_only(otfx_trace *trace, otfx_time begin, otfx_time end, const summary *s,
                                    uint8_t **blob, uint32_t *size)
{
    chunk_contents contents = {
        .begin = begin,
        .end = end,
        .first_event = end,
        .summary = s,
        .flags = CHUNK_SUMMARY_ONLY,
    };
    return chunk_seal(&contents, &trace->seal_scratch, blob, size);
}

/* Bytes storing a piece with this blob and statistics may take. */
size_t trace_piece_need(const otfx_trace *trace, uint32_t blob_size, const summary *s)
{
    return trace_piece_cost(blob_size) + trace_append_overhead_bound(trace, s);
}

static piece *last_piece(const otfx_trace *trace)
{
    if (trace->segment_count == 0)
        return NULL;
    const segment *last = trace->segments[trace->segment_count - 1];
    return trace_piece(trace, trace->segment_count - 1, last->count - 1);
}

/* Stores [begin, end] (statistics in trace->chunk_summary, `events` events) as a summary-only piece
 * removed by `strategy`, extending the last piece when it is a summary of the same strategy (`stop`
 * keeps one piece, hence one reduction record and one counted reduction, for everything it refuses
 * in a row). */
static otfx_status store_as_summary(otfx_trace *trace, otfx_time begin, otfx_time end, uint32_t events,
                                    otfx_reduction strategy)
{
    summary *s = &trace->chunk_summary; /* recomputed by every seal attempt */
    s->removed[strategy] += events;
    piece *last = last_piece(trace);
    uint8_t *blob;
    uint32_t size;
    otfx_status status;
    if (last && (last->flags & CHUNK_SUMMARY_ONLY) && last->created_by == strategy && last->end == begin) {
        segment *seg = trace->segments[trace->segment_count - 1];
        status = reduction_make_room_while_stopped(trace, summary_encoded_bound(s) +
                                                              summary_add_growth_bound(&seg->total, s));
        last = last_piece(trace);
        seg = trace->segments[trace->segment_count - 1];
        summary *merged = &trace->work_summary;
        if (status == OTFX_OK)
            status = trace_piece_summary(last, merged);
        if (status == OTFX_OK)
            status = summary_add(merged, s);
        if (status == OTFX_OK)
            status = metric_stats_append(&merged->metrics, &s->metrics);
        if (status == OTFX_OK)
            status = trace_seal_summary_only(trace, last->begin, end, merged, &blob, &size);
        if (status == OTFX_OK) {
            status = trace_segment_add(trace, seg, s);
            if (status != OTFX_OK) {
                free(blob);
                return status;
            }
            trace_piece_replace_blob(trace, last, blob, size, CHUNK_SUMMARY_ONLY);
            last->end = end;
            seg->end = end;
            trace->events_reduced[strategy] += events;
        }
        return status;
    }
    status = trace_seal_summary_only(trace, begin, end, s, &blob, &size);
    if (status == OTFX_OK)
        status = reduction_make_room_while_stopped(trace, trace_piece_need(trace, size, s));
    if (status != OTFX_OK) {
        free(blob);
        return status;
    }
    piece added = {.begin = begin,
                   .end = end,
                   .first_event = end,
                   .blob = blob,
                   .blob_size = size,
                   .flags = CHUNK_SUMMARY_ONLY,
                   .created_by = (uint8_t)strategy};
    status = append_piece(trace, &added, s);
    if (status != OTFX_OK) {
        free(blob);
        return status;
    }
    trace->events_reduced[strategy] += events;
    trace->reductions++;
    return OTFX_OK;
}

/* Seals the open chunk: summarises it, makes room and stores it, or hands it to `stop`. On failure
 * the open chunk stays as it is. */
static otfx_status seal_open_chunk(otfx_trace *trace)
{
    if (trace->open_events == 0)
        return OTFX_OK;
    otfx_time begin = trace->open_begin, end = trace->last_time;
    uint32_t events = trace->open_events;
    summary *s = &trace->chunk_summary;
    strippable_info strippable;
    summary_clear(s);
    metric_walk *metrics = NULL;
    otfx_status status = OTFX_OK;
    if (otfx_defs_count_metrics(trace->defs) > 0) {
        trace->metric_mark = metric_mark_lookup(trace->defs, trace->metric_mark, &trace->metric_mark_scanned);
        s->metrics.first_ordinal = trace->open_first_ordinal;
        metrics = &trace->metric_work;
        status = trace_metric_walk_start(trace, metrics, &s->metrics);
        if (status != OTFX_OK)
            return status;
    }
    memcpy(trace->work_frames, trace->open_context, trace->open_context_depth * sizeof *trace->open_context);
    event_cursor cursor;
    event_cursor_init(&cursor, begin, trace->encoder.predict_time, trace->tokens, events, trace->operands,
                      trace->open_operand_bytes, trace->work_frames, trace->open_context_depth);
    status = chunk_walk_summary(&cursor, trace->defs, begin, end, 0, OTFX_TIME_MAX, s, &strippable, metrics);
    if (status == OTFX_OK && metrics && metrics->failed)
        status = otfx_fail(OTFX_ERR_NOMEM, "out of memory computing metric statistics");
    if (status != OTFX_OK)
        return status;
    s->events = events;
    if (trace->open_refused) {
        status = store_as_summary(trace, begin, end, events, OTFX_REDUCE_STOP);
    } else {
        chunk_contents contents = {
            .begin = begin,
            .end = end,
            .first_event = trace->open_first_event,
            .context = trace->open_context,
            .context_depth = trace->open_context_depth,
            .summary = s,
            .tokens = trace->tokens,
            .event_count = events,
            .operands = trace->operands,
            .operand_bytes = trace->open_operand_bytes,
            .flags = trace->encoder.predict_time ? CHUNK_PREDICTED_TIME : 0,
            .classes_present = strippable.classes,
            .max_pair_depth = strippable.max_pair_depth,
            .compress = trace->config.compress,
        };
        uint8_t *blob;
        uint32_t size;
        bool fits = false;
        status = chunk_seal(&contents, &trace->seal_scratch, &blob, &size);
        if (status != OTFX_OK)
            return status;
        status = reduction_make_room(trace, size, s, &fits);
        if (status == OTFX_OK && fits) {
            piece added = {.begin = begin,
                           .end = end,
                           .first_event = contents.first_event,
                           .blob = blob,
                           .blob_size = size,
                           .events = events,
                           .max_pair_depth = strippable.max_pair_depth,
                           .flags = chunk_sealed_flags(blob),
                           .classes_present = strippable.classes};
            status = append_piece(trace, &added, s);
            if (status != OTFX_OK)
                free(blob);
        } else {
            free(blob);
            if (status == OTFX_OK && trace->strategy == OTFX_REDUCE_STOP) {
                trace->stopped = true;
                status = store_as_summary(trace, begin, end, events, OTFX_REDUCE_STOP);
            } else if (status == OTFX_OK) {
                /* Nothing older is left to reduce: this chunk's own events go. */
                status = store_as_summary(trace, begin, end, events,
                                          trace->strategy == OTFX_REDUCE_TIME ? OTFX_REDUCE_TIME
                                                                              : OTFX_REDUCE_RING);
            }
        }
    }
    if (status != OTFX_OK)
        return status;
    if (metrics) { /* the walk's state at the next chunk's start */
        metric_walk done = trace->metric_carry;
        trace->metric_carry = trace->metric_work;
        trace->metric_work = done;
    }
    start_open_chunk(trace, end, true);
    return OTFX_OK;
}

otfx_status trace_metric_walk_start(const otfx_trace *trace, metric_walk *walk, metric_stats *into)
{
    uint32_t scanned = trace->metric_mark_scanned; /* marks defined since the last seal count too */
    walk->mark = metric_mark_lookup(trace->defs, trace->metric_mark, &scanned);
    walk->from = 0;
    walk->to = OTFX_TIME_MAX;
    walk->into = into;
    if (trace->metric_carry.ordinal == trace->open_first_ordinal &&
        trace->metric_carry.depth == trace->open_context_depth)
        return metric_walk_copy(walk, &trace->metric_carry);
    /* The walk did not run over the chunks before (no metrics then) or the trace was reset: the regions
     * open at the chunk's start have no values. */
    return metric_walk_reset(walk, trace->open_context, trace->open_context_depth, trace->open_first_ordinal);
}

/* ---- appending ---- */

/* Definition counts seen by this append call; refreshed when a reference lies beyond them, since
 * definitions may be added while we run. */
typedef struct known_counts {
    uint32_t regions, comms, metrics;
} known_counts;

static bool region_known(const otfx_trace *trace, known_counts *known, otfx_ref region)
{
    if (region < known->regions)
        return true;
    known->regions = otfx_defs_count_regions(trace->defs);
    return region < known->regions;
}

static bool comm_known(const otfx_trace *trace, known_counts *known, otfx_ref comm)
{
    if (comm < known->comms)
        return true;
    known->comms = otfx_defs_count_comms(trace->defs);
    return comm < known->comms;
}

static otfx_status validate_event(const otfx_trace *trace, known_counts *known, const otfx_event *event,
                                  size_t index)
{
    if ((unsigned)event->type >= OTFX_EV_TYPE_COUNT)
        return otfx_fail(OTFX_ERR_INVALID, "event %zu: unknown type %d", index, (int)event->type);
    if (trace->any_time && event->time < trace->last_time)
        return otfx_fail(OTFX_ERR_INVALID, "event %zu (%s): time %llu before the previous event's %llu",
                         index, otfx_event_type_name(event->type), (unsigned long long)event->time,
                         (unsigned long long)trace->last_time);
    switch (event->type) {
    case OTFX_EV_ENTER:
        if (!region_known(trace, known, event->u.region.region))
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (enter): unknown region %u", index,
                             event->u.region.region);
        if (trace->depth == OTFX_MAX_CALL_DEPTH)
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (enter): calling depth would exceed %d", index,
                             OTFX_MAX_CALL_DEPTH);
        break;
    case OTFX_EV_LEAVE:
        if (trace->depth == 0)
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (leave): no region is open", index);
        break;
    case OTFX_EV_SEND:
    case OTFX_EV_RECV:
    case OTFX_EV_ISEND:
    case OTFX_EV_IRECV:
        if (!comm_known(trace, known, event->u.msg.comm))
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (%s): unknown communicator %u", index,
                             otfx_event_type_name(event->type), event->u.msg.comm);
        break;
    case OTFX_EV_COLL_BEGIN:
        if (event->u.coll.seq == 0) /* the communicator means something with an ordinal only */
            break;
        /* fall through */
    case OTFX_EV_COLL_END:
    case OTFX_EV_NBC_COMPLETE:
        if (!comm_known(trace, known, event->u.coll.comm))
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (%s): unknown communicator %u", index,
                             otfx_event_type_name(event->type), event->u.coll.comm);
        break;
    case OTFX_EV_METRIC:
        if (event->u.metric.metric >= known->metrics &&
            event->u.metric.metric >= (known->metrics = otfx_defs_count_metrics(trace->defs)))
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (metric): unknown metric %u", index,
                             event->u.metric.metric);
        break;
    case OTFX_EV_PHASE:
        if (!region_known(trace, known, event->u.phase.region) ||
            defs_region_role(trace->defs, event->u.phase.region) != OTFX_ROLE_PHASE)
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (phase): region %u is not a defined phase region",
                             index, event->u.phase.region);
        break;
    case OTFX_EV_REDUCTION:
        if ((unsigned)event->u.reduction.strategy >= OTFX_REDUCE_COUNT ||
            event->u.reduction.begin > event->u.reduction.end)
            return otfx_fail(OTFX_ERR_INVALID, "event %zu (reduction): unknown strategy or begin after end",
                             index);
        break;
    case OTFX_EV_ISEND_COMPLETE:
    case OTFX_EV_IRECV_REQUEST:
    case OTFX_EV_REQUEST_CANCELLED:
    case OTFX_EV_NBC_REQUEST:
    case OTFX_EV_TYPE_COUNT:
        break;
    }
    return OTFX_OK;
}

otfx_status otfx_trace_append(otfx_trace *trace, const otfx_event *events, size_t count, size_t *appended)
{
    if (appended)
        *appended = 0;
    if (!trace || (count && !events))
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_append: NULL argument");
    otfx_status status = OTFX_OK;
    bool refused = false;
    size_t done = 0, fed = 0;
    known_counts known = {0, 0, 0};
    pthread_rwlock_wrlock(&trace->lock);
    while (done < count && status == OTFX_OK) {
        const size_t slice_end = count - done > STRUCTURE_FEED_SLICE ? done + STRUCTURE_FEED_SLICE : count;
        for (; done < slice_end; done++) {
            const otfx_event *event = &events[done];
            status = validate_event(trace, &known, event, done);
            if (status != OTFX_OK)
                break;
            if (trace->open_events + trace->open_operand_bytes >= trace->config.chunk_bytes) {
                status = seal_open_chunk(trace);
                if (status != OTFX_OK)
                    break;
            }
            if (!trace->open_begin_set) {
                trace->open_begin = event->time;
                trace->open_begin_set = true;
                codec_state_init(&trace->encoder, event->time, trace->encoder.predict_time);
            }
            if (trace->open_events == 0)
                trace->open_first_event = event->time;
            otfx_ref top = trace->depth ? trace->stack[trace->depth - 1].region : OTFX_REF_NONE;
            trace->event_ordinal++;
            trace->open_operand_bytes +=
                (uint32_t)codec_encode(&trace->encoder, event, top, &trace->tokens[trace->open_events],
                                       trace->operands + trace->open_operand_bytes);
            trace->open_events++;
            if (event->type == OTFX_EV_ENTER)
                trace->stack[trace->depth++] = (call_frame){event->u.region.region, 1, event->time, 0};
            else if (event->type == OTFX_EV_LEAVE)
                trace->depth--;
            else if (event->type == OTFX_EV_REDUCTION)
                trace->events_reduced[event->u.reduction.strategy] += event->u.reduction.events_removed;
            if (trace->events_received++ == 0)
                trace->first_time = event->time;
            trace->last_time = event->time;
            trace->any_time = true;
            refused |= trace->open_refused;
        }
        /* The graph takes every event the trace took (stored or refused by `stop`), a slice at a time while
         * the slice is still in the cache. */
        if (trace->config.structure)
            structure_feed(trace->structure, trace->defs, events + fed, done - fed);
        fed = done;
    }
    if (trace->config.structure)
        structure_settle(trace->structure);
    pthread_rwlock_unlock(&trace->lock);
    if (appended)
        *appended = done;
    if (status == OTFX_OK && refused)
        return otfx_fail(OTFX_ERR_STOPPED,
                         "the buffer is full and the strategy is stop: events are counted, not stored");
    return status;
}

otfx_status otfx_query_structure(otfx_trace *trace, otfx_structure **copy)
{
    if (!trace || !copy)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_query_structure: NULL argument");
    pthread_rwlock_rdlock(&trace->lock);
    *copy = structure_copy(trace->structure);
    pthread_rwlock_unlock(&trace->lock);
    return *copy ? OTFX_OK : otfx_fail(OTFX_ERR_NOMEM, "out of memory copying a trace's structure");
}

/* ---- control ---- */

otfx_status otfx_trace_set_strategy(otfx_trace *trace, otfx_reduction strategy)
{
    if (!trace)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_set_strategy: NULL trace");
    if ((unsigned)strategy > OTFX_REDUCE_STOP)
        return otfx_fail(OTFX_ERR_INVALID, "strategy %d is not one of ring, time, type, depth, stop",
                         (int)strategy);
    pthread_rwlock_wrlock(&trace->lock);
    trace->strategy = strategy;
    if (strategy != OTFX_REDUCE_STOP && trace->stopped) {
        /* Recording resumes; the open chunk's events, counted as refused so far, are kept. */
        trace->stopped = false;
        trace->open_refused = false;
    }
    pthread_rwlock_unlock(&trace->lock);
    return OTFX_OK;
}

static void drop_all_pieces(otfx_trace *trace)
{
    while (trace->segment_count)
        segment_remove(trace, trace->segment_count - 1);
    trace->events_in_pieces = 0;
    trace->detail_pieces = 0;
}

otfx_status otfx_trace_reset(otfx_trace *trace)
{
    if (!trace)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_reset: NULL trace");
    pthread_rwlock_wrlock(&trace->lock);
    drop_all_pieces(trace);
    trace->events_received = 0;
    memset(trace->events_reduced, 0, sizeof trace->events_reduced);
    trace->reductions = 0;
    trace->stopped = false;
    otfx_structure_reset(trace->structure);
    start_open_chunk(trace, trace->last_time, false);
    pthread_rwlock_unlock(&trace->lock);
    return OTFX_OK;
}

otfx_ref otfx_trace_location(const otfx_trace *trace)
{
    return trace ? trace->location : OTFX_REF_NONE;
}

otfx_defs *otfx_trace_defs(const otfx_trace *trace)
{
    return trace ? trace->defs : NULL;
}

static otfx_time oldest_detail_time(const otfx_trace *trace)
{
    if (trace->segment_count) {
        piece_position position = {0, 0};
        do {
            const piece *p = trace_piece_at(trace, position);
            if (!(p->flags & CHUNK_SUMMARY_ONLY) && p->events > 0)
                return p->first_event;
        } while (trace_next_position(trace, &position));
    }
    if (trace->open_events && !trace->open_refused)
        return trace->open_first_event;
    return OTFX_TIME_MAX;
}

otfx_status otfx_trace_status_get(otfx_trace *trace, otfx_trace_status *out)
{
    if (!trace || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_status_get: NULL argument");
    memset(out, 0, sizeof *out);
    pthread_rwlock_rdlock(&trace->lock);
    out->bytes_used = trace->bytes_used;
    out->budget_bytes = trace->config.budget_bytes;
    out->bytes_open = (size_t)trace->open_events + trace->open_operand_bytes;
    out->events_received = trace->events_received;
    out->events_held = trace->events_in_pieces + (trace->open_refused ? 0 : trace->open_events);
    memcpy(out->events_reduced, trace->events_reduced, sizeof out->events_reduced);
    if (trace->open_refused)
        out->events_reduced[OTFX_REDUCE_STOP] += trace->open_events;
    out->reductions = trace->reductions;
    out->first_time = trace->events_received ? trace->first_time : OTFX_TIME_MAX;
    out->last_time = trace->events_received ? trace->last_time : 0;
    out->oldest_detail = oldest_detail_time(trace);
    out->strategy = trace->strategy;
    out->chunks = trace->detail_pieces;
    out->segments = trace->segment_count;
    out->stopped = trace->stopped;
    out->structure_bytes = otfx_structure_bytes(trace->structure);
    pthread_rwlock_unlock(&trace->lock);
    return OTFX_OK;
}

/* ---- lifetime ---- */

otfx_status otfx_trace_create(const otfx_trace_config *config, otfx_defs *defs, otfx_ref location,
                              otfx_trace **out)
{
    if (!config || !defs || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_create: NULL argument");
    *out = NULL;
    otfx_status status = validate_config(config);
    if (status != OTFX_OK)
        return status;
    if (location >= otfx_defs_count_locations(defs))
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_create: unknown location %u", location);
    otfx_trace *trace = calloc(1, sizeof *trace);
    if (!trace)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory creating a trace");
    trace->config = *config;
    trace->defs = defs;
    trace->location = location;
    trace->strategy = config->strategy;
    trace->max_chunk_events = config->chunk_bytes / 2 + 2;
    trace->raw_capacity = config->chunk_bytes + CODEC_MAX_OPERAND_BYTES + 1;
    size_t operand_capacity = config->chunk_bytes + CODEC_MAX_OPERAND_BYTES;
    size_t frames_bytes = sizeof(call_frame) * OTFX_MAX_CALL_DEPTH;
    trace->tokens = malloc(trace->max_chunk_events);
    trace->operands = malloc(operand_capacity);
    trace->thin_tokens = malloc(trace->max_chunk_events);
    trace->thin_operands = malloc(operand_capacity);
    trace->drop_marks = malloc(trace->max_chunk_events / 8 + 1);
    trace->enter_index = malloc(sizeof *trace->enter_index * OTFX_MAX_CALL_DEPTH);
    trace->stack = malloc(frames_bytes);
    trace->open_context = malloc(frames_bytes);
    trace->work_frames = malloc(frames_bytes);
    otfx_location_def location_def = {0, 0};
    otfx_defs_get_location(defs, location, &location_def);
    trace->structure = otfx_structure_create(location_def.rank);
    summary_init(&trace->chunk_summary);
    metric_walk_init(&trace->metric_carry);
    metric_walk_init(&trace->metric_work);
    trace->metric_mark = OTFX_REF_NONE;
    summary_init(&trace->work_summary);
    summary_init(&trace->other_summary);
    if (pthread_rwlock_init(&trace->lock, NULL) != 0) {
        free(trace);
        return otfx_fail(OTFX_ERR_NOMEM, "cannot create a trace's lock");
    }
    if (!trace->tokens || !trace->operands || !trace->thin_tokens || !trace->thin_operands ||
        payload_buffers_alloc(&trace->payload, trace->raw_capacity) != OTFX_OK || !trace->drop_marks ||
        !trace->enter_index || !trace->stack || !trace->open_context || !trace->work_frames ||
        !trace->structure) {
        otfx_trace_destroy(trace);
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory creating a trace");
    }
    start_open_chunk(trace, 0, false);
    *out = trace;
    return OTFX_OK;
}

void otfx_trace_destroy(otfx_trace *trace)
{
    if (!trace)
        return;
    drop_all_pieces(trace);
    free(trace->segments);
    free(trace->tokens);
    free(trace->operands);
    free(trace->thin_tokens);
    free(trace->thin_operands);
    payload_buffers_free(&trace->payload);
    free(trace->drop_marks);
    free(trace->enter_index);
    free(trace->stack);
    otfx_structure_destroy(trace->structure);
    free(trace->open_context);
    free(trace->work_frames);
    chunk_scratch_free(&trace->seal_scratch);
    summary_free(&trace->chunk_summary);
    metric_walk_free(&trace->metric_carry);
    metric_walk_free(&trace->metric_work);
    summary_free(&trace->work_summary);
    summary_free(&trace->other_summary);
    pthread_rwlock_destroy(&trace->lock);
    free(trace);
}

/* ---- test hooks ---- */

static bool piece_by_index(const otfx_trace *trace, uint32_t index, piece **found)
{
    for (uint32_t s = 0; s < trace->segment_count; s++) {
        if (index < trace->segments[s]->count) {
            *found = trace_piece(trace, s, index);
            return true;
        }
        index -= trace->segments[s]->count;
    }
    return false;
}

uint32_t otfx_trace_test_piece_count(otfx_trace *trace)
{
    pthread_rwlock_rdlock(&trace->lock);
    uint32_t count = 0;
    for (uint32_t s = 0; s < trace->segment_count; s++)
        count += trace->segments[s]->count;
    pthread_rwlock_unlock(&trace->lock);
    return count;
}

otfx_status otfx_trace_test_piece_bytes(otfx_trace *trace, uint32_t index, const uint8_t **bytes,
                                        size_t *size)
{
    pthread_rwlock_rdlock(&trace->lock);
    piece *p;
    bool found = piece_by_index(trace, index, &p);
    if (found) {
        *bytes = p->blob;
        *size = p->blob_size;
    }
    pthread_rwlock_unlock(&trace->lock);
    return found ? OTFX_OK : otfx_fail(OTFX_ERR_INVALID, "no piece %u", index);
}

otfx_status otfx_trace_test_damage_piece(otfx_trace *trace, uint32_t index, uint32_t offset, uint8_t mask)
{
    pthread_rwlock_wrlock(&trace->lock);
    piece *p;
    bool found = piece_by_index(trace, index, &p) && offset < p->blob_size;
    if (found)
        p->blob[offset] ^= mask;
    pthread_rwlock_unlock(&trace->lock);
    return found ? OTFX_OK : otfx_fail(OTFX_ERR_INVALID, "no piece %u with byte %u", index, offset);
}

size_t otfx_trace_test_working_bytes(otfx_trace *trace)
{
    pthread_rwlock_rdlock(&trace->lock);
    size_t operand_capacity = trace->config.chunk_bytes + CODEC_MAX_OPERAND_BYTES;
    size_t bytes = sizeof *trace + 2 * (size_t)trace->max_chunk_events + 2 * operand_capacity +
                   trace->payload.raw_capacity + trace->payload.middle_capacity +
                   trace->max_chunk_events / 8 + 1 + sizeof *trace->enter_index * OTFX_MAX_CALL_DEPTH +
                   3 * sizeof(call_frame) * OTFX_MAX_CALL_DEPTH + trace->seal_scratch.capacity +
                   summary_heap_bytes(&trace->chunk_summary) + summary_heap_bytes(&trace->work_summary) +
                   summary_heap_bytes(&trace->other_summary);
    pthread_rwlock_unlock(&trace->lock);
    return bytes;
}

otfx_status otfx_trace_test_seal(otfx_trace *trace)
{
    pthread_rwlock_wrlock(&trace->lock);
    otfx_status status = seal_open_chunk(trace);
    pthread_rwlock_unlock(&trace->lock);
    return status;
}

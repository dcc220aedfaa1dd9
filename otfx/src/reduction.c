/* reduction.c — the reduction strategies: how a full trace makes room (otfx_reduction in trace.h).
 *
 * `ring` and `time` drop the oldest detail, `coarsen` merges summaries, `type` and `depth` thin detail
 * by event class or call depth, `stop` refuses new detail while keeping a reserve for its statistics.
 * Every step keeps the removed events' statistics in a summary-only piece, so profiles stay exact.
 * trace.c calls reduction_make_room() before it stores a chunk.
 */
/* rwlocks (in trace_internal.h) are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "trace_internal.h"

#include "defs_internal.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

static bool find_oldest_detail(const otfx_trace *trace, piece_position *found)
{
    if (trace->detail_pieces == 0 || trace->segment_count == 0)
        return false;
    piece_position position = {0, 0};
    do {
        if (!(trace_piece_at(trace, position)->flags & CHUNK_SUMMARY_ONLY)) {
            *found = position;
            return true;
        }
    } while (trace_next_position(trace, &position));
    return false;
}

/* Merges piece `b` into the summary-only piece `a` just before it. */
static otfx_status merge_pieces(otfx_trace *trace, piece_position a_at, piece_position b_at)
{
    piece *a = trace_piece_at(trace, a_at), *b = trace_piece_at(trace, b_at);
    summary *merged = &trace->work_summary, *part = &trace->other_summary;
    otfx_status status = trace_piece_summary(a, merged);
    if (status == OTFX_OK)
        status = trace_piece_summary(b, part);
    if (status == OTFX_OK)
        status = summary_add(merged, part);
    if (status == OTFX_OK)
        status = metric_stats_append(&merged->metrics, &part->metrics);
    uint8_t *blob = NULL;
    uint32_t size = 0;
    if (status == OTFX_OK)
        status = trace_seal_summary_only(trace, a->begin, b->end, merged, &blob, &size);
    if (status != OTFX_OK)
        return status;
    if (a_at.segment != b_at.segment) {
        segment *a_segment = trace->segments[a_at.segment];
        status = trace_segment_add(trace, a_segment, part);
        if (status != OTFX_OK) {
            free(blob);
            return status;
        }
        a_segment->end = b->end;
    }
    trace_piece_replace_blob(trace, a, blob, size, CHUNK_SUMMARY_ONLY);
    a->end = b->end;
    uint8_t level = a->level > b->level ? a->level : b->level;
    a->level = level < UINT8_MAX ? level + 1 : level;
    a->created_by = b->created_by; /* the most recent removal names the range */
    if (!(b->flags & CHUNK_SUMMARY_ONLY))
        trace->detail_pieces--;
    trace->events_in_pieces -= b->events;
    trace_piece_replace_blob(trace, b, NULL, 0, 0);
    /* Inside one segment the total already holds b's statistics, now a's. */
    summary nothing;
    summary_init(&nothing);
    trace_remove_piece(trace, b_at, a_at.segment != b_at.segment ? part : &nothing);
    return OTFX_OK;
}

/* Replaces a detail piece's events by its summary (strategy `ring` or `time`). */
static otfx_status drop_detail(otfx_trace *trace, piece_position at, otfx_reduction strategy)
{
    piece *p = trace_piece_at(trace, at);
    summary *s = &trace->work_summary;
    otfx_status status = trace_piece_summary(p, s);
    if (status != OTFX_OK)
        return status;
    s->removed[strategy] += p->events;
    uint8_t *blob;
    uint32_t size;
    status = trace_seal_summary_only(trace, p->begin, p->end, s, &blob, &size);
    if (status != OTFX_OK)
        return status;
    trace->segments[at.segment]->total.removed[strategy] += p->events;
    trace->events_reduced[strategy] += p->events;
    trace->events_in_pieces -= p->events;
    trace->detail_pieces--;
    trace->reductions++;
    p->events = 0;
    p->classes_present = 0;
    p->max_pair_depth = 0;
    p->first_event = p->end;
    p->created_by = (uint8_t)strategy;
    p->level = 0;
    trace_piece_replace_blob(trace, p, blob, size, CHUNK_SUMMARY_ONLY);
    /* `ring` keeps one summary per contiguous dropped range: merge into the ring piece before. */
    if (strategy == OTFX_REDUCE_RING && (at.segment > 0 || at.index > 0)) {
        piece_position before =
            at.index > 0 ? (piece_position){at.segment, at.index - 1}
                         : (piece_position){at.segment - 1, trace->segments[at.segment - 1]->count - 1};
        piece *previous = trace_piece_at(trace, before);
        if ((previous->flags & CHUNK_SUMMARY_ONLY) && previous->created_by == OTFX_REDUCE_RING)
            return merge_pieces(trace, before, at);
    }
    return OTFX_OK;
}

/* Merges the oldest adjacent summary-only pair, preferring pairs of equal level so that resolution
 * halves with age. */
static otfx_status coarsen_once(otfx_trace *trace, bool *progress)
{
    *progress = false;
    if (trace->segment_count == 0)
        return OTFX_OK;
    piece_position position = {0, 0}, first_pair = {0, 0}, previous_position = {0, 0};
    bool have_previous = false, have_pair = false;
    do {
        piece *current = trace_piece_at(trace, position);
        if (have_previous && (current->flags & CHUNK_SUMMARY_ONLY)) {
            piece *previous = trace_piece_at(trace, previous_position);
            if (previous->flags & CHUNK_SUMMARY_ONLY) {
                if (previous->level == current->level) {
                    *progress = true;
                    return merge_pieces(trace, previous_position, position);
                }
                if (!have_pair) {
                    first_pair = previous_position;
                    have_pair = true;
                }
            }
        }
        previous_position = position;
        have_previous = true;
    } while (trace_next_position(trace, &position));
    if (!have_pair)
        return OTFX_OK;
    piece_position second = first_pair;
    trace_next_position(trace, &second);
    *progress = true;
    return merge_pieces(trace, first_pair, second);
}

/* Re-encodes a detail piece without some of its events: for `type` the events of `event_class`
 * (enter/leave pairs whose both ends lie in the chunk, and message or collective events), for
 * `depth` the pairs at calling level >= `min_level`. Pairs that cross the chunk's edges stay, so the
 * stream stays well nested across chunks; the summary stays the one of the full events. */
static otfx_status thin_piece(otfx_trace *trace, piece_position at, otfx_reduction strategy,
                              otfx_event_class event_class, uint32_t min_level)
{
    piece *p = trace_piece_at(trace, at);
    chunk_info info;
    const uint8_t *raw;
    uint32_t context_depth;
    summary *s = &trace->work_summary;
    otfx_status status = chunk_parse(p->blob, p->blob_size, true, &info);
    if (status == OTFX_OK)
        status = chunk_read_summary(&info, s);
    if (status == OTFX_OK)
        status = chunk_read_payload(&info, &trace->payload, &raw);
    if (status == OTFX_OK)
        status = chunk_read_context(&info, trace->work_frames, &context_depth);
    if (status != OTFX_OK)
        return status;
    if (info.event_count > trace->raw_capacity)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk holds more events than the trace's chunks can");

    /* Pass 1: mark what goes. */
    memset(trace->drop_marks, 0, (info.event_count + 7) / 8);
    event_cursor cursor;
    event_cursor_init(&cursor, info.begin, info.flags & CHUNK_PREDICTED_TIME, raw, info.event_count,
                      raw + info.event_count, info.raw_bytes - info.event_count, trace->work_frames,
                      context_depth);
    otfx_event event;
    int next;
    uint32_t dropped = 0;
    while ((next = event_cursor_next(&cursor, &event)) > 0) {
        uint32_t index = cursor.index - 1;
        bool drop = false;
        if (event.type == OTFX_EV_ENTER) {
            trace->enter_index[cursor.depth - 1] = index;
        } else if (event.type == OTFX_EV_LEAVE) {
            const call_frame *left = event_cursor_left(&cursor);
            if (left->entered_here) {
                otfx_region_role role = defs_region_role_or_user(trace->defs, left->region);
                drop = strategy == OTFX_REDUCE_TYPE ? codec_event_class(OTFX_EV_ENTER, role) == event_class
                                                    : cursor.depth >= min_level;
                if (drop) {
                    uint32_t enter = trace->enter_index[cursor.depth];
                    trace->drop_marks[enter / 8] |= (uint8_t)(1u << (enter % 8));
                    dropped++;
                }
            }
        } else if (strategy == OTFX_REDUCE_TYPE) {
            drop = codec_event_class(event.type, OTFX_ROLE_USER_FUNCTION) == event_class &&
                   event_class != OTFX_CLASS_OTHER;
        }
        if (drop) {
            trace->drop_marks[index / 8] |= (uint8_t)(1u << (index % 8));
            dropped++;
        }
    }
    if (next < 0)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor.index);

    /* Pass 2: re-encode what stays. */
    status = chunk_read_context(&info, trace->work_frames, &context_depth);
    if (status != OTFX_OK)
        return status;
    event_cursor_init(&cursor, info.begin, info.flags & CHUNK_PREDICTED_TIME, raw, info.event_count,
                      raw + info.event_count, info.raw_bytes - info.event_count, trace->work_frames,
                      context_depth);
    codec_state encoder;
    codec_state_init(&encoder, info.begin, info.flags & CHUNK_PREDICTED_TIME);
    uint32_t kept = 0, operand_bytes = 0, kept_depth = context_depth;
    otfx_time first_kept = info.end;
    /* The stack of the kept events, which the decoder of the thinned chunk will see. */
    otfx_ref *kept_stack = trace->enter_index;
    for (uint32_t i = 0; i < context_depth; i++)
        kept_stack[i] = trace->work_frames[i].region;
    while (event_cursor_next(&cursor, &event) > 0) {
        uint32_t index = cursor.index - 1;
        if (trace->drop_marks[index / 8] & (1u << (index % 8)))
            continue;
        if (kept == 0)
            first_kept = event.time;
        otfx_ref top = kept_depth ? kept_stack[kept_depth - 1] : OTFX_REF_NONE;
        operand_bytes += (uint32_t)codec_encode(&encoder, &event, top, &trace->thin_tokens[kept],
                                                trace->thin_operands + operand_bytes);
        kept++;
        if (event.type == OTFX_EV_ENTER)
            kept_stack[kept_depth++] = event.u.region.region;
        else if (event.type == OTFX_EV_LEAVE)
            kept_depth--;
    }

    /* What could still be removed, from the thinned events. */
    strippable_info strippable;
    status = chunk_read_context(&info, trace->work_frames, &context_depth);
    if (status != OTFX_OK)
        return status;
    event_cursor_init(&cursor, info.begin, info.flags & CHUNK_PREDICTED_TIME, trace->thin_tokens, kept,
                      trace->thin_operands, operand_bytes, trace->work_frames, context_depth);
    summary_clear(&trace->other_summary);
    status = chunk_walk_summary(&cursor, trace->defs, info.begin, info.end, 0, OTFX_TIME_MAX,
                                &trace->other_summary, &strippable, NULL);
    if (status != OTFX_OK)
        return status;
    status = chunk_read_context(&info, trace->work_frames, &context_depth);
    if (status != OTFX_OK)
        return status;

    s->removed[strategy] += dropped;
    chunk_contents contents = {
        .begin = info.begin,
        .end = info.end,
        .first_event = first_kept,
        .context = trace->work_frames,
        .context_depth = context_depth,
        .summary = s,
        .tokens = trace->thin_tokens,
        .event_count = kept,
        .operands = trace->thin_operands,
        .operand_bytes = operand_bytes,
        .flags = (uint8_t)(info.flags & (CHUNK_THINNED_TYPE | CHUNK_THINNED_DEPTH | CHUNK_PREDICTED_TIME)) |
                 (strategy == OTFX_REDUCE_TYPE ? CHUNK_THINNED_TYPE : CHUNK_THINNED_DEPTH),
        .classes_present = strippable.classes,
        .max_pair_depth = strippable.max_pair_depth,
        .compress = trace->config.compress,
    };
    uint8_t *blob;
    uint32_t size;
    status = chunk_seal(&contents, &trace->seal_scratch, &blob, &size);
    if (status != OTFX_OK)
        return status;
    trace->segments[at.segment]->total.removed[strategy] += dropped;
    trace->events_reduced[strategy] += dropped;
    trace->events_in_pieces -= dropped;
    trace->reductions++;
    p->events = kept;
    p->first_event = first_kept;
    p->classes_present = strippable.classes;
    p->max_pair_depth = strippable.max_pair_depth;
    trace_piece_replace_blob(trace, p, blob, size, chunk_sealed_flags(blob));
    return OTFX_OK;
}

/* `type`: thins the oldest chunk still holding events of the first class in the priority order
 * that any chunk still holds. */
static otfx_status thin_by_type(otfx_trace *trace, bool *progress)
{
    *progress = false;
    for (int k = 0; k < OTFX_CLASS_COUNT; k++) {
        otfx_event_class event_class = trace->config.type_priority[k];
        if (event_class == OTFX_CLASS_COUNT)
            break;
        if (event_class == OTFX_CLASS_OTHER || trace->segment_count == 0)
            continue;
        piece_position position = {0, 0};
        do {
            const piece *p = trace_piece_at(trace, position);
            if (!(p->flags & CHUNK_SUMMARY_ONLY) && (p->classes_present & (1u << event_class))) {
                *progress = true;
                return thin_piece(trace, position, OTFX_REDUCE_TYPE, event_class, 0);
            }
        } while (trace_next_position(trace, &position));
    }
    return OTFX_OK;
}

/* `depth`: thins the oldest chunk holding enter/leave pairs at the deepest level any chunk holds. */
static otfx_status thin_by_depth(otfx_trace *trace, bool *progress)
{
    *progress = false;
    if (trace->segment_count == 0)
        return OTFX_OK;
    uint32_t deepest = 0;
    piece_position position = {0, 0}, oldest_deepest = {0, 0};
    do {
        const piece *p = trace_piece_at(trace, position);
        if (!(p->flags & CHUNK_SUMMARY_ONLY) && p->max_pair_depth > deepest) {
            deepest = p->max_pair_depth;
            oldest_deepest = position;
        }
    } while (trace_next_position(trace, &position));
    if (deepest == 0)
        return OTFX_OK;
    *progress = true;
    return thin_piece(trace, oldest_deepest, OTFX_REDUCE_DEPTH, OTFX_CLASS_COUNT, deepest - 1);
}

/* One step of the trace's strategy; *progress is false when nothing was left to reduce. */
static otfx_status reduce_step(otfx_trace *trace, bool *progress)
{
    *progress = false;
    otfx_status status = OTFX_OK;
    if (trace->summary_only_bytes > trace->config.budget_bytes / SUMMARY_QUOTA_DIVISOR) {
        status = coarsen_once(trace, progress);
        if (status != OTFX_OK || *progress)
            return status;
    }
    piece_position oldest;
    switch (trace->strategy) {
    case OTFX_REDUCE_TYPE:
        status = thin_by_type(trace, progress);
        break;
    case OTFX_REDUCE_DEPTH:
        status = thin_by_depth(trace, progress);
        break;
    case OTFX_REDUCE_RING:
    case OTFX_REDUCE_TIME:
    case OTFX_REDUCE_STOP:
    case OTFX_REDUCE_SOURCE_DROP:
    case OTFX_REDUCE_THROTTLE:
    case OTFX_REDUCE_COUNT:
        break;
    }
    if (status != OTFX_OK || *progress)
        return status;
    if (trace->strategy != OTFX_REDUCE_STOP && find_oldest_detail(trace, &oldest)) {
        /* `type` and `depth` fall back to `ring` once nothing is left to thin. */
        *progress = true;
        return drop_detail(trace, oldest,
                           trace->strategy == OTFX_REDUCE_TIME ? OTFX_REDUCE_TIME : OTFX_REDUCE_RING);
    }
    return coarsen_once(trace, progress);
}

/* Reduces until a piece of `blob_size` bytes with statistics `s` fits, keeping `stop`'s reserve
 * free; *fits is false when nothing is left to reduce. */
otfx_status reduction_make_room(otfx_trace *trace, uint32_t blob_size, const summary *s, bool *fits)
{
    for (;;) {
        size_t reserve = trace->strategy == OTFX_REDUCE_STOP && !trace->stopped ? STOP_RESERVE_BYTES : 0;
        if (trace->bytes_used + trace_piece_need(trace, blob_size, s) + reserve <=
            trace->config.budget_bytes) {
            *fits = true;
            return OTFX_OK;
        }
        bool progress;
        otfx_status status = reduce_step(trace, &progress);
        if (status != OTFX_OK)
            return status;
        if (!progress) {
            *fits = false;
            return OTFX_OK;
        }
    }
}

/* While `stop` refuses, its summary may outgrow the reserve (new regions or peers); then the oldest
 * detail goes as under `ring` rather than the budget breaking. */
otfx_status reduction_make_room_while_stopped(otfx_trace *trace, size_t needed)
{
    piece_position oldest;
    while (trace->bytes_used + needed > trace->config.budget_bytes && find_oldest_detail(trace, &oldest)) {
        otfx_status status = drop_detail(trace, oldest, OTFX_REDUCE_RING);
        if (status != OTFX_OK)
            return status;
    }
    return OTFX_OK;
}

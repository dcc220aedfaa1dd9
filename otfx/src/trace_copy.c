/* trace_copy.c — a frozen private copy of a trace (trace_copy.h). The copy has the layout trace.c
 * builds (segments on the heap, segment totals as summaries), so otfx_trace_destroy frees it and every
 * query reads it as it would read the original. Sealed chunks never change: the copy shares them with
 * the trace (trace_internal.h, blob_share) instead of copying their bytes. */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "trace_copy.h"

#include "error.h"
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

/* One more holder of a piece's blob. The trace is read-locked, so its appender cannot let go of the blob
 * meanwhile; another reader may be copying the same piece: the first share installed wins. */
static otfx_status share_blob(piece *original, blob_share **out)
{
    blob_share *share = __atomic_load_n(&original->share, __ATOMIC_ACQUIRE);
    if (!share) {
        blob_share *fresh = malloc(sizeof *fresh);
        if (!fresh)
            return otfx_fail(OTFX_ERR_NOMEM, "out of memory copying a trace");
        fresh->holders = 1; /* the trace's piece */
        if (__atomic_compare_exchange_n(&original->share, &share, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            share = fresh;
        else
            free(fresh);
    }
    __atomic_add_fetch(&share->holders, 1, __ATOMIC_ACQ_REL);
    *out = share;
    return OTFX_OK;
}

static otfx_status copy_segment(segment *from, segment **out)
{
    segment *to = calloc(1, sizeof *to);
    if (!to)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory copying a trace");
    to->begin = from->begin;
    to->end = from->end;
    summary_init(&to->total);
    otfx_status status = summary_add(&to->total, &from->total);
    for (uint32_t p = 0; p < from->count && status == OTFX_OK; p++) {
        piece copy = from->pieces[p];
        if (copy.blob)
            status = share_blob(&from->pieces[p], &copy.share);
        if (status == OTFX_OK)
            to->pieces[to->count++] = copy;
    }
    if (status != OTFX_OK) {
        for (uint32_t p = 0; p < to->count; p++)
            piece_blob_release(to->pieces[p].blob, to->pieces[p].share);
        summary_free(&to->total);
        free(to);
        return status;
    }
    *out = to;
    return OTFX_OK;
}

/* Copies the state of `from` (read-locked by the caller) into the new trace `to`. */
static otfx_status copy_locked(otfx_trace *from, otfx_trace *to)
{
    if (from->segment_count) {
        to->segments = calloc(from->segment_count, sizeof *to->segments);
        if (!to->segments)
            return otfx_fail(OTFX_ERR_NOMEM, "out of memory copying a trace");
        to->segment_capacity = from->segment_count;
        for (uint32_t s = 0; s < from->segment_count; s++) {
            otfx_status status = copy_segment(from->segments[s], &to->segments[s]);
            if (status != OTFX_OK)
                return status;
            to->segment_count++;
        }
    }
    to->strategy = from->strategy;
    to->stopped = from->stopped;
    to->bytes_used = from->bytes_used;
    to->summary_only_bytes = from->summary_only_bytes;
    to->events_in_pieces = from->events_in_pieces;
    to->detail_pieces = from->detail_pieces;

    memcpy(to->tokens, from->tokens, from->open_events);
    memcpy(to->operands, from->operands, from->open_operand_bytes);
    to->open_events = from->open_events;
    to->open_operand_bytes = from->open_operand_bytes;
    to->encoder = from->encoder;
    memcpy(to->open_context, from->open_context, from->open_context_depth * sizeof *from->open_context);
    to->open_context_depth = from->open_context_depth;
    to->open_begin = from->open_begin;
    to->open_first_event = from->open_first_event;
    to->open_begin_set = from->open_begin_set;
    to->open_refused = from->open_refused;

    memcpy(to->stack, from->stack, from->depth * sizeof *from->stack);
    to->depth = from->depth;
    to->last_time = from->last_time;
    to->any_time = from->any_time;
    to->events_received = from->events_received;
    memcpy(to->events_reduced, from->events_reduced, sizeof to->events_reduced);
    to->reductions = from->reductions;
    to->first_time = from->first_time;
    return OTFX_OK;
}

otfx_status otfx_trace_copy(otfx_trace *trace, otfx_trace **copy)
{
    if (!trace || !copy)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_copy: NULL argument");
    *copy = NULL;
    otfx_trace *to = NULL;
    /* The configuration never changes after creation (set_strategy changes `strategy` only). */
    otfx_status status = otfx_trace_create(&trace->config, trace->defs, trace->location, &to);
    if (status != OTFX_OK)
        return status;
    pthread_rwlock_rdlock(&trace->lock);
    status = copy_locked(trace, to);
    pthread_rwlock_unlock(&trace->lock);
    if (status != OTFX_OK) {
        otfx_trace_destroy(to);
        return status;
    }
    *copy = to;
    return OTFX_OK;
}

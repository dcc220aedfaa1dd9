/* query.c — events, profiles, timelines and message statistics of a time window.
 *
 * Queries hold the trace's read lock. They add the statistics of whole segments and pieces that lie
 * inside the window and decode only the pieces the window's edges cut; pieces whose events were
 * removed or thinned contribute their statistics pro-rated by the share of their range inside the
 * window (the profile is then flagged approximate).
 */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "defs_internal.h"
#include "error.h"
#include "profile.h"
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

/* Per-query working memory (queries run concurrently, so nothing of the trace's is used). */
typedef struct query_scratch {
    payload_buffers payload;
    call_frame *frames;
    summary piece_stats;
} query_scratch;

static otfx_status scratch_open(const otfx_trace *trace, query_scratch *scratch)
{
    summary_init(&scratch->piece_stats);
    scratch->frames = malloc(sizeof *scratch->frames * OTFX_MAX_CALL_DEPTH);
    if (!scratch->frames)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a query");
    otfx_status status = payload_buffers_alloc(&scratch->payload, trace->raw_capacity);
    if (status != OTFX_OK)
        free(scratch->frames);
    return status;
}

static void scratch_close(query_scratch *scratch)
{
    payload_buffers_free(&scratch->payload);
    free(scratch->frames);
    summary_free(&scratch->piece_stats);
}

static bool piece_overlaps(otfx_time begin, otfx_time end, otfx_time from, otfx_time to)
{
    return begin < to && end >= from;
}

static bool piece_inside(otfx_time begin, otfx_time end, otfx_time from, otfx_time to)
{
    return from <= begin && end < to;
}

/* A cursor over a stored piece's events (payload decompressed into the scratch). */
static otfx_status cursor_on_piece(const piece *p, query_scratch *scratch, chunk_info *info,
                                   event_cursor *cursor)
{
    const uint8_t *raw;
    uint32_t depth;
    otfx_status status = chunk_parse(p->blob, p->blob_size, true, info);
    if (status == OTFX_OK)
        status = chunk_read_payload(info, &scratch->payload, &raw);
    if (status == OTFX_OK)
        status = chunk_read_context(info, scratch->frames, &depth);
    if (status != OTFX_OK)
        return status;
    event_cursor_init(cursor, info->begin, info->flags & CHUNK_PREDICTED_TIME, raw, info->event_count,
                      raw + info->event_count, info->raw_bytes - info->event_count, scratch->frames, depth);
    return OTFX_OK;
}

/* A cursor over the open chunk. */
static void cursor_on_open_chunk(const otfx_trace *trace, query_scratch *scratch, event_cursor *cursor)
{
    memcpy(scratch->frames, trace->open_context, trace->open_context_depth * sizeof *scratch->frames);
    event_cursor_init(cursor, trace->open_begin, trace->encoder.predict_time, trace->tokens,
                      trace->open_events, trace->operands, trace->open_operand_bytes, scratch->frames,
                      trace->open_context_depth);
}

static bool open_chunk_overlaps(const otfx_trace *trace, otfx_time from, otfx_time to)
{
    return trace->open_events > 0 && piece_overlaps(trace->open_begin, trace->last_time, from, to);
}

static otfx_status read_piece_summary(const piece *p, summary *into)
{
    chunk_info info;
    otfx_status status = chunk_parse(p->blob, p->blob_size, true, &info);
    if (status == OTFX_OK)
        status = chunk_read_summary(&info, into);
    return status;
}

/* Adds a piece's summary scaled to the share of its range inside the window. */
static otfx_status add_prorated(const piece *p, otfx_time from, otfx_time to, query_scratch *scratch,
                                summary *into)
{
    otfx_status status = read_piece_summary(p, &scratch->piece_stats);
    if (status != OTFX_OK)
        return status;
    if (p->end == p->begin) /* an instant: inside or not */
        return p->begin >= from && p->begin < to ? summary_add(into, &scratch->piece_stats) : OTFX_OK;
    return summary_add_scaled(into, &scratch->piece_stats, time_overlap(p->begin, p->end, from, to),
                              p->end - p->begin);
}

/* Statistics of [from, to): whole segments and pieces by their summaries, edge pieces decoded.
 * *approximate tells whether pro-rating was needed. */
static otfx_status window_statistics(const otfx_trace *trace, otfx_time from, otfx_time to, summary *into,
                                     bool *approximate)
{
    query_scratch scratch;
    otfx_status status = scratch_open(trace, &scratch);
    if (status != OTFX_OK)
        return status;
    *approximate = false;
    for (uint32_t s = 0; s < trace->segment_count && status == OTFX_OK; s++) {
        const segment *seg = trace->segments[s];
        if (!piece_overlaps(seg->begin, seg->end, from, to))
            continue;
        if (piece_inside(seg->begin, seg->end, from, to)) {
            status = summary_add(into, &seg->total);
            continue;
        }
        for (uint32_t i = 0; i < seg->count && status == OTFX_OK; i++) {
            const piece *p = &seg->pieces[i];
            if (!piece_overlaps(p->begin, p->end, from, to))
                continue;
            if (piece_inside(p->begin, p->end, from, to)) {
                status = read_piece_summary(p, &scratch.piece_stats);
                if (status == OTFX_OK)
                    status = summary_add(into, &scratch.piece_stats);
            } else if (p->flags & (CHUNK_SUMMARY_ONLY | CHUNK_THINNED_TYPE | CHUNK_THINNED_DEPTH)) {
                status = add_prorated(p, from, to, &scratch, into);
                *approximate = true;
            } else {
                chunk_info info;
                event_cursor cursor;
                status = cursor_on_piece(p, &scratch, &info, &cursor);
                if (status == OTFX_OK)
                    status = chunk_walk_summary(&cursor, trace->defs, info.begin, info.end, from, to, into,
                                                NULL, NULL);
            }
        }
    }
    if (status == OTFX_OK && open_chunk_overlaps(trace, from, to)) {
        event_cursor cursor;
        cursor_on_open_chunk(trace, &scratch, &cursor);
        status = chunk_walk_summary(&cursor, trace->defs, trace->open_begin, trace->last_time, from, to, into,
                                    NULL, NULL);
    }
    scratch_close(&scratch);
    return status;
}

otfx_status otfx_query_profile(otfx_trace *trace, otfx_time from, otfx_time to, otfx_profile *into)
{
    if (!trace || !into)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_query_profile: NULL argument");
    summary window;
    summary_init(&window);
    bool approximate = false;
    pthread_rwlock_rdlock(&trace->lock);
    otfx_status status = from < to ? window_statistics(trace, from, to, &window, &approximate) : OTFX_OK;
    pthread_rwlock_unlock(&trace->lock);
    if (status == OTFX_OK)
        status = profile_add_summary(into, &window, approximate);
    summary_free(&window);
    return status;
}

otfx_status otfx_query_messages(otfx_trace *trace, otfx_time from, otfx_time to, otfx_peer_stats *peers,
                                size_t *count)
{
    if (!trace || !count || (*count && !peers))
        return otfx_fail(OTFX_ERR_INVALID, "otfx_query_messages: NULL argument");
    summary window;
    summary_init(&window);
    bool approximate = false;
    pthread_rwlock_rdlock(&trace->lock);
    otfx_status status = from < to ? window_statistics(trace, from, to, &window, &approximate) : OTFX_OK;
    pthread_rwlock_unlock(&trace->lock);
    if (status == OTFX_OK) {
        size_t capacity = *count;
        size_t written = window.peer_count < capacity ? window.peer_count : capacity;
        if (written)
            memcpy(peers, window.peers, written * sizeof *peers);
        *count = window.peer_count;
        if (window.peer_count > capacity)
            status = otfx_fail(OTFX_ERR_INVALID, "otfx_query_messages: %u peers do not fit into %zu entries",
                               window.peer_count, capacity);
    }
    summary_free(&window);
    return status;
}

/* ---- metric profiles ---- */

struct otfx_metric_profile {
    metric_stats stats; /* entries only */
    bool approximate;
};

otfx_metric_profile *otfx_metric_profile_create(void)
{
    otfx_metric_profile *profile = calloc(1, sizeof *profile);
    if (!profile)
        otfx_fail(OTFX_ERR_NOMEM, "out of memory creating a metric profile");
    return profile;
}

void otfx_metric_profile_destroy(otfx_metric_profile *profile)
{
    if (profile)
        metric_stats_free(&profile->stats);
    free(profile);
}

size_t otfx_metric_profile_size(const otfx_metric_profile *profile)
{
    return profile ? profile->stats.entry_count : 0;
}

bool otfx_metric_profile_entry_at(const otfx_metric_profile *profile, size_t index,
                                  otfx_metric_profile_entry *out)
{
    if (!profile || !out || index >= profile->stats.entry_count)
        return false;
    const metric_entry *e = &profile->stats.entries[index];
    *out = (otfx_metric_profile_entry){.region = e->region,
                                       .metric = e->metric,
                                       .visits = e->totals.visits,
                                       .inclusive = e->totals.inclusive,
                                       .inclusive_ns = e->totals.inclusive_ns,
                                       .exclusive_visits = e->totals.exclusive_visits,
                                       .exclusive = e->totals.exclusive,
                                       .exclusive_ns = e->totals.exclusive_ns};
    return true;
}

bool otfx_metric_profile_approximate(const otfx_metric_profile *profile)
{
    return profile && (profile->approximate || profile->stats.incomplete);
}

/* The visits entered in a stored piece the window's edges cut, from its events: its context's regions
 * have no values, so only visits wholly inside the piece count (those entered before are its spans). */
static otfx_status metric_walk_piece(const piece *p, query_scratch *scratch, metric_walk *walk)
{
    chunk_info info;
    event_cursor cursor;
    otfx_status status = cursor_on_piece(p, scratch, &info, &cursor);
    if (status == OTFX_OK)
        status = metric_walk_reset(walk, cursor.frames, cursor.depth, 0);
    if (status != OTFX_OK)
        return status;
    otfx_event event;
    int next;
    while ((next = event_cursor_next(&cursor, &event)) > 0)
        metric_walk_event(walk, &event);
    /* a LEAVE reading values at the piece's end is a span of the next piece */
    if (next < 0)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor.index);
    return OTFX_OK;
}

static otfx_status metric_piece(const piece *p, otfx_time from, otfx_time to, query_scratch *scratch,
                                metric_walk *walk, otfx_metric_profile *into)
{
    otfx_status status = read_piece_summary(p, &scratch->piece_stats);
    if (status != OTFX_OK)
        return status;
    const metric_stats *stats = &scratch->piece_stats.metrics;
    for (uint32_t i = 0; i < stats->span_count && status == OTFX_OK; i++) {
        const metric_span *span = &stats->spans[i];
        if (span->enter >= from && span->leave < to)
            status = metric_stats_add_span_as_visit(&into->stats, span);
    }
    into->stats.incomplete |= stats->incomplete;
    if (status != OTFX_OK)
        return status;
    if (piece_inside(p->begin, p->end, from, to))
        return metric_stats_add_entries_scaled(&into->stats, stats, 1, 1);
    if (p->flags & (CHUNK_SUMMARY_ONLY | CHUNK_THINNED_TYPE | CHUNK_THINNED_DEPTH)) {
        if (!stats->entry_count)
            return OTFX_OK;
        into->approximate = true;
        if (p->end == p->begin)
            return metric_stats_add_entries_scaled(&into->stats, stats, p->begin >= from && p->begin < to, 1);
        return metric_stats_add_entries_scaled(&into->stats, stats, time_overlap(p->begin, p->end, from, to),
                                               p->end - p->begin);
    }
    return metric_walk_piece(p, scratch, walk);
}

static otfx_status metric_window(const otfx_trace *trace, otfx_time from, otfx_time to,
                                 otfx_metric_profile *into)
{
    query_scratch scratch;
    otfx_status status = scratch_open(trace, &scratch);
    if (status != OTFX_OK)
        return status;
    metric_walk walk;
    metric_walk_init(&walk);
    metric_stats *target = &into->stats;
    uint32_t scanned = trace->metric_mark_scanned; /* a mark defined since the last seal counts too */
    walk.mark = metric_mark_lookup(trace->defs, trace->metric_mark, &scanned);
    walk.from = from;
    walk.to = to;
    walk.into = target;
    for (uint32_t s = 0; s < trace->segment_count && status == OTFX_OK; s++) {
        const segment *seg = trace->segments[s];
        if (!piece_overlaps(seg->begin, seg->end, from, to))
            continue;
        for (uint32_t i = 0; i < seg->count && status == OTFX_OK; i++) {
            const piece *p = &seg->pieces[i];
            if (piece_overlaps(p->begin, p->end, from, to))
                status = metric_piece(p, from, to, &scratch, &walk, into);
        }
    }
    if (status == OTFX_OK && open_chunk_overlaps(trace, from, to)) {
        /* the open chunk has no statistics yet: walk it from the state at its start, so visits entered
         * before it count too */
        event_cursor cursor;
        cursor_on_open_chunk(trace, &scratch, &cursor);
        status = trace_metric_walk_start(trace, &walk, target);
        walk.from = from;
        walk.to = to;
        otfx_event event;
        int next = 0;
        while (status == OTFX_OK && (next = event_cursor_next(&cursor, &event)) > 0)
            metric_walk_event(&walk, &event);
        metric_walk_finish(&walk);
        if (status == OTFX_OK && next < 0)
            status = otfx_fail(OTFX_ERR_CORRUPT, "the open chunk is malformed at event %u", cursor.index);
    }
    if (status == OTFX_OK && walk.failed)
        status = otfx_fail(OTFX_ERR_NOMEM, "out of memory computing a metric profile");
    metric_walk_free(&walk);
    scratch_close(&scratch);
    return status;
}

otfx_status otfx_query_metric_profile(otfx_trace *trace, otfx_time from, otfx_time to,
                                      otfx_metric_profile *into)
{
    if (!trace || !into)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_query_metric_profile: NULL argument");
    if (from >= to)
        return OTFX_OK;
    /* A profile of its own first, so that a failure leaves `into` as it was. */
    otfx_metric_profile mine = {.approximate = false};
    metric_stats_init(&mine.stats);
    pthread_rwlock_rdlock(&trace->lock);
    otfx_status status = metric_window(trace, from, to, &mine);
    pthread_rwlock_unlock(&trace->lock);
    if (status == OTFX_OK)
        status = metric_stats_add_entries_scaled(&into->stats, &mine.stats, 1, 1);
    if (status == OTFX_OK)
        into->approximate |= mine.approximate;
    metric_stats_free(&mine.stats);
    return status;
}

/* After a trace's lock was released and taken again, the position of the first piece after the one read
 * last (pieces are in time order; one removed meanwhile is simply not there any more): segment
 * trace->segment_count when there is none. */
static void piece_after(const otfx_trace *trace, otfx_time last_begin, otfx_time last_end,
                        uint32_t *at_segment, uint32_t *index)
{
    *at_segment = trace->segment_count;
    *index = 0;
    for (uint32_t s = 0; s < trace->segment_count; s++) {
        const segment *seg = trace->segments[s];
        if (seg->count == 0 || seg->pieces[seg->count - 1].begin < last_begin)
            continue;
        for (uint32_t i = 0; i < seg->count; i++) {
            const piece *p = &seg->pieces[i];
            if (p->begin > last_begin || (p->begin == last_begin && p->end > last_end)) {
                *at_segment = s;
                *index = i;
                return;
            }
        }
    }
}

/* Lets a waiting append in: releases the trace's read lock and takes it again. */
static void yield_lock(otfx_trace *trace)
{
    pthread_rwlock_unlock(&trace->lock);
    pthread_rwlock_rdlock(&trace->lock);
}

/* ---- timeline ---- */

typedef struct timeline {
    const otfx_trace *trace;
    otfx_time from, to;
    uint32_t count;
    otfx_timeline_bin *bins;
    uint32_t current_bin;                 /* the bin `region_time` is about */
    otfx_time current_begin, current_end; /* its range */
    /* Exclusive time per region in the current bin, dense by region (the regions defined when the
     * query started: stored events use no others), with the regions touched so clearing a bin costs
     * what filling it did. */
    otfx_time *region_time;
    otfx_ref *touched;
    uint32_t touched_count, region_count;
    /* The region added to last and its role. */
    otfx_ref cached_region;
    otfx_region_role cached_role;
} timeline;

/* value * numerator / denominator, in 64 bits when the product fits (the common case). */
static uint64_t mul_div(uint64_t value, uint64_t numerator, uint64_t denominator)
{
    if (numerator == 0 || value <= UINT64_MAX / numerator)
        return value * numerator / denominator;
    return (uint64_t)((unsigned __int128)value * numerator / denominator);
}

/* Bin k starts at from + floor(k * width / count). */
static otfx_time bin_start(const timeline *line, uint32_t bin)
{
    return line->from + mul_div(line->to - line->from, bin, line->count);
}

/* The bin holding `time` (from <= time < to): the last one starting at or before it. The estimate
 * can be off by one either way through rounding. */
static uint32_t bin_of(const timeline *line, otfx_time time)
{
    uint32_t bin = (uint32_t)mul_div(time - line->from, line->count, line->to - line->from);
    if (bin >= line->count)
        bin = line->count - 1;
    while (bin > 0 && bin_start(line, bin) > time)
        bin--;
    while (bin + 1 < line->count && bin_start(line, bin + 1) <= time)
        bin++;
    return bin;
}

/* Closes the current bin: its dominant region is the one with the most exclusive time. */
static void finish_bin(timeline *line)
{
    otfx_time best = 0;
    otfx_ref dominant = OTFX_REF_NONE;
    for (uint32_t i = 0; i < line->touched_count; i++) {
        otfx_ref region = line->touched[i];
        otfx_time time = line->region_time[region];
        if (time > best || (time == best && time > 0 && region < dominant)) {
            best = time;
            dominant = region;
        }
        line->region_time[region] = 0;
    }
    line->bins[line->current_bin].dominant_region = dominant;
    line->touched_count = 0;
}

static void enter_bin(timeline *line, uint32_t bin)
{
    finish_bin(line);
    line->current_bin = bin;
    line->current_begin = bin_start(line, bin);
    line->current_end = bin + 1 < line->count ? bin_start(line, bin + 1) : line->to;
}

/* Contributions arrive in time order, hence in bin order. */
static void add_to_bin(timeline *line, uint32_t bin, otfx_ref region, otfx_time exclusive)
{
    if (exclusive == 0)
        return;
    if (bin != line->current_bin)
        enter_bin(line, bin);
    if (region != line->cached_region) {
        line->cached_region = region;
        line->cached_role = defs_region_role_or_user(line->trace->defs, region);
    }
    line->bins[bin].role_time[line->cached_role] += exclusive;
    if (region >= line->region_count)
        return; /* only in damaged data: no candidate for the dominant region */
    if (line->region_time[region] == 0)
        line->touched[line->touched_count++] = region;
    line->region_time[region] += exclusive;
}

/* Time in `region` over [begin, end), split at bin edges. */
static void add_interval(timeline *line, otfx_ref region, otfx_time begin, otfx_time end)
{
    if (begin < line->from)
        begin = line->from;
    if (end > line->to)
        end = line->to;
    while (begin < end) {
        /* Mostly the interval lies in the bin of the previous one. */
        if (begin < line->current_begin || begin >= line->current_end)
            enter_bin(line, bin_of(line, begin));
        otfx_time part_end = end < line->current_end ? end : line->current_end;
        uint32_t bin = line->current_bin;
        add_to_bin(line, bin, region, part_end - begin);
        begin = part_end;
    }
}

/* A piece's statistics spread over the bins its range covers, in proportion to the overlap. */
static void add_spread(timeline *line, otfx_time begin, otfx_time end, const summary *stats, bool reduced)
{
    otfx_time low = begin > line->from ? begin : line->from, high = end < line->to ? end : line->to;
    if (low >= high)
        return;
    for (uint32_t bin = bin_of(line, low); bin < line->count && bin_start(line, bin) < high; bin++) {
        otfx_time bin_end = bin + 1 < line->count ? bin_start(line, bin + 1) : line->to;
        otfx_time share = time_overlap(begin, end, bin_start(line, bin), bin_end);
        if (reduced)
            line->bins[bin].reduced_time += share;
        for (uint32_t i = 0; i < stats->region_count; i++) {
            if (stats->regions[i].region != OTFX_REF_NONE)
                add_to_bin(line, bin, stats->regions[i].region,
                           summary_scale_u64(stats->regions[i].exclusive, share, end - begin));
        }
    }
}

/* Decodes a piece and adds the time between its events to the region on top of the stack. */
static otfx_status add_decoded(timeline *line, event_cursor *cursor, otfx_time begin, otfx_time end)
{
    otfx_time now = begin;
    otfx_event event;
    int next;
    while ((next = event_cursor_next(cursor, &event)) > 0 && now < line->to) {
        otfx_ref top = OTFX_REF_NONE;
        if (event.type == OTFX_EV_LEAVE)
            top = event_cursor_left(cursor)->region;
        else if (event.type == OTFX_EV_ENTER && cursor->depth >= 2)
            top = cursor->frames[cursor->depth - 2].region;
        else if (event.type != OTFX_EV_ENTER && cursor->depth >= 1)
            top = cursor->frames[cursor->depth - 1].region;
        if (top != OTFX_REF_NONE)
            add_interval(line, top, now, event.time);
        now = event.time;
    }
    if (next < 0)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor->index);
    if (now < line->to && cursor->depth > 0)
        add_interval(line, cursor->frames[cursor->depth - 1].region, now, end);
    return OTFX_OK;
}

static otfx_status timeline_piece(timeline *line, const piece *p, query_scratch *scratch, bool *decoded)
{
    *decoded = false;
    if (!piece_overlaps(p->begin, p->end, line->from, line->to))
        return OTFX_OK;
    bool one_bin = piece_inside(p->begin, p->end, line->from, line->to) &&
                   bin_of(line, p->begin) == bin_of(line, p->end);
    bool summary_only = p->flags & CHUNK_SUMMARY_ONLY;
    if (one_bin || (p->flags & (CHUNK_SUMMARY_ONLY | CHUNK_THINNED_TYPE | CHUNK_THINNED_DEPTH))) {
        otfx_status status = read_piece_summary(p, &scratch->piece_stats);
        if (status != OTFX_OK)
            return status;
        if (p->begin == p->end)
            return OTFX_OK; /* an instant holds no time */
        add_spread(line, p->begin, p->end, &scratch->piece_stats, summary_only);
        return OTFX_OK;
    }
    chunk_info info;
    event_cursor cursor;
    otfx_status status = cursor_on_piece(p, scratch, &info, &cursor);
    if (status != OTFX_OK)
        return status;
    *decoded = true;
    return add_decoded(line, &cursor, info.begin, info.end);
}

otfx_status otfx_query_timeline(otfx_trace *trace, otfx_time from, otfx_time to, uint32_t count,
                                otfx_timeline_bin *bins)
{
    return otfx_query_timeline_yielding(trace, from, to, count, bins, 0);
}

otfx_status otfx_query_timeline_yielding(otfx_trace *trace, otfx_time from, otfx_time to, uint32_t count,
                                         otfx_timeline_bin *bins, uint32_t chunks_per_lock)
{
    if (!trace || !bins || count == 0 || from >= to)
        return otfx_fail(OTFX_ERR_INVALID,
                         "otfx_query_timeline: needs a trace, bins, count > 0 and from < to");
    memset(bins, 0, sizeof *bins * count);
    for (uint32_t i = 0; i < count; i++)
        bins[i].dominant_region = OTFX_REF_NONE;
    timeline line = {.trace = trace,
                     .from = from,
                     .to = to,
                     .count = count,
                     .bins = bins,
                     .cached_region = OTFX_REF_NONE,
                     .region_count = otfx_defs_count_regions(trace->defs)};
    line.current_begin = from;
    line.current_end = count > 1 ? bin_start(&line, 1) : to;
    line.region_time = calloc((size_t)line.region_count + 1, sizeof *line.region_time);
    line.touched = malloc(((size_t)line.region_count + 1) * sizeof *line.touched);
    query_scratch scratch;
    otfx_status status = line.region_time && line.touched
                             ? scratch_open(trace, &scratch)
                             : otfx_fail(OTFX_ERR_NOMEM, "out of memory computing a timeline");
    if (status != OTFX_OK) {
        free(line.region_time);
        free(line.touched);
        return status;
    }
    pthread_rwlock_rdlock(&trace->lock);
    uint32_t decoded_at_lock = 0;
    for (uint32_t s = 0; s < trace->segment_count && status == OTFX_OK; s++) {
        const segment *seg = trace->segments[s];
        if (!piece_overlaps(seg->begin, seg->end, from, to))
            continue;
        for (uint32_t i = 0; i < seg->count && status == OTFX_OK; i++) {
            bool decoded;
            status = timeline_piece(&line, &seg->pieces[i], &scratch, &decoded);
            decoded_at_lock += decoded;
            if (chunks_per_lock && decoded_at_lock >= chunks_per_lock && status == OTFX_OK) {
                /* let a waiting append in; the timeline so far carries over */
                const otfx_time last_begin = seg->pieces[i].begin, last_end = seg->pieces[i].end;
                yield_lock(trace);
                decoded_at_lock = 0;
                uint32_t next_segment, next_index;
                piece_after(trace, last_begin, last_end, &next_segment, &next_index);
                if (next_segment >= trace->segment_count) {
                    s = trace->segment_count; /* nothing after it: on to the open chunk */
                    break;
                }
                s = next_segment;
                seg = trace->segments[s];
                i = next_index - 1; /* the loop's i++ comes next (next_index 0: wraps to 0) */
            }
        }
    }
    if (status == OTFX_OK && open_chunk_overlaps(trace, from, to)) {
        event_cursor cursor;
        cursor_on_open_chunk(trace, &scratch, &cursor);
        status = add_decoded(&line, &cursor, trace->open_begin, trace->last_time);
        if (status == OTFX_OK && trace->open_refused) {
            /* `stop` is refusing these events: they count as reduced, like the stop piece before. */
            otfx_time low = trace->open_begin > from ? trace->open_begin : from;
            otfx_time high = trace->last_time < to ? trace->last_time : to;
            for (otfx_time t = low; t < high;) {
                uint32_t bin = bin_of(&line, t);
                otfx_time bin_end = bin + 1 < count ? bin_start(&line, bin + 1) : to;
                otfx_time part_end = high < bin_end ? high : bin_end;
                bins[bin].reduced_time += part_end - t;
                t = part_end;
            }
        }
    }
    pthread_rwlock_unlock(&trace->lock);
    if (status == OTFX_OK)
        finish_bin(&line);
    free(line.region_time);
    free(line.touched);
    scratch_close(&scratch);
    return status;
}

/* ---- events ---- */

typedef struct event_sink {
    otfx_event_fn fn;
    void *user;
    bool done;          /* the callback asked to stop */
    uint64_t delivered; /* events given to the callback */
    bool context;
    call_frame *stack; /* with context: what the consumer has been told is open */
    uint32_t depth;
    otfx_time last_time;
    /* With context: ENTERs still to report, in enter-time order, each just before the first event
     * that is later, so the output stays in time order. */
    call_frame *pending;
    uint32_t pending_count, pending_next;
} event_sink;

/* With context: what the consumer has open after `event`. */
static inline void sink_track(event_sink *sink, const otfx_event *event)
{
    if (event->type == OTFX_EV_ENTER && sink->depth < OTFX_MAX_CALL_DEPTH)
        sink->stack[sink->depth++] = (call_frame){event->u.region.region, 0, event->time, 0};
    else if (event->type == OTFX_EV_LEAVE && sink->depth > 0)
        sink->depth--;
}

static void deliver(event_sink *sink, const otfx_event *event)
{
    if (sink->done)
        return;
    if (sink->context)
        sink_track(sink, event);
    if (event->time > sink->last_time)
        sink->last_time = event->time;
    sink->delivered++;
    if (sink->fn(event, sink->user) != 0)
        sink->done = true;
}

static void flush_pending(event_sink *sink, otfx_time until)
{
    while (sink->pending_next < sink->pending_count && sink->pending[sink->pending_next].enter <= until &&
           !sink->done) {
        const call_frame *frame = &sink->pending[sink->pending_next++];
        otfx_event event = {.time = frame->enter, .type = OTFX_EV_ENTER};
        event.u.region.region = frame->region;
        deliver(sink, &event);
    }
}

/* Before a range without detail: leaves (at `when`) what the consumer has open but the next detail
 * has not, and queues ENTERs of what the next detail has open beyond that. */
static void prepare_gap(event_sink *sink, const call_frame *next_context, uint32_t next_depth, otfx_time when)
{
    uint32_t common = 0;
    while (common < sink->depth && common < next_depth &&
           sink->stack[common].region == next_context[common].region &&
           sink->stack[common].enter == next_context[common].enter)
        common++;
    while (sink->depth > common && !sink->done) {
        otfx_event event = {.time = when > sink->last_time ? when : sink->last_time, .type = OTFX_EV_LEAVE};
        event.u.region.region = sink->stack[sink->depth - 1].region;
        deliver(sink, &event);
    }
    sink->pending_count = 0;
    sink->pending_next = 0;
    for (uint32_t i = common; i < next_depth; i++)
        sink->pending[sink->pending_count++] = next_context[i];
}

/* Reduction records of a piece (one per strategy that removed events from it). */
static void deliver_records(event_sink *sink, const summary *stats, otfx_time begin, otfx_time end,
                            otfx_time from)
{
    otfx_time when = begin > from ? begin : from;
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT && !sink->done; strategy++) {
        if (stats->removed[strategy] == 0)
            continue;
        flush_pending(sink, when);
        otfx_event event = {.time = when, .type = OTFX_EV_REDUCTION};
        event.u.reduction.strategy = (otfx_reduction)strategy;
        event.u.reduction.begin = begin;
        event.u.reduction.end = end;
        event.u.reduction.events_removed = stats->removed[strategy];
        deliver(sink, &event);
    }
}

/* Events of one cursor inside [from, to); *past_end once an event at or after `to` shows up. */
static otfx_status deliver_cursor(event_sink *sink, event_cursor *cursor, otfx_time from, otfx_time to,
                                  bool *past_end)
{
    otfx_event event;
    int next = 0;
    flush_pending(sink, OTFX_TIME_MAX);
    while (!sink->done && (next = event_cursor_next(cursor, &event)) > 0) {
        if (event.time >= to) {
            *past_end = true;
            return OTFX_OK;
        }
        if (event.time >= from)
            deliver(sink, &event);
    }
    if (!sink->done && next < 0)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor->index);
    return OTFX_OK;
}

/* The pieces of a window in time order, then the open chunk (unless `stop` refuses it). */
typedef struct piece_walk {
    const otfx_trace *trace;
    otfx_time from, to;
    uint32_t segment, index;
    bool open_done;
} piece_walk;

/* The next piece overlapping the window; NULL and *open_chunk for the open chunk; false at the end. */
static bool walk_next(piece_walk *walk, const piece **next, bool *open_chunk)
{
    const otfx_trace *trace = walk->trace;
    for (; walk->segment < trace->segment_count; walk->segment++, walk->index = 0) {
        const segment *seg = trace->segments[walk->segment];
        if (walk->index == 0 && !piece_overlaps(seg->begin, seg->end, walk->from, walk->to))
            continue;
        while (walk->index < seg->count) {
            const piece *p = &seg->pieces[walk->index++];
            if (p->begin >= walk->to)
                return false;
            if (piece_overlaps(p->begin, p->end, walk->from, walk->to)) {
                *next = p;
                *open_chunk = false;
                return true;
            }
        }
    }
    if (walk->open_done)
        return false;
    walk->open_done = true;
    if (trace->open_refused || !open_chunk_overlaps(trace, walk->from, walk->to))
        return false;
    *next = NULL;
    *open_chunk = true;
    return true;
}

/* A cursor on a detail piece or the open chunk. */
static otfx_status cursor_on(const otfx_trace *trace, const piece *p, bool open_chunk, query_scratch *scratch,
                             event_cursor *cursor)
{
    if (open_chunk) {
        cursor_on_open_chunk(trace, scratch, cursor);
        return OTFX_OK;
    }
    chunk_info info;
    return cursor_on_piece(p, scratch, &info, cursor);
}

/* The calling context at the start of the next detail after the walk's position (*found false if
 * only reduced ranges follow); the walk itself does not move. */
static otfx_status next_detail_context(piece_walk walk, query_scratch *scratch, call_frame *frames,
                                       uint32_t *depth, bool *found)
{
    const piece *p;
    bool open_chunk;
    *found = false;
    while (walk_next(&walk, &p, &open_chunk)) {
        if (!open_chunk && (p->flags & CHUNK_SUMMARY_ONLY))
            continue;
        event_cursor cursor;
        otfx_status status = cursor_on(walk.trace, p, open_chunk, scratch, &cursor);
        if (status != OTFX_OK)
            return status;
        memcpy(frames, cursor.frames, cursor.depth * sizeof *frames);
        *depth = cursor.depth;
        *found = true;
        break;
    }
    return OTFX_OK;
}

/* The regions open at the window's start: the stack before the first event at or after `from` in
 * the first detail that reaches `from`. */
static otfx_status initial_context(piece_walk walk, query_scratch *scratch, call_frame *frames,
                                   uint32_t *depth)
{
    const piece *p;
    bool open_chunk;
    *depth = 0;
    while (walk_next(&walk, &p, &open_chunk)) {
        if (!open_chunk && (p->flags & CHUNK_SUMMARY_ONLY))
            continue;
        event_cursor cursor;
        otfx_status status = cursor_on(walk.trace, p, open_chunk, scratch, &cursor);
        if (status != OTFX_OK)
            return status;
        otfx_event event;
        int next;
        while ((next = event_cursor_next(&cursor, &event)) > 0 && event.time < walk.from)
            continue;
        if (next < 0)
            return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor.index);
        uint32_t open = cursor.depth;
        if (next > 0 && event.type == OTFX_EV_ENTER)
            open--; /* that ENTER belongs to the window */
        memcpy(frames, cursor.frames, open * sizeof *frames);
        if (next > 0 && event.type == OTFX_EV_LEAVE)
            frames[open++] = *event_cursor_left(&cursor); /* that LEAVE closes a region open at the start */
        *depth = open;
        return OTFX_OK;
    }
    return OTFX_OK;
}

static otfx_status query_events_locked(otfx_trace *trace, otfx_time from, otfx_time to, event_sink *sink,
                                       query_scratch *scratch, call_frame *frames, uint64_t events_per_lock)
{
    piece_walk walk = {trace, from, to, 0, 0, false};
    uint64_t delivered_at_lock = 0;
    otfx_status status = OTFX_OK;
    if (sink->context) {
        status = initial_context(walk, scratch, sink->pending, &sink->pending_count);
        if (status != OTFX_OK)
            return status;
    }
    bool seen_detail = false, gap_prepared = false, past_end = false;
    const piece *p;
    bool open_chunk;
    while (status == OTFX_OK && !sink->done && !past_end && walk_next(&walk, &p, &open_chunk)) {
        if (!open_chunk) {
            status = read_piece_summary(p, &scratch->piece_stats);
            if (status != OTFX_OK)
                break;
            if ((p->flags & CHUNK_SUMMARY_ONLY) && sink->context && seen_detail && !gap_prepared) {
                uint32_t depth;
                bool found;
                status = next_detail_context(walk, scratch, frames, &depth, &found);
                if (status != OTFX_OK)
                    break;
                if (found)
                    prepare_gap(sink, frames, depth, p->begin > from ? p->begin : from);
                gap_prepared = true;
            }
            deliver_records(sink, &scratch->piece_stats, p->begin, p->end, from);
            if (p->flags & CHUNK_SUMMARY_ONLY)
                continue;
        }
        event_cursor cursor;
        status = cursor_on(trace, p, open_chunk, scratch, &cursor);
        if (status == OTFX_OK)
            status = deliver_cursor(sink, &cursor, from, to, &past_end);
        seen_detail = true;
        gap_prepared = false;
        if (events_per_lock && !open_chunk && sink->delivered - delivered_at_lock >= events_per_lock) {
            /* let a waiting append in; the sink's state (what the consumer was told) carries over */
            const otfx_time last_begin = p->begin, last_end = p->end;
            yield_lock(trace);
            piece_after(trace, last_begin, last_end, &walk.segment, &walk.index);
            delivered_at_lock = sink->delivered;
        }
    }
    return status;
}

otfx_status otfx_query_events(otfx_trace *trace, otfx_time from, otfx_time to, bool context, otfx_event_fn fn,
                              void *user)
{
    return otfx_query_events_yielding(trace, from, to, context, fn, user, 0);
}

otfx_status otfx_query_events_yielding(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                       otfx_event_fn fn, void *user, uint64_t events_per_lock)
{
    if (!trace || !fn)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_query_events: NULL argument");
    if (from >= to)
        return OTFX_OK;
    query_scratch scratch;
    otfx_status status = scratch_open(trace, &scratch);
    if (status != OTFX_OK)
        return status;
    event_sink sink = {.fn = fn, .user = user, .context = context, .last_time = from};
    call_frame *frames = NULL;
    if (context) {
        sink.stack = malloc(sizeof *sink.stack * OTFX_MAX_CALL_DEPTH);
        sink.pending = malloc(sizeof *sink.pending * OTFX_MAX_CALL_DEPTH);
        frames = malloc(sizeof *frames * OTFX_MAX_CALL_DEPTH);
        if (!sink.stack || !sink.pending || !frames)
            status = otfx_fail(OTFX_ERR_NOMEM, "out of memory for a query");
    }
    if (status == OTFX_OK) {
        pthread_rwlock_rdlock(&trace->lock);
        status = query_events_locked(trace, from, to, &sink, &scratch, frames, events_per_lock);
        pthread_rwlock_unlock(&trace->lock);
    }
    free(sink.stack);
    free(sink.pending);
    free(frames);
    scratch_close(&scratch);
    return status;
}

/* ---- readers ---- */

typedef enum reader_position {
    READER_START,    /* nothing read yet: the context at the window's start comes first */
    READER_BETWEEN,  /* before the walk's next piece */
    READER_IN_PIECE, /* inside the sealed piece `entered`, its cursor kept */
    READER_IN_OPEN,  /* inside the open chunk: its cursor cannot be kept, the appender changes it */
    READER_TAIL,     /* everything held was read; more may be appended */
    READER_DONE      /* an event at or after `to` was met, or reading failed */
} reader_position;

/* A sealed chunk as the reader met it: the same range, address, size and checksum is the same chunk. */
typedef struct piece_identity {
    otfx_time begin, end;
    const uint8_t *blob;
    uint32_t blob_size, checksum;
    uint8_t flags;
} piece_identity;

struct otfx_trace_reader {
    otfx_trace *trace;
    otfx_time from, to;
    query_scratch scratch;
    event_sink sink;    /* what the consumer was told: its stack, the ENTERs still to report */
    call_frame *frames; /* with context: the next detail's context at a range without detail */
    reader_position position;
    otfx_status failure;
    piece_walk walk;
    uint64_t epoch; /* the trace's layout_epoch when the position was last valid */
    event_cursor cursor;
    /* The last piece entered (its reduction records delivered); the open chunk counts as
     * [open_begin, OTFX_TIME_MAX]. */
    bool entered_any;
    piece_identity entered;
    /* The walk was moved (a re-seek): pieces up to the entered one are met again, and only those after
     * it deliver their records. */
    bool repositioned;
    otfx_time records_until; /* the latest end of a piece whose reduction records were delivered */
    bool seen_detail, gap_prepared;
    /* The stored events passed (delivered, or skipped for lying before `from`): the latest time and how
     * many at that time. A re-seek skips them again; skipped_at_time counts the ones met again. */
    bool passed_any, skipping;
    otfx_time passed_time;
    uint64_t passed_at_time, skipped_at_time;
    /* Events made while the caller's array was full (context ENTERs, LEAVEs before a range without
     * detail, reduction records): handed out first next time. */
    otfx_event *overflow;
    size_t overflow_count, overflow_next, overflow_capacity;
    /* The caller's array during a call. */
    otfx_event *out;
    size_t out_count, out_capacity;
};

static int reader_take(const otfx_event *event, void *user)
{
    otfx_trace_reader *r = user;
    if (r->out_count < r->out_capacity && r->overflow_next == r->overflow_count) {
        r->out[r->out_count++] = *event;
        return 0;
    }
    if (r->overflow_count == r->overflow_capacity) {
        size_t capacity = r->overflow_capacity ? 2 * r->overflow_capacity : 64;
        otfx_event *grown = realloc(r->overflow, capacity * sizeof *grown);
        if (!grown) {
            r->failure = otfx_fail(OTFX_ERR_NOMEM, "out of memory in a trace reader");
            return 1;
        }
        r->overflow = grown;
        r->overflow_capacity = capacity;
    }
    r->overflow[r->overflow_count++] = *event;
    return 0;
}

static piece_identity identity_of(const piece *p)
{
    return (piece_identity){p->begin, p->end, p->blob, p->blob_size, chunk_stored_checksum(p->blob),
                            p->flags};
}

static bool same_piece(const piece *p, const piece_identity *id)
{
    return p->begin == id->begin && p->end == id->end && p->blob == id->blob &&
           p->blob_size == id->blob_size && p->flags == id->flags &&
           chunk_stored_checksum(p->blob) == id->checksum;
}

/* Whether the walk meets a piece [begin, end] for the first time: it comes after the last one entered. */
static bool after_entered(const otfx_trace_reader *r, otfx_time begin, otfx_time end)
{
    return !r->entered_any || begin > r->entered.begin || (begin == r->entered.begin && end > r->entered.end);
}

/* Whether a piece lies wholly before what the reader passed (a re-seek starts after it). */
static bool piece_passed(const otfx_trace_reader *r, const piece *p)
{
    if (r->passed_any)
        return p->end < r->passed_time;
    return r->entered_any &&
           (p->begin < r->entered.begin || (p->begin == r->entered.begin && p->end < r->entered.end));
}

/* The position of the chunk the reader was inside, if the trace still holds it unchanged. */
static bool find_entered(otfx_trace_reader *r)
{
    const otfx_trace *trace = r->trace;
    for (uint32_t s = 0; s < trace->segment_count; s++) {
        const segment *seg = trace->segments[s];
        if (seg->count == 0 || seg->pieces[seg->count - 1].end < r->entered.begin)
            continue;
        for (uint32_t i = 0; i < seg->count; i++) {
            const piece *p = &seg->pieces[i];
            if (p->begin > r->entered.begin)
                return false;
            if (same_piece(p, &r->entered)) {
                r->walk.segment = s;
                r->walk.index = i + 1;
                r->walk.open_done = false;
                return true;
            }
        }
    }
    return false;
}

/* Starts the walk again at the first piece not wholly passed; its stored events up to the last one
 * passed are skipped. */
static void reader_reseek(otfx_trace_reader *r)
{
    const otfx_trace *trace = r->trace;
    r->walk = (piece_walk){trace, r->from, r->to, trace->segment_count, 0, false};
    for (uint32_t s = 0; s < trace->segment_count; s++) {
        const segment *seg = trace->segments[s];
        if (seg->count == 0 || piece_passed(r, &seg->pieces[seg->count - 1]))
            continue;
        uint32_t i = 0;
        while (piece_passed(r, &seg->pieces[i]))
            i++;
        r->walk.segment = s;
        r->walk.index = i;
        break;
    }
    r->skipping = r->passed_any;
    r->skipped_at_time = 0;
    r->repositioned = true;
    r->position = READER_BETWEEN;
}

/* Brings the position kept since the last call up to date with the trace. */
static otfx_status reader_resume(otfx_trace_reader *r)
{
    otfx_trace *trace = r->trace;
    bool changed = trace->layout_epoch != r->epoch;
    r->epoch = trace->layout_epoch;
    switch (r->position) {
    case READER_START:
        r->walk = (piece_walk){trace, r->from, r->to, 0, 0, false};
        r->position = READER_BETWEEN;
        if (r->sink.context)
            return initial_context(r->walk, &r->scratch, r->sink.pending, &r->sink.pending_count);
        return OTFX_OK;
    case READER_BETWEEN:
        if (changed && r->entered_any && !r->entered.blob)
            reader_reseek(r); /* the open chunk's events may be in a piece now */
        else if (changed && r->entered_any)
            piece_after(trace, r->entered.begin, r->entered.end, &r->walk.segment, &r->walk.index);
        return OTFX_OK;
    case READER_IN_PIECE:
        if (changed && !find_entered(r))
            reader_reseek(r);
        return OTFX_OK;
    case READER_IN_OPEN:
    case READER_TAIL:
        reader_reseek(r);
        return OTFX_OK;
    case READER_DONE:
        return OTFX_OK;
    }
    return OTFX_OK;
}

/* Enters the walk's next piece: its reduction records (and before a range without detail, with
 * context, the LEAVEs and ENTERs to the next detail's stack), then a cursor on its events. *more is
 * false at the walk's end. */
static otfx_status reader_enter_next(otfx_trace_reader *r, bool *more)
{
    const otfx_trace *trace = r->trace;
    const piece *p;
    bool open_chunk;
    *more = walk_next(&r->walk, &p, &open_chunk);
    if (!*more)
        return OTFX_OK;
    event_sink *sink = &r->sink;
    if (open_chunk) {
        r->entered_any = true;
        r->entered = (piece_identity){.begin = trace->open_begin, .end = OTFX_TIME_MAX};
        cursor_on_open_chunk(trace, &r->scratch, &r->cursor);
        r->position = READER_IN_OPEN;
    } else {
        chunk_info info;
        otfx_status status = chunk_parse(p->blob, p->blob_size, true, &info);
        if (status != OTFX_OK)
            return status;
        const bool first_meeting = !r->repositioned || after_entered(r, p->begin, p->end);
        /* `ring` and `time` merge newly dropped detail into the range without detail before it: met
         * again after a re-seek, that range reaches past what the reader passed, and its records must
         * say so from there on, or the events it lost unread would vanish without a word. */
        const otfx_time told_until = r->records_until > sink->last_time ? r->records_until : sink->last_time;
        const bool grown = !first_meeting && (p->flags & CHUNK_SUMMARY_ONLY) && p->end > told_until;
        if (first_meeting || grown) {
            r->repositioned = false;
            status = chunk_read_summary(&info, &r->scratch.piece_stats);
            if (status != OTFX_OK)
                return status;
            if ((p->flags & CHUNK_SUMMARY_ONLY) && sink->context && r->seen_detail && !r->gap_prepared) {
                uint32_t depth;
                bool found;
                status = next_detail_context(r->walk, &r->scratch, r->frames, &depth, &found);
                if (status != OTFX_OK)
                    return status;
                if (found)
                    prepare_gap(sink, r->frames, depth, p->begin > r->from ? p->begin : r->from);
                r->gap_prepared = true;
            }
            /* No earlier than what was delivered: a range rewritten since it was read comes after. */
            otfx_time earliest = sink->last_time > r->from ? sink->last_time : r->from;
            const otfx_time begin = grown && told_until > p->begin ? told_until : p->begin;
            deliver_records(sink, &r->scratch.piece_stats, begin, p->end, earliest);
            if (p->end > r->records_until)
                r->records_until = p->end;
        }
        r->entered_any = true;
        r->entered = identity_of(p);
        if (p->flags & CHUNK_SUMMARY_ONLY) {
            r->position = READER_BETWEEN;
            return r->failure;
        }
        const uint8_t *raw;
        uint32_t depth;
        status = chunk_read_payload(&info, &r->scratch.payload, &raw);
        if (status == OTFX_OK)
            status = chunk_read_context(&info, r->scratch.frames, &depth);
        if (status != OTFX_OK)
            return status;
        event_cursor_init(&r->cursor, info.begin, info.flags & CHUNK_PREDICTED_TIME, raw, info.event_count,
                          raw + info.event_count, info.raw_bytes - info.event_count, r->scratch.frames,
                          depth);
        r->position = READER_IN_PIECE;
    }
    flush_pending(sink, OTFX_TIME_MAX);
    r->seen_detail = true;
    r->gap_prepared = false;
    return r->failure;
}

/* Whether the consumer has open what the cursor has (its region and enter time, frame by frame). */
static bool stack_matches_cursor(const event_sink *sink, const event_cursor *cursor)
{
    if (sink->depth != cursor->depth)
        return false;
    for (uint32_t i = 0; i < sink->depth; i++)
        if (sink->stack[i].region != cursor->frames[i].region ||
            sink->stack[i].enter != cursor->frames[i].enter)
            return false;
    return true;
}

/* Decodes the current chunk's events straight into the caller's array, a batch at a time; what the
 * window or a re-seek leaves out is squeezed out of the batch. */
static otfx_status reader_run_cursor(otfx_trace_reader *r)
{
    event_sink *sink = &r->sink;
    event_cursor *cursor = &r->cursor;
    otfx_event *out = r->out;
    size_t n = r->out_count;
    const size_t capacity = r->out_capacity;
    const otfx_time from = r->from, to = r->to;
    otfx_status status = OTFX_OK;
    bool more = true;
    /* The cursor keeps the calling stack anyway: while the consumer has open what the cursor has, a
     * batch handed out whole leaves the consumer with the cursor's stack, taken after the batch
     * instead of tracked event by event (both apply the same ENTERs and LEAVEs: the cursor hands out
     * none it rejects). */
    bool follow_cursor = sink->context && stack_matches_cursor(sink, cursor);
    while (more && n < capacity) {
        int end;
        const size_t got = event_cursor_decode(cursor, out + n, capacity - n, &end);
        size_t kept = n;
        /* A chunk's events are in time order: when its first lies at or after `from` and its last
         * before `to`, and nothing is skipped, the batch stays whole and only its end moves the
         * position passed. */
        if (got > 0 && !r->skipping && out[n].time >= from && out[n + got - 1].time < to) {
            const otfx_time last = out[n + got - 1].time;
            size_t at_last = 1;
            while (at_last < got && out[n + got - 1 - at_last].time == last)
                at_last++;
            if (at_last == got && r->passed_any && r->passed_time == last) {
                r->passed_at_time += at_last;
            } else {
                r->passed_any = true;
                r->passed_time = last;
                r->passed_at_time = at_last;
            }
            if (follow_cursor) {
                for (uint32_t i = 0; i < cursor->depth; i++)
                    sink->stack[i] = (call_frame){cursor->frames[i].region, 0, cursor->frames[i].enter, 0};
                sink->depth = cursor->depth;
            } else if (sink->context) {
                for (size_t i = n; i < n + got; i++)
                    sink_track(sink, &out[i]);
            }
            if (last > sink->last_time)
                sink->last_time = last;
            kept = n + got;
        } else {
            follow_cursor = false; /* events it leaves out part the consumer's stack from the cursor's */
            for (size_t i = n; i < n + got; i++) {
                const otfx_event *event = &out[i];
                const otfx_time time = event->time;
                if (time >= to) {
                    r->position = READER_DONE;
                    more = false;
                    break;
                }
                if (r->skipping) {
                    if (time < r->passed_time)
                        continue;
                    if (time == r->passed_time && r->skipped_at_time < r->passed_at_time) {
                        r->skipped_at_time++;
                        continue;
                    }
                    r->skipping = false;
                }
                if (r->passed_any && time == r->passed_time) {
                    r->passed_at_time++;
                } else {
                    r->passed_any = true;
                    r->passed_time = time;
                    r->passed_at_time = 1;
                }
                if (time < from)
                    continue;
                if (sink->context)
                    sink_track(sink, event);
                if (time > sink->last_time)
                    sink->last_time = time;
                if (kept != i)
                    out[kept] = *event;
                kept++;
            }
        }
        n = kept;
        if (more && end <= 0) {
            more = false;
            if (end < 0)
                status = otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor->index);
            else
                r->position = r->position == READER_IN_OPEN ? READER_TAIL : READER_BETWEEN;
        }
    }
    sink->delivered += n - r->out_count;
    r->out_count = n;
    return status;
}

otfx_status otfx_trace_reader_open(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                   otfx_trace_reader **out)
{
    if (!trace || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_reader_open: NULL argument");
    *out = NULL;
    otfx_trace_reader *r = calloc(1, sizeof *r);
    if (!r)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a trace reader");
    otfx_status status = scratch_open(trace, &r->scratch);
    if (status != OTFX_OK) {
        free(r);
        return status;
    }
    r->trace = trace;
    r->from = from;
    r->to = to;
    r->position = from < to ? READER_START : READER_DONE;
    r->sink = (event_sink){.fn = reader_take, .user = r, .context = context, .last_time = from};
    if (context) {
        r->sink.stack = malloc(sizeof *r->sink.stack * OTFX_MAX_CALL_DEPTH);
        r->sink.pending = malloc(sizeof *r->sink.pending * OTFX_MAX_CALL_DEPTH);
        r->frames = malloc(sizeof *r->frames * OTFX_MAX_CALL_DEPTH);
        if (!r->sink.stack || !r->sink.pending || !r->frames) {
            otfx_trace_reader_close(r);
            return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a trace reader");
        }
    }
    *out = r;
    return OTFX_OK;
}

otfx_status otfx_trace_reader_next(otfx_trace_reader *r, otfx_event *events, size_t capacity, size_t *count)
{
    if (!r || !count || (capacity && !events))
        return otfx_fail(OTFX_ERR_INVALID, "otfx_trace_reader_next: NULL argument");
    *count = 0;
    if (r->failure != OTFX_OK)
        return otfx_fail(r->failure, "the trace reader failed before");
    r->out = events;
    r->out_capacity = capacity;
    r->out_count = 0;
    while (r->overflow_next < r->overflow_count && r->out_count < capacity)
        events[r->out_count++] = r->overflow[r->overflow_next++];
    if (r->overflow_next == r->overflow_count)
        r->overflow_next = r->overflow_count = 0;
    otfx_status status = OTFX_OK;
    if (r->position != READER_DONE && r->out_count < capacity && r->overflow_count == 0) {
        otfx_trace *trace = r->trace;
        pthread_rwlock_rdlock(&trace->lock);
        status = reader_resume(r);
        while (status == OTFX_OK && r->out_count < capacity && r->overflow_count == 0) {
            if (r->position == READER_IN_PIECE || r->position == READER_IN_OPEN) {
                status = reader_run_cursor(r);
            } else if (r->position == READER_BETWEEN) {
                bool more;
                status = reader_enter_next(r, &more);
                if (status == OTFX_OK && !more)
                    r->position = READER_TAIL;
            } else {
                break; /* caught up, or the window's end */
            }
        }
        pthread_rwlock_unlock(&trace->lock);
    }
    *count = r->out_count;
    r->out = NULL;
    if (status != OTFX_OK) {
        r->failure = status;
        r->position = READER_DONE;
    }
    return status;
}

bool otfx_trace_reader_finished(const otfx_trace_reader *r)
{
    return !r || r->position == READER_DONE;
}

void otfx_trace_reader_close(otfx_trace_reader *r)
{
    if (!r)
        return;
    scratch_close(&r->scratch);
    free(r->sink.stack);
    free(r->sink.pending);
    free(r->frames);
    free(r->overflow);
    free(r);
}

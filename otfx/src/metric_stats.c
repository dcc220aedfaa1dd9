/* metric_stats.c — per-region metric statistics of a range, their serialised form, and the walk. */
#include "metric_stats.h"

#include "chunk.h"
#include "codec.h"
#include "error.h"
#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>

void metric_stats_init(metric_stats *s)
{
    memset(s, 0, sizeof *s);
}

void metric_stats_free(metric_stats *s)
{
    free(s->entries);
    free(s->spans);
    metric_stats_init(s);
}

void metric_stats_clear(metric_stats *s)
{
    s->first_ordinal = 0;
    s->incomplete = false;
    s->entry_count = 0;
    s->span_count = 0;
}

size_t metric_stats_heap_bytes(const metric_stats *s)
{
    return (size_t)s->entry_capacity * sizeof *s->entries + (size_t)s->span_capacity * sizeof *s->spans;
}

static uint64_t key_of(otfx_ref region, otfx_ref metric)
{
    return (uint64_t)region << 32 | metric;
}

metric_totals *metric_stats_entry(metric_stats *s, otfx_ref region, otfx_ref metric)
{
    const uint64_t key = key_of(region, metric);
    uint32_t low = 0, high = s->entry_count;
    while (low < high) {
        const uint32_t middle = low + (high - low) / 2;
        if (key_of(s->entries[middle].region, s->entries[middle].metric) < key)
            low = middle + 1;
        else
            high = middle;
    }
    if (low < s->entry_count && key_of(s->entries[low].region, s->entries[low].metric) == key)
        return &s->entries[low].totals;
    if (!otfx_reserve_u32((void **)&s->entries, &s->entry_capacity, (size_t)s->entry_count + 1,
                          sizeof *s->entries, 8))
        return NULL;
    memmove(&s->entries[low + 1], &s->entries[low], (s->entry_count - low) * sizeof *s->entries);
    s->entry_count++;
    s->entries[low] = (metric_entry){.region = region, .metric = metric};
    return &s->entries[low].totals;
}

static int64_t scale_i64(int64_t value, uint64_t numerator, uint64_t denominator)
{
    if (denominator == 0 || numerator >= denominator)
        return value;
    return (int64_t)((__int128)value * numerator / (__int128)denominator);
}

static uint64_t scale_u64(uint64_t value, uint64_t numerator, uint64_t denominator)
{
    if (denominator == 0 || numerator >= denominator)
        return value;
    return (uint64_t)((unsigned __int128)value * numerator / denominator);
}

static void totals_add_scaled(metric_totals *into, const metric_totals *t, uint64_t numerator,
                              uint64_t denominator)
{
    into->visits += scale_u64(t->visits, numerator, denominator);
    into->inclusive += scale_i64(t->inclusive, numerator, denominator);
    into->inclusive_ns += scale_u64(t->inclusive_ns, numerator, denominator);
    into->exclusive_visits += scale_u64(t->exclusive_visits, numerator, denominator);
    into->exclusive += scale_i64(t->exclusive, numerator, denominator);
    into->exclusive_ns += scale_u64(t->exclusive_ns, numerator, denominator);
}

static otfx_status out_of_memory(void)
{
    return otfx_fail(OTFX_ERR_NOMEM, "out of memory for metric statistics");
}

otfx_status metric_stats_add_entries_scaled(metric_stats *into, const metric_stats *from, uint64_t numerator,
                                            uint64_t denominator)
{
    for (uint32_t i = 0; i < from->entry_count; i++) {
        metric_totals *t = metric_stats_entry(into, from->entries[i].region, from->entries[i].metric);
        if (!t)
            return out_of_memory();
        totals_add_scaled(t, &from->entries[i].totals, numerator, denominator);
    }
    into->incomplete |= from->incomplete;
    return OTFX_OK;
}

static void totals_add_span(metric_totals *t, const metric_span *span)
{
    t->visits++;
    t->inclusive += span->inclusive;
    t->inclusive_ns += span->leave - span->enter;
    if (span->exclusive_counted) {
        t->exclusive_visits++;
        t->exclusive += span->exclusive;
        t->exclusive_ns += span->exclusive_ns;
    }
}

otfx_status metric_stats_add_span_as_visit(metric_stats *into, const metric_span *span)
{
    metric_totals *t = metric_stats_entry(into, span->region, span->metric);
    if (!t)
        return out_of_memory();
    totals_add_span(t, span);
    return OTFX_OK;
}

static otfx_status add_span(metric_stats *into, const metric_span *span)
{
    if (span->enter_ordinal >= into->first_ordinal)
        return metric_stats_add_span_as_visit(into, span);
    if (!otfx_reserve_u32((void **)&into->spans, &into->span_capacity, (size_t)into->span_count + 1,
                          sizeof *into->spans, 4))
        return out_of_memory();
    into->spans[into->span_count++] = *span;
    return OTFX_OK;
}

otfx_status metric_stats_append(metric_stats *into, const metric_stats *next)
{
    otfx_status status = metric_stats_add_entries_scaled(into, next, 1, 1);
    for (uint32_t i = 0; i < next->span_count && status == OTFX_OK; i++)
        status = add_span(into, &next->spans[i]);
    return status;
}

/* Serialised layout: flags (bit 0 incomplete), first ordinal, entry count, per entry region, metric,
 * visits, inclusive (zigzag), inclusive_ns, exclusive visits, exclusive (zigzag), exclusive_ns; span
 * count, per span first ordinal − enter ordinal, leave − enter, leave, region, metric, exclusive
 * counted, inclusive (zigzag), exclusive (zigzag), exclusive_ns. All varints. */
#define MAX_VARINT 10

size_t metric_stats_encoded_bound(const metric_stats *s)
{
    return MAX_VARINT * (4 + 8 * (size_t)s->entry_count + 9 * (size_t)s->span_count);
}

uint8_t *metric_stats_encode(const metric_stats *s, uint8_t *p)
{
    p = varint_put(p, s->incomplete ? 1 : 0);
    p = varint_put(p, s->first_ordinal);
    p = varint_put(p, s->entry_count);
    for (uint32_t i = 0; i < s->entry_count; i++) {
        const metric_entry *e = &s->entries[i];
        p = varint_put(p, e->region);
        p = varint_put(p, e->metric);
        p = varint_put(p, e->totals.visits);
        p = varint_put(p, zigzag_encode(e->totals.inclusive));
        p = varint_put(p, e->totals.inclusive_ns);
        p = varint_put(p, e->totals.exclusive_visits);
        p = varint_put(p, zigzag_encode(e->totals.exclusive));
        p = varint_put(p, e->totals.exclusive_ns);
    }
    p = varint_put(p, s->span_count);
    for (uint32_t i = 0; i < s->span_count; i++) {
        const metric_span *span = &s->spans[i];
        p = varint_put(p, s->first_ordinal - span->enter_ordinal);
        p = varint_put(p, span->leave - span->enter);
        p = varint_put(p, span->leave);
        p = varint_put(p, span->region);
        p = varint_put(p, span->metric);
        p = varint_put(p, span->exclusive_counted);
        p = varint_put(p, zigzag_encode(span->inclusive));
        p = varint_put(p, zigzag_encode(span->exclusive));
        p = varint_put(p, span->exclusive_ns);
    }
    return p;
}

static bool get_ref(const uint8_t **in, const uint8_t *end, otfx_ref *ref)
{
    uint64_t value;
    if (!varint_get(in, end, &value) || value >= OTFX_REF_NONE)
        return false;
    *ref = (otfx_ref)value;
    return true;
}

static bool get_signed(const uint8_t **in, const uint8_t *end, int64_t *value)
{
    uint64_t coded;
    if (!varint_get(in, end, &coded))
        return false;
    *value = zigzag_decode(coded);
    return true;
}

bool metric_stats_decode(const uint8_t **in, const uint8_t *end, metric_stats *into, bool *nomem)
{
    uint64_t flags, count;
    *nomem = false;
    metric_stats_clear(into);
    if (!varint_get(in, end, &flags) || flags > 1 || !varint_get(in, end, &into->first_ordinal))
        return false;
    into->incomplete = flags & 1;
    /* an entry takes at least 8 bytes, a span 9: the counts are bounded by the input */
    if (!varint_get(in, end, &count) || count > (uint64_t)(end - *in) / 8)
        return false;
    if (!otfx_reserve_u32((void **)&into->entries, &into->entry_capacity, count, sizeof *into->entries, 8)) {
        *nomem = true;
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        metric_entry *e = &into->entries[i];
        if (!get_ref(in, end, &e->region) || !get_ref(in, end, &e->metric) ||
            !varint_get(in, end, &e->totals.visits) || !get_signed(in, end, &e->totals.inclusive) ||
            !varint_get(in, end, &e->totals.inclusive_ns) ||
            !varint_get(in, end, &e->totals.exclusive_visits) || !get_signed(in, end, &e->totals.exclusive) ||
            !varint_get(in, end, &e->totals.exclusive_ns) ||
            (i > 0 && key_of(e->region, e->metric) <= key_of(e[-1].region, e[-1].metric)))
            return false;
        into->entry_count = i + 1;
    }
    if (!varint_get(in, end, &count) || count > (uint64_t)(end - *in) / 9)
        return false;
    if (!otfx_reserve_u32((void **)&into->spans, &into->span_capacity, count, sizeof *into->spans, 4)) {
        *nomem = true;
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        metric_span *span = &into->spans[i];
        uint64_t before_first, duration, counted;
        if (!varint_get(in, end, &before_first) || before_first == 0 || before_first > into->first_ordinal ||
            !varint_get(in, end, &duration) || !varint_get(in, end, &span->leave) || duration > span->leave ||
            !get_ref(in, end, &span->region) || !get_ref(in, end, &span->metric) ||
            !varint_get(in, end, &counted) || counted > 1 || !get_signed(in, end, &span->inclusive) ||
            !get_signed(in, end, &span->exclusive) || !varint_get(in, end, &span->exclusive_ns))
            return false;
        span->enter_ordinal = into->first_ordinal - before_first;
        span->enter = span->leave - duration;
        span->exclusive_counted = (uint32_t)counted;
        into->span_count = i + 1;
    }
    return true;
}

/* ---- the walk ----------------------------------------------------------------------------------- */

void metric_walk_init(metric_walk *w)
{
    memset(w, 0, sizeof *w);
    w->mark = OTFX_REF_NONE;
    w->to = OTFX_TIME_MAX;
}

void metric_walk_free(metric_walk *w)
{
    free(w->frames);
    w->frames = NULL;
    w->capacity = 0;
    w->depth = 0;
}

/* Room for frames[depth] (a pending LEAVE's visit sits just above the stack). */
static bool reserve_frames(metric_walk *w, uint32_t depth)
{
    size_t capacity = w->capacity;
    if (!otfx_reserve((void **)&w->frames, &capacity, (size_t)depth + 1, sizeof *w->frames, 8)) {
        w->failed = true;
        return false;
    }
    w->capacity = (uint32_t)capacity;
    return true;
}

otfx_status metric_walk_copy(metric_walk *into, const metric_walk *from)
{
    const uint32_t kept = from->depth + (from->collecting == 2);
    if (!reserve_frames(into, from->depth))
        return out_of_memory();
    metric_frame *frames = into->frames;
    const uint32_t capacity = into->capacity;
    const otfx_ref mark = into->mark;
    const otfx_time window_from = into->from, window_to = into->to;
    metric_stats *target = into->into;
    *into = *from;
    into->frames = frames;
    into->capacity = capacity;
    into->mark = mark;
    into->from = window_from;
    into->to = window_to;
    into->into = target;
    if (kept)
        memcpy(into->frames, from->frames, kept * sizeof *frames);
    return OTFX_OK;
}

otfx_status metric_walk_reset(metric_walk *w, const call_frame *context, uint32_t depth, uint64_t ordinal)
{
    if (!reserve_frames(w, depth))
        return out_of_memory();
    for (uint32_t i = 0; i < depth; i++) {
        metric_frame *f = &w->frames[i];
        f->region = context[i].region;
        f->enter = context[i].enter;
        f->enter_ordinal = 0;
        f->epoch = 0;
        f->child_ns = 0;
        f->has = 0;
        f->child_bad = 0;
    }
    w->depth = depth;
    w->epoch = 1;
    w->slot_count = 0;
    w->collecting = 0;
    w->ordinal = ordinal;
    w->incomplete = false;
    w->failed = false;
    return OTFX_OK;
}

static void record(metric_walk *w, const metric_frame *v, uint32_t slot, int64_t delta, uint64_t duration,
                   bool exclusive_counted, int64_t exclusive, uint64_t exclusive_ns)
{
    if (v->enter < w->from || w->leave_time >= w->to || !w->into)
        return;
    const metric_span span = {.enter_ordinal = v->enter_ordinal,
                              .enter = v->enter,
                              .leave = v->enter + duration,
                              .region = v->region,
                              .metric = w->slot_metric[slot],
                              .exclusive_counted = exclusive_counted,
                              .inclusive = delta,
                              .exclusive = exclusive,
                              .exclusive_ns = exclusive_ns};
    if (add_span(w->into, &span) != OTFX_OK)
        w->failed = true;
}

/* The visit in frames[depth] ended at leave_time with the values in leave_value. */
static void finish_visit(metric_walk *w)
{
    const metric_frame *v = &w->frames[w->depth];
    const uint64_t duration = w->leave_time >= v->enter ? w->leave_time - v->enter : 0;
    const uint32_t measured = v->epoch == w->epoch ? v->has & w->leave_has : 0;
    metric_frame *caller = w->depth ? &w->frames[w->depth - 1] : NULL;
    for (uint32_t slot = 0; slot < w->slot_count; slot++) {
        const uint32_t bit = 1u << slot;
        if (!(measured & bit)) {
            if (caller)
                caller->child_bad |= bit;
            continue;
        }
        const int64_t delta = (int64_t)(w->leave_value[slot] - v->value[slot]);
        const bool exclusive_counted = !(v->child_bad & bit);
        record(w, v, slot, delta, duration, exclusive_counted, delta - v->child_sum[slot],
               duration >= v->child_ns ? duration - v->child_ns : 0);
        if (caller)
            caller->child_sum[slot] += delta;
    }
    if (caller)
        caller->child_ns += duration;
}

/* After a set mark or a reduced range nothing before compares with what follows: slots start over. */
static void new_epoch(metric_walk *w)
{
    w->epoch++;
    w->slot_count = 0;
}

static uint32_t slot_of(metric_walk *w, otfx_ref metric)
{
    for (uint32_t slot = 0; slot < w->slot_count; slot++) {
        if (w->slot_metric[slot] == metric)
            return slot;
    }
    if (w->slot_count == METRIC_WALK_SLOTS) {
        w->incomplete = true;
        if (w->into)
            w->into->incomplete = true;
        return UINT32_MAX;
    }
    const uint32_t slot = w->slot_count++;
    w->slot_metric[slot] = metric;
    /* frames entered before the slot was taken hold no value of it: their sums start at zero */
    for (uint32_t i = 0; i <= w->depth && i < w->capacity; i++)
        w->frames[i].child_sum[slot] = 0;
    return slot;
}

void metric_walk_event(metric_walk *w, const otfx_event *event)
{
    w->ordinal++;
    if (event->type == OTFX_EV_METRIC) {
        if (!w->collecting || event->time != w->collect_time)
            return; /* not read at an ENTER or LEAVE */
        if (event->u.metric.metric == w->mark) {
            new_epoch(w);
            if (w->collecting == 1) { /* the ENTER's values are the new set's */
                w->frames[w->depth - 1].epoch = w->epoch;
                w->frames[w->depth - 1].has = 0;
            }
            return;
        }
        const uint32_t slot = slot_of(w, event->u.metric.metric);
        if (slot == UINT32_MAX)
            return;
        if (w->collecting == 1) {
            metric_frame *f = &w->frames[w->depth - 1];
            f->value[slot] = event->u.metric.value;
            f->has |= 1u << slot;
            f->child_sum[slot] = 0;
        } else {
            w->leave_value[slot] = event->u.metric.value;
            w->leave_has |= 1u << slot;
        }
        return;
    }
    if (w->collecting == 2)
        finish_visit(w);
    w->collecting = 0;
    switch (event->type) {
    case OTFX_EV_ENTER: {
        if (!reserve_frames(w, w->depth + 1))
            return;
        metric_frame *f = &w->frames[w->depth++];
        f->region = event->u.region.region;
        f->epoch = w->epoch;
        f->enter = event->time;
        f->enter_ordinal = w->ordinal - 1;
        f->child_ns = 0;
        f->has = 0;
        f->child_bad = 0;
        w->collecting = 1;
        w->collect_time = event->time;
        break;
    }
    case OTFX_EV_LEAVE:
        if (!w->depth)
            break;
        w->depth--;
        w->leave_time = event->time;
        w->leave_has = 0;
        w->collecting = 2;
        w->collect_time = event->time;
        break;
    case OTFX_EV_REDUCTION:
        new_epoch(w); /* a mark may have been removed with the range */
        break;
    default:
        break;
    }
}

void metric_walk_finish(metric_walk *w)
{
    if (w->collecting == 2)
        finish_visit(w);
    w->collecting = 0;
}

otfx_ref metric_mark_lookup(const otfx_defs *defs, otfx_ref known, uint32_t *scanned)
{
    if (known != OTFX_REF_NONE)
        return known;
    const uint32_t count = otfx_defs_count_metrics(defs);
    for (; *scanned < count; (*scanned)++) {
        otfx_metric_def def;
        if (otfx_defs_get_metric(defs, *scanned, &def) == OTFX_OK &&
            strcmp(def.name, OTFX_METRIC_SET_MARK) == 0)
            return (*scanned)++;
    }
    return OTFX_REF_NONE;
}

/* otf2_export_ranges.c — reduced ranges in the archive (part of the OTF2 export): the plan of which
 * regions outlive a range and the stack of regions open while one trace is written. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_export_internal.h"
#include <otfx/support/growth.h>

#include <string.h>

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

bool export_clip_range(const trace_export *te, const otfx_event *event, reduced_range *range)
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

otfx_status export_add_range(trace_export *te, const reduced_range *range)
{
    if (!otfx_reserve((void **)&te->ranges, &te->range_capacity, te->range_count + 1, sizeof *te->ranges, 16))
        return out_of_memory();
    te->ranges[te->range_count++] = *range;
    return OTFX_OK;
}

/* After the first pass: ranges in identity order, and their orders of begin and of end. */
otfx_status export_order_ranges(trace_export *te)
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
    if (!otfx_reserve((void **)&te->open_range_ends, &te->open_range_capacity, te->open_range_count + 1,
                      sizeof *te->open_range_ends, 16))
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

otfx_status export_note_outliving(trace_export *te, const planned_frame *frame, otfx_time leave)
{
    if (leave <= frame->earliest_range_end)
        return OTFX_OK;
    if (!otfx_reserve((void **)&te->outliving, &te->outliving_capacity, te->outliving_count + 1,
                      sizeof *te->outliving, 16))
        return out_of_memory();
    te->outliving[te->outliving_count++] =
        (outliving_enter){frame->sequence, frame->time, leave, frame->region};
    return OTFX_OK;
}

otfx_status export_plan_record(trace_export *te, const otfx_event *event)
{
    if (event->type == OTFX_EV_ENTER) {
        if (!otfx_reserve((void **)&te->planned, &te->planned_capacity, te->planned_depth + 1,
                          sizeof *te->planned, 16))
            return out_of_memory();
        otfx_time earliest = te->open_range_count ? te->open_range_ends[0] : OTFX_TIME_MAX;
        te->planned[te->planned_depth++] =
            (planned_frame){te->enter_sequence++, te->position, earliest, event->u.region.region};
    } else if (event->type == OTFX_EV_LEAVE && te->planned_depth > 0) {
        planned_frame frame = te->planned[--te->planned_depth];
        OTFX_TRY(export_note_outliving(te, &frame, te->position));
    }
    return OTFX_OK;
}

int export_compare_outliving(const void *a, const void *b)
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
    if (!otfx_reserve((void **)&te->frames, &te->frame_capacity, te->depth + 1, sizeof *te->frames, 16))
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
    OTFX_TRY(export_add_attribute(x, OTFX_OTF2_ATTR_PIECE, value));
    if (range->pieces == 0) {
        value.stringRef = STRING_STRATEGY_FIRST + record->u.reduction.strategy;
        OTFX_TRY(export_add_attribute(x, OTFX_OTF2_ATTR_STRATEGY, value));
        value.uint64 = record->u.reduction.events_removed;
        OTFX_TRY(export_add_attribute(x, OTFX_OTF2_ATTR_EVENTS_REMOVED, value));
        value.uint64 = record->u.reduction.begin;
        OTFX_TRY(export_add_attribute(x, OTFX_OTF2_ATTR_RANGE_BEGIN, value));
        value.uint64 = record->u.reduction.end;
        OTFX_TRY(export_add_attribute(x, OTFX_OTF2_ATTR_RANGE_END, value));
        value.uint64 = record->time;
        OTFX_TRY(export_add_attribute(x, OTFX_OTF2_ATTR_RECORD_TIME, value));
    }
    range->pieces++;
    OTF2_TRY(OTF2_EvtWriter_Enter(te->writer, x->attributes, stamp(te), record->u.reduction.strategy),
             "writing a reduced range");
    wrote(te, stamp(te));
    return OTFX_OK;
}

otfx_status export_write_piece_leave(trace_export *te, size_t index)
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
        OTFX_TRY(export_write_piece_leave(te, index));
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
        OTFX_TRY(export_write_piece_leave(te, index));
        if (te->ranges[index].state != RANGE_OPEN) {
            te->ranges[index].state = RANGE_DONE;
            continue;
        }
        if (!otfx_reserve((void **)&te->lifted, &te->lifted_capacity, *lifted + 1, sizeof *te->lifted, 16))
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
otfx_status export_pass_boundaries(trace_export *te, otfx_time time, bool through)
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
otfx_status export_place_record(trace_export *te, const otfx_event *event)
{
    OTFX_TRY(leave_closing(te));
    size_t lifted = 0;
    if (event->type == OTFX_EV_ENTER) {
        otfx_time leave = outliving_leave(te, event, te->position);
        OTFX_TRY(lift_ranges(te, leave, false, &lifted));
        OTFX_TRY(export_write_event(te, stamp(te), event));
        OTFX_TRY(push_frame(te, (open_frame){false, event->u.region.region}));
    } else if (event->type == OTFX_EV_LEAVE) {
        OTFX_TRY(lift_ranges(te, OTFX_TIME_MAX, true, &lifted));
        if (te->depth == 0 || te->frames[te->depth - 1].reduced ||
            te->frames[te->depth - 1].index != event->u.region.region)
            return otfx_fail(OTFX_ERR_CORRUPT,
                             "OTF2 export: the trace of rank %u thread %u leaves region %u, which is not the "
                             "innermost open region",
                             te->rank, te->thread, event->u.region.region);
        OTFX_TRY(export_write_event(te, stamp(te), event));
        te->depth--;
    } else {
        OTFX_TRY(export_write_event(te, stamp(te), event));
    }
    wrote(te, stamp(te));
    OTFX_TRY(restore_lifted(te, lifted));
    return leave_closing(te);
}

/* A reduction record the first pass did not see (the trace reduced meanwhile): a piece of length
 * zero here, carrying the whole record. */
otfx_status export_place_late_range(trace_export *te, const reduced_range *range)
{
    if (otfx_otf2_search(range, te->ranges, te->range_count, sizeof *range, compare_ranges))
        return OTFX_OK;
    size_t index = te->range_count + te->late_count;
    if (!otfx_reserve((void **)&te->ranges, &te->range_capacity, index + 1, sizeof *te->ranges, 16))
        return out_of_memory();
    te->ranges[index] = *range;
    te->late_count++;
    OTFX_TRY(write_piece_enter(te, index));
    return export_write_piece_leave(te, index);
}

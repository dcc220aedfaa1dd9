/* otf2_export_trace.c — one trace of the OTF2 export: its frozen copy, the passes over its events
 * (collect, clock, plan, write) and its event file. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_export_internal.h"
#include <otfx/support/growth.h>

#include <stdlib.h>

/* The first read: a COLL_BEGIN without an ordinal takes its COLL_END's (unnumbered_begin). */
static otfx_status note_unnumbered_begin(trace_export *te, const otfx_event *event)
{
    if (event->type == OTFX_EV_COLL_BEGIN && event->u.coll.seq == 0) {
        if (!otfx_reserve((void **)&te->unnumbered, &te->unnumbered_capacity, te->unnumbered_count + 1,
                          sizeof *te->unnumbered, 16))
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
        if ((te->pass == PASS_COLLECT || te->pass == PASS_WRITE) && export_clip_range(te, event, &range))
            te->status =
                te->pass == PASS_COLLECT ? export_add_range(te, &range) : export_place_late_range(te, &range);
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
    te->status = in_collective ? OTFX_OK : export_pass_boundaries(te, time, false);
    if (te->status == OTFX_OK) {
        te->position = time;
        if (te->pass == PASS_WRITE)
            te->status = clock_event(te, event);
        if (te->status == OTFX_OK)
            te->status =
                te->pass == PASS_PLAN ? export_plan_record(te, event) : export_place_record(te, event);
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

static otfx_status run_pass(trace_export *te, otfx_trace *trace, export_pass pass, otfx_event_fn fn,
                            void *user)
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
    otfx_status status = otfx_query_events(trace, te->from, te->to, true, fn, user);
    return status != OTFX_OK ? status : te->status;
}

otfx_status export_run_pass(trace_export *te, otfx_trace *trace, export_pass pass)
{
    return run_pass(te, trace, pass, on_event, te);
}

/* The first read: reduction records and the messages (otf2_pairing.h). */
static otfx_status collect_trace_events(trace_export *te, otfx_trace *trace)
{
    OTFX_TRY(export_run_pass(te, trace, PASS_COLLECT));
    return export_order_ranges(te);
}

/* The read after the pairing: the requests of the messages left out (otfx_pairing_note_dropped), and the
 * plan, which depends on neither the pairing nor the clocks. The plan may stop before the trace's end;
 * the requests need all of it. */
typedef struct plan_read {
    trace_export *te;
    bool dropping, planning;
} plan_read;

static int on_plan_event(const otfx_event *event, void *user)
{
    plan_read *read = user;
    trace_export *te = read->te;
    if (read->dropping) { /* the context's ENTERs and LEAVEs carry no message or request */
        te->status = otfx_pairing_note_dropped(te->x->pairing, te->rank, event);
        if (te->status != OTFX_OK)
            return 1;
    }
    if (read->planning && on_event(event, te) != 0) {
        if (te->status != OTFX_OK)
            return 1;
        read->planning = false;
    }
    return !read->dropping && !read->planning;
}

otfx_status export_plan_trace(trace_export *te, otfx_trace *trace, bool note_dropped)
{
    plan_read read = {te, note_dropped, te->range_count > 0};
    if (!read.dropping && !read.planning)
        return OTFX_OK;
    const bool planning = read.planning;
    OTFX_TRY(run_pass(te, trace, PASS_PLAN, on_plan_event, &read));
    if (planning) {
        OTFX_TRY(export_pass_boundaries(te, OTFX_TIME_MAX, true));
        while (te->planned_depth > 0) /* open at the end (of the plan): they outlive every range */
            OTFX_TRY(export_note_outliving(te, &te->planned[--te->planned_depth], OTFX_TIME_MAX));
        otfx_otf2_sort(te->outliving, te->outliving_count, sizeof *te->outliving, export_compare_outliving);
    }
    return OTFX_OK;
}

/* The write (after export_plan_trace). */
static otfx_status write_trace_events(trace_export *te, otfx_trace *trace)
{
    OTFX_TRY(export_run_pass(te, trace, PASS_WRITE));
    otfx_trace_status trace_status;
    OTFX_TRY(otfx_trace_status_get(trace, &trace_status));
    otfx_time end = trace_end(te, &trace_status);
    OTFX_TRY(export_pass_boundaries(te, end, true));
    if (end > te->position)
        te->position = end;
    while (te->depth > 0) {
        open_frame frame = te->frames[--te->depth];
        if (frame.reduced) {
            OTFX_TRY(export_write_piece_leave(te, frame.index));
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

static otfx_status add_own_location(exporter *x, uint32_t rank, uint32_t thread, uint64_t events)
{
    if (!otfx_reserve((void **)&x->own, &x->own_capacity, x->own_count + 1, sizeof *x->own, 16))
        return out_of_memory();
    x->own[x->own_count++] = (exported_location){rank, thread, events, false};
    return OTFX_OK;
}

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

/* Copies and reads every trace (*prepared: one per trace, free with export_free_prepared). */
otfx_status export_prepare_traces(exporter *x, otfx_trace *const *traces, size_t trace_count,
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

void export_free_prepared(prepared_trace *prepared, size_t trace_count)
{
    for (size_t t = 0; prepared && t < trace_count; t++)
        prepared_trace_free(&prepared[t]);
    free(prepared);
}

otfx_status export_traces(exporter *x, prepared_trace *prepared, size_t trace_count)
{
    for (size_t t = 0; t < trace_count; t++)
        OTFX_TRY(export_trace(x, &prepared[t]));
    return OTFX_OK;
}

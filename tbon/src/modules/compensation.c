/* compensation.c — overhead compensation on the replay (compensation.h; docs/analyses.md).
 *
 * Every stream carries its delay x: how much later than in an unmeasured run its next event happens.
 * Each event's compensated time is its time minus x; afterwards x grows by the event's recording cost
 * (the rank's measured cost of the records the event comes from, otfx_rank_overhead), since the cost is
 * paid after the timestamp. That alone is local compensation. The costs are those of the rank's last
 * measurement before the event (otfx_rank_overhead.changes: `overhead measure`), and a re-measurement's
 * own duration is a cost of the stream that measured. Across ranks, a message's send carries
 * its compensated time S' = t_S − x_s and its measured time to the receive (through the replay, never
 * the application's messages). A receive ending at Re inside a call entered at Rb ends, compensated, at
 *
 *     Re' = max(Rb − x_i, S' + latency)        and then x = Re − Re',
 *
 * the exact form of Malony et al.'s x_new = min(x_s, x_i + w): a receive that waited for the message
 * absorbs the sender's smaller delay, and one whose message had long arrived keeps its own. The
 * latency is the smallest send-to-receive-end seen on the stream so far (the receive's own included,
 * so S' + latency never passes Re). A collective's member completes at the latest of its own
 * compensated begin and the compensated arrivals of the members it depends on plus the smallest
 * arrival-to-completion the stream saw. Compensated times never go backwards within a stream.
 */
#include "compensation.h"
#include "replay_support.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What crosses a dependency: a send's or an arrival's time, measured and compensated. */
typedef struct comp_value {
    otfx_time measured, compensated;
} comp_value;

typedef struct comp_frame {
    otfx_ref region;
    otfx_time enter, enter_c;
    uint64_t children; /* compensated inclusive time of the calls inside */
    bool mpi, counted;
} comp_frame;

typedef struct comp_stream {
    bool seen;
    uint32_t rank, thread;
    const otfx_rank_overhead *overhead;
    const otfx_record_costs *cost; /* the measurement in force at the stream's position */
    uint32_t next_change;          /* the rank's next re-measurement (overhead->changes) */
    uint64_t delay_ps, intrusion_ps;
    otfx_time last, last_c;
    uint64_t pending_ps;   /* a receive's or completion's cost, paid once its time is compensated */
    otfx_time message_c;   /* the SEND's or arrival's compensated time, for its value */
    otfx_time p2p_latency; /* OTFX_TIME_MAX: none seen yet */
    otfx_time coll_latency;
    comp_frame *stack;
    size_t depth, capacity;
    bool started;     /* settled once: spans begin at the first event */
    bool any_receive; /* the previous receive, for the reorder check */
    otfx_ref receive_comm;
    uint32_t receive_tag, receive_peer;
    otfx_time receive_send_c, receive_end_c;
} comp_stream;

typedef struct comp_run {
    const otfx_command *query;
    region_facts facts;
    comp_stream *streams;
    size_t stream_capacity;
    const otfx_rank_overhead **cost_of_rank; /* app_ranks entries; NULL: not served here */
    uint32_t app_ranks;
    compensation_result *out;
    const compensation_observer *observer; /* NULL: none */
    const otfx_replay_stream *current;     /* the stream of the callback running */
    bool failed;
} comp_run;

static const otfx_rank_overhead no_cost;

static comp_stream *stream_of(comp_run *run, const otfx_replay_stream *stream)
{
    comp_stream *s =
        stream_slot((void **)&run->streams, &run->stream_capacity, sizeof *run->streams, stream->index);
    if (!s) {
        run->failed = true;
        return NULL;
    }
    run->current = stream;
    if (!s->seen) {
        s->seen = true;
        s->rank = stream->rank;
        s->thread = stream->thread;
        s->overhead = stream->rank < run->app_ranks && run->cost_of_rank[stream->rank]
                          ? run->cost_of_rank[stream->rank]
                          : &no_cost;
        s->cost = &s->overhead->costs;
        s->p2p_latency = OTFX_TIME_MAX;
        s->coll_latency = OTFX_TIME_MAX;
    }
    return s;
}

static void charge(comp_stream *s, uint64_t ps)
{
    s->delay_ps += ps;
    s->intrusion_ps += ps;
}

static comp_frame *innermost(comp_stream *s)
{
    return s->depth ? &s->stack[s->depth - 1] : NULL;
}

/* Local compensation of an event at t: t − x. */
static otfx_time local_time(const comp_stream *s, otfx_time t)
{
    const uint64_t delay_ns = s->delay_ps / 1000u;
    return t > delay_ns ? t - delay_ns : 0;
}

/* Moves the stream's compensated clock to `c` at measured time t (never back, never past t); the time
 * passed is a span of the innermost open region, or, `reduced`, a range without detail. A wait that
 * absorbed delay (`absorbs`: a receive's or a collective's completion) sets the delay to t - c; any other
 * event keeps it, also where c had to stay at the previous event's time (events at one measured time: the
 * costs paid between them are still owed and come out of the events after them). */
static otfx_time advance(comp_run *run, comp_stream *s, otfx_time t, otfx_time c, bool reduced, bool absorbs)
{
    if (c < s->last_c)
        c = s->last_c;
    if (c > t)
        c = t;
    const compensation_observer *o = run->observer;
    if (o && s->started && c > s->last_c) {
        if (reduced && o->reduced)
            o->reduced(o->user, run->current, s->last_c, c);
        else if (!reduced && o->span)
            o->span(o->user, run->current, s->depth ? s->stack[s->depth - 1].region : OTFX_REF_NONE,
                    s->last_c, c);
    }
    s->started = true;
    if (absorbs)
        s->delay_ps = (t - c) * 1000u;
    s->last = t;
    s->last_c = c;
    return c;
}

/* An event's compensated time: its local time t - x (see advance). */
static otfx_time settle(comp_run *run, comp_stream *s, otfx_time t)
{
    return advance(run, s, t, local_time(s, t), false, false);
}

/* A completion at t whose compensated time the model put at `c` (see advance). */
static otfx_time settle_wait(comp_run *run, comp_stream *s, otfx_time t, otfx_time c)
{
    return advance(run, s, t, c, false, true);
}

/* The event's compensated time is known: the observer's. */
static void emit(comp_run *run, const otfx_event *e, otfx_time c)
{
    if (run->observer && run->observer->event)
        run->observer->event(run->observer->user, run->current, e, c);
}

static bool in_window(const comp_run *run, otfx_time t)
{
    return t >= run->query->from && t < run->query->to;
}

static compensated_region *region_slot(comp_run *run, otfx_ref region)
{
    if (region == OTFX_REF_NONE)
        return NULL;
    compensated_region *r = stream_slot((void **)&run->out->regions, &run->out->region_capacity,
                                        sizeof *run->out->regions, region);
    if (!r)
        run->failed = true;
    return r;
}

static const comp_frame *innermost_mpi(const comp_stream *s)
{
    for (size_t i = s->depth; i-- > 0;)
        if (s->stack[i].mpi)
            return &s->stack[i];
    return NULL;
}

/* A frame ends at compensated time c: its inclusive and exclusive time. */
static void close_frame(comp_run *run, comp_stream *s, otfx_time c)
{
    comp_frame f = s->stack[--s->depth];
    const uint64_t inclusive = c > f.enter_c ? c - f.enter_c : 0;
    if (f.counted) {
        compensated_region *r = region_slot(run, f.region);
        if (r) {
            r->visits++;
            r->inclusive += inclusive;
            r->exclusive += inclusive > f.children ? inclusive - f.children : 0;
        }
    }
    if (s->depth)
        s->stack[s->depth - 1].children += inclusive;
}

/* The time a SEND or an arrival (COLL_BEGIN, NBC_REQUEST) takes: a call's send and COLL_BEGIN carry its
 * ENTER's time and come after its ENTER's cost was paid, so they take the ENTER's compensated time. */
static otfx_time call_start_time(comp_run *run, comp_stream *s, otfx_time t)
{
    const comp_frame *f = innermost(s);
    if (f && f->enter == t)
        return f->enter_c;
    return settle(run, s, t);
}

static void count_message(comp_run *run, comp_stream *s, const otfx_event *e, bool sent)
{
    const comp_frame *f = innermost(s);
    if (!f || !in_window(run, e->time))
        return;
    compensated_region *r = region_slot(run, f->region);
    if (!r)
        return;
    if (sent) {
        r->messages_sent++;
        r->bytes_sent += e->u.msg.bytes;
    } else {
        r->messages_received++;
        r->bytes_received += e->u.msg.bytes;
    }
}

/* Re-measurements before t: their costs from here on, and the measuring's own time on the stream that
 * did it. */
static void apply_cost_changes(comp_stream *s, otfx_time t)
{
    const otfx_rank_overhead *o = s->overhead;
    while (s->next_change < o->change_count && o->changes[s->next_change].since <= t) {
        const otfx_cost_change *change = &o->changes[s->next_change++];
        s->cost = &change->costs;
        if (change->thread == s->thread)
            charge(s, change->took_ns * 1000u);
    }
}

static void comp_event(void *user, otfx_replay_stream *stream, const otfx_event *e)
{
    comp_run *run = user;
    comp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    apply_cost_changes(s, e->time);
    const otfx_record_costs *cost = s->cost;
    switch (e->type) {
    case OTFX_EV_ENTER: {
        if (!otfx_reserve((void **)&s->stack, &s->capacity, s->depth + 1, sizeof *s->stack, 16)) {
            run->failed = true;
            return;
        }
        const bool mpi = region_is_mpi(&run->facts, e->u.region.region);
        const otfx_time c = settle(run, s, e->time); /* before the push: the span
                                                      * is the caller's */
        emit(run, e, c);
        s->stack[s->depth++] = (comp_frame){.region = e->u.region.region,
                                            .enter = e->time,
                                            .enter_c = c,
                                            .mpi = mpi,
                                            .counted = in_window(run, e->time)};
        charge(s, mpi ? cost->event_ps[OTFX_EV_ENTER] : cost->user_enter_ps);
        return;
    }
    case OTFX_EV_LEAVE: {
        const otfx_time c = settle(run, s, e->time);
        emit(run, e, c);
        bool mpi = true;
        if (s->depth) {
            mpi = s->stack[s->depth - 1].mpi;
            close_frame(run, s, c);
        }
        charge(s, mpi ? cost->event_ps[OTFX_EV_LEAVE] : cost->user_leave_ps);
        return;
    }
    case OTFX_EV_SEND:
    case OTFX_EV_ISEND:
        s->message_c = call_start_time(run, s, e->time);
        emit(run, e, s->message_c);
        count_message(run, s, e, true);
        charge(s, cost->event_ps[e->type]);
        return;
    case OTFX_EV_RECV:
    case OTFX_EV_IRECV:
        count_message(run, s, e, false);
        s->pending_ps = cost->event_ps[e->type];
        return;
    case OTFX_EV_COLL_BEGIN:
    case OTFX_EV_NBC_REQUEST:
        s->message_c = call_start_time(run, s, e->time);
        emit(run, e, s->message_c);
        charge(s, cost->event_ps[e->type]);
        return;
    case OTFX_EV_COLL_END:
    case OTFX_EV_NBC_COMPLETE:
        s->pending_ps = cost->event_ps[e->type];
        return;
    case OTFX_EV_REDUCTION: {
        /* the range's compensated times: its removed events' costs are paid after its end */
        otfx_event range = *e;
        range.time = range.u.reduction.begin = settle(run, s, e->time);
        const otfx_time end = e->u.reduction.end > e->time ? e->u.reduction.end : e->time;
        range.u.reduction.end = advance(run, s, end, local_time(s, end), true, false);
        emit(run, &range, range.time);
        /* removed events cost what an MPI call's records do on average */
        charge(s, e->u.reduction.events_removed *
                      (((uint64_t)cost->event_ps[OTFX_EV_ENTER] + cost->event_ps[OTFX_EV_LEAVE]) / 2));
        return;
    }
    default:
        emit(run, e, settle(run, s, e->time));
        charge(s, cost->event_ps[e->type]);
        return;
    }
}

static void comp_send(void *user, otfx_replay_stream *stream, const otfx_event *e, void *value)
{
    comp_run *run = user;
    comp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    const comp_value v = {.measured = e->time, .compensated = s->message_c};
    memcpy(value, &v, sizeof v);
}

static void comp_arrive(void *user, otfx_replay_stream *stream, const otfx_event *e, void *value)
{
    comp_send(user, stream, e, value);
}

/* The compensated begin of the call a completion happens in (without one: the event's local time). */
static otfx_time call_begin_c(const comp_stream *s, otfx_time t)
{
    const comp_frame *f = innermost_mpi(s);
    return f ? f->enter_c : local_time(s, t);
}

static void comp_receive(void *user, otfx_replay_stream *stream, const otfx_event *e, const void *value,
                         otfx_replay_missing missing)
{
    (void)missing;
    comp_run *run = user;
    comp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    const otfx_time re = e->time;
    otfx_time end_c = local_time(s, re);
    if (value) {
        comp_value v;
        memcpy(&v, value, sizeof v);
        const otfx_time latency = re > v.measured ? re - v.measured : 0;
        if (latency < s->p2p_latency)
            s->p2p_latency = latency;
        const otfx_time arrival_c = v.compensated + s->p2p_latency;
        const otfx_time begin_c = call_begin_c(s, re);
        end_c = begin_c > arrival_c ? begin_c : arrival_c;
        if (s->any_receive && s->receive_comm == e->u.msg.comm && s->receive_tag == e->u.msg.tag &&
            s->receive_peer != e->u.msg.peer && v.compensated < s->receive_send_c &&
            arrival_c < s->receive_end_c)
            run->out->reorders++;
        s->any_receive = true;
        s->receive_comm = e->u.msg.comm;
        s->receive_tag = e->u.msg.tag;
        s->receive_peer = e->u.msg.peer;
        s->receive_send_c = v.compensated;
    }
    end_c = value ? settle_wait(run, s, re, end_c) : settle(run, s, re);
    emit(run, e, end_c);
    if (value)
        s->receive_end_c = end_c;
    charge(s, s->pending_ps);
    s->pending_ps = 0;
}

static bool depends_on(const otfx_replay_collective *c, uint32_t member)
{
    if (member == c->self)
        return false;
    switch (c->dependency) {
    case OTFX_REPLAY_ONE_TO_ALL:
        return c->self != c->root && member == c->root;
    case OTFX_REPLAY_ALL_TO_ONE:
        return c->self == c->root;
    case OTFX_REPLAY_PREFIX:
        return member < c->self;
    case OTFX_REPLAY_ALL_TO_ALL:
    default:
        return true;
    }
}

static void comp_complete(void *user, otfx_replay_stream *stream, const otfx_replay_collective *c)
{
    comp_run *run = user;
    comp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    const otfx_time re = c->end->time;
    otfx_time end_c = local_time(s, re);
    otfx_time latest_measured = 0, latest_c = 0;
    bool any = false;
    if (c->self < c->size && c->value[c->self]) {
        comp_value own;
        memcpy(&own, c->value[c->self], sizeof own);
        latest_measured = own.measured;
    }
    for (uint32_t i = 0; i < c->size; i++) {
        if (!depends_on(c, i) || !c->value[i])
            continue;
        comp_value v;
        memcpy(&v, c->value[i], sizeof v);
        if (v.measured > latest_measured)
            latest_measured = v.measured;
        if (!any || v.compensated > latest_c)
            latest_c = v.compensated;
        any = true;
    }
    if (any) {
        const otfx_time latency = re > latest_measured ? re - latest_measured : 0;
        if (latency < s->coll_latency)
            s->coll_latency = latency;
        const otfx_time arrival_c = latest_c + s->coll_latency;
        const otfx_time begin_c = call_begin_c(s, re);
        end_c = begin_c > arrival_c ? begin_c : arrival_c;
    }
    emit(run, c->end, any ? settle_wait(run, s, re, end_c) : settle(run, s, re));
    charge(s, s->pending_ps);
    s->pending_ps = 0;
}

static void comp_finish(void *user, otfx_replay_stream *stream)
{
    comp_run *run = user;
    comp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    while (s->depth)
        close_frame(run, s, s->last_c);
}

static const otfx_replay_pass comp_pass = {
    .name = "compensation",
    .value_size = sizeof(comp_value),
    .event = comp_event,
    .send = comp_send,
    .receive = comp_receive,
    .arrive = comp_arrive,
    .complete = comp_complete,
    .finish = comp_finish,
};

static int compare_rank(const void *x, const void *y)
{
    const compensated_rank *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The streams' ends, one entry per rank (its latest thread's end). */
static bool collect_ranks(comp_run *run)
{
    compensation_result *out = run->out;
    out->ranks = run->stream_capacity ? calloc(run->stream_capacity, sizeof *out->ranks) : NULL;
    if (run->stream_capacity && !out->ranks)
        return false;
    for (size_t i = 0; i < run->stream_capacity; i++) {
        const comp_stream *s = &run->streams[i];
        if (!s->seen)
            continue;
        compensated_rank *r = NULL;
        for (uint32_t k = 0; k < out->rank_count; k++)
            if (out->ranks[k].rank == s->rank)
                r = &out->ranks[k];
        if (!r) {
            r = &out->ranks[out->rank_count++];
            r->rank = s->rank;
        }
        if (!r->measured_end || s->last > r->measured_end) {
            r->measured_end = s->last;
            r->compensated_end = s->last_c;
            r->delay = s->last - s->last_c;
        }
        r->intrusion += s->intrusion_ps / 1000u;
    }
    if (out->rank_count)
        qsort(out->ranks, out->rank_count, sizeof *out->ranks, compare_rank);
    return true;
}

bool compensation_run(const otfx_command *query, const otfx_leaf_input *input,
                      const compensation_observer *observer, compensation_result *out, char *error,
                      size_t error_size)
{
    memset(out, 0, sizeof *out);
    comp_run run = {.query = query, .app_ranks = input->app_ranks, .out = out, .observer = observer};
    region_facts_init(&run.facts, input->defs, NULL);
    run.cost_of_rank = input->app_ranks ? calloc(input->app_ranks, sizeof *run.cost_of_rank) : NULL;
    if (input->app_ranks && !run.cost_of_rank) {
        region_facts_free(&run.facts);
        snprintf(error, error_size, "profile --compensated: out of memory");
        return false;
    }
    for (size_t i = 0; i < input->rank_count; i++) {
        const otfx_rank_info *r = &input->ranks[i];
        if (r->rank >= input->app_ranks)
            continue;
        run.cost_of_rank[r->rank] = &r->overhead;
        if (!r->overhead.measured && otfx_rank_set_contains(&query->ranks, r->rank))
            out->unmeasured_ranks++;
    }
    /* every event from the start counts towards the delay at the window */
    otfx_command from_start = *query;
    from_start.from = 0;
    otfx_replay *replay = replay_leaf_run(&from_start, input, &comp_pass, &run, error, error_size);
    bool ok = replay != NULL;
    if (replay) {
        otfx_replay_get_stats(replay, &out->stats);
        otfx_replay_destroy(replay);
    }
    if (ok && (run.failed || run.facts.failed || !collect_ranks(&run))) {
        snprintf(error, error_size, "profile --compensated: out of memory");
        ok = false;
    }
    for (size_t i = 0; i < run.stream_capacity; i++)
        free(run.streams[i].stack);
    free(run.streams);
    free(run.cost_of_rank);
    region_facts_free(&run.facts);
    if (!ok)
        compensation_result_free(out);
    return ok;
}

void compensation_result_free(compensation_result *result)
{
    free(result->regions);
    free(result->ranks);
    memset(result, 0, sizeof *result);
}

size_t compensation_trace_of(const otfx_leaf_input *input, const otfx_replay_stream *stream)
{
    for (size_t i = 0; i < input->trace_count; i++) {
        const uint32_t index = input->rank_of_trace[i];
        const uint32_t thread = input->thread_of_trace ? input->thread_of_trace[i] : 0;
        if (index < input->rank_count && input->ranks[index].rank == stream->rank && thread == stream->thread)
            return i;
    }
    return input->trace_count;
}

/* ---- compensated copies of traces --------------------------------------------------------------- */

#define COPY_BATCH 256

typedef struct copy_stream {
    bool known;
    size_t trace; /* in the input (trace_count: not copied) */
    otfx_event batch[COPY_BATCH];
    size_t count;
    uint32_t depth;
    otfx_time last;
} copy_stream;

typedef struct copy_run {
    const otfx_leaf_input *input;
    otfx_trace **copies;
    copy_stream **streams; /* by replay stream index */
    size_t stream_capacity;
    bool failed;
    char error[256];
} copy_run;

static bool copy_flush(copy_run *run, copy_stream *c)
{
    size_t appended = 0;
    const otfx_status status =
        c->count ? otfx_trace_append(run->copies[c->trace], c->batch, c->count, &appended) : OTFX_OK;
    c->count = 0;
    if (status != OTFX_OK && status != OTFX_ERR_STOPPED && !run->failed) {
        run->failed = true;
        snprintf(run->error, sizeof run->error, "compensated copy of rank %u: %s",
                 run->input->ranks[run->input->rank_of_trace[c->trace]].rank, otfx_last_error());
    }
    return !run->failed;
}

static void copy_event(void *user, const otfx_replay_stream *stream, const otfx_event *event,
                       otfx_time compensated)
{
    copy_run *run = user;
    if (run->failed)
        return;
    copy_stream **slot =
        stream_slot((void **)&run->streams, &run->stream_capacity, sizeof *run->streams, stream->index);
    if (slot && !*slot)
        *slot = calloc(1, sizeof **slot);
    if (!slot || !*slot) {
        run->failed = true;
        snprintf(run->error, sizeof run->error, "out of memory");
        return;
    }
    copy_stream *c = *slot;
    if (!c->known) {
        c->known = true;
        c->trace = compensation_trace_of(run->input, stream);
    }
    if (c->trace >= run->input->trace_count || !run->copies[c->trace])
        return;
    if (event->type == OTFX_EV_LEAVE) {
        if (c->depth == 0)
            return; /* entered in a range a reduction removed */
        c->depth--;
    } else if (event->type == OTFX_EV_ENTER) {
        c->depth++;
    }
    otfx_event e = *event;
    e.time = compensated > c->last ? compensated : c->last;
    c->last = e.time;
    c->batch[c->count++] = e;
    if (c->count == COPY_BATCH)
        copy_flush(run, c);
}

bool otfx_analysis_compensated_traces(const otfx_command *query, const otfx_leaf_input *input,
                                      otfx_trace **copies, char *error, size_t error_size)
{
    copy_run run = {.input = input, .copies = copies};
    for (size_t i = 0; i < input->trace_count; i++)
        copies[i] = NULL;
    for (size_t i = 0; i < input->trace_count && !run.failed; i++) {
        const uint32_t index = input->rank_of_trace[i];
        otfx_trace_status status;
        if (index >= input->rank_count || !otfx_rank_set_contains(&query->ranks, input->ranks[index].rank) ||
            otfx_trace_status_get(input->traces[i], &status) != OTFX_OK)
            continue;
        otfx_trace_config config = otfx_trace_config_default(2 * status.budget_bytes);
        config.strategy = status.strategy == OTFX_REDUCE_COUNT ? OTFX_REDUCE_RING : status.strategy;
        config.structure = false;
        if (otfx_trace_create(&config, input->defs, otfx_trace_location(input->traces[i]), &copies[i]) !=
            OTFX_OK) {
            run.failed = true;
            snprintf(run.error, sizeof run.error, "cannot create a compensated copy: %s", otfx_last_error());
        }
    }
    bool ok = !run.failed;
    if (ok) {
        otfx_command everything = *query;
        everything.from = 0;
        everything.to = OTFX_TIME_MAX;
        const compensation_observer observer = {.user = &run, .event = copy_event};
        compensation_result result;
        ok = compensation_run(&everything, input, &observer, &result, error, error_size);
        if (ok)
            compensation_result_free(&result);
        for (size_t i = 0; ok && i < run.stream_capacity; i++)
            if (run.streams[i] && run.streams[i]->trace < input->trace_count && copies[run.streams[i]->trace])
                copy_flush(&run, run.streams[i]);
    }
    if (ok && run.failed) {
        snprintf(error, error_size, "%s", run.error);
        ok = false;
    } else if (!ok && run.failed) {
        snprintf(error, error_size, "%s", run.error);
    }
    for (size_t i = 0; i < run.stream_capacity; i++)
        free(run.streams[i]);
    free(run.streams);
    if (!ok)
        for (size_t i = 0; i < input->trace_count; i++) {
            otfx_trace_destroy(copies[i]);
            copies[i] = NULL;
        }
    return ok;
}

/* test_replay.c — the replay engine (otfx/replay.h) on traces built in-process, with a Lamport-clock
 * pass: point-to-point order, MPI_Sendrecv between two ranks, a token ring, collectives of every
 * dependency kind (barrier, allreduce, bcast, reduce, gather, ibarrier, scan), sends outside the window
 * or in a reduced range, a stall, ranks not selected or not served, threads of one rank, traces longer
 * than a slice; each over one place alone and over 1, 2 and 3 places (threads with an in-process
 * exchange, each place with its own definitions), which must give the same results. */
#define _POSIX_C_SOURCE 200809L

#include "inproc_exchange.h"

#include <otfx/replay.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_RANKS   6
#define MAX_THREADS 2
#define MAX_RECORDS 48

/* ---- traces --------------------------------------------------------------------------------------- */

typedef struct builder {
    otfx_defs *defs;
    uint32_t ranks;
    const bool *keep; /* ranks this place holds (NULL: all) */
    otfx_trace *trace[MAX_RANKS][MAX_THREADS];
    otfx_ref world, main_r, mpi_r;
} builder;

static void builder_init(builder *b, uint32_t ranks, const bool *keep, uint32_t place)
{
    memset(b, 0, sizeof *b);
    b->defs = otfx_defs_create();
    assert_non_null(b->defs);
    b->ranks = ranks;
    b->keep = keep;
    /* Places define their communicators apart: other refs on every place. */
    otfx_ref ref;
    for (uint32_t i = 0; i < place; i++) {
        uint32_t member = i;
        char name[32];
        snprintf(name, sizeof name, "other %u", i);
        assert_int_equal(otfx_defs_comm(b->defs, name, &member, 1, &ref), OTFX_OK);
    }
    uint32_t members[MAX_RANKS];
    for (uint32_t r = 0; r < ranks; r++)
        members[r] = r;
    assert_int_equal(otfx_defs_comm(b->defs, "MPI_COMM_WORLD", members, ranks, &b->world), OTFX_OK);
    assert_int_equal(otfx_defs_region(b->defs, "main", OTFX_ROLE_USER_FUNCTION, &b->main_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(b->defs, "MPI_Call", OTFX_ROLE_MPI_P2P, &b->mpi_r), OTFX_OK);
}

static void builder_free(builder *b)
{
    for (uint32_t r = 0; r < MAX_RANKS; r++)
        for (uint32_t t = 0; t < MAX_THREADS; t++)
            otfx_trace_destroy(b->trace[r][t]);
    otfx_defs_destroy(b->defs);
}

static void put(builder *b, uint32_t rank, uint32_t thread, otfx_event event)
{
    if (b->keep && !b->keep[rank])
        return;
    if (!b->trace[rank][thread]) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(b->defs, rank, thread, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(8 << 20);
        assert_int_equal(otfx_trace_create(&config, b->defs, location, &b->trace[rank][thread]), OTFX_OK);
    }
    size_t appended = 0;
    assert_int_equal(otfx_trace_append(b->trace[rank][thread], &event, 1, &appended), OTFX_OK);
}

static void enter(builder *b, uint32_t r, uint32_t th, otfx_time t, otfx_ref region)
{
    put(b, r, th, (otfx_event){.time = t, .type = OTFX_EV_ENTER, .u.region.region = region});
}

static void leave(builder *b, uint32_t r, uint32_t th, otfx_time t)
{
    put(b, r, th, (otfx_event){.time = t, .type = OTFX_EV_LEAVE});
}

static void msg(builder *b, uint32_t r, uint32_t th, otfx_time t, otfx_event_type type, uint32_t peer,
                uint32_t tag, uint64_t seq)
{
    otfx_event e = {.time = t, .type = type};
    e.u.msg.comm = b->world;
    e.u.msg.peer = peer;
    e.u.msg.tag = tag;
    e.u.msg.bytes = 8;
    e.u.msg.request = type == OTFX_EV_ISEND || type == OTFX_EV_IRECV ? 1000 + seq : 0;
    e.u.msg.seq = seq;
    put(b, r, th, e);
}

/* A blocking MPI call with one message in it. */
static void call_msg(builder *b, uint32_t r, otfx_time t, otfx_event_type type, uint32_t peer, uint32_t tag,
                     uint64_t seq)
{
    enter(b, r, 0, t, b->mpi_r);
    msg(b, r, 0, t + 1, type, peer, tag, seq);
    leave(b, r, 0, t + 5);
}

/* A blocking collective on the world. */
static void coll(builder *b, uint32_t r, otfx_time t, uint32_t op, uint32_t root, uint64_t seq)
{
    enter(b, r, 0, t, b->mpi_r);
    otfx_event e = {.time = t + 1, .type = OTFX_EV_COLL_BEGIN};
    e.u.coll.comm = b->world;
    e.u.coll.root = UINT32_MAX;
    e.u.coll.seq = seq;
    put(b, r, 0, e);
    e.time = t + 50;
    e.type = OTFX_EV_COLL_END;
    e.u.coll.op = op;
    e.u.coll.root = root;
    put(b, r, 0, e);
    leave(b, r, 0, t + 51);
}

/* ---- the pass: a Lamport clock, with a record of every receive and completion --------------------- */

typedef struct clock_value {
    uint64_t clock;
    otfx_time time;
    uint32_t rank, thread;
} clock_value;

typedef struct record {
    otfx_time time;
    uint32_t type;
    uint32_t missing; /* a receive's, or the first missing member's */
    uint64_t clock;
    uint32_t from_rank;
    otfx_time from_time;
    uint32_t values_mask, missing_mask;
} record;

typedef struct clock_state {
    uint64_t clock, events, receives, sends_ended, gaps, finished;
    otfx_time gap_time;
    uint32_t count;
    record records[MAX_RECORDS];
} clock_state;

typedef struct outcome {
    pthread_mutex_t lock;
    clock_state state[MAX_RANKS][MAX_THREADS];
    otfx_replay_stats stats; /* summed over the places */
} outcome;

static void on_event(void *user, otfx_replay_stream *stream, const otfx_event *event)
{
    (void)user;
    (void)event;
    clock_state *s = stream->state;
    s->clock++;
    s->events++;
}

static void on_send(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    (void)user;
    clock_state *s = stream->state;
    clock_value *v = value;
    v->clock = s->clock;
    v->time = event->time;
    v->rank = stream->rank;
    v->thread = stream->thread;
}

static void on_send_ended(void *user, otfx_replay_stream *stream, const otfx_event *leave_event, void *value)
{
    (void)user;
    (void)leave_event;
    (void)value;
    clock_state *s = stream->state;
    s->sends_ended++;
}

static record *next_record(clock_state *s, const otfx_event *event)
{
    if (s->count == MAX_RECORDS)
        return NULL;
    record *r = &s->records[s->count++];
    r->time = event->time;
    r->type = event->type;
    return r;
}

static void on_receive(void *user, otfx_replay_stream *stream, const otfx_event *event, const void *value,
                       otfx_replay_missing missing)
{
    (void)user;
    clock_state *s = stream->state;
    const clock_value *v = value;
    s->receives++;
    if (v && v->clock + 1 > s->clock)
        s->clock = v->clock + 1;
    record *r = next_record(s, event);
    if (!r)
        return;
    r->missing = missing;
    r->clock = s->clock;
    if (v) {
        r->from_rank = v->rank;
        r->from_time = v->time;
    }
}

static void on_arrive(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    (void)user;
    clock_state *s = stream->state;
    clock_value *v = value;
    v->clock = s->clock;
    v->time = event->time;
    v->rank = stream->rank;
}

static void on_complete(void *user, otfx_replay_stream *stream, const otfx_replay_collective *collective)
{
    (void)user;
    clock_state *s = stream->state;
    record *r = next_record(s, collective->end);
    /* its own arrival is always there (these traces hold every COLL_BEGIN and NBC_REQUEST) */
    assert_true(collective->self < collective->size);
    const clock_value *own = collective->value[collective->self];
    assert_non_null(own);
    assert_int_equal(own->rank, stream->rank);
    assert_true(own->time <= collective->end->time);
    for (uint32_t i = 0; i < collective->size; i++) {
        if (i == collective->self)
            continue; /* not a dependency of its own */
        const clock_value *v = collective->value[i];
        if (v) {
            assert_int_equal(v->rank, collective->world[i]);
            if (v->clock + 1 > s->clock)
                s->clock = v->clock + 1;
            if (r)
                r->values_mask |= 1u << i;
        } else if (collective->missing[i] != OTFX_REPLAY_SEEN && r) {
            r->missing_mask |= 1u << i;
            if (!r->missing)
                r->missing = collective->missing[i];
        }
    }
    if (r)
        r->clock = s->clock;
}

static void on_gap(void *user, otfx_replay_stream *stream, otfx_time begin, otfx_time end,
                   otfx_replay_gap why)
{
    (void)user;
    (void)why;
    clock_state *s = stream->state;
    s->gaps++;
    s->gap_time += end - begin;
}

static void on_finish(void *user, otfx_replay_stream *stream)
{
    outcome *out = user;
    clock_state *s = stream->state;
    s->finished++;
    pthread_mutex_lock(&out->lock);
    out->state[stream->rank][stream->thread] = *s;
    pthread_mutex_unlock(&out->lock);
}

static const otfx_replay_pass clock_pass = {.name = "lamport",
                                            .stream_state_size = sizeof(clock_state),
                                            .value_size = sizeof(clock_value),
                                            .event = on_event,
                                            .send = on_send,
                                            .send_ended = on_send_ended,
                                            .receive = on_receive,
                                            .arrive = on_arrive,
                                            .complete = on_complete,
                                            .gap = on_gap,
                                            .finish = on_finish};

/* ---- running a scenario ---------------------------------------------------------------------------- */

typedef struct scenario {
    void (*build)(builder *b);
    uint32_t ranks;
    otfx_time from, to, tolerance;
    uint32_t not_selected; /* a rank the query does not select (UINT32_MAX: none) */
    uint32_t not_served;   /* a rank no place serves (UINT32_MAX: none) */
} scenario;

static bool selects(void *user, uint32_t rank)
{
    const scenario *sc = user;
    return rank != sc->not_selected;
}

static void add_stats(otfx_replay_stats *sum, const otfx_replay_stats *s)
{
    uint64_t *a = (uint64_t *)sum;
    const uint64_t *b = (const uint64_t *)s;
    for (size_t i = 0; i < sizeof *s / sizeof(uint64_t); i++)
        a[i] += b[i];
}

static otfx_replay *make_replay(const scenario *sc, builder *b, outcome *out)
{
    otfx_replay_config config = {.from = sc->from,
                                 .to = sc->to ? sc->to : OTFX_TIME_MAX,
                                 .tolerance = sc->tolerance ? sc->tolerance : 20,
                                 .pass = &clock_pass,
                                 .pass_user = out,
                                 .selects_rank = selects,
                                 .selects_user = (void *)sc,
                                 .app_ranks = sc->ranks};
    char error[256] = "";
    otfx_replay *replay = otfx_replay_create(&config, b->defs, error, sizeof error);
    assert_non_null(replay);
    for (uint32_t r = 0; r < MAX_RANKS; r++)
        for (uint32_t t = 0; t < MAX_THREADS; t++)
            if (b->trace[r][t])
                assert_int_equal(otfx_replay_add_trace(replay, b->trace[r][t], r, t), OTFX_OK);
    return replay;
}

static uint64_t deadline(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_sec + 60) * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void run_alone(const scenario *sc, outcome *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_init(&out->lock, NULL);
    bool keep[MAX_RANKS];
    for (uint32_t r = 0; r < MAX_RANKS; r++)
        keep[r] = r != sc->not_served;
    builder b;
    builder_init(&b, sc->ranks, keep, 0);
    sc->build(&b);
    otfx_replay *replay = make_replay(sc, &b, out);
    char error[256] = "";
    otfx_status status = otfx_replay_run(replay, NULL, deadline(), error, sizeof error);
    if (status != OTFX_OK)
        fail_msg("replay: %s", error);
    otfx_replay_get_stats(replay, &out->stats);
    otfx_replay_destroy(replay);
    builder_free(&b);
}

typedef struct place_job {
    const scenario *sc;
    outcome *out;
    bool keep[MAX_RANKS];
    otfx_status status;
    char error[256];
} place_job;

static void run_place(const otfx_place_exchange *exchange, void *user)
{
    place_job *job = user;
    builder b;
    builder_init(&b, job->sc->ranks, job->keep, exchange->self);
    job->sc->build(&b);
    otfx_replay *replay = make_replay(job->sc, &b, job->out);
    job->status = otfx_replay_run(replay, exchange, deadline(), job->error, sizeof job->error);
    otfx_replay_stats stats;
    otfx_replay_get_stats(replay, &stats);
    pthread_mutex_lock(&job->out->lock);
    add_stats(&job->out->stats, &stats);
    pthread_mutex_unlock(&job->out->lock);
    otfx_replay_destroy(replay);
    builder_free(&b);
}

static void run_places(const scenario *sc, uint32_t places, outcome *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_init(&out->lock, NULL);
    uint32_t place_of_rank[MAX_RANKS];
    place_job jobs[3];
    void *users[3];
    memset(jobs, 0, sizeof jobs);
    for (uint32_t r = 0; r < sc->ranks; r++)
        place_of_rank[r] = r == sc->not_served ? UINT32_MAX : r * places / sc->ranks;
    for (uint32_t p = 0; p < places; p++) {
        jobs[p].sc = sc;
        jobs[p].out = out;
        for (uint32_t r = 0; r < sc->ranks; r++)
            jobs[p].keep[r] = place_of_rank[r] == p;
        users[p] = &jobs[p];
    }
    inproc_world *world = inproc_world_create(places, place_of_rank, sc->ranks);
    assert_non_null(world);
    inproc_run_places(world, run_place, users);
    inproc_world_destroy(world);
    for (uint32_t p = 0; p < places; p++)
        if (jobs[p].status != OTFX_OK)
            fail_msg("place %u of %u: %s", p, places, jobs[p].error);
}

/* The results of the places together are the ones of one place alone. Only whether a blocking send's
 * value waited for the end of its call may differ (it goes early when its stream must wait). */
static void assert_same(const outcome *alone, const outcome *split, uint32_t places)
{
    for (uint32_t r = 0; r < MAX_RANKS; r++)
        for (uint32_t t = 0; t < MAX_THREADS; t++) {
            clock_state a = alone->state[r][t], s = split->state[r][t];
            a.sends_ended = s.sends_ended = 0;
            if (memcmp(&a, &s, sizeof(clock_state)) != 0) {
                for (uint32_t i = 0; i < a.count || i < s.count; i++)
                    fprintf(stderr, "  record %u: time %llu/%llu missing %u/%u clock %llu/%llu\n", i,
                            (unsigned long long)a.records[i].time, (unsigned long long)s.records[i].time,
                            a.records[i].missing, s.records[i].missing,
                            (unsigned long long)a.records[i].clock, (unsigned long long)s.records[i].clock);
                fail_msg("rank %u thread %u differs over %u places (clock %llu vs %llu)", r, t, places,
                         (unsigned long long)alone->state[r][t].clock,
                         (unsigned long long)split->state[r][t].clock);
            }
        }
    const otfx_replay_stats *a = &alone->stats, *s = &split->stats;
    assert_int_equal(a->streams, s->streams);
    assert_int_equal(a->events, s->events);
    assert_int_equal(a->sends, s->sends);
    assert_int_equal(a->receives, s->receives);
    assert_int_equal(a->receives_matched_local + a->receives_matched_remote,
                     s->receives_matched_local + s->receives_matched_remote);
    for (int why = 0; why < OTFX_REPLAY_MISSING_COUNT; why++)
        assert_int_equal(a->receives_missing[why], s->receives_missing[why]);
    assert_int_equal(a->sends_unreceived, s->sends_unreceived);
    assert_int_equal(a->collectives_complete, s->collectives_complete);
    assert_int_equal(a->collectives_partial, s->collectives_partial);
    assert_int_equal(a->gaps, s->gaps);
    assert_int_equal(a->gap_time, s->gap_time);
    assert_int_equal(s->values_sent, s->values_received);
    if (places == 1)
        assert_int_equal(s->values_sent, 0);
}

/* Runs alone, then over 1, 2 and 3 places, checking they agree; `alone` gets the first. */
static void run_everywhere(const scenario *sc, outcome *alone)
{
    run_alone(sc, alone);
    outcome *split = malloc(sizeof *split);
    assert_non_null(split);
    for (uint32_t places = 1; places <= 3; places++) {
        run_places(sc, places, split);
        assert_same(alone, split, places);
    }
    free(split);
}

static const record *rec(const outcome *o, uint32_t rank, uint32_t thread, uint32_t index)
{
    assert_true(index < o->state[rank][thread].count);
    return &o->state[rank][thread].records[index];
}

/* ---- scenarios ------------------------------------------------------------------------------------- */

static void build_p2p(builder *b)
{
    enter(b, 0, 0, 10, b->main_r);
    call_msg(b, 0, 100, OTFX_EV_SEND, 1, 5, 1);
    enter(b, 0, 0, 300, b->mpi_r);
    msg(b, 0, 0, 400, OTFX_EV_IRECV, 1, 6, 1);
    leave(b, 0, 0, 410);
    leave(b, 0, 0, 1000);
    enter(b, 1, 0, 10, b->main_r);
    call_msg(b, 1, 150, OTFX_EV_RECV, 0, 5, 1);
    enter(b, 1, 0, 250, b->mpi_r);
    msg(b, 1, 0, 260, OTFX_EV_ISEND, 0, 6, 1);
    leave(b, 1, 0, 270);
    leave(b, 1, 0, 1000);
}

static void test_point_to_point(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_p2p, .ranks = 2, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    const record *r1 = rec(o, 1, 0, 0), *r0 = rec(o, 0, 0, 0);
    assert_int_equal(r1->type, OTFX_EV_RECV);
    assert_int_equal(r1->missing, OTFX_REPLAY_SEEN);
    assert_int_equal(r1->from_rank, 0);
    assert_int_equal(r1->from_time, 101);
    assert_int_equal(r0->type, OTFX_EV_IRECV);
    assert_int_equal(r0->from_rank, 1);
    assert_int_equal(r0->from_time, 260);
    assert_true(r0->clock > r1->clock);              /* the clock went 0 → 1 → 0 */
    assert_int_equal(o->state[0][0].sends_ended, 1); /* the blocking send's value waited for its LEAVE */
    assert_int_equal(o->stats.receives_matched_local, 2);
    assert_int_equal(o->stats.sends_unreceived, 0);
    assert_int_equal(o->stats.stall_releases, 0);
    assert_int_equal(o->state[0][0].finished, 1);
    /* The window begins at 0, the traces at their first events (10): nothing is missing before them. */
    assert_int_equal(o->stats.gaps, 0);
    assert_int_equal(o->stats.gap_time, 0);
    free(o);
}

static void build_sendrecv(builder *b)
{
    for (uint32_t r = 0; r < 2; r++) {
        enter(b, r, 0, 10, b->main_r);
        enter(b, r, 0, 100, b->mpi_r);
        msg(b, r, 0, 110, OTFX_EV_SEND, 1 - r, 1, 1);
        msg(b, r, 0, 120 + r, OTFX_EV_RECV, 1 - r, 1, 1);
        leave(b, r, 0, 130);
        leave(b, r, 0, 200);
    }
}

static void test_sendrecv(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_sendrecv, .ranks = 2, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    for (uint32_t r = 0; r < 2; r++) {
        assert_int_equal(rec(o, r, 0, 0)->missing, OTFX_REPLAY_SEEN);
        assert_int_equal(rec(o, r, 0, 0)->from_rank, 1 - r);
    }
    assert_int_equal(o->stats.stall_releases, 0);
    free(o);
}

/* A token goes round four ranks twice: 0 → 1 → 2 → 3 → 0 → … */
static void build_ring(builder *b)
{
    for (uint32_t r = 0; r < 4; r++)
        enter(b, r, 0, 10, b->main_r);
    otfx_time t = 100;
    for (uint32_t lap = 1; lap <= 2; lap++)
        for (uint32_t r = 0; r < 4; r++) {
            uint32_t next = (r + 1) % 4;
            if (!(lap == 1 && r == 0))
                call_msg(b, r, t - 50, OTFX_EV_RECV, (r + 3) % 4, 0, lap - (r == 0));
            call_msg(b, r, t, OTFX_EV_SEND, next, 0, lap);
            t += 100;
        }
    call_msg(b, 0, t, OTFX_EV_RECV, 3, 0, 2);
    for (uint32_t r = 0; r < 4; r++)
        leave(b, r, 0, t + 100);
}

static void test_ring(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_ring, .ranks = 4, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.receives, 8);
    assert_int_equal(o->stats.receives_matched_local, 8);
    /* Every hop raises the clock: rank 0's last receive is the latest. */
    uint64_t previous = 0;
    const uint32_t order[] = {1, 2, 3, 0};
    for (uint32_t lap = 0; lap < 2; lap++)
        for (uint32_t i = 0; i < 4; i++) {
            const record *r = rec(o, order[i], 0, order[i] == 0 ? lap : lap);
            assert_int_equal(r->missing, OTFX_REPLAY_SEEN);
            assert_true(r->clock > previous);
            previous = r->clock;
        }
    free(o);
}

enum { OP_BARRIER = 0, OP_BCAST = 1, OP_GATHER = 2, OP_ALLREDUCE = 11, OP_REDUCE = 12, OP_SCAN = 14 };

static void build_collectives(builder *b)
{
    for (uint32_t r = 0; r < 4; r++) {
        enter(b, r, 0, 10, b->main_r);
        coll(b, r, 100 + 10 * r, OP_BARRIER, UINT32_MAX, 1);
        coll(b, r, 300 + 10 * r, OP_ALLREDUCE, UINT32_MAX, 2);
        coll(b, r, 500 + 10 * r, OP_BCAST, 2, 3);
        coll(b, r, 700 + 10 * r, OP_REDUCE, 1, 4);
        coll(b, r, 900 + 10 * r, OP_GATHER, 3, 5);
        /* MPI_Ibarrier … MPI_Wait */
        enter(b, r, 0, 1100 + r, b->mpi_r);
        put(b, r, 0, (otfx_event){.time = 1101 + r, .type = OTFX_EV_NBC_REQUEST, .u.request.request = 77});
        leave(b, r, 0, 1102 + r);
        enter(b, r, 0, 1200 + 20 * r, b->mpi_r);
        otfx_event done = {.time = 1210 + 20 * r, .type = OTFX_EV_NBC_COMPLETE};
        done.u.coll.comm = b->world;
        done.u.coll.op = OP_BARRIER;
        done.u.coll.root = UINT32_MAX;
        done.u.coll.request = 77;
        done.u.coll.seq = 6;
        put(b, r, 0, done);
        leave(b, r, 0, 1211 + 20 * r);
        coll(b, r, 1400 + 10 * r, OP_SCAN, UINT32_MAX, 7);
        leave(b, r, 0, 2000);
    }
}

/* A started nonblocking collective, and its completion (a Wait) on `comm`. */
static void nbc_start(builder *b, uint32_t r, otfx_time t, uint64_t request)
{
    enter(b, r, 0, t, b->mpi_r);
    put(b, r, 0, (otfx_event){.time = t + 1, .type = OTFX_EV_NBC_REQUEST, .u.request.request = request});
    leave(b, r, 0, t + 2);
}

static void nbc_wait(builder *b, uint32_t r, otfx_time t, otfx_ref comm, uint32_t op, uint64_t request,
                     uint64_t seq)
{
    enter(b, r, 0, t, b->mpi_r);
    otfx_event done = {.time = t + 1, .type = OTFX_EV_NBC_COMPLETE};
    done.u.coll.comm = comm;
    done.u.coll.op = op;
    done.u.coll.root = UINT32_MAX;
    done.u.coll.request = request;
    done.u.coll.seq = seq;
    put(b, r, 0, done);
    leave(b, r, 0, t + 2);
}

/* MPI_Ibarrier, then point-to-point that depends on another rank, then MPI_Wait: rank 1 completes the
 * barrier and only then sends to rank 0, which receives before it completes the barrier. Correct MPI
 * (the barrier completes once everybody started it), so the replay must not need a stall release. */
static void build_nbc_then_p2p(builder *b)
{
    for (uint32_t r = 0; r < 3; r++) {
        enter(b, r, 0, 10, b->main_r);
        nbc_start(b, r, 100, 77);
    }
    call_msg(b, 0, 300, OTFX_EV_RECV, 1, 1, 1);
    nbc_wait(b, 0, 400, b->world, OP_BARRIER, 77, 1);
    nbc_wait(b, 1, 150, b->world, OP_BARRIER, 77, 1);
    call_msg(b, 1, 200, OTFX_EV_SEND, 0, 1, 1);
    nbc_wait(b, 2, 150, b->world, OP_BARRIER, 77, 1);
    for (uint32_t r = 0; r < 3; r++)
        leave(b, r, 0, 1000);
}

static void test_nbc_with_p2p_before_its_wait(void **unused)
{
    (void)unused;
    scenario sc = {
        .build = build_nbc_then_p2p, .ranks = 3, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.stall_releases, 0);
    assert_int_equal(o->stats.receives, 1);
    assert_int_equal(o->stats.receives_matched_local + o->stats.receives_matched_remote, 1);
    for (int why = 0; why < OTFX_REPLAY_MISSING_COUNT; why++)
        assert_int_equal(o->stats.receives_missing[why], 0);
    assert_int_equal(o->stats.collectives_complete, 3);
    assert_int_equal(o->stats.collectives_partial, 0);
    free(o);
}

/* Two nonblocking collectives outstanding at once on different communicators (an Iallreduce on the
 * world, then an Ibarrier on a duplicate), completed in the opposite order, with point-to-point traffic
 * in between that depends on a rank completing the second one first. */
static void build_two_nbcs(builder *b)
{
    uint32_t members[3] = {0, 1, 2};
    otfx_ref dup;
    assert_int_equal(otfx_defs_comm(b->defs, "MPI_COMM_WORLD dup", members, 3, &dup), OTFX_OK);
    for (uint32_t r = 0; r < 3; r++) {
        enter(b, r, 0, 10, b->main_r);
        nbc_start(b, r, 100, 1);
        nbc_start(b, r, 110, 2);
    }
    call_msg(b, 0, 300, OTFX_EV_RECV, 1, 1, 1);
    nbc_wait(b, 0, 400, dup, OP_BARRIER, 2, 1);
    nbc_wait(b, 0, 410, b->world, OP_ALLREDUCE, 1, 1);
    nbc_wait(b, 1, 150, dup, OP_BARRIER, 2, 1);
    call_msg(b, 1, 200, OTFX_EV_SEND, 0, 1, 1);
    nbc_wait(b, 1, 250, b->world, OP_ALLREDUCE, 1, 1);
    nbc_wait(b, 2, 150, dup, OP_BARRIER, 2, 1);
    nbc_wait(b, 2, 160, b->world, OP_ALLREDUCE, 1, 1);
    for (uint32_t r = 0; r < 3; r++)
        leave(b, r, 0, 1000);
}

static void test_two_nbcs_completed_in_opposite_order(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_two_nbcs, .ranks = 3, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.stall_releases, 0);
    assert_int_equal(o->stats.receives, 1);
    assert_int_equal(o->stats.receives_matched_local + o->stats.receives_matched_remote, 1);
    for (int why = 0; why < OTFX_REPLAY_MISSING_COUNT; why++)
        assert_int_equal(o->stats.receives_missing[why], 0);
    assert_int_equal(o->stats.collectives_complete, 6);
    assert_int_equal(o->stats.collectives_partial, 0);
    free(o);
}

static void test_collectives(void **unused)
{
    (void)unused;
    scenario sc = {
        .build = build_collectives, .ranks = 4, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.collectives_complete, 28);
    assert_int_equal(o->stats.collectives_partial, 0);
    for (uint32_t r = 0; r < 4; r++) {
        assert_int_equal(o->state[r][0].count, 7);
        const uint32_t expected[7] = {0xf,
                                      0xf,
                                      r == 2 ? 0 : 1u << 2, /* bcast from 2 */
                                      r == 1 ? 0xf : 0,     /* reduce to 1 */
                                      r == 3 ? 0xf : 0,     /* gather to 3 */
                                      0xf,                  /* ibarrier */
                                      (1u << r) - 1};       /* scan */
        for (uint32_t i = 0; i < 7; i++) {
            /* a member's own arrival is value[self], not recorded as a dependency */
            assert_int_equal(rec(o, r, 0, i)->values_mask, expected[i] & ~(1u << r));
            assert_int_equal(rec(o, r, 0, i)->missing_mask, 0);
        }
    }
    /* Rank 3's scan completion follows everybody's arrival at it. */
    assert_true(rec(o, 3, 0, 6)->clock >= rec(o, 0, 0, 6)->clock);
    free(o);
}

/* Rank 0's first send lies before the window, its second in a reduced range; the third is seen. */
static void build_missing(builder *b)
{
    enter(b, 0, 0, 10, b->main_r);
    call_msg(b, 0, 100, OTFX_EV_SEND, 1, 1, 1);
    otfx_event reduced = {.time = 1500, .type = OTFX_EV_REDUCTION};
    reduced.u.reduction.strategy = OTFX_REDUCE_TYPE;
    reduced.u.reduction.begin = 1500;
    reduced.u.reduction.end = 2500;
    reduced.u.reduction.events_removed = 3;
    put(b, 0, 0, reduced);
    call_msg(b, 0, 3000, OTFX_EV_SEND, 1, 1, 3);
    call_msg(b, 0, 3050, OTFX_EV_SEND, 1, 1, 0);
    leave(b, 0, 0, 5000);
    enter(b, 1, 0, 10, b->main_r);
    call_msg(b, 1, 1200, OTFX_EV_RECV, 0, 1, 1);
    call_msg(b, 1, 2600, OTFX_EV_RECV, 0, 1, 2);
    call_msg(b, 1, 3100, OTFX_EV_RECV, 0, 1, 3);
    call_msg(b, 1, 3200, OTFX_EV_RECV, 0, 1, 0);
    leave(b, 1, 0, 5000);
}

static void test_missing_sends(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_missing,
                   .ranks = 2,
                   .from = 1000,
                   .to = 10000,
                   .not_selected = UINT32_MAX,
                   .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(rec(o, 1, 0, 0)->missing, OTFX_REPLAY_NOT_HELD);
    assert_int_equal(rec(o, 1, 0, 1)->missing, OTFX_REPLAY_NOT_HELD);
    assert_int_equal(rec(o, 1, 0, 2)->missing, OTFX_REPLAY_SEEN);
    assert_int_equal(rec(o, 1, 0, 2)->from_time, 3001);
    assert_int_equal(rec(o, 1, 0, 3)->missing, OTFX_REPLAY_NO_ORDINAL);
    assert_int_equal(o->stats.receives_missing[OTFX_REPLAY_NOT_HELD], 2);
    assert_int_equal(o->stats.receives_missing[OTFX_REPLAY_NO_ORDINAL], 1);
    assert_int_equal(o->stats.sends_unreceived, 1); /* the one without an ordinal */
    /* Rank 0: the reduced range and the window's end after its last event; rank 1: the end. */
    assert_int_equal(o->state[0][0].gaps, 2);
    assert_int_equal(o->state[0][0].gap_time, 1000 + 5000);
    assert_int_equal(o->stats.gaps, 3);
    assert_int_equal(o->stats.stall_releases, 0);
    free(o);
}

/* Calls at the top level only: nothing is open between them, so a window that starts between two of
 * them begins with no event, though the traces hold their detail from long before. */
static void build_top_level(builder *b)
{
    call_msg(b, 0, 100, OTFX_EV_SEND, 1, 1, 1);
    call_msg(b, 0, 3000, OTFX_EV_SEND, 1, 1, 2);
    call_msg(b, 1, 200, OTFX_EV_RECV, 0, 1, 1);
    call_msg(b, 1, 3100, OTFX_EV_RECV, 0, 1, 2);
}

/* A window from 1000 misses nothing: the time before each rank's first event in it holds no events, and
 * the traces' detail reaches back before the window (it is not "before-held"). */
static void test_window_between_calls(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_top_level,
                   .ranks = 2,
                   .from = 1000,
                   .not_selected = UINT32_MAX,
                   .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.gaps, 0);
    assert_int_equal(o->stats.gap_time, 0);
    assert_int_equal(rec(o, 1, 0, 0)->missing, OTFX_REPLAY_SEEN);
    free(o);
}

/* Both ranks receive first, from each other: no send ever comes. */
static void build_stall(builder *b)
{
    for (uint32_t r = 0; r < 2; r++) {
        enter(b, r, 0, 10, b->main_r);
        call_msg(b, r, 1000, OTFX_EV_RECV, 1 - r, 9, 1);
        call_msg(b, r, 2000, OTFX_EV_SEND, 1 - r, 8, 1);
        call_msg(b, r, 3000, OTFX_EV_RECV, 1 - r, 8, 1);
        leave(b, r, 0, 5000);
    }
}

static void test_stall(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_stall, .ranks = 2, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    for (uint32_t r = 0; r < 2; r++) {
        assert_int_equal(rec(o, r, 0, 0)->missing, OTFX_REPLAY_STALLED);
        assert_int_equal(rec(o, r, 0, 1)->missing, OTFX_REPLAY_SEEN);
    }
    assert_int_equal(o->stats.receives_missing[OTFX_REPLAY_STALLED], 2);
    assert_true(o->stats.stall_releases >= 1);
    free(o);
}

/* Rank 1 is left out (not selected, or served by no place). */
static void build_three(builder *b)
{
    for (uint32_t r = 0; r < 3; r++)
        enter(b, r, 0, 10, b->main_r);
    call_msg(b, 0, 100, OTFX_EV_SEND, 1, 1, 1);
    call_msg(b, 1, 150, OTFX_EV_RECV, 0, 1, 1);
    call_msg(b, 1, 200, OTFX_EV_SEND, 0, 2, 1);
    call_msg(b, 0, 300, OTFX_EV_RECV, 1, 2, 1);
    call_msg(b, 0, 310, OTFX_EV_SEND, 2, 3, 1);
    call_msg(b, 2, 320, OTFX_EV_RECV, 0, 3, 1);
    for (uint32_t r = 0; r < 3; r++) {
        coll(b, r, 400, OP_BARRIER, UINT32_MAX, 1);
        leave(b, r, 0, 1000);
    }
}

static void check_rank_one_left_out(const outcome *o)
{
    assert_int_equal(o->state[1][0].finished, 0);
    assert_int_equal(rec(o, 0, 0, 0)->missing, OTFX_REPLAY_RANK_NOT_SERVED);
    assert_int_equal(rec(o, 2, 0, 0)->missing, OTFX_REPLAY_SEEN);
    for (uint32_t r = 0; r < 3; r += 2) {
        assert_int_equal(rec(o, r, 0, 1)->values_mask, 0x5 & ~(1u << r));
        assert_int_equal(rec(o, r, 0, 1)->missing_mask, 0x2);
        assert_int_equal(rec(o, r, 0, 1)->missing, OTFX_REPLAY_RANK_NOT_SERVED);
    }
    assert_int_equal(o->stats.sends_unreceived, 1); /* 0 → 1 */
    assert_int_equal(o->stats.collectives_partial, 2);
    assert_int_equal(o->stats.stall_releases, 0);
}

static void test_ranks_not_selected(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_three, .ranks = 3, .not_selected = 1, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    check_rank_one_left_out(o);
    scenario unserved = {.build = build_three, .ranks = 3, .not_selected = UINT32_MAX, .not_served = 1};
    outcome *u = malloc(sizeof *u);
    run_everywhere(&unserved, u);
    check_rank_one_left_out(u);
    free(u);
    free(o);
}

/* Messages between threads of two ranks: any thread of a rank sends or receives on its channels. */
static void build_threads(builder *b)
{
    for (uint32_t r = 0; r < 2; r++)
        for (uint32_t t = 0; t < 2; t++)
            enter(b, r, t, 10, b->main_r);
    msg(b, 0, 1, 100, OTFX_EV_ISEND, 1, 3, 1);
    msg(b, 1, 1, 150, OTFX_EV_ISEND, 0, 4, 1);
    msg(b, 1, 0, 200, OTFX_EV_IRECV, 0, 3, 1);
    msg(b, 0, 0, 250, OTFX_EV_IRECV, 1, 4, 1);
    msg(b, 0, 0, 300, OTFX_EV_ISEND, 1, 3, 2);
    msg(b, 1, 1, 350, OTFX_EV_IRECV, 0, 3, 2);
    for (uint32_t r = 0; r < 2; r++)
        for (uint32_t t = 0; t < 2; t++)
            leave(b, r, t, 1000);
}

static void test_threads(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_threads, .ranks = 2, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.streams, 4);
    assert_int_equal(rec(o, 1, 0, 0)->from_time, 100);
    assert_int_equal(rec(o, 0, 0, 0)->from_time, 150);
    assert_int_equal(rec(o, 1, 1, 0)->from_time, 300);
    assert_int_equal(o->stats.receives_matched_local, 3);
    free(o);
}

/* Longer than a slice, with many events at one time across the slice boundaries. */
enum { LONG_MESSAGES = 20000 };

static void build_long(builder *b)
{
    enter(b, 0, 0, 10, b->main_r);
    enter(b, 1, 0, 10, b->main_r);
    for (uint32_t i = 0; i < LONG_MESSAGES; i++) {
        msg(b, 0, 0, 1000 + i / 8 * 10, OTFX_EV_ISEND, 1, 0, i + 1);
        msg(b, 1, 0, 1005 + i / 8 * 10, OTFX_EV_IRECV, 0, 0, i + 1);
    }
    leave(b, 0, 0, 1000000);
    leave(b, 1, 0, 1000000);
}

static void test_slices(void **unused)
{
    (void)unused;
    scenario sc = {.build = build_long, .ranks = 2, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = malloc(sizeof *o);
    run_everywhere(&sc, o);
    assert_int_equal(o->stats.events, 2 * (LONG_MESSAGES + 2));
    assert_int_equal(o->state[1][0].receives, LONG_MESSAGES);
    assert_int_equal(o->stats.receives_matched_local, LONG_MESSAGES);
    assert_int_equal(o->stats.sends_unreceived, 0);
    /* Every receive saw its own send: the clock climbed with each. */
    assert_int_equal(o->state[1][0].clock, LONG_MESSAGES + 3);
    free(o);
}

static void test_malformed_batches(void **unused)
{
    (void)unused;
    builder b;
    builder_init(&b, 2, NULL, 0);
    build_p2p(&b);
    scenario sc = {.build = build_p2p, .ranks = 2, .not_selected = UINT32_MAX, .not_served = UINT32_MAX};
    outcome *o = calloc(1, sizeof *o);
    otfx_replay *replay = make_replay(&sc, &b, o);
    unsigned char bytes[64] = {'R', 'P', 'L', 'Y', sizeof(clock_value), 0, 0, 0, 3, 9, 0, 0, 0};
    assert_int_equal(otfx_replay_deliver(replay, bytes, 8 + 13), OTFX_ERR_CORRUPT); /* rank 9 of 2 */
    assert_int_equal(otfx_replay_deliver(replay, bytes, 3), OTFX_ERR_CORRUPT);
    bytes[8] = 1;
    assert_int_equal(otfx_replay_deliver(replay, bytes, 20), OTFX_ERR_CORRUPT); /* truncated */
    bytes[8] = 3;
    bytes[9] = 1;
    assert_int_equal(otfx_replay_deliver(replay, bytes, 8 + 13), OTFX_OK);
    assert_string_equal(otfx_replay_missing_name(OTFX_REPLAY_NOT_HELD), "not-held");
    otfx_replay_destroy(replay);
    builder_free(&b);
    free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_to_point),
        cmocka_unit_test(test_sendrecv),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_nbc_with_p2p_before_its_wait),
        cmocka_unit_test(test_two_nbcs_completed_in_opposite_order),
        cmocka_unit_test(test_missing_sends),
        cmocka_unit_test(test_window_between_calls),
        cmocka_unit_test(test_stall),
        cmocka_unit_test(test_ranks_not_selected),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_malformed_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

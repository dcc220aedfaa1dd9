/* replay_world.h — synthetic otfx traces for the replay-based modules' tests (critical-path,
 * wait-states): regions, blocking messages with ordinals, collectives with instance ordinals, and a
 * module run whose reply's fields are looked up by line: on one place (leaf, merge, finish), or with
 * the ranks split over several simulated places (one thread each, with its own definitions and the
 * in-process exchange), whose partial results are merged in a chosen order. */
#ifndef OTFX_TEST_REPLAY_WORLD_H
#define OTFX_TEST_REPLAY_WORLD_H

#include "inproc_exchange.h"

#include <otfx/analysis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RW_MAX_RANKS 16
#define RW_MS        1000000ull

typedef struct rworld {
    otfx_defs *defs;
    uint32_t ranks;
    otfx_trace *traces[RW_MAX_RANKS];
    otfx_rank_info info[RW_MAX_RANKS];
    uint32_t local[RW_MAX_RANKS], threads[RW_MAX_RANKS];
    otfx_ref comm;
    otfx_ref mpi_send, mpi_recv;
    uint64_t sends[RW_MAX_RANKS][RW_MAX_RANKS]; /* ordinals per channel (tag 0) */
    uint64_t receives[RW_MAX_RANKS][RW_MAX_RANKS];
    uint64_t collectives; /* instances on comm */
} rworld;

static inline otfx_ref rw_region(rworld *w, const char *name, otfx_region_role role)
{
    otfx_ref ref;
    assert_int_equal(otfx_defs_region(w->defs, name, role, &ref), OTFX_OK);
    return ref;
}

static inline void rw_init(rworld *w, uint32_t ranks)
{
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    w->ranks = ranks;
    uint32_t members[RW_MAX_RANKS];
    for (uint32_t r = 0; r < ranks; r++)
        members[r] = r;
    assert_int_equal(otfx_defs_comm(w->defs, "MPI_COMM_WORLD", members, ranks, &w->comm), OTFX_OK);
    w->mpi_send = rw_region(w, "MPI_Send", OTFX_ROLE_MPI_P2P);
    w->mpi_recv = rw_region(w, "MPI_Recv", OTFX_ROLE_MPI_P2P);
    for (uint32_t r = 0; r < ranks; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(w->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, w->defs, location, &w->traces[r]), OTFX_OK);
        w->info[r] = (otfx_rank_info){.rank = r, .recording = true};
        w->local[r] = r;
    }
}

static inline void rw_free(rworld *w)
{
    for (uint32_t r = 0; r < w->ranks; r++)
        otfx_trace_destroy(w->traces[r]);
    otfx_defs_destroy(w->defs);
}

static inline void rw_event(rworld *w, uint32_t rank, otfx_event e)
{
    size_t appended = 0;
    assert_int_equal(otfx_trace_append(w->traces[rank], &e, 1, &appended), OTFX_OK);
}

static inline void rw_enter(rworld *w, uint32_t rank, uint64_t time, otfx_ref region)
{
    rw_event(w, rank, (otfx_event){.time = time, .type = OTFX_EV_ENTER, .u.region.region = region});
}

static inline void rw_leave(rworld *w, uint32_t rank, uint64_t time)
{
    rw_event(w, rank, (otfx_event){.time = time, .type = OTFX_EV_LEAVE});
}

/* A region from `begin` to `end` with nothing inside. */
static inline void rw_compute(rworld *w, uint32_t rank, otfx_ref region, uint64_t begin, uint64_t end)
{
    rw_enter(w, rank, begin, region);
    rw_leave(w, rank, end);
}

static inline void rw_send_event(rworld *w, uint32_t rank, uint64_t time, uint32_t peer)
{
    otfx_event e = {.time = time, .type = OTFX_EV_SEND};
    e.u.msg.comm = w->comm;
    e.u.msg.peer = peer;
    e.u.msg.bytes = 8;
    e.u.msg.seq = ++w->sends[rank][peer];
    rw_event(w, rank, e);
}

static inline void rw_recv_event(rworld *w, uint32_t rank, uint64_t time, uint32_t peer)
{
    otfx_event e = {.time = time, .type = OTFX_EV_RECV};
    e.u.msg.comm = w->comm;
    e.u.msg.peer = peer;
    e.u.msg.bytes = 8;
    e.u.msg.seq = ++w->receives[rank][peer];
    rw_event(w, rank, e);
}

/* MPI_Send over [enter, leave), its SEND at enter. */
static inline void rw_send(rworld *w, uint32_t rank, uint32_t peer, uint64_t enter, uint64_t leave)
{
    rw_enter(w, rank, enter, w->mpi_send);
    rw_send_event(w, rank, enter, peer);
    rw_leave(w, rank, leave);
}

/* MPI_Recv over [enter, done], its RECV at done. */
static inline void rw_recv(rworld *w, uint32_t rank, uint32_t peer, uint64_t enter, uint64_t done)
{
    rw_enter(w, rank, enter, w->mpi_recv);
    rw_recv_event(w, rank, done, peer);
    rw_leave(w, rank, done);
}

/* One collective on every rank of the world: rank r enters `region` at arrive[r] and leaves at done[r].
 * `op` is an OTF2_CollectiveOp value, root a world rank or UINT32_MAX. */
static inline void rw_collective(rworld *w, otfx_ref region, uint32_t op, uint32_t root,
                                 const uint64_t *arrive, const uint64_t *done)
{
    uint64_t seq = ++w->collectives;
    for (uint32_t r = 0; r < w->ranks; r++) {
        rw_enter(w, r, arrive[r], region);
        otfx_event b = {.time = arrive[r], .type = OTFX_EV_COLL_BEGIN};
        b.u.coll.comm = w->comm;
        b.u.coll.seq = seq;
        b.u.coll.root = UINT32_MAX;
        rw_event(w, r, b);
        otfx_event e = {.time = done[r], .type = OTFX_EV_COLL_END};
        e.u.coll.comm = w->comm;
        e.u.coll.op = op;
        e.u.coll.root = root;
        e.u.coll.seq = seq;
        rw_event(w, r, e);
        rw_leave(w, r, done[r]);
    }
}

static inline otfx_command rw_query(otfx_command_kind kind)
{
    otfx_command q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.from = 0;
    q.to = OTFX_TIME_MAX;
    return q;
}

/* The leaf input of the ranks [first, last). */
static inline otfx_leaf_input rw_input(rworld *w, uint32_t first, uint32_t last,
                                       const otfx_place_exchange *exchange)
{
    otfx_leaf_input input = {.defs = w->defs,
                             .traces = w->traces + first,
                             .rank_of_trace = w->local,
                             .thread_of_trace = w->threads,
                             .trace_count = last - first,
                             .ranks = w->info + first,
                             .rank_count = last - first,
                             .app_ranks = w->ranks,
                             .exchange = exchange};
    return input;
}

/* leaf over every rank on one place, merge into an empty result, finish: the reply (free it). */
static inline char *rw_run_one_place(const otfx_analysis_module *m, const otfx_command *q, rworld *w)
{
    char error[512] = "";
    otfx_leaf_input input = rw_input(w, 0, w->ranks, NULL);
    otfx_blob partial = {0}, merged = {0};
    if (!m->leaf(q, &input, &partial, error, sizeof error))
        fail_msg("%s leaf: %s", m->name, error);
    if (!m->merge(q, &merged, partial.data, partial.length, error, sizeof error))
        fail_msg("%s merge: %s", m->name, error);
    otfx_text reply = {0};
    if (!m->finish(q, merged.data, merged.length, 1, 1, &reply, error, sizeof error))
        fail_msg("%s finish: %s", m->name, error);
    otfx_text_append(&reply, "", 1);
    otfx_blob_free(&partial);
    otfx_blob_free(&merged);
    return reply.data;
}

/* ---- the ranks split over simulated places ---------------------------------------------------------- */

#define RW_MAX_PLACES 4

/* One event place: its own definitions (references differ from the world's and the other places', as
 * between real places), copies of its ranks' traces, and its leaf's partial result. */
typedef struct rw_place {
    otfx_defs *defs;
    otfx_trace *traces[RW_MAX_RANKS];
    uint32_t rank_of_trace[RW_MAX_RANKS], threads[RW_MAX_RANKS];
    otfx_rank_info info[RW_MAX_RANKS];
    uint32_t count, app_ranks;
    const otfx_analysis_module *module;
    const otfx_command *query;
    otfx_blob partial;
    bool ok;
    char error[512];
} rw_place;

typedef struct rw_copy {
    rworld *w;
    rw_place *place;
    otfx_trace *to;
} rw_copy;

static inline otfx_ref rw_copy_comm(rw_copy *c, otfx_ref ref)
{
    if (ref == OTFX_REF_NONE)
        return ref;
    otfx_comm_def def;
    assert_int_equal(otfx_defs_get_comm(c->w->defs, ref, &def), OTFX_OK);
    otfx_ref mine;
    assert_int_equal(otfx_defs_comm(c->place->defs, def.name, def.world_ranks, def.size, &mine), OTFX_OK);
    return mine;
}

static inline int rw_copy_event(const otfx_event *event, void *user)
{
    rw_copy *c = user;
    otfx_event e = *event;
    switch (e.type) {
    case OTFX_EV_ENTER: {
        otfx_region_def def;
        assert_int_equal(otfx_defs_get_region(c->w->defs, e.u.region.region, &def), OTFX_OK);
        assert_int_equal(otfx_defs_region(c->place->defs, def.name, def.role, &e.u.region.region), OTFX_OK);
        break;
    }
    case OTFX_EV_SEND:
    case OTFX_EV_RECV:
    case OTFX_EV_ISEND:
    case OTFX_EV_IRECV:
        e.u.msg.comm = rw_copy_comm(c, e.u.msg.comm);
        break;
    case OTFX_EV_COLL_BEGIN:
    case OTFX_EV_COLL_END:
    case OTFX_EV_NBC_COMPLETE:
        e.u.coll.comm = rw_copy_comm(c, e.u.coll.comm);
        break;
    default:
        break;
    }
    size_t appended = 0;
    assert_int_equal(otfx_trace_append(c->to, &e, 1, &appended), OTFX_OK);
    return 0;
}

/* Place p of `places` gets the ranks r with place_of_rank[r] == p, their traces copied into its own
 * definitions, which first hold p + 1 other regions and communicators so that no reference matches
 * the world's. */
static inline void rw_place_init(rw_place *place, rworld *w, uint32_t p, const uint32_t *place_of_rank)
{
    memset(place, 0, sizeof *place);
    place->defs = otfx_defs_create();
    place->app_ranks = w->ranks;
    for (uint32_t i = 0; i <= p; i++) {
        char name[32];
        snprintf(name, sizeof name, "place%u_pad%u", p, i);
        otfx_ref ref;
        assert_int_equal(otfx_defs_region(place->defs, name, OTFX_ROLE_USER_FUNCTION, &ref), OTFX_OK);
        uint32_t member = i % w->ranks;
        assert_int_equal(otfx_defs_comm(place->defs, name, &member, 1, &ref), OTFX_OK);
    }
    for (uint32_t r = 0; r < w->ranks; r++) {
        if (place_of_rank[r] != p)
            continue;
        otfx_ref location;
        assert_int_equal(otfx_defs_location(place->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        uint32_t i = place->count++;
        assert_int_equal(otfx_trace_create(&config, place->defs, location, &place->traces[i]), OTFX_OK);
        rw_copy copy = {w, place, place->traces[i]};
        assert_int_equal(
            otfx_analysis_query_events(w->traces[r], 0, OTFX_TIME_MAX, false, rw_copy_event, &copy), OTFX_OK);
        place->info[i] = w->info[r]; /* the rank and what its place knows of it (its costs) */
        place->rank_of_trace[i] = i;
    }
}

static inline void rw_place_free(rw_place *place)
{
    for (uint32_t i = 0; i < place->count; i++)
        otfx_trace_destroy(place->traces[i]);
    otfx_defs_destroy(place->defs);
    otfx_blob_free(&place->partial);
}

/* A place's thread: its leaf with the exchange (no cmocka assertions here: they jump across threads). */
static inline void rw_place_leaf(const otfx_place_exchange *exchange, void *user)
{
    rw_place *place = user;
    otfx_leaf_input input = {.defs = place->defs,
                             .traces = place->traces,
                             .rank_of_trace = place->rank_of_trace,
                             .thread_of_trace = place->threads,
                             .trace_count = place->count,
                             .ranks = place->info,
                             .rank_count = place->count,
                             .app_ranks = place->app_ranks,
                             .exchange = exchange};
    place->ok = place->module->leaf(place->query, &input, &place->partial, place->error, sizeof place->error);
}

/* The ranks split over `places` places (rank r on place_of_rank[r]), each place's leaf on its own
 * thread; the partial results merged in the order `merge_order` (a permutation of the places), then
 * finished: the reply (free it). */
static inline char *rw_run_places(const otfx_analysis_module *m, const otfx_command *q, rworld *w,
                                  uint32_t places, const uint32_t *place_of_rank, const uint32_t *merge_order)
{
    assert_true(places <= RW_MAX_PLACES);
    rw_place place[RW_MAX_PLACES];
    void *users[RW_MAX_PLACES];
    for (uint32_t p = 0; p < places; p++) {
        rw_place_init(&place[p], w, p, place_of_rank);
        place[p].module = m;
        place[p].query = q;
        users[p] = &place[p];
    }
    inproc_world *world = inproc_world_create(places, place_of_rank, w->ranks);
    assert_non_null(world);
    inproc_run_places(world, rw_place_leaf, users);
    inproc_world_destroy(world);
    for (uint32_t p = 0; p < places; p++)
        if (!place[p].ok)
            fail_msg("%s leaf on place %u of %u: %s", m->name, p, places, place[p].error);
    char error[512] = "";
    otfx_blob merged = {0};
    for (uint32_t i = 0; i < places; i++) {
        const otfx_blob *partial = &place[merge_order[i]].partial;
        if (!m->merge(q, &merged, partial->data, partial->length, error, sizeof error))
            fail_msg("%s merge: %s", m->name, error);
    }
    otfx_text reply = {0};
    if (!m->finish(q, merged.data, merged.length, places, places, &reply, error, sizeof error))
        fail_msg("%s finish: %s", m->name, error);
    otfx_text_append(&reply, "", 1);
    otfx_blob_free(&merged);
    for (uint32_t p = 0; p < places; p++)
        rw_place_free(&place[p]);
    return reply.data;
}

/* Splits of the ranks over 2 and 3 places (round robin and in blocks) with merges in several orders. */
typedef struct rw_split {
    uint32_t places;
    uint32_t place_of_rank[RW_MAX_RANKS];
    uint32_t merge_order[RW_MAX_PLACES];
} rw_split;

#define RW_SPLITS 4

static inline rw_split rw_split_make(uint32_t ranks, int which)
{
    rw_split s;
    memset(&s, 0, sizeof s);
    s.places = which < 2 ? 2 : 3;
    if (s.places > ranks)
        s.places = ranks;
    for (uint32_t r = 0; r < ranks; r++)
        s.place_of_rank[r] = which % 2 == 0 ? r % s.places : (r * s.places) / ranks;
    for (uint32_t i = 0; i < s.places; i++)
        s.merge_order[i] = which % 2 == 0 ? i : s.places - 1 - i; /* in order, reversed */
    if (which == 3 && s.places == 3) {                            /* 1, 2, 0 */
        s.merge_order[0] = 1;
        s.merge_order[1] = 2;
        s.merge_order[2] = 0;
    }
    return s;
}

/* A reply without its places_answered / places_total fields, for comparing runs on different places. */
static inline void rw_strip_places(char *reply)
{
    const char *keys[] = {"places_answered=", "places_total="};
    for (int k = 0; k < 2; k++) {
        char *p;
        while ((p = strstr(reply, keys[k])) != NULL) {
            char *end = p;
            while (*end && *end != ' ' && *end != '\n')
                end++;
            if (*end == ' ')
                end++;
            memmove(p, end, strlen(end) + 1);
        }
    }
}

/* Runs `q` over every split of the ranks and asserts each reply equals the one-place reply (given). */
static inline void rw_check_splits(const otfx_analysis_module *m, const otfx_command *q, rworld *w,
                                   const char *one_place_reply)
{
    size_t length = strlen(one_place_reply) + 1;
    char *expected = malloc(length);
    assert_non_null(expected);
    memcpy(expected, one_place_reply, length);
    rw_strip_places(expected);
    for (int which = 0; which < RW_SPLITS; which++) {
        rw_split s = rw_split_make(w->ranks, which);
        char *reply = rw_run_places(m, q, w, s.places, s.place_of_rank, s.merge_order);
        rw_strip_places(reply);
        if (strcmp(reply, expected) != 0)
            fail_msg(
                "%s on %u places (split %d) differs from one place:\n--- one place:\n%s--- %u places:\n%s",
                m->name, s.places, which, expected, s.places, reply);
        free(reply);
    }
    free(expected);
}

/* The value of `key` on the first line of `type` whose field `match_key` is `match_value` (match_key
 * NULL: the first line of that type); NULL when there is none. Returns a static copy. */
static inline const char *rw_field(const char *reply, const char *type, const char *match_key,
                                   const char *match_value, const char *key)
{
    static char value[256];
    const char *p = reply;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t length = end ? (size_t)(end - p) : strlen(p);
        otfx_kv_line line;
        if (otfx_kv_parse(p, length, &line)) {
            bool hit = strcmp(line.type, type) == 0;
            if (hit && match_key) {
                const char *v = otfx_kv_get(&line, match_key);
                hit = v && strcmp(v, match_value) == 0;
            }
            const char *v = hit ? otfx_kv_get(&line, key) : NULL;
            if (v)
                snprintf(value, sizeof value, "%s", v);
            otfx_kv_line_free(&line);
            if (v)
                return value;
        }
        p += length + (end ? 1 : 0);
    }
    return NULL;
}

static inline uint64_t rw_u64(const char *reply, const char *type, const char *match_key,
                              const char *match_value, const char *key)
{
    const char *v = rw_field(reply, type, match_key, match_value, key);
    if (!v)
        fail_msg("no %s%s%s%s with %s in:\n%s", type, match_key ? " " : "", match_key ? match_key : "",
                 match_value ? match_value : "", key, reply);
    return strtoull(v, NULL, 10);
}

static inline double rw_f64(const char *reply, const char *type, const char *match_key,
                            const char *match_value, const char *key)
{
    const char *v = rw_field(reply, type, match_key, match_value, key);
    if (!v)
        fail_msg("no %s %s in:\n%s", type, key, reply);
    return strtod(v, NULL);
}

#endif

/* test_follow.c — critical-path and wait-states --follow: traces fed to the places in several appends
 * between rounds (each rank up to its own time, as batches arrive late) give, once everything is held,
 * exactly the answer of one query over everything, on 1, 2 and 3 places; a receive whose send arrives
 * only in a later round waits and is matched then; the places restart together when they disagree on the
 * round; a different query under the same ID is refused; the states' bounds (least recently used, idle,
 * a failed round). Places are simulated on threads with the in-process exchange (replay_world.h). */
#include "replay_world.h"

#include <stdint.h>

#define OP_BCAST     1u
#define OP_ALLREDUCE 11u

static const otfx_analysis_module *cp_module(void)
{
    return otfx_analysis_for_command(OTFX_CMD_CRITICAL_PATH);
}

static const otfx_analysis_module *ws_module(void)
{
    return otfx_analysis_for_command(OTFX_CMD_WAIT_STATES);
}

/* ---- places fed round by round ------------------------------------------------------------------- */

typedef struct follow_places {
    rworld *w;
    uint32_t count;
    uint32_t place_of_rank[RW_MAX_RANKS];
    rw_place place[RW_MAX_PLACES];
    uint64_t fed[RW_MAX_RANKS]; /* each rank's events before this time are at its place */
    uint64_t now_ns, deadline_ns;
} follow_places;

/* Each place's traces get `budget` bytes (chunks of 4 KiB when that is small, so that it reduces). */
static void fp_init_budget(follow_places *f, rworld *w, uint32_t places, size_t budget)
{
    memset(f, 0, sizeof *f);
    f->w = w;
    f->count = places;
    for (uint32_t r = 0; r < w->ranks; r++)
        f->place_of_rank[r] = places == 1 ? 0 : r % places;
    for (uint32_t p = 0; p < places; p++) {
        rw_place *place = &f->place[p];
        memset(place, 0, sizeof *place);
        place->defs = otfx_defs_create();
        place->app_ranks = w->ranks;
        for (uint32_t i = 0; i <= p; i++) {
            char name[32];
            snprintf(name, sizeof name, "place%u_pad%u", p, i);
            otfx_ref ref;
            assert_int_equal(otfx_defs_region(place->defs, name, OTFX_ROLE_USER_FUNCTION, &ref), OTFX_OK);
        }
        for (uint32_t r = 0; r < w->ranks; r++) {
            if (f->place_of_rank[r] != p)
                continue;
            otfx_ref location;
            assert_int_equal(otfx_defs_location(place->defs, r, 0, &location), OTFX_OK);
            otfx_trace_config config = otfx_trace_config_default(budget);
            if (budget < (1 << 20))
                config.chunk_bytes = 4096;
            uint32_t i = place->count++;
            assert_int_equal(otfx_trace_create(&config, place->defs, location, &place->traces[i]), OTFX_OK);
            place->info[i] = (otfx_rank_info){.rank = r, .recording = true};
            place->rank_of_trace[i] = i;
        }
    }
}

static void fp_init(follow_places *f, rworld *w, uint32_t places)
{
    fp_init_budget(f, w, places, 1 << 20);
}

static void fp_free(follow_places *f)
{
    for (uint32_t p = 0; p < f->count; p++) {
        otfx_analysis_follow_forget(f->place[p].defs);
        rw_place_free(&f->place[p]);
    }
}

/* Appends each rank's events of [fed, until[rank]) to its place's trace. */
static void fp_feed(follow_places *f, const uint64_t *until)
{
    for (uint32_t r = 0; r < f->w->ranks; r++) {
        if (until[r] <= f->fed[r])
            continue;
        rw_place *place = &f->place[f->place_of_rank[r]];
        uint32_t i = 0;
        while (place->info[i].rank != r)
            i++;
        rw_copy copy = {f->w, place, place->traces[i]};
        assert_int_equal(
            otfx_analysis_query_events(f->w->traces[r], f->fed[r], until[r], false, rw_copy_event, &copy),
            OTFX_OK);
        f->fed[r] = until[r];
    }
}

static void fp_feed_all(follow_places *f, uint64_t until)
{
    uint64_t times[RW_MAX_RANKS];
    for (uint32_t r = 0; r < RW_MAX_RANKS; r++)
        times[r] = until;
    fp_feed(f, times);
}

typedef struct fp_leaf_call {
    follow_places *f;
    rw_place *place;
} fp_leaf_call;

static void fp_leaf(const otfx_place_exchange *exchange, void *user)
{
    fp_leaf_call *call = user;
    rw_place *place = call->place;
    otfx_leaf_input input = {.defs = place->defs,
                             .traces = place->traces,
                             .rank_of_trace = place->rank_of_trace,
                             .thread_of_trace = place->threads,
                             .trace_count = place->count,
                             .ranks = place->info,
                             .rank_count = place->count,
                             .app_ranks = place->app_ranks,
                             .now_ns = call->f->now_ns,
                             .deadline_ns = call->f->deadline_ns,
                             .exchange = exchange};
    otfx_blob_free(&place->partial);
    place->partial.length = 0;
    place->error[0] = '\0';
    place->ok = place->module->leaf(place->query, &input, &place->partial, place->error, sizeof place->error);
}

/* One query on every place: the reply (free it), or NULL with every place's error in `errors`. */
static char *fp_round(follow_places *f, const otfx_analysis_module *m, const otfx_command *q, char *errors,
                      size_t errors_size)
{
    fp_leaf_call calls[RW_MAX_PLACES];
    void *users[RW_MAX_PLACES];
    for (uint32_t p = 0; p < f->count; p++) {
        f->place[p].module = m;
        f->place[p].query = q;
        calls[p] = (fp_leaf_call){f, &f->place[p]};
        users[p] = &calls[p];
    }
    if (f->count == 1) {
        fp_leaf(NULL, users[0]);
    } else {
        inproc_world *world = inproc_world_create(f->count, f->place_of_rank, f->w->ranks);
        assert_non_null(world);
        inproc_run_places(world, fp_leaf, users);
        inproc_world_destroy(world);
    }
    bool ok = true;
    if (errors_size)
        errors[0] = '\0';
    for (uint32_t p = 0; p < f->count; p++)
        if (!f->place[p].ok) {
            ok = false;
            size_t used = strlen(errors);
            snprintf(errors + used, errors_size - used, "place %u: %s\n", p, f->place[p].error);
        }
    if (!ok)
        return NULL;
    char error[512] = "";
    otfx_blob merged = {0};
    for (uint32_t p = 0; p < f->count; p++) {
        const otfx_blob *partial = &f->place[p].partial;
        if (!m->merge(q, &merged, partial->data, partial->length, error, sizeof error))
            fail_msg("%s merge: %s", m->name, error);
    }
    otfx_text reply = {0};
    if (!m->finish(q, merged.data, merged.length, f->count, f->count, &reply, error, sizeof error))
        fail_msg("%s finish: %s", m->name, error);
    otfx_text_append(&reply, "", 1);
    otfx_blob_free(&merged);
    return reply.data;
}

static char *fp_round_ok(follow_places *f, const otfx_analysis_module *m, const otfx_command *q)
{
    char errors[2048];
    char *reply = fp_round(f, m, q, errors, sizeof errors);
    if (!reply)
        fail_msg("%s --follow %llu failed:\n%s", m->name, (unsigned long long)q->follow, errors);
    return reply;
}

/* A reply without the fields that differ between a follow round and one query over everything. */
static void strip_follow(char *reply)
{
    rw_strip_places(reply);
    const char *keys[] = {" follow=", " round=", " restarted=", " events_this_round="};
    for (int k = 0; k < 4; k++) {
        char *p;
        while ((p = strstr(reply, keys[k])) != NULL) {
            char *end = p + 1;
            while (*end && *end != ' ' && *end != '\n')
                end++;
            memmove(p, end, strlen(end) + 1);
        }
    }
}

/* ---- worlds ------------------------------------------------------------------------------------------ */

/* A token ring over 4 ranks (late senders everywhere), then a broadcast from a late root, then more
 * work and an allreduce with one rank late: messages and collectives, all of it CPU time on some path. */
static void build_world(rworld *w)
{
    enum { N = 4, K = 3 };
    rw_init(w, N);
    otfx_ref work = rw_region(w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref tail = rw_region(w, "tail", OTFX_ROLE_USER_FUNCTION);
    otfx_ref bcast = rw_region(w, "MPI_Bcast", OTFX_ROLE_MPI_COLLECTIVE);
    otfx_ref allreduce = rw_region(w, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE);
    const uint64_t c[N] = {3 * RW_MS, 5 * RW_MS, 7 * RW_MS, 11 * RW_MS};
    uint64_t now = 0, waiting_since[N] = {0};
    for (int k = 0; k < K; k++)
        for (uint32_t i = 0; i < N; i++) {
            if (k > 0 || i > 0)
                rw_recv(w, i, (i + N - 1) % N, waiting_since[i], now);
            rw_compute(w, i, work, now, now + c[i]);
            now += c[i];
            rw_send(w, i, (i + 1) % N, now, now + RW_MS / 2);
            waiting_since[i] = now + RW_MS / 2;
        }
    rw_recv(w, 0, N - 1, waiting_since[0], now);
    /* every rank but 0 is past its ring; rank 0 works on before broadcasting */
    uint64_t start = now + 10 * RW_MS;
    rw_compute(w, 0, tail, now, start);
    uint64_t arrive[N], done[N];
    for (uint32_t r = 0; r < N; r++) {
        arrive[r] = r == 0 ? start : now + RW_MS * (r + 1);
        done[r] = start + RW_MS;
    }
    rw_collective(w, bcast, OP_BCAST, 0, arrive, done);
    for (uint32_t r = 0; r < N; r++) {
        rw_compute(w, r, work, start + RW_MS, start + RW_MS * (5 + 3 * r));
        arrive[r] = start + RW_MS * (5 + 3 * r);
        done[r] = start + RW_MS * 20;
    }
    rw_collective(w, allreduce, OP_ALLREDUCE, UINT32_MAX, arrive, done);
}

static uint64_t world_end(void)
{
    return 200 * RW_MS;
}

/* Rounds over cuts that grow, each rank held to its own time (rank r lags r * lag behind), then
 * everything: the last round's answer equals one query over everything. */
static void check_follow_equals_one_shot(const otfx_analysis_module *m, otfx_command_kind kind,
                                         uint32_t places, uint64_t id)
{
    rworld w;
    build_world(&w);
    otfx_command once = rw_query(kind);
    char *expected = rw_run_one_place(m, &once, &w);
    strip_follow(expected);

    follow_places f;
    fp_init(&f, &w, places);
    otfx_command q = rw_query(kind);
    q.follow = id;
    const uint64_t cuts[] = {12 * RW_MS, 40 * RW_MS, 75 * RW_MS, 90 * RW_MS};
    const uint64_t lag = 9 * RW_MS;
    uint64_t events = 0;
    uint64_t round = 0;
    for (size_t c = 0; c <= sizeof cuts / sizeof cuts[0]; c++) {
        uint64_t until[RW_MAX_RANKS];
        for (uint32_t r = 0; r < w.ranks; r++)
            until[r] =
                c < sizeof cuts / sizeof cuts[0] ? cuts[c] - (cuts[c] > r * lag ? r * lag : 0) : world_end();
        fp_feed(&f, until);
        char *reply = fp_round_ok(&f, m, &q);
        assert_int_equal(rw_u64(reply, m->name, NULL, NULL, "follow"), id);
        assert_int_equal(rw_u64(reply, m->name, NULL, NULL, "round"), ++round);
        assert_int_equal(rw_u64(reply, m->name, NULL, NULL, "restarted"), 0);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_stalled"), 0);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_not_held"), 0);
        events += rw_u64(reply, m->name, NULL, NULL, "events_this_round");
        if (c == sizeof cuts / sizeof cuts[0]) {
            strip_follow(reply);
            if (strcmp(reply, expected) != 0)
                fail_msg(
                    "%s --follow on %u places, last round differs from one query:\n--- one query:\n%s--- "
                    "follow:\n%s",
                    m->name, places, expected, reply);
        }
        free(reply);
    }
    /* every event once, over the rounds */
    uint64_t held = 0;
    for (uint32_t r = 0; r < w.ranks; r++) {
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(w.traces[r], &status), OTFX_OK);
        held += status.events_held;
    }
    assert_int_equal(events, held);
    /* a round with nothing new replays nothing and answers the same */
    char *again = fp_round_ok(&f, m, &q);
    assert_int_equal(rw_u64(again, m->name, NULL, NULL, "events_this_round"), 0);
    strip_follow(again);
    assert_string_equal(again, expected);
    free(again);
    free(expected);
    fp_free(&f);
    rw_free(&w);
}

static void test_critical_path_rounds(void **state)
{
    (void)state;
    for (uint32_t places = 1; places <= 3; places++)
        check_follow_equals_one_shot(cp_module(), OTFX_CMD_CRITICAL_PATH, places, 100 + places);
}

static void test_wait_states_rounds(void **state)
{
    (void)state;
    for (uint32_t places = 1; places <= 3; places++)
        check_follow_equals_one_shot(ws_module(), OTFX_CMD_WAIT_STATES, places, 200 + places);
}

/* Rank 1 computes 50 ms and sends to rank 0, which computes 10 ms, waits in its receive and computes
 * 49 ms more. The first round holds rank 0 whole but rank 1 only up to 20 ms: the receive waits (neither
 * stalled nor missing) and the path so far is rank 0's 10 ms; the second round matches it. */
static void test_receive_waits_for_a_later_round(void **state)
{
    (void)state;
    for (uint32_t places = 1; places <= 2; places++) {
        rworld w;
        rw_init(&w, 2);
        otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
        rw_compute(&w, 1, work, 0, 50 * RW_MS);
        rw_send(&w, 1, 0, 50 * RW_MS, 51 * RW_MS);
        rw_compute(&w, 0, work, 0, 10 * RW_MS);
        rw_recv(&w, 0, 1, 10 * RW_MS, 51 * RW_MS);
        rw_compute(&w, 0, work, 51 * RW_MS, 100 * RW_MS);

        follow_places f;
        fp_init(&f, &w, places);
        uint64_t until[RW_MAX_RANKS] = {world_end(), 20 * RW_MS};
        fp_feed(&f, until);
        otfx_command cp = rw_query(OTFX_CMD_CRITICAL_PATH), ws = rw_query(OTFX_CMD_WAIT_STATES);
        cp.follow = 7;
        ws.follow = 7; /* the same ID for another module is another follow */
        char *reply = fp_round_ok(&f, cp_module(), &cp);
        assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), 10 * RW_MS);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives"), 0);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_stalled"), 0);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_not_held"), 0);
        free(reply);
        reply = fp_round_ok(&f, ws_module(), &ws);
        assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "total_ns"), 0);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives"), 0);
        free(reply);

        fp_feed_all(&f, world_end());
        reply = fp_round_ok(&f, cp_module(), &cp);
        assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "round"), 2);
        assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), 99 * RW_MS);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives"), 1);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_stalled"), 0);
        assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_not_held"), 0);
        assert_int_equal(rw_u64(reply, "cp-segment", "rank", "1", "end"), 50 * RW_MS);
        free(reply);
        reply = fp_round_ok(&f, ws_module(), &ws);
        assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 2);
        assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_sender_ns"), 40 * RW_MS);
        free(reply);
        fp_free(&f);
        rw_free(&w);
    }
}

/* One place lost its state (as after a failed round there): every place starts fresh together, the
 * answer says so, and is still the answer over everything. */
static void test_restart_when_places_disagree(void **state)
{
    (void)state;
    rworld w;
    build_world(&w);
    otfx_command once = rw_query(OTFX_CMD_CRITICAL_PATH);
    char *expected = rw_run_one_place(cp_module(), &once, &w);
    strip_follow(expected);
    follow_places f;
    fp_init(&f, &w, 2);
    otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
    q.follow = 31;
    fp_feed_all(&f, 50 * RW_MS);
    free(fp_round_ok(&f, cp_module(), &q));
    fp_feed_all(&f, world_end());
    otfx_analysis_follow_forget(f.place[1].defs);
    char *reply = fp_round_ok(&f, cp_module(), &q);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "round"), 1);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "restarted"), 1);
    strip_follow(reply);
    assert_string_equal(reply, expected);
    free(reply);
    reply = fp_round_ok(&f, cp_module(), &q);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "round"), 2);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "restarted"), 0);
    free(reply);
    free(expected);
    fp_free(&f);
    rw_free(&w);
}

/* Another query under a kept ID is refused on every place, and the follow it collided with goes on. */
static void test_other_query_same_id(void **state)
{
    (void)state;
    rworld w;
    build_world(&w);
    follow_places f;
    fp_init(&f, &w, 2);
    fp_feed_all(&f, world_end());
    otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
    q.follow = 41;
    free(fp_round_ok(&f, cp_module(), &q));
    otfx_command other = q;
    snprintf(other.zero, sizeof other.zero, "work");
    char errors[2048];
    assert_null(fp_round(&f, cp_module(), &other, errors, sizeof errors));
    assert_non_null(strstr(errors, "place 0: critical-path --follow 41: this ID follows a query with other"));
    assert_non_null(strstr(errors, "place 1: critical-path --follow 41"));
    other = q;
    other.ranks.count = 1;
    other.ranks.ranges[0].first = 0;
    other.ranks.ranges[0].last = 1;
    assert_null(fp_round(&f, cp_module(), &other, errors, sizeof errors));
    /* --top and --limit only shape the answer */
    other = q;
    other.top = 1;
    other.limit = 2;
    char *reply = fp_round_ok(&f, cp_module(), &other);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "round"), 2);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "segments"), 2);
    free(reply);
    fp_free(&f);
    rw_free(&w);
}

/* At most 8 states per place (the least recently used goes), none idle for more than 120 s, none after
 * a failed round. */
static void test_bounds(void **state)
{
    (void)state;
    rworld w;
    build_world(&w);
    follow_places f;
    fp_init(&f, &w, 1);
    fp_feed_all(&f, world_end());
    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    for (uint64_t id = 1; id <= 9; id++) {
        q.follow = id;
        free(fp_round_ok(&f, ws_module(), &q));
    }
    q.follow = 9;
    char *reply = fp_round_ok(&f, ws_module(), &q);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 2);
    free(reply);
    q.follow = 1; /* the least recently used: dropped when the ninth came */
    reply = fp_round_ok(&f, ws_module(), &q);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 1);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "restarted"), 0);
    free(reply);
    q.follow = 3; /* 2 went for 1 */
    reply = fp_round_ok(&f, ws_module(), &q);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 2);
    free(reply);

    /* idle: untouched for more than 120 s of the place's clock */
    f.now_ns = 1000 * RW_MS;
    q.follow = 50;
    free(fp_round_ok(&f, ws_module(), &q));
    f.now_ns += 119 * 1000 * RW_MS;
    q.follow = 51;
    free(fp_round_ok(&f, ws_module(), &q));
    q.follow = 50;
    reply = fp_round_ok(&f, ws_module(), &q);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 2);
    free(reply);
    f.now_ns += 121 * 1000 * RW_MS;
    q.follow = 51;
    free(fp_round_ok(&f, ws_module(), &q)); /* 50 is dropped here, and 51 itself starts anew */
    q.follow = 50;
    reply = fp_round_ok(&f, ws_module(), &q);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 1);
    free(reply);

    /* a failed round (its deadline passed) drops the state */
    q.follow = 60;
    free(fp_round_ok(&f, ws_module(), &q));
    f.deadline_ns = 1;
    char errors[2048];
    assert_null(fp_round(&f, ws_module(), &q, errors, sizeof errors));
    assert_non_null(strstr(errors, "deadline"));
    f.deadline_ns = 0;
    reply = fp_round_ok(&f, ws_module(), &q);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 1);
    free(reply);
    fp_free(&f);
    rw_free(&w);
}

/* The unseen-range line of (rank, why) as its begin and end (false: none). */
static bool unseen_range(const char *reply, uint32_t rank, const char *reason, uint64_t *begin, uint64_t *end)
{
    bool found = false;
    for (const char *p = reply; *p;) {
        const char *eol = strchr(p, '\n');
        size_t length = eol ? (size_t)(eol - p) : strlen(p);
        otfx_kv_line line;
        if (otfx_kv_parse(p, length, &line)) {
            const char *r = otfx_kv_get(&line, "rank"), *why = otfx_kv_get(&line, "why");
            if (strcmp(line.type, "unseen-range") == 0 && r && why && strtoul(r, NULL, 10) == rank &&
                strcmp(why, reason) == 0) {
                *begin = strtoull(otfx_kv_get(&line, "begin"), NULL, 10);
                *end = strtoull(otfx_kv_get(&line, "end"), NULL, 10);
                found = true;
            }
            otfx_kv_line_free(&line);
        }
        p = eol ? eol + 1 : p + length;
    }
    return found;
}

static int first_detail(const otfx_event *event, void *user)
{
    uint64_t *first = user;
    if (event->type == OTFX_EV_ENTER && event->time < *first)
        *first = event->time;
    return 0;
}

/* Between two rounds the place's ring reduction removes events of rank 0 the follow had not read yet
 * (its trace holds 64 KiB and receives far more): the next round says which range it could not see, from
 * no later than the first event it missed to the last one lost. */
static void test_reduced_between_rounds(void **state)
{
    (void)state;
    for (uint32_t places = 1; places <= 2; places++) {
        rworld w;
        rw_init(&w, 2);
        otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
        for (uint32_t r = 0; r < 2; r++)
            for (uint64_t k = 0; k < 5; k++)
                rw_compute(&w, r, work, (2 * k) * RW_MS, (2 * k + 1) * RW_MS);
        follow_places f;
        fp_init_budget(&f, &w, places, 64 << 10);
        fp_feed_all(&f, 10 * RW_MS);
        otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
        q.follow = 300 + places;
        char *reply = fp_round_ok(&f, ws_module(), &q);
        uint64_t begin = 0, end = 0;
        assert_false(unseen_range(reply, 0, "reduced", &begin, &end));
        free(reply);

        /* far more than the budget, appended to rank 0's trace at its place before the next round */
        rw_place *place = &f.place[f.place_of_rank[0]];
        uint32_t i = 0;
        while (place->info[i].rank != 0)
            i++;
        otfx_ref filler;
        assert_int_equal(otfx_defs_region(place->defs, "filler", OTFX_ROLE_USER_FUNCTION, &filler), OTFX_OK);
        const uint64_t first_unread = 10 * RW_MS;
        enum { CALLS = 200000 };
        otfx_event batch[512];
        size_t n = 0;
        uint64_t t = first_unread, noise = 12345;
        for (uint64_t k = 0; k < CALLS; k++) {
            /* irregular durations, so that it does not compress to nothing */
            noise = noise * 6364136223846793005ull + 1442695040888963407ull;
            const uint64_t inside = 500 + (noise >> 40) % 1000, between = 500 + (noise >> 20) % 1000;
            batch[n++] = (otfx_event){.time = t, .type = OTFX_EV_ENTER, .u.region = {filler}};
            batch[n++] = (otfx_event){.time = t + inside, .type = OTFX_EV_LEAVE, .u.region = {filler}};
            t += inside + between;
            if (n == sizeof batch / sizeof batch[0] || k + 1 == CALLS) {
                assert_int_equal(otfx_trace_append(place->traces[i], batch, n, NULL), OTFX_OK);
                n = 0;
            }
        }
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(place->traces[i], &status), OTFX_OK);
        assert_true(status.events_reduced[OTFX_REDUCE_RING] > 0);
        uint64_t first_held = UINT64_MAX;
        assert_int_equal(
            otfx_analysis_query_events(place->traces[i], 0, UINT64_MAX, false, first_detail, &first_held),
            OTFX_OK);
        assert_true(first_held > first_unread + 3000); /* unread events were removed */

        reply = fp_round_ok(&f, ws_module(), &q);
        assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "round"), 2);
        if (!unseen_range(reply, 0, "reduced", &begin, &end))
            fail_msg("%u places: no reduced range for rank 0 in\n%s", places, reply);
        assert_true(begin <= first_unread);
        /* up to the last event lost: the first held one comes at most one pause (< 1.5 µs) after it */
        if (end + 1500 < first_held)
            fail_msg("%u places: first held %llu after the reduced range in\n%s", places,
                     (unsigned long long)first_held, reply);
        /* every held event of rank 0 after the gap is read once */
        assert_true(rw_u64(reply, "wait-states", NULL, NULL, "events_this_round") >= status.events_held);
        free(reply);

        /* a window that starts after the reduced range but before the oldest detail: the trace holds
         * nothing to tell what happened there, and says so */
        otfx_command once = rw_query(OTFX_CMD_WAIT_STATES);
        once.from = first_held - 200;
        reply = fp_round_ok(&f, ws_module(), &once);
        if (!unseen_range(reply, 0, "before-held", &begin, &end))
            fail_msg("%u places: no before-held range for rank 0 in\n%s", places, reply);
        assert_int_equal(begin, first_held - 200);
        assert_int_equal(end, first_held);
        assert_false(unseen_range(reply, 0, "reduced", &begin, &end));
        free(reply);
        fp_free(&f);
        rw_free(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_critical_path_rounds),
        cmocka_unit_test(test_wait_states_rounds),
        cmocka_unit_test(test_receive_waits_for_a_later_round),
        cmocka_unit_test(test_restart_when_places_disagree),
        cmocka_unit_test(test_other_query_same_id),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_reduced_between_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

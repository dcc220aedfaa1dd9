/* test_compensation.c — profile --compensated (overhead compensation, docs/analyses.md) on synthetic
 * traces whose compensated answers are known by construction: Malony et al.'s one-send cases, their
 * master/worker example, a staggered barrier and a receive order that compensation would change; on
 * one place and with the ranks split over 2 and 3 places (equal replies). Recording costs are set in
 * the ranks' otfx_rank_overhead, as an event place sets them from the capture library's measurement. */
#include "replay_world.h"

#define OP_BARRIER 0u

static uint64_t delay_of(const char *reply, uint32_t rank)
{
    char value[16];
    snprintf(value, sizeof value, "%u", rank);
    return rw_u64(reply, "compensated-rank", "rank", value, "delay_ns");
}

static uint64_t end_of(const char *reply, uint32_t rank)
{
    char value[16];
    snprintf(value, sizeof value, "%u", rank);
    return rw_u64(reply, "compensated-rank", "rank", value, "compensated_end_ns");
}

/* A user region's ENTER costs the rank `ms` (its other events nothing). */
static void enter_costs(rworld *w, uint32_t rank, uint64_t ms)
{
    w->info[rank].overhead.measured = true;
    w->info[rank].overhead.costs.user_enter_ps = ms * RW_MS * 1000u;
}

/* Runs profile --compensated on one place and on every split; the one-place reply (free it). */
static char *compensated_profile(rworld *w)
{
    otfx_command q = rw_query(OTFX_CMD_PROFILE);
    q.compensated = true;
    const otfx_analysis_module *m = otfx_analysis_for_command(OTFX_CMD_PROFILE);
    char *reply = rw_run_one_place(m, &q, w);
    rw_check_splits(m, &q, w, reply);
    return reply;
}

/* Runs timeline --compensated over [from, to) in `bins` columns (open ends when to is 0) on one place
 * and on every split; the one-place reply (free it). */
static char *compensated_timeline(rworld *w, uint64_t from, uint64_t to, uint32_t bins)
{
    otfx_command q = rw_query(OTFX_CMD_TIMELINE);
    q.compensated = true;
    q.bins = bins;
    if (to) {
        q.from = from;
        q.to = to;
        q.from_given = q.to_given = true;
    }
    const otfx_analysis_module *m = otfx_analysis_for_command(OTFX_CMD_TIMELINE);
    char *reply = rw_run_one_place(m, &q, w);
    rw_check_splits(m, &q, w, reply);
    return reply;
}

/* Asserts a rank's row of a timeline reply: FIELD is `expected` (comma list of values in ms). */
static void assert_row(const char *reply, uint32_t rank, const char *field, const char *expected_ms)
{
    char index[16], expected[1024] = "";
    snprintf(index, sizeof index, "%u", rank);
    size_t n = 0;
    for (const char *p = expected_ms; *p;) {
        char *end;
        const unsigned long long ms = strtoull(p, &end, 10);
        n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%llu", n ? "," : "", ms * RW_MS);
        p = *end == ',' ? end + 1 : end;
    }
    const char *value = rw_field(reply, "row", "index", index, field);
    if (!value || strcmp(value, expected) != 0)
        fail_msg("rank %u %s: expected %s, got %s in:\n%s", rank, field, expected, value ? value : "(none)",
                 reply);
}

/* P0 sends at t_S after a user region whose ENTER and LEAVE cost it x_s in all; P1's receive call
 * begins at 100 ms and ends when the message arrives (latency 0), then P1 computes for 100 ms. */
static char *one_send(rworld *w, uint64_t x_s_ms, uint64_t send_ms)
{
    rw_init(w, 2);
    otfx_ref work = rw_region(w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref after = rw_region(w, "after", OTFX_ROLE_USER_FUNCTION);
    w->info[0].overhead.measured = true;
    w->info[0].overhead.costs.user_enter_ps = x_s_ms / 2 * RW_MS * 1000u;
    w->info[0].overhead.costs.user_leave_ps = (x_s_ms - x_s_ms / 2) * RW_MS * 1000u;
    w->info[1].overhead.measured = true;
    rw_compute(w, 0, work, 10 * RW_MS, 90 * RW_MS);
    rw_send(w, 0, 1, send_ms * RW_MS, send_ms * RW_MS);
    rw_recv(w, 1, 0, 100 * RW_MS, send_ms * RW_MS);
    rw_compute(w, 1, after, send_ms * RW_MS, (send_ms + 100) * RW_MS);
    return compensated_profile(w);
}

/* Case 2 (x_s < x_i + w): w = 50 → w' = 30, and P1's delay becomes the sender's, x₂ = 20. */
static void test_one_send_case_2(void **state)
{
    (void)state;
    rworld w;
    char *reply = one_send(&w, 20, 150);
    assert_int_equal(rw_u64(reply, "region", "name", "MPI_Recv", "inclusive_ns"), 30 * RW_MS);
    assert_int_equal(delay_of(reply, 1), 20 * RW_MS);
    assert_int_equal(end_of(reply, 1), 230 * RW_MS);
    assert_int_equal(rw_u64(reply, "region", "name", "after", "inclusive_ns"), 100 * RW_MS);
    assert_int_equal(delay_of(reply, 0), 20 * RW_MS);
    assert_int_equal(rw_u64(reply, "profile", NULL, NULL, "reorders_flagged"), 0);
    free(reply);
    /* the compensated timeline of [100, 250) ms in 10 ms columns: P1 waits 30 ms (not 50), then computes
     * for 100 ms and is done at 230 ms */
    reply = compensated_timeline(&w, 100 * RW_MS, 250 * RW_MS, 15);
    assert_int_equal(rw_u64(reply, "timeline", NULL, NULL, "compensated"), 1);
    assert_row(reply, 1, "p2p", "10,10,10,0,0,0,0,0,0,0,0,0,0,0,0");
    assert_row(reply, 1, "user", "0,0,0,10,10,10,10,10,10,10,10,10,10,0,0");
    free(reply);
    rw_free(&w);
}

/* Case 1 (x_s ≥ x_i + w): the compensated message is there before the receive: w' = 0, and the wait
 * becomes P1's delay, x₂ = w = 10. */
static void test_one_send_case_1(void **state)
{
    (void)state;
    rworld w;
    char *reply = one_send(&w, 30, 110);
    assert_int_equal(rw_u64(reply, "region", "name", "MPI_Recv", "inclusive_ns"), 0);
    assert_int_equal(delay_of(reply, 1), 10 * RW_MS);
    assert_int_equal(end_of(reply, 1), 200 * RW_MS);
    free(reply);
    /* compensated, P1 does not wait at all: it computes over [100, 200) ms */
    reply = compensated_timeline(&w, 100 * RW_MS, 250 * RW_MS, 15);
    assert_row(reply, 1, "p2p", "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0");
    assert_row(reply, 1, "user", "10,10,10,10,10,10,10,10,10,10,0,0,0,0,0");
    free(reply);
    rw_free(&w);
}

/* The events of a compensated copy, their times in ms (an event at a sub-ms time fails). */
static size_t copy_times(otfx_trace *copy, otfx_event_type *types, uint64_t *ms, size_t capacity)
{
    otfx_event events[64];
    size_t n = 0;
    otfx_trace_reader *reader = NULL;
    assert_int_equal(otfx_trace_reader_open(copy, 0, OTFX_TIME_MAX, false, &reader), OTFX_OK);
    size_t got;
    while (otfx_trace_reader_next(reader, events, 64, &got) == OTFX_OK && got > 0)
        for (size_t i = 0; i < got && n < capacity; i++, n++) {
            types[n] = events[i].type;
            assert_int_equal(events[i].time % RW_MS, 0);
            ms[n] = events[i].time / RW_MS;
        }
    otfx_trace_reader_close(reader);
    return n;
}

/* Malony et al.'s master/worker: the master hands work to 3 workers and waits for their results; each
 * computes 100 ms, slowed by 10, 20 and 30 ms of measurement. Measured, the master ends at 130 ms (30 %
 * late); compensated at 100 ms, as unmeasured. */
static void test_master_worker(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 4);
    otfx_ref compute = rw_region(&w, "compute", OTFX_ROLE_USER_FUNCTION);
    const uint64_t t0 = 10 * RW_MS;
    for (uint32_t worker = 1; worker <= 3; worker++) {
        rw_send(&w, 0, worker, t0, t0);
        enter_costs(&w, worker, 10 * worker);
        rw_recv(&w, worker, 0, t0, t0);
        rw_compute(&w, worker, compute, t0, t0 + (100 + 10 * worker) * RW_MS);
        rw_send(&w, worker, 0, t0 + (100 + 10 * worker) * RW_MS, t0 + (100 + 10 * worker) * RW_MS);
    }
    w.info[0].overhead.measured = true;
    for (uint32_t worker = 1; worker <= 3; worker++)
        rw_recv(&w, 0, worker, t0 + (100 + 10 * (worker - 1)) * RW_MS * (worker > 1),
                t0 + (100 + 10 * worker) * RW_MS);
    char *reply = compensated_profile(&w);
    assert_int_equal(rw_u64(reply, "compensated-rank", "rank", "0", "end_ns"), t0 + 130 * RW_MS);
    assert_int_equal(end_of(reply, 0), t0 + 100 * RW_MS);
    assert_int_equal(delay_of(reply, 0), 30 * RW_MS);
    for (uint32_t worker = 1; worker <= 3; worker++)
        assert_int_equal(end_of(reply, worker), t0 + 100 * RW_MS);
    assert_int_equal(rw_u64(reply, "region", "name", "compute", "inclusive_ns"), 300 * RW_MS);
    /* the master's waiting shrinks from 130 to 100 ms */
    assert_int_equal(rw_u64(reply, "region", "name", "MPI_Recv", "inclusive_ns"), 100 * RW_MS);
    free(reply);
    /* the timeline of [0, 150) ms: measured, the master waits until 140 ms and worker 3 computes until
     * then; compensated, every rank is done at 110 ms */
    otfx_command plain = rw_query(OTFX_CMD_TIMELINE);
    plain.from = 0;
    plain.to = 150 * RW_MS;
    plain.from_given = plain.to_given = true;
    plain.bins = 15;
    reply = rw_run_one_place(otfx_analysis_for_command(OTFX_CMD_TIMELINE), &plain, &w);
    assert_row(reply, 0, "p2p", "0,10,10,10,10,10,10,10,10,10,10,10,10,10,0");
    assert_row(reply, 3, "user", "0,10,10,10,10,10,10,10,10,10,10,10,10,10,0");
    free(reply);
    reply = compensated_timeline(&w, 0, 150 * RW_MS, 15);
    assert_row(reply, 0, "p2p", "0,10,10,10,10,10,10,10,10,10,10,0,0,0,0");
    for (uint32_t worker = 1; worker <= 3; worker++)
        assert_row(reply, worker, "user", "0,10,10,10,10,10,10,10,10,10,10,0,0,0,0");
    char dominant[16] = ""; /* of worker 3's second column */
    assert_int_equal(sscanf(rw_field(reply, "row", "index", "3", "dominant"), "%*[^,],%15[^,]", dominant), 1);
    assert_string_equal(rw_field(reply, "legend", "id", dominant, "name"), "compute");
    free(reply);
    /* open ends: the columns cover what is held (from 10 ms), aligned; the same on every split */
    reply = compensated_timeline(&w, 0, 0, 16);
    assert_string_equal(rw_field(reply, "timeline", NULL, NULL, "mode"), "held");
    free(reply);
    /* the copies a snapshot --compensated writes: every event at its compensated time */
    otfx_command all = rw_query(OTFX_CMD_SNAPSHOT);
    all.compensated = true;
    otfx_leaf_input input = rw_input(&w, 0, w.ranks, NULL);
    otfx_trace *copies[4];
    char error[256];
    assert_true(otfx_analysis_compensated_traces(&all, &input, copies, error, sizeof error));
    otfx_event_type types[32];
    uint64_t ms[32];
    /* the master: three sends at 10 ms, its receives end at 110 ms (measured 120, 130, 140) */
    size_t n = copy_times(copies[0], types, ms, 32);
    assert_int_equal(n, 18);
    assert_int_equal(types[n - 2], OTFX_EV_RECV);
    assert_int_equal(ms[n - 2], 110);
    assert_int_equal(ms[n - 1], 110);
    /* worker 3: receives at 10 ms, computes until 110 ms (measured 140), sends then */
    n = copy_times(copies[3], types, ms, 32);
    assert_int_equal(n, 8);
    const otfx_event_type expected_types[] = {OTFX_EV_ENTER, OTFX_EV_RECV,  OTFX_EV_LEAVE, OTFX_EV_ENTER,
                                              OTFX_EV_LEAVE, OTFX_EV_ENTER, OTFX_EV_SEND,  OTFX_EV_LEAVE};
    const uint64_t expected_ms[] = {10, 10, 10, 10, 110, 110, 110, 110};
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(types[i], expected_types[i]);
        assert_int_equal(ms[i], expected_ms[i]);
    }
    for (uint32_t r = 0; r < w.ranks; r++)
        otfx_trace_destroy(copies[r]);
    /* a rank set selects which traces are copied */
    assert_true(otfx_rank_set_parse("1-2", &all.ranks));
    assert_true(otfx_analysis_compensated_traces(&all, &input, copies, error, sizeof error));
    assert_null(copies[0]);
    assert_non_null(copies[1]);
    assert_non_null(copies[2]);
    assert_null(copies[3]);
    otfx_trace_destroy(copies[1]);
    otfx_trace_destroy(copies[2]);
    rw_free(&w);
}

/* A staggered barrier: ranks arrive at 10, 20, 30 ms delayed by 1, 2, 3 ms and all leave at 30 ms. Every
 * member completes, compensated, at the latest compensated arrival (27 ms) plus the smallest arrival-
 * to-completion its stream saw (here 0): the bound is that latency's error, never more. */
static void test_staggered_barrier(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 3);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref barrier = rw_region(&w, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE);
    uint64_t arrive[3], done[3];
    for (uint32_t r = 0; r < 3; r++) {
        enter_costs(&w, r, r + 1);
        rw_compute(&w, r, work, 0, 10 * (r + 1) * RW_MS);
        arrive[r] = 10 * (r + 1) * RW_MS;
        done[r] = 30 * RW_MS;
    }
    rw_collective(&w, barrier, OP_BARRIER, UINT32_MAX, arrive, done);
    char *reply = compensated_profile(&w);
    for (uint32_t r = 0; r < 3; r++) {
        assert_int_equal(end_of(reply, r), 27 * RW_MS);
        assert_int_equal(delay_of(reply, r), 3 * RW_MS);
    }
    /* waits of 18, 9 and 0 ms */
    assert_int_equal(rw_u64(reply, "region", "name", "MPI_Barrier", "inclusive_ns"), 27 * RW_MS);
    free(reply);
    rw_free(&w);
}

/* P1 receives from P0, then from P2; compensated, P2's message was sent first and there before the
 * first receive ended: were these wildcard receives, the unmeasured run may have taken P2's first. The
 * profile flags it and keeps the measured order. */
static void test_reorder_flagged(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 3);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    for (uint32_t r = 0; r < 3; r++)
        w.info[r].overhead.measured = true;
    enter_costs(&w, 2, 30);
    rw_send(&w, 0, 1, 50 * RW_MS, 50 * RW_MS);
    rw_compute(&w, 2, work, 0, 60 * RW_MS);
    rw_send(&w, 2, 1, 60 * RW_MS, 60 * RW_MS);
    rw_recv(&w, 1, 0, 40 * RW_MS, 50 * RW_MS);
    rw_recv(&w, 1, 2, 50 * RW_MS, 60 * RW_MS);
    char *reply = compensated_profile(&w);
    assert_int_equal(rw_u64(reply, "profile", NULL, NULL, "reorders_flagged"), 1);
    assert_int_equal(end_of(reply, 1), 50 * RW_MS);
    free(reply);
    rw_free(&w);
}

/* A re-measurement at 150 ms (overhead measure) doubles a user region's ENTER cost from 10 to 20 ms and
 * took 5 ms itself: the costs are piecewise. Regions a, b, c run 100 ms each, measured; compensated, a
 * loses its ENTER's 10 ms, b its ENTER's 10 ms and the measuring's 5 ms, c its ENTER's 20 ms. */
static void test_remeasured(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 1);
    const char *names[3] = {"a", "b", "c"};
    for (uint64_t i = 0; i < 3; i++)
        rw_compute(&w, 0, rw_region(&w, names[i], OTFX_ROLE_USER_FUNCTION), i * 100 * RW_MS,
                   (i + 1) * 100 * RW_MS);
    enter_costs(&w, 0, 10);
    otfx_cost_change change = {.since = 150 * RW_MS, .thread = 0, .took_ns = 5 * RW_MS};
    change.costs.user_enter_ps = 20 * RW_MS * 1000u;
    w.info[0].overhead.change_count = 1;
    w.info[0].overhead.changes = &change;
    char *reply = compensated_profile(&w);
    assert_int_equal(rw_u64(reply, "region", "name", "a", "inclusive_ns"), 90 * RW_MS);
    assert_int_equal(rw_u64(reply, "region", "name", "b", "inclusive_ns"), 85 * RW_MS);
    assert_int_equal(rw_u64(reply, "region", "name", "c", "inclusive_ns"), 80 * RW_MS);
    assert_int_equal(end_of(reply, 0), 255 * RW_MS);
    assert_int_equal(rw_u64(reply, "compensated-rank", "rank", "0", "intrusion_ns"), 45 * RW_MS);
    free(reply);
    rw_free(&w);
}

/* Events at the ENTER's time (the metrics read after it, a phase marker) come after its cost was paid
 * but cannot be compensated before the ENTER: the cost is still owed and comes out of the LEAVE. */
static void test_same_time_events(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 1);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref phase = rw_region(&w, "phase", OTFX_ROLE_PHASE);
    rw_enter(&w, 0, 0, work);
    rw_event(&w, 0, (otfx_event){.time = 0, .type = OTFX_EV_PHASE, .u.phase = {.region = phase, .value = 1}});
    rw_leave(&w, 0, 100 * RW_MS);
    enter_costs(&w, 0, 10);
    otfx_command q = rw_query(OTFX_CMD_PROFILE); /* one place: the splits' copies know no phases */
    q.compensated = true;
    char *reply = rw_run_one_place(otfx_analysis_for_command(OTFX_CMD_PROFILE), &q, &w);
    assert_int_equal(rw_u64(reply, "region", "name", "work", "inclusive_ns"), 90 * RW_MS);
    free(reply);
    rw_free(&w);
}

/* Without a measurement nothing is taken out: compensated equals measured, and the rank is counted. */
static void test_unmeasured(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 2);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    rw_compute(&w, 0, work, 0, 50 * RW_MS);
    rw_send(&w, 0, 1, 50 * RW_MS, 50 * RW_MS);
    rw_recv(&w, 1, 0, 10 * RW_MS, 50 * RW_MS);
    char *reply = compensated_profile(&w);
    assert_int_equal(rw_u64(reply, "profile", NULL, NULL, "unmeasured_ranks"), 2);
    assert_int_equal(end_of(reply, 1), 50 * RW_MS);
    assert_int_equal(rw_u64(reply, "region", "name", "MPI_Recv", "inclusive_ns"), 40 * RW_MS);
    free(reply);
    rw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_send_case_2),  cmocka_unit_test(test_one_send_case_1),
        cmocka_unit_test(test_master_worker),    cmocka_unit_test(test_staggered_barrier),
        cmocka_unit_test(test_reorder_flagged),  cmocka_unit_test(test_remeasured),
        cmocka_unit_test(test_same_time_events), cmocka_unit_test(test_unmeasured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

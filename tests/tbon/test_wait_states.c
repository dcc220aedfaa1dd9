/* test_wait_states.c — the wait-states module on synthetic traces whose waits are known by
 * construction: a late sender, a late receiver, an allreduce with one late rank, a late broadcast and
 * an early reduce; each on one place and with the ranks split over 2 and 3 places. And what an answer says
 * it could not see (the replay-based modules share it, replay_support.c): the ranges without detail per
 * stream and how fresh each rank's data is. */
#include "replay_world.h"

#define OP_BCAST     1u
#define OP_ALLREDUCE 11u
#define OP_REDUCE    12u
#define UNSEEN_KEPT  100u /* the ranges an answer lists at most */

static const otfx_analysis_module *module(void)
{
    const otfx_analysis_module *m = otfx_analysis_for_command(OTFX_CMD_WAIT_STATES);
    assert_non_null(m);
    assert_string_equal(m->name, "wait-states");
    return m;
}

static void test_late_sender_and_nxn(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 4);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref allreduce = rw_region(&w, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE);
    /* rank 1 posts its receive at 0; rank 0 computes 50 ms first, then sends */
    rw_compute(&w, 0, work, 0, 50 * RW_MS);
    rw_send(&w, 0, 1, 50 * RW_MS, 51 * RW_MS);
    rw_recv(&w, 1, 0, 0, 51 * RW_MS);
    /* an allreduce at 100 ms where rank 3 arrives 30 ms late */
    rw_compute(&w, 3, work, 0, 130 * RW_MS);
    uint64_t arrive[4] = {100 * RW_MS, 100 * RW_MS, 100 * RW_MS, 130 * RW_MS};
    uint64_t done[4] = {131 * RW_MS, 131 * RW_MS, 131 * RW_MS, 131 * RW_MS};
    rw_collective(&w, allreduce, OP_ALLREDUCE, UINT32_MAX, arrive, done);

    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_sender_ns"), 50 * RW_MS);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "wait_nxn_ns"), 90 * RW_MS);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_receiver_ns"), 0);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "total_ns"), 140 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-function", "name", "MPI_Recv", "wait_ns"), 50 * RW_MS);
    assert_string_equal(rw_field(reply, "ws-function", "name", "MPI_Recv", "kind"), "late-sender");
    assert_int_equal(rw_u64(reply, "ws-function", "name", "MPI_Allreduce", "wait_ns"), 90 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-function", "name", "MPI_Allreduce", "count"), 3);
    /* rank 1 waited 50 ms for rank 0 and 30 ms for rank 3 */
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "1", "wait_ns"), 80 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "1", "late_sender_ns"), 50 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "0", "wait_nxn_ns"), 30 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "2", "wait_nxn_ns"), 30 * RW_MS);
    assert_null(rw_field(reply, "ws-rank", "rank", "3", "wait_ns"));
    /* who made whom wait: the largest pair first */
    assert_int_equal(rw_u64(reply, "ws-pair", NULL, NULL, "waiting"), 1);
    assert_int_equal(rw_u64(reply, "ws-pair", NULL, NULL, "causing"), 0);
    assert_int_equal(rw_u64(reply, "ws-pair", NULL, NULL, "wait_ns"), 50 * RW_MS);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "pairs"), 4);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);

    /* --limit 1: one pair line */
    q.limit = 1;
    reply = rw_run_one_place(module(), &q, &w);
    size_t lines = 0;
    for (const char *p = strstr(reply, "ws-pair "); p; p = strstr(p + 1, "ws-pair "))
        lines++;
    assert_int_equal(lines, 1);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

/* A blocking send entered at 10 ms that lasts until the receive is posted at 40 ms: 30 ms late
 * receiver on the sender, caused by the receiver. */
static void test_late_receiver(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 2);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref ssend = rw_region(&w, "MPI_Ssend", OTFX_ROLE_MPI_P2P);
    rw_enter(&w, 0, 10 * RW_MS, ssend);
    rw_send_event(&w, 0, 10 * RW_MS, 1);
    rw_leave(&w, 0, 41 * RW_MS);
    rw_compute(&w, 1, work, 0, 40 * RW_MS);
    rw_recv(&w, 1, 0, 40 * RW_MS, 41 * RW_MS);
    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_receiver_ns"), 30 * RW_MS);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_sender_ns"), 0);
    assert_int_equal(rw_u64(reply, "ws-function", "name", "MPI_Ssend", "wait_ns"), 30 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "0", "late_receiver_ns"), 30 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-pair", "waiting", "0", "causing"), 1);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

/* A broadcast whose root arrives 20 ms after the others, then a reduce whose root arrives 15 ms
 * before the first other member. */
static void test_late_broadcast_early_reduce(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 3);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref bcast = rw_region(&w, "MPI_Bcast", OTFX_ROLE_MPI_COLLECTIVE);
    otfx_ref reduce = rw_region(&w, "MPI_Reduce", OTFX_ROLE_MPI_COLLECTIVE);
    rw_compute(&w, 2, work, 0, 20 * RW_MS);
    uint64_t arrive[3] = {0, 0, 20 * RW_MS}, done[3] = {21 * RW_MS, 21 * RW_MS, 21 * RW_MS};
    rw_collective(&w, bcast, OP_BCAST, 2, arrive, done);
    rw_compute(&w, 0, work, 21 * RW_MS, 45 * RW_MS);
    rw_compute(&w, 1, work, 21 * RW_MS, 40 * RW_MS);
    uint64_t arrive2[3] = {45 * RW_MS, 40 * RW_MS, 25 * RW_MS},
             done2[3] = {46 * RW_MS, 46 * RW_MS, 46 * RW_MS};
    rw_collective(&w, reduce, OP_REDUCE, 2, arrive2, done2);
    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_broadcast_ns"), 40 * RW_MS);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "early_reduce_ns"), 15 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "2", "early_reduce_ns"), 15 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-pair", "waiting", "2", "causing"), 1);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "0", "late_broadcast_ns"), 20 * RW_MS);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

static void test_merge(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 2);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    rw_compute(&w, 0, work, 0, 50 * RW_MS);
    rw_send(&w, 0, 1, 50 * RW_MS, 51 * RW_MS);
    rw_recv(&w, 1, 0, 0, 51 * RW_MS);
    const otfx_analysis_module *m = module();
    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    char error[256];
    otfx_leaf_input input = rw_input(&w, 0, 2, NULL);
    otfx_blob a = {0}, merged = {0};
    assert_true(m->leaf(&q, &input, &a, error, sizeof error));
    assert_true(m->merge(&q, &merged, a.data, a.length, error, sizeof error));
    assert_true(m->merge(&q, &merged, a.data, a.length, error, sizeof error));
    for (size_t cut = 0; cut < a.length; cut += 5)
        assert_false(m->merge(&q, &merged, a.data, cut, error, sizeof error));
    otfx_text reply = {0};
    assert_true(m->finish(&q, merged.data, merged.length, 2, 3, &reply, error, sizeof error));
    otfx_text_append(&reply, "", 1);
    assert_int_equal(rw_u64(reply.data, "wait-states", NULL, NULL, "late_sender_ns"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply.data, "ws-pair", NULL, NULL, "wait_ns"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply.data, "wait-states", NULL, NULL, "partial"), 1);
    otfx_text_free(&reply);
    otfx_blob_free(&a);
    otfx_blob_free(&merged);
    rw_free(&w);
}

static void reduction_record(rworld *w, uint32_t rank, uint64_t begin, uint64_t end)
{
    otfx_event e = {.time = begin, .type = OTFX_EV_REDUCTION};
    e.u.reduction.strategy = OTFX_REDUCE_TYPE;
    e.u.reduction.begin = begin;
    e.u.reduction.end = end;
    e.u.reduction.events_removed = 2;
    rw_event(w, rank, e);
}

/* The unseen-range line of (rank, why), as "begin-end" ("" when there is none). */
static const char *range_of(const char *reply, uint32_t rank, const char *why)
{
    static char text[64];
    text[0] = '\0';
    for (const char *p = reply; *p;) {
        const char *end = strchr(p, '\n');
        size_t length = end ? (size_t)(end - p) : strlen(p);
        otfx_kv_line line;
        if (otfx_kv_parse(p, length, &line)) {
            const char *r = otfx_kv_get(&line, "rank"), *w = otfx_kv_get(&line, "why");
            if (strcmp(line.type, "unseen-range") == 0 && r && w && strtoul(r, NULL, 10) == rank &&
                strcmp(w, why) == 0)
                snprintf(text, sizeof text, "%s-%s", otfx_kv_get(&line, "begin"), otfx_kv_get(&line, "end"));
            otfx_kv_line_free(&line);
        }
        p = end ? end + 1 : p + length;
    }
    return text;
}

static void test_unseen_ranges(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 4);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    otfx_ref inner = rw_region(&w, "inner", OTFX_ROLE_USER_FUNCTION);
    /* rank 0: a reduction removed [40, 60) ms in the middle */
    rw_compute(&w, 0, work, 10 * RW_MS, 40 * RW_MS);
    reduction_record(&w, 0, 40 * RW_MS, 60 * RW_MS);
    rw_compute(&w, 0, work, 60 * RW_MS, 100 * RW_MS);
    /* rank 1: in `work` since 1 ms, before the window; its first event in the window is at 30 ms. The
     * part of the window before it is not reported: the trace holds detail from its first event on */
    rw_enter(&w, 1, 1 * RW_MS, work);
    rw_compute(&w, 1, inner, 30 * RW_MS, 40 * RW_MS);
    rw_leave(&w, 1, 150 * RW_MS);
    rw_compute(&w, 2, work, 10 * RW_MS, 100 * RW_MS);
    /* rank 3 holds nothing */
    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    q.from = 5 * RW_MS;
    q.to = 200 * RW_MS;
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_string_equal(range_of(reply, 0, "reduced"), "40000000-60000000");
    assert_string_equal(range_of(reply, 0, "before-held"), "");
    assert_string_equal(range_of(reply, 0, "after-held"), "100000000-200000000");
    assert_string_equal(range_of(reply, 1, "before-held"), "");
    assert_string_equal(range_of(reply, 1, "after-held"), "150000000-200000000");
    assert_string_equal(range_of(reply, 2, "after-held"), "100000000-200000000");
    assert_string_equal(range_of(reply, 3, "rank-not-served"), "5000000-200000000");
    assert_string_equal(range_of(reply, 3, "after-held"), "");
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges"), 5);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges_total"), 5);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges_left_out"), 0);
    /* how fresh: the last event each rank sent, the oldest rank named */
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "held_ranks"), 3);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "held_until_min"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "held_until_oldest_rank"), 0);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "held_until_max"), 150 * RW_MS);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);

    /* a rank the query does not select is not reported; the open window ends at the end of time */
    q.to = OTFX_TIME_MAX;
    q.ranks.count = 1;
    q.ranks.ranges[0].first = 2;
    q.ranks.ranges[0].last = 3;
    reply = rw_run_one_place(module(), &q, &w);
    assert_string_equal(range_of(reply, 0, "reduced"), "");
    assert_string_equal(range_of(reply, 3, "rank-not-served"), "5000000-18446744073709551615");
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges_total"), 1);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "held_ranks"), 1);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "held_until_oldest_rank"), 2);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

/* Ranges of one stream that touch coalesce; of many, the longest are listed and the rest counted. */
static void test_unseen_ranges_bounded(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 3);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    uint64_t t = 0, left_out_ns = 0;
    for (uint64_t i = 0; i < 150; i++) {
        const uint64_t length = (i + 1) * 1000; /* the 51 shortest are left out */
        rw_compute(&w, i % 3, work, t, t + 10);
        reduction_record(&w, i % 3, t + 10, t + 10 + length);
        if (i < 51)
            left_out_ns += length;
        t += 10 + length;
    }
    /* two reductions that touch: one range */
    rw_compute(&w, 0, work, t, t + 10);
    reduction_record(&w, 0, t + 10, t + 500010);
    reduction_record(&w, 0, t + 500010, t + 900010);
    rw_compute(&w, 0, work, t + 900010, t + 900020);
    otfx_command q = rw_query(OTFX_CMD_WAIT_STATES);
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges"), UNSEEN_KEPT);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges_total"), 151);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "ranges_left_out"), 151 - UNSEEN_KEPT);
    /* the 51 shortest: 1 .. 51 µs */
    assert_true(rw_u64(reply, "unseen", NULL, NULL, "ranges_left_out_ns") <= left_out_ns);
    assert_true(rw_u64(reply, "unseen", NULL, NULL, "ranges_left_out_ns") >= left_out_ns - 51000);
    assert_non_null(strstr(reply, "unseen-range rank=0 thread=0 begin="));
    bool found = false;
    for (const char *p = reply; (p = strstr(p, "unseen-range rank=0 ")) != NULL; p++) {
        char line[160];
        snprintf(line, sizeof line, "begin=%llu end=%llu why=reduced", (unsigned long long)(t + 10),
                 (unsigned long long)(t + 900010));
        const char *end = strchr(p, '\n');
        if (strstr(p, line) && (!end || strstr(p, line) < end))
            found = true;
    }
    assert_true(found);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_sender_and_nxn),
        cmocka_unit_test(test_late_receiver),
        cmocka_unit_test(test_late_broadcast_early_reduce),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_unseen_ranges),
        cmocka_unit_test(test_unseen_ranges_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

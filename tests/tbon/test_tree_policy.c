/*
 * test_tree_policy.c — the tree's answer policy (tbon/src/tree/policy.c) alone, without MPI: a place
 * answers once its own part and every child answered; the root's PARTIAL comes only for a query a client
 * waits for, with something answered, parts still missing and 200 ms past, and only once; queries enter
 * the tree in order, at most 8 at once; the end waits for requests in flight at most 10 s; the last
 * command of a failed job waits for the ranks' flush at most 2 s.
 */
#include "policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MS (1000u * 1000u)
#define T0 (5ull * 1000u * MS) /* any start: the policy only looks at differences */

static void test_answered_once_every_part_is_in(void **state)
{
    (void)state;
    struct answer_progress progress;
    answer_begin(&progress, T0);
    assert_true(answer_complete(&progress)); /* nothing to wait for: a place without children or own part */
    progress.children_waiting = 2;
    progress.own_pending = true;
    assert_false(answer_complete(&progress));
    progress.children_waiting = 0;
    assert_false(answer_complete(&progress)); /* the own part still runs */
    progress.own_pending = false;
    progress.children_waiting = 1;
    assert_false(answer_complete(&progress)); /* a child still out */
    progress.children_waiting = 0;
    assert_true(answer_complete(&progress));
}

static void test_partial_after_200_ms_for_a_waiting_client(void **state)
{
    (void)state;
    struct answer_progress progress;
    answer_begin(&progress, T0);
    progress.children_waiting = 1;
    assert_false(answer_partial_due(&progress, true, true, T0));
    assert_false(answer_partial_due(&progress, true, true, T0 + ANSWER_PARTIAL_AFTER_NS - 1));
    assert_true(answer_partial_due(&progress, true, true, T0 + ANSWER_PARTIAL_AFTER_NS));
    assert_true(answer_partial_due(&progress, true, true, T0 + 10 * ANSWER_PARTIAL_AFTER_NS));
    /* nobody waits (a command, or a request whose client was answered already), or nothing is in yet */
    assert_false(answer_partial_due(&progress, false, true, T0 + ANSWER_PARTIAL_AFTER_NS));
    assert_false(answer_partial_due(&progress, true, false, T0 + ANSWER_PARTIAL_AFTER_NS));
    /* once only */
    progress.partial_sent = true;
    assert_false(answer_partial_due(&progress, true, true, T0 + ANSWER_PARTIAL_AFTER_NS));
    /* everything in: the full answer goes out, no PARTIAL */
    answer_begin(&progress, T0);
    assert_false(answer_partial_due(&progress, true, true, T0 + ANSWER_PARTIAL_AFTER_NS));
    /* the own part alone still running counts as missing */
    progress.own_pending = true;
    assert_true(answer_partial_due(&progress, true, true, T0 + ANSWER_PARTIAL_AFTER_NS));
}

static void test_partial_after_200_ms_is_the_documented_delay(void **state)
{
    (void)state;
    assert_int_equal(ANSWER_PARTIAL_AFTER_NS, 200 * MS);
    assert_int_equal(ANSWER_MAX_QUERIES_IN_TREE, 8);
}

static void test_queries_enter_in_order_at_most_eight(void **state)
{
    (void)state;
    for (size_t in_tree = 0; in_tree < ANSWER_MAX_QUERIES_IN_TREE; in_tree++)
        assert_true(answer_admits_query(0, in_tree));
    assert_false(answer_admits_query(0, ANSWER_MAX_QUERIES_IN_TREE));
    assert_false(answer_admits_query(0, ANSWER_MAX_QUERIES_IN_TREE + 3));
    /* room in the tree, but others wait before it: it waits behind them */
    assert_false(answer_admits_query(1, 0));
    assert_false(answer_admits_query(5, ANSWER_MAX_QUERIES_IN_TREE - 1));
}

static void test_end_waits_for_requests_at_most_10_s(void **state)
{
    (void)state;
    assert_true(answer_drained(0, T0, T0));
    assert_false(answer_drained(3, T0, T0));
    assert_false(answer_drained(3, T0, T0 + ANSWER_DRAIN_TIMEOUT_NS - 1));
    assert_true(answer_drained(3, T0, T0 + ANSWER_DRAIN_TIMEOUT_NS));
    assert_int_equal(ANSWER_DRAIN_TIMEOUT_NS, 10000ull * MS);
}

static void test_final_flush_waits_at_most_2_s(void **state)
{
    (void)state;
    struct answer_progress progress;
    answer_begin(&progress, T0);
    progress.own_pending = true;
    assert_false(answer_final_flush_over(&progress, T0));
    assert_false(answer_final_flush_over(&progress, T0 + ANSWER_FINAL_FLUSH_NS - 1));
    assert_true(answer_final_flush_over(&progress, T0 + ANSWER_FINAL_FLUSH_NS));
    assert_int_equal(ANSWER_FINAL_FLUSH_NS, 2000ull * MS);
}

static void test_query_flush_waits_at_most_2_s_or_a_quarter_of_the_module_limit(void **state)
{
    (void)state;
    struct answer_progress progress;
    answer_begin(&progress, T0);
    progress.own_pending = true;
    const uint64_t thirty_s = 30000ull * MS;
    assert_false(answer_query_flush_over(&progress, T0, thirty_s));
    assert_false(answer_query_flush_over(&progress, T0 + ANSWER_QUERY_FLUSH_NS - 1, thirty_s));
    assert_true(answer_query_flush_over(&progress, T0 + ANSWER_QUERY_FLUSH_NS, thirty_s));
    assert_int_equal(ANSWER_QUERY_FLUSH_NS, 2000ull * MS);
    /* a short module time limit: the places must still start their replays well within it */
    assert_false(answer_query_flush_over(&progress, T0 + 250 * MS - 1, 1000 * MS));
    assert_true(answer_query_flush_over(&progress, T0 + 250 * MS, 1000 * MS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answered_once_every_part_is_in),
        cmocka_unit_test(test_partial_after_200_ms_for_a_waiting_client),
        cmocka_unit_test(test_partial_after_200_ms_is_the_documented_delay),
        cmocka_unit_test(test_queries_enter_in_order_at_most_eight),
        cmocka_unit_test(test_end_waits_for_requests_at_most_10_s),
        cmocka_unit_test(test_query_flush_waits_at_most_2_s_or_a_quarter_of_the_module_limit),
        cmocka_unit_test(test_final_flush_waits_at_most_2_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_reduction.c — the fixed buffer under every strategy: the budget holds while 100 times the
 * budget is appended, memory does not creep, the stream stays well nested after reductions, status
 * counters add up, profiles and message statistics stay exactly those of the full input (approximate
 * only where a window's edge cuts a reduced range), strategies switch while running, `stop` stops. */
#define _POSIX_C_SOURCE 200809L /* the private headers use POSIX rwlocks */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_helpers.h"
#include "trace_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

enum { SMALL_BUDGET = 64 * 1024, SMALL_CHUNK = 4096, BATCH = 4096 };

typedef struct harness {
    otfx_defs *defs;
    random_stream *stream;
    otfx_trace *trace;
    event_log input;
} harness;

static harness *harness_open(random_stream_kind kind, uint64_t seed, otfx_reduction strategy, size_t budget)
{
    harness *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->defs = otfx_defs_create();
    random_stream_config config = random_stream_config_default(kind, seed);
    h->stream = random_stream_create(h->defs, &config);
    assert_non_null(h->stream);
    otfx_trace_config trace_config = otfx_trace_config_default(budget);
    trace_config.strategy = strategy;
    trace_config.chunk_bytes = SMALL_CHUNK;
    assert_int_equal(otfx_trace_create(&trace_config, h->defs, random_stream_location(h->stream), &h->trace),
                     OTFX_OK);
    return h;
}

static void harness_close(harness *h)
{
    otfx_trace_destroy(h->trace);
    random_stream_destroy(h->stream);
    otfx_defs_destroy(h->defs);
    event_log_free(&h->input);
    free(h);
}

static otfx_trace_status status_of(otfx_trace *trace)
{
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    return status;
}

/* Events held plus events removed by the trace's own strategies are all events received. */
static void assert_counters_add_up(const otfx_trace_status *status)
{
    uint64_t reduced = 0;
    for (int s = OTFX_REDUCE_RING; s <= OTFX_REDUCE_STOP; s++)
        reduced += status->events_reduced[s];
    assert_int_equal(status->events_held + reduced, status->events_received);
}

static void assert_well_nested(otfx_trace *trace)
{
    event_log log = {0};
    assert_int_equal(collect_events(trace, 0, OTFX_TIME_MAX, true, &log), OTFX_OK);
    /* Context ENTERs come first and lie before the first event held. */
    otfx_trace_status status = status_of(trace);
    size_t context = 0;
    while (context < log.count && log.events[context].type == OTFX_EV_ENTER &&
           log.events[context].time <= status.oldest_detail)
        context++;
    size_t error = first_nesting_error(&log, context);
    if (error != SIZE_MAX)
        fail_msg("event %zu of %zu (type %d, time %llu) breaks the nesting", error, log.count,
                 log.events[error].type, (unsigned long long)log.events[error].time);
    event_log_free(&log);
}

static bool entry_is_zero(const otfx_profile_entry *e)
{
    return !(e->visits | e->inclusive | e->exclusive | e->messages_sent | e->bytes_sent |
             e->messages_received | e->bytes_received);
}

static void assert_profile_equals(const otfx_profile *profile, const reference_stats *expected,
                                  const char *what)
{
    const otfx_profile_entry *entries = otfx_profile_entries(profile);
    size_t count = otfx_profile_size(profile), j = 0;
    for (size_t i = 0; i < count; i++) {
        if (entry_is_zero(&entries[i]))
            continue;
        if (j >= expected->region_count)
            fail_msg("%s: unexpected region %u", what, entries[i].region);
        const otfx_profile_entry *want = &expected->regions[j++];
        const otfx_profile_entry *got = &entries[i];
        if (memcmp(want, got, sizeof *want) != 0)
            fail_msg(
                "%s: region %u (expected %u): visits %llu/%llu incl %llu/%llu excl %llu/%llu sent %llu/%llu "
                "recv %llu/%llu",
                what, got->region, want->region, (unsigned long long)got->visits,
                (unsigned long long)want->visits, (unsigned long long)got->inclusive,
                (unsigned long long)want->inclusive, (unsigned long long)got->exclusive,
                (unsigned long long)want->exclusive, (unsigned long long)got->messages_sent,
                (unsigned long long)want->messages_sent, (unsigned long long)got->messages_received,
                (unsigned long long)want->messages_received);
    }
    if (j != expected->region_count)
        fail_msg("%s: %zu regions missing", what, expected->region_count - j);
}

static void assert_messages_equal(otfx_trace *trace, otfx_time from, otfx_time to,
                                  const reference_stats *expected)
{
    otfx_peer_stats peers[256];
    size_t count = 256;
    assert_int_equal(otfx_query_messages(trace, from, to, peers, &count), OTFX_OK);
    assert_int_equal(count, expected->peer_count);
    for (size_t i = 0; i < count; i++)
        assert_memory_equal(&peers[i], &expected->peers[i], sizeof peers[i]);
}

/* Reduction records of the trace's own strategies. */
static void reduction_records(otfx_trace *trace, event_log *records)
{
    event_log all = {0};
    assert_int_equal(collect_events(trace, 0, OTFX_TIME_MAX, false, &all), OTFX_OK);
    for (size_t i = 0; i < all.count; i++) {
        if (all.events[i].type == OTFX_EV_REDUCTION && all.events[i].u.reduction.strategy <= OTFX_REDUCE_STOP)
            assert_true(event_log_append(records, &all.events[i], 1));
    }
    event_log_free(&all);
}

/* A window needs pro-rating exactly when it overlaps a reduced range without containing it. */
static bool window_cuts_reduced_range(const event_log *records, otfx_time from, otfx_time to)
{
    for (size_t i = 0; i < records->count; i++) {
        otfx_time begin = records->events[i].u.reduction.begin, end = records->events[i].u.reduction.end;
        bool overlaps = begin < to && end >= from, inside = from <= begin && end < to;
        if (overlaps && !inside)
            return true;
    }
    return false;
}

static void check_profiles(harness *h, uint64_t seed)
{
    const event_log *input = &h->input;
    reference_stats expected;
    /* The whole run: exact, whatever was reduced. */
    assert_true(reference_compute(input->events, input->count, 0, OTFX_TIME_MAX, &expected));
    otfx_profile *profile = otfx_profile_create();
    assert_int_equal(otfx_query_profile(h->trace, 0, OTFX_TIME_MAX, profile), OTFX_OK);
    assert_false(otfx_profile_approximate(profile));
    assert_profile_equals(profile, &expected, "whole run");
    assert_messages_equal(h->trace, 0, OTFX_TIME_MAX, &expected);
    reference_free(&expected);

    event_log records = {0};
    reduction_records(h->trace, &records);
    /* A third of the windows start anywhere, a third where detail is held, a third after the last
     * reduced range (those are exact even when `type` or `depth` thinned most of the detail). */
    otfx_time first = input->events[0].time, last = input->events[input->count - 1].time;
    otfx_time detail = status_of(h->trace).oldest_detail, unreduced = first;
    if (detail > last)
        detail = first;
    for (size_t i = 0; i < records.count; i++) {
        if (records.events[i].u.reduction.end > unreduced)
            unreduced = records.events[i].u.reduction.end;
    }
    uint64_t state = seed;
    int exact_windows = 0;
    for (int round = 0; round < 30; round++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        otfx_time start = round % 3 == 0 ? first : round % 3 == 1 ? detail : unreduced + 1;
        if (start > last)
            start = last;
        otfx_time from = start + (state >> 11) % (last - start + 1);
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        otfx_time to = from + 1 + (state >> 11) % (last - from + 2);
        bool cuts = window_cuts_reduced_range(&records, from, to);
        otfx_profile_clear(profile);
        assert_int_equal(otfx_query_profile(h->trace, from, to, profile), OTFX_OK);
        assert_int_equal(otfx_profile_approximate(profile), cuts);
        if (cuts)
            continue;
        assert_true(reference_compute(input->events, input->count, from, to, &expected));
        char what[64];
        snprintf(what, sizeof what, "window %d", round);
        assert_profile_equals(profile, &expected, what);
        assert_messages_equal(h->trace, from, to, &expected);
        reference_free(&expected);
        exact_windows++;
    }
    if (unreduced < last)
        assert_true(exact_windows > 0);
    event_log_free(&records);
    otfx_profile_destroy(profile);
}

/* 100 times the budget through the trace: the budget holds after every batch, counters add up,
 * the stream stays nested, and (outside ASan, whose quarantine keeps freed memory) RSS stays put. */
static void budget_holds(otfx_reduction strategy, random_stream_kind kind)
{
    harness *h = harness_open(kind, 1000 + (uint64_t)strategy, strategy, SMALL_BUDGET);
    otfx_trace_status status = status_of(h->trace);
    size_t batches = 0, rss_after_warmup = 0;
    uint64_t last_reductions = 0;
    /* Fill once to learn the stored size of an event, then append 100 budgets' worth. */
    while (status.reductions == 0 && !status.stopped) {
        otfx_status appended = feed(h->trace, h->stream, BATCH, NULL);
        assert_true(appended == OTFX_OK);
        status = status_of(h->trace);
        batches++;
    }
    double bytes_per_event = (double)SMALL_BUDGET / (double)status.events_received;
    uint64_t target = (uint64_t)(100.0 * SMALL_BUDGET / bytes_per_event);
    while (status.events_received < target) {
        assert_int_equal(feed(h->trace, h->stream, BATCH, NULL), OTFX_OK);
        status = status_of(h->trace);
        if (status.bytes_used > status.budget_bytes)
            fail_msg("%s: %zu bytes used of %zu", otfx_reduction_name(strategy), status.bytes_used,
                     status.budget_bytes);
        assert_counters_add_up(&status);
        if (++batches % 40 == 0 && status.reductions != last_reductions) {
            assert_well_nested(h->trace);
            last_reductions = status.reductions;
        }
        if (!rss_after_warmup && status.events_received > target / 10)
            rss_after_warmup = resident_bytes();
    }
    assert_well_nested(h->trace);
    assert_true(status.reductions > 0);
    if (strategy == OTFX_REDUCE_STOP) {
        assert_true(status.stopped);
        assert_true(status.events_reduced[OTFX_REDUCE_STOP] > 0);
    } else {
        assert_true(
            status.events_reduced[strategy == OTFX_REDUCE_TIME ? OTFX_REDUCE_TIME : OTFX_REDUCE_RING] > 0);
        assert_true(status.oldest_detail > status.first_time);
    }
    if (strategy == OTFX_REDUCE_TYPE || strategy == OTFX_REDUCE_DEPTH)
        assert_true(status.events_reduced[strategy] > 0);
    /* The working memory outside the budget is the documented constant: at most 9 chunks and 128 KiB
     * plus the statistics of a chunk, 3 * 64 bytes per region or peer in it (the streams have fewer
     * than 100). */
    size_t working = otfx_trace_test_working_bytes(h->trace);
    size_t documented = 9 * SMALL_CHUNK + 128 * 1024 + 3 * 64 * 100;
    if (working > documented)
        fail_msg("working memory %zu bytes exceeds the documented %zu", working, documented);
#ifndef UNDER_ASAN
    size_t rss_end = resident_bytes();
    if (rss_after_warmup && rss_end > rss_after_warmup + (4u << 20))
        fail_msg("RSS grew from %zu to %zu bytes", rss_after_warmup, rss_end);
#endif
    harness_close(h);
}

static void test_budget_ring(void **state)
{
    (void)state;
    budget_holds(OTFX_REDUCE_RING, RANDOM_STREAM_MIXED);
}

static void test_budget_time(void **state)
{
    (void)state;
    budget_holds(OTFX_REDUCE_TIME, RANDOM_STREAM_STENCIL);
}

static void test_budget_type(void **state)
{
    (void)state;
    budget_holds(OTFX_REDUCE_TYPE, RANDOM_STREAM_MIXED);
}

static void test_budget_depth(void **state)
{
    (void)state;
    budget_holds(OTFX_REDUCE_DEPTH, RANDOM_STREAM_USER_HEAVY);
}

static void test_budget_stop(void **state)
{
    (void)state;
    budget_holds(OTFX_REDUCE_STOP, RANDOM_STREAM_MIXED);
}

/* Profiles equal the reference computed from the full input, at several points of a run that reduces
 * all along, for every strategy and two kinds of streams. */
static void test_profiles_exact_after_reduction(void **state)
{
    (void)state;
    for (int strategy = OTFX_REDUCE_RING; strategy <= OTFX_REDUCE_STOP; strategy++) {
        for (int kind = RANDOM_STREAM_MIXED; kind <= RANDOM_STREAM_USER_HEAVY; kind += 2) {
            harness *h = harness_open((random_stream_kind)kind, 50 + (uint64_t)strategy,
                                      (otfx_reduction)strategy, SMALL_BUDGET);
            for (int part = 0; part < 3; part++) {
                assert_int_equal(feed(h->trace, h->stream, 60000, &h->input), OTFX_OK);
                otfx_trace_status status = status_of(h->trace);
                assert_true(status.reductions > 0);
                assert_counters_add_up(&status);
                check_profiles(h, 17 + (uint64_t)part);
                assert_well_nested(h->trace);
            }
            harness_close(h);
        }
    }
}

/* The strategy changes while events keep coming; everything stays consistent. */
static void test_strategy_switch(void **state)
{
    (void)state;
    harness *h = harness_open(RANDOM_STREAM_MIXED, 77, OTFX_REDUCE_RING, SMALL_BUDGET);
    const otfx_reduction order[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TYPE, OTFX_REDUCE_DEPTH, OTFX_REDUCE_TIME,
                                    OTFX_REDUCE_STOP, OTFX_REDUCE_RING, OTFX_REDUCE_STOP,  OTFX_REDUCE_TIME};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        assert_int_equal(otfx_trace_set_strategy(h->trace, order[i]), OTFX_OK);
        assert_int_equal(feed(h->trace, h->stream, 40000, &h->input), OTFX_OK);
        otfx_trace_status status = status_of(h->trace);
        assert_int_equal(status.strategy, order[i]);
        assert_true(status.bytes_used <= status.budget_bytes);
        assert_int_equal(status.stopped, order[i] == OTFX_REDUCE_STOP);
        assert_counters_add_up(&status);
        assert_well_nested(h->trace);
        check_profiles(h, i);
    }
    otfx_trace_status status = status_of(h->trace);
    for (int s = OTFX_REDUCE_RING; s <= OTFX_REDUCE_STOP; s++) {
        if (status.events_reduced[s] == 0)
            fail_msg("strategy %s never removed anything", otfx_reduction_name((otfx_reduction)s));
    }
    harness_close(h);
}

static int count_records(const otfx_event *event, void *user)
{
    if (event->type == OTFX_EV_REDUCTION && event->u.reduction.strategy == OTFX_REDUCE_STOP)
        ++*(int *)user;
    return 0;
}

/* `stop`: once full, appends return STOPPED, nothing more is stored, one record tells, and switching
 * to another strategy resumes recording. */
static void test_stop_cuts_off(void **state)
{
    (void)state;
    harness *h = harness_open(RANDOM_STREAM_STENCIL, 8, OTFX_REDUCE_STOP, SMALL_BUDGET);
    otfx_event batch[BATCH];
    otfx_status status = OTFX_OK;
    while (status == OTFX_OK) {
        random_stream_next(h->stream, batch, BATCH);
        size_t appended = 0;
        status = otfx_trace_append(h->trace, batch, BATCH, &appended);
        assert_int_equal(appended, BATCH);
        assert_true(event_log_append(&h->input, batch, BATCH));
    }
    assert_int_equal(status, OTFX_ERR_STOPPED);
    otfx_trace_status before = status_of(h->trace);
    assert_true(before.stopped);
    for (int i = 0; i < 20; i++)
        assert_int_equal(feed(h->trace, h->stream, BATCH, &h->input), OTFX_OK); /* feed accepts STOPPED */
    otfx_trace_status after = status_of(h->trace);
    assert_int_equal(after.events_held, before.events_held);
    assert_int_equal(after.events_received, before.events_received + 20 * BATCH);
    assert_true(after.bytes_used <= after.budget_bytes);
    assert_counters_add_up(&after);
    check_profiles(h, 3);
    int records = 0;
    assert_int_equal(otfx_query_events(h->trace, 0, OTFX_TIME_MAX, false, count_records, &records), OTFX_OK);
    assert_int_equal(records, 1);
    assert_int_equal(after.reductions, 1);
    assert_int_equal(otfx_trace_set_strategy(h->trace, OTFX_REDUCE_RING), OTFX_OK);
    assert_int_equal(feed(h->trace, h->stream, 50000, &h->input), OTFX_OK);
    otfx_trace_status resumed = status_of(h->trace);
    assert_false(resumed.stopped);
    assert_true(resumed.events_reduced[OTFX_REDUCE_RING] > 0);
    check_profiles(h, 4);
    assert_well_nested(h->trace);
    harness_close(h);
}

/* `time` keeps per-range statistics of what it thinned, so the timeline still shows role shares
 * there; `ring` merges everything it drops into one range. */
static void test_time_versus_ring(void **state)
{
    (void)state;
    for (int strategy = OTFX_REDUCE_RING; strategy <= OTFX_REDUCE_TIME; strategy++) {
        harness *h = harness_open(RANDOM_STREAM_STENCIL, 21, (otfx_reduction)strategy, SMALL_BUDGET);
        assert_int_equal(feed(h->trace, h->stream, 400000, NULL), OTFX_OK);
        event_log records = {0};
        reduction_records(h->trace, &records);
        if (strategy == OTFX_REDUCE_RING)
            assert_int_equal(records.count, 1);
        else
            assert_true(records.count > 8);
        /* The thinned ranges, oldest first, end where the oldest detail chunk begins. */
        otfx_time reduced_begin = records.events[0].u.reduction.begin, reduced_end = reduced_begin;
        for (size_t i = 0; i < records.count; i++) {
            if (records.events[i].u.reduction.end > reduced_end)
                reduced_end = records.events[i].u.reduction.end;
        }
        enum { BINS = 50 };
        otfx_timeline_bin bins[BINS];
        assert_int_equal(otfx_query_timeline(h->trace, reduced_begin, reduced_end, BINS, bins), OTFX_OK);
        for (int i = 0; i < BINS; i++) {
            assert_true(bins[i].reduced_time > 0);
            otfx_time role_total = 0;
            for (int r = 0; r < OTFX_ROLE_COUNT; r++)
                role_total += bins[i].role_time[r];
            assert_true(role_total > 0 && role_total <= bins[i].reduced_time);
            assert_true(bins[i].dominant_region != OTFX_REF_NONE);
        }
        event_log_free(&records);
        harness_close(h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_ring),      cmocka_unit_test(test_budget_time),
        cmocka_unit_test(test_budget_type),      cmocka_unit_test(test_budget_depth),
        cmocka_unit_test(test_budget_stop),      cmocka_unit_test(test_profiles_exact_after_reduction),
        cmocka_unit_test(test_strategy_switch),  cmocka_unit_test(test_stop_cuts_off),
        cmocka_unit_test(test_time_versus_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

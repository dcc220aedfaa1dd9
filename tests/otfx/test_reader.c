/* test_reader.c — otfx_trace_reader: the same events as otfx_query_events over many windows and array
 * sizes, with and without the context; appends between calls are seen; reductions and ring evictions
 * between calls give no event twice, keep the order and lose nothing still held. */
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

typedef struct fixture {
    otfx_defs *defs;
    random_stream *stream;
    otfx_trace *trace;
    event_log input;
} fixture;

static fixture *fixture_open(random_stream_kind kind, uint64_t seed, otfx_reduction strategy, size_t budget,
                             bool records)
{
    fixture *f = calloc(1, sizeof *f);
    f->defs = otfx_defs_create();
    random_stream_config config = random_stream_config_default(kind, seed);
    config.reduction_records = records;
    f->stream = random_stream_create(f->defs, &config);
    otfx_trace_config trace_config = otfx_trace_config_default(budget);
    trace_config.chunk_bytes = 2048;
    trace_config.strategy = strategy;
    assert_int_equal(otfx_trace_create(&trace_config, f->defs, random_stream_location(f->stream), &f->trace),
                     OTFX_OK);
    return f;
}

static void fixture_close(fixture *f)
{
    otfx_trace_destroy(f->trace);
    random_stream_destroy(f->stream);
    otfx_defs_destroy(f->defs);
    event_log_free(&f->input);
    free(f);
}

/* Everything a reader hands out over [from, to), `capacity` events per call. */
static void read_all(otfx_trace *trace, otfx_time from, otfx_time to, bool context, size_t capacity,
                     event_log *log)
{
    otfx_trace_reader *reader;
    assert_int_equal(otfx_trace_reader_open(trace, from, to, context, &reader), OTFX_OK);
    otfx_event *events = malloc(sizeof *events * capacity);
    for (;;) {
        size_t count = SIZE_MAX;
        assert_int_equal(otfx_trace_reader_next(reader, events, capacity, &count), OTFX_OK);
        assert_true(count <= capacity);
        assert_true(event_log_append(log, events, count));
        if (count < capacity)
            break;
    }
    /* caught up: a further call finds nothing new */
    size_t count = SIZE_MAX;
    assert_int_equal(otfx_trace_reader_next(reader, events, capacity, &count), OTFX_OK);
    assert_int_equal(count, 0);
    free(events);
    otfx_trace_reader_close(reader);
}

static void assert_logs_equal(const event_log *expected, const event_log *got, const char *what)
{
    if (expected->count != got->count)
        fail_msg("%s: %zu events expected, %zu read", what, expected->count, got->count);
    for (size_t i = 0; i < expected->count; i++)
        if (!events_equal(&expected->events[i], &got->events[i]))
            fail_msg("%s: event %zu differs (type %d at %llu, read type %d at %llu)", what, i,
                     (int)expected->events[i].type, (unsigned long long)expected->events[i].time,
                     (int)got->events[i].type, (unsigned long long)got->events[i].time);
}

static void check_windows(otfx_trace *trace, uint64_t seed)
{
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    const otfx_time first = status.first_time, last = status.last_time;
    const size_t capacities[] = {1, 2, 7, 64, 1000, 1u << 20};
    uint64_t random = seed;
    for (int w = 0; w < 12; w++) {
        otfx_time from = 0, to = OTFX_TIME_MAX;
        if (w > 0) {
            random = random * 6364136223846793005ull + 1442695040888963407ull;
            from = first + (random >> 11) % (last - first + 1);
            random = random * 6364136223846793005ull + 1442695040888963407ull;
            to = from + (random >> 11) % (last - first + 2);
        }
        for (int context = 0; context < 2; context++) {
            event_log expected = {0};
            assert_int_equal(collect_events(trace, from, to, context, &expected), OTFX_OK);
            for (size_t c = 0; c < sizeof capacities / sizeof *capacities; c++) {
                /* small arrays on a few windows only: they take long on many events */
                if (capacities[c] < 64 && w % 4 != 0)
                    continue;
                event_log got = {0};
                read_all(trace, from, to, context, capacities[c], &got);
                char what[128];
                snprintf(what, sizeof what, "window %d [%llu, %llu) context %d capacity %zu", w,
                         (unsigned long long)from, (unsigned long long)to, context, capacities[c]);
                assert_logs_equal(&expected, &got, what);
                event_log_free(&got);
            }
            event_log_free(&expected);
        }
    }
}

/* The same events as otfx_query_events: everything held, reduced ranges in the middle (time), thinned
 * chunks (type, depth), the oldest detail gone (ring). */
static void test_equals_query(void **state)
{
    (void)state;
    const otfx_reduction strategies[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TIME, OTFX_REDUCE_TYPE,
                                         OTFX_REDUCE_DEPTH};
    for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++) {
        fixture *f = fixture_open(RANDOM_STREAM_MIXED, 100 + s, strategies[s], 96 * 1024, true);
        assert_int_equal(feed(f->trace, f->stream, 40000, NULL), OTFX_OK);
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(f->trace, &status), OTFX_OK);
        assert_true(status.reductions > 0);
        check_windows(f->trace, 7 + s);
        fixture_close(f);
    }
    /* nothing reduced, a different shape */
    fixture *f = fixture_open(RANDOM_STREAM_USER_HEAVY, 3, OTFX_REDUCE_RING, 8 << 20, true);
    assert_int_equal(feed(f->trace, f->stream, 40000, NULL), OTFX_OK);
    check_windows(f->trace, 11);
    fixture_close(f);
}

/* A window starting inside open regions begins with their ENTERs, as the query's. */
static void test_context_enters_first(void **state)
{
    (void)state;
    fixture *f = fixture_open(RANDOM_STREAM_USER_HEAVY, 5, OTFX_REDUCE_RING, 8 << 20, false);
    assert_int_equal(feed(f->trace, f->stream, 20000, &f->input), OTFX_OK);
    const otfx_time from = f->input.events[10000].time + 1;
    event_log got = {0};
    read_all(f->trace, from, OTFX_TIME_MAX, true, 5, &got);
    size_t enters = 0;
    while (enters < got.count && got.events[enters].time < from) {
        assert_int_equal(got.events[enters].type, OTFX_EV_ENTER);
        enters++;
    }
    assert_true(enters > 0);
    assert_true(enters < got.count);
    assert_int_equal(first_nesting_error(&got, enters), SIZE_MAX);
    event_log expected = {0};
    assert_int_equal(collect_events(f->trace, from, OTFX_TIME_MAX, true, &expected), OTFX_OK);
    assert_logs_equal(&expected, &got, "context");
    event_log_free(&expected);
    event_log_free(&got);
    fixture_close(f);
}

/* Reading while the trace is appended to: every event appended is read, in order, once. */
static void test_appends_between_calls(void **state)
{
    (void)state;
    fixture *f = fixture_open(RANDOM_STREAM_MIXED, 21, OTFX_REDUCE_RING, 8 << 20, false);
    assert_int_equal(feed(f->trace, f->stream, 500, NULL), OTFX_OK);
    otfx_trace_reader *reader;
    assert_int_equal(otfx_trace_reader_open(f->trace, 0, OTFX_TIME_MAX, true, &reader), OTFX_OK);
    otfx_event events[300];
    event_log got = {0};
    for (int round = 0; round < 400; round++) {
        size_t count;
        assert_int_equal(otfx_trace_reader_next(reader, events, 1 + round % 300, &count), OTFX_OK);
        assert_true(event_log_append(&got, events, count));
        assert_int_equal(feed(f->trace, f->stream, 1 + (round * 37) % 250, NULL), OTFX_OK);
    }
    size_t count;
    do {
        assert_int_equal(otfx_trace_reader_next(reader, events, 300, &count), OTFX_OK);
        assert_true(event_log_append(&got, events, count));
    } while (count > 0);
    assert_false(otfx_trace_reader_finished(reader));
    otfx_trace_reader_close(reader);
    event_log expected = {0};
    assert_int_equal(collect_events(f->trace, 0, OTFX_TIME_MAX, true, &expected), OTFX_OK);
    assert_logs_equal(&expected, &got, "appends");
    event_log_free(&expected);
    event_log_free(&got);
    fixture_close(f);
}

/* Reading slowly while appends make the trace reduce. What was read is a subsequence of what was
 * appended (no event twice, in order), and every event still held at the end that is later than what
 * had been read when the trace last changed was read. */
static void read_while_reducing(otfx_reduction strategy, uint64_t seed)
{
    fixture *f = fixture_open(RANDOM_STREAM_MIXED, seed, strategy, 64 * 1024, false);
    assert_int_equal(feed(f->trace, f->stream, 2000, &f->input), OTFX_OK);
    otfx_trace_reader *reader;
    assert_int_equal(otfx_trace_reader_open(f->trace, 0, OTFX_TIME_MAX, false, &reader), OTFX_OK);
    otfx_event events[97];
    event_log got = {0};
    otfx_time read_at_change = 0;
    uint64_t reductions = 0;
    for (int round = 0; round < 3000; round++) {
        size_t count;
        assert_int_equal(otfx_trace_reader_next(reader, events, 1 + round % 97, &count), OTFX_OK);
        for (size_t i = 0; i < count; i++)
            if (events[i].type != OTFX_EV_REDUCTION)
                assert_true(event_log_append(&got, &events[i], 1));
        assert_int_equal(feed(f->trace, f->stream, 80, &f->input), OTFX_OK);
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(f->trace, &status), OTFX_OK);
        if (status.reductions != reductions) {
            reductions = status.reductions;
            read_at_change = got.count ? got.events[got.count - 1].time : 0;
        }
    }
    assert_true(reductions > 0);
    size_t count;
    do {
        assert_int_equal(otfx_trace_reader_next(reader, events, 97, &count), OTFX_OK);
        for (size_t i = 0; i < count; i++)
            if (events[i].type != OTFX_EV_REDUCTION)
                assert_true(event_log_append(&got, &events[i], 1));
    } while (count > 0);
    otfx_trace_reader_close(reader);
    /* a subsequence of the input */
    size_t at = 0;
    for (size_t i = 0; i < got.count; i++) {
        while (at < f->input.count && !events_equal(&f->input.events[at], &got.events[i]))
            at++;
        if (at == f->input.count)
            fail_msg("event %zu read (type %d at %llu) is out of order or repeated", i,
                     (int)got.events[i].type, (unsigned long long)got.events[i].time);
        at++;
    }
    /* nothing held later than the last change's position was skipped */
    event_log held = {0};
    assert_int_equal(collect_events(f->trace, read_at_change + 1, OTFX_TIME_MAX, false, &held), OTFX_OK);
    size_t first = 0;
    while (first < got.count && got.events[first].time <= read_at_change)
        first++;
    size_t j = first;
    size_t compared = 0;
    for (size_t i = 0; i < held.count; i++) {
        if (held.events[i].type == OTFX_EV_REDUCTION)
            continue;
        while (j < got.count && !events_equal(&got.events[j], &held.events[i]))
            j++;
        if (j == got.count)
            fail_msg("held event %zu (type %d at %llu) was not read", i, (int)held.events[i].type,
                     (unsigned long long)held.events[i].time);
        j++;
        compared++;
    }
    assert_true(compared > 0);
    event_log_free(&held);
    event_log_free(&got);
    fixture_close(f);
}

static void test_ring_evicts_between_calls(void **state)
{
    (void)state;
    read_while_reducing(OTFX_REDUCE_RING, 31);
}

static void test_time_reduces_between_calls(void **state)
{
    (void)state;
    read_while_reducing(OTFX_REDUCE_TIME, 32);
}

static void test_type_thins_between_calls(void **state)
{
    (void)state;
    read_while_reducing(OTFX_REDUCE_TYPE, 33);
}

/* A window's end is final; an empty window gives nothing. */
static void test_window_end(void **state)
{
    (void)state;
    fixture *f = fixture_open(RANDOM_STREAM_STENCIL, 41, OTFX_REDUCE_RING, 8 << 20, false);
    assert_int_equal(feed(f->trace, f->stream, 5000, &f->input), OTFX_OK);
    const otfx_time to = f->input.events[2500].time;
    otfx_trace_reader *reader;
    assert_int_equal(otfx_trace_reader_open(f->trace, 0, to, false, &reader), OTFX_OK);
    otfx_event events[64];
    size_t count, total = 0;
    do {
        assert_int_equal(otfx_trace_reader_next(reader, events, 64, &count), OTFX_OK);
        for (size_t i = 0; i < count; i++)
            assert_true(events[i].time < to);
        total += count;
    } while (count == 64);
    assert_true(otfx_trace_reader_finished(reader));
    assert_int_equal(feed(f->trace, f->stream, 1000, NULL), OTFX_OK);
    assert_int_equal(otfx_trace_reader_next(reader, events, 64, &count), OTFX_OK);
    assert_int_equal(count, 0);
    otfx_trace_reader_close(reader);
    event_log expected = {0};
    assert_int_equal(collect_events(f->trace, 0, to, false, &expected), OTFX_OK);
    assert_int_equal(total, expected.count);
    event_log_free(&expected);
    assert_int_equal(otfx_trace_reader_open(f->trace, to, to, true, &reader), OTFX_OK);
    assert_true(otfx_trace_reader_finished(reader));
    assert_int_equal(otfx_trace_reader_next(reader, events, 64, &count), OTFX_OK);
    assert_int_equal(count, 0);
    otfx_trace_reader_close(reader);
    assert_int_equal(otfx_trace_reader_open(NULL, 0, 1, false, &reader), OTFX_ERR_INVALID);
    fixture_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_query),
        cmocka_unit_test(test_context_enters_first),
        cmocka_unit_test(test_appends_between_calls),
        cmocka_unit_test(test_ring_evicts_between_calls),
        cmocka_unit_test(test_time_reduces_between_calls),
        cmocka_unit_test(test_type_thins_between_calls),
        cmocka_unit_test(test_window_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

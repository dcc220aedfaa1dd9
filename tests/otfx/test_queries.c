/* test_queries.c — timeline bins against a timeline computed from the events, messages per peer,
 * profile objects, edge cases of windows, the definition store. */
#define _POSIX_C_SOURCE 200809L /* the private headers use POSIX rwlocks */

#include <pthread.h>
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

typedef struct setup {
    otfx_defs *defs;
    random_stream *stream;
    otfx_trace *trace;
    event_log input;
} setup;

static setup *setup_open(random_stream_kind kind, size_t budget, size_t events)
{
    setup *s = calloc(1, sizeof *s);
    s->defs = otfx_defs_create();
    random_stream_config config = random_stream_config_default(kind, 4242);
    s->stream = random_stream_create(s->defs, &config);
    otfx_trace_config trace_config = otfx_trace_config_default(budget);
    trace_config.chunk_bytes = 4096;
    assert_int_equal(otfx_trace_create(&trace_config, s->defs, random_stream_location(s->stream), &s->trace),
                     OTFX_OK);
    assert_int_equal(feed(s->trace, s->stream, events, &s->input), OTFX_OK);
    return s;
}

static void setup_close(setup *s)
{
    otfx_trace_destroy(s->trace);
    random_stream_destroy(s->stream);
    otfx_defs_destroy(s->defs);
    event_log_free(&s->input);
    free(s);
}

/* The timeline straight from the events: bins as the API defines them. */
static void reference_timeline(const otfx_defs *defs, const event_log *log, otfx_time from, otfx_time to,
                               uint32_t count, otfx_timeline_bin *bins)
{
    uint32_t regions = otfx_defs_count_regions(defs);
    otfx_time *per_region = calloc((size_t)count * regions, sizeof *per_region);
    otfx_ref *stack = malloc(sizeof *stack * OTFX_MAX_CALL_DEPTH);
    memset(bins, 0, sizeof *bins * count);
    size_t depth = 0;
    for (size_t i = 0; i < log->count; i++) {
        const otfx_event *e = &log->events[i];
        if (e->type == OTFX_EV_ENTER)
            stack[depth++] = e->u.region.region;
        else if (e->type == OTFX_EV_LEAVE)
            depth--;
        if (!depth || i + 1 == log->count)
            continue;
        otfx_region_def region;
        assert_int_equal(otfx_defs_get_region(defs, stack[depth - 1], &region), OTFX_OK);
        /* Split [t, next) at bin edges: bin k starts at from + floor(k * width / count). */
        for (uint32_t k = 0; k < count; k++) {
            otfx_time bin_begin = from + (otfx_time)((unsigned __int128)(to - from) * k / count);
            otfx_time bin_end =
                k + 1 < count ? from + (otfx_time)((unsigned __int128)(to - from) * (k + 1) / count) : to;
            otfx_time low = e->time > bin_begin ? e->time : bin_begin;
            otfx_time high = log->events[i + 1].time < bin_end ? log->events[i + 1].time : bin_end;
            if (high > low) {
                bins[k].role_time[region.role] += high - low;
                per_region[(size_t)k * regions + stack[depth - 1]] += high - low;
            }
        }
    }
    for (uint32_t k = 0; k < count; k++) {
        otfx_time best = 0;
        bins[k].dominant_region = OTFX_REF_NONE;
        for (uint32_t r = 0; r < regions; r++) {
            if (per_region[(size_t)k * regions + r] > best) {
                best = per_region[(size_t)k * regions + r];
                bins[k].dominant_region = r;
            }
        }
    }
    free(per_region);
    free(stack);
}

static void test_timeline_matches_events(void **state)
{
    (void)state;
    for (int kind = RANDOM_STREAM_MIXED; kind <= RANDOM_STREAM_USER_HEAVY; kind++) {
        setup *s = setup_open((random_stream_kind)kind, 8u << 20, 60000);
        otfx_time first = s->input.events[0].time, last = s->input.events[s->input.count - 1].time;
        const uint32_t counts[] = {1, 7, 100, 1000};
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
            for (int window = 0; window < 3; window++) {
                otfx_time from = window == 0 ? 0 : first + (last - first) / (otfx_time)(3 + window);
                otfx_time to = window == 2 ? from + (last - first) / 5 : last + 1000;
                if (window == 0)
                    from = first - 500;
                uint32_t count = counts[c];
                otfx_timeline_bin *bins = malloc(sizeof *bins * count),
                                  *expected = malloc(sizeof *bins * count);
                assert_int_equal(otfx_query_timeline(s->trace, from, to, count, bins), OTFX_OK);
                reference_timeline(s->defs, &s->input, from, to, count, expected);
                for (uint32_t k = 0; k < count; k++) {
                    for (int r = 0; r < OTFX_ROLE_COUNT; r++) {
                        if (bins[k].role_time[r] != expected[k].role_time[r])
                            fail_msg("kind %d bins %u window %d: bin %u role %d: %llu, expected %llu", kind,
                                     count, window, k, r, (unsigned long long)bins[k].role_time[r],
                                     (unsigned long long)expected[k].role_time[r]);
                    }
                    assert_int_equal(bins[k].reduced_time, 0);
                    assert_int_equal(bins[k].dominant_region, expected[k].dominant_region);
                }
                free(bins);
                free(expected);
            }
        }
        setup_close(s);
    }
}

/* With reductions, bins still account for every nanosecond that had a region open. */
static void test_timeline_after_reduction(void **state)
{
    (void)state;
    setup *s = setup_open(RANDOM_STREAM_STENCIL, 64 * 1024, 300000);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(s->trace, &status), OTFX_OK);
    assert_true(status.reductions > 0);
    enum { BINS = 64 };
    otfx_timeline_bin bins[BINS];
    assert_int_equal(otfx_query_timeline(s->trace, status.first_time, status.last_time, BINS, bins), OTFX_OK);
    otfx_time busy = 0, reduced = 0;
    for (int k = 0; k < BINS; k++) {
        for (int r = 0; r < OTFX_ROLE_COUNT; r++)
            busy += bins[k].role_time[r];
        reduced += bins[k].reduced_time;
    }
    /* The stencil always has main open: busy time is the whole range, up to pro-rating's rounding. */
    otfx_time span = status.last_time - status.first_time;
    assert_true(busy <= span && busy + 64 * 64 >= span);
    assert_true(reduced > 0 && reduced < span);
    setup_close(s);
}

static void test_messages_per_peer(void **state)
{
    (void)state;
    setup *s = setup_open(RANDOM_STREAM_MIXED, 8u << 20, 80000);
    reference_stats expected;
    assert_true(reference_compute(s->input.events, s->input.count, 0, OTFX_TIME_MAX, &expected));
    assert_true(expected.peer_count > 3);
    otfx_peer_stats peers[64];
    size_t count = 2;
    assert_int_equal(otfx_query_messages(s->trace, 0, OTFX_TIME_MAX, peers, &count), OTFX_ERR_INVALID);
    assert_int_equal(count, expected.peer_count);
    assert_memory_equal(peers, expected.peers, 2 * sizeof *peers);
    count = 64;
    assert_int_equal(otfx_query_messages(s->trace, 0, OTFX_TIME_MAX, peers, &count), OTFX_OK);
    assert_int_equal(count, expected.peer_count);
    assert_memory_equal(peers, expected.peers, count * sizeof *peers);
    count = 64;
    assert_int_equal(otfx_query_messages(s->trace, 10, 5, peers, &count), OTFX_OK);
    assert_int_equal(count, 0);
    reference_free(&expected);
    setup_close(s);
}

static void test_profile_object(void **state)
{
    (void)state;
    setup *s = setup_open(RANDOM_STREAM_USER_HEAVY, 8u << 20, 50000);
    otfx_profile *a = otfx_profile_create(), *b = otfx_profile_create();
    otfx_time first = s->input.events[0].time, last = s->input.events[s->input.count - 1].time;
    otfx_time middle = first + (last - first) / 2;
    assert_int_equal(otfx_query_profile(s->trace, 0, middle, a), OTFX_OK);
    assert_int_equal(otfx_query_profile(s->trace, middle, OTFX_TIME_MAX, b), OTFX_OK);
    assert_int_equal(otfx_profile_merge(a, b), OTFX_OK);
    /* Two halves add up to the whole, since everything is additive. */
    otfx_profile_clear(b);
    assert_int_equal(otfx_query_profile(s->trace, 0, OTFX_TIME_MAX, b), OTFX_OK);
    assert_int_equal(otfx_profile_size(a), otfx_profile_size(b));
    for (size_t i = 0; i < otfx_profile_size(b); i++) {
        const otfx_profile_entry *whole = &otfx_profile_entries(b)[i];
        const otfx_profile_entry *halves = otfx_profile_find(a, whole->region);
        assert_non_null(halves);
        assert_memory_equal(whole, halves, sizeof *whole);
        if (i > 0)
            assert_true(otfx_profile_entries(b)[i - 1].region < whole->region);
    }
    assert_null(otfx_profile_find(a, 123456));
    otfx_profile_clear(a);
    assert_int_equal(otfx_profile_size(a), 0);
    assert_false(otfx_profile_approximate(a));
    /* Profiles of several traces accumulate. */
    assert_int_equal(otfx_query_profile(s->trace, 0, OTFX_TIME_MAX, a), OTFX_OK);
    assert_int_equal(otfx_query_profile(s->trace, 0, OTFX_TIME_MAX, a), OTFX_OK);
    assert_int_equal(otfx_profile_entries(a)[0].visits, 2 * otfx_profile_entries(b)[0].visits);
    /* Empty windows and bad arguments. */
    otfx_profile_clear(a);
    assert_int_equal(otfx_query_profile(s->trace, 100, 100, a), OTFX_OK);
    assert_int_equal(otfx_profile_size(a), 0);
    otfx_timeline_bin bin;
    assert_int_equal(otfx_query_timeline(s->trace, 100, 100, 1, &bin), OTFX_ERR_INVALID);
    assert_int_equal(otfx_query_timeline(s->trace, 0, 100, 0, &bin), OTFX_ERR_INVALID);
    assert_int_equal(otfx_query_profile(NULL, 0, 1, a), OTFX_ERR_INVALID);
    otfx_profile_destroy(a);
    otfx_profile_destroy(b);
    setup_close(s);
}

static void test_empty_trace(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    otfx_ref location;
    assert_int_equal(otfx_defs_location(defs, 3, 1, &location), OTFX_OK);
    otfx_trace_config config = otfx_trace_config_default(1u << 20);
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
    event_log log = {0};
    assert_int_equal(collect_events(trace, 0, OTFX_TIME_MAX, true, &log), OTFX_OK);
    assert_int_equal(log.count, 0);
    otfx_profile *profile = otfx_profile_create();
    assert_int_equal(otfx_query_profile(trace, 0, OTFX_TIME_MAX, profile), OTFX_OK);
    assert_int_equal(otfx_profile_size(profile), 0);
    otfx_timeline_bin bins[4];
    assert_int_equal(otfx_query_timeline(trace, 0, 1000, 4, bins), OTFX_OK);
    assert_int_equal(bins[0].dominant_region, OTFX_REF_NONE);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    assert_true(status.first_time > status.last_time);
    assert_int_equal(status.oldest_detail, OTFX_TIME_MAX);
    assert_int_equal(status.budget_bytes, 1u << 20);
    otfx_profile_destroy(profile);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

static void test_definitions(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    otfx_ref a, b, c;
    assert_int_equal(otfx_defs_string(defs, "hello", &a), OTFX_OK);
    assert_int_equal(otfx_defs_string(defs, "hello", &b), OTFX_OK);
    assert_int_equal(a, b);
    assert_int_equal(otfx_defs_region(defs, "solve", OTFX_ROLE_USER_FUNCTION, &a), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "solve", OTFX_ROLE_USER_FUNCTION, &b), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "solve", OTFX_ROLE_PHASE, &c), OTFX_OK);
    assert_int_equal(a, b);
    assert_int_not_equal(a, c);
    assert_int_equal(otfx_defs_region(defs, "bad", OTFX_ROLE_COUNT, &c), OTFX_ERR_INVALID);
    otfx_region_def region;
    assert_int_equal(otfx_defs_get_region(defs, a, &region), OTFX_OK);
    assert_string_equal(region.name, "solve");
    assert_int_equal(otfx_defs_get_region(defs, 999, &region), OTFX_ERR_INVALID);
    const uint32_t members[] = {4, 2, 0};
    assert_int_equal(otfx_defs_comm(defs, "evens", members, 3, &a), OTFX_OK);
    assert_int_equal(otfx_defs_comm(defs, "evens", members, 3, &b), OTFX_OK);
    assert_int_equal(otfx_defs_comm(defs, "evens", members, 2, &c), OTFX_OK);
    assert_int_equal(a, b);
    assert_int_not_equal(a, c);
    otfx_comm_def comm;
    assert_int_equal(otfx_defs_get_comm(defs, a, &comm), OTFX_OK);
    assert_int_equal(comm.size, 3);
    assert_int_equal(comm.world_ranks[0], 4);
    assert_string_equal(comm.name, "evens");
    assert_int_equal(otfx_defs_metric(defs, "cycles", "1", OTFX_METRIC_UINT64, &a), OTFX_OK);
    otfx_metric_def metric;
    assert_int_equal(otfx_defs_get_metric(defs, a, &metric), OTFX_OK);
    assert_string_equal(metric.unit, "1");
    assert_int_equal(otfx_defs_location(defs, 7, 2, &a), OTFX_OK);
    otfx_location_def location;
    assert_int_equal(otfx_defs_get_location(defs, a, &location), OTFX_OK);
    assert_int_equal(location.rank, 7);
    assert_int_equal(location.thread, 2);
    assert_int_equal(otfx_defs_count_regions(defs), 2);
    assert_int_equal(otfx_defs_count_comms(defs), 2);
    assert_int_equal(otfx_defs_count_metrics(defs), 1);
    assert_int_equal(otfx_defs_count_locations(defs), 1);
    const char *text;
    assert_int_equal(otfx_defs_get_string(defs, 0, &text), OTFX_OK);
    assert_string_equal(text, "hello");
    /* Many definitions: pointers handed out earlier stay valid. */
    const char *first_name = region.name;
    for (int i = 0; i < 5000; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", i);
        assert_int_equal(otfx_defs_region(defs, name, OTFX_ROLE_USER_FUNCTION, &c), OTFX_OK);
    }
    assert_string_equal(first_name, "solve");
    assert_int_equal(otfx_defs_count_regions(defs), 5002);
    assert_true(otfx_defs_bytes(defs) > 5000 * 8);
    otfx_defs_destroy(defs);
}

typedef struct definer {
    otfx_defs *defs;
    otfx_ref refs[2000];
} definer;

static void *define_many(void *arg)
{
    definer *d = arg;
    for (int i = 0; i < 2000; i++) {
        char name[32];
        snprintf(name, sizeof name, "shared_%d", i);
        if (otfx_defs_region(d->defs, name, OTFX_ROLE_MPI_OTHER, &d->refs[i]) != OTFX_OK)
            return NULL;
        otfx_region_def region;
        if (otfx_defs_get_region(d->defs, d->refs[i], &region) != OTFX_OK || strcmp(region.name, name) != 0)
            return NULL;
    }
    return d;
}

/* Threads defining the same things concurrently get the same references. */
static void test_definitions_concurrently(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    definer definers[3];
    pthread_t threads[3];
    for (int t = 0; t < 3; t++) {
        definers[t].defs = defs;
        assert_int_equal(pthread_create(&threads[t], NULL, define_many, &definers[t]), 0);
    }
    for (int t = 0; t < 3; t++) {
        void *result;
        assert_int_equal(pthread_join(threads[t], &result), 0);
        assert_ptr_equal(result, &definers[t]);
    }
    assert_memory_equal(definers[0].refs, definers[1].refs, sizeof definers[0].refs);
    assert_memory_equal(definers[0].refs, definers[2].refs, sizeof definers[0].refs);
    assert_int_equal(otfx_defs_count_regions(defs), 2000);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeline_matches_events),
        cmocka_unit_test(test_timeline_after_reduction),
        cmocka_unit_test(test_messages_per_peer),
        cmocka_unit_test(test_profile_object),
        cmocka_unit_test(test_empty_trace),
        cmocka_unit_test(test_definitions),
        cmocka_unit_test(test_definitions_concurrently),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

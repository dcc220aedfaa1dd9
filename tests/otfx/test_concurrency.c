/* test_concurrency.c — one thread appends (with reductions all along) while others query events,
 * profiles, timelines, messages and status; answers stay consistent. Run it in the sanitizer build
 * too. */
#define _POSIX_C_SOURCE 200809L /* the private headers use POSIX rwlocks */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_helpers.h"
#include "trace_internal.h"

typedef struct shared {
    otfx_trace *trace;
    random_stream *stream;
    atomic_bool writing;
    atomic_int failures;
    atomic_long queries;
} shared;

static void *writer(void *arg)
{
    shared *s = arg;
    const otfx_reduction strategies[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TYPE, OTFX_REDUCE_TIME,
                                         OTFX_REDUCE_DEPTH};
    for (int round = 0; round < 40; round++) {
        if (round % 10 == 0 && otfx_trace_set_strategy(s->trace, strategies[round / 10]) != OTFX_OK)
            atomic_fetch_add(&s->failures, 1);
        if (feed(s->trace, s->stream, 10000, NULL) != OTFX_OK)
            atomic_fetch_add(&s->failures, 1);
    }
    atomic_store(&s->writing, false);
    return NULL;
}

static void *reader(void *arg)
{
    shared *s = arg;
    otfx_profile *profile = otfx_profile_create();
    event_log log = {0};
    unsigned round = 0;
    while (atomic_load(&s->writing)) {
        otfx_trace_status status;
        if (otfx_trace_status_get(s->trace, &status) != OTFX_OK || status.bytes_used > status.budget_bytes) {
            atomic_fetch_add(&s->failures, 1);
            break;
        }
        otfx_time from = status.first_time + (status.last_time - status.first_time) / 4 * (round % 4);
        log.count = 0;
        bool ok = collect_events(s->trace, from, OTFX_TIME_MAX, true, &log) == OTFX_OK;
        /* The window's own events stay nested after the context ENTERs (all before `from`). */
        size_t context = 0;
        while (ok && context < log.count && log.events[context].type == OTFX_EV_ENTER &&
               log.events[context].time < from)
            context++;
        ok = ok && first_nesting_error(&log, context) == SIZE_MAX;
        otfx_profile_clear(profile);
        ok = ok && otfx_query_profile(s->trace, 0, OTFX_TIME_MAX, profile) == OTFX_OK &&
             !otfx_profile_approximate(profile);
        otfx_timeline_bin bins[32];
        ok =
            ok && otfx_query_timeline(s->trace, status.first_time, status.last_time + 1, 32, bins) == OTFX_OK;
        otfx_peer_stats peers[64];
        size_t peer_count = 64;
        ok = ok && otfx_query_messages(s->trace, from, OTFX_TIME_MAX, peers, &peer_count) == OTFX_OK;
        if (!ok) {
            atomic_fetch_add(&s->failures, 1);
            break;
        }
        atomic_fetch_add(&s->queries, 1);
        round++;
    }
    event_log_free(&log);
    otfx_profile_destroy(profile);
    return NULL;
}

static void test_queries_while_appending(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    random_stream_config config = random_stream_config_default(RANDOM_STREAM_MIXED, 12);
    shared s = {.stream = random_stream_create(defs, &config)};
    atomic_init(&s.writing, true);
    atomic_init(&s.failures, 0);
    atomic_init(&s.queries, 0);
    otfx_trace_config trace_config = otfx_trace_config_default(128 * 1024);
    trace_config.chunk_bytes = 4096;
    assert_int_equal(otfx_trace_create(&trace_config, defs, random_stream_location(s.stream), &s.trace),
                     OTFX_OK);
    /* Something to read from the start. */
    assert_int_equal(feed(s.trace, s.stream, 5000, NULL), OTFX_OK);
    pthread_t threads[3];
    assert_int_equal(pthread_create(&threads[0], NULL, writer, &s), 0);
    assert_int_equal(pthread_create(&threads[1], NULL, reader, &s), 0);
    assert_int_equal(pthread_create(&threads[2], NULL, reader, &s), 0);
    for (int t = 0; t < 3; t++)
        assert_int_equal(pthread_join(threads[t], NULL), 0);
    assert_int_equal(atomic_load(&s.failures), 0);
    assert_true(atomic_load(&s.queries) > 0);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(s.trace, &status), OTFX_OK);
    assert_int_equal(status.events_received, 405000);
    assert_true(status.reductions > 0);
    otfx_trace_destroy(s.trace);
    random_stream_destroy(s.stream);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queries_while_appending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_append_query.c — appending and reading back: lossless round trip, windows with context,
 * validation of invalid input, status counters, reset. */
#define _POSIX_C_SOURCE 200809L /* the private headers use POSIX rwlocks */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_helpers.h"
#include "trace_internal.h"

typedef struct fixture {
    otfx_defs *defs;
    random_stream *stream;
    otfx_trace *trace;
    event_log input;
} fixture;

static fixture *fixture_open(random_stream_kind kind, uint64_t seed, size_t budget, otfx_reduction strategy)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->defs = otfx_defs_create();
    assert_non_null(f->defs);
    random_stream_config config = random_stream_config_default(kind, seed);
    f->stream = random_stream_create(f->defs, &config);
    assert_non_null(f->stream);
    otfx_trace_config trace_config = otfx_trace_config_default(budget);
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

static void assert_logs_equal(const event_log *expected, size_t expected_from, const event_log *actual,
                              size_t actual_from, size_t count)
{
    assert_true(expected->count >= expected_from + count);
    assert_int_equal(actual->count, actual_from + count);
    for (size_t i = 0; i < count; i++) {
        if (!events_equal(&expected->events[expected_from + i], &actual->events[actual_from + i]))
            fail_msg("event %zu differs: type %d time %llu vs type %d time %llu", i,
                     expected->events[expected_from + i].type,
                     (unsigned long long)expected->events[expected_from + i].time,
                     actual->events[actual_from + i].type,
                     (unsigned long long)actual->events[actual_from + i].time);
    }
}

/* Every event comes back exactly, with LEAVE regions filled in, across many sealed chunks. */
static void test_lossless_round_trip(void **state)
{
    (void)state;
    for (int kind = RANDOM_STREAM_MIXED; kind <= RANDOM_STREAM_USER_HEAVY; kind++) {
        fixture *f = fixture_open((random_stream_kind)kind, 7 + (uint64_t)kind, 64u << 20, OTFX_REDUCE_RING);
        assert_int_equal(feed(f->trace, f->stream, 300000, &f->input), OTFX_OK);
        event_log output = {0};
        assert_int_equal(collect_events(f->trace, 0, OTFX_TIME_MAX, false, &output), OTFX_OK);
        assert_logs_equal(&f->input, 0, &output, 0, f->input.count);
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(f->trace, &status), OTFX_OK);
        assert_int_equal(status.events_received, f->input.count);
        assert_int_equal(status.events_held, f->input.count);
        assert_true(status.chunks > 10);
        assert_int_equal(status.reductions, 0);
        assert_int_equal(status.first_time, f->input.events[0].time);
        assert_int_equal(status.last_time, f->input.events[f->input.count - 1].time);
        assert_int_equal(status.oldest_detail, f->input.events[0].time);
        assert_true(status.bytes_used <= status.budget_bytes);
        /* The events after the last seal wait, encoded, in the open chunk. */
        assert_true(status.bytes_open > 0 && status.bytes_open <= 32u << 10);
        event_log_free(&output);
        fixture_close(f);
    }
}

/* A window returns exactly the input events inside it, preceded (with context) by ENTERs of the
 * regions open at its start. */
static void test_windows_with_context(void **state)
{
    (void)state;
    fixture *f = fixture_open(RANDOM_STREAM_MIXED, 11, 64u << 20, OTFX_REDUCE_RING);
    assert_int_equal(feed(f->trace, f->stream, 200000, &f->input), OTFX_OK);
    otfx_time first = f->input.events[0].time, last = f->input.events[f->input.count - 1].time;
    for (int round = 0; round < 40; round++) {
        otfx_time from = first + (last - first) / 40 * (otfx_time)round + (otfx_time)round * 7;
        otfx_time to = from + (last - first) / (otfx_time)(2 + round % 5);
        size_t begin = 0, end;
        while (begin < f->input.count && f->input.events[begin].time < from)
            begin++;
        for (end = begin; end < f->input.count && f->input.events[end].time < to;)
            end++;
        /* The stack before event `begin`. */
        otfx_event open[OTFX_MAX_CALL_DEPTH];
        size_t depth = 0;
        for (size_t i = 0; i < begin; i++) {
            if (f->input.events[i].type == OTFX_EV_ENTER)
                open[depth++] = f->input.events[i];
            else if (f->input.events[i].type == OTFX_EV_LEAVE)
                depth--;
        }
        event_log output = {0};
        assert_int_equal(collect_events(f->trace, from, to, true, &output), OTFX_OK);
        assert_int_equal(output.count, depth + (end - begin));
        for (size_t i = 0; i < depth; i++)
            assert_true(events_equal(&open[i], &output.events[i]));
        assert_logs_equal(&f->input, begin, &output, depth, end - begin);
        assert_int_equal(first_nesting_error(&output, depth), SIZE_MAX);
        event_log_free(&output);
    }
    fixture_close(f);
}

static void test_invalid_events_rejected(void **state)
{
    (void)state;
    fixture *f = fixture_open(RANDOM_STREAM_MIXED, 3, 1u << 20, OTFX_REDUCE_RING);
    assert_int_equal(feed(f->trace, f->stream, 5000, &f->input), OTFX_OK);
    otfx_trace_status before;
    assert_int_equal(otfx_trace_status_get(f->trace, &before), OTFX_OK);
    otfx_time now = before.last_time;
    otfx_ref phase_region, user_region;
    assert_int_equal(otfx_defs_region(f->defs, "iteration", OTFX_ROLE_PHASE, &phase_region), OTFX_OK);
    assert_int_equal(otfx_defs_region(f->defs, "main", OTFX_ROLE_USER_FUNCTION, &user_region), OTFX_OK);

    otfx_event bad[10];
    memset(bad, 0, sizeof bad);
    bad[0] = (otfx_event){.time = now - 1, .type = OTFX_EV_ENTER, .u.region.region = user_region};
    bad[1] = (otfx_event){.time = now, .type = OTFX_EV_ENTER, .u.region.region = 99999};
    bad[2] = (otfx_event){.time = now, .type = (otfx_event_type)77};
    bad[3] = (otfx_event){.time = now, .type = OTFX_EV_SEND, .u.msg = {.comm = 555}};
    bad[4] = (otfx_event){.time = now, .type = OTFX_EV_METRIC, .u.metric = {.metric = 999}};
    bad[5] = (otfx_event){.time = now, .type = OTFX_EV_PHASE, .u.phase = {.region = user_region}};
    bad[6] = (otfx_event){.time = now, .type = OTFX_EV_COLL_END, .u.coll = {.comm = 4444}};
    bad[7] = (otfx_event){.time = now,
                          .type = OTFX_EV_REDUCTION,
                          .u.reduction = {.strategy = OTFX_REDUCE_COUNT, .begin = 0, .end = 1}};
    bad[8] = (otfx_event){.time = now,
                          .type = OTFX_EV_REDUCTION,
                          .u.reduction = {.strategy = OTFX_REDUCE_RING, .begin = 5, .end = 1}};
    bad[9] = (otfx_event){.time = now, .type = OTFX_EV_NBC_COMPLETE, .u.coll = {.comm = 4444, .request = 1}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        otfx_event batch[2] = {{.time = now, .type = OTFX_EV_COLL_BEGIN}, bad[i]};
        size_t appended = 99;
        assert_int_equal(otfx_trace_append(f->trace, batch, 2, &appended), OTFX_ERR_INVALID);
        assert_int_equal(appended, 1);
        assert_true(strlen(otfx_last_error()) > 0);
        assert_int_equal(event_log_append(&f->input, batch, 1), true);
    }
    /* A LEAVE with nothing open, after leaving everything. */
    otfx_event closing[OTFX_MAX_CALL_DEPTH + 1];
    size_t n = 0;
    while ((n = random_stream_finish(f->stream, closing, OTFX_MAX_CALL_DEPTH)) > 0) {
        for (size_t i = 0; i < n; i++)
            closing[i].time = closing[i].time < now ? now : closing[i].time;
        assert_int_equal(otfx_trace_append(f->trace, closing, n, NULL), OTFX_OK);
        assert_true(event_log_append(&f->input, closing, n));
        now = closing[n - 1].time;
    }
    otfx_event stray = {.time = now, .type = OTFX_EV_LEAVE};
    assert_int_equal(otfx_trace_append(f->trace, &stray, 1, NULL), OTFX_ERR_INVALID);
    /* Nothing that was stored changed. */
    event_log output = {0};
    assert_int_equal(collect_events(f->trace, 0, OTFX_TIME_MAX, false, &output), OTFX_OK);
    assert_logs_equal(&f->input, 0, &output, 0, f->input.count);
    assert_int_equal(first_nesting_error(&output, 0), SIZE_MAX);
    event_log_free(&output);
    fixture_close(f);
}

/* Rounds of MPI_Ibcast (NBC_REQUEST) then MPI_Wait (NBC_COMPLETE) under main, with extreme field values:
 * request ids 0 and UINT64_MAX, no root, UINT64_MAX bytes. */
static void nbc_rounds(otfx_trace *trace, otfx_ref comm, otfx_ref main_region, otfx_ref ibcast, otfx_ref wait,
                       uint32_t rounds, event_log *log)
{
    otfx_event event = {.time = 1000, .type = OTFX_EV_ENTER, .u.region.region = main_region};
    assert_true(event_log_append(log, &event, 1));
    for (uint32_t k = 0; k < rounds; k++) {
        const uint64_t request = k == 0 ? 0 : k == 1 ? UINT64_MAX : 3 * (uint64_t)k;
        otfx_event round[6] = {
            {.time = event.time + 10, .type = OTFX_EV_ENTER, .u.region.region = ibcast},
            {.time = event.time + 12, .type = OTFX_EV_NBC_REQUEST, .u.request.request = request},
            {.time = event.time + 15, .type = OTFX_EV_LEAVE, .u.region.region = ibcast},
            {.time = event.time + 90, .type = OTFX_EV_ENTER, .u.region.region = wait},
            {.time = event.time + 95, .type = OTFX_EV_NBC_COMPLETE},
            {.time = event.time + 99, .type = OTFX_EV_LEAVE, .u.region.region = wait},
        };
        round[4].u.coll.comm = comm;
        round[4].u.coll.op = 1;
        round[4].u.coll.root = k % 2 ? UINT32_MAX : 1;
        round[4].u.coll.sent = k == 1 ? UINT64_MAX : k;
        round[4].u.coll.received = 4 * (uint64_t)k;
        round[4].u.coll.request = request;
        assert_true(event_log_append(log, round, 6));
        event = round[5];
    }
    event = (otfx_event){.time = event.time + 1, .type = OTFX_EV_LEAVE, .u.region.region = main_region};
    assert_true(event_log_append(log, &event, 1));
    otfx_status status = otfx_trace_append(trace, log->events, log->count, NULL);
    assert_true(status == OTFX_OK);
}

/* Nonblocking collectives: stored exactly across sealed (compressed) chunks, not counted as messages in
 * profiles, and of the collective class for `type`, which drops them while keeping the MPI_Wait around
 * a completion. */
static void test_nonblocking_collectives(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    assert_non_null(defs);
    const uint32_t members[] = {0, 1};
    otfx_ref comm, location, main_region, ibcast, wait;
    assert_int_equal(otfx_defs_comm(defs, "world", members, 2, &comm), OTFX_OK);
    assert_int_equal(otfx_defs_location(defs, 0, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "main", OTFX_ROLE_USER_FUNCTION, &main_region), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Ibcast", OTFX_ROLE_MPI_COLLECTIVE, &ibcast), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Wait", OTFX_ROLE_MPI_P2P, &wait), OTFX_OK);
    enum { ROUNDS = 3000 };

    otfx_trace_config config = otfx_trace_config_default(4u << 20);
    config.chunk_bytes = 1024;
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
    event_log input = {0}, output = {0};
    nbc_rounds(trace, comm, main_region, ibcast, wait, ROUNDS, &input);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    assert_true(status.chunks > 10);
    assert_int_equal(status.events_held, input.count);
    assert_int_equal(collect_events(trace, 0, OTFX_TIME_MAX, false, &output), OTFX_OK);
    assert_logs_equal(&input, 0, &output, 0, input.count);
    event_log_free(&output);

    otfx_profile *profile = otfx_profile_create();
    assert_non_null(profile);
    assert_int_equal(otfx_query_profile(trace, 0, OTFX_TIME_MAX, profile), OTFX_OK);
    for (size_t i = 0; i < otfx_profile_size(profile); i++) {
        const otfx_profile_entry *entry = &otfx_profile_entries(profile)[i];
        assert_int_equal(entry->messages_sent + entry->messages_received, 0);
        assert_int_equal(entry->bytes_sent + entry->bytes_received, 0);
    }
    assert_int_equal(otfx_profile_find(profile, ibcast)->visits, ROUNDS);
    assert_int_equal(otfx_profile_find(profile, wait)->visits, ROUNDS);
    assert_int_equal(otfx_profile_find(profile, wait)->inclusive, 9 * (otfx_time)ROUNDS);
    otfx_profile_destroy(profile);
    size_t peers = 0;
    assert_int_equal(otfx_query_messages(trace, 0, OTFX_TIME_MAX, NULL, &peers), OTFX_OK);
    assert_int_equal(peers, 0);
    otfx_trace_destroy(trace);
    event_log_free(&input);

    config = otfx_trace_config_default(64u << 10);
    config.chunk_bytes = 1024;
    config.strategy = OTFX_REDUCE_TYPE;
    config.type_priority[0] = OTFX_CLASS_MPI_COLLECTIVE;
    config.type_priority[1] = OTFX_CLASS_COUNT;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
    nbc_rounds(trace, comm, main_region, ibcast, wait, 20 * ROUNDS, &input);
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    assert_true(status.events_reduced[OTFX_REDUCE_TYPE] > 0);
    assert_int_equal(collect_events(trace, 0, OTFX_TIME_MAX, false, &output), OTFX_OK);
    uint64_t waits = 0, completions = 0;
    for (size_t i = 0; i < output.count; i++) {
        waits += output.events[i].type == OTFX_EV_ENTER && output.events[i].u.region.region == wait;
        completions += output.events[i].type == OTFX_EV_NBC_COMPLETE;
    }
    assert_true(waits > 0 && completions < waits);
    event_log_free(&output);
    event_log_free(&input);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

static void test_reset_keeps_context(void **state)
{
    (void)state;
    fixture *f = fixture_open(RANDOM_STREAM_USER_HEAVY, 5, 1u << 20, OTFX_REDUCE_RING);
    assert_int_equal(feed(f->trace, f->stream, 50000, &f->input), OTFX_OK);
    assert_true(random_stream_depth(f->stream) > 0);
    assert_int_equal(otfx_trace_reset(f->trace), OTFX_OK);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(f->trace, &status), OTFX_OK);
    assert_int_equal(status.events_received, 0);
    assert_int_equal(status.events_held, 0);
    assert_int_equal(status.chunks, 0);
    assert_true(status.first_time > status.last_time);
    assert_int_equal(status.oldest_detail, OTFX_TIME_MAX);
    event_log output = {0};
    assert_int_equal(collect_events(f->trace, 0, OTFX_TIME_MAX, false, &output), OTFX_OK);
    assert_int_equal(output.count, 0);
    /* Leaves of regions entered before the reset still match. */
    otfx_event closing[256];
    size_t n, total = 0;
    while ((n = random_stream_finish(f->stream, closing, 256)) > 0) {
        assert_int_equal(otfx_trace_append(f->trace, closing, n, NULL), OTFX_OK);
        total += n;
    }
    assert_int_equal(collect_events(f->trace, 0, OTFX_TIME_MAX, true, &output), OTFX_OK);
    assert_true(output.count >= total);
    assert_int_equal(first_nesting_error(&output, output.count - total), SIZE_MAX);
    event_log_free(&output);
    fixture_close(f);
}

static void test_names_and_errors(void **state)
{
    (void)state;
    otfx_reduction parsed;
    for (int s = OTFX_REDUCE_RING; s <= OTFX_REDUCE_STOP; s++) {
        assert_int_equal(otfx_reduction_parse(otfx_reduction_name((otfx_reduction)s), &parsed), OTFX_OK);
        assert_int_equal(parsed, s);
    }
    assert_int_equal(otfx_reduction_parse("source-drop", &parsed), OTFX_ERR_INVALID);
    assert_string_equal(otfx_reduction_name(OTFX_REDUCE_THROTTLE), "throttle");
    assert_string_equal(otfx_event_type_name(OTFX_EV_IRECV_REQUEST), "irecv request");
    assert_string_equal(otfx_role_name(OTFX_ROLE_MPI_COLLECTIVE), "MPI collective");
    assert_string_equal(otfx_strerror(OTFX_ERR_CORRUPT), "corrupt data");
    otfx_defs *defs = otfx_defs_create();
    otfx_ref location;
    assert_int_equal(otfx_defs_location(defs, 0, 0, &location), OTFX_OK);
    otfx_trace *trace = NULL;
    otfx_trace_config config = otfx_trace_config_default(1000);
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_ERR_INVALID);
    config = otfx_trace_config_default(1u << 20);
    config.chunk_bytes = 100;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_ERR_INVALID);
    config = otfx_trace_config_default(1u << 20);
    assert_int_equal(otfx_trace_create(&config, defs, location + 1, &trace), OTFX_ERR_INVALID);
    assert_null(trace);
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
    assert_int_equal(otfx_trace_set_strategy(trace, OTFX_REDUCE_SOURCE_DROP), OTFX_ERR_INVALID);
    assert_int_equal(otfx_trace_location(trace), location);
    assert_ptr_equal(otfx_trace_defs(trace), defs);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lossless_round_trip),     cmocka_unit_test(test_windows_with_context),
        cmocka_unit_test(test_invalid_events_rejected), cmocka_unit_test(test_reset_keeps_context),
        cmocka_unit_test(test_names_and_errors),        cmocka_unit_test(test_nonblocking_collectives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

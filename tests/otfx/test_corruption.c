/* test_corruption.c — damaged stored chunks are found by their checksum and reported as
 * OTFX_ERR_CORRUPT with a message by every query that reads them, and by reductions that need them;
 * never a crash. */
#define _POSIX_C_SOURCE 200809L /* the private headers use POSIX rwlocks */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chunk.h"
#include "test_helpers.h"
#include "trace_internal.h"

static otfx_trace *filled_trace(otfx_defs *defs, random_stream **stream, otfx_reduction strategy,
                                size_t budget, size_t events)
{
    random_stream_config config = random_stream_config_default(RANDOM_STREAM_MIXED, 31);
    *stream = random_stream_create(defs, &config);
    otfx_trace_config trace_config = otfx_trace_config_default(budget);
    trace_config.chunk_bytes = 4096;
    trace_config.strategy = strategy;
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&trace_config, defs, random_stream_location(*stream), &trace),
                     OTFX_OK);
    assert_int_equal(feed(trace, *stream, events, NULL), OTFX_OK);
    return trace;
}

static int count_events(const otfx_event *event, void *user)
{
    (void)event;
    ++*(size_t *)user;
    return 0;
}

static void test_damaged_chunk_reported(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    random_stream *stream;
    otfx_trace *trace = filled_trace(defs, &stream, OTFX_REDUCE_RING, 4u << 20, 60000);
    uint32_t pieces = otfx_trace_test_piece_count(trace);
    assert_true(pieces > 8);
    const uint8_t *bytes;
    size_t size;
    uint32_t victim = pieces / 2;
    assert_int_equal(otfx_trace_test_piece_bytes(trace, victim, &bytes, &size), OTFX_OK);
    chunk_info info;
    assert_int_equal(chunk_parse(bytes, size, true, &info), OTFX_OK);
    otfx_time inside = info.begin + (info.end - info.begin) / 2;

    /* One bit of the payload. */
    assert_int_equal(otfx_trace_test_damage_piece(trace, victim, (uint32_t)size - 3, 0x10), OTFX_OK);
    size_t seen = 0;
    assert_int_equal(otfx_query_events(trace, 0, OTFX_TIME_MAX, false, count_events, &seen),
                     OTFX_ERR_CORRUPT);
    assert_non_null(strstr(otfx_last_error(), "checksum"));
    assert_int_equal(otfx_query_events(trace, inside, inside + 1, true, count_events, &seen),
                     OTFX_ERR_CORRUPT);
    otfx_profile *profile = otfx_profile_create();
    assert_int_equal(otfx_query_profile(trace, inside, OTFX_TIME_MAX, profile), OTFX_ERR_CORRUPT);
    otfx_timeline_bin bins[16];
    assert_int_equal(otfx_query_timeline(trace, info.begin, info.end, 16, bins), OTFX_ERR_CORRUPT);
    otfx_peer_stats peers[64];
    size_t peer_count = 64;
    assert_int_equal(otfx_query_messages(trace, inside, inside + 1000, peers, &peer_count), OTFX_ERR_CORRUPT);
    /* Windows that do not touch it still work. */
    seen = 0;
    assert_int_equal(otfx_query_events(trace, info.end + 1, OTFX_TIME_MAX, false, count_events, &seen),
                     OTFX_OK);
    assert_true(seen > 0);
    /* Repaired, everything is fine again. */
    assert_int_equal(otfx_trace_test_damage_piece(trace, victim, (uint32_t)size - 3, 0x10), OTFX_OK);
    assert_int_equal(otfx_query_events(trace, 0, OTFX_TIME_MAX, false, count_events, &seen), OTFX_OK);

    /* The header: magic, version, sizes, the checksum itself. */
    const uint32_t offsets[] = {0, 4, 8, 13, 17, 21, 25, 29, 33, 41, 49, 57, 64, 70};
    for (size_t i = 0; i < sizeof offsets / sizeof *offsets; i++) {
        assert_int_equal(otfx_trace_test_damage_piece(trace, victim, offsets[i], 0x81), OTFX_OK);
        assert_int_equal(otfx_query_events(trace, inside, inside + 1, false, count_events, &seen),
                         OTFX_ERR_CORRUPT);
        otfx_profile_clear(profile);
        assert_int_equal(otfx_query_profile(trace, inside, inside + 5000, profile), OTFX_ERR_CORRUPT);
        assert_int_equal(otfx_trace_test_damage_piece(trace, victim, offsets[i], 0x81), OTFX_OK);
    }
    otfx_profile_destroy(profile);
    otfx_trace_destroy(trace);
    random_stream_destroy(stream);
    otfx_defs_destroy(defs);
}

/* A reduction that needs a damaged chunk fails the append with OTFX_ERR_CORRUPT. */
static void test_damage_stops_reduction(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    random_stream *stream;
    otfx_trace *trace = filled_trace(defs, &stream, OTFX_REDUCE_TIME, 64 * 1024, 20000);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    /* Damage every detail chunk; the next reduction must read one of them. */
    for (uint32_t i = 0; i < otfx_trace_test_piece_count(trace); i++) {
        const uint8_t *bytes;
        size_t size;
        assert_int_equal(otfx_trace_test_piece_bytes(trace, i, &bytes, &size), OTFX_OK);
        assert_int_equal(otfx_trace_test_damage_piece(trace, i, (uint32_t)size - 1, 0x01), OTFX_OK);
    }
    otfx_status result = OTFX_OK;
    for (int i = 0; i < 100 && result == OTFX_OK; i++)
        result = feed(trace, stream, 4096, NULL);
    assert_int_equal(result, OTFX_ERR_CORRUPT);
    assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
    assert_true(status.bytes_used <= status.budget_bytes);
    otfx_trace_destroy(trace);
    random_stream_destroy(stream);
    otfx_defs_destroy(defs);
}

/* Random damage anywhere in any chunk: queries answer OK or CORRUPT, nothing else happens. */
static void test_random_damage(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    random_stream *stream;
    otfx_trace *trace = filled_trace(defs, &stream, OTFX_REDUCE_RING, 4u << 20, 20000);
    uint64_t random_state = 77;
    uint32_t pieces = otfx_trace_test_piece_count(trace);
    otfx_profile *profile = otfx_profile_create();
    for (int round = 0; round < 300; round++) {
        random_state = random_state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t victim = (uint32_t)((random_state >> 33) % pieces);
        const uint8_t *bytes;
        size_t size;
        assert_int_equal(otfx_trace_test_piece_bytes(trace, victim, &bytes, &size), OTFX_OK);
        uint32_t offset = (uint32_t)((random_state >> 13) % size);
        uint8_t mask = (uint8_t)(1u << (random_state % 8));
        assert_int_equal(otfx_trace_test_damage_piece(trace, victim, offset, mask), OTFX_OK);
        size_t seen = 0;
        assert_int_equal(otfx_query_events(trace, 0, OTFX_TIME_MAX, true, count_events, &seen),
                         OTFX_ERR_CORRUPT);
        otfx_status status = otfx_query_profile(trace, 0, OTFX_TIME_MAX, profile);
        assert_true(status == OTFX_OK || status == OTFX_ERR_CORRUPT);
        assert_int_equal(otfx_trace_test_damage_piece(trace, victim, offset, mask), OTFX_OK);
    }
    otfx_profile_destroy(profile);
    otfx_trace_destroy(trace);
    random_stream_destroy(stream);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_damaged_chunk_reported),
        cmocka_unit_test(test_damage_stops_reduction),
        cmocka_unit_test(test_random_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

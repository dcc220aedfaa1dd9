/* test_codec.c — the encoding layers on their own: varints, the event codec (millions of randomized
 * events, both time modes; message ordinals), the Huffman stage, sealed chunks (round trip, summary-only,
 * every damaged byte detected). With OTFX_WRITE_DECODER_CORPUS=<dir> it also writes the seed corpus of the
 * decoder fuzz target. */
#define _POSIX_C_SOURCE 200809L /* the private headers use POSIX rwlocks */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chunk.h"
#include "huffman.h"
#include "test_helpers.h"
#include "trace_internal.h"

static uint64_t random_state = 0x1234567;

static uint64_t next_random(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* A value of any magnitude, extremes included. */
static uint64_t random_value(void)
{
    switch (next_random() % 6) {
    case 0:
        return 0;
    case 1:
        return UINT64_MAX;
    case 2:
        return next_random() % 128;
    case 3:
        return next_random() % 100000;
    default:
        return next_random() >> (next_random() % 64);
    }
}

static void test_varints(void **state)
{
    (void)state;
    const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, (uint64_t)1 << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        uint8_t buffer[10];
        uint8_t *end = varint_put(buffer, values[i]);
        const uint8_t *in = buffer;
        uint64_t decoded;
        assert_true(varint_get(&in, end, &decoded));
        assert_ptr_equal(in, end);
        assert_int_equal(decoded, values[i]);
        in = buffer;
        assert_false(varint_get(&in, end - 1, &decoded)); /* truncated */
        assert_int_equal(zigzag_decode(zigzag_encode((int64_t)values[i])), (int64_t)values[i]);
    }
    const uint8_t too_long[11] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0};
    const uint8_t *in = too_long;
    uint64_t decoded;
    assert_false(varint_get(&in, too_long + sizeof too_long, &decoded));
}

/* Random valid events, then field values of every size; encoded with the calling stack as the
 * trace does, decoded through a cursor. */
static void round_trip_events(random_stream *stream, bool predict_time, size_t total)
{
    enum { BATCH = 8192 };
    otfx_event *events = malloc(sizeof *events * BATCH);
    uint8_t *tokens = malloc(BATCH);
    uint8_t *operands = malloc((size_t)BATCH * CODEC_MAX_OPERAND_BYTES);
    call_frame *frames = malloc(sizeof *frames * OTFX_MAX_CALL_DEPTH);
    call_frame *context = malloc(sizeof *context * OTFX_MAX_CALL_DEPTH);
    otfx_ref *stack = malloc(sizeof *stack * OTFX_MAX_CALL_DEPTH);
    assert_true(events && tokens && operands && frames && context && stack);
    uint32_t depth = 0;
    for (size_t done = 0; done < total; done += BATCH) {
        random_stream_next(stream, events, BATCH);
        for (size_t i = 0; i < BATCH; i++) {
            otfx_event *e = &events[i];
            switch (e->type) {
            case OTFX_EV_SEND:
            case OTFX_EV_RECV:
            case OTFX_EV_ISEND:
            case OTFX_EV_IRECV:
                e->u.msg.comm = (otfx_ref)(random_value() % OTFX_REF_NONE);
                e->u.msg.peer = (uint32_t)random_value();
                e->u.msg.tag = (uint32_t)random_value();
                e->u.msg.bytes = random_value();
                e->u.msg.request = random_value();
                e->u.msg.seq = random_value();
                break;
            case OTFX_EV_ISEND_COMPLETE:
            case OTFX_EV_IRECV_REQUEST:
            case OTFX_EV_REQUEST_CANCELLED:
            case OTFX_EV_NBC_REQUEST:
                e->u.request.request = random_value();
                break;
            case OTFX_EV_COLL_BEGIN:
                e->u.coll.comm = (otfx_ref)random_value();
                e->u.coll.seq = random_value();
                break;
            case OTFX_EV_COLL_END:
            case OTFX_EV_NBC_COMPLETE:
                e->u.coll.seq = random_value();
                e->u.coll.op = (uint32_t)random_value();
                e->u.coll.root = (uint32_t)random_value();
                e->u.coll.sent = random_value();
                e->u.coll.received = random_value();
                if (e->type == OTFX_EV_NBC_COMPLETE)
                    e->u.coll.request = random_value();
                break;
            case OTFX_EV_METRIC:
                e->u.metric.value = random_value();
                break;
            case OTFX_EV_PHASE:
                e->u.phase.value = (int64_t)random_value();
                break;
            default:
                break;
            }
        }
        /* The batch is one chunk: context = the stack before it. */
        for (uint32_t i = 0; i < depth; i++)
            context[i] = (call_frame){stack[i], 0, events[0].time, 0};
        uint32_t context_depth = depth;
        codec_state encoder;
        codec_state_init(&encoder, events[0].time, predict_time);
        size_t operand_bytes = 0;
        for (size_t i = 0; i < BATCH; i++) {
            otfx_ref top = depth ? stack[depth - 1] : OTFX_REF_NONE;
            operand_bytes += codec_encode(&encoder, &events[i], top, &tokens[i], operands + operand_bytes);
            if (events[i].type == OTFX_EV_ENTER)
                stack[depth++] = events[i].u.region.region;
            else if (events[i].type == OTFX_EV_LEAVE)
                depth--;
        }
        memcpy(frames, context, sizeof *frames * context_depth);
        event_cursor cursor;
        event_cursor_init(&cursor, events[0].time, predict_time, tokens, BATCH, operands, operand_bytes,
                          frames, context_depth);
        otfx_event decoded;
        for (size_t i = 0; i < BATCH; i++) {
            assert_int_equal(event_cursor_next(&cursor, &decoded), 1);
            if (!events_equal(&events[i], &decoded))
                fail_msg("event %zu of batch at %zu differs (type %d)", i, done, events[i].type);
        }
        assert_int_equal(event_cursor_next(&cursor, &decoded), 0);
        assert_int_equal(cursor.depth, depth);
    }
    free(events);
    free(tokens);
    free(operands);
    free(frames);
    free(context);
    free(stack);
}

static void test_codec_round_trip_millions(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    for (int kind = RANDOM_STREAM_MIXED; kind <= RANDOM_STREAM_USER_HEAVY; kind++) {
        for (int predict_time = 0; predict_time < 2; predict_time++) {
            random_stream_config config =
                random_stream_config_default((random_stream_kind)kind, 99 + (uint64_t)kind);
            random_stream *stream = random_stream_create(defs, &config);
            assert_non_null(stream);
            round_trip_events(stream, predict_time, kind == RANDOM_STREAM_MIXED ? 1200000 : 400000);
            random_stream_destroy(stream);
        }
    }
    otfx_defs_destroy(defs);
}

/* A stream of message events on a few channels whose ordinals mostly count up (the common case), with
 * gaps, repeats, unknown (0) and random ordinals mixed in when `irregular`. */
static void message_stream(otfx_event *events, size_t count, otfx_time first_time, bool irregular, bool zero)
{
    enum { CHANNELS = 6 };
    uint64_t counters[CHANNELS][2] = {{0}};
    static const otfx_event_type types[4] = {OTFX_EV_SEND, OTFX_EV_RECV, OTFX_EV_ISEND, OTFX_EV_IRECV};
    for (size_t i = 0; i < count; i++) {
        otfx_event *e = &events[i];
        memset(e, 0, sizeof *e);
        const unsigned channel = (unsigned)(i * 7 % CHANNELS);
        e->type = types[i * 5 % 4];
        e->time = first_time + 10 * i;
        e->u.msg.comm = channel % 2;
        e->u.msg.peer = 1 + channel % 3;
        e->u.msg.tag = channel < 3 ? 0 : 7;
        e->u.msg.bytes = 64u << channel;
        e->u.msg.request = e->type == OTFX_EV_ISEND || e->type == OTFX_EV_IRECV ? 1000 + i : 0;
        const int end = e->type == OTFX_EV_SEND || e->type == OTFX_EV_ISEND ? 0 : 1;
        uint64_t *counter = &counters[channel][end];
        if (zero)
            e->u.msg.seq = 0;
        else if (irregular && i % 97 == 3)
            e->u.msg.seq = 0; /* unknown: the next one of the channel is explicit again */
        else if (irregular && i % 131 == 5)
            e->u.msg.seq = *counter; /* the same ordinal twice */
        else if (irregular && i % 211 == 7)
            e->u.msg.seq = next_random();
        else
            e->u.msg.seq = *counter += irregular && i % 50 == 1 ? 3 : 1; /* a gap now and then */
    }
}

/* Encodes `count` events as one chunk and decodes them back; returns the operand bytes. */
static size_t chunk_round_trip(const otfx_event *events, size_t count)
{
    uint8_t *tokens = malloc(count), *operands = malloc(count * CODEC_MAX_OPERAND_BYTES);
    assert_true(tokens && operands);
    codec_state encoder;
    codec_state_init(&encoder, events[0].time, false);
    size_t operand_bytes = 0;
    for (size_t i = 0; i < count; i++)
        operand_bytes +=
            codec_encode(&encoder, &events[i], OTFX_REF_NONE, &tokens[i], operands + operand_bytes);
    event_cursor cursor;
    call_frame frames[1];
    event_cursor_init(&cursor, events[0].time, false, tokens, (uint32_t)count, operands, operand_bytes,
                      frames, 0);
    otfx_event decoded;
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(event_cursor_next(&cursor, &decoded), 1);
        if (!events_equal(&events[i], &decoded))
            fail_msg("message %zu: ordinal %llu came back as %llu", i,
                     (unsigned long long)events[i].u.msg.seq, (unsigned long long)decoded.u.msg.seq);
    }
    assert_int_equal(event_cursor_next(&cursor, &decoded), 0);
    free(tokens);
    free(operands);
    return operand_bytes;
}

/* Collective instance ordinals (u.coll.seq): predicted per communicator (a begin or a nonblocking
 * completion the next one, an end its begin's), every ordinal comes back, and a loop of collectives on
 * one communicator costs no more than unknown ordinals do. */
static void test_collective_ordinals(void **state)
{
    (void)state;
    enum { COUNT = 600 };
    otfx_event *events = calloc(COUNT, sizeof *events);
    assert_non_null(events);
    uint64_t next[2] = {100000, 1}; /* explicit, the first would take three bytes */
    for (size_t i = 0; i < COUNT; i++) {
        otfx_event *e = &events[i];
        e->time = 1000 + i;
        const otfx_ref comm = (i / 60) % 2; /* runs on one communicator, then the other */
        e->u.coll.comm = comm;
        switch (i % 3) {
        case 0:
            e->type = OTFX_EV_COLL_BEGIN;
            e->u.coll.seq = next[comm]++;
            if (i % 97 == 0)
                e->u.coll.seq = 0; /* unknown */
            break;
        case 1:
            e->type = OTFX_EV_COLL_END;
            e->u.coll.seq = events[i - 1].u.coll.seq;
            e->u.coll.root = UINT32_MAX;
            break;
        default:
            e->type = OTFX_EV_NBC_COMPLETE;
            e->u.coll.seq = next[comm]++ + (i % 101 == 2 ? 5 : 0); /* out of order now and then */
            e->u.coll.root = UINT32_MAX;
            e->u.coll.request = i;
            break;
        }
    }
    const size_t bytes = chunk_round_trip(events, COUNT);
    /* The same events without ordinals: every ordinal then costs one byte (a residual of 0). With them,
     * only where a prediction fails (a few, one byte each: small differences) or a communicator's first
     * ordinal (three bytes) does it cost more. */
    for (size_t i = 0; i < COUNT; i++)
        events[i].u.coll.seq = 0;
    const size_t unnumbered = chunk_round_trip(events, COUNT);
    if (bytes > unnumbered + 8)
        fail_msg("%zu bytes with ordinals, %zu without", bytes, unnumbered);
    free(events);
}

/* Metric values: coded as the difference to the same metric's last value in the chunk, so counters that
 * grow a little between reads cost a byte or two whatever their size, and every value comes back (one
 * that goes down, a metric pushed out of its slot by another, a wrap-around included). */
static void test_metric_values(void **state)
{
    (void)state;
    enum { COUNT = 900, METRICS = 3 };
    otfx_event *events = calloc(COUNT, sizeof *events);
    assert_non_null(events);
    uint64_t counter[METRICS] = {40000000000ull, 1000, 0}; /* task-clock ns after 40 s; faults; a level */
    for (size_t i = 0; i < COUNT; i++) {
        otfx_event *e = &events[i];
        e->time = 1000 + 10 * i;
        e->type = OTFX_EV_METRIC;
        const unsigned m = (unsigned)(i % METRICS);
        e->u.metric.metric = m;
        counter[m] += m == 0 ? 900 + i % 50 : m == 1 ? i % 2 : 0;
        if (m == 2 && i % 300 == 2)
            counter[m] -= 5; /* a level goes down */
        e->u.metric.value = counter[m];
        if (i == 450) {
            e->u.metric.metric = 16; /* shares metric 0's slot? whichever: it comes back */
            e->u.metric.value = UINT64_MAX;
        }
    }
    const size_t bytes = chunk_round_trip(events, COUNT);
    /* time (1 byte) + metric (1) + a value of at most 2 bytes per event, the first of each metric and the
     * odd one out aside */
    if (bytes > COUNT * 4 + 40)
        fail_msg("%zu operand bytes for %d metric values", bytes, COUNT);
    for (size_t i = 0; i < COUNT; i++)
        events[i].u.metric.value = 0;
    const size_t zero = chunk_round_trip(events, COUNT);
    print_message("metric values: %zu operand bytes, %zu with every value 0\n", bytes, zero);
    free(events);
}

/* Message ordinals (u.msg.seq): an ordinal that counts up on its channel rides on the cached tuple at no
 * cost, any other one forces an explicit tuple carrying it, and every ordinal comes back: within a chunk,
 * across chunk boundaries (each chunk predicts afresh) and after `type` thinned a chunk (re-encoded). */
static void test_message_ordinals(void **state)
{
    (void)state;
    enum { COUNT = 6000 };
    otfx_event *events = malloc(COUNT * sizeof *events);
    assert_non_null(events);

    message_stream(events, COUNT, 1000, false, true);
    const size_t unknown_bytes = chunk_round_trip(events, COUNT);
    message_stream(events, COUNT, 1000, false, false);
    const size_t counted_bytes = chunk_round_trip(events, COUNT);
    /* Only the first message of each of the 12 channel ends costs its ordinal (a byte or two). */
    assert_true(counted_bytes <= unknown_bytes + 12 * 2);
    message_stream(events, COUNT, 1000, true, false);
    const size_t irregular_bytes = chunk_round_trip(events, COUNT);
    assert_true(irregular_bytes > counted_bytes);

    /* Through a trace: 1 KiB chunks, so the stream crosses many chunk boundaries; user-function calls
     * around each message, so that `type` thins chunks by re-encoding them without those calls. */
    otfx_defs *defs = otfx_defs_create();
    otfx_ref location, user, p2p;
    assert_int_equal(otfx_defs_location(defs, 0, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "compute", OTFX_ROLE_USER_FUNCTION, &user), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Isend", OTFX_ROLE_MPI_P2P, &p2p), OTFX_OK);
    const uint32_t members[4] = {0, 1, 2, 3};
    otfx_ref comms[2];
    assert_int_equal(otfx_defs_comm(defs, "world", members, 4, &comms[0]), OTFX_OK);
    assert_int_equal(otfx_defs_comm(defs, "copy", members, 4, &comms[1]), OTFX_OK);
    assert_true(comms[0] == 0 && comms[1] == 1); /* what message_stream names */
    for (int thinning = 0; thinning < 2; thinning++) {
        otfx_trace_config config = otfx_trace_config_default(thinning ? 64u << 10 : 16u << 20);
        config.chunk_bytes = 1024;
        config.strategy = thinning ? OTFX_REDUCE_TYPE : OTFX_REDUCE_RING;
        otfx_trace *trace;
        assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
        enum { ROUNDS = 20000 };
        otfx_event *appended = malloc(5 * ROUNDS * sizeof *appended);
        assert_non_null(appended);
        message_stream(events, COUNT, 0, true, false);
        for (size_t r = 0; r < ROUNDS; r++) {
            otfx_event *round = &appended[5 * r];
            const otfx_time t = 100 + 50 * (otfx_time)r;
            round[0] = (otfx_event){.time = t, .type = OTFX_EV_ENTER, .u.region.region = user};
            round[1] = (otfx_event){.time = t + 1, .type = OTFX_EV_ENTER, .u.region.region = p2p};
            round[2] = events[r % COUNT];
            round[2].time = t + 2;
            round[3] = (otfx_event){.time = t + 3, .type = OTFX_EV_LEAVE};
            round[4] = (otfx_event){.time = t + 4, .type = OTFX_EV_LEAVE};
        }
        size_t done = 0;
        const otfx_status appended_status = otfx_trace_append(trace, appended, 5 * ROUNDS, &done);
        if (appended_status != OTFX_OK)
            fail_msg("append stopped at event %zu: %s", done, otfx_last_error());
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
        assert_true(status.chunks > 20);
        if (thinning)
            assert_true(status.events_reduced[OTFX_REDUCE_TYPE] > 0);
        event_log held = {0};
        assert_int_equal(collect_events(trace, 0, OTFX_TIME_MAX, false, &held), OTFX_OK);
        size_t messages = 0;
        for (size_t i = 0; i < held.count; i++) {
            const otfx_event *e = &held.events[i];
            if (e->type < OTFX_EV_SEND || e->type > OTFX_EV_IRECV || e->type == OTFX_EV_ISEND_COMPLETE ||
                e->type == OTFX_EV_IRECV_REQUEST)
                continue;
            const otfx_event *original = &appended[5 * ((e->time - 100) / 50) + 2];
            if (!events_equal(original, e))
                fail_msg("message at %llu: ordinal %llu came back as %llu", (unsigned long long)e->time,
                         (unsigned long long)original->u.msg.seq, (unsigned long long)e->u.msg.seq);
            messages++;
        }
        assert_true(messages > 500);
        event_log_free(&held);
        free(appended);
        otfx_trace_destroy(trace);
    }
    otfx_defs_destroy(defs);
    free(events);
}

static void test_huffman(void **state)
{
    (void)state;
    enum { SIZE = 50000 };
    uint8_t *data = malloc(SIZE), *coded = malloc(2 * SIZE), *back = malloc(SIZE);
    assert_true(data && coded && back);
    for (int distribution = 0; distribution < 5; distribution++) {
        for (size_t i = 0; i < SIZE; i++) {
            uint64_t r = next_random();
            switch (distribution) {
            case 0: /* skewed: a few frequent values, a long tail */
                data[i] = (uint8_t)(r % 100 < 90 ? r % 4 : r >> 8);
                break;
            case 1: /* one symbol */
                data[i] = 7;
                break;
            case 2: /* geometric: codes longer than the limit before limiting */
                data[i] = (uint8_t)__builtin_ctzll(r | (1ull << 40));
                break;
            case 3: /* uniform: does not pay */
                data[i] = (uint8_t)r;
                break;
            default: /* two symbols */
                data[i] = (uint8_t)(r & 1 ? 200 : 3);
                break;
            }
        }
        size_t coded_size = huffman_encode(data, SIZE, coded, 2 * SIZE);
        if (distribution == 3) {
            assert_int_equal(coded_size, 0);
            continue;
        }
        assert_true(coded_size > 0 && coded_size < SIZE);
        assert_true(huffman_decode(coded, coded_size, back, SIZE));
        assert_memory_equal(data, back, SIZE);
        /* Truncated or over-long input is rejected, not over-read. */
        assert_false(huffman_decode(coded, coded_size / 2, back, SIZE));
        assert_false(huffman_decode(coded, HUFFMAN_TABLE_BYTES - 1, back, SIZE));
    }
    /* An over-full table (every symbol of length 1) is rejected. */
    memset(coded, 0x11, HUFFMAN_TABLE_BYTES);
    assert_false(huffman_decode(coded, HUFFMAN_TABLE_BYTES + 10, back, 10));
    free(data);
    free(coded);
    free(back);
}

/* Fills a trace of `kind` with a few chunks and hands back its pieces. */
static otfx_trace *trace_with_chunks(otfx_defs *defs, random_stream_kind kind, bool compress, size_t events)
{
    random_stream_config config = random_stream_config_default(kind, 5);
    random_stream *stream = random_stream_create(defs, &config);
    otfx_trace_config trace_config = otfx_trace_config_default(4u << 20);
    trace_config.compress = compress;
    trace_config.chunk_bytes = 4096;
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&trace_config, defs, random_stream_location(stream), &trace), OTFX_OK);
    assert_int_equal(feed(trace, stream, events, NULL), OTFX_OK);
    random_stream_destroy(stream);
    return trace;
}

static void test_sealed_chunks(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    for (int compress = 0; compress < 2; compress++) {
        otfx_trace *trace = trace_with_chunks(defs, RANDOM_STREAM_MIXED, compress, 30000);
        uint32_t pieces = otfx_trace_test_piece_count(trace);
        assert_true(pieces > 5);
        for (uint32_t i = 0; i < pieces; i++) {
            const uint8_t *bytes;
            size_t size;
            assert_int_equal(otfx_trace_test_piece_bytes(trace, i, &bytes, &size), OTFX_OK);
            assert_int_equal(chunk_check(bytes, size, true), OTFX_OK);
            chunk_info info;
            assert_int_equal(chunk_parse(bytes, size, true, &info), OTFX_OK);
            assert_int_equal(!!(info.flags & CHUNK_COMPRESSED), compress);
            summary stats;
            summary_init(&stats);
            assert_int_equal(chunk_read_summary(&info, &stats), OTFX_OK);
            assert_int_equal(stats.events, info.event_count);
            summary_free(&stats);
        }
        otfx_trace_destroy(trace);
    }
    /* A summary-only chunk. */
    summary stats;
    summary_init(&stats);
    otfx_profile_entry *entry = summary_region(&stats, 3);
    entry->visits = 5;
    entry->inclusive = 1000;
    summary_peer(&stats, 9)->messages_sent = 2;
    stats.events = 77;
    stats.removed[OTFX_REDUCE_RING] = 77;
    chunk_contents contents = {
        .begin = 100, .end = 200, .first_event = 200, .summary = &stats, .flags = CHUNK_SUMMARY_ONLY};
    chunk_scratch scratch = {0};
    uint8_t *blob;
    uint32_t size;
    assert_int_equal(chunk_seal(&contents, &scratch, &blob, &size), OTFX_OK);
    assert_int_equal(chunk_check(blob, size, true), OTFX_OK);
    chunk_info info;
    assert_int_equal(chunk_parse(blob, size, true, &info), OTFX_OK);
    summary back;
    summary_init(&back);
    assert_int_equal(chunk_read_summary(&info, &back), OTFX_OK);
    assert_int_equal(back.region_count, 1);
    assert_int_equal(back.regions[0].inclusive, 1000);
    assert_int_equal(back.peers[0].peer, 9);
    assert_int_equal(back.removed[OTFX_REDUCE_RING], 77);
    summary_free(&back);
    summary_free(&stats);
    free(blob);
    chunk_scratch_free(&scratch);
    otfx_defs_destroy(defs);
}

/* Every single-bit flip of a sealed chunk is caught by the checksum; without the checksum the
 * decoder still never misbehaves (ASan and UBSan watch). */
static void test_every_damaged_byte_detected(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    otfx_trace *trace = trace_with_chunks(defs, RANDOM_STREAM_STENCIL, true, 3000);
    const uint8_t *bytes;
    size_t size;
    assert_int_equal(otfx_trace_test_piece_bytes(trace, 0, &bytes, &size), OTFX_OK);
    uint8_t *copy = malloc(size);
    memcpy(copy, bytes, size);
    for (size_t offset = 0; offset < size; offset++) {
        uint8_t mask = (uint8_t)(1u << (next_random() % 8));
        copy[offset] ^= mask;
        assert_int_equal(chunk_check(copy, size, true), OTFX_ERR_CORRUPT);
        otfx_status unchecked = chunk_check(copy, size, false);
        assert_true(unchecked == OTFX_OK || unchecked == OTFX_ERR_CORRUPT);
        copy[offset] ^= mask;
    }
    for (size_t cut = 0; cut < size; cut += 7)
        assert_int_equal(chunk_check(copy, cut, true), OTFX_ERR_CORRUPT);
    assert_int_equal(chunk_check(copy, size, true), OTFX_OK);
    free(copy);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

/* Writes sealed chunks of every kind as seeds of the decoder fuzz target, when asked to. */
static void test_write_decoder_corpus(void **state)
{
    (void)state;
    const char *directory = getenv("OTFX_WRITE_DECODER_CORPUS");
    if (!directory)
        skip();
    otfx_defs *defs = otfx_defs_create();
    int written = 0;
    for (int kind = RANDOM_STREAM_MIXED; kind <= RANDOM_STREAM_USER_HEAVY; kind++) {
        for (int compress = 0; compress < 2; compress++) {
            otfx_trace *trace = trace_with_chunks(defs, (random_stream_kind)kind, compress, 2500);
            const uint8_t *bytes;
            size_t size;
            assert_int_equal(otfx_trace_test_piece_bytes(trace, 0, &bytes, &size), OTFX_OK);
            char path[4096];
            snprintf(path, sizeof path, "%s/chunk-%d-%s", directory, kind, compress ? "compressed" : "raw");
            FILE *out = fopen(path, "wb");
            assert_non_null(out);
            assert_int_equal(fwrite(bytes, 1, size, out), size);
            fclose(out);
            written++;
            otfx_trace_destroy(trace);
        }
    }
    assert_int_equal(written, 6);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_codec_round_trip_millions),
        cmocka_unit_test(test_message_ordinals),
        cmocka_unit_test(test_collective_ordinals),
        cmocka_unit_test(test_metric_values),
        cmocka_unit_test(test_huffman),
        cmocka_unit_test(test_sealed_chunks),
        cmocka_unit_test(test_every_damaged_byte_detected),
        cmocka_unit_test(test_write_decoder_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* wire.c — values and watermarks between places, and otfx_replay_run.
 *
 * A batch for one place: "RPLY", the value size (u32), then records, each a kind byte and fields in the
 * host's byte order (the places of a job run on one architecture):
 *   message    comm id u64, sender u32, receiver u32, tag u32, ordinal u64, value
 *   arrival    missing u8, comm id u64, instance u64, member u32, size u32, value
 *   watermark  rank u32, time u64
 * Records of one batch apply in order, and batches between two places arrive in order, so a rank's
 * values always arrive before the watermark that passes them. */
#define _POSIX_C_SOURCE 200809L

#include "replay_internal.h"

#include "../error_text.h"

#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const unsigned char batch_magic[4] = {'R', 'P', 'L', 'Y'};
enum {
    BATCH_HEADER = 8,
    MESSAGE_FIELDS = 8 + 4 + 4 + 4 + 8,
    ARRIVAL_FIELDS = 1 + 8 + 8 + 4 + 4,
    WATERMARK_FIELDS = 12
};

static void put(byte_buffer *buffer, const void *bytes, size_t length)
{
    if (buffer->failed)
        return;
    if (length > SIZE_MAX - buffer->length ||
        !otfx_reserve((void **)&buffer->data, &buffer->capacity, buffer->length + length, 1, 4096)) {
        buffer->failed = true;
        return;
    }
    memcpy(buffer->data + buffer->length, bytes, length);
    buffer->length += length;
}

static void put_u8(byte_buffer *buffer, uint8_t v)
{
    put(buffer, &v, 1);
}
static void put_u32(byte_buffer *buffer, uint32_t v)
{
    put(buffer, &v, 4);
}
static void put_u64(byte_buffer *buffer, uint64_t v)
{
    put(buffer, &v, 8);
}

bool replay_queue_outgoing(otfx_replay *replay, const outgoing_value *value)
{
    if (!otfx_reserve((void **)&replay->outgoing, &replay->outgoing_capacity, replay->outgoing_count + 1,
                      sizeof *replay->outgoing, 256))
        return false;
    replay->outgoing[replay->outgoing_count++] = *value;
    return true;
}

void replay_set_places(otfx_replay *replay, uint32_t (*place_of_rank)(void *context, uint32_t rank),
                       void *context, uint32_t self)
{
    if (replay->placed) {
        /* a follow replay's next run comes with another exchange of the same places */
        if (place_of_rank) {
            replay->place_of_rank = place_of_rank;
            replay->place_context = context;
        }
        return;
    }
    replay->placed = true;
    replay->self = self;
    replay->place_of_rank = place_of_rank;
    replay->place_context = context;
    uint32_t count = self + 1;
    for (uint32_t r = 0; r < replay->config.app_ranks; r++) {
        replay_rank *rank = &replay->ranks[r];
        uint32_t place = place_of_rank ? place_of_rank(context, r) : UINT32_MAX;
        if (place != UINT32_MAX && place + 1 > count)
            count = place + 1;
        if (rank->stream_count > 0 || rank->absent != OTFX_REPLAY_SEEN)
            continue;
        if (place == UINT32_MAX)
            rank->absent = OTFX_REPLAY_RANK_NOT_SERVED;
        else if (place == self)
            rank->absent = OTFX_REPLAY_NOT_HELD; /* served here, but no trace of it was added */
    }
    replay->to_place = calloc(count, sizeof *replay->to_place);
    replay->place_serves = calloc(count, sizeof *replay->place_serves);
    if (!replay->to_place || !replay->place_serves) {
        replay_fail(replay, "replay: out of memory for %u places", count);
        replay->fail_status = OTFX_ERR_NOMEM;
        return;
    }
    replay->place_count = count;
    for (uint32_t r = 0; r < replay->config.app_ranks && place_of_rank; r++) {
        uint32_t place = place_of_rank(context, r);
        if (place != UINT32_MAX && place != self && replay->ranks[r].selected)
            replay->place_serves[place] = true;
    }
}

static byte_buffer *batch_for(otfx_replay *replay, uint32_t place)
{
    byte_buffer *buffer = &replay->to_place[place];
    if (buffer->length == 0) {
        put(buffer, batch_magic, 4);
        put_u32(buffer, (uint32_t)replay->value_size);
    }
    return buffer;
}

/* The other places serving members of a communicator (computed once). */
static bool comm_places(otfx_replay *replay, replay_comm *comm)
{
    if (comm->places_known)
        return true;
    bool *marked = calloc(replay->place_count, sizeof *marked);
    uint32_t *places = malloc(sizeof(uint32_t) * replay->place_count);
    if (!marked || !places) {
        free(marked);
        free(places);
        return false;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < comm->size; i++) {
        uint32_t world = comm->members[i];
        if (world >= replay->config.app_ranks || !replay->ranks[world].selected)
            continue;
        uint32_t place =
            replay->place_of_rank ? replay->place_of_rank(replay->place_context, world) : UINT32_MAX;
        if (place == UINT32_MAX || place == replay->self || place >= replay->place_count || marked[place])
            continue;
        marked[place] = true;
        places[n++] = place;
    }
    free(marked);
    comm->places = places;
    comm->place_n = n;
    comm->places_known = true;
    return true;
}

static void route(otfx_replay *replay, const outgoing_value *out)
{
    const size_t vs = replay->value_size;
    if (out->kind == WIRE_MESSAGE) {
        uint32_t place =
            replay->place_of_rank ? replay->place_of_rank(replay->place_context, out->route) : UINT32_MAX;
        if (place == UINT32_MAX || place == replay->self || place >= replay->place_count) {
            replay->sends_unserved++;
            return;
        }
        byte_buffer *buffer = batch_for(replay, place);
        put_u8(buffer, WIRE_MESSAGE);
        put_u64(buffer, out->key[0]);
        put_u32(buffer, (uint32_t)(out->key[1] >> 32));
        put_u32(buffer, (uint32_t)out->key[1]);
        put_u32(buffer, (uint32_t)out->key[2]);
        put_u64(buffer, out->key[3]);
        put(buffer, out->value, vs);
        replay->stats.values_sent++;
        return;
    }
    replay_comm *comm = replay_comm_get(replay, out->route);
    if (!comm || !comm_places(replay, comm)) {
        replay_fail(replay, "replay: out of memory routing a collective");
        replay->fail_status = OTFX_ERR_NOMEM;
        return;
    }
    for (uint32_t i = 0; i < comm->place_n; i++) {
        byte_buffer *buffer = batch_for(replay, comm->places[i]);
        put_u8(buffer, WIRE_ARRIVAL);
        put_u8(buffer, out->missing);
        put_u64(buffer, out->key[0]);
        put_u64(buffer, out->key[1]);
        put_u32(buffer, (uint32_t)out->key[2]);
        put_u32(buffer, (uint32_t)out->key[3]);
        put(buffer, out->value, vs);
        replay->stats.values_sent++;
    }
}

otfx_status otfx_replay_take_outgoing(otfx_replay *replay,
                                      uint32_t (*place_of_rank)(void *context, uint32_t rank), void *context,
                                      uint32_t self,
                                      bool (*fn)(void *user, uint32_t to, const void *bytes, size_t length),
                                      void *user)
{
    replay_set_places(replay, place_of_rank, context, self);
    if (replay->failed)
        return replay->fail_status ? replay->fail_status : OTFX_ERR_INVALID;
    for (size_t i = 0; i < replay->outgoing_count; i++)
        route(replay, &replay->outgoing[i]);
    replay->outgoing_count = 0;
    /* Watermarks that moved, after the values they pass. */
    for (uint32_t r = 0; r < replay->config.app_ranks; r++) {
        replay_rank *rank = &replay->ranks[r];
        if (rank->stream_count == 0)
            continue;
        otfx_time mark = replay_rank_watermark(replay, r);
        if (rank->watermark_sent && mark <= rank->sent_watermark)
            continue;
        rank->watermark_sent = true;
        rank->sent_watermark = mark;
        for (uint32_t p = 0; p < replay->place_count; p++) {
            if (!replay->place_serves[p])
                continue;
            byte_buffer *buffer = batch_for(replay, p);
            put_u8(buffer, WIRE_WATERMARK);
            put_u32(buffer, r);
            put_u64(buffer, mark);
        }
    }
    otfx_status status = OTFX_OK;
    for (uint32_t p = 0; p < replay->place_count; p++) {
        byte_buffer *buffer = &replay->to_place[p];
        if (buffer->length == 0)
            continue;
        if (buffer->failed) {
            replay_fail(replay, "replay: out of memory for the values to place %u", p);
            replay->fail_status = status = OTFX_ERR_NOMEM;
        } else if (status == OTFX_OK && !fn(user, p, buffer->data, buffer->length)) {
            replay_fail(replay, "replay: sending values to place %u failed", p);
            status = OTFX_ERR_IO;
            replay->fail_status = status;
        } else if (status == OTFX_OK) {
            replay->batches_sent++;
        }
        buffer->length = 0;
        buffer->failed = false;
    }
    return status;
}

/* Walks a batch; with apply false only checks it. */
static bool walk_batch(otfx_replay *replay, const unsigned char *bytes, size_t length, bool apply,
                       uint64_t *values)
{
    const size_t vs = replay->value_size;
    uint32_t value_size;
    if (length < BATCH_HEADER || memcmp(bytes, batch_magic, 4) != 0)
        return false;
    memcpy(&value_size, bytes + 4, 4);
    if (value_size != vs)
        return false;
    size_t at = BATCH_HEADER;
    while (at < length) {
        uint8_t kind = bytes[at++];
        const unsigned char *p = bytes + at;
        size_t left = length - at;
        if (kind == WIRE_MESSAGE) {
            if (left < MESSAGE_FIELDS + vs)
                return false;
            uint64_t comm, seq;
            uint32_t sender, receiver, tag;
            memcpy(&comm, p, 8);
            memcpy(&sender, p + 8, 4);
            memcpy(&receiver, p + 12, 4);
            memcpy(&tag, p + 16, 4);
            memcpy(&seq, p + 20, 8);
            if (sender >= replay->config.app_ranks || receiver >= replay->config.app_ranks)
                return false;
            if (apply) {
                uint64_t key[4] = {comm, ((uint64_t)sender << 32) | receiver, tag, seq};
                if (!message_table_insert(&replay->messages, key, p + MESSAGE_FIELDS, true))
                    return false;
            }
            (*values)++;
            at += MESSAGE_FIELDS + vs;
        } else if (kind == WIRE_ARRIVAL) {
            if (left < ARRIVAL_FIELDS + vs)
                return false;
            uint8_t missing = p[0];
            uint64_t comm, seq;
            uint32_t member, size;
            memcpy(&comm, p + 1, 8);
            memcpy(&seq, p + 9, 8);
            memcpy(&member, p + 17, 4);
            memcpy(&size, p + 21, 4);
            if (missing >= OTFX_REPLAY_MISSING_COUNT || member >= size || size > (1u << 24) || seq == 0)
                return false;
            if (apply && !replay_store_arrival(replay, comm, seq, member, size, (otfx_replay_missing)missing,
                                               missing == OTFX_REPLAY_SEEN ? p + ARRIVAL_FIELDS : NULL))
                return false;
            (*values)++;
            at += ARRIVAL_FIELDS + vs;
        } else if (kind == WIRE_WATERMARK) {
            if (left < WATERMARK_FIELDS)
                return false;
            uint32_t rank;
            uint64_t mark;
            memcpy(&rank, p, 4);
            memcpy(&mark, p + 4, 8);
            if (rank >= replay->config.app_ranks)
                return false;
            if (apply && replay->ranks[rank].stream_count == 0 && mark > replay->ranks[rank].remote_watermark)
                replay->ranks[rank].remote_watermark = mark;
            at += WATERMARK_FIELDS;
        } else {
            return false;
        }
    }
    return true;
}

otfx_status otfx_replay_deliver(otfx_replay *replay, const void *bytes, size_t length)
{
    uint64_t values = 0;
    if (!bytes || !walk_batch(replay, bytes, length, false, &values))
        return OTFX_ERR_CORRUPT;
    values = 0;
    if (!walk_batch(replay, bytes, length, true, &values)) {
        replay_fail(replay, "replay: out of memory for values from another place");
        replay->fail_status = OTFX_ERR_NOMEM;
        return OTFX_ERR_NOMEM;
    }
    replay->batches_received++;
    replay->stats.values_received += values;
    return OTFX_OK;
}

/* ---- otfx_replay_run ------------------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct run_state {
    otfx_replay *replay;
    const otfx_place_exchange *exchange;
    otfx_status delivered;
} run_state;

static bool send_batch(void *user, uint32_t to, const void *bytes, size_t length)
{
    const otfx_place_exchange *exchange = user;
    return exchange->send(exchange->context, to, bytes, length);
}

static void take_batch(void *user, uint32_t from, const void *bytes, size_t length)
{
    run_state *run = user;
    otfx_status status = otfx_replay_deliver(run->replay, bytes, length);
    if (status == OTFX_ERR_CORRUPT && run->delivered == OTFX_OK) {
        replay_fail(run->replay, "replay: a malformed batch of %zu bytes from place %u", length, from);
        run->delivered = status;
    } else if (status != OTFX_OK && run->delivered == OTFX_OK) {
        run->delivered = status;
    }
}

enum {
    WAIT_FIRST_NS = 50000,     /* the first wait for a message while idle */
    WAIT_LONGEST_NS = 1000000, /* waits grow to this while nothing happens */
    IDLE_BEFORE_ROUND_NS = 2000000,
};

static otfx_status run_failed(otfx_replay *replay, otfx_status status, char *error, size_t error_size)
{
    set_error(error, error_size, "%s", replay->error[0] ? replay->error : "replay failed");
    return status != OTFX_OK ? status : OTFX_ERR_INVALID;
}

static otfx_status run_succeeded(otfx_replay *replay, uint64_t events_before)
{
    replay->stats.runs++;
    replay->stats.events_last_run = replay->stats.events - events_before;
    if (replay->config.follow)
        replay_follow_rest(replay);
    return OTFX_OK;
}

otfx_status otfx_replay_run(otfx_replay *replay, const otfx_place_exchange *exchange, uint64_t deadline_ns,
                            char *error, size_t error_size)
{
    if (exchange)
        replay_set_places(replay, exchange->place_of_rank, exchange->context, exchange->self);
    else
        replay_set_places(replay, NULL, NULL, 0);
    if (replay->failed)
        return run_failed(replay, replay->fail_status, error, error_size);
    const bool follow = replay->config.follow;
    if (follow)
        replay_follow_resume(replay);
    const uint64_t events_before = replay->stats.events;
    run_state run = {.replay = replay, .exchange = exchange};
    uint64_t wait_ns = WAIT_FIRST_NS, idle_ns = 0;
    /* the places' batch counts at the latest check, for the error when the deadline passes */
    uint64_t checked_sent = 0, checked_received = 0, checks = 0;
    bool progressed_since_round = true;
    for (;;) {
        if (deadline_ns && now_ns() >= deadline_ns) {
            char in_flight[160] = "";
            if (checks && checked_sent != checked_received)
                snprintf(
                    in_flight, sizeof in_flight,
                    "; at the latest check the places had sent %llu batches to each other and received %llu",
                    (unsigned long long)checked_sent, (unsigned long long)checked_received);
            replay_fail(replay,
                        "replay: the deadline passed with %s (%llu events replayed here, %llu rounds%s)",
                        otfx_replay_done(replay) || (follow && otfx_replay_caught_up(replay))
                            ? "this place done but others not"
                            : "streams still waiting",
                        (unsigned long long)replay->stats.events, (unsigned long long)replay->stats.rounds,
                        in_flight);
            return run_failed(replay, OTFX_ERR_IO, error, error_size);
        }
        bool progressed;
        otfx_status status = otfx_replay_advance(replay, &progressed);
        if (status != OTFX_OK)
            return run_failed(replay, status, error, error_size);
        if (!exchange) {
            if (progressed)
                continue;
            if (otfx_replay_done(replay) || follow)
                return run_succeeded(replay, events_before);
            /* Alone, nothing can come from elsewhere: every stream waits on another here. */
            otfx_time earliest = otfx_replay_earliest_wait(replay);
            if (earliest == OTFX_TIME_MAX) {
                replay_fail(replay, "replay: streams neither move nor wait");
                return run_failed(replay, OTFX_ERR_INVALID, error, error_size);
            }
            otfx_replay_release(replay, earliest);
            replay->stats.stall_releases++;
            continue;
        }
        uint64_t sent_before = replay->batches_sent, received_before = replay->batches_received;
        status = otfx_replay_take_outgoing(replay, exchange->place_of_rank, exchange->context, exchange->self,
                                           send_batch, (void *)exchange);
        if (status != OTFX_OK)
            return run_failed(replay, status, error, error_size);
        /* Take what is there; wait a little (longer while idle) when nothing moved here. */
        uint64_t timeout = progressed ? 0 : wait_ns;
        if (deadline_ns) {
            uint64_t now = now_ns();
            if (now < deadline_ns && deadline_ns - now < timeout)
                timeout = deadline_ns - now;
        }
        for (;;) {
            int got = exchange->receive(exchange->context, timeout, take_batch, &run);
            if (got < 0) {
                replay_fail(replay, "replay: the exchange between places failed: %s",
                            exchange->last_error ? exchange->last_error(exchange->context) : "?");
                return run_failed(replay, OTFX_ERR_IO, error, error_size);
            }
            if (run.delivered != OTFX_OK)
                return run_failed(replay, run.delivered, error, error_size);
            if (got == 0)
                break;
            timeout = 0;
        }
        bool moved =
            progressed || replay->batches_sent != sent_before || replay->batches_received != received_before;
        if (moved) {
            progressed_since_round = true;
            wait_ns = WAIT_FIRST_NS;
            idle_ns = 0;
            continue;
        }
        idle_ns += wait_ns;
        wait_ns = wait_ns * 2 > WAIT_LONGEST_NS ? WAIT_LONGEST_NS : wait_ns * 2;
        if (idle_ns < IDLE_BEFORE_ROUND_NS && !otfx_replay_done(replay))
            continue;
        /* A round: every place comes here when idle, so the allreduces pair up. */
        uint64_t sums[4] = {replay->batches_sent, replay->batches_received, progressed_since_round ? 1 : 0,
                            otfx_replay_done(replay) ? 0 : 1};
        uint64_t earliest[1] = {otfx_replay_earliest_wait(replay)};
        if (!exchange->allreduce(exchange->context, OTFX_EXCHANGE_SUM, sums, 4) ||
            !exchange->allreduce(exchange->context, OTFX_EXCHANGE_MIN, earliest, 1)) {
            replay_fail(replay, "replay: the check with the other places failed: %s",
                        exchange->last_error ? exchange->last_error(exchange->context) : "?");
            return run_failed(replay, OTFX_ERR_IO, error, error_size);
        }
        replay->stats.rounds++;
        checks++;
        checked_sent = sums[0];
        checked_received = sums[1];
        progressed_since_round = false;
        idle_ns = 0;
        bool quiet = sums[0] == sums[1];
        /* Every place sees the same sums and leaves here together, with every batch delivered: no
         * replay bytes are left for what uses the exchange next (otfx_replay_run's promise). Following,
         * a round in which nothing moved anywhere and nothing is in flight is the end of this run:
         * every stream is caught up or waits for what only a later run can bring. */
        if (quiet && (sums[3] == 0 || (follow && sums[2] == 0)))
            return run_succeeded(replay, events_before);
        if (follow)
            continue; /* never a stall release: a wait may be for a value not shipped yet */
        if (quiet && sums[2] == 0 && earliest[0] != OTFX_TIME_MAX) {
            otfx_replay_release(replay, earliest[0]);
            replay->stats.stall_releases++;
        }
    }
}

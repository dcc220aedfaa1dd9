/* codec.h — the event encoding of otfx chunks (private). See docs/otfx-format.md, "Event encoding".
 *
 * A chunk's events are written as two byte streams: one token byte per event (event type in the low
 * nibble, a packed operand in the high nibble) and an operand stream (time delta and fields as
 * LEB128 varints). Keeping the tokens apart lets LZ4 find the repeating token patterns of iterative
 * codes, which the interleaved time deltas would otherwise break up. One table (codec.c) lists the
 * fields of every event type and drives both the encoder and the decoder (whose frequent types take
 * paths of their own in the table's order, for speed).
 */
#ifndef OTFX_CODEC_H
#define OTFX_CODEC_H

#include "otfx/trace.h"

/* Upper bound of the operand bytes of one event (time delta and the largest field list). */
#define CODEC_MAX_OPERAND_BYTES 80
/* Caches of recently used values; the token's high nibble names a slot, CODEC_ESCAPE says the
 * value follows explicitly in the operand stream. Regions: nibbles 0-7 name the last callees of the
 * region on top of the stack (call trees repeat), 8-14 the regions used last anywhere. Message
 * tuples: nibbles 0-14 name the last tuples used. All caches replace their oldest entry. */
#define CODEC_CACHE_SLOTS  15
#define CODEC_ESCAPE       15
#define CODEC_CALLEE_SLOTS 8
#define CODEC_CALLEE_ROWS  128
#define CODEC_RECENT_SLOTS (CODEC_CACHE_SLOTS - CODEC_CALLEE_SLOTS)

typedef struct codec_message {
    otfx_ref comm;
    uint32_t peer, tag;
    uint64_t bytes;
} codec_message;

/* A message's ordinal (otfx_event.u.msg.seq) is predicted from the last one of the same channel end in
 * the chunk: (comm, peer, tag, sending or receiving) seen before with ordinal n > 0 predicts n + 1,
 * otherwise 0. A tuple from the message cache costs nothing more when its ordinal is the prediction; an
 * explicit tuple carries the difference. The table is direct-mapped by a hash of the channel (a channel
 * another one pushed out predicts 0 again). */
#define CODEC_CHANNEL_SLOTS 64
typedef struct codec_channel {
    otfx_ref comm;
    uint32_t peer, tag;
    uint32_t end; /* 0: unused, 1: sends, 2: receives */
    uint64_t last_seq;
} codec_channel;

/* A collective's instance ordinal (otfx_event.u.coll.seq) is predicted from the last one of the same
 * communicator in the chunk: a COLL_BEGIN or NBC_COMPLETE after ordinal n > 0 predicts n + 1, a COLL_END
 * n (its begin's), otherwise 0. Direct-mapped by the communicator. */
#define CODEC_COMM_SLOTS 16
typedef struct codec_comm {
    otfx_ref comm;
    uint64_t last_seq; /* 0: unused */
} codec_comm;

/* A metric's value (otfx_event.u.metric.value) is coded as the zigzag difference to the last value of
 * the same metric in the chunk (0 before the first): counters read at every ENTER and LEAVE grow by a
 * little at a time. Direct-mapped by the metric (a metric another one pushed out predicts 0 again). */
#define CODEC_METRIC_SLOTS 16
typedef struct codec_metric {
    otfx_ref metric; /* OTFX_REF_NONE: unused */
    uint64_t last;
} codec_metric;
/* Time deltas are coded either as they are or, in predicted mode, as the difference to the delta seen
 * last time in the same situation: the same token (type and packed operand) with the same region on
 * top of the calling stack. In iterative codes the same call sequence repeats with similar timing and
 * the residuals are small; in noisy streams they are not. The encoder counts the bytes both modes
 * would take and the trace picks the cheaper one for the next chunk (CHUNK_PREDICTED_TIME). */
#define CODEC_PREDICTION_SLOTS 256

/* Encoder and decoder keep identical states; a chunk starts from codec_state_init(). */
typedef struct codec_state {
    otfx_time time; /* time of the previous event (the chunk's begin before the first) */
    bool predict_time;
    uint64_t time_bytes[2]; /* encoder only: time bytes as written [0] unpredicted, [1] predicted */
    otfx_time predicted_delta[CODEC_PREDICTION_SLOTS];
    uint64_t request;                                        /* previous request id */
    otfx_ref callees[CODEC_CALLEE_ROWS][CODEC_CALLEE_SLOTS]; /* OTFX_REF_NONE: unused */
    uint8_t next_callee_victim[CODEC_CALLEE_ROWS];
    otfx_ref regions[CODEC_RECENT_SLOTS];
    codec_message messages[CODEC_CACHE_SLOTS];
    codec_channel channels[CODEC_CHANNEL_SLOTS];
    codec_comm comms[CODEC_COMM_SLOTS];
    codec_metric metrics[CODEC_METRIC_SLOTS];
    uint8_t next_region_victim, next_message_victim;
    uint8_t regions_used, messages_used;
} codec_state;

void codec_state_init(codec_state *state, otfx_time begin, bool predict_time);

/* Encodes `event` (already validated: known type, time >= state->time) as one token and at most
 * CODEC_MAX_OPERAND_BYTES operand bytes at `operands`; returns the operand bytes written. `top` is
 * the region on top of the calling stack before the event (OTFX_REF_NONE if none). */
size_t codec_encode(codec_state *state, const otfx_event *event, otfx_ref top, uint8_t *token,
                    uint8_t *operands);

/* One open region: its enter time and the exclusive time accumulated while a walker runs. */
typedef struct call_frame {
    otfx_ref region;
    uint32_t entered_here; /* entered inside the chunk being walked (not taken from its context) */
    otfx_time enter;
    otfx_time exclusive;
} call_frame;

/* Decodes a payload, keeping the calling stack: it fills in each LEAVE's region and rejects a LEAVE
 * without an open region or an ENTER beyond OTFX_MAX_CALL_DEPTH. */
typedef struct event_cursor {
    codec_state codec;
    const uint8_t *tokens;
    const uint8_t *operands, *operands_end;
    uint32_t index, count;
    call_frame *frames; /* OTFX_MAX_CALL_DEPTH entries, starting with the context */
    uint32_t depth;
} event_cursor;

void event_cursor_init(event_cursor *cursor, otfx_time begin, bool predict_time, const uint8_t *tokens,
                       uint32_t count, const uint8_t *operands, size_t operand_bytes, call_frame *frames,
                       uint32_t depth);
/* The frame the last event, a LEAVE, closed: it stays just above the stack until the next event is
 * decoded (a LEAVE does not copy it). */
static inline call_frame *event_cursor_left(event_cursor *cursor)
{
    return &cursor->frames[cursor->depth];
}

/* 1: *event holds the next event; 0: the payload ended cleanly; -1: malformed payload. */
int event_cursor_next(event_cursor *cursor, otfx_event *event);
/* Up to `capacity` next events into `events` (what event_cursor_next would give one by one, in one
 * loop: the readers' bulk path); returns how many. *end: 1 when the payload may hold more, 0 when it
 * ended cleanly, -1 when it is malformed after the events returned. */
size_t event_cursor_decode(event_cursor *cursor, otfx_event *events, size_t capacity, int *end);

/* The class an event belongs to; `role` is the role of the region for ENTER and LEAVE. */
otfx_event_class codec_event_class(otfx_event_type type, otfx_region_role role);

/* LEB128 varints, shared by the chunk and summary layouts. */
static inline uint8_t *varint_put(uint8_t *out, uint64_t value)
{
    while (value >= 0x80) {
        *out++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *out++ = (uint8_t)value;
    return out;
}

/* Reads a varint of at most 10 bytes; false when truncated or longer than 64 bits. */
static inline bool varint_get(const uint8_t **in, const uint8_t *end, uint64_t *value)
{
    const uint8_t *p = *in;
    uint64_t result = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p == end)
            return false;
        uint8_t byte = *p++;
        if (shift == 63 && byte > 1)
            return false;
        result |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *in = p;
            *value = result;
            return true;
        }
    }
    return false;
}

static inline uint64_t zigzag_encode(int64_t value)
{
    return ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
}

static inline int64_t zigzag_decode(uint64_t value)
{
    return (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
}

#endif

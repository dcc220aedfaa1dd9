/* codec.c — table-driven encoder and decoder of single events. */
#include "codec.h"

#include <stddef.h>
#include <string.h>

typedef enum field_kind {
    FIELD_U32,          /* varint */
    FIELD_U32_OR_NONE,  /* varint of value + 1, so UINT32_MAX ("none") costs one byte */
    FIELD_U64,          /* varint */
    FIELD_S64,          /* zigzag varint */
    FIELD_REQUEST,      /* zigzag varint of the difference to the previous request id */
    FIELD_STRATEGY,     /* varint naming an otfx_reduction */
    FIELD_REGION,       /* packed: nibble = region cache slot, or escape and the ref as varint */
    FIELD_MESSAGE,      /* packed: nibble = message cache slot, or escape and comm, peer, tag, bytes and
                         * the zigzag difference of the ordinal (u.msg.seq) to its prediction; a cached
                         * tuple's ordinal is the prediction (codec.h, codec_channel) */
    FIELD_COLL_SEQ,     /* zigzag varint of the difference of u.coll.seq to its prediction (codec.h,
                         * codec_comm); after u.coll.comm */
    FIELD_METRIC_VALUE, /* zigzag varint of the difference of u.metric.value to the metric's last one
                         * (codec.h, codec_metric); after u.metric.metric */
} field_kind;

typedef struct field_layout {
    uint8_t kind;
    uint8_t offset; /* of the field inside otfx_event */
} field_layout;

#define MAX_FIELDS 7

typedef struct event_layout {
    const char *name;
    otfx_event_class event_class; /* of events without a region; ENTER/LEAVE take their region's */
    uint8_t field_count;
    field_layout fields[MAX_FIELDS]; /* a packed field, if any, comes first */
} event_layout;

#define FIELD(kind, member)                                                                                  \
    {                                                                                                        \
        kind, offsetof(otfx_event, member)                                                                   \
    }

/* The token keeps the type in its low nibble: a 17th type needs a new token layout (and format version). */
_Static_assert(OTFX_EV_TYPE_COUNT <= 16, "event types must fit the token's low nibble");

/* The record table: everything the encoder and decoder know about event types. The event cursor reads
 * the fields of ENTER, LEAVE, the four message types and the four request types without it, in the
 * table's order (token_actions): a change to those layouts changes the cursor too (tests/otfx/
 * test_codec.c round-trips every type). */
static const event_layout layouts[OTFX_EV_TYPE_COUNT] = {
    [OTFX_EV_ENTER] = {"enter", OTFX_CLASS_OTHER, 1, {FIELD(FIELD_REGION, u.region.region)}},
    [OTFX_EV_LEAVE] = {"leave", OTFX_CLASS_OTHER, 0, {{0, 0}}},
    [OTFX_EV_SEND] = {"send", OTFX_CLASS_MPI_P2P, 1, {FIELD(FIELD_MESSAGE, u.msg)}},
    [OTFX_EV_RECV] = {"recv", OTFX_CLASS_MPI_P2P, 1, {FIELD(FIELD_MESSAGE, u.msg)}},
    [OTFX_EV_ISEND] = {"isend",
                       OTFX_CLASS_MPI_P2P,
                       2,
                       {FIELD(FIELD_MESSAGE, u.msg), FIELD(FIELD_REQUEST, u.msg.request)}},
    [OTFX_EV_ISEND_COMPLETE] = {"isend complete",
                                OTFX_CLASS_MPI_P2P,
                                1,
                                {FIELD(FIELD_REQUEST, u.request.request)}},
    [OTFX_EV_IRECV_REQUEST] = {"irecv request",
                               OTFX_CLASS_MPI_P2P,
                               1,
                               {FIELD(FIELD_REQUEST, u.request.request)}},
    [OTFX_EV_IRECV] = {"irecv",
                       OTFX_CLASS_MPI_P2P,
                       2,
                       {FIELD(FIELD_MESSAGE, u.msg), FIELD(FIELD_REQUEST, u.msg.request)}},
    [OTFX_EV_REQUEST_CANCELLED] = {"request cancelled",
                                   OTFX_CLASS_MPI_P2P,
                                   1,
                                   {FIELD(FIELD_REQUEST, u.request.request)}},
    [OTFX_EV_COLL_BEGIN] = {"collective begin",
                            OTFX_CLASS_MPI_COLLECTIVE,
                            2,
                            {FIELD(FIELD_U32_OR_NONE, u.coll.comm), FIELD(FIELD_COLL_SEQ, u.coll.seq)}},
    [OTFX_EV_COLL_END] = {"collective end",
                          OTFX_CLASS_MPI_COLLECTIVE,
                          6,
                          {FIELD(FIELD_U32, u.coll.comm), FIELD(FIELD_U32, u.coll.op),
                           FIELD(FIELD_U32_OR_NONE, u.coll.root), FIELD(FIELD_U64, u.coll.sent),
                           FIELD(FIELD_U64, u.coll.received), FIELD(FIELD_COLL_SEQ, u.coll.seq)}},
    [OTFX_EV_METRIC] = {"metric",
                        OTFX_CLASS_OTHER,
                        2,
                        {FIELD(FIELD_U32, u.metric.metric), FIELD(FIELD_METRIC_VALUE, u.metric.value)}},
    [OTFX_EV_PHASE] = {"phase",
                       OTFX_CLASS_OTHER,
                       2,
                       {FIELD(FIELD_REGION, u.phase.region), FIELD(FIELD_S64, u.phase.value)}},
    [OTFX_EV_REDUCTION] = {"reduction",
                           OTFX_CLASS_OTHER,
                           4,
                           {FIELD(FIELD_STRATEGY, u.reduction.strategy), FIELD(FIELD_U64, u.reduction.begin),
                            FIELD(FIELD_U64, u.reduction.end), FIELD(FIELD_U64, u.reduction.events_removed)}},
    [OTFX_EV_NBC_REQUEST] = {"nonblocking collective request",
                             OTFX_CLASS_MPI_COLLECTIVE,
                             1,
                             {FIELD(FIELD_REQUEST, u.request.request)}},
    [OTFX_EV_NBC_COMPLETE] = {"nonblocking collective complete",
                              OTFX_CLASS_MPI_COLLECTIVE,
                              7,
                              {FIELD(FIELD_U32, u.coll.comm), FIELD(FIELD_U32, u.coll.op),
                               FIELD(FIELD_U32_OR_NONE, u.coll.root), FIELD(FIELD_U64, u.coll.sent),
                               FIELD(FIELD_U64, u.coll.received), FIELD(FIELD_REQUEST, u.coll.request),
                               FIELD(FIELD_COLL_SEQ, u.coll.seq)}},
};

const char *otfx_event_type_name(otfx_event_type type)
{
    if ((unsigned)type >= OTFX_EV_TYPE_COUNT)
        return "unknown";
    return layouts[type].name;
}

otfx_event_class codec_event_class(otfx_event_type type, otfx_region_role role)
{
    if (type != OTFX_EV_ENTER && type != OTFX_EV_LEAVE)
        return layouts[type].event_class;
    switch (role) {
    case OTFX_ROLE_USER_FUNCTION:
        return OTFX_CLASS_USER_FUNCTION;
    case OTFX_ROLE_MPI_P2P:
        return OTFX_CLASS_MPI_P2P;
    case OTFX_ROLE_MPI_COLLECTIVE:
        return OTFX_CLASS_MPI_COLLECTIVE;
    case OTFX_ROLE_MPI_OTHER:
        return OTFX_CLASS_MPI_OTHER;
    case OTFX_ROLE_PHASE:
    case OTFX_ROLE_COUNT:
        break;
    }
    return OTFX_CLASS_OTHER;
}

void codec_state_init(codec_state *state, otfx_time begin, bool predict_time)
{
    memset(state, 0, sizeof *state);
    memset(state->callees, 0xff, sizeof state->callees); /* OTFX_REF_NONE everywhere */
    for (unsigned i = 0; i < CODEC_METRIC_SLOTS; i++)
        state->metrics[i].metric = OTFX_REF_NONE;
    state->time = begin;
    state->predict_time = predict_time;
}

static uint32_t load_u32(const otfx_event *event, unsigned offset)
{
    uint32_t value;
    memcpy(&value, (const char *)event + offset, sizeof value);
    return value;
}

static uint64_t load_u64(const otfx_event *event, unsigned offset)
{
    uint64_t value;
    memcpy(&value, (const char *)event + offset, sizeof value);
    return value;
}

static void store_u32(otfx_event *event, unsigned offset, uint32_t value)
{
    memcpy((char *)event + offset, &value, sizeof value);
}

static void store_u64(otfx_event *event, unsigned offset, uint64_t value)
{
    memcpy((char *)event + offset, &value, sizeof value);
}

static inline unsigned callee_row(otfx_ref top)
{
    return (top * 0x9e3779b1u) >> 25; /* CODEC_CALLEE_ROWS = 128 rows */
}

static void callee_insert(codec_state *state, unsigned row, otfx_ref region)
{
    state->callees[row][state->next_callee_victim[row]] = region;
    state->next_callee_victim[row] = (uint8_t)((state->next_callee_victim[row] + 1) % CODEC_CALLEE_SLOTS);
}

static void recent_insert(codec_state *state, otfx_ref region)
{
    state->regions[state->next_region_victim] = region;
    state->next_region_victim = (uint8_t)((state->next_region_victim + 1) % CODEC_RECENT_SLOTS);
    if (state->regions_used < CODEC_RECENT_SLOTS)
        state->regions_used++;
}

/* The nibble naming `region` under `top` (CODEC_ESCAPE if cached nowhere), updating the caches the
 * same way region_lookup() does when decoding. */
static unsigned region_encode(codec_state *state, otfx_ref top, otfx_ref region)
{
    unsigned row = callee_row(top);
    for (unsigned slot = 0; slot < CODEC_CALLEE_SLOTS; slot++) {
        if (state->callees[row][slot] == region)
            return slot;
    }
    callee_insert(state, row, region);
    for (unsigned slot = 0; slot < state->regions_used; slot++) {
        if (state->regions[slot] == region)
            return CODEC_CALLEE_SLOTS + slot;
    }
    recent_insert(state, region);
    return CODEC_ESCAPE;
}

/* The region a nibble names (explicit: the varint read), or OTFX_REF_NONE if it names nothing. */
static inline otfx_ref region_decode(codec_state *state, otfx_ref top, unsigned nibble,
                                     otfx_ref explicit_region)
{
    unsigned row = callee_row(top);
    if (nibble < CODEC_CALLEE_SLOTS)
        return state->callees[row][nibble];
    otfx_ref region;
    if (nibble == CODEC_ESCAPE) {
        region = explicit_region;
        recent_insert(state, region);
    } else if (nibble - CODEC_CALLEE_SLOTS < state->regions_used) {
        region = state->regions[nibble - CODEC_CALLEE_SLOTS];
    } else {
        return OTFX_REF_NONE;
    }
    callee_insert(state, row, region);
    return region;
}

static bool message_equal(const codec_message *a, const codec_message *b)
{
    return a->comm == b->comm && a->peer == b->peer && a->tag == b->tag && a->bytes == b->bytes;
}

static unsigned message_slot(codec_state *state, const codec_message *message)
{
    for (unsigned slot = 0; slot < state->messages_used; slot++) {
        if (message_equal(&state->messages[slot], message))
            return slot;
    }
    return CODEC_ESCAPE;
}

static void message_insert(codec_state *state, const codec_message *message)
{
    state->messages[state->next_message_victim] = *message;
    state->next_message_victim = (uint8_t)((state->next_message_victim + 1) % CODEC_CACHE_SLOTS);
    if (state->messages_used < CODEC_CACHE_SLOTS)
        state->messages_used++;
}

/* The channel end of a message event (sends and receives of one channel are counted apart) and its
 * slot in the channel table. */
static inline unsigned channel_slot(const otfx_event *event, uint32_t *end)
{
    *end = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND ? 1u : 2u;
    uint32_t hash = event->u.msg.comm * 0x9e3779b1u ^ event->u.msg.peer * 0x85ebca6bu ^
                    event->u.msg.tag * 0xc2b2ae35u ^ *end * 0x27d4eb2fu;
    return (hash ^ hash >> 15) % CODEC_CHANNEL_SLOTS;
}

/* The ordinal the decoder will expect for `event` (its comm, peer and tag already known). */
static uint64_t seq_prediction(const codec_state *state, const otfx_event *event)
{
    uint32_t end;
    const codec_channel *channel = &state->channels[channel_slot(event, &end)];
    if (channel->end == end && channel->comm == event->u.msg.comm && channel->peer == event->u.msg.peer &&
        channel->tag == event->u.msg.tag && channel->last_seq != 0)
        return channel->last_seq + 1;
    return 0;
}

static void seq_seen(codec_state *state, const otfx_event *event)
{
    uint32_t end;
    codec_channel *channel = &state->channels[channel_slot(event, &end)];
    *channel = (codec_channel){event->u.msg.comm, event->u.msg.peer, event->u.msg.tag, end, event->u.msg.seq};
}

static codec_comm *comm_slot(codec_state *state, otfx_ref comm)
{
    uint32_t hash = comm * 0x9e3779b1u;
    return &state->comms[(hash ^ hash >> 15) % CODEC_COMM_SLOTS];
}

/* The ordinal the decoder will expect for the collective `event` (its comm already known). */
static uint64_t coll_seq_prediction(codec_state *state, const otfx_event *event)
{
    const codec_comm *slot = comm_slot(state, event->u.coll.comm);
    if (slot->last_seq == 0 || slot->comm != event->u.coll.comm)
        return 0;
    return event->type == OTFX_EV_COLL_END ? slot->last_seq : slot->last_seq + 1;
}

static void coll_seq_seen(codec_state *state, const otfx_event *event)
{
    *comm_slot(state, event->u.coll.comm) = (codec_comm){event->u.coll.comm, event->u.coll.seq};
}

/* The metric's slot: its last value predicts the next (the metric already known). */
static codec_metric *metric_slot(codec_state *state, otfx_ref metric)
{
    return &state->metrics[(metric * 0x9e3779b1u) >> 28]; /* CODEC_METRIC_SLOTS = 16 */
}

static uint64_t metric_prediction(codec_state *state, otfx_ref metric)
{
    const codec_metric *slot = metric_slot(state, metric);
    return slot->metric == metric ? slot->last : 0;
}

static unsigned varint_length(uint64_t value)
{
    return value < 0x80 ? 1 : (70u - (unsigned)__builtin_clzll(value)) / 7;
}

static inline unsigned prediction_slot(otfx_ref top, unsigned token)
{
    uint32_t hash = top * 0x9e3779b1u + token * 0x85ebca6bu;
    return hash >> 24;
}

/* The nibble of a packed first field (updating the cache it names a slot of), 0 for other types. */
static unsigned packed_nibble(codec_state *state, const otfx_event *event, otfx_ref top,
                              const event_layout *layout)
{
    if (layout->field_count == 0)
        return 0;
    const field_layout *field = &layout->fields[0];
    if (field->kind == FIELD_REGION)
        return region_encode(state, top, load_u32(event, field->offset));
    if (field->kind == FIELD_MESSAGE) {
        codec_message message = {event->u.msg.comm, event->u.msg.peer, event->u.msg.tag, event->u.msg.bytes};
        unsigned nibble = message_slot(state, &message);
        /* A cached tuple stands for the predicted ordinal only: any other goes explicitly. */
        if (nibble != CODEC_ESCAPE && event->u.msg.seq != seq_prediction(state, event))
            nibble = CODEC_ESCAPE;
        if (nibble == CODEC_ESCAPE)
            message_insert(state, &message);
        return nibble;
    }
    return 0;
}

/* Operands: the time value first, then the fields in table order (a packed field only when its
 * nibble is CODEC_ESCAPE). The time value's prediction slot depends on the token, so the nibble is
 * settled first. */
size_t codec_encode(codec_state *state, const otfx_event *event, otfx_ref top, uint8_t *token,
                    uint8_t *operands)
{
    const event_layout *layout = &layouts[event->type];
    unsigned nibble = packed_nibble(state, event, top, layout);
    *token = (uint8_t)(event->type | nibble << 4);
    unsigned slot = prediction_slot(top, *token);
    otfx_time delta = event->time - state->time;
    uint64_t residual = zigzag_encode((int64_t)(delta - state->predicted_delta[slot]));
    state->predicted_delta[slot] = delta;
    state->time = event->time;
    state->time_bytes[0] += varint_length(delta);
    state->time_bytes[1] += varint_length(residual);
    uint8_t *out = varint_put(operands, state->predict_time ? residual : delta);
    for (unsigned i = 0; i < layout->field_count; i++) {
        const field_layout *field = &layout->fields[i];
        switch ((field_kind)field->kind) {
        case FIELD_U32:
        case FIELD_STRATEGY:
            out = varint_put(out, load_u32(event, field->offset));
            break;
        case FIELD_U32_OR_NONE:
            out = varint_put(out, (uint64_t)load_u32(event, field->offset) + 1);
            break;
        case FIELD_U64:
            out = varint_put(out, load_u64(event, field->offset));
            break;
        case FIELD_S64:
            out = varint_put(out, zigzag_encode((int64_t)load_u64(event, field->offset)));
            break;
        case FIELD_REQUEST: {
            uint64_t request = load_u64(event, field->offset);
            out = varint_put(out, zigzag_encode((int64_t)(request - state->request)));
            state->request = request;
            break;
        }
        case FIELD_COLL_SEQ:
            out = varint_put(out,
                             zigzag_encode((int64_t)(event->u.coll.seq - coll_seq_prediction(state, event))));
            coll_seq_seen(state, event);
            break;
        case FIELD_METRIC_VALUE:
            out = varint_put(out, zigzag_encode((int64_t)(event->u.metric.value -
                                                          metric_prediction(state, event->u.metric.metric))));
            *metric_slot(state, event->u.metric.metric) =
                (codec_metric){event->u.metric.metric, event->u.metric.value};
            break;
        case FIELD_REGION:
            if (nibble == CODEC_ESCAPE)
                out = varint_put(out, load_u32(event, field->offset));
            break;
        case FIELD_MESSAGE:
            if (nibble == CODEC_ESCAPE) {
                out = varint_put(out, event->u.msg.comm);
                out = varint_put(out, event->u.msg.peer);
                out = varint_put(out, event->u.msg.tag);
                out = varint_put(out, event->u.msg.bytes);
                out = varint_put(out,
                                 zigzag_encode((int64_t)(event->u.msg.seq - seq_prediction(state, event))));
            }
            seq_seen(state, event);
            break;
        }
    }
    return (size_t)(out - operands);
}

/* The decoder's helpers are inlined into the cursor's loop: a call per field costs more than the field. */
#define DECODE_INLINE static inline __attribute__((always_inline))

/* Most operands are one or two bytes: those without a loop, the rest as varint_get reads them. */
DECODE_INLINE bool get_varint(const uint8_t **in, const uint8_t *end, uint64_t *value)
{
    const uint8_t *p = *in;
    if (end - p >= 2) {
        if (p[0] < 0x80) {
            *value = p[0];
            *in = p + 1;
            return true;
        }
        if (p[1] < 0x80) {
            *value = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            *in = p + 2;
            return true;
        }
    }
    return varint_get(in, end, value);
}

DECODE_INLINE bool get_u32(const uint8_t **in, const uint8_t *end, uint32_t *value)
{
    uint64_t wide;
    if (!get_varint(in, end, &wide) || wide > UINT32_MAX)
        return false;
    *value = (uint32_t)wide;
    return true;
}

DECODE_INLINE bool decode_request(codec_state *state, const uint8_t **in, const uint8_t *end,
                                  uint64_t *request)
{
    uint64_t wide;
    if (!get_varint(in, end, &wide))
        return false;
    state->request += (uint64_t)zigzag_decode(wide);
    *request = state->request;
    return true;
}

DECODE_INLINE bool decode_region(codec_state *state, otfx_ref top, unsigned nibble, const uint8_t **in,
                                 const uint8_t *end, otfx_ref *region)
{
    uint32_t narrow = OTFX_REF_NONE;
    if (nibble == CODEC_ESCAPE && !get_u32(in, end, &narrow))
        return false;
    *region = region_decode(state, top, nibble, narrow);
    return *region != OTFX_REF_NONE;
}

/* A message's tuple (cached or explicit) and its ordinal; the event's other fields are zero. */
DECODE_INLINE bool decode_message(codec_state *state, unsigned nibble, const uint8_t **in, const uint8_t *end,
                                  otfx_event *event)
{
    codec_message message;
    uint64_t residual = 0;
    if (nibble == CODEC_ESCAPE) {
        if (!get_u32(in, end, &message.comm) || !get_u32(in, end, &message.peer) ||
            !get_u32(in, end, &message.tag) || !get_varint(in, end, &message.bytes) ||
            !get_varint(in, end, &residual))
            return false;
        message_insert(state, &message);
    } else if (nibble < state->messages_used) {
        message = state->messages[nibble];
    } else {
        return false;
    }
    event->u.msg.comm = message.comm;
    event->u.msg.peer = message.peer;
    event->u.msg.tag = message.tag;
    event->u.msg.bytes = message.bytes;
    /* seq_prediction and seq_seen on one slot */
    uint32_t end_kind;
    codec_channel *channel = &state->channels[channel_slot(event, &end_kind)];
    uint64_t predicted = channel->end == end_kind && channel->comm == message.comm &&
                                 channel->peer == message.peer && channel->tag == message.tag &&
                                 channel->last_seq != 0
                             ? channel->last_seq + 1
                             : 0;
    event->u.msg.seq = predicted + (uint64_t)zigzag_decode(residual);
    *channel = (codec_channel){message.comm, message.peer, message.tag, end_kind, event->u.msg.seq};
    return true;
}

/* The fields of the rarer types, driven by the record table. */
static bool decode_fields(codec_state *state, const event_layout *layout, unsigned nibble, otfx_ref top,
                          const uint8_t **operands, const uint8_t *operands_end, otfx_event *event)
{
    const uint8_t *in = *operands;
    for (unsigned i = 0; i < layout->field_count; i++) {
        const field_layout *field = &layout->fields[i];
        uint64_t wide;
        uint32_t narrow;
        switch ((field_kind)field->kind) {
        case FIELD_U32:
            if (!get_u32(&in, operands_end, &narrow))
                return false;
            store_u32(event, field->offset, narrow);
            break;
        case FIELD_U32_OR_NONE:
            if (!get_varint(&in, operands_end, &wide) || wide == 0 || wide > (uint64_t)UINT32_MAX + 1)
                return false;
            store_u32(event, field->offset, (uint32_t)(wide - 1));
            break;
        case FIELD_U64:
            if (!get_varint(&in, operands_end, &wide))
                return false;
            store_u64(event, field->offset, wide);
            break;
        case FIELD_S64:
            if (!get_varint(&in, operands_end, &wide))
                return false;
            store_u64(event, field->offset, (uint64_t)zigzag_decode(wide));
            break;
        case FIELD_REQUEST:
            if (!decode_request(state, &in, operands_end, &wide))
                return false;
            store_u64(event, field->offset, wide);
            break;
        case FIELD_COLL_SEQ:
            if (!get_varint(&in, operands_end, &wide))
                return false;
            event->u.coll.seq = coll_seq_prediction(state, event) + (uint64_t)zigzag_decode(wide);
            coll_seq_seen(state, event);
            break;
        case FIELD_METRIC_VALUE:
            if (!varint_get(&in, operands_end, &wide))
                return false;
            event->u.metric.value =
                metric_prediction(state, event->u.metric.metric) + (uint64_t)zigzag_decode(wide);
            *metric_slot(state, event->u.metric.metric) =
                (codec_metric){event->u.metric.metric, event->u.metric.value};
            break;
        case FIELD_STRATEGY:
            if (!get_u32(&in, operands_end, &narrow) || narrow >= OTFX_REDUCE_COUNT)
                return false;
            store_u32(event, field->offset, narrow);
            break;
        case FIELD_REGION:
            if (!decode_region(state, top, nibble, &in, operands_end, &narrow))
                return false;
            store_u32(event, field->offset, narrow);
            break;
        case FIELD_MESSAGE:
            if (!decode_message(state, nibble, &in, operands_end, event))
                return false;
            break;
        }
    }
    *operands = in;
    return true;
}

/* What the decoder does for a token (type in the low nibble, packed operand in the high one): one
 * lookup stands for the checks of the type and of the nibble and for the dispatch on the type. A nibble
 * a type does not use must be zero (keeps every event's encoding unique): the tokens with another one
 * are ACTION_INVALID. ENTER, LEAVE, the four message types and the four request types are decoded without
 * the record table, in its order: a change to those layouts changes the actions too (tests/otfx/
 * test_codec.c round-trips every type); the other types go through the table (decode_fields), PHASE
 * with its packed region. */
typedef enum token_action {
    ACTION_INVALID,
    ACTION_ENTER,
    ACTION_LEAVE,
    ACTION_MESSAGE,
    ACTION_MESSAGE_REQUEST,
    ACTION_REQUEST,
    ACTION_FIELDS,
} token_action;

#define TOKEN_ACTION(type, nibble)                                                                           \
    ((type) >= OTFX_EV_TYPE_COUNT                         ? ACTION_INVALID                                   \
     : (type) == OTFX_EV_ENTER                            ? ACTION_ENTER                                     \
     : (type) == OTFX_EV_SEND || (type) == OTFX_EV_RECV   ? ACTION_MESSAGE                                   \
     : (type) == OTFX_EV_ISEND || (type) == OTFX_EV_IRECV ? ACTION_MESSAGE_REQUEST                           \
     : (nibble) != 0 && (type) != OTFX_EV_PHASE           ? ACTION_INVALID                                   \
     : (type) == OTFX_EV_LEAVE                            ? ACTION_LEAVE                                     \
     : (type) == OTFX_EV_ISEND_COMPLETE || (type) == OTFX_EV_IRECV_REQUEST ||                                \
             (type) == OTFX_EV_REQUEST_CANCELLED || (type) == OTFX_EV_NBC_REQUEST                            \
         ? ACTION_REQUEST                                                                                    \
         : ACTION_FIELDS)
#define TOKEN_ACTIONS_OF_NIBBLE(n)                                                                           \
    TOKEN_ACTION(0, n), TOKEN_ACTION(1, n), TOKEN_ACTION(2, n), TOKEN_ACTION(3, n), TOKEN_ACTION(4, n),      \
        TOKEN_ACTION(5, n), TOKEN_ACTION(6, n), TOKEN_ACTION(7, n), TOKEN_ACTION(8, n), TOKEN_ACTION(9, n),  \
        TOKEN_ACTION(10, n), TOKEN_ACTION(11, n), TOKEN_ACTION(12, n), TOKEN_ACTION(13, n),                  \
        TOKEN_ACTION(14, n), TOKEN_ACTION(15, n)

static const uint8_t token_actions[256] = {
    TOKEN_ACTIONS_OF_NIBBLE(0),  TOKEN_ACTIONS_OF_NIBBLE(1),  TOKEN_ACTIONS_OF_NIBBLE(2),
    TOKEN_ACTIONS_OF_NIBBLE(3),  TOKEN_ACTIONS_OF_NIBBLE(4),  TOKEN_ACTIONS_OF_NIBBLE(5),
    TOKEN_ACTIONS_OF_NIBBLE(6),  TOKEN_ACTIONS_OF_NIBBLE(7),  TOKEN_ACTIONS_OF_NIBBLE(8),
    TOKEN_ACTIONS_OF_NIBBLE(9),  TOKEN_ACTIONS_OF_NIBBLE(10), TOKEN_ACTIONS_OF_NIBBLE(11),
    TOKEN_ACTIONS_OF_NIBBLE(12), TOKEN_ACTIONS_OF_NIBBLE(13), TOKEN_ACTIONS_OF_NIBBLE(14),
    TOKEN_ACTIONS_OF_NIBBLE(15),
};

/* ---- the event cursor ---- */

void event_cursor_init(event_cursor *cursor, otfx_time begin, bool predict_time, const uint8_t *tokens,
                       uint32_t count, const uint8_t *operands, size_t operand_bytes, call_frame *frames,
                       uint32_t depth)
{
    codec_state_init(&cursor->codec, begin, predict_time);
    cursor->tokens = tokens;
    cursor->operands = operands;
    cursor->operands_end = operands + operand_bytes;
    cursor->index = 0;
    cursor->count = count;
    cursor->frames = frames;
    cursor->depth = depth;
}

/* The cursor's loop, inlined into both entry points: with a capacity of one (event_cursor_next, the
 * walkers' one event at a time) the compiler drops the loop's setup. */
DECODE_INLINE size_t cursor_decode(event_cursor *cursor, otfx_event *events, size_t capacity, int *end)
{
    codec_state *state = &cursor->codec;
    const uint8_t *in = cursor->operands;
    const uint8_t *const operands_end = cursor->operands_end;
    call_frame *frames = cursor->frames;
    uint32_t depth = cursor->depth;
    const bool predict_time = state->predict_time;
    otfx_time time = state->time;
    /* One pointer walks the tokens up to the payload's end or the caller's capacity, whichever comes
     * first: the loop keeps fewer values live (its helpers are inlined into it). */
    const uint8_t *const tokens_end = cursor->tokens + cursor->count;
    const uint8_t *token_at = cursor->tokens + cursor->index;
    const uint8_t *const stop = capacity < (size_t)(tokens_end - token_at) ? token_at + capacity : tokens_end;
    otfx_event *event = events;
    *end = 1;
    /* the region on top of the stack, changed only by ENTER and LEAVE */
    otfx_ref top = depth ? frames[depth - 1].region : OTFX_REF_NONE;
    for (; token_at != stop; token_at++, event++) {
        const unsigned token = *token_at;
        const uint8_t action = token_actions[token];
        uint64_t delta;
        if (action == ACTION_INVALID || !get_varint(&in, operands_end, &delta))
            goto malformed;
        if (predict_time) {
            /* the prediction table is read and kept only in a chunk of predicted times */
            unsigned slot = prediction_slot(top, token);
            delta = state->predicted_delta[slot] + (uint64_t)zigzag_decode(delta);
            state->predicted_delta[slot] = delta;
        }
        if (__builtin_add_overflow(time, delta, &time)) /* OTFX_TIME_MAX is UINT64_MAX */
            goto malformed;
        memset(event, 0, sizeof *event);
        event->type = (otfx_event_type)(token & 0x0f);
        event->time = time;
        switch ((token_action)action) {
        case ACTION_ENTER:
            if (!decode_region(state, top, token >> 4, &in, operands_end, &event->u.region.region) ||
                depth == OTFX_MAX_CALL_DEPTH)
                goto malformed;
            top = event->u.region.region;
            frames[depth++] = (call_frame){top, 1, time, 0};
            break;
        case ACTION_LEAVE:
            if (depth == 0)
                goto malformed;
            event->u.region.region = frames[--depth].region;
            top = depth ? frames[depth - 1].region : OTFX_REF_NONE;
            break;
        case ACTION_MESSAGE:
            if (!decode_message(state, token >> 4, &in, operands_end, event))
                goto malformed;
            break;
        case ACTION_MESSAGE_REQUEST:
            if (!decode_message(state, token >> 4, &in, operands_end, event) ||
                !decode_request(state, &in, operands_end, &event->u.msg.request))
                goto malformed;
            break;
        case ACTION_REQUEST:
            if (!decode_request(state, &in, operands_end, &event->u.request.request))
                goto malformed;
            break;
        case ACTION_FIELDS:
            if (!decode_fields(state, &layouts[token & 0x0f], token >> 4, top, &in, operands_end, event))
                goto malformed;
            break;
        default:
            __builtin_unreachable(); /* ACTION_INVALID left above */
        }
        continue;
    malformed:
        *end = -1;
        break;
    }
    const size_t n = (size_t)(event - events);
    if (*end == 1 && token_at == tokens_end && n < capacity)
        *end = in == operands_end ? 0 : -1;
    /* a rejected event leaves the time and position of the last one handed out */
    if (n)
        state->time = events[n - 1].time;
    cursor->operands = in;
    cursor->index = (uint32_t)(token_at - cursor->tokens);
    cursor->depth = depth;
    return n;
}

size_t event_cursor_decode(event_cursor *cursor, otfx_event *events, size_t capacity, int *end)
{
    return cursor_decode(cursor, events, capacity, end);
}

int event_cursor_next(event_cursor *cursor, otfx_event *event)
{
    int end;
    return cursor_decode(cursor, event, 1, &end) ? 1 : end;
}

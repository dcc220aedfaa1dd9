/* replay_internal.h — private to tbon/src/replay: the state of a replay (otfx/replay.h) shared by its
 * parts: table.c (hash tables), streams.c (reading traces in slices), replay.c (the dependencies and
 * advance), wire.c (values and watermarks between places, otfx_replay_run). */
#ifndef OTFX_REPLAY_INTERNAL_H
#define OTFX_REPLAY_INTERNAL_H

#include <otfx/replay.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- open-addressing hash table with fixed-size keys (whole uint64_t words) and payloads ---------- */
typedef struct replay_table {
    size_t key_words, payload_size, entry_size;
    size_t capacity, count; /* capacity a power of two (0: nothing allocated) */
    unsigned char *entries; /* each: uint64_t hash (0: empty), key words, payload */
} replay_table;

void replay_table_init(replay_table *table, size_t key_words, size_t payload_size);
void replay_table_free(replay_table *table);
/* The payload of `key`, or NULL. */
void *replay_table_find(const replay_table *table, const uint64_t *key);
/* The payload of `key`, inserted zeroed when new (*inserted); NULL when out of memory. */
void *replay_table_insert(replay_table *table, const uint64_t *key, bool *inserted);
void replay_table_remove(replay_table *table, const uint64_t *key);
/* Visits every payload (with its key); the table must not change meanwhile. */
void replay_table_each(const replay_table *table, void (*fn)(void *user, const uint64_t *key, void *payload),
                       void *user);

/* ---- the messages in flight: message key (4 words) → the send's value ------------------------------
 * Every message is inserted once and taken once, so the table is built for that: slots of 48 bytes
 * (hash, key, the value's index) that backward-shift deletion moves cheaply, and the values apart in a
 * pool whose places are reused, so a value is written once and read in place. */
typedef struct message_slot {
    uint64_t hash; /* 0: empty */
    uint64_t key[4];
    uint32_t value; /* its place in the pool */
    uint32_t remote;
} message_slot;

typedef struct message_table {
    size_t value_size, value_stride; /* stride: a multiple of REPLAY_VALUE_ALIGN */
    size_t capacity, count;          /* capacity a power of two (0: nothing allocated) */
    message_slot *slots;
    unsigned char *pool; /* pool_capacity values */
    uint32_t pool_capacity, pool_used;
    uint32_t *free_values; /* places of the pool given back, reused first */
    uint32_t free_count, free_capacity;
} message_table;

void message_table_init(message_table *table, size_t value_size);
void message_table_free(message_table *table);
/* Stores the value of `key` (replacing it when the key is there already). False when out of memory. */
bool message_table_insert(message_table *table, const uint64_t *key, const void *value, bool remote);
/* Removes `key` and says where its value is (*value, valid until message_table_release and no insert
 * meanwhile) and whether it came from another place; false when absent. */
bool message_table_take(message_table *table, const uint64_t *key, uint32_t *value, bool *remote);
static inline const void *message_table_value(const message_table *table, uint32_t value)
{
    return table->pool + (size_t)value * table->value_stride;
}
/* Gives a taken value's place back. */
void message_table_release(message_table *table, uint32_t value);

/* ---- streams ------------------------------------------------------------------------------------- */

/* A blocking send whose value waits for the end of its call (send_ended). */
/* Values handed to a pass are aligned as any scalar type a pass may put in them. */
#define REPLAY_VALUE_ALIGN 16

typedef struct pending_send {
    _Alignas(REPLAY_VALUE_ALIGN) unsigned char value[OTFX_REPLAY_MAX_VALUE];
    bool active;
    uint32_t depth; /* the region depth at the SEND: its LEAVE ends the call */
    otfx_time time;
    uint64_t key[4];
    uint32_t receiver;
} pending_send;

/* A nonblocking collective started (NBC_REQUEST) whose instance its completion names later. */
typedef struct pending_nbc {
    _Alignas(REPLAY_VALUE_ALIGN) unsigned char value[OTFX_REPLAY_MAX_VALUE];
    uint64_t request;
    otfx_time time;
    bool published; /* its completion was found ahead and the arrival published (replay.c) */
    bool looked_up; /* searched ahead for its completion already */
} pending_nbc;

typedef struct replay_stream {
    otfx_replay_stream public;
    otfx_trace *trace;
    otfx_trace_reader *reader; /* open from the first slice until the stream is exhausted; with
                                * decode_ahead only the decoder thread uses it */
    /* The slice buffer: events [pos, count) not processed yet. */
    otfx_event *events;
    size_t count, pos, capacity;
    bool sliced;           /* a first slice (with context) was read */
    bool exhausted;        /* the last slice reached the window's end (follow: what is held now) */
    bool done;             /* finished: every event processed */
    bool follow;           /* the end of what is held is not the stream's end (config.follow) */
    bool announced;        /* the event at pos went to pass->event already */
    bool arrival_sent;     /* the completion at pos published this member's own arrival already */
    bool released;         /* otfx_replay_release covers the wait at pos */
    bool waiting;          /* the event at pos waits for a value */
    otfx_time resume_time; /* the latest time delivered so far */
    uint64_t resume_skip;  /* events at resume_time delivered so far */
    bool seen_held;        /* an event was processed (the leading edge is checked at the first) */
    otfx_time last_time;
    uint32_t depth;
    pending_send send;
    pending_nbc *nbc;
    size_t nbc_count, nbc_capacity;
    /* The last blocking collective started here (its COLL_END publishes a missing arrival otherwise). */
    otfx_ref begin_comm;
    uint64_t begin_seq;
    /* This member's own arrival at the collective it completes (the pass's value[self]). */
    _Alignas(REPLAY_VALUE_ALIGN) unsigned char own_arrival[OTFX_REPLAY_MAX_VALUE];
    bool own_arrival_known;
    void *state;
    /* Decode ahead: the next slice, filled by the decoder thread between a request and `ahead_ready`
     * (both under the replay's ahead.lock); the rest only the replay's thread touches. */
    otfx_event *ahead_events;
    size_t ahead_count;
    bool ahead_requested, ahead_ready;
    otfx_status ahead_status;
    char ahead_error[192];
} replay_stream;

/* The decoder thread of decode_ahead: streams ask for their next slice in a queue, in the order they
 * will need them. */
typedef struct decode_ahead {
    bool started, stop;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;   /* the decoder: a request or stop */
    pthread_cond_t done;   /* the replay: a slice is ready */
    replay_stream **queue; /* a ring of stream_count entries: a stream asks once at a time */
    size_t queue_head, queue_count, queue_capacity;
} decode_ahead;

/* ---- ranks and communicators -------------------------------------------------------------------- */

typedef struct replay_rank {
    uint32_t *streams; /* indices of its local streams */
    uint32_t stream_count;
    bool selected;
    /* Why the rank can never provide a value (OTFX_REPLAY_SEEN: it may). */
    otfx_replay_missing absent;
    otfx_time remote_watermark; /* ranks served by another place: the latest watermark it sent */
    otfx_time sent_watermark;   /* local ranks: the watermark last sent to the other places */
    bool watermark_sent;
} replay_rank;

typedef struct replay_comm {
    bool resolved;
    uint64_t id; /* global identity: a hash of name and members */
    uint32_t size;
    const uint32_t *members;
    uint32_t *sorted;       /* pairs (world rank, communicator rank) sorted by world rank, for lookups */
    uint32_t local_members; /* members with local streams */
    uint32_t *places;       /* the other places serving members (once routed) */
    uint32_t place_n;
    bool places_known;
} replay_comm;

/* A collective instance's arrivals. */
enum { SLOT_UNKNOWN = 0, SLOT_VALUE, SLOT_MISSING };
typedef struct replay_instance {
    uint32_t size;
    uint32_t local_left; /* local member completions still to come (UINT32_MAX: unknown) */
    size_t stride;       /* bytes per member's value, a multiple of REPLAY_VALUE_ALIGN */
    unsigned char *state, *why, *values;
} replay_instance;

/* An outgoing value not yet routed to a place (routing needs place_of_rank, given to take_outgoing). */
enum { WIRE_MESSAGE = 1, WIRE_ARRIVAL = 2, WIRE_WATERMARK = 3 };
typedef struct outgoing_value {
    uint8_t kind;
    uint8_t missing;
    uint32_t route; /* WIRE_MESSAGE: receiver world rank; WIRE_ARRIVAL: local communicator ref */
    uint64_t key[4];
    unsigned char value[OTFX_REPLAY_MAX_VALUE];
} outgoing_value;

typedef struct byte_buffer {
    unsigned char *data;
    size_t length, capacity;
    bool failed;
} byte_buffer;

struct otfx_replay {
    otfx_replay_config config;
    otfx_replay_pass pass;
    otfx_defs *defs;
    otfx_time tolerance;
    size_t value_size;

    replay_stream **streams;
    uint32_t stream_count, stream_capacity;
    decode_ahead ahead;
    replay_rank *ranks; /* app_ranks */

    replay_comm *comms;
    uint32_t comm_count;
    replay_table comm_by_id; /* id → local ref */
    message_table messages;  /* message key (4 words) → the send's value */
    replay_table instances;  /* (comm id, seq) → replay_instance * */
    uint64_t sends_unserved; /* sends whose receiver no place serves or the query does not select */

    /* The places (known once run or take_outgoing gave place_of_rank). */
    bool placed;
    uint32_t self;
    uint32_t place_count;
    uint32_t (*place_of_rank)(void *context, uint32_t rank);
    void *place_context;
    outgoing_value *outgoing;
    size_t outgoing_count, outgoing_capacity;
    byte_buffer *to_place; /* place_count batches being built */
    bool *place_serves;    /* place_count: the place serves some rank (it gets the watermarks) */
    uint64_t batches_sent, batches_received;

    /* Scratch for completions. */
    const void **coll_values;
    otfx_replay_missing *coll_missing;
    uint32_t coll_capacity;

    bool failed;
    otfx_status fail_status;
    char error[256];
    otfx_replay_stats stats;
};

/* streams.c */
/* Makes events[pos] available: reads the next slice when the buffer is used up. False: the stream has
 * no more events (exhausted) or the read failed (replay->failed). */
bool replay_stream_fill(otfx_replay *replay, replay_stream *stream);
/* Lets go of the stream's reader (its decoded chunk and context). */
void replay_stream_close_reader(replay_stream *stream);
/* Stops and joins the decoder thread of decode_ahead (nothing when it never started); its requests not
 * served yet are dropped. */
void replay_ahead_stop(otfx_replay *replay);
/* The time of the stream's next unprocessed event, held back by values it has not handed over yet. */
otfx_time replay_stream_watermark(const replay_stream *stream);

/* replay.c */
/* A follow replay's next run: the streams read on from where they stopped. */
void replay_follow_resume(otfx_replay *replay);
/* After a follow run: frees the read buffers of the streams that do not wait. */
void replay_follow_rest(otfx_replay *replay);
otfx_time replay_rank_watermark(const otfx_replay *replay, uint32_t rank);
replay_comm *replay_comm_get(otfx_replay *replay, otfx_ref ref);
/* The local ref of a communicator by identity (OTFX_REF_NONE when this place's definitions lack it). */
otfx_ref replay_comm_by_id(otfx_replay *replay, uint64_t id);
/* Stores an arrival (a member's value or why it has none) in the instance table. */
bool replay_store_arrival(otfx_replay *replay, uint64_t comm_id, uint64_t seq, uint32_t member, uint32_t size,
                          otfx_replay_missing missing, const void *value);
void replay_fail(otfx_replay *replay, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* wire.c */
bool replay_queue_outgoing(otfx_replay *replay, const outgoing_value *value);
void replay_set_places(otfx_replay *replay, uint32_t (*place_of_rank)(void *context, uint32_t rank),
                       void *context, uint32_t self);

#endif

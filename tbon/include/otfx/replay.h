/*
 * otfx/replay.h — a replay of the held traces in happened-before order, the common machinery of the
 * analyses that follow values along the program's dependencies (critical path, wait states, overhead
 * compensation). Part of library otfx_analysis; no MPI.
 *
 * The event places hold every event of the ranks they serve and see every message from both ends. A
 * replay walks each held stream (one location: a thread of a rank) in its own order, and hands a value
 * computed at a message's send to the message's receive, and the values of a collective's members to
 * the members that depend on them:
 *
 *   - point-to-point: a receive (RECV, IRECV) depends on its send (SEND, ISEND); the two ends are one
 *     message by (communicator, sender, receiver, tag, ordinal) (otfx_event.u.msg.seq);
 *   - collectives: by instance (communicator, ordinal) (otfx_event.u.coll.seq). A member arrives at its
 *     COLL_BEGIN (a nonblocking one at its NBC_REQUEST) and completes at its COLL_END (NBC_COMPLETE).
 *     An NBC_REQUEST does not name its instance: its arrival goes out at its completion, or earlier
 *     when the stream has to wait in between (it looks ahead in its own events for the completion),
 *     so point-to-point traffic between the start and the Wait cannot hold the other members back.
 *     One-to-all operations (bcast, scatter[v]): a member other than the root depends on the root's
 *     arrival, the root on nobody. All-to-one (gather[v], reduce): the root depends on every member,
 *     the others on nobody. Scan and exscan: a member depends on the members of lower rank. Everything
 *     else (barrier, allreduce, allgather[v], alltoall[v,w], reduce-scatter[-block]): every member on
 *     every member. These are the dependencies MPI guarantees; they never wait for more, so a replay of
 *     a correct program cannot deadlock.
 *
 * A stream that reaches a receive or collective completion whose inputs are not known yet waits; the
 * replay goes on with other streams. Values whose receiver is served by another event place travel to
 * it in tool messages between places (otfx_place_exchange), never with the application's messages.
 *
 * What a replay cannot see, it says. A send may be outside the window, in a range a reduction removed,
 * on a rank the query does not select or no place serves, or carry no ordinal. The receive then gets
 * no value (value NULL, and why), and the pass decides what that means (a critical path continues
 * with the local path only). The replay knows a send will never come when the sender has moved on:
 * every stream publishes its progress (the time of its next event, its "watermark"); a receive at time
 * t whose sender's every stream has passed t + tolerance is released without a value. The tolerance
 * covers the residual clock error between ranks. When every stream of every place waits and no value
 * is on its way (otfx_replay_run checks this together with the other places), the waits at the earliest
 * time are released the same way (not when following growing traces: they wait for the next run). Ranges
 * without detail (REDUCTION records) and the window's edges are reported per stream (otfx_replay_stats, and
 * the pass's `gap`).
 *
 * A pass (an analysis) is a set of callbacks with its own state per stream; the replay calls them in
 * each stream's order, and a receive's `receive` only after its send's `send`. One replay runs one
 * pass. Callbacks run on the thread that drives the replay, one at a time.
 */
#ifndef OTFX_REPLAY_H
#define OTFX_REPLAY_H

#include <otfx/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- places talking to each other -------------------------------------------------------------------
 *
 * What an event place offers a leaf computation to exchange data with the other event places of the
 * same query. The place makes one per leaf call of a query; every event place runs the query's leaf,
 * so all of them take part. Messages are bytes, delivered whole, in order between each pair of places,
 * never lost or mixed with another query's. Tests use an in-process one (places on threads). */
typedef enum otfx_exchange_op { OTFX_EXCHANGE_SUM, OTFX_EXCHANGE_MIN, OTFX_EXCHANGE_MAX } otfx_exchange_op;

typedef struct otfx_place_exchange {
    uint32_t place_count; /* event places taking part */
    uint32_t self;        /* this place's index among them, 0 .. place_count-1 */
    void *context;
    /* The exchange's index of the event place that serves application rank `rank`; UINT32_MAX when
     * none does. */
    uint32_t (*place_of_rank)(void *context, uint32_t rank);
    /* Sends `length` bytes to place `to` (≠ self). Copies them and returns without waiting for the
     * receiver. False when the exchange is broken (why: last_error). */
    bool (*send)(void *context, uint32_t to, const void *bytes, size_t length);
    /* Waits up to timeout_ns for a message from another place and hands it to `fn` (the bytes are valid
     * during the call): 1 a message was handed over, 0 none came in time, -1 the exchange is broken
     * or its deadline passed (why: last_error). */
    int (*receive)(void *context, uint64_t timeout_ns,
                   void (*fn)(void *user, uint32_t from, const void *bytes, size_t length), void *user);
    /* Every place calls it the same number of times, in the same order; afterwards values[i] holds
     * `op` over every place's values[i]. Messages sent before it are still delivered by `receive`
     * afterwards. False when the exchange is broken or its deadline passed. */
    bool (*allreduce)(void *context, otfx_exchange_op op, uint64_t *values, size_t count);
    const char *(*last_error)(void *context);
} otfx_place_exchange;

/* ---- passes ---------------------------------------------------------------------------------------- */

/* Why a receive or a collective member has no value. */
typedef enum otfx_replay_missing {
    OTFX_REPLAY_SEEN = 0,        /* not missing */
    OTFX_REPLAY_NOT_HELD,        /* its stream has passed it: outside the window or in a reduced range */
    OTFX_REPLAY_RANK_NOT_SERVED, /* no event place serves the rank, or the query does not select it */
    OTFX_REPLAY_NO_ORDINAL,      /* the event carries no ordinal (seq 0): its partner cannot be found */
    OTFX_REPLAY_STALLED,         /* released when every stream waited and nothing was on its way */
    OTFX_REPLAY_MISSING_COUNT
} otfx_replay_missing;
const char *otfx_replay_missing_name(otfx_replay_missing why); /* "seen", "not-held", … */

/* Why a stream has no detail over a range of the window. */
typedef enum otfx_replay_gap {
    OTFX_REPLAY_GAP_REDUCED = 0, /* a reduction removed it (REDUCTION record) */
    OTFX_REPLAY_GAP_BEFORE_HELD, /* from the window's start (or the trace's first event, when later) to
                                  * the stream's first held event in the window */
    OTFX_REPLAY_GAP_AFTER_HELD,  /* from the stream's last held event (or the window's start, when none
                                  * is held in it) to the window's end (a bounded window only) */
    OTFX_REPLAY_GAP_COUNT
} otfx_replay_gap;
const char *otfx_replay_gap_name(otfx_replay_gap why); /* "reduced", "before-held", "after-held" */

/* The largest value a pass hands across a dependency. */
#define OTFX_REPLAY_MAX_VALUE 64u

/* One stream as a pass sees it. */
typedef struct otfx_replay_stream {
    uint32_t rank, thread;
    uint32_t index; /* 0 .. stream count-1 on this place */
    void *state;    /* the pass's state for this stream: stream_state_size bytes, zeroed at the start */
} otfx_replay_stream;

/* A collective's members as the completing member sees them, by communicator rank. */
/* What a collective's members depend on, by its operation (the dependencies at the top of this
 * header). */
typedef enum otfx_replay_dependency {
    OTFX_REPLAY_ALL_TO_ALL = 0, /* every member on every member (barrier, allreduce, …, unknown operations) */
    OTFX_REPLAY_ONE_TO_ALL,     /* the others on the root (bcast, scatter[v]) */
    OTFX_REPLAY_ALL_TO_ONE,     /* the root on the others (gather[v], reduce) */
    OTFX_REPLAY_PREFIX          /* a member on the lower ranks (scan, exscan) */
} otfx_replay_dependency;
/* The dependency of an OTF2_CollectiveOp value (otfx_event.u.coll.op). */
otfx_replay_dependency otfx_replay_dependency_of(uint32_t op);

typedef struct otfx_replay_collective {
    const otfx_event *end; /* the completing member's COLL_END or NBC_COMPLETE (op, root, sizes) */
    otfx_replay_dependency dependency; /* of end->u.coll.op */
    uint32_t size;                     /* members */
    uint32_t self;                     /* the completing member's communicator rank */
    uint32_t root;         /* communicator rank of the root, UINT32_MAX when the operation has none */
    const uint32_t *world; /* members' world ranks */
    /* value[i]: member i's arrival value, NULL when not needed or missing. value[self] is always the
     * completing member's own arrival (what its `arrive` filled), whether or not it depends on itself;
     * NULL only when its arrival is not held (before the window: missing[self] OTFX_REPLAY_NOT_HELD). */
    const void *const *value;
    const otfx_replay_missing *missing; /* why value[i] is NULL for a member this one depends on */
} otfx_replay_collective;

typedef struct otfx_replay_pass {
    const char *name;
    size_t stream_state_size;
    size_t value_size; /* ≤ OTFX_REPLAY_MAX_VALUE */
    /* Every event of the stream in order: the context ENTERs of the regions open at the window's start
     * first, REDUCTION records where ranges without detail are, every other event; before `send`,
     * `receive`, `arrive` or `complete` for the same event. NULL: not needed. */
    void (*event)(void *user, otfx_replay_stream *stream, const otfx_event *event);
    /* Instead of `event`, when set: the same events in the same order, `count` consecutive ones of the
     * stream at once (a run of events the replay only hands on: ENTERs, LEAVEs, ISEND_COMPLETEs,
     * IRECV_REQUESTs, REQUEST_CANCELLEDs, METRICs and PHASEs; and the event after it), so a pass that
     * only folds them pays one call per run rather than one per event. */
    void (*events)(void *user, otfx_replay_stream *stream, const otfx_event *events, size_t count);
    /* A SEND or ISEND: fill `value` (value_size bytes, zeroed) for its receive. */
    void (*send)(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value);
    /* A blocking send's call ended (the LEAVE of the region open at the SEND) before the value was
     * handed over: the pass may amend the value (a late-receiver analysis adds the send's end). A
     * value is handed over at that LEAVE, or earlier when the stream must wait first. NULL: the value
     * is handed over at once. */
    void (*send_ended)(void *user, otfx_replay_stream *stream, const otfx_event *leave, void *value);
    /* A RECV or IRECV completing: `value` is its send's, or NULL (then `missing` says why). */
    void (*receive)(void *user, otfx_replay_stream *stream, const otfx_event *event, const void *value,
                    otfx_replay_missing missing);
    /* A member arrives at a collective (COLL_BEGIN, NBC_REQUEST): fill `value` for the members that
     * depend on it. */
    void (*arrive)(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value);
    /* A member completes a collective (COLL_END, NBC_COMPLETE) once the values it depends on are known
     * or missing. */
    void (*complete)(void *user, otfx_replay_stream *stream, const otfx_replay_collective *collective);
    /* The stream has no detail over [begin, end) (within the window), for the reason `why`. NULL: not
     * needed. */
    void (*gap)(void *user, otfx_replay_stream *stream, otfx_time begin, otfx_time end, otfx_replay_gap why);
    /* The stream reached the end of the window (or of what is held). NULL: not needed. */
    void (*finish)(void *user, otfx_replay_stream *stream);
} otfx_replay_pass;

/* ---- a replay ------------------------------------------------------------------------------------ */

typedef struct otfx_replay otfx_replay;

typedef struct otfx_replay_config {
    otfx_time from, to;  /* the window [from, to); to = OTFX_TIME_MAX: everything held */
    otfx_time tolerance; /* clock tolerance for releasing waits (0: the default, 100 µs) */
    const otfx_replay_pass *pass;
    void *pass_user;
    /* Which application ranks the query selects (NULL: all): a rank not selected is not replayed, and
     * what depends on it is missing (OTFX_REPLAY_RANK_NOT_SERVED). */
    bool (*selects_rank)(void *user, uint32_t rank);
    void *selects_user;
    uint32_t app_ranks; /* N */
    /* Follow mode: the replay keeps up with traces that still grow (see "following traces that still grow"
     * below). */
    bool follow;
    /* Decode ahead: a second thread of the replay fills every stream's next slice while the streams
     * replay the current one (the store's decoding is about half of a replay's work), so a replay that
     * has a core to spare answers sooner; the events and results are the same. Not with follow (its
     * rounds read what is held when they run). otfx_replay_cores_spare() says whether this process has
     * more than one CPU to run on. */
    bool decode_ahead;
} otfx_replay_config;

/* True when this process may run on more than one CPU (its affinity), so decode_ahead can pay. */
bool otfx_replay_cores_spare(void);

/* A replay over traces that share `defs`. NULL when out of memory or the config is invalid (why:
 * `error`). */
otfx_replay *otfx_replay_create(const otfx_replay_config *config, otfx_defs *defs, char *error,
                                size_t error_size);
void otfx_replay_destroy(otfx_replay *replay);
/* A stream: the trace of (rank, thread). Streams of ranks the config does not select are ignored. The
 * trace is read in slices with an otfx_trace_reader (it holds the read lock only while it fills a slice),
 * so appends go on while the replay runs. */
otfx_status otfx_replay_add_trace(otfx_replay *replay, otfx_trace *trace, uint32_t rank, uint32_t thread);

/* Runs the replay over the window to its end, with the other places of `exchange` (NULL: this place
 * alone; what other places hold is then missing). Every place of the exchange must call it for the same
 * query. Gives up at `deadline_ns` (CLOCK_MONOTONIC; 0: none). OTFX_OK when every stream reached the
 * window's end (with follow: caught up or waiting, see "following traces that still grow" below); otherwise
 * an error with why in `error`. A follow replay may be run again with another exchange of the same places
 * (the same `self` and place_of_rank).
 *
 * On OTFX_OK the replay's own traffic is over on every place: all places return from the same final
 * check (an allreduce), which they reach only when every stream everywhere is done and every batch sent
 * has been delivered. So the exchange may be used afterwards (a pass's own messages, like the critical
 * path's walk back) without ever receiving replay bytes. After an error, other places may still send. */
otfx_status otfx_replay_run(otfx_replay *replay, const otfx_place_exchange *exchange, uint64_t deadline_ns,
                            char *error, size_t error_size);

/* ---- following traces that still grow -------------------------------------------------------------
 *
 * A replay created with config.follow treats the end of what a stream holds as "caught up", not as the
 * end of its window, and is run again and again as the traces grow. otfx_replay_run then returns OTFX_OK
 * once, on every place, every stream has replayed what it held when it last read or waits for a value
 * that cannot come yet, and nothing is in flight between places (the same final check as without
 * follow, with "caught up or waiting" in place of "done"). It never releases waits because everything
 * waits (a send its sender has not shipped yet is not missing: the receive waits for a later run); a
 * wait whose sender's streams all passed its time + tolerance is still released (not held).
 *
 * A later otfx_replay_run on the same replay continues each stream exactly where it stopped (the time
 * of the last event it read and how many events at that time it read), up to what the stream holds
 * then; values and arrivals that wait for their receivers, and the pass's per-stream state, stay
 * between runs. Events appended to a trace must not be earlier than the events it already delivered
 * (what an event place guarantees per stream); a range a reduction removed before it was read is a gap,
 * as without follow. Streams never finish (`finish` is not called, no gap is reported at the window's
 * end). Every place of the exchange must run it the same number of times; a failed run leaves the
 * replay unusable (destroy it). Between runs it keeps the read buffers only of the streams that wait. */

/* Whether every stream has replayed what it held when it last read, or waits for a value (what a
 * follow run's OTFX_OK says of this place). */
bool otfx_replay_caught_up(const otfx_replay *replay);

/* What the replay did on this place (for the answer's "what could not be seen"). With follow: since
 * its creation, over all its runs. */
typedef struct otfx_replay_stats {
    uint64_t streams, events;
    uint64_t sends, receives; /* point-to-point ends replayed */
    uint64_t receives_matched_local, receives_matched_remote;
    uint64_t receives_missing[OTFX_REPLAY_MISSING_COUNT]; /* by why; [SEEN] stays 0 */
    uint64_t sends_unreceived; /* sends whose receive no selected stream met in the window */
    uint64_t collectives_complete, collectives_partial; /* completions with every / not every input */
    uint64_t gaps;                                      /* ranges without detail met */
    otfx_time gap_time;                                 /* their length summed over the streams */
    uint64_t values_sent, values_received;              /* to and from other places */
    uint64_t rounds; /* checks with the other places that everybody waits */
    uint64_t stall_releases;
    uint64_t runs;            /* otfx_replay_run calls that returned OTFX_OK */
    uint64_t events_last_run; /* events the last successful run replayed */
} otfx_replay_stats;
void otfx_replay_get_stats(const otfx_replay *replay, otfx_replay_stats *out);

/* ---- the steps of otfx_replay_run, for tests and other drivers -------------------------------------
 * A driver calls advance until it reports no progress, sends what take_outgoing hands it, delivers
 * what arrives, and when nothing moves anywhere, releases the earliest waits. */

/* Replays every stream as far as it can. *progressed: some stream moved. */
otfx_status otfx_replay_advance(otfx_replay *replay, bool *progressed);
/* Hands the bytes to send to each other place (values and watermarks since the last call): fn is
 * called once per place with something to send. `place_of_rank` as in the exchange. */
otfx_status otfx_replay_take_outgoing(otfx_replay *replay,
                                      uint32_t (*place_of_rank)(void *context, uint32_t rank), void *context,
                                      uint32_t self,
                                      bool (*fn)(void *user, uint32_t to, const void *bytes, size_t length),
                                      void *user);
/* Bytes another place's take_outgoing made. OTFX_ERR_CORRUPT when malformed (nothing applied). */
otfx_status otfx_replay_deliver(otfx_replay *replay, const void *bytes, size_t length);
/* The time of the earliest wait (OTFX_TIME_MAX: nothing waits), and whether every stream is done. */
otfx_time otfx_replay_earliest_wait(const otfx_replay *replay);
bool otfx_replay_done(const otfx_replay *replay);
/* Releases the waits at or before `time` (+ tolerance) without their values (OTFX_REPLAY_STALLED). */
otfx_status otfx_replay_release(otfx_replay *replay, otfx_time time);

#ifdef __cplusplus
}
#endif
#endif

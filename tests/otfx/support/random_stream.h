/* random_stream.h — reproducible, valid otfx event streams for tests and benchmarks.
 *
 * A stream defines its location, regions, communicators and metrics in an otfx_defs store, then
 * produces events on demand: time-ordered, well nested (every LEAVE closes an open region), with
 * references that exist. The same config (seed included) always yields the same events.
 *
 *     random_stream_config config = random_stream_config_default(RANDOM_STREAM_MIXED, 42);
 *     random_stream *stream = random_stream_create(defs, &config);
 *     otfx_event batch[1024];
 *     size_t n = random_stream_next(stream, batch, 1024);      // always 1024 events
 *     ... otfx_trace_append(trace, batch, n, &appended) ...
 *     while ((n = random_stream_finish(stream, batch, 1024)) > 0) // queued events, then LEAVEs
 *         ... append ...
 *     random_stream_destroy(stream);
 *
 * Kinds:
 *   MIXED      — every event type the API has (enter/leave of all region roles, blocking and
 *                nonblocking messages with consistent request lifecycles, cancelled requests,
 *                blocking and nonblocking collectives, metrics, phase markers, source-drop reduction
 *                records) with random nesting up to max_depth and random times (some equal to the
 *                previous event's).
 *   STENCIL    — an iterative halo exchange: compute, MPI_Irecv/MPI_Isend to the neighbours,
 *                MPI_Waitall, and an MPI_Allreduce every 10th iteration; times jitter ~5 %.
 *   USER_HEAVY — deep user-function call trees of short functions, an MPI_Allreduce now and then;
 *                the time a function runs before its next call or return is fixed per function and
 *                call site (mean about mean_gap) with +-10 % jitter and rare outliers, like real code.
 */
#ifndef OTFX_TEST_RANDOM_STREAM_H
#define OTFX_TEST_RANDOM_STREAM_H

#include "otfx/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum random_stream_kind {
    RANDOM_STREAM_MIXED,
    RANDOM_STREAM_STENCIL,
    RANDOM_STREAM_USER_HEAVY
} random_stream_kind;

typedef struct random_stream_config {
    random_stream_kind kind;
    uint64_t seed;
    uint32_t rank, thread;  /* the location; peers are other ranks of world_size */
    uint32_t world_size;    /* >= 2 */
    uint32_t user_regions;  /* distinct user functions (MIXED, USER_HEAVY) */
    uint32_t max_depth;     /* deepest nesting (MIXED, USER_HEAVY), <= OTFX_MAX_CALL_DEPTH */
    otfx_time start_time;   /* time of the first event */
    otfx_time mean_gap;     /* typical time between events in ns (MIXED, USER_HEAVY) */
    otfx_time compute_time; /* STENCIL: duration of one compute phase in ns */
    bool reduction_records; /* MIXED: also emit OTFX_EV_REDUCTION records (strategy source-drop) */
} random_stream_config;

/* Defaults for a kind: rank 0 of 16, thread 0, 40 user regions, depth 12, start at 1 s, mean gap
 * 400 ns, 50 us compute phases, reduction records on. */
random_stream_config random_stream_config_default(random_stream_kind kind, uint64_t seed);

typedef struct random_stream random_stream;

/* Defines everything the stream refers to in `defs` (idempotent: streams of other ranks can share a
 * store). Returns NULL with a message on stderr if the config is invalid or memory runs out. */
random_stream *random_stream_create(otfx_defs *defs, const random_stream_config *config);
void random_stream_destroy(random_stream *stream);

/* Fills events[0 .. capacity) with the next events and returns capacity. */
size_t random_stream_next(random_stream *stream, otfx_event *events, size_t capacity);
/* Writes the events still queued and then LEAVEs for the regions still open (innermost first);
 * returns how many, at most capacity. Call until it returns 0: the stream is then closed (it may go
 * on afterwards and re-enters main). */
size_t random_stream_finish(random_stream *stream, otfx_event *events, size_t capacity);

otfx_ref random_stream_location(const random_stream *stream);
uint32_t random_stream_depth(const random_stream *stream);
/* Time of the last event produced (start_time before the first). */
otfx_time random_stream_time(const random_stream *stream);
/* Events produced so far. */
uint64_t random_stream_count(const random_stream *stream);

#ifdef __cplusplus
}
#endif
#endif

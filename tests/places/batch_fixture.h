/*
 * batch_fixture.h — a place with one served rank and one thread, set up without MPI, and a builder of
 * record batches (capture/include/otfx/capture_wire.h) for the decoder's tests, its fuzz target and its
 * seeds.
 */
#ifndef OTFX_TESTS_BATCH_FIXTURE_H
#define OTFX_TESTS_BATCH_FIXTURE_H

#include "event_place_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Function ids of the fixture's MPI function table. */
enum fixture_function {
    FIXTURE_MPI_SEND,
    FIXTURE_MPI_RECV,
    FIXTURE_MPI_ISEND,
    FIXTURE_MPI_WAIT,
    FIXTURE_MPI_BARRIER,
    FIXTURE_MPI_ALLREDUCE,
    FIXTURE_MPI_COMM_SPLIT,
    FIXTURE_MPI_PCONTROL,
    FIXTURE_MPI_IBCAST,
    FIXTURE_MPI_BCAST_INIT,
    FIXTURE_MPI_START,
    FIXTURE_FUNCTION_COUNT
};

/* The names and event classes of the fixture's functions, indexed by enum fixture_function. */
otfx_place_functions fixture_functions(void);

/* The application world of every fixture: ranks 0 … FIXTURE_WORLD_SIZE - 1; the fixture serves rank 0. */
#define FIXTURE_WORLD_SIZE 4

struct place_fixture {
    struct event_place place;
    struct served_rank rank;
    struct place_stream stream;
    struct place_stream *stream_slot;
};

/* Creates the place, its one trace (budget_bytes) and, when announce_world, ingests a batch announcing
 * communicator 0 (the world) at time 1. Returns false if any step failed. */
bool place_fixture_create(struct place_fixture *fixture, size_t budget_bytes, bool announce_world);
void place_fixture_destroy(struct place_fixture *fixture);

/* The decoder's entry point on the fixture's stream. */
bool place_fixture_ingest(struct place_fixture *fixture, const unsigned char *records, size_t bytes,
                          uint64_t *record_count);

/* A growing batch: the 40-byte header, then records appended back to back. */
struct batch_builder {
    unsigned char *bytes;
    size_t size, capacity;
};

void batch_begin(struct batch_builder *batch, uint64_t sequence);
void batch_free(struct batch_builder *batch);
/* Sets header.record_bytes from what was appended; returns the whole batch's size. */
size_t batch_finish(struct batch_builder *batch);
const unsigned char *batch_records(const struct batch_builder *batch);
size_t batch_record_bytes(const struct batch_builder *batch);

void batch_add_enter(struct batch_builder *batch, uint16_t function_id, uint64_t time);
void batch_add_leave(struct batch_builder *batch, uint16_t function_id, uint64_t time);
void batch_add_p2p(struct batch_builder *batch, uint16_t kind, uint16_t function_id, uint64_t time,
                   uint32_t comm_id, int32_t peer, int32_t tag, uint64_t bytes, uint16_t request_kind,
                   uint64_t request);
/* batch_add_p2p with the message's ordinal on its channel (capture_p2p_record.sequence). */
void batch_add_message(struct batch_builder *batch, uint16_t kind, uint16_t function_id, uint64_t time,
                       uint32_t comm_id, int32_t peer, int32_t tag, uint64_t bytes, uint16_t request_kind,
                       uint64_t request, uint64_t sequence);
void batch_add_collective(struct batch_builder *batch, uint16_t function_id, uint64_t time, uint32_t comm_id,
                          int32_t root, uint64_t bytes_sent, uint64_t bytes_received);
/* The same with the collective's instance ordinal on its communicator (capture_collective_record). */
void batch_add_numbered_collective(struct batch_builder *batch, uint16_t function_id, uint64_t time,
                                   uint32_t comm_id, int32_t root, uint64_t bytes_sent,
                                   uint64_t bytes_received, uint64_t sequence);
void batch_add_comm(struct batch_builder *batch, uint16_t function_id, uint64_t time, uint32_t comm_id,
                    const int32_t *members, uint32_t member_count);
void batch_add_phase(struct batch_builder *batch, uint64_t time, int32_t level);
/* Any bytes as one record: for kinds the decoder does not know and for malformed records. */
void batch_add_raw(struct batch_builder *batch, const void *record, size_t size);

#endif

/*
 * fuzz_batch.c — fuzz.batch_decoder: arbitrary bytes as a batch for the event place's decoder
 * (places/src/batch_decoder.c). The input is a whole batch as the place receives it; the decoder gets
 * the bytes after the 40-byte batch header (the header is checked by event_place.c, not here). Every
 * input goes to a fresh place whose world (communicator 0) is announced, after a good batch that leaves
 * one region open. Beyond not crashing, a rejected input must leave everything as it was: the trace's
 * counts, the stream's state and the rank's communicator map; an accepted one must leave the trace
 * holding exactly the events it had plus the ones appended. Triggers of every condition are armed, so
 * that their evaluation sees every accepted batch; what they report names an armed trigger and rank 0.
 */
#include "batch_fixture.h"
#include "place_triggers.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fuzz target has no test framework: a broken invariant aborts, which libFuzzer reports with the input;
 * the line says which invariant. */
#define require(condition) require_at((condition), __LINE__)
static void require_at(bool condition, int line)
{
    if (!condition) {
        fprintf(stderr, "fuzz_batch.c:%d: invariant broken\n", line);
        abort();
    }
}

static int count_event(const otfx_event *event, void *user)
{
    (void)event;
    ++*(uint64_t *)user;
    return 0;
}

static uint64_t events_held(struct place_fixture *fixture)
{
    uint64_t count = 0;
    require(otfx_query_events(fixture->stream.trace, 0, OTFX_TIME_MAX, false, count_event, &count) ==
            OTFX_OK);
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CAPTURE_BATCH_BYTES)
        return 0; /* the place never receives more than a batch */
    struct place_fixture fixture;
    require(place_fixture_create(&fixture, 256 * 1024, true));
    require(place_triggers_start(
        &fixture.place,
        "duration(MPI_Recv) > 0 => notify; count(MPI_Send) > 1 => notify; rate(MPI_Barrier) > 1/s "
        "=> notify; message > 0 => notify; metric(cycles) > 0 => notify; marker(a) => notify; "
        "duration(trigger:a) > 0 => notify"));
    struct batch_builder good;
    batch_begin(&good, 0);
    batch_add_enter(&good, FIXTURE_MPI_RECV, 5);
    batch_finish(&good);
    uint64_t records = 0;
    require(place_fixture_ingest(&fixture, batch_records(&good), batch_record_bytes(&good), &records));
    batch_free(&good);

    const size_t header = sizeof(struct capture_batch_header);
    /* The decoder reads records from the place's own (aligned) batch buffer: copy as the place would. */
    unsigned char *records_copy = malloc(size > header ? size - header : 1);
    require(records_copy != NULL);
    const size_t record_bytes = size > header ? size - header : 0;
    if (record_bytes)
        memcpy(records_copy, data + header, record_bytes);

    otfx_trace_status before;
    require(otfx_trace_status_get(fixture.stream.trace, &before) == OTFX_OK);
    const uint64_t held_before = events_held(&fixture);
    const struct place_stream stream_before = fixture.stream;
    const uint32_t comm_capacity_before = fixture.rank.comm_capacity;
    const otfx_ref world_before = fixture.rank.comms[0];

    const bool accepted = place_fixture_ingest(&fixture, records_copy, record_bytes, &records);
    otfx_trace_status after;
    require(otfx_trace_status_get(fixture.stream.trace, &after) == OTFX_OK);
    require(fixture.rank.comms[0] == world_before);
    if (accepted) {
        require(after.events_received >= before.events_received);
        /* Not `== held_before + received`: an accepted batch may count events the decoder then leaves
         * out on purpose (the LEAVEs of user regions entered before recording resumed, otfx/capture_wire.h's
         * RECORDING), so it may store fewer than it counts as received. */
        require(events_held(&fixture) >= held_before);
        require(fixture.stream.last_time >= stream_before.last_time);
    } else {
        require(after.events_received == before.events_received);
        require(after.events_held == before.events_held);
        require(events_held(&fixture) == held_before);
        require(fixture.stream.last_time == stream_before.last_time);
        require(fixture.stream.depth == stream_before.depth);
        require(fixture.stream.collective_depth == stream_before.collective_depth);
        for (uint32_t id = 1; id < fixture.rank.comm_capacity; id++)
            require(fixture.rank.comms[id] == OTFX_REF_NONE || id < comm_capacity_before);
    }
    otfx_tree_firing firing;
    while (place_triggers_next_firing(&fixture.place, &firing))
        require(firing.trigger >= 1 && firing.trigger <= 7 && firing.rank == 0 && firing.detail[0]);
    free(records_copy);
    place_fixture_destroy(&fixture);
    return 0;
}

/*
 * test_batch_decoder.c — the event place's batch decoder (places/src/batch_decoder.c): valid batches
 * become the expected otfx events; malformed ones are rejected whole, leaving the trace, the stream's
 * state and the rank's communicator map exactly as they were.
 *
 * With `--write-corpus DIR` it writes the fuzz target's seed batches (fuzz_batch.c) instead.
 */
#include "batch_fixture.h"

#include <otfx/analysis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- what the trace holds ---------------------------------------------------------------------- */

#define MAX_SNAPSHOT_EVENTS 256

struct trace_snapshot {
    otfx_trace_status status;
    otfx_event events[MAX_SNAPSHOT_EVENTS];
    size_t event_count;
    struct place_stream stream;
    otfx_ref comms[8];
    uint32_t comm_capacity;
};

static int collect_event(const otfx_event *event, void *user)
{
    struct trace_snapshot *snapshot = user;
    if (snapshot->event_count == MAX_SNAPSHOT_EVENTS)
        return 1;
    snapshot->events[snapshot->event_count++] = *event;
    return 0;
}

static void take_snapshot(struct place_fixture *fixture, struct trace_snapshot *snapshot)
{
    memset(snapshot, 0, sizeof(*snapshot));
    assert_int_equal(otfx_trace_status_get(fixture->stream.trace, &snapshot->status), OTFX_OK);
    assert_int_equal(
        otfx_query_events(fixture->stream.trace, 0, OTFX_TIME_MAX, false, collect_event, snapshot), OTFX_OK);
    snapshot->stream = fixture->stream;
    snapshot->comm_capacity = fixture->rank.comm_capacity;
    for (uint32_t id = 0; id < fixture->rank.comm_capacity && id < 8; id++)
        snapshot->comms[id] = fixture->rank.comms[id];
}

static void assert_same_event(const otfx_event *expected, const otfx_event *actual)
{
    assert_int_equal(expected->type, actual->type);
    assert_int_equal(expected->time, actual->time);
    assert_memory_equal(&expected->u, &actual->u, sizeof(expected->u));
}

static void assert_unchanged(const struct trace_snapshot *before, const struct trace_snapshot *after)
{
    assert_int_equal(before->status.events_received, after->status.events_received);
    assert_int_equal(before->status.events_held, after->status.events_held);
    assert_int_equal(before->status.bytes_used, after->status.bytes_used);
    assert_int_equal(before->status.bytes_open, after->status.bytes_open);
    assert_int_equal(before->status.first_time, after->status.first_time);
    assert_int_equal(before->status.last_time, after->status.last_time);
    assert_int_equal(before->event_count, after->event_count);
    for (size_t i = 0; i < before->event_count; i++)
        assert_same_event(&before->events[i], &after->events[i]);
    assert_int_equal(before->stream.last_time, after->stream.last_time);
    assert_int_equal(before->stream.any_time, after->stream.any_time);
    assert_int_equal(before->stream.depth, after->stream.depth);
    assert_int_equal(before->stream.collective_depth, after->stream.collective_depth);
    assert_int_equal(before->stream.nbc_pending, after->stream.nbc_pending);
    assert_int_equal(before->comm_capacity <= after->comm_capacity, 1);
    for (uint32_t id = 0; id < after->comm_capacity && id < 8; id++)
        assert_int_equal(id < before->comm_capacity ? before->comms[id] : OTFX_REF_NONE, after->comms[id]);
}

/* ---- fixtures ------------------------------------------------------------------------------------ */

static int create_fixture(void **state)
{
    struct place_fixture *fixture = malloc(sizeof(*fixture));
    if (!fixture || !place_fixture_create(fixture, 1u << 20, true)) {
        free(fixture);
        return -1;
    }
    *state = fixture;
    return 0;
}

static int destroy_fixture(void **state)
{
    place_fixture_destroy(*state);
    free(*state);
    return 0;
}

static otfx_ref region_named(struct place_fixture *fixture, const char *name)
{
    uint32_t count = otfx_defs_count_regions(fixture->place.defs);
    for (otfx_ref ref = 0; ref < count; ref++) {
        otfx_region_def region;
        assert_int_equal(otfx_defs_get_region(fixture->place.defs, ref, &region), OTFX_OK);
        if (strcmp(region.name, name) == 0)
            return ref;
    }
    fail_msg("no region %s", name);
    return OTFX_REF_NONE;
}

static void ingest_accepted(struct place_fixture *fixture, struct batch_builder *batch, uint64_t records)
{
    batch_finish(batch);
    uint64_t record_count = 0;
    assert_true(
        place_fixture_ingest(fixture, batch_records(batch), batch_record_bytes(batch), &record_count));
    assert_int_equal(record_count, records);
    batch_free(batch);
}

/* ---- valid batches ------------------------------------------------------------------------------- */

static void test_enter_send_leave(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 100);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 110, 0, 2, 7, 4096, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 120);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 200);
    batch_add_p2p(&batch, CAPTURE_RECORD_RECV, FIXTURE_MPI_RECV, 210, 0, 3, 9, 64, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 220);
    ingest_accepted(fixture, &batch, 6);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 6);
    const otfx_ref send = region_named(fixture, "MPI_Send"), recv = region_named(fixture, "MPI_Recv");
    const otfx_ref world = fixture->rank.comms[0];
    assert_int_equal(after.events[0].type, OTFX_EV_ENTER);
    assert_int_equal(after.events[0].time, 100);
    assert_int_equal(after.events[0].u.region.region, send);
    assert_int_equal(after.events[1].type, OTFX_EV_SEND);
    assert_int_equal(after.events[1].time, 110);
    assert_int_equal(after.events[1].u.msg.comm, world);
    assert_int_equal(after.events[1].u.msg.peer, 2);
    assert_int_equal(after.events[1].u.msg.tag, 7);
    assert_int_equal(after.events[1].u.msg.bytes, 4096);
    assert_int_equal(after.events[2].type, OTFX_EV_LEAVE);
    assert_int_equal(after.events[2].u.region.region, send);
    assert_int_equal(after.events[3].u.region.region, recv);
    assert_int_equal(after.events[4].type, OTFX_EV_RECV);
    assert_int_equal(after.events[4].u.msg.peer, 3);
    assert_int_equal(after.events[4].u.msg.tag, 9);
    assert_int_equal(after.events[4].u.msg.bytes, 64);
    assert_int_equal(after.events[5].type, OTFX_EV_LEAVE);
    assert_int_equal(after.events[5].time, 220);
    assert_int_equal(fixture->stream.depth, 0);
    assert_int_equal(fixture->stream.last_time, 220);
}

static void test_nonblocking_send_and_completion(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_ISEND, 10);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_ISEND, 11, 0, 1, 5, 8, CAPTURE_REQUEST_SEND, 77);
    batch_add_leave(&batch, FIXTURE_MPI_ISEND, 12);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 20);
    batch_add_p2p(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, 21, 0, 1, 5, 8, CAPTURE_REQUEST_SEND,
                  77);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 22);
    ingest_accepted(fixture, &batch, 6);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 6);
    assert_int_equal(after.events[1].type, OTFX_EV_ISEND);
    assert_int_equal(after.events[1].u.msg.request, 77);
    assert_int_equal(after.events[1].u.msg.peer, 1);
    assert_int_equal(after.events[4].type, OTFX_EV_ISEND_COMPLETE);
    assert_int_equal(after.events[4].u.request.request, 77);
}

static void test_collective(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_ALLREDUCE, 50);
    batch_add_numbered_collective(&batch, FIXTURE_MPI_ALLREDUCE, 60, 0, -1, 16, 16, 7);
    batch_add_leave(&batch, FIXTURE_MPI_ALLREDUCE, 70);
    ingest_accepted(fixture, &batch, 3);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 4);
    assert_int_equal(after.events[0].type, OTFX_EV_ENTER);
    assert_int_equal(after.events[0].u.region.region, region_named(fixture, "MPI_Allreduce"));
    assert_int_equal(after.events[1].type, OTFX_EV_COLL_BEGIN);
    assert_int_equal(after.events[1].time, 50);
    /* The begin waited for the record: it names the communicator and the instance ordinal. */
    assert_int_equal(after.events[1].u.coll.comm, fixture->rank.comms[0]);
    assert_int_equal(after.events[1].u.coll.seq, 7);
    assert_int_equal(after.events[2].type, OTFX_EV_COLL_END);
    assert_int_equal(after.events[2].time, 60);
    assert_int_equal(after.events[2].u.coll.seq, 7);
    assert_int_equal(after.events[2].u.coll.comm, fixture->rank.comms[0]);
    assert_int_equal(after.events[2].u.coll.op, 11); /* OTF2_COLLECTIVE_OP_ALLREDUCE */
    assert_int_equal(after.events[2].u.coll.root, UINT32_MAX);
    assert_int_equal(after.events[2].u.coll.sent, 16);
    assert_int_equal(after.events[2].u.coll.received, 16);
    assert_int_equal(after.events[3].type, OTFX_EV_LEAVE);
    assert_int_equal(fixture->stream.collective_depth, 0);
}

/* The call's ENTER and its COLLECTIVE record in different batches: the begin comes with the second one,
 * at the ENTER's time, numbered. */
static void test_collective_across_batches(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_ALLREDUCE, 50);
    ingest_accepted(fixture, &batch, 1);
    assert_true(fixture->stream.begin_pending);
    batch_begin(&batch, 2);
    batch_add_numbered_collective(&batch, FIXTURE_MPI_ALLREDUCE, 60, 0, -1, 16, 16, 3);
    batch_add_leave(&batch, FIXTURE_MPI_ALLREDUCE, 70);
    ingest_accepted(fixture, &batch, 2);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 4);
    assert_int_equal(after.events[1].type, OTFX_EV_COLL_BEGIN);
    assert_int_equal(after.events[1].time, 50);
    assert_int_equal(after.events[1].u.coll.seq, 3);
    assert_int_equal(after.events[2].type, OTFX_EV_COLL_END);
    assert_int_equal(after.events[2].u.coll.seq, 3);
    assert_false(fixture->stream.begin_pending);
}

static void test_failed_collective_closes_without_payload(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_BARRIER, 50);
    batch_add_leave(&batch, FIXTURE_MPI_BARRIER, 70);
    ingest_accepted(fixture, &batch, 2);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 4);
    assert_int_equal(after.events[1].type, OTFX_EV_COLL_BEGIN);
    assert_int_equal(after.events[2].type, OTFX_EV_COLL_END);
    assert_int_equal(after.events[2].time, 70);
    assert_int_equal(after.events[2].u.coll.op, 0); /* OTF2_COLLECTIVE_OP_BARRIER */
    assert_int_equal(after.events[2].u.coll.root, UINT32_MAX);
    assert_int_equal(after.events[3].type, OTFX_EV_LEAVE);
}

static void test_comm_created_then_used(void **state)
{
    struct place_fixture *fixture = *state;
    const int32_t members[] = {0, 2, 3};
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_COMM_SPLIT, 10);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 15, 1, members, 3);
    batch_add_leave(&batch, FIXTURE_MPI_COMM_SPLIT, 20);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 30);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 31, 1, 3, 0, 1, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 32);
    ingest_accepted(fixture, &batch, 6);

    assert_true(fixture->rank.comm_capacity > 1);
    const otfx_ref split = fixture->rank.comms[1];
    assert_int_not_equal(split, OTFX_REF_NONE);
    assert_int_not_equal(split, fixture->rank.comms[0]);
    otfx_comm_def comm;
    assert_int_equal(otfx_defs_get_comm(fixture->place.defs, split, &comm), OTFX_OK);
    assert_int_equal(comm.size, 3);
    assert_int_equal(comm.world_ranks[0], 0);
    assert_int_equal(comm.world_ranks[1], 2);
    assert_int_equal(comm.world_ranks[2], 3);
    assert_string_equal(comm.name, "MPI_Comm_split #1");

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 5); /* the announcement itself is a definition, no event */
    assert_int_equal(after.events[3].type, OTFX_EV_SEND);
    assert_int_equal(after.events[3].u.msg.comm, split);
}

static void test_phase(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_PCONTROL, 5);
    batch_add_phase(&batch, 6, 3);
    batch_add_leave(&batch, FIXTURE_MPI_PCONTROL, 7);
    ingest_accepted(fixture, &batch, 3);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 3);
    assert_int_equal(after.events[1].type, OTFX_EV_PHASE);
    assert_int_equal(after.events[1].time, 6);
    assert_int_equal(after.events[1].u.phase.region, fixture->place.phase_region);
    assert_int_equal(after.events[1].u.phase.value, 3);
}

/* A METRIC_SET record naming `count` metrics "m0", "m1", … (unit "ns"). */
static void add_metric_set(struct batch_builder *batch, uint64_t time, uint32_t set_id, uint32_t count)
{
    unsigned char
        record[sizeof(struct capture_metric_set_record) + 4 * sizeof(struct capture_metric_definition)];
    memset(record, 0, sizeof record);
    const size_t size =
        sizeof(struct capture_metric_set_record) + count * sizeof(struct capture_metric_definition);
    struct capture_metric_set_record set = {
        .header = {.kind = CAPTURE_RECORD_METRIC_SET, .size = (uint32_t)size, .timestamp = time},
        .set_id = set_id,
        .count = count};
    memcpy(record, &set, sizeof set);
    for (uint32_t i = 0; i < count; i++) {
        struct capture_metric_definition definition = {.value_type = CAPTURE_METRIC_UINT64};
        snprintf(definition.name, sizeof definition.name, "m%u", i);
        snprintf(definition.unit, sizeof definition.unit, "ns");
        memcpy(record + sizeof set + i * sizeof definition, &definition, sizeof definition);
    }
    batch_add_raw(batch, record, size);
}

/* A METRICS record with the values first, first + 1, … */
static void add_metrics(struct batch_builder *batch, uint16_t function_id, uint64_t time, uint32_t set_id,
                        uint32_t count, uint64_t first)
{
    unsigned char record[sizeof(struct capture_metrics_record) + 4 * sizeof(uint64_t)];
    const size_t size = sizeof(struct capture_metrics_record) + count * sizeof(uint64_t);
    struct capture_metrics_record metrics = {.header = {.kind = CAPTURE_RECORD_METRICS,
                                                        .function_id = function_id,
                                                        .size = (uint32_t)size,
                                                        .timestamp = time},
                                             .set_id = set_id,
                                             .count = count};
    memcpy(record, &metrics, sizeof metrics);
    for (uint32_t i = 0; i < count; i++) {
        const uint64_t value = first + i;
        memcpy(record + sizeof metrics + i * sizeof value, &value, sizeof value);
    }
    batch_add_raw(batch, record, size);
}

/* Metrics after an ENTER and a LEAVE become METRIC events at their times; the set holds across batches
 * and a new set replaces it, each set marked where it begins (OTFX_METRIC_SET_MARK, valued with its id);
 * values of another set, or a set that does not grow, are malformed. */
static void test_metrics(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_BARRIER, 100);
    add_metric_set(&batch, 100, 1, 2);
    add_metrics(&batch, FIXTURE_MPI_BARRIER, 100, 1, 2, 10);
    ingest_accepted(fixture, &batch, 3);
    batch_begin(&batch, 2);
    batch_add_collective(&batch, FIXTURE_MPI_BARRIER, 150, 0, -1, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_BARRIER, 150);
    add_metrics(&batch, FIXTURE_MPI_BARRIER, 150, 1, 2, 20);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 200);
    add_metric_set(&batch, 200, 2, 1);
    add_metrics(&batch, FIXTURE_MPI_SEND, 200, 2, 1, 30);
    ingest_accepted(fixture, &batch, 6);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    /* ENTER, the mark of set 1, 2 metrics, COLL_BEGIN (after the metrics: the collective's record names
     * it), COLL_END, LEAVE, 2 metrics, ENTER, the mark of set 2, 1 metric */
    assert_int_equal(after.event_count, 12);
    assert_int_equal(after.events[0].type, OTFX_EV_ENTER);
    assert_int_equal(after.events[1].type, OTFX_EV_METRIC);
    assert_int_equal(after.events[1].time, 100);
    assert_int_equal(after.events[1].u.metric.value, 1);
    const otfx_ref mark = after.events[1].u.metric.metric;
    assert_int_equal(after.events[2].type, OTFX_EV_METRIC);
    assert_int_equal(after.events[2].time, 100);
    assert_int_equal(after.events[2].u.metric.value, 10);
    assert_int_equal(after.events[3].type, OTFX_EV_METRIC);
    assert_int_equal(after.events[3].u.metric.value, 11);
    assert_int_not_equal(after.events[2].u.metric.metric, after.events[3].u.metric.metric);
    assert_int_not_equal(after.events[2].u.metric.metric, mark);
    assert_int_equal(after.events[4].type, OTFX_EV_COLL_BEGIN);
    assert_int_equal(after.events[4].u.coll.comm, fixture->rank.comms[0]);
    assert_int_equal(after.events[5].type, OTFX_EV_COLL_END);
    assert_int_equal(after.events[6].type, OTFX_EV_LEAVE);
    assert_int_equal(after.events[7].u.metric.value, 20);
    assert_int_equal(after.events[7].u.metric.metric, after.events[2].u.metric.metric);
    assert_int_equal(after.events[9].type, OTFX_EV_ENTER);
    assert_int_equal(after.events[10].type, OTFX_EV_METRIC);
    assert_int_equal(after.events[10].time, 200);
    assert_int_equal(after.events[10].u.metric.metric, mark);
    assert_int_equal(after.events[10].u.metric.value, 2);
    assert_int_equal(after.events[11].type, OTFX_EV_METRIC);
    assert_int_equal(after.events[11].u.metric.value, 30);
    assert_int_equal(after.events[11].u.metric.metric, after.events[2].u.metric.metric); /* "m0" again */
    otfx_metric_def mark_definition;
    assert_int_equal(otfx_defs_get_metric(fixture->place.defs, mark, &mark_definition), OTFX_OK);
    assert_string_equal(mark_definition.name, OTFX_METRIC_SET_MARK);
    otfx_metric_def definition;
    assert_int_equal(otfx_defs_get_metric(fixture->place.defs, after.events[3].u.metric.metric, &definition),
                     OTFX_OK);
    assert_string_equal(definition.name, "m1");
    assert_string_equal(definition.unit, "ns");

    /* values of the old set, a count that is not the set's, a set that does not grow */
    const struct {
        uint32_t set_id, count, new_set;
    } bad[] = {{1, 1, 0}, {2, 2, 0}, {0, 0, 2}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        batch_begin(&batch, 3);
        batch_add_leave(&batch, FIXTURE_MPI_SEND, 300);
        if (bad[k].new_set)
            add_metric_set(&batch, 300, bad[k].new_set, 1);
        else
            add_metrics(&batch, FIXTURE_MPI_SEND, 300, bad[k].set_id, bad[k].count, 40);
        batch_finish(&batch);
        uint64_t records = 0;
        assert_false(
            place_fixture_ingest(fixture, batch_records(&batch), batch_record_bytes(&batch), &records));
        batch_free(&batch);
    }
}

static void test_unknown_kind_is_skipped(void **state)
{
    /* otfx/capture_wire.h: `size` lets a reader skip kinds it does not know. */
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 5);
    const struct capture_record_header future = {.kind = 200, .function_id = 0, .size = 24, .timestamp = 6};
    unsigned char record[24] = {0};
    memcpy(record, &future, sizeof(future));
    batch_add_raw(&batch, record, sizeof(record));
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 7);
    ingest_accepted(fixture, &batch, 3);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 2);
    assert_int_equal(after.events[0].type, OTFX_EV_ENTER);
    assert_int_equal(after.events[1].type, OTFX_EV_LEAVE);
}

static void test_region_open_across_batches(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 100);
    ingest_accepted(fixture, &batch, 1);
    assert_int_equal(fixture->stream.depth, 1);
    batch_begin(&batch, 2);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 150);
    ingest_accepted(fixture, &batch, 1);
    assert_int_equal(fixture->stream.depth, 0);
    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 2);
    assert_int_equal(after.events[1].type, OTFX_EV_LEAVE);
    assert_int_equal(after.events[1].u.region.region, region_named(fixture, "MPI_Recv"));
}

/* ---- back-pressure drops (CAPTURE_RECORD_DROPPED) ------------------------------------------------ */

static void batch_add_dropped(struct batch_builder *batch, uint64_t time, uint64_t dropped, uint64_t first,
                              uint64_t last, uint32_t closed, uint32_t opened)
{
    struct capture_dropped_record record = {
        .header = {.kind = CAPTURE_RECORD_DROPPED, .size = sizeof(record), .timestamp = time},
        .dropped = dropped,
        .first = first,
        .last = last,
        .closed = closed,
        .opened = opened,
    };
    batch_add_raw(batch, &record, sizeof(record));
}

/* A drop in the middle of Send(Recv(...)): Recv was left during the drop (closed at the marker), a
 * Barrier entered during it returns after it (its LEAVE has no ENTER: dropped, not a malformed batch),
 * then Send, entered before the drop, returns (next batch). */
static void test_dropped_marker_mid_nesting(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 100);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 110);
    batch_add_dropped(&batch, 200, 7, 120, 190, 1, 1);
    batch_add_leave(&batch, FIXTURE_MPI_BARRIER, 210);
    ingest_accepted(fixture, &batch, 4);
    assert_int_equal(fixture->stream.depth, 1);
    assert_int_equal(fixture->stream.drop_gap_count, 0);
    batch_begin(&batch, 2);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 220);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 230);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 240);
    ingest_accepted(fixture, &batch, 3);
    assert_int_equal(fixture->stream.depth, 0);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.status.events_reduced[OTFX_REDUCE_SOURCE_DROP], 7);
    const otfx_event *reduction = NULL;
    size_t leaves = 0, enters = 0;
    for (size_t i = 0; i < after.event_count; i++) {
        const otfx_event *event = &after.events[i];
        if (event->type == OTFX_EV_REDUCTION)
            reduction = event;
        leaves += event->type == OTFX_EV_LEAVE;
        enters += event->type == OTFX_EV_ENTER;
    }
    assert_non_null(reduction);
    assert_int_equal(reduction->time, 200);
    assert_int_equal(reduction->u.reduction.strategy, OTFX_REDUCE_SOURCE_DROP);
    assert_int_equal(reduction->u.reduction.begin, 120);
    assert_int_equal(reduction->u.reduction.end, 190);
    assert_int_equal(reduction->u.reduction.events_removed, 7);
    assert_int_equal(enters, 3); /* Send, Recv, Wait */
    assert_int_equal(leaves, 3); /* Recv at the marker, Send, Wait; not the Barrier */
}

/* Regions entered during a drop stay owed across batches and across a second drop, which closes one of
 * them and opens another: every LEAVE finds its place, none is refused. */
static void test_dropped_gaps_across_batches(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 100);
    batch_add_dropped(&batch, 150, 3, 110, 140, 0, 2); /* two regions entered, still open */
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 160);
    ingest_accepted(fixture, &batch, 3);
    batch_begin(&batch, 2);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 170);    /* held Recv */
    batch_add_dropped(&batch, 200, 2, 180, 190, 1, 1); /* one owed region left, another entered */
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 210);    /* owed */
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 220);    /* owed */
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 230);    /* held Send */
    ingest_accepted(fixture, &batch, 5);
    assert_int_equal(fixture->stream.depth, 0);
    assert_int_equal(fixture->stream.drop_gap_count, 0);
    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.status.events_reduced[OTFX_REDUCE_SOURCE_DROP], 5);
    /* A LEAVE now has nothing to close: still malformed, drops do not excuse everything. */
    batch_begin(&batch, 3);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 240);
    batch_finish(&batch);
    uint64_t record_count = 0;
    assert_false(
        place_fixture_ingest(fixture, batch_records(&batch), batch_record_bytes(&batch), &record_count));
    batch_free(&batch);
}

/* ---- nonblocking collectives -------------------------------------------------------------------- */

/* A nonblocking collective's records (otfx/capture_wire.h): its COLLECTIVE record (function: the collective)
 * right before each request record, whose tag names the collective. */
static void batch_add_nbc(struct batch_builder *batch, uint16_t request_record, uint16_t caller,
                          uint16_t collective, uint64_t time, int32_t root, uint64_t sent, uint64_t received,
                          uint64_t request)
{
    batch_add_collective(batch, collective, time, 0, root, sent, received);
    batch_add_p2p(batch, request_record, caller, time, 0, root, collective, sent + received,
                  CAPTURE_REQUEST_COLLECTIVE, request);
}

static void assert_nbc_complete(const otfx_event *event, otfx_ref comm, uint32_t op, uint32_t root,
                                uint64_t sent, uint64_t received, uint64_t request)
{
    assert_int_equal(event->type, OTFX_EV_NBC_COMPLETE);
    assert_int_equal(event->u.coll.comm, comm);
    assert_int_equal(event->u.coll.op, op);
    assert_int_equal(event->u.coll.root, root);
    assert_int_equal(event->u.coll.sent, sent);
    assert_int_equal(event->u.coll.received, received);
    assert_int_equal(event->u.coll.request, request);
}

static void test_nonblocking_collective(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_IBCAST, 50);
    batch_add_nbc(&batch, CAPTURE_RECORD_COLLECTIVE_REQUEST, FIXTURE_MPI_IBCAST, FIXTURE_MPI_IBCAST, 55, 1, 0,
                  32, 9);
    batch_add_leave(&batch, FIXTURE_MPI_IBCAST, 60);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 70);
    batch_add_nbc(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, FIXTURE_MPI_IBCAST, 75, 1, 0, 32, 9);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 80);
    ingest_accepted(fixture, &batch, 8);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 6);
    assert_int_equal(after.events[0].u.region.region, region_named(fixture, "MPI_Ibcast"));
    assert_int_equal(after.events[1].type, OTFX_EV_NBC_REQUEST);
    assert_int_equal(after.events[1].time, 55);
    assert_int_equal(after.events[1].u.request.request, 9);
    assert_int_equal(after.events[2].type, OTFX_EV_LEAVE);
    assert_int_equal(after.events[3].u.region.region, region_named(fixture, "MPI_Wait"));
    assert_nbc_complete(&after.events[4], fixture->rank.comms[0], 1 /* OTF2_COLLECTIVE_OP_BCAST */, 1, 0, 32,
                        9);
    assert_int_equal(after.events[4].time, 75);
    assert_int_equal(after.events[5].type, OTFX_EV_LEAVE);
    for (size_t i = 0; i < after.event_count; i++) /* no blocking-collective events */
        assert_true(after.events[i].type != OTFX_EV_COLL_BEGIN && after.events[i].type != OTFX_EV_COLL_END);
    assert_false(fixture->stream.nbc_pending);
}

/* MPI_Bcast_init + MPI_Start + MPI_Wait, each collective record in another batch than its request
 * record: the payload waits in the stream. */
static void test_persistent_collective_across_batches(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_BCAST_INIT, 10);
    batch_add_leave(&batch, FIXTURE_MPI_BCAST_INIT, 11);
    batch_add_enter(&batch, FIXTURE_MPI_START, 20);
    batch_add_collective(&batch, FIXTURE_MPI_BCAST_INIT, 21, 0, 0, 16, 0);
    ingest_accepted(fixture, &batch, 4);
    assert_true(fixture->stream.nbc_pending);

    batch_begin(&batch, 2);
    batch_add_p2p(&batch, CAPTURE_RECORD_COLLECTIVE_REQUEST, FIXTURE_MPI_START, 22, 0, 0,
                  FIXTURE_MPI_BCAST_INIT, 16, CAPTURE_REQUEST_COLLECTIVE, 44);
    batch_add_leave(&batch, FIXTURE_MPI_START, 23);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 30);
    batch_add_collective(&batch, FIXTURE_MPI_BCAST_INIT, 31, 0, 0, 16, 0);
    ingest_accepted(fixture, &batch, 4);
    assert_true(fixture->stream.nbc_pending);

    batch_begin(&batch, 3);
    batch_add_p2p(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, 32, 0, 0, FIXTURE_MPI_BCAST_INIT, 16,
                  CAPTURE_REQUEST_COLLECTIVE, 44);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 33);
    ingest_accepted(fixture, &batch, 2);
    assert_false(fixture->stream.nbc_pending);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 8);
    assert_int_equal(after.events[2].u.region.region, region_named(fixture, "MPI_Start"));
    assert_int_equal(after.events[3].type, OTFX_EV_NBC_REQUEST);
    assert_int_equal(after.events[3].time, 22);
    assert_int_equal(after.events[3].u.request.request, 44);
    assert_nbc_complete(&after.events[6], fixture->rank.comms[0], 1, 0, 16, 0, 44);
    assert_int_equal(after.events[6].time, 32);
}

/* Back-pressure dropped the completion's COLLECTIVE record: the completion still pairs with its request,
 * without claiming bytes. A DROPPED record also forgets a payload whose request record was lost. */
static void test_nonblocking_collective_after_drop(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 10);
    batch_add_collective(&batch, FIXTURE_MPI_IBCAST, 11, 0, 1, 0, 32);
    batch_add_dropped(&batch, 20, 5, 12, 19, 0, 0);
    batch_add_p2p(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, 21, 0, 1, FIXTURE_MPI_IBCAST, 32,
                  CAPTURE_REQUEST_COLLECTIVE, 3);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 22);
    ingest_accepted(fixture, &batch, 5);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 4);
    assert_int_equal(after.events[1].type, OTFX_EV_REDUCTION);
    assert_nbc_complete(&after.events[2], fixture->rank.comms[0], 1, 1, 0, 0, 3);
}

/* ---- malformed batches --------------------------------------------------------------------------- */

/* Puts a good batch into the trace (one region left open, so leaves have a match and times a floor),
 * then offers `bad`: it must be refused after `records_seen` records, and change nothing. */
static void assert_rejected(struct place_fixture *fixture, const unsigned char *records, size_t bytes,
                            uint64_t records_seen)
{
    struct batch_builder good;
    batch_begin(&good, 1);
    batch_add_enter(&good, FIXTURE_MPI_SEND, 1000);
    batch_add_p2p(&good, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1010, 0, 1, 0, 8, 0, 0);
    batch_add_leave(&good, FIXTURE_MPI_SEND, 1020);
    batch_add_enter(&good, FIXTURE_MPI_RECV, 1030);
    ingest_accepted(fixture, &good, 4);

    struct trace_snapshot before, after;
    take_snapshot(fixture, &before);
    uint64_t record_count = 0, rejected = 0;
    if (!place_fixture_ingest(fixture, records, bytes, &record_count))
        rejected++;
    assert_int_equal(rejected, 1);
    assert_int_equal(record_count, records_seen);
    take_snapshot(fixture, &after);
    assert_unchanged(&before, &after);

    /* The stream goes on where it stood: the region left open before the bad batch closes. */
    batch_begin(&good, 3);
    batch_add_leave(&good, FIXTURE_MPI_RECV, 1100);
    ingest_accepted(fixture, &good, 1);
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, before.event_count + 1);
    assert_int_equal(after.events[after.event_count - 1].type, OTFX_EV_LEAVE);
    assert_int_equal(fixture->stream.depth, 0);
}

/* A send record carries its call's ENTER time and comes after what the call recorded meanwhile (a
 * steering marker, a communicator announced, a callback's nested call): the send is placed after them;
 * a send with nothing in between keeps the ENTER's time. Ordinals come along. Any other record going
 * back in time still fails the batch (test_reject_time_going_backwards). */
static void test_send_at_its_calls_enter(void **state)
{
    struct place_fixture *fixture = *state;
    const int32_t members[] = {0, 2};
    struct capture_recording_record recording = {
        .header = {.kind = CAPTURE_RECORD_RECORDING, .size = sizeof(recording), .timestamp = 5}, .on = 1};
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 100);
    batch_add_raw(&batch, &recording, sizeof(recording)); /* untimed */
    batch_add_enter(&batch, FIXTURE_MPI_ALLREDUCE, 110);  /* a callback's call */
    batch_add_leave(&batch, FIXTURE_MPI_ALLREDUCE, 120);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 130, 1, members, 2); /* a definition: no time order */
    batch_add_message(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 100, 1, 2, 7, 64, 0, 0, 41);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 140);
    batch_add_enter(&batch, FIXTURE_MPI_ISEND, 200);
    batch_add_message(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_ISEND, 200, 0, 2, 7, 64, CAPTURE_REQUEST_SEND,
                      9, 42);
    batch_add_leave(&batch, FIXTURE_MPI_ISEND, 210);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 300);
    batch_add_message(&batch, CAPTURE_RECORD_RECV, FIXTURE_MPI_RECV, 310, 0, 2, 8, 16, 0, 0, 3);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 320);
    ingest_accepted(fixture, &batch, 13);

    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    const otfx_event *send = NULL, *isend = NULL, *recv = NULL;
    for (size_t i = 0; i < after.event_count; i++) {
        if (after.events[i].type == OTFX_EV_SEND)
            send = &after.events[i];
        else if (after.events[i].type == OTFX_EV_ISEND)
            isend = &after.events[i];
        else if (after.events[i].type == OTFX_EV_RECV)
            recv = &after.events[i];
    }
    assert_true(send && isend && recv);
    assert_int_equal(send->time, 120); /* after the nested call it followed */
    assert_int_equal(send->u.msg.seq, 41);
    assert_int_equal(isend->time, 200);
    assert_int_equal(isend->u.msg.seq, 42);
    assert_int_equal(isend->u.msg.request, 9);
    assert_int_equal(recv->u.msg.seq, 3);
}

/* The rank's clock as a TSC at 1 ns per tick, 100 ns behind the place: tick T is place time T + 100. */
static void tick_clock_100ns_behind(struct served_rank *rank)
{
    rank->clock_known = rank->clock_tsc = true;
    rank->ns_per_tick = 1.0;
    rank->ref_ticks = rank->ref_ns = 0;
    rank->offset_ns = 100;
}

/* A clock re-synchronisation during a send call starts a correction segment after the call's ENTER; the
 * send record, with the ENTER's time, must get the ENTER's correction, not one extrapolated back from the
 * new segment (which put it a few ns before its ENTER, and the trace refused the batch). */
static void test_send_before_a_clock_segment(void **state)
{
    struct place_fixture *fixture = *state;
    struct served_rank *rank = &fixture->rank;
    tick_clock_100ns_behind(rank);
    struct capture_clock_record clock = {
        .header = {.kind = CAPTURE_RECORD_CLOCK, .size = sizeof(clock), .timestamp = 2010},
        .correction_ns = 5000};
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 2000);
    batch_add_raw(&batch, &clock, sizeof(clock));
    batch_add_message(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 2000, 0, 2, 7, 64, 0, 0, 1);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 2030);
    ingest_accepted(fixture, &batch, 4);
    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    const otfx_event *enter = NULL, *send = NULL;
    for (size_t i = 0; i < after.event_count; i++) {
        if (after.events[i].type == OTFX_EV_ENTER && after.events[i].time >= 2000)
            enter = &after.events[i];
        else if (after.events[i].type == OTFX_EV_SEND)
            send = &after.events[i];
    }
    assert_true(enter && send);
    assert_int_equal(enter->time, 2100);
    assert_int_equal(send->time, 2100);
    assert_int_equal(rank->clock_segment_count, 1);
}

/* The rank's clock model is shared by its threads: a re-synchronisation brought in by another thread's
 * records may map this thread's next ticks below the time its previous event got. The events keep their
 * order (they get the previous event's time) instead of the trace refusing the batch. */
static void test_clock_model_change_never_goes_back(void **state)
{
    struct place_fixture *fixture = *state;
    struct served_rank *rank = &fixture->rank;
    tick_clock_100ns_behind(rank);
    struct batch_builder first;
    batch_begin(&first, 1);
    batch_add_enter(&first, FIXTURE_MPI_SEND, 1000);
    ingest_accepted(fixture, &first, 1);
    rank->offset_ns = 50; /* as another thread's re-synchronisation would leave it */
    struct batch_builder second;
    batch_begin(&second, 2);
    batch_add_message(&second, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1000, 0, 2, 7, 64, 0, 0, 1);
    batch_add_leave(&second, FIXTURE_MPI_SEND, 1080);
    ingest_accepted(fixture, &second, 2);
    struct trace_snapshot after;
    take_snapshot(fixture, &after);
    assert_int_equal(after.event_count, 3);
    assert_int_equal(after.events[0].time, 1100);
    assert_int_equal(after.events[1].type, OTFX_EV_SEND);
    assert_int_equal(after.events[1].time, 1100);
    assert_int_equal(after.events[2].type, OTFX_EV_LEAVE);
    assert_int_equal(after.events[2].time, 1130);
}

/* A rank whose correction truly grows by 1 ns per 1000 ticks from 1000 ns (a 1000 ppm rate error),
 * measured 40 ns high at tick 100000 (round trip 100 ns) and then 30 ns low at tick 200000 (round trip
 * 80 ns); with an event at `event_between` (0: none) recorded between the two measurements. */
static void ingest_measured_high_then_low(struct place_fixture *fixture, uint64_t event_between)
{
    struct served_rank *rank = &fixture->rank;
    tick_clock_100ns_behind(rank);
    rank->offset_ns = 1000;
    rank->offset_round_trip_ns = 200;
    const struct capture_clock_record high = {
        .header = {.kind = CAPTURE_RECORD_CLOCK, .size = sizeof(high), .timestamp = 100000},
        .correction_ns = 1100 + 40,
        .round_trip_ns = 100};
    const struct capture_clock_record low = {
        .header = {.kind = CAPTURE_RECORD_CLOCK, .size = sizeof(low), .timestamp = 200000},
        .correction_ns = 1200 - 30,
        .round_trip_ns = 80};
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_raw(&batch, &high, sizeof(high));
    if (event_between)
        batch_add_enter(&batch, FIXTURE_MPI_SEND, event_between);
    batch_add_raw(&batch, &low, sizeof(low));
    ingest_accepted(fixture, &batch, event_between ? 3 : 2);
    assert_int_equal(rank->clock_segment_count, 2);
}

/* The model's true error (against ingest_measured_high_then_low's truth) stays within the bound. */
static void assert_clock_error_within_bound(const struct served_rank *rank, uint64_t step)
{
    for (uint64_t ticks = 100000; ticks <= 400000; ticks += step) {
        const double error = place_clock_correction(rank, ticks) - (1000 + (double)ticks / 1000);
        const double bound = place_clock_error_bound(rank, ticks);
        assert_true(bound >= 0);
        assert_true(error <= bound && -error <= bound);
    }
}

/* The error bound the place reports (place_clock_error_bound) from the round trips of the offset and the
 * re-synchronisations. Unknown before the first re-synchronisation (the rate error is not bounded
 * then); afterwards the model's true error stays within it: how far the model is from the measured
 * line, plus the line's own error. Halfway into the second segment, which blends from 1280 into the
 * line 1170 + 0.3 ns per 1000 ticks: 0.5 * |1280 - 1170| from the line, plus 40 at the measurement and
 * 90 ns per 10⁵ ticks of the drift's error over 0.5 * 10⁵ ticks. */
static void test_clock_error_bound_from_round_trips(void **state)
{
    struct place_fixture *fixture = *state;
    ingest_measured_high_then_low(fixture, 0);
    assert_true(place_clock_error_bound(&fixture->rank, 50000) < 0);
    assert_clock_error_within_bound(&fixture->rank, 10000);
    const double halfway = place_clock_error_bound(&fixture->rank, 250000);
    assert_true(halfway > 55 + 40 + 45 - 1e-6 && halfway < 55 + 40 + 45 + 1e-6);
}

/* A measurement that arrives after the rank recorded far past it (the segment starts at the stream's
 * last event, where the model has run away from the line): the slope needed to reach the line in time
 * exceeds the 1 % clamp, so the segment never reaches it as planned. The bound is still known and
 * still holds. The first measurement 40 ns high steers the model from 1000 at tick 100000 towards
 * 1280 at 200000 and beyond, to 1557.2 at tick 299000, where the truth is 1299 and the second
 * measurement's line 1199.7. */
static void test_clock_error_bound_of_a_clamped_segment(void **state)
{
    struct place_fixture *fixture = *state;
    const struct served_rank *rank = &fixture->rank;
    ingest_measured_high_then_low(fixture, 299000);
    assert_int_equal(rank->clock_segments[1].ticks, 299000);
    assert_true(rank->clock_segments[1].slope > -0.01 - 1e-12 &&
                rank->clock_segments[1].slope < -0.01 + 1e-12);
    assert_clock_error_within_bound(rank, 1000);
    /* |1557.2 - 1199.7| from the line, 40 its error at the measurement, 99000 ticks at 90 ns per 10⁵ */
    const double at_start = place_clock_error_bound(rank, 299000);
    assert_true(at_start > 357.5 + 40 + 89.1 - 1e-6 && at_start < 357.5 + 40 + 89.1 + 1e-6);
}

/* An intercommunicator is defined with its groups in one order on both sides, whichever is local. */
static void test_intercommunicator_groups_in_canonical_order(void **state)
{
    struct place_fixture *fixture = *state;
    const int32_t local_then_remote[4] = {2, 3, 0, 1};
    const size_t size = sizeof(struct capture_comm_record) + sizeof(local_then_remote);
    unsigned char raw[sizeof(struct capture_comm_record) + sizeof(local_then_remote)];
    struct capture_comm_record record = {.header = {.kind = CAPTURE_RECORD_COMM_CREATED,
                                                    .function_id = FIXTURE_MPI_COMM_SPLIT,
                                                    .size = size,
                                                    .timestamp = 50},
                                         .comm_id = 1,
                                         .flags = CAPTURE_COMM_INTER,
                                         .local_size = 2,
                                         .remote_size = 2};
    memcpy(raw, &record, sizeof(record));
    memcpy(raw + sizeof(record), local_then_remote, sizeof(local_then_remote));
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_raw(&batch, raw, size);
    ingest_accepted(fixture, &batch, 1);
    otfx_comm_def def;
    assert_int_equal(otfx_defs_get_comm(fixture->place.defs, fixture->rank.comms[1], &def), OTFX_OK);
    assert_int_equal(def.size, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(def.world_ranks[i], i);
}

/* A batch of valid records around one bad one, so that rejection must undo decoded work. */
static void begin_valid_prefix(struct batch_builder *batch)
{
    batch_begin(batch, 2);
    batch_add_enter(batch, FIXTURE_MPI_SEND, 1040);
    batch_add_p2p(batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1041, 0, 2, 0, 8, 0, 0);
    batch_add_leave(batch, FIXTURE_MPI_SEND, 1042);
}
#define VALID_PREFIX_RECORDS 3

static void test_reject_truncated_record(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1043, 0, 2, 0, 8, 0, 0);
    batch_finish(&batch);
    /* The batch ends in the middle of the last record's header. */
    size_t bytes = batch_record_bytes(&batch) - sizeof(struct capture_p2p_record) + 8;
    assert_rejected(*state, batch_records(&batch), bytes, VALID_PREFIX_RECORDS);
    batch_free(&batch);
}

static void test_reject_record_past_the_end(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1043, 0, 2, 0, 8, 0, 0);
    batch_finish(&batch);
    /* Its header is whole, its body is not. */
    size_t bytes = batch_record_bytes(&batch) - 8;
    assert_rejected(*state, batch_records(&batch), bytes, VALID_PREFIX_RECORDS);
    batch_free(&batch);
}

static void test_reject_record_size_beyond_batch(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    struct capture_record_header liar = {
        .kind = CAPTURE_RECORD_ENTER, .function_id = FIXTURE_MPI_SEND, .size = 1u << 30, .timestamp = 1050};
    batch_add_raw(&batch, &liar, sizeof(liar));
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS);
    batch_free(&batch);
}

/* A record whose header claims `size` bytes, in a 24-byte slot. */
static void reject_record_of_size(struct place_fixture *fixture, uint32_t size)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    unsigned char record[24] = {0};
    struct capture_record_header header = {
        .kind = CAPTURE_RECORD_ENTER, .function_id = FIXTURE_MPI_SEND, .size = size, .timestamp = 1050};
    memcpy(record, &header, sizeof(header));
    batch_add_raw(&batch, record, sizeof(record));
    batch_finish(&batch);
    assert_rejected(fixture, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS);
    batch_free(&batch);
}

static void test_reject_record_size_zero(void **state)
{
    reject_record_of_size(*state, 0); /* would loop forever if accepted */
}

static void test_reject_record_smaller_than_header(void **state)
{
    reject_record_of_size(*state, 8);
}

static void test_reject_record_size_unaligned(void **state)
{
    reject_record_of_size(*state, 20);
}

static void test_reject_short_p2p_record(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    /* A SEND that claims to be only a header long. */
    struct capture_record_header header = {
        .kind = CAPTURE_RECORD_SEND, .function_id = FIXTURE_MPI_SEND, .size = 16, .timestamp = 1050};
    batch_add_raw(&batch, &header, sizeof(header));
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
    batch_free(&batch);
}

static void test_reject_unknown_function(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_enter(&batch, FIXTURE_FUNCTION_COUNT, 1050);
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
    batch_free(&batch);
}

static void test_reject_leave_without_enter(void **state)
{
    struct batch_builder batch;
    batch_begin(&batch, 2);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 1040); /* closes the region the good batch opened */
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 1041); /* nothing left open */
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), 2);
    batch_free(&batch);
}

static void test_reject_unknown_communicator(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1050, 5, 2, 0, 8, 0, 0);
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
    batch_free(&batch);
}

static void test_reject_collective_on_unknown_communicator(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_enter(&batch, FIXTURE_MPI_ALLREDUCE, 1050);
    batch_add_collective(&batch, FIXTURE_MPI_ALLREDUCE, 1051, 1u << 20, -1, 8, 8);
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 2);
    batch_free(&batch);
}

/* A nonblocking collective's payload must be followed by its request record. */
static void test_reject_collective_payload_without_request(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_enter(&batch, FIXTURE_MPI_IBCAST, 1050);
    batch_add_collective(&batch, FIXTURE_MPI_IBCAST, 1051, 0, 1, 0, 8);
    batch_add_leave(&batch, FIXTURE_MPI_IBCAST, 1052);
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 3);
    batch_free(&batch);
}

/* ... and agree with it on collective, communicator and root. */
static void test_reject_collective_request_not_matching(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_enter(&batch, FIXTURE_MPI_IBCAST, 1050);
    batch_add_collective(&batch, FIXTURE_MPI_IBCAST, 1051, 0, 1, 0, 8);
    batch_add_p2p(&batch, CAPTURE_RECORD_COLLECTIVE_REQUEST, FIXTURE_MPI_IBCAST, 1051, 0, 2,
                  FIXTURE_MPI_IBCAST, 8, CAPTURE_REQUEST_COLLECTIVE, 1);
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 3);
    batch_free(&batch);
}

/* A request record's tag must name a nonblocking collective, and its kind be a collective's. */
static void test_reject_collective_request_naming_no_collective(void **state)
{
    (void)state;
    const int32_t tags[] = {FIXTURE_MPI_SEND, FIXTURE_MPI_ALLREDUCE, FIXTURE_FUNCTION_COUNT, -1};
    for (size_t i = 0; i <= sizeof(tags) / sizeof(tags[0]); i++) {
        struct place_fixture *fixture = malloc(sizeof(*fixture));
        assert_non_null(fixture);
        assert_true(place_fixture_create(fixture, 1u << 20, true));
        struct batch_builder batch;
        begin_valid_prefix(&batch);
        const bool wrong_kind = i == sizeof(tags) / sizeof(tags[0]);
        batch_add_p2p(&batch, CAPTURE_RECORD_COLLECTIVE_REQUEST, FIXTURE_MPI_START, 1050, 0, -1,
                      wrong_kind ? FIXTURE_MPI_BCAST_INIT : tags[i], 8,
                      wrong_kind ? CAPTURE_REQUEST_SEND : CAPTURE_REQUEST_COLLECTIVE, 1);
        batch_finish(&batch);
        assert_rejected(fixture, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
        batch_free(&batch);
        place_fixture_destroy(fixture);
        free(fixture);
    }
}

static void test_reject_time_going_backwards(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 1041); /* before the prefix's last record */
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
    batch_free(&batch);
}

static void test_reject_time_before_previous_batch(void **state)
{
    struct batch_builder batch;
    batch_begin(&batch, 2);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 999); /* the good batch ended at 1030 */
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), 1);
    batch_free(&batch);
}

static void test_reject_undoes_communicator_announcement(void **state)
{
    /* A batch announces communicator 1, then fails: id 1 must be unknown afterwards, and announcing it
     * again in a later batch must work (not "announced twice"). */
    struct place_fixture *fixture = *state;
    const int32_t members[] = {0, 1};
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 1043, 1, members, 2);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 1044);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 1045); /* one leave too many */
    batch_finish(&batch);
    assert_rejected(fixture, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 3);
    batch_free(&batch);
    assert_true(fixture->rank.comm_capacity < 2 || fixture->rank.comms[1] == OTFX_REF_NONE);

    batch_begin(&batch, 4);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 2000, 1, members, 2);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 2001);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 2002, 1, 1, 0, 8, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 2003);
    ingest_accepted(fixture, &batch, 4);
    assert_int_not_equal(fixture->rank.comms[1], OTFX_REF_NONE);
}

static void test_reject_communicator_announced_twice(void **state)
{
    const int32_t members[] = {0, 1};
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 1043, 0, members, 2); /* 0 is the world, known */
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
    batch_free(&batch);
}

/* Each thread of a rank announces a communicator in its own stream before using it (capture/README.md,
 * "Threads"): a repeat with the same members is accepted and keeps the definition. Ids are per rank, so
 * the fixture's one stream stands for any thread's. */
static void test_communicator_announced_again_by_another_thread(void **state)
{
    struct place_fixture *fixture = *state;
    const int32_t members[] = {1, 3};
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 10, 1, members, 2);
    ingest_accepted(fixture, &batch, 1);
    const otfx_ref defined = fixture->rank.comms[1];
    batch_begin(&batch, 2);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 20, 1, members, 2);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 21);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 22, 1, 1, 0, 8, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 23);
    ingest_accepted(fixture, &batch, 4);
    assert_int_equal(fixture->rank.comms[1], defined);
}

static void test_reject_communicator_members_past_record(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    struct {
        struct capture_comm_record comm;
        int32_t members[2];
    } record = {.comm = {.header = {.kind = CAPTURE_RECORD_COMM_CREATED,
                                    .function_id = FIXTURE_MPI_COMM_SPLIT,
                                    .size = sizeof(record),
                                    .timestamp = 1050},
                         .comm_id = 1,
                         .local_size = 1000},
                .members = {0, 1}};
    batch_add_raw(&batch, &record, sizeof(record));
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS + 1);
    batch_free(&batch);
}

static void test_reject_leftover_bytes(void **state)
{
    struct batch_builder batch;
    begin_valid_prefix(&batch);
    const uint64_t stray = 0;
    batch_add_raw(&batch, &stray, sizeof(stray)); /* 8 bytes: less than a record header */
    batch_finish(&batch);
    assert_rejected(*state, batch_records(&batch), batch_record_bytes(&batch), VALID_PREFIX_RECORDS);
    batch_free(&batch);
}

/* ---- throttled user functions -------------------------------------------------------------------- */

#define HOT_FUNCTION 0x401000u

static void batch_add_throttled(struct batch_builder *batch, uint64_t time, uint64_t skipped)
{
    const struct capture_throttle_record record = {
        .header = {.kind = CAPTURE_RECORD_THROTTLED, .size = sizeof(record), .timestamp = time},
        .address = HOT_FUNCTION,
        .calls = 101,
        .mean_ns = 40,
        .skipped = skipped,
    };
    batch_add_raw(batch, &record, sizeof(record));
}

static uint64_t throttle_events_removed(struct place_fixture *fixture)
{
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(fixture->stream.trace, &status), OTFX_OK);
    return status.events_reduced[OTFX_REDUCE_THROTTLE];
}

/* The reply of the status module over the fixture's place, as the tree would give it (one place). */
static char *status_reply(struct place_fixture *fixture)
{
    const otfx_analysis_module *status = otfx_analysis_for_command(OTFX_CMD_STATUS);
    assert_non_null(status);
    otfx_command query;
    memset(&query, 0, sizeof(query));
    query.kind = OTFX_CMD_STATUS;
    otfx_trace *traces[1] = {fixture->stream.trace};
    const uint32_t rank_of_trace[1] = {0};
    const otfx_rank_info ranks[1] = {{.rank = 0, .recording = true}};
    const otfx_leaf_input input = {.defs = fixture->place.defs,
                                   .traces = traces,
                                   .rank_of_trace = rank_of_trace,
                                   .trace_count = 1,
                                   .ranks = ranks,
                                   .rank_count = 1,
                                   .app_ranks = 1};
    otfx_blob partial = {0};
    otfx_text reply = {0};
    char error[256] = "";
    assert_true(status->leaf(&query, &input, &partial, error, sizeof(error)));
    assert_true(status->finish(&query, partial.data, partial.length, 1, 1, &reply, error, sizeof(error)));
    otfx_text_append(&reply, "", 1);
    assert_false(reply.failed);
    otfx_blob_free(&partial);
    return reply.data;
}

/* The rank sends the skipped calls of a throttled function while it runs, cumulative: the place keeps
 * the largest count (a late or repeated record adds nothing) and the status says it. */
static void test_throttled_counts_are_cumulative(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_throttled(&batch, 5, 0); /* switched off */
    batch_add_throttled(&batch, 6, 10);
    ingest_accepted(fixture, &batch, 2);
    assert_int_equal(fixture->rank.throttled_count, 1);
    assert_int_equal(fixture->rank.throttled[0].skipped, 10);
    assert_int_equal(throttle_events_removed(fixture), 20);

    batch_begin(&batch, 2);
    batch_add_throttled(&batch, 7, 25);
    ingest_accepted(fixture, &batch, 1);
    assert_int_equal(fixture->rank.throttled_count, 1);
    assert_int_equal(fixture->rank.throttled[0].skipped, 25);
    assert_int_equal(fixture->rank.throttled[0].calls, 101);
    assert_int_equal(throttle_events_removed(fixture), 50);

    batch_begin(&batch, 3);
    batch_add_throttled(&batch, 8, 10); /* late */
    batch_add_throttled(&batch, 9, 25); /* repeated */
    ingest_accepted(fixture, &batch, 2);
    assert_int_equal(fixture->rank.throttled[0].skipped, 25);
    assert_int_equal(throttle_events_removed(fixture), 50);

    char *reply = status_reply(fixture);
    assert_non_null(strstr(reply, "rank rank=0 place=0 "));
    assert_non_null(strstr(strstr(reply, "rank rank=0 "), " throttled_calls=25 "));
    assert_non_null(strstr(strstr(reply, "place index=0 "), " dropped_throttle=50 throttled_calls=25 "));
    assert_non_null(strstr(strstr(reply, "summary "), " throttled_calls=25 "));
    free(reply);
}

/* A rejected batch's counts are forgotten, so the next accepted one counts its growth from what the
 * place kept, not from what it never appended. */
static void test_reject_forgets_throttled_count(void **state)
{
    struct place_fixture *fixture = *state;
    struct batch_builder batch;
    batch_begin(&batch, 1);
    batch_add_throttled(&batch, 5, 0);
    ingest_accepted(fixture, &batch, 1);

    batch_begin(&batch, 2);
    batch_add_throttled(&batch, 6, 30);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 7); /* nothing open: the batch is malformed */
    batch_finish(&batch);
    uint64_t record_count = 0;
    assert_false(
        place_fixture_ingest(fixture, batch_records(&batch), batch_record_bytes(&batch), &record_count));
    batch_free(&batch);
    assert_int_equal(fixture->rank.throttled[0].skipped, 0);
    assert_false(fixture->rank.throttled[0].staged);
    assert_int_equal(throttle_events_removed(fixture), 0);

    /* a function a rejected batch named first is forgotten too */
    batch_begin(&batch, 3);
    const struct capture_throttle_record other = {
        .header = {.kind = CAPTURE_RECORD_THROTTLED, .size = sizeof(other), .timestamp = 8},
        .address = HOT_FUNCTION + 64,
        .calls = 200,
    };
    batch_add_raw(&batch, &other, sizeof(other));
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 9);
    batch_finish(&batch);
    assert_false(
        place_fixture_ingest(fixture, batch_records(&batch), batch_record_bytes(&batch), &record_count));
    batch_free(&batch);
    assert_int_equal(fixture->rank.throttled_count, 1);

    batch_begin(&batch, 4);
    batch_add_throttled(&batch, 10, 40);
    ingest_accepted(fixture, &batch, 1);
    assert_int_equal(fixture->rank.throttled[0].skipped, 40);
    assert_int_equal(throttle_events_removed(fixture), 80);
}

/* ---- the fuzz target's seeds ----------------------------------------------------------------------- */

static int write_batch(const char *directory, const char *name, struct batch_builder *batch)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", directory, name);
    size_t size = batch_finish(batch);
    FILE *file = fopen(path, "wb");
    int ok = file && fwrite(batch->bytes, 1, size, file) == size;
    if (file && fclose(file) != 0)
        ok = 0;
    batch_free(batch);
    if (!ok)
        fprintf(stderr, "test_batch_decoder: cannot write %s\n", path);
    return ok ? 0 : 1;
}

/* Seeds for fuzz.batch_decoder: whole batches (header + records) as the place receives them; the fuzz
 * target announces the world (communicator 0) itself. */
static int write_corpus(const char *directory)
{
    int failures = 0;
    struct batch_builder batch;

    batch_begin(&batch, 0);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 10);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 11, 0, 1, 3, 128, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 12);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 20);
    batch_add_p2p(&batch, CAPTURE_RECORD_RECV, FIXTURE_MPI_RECV, 21, 0, 2, 3, 128, 0, 0);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, 22);
    failures += write_batch(directory, "p2p_blocking.batch", &batch);

    batch_begin(&batch, 0);
    batch_add_enter(&batch, FIXTURE_MPI_ISEND, 10);
    batch_add_p2p(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_ISEND, 11, 0, 1, 0, 8, CAPTURE_REQUEST_SEND, 5);
    batch_add_leave(&batch, FIXTURE_MPI_ISEND, 12);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 13);
    batch_add_p2p(&batch, CAPTURE_RECORD_RECV_POSTED, FIXTURE_MPI_WAIT, 14, 0, -2, -1, 8,
                  CAPTURE_REQUEST_RECV, 6);
    batch_add_p2p(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, 15, 0, 1, 0, 8, CAPTURE_REQUEST_SEND,
                  5);
    batch_add_p2p(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, 16, 0, 3, 0, 8, CAPTURE_REQUEST_RECV,
                  6);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 17);
    failures += write_batch(directory, "p2p_nonblocking.batch", &batch);

    batch_begin(&batch, 0);
    const int32_t members[] = {0, 2};
    batch_add_enter(&batch, FIXTURE_MPI_COMM_SPLIT, 10);
    batch_add_comm(&batch, FIXTURE_MPI_COMM_SPLIT, 11, 1, members, 2);
    batch_add_leave(&batch, FIXTURE_MPI_COMM_SPLIT, 12);
    batch_add_enter(&batch, FIXTURE_MPI_ALLREDUCE, 20);
    batch_add_collective(&batch, FIXTURE_MPI_ALLREDUCE, 21, 1, -1, 8, 8);
    batch_add_leave(&batch, FIXTURE_MPI_ALLREDUCE, 22);
    batch_add_enter(&batch, FIXTURE_MPI_BARRIER, 30);
    batch_add_leave(&batch, FIXTURE_MPI_BARRIER, 31);
    failures += write_batch(directory, "comm_collective.batch", &batch);

    batch_begin(&batch, 0);
    batch_add_enter(&batch, FIXTURE_MPI_IBCAST, 10);
    batch_add_nbc(&batch, CAPTURE_RECORD_COLLECTIVE_REQUEST, FIXTURE_MPI_IBCAST, FIXTURE_MPI_IBCAST, 11, 1, 0,
                  8, 7);
    batch_add_leave(&batch, FIXTURE_MPI_IBCAST, 12);
    batch_add_enter(&batch, FIXTURE_MPI_START, 13);
    batch_add_nbc(&batch, CAPTURE_RECORD_COLLECTIVE_REQUEST, FIXTURE_MPI_START, FIXTURE_MPI_BCAST_INIT, 14, 0,
                  8, 0, 8);
    batch_add_leave(&batch, FIXTURE_MPI_START, 15);
    batch_add_enter(&batch, FIXTURE_MPI_WAIT, 16);
    batch_add_nbc(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, FIXTURE_MPI_BCAST_INIT, 17, 0, 8, 0,
                  8);
    batch_add_nbc(&batch, CAPTURE_RECORD_REQUEST_DONE, FIXTURE_MPI_WAIT, FIXTURE_MPI_IBCAST, 18, 1, 0, 8, 7);
    batch_add_leave(&batch, FIXTURE_MPI_WAIT, 19);
    failures += write_batch(directory, "nonblocking_collective.batch", &batch);

    batch_begin(&batch, 0);
    batch_add_enter(&batch, FIXTURE_MPI_PCONTROL, 10);
    batch_add_phase(&batch, 11, 2);
    batch_add_leave(&batch, FIXTURE_MPI_PCONTROL, 12);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, 13); /* left open: the next batch would close it */
    failures += write_batch(directory, "phase_open_region.batch", &batch);

    batch_begin(&batch, 0);
    batch_add_throttled(&batch, 10, 0);
    batch_add_throttled(&batch, 11, 1024);
    batch_add_throttled(&batch, 12, 512); /* late: adds nothing */
    failures += write_batch(directory, "throttled_counts.batch", &batch);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
        return write_corpus(argv[2]);
#define DECODER_TEST(name) cmocka_unit_test_setup_teardown(name, create_fixture, destroy_fixture)
    const struct CMUnitTest tests[] = {
        DECODER_TEST(test_enter_send_leave),
        DECODER_TEST(test_nonblocking_send_and_completion),
        DECODER_TEST(test_collective),
        DECODER_TEST(test_collective_across_batches),
        DECODER_TEST(test_failed_collective_closes_without_payload),
        DECODER_TEST(test_comm_created_then_used),
        DECODER_TEST(test_phase),
        DECODER_TEST(test_metrics),
        DECODER_TEST(test_unknown_kind_is_skipped),
        DECODER_TEST(test_region_open_across_batches),
        DECODER_TEST(test_dropped_marker_mid_nesting),
        DECODER_TEST(test_dropped_gaps_across_batches),
        DECODER_TEST(test_nonblocking_collective),
        DECODER_TEST(test_persistent_collective_across_batches),
        DECODER_TEST(test_nonblocking_collective_after_drop),
        DECODER_TEST(test_send_at_its_calls_enter),
        DECODER_TEST(test_send_before_a_clock_segment),
        DECODER_TEST(test_clock_model_change_never_goes_back),
        DECODER_TEST(test_clock_error_bound_from_round_trips),
        DECODER_TEST(test_clock_error_bound_of_a_clamped_segment),
        DECODER_TEST(test_intercommunicator_groups_in_canonical_order),
        DECODER_TEST(test_reject_truncated_record),
        DECODER_TEST(test_reject_record_past_the_end),
        DECODER_TEST(test_reject_record_size_beyond_batch),
        DECODER_TEST(test_reject_record_size_zero),
        DECODER_TEST(test_reject_record_smaller_than_header),
        DECODER_TEST(test_reject_record_size_unaligned),
        DECODER_TEST(test_reject_short_p2p_record),
        DECODER_TEST(test_reject_unknown_function),
        DECODER_TEST(test_reject_leave_without_enter),
        DECODER_TEST(test_reject_unknown_communicator),
        DECODER_TEST(test_reject_collective_on_unknown_communicator),
        DECODER_TEST(test_reject_collective_payload_without_request),
        DECODER_TEST(test_reject_collective_request_not_matching),
        DECODER_TEST(test_reject_collective_request_naming_no_collective),
        DECODER_TEST(test_reject_time_going_backwards),
        DECODER_TEST(test_reject_time_before_previous_batch),
        DECODER_TEST(test_reject_undoes_communicator_announcement),
        DECODER_TEST(test_reject_communicator_announced_twice),
        DECODER_TEST(test_communicator_announced_again_by_another_thread),
        DECODER_TEST(test_reject_communicator_members_past_record),
        DECODER_TEST(test_reject_leftover_bytes),
        DECODER_TEST(test_throttled_counts_are_cumulative),
        DECODER_TEST(test_reject_forgets_throttled_count),
    };
#undef DECODER_TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}

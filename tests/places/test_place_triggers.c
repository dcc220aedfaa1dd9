/* test_place_triggers.c — trigger conditions at an event place (places/src/triggers.c) on batches the
 * decoder appends, without MPI: which events make each condition hold, on which ranks, once until the
 * trigger is armed again, and what the firing says. */
#include "batch_fixture.h"
#include "place_triggers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MS UINT64_C(1000000)

struct setup {
    struct place_fixture fixture;
    uint64_t sequence;
};

static int set_up(void **state)
{
    struct setup *setup = calloc(1, sizeof(*setup));
    if (!setup || !place_fixture_create(&setup->fixture, 1u << 20, true))
        return -1;
    setup->sequence = 1;
    *state = setup;
    return 0;
}

static int tear_down(void **state)
{
    struct setup *setup = *state;
    place_fixture_destroy(&setup->fixture);
    free(setup);
    return 0;
}

static void add(struct setup *setup, uint64_t id, const char *text)
{
    char why[256] = "";
    if (!place_trigger_add(&setup->fixture.place, id, text, why, sizeof why))
        fail_msg("trigger '%s' refused: %s", text, why);
}

static void ingest(struct setup *setup, struct batch_builder *batch)
{
    batch_finish(batch);
    uint64_t records = 0;
    assert_true(
        place_fixture_ingest(&setup->fixture, batch_records(batch), batch_record_bytes(batch), &records));
    batch_free(batch);
}

/* One call of `function` from `start` to `end` (ns) in a batch of its own. */
static void call(struct setup *setup, uint16_t function, uint64_t start, uint64_t end)
{
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    batch_add_enter(&batch, function, start);
    batch_add_leave(&batch, function, end);
    ingest(setup, &batch);
}

static bool fired(struct setup *setup, otfx_tree_firing *firing)
{
    return place_triggers_next_firing(&setup->fixture.place, firing);
}

static void test_duration(void **state)
{
    struct setup *setup = *state;
    add(setup, 1, "duration(MPI_Allreduce) > 1ms => notify");
    otfx_tree_firing firing;
    call(setup, FIXTURE_MPI_ALLREDUCE, 10 * MS, 10 * MS + 500000);
    call(setup, FIXTURE_MPI_BARRIER, 11 * MS, 20 * MS); /* slow, but not the region named */
    assert_false(fired(setup, &firing));
    call(setup, FIXTURE_MPI_ALLREDUCE, 21 * MS, 24 * MS);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.trigger, 1);
    assert_int_equal(firing.rank, 0);
    assert_int_equal(firing.time_ns, 24 * MS);
    assert_non_null(strstr(firing.detail, "MPI_Allreduce took 3 ms (more than 1 ms) on rank 0"));
    /* reported once: disarmed until the root arms it again */
    call(setup, FIXTURE_MPI_ALLREDUCE, 30 * MS, 40 * MS);
    assert_false(fired(setup, &firing));
    assert_true(place_trigger_arm(&setup->fixture.place, 1));
    call(setup, FIXTURE_MPI_ALLREDUCE, 50 * MS, 60 * MS);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.time_ns, 60 * MS);
    /* a region open across the batches of a stream: its ENTER and LEAVE come in different batches */
    assert_true(place_trigger_arm(&setup->fixture.place, 1));
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    batch_add_enter(&batch, FIXTURE_MPI_ALLREDUCE, 70 * MS);
    ingest(setup, &batch);
    batch_begin(&batch, setup->sequence++);
    batch_add_leave(&batch, FIXTURE_MPI_ALLREDUCE, 75 * MS);
    ingest(setup, &batch);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.time_ns, 75 * MS);
}

static void test_nested_and_removed(void **state)
{
    struct setup *setup = *state;
    add(setup, 4, "duration(MPI_Send) > 2ms => notify");
    otfx_tree_firing firing;
    /* the outer call is slow, the inner one is not: the stack pairs each LEAVE with its ENTER */
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    batch_add_enter(&batch, FIXTURE_MPI_BARRIER, 1 * MS);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 5 * MS);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 6 * MS);
    batch_add_leave(&batch, FIXTURE_MPI_BARRIER, 10 * MS);
    ingest(setup, &batch);
    assert_false(fired(setup, &firing));
    assert_true(place_trigger_remove(&setup->fixture.place, 4));
    assert_false(place_trigger_remove(&setup->fixture.place, 4));
    call(setup, FIXTURE_MPI_SEND, 20 * MS, 30 * MS);
    assert_false(fired(setup, &firing));
}

static void test_count_and_rate(void **state)
{
    struct setup *setup = *state;
    add(setup, 2, "count(MPI_Send) > 3 => notify");
    add(setup, 3, "rate(MPI_Barrier) > 2/s => notify");
    otfx_tree_firing firing;
    for (int i = 0; i < 3; i++)
        call(setup, FIXTURE_MPI_SEND, (uint64_t)(i + 1) * MS, (uint64_t)(i + 1) * MS + 100);
    assert_false(fired(setup, &firing));
    call(setup, FIXTURE_MPI_SEND, 5 * MS, 5 * MS + 100);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.trigger, 2);
    assert_non_null(strstr(firing.detail, "rank 0 entered MPI_Send 4 times (more than 3)"));
    /* barriers 0.6 s apart: never more than 2 in one second */
    for (int i = 0; i < 4; i++)
        call(setup, FIXTURE_MPI_BARRIER, 1000 * MS + (uint64_t)i * 600 * MS,
             1000 * MS + (uint64_t)i * 600 * MS + 1);
    assert_false(fired(setup, &firing));
    for (int i = 0; i < 3; i++)
        call(setup, FIXTURE_MPI_BARRIER, 5000 * MS + (uint64_t)i * 100 * MS,
             5000 * MS + (uint64_t)i * 100 * MS + 1);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.trigger, 3);
    assert_int_equal(firing.time_ns, 5200 * MS);
}

static void test_message_and_ranks(void **state)
{
    struct setup *setup = *state;
    add(setup, 5, "message > 1K => notify");
    add(setup, 6, "message > 10 on ranks 1-3 => notify"); /* the fixture serves rank 0 only */
    otfx_tree_firing firing;
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 1 * MS);
    batch_add_message(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 1 * MS, 0, 1, 7, 512, 0, 0, 1);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 2 * MS);
    batch_add_enter(&batch, FIXTURE_MPI_SEND, 3 * MS);
    batch_add_message(&batch, CAPTURE_RECORD_SEND, FIXTURE_MPI_SEND, 3 * MS, 0, 2, 7, 2048, 0, 0, 1);
    batch_add_leave(&batch, FIXTURE_MPI_SEND, 4 * MS);
    ingest(setup, &batch);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.trigger, 5);
    assert_non_null(
        strstr(firing.detail, "a message of 2048 bytes (more than 1024) sent by rank 0 to rank 2"));
    assert_false(fired(setup, &firing));
}

/* NAME + NAMED_PHASE records, as otfx_trigger("NAME") writes them. */
static void add_marker(struct batch_builder *batch, uint32_t id, const char *name, uint64_t time)
{
    unsigned char record[sizeof(struct capture_name_record) + 64] = {0};
    const uint32_t name_bytes = (uint32_t)((strlen(name) + 1 + 7) / 8 * 8);
    struct capture_name_record header = {
        .header = {CAPTURE_RECORD_NAME, 0, (uint32_t)sizeof(header) + name_bytes, time},
        .name_id = id,
        .name_bytes = name_bytes,
    };
    memcpy(record, &header, sizeof(header));
    memcpy(record + sizeof(header), name, strlen(name));
    batch_add_raw(batch, record, sizeof(header) + name_bytes);
    struct capture_user_record phase = {{CAPTURE_RECORD_NAMED_PHASE, 0, sizeof(phase), time}, id};
    batch_add_raw(batch, &phase, sizeof(phase));
}

static void test_marker(void **state)
{
    struct setup *setup = *state;
    add(setup, 7, "marker(converged) => notify");
    otfx_tree_firing firing;
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    add_marker(&batch, 0, "converged", 1 * MS);         /* otfx_phase("converged"): not the marker */
    add_marker(&batch, 1, "trigger:diverged", 2 * MS);  /* another marker */
    add_marker(&batch, 2, "trigger:converged", 3 * MS); /* otfx_trigger("converged") */
    ingest(setup, &batch);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.time_ns, 3 * MS);
    assert_string_equal(firing.detail, "marker converged raised by rank 0");
    assert_false(fired(setup, &firing));
}

static void test_metric(void **state)
{
    struct setup *setup = *state;
    add(setup, 8, "metric(page-faults) > 100 => notify");
    otfx_tree_firing firing;
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    struct {
        struct capture_metric_set_record set;
        struct capture_metric_definition definition;
    } set = {{{CAPTURE_RECORD_METRIC_SET, 0, sizeof(set), 1}, 1, 1},
             {"page-faults", "events", CAPTURE_METRIC_UINT64, CAPTURE_METRIC_ACCUMULATED}};
    batch_add_raw(&batch, &set, sizeof(set));
    const uint64_t values[2] = {40, 140};
    for (int i = 0; i < 2; i++) {
        const uint64_t time = (uint64_t)(i + 1) * MS;
        batch_add_enter(&batch, FIXTURE_MPI_SEND, time);
        struct {
            struct capture_metrics_record metrics;
            uint64_t value;
        } read = {{{CAPTURE_RECORD_METRICS, FIXTURE_MPI_SEND, sizeof(read), time}, 1, 1}, values[i]};
        batch_add_raw(&batch, &read, sizeof(read));
        batch_add_leave(&batch, FIXTURE_MPI_SEND, time + 100);
    }
    ingest(setup, &batch);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.time_ns, 2 * MS);
    assert_string_equal(firing.detail, "metric page-faults read 140 (more than 100) on rank 0");
}

/* Point-to-point events of a rank the place serves besides the fixture's rank 0, handed to the trigger
 * code as the decoder hands a batch (the fixture's decoder serves one rank only). */
struct other_rank {
    struct served_rank rank;
    struct place_stream stream;
};

static void other_batch(struct setup *setup, struct other_rank *other, const otfx_event *events, size_t count)
{
    uint32_t depth = other->stream.depth;
    for (size_t e = 0; e < count; e++)
        depth += events[e].type == OTFX_EV_ENTER ? 1u : events[e].type == OTFX_EV_LEAVE ? (uint32_t)-1 : 0u;
    const uint32_t before = other->stream.depth;
    other->stream.depth = depth;
    place_triggers_on_batch(&setup->fixture.place, &other->rank, &other->stream, events, count, before);
}

/* Rank 1's MPI_Send to rank 0 (tag 7, communicator `comm`), the call entered at `enter`. */
static void other_send(struct setup *setup, struct other_rank *other, otfx_ref comm, uint64_t seq,
                       uint64_t enter)
{
    otfx_event events[3] = {{.time = enter, .type = OTFX_EV_ENTER},
                            {.time = enter, .type = OTFX_EV_SEND},
                            {.time = enter + MS, .type = OTFX_EV_LEAVE}};
    events[0].u.region.region = events[2].u.region.region = 1;
    events[1].u.msg.comm = comm;
    events[1].u.msg.peer = 0;
    events[1].u.msg.tag = 7;
    events[1].u.msg.bytes = 8;
    events[1].u.msg.seq = seq;
    other_batch(setup, other, events, 3);
}

/* Rank 0's MPI_Recv from `peer` (tag 7, the world), entered at `enter`, its message in at `in`. */
static void recv_from(struct setup *setup, int32_t peer, uint64_t seq, uint64_t enter, uint64_t in)
{
    struct batch_builder batch;
    batch_begin(&batch, setup->sequence++);
    batch_add_enter(&batch, FIXTURE_MPI_RECV, enter);
    batch_add_message(&batch, CAPTURE_RECORD_RECV, FIXTURE_MPI_RECV, in, 0, peer, 7, 8, 0, 0, seq);
    batch_add_leave(&batch, FIXTURE_MPI_RECV, in);
    ingest(setup, &batch);
}

/* The communicator the decoder gave the fixture's world: the RECV event of rank 0's last receive. */
static int last_comm(const otfx_event *event, void *user)
{
    if (event->type == OTFX_EV_RECV)
        *(otfx_ref *)user = event->u.msg.comm;
    return 0;
}

static void test_late_sender(void **state)
{
    struct setup *setup = *state;
    struct event_place *place = &setup->fixture.place;
    /* the place serves ranks 0 and 1 (rank 1's events come in beside the decoder, and no code on this
     * path looks rank 1 up in place->ranks), not 2 and 3 */
    place->setup.served_count = 2;
    struct other_rank other = {.rank = {.rank = 1}};
    add(setup, 9, "late-sender > 20ms => notify");
    otfx_tree_firing firing;
    uint64_t paired = 0, unseen = 0;

    /* a receive that waited 40 ms for its send, the send arriving second: fires on the receiver */
    recv_from(setup, 1, 1, 10 * MS, 60 * MS);
    otfx_ref comm = OTFX_REF_NONE;
    otfx_query_events(setup->fixture.stream.trace, 0, OTFX_TIME_MAX, false, last_comm, &comm);
    assert_int_not_equal(comm, OTFX_REF_NONE);
    assert_false(fired(setup, &firing));
    other_send(setup, &other, comm, 1, 50 * MS);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.trigger, 9);
    assert_int_equal(firing.rank, 0);
    assert_int_equal(firing.time_ns, 60 * MS);
    assert_non_null(strstr(firing.detail, "rank 0 waited 40 ms (more than 20 ms) for rank 1's message"));
    assert_false(fired(setup, &firing));
    assert_true(place_trigger_late_sender_counts(place, 9, &paired, &unseen));
    assert_int_equal(paired, 1);
    assert_int_equal(unseen, 0);

    assert_true(place_trigger_arm(place, 9));
    /* not late: the send began before the receive (send first), and one that waited 10 ms (receive
     * first): paired, below the threshold, no firing */
    other_send(setup, &other, comm, 2, 100 * MS);
    recv_from(setup, 1, 2, 110 * MS, 111 * MS);
    recv_from(setup, 1, 3, 120 * MS, 131 * MS);
    other_send(setup, &other, comm, 3, 130 * MS);
    assert_false(fired(setup, &firing));
    assert_true(place_trigger_late_sender_counts(place, 9, &paired, &unseen));
    assert_int_equal(paired, 3);

    /* a message from rank 2, which another place serves: not evaluated, counted */
    recv_from(setup, 2, 1, 200 * MS, 900 * MS);
    assert_false(fired(setup, &firing));
    assert_true(place_trigger_late_sender_counts(place, 9, &paired, &unseen));
    assert_int_equal(paired, 3);
    assert_int_equal(unseen, 1);

    /* late, the send arriving first (rank 1's clock ahead of rank 0's batches): fires at the receive */
    other_send(setup, &other, comm, 4, 1500 * MS);
    recv_from(setup, 1, 4, 1000 * MS, 1501 * MS);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.time_ns, 1501 * MS);
    assert_non_null(strstr(firing.detail, "rank 0 waited 500 ms (more than 20 ms)"));
    assert_false(place_trigger_late_sender_counts(place, 1, &paired, &unseen));

    place_triggers_free_stream(&other.stream);
    place->setup.served_count = 1;
}

static void test_list(void **state)
{
    struct setup *setup = *state;
    assert_true(place_triggers_start(&setup->fixture.place,
                                     "marker(a) => notify; duration(MPI_Send) > 1ms => "
                                     "notify"));
    otfx_tree_firing firing;
    call(setup, FIXTURE_MPI_SEND, 1 * MS, 5 * MS);
    assert_true(fired(setup, &firing));
    assert_int_equal(firing.trigger, 2); /* numbered in order, as the root numbers them */
    assert_false(place_triggers_start(&setup->fixture.place, "marker(a) => explode"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_duration, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_nested_and_removed, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_count_and_rate, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_message_and_ranks, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_marker, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_metric, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_late_sender, set_up, tear_down),
        cmocka_unit_test_setup_teardown(test_list, set_up, tear_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

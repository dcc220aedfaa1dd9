/* test_structure.c — the task activity graph a trace builds on append (otfx/structure.h): nodes,
 * edges and their statistics on synthetic streams, size independent of the iterations, survival of
 * reductions, peers, channel ends, completion edges, markers and causal paths; a reset drops it; a
 * stream going round a cycle gives the same graph fed whole or event by event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <otfx/structure.h>

typedef struct world {
    otfx_defs *defs;
    otfx_trace *trace;
    otfx_ref recv, send, isend, wait, loop, compute, world_comm;
    otfx_time now;
} world;

static void world_open(world *w, uint32_t rank, size_t budget, otfx_reduction strategy)
{
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    otfx_ref location;
    assert_int_equal(otfx_defs_location(w->defs, rank, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Recv", OTFX_ROLE_MPI_P2P, &w->recv), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &w->send), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Isend", OTFX_ROLE_MPI_P2P, &w->isend), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Wait", OTFX_ROLE_MPI_P2P, &w->wait), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "main_loop", OTFX_ROLE_USER_FUNCTION, &w->loop), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "compute", OTFX_ROLE_USER_FUNCTION, &w->compute), OTFX_OK);
    uint32_t members[64];
    for (uint32_t i = 0; i < 64; i++)
        members[i] = i;
    assert_int_equal(otfx_defs_comm(w->defs, "MPI_COMM_WORLD", members, 64, &w->world_comm), OTFX_OK);
    otfx_trace_config config = otfx_trace_config_default(budget);
    config.chunk_bytes = 1024;
    config.strategy = strategy;
    config.compress = false; /* so that the small budgets fill and reduce */
    assert_int_equal(otfx_trace_create(&config, w->defs, location, &w->trace), OTFX_OK);
    w->now = 1000;
}

static void world_close(world *w)
{
    otfx_trace_destroy(w->trace);
    otfx_defs_destroy(w->defs);
}

static void append(world *w, otfx_event event)
{
    assert_int_equal(otfx_trace_append(w->trace, &event, 1, NULL), OTFX_OK);
}

static void enter(world *w, otfx_ref region)
{
    append(w, (otfx_event){.time = w->now, .type = OTFX_EV_ENTER, .u.region.region = region});
}

static void leave(world *w, otfx_time duration)
{
    w->now += duration;
    append(w, (otfx_event){.time = w->now, .type = OTFX_EV_LEAVE});
}

static void message(world *w, otfx_event_type type, uint32_t peer, uint64_t bytes, uint64_t request)
{
    otfx_event event = {.time = w->now, .type = type};
    event.u.msg.comm = w->world_comm;
    event.u.msg.peer = peer;
    event.u.msg.bytes = bytes;
    event.u.msg.request = request;
    append(w, event);
}

/* Recv from rank-1; compute (duration `compute_ns`); Send to rank+1: `iterations` times. */
static void recv_compute_send(world *w, uint32_t rank, int iterations, otfx_time compute_ns)
{
    for (int i = 0; i < iterations; i++) {
        enter(w, w->recv);
        w->now += 100;
        message(w, OTFX_EV_RECV, rank - 1, 64, 0);
        leave(w, 10);
        w->now += compute_ns;
        enter(w, w->send);
        message(w, OTFX_EV_SEND, rank + 1, 32, 0);
        leave(w, 50);
        w->now += 7; /* loop overhead between Send and the next Recv */
    }
}

static otfx_structure *structure_of(world *w, otfx_structure_view *view)
{
    otfx_structure *copy = NULL;
    assert_int_equal(otfx_query_structure(w->trace, &copy), OTFX_OK);
    otfx_structure_view_get(copy, view);
    return copy;
}

static uint32_t node_named(const otfx_structure_view *view, const char *name)
{
    for (uint32_t i = 0; i < view->node_count; i++)
        if (strcmp(view->nodes[i].name, name) == 0)
            return i;
    fail_msg("no node %s", name);
    return UINT32_MAX;
}

static const otfx_structure_edge *edge_between(const otfx_structure_view *view, uint32_t from, uint32_t to)
{
    for (uint32_t i = 0; i < view->edge_count; i++)
        if (view->edges[i].from == from && view->edges[i].to == to)
            return &view->edges[i];
    return NULL;
}

static void test_loop_gives_two_nodes_and_a_back_edge(void **state)
{
    (void)state;
    const int n = 200;
    world w;
    world_open(&w, 5, 1u << 20, OTFX_REDUCE_RING);
    recv_compute_send(&w, 5, n, 1000);
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.rank, 5);
    assert_int_equal(view.node_count, 2);
    const uint32_t recv = node_named(&view, "MPI_Recv"), send = node_named(&view, "MPI_Send");
    assert_int_equal(view.nodes[recv].visits, n);
    assert_int_equal(view.nodes[send].visits, n);
    assert_string_equal(view.nodes[recv].context, "");
    assert_int_equal(view.nodes[recv].time.count, n);
    assert_int_equal(view.nodes[recv].time.min_ns, 110);
    assert_int_equal(view.nodes[send].time.max_ns, 50);
    assert_int_equal(view.edge_count, 2);
    const otfx_structure_edge *forward = edge_between(&view, recv, send),
                              *back = edge_between(&view, send, recv);
    assert_non_null(forward);
    assert_non_null(back);
    assert_int_equal(forward->compute.count, n);
    assert_int_equal(forward->compute.sum_ns, (uint64_t)n * 1000);
    assert_int_equal(forward->compute.min_ns, 1000);
    assert_int_equal(forward->compute.max_ns, 1000);
    assert_true(otfx_structure_stat_stddev(&forward->compute) < 1e-6);
    assert_int_equal(back->compute.count, n - 1);
    assert_int_equal(back->compute.sum_ns, (uint64_t)(n - 1) * 7);
    /* peers as offsets from the rank */
    assert_int_equal(view.peer_count, 2);
    for (uint32_t i = 0; i < view.peer_count; i++) {
        const otfx_structure_peer *p = &view.peers[i];
        assert_int_equal(p->count, n);
        if (p->sent) {
            assert_int_equal(p->node, send);
            assert_int_equal(p->offset, 1);
            assert_int_equal(p->bytes, (uint64_t)n * 32);
        } else {
            assert_int_equal(p->node, recv);
            assert_int_equal(p->offset, -1);
            assert_int_equal(p->bytes, (uint64_t)n * 64);
        }
    }
    /* causal paths: Recv → Send → Recv, and Send → Recv → Send, n-1 times each */
    assert_int_equal(view.path_count, 2);
    for (uint32_t i = 0; i < view.path_count; i++) {
        assert_int_equal(view.paths[i].length, 2);
        assert_int_equal(view.paths[i].count, n - 1);
        assert_int_equal(view.path_nodes[view.paths[i].first], view.paths[i].anchor);
    }
    assert_int_equal(view.untracked, 0);
    otfx_structure_destroy(graph);
    world_close(&w);
}

/* The same program run 10 and 1000 times: the same graph, of the same size; only counts differ. The
 * small budget makes the longer run's trace reduce (ring): the graph is built before. */
static void test_size_independent_of_iterations_and_reductions(void **state)
{
    (void)state;
    world shorter, longer;
    world_open(&shorter, 3, 64u << 10, OTFX_REDUCE_RING);
    world_open(&longer, 3, 64u << 10, OTFX_REDUCE_RING);
    recv_compute_send(&shorter, 3, 10, 500);
    recv_compute_send(&longer, 3, 1000, 500);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(longer.trace, &status), OTFX_OK);
    otfx_structure_view a, b;
    otfx_structure *ga = structure_of(&shorter, &a), *gb = structure_of(&longer, &b);
    assert_int_equal(a.node_count, b.node_count);
    assert_int_equal(a.edge_count, b.edge_count);
    assert_int_equal(a.peer_count, b.peer_count);
    assert_int_equal(a.path_count, b.path_count);
    assert_int_equal(otfx_structure_bytes(ga), otfx_structure_bytes(gb));
    assert_int_equal(b.nodes[node_named(&b, "MPI_Recv")].visits, 1000);
    otfx_structure_destroy(ga);
    otfx_structure_destroy(gb);
    world_close(&shorter);
    world_close(&longer);
}

static void test_reductions_leave_the_graph_whole(void **state)
{
    (void)state;
    world w;
    world_open(&w, 1, 64u << 10, OTFX_REDUCE_RING);
    recv_compute_send(&w, 1, 20000, 300);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(w.trace, &status), OTFX_OK);
    assert_true(status.events_held < status.events_received); /* the ring dropped the oldest */
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.nodes[node_named(&view, "MPI_Send")].visits, 20000);
    assert_int_equal(view.events, status.events_received);
    otfx_structure_destroy(graph);
    world_close(&w);
}

/* Isend … Wait inside a loop region inside compute: the context, the loop marker, completion edges. */
static void test_context_loop_marker_and_completions(void **state)
{
    (void)state;
    world w;
    world_open(&w, 0, 1u << 20, OTFX_REDUCE_RING);
    enter(&w, w.compute);
    for (int i = 0; i < 4; i++) {
        enter(&w, w.loop);
        enter(&w, w.isend);
        message(&w, OTFX_EV_ISEND, 2, 8, 77);
        leave(&w, 5);
        w.now += 40;
        enter(&w, w.wait);
        append(&w, (otfx_event){.time = w.now + 3, .type = OTFX_EV_ISEND_COMPLETE, .u.request.request = 77});
        leave(&w, 10);
        leave(&w, 1);
    }
    enter(&w, w.send); /* a Send outside the loop: another context, another node */
    message(&w, OTFX_EV_SEND, 1, 4, 0);
    leave(&w, 2);
    leave(&w, 1);
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.node_count, 4);
    const uint32_t loop = node_named(&view, "main_loop"), isend = node_named(&view, "MPI_Isend"),
                   wait = node_named(&view, "MPI_Wait");
    assert_int_equal(view.nodes[loop].kind, OTFX_STRUCTURE_LOOP);
    assert_int_equal(view.nodes[loop].visits, 4);
    assert_string_equal(view.nodes[loop].context, "compute");
    assert_string_equal(view.nodes[isend].context, "compute/main_loop");
    assert_string_equal(view.nodes[node_named(&view, "MPI_Send")].context, "compute");
    assert_int_equal(view.completion_count, 1);
    assert_int_equal(view.completions[0].start, isend);
    assert_int_equal(view.completions[0].end, wait);
    assert_int_equal(view.completions[0].count, 4);
    assert_non_null(edge_between(&view, wait, loop));
    assert_int_equal(edge_between(&view, isend, wait)->compute.sum_ns, 4 * 40);
    /* the loop's path: loop → Isend → Wait, 3 times */
    bool found = false;
    for (uint32_t i = 0; i < view.path_count; i++)
        if (view.paths[i].anchor == loop) {
            assert_int_equal(view.paths[i].length, 3);
            assert_int_equal(view.paths[i].count, 3);
            found = true;
        }
    assert_true(found);
    otfx_structure_destroy(graph);
    world_close(&w);
}

static void test_phase_markers_are_nodes(void **state)
{
    (void)state;
    world w;
    world_open(&w, 0, 1u << 20, OTFX_REDUCE_RING);
    otfx_ref phase;
    assert_int_equal(otfx_defs_region(w.defs, "MPI_Pcontrol level", OTFX_ROLE_PHASE, &phase), OTFX_OK);
    for (int i = 0; i < 3; i++) {
        append(&w, (otfx_event){.time = w.now, .type = OTFX_EV_PHASE, .u.phase = {phase, 1}});
        recv_compute_send(&w, 0, 2, 10);
        append(&w, (otfx_event){.time = w.now, .type = OTFX_EV_PHASE, .u.phase = {phase, 0}});
    }
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.node_count, 4); /* level 1, level 0, Recv, Send */
    uint32_t start = UINT32_MAX;
    for (uint32_t i = 0; i < view.node_count; i++)
        if (view.nodes[i].kind == OTFX_STRUCTURE_PHASE && view.nodes[i].value == 1)
            start = i;
    assert_int_not_equal(start, UINT32_MAX);
    assert_int_equal(view.nodes[start].visits, 3);
    for (uint32_t i = 0; i < view.path_count; i++)
        if (view.paths[i].anchor == start) {
            assert_int_equal(view.paths[i].length, 6); /* 1, Recv, Send, Recv, Send, 0 */
            assert_int_equal(view.paths[i].count, 2);
        }
    otfx_structure_destroy(graph);
    world_close(&w);
}

/* otfx_trace_reset drops the graph with the events (the user asked to drop what was recorded) and frees
 * its memory; the regions open at the reset stay open: what follows has their context, their leaves
 * match, and a request started before the reset completes without an edge from a dropped node. */
static void test_reset_drops_the_graph(void **state)
{
    (void)state;
    world w;
    world_open(&w, 4, 1u << 20, OTFX_REDUCE_RING);
    enter(&w, w.compute);
    recv_compute_send(&w, 4, 50, 100);
    enter(&w, w.isend);
    message(&w, OTFX_EV_ISEND, 5, 8, 99);
    leave(&w, 5);
    enter(&w, w.wait); /* open at the reset */
    otfx_trace_status before;
    assert_int_equal(otfx_trace_status_get(w.trace, &before), OTFX_OK);
    assert_int_equal(otfx_trace_reset(w.trace), OTFX_OK);
    otfx_trace_status after;
    assert_int_equal(otfx_trace_status_get(w.trace, &after), OTFX_OK);
    assert_true(after.structure_bytes < before.structure_bytes);
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.node_count, 0);
    assert_int_equal(view.edge_count, 0);
    assert_int_equal(view.peer_count, 0);
    assert_int_equal(view.channel_count, 0);
    assert_int_equal(view.path_count, 0);
    assert_int_equal(view.events, 0);
    assert_true(otfx_structure_bytes(graph) < before.structure_bytes);
    otfx_structure_destroy(graph);
    /* the Wait open at the reset completes the request and ends; then the program goes on in compute */
    append(&w, (otfx_event){.time = w.now + 3, .type = OTFX_EV_ISEND_COMPLETE, .u.request.request = 99});
    leave(&w, 10);
    recv_compute_send(&w, 4, 3, 100);
    leave(&w, 1);
    graph = structure_of(&w, &view);
    assert_int_equal(view.node_count, 2);
    const uint32_t recv = node_named(&view, "MPI_Recv");
    assert_int_equal(view.nodes[recv].visits, 3);
    assert_string_equal(view.nodes[recv].context, "compute");
    assert_int_equal(view.nodes[node_named(&view, "MPI_Send")].time.count, 3);
    assert_int_equal(view.edge_count, 2);
    assert_int_equal(view.completion_count, 0);
    assert_int_equal(view.events, 3 * 6 + 3);
    assert_int_equal(view.untracked, 0);
    otfx_structure_destroy(graph);
    world_close(&w);
}

static void numbered_message(world *w, otfx_event_type type, uint32_t peer, uint32_t tag, uint64_t seq)
{
    otfx_event event = {.time = w->now, .type = type};
    event.u.msg.comm = w->world_comm;
    event.u.msg.peer = peer;
    event.u.msg.tag = tag;
    event.u.msg.bytes = 8;
    event.u.msg.seq = seq;
    append(w, event);
}

static const otfx_structure_channel *channel_of(const otfx_structure_view *view, bool sent, int64_t offset,
                                                uint32_t tag)
{
    for (uint32_t i = 0; i < view->channel_count; i++)
        if (view->channels[i].sent == sent && view->channels[i].offset == offset &&
            view->channels[i].tag == tag)
            return &view->channels[i];
    fail_msg("no channel end sent=%d offset=%lld tag=%u", sent, (long long)offset, tag);
    return NULL;
}

/* A channel end keeps the count and the sum of its ends' times and the last 32 of them; an end out of
 * its ordinals' order leaves it unpaired; ends at two nodes make it mixed. Rank 4 receives message i
 * (ordinal i) from rank 3 with tag 1 at 1000 i + 100 ns, and sends message i to rank 5 with tag 2 at
 * 1000 i + 500 ns (the record times). */
static void test_channel_ends_keep_sums_and_tails(void **state)
{
    (void)state;
    world w;
    world_open(&w, 4, 1u << 20, OTFX_REDUCE_RING);
    enum { MESSAGES = 40 };
    uint64_t received_sum = 0;
    for (uint64_t i = 1; i <= MESSAGES; i++) {
        w.now = 1000 * i;
        enter(&w, w.recv);
        w.now += 100;
        numbered_message(&w, OTFX_EV_RECV, 3, 1, i);
        received_sum += w.now;
        leave(&w, 10);
        w.now = 1000 * i + 500;
        enter(&w, w.send);
        numbered_message(&w, OTFX_EV_SEND, 5, 2, i);
        leave(&w, 10);
    }
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.channel_count, 2);
    const otfx_structure_channel *received = channel_of(&view, false, -1, 1);
    assert_int_equal(received->node, node_named(&view, "MPI_Recv"));
    assert_int_equal(received->count, MESSAGES);
    assert_int_equal(received->first_seq, 1);
    assert_true(received->ordered);
    assert_false(received->mixed);
    assert_int_equal(received->time_sum[0], received_sum);
    assert_int_equal(received->time_sum[1], 0);
    for (uint64_t k = 0; k < OTFX_STRUCTURE_CHANNEL_TAIL; k++) /* the k-th last: message 40 - k */
        assert_int_equal(received->tail[(MESSAGES - 1 - k) % OTFX_STRUCTURE_CHANNEL_TAIL],
                         1000 * (MESSAGES - k) + 100);
    const otfx_structure_channel *sent = channel_of(&view, true, 1, 2);
    assert_int_equal(sent->node, node_named(&view, "MPI_Send"));
    assert_int_equal(sent->count, MESSAGES);
    assert_true(sent->ordered);
    assert_int_equal(received->comm, sent->comm);
    otfx_structure_destroy(graph);
    /* an ordinal skipped on the receiving side; a send from another call site (inside compute) */
    enter(&w, w.recv);
    numbered_message(&w, OTFX_EV_RECV, 3, 1, MESSAGES + 2);
    leave(&w, 10);
    enter(&w, w.compute);
    enter(&w, w.send);
    numbered_message(&w, OTFX_EV_SEND, 5, 2, MESSAGES + 1);
    leave(&w, 10);
    leave(&w, 10);
    graph = structure_of(&w, &view);
    assert_false(channel_of(&view, false, -1, 1)->ordered);
    assert_true(channel_of(&view, true, 1, 2)->ordered);
    assert_true(channel_of(&view, true, 1, 2)->mixed);
    assert_int_equal(view.untracked, 0);
    otfx_structure_destroy(graph);
    world_close(&w);
}

/* A call of `region` at `*now` taking 10 ns, 90 ns before the next. */
static size_t stream_call(otfx_event *events, size_t at, otfx_ref region, otfx_time *now)
{
    events[at++] = (otfx_event){.time = *now, .type = OTFX_EV_ENTER, .u.region.region = region};
    events[at++] = (otfx_event){.time = *now + 10, .type = OTFX_EV_LEAVE, .u.region.region = region};
    *now += 100;
    return at;
}

static void assert_same_stat(const otfx_structure_stat *a, const otfx_structure_stat *b)
{
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->sum_ns, b->sum_ns);
    assert_int_equal(a->min_ns, b->min_ns);
    assert_int_equal(a->max_ns, b->max_ns);
    assert_memory_equal(&a->sum_squares, &b->sum_squares, sizeof a->sum_squares);
}

static void assert_same_graph(const otfx_structure_view *a, const otfx_structure_view *b)
{
    assert_int_equal(a->node_count, b->node_count);
    for (uint32_t i = 0; i < a->node_count; i++) {
        assert_string_equal(a->nodes[i].name, b->nodes[i].name);
        assert_int_equal(a->nodes[i].visits, b->nodes[i].visits);
        assert_int_equal(a->nodes[i].long_paths, b->nodes[i].long_paths);
        assert_same_stat(&a->nodes[i].time, &b->nodes[i].time);
    }
    assert_int_equal(a->edge_count, b->edge_count);
    for (uint32_t i = 0; i < a->edge_count; i++) {
        assert_int_equal(a->edges[i].from, b->edges[i].from);
        assert_int_equal(a->edges[i].to, b->edges[i].to);
        assert_same_stat(&a->edges[i].compute, &b->edges[i].compute);
    }
    assert_int_equal(a->path_count, b->path_count);
    for (uint32_t i = 0; i < a->path_count; i++) {
        assert_int_equal(a->paths[i].anchor, b->paths[i].anchor);
        assert_int_equal(a->paths[i].count, b->paths[i].count);
        assert_int_equal(a->paths[i].length, b->paths[i].length);
        assert_memory_equal(a->path_nodes + a->paths[i].first, b->path_nodes + b->paths[i].first,
                            a->paths[i].length * sizeof *a->path_nodes);
    }
    assert_int_equal(a->events, b->events);
    assert_int_equal(a->untracked, b->untracked);
}

static uint32_t path_count_of(const otfx_structure_view *view, const uint32_t *nodes, uint32_t length)
{
    for (uint32_t i = 0; i < view->path_count; i++)
        if (view->paths[i].length == length &&
            memcmp(view->path_nodes + view->paths[i].first, nodes, length * sizeof *nodes) == 0)
            return (uint32_t)view->paths[i].count;
    return 0;
}

/* The graph of `events` fed whole (returned, its view in *view), checked to be the graph the same events
 * give fed one at a time. */
static otfx_structure *fed_whole_and_one_by_one(const world *w, const otfx_event *events, size_t count,
                                                otfx_structure_view *view)
{
    otfx_structure *whole = otfx_structure_create(1), *one_by_one = otfx_structure_create(1);
    assert_non_null(whole);
    assert_non_null(one_by_one);
    otfx_structure_feed(whole, w->defs, events, count);
    for (size_t i = 0; i < count; i++)
        otfx_structure_feed(one_by_one, w->defs, events + i, 1);
    otfx_structure_view other;
    otfx_structure_view_get(whole, view);
    otfx_structure_view_get(one_by_one, &other);
    assert_same_graph(view, &other);
    otfx_structure_destroy(one_by_one);
    return whole;
}

/* A loop of three calls (Recv, Send, Wait) run 300 times, one iteration of it Recv, Wait instead (the
 * cycle broken and taken up again), then 100 times more: whole in one feed or event by event, the same
 * graph, with every visit and every return counted where it happened. */
static void test_long_cycles_count_every_visit_however_fed(void **state)
{
    (void)state;
    world w;
    world_open(&w, 1, 1u << 20, OTFX_REDUCE_RING);
    enum { BEFORE = 300, AFTER = 100, EVENTS = 2 * (3 * (BEFORE + AFTER) + 2) };
    otfx_event *events = malloc(EVENTS * sizeof *events);
    assert_non_null(events);
    size_t count = 0;
    otfx_time now = 1000;
    for (int i = 0; i < BEFORE; i++) {
        count = stream_call(events, count, w.recv, &now);
        count = stream_call(events, count, w.send, &now);
        count = stream_call(events, count, w.wait, &now);
    }
    count = stream_call(events, count, w.recv, &now);
    count = stream_call(events, count, w.wait, &now);
    for (int i = 0; i < AFTER; i++) {
        count = stream_call(events, count, w.recv, &now);
        count = stream_call(events, count, w.send, &now);
        count = stream_call(events, count, w.wait, &now);
    }
    assert_int_equal(count, EVENTS);
    otfx_structure_view view;
    otfx_structure *whole = fed_whole_and_one_by_one(&w, events, count, &view);

    const uint32_t recv = node_named(&view, "MPI_Recv"), send = node_named(&view, "MPI_Send"),
                   wait = node_named(&view, "MPI_Wait");
    assert_int_equal(view.nodes[recv].visits, BEFORE + AFTER + 1);
    assert_int_equal(view.nodes[send].visits, BEFORE + AFTER);
    assert_int_equal(view.nodes[wait].visits, BEFORE + AFTER + 1);
    assert_int_equal(view.nodes[recv].time.count, BEFORE + AFTER + 1);
    const otfx_structure_edge *recv_send = edge_between(&view, recv, send),
                              *wait_recv = edge_between(&view, wait, recv);
    assert_int_equal(recv_send->compute.count, BEFORE + AFTER);
    assert_int_equal(recv_send->compute.sum_ns, (uint64_t)(BEFORE + AFTER) * 90);
    assert_int_equal(wait_recv->compute.count, BEFORE + AFTER);
    assert_int_equal(edge_between(&view, recv, wait)->compute.count, 1);
    /* returns: Recv's and Wait's along the full iteration into the broken one too (BEFORE of them, then
     * AFTER − 1), Send's not (BEFORE − 1 and AFTER − 1), Send → Wait → Recv → Wait → Recv around it */
    const uint32_t full[3] = {recv, send, wait}, from_send[3] = {send, wait, recv},
                   from_wait[3] = {wait, recv, send}, short_recv[2] = {recv, wait},
                   short_wait[2] = {wait, recv}, around[5] = {send, wait, recv, wait, recv};
    assert_int_equal(path_count_of(&view, full, 3), BEFORE + AFTER - 1);
    assert_int_equal(path_count_of(&view, from_send, 3), BEFORE - 1 + AFTER - 1);
    assert_int_equal(path_count_of(&view, from_wait, 3), BEFORE + AFTER - 1);
    assert_int_equal(path_count_of(&view, short_recv, 2), 1);
    assert_int_equal(path_count_of(&view, short_wait, 2), 1);
    assert_int_equal(path_count_of(&view, around, 5), 1);
    assert_int_equal(view.path_count, 6);
    assert_int_equal(view.untracked, 0);
    otfx_structure_destroy(whole);
    free(events);
    world_close(&w);
}

/* Send, Recv 100 times, once Recv inside compute instead, then 100 times more: the call the cycle expects
 * next, in another context, is another node (whole or event by event). */
static void test_a_cycle_breaks_on_the_same_call_in_another_context(void **state)
{
    (void)state;
    world w;
    world_open(&w, 1, 1u << 20, OTFX_REDUCE_RING);
    enum { ROUNDS = 100, EVENTS = 2 * (2 * (2 * ROUNDS + 1) + 1) };
    otfx_event *events = malloc(EVENTS * sizeof *events);
    assert_non_null(events);
    size_t count = 0;
    otfx_time now = 1000;
    for (int i = 0; i < 2 * ROUNDS + 1; i++) {
        count = stream_call(events, count, w.send, &now);
        if (i == ROUNDS)
            events[count++] = (otfx_event){.time = now, .type = OTFX_EV_ENTER, .u.region.region = w.compute};
        count = stream_call(events, count, w.recv, &now);
        if (i == ROUNDS)
            events[count++] = (otfx_event){.time = now, .type = OTFX_EV_LEAVE, .u.region.region = w.compute};
    }
    assert_int_equal(count, EVENTS);
    otfx_structure_view view;
    otfx_structure *whole = fed_whole_and_one_by_one(&w, events, count, &view);
    assert_int_equal(view.node_count, 3);
    for (uint32_t i = 0; i < view.node_count; i++) {
        const bool nested = strcmp(view.nodes[i].context, "compute") == 0;
        assert_int_equal(view.nodes[i].visits, strcmp(view.nodes[i].name, "MPI_Send") == 0 ? 2 * ROUNDS + 1
                                               : nested                                    ? 1
                                                                                           : 2 * ROUNDS);
    }
    assert_int_equal(view.untracked, 0);
    otfx_structure_destroy(whole);
    free(events);
    world_close(&w);
}

/* A trace configured without the graph (the benchmarks' comparison) keeps it empty. */
static void test_graph_can_be_left_out(void **state)
{
    (void)state;
    world w;
    memset(&w, 0, sizeof w);
    w.defs = otfx_defs_create();
    otfx_ref location;
    assert_int_equal(otfx_defs_location(w.defs, 2, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(w.defs, "MPI_Recv", OTFX_ROLE_MPI_P2P, &w.recv), OTFX_OK);
    assert_int_equal(otfx_defs_region(w.defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &w.send), OTFX_OK);
    uint32_t members[4] = {0, 1, 2, 3};
    assert_int_equal(otfx_defs_comm(w.defs, "MPI_COMM_WORLD", members, 4, &w.world_comm), OTFX_OK);
    otfx_trace_config config = otfx_trace_config_default(1u << 20);
    assert_true(config.structure);
    config.structure = false;
    assert_int_equal(otfx_trace_create(&config, w.defs, location, &w.trace), OTFX_OK);
    w.now = 1000;
    recv_compute_send(&w, 2, 10, 100);
    otfx_structure_view view;
    otfx_structure *graph = structure_of(&w, &view);
    assert_int_equal(view.node_count, 0);
    assert_int_equal(view.events, 0);
    otfx_structure_destroy(graph);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(w.trace, &status), OTFX_OK);
    assert_int_equal(status.events_received, 60);
    world_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop_gives_two_nodes_and_a_back_edge),
        cmocka_unit_test(test_size_independent_of_iterations_and_reductions),
        cmocka_unit_test(test_reductions_leave_the_graph_whole),
        cmocka_unit_test(test_context_loop_marker_and_completions),
        cmocka_unit_test(test_phase_markers_are_nodes),
        cmocka_unit_test(test_channel_ends_keep_sums_and_tails),
        cmocka_unit_test(test_reset_drops_the_graph),
        cmocka_unit_test(test_graph_can_be_left_out),
        cmocka_unit_test(test_long_cycles_count_every_visit_however_fed),
        cmocka_unit_test(test_a_cycle_breaks_on_the_same_call_in_another_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_analysis_modules.c — the built-in analysis modules (status, profile, timeline, messages, events)
 * on traces built in-process: exact results on a hand-made job, the same answer whatever the order and
 * tree shape of the merges and however the ranks are spread over places, and malformed partial results
 * (truncated, random) refused without a crash and without changing the merged result. */
#include "random_stream.h"

#include <otfx/analysis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_RANKS 16

typedef struct world {
    otfx_defs *defs;
    uint32_t ranks;
    otfx_trace *traces[MAX_RANKS];
    otfx_rank_info info[MAX_RANKS];
    uint32_t local[MAX_RANKS], threads[MAX_RANKS];
} world;

static void world_free(world *w)
{
    for (uint32_t r = 0; r < w->ranks; r++)
        otfx_trace_destroy(w->traces[r]);
    otfx_defs_destroy(w->defs);
}

static void append(otfx_trace *trace, const otfx_event *events, size_t count)
{
    size_t appended = 0;
    assert_int_equal(otfx_trace_append(trace, events, count, &appended), OTFX_OK);
    assert_int_equal(appended, count);
}

/* Four ranks, the same program with a rank-dependent send time:
 *   1000 enter main; 2000 enter MPI_Send; 2100 send to r+1 (100 bytes); 2000+250(r+1) leave;
 *   4000 enter compute; 6000 leave; 6000 enter MPI_Allreduce; 7000 leave; 10000 leave main.
 * Rank 3 does not record and is paused. */
static void hand_world(world *w)
{
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    w->ranks = 4;
    otfx_ref main_r, send_r, compute_r, allreduce_r, comm;
    assert_int_equal(otfx_defs_region(w->defs, "main", OTFX_ROLE_USER_FUNCTION, &main_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &send_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "compute", OTFX_ROLE_USER_FUNCTION, &compute_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE, &allreduce_r),
                     OTFX_OK);
    uint32_t members[4] = {0, 1, 2, 3};
    assert_int_equal(otfx_defs_comm(w->defs, "MPI_COMM_WORLD", members, 4, &comm), OTFX_OK);
    for (uint32_t r = 0; r < 4; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(w->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, w->defs, location, &w->traces[r]), OTFX_OK);
        otfx_event e[9];
        memset(e, 0, sizeof e);
        e[0] = (otfx_event){.time = 1000, .type = OTFX_EV_ENTER, .u.region.region = main_r};
        e[1] = (otfx_event){.time = 2000, .type = OTFX_EV_ENTER, .u.region.region = send_r};
        e[2].time = 2100;
        e[2].type = OTFX_EV_SEND;
        e[2].u.msg.comm = comm;
        e[2].u.msg.peer = (r + 1) % 4;
        e[2].u.msg.tag = 7;
        e[2].u.msg.bytes = 100;
        e[2].u.msg.seq = r == 3 ? 0 : 1; /* rank 3's ordinal unknown: no seq= */
        e[3] = (otfx_event){.time = 2000 + 250 * (r + 1), .type = OTFX_EV_LEAVE, .u.region.region = send_r};
        e[4] = (otfx_event){.time = 4000, .type = OTFX_EV_ENTER, .u.region.region = compute_r};
        e[5] = (otfx_event){.time = 6000, .type = OTFX_EV_LEAVE, .u.region.region = compute_r};
        e[6] = (otfx_event){.time = 6000, .type = OTFX_EV_ENTER, .u.region.region = allreduce_r};
        e[7] = (otfx_event){.time = 7000, .type = OTFX_EV_LEAVE, .u.region.region = allreduce_r};
        e[8] = (otfx_event){.time = 10000, .type = OTFX_EV_LEAVE, .u.region.region = main_r};
        append(w->traces[r], e, 9);
        w->info[r] = (otfx_rank_info){.rank = r,
                                      .recording = r != 3,
                                      .paused = r == 3,
                                      .paused_since_ns = r == 3 ? 8000 : 0,
                                      .not_recording_since_ns = r == 3 ? 7000 : 0,
                                      .events_per_s = 10 + r};
    }
}

/* `ranks` ranks running the stencil pattern under a small buffer (ring reduction happens). */
static void stencil_world(world *w, uint32_t ranks, size_t events)
{
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    w->ranks = ranks;
    for (uint32_t r = 0; r < ranks; r++) {
        random_stream_config config = random_stream_config_default(RANDOM_STREAM_STENCIL, 7 + r);
        config.rank = r;
        config.world_size = ranks;
        random_stream *stream = random_stream_create(w->defs, &config);
        assert_non_null(stream);
        otfx_trace_config tc = otfx_trace_config_default(64 * 1024);
        tc.chunk_bytes = 4096;
        assert_int_equal(otfx_trace_create(&tc, w->defs, random_stream_location(stream), &w->traces[r]),
                         OTFX_OK);
        otfx_event batch[1024];
        for (size_t done = 0; done < events; done += 1024) {
            size_t n = random_stream_next(stream, batch, 1024);
            size_t appended;
            otfx_status status = otfx_trace_append(w->traces[r], batch, n, &appended);
            assert_true(status == OTFX_OK || status == OTFX_ERR_STOPPED);
        }
        size_t n;
        while ((n = random_stream_finish(stream, batch, 1024)) > 0) {
            size_t appended;
            otfx_trace_append(w->traces[r], batch, n, &appended);
        }
        random_stream_destroy(stream);
        w->info[r] = (otfx_rank_info){.rank = r, .recording = true};
    }
}

/* The leaf input of place p when the ranks are spread in contiguous blocks over `places` places. */
static otfx_leaf_input place_input(world *w, uint32_t p, uint32_t places)
{
    uint32_t first = p * w->ranks / places, last = (p + 1) * w->ranks / places;
    for (uint32_t i = 0; i < MAX_RANKS; i++)
        w->local[i] = i;
    otfx_leaf_input input = {.place = (int)p,
                             .defs = w->defs,
                             .traces = w->traces + first,
                             .rank_of_trace = w->local,
                             .thread_of_trace = w->threads,
                             .trace_count = last - first,
                             .ranks = w->info + first,
                             .rank_count = last - first,
                             .app_ranks = w->ranks,
                             .now_ns = 20000};
    return input;
}

static void leaf(const otfx_analysis_module *m, const otfx_command *q, world *w, uint32_t p, uint32_t places,
                 otfx_blob *out)
{
    char error[256] = "";
    otfx_leaf_input input = place_input(w, p, places);
    memset(out, 0, sizeof *out);
    if (!m->leaf(q, &input, out, error, sizeof error))
        fail_msg("%s leaf: %s", m->name, error);
}

static void merge(const otfx_analysis_module *m, const otfx_command *q, otfx_blob *into,
                  const otfx_blob *other)
{
    char error[256] = "";
    if (!m->merge(q, into, other->data, other->length, error, sizeof error))
        fail_msg("%s merge: %s", m->name, error);
}

static char *finish(const otfx_analysis_module *m, const otfx_command *q, const otfx_blob *merged)
{
    char error[256] = "";
    otfx_text reply = {0};
    if (!m->finish(q, merged->data, merged->length, 4, 4, &reply, error, sizeof error))
        fail_msg("%s finish: %s", m->name, error);
    otfx_text_append(&reply, "", 1);
    assert_false(reply.failed);
    return reply.data;
}

enum { ORDER_LEFT, ORDER_RIGHT, ORDER_TREE, ORDER_SHUFFLED, ORDER_COUNT };

/* The reply to `q` over `places` places whose partials are merged in the given order. */
static char *run(const otfx_analysis_module *m, const otfx_command *q, world *w, uint32_t places, int order)
{
    otfx_blob partial[MAX_RANKS];
    for (uint32_t p = 0; p < places; p++)
        leaf(m, q, w, p, places, &partial[p]);
    otfx_blob merged = {0};
    if (order == ORDER_LEFT) {
        for (uint32_t p = 0; p < places; p++)
            merge(m, q, &merged, &partial[p]);
    } else if (order == ORDER_RIGHT) { /* p3 + (p2 + (p1 + p0)) */
        for (uint32_t p = places; p-- > 0;) {
            otfx_blob next = {0};
            merge(m, q, &next, &partial[p]);
            if (merged.length)
                merge(m, q, &next, &merged);
            otfx_blob_free(&merged);
            merged = next;
        }
    } else if (order == ORDER_TREE) { /* pairs, then pairs of pairs */
        uint32_t n = places;
        otfx_blob level[MAX_RANKS];
        for (uint32_t p = 0; p < n; p++) {
            memset(&level[p], 0, sizeof level[p]);
            merge(m, q, &level[p], &partial[p]);
        }
        while (n > 1) {
            uint32_t k = 0;
            for (uint32_t p = 0; p < n; p += 2) {
                otfx_blob next = level[p];
                if (p + 1 < n) {
                    merge(m, q, &next, &level[p + 1]);
                    otfx_blob_free(&level[p + 1]);
                }
                level[k++] = next;
            }
            n = k;
        }
        merged = level[0];
    } else { /* a fixed shuffle: 2, 0, 3, 1, ... */
        for (uint32_t i = 0; i < places; i++)
            merge(m, q, &merged, &partial[(i * 3 + 2) % places]);
    }
    char *text = finish(m, q, &merged);
    otfx_blob_free(&merged);
    for (uint32_t p = 0; p < places; p++)
        otfx_blob_free(&partial[p]);
    return text;
}

static otfx_command command(otfx_command_kind kind)
{
    otfx_command q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.to = UINT64_MAX;
    return q;
}

static void expect(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

/* ---- exact results ------------------------------------------------------------------------------ */

static const otfx_analysis_module *module(otfx_command_kind kind)
{
    const otfx_analysis_module *m = otfx_analysis_for_command(kind);
    assert_non_null(m);
    assert_ptr_equal(otfx_analysis_find(m->name), m);
    return m;
}

static void test_status(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command q = command(OTFX_CMD_STATUS);
    char *text = run(module(OTFX_CMD_STATUS), &q, &w, 2, ORDER_RIGHT);
    expect(text, "place index=0 ranks=2 first_rank=0 last_rank=1 threads=2 events_per_s=21 ");
    expect(text, "place index=1 ranks=2 first_rank=2 last_rank=3 threads=2 events_per_s=25 ");
    expect(text, " events_received=18 events_held=18 events_reduced=0 ");
    expect(text, " recording=on app_state=running ranks_recording=2 ranks_paused=0 ranks_finished=0 ");
    expect(text, " recording=mixed app_state=mixed ranks_recording=1 ranks_paused=1 ranks_finished=0 ");
    expect(text, " paused_ranks=none not_recording_ranks=none finished_ranks=none ");
    expect(text, " paused_ranks=3 not_recording_ranks=3 finished_ranks=none ");
    expect(text, " first_time=1000 last_time=10000 ");
    /* when the paused rank paused and stopped recording, where its place says so and in the summary;
     * not where no rank is paused */
    expect(text,
           " ranks_paused=1 ranks_finished=0 paused_since=8000 not_recording_since=7000 paused_ranks=3 ");
    const char *place0 = strstr(text, "place index=0");
    const char *place0_end = strchr(place0, '\n');
    const char *since = strstr(place0, " paused_since=");
    assert_true(since == NULL || since > place0_end);
    expect(text, "summary places=2 places_answered=4 places_total=4 ranks=4 events_per_s=46 ");
    /* the task activity graphs' memory, beside the budget: every rank made MPI calls */
    const char *graphs = strstr(strstr(text, "summary "), " structure_bytes=");
    assert_non_null(graphs);
    assert_true(strtoull(graphs + strlen(" structure_bytes="), NULL, 10) > 0);
    expect(text, " events_received=36 events_held=36 ");
    expect(text, " recording=mixed app_state=mixed ranks_recording=3 ranks_paused=1 ");
    assert_non_null(strstr(strstr(text, "summary "), " paused_since=8000 not_recording_since=7000 "));
    /* the summary's is the latest over the places: when the last rank paused */
    w.info[1].paused = true;
    w.info[1].paused_since_ns = 9000;
    free(text);
    text = run(module(OTFX_CMD_STATUS), &q, &w, 2, ORDER_RIGHT);
    assert_non_null(strstr(strstr(text, "summary "), " ranks_paused=2 ranks_finished=0 paused_since=9000 "));
    w.info[1].paused = false;
    w.info[1].paused_since_ns = 0;
    free(text);
    text = run(module(OTFX_CMD_STATUS), &q, &w, 2, ORDER_RIGHT);
    assert_true(strstr(text, "place index=0") < strstr(text, "place index=1"));
    free(text);
    /* the event classes the ranks record, read back by viewers: rank 2 records no user functions */
    for (int r = 0; r < 4; r++)
        w.info[r].enabled_classes = r == 2 ? OTFX_STEER_ALL & ~OTFX_STEER_USER : OTFX_STEER_ALL;
    text = run(module(OTFX_CMD_STATUS), &q, &w, 2, ORDER_RIGHT);
    expect(text, " classes=15 classes_any=15 ");
    expect(text, " classes=7 classes_any=15 ");
    assert_non_null(strstr(strstr(text, "summary "), " classes=7 classes_any=15 "));
    /* the answering place's clock, to place what a client saw on the job's time axis */
    const char *now = strstr(strstr(text, "summary "), " now=");
    assert_non_null(now);
    assert_true(strtoull(now + strlen(" now="), NULL, 10) > 0);
    /* one line per rank: 36 events over 4 ranks; rank 3 is paused and does not record */
    expect(text, "rank rank=0 place=0 events_held=");
    expect(text, "rank rank=2 place=1 events_held=");
    expect(text, " recording=off app_state=paused\n");
    uint64_t rank_total = 0;
    for (const char *line = strstr(text, "rank rank="); line; line = strstr(line + 1, "rank rank=")) {
        const char *held = strstr(line, "events_held=");
        assert_non_null(held);
        rank_total += strtoull(held + strlen("events_held="), NULL, 10);
    }
    assert_int_equal(rank_total, 36);
    free(text);
    /* every rank finished */
    for (int r = 0; r < 4; r++)
        w.info[r].finished = true;
    text = run(module(OTFX_CMD_STATUS), &q, &w, 1, ORDER_LEFT);
    expect(text, "summary places=1 ");
    expect(text, " recording=off app_state=finished ranks_recording=0 ranks_paused=0 ranks_finished=4");
    expect(text, " paused_ranks=none not_recording_ranks=none finished_ranks=0-3 ");
    free(text);
    world_free(&w);
}

static void test_profile(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command q = command(OTFX_CMD_PROFILE);
    char *text = run(module(OTFX_CMD_PROFILE), &q, &w, 2, ORDER_LEFT);
    expect(text, "profile from=0 to=18446744073709551615 ranks=all approximate=0 locations=4 regions=4 "
                 "total_exclusive_ns=36000 places_answered=4 places_total=4\n"
                 "region name=main role=user visits=4 inclusive_ns=36000 exclusive_ns=21500 share=");
    expect(text, "region name=compute role=user visits=4 inclusive_ns=8000 exclusive_ns=8000 ");
    expect(text, "region name=MPI_Allreduce role=collective visits=4 inclusive_ns=4000 exclusive_ns=4000 ");
    expect(text, "region name=MPI_Send role=p2p visits=4 inclusive_ns=2500 exclusive_ns=2500 ");
    expect(text, " messages_sent=4 bytes_sent=400 ");
    /* sorted by exclusive time */
    assert_true(strstr(text, "name=compute") < strstr(text, "name=MPI_Allreduce"));
    assert_true(strstr(text, "name=MPI_Allreduce") < strstr(text, "name=MPI_Send"));
    free(text);
    /* a rank set and a window */
    otfx_rank_set_parse("0-1", &q.ranks);
    q.from = 2000;
    q.to = 5000;
    text = run(module(OTFX_CMD_PROFILE), &q, &w, 2, ORDER_TREE);
    expect(text, "profile from=2000 to=5000 ranks=0-1 approximate=0 locations=2 regions=3 ");
    expect(text, "region name=MPI_Send role=p2p visits=2 inclusive_ns=750 exclusive_ns=750 ");
    expect(text, "region name=compute role=user visits=2 inclusive_ns=2000 exclusive_ns=2000 ");
    expect(text, "region name=main role=user visits=0 inclusive_ns=6000 exclusive_ns=3250 ");
    free(text);
    world_free(&w);
}

static void test_timeline_window(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command q = command(OTFX_CMD_TIMELINE);
    q.from = 1000;
    q.to = 11000;
    q.bins = 10;
    char *text = run(module(OTFX_CMD_TIMELINE), &q, &w, 2, ORDER_LEFT);
    expect(text, "timeline mode=window from=1000 to=11000 bins=10 width_ns=1000 ranks=all selected=4 rows=4 "
                 "grouped=0 approximate=0 places_answered=4 places_total=4\n");
    /* legend sorted by name: MPI_Allreduce, MPI_Send, compute, main */
    expect(text, "legend id=0 name=MPI_Allreduce role=collective\n");
    expect(text, "legend id=3 name=main role=user\n");
    expect(text,
           "row index=0 first_rank=0 last_rank=0 ranks=1 user=1000,750,1000,1000,1000,0,1000,1000,1000,0 "
           "p2p=0,250,0,0,0,0,0,0,0,0 collective=0,0,0,0,0,1000,0,0,0,0 mpi_other=0,0,0,0,0,0,0,0,0,0 "
           "phase=0,0,0,0,0,0,0,0,0,0 reduced=0,0,0,0,0,0,0,0,0,0 dominant=3,3,3,2,2,0,3,3,3,-\n");
    expect(text, "row index=3 first_rank=3 last_rank=3 ranks=1 user=1000,0,1000,");
    expect(text, " dominant=3,1,3,2,2,0,3,3,3,-\n");
    free(text);
    /* grouped: two rows of two ranks */
    q.rows = 2;
    text = run(module(OTFX_CMD_TIMELINE), &q, &w, 4, ORDER_TREE);
    expect(text, " selected=4 rows=2 grouped=1 ");
    expect(text, "row index=0 first_rank=0 last_rank=1 ranks=2 user_min=1000,500,");
    expect(text,
           " p2p_min=0,250,0,0,0,0,0,0,0,0 p2p_mean=0,375,0,0,0,0,0,0,0,0 p2p_max=0,500,0,0,0,0,0,0,0,0 ");
    expect(text, "row index=1 first_rank=2 last_rank=3 ranks=2 ");
    expect(text,
           " p2p_min=0,750,0,0,0,0,0,0,0,0 p2p_mean=0,875,0,0,0,0,0,0,0,0 p2p_max=0,1000,0,0,0,0,0,0,0,0 ");
    /* group 0: both ranks busy 1000 in column 1, rank 0 (main) wins; group 1: rank 2's MPI_Send */
    expect(text, " dominant=3,3,3,2,2,0,3,3,3,-\nrow index=1");
    expect(text, " dominant=3,1,3,2,2,0,3,3,3,-\n");
    free(text);
    /* rank subset */
    q.rows = 0;
    otfx_rank_set_parse("2", &q.ranks);
    text = run(module(OTFX_CMD_TIMELINE), &q, &w, 2, ORDER_RIGHT);
    expect(text, " ranks=2 selected=1 rows=1 grouped=0 ");
    expect(text, "row index=0 first_rank=2 last_rank=2 ranks=1 ");
    assert_null(strstr(text, "row index=1"));
    free(text);
    world_free(&w);
}

static void compare_orders(world *w, const otfx_command *q, uint32_t places, bool compare_single_place);

static void test_timeline_held(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command q = command(OTFX_CMD_TIMELINE);
    q.bins = 10;
    /* held: [1000, 10001) on 1024 ns columns from 0 */
    char *text = run(module(OTFX_CMD_TIMELINE), &q, &w, 2, ORDER_LEFT);
    expect(text, "timeline mode=held from=0 to=10240 bins=10 width_ns=1024 ");
    expect(text, " approximate=0 ");
    expect(text, "row index=0 first_rank=0 last_rank=0 ranks=1 user=24,");
    free(text);
    /* rank 3 runs on to 41000: place 1 needs 8192 ns columns, place 0 only 1024 ns ones, and merging
     * re-bins place 0's partial: sums stay exact, the result says approximate */
    otfx_ref late;
    assert_int_equal(otfx_defs_region(w.defs, "late", OTFX_ROLE_USER_FUNCTION, &late), OTFX_OK);
    otfx_event more[2] = {{.time = 40000, .type = OTFX_EV_ENTER, .u.region.region = late},
                          {.time = 41000, .type = OTFX_EV_LEAVE, .u.region.region = late}};
    append(w.traces[3], more, 2);
    char *one = run(module(OTFX_CMD_TIMELINE), &q, &w, 1, ORDER_LEFT);
    expect(one, "timeline mode=held from=0 to=49152 bins=6 width_ns=8192 ");
    expect(one, " approximate=0 ");
    for (uint32_t places = 2; places <= 4; places += 2) {
        text = run(module(OTFX_CMD_TIMELINE), &q, &w, places, ORDER_LEFT);
        expect(text, "timeline mode=held from=0 to=49152 bins=6 width_ns=8192 ");
        expect(text, " approximate=1 ");
        for (int r = 0; r < 4; r++) { /* the same sums per rank and role */
            char key[64];
            snprintf(key, sizeof key, "row index=%d ", r);
            const char *a = strstr(one, key), *b = strstr(text, key);
            assert_non_null(a);
            assert_non_null(b);
            const char *a_end = strstr(a, " dominant="), *b_end = strstr(b, " dominant=");
            assert_int_equal(a_end - a, b_end - b);
            assert_memory_equal(a, b, (size_t)(a_end - a));
        }
        free(text);
        compare_orders(&w, &q, places, false);
    }
    free(one);
    /* an open end after the data: nothing */
    q.from = 50000;
    text = run(module(OTFX_CMD_TIMELINE), &q, &w, 2, ORDER_LEFT);
    expect(text, "timeline mode=empty ");
    assert_null(strstr(text, "row "));
    free(text);
    world_free(&w);
}

static void test_messages(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command q = command(OTFX_CMD_MESSAGES);
    char *text = run(module(OTFX_CMD_MESSAGES), &q, &w, 2, ORDER_LEFT);
    expect(text,
           "matrix from=0 to=18446744073709551615 ranks=all selected=4 groups=4 grouped=0 cells=4 count=4 "
           "bytes=400 places_answered=4 places_total=4\n");
    expect(text, "messages src=0 dst=1 src_first=0 src_last=0 dst_first=1 dst_last=1 count=1 bytes=100\n");
    expect(text, "messages src=3 dst=0 src_first=3 src_last=3 dst_first=0 dst_last=0 count=1 bytes=100\n");
    free(text);
    q.groups = 2;
    text = run(module(OTFX_CMD_MESSAGES), &q, &w, 4, ORDER_SHUFFLED);
    expect(text, " selected=4 groups=2 grouped=1 cells=4 count=4 bytes=400 ");
    expect(text, "messages src=0 dst=0 src_first=0 src_last=1 dst_first=0 dst_last=1 count=1 bytes=100\n"
                 "messages src=0 dst=1 src_first=0 src_last=1 dst_first=2 dst_last=3 count=1 bytes=100\n"
                 "messages src=1 dst=0 src_first=2 src_last=3 dst_first=0 dst_last=1 count=1 bytes=100\n"
                 "messages src=1 dst=1 src_first=2 src_last=3 dst_first=2 dst_last=3 count=1 bytes=100\n");
    free(text);
    /* only messages between selected ranks; a window without sends */
    otfx_rank_set_parse("0-1", &q.ranks);
    q.groups = 0;
    text = run(module(OTFX_CMD_MESSAGES), &q, &w, 2, ORDER_LEFT);
    expect(text, " selected=2 groups=2 grouped=0 cells=1 count=1 bytes=100 ");
    free(text);
    q.from = 3000;
    text = run(module(OTFX_CMD_MESSAGES), &q, &w, 2, ORDER_LEFT);
    expect(text, " cells=0 count=0 bytes=0 ");
    free(text);
    world_free(&w);
}

static void test_events(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command q = command(OTFX_CMD_EVENTS);
    otfx_rank_set_parse("1,3", &q.ranks);
    q.limit = 3;
    char *text = run(module(OTFX_CMD_EVENTS), &q, &w, 2, ORDER_RIGHT);
    expect(text, "events from=0 to=18446744073709551615 ranks=1,3 limit=3 locations=2 events=6 truncated=1 "
                 "places_answered=4 places_total=4\n"
                 "location rank=1 thread=0 events=3 truncated=1\n"
                 "event rank=1 thread=0 time=1000 type=enter region=main\n"
                 "event rank=1 thread=0 time=2000 type=enter region=MPI_Send\n"
                 "event rank=1 thread=0 time=2100 type=send peer=2 tag=7 bytes=100 seq=1\n"
                 "location rank=3 thread=0 events=3 truncated=1\n");
    assert_non_null(strstr(text, "event rank=3 thread=0 time=2100 type=send peer=0 tag=7 bytes=100\n"));
    free(text);
    /* a window: the regions open at its start come first, at their enter times */
    q.from = 4500;
    q.to = 7000;
    q.limit = 0;
    otfx_rank_set_parse("0", &q.ranks);
    text = run(module(OTFX_CMD_EVENTS), &q, &w, 2, ORDER_LEFT);
    expect(text, "location rank=0 thread=0 events=4 truncated=0\n"
                 "event rank=0 thread=0 time=1000 type=enter region=main\n"
                 "event rank=0 thread=0 time=4000 type=enter region=compute\n"
                 "event rank=0 thread=0 time=6000 type=leave region=compute\n"
                 "event rank=0 thread=0 time=6000 type=enter region=MPI_Allreduce\n");
    assert_null(strstr(text, "time=7000"));
    free(text);
    world_free(&w);
}

/* One rank with two threads: a rank's cells add its threads, events and profiles list both. */
static void test_threads(void **state)
{
    (void)state;
    world w;
    memset(&w, 0, sizeof w);
    w.defs = otfx_defs_create();
    w.ranks = 1;
    otfx_ref work;
    assert_int_equal(otfx_defs_region(w.defs, "work", OTFX_ROLE_USER_FUNCTION, &work), OTFX_OK);
    otfx_trace *traces[2];
    for (uint32_t t = 0; t < 2; t++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(w.defs, 0, t, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, w.defs, location, &traces[t]), OTFX_OK);
        otfx_event e[2] = {{.time = 1000 + 500 * t, .type = OTFX_EV_ENTER, .u.region.region = work},
                           {.time = 2000 + 500 * t, .type = OTFX_EV_LEAVE, .u.region.region = work}};
        append(traces[t], e, 2);
    }
    otfx_rank_info info = {.rank = 0, .recording = true};
    uint32_t rank_of_trace[2] = {0, 0}, thread_of_trace[2] = {1, 0};
    otfx_trace *reversed[2] = {traces[1], traces[0]}; /* the place may hold them in any order */
    otfx_leaf_input input = {.place = 0,
                             .defs = w.defs,
                             .traces = reversed,
                             .rank_of_trace = rank_of_trace,
                             .thread_of_trace = thread_of_trace,
                             .trace_count = 2,
                             .ranks = &info,
                             .rank_count = 1,
                             .app_ranks = 1};
    otfx_command_kind kinds[] = {OTFX_CMD_TIMELINE, OTFX_CMD_EVENTS, OTFX_CMD_PROFILE};
    const char *expected[] = {"row index=0 first_rank=0 last_rank=0 ranks=1 user=1500,500 ",
                              "location rank=0 thread=0 events=2 truncated=0\n"
                              "event rank=0 thread=0 time=1000 type=enter region=work\n"
                              "event rank=0 thread=0 time=2000 type=leave region=work\n"
                              "location rank=0 thread=1 events=2 truncated=0\n"
                              "event rank=0 thread=1 time=1500 type=enter region=work\n",
                              "region name=work role=user visits=2 inclusive_ns=2000 exclusive_ns=2000 "};
    for (int k = 0; k < 3; k++) {
        const otfx_analysis_module *m = module(kinds[k]);
        otfx_command q = command(kinds[k]);
        if (kinds[k] == OTFX_CMD_TIMELINE) {
            q.from = 1000;
            q.to = 3000;
            q.bins = 2;
        }
        char error[256] = "";
        otfx_blob partial = {0};
        assert_true(m->leaf(&q, &input, &partial, error, sizeof error));
        char *text = finish(m, &q, &partial);
        expect(text, expected[k]);
        free(text);
        otfx_blob_free(&partial);
    }
    for (int t = 0; t < 2; t++)
        otfx_trace_destroy(traces[t]);
    otfx_defs_destroy(w.defs);
}

/* Commands as a client sends them (otfx_command_parse) reach the modules as expected. */
static void test_parsed_commands(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    struct {
        const char *line, *expected;
    } cases[] = {
        {"status", "summary places=2 places_answered=4 places_total=4 ranks=4 "},
        {"profile --ranks 0-1 --from 2000ns --to 5000ns",
         "profile from=2000 to=5000 ranks=0-1 approximate=0 "},
        {"timeline --from 1000ns --to 11000ns --bins 10 --rows 2",
         "timeline mode=window from=1000 to=11000 bins=10 width_ns=1000 ranks=all selected=4 rows=2 "
         "grouped=1 "},
        {"timeline --bins 10", "timeline mode=held from=0 to=10240 bins=10 width_ns=1024 "},
        {"messages --groups 2",
         "matrix from=0 to=18446744073709551615 ranks=all selected=4 groups=2 grouped=1 "},
        {"events --ranks 1,3 --limit 3",
         "events from=0 to=18446744073709551615 ranks=1,3 limit=3 locations=2 "},
        /* --from 0 is a given time: a window, not the held range */
        {"timeline --from 0 --to 10000ns --bins 10",
         "timeline mode=window from=0 to=10000 bins=10 width_ns=1000 "},
        {"timeline --to 10000ns --bins 10", "timeline mode=held from=0 to=10240 bins=10 width_ns=1024 "},
        /* extreme times from a client: answered, no overflow (the sanitizer build checks) */
        {"timeline --from 18446744073709551614ns --bins 10000", "timeline mode="},
        {"timeline --to 18446744073709551614ns --bins 3", "timeline mode=held "},
        {"timeline --from 18446744073709551613ns --to 18446744073709551614ns --bins 10000",
         "timeline mode=window "},
        {"profile --from 18446744073709551614ns", "profile from=18446744073709551614 "},
        {"events --from 18446744073709551614ns --limit 10000000", "events from=18446744073709551614 "},
        {"messages --to 1ns", "matrix from=0 to=1 "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        otfx_command q;
        char error[256] = "";
        if (!otfx_command_parse(cases[i].line, &q, error, sizeof error))
            fail_msg("%s: %s", cases[i].line, error);
        char *text = run(module(q.kind), &q, &w, 2, ORDER_TREE);
        expect(text, cases[i].expected);
        free(text);
    }
    world_free(&w);
}

/* Under `stop`, events refused by a full buffer were never stored: status counts them as dropped
 * (dropped_stop, and in dropped_events as the place reports them), not as reduced, as the place's
 * end-of-run report does. */
static void test_stop_counts_as_dropped(void **state)
{
    (void)state;
    world w;
    memset(&w, 0, sizeof w);
    w.defs = otfx_defs_create();
    w.ranks = 1;
    random_stream_config config = random_stream_config_default(RANDOM_STREAM_STENCIL, 3);
    config.rank = 0;
    config.world_size = 2;
    random_stream *stream = random_stream_create(w.defs, &config);
    assert_non_null(stream);
    otfx_trace_config tc = otfx_trace_config_default(64 * 1024);
    tc.chunk_bytes = 4096;
    tc.strategy = OTFX_REDUCE_STOP;
    assert_int_equal(otfx_trace_create(&tc, w.defs, random_stream_location(stream), &w.traces[0]), OTFX_OK);
    otfx_event batch[1024];
    for (int i = 0; i < 40; i++) {
        size_t n = random_stream_next(stream, batch, 1024), appended;
        otfx_status status = otfx_trace_append(w.traces[0], batch, n, &appended);
        assert_true(status == OTFX_OK || status == OTFX_ERR_STOPPED);
    }
    random_stream_destroy(stream);
    otfx_trace_status s;
    assert_int_equal(otfx_trace_status_get(w.traces[0], &s), OTFX_OK);
    assert_true(s.events_reduced[OTFX_REDUCE_STOP] > 0);
    /* the place counts them into the rank's dropped events (places/src/tree_host.c) */
    w.info[0] =
        (otfx_rank_info){.rank = 0, .recording = true, .dropped_events = s.events_reduced[OTFX_REDUCE_STOP]};
    otfx_command q = command(OTFX_CMD_STATUS);
    char *text = run(module(OTFX_CMD_STATUS), &q, &w, 1, ORDER_LEFT);
    char expected[128];
    snprintf(expected, sizeof expected,
             " events_reduced=0 reduced_fraction=0 dropped_events=%llu dropped_stop=%llu ",
             (unsigned long long)s.events_reduced[OTFX_REDUCE_STOP],
             (unsigned long long)s.events_reduced[OTFX_REDUCE_STOP]);
    expect(text, expected);
    assert_null(strstr(text, "reduced_stop"));
    snprintf(expected, sizeof expected, " events_reduced=0 reductions=%llu dropped_events=%llu ",
             (unsigned long long)s.reductions, (unsigned long long)s.events_reduced[OTFX_REDUCE_STOP]);
    expect(text, expected);
    /* the summary names the cause too, so a viewer can say why events are missing */
    snprintf(expected, sizeof expected, " dropped_stop=%llu ",
             (unsigned long long)s.events_reduced[OTFX_REDUCE_STOP]);
    assert_non_null(strstr(strstr(text, "summary "), expected));
    free(text);
    world_free(&w);
}

/* ---- queries in pieces (the read lock is released between them) -------------------------------- */

/* A trace of ~300000 mixed events (deep user regions, reduction records) under `strategy`, reduced a
 * few times: summary-only gaps, thinned pieces, an open chunk. */
static otfx_trace *big_trace(otfx_defs *defs, otfx_reduction strategy, size_t events)
{
    random_stream_config config = random_stream_config_default(RANDOM_STREAM_MIXED, 11);
    random_stream *stream = random_stream_create(defs, &config);
    assert_non_null(stream);
    otfx_trace_config tc = otfx_trace_config_default(1024 * 1024);
    tc.chunk_bytes = 16 * 1024;
    tc.strategy = strategy;
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&tc, defs, random_stream_location(stream), &trace), OTFX_OK);
    otfx_event *batch = malloc(sizeof *batch * 4096);
    assert_non_null(batch);
    for (size_t done = 0; done < events; done += 4096) {
        size_t n = random_stream_next(stream, batch, 4096), appended;
        otfx_status status = otfx_trace_append(trace, batch, n, &appended);
        assert_true(status == OTFX_OK || status == OTFX_ERR_STOPPED);
    }
    free(batch);
    random_stream_destroy(stream);
    return trace;
}

typedef struct recorded {
    otfx_event *events;
    size_t count, capacity;
} recorded;

static int record_event(const otfx_event *event, void *user)
{
    recorded *r = user;
    if (r->count == r->capacity) {
        r->capacity = r->capacity ? 2 * r->capacity : 4096;
        r->events = realloc(r->events, sizeof *r->events * r->capacity);
        assert_non_null(r->events);
    }
    r->events[r->count++] = *event;
    return 0;
}

/* Piece by piece, the same events as one query over the window, whatever the window and strategy. */
static void test_events_in_pieces(void **state)
{
    (void)state;
    const otfx_reduction strategies[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TIME, OTFX_REDUCE_TYPE};
    for (size_t k = 0; k < sizeof strategies / sizeof strategies[0]; k++) {
        otfx_defs *defs = otfx_defs_create();
        otfx_trace *trace = big_trace(defs, strategies[k], 300000);
        otfx_trace_status st;
        assert_int_equal(otfx_trace_status_get(trace, &st), OTFX_OK);
        assert_true(st.events_held > 3 * OTFX_ANALYSIS_EVENTS_PER_LOCK);
        const otfx_time span = st.last_time - st.first_time;
        const otfx_time windows[][2] = {{0, OTFX_TIME_MAX},
                                        {st.first_time + span / 3, st.first_time + 2 * span / 3},
                                        {st.first_time + span / 2, OTFX_TIME_MAX}};
        for (size_t w = 0; w < 3; w++)
            for (int context = 0; context < 2; context++) {
                recorded whole = {0}, pieces = {0};
                assert_int_equal(
                    otfx_query_events(trace, windows[w][0], windows[w][1], context, record_event, &whole),
                    OTFX_OK);
                assert_int_equal(otfx_analysis_query_events(trace, windows[w][0], windows[w][1], context,
                                                            record_event, &pieces),
                                 OTFX_OK);
                for (size_t i = 0; i < whole.count && i < pieces.count; i++)
                    if (memcmp(&whole.events[i], &pieces.events[i], sizeof whole.events[i]) != 0) {
                        for (size_t j = i >= 3 ? i - 3 : 0; j < i + 4 && j < whole.count && j < pieces.count;
                             j++)
                            print_message("%zu: whole %llu type %d (%u) | pieces %llu type %d (%u)\n", j,
                                          (unsigned long long)whole.events[j].time, whole.events[j].type,
                                          whole.events[j].u.region.region,
                                          (unsigned long long)pieces.events[j].time, pieces.events[j].type,
                                          pieces.events[j].u.region.region);
                        break;
                    }
                if (whole.count != pieces.count)
                    fail_msg("strategy %s window %zu context %d: %zu events in one query, %zu in pieces",
                             otfx_reduction_name(strategies[k]), w, context, whole.count, pieces.count);
                for (size_t i = 0; i < whole.count; i++)
                    if (memcmp(&whole.events[i], &pieces.events[i], sizeof whole.events[i]) != 0)
                        fail_msg("strategy %s window %zu context %d: event %zu differs (time %llu type %d vs "
                                 "time %llu type %d)",
                                 otfx_reduction_name(strategies[k]), w, context, i,
                                 (unsigned long long)whole.events[i].time, whole.events[i].type,
                                 (unsigned long long)pieces.events[i].time, pieces.events[i].type);
                free(whole.events);
                free(pieces.events);
            }
        otfx_trace_destroy(trace);
        otfx_defs_destroy(defs);
    }
}

/* A timeline that lets appends in between chunks has the same columns as one that does not. */
static void test_timeline_in_pieces(void **state)
{
    (void)state;
    const otfx_reduction strategies[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TIME};
    for (size_t k = 0; k < 2; k++) {
        otfx_defs *defs = otfx_defs_create();
        otfx_trace *trace = big_trace(defs, strategies[k], 300000);
        otfx_trace_status st;
        assert_int_equal(otfx_trace_status_get(trace, &st), OTFX_OK);
        const uint32_t counts[] = {7, 100, 10000};
        for (size_t c = 0; c < 3; c++) {
            const uint32_t columns = counts[c];
            const otfx_time windows[][2] = {
                {st.first_time, st.last_time + 1},
                {st.first_time + (st.last_time - st.first_time) / 3, st.last_time + 1}};
            for (size_t w = 0; w < 2; w++) {
                otfx_timeline_bin *whole = malloc(sizeof *whole * columns),
                                  *pieces = malloc(sizeof *pieces * columns);
                assert_non_null(whole);
                assert_non_null(pieces);
                assert_int_equal(otfx_query_timeline(trace, windows[w][0], windows[w][1], columns, whole),
                                 OTFX_OK);
                for (uint32_t per_lock = 1; per_lock <= 4; per_lock *= 2) {
                    assert_int_equal(otfx_query_timeline_yielding(trace, windows[w][0], windows[w][1],
                                                                  columns, pieces, per_lock),
                                     OTFX_OK);
                    if (memcmp(whole, pieces, sizeof *whole * columns) != 0)
                        fail_msg(
                            "strategy %s, %u columns, window %zu, %u chunks per lock: the timeline differs",
                            otfx_reduction_name(strategies[k]), columns, w, per_lock);
                }
                free(whole);
                free(pieces);
            }
        }
        otfx_trace_destroy(trace);
        otfx_defs_destroy(defs);
    }
}

/* ---- merge order and placement ------------------------------------------------------------------ */

/* Removes status's " now=T" (the clock when the answer was made: differs between any two runs). */
static char *without_clock(char *text)
{
    for (char *at = strstr(text, " now="); at; at = strstr(at, " now=")) {
        const char *end = at + strlen(" now=");
        while (*end >= '0' && *end <= '9')
            end++;
        memmove(at, end, strlen(end) + 1);
    }
    return text;
}

static void compare_orders(world *w, const otfx_command *q, uint32_t places, bool compare_single_place)
{
    const otfx_analysis_module *m = module(q->kind);
    char *reference = without_clock(run(m, q, w, places, ORDER_LEFT));
    for (int order = ORDER_RIGHT; order < ORDER_COUNT; order++) {
        char *text = without_clock(run(m, q, w, places, order));
        if (strcmp(text, reference) != 0)
            fail_msg("%s: order %d differs:\n%.2000s\n----\n%.2000s", m->name, order, text, reference);
        free(text);
    }
    if (compare_single_place) {
        char *text = without_clock(run(m, q, w, 1, ORDER_LEFT));
        if (strcmp(text, reference) != 0)
            fail_msg("%s: one place differs from %u:\n%.2000s\n----\n%.2000s", m->name, places, text,
                     reference);
        free(text);
    }
    free(reference);
}

static void test_merge_order_independent(void **state)
{
    (void)state;
    world w;
    stencil_world(&w, 8, 40000);
    otfx_trace_status s;
    assert_int_equal(otfx_trace_status_get(w.traces[0], &s), OTFX_OK);
    assert_true(s.events_reduced[OTFX_REDUCE_RING] > 0); /* reduction happened */
    uint64_t mid = s.first_time + (s.last_time - s.first_time) / 2;

    otfx_command q = command(OTFX_CMD_STATUS);
    compare_orders(&w, &q, 4, false);
    compare_orders(&w, &q, 8, false);
    q = command(OTFX_CMD_PROFILE);
    compare_orders(&w, &q, 4, true);
    q.from = mid;
    q.to = mid + (s.last_time - mid) / 2;
    compare_orders(&w, &q, 8, true);
    q = command(OTFX_CMD_MESSAGES);
    compare_orders(&w, &q, 4, true);
    q.groups = 3;
    compare_orders(&w, &q, 8, true);
    q = command(OTFX_CMD_EVENTS);
    q.from = mid;
    q.to = mid + 200000;
    q.limit = 500;
    compare_orders(&w, &q, 4, true);
    q = command(OTFX_CMD_TIMELINE);
    q.from = s.first_time;
    q.to = s.last_time;
    q.bins = 50;
    compare_orders(&w, &q, 4, true);
    q.rows = 3; /* groups spanning places */
    compare_orders(&w, &q, 4, true);
    compare_orders(&w, &q, 8, true);
    q = command(OTFX_CMD_TIMELINE); /* held window, one row per rank */
    q.bins = 64;
    compare_orders(&w, &q, 4, false);
    compare_orders(&w, &q, 8, false);
    world_free(&w);
}

/* ---- malformed partial results ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* A merge of bad bytes must fail and leave `into` as it was; finish must fail or succeed, never crash. */
static void expect_refused(const otfx_analysis_module *m, const otfx_command *q, const otfx_blob *valid,
                           const unsigned char *bad, size_t length, bool must_fail)
{
    char error[256] = "";
    otfx_blob into = {0};
    otfx_blob_append(&into, valid->data, valid->length);
    bool merged = m->merge(q, &into, bad, length, error, sizeof error);
    if (must_fail && merged)
        fail_msg("%s: merge accepted a malformed partial of %zu bytes", m->name, length);
    if (!merged) {
        assert_int_equal(into.length, valid->length);
        assert_memory_equal(into.data, valid->data, valid->length);
        assert_true(error[0] != '\0');
    }
    otfx_blob_free(&into);
    /* into empty: becomes a copy only when valid */
    otfx_blob empty = {0};
    merged = m->merge(q, &empty, bad, length, error, sizeof error);
    if (must_fail)
        assert_false(merged);
    if (!merged)
        assert_int_equal(empty.length, 0);
    otfx_blob_free(&empty);
    if (length > 0) {
        otfx_text reply = {0};
        bool finished = m->finish(q, bad, length, 1, 1, &reply, error, sizeof error);
        if (must_fail)
            assert_false(finished);
        otfx_text_free(&reply);
    }
}

static void test_malformed_partials(void **state)
{
    (void)state;
    world w;
    hand_world(&w);
    otfx_command_kind kinds[] = {OTFX_CMD_STATUS, OTFX_CMD_PROFILE, OTFX_CMD_TIMELINE, OTFX_CMD_MESSAGES,
                                 OTFX_CMD_EVENTS};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const otfx_analysis_module *m = module(kinds[k]);
        otfx_command q = command(kinds[k]);
        q.bins = 8;
        otfx_blob valid, other;
        leaf(m, &q, &w, 0, 2, &valid);
        leaf(m, &q, &w, 1, 2, &other);
        /* every truncation */
        for (size_t cut = 0; cut < other.length; cut++)
            expect_refused(m, &q, &valid, other.data, cut, true);
        /* random bytes, and random bytes after a valid start */
        unsigned char *bad = malloc(other.length + 512);
        assert_non_null(bad);
        for (int round = 0; round < 2000; round++) {
            size_t length = next_random() % (other.length + 512);
            size_t keep = round % 2 ? next_random() % (other.length + 1) : 0;
            if (keep > length)
                keep = length;
            memcpy(bad, other.data, keep);
            for (size_t i = keep; i < length; i++)
                bad[i] = (unsigned char)next_random();
            expect_refused(m, &q, &valid, bad, length, keep == 0 && length >= 4);
        }
        /* single flipped bytes: refused or accepted, never a crash */
        for (size_t i = 0; i < other.length; i++) {
            memcpy(bad, other.data, other.length);
            bad[i] ^= (unsigned char)(1u << (next_random() % 8));
            expect_refused(m, &q, &valid, bad, other.length, false);
        }
        /* the same place twice is refused where places or locations must be unique */
        if (kinds[k] == OTFX_CMD_STATUS || kinds[k] == OTFX_CMD_EVENTS) {
            char error[256];
            otfx_blob into = {0};
            otfx_blob_append(&into, valid.data, valid.length);
            assert_false(m->merge(&q, &into, valid.data, valid.length, error, sizeof error));
            assert_int_equal(into.length, valid.length);
            otfx_blob_free(&into);
        }
        free(bad);
        otfx_blob_free(&valid);
        otfx_blob_free(&other);
    }
    world_free(&w);
}

static void test_rank_selection(void **state)
{
    (void)state;
    otfx_rank_set set;
    assert_true(otfx_rank_set_parse("8-11,0-3,2-5,100", &set));
    otfx_rank_selection s;
    otfx_rank_selection_init(&s, &set, 10, 3);
    assert_int_equal(s.count, 8); /* 0-5, 8-9 */
    assert_int_equal(s.groups, 3);
    assert_int_equal(otfx_rank_selection_position(&s, 8), 6);
    assert_int_equal(otfx_rank_selection_position(&s, 6), UINT32_MAX);
    assert_int_equal(otfx_rank_selection_rank(&s, 7), 9);
    uint32_t first, last, total = 0;
    for (uint32_t g = 0; g < 3; g++) {
        otfx_rank_selection_group_ranks(&s, g, &first, &last);
        for (uint32_t r = 0; r < 10; r++)
            if (otfx_rank_selection_group(&s, r) == g) {
                assert_true(r >= first && r <= last);
                total++;
            }
    }
    assert_int_equal(total, 8);
    otfx_rank_selection_group_ranks(&s, 2, &first, &last);
    assert_int_equal(last, 9);
    otfx_rank_selection_init(&s, NULL, 0, 4);
    assert_int_equal(s.count, 0);
    assert_int_equal(s.groups, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_selection),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_timeline_window),
        cmocka_unit_test(test_timeline_held),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_parsed_commands),
        cmocka_unit_test(test_stop_counts_as_dropped),
        cmocka_unit_test(test_events_in_pieces),
        cmocka_unit_test(test_timeline_in_pieces),
        cmocka_unit_test(test_merge_order_independent),
        cmocka_unit_test(test_malformed_partials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

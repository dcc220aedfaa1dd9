/* test_structure_module.c — the `structure` module (docs/analyses.md, "Program structure") on synthetic
 * traces built in-process: the groups known by construction, the same bytes whatever the leaves, the
 * order and the tree of the merges, grouping by edge times within the tolerance (and `inf`), the lowest
 * rank as the representative whose graph is shown.
 *
 * The program: a 1-D chain of ranks, every iteration a loop marker, MPI_Send to rank + 1 (not on the
 * last rank), MPI_Recv from rank − 1 (not on the first), a computation of the rank's own length, an
 * MPI_Allreduce. Every rank has the same nodes and edges (a call without a partner is still a call); the
 * first and the last rank have their own neighbourhoods (only +1 sent, only −1 received), the others
 * share theirs (+1 sent, −1 received): three groups when the times agree.
 *
 * Transfer times (receive end − send start, paired by channel ordinals): a pair of ranks where rank 0
 * sends message i at a known time and rank 1's receive returns it a known d_i later, served by one leaf
 * or by two, with ends the other side has not yet, too many of them, a gap in the ordinals, or a channel
 * received at two call sites. */
#include <otfx/analysis.h>
#include <otfx/structure.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_RANKS 8

typedef struct world {
    otfx_defs *defs;
    uint32_t ranks;
    otfx_trace *traces[MAX_RANKS];
    otfx_rank_info info[MAX_RANKS];
} world;

typedef struct rank_program {
    otfx_time compute_ns; /* between MPI_Recv and MPI_Allreduce */
    int iterations;
} rank_program;

static void append(otfx_trace *trace, otfx_event event)
{
    size_t appended = 0;
    assert_int_equal(otfx_trace_append(trace, &event, 1, &appended), OTFX_OK);
    assert_int_equal(appended, 1);
}

static void call(otfx_trace *trace, otfx_ref region, otfx_time *now, otfx_time duration,
                 const otfx_event *message)
{
    append(trace, (otfx_event){.time = *now, .type = OTFX_EV_ENTER, .u.region.region = region});
    if (message)
        append(trace, *message);
    *now += duration;
    append(trace, (otfx_event){.time = *now, .type = OTFX_EV_LEAVE, .u.region.region = region});
}

static void chain_world(world *w, uint32_t ranks, const rank_program *programs)
{
    assert_true(ranks <= MAX_RANKS);
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    w->ranks = ranks;
    otfx_ref main_r, loop_r, send_r, recv_r, allreduce_r, comm;
    assert_int_equal(otfx_defs_region(w->defs, "main", OTFX_ROLE_USER_FUNCTION, &main_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "solver_loop", OTFX_ROLE_USER_FUNCTION, &loop_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &send_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Recv", OTFX_ROLE_MPI_P2P, &recv_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE, &allreduce_r),
                     OTFX_OK);
    uint32_t members[MAX_RANKS];
    for (uint32_t r = 0; r < ranks; r++)
        members[r] = r;
    assert_int_equal(otfx_defs_comm(w->defs, "MPI_COMM_WORLD", members, ranks, &comm), OTFX_OK);
    for (uint32_t r = 0; r < ranks; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(w->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, w->defs, location, &w->traces[r]), OTFX_OK);
        otfx_trace *trace = w->traces[r];
        otfx_time now = 1000;
        append(trace, (otfx_event){.time = now, .type = OTFX_EV_ENTER, .u.region.region = main_r});
        for (int i = 0; i < programs[r].iterations; i++) {
            append(trace, (otfx_event){.time = now, .type = OTFX_EV_ENTER, .u.region.region = loop_r});
            now += 1000;
            otfx_event send = {.time = now + 10, .type = OTFX_EV_SEND};
            send.u.msg.comm = comm;
            send.u.msg.peer = r + 1;
            send.u.msg.bytes = 64;
            send.u.msg.seq = (uint64_t)i + 1;
            call(trace, send_r, &now, 100, r + 1 < ranks ? &send : NULL);
            now += 2000;
            otfx_event recv = {.time = now + 50, .type = OTFX_EV_RECV};
            recv.u.msg.comm = comm;
            recv.u.msg.peer = r - 1;
            recv.u.msg.bytes = 64;
            recv.u.msg.seq = (uint64_t)i + 1;
            call(trace, recv_r, &now, 200, r > 0 ? &recv : NULL);
            now += programs[r].compute_ns;
            call(trace, allreduce_r, &now, 300, NULL);
            now += 500;
            append(trace, (otfx_event){.time = now, .type = OTFX_EV_LEAVE, .u.region.region = loop_r});
        }
        append(trace, (otfx_event){.time = now, .type = OTFX_EV_LEAVE, .u.region.region = main_r});
        w->info[r] = (otfx_rank_info){.rank = r, .recording = true};
    }
}

static void world_free(world *w)
{
    for (uint32_t r = 0; r < w->ranks; r++)
        otfx_trace_destroy(w->traces[r]);
    otfx_defs_destroy(w->defs);
}

static const otfx_analysis_module *structure_module(void)
{
    const otfx_analysis_module *m = otfx_analysis_for_command(OTFX_CMD_STRUCTURE);
    assert_non_null(m);
    assert_string_equal(m->name, "structure");
    return m;
}

static otfx_command structure_command(uint32_t tolerance_ppm)
{
    otfx_command q;
    memset(&q, 0, sizeof q);
    q.kind = OTFX_CMD_STRUCTURE;
    q.to = UINT64_MAX;
    q.group_tolerance_ppm = tolerance_ppm;
    return q;
}

/* The partial result of a leaf serving the ranks `members` (a place's own rank table, in that order). */
static void leaf(const otfx_command *q, world *w, int place, const uint32_t *members, uint32_t count,
                 otfx_blob *out)
{
    otfx_trace *traces[MAX_RANKS];
    otfx_rank_info info[MAX_RANKS];
    uint32_t rank_of_trace[MAX_RANKS];
    for (uint32_t i = 0; i < count; i++) {
        traces[i] = w->traces[members[i]];
        info[i] = w->info[members[i]];
        rank_of_trace[i] = i;
    }
    otfx_leaf_input input = {.place = place,
                             .defs = w->defs,
                             .traces = traces,
                             .rank_of_trace = rank_of_trace,
                             .trace_count = count,
                             .ranks = info,
                             .rank_count = count,
                             .app_ranks = w->ranks,
                             .now_ns = 1};
    char error[256] = "";
    memset(out, 0, sizeof *out);
    if (!structure_module()->leaf(q, &input, out, error, sizeof error))
        fail_msg("structure leaf: %s", error);
}

static void merge(const otfx_command *q, otfx_blob *into, const otfx_blob *other)
{
    char error[256] = "";
    if (!structure_module()->merge(q, into, other->data, other->length, error, sizeof error))
        fail_msg("structure merge: %s", error);
}

static char *finish(const otfx_command *q, const otfx_blob *merged)
{
    char error[256] = "";
    otfx_text reply = {0};
    if (!structure_module()->finish(q, merged->data, merged->length, 3, 3, &reply, error, sizeof error))
        fail_msg("structure finish: %s", error);
    otfx_text_append(&reply, "", 1);
    assert_false(reply.failed);
    return reply.data;
}

/* A split of the ranks over leaves: "0,3,6|1,4,7|2,5". */
typedef struct split {
    uint32_t leaves;
    uint32_t members[MAX_RANKS][MAX_RANKS];
    uint32_t count[MAX_RANKS];
} split;

static split split_of(const char *text)
{
    split s;
    memset(&s, 0, sizeof s);
    for (const char *p = text; *p;) {
        char *end;
        const unsigned long rank = strtoul(p, &end, 10);
        assert_true(end != p && rank < MAX_RANKS);
        s.members[s.leaves][s.count[s.leaves]++] = (uint32_t)rank;
        if (*end == '|')
            s.leaves++;
        p = *end ? end + 1 : end;
    }
    s.leaves++;
    return s;
}

enum merge_order { ORDER_LEFT, ORDER_RIGHT, ORDER_PAIRS, ORDER_REVERSED_PAIRS, ORDER_COUNT };

/* The reply when the leaves of `s` answer and their partial results are merged: left to right into one
 * result, right to left, as a tree of pairs (leaf 0 with 1, 2 with 3, then the pairs), or as pairs
 * taken from the last leaf, each merged into the later one. */
static char *run(const otfx_command *q, world *w, const split *s, enum merge_order order)
{
    otfx_blob partial[MAX_RANKS];
    for (uint32_t l = 0; l < s->leaves; l++)
        leaf(q, w, (int)l, s->members[l], s->count[l], &partial[l]);
    otfx_blob merged = {0};
    switch (order) {
    case ORDER_LEFT:
        for (uint32_t l = 0; l < s->leaves; l++)
            merge(q, &merged, &partial[l]);
        break;
    case ORDER_RIGHT:
        for (uint32_t l = s->leaves; l-- > 0;)
            merge(q, &merged, &partial[l]);
        break;
    case ORDER_PAIRS:
    case ORDER_REVERSED_PAIRS: {
        otfx_blob level[MAX_RANKS];
        uint32_t n = s->leaves;
        for (uint32_t l = 0; l < n; l++) {
            memset(&level[l], 0, sizeof level[l]);
            merge(q, &level[l], &partial[order == ORDER_PAIRS ? l : n - 1 - l]);
        }
        while (n > 1) {
            uint32_t k = 0;
            for (uint32_t l = 0; l < n; l += 2) {
                if (l + 1 < n) {
                    merge(q, &level[l + 1], &level[l]);
                    otfx_blob_free(&level[l]);
                    level[k++] = level[l + 1];
                } else {
                    level[k++] = level[l];
                }
            }
            n = k;
        }
        merged = level[0];
        break;
    }
    default:
        fail();
    }
    char *text = finish(q, &merged);
    otfx_blob_free(&merged);
    for (uint32_t l = 0; l < s->leaves; l++)
        otfx_blob_free(&partial[l]);
    return text;
}

static void expect(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

static int groups_in(const char *text)
{
    int groups = 0;
    for (const char *line = strstr(text, "\ngroup "); line; line = strstr(line + 1, "\ngroup "))
        groups++;
    return groups;
}

/* Eight ranks. Interior ranks 1-4 compute 1.000, 1.015, 1.030 and 1.045 ms: each within 2 % of the next,
 * rank 1 and rank 4 4.5 % apart; uniting grows a group's range of times, so they form one group
 * whatever the order they meet in. Ranks 5-6 compute 1.5 ms: a group of their own. */
static void test_same_bytes_whatever_leaves_order_and_tree(void **state)
{
    (void)state;
    const otfx_time compute[MAX_RANKS] = {1000000, 1000000, 1015000, 1030000,
                                          1045000, 1500000, 1500000, 1000000};
    rank_program programs[MAX_RANKS];
    for (uint32_t r = 0; r < MAX_RANKS; r++)
        programs[r] = (rank_program){compute[r], 20};
    world w;
    chain_world(&w, MAX_RANKS, programs);
    otfx_command q = structure_command(0); /* the default: 2 % */
    const split one = split_of("0,1,2,3,4,5,6,7");
    char *reference = run(&q, &w, &one, ORDER_LEFT);
    expect(reference,
           "structure ranks=all selected=8 groups=4 tolerance_pct=2 places_answered=3 places_total=3 "
           "messages=140 messages_timed=140\n");
    expect(reference, "\ngroup group=0 members=1 ranks=0 representative=0 nodes=4 edges=4 ");
    expect(reference, "\ngroup group=1 members=4 ranks=1-4 representative=1 nodes=4 edges=4 ");
    expect(reference, "\ngroup group=2 members=2 ranks=5-6 representative=5 nodes=4 edges=4 ");
    expect(reference, "\ngroup group=3 members=1 ranks=7 representative=7 nodes=4 edges=4 ");
    assert_int_equal(groups_in(reference), 4);
    /* the interior group's graph: one message each way per iteration, partners in the groups around */
    expect(reference, "\npeer group=1 node=");
    /* rank 1 sends at its iteration's start + 1010 ns, rank 2 receives at its own + 3150 ns, and rank 2's
     * iterations are 15 us longer: message i took 2140 + 15000 i ns; rank 0's iterations are rank 1's */
    expect(reference, " direction=send offset=1 peer_group=1 count=20 bytes=1280 transfer_count=20 "
                      "transfer_ns=2892800 transfer_mean_ns=144640\n");
    expect(reference, " direction=recv offset=-1 peer_group=0 count=20 bytes=1280 transfer_count=20 "
                      "transfer_ns=42800 transfer_mean_ns=2140\n");
    const char *splits[] = {"0,1,2,3|4,5,6,7", "0,1,2|3,4,5|6,7", "0,3,6|1,4,7|2,5", "7,5,3,1|6,4,2,0",
                            "4|2,6|0|7,1|3,5"};
    for (size_t i = 0; i < sizeof splits / sizeof *splits; i++) {
        const split s = split_of(splits[i]);
        for (int order = 0; order < ORDER_COUNT; order++) {
            char *text = run(&q, &w, &s, (enum merge_order)order);
            if (strcmp(text, reference) != 0)
                fail_msg("leaves %s, order %d:\n%s\ndiffers from one leaf:\n%s", splits[i], order, text,
                         reference);
            free(text);
        }
    }
    free(reference);
    world_free(&w);
}

/* Interior ranks (1-3 of a chain of five) whose computations are `a`, `b`, `c` ns: the groups of ranks
 * 1-3 under `tolerance_ppm`, as otfxctl prints them ("1-2/3"). */
static void interior_groups(otfx_time a, otfx_time b, otfx_time c, uint32_t tolerance_ppm, char *groups,
                            size_t size, char **reply)
{
    const rank_program programs[5] = {{1000000, 20}, {a, 20}, {b, 20}, {c, 20}, {1000000, 20}};
    world w;
    chain_world(&w, 5, programs);
    otfx_command q = structure_command(tolerance_ppm);
    const split s = split_of("0,3|1,4|2");
    char *text = run(&q, &w, &s, ORDER_RIGHT);
    groups[0] = '\0';
    for (const char *line = strstr(text, "\ngroup "); line; line = strstr(line + 1, "\ngroup ")) {
        const char *ranks = strstr(line, " ranks=") + strlen(" ranks=");
        const size_t length = strcspn(ranks, " ");
        if (strncmp(ranks, "0 ", 2) == 0 || strncmp(ranks, "4 ", 2) == 0)
            continue;
        snprintf(groups + strlen(groups), size - strlen(groups), "%s%.*s", groups[0] ? "/" : "", (int)length,
                 ranks);
    }
    world_free(&w);
    if (reply)
        *reply = text;
    else
        free(text);
}

static void test_tolerance_splits_by_edge_times(void **state)
{
    (void)state;
    char groups[64];
    /* 1 % apart: within the default 2 % */
    interior_groups(1000000, 1010000, 1000000, 0, groups, sizeof groups, NULL);
    assert_string_equal(groups, "1-3");
    /* 5 % apart: beyond it */
    interior_groups(1000000, 1050000, 1000000, 0, groups, sizeof groups, NULL);
    assert_string_equal(groups, "1,3/2");
    /* 1 % apart under --group-tolerance 0.5 */
    interior_groups(1000000, 1010000, 1000000, 5000, groups, sizeof groups, NULL);
    assert_string_equal(groups, "1,3/2");
    /* 1 % apart under --group-tolerance 1.5 */
    interior_groups(1000000, 1010000, 1000000, 15000, groups, sizeof groups, NULL);
    assert_string_equal(groups, "1-3");
    /* rank 2 three times slower: --group-tolerance inf looks at the structure only */
    char *reply = NULL;
    interior_groups(1000000, 3000000, 1000000, OTFX_GROUP_TOLERANCE_INF, groups, sizeof groups, &reply);
    assert_string_equal(groups, "1-3");
    expect(reply, "structure ranks=all selected=5 groups=3 tolerance_pct=inf ");
    free(reply);
    /* times under a microsecond apart are noise, whatever the tolerance */
    interior_groups(100000, 100900, 100000, 1, groups, sizeof groups, NULL);
    assert_string_equal(groups, "1-3");
    interior_groups(100000, 102000, 100000, 1, groups, sizeof groups, NULL);
    assert_string_equal(groups, "1,3/2");
}

/* The group shows the graph of its lowest rank, whichever leaf or merge brings it: ranks 1-3 ran 30, 20
 * and 10 iterations (visits differ, the structure and times do not). */
static void test_representative_is_the_lowest_rank(void **state)
{
    (void)state;
    const rank_program programs[5] = {
        {1000000, 20}, {1000000, 30}, {1000000, 20}, {1000000, 10}, {1000000, 20}};
    world w;
    chain_world(&w, 5, programs);
    otfx_command q = structure_command(0);
    const char *splits[] = {"0,1,2,3,4", "3|2|1|0,4", "4,3,2|1,0", "2,0|3,1,4"};
    for (size_t i = 0; i < sizeof splits / sizeof *splits; i++) {
        const split s = split_of(splits[i]);
        for (int order = 0; order < ORDER_COUNT; order++) {
            char *text = run(&q, &w, &s, (enum merge_order)order);
            expect(text, "\ngroup group=1 members=3 ranks=1-3 representative=1 ");
            expect(text, "\nnode group=1 id=0 kind=loop name=solver_loop context=main visits=30 ");
            expect(text, " name=MPI_Allreduce context=main/solver_loop visits=30 ");
            free(text);
        }
    }
    world_free(&w);
}

/* Two ranks: rank 0 sends `sends` messages on one channel (tag 7), message i at 1000 + 10000 i ns; rank
 * 1 receives `receives` of them, message i returned 1000 + 37 i ns after it was sent. `gap`: rank 1's
 * ordinals skip one. `mixed`: rank 1 receives the first message inside "setup" (another node). */
typedef struct pair_program {
    int sends, receives;
    bool gap, mixed;
} pair_program;

static otfx_time delay_of(int i)
{
    return 1000 + 37 * (otfx_time)i;
}

static void pair_world(world *w, pair_program program)
{
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    w->ranks = 2;
    otfx_ref main_r, setup_r, send_r, recv_r, comm;
    assert_int_equal(otfx_defs_region(w->defs, "main", OTFX_ROLE_USER_FUNCTION, &main_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "setup", OTFX_ROLE_USER_FUNCTION, &setup_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &send_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Recv", OTFX_ROLE_MPI_P2P, &recv_r), OTFX_OK);
    const uint32_t members[2] = {0, 1};
    assert_int_equal(otfx_defs_comm(w->defs, "MPI_COMM_WORLD", members, 2, &comm), OTFX_OK);
    for (uint32_t r = 0; r < 2; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(w->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, w->defs, location, &w->traces[r]), OTFX_OK);
        w->info[r] = (otfx_rank_info){.rank = r, .recording = true};
        otfx_trace *trace = w->traces[r];
        append(trace, (otfx_event){.time = 500, .type = OTFX_EV_ENTER, .u.region.region = main_r});
        const int messages = r == 0 ? program.sends : program.receives;
        for (int i = 0; i < messages; i++) {
            otfx_time now = 1000 + 10000 * (otfx_time)i;
            otfx_event message = {.time = now, .type = r == 0 ? OTFX_EV_SEND : OTFX_EV_RECV};
            message.u.msg.comm = comm;
            message.u.msg.peer = 1 - r;
            message.u.msg.tag = 7;
            message.u.msg.bytes = 8;
            message.u.msg.seq = (uint64_t)i + 1 + (r == 1 && program.gap && i >= 2);
            const bool in_setup = r == 1 && program.mixed && i == 0;
            if (in_setup)
                append(trace, (otfx_event){.time = now, .type = OTFX_EV_ENTER, .u.region.region = setup_r});
            if (r == 1)
                message.time += delay_of(i);
            call(trace, r == 0 ? send_r : recv_r, &now, r == 0 ? 100 : delay_of(i) + 5, &message);
            if (in_setup)
                append(trace, (otfx_event){.time = now, .type = OTFX_EV_LEAVE, .u.region.region = setup_r});
        }
        append(trace, (otfx_event){.time = 10000000, .type = OTFX_EV_LEAVE, .u.region.region = main_r});
    }
}

/* The reply of `program` on one leaf; the same bytes on two leaves, merged either way. */
static char *pair_reply(pair_program program)
{
    world w;
    pair_world(&w, program);
    otfx_command q = structure_command(OTFX_GROUP_TOLERANCE_INF);
    char *reference = run(&q, &w, &(split){1, {{0, 1}}, {2}}, ORDER_LEFT);
    const char *splits[] = {"0|1", "1|0"};
    for (size_t i = 0; i < 2; i++) {
        const split s = split_of(splits[i]);
        for (int order = 0; order < ORDER_COUNT; order++) {
            char *text = run(&q, &w, &s, (enum merge_order)order);
            if (strcmp(text, reference) != 0)
                fail_msg("leaves %s, order %d:\n%s\ndiffers from one leaf:\n%s", splits[i], order, text,
                         reference);
            free(text);
        }
    }
    world_free(&w);
    return reference;
}

static void test_transfer_time_by_construction(void **state)
{
    (void)state;
    char line[256];
    /* all 50 messages: Σ (1000 + 37 i), i < 50 = 95325 */
    char *text = pair_reply((pair_program){50, 50, false, false});
    expect(text, " messages=50 messages_timed=50\n");
    expect(text,
           " direction=send offset=1 peer_group=1 count=50 bytes=400 transfer_count=50 transfer_ns=95325 ");
    expect(text,
           " direction=recv offset=-1 peer_group=0 count=50 bytes=400 transfer_count=50 transfer_ns=95325 ");
    free(text);
    /* rank 0's place has 5 sends whose receives rank 1's has not yet: the first 45 are timed (Σ, i < 45 =
     * 81630), the 5 newer sends come off the sum through the sender's tail */
    text = pair_reply((pair_program){50, 45, false, false});
    expect(text, " messages=50 messages_timed=45\n");
    expect(text,
           " direction=send offset=1 peer_group=1 count=50 bytes=400 transfer_count=45 transfer_ns=81630 ");
    free(text);
    /* rank 1's place ahead of rank 0's (receives of sends not held yet) */
    text = pair_reply((pair_program){45, 50, false, false});
    expect(text, " messages=50 messages_timed=45\n");
    expect(text,
           " direction=recv offset=-1 peer_group=0 count=50 bytes=400 transfer_count=45 transfer_ns=81630 ");
    free(text);
    /* more ends beyond the other side's than a tail holds: not timed, and said so */
    text = pair_reply((pair_program){50 + OTFX_STRUCTURE_CHANNEL_TAIL + 1, 50, false, false});
    snprintf(line, sizeof line, " messages=%u messages_timed=0\n", 50 + OTFX_STRUCTURE_CHANNEL_TAIL + 1);
    expect(text, line);
    expect(text, " direction=recv offset=-1 peer_group=0 count=50 bytes=400 transfer_count=0 transfer_ns=0 ");
    free(text);
    /* a gap in the receiver's ordinals: its n-th end is not the n-th message */
    text = pair_reply((pair_program){50, 50, true, false});
    expect(text, " messages=50 messages_timed=0\n");
    free(text);
    /* the channel received at two call sites: timed, but the receiving side's edges cannot say which of
     * its messages went through which node; the sending side's one edge can */
    text = pair_reply((pair_program){50, 50, false, true});
    expect(text, " messages=50 messages_timed=50\n");
    expect(text,
           " direction=send offset=1 peer_group=1 count=50 bytes=400 transfer_count=50 transfer_ns=95325 ");
    expect(text, " direction=recv offset=-1 peer_group=0 count=49 bytes=392 transfer_count=0 transfer_ns=0 ");
    expect(text, " direction=recv offset=-1 peer_group=0 count=1 bytes=8 transfer_count=0 transfer_ns=0 ");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_whatever_leaves_order_and_tree),
        cmocka_unit_test(test_tolerance_splits_by_edge_times),
        cmocka_unit_test(test_representative_is_the_lowest_rank),
        cmocka_unit_test(test_transfer_time_by_construction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_critical_path.c — the critical-path module on synthetic traces whose answers are known by
 * construction: a serial part before a broadcast, zeroing, a token ring, and random message and
 * collective graphs against a longest-path computation over the explicit graph written here; each on
 * one place and with the ranks split over 2 and 3 places (replay_world.h). */
#include "replay_world.h"

#define OP_BARRIER   0u
#define OP_BCAST     1u
#define OP_GATHER    2u
#define OP_ALLREDUCE 11u
#define OP_REDUCE    12u

static const otfx_analysis_module *module(void)
{
    const otfx_analysis_module *m = otfx_analysis_for_command(OTFX_CMD_CRITICAL_PATH);
    assert_non_null(m);
    assert_string_equal(m->name, "critical-path");
    return m;
}

/* Rank 0 computes `serial` 100 ms, then broadcasts; all 4 ranks compute 100 ms, then gather to 0:
 * the path is 200 ms, serial is half of it but a fifth of the CPU time. */
static void test_serial_then_parallel(void **state)
{
    (void)state;
    rworld w;
    rw_init(&w, 4);
    otfx_ref serial = rw_region(&w, "serial", OTFX_ROLE_USER_FUNCTION);
    otfx_ref compute = rw_region(&w, "compute", OTFX_ROLE_USER_FUNCTION);
    otfx_ref bcast = rw_region(&w, "MPI_Bcast", OTFX_ROLE_MPI_COLLECTIVE);
    otfx_ref gather = rw_region(&w, "MPI_Gather", OTFX_ROLE_MPI_COLLECTIVE);
    rw_compute(&w, 0, serial, 0, 100 * RW_MS);
    uint64_t arrive[4] = {100 * RW_MS, 0, 0, 0}, done[4], gather_at[4], gather_done[4];
    for (int r = 0; r < 4; r++) {
        done[r] = 100 * RW_MS;
        gather_at[r] = 200 * RW_MS;
        gather_done[r] = 200 * RW_MS;
    }
    rw_collective(&w, bcast, OP_BCAST, 0, arrive, done);
    for (uint32_t r = 0; r < 4; r++)
        rw_compute(&w, r, compute, 100 * RW_MS, 200 * RW_MS);
    rw_collective(&w, gather, OP_GATHER, 0, gather_at, gather_done);

    otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), 200 * RW_MS);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "path_cpu_ns"), 200 * RW_MS);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "cpu_ns"), 500 * RW_MS);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "serial", "cp_ns"), 100 * RW_MS);
    assert_true(rw_f64(reply, "cp-function", "name", "serial", "cp_share") == 0.5);
    assert_true(rw_f64(reply, "cp-function", "name", "serial", "cpu_share") == 0.2);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "compute", "cp_ns"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "compute", "cpu_ns"), 400 * RW_MS);
    assert_int_equal(rw_u64(reply, "cp-segment", "function", "serial", "start"), 0);
    assert_int_equal(rw_u64(reply, "cp-segment", "function", "serial", "end"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "partial"), 0);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_stalled"), 0);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

/* Rank 1 runs f 60 ms and g 40 ms and sends to rank 0, which runs h 90 ms and receives: the path is
 * 100 ms (f 60 %, g 40 %, h 0 %); with f zeroed it is 90 ms (h's path). */
static void build_zeroing(rworld *w)
{
    rw_init(w, 2);
    otfx_ref f = rw_region(w, "f", OTFX_ROLE_USER_FUNCTION);
    otfx_ref g = rw_region(w, "g", OTFX_ROLE_USER_FUNCTION);
    otfx_ref h = rw_region(w, "h", OTFX_ROLE_USER_FUNCTION);
    rw_compute(w, 1, f, 0, 60 * RW_MS);
    rw_compute(w, 1, g, 60 * RW_MS, 100 * RW_MS);
    rw_send(w, 1, 0, 100 * RW_MS, 101 * RW_MS);
    rw_compute(w, 0, h, 0, 90 * RW_MS);
    rw_recv(w, 0, 1, 90 * RW_MS, 101 * RW_MS);
}

static void test_zeroing(void **state)
{
    (void)state;
    rworld w;
    build_zeroing(&w);
    otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
    char *reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), 100 * RW_MS);
    assert_true(rw_f64(reply, "cp-function", "name", "f", "cp_share") == 0.6);
    assert_true(rw_f64(reply, "cp-function", "name", "g", "cp_share") == 0.4);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "h", "cp_ns"), 0);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "h", "cpu_ns"), 90 * RW_MS);
    assert_null(rw_field(reply, "critical-path", NULL, NULL, "zeroed_ns"));
    rw_check_splits(module(), &q, &w, reply);
    free(reply);

    snprintf(q.zero, sizeof q.zero, "f");
    reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "zeroed_ns"), 90 * RW_MS);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "f", "zeroed_ns"), 90 * RW_MS);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);

    /* zeroing h changes nothing: h is not on the path */
    snprintf(q.zero, sizeof q.zero, "h");
    reply = rw_run_one_place(module(), &q, &w);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "zeroed_ns"), 100 * RW_MS);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

/* K rounds of a token passed around n ranks, rank i computing c_i before passing it on: the path is
 * K * sum(c_i). */
static void test_token_ring(void **state)
{
    (void)state;
    enum { N = 4, K = 5 };
    const uint64_t c[N] = {3 * RW_MS, 5 * RW_MS, 7 * RW_MS, 11 * RW_MS};
    rworld w;
    rw_init(&w, N);
    otfx_ref work = rw_region(&w, "work", OTFX_ROLE_USER_FUNCTION);
    uint64_t now = 0;
    uint64_t waiting_since[N] = {0};
    for (int k = 0; k < K; k++)
        for (uint32_t i = 0; i < N; i++) {
            if (k > 0 || i > 0)
                rw_recv(&w, i, (i + N - 1) % N, waiting_since[i], now);
            rw_compute(&w, i, work, now, now + c[i]);
            now += c[i];
            rw_send(&w, i, (i + 1) % N, now, now);
            waiting_since[i] = now;
        }
    rw_recv(&w, 0, N - 1, waiting_since[0], now);
    otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
    char *reply = rw_run_one_place(module(), &q, &w);
    uint64_t sum = 0;
    for (int i = 0; i < N; i++)
        sum += c[i];
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), K * sum);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "work", "cp_ns"), K * sum);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "segments_total"), K * N);
    rw_check_splits(module(), &q, &w, reply);
    free(reply);
    rw_free(&w);
}

/* ---- random graphs against the longest path over the explicit graph ------------------------------------ */

/* A compute region: CPU time of one function on one rank. */
typedef struct gpiece {
    uint32_t rank, function;
    uint64_t begin, end;
    int node; /* the node it is the weight of (-1: not made yet) */
} gpiece;

typedef struct gnode {
    int local; /* the previous node of the rank, -1: none */
    uint32_t rank;
    uint64_t weight;          /* CPU time from it */
    uint64_t zeroed;          /* the same without f0's time */
    int remote[RW_MAX_RANKS]; /* nodes it depends on across ranks, by ascending rank */
    int remote_count;
} gnode;

typedef struct graph {
    gnode nodes[4096];
    int count;
    int last[RW_MAX_RANKS];
    uint64_t pending[RW_MAX_RANKS], pending_zeroed[RW_MAX_RANKS];
    gpiece pieces[4096];
    int piece_count;
    uint64_t durations[4096]; /* every duration drawn, to keep them distinct */
    int duration_count;
} graph;

static int graph_node(graph *g, uint32_t rank)
{
    assert_true(g->count < 4096);
    gnode *n = &g->nodes[g->count];
    memset(n, 0, sizeof *n);
    n->local = g->last[rank];
    n->rank = rank;
    n->weight = g->pending[rank];
    n->zeroed = g->pending_zeroed[rank];
    for (int i = 0; i < g->piece_count; i++)
        if (g->pieces[i].rank == rank && g->pieces[i].node < 0)
            g->pieces[i].node = g->count;
    g->pending[rank] = g->pending_zeroed[rank] = 0;
    g->last[rank] = g->count;
    return g->count++;
}

static uint64_t seed_state;
static uint64_t next_random(void)
{
    seed_state = seed_state * 6364136223846793005ull + 1442695040888963407ull;
    return seed_state >> 33;
}

#define GRAPH_MAX_SEGMENTS 512

typedef struct random_case {
    uint64_t length, zeroed;
    uint64_t cp[3];                      /* f0, f1, f2 on the path */
    gpiece segments[GRAPH_MAX_SEGMENTS]; /* the path's pieces, adjacent ones of a function joined */
    int segment_count;
} random_case;

static int compare_piece(const void *x, const void *y)
{
    const gpiece *a = x, *b = y;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Builds a random program on `ranks` ranks and its graph; *expected gets the longest path and the
 * longest path with f0 zeroed, by dynamic programming over the nodes in creation order (a topological
 * one), and the path's pieces. Compute durations are distinct, so two paths of equal length differ
 * only by pieces of no CPU time; ties are broken as the module does (the local path on ties, then the
 * lowest rank), so that the path, its function times and its pieces are unique. */
static void build_random(rworld *w, uint32_t ranks, uint64_t seed, random_case *expected)
{
    static graph g;
    memset(&g, 0, sizeof g);
    memset(expected, 0, sizeof *expected);
    for (uint32_t r = 0; r < RW_MAX_RANKS; r++)
        g.last[r] = -1;
    seed_state = seed;
    rw_init(w, ranks);
    otfx_ref functions[3] = {rw_region(w, "f0", OTFX_ROLE_USER_FUNCTION),
                             rw_region(w, "f1", OTFX_ROLE_USER_FUNCTION),
                             rw_region(w, "f2", OTFX_ROLE_USER_FUNCTION)};
    otfx_ref allreduce = rw_region(w, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE);
    otfx_ref bcast = rw_region(w, "MPI_Bcast", OTFX_ROLE_MPI_COLLECTIVE);
    otfx_ref reduce = rw_region(w, "MPI_Reduce", OTFX_ROLE_MPI_COLLECTIVE);
    uint64_t now[RW_MAX_RANKS] = {0};
    for (uint32_t r = 0; r < ranks; r++)
        now[r] = 1000 + next_random() % 1000;
    int steps = 20 + (int)(next_random() % 30);
    for (int s = 0; s < steps; s++) {
        uint64_t kind = next_random() % 10;
        if (kind < 5) { /* computes */
            uint32_t r = (uint32_t)(next_random() % ranks);
            uint32_t f = (uint32_t)(next_random() % 3);
            uint64_t d;
            bool taken;
            do {
                d = 1000 + next_random() % 100000;
                taken = false;
                for (int i = 0; i < g.duration_count; i++)
                    taken = taken || g.durations[i] == d;
            } while (taken);
            g.durations[g.duration_count++] = d;
            rw_compute(w, r, functions[f], now[r], now[r] + d);
            g.pieces[g.piece_count++] = (gpiece){r, f, now[r], now[r] + d, -1};
            now[r] += d;
            g.pending[r] += d;
            g.pending_zeroed[r] += f == 0 ? 0 : d;
        } else if (kind < 8) { /* a message */
            uint32_t a = (uint32_t)(next_random() % ranks), b = (uint32_t)(next_random() % (ranks - 1));
            b = b >= a ? b + 1 : b;
            uint64_t send_at = now[a];
            rw_send(w, a, b, send_at, send_at + 10);
            int send_node = graph_node(&g, a);
            now[a] = send_at + 10;
            uint64_t done = (send_at > now[b] ? send_at : now[b]) + 20;
            rw_recv(w, b, a, now[b], done);
            int receive_node = graph_node(&g, b);
            g.nodes[receive_node].remote[g.nodes[receive_node].remote_count++] = send_node;
            now[b] = done;
        } else { /* a collective over everybody */
            uint64_t which = next_random() % 3;
            uint32_t root = (uint32_t)(next_random() % ranks);
            uint64_t arrive[RW_MAX_RANKS], done[RW_MAX_RANKS], last = 0;
            int arrival[RW_MAX_RANKS];
            for (uint32_t r = 0; r < ranks; r++) {
                arrive[r] = now[r];
                last = arrive[r] > last ? arrive[r] : last;
            }
            for (uint32_t r = 0; r < ranks; r++)
                done[r] = last + 30;
            uint32_t op = which == 0 ? OP_ALLREDUCE : which == 1 ? OP_BCAST : OP_REDUCE;
            rw_collective(w,
                          which == 0   ? allreduce
                          : which == 1 ? bcast
                                       : reduce,
                          op, op == OP_ALLREDUCE ? UINT32_MAX : root, arrive, done);
            for (uint32_t r = 0; r < ranks; r++)
                arrival[r] = graph_node(&g, r);
            for (uint32_t r = 0; r < ranks; r++) {
                int end = graph_node(&g, r);
                gnode *n = &g.nodes[end];
                for (uint32_t j = 0; j < ranks; j++) {
                    bool depends = op == OP_ALLREDUCE ? j != r
                                   : op == OP_BCAST   ? (r != root && j == root)
                                                      : (r == root && j != r);
                    if (depends)
                        n->remote[n->remote_count++] = arrival[j];
                }
                now[r] = done[r];
            }
        }
    }
    for (uint32_t r = 0; r < ranks; r++)
        graph_node(&g, r); /* the end of each rank */
    static uint64_t longest[4096], longest_zeroed[4096];
    static int from_remote[4096]; /* the remote node the path comes from, -1: the local one */
    int end = -1;
    for (int i = 0; i < g.count; i++) {
        const gnode *n = &g.nodes[i];
        longest[i] = (n->local >= 0 ? longest[n->local] : 0) + n->weight;
        longest_zeroed[i] = (n->local >= 0 ? longest_zeroed[n->local] : 0) + n->zeroed;
        from_remote[i] = -1;
        int best = -1;
        for (int k = 0; k < n->remote_count; k++) {
            if (best < 0 || longest[n->remote[k]] > longest[best])
                best = n->remote[k];
            if (longest_zeroed[n->remote[k]] > longest_zeroed[i])
                longest_zeroed[i] = longest_zeroed[n->remote[k]];
        }
        if (best >= 0 && longest[best] > longest[i]) {
            longest[i] = longest[best];
            from_remote[i] = best;
        }
        expected->zeroed = longest_zeroed[i] > expected->zeroed ? longest_zeroed[i] : expected->zeroed;
        /* the path ends on the rank with the longest length, the lowest rank on ties */
        if (g.last[n->rank] == i && (end < 0 || longest[i] > longest[end] ||
                                     (longest[i] == longest[end] && n->rank < g.nodes[end].rank)))
            end = i;
    }
    expected->length = longest[end];
    /* the walk back */
    gpiece path[4096];
    int path_count = 0;
    for (int i = end; i >= 0;) {
        if (from_remote[i] >= 0) {
            i = from_remote[i];
            continue;
        }
        for (int k = 0; k < g.piece_count; k++) {
            const gpiece *piece = &g.pieces[k];
            if (piece->node != i)
                continue;
            path[path_count++] = *piece;
            expected->cp[piece->function] += piece->end - piece->begin;
        }
        i = g.nodes[i].local;
    }
    qsort(path, (size_t)path_count, sizeof *path, compare_piece);
    for (int k = 0; k < path_count; k++) {
        gpiece *last = expected->segment_count ? &expected->segments[expected->segment_count - 1] : NULL;
        if (last && last->rank == path[k].rank && last->function == path[k].function &&
            last->end == path[k].begin) {
            last->end = path[k].end;
            continue;
        }
        assert_true(expected->segment_count < GRAPH_MAX_SEGMENTS);
        expected->segments[expected->segment_count++] = path[k];
    }
}

/* The reply's cp-segment lines against the path's pieces, in order: the `limit` earliest (0: all). */
static void check_segments(const char *reply, const random_case *expected, int limit)
{
    int listed = limit && limit < expected->segment_count ? limit : expected->segment_count;
    int seen = 0;
    const char *p = reply;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t length = end ? (size_t)(end - p) : strlen(p);
        otfx_kv_line line;
        if (otfx_kv_parse(p, length, &line)) {
            if (strcmp(line.type, "cp-segment") == 0) {
                assert_true(seen < listed);
                const gpiece *s = &expected->segments[seen++];
                char function[8];
                snprintf(function, sizeof function, "f%u", s->function);
                assert_string_equal(otfx_kv_get(&line, "function"), function);
                assert_int_equal(strtoull(otfx_kv_get(&line, "rank"), NULL, 10), s->rank);
                assert_int_equal(strtoull(otfx_kv_get(&line, "start"), NULL, 10), s->begin);
                assert_int_equal(strtoull(otfx_kv_get(&line, "end"), NULL, 10), s->end);
            }
            otfx_kv_line_free(&line);
        }
        p += length + (end ? 1 : 0);
    }
    assert_int_equal(seen, listed);
}

static void check_random_reply(const char *reply, const random_case *expected, int limit)
{
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "length_ns"), expected->length);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "zeroed_ns"), expected->zeroed);
    /* the pieces of the path add up to its length */
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "path_cpu_ns"), expected->length);
    for (int f = 0; f < 3; f++) {
        char name[8];
        snprintf(name, sizeof name, "f%d", f);
        const char *cp = rw_field(reply, "cp-function", "name", name, "cp_ns");
        assert_int_equal(cp ? strtoull(cp, NULL, 10) : 0, expected->cp[f]);
    }
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "segments_total"), expected->segment_count);
    check_segments(reply, expected, limit);
    /* 0 <= CP - zeroed <= f0's share of the path */
    assert_true(expected->length >= expected->zeroed);
    assert_true(expected->length - expected->zeroed <= expected->cp[0]);
    assert_int_equal(rw_u64(reply, "unseen", NULL, NULL, "receives_stalled"), 0);
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "walk_breaks"), 0);
}

/* Random programs on one place, then with their ranks split over 2 and 3 places. */
static void test_random_graphs(void **state)
{
    (void)state;
    static random_case expected;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        rworld w;
        uint32_t ranks = 4 + (uint32_t)(seed % 5);
        build_random(&w, ranks, seed, &expected);
        otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
        snprintf(q.zero, sizeof q.zero, "f0");
        char *reply = rw_run_one_place(module(), &q, &w);
        check_random_reply(reply, &expected, 0);
        rw_strip_places(reply);
        for (int which = 0; which < RW_SPLITS; which++) {
            rw_split s = rw_split_make(w.ranks, which);
            char *split = rw_run_places(module(), &q, &w, s.places, s.place_of_rank, s.merge_order);
            check_random_reply(split, &expected, 0);
            rw_strip_places(split);
            assert_string_equal(split, reply); /* the rest too: CPU times, what could not be seen */
            free(split);
        }
        free(reply);
        /* only the earliest few segments listed, the total still counted over the whole path */
        q.limit = 1 + (uint32_t)(seed * 7 % (uint64_t)expected.segment_count);
        reply = rw_run_one_place(module(), &q, &w);
        check_random_reply(reply, &expected, (int)q.limit);
        free(reply);
        rw_split s = rw_split_make(w.ranks, (int)(seed % RW_SPLITS));
        reply = rw_run_places(module(), &q, &w, s.places, s.place_of_rank, s.merge_order);
        check_random_reply(reply, &expected, (int)q.limit);
        free(reply);
        rw_free(&w);
    }
}

/* Partial results are refused when malformed, and merging is order-independent. */
static void test_merge(void **state)
{
    (void)state;
    rworld w;
    build_zeroing(&w);
    const otfx_analysis_module *m = module();
    otfx_command q = rw_query(OTFX_CMD_CRITICAL_PATH);
    char error[256];
    otfx_leaf_input input = rw_input(&w, 0, 2, NULL);
    otfx_blob a = {0}, merged = {0};
    assert_true(m->leaf(&q, &input, &a, error, sizeof error));
    assert_true(m->merge(&q, &merged, a.data, a.length, error, sizeof error));
    assert_true(m->merge(&q, &merged, a.data, a.length, error, sizeof error));
    for (size_t cut = 0; cut < a.length; cut += 7)
        assert_false(m->merge(&q, &merged, a.data, cut, error, sizeof error));
    otfx_text reply = {0};
    assert_true(m->finish(&q, merged.data, merged.length, 1, 2, &reply, error, sizeof error));
    otfx_text_append(&reply, "", 1);
    /* two copies: the lengths are maxima, the times sums */
    assert_int_equal(rw_u64(reply.data, "critical-path", NULL, NULL, "length_ns"), 100 * RW_MS);
    assert_int_equal(rw_u64(reply.data, "cp-function", "name", "f", "cp_ns"), 120 * RW_MS);
    assert_int_equal(rw_u64(reply.data, "critical-path", NULL, NULL, "partial"), 1);
    otfx_text_free(&reply);
    otfx_blob_free(&a);
    otfx_blob_free(&merged);
    rw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial_then_parallel),
        cmocka_unit_test(test_zeroing),
        cmocka_unit_test(test_token_ring),
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_metric_modules.c — the metric modules (profile --metrics, metric-timeline) on streams built
 * in-process with known values: exact totals and rates, visits across a set mark not counted, cells
 * without data, the same answer whatever the order and tree shape of the merges and however the ranks
 * are spread over places, malformed partial results refused. */
#include <otfx/analysis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RANKS 4

typedef struct world {
    otfx_defs *defs;
    otfx_trace *traces[RANKS];
    otfx_rank_info info[RANKS];
    uint32_t local[RANKS], threads[RANKS];
} world;

/* Every rank (r = its number), times in ns, task-clock (tc) and page-faults (pf) after each event:
 *   1000 ENTER main        mark 1  tc 0     pf 10
 *   2000 ENTER compute             tc 500   pf 10
 *   3000 LEAVE compute             tc 1500  pf 20     (busy: task-clock grows 1 ns per ns)
 *   5000 ENTER MPI_Barrier         tc 1600  pf 20
 *   6000 LEAVE MPI_Barrier         tc 1650  pf 20
 *  10000 LEAVE main                tc 3000+r pf 25
 *  11000 ENTER phase2      mark 2  tc 5               (a new set: new counters)
 *  12000 LEAVE phase2              tc 800
 *  13000 ENTER straddle            tc 900
 *  14000 ENTER inner       mark 3  tc 3               (straddle's visit spans a switch)
 *  15000 LEAVE inner               tc 500
 *  16000 LEAVE straddle            tc 600 */
static void make_world(world *w)
{
    memset(w, 0, sizeof *w);
    w->defs = otfx_defs_create();
    otfx_ref main_r, compute_r, barrier_r, phase2_r, straddle_r, inner_r, mark, tc, pf;
    assert_int_equal(otfx_defs_region(w->defs, "main", OTFX_ROLE_USER_FUNCTION, &main_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "compute", OTFX_ROLE_USER_FUNCTION, &compute_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE, &barrier_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "phase2", OTFX_ROLE_USER_FUNCTION, &phase2_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "straddle", OTFX_ROLE_USER_FUNCTION, &straddle_r), OTFX_OK);
    assert_int_equal(otfx_defs_region(w->defs, "inner", OTFX_ROLE_USER_FUNCTION, &inner_r), OTFX_OK);
    assert_int_equal(otfx_defs_metric(w->defs, OTFX_METRIC_SET_MARK, "set", OTFX_METRIC_UINT64, &mark),
                     OTFX_OK);
    assert_int_equal(otfx_defs_metric(w->defs, "task-clock", "ns", OTFX_METRIC_UINT64, &tc), OTFX_OK);
    assert_int_equal(otfx_defs_metric(w->defs, "page-faults", "events", OTFX_METRIC_UINT64, &pf), OTFX_OK);
    for (uint32_t r = 0; r < RANKS; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(w->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, w->defs, location, &w->traces[r]), OTFX_OK);
        otfx_event e[48];
        size_t n = 0;
#define REGION(t, type_, region_)                                                                            \
    e[n++] = (otfx_event){.time = (t), .type = (type_), .u.region.region = (region_)}
#define METRIC(t, metric_, value_)                                                                           \
    e[n++] = (otfx_event)                                                                                    \
    {                                                                                                        \
        .time = (t), .type = OTFX_EV_METRIC, .u.metric = {.metric = (metric_), .value = (value_) }           \
    }
        REGION(1000, OTFX_EV_ENTER, main_r);
        METRIC(1000, mark, 1);
        METRIC(1000, tc, 0);
        METRIC(1000, pf, 10);
        REGION(2000, OTFX_EV_ENTER, compute_r);
        METRIC(2000, tc, 500);
        METRIC(2000, pf, 10);
        REGION(3000, OTFX_EV_LEAVE, compute_r);
        METRIC(3000, tc, 1500);
        METRIC(3000, pf, 20);
        REGION(5000, OTFX_EV_ENTER, barrier_r);
        METRIC(5000, tc, 1600);
        METRIC(5000, pf, 20);
        REGION(6000, OTFX_EV_LEAVE, barrier_r);
        METRIC(6000, tc, 1650);
        METRIC(6000, pf, 20);
        REGION(10000, OTFX_EV_LEAVE, main_r);
        METRIC(10000, tc, 3000 + r);
        METRIC(10000, pf, 25);
        REGION(11000, OTFX_EV_ENTER, phase2_r);
        METRIC(11000, mark, 2);
        METRIC(11000, tc, 5);
        REGION(12000, OTFX_EV_LEAVE, phase2_r);
        METRIC(12000, tc, 800);
        REGION(13000, OTFX_EV_ENTER, straddle_r);
        METRIC(13000, tc, 900);
        REGION(14000, OTFX_EV_ENTER, inner_r);
        METRIC(14000, mark, 3);
        METRIC(14000, tc, 3);
        REGION(15000, OTFX_EV_LEAVE, inner_r);
        METRIC(15000, tc, 500);
        REGION(16000, OTFX_EV_LEAVE, straddle_r);
        METRIC(16000, tc, 600);
#undef REGION
#undef METRIC
        size_t appended = 0;
        assert_int_equal(otfx_trace_append(w->traces[r], e, n, &appended), OTFX_OK);
        assert_int_equal(appended, n);
        w->info[r] = (otfx_rank_info){.rank = r, .recording = true};
        w->local[r] = r;
    }
}

static void world_free(world *w)
{
    for (uint32_t r = 0; r < RANKS; r++)
        otfx_trace_destroy(w->traces[r]);
    otfx_defs_destroy(w->defs);
}

static otfx_command command_of(const char *line)
{
    otfx_command q;
    char error[256];
    if (!otfx_command_parse(line, &q, error, sizeof error))
        fail_msg("'%s': %s", line, error);
    return q;
}

static const otfx_analysis_module *module_of(const char *name)
{
    const otfx_analysis_module *m = otfx_analysis_find(name);
    assert_non_null(m);
    return m;
}

/* The reply over `places` places (contiguous blocks of ranks), merged left to right, right to left, or
 * as a tree. */
static char *run(const otfx_analysis_module *m, const otfx_command *q, world *w, uint32_t places, int order)
{
    otfx_blob partial[RANKS];
    char error[256] = "";
    for (uint32_t p = 0; p < places; p++) {
        const uint32_t first = p * RANKS / places, last = (p + 1) * RANKS / places;
        otfx_leaf_input input = {.place = (int)p,
                                 .defs = w->defs,
                                 .traces = w->traces + first,
                                 .rank_of_trace = w->local,
                                 .thread_of_trace = w->threads,
                                 .trace_count = last - first,
                                 .ranks = w->info + first,
                                 .rank_count = last - first,
                                 .app_ranks = RANKS,
                                 .now_ns = 20000};
        memset(&partial[p], 0, sizeof partial[p]);
        if (!m->leaf(q, &input, &partial[p], error, sizeof error))
            fail_msg("%s leaf: %s", m->name, error);
    }
    otfx_blob merged = {0};
    if (order == 0) {
        for (uint32_t p = 0; p < places; p++)
            assert_true(m->merge(q, &merged, partial[p].data, partial[p].length, error, sizeof error));
    } else if (order == 1) {
        for (uint32_t p = places; p-- > 0;)
            assert_true(m->merge(q, &merged, partial[p].data, partial[p].length, error, sizeof error));
    } else { /* (p0 + p1) + (p2 + p3) */
        otfx_blob left = {0}, right = {0};
        for (uint32_t p = 0; p < places; p++) {
            otfx_blob *side = p < places / 2 ? &left : &right;
            assert_true(m->merge(q, side, partial[p].data, partial[p].length, error, sizeof error));
        }
        merged = left;
        if (right.length)
            assert_true(m->merge(q, &merged, right.data, right.length, error, sizeof error));
        otfx_blob_free(&right);
    }
    otfx_text reply = {0};
    if (!m->finish(q, merged.data, merged.length, places, places, &reply, error, sizeof error))
        fail_msg("%s finish: %s", m->name, error);
    otfx_text_append(&reply, "", 1);
    otfx_blob_free(&merged);
    for (uint32_t p = 0; p < places; p++)
        otfx_blob_free(&partial[p]);
    return reply.data;
}

static void expect(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

/* The reply without its header's places_answered/places_total (they differ with the places). */
static char *body(char *text)
{
    char *newline = strchr(text, '\n');
    return newline ? newline + 1 : text;
}

static void test_metric_profile(void **state)
{
    (void)state;
    world w;
    make_world(&w);
    const otfx_command q = command_of("profile --metrics");
    assert_string_equal(q.metrics, "all");
    const otfx_analysis_module *m = module_of("metric-profile");
    char *reply = run(m, &q, &w, 1, 0);
    expect(reply, "metric-profile from=0 to=18446744073709551615 ranks=all metrics=all locations=4 entries=8 "
                  "approximate=0");
    /* main: Σ (3000 + r) over 4 ranks; its callees 4 × 1000 (compute) and 4 × 50 (MPI_Barrier) */
    expect(reply,
           "region-metric name=main role=user metric=task-clock unit=ns visits=4 inclusive=12006 "
           "inclusive_ns=36000 rate_per_s=333500000 exclusive_visits=4 exclusive=7806 exclusive_ns=28000");
    /* a busy loop: task-clock grows as fast as time */
    expect(reply, "region-metric name=compute role=user metric=task-clock unit=ns visits=4 inclusive=4000 "
                  "inclusive_ns=4000 rate_per_s=1000000000");
    expect(reply, "name=MPI_Barrier role=collective metric=task-clock unit=ns visits=4 inclusive=200");
    expect(reply, "name=phase2 role=user metric=task-clock unit=ns visits=4 inclusive=3180");
    expect(reply, "name=inner role=user metric=task-clock unit=ns visits=4 inclusive=1988");
    expect(reply,
           "name=main role=user metric=page-faults unit=events visits=4 inclusive=60 inclusive_ns=36000");
    expect(reply, "exclusive_visits=4 exclusive=20");
    expect(reply, "name=compute role=user metric=page-faults unit=events visits=4 inclusive=40");
    /* a visit across a set switch is not counted; nor is the mark a metric of its own */
    assert_null(strstr(reply, "straddle"));
    assert_null(strstr(reply, OTFX_METRIC_SET_MARK));
    /* the same whatever the places and the order of the merges */
    for (uint32_t places = 1; places <= RANKS; places *= 2)
        for (int order = 0; order < 3; order++) {
            char *other = run(m, &q, &w, places, order);
            assert_string_equal(body(other), body(reply));
            free(other);
        }
    free(reply);

    /* one metric, a window that cuts main and the barrier's ENTER: they are not counted */
    const otfx_command cut = command_of("profile --metrics page-faults --from 5500ns --ranks 1");
    reply = run(m, &cut, &w, 2, 0);
    expect(reply, "metrics=page-faults locations=1 entries=0");
    free(reply);
    const otfx_command some = command_of("profile --metrics page-faults --from 1500ns --ranks 1");
    reply = run(m, &some, &w, 2, 2);
    expect(reply, "entries=2");
    expect(reply, "name=compute role=user metric=page-faults unit=events visits=1 inclusive=10");
    free(reply);
    world_free(&w);
}

static void test_metric_timeline(void **state)
{
    (void)state;
    world w;
    make_world(&w);
    const otfx_analysis_module *m = module_of("metric-timeline");
    assert_ptr_equal(otfx_analysis_for_command(OTFX_CMD_METRIC_TIMELINE), m);
    const otfx_command q = command_of("metric-timeline task-clock --from 1000ns --to 17000ns --bins 16");
    char *reply = run(m, &q, &w, 1, 0);
    expect(reply,
           "metric-timeline metric=task-clock unit=ns mode=window from=1000 to=17000 bins=16 width_ns=1000 "
           "ranks=all selected=4 rows=4");
    /* rank 0 (rank r: 3.375e8 becomes (1350 + r) / 4000 ns); no rate across a set mark: "-" */
    expect(reply, "row index=0 first_rank=0 last_rank=0 min_per_s=5e+08,1e+09,5e+07,5e+07,5e+07,3.375e+08,"
                  "3.375e+08,3.375e+08,3.375e+08,-,7.95e+08,1e+08,-,4.97e+08,1e+08,-");
    expect(reply, "covered_ns=1000,1000,1000,1000,1000,1000,1000,1000,1000,-,1000,1000,-,1000,1000,-");
    for (uint32_t places = 1; places <= RANKS; places *= 2)
        for (int order = 0; order < 3; order++) {
            char *other = run(m, &q, &w, places, order);
            assert_string_equal(body(other), body(reply));
            free(other);
        }
    free(reply);

    /* rows: the four ranks in two groups; min, mean and max over a group's ranks */
    const otfx_command grouped =
        command_of("metric-timeline task-clock --from 6000ns --to 10000ns --bins 1 --rows 2");
    reply = run(m, &grouped, &w, 2, 1);
    expect(reply, "row index=0 first_rank=0 last_rank=1 min_per_s=3.375e+08 mean_per_s=3.37625e+08 "
                  "max_per_s=3.3775e+08 covered_ns=8000");
    free(reply);

    /* held: no window given; columns W = a power of two from 0, the same however the places split */
    const otfx_command held = command_of("metric-timeline task-clock --bins 8");
    reply = run(m, &held, &w, 1, 0);
    expect(reply, "mode=held from=0 to=16384 bins=8 width_ns=2048");
    for (int order = 0; order < 3; order++) {
        char *other = run(m, &held, &w, 4, order);
        assert_string_equal(body(other), body(reply));
        free(other);
    }
    free(reply);

    /* a metric no rank reads: empty */
    const otfx_command unknown = command_of("metric-timeline cycles");
    reply = run(m, &unknown, &w, 2, 0);
    expect(reply, "metric=cycles unit= mode=empty");
    free(reply);
    world_free(&w);
}

static void test_malformed_partials(void **state)
{
    (void)state;
    world w;
    make_world(&w);
    const char *lines[] = {"profile --metrics", "metric-timeline task-clock --bins 4"};
    const char *names[] = {"metric-profile", "metric-timeline"};
    for (int k = 0; k < 2; k++) {
        const otfx_command q = command_of(lines[k]);
        const otfx_analysis_module *m = module_of(names[k]);
        otfx_leaf_input input = {.defs = w.defs,
                                 .traces = w.traces,
                                 .rank_of_trace = w.local,
                                 .thread_of_trace = w.threads,
                                 .trace_count = RANKS,
                                 .ranks = w.info,
                                 .rank_count = RANKS,
                                 .app_ranks = RANKS};
        otfx_blob valid = {0}, merged = {0};
        char error[256];
        assert_true(m->leaf(&q, &input, &valid, error, sizeof error));
        assert_true(m->merge(&q, &merged, valid.data, valid.length, error, sizeof error));
        const size_t length = merged.length;
        /* every truncation, and single flipped bytes, are refused or taken whole, never crash */
        for (size_t cut = 0; cut < valid.length; cut++) {
            otfx_blob into = {0};
            assert_true(m->merge(&q, &into, valid.data, valid.length, error, sizeof error));
            assert_false(m->merge(&q, &into, valid.data, cut, error, sizeof error));
            assert_int_equal(into.length, length); /* unchanged */
            otfx_blob_free(&into);
        }
        for (size_t at = 0; at < valid.length; at++) {
            unsigned char *bytes = malloc(valid.length);
            memcpy(bytes, valid.data, valid.length);
            bytes[at] ^= 0x5a;
            otfx_blob into = {0};
            (void)m->merge(&q, &into, bytes, valid.length, error, sizeof error);
            otfx_blob_free(&into);
            free(bytes);
        }
        otfx_blob_free(&valid);
        otfx_blob_free(&merged);
    }
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_profile),
        cmocka_unit_test(test_metric_timeline),
        cmocka_unit_test(test_malformed_partials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

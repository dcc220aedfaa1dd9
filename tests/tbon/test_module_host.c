/* test_module_host.c — loaded modules run out of process (otfx/analysis.h, otfx_module_call_*): a
 * module that loads, computes, merges and finishes; one that crashes while loading, in its leaf or in
 * its merge; one that hangs; one whose result grows without end; a malformed part left out of a merge.
 * The test process itself (the "place") is never harmed and goes on using its traces. */
#define _POSIX_C_SOURCE 200809L
#include <otfx/analysis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

typedef struct place {
    otfx_defs *defs;
    otfx_trace *traces[2];
    uint32_t rank_of_trace[2], thread_of_trace[2];
    otfx_rank_info ranks[2];
    otfx_leaf_input input;
} place;

static void make_place(place *p)
{
    memset(p, 0, sizeof *p);
    p->defs = otfx_defs_create();
    otfx_ref main_r;
    assert_int_equal(otfx_defs_region(p->defs, "main", OTFX_ROLE_USER_FUNCTION, &main_r), OTFX_OK);
    for (uint32_t r = 0; r < 2; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(p->defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, p->defs, location, &p->traces[r]), OTFX_OK);
        otfx_event e[2] = {{.time = 1000, .type = OTFX_EV_ENTER, .u.region.region = main_r},
                           {.time = 2000 + r, .type = OTFX_EV_LEAVE, .u.region.region = main_r}};
        size_t appended;
        assert_int_equal(otfx_trace_append(p->traces[r], e, 2, &appended), OTFX_OK);
        p->rank_of_trace[r] = r;
        p->ranks[r] = (otfx_rank_info){.rank = r, .recording = true};
    }
    p->input = (otfx_leaf_input){.place = 0,
                                 .defs = p->defs,
                                 .traces = p->traces,
                                 .rank_of_trace = p->rank_of_trace,
                                 .thread_of_trace = p->thread_of_trace,
                                 .trace_count = 2,
                                 .ranks = p->ranks,
                                 .rank_count = 2,
                                 .app_ranks = 2,
                                 .now_ns = 5000};
}

static void free_place(place *p)
{
    for (int r = 0; r < 2; r++)
        otfx_trace_destroy(p->traces[r]);
    otfx_defs_destroy(p->defs);
}

/* Polls until the call ended (at most 60 s, whatever the load), then takes its outcome. */
static void finish_call(otfx_module_call *call, otfx_module_result *out)
{
    assert_non_null(call);
    for (int i = 0; i < 12000 && !otfx_module_call_poll(call); i++) {
        const struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    otfx_module_call_take(call, out);
}

static otfx_command query(void)
{
    otfx_command q;
    memset(&q, 0, sizeof q);
    q.kind = OTFX_CMD_QUERY;
    q.to = UINT64_MAX;
    return q;
}

static const otfx_module_limits generous = {.time_limit_ns = 60ull * 1000000000ull, .result_limit = 1 << 20};

static void expect_error(const otfx_module_result *r, const char *fragment)
{
    if (!strstr(r->error, fragment))
        fail_msg("expected '%s' in the error, got '%s'", fragment, r->error);
}

static void test_probe(void **state)
{
    (void)state;
    char error[256];
    otfx_module_result r;
    finish_call(otfx_module_call_probe(OTFX_EXAMPLE_MODULE, &generous, error, sizeof error), &r);
    assert_true(r.ok);
    assert_string_equal((const char *)r.data.data, "held");
    otfx_module_result_free(&r);

    finish_call(otfx_module_call_probe("/no/such/module.so", &generous, error, sizeof error), &r);
    assert_false(r.ok);
    assert_false(r.crashed);
    expect_error(&r, "cannot load /no/such/module.so");
    otfx_module_result_free(&r);

    finish_call(otfx_module_call_probe(OTFX_EXAMPLE_MODULE_WRONG_ABI, &generous, error, sizeof error), &r);
    assert_false(r.ok);
    expect_error(&r, "ABI");
    otfx_module_result_free(&r);

    /* its entry function crashes: only the helper dies */
    finish_call(otfx_module_call_probe(OTFX_BAD_MODULE_CRASH_LOAD, &generous, error, sizeof error), &r);
    assert_false(r.ok);
    assert_true(r.crashed);
    expect_error(&r, "module libotfx-bad-module-crash-load.so crashed (SIGSEGV) while loading");
    otfx_module_result_free(&r);
}

static void test_leaf_merge_finish(void **state)
{
    (void)state;
    place p;
    make_place(&p);
    char error[256];
    otfx_command q = query();
    snprintf(q.module, sizeof q.module, "held");
    otfx_module_result leaf;
    finish_call(
        otfx_module_call_leaf(OTFX_EXAMPLE_MODULE, "held", &q, &p.input, &generous, error, sizeof error),
        &leaf);
    assert_true(leaf.ok);
    assert_true(leaf.data.length > 0);
    /* the same partial twice (two places' answers), and a malformed one: left out, listed */
    otfx_blob parts[3] = {leaf.data, {0}, leaf.data};
    const unsigned char junk[7] = {1, 2, 3, 4, 5, 6, 7};
    otfx_blob_append(&parts[1], junk, sizeof junk);
    const uint32_t answered[3] = {1, 1, 1};
    otfx_module_result merged;
    finish_call(otfx_module_call_merge(OTFX_EXAMPLE_MODULE, "held", &q, parts, answered, 3, false, 3,
                                       &generous, error, sizeof error),
                &merged);
    assert_true(merged.ok);
    assert_int_equal(merged.refused_count, 1);
    assert_int_equal(merged.refused[0], 1);
    assert_non_null(merged.reasons.data);
    otfx_module_result_free(&merged);
    /* and finished: the reply's lines */
    otfx_module_result reply;
    finish_call(otfx_module_call_merge(OTFX_EXAMPLE_MODULE, "held", &q, parts, answered, 3, true, 3,
                                       &generous, error, sizeof error),
                &reply);
    assert_true(reply.ok);
    otfx_text_append(&reply.reasons, "", 1);
    otfx_blob_append(&reply.data, "", 1);
    if (!strstr((const char *)reply.data.data, "held-total ranks=2 ") ||
        !strstr((const char *)reply.data.data, "places_answered=2 places_total=3"))
        fail_msg("unexpected reply: %s", (const char *)reply.data.data);
    otfx_module_result_free(&reply);
    otfx_blob_free(&parts[1]);
    /* a module asked under another name than it has now */
    otfx_module_result renamed;
    finish_call(
        otfx_module_call_leaf(OTFX_EXAMPLE_MODULE, "other", &q, &p.input, &generous, error, sizeof error),
        &renamed);
    assert_false(renamed.ok);
    expect_error(&renamed, "not other");
    otfx_module_result_free(&renamed);
    otfx_module_result_free(&leaf);
    free_place(&p);
}

static void test_misbehaving_modules(void **state)
{
    (void)state;
    place p;
    make_place(&p);
    char error[256];
    otfx_command q = query();
    otfx_module_result r;

    finish_call(otfx_module_call_leaf(OTFX_BAD_MODULE_CRASH_LEAF, "crasher", &q, &p.input, &generous, error,
                                      sizeof error),
                &r);
    assert_false(r.ok);
    assert_true(r.crashed);
    expect_error(&r, "module crasher crashed (SIGSEGV) while its leaf");
    otfx_module_result_free(&r);

    const otfx_module_limits short_time = {.time_limit_ns = 300ull * 1000000ull, .result_limit = 1 << 20};
    finish_call(otfx_module_call_leaf(OTFX_BAD_MODULE_HANG_LEAF, "sleeper", &q, &p.input, &short_time, error,
                                      sizeof error),
                &r);
    assert_false(r.ok);
    assert_true(r.timed_out);
    expect_error(&r, "module sleeper did not answer within 0.3 s");
    otfx_module_result_free(&r);

    finish_call(
        otfx_module_call_leaf(OTFX_BAD_MODULE_HOG_LEAF, "hog", &q, &p.input, &generous, error, sizeof error),
        &r);
    assert_false(r.ok);
    assert_true(r.too_large);
    otfx_module_result_free(&r);

    otfx_module_result leaf;
    finish_call(otfx_module_call_leaf(OTFX_BAD_MODULE_CRASH_MERGE, "breaker", &q, &p.input, &generous, error,
                                      sizeof error),
                &leaf);
    assert_true(leaf.ok);
    const uint32_t answered[1] = {1};
    finish_call(otfx_module_call_merge(OTFX_BAD_MODULE_CRASH_MERGE, "breaker", &q, &leaf.data, answered, 1,
                                       true, 1, &generous, error, sizeof error),
                &r);
    assert_false(r.ok);
    assert_true(r.crashed);
    expect_error(&r, "module breaker crashed (SIGABRT) while merging");
    otfx_module_result_free(&r);
    otfx_module_result_free(&leaf);

    /* a call cancelled while it runs: killed and reaped */
    otfx_module_call *call = otfx_module_call_leaf(OTFX_BAD_MODULE_HANG_LEAF, "sleeper", &q, &p.input,
                                                   &generous, error, sizeof error);
    assert_non_null(call);
    otfx_module_call_cancel(call);

    /* and this process goes on with its traces as before */
    otfx_trace_status s;
    assert_int_equal(otfx_trace_status_get(p.traces[0], &s), OTFX_OK);
    assert_int_equal(s.events_held, 2);
    free_place(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_leaf_merge_finish),
        cmocka_unit_test(test_misbehaving_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

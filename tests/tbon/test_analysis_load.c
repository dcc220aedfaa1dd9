/* test_analysis_load.c — otfx_analysis_load: a module built as a shared object (example_module.c) loads
 * and answers a query; a missing file, a shared object without the entry point, a module of another ABI
 * and a name already taken are refused with a clear message. */
#include <otfx/analysis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* rank 0..3, one trace each, rank r holding 2 * (r + 1) events (enter/leave pairs) */
static void run_held_query(const otfx_analysis_module *module)
{
    otfx_defs *defs = otfx_defs_create();
    assert_non_null(defs);
    otfx_ref region;
    assert_int_equal(otfx_defs_region(defs, "work", OTFX_ROLE_USER_FUNCTION, &region), OTFX_OK);
    otfx_trace *traces[4];
    otfx_rank_info info[4];
    uint32_t rank_of_trace[4], thread_of_trace[4] = {0};
    for (uint32_t r = 0; r < 4; r++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(defs, r, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(1 << 20);
        assert_int_equal(otfx_trace_create(&config, defs, location, &traces[r]), OTFX_OK);
        for (uint32_t k = 0; k <= r; k++) {
            otfx_event events[2] = {{.time = 100 * k + 1, .type = OTFX_EV_ENTER, .u.region.region = region},
                                    {.time = 100 * k + 50, .type = OTFX_EV_LEAVE, .u.region.region = region}};
            size_t appended;
            assert_int_equal(otfx_trace_append(traces[r], events, 2, &appended), OTFX_OK);
        }
        info[r] = (otfx_rank_info){.rank = r, .recording = true};
        rank_of_trace[r] = r;
    }
    otfx_command query;
    memset(&query, 0, sizeof query);
    query.kind = OTFX_CMD_QUERY;
    query.to = UINT64_MAX;
    snprintf(query.module, sizeof query.module, "held");
    char error[256] = "";
    otfx_blob merged = {0};
    for (int place = 0; place < 2; place++) { /* two places of two ranks each */
        otfx_leaf_input input = {.place = place,
                                 .defs = defs,
                                 .traces = traces + 2 * place,
                                 .rank_of_trace = rank_of_trace,
                                 .thread_of_trace = thread_of_trace,
                                 .trace_count = 2,
                                 .ranks = info + 2 * place,
                                 .rank_count = 2,
                                 .app_ranks = 4};
        otfx_blob partial = {0};
        assert_true(module->leaf(&query, &input, &partial, error, sizeof error));
        assert_true(module->merge(&query, &merged, partial.data, partial.length, error, sizeof error));
        otfx_blob_free(&partial);
    }
    otfx_text reply = {0};
    assert_true(module->finish(&query, merged.data, merged.length, 2, 2, &reply, error, sizeof error));
    otfx_text_append(&reply, "", 1);
    assert_non_null(strstr(reply.data, "held rank=0 events_held=2 events_received=2\n"));
    assert_non_null(strstr(reply.data, "held rank=3 events_held=8 events_received=8\n"));
    assert_non_null(
        strstr(reply.data, "held-total ranks=4 events_held=20 events_received=20 places_answered=2"));
    /* a malformed partial is refused and changes nothing */
    size_t before = merged.length;
    assert_false(module->merge(&query, &merged, "HLD1garbage", 11, error, sizeof error));
    assert_int_equal(merged.length, before);
    otfx_text_free(&reply);
    otfx_blob_free(&merged);
    for (int r = 0; r < 4; r++)
        otfx_trace_destroy(traces[r]);
    otfx_defs_destroy(defs);
}

static void test_example_module_loads_and_answers(void **state)
{
    (void)state;
    char error[512] = "";
    assert_null(otfx_analysis_find("held"));
    const otfx_analysis_module *module = otfx_analysis_load(OTFX_EXAMPLE_MODULE, error, sizeof error);
    assert_non_null(module);
    assert_string_equal(module->name, "held");
    assert_ptr_equal(otfx_analysis_find("held"), module);
    /* loading it again gives the same module */
    assert_ptr_equal(otfx_analysis_load(OTFX_EXAMPLE_MODULE, error, sizeof error), module);
    bool listed = false;
    for (size_t i = 0; otfx_analysis_at(i); i++)
        listed |= otfx_analysis_at(i) == module;
    assert_true(listed);
    run_held_query(module);
}

static void test_missing_file(void **state)
{
    (void)state;
    char error[512] = "";
    assert_null(otfx_analysis_load("/nonexistent/libnothing.so", error, sizeof error));
    assert_non_null(strstr(error, "cannot load /nonexistent/libnothing.so"));
    assert_null(otfx_analysis_load("libotfx_analysis.so", error, sizeof error)); /* not searched for */
    assert_non_null(strstr(error, "cannot load ./libotfx_analysis.so"));
    assert_null(otfx_analysis_load("", error, sizeof error));
    assert_non_null(strstr(error, "path"));
}

static void test_no_entry_symbol(void **state)
{
    (void)state;
    char error[512] = "";
    assert_null(otfx_analysis_load(OTFX_NOT_A_MODULE, error, sizeof error));
    assert_non_null(strstr(error, "is not an otfx analysis module"));
    assert_non_null(strstr(error, OTFX_ANALYSIS_ENTRY_SYMBOL));
}

static void test_wrong_abi(void **state)
{
    (void)state;
    char error[512] = "";
    assert_null(otfx_analysis_load(OTFX_EXAMPLE_MODULE_WRONG_ABI, error, sizeof error));
    char expected[128];
    snprintf(expected, sizeof expected, "module ABI %d, but this otfx needs ABI %d", OTFX_ANALYSIS_ABI + 1,
             OTFX_ANALYSIS_ABI);
    assert_non_null(strstr(error, expected));
}

static bool no_leaf(const otfx_command *q, const otfx_leaf_input *i, otfx_blob *o, char *e, size_t n)
{
    (void)q, (void)i, (void)o, (void)e, (void)n;
    return false;
}
static bool no_merge(const otfx_command *q, otfx_blob *i, const void *o, size_t l, char *e, size_t n)
{
    (void)q, (void)i, (void)o, (void)l, (void)e, (void)n;
    return false;
}
static bool no_finish(const otfx_command *q, const void *m, size_t l, uint32_t a, uint32_t t, otfx_text *r,
                      char *e, size_t n)
{
    (void)q, (void)m, (void)l, (void)a, (void)t, (void)r, (void)e, (void)n;
    return false;
}

static void test_register_checks(void **state)
{
    (void)state;
    char error[512] = "";
    otfx_analysis_module clash = {OTFX_ANALYSIS_ABI, "status", "", no_leaf, no_merge, no_finish};
    assert_false(otfx_analysis_register(&clash, error, sizeof error));
    assert_non_null(strstr(error, "a module named status is already loaded"));
    otfx_analysis_module bad_name = {OTFX_ANALYSIS_ABI, "Bad Name", "", no_leaf, no_merge, no_finish};
    assert_false(otfx_analysis_register(&bad_name, error, sizeof error));
    assert_non_null(strstr(error, "[a-z0-9_-]"));
    otfx_analysis_module incomplete = {OTFX_ANALYSIS_ABI, "incomplete", "", no_leaf, NULL, no_finish};
    assert_false(otfx_analysis_register(&incomplete, error, sizeof error));
    assert_non_null(strstr(error, "lacks"));
    static const otfx_analysis_module fine = {OTFX_ANALYSIS_ABI, "fine", "", no_leaf, no_merge, no_finish};
    assert_true(otfx_analysis_register(&fine, error, sizeof error));
    assert_true(otfx_analysis_register(&fine, error, sizeof error)); /* idempotent */
    assert_ptr_equal(otfx_analysis_find("fine"), &fine);
    /* the built-ins answer their commands */
    assert_string_equal(otfx_analysis_for_command(OTFX_CMD_PROFILE)->name, "profile");
    assert_string_equal(otfx_analysis_for_command(OTFX_CMD_EVENTS)->name, "events");
    assert_null(otfx_analysis_for_command(OTFX_CMD_RESET));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_module_loads_and_answers),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_no_entry_symbol),
        cmocka_unit_test(test_wrong_abi),
        cmocka_unit_test(test_register_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

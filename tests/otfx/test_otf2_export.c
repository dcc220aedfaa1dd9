/* test_otf2_export.c — otfx_otf2_export: what otf2-print and python3-otf2 read back matches what the
 * traces held, windows and reduced ranges stay well nested, existing archives are not overwritten, the
 * threads of a rank share its message channels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "otf2_check.h"
#include "otf2_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { TRACES = 4, EVENTS = 20000, BIG_BUDGET = 32 << 20 };

/* Expected records of one trace for an export of what `events` holds: one record per table event,
 * two per phase marker; reduced ranges are counted apart (their pieces depend on the detail kept). */
typedef struct expected_records {
    uint64_t counts[OTFX_EV_TYPE_COUNT];
    uint64_t phases, reductions;
} expected_records;

static expected_records expect(const otf2_check_events *events)
{
    expected_records expected = {0};
    for (size_t e = 0; e < events->count; e++) {
        otfx_event_type type = events->events[e].type;
        expected.counts[type]++;
        expected.phases += type == OTFX_EV_PHASE;
        expected.reductions += type == OTFX_EV_REDUCTION;
    }
    return expected;
}

static void assert_records_match(const otf2_check_location *location, const expected_records *expected)
{
    assert_non_null(location);
    assert_true(location->well_nested);
    assert_true(location->ordered);
    uint64_t total = 0;
    for (int type = 0; type < OTFX_EV_TYPE_COUNT; type++) {
        const char *name = otfx_otf2_record_name((otfx_event_type)type);
        if (!name)
            continue;
        uint64_t extra = 0; /* phase markers and reduced pieces are Enter/Leave pairs too */
        if (type == OTFX_EV_ENTER || type == OTFX_EV_LEAVE)
            extra = expected->phases + location->reduced_enters;
        if (otf2_check_count(location, name) != expected->counts[type] + extra)
            fail_msg("location %llu: %s: otf2-print lists %llu, expected %llu",
                     (unsigned long long)location->location, name,
                     (unsigned long long)otf2_check_count(location, name),
                     (unsigned long long)(expected->counts[type] + extra));
        total += expected->counts[type] + extra;
    }
    assert_int_equal(location->total, total);
    assert_int_equal(location->reduction_records, expected->reductions);
}

static char *anchor_path(const char *directory, const char *name)
{
    size_t size = strlen(directory) + strlen(name) + 8;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s.otf2", directory, name);
    return path;
}

static uint64_t location_of_trace(otfx_trace *trace)
{
    otfx_location_def where;
    assert_int_equal(otfx_defs_get_location(otfx_trace_defs(trace), otfx_trace_location(trace), &where),
                     OTFX_OK);
    return otfx_otf2_location_id(where.rank, where.thread);
}

static void test_whole_export_counts_match_otf2_print(void **state)
{
    (void)state;
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_MIXED, 1, TRACES, EVENTS, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("export-whole");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "whole", job.defs, job.traces, job.count, &options), OTFX_OK);

    char *anchor = anchor_path(dir, "whole");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    for (size_t t = 0; t < job.count; t++) {
        otf2_check_events events;
        otf2_check_collect(job.traces[t], 0, OTFX_TIME_MAX, true, &events);
        expected_records expected = expect(&events);
        assert_true(expected.phases > 0 && expected.counts[OTFX_EV_METRIC] > 0 && expected.reductions > 0);
        assert_records_match(otf2_check_print_find(&print, location_of_trace(job.traces[t])), &expected);
        otf2_check_events_free(&events);
    }
    /* The placeholders of the other ranks of the streams' world hold no records. */
    assert_int_equal(print.count, job.count);

    otf2_check_print_free(&print);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

/* A window cuts regions open: they must be entered at its start and left at its end. The archive is
 * read back with otf2-print (nesting) and with the importer (events). */
static void test_window_export_is_well_nested(void **state)
{
    (void)state;
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_MIXED, 7, 2, EVENTS, BIG_BUDGET, OTFX_REDUCE_RING);
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(job.traces[0], &status), OTFX_OK);
    otfx_time span = status.last_time - status.first_time;
    otfx_export_options options = otfx_export_options_default();
    options.from = status.first_time + span / 3;
    options.to = status.first_time + 2 * span / 3;

    char *dir = otf2_check_scratch_dir("export-window");
    assert_int_equal(otfx_otf2_export(dir, "window", job.defs, job.traces, job.count, &options), OTFX_OK);
    char *anchor = anchor_path(dir, "window");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);

    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_defs *imported_defs;
    otfx_trace **imported;
    size_t imported_count;
    assert_int_equal(otfx_otf2_import(anchor, &config, &imported_defs, &imported, &imported_count), OTFX_OK);
    assert_int_equal(imported_count, job.count);

    for (size_t t = 0; t < job.count; t++) {
        const otf2_check_location *location = otf2_check_print_find(&print, location_of_trace(job.traces[t]));
        assert_non_null(location);
        assert_true(location->well_nested);
        assert_true(location->ordered);
        assert_true(location->first_time >= options.from);
        assert_true(location->last_time <= options.to);

        /* Expected: the context entered at the window's start, the window's events, then a leave at
         * the end for every region still open. Reduction records are compared apart below. */
        otf2_check_events original, back;
        otf2_check_collect(job.traces[t], options.from, options.to, true, &original);
        otf2_check_expect_requests(&original); /* completions of requests started before the window */
        otf2_check_collect(imported[t], 0, OTFX_TIME_MAX, true, &back);
        size_t b = 0, depth = 0, original_reductions = 0, back_reductions = 0;
        for (size_t o = 0; o < original.count; o++) {
            otfx_event expected = original.events[o];
            if (expected.type == OTFX_EV_REDUCTION) {
                original_reductions++;
                continue;
            }
            if (expected.time < options.from)
                expected.time = options.from;
            depth += expected.type == OTFX_EV_ENTER;
            depth -= expected.type == OTFX_EV_LEAVE;
            while (b < back.count && back.events[b].type == OTFX_EV_REDUCTION) {
                back_reductions++;
                b++;
            }
            assert_true(b < back.count);
            char why[256];
            if (!otf2_check_same_event(job.defs, &expected, imported_defs, &back.events[b], why, sizeof why))
                fail_msg("trace %zu event %zu: %s", t, o, why);
            b++;
        }
        /* What is left: leaves at the window's end for the `depth` regions still open. */
        size_t leaves = 0;
        for (; b < back.count; b++) {
            if (back.events[b].type == OTFX_EV_REDUCTION) {
                back_reductions++;
                continue;
            }
            assert_int_equal(back.events[b].type, OTFX_EV_LEAVE);
            assert_true(back.events[b].time <= options.to);
            leaves++;
        }
        assert_int_equal(leaves, depth);
        assert_int_equal(back_reductions, original_reductions);
        otf2_check_events_free(&original);
        otf2_check_events_free(&back);
    }
    for (size_t t = 0; t < imported_count; t++)
        otfx_trace_destroy(imported[t]);
    free(imported);
    otfx_defs_destroy(imported_defs);
    otf2_check_print_free(&print);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

/* Traces that reduced (every strategy): the reduced ranges are in the archive as "otfx reduced: "
 * regions with their counts, nested with whatever detail was kept. */
static void test_reduced_traces_show_reduced_ranges(void **state)
{
    (void)state;
    static const otfx_reduction strategies[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TIME, OTFX_REDUCE_TYPE,
                                                OTFX_REDUCE_DEPTH, OTFX_REDUCE_STOP};
    for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++) {
        otf2_check_job job;
        otf2_check_job_create(&job, RANDOM_STREAM_MIXED, 100 + s, 2, 200000, 256 << 10, strategies[s]);
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(job.traces[0], &status), OTFX_OK);
        if (status.reductions == 0 && !status.stopped)
            fail_msg("strategy %s: the trace never reduced; make the stream longer",
                     otfx_reduction_name(strategies[s]));

        char *dir = otf2_check_scratch_dir("export-reduced");
        otfx_export_options options = otfx_export_options_default();
        assert_int_equal(otfx_otf2_export(dir, "reduced", job.defs, job.traces, job.count, &options),
                         OTFX_OK);
        char *anchor = anchor_path(dir, "reduced");
        otf2_check_print print;
        otf2_check_print_run(anchor, &print);
        assert_int_equal(print.exit_code, 0);
        for (size_t t = 0; t < job.count; t++) {
            otf2_check_events events;
            otf2_check_collect(job.traces[t], 0, OTFX_TIME_MAX, true, &events);
            expected_records expected = expect(&events);
            const otf2_check_location *location =
                otf2_check_print_find(&print, location_of_trace(job.traces[t]));
            assert_non_null(location);
            if (!location->well_nested || !location->ordered)
                fail_msg("strategy %s trace %zu: archive not well nested / ordered",
                         otfx_reduction_name(strategies[s]), t);
            assert_int_equal(location->reduction_records, expected.reductions);
            assert_true(location->reduced_enters >= expected.reductions);
            otf2_check_events_free(&events);
        }

        /* And the importer turns the pieces back into the reduction records. */
        otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
        otfx_defs *imported_defs;
        otfx_trace **imported;
        size_t imported_count;
        assert_int_equal(otfx_otf2_import(anchor, &config, &imported_defs, &imported, &imported_count),
                         OTFX_OK);
        for (size_t t = 0; t < imported_count; t++) {
            otf2_check_events original, back;
            otf2_check_collect(job.traces[t], 0, OTFX_TIME_MAX, true, &original);
            otf2_check_collect(imported[t], 0, OTFX_TIME_MAX, true, &back);
            assert_int_equal(expect(&back).reductions, expect(&original).reductions);
            otf2_check_events_free(&original);
            otf2_check_events_free(&back);
            otfx_trace_destroy(imported[t]);
        }
        free(imported);
        otfx_defs_destroy(imported_defs);

        otf2_check_print_free(&print);
        free(anchor);
        otf2_check_remove_tree(dir);
        free(dir);
        otf2_check_job_destroy(&job);
    }
}

/* A reduced range whose begin falls between a collective's begin and end (a chunk the `type` or `depth`
 * strategy thinned begins there) must not put the end into another region than the begin: the range's
 * piece waits for the collective's end. */
static void test_reduced_range_waits_for_a_collective(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    otfx_ref location, allreduce, world;
    const uint32_t members[1] = {0};
    assert_int_equal(otfx_defs_location(defs, 0, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE, &allreduce), OTFX_OK);
    assert_int_equal(otfx_defs_comm(defs, "MPI_COMM_WORLD", members, 1, &world), OTFX_OK);
    otfx_trace_config config = otfx_trace_config_default(1 << 20);
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
    otfx_event events[5] = {
        {.time = 1000, .type = OTFX_EV_ENTER, .u.region.region = allreduce},
        {.time = 1000, .type = OTFX_EV_COLL_BEGIN, .u.coll = {.comm = world, .seq = 1}},
        {.time = 1050,
         .type = OTFX_EV_COLL_END,
         .u.coll = {.comm = world, .op = 0, .root = UINT32_MAX, .sent = 8, .received = 8, .seq = 1}},
        {.time = 1060, .type = OTFX_EV_LEAVE, .u.region.region = allreduce},
        {.time = 1100, .type = OTFX_EV_REDUCTION},
    };
    events[4].u.reduction.strategy = OTFX_REDUCE_TYPE;
    events[4].u.reduction.begin = 1020;
    events[4].u.reduction.end = 1080;
    events[4].u.reduction.events_removed = 5;
    size_t appended;
    assert_int_equal(otfx_trace_append(trace, events, 5, &appended), OTFX_OK);

    char *dir = otf2_check_scratch_dir("export-collective-range");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "layout", defs, &trace, 1, &options), OTFX_OK);
    char *anchor = anchor_path(dir, "layout");
    char *listing = otf2_check_print_listing(anchor, 0);
    assert_string_equal(listing, "ENTER 1000 MPI_Allreduce\n"
                                 "MPI_COLLECTIVE_BEGIN 1000\n"
                                 "MPI_COLLECTIVE_END 1050\n"
                                 "ENTER 1050 otfx reduced: type\n" /* after the collective's end */
                                 "LEAVE 1060 otfx reduced: type\n"
                                 "LEAVE 1060 MPI_Allreduce\n"
                                 "ENTER 1060 otfx reduced: type\n"
                                 "LEAVE 1080 otfx reduced: type\n");
    free(listing);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

/* A hand-made trace whose reduced ranges (appended records, as capture sends them) meet every case of
 * the layout: a range inside a region, a region entered inside a range that outlives it, a region open
 * before a range that is left inside it. The archive must show exactly this. */
static void test_reduced_range_layout(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    otfx_ref location, main_region, a, b;
    assert_int_equal(otfx_defs_location(defs, 0, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "main", OTFX_ROLE_USER_FUNCTION, &main_region), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "a", OTFX_ROLE_USER_FUNCTION, &a), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "b", OTFX_ROLE_USER_FUNCTION, &b), OTFX_OK);
    otfx_trace_config config = otfx_trace_config_default(1 << 20);
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);
    otfx_event events[8] = {
        {.time = 1000, .type = OTFX_EV_ENTER, .u.region.region = main_region},
        {.time = 1010, .type = OTFX_EV_ENTER, .u.region.region = a},
        {.time = 1020, .type = OTFX_EV_ENTER, .u.region.region = b},
        {.time = 1050, .type = OTFX_EV_LEAVE, .u.region.region = b},
        {.time = 1060, .type = OTFX_EV_LEAVE, .u.region.region = a},
        {.time = 1100, .type = OTFX_EV_LEAVE, .u.region.region = main_region},
        {.time = 1100, .type = OTFX_EV_REDUCTION},
        {.time = 1100, .type = OTFX_EV_REDUCTION},
    };
    events[6].u.reduction.strategy = OTFX_REDUCE_SOURCE_DROP;
    events[6].u.reduction.begin = 1015;
    events[6].u.reduction.end = 1040;
    events[6].u.reduction.events_removed = 3;
    events[7].u.reduction.strategy = OTFX_REDUCE_THROTTLE;
    events[7].u.reduction.begin = 1055;
    events[7].u.reduction.end = 1080;
    events[7].u.reduction.events_removed = 4;
    size_t appended;
    assert_int_equal(otfx_trace_append(trace, events, 8, &appended), OTFX_OK);

    char *dir = otf2_check_scratch_dir("export-layout");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "layout", defs, &trace, 1, &options), OTFX_OK);
    char *anchor = anchor_path(dir, "layout");
    char *listing = otf2_check_print_listing(anchor, 0);
    assert_string_equal(listing, "ENTER 1000 main\n"
                                 "ENTER 1010 a\n"
                                 "ENTER 1015 otfx reduced: source-drop\n" /* the range inside a */
                                 "LEAVE 1020 otfx reduced: source-drop\n" /* b outlives it: */
                                 "ENTER 1020 b\n"
                                 "ENTER 1020 otfx reduced: source-drop\n" /* ... it goes on inside b */
                                 "LEAVE 1040 otfx reduced: source-drop\n"
                                 "LEAVE 1050 b\n"
                                 "ENTER 1055 otfx reduced: throttle\n"
                                 "LEAVE 1060 otfx reduced: throttle\n" /* a, open before it, ends: */
                                 "LEAVE 1060 a\n"
                                 "ENTER 1060 otfx reduced: throttle\n" /* ... it goes on in main */
                                 "LEAVE 1080 otfx reduced: throttle\n"
                                 "LEAVE 1100 main\n");

    /* The importer rebuilds the two records from the pieces. */
    otfx_defs *imported_defs;
    otfx_trace **imported;
    size_t count;
    assert_int_equal(otfx_otf2_import(anchor, &config, &imported_defs, &imported, &count), OTFX_OK);
    assert_int_equal(count, 1);
    otf2_check_events back;
    otf2_check_collect(imported[0], 0, OTFX_TIME_MAX, false, &back);
    assert_int_equal(back.count, 8);
    for (size_t e = 0; e < 8; e++) {
        char why[256];
        if (!otf2_check_same_event(defs, &events[e], imported_defs, &back.events[e], why, sizeof why))
            fail_msg("event %zu: %s", e, why);
    }
    otf2_check_events_free(&back);
    otfx_trace_destroy(imported[0]);
    free(imported);
    otfx_defs_destroy(imported_defs);

    free(listing);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

static bool exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

static void test_existing_archive_is_not_overwritten(void **state)
{
    (void)state;
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_STENCIL, 3, 2, 2000, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("export-overwrite");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "run", job.defs, job.traces, job.count, &options), OTFX_OK);

    assert_int_equal(otfx_otf2_export(dir, "run", job.defs, job.traces, job.count, &options), OTFX_ERR_IO);
    assert_non_null(strstr(otfx_last_error(), "already exists"));

    options.overwrite = true;
    assert_int_equal(otfx_otf2_export(dir, "run", job.defs, job.traces, 1, &options), OTFX_OK);
    char *anchor = anchor_path(dir, "run");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    assert_null(otf2_check_print_find(&print, location_of_trace(job.traces[1])));
    otf2_check_print_free(&print);

    /* A file that is not part of an archive in the archive's directory: not ours to delete. */
    size_t size = strlen(dir) + 32;
    char *foreign = malloc(size);
    assert_non_null(foreign);
    snprintf(foreign, size, "%s/run/notes.txt", dir);
    FILE *file = fopen(foreign, "w");
    assert_non_null(file);
    fputs("keep me\n", file);
    fclose(file);
    assert_int_equal(otfx_otf2_export(dir, "run", job.defs, job.traces, job.count, &options), OTFX_ERR_IO);
    assert_non_null(strstr(otfx_last_error(), "notes.txt"));
    assert_true(exists(foreign));

    /* Only a directory of the name, no archive: the message says what exists (not "run.otf2"). */
    snprintf(foreign, size, "%s/precious", dir);
    assert_int_equal(mkdir(foreign, 0755), 0);
    options.overwrite = false;
    assert_int_equal(otfx_otf2_export(dir, "precious", job.defs, job.traces, job.count, &options),
                     OTFX_ERR_IO);
    assert_non_null(strstr(otfx_last_error(), "the directory"));
    assert_non_null(strstr(otfx_last_error(), "precious already exists"));
    assert_non_null(strstr(otfx_last_error(), "there is no archive"));
    assert_null(strstr(otfx_last_error(), "precious.otf2 already exists"));

    free(foreign);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

static void test_invalid_arguments_are_rejected(void **state)
{
    (void)state;
    otf2_check_job job, other;
    otf2_check_job_create(&job, RANDOM_STREAM_STENCIL, 5, 1, 100, BIG_BUDGET, OTFX_REDUCE_RING);
    otf2_check_job_create(&other, RANDOM_STREAM_STENCIL, 5, 1, 100, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("export-invalid");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "a/b", job.defs, job.traces, 1, &options), OTFX_ERR_INVALID);
    assert_int_equal(otfx_otf2_export(dir, "", job.defs, job.traces, 1, &options), OTFX_ERR_INVALID);
    assert_int_equal(otfx_otf2_export(dir, "x", job.defs, other.traces, 1, &options), OTFX_ERR_INVALID);
    otfx_trace *twice[2] = {job.traces[0], job.traces[0]};
    assert_int_equal(otfx_otf2_export(dir, "x", job.defs, twice, 2, &options), OTFX_ERR_INVALID);
    options.from = options.to = 1000;
    assert_int_equal(otfx_otf2_export(dir, "x", job.defs, job.traces, 1, &options), OTFX_ERR_INVALID);
    assert_string_not_equal(otfx_last_error(), "");
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&other);
    otf2_check_job_destroy(&job);
}

/* The reference OTF2 Python bindings read the archive and count the same records as otf2-print. */
static void test_python_otf2_reads_the_archive(void **state)
{
    (void)state;
    char why[256];
    if (!otf2_check_python_available(why, sizeof why)) {
        print_message("SKIPPED: %s\n", why);
        skip();
    }
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_MIXED, 11, TRACES, 5000, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("export-python");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "py", job.defs, job.traces, job.count, &options), OTFX_OK);
    char *anchor = anchor_path(dir, "py");
    otf2_check_print print, python;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(otf2_check_python_counts(anchor, &python), 0);
    assert_int_equal(python.count, print.count);
    for (size_t l = 0; l < print.count; l++) {
        const otf2_check_location *printed = &print.locations[l];
        const otf2_check_location *read = otf2_check_print_find(&python, printed->location);
        assert_non_null(read);
        assert_int_equal(read->total, printed->total);
#define OTFX_COMPARE_RECORD(otfx_type, record, printed_name, payload)                                        \
    assert_int_equal(otf2_check_count(read, #record), otf2_check_count(printed, printed_name));
        OTFX_OTF2_RECORD_TABLE(OTFX_COMPARE_RECORD)
#undef OTFX_COMPARE_RECORD
    }
    otf2_check_print_free(&print);
    otf2_check_print_free(&python);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

/* A rank's threads share its channels (their ordinals and request ids interleave): rank 0 sends 1..40 to
 * rank 1 on one channel, the odd ones from thread 0 and the even ones from thread 1; rank 1 lost receives
 * 5 and 6. The archive holds the 38 messages both ranks hold, each send with its completion. */
static void test_threads_of_a_rank_share_their_channels(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    const uint32_t members[2] = {0, 1};
    otfx_ref world, locations[3];
    assert_int_equal(otfx_defs_comm(defs, "MPI_COMM_WORLD", members, 2, &world), OTFX_OK);
    assert_int_equal(otfx_defs_location(defs, 0, 0, &locations[0]), OTFX_OK);
    assert_int_equal(otfx_defs_location(defs, 0, 1, &locations[1]), OTFX_OK);
    assert_int_equal(otfx_defs_location(defs, 1, 0, &locations[2]), OTFX_OK);
    otfx_trace *traces[3];
    for (int t = 0; t < 3; t++) {
        otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
        assert_int_equal(otfx_trace_create(&config, defs, locations[t], &traces[t]), OTFX_OK);
    }
    for (uint64_t n = 1; n <= 40; n++) {
        const otfx_time time = 1000 * n;
        otfx_event events[2] = {{.time = time, .type = OTFX_EV_ISEND},
                                {.time = time + 10, .type = OTFX_EV_ISEND_COMPLETE}};
        events[0].u.msg.comm = world;
        events[0].u.msg.peer = 1;
        events[0].u.msg.tag = 7;
        events[0].u.msg.bytes = 100 + n;
        events[0].u.msg.request = n;
        events[0].u.msg.seq = n;
        events[1].u.request.request = n;
        size_t appended;
        assert_int_equal(otfx_trace_append(traces[n % 2 ? 0 : 1], events, 2, &appended), OTFX_OK);
        if (n == 5 || n == 6)
            continue;
        otfx_event receive = {.time = time + 500, .type = OTFX_EV_RECV};
        receive.u.msg.comm = world;
        receive.u.msg.peer = 0;
        receive.u.msg.tag = 7;
        receive.u.msg.bytes = 100 + n;
        receive.u.msg.seq = n;
        assert_int_equal(otfx_trace_append(traces[2], &receive, 1, &appended), OTFX_OK);
    }
    char *dir = otf2_check_scratch_dir("export-threads");
    otfx_export_options options = otfx_export_options_default();
    otfx_export_stats stats;
    assert_int_equal(otfx_otf2_export_shared(dir, "threads", defs, traces, 3, &options, NULL, &stats),
                     OTFX_OK);
    assert_int_equal(stats.messages_unpaired, 2);
    char *anchor = anchor_path(dir, "threads");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    uint64_t sends = 0;
    for (int t = 0; t < 2; t++) {
        const otf2_check_location *location =
            otf2_check_print_find(&print, otfx_otf2_location_id(0, (uint32_t)t));
        assert_non_null(location);
        assert_int_equal(otf2_check_count(location, "MPI_ISEND"), 19);
        assert_int_equal(otf2_check_count(location, "MPI_ISEND_COMPLETE"), 19);
        sends += otf2_check_count(location, "MPI_ISEND");
    }
    const otf2_check_location *receiver = otf2_check_print_find(&print, otfx_otf2_location_id(1, 0));
    assert_non_null(receiver);
    assert_int_equal(otf2_check_count(receiver, "MPI_RECV"), sends);
    otf2_check_print_free(&print);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    for (int t = 0; t < 3; t++)
        otfx_trace_destroy(traces[t]);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_export_counts_match_otf2_print),
        cmocka_unit_test(test_window_export_is_well_nested),
        cmocka_unit_test(test_reduced_traces_show_reduced_ranges),
        cmocka_unit_test(test_reduced_range_layout),
        cmocka_unit_test(test_reduced_range_waits_for_a_collective),
        cmocka_unit_test(test_existing_archive_is_not_overwritten),
        cmocka_unit_test(test_invalid_arguments_are_rejected),
        cmocka_unit_test(test_python_otf2_reads_the_archive),
        cmocka_unit_test(test_threads_of_a_rank_share_their_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_otf2_import.c — otfx_otf2_import: exports round-trip exactly, archives of other tools (other
 * timer resolutions, location numbering, communicator groups, metric classes, records otfx has no
 * event for) are read, and missing or malformed archives fail cleanly. */
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

enum { BIG_BUDGET = 32 << 20 };

static char *path_in(const char *directory, const char *relative)
{
    size_t size = strlen(directory) + strlen(relative) + 2;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s", directory, relative);
    return path;
}

typedef struct imported {
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    otfx_import_stats stats;
} imported;

static otfx_status import(const char *anchor, imported *out)
{
    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    return otfx_otf2_import_with_stats(anchor, &config, &out->defs, &out->traces, &out->count, &out->stats);
}

static void imported_free(imported *in)
{
    for (size_t t = 0; t < in->count; t++)
        otfx_trace_destroy(in->traces[t]);
    free(in->traces);
    otfx_defs_destroy(in->defs);
}

static int compare_reductions(const void *a, const void *b)
{
    const otfx_event *left = a, *right = b;
    if (left->u.reduction.begin != right->u.reduction.begin)
        return left->u.reduction.begin < right->u.reduction.begin ? -1 : 1;
    if (left->u.reduction.end != right->u.reduction.end)
        return left->u.reduction.end < right->u.reduction.end ? -1 : 1;
    if (left->u.reduction.strategy != right->u.reduction.strategy)
        return (int)left->u.reduction.strategy - (int)right->u.reduction.strategy;
    if (left->u.reduction.events_removed != right->u.reduction.events_removed)
        return left->u.reduction.events_removed < right->u.reduction.events_removed ? -1 : 1;
    return left->time < right->time ? -1 : left->time > right->time;
}

/* Moves the reduction records to the end, sorted: where a record sits among events of the same time is
 * not something OTF2 can carry (it is a range, written in the gaps between records). */
static size_t split_reductions(otf2_check_events *events)
{
    otfx_event *reductions = malloc((events->count + 1) * sizeof *reductions);
    assert_non_null(reductions);
    size_t kept = 0, moved = 0;
    for (size_t e = 0; e < events->count; e++) {
        if (events->events[e].type == OTFX_EV_REDUCTION)
            reductions[moved++] = events->events[e];
        else
            events->events[kept++] = events->events[e];
    }
    qsort(reductions, moved, sizeof *reductions, compare_reductions);
    memcpy(events->events + kept, reductions, moved * sizeof *reductions);
    free(reductions);
    return moved;
}

static void assert_same_traces(const otf2_check_job *job, const imported *in)
{
    assert_int_equal(in->count, job->count);
    for (size_t t = 0; t < job->count; t++) {
        otfx_location_def original_location, imported_location;
        assert_int_equal(
            otfx_defs_get_location(job->defs, otfx_trace_location(job->traces[t]), &original_location),
            OTFX_OK);
        assert_int_equal(
            otfx_defs_get_location(in->defs, otfx_trace_location(in->traces[t]), &imported_location),
            OTFX_OK);
        assert_int_equal(original_location.rank, imported_location.rank);
        assert_int_equal(original_location.thread, imported_location.thread);

        otf2_check_events original, back;
        otf2_check_collect(job->traces[t], 0, OTFX_TIME_MAX, true, &original);
        otf2_check_collect(in->traces[t], 0, OTFX_TIME_MAX, true, &back);
        assert_int_equal(back.count, original.count);
        assert_int_equal(split_reductions(&back), split_reductions(&original));
        for (size_t e = 0; e < original.count; e++) {
            char why[256];
            if (!otf2_check_same_event(job->defs, &original.events[e], in->defs, &back.events[e], why,
                                       sizeof why))
                fail_msg("trace %zu event %zu of %zu: %s", t, e, original.count, why);
        }
        otf2_check_events_free(&original);
        otf2_check_events_free(&back);
    }
}

static void round_trip(random_stream_kind kind, uint64_t seed, size_t traces, size_t events)
{
    otf2_check_job job;
    otf2_check_job_create(&job, kind, seed, traces, events, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("import-round-trip");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "trip", job.defs, job.traces, job.count, &options), OTFX_OK);
    char *anchor = path_in(dir, "trip.otf2");
    imported in;
    assert_int_equal(import(anchor, &in), OTFX_OK);
    assert_same_traces(&job, &in);
    assert_int_equal(in.stats.records_ignored, 0);
    assert_true(in.stats.records_read >= in.stats.events_imported);
    imported_free(&in);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

static void test_round_trip_mixed(void **state)
{
    (void)state;
    round_trip(RANDOM_STREAM_MIXED, 21, 4, 30000);
}

static void test_round_trip_stencil(void **state)
{
    (void)state;
    round_trip(RANDOM_STREAM_STENCIL, 22, 3, 20000);
}

static void test_round_trip_user_heavy(void **state)
{
    (void)state;
    round_trip(RANDOM_STREAM_USER_HEAVY, 23, 2, 20000);
}

/* Threads other than the main one keep their numbers (location id = thread << 32 | rank). */
static void test_round_trip_threads(void **state)
{
    (void)state;
    otf2_check_job job = {.defs = otfx_defs_create(), .traces = calloc(2, sizeof(otfx_trace *)), .count = 2};
    assert_non_null(job.defs);
    assert_non_null(job.traces);
    otfx_event batch[512];
    for (uint32_t t = 0; t < 2; t++) {
        random_stream_config config = random_stream_config_default(RANDOM_STREAM_MIXED, 40 + t);
        config.rank = 5;
        config.thread = 3 * t;
        random_stream *stream = random_stream_create(job.defs, &config);
        assert_non_null(stream);
        otfx_trace_config trace_config = otfx_trace_config_default(BIG_BUDGET);
        assert_int_equal(
            otfx_trace_create(&trace_config, job.defs, random_stream_location(stream), &job.traces[t]),
            OTFX_OK);
        size_t appended;
        for (int round = 0; round < 10; round++)
            assert_int_equal(
                otfx_trace_append(job.traces[t], batch, random_stream_next(stream, batch, 512), &appended),
                OTFX_OK);
        assert_int_equal(
            otfx_trace_append(job.traces[t], batch, random_stream_finish(stream, batch, 512), &appended),
            OTFX_OK);
        random_stream_destroy(stream);
    }
    char *dir = otf2_check_scratch_dir("import-threads");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "threads", job.defs, job.traces, 2, &options), OTFX_OK);
    char *anchor = path_in(dir, "threads.otf2");
    imported in;
    assert_int_equal(import(anchor, &in), OTFX_OK);
    assert_same_traces(&job, &in);
    /* Ranks 0..4 and 6..15 of the streams' world exist only as placeholders. */
    assert_true(in.stats.placeholders_skipped >= 5);
    imported_free(&in);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

static void test_missing_archive_is_an_io_error(void **state)
{
    (void)state;
    imported in = {0};
    assert_int_equal(import(OTFX_TEST_TMPDIR "/no-such-archive.otf2", &in), OTFX_ERR_IO);
    assert_non_null(strstr(otfx_last_error(), "no-such-archive"));
    assert_null(in.defs);
    assert_null(in.traces);
    assert_int_equal(in.count, 0);
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    assert_int_equal(fwrite(data, 1, size, file), size);
    assert_int_equal(fclose(file), 0);
}

static void test_garbage_is_rejected(void **state)
{
    (void)state;
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_MIXED, 31, 2, 3000, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("import-garbage");
    char garbage[4096];
    uint64_t state_bits = 0x243f6a8885a308d3ull;
    for (size_t b = 0; b < sizeof garbage; b++) {
        state_bits = state_bits * 6364136223846793005ull + 1442695040888963407ull;
        garbage[b] = (char)(state_bits >> 56);
    }
    /* An anchor file that is not one. */
    char *fake_anchor = path_in(dir, "fake.otf2");
    write_file(fake_anchor, garbage, sizeof garbage);
    imported in = {0};
    assert_int_not_equal(import(fake_anchor, &in), OTFX_OK);
    assert_string_not_equal(otfx_last_error(), "");
    assert_null(in.defs);

    /* A valid archive whose event file, then global definitions, are overwritten or cut short. */
    static const char *const victims[] = {"run/0.evt", "run.def", "run/1.evt"};
    for (size_t v = 0; v < sizeof victims / sizeof *victims; v++) {
        for (int cut = 0; cut < 2; cut++) {
            otfx_export_options options = otfx_export_options_default();
            options.overwrite = true;
            assert_int_equal(otfx_otf2_export(dir, "run", job.defs, job.traces, job.count, &options),
                             OTFX_OK);
            char *victim = path_in(dir, victims[v]);
            if (cut) {
                FILE *file = fopen(victim, "r+b");
                assert_non_null(file);
                char head[100];
                size_t kept = fread(head, 1, sizeof head, file);
                fclose(file);
                write_file(victim, head, kept);
            } else {
                write_file(victim, garbage, sizeof garbage);
            }
            char *anchor = path_in(dir, "run.otf2");
            otfx_status status = import(anchor, &in);
            if (status == OTFX_OK) /* a cut event file may still hold a valid prefix */
                imported_free(&in);
            else
                assert_string_not_equal(otfx_last_error(), "");
            if (!cut)
                assert_int_not_equal(status, OTFX_OK);
            free(anchor);
            free(victim);
        }
    }
    free(fake_anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

/* ---- an archive as another tool writes it ---- */

enum {
    FOREIGN_RESOLUTION = 1000000, /* microseconds */
    STRING_EMPTY = 0,
    STRING_MAIN,
    STRING_BARRIER,
    STRING_SEND,
    STRING_WORLD,
    STRING_SELF,
    STRING_CYCLES,
    STRING_INSTRUCTIONS,
    STRING_UNIT,
    STRING_RANK,
    STRING_NODE,
    STRING_PARAMETER,
};

/* Locations 10 (rank 0), 11 (rank 1) and 12 (rank 0's second thread): ids that do not follow the
 * otfx scheme, so threads are numbered per rank in definition order. */
typedef enum foreign_case {
    FOREIGN_VALID,
    FOREIGN_LEAVE_WITHOUT_ENTER,
    FOREIGN_UNDEFINED_REGION
} foreign_case;

static void write_foreign_archive(const char *dir, foreign_case which)
{
    OTF2_Archive *archive = OTF2_Archive_Open(dir, "foreign", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                              OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    assert_non_null(archive);
    assert_int_equal(OTF2_Archive_SetFlushCallbacks(archive, &otfx_otf2_flush_always, NULL), OTF2_SUCCESS);
    assert_int_equal(OTF2_Archive_SetSerialCollectiveCallbacks(archive), OTF2_SUCCESS);
    assert_int_equal(OTF2_Archive_OpenEvtFiles(archive), OTF2_SUCCESS);

    OTF2_EvtWriter *rank0 = OTF2_Archive_GetEvtWriter(archive, 10);
    if (which == FOREIGN_LEAVE_WITHOUT_ENTER)
        OTF2_EvtWriter_Leave(rank0, NULL, 5, 0);
    OTF2_EvtWriter_Enter(rank0, NULL, 10, which == FOREIGN_UNDEFINED_REGION ? 77 : 0);
    OTF2_EvtWriter_ThreadFork(rank0, NULL, 11, OTF2_PARADIGM_OPENMP,
                              4); /* no otfx event: ignored and counted */
    OTF2_EvtWriter_Enter(rank0, NULL, 12, 2);
    OTF2_EvtWriter_MpiSend(rank0, NULL, 13, 0, 0, 99, 4096); /* rank 0 of `world` is world rank 1 */
    OTF2_EvtWriter_MpiSend(rank0, NULL, 14, 0, 1, 98, 8);    /* self communicator */
    OTF2_EvtWriter_Leave(rank0, NULL, 15, 2);
    OTF2_EvtWriter_Enter(rank0, NULL, 20, 1);
    OTF2_EvtWriter_MpiCollectiveBegin(rank0, NULL, 21);
    OTF2_EvtWriter_MpiCollectiveEnd(rank0, NULL, 22, OTF2_COLLECTIVE_OP_BARRIER, 0, OTF2_UNDEFINED_UINT32, 0,
                                    0);
    OTF2_EvtWriter_Leave(rank0, NULL, 23, 1);
    OTF2_Type types[2] = {OTF2_TYPE_UINT64, OTF2_TYPE_INT64};
    OTF2_MetricValue values[2];
    values[0].unsigned_int = 123456;
    values[1].signed_int = -5;
    OTF2_EvtWriter_Metric(rank0, NULL, 24, 5 /* the instance */, 2, types, values);
    OTF2_EvtWriter_ParameterInt(rank0, NULL, 25, 0, 17); /* ignored and counted */
    OTF2_EvtWriter_Leave(rank0, NULL, 30, 0);
    assert_int_equal(OTF2_Archive_CloseEvtWriter(archive, rank0), OTF2_SUCCESS);

    /* Rank 1 records with a local region id, mapped to the global one by its local definitions (as
     * Score-P writes archives). */
    OTF2_EvtWriter *rank1 = OTF2_Archive_GetEvtWriter(archive, 11);
    OTF2_EvtWriter_Enter(rank1, NULL, 10, 7);
    OTF2_EvtWriter_MpiRecv(rank1, NULL, 16, 1, 0, 99, 4096); /* from rank 1 of `world`: world rank 0 */
    OTF2_EvtWriter_Leave(rank1, NULL, 30, 7);
    assert_int_equal(OTF2_Archive_CloseEvtWriter(archive, rank1), OTF2_SUCCESS);

    OTF2_EvtWriter *thread = OTF2_Archive_GetEvtWriter(archive, 12);
    OTF2_EvtWriter_Enter(thread, NULL, 11, 0);
    OTF2_EvtWriter_Leave(thread, NULL, 29, 0);
    assert_int_equal(OTF2_Archive_CloseEvtWriter(archive, thread), OTF2_SUCCESS);
    assert_int_equal(OTF2_Archive_CloseEvtFiles(archive), OTF2_SUCCESS);

    assert_int_equal(OTF2_Archive_OpenDefFiles(archive), OTF2_SUCCESS);
    OTF2_IdMap *regions = OTF2_IdMap_Create(OTF2_ID_MAP_SPARSE, 1);
    assert_non_null(regions);
    assert_int_equal(OTF2_IdMap_AddIdPair(regions, 7, 0), OTF2_SUCCESS);
    for (uint64_t location = 10; location <= 12; location++) {
        OTF2_DefWriter *local = OTF2_Archive_GetDefWriter(archive, location);
        assert_non_null(local);
        if (location == 11)
            assert_int_equal(OTF2_DefWriter_WriteMappingTable(local, OTF2_MAPPING_REGION, regions),
                             OTF2_SUCCESS);
        assert_int_equal(OTF2_Archive_CloseDefWriter(archive, local), OTF2_SUCCESS);
    }
    OTF2_IdMap_Free(regions);
    assert_int_equal(OTF2_Archive_CloseDefFiles(archive), OTF2_SUCCESS);

    OTF2_GlobalDefWriter *defs = OTF2_Archive_GetGlobalDefWriter(archive);
    assert_non_null(defs);
    OTF2_GlobalDefWriter_WriteClockProperties(defs, FOREIGN_RESOLUTION, 0, 30, OTF2_UNDEFINED_TIMESTAMP);
    static const char *const strings[] = {"",      "main", "MPI_Barrier", "MPI_Send",
                                          "world", "self", "cycles",      "instructions",
                                          "#",     "rank", "node",        "iterations"};
    for (uint32_t s = 0; s < sizeof strings / sizeof *strings; s++)
        OTF2_GlobalDefWriter_WriteString(defs, s, strings[s]);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(defs, 0, STRING_NODE, STRING_NODE,
                                             OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    OTF2_GlobalDefWriter_WriteLocationGroup(defs, 0, STRING_RANK, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                            OTF2_UNDEFINED_LOCATION_GROUP);
    OTF2_GlobalDefWriter_WriteLocationGroup(defs, 1, STRING_RANK, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                            OTF2_UNDEFINED_LOCATION_GROUP);
    OTF2_GlobalDefWriter_WriteLocation(defs, 10, STRING_RANK, OTF2_LOCATION_TYPE_CPU_THREAD, 13, 0);
    OTF2_GlobalDefWriter_WriteLocation(defs, 11, STRING_RANK, OTF2_LOCATION_TYPE_CPU_THREAD, 3, 1);
    OTF2_GlobalDefWriter_WriteLocation(defs, 12, STRING_RANK, OTF2_LOCATION_TYPE_CPU_THREAD, 2, 0);
    OTF2_GlobalDefWriter_WriteRegion(defs, 0, STRING_MAIN, STRING_MAIN, STRING_EMPTY,
                                     OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_COMPILER, OTF2_REGION_FLAG_NONE,
                                     STRING_EMPTY, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(defs, 1, STRING_BARRIER, STRING_BARRIER, STRING_EMPTY,
                                     OTF2_REGION_ROLE_BARRIER, OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE,
                                     STRING_EMPTY, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(defs, 2, STRING_SEND, STRING_SEND, STRING_EMPTY,
                                     OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE,
                                     STRING_EMPTY, 0, 0);
    uint64_t locations[2] = {10, 11};
    OTF2_GlobalDefWriter_WriteGroup(defs, 0, STRING_EMPTY, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, 2, locations);
    uint64_t reversed[2] = {1, 0};
    OTF2_GlobalDefWriter_WriteGroup(defs, 1, STRING_WORLD, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, 2, reversed);
    OTF2_GlobalDefWriter_WriteGroup(defs, 2, STRING_SELF, OTF2_GROUP_TYPE_COMM_SELF, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, 0, NULL);
    OTF2_GlobalDefWriter_WriteComm(defs, 0, STRING_WORLD, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    OTF2_GlobalDefWriter_WriteComm(defs, 1, STRING_SELF, 2, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    OTF2_GlobalDefWriter_WriteMetricMember(defs, 0, STRING_CYCLES, STRING_EMPTY, OTF2_METRIC_TYPE_PAPI,
                                           OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL,
                                           0, STRING_UNIT);
    OTF2_GlobalDefWriter_WriteMetricMember(defs, 1, STRING_INSTRUCTIONS, STRING_EMPTY, OTF2_METRIC_TYPE_PAPI,
                                           OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_INT64, OTF2_BASE_DECIMAL, 0,
                                           STRING_UNIT);
    OTF2_MetricMemberRef members[2] = {0, 1};
    OTF2_GlobalDefWriter_WriteMetricClass(defs, 4, 2, members, OTF2_METRIC_SYNCHRONOUS_STRICT,
                                          OTF2_RECORDER_KIND_CPU);
    OTF2_GlobalDefWriter_WriteMetricInstance(defs, 5, 4, 10, OTF2_SCOPE_LOCATION, 10);
    OTF2_GlobalDefWriter_WriteParameter(defs, 0, STRING_PARAMETER, OTF2_PARAMETER_TYPE_INT64);
    assert_int_equal(OTF2_Archive_CloseGlobalDefWriter(archive, defs), OTF2_SUCCESS);
    assert_int_equal(OTF2_Archive_Close(archive), OTF2_SUCCESS);
}

static const otfx_event *nth_of_type(const otf2_check_events *events, otfx_event_type type, size_t n)
{
    for (size_t e = 0; e < events->count; e++)
        if (events->events[e].type == type && n-- == 0)
            return &events->events[e];
    fail_msg("no %s number %zu", otfx_event_type_name(type), n);
    return NULL;
}

static void test_foreign_archive(void **state)
{
    (void)state;
    char *dir = otf2_check_scratch_dir("import-foreign");
    write_foreign_archive(dir, FOREIGN_VALID);
    char *anchor = path_in(dir, "foreign.otf2");
    imported in;
    if (import(anchor, &in) != OTFX_OK)
        fail_msg("import: %s", otfx_last_error());
    assert_int_equal(in.count, 3);
    assert_int_equal(in.stats.records_ignored, 2);
    assert_int_equal(in.stats.records_read, 18);

    /* Traces in rank, thread order: rank 0 thread 0, rank 0 thread 1, rank 1 thread 0. */
    static const uint32_t ranks[] = {0, 0, 1}, threads[] = {0, 1, 0};
    for (size_t t = 0; t < 3; t++) {
        otfx_location_def where;
        assert_int_equal(otfx_defs_get_location(in.defs, otfx_trace_location(in.traces[t]), &where), OTFX_OK);
        assert_int_equal(where.rank, ranks[t]);
        assert_int_equal(where.thread, threads[t]);
    }

    otf2_check_events rank0;
    otf2_check_collect(in.traces[0], 0, OTFX_TIME_MAX, true, &rank0);
    assert_int_equal(rank0.count, 12); /* 13 records, 2 ignored, the 2-member metric gives 2 events */
    assert_int_equal(rank0.events[0].time, 10 * (1000000000 / FOREIGN_RESOLUTION));

    otfx_region_def region;
    const otfx_event *barrier = nth_of_type(&rank0, OTFX_EV_ENTER, 2);
    assert_int_equal(otfx_defs_get_region(in.defs, barrier->u.region.region, &region), OTFX_OK);
    assert_string_equal(region.name, "MPI_Barrier");
    assert_int_equal(region.role, OTFX_ROLE_MPI_COLLECTIVE);
    assert_int_equal(
        otfx_defs_get_region(in.defs, nth_of_type(&rank0, OTFX_EV_ENTER, 1)->u.region.region, &region),
        OTFX_OK);
    assert_int_equal(region.role, OTFX_ROLE_MPI_P2P);

    const otfx_event *to_world = nth_of_type(&rank0, OTFX_EV_SEND, 0);
    assert_int_equal(to_world->u.msg.peer, 1);
    assert_int_equal(to_world->u.msg.tag, 99);
    otfx_comm_def comm;
    assert_int_equal(otfx_defs_get_comm(in.defs, to_world->u.msg.comm, &comm), OTFX_OK);
    assert_string_equal(comm.name, "world");
    assert_int_equal(comm.size, 2);
    assert_int_equal(comm.world_ranks[0], 1);
    const otfx_event *to_self = nth_of_type(&rank0, OTFX_EV_SEND, 1);
    assert_int_equal(to_self->u.msg.peer, 0);
    assert_int_equal(otfx_defs_get_comm(in.defs, to_self->u.msg.comm, &comm), OTFX_OK);
    assert_string_equal(comm.name, "self");
    assert_int_equal(comm.size, 1);

    assert_int_equal(nth_of_type(&rank0, OTFX_EV_COLL_END, 0)->u.coll.root, UINT32_MAX);
    /* OTF2 has no collective ordinals: the n-th blocking collective on a communicator gets n, and its
     * begin (which names no communicator in OTF2) the end's communicator and ordinal */
    const otfx_event *begin = nth_of_type(&rank0, OTFX_EV_COLL_BEGIN, 0);
    const otfx_event *end = nth_of_type(&rank0, OTFX_EV_COLL_END, 0);
    assert_int_equal(end->u.coll.seq, 1);
    assert_int_equal(begin->u.coll.seq, 1);
    assert_int_equal(begin->u.coll.comm, end->u.coll.comm);
    const otfx_event *cycles = nth_of_type(&rank0, OTFX_EV_METRIC, 0);
    const otfx_event *instructions = nth_of_type(&rank0, OTFX_EV_METRIC, 1);
    assert_int_equal(cycles->u.metric.value, 123456);
    assert_int_equal((int64_t)instructions->u.metric.value, -5);
    otfx_metric_def metric;
    assert_int_equal(otfx_defs_get_metric(in.defs, instructions->u.metric.metric, &metric), OTFX_OK);
    assert_string_equal(metric.name, "instructions");
    assert_int_equal(metric.type, OTFX_METRIC_INT64);

    otf2_check_events rank1;
    otf2_check_collect(in.traces[2], 0, OTFX_TIME_MAX, true, &rank1);
    assert_int_equal(nth_of_type(&rank1, OTFX_EV_RECV, 0)->u.msg.peer, 0);
    assert_int_equal(
        otfx_defs_get_region(in.defs, nth_of_type(&rank1, OTFX_EV_ENTER, 0)->u.region.region, &region),
        OTFX_OK);
    assert_string_equal(region.name, "main"); /* local id 7, mapped */

    otf2_check_events_free(&rank0);
    otf2_check_events_free(&rank1);
    imported_free(&in);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
}

/* Nonblocking collectives: NonBlockingCollectiveRequest in the starting call, NonBlockingCollectiveComplete
 * in the completing one, request ids paired; the root is written as a rank of the communicator (world
 * rank 2 is rank 0 of {2, 1}) and read back as the world rank. */
static void test_nonblocking_collectives_round_trip(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    assert_non_null(defs);
    const uint32_t world_ranks[] = {0, 1, 2}, pair_ranks[] = {2, 1};
    otfx_ref world, pair, location, ibcast, iallreduce, wait;
    assert_int_equal(otfx_defs_comm(defs, "world", world_ranks, 3, &world), OTFX_OK);
    assert_int_equal(otfx_defs_comm(defs, "pair", pair_ranks, 2, &pair), OTFX_OK);
    assert_int_equal(otfx_defs_location(defs, 1, 0, &location), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Ibcast", OTFX_ROLE_MPI_COLLECTIVE, &ibcast), OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Iallreduce", OTFX_ROLE_MPI_COLLECTIVE, &iallreduce),
                     OTFX_OK);
    assert_int_equal(otfx_defs_region(defs, "MPI_Wait", OTFX_ROLE_MPI_P2P, &wait), OTFX_OK);
    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&config, defs, location, &trace), OTFX_OK);

    otfx_event events[12] = {
        {.time = 100, .type = OTFX_EV_ENTER, .u.region.region = ibcast},
        {.time = 110, .type = OTFX_EV_NBC_REQUEST, .u.request.request = 77},
        {.time = 120, .type = OTFX_EV_LEAVE, .u.region.region = ibcast},
        {.time = 130, .type = OTFX_EV_ENTER, .u.region.region = iallreduce},
        {.time = 140, .type = OTFX_EV_NBC_REQUEST, .u.request.request = UINT64_MAX},
        {.time = 150, .type = OTFX_EV_LEAVE, .u.region.region = iallreduce},
        {.time = 200, .type = OTFX_EV_ENTER, .u.region.region = wait},
        {.time = 210, .type = OTFX_EV_NBC_COMPLETE},
        {.time = 220, .type = OTFX_EV_LEAVE, .u.region.region = wait},
        {.time = 300, .type = OTFX_EV_ENTER, .u.region.region = wait},
        {.time = 310, .type = OTFX_EV_NBC_COMPLETE},
        {.time = 320, .type = OTFX_EV_LEAVE, .u.region.region = wait},
    };
    events[7].u.coll.comm = world;
    events[7].u.coll.op = 11; /* OTF2_COLLECTIVE_OP_ALLREDUCE */
    events[7].u.coll.root = UINT32_MAX;
    events[7].u.coll.sent = events[7].u.coll.received = 24;
    events[7].u.coll.request = UINT64_MAX;
    events[10].u.coll.comm = pair;
    events[10].u.coll.op = 1; /* OTF2_COLLECTIVE_OP_BCAST */
    events[10].u.coll.root = 2;
    events[10].u.coll.received = 40;
    events[10].u.coll.request = 77;
    size_t appended = 0;
    assert_int_equal(otfx_trace_append(trace, events, 12, &appended), OTFX_OK);

    char *dir = otf2_check_scratch_dir("import-nbc");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "nbc", defs, &trace, 1, &options), OTFX_OK);
    char *anchor = path_in(dir, "nbc.otf2");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    const otf2_check_location *printed = otf2_check_print_find(&print, otfx_otf2_location_id(1, 0));
    assert_non_null(printed);
    assert_int_equal(otf2_check_count(printed, "NON_BLOCKING_COLLECTIVE_REQUEST"), 2);
    assert_int_equal(otf2_check_count(printed, "NON_BLOCKING_COLLECTIVE_COMPLETE"), 2);
    assert_int_equal(otf2_check_count(printed, "MPI_COLLECTIVE_END"), 0);
    otf2_check_print_free(&print);

    imported in;
    if (import(anchor, &in) != OTFX_OK)
        fail_msg("import: %s", otfx_last_error());
    assert_int_equal(in.stats.records_ignored, 0);
    assert_int_equal(in.count, 1); /* ranks 0 and 2 were placeholders */
    otf2_check_events back;
    otf2_check_collect(in.traces[0], 0, OTFX_TIME_MAX, true, &back);
    assert_int_equal(back.count, 12);
    for (size_t e = 0; e < 12; e++) {
        char why[256];
        if (!otf2_check_same_event(defs, &events[e], in.defs, &back.events[e], why, sizeof why))
            fail_msg("event %zu: %s", e, why);
    }
    const otfx_event *bcast = nth_of_type(&back, OTFX_EV_NBC_COMPLETE, 1);
    assert_int_equal(bcast->u.coll.root, 2);
    assert_int_equal(bcast->u.coll.request, 77);
    otfx_comm_def comm;
    assert_int_equal(otfx_defs_get_comm(in.defs, bcast->u.coll.comm, &comm), OTFX_OK);
    assert_string_equal(comm.name, "pair");

    otf2_check_events_free(&back);
    imported_free(&in);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

static void test_invalid_event_streams_are_rejected(void **state)
{
    (void)state;
    static const foreign_case cases[] = {FOREIGN_LEAVE_WITHOUT_ENTER, FOREIGN_UNDEFINED_REGION};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *dir = otf2_check_scratch_dir("import-invalid");
        write_foreign_archive(dir, cases[c]);
        char *anchor = path_in(dir, "foreign.otf2");
        imported in = {0};
        assert_int_equal(import(anchor, &in), OTFX_ERR_CORRUPT);
        assert_non_null(strstr(otfx_last_error(), "rank 0 thread 0"));
        assert_null(in.defs);
        free(anchor);
        otf2_check_remove_tree(dir);
        free(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_mixed),
        cmocka_unit_test(test_round_trip_stencil),
        cmocka_unit_test(test_round_trip_user_heavy),
        cmocka_unit_test(test_round_trip_threads),
        cmocka_unit_test(test_missing_archive_is_an_io_error),
        cmocka_unit_test(test_garbage_is_rejected),
        cmocka_unit_test(test_foreign_archive),
        cmocka_unit_test(test_nonblocking_collectives_round_trip),
        cmocka_unit_test(test_invalid_event_streams_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_snapshot_mpi.c — the event places' common OTF2 snapshot (places/src/snapshot.c) on 3 processes.
 *
 * Each process plays an event place holding the traces of 2 ranks (process 0 also a second thread of
 * rank 0), built in-process with its own otfx_defs: regions, communicators and metrics are defined in
 * a different order on every process and some exist on one process only, so the archive is only right
 * when the definitions were unified. Rank 4's trace (process 2) is small and reduced (ring).
 *   1. whole snapshot: otf2-print exits 0 and lists per location the records each process expects from
 *      its own traces; python3-otf2 counts the same per location; the otfx importer reads back every
 *      process's events with the right region names, communicators and metrics;
 *   2. a window of ranks 1, 2, 4 (the others become placeholders of the MPI group): well nested, inside
 *      the window, the window's events, python agrees;
 *   3. refusals agreed by every process: "..", absolute outside, a symlink leading out, an existing
 *      archive without overwrite (and its replacement with it).
 * Prints "snapshot-test: ..." lines that ctest matches; any failure aborts.
 */
#define _POSIX_C_SOURCE 200809L
#include "otf2_check.h"
#include "otf2_common.h"
#include "snapshot.h"

#include <mpi.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PROCESSES = 3, RANKS_PER_PROCESS = 2, WORLD = PROCESSES * RANKS_PER_PROCESS, MAX_TRACES = 4 };
enum { ITERATIONS = 300, REDUCED_ITERATIONS = 6000, REDUCED_RANK = 4 };

static int me;

static void check(bool condition, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void check(bool condition, const char *format, ...)
{
    if (condition)
        return;
    va_list args;
    va_start(args, format);
    fprintf(stderr, "snapshot-test: process %d: FAILED: ", me);
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define OK(call) check((call) == OTFX_OK, "%s: %s", #call, otfx_last_error())

/* ---- one process's traces ---- */

typedef struct place_data {
    otfx_defs *defs;
    otfx_trace *traces[MAX_TRACES];
    uint32_t ranks[MAX_TRACES], threads[MAX_TRACES];
    size_t count;
    otfx_ref main_region, special, send, barrier, world, pair, bytes_metric;
    otfx_time first, last; /* of the unreduced traces */
} place_data;

static otfx_ref region(place_data *place, const char *name, otfx_region_role role)
{
    otfx_ref ref;
    OK(otfx_defs_region(place->defs, name, role, &ref));
    return ref;
}

/* Definitions in an order of the process's own, partly its own regions. */
static void define(place_data *place)
{
    place->defs = otfx_defs_create();
    check(place->defs != NULL, "otfx_defs_create");
    uint32_t world[WORLD], pair[2] = {2, 3};
    for (uint32_t r = 0; r < WORLD; r++)
        world[r] = r;
    otfx_ref other;
    switch (me) {
    case 0:
        place->main_region = region(place, "main", OTFX_ROLE_USER_FUNCTION);
        place->send = region(place, "MPI_Send", OTFX_ROLE_MPI_P2P);
        place->barrier = region(place, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE);
        place->special = region(place, "solve_p0", OTFX_ROLE_USER_FUNCTION);
        OK(otfx_defs_comm(place->defs, "MPI_COMM_WORLD", world, WORLD, &place->world));
        place->pair = place->world;
        OK(otfx_defs_metric(place->defs, "bytes", "B", OTFX_METRIC_UINT64, &place->bytes_metric));
        break;
    case 1:
        region(place, "only_p1_unused", OTFX_ROLE_USER_FUNCTION);
        place->special = region(place, "only_p1", OTFX_ROLE_USER_FUNCTION);
        place->barrier = region(place, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE);
        place->main_region = region(place, "main", OTFX_ROLE_USER_FUNCTION);
        place->send = region(place, "MPI_Send", OTFX_ROLE_MPI_P2P);
        OK(otfx_defs_comm(place->defs, "pair", pair, 2, &place->pair));
        OK(otfx_defs_comm(place->defs, "MPI_COMM_WORLD", world, WORLD, &place->world));
        OK(otfx_defs_metric(place->defs, "temperature", "C", OTFX_METRIC_DOUBLE, &other));
        OK(otfx_defs_metric(place->defs, "bytes", "B", OTFX_METRIC_UINT64, &place->bytes_metric));
        break;
    default:
        place->send = region(place, "MPI_Send", OTFX_ROLE_MPI_P2P);
        region(place, "phase", OTFX_ROLE_PHASE);
        place->main_region = region(place, "main", OTFX_ROLE_USER_FUNCTION);
        place->special = region(place, "solve_p2", OTFX_ROLE_USER_FUNCTION);
        place->barrier = region(place, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE);
        OK(otfx_defs_metric(place->defs, "steps", "", OTFX_METRIC_INT64, &other));
        OK(otfx_defs_metric(place->defs, "bytes", "B", OTFX_METRIC_UINT64, &place->bytes_metric));
        OK(otfx_defs_comm(place->defs, "MPI_COMM_WORLD", world, WORLD, &place->world));
        place->pair = place->world;
        break;
    }
}

static void append(otfx_trace *trace, const otfx_event *event)
{
    size_t appended;
    otfx_status status = otfx_trace_append(trace, event, 1, &appended);
    check(status == OTFX_OK, "append: %s", otfx_last_error());
}

static void add_trace(place_data *place, uint32_t rank, uint32_t thread, size_t budget, int iterations)
{
    otfx_ref location;
    OK(otfx_defs_location(place->defs, rank, thread, &location));
    otfx_trace_config config = otfx_trace_config_default(budget);
    if (budget < (1u << 20))
        config.chunk_bytes = 1024;
    otfx_trace *trace;
    OK(otfx_trace_create(&config, place->defs, location, &trace));
    otfx_time t = 1000 + 3 * rank + thread;
    append(trace, &(otfx_event){.time = t, .type = OTFX_EV_ENTER, .u.region.region = place->main_region});
    bool in_pair = me == 1 && thread == 0;
    for (int i = 0; i < iterations; i++) {
        t += 100;
        append(trace, &(otfx_event){.time = t, .type = OTFX_EV_ENTER, .u.region.region = place->special});
        append(trace, &(otfx_event){.time = t + 1, .type = OTFX_EV_ENTER, .u.region.region = place->send});
        otfx_event send = {.time = t + 2, .type = OTFX_EV_SEND};
        send.u.msg.comm = in_pair ? place->pair : place->world;
        send.u.msg.peer = in_pair ? (rank == 2 ? 3 : 2) : (rank + 1) % WORLD;
        send.u.msg.tag = 7;
        send.u.msg.bytes = 64 + (uint64_t)i;
        append(trace, &send);
        append(trace, &(otfx_event){.time = t + 3, .type = OTFX_EV_LEAVE, .u.region.region = place->send});
        append(trace, &(otfx_event){.time = t + 4, .type = OTFX_EV_LEAVE, .u.region.region = place->special});
        append(trace, &(otfx_event){.time = t + 5, .type = OTFX_EV_ENTER, .u.region.region = place->barrier});
        append(trace, &(otfx_event){.time = t + 5, .type = OTFX_EV_COLL_BEGIN});
        otfx_event end = {.time = t + 6, .type = OTFX_EV_COLL_END};
        end.u.coll.comm = place->world;
        end.u.coll.op = 0;
        end.u.coll.root = UINT32_MAX;
        append(trace, &end);
        append(trace, &(otfx_event){.time = t + 7, .type = OTFX_EV_LEAVE, .u.region.region = place->barrier});
        otfx_event metric = {.time = t + 8, .type = OTFX_EV_METRIC};
        metric.u.metric.metric = place->bytes_metric;
        metric.u.metric.value = (uint64_t)i;
        append(trace, &metric);
    }
    append(trace,
           &(otfx_event){.time = t + 50, .type = OTFX_EV_LEAVE, .u.region.region = place->main_region});
    place->traces[place->count] = trace;
    place->ranks[place->count] = rank;
    place->threads[place->count] = thread;
    place->count++;
    if (iterations == ITERATIONS) {
        if (!place->first || 1000 + 3 * rank + thread < place->first)
            place->first = 1000 + 3 * rank + thread;
        if (t + 50 > place->last)
            place->last = t + 50;
    }
}

static void build(place_data *place)
{
    *place = (place_data){0};
    define(place);
    for (uint32_t r = 0; r < RANKS_PER_PROCESS; r++) {
        uint32_t rank = (uint32_t)me * RANKS_PER_PROCESS + r;
        if (rank == REDUCED_RANK)
            add_trace(place, rank, 0, 64 << 10, REDUCED_ITERATIONS);
        else
            add_trace(place, rank, 0, 16 << 20, ITERATIONS);
    }
    if (me == 0)
        add_trace(place, 0, 1, 16 << 20, ITERATIONS / 2);
    otfx_trace_status status;
    for (size_t t = 0; t < place->count; t++) {
        OK(otfx_trace_status_get(place->traces[t], &status));
        if (place->ranks[t] == REDUCED_RANK)
            check(status.reductions > 0, "rank %d's trace was not reduced", REDUCED_RANK);
    }
}

/* ---- checks ---- */

/* Records otf2-print must list for a whole export of `trace` (reduced pieces as otf2-print saw them). */
static uint64_t expected_total(otfx_trace *trace, otfx_time from, otfx_time to,
                               const otf2_check_location *location)
{
    otf2_check_events events;
    otf2_check_collect(trace, from, to, true, &events);
    uint64_t counts[OTFX_EV_TYPE_COUNT] = {0};
    uint64_t phases = 0, reductions = 0;
    for (size_t e = 0; e < events.count; e++) {
        counts[events.events[e].type]++;
        phases += events.events[e].type == OTFX_EV_PHASE;
        reductions += events.events[e].type == OTFX_EV_REDUCTION;
    }
    otf2_check_events_free(&events);
    uint64_t total = 0;
    for (int type = 0; type < OTFX_EV_TYPE_COUNT; type++) {
        const char *name = otfx_otf2_record_name((otfx_event_type)type);
        if (!name)
            continue;
        uint64_t extra = 0;
        if (type == OTFX_EV_ENTER || type == OTFX_EV_LEAVE)
            extra = phases + location->reduced_enters;
        check(otf2_check_count(location, name) == counts[type] + extra,
              "location %" PRIu64 ": %s: otf2-print lists %" PRIu64 ", expected %" PRIu64, location->location,
              name, otf2_check_count(location, name), counts[type] + extra);
        total += counts[type] + extra;
    }
    check(location->reduction_records == reductions,
          "location %" PRIu64 ": %" PRIu64 " reduction records, expected %" PRIu64, location->location,
          location->reduction_records, reductions);
    return total;
}

static char *anchor_of(const char *directory, const char *path)
{
    char *anchor = malloc(strlen(directory) + strlen(path) + 16);
    check(anchor != NULL, "malloc");
    sprintf(anchor, "%s/%s.otf2", directory, path);
    return anchor;
}

/* Process 0 compares python3-otf2's per-location totals with what every process expects. */
static void check_python(const char *anchor, const uint64_t *locations, const uint64_t *totals, size_t count)
{
    uint64_t all_locations[PROCESSES * MAX_TRACES], all_totals[PROCESSES * MAX_TRACES];
    uint64_t mine[2 * MAX_TRACES] = {0}, every[PROCESSES * 2 * MAX_TRACES];
    for (size_t l = 0; l < MAX_TRACES; l++) {
        mine[2 * l] = l < count ? locations[l] : UINT64_MAX;
        mine[2 * l + 1] = l < count ? totals[l] : 0;
    }
    MPI_Gather(mine, 2 * MAX_TRACES, MPI_UINT64_T, every, 2 * MAX_TRACES, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me != 0)
        return;
    size_t n = 0;
    for (size_t i = 0; i < PROCESSES * MAX_TRACES; i++)
        if (every[2 * i] != UINT64_MAX) {
            all_locations[n] = every[2 * i];
            all_totals[n++] = every[2 * i + 1];
        }
    char why[256];
    if (!otf2_check_python_available(why, sizeof why)) {
        printf("snapshot-test: python3-otf2 not checked: %s\n", why);
        return;
    }
    otf2_check_print python;
    check(otf2_check_python_counts(anchor, &python) == 0, "python3-otf2 could not read %s", anchor);
    for (size_t l = 0; l < n; l++) {
        const otf2_check_location *read = otf2_check_print_find(&python, all_locations[l]);
        uint64_t total = read ? read->total : 0;
        check(total == all_totals[l],
              "python3-otf2: location %" PRIu64 " has %" PRIu64 " records, expected %" PRIu64,
              all_locations[l], total, all_totals[l]);
    }
    otf2_check_print_free(&python);
}

/* The importer reads back this process's events (by the meaning of their references). */
static void check_import(const char *anchor, place_data *place, otfx_time from, otfx_time to)
{
    otfx_trace_config config = otfx_trace_config_default(64 << 20);
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    OK(otfx_otf2_import(anchor, &config, &defs, &traces, &count));
    for (size_t t = 0; t < place->count; t++) {
        if (place->ranks[t] == REDUCED_RANK)
            continue; /* reduced: checked by counts */
        otfx_trace *back_trace = NULL;
        for (size_t i = 0; i < count; i++) {
            otfx_location_def where;
            OK(otfx_defs_get_location(defs, otfx_trace_location(traces[i]), &where));
            if (where.rank == place->ranks[t] && where.thread == place->threads[t])
                back_trace = traces[i];
        }
        if (from > 0 && !back_trace)
            continue; /* not selected in the window test */
        check(back_trace != NULL, "rank %u thread %u not imported", place->ranks[t], place->threads[t]);
        otf2_check_events original, back;
        otf2_check_collect(place->traces[t], from, to, true, &original);
        otf2_check_collect(back_trace, 0, OTFX_TIME_MAX, true, &back);
        size_t b = 0, depth = 0;
        for (size_t o = 0; o < original.count; o++) {
            otfx_event expected = original.events[o];
            if (expected.time < from)
                expected.time = from;
            depth += expected.type == OTFX_EV_ENTER;
            depth -= expected.type == OTFX_EV_LEAVE;
            check(b < back.count, "rank %u: imported trace too short", place->ranks[t]);
            char why[256];
            check(otf2_check_same_event(place->defs, &expected, defs, &back.events[b], why, sizeof why),
                  "rank %u thread %u event %zu: %s", place->ranks[t], place->threads[t], o, why);
            b++;
        }
        check(back.count - b == depth, "rank %u: %zu records after the window, %zu regions open",
              place->ranks[t], back.count - b, depth);
        otf2_check_events_free(&original);
        otf2_check_events_free(&back);
    }
    /* The union: every region once, the ones of one process only included. */
    const char *names[] = {"main",    "MPI_Send",       "MPI_Barrier", "solve_p0",
                           "only_p1", "only_p1_unused", "solve_p2",    "phase"};
    for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
        int found = 0;
        for (uint32_t r = 0; r < otfx_defs_count_regions(defs); r++) {
            otfx_region_def def;
            OK(otfx_defs_get_region(defs, r, &def));
            found += strcmp(def.name, names[n]) == 0;
        }
        check(found == 1, "region %s defined %d times in the archive", names[n], found);
    }
    for (size_t i = 0; i < count; i++)
        otfx_trace_destroy(traces[i]);
    free(traces);
    otfx_defs_destroy(defs);
}

static void whole_snapshot(place_data *place, const char *directory)
{
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, place->defs, place->traces, place->count, directory,
                                "snap/whole", 0, UINT64_MAX, false, &result);
    check(result.ok, "whole snapshot: %s", result.error);
    check(result.locations == place->count, "whole snapshot: %u locations written", result.locations);
    char *anchor = anchor_of(directory, "snap/whole");
    check(strcmp(result.archive, anchor) == 0 || strstr(result.archive, "snap/whole.otf2"), "archive %s",
          result.archive);
    MPI_Barrier(MPI_COMM_WORLD);

    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    check(print.exit_code == 0, "otf2-print exits %d", print.exit_code);
    check(print.count == PROCESSES * RANKS_PER_PROCESS + 1, "otf2-print lists %zu locations", print.count);
    uint64_t locations[MAX_TRACES], totals[MAX_TRACES], written = 0;
    for (size_t t = 0; t < place->count; t++) {
        locations[t] = otfx_otf2_location_id(place->ranks[t], place->threads[t]);
        const otf2_check_location *location = otf2_check_print_find(&print, locations[t]);
        check(location != NULL, "location %" PRIu64 " missing", locations[t]);
        check(location->well_nested && location->ordered, "location %" PRIu64 " not well nested",
              locations[t]);
        totals[t] = expected_total(place->traces[t], 0, OTFX_TIME_MAX, location);
        check(location->total == totals[t], "location %" PRIu64 ": %" PRIu64 " records, expected %" PRIu64,
              locations[t], location->total, totals[t]);
        written += totals[t];
    }
    check(written == result.events_written, "events_written %" PRIu64 ", expected %" PRIu64,
          result.events_written, written);
    otf2_check_print_free(&print);
    check_python(anchor, locations, totals, place->count);
    check_import(anchor, place, 0, OTFX_TIME_MAX);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("snapshot-test: whole archive checked\n");
    fflush(stdout);
    free(anchor);
}

static bool selected(uint32_t rank)
{
    return rank == 1 || rank == 2 || rank == REDUCED_RANK;
}

static void window_snapshot(place_data *place, const char *directory)
{
    otfx_time first = place->first, last = place->last;
    MPI_Allreduce(MPI_IN_PLACE, &last, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    otfx_time from = first + (last - first) / 3 + 3, to = first + 2 * (last - first) / 3;
    otfx_trace *chosen[MAX_TRACES];
    size_t count = 0;
    for (size_t t = 0; t < place->count; t++)
        if (selected(place->ranks[t]))
            chosen[count++] = place->traces[t];
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, place->defs, chosen, count, directory, "snap/window.otf2",
                                from, to, false, &result);
    check(result.ok, "window snapshot: %s", result.error);
    check(result.locations == count, "window snapshot: %u locations", result.locations);
    MPI_Barrier(MPI_COMM_WORLD);

    char *anchor = anchor_of(directory, "snap/window");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    check(print.exit_code == 0, "otf2-print exits %d on the window", print.exit_code);
    uint64_t locations[MAX_TRACES], totals[MAX_TRACES];
    size_t n = 0;
    for (size_t t = 0; t < place->count; t++) {
        uint64_t id = otfx_otf2_location_id(place->ranks[t], place->threads[t]);
        const otf2_check_location *location = otf2_check_print_find(&print, id);
        if (!selected(place->ranks[t])) {
            check(location == NULL, "unselected location %" PRIu64 " has records", id);
            continue;
        }
        check(location != NULL, "window: location %" PRIu64 " missing", id);
        check(location->well_nested && location->ordered, "window: location %" PRIu64 " not well nested", id);
        check(location->first_time >= from && location->last_time <= to,
              "window: location %" PRIu64 " outside", id);
        /* Records that are not enters or leaves are exactly the window's events of those kinds. */
        otf2_check_events events;
        otf2_check_collect(place->traces[t], from, to, false, &events);
        uint64_t sends = 0, metrics = 0;
        for (size_t e = 0; e < events.count; e++) {
            sends += events.events[e].type == OTFX_EV_SEND;
            metrics += events.events[e].type == OTFX_EV_METRIC;
        }
        otf2_check_events_free(&events);
        check(otf2_check_count(location, "MPI_SEND") == sends &&
                  otf2_check_count(location, "METRIC") == metrics,
              "window: location %" PRIu64 ": %" PRIu64 " sends, %" PRIu64 " metrics, expected %" PRIu64
              ", %" PRIu64,
              id, otf2_check_count(location, "MPI_SEND"), otf2_check_count(location, "METRIC"), sends,
              metrics);
        locations[n] = id;
        totals[n++] = location->total;
    }
    otf2_check_print_free(&print);
    check_python(anchor, locations, totals, n);
    check_import(anchor, place, from, to);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("snapshot-test: window archive checked\n");
    fflush(stdout);
    free(anchor);
}

/* A refused snapshot: refused on every process, with the same message. */
static void expect_refused(place_data *place, const char *directory, const char *path, bool overwrite,
                           const char *why)
{
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, place->defs, place->traces, place->count, directory, path, 0,
                                UINT64_MAX, overwrite, &result);
    check(!result.ok, "snapshot %s was not refused", path);
    check(strstr(result.error, why) != NULL, "snapshot %s: \"%s\" does not say \"%s\"", path, result.error,
          why);
    char first[512];
    memcpy(first, result.error, sizeof first);
    MPI_Bcast(first, sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
    /* Refusals of the path come from process 0; OTF2 export refusals name the failing process. */
    check(strcmp(first, result.error) == 0 || strstr(result.error, "process 0"),
          "snapshot %s: \"%s\" here, \"%s\" on 0", path, result.error, first);
}

static void refusals(place_data *place, const char *directory)
{
    expect_refused(place, directory, "../escape", false, "..");
    expect_refused(place, directory, "snap/../../escape", false, "..");
    expect_refused(place, directory, "/tmp/otfx-snapshot-outside", false, "outside");
    /* A symbolic link inside the directory to a directory outside it. */
    char link[4096];
    char *outside = NULL;
    snprintf(link, sizeof link, "%s/out", directory);
    if (me == 0) {
        outside = otf2_check_scratch_dir("snapshot-outside");
        check(symlink(outside, link) == 0, "symlink %s", link);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_refused(place, directory, "out/run", false, "leaves the snapshot directory");
    if (me == 0) {
        otf2_check_remove_tree(outside);
        free(outside);
    }
    expect_refused(place, directory, "snap/whole", false, "already exists");
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, place->defs, place->traces, place->count, directory,
                                "snap/whole", 0, UINT64_MAX, true, &result);
    check(result.ok, "overwrite: %s", result.error);
    char absolute[4096];
    snprintf(absolute, sizeof absolute, "%s/abs/inside", directory);
    place_snapshot_write_traces(MPI_COMM_WORLD, place->defs, place->traces, place->count, directory, absolute,
                                0, UINT64_MAX, false, &result);
    check(result.ok, "absolute path inside: %s", result.error);
    /* The first place (the one writing the global definitions) holds none of the selected ranks. */
    place_snapshot_write_traces(MPI_COMM_WORLD, place->defs, place->traces, me == 0 ? 0 : place->count,
                                directory, "snap/not-first", 0, UINT64_MAX, false, &result);
    check(result.ok, "snapshot without the first place's ranks: %s", result.error);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        char *anchor = anchor_of(directory, "snap/not-first");
        otf2_check_print print;
        otf2_check_print_run(anchor, &print);
        check(print.exit_code == 0, "otf2-print exits %d without the first place's ranks", print.exit_code);
        check(print.count == (PROCESSES - 1) * RANKS_PER_PROCESS, "otf2-print lists %zu locations",
              print.count);
        otf2_check_print_free(&print);
        free(anchor);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("snapshot-test: refusals checked\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check(size == PROCESSES, "needs %d processes", PROCESSES);
    char directory[4096] = "";
    if (me == 0) {
        char *scratch = otf2_check_scratch_dir("snapshot");
        snprintf(directory, sizeof directory, "%s", scratch);
        free(scratch);
    }
    MPI_Bcast(directory, sizeof directory, MPI_CHAR, 0, MPI_COMM_WORLD);

    place_data place;
    build(&place);
    whole_snapshot(&place, directory);
    window_snapshot(&place, directory);
    refusals(&place, directory);

    for (size_t t = 0; t < place.count; t++)
        otfx_trace_destroy(place.traces[t]);
    otfx_defs_destroy(place.defs);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        if (getenv("SNAPSHOT_TEST_KEEP"))
            printf("snapshot-test: kept %s\n", directory);
        else
            otf2_check_remove_tree(directory);
        printf("snapshot-test: passed\n");
    }
    MPI_Finalize();
    return 0;
}

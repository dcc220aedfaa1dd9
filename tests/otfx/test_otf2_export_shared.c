/* test_otf2_export_shared.c — otfx_otf2_export_shared: one process writes what otfx_otf2_export
 * writes; several "processes" (threads here, each with its own definitions, OTF2 collectives over a
 * pthread barrier) write one archive whose definitions are the union, read back by otf2-print,
 * python3-otf2 and the importer; failures and refusals are agreed by all; messages whose other end no
 * process holds are left out with what belongs to them, and the rest pair by order; a live trace keeps
 * taking appends while it is exported (the export reads a copy). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "otf2_check.h"
#include "otf2_common.h"
#include "random_stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { GROUP = 3, TRACES_PER_PROCESS = 2, WORLD = GROUP * TRACES_PER_PROCESS, EVENTS = 6000 };
enum { BIG_BUDGET = 16 << 20, SMALL_BUDGET = 64 << 10 };

static char *anchor_path(const char *directory, const char *name)
{
    size_t size = strlen(directory) + strlen(name) + 8;
    char *path = malloc(size);
    assert_non_null(path);
    snprintf(path, size, "%s/%s.otf2", directory, name);
    return path;
}

static bool exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

/* ---- one process, serial collectives through the hooks ---- */

typedef struct serial_hooks {
    int opened, exchanges;
} serial_hooks;

static int serial_opened(void *archive, void *user)
{
    ((serial_hooks *)user)->opened++;
    return OTF2_Archive_SetSerialCollectiveCallbacks(archive) == OTF2_SUCCESS ? 0 : -1;
}

static int serial_allgather(const void *data, size_t size, void **all, size_t *sizes, void *user)
{
    ((serial_hooks *)user)->exchanges++;
    *all = malloc(size ? size : 1);
    if (!*all)
        return -1;
    memcpy(*all, data, size);
    sizes[0] = size;
    return 0;
}

static void test_one_process_writes_what_the_serial_export_writes(void **state)
{
    (void)state;
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_MIXED, 3, 3, EVENTS * 4, 128 << 10, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("shared-one");
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(dir, "plain", job.defs, job.traces, job.count, &options), OTFX_OK);
    serial_hooks hooks = {0};
    otfx_otf2_collective one = {
        .size = 1, .rank = 0, .archive_opened = serial_opened, .allgather = serial_allgather, .user = &hooks};
    otfx_export_stats stats;
    assert_int_equal(
        otfx_otf2_export_shared(dir, "shared", job.defs, job.traces, job.count, &options, &one, &stats),
        OTFX_OK);
    assert_int_equal(hooks.opened, 1);
    /* arguments, pairing, one clock round (these messages have no ordinals), events, the end */
    assert_int_equal(hooks.exchanges, 5);
    assert_int_equal(stats.locations, job.count);

    char *plain = anchor_path(dir, "plain"), *shared = anchor_path(dir, "shared");
    otf2_check_print print;
    otf2_check_print_run(shared, &print);
    assert_int_equal(print.exit_code, 0);
    uint64_t total = 0;
    for (size_t l = 0; l < print.count; l++)
        total += print.locations[l].total;
    assert_int_equal(stats.events, total);
    for (size_t t = 0; t < job.count; t++) {
        otfx_location_def where;
        assert_int_equal(otfx_defs_get_location(job.defs, otfx_trace_location(job.traces[t]), &where),
                         OTFX_OK);
        uint64_t location = otfx_otf2_location_id(where.rank, where.thread);
        char *a = otf2_check_print_listing(plain, location), *b = otf2_check_print_listing(shared, location);
        assert_true(strlen(a) > 0);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    /* One process: its references are the global ones, no mapping tables. */
    char local_defs[4096];
    snprintf(local_defs, sizeof local_defs, "%s/shared/0.def", dir);
    struct stat info;
    assert_int_equal(stat(local_defs, &info), 0);

    otf2_check_print_free(&print);
    free(plain);
    free(shared);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

static void test_invalid_collective_is_rejected(void **state)
{
    (void)state;
    otf2_check_job job;
    otf2_check_job_create(&job, RANDOM_STREAM_STENCIL, 5, 1, 100, BIG_BUDGET, OTFX_REDUCE_RING);
    char *dir = otf2_check_scratch_dir("shared-invalid");
    otfx_export_options options = otfx_export_options_default();
    serial_hooks hooks = {0};
    otfx_otf2_collective bad = {
        .size = 2, .rank = 2, .archive_opened = serial_opened, .allgather = serial_allgather, .user = &hooks};
    assert_int_equal(otfx_otf2_export_shared(dir, "x", job.defs, job.traces, 1, &options, &bad, NULL),
                     OTFX_ERR_INVALID);
    bad.rank = 0;
    bad.allgather = NULL;
    assert_int_equal(otfx_otf2_export_shared(dir, "x", job.defs, job.traces, 1, &options, &bad, NULL),
                     OTFX_ERR_INVALID);
    assert_int_equal(hooks.opened + hooks.exchanges, 0);
    otf2_check_remove_tree(dir);
    free(dir);
    otf2_check_job_destroy(&job);
}

/* ---- several processes: threads with OTF2 collectives over shared memory ---- */

typedef struct group {
    pthread_barrier_t barrier;
    const void *slots[GROUP];
    const uint32_t *counts[GROUP];
    size_t sizes[GROUP];
} group;

struct OTF2_CollectiveContext {
    group *group;
    uint32_t rank;
};

static size_t type_size(OTF2_Type type)
{
    switch (type) {
    case OTF2_TYPE_UINT8:
    case OTF2_TYPE_INT8:
        return 1;
    case OTF2_TYPE_UINT16:
    case OTF2_TYPE_INT16:
        return 2;
    case OTF2_TYPE_UINT32:
    case OTF2_TYPE_INT32:
    case OTF2_TYPE_FLOAT:
        return 4;
    default:
        return 8;
    }
}

static void wait_all(OTF2_CollectiveContext *context)
{
    pthread_barrier_wait(&context->group->barrier);
}

static OTF2_CallbackCode group_size(void *user, OTF2_CollectiveContext *context, uint32_t *size)
{
    (void)user;
    (void)context;
    *size = GROUP;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_rank(void *user, OTF2_CollectiveContext *context, uint32_t *rank)
{
    (void)user;
    *rank = context->rank;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_barrier(void *user, OTF2_CollectiveContext *context)
{
    (void)user;
    wait_all(context);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_bcast(void *user, OTF2_CollectiveContext *context, void *data, uint32_t count,
                                     OTF2_Type type, uint32_t root)
{
    (void)user;
    if (context->rank == root)
        context->group->slots[root] = data;
    wait_all(context);
    if (context->rank != root)
        memcpy(data, context->group->slots[root], count * type_size(type));
    wait_all(context);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_gather(void *user, OTF2_CollectiveContext *context, const void *in, void *out,
                                      uint32_t count, OTF2_Type type, uint32_t root)
{
    (void)user;
    context->group->slots[context->rank] = in;
    wait_all(context);
    if (context->rank == root)
        for (uint32_t p = 0; p < GROUP; p++)
            memcpy((char *)out + p * count * type_size(type), context->group->slots[p],
                   count * type_size(type));
    wait_all(context);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_gatherv(void *user, OTF2_CollectiveContext *context, const void *in,
                                       uint32_t in_count, void *out, const uint32_t *out_counts,
                                       OTF2_Type type, uint32_t root)
{
    (void)user;
    (void)in_count;
    context->group->slots[context->rank] = in;
    wait_all(context);
    if (context->rank == root) {
        size_t offset = 0;
        for (uint32_t p = 0; p < GROUP; p++) {
            memcpy((char *)out + offset, context->group->slots[p], out_counts[p] * type_size(type));
            offset += out_counts[p] * type_size(type);
        }
    }
    wait_all(context);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_scatter(void *user, OTF2_CollectiveContext *context, const void *in, void *out,
                                       uint32_t count, OTF2_Type type, uint32_t root)
{
    (void)user;
    if (context->rank == root)
        context->group->slots[root] = in;
    wait_all(context);
    memcpy(out, (const char *)context->group->slots[root] + context->rank * count * type_size(type),
           count * type_size(type));
    wait_all(context);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode group_scatterv(void *user, OTF2_CollectiveContext *context, const void *in,
                                        const uint32_t *in_counts, void *out, uint32_t out_count,
                                        OTF2_Type type, uint32_t root)
{
    (void)user;
    if (context->rank == root) {
        context->group->slots[root] = in;
        context->group->counts[root] = in_counts;
    }
    wait_all(context);
    size_t offset = 0;
    for (uint32_t p = 0; p < context->rank; p++)
        offset += context->group->counts[root][p] * type_size(type);
    memcpy(out, (const char *)context->group->slots[root] + offset, out_count * type_size(type));
    wait_all(context);
    return OTF2_CALLBACK_SUCCESS;
}

static const OTF2_CollectiveCallbacks group_callbacks = {
    .otf2_get_size = group_size,
    .otf2_get_rank = group_rank,
    .otf2_barrier = group_barrier,
    .otf2_bcast = group_bcast,
    .otf2_gather = group_gather,
    .otf2_gatherv = group_gatherv,
    .otf2_scatter = group_scatter,
    .otf2_scatterv = group_scatterv,
};

static int group_opened(void *archive, void *user)
{
    OTF2_CollectiveContext *context = user;
    return OTF2_Archive_SetCollectiveCallbacks(archive, &group_callbacks, NULL, context, NULL) == OTF2_SUCCESS
               ? 0
               : -1;
}

static int group_allgather(const void *data, size_t size, void **all, size_t *sizes, void *user)
{
    OTF2_CollectiveContext *context = user;
    group *g = context->group;
    g->slots[context->rank] = data;
    g->sizes[context->rank] = size;
    wait_all(context);
    size_t total = 0;
    for (uint32_t p = 0; p < GROUP; p++)
        total += g->sizes[p];
    char *copy = malloc(total ? total : 1);
    size_t offset = 0;
    for (uint32_t p = 0; copy && p < GROUP; p++) {
        memcpy(copy + offset, g->slots[p], g->sizes[p]);
        sizes[p] = g->sizes[p];
        offset += g->sizes[p];
    }
    wait_all(context);
    *all = copy;
    return copy ? 0 : -1;
}

/* One "process": its own definitions (an order and a few regions of its own) and two traces of MIXED
 * streams; process 2's second trace is small and reduced. */
typedef struct process {
    OTF2_CollectiveContext context;
    otfx_defs *defs;
    otfx_trace *traces[TRACES_PER_PROCESS];
    size_t count;
    /* what the export is asked to do */
    const char *dir, *name;
    otfx_export_options options;
    otfx_status status;
    otfx_export_stats stats;
    char error[512];
} process;

static void build_process(process *p, uint32_t index)
{
    p->defs = otfx_defs_create();
    assert_non_null(p->defs);
    otfx_ref ref;
    char name[64];
    for (uint32_t r = 0; r <= index; r++) {
        snprintf(name, sizeof name, "only on process %u, #%u", index, r);
        assert_int_equal(otfx_defs_region(p->defs, name, OTFX_ROLE_USER_FUNCTION, &ref), OTFX_OK);
    }
    for (uint32_t t = 0; t < TRACES_PER_PROCESS; t++) {
        random_stream_config config = random_stream_config_default(RANDOM_STREAM_MIXED, 100 * index + t);
        config.rank = index * TRACES_PER_PROCESS + t;
        config.world_size = WORLD;
        config.user_regions = 10 + 15 * index;
        random_stream *stream = random_stream_create(p->defs, &config);
        assert_non_null(stream);
        bool reduced = index == 2 && t == 1;
        otfx_trace_config trace_config = otfx_trace_config_default(reduced ? SMALL_BUDGET : BIG_BUDGET);
        if (reduced)
            trace_config.chunk_bytes = 1024;
        assert_int_equal(
            otfx_trace_create(&trace_config, p->defs, random_stream_location(stream), &p->traces[p->count]),
            OTFX_OK);
        otfx_event batch[512];
        size_t appended;
        for (size_t done = 0; done < (reduced ? 8 * EVENTS : EVENTS); done += 512) {
            size_t n = random_stream_next(stream, batch, 512);
            assert_int_equal(otfx_trace_append(p->traces[p->count], batch, n, &appended), OTFX_OK);
        }
        size_t n;
        while ((n = random_stream_finish(stream, batch, 512)) > 0)
            assert_int_equal(otfx_trace_append(p->traces[p->count], batch, n, &appended), OTFX_OK);
        random_stream_destroy(stream);
        p->count++;
    }
}

static void destroy_process(process *p)
{
    for (size_t t = 0; t < p->count; t++)
        otfx_trace_destroy(p->traces[t]);
    otfx_defs_destroy(p->defs);
}

static void *run_export(void *user)
{
    process *p = user;
    otfx_otf2_collective collective = {.size = GROUP,
                                       .rank = p->context.rank,
                                       .archive_opened = group_opened,
                                       .allgather = group_allgather,
                                       .user = &p->context};
    p->status = otfx_otf2_export_shared(p->dir, p->name, p->defs, p->traces, p->count, &p->options,
                                        &collective, &p->stats);
    snprintf(p->error, sizeof p->error, "%s", otfx_last_error());
    return NULL;
}

static void export_together(process *processes, const char *dir, const char *name,
                            const otfx_export_options *options)
{
    pthread_t threads[GROUP];
    for (uint32_t p = 0; p < GROUP; p++) {
        processes[p].dir = dir;
        processes[p].name = name;
        processes[p].options = *options;
        assert_int_equal(pthread_create(&threads[p], NULL, run_export, &processes[p]), 0);
    }
    for (uint32_t p = 0; p < GROUP; p++)
        pthread_join(threads[p], NULL);
}

static group the_group;

static int setup_group(void **state)
{
    (void)state;
    return pthread_barrier_init(&the_group.barrier, NULL, GROUP);
}

static int teardown_group(void **state)
{
    (void)state;
    return pthread_barrier_destroy(&the_group.barrier);
}

static void build_group(process *processes)
{
    memset(processes, 0, GROUP * sizeof *processes);
    for (uint32_t p = 0; p < GROUP; p++) {
        processes[p].context = (OTF2_CollectiveContext){&the_group, p};
        build_process(&processes[p], p);
    }
}

static void test_processes_write_one_archive_with_unified_definitions(void **state)
{
    (void)state;
    process processes[GROUP];
    build_group(processes);
    char *dir = otf2_check_scratch_dir("shared-group");
    otfx_export_options options = otfx_export_options_default();
    export_together(processes, dir, "together", &options);
    for (uint32_t p = 0; p < GROUP; p++) {
        if (processes[p].status != OTFX_OK)
            fail_msg("process %u: %s", p, processes[p].error);
        assert_int_equal(processes[p].stats.locations, TRACES_PER_PROCESS);
    }
    char *anchor = anchor_path(dir, "together");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    assert_int_equal(print.count, WORLD);

    /* The importer reads every process's events back by the meaning of their references. */
    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    assert_int_equal(otfx_otf2_import(anchor, &config, &defs, &traces, &count), OTFX_OK);
    assert_int_equal(count, WORLD);
    for (uint32_t p = 0; p < GROUP; p++) {
        uint64_t written = 0;
        for (size_t t = 0; t < processes[p].count; t++) {
            otfx_trace *original = processes[p].traces[t];
            otfx_location_def where;
            assert_int_equal(otfx_defs_get_location(processes[p].defs, otfx_trace_location(original), &where),
                             OTFX_OK);
            const otf2_check_location *location =
                otf2_check_print_find(&print, otfx_otf2_location_id(where.rank, where.thread));
            assert_non_null(location);
            assert_true(location->well_nested);
            written += location->total;
            otfx_trace *back = traces[where.rank]; /* imported in rank order, one thread each */
            otf2_check_events a, b;
            otf2_check_collect(original, 0, OTFX_TIME_MAX, true, &a);
            otf2_check_expect_requests(&a); /* completions of requests started in reduced detail */
            otf2_check_collect(back, 0, OTFX_TIME_MAX, true, &b);
            size_t j = 0;
            for (size_t i = 0; i < a.count; i++) {
                if (a.events[i].type == OTFX_EV_REDUCTION)
                    continue;
                while (j < b.count && b.events[j].type == OTFX_EV_REDUCTION)
                    j++;
                assert_true(j < b.count);
                char why[256];
                if (!otf2_check_same_event(processes[p].defs, &a.events[i], defs, &b.events[j], why,
                                           sizeof why))
                    fail_msg("process %u rank %u event %zu: %s", p, where.rank, i, why);
                j++;
            }
            otf2_check_events_free(&a);
            otf2_check_events_free(&b);
        }
        assert_int_equal(processes[p].stats.events, written);
    }
    /* The union holds every process's own regions once. */
    for (uint32_t p = 0; p < GROUP; p++) {
        char name[64];
        snprintf(name, sizeof name, "only on process %u, #%u", p, p);
        int found = 0;
        for (uint32_t r = 0; r < otfx_defs_count_regions(defs); r++) {
            otfx_region_def def;
            assert_int_equal(otfx_defs_get_region(defs, r, &def), OTFX_OK);
            found += strcmp(def.name, name) == 0;
        }
        assert_int_equal(found, 1);
    }

    char why[256];
    if (otf2_check_python_available(why, sizeof why)) {
        otf2_check_print python;
        assert_int_equal(otf2_check_python_counts(anchor, &python), 0);
        for (size_t l = 0; l < print.count; l++) {
            const otf2_check_location *read = otf2_check_print_find(&python, print.locations[l].location);
            assert_non_null(read);
            assert_int_equal(read->total, print.locations[l].total);
        }
        otf2_check_print_free(&python);
    } else {
        print_message("python3-otf2 not checked: %s\n", why);
    }

    for (size_t t = 0; t < count; t++)
        otfx_trace_destroy(traces[t]);
    free(traces);
    otfx_defs_destroy(defs);
    otf2_check_print_free(&print);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    for (uint32_t p = 0; p < GROUP; p++)
        destroy_process(&processes[p]);
}

/* ---- messages whose other end is not held (otf2_pairing.h) ----
 * Six ranks, two per process, hand-made traces as reductions leave them. A message's size is 100 plus
 * its ordinal, so pairing the archive by order shows whether the right ends were kept.
 *   A: rank 0 → rank 2, MPI_Isend/MPI_Irecv, tag 5. Rank 0 holds sends 3..8 and the completions of
 *      1..8 (1 and 2 started in reduced detail); rank 2 holds receives 4..10, the request of 4 reduced.
 *      Written: sends 4..8 with their completions, receives 4..8 (4 as MpiRecv), requests of 5..8.
 *   B: rank 1 → rank 0 (both on process 0), blocking, tag 1: sends 1..6, receives 1 and 3..6 (2 thinned).
 *   C: rank 3 → rank 4 on communicator "pair" {3, 4}, which process 1 and 2 define in different orders
 *      (other references): ordinals 1..3 at both ends, all written.
 *   D: rank 5 → rank 1, tag 9: two sends no receive matches (written: none).
 *   E: rank 4 → rank 5, tag 2, without ordinals (0): written as they are. */
enum { PAIR_COMM_TAG_A = 5, PAIR_TAG_B = 1, PAIR_TAG_C = 3, PAIR_TAG_D = 9, PAIR_TAG_E = 2 };

/* A trace made by hand for the processes of a test: events 1 µs apart. */
typedef struct crafted_trace {
    otfx_event events[64];
    size_t count;
    otfx_time time;
} crafted_trace;

static otfx_event *crafted_event(crafted_trace *trace, otfx_event_type type)
{
    assert_true(trace->count < sizeof trace->events / sizeof *trace->events);
    otfx_event *event = &trace->events[trace->count++];
    *event = (otfx_event){.type = type, .time = trace->time += 1000};
    return event;
}

static void message(crafted_trace *trace, otfx_event_type type, otfx_ref comm, uint32_t peer, uint32_t tag,
                    uint64_t seq, uint64_t request)
{
    otfx_event *event = crafted_event(trace, type);
    event->u.msg.comm = comm;
    event->u.msg.peer = peer;
    event->u.msg.tag = tag;
    event->u.msg.bytes = 100 + seq;
    event->u.msg.seq = seq;
    event->u.msg.request = request;
}

static void request(crafted_trace *trace, otfx_event_type type, uint64_t id)
{
    crafted_event(trace, type)->u.request.request = id;
}

static void build_message_process(process *p, uint32_t index)
{
    p->defs = otfx_defs_create();
    assert_non_null(p->defs);
    const uint32_t world_members[WORLD] = {0, 1, 2, 3, 4, 5}, pair_members[2] = {3, 4};
    otfx_ref world, pair = OTFX_REF_NONE, other;
    if (index == 2) /* "pair" first: process 2's references differ from process 1's */
        assert_int_equal(otfx_defs_comm(p->defs, "pair", pair_members, 2, &pair), OTFX_OK);
    assert_int_equal(otfx_defs_comm(p->defs, "MPI_COMM_WORLD", world_members, WORLD, &world), OTFX_OK);
    assert_int_equal(otfx_defs_comm(p->defs, "unused", pair_members, 1, &other), OTFX_OK);
    if (index == 1)
        assert_int_equal(otfx_defs_comm(p->defs, "pair", pair_members, 2, &pair), OTFX_OK);
    crafted_trace traces[TRACES_PER_PROCESS];
    memset(traces, 0, sizeof traces);
    for (uint32_t t = 0; t < TRACES_PER_PROCESS; t++)
        traces[t].time = 1000000 * (t + 1);
    crafted_trace *first = &traces[0], *second = &traces[1];
    switch (index) {
    case 0: /* rank 0: A's sender, B's receiver; rank 1: B's sender */
        for (uint64_t n = 3; n <= 8; n++)
            message(first, OTFX_EV_ISEND, world, 2, PAIR_COMM_TAG_A, n, 100 + n);
        for (uint64_t n = 1; n <= 8; n++)
            request(first, OTFX_EV_ISEND_COMPLETE, 100 + n);
        for (uint64_t n = 1; n <= 6; n++)
            if (n != 2)
                message(first, OTFX_EV_RECV, world, 1, PAIR_TAG_B, n, 0);
        for (uint64_t n = 1; n <= 6; n++)
            message(second, OTFX_EV_SEND, world, 0, PAIR_TAG_B, n, 0);
        break;
    case 1: /* rank 2: A's receiver; rank 3: C's sender */
        for (uint64_t n = 5; n <= 10; n++)
            request(first, OTFX_EV_IRECV_REQUEST, 200 + n);
        for (uint64_t n = 4; n <= 10; n++)
            message(first, OTFX_EV_IRECV, world, 0, PAIR_COMM_TAG_A, n, 200 + n);
        for (uint64_t n = 1; n <= 3; n++)
            message(second, OTFX_EV_SEND, pair, 4, PAIR_TAG_C, n, 0);
        break;
    default: /* rank 4: C's receiver, E's sender; rank 5: D's sender, E's receiver */
        for (uint64_t n = 1; n <= 3; n++)
            message(first, OTFX_EV_RECV, pair, 3, PAIR_TAG_C, n, 0);
        for (int n = 0; n < 2; n++)
            message(first, OTFX_EV_SEND, world, 5, PAIR_TAG_E, 0, 0);
        for (uint64_t n = 1; n <= 2; n++)
            message(second, OTFX_EV_SEND, world, 1, PAIR_TAG_D, n, 0);
        for (int n = 0; n < 2; n++)
            message(second, OTFX_EV_RECV, world, 4, PAIR_TAG_E, 0, 0);
        break;
    }
    for (uint32_t t = 0; t < TRACES_PER_PROCESS; t++) {
        otfx_ref location;
        assert_int_equal(otfx_defs_location(p->defs, index * TRACES_PER_PROCESS + t, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
        assert_int_equal(otfx_trace_create(&config, p->defs, location, &p->traces[t]), OTFX_OK);
        size_t appended;
        assert_int_equal(otfx_trace_append(p->traces[t], traces[t].events, traces[t].count, &appended),
                         OTFX_OK);
        p->count++;
    }
}

/* The messages of one imported rank on a channel end, in archive order. */
static size_t channel_messages(otfx_trace *trace, const otfx_defs *defs, const char *comm_name, uint32_t peer,
                               uint32_t tag, bool sending, otfx_event *out, size_t capacity)
{
    otf2_check_events events;
    otf2_check_collect(trace, 0, OTFX_TIME_MAX, false, &events);
    size_t count = 0;
    for (size_t e = 0; e < events.count; e++) {
        const otfx_event *event = &events.events[e];
        const bool send = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND;
        if ((!send && event->type != OTFX_EV_RECV && event->type != OTFX_EV_IRECV) || send != sending ||
            event->u.msg.peer != peer || event->u.msg.tag != tag)
            continue;
        otfx_comm_def comm;
        assert_int_equal(otfx_defs_get_comm(defs, event->u.msg.comm, &comm), OTFX_OK);
        if (strcmp(comm.name, comm_name) != 0)
            continue;
        assert_true(count < capacity);
        out[count++] = *event;
    }
    otf2_check_events_free(&events);
    return count;
}

static size_t count_type(otfx_trace *trace, otfx_event_type type)
{
    otf2_check_events events;
    otf2_check_collect(trace, 0, OTFX_TIME_MAX, false, &events);
    size_t count = 0;
    for (size_t e = 0; e < events.count; e++)
        count += events.events[e].type == type;
    otf2_check_events_free(&events);
    return count;
}

/* Sends of `sender` and receives of `receiver` on a channel pair by order (sizes say which message each
 * is), `expected` of them, the ordinals the importer gives them agreeing. */
static void assert_channel_pairs(otfx_trace **traces, const otfx_defs *defs, const char *comm,
                                 uint32_t sender, uint32_t receiver, uint32_t tag, const uint64_t *sizes,
                                 size_t expected)
{
    otfx_event sends[16], receives[16];
    const size_t sent = channel_messages(traces[sender], defs, comm, receiver, tag, true, sends, 16);
    const size_t received = channel_messages(traces[receiver], defs, comm, sender, tag, false, receives, 16);
    if (sent != expected || received != expected)
        fail_msg("%s %u -> %u tag %u: %zu sends, %zu receives, expected %zu", comm, sender, receiver, tag,
                 sent, received, expected);
    for (size_t m = 0; m < expected; m++) {
        assert_int_equal(sends[m].u.msg.bytes, sizes[m]);
        assert_int_equal(receives[m].u.msg.bytes, sizes[m]);
        assert_int_equal(sends[m].u.msg.seq, m + 1);
        assert_int_equal(receives[m].u.msg.seq, m + 1);
    }
}

static void test_messages_without_their_other_end_are_left_out(void **state)
{
    (void)state;
    process processes[GROUP];
    memset(processes, 0, sizeof processes);
    for (uint32_t p = 0; p < GROUP; p++) {
        processes[p].context = (OTF2_CollectiveContext){&the_group, p};
        build_message_process(&processes[p], p);
    }
    char *dir = otf2_check_scratch_dir("shared-pairing");
    otfx_export_options options = otfx_export_options_default();
    export_together(processes, dir, "pairs", &options);
    const uint64_t left_out[GROUP] = {2, 2, 2}; /* A's send 3, B's send 2; A's receives 9, 10; D's sends */
    for (uint32_t p = 0; p < GROUP; p++) {
        if (processes[p].status != OTFX_OK)
            fail_msg("process %u: %s", p, processes[p].error);
        assert_int_equal(processes[p].stats.messages_unpaired, left_out[p]);
        assert_int_equal(processes[p].stats.messages_unpaired_everywhere, 6);
    }
    char *anchor = anchor_path(dir, "pairs");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    otf2_check_print_free(&print);
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    assert_non_null(reader);
    char *property = NULL;
    assert_int_equal(OTF2_Reader_GetProperty(reader, "OTFX::UNPAIRED_MESSAGES", &property), OTF2_SUCCESS);
    assert_string_equal(property, "6");
    free(property);
    OTF2_Reader_Close(reader);

    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    assert_int_equal(otfx_otf2_import(anchor, &config, &defs, &traces, &count), OTFX_OK);
    assert_int_equal(count, WORLD);
    const uint64_t a[] = {104, 105, 106, 107, 108}, b[] = {101, 103, 104, 105, 106}, c[] = {101, 102, 103};
    const uint64_t e[] = {100, 100};
    assert_channel_pairs(traces, defs, "MPI_COMM_WORLD", 0, 2, PAIR_COMM_TAG_A, a, 5);
    assert_channel_pairs(traces, defs, "MPI_COMM_WORLD", 1, 0, PAIR_TAG_B, b, 5);
    assert_channel_pairs(traces, defs, "pair", 3, 4, PAIR_TAG_C, c, 3);
    assert_channel_pairs(traces, defs, "MPI_COMM_WORLD", 5, 1, PAIR_TAG_D, NULL, 0);
    assert_channel_pairs(traces, defs, "MPI_COMM_WORLD", 4, 5, PAIR_TAG_E, e, 2);
    /* What belongs to a message left out went with it; every completion has its start. */
    assert_int_equal(count_type(traces[0], OTFX_EV_ISEND), 5);
    assert_int_equal(count_type(traces[0], OTFX_EV_ISEND_COMPLETE), 5);
    assert_int_equal(count_type(traces[2], OTFX_EV_IRECV_REQUEST), 4);
    assert_int_equal(count_type(traces[2], OTFX_EV_IRECV), 4);
    assert_int_equal(count_type(traces[2], OTFX_EV_RECV), 1); /* 4: its request was not held */
    for (size_t t = 0; t < count; t++)
        otfx_trace_destroy(traces[t]);
    free(traces);
    otfx_defs_destroy(defs);

    for (uint32_t p = 0; p < GROUP; p++)
        destroy_process(&processes[p]);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
}

/* ---- receives that end before their sends began (otf2_clock_condition.h) ----
 * Six ranks, two per process, clocks off against each other:
 *   rank 0 (process 0) sends to rank 2 (process 1) at 10000, which receives at 5000: rank 2 moves by 5000
 *   and sends to rank 4 (process 2) at 6000, written at 10990 (the shift decays by 1 ns per 100), which
 *   rank 4 receives at 8000: it moves too — a chain across three processes, more than one round;
 *   rank 1 sends to rank 0 (both on process 0, rank 0's trace read first) at 20000, received at 14000.
 * Expected times: what each location's events must be written at. */
enum { CLOCK_TAG = 7, CLOCK_TAG_LOCAL = 8 };

typedef struct timed_event {
    otfx_event_type type;
    otfx_time time, written;
    uint32_t peer, tag;
} timed_event;

static const timed_event clock_ranks[WORLD][6] = {
    {{OTFX_EV_ENTER, 1000, 1000, 0, 0},
     {OTFX_EV_SEND, 10000, 10000, 2, CLOCK_TAG},
     {OTFX_EV_RECV, 14000, 20000, 1, CLOCK_TAG_LOCAL},
     {OTFX_EV_LEAVE, 16000, 21980, 0, 0}},
    {{OTFX_EV_ENTER, 1000, 1000, 0, 0},
     {OTFX_EV_SEND, 20000, 20000, 0, CLOCK_TAG_LOCAL},
     {OTFX_EV_LEAVE, 21000, 21000, 0, 0}},
    {{OTFX_EV_ENTER, 4000, 4000, 0, 0},
     {OTFX_EV_RECV, 5000, 10000, 0, CLOCK_TAG},
     {OTFX_EV_SEND, 6000, 10990, 4, CLOCK_TAG},
     {OTFX_EV_LEAVE, 7000, 11980, 0, 0}},
    {{OTFX_EV_ENTER, 1000, 1000, 0, 0}, {OTFX_EV_LEAVE, 2000, 2000, 0, 0}},
    {{OTFX_EV_ENTER, 7000, 7000, 0, 0},
     {OTFX_EV_RECV, 8000, 10990, 2, CLOCK_TAG},
     {OTFX_EV_LEAVE, 9000, 11980, 0, 0},
     /* 391 µs later the shift of 2990 ns has decayed: the recorded times again */
     {OTFX_EV_ENTER, 400000, 400000, 0, 0},
     {OTFX_EV_LEAVE, 401000, 401000, 0, 0}},
    {{OTFX_EV_ENTER, 1000, 1000, 0, 0}, {OTFX_EV_LEAVE, 2000, 2000, 0, 0}},
};

static size_t clock_rank_events(uint32_t rank)
{
    size_t count = 0;
    while (count < 6 && clock_ranks[rank][count].time)
        count++;
    return count;
}

static void build_clock_process(process *p, uint32_t index)
{
    p->defs = otfx_defs_create();
    assert_non_null(p->defs);
    const uint32_t world_members[WORLD] = {0, 1, 2, 3, 4, 5};
    otfx_ref world, region;
    assert_int_equal(otfx_defs_comm(p->defs, "MPI_COMM_WORLD", world_members, WORLD, &world), OTFX_OK);
    assert_int_equal(otfx_defs_region(p->defs, "work", OTFX_ROLE_USER_FUNCTION, &region), OTFX_OK);
    for (uint32_t t = 0; t < TRACES_PER_PROCESS; t++) {
        const uint32_t rank = index * TRACES_PER_PROCESS + t;
        otfx_event events[6];
        const size_t count = clock_rank_events(rank);
        for (size_t e = 0; e < count; e++) {
            const timed_event *planned = &clock_ranks[rank][e];
            events[e] = (otfx_event){.type = planned->type, .time = planned->time};
            if (planned->type == OTFX_EV_ENTER || planned->type == OTFX_EV_LEAVE) {
                events[e].u.region.region = region;
            } else {
                events[e].u.msg.comm = world;
                events[e].u.msg.peer = planned->peer;
                events[e].u.msg.tag = planned->tag;
                events[e].u.msg.bytes = 8;
                events[e].u.msg.seq = 1;
            }
        }
        otfx_ref location;
        assert_int_equal(otfx_defs_location(p->defs, rank, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
        assert_int_equal(otfx_trace_create(&config, p->defs, location, &p->traces[t]), OTFX_OK);
        size_t appended;
        assert_int_equal(otfx_trace_append(p->traces[t], events, count, &appended), OTFX_OK);
        p->count++;
    }
}

static void assert_property(OTF2_Reader *reader, const char *name, const char *expected)
{
    char *property = NULL;
    assert_int_equal(OTF2_Reader_GetProperty(reader, name, &property), OTF2_SUCCESS);
    assert_string_equal(property, expected);
    free(property);
}

static void test_receives_never_end_before_their_sends(void **state)
{
    (void)state;
    process processes[GROUP];
    memset(processes, 0, sizeof processes);
    for (uint32_t p = 0; p < GROUP; p++) {
        processes[p].context = (OTF2_CollectiveContext){&the_group, p};
        build_clock_process(&processes[p], p);
    }
    char *dir = otf2_check_scratch_dir("shared-clocks");
    otfx_export_options options = otfx_export_options_default();
    export_together(processes, dir, "clocks", &options);
    for (uint32_t p = 0; p < GROUP; p++) {
        if (processes[p].status != OTFX_OK)
            fail_msg("process %u: %s", p, processes[p].error);
        /* every process's totals: rank 0 moves 2 events, rank 2 3, rank 4 2; the largest move 6000 ns */
        assert_int_equal(processes[p].stats.clock_corrected_events, 7);
        assert_int_equal(processes[p].stats.clock_max_correction_ns, 6000);
        assert_int_equal(processes[p].stats.clock_unresolved_messages, 0);
        assert_int_equal(processes[p].stats.messages_unpaired_everywhere, 0);
    }
    char *anchor = anchor_path(dir, "clocks");
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    assert_non_null(reader);
    assert_property(reader, "OTFX::CLOCK_CORRECTED_EVENTS", "7");
    assert_property(reader, "OTFX::CLOCK_MAX_CORRECTION_NS", "6000");
    assert_property(reader, "OTFX::CLOCK_UNRESOLVED_MESSAGES", "0");
    OTF2_Reader_Close(reader);

    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    assert_int_equal(otfx_otf2_import(anchor, &config, &defs, &traces, &count), OTFX_OK);
    assert_int_equal(count, WORLD);
    for (uint32_t rank = 0; rank < WORLD; rank++) {
        otf2_check_events events;
        otf2_check_collect(traces[rank], 0, OTFX_TIME_MAX, false, &events);
        const size_t expected = clock_rank_events(rank);
        if (events.count != expected)
            fail_msg("rank %u: %zu events, expected %zu", rank, events.count, expected);
        for (size_t e = 0; e < expected; e++) {
            if (events.events[e].type != clock_ranks[rank][e].type ||
                events.events[e].time != clock_ranks[rank][e].written)
                fail_msg("rank %u event %zu: type %d at %llu, expected type %d at %llu", rank, e,
                         (int)events.events[e].type, (unsigned long long)events.events[e].time,
                         (int)clock_ranks[rank][e].type, (unsigned long long)clock_ranks[rank][e].written);
        }
        otf2_check_events_free(&events);
        otfx_trace_destroy(traces[rank]);
    }
    free(traces);
    otfx_defs_destroy(defs);
    for (uint32_t p = 0; p < GROUP; p++)
        destroy_process(&processes[p]);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
}

/* ---- collectives some member does not hold (otf2_pairing.h, "Collectives") ----
 * Ranks 0..4 exported (two per process, process 2 only rank 4); rank 5 is a member of MPI_COMM_WORLD but
 * not exported, so it vetoes nothing.
 *   MPI_COMM_WORLD, MPI_Allreduce (Enter, begin, end, Leave) with ordinals 1..6: rank 1 lost 1 (ring),
 *   rank 2 the begin of 4 (thinned), rank 3 holds the begin of 6 only (the window's end). Written: 2, 3, 5
 *   on every rank; the others lose their begin and end but keep their Enter and Leave. Rank 0's begin of 5
 *   has no ordinal (the place wrote it before its record came): it is judged as its end. Rank 0 also has
 *   one collective without any ordinal (a drop cut it short): left out, since its other collectives have
 *   ordinals.
 *   "pair" {3, 4}, MPI_Ibarrier (request, completion) with ordinals 1..3: rank 4 lost the request of 1.
 *   Written: 2 and 3; rank 3's request and completion of 1 are left out.
 * Left out: world 1, 4, 6; pair 1: 4 instances, process 0 3, process 1 4, process 2 3. */
static void allreduce(crafted_trace *trace, otfx_ref region, otfx_ref comm, uint64_t seq, bool begin,
                      bool end, bool begin_numbered)
{
    crafted_event(trace, OTFX_EV_ENTER)->u.region.region = region;
    otfx_event *event;
    if (begin) {
        event = crafted_event(trace, OTFX_EV_COLL_BEGIN);
        event->u.coll.comm = begin_numbered ? comm : OTFX_REF_NONE;
        event->u.coll.seq = begin_numbered ? seq : 0;
    }
    if (end) {
        event = crafted_event(trace, OTFX_EV_COLL_END);
        event->u.coll.comm = comm;
        event->u.coll.op = OTF2_COLLECTIVE_OP_ALLREDUCE;
        event->u.coll.root = UINT32_MAX;
        event->u.coll.sent = event->u.coll.received = 8;
        event->u.coll.seq = seq;
    }
    crafted_event(trace, OTFX_EV_LEAVE);
}

static void ibarrier(crafted_trace *trace, otfx_ref comm, uint64_t seq, uint64_t request, bool started)
{
    if (started)
        crafted_event(trace, OTFX_EV_NBC_REQUEST)->u.request.request = request;
    otfx_event *done = crafted_event(trace, OTFX_EV_NBC_COMPLETE);
    done->u.coll.comm = comm;
    done->u.coll.op = OTF2_COLLECTIVE_OP_BARRIER;
    done->u.coll.root = UINT32_MAX;
    done->u.coll.request = request;
    done->u.coll.seq = seq;
}

static void build_collective_process(process *p, uint32_t index)
{
    p->defs = otfx_defs_create();
    assert_non_null(p->defs);
    const uint32_t world_members[WORLD] = {0, 1, 2, 3, 4, 5}, pair_members[2] = {3, 4};
    otfx_ref world, pair = OTFX_REF_NONE, region;
    if (index == 2) /* other references on process 2 */
        assert_int_equal(otfx_defs_comm(p->defs, "pair", pair_members, 2, &pair), OTFX_OK);
    assert_int_equal(otfx_defs_comm(p->defs, "MPI_COMM_WORLD", world_members, WORLD, &world), OTFX_OK);
    if (index == 1)
        assert_int_equal(otfx_defs_comm(p->defs, "pair", pair_members, 2, &pair), OTFX_OK);
    assert_int_equal(otfx_defs_region(p->defs, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE, &region), OTFX_OK);
    crafted_trace traces[TRACES_PER_PROCESS];
    memset(traces, 0, sizeof traces);
    const uint32_t exported = index == 2 ? 1 : TRACES_PER_PROCESS;
    for (uint32_t t = 0; t < exported; t++) {
        const uint32_t rank = index * TRACES_PER_PROCESS + t;
        crafted_trace *trace = &traces[t];
        trace->time = 1000000;
        for (uint64_t n = rank == 1 ? 2 : 1; n <= 6; n++)
            allreduce(trace, region, world, n, !(rank == 2 && n == 4), !(rank == 3 && n == 6),
                      !(rank == 0 && n == 5));
        if (rank == 0)
            allreduce(trace, region, world, 0, true, true, true);
        for (uint64_t n = 1; rank >= 3 && n <= 3; n++)
            ibarrier(trace, pair, n, 100 * rank + n, !(rank == 4 && n == 1));
        otfx_ref location;
        assert_int_equal(otfx_defs_location(p->defs, rank, 0, &location), OTFX_OK);
        otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
        assert_int_equal(otfx_trace_create(&config, p->defs, location, &p->traces[t]), OTFX_OK);
        size_t appended;
        assert_int_equal(otfx_trace_append(p->traces[t], trace->events, trace->count, &appended), OTFX_OK);
        p->count++;
    }
}

static void test_collectives_some_member_lacks_are_left_out(void **state)
{
    (void)state;
    process processes[GROUP];
    memset(processes, 0, sizeof processes);
    for (uint32_t p = 0; p < GROUP; p++) {
        processes[p].context = (OTF2_CollectiveContext){&the_group, p};
        build_collective_process(&processes[p], p);
    }
    char *dir = otf2_check_scratch_dir("shared-collectives");
    otfx_export_options options = otfx_export_options_default();
    export_together(processes, dir, "collectives", &options);
    const uint64_t left_out[GROUP] = {3, 4, 3};
    for (uint32_t p = 0; p < GROUP; p++) {
        if (processes[p].status != OTFX_OK)
            fail_msg("process %u: %s", p, processes[p].error);
        assert_int_equal(processes[p].stats.collectives_incomplete, left_out[p]);
        assert_int_equal(processes[p].stats.collectives_incomplete_everywhere, 4);
    }
    char *anchor = anchor_path(dir, "collectives");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    otf2_check_print_free(&print);
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    assert_non_null(reader);
    char *property = NULL;
    assert_int_equal(OTF2_Reader_GetProperty(reader, "OTFX::INCOMPLETE_COLLECTIVES", &property),
                     OTF2_SUCCESS);
    assert_string_equal(property, "4");
    free(property);
    OTF2_Reader_Close(reader);

    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    assert_int_equal(otfx_otf2_import(anchor, &config, &defs, &traces, &count), OTFX_OK);
    assert_int_equal(count, 5);
    for (uint32_t rank = 0; rank < 5; rank++) {
        const size_t extra = rank == 0; /* the call of the collective without an ordinal */
        assert_int_equal(count_type(traces[rank], OTFX_EV_COLL_BEGIN), 3);
        assert_int_equal(count_type(traces[rank], OTFX_EV_COLL_END), 3);
        /* The calls stay, with or without their collective. */
        assert_int_equal(count_type(traces[rank], OTFX_EV_ENTER), (rank == 1 ? 5 : 6) + extra);
        assert_int_equal(count_type(traces[rank], OTFX_EV_LEAVE), (rank == 1 ? 5 : 6) + extra);
        assert_int_equal(count_type(traces[rank], OTFX_EV_NBC_REQUEST), rank >= 3 ? 2 : 0);
        assert_int_equal(count_type(traces[rank], OTFX_EV_NBC_COMPLETE), rank >= 3 ? 2 : 0);
    }
    for (size_t t = 0; t < count; t++)
        otfx_trace_destroy(traces[t]);
    free(traces);
    otfx_defs_destroy(defs);

    for (uint32_t p = 0; p < GROUP; p++)
        destroy_process(&processes[p]);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
}

static void test_failures_and_refusals_are_agreed(void **state)
{
    (void)state;
    process processes[GROUP];
    build_group(processes);
    char *dir = otf2_check_scratch_dir("shared-agree");
    char *anchor = anchor_path(dir, "run");

    /* Process 2 alone gets an empty window: nobody writes, nothing is left. */
    otfx_export_options options = otfx_export_options_default();
    for (uint32_t p = 0; p < GROUP; p++) {
        processes[p].dir = dir;
        processes[p].name = "run";
        processes[p].options = options;
    }
    pthread_t threads[GROUP];
    processes[2].options.from = processes[2].options.to = 5;
    for (uint32_t p = 0; p < GROUP; p++)
        assert_int_equal(pthread_create(&threads[p], NULL, run_export, &processes[p]), 0);
    for (uint32_t p = 0; p < GROUP; p++)
        pthread_join(threads[p], NULL);
    for (uint32_t p = 0; p < GROUP; p++)
        assert_int_equal(processes[p].status, OTFX_ERR_INVALID);
    assert_non_null(strstr(processes[0].error, "process 2"));
    assert_non_null(strstr(processes[2].error, "empty window"));
    assert_false(exists(anchor));

    /* Written once; refused by everyone the second time; replaced with overwrite. */
    export_together(processes, dir, "run", &options);
    for (uint32_t p = 0; p < GROUP; p++)
        assert_int_equal(processes[p].status, OTFX_OK);
    export_together(processes, dir, "run", &options);
    for (uint32_t p = 0; p < GROUP; p++) {
        assert_int_equal(processes[p].status, OTFX_ERR_IO);
        assert_non_null(strstr(processes[p].error, "already exists"));
    }
    assert_true(exists(anchor));
    options.overwrite = true;
    export_together(processes, dir, "run", &options);
    for (uint32_t p = 0; p < GROUP; p++)
        assert_int_equal(processes[p].status, OTFX_OK);
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    assert_int_equal(print.count, WORLD);
    otf2_check_print_free(&print);

    /* Only ranks 1 and 5 (a window): the MPI group gets placeholders for the others. */
    otfx_trace *saved[GROUP][TRACES_PER_PROCESS];
    for (uint32_t p = 0; p < GROUP; p++) {
        memcpy(saved[p], processes[p].traces, sizeof saved[p]);
        processes[p].traces[0] = processes[p].traces[1];
        processes[p].count = p == 1 ? 0 : 1;
    }
    otfx_trace_status status;
    assert_int_equal(otfx_trace_status_get(processes[0].traces[0], &status), OTFX_OK);
    options.from = status.first_time + (status.last_time - status.first_time) / 4;
    options.to = status.first_time + (status.last_time - status.first_time) / 2;
    export_together(processes, dir, "window", &options);
    for (uint32_t p = 0; p < GROUP; p++)
        if (processes[p].status != OTFX_OK)
            fail_msg("process %u: %s", p, processes[p].error);
    char *window = anchor_path(dir, "window");
    otf2_check_print_run(window, &print);
    assert_int_equal(print.exit_code, 0);
    assert_int_equal(print.count, 2);
    for (size_t l = 0; l < print.count; l++) {
        assert_true(print.locations[l].well_nested);
        assert_true(print.locations[l].first_time >= options.from &&
                    print.locations[l].last_time <= options.to);
    }
    otf2_check_print_free(&print);
    otfx_trace_config config = otfx_trace_config_default(BIG_BUDGET);
    otfx_defs *defs;
    otfx_trace **traces;
    size_t count;
    otfx_import_stats stats;
    assert_int_equal(otfx_otf2_import_with_stats(window, &config, &defs, &traces, &count, &stats), OTFX_OK);
    assert_int_equal(count, 2);
    assert_int_equal(stats.placeholders_skipped, WORLD - 2);
    for (size_t t = 0; t < count; t++)
        otfx_trace_destroy(traces[t]);
    free(traces);
    otfx_defs_destroy(defs);
    for (uint32_t p = 0; p < GROUP; p++) {
        memcpy(processes[p].traces, saved[p], sizeof saved[p]);
        processes[p].count = TRACES_PER_PROCESS;
    }
    free(window);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    for (uint32_t p = 0; p < GROUP; p++)
        destroy_process(&processes[p]);
}

/* ---- a live trace: appends go on while it is exported ---- */

typedef struct appender {
    otfx_trace *trace;
    random_stream *stream;
    atomic_int stop;
    double max_ms;
    uint64_t calls;
} appender;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *append_loop(void *user)
{
    appender *a = user;
    otfx_event batch[1024];
    while (!atomic_load(&a->stop)) {
        size_t n = random_stream_next(a->stream, batch, 1024), appended;
        double start = now_ms();
        otfx_status status = otfx_trace_append(a->trace, batch, n, &appended);
        double took = now_ms() - start;
        if (status != OTFX_OK)
            break;
        if (took > a->max_ms)
            a->max_ms = took;
        a->calls++;
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    return NULL;
}

static void test_live_trace_keeps_taking_appends(void **state)
{
    (void)state;
    otfx_defs *defs = otfx_defs_create();
    random_stream_config config = random_stream_config_default(RANDOM_STREAM_STENCIL, 9);
    appender a = {0};
    a.stream = random_stream_create(defs, &config);
    otfx_trace_config trace_config = otfx_trace_config_default(2 << 20);
    assert_int_equal(otfx_trace_create(&trace_config, defs, random_stream_location(a.stream), &a.trace),
                     OTFX_OK);
    otfx_event batch[1024];
    size_t appended;
    otfx_trace_status status;
    do {
        for (int i = 0; i < 64; i++)
            assert_int_equal(
                otfx_trace_append(a.trace, batch, random_stream_next(a.stream, batch, 1024), &appended),
                OTFX_OK);
        assert_int_equal(otfx_trace_status_get(a.trace, &status), OTFX_OK);
    } while (status.reductions == 0);

    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, append_loop, &a), 0);
    char *dir = otf2_check_scratch_dir("shared-live");
    otfx_export_options options = otfx_export_options_default();
    double start = now_ms();
    assert_int_equal(otfx_otf2_export(dir, "live", defs, &a.trace, 1, &options), OTFX_OK);
    double took = now_ms() - start;
    atomic_store(&a.stop, 1);
    pthread_join(thread, NULL);
    print_message(
        "export of a live trace (%llu events held): %.0f ms; %llu appends meanwhile, the slowest %.1f ms\n",
        (unsigned long long)status.events_held, took, (unsigned long long)a.calls, a.max_ms);
    /* The export reads a copy: an append waits for the copy at most, never the whole export. */
    assert_true(a.calls > 0);
    assert_true(a.max_ms < took / 2 || took < 100);

    char *anchor = anchor_path(dir, "live");
    otf2_check_print print;
    otf2_check_print_run(anchor, &print);
    assert_int_equal(print.exit_code, 0);
    assert_int_equal(print.count, 1);
    assert_true(print.locations[0].well_nested);
    otf2_check_print_free(&print);
    free(anchor);
    otf2_check_remove_tree(dir);
    free(dir);
    random_stream_destroy(a.stream);
    otfx_trace_destroy(a.trace);
    otfx_defs_destroy(defs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_process_writes_what_the_serial_export_writes),
        cmocka_unit_test(test_invalid_collective_is_rejected),
        cmocka_unit_test(test_processes_write_one_archive_with_unified_definitions),
        cmocka_unit_test(test_failures_and_refusals_are_agreed),
        cmocka_unit_test(test_messages_without_their_other_end_are_left_out),
        cmocka_unit_test(test_collectives_some_member_lacks_are_left_out),
        cmocka_unit_test(test_receives_never_end_before_their_sends),
        cmocka_unit_test(test_live_trace_keeps_taking_appends),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}

/*
 * place_bench.c — place-bench (a benchmark, not a test): how fast an event place takes in batches.
 *
 * Synthetic batches of MPI_Send / MPI_Recv calls, encoded as a rank's recorder writes them (ENTER,
 * SEND or RECV, LEAVE: the public wire contract otfx/capture_wire.h), go through the place's batch
 * decoder (place_ingest_records, batch_decoder.c) into an otfx trace with the place's default budget
 * (64 MiB, ring reduction), one thread, no MPI message: what one place thread does per batch once it has
 * received it. Every repetition starts a fresh place and checks that its trace received every event.
 *
 *   place-bench [batches] [repetitions] [structure]   (default 200 batches of 100 KiB, 5 repetitions, on)
 *
 * structure "off": the trace does not build its task activity graph (otfx_trace_config.structure), to
 * measure what building it costs.
 *
 * Prints per repetition and the median (docs/benchmarks.md, "place-bench"):
 *   place_ingest_events_per_s       decoded events appended per second
 *   place_ingest_bytes_per_s        batch bytes (header and records, as sent) taken per second
 *   place_ingest_events_per_cpu_s   decoded events appended per second of the thread's CPU time (on a
 *                                   machine shared with other work, steadier than the wall clock)
 */
#include "event_place_internal.h"

#include <otfx/capture_wire.h>
#include <otfx/trace.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The place's function table for these batches (a rank's place gets capture's at start-up). */
enum bench_function { BENCH_MPI_SEND, BENCH_MPI_RECV, BENCH_MPI_INIT, BENCH_FUNCTION_COUNT };
static const char *const function_names[BENCH_FUNCTION_COUNT] = {"MPI_Send", "MPI_Recv", "MPI_Init"};
static const char *const function_classes[BENCH_FUNCTION_COUNT] = {"p2p-send", "p2p-recv", "other"};

static _Noreturn void fail(const char *message)
{
    fprintf(stderr, "place-bench: %s\n", message);
    exit(1);
}

static double now_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

static size_t add_record(unsigned char *records, size_t used, const void *record, size_t size)
{
    memcpy(records + used, record, size);
    return used + size;
}

/* One full batch (header and records) of MPI_Send and MPI_Recv calls to and from rank 1, times from
 * *time on, each message numbered on its channel (tag, 1-based). Returns the batch's bytes; *events gets the
 * events its records decode into. */
static size_t fill_batch(unsigned char *batch, uint64_t sequence, uint64_t *time, uint64_t *channel_sends,
                         uint64_t *channel_receives, uint64_t *events)
{
    enum { TAGS = 16 };
    const size_t call_bytes = 2 * sizeof(struct capture_record_header) + sizeof(struct capture_p2p_record);
    unsigned char *records = batch + sizeof(struct capture_batch_header);
    size_t used = 0;
    for (unsigned call = 0; used + call_bytes <= CAPTURE_BATCH_BYTES - sizeof(struct capture_batch_header);
         call++) {
        const bool send = call % 2 == 0;
        const uint16_t function = send ? BENCH_MPI_SEND : BENCH_MPI_RECV;
        const int32_t tag = (int32_t)(call / 2 % TAGS);
        struct capture_record_header enter = {.kind = CAPTURE_RECORD_ENTER,
                                              .function_id = function,
                                              .size = sizeof(enter),
                                              .timestamp = *time += 100};
        struct capture_p2p_record message = {
            .header = {.kind = send ? CAPTURE_RECORD_SEND : CAPTURE_RECORD_RECV,
                       .function_id = function,
                       .size = sizeof(message),
                       .timestamp = *time += 50},
            .comm_id = 0,
            .peer = 1,
            .tag = tag,
            .bytes = 8 * (uint64_t)(call % 64 + 1),
            .sequence = send ? ++channel_sends[tag] : ++channel_receives[tag]};
        struct capture_record_header leave = {.kind = CAPTURE_RECORD_LEAVE,
                                              .function_id = function,
                                              .size = sizeof(leave),
                                              .timestamp = *time += 50};
        used = add_record(records, used, &enter, sizeof(enter));
        used = add_record(records, used, &message, sizeof(message));
        used = add_record(records, used, &leave, sizeof(leave));
        *events += 3;
    }
    const struct capture_batch_header header = {.magic = CAPTURE_BATCH_MAGIC,
                                                .version = CAPTURE_BATCH_VERSION,
                                                .app_rank = 0,
                                                .thread = 0,
                                                .sequence = sequence,
                                                .record_bytes = used,
                                                .ns_per_tick = 1.0};
    memcpy(batch, &header, sizeof(header));
    return sizeof(header) + used;
}

/* A place serving rank 0 with one thread, set up as event_place.c does, without MPI. */
struct bench_place {
    struct event_place place;
    struct served_rank rank;
    struct place_stream stream;
    struct place_stream *stream_slot;
};

static void create_place(struct bench_place *bench, bool structure)
{
    memset(bench, 0, sizeof(*bench));
    struct event_place *place = &bench->place;
    place->setup.place_rank = 2;
    place->setup.first_served = 0;
    place->setup.served_count = 1;
    place->setup.functions = (otfx_place_functions){function_names, function_classes, BENCH_FUNCTION_COUNT};
    place->defs = otfx_defs_create();
    /* As event_place.c sizes the scratch: two events per smallest record of a full batch. */
    place->event_capacity = 2 * (CAPTURE_BATCH_BYTES / sizeof(struct capture_record_header)) + 2;
    place->events = malloc(place->event_capacity * sizeof(otfx_event));
    place->ranks = &bench->rank;
    place->trace_config = otfx_trace_config_default((size_t)64 << 20); /* OTFX_BUFFER's default */
    place->trace_config.structure = structure;
    otfx_ref location;
    if (!place->defs || !place->events || !place_describe_functions(place) ||
        otfx_defs_region(place->defs, "MPI_Pcontrol level", OTFX_ROLE_PHASE, &place->phase_region) !=
            OTFX_OK ||
        otfx_defs_location(place->defs, 0, 0, &location) != OTFX_OK ||
        otfx_trace_create(&place->trace_config, place->defs, location, &bench->stream.trace) != OTFX_OK)
        fail("cannot set up the place");
    bench->stream_slot = &bench->stream;
    bench->rank.streams = &bench->stream_slot;
    bench->rank.stream_capacity = 1;
    /* The world's announcement, as every rank's first batch carries it. */
    struct {
        struct capture_comm_record comm;
        int32_t members[2];
    } world = {.comm = {.header = {.kind = CAPTURE_RECORD_COMM_CREATED,
                                   .function_id = BENCH_MPI_INIT,
                                   .size = sizeof(world),
                                   .timestamp = 1},
                        .comm_id = 0,
                        .local_size = 2},
               .members = {0, 1}};
    uint64_t records = 0;
    if (!place_ingest_records(place, &bench->rank, &bench->stream, (const unsigned char *)&world,
                              sizeof(world), &records))
        fail("the place refused the world's announcement");
}

/* What event_place.c frees for a rank and its stream. */
static void destroy_place(struct bench_place *bench)
{
    otfx_trace_destroy(bench->stream.trace);
    for (uint32_t n = 0; n < bench->stream.name_capacity; n++)
        free(bench->stream.names[n]);
    free(bench->stream.names);
    free(bench->rank.comms);
    place_symbols_destroy(bench->rank.symbols);
    free(bench->rank.throttled);
    free(bench->rank.clock_segments);
    free(bench->place.functions);
    free(bench->place.events);
    free(bench->place.new_comm_ids);
    otfx_defs_destroy(bench->place.defs);
}

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const long batch_count = argc > 1 ? atol(argv[1]) : 200;
    const long repetitions = argc > 2 ? atol(argv[2]) : 5;
    const char *structure = argc > 3 ? argv[3] : "on";
    if (argc > 4 || batch_count < 1 || batch_count > 100000 || repetitions < 1 || repetitions > 1000 ||
        (strcmp(structure, "on") != 0 && strcmp(structure, "off") != 0)) {
        fprintf(stderr,
                "usage: place-bench [batches (1-100000, default 200)] [repetitions (1-1000, default 5)] "
                "[structure (on|off, default on)]\n");
        return 2;
    }
    unsigned char *batches = malloc((size_t)batch_count * CAPTURE_BATCH_BYTES);
    size_t *sizes = malloc((size_t)batch_count * sizeof(*sizes));
    double *events_per_s = malloc((size_t)repetitions * sizeof(double));
    double *bytes_per_s = malloc((size_t)repetitions * sizeof(double));
    double *events_per_cpu_s = malloc((size_t)repetitions * sizeof(double));
    if (!batches || !sizes || !events_per_s || !bytes_per_s || !events_per_cpu_s)
        fail("out of memory for the batches");
    uint64_t time = 1000, events = 0, sends[16] = {0}, receives[16] = {0}, bytes = 0;
    for (long b = 0; b < batch_count; b++) {
        sizes[b] = fill_batch(batches + (size_t)b * CAPTURE_BATCH_BYTES, (uint64_t)b + 1, &time, sends,
                              receives, &events);
        bytes += sizes[b];
    }
    printf("place_bench_batches=%ld\nplace_bench_events=%llu\nplace_bench_bytes=%llu\nplace_bench_structure=%"
           "s\n",
           batch_count, (unsigned long long)events, (unsigned long long)bytes, structure);
    for (long repetition = 0; repetition < repetitions; repetition++) {
        struct bench_place bench;
        create_place(&bench, strcmp(structure, "on") == 0);
        uint64_t records = 0;
        const double start = now_ns(CLOCK_MONOTONIC), cpu_start = now_ns(CLOCK_THREAD_CPUTIME_ID);
        for (long b = 0; b < batch_count; b++) {
            const unsigned char *batch = batches + (size_t)b * CAPTURE_BATCH_BYTES;
            if (!place_ingest_records(&bench.place, &bench.rank, &bench.stream,
                                      batch + sizeof(struct capture_batch_header),
                                      sizes[b] - sizeof(struct capture_batch_header), &records))
                fail("the place refused a batch");
        }
        const double elapsed_ns = now_ns(CLOCK_MONOTONIC) - start;
        const double cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
        otfx_trace_status status;
        if (otfx_trace_status_get(bench.stream.trace, &status) != OTFX_OK || status.events_received != events)
            fail("the trace did not receive every event");
        destroy_place(&bench);
        events_per_s[repetition] = (double)events / (elapsed_ns / 1e9);
        bytes_per_s[repetition] = (double)bytes / (elapsed_ns / 1e9);
        events_per_cpu_s[repetition] = (double)events / (cpu_ns / 1e9);
        printf("place_ingest_events_per_s=%.0f place_ingest_bytes_per_s=%.0f "
               "place_ingest_events_per_cpu_s=%.0f\n",
               events_per_s[repetition], bytes_per_s[repetition], events_per_cpu_s[repetition]);
    }
    qsort(events_per_s, (size_t)repetitions, sizeof(double), compare_doubles);
    qsort(bytes_per_s, (size_t)repetitions, sizeof(double), compare_doubles);
    qsort(events_per_cpu_s, (size_t)repetitions, sizeof(double), compare_doubles);
    printf("place_ingest_events_per_s_median=%.0f (min %.0f, max %.0f)\n", events_per_s[repetitions / 2],
           events_per_s[0], events_per_s[repetitions - 1]);
    printf("place_ingest_bytes_per_s_median=%.0f (min %.0f, max %.0f)\n", bytes_per_s[repetitions / 2],
           bytes_per_s[0], bytes_per_s[repetitions - 1]);
    printf("place_ingest_events_per_cpu_s_median=%.0f (min %.0f, max %.0f)\n",
           events_per_cpu_s[repetitions / 2], events_per_cpu_s[0], events_per_cpu_s[repetitions - 1]);
    free(batches);
    free(sizes);
    free(events_per_s);
    free(bytes_per_s);
    free(events_per_cpu_s);
    return 0;
}

/* replay-bench (not a test): how fast the replay (otfx/replay.h) and the analyses on it answer on one
 * place. Builds a 2-D halo exchange on side x side ranks (compute, four MPI_Irecv and MPI_Isend,
 * MPI_Waitall, an MPI_Allreduce every 10th iteration; consistent clocks), then times on the held traces:
 *   decode         otfx_analysis_query_events over every trace, counting events (what the store's decoding
 *                  alone costs: a bound for the replay);
 *   replay         a replay with a Lamport-clock pass;
 *   critical-path  the module's leaf, merge and finish, as one place answering the whole query;
 *   wait-states    the same.
 * Each prints events, seconds and events per second.
 * Run: build/dev/tbon/replay-bench [events (default 10000000)] [side (default 4)]
 *        about EVENTS events in all, each trace with a 1 GiB budget (nothing reduced);
 *      build/dev/tbon/replay-bench --full MIB [side (default 4)]
 *        the ranks' traces together fill MIB MiB: each has a budget of MIB/ranks MiB (a place's --buffer is
 *        per rank) and is appended to until one of them reduced (ring) for the first time; the times
 *        carry nanosecond noise, as measured ones do (the store holds about as many events per MiB as
 *        of a real run then, instead of several times more).
 *      either form, then --repeat N: the four timings N times over on the same traces (one build);
 *        --replies DIR: writes each module's reply to DIR/critical-path.txt and DIR/wait-states.txt (to
 *        compare the answers of two builds byte for byte). */
#define _POSIX_C_SOURCE 200809L

#include <otfx/analysis.h>
#include <otfx/replay.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EVENTS_PER_ITERATION = 36, MAX_BATCH = 64 };

typedef struct rank_builder {
    otfx_trace *trace;
    otfx_event batch[MAX_BATCH];
    size_t count;
    /* Adds 0..96 ns to every time (events are >= 100 ns apart, so the order stays): measured clocks are
     * that irregular, and the store compresses exact multiples of 100 ns several times better. */
    bool noisy;
    uint64_t noise;
} rank_builder;

static void flush(rank_builder *b)
{
    size_t appended;
    if (b->count && otfx_trace_append(b->trace, b->batch, b->count, &appended) != OTFX_OK) {
        fprintf(stderr, "replay-bench: append failed: %s\n", otfx_last_error());
        exit(1);
    }
    b->count = 0;
}

static otfx_event *emit(rank_builder *b, otfx_time time, otfx_event_type type)
{
    if (b->count == MAX_BATCH)
        flush(b);
    otfx_event *e = &b->batch[b->count++];
    memset(e, 0, sizeof *e);
    if (b->noisy) {
        b->noise = b->noise * 6364136223846793005ull + 1442695040888963407ull;
        time += (b->noise >> 33) % 97;
    }
    e->time = time;
    e->type = type;
    return e;
}

static uint32_t neighbour(uint32_t rank, uint32_t side, int direction)
{
    uint32_t x = rank % side, y = rank / side;
    if (direction == 0)
        x = (x + side - 1) % side;
    else if (direction == 1)
        x = (x + 1) % side;
    else if (direction == 2)
        y = (y + side - 1) % side;
    else
        y = (y + 1) % side;
    return y * side + x;
}

typedef struct clock_value {
    uint64_t clock;
} clock_value;

static void on_event(void *user, otfx_replay_stream *stream, const otfx_event *event)
{
    (void)user;
    (void)event;
    ++*(uint64_t *)stream->state;
}

static void on_send(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    (void)user;
    (void)event;
    ((clock_value *)value)->clock = *(uint64_t *)stream->state;
}

static void on_receive(void *user, otfx_replay_stream *stream, const otfx_event *event, const void *value,
                       otfx_replay_missing missing)
{
    (void)user;
    (void)event;
    (void)missing;
    uint64_t *clock = stream->state;
    if (value && ((const clock_value *)value)->clock + 1 > *clock)
        *clock = ((const clock_value *)value)->clock + 1;
}

static void on_complete(void *user, otfx_replay_stream *stream, const otfx_replay_collective *collective)
{
    (void)user;
    uint64_t *clock = stream->state;
    for (uint32_t i = 0; i < collective->size; i++)
        if (collective->value[i] && ((const clock_value *)collective->value[i])->clock + 1 > *clock)
            *clock = ((const clock_value *)collective->value[i])->clock + 1;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU time of this thread (on a shared machine the wall time also counts the other processes'), and
 * of the whole process (with the replay's thread that decodes ahead). */
static double cpu_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct stopwatch {
    double wall, cpu, process;
} stopwatch;

static stopwatch stopwatch_start(void)
{
    return (stopwatch){seconds(), cpu_seconds(CLOCK_THREAD_CPUTIME_ID),
                       cpu_seconds(CLOCK_PROCESS_CPUTIME_ID)};
}

typedef struct halo {
    uint32_t side, ranks;
    otfx_defs *defs;
    otfx_ref world, compute, irecv, isend, waitall, allreduce;
    uint32_t *members;
    otfx_trace **traces;
    rank_builder *builders;
    uint64_t built;
} halo;

/* Iteration k of rank r. */
static void emit_iteration(halo *h, uint32_t r, uint64_t k, uint64_t *jitter)
{
    rank_builder *b = &h->builders[r];
    uint32_t side = h->side;
    otfx_time t = k * 100000u;
    *jitter = *jitter * 6364136223846793005ull + 1442695040888963407ull;
    emit(b, t, OTFX_EV_ENTER)->u.region.region = h->compute;
    emit(b, t + 50000 + (*jitter >> 52), OTFX_EV_LEAVE);
    for (int d = 0; d < 4; d++) {
        otfx_time at = t + 60000 + (otfx_time)d * 300;
        emit(b, at, OTFX_EV_ENTER)->u.region.region = h->irecv;
        emit(b, at + 100, OTFX_EV_IRECV_REQUEST)->u.request.request = 8 * k + (uint64_t)d;
        emit(b, at + 200, OTFX_EV_LEAVE);
    }
    for (int d = 0; d < 4; d++) {
        otfx_time at = t + 70000 + (otfx_time)d * 300;
        emit(b, at, OTFX_EV_ENTER)->u.region.region = h->isend;
        otfx_event *send = emit(b, at + 100, OTFX_EV_ISEND);
        send->u.msg.comm = h->world;
        send->u.msg.peer = neighbour(r, side, d);
        send->u.msg.tag = (uint32_t)d;
        send->u.msg.bytes = 8192;
        send->u.msg.request = 8 * k + 4 + (uint64_t)d;
        send->u.msg.seq = k + 1;
        emit(b, at + 200, OTFX_EV_LEAVE);
    }
    emit(b, t + 75000, OTFX_EV_ENTER)->u.region.region = h->waitall;
    for (int d = 0; d < 4; d++) {
        otfx_event *receive = emit(b, t + 80000 + (otfx_time)d * 100, OTFX_EV_IRECV);
        receive->u.msg.comm = h->world;
        receive->u.msg.peer = neighbour(r, side, d ^ 1);
        receive->u.msg.tag = (uint32_t)d;
        receive->u.msg.bytes = 8192;
        receive->u.msg.request = 8 * k + (uint64_t)d;
        receive->u.msg.seq = k + 1;
    }
    for (int d = 0; d < 4; d++)
        emit(b, t + 81000 + (otfx_time)d * 100, OTFX_EV_ISEND_COMPLETE)->u.request.request =
            8 * k + 4 + (uint64_t)d;
    emit(b, t + 85000, OTFX_EV_LEAVE);
    h->built += EVENTS_PER_ITERATION;
    if (k % 10 == 9) {
        emit(b, t + 90000, OTFX_EV_ENTER)->u.region.region = h->allreduce;
        otfx_event *begin = emit(b, t + 90100, OTFX_EV_COLL_BEGIN);
        begin->u.coll.comm = h->world;
        begin->u.coll.root = UINT32_MAX;
        begin->u.coll.seq = k / 10 + 1;
        otfx_event *end = emit(b, t + 95000, OTFX_EV_COLL_END);
        end->u.coll.comm = h->world;
        end->u.coll.op = 11; /* OTF2_COLLECTIVE_OP_ALLREDUCE */
        end->u.coll.root = UINT32_MAX;
        end->u.coll.seq = k / 10 + 1;
        emit(b, t + 95100, OTFX_EV_LEAVE);
        h->built += 4;
    }
}

static bool any_reduced(const halo *h)
{
    for (uint32_t r = 0; r < h->ranks; r++) {
        otfx_trace_status status;
        if (otfx_trace_status_get(h->traces[r], &status) == OTFX_OK && status.reductions > 0)
            return true;
    }
    return false;
}

/* Builds the traces: `iterations` of them, or with full_bytes until one trace reduced. */
static void build_halo(halo *h, uint64_t iterations, size_t budget, bool until_full)
{
    otfx_defs *defs = h->defs = otfx_defs_create();
    h->members = malloc(sizeof(uint32_t) * h->ranks);
    for (uint32_t r = 0; r < h->ranks; r++)
        h->members[r] = r;
    otfx_defs_comm(defs, "MPI_COMM_WORLD", h->members, h->ranks, &h->world);
    otfx_defs_region(defs, "compute", OTFX_ROLE_USER_FUNCTION, &h->compute);
    otfx_defs_region(defs, "MPI_Irecv", OTFX_ROLE_MPI_P2P, &h->irecv);
    otfx_defs_region(defs, "MPI_Isend", OTFX_ROLE_MPI_P2P, &h->isend);
    otfx_defs_region(defs, "MPI_Waitall", OTFX_ROLE_MPI_P2P, &h->waitall);
    otfx_defs_region(defs, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE, &h->allreduce);
    h->traces = calloc(h->ranks, sizeof *h->traces);
    h->builders = calloc(h->ranks, sizeof *h->builders);
    uint64_t *jitter = malloc(sizeof(uint64_t) * h->ranks);
    for (uint32_t r = 0; r < h->ranks; r++) {
        otfx_ref location;
        otfx_defs_location(defs, r, 0, &location);
        otfx_trace_config config = otfx_trace_config_default(budget);
        if (otfx_trace_create(&config, defs, location, &h->traces[r]) != OTFX_OK) {
            fprintf(stderr, "replay-bench: %s\n", otfx_last_error());
            exit(1);
        }
        h->builders[r].trace = h->traces[r];
        h->builders[r].noisy = until_full;
        h->builders[r].noise = 777u * (r + 1);
        jitter[r] = 12345u * (r + 1);
    }
    /* The ranks in lockstep, so that a full buffer cuts every rank at about the same iteration. */
    for (uint64_t k = 0; until_full || k < iterations; k++) {
        for (uint32_t r = 0; r < h->ranks; r++)
            emit_iteration(h, r, k, &jitter[r]);
        if (until_full && k % 64 == 63) {
            for (uint32_t r = 0; r < h->ranks; r++)
                flush(&h->builders[r]);
            if (any_reduced(h))
                break;
        }
    }
    for (uint32_t r = 0; r < h->ranks; r++)
        flush(&h->builders[r]);
    free(jitter);
}

static void free_halo(halo *h)
{
    for (uint32_t r = 0; r < h->ranks; r++)
        otfx_trace_destroy(h->traces[r]);
    free(h->traces);
    free(h->builders);
    free(h->members);
    otfx_defs_destroy(h->defs);
}

static int count_event(const otfx_event *event, void *user)
{
    (void)event;
    ++*(uint64_t *)user;
    return 0;
}

static void report(const char *what, uint64_t events, stopwatch since)
{
    double wall = seconds() - since.wall, cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - since.cpu,
           process = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - since.process;
    printf("%-14s %llu events in %.3f s: %.2f M events/s (CPU %.3f s: %.2f M events/s; process CPU %.3f s)\n",
           what, (unsigned long long)events, wall, (double)events / wall / 1e6, cpu,
           (double)events / cpu / 1e6, process);
}

/* otfx_analysis_query_events over every trace, as the replay reads them (with the context). */
static uint64_t bench_decode(const halo *h)
{
    uint64_t events = 0;
    stopwatch start = stopwatch_start();
    for (uint32_t r = 0; r < h->ranks; r++)
        if (otfx_analysis_query_events(h->traces[r], 0, OTFX_TIME_MAX, true, count_event, &events) !=
            OTFX_OK) {
            fprintf(stderr, "replay-bench: query: %s\n", otfx_last_error());
            exit(1);
        }
    report("decode", events, start);
    return events;
}

static uint64_t bench_replay(const halo *h)
{
    otfx_replay_pass pass = {.name = "lamport",
                             .stream_state_size = sizeof(uint64_t),
                             .value_size = sizeof(clock_value),
                             .event = on_event,
                             .send = on_send,
                             .receive = on_receive,
                             .complete = on_complete};
    otfx_replay_config config = {.from = 0,
                                 .to = OTFX_TIME_MAX,
                                 .pass = &pass,
                                 .app_ranks = h->ranks,
                                 .decode_ahead = otfx_replay_cores_spare()};
    char error[256] = "";
    stopwatch start = stopwatch_start();
    otfx_replay *replay = otfx_replay_create(&config, h->defs, error, sizeof error);
    if (!replay) {
        fprintf(stderr, "replay-bench: %s\n", error);
        exit(1);
    }
    for (uint32_t r = 0; r < h->ranks; r++)
        otfx_replay_add_trace(replay, h->traces[r], r, 0);
    if (otfx_replay_run(replay, NULL, 0, error, sizeof error) != OTFX_OK) {
        fprintf(stderr, "replay-bench: %s\n", error);
        exit(1);
    }
    otfx_replay_stats stats;
    otfx_replay_get_stats(replay, &stats);
    otfx_replay_destroy(replay);
    report("replay", stats.events, start);
    uint64_t missing = 0;
    for (int i = 0; i < OTFX_REPLAY_MISSING_COUNT; i++)
        missing += stats.receives_missing[i];
    printf(
        "               (%llu receives matched, %llu missing, %llu collectives complete, %llu partial, %llu "
        "stall releases)\n",
        (unsigned long long)stats.receives_matched_local, (unsigned long long)missing,
        (unsigned long long)stats.collectives_complete, (unsigned long long)stats.collectives_partial,
        (unsigned long long)stats.stall_releases);
    return stats.events;
}

/* A module's answer as one place answering the whole query: leaf, merge into the empty result, finish. */
static void bench_module(const halo *h, otfx_command_kind kind, uint64_t events, const char *replies)
{
    const otfx_analysis_module *module = otfx_analysis_for_command(kind);
    if (!module) {
        fprintf(stderr, "replay-bench: no module for command %d\n", (int)kind);
        exit(1);
    }
    otfx_command query;
    memset(&query, 0, sizeof query);
    query.kind = kind;
    query.from = 0;
    query.to = OTFX_TIME_MAX;
    uint32_t *rank_of_trace = malloc(sizeof(uint32_t) * h->ranks);
    otfx_rank_info *infos = calloc(h->ranks, sizeof *infos);
    for (uint32_t r = 0; r < h->ranks; r++) {
        rank_of_trace[r] = r;
        infos[r].rank = r;
        infos[r].recording = true;
    }
    otfx_leaf_input input = {.defs = h->defs,
                             .traces = h->traces,
                             .rank_of_trace = rank_of_trace,
                             .trace_count = h->ranks,
                             .ranks = infos,
                             .rank_count = h->ranks,
                             .app_ranks = h->ranks,
                             .result_limit = (size_t)64 << 20};
    char error[512] = "";
    otfx_blob part = {.limit = input.result_limit}, merged = {.limit = input.result_limit};
    otfx_text reply = {0};
    stopwatch start = stopwatch_start();
    if (!module->leaf(&query, &input, &part, error, sizeof error)) {
        fprintf(stderr, "replay-bench: %s leaf: %s\n", module->name, error);
        exit(1);
    }
    double leaf_end = seconds();
    if (!module->merge(&query, &merged, part.data, part.length, error, sizeof error) ||
        !module->finish(&query, merged.data, merged.length, 1, 1, &reply, error, sizeof error)) {
        fprintf(stderr, "replay-bench: %s: %s\n", module->name, error);
        exit(1);
    }
    double end = seconds();
    report(module->name, events, start);
    printf("               (leaf %.3f s, merge and finish %.3f s, reply %zu bytes)\n", leaf_end - start.wall,
           end - leaf_end, reply.length);
    if (replies) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.txt", replies, module->name);
        FILE *file = fopen(path, "wb");
        if (!file || fwrite(reply.data, 1, reply.length, file) != reply.length || fclose(file) != 0) {
            fprintf(stderr, "replay-bench: cannot write %s\n", path);
            exit(1);
        }
    }
    otfx_text_free(&reply);
    otfx_blob_free(&part);
    otfx_blob_free(&merged);
    free(rank_of_trace);
    free(infos);
}

int main(int argc, char **argv)
{
    const char *replies = NULL;
    unsigned repeat = 1;
    /* The options after the positional arguments. */
    while (argc > 3 &&
           (strcmp(argv[argc - 2], "--replies") == 0 || strcmp(argv[argc - 2], "--repeat") == 0)) {
        if (strcmp(argv[argc - 2], "--replies") == 0)
            replies = argv[argc - 1];
        else
            repeat = (unsigned)strtoul(argv[argc - 1], NULL, 10);
        argc -= 2;
    }
    bool full = argc > 1 && strcmp(argv[1], "--full") == 0;
    uint64_t events = 10000000u, full_mib = 0;
    if (full) {
        full_mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
        argv++;
        argc--;
    } else if (argc > 1) {
        events = strtoull(argv[1], NULL, 10);
    }
    uint32_t side = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4;
    if (side < 2 || side > 64 || (!full && events < 1000) || (full && full_mib == 0) || repeat == 0) {
        fprintf(stderr, "usage: replay-bench [events >= 1000] [side 2..64] [--repeat N] [--replies DIR]\n"
                        "       replay-bench --full MIB [side 2..64] [--repeat N] [--replies DIR]\n");
        return 2;
    }
    halo h = {.side = side, .ranks = side * side};
    size_t budget = full ? (size_t)(full_mib << 20) / h.ranks : (size_t)1 << 30;
    double build_start = seconds();
    build_halo(&h, events / h.ranks / EVENTS_PER_ITERATION + 1, budget, full);
    double build_end = seconds();
    size_t held_bytes = 0;
    uint64_t held_events = 0;
    for (uint32_t r = 0; r < h.ranks; r++) {
        otfx_trace_status status;
        otfx_trace_status_get(h.traces[r], &status);
        held_bytes += status.bytes_used + status.bytes_open;
        held_events += status.events_held;
    }
    printf(
        "replay-bench: %u ranks, %llu events built in %.2f s (budget %.2f MiB per rank); held: %llu events "
        "in %.1f MiB\n",
        h.ranks, (unsigned long long)h.built, build_end - build_start, (double)budget / 1048576.0,
        (unsigned long long)held_events, (double)held_bytes / 1048576.0);
    uint64_t decoded = 0, replayed = 0;
    for (unsigned round = 0; round < repeat; round++) {
        decoded = bench_decode(&h);
        replayed = bench_replay(&h);
        bench_module(&h, OTFX_CMD_CRITICAL_PATH, replayed, replies);
        bench_module(&h, OTFX_CMD_WAIT_STATES, replayed, replies);
    }
    free_halo(&h);
    /* Without reductions the replay sees every event built, and the decoding the same events. */
    return full || (replayed == h.built && decoded == h.built) ? 0 : 1;
}

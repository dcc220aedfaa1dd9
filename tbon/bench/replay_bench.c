/* replay-bench (not a test): how fast the replay (otfx/replay.h) walks held traces on one place. Builds
 * a 2-D halo exchange on side x side ranks (compute, four MPI_Irecv and MPI_Isend, MPI_Waitall, an
 * MPI_Allreduce every 10th iteration; consistent clocks) of about EVENTS events in all, then replays it
 * with a Lamport-clock pass and prints the events replayed per second.
 * Run: build/dev/tbon/replay-bench [events (default 10000000)] [side (default 4)] */
#define _POSIX_C_SOURCE 200809L

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

int main(int argc, char **argv)
{
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000u;
    uint32_t side = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4;
    if (side < 2 || side > 64 || events < 1000) {
        fprintf(stderr, "usage: replay-bench [events >= 1000] [side 2..64]\n");
        return 2;
    }
    uint32_t ranks = side * side;
    uint64_t iterations = events / ranks / EVENTS_PER_ITERATION + 1;
    otfx_defs *defs = otfx_defs_create();
    otfx_ref world, compute, irecv, isend, waitall, allreduce;
    uint32_t *members = malloc(sizeof(uint32_t) * ranks);
    for (uint32_t r = 0; r < ranks; r++)
        members[r] = r;
    otfx_defs_comm(defs, "MPI_COMM_WORLD", members, ranks, &world);
    otfx_defs_region(defs, "compute", OTFX_ROLE_USER_FUNCTION, &compute);
    otfx_defs_region(defs, "MPI_Irecv", OTFX_ROLE_MPI_P2P, &irecv);
    otfx_defs_region(defs, "MPI_Isend", OTFX_ROLE_MPI_P2P, &isend);
    otfx_defs_region(defs, "MPI_Waitall", OTFX_ROLE_MPI_P2P, &waitall);
    otfx_defs_region(defs, "MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE, &allreduce);
    otfx_trace **traces = calloc(ranks, sizeof *traces);
    uint64_t built = 0;
    double build_start = seconds();
    for (uint32_t r = 0; r < ranks; r++) {
        otfx_ref location;
        otfx_defs_location(defs, r, 0, &location);
        otfx_trace_config config = otfx_trace_config_default((size_t)1 << 30);
        if (otfx_trace_create(&config, defs, location, &traces[r]) != OTFX_OK) {
            fprintf(stderr, "replay-bench: %s\n", otfx_last_error());
            return 1;
        }
        rank_builder b = {.trace = traces[r]};
        uint64_t jitter = 12345u * (r + 1);
        for (uint64_t k = 0; k < iterations; k++) {
            otfx_time t = k * 100000u;
            jitter = jitter * 6364136223846793005ull + 1442695040888963407ull;
            emit(&b, t, OTFX_EV_ENTER)->u.region.region = compute;
            emit(&b, t + 50000 + (jitter >> 52), OTFX_EV_LEAVE);
            for (int d = 0; d < 4; d++) {
                otfx_time at = t + 60000 + (otfx_time)d * 300;
                emit(&b, at, OTFX_EV_ENTER)->u.region.region = irecv;
                emit(&b, at + 100, OTFX_EV_IRECV_REQUEST)->u.request.request = 8 * k + (uint64_t)d;
                emit(&b, at + 200, OTFX_EV_LEAVE);
            }
            for (int d = 0; d < 4; d++) {
                otfx_time at = t + 70000 + (otfx_time)d * 300;
                emit(&b, at, OTFX_EV_ENTER)->u.region.region = isend;
                otfx_event *send = emit(&b, at + 100, OTFX_EV_ISEND);
                send->u.msg.comm = world;
                send->u.msg.peer = neighbour(r, side, d);
                send->u.msg.tag = (uint32_t)d;
                send->u.msg.bytes = 8192;
                send->u.msg.request = 8 * k + 4 + (uint64_t)d;
                send->u.msg.seq = k + 1;
                emit(&b, at + 200, OTFX_EV_LEAVE);
            }
            emit(&b, t + 75000, OTFX_EV_ENTER)->u.region.region = waitall;
            for (int d = 0; d < 4; d++) {
                otfx_event *receive = emit(&b, t + 80000 + (otfx_time)d * 100, OTFX_EV_IRECV);
                receive->u.msg.comm = world;
                receive->u.msg.peer = neighbour(r, side, d ^ 1);
                receive->u.msg.tag = (uint32_t)d;
                receive->u.msg.bytes = 8192;
                receive->u.msg.request = 8 * k + (uint64_t)d;
                receive->u.msg.seq = k + 1;
            }
            for (int d = 0; d < 4; d++)
                emit(&b, t + 81000 + (otfx_time)d * 100, OTFX_EV_ISEND_COMPLETE)->u.request.request =
                    8 * k + 4 + (uint64_t)d;
            emit(&b, t + 85000, OTFX_EV_LEAVE);
            built += EVENTS_PER_ITERATION;
            if (k % 10 == 9) {
                emit(&b, t + 90000, OTFX_EV_ENTER)->u.region.region = allreduce;
                otfx_event *begin = emit(&b, t + 90100, OTFX_EV_COLL_BEGIN);
                begin->u.coll.comm = world;
                begin->u.coll.root = UINT32_MAX;
                begin->u.coll.seq = k / 10 + 1;
                otfx_event *end = emit(&b, t + 95000, OTFX_EV_COLL_END);
                end->u.coll.comm = world;
                end->u.coll.op = 11; /* OTF2_COLLECTIVE_OP_ALLREDUCE */
                end->u.coll.root = UINT32_MAX;
                end->u.coll.seq = k / 10 + 1;
                emit(&b, t + 95100, OTFX_EV_LEAVE);
                built += 4;
            }
        }
        flush(&b);
    }
    double build_end = seconds();

    otfx_replay_pass pass = {.name = "lamport",
                             .stream_state_size = sizeof(uint64_t),
                             .value_size = sizeof(clock_value),
                             .event = on_event,
                             .send = on_send,
                             .receive = on_receive,
                             .complete = on_complete};
    otfx_replay_config config = {.from = 0, .to = OTFX_TIME_MAX, .pass = &pass, .app_ranks = ranks};
    char error[256] = "";
    double start = seconds();
    otfx_replay *replay = otfx_replay_create(&config, defs, error, sizeof error);
    if (!replay) {
        fprintf(stderr, "replay-bench: %s\n", error);
        return 1;
    }
    for (uint32_t r = 0; r < ranks; r++)
        otfx_replay_add_trace(replay, traces[r], r, 0);
    if (otfx_replay_run(replay, NULL, 0, error, sizeof error) != OTFX_OK) {
        fprintf(stderr, "replay-bench: %s\n", error);
        return 1;
    }
    double elapsed = seconds() - start;
    otfx_replay_stats stats;
    otfx_replay_get_stats(replay, &stats);
    printf("replay-bench: %u ranks, %llu events built in %.2f s\n", ranks, (unsigned long long)built,
           build_end - build_start);
    printf(
        "replayed %llu events (%llu receives matched, %llu missing, %llu collectives, %llu stall releases) "
        "in %.3f s: %.2f M events/s\n",
        (unsigned long long)stats.events, (unsigned long long)stats.receives_matched_local,
        (unsigned long long)(stats.receives - stats.receives_matched_local),
        (unsigned long long)stats.collectives_complete, (unsigned long long)stats.stall_releases, elapsed,
        (double)stats.events / elapsed / 1e6);
    otfx_replay_destroy(replay);
    for (uint32_t r = 0; r < ranks; r++)
        otfx_trace_destroy(traces[r]);
    free(traces);
    free(members);
    otfx_defs_destroy(defs);
    return stats.events == built ? 0 : 1;
}

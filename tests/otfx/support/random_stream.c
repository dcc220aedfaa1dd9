/* random_stream.c — reproducible, valid event streams (see random_stream.h). */
#include "random_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_CAPACITY     256 /* longest sequence one step produces, with room to spare */
#define MAX_OUTSTANDING    32
#define STENCIL_NEIGHBOURS 4
#define ALLREDUCE_EVERY    10

enum mpi_region {
    MPI_SEND_REGION,
    MPI_RECV_REGION,
    MPI_ISEND_REGION,
    MPI_IRECV_REGION,
    MPI_WAIT_REGION,
    MPI_WAITALL_REGION,
    MPI_CANCEL_REGION,
    MPI_ALLREDUCE_REGION,
    MPI_BCAST_REGION,
    MPI_BARRIER_REGION,
    MPI_COMM_RANK_REGION,
    MPI_IALLREDUCE_REGION,
    MPI_IBCAST_REGION,
    MPI_REGION_COUNT
};

static const struct {
    const char *name;
    otfx_region_role role;
} mpi_regions[MPI_REGION_COUNT] = {
    [MPI_SEND_REGION] = {"MPI_Send", OTFX_ROLE_MPI_P2P},
    [MPI_RECV_REGION] = {"MPI_Recv", OTFX_ROLE_MPI_P2P},
    [MPI_ISEND_REGION] = {"MPI_Isend", OTFX_ROLE_MPI_P2P},
    [MPI_IRECV_REGION] = {"MPI_Irecv", OTFX_ROLE_MPI_P2P},
    [MPI_WAIT_REGION] = {"MPI_Wait", OTFX_ROLE_MPI_P2P},
    [MPI_WAITALL_REGION] = {"MPI_Waitall", OTFX_ROLE_MPI_P2P},
    [MPI_CANCEL_REGION] = {"MPI_Cancel", OTFX_ROLE_MPI_P2P},
    [MPI_ALLREDUCE_REGION] = {"MPI_Allreduce", OTFX_ROLE_MPI_COLLECTIVE},
    [MPI_BCAST_REGION] = {"MPI_Bcast", OTFX_ROLE_MPI_COLLECTIVE},
    [MPI_BARRIER_REGION] = {"MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE},
    [MPI_COMM_RANK_REGION] = {"MPI_Comm_rank", OTFX_ROLE_MPI_OTHER},
    [MPI_IALLREDUCE_REGION] = {"MPI_Iallreduce", OTFX_ROLE_MPI_COLLECTIVE},
    [MPI_IBCAST_REGION] = {"MPI_Ibcast", OTFX_ROLE_MPI_COLLECTIVE},
};

/* OTF2_CollectiveOp values of the collectives generated. */
enum { COLLECTIVE_OP_BARRIER = 0, COLLECTIVE_OP_BCAST = 1, COLLECTIVE_OP_ALLREDUCE = 10 };

/* A nonblocking collective started and not yet completed: what its completion reports. */
typedef struct pending_collective {
    uint64_t request;
    otfx_ref comm;
    uint32_t op, root;
    uint64_t bytes;
} pending_collective;

struct random_stream {
    random_stream_config config;
    uint64_t random_state;
    otfx_ref location, main_region, compute_region, phase_region;
    otfx_ref mpi[MPI_REGION_COUNT];
    otfx_ref *user_regions;
    otfx_ref world, row_comm;
    uint32_t row_root; /* world rank of the row communicator's first member */
    otfx_ref metric_cycles, metric_temperature, metric_delta;
    otfx_time time;
    uint64_t produced;
    otfx_ref stack[OTFX_MAX_CALL_DEPTH];
    uint32_t depth;
    uint64_t next_request;
    uint64_t outstanding_sends[MAX_OUTSTANDING];
    uint32_t outstanding_send_count;
    uint64_t outstanding_receives[MAX_OUTSTANDING];
    uint32_t outstanding_receive_count;
    pending_collective outstanding_collectives[MAX_OUTSTANDING];
    uint32_t outstanding_collective_count;
    uint32_t neighbours[STENCIL_NEIGHBOURS];
    uint64_t iteration;
    otfx_event queue[QUEUE_CAPACITY];
    uint32_t queue_head, queue_count;
};

static uint64_t next_random(random_stream *stream)
{
    uint64_t z = (stream->random_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t random_below(random_stream *stream, uint64_t bound)
{
    return bound ? next_random(stream) % bound : 0;
}

static double random_unit(random_stream *stream)
{
    return (double)(next_random(stream) >> 11) / 9007199254740992.0;
}

/* Gap of about `mean` ns, uniform in [0, 2 mean], 5 % of them zero (events at equal times). */
static otfx_time random_gap(random_stream *stream, otfx_time mean)
{
    if (random_below(stream, 20) == 0)
        return 0;
    return random_below(stream, 2 * mean + 1);
}

/* `mean` with uniform jitter of +-fraction. */
static otfx_time jittered(random_stream *stream, otfx_time mean, double fraction)
{
    double factor = 1.0 + fraction * (2.0 * random_unit(stream) - 1.0);
    return (otfx_time)((double)mean * factor);
}

random_stream_config random_stream_config_default(random_stream_kind kind, uint64_t seed)
{
    random_stream_config config = {
        .kind = kind,
        .seed = seed,
        .rank = 0,
        .thread = 0,
        .world_size = 16,
        .user_regions = 40,
        .max_depth = 12,
        .start_time = 1000000000ull,
        .mean_gap = 400,
        .compute_time = 50000,
        .reduction_records = true,
    };
    return config;
}

static otfx_event *emit(random_stream *stream, otfx_event_type type)
{
    otfx_event *event = &stream->queue[(stream->queue_head + stream->queue_count) % QUEUE_CAPACITY];
    stream->queue_count++;
    memset(event, 0, sizeof *event);
    event->type = type;
    event->time = stream->time;
    return event;
}

static void enter(random_stream *stream, otfx_ref region)
{
    emit(stream, OTFX_EV_ENTER)->u.region.region = region;
    stream->stack[stream->depth++] = region;
}

static void leave(random_stream *stream)
{
    stream->depth--;
    emit(stream, OTFX_EV_LEAVE)->u.region.region = stream->stack[stream->depth];
}

static void advance(random_stream *stream, otfx_time gap)
{
    stream->time += gap;
}

static uint32_t random_peer(random_stream *stream)
{
    uint32_t peer = (uint32_t)random_below(stream, stream->config.world_size - 1);
    return peer >= stream->config.rank ? peer + 1 : peer;
}

static uint64_t random_message_bytes(random_stream *stream)
{
    static const uint64_t typical[] = {0, 8, 64, 1024, 4096, 65536};
    uint64_t pick = random_below(stream, 8);
    return pick < 6 ? typical[pick] : random_below(stream, 1u << 20);
}

static void fill_message(random_stream *stream, otfx_event *event, uint32_t peer, uint32_t tag,
                         uint64_t bytes)
{
    event->u.msg.comm = stream->world;
    event->u.msg.peer = peer;
    event->u.msg.tag = tag;
    event->u.msg.bytes = bytes;
}

/* One MPI call as enter, its events, leave. */
static void mpi_call(random_stream *stream, otfx_time mean)
{
    uint64_t pick = random_below(stream, 11);
    if (stream->outstanding_send_count == MAX_OUTSTANDING ||
        stream->outstanding_receive_count == MAX_OUTSTANDING)
        pick = 4;
    else if (stream->outstanding_collective_count == MAX_OUTSTANDING)
        pick = 10;
    otfx_event *event;
    switch (pick) {
    case 0:
        enter(stream, stream->mpi[MPI_SEND_REGION]);
        advance(stream, random_gap(stream, mean));
        fill_message(stream, emit(stream, OTFX_EV_SEND), random_peer(stream),
                     (uint32_t)random_below(stream, 4), random_message_bytes(stream));
        break;
    case 1:
        enter(stream, stream->mpi[MPI_RECV_REGION]);
        advance(stream, random_gap(stream, mean));
        fill_message(stream, emit(stream, OTFX_EV_RECV), random_peer(stream),
                     (uint32_t)random_below(stream, 4), random_message_bytes(stream));
        break;
    case 2:
        enter(stream, stream->mpi[MPI_ISEND_REGION]);
        advance(stream, random_gap(stream, mean));
        event = emit(stream, OTFX_EV_ISEND);
        fill_message(stream, event, random_peer(stream), (uint32_t)random_below(stream, 4),
                     random_message_bytes(stream));
        event->u.msg.request = stream->next_request;
        stream->outstanding_sends[stream->outstanding_send_count++] = stream->next_request++;
        break;
    case 3:
        enter(stream, stream->mpi[MPI_IRECV_REGION]);
        advance(stream, random_gap(stream, mean));
        emit(stream, OTFX_EV_IRECV_REQUEST)->u.request.request = stream->next_request;
        stream->outstanding_receives[stream->outstanding_receive_count++] = stream->next_request++;
        break;
    case 4:
        enter(stream, stream->mpi[MPI_WAIT_REGION]);
        advance(stream, random_gap(stream, mean));
        if (stream->outstanding_send_count &&
            (random_below(stream, 2) || !stream->outstanding_receive_count)) {
            uint32_t at = (uint32_t)random_below(stream, stream->outstanding_send_count);
            emit(stream, OTFX_EV_ISEND_COMPLETE)->u.request.request = stream->outstanding_sends[at];
            stream->outstanding_sends[at] = stream->outstanding_sends[--stream->outstanding_send_count];
        } else if (stream->outstanding_receive_count) {
            uint32_t at = (uint32_t)random_below(stream, stream->outstanding_receive_count);
            event = emit(stream, OTFX_EV_IRECV);
            fill_message(stream, event, random_peer(stream), (uint32_t)random_below(stream, 4),
                         random_message_bytes(stream));
            event->u.msg.request = stream->outstanding_receives[at];
            stream->outstanding_receives[at] =
                stream->outstanding_receives[--stream->outstanding_receive_count];
        }
        break;
    case 5:
        enter(stream, stream->mpi[MPI_CANCEL_REGION]);
        advance(stream, random_gap(stream, mean));
        if (stream->outstanding_receive_count) {
            emit(stream, OTFX_EV_REQUEST_CANCELLED)->u.request.request =
                stream->outstanding_receives[--stream->outstanding_receive_count];
        }
        break;
    case 6:
    case 7: {
        static const struct {
            int region;
            uint32_t op;
        } collectives[3] = {{MPI_ALLREDUCE_REGION, COLLECTIVE_OP_ALLREDUCE},
                            {MPI_BCAST_REGION, COLLECTIVE_OP_BCAST},
                            {MPI_BARRIER_REGION, COLLECTIVE_OP_BARRIER}};
        uint64_t which = random_below(stream, 3);
        enter(stream, stream->mpi[collectives[which].region]);
        advance(stream, random_gap(stream, mean));
        emit(stream, OTFX_EV_COLL_BEGIN);
        advance(stream, random_gap(stream, mean));
        event = emit(stream, OTFX_EV_COLL_END);
        event->u.coll.comm = random_below(stream, 2) ? stream->world : stream->row_comm;
        event->u.coll.op = collectives[which].op;
        /* The root must be a member of the communicator: rank 0 is not in the upper row. */
        uint32_t root = event->u.coll.comm == stream->world ? 0 : stream->row_root;
        event->u.coll.root = collectives[which].op == COLLECTIVE_OP_BCAST ? root : UINT32_MAX;
        event->u.coll.sent =
            collectives[which].op == COLLECTIVE_OP_BARRIER ? 0 : random_message_bytes(stream);
        event->u.coll.received = event->u.coll.sent;
        break;
    }
    case 9: {
        const bool bcast = random_below(stream, 2);
        enter(stream, stream->mpi[bcast ? MPI_IBCAST_REGION : MPI_IALLREDUCE_REGION]);
        advance(stream, random_gap(stream, mean));
        pending_collective *started =
            &stream->outstanding_collectives[stream->outstanding_collective_count++];
        started->request = stream->next_request++;
        started->comm = random_below(stream, 2) ? stream->world : stream->row_comm;
        started->op = bcast ? COLLECTIVE_OP_BCAST : COLLECTIVE_OP_ALLREDUCE;
        started->root = !bcast ? UINT32_MAX : started->comm == stream->world ? 0 : stream->row_root;
        started->bytes = random_message_bytes(stream);
        emit(stream, OTFX_EV_NBC_REQUEST)->u.request.request = started->request;
        break;
    }
    case 10:
        enter(stream, stream->mpi[MPI_WAIT_REGION]);
        advance(stream, random_gap(stream, mean));
        if (stream->outstanding_collective_count) {
            /* Nonblocking collectives may complete in any order (MPI_Waitany, MPI_Test). */
            uint32_t at = (uint32_t)random_below(stream, stream->outstanding_collective_count);
            const pending_collective *done = &stream->outstanding_collectives[at];
            event = emit(stream, OTFX_EV_NBC_COMPLETE);
            event->u.coll.comm = done->comm;
            event->u.coll.op = done->op;
            event->u.coll.root = done->root;
            event->u.coll.sent = done->bytes;
            event->u.coll.received = done->bytes;
            event->u.coll.request = done->request;
            stream->outstanding_collectives[at] =
                stream->outstanding_collectives[--stream->outstanding_collective_count];
        }
        break;
    default:
        enter(stream, stream->mpi[MPI_COMM_RANK_REGION]);
        break;
    }
    advance(stream, random_gap(stream, mean));
    leave(stream);
}

static void mixed_step(random_stream *stream)
{
    const random_stream_config *config = &stream->config;
    advance(stream, random_gap(stream, config->mean_gap));
    if (stream->depth == 0) {
        enter(stream, stream->main_region);
        return;
    }
    uint64_t pick = random_below(stream, 100);
    if (pick < 30 && stream->depth + 1 < config->max_depth) {
        /* Skewed towards low region numbers, as real call profiles are. */
        uint64_t a = random_below(stream, config->user_regions),
                 b = random_below(stream, config->user_regions);
        enter(stream, stream->user_regions[a < b ? a : b]);
    } else if (pick < 57 && stream->depth > 1) {
        leave(stream);
    } else if (pick < 90 && stream->depth + 1 < config->max_depth) {
        mpi_call(stream, config->mean_gap);
    } else if (pick < 94) {
        otfx_event *event = emit(stream, OTFX_EV_METRIC);
        uint64_t which = random_below(stream, 3);
        if (which == 0) {
            event->u.metric.metric = stream->metric_cycles;
            event->u.metric.value = stream->time * 3;
        } else if (which == 1) {
            double celsius = 40.0 + 30.0 * random_unit(stream);
            event->u.metric.metric = stream->metric_temperature;
            memcpy(&event->u.metric.value, &celsius, sizeof celsius);
        } else {
            event->u.metric.metric = stream->metric_delta;
            event->u.metric.value = (uint64_t)(int64_t)(random_below(stream, 2001) - 1000);
        }
    } else if (pick < 97) {
        otfx_event *event = emit(stream, OTFX_EV_PHASE);
        event->u.phase.region = stream->phase_region;
        event->u.phase.value = (int64_t)random_below(stream, 5) - 2;
    } else if (pick < 99 && stream->depth + 1 < config->max_depth) {
        enter(stream, stream->phase_region);
    } else if (config->reduction_records) {
        otfx_event *event = emit(stream, OTFX_EV_REDUCTION);
        event->u.reduction.strategy = OTFX_REDUCE_SOURCE_DROP;
        event->u.reduction.begin = stream->time - (stream->time - config->start_time) / 2;
        event->u.reduction.end = stream->time;
        event->u.reduction.events_removed = random_below(stream, 100) + 1;
    } else {
        mpi_call(stream, config->mean_gap);
    }
}

/* An 8-byte MPI_Allreduce on the world, as iterative codes do once per step. */
static void world_allreduce(random_stream *stream)
{
    enter(stream, stream->mpi[MPI_ALLREDUCE_REGION]);
    advance(stream, jittered(stream, 300, 0.3));
    emit(stream, OTFX_EV_COLL_BEGIN);
    advance(stream, jittered(stream, 5000, 0.5));
    otfx_event *event = emit(stream, OTFX_EV_COLL_END);
    event->u.coll.comm = stream->world;
    event->u.coll.op = COLLECTIVE_OP_ALLREDUCE;
    event->u.coll.root = UINT32_MAX;
    event->u.coll.sent = event->u.coll.received = 8;
    advance(stream, jittered(stream, 300, 0.3));
    leave(stream);
}

static void stencil_step(random_stream *stream)
{
    const random_stream_config *config = &stream->config;
    if (stream->depth == 0) {
        enter(stream, stream->main_region);
        advance(stream, jittered(stream, 2000, 0.05));
    }
    enter(stream, stream->compute_region);
    advance(stream, jittered(stream, config->compute_time, 0.05));
    leave(stream);
    uint64_t receives[STENCIL_NEIGHBOURS], sends[STENCIL_NEIGHBOURS];
    const uint64_t halo_bytes = 8 * 512;
    for (int n = 0; n < STENCIL_NEIGHBOURS; n++) {
        advance(stream, jittered(stream, 150, 0.3));
        enter(stream, stream->mpi[MPI_IRECV_REGION]);
        advance(stream, jittered(stream, 300, 0.3));
        receives[n] = stream->next_request++;
        emit(stream, OTFX_EV_IRECV_REQUEST)->u.request.request = receives[n];
        advance(stream, jittered(stream, 200, 0.3));
        leave(stream);
    }
    for (int n = 0; n < STENCIL_NEIGHBOURS; n++) {
        advance(stream, jittered(stream, 150, 0.3));
        enter(stream, stream->mpi[MPI_ISEND_REGION]);
        advance(stream, jittered(stream, 400, 0.3));
        otfx_event *event = emit(stream, OTFX_EV_ISEND);
        fill_message(stream, event, stream->neighbours[n], (uint32_t)n, halo_bytes);
        sends[n] = stream->next_request++;
        event->u.msg.request = sends[n];
        advance(stream, jittered(stream, 300, 0.3));
        leave(stream);
    }
    advance(stream, jittered(stream, 150, 0.3));
    enter(stream, stream->mpi[MPI_WAITALL_REGION]);
    for (int n = 0; n < STENCIL_NEIGHBOURS; n++) {
        advance(stream, jittered(stream, 2000, 0.5));
        otfx_event *event = emit(stream, OTFX_EV_IRECV);
        /* The message from the opposite neighbour carries the opposite direction's tag. */
        fill_message(stream, event, stream->neighbours[n ^ 1], (uint32_t)n, halo_bytes);
        event->u.msg.request = receives[n];
    }
    for (int n = 0; n < STENCIL_NEIGHBOURS; n++) {
        advance(stream, jittered(stream, 100, 0.5));
        emit(stream, OTFX_EV_ISEND_COMPLETE)->u.request.request = sends[n];
    }
    advance(stream, jittered(stream, 300, 0.3));
    leave(stream);
    if (++stream->iteration % ALLREDUCE_EVERY == 0) {
        advance(stream, jittered(stream, 200, 0.3));
        world_allreduce(stream);
    }
    advance(stream, jittered(stream, 200, 0.3));
}

/* Time code spends before its next event: fixed per (function, what comes next), as in real code,
 * with +-10 % jitter and rare outliers (interrupts, cache misses). Mean about `mean`. */
static otfx_time code_gap(random_stream *stream, otfx_ref top, unsigned action, otfx_time mean)
{
    uint64_t h =
        (uint64_t)top * 0x9e3779b97f4a7c15ull ^ (action + 1) * 0xc2b2ae3d27d4eb4full ^ stream->config.seed;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    otfx_time base = mean / 4 + h % (3 * mean / 2 + 1);
    otfx_time gap = jittered(stream, base, 0.1);
    if (random_below(stream, 30) == 0)
        gap *= 2 + random_below(stream, 4);
    return gap;
}

enum user_action { ACTION_CALL, ACTION_RETURN, ACTION_COLLECTIVE };

static void user_heavy_step(random_stream *stream)
{
    const random_stream_config *config = &stream->config;
    if (stream->depth == 0) {
        advance(stream, config->mean_gap);
        enter(stream, stream->main_region);
        return;
    }
    otfx_ref top = stream->stack[stream->depth - 1];
    /* Calls get less likely with depth, so trees are bushy near the root and end in leaves. */
    double call_probability = 0.75 - 0.6 * (double)stream->depth / (double)config->max_depth;
    if (stream->depth == 1 && random_below(stream, 200) == 0) {
        advance(stream, code_gap(stream, top, ACTION_COLLECTIVE, config->mean_gap));
        world_allreduce(stream);
    } else if (stream->depth + 1 < config->max_depth &&
               (stream->depth == 1 || random_unit(stream) < call_probability)) {
        /* Each depth calls its own few functions, like a real call tree. */
        uint32_t base = (stream->depth * 7) % config->user_regions;
        uint32_t choice = (uint32_t)random_below(stream, 3);
        otfx_ref callee = stream->user_regions[(base + choice) % config->user_regions];
        advance(stream, code_gap(stream, top, ACTION_CALL + 3 * choice, config->mean_gap));
        enter(stream, callee);
    } else if (stream->depth > 1) {
        advance(stream, code_gap(stream, top, ACTION_RETURN, config->mean_gap));
        leave(stream);
    }
}

size_t random_stream_next(random_stream *stream, otfx_event *events, size_t capacity)
{
    for (size_t produced = 0; produced < capacity; produced++) {
        while (stream->queue_count == 0) {
            switch (stream->config.kind) {
            case RANDOM_STREAM_MIXED:
                mixed_step(stream);
                break;
            case RANDOM_STREAM_STENCIL:
                stencil_step(stream);
                break;
            case RANDOM_STREAM_USER_HEAVY:
                user_heavy_step(stream);
                break;
            }
        }
        events[produced] = stream->queue[stream->queue_head];
        stream->queue_head = (stream->queue_head + 1) % QUEUE_CAPACITY;
        stream->queue_count--;
        stream->produced++;
    }
    return capacity;
}

size_t random_stream_finish(random_stream *stream, otfx_event *events, size_t capacity)
{
    /* Queued events come first: they may include enters the leaves below must match. */
    size_t written = 0;
    while (stream->queue_count && written < capacity) {
        events[written++] = stream->queue[stream->queue_head];
        stream->queue_head = (stream->queue_head + 1) % QUEUE_CAPACITY;
        stream->queue_count--;
        stream->produced++;
    }
    while (stream->depth > 0 && written < capacity) {
        advance(stream, stream->config.mean_gap);
        leave(stream);
        events[written++] = stream->queue[stream->queue_head];
        stream->queue_head = (stream->queue_head + 1) % QUEUE_CAPACITY;
        stream->queue_count--;
        stream->produced++;
    }
    return written;
}

otfx_ref random_stream_location(const random_stream *stream)
{
    return stream->location;
}

uint32_t random_stream_depth(const random_stream *stream)
{
    return stream->depth; /* regions whose LEAVE is still to come, queued ENTERs included */
}

otfx_time random_stream_time(const random_stream *stream)
{
    return stream->time;
}

uint64_t random_stream_count(const random_stream *stream)
{
    return stream->produced;
}

static bool define_all(random_stream *stream, otfx_defs *defs)
{
    const random_stream_config *config = &stream->config;
    bool ok =
        otfx_defs_location(defs, config->rank, config->thread, &stream->location) == OTFX_OK &&
        otfx_defs_region(defs, "main", OTFX_ROLE_USER_FUNCTION, &stream->main_region) == OTFX_OK &&
        otfx_defs_region(defs, "compute", OTFX_ROLE_USER_FUNCTION, &stream->compute_region) == OTFX_OK &&
        otfx_defs_region(defs, "iteration", OTFX_ROLE_PHASE, &stream->phase_region) == OTFX_OK;
    for (int i = 0; ok && i < MPI_REGION_COUNT; i++)
        ok = otfx_defs_region(defs, mpi_regions[i].name, mpi_regions[i].role, &stream->mpi[i]) == OTFX_OK;
    for (uint32_t i = 0; ok && i < config->user_regions; i++) {
        char name[32];
        snprintf(name, sizeof name, "user_function_%u", i);
        ok = otfx_defs_region(defs, name, OTFX_ROLE_USER_FUNCTION, &stream->user_regions[i]) == OTFX_OK;
    }
    uint32_t *members = ok ? malloc(sizeof *members * config->world_size) : NULL;
    if (!members)
        return false;
    for (uint32_t i = 0; i < config->world_size; i++)
        members[i] = i;
    /* The row communicator: the ranks of this rank's half of the world. */
    uint32_t half = config->world_size / 2, row_start = config->rank < half ? 0 : half;
    uint32_t row_size = config->rank < half ? half : config->world_size - half;
    stream->row_root = row_start;
    ok = otfx_defs_comm(defs, "MPI_COMM_WORLD", members, config->world_size, &stream->world) == OTFX_OK &&
         otfx_defs_comm(defs, row_start ? "row 1" : "row 0", members + row_start, row_size,
                        &stream->row_comm) == OTFX_OK &&
         otfx_defs_metric(defs, "PAPI_TOT_CYC", "cycles", OTFX_METRIC_UINT64, &stream->metric_cycles) ==
             OTFX_OK &&
         otfx_defs_metric(defs, "temperature", "degC", OTFX_METRIC_DOUBLE, &stream->metric_temperature) ==
             OTFX_OK &&
         otfx_defs_metric(defs, "imbalance", "1", OTFX_METRIC_INT64, &stream->metric_delta) == OTFX_OK;
    free(members);
    return ok;
}

random_stream *random_stream_create(otfx_defs *defs, const random_stream_config *config)
{
    if (!defs || !config || config->world_size < 2 || config->rank >= config->world_size ||
        config->user_regions == 0 || config->max_depth < 3 || config->max_depth > OTFX_MAX_CALL_DEPTH) {
        fprintf(stderr, "random_stream_create: invalid config\n");
        return NULL;
    }
    random_stream *stream = calloc(1, sizeof *stream);
    if (stream)
        stream->user_regions = malloc(sizeof *stream->user_regions * config->user_regions);
    if (!stream || !stream->user_regions) {
        fprintf(stderr, "random_stream_create: out of memory\n");
        random_stream_destroy(stream);
        return NULL;
    }
    stream->config = *config;
    stream->random_state = config->seed;
    stream->time = config->start_time;
    stream->next_request = 1000 + (uint64_t)config->rank * 1000000;
    if (!define_all(stream, defs)) {
        fprintf(stderr, "random_stream_create: defining failed: %s\n", otfx_last_error());
        random_stream_destroy(stream);
        return NULL;
    }
    /* Neighbours on a periodic 2-D grid of width floor(sqrt(world)): left, right, up, down. */
    uint32_t width = 1;
    while ((width + 1) * (width + 1) <= config->world_size)
        width++;
    uint32_t height = config->world_size / width, x = config->rank % width, y = config->rank / width;
    if (y >= height)
        y = height - 1;
    stream->neighbours[0] = y * width + (x + width - 1) % width;
    stream->neighbours[1] = y * width + (x + 1) % width;
    stream->neighbours[2] = ((y + height - 1) % height) * width + x;
    stream->neighbours[3] = ((y + 1) % height) * width + x;
    return stream;
}

void random_stream_destroy(random_stream *stream)
{
    if (!stream)
        return;
    free(stream->user_regions);
    free(stream);
}

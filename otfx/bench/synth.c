/* synth.c — synthetic event streams for otfx-bench (see synth.h). */
#include "synth.h"

#include <otf2/otf2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    USER_REGIONS = 256,
    CALL_LEVELS = 14, /* a function of level L calls functions of level L + 1: call trees this deep */
    MAX_CALL_SITES = 3,
    PENDING = 64, /* events of one step, at most */
};

/* The user-function shape runs a program: a fixed call graph made from the seed (as a real code's is
 * fixed), executed once per time step, with durations that vary a little from visit to visit. */
typedef struct user_function {
    uint32_t sites;                  /* call sites in its body */
    uint32_t callee[MAX_CALL_SITES]; /* function called at each site ... */
    uint32_t repeat[MAX_CALL_SITES]; /* ... this many times (a loop around the call) */
    otfx_time gap;                   /* exclusive time before each call and before returning */
} user_function;

typedef struct user_frame {
    uint32_t function, site, done; /* next call: site `site`, `done` of its repeats made */
} user_frame;

enum { NEIGHBOURS = 4, COLLECTIVE_KINDS = 6 };

struct synth {
    synth_shape shape;
    uint32_t rank, side, world_size;
    uint64_t random;
    otfx_time now;
    uint64_t steps, next_request;

    otfx_ref location, world, row, column, residual;
    otfx_ref main_region, compute, user[USER_REGIONS];
    otfx_ref irecv, isend, waitall;
    otfx_ref collective_regions[COLLECTIVE_KINDS];

    otfx_ref stack[SYNTH_MAX_DEPTH]; /* open regions */
    uint32_t depth;
    user_function program[USER_REGIONS];
    user_frame calls[SYNTH_MAX_DEPTH]; /* user-function shape: the program's frames, main excluded */
    uint32_t call_depth;

    otfx_event pending[PENDING];
    size_t pending_count, pending_next;
};

static const char *const shape_names[SYNTH_SHAPE_COUNT] = {"user-functions", "stencil", "collectives"};

const char *synth_shape_name(synth_shape shape)
{
    return (unsigned)shape < SYNTH_SHAPE_COUNT ? shape_names[shape] : "unknown";
}

bool synth_shape_parse(const char *name, synth_shape *shape)
{
    for (int s = 0; s < SYNTH_SHAPE_COUNT; s++) {
        if (strcmp(name, shape_names[s]) == 0) {
            *shape = (synth_shape)s;
            return true;
        }
    }
    return false;
}

static uint64_t next_random(synth *s)
{
    /* xorshift64*: fast and good enough for workload shapes */
    s->random ^= s->random >> 12;
    s->random ^= s->random << 25;
    s->random ^= s->random >> 27;
    return s->random * UINT64_C(2685821657736338717);
}

static uint64_t between(synth *s, uint64_t low, uint64_t high)
{
    return low + next_random(s) % (high - low + 1);
}

static otfx_event *emit(synth *s, otfx_event_type type)
{
    otfx_event *event = &s->pending[s->pending_count++];
    memset(event, 0, sizeof *event);
    event->time = s->now;
    event->type = type;
    return event;
}

static void enter(synth *s, otfx_ref region)
{
    emit(s, OTFX_EV_ENTER)->u.region.region = region;
    s->stack[s->depth++] = region;
}

static void leave(synth *s)
{
    emit(s, OTFX_EV_LEAVE)->u.region.region = s->stack[--s->depth];
}

static void collective(synth *s, int kind, otfx_ref comm, uint32_t op, uint32_t root, uint64_t sent,
                       uint64_t received, otfx_time duration)
{
    enter(s, s->collective_regions[kind]);
    s->now += between(s, 100, 300);
    emit(s, OTFX_EV_COLL_BEGIN);
    s->now += duration;
    otfx_event *end = emit(s, OTFX_EV_COLL_END);
    end->u.coll.comm = comm;
    end->u.coll.op = op;
    end->u.coll.root = root;
    end->u.coll.sent = sent;
    end->u.coll.received = received;
    s->now += between(s, 100, 300);
    leave(s);
}

/* Exclusive time of one stretch of a function: its usual length, within +-5 %, plus a few ns of noise. */
static otfx_time jittered(synth *s, otfx_time usual)
{
    return usual - usual / 20 + next_random(s) % (usual / 10 + 1) + next_random(s) % 64;
}

/* One call or return of the program; after each time step (function 0) an MPI_Allreduce. */
static void step_user_functions(synth *s)
{
    if (s->call_depth == 0) {
        s->now += jittered(s, 500);
        enter(s, s->user[0]);
        s->calls[s->call_depth++] = (user_frame){0, 0, 0};
        return;
    }
    user_frame *frame = &s->calls[s->call_depth - 1];
    const user_function *function = &s->program[frame->function];
    while (frame->site < function->sites && frame->done == function->repeat[frame->site]) {
        frame->site++;
        frame->done = 0;
    }
    s->now += jittered(s, function->gap);
    if (frame->site < function->sites) {
        uint32_t callee = function->callee[frame->site];
        frame->done++;
        enter(s, s->user[callee]);
        s->calls[s->call_depth++] = (user_frame){callee, 0, 0};
        return;
    }
    leave(s);
    if (--s->call_depth == 0)
        collective(s, 0, s->world, OTF2_COLLECTIVE_OP_ALLREDUCE, UINT32_MAX, 8, 8, between(s, 2000, 20000));
}

/* The call graph: function 0 is the time step; functions are spread over CALL_LEVELS levels and call
 * up to MAX_CALL_SITES functions of the next level, some in loops. Exclusive times per visit range
 * from 100 ns to ~20 us (log-uniform). */
static void make_program(synth *s)
{
    for (uint32_t f = 0; f < USER_REGIONS; f++) {
        user_function *function = &s->program[f];
        uint32_t level = f == 0 ? 0 : 1 + (f - 1) % (CALL_LEVELS - 1);
        function->gap = UINT64_C(100) << (next_random(s) % 8);
        function->gap += next_random(s) % function->gap;
        function->sites = level + 1 < CALL_LEVELS ? (uint32_t)(next_random(s) % (MAX_CALL_SITES + 1)) : 0;
        if (level == 0 && function->sites < 2)
            function->sites = 2;
        for (uint32_t c = 0; c < function->sites; c++) {
            /* functions of level L + 1 are 1 + L + k * (CALL_LEVELS - 1) */
            uint32_t choices = (USER_REGIONS - 1 - level) / (CALL_LEVELS - 1);
            function->callee[c] = 1 + level + (uint32_t)(next_random(s) % choices) * (CALL_LEVELS - 1);
            bool loop = level < 4 && next_random(s) % 3 == 0;
            function->repeat[c] = loop ? 2 + (uint32_t)(next_random(s) % 6) : 1;
        }
        /* deep levels call less, so a time step stays a few thousand events */
        if (level > 6 && function->sites > 1)
            function->sites = 1;
    }
}

static uint32_t neighbour(const synth *s, int direction)
{
    uint32_t x = s->rank % s->side, y = s->rank / s->side;
    switch (direction) {
    case 0:
        x = (x + s->side - 1) % s->side;
        break;
    case 1:
        x = (x + 1) % s->side;
        break;
    case 2:
        y = (y + s->side - 1) % s->side;
        break;
    default:
        y = (y + 1) % s->side;
        break;
    }
    return y * s->side + x;
}

/* One iteration of a 2-D halo exchange. */
static void step_stencil(synth *s)
{
    enter(s, s->compute);
    s->now += 50000 + between(s, 0, 5000) - 2500;
    leave(s);
    uint64_t receives[NEIGHBOURS], sends[NEIGHBOURS];
    const uint64_t halo_bytes = 8 * 1024;
    for (int d = 0; d < NEIGHBOURS; d++) {
        s->now += between(s, 100, 300);
        enter(s, s->irecv);
        s->now += between(s, 100, 200);
        receives[d] = s->next_request++;
        emit(s, OTFX_EV_IRECV_REQUEST)->u.request.request = receives[d];
        s->now += between(s, 100, 300);
        leave(s);
    }
    for (int d = 0; d < NEIGHBOURS; d++) {
        s->now += between(s, 100, 300);
        enter(s, s->isend);
        s->now += between(s, 200, 600);
        sends[d] = s->next_request++;
        otfx_event *send = emit(s, OTFX_EV_ISEND);
        send->u.msg.comm = s->world;
        send->u.msg.peer = neighbour(s, d);
        send->u.msg.tag = (uint32_t)d;
        send->u.msg.bytes = halo_bytes;
        send->u.msg.request = sends[d];
        send->u.msg.seq = s->steps + 1; /* one message per iteration on each channel */
        s->now += between(s, 100, 300);
        leave(s);
    }
    s->now += between(s, 100, 300);
    enter(s, s->waitall);
    s->now += between(s, 1000, 20000);
    for (int d = 0; d < NEIGHBOURS; d++) {
        s->now += between(s, 50, 150);
        otfx_event *receive = emit(s, OTFX_EV_IRECV);
        receive->u.msg.comm = s->world;
        receive->u.msg.peer = neighbour(s, d ^ 1); /* the neighbour sending in direction d */
        receive->u.msg.tag = (uint32_t)d;
        receive->u.msg.bytes = halo_bytes;
        receive->u.msg.request = receives[d];
        receive->u.msg.seq = s->steps + 1;
    }
    for (int d = 0; d < NEIGHBOURS; d++) {
        s->now += between(s, 50, 150);
        emit(s, OTFX_EV_ISEND_COMPLETE)->u.request.request = sends[d];
    }
    s->now += between(s, 100, 300);
    leave(s);
    if (s->steps % 10 == 9) {
        collective(s, 0, s->world, OTF2_COLLECTIVE_OP_ALLREDUCE, UINT32_MAX, 8, 8, between(s, 2000, 20000));
        double residual = 1.0 / (double)(s->steps + 1);
        otfx_event *metric = emit(s, OTFX_EV_METRIC);
        metric->u.metric.metric = s->residual;
        memcpy(&metric->u.metric.value, &residual, sizeof residual);
    }
    s->now += between(s, 100, 300);
}

/* A short compute phase and one collective. */
static void step_collectives(synth *s)
{
    enter(s, s->compute);
    s->now += between(s, 2000, 10000);
    leave(s);
    s->now += between(s, 100, 300);
    uint64_t bytes = UINT64_C(8) << (next_random(s) % 12);
    otfx_ref sub = next_random(s) % 2 ? s->row : s->column;
    otfx_time duration = between(s, 1000, 30000);
    int kind = (int)(next_random(s) % COLLECTIVE_KINDS);
    uint32_t root = (uint32_t)(next_random(s) % s->world_size);
    switch (kind) {
    case 0:
        collective(s, kind, next_random(s) % 2 ? s->world : sub, OTF2_COLLECTIVE_OP_ALLREDUCE, UINT32_MAX,
                   bytes, bytes, duration);
        break;
    case 1:
        collective(s, kind, s->world, OTF2_COLLECTIVE_OP_BCAST, root, root == s->rank ? bytes : 0,
                   root == s->rank ? 0 : bytes, duration);
        break;
    case 2:
        collective(s, kind, next_random(s) % 2 ? s->world : sub, OTF2_COLLECTIVE_OP_BARRIER, UINT32_MAX, 0, 0,
                   duration);
        break;
    case 3:
        collective(s, kind, sub, OTF2_COLLECTIVE_OP_ALLTOALL, UINT32_MAX, bytes * s->side, bytes * s->side,
                   duration);
        break;
    case 4:
        collective(s, kind, s->world, OTF2_COLLECTIVE_OP_REDUCE, 0, bytes,
                   s->rank == 0 ? bytes * s->world_size : 0, duration);
        break;
    default:
        collective(s, kind, sub, OTF2_COLLECTIVE_OP_ALLGATHER, UINT32_MAX, bytes, bytes * s->side, duration);
        break;
    }
}

static void step(synth *s)
{
    s->pending_count = s->pending_next = 0;
    if (s->depth == 0) {
        enter(s, s->main_region);
        s->now += 1000;
    }
    switch (s->shape) {
    case SYNTH_USER_FUNCTIONS:
        step_user_functions(s);
        break;
    case SYNTH_STENCIL:
        step_stencil(s);
        break;
    default:
        step_collectives(s);
        break;
    }
    s->steps++;
}

size_t synth_next(synth *s, otfx_event *events, size_t capacity)
{
    size_t filled = 0;
    while (filled < capacity) {
        if (s->pending_next == s->pending_count)
            step(s);
        size_t take = s->pending_count - s->pending_next;
        if (take > capacity - filled)
            take = capacity - filled;
        memcpy(events + filled, s->pending + s->pending_next, take * sizeof *events);
        s->pending_next += take;
        filled += take;
    }
    return filled;
}

size_t synth_finish(synth *s, otfx_event *events, size_t capacity)
{
    size_t filled = 0;
    while (s->pending_next < s->pending_count && filled < capacity)
        events[filled++] = s->pending[s->pending_next++];
    while (s->depth > 0 && filled < capacity) {
        s->now += 100;
        events[filled].time = s->now;
        events[filled].type = OTFX_EV_LEAVE;
        events[filled++].u.region.region = s->stack[--s->depth];
    }
    return filled;
}

otfx_ref synth_location(const synth *s)
{
    return s->location;
}

otfx_ref synth_world(const synth *s)
{
    return s->world;
}

static bool define_regions(synth *s, otfx_defs *defs)
{
    static const char *const collective_names[COLLECTIVE_KINDS] = {
        "MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Alltoall", "MPI_Reduce", "MPI_Allgather"};
    bool ok = otfx_defs_region(defs, "main", OTFX_ROLE_USER_FUNCTION, &s->main_region) == OTFX_OK &&
              otfx_defs_region(defs, "compute", OTFX_ROLE_USER_FUNCTION, &s->compute) == OTFX_OK &&
              otfx_defs_region(defs, "MPI_Irecv", OTFX_ROLE_MPI_P2P, &s->irecv) == OTFX_OK &&
              otfx_defs_region(defs, "MPI_Isend", OTFX_ROLE_MPI_P2P, &s->isend) == OTFX_OK &&
              otfx_defs_region(defs, "MPI_Waitall", OTFX_ROLE_MPI_P2P, &s->waitall) == OTFX_OK;
    for (int k = 0; ok && k < COLLECTIVE_KINDS; k++)
        ok = otfx_defs_region(defs, collective_names[k], OTFX_ROLE_MPI_COLLECTIVE,
                              &s->collective_regions[k]) == OTFX_OK;
    for (uint32_t f = 0; ok && f < USER_REGIONS; f++) {
        char name[64];
        snprintf(name, sizeof name, "solver::kernel_%03u", f);
        ok = otfx_defs_region(defs, name, OTFX_ROLE_USER_FUNCTION, &s->user[f]) == OTFX_OK;
    }
    return ok;
}

static bool define_comms(synth *s, otfx_defs *defs)
{
    uint32_t *members = malloc(s->world_size * sizeof *members);
    if (!members)
        return false;
    for (uint32_t r = 0; r < s->world_size; r++)
        members[r] = r;
    bool ok = otfx_defs_comm(defs, "MPI_COMM_WORLD", members, s->world_size, &s->world) == OTFX_OK;
    uint32_t x = s->rank % s->side, y = s->rank / s->side;
    char name[64];
    for (uint32_t i = 0; i < s->side; i++)
        members[i] = y * s->side + i;
    snprintf(name, sizeof name, "row %u", y);
    ok = ok && otfx_defs_comm(defs, name, members, s->side, &s->row) == OTFX_OK;
    for (uint32_t i = 0; i < s->side; i++)
        members[i] = i * s->side + x;
    snprintf(name, sizeof name, "column %u", x);
    ok = ok && otfx_defs_comm(defs, name, members, s->side, &s->column) == OTFX_OK;
    free(members);
    return ok;
}

synth *synth_create(otfx_defs *defs, synth_shape shape, uint32_t rank, uint32_t side, uint64_t seed)
{
    if ((unsigned)shape >= SYNTH_SHAPE_COUNT || side < 2 || rank >= side * side)
        return NULL;
    synth *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->shape = shape;
    s->rank = rank;
    s->side = side;
    s->world_size = side * side;
    s->random = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    s->now = UINT64_C(1000000000);
    make_program(s);
    if (otfx_defs_location(defs, rank, 0, &s->location) != OTFX_OK || !define_regions(s, defs) ||
        !define_comms(s, defs) ||
        otfx_defs_metric(defs, "residual", "", OTFX_METRIC_DOUBLE, &s->residual) != OTFX_OK) {
        free(s);
        return NULL;
    }
    return s;
}

void synth_destroy(synth *s)
{
    free(s);
}

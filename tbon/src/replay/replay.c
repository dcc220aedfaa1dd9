/* replay.c — a replay's streams and dependencies (otfx/replay.h): creation, the walk of each stream, the
 * message and collective tables, waits, watermarks, releases and statistics. The exchange with other
 * places and otfx_replay_run are in wire.c. */
#define _POSIX_C_SOURCE 200809L

#include "replay_internal.h"

#include "../error_text.h"

#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OTF2_CollectiveOp values (otfx_event.u.coll.op) whose dependencies are not every member on every
 * member. */
enum {
    COLL_OP_BCAST = 1,
    COLL_OP_GATHER = 2,
    COLL_OP_GATHERV = 3,
    COLL_OP_SCATTER = 4,
    COLL_OP_SCATTERV = 5,
    COLL_OP_REDUCE = 12,
    COLL_OP_SCAN = 14,
    COLL_OP_EXSCAN = 15,
};

/* Events a stream replays per advance call before giving the driver a turn (to exchange values). */
enum { ADVANCE_BUDGET = 65536 };

const char *otfx_replay_missing_name(otfx_replay_missing why)
{
    static const char *const names[OTFX_REPLAY_MISSING_COUNT] = {"seen", "not-held", "rank-not-served",
                                                                 "no-ordinal", "stalled"};
    return (unsigned)why < OTFX_REPLAY_MISSING_COUNT ? names[why] : "unknown";
}

void replay_fail(otfx_replay *replay, const char *format, ...)
{
    if (replay->failed)
        return;
    replay->failed = true;
    va_list args;
    va_start(args, format);
    vsnprintf(replay->error, sizeof replay->error, format, args);
    va_end(args);
}

static otfx_time add_tolerance(const otfx_replay *replay, otfx_time time)
{
    return time > OTFX_TIME_MAX - replay->tolerance ? OTFX_TIME_MAX : time + replay->tolerance;
}

/* ---- creation ------------------------------------------------------------------------------------ */

otfx_replay *otfx_replay_create(const otfx_replay_config *config, otfx_defs *defs, char *error,
                                size_t error_size)
{
    if (!config || !defs || !config->pass) {
        set_error(error, error_size, "replay: no config, definitions or pass");
        return NULL;
    }
    if (config->pass->value_size > OTFX_REPLAY_MAX_VALUE) {
        set_error(error, error_size, "replay: pass %s hands %zu-byte values, more than %u",
                  config->pass->name ? config->pass->name : "?", config->pass->value_size,
                  OTFX_REPLAY_MAX_VALUE);
        return NULL;
    }
    if (config->app_ranks == 0 || config->from >= config->to) {
        set_error(error, error_size, "replay: no ranks or an empty window");
        return NULL;
    }
    otfx_replay *replay = calloc(1, sizeof *replay);
    if (!replay) {
        set_error(error, error_size, "replay: out of memory");
        return NULL;
    }
    replay->config = *config;
    replay->pass = *config->pass;
    replay->defs = defs;
    replay->tolerance = config->tolerance ? config->tolerance : 100000;
    replay->value_size = config->pass->value_size;
    replay->ranks = calloc(config->app_ranks, sizeof *replay->ranks);
    if (!replay->ranks) {
        free(replay);
        set_error(error, error_size, "replay: out of memory for %u ranks", config->app_ranks);
        return NULL;
    }
    for (uint32_t r = 0; r < config->app_ranks; r++) {
        replay_rank *rank = &replay->ranks[r];
        rank->selected = !config->selects_rank || config->selects_rank(config->selects_user, r);
        rank->absent = rank->selected ? OTFX_REPLAY_SEEN : OTFX_REPLAY_RANK_NOT_SERVED;
    }
    replay_table_init(&replay->comm_by_id, 1, sizeof(otfx_ref));
    message_table_init(&replay->messages, replay->value_size);
    replay_table_init(&replay->instances, 2, sizeof(replay_instance *));
    return replay;
}

static void free_instance(void *user, const uint64_t *key, void *payload)
{
    (void)user;
    (void)key;
    replay_instance *instance;
    memcpy(&instance, payload, sizeof instance);
    free(instance);
}

void otfx_replay_destroy(otfx_replay *replay)
{
    if (!replay)
        return;
    replay_ahead_stop(replay);
    for (uint32_t i = 0; i < replay->stream_count; i++) {
        replay_stream *stream = replay->streams[i];
        replay_stream_close_reader(stream);
        free(stream->events);
        free(stream->ahead_events);
        free(stream->nbc);
        free(stream->state);
        free(stream);
    }
    free(replay->streams);
    for (uint32_t r = 0; r < replay->config.app_ranks; r++)
        free(replay->ranks[r].streams);
    free(replay->ranks);
    for (uint32_t c = 0; c < replay->comm_count; c++) {
        free(replay->comms[c].sorted);
        free(replay->comms[c].places);
    }
    free(replay->comms);
    replay_table_each(&replay->instances, free_instance, NULL);
    replay_table_free(&replay->instances);
    message_table_free(&replay->messages);
    replay_table_free(&replay->comm_by_id);
    free(replay->outgoing);
    for (uint32_t p = 0; p < replay->place_count; p++)
        free(replay->to_place[p].data);
    free(replay->to_place);
    free(replay->place_serves);
    free(replay->coll_values);
    free(replay->coll_missing);
    free(replay);
}

otfx_status otfx_replay_add_trace(otfx_replay *replay, otfx_trace *trace, uint32_t rank, uint32_t thread)
{
    if (!replay || !trace || rank >= replay->config.app_ranks)
        return OTFX_ERR_INVALID;
    replay_rank *owner = &replay->ranks[rank];
    if (!owner->selected)
        return OTFX_OK;
    if (!otfx_reserve_u32((void **)&replay->streams, &replay->stream_capacity,
                          (size_t)replay->stream_count + 1, sizeof *replay->streams, 16))
        return OTFX_ERR_NOMEM;
    uint32_t *indices = realloc(owner->streams, (owner->stream_count + 1) * sizeof *indices);
    if (!indices)
        return OTFX_ERR_NOMEM;
    owner->streams = indices;
    replay_stream *stream = calloc(1, sizeof *stream);
    if (!stream)
        return OTFX_ERR_NOMEM;
    if (replay->pass.stream_state_size > 0 && !(stream->state = calloc(1, replay->pass.stream_state_size))) {
        free(stream);
        return OTFX_ERR_NOMEM;
    }
    stream->trace = trace;
    stream->public = (otfx_replay_stream){
        .rank = rank, .thread = thread, .index = replay->stream_count, .state = stream->state};
    stream->begin_comm = OTFX_REF_NONE;
    stream->follow = replay->config.follow;
    owner->streams[owner->stream_count++] = replay->stream_count;
    replay->streams[replay->stream_count++] = stream;
    return OTFX_OK;
}

/* ---- communicators ------------------------------------------------------------------------------- */

static uint64_t fnv_bytes(uint64_t hash, const void *bytes, size_t length)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < length; i++) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

static int compare_pairs(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static bool resolve_comm(otfx_replay *replay, otfx_ref ref)
{
    replay_comm *comm = &replay->comms[ref];
    otfx_comm_def def;
    if (otfx_defs_get_comm(replay->defs, ref, &def) != OTFX_OK)
        return false;
    /* The places define their communicators apart; name and members identify one everywhere. */
    uint64_t id =
        fnv_bytes(0xcbf29ce484222325ull, def.name ? def.name : "", def.name ? strlen(def.name) + 1 : 1);
    for (uint32_t i = 0; i < def.size; i++) {
        uint32_t member = def.world_ranks[i];
        unsigned char le[4] = {(unsigned char)member, (unsigned char)(member >> 8),
                               (unsigned char)(member >> 16), (unsigned char)(member >> 24)};
        id = fnv_bytes(id, le, 4);
    }
    uint32_t *sorted = malloc(2 * sizeof(uint32_t) * (def.size ? def.size : 1));
    if (!sorted)
        return false;
    uint32_t local = 0;
    for (uint32_t i = 0; i < def.size; i++) {
        sorted[2 * i] = def.world_ranks[i];
        sorted[2 * i + 1] = i;
        uint32_t member = def.world_ranks[i];
        if (member < replay->config.app_ranks && replay->ranks[member].stream_count > 0)
            local++;
    }
    qsort(sorted, def.size, 2 * sizeof(uint32_t), compare_pairs);
    otfx_ref *slot = replay_table_insert(&replay->comm_by_id, &id, NULL);
    if (!slot) {
        free(sorted);
        return false;
    }
    *slot = ref;
    comm->id = id;
    comm->size = def.size;
    comm->members = def.world_ranks;
    comm->sorted = sorted;
    comm->local_members = local;
    comm->resolved = true;
    return true;
}

replay_comm *replay_comm_get(otfx_replay *replay, otfx_ref ref)
{
    if (ref == OTFX_REF_NONE)
        return NULL;
    if (ref >= replay->comm_count) {
        uint32_t count = otfx_defs_count_comms(replay->defs);
        if (ref >= count)
            return NULL;
        replay_comm *comms = realloc(replay->comms, count * sizeof *comms);
        if (!comms)
            return NULL;
        memset(comms + replay->comm_count, 0, (count - replay->comm_count) * sizeof *comms);
        replay->comms = comms;
        replay->comm_count = count;
    }
    if (!replay->comms[ref].resolved && !resolve_comm(replay, ref))
        return NULL;
    return &replay->comms[ref];
}

otfx_ref replay_comm_by_id(otfx_replay *replay, uint64_t id)
{
    otfx_ref *ref = replay_table_find(&replay->comm_by_id, &id);
    if (ref)
        return *ref;
    uint32_t count = otfx_defs_count_comms(replay->defs);
    for (otfx_ref c = 0; c < count; c++)
        if (c >= replay->comm_count || !replay->comms[c].resolved)
            (void)replay_comm_get(replay, c);
    ref = replay_table_find(&replay->comm_by_id, &id);
    return ref ? *ref : OTFX_REF_NONE;
}

static uint64_t comm_id_of(otfx_replay *replay, otfx_ref ref)
{
    /* once per message end: the resolved case without a call */
    if (ref < replay->comm_count && replay->comms[ref].resolved)
        return replay->comms[ref].id;
    replay_comm *comm = replay_comm_get(replay, ref);
    return comm ? comm->id : 0;
}

static uint32_t comm_rank_of(const replay_comm *comm, uint32_t world)
{
    size_t low = 0, high = comm->size;
    while (low < high) {
        size_t mid = (low + high) / 2;
        if (comm->sorted[2 * mid] < world)
            low = mid + 1;
        else
            high = mid;
    }
    return low < comm->size && comm->sorted[2 * low] == world ? comm->sorted[2 * low + 1] : UINT32_MAX;
}

/* ---- watermarks and dependencies ----------------------------------------------------------------- */

otfx_time replay_rank_watermark(const otfx_replay *replay, uint32_t rank)
{
    const replay_rank *owner = &replay->ranks[rank];
    if (owner->absent != OTFX_REPLAY_SEEN)
        return OTFX_TIME_MAX;
    if (owner->stream_count == 0)
        return owner->remote_watermark;
    otfx_time mark = OTFX_TIME_MAX;
    for (uint32_t i = 0; i < owner->stream_count; i++) {
        otfx_time stream_mark = replay_stream_watermark(replay->streams[owner->streams[i]]);
        if (stream_mark < mark)
            mark = stream_mark;
    }
    return mark;
}

/* Whether a value of rank `from` needed at `time` will never come (true, *why says why) or may still
 * come (false: wait). */
static bool never_comes(const otfx_replay *replay, const replay_stream *stream, uint32_t from, otfx_time time,
                        otfx_replay_missing *why)
{
    if (from >= replay->config.app_ranks) {
        *why = OTFX_REPLAY_RANK_NOT_SERVED;
        return true;
    }
    if (replay->ranks[from].absent != OTFX_REPLAY_SEEN) {
        *why = replay->ranks[from].absent;
        return true;
    }
    /* A released wait is a stall, whatever the sender did since: the same on every place. */
    if (stream->released) {
        *why = OTFX_REPLAY_STALLED;
        return true;
    }
    otfx_time mark = replay_rank_watermark(replay, from);
    if (mark == OTFX_TIME_MAX || mark > add_tolerance(replay, time)) {
        *why = OTFX_REPLAY_NOT_HELD;
        return true;
    }
    return false;
}

bool replay_store_arrival(otfx_replay *replay, uint64_t comm_id, uint64_t seq, uint32_t member, uint32_t size,
                          otfx_replay_missing missing, const void *value)
{
    uint64_t key[2] = {comm_id, seq};
    bool inserted;
    replay_instance **slot = replay_table_insert(&replay->instances, key, &inserted);
    if (!slot)
        return false;
    if (inserted) {
        size_t vs = replay->value_size;
        /* The values first, right after the header, so that they keep calloc's alignment. */
        size_t header =
            (sizeof(replay_instance) + REPLAY_VALUE_ALIGN - 1) / REPLAY_VALUE_ALIGN * REPLAY_VALUE_ALIGN;
        size_t stride = (vs + REPLAY_VALUE_ALIGN - 1) / REPLAY_VALUE_ALIGN * REPLAY_VALUE_ALIGN;
        replay_instance *instance = calloc(1, header + (size_t)size * (stride + 2));
        if (!instance) {
            replay_table_remove(&replay->instances, key);
            return false;
        }
        instance->size = size;
        instance->stride = stride;
        instance->values = (unsigned char *)instance + header;
        instance->state = instance->values + (size_t)size * stride;
        instance->why = instance->state + size;
        otfx_ref ref = replay_comm_by_id(replay, comm_id);
        replay_comm *comm = ref == OTFX_REF_NONE ? NULL : replay_comm_get(replay, ref);
        instance->local_left = comm ? comm->local_members : UINT32_MAX;
        *slot = instance;
    }
    replay_instance *instance = *slot;
    if (member >= instance->size)
        return true; /* a member the local definition does not have: nobody here depends on it */
    instance->state[member] = missing == OTFX_REPLAY_SEEN ? SLOT_VALUE : SLOT_MISSING;
    instance->why[member] = (unsigned char)missing;
    if (value)
        memcpy(instance->values + (size_t)member * instance->stride, value, replay->value_size);
    return true;
}

static void out_of_memory(otfx_replay *replay, const char *what)
{
    replay_fail(replay, "replay: out of memory for %s", what);
    replay->fail_status = OTFX_ERR_NOMEM;
}

/* A send's value goes to its receive: into the local table, or to the place serving the receiver. */
static void publish_message(otfx_replay *replay, const uint64_t *key, uint32_t receiver, const void *value)
{
    if (receiver >= replay->config.app_ranks ||
        replay->ranks[receiver].absent == OTFX_REPLAY_RANK_NOT_SERVED) {
        replay->sends_unserved++;
        return;
    }
    if (replay->ranks[receiver].stream_count > 0 || replay->ranks[receiver].absent != OTFX_REPLAY_SEEN) {
        if (!message_table_insert(&replay->messages, key, value, false))
            out_of_memory(replay, "a message");
        return;
    }
    outgoing_value out = {.kind = WIRE_MESSAGE, .route = receiver};
    memcpy(out.key, key, sizeof out.key);
    memcpy(out.value, value, replay->value_size);
    if (!replay_queue_outgoing(replay, &out))
        out_of_memory(replay, "outgoing values");
}

static void hand_over_send(otfx_replay *replay, replay_stream *stream)
{
    if (!stream->send.active)
        return;
    stream->send.active = false;
    publish_message(replay, stream->send.key, stream->send.receiver, stream->send.value);
}

/* A member's arrival at a collective instance, for the members depending on it here and elsewhere. */
static void publish_arrival(otfx_replay *replay, replay_stream *stream, otfx_ref comm_ref, uint64_t seq,
                            otfx_replay_missing missing, const void *value)
{
    replay_comm *comm = replay_comm_get(replay, comm_ref);
    if (!comm || seq == 0)
        return;
    uint32_t member = comm_rank_of(comm, stream->public.rank);
    if (member == UINT32_MAX)
        return;
    if (!replay_store_arrival(replay, comm->id, seq, member, comm->size, missing, value)) {
        out_of_memory(replay, "a collective");
        return;
    }
    if (comm->local_members == comm->size)
        return;
    outgoing_value out = {.kind = WIRE_ARRIVAL, .missing = (uint8_t)missing, .route = comm_ref};
    out.key[0] = comm->id;
    out.key[1] = seq;
    out.key[2] = member;
    out.key[3] = comm->size;
    if (value)
        memcpy(out.value, value, replay->value_size);
    if (!replay_queue_outgoing(replay, &out))
        out_of_memory(replay, "outgoing values");
}

/* ---- one stream's events ------------------------------------------------------------------------- */

enum step_result { STEP_MOVED, STEP_WAIT, STEP_FINISHED, STEP_CAUGHT_UP, STEP_FAILED };

const char *otfx_replay_gap_name(otfx_replay_gap why)
{
    static const char *const names[OTFX_REPLAY_GAP_COUNT] = {"reduced", "before-held", "after-held"};
    return (unsigned)why < OTFX_REPLAY_GAP_COUNT ? names[why] : "unknown";
}

static void report_gap(otfx_replay *replay, replay_stream *stream, otfx_time begin, otfx_time end,
                       otfx_replay_gap why)
{
    if (begin < replay->config.from)
        begin = replay->config.from;
    if (end > replay->config.to)
        end = replay->config.to;
    if (begin >= end)
        return;
    replay->stats.gaps++;
    replay->stats.gap_time += end - begin;
    if (replay->pass.gap)
        replay->pass.gap(replay->config.pass_user, &stream->public, begin, end, why);
}

static void finish_stream(otfx_replay *replay, replay_stream *stream)
{
    hand_over_send(replay, stream);
    stream->nbc_count = 0;
    if (replay->config.to != OTFX_TIME_MAX) {
        otfx_time last = stream->seen_held ? stream->last_time : replay->config.from;
        report_gap(replay, stream, last, replay->config.to, OTFX_REPLAY_GAP_AFTER_HELD);
    }
    if (replay->pass.finish)
        replay->pass.finish(replay->config.pass_user, &stream->public);
    stream->done = true;
    replay_stream_close_reader(stream);
    free(stream->events);
    free(stream->ahead_events);
    stream->events = stream->ahead_events = NULL;
    stream->count = stream->pos = 0;
}

/* RECV, IRECV: false while its value may still come. */
static bool try_receive(otfx_replay *replay, replay_stream *stream, const otfx_event *event)
{
    const void *value = NULL;
    otfx_replay_missing why = OTFX_REPLAY_SEEN;
    uint32_t sender = event->u.msg.peer;
    if (event->u.msg.seq == 0) {
        why = OTFX_REPLAY_NO_ORDINAL;
    } else {
        uint64_t key[4] = {comm_id_of(replay, event->u.msg.comm),
                           ((uint64_t)sender << 32) | stream->public.rank, event->u.msg.tag,
                           event->u.msg.seq};
        uint32_t taken;
        bool remote;
        if (message_table_take(&replay->messages, key, &taken, &remote)) {
            if (remote)
                replay->stats.receives_matched_remote++;
            else
                replay->stats.receives_matched_local++;
            replay->stats.receives++;
            if (replay->pass.receive)
                replay->pass.receive(replay->config.pass_user, &stream->public, event,
                                     message_table_value(&replay->messages, taken), OTFX_REPLAY_SEEN);
            message_table_release(&replay->messages, taken);
            return true;
        }
        if (!never_comes(replay, stream, sender, event->time, &why))
            return false;
    }
    replay->stats.receives++;
    replay->stats.receives_missing[why]++;
    if (replay->pass.receive)
        replay->pass.receive(replay->config.pass_user, &stream->public, event, value, why);
    return true;
}

otfx_replay_dependency otfx_replay_dependency_of(uint32_t op)
{
    switch (op) {
    case COLL_OP_BCAST:
    case COLL_OP_SCATTER:
    case COLL_OP_SCATTERV:
        return OTFX_REPLAY_ONE_TO_ALL;
    case COLL_OP_GATHER:
    case COLL_OP_GATHERV:
    case COLL_OP_REDUCE:
        return OTFX_REPLAY_ALL_TO_ONE;
    case COLL_OP_SCAN:
    case COLL_OP_EXSCAN:
        return OTFX_REPLAY_PREFIX;
    default:
        return OTFX_REPLAY_ALL_TO_ALL;
    }
}

static bool depends_on(otfx_replay_dependency dependency, uint32_t self, uint32_t root, uint32_t member)
{
    switch (dependency) {
    case OTFX_REPLAY_ONE_TO_ALL:
        return root != UINT32_MAX && self != root && member == root;
    case OTFX_REPLAY_ALL_TO_ONE:
        return root != UINT32_MAX && self == root;
    case OTFX_REPLAY_PREFIX:
        return member < self;
    default:
        return true;
    }
}

/* COLL_END, NBC_COMPLETE: false while a value it depends on may still come. */
static bool try_complete(otfx_replay *replay, replay_stream *stream, const otfx_event *event)
{
    replay_comm *comm = replay_comm_get(replay, event->u.coll.comm);
    uint32_t size = comm ? comm->size : 0;
    if (size > replay->coll_capacity) {
        const void **values = realloc(replay->coll_values, size * sizeof *values);
        if (values)
            replay->coll_values = values;
        otfx_replay_missing *missing = realloc(replay->coll_missing, size * sizeof *missing);
        if (missing)
            replay->coll_missing = missing;
        if (!values || !missing) {
            out_of_memory(replay, "a collective's members");
            return false;
        }
        replay->coll_capacity = size;
    }
    uint32_t self = comm ? comm_rank_of(comm, stream->public.rank) : UINT32_MAX;
    uint32_t root =
        comm && event->u.coll.root != UINT32_MAX ? comm_rank_of(comm, event->u.coll.root) : UINT32_MAX;
    uint64_t key[2] = {comm ? comm->id : 0, event->u.coll.seq};
    replay_instance **slot = comm ? replay_table_find(&replay->instances, key) : NULL;
    replay_instance *instance = slot ? *slot : NULL;
    bool identified = comm && event->u.coll.seq != 0 && self != UINT32_MAX;
    bool partial = false;
    const otfx_replay_dependency dependency = otfx_replay_dependency_of(event->u.coll.op);
    for (uint32_t i = 0; i < size; i++) {
        replay->coll_values[i] = NULL;
        replay->coll_missing[i] = OTFX_REPLAY_SEEN;
        if (!depends_on(dependency, self, root, i))
            continue;
        if (!identified) {
            replay->coll_missing[i] = OTFX_REPLAY_NO_ORDINAL;
            partial = true;
            continue;
        }
        unsigned char state = instance && i < instance->size ? instance->state[i] : SLOT_UNKNOWN;
        if (state == SLOT_VALUE) {
            replay->coll_values[i] = instance->values + (size_t)i * instance->stride;
        } else if (state == SLOT_MISSING) {
            replay->coll_missing[i] = (otfx_replay_missing)instance->why[i];
            partial = true;
        } else {
            otfx_replay_missing why;
            if (!never_comes(replay, stream, comm->members[i], event->time, &why))
                return false;
            replay->coll_missing[i] = why;
            partial = true;
        }
    }
    /* the member's own arrival, whether or not it depends on itself */
    if (self < size) {
        replay->coll_values[self] = stream->own_arrival_known ? stream->own_arrival : NULL;
        replay->coll_missing[self] = stream->own_arrival_known ? OTFX_REPLAY_SEEN : OTFX_REPLAY_NOT_HELD;
    }
    otfx_replay_collective collective = {.end = event,
                                         .dependency = dependency,
                                         .size = size,
                                         .self = self,
                                         .root = root,
                                         .world = comm ? comm->members : NULL,
                                         .value = replay->coll_values,
                                         .missing = replay->coll_missing};
    if (partial)
        replay->stats.collectives_partial++;
    else
        replay->stats.collectives_complete++;
    if (replay->pass.complete)
        replay->pass.complete(replay->config.pass_user, &stream->public, &collective);
    if (instance && instance->local_left != UINT32_MAX && --instance->local_left == 0) {
        free(instance);
        replay_table_remove(&replay->instances, key);
    }
    return true;
}

static pending_nbc *push_nbc(replay_stream *stream)
{
    if (!otfx_reserve((void **)&stream->nbc, &stream->nbc_capacity, stream->nbc_count + 1,
                      sizeof *stream->nbc, 4))
        return NULL;
    pending_nbc *started = &stream->nbc[stream->nbc_count++];
    memset(started, 0, sizeof *started);
    return started;
}

/* The arrival kept at an NBC_REQUEST of the same rank (any of its threads), published now that its
 * completion names the instance. */
static void publish_nbc_arrival(otfx_replay *replay, replay_stream *stream, const otfx_event *event)
{
    const replay_rank *owner = &replay->ranks[stream->public.rank];
    for (uint32_t s = 0; s < owner->stream_count; s++) {
        replay_stream *starter = replay->streams[owner->streams[s]];
        for (size_t i = 0; i < starter->nbc_count; i++) {
            if (starter->nbc[i].request != event->u.coll.request)
                continue;
            _Alignas(REPLAY_VALUE_ALIGN) unsigned char value[OTFX_REPLAY_MAX_VALUE];
            memcpy(value, starter->nbc[i].value, replay->value_size);
            memcpy(stream->own_arrival, value, replay->value_size);
            stream->own_arrival_known = true;
            const bool published = starter->nbc[i].published;
            starter->nbc[i] = starter->nbc[--starter->nbc_count];
            if (!published)
                publish_arrival(replay, stream, event->u.coll.comm, event->u.coll.seq, OTFX_REPLAY_SEEN,
                                value);
            return;
        }
    }
    publish_arrival(replay, stream, event->u.coll.comm, event->u.coll.seq, OTFX_REPLAY_NOT_HELD, NULL);
}

/* A started nonblocking collective's arrival goes out once its completion names the instance. A stream
 * that waits before it got there (point-to-point traffic between start and completion that depends on
 * other ranks, which may in turn wait for this arrival) looks ahead in its own events for the
 * completions of the collectives it started, and publishes their arrivals now: MPI lets every member
 * complete once all started, so nothing it does between start and completion may hold the others back. */
typedef struct nbc_lookahead {
    otfx_replay *replay;
    replay_stream *stream;
    size_t unresolved;
} nbc_lookahead;

static void resolve_nbc(nbc_lookahead *ahead, const otfx_event *event)
{
    if (event->type != OTFX_EV_NBC_COMPLETE)
        return;
    replay_stream *stream = ahead->stream;
    for (size_t i = 0; i < stream->nbc_count; i++) {
        pending_nbc *started = &stream->nbc[i];
        if (started->published || started->request != event->u.coll.request)
            continue;
        started->published = true;
        ahead->unresolved--;
        publish_arrival(ahead->replay, stream, event->u.coll.comm, event->u.coll.seq, OTFX_REPLAY_SEEN,
                        started->value);
        return;
    }
}

static int look_ahead_event(const otfx_event *event, void *user)
{
    nbc_lookahead *ahead = user;
    resolve_nbc(ahead, event);
    return ahead->unresolved == 0;
}

/* Publishes the arrivals of the collectives this waiting stream started whose completions lie ahead in
 * its own events (searched once per start). True when any was published. */
static bool publish_started_nbcs(otfx_replay *replay, replay_stream *stream)
{
    nbc_lookahead ahead = {.replay = replay, .stream = stream};
    for (size_t i = 0; i < stream->nbc_count; i++)
        if (!stream->nbc[i].published && !stream->nbc[i].looked_up) {
            stream->nbc[i].looked_up = true;
            ahead.unresolved++;
        }
    if (!ahead.unresolved)
        return false;
    const size_t before = ahead.unresolved;
    for (size_t i = stream->pos + 1; i < stream->count && ahead.unresolved; i++)
        resolve_nbc(&ahead, &stream->events[i]);
    if (ahead.unresolved && !stream->exhausted && stream->sliced) {
        otfx_status status = otfx_analysis_query_events(stream->trace, stream->resume_time, replay->config.to,
                                                        false, look_ahead_event, &ahead);
        if (status != OTFX_OK)
            replay_fail(replay, "reading ahead in the trace of rank %u thread %u: %s (%s)",
                        stream->public.rank, stream->public.thread, otfx_strerror(status), otfx_last_error());
    }
    return ahead.unresolved < before;
}

/* Whether the step does nothing with an event of this type but hand it to the pass (requests, metrics,
 * phases): such events may go to a pass with `events` inside a run. */
static inline bool replay_passes_over(otfx_event_type type)
{
    enum {
        PASSED_OVER = 1u << OTFX_EV_ISEND_COMPLETE | 1u << OTFX_EV_IRECV_REQUEST |
                      1u << OTFX_EV_REQUEST_CANCELLED | 1u << OTFX_EV_METRIC | 1u << OTFX_EV_PHASE
    };
    return (unsigned)type < 32 && (PASSED_OVER >> type & 1u);
}

/* For a pass with `events`: the events from pos that only move the region depth (ENTER, a LEAVE that
 * ends no held-back send) or that the replay passes over, at most `limit`, are replayed at once; they
 * and the event after them (the one the step goes on with, announced here) go to the pass in one call.
 * How many were replayed. */
static inline __attribute__((always_inline)) size_t replay_depth_run(otfx_replay *replay,
                                                                     replay_stream *stream, size_t limit)
{
    const otfx_event *const first = &stream->events[stream->pos];
    const size_t available = stream->count - stream->pos;
    if (limit > available)
        limit = available;
    uint32_t depth = stream->depth;
    otfx_time last = stream->last_time;
    size_t n = 0;
    for (; n < limit; n++) {
        const otfx_event *event = &first[n];
        if (event->type == OTFX_EV_ENTER) {
            depth++;
        } else if (event->type == OTFX_EV_LEAVE) {
            if (stream->send.active && depth == stream->send.depth)
                break;
            if (depth > 0)
                depth--;
        } else if (!replay_passes_over(event->type)) {
            break;
        }
        if (event->time > last)
            last = event->time;
    }
    const size_t handed = n < available ? n + 1 : n;
    if (n < available && first[n].time > last)
        last = first[n].time;
    stream->depth = depth;
    stream->last_time = last;
    stream->pos += n;
    replay->stats.events += handed;
    replay->pass.events(replay->config.pass_user, &stream->public, first, handed);
    return n;
}

/* Inlined into otfx_replay_advance's loop: it runs once per event (once per run of events that only
 * move the depth, for a pass with `events`). *moved: events replayed before the one it stops at. */
static inline __attribute__((always_inline)) enum step_result step(otfx_replay *replay, replay_stream *stream,
                                                                   uint32_t budget, uint32_t *moved)
{
    if (stream->pos >= stream->count && !replay_stream_fill(replay, stream)) {
        if (replay->failed)
            return STEP_FAILED;
        if (stream->follow)
            return STEP_CAUGHT_UP; /* more may be held at the next run */
        finish_stream(replay, stream);
        return STEP_FINISHED;
    }
    const otfx_event *event = &stream->events[stream->pos];
    void *user = replay->config.pass_user;
    if (!stream->announced) {
        stream->announced = true;
        const bool first_held = !stream->seen_held;
        if (first_held) {
            stream->seen_held = true;
            /* The trace's oldest detail begins inside the window (context ENTERs before `from` say it
             * holds detail there); a reduction record reports its own range. Detail is missing only
             * from the trace's first event on: before it the rank recorded nothing (a window from 0,
             * the default, begins long before any rank started). A trace whose detail reaches back
             * before that point misses nothing there: the window merely starts where the rank had
             * nothing open, between two calls. */
            otfx_trace_status held;
            if (event->time > replay->config.from && event->type != OTFX_EV_REDUCTION &&
                otfx_trace_status_get(stream->trace, &held) == OTFX_OK) {
                otfx_time begin = replay->config.from;
                if (held.first_time > begin)
                    begin = held.first_time;
                if (held.oldest_detail > begin)
                    report_gap(replay, stream, begin, event->time, OTFX_REPLAY_GAP_BEFORE_HELD);
            }
        }
        if (replay->pass.events && !first_held && budget > 1) {
            /* (the first event goes alone: the gap before it goes to the pass first) */
            size_t run = replay_depth_run(replay, stream, budget - 1);
            if (stream->pos >= stream->count) {
                stream->announced = false;
                *moved = (uint32_t)run - 1;
                return STEP_MOVED;
            }
            *moved = (uint32_t)run;
            event = &stream->events[stream->pos];
        } else {
            replay->stats.events++;
            if (event->time > stream->last_time)
                stream->last_time = event->time;
            if (replay->pass.events)
                replay->pass.events(user, &stream->public, event, 1);
            else if (replay->pass.event)
                replay->pass.event(user, &stream->public, event);
        }
    }
    _Alignas(REPLAY_VALUE_ALIGN) unsigned char value[OTFX_REPLAY_MAX_VALUE];
    switch (event->type) {
    case OTFX_EV_ENTER:
        stream->depth++;
        break;
    case OTFX_EV_LEAVE:
        if (stream->send.active && stream->depth == stream->send.depth) {
            if (replay->pass.send_ended)
                replay->pass.send_ended(user, &stream->public, event, stream->send.value);
            hand_over_send(replay, stream);
        }
        if (stream->depth > 0)
            stream->depth--;
        break;
    case OTFX_EV_SEND:
    case OTFX_EV_ISEND: {
        hand_over_send(replay, stream);
        replay->stats.sends++;
        memset(value, 0, sizeof value);
        if (replay->pass.send)
            replay->pass.send(user, &stream->public, event, value);
        if (event->u.msg.seq == 0) {
            replay->sends_unserved++;
            break;
        }
        uint64_t key[4] = {comm_id_of(replay, event->u.msg.comm),
                           ((uint64_t)stream->public.rank << 32) | event->u.msg.peer, event->u.msg.tag,
                           event->u.msg.seq};
        if (event->type == OTFX_EV_SEND && replay->pass.send_ended && stream->depth > 0) {
            stream->send.active = true;
            stream->send.depth = stream->depth;
            stream->send.time = event->time;
            stream->send.receiver = event->u.msg.peer;
            memcpy(stream->send.key, key, sizeof key);
            memcpy(stream->send.value, value, replay->value_size);
        } else {
            publish_message(replay, key, event->u.msg.peer, value);
        }
        break;
    }
    case OTFX_EV_RECV:
    case OTFX_EV_IRECV:
        if (!try_receive(replay, stream, event)) {
            /* A value held back for the end of a blocking send goes now: its receiver may be what
             * this stream waits for (MPI_Sendrecv). */
            if (!stream->send.active)
                return STEP_WAIT;
            hand_over_send(replay, stream);
            if (!try_receive(replay, stream, event))
                return STEP_WAIT;
        }
        break;
    case OTFX_EV_COLL_BEGIN:
        memset(value, 0, sizeof value);
        if (replay->pass.arrive)
            replay->pass.arrive(user, &stream->public, event, value);
        publish_arrival(replay, stream, event->u.coll.comm, event->u.coll.seq, OTFX_REPLAY_SEEN, value);
        memcpy(stream->own_arrival, value, replay->value_size);
        stream->begin_comm = event->u.coll.comm;
        stream->begin_seq = event->u.coll.seq;
        break;
    case OTFX_EV_COLL_END:
    case OTFX_EV_NBC_COMPLETE:
        if (!stream->arrival_sent) {
            stream->arrival_sent = true;
            stream->own_arrival_known = false;
            if (event->type == OTFX_EV_NBC_COMPLETE)
                publish_nbc_arrival(replay, stream, event);
            else if (stream->begin_comm != event->u.coll.comm || stream->begin_seq != event->u.coll.seq)
                publish_arrival(replay, stream, event->u.coll.comm, event->u.coll.seq, OTFX_REPLAY_NOT_HELD,
                                NULL);
            else
                stream->own_arrival_known = true;
        }
        if (!try_complete(replay, stream, event)) {
            if (replay->failed)
                return STEP_FAILED;
            if (!stream->send.active)
                return STEP_WAIT;
            hand_over_send(replay, stream);
            if (!try_complete(replay, stream, event))
                return replay->failed ? STEP_FAILED : STEP_WAIT;
        }
        if (event->type == OTFX_EV_COLL_END)
            stream->begin_comm = OTFX_REF_NONE;
        break;
    case OTFX_EV_NBC_REQUEST: {
        memset(value, 0, sizeof value);
        if (replay->pass.arrive)
            replay->pass.arrive(user, &stream->public, event, value);
        pending_nbc *started = push_nbc(stream);
        if (!started) {
            out_of_memory(replay, "a nonblocking collective");
            return STEP_FAILED;
        }
        started->request = event->u.request.request;
        started->time = event->time;
        memcpy(started->value, value, replay->value_size);
        break;
    }
    case OTFX_EV_REDUCTION:
        hand_over_send(replay, stream);
        report_gap(replay, stream, event->u.reduction.begin, event->u.reduction.end, OTFX_REPLAY_GAP_REDUCED);
        break;
    default:
        break;
    }
    if (replay->failed)
        return STEP_FAILED;
    stream->pos++;
    stream->announced = stream->arrival_sent = stream->released = false;
    return STEP_MOVED;
}

/* ---- driving ------------------------------------------------------------------------------------- */

otfx_status otfx_replay_advance(otfx_replay *replay, bool *progressed)
{
    *progressed = false;
    if (replay->failed)
        return replay->fail_status ? replay->fail_status : OTFX_ERR_INVALID;
    uint32_t budget = ADVANCE_BUDGET;
    bool moved;
    do {
        moved = false;
        for (uint32_t i = 0; i < replay->stream_count && budget > 0; i++) {
            replay_stream *stream = replay->streams[i];
            stream->waiting = false;
            while (!stream->done && budget > 0) {
                uint32_t run = 0;
                enum step_result result = step(replay, stream, budget, &run);
                if (run) {
                    moved = true;
                    budget -= run;
                }
                if (result == STEP_FAILED)
                    return replay->fail_status ? replay->fail_status : OTFX_ERR_INVALID;
                if (result == STEP_WAIT) {
                    stream->waiting = true;
                    if (stream->nbc_count && publish_started_nbcs(replay, stream))
                        moved = true;
                    if (replay->failed)
                        return replay->fail_status ? replay->fail_status : OTFX_ERR_INVALID;
                    break;
                }
                if (result == STEP_CAUGHT_UP)
                    break;
                moved = true;
                budget--;
            }
        }
        if (moved)
            *progressed = true;
    } while (moved && budget > 0);
    return OTFX_OK;
}

otfx_time otfx_replay_earliest_wait(const otfx_replay *replay)
{
    otfx_time earliest = OTFX_TIME_MAX;
    for (uint32_t i = 0; i < replay->stream_count; i++) {
        const replay_stream *stream = replay->streams[i];
        if (stream->done || !stream->waiting || stream->pos >= stream->count)
            continue;
        if (stream->events[stream->pos].time < earliest)
            earliest = stream->events[stream->pos].time;
    }
    return earliest;
}

bool otfx_replay_caught_up(const otfx_replay *replay)
{
    for (uint32_t i = 0; i < replay->stream_count; i++) {
        const replay_stream *stream = replay->streams[i];
        if (!stream->done && !stream->waiting && !(stream->exhausted && stream->pos >= stream->count))
            return false;
    }
    return true;
}

void replay_follow_resume(otfx_replay *replay)
{
    for (uint32_t i = 0; i < replay->stream_count; i++)
        if (!replay->streams[i]->done)
            replay->streams[i]->exhausted = false;
}

void replay_follow_rest(otfx_replay *replay)
{
    for (uint32_t i = 0; i < replay->stream_count; i++) {
        replay_stream *stream = replay->streams[i];
        if (stream->pos < stream->count)
            continue;
        free(stream->events);
        stream->events = NULL;
        stream->count = stream->pos = stream->capacity = 0;
    }
}

bool otfx_replay_done(const otfx_replay *replay)
{
    for (uint32_t i = 0; i < replay->stream_count; i++)
        if (!replay->streams[i]->done)
            return false;
    return true;
}

otfx_status otfx_replay_release(otfx_replay *replay, otfx_time time)
{
    otfx_time limit = add_tolerance(replay, time);
    for (uint32_t i = 0; i < replay->stream_count; i++) {
        replay_stream *stream = replay->streams[i];
        if (!stream->done && stream->waiting && stream->pos < stream->count &&
            stream->events[stream->pos].time <= limit)
            stream->released = true;
    }
    return OTFX_OK;
}

void otfx_replay_get_stats(const otfx_replay *replay, otfx_replay_stats *out)
{
    *out = replay->stats;
    out->streams = replay->stream_count;
    out->sends_unreceived = replay->sends_unserved + replay->messages.count;
}

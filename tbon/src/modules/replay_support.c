/* replay_support.c — the parts the replay-based modules share (replay_support.h). */
#include "replay_support.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- regions by reference ------------------------------------------------------------------------ */

void region_facts_init(region_facts *facts, otfx_defs *defs, const char *zero_name)
{
    memset(facts, 0, sizeof *facts);
    facts->defs = defs;
    facts->zero_name = zero_name && zero_name[0] ? zero_name : NULL;
}

void region_facts_free(region_facts *facts)
{
    free(facts->known);
    free(facts->role);
    free(facts->name);
    memset(facts, 0, sizeof *facts);
}

/* Index of a known reference, or SIZE_MAX (unknown reference or out of memory). */
static size_t region_lookup(region_facts *facts, otfx_ref region)
{
    if (region == OTFX_REF_NONE)
        return SIZE_MAX;
    if (region >= facts->capacity) {
        size_t capacity = facts->capacity ? facts->capacity : 64;
        while (capacity <= region)
            capacity *= 2;
        unsigned char *known = realloc(facts->known, capacity);
        if (!known) {
            facts->failed = true;
            return SIZE_MAX;
        }
        facts->known = known;
        unsigned char *role = realloc(facts->role, capacity);
        if (!role) {
            facts->failed = true;
            return SIZE_MAX;
        }
        facts->role = role;
        const char **name = realloc(facts->name, capacity * sizeof *name);
        if (!name) {
            facts->failed = true;
            return SIZE_MAX;
        }
        facts->name = name;
        memset(facts->known + facts->capacity, 0, capacity - facts->capacity);
        facts->capacity = capacity;
    }
    if (!facts->known[region]) {
        otfx_region_def def;
        if (otfx_defs_get_region(facts->defs, region, &def) == OTFX_OK) {
            facts->known[region] = 1;
            facts->role[region] = (unsigned char)def.role;
            facts->name[region] = def.name;
        } else {
            facts->known[region] = 2;
        }
    }
    return facts->known[region] == 1 ? region : SIZE_MAX;
}

bool region_is_mpi(region_facts *facts, otfx_ref region)
{
    size_t i = region_lookup(facts, region);
    if (i == SIZE_MAX)
        return false;
    otfx_region_role role = (otfx_region_role)facts->role[i];
    return role == OTFX_ROLE_MPI_P2P || role == OTFX_ROLE_MPI_COLLECTIVE || role == OTFX_ROLE_MPI_OTHER;
}

const char *region_name(region_facts *facts, otfx_ref region)
{
    size_t i = region_lookup(facts, region);
    return i == SIZE_MAX ? "" : facts->name[i];
}

bool region_is_zeroed(region_facts *facts, otfx_ref region)
{
    if (!facts->zero_name)
        return false;
    size_t i = region_lookup(facts, region);
    return i != SIZE_MAX && strcmp(facts->name[i], facts->zero_name) == 0;
}

/* ---- a stream's calling stack and CPU clock -------------------------------------------------------- */

void cpu_clock_init(cpu_clock *clock, otfx_time from, otfx_time to)
{
    memset(clock, 0, sizeof *clock);
    clock->from = from;
    clock->to = to;
}

void cpu_clock_free(cpu_clock *clock)
{
    free(clock->stack);
    clock->stack = NULL;
    clock->capacity = clock->depth = 0;
}

static void clock_advance(cpu_clock *clock, otfx_time time, cpu_piece_fn piece, void *user)
{
    if (time > clock->to)
        time = clock->to;
    if (time <= clock->last)
        return;
    if (clock->mpi_depth == 0 && piece)
        piece(user, clock->depth ? clock->stack[clock->depth - 1].region : OTFX_REF_NONE, clock->last, time);
    clock->last = time;
}

void cpu_clock_event(cpu_clock *clock, region_facts *facts, const otfx_event *event, cpu_piece_fn piece,
                     void *user)
{
    if (!clock->started && event->time >= clock->from) {
        clock->started = true;
        clock->last = event->time;
    }
    if (clock->started)
        clock_advance(clock, event->time, piece, user);
    switch (event->type) {
    case OTFX_EV_ENTER: {
        if (clock->depth >= OTFX_MAX_CALL_DEPTH) {
            clock->failed = true;
            return;
        }
        if (!otfx_reserve_u32((void **)&clock->stack, &clock->capacity, (size_t)clock->depth + 1,
                              sizeof *clock->stack, 16)) {
            clock->failed = true;
            return;
        }
        bool mpi = region_is_mpi(facts, event->u.region.region);
        clock->stack[clock->depth++] =
            (stack_frame){.region = event->u.region.region, .enter = event->time, .mpi = mpi};
        if (mpi)
            clock->mpi_depth++;
        break;
    }
    case OTFX_EV_LEAVE:
        if (clock->depth > 0 && clock->stack[--clock->depth].mpi)
            clock->mpi_depth--;
        break;
    case OTFX_EV_REDUCTION:
        /* no detail over the range: nothing is known to have run there */
        if (clock->started && event->u.reduction.end > clock->last)
            clock->last = event->u.reduction.end < clock->to ? event->u.reduction.end : clock->to;
        break;
    default:
        break;
    }
}

const stack_frame *cpu_clock_mpi_frame(const cpu_clock *clock)
{
    for (uint32_t i = clock->depth; i > 0; i--)
        if (clock->stack[i - 1].mpi)
            return &clock->stack[i - 1];
    return NULL;
}

/* ---- what could not be seen -------------------------------------------------------------------------- */

void unseen_from_stats(unseen_counts *out, const otfx_replay_stats *stats)
{
    memset(out, 0, sizeof *out);
    out->v[UNSEEN_NOT_HELD] = stats->receives_missing[OTFX_REPLAY_NOT_HELD];
    out->v[UNSEEN_RANK_NOT_SERVED] = stats->receives_missing[OTFX_REPLAY_RANK_NOT_SERVED];
    out->v[UNSEEN_NO_ORDINAL] = stats->receives_missing[OTFX_REPLAY_NO_ORDINAL];
    out->v[UNSEEN_STALLED] = stats->receives_missing[OTFX_REPLAY_STALLED];
    out->v[UNSEEN_SENDS_UNRECEIVED] = stats->sends_unreceived;
    out->v[UNSEEN_COLLECTIVES_PARTIAL] = stats->collectives_partial;
    out->v[UNSEEN_GAPS] = stats->gaps;
    out->v[UNSEEN_GAP_NS] = stats->gap_time;
    out->v[UNSEEN_RECEIVES] = stats->receives;
    out->v[UNSEEN_COLLECTIVES] = stats->collectives_complete + stats->collectives_partial;
    out->v[UNSEEN_STREAMS] = stats->streams;
}

void unseen_write(otfx_blob *out, const unseen_counts *counts)
{
    otfx_blob_u32(out, UNSEEN_COUNT);
    for (int i = 0; i < UNSEEN_COUNT; i++)
        otfx_blob_u64(out, counts->v[i]);
}

void unseen_read(otfx_blob_reader *reader, unseen_counts *counts)
{
    if (otfx_blob_read_u32(reader) != UNSEEN_COUNT)
        reader->failed = true;
    for (int i = 0; i < UNSEEN_COUNT && !reader->failed; i++)
        counts->v[i] = otfx_blob_read_u64(reader);
}

void unseen_add(unseen_counts *into, const unseen_counts *other)
{
    for (int i = 0; i < UNSEEN_COUNT; i++)
        into->v[i] += other->v[i];
}

void unseen_line(otfx_text *reply, const unseen_counts *counts)
{
    otfx_kv_begin(reply, "unseen");
    otfx_kv_u64(reply, "streams", counts->v[UNSEEN_STREAMS]);
    otfx_kv_u64(reply, "receives", counts->v[UNSEEN_RECEIVES]);
    otfx_kv_u64(reply, "receives_not_held", counts->v[UNSEEN_NOT_HELD]);
    otfx_kv_u64(reply, "receives_rank_not_served", counts->v[UNSEEN_RANK_NOT_SERVED]);
    otfx_kv_u64(reply, "receives_no_ordinal", counts->v[UNSEEN_NO_ORDINAL]);
    otfx_kv_u64(reply, "receives_stalled", counts->v[UNSEEN_STALLED]);
    otfx_kv_u64(reply, "sends_unreceived", counts->v[UNSEEN_SENDS_UNRECEIVED]);
    otfx_kv_u64(reply, "collectives", counts->v[UNSEEN_COLLECTIVES]);
    otfx_kv_u64(reply, "collectives_partial", counts->v[UNSEEN_COLLECTIVES_PARTIAL]);
    otfx_kv_u64(reply, "gaps", counts->v[UNSEEN_GAPS]);
    otfx_kv_u64(reply, "gap_ns", counts->v[UNSEEN_GAP_NS]);
    otfx_kv_end(reply);
}

/* ---- a leaf's replay ------------------------------------------------------------------------------- */

static bool selects_rank(void *user, uint32_t rank)
{
    return otfx_rank_set_contains(user, rank);
}

otfx_replay *replay_leaf_build(const otfx_command *query, const otfx_leaf_input *input,
                               const otfx_replay_pass *pass, void *pass_user, bool follow, char *error,
                               size_t error_size)
{
    otfx_replay_config config = {
        .from = query->from,
        .to = query->to,
        .pass = pass,
        .pass_user = pass_user,
        .selects_rank = selects_rank,
        .selects_user = (void *)&query->ranks,
        .app_ranks = input->app_ranks,
        .follow = follow,
    };
    char why[256] = "";
    otfx_replay *replay = otfx_replay_create(&config, input->defs, why, sizeof why);
    if (!replay) {
        snprintf(error, error_size, "%s: %s", pass->name, why[0] ? why : "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count)
            continue;
        uint32_t rank = input->ranks[index].rank;
        if (!otfx_rank_set_contains(&query->ranks, rank))
            continue;
        uint32_t thread = input->thread_of_trace ? input->thread_of_trace[i] : 0;
        if (otfx_replay_add_trace(replay, input->traces[i], rank, thread) != OTFX_OK) {
            snprintf(error, error_size, "%s: stream of rank %u thread %u: %s", pass->name, rank, thread,
                     otfx_last_error());
            otfx_replay_destroy(replay);
            return NULL;
        }
    }
    return replay;
}

bool replay_leaf_go(otfx_replay *replay, const otfx_leaf_input *input, const otfx_replay_pass *pass,
                    char *error, size_t error_size)
{
    char why[256] = "";
    if (otfx_replay_run(replay, input->exchange, input->deadline_ns, why, sizeof why) != OTFX_OK) {
        snprintf(error, error_size, "%s: replay: %s", pass->name, why);
        return false;
    }
    return true;
}

otfx_replay *replay_leaf_run(const otfx_command *query, const otfx_leaf_input *input,
                             const otfx_replay_pass *pass, void *pass_user, char *error, size_t error_size)
{
    otfx_replay *replay = replay_leaf_build(query, input, pass, pass_user, false, error, error_size);
    if (replay && !replay_leaf_go(replay, input, pass, error, error_size)) {
        otfx_replay_destroy(replay);
        return NULL;
    }
    return replay;
}

void follow_fields_write(otfx_blob *out, const follow_fields *fields)
{
    otfx_blob_u64(out, fields->round);
    otfx_blob_u64(out, fields->restarted);
    otfx_blob_u64(out, fields->events);
}

void follow_fields_read(otfx_blob_reader *reader, follow_fields *fields)
{
    fields->round = otfx_blob_read_u64(reader);
    fields->restarted = otfx_blob_read_u64(reader);
    fields->events = otfx_blob_read_u64(reader);
    if (fields->restarted > 1)
        reader->failed = true;
}

void follow_fields_merge(follow_fields *into, const follow_fields *other)
{
    if (other->round > into->round)
        into->round = other->round;
    if (other->restarted > into->restarted)
        into->restarted = other->restarted;
    into->events += other->events;
}

void follow_fields_line(otfx_text *reply, const otfx_command *query, const follow_fields *fields)
{
    if (!query->follow)
        return;
    otfx_kv_u64(reply, "follow", query->follow);
    otfx_kv_u64(reply, "round", fields->round);
    otfx_kv_u64(reply, "restarted", fields->restarted);
    otfx_kv_u64(reply, "events_this_round", fields->events);
}

void *stream_slot(void **array, size_t *capacity, size_t item_size, uint32_t index)
{
    const size_t old_capacity = *capacity;
    if (!otfx_reserve(array, capacity, (size_t)index + 1, item_size, 16))
        return NULL;
    unsigned char *items = *array;
    memset(items + old_capacity * item_size, 0, (*capacity - old_capacity) * item_size);
    return items + (size_t)index * item_size;
}

int name_compare(const char *a, uint32_t a_length, const char *b, uint32_t b_length)
{
    uint32_t n = a_length < b_length ? a_length : b_length;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return a_length < b_length ? -1 : a_length > b_length;
}

/* follow_states.c — the follow states kept between queries (follow_states.h): one list per process
 * behind a mutex, which is held only to find, take back or drop states, never while a round runs. */
#include "follow_states.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static follow_state *registry;
static uint64_t registry_uses;

static void state_free(follow_state *state)
{
    if (!state)
        return;
    otfx_replay_destroy(state->replay);
    if (state->run && state->free_run)
        state->free_run(state->run);
    free(state->traces);
    free(state);
}

void follow_drop(follow_state *state)
{
    state_free(state);
}

void otfx_analysis_follow_forget(const otfx_defs *defs)
{
    follow_state *dropped = NULL;
    pthread_mutex_lock(&registry_lock);
    for (follow_state **at = &registry; *at;) {
        follow_state *state = *at;
        if (defs && state->defs != defs) {
            at = &state->next;
            continue;
        }
        *at = state->next;
        state->next = dropped;
        dropped = state;
    }
    pthread_mutex_unlock(&registry_lock);
    while (dropped) {
        follow_state *next = dropped->next;
        state_free(dropped);
        dropped = next;
    }
}

static bool same_ranks(const otfx_rank_set *a, const otfx_rank_set *b)
{
    if (a->count != b->count)
        return false;
    for (uint32_t i = 0; i < a->count && i < 32; i++)
        if (a->ranges[i].first != b->ranges[i].first || a->ranges[i].last != b->ranges[i].last)
            return false;
    return true;
}

/* The options that decide what is replayed and accumulated; top and limit only shape the answer. */
static bool same_options(const otfx_command *a, const otfx_command *b)
{
    return a->kind == b->kind && a->from == b->from && a->to == b->to && same_ranks(&a->ranks, &b->ranks) &&
           strcmp(a->zero, b->zero) == 0;
}

/* The traces of the ranks the query selects, in the input's order; false when out of memory. */
static bool selected_traces(const otfx_command *query, const otfx_leaf_input *input, follow_trace **out,
                            size_t *count)
{
    *out = NULL;
    *count = 0;
    follow_trace *traces = calloc(input->trace_count ? input->trace_count : 1, sizeof *traces);
    if (!traces)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count || !otfx_rank_set_contains(&query->ranks, input->ranks[index].rank))
            continue;
        traces[n++] = (follow_trace){.trace = input->traces[i],
                                     .rank = input->ranks[index].rank,
                                     .thread = input->thread_of_trace ? input->thread_of_trace[i] : 0};
    }
    *out = traces;
    *count = n;
    return true;
}

static bool same_traces(const follow_state *state, const follow_trace *traces, size_t count)
{
    return state->trace_count == count &&
           (count == 0 || memcmp(state->traces, traces, count * sizeof *traces) == 0);
}

/* Takes this place's state of (module, id) out of the registry, dropping the idle ones on the way. */
static follow_state *take(const char *module, uint64_t id, const otfx_defs *defs, uint64_t now_ns)
{
    follow_state *found = NULL, *idle = NULL;
    pthread_mutex_lock(&registry_lock);
    for (follow_state **at = &registry; *at;) {
        follow_state *state = *at;
        const bool mine = state->id == id && state->defs == defs && strcmp(state->module, module) == 0;
        const bool stale = now_ns > state->last_used_ns && now_ns - state->last_used_ns > FOLLOW_IDLE_NS;
        if (!mine && !stale) {
            at = &state->next;
            continue;
        }
        *at = state->next;
        if (mine && !stale && !found) {
            found = state;
        } else {
            state->next = idle;
            idle = state;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    while (idle) {
        follow_state *next = idle->next;
        state_free(idle);
        idle = next;
    }
    if (found)
        found->next = NULL;
    return found;
}

/* Puts a state back unchanged (a refused query leaves the follow it collided with alone). */
static void put_back(follow_state *state)
{
    pthread_mutex_lock(&registry_lock);
    state->next = registry;
    registry = state;
    pthread_mutex_unlock(&registry_lock);
}

follow_state *follow_begin(const char *module, const otfx_command *query, const otfx_leaf_input *input,
                           char *error, size_t error_size)
{
    follow_state *state = take(module, query->follow, input->defs, input->now_ns);
    follow_trace *traces;
    size_t trace_count;
    if (!selected_traces(query, input, &traces, &trace_count)) {
        state_free(state);
        snprintf(error, error_size, "%s: out of memory for the follow state", module);
        return NULL;
    }
    const uint64_t had = state ? state->round : 0;
    const bool conflict = state && !same_options(&state->query, query);
    /* a new trace (a thread, a rank's first batch) would join the replay late: start over instead */
    const uint64_t valid = state && !conflict && same_traces(state, traces, trace_count) ? state->round : 0;
    uint64_t most[3] = {had, conflict, valid}, least[1] = {valid};
    const otfx_place_exchange *exchange = input->exchange;
    if (exchange && (!exchange->allreduce(exchange->context, OTFX_EXCHANGE_MAX, most, 3) ||
                     !exchange->allreduce(exchange->context, OTFX_EXCHANGE_MIN, least, 1))) {
        snprintf(error, error_size, "%s --follow: the places could not agree on the round: %s", module,
                 exchange->last_error ? exchange->last_error(exchange->context) : "?");
        state_free(state);
        free(traces);
        return NULL;
    }
    if (most[1]) {
        snprintf(error, error_size,
                 "%s --follow %llu: this ID follows a query with other options (--from, --to, --ranks or "
                 "--zero); a follow keeps its options, choose another ID for another query",
                 module, (unsigned long long)query->follow);
        if (state)
            put_back(state);
        free(traces);
        return NULL;
    }
    if (state && least[0] == most[2] && least[0] > 0) {
        free(traces);
        state->round++;
        state->restarted = false;
        state->query.top = query->top;
        state->query.limit = query->limit;
        return state;
    }
    state_free(state);
    state = calloc(1, sizeof *state);
    if (!state) {
        free(traces);
        snprintf(error, error_size, "%s: out of memory for the follow state", module);
        return NULL;
    }
    state->round = 1;
    state->restarted = most[0] > 0;
    state->query = *query;
    snprintf(state->module, sizeof state->module, "%s", module);
    state->id = query->follow;
    state->defs = input->defs;
    state->traces = traces;
    state->trace_count = trace_count;
    return state;
}

void follow_keep(follow_state *state, const otfx_leaf_input *input)
{
    follow_state *dropped = NULL;
    pthread_mutex_lock(&registry_lock);
    state->last_used_ns = input->now_ns;
    state->use = ++registry_uses;
    /* the same key kept meanwhile (two rounds at once, which a place never runs): the older goes */
    for (follow_state **at = &registry; *at; at = &(*at)->next)
        if ((*at)->id == state->id && (*at)->defs == state->defs &&
            strcmp((*at)->module, state->module) == 0) {
            dropped = *at;
            *at = dropped->next;
            dropped->next = NULL;
            break;
        }
    state->next = registry;
    registry = state;
    for (;;) {
        uint32_t count = 0;
        follow_state **oldest = NULL;
        for (follow_state **at = &registry; *at; at = &(*at)->next) {
            if ((*at)->defs != state->defs)
                continue;
            count++;
            if (!oldest || (*at)->use < (*oldest)->use)
                oldest = at;
        }
        if (count <= FOLLOW_STATES_PER_PLACE)
            break;
        follow_state *old = *oldest;
        *oldest = old->next;
        old->next = dropped;
        dropped = old;
    }
    pthread_mutex_unlock(&registry_lock);
    while (dropped) {
        follow_state *next = dropped->next;
        state_free(dropped);
        dropped = next;
    }
}

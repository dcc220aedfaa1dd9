/*
 * structure.c — the task activity graph of one location (otfx/structure.h), fed event by event.
 *
 * Identities are built from region names, never from refs, so that graphs of locations on different
 * places (each with its own definitions) compare: a node's calling context is a hash chained over the
 * names of the open regions. Nodes, edges, peers, completions and paths live in growing arrays with a
 * hash index each (support/hash.h). The graph is built on the append path, so the common case is kept
 * cheap: a program repeats itself, and a region remembers the node it was last found as (per context),
 * a node the edge it was last left by, the partner of its last message and the path of its last return;
 * only what differs from last time is looked up (for paths, one hash over the at most
 * OTFX_STRUCTURE_PATH_WINDOW nodes since the node's last visit). Once the stream goes round a cycle of
 * nodes, a visit of the next one costs its edge's statistic only: the counts and states the visits would
 * change are written when the cycle breaks or the feed ends (steady_write), so a reader sees the same
 * graph however the stream was cut into feeds.
 */
/* strdup, and the POSIX rwlocks of the private header that declares structure_copy. */
#define _POSIX_C_SOURCE 200809L
#include "trace_internal.h"

#include <otfx/structure.h>

#include <otfx/support/growth.h>
#include <otfx/support/hash.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The append path's helpers, inlined whatever the compiler's budget says: their calls cost as much as
 * their common case. */
#define HOT static inline __attribute__((always_inline))

#define CONTEXT_TEXT_MAX  255u
#define MAX_OPEN_REQUESTS 4096u
#define MESSAGE_SLOT_BITS 7u
#define MESSAGE_SLOTS     (1u << MESSAGE_SLOT_BITS)

typedef struct region_info {
    bool known;
    bool is_loop;
    bool is_node; /* its ENTER is a node (an MPI call or a marker) of kind `kind` */
    otfx_structure_kind kind;
    otfx_region_role role;
    uint64_t name_hash;
    const char *name;
    /* The node this region was last found as, and that node's context and value: a loop visits its
     * call sites in the same contexts over and over, so most lookups end here. */
    uint32_t cached_node; /* UINT32_MAX: none */
    uint64_t cached_context;
    int64_t cached_value;
    /* The context of its frame when it was last entered below `frame_parent` (0: none). */
    uint64_t frame_parent, frame_context;
} region_info;

/* Per node, what the builder remembers of it (not part of the graph). */
typedef struct node_state {
    uint64_t last_visit; /* visit position + 1 (0: never) */
    uint32_t last_path;  /* the path its last return took (UINT32_MAX: none) */
    uint64_t repeat_at;  /* the position whose return repeats last_path if the stream keeps its length */
    uint32_t last_edge;  /* the edge last taken from it (UINT32_MAX: none) */
} node_state;

/* Where the messages of one (node, partner, tag, communicator ref, direction) went last time: the key
 * packed in two words, so that a look-up compares two. */
typedef struct message_slot {
    uint64_t route;  /* partner | tag << 32 */
    uint64_t origin; /* direction | node << 1 | MESSAGE_SLOT_USED | communicator ref << 32 */
    uint32_t channel, peer_entry;
} message_slot;

#define MESSAGE_SLOT_USED (UINT64_C(1) << 31)

typedef struct frame {
    otfx_ref region;
    uint64_t context; /* hash of the names up to and including this region */
} frame;

typedef struct open_request {
    uint64_t request;
    uint32_t node;
} open_request;

struct otfx_structure {
    uint32_t rank;
    otfx_structure_node *nodes;
    size_t node_capacity;
    uint32_t node_count;
    otfx_hash_index node_index;
    otfx_structure_edge *edges;
    size_t edge_capacity;
    uint32_t edge_count;
    otfx_hash_index edge_index;
    otfx_structure_peer *peers;
    size_t peer_capacity;
    uint32_t peer_count;
    otfx_hash_index peer_index;
    otfx_structure_completion *completions;
    size_t completion_capacity;
    uint32_t completion_count;
    otfx_hash_index completion_index;
    otfx_structure_channel *channels;
    size_t channel_capacity;
    uint32_t channel_count;
    otfx_hash_index channel_index;
    otfx_structure_path *paths;
    size_t path_capacity;
    uint32_t path_count;
    otfx_hash_index path_index;
    uint32_t *path_nodes;
    size_t path_node_capacity, path_node_count;
    uint64_t events, untracked;
    /* the builder's state: not part of the graph (not copied) */
    region_info *regions;
    size_t region_capacity;
    uint64_t *comm_keys; /* per communicator ref: its identity (0: not looked up yet) */
    size_t comm_key_capacity;
    frame *stack;
    size_t stack_capacity, depth;
    size_t call_depth; /* stack depth of the open MPI call's region (0: none) */
    uint32_t call_node;
    uint64_t call_start;
    uint32_t last_node; /* UINT32_MAX: none yet */
    uint64_t last_end;
    open_request *requests;
    size_t request_capacity, request_count;
    node_state *node_states;
    size_t node_state_capacity;
    uint32_t recent[OTFX_STRUCTURE_PATH_WINDOW];
    /* The stream's recent period: the last `period_run` visits each equal the one `period` before. */
    uint32_t period;
    uint64_t period_run;
    uint64_t fast_run; /* the last visits that were counted as repeating their node's last return */
    /* Steady: the stream goes round `cycle` (the period's nodes, each once, and the edge into each), and
     * a visit of the node expected next costs its edge's statistic only. What else such a visit would
     * change (the node's visits, its path's count, its state, the ring of recent visits, the positions)
     * follows from how many there were, and is written when the cycle breaks or the feed returns. */
    bool steady;
    uint32_t cycle_phase;   /* the cycle entry expected next */
    uint32_t steady_phase;  /* the entry of the first visit not yet written */
    uint64_t steady_visits; /* visits not yet written, from position visit_position on */
    struct {
        uint32_t node, edge_in;
        /* an MPI call's node: the region and context it was last entered as on the cycle (the region
         * OTFX_REF_NONE until then), so that the same ENTER finds it without looking it up */
        otfx_ref region;
        uint64_t context;
    } cycle[OTFX_STRUCTURE_PATH_WINDOW];
    message_slot message_slots[MESSAGE_SLOTS];
    uint64_t visit_position;
};

/* ---- statistics ---- */

/* The builder's own calls stay inside the library (the exported function may be interposed). */
HOT void stat_add(otfx_structure_stat *stat, uint64_t ns)
{
    if (ns < stat->min_ns || stat->count == 0)
        stat->min_ns = ns;
    if (ns > stat->max_ns) /* an empty statistic's max is 0, no more than any ns */
        stat->max_ns = ns;
    stat->count++;
    stat->sum_ns += ns;
    stat->sum_squares += (double)ns * (double)ns;
}

void otfx_structure_stat_add(otfx_structure_stat *stat, uint64_t ns)
{
    stat_add(stat, ns);
}

double otfx_structure_stat_mean(const otfx_structure_stat *stat)
{
    return stat->count ? (double)stat->sum_ns / (double)stat->count : 0.0;
}

double otfx_structure_stat_stddev(const otfx_structure_stat *stat)
{
    if (stat->count < 2)
        return 0.0;
    const double mean = otfx_structure_stat_mean(stat);
    const double variance = stat->sum_squares / (double)stat->count - mean * mean;
    return variance > 0 ? sqrt(variance) : 0.0;
}

/* ---- hashing ---- */

static uint64_t text_hash(const char *text)
{
    uint64_t hash = UINT64_C(1469598103934665603);
    for (; *text; text++)
        hash = (hash ^ (unsigned char)*text) * UINT64_C(1099511628211);
    return otfx_hash_mix(hash);
}

typedef struct node_key {
    otfx_structure_kind kind;
    const char *name;
    uint64_t name_hash, context_hash;
    int64_t value;
} node_key;

static uint64_t node_key_hash(otfx_structure_kind kind, uint64_t name_hash, uint64_t context_hash,
                              int64_t value)
{
    return otfx_hash_mix(otfx_hash_mix(otfx_hash_mix(name_hash ^ (uint64_t)kind) ^ context_hash) ^
                         (uint64_t)value);
}

static uint64_t node_hash_of(const void *items, size_t item)
{
    const otfx_structure_node *node = &((const otfx_structure_node *)items)[item];
    return node_key_hash(node->kind, text_hash(node->name), node->context_hash, node->value);
}

static bool same_node(const void *items, size_t item, const void *key)
{
    const otfx_structure_node *node = &((const otfx_structure_node *)items)[item];
    const node_key *k = key;
    return node->kind == k->kind && node->context_hash == k->context_hash && node->value == k->value &&
           strcmp(node->name, k->name) == 0;
}

static uint64_t pair_hash(uint32_t a, uint32_t b)
{
    return otfx_hash_mix(((uint64_t)a << 32) | b);
}

static uint64_t edge_hash_of(const void *items, size_t item)
{
    const otfx_structure_edge *edge = &((const otfx_structure_edge *)items)[item];
    return pair_hash(edge->from, edge->to);
}

static bool same_edge(const void *items, size_t item, const void *key)
{
    const otfx_structure_edge *edge = &((const otfx_structure_edge *)items)[item], *k = key;
    return edge->from == k->from && edge->to == k->to;
}

static uint64_t peer_key_hash(uint32_t node, bool sent, int64_t offset)
{
    return otfx_hash_mix(pair_hash(node, sent) ^ (uint64_t)offset);
}

static uint64_t peer_hash_of(const void *items, size_t item)
{
    const otfx_structure_peer *peer = &((const otfx_structure_peer *)items)[item];
    return peer_key_hash(peer->node, peer->sent, peer->offset);
}

static bool same_peer(const void *items, size_t item, const void *key)
{
    const otfx_structure_peer *peer = &((const otfx_structure_peer *)items)[item], *k = key;
    return peer->node == k->node && peer->sent == k->sent && peer->offset == k->offset;
}

typedef struct channel_key {
    bool sent;
    int64_t offset;
    uint64_t comm;
    uint32_t tag;
} channel_key;

static uint64_t channel_key_hash(bool sent, int64_t offset, uint64_t comm, uint32_t tag)
{
    return otfx_hash_mix(otfx_hash_mix(comm ^ (uint64_t)offset) ^ ((uint64_t)tag << 1 | sent));
}

static uint64_t channel_hash_of(const void *items, size_t item)
{
    const otfx_structure_channel *c = &((const otfx_structure_channel *)items)[item];
    return channel_key_hash(c->sent, c->offset, c->comm, c->tag);
}

static bool same_channel(const void *items, size_t item, const void *key)
{
    const otfx_structure_channel *c = &((const otfx_structure_channel *)items)[item];
    const channel_key *k = key;
    return c->sent == k->sent && c->offset == k->offset && c->comm == k->comm && c->tag == k->tag;
}

static uint64_t completion_hash_of(const void *items, size_t item)
{
    const otfx_structure_completion *c = &((const otfx_structure_completion *)items)[item];
    return pair_hash(c->start, c->end);
}

static bool same_completion(const void *items, size_t item, const void *key)
{
    const otfx_structure_completion *c = &((const otfx_structure_completion *)items)[item], *k = key;
    return c->start == k->start && c->end == k->end;
}

/* Paths are compared by their node sequences, which live in the structure's path_nodes: the hash
 * callbacks get the structure itself as their `items`. */
typedef struct path_key {
    const uint32_t *nodes;
    uint32_t length;
} path_key;

static uint64_t sequence_hash(const uint32_t *nodes, uint32_t length)
{
    uint64_t hash = length;
    for (uint32_t i = 0; i < length; i++)
        hash = otfx_hash_mix(hash ^ nodes[i]);
    return hash;
}

static uint64_t path_hash_of(const void *items, size_t item)
{
    const otfx_structure *s = items;
    const otfx_structure_path *path = &s->paths[item];
    return sequence_hash(s->path_nodes + path->first, path->length);
}

static bool same_path(const void *items, size_t item, const void *key)
{
    const otfx_structure *s = items;
    const otfx_structure_path *path = &s->paths[item];
    const path_key *k = key;
    return path->length == k->length &&
           memcmp(s->path_nodes + path->first, k->nodes, k->length * sizeof(uint32_t)) == 0;
}

/* ---- life ---- */

otfx_structure *otfx_structure_create(uint32_t rank)
{
    otfx_structure *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->rank = rank;
    s->last_node = UINT32_MAX;
    return s;
}

static void free_graph(otfx_structure *s)
{
    for (uint32_t i = 0; i < s->node_count; i++) {
        free(s->nodes[i].name);
        free(s->nodes[i].context);
    }
    free(s->nodes);
    free(s->edges);
    free(s->peers);
    free(s->completions);
    free(s->channels);
    free(s->paths);
    free(s->path_nodes);
    otfx_hash_free(&s->channel_index);
    otfx_hash_free(&s->node_index);
    otfx_hash_free(&s->edge_index);
    otfx_hash_free(&s->peer_index);
    otfx_hash_free(&s->completion_index);
    otfx_hash_free(&s->path_index);
}

void otfx_structure_reset(otfx_structure *s)
{
    if (!s)
        return;
    free_graph(s);
    free(s->node_states);
    s->nodes = NULL;
    s->edges = NULL;
    s->peers = NULL;
    s->completions = NULL;
    s->channels = NULL;
    s->paths = NULL;
    s->path_nodes = NULL;
    s->node_states = NULL;
    s->node_capacity = s->edge_capacity = s->peer_capacity = s->completion_capacity = s->path_capacity = 0;
    s->channel_capacity = s->path_node_capacity = s->node_state_capacity = 0;
    s->node_count = s->edge_count = s->peer_count = s->completion_count = s->path_count = 0;
    s->channel_count = 0;
    s->path_node_count = 0;
    s->events = s->untracked = 0;
    /* What referred to the dropped nodes goes too: the open call (its LEAVE still closes it, unrecorded),
     * the previous node, the open requests and the recent visits. The stack of open regions stays. */
    s->call_node = UINT32_MAX;
    s->last_node = UINT32_MAX;
    s->last_end = 0;
    s->request_count = 0;
    s->visit_position = 0;
    s->period = 0;
    s->period_run = 0;
    s->fast_run = 0;
    s->steady = false;
    s->steady_visits = 0;
    memset(s->message_slots, 0, sizeof s->message_slots);
    for (size_t r = 0; r < s->region_capacity; r++)
        s->regions[r].cached_node = UINT32_MAX;
}

void otfx_structure_destroy(otfx_structure *s)
{
    if (!s)
        return;
    free_graph(s);
    free(s->regions);
    free(s->comm_keys);
    free(s->stack);
    free(s->requests);
    free(s->node_states);
    free(s);
}

/* ---- building ---- */

static bool contains_loop(const char *name)
{
    for (const char *p = name; *p; p++)
        if (tolower((unsigned char)p[0]) == 'l' && tolower((unsigned char)p[1]) == 'o' &&
            tolower((unsigned char)p[2]) == 'o' && tolower((unsigned char)p[3]) == 'p')
            return true;
    return false;
}

HOT region_info *region_of(otfx_structure *s, const otfx_defs *defs, otfx_ref region)
{
    if (region < s->region_capacity && s->regions[region].known)
        return &s->regions[region];
    if (region == OTFX_REF_NONE)
        return NULL;
    if (region >= s->region_capacity) {
        const size_t known = s->region_capacity;
        if (!otfx_reserve((void **)&s->regions, &s->region_capacity, (size_t)region + 1, sizeof *s->regions,
                          64))
            return NULL;
        memset(s->regions + known, 0, (s->region_capacity - known) * sizeof *s->regions);
    }
    region_info *info = &s->regions[region];
    if (!info->known) {
        otfx_region_def def;
        if (!defs || otfx_defs_get_region(defs, region, &def) != OTFX_OK || !def.name)
            return NULL;
        *info = (region_info){.known = true,
                              .is_loop = def.role == OTFX_ROLE_USER_FUNCTION && contains_loop(def.name),
                              .role = def.role,
                              .name_hash = text_hash(def.name),
                              .name = def.name,
                              .cached_node = UINT32_MAX};
        info->is_node = def.role == OTFX_ROLE_MPI_P2P || def.role == OTFX_ROLE_MPI_COLLECTIVE ||
                        info->is_loop || def.role == OTFX_ROLE_PHASE;
        info->kind = def.role == OTFX_ROLE_MPI_P2P || def.role == OTFX_ROLE_MPI_COLLECTIVE
                         ? OTFX_STRUCTURE_MPI
                     : info->is_loop ? OTFX_STRUCTURE_LOOP
                                     : OTFX_STRUCTURE_PHASE;
    }
    return info;
}

static char *context_text(const otfx_structure *s)
{
    char *text = malloc(CONTEXT_TEXT_MAX + 1);
    if (!text)
        return NULL;
    size_t used = 0;
    text[0] = '\0';
    for (size_t d = 0; d < s->depth; d++) {
        const region_info *info =
            s->stack[d].region < s->region_capacity ? &s->regions[s->stack[d].region] : NULL;
        const char *name = info && info->known ? info->name : "?";
        int written = snprintf(text + used, CONTEXT_TEXT_MAX + 1 - used, "%s%s", d ? "/" : "", name);
        if (written < 0 || (size_t)written >= CONTEXT_TEXT_MAX + 1 - used) {
            used = CONTEXT_TEXT_MAX;
            break;
        }
        used += (size_t)written;
    }
    return text;
}

HOT uint64_t current_context(const otfx_structure *s)
{
    return s->depth ? s->stack[s->depth - 1].context : 0;
}

static uint32_t find_or_add_node(otfx_structure *s, otfx_structure_kind kind, const region_info *region,
                                 uint64_t context, int64_t value)
{
    const node_key key = {kind, region->name, region->name_hash, context, value};
    const uint64_t hash = node_key_hash(kind, region->name_hash, key.context_hash, value);
    size_t at = otfx_hash_find(&s->node_index, hash, same_node, s->nodes, &key);
    if (at != OTFX_HASH_NONE)
        return (uint32_t)at;
    if (s->node_count >= OTFX_STRUCTURE_MAX_NODES ||
        !otfx_reserve((void **)&s->nodes, &s->node_capacity, s->node_count + 1, sizeof *s->nodes, 16) ||
        !otfx_reserve((void **)&s->node_states, &s->node_state_capacity, s->node_count + 1,
                      sizeof *s->node_states, 16))
        return UINT32_MAX;
    otfx_structure_node node = {.name = strdup(region->name),
                                .context = context_text(s),
                                .context_hash = key.context_hash,
                                .kind = kind,
                                .value = value};
    if (!node.name || !node.context) {
        free(node.name);
        free(node.context);
        return UINT32_MAX;
    }
    s->nodes[s->node_count] = node;
    if (!otfx_hash_insert(&s->node_index, hash, s->node_count, node_hash_of, s->nodes)) {
        free(node.name);
        free(node.context);
        return UINT32_MAX;
    }
    s->node_states[s->node_count] = (node_state){0, UINT32_MAX, 0, UINT32_MAX};
    return s->node_count++;
}

/* The node of (kind, name, the current context, value); UINT32_MAX when it cannot be kept. A region's
 * kind follows from its role, so (region, context, value) finds the node the region cached. */
HOT uint32_t node_of(otfx_structure *s, otfx_structure_kind kind, region_info *region, int64_t value)
{
    const uint64_t context = current_context(s);
    if (region->cached_node != UINT32_MAX && region->cached_context == context &&
        region->cached_value == value)
        return region->cached_node;
    const uint32_t node = find_or_add_node(s, kind, region, context, value);
    if (node != UINT32_MAX) {
        region->cached_node = node;
        region->cached_context = context;
        region->cached_value = value;
    }
    return node;
}

static otfx_structure_edge *edge_of(otfx_structure *s, uint32_t from, uint32_t to)
{
    const otfx_structure_edge key = {.from = from, .to = to};
    size_t at = otfx_hash_find(&s->edge_index, pair_hash(from, to), same_edge, s->edges, &key);
    if (at != OTFX_HASH_NONE)
        return &s->edges[at];
    if (s->edge_count >= OTFX_STRUCTURE_MAX_EDGES ||
        !otfx_reserve((void **)&s->edges, &s->edge_capacity, s->edge_count + 1, sizeof *s->edges, 16))
        return NULL;
    s->edges[s->edge_count] = key;
    if (!otfx_hash_insert(&s->edge_index, pair_hash(from, to), s->edge_count, edge_hash_of, s->edges))
        return NULL;
    return &s->edges[s->edge_count++];
}

/* Counts a return to `node` along sequence[0, length) (the node first); false when it cannot be kept. */
static bool count_path(otfx_structure *s, uint32_t node, const uint32_t *sequence, uint32_t length)
{
    node_state *state = &s->node_states[node];
    const path_key key = {sequence, length};
    const uint64_t hash = sequence_hash(sequence, length);
    size_t at = otfx_hash_find(&s->path_index, hash, same_path, s, &key);
    if (at != OTFX_HASH_NONE) {
        s->paths[at].count++;
        state->last_path = (uint32_t)at;
        return true;
    }
    if (s->path_count >= OTFX_STRUCTURE_MAX_PATHS ||
        !otfx_reserve((void **)&s->paths, &s->path_capacity, s->path_count + 1, sizeof *s->paths, 16) ||
        !otfx_reserve((void **)&s->path_nodes, &s->path_node_capacity, s->path_node_count + length,
                      sizeof *s->path_nodes, 64)) {
        s->untracked++;
        return false;
    }
    memcpy(s->path_nodes + s->path_node_count, sequence, length * sizeof *sequence);
    s->paths[s->path_count] = (otfx_structure_path){node, length, (uint32_t)s->path_node_count, 1};
    if (!otfx_hash_insert(&s->path_index, hash, s->path_count, path_hash_of, s)) {
        s->untracked++;
        return false;
    }
    s->path_node_count += length;
    state->last_path = s->path_count++;
    return true;
}

/* A loop mostly returns the way it did last time: the visits since position `from` are compared with
 * that path where they are, in the ring of recent visits, and counted when they match. */
HOT bool same_as_last_path(otfx_structure *s, const node_state *state, uint64_t from, uint32_t length)
{
    if (state->last_path == UINT32_MAX)
        return false;
    otfx_structure_path *previous = &s->paths[state->last_path];
    if (previous->length != length)
        return false;
    const uint32_t *nodes = s->path_nodes + previous->first;
    const uint32_t start = (uint32_t)(from % OTFX_STRUCTURE_PATH_WINDOW);
    const uint32_t before_wrap =
        OTFX_STRUCTURE_PATH_WINDOW - start < length ? OTFX_STRUCTURE_PATH_WINDOW - start : length;
    for (uint32_t i = 0; i < before_wrap; i++)
        if (nodes[i] != s->recent[start + i])
            return false;
    for (uint32_t i = before_wrap; i < length; i++)
        if (nodes[i] != s->recent[i - before_wrap])
            return false;
    previous->count++;
    return true;
}

HOT void remember_visit(otfx_structure *s, node_state *state, uint32_t node, uint64_t position)
{
    s->recent[position % OTFX_STRUCTURE_PATH_WINDOW] = node;
    state->last_visit = position + 1;
    s->visit_position++;
}

HOT void record_path(otfx_structure *s, uint32_t node)
{
    node_state *state = &s->node_states[node];
    const uint64_t last = state->last_visit;
    const uint64_t position = s->visit_position;
    if (last) {
        const uint64_t length = position - (last - 1);
        if (length > OTFX_STRUCTURE_PATH_WINDOW) {
            s->nodes[node].long_paths++;
            state->repeat_at = 0;
        } else {
            /* The visits since the node's last one, [last - 1, position), repeat the `length` before them
             * when the stream's period is `length` and has held that long; those were the node's last
             * return when it was counted at its last visit with that length (repeat_at says both). Then
             * nothing to compare. */
            bool counted = position == state->repeat_at && length == s->period && s->period_run >= length;
            if (counted) {
                s->paths[state->last_path].count++;
                state->repeat_at = position + length;
                s->period_run++; /* the period goes on: this visit is the node's last, `length` ago */
                s->fast_run++;
                remember_visit(s, state, node, position);
                return;
            }
            if (same_as_last_path(s, state, last - 1, (uint32_t)length)) {
                counted = true;
            } else {
                uint32_t sequence[OTFX_STRUCTURE_PATH_WINDOW];
                for (uint64_t i = 0; i < length; i++)
                    sequence[i] = s->recent[(last - 1 + i) % OTFX_STRUCTURE_PATH_WINDOW];
                counted = count_path(s, node, sequence, (uint32_t)length);
            }
            state->repeat_at = counted ? position + length : 0;
            if (length != s->period) {
                s->period = (uint32_t)length;
                s->period_run = 0;
            }
        }
    }
    /* a period is the length of a return, at most the position it was seen at */
    if (s->period && s->recent[(position - s->period) % OTFX_STRUCTURE_PATH_WINDOW] == node)
        s->period_run++;
    else
        s->period_run = 0;
    s->fast_run = 0;
    remember_visit(s, state, node, position);
}

/* The last `period` visits were each counted on the fast path of record_path: they are `period` distinct
 * nodes (a node's fast return is `period` long), every later visit of the one `period` before would be
 * counted there too, and the edges between them are their last edges. Goes steady when those edges are
 * kept. */
static void steady_begin(otfx_structure *s)
{
    const uint32_t period = s->period;
    for (uint32_t k = 0; k < period; k++)
        s->cycle[k].node = s->recent[(s->visit_position - period + k) % OTFX_STRUCTURE_PATH_WINDOW];
    for (uint32_t k = 0; k < period; k++) {
        const uint32_t edge = s->node_states[s->cycle[(k + period - 1) % period].node].last_edge;
        if (edge == UINT32_MAX || s->edges[edge].to != s->cycle[k].node)
            return;
        s->cycle[k].edge_in = edge;
        s->cycle[k].region = OTFX_REF_NONE;
    }
    s->steady = true;
    s->cycle_phase = s->steady_phase = 0;
    s->steady_visits = 0;
}

/* Writes what the steady visits not yet written changed, as record_path's fast path and visit would have,
 * visit by visit: per cycle entry, the count of its visits and the position of the last one. */
static void steady_write(otfx_structure *s)
{
    const uint64_t visits = s->steady_visits, start = s->visit_position;
    const uint32_t period = s->period;
    if (!visits)
        return;
    uint32_t phase = s->steady_phase;
    for (uint64_t i = 0; i < visits && i < period; i++) {
        const uint32_t node = s->cycle[phase].node;
        const uint64_t count = (visits - 1 - i) / period + 1, position = start + i + (count - 1) * period;
        node_state *state = &s->node_states[node];
        s->nodes[node].visits += count;
        s->paths[state->last_path].count += count;
        state->last_visit = position + 1;
        state->repeat_at = position + period;
        phase = phase + 1 == period ? 0 : phase + 1;
    }
    const uint64_t first = visits > OTFX_STRUCTURE_PATH_WINDOW ? visits - OTFX_STRUCTURE_PATH_WINDOW : 0;
    phase = (uint32_t)((s->steady_phase + first) % period);
    for (uint64_t i = first; i < visits; i++) {
        s->recent[(start + i) % OTFX_STRUCTURE_PATH_WINDOW] = s->cycle[phase].node;
        phase = phase + 1 == period ? 0 : phase + 1;
    }
    s->last_node = s->recent[(start + visits - 1) % OTFX_STRUCTURE_PATH_WINDOW];
    s->period_run += visits;
    s->fast_run += visits;
    s->visit_position += visits;
    s->steady_phase = s->cycle_phase;
    s->steady_visits = 0;
}

/* A steady visit of the node the cycle expects next. */
HOT void steady_step(otfx_structure *s, uint64_t time)
{
    stat_add(&s->edges[s->cycle[s->cycle_phase].edge_in].compute,
             time > s->last_end ? time - s->last_end : 0);
    s->steady_visits++;
    s->cycle_phase = s->cycle_phase + 1 == s->period ? 0 : s->cycle_phase + 1;
    s->last_end = time;
}

/* The stream reached `node` at `time`: the edge from the previous node gets the computation between. */
HOT void visit(otfx_structure *s, uint32_t node, uint64_t time)
{
    if (s->steady) {
        if (node == s->cycle[s->cycle_phase].node) {
            steady_step(s, time);
            return;
        }
        steady_write(s);
        s->steady = false;
    }
    if (node == UINT32_MAX) {
        s->untracked++;
        return;
    }
    if (s->last_node != UINT32_MAX) {
        node_state *from = &s->node_states[s->last_node];
        otfx_structure_edge *edge = NULL;
        if (from->last_edge != UINT32_MAX && s->edges[from->last_edge].to == node) {
            edge = &s->edges[from->last_edge];
        } else if ((edge = edge_of(s, s->last_node, node)) != NULL) {
            from->last_edge = (uint32_t)(edge - s->edges);
        }
        if (edge)
            stat_add(&edge->compute, time > s->last_end ? time - s->last_end : 0);
        else
            s->untracked++;
    }
    s->nodes[node].visits++;
    record_path(s, node);
    s->last_node = node;
    s->last_end = time;
    if (s->fast_run && s->fast_run >= s->period)
        steady_begin(s);
}

/* The identity of communicator `comm` across places (each place has its own refs): its name and members.
 * 0 when unknown (then no channel is kept). */
static uint64_t comm_key_of(otfx_structure *s, const otfx_defs *defs, otfx_ref comm)
{
    if (comm < s->comm_key_capacity && s->comm_keys[comm])
        return s->comm_keys[comm];
    otfx_comm_def def;
    if (comm == OTFX_REF_NONE || !defs || otfx_defs_get_comm(defs, comm, &def) != OTFX_OK || !def.name)
        return 0;
    uint64_t key = otfx_hash_mix(text_hash(def.name) ^ def.size);
    for (uint32_t i = 0; i < def.size; i++)
        key = otfx_hash_mix(key ^ def.world_ranks[i]);
    key |= 1; /* never 0 */
    if (comm >= s->comm_key_capacity) {
        const size_t known = s->comm_key_capacity;
        if (!otfx_reserve((void **)&s->comm_keys, &s->comm_key_capacity, (size_t)comm + 1,
                          sizeof *s->comm_keys, 16))
            return key;
        memset(s->comm_keys + known, 0, (s->comm_key_capacity - known) * sizeof *s->comm_keys);
    }
    s->comm_keys[comm] = key;
    return key;
}

/* The channel end of `key`; a new one begins at ordinal `seq`. */
static otfx_structure_channel *channel_of(otfx_structure *s, const channel_key *key, uint64_t seq)
{
    const uint64_t hash = channel_key_hash(key->sent, key->offset, key->comm, key->tag);
    size_t at = otfx_hash_find(&s->channel_index, hash, same_channel, s->channels, key);
    if (at != OTFX_HASH_NONE)
        return &s->channels[at];
    if (s->channel_count >= OTFX_STRUCTURE_MAX_CHANNELS ||
        !otfx_reserve((void **)&s->channels, &s->channel_capacity, s->channel_count + 1, sizeof *s->channels,
                      16))
        return NULL;
    s->channels[s->channel_count] = (otfx_structure_channel){.node = s->call_node,
                                                             .sent = key->sent,
                                                             .ordered = true,
                                                             .first_seq = seq,
                                                             .offset = key->offset,
                                                             .comm = key->comm,
                                                             .tag = key->tag};
    if (!otfx_hash_insert(&s->channel_index, hash, s->channel_count, channel_hash_of, s->channels))
        return NULL;
    return &s->channels[s->channel_count++];
}

/* A message end on its channel: its time goes into the channel's sum and tail. */
HOT void add_channel_end(otfx_structure_channel *channel, const otfx_event *event)
{
    const uint64_t seq = event->u.msg.seq;
    if (seq != channel->first_seq + channel->count || seq == 0)
        channel->ordered = false;
    const uint64_t low = channel->time_sum[0] + event->time;
    channel->time_sum[1] += low < event->time;
    channel->time_sum[0] = low;
    channel->tail[channel->count % OTFX_STRUCTURE_CHANNEL_TAIL] = event->time;
    channel->count++;
}

/* The peer entry of (the open call's node, direction, offset); OTFX_HASH_NONE when it cannot be kept. */
static size_t peer_of(otfx_structure *s, bool sent, int64_t offset)
{
    const otfx_structure_peer key = {.node = s->call_node, .sent = sent, .offset = offset};
    const uint64_t hash = peer_key_hash(key.node, key.sent, key.offset);
    size_t at = otfx_hash_find(&s->peer_index, hash, same_peer, s->peers, &key);
    if (at != OTFX_HASH_NONE)
        return at;
    if (s->peer_count >= OTFX_STRUCTURE_MAX_PEERS ||
        !otfx_reserve((void **)&s->peers, &s->peer_capacity, s->peer_count + 1, sizeof *s->peers, 16))
        return OTFX_HASH_NONE;
    s->peers[s->peer_count] = key;
    if (!otfx_hash_insert(&s->peer_index, hash, s->peer_count, peer_hash_of, s->peers))
        return OTFX_HASH_NONE;
    return s->peer_count++;
}

HOT size_t message_slot_of(uint64_t route, uint64_t origin)
{
    /* Odd multipliers: the messages that differ in one field only (tags of one call, partners of one
     * call, calls and directions of one partner) never share a slot, up to MESSAGE_SLOTS of them. The
     * communicator is left out: programs rarely send the same from one call on two. */
    return (size_t)((uint32_t)route * 11u + (uint32_t)(route >> 32) + (uint32_t)origin * 37u) &
           (MESSAGE_SLOTS - 1);
}

/* A message of the open call: its peer entry (count, bytes) and its channel end. A program sends the
 * same messages from the same calls over and over: a slot remembers the peer entry and channel of (node,
 * partner, tag, communicator, direction). */
HOT void add_message(otfx_structure *s, const otfx_defs *defs, const otfx_event *event, bool sent)
{
    if (s->call_depth == 0 || s->call_node == UINT32_MAX)
        return;
    /* node < OTFX_STRUCTURE_MAX_NODES: bit 31 is free */
    const uint64_t route = event->u.msg.peer | (uint64_t)event->u.msg.tag << 32;
    const uint64_t origin = ((uint64_t)sent | (uint64_t)s->call_node << 1 | MESSAGE_SLOT_USED) |
                            (uint64_t)event->u.msg.comm << 32;
    message_slot *slot = &s->message_slots[message_slot_of(route, origin)];
    if (slot->route == route && slot->origin == origin) {
        otfx_structure_peer *peer = &s->peers[slot->peer_entry];
        peer->count++;
        peer->bytes += event->u.msg.bytes;
        add_channel_end(&s->channels[slot->channel], event);
        return;
    }
    const int64_t offset = (int64_t)event->u.msg.peer - (int64_t)s->rank;
    const channel_key key = {sent, offset, comm_key_of(s, defs, event->u.msg.comm), event->u.msg.tag};
    otfx_structure_channel *channel = key.comm ? channel_of(s, &key, event->u.msg.seq) : NULL;
    if (channel) {
        if (channel->node != s->call_node)
            channel->mixed = true;
        add_channel_end(channel, event);
    } else {
        s->untracked++;
    }
    const size_t at = peer_of(s, sent, offset);
    if (at == OTFX_HASH_NONE) {
        s->untracked++;
        return;
    }
    s->peers[at].count++;
    s->peers[at].bytes += event->u.msg.bytes;
    if (channel)
        *slot = (message_slot){route, origin, (uint32_t)(channel - s->channels), (uint32_t)at};
}

static void request_started(otfx_structure *s, uint64_t request)
{
    if (s->call_depth == 0 || s->call_node == UINT32_MAX)
        return;
    for (size_t i = 0; i < s->request_count; i++)
        if (s->requests[i].request == request) {
            s->requests[i].node = s->call_node; /* a handle reused: the newer start counts */
            return;
        }
    if (s->request_count >= MAX_OPEN_REQUESTS ||
        !otfx_reserve((void **)&s->requests, &s->request_capacity, s->request_count + 1, sizeof *s->requests,
                      16)) {
        s->untracked++;
        return;
    }
    s->requests[s->request_count++] = (open_request){request, s->call_node};
}

static void request_completed(otfx_structure *s, uint64_t request, bool cancelled)
{
    for (size_t i = 0; i < s->request_count; i++) {
        if (s->requests[i].request != request)
            continue;
        const uint32_t start = s->requests[i].node;
        s->requests[i] = s->requests[--s->request_count];
        if (cancelled || s->call_depth == 0 || s->call_node == UINT32_MAX)
            return;
        const otfx_structure_completion key = {start, s->call_node, 0};
        const uint64_t hash = pair_hash(start, s->call_node);
        size_t at = otfx_hash_find(&s->completion_index, hash, same_completion, s->completions, &key);
        if (at == OTFX_HASH_NONE) {
            if (s->completion_count >= OTFX_STRUCTURE_MAX_EDGES ||
                !otfx_reserve((void **)&s->completions, &s->completion_capacity, s->completion_count + 1,
                              sizeof *s->completions, 16)) {
                s->untracked++;
                return;
            }
            s->completions[s->completion_count] = key;
            if (!otfx_hash_insert(&s->completion_index, hash, s->completion_count, completion_hash_of,
                                  s->completions)) {
                s->untracked++;
                return;
            }
            at = s->completion_count++;
        }
        s->completions[at].count++;
        return;
    }
}

HOT void open_call(otfx_structure *s, uint32_t node, uint64_t time)
{
    s->call_depth = ++s->depth;
    s->call_node = node;
    s->call_start = time;
}

HOT void enter(otfx_structure *s, const otfx_defs *defs, const otfx_event *event)
{
    const otfx_ref region = event->u.region.region;
    /* Nothing inside an MPI call is a node, so the frames from the call's own up are never a node's
     * context: only their depth is kept (frames [0, depth) are written whenever no call is open). */
    if (s->call_depth) {
        if (!region_of(s, defs, region))
            s->untracked++;
        s->depth++;
        return;
    }
    const uint64_t parent = current_context(s);
    if (s->steady && region == s->cycle[s->cycle_phase].region && region != OTFX_REF_NONE &&
        parent == s->cycle[s->cycle_phase].context) {
        const uint32_t node = s->cycle[s->cycle_phase].node;
        steady_step(s, event->time);
        open_call(s, node, event->time);
        return;
    }
    region_info *info = region_of(s, defs, region);
    if (info && info->is_node) {
        const uint32_t node = node_of(s, info->kind, info, 0);
        const uint32_t phase = s->cycle_phase;
        const bool expected = s->steady && node == s->cycle[phase].node;
        visit(s, node, event->time);
        if (info->kind == OTFX_STRUCTURE_MPI) {
            if (expected) {
                s->cycle[phase].region = region;
                s->cycle[phase].context = parent;
            }
            open_call(s, node, event->time);
            return;
        }
    } else if (!info) {
        s->untracked++;
    }
    if (!otfx_reserve((void **)&s->stack, &s->stack_capacity, s->depth + 1, sizeof *s->stack, 32)) {
        s->untracked++;
        return;
    }
    uint64_t context;
    if (info && info->frame_context && info->frame_parent == parent) {
        context = info->frame_context;
    } else {
        context = otfx_hash_mix(parent ^ (info ? info->name_hash : 0));
        if (info) {
            info->frame_parent = parent;
            info->frame_context = context;
        }
    }
    s->stack[s->depth++] = (frame){region, context};
}

HOT void leave(otfx_structure *s, uint64_t time)
{
    if (s->depth == 0)
        return;
    if (s->call_depth == s->depth) {
        if (s->call_node != UINT32_MAX) {
            stat_add(&s->nodes[s->call_node].time, time > s->call_start ? time - s->call_start : 0);
            s->last_end = time;
        }
        s->call_depth = 0;
    }
    s->depth--;
}

/* Every event but ENTER, LEAVE, SEND and RECV (otfx_structure_feed takes those). */
static void feed_other(otfx_structure *s, const otfx_defs *defs, const otfx_event *event)
{
    switch (event->type) {
    case OTFX_EV_ISEND:
        add_message(s, defs, event, true);
        request_started(s, event->u.msg.request);
        break;
    case OTFX_EV_IRECV:
        add_message(s, defs, event, false);
        request_completed(s, event->u.msg.request, false);
        break;
    case OTFX_EV_IRECV_REQUEST:
    case OTFX_EV_NBC_REQUEST:
        request_started(s, event->u.request.request);
        break;
    case OTFX_EV_ISEND_COMPLETE:
        request_completed(s, event->u.request.request, false);
        break;
    case OTFX_EV_REQUEST_CANCELLED:
        request_completed(s, event->u.request.request, true);
        break;
    case OTFX_EV_NBC_COMPLETE:
        request_completed(s, event->u.coll.request, false);
        break;
    case OTFX_EV_PHASE: {
        region_info *info = region_of(s, defs, event->u.phase.region);
        if (!info)
            s->untracked++;
        else if (s->call_depth == 0)
            visit(s, node_of(s, OTFX_STRUCTURE_PHASE, info, event->u.phase.value), event->time);
        break;
    }
    default:
        break;
    }
}

void structure_feed(otfx_structure *s, const otfx_defs *defs, const otfx_event *events, size_t count)
{
    if (!s || !events)
        return;
    s->events += count;
    for (const otfx_event *event = events, *end = events + count; event < end; event++) {
        /* most events enter or leave a region or carry a message: tested before the switch's table */
        const otfx_event_type type = event->type;
        if (type == OTFX_EV_ENTER)
            enter(s, defs, event);
        else if (type == OTFX_EV_LEAVE)
            leave(s, event->time);
        else if (type == OTFX_EV_SEND || type == OTFX_EV_RECV)
            add_message(s, defs, event, type == OTFX_EV_SEND);
        else
            feed_other(s, defs, event);
    }
}

void structure_settle(otfx_structure *s)
{
    if (s && s->steady)
        steady_write(s);
}

void otfx_structure_feed(otfx_structure *s, const otfx_defs *defs, const otfx_event *events, size_t count)
{
    structure_feed(s, defs, events, count);
    structure_settle(s);
}

void otfx_structure_view_get(const otfx_structure *s, otfx_structure_view *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    *out = (otfx_structure_view){.rank = s->rank,
                                 .nodes = s->nodes,
                                 .node_count = s->node_count,
                                 .edges = s->edges,
                                 .edge_count = s->edge_count,
                                 .peers = s->peers,
                                 .peer_count = s->peer_count,
                                 .completions = s->completions,
                                 .completion_count = s->completion_count,
                                 .channels = s->channels,
                                 .channel_count = s->channel_count,
                                 .paths = s->paths,
                                 .path_count = s->path_count,
                                 .path_nodes = s->path_nodes,
                                 .events = s->events,
                                 .untracked = s->untracked};
}

size_t otfx_structure_bytes(const otfx_structure *s)
{
    if (!s)
        return 0;
    size_t bytes = sizeof *s + s->node_capacity * sizeof *s->nodes + s->edge_capacity * sizeof *s->edges +
                   s->peer_capacity * sizeof *s->peers + s->completion_capacity * sizeof *s->completions +
                   s->channel_capacity * sizeof *s->channels + s->comm_key_capacity * sizeof *s->comm_keys +
                   s->path_capacity * sizeof *s->paths + s->path_node_capacity * sizeof *s->path_nodes +
                   s->node_state_capacity * sizeof *s->node_states + s->region_capacity * sizeof *s->regions +
                   s->stack_capacity * sizeof *s->stack + s->request_capacity * sizeof *s->requests +
                   (s->node_index.slot_count + s->edge_index.slot_count + s->peer_index.slot_count +
                    s->completion_index.slot_count + s->channel_index.slot_count + s->path_index.slot_count) *
                       sizeof(size_t);
    for (uint32_t i = 0; i < s->node_count; i++)
        bytes += strlen(s->nodes[i].name) + strlen(s->nodes[i].context) + 2;
    return bytes;
}

/* ---- copies ---- */

static bool copy_array(void **to, const void *from, size_t count, size_t size)
{
    *to = NULL;
    if (!count)
        return true;
    *to = malloc(count * size);
    if (!*to)
        return false;
    memcpy(*to, from, count * size);
    return true;
}

static bool copy_index(otfx_hash_index *to, const otfx_hash_index *from)
{
    *to = (otfx_hash_index){0};
    if (!copy_array((void **)&to->slots, from->slots, from->slot_count, sizeof(size_t)))
        return false;
    to->slot_count = from->slot_count;
    to->count = from->count;
    return true;
}

/* The graph of `s` (not its builder's state: the copy is read, not fed). */
otfx_structure *structure_copy(const otfx_structure *s)
{
    otfx_structure *c = otfx_structure_create(s->rank);
    if (!c)
        return NULL;
    bool ok = copy_array((void **)&c->nodes, s->nodes, s->node_count, sizeof *s->nodes);
    if (ok) {
        c->node_capacity = s->node_count;
        for (uint32_t i = 0; i < s->node_count; i++) {
            c->nodes[i].name = strdup(s->nodes[i].name);
            c->nodes[i].context = strdup(s->nodes[i].context);
            c->node_count = i + 1;
            if (!c->nodes[i].name || !c->nodes[i].context) {
                ok = false;
                break;
            }
        }
    }
    ok = ok && copy_array((void **)&c->edges, s->edges, s->edge_count, sizeof *s->edges) &&
         copy_array((void **)&c->peers, s->peers, s->peer_count, sizeof *s->peers) &&
         copy_array((void **)&c->completions, s->completions, s->completion_count, sizeof *s->completions) &&
         copy_array((void **)&c->channels, s->channels, s->channel_count, sizeof *s->channels) &&
         copy_array((void **)&c->paths, s->paths, s->path_count, sizeof *s->paths) &&
         copy_array((void **)&c->path_nodes, s->path_nodes, s->path_node_count, sizeof *s->path_nodes) &&
         copy_index(&c->node_index, &s->node_index) && copy_index(&c->edge_index, &s->edge_index) &&
         copy_index(&c->peer_index, &s->peer_index) &&
         copy_index(&c->completion_index, &s->completion_index) &&
         copy_index(&c->channel_index, &s->channel_index) && copy_index(&c->path_index, &s->path_index) &&
         copy_array((void **)&c->node_states, s->node_states, s->node_count, sizeof *s->node_states);
    if (!ok) {
        otfx_structure_destroy(c);
        return NULL;
    }
    c->edge_capacity = c->edge_count = s->edge_count;
    c->peer_capacity = c->peer_count = s->peer_count;
    c->completion_capacity = c->completion_count = s->completion_count;
    c->channel_capacity = c->channel_count = s->channel_count;
    c->path_capacity = c->path_count = s->path_count;
    c->path_node_capacity = c->path_node_count = s->path_node_count;
    c->node_state_capacity = s->node_count;
    memcpy(c->recent, s->recent, sizeof c->recent);
    c->visit_position = s->visit_position;
    c->events = s->events;
    c->untracked = s->untracked;
    return c;
}

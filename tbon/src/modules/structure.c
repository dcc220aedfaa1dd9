/* structure.c — the `structure` module: the program's structure as a parallel task activity graph with
 * process grouping (docs/analyses.md, "Program structure").
 *
 * Every trace builds its task activity graph on append (otfx/structure.h); the leaf takes the graph of
 * each selected rank's main thread (thread 0) and makes it a group of one. A group carries:
 *   shape     a hash of its nodes (kind, name, calling context, value) and edges (node pairs);
 *   rel, abs  the hashes of its members' neighbourhoods: the peers of every node per direction as offsets
 *             from the rank (rel) and as ranks (abs), so that a stencil's interior ranks share `rel` and a
 *             master's workers share `abs`;
 *   box       per edge (in the order of the edges' node keys), the lowest and highest mean computation
 *             time of its members;
 *   ranks     its members as ranges, and the graph of its lowest rank (the representative).
 * Two groups are united when they have the same shape, share a rel or an abs hash, and their boxes
 * overlap within the tolerance t in every edge: lo_a <= hi_b (1 + t) + 1 us and lo_b <= hi_a (1 + t) +
 * 1 us (times under a microsecond are noise). Uniting only ever grows hash sets and boxes, so the result
 * of uniting until no two groups qualify is the same whatever the order: the leaf does it over its
 * ranks, every merge over the union of two partial results, and the answer does not depend on the tree.
 *
 * Partial result: "STR1", u32 tolerance (ppm), u32 n, n groups sorted by representative: u64 shape,
 * u32 representative, u32 r + r (first, last) ranges, u32 + u64 rel hashes (sorted), u32 + u64 abs
 * hashes (sorted), u32 d + d (lo, hi) doubles as u64 bits, u32 length + the representative's graph
 * (graph_write below).
 *
 * Record lines (docs/protocol.md): structure, group, node, edge, peer, completion, path.
 */
#include <otfx/analysis.h>
#include <otfx/structure.h>
#include <otfx/support/growth.h>
#include <otfx/support/hash.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRUCTURE_MAGIC   0x32525453u /* "STR2" */
#define DEFAULT_TOLERANCE 20000u      /* ppm: 2 % */
#define DEFAULT_TOP_PATHS 3u
#define NOISE_FLOOR_NS    1000.0
#define MAX_GROUP_DIMS    OTFX_STRUCTURE_MAX_EDGES

typedef struct range {
    uint32_t first, last;
} range;

typedef struct group {
    uint64_t shape;
    uint32_t representative;
    range *ranges;
    uint32_t range_count;
    uint64_t *rel, *abs;
    uint32_t rel_count, abs_count;
    double *lo, *hi;
    uint32_t dims;
    unsigned char *graph;
    size_t graph_length;
} group;

typedef struct group_list {
    group *items;
    size_t count, capacity;
} group_list;

static void group_free(group *g)
{
    free(g->ranges);
    free(g->rel);
    free(g->abs);
    free(g->lo);
    free(g->hi);
    free(g->graph);
    memset(g, 0, sizeof *g);
}

static void list_free(group_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        group_free(&list->items[i]);
    free(list->items);
    memset(list, 0, sizeof *list);
}

static uint32_t tolerance_of(const otfx_command *query)
{
    return query->group_tolerance_ppm ? query->group_tolerance_ppm : DEFAULT_TOLERANCE;
}

/* The relative tolerance; negative: times do not matter (--group-tolerance inf). */
static double relative_tolerance(uint32_t ppm)
{
    return ppm == OTFX_GROUP_TOLERANCE_INF ? -1.0 : ppm / 1e6;
}

/* ---- a rank's graph → its group ---- */

static uint64_t text_hash(const char *text)
{
    uint64_t hash = UINT64_C(1469598103934665603);
    for (; *text; text++)
        hash = (hash ^ (unsigned char)*text) * UINT64_C(1099511628211);
    return otfx_hash_mix(hash);
}

static uint64_t node_key(const otfx_structure_node *node)
{
    return otfx_hash_mix(otfx_hash_mix(text_hash(node->name) ^ (uint64_t)node->kind) ^ node->context_hash) ^
           otfx_hash_mix((uint64_t)node->value + 1);
}

static int compare_u64(const void *x, const void *y)
{
    const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

typedef struct keyed_edge {
    uint64_t from, to;
    double mean;
} keyed_edge;

static int compare_keyed_edges(const void *x, const void *y)
{
    const keyed_edge *a = x, *b = y;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return a->to < b->to ? -1 : a->to > b->to;
}

typedef struct keyed_peer {
    uint64_t node;
    uint64_t sent;
    int64_t offset;
} keyed_peer;

static int compare_keyed_peers(const void *x, const void *y)
{
    const keyed_peer *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->sent != b->sent)
        return a->sent < b->sent ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static uint64_t peers_hash(uint64_t shape, const keyed_peer *peers, uint32_t count, int64_t shift)
{
    uint64_t hash = otfx_hash_mix(shape ^ (shift ? 0x5eedu : 0x7e1u));
    for (uint32_t i = 0; i < count; i++)
        hash = otfx_hash_mix(
            hash ^ otfx_hash_mix(peers[i].node ^
                                 otfx_hash_mix(peers[i].sent ^ (uint64_t)(peers[i].offset + shift))));
    return hash;
}

static void put_stat(otfx_blob *out, const otfx_structure_stat *stat)
{
    uint64_t squares;
    memcpy(&squares, &stat->sum_squares, sizeof squares);
    otfx_blob_u64(out, stat->count);
    otfx_blob_u64(out, stat->sum_ns);
    otfx_blob_u64(out, stat->min_ns);
    otfx_blob_u64(out, stat->max_ns);
    otfx_blob_u64(out, squares);
}

/* The representative's graph: u32 rank, nodes, edges, peers, completions, paths, u64 untracked. */
static void graph_write(otfx_blob *out, const otfx_structure_view *v)
{
    otfx_blob_u32(out, v->rank);
    otfx_blob_u32(out, v->node_count);
    for (uint32_t i = 0; i < v->node_count; i++) {
        const otfx_structure_node *n = &v->nodes[i];
        otfx_blob_u32(out, (uint32_t)n->kind);
        otfx_blob_u64(out, (uint64_t)n->value);
        otfx_blob_str(out, n->name);
        otfx_blob_str(out, n->context);
        otfx_blob_u64(out, n->visits);
        otfx_blob_u64(out, n->long_paths);
        put_stat(out, &n->time);
    }
    otfx_blob_u32(out, v->edge_count);
    for (uint32_t i = 0; i < v->edge_count; i++) {
        otfx_blob_u32(out, v->edges[i].from);
        otfx_blob_u32(out, v->edges[i].to);
        put_stat(out, &v->edges[i].compute);
    }
    otfx_blob_u32(out, v->peer_count);
    for (uint32_t i = 0; i < v->peer_count; i++) {
        otfx_blob_u32(out, v->peers[i].node);
        otfx_blob_u32(out, v->peers[i].sent);
        otfx_blob_u64(out, (uint64_t)v->peers[i].offset);
        otfx_blob_u64(out, v->peers[i].count);
        otfx_blob_u64(out, v->peers[i].bytes);
    }
    otfx_blob_u32(out, v->completion_count);
    for (uint32_t i = 0; i < v->completion_count; i++) {
        otfx_blob_u32(out, v->completions[i].start);
        otfx_blob_u32(out, v->completions[i].end);
        otfx_blob_u64(out, v->completions[i].count);
    }
    otfx_blob_u32(out, v->path_count);
    for (uint32_t i = 0; i < v->path_count; i++) {
        otfx_blob_u32(out, v->paths[i].anchor);
        otfx_blob_u64(out, v->paths[i].count);
        otfx_blob_u32(out, v->paths[i].length);
        for (uint32_t k = 0; k < v->paths[i].length; k++)
            otfx_blob_u32(out, v->path_nodes[v->paths[i].first + k]);
    }
    otfx_blob_u64(out, v->untracked);
}

static bool group_of_rank(const otfx_structure_view *v, group *g)
{
    memset(g, 0, sizeof *g);
    uint64_t *keys = malloc(sizeof *keys * (v->node_count + 1));
    uint64_t *sorted = malloc(sizeof *sorted * (v->node_count + 1));
    keyed_edge *edges = malloc(sizeof *edges * (v->edge_count + 1));
    keyed_peer *peers = malloc(sizeof *peers * (v->peer_count + 1));
    g->ranges = malloc(sizeof *g->ranges);
    g->rel = malloc(sizeof *g->rel);
    g->abs = malloc(sizeof *g->abs);
    g->lo = malloc(sizeof *g->lo * (v->edge_count + 1));
    g->hi = malloc(sizeof *g->hi * (v->edge_count + 1));
    otfx_blob graph = {0};
    bool ok = keys && sorted && edges && peers && g->ranges && g->rel && g->abs && g->lo && g->hi;
    if (ok) {
        for (uint32_t i = 0; i < v->node_count; i++)
            sorted[i] = keys[i] = node_key(&v->nodes[i]);
        qsort(sorted, v->node_count, sizeof *sorted, compare_u64);
        uint64_t shape = 0x5747u;
        for (uint32_t i = 0; i < v->node_count; i++)
            shape = otfx_hash_mix(shape ^ sorted[i]);
        for (uint32_t i = 0; i < v->edge_count; i++)
            edges[i] = (keyed_edge){keys[v->edges[i].from], keys[v->edges[i].to],
                                    otfx_structure_stat_mean(&v->edges[i].compute)};
        qsort(edges, v->edge_count, sizeof *edges, compare_keyed_edges);
        for (uint32_t i = 0; i < v->edge_count; i++) {
            shape = otfx_hash_mix(shape ^ otfx_hash_mix(edges[i].from ^ otfx_hash_mix(edges[i].to)));
            g->lo[i] = g->hi[i] = edges[i].mean;
        }
        for (uint32_t i = 0; i < v->peer_count; i++)
            peers[i] = (keyed_peer){keys[v->peers[i].node], v->peers[i].sent, v->peers[i].offset};
        qsort(peers, v->peer_count, sizeof *peers, compare_keyed_peers);
        g->shape = shape;
        g->dims = v->edge_count;
        g->rel[0] = peers_hash(shape, peers, v->peer_count, 0);
        g->abs[0] = peers_hash(shape, peers, v->peer_count, (int64_t)v->rank);
        g->rel_count = g->abs_count = 1;
        g->ranges[0] = (range){v->rank, v->rank};
        g->range_count = 1;
        g->representative = v->rank;
        graph_write(&graph, v);
        ok = !graph.failed;
        g->graph = graph.data;
        g->graph_length = graph.length;
    }
    free(keys);
    free(sorted);
    free(edges);
    free(peers);
    if (!ok) {
        free(graph.data);
        g->graph = NULL;
        group_free(g);
    }
    return ok;
}

/* ---- uniting groups ---- */

static bool share_hash(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
    for (uint32_t i = 0, j = 0; i < na && j < nb;) {
        if (a[i] == b[j])
            return true;
        if (a[i] < b[j])
            i++;
        else
            j++;
    }
    return false;
}

static bool unitable(const group *a, const group *b, double tolerance)
{
    if (a->shape != b->shape || a->dims != b->dims)
        return false;
    if (!share_hash(a->rel, a->rel_count, b->rel, b->rel_count) &&
        !share_hash(a->abs, a->abs_count, b->abs, b->abs_count))
        return false;
    for (uint32_t i = 0; tolerance >= 0 && i < a->dims; i++)
        if (a->lo[i] > b->hi[i] * (1 + tolerance) + NOISE_FLOOR_NS ||
            b->lo[i] > a->hi[i] * (1 + tolerance) + NOISE_FLOOR_NS)
            return false;
    return true;
}

static bool union_hashes(uint64_t **a, uint32_t *na, const uint64_t *b, uint32_t nb)
{
    uint64_t *merged = malloc(sizeof *merged * ((size_t)*na + nb));
    if (!merged)
        return false;
    uint32_t i = 0, j = 0, n = 0;
    while (i < *na || j < nb) {
        uint64_t next = j == nb || (i < *na && (*a)[i] <= b[j]) ? (*a)[i] : b[j];
        if (i < *na && (*a)[i] == next)
            i++;
        if (j < nb && b[j] == next)
            j++;
        merged[n++] = next;
    }
    free(*a);
    *a = merged;
    *na = n;
    return true;
}

static bool union_ranges(group *into, const group *other)
{
    range *merged = malloc(sizeof *merged * ((size_t)into->range_count + other->range_count));
    if (!merged)
        return false;
    uint32_t i = 0, j = 0, n = 0;
    while (i < into->range_count || j < other->range_count) {
        range next = j == other->range_count ||
                             (i < into->range_count && into->ranges[i].first <= other->ranges[j].first)
                         ? into->ranges[i++]
                         : other->ranges[j++];
        if (n > 0 && (uint64_t)merged[n - 1].last + 1 >= next.first) {
            if (next.last > merged[n - 1].last)
                merged[n - 1].last = next.last;
        } else {
            merged[n++] = next;
        }
    }
    free(into->ranges);
    into->ranges = merged;
    into->range_count = n;
    return true;
}

/* into ∪= other (other is freed). */
static bool unite(group *into, group *other)
{
    if (!union_hashes(&into->rel, &into->rel_count, other->rel, other->rel_count) ||
        !union_hashes(&into->abs, &into->abs_count, other->abs, other->abs_count) ||
        !union_ranges(into, other))
        return false;
    for (uint32_t i = 0; i < into->dims; i++) {
        if (other->lo[i] < into->lo[i])
            into->lo[i] = other->lo[i];
        if (other->hi[i] > into->hi[i])
            into->hi[i] = other->hi[i];
    }
    if (other->representative < into->representative) {
        unsigned char *graph = into->graph;
        into->graph = other->graph;
        into->graph_length = other->graph_length;
        into->representative = other->representative;
        other->graph = graph;
    }
    group_free(other);
    return true;
}

static int compare_groups(const void *x, const void *y)
{
    const group *a = x, *b = y;
    return a->representative < b->representative ? -1 : a->representative > b->representative;
}

/* Unites until no two groups qualify; then sorts them by representative. */
static bool settle(group_list *list, double tolerance)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < list->count && !changed; i++)
            for (size_t j = i + 1; j < list->count && !changed; j++)
                if (unitable(&list->items[i], &list->items[j], tolerance)) {
                    if (!unite(&list->items[i], &list->items[j]))
                        return false;
                    list->items[j] = list->items[--list->count];
                    changed = true;
                }
    }
    if (list->count)
        qsort(list->items, list->count, sizeof *list->items, compare_groups);
    return true;
}

/* ---- message channels: their two ends meet ----
 *
 * Every selected rank contributes the ends of its channels (otfx_structure_channel); a channel's two ends
 * come from two ranks, so from one place or two. Wherever both are in one list — the leaf of a place that
 * serves both ranks, or the first merge that holds both places' results — they are paired: the first m
 * messages of the channel (m the smaller count, when the larger side's tail holds the ends beyond m) had
 * the transfer time Σ receive times − Σ send times. A pair depends only on its two ends, and lists are kept
 * sorted by channel, so the bytes do not depend on the leaves, the merges' order or the tree. */

typedef struct channel_end {
    bool present;
    bool mixed, ordered;
    uint32_t node;
    uint64_t first_seq, count;
    unsigned __int128 sum; /* of the times of its `count` ends */
    uint32_t tail_count;
    uint64_t tail[OTFX_STRUCTURE_CHANNEL_TAIL]; /* newest first */
} channel_end;

typedef struct channel {
    uint32_t sender, receiver, tag;
    uint64_t comm;
    channel_end send, recv;
    bool paired;
    uint64_t timed;      /* paired: messages whose transfer time is in `transfer_ns` */
    int64_t transfer_ns; /* Σ (receive end − send start) over them */
} channel;

typedef struct channel_list {
    channel *items;
    size_t count, capacity;
} channel_list;

static uint32_t read_count(otfx_blob_reader *r, size_t item_bytes);

static bool add_channel_end(channel_list *list, uint32_t rank, const otfx_structure_channel *c)
{
    const int64_t partner = (int64_t)rank + c->offset;
    if (partner < 0 || partner > UINT32_MAX)
        return true; /* not a rank: nothing to pair with */
    if (!otfx_reserve((void **)&list->items, &list->capacity, list->count + 1, sizeof *list->items, 16))
        return false;
    channel *item = &list->items[list->count++];
    memset(item, 0, sizeof *item);
    item->sender = c->sent ? rank : (uint32_t)partner;
    item->receiver = c->sent ? (uint32_t)partner : rank;
    item->comm = c->comm;
    item->tag = c->tag;
    channel_end *end = c->sent ? &item->send : &item->recv;
    *end = (channel_end){.present = true,
                         .mixed = c->mixed,
                         .ordered = c->ordered,
                         .node = c->node,
                         .first_seq = c->first_seq,
                         .count = c->count,
                         .sum = (unsigned __int128)c->time_sum[1] << 64 | c->time_sum[0]};
    end->tail_count =
        c->count < OTFX_STRUCTURE_CHANNEL_TAIL ? (uint32_t)c->count : OTFX_STRUCTURE_CHANNEL_TAIL;
    for (uint32_t k = 0; k < end->tail_count; k++)
        end->tail[k] = c->tail[(c->count - 1 - k) % OTFX_STRUCTURE_CHANNEL_TAIL];
    return true;
}

/* The sum of the times of the end's first m ends, when its tail reaches back to m. */
static bool prefix_sum(const channel_end *end, uint64_t m, unsigned __int128 *sum)
{
    const uint64_t beyond = end->count - m;
    if (beyond > end->tail_count)
        return false;
    *sum = end->sum;
    for (uint64_t k = 0; k < beyond; k++)
        *sum -= end->tail[k];
    return true;
}

static void pair(channel *c)
{
    const uint64_t m = c->send.count < c->recv.count ? c->send.count : c->recv.count;
    unsigned __int128 sent = 0, received = 0;
    c->paired = true;
    if (m > 0 && c->send.ordered && c->recv.ordered && c->send.first_seq == c->recv.first_seq &&
        prefix_sum(&c->send, m, &sent) && prefix_sum(&c->recv, m, &received)) {
        const __int128 transfer = (__int128)(received - sent);
        c->timed = m;
        c->transfer_ns = transfer > INT64_MAX   ? INT64_MAX
                         : transfer < INT64_MIN ? INT64_MIN
                                                : (int64_t)transfer;
    }
    /* what pairing used is not needed any more: the bytes of a pair depend on its result only */
    c->send.sum = c->recv.sum = 0;
    c->send.tail_count = c->recv.tail_count = 0;
}

static int compare_channels(const void *x, const void *y)
{
    const channel *a = x, *b = y;
    if (a->sender != b->sender)
        return a->sender < b->sender ? -1 : 1;
    if (a->receiver != b->receiver)
        return a->receiver < b->receiver ? -1 : 1;
    if (a->comm != b->comm)
        return a->comm < b->comm ? -1 : 1;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    return a->send.present < b->send.present ? -1 : a->send.present > b->send.present;
}

/* Sorts the list and pairs the channels whose two ends it holds. False: an end twice (malformed). */
static bool settle_channels(channel_list *list)
{
    if (list->count == 0)
        return true;
    qsort(list->items, list->count, sizeof *list->items, compare_channels);
    size_t kept = 0;
    for (size_t i = 0; i < list->count; i++) {
        channel *c = &list->items[i];
        channel *last = kept ? &list->items[kept - 1] : NULL;
        if (last && last->sender == c->sender && last->receiver == c->receiver && last->comm == c->comm &&
            last->tag == c->tag) {
            if (last->paired || c->paired || (last->send.present && c->send.present) ||
                (last->recv.present && c->recv.present))
                return false;
            if (c->send.present)
                last->send = c->send;
            else
                last->recv = c->recv;
            pair(last);
            continue;
        }
        list->items[kept++] = *c;
    }
    list->count = kept;
    return true;
}

static void write_end(otfx_blob *out, const channel_end *end, bool paired)
{
    otfx_blob_u32(out, end->node);
    otfx_blob_u32(out, (end->mixed ? 1u : 0u) | (end->ordered ? 2u : 0u));
    otfx_blob_u64(out, end->first_seq);
    otfx_blob_u64(out, end->count);
    if (paired)
        return;
    otfx_blob_u64(out, (uint64_t)end->sum);
    otfx_blob_u64(out, (uint64_t)(end->sum >> 64));
    otfx_blob_u32(out, end->tail_count);
    for (uint32_t k = 0; k < end->tail_count; k++)
        otfx_blob_u64(out, end->tail[k]);
}

static void write_channels(otfx_blob *out, const channel_list *list)
{
    otfx_blob_u32(out, (uint32_t)list->count);
    for (size_t i = 0; i < list->count; i++) {
        const channel *c = &list->items[i];
        otfx_blob_u32(out, c->sender);
        otfx_blob_u32(out, c->receiver);
        otfx_blob_u64(out, c->comm);
        otfx_blob_u32(out, c->tag);
        otfx_blob_u32(out, (c->send.present ? 1u : 0u) | (c->recv.present ? 2u : 0u) | (c->paired ? 4u : 0u));
        if (c->send.present)
            write_end(out, &c->send, c->paired);
        if (c->recv.present)
            write_end(out, &c->recv, c->paired);
        if (c->paired) {
            otfx_blob_u64(out, c->timed);
            otfx_blob_u64(out, (uint64_t)c->transfer_ns);
        }
    }
}

static void read_end(otfx_blob_reader *r, channel_end *end, bool paired)
{
    end->present = true;
    end->node = otfx_blob_read_u32(r);
    const uint32_t flags = otfx_blob_read_u32(r);
    end->mixed = flags & 1u;
    end->ordered = flags & 2u;
    end->first_seq = otfx_blob_read_u64(r);
    end->count = otfx_blob_read_u64(r);
    if (flags > 3u)
        r->failed = true;
    if (paired)
        return;
    const uint64_t low = otfx_blob_read_u64(r), high = otfx_blob_read_u64(r);
    end->sum = (unsigned __int128)high << 64 | low;
    end->tail_count = otfx_blob_read_u32(r);
    if (end->tail_count > OTFX_STRUCTURE_CHANNEL_TAIL || end->tail_count > end->count)
        r->failed = true;
    for (uint32_t k = 0; !r->failed && k < end->tail_count; k++)
        end->tail[k] = otfx_blob_read_u64(r);
}

static bool read_channels(otfx_blob_reader *r, channel_list *list)
{
    const uint32_t count = read_count(r, 24);
    for (uint32_t i = 0; i < count && !r->failed; i++) {
        if (!otfx_reserve((void **)&list->items, &list->capacity, list->count + 1, sizeof *list->items, 16))
            return false;
        channel *c = &list->items[list->count];
        memset(c, 0, sizeof *c);
        c->sender = otfx_blob_read_u32(r);
        c->receiver = otfx_blob_read_u32(r);
        c->comm = otfx_blob_read_u64(r);
        c->tag = otfx_blob_read_u32(r);
        const uint32_t flags = otfx_blob_read_u32(r);
        c->paired = flags & 4u;
        /* one end alone, or a pair: both ends */
        if (flags > 7u || (c->paired ? (flags & 3u) != 3u : (flags & 3u) == 0 || (flags & 3u) == 3u)) {
            r->failed = true;
            break;
        }
        if (flags & 1u)
            read_end(r, &c->send, c->paired);
        if (flags & 2u)
            read_end(r, &c->recv, c->paired);
        if (c->paired) {
            c->timed = otfx_blob_read_u64(r);
            c->transfer_ns = (int64_t)otfx_blob_read_u64(r);
            if (c->timed > c->send.count || c->timed > c->recv.count)
                r->failed = true;
        }
        list->count++;
    }
    return !r->failed;
}

/* ---- partial results ---- */

static void put_double(otfx_blob *out, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    otfx_blob_u64(out, bits);
}

static double read_double(otfx_blob_reader *r)
{
    const uint64_t bits = otfx_blob_read_u64(r);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* A partial result: the groups, then the channels. */
static void write_partial(otfx_blob *out, uint32_t tolerance_ppm, const group_list *list,
                          const channel_list *channels)
{
    otfx_blob_header(out, STRUCTURE_MAGIC);
    otfx_blob_u32(out, tolerance_ppm);
    otfx_blob_u32(out, (uint32_t)list->count);
    for (size_t i = 0; i < list->count; i++) {
        const group *g = &list->items[i];
        otfx_blob_u64(out, g->shape);
        otfx_blob_u32(out, g->representative);
        otfx_blob_u32(out, g->range_count);
        for (uint32_t k = 0; k < g->range_count; k++) {
            otfx_blob_u32(out, g->ranges[k].first);
            otfx_blob_u32(out, g->ranges[k].last);
        }
        otfx_blob_u32(out, g->rel_count);
        for (uint32_t k = 0; k < g->rel_count; k++)
            otfx_blob_u64(out, g->rel[k]);
        otfx_blob_u32(out, g->abs_count);
        for (uint32_t k = 0; k < g->abs_count; k++)
            otfx_blob_u64(out, g->abs[k]);
        otfx_blob_u32(out, g->dims);
        for (uint32_t k = 0; k < g->dims; k++) {
            put_double(out, g->lo[k]);
            put_double(out, g->hi[k]);
        }
        otfx_blob_u32(out, (uint32_t)g->graph_length);
        otfx_blob_append(out, g->graph, g->graph_length);
    }
    write_channels(out, channels);
}

/* A count read from the blob, checked against the bytes left (each item at least `item_bytes`). */
static uint32_t read_count(otfx_blob_reader *r, size_t item_bytes)
{
    const uint32_t count = otfx_blob_read_u32(r);
    if (!r->failed && (size_t)count > (r->length - r->offset) / item_bytes)
        r->failed = true;
    return r->failed ? 0 : count;
}

static bool read_group(otfx_blob_reader *r, group *g)
{
    memset(g, 0, sizeof *g);
    g->shape = otfx_blob_read_u64(r);
    g->representative = otfx_blob_read_u32(r);
    g->range_count = read_count(r, 8);
    g->ranges = malloc(sizeof *g->ranges * (g->range_count + 1));
    for (uint32_t k = 0; g->ranges && k < g->range_count; k++) {
        g->ranges[k].first = otfx_blob_read_u32(r);
        g->ranges[k].last = otfx_blob_read_u32(r);
        if (g->ranges[k].first > g->ranges[k].last || (k > 0 && g->ranges[k].first <= g->ranges[k - 1].last))
            r->failed = true;
    }
    g->rel_count = read_count(r, 8);
    g->rel = malloc(sizeof *g->rel * (g->rel_count + 1));
    for (uint32_t k = 0; g->rel && k < g->rel_count; k++)
        g->rel[k] = otfx_blob_read_u64(r);
    g->abs_count = read_count(r, 8);
    g->abs = malloc(sizeof *g->abs * (g->abs_count + 1));
    for (uint32_t k = 0; g->abs && k < g->abs_count; k++)
        g->abs[k] = otfx_blob_read_u64(r);
    g->dims = read_count(r, 16);
    g->lo = malloc(sizeof *g->lo * (g->dims + 1));
    g->hi = malloc(sizeof *g->hi * (g->dims + 1));
    for (uint32_t k = 0; g->lo && g->hi && k < g->dims; k++) {
        g->lo[k] = read_double(r);
        g->hi[k] = read_double(r);
    }
    g->graph_length = read_count(r, 1);
    const void *graph = otfx_blob_read_bytes(r, g->graph_length);
    g->graph = malloc(g->graph_length + 1);
    if (graph && g->graph)
        memcpy(g->graph, graph, g->graph_length);
    bool ok = !r->failed && g->ranges && g->rel && g->abs && g->lo && g->hi && g->graph &&
              g->range_count > 0 && g->representative == g->ranges[0].first;
    for (uint32_t k = 1; ok && k < g->rel_count; k++)
        ok = g->rel[k - 1] < g->rel[k];
    for (uint32_t k = 1; ok && k < g->abs_count; k++)
        ok = g->abs[k - 1] < g->abs[k];
    if (!ok)
        group_free(g);
    return ok;
}

/* Appends the groups and channels of a partial result to `list` and `channels`; its tolerance must be
 * `tolerance_ppm`. */
static bool read_partial(const void *data, size_t length, uint32_t tolerance_ppm, group_list *list,
                         channel_list *channels)
{
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, STRUCTURE_MAGIC) || otfx_blob_read_u32(&r) != tolerance_ppm)
        return false;
    const uint32_t count = read_count(&r, 32);
    for (uint32_t i = 0; i < count && !r.failed; i++) {
        if (!otfx_reserve((void **)&list->items, &list->capacity, list->count + 1, sizeof *list->items, 8))
            return false;
        if (!read_group(&r, &list->items[list->count]))
            return false;
        list->count++;
    }
    return read_channels(&r, channels) && otfx_blob_reader_done(&r);
}

/* ---- the module ---- */

static bool structure_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out,
                           char *error, size_t error_size)
{
    group_list list = {0};
    channel_list channels = {0};
    for (size_t i = 0; i < input->trace_count; i++) {
        const uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count || (input->thread_of_trace && input->thread_of_trace[i] != 0) ||
            !otfx_rank_set_contains(&query->ranks, input->ranks[index].rank))
            continue;
        otfx_structure *graph = NULL;
        if (otfx_query_structure(input->traces[i], &graph) != OTFX_OK) {
            snprintf(error, error_size, "structure of rank %u: %s", input->ranks[index].rank,
                     otfx_last_error());
            list_free(&list);
            free(channels.items);
            return false;
        }
        otfx_structure_view view;
        otfx_structure_view_get(graph, &view);
        view.rank = input->ranks[index].rank;
        bool ok = otfx_reserve((void **)&list.items, &list.capacity, list.count + 1, sizeof *list.items, 8) &&
                  group_of_rank(&view, &list.items[list.count]);
        if (ok)
            list.count++;
        for (uint32_t k = 0; ok && k < view.channel_count; k++)
            ok = add_channel_end(&channels, view.rank, &view.channels[k]);
        otfx_structure_destroy(graph);
        if (!ok) {
            list_free(&list);
            free(channels.items);
            snprintf(error, error_size, "structure: out of memory");
            return false;
        }
    }
    const uint32_t tolerance = tolerance_of(query);
    /* a place serving both ranks of a channel pairs it here */
    if (!settle_channels(&channels)) {
        list_free(&list);
        free(channels.items);
        snprintf(error, error_size, "structure: a rank's channel end is held twice");
        return false;
    }
    bool ok = settle(&list, relative_tolerance(tolerance));
    if (ok)
        write_partial(out, tolerance, &list, &channels);
    list_free(&list);
    free(channels.items);
    if (!ok || out->failed) {
        snprintf(error, error_size,
                 out->too_large ? "structure: the result exceeds the query memory bound"
                                : "structure: out of memory");
        return false;
    }
    return true;
}

static bool structure_merge(const otfx_command *query, otfx_blob *into, const void *other,
                            size_t other_length, char *error, size_t error_size)
{
    const uint32_t tolerance = tolerance_of(query);
    group_list list = {0};
    channel_list channels = {0};
    if (!read_partial(other, other_length, tolerance, &list, &channels) ||
        (into->length > 0 && !read_partial(into->data, into->length, tolerance, &list, &channels)) ||
        !settle_channels(&channels)) {
        list_free(&list);
        free(channels.items);
        snprintf(error, error_size, "structure: malformed partial result");
        return false;
    }
    otfx_blob out = {.limit = into->limit};
    bool ok = settle(&list, relative_tolerance(tolerance));
    if (ok)
        write_partial(&out, tolerance, &list, &channels);
    list_free(&list);
    free(channels.items);
    if (!ok || out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "structure: out of memory");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

/* ---- the reply ---- */

typedef struct parsed_node {
    uint32_t kind;
    int64_t value;
    const char *name, *context;
    uint32_t name_length, context_length;
    uint64_t visits, long_paths;
    otfx_structure_stat time;
} parsed_node;

static void read_stat(otfx_blob_reader *r, otfx_structure_stat *stat)
{
    stat->count = otfx_blob_read_u64(r);
    stat->sum_ns = otfx_blob_read_u64(r);
    stat->min_ns = otfx_blob_read_u64(r);
    stat->max_ns = otfx_blob_read_u64(r);
    stat->sum_squares = read_double(r);
}

static void kv_stat(otfx_text *reply, const otfx_structure_stat *stat)
{
    otfx_kv_u64(reply, "count", stat->count);
    otfx_kv_u64(reply, "total_ns", stat->sum_ns);
    otfx_kv_u64(reply, "min_ns", stat->count ? stat->min_ns : 0);
    otfx_kv_u64(reply, "max_ns", stat->max_ns);
    otfx_kv_f64(reply, "mean_ns", otfx_structure_stat_mean(stat));
    otfx_kv_f64(reply, "stddev_ns", otfx_structure_stat_stddev(stat));
}

static const char *kind_token(uint32_t kind)
{
    return kind == OTFX_STRUCTURE_LOOP ? "loop" : kind == OTFX_STRUCTURE_PHASE ? "phase" : "mpi";
}

static void kv_ranges(otfx_text *reply, const char *key, const group *g)
{
    otfx_text text = {0};
    for (uint32_t k = 0; k < g->range_count; k++) {
        if (g->ranges[k].first == g->ranges[k].last)
            otfx_text_appendf(&text, "%s%u", k ? "," : "", g->ranges[k].first);
        else
            otfx_text_appendf(&text, "%s%u-%u", k ? "," : "", g->ranges[k].first, g->ranges[k].last);
    }
    otfx_text_append(&text, "", 1);
    otfx_kv_str(reply, key, text.failed ? "?" : text.data);
    otfx_text_free(&text);
}

static uint64_t members_of(const group *g)
{
    uint64_t members = 0;
    for (uint32_t k = 0; k < g->range_count; k++)
        members += (uint64_t)g->ranges[k].last - g->ranges[k].first + 1;
    return members;
}

/* The group holding `rank`, -1 when none (a peer outside the selection). */
static int64_t group_holding(const group_list *list, int64_t rank)
{
    for (size_t i = 0; i < list->count; i++)
        for (uint32_t k = 0; k < list->items[i].range_count; k++)
            if (rank >= list->items[i].ranges[k].first && rank <= list->items[i].ranges[k].last)
                return (int64_t)i;
    return -1;
}

/* The transfer times known for one message edge of one rank: (rank, direction, offset, node). */
typedef struct timed_edge {
    uint32_t rank, node;
    bool sent;
    int64_t offset;
    uint64_t messages;
    int64_t transfer_ns;
} timed_edge;

typedef struct timed_edges {
    timed_edge *items;
    size_t count, capacity;
} timed_edges;

static int compare_timed_edges(const void *x, const void *y)
{
    const timed_edge *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->sent != b->sent)
        return a->sent < b->sent ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static bool add_timed(timed_edges *edges, uint32_t rank, const channel_end *end, bool sent, int64_t offset,
                      const channel *c)
{
    if (end->mixed) /* its messages went through several nodes: not one edge's */
        return true;
    if (!otfx_reserve((void **)&edges->items, &edges->capacity, edges->count + 1, sizeof *edges->items, 16))
        return false;
    edges->items[edges->count++] = (timed_edge){rank, end->node, sent, offset, c->timed, c->transfer_ns};
    return true;
}

/* Per message edge of every rank, the messages whose transfer time is known and their total: the sum over
 * the edge's channels that were paired and whose end at that rank was at that node only. */
static bool timed_edges_of(const channel_list *channels, timed_edges *edges)
{
    for (size_t i = 0; i < channels->count; i++) {
        const channel *c = &channels->items[i];
        if (!c->paired || c->timed == 0)
            continue;
        const int64_t offset = (int64_t)c->receiver - (int64_t)c->sender;
        if (!add_timed(edges, c->sender, &c->send, true, offset, c) ||
            !add_timed(edges, c->receiver, &c->recv, false, -offset, c))
            return false;
    }
    if (edges->count == 0)
        return true;
    qsort(edges->items, edges->count, sizeof *edges->items, compare_timed_edges);
    size_t kept = 0;
    for (size_t i = 0; i < edges->count; i++) {
        timed_edge *last = kept ? &edges->items[kept - 1] : NULL;
        if (last && compare_timed_edges(last, &edges->items[i]) == 0) {
            last->messages += edges->items[i].messages;
            last->transfer_ns += edges->items[i].transfer_ns;
        } else {
            edges->items[kept++] = edges->items[i];
        }
    }
    edges->count = kept;
    return true;
}

static const timed_edge *timed_edge_of(const timed_edges *edges, uint32_t rank, uint32_t node, bool sent,
                                       int64_t offset)
{
    const timed_edge key = {.rank = rank, .node = node, .sent = sent, .offset = offset};
    return edges->count ? bsearch(&key, edges->items, edges->count, sizeof *edges->items, compare_timed_edges)
                        : NULL;
}

typedef struct parsed_path {
    uint32_t anchor, length;
    uint64_t count;
    uint32_t *nodes;
} parsed_path;

static int compare_paths(const void *x, const void *y)
{
    const parsed_path *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->length < b->length ? -1 : a->length > b->length;
}

static bool finish_group(const otfx_command *query, const group_list *list, const timed_edges *timed,
                         size_t index, otfx_text *reply)
{
    const group *g = &list->items[index];
    otfx_blob_reader r = otfx_blob_reader_make(g->graph, g->graph_length);
    const uint32_t rank = otfx_blob_read_u32(&r);
    const uint32_t node_count = read_count(&r, 64);
    parsed_node *nodes = calloc(node_count + 1, sizeof *nodes);
    if (!nodes)
        return false;
    for (uint32_t i = 0; i < node_count && !r.failed; i++) {
        nodes[i].kind = otfx_blob_read_u32(&r);
        nodes[i].value = (int64_t)otfx_blob_read_u64(&r);
        nodes[i].name = otfx_blob_read_str(&r, &nodes[i].name_length);
        nodes[i].context = otfx_blob_read_str(&r, &nodes[i].context_length);
        nodes[i].visits = otfx_blob_read_u64(&r);
        nodes[i].long_paths = otfx_blob_read_u64(&r);
        read_stat(&r, &nodes[i].time);
    }
    double spread = 0;
    for (uint32_t k = 0; k < g->dims; k++)
        if (g->lo[k] > 0 && (g->hi[k] - g->lo[k]) / g->lo[k] > spread)
            spread = (g->hi[k] - g->lo[k]) / g->lo[k];
    const uint32_t edge_count = read_count(&r, 48);
    otfx_kv_begin(reply, "group");
    otfx_kv_u64(reply, "group", index);
    otfx_kv_u64(reply, "members", members_of(g));
    kv_ranges(reply, "ranks", g);
    otfx_kv_u64(reply, "representative", rank);
    otfx_kv_u64(reply, "nodes", node_count);
    otfx_kv_u64(reply, "edges", edge_count);
    otfx_kv_f64(reply, "spread_pct", spread * 100.0);
    char signature[17];
    snprintf(signature, sizeof signature, "%016llx", (unsigned long long)g->shape);
    otfx_kv_str(reply, "signature", signature);
    otfx_kv_end(reply);
    uint32_t most_visited = 0;
    for (uint32_t i = 0; i < node_count && !r.failed; i++) {
        char name[512], context[512];
        snprintf(name, sizeof name, "%.*s", (int)nodes[i].name_length, nodes[i].name ? nodes[i].name : "");
        snprintf(context, sizeof context, "%.*s", (int)nodes[i].context_length,
                 nodes[i].context ? nodes[i].context : "");
        otfx_kv_begin(reply, "node");
        otfx_kv_u64(reply, "group", index);
        otfx_kv_u64(reply, "id", i);
        otfx_kv_str(reply, "kind", kind_token(nodes[i].kind));
        otfx_kv_str(reply, "name", name);
        otfx_kv_str(reply, "context", context[0] ? context : "-");
        if (nodes[i].kind == OTFX_STRUCTURE_PHASE)
            otfx_kv_i64(reply, "value", nodes[i].value);
        otfx_kv_u64(reply, "visits", nodes[i].visits);
        otfx_kv_u64(reply, "time_ns", nodes[i].time.sum_ns);
        otfx_kv_f64(reply, "time_mean_ns", otfx_structure_stat_mean(&nodes[i].time));
        otfx_kv_end(reply);
        if (nodes[i].visits > nodes[most_visited].visits)
            most_visited = i;
    }
    for (uint32_t i = 0; i < edge_count && !r.failed; i++) {
        const uint32_t from = otfx_blob_read_u32(&r), to = otfx_blob_read_u32(&r);
        otfx_structure_stat stat;
        read_stat(&r, &stat);
        otfx_kv_begin(reply, "edge");
        otfx_kv_u64(reply, "group", index);
        otfx_kv_u64(reply, "from", from);
        otfx_kv_u64(reply, "to", to);
        kv_stat(reply, &stat);
        otfx_kv_end(reply);
    }
    const uint32_t peer_count = read_count(&r, 32);
    for (uint32_t i = 0; i < peer_count && !r.failed; i++) {
        const uint32_t node = otfx_blob_read_u32(&r), sent = otfx_blob_read_u32(&r);
        const int64_t offset = (int64_t)otfx_blob_read_u64(&r);
        const uint64_t count = otfx_blob_read_u64(&r), bytes = otfx_blob_read_u64(&r);
        otfx_kv_begin(reply, "peer");
        otfx_kv_u64(reply, "group", index);
        otfx_kv_u64(reply, "node", node);
        otfx_kv_str(reply, "direction", sent ? "send" : "recv");
        otfx_kv_i64(reply, "offset", offset);
        otfx_kv_i64(reply, "peer_group", group_holding(list, (int64_t)rank + offset));
        otfx_kv_u64(reply, "count", count);
        otfx_kv_u64(reply, "bytes", bytes);
        const timed_edge *t = timed_edge_of(timed, rank, node, sent != 0, offset);
        otfx_kv_u64(reply, "transfer_count", t ? t->messages : 0);
        otfx_kv_i64(reply, "transfer_ns", t ? t->transfer_ns : 0);
        otfx_kv_f64(reply, "transfer_mean_ns", t ? (double)t->transfer_ns / (double)t->messages : 0.0);
        otfx_kv_end(reply);
    }
    const uint32_t completion_count = read_count(&r, 16);
    for (uint32_t i = 0; i < completion_count && !r.failed; i++) {
        const uint32_t start = otfx_blob_read_u32(&r), end = otfx_blob_read_u32(&r);
        const uint64_t count = otfx_blob_read_u64(&r);
        otfx_kv_begin(reply, "completion");
        otfx_kv_u64(reply, "group", index);
        otfx_kv_u64(reply, "start", start);
        otfx_kv_u64(reply, "end", end);
        otfx_kv_u64(reply, "count", count);
        otfx_kv_end(reply);
    }
    /* causal paths: those of the most visited node and of every marker, the `top` most frequent each */
    const uint32_t path_count = read_count(&r, 16);
    parsed_path *paths = calloc(path_count + 1, sizeof *paths);
    bool ok = paths != NULL;
    for (uint32_t i = 0; ok && i < path_count && !r.failed; i++) {
        paths[i].anchor = otfx_blob_read_u32(&r);
        paths[i].count = otfx_blob_read_u64(&r);
        paths[i].length = read_count(&r, 4);
        paths[i].nodes = malloc(sizeof *paths[i].nodes * (paths[i].length + 1));
        ok = paths[i].nodes != NULL;
        for (uint32_t k = 0; ok && k < paths[i].length; k++)
            paths[i].nodes[k] = otfx_blob_read_u32(&r);
    }
    otfx_blob_read_u64(&r); /* untracked: reported by the node counts' shortfall only */
    if (ok && !r.failed && path_count)
        qsort(paths, path_count, sizeof *paths, compare_paths);
    const uint32_t top = query->top ? query->top : DEFAULT_TOP_PATHS;
    for (uint32_t anchor = 0; ok && !r.failed && anchor < node_count; anchor++) {
        if (anchor != most_visited && nodes[anchor].kind == OTFX_STRUCTURE_MPI)
            continue;
        uint32_t shown = 0;
        for (uint32_t i = 0; i < path_count && shown < top; i++) {
            if (paths[i].anchor != anchor)
                continue;
            otfx_text sequence = {0};
            for (uint32_t k = 0; k < paths[i].length; k++)
                otfx_text_appendf(&sequence, "%s%u", k ? "," : "", paths[i].nodes[k]);
            otfx_text_append(&sequence, "", 1);
            otfx_kv_begin(reply, "path");
            otfx_kv_u64(reply, "group", index);
            otfx_kv_u64(reply, "anchor", anchor);
            otfx_kv_u64(reply, "count", paths[i].count);
            otfx_kv_u64(reply, "length", paths[i].length);
            otfx_kv_str(reply, "nodes", sequence.failed ? "?" : sequence.data);
            otfx_kv_end(reply);
            otfx_text_free(&sequence);
            shown++;
        }
    }
    for (uint32_t i = 0; paths && i < path_count; i++)
        free(paths[i].nodes);
    free(paths);
    free(nodes);
    return ok && !r.failed;
}

static bool structure_finish(const otfx_command *query, const void *merged, size_t length,
                             uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                             size_t error_size)
{
    const uint32_t tolerance = tolerance_of(query);
    group_list list = {0};
    channel_list channels = {0};
    timed_edges timed = {0};
    if (length > 0 && !read_partial(merged, length, tolerance, &list, &channels)) {
        list_free(&list);
        free(channels.items);
        snprintf(error, error_size, "structure: malformed result");
        return false;
    }
    uint64_t ranks = 0;
    for (size_t i = 0; i < list.count; i++)
        ranks += members_of(&list.items[i]);
    /* messages: of every channel seen, the more of its two ends' counts */
    uint64_t messages = 0, messages_timed = 0;
    for (size_t i = 0; i < channels.count; i++) {
        const channel *c = &channels.items[i];
        messages += c->send.count > c->recv.count ? c->send.count : c->recv.count;
        messages_timed += c->timed;
    }
    bool ok = timed_edges_of(&channels, &timed);
    free(channels.items);
    char selection[512];
    otfx_rank_set_format(&query->ranks, selection, sizeof selection);
    otfx_kv_begin(reply, "structure");
    otfx_kv_str(reply, "ranks", selection);
    otfx_kv_u64(reply, "selected", ranks);
    otfx_kv_u64(reply, "groups", list.count);
    if (tolerance == OTFX_GROUP_TOLERANCE_INF)
        otfx_kv_str(reply, "tolerance_pct", "inf");
    else
        otfx_kv_f64(reply, "tolerance_pct", tolerance / 1e4);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_u64(reply, "messages", messages);
    otfx_kv_u64(reply, "messages_timed", messages_timed);
    otfx_kv_end(reply);
    for (size_t i = 0; i < list.count && ok; i++)
        ok = finish_group(query, &list, &timed, i, reply);
    list_free(&list);
    free(timed.items);
    if (!ok || reply->failed) {
        snprintf(error, error_size, ok ? "structure: out of memory" : "structure: malformed graph");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_structure = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "structure",
    .help = "the program's structure: task activity graphs, process groups, causal paths (--ranks --top "
            "--group-tolerance)",
    .leaf = structure_leaf,
    .merge = structure_merge,
    .finish = structure_finish,
};

/* events.c — the `events` module: the raw events of a few ranks in a small window, for zooming in.
 *
 * Per location (rank, thread) of the selected ranks: the events of [from, to) in time order, with the
 * regions already open at `from` first (as ENTERs at their earlier enter times, otfx_query_events with
 * context), and the reduction records overlapping the window; at most `limit` (default 10000) per
 * location, flagged truncated when more existed.
 *
 * Partial result: "EVT1", u32 n, then n location blocks sorted by (rank, thread), each once: u32 rank,
 * u32 thread, u32 truncated, u32 count, then count events: u64 time, u32 type, u32 fields (bits below),
 * str name, u32 peer, u32 tag, u64 bytes, u64 value, u64 end. Merging interleaves the blocks:
 * associative and order-independent.
 *
 * Record lines of the reply:
 *   events from=T0 to=T1 ranks=SET limit=L locations=K events=E truncated=0|1 places_answered=k
 *          places_total=n
 *   location rank=R thread=T events=E truncated=0|1
 *   event rank=R thread=T time=T type=TYPE [region=NAME] [peer=P] [tag=G] [bytes=B] [seq=S] [value=V] [end=T]
 * A location line precedes its event lines. TYPE is otfx_analysis_event_token(). The optional fields:
 *   enter, leave: region;  send, recv, isend, irecv: peer tag bytes, and seq (the message's ordinal on
 *   its channel, otfx_event.u.msg.seq, in the block's value) when known;  coll_end, nbc_complete: bytes
 *   (sent + received) and peer (the root, when the operation has one), region (the communicator's
 *   name);  metric: region (the metric's name) and value (its raw 64 bits);  phase: region and value;
 *   reduction: region (the strategy), value (events removed) and end (the removed range is [time, end)).
 */
#include <otfx/analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVENTS_MAGIC  0x31545645u /* "EVT1" */
#define DEFAULT_LIMIT 10000

enum {
    HAS_REGION = 1,
    HAS_PEER = 2,
    HAS_TAG = 4,
    HAS_BYTES = 8,
    HAS_VALUE = 16,
    HAS_END = 32,
    HAS_SEQ = 64, /* the value is a message's ordinal */
    HAS_ALL = 127
};

typedef struct collect_state {
    otfx_defs *defs;
    otfx_blob *blob;
    uint32_t limit, count;
    bool truncated;
} collect_state;

static const char *region_name(otfx_defs *defs, otfx_ref ref)
{
    otfx_region_def def;
    return otfx_defs_get_region(defs, ref, &def) == OTFX_OK ? def.name : "";
}

static int collect_event(const otfx_event *event, void *user)
{
    collect_state *s = user;
    if (s->count == s->limit) {
        s->truncated = true;
        return 1;
    }
    uint32_t fields = 0, peer = 0, tag = 0;
    uint64_t bytes = 0, value = 0, end = 0;
    const char *name = "";
    switch (event->type) {
    case OTFX_EV_ENTER:
    case OTFX_EV_LEAVE:
        fields = HAS_REGION;
        name = region_name(s->defs, event->u.region.region);
        break;
    case OTFX_EV_SEND:
    case OTFX_EV_RECV:
    case OTFX_EV_ISEND:
    case OTFX_EV_IRECV:
        fields = HAS_PEER | HAS_TAG | HAS_BYTES | (event->u.msg.seq ? HAS_SEQ : 0);
        peer = event->u.msg.peer;
        tag = event->u.msg.tag;
        bytes = event->u.msg.bytes;
        value = event->u.msg.seq;
        break;
    case OTFX_EV_COLL_END:
    case OTFX_EV_NBC_COMPLETE: {
        otfx_comm_def comm;
        fields = HAS_BYTES | HAS_REGION;
        bytes = event->u.coll.sent + event->u.coll.received;
        if (otfx_defs_get_comm(s->defs, event->u.coll.comm, &comm) == OTFX_OK)
            name = comm.name;
        if (event->u.coll.root != UINT32_MAX) {
            fields |= HAS_PEER;
            peer = event->u.coll.root;
        }
        break;
    }
    case OTFX_EV_METRIC: {
        otfx_metric_def metric;
        fields = HAS_REGION | HAS_VALUE;
        if (otfx_defs_get_metric(s->defs, event->u.metric.metric, &metric) == OTFX_OK)
            name = metric.name;
        value = event->u.metric.value;
        break;
    }
    case OTFX_EV_PHASE:
        fields = HAS_REGION | HAS_VALUE;
        name = region_name(s->defs, event->u.phase.region);
        value = (uint64_t)event->u.phase.value;
        break;
    case OTFX_EV_REDUCTION:
        fields = HAS_REGION | HAS_VALUE | HAS_END;
        name = otfx_reduction_name(event->u.reduction.strategy);
        value = event->u.reduction.events_removed;
        end = event->u.reduction.end;
        break;
    default:
        break;
    }
    otfx_blob *b = s->blob;
    otfx_blob_u64(b, event->time);
    otfx_blob_u32(b, (uint32_t)event->type);
    otfx_blob_u32(b, fields);
    otfx_blob_str(b, name ? name : "");
    otfx_blob_u32(b, peer);
    otfx_blob_u32(b, tag);
    otfx_blob_u64(b, bytes);
    otfx_blob_u64(b, value);
    otfx_blob_u64(b, end);
    s->count++;
    return b->failed ? 1 : 0;
}

typedef struct location {
    uint32_t rank, thread;
    size_t trace;
} location;

static int compare_locations(const void *x, const void *y)
{
    const location *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->thread < b->thread ? -1 : a->thread > b->thread;
}

static void put_u32_at(otfx_blob *blob, size_t offset, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        blob->data[offset + (size_t)i] = (unsigned char)(value >> (8 * i));
}

static bool events_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                        size_t error_size)
{
    location *locations = input->trace_count ? malloc(sizeof *locations * input->trace_count) : NULL;
    if (input->trace_count && !locations) {
        snprintf(error, error_size, "events: out of memory");
        return false;
    }
    uint32_t n = 0;
    for (size_t i = 0; i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count || !otfx_rank_set_contains(&query->ranks, input->ranks[index].rank))
            continue;
        locations[n++] =
            (location){input->ranks[index].rank, input->thread_of_trace ? input->thread_of_trace[i] : 0, i};
    }
    if (n)
        qsort(locations, n, sizeof *locations, compare_locations);
    uint64_t collected = 0;
    otfx_blob_header(out, EVENTS_MAGIC);
    otfx_blob_u32(out, n);
    for (uint32_t i = 0; i < n && !out->failed; i++) {
        if (i > 0 && compare_locations(&locations[i - 1], &locations[i]) == 0) {
            snprintf(error, error_size, "events: two traces of rank %u thread %u", locations[i].rank,
                     locations[i].thread);
            free(locations);
            return false;
        }
        otfx_blob_u32(out, locations[i].rank);
        otfx_blob_u32(out, locations[i].thread);
        size_t header = out->length;
        otfx_blob_u32(out, 0); /* truncated and count, filled in below */
        otfx_blob_u32(out, 0);
        collect_state state = {
            .defs = input->defs, .blob = out, .limit = query->limit ? query->limit : DEFAULT_LIMIT};
        /* in pieces: a long query never holds a trace's lock for long */
        if (otfx_analysis_query_events(input->traces[locations[i].trace], query->from, query->to, true,
                                       collect_event, &state) != OTFX_OK) {
            snprintf(error, error_size, "events of rank %u: %s", locations[i].rank, otfx_last_error());
            free(locations);
            return false;
        }
        if (!out->failed) {
            put_u32_at(out, header, state.truncated);
            put_u32_at(out, header + 4, state.count);
        }
        collected += state.count;
    }
    free(locations);
    if (out->too_large) {
        snprintf(error, error_size,
                 "events: too large: more than %llu events at place %d exceed the query memory bound of %zu "
                 "bytes; narrow the window (--from/--to) or the ranks, or lower --limit",
                 (unsigned long long)collected, input->place, out->limit);
        return false;
    }
    if (out->failed) {
        snprintf(error, error_size, "events: out of memory");
        return false;
    }
    return true;
}

/* One location block of a blob, checked; `start`/`end` delimit its bytes. */
typedef struct block {
    uint32_t rank, thread, truncated, count;
    size_t start, end;
} block;

static bool skip_event(otfx_blob_reader *r)
{
    otfx_blob_read_u64(r);
    uint32_t type = otfx_blob_read_u32(r);
    uint32_t fields = otfx_blob_read_u32(r);
    otfx_blob_read_str(r, NULL);
    otfx_blob_read_bytes(r, 4 + 4 + 8 + 8 + 8);
    if (type >= OTFX_EV_TYPE_COUNT || (fields & ~(uint32_t)HAS_ALL))
        r->failed = true;
    return !r->failed;
}

static bool parse(const void *data, size_t length, block **blocks, uint32_t *count)
{
    *blocks = NULL;
    *count = 0;
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, EVENTS_MAGIC))
        return false;
    uint32_t n = otfx_blob_read_u32(&r);
    if (r.failed || n > (r.length - r.offset) / 16)
        return false;
    block *b = n ? malloc(sizeof *b * n) : NULL;
    if (n && !b)
        return false;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        b[i].start = r.offset;
        b[i].rank = otfx_blob_read_u32(&r);
        b[i].thread = otfx_blob_read_u32(&r);
        b[i].truncated = otfx_blob_read_u32(&r);
        b[i].count = otfx_blob_read_u32(&r);
        if (b[i].truncated > 1 || b[i].count > (r.length - r.offset) / 52)
            r.failed = true;
        for (uint32_t k = 0; k < b[i].count && !r.failed; k++)
            skip_event(&r);
        b[i].end = r.offset;
        if (i > 0 &&
            (b[i - 1].rank > b[i].rank || (b[i - 1].rank == b[i].rank && b[i - 1].thread >= b[i].thread)))
            r.failed = true;
    }
    if (!otfx_blob_reader_done(&r)) {
        free(b);
        return false;
    }
    *blocks = b;
    *count = n;
    return true;
}

static int compare_blocks(const block *a, const block *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->thread < b->thread ? -1 : a->thread > b->thread;
}

static bool events_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                         char *error, size_t error_size)
{
    (void)query;
    block *a = NULL, *b = NULL;
    uint32_t na = 0, nb = 0;
    if (!parse(other, other_length, &b, &nb) ||
        (into->length > 0 && !parse(into->data, into->length, &a, &na))) {
        free(b);
        snprintf(error, error_size, "events: malformed partial result");
        return false;
    }
    otfx_blob out = {.limit = into->limit}; /* the merged result is bounded like the leaves' */
    otfx_blob_header(&out, EVENTS_MAGIC);
    otfx_blob_u32(&out, na + nb);
    uint32_t i = 0, j = 0;
    bool ok = true;
    const unsigned char *other_bytes = other;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : compare_blocks(&a[i], &b[j]);
        if (c == 0) {
            ok = false; /* one location answered twice */
            break;
        }
        if (c < 0) {
            otfx_blob_append(&out, into->data + a[i].start, a[i].end - a[i].start);
            i++;
        } else {
            otfx_blob_append(&out, other_bytes + b[j].start, b[j].end - b[j].start);
            j++;
        }
    }
    free(a);
    free(b);
    if (!ok || out.failed) {
        const bool too_large = out.too_large;
        otfx_blob_free(&out);
        if (too_large)
            snprintf(
                error, error_size,
                "events: too large: the merged events exceed the query memory bound of %zu bytes; narrow "
                "the window (--from/--to) or the ranks, or lower --limit",
                into->limit);
        else
            snprintf(error, error_size, ok ? "events: out of memory" : "events: a location answered twice");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static bool events_finish(const otfx_command *query, const void *merged, size_t length,
                          uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                          size_t error_size)
{
    block *blocks = NULL;
    uint32_t n = 0;
    if (length > 0 && !parse(merged, length, &blocks, &n)) {
        snprintf(error, error_size, "events: malformed result");
        return false;
    }
    uint64_t total = 0;
    uint32_t truncated = 0;
    for (uint32_t i = 0; i < n; i++) {
        total += blocks[i].count;
        truncated |= blocks[i].truncated;
    }
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "events");
    otfx_kv_u64(reply, "from", query->from);
    otfx_kv_u64(reply, "to", query->to);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "limit", query->limit ? query->limit : DEFAULT_LIMIT);
    otfx_kv_u64(reply, "locations", n);
    otfx_kv_u64(reply, "events", total);
    otfx_kv_u64(reply, "truncated", truncated);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    char *name = NULL;
    for (uint32_t i = 0; i < n && !reply->failed; i++) {
        const block *b = &blocks[i];
        otfx_kv_begin(reply, "location");
        otfx_kv_u64(reply, "rank", b->rank);
        otfx_kv_u64(reply, "thread", b->thread);
        otfx_kv_u64(reply, "events", b->count);
        otfx_kv_u64(reply, "truncated", b->truncated);
        otfx_kv_end(reply);
        otfx_blob_reader r =
            otfx_blob_reader_make((const unsigned char *)merged + b->start, b->end - b->start);
        otfx_blob_read_bytes(&r, 16);
        for (uint32_t k = 0; k < b->count && !reply->failed; k++) {
            uint64_t time = otfx_blob_read_u64(&r);
            uint32_t type = otfx_blob_read_u32(&r);
            uint32_t fields = otfx_blob_read_u32(&r);
            uint32_t name_length;
            const char *text = otfx_blob_read_str(&r, &name_length);
            uint32_t peer = otfx_blob_read_u32(&r);
            uint32_t tag = otfx_blob_read_u32(&r);
            uint64_t bytes = otfx_blob_read_u64(&r);
            uint64_t value = otfx_blob_read_u64(&r);
            uint64_t end = otfx_blob_read_u64(&r);
            char *copy = r.failed ? NULL : realloc(name, (size_t)name_length + 1);
            if (!copy) {
                reply->failed = true;
                break;
            }
            name = copy;
            memcpy(name, text, name_length);
            name[name_length] = '\0';
            otfx_kv_begin(reply, "event");
            otfx_kv_u64(reply, "rank", b->rank);
            otfx_kv_u64(reply, "thread", b->thread);
            otfx_kv_u64(reply, "time", time);
            otfx_kv_str(reply, "type", otfx_analysis_event_token((otfx_event_type)type));
            if (fields & HAS_REGION)
                otfx_kv_str(reply, "region", name);
            if (fields & HAS_PEER)
                otfx_kv_u64(reply, "peer", peer);
            if (fields & HAS_TAG)
                otfx_kv_u64(reply, "tag", tag);
            if (fields & HAS_BYTES)
                otfx_kv_u64(reply, "bytes", bytes);
            if (fields & HAS_SEQ)
                otfx_kv_u64(reply, "seq", value);
            if (fields & HAS_VALUE)
                otfx_kv_u64(reply, "value", value);
            if (fields & HAS_END)
                otfx_kv_u64(reply, "end", end);
            otfx_kv_end(reply);
        }
    }
    free(name);
    free(blocks);
    if (!reply->failed && reply->length > OTFX_PROTOCOL_MAX_REPLY) {
        snprintf(error, error_size,
                 "events: the reply would exceed %u bytes: ask for fewer ranks, a smaller "
                 "window or a lower --limit",
                 (unsigned)OTFX_PROTOCOL_MAX_REPLY);
        return false;
    }
    if (reply->failed) {
        snprintf(error, error_size, "events: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_events = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "events",
    .help = "raw events of a few ranks in a small window (--from --to --ranks --limit, default 10000 per "
            "location)",
    .leaf = events_leaf,
    .merge = events_merge,
    .finish = events_finish,
};

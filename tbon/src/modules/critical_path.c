/* critical_path.c — the `critical-path` module: the longest CPU-time path through the program activity
 * graph of the selected ranks over [from, to) (Hollingsworth's online critical path, computed on the
 * held traces by a replay, docs/analyses.md).
 *
 * CPU time: a stream's time between consecutive events while no MPI region (role p2p, collective or
 * mpi_other) is open; time inside MPI is communication, and a message or collective hands the path over
 * with no weight of its own. The forward pass keeps per stream the path length up to its clock, the
 * zeroed length (the same path weights with the --zero function's exclusive CPU time counted as zero),
 * and, at every receive and collective completion where a remote path was longer, a node saying where
 * it came from. The path is then walked back from the stream with the longest length (across places
 * by token passing over the exchange) and cut into time per function and segments from marks the
 * forward pass kept (a function log per stream, and where its clock stood at every send, arrival and
 * node); only the intervals holding the --limit earliest segments are read again.
 *
 * With --follow the place keeps the forward pass's state (lengths, clocks, nodes, CPU time per function)
 * and its replay between rounds (follow_states.h); each round walks the path back again from the
 * longest length so far and cuts it into pieces anew.
 *
 * Partial result: "CPA2", u32 zero asked, u64 leaves, u64 length, u64 zeroed, u64 segments_total,
 * u64 walk_breaks, the follow fields (u64 round, u64 restarted, u64 events this round), u32 n then n
 * functions sorted by name (str name, u64 cp_ns, u64 cpu_ns), u32 m then m segments sorted by (start, rank,
 * thread, end, name) (u32 rank, u32 thread, u64 start, u64 end, str function), then the unseen counters.
 * Merge: max of the lengths, round and restart, sums of the times and counters, the union of the segments
 * keeping the `limit` earliest: associative and order-independent.
 */
#include "replay_support.h"

#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_MAGIC            0x32415043u /* "CPA2" */
#define CP_DEFAULT_TOP      20u
#define CP_DEFAULT_SEGMENTS 1000u
#define CP_WALK_MAGIC       0x31575043u /* "CPW1": the walk's messages between places */
#define CP_OUTSIDE          "(none)"    /* CPU time outside every region */

/* ---- the forward pass ------------------------------------------------------------------------------ */

/* Where a stream's CPU clock stands at an event, for cutting the path without reading the stream again:
 * the stream's own CPU time so far, the segments begun so far (as the path's reading would begin them:
 * a piece not contiguous with the one before or of another function name, or the first after a node),
 * and the runs of its function log. `exact`: nothing after the event's time was counted yet (an
 * arrival handed out late, at a later event, is not). */
typedef struct cp_mark {
    uint64_t own, starts;
    uint32_t runs, exact;
} cp_mark;

/* What crosses a dependency: the path to the send (or arrival) and where it is. */
typedef struct cp_value {
    uint64_t length, zeroed;
    uint64_t ordinal; /* the event's position in its stream (1-based) */
    otfx_time time;
    uint32_t rank, thread;
    cp_mark mark;
} cp_value;
_Static_assert(sizeof(cp_value) <= OTFX_REPLAY_MAX_VALUE, "a critical-path value must fit the replay's");

/* A receive or collective completion where a remote path won. */
typedef struct cp_node {
    uint64_t ordinal;
    otfx_time time;
    uint64_t origin_ordinal;
    otfx_time origin_time;
    uint32_t origin_rank, origin_thread;
    cp_mark mark, origin_mark;
    bool continues; /* its first piece continues the piece before it (same name, no gap) */
} cp_node;

typedef struct cp_interval {
    otfx_time begin, end;
    size_t node;  /* the node it begins at (SIZE_MAX: the stream's start) */
    cp_mark mark; /* where it ends */
    uint64_t segments;
    bool joins; /* its first segment continues the previous non-empty interval's last */
} cp_interval;

/* The function log: one entry per run of pieces of one function (gaps inside MPI included), in bytes:
 * the function (its reference + 1, 0 outside every region) and the stream's own CPU time from the
 * previous run's start to this one's, both as LEB128. Every CP_RUN_BLOCK runs a block says where a run's
 * entry begins and the own time at its start, so a reading starts there. */
#define CP_RUN_BLOCK 64u
typedef struct cp_block {
    uint64_t base, first, offset;
} cp_block;

typedef struct cp_stream {
    bool seen;
    uint32_t rank, thread;
    cpu_clock clock;
    uint64_t ordinal, length, zeroed;
    cp_node *nodes;
    size_t node_count, node_capacity;
    cp_interval *intervals; /* the path on this stream, from the walk */
    size_t interval_count, interval_capacity, interval_read;
    /* the CPU clock's marks (cp_mark) and function log */
    uint64_t own, starts;
    bool has_piece, force_start;
    otfx_time piece_end;
    otfx_ref piece_function;
    const char *piece_name;
    size_t pending_node; /* 1 + the node whose first piece is still to come, 0: none */
    uint8_t *log;
    size_t log_length, log_capacity, run_count;
    otfx_ref run_function; /* of the last run */
    uint64_t run_own;      /* the own time at the last run's start */
    cp_block *blocks;
    size_t block_count, block_capacity;
} cp_stream;

typedef struct cp_segment {
    uint32_t rank, thread;
    otfx_time begin, end;
    const char *name; /* not NUL-terminated when read from a blob */
    uint32_t name_length;
} cp_segment;

typedef struct cp_run {
    const otfx_command *query;
    region_facts facts;
    cp_stream *streams;
    size_t stream_capacity;
    uint64_t *cpu_by_region, *cp_by_region; /* indexed by reference; [capacity] is outside every region */
    size_t region_capacity;
    cp_segment *segments;
    size_t segment_count, segment_capacity;
    uint64_t segments_total;
    uint64_t walk_breaks; /* the walk met an origin no place holds */
    unseen_report unseen;
    bool failed;
} cp_run;

static inline cp_stream *stream_of(cp_run *run, const otfx_replay_stream *stream)
{
    cp_stream *s =
        stream_slot((void **)&run->streams, &run->stream_capacity, sizeof *run->streams, stream->index);
    if (!s) {
        run->failed = true;
        return NULL;
    }
    if (!s->seen) {
        s->seen = true;
        s->rank = stream->rank;
        s->thread = stream->thread;
        cpu_clock_init(&s->clock, run->query->from, run->query->to);
    }
    return s;
}

/* The per-region arrays grown to hold `region` (and the slot outside every region); false when out of
 * memory. */
static bool region_slots_grow(cp_run *run, otfx_ref region)
{
    size_t capacity = run->region_capacity ? run->region_capacity : 64;
    while (region != OTFX_REF_NONE && capacity <= region)
        capacity *= 2;
    uint64_t *cpu = calloc(capacity + 1, sizeof *cpu), *cp = calloc(capacity + 1, sizeof *cp);
    if (!cpu || !cp) {
        free(cpu);
        free(cp);
        run->failed = true;
        return false;
    }
    if (run->region_capacity) {
        memcpy(cpu, run->cpu_by_region, run->region_capacity * sizeof *cpu);
        memcpy(cp, run->cp_by_region, run->region_capacity * sizeof *cp);
        cpu[capacity] = run->cpu_by_region[run->region_capacity];
        cp[capacity] = run->cp_by_region[run->region_capacity];
    }
    free(run->cpu_by_region);
    free(run->cp_by_region);
    run->cpu_by_region = cpu;
    run->cp_by_region = cp;
    run->region_capacity = capacity;
    return true;
}

/* The slot of a region in the per-region arrays (the last one: outside every region). Inline: the
 * forward pass asks at every piece of CPU time. */
static inline uint64_t *region_slot(cp_run *run, uint64_t **array, otfx_ref region)
{
    if (region == OTFX_REF_NONE ? run->region_capacity == 0 : region >= run->region_capacity) {
        if (!region_slots_grow(run, region))
            return NULL;
    }
    return &(*array)[region == OTFX_REF_NONE ? run->region_capacity : region];
}

/* The name a segment of the function is listed under (pointers compare: one per name reference). */
static const char *segment_name(cp_run *run, otfx_ref function)
{
    const char *name = function == OTFX_REF_NONE ? CP_OUTSIDE : region_name(&run->facts, function);
    return name[0] ? name : CP_OUTSIDE;
}

static size_t put_leb128(uint8_t *out, uint64_t value)
{
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (uint8_t)value;
    return n;
}

static uint64_t get_leb128(const uint8_t *in, size_t *at)
{
    uint64_t value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t byte = in[(*at)++];
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            break;
    }
    return value;
}

static bool log_run(cp_stream *s, otfx_ref function)
{
    if (s->run_count % CP_RUN_BLOCK == 0) {
        if (!otfx_reserve((void **)&s->blocks, &s->block_capacity, s->block_count + 1, sizeof *s->blocks, 16))
            return false;
        s->blocks[s->block_count++] =
            (cp_block){.base = s->own, .first = s->run_count, .offset = s->log_length};
    }
    if (!otfx_reserve((void **)&s->log, &s->log_capacity, s->log_length + 20, 1, 4096))
        return false;
    s->log_length +=
        put_leb128(s->log + s->log_length, function == OTFX_REF_NONE ? 0 : (uint64_t)function + 1);
    s->log_length += put_leb128(s->log + s->log_length, s->run_count ? s->own - s->run_own : 0);
    s->run_count++;
    s->run_function = function;
    s->run_own = s->own;
    return true;
}

/* Keeps the marks and the function log up to the piece. */
static inline void mark_piece(cp_run *run, cp_stream *s, otfx_ref function, otfx_time begin, otfx_time end)
{
    if ((!s->run_count || s->run_function != function) && !log_run(s, function)) {
        run->failed = true;
        return;
    }
    s->own += end - begin;
    const char *name =
        s->has_piece && s->piece_function == function ? s->piece_name : segment_name(run, function);
    bool continues = s->has_piece && begin == s->piece_end && name == s->piece_name;
    if (s->pending_node) {
        s->nodes[s->pending_node - 1].continues = continues;
        s->pending_node = 0;
    }
    if (!continues || s->force_start)
        s->starts++;
    s->force_start = false;
    s->has_piece = true;
    s->piece_end = end;
    s->piece_function = function;
    s->piece_name = name;
}

static cp_mark mark_of(const cp_stream *s, bool exact)
{
    return (cp_mark){.own = s->own,
                     .starts = s->starts,
                     .runs = (uint32_t)s->run_count,
                     .exact = exact && s->run_count <= UINT32_MAX};
}

/* A piece of the stream's CPU time: its length, its marks, the time per function. */
static inline void forward_piece(cp_run *run, cp_stream *s, otfx_ref function, otfx_time begin, otfx_time end)
{
    uint64_t time = end - begin;
    mark_piece(run, s, function, begin, end);
    s->length += time;
    if (!region_is_zeroed(&run->facts, function))
        s->zeroed += time;
    uint64_t *slot = region_slot(run, &run->cpu_by_region, function);
    if (slot)
        *slot += time;
}

static void cp_events(void *user, otfx_replay_stream *stream, const otfx_event *events, size_t count)
{
    cp_run *run = user;
    cp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    s->ordinal += count;
    for (size_t i = 0; i < count; i++) {
        otfx_ref function;
        otfx_time begin, end;
        if (cpu_clock_piece(&s->clock, &events[i], &function, &begin, &end))
            forward_piece(run, s, function, begin, end);
        cpu_clock_apply(&s->clock, &run->facts, &events[i]);
    }
    if (s->clock.failed)
        run->failed = true;
}

static void fill_value(cp_run *run, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    cp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    cp_value v = {.length = s->length,
                  .zeroed = s->zeroed,
                  .ordinal = s->ordinal,
                  .time = event->time,
                  .rank = s->rank,
                  .thread = s->thread,
                  .mark = mark_of(s, !s->clock.started || s->clock.last <= event->time)};
    memcpy(value, &v, sizeof v);
}

static void cp_send(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    fill_value(user, stream, event, value);
}

static void cp_arrive(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    fill_value(user, stream, event, value);
}

/* The path to here is the longer of the local one and the remote one (a tie keeps the local one). */
static void merge_remote(cp_run *run, cp_stream *s, const otfx_event *event, const cp_value *remote)
{
    if (remote->zeroed > s->zeroed)
        s->zeroed = remote->zeroed;
    if (remote->length <= s->length)
        return;
    s->length = remote->length;
    if (!otfx_reserve((void **)&s->nodes, &s->node_capacity, s->node_count + 1, sizeof *s->nodes, 16)) {
        run->failed = true;
        return;
    }
    s->nodes[s->node_count++] = (cp_node){.ordinal = s->ordinal,
                                          .time = event->time,
                                          .origin_ordinal = remote->ordinal,
                                          .origin_time = remote->time,
                                          .origin_rank = remote->rank,
                                          .origin_thread = remote->thread,
                                          .mark = mark_of(s, true),
                                          .origin_mark = remote->mark};
    /* the path's reading begins a segment at a node's first piece */
    s->force_start = true;
    s->pending_node = s->node_count;
}

static void cp_receive(void *user, otfx_replay_stream *stream, const otfx_event *event, const void *value,
                       otfx_replay_missing missing)
{
    (void)missing; /* counted by the replay; the path goes on with the local part */
    cp_run *run = user;
    cp_stream *s = stream_of(run, stream);
    if (!s || !value)
        return;
    cp_value remote;
    memcpy(&remote, value, sizeof remote);
    merge_remote(run, s, event, &remote);
}

static void cp_complete(void *user, otfx_replay_stream *stream, const otfx_replay_collective *collective)
{
    cp_run *run = user;
    cp_stream *s = stream_of(run, stream);
    if (!s)
        return;
    /* the longest of the members this one depends on (lowest communicator rank on ties) */
    cp_value best = {0};
    bool any = false;
    for (uint32_t i = 0; i < collective->size; i++) {
        if (i == collective->self || !collective->value[i])
            continue;
        cp_value v;
        memcpy(&v, collective->value[i], sizeof v);
        if (!any || v.length > best.length) {
            uint64_t zeroed = any && best.zeroed > v.zeroed ? best.zeroed : v.zeroed;
            best = v;
            best.zeroed = zeroed;
        } else if (v.zeroed > best.zeroed) {
            best.zeroed = v.zeroed;
        }
        any = true;
    }
    if (any)
        merge_remote(run, s, collective->end, &best);
}

static void cp_gap(void *user, otfx_replay_stream *stream, otfx_time begin, otfx_time end,
                   otfx_replay_gap why)
{
    cp_run *run = user;
    unseen_gap(&run->unseen, stream, begin, end, why);
}

static const otfx_replay_pass cp_pass = {
    .name = "critical-path",
    .value_size = sizeof(cp_value),
    .events = cp_events,
    .send = cp_send,
    .receive = cp_receive,
    .arrive = cp_arrive,
    .complete = cp_complete,
    .gap = cp_gap,
};

static void run_free(cp_run *run)
{
    unseen_free(&run->unseen);
    for (size_t i = 0; i < run->stream_capacity; i++) {
        cpu_clock_free(&run->streams[i].clock);
        free(run->streams[i].nodes);
        free(run->streams[i].intervals);
        free(run->streams[i].log);
        free(run->streams[i].blocks);
    }
    free(run->streams);
    free(run->cpu_by_region);
    free(run->cp_by_region);
    free(run->segments);
    region_facts_free(&run->facts);
}

static void run_destroy(void *run)
{
    run_free(run);
    free(run);
}

/* ---- the walk back along the path -------------------------------------------------------------------- */

static cp_stream *find_stream(cp_run *run, uint32_t rank, uint32_t thread)
{
    for (size_t i = 0; i < run->stream_capacity; i++)
        if (run->streams[i].seen && run->streams[i].rank == rank && run->streams[i].thread == thread)
            return &run->streams[i];
    return NULL;
}

static bool add_interval(cp_stream *s, otfx_time begin, otfx_time end, size_t node, cp_mark mark)
{
    if (!otfx_reserve((void **)&s->intervals, &s->interval_capacity, s->interval_count + 1,
                      sizeof *s->intervals, 8))
        return false;
    s->intervals[s->interval_count++] = (cp_interval){.begin = begin, .end = end, .node = node, .mark = mark};
    return true;
}

typedef struct walk_position {
    uint32_t rank, thread;
    uint64_t ordinal; /* the path reaches this stream at this event (UINT64_MAX: its end) */
    otfx_time time;
    cp_mark mark; /* the stream's clock there */
} walk_position;

/* Walks the path back over this place's streams from `at`. Returns 0 when the path began here, 1 when
 * it continues on another place (*next, *next_place), -1 out of memory. */
static int walk_local(cp_run *run, const otfx_place_exchange *exchange, walk_position at, walk_position *next,
                      uint32_t *next_place)
{
    for (;;) {
        cp_stream *s = find_stream(run, at.rank, at.thread);
        if (!s) {
            run->walk_breaks++;
            return 0;
        }
        /* the latest node before the position: nodes are in stream order */
        size_t lo = 0, hi = s->node_count;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->nodes[mid].ordinal < at.ordinal)
                lo = mid + 1;
            else
                hi = mid;
        }
        const cp_node *node = lo > 0 ? &s->nodes[lo - 1] : NULL;
        if (!add_interval(s, node ? node->time : 0, at.time, node ? lo - 1 : SIZE_MAX, at.mark))
            return -1;
        if (!node)
            return 0;
        at = (walk_position){node->origin_rank, node->origin_thread, node->origin_ordinal, node->origin_time,
                             node->origin_mark};
        uint32_t place = exchange ? exchange->place_of_rank(exchange->context, at.rank) : 0;
        if (exchange && place != exchange->self) {
            if (place == UINT32_MAX || place >= exchange->place_count) {
                run->walk_breaks++;
                return 0;
            }
            *next = at;
            *next_place = place;
            return 1;
        }
    }
}

typedef struct walk_message {
    uint32_t magic, kind; /* kind: 1 walk on from here, 2 the walk is done */
    walk_position at;
} walk_message;

typedef struct walk_inbox {
    bool got;
    walk_message message;
    uint64_t ignored;
} walk_inbox;

static void on_walk_message(void *user, uint32_t from, const void *bytes, size_t length)
{
    (void)from;
    walk_inbox *inbox = user;
    walk_message m;
    if (length != sizeof m) {
        inbox->ignored++;
        return;
    }
    memcpy(&m, bytes, sizeof m);
    if (m.magic != CP_WALK_MAGIC || (m.kind != 1 && m.kind != 2)) {
        inbox->ignored++;
        return;
    }
    inbox->got = true;
    inbox->message = m;
}

static bool tell_done(const otfx_place_exchange *exchange)
{
    walk_message done = {.magic = CP_WALK_MAGIC, .kind = 2};
    for (uint32_t p = 0; p < exchange->place_count; p++)
        if (p != exchange->self && !exchange->send(exchange->context, p, &done, sizeof done))
            return false;
    return true;
}

/* Every place takes part: the one holding the path's end starts, each hands the walk to the place of the
 * next origin, the one where the path begins tells everybody it is done. All leave after a final
 * allreduce, so no place is still waiting for a walk message when another has moved on. */
static bool walk_path(cp_run *run, const otfx_place_exchange *exchange, uint64_t start_key, char *error,
                      size_t error_size)
{
    if (start_key == UINT64_MAX)
        return true; /* nothing was replayed anywhere */
    walk_position start = {
        .rank = (uint32_t)(start_key >> 32), .thread = (uint32_t)start_key, .ordinal = UINT64_MAX};
    cp_stream *own = find_stream(run, start.rank, start.thread);
    bool mine = exchange ? exchange->place_of_rank(exchange->context, start.rank) == exchange->self : true;
    bool done = false;
    walk_position next;
    uint32_t next_place;
    if (mine) {
        start.time = own ? own->clock.last : 0;
        if (own)
            start.mark = mark_of(own, true);
        int r = walk_local(run, exchange, start, &next, &next_place);
        if (r < 0) {
            snprintf(error, error_size, "critical-path: out of memory");
            return false;
        }
        if (r == 0)
            done = true;
        else {
            walk_message m = {.magic = CP_WALK_MAGIC, .kind = 1, .at = next};
            if (!exchange->send(exchange->context, next_place, &m, sizeof m))
                goto broken;
        }
        if (done && exchange && !tell_done(exchange))
            goto broken;
    }
    if (!exchange)
        return true;
    while (!done) {
        walk_inbox inbox = {0};
        int got = exchange->receive(exchange->context, 1000000000ull, on_walk_message, &inbox);
        if (got < 0)
            goto broken;
        if (!inbox.got)
            continue;
        if (inbox.message.kind == 2) {
            done = true;
            break;
        }
        int r = walk_local(run, exchange, inbox.message.at, &next, &next_place);
        if (r < 0) {
            snprintf(error, error_size, "critical-path: out of memory");
            return false;
        }
        if (r == 0) {
            done = true;
            if (!tell_done(exchange))
                goto broken;
        } else {
            walk_message m = {.magic = CP_WALK_MAGIC, .kind = 1, .at = next};
            if (!exchange->send(exchange->context, next_place, &m, sizeof m))
                goto broken;
        }
    }
    uint64_t breaks[1] = {run->walk_breaks};
    if (!exchange->allreduce(exchange->context, OTFX_EXCHANGE_SUM, breaks, 1))
        goto broken;
    return true;
broken:
    snprintf(error, error_size, "critical-path: the walk along the path between places failed: %s",
             exchange->last_error(exchange->context));
    return false;
}

/* ---- the path's pieces per function ------------------------------------------------------------------- */

static int compare_interval(const void *x, const void *y)
{
    const cp_interval *a = x, *b = y;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

typedef struct path_reader {
    cp_run *run;
    cp_stream *stream;
    cpu_clock clock;
    size_t cursor, count; /* the stream's intervals read: the first `count` */
    bool count_time;      /* add the pieces to the path's time per function */
    bool failed;
} path_reader;

static bool add_segment(cp_run *run, const cp_stream *s, otfx_ref function, otfx_time begin, otfx_time end)
{
    const char *name = segment_name(run, function);
    if (run->segment_count > 0) {
        cp_segment *last = &run->segments[run->segment_count - 1];
        if (last->rank == s->rank && last->thread == s->thread && last->end == begin && last->name == name) {
            last->end = end;
            return true;
        }
    }
    if (!otfx_reserve((void **)&run->segments, &run->segment_capacity, run->segment_count + 1,
                      sizeof *run->segments, 64))
        return false;
    run->segments[run->segment_count++] = (cp_segment){.rank = s->rank,
                                                       .thread = s->thread,
                                                       .begin = begin,
                                                       .end = end,
                                                       .name = name,
                                                       .name_length = (uint32_t)strlen(name)};
    return true;
}

static void on_path_piece(void *user, otfx_ref function, otfx_time begin, otfx_time end)
{
    path_reader *p = user;
    cp_stream *s = p->stream;
    while (p->cursor < p->count && s->intervals[p->cursor].end <= begin)
        p->cursor++;
    for (size_t i = p->cursor; i < p->count && s->intervals[i].begin < end; i++) {
        otfx_time a = begin > s->intervals[i].begin ? begin : s->intervals[i].begin;
        otfx_time b = end < s->intervals[i].end ? end : s->intervals[i].end;
        if (a >= b)
            continue;
        uint64_t *slot = p->count_time ? region_slot(p->run, &p->run->cp_by_region, function) : NULL;
        if (slot)
            *slot += b - a;
        if (!add_segment(p->run, s, function, a, b))
            p->failed = true;
    }
}

/* Events per call of the reader while reading the path's pieces. */
#define CP_PATH_SLICE 4096u

/* Reads [from, to) of a stream on the path with the context, cutting the pieces at its intervals. */
static otfx_status read_path_range(cp_run *run, cp_stream *s, otfx_trace *trace, otfx_time from, otfx_time to,
                                   size_t first_interval, size_t interval_count, bool count_time,
                                   otfx_event *events, bool *failed)
{
    path_reader reader = {
        .run = run, .stream = s, .cursor = first_interval, .count = interval_count, .count_time = count_time};
    cpu_clock_init(&reader.clock, from, run->query->to);
    otfx_trace_reader *events_reader;
    otfx_status status = otfx_trace_reader_open(trace, from, to, true, &events_reader);
    size_t count = CP_PATH_SLICE;
    while (status == OTFX_OK && count == CP_PATH_SLICE && !reader.failed && !reader.clock.failed) {
        status = otfx_trace_reader_next(events_reader, events, CP_PATH_SLICE, &count);
        for (size_t i = 0; i < count && !reader.failed && !reader.clock.failed; i++)
            cpu_clock_event(&reader.clock, &run->facts, &events[i], on_path_piece, &reader);
    }
    otfx_trace_reader_close(events_reader);
    *failed = reader.failed || reader.clock.failed;
    cpu_clock_free(&reader.clock);
    return status;
}

/* Reads each stream on the path again over the parts of the window the path covers: intervals close
 * together in one read, one read per group apart by more than a few chunks (a read starting at an
 * interval decodes the chunk before it from its start). `whole`: every interval, and the path's time
 * per function with the segments; else only the first interval_read of each stream (sorted), for their
 * segments. */
static bool read_path(cp_run *run, otfx_trace *const *traces, const otfx_leaf_input *input, bool whole,
                      char *error, size_t error_size)
{
    otfx_event *events = malloc(CP_PATH_SLICE * sizeof *events);
    if (!events) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    bool ok = true;
    for (size_t t = 0; t < input->trace_count && ok; t++) {
        uint32_t index = input->rank_of_trace[t];
        if (index >= input->rank_count)
            continue;
        cp_stream *s = find_stream(run, input->ranks[index].rank,
                                   input->thread_of_trace ? input->thread_of_trace[t] : 0);
        size_t count = !s ? 0 : whole ? s->interval_count : s->interval_read;
        if (!count)
            continue;
        if (whole)
            qsort(s->intervals, s->interval_count, sizeof *s->intervals, compare_interval);
        /* a gap worth a read of its own: a few chunks' time */
        otfx_time gap = OTFX_TIME_MAX;
        otfx_trace_status held;
        if (otfx_trace_status_get(traces[t], &held) == OTFX_OK && held.chunks > 0 &&
            held.last_time > held.first_time)
            gap = (held.last_time - held.first_time) / held.chunks * 4;
        for (size_t i = 0; i < count && ok;) {
            otfx_time begin = s->intervals[i].begin, end = s->intervals[i].end;
            size_t next = i + 1;
            while (next < count &&
                   (s->intervals[next].begin <= end || s->intervals[next].begin - end <= gap)) {
                if (s->intervals[next].end > end)
                    end = s->intervals[next].end;
                next++;
            }
            /* the clock starts at the first event at or after `begin`: a node's time, or the window's
             * start, so the pieces are the forward pass's */
            otfx_time from = begin > run->query->from ? begin : run->query->from;
            otfx_time to = end < run->query->to ? end + 1 : run->query->to;
            bool failed = false;
            otfx_status status =
                read_path_range(run, s, traces[t], from, to, i, count, whole, events, &failed);
            if (failed || run->failed) {
                snprintf(error, error_size, "critical-path: out of memory");
                ok = false;
            } else if (status != OTFX_OK) {
                snprintf(error, error_size, "critical-path: reading rank %u: %s", s->rank, otfx_last_error());
                ok = false;
            }
            i = next;
        }
    }
    free(events);
    return ok;
}

/* A reading of a stream's function log: run `run`, its function and the own time at its start. */
typedef struct log_cursor {
    const cp_stream *stream;
    size_t at, run;
    otfx_ref function;
    uint64_t start;
} log_cursor;

static void log_next(log_cursor *c)
{
    uint64_t function = get_leb128(c->stream->log, &c->at);
    c->function = function ? (otfx_ref)(function - 1) : OTFX_REF_NONE;
    c->start += get_leb128(c->stream->log, &c->at);
    c->run++;
}

/* A cursor at run r (< run_count). */
static log_cursor log_seek(const cp_stream *s, size_t r)
{
    size_t lo = 0, hi = s->block_count;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->blocks[mid].first <= r)
            lo = mid;
        else
            hi = mid;
    }
    log_cursor c = {.stream = s, .at = s->blocks[lo].offset, .run = s->blocks[lo].first - 1};
    log_next(&c);
    c.start = s->blocks[lo].base;
    while (c.run < r)
        log_next(&c);
    return c;
}

/* Adds the stream's CPU time per function between two marks to the path's. False when the marks do
 * not fit together. */
static bool add_between(cp_run *run, const cp_stream *s, cp_mark a, cp_mark b)
{
    if (b.own == a.own)
        return true;
    if (!b.runs || b.runs > s->run_count || (!a.runs && a.own))
        return false;
    uint64_t at = a.own;
    log_cursor c = log_seek(s, a.runs ? a.runs - 1 : 0);
    for (;;) {
        otfx_ref function = c.function;
        bool last = c.run + 1 >= b.runs;
        if (!last)
            log_next(&c);
        uint64_t until = last ? b.own : c.start;
        if (until < at)
            return false;
        if (until > at) {
            uint64_t *slot = region_slot(run, &run->cp_by_region, function);
            if (!slot)
                return false;
            *slot += until - at;
        }
        at = until;
        if (last)
            return true;
    }
}

/* The path's time per function and its segment count from the marks at its intervals' ends, without
 * reading the streams: an interval's time is the difference of the stream's function log between its
 * ends, its segments the difference of the segments begun (its first piece begins one), less one when
 * its first segment continues the last one of the stream's previous non-empty interval (touching, same
 * name). False when a mark is not exact. */
static bool cut_from_marks(cp_run *run)
{
    run->segments_total = 0;
    for (size_t i = 0; i < run->stream_capacity; i++) {
        cp_stream *s = &run->streams[i];
        if (!s->seen || !s->interval_count)
            continue;
        qsort(s->intervals, s->interval_count, sizeof *s->intervals, compare_interval);
        bool previous = false;
        otfx_time previous_end = 0;
        for (size_t k = 0; k < s->interval_count; k++) {
            cp_interval *v = &s->intervals[k];
            const cp_node *node = v->node == SIZE_MAX ? NULL : &s->nodes[v->node];
            cp_mark a = node ? node->mark : (cp_mark){.exact = 1};
            cp_mark b = v->mark;
            if (!a.exact || !b.exact || b.own < a.own || b.starts < a.starts || b.runs < a.runs ||
                !add_between(run, s, a, b))
                return false;
            v->segments = b.starts - a.starts;
            v->joins = v->segments && node && node->continues && previous && previous_end == v->begin;
            if (v->segments) {
                run->segments_total += v->segments - v->joins;
                previous = true;
                previous_end = v->end;
            }
        }
    }
    return true;
}

static int compare_segment(const void *x, const void *y);
static uint32_t segment_limit(const otfx_command *query);

typedef struct interval_start {
    otfx_time begin;
    uint64_t segments;
} interval_start;

static int compare_interval_start(const void *x, const void *y)
{
    const interval_start *a = x, *b = y;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* The `limit` earliest segments of the path: the intervals beginning up to a time read again, the time
 * raised until no interval left out begins at or before the limit-th earliest segment read (a segment
 * begins no earlier than its interval), each stream's last interval read followed into the next ones
 * its last segment continues into. */
static bool list_earliest(cp_run *run, otfx_trace *const *traces, const otfx_leaf_input *input,
                          uint32_t limit, char *error, size_t error_size)
{
    size_t n = 0;
    for (size_t i = 0; i < run->stream_capacity; i++)
        if (run->streams[i].seen)
            n += run->streams[i].interval_count;
    interval_start *starts = n ? malloc(n * sizeof *starts) : NULL;
    if (n && !starts) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    n = 0;
    for (size_t i = 0; i < run->stream_capacity; i++) {
        const cp_stream *s = &run->streams[i];
        for (size_t k = 0; s->seen && k < s->interval_count; k++)
            if (s->intervals[k].segments)
                starts[n++] = (interval_start){s->intervals[k].begin, s->intervals[k].segments};
    }
    if (n)
        qsort(starts, n, sizeof *starts, compare_interval_start);
    size_t taken = 0;
    uint64_t sum = 0;
    while (taken < n && sum < limit)
        sum += starts[taken++].segments;
    otfx_time until = taken ? starts[taken - 1].begin : 0;
    bool ok = true;
    while (n && ok) {
        bool all = true;
        otfx_time next_begin = OTFX_TIME_MAX;
        for (size_t i = 0; i < run->stream_capacity; i++) {
            cp_stream *s = &run->streams[i];
            if (!s->seen)
                continue;
            size_t read = 0;
            while (read < s->interval_count && s->intervals[read].begin <= until)
                read++;
            for (;;) {
                size_t next = read;
                while (next < s->interval_count && !s->intervals[next].segments)
                    next++;
                if (next == s->interval_count || !s->intervals[next].joins)
                    break;
                read = next + 1;
            }
            s->interval_read = read;
            for (size_t k = read; k < s->interval_count; k++)
                if (s->intervals[k].segments) {
                    all = false;
                    if (s->intervals[k].begin < next_begin)
                        next_begin = s->intervals[k].begin;
                    break;
                }
        }
        run->segment_count = 0;
        ok = read_path(run, traces, input, false, error, error_size);
        if (!ok || all)
            break;
        if (run->segment_count >= limit) {
            qsort(run->segments, run->segment_count, sizeof *run->segments, compare_segment);
            otfx_time last = run->segments[limit - 1].begin;
            if (next_begin > last)
                break;
            until = last;
        } else {
            /* fewer than counted (segments joined): take more intervals */
            while (taken < n && starts[taken].begin <= next_begin)
                sum += starts[taken++].segments;
            while (taken < n && sum < (uint64_t)limit * 2)
                sum += starts[taken++].segments;
            until = taken ? starts[taken - 1].begin : next_begin;
            if (until < next_begin)
                until = next_begin;
        }
    }
    free(starts);
    return ok;
}

/* Cuts the path walked into the time per function and the segments: from the marks when every end has
 * an exact one, listing the earliest segments from a read of the first intervals only; else by reading
 * every interval again. */
static bool cut_path(cp_run *run, const otfx_command *query, otfx_trace *const *traces,
                     const otfx_leaf_input *input, char *error, size_t error_size)
{
    if (cut_from_marks(run) && !run->failed)
        return list_earliest(run, traces, input, segment_limit(query), error, error_size);
    if (run->failed) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    if (run->cp_by_region)
        memset(run->cp_by_region, 0, (run->region_capacity + 1) * sizeof *run->cp_by_region);
    run->segment_count = 0;
    if (!read_path(run, traces, input, true, error, error_size))
        return false;
    run->segments_total = run->segment_count;
    return true;
}

/* ---- partial results ---------------------------------------------------------------------------------- */

typedef struct cp_function {
    const char *name;
    uint32_t name_length;
    uint64_t cp, cpu;
} cp_function;

typedef struct cp_parsed {
    uint32_t zero_asked;
    uint64_t leaves, length, zeroed, segments_total, walk_breaks;
    follow_fields follow;
    uint32_t function_count, segment_count;
    cp_function *functions;
    cp_segment *segments;
    unseen_report unseen;
} cp_parsed;

static int compare_function(const void *x, const void *y)
{
    const cp_function *a = x, *b = y;
    return name_compare(a->name, a->name_length, b->name, b->name_length);
}

static int compare_segment(const void *x, const void *y)
{
    const cp_segment *a = x, *b = y;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return name_compare(a->name, a->name_length, b->name, b->name_length);
}

static uint32_t segment_limit(const otfx_command *query)
{
    return query->limit ? query->limit : CP_DEFAULT_SEGMENTS;
}

static void write_parsed(otfx_blob *out, const cp_parsed *p)
{
    otfx_blob_header(out, CP_MAGIC);
    otfx_blob_u32(out, p->zero_asked);
    otfx_blob_u64(out, p->leaves);
    otfx_blob_u64(out, p->length);
    otfx_blob_u64(out, p->zeroed);
    otfx_blob_u64(out, p->segments_total);
    otfx_blob_u64(out, p->walk_breaks);
    follow_fields_write(out, &p->follow);
    otfx_blob_u32(out, p->function_count);
    for (uint32_t i = 0; i < p->function_count; i++) {
        otfx_blob_u32(out, p->functions[i].name_length);
        otfx_blob_append(out, p->functions[i].name, p->functions[i].name_length);
        otfx_blob_u64(out, p->functions[i].cp);
        otfx_blob_u64(out, p->functions[i].cpu);
    }
    otfx_blob_u32(out, p->segment_count);
    for (uint32_t i = 0; i < p->segment_count; i++) {
        const cp_segment *s = &p->segments[i];
        otfx_blob_u32(out, s->rank);
        otfx_blob_u32(out, s->thread);
        otfx_blob_u64(out, s->begin);
        otfx_blob_u64(out, s->end);
        otfx_blob_u32(out, s->name_length);
        otfx_blob_append(out, s->name, s->name_length);
    }
    unseen_write(out, &p->unseen);
}

static bool parse(const void *data, size_t length, cp_parsed *p)
{
    memset(p, 0, sizeof *p);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, CP_MAGIC))
        return false;
    p->zero_asked = otfx_blob_read_u32(&r);
    p->leaves = otfx_blob_read_u64(&r);
    p->length = otfx_blob_read_u64(&r);
    p->zeroed = otfx_blob_read_u64(&r);
    p->segments_total = otfx_blob_read_u64(&r);
    p->walk_breaks = otfx_blob_read_u64(&r);
    follow_fields_read(&r, &p->follow);
    uint32_t n = otfx_blob_read_u32(&r);
    if (r.failed || p->zero_asked > 1 || p->zeroed > p->length || n > (r.length - r.offset) / 20)
        return false;
    p->functions = n ? calloc(n, sizeof *p->functions) : NULL;
    if (n && !p->functions)
        return false;
    p->function_count = n;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        cp_function *f = &p->functions[i];
        f->name = otfx_blob_read_str(&r, &f->name_length);
        f->cp = otfx_blob_read_u64(&r);
        f->cpu = otfx_blob_read_u64(&r);
        if (i > 0 && compare_function(&p->functions[i - 1], f) >= 0)
            r.failed = true;
    }
    uint32_t m = r.failed ? 0 : otfx_blob_read_u32(&r);
    if (r.failed || m > (r.length - r.offset) / 28) {
        free(p->functions);
        return false;
    }
    p->segments = m ? calloc(m, sizeof *p->segments) : NULL;
    if (m && !p->segments) {
        free(p->functions);
        return false;
    }
    p->segment_count = m;
    for (uint32_t i = 0; i < m && !r.failed; i++) {
        cp_segment *s = &p->segments[i];
        s->rank = otfx_blob_read_u32(&r);
        s->thread = otfx_blob_read_u32(&r);
        s->begin = otfx_blob_read_u64(&r);
        s->end = otfx_blob_read_u64(&r);
        s->name = otfx_blob_read_str(&r, &s->name_length);
        if (s->end < s->begin || (i > 0 && compare_segment(&p->segments[i - 1], s) >= 0))
            r.failed = true;
    }
    if (!r.failed)
        unseen_read(&r, &p->unseen);
    if (!otfx_blob_reader_done(&r)) {
        free(p->functions);
        free(p->segments);
        unseen_free(&p->unseen);
        memset(p, 0, sizeof *p);
        return false;
    }
    return true;
}

/* This place's partial result from the forward pass's state in `run` (after a replay's run): the path
 * walked back from the longest length and cut into pieces. The walk's results are made anew each time,
 * the forward pass's state is left as it is (a follow's next round goes on from it). */
static bool cp_answer(void *user, const otfx_command *query, const otfx_leaf_input *input,
                      const otfx_replay_stats *stats, const follow_fields *follow, otfx_blob *out,
                      char *error, size_t error_size)
{
    cp_run *run = user;
    if (run->failed || run->facts.failed) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    for (size_t i = 0; i < run->stream_capacity; i++)
        run->streams[i].interval_count = 0;
    run->segment_count = 0;
    run->walk_breaks = 0;
    if (run->cp_by_region)
        memset(run->cp_by_region, 0, (run->region_capacity + 1) * sizeof *run->cp_by_region);
    /* the path ends where the longest length does: the lowest (rank, thread) on ties, on every place */
    uint64_t best[2] = {0, 0}; /* length, zeroed */
    uint64_t key = UINT64_MAX;
    for (size_t i = 0; i < run->stream_capacity; i++) {
        const cp_stream *s = &run->streams[i];
        if (!s->seen)
            continue;
        uint64_t k = (uint64_t)s->rank << 32 | s->thread;
        if (s->length > best[0] || (s->length == best[0] && k < key)) {
            best[0] = s->length;
            key = k;
        }
        if (s->zeroed > best[1])
            best[1] = s->zeroed;
    }
    const otfx_place_exchange *exchange = input->exchange;
    if (exchange) {
        uint64_t global[2] = {best[0], best[1]};
        if (!exchange->allreduce(exchange->context, OTFX_EXCHANGE_MAX, global, 2)) {
            snprintf(error, error_size, "critical-path: exchange: %s",
                     exchange->last_error(exchange->context));
            return false;
        }
        uint64_t start[1] = {best[0] == global[0] ? key : UINT64_MAX};
        if (!exchange->allreduce(exchange->context, OTFX_EXCHANGE_MIN, start, 1)) {
            snprintf(error, error_size, "critical-path: exchange: %s",
                     exchange->last_error(exchange->context));
            return false;
        }
        best[0] = global[0];
        best[1] = global[1];
        key = start[0];
    }
    if (!walk_path(run, exchange, key, error, error_size) ||
        !cut_path(run, query, input->traces, input, error, error_size)) {
        return false;
    }

    /* functions by name: a name may have several references (one per role) */
    size_t slots = run->region_capacity ? run->region_capacity + 1 : 0;
    cp_function *functions = slots ? calloc(slots, sizeof *functions) : NULL;
    if (slots && !functions) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    uint32_t n = 0;
    for (size_t i = 0; i < slots; i++) {
        uint64_t cp = run->cp_by_region[i], cpu = run->cpu_by_region[i];
        if (!cp && !cpu)
            continue;
        const char *name = i == run->region_capacity ? CP_OUTSIDE : region_name(&run->facts, (otfx_ref)i);
        if (!name[0])
            name = CP_OUTSIDE;
        functions[n++] = (cp_function){name, (uint32_t)strlen(name), cp, cpu};
    }
    if (n)
        qsort(functions, n, sizeof *functions, compare_function);
    uint32_t unique = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (unique && compare_function(&functions[unique - 1], &functions[i]) == 0) {
            functions[unique - 1].cp += functions[i].cp;
            functions[unique - 1].cpu += functions[i].cpu;
        } else {
            functions[unique++] = functions[i];
        }
    }
    if (run->segment_count)
        qsort(run->segments, run->segment_count, sizeof *run->segments, compare_segment);
    uint32_t limit = segment_limit(query);
    cp_parsed p = {
        .zero_asked = query->zero[0] != '\0',
        .leaves = 1,
        .length = best[0],
        .zeroed = query->zero[0] ? best[1] : best[0],
        .segments_total = run->segments_total,
        .walk_breaks = run->walk_breaks,
        .function_count = unique,
        .segment_count = run->segment_count < limit ? (uint32_t)run->segment_count : limit,
        .functions = functions,
        .segments = run->segments,
    };
    p.follow = *follow;
    /* the ranges the run met so far (kept for the next round of a follow), and how fresh the held data
     * is now */
    bool unseen_ok = unseen_add(&p.unseen, &run->unseen) && unseen_record_held(&p.unseen, query, input);
    unseen_from_stats(&p.unseen, stats);
    write_parsed(out, &p);
    const bool unseen_failed = p.unseen.failed;
    unseen_free(&p.unseen);
    free(functions);
    if (!unseen_ok || unseen_failed) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    if (out->failed) {
        snprintf(error, error_size, "critical-path: %s",
                 out->too_large ? "result too large" : "out of memory");
        return false;
    }
    return true;
}

static void *cp_run_create(const otfx_command *query, const otfx_leaf_input *input)
{
    cp_run *run = calloc(1, sizeof *run);
    if (run) {
        run->query = query;
        region_facts_init(&run->facts, input->defs, query->zero);
    }
    return run;
}

static const replay_module cp_module = {
    .pass = &cp_pass, .run_create = cp_run_create, .run_destroy = run_destroy, .answer = cp_answer};

static bool cp_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                    size_t error_size)
{
    return replay_leaf(&cp_module, query, input, out, error, error_size);
}

static bool cp_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                     char *error, size_t error_size)
{
    cp_parsed a = {0}, b;
    if (!parse(other, other_length, &b) || (into->length > 0 && !parse(into->data, into->length, &a))) {
        snprintf(error, error_size, "critical-path: malformed partial result");
        return false;
    }
    cp_parsed m = {
        .zero_asked = a.zero_asked | b.zero_asked,
        .leaves = a.leaves + b.leaves,
        .length = a.length > b.length ? a.length : b.length,
        .zeroed = a.zeroed > b.zeroed ? a.zeroed : b.zeroed,
        .segments_total = a.segments_total + b.segments_total,
        .walk_breaks = a.walk_breaks + b.walk_breaks,
        .follow = a.follow,
    };
    follow_fields_merge(&m.follow, &b.follow);
    m.unseen = a.unseen;
    a.unseen = (unseen_report){0};
    const bool unseen_ok = unseen_add(&m.unseen, &b.unseen);
    size_t fn = (size_t)a.function_count + b.function_count, sn = (size_t)a.segment_count + b.segment_count;
    m.functions = fn ? malloc(fn * sizeof *m.functions) : NULL;
    m.segments = sn ? malloc(sn * sizeof *m.segments) : NULL;
    bool ok = unseen_ok && (!fn || m.functions) && (!sn || m.segments);
    if (ok) {
        uint32_t i = 0, j = 0;
        while (i < a.function_count || j < b.function_count) {
            int c = i == a.function_count   ? 1
                    : j == b.function_count ? -1
                                            : compare_function(&a.functions[i], &b.functions[j]);
            if (c < 0)
                m.functions[m.function_count++] = a.functions[i++];
            else if (c > 0)
                m.functions[m.function_count++] = b.functions[j++];
            else {
                cp_function f = a.functions[i++];
                f.cp += b.functions[j].cp;
                f.cpu += b.functions[j++].cpu;
                m.functions[m.function_count++] = f;
            }
        }
        uint32_t limit = segment_limit(query);
        i = j = 0;
        while ((i < a.segment_count || j < b.segment_count) && m.segment_count < limit) {
            int c = i == a.segment_count   ? 1
                    : j == b.segment_count ? -1
                                           : compare_segment(&a.segments[i], &b.segments[j]);
            if (c <= 0) {
                m.segments[m.segment_count++] = a.segments[i++];
                if (c == 0)
                    j++;
            } else {
                m.segments[m.segment_count++] = b.segments[j++];
            }
        }
    }
    otfx_blob out = {.limit = into->limit};
    if (ok)
        write_parsed(&out, &m);
    free(m.functions);
    free(m.segments);
    unseen_free(&m.unseen);
    free(a.functions);
    free(a.segments);
    free(b.functions);
    free(b.segments);
    unseen_free(&b.unseen);
    if (!ok || out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static int compare_cp_descending(const void *x, const void *y)
{
    const cp_function *a = x, *b = y;
    if (a->cp != b->cp)
        return a->cp > b->cp ? -1 : 1;
    if (a->cpu != b->cpu)
        return a->cpu > b->cpu ? -1 : 1;
    return compare_function(a, b);
}

/* A blob string as a C string (the buffer grows as needed; NULL when out of memory). */
static const char *c_string(char **buffer, size_t *capacity, const char *text, uint32_t length)
{
    if ((size_t)length + 1 > *capacity) {
        char *grown = realloc(*buffer, (size_t)length + 1);
        if (!grown)
            return NULL;
        *buffer = grown;
        *capacity = (size_t)length + 1;
    }
    memcpy(*buffer, text, length);
    (*buffer)[length] = '\0';
    return *buffer;
}

static bool cp_finish(const otfx_command *query, const void *merged, size_t length, uint32_t places_answered,
                      uint32_t places_total, otfx_text *reply, char *error, size_t error_size)
{
    cp_parsed p = {0};
    if (length > 0 && !parse(merged, length, &p)) {
        snprintf(error, error_size, "critical-path: malformed result");
        return false;
    }
    uint64_t cpu_total = 0, cp_total = 0;
    for (uint32_t i = 0; i < p.function_count; i++) {
        cpu_total += p.functions[i].cpu;
        cp_total += p.functions[i].cp;
    }
    if (p.function_count)
        qsort(p.functions, p.function_count, sizeof *p.functions, compare_cp_descending);
    uint32_t top = query->top ? query->top : CP_DEFAULT_TOP;
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "critical-path");
    otfx_kv_u64(reply, "from", query->from);
    otfx_kv_u64(reply, "to", query->to);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "length_ns", p.length);
    otfx_kv_u64(reply, "path_cpu_ns", cp_total);
    otfx_kv_u64(reply, "cpu_ns", cpu_total);
    otfx_kv_str(reply, "zero", query->zero[0] ? query->zero : "-");
    if (query->zero[0])
        otfx_kv_u64(reply, "zeroed_ns", p.zeroed);
    otfx_kv_u64(reply, "functions", p.function_count);
    otfx_kv_u64(reply, "segments", p.segment_count);
    otfx_kv_u64(reply, "segments_total", p.segments_total);
    otfx_kv_u64(reply, "truncated", p.segments_total > p.segment_count);
    otfx_kv_u64(reply, "walk_breaks", p.walk_breaks);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_u64(reply, "partial", places_answered < places_total);
    follow_fields_line(reply, query, &p.follow);
    otfx_kv_end(reply);
    char *name = NULL;
    size_t name_capacity = 0;
    for (uint32_t i = 0; i < p.function_count && !reply->failed; i++) {
        const cp_function *f = &p.functions[i];
        const char *text = c_string(&name, &name_capacity, f->name, f->name_length);
        if (!text) {
            reply->failed = true;
            break;
        }
        bool zeroed = query->zero[0] && strcmp(text, query->zero) == 0;
        if (i >= top && !zeroed)
            continue;
        otfx_kv_begin(reply, "cp-function");
        otfx_kv_str(reply, "name", text);
        otfx_kv_u64(reply, "cp_ns", f->cp);
        otfx_kv_f64(reply, "cp_share", p.length ? (double)f->cp / (double)p.length : 0.0);
        otfx_kv_u64(reply, "cpu_ns", f->cpu);
        otfx_kv_f64(reply, "cpu_share", cpu_total ? (double)f->cpu / (double)cpu_total : 0.0);
        if (zeroed)
            otfx_kv_u64(reply, "zeroed_ns", p.zeroed);
        otfx_kv_end(reply);
    }
    for (uint32_t i = 0; i < p.segment_count && !reply->failed; i++) {
        const cp_segment *s = &p.segments[i];
        const char *text = c_string(&name, &name_capacity, s->name, s->name_length);
        if (!text) {
            reply->failed = true;
            break;
        }
        otfx_kv_begin(reply, "cp-segment");
        otfx_kv_u64(reply, "rank", s->rank);
        otfx_kv_u64(reply, "thread", s->thread);
        otfx_kv_str(reply, "function", text);
        otfx_kv_u64(reply, "start", s->begin);
        otfx_kv_u64(reply, "end", s->end);
        otfx_kv_end(reply);
    }
    if (!reply->failed && !unseen_lines(reply, query, &p.unseen))
        reply->failed = true;
    free(name);
    free(p.functions);
    free(p.segments);
    unseen_free(&p.unseen);
    if (reply->failed) {
        snprintf(error, error_size, "critical-path: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_critical_path = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "critical-path",
    .help = "the longest CPU-time path and its functions (--from --to --ranks --zero --top --limit "
            "--follow)",
    .leaf = cp_leaf,
    .merge = cp_merge,
    .finish = cp_finish,
};

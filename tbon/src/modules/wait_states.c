/* wait_states.c — the `wait-states` module: time the selected ranks spent waiting in MPI calls for
 * another rank, in Scalasca's terms, computed on the held traces by a replay (docs/analyses.md):
 *
 *   late-sender     a receive's call (RECV's, or the Wait of an IRECV) entered before the matching send's
 *                   call: send enter − receive call enter, on the receiver, caused by the sender;
 *   late-receiver   a blocking send whose call lasted until the receive was posted (the receive call's
 *                   enter, or the IRECV's request): receive posted − send enter, clipped to the send's
 *                   call, on the sender, caused by the receiver (computed at the receiver's place);
 *   wait-nxn        an N×N collective (barrier, allreduce, allgather[v], alltoall[v,w], reduce-scatter
 *                   [-block]): the last member's arrival − own call enter, caused by the last member;
 *   late-broadcast  bcast, scatter[v] on a member other than the root: root's arrival − own call enter;
 *   early-reduce    gather[v], reduce on the root: first other member's arrival − root's call enter.
 *
 * A member's arrival is the enter of the MPI call around its COLL_BEGIN (NBC_REQUEST). The waits of one
 * call are taken when the call ends, per kind the largest (a Waitall over several late senders waits
 * once), clipped to the call's duration; negative differences (clock error) count as no wait. Scan and
 * exscan are not rated.
 *
 * With --follow the place keeps the replay and everything accumulated (the totals, each stream's open
 * calls and their waits not taken yet) between rounds (follow_states.h): a round adds what arrived since.
 *
 * Partial result: "WST2", u64 leaves, u64 late_receiver_unknown, the follow fields (u64 round, u64
 * restarted, u64 events this round), u32 n then n functions sorted by
 * (name, kind) (str name, u32 kind, u64 wait, u64 count), u32 r then r ranks sorted (u32 rank, u64 wait
 * per kind), u32 p then p pairs sorted by (waiting, causing) (u32 waiting, u32 causing, u64 wait), then
 * the unseen counters. Merge: sums by key (the follow round and restart: the greater), associative and
 * order-independent.
 */
#include "replay_support.h"

#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WS_MAGIC         0x32545357u /* "WST2" */
#define WS_DEFAULT_TOP   20u
#define WS_DEFAULT_PAIRS 20u

enum { WS_LATE_SENDER, WS_LATE_RECEIVER, WS_WAIT_NXN, WS_LATE_BROADCAST, WS_EARLY_REDUCE, WS_KINDS };
static const char *const kind_names[WS_KINDS] = {"late-sender", "late-receiver", "wait-nxn", "late-broadcast",
                                                 "early-reduce"};
static const char *const kind_keys[WS_KINDS] = {"late_sender_ns", "late_receiver_ns", "wait_nxn_ns",
                                                "late_broadcast_ns", "early_reduce_ns"};

#define WS_FUNCTION_NAME 40

/* What crosses a dependency (fits OTFX_REPLAY_MAX_VALUE). */
typedef struct ws_value {
    otfx_time enter; /* the call's enter (the event's time outside every MPI call) */
    otfx_time end;   /* a blocking send's call end (0: not known) */
    uint32_t rank;
    uint32_t blocking;
    char function[WS_FUNCTION_NAME]; /* the send's call, for late-receiver */
} ws_value;

typedef struct ws_pending {
    uint32_t frame; /* index of the MPI call in the stack */
    uint32_t kind, cause;
    otfx_time wait;
} ws_pending;

typedef struct ws_request {
    uint64_t request;
    otfx_time posted;
} ws_request;

typedef struct ws_stream {
    bool seen;
    uint32_t rank;
    cpu_clock clock; /* only its stack (cpu_clock_apply) */
    ws_pending *pending;
    size_t pending_count, pending_capacity;
    ws_request *requests; /* IRECV_REQUESTs not completed yet */
    size_t request_count, request_capacity;
    /* The function name of the last call that sent or arrived (a stream sends from few calls), as a
     * ws_value carries it. */
    bool call_known;
    otfx_ref call_region;
    char call_name[WS_FUNCTION_NAME];
} ws_stream;

typedef struct ws_function {
    char *name; /* owned while building; not NUL-terminated when read from a blob */
    uint32_t name_length, kind;
    uint64_t wait, count;
} ws_function;

typedef struct ws_rank {
    uint32_t rank;
    uint64_t wait[WS_KINDS];
} ws_rank;

typedef struct ws_pair {
    uint32_t waiting, causing;
    uint64_t wait;
} ws_pair;

typedef struct ws_run {
    const otfx_command *query;
    region_facts facts;
    ws_stream *streams;
    size_t stream_capacity;
    ws_function *functions;
    size_t function_count, function_capacity;
    ws_rank *ranks; /* indexed by rank, app_ranks of them */
    uint32_t app_ranks;
    ws_pair *pairs; /* open addressing on (waiting, causing); wait 0 and waiting UINT32_MAX: empty */
    size_t pair_capacity, pair_count;
    uint64_t late_receiver_unknown;
    unseen_report unseen;
    bool failed;
} ws_run;

static bool grow(void **array, size_t *capacity, size_t count, size_t size)
{
    return otfx_reserve(array, capacity, count + 1, size, 8);
}

static inline ws_stream *stream_of(ws_run *run, const otfx_replay_stream *stream)
{
    ws_stream *s =
        stream_slot((void **)&run->streams, &run->stream_capacity, sizeof *run->streams, stream->index);
    if (!s) {
        run->failed = true;
        return NULL;
    }
    if (!s->seen) {
        s->seen = true;
        s->rank = stream->rank;
        cpu_clock_init(&s->clock, 0, OTFX_TIME_MAX);
    }
    return s;
}

static void add_function(ws_run *run, const char *name, uint32_t kind, uint64_t wait)
{
    for (size_t i = 0; i < run->function_count; i++)
        if (run->functions[i].kind == kind && strcmp(run->functions[i].name, name) == 0) {
            run->functions[i].wait += wait;
            run->functions[i].count++;
            return;
        }
    if (!grow((void **)&run->functions, &run->function_capacity, run->function_count,
              sizeof *run->functions)) {
        run->failed = true;
        return;
    }
    size_t length = strlen(name);
    char *copy = malloc(length + 1);
    if (copy)
        memcpy(copy, name, length + 1);
    if (!copy) {
        run->failed = true;
        return;
    }
    run->functions[run->function_count++] = (ws_function){
        .name = copy, .name_length = (uint32_t)strlen(copy), .kind = kind, .wait = wait, .count = 1};
}

static void add_pair(ws_run *run, uint32_t waiting, uint32_t causing, uint64_t wait)
{
    if ((run->pair_count + 1) * 2 > run->pair_capacity) {
        size_t capacity = run->pair_capacity ? run->pair_capacity * 2 : 64;
        ws_pair *pairs = malloc(capacity * sizeof *pairs);
        if (!pairs) {
            run->failed = true;
            return;
        }
        for (size_t i = 0; i < capacity; i++)
            pairs[i].waiting = UINT32_MAX;
        for (size_t i = 0; i < run->pair_capacity; i++) {
            if (run->pairs[i].waiting == UINT32_MAX)
                continue;
            uint64_t h = ((uint64_t)run->pairs[i].waiting * 0x9E3779B97F4A7C15ull) ^ run->pairs[i].causing;
            size_t k = (size_t)(h * 0xBF58476D1CE4E5B9ull >> 17) & (capacity - 1);
            while (pairs[k].waiting != UINT32_MAX)
                k = (k + 1) & (capacity - 1);
            pairs[k] = run->pairs[i];
        }
        free(run->pairs);
        run->pairs = pairs;
        run->pair_capacity = capacity;
    }
    uint64_t h = ((uint64_t)waiting * 0x9E3779B97F4A7C15ull) ^ causing;
    size_t k = (size_t)(h * 0xBF58476D1CE4E5B9ull >> 17) & (run->pair_capacity - 1);
    while (run->pairs[k].waiting != UINT32_MAX &&
           (run->pairs[k].waiting != waiting || run->pairs[k].causing != causing))
        k = (k + 1) & (run->pair_capacity - 1);
    if (run->pairs[k].waiting == UINT32_MAX) {
        run->pairs[k] = (ws_pair){waiting, causing, 0};
        run->pair_count++;
    }
    run->pairs[k].wait += wait;
}

/* A wait of `waiting` in the call `function`, caused by `causing`. */
static void commit(ws_run *run, uint32_t waiting, uint32_t causing, const char *function, uint32_t kind,
                   uint64_t wait)
{
    if (!wait)
        return;
    add_function(run, function[0] ? function : "(unknown)", kind, wait);
    if (waiting < run->app_ranks)
        run->ranks[waiting].wait[kind] += wait;
    add_pair(run, waiting, causing, wait);
}

/* A wait found inside the current MPI call, taken when the call ends. */
static void add_pending(ws_run *run, ws_stream *s, uint32_t kind, uint32_t cause, otfx_time wait)
{
    if (!wait)
        return;
    const stack_frame *frame = cpu_clock_mpi_frame(&s->clock);
    if (!frame)
        return;
    uint32_t index = (uint32_t)(frame - s->clock.stack);
    for (size_t i = 0; i < s->pending_count; i++)
        if (s->pending[i].frame == index && s->pending[i].kind == kind) {
            if (wait > s->pending[i].wait) {
                s->pending[i].wait = wait;
                s->pending[i].cause = cause;
            }
            return;
        }
    if (!grow((void **)&s->pending, &s->pending_capacity, s->pending_count, sizeof *s->pending)) {
        run->failed = true;
        return;
    }
    s->pending[s->pending_count++] = (ws_pending){.frame = index, .kind = kind, .cause = cause, .wait = wait};
}

/* A call ends: the waits found inside it are taken, each clipped to the call. */
static void take_pending(ws_run *run, ws_stream *s, const otfx_event *leave)
{
    uint32_t index = s->clock.depth - 1;
    const stack_frame *frame = &s->clock.stack[index];
    otfx_time duration = leave->time > frame->enter ? leave->time - frame->enter : 0;
    size_t kept = 0;
    for (size_t i = 0; i < s->pending_count; i++) {
        ws_pending p = s->pending[i];
        if (p.frame != index) {
            s->pending[kept++] = p;
            continue;
        }
        commit(run, s->rank, p.cause, region_name(&run->facts, frame->region), p.kind,
               p.wait < duration ? p.wait : duration);
    }
    s->pending_count = kept;
}

static inline void ws_event(ws_run *run, ws_stream *s, const otfx_event *event)
{
    switch (event->type) {
    case OTFX_EV_LEAVE:
        /* (most calls end without a wait found inside) */
        if (s->pending_count && s->clock.depth > 0 && s->clock.stack[s->clock.depth - 1].mpi)
            take_pending(run, s, event);
        break;
    case OTFX_EV_IRECV_REQUEST:
        if (!grow((void **)&s->requests, &s->request_capacity, s->request_count, sizeof *s->requests))
            run->failed = true;
        else
            s->requests[s->request_count++] = (ws_request){event->u.request.request, event->time};
        break;
    case OTFX_EV_REQUEST_CANCELLED:
        for (size_t i = 0; i < s->request_count; i++)
            if (s->requests[i].request == event->u.request.request) {
                s->requests[i] = s->requests[--s->request_count];
                break;
            }
        break;
    default:
        break;
    }
    cpu_clock_apply(&s->clock, &run->facts, event); /* its stack, not its CPU time */
}

static void ws_events(void *user, otfx_replay_stream *stream, const otfx_event *events, size_t count)
{
    ws_run *run = user;
    ws_stream *s = stream_of(run, stream);
    if (!s)
        return;
    for (size_t i = 0; i < count; i++)
        ws_event(run, s, &events[i]);
    if (s->clock.failed)
        run->failed = true;
}

static void fill_value(ws_run *run, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    ws_stream *s = stream_of(run, stream);
    if (!s)
        return;
    const stack_frame *frame = cpu_clock_mpi_frame(&s->clock);
    ws_value v = {.enter = frame ? frame->enter : event->time,
                  .rank = s->rank,
                  .blocking = event->type == OTFX_EV_SEND};
    if (frame) {
        if (!s->call_known || s->call_region != frame->region) {
            /* what snprintf("%s") would keep, without its cost at every send and arrival */
            const char *name = region_name(&run->facts, frame->region);
            memset(s->call_name, 0, sizeof s->call_name);
            for (size_t i = 0; i < sizeof s->call_name - 1 && name[i]; i++)
                s->call_name[i] = name[i];
            s->call_known = true;
            s->call_region = frame->region;
        }
        memcpy(v.function, s->call_name, sizeof v.function);
    }
    memcpy(value, &v, sizeof v);
}

static void ws_send(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    fill_value(user, stream, event, value);
}

static void ws_send_ended(void *user, otfx_replay_stream *stream, const otfx_event *leave, void *value)
{
    (void)user;
    (void)stream;
    ws_value v;
    memcpy(&v, value, sizeof v);
    v.end = leave->time;
    memcpy(value, &v, sizeof v);
}

static void ws_arrive(void *user, otfx_replay_stream *stream, const otfx_event *event, void *value)
{
    fill_value(user, stream, event, value);
}

static void ws_receive(void *user, otfx_replay_stream *stream, const otfx_event *event, const void *value,
                       otfx_replay_missing missing)
{
    (void)missing; /* counted by the replay */
    ws_run *run = user;
    ws_stream *s = stream_of(run, stream);
    if (!s)
        return;
    otfx_time posted = OTFX_TIME_MAX;
    if (event->type == OTFX_EV_IRECV)
        for (size_t i = 0; i < s->request_count; i++)
            if (s->requests[i].request == event->u.msg.request) {
                posted = s->requests[i].posted;
                s->requests[i] = s->requests[--s->request_count];
                break;
            }
    if (!value)
        return;
    ws_value sender;
    memcpy(&sender, value, sizeof sender);
    const stack_frame *frame = cpu_clock_mpi_frame(&s->clock);
    if (frame && sender.enter > frame->enter)
        add_pending(run, s, WS_LATE_SENDER, sender.rank, sender.enter - frame->enter);
    if (posted == OTFX_TIME_MAX && frame)
        posted = frame->enter;
    if (sender.blocking && posted != OTFX_TIME_MAX) {
        if (!sender.end)
            run->late_receiver_unknown++;
        else if (posted > sender.enter && sender.end >= posted) {
            otfx_time wait = posted - sender.enter, call = sender.end - sender.enter;
            sender.function[WS_FUNCTION_NAME - 1] = '\0';
            commit(run, sender.rank, s->rank, sender.function, WS_LATE_RECEIVER, wait < call ? wait : call);
        }
    }
}

static void ws_complete(void *user, otfx_replay_stream *stream, const otfx_replay_collective *collective)
{
    ws_run *run = user;
    ws_stream *s = stream_of(run, stream);
    if (!s)
        return;
    const stack_frame *frame = cpu_clock_mpi_frame(&s->clock);
    if (!frame)
        return;
    ws_value v;
    switch (collective->dependency) {
    case OTFX_REPLAY_ONE_TO_ALL:
        if (collective->root >= collective->size || collective->self == collective->root ||
            !collective->value[collective->root])
            return;
        memcpy(&v, collective->value[collective->root], sizeof v);
        if (v.enter > frame->enter)
            add_pending(run, s, WS_LATE_BROADCAST, v.rank, v.enter - frame->enter);
        return;
    case OTFX_REPLAY_ALL_TO_ONE: {
        if (collective->self != collective->root)
            return;
        bool any = false;
        ws_value first = {0};
        for (uint32_t i = 0; i < collective->size; i++) {
            if (i == collective->self || !collective->value[i])
                continue;
            memcpy(&v, collective->value[i], sizeof v);
            if (!any || v.enter < first.enter)
                first = v;
            any = true;
        }
        if (any && first.enter > frame->enter)
            add_pending(run, s, WS_EARLY_REDUCE, first.rank, first.enter - frame->enter);
        return;
    }
    case OTFX_REPLAY_ALL_TO_ALL: {
        bool any = false;
        ws_value last = {0};
        for (uint32_t i = 0; i < collective->size; i++) {
            if (i == collective->self || !collective->value[i])
                continue;
            memcpy(&v, collective->value[i], sizeof v);
            if (!any || v.enter > last.enter)
                last = v;
            any = true;
        }
        if (any && last.enter > frame->enter)
            add_pending(run, s, WS_WAIT_NXN, last.rank, last.enter - frame->enter);
        return;
    }
    case OTFX_REPLAY_PREFIX:
        return; /* scan and exscan are not rated */
    }
}

static void ws_gap(void *user, otfx_replay_stream *stream, otfx_time begin, otfx_time end,
                   otfx_replay_gap why)
{
    ws_run *run = user;
    unseen_gap(&run->unseen, stream, begin, end, why);
}

static const otfx_replay_pass ws_pass = {
    .name = "wait-states",
    .value_size = sizeof(ws_value),
    .events = ws_events,
    .send = ws_send,
    .send_ended = ws_send_ended,
    .receive = ws_receive,
    .arrive = ws_arrive,
    .complete = ws_complete,
    .gap = ws_gap,
};

static void run_free(ws_run *run)
{
    unseen_free(&run->unseen);
    for (size_t i = 0; i < run->stream_capacity; i++) {
        cpu_clock_free(&run->streams[i].clock);
        free(run->streams[i].pending);
        free(run->streams[i].requests);
    }
    free(run->streams);
    for (size_t i = 0; i < run->function_count; i++)
        free(run->functions[i].name);
    free(run->functions);
    free(run->ranks);
    free(run->pairs);
    region_facts_free(&run->facts);
}

static void run_destroy(void *run)
{
    run_free(run);
    free(run);
}

/* ---- partial results ---------------------------------------------------------------------------------- */

typedef struct ws_parsed {
    uint64_t leaves, late_receiver_unknown;
    follow_fields follow;
    uint32_t function_count, rank_count, pair_count;
    ws_function *functions;
    ws_rank *ranks;
    ws_pair *pairs;
    unseen_report unseen;
} ws_parsed;

static int compare_function(const void *x, const void *y)
{
    const ws_function *a = x, *b = y;
    int c = name_compare(a->name, a->name_length, b->name, b->name_length);
    if (c)
        return c;
    return a->kind < b->kind ? -1 : a->kind > b->kind;
}

static int compare_pair(const void *x, const void *y)
{
    const ws_pair *a = x, *b = y;
    if (a->waiting != b->waiting)
        return a->waiting < b->waiting ? -1 : 1;
    return a->causing < b->causing ? -1 : a->causing > b->causing;
}

static void write_parsed(otfx_blob *out, const ws_parsed *p)
{
    otfx_blob_header(out, WS_MAGIC);
    otfx_blob_u64(out, p->leaves);
    otfx_blob_u64(out, p->late_receiver_unknown);
    follow_fields_write(out, &p->follow);
    otfx_blob_u32(out, p->function_count);
    for (uint32_t i = 0; i < p->function_count; i++) {
        otfx_blob_u32(out, p->functions[i].name_length);
        otfx_blob_append(out, p->functions[i].name, p->functions[i].name_length);
        otfx_blob_u32(out, p->functions[i].kind);
        otfx_blob_u64(out, p->functions[i].wait);
        otfx_blob_u64(out, p->functions[i].count);
    }
    otfx_blob_u32(out, p->rank_count);
    for (uint32_t i = 0; i < p->rank_count; i++) {
        otfx_blob_u32(out, p->ranks[i].rank);
        for (int k = 0; k < WS_KINDS; k++)
            otfx_blob_u64(out, p->ranks[i].wait[k]);
    }
    otfx_blob_u32(out, p->pair_count);
    for (uint32_t i = 0; i < p->pair_count; i++) {
        otfx_blob_u32(out, p->pairs[i].waiting);
        otfx_blob_u32(out, p->pairs[i].causing);
        otfx_blob_u64(out, p->pairs[i].wait);
    }
    unseen_write(out, &p->unseen);
}

static void parsed_free(ws_parsed *p)
{
    free(p->functions);
    free(p->ranks);
    free(p->pairs);
    unseen_free(&p->unseen);
    memset(p, 0, sizeof *p);
}

static bool parse(const void *data, size_t length, ws_parsed *p)
{
    memset(p, 0, sizeof *p);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, WS_MAGIC))
        return false;
    p->leaves = otfx_blob_read_u64(&r);
    p->late_receiver_unknown = otfx_blob_read_u64(&r);
    follow_fields_read(&r, &p->follow);
    uint32_t n = otfx_blob_read_u32(&r);
    if (r.failed || n > (r.length - r.offset) / 24)
        return false;
    p->functions = n ? calloc(n, sizeof *p->functions) : NULL;
    if (n && !p->functions)
        return false;
    p->function_count = n;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        ws_function *f = &p->functions[i];
        f->name = (char *)otfx_blob_read_str(&r, &f->name_length);
        f->kind = otfx_blob_read_u32(&r);
        f->wait = otfx_blob_read_u64(&r);
        f->count = otfx_blob_read_u64(&r);
        if (f->kind >= WS_KINDS || (i > 0 && compare_function(&p->functions[i - 1], f) >= 0))
            r.failed = true;
    }
    uint32_t m = r.failed ? 0 : otfx_blob_read_u32(&r);
    if (r.failed || m > (r.length - r.offset) / (4 + 8 * WS_KINDS)) {
        parsed_free(p);
        return false;
    }
    p->ranks = m ? calloc(m, sizeof *p->ranks) : NULL;
    p->rank_count = m;
    for (uint32_t i = 0; i < m && p->ranks && !r.failed; i++) {
        p->ranks[i].rank = otfx_blob_read_u32(&r);
        for (int k = 0; k < WS_KINDS; k++)
            p->ranks[i].wait[k] = otfx_blob_read_u64(&r);
        if (i > 0 && p->ranks[i - 1].rank >= p->ranks[i].rank)
            r.failed = true;
    }
    uint32_t q = r.failed ? 0 : otfx_blob_read_u32(&r);
    if ((m && !p->ranks) || r.failed || q > (r.length - r.offset) / 16) {
        parsed_free(p);
        return false;
    }
    p->pairs = q ? calloc(q, sizeof *p->pairs) : NULL;
    p->pair_count = q;
    for (uint32_t i = 0; i < q && p->pairs && !r.failed; i++) {
        p->pairs[i].waiting = otfx_blob_read_u32(&r);
        p->pairs[i].causing = otfx_blob_read_u32(&r);
        p->pairs[i].wait = otfx_blob_read_u64(&r);
        if (i > 0 && compare_pair(&p->pairs[i - 1], &p->pairs[i]) >= 0)
            r.failed = true;
    }
    if (q && !p->pairs)
        r.failed = true;
    if (!r.failed)
        unseen_read(&r, &p->unseen);
    if (!otfx_blob_reader_done(&r)) {
        parsed_free(p);
        return false;
    }
    return true;
}

/* This place's partial result from what `run` accumulated (after a replay's run); `run` stays as it is
 * (a follow's next round goes on from it). */
static bool ws_answer(void *user, const otfx_command *query, const otfx_leaf_input *input,
                      const otfx_replay_stats *stats, const follow_fields *follow, otfx_blob *out,
                      char *error, size_t error_size)
{
    ws_run *run = user;
    ws_parsed p = {.leaves = 1, .late_receiver_unknown = run->late_receiver_unknown, .follow = *follow};
    const bool unseen_ok = unseen_add(&p.unseen, &run->unseen) && unseen_record_held(&p.unseen, query, input);
    unseen_from_stats(&p.unseen, stats);
    p.ranks = run->app_ranks ? calloc(run->app_ranks, sizeof *p.ranks) : NULL;
    p.pairs = run->pair_count ? calloc(run->pair_count, sizeof *p.pairs) : NULL;
    if (run->failed || run->facts.failed || !unseen_ok || p.unseen.failed || (run->app_ranks && !p.ranks) ||
        (run->pair_count && !p.pairs)) {
        parsed_free(&p);
        snprintf(error, error_size, "wait-states: out of memory");
        return false;
    }
    for (uint32_t r = 0; r < run->app_ranks; r++) {
        uint64_t any = 0;
        for (int k = 0; k < WS_KINDS; k++)
            any |= run->ranks[r].wait[k];
        if (any) {
            p.ranks[p.rank_count] = run->ranks[r];
            p.ranks[p.rank_count++].rank = r;
        }
    }
    for (size_t i = 0; i < run->pair_capacity; i++)
        if (run->pairs[i].waiting != UINT32_MAX)
            p.pairs[p.pair_count++] = run->pairs[i];
    if (p.pair_count)
        qsort(p.pairs, p.pair_count, sizeof *p.pairs, compare_pair);
    if (run->function_count)
        qsort(run->functions, run->function_count, sizeof *run->functions, compare_function);
    p.functions = run->functions;
    p.function_count = (uint32_t)run->function_count;
    write_parsed(out, &p);
    p.functions = NULL;
    parsed_free(&p);
    if (out->failed) {
        snprintf(error, error_size, "wait-states: %s", out->too_large ? "result too large" : "out of memory");
        return false;
    }
    return true;
}

static void *ws_run_create(const otfx_command *query, const otfx_leaf_input *input)
{
    ws_run *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->query = query;
    run->app_ranks = input->app_ranks;
    region_facts_init(&run->facts, input->defs, NULL);
    run->ranks = input->app_ranks ? calloc(input->app_ranks, sizeof *run->ranks) : NULL;
    if (input->app_ranks && !run->ranks) {
        run_destroy(run);
        return NULL;
    }
    return run;
}

static const replay_module ws_module = {
    .pass = &ws_pass, .run_create = ws_run_create, .run_destroy = run_destroy, .answer = ws_answer};

static bool ws_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                    size_t error_size)
{
    return replay_leaf(&ws_module, query, input, out, error, error_size);
}

static bool ws_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                     char *error, size_t error_size)
{
    (void)query;
    ws_parsed a = {0}, b;
    if (!parse(other, other_length, &b) || (into->length > 0 && !parse(into->data, into->length, &a))) {
        snprintf(error, error_size, "wait-states: malformed partial result");
        return false;
    }
    ws_parsed m = {.leaves = a.leaves + b.leaves,
                   .late_receiver_unknown = a.late_receiver_unknown + b.late_receiver_unknown,
                   .follow = a.follow};
    follow_fields_merge(&m.follow, &b.follow);
    m.unseen = a.unseen;
    a.unseen = (unseen_report){0};
    const bool unseen_ok = unseen_add(&m.unseen, &b.unseen);
    size_t fn = (size_t)a.function_count + b.function_count, rn = (size_t)a.rank_count + b.rank_count,
           pn = (size_t)a.pair_count + b.pair_count;
    m.functions = fn ? malloc(fn * sizeof *m.functions) : NULL;
    m.ranks = rn ? malloc(rn * sizeof *m.ranks) : NULL;
    m.pairs = pn ? malloc(pn * sizeof *m.pairs) : NULL;
    bool ok = unseen_ok && (!fn || m.functions) && (!rn || m.ranks) && (!pn || m.pairs);
    if (ok) {
        uint32_t i = 0, j = 0;
        while (i < a.function_count || j < b.function_count) {
            int c = i == a.function_count   ? 1
                    : j == b.function_count ? -1
                                            : compare_function(&a.functions[i], &b.functions[j]);
            ws_function f = c <= 0 ? a.functions[i++] : b.functions[j++];
            if (c == 0) {
                f.wait += b.functions[j].wait;
                f.count += b.functions[j++].count;
            }
            m.functions[m.function_count++] = f;
        }
        i = j = 0;
        while (i < a.rank_count || j < b.rank_count) {
            int c = i == a.rank_count ? 1
                    : j == b.rank_count
                        ? -1
                        : (a.ranks[i].rank > b.ranks[j].rank) - (a.ranks[i].rank < b.ranks[j].rank);
            ws_rank r = c <= 0 ? a.ranks[i++] : b.ranks[j++];
            if (c == 0) {
                for (int k = 0; k < WS_KINDS; k++)
                    r.wait[k] += b.ranks[j].wait[k];
                j++;
            }
            m.ranks[m.rank_count++] = r;
        }
        i = j = 0;
        while (i < a.pair_count || j < b.pair_count) {
            int c = i == a.pair_count ? 1 : j == b.pair_count ? -1 : compare_pair(&a.pairs[i], &b.pairs[j]);
            ws_pair q = c <= 0 ? a.pairs[i++] : b.pairs[j++];
            if (c == 0)
                q.wait += b.pairs[j++].wait;
            m.pairs[m.pair_count++] = q;
        }
    }
    otfx_blob out = {.limit = into->limit};
    if (ok)
        write_parsed(&out, &m);
    parsed_free(&m);
    parsed_free(&a);
    parsed_free(&b);
    if (!ok || out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "wait-states: out of memory");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static int compare_wait_descending(const void *x, const void *y)
{
    const ws_function *a = x, *b = y;
    if (a->wait != b->wait)
        return a->wait > b->wait ? -1 : 1;
    return compare_function(a, b);
}

static uint64_t rank_total(const ws_rank *r)
{
    uint64_t total = 0;
    for (int k = 0; k < WS_KINDS; k++)
        total += r->wait[k];
    return total;
}

static int compare_rank_descending(const void *x, const void *y)
{
    const ws_rank *a = x, *b = y;
    uint64_t ta = rank_total(a), tb = rank_total(b);
    if (ta != tb)
        return ta > tb ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int compare_pair_descending(const void *x, const void *y)
{
    const ws_pair *a = x, *b = y;
    if (a->wait != b->wait)
        return a->wait > b->wait ? -1 : 1;
    return compare_pair(a, b);
}

static bool ws_finish(const otfx_command *query, const void *merged, size_t length, uint32_t places_answered,
                      uint32_t places_total, otfx_text *reply, char *error, size_t error_size)
{
    ws_parsed p = {0};
    if (length > 0 && !parse(merged, length, &p)) {
        snprintf(error, error_size, "wait-states: malformed result");
        return false;
    }
    uint64_t kinds[WS_KINDS] = {0}, total = 0;
    for (uint32_t i = 0; i < p.function_count; i++) {
        kinds[p.functions[i].kind] += p.functions[i].wait;
        total += p.functions[i].wait;
    }
    if (p.function_count)
        qsort(p.functions, p.function_count, sizeof *p.functions, compare_wait_descending);
    if (p.rank_count)
        qsort(p.ranks, p.rank_count, sizeof *p.ranks, compare_rank_descending);
    if (p.pair_count)
        qsort(p.pairs, p.pair_count, sizeof *p.pairs, compare_pair_descending);
    uint32_t top = query->top ? query->top : WS_DEFAULT_TOP;
    uint32_t pairs = query->limit ? query->limit : WS_DEFAULT_PAIRS;
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "wait-states");
    otfx_kv_u64(reply, "from", query->from);
    otfx_kv_u64(reply, "to", query->to);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "total_ns", total);
    for (int k = 0; k < WS_KINDS; k++)
        otfx_kv_u64(reply, kind_keys[k], kinds[k]);
    otfx_kv_u64(reply, "functions", p.function_count);
    otfx_kv_u64(reply, "waiting_ranks", p.rank_count);
    otfx_kv_u64(reply, "pairs", p.pair_count);
    otfx_kv_u64(reply, "late_receiver_unknown", p.late_receiver_unknown);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_u64(reply, "partial", places_answered < places_total);
    follow_fields_line(reply, query, &p.follow);
    otfx_kv_end(reply);
    char *name = NULL;
    for (uint32_t i = 0; i < p.function_count && i < top && !reply->failed; i++) {
        const ws_function *f = &p.functions[i];
        char *copy = realloc(name, (size_t)f->name_length + 1);
        if (!copy) {
            reply->failed = true;
            break;
        }
        name = copy;
        memcpy(name, f->name, f->name_length);
        name[f->name_length] = '\0';
        otfx_kv_begin(reply, "ws-function");
        otfx_kv_str(reply, "name", name);
        otfx_kv_str(reply, "kind", kind_names[f->kind]);
        otfx_kv_u64(reply, "wait_ns", f->wait);
        otfx_kv_u64(reply, "count", f->count);
        otfx_kv_f64(reply, "share", total ? (double)f->wait / (double)total : 0.0);
        otfx_kv_end(reply);
    }
    free(name);
    for (uint32_t i = 0; i < p.rank_count && i < top && !reply->failed; i++) {
        otfx_kv_begin(reply, "ws-rank");
        otfx_kv_u64(reply, "rank", p.ranks[i].rank);
        otfx_kv_u64(reply, "wait_ns", rank_total(&p.ranks[i]));
        for (int k = 0; k < WS_KINDS; k++)
            otfx_kv_u64(reply, kind_keys[k], p.ranks[i].wait[k]);
        otfx_kv_end(reply);
    }
    for (uint32_t i = 0; i < p.pair_count && i < pairs && !reply->failed; i++) {
        otfx_kv_begin(reply, "ws-pair");
        otfx_kv_u64(reply, "waiting", p.pairs[i].waiting);
        otfx_kv_u64(reply, "causing", p.pairs[i].causing);
        otfx_kv_u64(reply, "wait_ns", p.pairs[i].wait);
        otfx_kv_f64(reply, "share", total ? (double)p.pairs[i].wait / (double)total : 0.0);
        otfx_kv_end(reply);
    }
    if (!reply->failed && !unseen_lines(reply, query, &p.unseen))
        reply->failed = true;
    parsed_free(&p);
    if (reply->failed) {
        snprintf(error, error_size, "wait-states: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_wait_states = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "wait-states",
    .help = "time waiting in MPI for another rank, by function, rank and pair (--from --to --ranks --top "
            "--limit --follow)",
    .leaf = ws_leaf,
    .merge = ws_merge,
    .finish = ws_finish,
};

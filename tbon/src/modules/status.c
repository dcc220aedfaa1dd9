/* status.c — the `status` module: what every event place holds and how its ranks are doing.
 *
 * Partial result: "STA8", u32 number of places, then per place (sorted by place index, no duplicates)
 * PLACE_FIELDS u64 values (enum below), u32 ranks (= the F_RANKS value) and per rank (sorted, each once)
 * u32 rank, u32 flags (RANK_*), u64 events held, u64 events received, u64 buffer bytes used (over the
 * rank's threads), u64 estimated intrusion (ns), u64 calls not recorded by throttling. Merging concatenates
 * and re-sorts, so it is associative and the order of the children does not matter.
 *
 * Record lines of the reply (times in ns on the job's clock, sizes in bytes):
 *   place index=P ranks=R first_rank=A last_rank=B threads=T events_per_s=E buffer_used=U
 *         buffer_budget=G buffer_open=O structure_bytes=S fill=F(0..1)
 *         strategy=ring|time|type|depth|stop|mixed reductions=K events_received=N events_held=H
 *         events_reduced=D reduced_fraction=F(0..1)
 *         reduced_<strategy>=D (ring, time, type, depth: one per strategy with D > 0) dropped_events=X
 *         dropped_<cause>=D (stop, source-drop, throttle: one per cause with D > 0)
 *         throttled_calls=C (user-function calls not recorded since throttling switched their function
 *         off, so far: dropped_throttle counts their enter and leave) blocked_ns=W intrusion_ns=I (the ranks'
 * estimated measurement intrusion: records received × measured cost) recording=on|off|mixed
 * app_state=running|paused|mixed|finished ranks_recording=k ranks_paused=k ranks_finished=k
 * [paused_since=T] [not_recording_since=T] (while some running rank is paused / does not record: when
 * the last of them did, as its place learned it from the rank's answer, so to within the answer's
 * delivery; a viewer draws the pause from there) paused_ranks=SET
 * not_recording_ranks=SET finished_ranks=SET classes=BITS classes_any=BITS (the event classes, OTFX_STEER_*
 * bits, that every / some running rank records; as the class part of the last enable/disable answers)
 *         stopped_traces=k first_time=T0 last_time=T1 defs_bytes=D queries_too_large=Q module_timeouts=T
 *         module_crashes=C (what the place's queries ran into: results over the query memory bound,
 *         module calls over the time limit, loaded modules' helpers that died; also summed in summary)
 *   summary places=n places_answered=k places_total=n ranks=R events_per_s=E buffer_used=U
 *           buffer_budget=G fill=F structure_bytes=S events_received=N events_held=H
 *           events_reduced=D reductions=K dropped_events=X dropped_<cause>=D throttled_calls=C (as for
 *           places) blocked_ns=W
 *           intrusion_ns=I recording=on|off|mixed app_state=running|paused|mixed|finished ranks_recording=k
 *           ranks_paused=k ranks_finished=k [paused_since=T] [not_recording_since=T] classes=BITS
 * classes_any=BITS first_time=T0 last_time=T1 now=T (now: the answering place's clock when the answer was
 * made, so a client can place what it saw — a pause, recording off — on the job's time axis) rank rank=R
 * place=P events_held=H events_received=N buffer_used=U throttled_calls=C intrusion_ns=I recording=on|off
 * app_state=running|paused|finished (one per application rank, after the places) recording and app_state look
 * only at ranks still running (not finished): "on"/"running" when all of them record / run, "off"/"paused"
 * when none / all are paused, "mixed" otherwise; app_state is "finished" when every rank finished. SET lists
 * ranks like "0-3,7" ("none" when empty): paused_ranks and not_recording_ranks name the running ranks (not
 * finished) that are paused / do not record. first_time/last_time are omitted when nothing was received.
 * structure_bytes is the memory of the traces' task activity graphs (otfx/structure.h), which the buffer
 * budget does not include.
 */
/* clock_gettime(CLOCK_MONOTONIC), the places' clock, is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include <otfx/analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATUS_MAGIC 0x38415453u /* "STA8" */

enum {
    F_PLACE,
    F_RANKS,
    F_FIRST_RANK,
    F_LAST_RANK,
    F_THREADS,
    F_EVENTS_PER_S,
    F_BYTES_USED,
    F_BUDGET,
    F_BYTES_OPEN,
    F_RECEIVED,
    F_HELD,
    F_REDUCED,
    F_REDUCTIONS,
    F_STRATEGIES, /* bit set of the strategies the traces use */
    F_DROPPED,
    F_BLOCKED,
    F_RECORDING,
    F_PAUSED,
    F_FINISHED,
    F_STOPPED,
    F_FIRST_TIME, /* UINT64_MAX when nothing was received */
    F_LAST_TIME,
    F_DEFS_BYTES,
    F_TOO_LARGE,   /* queries refused for the memory bound */
    F_TIMEOUTS,    /* module calls stopped at the time limit */
    F_CRASHES,     /* loaded modules' helpers that died */
    F_INTRUSION,   /* the ranks' estimated measurement intrusion (ns) */
    F_STRUCTURE,   /* bytes of the traces' task activity graphs */
    F_CLASSES_ALL, /* OTFX_STEER_* classes every running rank records (OTFX_STEER_ALL when none runs) */
    F_CLASSES_ANY, /* ... that some running rank records */
    /* The latest start of a running rank's pause / recording off (otfx_rank_info's *_since_ns): when the
     * last of them paused / stopped recording; 0 when none is. */
    F_PAUSED_SINCE,
    F_NOT_RECORDING_SINCE,
    F_REDUCED_BY, /* OTFX_REDUCE_COUNT values */
    PLACE_FIELDS = F_REDUCED_BY + OTFX_REDUCE_COUNT
};

enum { RANK_RECORDING = 1, RANK_PAUSED = 2, RANK_FINISHED = 4, RANK_FLAGS = 7 };

typedef struct rank_state {
    uint32_t rank, flags;
    uint64_t held, received, bytes_used, intrusion_ns, throttled_calls;
} rank_state;

typedef struct place_entry {
    uint64_t v[PLACE_FIELDS];
    uint32_t rank_count;
    rank_state *ranks; /* sorted by rank */
} place_entry;

static void free_entries(place_entry *e, uint32_t n)
{
    for (uint32_t i = 0; e && i < n; i++)
        free(e[i].ranks);
    free(e);
}

static void write_entry(otfx_blob *out, const place_entry *e)
{
    for (int k = 0; k < PLACE_FIELDS; k++)
        otfx_blob_u64(out, e->v[k]);
    otfx_blob_u32(out, e->rank_count);
    for (uint32_t i = 0; i < e->rank_count; i++) {
        otfx_blob_u32(out, e->ranks[i].rank);
        otfx_blob_u32(out, e->ranks[i].flags);
        otfx_blob_u64(out, e->ranks[i].held);
        otfx_blob_u64(out, e->ranks[i].received);
        otfx_blob_u64(out, e->ranks[i].bytes_used);
        otfx_blob_u64(out, e->ranks[i].intrusion_ns);
        otfx_blob_u64(out, e->ranks[i].throttled_calls);
    }
}

static int compare_rank_states(const void *x, const void *y)
{
    const rank_state *a = x, *b = y;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Reduced events were stored and later thinned by a reduction strategy; events refused by `stop`,
 * dropped before the trace or not recorded by throttling were never stored: they count as dropped
 * (dropped_events, which the place also counts; the end-of-run report does the same). */
static bool thins_stored_events(int strategy)
{
    return strategy != OTFX_REDUCE_STOP && strategy != OTFX_REDUCE_SOURCE_DROP &&
           strategy != OTFX_REDUCE_THROTTLE;
}

/* A call of a throttled function that was not recorded is an enter and a leave never stored (the
 * place's REDUCTION events count both, places/src/batch_decoder.c). */
static uint64_t throttled_calls(uint64_t throttled_events)
{
    return throttled_events / 2;
}

static bool status_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                        size_t error_size)
{
    (void)query;
    place_entry e;
    memset(&e, 0, sizeof e);
    e.v[F_PLACE] = input->place >= 0 ? (uint64_t)input->place : 0;
    e.v[F_RANKS] = input->rank_count;
    e.v[F_FIRST_RANK] = UINT32_MAX;
    e.v[F_FIRST_TIME] = UINT64_MAX;
    e.v[F_CLASSES_ALL] = OTFX_STEER_ALL;
    for (size_t i = 0; i < input->rank_count; i++) {
        const otfx_rank_info *r = &input->ranks[i];
        if (!r->finished) {
            e.v[F_CLASSES_ALL] &= r->enabled_classes;
            e.v[F_CLASSES_ANY] |= r->enabled_classes;
        }
        if (r->rank < e.v[F_FIRST_RANK])
            e.v[F_FIRST_RANK] = r->rank;
        if (r->rank > e.v[F_LAST_RANK])
            e.v[F_LAST_RANK] = r->rank;
        e.v[F_EVENTS_PER_S] += r->events_per_s;
        e.v[F_DROPPED] += r->dropped_events;
        e.v[F_BLOCKED] += r->blocked_ns;
        e.v[F_INTRUSION] += r->overhead.intrusion_ns;
        e.v[F_FINISHED] += r->finished;
        if (!r->finished) {
            e.v[F_RECORDING] += r->recording;
            e.v[F_PAUSED] += r->paused;
            if (r->paused && r->paused_since_ns > e.v[F_PAUSED_SINCE])
                e.v[F_PAUSED_SINCE] = r->paused_since_ns;
            if (!r->recording && r->not_recording_since_ns > e.v[F_NOT_RECORDING_SINCE])
                e.v[F_NOT_RECORDING_SINCE] = r->not_recording_since_ns;
        }
    }
    if (input->rank_count == 0)
        e.v[F_FIRST_RANK] = 0;
    e.v[F_THREADS] = input->trace_count;
    e.ranks = input->rank_count ? calloc(input->rank_count, sizeof *e.ranks) : NULL;
    if (input->rank_count && !e.ranks) {
        snprintf(error, error_size, "status: out of memory");
        return false;
    }
    for (size_t i = 0; i < input->trace_count; i++) {
        otfx_trace_status s;
        if (otfx_trace_status_get(input->traces[i], &s) != OTFX_OK) {
            snprintf(error, error_size, "status of trace %zu: %s", i, otfx_last_error());
            free(e.ranks);
            return false;
        }
        if (input->rank_of_trace && input->rank_of_trace[i] < input->rank_count) {
            rank_state *rank = &e.ranks[input->rank_of_trace[i]];
            rank->held += s.events_held;
            rank->received += s.events_received;
            rank->bytes_used += s.bytes_used;
            rank->throttled_calls += throttled_calls(s.events_reduced[OTFX_REDUCE_THROTTLE]);
        }
        e.v[F_BYTES_USED] += s.bytes_used;
        e.v[F_BUDGET] += s.budget_bytes;
        e.v[F_BYTES_OPEN] += s.bytes_open;
        e.v[F_STRUCTURE] += s.structure_bytes;
        e.v[F_RECEIVED] += s.events_received;
        e.v[F_HELD] += s.events_held;
        for (int k = 0; k < OTFX_REDUCE_COUNT; k++) {
            if (thins_stored_events(k))
                e.v[F_REDUCED] += s.events_reduced[k];
            e.v[F_REDUCED_BY + k] += s.events_reduced[k];
        }
        e.v[F_REDUCTIONS] += s.reductions;
        if ((unsigned)s.strategy < OTFX_REDUCE_COUNT)
            e.v[F_STRATEGIES] |= 1u << s.strategy;
        e.v[F_STOPPED] += s.stopped;
        if (s.first_time <= s.last_time) {
            if (s.first_time < e.v[F_FIRST_TIME])
                e.v[F_FIRST_TIME] = s.first_time;
            if (s.last_time > e.v[F_LAST_TIME])
                e.v[F_LAST_TIME] = s.last_time;
        }
    }
    e.v[F_DEFS_BYTES] = input->defs ? otfx_defs_bytes(input->defs) : 0;
    e.v[F_TOO_LARGE] = input->queries_too_large;
    e.v[F_TIMEOUTS] = input->module_timeouts;
    e.v[F_CRASHES] = input->module_crashes;
    for (size_t i = 0; i < input->rank_count; i++) {
        const otfx_rank_info *r = &input->ranks[i];
        e.ranks[i].rank = r->rank;
        e.ranks[i].flags = (r->recording ? RANK_RECORDING : 0) | (r->paused ? RANK_PAUSED : 0) |
                           (r->finished ? RANK_FINISHED : 0);
        e.ranks[i].intrusion_ns = r->overhead.intrusion_ns;
    }
    e.rank_count = (uint32_t)input->rank_count;
    if (e.rank_count)
        qsort(e.ranks, e.rank_count, sizeof *e.ranks, compare_rank_states);
    for (uint32_t i = 1; i < e.rank_count; i++)
        if (e.ranks[i].rank == e.ranks[i - 1].rank) {
            snprintf(error, error_size, "status: rank %u served twice", e.ranks[i].rank);
            free(e.ranks);
            return false;
        }
    otfx_blob_header(out, STATUS_MAGIC);
    otfx_blob_u32(out, 1);
    write_entry(out, &e);
    free(e.ranks);
    if (out->failed) {
        snprintf(error, error_size, "status: out of memory");
        return false;
    }
    return true;
}

/* Reads a partial result; *entries is malloc'ed (NULL when empty). */
static bool parse(const void *data, size_t length, place_entry **entries, uint32_t *count)
{
    *entries = NULL;
    *count = 0;
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, STATUS_MAGIC))
        return false;
    uint32_t n = otfx_blob_read_u32(&r);
    if (r.failed || n > (r.length - r.offset) / (PLACE_FIELDS * 8 + 4))
        return false;
    place_entry *e = n ? calloc(n, sizeof *e) : NULL;
    if (n && !e)
        return false;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        for (int k = 0; k < PLACE_FIELDS; k++)
            e[i].v[k] = otfx_blob_read_u64(&r);
        if (i > 0 && e[i].v[F_PLACE] <= e[i - 1].v[F_PLACE])
            r.failed = true; /* sorted, each place once */
        uint32_t ranks = otfx_blob_read_u32(&r);
        if (r.failed || ranks != e[i].v[F_RANKS] || ranks > (r.length - r.offset) / 48) {
            r.failed = true;
            break;
        }
        e[i].ranks = ranks ? malloc(sizeof *e[i].ranks * ranks) : NULL;
        if (ranks && !e[i].ranks) {
            r.failed = true;
            break;
        }
        e[i].rank_count = ranks;
        for (uint32_t k = 0; k < ranks; k++) {
            e[i].ranks[k].rank = otfx_blob_read_u32(&r);
            e[i].ranks[k].flags = otfx_blob_read_u32(&r);
            e[i].ranks[k].held = otfx_blob_read_u64(&r);
            e[i].ranks[k].received = otfx_blob_read_u64(&r);
            e[i].ranks[k].bytes_used = otfx_blob_read_u64(&r);
            e[i].ranks[k].intrusion_ns = otfx_blob_read_u64(&r);
            e[i].ranks[k].throttled_calls = otfx_blob_read_u64(&r);
            if ((e[i].ranks[k].flags & ~(uint32_t)RANK_FLAGS) ||
                (k > 0 && e[i].ranks[k].rank <= e[i].ranks[k - 1].rank))
                r.failed = true;
        }
    }
    if (!otfx_blob_reader_done(&r)) {
        free_entries(e, n);
        return false;
    }
    *entries = e;
    *count = n;
    return true;
}

static bool status_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                         char *error, size_t error_size)
{
    (void)query;
    place_entry *a = NULL, *b = NULL;
    uint32_t na = 0, nb = 0;
    if (!parse(other, other_length, &b, &nb)) {
        snprintf(error, error_size, "status: malformed partial result");
        return false;
    }
    if (into->length > 0 && !parse(into->data, into->length, &a, &na)) {
        free_entries(b, nb);
        snprintf(error, error_size, "status: malformed partial result");
        return false;
    }
    otfx_blob out = {.limit = into->limit};
    otfx_blob_header(&out, STATUS_MAGIC);
    otfx_blob_u32(&out, na + nb);
    uint32_t i = 0, j = 0;
    bool ok = true;
    while (i < na || j < nb) {
        const place_entry *e;
        if (j == nb || (i < na && a[i].v[F_PLACE] < b[j].v[F_PLACE]))
            e = &a[i++];
        else if (i == na || b[j].v[F_PLACE] < a[i].v[F_PLACE])
            e = &b[j++];
        else {
            ok = false; /* one place answered twice */
            break;
        }
        write_entry(&out, e);
    }
    free_entries(a, na);
    free_entries(b, nb);
    if (!ok || out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, ok ? "status: out of memory" : "status: a place answered twice");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static const char *state_text(uint64_t yes, uint64_t live, const char *all, const char *none)
{
    return yes == live ? all : yes == 0 ? none : "mixed";
}

static const char *strategy_text(uint64_t bits)
{
    for (int k = 0; k < OTFX_REDUCE_COUNT; k++)
        if (bits == (1ull << k))
            return otfx_reduction_name((otfx_reduction)k);
    return bits ? "mixed" : "none";
}

static void put_states(otfx_text *reply, const uint64_t *v)
{
    uint64_t live = v[F_RANKS] - (v[F_FINISHED] <= v[F_RANKS] ? v[F_FINISHED] : v[F_RANKS]);
    otfx_kv_str(reply, "recording", live ? state_text(v[F_RECORDING], live, "on", "off") : "off");
    otfx_kv_str(reply, "app_state",
                live         ? state_text(v[F_PAUSED], live, "paused", "running")
                : v[F_RANKS] ? "finished"
                             : "running");
    otfx_kv_u64(reply, "ranks_recording", v[F_RECORDING]);
    otfx_kv_u64(reply, "ranks_paused", v[F_PAUSED]);
    otfx_kv_u64(reply, "ranks_finished", v[F_FINISHED]);
    if (v[F_PAUSED_SINCE])
        otfx_kv_u64(reply, "paused_since", v[F_PAUSED_SINCE]);
    if (v[F_NOT_RECORDING_SINCE])
        otfx_kv_u64(reply, "not_recording_since", v[F_NOT_RECORDING_SINCE]);
}

/* Writes " key=0-3,7" for the ranks whose flags & mask == want ("none" when there are none). */
static void put_ranks(otfx_text *reply, otfx_text *scratch, const char *key, const place_entry *e,
                      uint32_t mask, uint32_t want)
{
    scratch->length = 0;
    for (uint32_t i = 0; i < e->rank_count;) {
        if ((e->ranks[i].flags & mask) != want) {
            i++;
            continue;
        }
        uint32_t j = i;
        while (j + 1 < e->rank_count && (e->ranks[j + 1].flags & mask) == want &&
               e->ranks[j + 1].rank == e->ranks[j].rank + 1)
            j++;
        if (j > i)
            otfx_text_appendf(scratch, scratch->length ? ",%u-%u" : "%u-%u", e->ranks[i].rank,
                              e->ranks[j].rank);
        else
            otfx_text_appendf(scratch, scratch->length ? ",%u" : "%u", e->ranks[i].rank);
        i = j + 1;
    }
    if (scratch->length == 0)
        otfx_text_append(scratch, "none", 4);
    otfx_text_append(scratch, "", 1);
    otfx_kv_str(reply, key, scratch->failed ? "" : scratch->data);
}

static bool status_finish(const otfx_command *query, const void *merged, size_t length,
                          uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                          size_t error_size)
{
    (void)query;
    place_entry *e = NULL;
    uint32_t n = 0;
    if (length > 0 && !parse(merged, length, &e, &n)) {
        snprintf(error, error_size, "status: malformed result");
        return false;
    }
    uint64_t total[PLACE_FIELDS] = {0};
    total[F_FIRST_TIME] = UINT64_MAX;
    total[F_CLASSES_ALL] = OTFX_STEER_ALL;
    otfx_text scratch = {0};
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *v = e[i].v;
        otfx_kv_begin(reply, "place");
        otfx_kv_u64(reply, "index", v[F_PLACE]);
        otfx_kv_u64(reply, "ranks", v[F_RANKS]);
        otfx_kv_u64(reply, "first_rank", v[F_FIRST_RANK]);
        otfx_kv_u64(reply, "last_rank", v[F_LAST_RANK]);
        otfx_kv_u64(reply, "threads", v[F_THREADS]);
        otfx_kv_u64(reply, "events_per_s", v[F_EVENTS_PER_S]);
        otfx_kv_u64(reply, "buffer_used", v[F_BYTES_USED]);
        otfx_kv_u64(reply, "buffer_budget", v[F_BUDGET]);
        otfx_kv_u64(reply, "buffer_open", v[F_BYTES_OPEN]);
        otfx_kv_u64(reply, "structure_bytes", v[F_STRUCTURE]);
        otfx_kv_f64(reply, "fill", v[F_BUDGET] ? (double)v[F_BYTES_USED] / (double)v[F_BUDGET] : 0.0);
        otfx_kv_str(reply, "strategy", strategy_text(v[F_STRATEGIES]));
        otfx_kv_u64(reply, "reductions", v[F_REDUCTIONS]);
        otfx_kv_u64(reply, "events_received", v[F_RECEIVED]);
        otfx_kv_u64(reply, "events_held", v[F_HELD]);
        otfx_kv_u64(reply, "events_reduced", v[F_REDUCED]);
        otfx_kv_f64(reply, "reduced_fraction",
                    v[F_RECEIVED] ? (double)v[F_REDUCED] / (double)v[F_RECEIVED] : 0.0);
        for (int k = 0; k < OTFX_REDUCE_COUNT; k++) {
            if (v[F_REDUCED_BY + k] == 0 || !thins_stored_events(k))
                continue;
            char key[32];
            snprintf(key, sizeof key, "reduced_%s", otfx_reduction_name((otfx_reduction)k));
            otfx_kv_u64(reply, key, v[F_REDUCED_BY + k]);
        }
        otfx_kv_u64(reply, "dropped_events", v[F_DROPPED]);
        for (int k = 0; k < OTFX_REDUCE_COUNT; k++) {
            if (v[F_REDUCED_BY + k] == 0 || thins_stored_events(k))
                continue;
            char key[32];
            snprintf(key, sizeof key, "dropped_%s", otfx_reduction_name((otfx_reduction)k));
            otfx_kv_u64(reply, key, v[F_REDUCED_BY + k]);
        }
        otfx_kv_u64(reply, "throttled_calls", throttled_calls(v[F_REDUCED_BY + OTFX_REDUCE_THROTTLE]));
        otfx_kv_u64(reply, "blocked_ns", v[F_BLOCKED]);
        otfx_kv_u64(reply, "intrusion_ns", v[F_INTRUSION]);
        put_states(reply, v);
        put_ranks(reply, &scratch, "paused_ranks", &e[i], RANK_PAUSED | RANK_FINISHED, RANK_PAUSED);
        put_ranks(reply, &scratch, "not_recording_ranks", &e[i], RANK_RECORDING | RANK_FINISHED, 0);
        put_ranks(reply, &scratch, "finished_ranks", &e[i], RANK_FINISHED, RANK_FINISHED);
        otfx_kv_u64(reply, "classes", v[F_CLASSES_ALL]);
        otfx_kv_u64(reply, "classes_any", v[F_CLASSES_ANY]);
        otfx_kv_u64(reply, "stopped_traces", v[F_STOPPED]);
        if (v[F_FIRST_TIME] <= v[F_LAST_TIME]) {
            otfx_kv_u64(reply, "first_time", v[F_FIRST_TIME]);
            otfx_kv_u64(reply, "last_time", v[F_LAST_TIME]);
        }
        otfx_kv_u64(reply, "defs_bytes", v[F_DEFS_BYTES]);
        otfx_kv_u64(reply, "queries_too_large", v[F_TOO_LARGE]);
        otfx_kv_u64(reply, "module_timeouts", v[F_TIMEOUTS]);
        otfx_kv_u64(reply, "module_crashes", v[F_CRASHES]);
        otfx_kv_end(reply);
        for (int k = 0; k < PLACE_FIELDS; k++) {
            if (k == F_FIRST_TIME)
                total[k] = v[k] < total[k] ? v[k] : total[k];
            else if (k == F_LAST_TIME || k == F_PAUSED_SINCE || k == F_NOT_RECORDING_SINCE)
                total[k] = v[k] > total[k] ? v[k] : total[k];
            else if (k == F_CLASSES_ALL)
                total[k] &= v[k];
            else if (k == F_CLASSES_ANY)
                total[k] |= v[k];
            else
                total[k] += v[k];
        }
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < e[i].rank_count; k++) {
            const rank_state *rank = &e[i].ranks[k];
            otfx_kv_begin(reply, "rank");
            otfx_kv_u64(reply, "rank", rank->rank);
            otfx_kv_u64(reply, "place", e[i].v[F_PLACE]);
            otfx_kv_u64(reply, "events_held", rank->held);
            otfx_kv_u64(reply, "events_received", rank->received);
            otfx_kv_u64(reply, "buffer_used", rank->bytes_used);
            otfx_kv_u64(reply, "throttled_calls", rank->throttled_calls);
            otfx_kv_u64(reply, "intrusion_ns", rank->intrusion_ns);
            otfx_kv_str(reply, "recording", rank->flags & RANK_RECORDING ? "on" : "off");
            otfx_kv_str(reply, "app_state",
                        rank->flags & RANK_FINISHED ? "finished"
                        : rank->flags & RANK_PAUSED ? "paused"
                                                    : "running");
            otfx_kv_end(reply);
        }
    otfx_kv_begin(reply, "summary");
    otfx_kv_u64(reply, "places", n);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_u64(reply, "ranks", total[F_RANKS]);
    otfx_kv_u64(reply, "events_per_s", total[F_EVENTS_PER_S]);
    otfx_kv_u64(reply, "buffer_used", total[F_BYTES_USED]);
    otfx_kv_u64(reply, "buffer_budget", total[F_BUDGET]);
    otfx_kv_f64(reply, "fill", total[F_BUDGET] ? (double)total[F_BYTES_USED] / (double)total[F_BUDGET] : 0.0);
    otfx_kv_u64(reply, "structure_bytes", total[F_STRUCTURE]);
    otfx_kv_u64(reply, "events_received", total[F_RECEIVED]);
    otfx_kv_u64(reply, "events_held", total[F_HELD]);
    otfx_kv_u64(reply, "events_reduced", total[F_REDUCED]);
    otfx_kv_u64(reply, "reductions", total[F_REDUCTIONS]);
    otfx_kv_u64(reply, "dropped_events", total[F_DROPPED]);
    for (int k = 0; k < OTFX_REDUCE_COUNT; k++) {
        if (total[F_REDUCED_BY + k] == 0 || thins_stored_events(k))
            continue;
        char key[32];
        snprintf(key, sizeof key, "dropped_%s", otfx_reduction_name((otfx_reduction)k));
        otfx_kv_u64(reply, key, total[F_REDUCED_BY + k]);
    }
    otfx_kv_u64(reply, "throttled_calls", throttled_calls(total[F_REDUCED_BY + OTFX_REDUCE_THROTTLE]));
    otfx_kv_u64(reply, "blocked_ns", total[F_BLOCKED]);
    otfx_kv_u64(reply, "intrusion_ns", total[F_INTRUSION]);
    otfx_kv_u64(reply, "queries_too_large", total[F_TOO_LARGE]);
    otfx_kv_u64(reply, "module_timeouts", total[F_TIMEOUTS]);
    otfx_kv_u64(reply, "module_crashes", total[F_CRASHES]);
    put_states(reply, total);
    otfx_kv_u64(reply, "classes", total[F_CLASSES_ALL]);
    otfx_kv_u64(reply, "classes_any", total[F_CLASSES_ANY]);
    if (total[F_FIRST_TIME] <= total[F_LAST_TIME]) {
        otfx_kv_u64(reply, "first_time", total[F_FIRST_TIME]);
        otfx_kv_u64(reply, "last_time", total[F_LAST_TIME]);
    }
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now) == 0)
        otfx_kv_u64(reply, "now", (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
    otfx_kv_end(reply);
    free_entries(e, n);
    bool failed = reply->failed || scratch.failed;
    otfx_text_free(&scratch);
    if (failed) {
        snprintf(error, error_size, "status: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_status = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "status",
    .help =
        "per event place: ranks, events/s, buffer use, reductions, drops, blocking, recording and app state",
    .leaf = status_leaf,
    .merge = status_merge,
    .finish = status_finish,
};

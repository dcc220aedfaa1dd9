/* test_metric_stats.c — metric profiles from chunk summaries (otfx_query_metric_profile) against the
 * decode path (a walk over otfx_query_events of the window), over many windows of a stream with known
 * counter values read at every ENTER and LEAVE, set marks, visits without values, values read between
 * events, reduction records and calls nested across chunk edges; and kept exact through every reduction
 * strategy: the whole run's metric profile equals the one of the trace that kept every event. */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "trace_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define METRICS    3
#define REGIONS    6
#define MAX_DEPTH  9
#define MAX_EVENTS 60000

typedef struct stream {
    otfx_defs *defs;
    otfx_ref location, mark, metric[METRICS], region[REGIONS], comm;
    otfx_event *events;
    size_t count;
} stream;

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Counters grow between reads; a set mark starts new counters (values start over). The set is metrics
 * {0, 1} or {1, 2}; now and then a read misses a metric, or a value comes between events. */
static void make_stream(stream *s, uint64_t seed, size_t target)
{
    memset(s, 0, sizeof *s);
    s->defs = otfx_defs_create();
    assert_non_null(s->defs);
    assert_int_equal(otfx_defs_location(s->defs, 0, 0, &s->location), OTFX_OK);
    assert_int_equal(otfx_defs_metric(s->defs, "task-clock", "ns", OTFX_METRIC_UINT64, &s->metric[0]),
                     OTFX_OK);
    assert_int_equal(otfx_defs_metric(s->defs, OTFX_METRIC_SET_MARK, "set", OTFX_METRIC_UINT64, &s->mark),
                     OTFX_OK);
    assert_int_equal(otfx_defs_metric(s->defs, "page-faults", "events", OTFX_METRIC_UINT64, &s->metric[1]),
                     OTFX_OK);
    assert_int_equal(otfx_defs_metric(s->defs, "signed", "1", OTFX_METRIC_INT64, &s->metric[2]), OTFX_OK);
    const char *names[REGIONS] = {"main", "solve", "MPI_Send", "kernel", "MPI_Allreduce", "io"};
    const otfx_region_role roles[REGIONS] = {OTFX_ROLE_USER_FUNCTION,  OTFX_ROLE_USER_FUNCTION,
                                             OTFX_ROLE_MPI_P2P,        OTFX_ROLE_USER_FUNCTION,
                                             OTFX_ROLE_MPI_COLLECTIVE, OTFX_ROLE_MPI_OTHER};
    for (int r = 0; r < REGIONS; r++)
        assert_int_equal(otfx_defs_region(s->defs, names[r], roles[r], &s->region[r]), OTFX_OK);
    assert_int_equal(otfx_defs_comm(s->defs, "MPI_COMM_WORLD", NULL, 0, &s->comm), OTFX_OK);
    s->events = calloc(MAX_EVENTS, sizeof *s->events);
    assert_non_null(s->events);
    uint64_t state = seed * 2654435761u + 1;
    uint64_t value[METRICS] = {1000, 5, (uint64_t)-50};
    uint32_t set = 0, depth = 0;
    otfx_time t = 1000;
    while (s->count < target) {
        t += next_random(&state) % 5 == 0 ? 0 : 1 + next_random(&state) % 400;
        for (int m = 0; m < METRICS; m++)
            value[m] += (m == 2 ? (uint64_t)(int64_t)((int)(next_random(&state) % 100) - 60)
                                : next_random(&state) % 900);
        const uint64_t r = next_random(&state) % 100;
        otfx_event *e = &s->events[s->count];
        bool read = false;
        if ((r < 45 && depth < MAX_DEPTH) || depth == 0) {
            *e = (otfx_event){.time = t, .type = OTFX_EV_ENTER};
            e->u.region.region = s->region[next_random(&state) % REGIONS];
            depth++;
            read = true;
        } else if (r < 88) {
            *e = (otfx_event){.time = t, .type = OTFX_EV_LEAVE};
            depth--;
            read = true;
        } else if (r < 93) {
            *e = (otfx_event){.time = t, .type = OTFX_EV_SEND};
            e->u.msg.comm = s->comm;
            e->u.msg.peer = 1;
            e->u.msg.bytes = 64;
        } else if (r < 97) { /* read between events (a sample): no visit uses it */
            *e = (otfx_event){.time = t, .type = OTFX_EV_METRIC};
            e->u.metric.metric = s->metric[1];
            e->u.metric.value = value[1];
        } else if (r < 98) {
            *e = (otfx_event){.time = t, .type = OTFX_EV_REDUCTION};
            e->u.reduction.strategy = OTFX_REDUCE_SOURCE_DROP;
            e->u.reduction.begin = t;
            e->u.reduction.end = t;
            e->u.reduction.events_removed = 3;
        } else {
            t++; /* nothing this step */
            continue;
        }
        s->count++;
        if (!read)
            continue;
        if (next_random(&state) % 200 == 0) { /* the set changes here: new counters */
            set ^= 1;
            s->events[s->count++] =
                (otfx_event){.time = t, .type = OTFX_EV_METRIC, .u.metric = {s->mark, set + 1}};
            for (int m = 0; m < METRICS; m++)
                value[m] = next_random(&state) % 100;
        }
        for (int m = set; m < (int)set + 2; m++) {
            if (next_random(&state) % 40 == 0)
                continue; /* this read failed */
            s->events[s->count++] =
                (otfx_event){.time = t, .type = OTFX_EV_METRIC, .u.metric = {s->metric[m], value[m]}};
        }
    }
}

static void free_stream(stream *s)
{
    free(s->events);
    otfx_defs_destroy(s->defs);
}

static otfx_trace *make_trace(stream *s, size_t budget, otfx_reduction strategy, uint32_t chunk_bytes)
{
    otfx_trace_config config = otfx_trace_config_default(budget);
    config.chunk_bytes = chunk_bytes;
    config.strategy = strategy;
    otfx_trace *trace;
    assert_int_equal(otfx_trace_create(&config, s->defs, s->location, &trace), OTFX_OK);
    size_t done = 0;
    while (done < s->count) { /* batches of varying size, as event places append them */
        size_t n = s->count - done < 777 ? s->count - done : 777, appended = 0;
        otfx_status status = otfx_trace_append(trace, s->events + done, n, &appended);
        assert_true(status == OTFX_OK || (status == OTFX_ERR_STOPPED && strategy == OTFX_REDUCE_STOP));
        assert_int_equal(appended, n);
        done += n;
    }
    return trace;
}

/* ---- the decode path: a walk over the window's events ------------------------------------------- */

typedef struct ref_frame {
    otfx_ref region;
    otfx_time enter;
    uint32_t epoch;
    bool has[METRICS], child_bad[METRICS];
    uint64_t value[METRICS];
    int64_t child_sum[METRICS];
    uint64_t child_ns;
} ref_frame;

typedef struct ref_walk {
    const stream *s;
    ref_frame stack[64];
    uint32_t depth, epoch;
    int collecting; /* 1 ENTER, 2 LEAVE */
    otfx_time collect_time, leave_time;
    ref_frame leaving;
    bool leave_has[METRICS];
    uint64_t leave_value[METRICS];
    otfx_metric_profile_entry totals[REGIONS][METRICS];
} ref_walk;

static int metric_index(const stream *s, otfx_ref metric)
{
    for (int m = 0; m < METRICS; m++) {
        if (s->metric[m] == metric)
            return m;
    }
    return -1;
}

static int region_index(const stream *s, otfx_ref region)
{
    for (int r = 0; r < REGIONS; r++) {
        if (s->region[r] == region)
            return r;
    }
    return -1;
}

static void ref_finish(ref_walk *w)
{
    const ref_frame *v = &w->leaving;
    const uint64_t duration = w->leave_time - v->enter;
    ref_frame *caller = w->depth ? &w->stack[w->depth - 1] : NULL;
    for (int m = 0; m < METRICS; m++) {
        if (v->epoch != w->epoch || !v->has[m] || !w->leave_has[m]) {
            if (caller)
                caller->child_bad[m] = true;
            continue;
        }
        const int64_t delta = (int64_t)(w->leave_value[m] - v->value[m]);
        otfx_metric_profile_entry *t = &w->totals[region_index(w->s, v->region)][m];
        t->visits++;
        t->inclusive += delta;
        t->inclusive_ns += duration;
        if (!v->child_bad[m]) {
            t->exclusive_visits++;
            t->exclusive += delta - v->child_sum[m];
            t->exclusive_ns += duration - v->child_ns;
        }
        if (caller)
            caller->child_sum[m] += delta;
    }
    if (caller)
        caller->child_ns += duration;
}

static int ref_event(const otfx_event *event, void *user)
{
    ref_walk *w = user;
    if (event->type == OTFX_EV_METRIC) {
        if (!w->collecting || event->time != w->collect_time)
            return 0;
        if (event->u.metric.metric == w->s->mark) {
            w->epoch++;
            if (w->collecting == 1) {
                w->stack[w->depth - 1].epoch = w->epoch;
                memset(w->stack[w->depth - 1].has, 0, sizeof w->stack[0].has);
            }
            return 0;
        }
        const int m = metric_index(w->s, event->u.metric.metric);
        if (w->collecting == 1) {
            w->stack[w->depth - 1].value[m] = event->u.metric.value;
            w->stack[w->depth - 1].has[m] = true;
        } else {
            w->leave_value[m] = event->u.metric.value;
            w->leave_has[m] = true;
        }
        return 0;
    }
    if (w->collecting == 2)
        ref_finish(w);
    w->collecting = 0;
    if (event->type == OTFX_EV_ENTER) {
        assert_true(w->depth < 64);
        ref_frame *f = &w->stack[w->depth++];
        memset(f, 0, sizeof *f);
        f->region = event->u.region.region;
        f->enter = event->time;
        f->epoch = w->epoch;
        w->collecting = 1;
        w->collect_time = event->time;
    } else if (event->type == OTFX_EV_LEAVE && w->depth) {
        w->leaving = w->stack[--w->depth];
        w->leave_time = event->time;
        memset(w->leave_has, 0, sizeof w->leave_has);
        w->collecting = 2;
        w->collect_time = event->time;
    } else if (event->type == OTFX_EV_REDUCTION) {
        w->epoch++;
    }
    return 0;
}

static void decode_path(otfx_trace *trace, const stream *s, otfx_time from, otfx_time to, ref_walk *w)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    assert_int_equal(otfx_query_events(trace, from, to, true, ref_event, w), OTFX_OK);
    if (w->collecting == 2)
        ref_finish(w);
}

/* The summary path's answer equals the walk's: every (region, metric) with visits, nothing else. */
static void assert_same(otfx_trace *trace, const stream *s, const ref_walk *expected, otfx_time from,
                        otfx_time to, bool exact)
{
    otfx_metric_profile *profile = otfx_metric_profile_create();
    assert_non_null(profile);
    assert_int_equal(otfx_query_metric_profile(trace, from, to, profile), OTFX_OK);
    if (exact)
        assert_false(otfx_metric_profile_approximate(profile));
    size_t with_visits = 0;
    for (int r = 0; r < REGIONS; r++) {
        for (int m = 0; m < METRICS; m++)
            with_visits += expected->totals[r][m].visits > 0;
    }
    size_t found = 0;
    otfx_metric_profile_entry e;
    for (size_t i = 0; otfx_metric_profile_entry_at(profile, i, &e); i++) {
        const int r = region_index(s, e.region), m = metric_index(s, e.metric);
        assert_true(r >= 0 && m >= 0);
        const otfx_metric_profile_entry *want = &expected->totals[r][m];
        if (!e.visits && !want->visits)
            continue;
        if (want->visits != e.visits || want->inclusive != e.inclusive ||
            want->inclusive_ns != e.inclusive_ns || want->exclusive_visits != e.exclusive_visits ||
            want->exclusive != e.exclusive || want->exclusive_ns != e.exclusive_ns)
            fail_msg("window [%llu, %llu) region %d metric %d: visits %llu/%llu inclusive %lld/%lld "
                     "inclusive_ns %llu/%llu exclusive_visits %llu/%llu exclusive %lld/%lld (expected/got)",
                     (unsigned long long)from, (unsigned long long)to, r, m, (unsigned long long)want->visits,
                     (unsigned long long)e.visits, (long long)want->inclusive, (long long)e.inclusive,
                     (unsigned long long)want->inclusive_ns, (unsigned long long)e.inclusive_ns,
                     (unsigned long long)want->exclusive_visits, (unsigned long long)e.exclusive_visits,
                     (long long)want->exclusive, (long long)e.exclusive);
        found++;
    }
    assert_int_equal(found, with_visits);
    otfx_metric_profile_destroy(profile);
}

static void test_summaries_answer_as_the_decode_path(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        stream s;
        make_stream(&s, seed, 20000);
        /* 1 KiB chunks: about a hundred pieces, calls open across many chunk edges */
        otfx_trace *trace = make_trace(&s, 64u << 20, OTFX_REDUCE_RING, 1024);
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(trace, &status), OTFX_OK);
        assert_int_equal(status.events_reduced[OTFX_REDUCE_RING], 0);
        assert_true(otfx_trace_test_piece_count(trace) > 50);
        const otfx_time first = s.events[0].time, last = s.events[s.count - 1].time;
        uint64_t random = seed;
        ref_walk *expected = malloc(sizeof *expected);
        assert_non_null(expected);
        for (int window = 0; window < 120; window++) {
            otfx_time from, to;
            if (window == 0) {
                from = 0;
                to = OTFX_TIME_MAX;
            } else if (window % 3 == 0) { /* edges on event times: ties with chunk edges */
                from = s.events[next_random(&random) % s.count].time;
                to = s.events[next_random(&random) % s.count].time + 1;
            } else {
                from = first + next_random(&random) % (last - first + 1);
                to = from + 1 + next_random(&random) % (last - first + 1);
            }
            if (from >= to)
                continue;
            decode_path(trace, &s, from, to, expected);
            assert_same(trace, &s, expected, from, to, true);
        }
        free(expected);
        otfx_trace_destroy(trace);
        free_stream(&s);
    }
}

/* Every strategy reduces the same stream in a buffer far too small for it: the whole run's metric
 * profile stays the one of every event, exact; windows whose edges lie in what is still held in detail
 * (after the last reduced range) too. */
static void test_exact_through_every_reduction(void **state)
{
    (void)state;
    stream s;
    make_stream(&s, 7, 50000);
    otfx_trace *full = make_trace(&s, 64u << 20, OTFX_REDUCE_RING, 1024);
    ref_walk *expected = malloc(sizeof *expected);
    assert_non_null(expected);
    const otfx_reduction strategies[] = {OTFX_REDUCE_RING, OTFX_REDUCE_TIME, OTFX_REDUCE_TYPE,
                                         OTFX_REDUCE_DEPTH, OTFX_REDUCE_STOP};
    for (size_t k = 0; k < sizeof strategies / sizeof *strategies; k++) {
        otfx_trace *reduced = make_trace(&s, 64u << 10, strategies[k], 1024);
        otfx_trace_status status;
        assert_int_equal(otfx_trace_status_get(reduced, &status), OTFX_OK);
        assert_true(status.events_reduced[strategies[k]] > 0 || status.events_reduced[OTFX_REDUCE_RING] > 0);
        decode_path(full, &s, 0, OTFX_TIME_MAX, expected);
        assert_same(reduced, &s, expected, 0, OTFX_TIME_MAX, true);
        /* from the reduced ranges into the open chunk (which `stop` refuses): its edge cuts only
         * events held in detail, so the answer is exact */
        if (strategies[k] != OTFX_REDUCE_STOP) {
            const otfx_time late = reduced->open_begin + 1;
            decode_path(full, &s, 0, late, expected);
            assert_same(reduced, &s, expected, 0, late, true);
        }
        otfx_trace_destroy(reduced);
    }
    free(expected);
    otfx_trace_destroy(full);
    free_stream(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summaries_answer_as_the_decode_path),
        cmocka_unit_test(test_exact_through_every_reduction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* metric_stats.h — exact metric statistics of a time range, and the walk that computes them (private).
 *
 * Metric values are read at ENTER and LEAVE: METRIC events right after the event, at its time. A visit
 * of a region *counts* for metric m when both its ENTER and its LEAVE carry a value of m from one set:
 * no METRIC event of OTFX_METRIC_SET_MARK and no REDUCTION event between them (the values on both sides
 * come from different counters). Its inclusive growth is the value at the LEAVE minus the value at the
 * ENTER (modulo 2^64, as int64), its time the LEAVE's time minus the ENTER's; its exclusive growth and
 * time take those of its callees out, and count only when every callee's visit counted for m.
 *
 * A range's metric_stats hold the visits whose LEAVE lies in the range:
 *   - entries: the visits whose ENTER lies in the range too, summed per (region, metric);
 *   - spans: one record per visit and metric entered before the range (at most the calling depth at
 *     the range's start), with its ENTER's and LEAVE's times, so that a window starting or ending
 *     inside the range still counts exactly the visits that lie wholly inside it.
 * Whether an ENTER lies in the range is told by its ordinal (the trace's count of events appended
 * before it) against the ordinal of the range's first event: times may tie at a chunk edge, ordinals
 * never do. Joining a range with the one right after it (metric_stats_append) turns the second's spans
 * that entered in the first into entries. Unlike the rest of a summary, metric statistics are not
 * additive over unrelated ranges: segment totals do not hold them.
 */
#ifndef OTFX_METRIC_STATS_H
#define OTFX_METRIC_STATS_H

#include "otfx/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct metric_totals {
    uint64_t visits, inclusive_ns, exclusive_visits, exclusive_ns;
    int64_t inclusive, exclusive;
} metric_totals;

typedef struct metric_entry {
    otfx_ref region, metric;
    metric_totals totals;
} metric_entry;

/* One visit of `region` entered before the range, for one metric. */
typedef struct metric_span {
    uint64_t enter_ordinal;
    otfx_time enter, leave;
    otfx_ref region, metric;
    uint32_t exclusive_counted; /* every callee counted: exclusive and exclusive_ns hold */
    int64_t inclusive, exclusive;
    uint64_t exclusive_ns;
} metric_span;

typedef struct metric_stats {
    uint64_t first_ordinal; /* of the range's first event */
    bool incomplete;        /* more metrics at once than a walk follows: some visits are missing */
    metric_entry *entries;  /* sorted by (region, metric) */
    metric_span *spans;     /* by LEAVE, oldest first */
    uint32_t entry_count, entry_capacity;
    uint32_t span_count, span_capacity;
} metric_stats;

void metric_stats_init(metric_stats *s);
void metric_stats_free(metric_stats *s);
void metric_stats_clear(metric_stats *s);
size_t metric_stats_heap_bytes(const metric_stats *s);

/* The entry of (region, metric), inserted as zero if absent; NULL when out of memory. */
metric_totals *metric_stats_entry(metric_stats *s, otfx_ref region, otfx_ref metric);
/* Adds `from`'s entries scaled by numerator / denominator (rounded toward zero); spans are left out. */
otfx_status metric_stats_add_entries_scaled(metric_stats *into, const metric_stats *from, uint64_t numerator,
                                            uint64_t denominator);
/* Joins the range `next`, which begins where `into`'s range ends. */
otfx_status metric_stats_append(metric_stats *into, const metric_stats *next);
/* Adds a span (whatever its ordinal) as a counted visit to the entries: for query results. */
otfx_status metric_stats_add_span_as_visit(metric_stats *into, const metric_span *span);

/* Serialised form (varints, docs/otfx-format.md), after the rest of a chunk summary. */
size_t metric_stats_encoded_bound(const metric_stats *s);
uint8_t *metric_stats_encode(const metric_stats *s, uint8_t *out);
/* false when malformed (or out of memory: *nomem); `into` is cleared first. */
bool metric_stats_decode(const uint8_t **in, const uint8_t *end, metric_stats *into, bool *nomem);

/* ---- the walk ----------------------------------------------------------------------------------- */

/* Metrics a walk follows at once (between two set marks); beyond them it marks its output incomplete. */
#define METRIC_WALK_SLOTS 32

typedef struct metric_frame {
    otfx_ref region;
    uint32_t epoch; /* the set its ENTER's values belong to */
    otfx_time enter;
    uint64_t enter_ordinal;
    uint64_t child_ns;
    uint32_t has, child_bad; /* bit per slot: a value at the ENTER / a callee's visit did not count */
    uint64_t value[METRIC_WALK_SLOTS];
    int64_t child_sum[METRIC_WALK_SLOTS];
} metric_frame;

/* The state of a walk over a stream, carried from chunk to chunk by the trace (the calling stack with
 * the values read at each open ENTER), so that visits spanning chunks count exactly. */
typedef struct metric_walk {
    metric_frame *frames;
    uint32_t depth, capacity; /* frames[depth] is the visit a pending LEAVE closed */
    uint32_t epoch;
    otfx_ref slot_metric[METRIC_WALK_SLOTS];
    uint32_t slot_count;
    uint32_t collecting; /* 0, or reading the values of the last ENTER (1) or LEAVE (2) */
    otfx_time collect_time;
    otfx_time leave_time;
    uint32_t leave_has;
    uint64_t leave_value[METRIC_WALK_SLOTS];
    uint64_t ordinal; /* of the next event */
    bool incomplete;
    bool failed; /* out of memory */
    /* per walk, not carried: */
    otfx_ref mark;      /* OTFX_METRIC_SET_MARK's reference, OTFX_REF_NONE if undefined */
    otfx_time from, to; /* visits count when from <= ENTER and LEAVE < to */
    metric_stats *into; /* where counted visits go (by ordinal: entry or span) */
} metric_walk;

void metric_walk_init(metric_walk *w);
void metric_walk_free(metric_walk *w);
/* Copies the carried state of `from` (the per-walk fields of `into` stay). */
otfx_status metric_walk_copy(metric_walk *into, const metric_walk *from);
/* Starts over from a calling context without values (their visits cannot count). */
struct call_frame;
otfx_status metric_walk_reset(metric_walk *w, const struct call_frame *context, uint32_t depth,
                              uint64_t ordinal);
void metric_walk_event(metric_walk *w, const otfx_event *event);
/* The stream ended here: a LEAVE still reading values is closed with what it has. */
void metric_walk_finish(metric_walk *w);

/* The reference of OTFX_METRIC_SET_MARK in `defs`, looking only at metrics defined since *scanned. */
otfx_ref metric_mark_lookup(const otfx_defs *defs, otfx_ref known, uint32_t *scanned);

#endif

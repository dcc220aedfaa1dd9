/* summary.h — exact statistics of a time range (private).
 *
 * A summary holds, for one range of a trace, the statistics that survive any reduction: per region
 * visits, inclusive and exclusive time and point-to-point messages (sorted by region; messages outside
 * every region count under OTFX_REF_NONE), per peer messages and bytes (sorted by peer), how many
 * events the range had, and how many of them each strategy removed. All of it is additive, so the
 * summary of a union of ranges is the sum of theirs and a segment may subtract a piece it loses.
 *
 * A summary also holds the metric statistics of its range (metric_stats.h). Those are exact for adjacent
 * ranges only, so the arithmetic below (summary_add, _subtract, _add_scaled) leaves them alone: whoever
 * joins adjacent ranges joins them with metric_stats_append, and segment totals hold none.
 */
#ifndef OTFX_SUMMARY_H
#define OTFX_SUMMARY_H

#include "metric_stats.h"
#include "otfx/trace.h"

typedef struct summary {
    otfx_profile_entry *regions;
    otfx_peer_stats *peers;
    uint32_t region_count, region_capacity;
    uint32_t peer_count, peer_capacity;
    uint64_t events;                     /* events the range had when it was recorded */
    uint64_t removed[OTFX_REDUCE_COUNT]; /* of those, removed per strategy */
    metric_stats metrics;
} summary;

void summary_init(summary *s);
void summary_free(summary *s);
void summary_clear(summary *s);
/* Heap bytes the summary holds (its arrays' capacities), for budget accounting. */
size_t summary_heap_bytes(const summary *s);

otfx_status summary_add(summary *into, const summary *from);
/* Upper bound of the heap bytes summary_add(into, from) may add to `into`. */
size_t summary_add_growth_bound(const summary *into, const summary *from);
/* Removes `part`, which must have been added before; entries that become zero disappear. */
void summary_subtract(summary *from, const summary *part);
/* Adds `from` scaled by numerator / denominator (rounded down), for pro-rated window edges. */
otfx_status summary_add_scaled(summary *into, const summary *from, uint64_t numerator, uint64_t denominator);

otfx_profile_entry *summary_region(summary *s, otfx_ref region); /* inserts a zero entry if absent */
otfx_peer_stats *summary_peer(summary *s, uint32_t peer);

/* Serialised form (varints, see docs/otfx-format.md). summary_encoded_bound() bounds the size. */
size_t summary_encoded_bound(const summary *s);
size_t summary_encode(const summary *s, uint8_t *out);
/* OTFX_ERR_CORRUPT on malformed input; `into` is cleared first and holds a valid summary after. */
otfx_status summary_decode(const uint8_t *in, size_t size, summary *into);

/* Scaling without overflow: value * numerator / denominator with numerator <= denominator. */
uint64_t summary_scale_u64(uint64_t value, uint64_t numerator, uint64_t denominator);

#endif

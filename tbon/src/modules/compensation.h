/* compensation.h — overhead compensation (docs/analyses.md, "Overhead compensation"): a replay that
 * takes the measurement's intrusion out of every event's time, locally (the recording costs of the
 * stream's earlier events) and across the ranks (a receive's or collective's wait absorbs its partners'
 * delays), and the compensated profile built from it (profile --compensated). Private to otfx_analysis. */
#ifndef OTFX_COMPENSATION_H
#define OTFX_COMPENSATION_H

#include <otfx/analysis.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One region's compensated profile on this place (by the place's reference). */
typedef struct compensated_region {
    uint64_t visits, inclusive, exclusive;
    uint64_t messages_sent, bytes_sent, messages_received, bytes_received;
} compensated_region;

/* One rank at the end of the replay: its last event's measured and compensated time (the latest of its
 * threads'), its delay then (measured − compensated), and the intrusion the costs of its events add up
 * to (what local compensation alone would take out). */
typedef struct compensated_rank {
    uint32_t rank;
    uint64_t measured_end, compensated_end, delay, intrusion;
} compensated_rank;

typedef struct compensation_result {
    compensated_region *regions; /* indexed by region reference */
    size_t region_capacity;
    compensated_rank *ranks; /* sorted by rank, each once */
    uint32_t rank_count;
    /* Receives that took a message from another sender than the receive before them on the same
     * communicator and tag, although compensation puts the later message's send first and its arrival
     * before that receive ended: had they been wildcard receives, the untraced run may have matched them
     * the other way round. Flagged, never reordered. */
    uint64_t reorders;
    uint64_t unmeasured_ranks; /* ranks without a cost measurement (compensated as costing nothing) */
    otfx_replay_stats stats;
} compensation_result;

/* What else a compensation run tells, in each stream's order (any callback may be NULL):
 *   span     the stream's compensated time [begin, end) passed in `region`, the innermost open region
 *            (OTFX_REF_NONE outside every region): consecutive spans of a stream touch, and together
 *            they cover its compensated time from its first event to its last but the ranges without
 *            detail;
 *   reduced  the compensated range [begin, end) of a range without detail (a REDUCTION record);
 *   event    an event and its compensated time, once that is known (a receive's or a collective's
 *            completion after its partners' values came): in the stream's order, never decreasing. */
typedef struct compensation_observer {
    void *user;
    void (*span)(void *user, const otfx_replay_stream *stream, otfx_ref region, otfx_time begin,
                 otfx_time end);
    void (*reduced)(void *user, const otfx_replay_stream *stream, otfx_time begin, otfx_time end);
    void (*event)(void *user, const otfx_replay_stream *stream, const otfx_event *event,
                  otfx_time compensated);
} compensation_observer;

/* Replays the selected ranks' streams from the start of what is held up to query->to with the leaf's
 * exchange, compensating every event; calls whose ENTER lies in [from, to) count in the profile. The
 * observer (NULL: none) sees every stream's compensated time as it goes. */
bool compensation_run(const otfx_command *query, const otfx_leaf_input *input,
                      const compensation_observer *observer, compensation_result *out, char *error,
                      size_t error_size);
void compensation_result_free(compensation_result *result);

/* The index in input->traces of a replay stream's trace (input->trace_count: none). */
size_t compensation_trace_of(const otfx_leaf_input *input, const otfx_replay_stream *stream);

#endif

/* reference.h — statistics computed straight from an array of events, independently of otfx's
 * storage, to check the trace's answers against.
 *
 * Semantics (the ones otfx documents): over a window [from, to), a region instance contributes the
 * part of [enter, leave) inside the window (instances still open end at the last event's time); the
 * time between two events belongs, as exclusive time, to the region on top of the stack after the
 * first; a visit counts when its ENTER lies in the window; a message counts when its event lies in the
 * window, under the region on top of the stack (OTFX_REF_NONE outside every region) and its peer. */
#ifndef OTFX_TEST_REFERENCE_H
#define OTFX_TEST_REFERENCE_H

#include "otfx/trace.h"

typedef struct reference_stats {
    otfx_profile_entry *regions; /* sorted by region, only non-zero entries */
    size_t region_count;
    otfx_peer_stats *peers; /* sorted by peer */
    size_t peer_count;
} reference_stats;

/* Statistics of events[0 .. count) over [from, to). The events must be a valid stream (as appended);
 * the stack starts empty. Returns false when memory runs out. */
bool reference_compute(const otfx_event *events, size_t count, otfx_time from, otfx_time to,
                       reference_stats *out);
void reference_free(reference_stats *stats);

/* A growable array of events, for tests that keep everything they append. */
typedef struct event_log {
    otfx_event *events;
    size_t count, capacity;
} event_log;

bool event_log_append(event_log *log, const otfx_event *events, size_t count);
void event_log_free(event_log *log);

#endif

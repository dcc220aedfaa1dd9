/*
 * metrics.h — metrics read on the application's threads at their events (private to libotfx-capture).
 *
 * The selection is a set of metric_table.h's metrics, one for the process (OTFX_METRICS at start,
 * steering later). Each thread opens its own counters — perf events count the thread that opened them —
 * at its first read after the selection changed, and reads them at every ENTER and LEAVE it records:
 * recorder.c writes the values as a METRICS record after the event, and the thread's set as a METRIC_SET
 * record before its first values (otfx/capture_wire.h), so a switch takes effect at each thread's next
 * event and no value straddles two sets. A metric this machine cannot count is left out of the set and
 * said once on the rank's stderr, with the reason; it never reads as zero.
 */
#ifndef OTFX_CAPTURE_METRICS_H
#define OTFX_CAPTURE_METRICS_H

#include "linkage.h"

#include <otfx/capture_wire.h>

#include <stdbool.h>
#include <stdint.h>

/* Whether the recorder reads metrics at its events: from the first selection on (a selection of none
 * still has each thread write its empty set once). One load and a predictable branch per event. */
CAPTURE_INTERNAL extern bool capture_metrics_on;

/* MPI_Init on an application rank with a place: the rank's number (for messages) and OTFX_METRICS's
 * selection (a mask over the table, 0: none). */
CAPTURE_INTERNAL void capture_metrics_start(int app_rank, uint64_t mask);
/* A new selection for every thread of the process, from its next read on (any thread). */
CAPTURE_INTERNAL void capture_metrics_select(uint64_t mask);
CAPTURE_INTERNAL uint64_t capture_metrics_selected(void);

/* Which metrics of mask and of the selection this thread can count (opened and closed at once), with
 * perf_event_open's errno for the others: the answer's masks, errnos and has_pmu. */
CAPTURE_INTERNAL void capture_metrics_probe(uint64_t mask, struct capture_metrics_answer *answer);

struct capture_metrics_reading {
    bool new_set;    /* the thread's set changed since its last reading: write its definition first */
    uint32_t set_id; /* the thread's set (from 1) */
    uint32_t count;  /* values read (0: the set is empty) */
    struct capture_metric_definition definitions[CAPTURE_METRICS_MAX]; /* with new_set */
    uint64_t values[CAPTURE_METRICS_MAX];
};
/* This thread's values now (opening its counters first when the selection changed). */
CAPTURE_INTERNAL void capture_metrics_read(struct capture_metrics_reading *reading);

#endif

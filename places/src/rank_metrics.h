/*
 * rank_metrics.h — the metrics commands at an event place (private to places/): `metrics set | add |
 * remove` change what the served ranks read (one SET_METRICS message, a mask over the metric table),
 * `metrics list` and `metrics available` ask them (PROBE_METRICS); the ranks' answers
 * (rank_control.c) become the command's record lines (docs/protocol.md, "Metrics").
 */
#ifndef OTFX_PLACES_RANK_METRICS_H
#define OTFX_PLACES_RANK_METRICS_H

#include "event_place_internal.h"

#include <otfx/protocol.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The ranks' selection at start (OTFX_METRICS), as a mask over the table. */
uint64_t place_metrics_at_start(void);
/* The control message's argument for a metrics command, given the place's current selection: the new
 * selection (set, add, remove), nothing (list) or every metric of the table (available: probed). false
 * with why for a name the table does not have or too many metrics. */
bool place_metrics_control(uint64_t selected, const otfx_command *command, uint64_t *argument, char *why,
                           size_t why_size);
/* The place line's fields (ranks, running, selected) and the lines that follow it, from the ranks' last
 * answers (`index`: the place's index in the tree). */
bool place_metrics_describe(const struct event_place *place, uint32_t index, uint64_t selected,
                            const otfx_command *command, otfx_text *fields, otfx_text *lines);

#endif

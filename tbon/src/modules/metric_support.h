/*
 * metric_support.h — what the metric modules (metric_profile.c, metric_timeline.c) share: which of a
 * place's metric definitions a query asks for.
 *
 * A stream's metric values come right after the ENTER or LEAVE they were read at (same time). Where the
 * set of metrics changed, a METRIC event of OTFX_METRIC_SET_MARK (otfx/trace.h) comes first: values on
 * both sides come from different counters and are never subtracted. A REDUCTION record ends comparisons
 * the same way (the mark may be among what it removed).
 */
#ifndef OTFX_TBON_METRIC_SUPPORT_H
#define OTFX_TBON_METRIC_SUPPORT_H

#include <otfx/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most metrics one query follows. */
#define METRIC_QUERY_MAX 64

typedef struct metric_selection {
    uint32_t slot_count; /* metrics asked for and defined at this place */
    otfx_ref ref_of_slot[METRIC_QUERY_MAX];
    uint32_t *slot_of_ref; /* by metric reference: its slot, UINT32_MAX: not asked for */
    uint32_t ref_count;    /* references slot_of_ref covers (metrics defined later: none) */
    otfx_ref mark;         /* OTFX_METRIC_SET_MARK's reference, OTFX_REF_NONE: not defined */
} metric_selection;

/* The metrics of `defs` that `list` names (a comma list; "all" or "": every one but the mark). false
 * (with why) when out of memory or more than METRIC_QUERY_MAX match. */
bool metric_selection_init(metric_selection *selection, otfx_defs *defs, const char *list, char *error,
                           size_t error_size);
void metric_selection_free(metric_selection *selection);

static inline uint32_t metric_slot(const metric_selection *selection, otfx_ref metric)
{
    return metric < selection->ref_count ? selection->slot_of_ref[metric] : UINT32_MAX;
}

#endif

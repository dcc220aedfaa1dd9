/* metric_support.c — the metrics a query asks for (metric_support.h). */
#include "metric_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether `name` is in the comma list (`all` and "" hold every name). */
static bool metric_list_has(const char *list, const char *name)
{
    if (!list[0] || strcmp(list, "all") == 0)
        return true;
    const size_t length = strlen(name);
    for (const char *at = list; *at;) {
        const char *comma = strchr(at, ',');
        const size_t word = comma ? (size_t)(comma - at) : strlen(at);
        if (word == length && memcmp(at, name, length) == 0)
            return true;
        if (!comma)
            break;
        at = comma + 1;
    }
    return false;
}

bool metric_selection_init(metric_selection *selection, otfx_defs *defs, const char *list, char *error,
                           size_t error_size)
{
    memset(selection, 0, sizeof *selection);
    selection->mark = OTFX_REF_NONE;
    const uint32_t count = otfx_defs_count_metrics(defs);
    selection->slot_of_ref = malloc((count ? count : 1) * sizeof *selection->slot_of_ref);
    if (!selection->slot_of_ref) {
        snprintf(error, error_size, "out of memory");
        return false;
    }
    selection->ref_count = count;
    for (uint32_t ref = 0; ref < count; ref++) {
        selection->slot_of_ref[ref] = UINT32_MAX;
        otfx_metric_def def;
        if (otfx_defs_get_metric(defs, ref, &def) != OTFX_OK)
            continue;
        if (strcmp(def.name, OTFX_METRIC_SET_MARK) == 0) {
            selection->mark = ref;
            continue;
        }
        if (!metric_list_has(list, def.name))
            continue;
        if (selection->slot_count == METRIC_QUERY_MAX) {
            snprintf(error, error_size, "more than %d metrics asked for", METRIC_QUERY_MAX);
            metric_selection_free(selection);
            return false;
        }
        selection->ref_of_slot[selection->slot_count] = ref;
        selection->slot_of_ref[ref] = selection->slot_count++;
    }
    return true;
}

void metric_selection_free(metric_selection *selection)
{
    free(selection->slot_of_ref);
    selection->slot_of_ref = NULL;
    selection->ref_count = 0;
}

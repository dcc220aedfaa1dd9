/*
 * rank_metrics.c — `metrics set|add|remove|list|available` at an event place (rank_metrics.h): the
 * selection the place asks its ranks for, and its record lines from the ranks' answers
 * (struct capture_metrics_answer, rank_control.c). Names are those of the metric table
 * (capture/metrics/metric_table.h), which the ranks read too: a selection travels as a mask over it.
 */
#include "rank_metrics.h"

#include "metric_table.h"

#include <otfx/settings.h>

#include <stdio.h>
#include <string.h>
#ifdef OTFX_WITH_PAPI
#include <papi.h>
#include <pthread.h>
#endif

uint64_t place_metrics_at_start(void)
{
    uint64_t mask = 0;
    char why[256];
    /* The ranks stop the job on a bad list (manual_wrappers.c); here it only means none. */
    if (!otfx_metric_parse_list(otfx_setting_string(OTFX_SETTING_METRICS), &mask, why, sizeof why))
        return 0;
    return mask;
}

static uint64_t all_metrics(void)
{
    const size_t count = otfx_metric_count();
    return count >= 64 ? UINT64_MAX : (1ull << count) - 1;
}

bool place_metrics_control(uint64_t selected, const otfx_command *command, uint64_t *argument, char *why,
                           size_t why_size)
{
    uint64_t mask = 0;
    if ((command->kind == OTFX_CMD_METRICS_SET || command->kind == OTFX_CMD_METRICS_ADD ||
         command->kind == OTFX_CMD_METRICS_REMOVE) &&
        !otfx_metric_parse_list(command->metrics, &mask, why, why_size))
        return false;
    switch (command->kind) {
    case OTFX_CMD_METRICS_SET:
        *argument = mask;
        break;
    case OTFX_CMD_METRICS_ADD:
        *argument = selected | mask;
        break;
    case OTFX_CMD_METRICS_REMOVE:
        *argument = selected & ~mask;
        break;
    case OTFX_CMD_METRICS_LIST:
        *argument = 0;
        return true;
    case OTFX_CMD_METRICS_AVAILABLE:
        *argument = all_metrics();
        return true;
    default:
        snprintf(why, why_size, "not a metrics command");
        return false;
    }
    if (__builtin_popcountll(*argument) > OTFX_METRICS_AT_ONCE) {
        snprintf(why, why_size, "%d metrics selected: at most %d are read at once",
                 __builtin_popcountll(*argument), OTFX_METRICS_AT_ONCE);
        return false;
    }
    return true;
}

/* Names of a mask's metrics as a comma list ("none" when empty). */
static void metric_names(uint64_t mask, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < otfx_metric_count() && used < size; i++)
        if (mask & (1ull << i))
            used +=
                (size_t)snprintf(out + used, size - used, "%s%s", used ? "," : "", otfx_metric_at(i)->name);
    if (!out[0])
        snprintf(out, size, "none");
}

#ifdef OTFX_WITH_PAPI
/* PAPI_strerror knows its texts only once the library is initialised. */
static pthread_once_t papi_once = PTHREAD_ONCE_INIT;
static void papi_start(void)
{
    PAPI_library_init(PAPI_VER_CURRENT);
}
#endif

/* Why the rank cannot count metric `index`. */
static void refusal_reason(const struct rank_control_state *control, size_t index, char *out, size_t size)
{
    const struct otfx_metric_info *metric = otfx_metric_at(index);
    if (control->refusal_errno[index] & CAPTURE_METRIC_REFUSED_BY_PAPI) {
        const int error = -(int)(control->refusal_errno[index] & ~CAPTURE_METRIC_REFUSED_BY_PAPI);
#ifdef OTFX_WITH_PAPI
        pthread_once(&papi_once, papi_start);
        const char *text = PAPI_strerror(error);
        if (text)
            snprintf(out, size, "PAPI: %s (papi_avail lists what the rank's machine counts)", text);
        else
            snprintf(out, size, "PAPI: error %d (papi_avail lists what the rank's machine counts)", error);
#else
        snprintf(out, size, "PAPI error %d", error);
#endif
        return;
    }
    snprintf(out, size, "perf_event_open: %s%s", strerror(control->refusal_errno[index]),
             metric->source == OTFX_METRIC_PERF_HARDWARE && !control->has_pmu
                 ? " (the rank's machine has no hardware PMU: /sys/bus/event_source/devices has no 'cpu')"
                 : "");
}

static bool same_metrics(const struct rank_control_state *a, const struct rank_control_state *b)
{
    return a->metrics_selected == b->metrics_selected && a->metrics_counted == b->metrics_counted &&
           a->metrics_refused == b->metrics_refused && a->has_pmu == b->has_pmu &&
           memcmp(a->refusal_errno, b->refusal_errno, sizeof a->refusal_errno) == 0;
}

/* One line per run of neighbouring ranks that answered alike:
 *   metrics ranks=SET place=I selected=LIST counted=LIST refused=LIST
 * and one line per metric they cannot count:
 *   refused ranks=SET place=I metric=NAME reason=TEXT */
static void describe_ranks(const struct event_place *place, uint32_t index, otfx_text *lines)
{
    const int count = place->setup.served_count;
    for (int r = 0; r < count;) {
        const struct rank_control_state *control = &place->ranks[r].control;
        if (!control->metrics_answered) {
            r++;
            continue;
        }
        int last = r;
        while (last + 1 < count && place->ranks[last + 1].control.metrics_answered &&
               same_metrics(control, &place->ranks[last + 1].control))
            last++;
        char ranks[32];
        if (last == r)
            snprintf(ranks, sizeof ranks, "%d", place->ranks[r].rank);
        else
            snprintf(ranks, sizeof ranks, "%d-%d", place->ranks[r].rank, place->ranks[last].rank);
        char names[1024];
        otfx_kv_begin(lines, "metrics");
        otfx_kv_str(lines, "ranks", ranks);
        otfx_kv_u64(lines, "place", index);
        metric_names(control->metrics_selected, names, sizeof names);
        otfx_kv_str(lines, "selected", names);
        metric_names(control->metrics_counted & control->metrics_selected, names, sizeof names);
        otfx_kv_str(lines, "counted", names);
        metric_names(control->metrics_refused & control->metrics_selected, names, sizeof names);
        otfx_kv_str(lines, "refused", names);
        otfx_kv_end(lines);
        for (size_t m = 0; m < otfx_metric_count(); m++) {
            if (!(control->metrics_refused & control->metrics_selected & (1ull << m)))
                continue;
            char reason[256];
            refusal_reason(control, m, reason, sizeof reason);
            otfx_kv_begin(lines, "refused");
            otfx_kv_str(lines, "ranks", ranks);
            otfx_kv_u64(lines, "place", index);
            otfx_kv_str(lines, "metric", otfx_metric_at(m)->name);
            otfx_kv_str(lines, "reason", reason);
            otfx_kv_end(lines);
        }
        r = last + 1;
    }
}

/* One line per metric of the table:
 *   metric name=NAME place=I unit=U source=perf-software|perf-hardware|getrusage|papi accumulated=0|1
 *          counted_ranks=K refused_ranks=J [reason=TEXT (the first refusing rank's)] help=TEXT */
static void describe_table(const struct event_place *place, uint32_t index, otfx_text *lines)
{
    static const char *const sources[] = {"perf-software", "perf-hardware", "getrusage", "papi"};
    for (size_t m = 0; m < otfx_metric_count(); m++) {
        const struct otfx_metric_info *metric = otfx_metric_at(m);
        uint32_t counted = 0, refused = 0;
        const struct rank_control_state *first_refusing = NULL;
        for (int r = 0; r < place->setup.served_count; r++) {
            const struct rank_control_state *control = &place->ranks[r].control;
            if (place->ranks[r].said_goodbye || !control->metrics_answered)
                continue;
            counted += (control->metrics_counted >> m) & 1;
            if ((control->metrics_refused >> m) & 1) {
                refused++;
                if (!first_refusing)
                    first_refusing = control;
            }
        }
        otfx_kv_begin(lines, "metric");
        otfx_kv_str(lines, "name", metric->name);
        otfx_kv_u64(lines, "place", index);
        otfx_kv_str(lines, "unit", metric->unit);
        otfx_kv_str(lines, "source", sources[metric->source]);
        otfx_kv_u64(lines, "accumulated", metric->accumulated);
        otfx_kv_u64(lines, "counted_ranks", counted);
        otfx_kv_u64(lines, "refused_ranks", refused);
        if (first_refusing) {
            char reason[256];
            refusal_reason(first_refusing, m, reason, sizeof reason);
            otfx_kv_str(lines, "reason", reason);
        }
        otfx_kv_str(lines, "help", metric->help);
        otfx_kv_end(lines);
    }
}

bool place_metrics_describe(const struct event_place *place, uint32_t index, uint64_t selected,
                            const otfx_command *command, otfx_text *fields, otfx_text *lines)
{
    uint32_t running = 0;
    for (int r = 0; r < place->setup.served_count; r++)
        running += !place->ranks[r].said_goodbye;
    char names[1024];
    metric_names(selected, names, sizeof names);
    otfx_kv_u64(fields, "ranks", (uint64_t)place->setup.served_count);
    otfx_kv_u64(fields, "running", running);
    otfx_kv_str(fields, "selected", names);
    if (command->kind == OTFX_CMD_METRICS_AVAILABLE)
        describe_table(place, index, lines);
    else
        describe_ranks(place, index, lines);
    return true;
}

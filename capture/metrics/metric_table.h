/*
 * metric_table.h — the metrics otfx reads on the application's threads, as one table: each metric's
 * name (what OTFX_METRICS, otfx-run --metrics and otfxctl metrics take), where its value comes from, its
 * unit and whether it accumulates. libotfx-capture reads them (capture/src/metrics.c); otfx-run checks
 * the names before it starts a job. docs/usage.md ("Metrics") lists them.
 *
 * Sources: Linux perf_event_open software events (always available), perf generic hardware events
 * (only where the machine has a PMU: /sys/bus/event_source/devices/cpu exists), getrusage(2) of the
 * thread, and, when otfx is built with PAPI (OTFX_WITH_PAPI), PAPI presets ("papi:PAPI_TOT_CYC": counted
 * where papi_avail says the machine has them).
 */
#ifndef OTFX_CAPTURE_METRIC_TABLE_H
#define OTFX_CAPTURE_METRIC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum otfx_metric_source {
    OTFX_METRIC_PERF_SOFTWARE, /* config: PERF_COUNT_SW_* */
    OTFX_METRIC_PERF_HARDWARE, /* config: PERF_COUNT_HW_* */
    OTFX_METRIC_RUSAGE,        /* config: enum otfx_rusage_field */
    OTFX_METRIC_PAPI,          /* the PAPI preset named after "papi:" (only when built with PAPI) */
};

enum otfx_rusage_field {
    OTFX_RUSAGE_UTIME,   /* user CPU time, ns */
    OTFX_RUSAGE_STIME,   /* system CPU time, ns */
    OTFX_RUSAGE_MAXRSS,  /* largest resident set, KiB (a level, not a count) */
    OTFX_RUSAGE_MINFLT,  /* page faults without I/O */
    OTFX_RUSAGE_MAJFLT,  /* page faults with I/O */
    OTFX_RUSAGE_NVCSW,   /* voluntary context switches */
    OTFX_RUSAGE_NIVCSW,  /* involuntary context switches */
    OTFX_RUSAGE_INBLOCK, /* file system input blocks */
    OTFX_RUSAGE_OUBLOCK, /* file system output blocks */
};

struct otfx_metric_info {
    const char *name;
    enum otfx_metric_source source;
    uint64_t config;
    const char *unit;
    bool accumulated; /* a counter that only grows (else a level) */
    const char *help;
};

/* The most metrics read at once. */
#define OTFX_METRICS_AT_ONCE 16

/* The table: at most 64 metrics, so that a set of them is a 64-bit mask of their indices. */
size_t otfx_metric_count(void);
const struct otfx_metric_info *otfx_metric_at(size_t index);
/* The index of the metric called name[0..length) (-1: none). */
int otfx_metric_find(const char *name, size_t length);
/* A comma list of names into the mask of their indices (an empty list: 0). false with why (naming the
 * unknown name and where it starts in the list) for a name the table does not have, or for more than
 * OTFX_METRICS_AT_ONCE metrics. */
bool otfx_metric_parse_list(const char *list, uint64_t *mask, char *why, size_t why_size);

#endif

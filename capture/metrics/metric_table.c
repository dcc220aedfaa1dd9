/* metric_table.c — the metrics otfx reads (metric_table.h). */
#include "metric_table.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

static const struct otfx_metric_info metrics[] = {
    /* perf software events: counted by the kernel, on every Linux machine */
    {"task-clock", OTFX_METRIC_PERF_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns", true,
     "CPU time of the thread (perf task-clock)"},
    {"page-faults", OTFX_METRIC_PERF_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "events", true,
     "page faults of the thread"},
    {"minor-faults", OTFX_METRIC_PERF_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, "events", true,
     "page faults served without I/O"},
    {"major-faults", OTFX_METRIC_PERF_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, "events", true,
     "page faults that needed I/O"},
    {"context-switches", OTFX_METRIC_PERF_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "events", true,
     "times the thread was switched out"},
    {"cpu-migrations", OTFX_METRIC_PERF_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "events", true,
     "times the thread moved to another CPU"},
    /* perf generic hardware events: only where the machine has a PMU */
    {"cycles", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles", true, "CPU cycles"},
    {"instructions", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions", true,
     "instructions retired"},
    {"cache-references", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "events", true,
     "last-level cache accesses"},
    {"cache-misses", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "events", true,
     "last-level cache misses"},
    {"branch-instructions", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "instructions",
     true, "branch instructions retired"},
    {"branch-misses", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "events", true,
     "mispredicted branches"},
    {"ref-cycles", OTFX_METRIC_PERF_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, "cycles", true,
     "reference cycles (not scaled by frequency changes)"},
    /* getrusage(RUSAGE_THREAD) */
    {"ru-utime", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_UTIME, "ns", true, "user CPU time (getrusage)"},
    {"ru-stime", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_STIME, "ns", true, "system CPU time (getrusage)"},
    {"ru-maxrss", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_MAXRSS, "KiB", false,
     "largest resident set of the process so far (getrusage)"},
    {"ru-minflt", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_MINFLT, "events", true,
     "page faults without I/O (getrusage)"},
    {"ru-majflt", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_MAJFLT, "events", true, "page faults with I/O (getrusage)"},
    {"ru-nvcsw", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_NVCSW, "events", true,
     "voluntary context switches (getrusage)"},
    {"ru-nivcsw", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_NIVCSW, "events", true,
     "involuntary context switches (getrusage)"},
    {"ru-inblock", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_INBLOCK, "blocks", true,
     "file system input blocks (getrusage)"},
    {"ru-oublock", OTFX_METRIC_RUSAGE, OTFX_RUSAGE_OUBLOCK, "blocks", true,
     "file system output blocks (getrusage)"},
#ifdef OTFX_WITH_PAPI
    /* PAPI presets: PAPI maps them to what the machine counts (papi_avail lists which) */
    {"papi:PAPI_TOT_CYC", OTFX_METRIC_PAPI, 0, "cycles", true, "total cycles (PAPI)"},
    {"papi:PAPI_REF_CYC", OTFX_METRIC_PAPI, 0, "cycles", true, "reference clock cycles (PAPI)"},
    {"papi:PAPI_TOT_INS", OTFX_METRIC_PAPI, 0, "instructions", true, "instructions completed (PAPI)"},
    {"papi:PAPI_FP_OPS", OTFX_METRIC_PAPI, 0, "operations", true, "floating point operations (PAPI)"},
    {"papi:PAPI_LD_INS", OTFX_METRIC_PAPI, 0, "instructions", true, "load instructions (PAPI)"},
    {"papi:PAPI_SR_INS", OTFX_METRIC_PAPI, 0, "instructions", true, "store instructions (PAPI)"},
    {"papi:PAPI_BR_INS", OTFX_METRIC_PAPI, 0, "instructions", true, "branch instructions (PAPI)"},
    {"papi:PAPI_BR_MSP", OTFX_METRIC_PAPI, 0, "events", true, "mispredicted branches (PAPI)"},
    {"papi:PAPI_L1_DCM", OTFX_METRIC_PAPI, 0, "events", true, "level 1 data cache misses (PAPI)"},
    {"papi:PAPI_L2_DCM", OTFX_METRIC_PAPI, 0, "events", true, "level 2 data cache misses (PAPI)"},
    {"papi:PAPI_L3_TCM", OTFX_METRIC_PAPI, 0, "events", true, "level 3 cache misses (PAPI)"},
    {"papi:PAPI_STL_ICY", OTFX_METRIC_PAPI, 0, "cycles", true, "cycles without an instruction issued (PAPI)"},
#endif
};

_Static_assert(sizeof(metrics) / sizeof(metrics[0]) <= 64, "a set of metrics is a 64-bit mask");

size_t otfx_metric_count(void)
{
    return sizeof(metrics) / sizeof(metrics[0]);
}

const struct otfx_metric_info *otfx_metric_at(size_t index)
{
    return index < otfx_metric_count() ? &metrics[index] : NULL;
}

int otfx_metric_find(const char *name, size_t length)
{
    for (size_t i = 0; i < otfx_metric_count(); i++)
        if (strlen(metrics[i].name) == length && memcmp(metrics[i].name, name, length) == 0)
            return (int)i;
    return -1;
}

bool otfx_metric_parse_list(const char *list, uint64_t *mask, char *why, size_t why_size)
{
    *mask = 0;
    if (!list)
        return true;
    for (const char *at = list; *at;) {
        const char *comma = strchr(at, ',');
        size_t length = comma ? (size_t)(comma - at) : strlen(at);
        /* spaces around a name are allowed */
        const char *name = at;
        while (length && *name == ' ') {
            name++;
            length--;
        }
        while (length && name[length - 1] == ' ')
            length--;
        if (length) {
            int index = otfx_metric_find(name, length);
            if (index < 0) {
#ifndef OTFX_WITH_PAPI
                if (length > 5 && memcmp(name, "papi:", 5) == 0)
                    snprintf(
                        why, why_size,
                        "'%.*s' (at character %zu): PAPI metrics need an otfx built with PAPI, which this "
                        "one is not",
                        (int)length, name, (size_t)(name - list) + 1);
                else
#endif
                    snprintf(why, why_size,
                             "'%.*s' (at character %zu) is not a metric otfx knows (docs/usage.md, "
                             "\"Metrics\", lists them)",
                             (int)length, name, (size_t)(name - list) + 1);
                return false;
            }
            *mask |= 1ull << index;
            if (__builtin_popcountll(*mask) > OTFX_METRICS_AT_ONCE) {
                snprintf(why, why_size, "'%.*s' (at character %zu): at most %d metrics are read at once",
                         (int)length, name, (size_t)(name - list) + 1, OTFX_METRICS_AT_ONCE);
                return false;
            }
        }
        if (!comma)
            break;
        at = comma + 1;
    }
    return true;
}

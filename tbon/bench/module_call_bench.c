/*
 * module_call_bench — what running a loaded module out of process costs (otfx_module_call_*,
 * docs/benchmarks.md).
 *
 *   module-call-bench MODULE.so NAME [MIB...]
 *
 * For a process holding MIB MiB of touched memory (default 64 256 1024: the size of a place's traces),
 * calls the module's leaf over a small trace 20 times in a helper process and prints per size:
 *   fork_us    the fork alone (the call's start, until the helper runs; the page tables are copied)
 *   call_us    the whole call, start to result (fork, dlopen in the helper, leaf, pipe, reap)
 * medians, and the in-process leaf for comparison (leaf_us).
 */
#define _POSIX_C_SOURCE 200809L
#include <otfx/analysis.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare);
    return values[n / 2];
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: module-call-bench MODULE.so NAME [MIB...]\n");
        return 2;
    }
    const char *path = argv[1], *name = argv[2];
    otfx_defs *defs = otfx_defs_create();
    otfx_ref region, location;
    otfx_defs_region(defs, "main", OTFX_ROLE_USER_FUNCTION, &region);
    otfx_defs_location(defs, 0, 0, &location);
    otfx_trace_config config = otfx_trace_config_default(1 << 20);
    otfx_trace *trace;
    if (otfx_trace_create(&config, defs, location, &trace) != OTFX_OK)
        return 1;
    otfx_event events[2] = {{.time = 1, .type = OTFX_EV_ENTER, .u.region.region = region},
                            {.time = 2, .type = OTFX_EV_LEAVE, .u.region.region = region}};
    size_t appended;
    otfx_trace_append(trace, events, 2, &appended);
    uint32_t rank_of_trace = 0, thread_of_trace = 0;
    otfx_rank_info rank = {.rank = 0};
    const otfx_leaf_input input = {.defs = defs,
                                   .traces = &trace,
                                   .rank_of_trace = &rank_of_trace,
                                   .thread_of_trace = &thread_of_trace,
                                   .trace_count = 1,
                                   .ranks = &rank,
                                   .rank_count = 1,
                                   .app_ranks = 1};
    otfx_command query;
    memset(&query, 0, sizeof query);
    query.kind = OTFX_CMD_QUERY;
    query.to = UINT64_MAX;
    const otfx_module_limits limits = {.time_limit_ns = 60ull * 1000000000ull, .result_limit = 64u << 20};

    /* the leaf in this process, for comparison */
    char error[512] = "";
    const otfx_analysis_module *module = otfx_analysis_load(path, error, sizeof error);
    if (!module) {
        fprintf(stderr, "module-call-bench: %s\n", error);
        return 1;
    }
    enum { REPEAT = 20 };
    double leaf[REPEAT];
    for (int i = 0; i < REPEAT; i++) {
        otfx_blob out = {0};
        const double started = now_us();
        module->leaf(&query, &input, &out, error, sizeof error);
        leaf[i] = now_us() - started;
        otfx_blob_free(&out);
    }
    printf("leaf_us=%.1f\n", median(leaf, REPEAT));

    static const int defaults[] = {64, 256, 1024};
    const int sizes = argc > 3 ? argc - 3 : 3;
    for (int s = 0; s < sizes; s++) {
        const size_t mib = argc > 3 ? (size_t)atol(argv[3 + s]) : (size_t)defaults[s];
        char *memory = malloc(mib << 20);
        if (!memory)
            return 1;
        memset(memory, 1, mib << 20); /* touched: the page tables a fork copies */
        double fork_us[REPEAT], call_us[REPEAT];
        for (int i = 0; i < REPEAT; i++) {
            const double started = now_us();
            otfx_module_call *call =
                otfx_module_call_leaf(path, name, &query, &input, &limits, error, sizeof error);
            fork_us[i] = now_us() - started;
            if (!call) {
                fprintf(stderr, "module-call-bench: %s\n", error);
                return 1;
            }
            while (!otfx_module_call_poll(call)) {
                const struct timespec pause = {0, 20000};
                nanosleep(&pause, NULL);
            }
            otfx_module_result result;
            otfx_module_call_take(call, &result);
            call_us[i] = now_us() - started;
            if (!result.ok) {
                fprintf(stderr, "module-call-bench: %s\n", result.error);
                return 1;
            }
            otfx_module_result_free(&result);
        }
        printf("rss_mib=%zu fork_us=%.1f call_us=%.1f\n", mib, median(fork_us, REPEAT),
               median(call_us, REPEAT));
        free(memory);
    }
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
    return 0;
}

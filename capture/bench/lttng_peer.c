/*
 * lttng_peer.c — the LTTng-UST peer capture-bench measures beside the recorder: the tracepoint probes
 * (lttng_peer_provider.h) and a call that fires two tracepoints around its body, the analogue of a
 * recorded user-function enter and leave (capture_bench_hooked_call). Built only where liblttng-ust-dev
 * is installed (capture/CMakeLists.txt).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_peer_provider.h"

void capture_bench_lttng_call(volatile long *counter);
int capture_bench_lttng_enabled(void);

void capture_bench_lttng_call(volatile long *counter)
{
    lttng_ust_tracepoint(otfx_bench, function_enter, (uint64_t)(uintptr_t)capture_bench_lttng_call);
    ++*counter;
    lttng_ust_tracepoint(otfx_bench, function_exit, (uint64_t)(uintptr_t)capture_bench_lttng_call);
}

/* Whether an LTTng session enabled the events (else a tracepoint costs one predicted branch). */
int capture_bench_lttng_enabled(void)
{
    return lttng_ust_tracepoint_enabled(otfx_bench, function_enter) != 0;
}

/*
 * lttng_peer_provider.h — the LTTng-UST tracepoint provider capture-bench measures beside the recorder
 * (built only where liblttng-ust-dev is installed: capture/CMakeLists.txt). Two events, the analogue of a
 * user function's enter and leave records: the function's address, the timestamp LTTng takes itself.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER otfx_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_peer_provider.h"

#if !defined(OTFX_BENCH_LTTNG_PEER_PROVIDER_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define OTFX_BENCH_LTTNG_PEER_PROVIDER_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(otfx_bench, function_enter, LTTNG_UST_TP_ARGS(uint64_t, address),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer_hex(uint64_t, address, address)))
LTTNG_UST_TRACEPOINT_EVENT(otfx_bench, function_exit, LTTNG_UST_TP_ARGS(uint64_t, address),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer_hex(uint64_t, address, address)))

#endif

#include <lttng/tracepoint-event.h>

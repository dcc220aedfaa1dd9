/* bad_module.c — analysis modules that misbehave, for the tests of running loaded modules out of
 * process (test_module_host.c, the tree tests in tests/places). One source, built once per misdeed:
 *   BAD_MODULE_CRASH_LEAF   "crasher"  its leaf dereferences NULL (SIGSEGV)
 *   BAD_MODULE_HANG_LEAF    "sleeper"  its leaf sleeps forever
 *   BAD_MODULE_HOG_LEAF     "hog"      its leaf appends without end (stopped by the query memory bound)
 *   BAD_MODULE_CRASH_MERGE  "breaker"  its leaf works, its merge aborts (SIGABRT)
 *   BAD_MODULE_CRASH_LOAD   "broken"   its entry function crashes while the module is being loaded
 * Otherwise its partial result is the place's trace count (u64) and its reply `bad traces=N`. */
#define _POSIX_C_SOURCE 200809L
#include <otfx/analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(BAD_MODULE_CRASH_LEAF)
#define BAD_NAME "crasher"
#elif defined(BAD_MODULE_HANG_LEAF)
#define BAD_NAME "sleeper"
#elif defined(BAD_MODULE_HOG_LEAF)
#define BAD_NAME "hog"
#elif defined(BAD_MODULE_CRASH_MERGE)
#define BAD_NAME "breaker"
#elif defined(BAD_MODULE_CRASH_LOAD)
#define BAD_NAME "broken"
#else
#error "build bad_module.c with one BAD_MODULE_* definition"
#endif

static bool bad_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                     size_t error_size)
{
    (void)query;
    (void)error;
    (void)error_size;
#if defined(BAD_MODULE_CRASH_LEAF)
    volatile int *nowhere = NULL;
    *nowhere = (int)input->trace_count;
#elif defined(BAD_MODULE_HANG_LEAF)
    for (;;) {
        const struct timespec pause = {3600, 0};
        nanosleep(&pause, NULL);
    }
#elif defined(BAD_MODULE_HOG_LEAF)
    static const char chunk[4096];
    while (!out->failed)
        otfx_blob_append(out, chunk, sizeof chunk);
    return false;
#endif
    otfx_blob_u64(out, input->trace_count);
    return !out->failed;
}

static bool bad_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                      char *error, size_t error_size)
{
    (void)query;
#if defined(BAD_MODULE_CRASH_MERGE)
    abort();
#endif
    otfx_blob_reader r = otfx_blob_reader_make(other, other_length);
    uint64_t add = otfx_blob_read_u64(&r), sum = 0;
    if (!otfx_blob_reader_done(&r)) {
        snprintf(error, error_size, BAD_NAME ": malformed partial result");
        return false;
    }
    if (into->length) {
        otfx_blob_reader mine = otfx_blob_reader_make(into->data, into->length);
        sum = otfx_blob_read_u64(&mine);
    }
    into->length = 0;
    otfx_blob_u64(into, sum + add);
    return !into->failed;
}

static bool bad_finish(const otfx_command *query, const void *merged, size_t length, uint32_t places_answered,
                       uint32_t places_total, otfx_text *reply, char *error, size_t error_size)
{
    (void)query;
    (void)error;
    (void)error_size;
    otfx_blob_reader r = otfx_blob_reader_make(merged, length);
    const uint64_t traces = length ? otfx_blob_read_u64(&r) : 0;
    otfx_kv_begin(reply, "bad");
    otfx_kv_u64(reply, "traces", traces);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    return !reply->failed;
}

static const otfx_analysis_module bad_module = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = BAD_NAME,
    .help = "a module that misbehaves (tests)",
    .leaf = bad_leaf,
    .merge = bad_merge,
    .finish = bad_finish,
};

const otfx_analysis_module *otfx_analysis_module_entry(void);
const otfx_analysis_module *otfx_analysis_module_entry(void)
{
#if defined(BAD_MODULE_CRASH_LOAD)
    volatile int *nowhere = NULL;
    return (const otfx_analysis_module *)(uintptr_t)*nowhere;
#endif
    return &bad_module;
}

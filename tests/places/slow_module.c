/*
 * slow_module.c — an analysis module for the tree tests (load-module): `query slow` counts the traces
 * of every event place, and event place 0 takes 800 ms over it, so the root sends a PARTIAL (the other
 * places' count, flagged partial) after 200 ms and the complete REPLY when place 0 answered.
 */
#define _POSIX_C_SOURCE 200809L
#include <otfx/analysis.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

static bool slow_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                      size_t error_size)
{
    (void)query;
    (void)error;
    (void)error_size;
    if (input->place == 0) {
        const struct timespec pause = {0, 800 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    otfx_blob_u64(out, input->trace_count);
    otfx_blob_u64(out, 1); /* places counted */
    return !out->failed;
}

static bool read_pair(const void *bytes, size_t length, uint64_t pair[2])
{
    otfx_blob_reader reader = {bytes, length, 0, false};
    pair[0] = otfx_blob_read_u64(&reader);
    pair[1] = otfx_blob_read_u64(&reader);
    return !reader.failed && reader.offset == length;
}

static bool slow_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                       char *error, size_t error_size)
{
    (void)query;
    uint64_t sum[2] = {0, 0}, add[2];
    if (!read_pair(other, other_length, add) || (into->length && !read_pair(into->data, into->length, sum))) {
        snprintf(error, error_size, "slow: malformed partial result");
        return false;
    }
    into->length = 0;
    otfx_blob_u64(into, sum[0] + add[0]);
    otfx_blob_u64(into, sum[1] + add[1]);
    return !into->failed;
}

static bool slow_finish(const otfx_command *query, const void *merged, size_t length,
                        uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                        size_t error_size)
{
    (void)query;
    uint64_t pair[2] = {0, 0};
    if (length && !read_pair(merged, length, pair)) {
        snprintf(error, error_size, "slow: malformed result");
        return false;
    }
    otfx_kv_begin(reply, "slow");
    otfx_kv_u64(reply, "traces", pair[0]);
    otfx_kv_u64(reply, "places_counted", pair[1]);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    return !reply->failed;
}

static const otfx_analysis_module slow_module = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "slow",
    .help = "traces per event place; event place 0 answers after 800 ms (tests of partial results)",
    .leaf = slow_leaf,
    .merge = slow_merge,
    .finish = slow_finish,
};

const otfx_analysis_module *otfx_analysis_module_entry(void);
const otfx_analysis_module *otfx_analysis_module_entry(void)
{
    return &slow_module;
}

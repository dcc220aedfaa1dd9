/* example_module.c — an analysis module loaded at run time (`load-module PATH`, then `query held`), as a
 * user would write one: events held and received per application rank.
 *
 * Build it as a shared object linked with otfx_analysis and export otfx_analysis_module_entry.
 * Partial result: "HLD1", u32 n, then n entries sorted by rank: u32 rank, u64 held, u64 received.
 * Record lines: `held rank=R events_held=H events_received=N` per rank, then
 * `held-total ranks=K events_held=H events_received=N places_answered=k places_total=n`.
 */
#include <otfx/analysis.h>

#include <stdio.h>
#include <stdlib.h>

#define HELD_MAGIC 0x31444C48u /* "HLD1" */

typedef struct held_entry {
    uint32_t rank;
    uint64_t held, received;
} held_entry;

static bool parse(const void *data, size_t length, held_entry **entries, uint32_t *count)
{
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    *entries = NULL;
    *count = 0;
    if (!otfx_blob_read_header(&r, HELD_MAGIC))
        return false;
    uint32_t n = otfx_blob_read_u32(&r);
    if (r.failed || n > (r.length - r.offset) / 20)
        return false;
    held_entry *e = calloc(n + 1, sizeof *e);
    if (!e)
        return false;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        e[i].rank = otfx_blob_read_u32(&r);
        e[i].held = otfx_blob_read_u64(&r);
        e[i].received = otfx_blob_read_u64(&r);
        if (i > 0 && e[i - 1].rank >= e[i].rank)
            r.failed = true;
    }
    if (!otfx_blob_reader_done(&r)) {
        free(e);
        return false;
    }
    *entries = e;
    *count = n;
    return true;
}

static void write_entries(otfx_blob *out, const held_entry *e, uint32_t n)
{
    otfx_blob_header(out, HELD_MAGIC);
    otfx_blob_u32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        otfx_blob_u32(out, e[i].rank);
        otfx_blob_u64(out, e[i].held);
        otfx_blob_u64(out, e[i].received);
    }
}

static bool held_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                      size_t error_size)
{
    held_entry *e = calloc(input->rank_count + 1, sizeof *e);
    if (!e) {
        snprintf(error, error_size, "held: out of memory");
        return false;
    }
    uint32_t n = 0;
    for (size_t j = 0; j < input->rank_count; j++) { /* the place's ranks come in rank order */
        if (!otfx_rank_set_contains(&query->ranks, input->ranks[j].rank))
            continue;
        held_entry entry = {.rank = input->ranks[j].rank};
        for (size_t i = 0; i < input->trace_count; i++) {
            otfx_trace_status s;
            if (input->rank_of_trace[i] == j && otfx_trace_status_get(input->traces[i], &s) == OTFX_OK) {
                entry.held += s.events_held;
                entry.received += s.events_received;
            }
        }
        e[n++] = entry;
    }
    write_entries(out, e, n);
    free(e);
    return !out->failed;
}

static bool held_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                       char *error, size_t error_size)
{
    (void)query;
    held_entry *a = NULL, *b = NULL;
    uint32_t na = 0, nb = 0;
    if (!parse(other, other_length, &b, &nb) || (into->length && !parse(into->data, into->length, &a, &na))) {
        free(b);
        snprintf(error, error_size, "held: malformed partial result");
        return false;
    }
    held_entry *m = calloc((size_t)na + nb + 1, sizeof *m);
    uint32_t i = 0, j = 0, n = 0;
    while (m && (i < na || j < nb)) {
        if (j == nb || (i < na && a[i].rank < b[j].rank))
            m[n++] = a[i++];
        else if (i == na || b[j].rank < a[i].rank)
            m[n++] = b[j++];
        else {
            m[n] = a[i++];
            m[n].held += b[j].held;
            m[n++].received += b[j++].received;
        }
    }
    otfx_blob out = {0};
    if (m)
        write_entries(&out, m, n);
    free(a);
    free(b);
    free(m);
    if (!m || out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "held: out of memory");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static bool held_finish(const otfx_command *query, const void *merged, size_t length,
                        uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                        size_t error_size)
{
    (void)query;
    held_entry *e = NULL;
    uint32_t n = 0;
    if (length && !parse(merged, length, &e, &n)) {
        snprintf(error, error_size, "held: malformed result");
        return false;
    }
    uint64_t held = 0, received = 0;
    for (uint32_t i = 0; i < n; i++) {
        otfx_kv_begin(reply, "held");
        otfx_kv_u64(reply, "rank", e[i].rank);
        otfx_kv_u64(reply, "events_held", e[i].held);
        otfx_kv_u64(reply, "events_received", e[i].received);
        otfx_kv_end(reply);
        held += e[i].held;
        received += e[i].received;
    }
    otfx_kv_begin(reply, "held-total");
    otfx_kv_u64(reply, "ranks", n);
    otfx_kv_u64(reply, "events_held", held);
    otfx_kv_u64(reply, "events_received", received);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    free(e);
    return !reply->failed;
}

#ifdef OTFX_EXAMPLE_WRONG_ABI /* the loader's test: a module built against another analysis.h */
#define EXAMPLE_ABI (OTFX_ANALYSIS_ABI + 1)
#else
#define EXAMPLE_ABI OTFX_ANALYSIS_ABI
#endif

static const otfx_analysis_module held_module = {
    .abi = EXAMPLE_ABI,
    .name = "held",
    .help = "events held and received per rank (--ranks)",
    .leaf = held_leaf,
    .merge = held_merge,
    .finish = held_finish,
};

const otfx_analysis_module *otfx_analysis_module_entry(void);
const otfx_analysis_module *otfx_analysis_module_entry(void)
{
    return &held_module;
}

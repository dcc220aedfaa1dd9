/* messages.c — the `messages` module: point-to-point messages rank × rank over [from, to), blocked into
 * groups (otfx_rank_selection) when the selected ranks exceed `groups` (default 64).
 *
 * A message counts once, on its sender's side (SEND and ISEND; otfx_query_messages, exact under
 * reduction), when both sender and receiver are selected ranks.
 *
 * Partial result: "MSG1", u32 groups, u32 selected ranks, u32 application ranks, u32 n, then n cells sorted
 * by (src, dst), each once: u32 src group, u32 dst group, u64 count, u64 bytes. Merging adds equal cells:
 * associative and order-independent. Two partials of different shapes (groups, selected) are refused.
 *
 * Record lines of the reply:
 *   matrix from=T0 to=T1 ranks=SET selected=S groups=G grouped=0|1 cells=C count=M bytes=B
 *          places_answered=k places_total=n
 *   messages src=g dst=h src_first=A src_last=B dst_first=C dst_last=D count=M bytes=B
 * One messages line per non-zero cell, sorted by (src, dst); src/dst are group indexes (with grouped=0,
 * group g is the g-th selected rank, so src_first = src_last = that rank).
 */
#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGES_MAGIC 0x3147534Du /* "MSG1" */
#define DEFAULT_GROUPS 64

typedef struct cell {
    uint32_t src, dst;
    uint64_t count, bytes;
} cell;

typedef struct parsed {
    uint32_t groups, selected, app_ranks, count;
    cell *cells;
} parsed;

static uint32_t groups_of(const otfx_command *query)
{
    return query->groups ? query->groups : DEFAULT_GROUPS;
}

static int compare_cells(const void *x, const void *y)
{
    const cell *a = x, *b = y;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    return a->dst < b->dst ? -1 : a->dst > b->dst;
}

static void write_cells(otfx_blob *out, const parsed *shape, const cell *c, uint32_t n)
{
    otfx_blob_header(out, MESSAGES_MAGIC);
    otfx_blob_u32(out, shape->groups);
    otfx_blob_u32(out, shape->selected);
    otfx_blob_u32(out, shape->app_ranks);
    otfx_blob_u32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        otfx_blob_u32(out, c[i].src);
        otfx_blob_u32(out, c[i].dst);
        otfx_blob_u64(out, c[i].count);
        otfx_blob_u64(out, c[i].bytes);
    }
}

static bool messages_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out,
                          char *error, size_t error_size)
{
    otfx_rank_selection selection;
    otfx_rank_selection_init(&selection, &query->ranks, input->app_ranks, groups_of(query));
    size_t capacity = 64, used = 0, cell_capacity = 0;
    otfx_peer_stats *peers = malloc(sizeof *peers * capacity);
    cell *cells = NULL;
    bool ok = peers != NULL;
    for (size_t i = 0; ok && i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count)
            continue;
        uint32_t src = otfx_rank_selection_group(&selection, input->ranks[index].rank);
        if (src == UINT32_MAX)
            continue;
        size_t count = capacity;
        otfx_status status = otfx_query_messages(input->traces[i], query->from, query->to, peers, &count);
        if (status == OTFX_ERR_INVALID && count > capacity) {
            otfx_peer_stats *bigger = realloc(peers, sizeof *peers * count);
            if (!bigger) {
                ok = false;
                break;
            }
            peers = bigger;
            capacity = count;
            status = otfx_query_messages(input->traces[i], query->from, query->to, peers, &count);
        }
        if (status != OTFX_OK) {
            snprintf(error, error_size, "messages of rank %u: %s", input->ranks[index].rank,
                     otfx_last_error());
            free(peers);
            free(cells);
            return false;
        }
        for (size_t k = 0; k < count; k++) {
            uint32_t dst = otfx_rank_selection_group(&selection, peers[k].peer);
            if (dst == UINT32_MAX || peers[k].messages_sent == 0)
                continue;
            if (!otfx_reserve((void **)&cells, &cell_capacity, used + 1, sizeof *cells, 256)) {
                ok = false;
                break;
            }
            cells[used++] = (cell){src, dst, peers[k].messages_sent, peers[k].bytes_sent};
        }
    }
    free(peers);
    if (!ok) {
        free(cells);
        snprintf(error, error_size, "messages: out of memory");
        return false;
    }
    if (used)
        qsort(cells, used, sizeof *cells, compare_cells);
    size_t n = 0;
    for (size_t i = 0; i < used; i++) {
        if (n > 0 && cells[n - 1].src == cells[i].src && cells[n - 1].dst == cells[i].dst) {
            cells[n - 1].count += cells[i].count;
            cells[n - 1].bytes += cells[i].bytes;
        } else
            cells[n++] = cells[i];
    }
    parsed shape = {.groups = selection.groups, .selected = selection.count, .app_ranks = input->app_ranks};
    write_cells(out, &shape, cells, (uint32_t)n);
    free(cells);
    if (out->failed) {
        snprintf(error, error_size, "messages: out of memory");
        return false;
    }
    return true;
}

static bool parse(const void *data, size_t length, parsed *p)
{
    memset(p, 0, sizeof *p);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, MESSAGES_MAGIC))
        return false;
    p->groups = otfx_blob_read_u32(&r);
    p->selected = otfx_blob_read_u32(&r);
    p->app_ranks = otfx_blob_read_u32(&r);
    uint32_t n = otfx_blob_read_u32(&r);
    if (r.failed || p->groups > p->selected || p->selected > p->app_ranks || n > (r.length - r.offset) / 24)
        return false;
    p->cells = n ? malloc(sizeof *p->cells * n) : NULL;
    if (n && !p->cells)
        return false;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        cell *c = &p->cells[i];
        c->src = otfx_blob_read_u32(&r);
        c->dst = otfx_blob_read_u32(&r);
        c->count = otfx_blob_read_u64(&r);
        c->bytes = otfx_blob_read_u64(&r);
        if (c->src >= p->groups || c->dst >= p->groups || (i > 0 && compare_cells(&p->cells[i - 1], c) >= 0))
            r.failed = true;
    }
    p->count = n;
    if (!otfx_blob_reader_done(&r)) {
        free(p->cells);
        p->cells = NULL;
        return false;
    }
    return true;
}

static bool messages_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                           char *error, size_t error_size)
{
    (void)query;
    parsed a = {0}, b;
    if (!parse(other, other_length, &b) || (into->length > 0 && !parse(into->data, into->length, &a))) {
        free(b.cells);
        snprintf(error, error_size, "messages: malformed partial result");
        return false;
    }
    if (into->length > 0 &&
        (a.groups != b.groups || a.selected != b.selected || a.app_ranks != b.app_ranks)) {
        free(a.cells);
        free(b.cells);
        snprintf(error, error_size, "messages: partial results of different shapes");
        return false;
    }
    cell *m = (a.count + b.count) ? malloc(sizeof *m * (a.count + b.count)) : NULL;
    if ((a.count + b.count) && !m) {
        free(a.cells);
        free(b.cells);
        snprintf(error, error_size, "messages: out of memory");
        return false;
    }
    uint32_t i = 0, j = 0, n = 0;
    while (i < a.count || j < b.count) {
        int c = i == a.count ? 1 : j == b.count ? -1 : compare_cells(&a.cells[i], &b.cells[j]);
        if (c < 0)
            m[n++] = a.cells[i++];
        else if (c > 0)
            m[n++] = b.cells[j++];
        else {
            m[n] = a.cells[i++];
            m[n].count += b.cells[j].count;
            m[n].bytes += b.cells[j++].bytes;
            n++;
        }
    }
    otfx_blob out = {.limit = into->limit};
    write_cells(&out, &b, m, n);
    free(m);
    free(a.cells);
    free(b.cells);
    if (out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "messages: out of memory");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static bool messages_finish(const otfx_command *query, const void *merged, size_t length,
                            uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                            size_t error_size)
{
    parsed p = {0};
    if (length > 0 && !parse(merged, length, &p)) {
        snprintf(error, error_size, "messages: malformed result");
        return false;
    }
    /* the selection is rebuilt from the query to name the groups' ranks: it must match the partials' */
    otfx_rank_selection selection;
    otfx_rank_selection_init(&selection, &query->ranks, p.app_ranks, groups_of(query));
    if (length > 0 && (selection.count != p.selected || selection.groups != p.groups)) {
        free(p.cells);
        snprintf(error, error_size, "messages: result does not match the query's ranks");
        return false;
    }
    uint64_t count = 0, bytes = 0;
    for (uint32_t i = 0; i < p.count; i++) {
        count += p.cells[i].count;
        bytes += p.cells[i].bytes;
    }
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "matrix");
    otfx_kv_u64(reply, "from", query->from);
    otfx_kv_u64(reply, "to", query->to);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "selected", p.selected);
    otfx_kv_u64(reply, "groups", p.groups);
    otfx_kv_u64(reply, "grouped", p.selected > p.groups);
    otfx_kv_u64(reply, "cells", p.count);
    otfx_kv_u64(reply, "count", count);
    otfx_kv_u64(reply, "bytes", bytes);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    for (uint32_t i = 0; i < p.count && !reply->failed; i++) {
        uint32_t sf, sl, df, dl;
        otfx_rank_selection_group_ranks(&selection, p.cells[i].src, &sf, &sl);
        otfx_rank_selection_group_ranks(&selection, p.cells[i].dst, &df, &dl);
        otfx_kv_begin(reply, "messages");
        otfx_kv_u64(reply, "src", p.cells[i].src);
        otfx_kv_u64(reply, "dst", p.cells[i].dst);
        otfx_kv_u64(reply, "src_first", sf);
        otfx_kv_u64(reply, "src_last", sl);
        otfx_kv_u64(reply, "dst_first", df);
        otfx_kv_u64(reply, "dst_last", dl);
        otfx_kv_u64(reply, "count", p.cells[i].count);
        otfx_kv_u64(reply, "bytes", p.cells[i].bytes);
        otfx_kv_end(reply);
    }
    free(p.cells);
    if (reply->failed) {
        snprintf(error, error_size, "messages: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_messages = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "messages",
    .help = "point-to-point messages rank x rank, count and bytes (--from --to --ranks --groups)",
    .leaf = messages_leaf,
    .merge = messages_merge,
    .finish = messages_finish,
};

/* timeline.c — the `timeline` module: time × ranks at a requested resolution.
 *
 * Columns (bins, default 100, at most 10000) split a window; rows are the selected ranks, or, when
 * more ranks are selected than `rows` (default 64, at most 4096), `rows` contiguous groups of them
 * (otfx_rank_selection) for which min, mean and max over the group's ranks are given (rows × bins may
 * not exceed 262144: the query fails with a message saying so). Per cell: the
 * time per role of the innermost region (user, p2p, collective, mpi_other, phase), the time covered by
 * reduced ranges (reduced), and the dominant region (otfx_query_timeline, per rank summed over its
 * threads; the dominant region of a rank is the one of its busiest thread; the dominant region of a
 * group's cell is that of its busiest rank there, ties to the lower rank).
 *
 * Windows. With both --from and --to given, the columns are those of otfx_query_timeline: column k
 * starts at from + floor(k*(to-from)/bins) ("mode=window"). When either end is open (--from or --to
 * not given; `--from 0` is a given time) the open end is the oldest / newest event the selected ranks hold,
 * and the columns are aligned: they are W ns wide, W a power of two, and start at origin + k*W (origin =
 * from, or 0 when from is open), using as many columns as needed, at most `bins` ("mode=held"). Leaves choose
 * W from what they hold; merging partials of different W re-bins the finer one exactly for the sums (and so
 * the means) while min, max and dominant then become approximations (approximate=1). When
 * --to is given but --from is open the last column may reach past --to.
 *
 * --compensated: the same columns over compensated time (docs/analyses.md, "Overhead compensation"):
 * the compensation replay's spans of each stream, binned here, in place of otfx_query_timeline.
 *
 * Partial result: "TLN1", u32 mode (0 nothing held, 1 window, 2 held), u64 a, u64 b (window: from, to;
 * held: origin, W), u64 first column index (held), u32 columns, u32 groups, u32 selected, u32 app_ranks,
 * u32 approximate, u32 n names sorted by (name, role): str name, u32 role; u32 n rows sorted by index:
 * u32 index, u32 ranks, then per column: FIELDS × (u64 sum, u64 min, u64 max), u32 dominant (name index
 * or UINT32_MAX), u32 dominant's rank, u64 dominant's weight (that rank's busy time in the cell).
 * Merging: sums add, min/max take min/max, the dominant is the heavier (lower rank on ties): associative
 * and order-independent while no re-binning happens.
 *
 * Record lines of the reply (all times in ns):
 *   timeline mode=window|held|empty from=T0 to=T1 bins=C width_ns=W ranks=SET selected=S rows=G
 *            grouped=0|1 approximate=0|1 places_answered=k places_total=n
 *   legend id=I name=NAME role=user|p2p|collective|mpi_other|phase
 *   row index=g first_rank=A last_rank=B ranks=K FIELD=v0,v1,…,v(C-1) … dominant=d0,d1,…
 * FIELD is user, p2p, collective, mpi_other, phase, reduced; with grouped=1 every FIELD comes as three
 * keys FIELD_min, FIELD_mean, FIELD_max (mean = sum over the group's K ranks held / K, rounded down).
 * dominant lists legend ids, "-" for a cell where no region ran. Rows holding no rank are left out;
 * K counts the group's ranks some place holds. In mode=window, width_ns is (to-from)/bins rounded down
 * (the exact column starts are given above); in mode=held it is W exactly and to = from + C*W.
 */
#include "compensation.h"
#include "replay_support.h"

#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMELINE_MAGIC 0x314E4C54u /* "TLN1" */
#define DEFAULT_BINS   100
#define DEFAULT_ROWS   64
#define MAX_BINS       10000
#define MAX_CELLS      (256 * 1024) /* rows × bins: about 40 MiB of partial result at most */
#define MAX_ROWS       4096
#define FIELDS         6
#define NONE           UINT32_MAX
#define CELL_BYTES     (FIELDS * 3 * 8 + 4 + 4 + 8)
/* Chunks a timeline decodes before it lets a waiting append in (about a millisecond each). */
#define TIMELINE_CHUNKS_PER_LOCK 4

enum { MODE_EMPTY = 0, MODE_WINDOW = 1, MODE_HELD = 2 };
static const char *const field_names[FIELDS] = {"user", "p2p", "collective", "mpi_other", "phase", "reduced"};

typedef struct cell {
    uint64_t sum[FIELDS], min[FIELDS], max[FIELDS];
    uint32_t dominant, dominant_rank;
    uint64_t weight;
} cell;

typedef struct row {
    uint32_t index, ranks;
    cell *cells;
} row;

typedef struct name {
    const char *text;
    uint32_t length, role;
    otfx_ref ref; /* leaf only */
} name;

typedef struct timeline {
    uint32_t mode;
    uint64_t a, b, first;
    uint32_t columns, groups, selected, app_ranks, approximate;
    uint32_t name_count, row_count;
    name *names;
    row *rows;
} timeline;

static void timeline_free(timeline *t)
{
    for (uint32_t i = 0; i < t->row_count; i++)
        free(t->rows[i].cells);
    free(t->rows);
    free(t->names);
    memset(t, 0, sizeof *t);
}

static uint32_t bins_of(const otfx_command *q)
{
    uint32_t bins = q->bins ? q->bins : DEFAULT_BINS;
    return bins > MAX_BINS ? MAX_BINS : bins;
}

static uint32_t rows_of(const otfx_command *q)
{
    uint32_t rows = q->rows ? q->rows : DEFAULT_ROWS;
    return rows > MAX_ROWS ? MAX_ROWS : rows;
}

static int compare_names(const name *a, const name *b)
{
    uint32_t n = a->length < b->length ? a->length : b->length;
    int c = n ? memcmp(a->text, b->text, n) : 0;
    if (c)
        return c;
    if (a->length != b->length)
        return a->length < b->length ? -1 : 1;
    return a->role < b->role ? -1 : a->role > b->role;
}

static int compare_names_qsort(const void *a, const void *b)
{
    return compare_names(a, b);
}

/* Whether candidate (w1, r1) beats (w2, r2) as a cell's dominant. */
static bool heavier(uint64_t w1, uint32_t r1, uint64_t w2, uint32_t r2)
{
    return w1 > w2 || (w1 == w2 && r1 < r2);
}

/* Folds cell `from` (other ranks of the same group, same column) into `into`. */
static void combine_ranks(cell *into, const cell *from)
{
    for (int f = 0; f < FIELDS; f++) {
        into->sum[f] += from->sum[f];
        into->min[f] = from->min[f] < into->min[f] ? from->min[f] : into->min[f];
        into->max[f] = from->max[f] > into->max[f] ? from->max[f] : into->max[f];
    }
    if (from->dominant != NONE && (into->dominant == NONE || heavier(from->weight, from->dominant_rank,
                                                                     into->weight, into->dominant_rank))) {
        into->dominant = from->dominant;
        into->dominant_rank = from->dominant_rank;
        into->weight = from->weight;
    }
}

/* Folds cell `from` (the same ranks, a later column) into `into` when re-binning: exact for sums, and
 * for min/max when the row is one rank. */
static void combine_columns(cell *into, const cell *from)
{
    for (int f = 0; f < FIELDS; f++) {
        into->sum[f] += from->sum[f];
        into->min[f] += from->min[f];
        into->max[f] += from->max[f];
    }
    if (from->dominant != NONE && (into->dominant == NONE || heavier(from->weight, from->dominant_rank,
                                                                     into->weight, into->dominant_rank))) {
        into->dominant = from->dominant;
        into->dominant_rank = from->dominant_rank;
        into->weight = from->weight;
    }
}

static void empty_cells(cell *cells, uint32_t count)
{
    memset(cells, 0, sizeof *cells * count);
    for (uint32_t i = 0; i < count; i++)
        cells[i].dominant = NONE;
}

/* ---- serialisation ------------------------------------------------------------------------------ */

static void write_timeline(otfx_blob *out, const timeline *t)
{
    otfx_blob_header(out, TIMELINE_MAGIC);
    otfx_blob_u32(out, t->mode);
    otfx_blob_u64(out, t->a);
    otfx_blob_u64(out, t->b);
    otfx_blob_u64(out, t->first);
    otfx_blob_u32(out, t->columns);
    otfx_blob_u32(out, t->groups);
    otfx_blob_u32(out, t->selected);
    otfx_blob_u32(out, t->app_ranks);
    otfx_blob_u32(out, t->approximate);
    otfx_blob_u32(out, t->name_count);
    for (uint32_t i = 0; i < t->name_count; i++) {
        otfx_blob_u32(out, t->names[i].length);
        otfx_blob_append(out, t->names[i].text, t->names[i].length);
        otfx_blob_u32(out, t->names[i].role);
    }
    otfx_blob_u32(out, t->row_count);
    for (uint32_t i = 0; i < t->row_count && !out->failed; i++) {
        otfx_blob_u32(out, t->rows[i].index);
        otfx_blob_u32(out, t->rows[i].ranks);
        for (uint32_t c = 0; c < t->columns; c++) {
            const cell *x = &t->rows[i].cells[c];
            for (int f = 0; f < FIELDS; f++) {
                otfx_blob_u64(out, x->sum[f]);
                otfx_blob_u64(out, x->min[f]);
                otfx_blob_u64(out, x->max[f]);
            }
            otfx_blob_u32(out, x->dominant);
            otfx_blob_u32(out, x->dominant_rank);
            otfx_blob_u64(out, x->weight);
        }
    }
}

/* Reads and checks a partial result; names point into `data`. */
static bool parse(const void *data, size_t length, timeline *t)
{
    memset(t, 0, sizeof *t);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, TIMELINE_MAGIC))
        return false;
    t->mode = otfx_blob_read_u32(&r);
    t->a = otfx_blob_read_u64(&r);
    t->b = otfx_blob_read_u64(&r);
    t->first = otfx_blob_read_u64(&r);
    t->columns = otfx_blob_read_u32(&r);
    t->groups = otfx_blob_read_u32(&r);
    t->selected = otfx_blob_read_u32(&r);
    t->app_ranks = otfx_blob_read_u32(&r);
    t->approximate = otfx_blob_read_u32(&r);
    if (r.failed || t->mode > MODE_HELD || t->approximate > 1 || t->columns > MAX_BINS ||
        t->groups > MAX_ROWS || t->groups > t->selected || t->selected > t->app_ranks ||
        (t->mode != MODE_EMPTY && t->columns == 0) || (uint64_t)t->columns * t->groups > MAX_CELLS ||
        (t->mode == MODE_WINDOW && t->a >= t->b) ||
        (t->mode == MODE_HELD &&
         (t->b == 0 || (t->b & (t->b - 1)) != 0 || t->a > UINT64_MAX / 2 ||
          (UINT64_MAX / 4) / t->b < t->columns || t->first > (UINT64_MAX / 4) / t->b - t->columns)))
        return false;
    uint32_t names = otfx_blob_read_u32(&r);
    if (r.failed || names > (r.length - r.offset) / 8)
        return false;
    t->names = names ? calloc(names, sizeof *t->names) : NULL;
    if (names && !t->names)
        return false;
    t->name_count = names;
    for (uint32_t i = 0; i < names && !r.failed; i++) {
        t->names[i].text = otfx_blob_read_str(&r, &t->names[i].length);
        t->names[i].role = otfx_blob_read_u32(&r);
        if (t->names[i].role >= OTFX_ROLE_COUNT ||
            (i > 0 && compare_names(&t->names[i - 1], &t->names[i]) >= 0))
            r.failed = true;
    }
    uint32_t rows = otfx_blob_read_u32(&r);
    size_t row_bytes = 8 + (size_t)t->columns * CELL_BYTES;
    if (r.failed || rows > t->groups || (t->mode == MODE_EMPTY && rows > 0) ||
        rows > (r.length - r.offset) / row_bytes) {
        timeline_free(t);
        return false;
    }
    t->rows = rows ? calloc(rows, sizeof *t->rows) : NULL;
    if (rows && !t->rows) {
        timeline_free(t);
        return false;
    }
    for (uint32_t i = 0; i < rows && !r.failed; i++) {
        row *w = &t->rows[i];
        w->index = otfx_blob_read_u32(&r);
        w->ranks = otfx_blob_read_u32(&r);
        w->cells = malloc(sizeof *w->cells * (t->columns ? t->columns : 1));
        t->row_count = i + 1;
        if (!w->cells || w->index >= t->groups || w->ranks == 0 || w->ranks > t->selected ||
            (i > 0 && t->rows[i - 1].index >= w->index)) {
            r.failed = true;
            break;
        }
        for (uint32_t c = 0; c < t->columns && !r.failed; c++) {
            cell *x = &w->cells[c];
            for (int f = 0; f < FIELDS; f++) {
                x->sum[f] = otfx_blob_read_u64(&r);
                x->min[f] = otfx_blob_read_u64(&r);
                x->max[f] = otfx_blob_read_u64(&r);
            }
            x->dominant = otfx_blob_read_u32(&r);
            x->dominant_rank = otfx_blob_read_u32(&r);
            x->weight = otfx_blob_read_u64(&r);
            if (x->dominant != NONE && x->dominant >= t->name_count)
                r.failed = true;
        }
    }
    if (!otfx_blob_reader_done(&r)) {
        timeline_free(t);
        return false;
    }
    return true;
}

/* ---- leaf --------------------------------------------------------------------------------------- */

static int compare_refs(const void *x, const void *y)
{
    otfx_ref a = *(const otfx_ref *)x, b = *(const otfx_ref *)y;
    return a < b ? -1 : a > b;
}

/* Replaces the region references in the cells by indexes into a sorted table of names. */
static bool name_dominants(timeline *t, otfx_defs *defs)
{
    size_t cells = (size_t)t->row_count * t->columns, n = 0;
    otfx_ref *refs = cells ? malloc(sizeof *refs * cells) : NULL;
    if (cells && !refs)
        return false;
    for (uint32_t i = 0; i < t->row_count; i++)
        for (uint32_t c = 0; c < t->columns; c++)
            if (t->rows[i].cells[c].dominant != NONE)
                refs[n++] = t->rows[i].cells[c].dominant;
    if (n)
        qsort(refs, n, sizeof *refs, compare_refs);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        if (distinct == 0 || refs[distinct - 1] != refs[i])
            refs[distinct++] = refs[i];
    t->names = distinct ? calloc(distinct, sizeof *t->names) : NULL;
    if (distinct && !t->names) {
        free(refs);
        return false;
    }
    for (size_t i = 0; i < distinct; i++) {
        otfx_region_def def;
        if (otfx_defs_get_region(defs, refs[i], &def) != OTFX_OK) {
            def.name = "?";
            def.role = OTFX_ROLE_USER_FUNCTION;
        }
        t->names[i] = (name){def.name, (uint32_t)strlen(def.name), (uint32_t)def.role, refs[i]};
    }
    t->name_count = (uint32_t)distinct;
    if (distinct)
        qsort(t->names, distinct, sizeof *t->names, compare_names_qsort);
    /* ref → sorted position, through the ref-sorted array */
    uint32_t *position = distinct ? malloc(sizeof *position * distinct) : NULL;
    if (distinct && !position) {
        free(refs);
        return false;
    }
    for (size_t i = 0; i < distinct; i++) {
        const otfx_ref *hit = bsearch(&t->names[i].ref, refs, distinct, sizeof *refs, compare_refs);
        position[hit - refs] = (uint32_t)i;
    }
    for (uint32_t i = 0; i < t->row_count; i++)
        for (uint32_t c = 0; c < t->columns; c++) {
            cell *x = &t->rows[i].cells[c];
            if (x->dominant != NONE) {
                const otfx_ref *hit = bsearch(&x->dominant, refs, distinct, sizeof *refs, compare_refs);
                x->dominant = position[hit - refs];
            }
        }
    free(position);
    free(refs);
    return true;
}

/* otfx_query_timeline of one trace, letting the place's appends in every TIMELINE_CHUNKS_PER_LOCK chunks
 * decoded (bins finer than the chunks decode everything the window holds). */
static bool trace_timeline(otfx_trace *trace, uint64_t from, uint64_t to, uint32_t columns,
                           otfx_timeline_bin *bins)
{
    return otfx_query_timeline_yielding(trace, from, to, columns, bins, TIMELINE_CHUNKS_PER_LOCK) == OTFX_OK;
}

/* ---- timeline --compensated --------------------------------------------------------------------- */

/* The bins of every trace on the compensated clock: the compensation replay's spans (and reduced ranges)
 * split at the columns' edges, column k starting at from + floor(k * (to - from) / columns) as in
 * otfx_query_timeline; a column's dominant region is the one with the most time in it. */
typedef struct span_stream {
    bool known;
    size_t trace;     /* its trace's index in the leaf input (trace_count: none) */
    uint32_t current; /* the column the region times are about */
    otfx_time current_begin, current_end;
    uint64_t *region_time; /* by region reference, in the current column */
    size_t region_capacity;
    otfx_ref *touched;
    size_t touched_count, touched_capacity;
    otfx_ref cached_region;
    otfx_region_role cached_role;
} span_stream;

typedef struct span_bins {
    const otfx_leaf_input *input;
    otfx_time from, to;
    uint32_t columns;
    otfx_timeline_bin *bins; /* trace_count × columns */
    span_stream *streams;
    size_t stream_capacity;
    bool failed;
} span_bins;

static uint64_t mul_div(uint64_t value, uint64_t numerator, uint64_t denominator)
{
    if (numerator == 0 || value <= UINT64_MAX / numerator)
        return value * numerator / denominator;
    return (uint64_t)((unsigned __int128)value * numerator / denominator);
}

static otfx_time column_start(const span_bins *b, uint32_t column)
{
    return b->from + mul_div(b->to - b->from, column, b->columns);
}

static uint32_t column_of(const span_bins *b, otfx_time time)
{
    uint32_t column = (uint32_t)mul_div(time - b->from, b->columns, b->to - b->from);
    if (column >= b->columns)
        column = b->columns - 1;
    while (column > 0 && column_start(b, column) > time)
        column--;
    while (column + 1 < b->columns && column_start(b, column + 1) <= time)
        column++;
    return column;
}

static span_stream *span_stream_of(span_bins *b, const otfx_replay_stream *stream)
{
    span_stream *s =
        stream_slot((void **)&b->streams, &b->stream_capacity, sizeof *b->streams, stream->index);
    if (!s) {
        b->failed = true;
        return NULL;
    }
    if (!s->known) {
        s->known = true;
        s->trace = compensation_trace_of(b->input, stream);
        s->current = UINT32_MAX;
        s->cached_region = OTFX_REF_NONE;
    }
    return s->trace < b->input->trace_count ? s : NULL;
}

/* Closes the stream's current column: its dominant region. */
static void span_finish_column(span_bins *b, span_stream *s)
{
    if (s->current == UINT32_MAX)
        return;
    uint64_t best = 0;
    otfx_ref dominant = OTFX_REF_NONE;
    for (size_t i = 0; i < s->touched_count; i++) {
        const otfx_ref region = s->touched[i];
        const uint64_t time = s->region_time[region];
        if (time > best || (time == best && time > 0 && region < dominant)) {
            best = time;
            dominant = region;
        }
        s->region_time[region] = 0;
    }
    b->bins[s->trace * b->columns + s->current].dominant_region = dominant;
    s->touched_count = 0;
    s->current = UINT32_MAX;
}

static void span_add(span_bins *b, span_stream *s, otfx_ref region, otfx_time begin, otfx_time end,
                     bool reduced)
{
    begin = begin > b->from ? begin : b->from;
    end = end < b->to ? end : b->to;
    while (begin < end && !b->failed) {
        if (s->current == UINT32_MAX || begin < s->current_begin || begin >= s->current_end) {
            span_finish_column(b, s);
            s->current = column_of(b, begin);
            s->current_begin = column_start(b, s->current);
            s->current_end = s->current + 1 < b->columns ? column_start(b, s->current + 1) : b->to;
        }
        const otfx_time part_end = end < s->current_end ? end : s->current_end;
        otfx_timeline_bin *bin = &b->bins[s->trace * b->columns + s->current];
        const uint64_t time = part_end - begin;
        begin = part_end;
        if (reduced) {
            bin->reduced_time += time;
            continue;
        }
        if (region == OTFX_REF_NONE)
            continue; /* outside every region: idle, as in otfx_query_timeline */
        if (region != s->cached_region) {
            otfx_region_def def;
            s->cached_region = region;
            s->cached_role = otfx_defs_get_region(b->input->defs, region, &def) == OTFX_OK
                                 ? def.role
                                 : OTFX_ROLE_USER_FUNCTION;
        }
        bin->role_time[s->cached_role] += time;
        uint64_t *slot =
            stream_slot((void **)&s->region_time, &s->region_capacity, sizeof *s->region_time, region);
        if (!slot || (*slot == 0 && !otfx_reserve((void **)&s->touched, &s->touched_capacity,
                                                  s->touched_count + 1, sizeof *s->touched, 16))) {
            b->failed = true;
            return;
        }
        if (*slot == 0)
            s->touched[s->touched_count++] = region;
        *slot += time;
    }
}

static void on_span(void *user, const otfx_replay_stream *stream, otfx_ref region, otfx_time begin,
                    otfx_time end)
{
    span_bins *b = user;
    span_stream *s = span_stream_of(b, stream);
    if (s)
        span_add(b, s, region, begin, end, false);
}

static void on_reduced(void *user, const otfx_replay_stream *stream, otfx_time begin, otfx_time end)
{
    span_bins *b = user;
    span_stream *s = span_stream_of(b, stream);
    if (s)
        span_add(b, s, OTFX_REF_NONE, begin, end, true);
}

/* Every trace's bins over [from, to) on the compensated clock (trace_count × columns, free() them);
 * NULL with why in `error`. The replay runs over everything held: events measured after `to` may lie
 * before it compensated. */
static otfx_timeline_bin *compensated_bins(const otfx_command *query, const otfx_leaf_input *input,
                                           otfx_time from, otfx_time to, uint32_t columns, char *error,
                                           size_t error_size)
{
    const size_t count = input->trace_count * (size_t)columns;
    if (input->result_limit && count > input->result_limit / sizeof(otfx_timeline_bin)) {
        snprintf(error, error_size,
                 "timeline --compensated: %zu streams x %u bins exceed the query memory bound: ask for fewer "
                 "--bins or --ranks",
                 input->trace_count, columns);
        return NULL;
    }
    span_bins b = {.input = input, .from = from, .to = to, .columns = columns};
    b.bins = malloc(sizeof *b.bins * (count ? count : 1));
    if (!b.bins) {
        snprintf(error, error_size, "timeline --compensated: out of memory");
        return NULL;
    }
    memset(b.bins, 0, sizeof *b.bins * count);
    for (size_t i = 0; i < count; i++)
        b.bins[i].dominant_region = OTFX_REF_NONE;
    otfx_command everything = *query;
    everything.to = OTFX_TIME_MAX;
    const compensation_observer observer = {.user = &b, .span = on_span, .reduced = on_reduced};
    compensation_result result;
    bool ok = compensation_run(&everything, input, &observer, &result, error, error_size);
    if (ok)
        compensation_result_free(&result);
    for (size_t i = 0; i < b.stream_capacity; i++) {
        if (b.streams[i].known && b.streams[i].trace < input->trace_count)
            span_finish_column(&b, &b.streams[i]);
        free(b.streams[i].region_time);
        free(b.streams[i].touched);
    }
    free(b.streams);
    if (ok && b.failed) {
        snprintf(error, error_size, "timeline --compensated: out of memory");
        ok = false;
    }
    if (!ok) {
        free(b.bins);
        return NULL;
    }
    return b.bins;
}

static bool timeline_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out,
                          char *error, size_t error_size)
{
    uint32_t bins = bins_of(query);
    otfx_rank_selection selection;
    otfx_rank_selection_init(&selection, &query->ranks, input->app_ranks, rows_of(query));
    timeline t;
    memset(&t, 0, sizeof t);
    t.groups = selection.groups;
    t.selected = selection.count;
    t.app_ranks = input->app_ranks;
    /* a caller that filled the struct itself without the flags: from = 0 / to = UINT64_MAX are open */
    bool open_from = !query->from_given && query->from == 0;
    bool open_to = !query->to_given && query->to == UINT64_MAX;
    uint64_t from = query->from, to = query->to;
    if (!open_from && !open_to) {
        if (from >= to) {
            snprintf(error, error_size, "timeline: empty window (from >= to)");
            return false;
        }
        t.mode = MODE_WINDOW;
        t.a = from;
        t.b = to;
        t.columns = bins;
    } else {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < input->trace_count; i++) {
            uint32_t index = input->rank_of_trace[i];
            if (index >= input->rank_count ||
                otfx_rank_selection_position(&selection, input->ranks[index].rank) == UINT32_MAX)
                continue;
            otfx_trace_status s;
            if (otfx_trace_status_get(input->traces[i], &s) != OTFX_OK || s.first_time > s.last_time)
                continue;
            lo = s.first_time < lo ? s.first_time : lo;
            hi = s.last_time + 1 > hi ? s.last_time + 1 : hi;
        }
        if (!open_from)
            lo = from;
        if (!open_to)
            hi = to;
        uint64_t origin = open_from ? 0 : from;
        /* Times from clients may be anything; held events lie far below 2^61 ns (73 years of clock).
         * Clamping the range there keeps every column end representable, as parse() requires. */
        const uint64_t span_max = UINT64_C(1) << 61;
        if (origin > span_max)
            lo = hi; /* nothing is held that late */
        else if (hi > origin + span_max)
            hi = origin + span_max;
        if (lo < hi && lo >= origin) {
            uint64_t width = 1, first = 0, columns = 0;
            for (;;) {
                first = (lo - origin) / width;
                uint64_t end = (hi - origin) / width + ((hi - origin) % width != 0);
                columns = end - first;
                if (columns <= bins || width >= span_max)
                    break;
                width *= 2;
            }
            t.mode = MODE_HELD;
            t.a = origin;
            t.b = width;
            t.first = first;
            t.columns = (uint32_t)columns;
            from = origin + first * width;
            to = from + columns * width;
        }
    }
    if ((uint64_t)t.columns * t.groups > MAX_CELLS) {
        snprintf(error, error_size, "timeline: rows x bins must stay within %u cells (asked %u x %u)",
                 (unsigned)MAX_CELLS, t.groups, t.columns);
        return false;
    }
    bool ok = true;
    otfx_timeline_bin *compensated = NULL;
    if (t.mode != MODE_EMPTY && query->compensated &&
        !(compensated = compensated_bins(query, input, from, to, t.columns, error, error_size)))
        return false;
    if (t.mode != MODE_EMPTY) {
        t.rows = calloc(t.groups, sizeof *t.rows);
        otfx_timeline_bin *bin = malloc(sizeof *bin * t.columns);
        cell *rank_cells = malloc(sizeof *rank_cells * t.columns);
        ok = t.rows && bin && rank_cells;
        for (size_t j = 0; ok && j < input->rank_count; j++) {
            uint32_t rank = input->ranks[j].rank;
            uint32_t group = otfx_rank_selection_group(&selection, rank);
            if (group == UINT32_MAX)
                continue;
            bool held = false;
            empty_cells(rank_cells, t.columns);
            for (size_t i = 0; ok && i < input->trace_count; i++) {
                if (input->rank_of_trace[i] != j)
                    continue;
                if (compensated)
                    memcpy(bin, compensated + i * t.columns, sizeof *bin * t.columns);
                else if (!trace_timeline(input->traces[i], from, to, t.columns, bin)) {
                    snprintf(error, error_size, "timeline of rank %u: %s", rank, otfx_last_error());
                    free(bin);
                    free(rank_cells);
                    free(compensated);
                    timeline_free(&t);
                    return false;
                }
                held = true;
                for (uint32_t c = 0; c < t.columns; c++) {
                    cell *x = &rank_cells[c];
                    uint64_t busy = 0;
                    for (int f = 0; f < OTFX_ROLE_COUNT; f++) {
                        x->sum[f] += bin[c].role_time[f];
                        busy += bin[c].role_time[f];
                    }
                    x->sum[FIELDS - 1] += bin[c].reduced_time;
                    if (bin[c].dominant_region != OTFX_REF_NONE &&
                        (x->dominant == NONE || busy > x->weight)) {
                        x->dominant = bin[c].dominant_region;
                        x->weight = busy;
                        x->dominant_rank = rank;
                    }
                }
            }
            if (!held)
                continue;
            for (uint32_t c = 0; c < t.columns; c++)
                for (int f = 0; f < FIELDS; f++)
                    rank_cells[c].min[f] = rank_cells[c].max[f] = rank_cells[c].sum[f];
            row *w = &t.rows[group];
            if (!w->cells) {
                w->cells = malloc(sizeof *w->cells * t.columns);
                if (!w->cells) {
                    ok = false;
                    break;
                }
                memcpy(w->cells, rank_cells, sizeof *w->cells * t.columns);
                w->index = group;
            } else
                for (uint32_t c = 0; c < t.columns; c++)
                    combine_ranks(&w->cells[c], &rank_cells[c]);
            w->ranks++;
        }
        free(bin);
        free(rank_cells);
        free(compensated);
        if (ok) { /* keep the rows holding ranks, in index order */
            uint32_t n = 0;
            for (uint32_t g = 0; g < t.groups; g++)
                if (t.rows[g].cells)
                    t.rows[n++] = t.rows[g];
            t.row_count = n;
            ok = name_dominants(&t, input->defs);
        } else if (t.rows) {
            for (uint32_t g = 0; g < t.groups; g++)
                free(t.rows[g].cells);
            free(t.rows);
            t.rows = NULL;
        }
    }
    if (ok)
        write_timeline(out, &t);
    timeline_free(&t);
    if (!ok || out->failed) {
        snprintf(error, error_size, "timeline: out of memory");
        return false;
    }
    return true;
}

/* ---- merge -------------------------------------------------------------------------------------- */

/* Re-bins a held-mode timeline to columns of `width` starting at column `first` (of that width),
 * `columns` of them. */
static bool rebin(timeline *t, uint64_t width, uint64_t first, uint32_t columns)
{
    uint64_t factor = width / t->b;
    if (factor > 1 && t->row_count > 0)
        t->approximate = 1;
    for (uint32_t i = 0; i < t->row_count; i++) {
        cell *cells = malloc(sizeof *cells * columns);
        if (!cells)
            return false;
        empty_cells(cells, columns);
        bool *used = calloc(columns, sizeof *used);
        if (!used) {
            free(cells);
            return false;
        }
        for (uint32_t c = 0; c < t->columns; c++) {
            uint64_t k = (t->first + c) / factor - first;
            if (k >= columns)
                continue; /* cannot happen: the new range covers the old one */
            if (!used[k]) {
                cells[k] = t->rows[i].cells[c];
                used[k] = true;
            } else
                combine_columns(&cells[k], &t->rows[i].cells[c]);
        }
        free(used);
        free(t->rows[i].cells);
        t->rows[i].cells = cells;
    }
    t->b = width;
    t->first = first;
    t->columns = columns;
    return true;
}

/* Brings two held-mode timelines onto one grid of at most `bins` columns. */
static bool align(timeline *x, timeline *y, uint32_t bins)
{
    if (x->a != y->a)
        return false;
    uint64_t width = x->b > y->b ? x->b : y->b;
    uint64_t first, columns;
    for (;;) {
        uint64_t x0 = x->first * x->b / width, y0 = y->first * y->b / width;
        uint64_t x1 = ((x->first + x->columns) * x->b + width - 1) / width;
        uint64_t y1 = ((y->first + y->columns) * y->b + width - 1) / width;
        first = x0 < y0 ? x0 : y0;
        columns = (x1 > y1 ? x1 : y1) - first;
        if (columns <= bins || width >= (UINT64_C(1) << 62))
            break;
        width *= 2;
    }
    if (columns > MAX_BINS)
        return false;
    return rebin(x, width, first, (uint32_t)columns) && rebin(y, width, first, (uint32_t)columns);
}

static bool timeline_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                           char *error, size_t error_size)
{
    timeline a, b;
    if (!parse(other, other_length, &b)) {
        snprintf(error, error_size, "timeline: malformed partial result");
        return false;
    }
    if (into->length == 0) {
        timeline_free(&b);
        otfx_blob copy = {.limit = into->limit};
        otfx_blob_append(&copy, other, other_length);
        if (copy.failed) {
            snprintf(error, error_size, "timeline: out of memory");
            return false;
        }
        otfx_blob_free(into);
        *into = copy;
        return true;
    }
    if (!parse(into->data, into->length, &a)) {
        timeline_free(&b);
        snprintf(error, error_size, "timeline: malformed partial result");
        return false;
    }
    const char *why = NULL;
    timeline m;
    memset(&m, 0, sizeof m);
    if (a.groups != b.groups || a.selected != b.selected || a.app_ranks != b.app_ranks)
        why = "partial results of different shapes";
    else if (a.mode != MODE_EMPTY && b.mode != MODE_EMPTY && a.mode != b.mode)
        why = "partial results of different windows";
    else if (a.mode == MODE_WINDOW && b.mode == MODE_WINDOW &&
             (a.a != b.a || a.b != b.b || a.columns != b.columns))
        why = "partial results of different windows";
    else if (a.mode == MODE_HELD && b.mode == MODE_HELD && !align(&a, &b, bins_of(query)))
        why = "partial results of different windows";
    if (!why && (a.mode == MODE_EMPTY || b.mode == MODE_EMPTY)) {
        /* the one with data wins; an empty one only adds its shape, which is the same */
        otfx_blob copy = {.limit = into->limit};
        if (a.mode == MODE_EMPTY)
            otfx_blob_append(&copy, other, other_length);
        else
            otfx_blob_append(&copy, into->data, into->length);
        timeline_free(&a);
        timeline_free(&b);
        if (copy.failed) {
            snprintf(error, error_size, "timeline: out of memory");
            return false;
        }
        otfx_blob_free(into);
        *into = copy;
        return true;
    }
    uint32_t *map_a = NULL, *map_b = NULL;
    if (!why) {
        m = a;
        m.approximate = a.approximate | b.approximate;
        m.names = calloc(a.name_count + b.name_count + 1, sizeof *m.names);
        map_a = malloc(sizeof *map_a * (a.name_count + 1));
        map_b = malloc(sizeof *map_b * (b.name_count + 1));
        m.rows = calloc(a.row_count + b.row_count + 1, sizeof *m.rows);
        m.row_count = 0;
        m.name_count = 0;
        if (!m.names || !map_a || !map_b || !m.rows)
            why = "out of memory";
    }
    if (!why) {
        uint32_t i = 0, j = 0;
        while (i < a.name_count || j < b.name_count) {
            int c = i == a.name_count ? 1 : j == b.name_count ? -1 : compare_names(&a.names[i], &b.names[j]);
            if (c <= 0)
                map_a[i] = m.name_count;
            if (c >= 0)
                map_b[j] = m.name_count;
            m.names[m.name_count++] = c <= 0 ? a.names[i] : b.names[j];
            i += c <= 0;
            j += c >= 0;
        }
        for (uint32_t k = 0; k < a.row_count; k++)
            for (uint32_t c = 0; c < a.columns; c++)
                if (a.rows[k].cells[c].dominant != NONE)
                    a.rows[k].cells[c].dominant = map_a[a.rows[k].cells[c].dominant];
        for (uint32_t k = 0; k < b.row_count; k++)
            for (uint32_t c = 0; c < b.columns; c++)
                if (b.rows[k].cells[c].dominant != NONE)
                    b.rows[k].cells[c].dominant = map_b[b.rows[k].cells[c].dominant];
        i = j = 0;
        while (i < a.row_count || j < b.row_count) {
            int c = i == a.row_count                    ? 1
                    : j == b.row_count                  ? -1
                    : a.rows[i].index < b.rows[j].index ? -1
                    : a.rows[i].index > b.rows[j].index ? 1
                                                        : 0;
            if (c < 0)
                m.rows[m.row_count++] = a.rows[i++];
            else if (c > 0)
                m.rows[m.row_count++] = b.rows[j++];
            else {
                row merged = a.rows[i];
                for (uint32_t k = 0; k < a.columns; k++)
                    combine_ranks(&merged.cells[k], &b.rows[j].cells[k]);
                merged.ranks += b.rows[j].ranks;
                m.rows[m.row_count++] = merged;
                i++;
                j++;
            }
        }
    }
    otfx_blob out = {.limit = into->limit};
    if (!why) {
        write_timeline(&out, &m);
        if (out.failed)
            why = "out of memory";
    }
    /* the rows' cells belong to a and b */
    free(m.rows);
    free(m.names);
    free(map_a);
    free(map_b);
    timeline_free(&a);
    timeline_free(&b);
    if (why) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "timeline: %s", why);
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

/* ---- finish ------------------------------------------------------------------------------------- */

static void put_values(otfx_text *reply, otfx_text *scratch, const char *key, const row *w, uint32_t columns,
                       int field, int which)
{
    scratch->length = 0;
    for (uint32_t c = 0; c < columns; c++) {
        const cell *x = &w->cells[c];
        uint64_t v = which == 0   ? x->sum[field]
                     : which == 1 ? x->min[field]
                     : which == 2 ? x->max[field]
                                  : x->sum[field] / w->ranks;
        otfx_text_appendf(scratch, c ? ",%llu" : "%llu", (unsigned long long)v);
    }
    otfx_text_append(scratch, "", 1);
    otfx_kv_str(reply, key, scratch->failed ? "" : scratch->data);
}

static bool timeline_finish(const otfx_command *query, const void *merged, size_t length,
                            uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                            size_t error_size)
{
    timeline t;
    memset(&t, 0, sizeof t);
    if (length > 0 && !parse(merged, length, &t)) {
        snprintf(error, error_size, "timeline: malformed result");
        return false;
    }
    otfx_rank_selection selection;
    otfx_rank_selection_init(&selection, &query->ranks, t.app_ranks, rows_of(query));
    if (length > 0 && (selection.count != t.selected || selection.groups != t.groups)) {
        timeline_free(&t);
        snprintf(error, error_size, "timeline: result does not match the query's ranks");
        return false;
    }
    bool grouped = t.selected > t.groups;
    uint64_t from = query->from, to = query->to, width = 0;
    if (t.mode == MODE_WINDOW) {
        from = t.a;
        to = t.b;
        width = (to - from) / t.columns;
    } else if (t.mode == MODE_HELD) {
        width = t.b;
        from = t.a + t.first * t.b;
        to = from + (uint64_t)t.columns * t.b;
    }
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "timeline");
    otfx_kv_str(reply, "mode", t.mode == MODE_WINDOW ? "window" : t.mode == MODE_HELD ? "held" : "empty");
    otfx_kv_u64(reply, "from", from);
    otfx_kv_u64(reply, "to", to);
    otfx_kv_u64(reply, "bins", t.columns);
    otfx_kv_u64(reply, "width_ns", width);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "selected", t.selected);
    otfx_kv_u64(reply, "rows", t.groups);
    otfx_kv_u64(reply, "grouped", grouped);
    otfx_kv_u64(reply, "approximate", t.approximate);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    if (query->compensated)
        otfx_kv_u64(reply, "compensated", 1);
    otfx_kv_end(reply);
    otfx_text scratch = {0};
    for (uint32_t i = 0; i < t.name_count && !reply->failed; i++) {
        scratch.length = 0;
        otfx_text_append(&scratch, t.names[i].text, t.names[i].length);
        otfx_text_append(&scratch, "", 1);
        otfx_kv_begin(reply, "legend");
        otfx_kv_u64(reply, "id", i);
        otfx_kv_str(reply, "name", scratch.failed ? "" : scratch.data);
        otfx_kv_str(reply, "role", otfx_analysis_role_token((otfx_region_role)t.names[i].role));
        otfx_kv_end(reply);
    }
    for (uint32_t i = 0; i < t.row_count && !reply->failed; i++) {
        const row *w = &t.rows[i];
        uint32_t first, last;
        otfx_rank_selection_group_ranks(&selection, w->index, &first, &last);
        otfx_kv_begin(reply, "row");
        otfx_kv_u64(reply, "index", w->index);
        otfx_kv_u64(reply, "first_rank", first);
        otfx_kv_u64(reply, "last_rank", last);
        otfx_kv_u64(reply, "ranks", w->ranks);
        for (int f = 0; f < FIELDS; f++) {
            if (!grouped) {
                put_values(reply, &scratch, field_names[f], w, t.columns, f, 0);
                continue;
            }
            static const char *const suffix[3] = {"min", "mean", "max"};
            static const int which[3] = {1, 3, 2};
            for (int s = 0; s < 3; s++) {
                char key[32];
                snprintf(key, sizeof key, "%s_%s", field_names[f], suffix[s]);
                put_values(reply, &scratch, key, w, t.columns, f, which[s]);
            }
        }
        scratch.length = 0;
        for (uint32_t c = 0; c < t.columns; c++) {
            if (w->cells[c].dominant == NONE)
                otfx_text_append(&scratch, c ? ",-" : "-", c ? 2 : 1);
            else
                otfx_text_appendf(&scratch, c ? ",%u" : "%u", w->cells[c].dominant);
        }
        otfx_text_append(&scratch, "", 1);
        otfx_kv_str(reply, "dominant", scratch.failed ? "" : scratch.data);
        otfx_kv_end(reply);
    }
    bool failed = reply->failed || scratch.failed;
    otfx_text_free(&scratch);
    timeline_free(&t);
    if (!failed && reply->length > OTFX_PROTOCOL_MAX_REPLY) {
        snprintf(error, error_size,
                 "timeline: the reply would exceed %u bytes: ask for fewer --bins or --rows",
                 (unsigned)OTFX_PROTOCOL_MAX_REPLY);
        return false;
    }
    if (failed) {
        snprintf(error, error_size, "timeline: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_timeline = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "timeline",
    .help =
        "time x ranks: time per role, reduced time and dominant region per cell (--from --to --ranks --bins "
        "--rows --compensated)",
    .leaf = timeline_leaf,
    .merge = timeline_merge,
    .finish = timeline_finish,
};

/* metric_timeline.c — `metric-timeline NAME` (module metric-timeline): one metric as time × ranks, the
 * rate at which it grew (units per second) between consecutive reads of a stream, min, mean and max per
 * cell. Rows are the selected ranks, or `rows` (default 64) contiguous groups of them
 * (otfx_rank_selection) when more are selected; columns (bins, default 100) split the window.
 *
 * A stream's intervals reach from its first read inside the window to its first read past it (before
 * that first read a cell has no data of the stream).
 *
 * Between two reads of the metric in one stream (no set mark and no reduced range between them:
 * metric_support.h) the metric grew by D over T ns: the rate D/T holds over that interval. A cell's min
 * and max are those of the intervals overlapping it; its mean is the growth inside it (each interval's D
 * shared out by overlap, rounded down to whole units) over the time the intervals cover there. A level
 * (ru-maxrss) reads as how fast it grew.
 *
 * Windows. With --from and --to given, column k starts at from + floor(k*(to-from)/bins) ("window").
 * Otherwise the open end is the oldest / newest time the selected ranks hold, and the columns are W ns
 * wide, W a power of two, column k starting at k*W (from 0, or --from when given), at most `bins` of them
 * ("held"); partials of different W are merged by re-binning the finer one, which is exact for all three
 * values.
 *
 * Partial result: "MTL1", u32 mode (0 nothing, 1 window, 2 held), u64 a, u64 b (window: from, to; held:
 * origin, W), u64 first column (held), u32 columns, u32 groups, u32 selected, u32 app_ranks, str unit,
 * then per row
 * (groups × columns cells): u64 covered ns (0: no data), i64 growth, f64 min, f64 max (as bits).
 * Merging: covered and growth add, min and max take the min and max: associative and order-independent.
 *
 * Record lines of the reply:
 *   metric-timeline metric=NAME unit=U mode=window|held|empty from=T0 to=T1 bins=C width_ns=W ranks=SET
 *                   selected=S rows=G places_answered=k places_total=n
 *   row index=g first_rank=A last_rank=B min_per_s=v0,…,v(C-1) mean_per_s=… max_per_s=… covered_ns=…
 * with "-" for a cell without data; rows without data are left out.
 */
#include "metric_support.h"

#include <otfx/analysis.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRIC_TIMELINE_MAGIC 0x314C544Du /* "MTL1" */
#define DEFAULT_BINS          100
#define DEFAULT_ROWS          64
#define MAX_CELLS             (256 * 1024)

enum { MODE_EMPTY = 0, MODE_WINDOW = 1, MODE_HELD = 2 };

typedef struct cell {
    uint64_t covered;
    int64_t growth;
    double min, max;
} cell;

typedef struct grid {
    uint32_t mode;
    uint64_t a, b;         /* window: from, to; held: origin, W */
    uint64_t first_column; /* held */
    uint32_t columns, groups, selected, app_ranks;
    char unit[64];
    cell *cells; /* groups × columns */
} grid;

static uint64_t column_start(const grid *g, uint64_t k)
{
    if (g->mode == MODE_WINDOW)
        return g->a + (uint64_t)(((unsigned __int128)k * (g->b - g->a)) / g->columns);
    return g->a + (g->first_column + k) * g->b;
}

/* The rate D/T over [t0, t1) of a stream in row `row`, shared out over the columns it overlaps. */
static void add_interval(grid *g, uint32_t row, uint64_t t0, uint64_t t1, int64_t growth)
{
    const double rate = (double)growth * 1e9 / (double)(t1 - t0);
    uint64_t k = 0;
    if (g->mode == MODE_HELD) {
        if (t1 <= g->a)
            return;
        const uint64_t at = t0 > g->a ? (t0 - g->a) / g->b : 0;
        k = at > g->first_column ? at - g->first_column : 0;
    } else {
        /* the first column ending after t0 */
        if (t0 > g->a)
            k = (uint64_t)(((unsigned __int128)(t0 - g->a) * g->columns) / (g->b - g->a));
        while (k > 0 && column_start(g, k) > t0)
            k--;
    }
    for (; k < g->columns; k++) {
        const uint64_t c0 = column_start(g, k), c1 = column_start(g, k + 1);
        if (c0 >= t1)
            break;
        const uint64_t from = t0 > c0 ? t0 : c0, to = t1 < c1 ? t1 : c1;
        if (to <= from)
            continue;
        cell *c = &g->cells[(size_t)row * g->columns + k];
        const uint64_t overlap = to - from;
        c->growth += (int64_t)(((__int128)growth * overlap) / (__int128)(t1 - t0));
        if (!c->covered || rate < c->min)
            c->min = rate;
        if (!c->covered || rate > c->max)
            c->max = rate;
        c->covered += overlap;
    }
}

typedef struct stream_walk {
    grid *g;
    uint32_t row;
    otfx_ref metric, mark;
    bool have;
    uint64_t time, value;
    uint64_t end; /* the window's end: the first read at or past it ends the walk */
} stream_walk;

static int walk_event(const otfx_event *event, void *user)
{
    stream_walk *w = user;
    if (event->type == OTFX_EV_REDUCTION) {
        w->have = false;
        return 0;
    }
    if (event->type != OTFX_EV_METRIC)
        return 0;
    if (event->u.metric.metric == w->mark) {
        w->have = false; /* the next value is the new set's counter */
        return 0;
    }
    if (event->u.metric.metric != w->metric)
        return 0;
    if (w->have && event->time > w->time)
        add_interval(w->g, w->row, w->time, event->time, (int64_t)(event->u.metric.value - w->value));
    if (!w->have || event->time > w->time) {
        w->have = true;
        w->time = event->time;
        w->value = event->u.metric.value;
    }
    return event->time >= w->end;
}

/* ---- partial results ------------------------------------------------------------------------------ */

static void write_grid(otfx_blob *out, const grid *g)
{
    otfx_blob_header(out, METRIC_TIMELINE_MAGIC);
    otfx_blob_u32(out, g->mode);
    otfx_blob_u64(out, g->a);
    otfx_blob_u64(out, g->b);
    otfx_blob_u64(out, g->first_column);
    otfx_blob_u32(out, g->columns);
    otfx_blob_u32(out, g->groups);
    otfx_blob_u32(out, g->selected);
    otfx_blob_u32(out, g->app_ranks);
    otfx_blob_str(out, g->unit);
    const size_t cells = (size_t)g->groups * g->columns;
    for (size_t i = 0; i < cells && g->mode != MODE_EMPTY; i++) {
        uint64_t min, max;
        memcpy(&min, &g->cells[i].min, sizeof min);
        memcpy(&max, &g->cells[i].max, sizeof max);
        otfx_blob_u64(out, g->cells[i].covered);
        otfx_blob_u64(out, (uint64_t)g->cells[i].growth);
        otfx_blob_u64(out, min);
        otfx_blob_u64(out, max);
    }
}

static bool read_grid(const void *data, size_t length, grid *g)
{
    memset(g, 0, sizeof *g);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, METRIC_TIMELINE_MAGIC))
        return false;
    g->mode = otfx_blob_read_u32(&r);
    g->a = otfx_blob_read_u64(&r);
    g->b = otfx_blob_read_u64(&r);
    g->first_column = otfx_blob_read_u64(&r);
    g->columns = otfx_blob_read_u32(&r);
    g->groups = otfx_blob_read_u32(&r);
    g->selected = otfx_blob_read_u32(&r);
    g->app_ranks = otfx_blob_read_u32(&r);
    uint32_t unit_length = 0;
    const char *unit = otfx_blob_read_str(&r, &unit_length);
    if (r.failed || g->mode > MODE_HELD || unit_length >= sizeof g->unit)
        return false;
    if (unit_length)
        memcpy(g->unit, unit, unit_length);
    if (g->mode == MODE_EMPTY)
        return otfx_blob_reader_done(&r);
    const size_t cells = (size_t)g->groups * g->columns;
    if (!g->columns || !g->groups || cells > MAX_CELLS || (g->mode == MODE_WINDOW && g->b <= g->a) ||
        (g->mode == MODE_HELD && (!g->b || (g->b & (g->b - 1)))) || cells > (r.length - r.offset) / 32)
        return false;
    g->cells = calloc(cells, sizeof *g->cells);
    if (!g->cells)
        return false;
    for (size_t i = 0; i < cells; i++) {
        g->cells[i].covered = otfx_blob_read_u64(&r);
        g->cells[i].growth = (int64_t)otfx_blob_read_u64(&r);
        const uint64_t min = otfx_blob_read_u64(&r), max = otfx_blob_read_u64(&r);
        memcpy(&g->cells[i].min, &min, sizeof min);
        memcpy(&g->cells[i].max, &max, sizeof max);
    }
    if (!otfx_blob_reader_done(&r)) {
        free(g->cells);
        g->cells = NULL;
        return false;
    }
    return true;
}

static void add_cell(cell *into, const cell *c)
{
    if (!c->covered)
        return;
    if (!into->covered || c->min < into->min)
        into->min = c->min;
    if (!into->covered || c->max > into->max)
        into->max = c->max;
    into->covered += c->covered;
    into->growth += c->growth;
}

/* ---- the module ----------------------------------------------------------------------------------- */

static bool timeline_shape(const otfx_command *query, uint32_t *bins, uint32_t *rows, char *error,
                           size_t error_size)
{
    *bins = query->bins ? query->bins : DEFAULT_BINS;
    *rows = query->rows ? query->rows : DEFAULT_ROWS;
    if ((uint64_t)*bins * *rows > MAX_CELLS) {
        snprintf(error, error_size, "metric-timeline: %u bins × %u rows is more than %u cells", *bins, *rows,
                 MAX_CELLS);
        return false;
    }
    return true;
}

static bool metric_timeline_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out,
                                 char *error, size_t error_size)
{
    uint32_t bins, rows;
    if (!timeline_shape(query, &bins, &rows, error, error_size))
        return false;
    metric_selection metrics;
    if (!metric_selection_init(&metrics, input->defs, query->metrics, error, error_size))
        return false;
    otfx_rank_selection selection;
    otfx_rank_selection_init(&selection, &query->ranks, input->app_ranks, rows);
    grid g = {.groups = selection.groups, .selected = selection.count, .app_ranks = input->app_ranks};
    if (metrics.slot_count) {
        otfx_metric_def def;
        if (otfx_defs_get_metric(input->defs, metrics.ref_of_slot[0], &def) == OTFX_OK)
            snprintf(g.unit, sizeof g.unit, "%s", def.unit);
    }
    /* the window: given, or what the selected ranks hold */
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < input->trace_count && metrics.slot_count; i++) {
        const uint32_t index = input->rank_of_trace[i];
        otfx_trace_status status;
        if (index >= input->rank_count ||
            otfx_rank_selection_group(&selection, input->ranks[index].rank) == UINT32_MAX ||
            otfx_trace_status_get(input->traces[i], &status) != OTFX_OK ||
            status.first_time > status.last_time)
            continue;
        if (status.first_time < first)
            first = status.first_time;
        if (status.last_time > last)
            last = status.last_time;
    }
    const uint64_t from = query->from_given ? query->from : first;
    const uint64_t to = query->to_given ? query->to : (last < UINT64_MAX ? last + 1 : last);
    if (query->from_given && query->to_given && query->to > query->from && g.groups) {
        g.mode = MODE_WINDOW;
        g.a = query->from;
        g.b = query->to;
        g.columns = bins;
    } else if (first <= last && to > from && g.groups) {
        g.mode = MODE_HELD;
        g.a = query->from_given ? query->from : 0;
        g.b = 1;
        while ((to - 1 - g.a) / g.b - (from - g.a) / g.b + 1 > bins)
            g.b *= 2;
        g.first_column = (from - g.a) / g.b;
        g.columns = (uint32_t)((to - 1 - g.a) / g.b - g.first_column + 1);
    }
    bool ok = true;
    if (g.mode != MODE_EMPTY) {
        g.cells = calloc((size_t)g.groups * g.columns, sizeof *g.cells);
        ok = g.cells != NULL;
        if (!ok)
            snprintf(error, error_size, "metric-timeline: out of memory");
    }
    for (size_t i = 0; ok && g.mode != MODE_EMPTY && i < input->trace_count; i++) {
        const uint32_t index = input->rank_of_trace[i];
        const uint32_t row = index < input->rank_count
                                 ? otfx_rank_selection_group(&selection, input->ranks[index].rank)
                                 : UINT32_MAX;
        if (row == UINT32_MAX)
            continue;
        stream_walk w = {
            .g = &g, .row = row, .metric = metrics.ref_of_slot[0], .mark = metrics.mark, .end = to};
        /* on to the first read past the window: the interval it ends reaches into the window */
        if (otfx_analysis_query_events(input->traces[i], from, OTFX_TIME_MAX, false, walk_event, &w) !=
            OTFX_OK) {
            snprintf(error, error_size, "metric-timeline of rank %u: %s", input->ranks[index].rank,
                     otfx_last_error());
            ok = false;
        }
    }
    if (ok) {
        write_grid(out, &g);
        if (out->failed) {
            snprintf(error, error_size, "metric-timeline: out of memory");
            ok = false;
        }
    }
    free(g.cells);
    metric_selection_free(&metrics);
    return ok;
}

/* A held grid re-binned to columns `shift` times as wide (W << shift). */
static bool widen(grid *g, unsigned shift, uint64_t first_column, uint32_t columns)
{
    cell *cells = calloc((size_t)g->groups * columns, sizeof *cells);
    if (!cells)
        return false;
    for (uint32_t row = 0; row < g->groups; row++)
        for (uint32_t k = 0; k < g->columns; k++) {
            const uint64_t to = ((g->first_column + k) >> shift) - first_column;
            add_cell(&cells[(size_t)row * columns + to], &g->cells[(size_t)row * g->columns + k]);
        }
    free(g->cells);
    g->cells = cells;
    g->b <<= shift;
    g->first_column = first_column;
    g->columns = columns;
    return true;
}

static bool metric_timeline_merge(const otfx_command *query, otfx_blob *into, const void *other,
                                  size_t other_length, char *error, size_t error_size)
{
    uint32_t bins, rows;
    if (!timeline_shape(query, &bins, &rows, error, error_size))
        return false;
    grid a = {0}, b;
    if (!read_grid(other, other_length, &b) ||
        (into->length > 0 && !read_grid(into->data, into->length, &a))) {
        free(b.cells);
        snprintf(error, error_size, "metric-timeline: malformed partial result");
        return false;
    }
    bool ok = true;
    grid *m = &b;
    if (into->length > 0 && a.mode != MODE_EMPTY && b.mode != MODE_EMPTY) {
        if (a.mode != b.mode || a.groups != b.groups ||
            (a.mode == MODE_WINDOW && (a.a != b.a || a.b != b.b || a.columns != b.columns)) ||
            (a.mode == MODE_HELD && a.a != b.a)) {
            ok = false;
        } else {
            if (a.mode == MODE_HELD) {
                /* one W for both, wide enough for the columns of both within `bins` */
                uint64_t w = a.b > b.b ? a.b : b.b;
                uint64_t first, last;
                for (;;) {
                    const uint64_t fa = a.first_column * a.b / w, fb = b.first_column * b.b / w;
                    const uint64_t la = (a.first_column + a.columns - 1) * a.b / w,
                                   lb = (b.first_column + b.columns - 1) * b.b / w;
                    first = fa < fb ? fa : fb;
                    last = la > lb ? la : lb;
                    if (last - first + 1 <= bins || w > UINT64_MAX / 2)
                        break;
                    w *= 2;
                }
                unsigned shift_a = 0, shift_b = 0;
                while ((a.b << shift_a) < w)
                    shift_a++;
                while ((b.b << shift_b) < w)
                    shift_b++;
                ok = widen(&a, shift_a, first, (uint32_t)(last - first + 1)) &&
                     widen(&b, shift_b, first, (uint32_t)(last - first + 1));
            }
            for (size_t i = 0; ok && i < (size_t)a.groups * a.columns; i++)
                add_cell(&b.cells[i], &a.cells[i]);
        }
        if (!ok)
            snprintf(error, error_size, "metric-timeline: partial results of different windows or rows");
    } else if (into->length > 0 && b.mode == MODE_EMPTY) {
        m = &a;
    }
    if (!m->unit[0])
        snprintf(m->unit, sizeof m->unit, "%s", a.unit[0] ? a.unit : b.unit);
    if (a.app_ranks > m->app_ranks)
        m->app_ranks = a.app_ranks;
    otfx_blob out = {.limit = into->limit};
    if (ok) {
        write_grid(&out, m);
        if (out.failed) {
            snprintf(error, error_size, "metric-timeline: out of memory");
            ok = false;
        }
    }
    free(a.cells);
    free(b.cells);
    if (!ok) {
        otfx_blob_free(&out);
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static void append_list(otfx_text *reply, const char *key, const grid *g, uint32_t row, int what)
{
    otfx_text values = {0};
    for (uint32_t k = 0; k < g->columns; k++) {
        const cell *c = &g->cells[(size_t)row * g->columns + k];
        if (k)
            otfx_text_append(&values, ",", 1);
        if (!c->covered)
            otfx_text_append(&values, "-", 1);
        else if (what == 3)
            otfx_text_appendf(&values, "%" PRIu64, c->covered);
        else
            otfx_text_appendf(&values, "%.6g",
                              what == 0   ? c->min
                              : what == 2 ? c->max
                                          : (double)c->growth * 1e9 / (double)c->covered);
    }
    otfx_kv_str(reply, key, values.data ? values.data : "");
    reply->failed |= values.failed;
    otfx_text_free(&values);
}

static bool metric_timeline_finish(const otfx_command *query, const void *merged, size_t length,
                                   uint32_t places_answered, uint32_t places_total, otfx_text *reply,
                                   char *error, size_t error_size)
{
    grid g = {0};
    if (length > 0 && !read_grid(merged, length, &g)) {
        snprintf(error, error_size, "metric-timeline: malformed result");
        return false;
    }
    uint32_t bins, rows;
    if (!timeline_shape(query, &bins, &rows, error, error_size)) {
        free(g.cells);
        return false;
    }
    otfx_rank_selection selection; /* the rows' ranks, as the leaves grouped them */
    otfx_rank_selection_init(&selection, &query->ranks, g.app_ranks, rows);
    static const char *const modes[] = {"empty", "window", "held"};
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "metric-timeline");
    otfx_kv_str(reply, "metric", query->metrics);
    otfx_kv_str(reply, "unit", g.unit);
    otfx_kv_str(reply, "mode", modes[g.mode]);
    otfx_kv_u64(reply, "from", g.mode == MODE_EMPTY ? query->from : column_start(&g, 0));
    otfx_kv_u64(reply, "to", g.mode == MODE_EMPTY ? query->to : column_start(&g, g.columns));
    otfx_kv_u64(reply, "bins", g.columns);
    otfx_kv_u64(reply, "width_ns",
                g.mode == MODE_HELD     ? g.b
                : g.mode == MODE_WINDOW ? (g.b - g.a) / g.columns
                                        : 0);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "selected", g.selected);
    otfx_kv_u64(reply, "rows", g.groups);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    for (uint32_t row = 0; g.mode != MODE_EMPTY && row < g.groups && !reply->failed; row++) {
        bool any = false;
        for (uint32_t k = 0; k < g.columns && !any; k++)
            any = g.cells[(size_t)row * g.columns + k].covered != 0;
        if (!any)
            continue;
        uint32_t first_rank = row, last_rank = row;
        otfx_rank_selection_group_ranks(&selection, row, &first_rank, &last_rank);
        otfx_kv_begin(reply, "row");
        otfx_kv_u64(reply, "index", row);
        otfx_kv_u64(reply, "first_rank", first_rank);
        otfx_kv_u64(reply, "last_rank", last_rank);
        append_list(reply, "min_per_s", &g, row, 0);
        append_list(reply, "mean_per_s", &g, row, 1);
        append_list(reply, "max_per_s", &g, row, 2);
        append_list(reply, "covered_ns", &g, row, 3);
        otfx_kv_end(reply);
    }
    free(g.cells);
    if (reply->failed) {
        snprintf(error, error_size, "metric-timeline: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_metric_timeline = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "metric-timeline",
    .help =
        "one metric as time × ranks: its rate (per second) min, mean and max per cell (metric-timeline NAME "
        "--from --to --ranks --bins --rows)",
    .leaf = metric_timeline_leaf,
    .merge = metric_timeline_merge,
    .finish = metric_timeline_finish,
};

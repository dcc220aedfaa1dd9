/* metric_profile.c — `profile --metrics [LIST]` (module metric-profile): per region and metric, what the
 * metric grew by over the region's visits in [from, to) of the selected ranks: inclusive (its value at
 * the LEAVE minus at the ENTER) and exclusive (minus its callees' inclusive), with the visits' time, so
 * rates follow (otfx_query_metric_profile, otfx/trace.h: from the chunk summaries, exact through
 * reductions, approximate only where a window edge cuts a reduced range).
 *
 * Partial result: "MPR2", u64 locations, u32 approximate, u32 n, then n entries sorted by (region, role,
 * metric, unit), each key once: str region, u32 role, str metric, str unit, u64 visits, inclusive (int64
 * bits), inclusive_ns, exclusive_visits, exclusive (int64 bits), exclusive_ns. Merging adds entries with
 * equal keys: integer sums, exact and order-independent.
 *
 * Record lines of the reply:
 *   metric-profile from=T0 to=T1 ranks=SET metrics=LIST locations=L entries=N approximate=0|1
 *                  places_answered=k places_total=n
 *   region-metric name=REGION role=ROLE metric=NAME unit=U visits=V inclusive=I inclusive_ns=T
 *                 rate_per_s=I/T exclusive_visits=W exclusive=E exclusive_ns=X exclusive_rate_per_s=E/X
 * sorted by metric, then exclusive (descending), then region. A rate is 0 without time.
 */
#include "metric_support.h"

#include <otfx/analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRIC_PROFILE_MAGIC 0x3252504du /* "MPR2" */

typedef struct totals {
    uint64_t visits, inclusive_ns, exclusive_visits, exclusive_ns;
    int64_t inclusive, exclusive;
} totals;

/* ---- partial results ------------------------------------------------------------------------------ */

typedef struct entry {
    const char *region, *metric, *unit; /* not NUL-terminated when read from a blob */
    uint32_t region_length, metric_length, unit_length;
    uint32_t role;
    totals t;
} entry;

static int compare_text(const char *a, uint32_t a_length, const char *b, uint32_t b_length)
{
    const uint32_t common = a_length < b_length ? a_length : b_length;
    const int c = common ? memcmp(a, b, common) : 0; /* an empty text may have no bytes at all */
    if (c)
        return c;
    return a_length < b_length ? -1 : a_length > b_length;
}

static int compare_key(const entry *a, const entry *b)
{
    int c = compare_text(a->region, a->region_length, b->region, b->region_length);
    if (!c)
        c = a->role < b->role ? -1 : a->role > b->role;
    if (!c)
        c = compare_text(a->metric, a->metric_length, b->metric, b->metric_length);
    if (!c)
        c = compare_text(a->unit, a->unit_length, b->unit, b->unit_length);
    return c;
}

static int compare_key_qsort(const void *a, const void *b)
{
    return compare_key(a, b);
}

static void write_str(otfx_blob *out, const char *text, uint32_t length)
{
    otfx_blob_u32(out, length);
    if (length)
        otfx_blob_append(out, text, length);
}

static void write_entries(otfx_blob *out, uint64_t locations, bool approximate, const entry *e, uint32_t n)
{
    otfx_blob_header(out, METRIC_PROFILE_MAGIC);
    otfx_blob_u64(out, locations);
    otfx_blob_u32(out, approximate);
    otfx_blob_u32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        write_str(out, e[i].region, e[i].region_length);
        otfx_blob_u32(out, e[i].role);
        write_str(out, e[i].metric, e[i].metric_length);
        write_str(out, e[i].unit, e[i].unit_length);
        otfx_blob_u64(out, e[i].t.visits);
        otfx_blob_u64(out, (uint64_t)e[i].t.inclusive);
        otfx_blob_u64(out, e[i].t.inclusive_ns);
        otfx_blob_u64(out, e[i].t.exclusive_visits);
        otfx_blob_u64(out, (uint64_t)e[i].t.exclusive);
        otfx_blob_u64(out, e[i].t.exclusive_ns);
    }
}

typedef struct parsed {
    uint64_t locations;
    bool approximate;
    uint32_t count;
    entry *entries;
} parsed;

static bool parse(const void *data, size_t length, parsed *p)
{
    memset(p, 0, sizeof *p);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, METRIC_PROFILE_MAGIC))
        return false;
    p->locations = otfx_blob_read_u64(&r);
    const uint32_t approximate = otfx_blob_read_u32(&r);
    p->approximate = approximate == 1;
    if (approximate > 1)
        r.failed = true;
    const uint32_t n = otfx_blob_read_u32(&r);
    /* an entry has at least 3 × 4 + 4 + 48 bytes */
    if (r.failed || n > (r.length - r.offset) / 64)
        return false;
    p->entries = n ? calloc(n, sizeof *p->entries) : NULL;
    if (n && !p->entries)
        return false;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        entry *e = &p->entries[i];
        e->region = otfx_blob_read_str(&r, &e->region_length);
        e->role = otfx_blob_read_u32(&r);
        e->metric = otfx_blob_read_str(&r, &e->metric_length);
        e->unit = otfx_blob_read_str(&r, &e->unit_length);
        e->t.visits = otfx_blob_read_u64(&r);
        e->t.inclusive = (int64_t)otfx_blob_read_u64(&r);
        e->t.inclusive_ns = otfx_blob_read_u64(&r);
        e->t.exclusive_visits = otfx_blob_read_u64(&r);
        e->t.exclusive = (int64_t)otfx_blob_read_u64(&r);
        e->t.exclusive_ns = otfx_blob_read_u64(&r);
        if (e->role >= OTFX_ROLE_COUNT || (i > 0 && compare_key(&p->entries[i - 1], e) >= 0))
            r.failed = true;
    }
    p->count = n;
    if (!otfx_blob_reader_done(&r)) {
        free(p->entries);
        p->entries = NULL;
        return false;
    }
    return true;
}

static void add_totals(totals *into, const totals *t)
{
    into->visits += t->visits;
    into->inclusive += t->inclusive;
    into->inclusive_ns += t->inclusive_ns;
    into->exclusive_visits += t->exclusive_visits;
    into->exclusive += t->exclusive;
    into->exclusive_ns += t->exclusive_ns;
}

/* ---- the module ----------------------------------------------------------------------------------- */

static bool metric_profile_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out,
                                char *error, size_t error_size)
{
    metric_selection metrics;
    if (!metric_selection_init(&metrics, input->defs, query->metrics, error, error_size))
        return false;
    otfx_metric_profile *profile = otfx_metric_profile_create();
    uint64_t locations = 0;
    bool ok = profile != NULL;
    if (!ok)
        snprintf(error, error_size, "metric profile: out of memory");
    for (size_t i = 0; i < input->trace_count && ok && metrics.slot_count; i++) {
        const uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count || !otfx_rank_set_contains(&query->ranks, input->ranks[index].rank))
            continue;
        if (otfx_query_metric_profile(input->traces[i], query->from, query->to, profile) != OTFX_OK) {
            snprintf(error, error_size, "metric profile of rank %u: %s", input->ranks[index].rank,
                     otfx_last_error());
            ok = false;
        }
        locations++;
    }
    const size_t size = otfx_metric_profile_size(profile);
    entry *e = ok && size ? calloc(size, sizeof *e) : NULL;
    uint32_t n = 0;
    bool failed = ok && size && !e;
    otfx_metric_profile_entry found;
    for (size_t k = 0; e && otfx_metric_profile_entry_at(profile, k, &found); k++) {
        otfx_region_def def;
        otfx_metric_def metric;
        if (!found.visits || metric_slot(&metrics, found.metric) == UINT32_MAX ||
            otfx_defs_get_region(input->defs, found.region, &def) != OTFX_OK ||
            otfx_defs_get_metric(input->defs, found.metric, &metric) != OTFX_OK)
            continue;
        e[n++] = (entry){.region = def.name,
                         .region_length = (uint32_t)strlen(def.name),
                         .role = (uint32_t)def.role,
                         .metric = metric.name,
                         .metric_length = (uint32_t)strlen(metric.name),
                         .unit = metric.unit,
                         .unit_length = (uint32_t)strlen(metric.unit),
                         .t = {.visits = found.visits,
                               .inclusive = found.inclusive,
                               .inclusive_ns = found.inclusive_ns,
                               .exclusive_visits = found.exclusive_visits,
                               .exclusive = found.exclusive,
                               .exclusive_ns = found.exclusive_ns}};
    }
    if (n)
        qsort(e, n, sizeof *e, compare_key_qsort);
    /* a region defined twice under one (name, role) is one reference: keys are unique already */
    if (ok && !failed)
        write_entries(out, locations, otfx_metric_profile_approximate(profile), e, n);
    free(e);
    otfx_metric_profile_destroy(profile);
    metric_selection_free(&metrics);
    if (ok && (failed || out->failed)) {
        snprintf(error, error_size, "metric profile: out of memory");
        ok = false;
    }
    return ok;
}

static bool metric_profile_merge(const otfx_command *query, otfx_blob *into, const void *other,
                                 size_t other_length, char *error, size_t error_size)
{
    (void)query;
    parsed a = {0}, b;
    if (!parse(other, other_length, &b) || (into->length > 0 && !parse(into->data, into->length, &a))) {
        free(b.entries);
        snprintf(error, error_size, "metric profile: malformed partial result");
        return false;
    }
    entry *m = (a.count + b.count) ? malloc(sizeof *m * (a.count + b.count)) : NULL;
    uint32_t i = 0, j = 0, n = 0;
    otfx_blob out = {.limit = into->limit};
    if (a.count + b.count && !m) {
        out.failed = true;
    } else {
        while (i < a.count || j < b.count) {
            const int c = i == a.count ? 1 : j == b.count ? -1 : compare_key(&a.entries[i], &b.entries[j]);
            if (c < 0) {
                m[n++] = a.entries[i++];
            } else if (c > 0) {
                m[n++] = b.entries[j++];
            } else {
                m[n] = a.entries[i++];
                add_totals(&m[n++].t, &b.entries[j++].t);
            }
        }
        write_entries(&out, a.locations + b.locations, a.approximate || b.approximate, m, n);
    }
    free(m);
    free(a.entries);
    free(b.entries);
    if (out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, "metric profile: out of memory");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static int compare_for_reply(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    int c = compare_text(a->metric, a->metric_length, b->metric, b->metric_length);
    if (c)
        return c;
    if (a->t.exclusive != b->t.exclusive)
        return a->t.exclusive > b->t.exclusive ? -1 : 1;
    return compare_key(a, b);
}

static char *text_of(const char *bytes, uint32_t length)
{
    char *text = malloc((size_t)length + 1);
    if (text) {
        if (length)
            memcpy(text, bytes, length);
        text[length] = '\0';
    }
    return text;
}

static double rate_per_s(int64_t amount, uint64_t ns)
{
    return ns ? (double)amount * 1e9 / (double)ns : 0.0;
}

static bool metric_profile_finish(const otfx_command *query, const void *merged, size_t length,
                                  uint32_t places_answered, uint32_t places_total, otfx_text *reply,
                                  char *error, size_t error_size)
{
    parsed p = {0};
    if (length > 0 && !parse(merged, length, &p)) {
        snprintf(error, error_size, "metric profile: malformed result");
        return false;
    }
    if (p.count)
        qsort(p.entries, p.count, sizeof *p.entries, compare_for_reply);
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "metric-profile");
    otfx_kv_u64(reply, "from", query->from);
    otfx_kv_u64(reply, "to", query->to);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_str(reply, "metrics", query->metrics[0] ? query->metrics : "all");
    otfx_kv_u64(reply, "locations", p.locations);
    otfx_kv_u64(reply, "entries", p.count);
    otfx_kv_u64(reply, "approximate", p.approximate);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    otfx_kv_end(reply);
    for (uint32_t i = 0; i < p.count && !reply->failed; i++) {
        const entry *e = &p.entries[i];
        char *region = text_of(e->region, e->region_length), *metric = text_of(e->metric, e->metric_length),
             *unit = text_of(e->unit, e->unit_length);
        if (region && metric && unit) {
            otfx_kv_begin(reply, "region-metric");
            otfx_kv_str(reply, "name", region);
            otfx_kv_str(reply, "role", otfx_analysis_role_token((otfx_region_role)e->role));
            otfx_kv_str(reply, "metric", metric);
            otfx_kv_str(reply, "unit", unit);
            otfx_kv_u64(reply, "visits", e->t.visits);
            otfx_kv_i64(reply, "inclusive", e->t.inclusive);
            otfx_kv_u64(reply, "inclusive_ns", e->t.inclusive_ns);
            otfx_kv_f64(reply, "rate_per_s", rate_per_s(e->t.inclusive, e->t.inclusive_ns));
            otfx_kv_u64(reply, "exclusive_visits", e->t.exclusive_visits);
            otfx_kv_i64(reply, "exclusive", e->t.exclusive);
            otfx_kv_u64(reply, "exclusive_ns", e->t.exclusive_ns);
            otfx_kv_f64(reply, "exclusive_rate_per_s", rate_per_s(e->t.exclusive, e->t.exclusive_ns));
            otfx_kv_end(reply);
        } else {
            reply->failed = true;
        }
        free(region);
        free(metric);
        free(unit);
    }
    free(p.entries);
    if (reply->failed) {
        snprintf(error, error_size, "metric profile: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_metric_profile = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "metric-profile",
    .help = "per region and metric: the metric's growth over the visits, inclusive and exclusive, and its "
            "rate (profile --metrics LIST; --from --to --ranks)",
    .leaf = metric_profile_leaf,
    .merge = metric_profile_merge,
    .finish = metric_profile_finish,
};

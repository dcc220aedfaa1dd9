/* profile.c — the `profile` module: per region visits, inclusive and exclusive time over [from, to) of
 * the selected ranks (otfx_query_profile: exact under reduction, approximate only where a window edge
 * cuts a reduced range).
 *
 * Partial result: "PRF1", u32 approximate, u64 locations profiled, u32 n, then n entries sorted by
 * (name bytes, role), each key once: str name, u32 role, u64 visits, inclusive, exclusive, messages_sent,
 * bytes_sent, messages_received, bytes_received. Regions are identified by name and role (references are
 * place-local). Merging adds entries with equal keys: associative and order-independent.
 *
 * Record lines of the reply:
 *   profile from=T0 to=T1 ranks=SET approximate=0|1 locations=L regions=R total_exclusive_ns=X
 *           places_answered=k places_total=n
 *   region name=NAME role=ROLE visits=V inclusive_ns=I exclusive_ns=E share=F(0..1, of total exclusive)
 *          messages_sent=M bytes_sent=B messages_received=M bytes_received=B
 * The profile line comes first; region lines follow sorted by exclusive time (descending), then name.
 * ROLE is user|p2p|collective|mpi_other|phase. Messages outside every region are not listed, nor are
 * regions without time, visits or messages in the window.
 */
#include "compensation.h"

#include <otfx/analysis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_MAGIC     0x31465250u /* "PRF1" */
#define COMPENSATED_MAGIC 0x31435250u /* "PRC1" */
#define PROFILE_VALUES    7

typedef struct entry {
    const char *name; /* not NUL-terminated when read from a blob */
    uint32_t name_length;
    uint32_t role;
    uint64_t
        v[PROFILE_VALUES]; /* visits, inclusive, exclusive, msgs sent, bytes sent, msgs recv, bytes recv */
} entry;

typedef struct parsed {
    uint32_t approximate;
    uint64_t locations;
    uint32_t count;
    entry *entries;
    /* --compensated only */
    bool compensated;
    uint32_t rank_count;
    compensated_rank *ranks; /* sorted by rank, each once */
    uint64_t reorders, unmeasured_ranks;
} parsed;

static int compare_key(const entry *a, const entry *b)
{
    uint32_t n = a->name_length < b->name_length ? a->name_length : b->name_length;
    int c = n ? memcmp(a->name, b->name, n) : 0;
    if (c)
        return c;
    if (a->name_length != b->name_length)
        return a->name_length < b->name_length ? -1 : 1;
    return a->role < b->role ? -1 : a->role > b->role;
}

static int compare_key_qsort(const void *a, const void *b)
{
    return compare_key(a, b);
}

static void write_parsed(otfx_blob *out, const parsed *p)
{
    otfx_blob_header(out, p->compensated ? COMPENSATED_MAGIC : PROFILE_MAGIC);
    otfx_blob_u32(out, p->approximate);
    otfx_blob_u64(out, p->locations);
    otfx_blob_u32(out, p->count);
    for (uint32_t i = 0; i < p->count; i++) {
        const entry *e = &p->entries[i];
        otfx_blob_u32(out, e->name_length);
        otfx_blob_append(out, e->name, e->name_length);
        otfx_blob_u32(out, e->role);
        for (int k = 0; k < PROFILE_VALUES; k++)
            otfx_blob_u64(out, e->v[k]);
    }
    if (!p->compensated)
        return;
    otfx_blob_u32(out, p->rank_count);
    for (uint32_t i = 0; i < p->rank_count; i++) {
        otfx_blob_u32(out, p->ranks[i].rank);
        otfx_blob_u64(out, p->ranks[i].measured_end);
        otfx_blob_u64(out, p->ranks[i].compensated_end);
        otfx_blob_u64(out, p->ranks[i].delay);
        otfx_blob_u64(out, p->ranks[i].intrusion);
    }
    otfx_blob_u64(out, p->reorders);
    otfx_blob_u64(out, p->unmeasured_ranks);
}

static void write_entries(otfx_blob *out, uint32_t approximate, uint64_t locations, entry *e, uint32_t n)
{
    const parsed p = {.approximate = approximate, .locations = locations, .count = n, .entries = e};
    write_parsed(out, &p);
}

static int compare_key_qsort(const void *a, const void *b);

/* profile --compensated: the compensation replay's regions under their names. */
static bool compensated_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out,
                             char *error, size_t error_size)
{
    compensation_result result;
    if (!compensation_run(query, input, NULL, &result, error, error_size))
        return false;
    entry *e = result.region_capacity ? calloc(result.region_capacity, sizeof *e) : NULL;
    if (result.region_capacity && !e) {
        compensation_result_free(&result);
        snprintf(error, error_size, "profile: out of memory");
        return false;
    }
    uint32_t n = 0;
    for (size_t ref = 0; ref < result.region_capacity; ref++) {
        const compensated_region *r = &result.regions[ref];
        otfx_region_def def;
        if (!r->visits && !r->messages_sent && !r->messages_received)
            continue;
        if (otfx_defs_get_region(input->defs, (otfx_ref)ref, &def) != OTFX_OK)
            continue;
        e[n].name = def.name;
        e[n].name_length = (uint32_t)strlen(def.name);
        e[n].role = (uint32_t)def.role;
        const uint64_t v[PROFILE_VALUES] = {r->visits,        r->inclusive,  r->exclusive,
                                            r->messages_sent, r->bytes_sent, r->messages_received,
                                            r->bytes_received};
        memcpy(e[n].v, v, sizeof v);
        n++;
    }
    if (n)
        qsort(e, n, sizeof *e, compare_key_qsort);
    const parsed p = {.locations = result.stats.streams,
                      .count = n,
                      .entries = e,
                      .compensated = true,
                      .rank_count = result.rank_count,
                      .ranks = result.ranks,
                      .reorders = result.reorders,
                      .unmeasured_ranks = result.unmeasured_ranks};
    write_parsed(out, &p);
    free(e);
    compensation_result_free(&result);
    if (out->failed) {
        snprintf(error, error_size, "profile: %s", out->too_large ? "result too large" : "out of memory");
        return false;
    }
    return true;
}

static bool profile_leaf(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                         size_t error_size)
{
    if (query->compensated)
        return compensated_leaf(query, input, out, error, error_size);
    otfx_profile *profile = otfx_profile_create();
    if (!profile) {
        snprintf(error, error_size, "profile: out of memory");
        return false;
    }
    uint64_t locations = 0;
    for (size_t i = 0; i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count || !otfx_rank_set_contains(&query->ranks, input->ranks[index].rank))
            continue;
        if (otfx_query_profile(input->traces[i], query->from, query->to, profile) != OTFX_OK) {
            snprintf(error, error_size, "profile of rank %u: %s", input->ranks[index].rank,
                     otfx_last_error());
            otfx_profile_destroy(profile);
            return false;
        }
        locations++;
    }
    size_t size = otfx_profile_size(profile);
    const otfx_profile_entry *pe = otfx_profile_entries(profile);
    entry *e = size ? calloc(size, sizeof *e) : NULL;
    if (size && !e) {
        otfx_profile_destroy(profile);
        snprintf(error, error_size, "profile: out of memory");
        return false;
    }
    uint32_t n = 0;
    for (size_t i = 0; i < size; i++) {
        otfx_region_def def;
        if (pe[i].region == OTFX_REF_NONE || otfx_defs_get_region(input->defs, pe[i].region, &def) != OTFX_OK)
            continue; /* messages outside every region */
        if (!pe[i].visits && !pe[i].inclusive && !pe[i].exclusive && !pe[i].messages_sent &&
            !pe[i].messages_received)
            continue; /* not in the window */
        e[n].name = def.name;
        e[n].name_length = (uint32_t)strlen(def.name);
        e[n].role = (uint32_t)def.role;
        e[n].v[0] = pe[i].visits;
        e[n].v[1] = pe[i].inclusive;
        e[n].v[2] = pe[i].exclusive;
        e[n].v[3] = pe[i].messages_sent;
        e[n].v[4] = pe[i].bytes_sent;
        e[n].v[5] = pe[i].messages_received;
        e[n].v[6] = pe[i].bytes_received;
        n++;
    }
    /* defining a region is idempotent, so a (name, role) has one reference: keys are already unique */
    if (n)
        qsort(e, n, sizeof *e, compare_key_qsort);
    write_entries(out, otfx_profile_approximate(profile), locations, e, n);
    free(e);
    otfx_profile_destroy(profile);
    if (out->failed) {
        snprintf(error, error_size, "profile: out of memory");
        return false;
    }
    return true;
}

static void parsed_free(parsed *p)
{
    free(p->entries);
    free(p->ranks);
    p->entries = NULL;
    p->ranks = NULL;
}

static bool parse(const void *data, size_t length, bool compensated, parsed *p)
{
    memset(p, 0, sizeof *p);
    otfx_blob_reader r = otfx_blob_reader_make(data, length);
    if (!otfx_blob_read_header(&r, compensated ? COMPENSATED_MAGIC : PROFILE_MAGIC))
        return false;
    p->compensated = compensated;
    p->approximate = otfx_blob_read_u32(&r);
    p->locations = otfx_blob_read_u64(&r);
    uint32_t n = otfx_blob_read_u32(&r);
    /* an entry has at least 4 + 4 + 56 bytes */
    if (r.failed || p->approximate > 1 || n > (r.length - r.offset) / 64)
        return false;
    p->entries = n ? calloc(n, sizeof *p->entries) : NULL;
    if (n && !p->entries)
        return false;
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        entry *e = &p->entries[i];
        e->name = otfx_blob_read_str(&r, &e->name_length);
        e->role = otfx_blob_read_u32(&r);
        for (int k = 0; k < PROFILE_VALUES; k++)
            e->v[k] = otfx_blob_read_u64(&r);
        if (e->role >= OTFX_ROLE_COUNT || (i > 0 && compare_key(&p->entries[i - 1], e) >= 0))
            r.failed = true;
    }
    p->count = n;
    if (compensated && !r.failed) {
        uint32_t m = otfx_blob_read_u32(&r);
        if (!r.failed && m <= (r.length - r.offset) / 36) {
            p->ranks = m ? calloc(m, sizeof *p->ranks) : NULL;
            p->rank_count = m;
            if (m && !p->ranks)
                r.failed = true;
        } else {
            r.failed = true;
        }
        for (uint32_t i = 0; i < p->rank_count && !r.failed; i++) {
            compensated_rank *k = &p->ranks[i];
            k->rank = otfx_blob_read_u32(&r);
            k->measured_end = otfx_blob_read_u64(&r);
            k->compensated_end = otfx_blob_read_u64(&r);
            k->delay = otfx_blob_read_u64(&r);
            k->intrusion = otfx_blob_read_u64(&r);
            if (i > 0 && p->ranks[i - 1].rank >= k->rank)
                r.failed = true;
        }
        p->reorders = otfx_blob_read_u64(&r);
        p->unmeasured_ranks = otfx_blob_read_u64(&r);
    }
    if (!otfx_blob_reader_done(&r)) {
        parsed_free(p);
        return false;
    }
    return true;
}

static bool profile_merge(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                          char *error, size_t error_size)
{
    const bool compensated = query->compensated;
    parsed a = {0}, b;
    if (!parse(other, other_length, compensated, &b) ||
        (into->length > 0 && !parse(into->data, into->length, compensated, &a))) {
        parsed_free(&b);
        snprintf(error, error_size, "profile: malformed partial result");
        return false;
    }
    parsed m = {.approximate = a.approximate | b.approximate,
                .locations = a.locations + b.locations,
                .compensated = compensated,
                .reorders = a.reorders + b.reorders,
                .unmeasured_ranks = a.unmeasured_ranks + b.unmeasured_ranks};
    m.entries = (a.count + b.count) ? malloc(sizeof *m.entries * (a.count + b.count)) : NULL;
    m.ranks = (a.rank_count + b.rank_count) ? malloc(sizeof *m.ranks * (a.rank_count + b.rank_count)) : NULL;
    if (((a.count + b.count) && !m.entries) || ((a.rank_count + b.rank_count) && !m.ranks)) {
        parsed_free(&m);
        parsed_free(&a);
        parsed_free(&b);
        snprintf(error, error_size, "profile: out of memory");
        return false;
    }
    uint32_t i = 0, j = 0, n = 0;
    while (i < a.count || j < b.count) {
        int c = i == a.count ? 1 : j == b.count ? -1 : compare_key(&a.entries[i], &b.entries[j]);
        if (c < 0)
            m.entries[n++] = a.entries[i++];
        else if (c > 0)
            m.entries[n++] = b.entries[j++];
        else {
            m.entries[n] = a.entries[i++];
            for (int k = 0; k < PROFILE_VALUES; k++)
                m.entries[n].v[k] += b.entries[j].v[k];
            j++;
            n++;
        }
    }
    m.count = n;
    /* every rank is served by one place: the ranks of two partial results are disjoint */
    i = j = 0;
    bool ok = true;
    while (i < a.rank_count || j < b.rank_count) {
        if (i < a.rank_count && j < b.rank_count && a.ranks[i].rank == b.ranks[j].rank) {
            ok = false;
            break;
        }
        if (j == b.rank_count || (i < a.rank_count && a.ranks[i].rank < b.ranks[j].rank))
            m.ranks[m.rank_count++] = a.ranks[i++];
        else
            m.ranks[m.rank_count++] = b.ranks[j++];
    }
    otfx_blob out = {.limit = into->limit};
    if (ok)
        write_parsed(&out, &m);
    parsed_free(&m);
    parsed_free(&a);
    parsed_free(&b);
    if (!ok || out.failed) {
        otfx_blob_free(&out);
        snprintf(error, error_size, ok ? "profile: out of memory" : "profile: a rank answered twice");
        return false;
    }
    otfx_blob_free(into);
    *into = out;
    return true;
}

static int compare_exclusive(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->v[2] != b->v[2])
        return a->v[2] > b->v[2] ? -1 : 1;
    return compare_key(a, b);
}

static bool profile_finish(const otfx_command *query, const void *merged, size_t length,
                           uint32_t places_answered, uint32_t places_total, otfx_text *reply, char *error,
                           size_t error_size)
{
    parsed p = {.compensated = query->compensated};
    if (length > 0 && !parse(merged, length, query->compensated, &p)) {
        snprintf(error, error_size, "profile: malformed result");
        return false;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < p.count; i++)
        total += p.entries[i].v[2];
    if (p.count)
        qsort(p.entries, p.count, sizeof *p.entries, compare_exclusive);
    char ranks[512];
    otfx_rank_set_format(&query->ranks, ranks, sizeof ranks);
    otfx_kv_begin(reply, "profile");
    otfx_kv_u64(reply, "from", query->from);
    otfx_kv_u64(reply, "to", query->to);
    otfx_kv_str(reply, "ranks", ranks);
    otfx_kv_u64(reply, "approximate", p.approximate);
    otfx_kv_u64(reply, "locations", p.locations);
    otfx_kv_u64(reply, "regions", p.count);
    otfx_kv_u64(reply, "total_exclusive_ns", total);
    otfx_kv_u64(reply, "places_answered", places_answered);
    otfx_kv_u64(reply, "places_total", places_total);
    if (query->compensated) {
        uint64_t intrusion = 0;
        for (uint32_t i = 0; i < p.rank_count; i++)
            intrusion += p.ranks[i].intrusion;
        otfx_kv_u64(reply, "compensated", 1);
        otfx_kv_u64(reply, "intrusion_ns", intrusion);
        otfx_kv_u64(reply, "reorders_flagged", p.reorders);
        otfx_kv_u64(reply, "unmeasured_ranks", p.unmeasured_ranks);
    }
    otfx_kv_end(reply);
    char *name = NULL;
    for (uint32_t i = 0; i < p.count && !reply->failed; i++) {
        const entry *e = &p.entries[i];
        char *copy = realloc(name, (size_t)e->name_length + 1);
        if (!copy) {
            reply->failed = true;
            break;
        }
        name = copy;
        memcpy(name, e->name, e->name_length);
        name[e->name_length] = '\0';
        otfx_kv_begin(reply, "region");
        otfx_kv_str(reply, "name", name);
        otfx_kv_str(reply, "role", otfx_analysis_role_token((otfx_region_role)e->role));
        otfx_kv_u64(reply, "visits", e->v[0]);
        otfx_kv_u64(reply, "inclusive_ns", e->v[1]);
        otfx_kv_u64(reply, "exclusive_ns", e->v[2]);
        otfx_kv_f64(reply, "share", total ? (double)e->v[2] / (double)total : 0.0);
        otfx_kv_u64(reply, "messages_sent", e->v[3]);
        otfx_kv_u64(reply, "bytes_sent", e->v[4]);
        otfx_kv_u64(reply, "messages_received", e->v[5]);
        otfx_kv_u64(reply, "bytes_received", e->v[6]);
        otfx_kv_end(reply);
    }
    free(name);
    for (uint32_t i = 0; i < p.rank_count && !reply->failed; i++) {
        otfx_kv_begin(reply, "compensated-rank");
        otfx_kv_u64(reply, "rank", p.ranks[i].rank);
        otfx_kv_u64(reply, "end_ns", p.ranks[i].measured_end);
        otfx_kv_u64(reply, "compensated_end_ns", p.ranks[i].compensated_end);
        otfx_kv_u64(reply, "delay_ns", p.ranks[i].delay);
        otfx_kv_u64(reply, "intrusion_ns", p.ranks[i].intrusion);
        otfx_kv_end(reply);
    }
    parsed_free(&p);
    if (reply->failed) {
        snprintf(error, error_size, "profile: out of memory");
        return false;
    }
    return true;
}

const otfx_analysis_module otfx_module_profile = {
    .abi = OTFX_ANALYSIS_ABI,
    .name = "profile",
    .help = "per region: visits, inclusive and exclusive time (--from --to --ranks --compensated)",
    .leaf = profile_leaf,
    .merge = profile_merge,
    .finish = profile_finish,
};

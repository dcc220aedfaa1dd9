/* replay_support.c — the parts the replay-based modules share (replay_support.h). */
#include "replay_support.h"

#include "follow_states.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- regions by reference ------------------------------------------------------------------------ */

void region_facts_init(region_facts *facts, otfx_defs *defs, const char *zero_name)
{
    memset(facts, 0, sizeof *facts);
    facts->defs = defs;
    facts->zero_name = zero_name && zero_name[0] ? zero_name : NULL;
}

void region_facts_free(region_facts *facts)
{
    free(facts->known);
    free(facts->role);
    free(facts->name);
    memset(facts, 0, sizeof *facts);
}

size_t region_facts_lookup(region_facts *facts, otfx_ref region)
{
    if (region == OTFX_REF_NONE)
        return SIZE_MAX;
    if (region >= facts->capacity) {
        size_t capacity = facts->capacity ? facts->capacity : 64;
        while (capacity <= region)
            capacity *= 2;
        unsigned char *known = realloc(facts->known, capacity);
        if (!known) {
            facts->failed = true;
            return SIZE_MAX;
        }
        facts->known = known;
        unsigned char *role = realloc(facts->role, capacity);
        if (!role) {
            facts->failed = true;
            return SIZE_MAX;
        }
        facts->role = role;
        const char **name = realloc(facts->name, capacity * sizeof *name);
        if (!name) {
            facts->failed = true;
            return SIZE_MAX;
        }
        facts->name = name;
        memset(facts->known + facts->capacity, 0, capacity - facts->capacity);
        facts->capacity = capacity;
    }
    if (!facts->known[region]) {
        otfx_region_def def;
        if (otfx_defs_get_region(facts->defs, region, &def) == OTFX_OK) {
            facts->known[region] = 1;
            facts->role[region] = (unsigned char)def.role;
            facts->name[region] = def.name;
        } else {
            facts->known[region] = 2;
        }
    }
    return facts->known[region] == 1 ? region : SIZE_MAX;
}

/* ---- a stream's calling stack and CPU clock -------------------------------------------------------- */

void cpu_clock_init(cpu_clock *clock, otfx_time from, otfx_time to)
{
    memset(clock, 0, sizeof *clock);
    clock->from = from;
    clock->to = to;
}

void cpu_clock_free(cpu_clock *clock)
{
    free(clock->stack);
    clock->stack = NULL;
    clock->capacity = clock->depth = 0;
}

bool cpu_clock_grow(cpu_clock *clock)
{
    if (clock->depth >= OTFX_MAX_CALL_DEPTH ||
        !otfx_reserve_u32((void **)&clock->stack, &clock->capacity, (size_t)clock->depth + 1,
                          sizeof *clock->stack, 16)) {
        clock->failed = true;
        return false;
    }
    return true;
}

/* ---- what could not be seen -------------------------------------------------------------------------- */

const char *unseen_why_name(uint32_t why)
{
    return why == UNSEEN_RANK_NOT_SERVED_RANGE ? "rank-not-served"
                                               : otfx_replay_gap_name((otfx_replay_gap)why);
}

void unseen_free(unseen_report *report)
{
    free(report->held);
    free(report->ranges);
    memset(report, 0, sizeof *report);
}

static bool add_range(unseen_report *report, unseen_range range)
{
    if (!otfx_reserve((void **)&report->ranges, &report->range_capacity, report->range_count + 1,
                      sizeof *report->ranges, 16)) {
        report->failed = true;
        return false;
    }
    report->ranges[report->range_count++] = range;
    report->ranges_total++;
    return true;
}

static int compare_range_stream(const void *x, const void *y)
{
    const unseen_range *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->why != b->why)
        return a->why < b->why ? -1 : 1;
    return (a->begin > b->begin) - (a->begin < b->begin);
}

static int compare_range(const void *x, const void *y)
{
    const unseen_range *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->why != b->why)
        return a->why < b->why ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

static int compare_range_longest(const void *x, const void *y)
{
    const unseen_range *a = x, *b = y;
    const otfx_time la = a->end - a->begin, lb = b->end - b->begin;
    if (la != lb)
        return la > lb ? -1 : 1;
    return compare_range(a, b);
}

/* Coalesces the ranges of one stream and reason that touch or overlap, keeps the longest
 * UNSEEN_RANGES_KEPT and sorts them by stream and time. */
static void normalize_ranges(unseen_report *report)
{
    if (report->range_count > 1) {
        qsort(report->ranges, report->range_count, sizeof *report->ranges, compare_range_stream);
        size_t kept = 0;
        for (size_t i = 0; i < report->range_count; i++) {
            unseen_range r = report->ranges[i];
            unseen_range *last = kept ? &report->ranges[kept - 1] : NULL;
            if (last && last->rank == r.rank && last->thread == r.thread && last->why == r.why &&
                r.begin <= last->end) {
                if (r.end > last->end)
                    last->end = r.end;
                if (report->ranges_total)
                    report->ranges_total--;
                continue;
            }
            report->ranges[kept++] = r;
        }
        report->range_count = kept;
    }
    if (report->range_count > UNSEEN_RANGES_KEPT) {
        qsort(report->ranges, report->range_count, sizeof *report->ranges, compare_range_longest);
        for (size_t i = UNSEEN_RANGES_KEPT; i < report->range_count; i++)
            report->left_out_ns += report->ranges[i].end - report->ranges[i].begin;
        report->range_count = UNSEEN_RANGES_KEPT;
    }
    if (report->range_count > 1)
        qsort(report->ranges, report->range_count, sizeof *report->ranges, compare_range);
}

void unseen_gap(unseen_report *report, const otfx_replay_stream *stream, otfx_time begin, otfx_time end,
                otfx_replay_gap why)
{
    if (begin >= end)
        return;
    /* a stream with many reductions: keep the memory bounded while the replay runs */
    if (report->range_count >= 16 * UNSEEN_RANGES_KEPT)
        normalize_ranges(report);
    add_range(report,
              (unseen_range){
                  .rank = stream->rank, .thread = stream->thread, .why = why, .begin = begin, .end = end});
}

void unseen_from_stats(unseen_report *report, const otfx_replay_stats *stats)
{
    uint64_t *v = report->counts.v;
    memset(&report->counts, 0, sizeof report->counts);
    v[UNSEEN_NOT_HELD] = stats->receives_missing[OTFX_REPLAY_NOT_HELD];
    v[UNSEEN_RANK_NOT_SERVED] = stats->receives_missing[OTFX_REPLAY_RANK_NOT_SERVED];
    v[UNSEEN_NO_ORDINAL] = stats->receives_missing[OTFX_REPLAY_NO_ORDINAL];
    v[UNSEEN_STALLED] = stats->receives_missing[OTFX_REPLAY_STALLED];
    v[UNSEEN_SENDS_UNRECEIVED] = stats->sends_unreceived;
    v[UNSEEN_COLLECTIVES_PARTIAL] = stats->collectives_partial;
    v[UNSEEN_GAPS] = stats->gaps;
    v[UNSEEN_GAP_NS] = stats->gap_time;
    v[UNSEEN_RECEIVES] = stats->receives;
    v[UNSEEN_COLLECTIVES] = stats->collectives_complete + stats->collectives_partial;
    v[UNSEEN_STREAMS] = stats->streams;
    normalize_ranges(report);
}

void unseen_write(otfx_blob *out, const unseen_report *report)
{
    otfx_blob_u32(out, UNSEEN_COUNT);
    for (int i = 0; i < UNSEEN_COUNT; i++)
        otfx_blob_u64(out, report->counts.v[i]);
    otfx_blob_u32(out, report->app_ranks);
    otfx_blob_u32(out, report->oldest_rank);
    otfx_blob_u64(out, report->held_until_min);
    otfx_blob_u64(out, report->held_until_max);
    otfx_blob_u32(out, report->held_pairs);
    for (uint32_t i = 0; i < 2 * report->held_pairs; i++)
        otfx_blob_u32(out, report->held[i]);
    otfx_blob_u64(out, report->ranges_total);
    otfx_blob_u64(out, report->left_out_ns);
    otfx_blob_u32(out, (uint32_t)report->range_count);
    for (size_t i = 0; i < report->range_count; i++) {
        const unseen_range *r = &report->ranges[i];
        otfx_blob_u32(out, r->rank);
        otfx_blob_u32(out, r->thread);
        otfx_blob_u32(out, r->why);
        otfx_blob_u64(out, r->begin);
        otfx_blob_u64(out, r->end);
    }
}

void unseen_read(otfx_blob_reader *reader, unseen_report *report)
{
    memset(report, 0, sizeof *report);
    if (otfx_blob_read_u32(reader) != UNSEEN_COUNT)
        reader->failed = true;
    for (int i = 0; i < UNSEEN_COUNT && !reader->failed; i++)
        report->counts.v[i] = otfx_blob_read_u64(reader);
    report->app_ranks = otfx_blob_read_u32(reader);
    report->oldest_rank = otfx_blob_read_u32(reader);
    report->held_until_min = otfx_blob_read_u64(reader);
    report->held_until_max = otfx_blob_read_u64(reader);
    uint32_t pairs = otfx_blob_read_u32(reader);
    if (reader->failed || pairs > (reader->length - reader->offset) / 8) {
        reader->failed = true;
        return;
    }
    report->held = pairs ? malloc((size_t)pairs * 2 * sizeof *report->held) : NULL;
    if (pairs && !report->held) {
        reader->failed = true;
        return;
    }
    report->held_pairs = report->held_capacity = pairs;
    for (uint32_t i = 0; i < 2 * pairs && !reader->failed; i++) {
        report->held[i] = otfx_blob_read_u32(reader);
        /* sorted, disjoint and not touching: [first, last] pairs in increasing order */
        if (i > 0 && (i % 2 ? report->held[i] < report->held[i - 1]
                            : report->held[i] <= (uint64_t)report->held[i - 1] + 1))
            reader->failed = true;
    }
    report->ranges_total = otfx_blob_read_u64(reader);
    report->left_out_ns = otfx_blob_read_u64(reader);
    uint32_t count = otfx_blob_read_u32(reader);
    if (reader->failed || count > UNSEEN_RANGES_KEPT || count > (reader->length - reader->offset) / 28 ||
        count > report->ranges_total) {
        reader->failed = true;
        unseen_free(report);
        return;
    }
    report->ranges = count ? malloc(count * sizeof *report->ranges) : NULL;
    if (count && !report->ranges) {
        reader->failed = true;
        unseen_free(report);
        return;
    }
    report->range_count = report->range_capacity = count;
    for (uint32_t i = 0; i < count && !reader->failed; i++) {
        unseen_range *r = &report->ranges[i];
        r->rank = otfx_blob_read_u32(reader);
        r->thread = otfx_blob_read_u32(reader);
        r->why = otfx_blob_read_u32(reader);
        r->begin = otfx_blob_read_u64(reader);
        r->end = otfx_blob_read_u64(reader);
        if (r->why >= UNSEEN_WHY_COUNT || r->begin >= r->end ||
            (i > 0 && compare_range(&report->ranges[i - 1], r) >= 0))
            reader->failed = true;
    }
    if (reader->failed)
        unseen_free(report);
}

/* Adds [first, last] to the held ranks (kept sorted, disjoint, not touching). */
static bool add_held(unseen_report *report, uint32_t first, uint32_t last)
{
    uint32_t n = report->held_pairs;
    uint32_t *merged = malloc(((size_t)n + 1) * 2 * sizeof *merged);
    if (!merged) {
        report->failed = true;
        return false;
    }
    uint32_t count = 0;
    bool placed = false;
    for (uint32_t i = 0; i <= n; i++) {
        uint32_t a, b;
        if (i < n && (placed || report->held[2 * i] < first)) {
            a = report->held[2 * i];
            b = report->held[2 * i + 1];
        } else if (!placed) {
            a = first;
            b = last;
            placed = true;
            i--; /* the pair at i still comes */
        } else {
            break;
        }
        if (count && a <= merged[2 * count - 1] + 1ull) {
            if (b > merged[2 * count - 1])
                merged[2 * count - 1] = b;
        } else {
            merged[2 * count] = a;
            merged[2 * count + 1] = b;
            count++;
        }
    }
    free(report->held);
    report->held = merged;
    report->held_pairs = report->held_capacity = count;
    return true;
}

static uint64_t held_rank_count(const unseen_report *report)
{
    uint64_t count = 0;
    for (uint32_t i = 0; i < report->held_pairs; i++)
        count += (uint64_t)report->held[2 * i + 1] - report->held[2 * i] + 1;
    return count;
}

/* A selected rank holding events, the last one received at `until`. */
static void add_freshness(unseen_report *report, uint32_t rank, otfx_time until, bool first)
{
    if (first || until < report->held_until_min ||
        (until == report->held_until_min && rank < report->oldest_rank)) {
        report->held_until_min = until;
        report->oldest_rank = rank;
    }
    if (first || until > report->held_until_max)
        report->held_until_max = until;
}

bool unseen_add(unseen_report *into, const unseen_report *other)
{
    for (int i = 0; i < UNSEEN_COUNT; i++)
        into->counts.v[i] += other->counts.v[i];
    if (other->app_ranks > into->app_ranks)
        into->app_ranks = other->app_ranks;
    if (other->held_pairs && !into->held_pairs) {
        into->held_until_min = other->held_until_min;
        into->held_until_max = other->held_until_max;
        into->oldest_rank = other->oldest_rank;
    } else if (other->held_pairs) {
        add_freshness(into, other->oldest_rank, other->held_until_min, false);
        if (other->held_until_max > into->held_until_max)
            into->held_until_max = other->held_until_max;
    }
    for (uint32_t i = 0; i < other->held_pairs; i++)
        if (!add_held(into, other->held[2 * i], other->held[2 * i + 1]))
            return false;
    /* the totals count every range once; coalescing below takes those that meet off again */
    const uint64_t total = into->ranges_total + other->ranges_total;
    for (size_t i = 0; i < other->range_count; i++)
        if (!add_range(into, other->ranges[i]))
            return false;
    into->ranges_total = total;
    into->left_out_ns += other->left_out_ns;
    normalize_ranges(into);
    return !into->failed;
}

static bool rank_held(const unseen_report *report, uint32_t rank)
{
    uint32_t low = 0, high = report->held_pairs;
    while (low < high) {
        uint32_t mid = low + (high - low) / 2;
        if (report->held[2 * mid + 1] < rank)
            low = mid + 1;
        else
            high = mid;
    }
    return low < report->held_pairs && report->held[2 * low] <= rank;
}

bool unseen_lines(otfx_text *reply, const otfx_command *query, const unseen_report *merged)
{
    unseen_report report = *merged;
    report.ranges = NULL;
    report.range_count = report.range_capacity = 0;
    report.held = NULL;
    report.ranges_total = 0;
    uint64_t dropped = 0;
    for (size_t i = 0; i < merged->range_count; i++) {
        /* a stream of a rank that holds nothing: the whole window is rank-not-served, below */
        if (!rank_held(merged, merged->ranges[i].rank)) {
            dropped++;
            continue;
        }
        add_range(&report, merged->ranges[i]);
    }
    report.ranges_total = merged->ranges_total - dropped;
    /* selected ranks that no place holds events of: the whole window */
    for (uint32_t rank = 0, pair = 0; rank < merged->app_ranks && !report.failed; rank++) {
        while (pair < merged->held_pairs && merged->held[2 * pair + 1] < rank)
            pair++;
        const bool held = pair < merged->held_pairs && merged->held[2 * pair] <= rank;
        if (!held && otfx_rank_set_contains(&query->ranks, rank) && query->from < query->to)
            add_range(&report, (unseen_range){.rank = rank,
                                              .why = UNSEEN_RANK_NOT_SERVED_RANGE,
                                              .begin = query->from,
                                              .end = query->to});
    }
    normalize_ranges(&report);
    const uint64_t *v = report.counts.v;
    otfx_kv_begin(reply, "unseen");
    otfx_kv_u64(reply, "streams", v[UNSEEN_STREAMS]);
    otfx_kv_u64(reply, "receives", v[UNSEEN_RECEIVES]);
    otfx_kv_u64(reply, "receives_not_held", v[UNSEEN_NOT_HELD]);
    otfx_kv_u64(reply, "receives_rank_not_served", v[UNSEEN_RANK_NOT_SERVED]);
    otfx_kv_u64(reply, "receives_no_ordinal", v[UNSEEN_NO_ORDINAL]);
    otfx_kv_u64(reply, "receives_stalled", v[UNSEEN_STALLED]);
    otfx_kv_u64(reply, "sends_unreceived", v[UNSEEN_SENDS_UNRECEIVED]);
    otfx_kv_u64(reply, "collectives", v[UNSEEN_COLLECTIVES]);
    otfx_kv_u64(reply, "collectives_partial", v[UNSEEN_COLLECTIVES_PARTIAL]);
    otfx_kv_u64(reply, "gaps", v[UNSEEN_GAPS]);
    otfx_kv_u64(reply, "gap_ns", v[UNSEEN_GAP_NS]);
    const uint64_t held_ranks = held_rank_count(merged);
    otfx_kv_u64(reply, "held_ranks", held_ranks);
    otfx_kv_u64(reply, "held_until_min", held_ranks ? merged->held_until_min : 0);
    otfx_kv_u64(reply, "held_until_max", held_ranks ? merged->held_until_max : 0);
    if (held_ranks)
        otfx_kv_u64(reply, "held_until_oldest_rank", merged->oldest_rank);
    otfx_kv_u64(reply, "ranges", report.range_count);
    otfx_kv_u64(reply, "ranges_total", report.ranges_total);
    otfx_kv_u64(reply, "ranges_left_out", report.ranges_total - report.range_count);
    otfx_kv_u64(reply, "ranges_left_out_ns", report.left_out_ns);
    otfx_kv_end(reply);
    for (size_t i = 0; i < report.range_count; i++) {
        const unseen_range *r = &report.ranges[i];
        otfx_kv_begin(reply, "unseen-range");
        otfx_kv_u64(reply, "rank", r->rank);
        otfx_kv_u64(reply, "thread", r->thread);
        otfx_kv_u64(reply, "begin", r->begin);
        otfx_kv_u64(reply, "end", r->end);
        otfx_kv_str(reply, "why", unseen_why_name(r->why));
        otfx_kv_end(reply);
    }
    const bool ok = !report.failed;
    free(report.ranges);
    return ok;
}

/* ---- a leaf's replay ------------------------------------------------------------------------------- */

static bool selects_rank(void *user, uint32_t rank)
{
    return otfx_rank_set_contains(user, rank);
}

/* Which selected ranks hold events at this place, and the time of the last event each sent. */
bool unseen_record_held(unseen_report *unseen, const otfx_command *query, const otfx_leaf_input *input)
{
    unseen->app_ranks = input->app_ranks;
    otfx_time *until = input->rank_count ? calloc(input->rank_count, sizeof *until) : NULL;
    bool *holds = input->rank_count ? calloc(input->rank_count, sizeof *holds) : NULL;
    bool ok = !input->rank_count || (until && holds);
    for (size_t i = 0; ok && i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        otfx_trace_status status;
        if (index >= input->rank_count || otfx_trace_status_get(input->traces[i], &status) != OTFX_OK ||
            status.first_time > status.last_time)
            continue;
        holds[index] = true;
        if (status.last_time > until[index])
            until[index] = status.last_time;
    }
    bool first = unseen->held_pairs == 0;
    for (size_t index = 0; ok && index < input->rank_count; index++) {
        uint32_t rank = input->ranks[index].rank;
        if (!holds[index] || rank >= input->app_ranks || !otfx_rank_set_contains(&query->ranks, rank))
            continue;
        ok = add_held(unseen, rank, rank);
        add_freshness(unseen, rank, until[index], first);
        first = false;
    }
    free(until);
    free(holds);
    return ok;
}

/* The replay built (`follow`: config.follow, to be run round after round). */
static otfx_replay *replay_leaf_build(const otfx_command *query, const otfx_leaf_input *input,
                                      const otfx_replay_pass *pass, void *pass_user, bool follow, char *error,
                                      size_t error_size)
{
    otfx_replay_config config = {
        .from = query->from,
        .to = query->to,
        .pass = pass,
        .pass_user = pass_user,
        .selects_rank = selects_rank,
        .selects_user = (void *)&query->ranks,
        .app_ranks = input->app_ranks,
        .follow = follow,
        .decode_ahead = !follow && otfx_replay_cores_spare(),
    };
    char why[256] = "";
    otfx_replay *replay = otfx_replay_create(&config, input->defs, why, sizeof why);
    if (!replay) {
        snprintf(error, error_size, "%s: %s", pass->name, why[0] ? why : "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < input->trace_count; i++) {
        uint32_t index = input->rank_of_trace[i];
        if (index >= input->rank_count)
            continue;
        uint32_t rank = input->ranks[index].rank;
        if (!otfx_rank_set_contains(&query->ranks, rank))
            continue;
        uint32_t thread = input->thread_of_trace ? input->thread_of_trace[i] : 0;
        if (otfx_replay_add_trace(replay, input->traces[i], rank, thread) != OTFX_OK) {
            snprintf(error, error_size, "%s: stream of rank %u thread %u: %s", pass->name, rank, thread,
                     otfx_last_error());
            otfx_replay_destroy(replay);
            return NULL;
        }
    }
    return replay;
}

/* One run of it (false with why in `error`; the replay is the caller's either way). */
static bool replay_leaf_go(otfx_replay *replay, const otfx_leaf_input *input, const otfx_replay_pass *pass,
                           char *error, size_t error_size)
{
    char why[256] = "";
    if (otfx_replay_run(replay, input->exchange, input->deadline_ns, why, sizeof why) != OTFX_OK) {
        snprintf(error, error_size, "%s: replay: %s", pass->name, why);
        return false;
    }
    return true;
}

otfx_replay *replay_leaf_run(const otfx_command *query, const otfx_leaf_input *input,
                             const otfx_replay_pass *pass, void *pass_user, char *error, size_t error_size)
{
    otfx_replay *replay = replay_leaf_build(query, input, pass, pass_user, false, error, error_size);
    if (replay && !replay_leaf_go(replay, input, pass, error, error_size)) {
        otfx_replay_destroy(replay);
        return NULL;
    }
    return replay;
}

void follow_fields_write(otfx_blob *out, const follow_fields *fields)
{
    otfx_blob_u64(out, fields->round);
    otfx_blob_u64(out, fields->restarted);
    otfx_blob_u64(out, fields->events);
}

void follow_fields_read(otfx_blob_reader *reader, follow_fields *fields)
{
    fields->round = otfx_blob_read_u64(reader);
    fields->restarted = otfx_blob_read_u64(reader);
    fields->events = otfx_blob_read_u64(reader);
    if (fields->restarted > 1)
        reader->failed = true;
}

void follow_fields_merge(follow_fields *into, const follow_fields *other)
{
    if (other->round > into->round)
        into->round = other->round;
    if (other->restarted > into->restarted)
        into->restarted = other->restarted;
    into->events += other->events;
}

void follow_fields_line(otfx_text *reply, const otfx_command *query, const follow_fields *fields)
{
    if (!query->follow)
        return;
    otfx_kv_u64(reply, "follow", query->follow);
    otfx_kv_u64(reply, "round", fields->round);
    otfx_kv_u64(reply, "restarted", fields->restarted);
    otfx_kv_u64(reply, "events_this_round", fields->events);
}

void *stream_slot_grow(void **array, size_t *capacity, size_t item_size, uint32_t index)
{
    const size_t old_capacity = *capacity;
    if (!otfx_reserve(array, capacity, (size_t)index + 1, item_size, 16))
        return NULL;
    unsigned char *items = *array;
    memset(items + old_capacity * item_size, 0, (*capacity - old_capacity) * item_size);
    return items + (size_t)index * item_size;
}

int name_compare(const char *a, uint32_t a_length, const char *b, uint32_t b_length)
{
    uint32_t n = a_length < b_length ? a_length : b_length;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return a_length < b_length ? -1 : a_length > b_length;
}

/* ---- a replay module's leaf -------------------------------------------------------------------------- */

static bool leaf_once(const replay_module *module, const otfx_command *query, const otfx_leaf_input *input,
                      otfx_blob *out, char *error, size_t error_size)
{
    void *run = module->run_create(query, input);
    if (!run) {
        snprintf(error, error_size, "%s: out of memory", module->pass->name);
        return false;
    }
    otfx_replay *replay = replay_leaf_run(query, input, module->pass, run, error, error_size);
    bool ok = replay != NULL;
    if (ok) {
        otfx_replay_stats stats;
        otfx_replay_get_stats(replay, &stats);
        otfx_replay_destroy(replay);
        const follow_fields none = {0};
        ok = module->answer(run, query, input, &stats, &none, out, error, error_size);
    }
    module->run_destroy(run);
    return ok;
}

bool replay_leaf(const replay_module *module, const otfx_command *query, const otfx_leaf_input *input,
                 otfx_blob *out, char *error, size_t error_size)
{
    if (!query->follow)
        return leaf_once(module, query, input, out, error, error_size);
    follow_state *state = follow_begin(module->pass->name, query, input, error, error_size);
    if (!state)
        return false;
    if (!state->run) {
        if (!(state->run = module->run_create(&state->query, input))) {
            follow_drop(state);
            snprintf(error, error_size, "%s: out of memory", module->pass->name);
            return false;
        }
        state->free_run = module->run_destroy;
    }
    if (!state->replay && !(state->replay = replay_leaf_build(&state->query, input, module->pass, state->run,
                                                              true, error, error_size))) {
        follow_drop(state);
        return false;
    }
    otfx_replay_stats stats;
    if (!replay_leaf_go(state->replay, input, module->pass, error, error_size)) {
        follow_drop(state);
        return false;
    }
    otfx_replay_get_stats(state->replay, &stats);
    const follow_fields fields = {
        .round = state->round, .restarted = state->restarted, .events = stats.events_last_run};
    if (!module->answer(state->run, &state->query, input, &stats, &fields, out, error, error_size)) {
        follow_drop(state);
        return false;
    }
    follow_keep(state, input);
    return true;
}

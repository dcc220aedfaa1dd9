/* otf2_check.c — see otf2_check.h. Failures abort with a message (this file is also linked into
 * programs without cmocka). */
#define _XOPEN_SOURCE 700
#include "otf2_check.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void fail(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "otf2_check: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    abort();
}

static void *checked_realloc(void *items, size_t size)
{
    void *moved = realloc(items, size ? size : 1);
    if (!moved)
        fail("out of memory");
    return moved;
}

char *otf2_check_scratch_dir(const char *tag)
{
    size_t size = strlen(OTFX_TEST_TMPDIR) + strlen(tag) + 64;
    char *path = checked_realloc(NULL, size);
    snprintf(path, size, "%s/%s-%ld-XXXXXX", OTFX_TEST_TMPDIR, tag, (long)getpid());
    if (mkdir(OTFX_TEST_TMPDIR, 0777) != 0 && errno != EEXIST)
        fail("cannot create %s: %s", OTFX_TEST_TMPDIR, strerror(errno));
    if (!mkdtemp(path))
        fail("cannot create a directory like %s: %s", path, strerror(errno));
    return path;
}

static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *walk)
{
    (void)info;
    (void)flag;
    (void)walk;
    return remove(path);
}

void otf2_check_remove_tree(const char *path)
{
    if (!path || strncmp(path, OTFX_TEST_TMPDIR, strlen(OTFX_TEST_TMPDIR)) != 0)
        fail("refusing to remove %s: not below %s", path ? path : "(null)", OTFX_TEST_TMPDIR);
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void otf2_check_job_create(otf2_check_job *job, random_stream_kind kind, uint64_t seed, size_t traces,
                           size_t events, size_t budget_bytes, otfx_reduction strategy)
{
    otf2_check_job_world(job, kind, seed, traces, events, budget_bytes, strategy, 0);
}

void otf2_check_job_world(otf2_check_job *job, random_stream_kind kind, uint64_t seed, size_t traces,
                          size_t events, size_t budget_bytes, otfx_reduction strategy, uint32_t world_size)
{
    job->defs = otfx_defs_create();
    job->traces = checked_realloc(NULL, traces * sizeof *job->traces);
    job->count = traces;
    if (!job->defs)
        fail("otfx_defs_create failed");
    enum { BATCH = 1024 };
    otfx_event *batch = checked_realloc(NULL, BATCH * sizeof *batch);
    for (size_t t = 0; t < traces; t++) {
        random_stream_config config = random_stream_config_default(kind, seed + t);
        config.rank = (uint32_t)t;
        if (world_size)
            config.world_size = world_size;
        if (config.world_size < traces)
            config.world_size = (uint32_t)traces;
        random_stream *stream = random_stream_create(job->defs, &config);
        if (!stream)
            fail("random_stream_create failed");
        otfx_trace_config trace_config = otfx_trace_config_default(budget_bytes);
        trace_config.strategy = strategy;
        if (otfx_trace_create(&trace_config, job->defs, random_stream_location(stream), &job->traces[t]) !=
            OTFX_OK)
            fail("otfx_trace_create: %s", otfx_last_error());
        for (size_t done = 0; done <= events;) {
            size_t n = done == events
                           ? random_stream_finish(stream, batch, BATCH)
                           : random_stream_next(stream, batch, events - done < BATCH ? events - done : BATCH);
            size_t appended = 0;
            otfx_status status = otfx_trace_append(job->traces[t], batch, n, &appended);
            if (status != OTFX_OK && status != OTFX_ERR_STOPPED)
                fail("otfx_trace_append: %s: %s", otfx_strerror(status), otfx_last_error());
            if (done == events)
                break;
            done += n;
        }
        random_stream_destroy(stream);
    }
    free(batch);
}

void otf2_check_job_destroy(otf2_check_job *job)
{
    for (size_t t = 0; t < job->count; t++)
        otfx_trace_destroy(job->traces[t]);
    free(job->traces);
    otfx_defs_destroy(job->defs);
    job->traces = NULL;
    job->defs = NULL;
    job->count = 0;
}

static int collect_one(const otfx_event *event, void *user)
{
    otf2_check_events *out = user;
    if (out->count == out->capacity) {
        out->capacity = out->capacity ? 2 * out->capacity : 1024;
        out->events = checked_realloc(out->events, out->capacity * sizeof *out->events);
    }
    out->events[out->count++] = *event;
    return 0;
}

void otf2_check_collect(otfx_trace *trace, otfx_time from, otfx_time to, bool context, otf2_check_events *out)
{
    *out = (otf2_check_events){0};
    otfx_status status = otfx_query_events(trace, from, to, context, collect_one, out);
    if (status != OTFX_OK)
        fail("otfx_query_events: %s: %s", otfx_strerror(status), otfx_last_error());
}

void otf2_check_events_free(otf2_check_events *events)
{
    free(events->events);
    *events = (otf2_check_events){0};
}

/* ---- comparing events of two definition stores ---- */

static bool differ(char *why, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

static bool differ(char *why, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(why, size, format, args);
    va_end(args);
    return false;
}

static bool same_region(const otfx_defs *defs_a, otfx_ref a, const otfx_defs *defs_b, otfx_ref b, char *why,
                        size_t size)
{
    otfx_region_def region_a, region_b;
    if (otfx_defs_get_region(defs_a, a, &region_a) != OTFX_OK ||
        otfx_defs_get_region(defs_b, b, &region_b) != OTFX_OK)
        return differ(why, size, "undefined region %u / %u", a, b);
    if (strcmp(region_a.name, region_b.name) != 0 || region_a.role != region_b.role)
        return differ(why, size, "region \"%s\" (role %d) vs \"%s\" (role %d)", region_a.name, region_a.role,
                      region_b.name, region_b.role);
    return true;
}

static bool same_comm(const otfx_defs *defs_a, otfx_ref a, const otfx_defs *defs_b, otfx_ref b, char *why,
                      size_t size)
{
    otfx_comm_def comm_a, comm_b;
    if (otfx_defs_get_comm(defs_a, a, &comm_a) != OTFX_OK ||
        otfx_defs_get_comm(defs_b, b, &comm_b) != OTFX_OK)
        return differ(why, size, "undefined communicator %u / %u", a, b);
    if (strcmp(comm_a.name, comm_b.name) != 0 || comm_a.size != comm_b.size ||
        memcmp(comm_a.world_ranks, comm_b.world_ranks, comm_a.size * sizeof *comm_a.world_ranks) != 0)
        return differ(why, size, "communicator \"%s\" (%u members) vs \"%s\" (%u members)", comm_a.name,
                      comm_a.size, comm_b.name, comm_b.size);
    return true;
}

static bool same_metric(const otfx_defs *defs_a, otfx_ref a, const otfx_defs *defs_b, otfx_ref b, char *why,
                        size_t size)
{
    otfx_metric_def metric_a, metric_b;
    if (otfx_defs_get_metric(defs_a, a, &metric_a) != OTFX_OK ||
        otfx_defs_get_metric(defs_b, b, &metric_b) != OTFX_OK)
        return differ(why, size, "undefined metric %u / %u", a, b);
    if (strcmp(metric_a.name, metric_b.name) != 0 || strcmp(metric_a.unit, metric_b.unit) != 0 ||
        metric_a.type != metric_b.type)
        return differ(why, size, "metric \"%s\" vs \"%s\"", metric_a.name, metric_b.name);
    return true;
}

static int compare_ids(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void otf2_check_expect_requests(otf2_check_events *events)
{
    uint64_t *started = malloc((events->count + 1) * sizeof *started);
    if (!started)
        abort();
    size_t count = 0;
    for (size_t e = 0; e < events->count; e++) {
        const otfx_event *event = &events->events[e];
        if (event->type == OTFX_EV_ISEND)
            started[count++] = event->u.msg.request;
        else if (event->type == OTFX_EV_IRECV_REQUEST || event->type == OTFX_EV_NBC_REQUEST)
            started[count++] = event->u.request.request;
    }
    qsort(started, count, sizeof *started, compare_ids);
    size_t kept = 0;
    for (size_t e = 0; e < events->count; e++) {
        otfx_event event = events->events[e];
        bool completion = true;
        uint64_t request = 0;
        switch (event.type) {
        case OTFX_EV_ISEND_COMPLETE:
        case OTFX_EV_REQUEST_CANCELLED:
            request = event.u.request.request;
            break;
        case OTFX_EV_NBC_COMPLETE:
            request = event.u.coll.request;
            break;
        case OTFX_EV_IRECV:
            completion = false;
            if (!count || !bsearch(&event.u.msg.request, started, count, sizeof *started, compare_ids))
                event.type = OTFX_EV_RECV;
            break;
        default:
            completion = false;
            break;
        }
        if (completion && (!count || !bsearch(&request, started, count, sizeof *started, compare_ids)))
            continue;
        events->events[kept++] = event;
    }
    events->count = kept;
    free(started);
}

bool otf2_check_same_event(const otfx_defs *defs_a, const otfx_event *a, const otfx_defs *defs_b,
                           const otfx_event *b, char *why, size_t size)
{
    if (a->type != b->type || a->time != b->time)
        return differ(why, size, "%s at %" PRIu64 " vs %s at %" PRIu64, otfx_event_type_name(a->type),
                      a->time, otfx_event_type_name(b->type), b->time);
    switch (a->type) {
    case OTFX_EV_ENTER:
    case OTFX_EV_LEAVE:
        return same_region(defs_a, a->u.region.region, defs_b, b->u.region.region, why, size);
    case OTFX_EV_SEND:
    case OTFX_EV_RECV:
    case OTFX_EV_ISEND:
    case OTFX_EV_IRECV:
        if (a->u.msg.peer != b->u.msg.peer || a->u.msg.tag != b->u.msg.tag ||
            a->u.msg.bytes != b->u.msg.bytes)
            return differ(why, size, "message peer/tag/bytes %u/%u/%" PRIu64 " vs %u/%u/%" PRIu64,
                          a->u.msg.peer, a->u.msg.tag, a->u.msg.bytes, b->u.msg.peer, b->u.msg.tag,
                          b->u.msg.bytes);
        if ((a->type == OTFX_EV_ISEND || a->type == OTFX_EV_IRECV) && a->u.msg.request != b->u.msg.request)
            return differ(why, size, "request %" PRIu64 " vs %" PRIu64, a->u.msg.request, b->u.msg.request);
        return same_comm(defs_a, a->u.msg.comm, defs_b, b->u.msg.comm, why, size);
    case OTFX_EV_ISEND_COMPLETE:
    case OTFX_EV_IRECV_REQUEST:
    case OTFX_EV_REQUEST_CANCELLED:
    case OTFX_EV_NBC_REQUEST:
        if (a->u.request.request != b->u.request.request)
            return differ(why, size, "request %" PRIu64 " vs %" PRIu64, a->u.request.request,
                          b->u.request.request);
        return true;
    case OTFX_EV_COLL_BEGIN:
        return true;
    case OTFX_EV_COLL_END:
    case OTFX_EV_NBC_COMPLETE:
        if (a->u.coll.op != b->u.coll.op || a->u.coll.root != b->u.coll.root ||
            a->u.coll.sent != b->u.coll.sent || a->u.coll.received != b->u.coll.received)
            return differ(why, size, "collective op/root/sent/received differ");
        if (a->type == OTFX_EV_NBC_COMPLETE && a->u.coll.request != b->u.coll.request)
            return differ(why, size, "request %" PRIu64 " vs %" PRIu64, a->u.coll.request, b->u.coll.request);
        return same_comm(defs_a, a->u.coll.comm, defs_b, b->u.coll.comm, why, size);
    case OTFX_EV_METRIC:
        if (a->u.metric.value != b->u.metric.value)
            return differ(why, size, "metric value %" PRIu64 " vs %" PRIu64, a->u.metric.value,
                          b->u.metric.value);
        return same_metric(defs_a, a->u.metric.metric, defs_b, b->u.metric.metric, why, size);
    case OTFX_EV_PHASE:
        if (a->u.phase.value != b->u.phase.value)
            return differ(why, size, "phase value %" PRId64 " vs %" PRId64, a->u.phase.value,
                          b->u.phase.value);
        return same_region(defs_a, a->u.phase.region, defs_b, b->u.phase.region, why, size);
    case OTFX_EV_REDUCTION:
        if (a->u.reduction.strategy != b->u.reduction.strategy ||
            a->u.reduction.begin != b->u.reduction.begin || a->u.reduction.end != b->u.reduction.end ||
            a->u.reduction.events_removed != b->u.reduction.events_removed)
            return differ(why, size,
                          "reduction %s [%" PRIu64 ", %" PRIu64 ") -%" PRIu64 " vs %s [%" PRIu64 ", %" PRIu64
                          ") -%" PRIu64,
                          otfx_reduction_name(a->u.reduction.strategy), a->u.reduction.begin,
                          a->u.reduction.end, a->u.reduction.events_removed,
                          otfx_reduction_name(b->u.reduction.strategy), b->u.reduction.begin,
                          b->u.reduction.end, b->u.reduction.events_removed);
        return true;
    default:
        return differ(why, size, "unknown event type %d", (int)a->type);
    }
}

/* ---- otf2-print ---- */

static otf2_check_location *location_of(otf2_check_print *print, uint64_t location)
{
    for (size_t l = 0; l < print->count; l++)
        if (print->locations[l].location == location)
            return &print->locations[l];
    print->locations = checked_realloc(print->locations, (print->count + 1) * sizeof *print->locations);
    otf2_check_location *added = &print->locations[print->count++];
    memset(added, 0, sizeof *added);
    added->location = location;
    added->well_nested = added->ordered = true;
    return added;
}

static void count_record(otf2_check_location *location, const char *name, uint64_t n)
{
    location->total += n;
    for (int k = 0; k < OTF2_CHECK_MAX_RECORD_KINDS; k++) {
        if (location->names[k][0] == '\0')
            snprintf(location->names[k], sizeof location->names[k], "%s", name);
        if (strcmp(location->names[k], name) == 0) {
            location->counts[k] += n;
            return;
        }
    }
    fail("more than %d record kinds", OTF2_CHECK_MAX_RECORD_KINDS);
}

uint64_t otf2_check_count(const otf2_check_location *location, const char *name)
{
    for (int k = 0; location && k < OTF2_CHECK_MAX_RECORD_KINDS; k++)
        if (strcmp(location->names[k], name) == 0)
            return location->counts[k];
    return 0;
}

const otf2_check_location *otf2_check_print_find(const otf2_check_print *print, uint64_t location)
{
    for (size_t l = 0; l < print->count; l++)
        if (print->locations[l].location == location)
            return &print->locations[l];
    return NULL;
}

/* Per location while parsing: the stack of open region refs. */
typedef struct open_regions {
    uint64_t location;
    uint64_t *refs;
    size_t depth, capacity;
} open_regions;

static open_regions *stack_of(open_regions **stacks, size_t *count, uint64_t location)
{
    for (size_t s = 0; s < *count; s++)
        if ((*stacks)[s].location == location)
            return &(*stacks)[s];
    *stacks = checked_realloc(*stacks, (*count + 1) * sizeof **stacks);
    open_regions *added = &(*stacks)[(*count)++];
    *added = (open_regions){.location = location};
    return added;
}

void otf2_check_print_run(const char *anchor, otf2_check_print *out)
{
    *out = (otf2_check_print){0};
    size_t size = strlen(OTFX_OTF2_PRINT) + strlen(anchor) + 16;
    char *command = checked_realloc(NULL, size);
    snprintf(command, size, "'%s' '%s'", OTFX_OTF2_PRINT, anchor);
    FILE *pipe = popen(command, "r");
    if (!pipe)
        fail("cannot run %s", command);
    open_regions *stacks = NULL;
    size_t stack_count = 0;
    char *line = NULL;
    size_t capacity = 0;
    bool in_events = false;
    otf2_check_location *pending_reduced = NULL; /* last record was an ENTER of a reduced region */
    while (getline(&line, &capacity, pipe) > 0) {
        if (strncmp(line, "Event ", 6) == 0) {
            in_events = true;
            continue;
        }
        if (!in_events || line[0] == '-' || line[0] == '\n')
            continue;
        if (line[0] == ' ') {
            if (pending_reduced && strstr(line, "otfx::events_removed"))
                pending_reduced->reduction_records++;
            pending_reduced = NULL;
            continue;
        }
        pending_reduced = NULL;
        char name[64];
        uint64_t location_id, time;
        if (sscanf(line, "%63s %" SCNu64 " %" SCNu64, name, &location_id, &time) != 3)
            continue;
        otf2_check_location *location = location_of(out, location_id);
        if (location->total > 0 && time < location->last_time)
            location->ordered = false;
        if (location->total == 0)
            location->first_time = time;
        location->last_time = time;
        count_record(location, name, 1);
        bool enter = strcmp(name, "ENTER") == 0, leave = strcmp(name, "LEAVE") == 0;
        if (!enter && !leave)
            continue;
        const char *region = strstr(line, "Region: \"");
        const char *ref_text = region ? strstr(region, "\" <") : NULL;
        if (!ref_text)
            fail("cannot parse the region of: %s", line);
        uint64_t ref = strtoull(ref_text + 3, NULL, 10);
        bool reduced = strncmp(region + 9, "otfx reduced: ", 14) == 0;
        open_regions *stack = stack_of(&stacks, &stack_count, location_id);
        if (enter) {
            if (stack->depth == stack->capacity) {
                stack->capacity = stack->capacity ? 2 * stack->capacity : 64;
                stack->refs = checked_realloc(stack->refs, stack->capacity * sizeof *stack->refs);
            }
            stack->refs[stack->depth++] = ref;
            if (reduced) {
                location->reduced_enters++;
                pending_reduced = location;
            }
        } else if (stack->depth == 0 || stack->refs[--stack->depth] != ref) {
            location->well_nested = false;
        }
    }
    for (size_t s = 0; s < stack_count; s++) {
        if (stacks[s].depth > 0)
            location_of(out, stacks[s].location)->well_nested = false;
        free(stacks[s].refs);
    }
    free(stacks);
    free(line);
    int status = pclose(pipe);
    out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    free(command);
}

char *otf2_check_print_listing(const char *anchor, uint64_t location)
{
    size_t size = strlen(OTFX_OTF2_PRINT) + strlen(anchor) + 16;
    char *command = checked_realloc(NULL, size);
    snprintf(command, size, "'%s' '%s'", OTFX_OTF2_PRINT, anchor);
    FILE *pipe = popen(command, "r");
    if (!pipe)
        fail("cannot run %s", command);
    size_t listing_capacity = 4096;
    char *listing = checked_realloc(NULL, listing_capacity), *line = NULL;
    size_t length = 0, capacity = 0;
    listing[0] = '\0';
    bool in_events = false;
    while (getline(&line, &capacity, pipe) > 0) {
        if (strncmp(line, "Event ", 6) == 0)
            in_events = true;
        char name[64];
        uint64_t location_id, time;
        if (!in_events || line[0] == ' ' ||
            sscanf(line, "%63s %" SCNu64 " %" SCNu64, name, &location_id, &time) != 3 ||
            location_id != location)
            continue;
        char entry[256];
        const char *region = strstr(line, "Region: \"");
        const char *region_end = region ? strchr(region + 9, '"') : NULL;
        if (region_end)
            snprintf(entry, sizeof entry, "%s %" PRIu64 " %.*s\n", name, time, (int)(region_end - region - 9),
                     region + 9);
        else
            snprintf(entry, sizeof entry, "%s %" PRIu64 "\n", name, time);
        /* Doubling: otf2-print lists hundreds of thousands of events, and ASan's realloc always copies. */
        if (length + strlen(entry) + 1 > listing_capacity) {
            while (length + strlen(entry) + 1 > listing_capacity)
                listing_capacity *= 2;
            listing = checked_realloc(listing, listing_capacity);
        }
        strcpy(listing + length, entry);
        length += strlen(entry);
    }
    free(line);
    pclose(pipe);
    free(command);
    return listing;
}

void otf2_check_print_free(otf2_check_print *print)
{
    free(print->locations);
    *print = (otf2_check_print){0};
}

/* ---- python3-otf2 ---- */

#define SYSTEM_PYTHON "/usr/bin/python3"

bool otf2_check_python_available(char *why, size_t size)
{
    if (access(SYSTEM_PYTHON, X_OK) != 0) {
        snprintf(why, size, "%s not found", SYSTEM_PYTHON);
        return false;
    }
    int status = system(SYSTEM_PYTHON " -c 'import otf2' >/dev/null 2>&1");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(why, size, "%s cannot import otf2 (Debian package python3-otf2)", SYSTEM_PYTHON);
        return false;
    }
    return true;
}

static const char python_counts[] = "import collections, sys, otf2\n"
                                    "counts = collections.Counter()\n"
                                    "with otf2.reader.open(sys.argv[1]) as trace:\n"
                                    "    for location, event in trace.events:\n"
                                    "        counts[(location._ref, type(event).__name__)] += 1\n"
                                    "for (location, name), n in sorted(counts.items()):\n"
                                    "    print(location, name, n)\n";

int otf2_check_python_counts(const char *anchor, otf2_check_print *out)
{
    *out = (otf2_check_print){0};
    char *script_dir = otf2_check_scratch_dir("python");
    size_t size = strlen(script_dir) + 32;
    char *script = checked_realloc(NULL, size);
    snprintf(script, size, "%s/counts.py", script_dir);
    FILE *file = fopen(script, "w");
    if (!file || fputs(python_counts, file) < 0 || fclose(file) != 0)
        fail("cannot write %s", script);
    size = strlen(script) + strlen(anchor) + 64;
    char *command = checked_realloc(NULL, size);
    snprintf(command, size, SYSTEM_PYTHON " '%s' '%s'", script, anchor);
    FILE *pipe = popen(command, "r");
    if (!pipe)
        fail("cannot run %s", command);
    char name[64];
    uint64_t location, n;
    while (fscanf(pipe, "%" SCNu64 " %63s %" SCNu64, &location, name, &n) == 3)
        count_record(location_of(out, location), name, n);
    int status = pclose(pipe);
    out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    otf2_check_remove_tree(script_dir);
    free(script_dir);
    free(script);
    free(command);
    return out->exit_code;
}

/* metrics.c — metrics read on the application's threads (metrics.h). */
#define _GNU_SOURCE /* RUSAGE_THREAD, syscall */
#include "metrics.h"

#include "metric_table.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef OTFX_WITH_PAPI
#include <papi.h>
#endif

_Static_assert(OTFX_METRICS_AT_ONCE == CAPTURE_METRICS_MAX, "one bound for a set of metrics");

bool capture_metrics_on;
static int rank_number = -1;
static uint64_t selected_mask;   /* atomic */
static uint32_t selection_epoch; /* atomic: changes with every selection */
static uint64_t refused_said;    /* atomic: metrics whose refusal this process reported */
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

enum member_kind { MEMBER_GROUP, MEMBER_SOLO, MEMBER_RUSAGE, MEMBER_PAPI };

struct member {
    uint8_t metric; /* index in the table */
    uint8_t kind;   /* enum member_kind */
    uint8_t slot;   /* MEMBER_GROUP: position in the group's read; MEMBER_PAPI: in the event set's */
    int fd;         /* MEMBER_SOLO: its own perf event */
};

struct thread_metrics {
    uint32_t epoch;  /* the selection this thread's set follows */
    uint32_t set_id; /* the latest set written in this thread's stream */
    bool any_set;
    uint32_t count;
    struct member members[CAPTURE_METRICS_MAX];
    int leader; /* the perf group's leader (-1: none) */
    uint32_t group_count;
    bool rusage;
    int papi_set; /* the thread's PAPI event set (-1: none) */
    uint32_t papi_count;
};

static CAPTURE_HOT_THREAD_LOCAL struct thread_metrics *this_thread_metrics;

#ifdef OTFX_WITH_PAPI
static pthread_once_t papi_once = PTHREAD_ONCE_INIT;
static int papi_ready; /* PAPI_OK, or why PAPI could not start */

static unsigned long papi_thread_id(void)
{
    return (unsigned long)pthread_self();
}

static void papi_start(void)
{
    const int version = PAPI_library_init(PAPI_VER_CURRENT);
    papi_ready = version == PAPI_VER_CURRENT ? PAPI_thread_init(papi_thread_id)
                 : version < 0               ? version
                                             : PAPI_EINVAL;
}

/* Adds the preset `name` to *set (created first when PAPI_NULL): PAPI_OK or PAPI's error. */
static int papi_add(int *set, const char *name)
{
    pthread_once(&papi_once, papi_start);
    if (papi_ready != PAPI_OK)
        return papi_ready;
    int error = PAPI_OK, code = 0;
    if (*set == PAPI_NULL) {
        PAPI_register_thread();
        error = PAPI_create_eventset(set);
    }
    if (error == PAPI_OK)
        error = PAPI_event_name_to_code(name, &code);
    if (error == PAPI_OK)
        error = PAPI_add_event(*set, code);
    return error;
}

static void papi_close(int *set)
{
    if (*set == PAPI_NULL)
        return;
    long long values[CAPTURE_METRICS_MAX];
    PAPI_stop(*set, values); /* not running: an error that changes nothing */
    PAPI_cleanup_eventset(*set);
    PAPI_destroy_eventset(set);
    *set = PAPI_NULL;
}
#endif

static void close_counters(struct thread_metrics *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->members[i].kind != MEMBER_RUSAGE && t->members[i].fd >= 0)
            close(t->members[i].fd);
    if (t->leader >= 0)
        close(t->leader);
    t->leader = -1;
    t->count = 0;
    t->group_count = 0;
    t->rusage = false;
#ifdef OTFX_WITH_PAPI
    papi_close(&t->papi_set);
#endif
    t->papi_count = 0;
}

static void thread_ended(void *data)
{
    struct thread_metrics *t = data;
    close_counters(t);
    free(t);
}

static void make_key(void)
{
    pthread_key_create(&thread_key, thread_ended);
}

/* A counter of this thread: a group's leader (group -1, read with its members), a member of `group`, or
 * (solo) one read alone. */
static int perf_open(const struct otfx_metric_info *metric, int group, bool solo, bool exclude_kernel)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = metric->source == OTFX_METRIC_PERF_HARDWARE ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
    attr.config = metric->config;
    attr.read_format = group < 0 && !solo ? PERF_FORMAT_GROUP : 0;
    attr.exclude_kernel = exclude_kernel;
    attr.exclude_hv = 1;
    /* this thread only, on any CPU; not its children */
    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

/* A counter as perf_open's, counting kernel time where allowed (page faults happen there), else user
 * space only. */
static int perf_open_allowed(const struct otfx_metric_info *metric, int group, bool solo)
{
    int fd = perf_open(metric, group, solo, false);
    if (fd < 0 && (errno == EACCES || errno == EPERM))
        fd = perf_open(metric, group, solo, true);
    return fd;
}

static bool machine_has_pmu(void)
{
    struct stat pmu;
    return stat("/sys/bus/event_source/devices/cpu", &pmu) == 0;
}

/* Says once per process why a metric is not counted. */
static void refuse(size_t index, const char *reason, int error)
{
    const uint64_t bit = 1ull << index;
    if (__atomic_fetch_or(&refused_said, bit, __ATOMIC_RELAXED) & bit)
        return;
    const struct otfx_metric_info *metric = otfx_metric_at(index);
    const bool no_pmu = metric->source == OTFX_METRIC_PERF_HARDWARE && !machine_has_pmu();
    fprintf(stderr, "otfx-capture: rank %d: metric '%s' is not counted: %s: %s%s\n", rank_number,
            metric->name, reason, strerror(error),
            no_pmu ? " (this machine has no hardware PMU: /sys/bus/event_source/devices has no 'cpu')" : "");
}

#ifdef OTFX_WITH_PAPI
/* Says once per process why a PAPI preset is not counted. */
static void refuse_papi(size_t index, int error)
{
    const uint64_t bit = 1ull << index;
    if (__atomic_fetch_or(&refused_said, bit, __ATOMIC_RELAXED) & bit)
        return;
    fprintf(stderr,
            "otfx-capture: rank %d: metric '%s' is not counted: PAPI: %s (papi_avail lists what this machine "
            "counts)\n",
            rank_number, otfx_metric_at(index)->name, PAPI_strerror(error));
}
#endif

/* Opens the selection's counters for this thread (what cannot be counted is left out). */
static void open_counters(struct thread_metrics *t, uint64_t mask)
{
    close_counters(t);
    for (size_t index = 0; index < otfx_metric_count() && t->count < CAPTURE_METRICS_MAX; index++) {
        if (!(mask & (1ull << index)))
            continue;
        const struct otfx_metric_info *metric = otfx_metric_at(index);
        struct member *m = &t->members[t->count];
        m->metric = (uint8_t)index;
        m->fd = -1;
        if (metric->source == OTFX_METRIC_RUSAGE) {
            m->kind = MEMBER_RUSAGE;
            t->rusage = true;
            t->count++;
            continue;
        }
        if (metric->source == OTFX_METRIC_PAPI) {
#ifdef OTFX_WITH_PAPI
            const int error = papi_add(&t->papi_set, metric->name + 5);
            if (error != PAPI_OK) {
                refuse_papi(index, error);
                continue;
            }
            m->kind = MEMBER_PAPI;
            m->slot = (uint8_t)t->papi_count++;
            t->count++;
#endif
            continue;
        }
        int fd = perf_open_allowed(metric, t->leader, false);
        if (fd >= 0 && t->leader < 0) {
            t->leader = fd;
            m->kind = MEMBER_GROUP;
            m->slot = (uint8_t)t->group_count++;
        } else if (fd >= 0) {
            m->kind = MEMBER_GROUP;
            m->slot = (uint8_t)t->group_count++;
            /* a member's fd is read through the leader's; keep it open with the group */
            m->fd = fd;
        } else if (t->leader >= 0 && errno == EINVAL) {
            /* some events cannot join a group of another kind: alone, then */
            fd = perf_open_allowed(metric, -1, true);
            if (fd < 0) {
                refuse(index, "perf_event_open", errno);
                continue;
            }
            m->kind = MEMBER_SOLO;
            m->fd = fd;
        } else {
            refuse(index, "perf_event_open", errno);
            continue;
        }
        t->count++;
    }
#ifdef OTFX_WITH_PAPI
    const int error = t->papi_count ? PAPI_start(t->papi_set) : PAPI_OK;
    if (error != PAPI_OK) { /* none of the presets is counted then */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < t->count; i++) {
            if (t->members[i].kind == MEMBER_PAPI)
                refuse_papi(t->members[i].metric, error);
            else
                t->members[kept++] = t->members[i];
        }
        t->count = kept;
        t->papi_count = 0;
        papi_close(&t->papi_set);
    }
#endif
}

static struct thread_metrics *thread_metrics(void)
{
    struct thread_metrics *t = this_thread_metrics;
    if (__builtin_expect(t != NULL, 1))
        return t;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->leader = -1;
    t->papi_set = -1; /* PAPI_NULL */
    pthread_once(&key_once, make_key);
    pthread_setspecific(thread_key, t);
    this_thread_metrics = t;
    return t;
}

static uint64_t timeval_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

static uint64_t rusage_value(const struct rusage *usage, uint64_t field)
{
    switch ((enum otfx_rusage_field)field) {
    case OTFX_RUSAGE_UTIME:
        return timeval_ns(usage->ru_utime);
    case OTFX_RUSAGE_STIME:
        return timeval_ns(usage->ru_stime);
    case OTFX_RUSAGE_MAXRSS:
        return (uint64_t)usage->ru_maxrss;
    case OTFX_RUSAGE_MINFLT:
        return (uint64_t)usage->ru_minflt;
    case OTFX_RUSAGE_MAJFLT:
        return (uint64_t)usage->ru_majflt;
    case OTFX_RUSAGE_NVCSW:
        return (uint64_t)usage->ru_nvcsw;
    case OTFX_RUSAGE_NIVCSW:
        return (uint64_t)usage->ru_nivcsw;
    case OTFX_RUSAGE_INBLOCK:
        return (uint64_t)usage->ru_inblock;
    case OTFX_RUSAGE_OUBLOCK:
        return (uint64_t)usage->ru_oublock;
    }
    return 0;
}

void capture_metrics_read(struct capture_metrics_reading *reading)
{
    reading->new_set = false;
    reading->count = 0;
    struct thread_metrics *t = thread_metrics();
    if (!t)
        return;
    const uint32_t epoch = __atomic_load_n(&selection_epoch, __ATOMIC_ACQUIRE);
    if (t->epoch != epoch || !t->any_set) {
        const uint64_t mask = __atomic_load_n(&selected_mask, __ATOMIC_RELAXED);
        open_counters(t, mask);
        t->epoch = epoch;
        /* a set that says nothing new is not written again */
        if (t->any_set || t->count) {
            t->set_id++;
            t->any_set = true;
            reading->new_set = true;
            for (uint32_t i = 0; i < t->count; i++) {
                const struct otfx_metric_info *metric = otfx_metric_at(t->members[i].metric);
                struct capture_metric_definition *d = &reading->definitions[i];
                memset(d, 0, sizeof *d);
                snprintf(d->name, sizeof d->name, "%s", metric->name);
                snprintf(d->unit, sizeof d->unit, "%s", metric->unit);
                d->value_type = CAPTURE_METRIC_UINT64;
                d->mode = metric->accumulated ? CAPTURE_METRIC_ACCUMULATED : CAPTURE_METRIC_ABSOLUTE;
            }
        }
    }
    reading->set_id = t->set_id;
    reading->count = t->count;
    if (!t->count)
        return;
    uint64_t group[1 + CAPTURE_METRICS_MAX];
    if (t->leader >= 0) {
        const ssize_t wanted = (ssize_t)((1 + t->group_count) * sizeof(uint64_t));
        if (read(t->leader, group, (size_t)wanted) != wanted)
            memset(group, 0, sizeof group);
    }
    struct rusage usage;
    if (t->rusage && getrusage(RUSAGE_THREAD, &usage) != 0)
        memset(&usage, 0, sizeof usage);
    long long papi[CAPTURE_METRICS_MAX] = {0};
#ifdef OTFX_WITH_PAPI
    if (t->papi_count && PAPI_read(t->papi_set, papi) != PAPI_OK)
        memset(papi, 0, sizeof papi);
#endif
    for (uint32_t i = 0; i < t->count; i++) {
        const struct member *m = &t->members[i];
        uint64_t value = 0;
        switch ((enum member_kind)m->kind) {
        case MEMBER_GROUP:
            value = group[1 + m->slot];
            break;
        case MEMBER_SOLO:
            if (read(m->fd, &value, sizeof value) != (ssize_t)sizeof value)
                value = 0;
            break;
        case MEMBER_RUSAGE:
            value = rusage_value(&usage, otfx_metric_at(m->metric)->config);
            break;
        case MEMBER_PAPI:
            value = (uint64_t)papi[m->slot];
            break;
        }
        reading->values[i] = value;
    }
}

void capture_metrics_select(uint64_t mask)
{
    __atomic_store_n(&selected_mask, mask, __ATOMIC_RELAXED);
    __atomic_fetch_add(&selection_epoch, 1, __ATOMIC_RELEASE);
    if (mask)
        __atomic_store_n(&capture_metrics_on, true, __ATOMIC_RELAXED);
}

uint64_t capture_metrics_selected(void)
{
    return __atomic_load_n(&selected_mask, __ATOMIC_RELAXED);
}

void capture_metrics_start(int app_rank, uint64_t mask)
{
    rank_number = app_rank;
    if (mask)
        capture_metrics_select(mask);
}

void capture_metrics_probe(uint64_t mask, struct capture_metrics_answer *answer)
{
    answer->selected = capture_metrics_selected();
    answer->counted = answer->refused = 0;
    answer->has_pmu = machine_has_pmu();
    memset(answer->refusal_errno, 0, sizeof answer->refusal_errno);
    mask |= answer->selected;
    for (size_t index = 0; index < otfx_metric_count(); index++) {
        const uint64_t bit = 1ull << index;
        if (!(mask & bit))
            continue;
        const struct otfx_metric_info *metric = otfx_metric_at(index);
        if (metric->source == OTFX_METRIC_PAPI) {
#ifdef OTFX_WITH_PAPI
            int set = PAPI_NULL;
            int error = papi_add(&set, metric->name + 5);
            if (error == PAPI_OK) { /* added is not yet counted: a machine without counters fails here */
                error = PAPI_start(set);
                long long values[1];
                if (error == PAPI_OK)
                    PAPI_stop(set, values);
            }
            papi_close(&set);
            if (error != PAPI_OK) {
                answer->refused |= bit;
                answer->refusal_errno[index] = (uint16_t)(CAPTURE_METRIC_REFUSED_BY_PAPI | (uint16_t)-error);
                continue;
            }
            answer->counted |= bit;
#endif
            continue;
        }
        if (metric->source != OTFX_METRIC_RUSAGE) {
            /* alone: a metric that cannot join a group is read alone (open_counters) */
            const int fd = perf_open_allowed(metric, -1, true);
            if (fd < 0) {
                answer->refused |= bit;
                answer->refusal_errno[index] = (uint16_t)errno;
                continue;
            }
            close(fd);
        }
        answer->counted |= bit;
    }
}

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

_Static_assert(OTFX_METRICS_AT_ONCE == CAPTURE_METRICS_MAX, "one bound for a set of metrics");

bool capture_metrics_on;
static int rank_number = -1;
static uint64_t selected_mask;   /* atomic */
static uint32_t selection_epoch; /* atomic: changes with every selection */
static uint64_t refused_said;    /* atomic: metrics whose refusal this process reported */
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

enum member_kind { MEMBER_GROUP, MEMBER_SOLO, MEMBER_RUSAGE };

struct member {
    uint8_t metric; /* index in the table */
    uint8_t kind;   /* enum member_kind */
    uint8_t slot;   /* MEMBER_GROUP: position in the group's read */
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
};

static CAPTURE_HOT_THREAD_LOCAL struct thread_metrics *this_thread_metrics;

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

/* test_helpers.c — see test_helpers.h. */
#define _POSIX_C_SOURCE 200809L

#include "test_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int append_to_log(const otfx_event *event, void *user)
{
    return event_log_append(user, event, 1) ? 0 : 1;
}

otfx_status collect_events(otfx_trace *trace, otfx_time from, otfx_time to, bool context, event_log *log)
{
    return otfx_query_events(trace, from, to, context, append_to_log, log);
}

otfx_status feed(otfx_trace *trace, random_stream *stream, size_t count, event_log *log)
{
    enum { BATCH = 4096 };
    otfx_event *batch = malloc(sizeof *batch * BATCH);
    if (!batch)
        return OTFX_ERR_NOMEM;
    otfx_status result = OTFX_OK;
    while (count > 0 && result == OTFX_OK) {
        size_t n = count < BATCH ? count : BATCH;
        random_stream_next(stream, batch, n);
        if (log && !event_log_append(log, batch, n)) {
            result = OTFX_ERR_NOMEM;
            break;
        }
        size_t appended = 0;
        otfx_status status = otfx_trace_append(trace, batch, n, &appended);
        if (status != OTFX_OK && status != OTFX_ERR_STOPPED)
            result = status;
        else if (appended != n)
            result = OTFX_ERR_INVALID;
        count -= n;
    }
    free(batch);
    return result;
}

bool events_equal(const otfx_event *a, const otfx_event *b)
{
    if (a->time != b->time || a->type != b->type)
        return false;
    switch (a->type) {
    case OTFX_EV_ENTER:
    case OTFX_EV_LEAVE:
        return a->u.region.region == b->u.region.region;
    case OTFX_EV_SEND:
    case OTFX_EV_RECV:
        return a->u.msg.comm == b->u.msg.comm && a->u.msg.peer == b->u.msg.peer &&
               a->u.msg.tag == b->u.msg.tag && a->u.msg.bytes == b->u.msg.bytes &&
               a->u.msg.seq == b->u.msg.seq;
    case OTFX_EV_ISEND:
    case OTFX_EV_IRECV:
        return a->u.msg.comm == b->u.msg.comm && a->u.msg.peer == b->u.msg.peer &&
               a->u.msg.tag == b->u.msg.tag && a->u.msg.bytes == b->u.msg.bytes &&
               a->u.msg.request == b->u.msg.request && a->u.msg.seq == b->u.msg.seq;
    case OTFX_EV_ISEND_COMPLETE:
    case OTFX_EV_IRECV_REQUEST:
    case OTFX_EV_REQUEST_CANCELLED:
    case OTFX_EV_NBC_REQUEST:
        return a->u.request.request == b->u.request.request;
    case OTFX_EV_COLL_BEGIN:
        return true;
    case OTFX_EV_COLL_END:
        return a->u.coll.comm == b->u.coll.comm && a->u.coll.op == b->u.coll.op &&
               a->u.coll.root == b->u.coll.root && a->u.coll.sent == b->u.coll.sent &&
               a->u.coll.received == b->u.coll.received;
    case OTFX_EV_NBC_COMPLETE:
        return a->u.coll.comm == b->u.coll.comm && a->u.coll.op == b->u.coll.op &&
               a->u.coll.root == b->u.coll.root && a->u.coll.sent == b->u.coll.sent &&
               a->u.coll.received == b->u.coll.received && a->u.coll.request == b->u.coll.request;
    case OTFX_EV_METRIC:
        return a->u.metric.metric == b->u.metric.metric && a->u.metric.value == b->u.metric.value;
    case OTFX_EV_PHASE:
        return a->u.phase.region == b->u.phase.region && a->u.phase.value == b->u.phase.value;
    case OTFX_EV_REDUCTION:
        return a->u.reduction.strategy == b->u.reduction.strategy &&
               a->u.reduction.begin == b->u.reduction.begin && a->u.reduction.end == b->u.reduction.end &&
               a->u.reduction.events_removed == b->u.reduction.events_removed;
    case OTFX_EV_TYPE_COUNT:
        break;
    }
    return false;
}

size_t first_nesting_error(const event_log *log, size_t context_enters)
{
    otfx_ref *stack = malloc(sizeof *stack * (OTFX_MAX_CALL_DEPTH + 1));
    if (!stack)
        return 0;
    size_t depth = 0, error = SIZE_MAX;
    otfx_time last = 0;
    for (size_t i = 0; i < log->count && error == SIZE_MAX; i++) {
        const otfx_event *event = &log->events[i];
        if (i >= context_enters) {
            if (event->time < last)
                error = i;
            last = event->time;
        } else if (event->type != OTFX_EV_ENTER) {
            error = i;
        }
        if (event->type == OTFX_EV_ENTER) {
            if (depth == OTFX_MAX_CALL_DEPTH)
                error = i;
            else
                stack[depth++] = event->u.region.region;
        } else if (event->type == OTFX_EV_LEAVE) {
            if (depth == 0 || stack[depth - 1] != event->u.region.region)
                error = i;
            else
                depth--;
        }
    }
    free(stack);
    return error;
}

size_t resident_bytes(void)
{
    FILE *statm = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (!statm)
        return 0;
    if (fscanf(statm, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(statm);
    return resident * (size_t)sysconf(_SC_PAGESIZE);
}

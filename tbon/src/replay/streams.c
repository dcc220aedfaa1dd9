/* streams.c — reading a stream's trace in slices. The replay never holds a stream's whole window: it
 * reads up to `capacity` events with otfx_analysis_query_events (which releases the trace's read lock
 * between chunks), and the next slice starts at the latest time delivered, skipping the events at that
 * time it delivered already. Only the first slice asks for the calling context; later ones would
 * repeat it. */
#include "replay_internal.h"

#include <otfx/analysis.h>

#include <stdlib.h>
#include <string.h>

typedef struct slice_reader {
    replay_stream *stream;
    otfx_time from;
    bool first;
    otfx_time resume_time;
    uint64_t skip, seen_at_resume;
    bool full;
} slice_reader;

static int take_event(const otfx_event *event, void *user)
{
    slice_reader *reader = user;
    replay_stream *stream = reader->stream;
    if (!reader->first) {
        /* A reduction record that began before the resume point was delivered at its begin already;
         * later queries report it again at their start. */
        if (event->type == OTFX_EV_REDUCTION && event->u.reduction.begin < reader->resume_time &&
            event->time <= reader->resume_time)
            return 0;
        if (event->time == reader->resume_time && reader->seen_at_resume < reader->skip) {
            reader->seen_at_resume++;
            return 0;
        }
    }
    stream->events[stream->count++] = *event;
    if (event->time > stream->resume_time) {
        stream->resume_time = event->time;
        stream->resume_skip = 1;
    } else if (event->time == stream->resume_time) {
        stream->resume_skip++;
    }
    if (stream->count == stream->capacity) {
        reader->full = true;
        return 1;
    }
    return 0;
}

bool replay_stream_fill(otfx_replay *replay, replay_stream *stream)
{
    if (stream->pos < stream->count)
        return true;
    if (stream->exhausted || replay->failed)
        return false;
    if (!stream->events) {
        /* About 16 MiB of slice buffers in all, between 1K and 16K events per stream. */
        size_t capacity =
            ((size_t)16 << 20) / sizeof(otfx_event) / (replay->stream_count ? replay->stream_count : 1);
        capacity = capacity > 16384 ? 16384 : capacity < 1024 ? 1024 : capacity;
        stream->events = malloc(capacity * sizeof *stream->events);
        if (!stream->events) {
            replay_fail(replay, "out of memory for the slices of rank %u", stream->public.rank);
            return false;
        }
        stream->capacity = capacity;
    }
    const otfx_time from = replay->config.from, to = replay->config.to;
    slice_reader reader = {.stream = stream, .from = from, .first = !stream->sliced};
    otfx_time start = from;
    if (stream->sliced) {
        /* Context ENTERs lie before `from`: a first slice that ended among them resumes at `from`. */
        if (stream->resume_time < from) {
            stream->resume_time = from;
            stream->resume_skip = 0;
        }
        start = stream->resume_time;
        reader.resume_time = stream->resume_time;
        reader.skip = stream->resume_skip;
    } else {
        stream->resume_time = 0;
        stream->resume_skip = 0;
    }
    stream->count = stream->pos = 0;
    otfx_status status =
        otfx_analysis_query_events(stream->trace, start, to, !stream->sliced, take_event, &reader);
    stream->sliced = true;
    if (status != OTFX_OK) {
        replay_fail(replay, "reading the trace of rank %u thread %u: %s (%s)", stream->public.rank,
                    stream->public.thread, otfx_strerror(status), otfx_last_error());
        return false;
    }
    if (!reader.full)
        stream->exhausted = true;
    return stream->count > 0;
}

otfx_time replay_stream_watermark(const replay_stream *stream)
{
    if (stream->done)
        return OTFX_TIME_MAX;
    otfx_time mark;
    if (stream->pos < stream->count)
        mark = stream->events[stream->pos].time;
    else if (stream->exhausted && stream->sliced && !stream->follow)
        mark = OTFX_TIME_MAX;
    else
        mark = stream->resume_time;
    /* Values not handed over yet keep the mark at their time, so that nobody gives up on them. */
    if (stream->send.active && stream->send.time < mark)
        mark = stream->send.time;
    for (size_t i = 0; i < stream->nbc_count; i++)
        if (!stream->nbc[i].published && stream->nbc[i].time < mark)
            mark = stream->nbc[i].time;
    return mark;
}

/* streams.c — reading a stream's trace in slices. The replay never holds a stream's whole window: a
 * reader (otfx_trace_reader) decodes up to `capacity` events straight into the stream's slice buffer and
 * keeps its place in the chunk it is decoding for the next slice; it holds the trace's read lock only
 * while it fills a slice, so appends go on. The first events are the calling context at the window's
 * start. */
#include "replay_internal.h"

#include <stdlib.h>
#include <string.h>

/* The latest time delivered and how many events at it, after a slice of `count` events. */
static void note_resume_point(replay_stream *stream, size_t count)
{
    if (count == 0)
        return;
    const otfx_time last = stream->events[count - 1].time;
    uint64_t at_last = 0;
    size_t i = count;
    while (i > 0 && stream->events[i - 1].time == last) {
        at_last++;
        i--;
    }
    if (i == 0 && stream->resume_time == last)
        at_last += stream->resume_skip;
    stream->resume_time = last;
    stream->resume_skip = at_last;
}

void replay_stream_close_reader(replay_stream *stream)
{
    otfx_trace_reader_close(stream->reader);
    stream->reader = NULL;
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
    otfx_status status = OTFX_OK;
    if (!stream->sliced) {
        stream->resume_time = 0;
        stream->resume_skip = 0;
        status = otfx_trace_reader_open(stream->trace, replay->config.from, replay->config.to, true,
                                        &stream->reader);
    }
    stream->sliced = true;
    size_t count = 0;
    if (status == OTFX_OK)
        status = otfx_trace_reader_next(stream->reader, stream->events, stream->capacity, &count);
    stream->count = count;
    stream->pos = 0;
    if (status != OTFX_OK) {
        replay_fail(replay, "reading the trace of rank %u thread %u: %s (%s)", stream->public.rank,
                    stream->public.thread, otfx_strerror(status), otfx_last_error());
        return false;
    }
    note_resume_point(stream, count);
    if (count < stream->capacity) {
        stream->exhausted = true;
        /* A follow's next run reads on from here: the reader keeps its place and sees what is appended
         * meanwhile. */
        if (!stream->follow)
            replay_stream_close_reader(stream);
    }
    return count > 0;
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

/* streams.c — reading a stream's trace in slices. The replay never holds a stream's whole window: a
 * reader (otfx_trace_reader) decodes up to `capacity` events straight into the stream's slice buffer and
 * keeps its place in the chunk it is decoding for the next slice; it holds the trace's read lock only
 * while it fills a slice, so appends go on. The first events are the calling context at the window's
 * start. */
/* sched_getaffinity and CPU_COUNT are GNU. */
#define _GNU_SOURCE

#include "replay_internal.h"

#include <sched.h>
#include <stdio.h>
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

bool otfx_replay_cores_spare(void)
{
    cpu_set_t cpus;
    return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

/* ---- decoding ahead ---- */

enum { AHEAD_SLICE_EVENTS = 2048 };

/* The decoder thread: fills the slices asked for, one stream at a time. A stream's reader is used only
 * here while decode_ahead is on (a reader is single-threaded). */
static void *decode_ahead_main(void *user)
{
    otfx_replay *replay = user;
    decode_ahead *ahead = &replay->ahead;
    pthread_mutex_lock(&ahead->lock);
    for (;;) {
        while (!ahead->stop && ahead->queue_count == 0)
            pthread_cond_wait(&ahead->wake, &ahead->lock);
        if (ahead->stop)
            break;
        replay_stream *stream = ahead->queue[ahead->queue_head];
        ahead->queue_head = (ahead->queue_head + 1) % ahead->queue_capacity;
        ahead->queue_count--;
        pthread_mutex_unlock(&ahead->lock);
        otfx_status status = OTFX_OK;
        size_t count = 0;
        if (!stream->reader)
            status = otfx_trace_reader_open(stream->trace, replay->config.from, replay->config.to, true,
                                            &stream->reader);
        if (status == OTFX_OK)
            status = otfx_trace_reader_next(stream->reader, stream->ahead_events, stream->capacity, &count);
        if (status != OTFX_OK)
            snprintf(stream->ahead_error, sizeof stream->ahead_error, "%s", otfx_last_error());
        else if (count < stream->capacity)
            replay_stream_close_reader(stream); /* not with follow: decode_ahead is off then */
        pthread_mutex_lock(&ahead->lock);
        stream->ahead_count = count;
        stream->ahead_status = status;
        stream->ahead_ready = true;
        pthread_cond_broadcast(&ahead->done);
    }
    pthread_mutex_unlock(&ahead->lock);
    return NULL;
}

static bool ahead_start(otfx_replay *replay)
{
    decode_ahead *ahead = &replay->ahead;
    ahead->queue = malloc(sizeof *ahead->queue * replay->stream_count);
    if (!ahead->queue)
        return false;
    ahead->queue_capacity = replay->stream_count;
    pthread_mutex_init(&ahead->lock, NULL);
    pthread_cond_init(&ahead->wake, NULL);
    pthread_cond_init(&ahead->done, NULL);
    if (pthread_create(&ahead->thread, NULL, decode_ahead_main, replay) != 0) {
        pthread_mutex_destroy(&ahead->lock);
        pthread_cond_destroy(&ahead->wake);
        pthread_cond_destroy(&ahead->done);
        free(ahead->queue);
        ahead->queue = NULL;
        return false;
    }
    ahead->started = true;
    return true;
}

void replay_ahead_stop(otfx_replay *replay)
{
    decode_ahead *ahead = &replay->ahead;
    if (!ahead->started)
        return;
    pthread_mutex_lock(&ahead->lock);
    ahead->stop = true;
    pthread_cond_broadcast(&ahead->wake);
    pthread_mutex_unlock(&ahead->lock);
    pthread_join(ahead->thread, NULL);
    pthread_mutex_destroy(&ahead->lock);
    pthread_cond_destroy(&ahead->wake);
    pthread_cond_destroy(&ahead->done);
    free(ahead->queue);
    ahead->queue = NULL;
    ahead->started = false;
}

static void ahead_request(decode_ahead *ahead, replay_stream *stream)
{
    pthread_mutex_lock(&ahead->lock);
    stream->ahead_requested = true;
    stream->ahead_ready = false;
    ahead->queue[(ahead->queue_head + ahead->queue_count) % ahead->queue_capacity] = stream;
    ahead->queue_count++;
    pthread_cond_signal(&ahead->wake);
    pthread_mutex_unlock(&ahead->lock);
}

/* The slice asked for, swapped in as the stream's buffer; the next one is asked for at once. */
static otfx_status ahead_take(otfx_replay *replay, replay_stream *stream, size_t *count)
{
    decode_ahead *ahead = &replay->ahead;
    if (!stream->ahead_requested)
        ahead_request(ahead, stream);
    pthread_mutex_lock(&ahead->lock);
    while (!stream->ahead_ready)
        pthread_cond_wait(&ahead->done, &ahead->lock);
    stream->ahead_requested = stream->ahead_ready = false;
    pthread_mutex_unlock(&ahead->lock);
    otfx_event *taken = stream->ahead_events;
    stream->ahead_events = stream->events;
    stream->events = taken;
    *count = stream->ahead_count;
    if (stream->ahead_status == OTFX_OK && *count == stream->capacity)
        ahead_request(ahead, stream);
    return stream->ahead_status;
}

bool replay_stream_fill(otfx_replay *replay, replay_stream *stream)
{
    if (stream->pos < stream->count)
        return true;
    if (stream->exhausted || replay->failed)
        return false;
    /* The decoder's queue has a place for each stream there was when it started; one added later reads
     * its own slices. */
    const bool ahead = replay->config.decode_ahead && !stream->follow &&
                       (!replay->ahead.started || stream->public.index < replay->ahead.queue_capacity);
    if (!stream->events) {
        /* About 16 MiB of slice buffers in all, between 1K and 16K events per stream. Decoding ahead,
         * two slices of 2K events (128 KiB) per stream: the stream reads a slice soon after the decoder
         * wrote it, while it is still in the caches (16 x 2 x 8K-event slices replayed about a third
         * slower on the thread that answers; 1K-event slices hand over too often). */
        size_t capacity =
            ((size_t)16 << 20) / sizeof(otfx_event) / (replay->stream_count ? replay->stream_count : 1);
        capacity = capacity > 16384 ? 16384 : capacity < 1024 ? 1024 : capacity;
        if (ahead)
            capacity = AHEAD_SLICE_EVENTS;
        stream->events = malloc(capacity * sizeof *stream->events);
        if (ahead && stream->events && !(stream->ahead_events = malloc(capacity * sizeof *stream->events))) {
            free(stream->events);
            stream->events = NULL;
        }
        if (!stream->events) {
            replay_fail(replay, "out of memory for the slices of rank %u", stream->public.rank);
            return false;
        }
        stream->capacity = capacity;
    }
    if (ahead && !replay->ahead.started && !ahead_start(replay)) {
        replay_fail(replay, "replay: cannot start the thread that decodes ahead");
        return false;
    }
    otfx_status status = OTFX_OK;
    if (!stream->sliced) {
        stream->resume_time = 0;
        stream->resume_skip = 0;
        if (!ahead)
            status = otfx_trace_reader_open(stream->trace, replay->config.from, replay->config.to, true,
                                            &stream->reader);
    }
    stream->sliced = true;
    size_t count = 0;
    const char *why = NULL;
    if (ahead) {
        status = ahead_take(replay, stream, &count);
        why = stream->ahead_error;
    } else if (status == OTFX_OK) {
        status = otfx_trace_reader_next(stream->reader, stream->events, stream->capacity, &count);
    }
    stream->count = count;
    stream->pos = 0;
    if (status != OTFX_OK) {
        replay_fail(replay, "reading the trace of rank %u thread %u: %s (%s)", stream->public.rank,
                    stream->public.thread, otfx_strerror(status), why ? why : otfx_last_error());
        return false;
    }
    note_resume_point(stream, count);
    if (count < stream->capacity) {
        stream->exhausted = true;
        /* A follow's next run reads on from here: the reader keeps its place and sees what is appended
         * meanwhile. (Decoding ahead, the decoder closed it.) */
        if (!stream->follow && !ahead)
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

/*
 * steer_driver.c — a test place for the application side of steering (capture/src/control.c):
 *
 *   OTFX_PLACES=1 mpiexec -n N steer_app : -n 1 steer_driver steer|start_paused
 *
 * It does what an event place does for its ranks (answers their clock syncs, receives their batches and
 * decodes them with the place's own decoder, place_ingest_records) and steers them with the place's
 * rank_control.c, through PMPI only (it never calls MPI_Init: libotfx-capture, linked for the function
 * table, stays in pass-through). It notes the times (its CLOCK_MONOTONIC, the global time base; one
 * node, so the ranks' clock offsets are 0) at which each command was answered by all ranks, then checks
 * the records against them:
 *   steer         recording off/on (no ENTER inside), application pause/resume (no record inside, the
 *                 pause answered), point-to-point disabled (no p2p call inside, other calls and user
 *                 regions still there), RECORD_UNTIL (ENTERs inside the window, again with a longer
 *                 one if a rank got no core in it; none after its end, and the ranks report recording
 *                 off by themselves), a malformed control message (ignored: the next
 *                 command is still answered), FLUSH (every thread sends the records it wrote before
 *                 it in batches flagged CAPTURE_BATCH_FLUSHED, not in a full or the goodbye batch;
 *                 with two threads, some thread other than the answering one flushes before its batch
 *                 is full), no batch rejected after the pauses;
 *   start_paused  OTFX_START_PAUSED=1: nothing recorded before APP_RESUME but MPI_Init's ENTER (its
 *                 LEAVE after the resume).
 * Every check waits for a state or a count (with a ceiling of 60 s), never for a duration: the windows of
 * pump_for only give the application time to run, with both cores busy it may take longer.
 * Prints "steer-driver: OK" or "steer-driver: check failed: ..." (exit 1).
 */
#define _POSIX_C_SOURCE 200809L
#include "capture_functions.h"
#include "event_place_internal.h"
#include <otfx/capture_wire.h>

#include <mpi.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STOP_TAG    77
#define MAX_THREADS 4
#define CEILING_NS  (60 * 1000000000ull)

struct record_time {
    uint64_t time;
    uint16_t kind, function_id;
    int32_t tag; /* point-to-point records */
    uint16_t request_kind;
    uint64_t request;
};

struct rank_log {
    struct record_time *records;
    size_t count, capacity;
    struct place_stream *streams[MAX_THREADS];
    uint64_t newest[MAX_THREADS]; /* the latest record received from each thread */
    /* FLUSH while recording: the thread has sent every record it wrote before the FLUSH: a batch flagged
     * FLUSHED came after it was sent, or a record written after the FLUSH was sent (a thread's batches
     * arrive in order); records written before it that arrived after its answer in a batch not flagged
     * FLUSHED (in the goodbye batch). */
    bool past_flush[MAX_THREADS];
    size_t late[MAX_THREADS], late_in_goodbye[MAX_THREADS];
};

static struct event_place place;
static struct rank_log *logs;
/* FLUSH while recording: when it was sent, and whether every rank has answered it. */
static uint64_t flush_sent_at = UINT64_MAX;
static bool flush_answered;
/* Any FLUSH: the latest one's sequence, how many were sent; batches flagged FLUSHED that came after
 * their rank's answer to it and were not full: a thread other than the answering one (whose batch comes
 * before the answer) flushed at a check point, not only once its batch filled (a thread that got no core
 * until its batch filled may legitimately do that: so this is asserted over all FLUSHes and threads, not
 * per thread). A batch is taken as full within the largest record a thread writes here. */
static uint64_t flush_sequence;
static int flushes;
static size_t flushed_before_full;
#define FULL_BATCH_SLACK 8192
static int served, goodbyes, failures;
static uint64_t rejected;

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

__attribute__((format(printf, 1, 2))) static void check_failed(const char *format, ...)
{
    char text[512];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(text, sizeof(text), format, arguments);
    va_end(arguments);
    printf("steer-driver: check failed: %s\n", text);
    fflush(stdout);
    failures++;
}

static void setup_place(MPI_Comm tool_comm, int world_rank)
{
    memset(&place, 0, sizeof(place));
    place.setup.tool_comm = tool_comm;
    place.setup.place_rank = world_rank;
    place.setup.first_served = 0;
    place.setup.served_count = served;
    place.setup.functions =
        (otfx_place_functions){capture_function_names, capture_function_classes, CAPTURE_FUNCTION_COUNT};
    place.defs = otfx_defs_create();
    place.event_capacity = 2 * (CAPTURE_BATCH_BYTES / sizeof(struct capture_record_header)) + 2;
    place.events = malloc(place.event_capacity * sizeof(otfx_event));
    place.batch = malloc(CAPTURE_BATCH_BYTES);
    place.ranks = calloc((size_t)served, sizeof(*place.ranks));
    logs = calloc((size_t)served, sizeof(*logs));
    place.trace_config = otfx_trace_config_default((size_t)16 << 20);
    if (!place.defs || !place.events || !place.batch || !place.ranks || !logs ||
        !place_describe_functions(&place) ||
        otfx_defs_region(place.defs, "MPI_Pcontrol level", OTFX_ROLE_PHASE, &place.phase_region) != OTFX_OK) {
        printf("steer-driver: cannot set up the place\n");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < served; r++)
        place.ranks[r].rank = r;
    place_control_init(&place);
}

static struct place_stream *stream_of(int rank, uint32_t thread)
{
    if (thread >= MAX_THREADS)
        return NULL;
    struct place_stream **slot = &logs[rank].streams[thread];
    if (!*slot) {
        struct place_stream *stream = calloc(1, sizeof(*stream));
        otfx_ref location;
        if (!stream || otfx_defs_location(place.defs, (uint32_t)rank, thread, &location) != OTFX_OK ||
            otfx_trace_create(&place.trace_config, place.defs, location, &stream->trace) != OTFX_OK)
            return NULL;
        stream->thread = thread;
        *slot = stream;
    }
    return *slot;
}

/* The rank's records as (time on the place's clock, kind, function), as batch_decoder.c converts. */
static uint64_t place_time(const struct served_rank *rank, uint64_t ticks)
{
    if (!rank->clock_tsc)
        return ticks + (uint64_t)rank->offset_ns;
    const double since = ((double)ticks - (double)rank->ref_ticks) * rank->ns_per_tick;
    return (uint64_t)((double)rank->ref_ns + since + (double)rank->offset_ns);
}

/* An event of the thread's time order, written when its timestamp was taken (a SEND carries its call's
 * ENTER time but is written when the call returns). */
static bool written_at_its_time(uint16_t kind)
{
    return capture_record_kind(kind).time_ordered && kind != CAPTURE_RECORD_SEND;
}

/* Returns the time of the batch's latest record (0: none). */
static uint64_t log_records(int r, const struct capture_batch_header *batch, const unsigned char *records,
                            size_t bytes)
{
    struct rank_log *log = &logs[r];
    uint64_t newest = 0;
    for (size_t offset = 0; offset + sizeof(struct capture_record_header) <= bytes;) {
        struct capture_record_header header;
        memcpy(&header, records + offset, sizeof(header));
        if (header.size < sizeof(header))
            break;
        offset += header.size;
        if (header.kind == CAPTURE_RECORD_OBJECT || header.kind == CAPTURE_RECORD_NAME)
            continue;
        if (log->count == log->capacity) {
            log->capacity = log->capacity ? 2 * log->capacity : 4096;
            log->records = realloc(log->records, log->capacity * sizeof(*log->records));
            if (!log->records) {
                printf("steer-driver: out of memory\n");
                PMPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        int32_t tag = -1;
        uint16_t request_kind = 0;
        uint64_t request = 0;
        if (header.kind >= CAPTURE_RECORD_SEND && header.kind <= CAPTURE_RECORD_REQUEST_DONE &&
            header.size >= sizeof(struct capture_p2p_record)) {
            struct capture_p2p_record p2p;
            memcpy(&p2p, records + offset - header.size, sizeof(p2p));
            tag = p2p.tag;
            request_kind = p2p.request_kind;
            request = p2p.request;
        }
        log->records[log->count++] = (struct record_time){place_time(&place.ranks[r], header.timestamp),
                                                          header.kind,
                                                          header.function_id,
                                                          tag,
                                                          request_kind,
                                                          request};
        const uint64_t time = log->records[log->count - 1].time;
        if (batch->thread < MAX_THREADS && written_at_its_time(header.kind)) {
            if (time >= flush_sent_at)
                log->past_flush[batch->thread] = true;
            else if (flush_answered && !(batch->flags & CAPTURE_BATCH_FLUSHED)) {
                log->late[batch->thread]++;
                log->late_in_goodbye[batch->thread] += (batch->flags & CAPTURE_BATCH_GOODBYE) != 0;
            }
        }
        if (header.kind != CAPTURE_RECORD_CLOCK && log->records[log->count - 1].time > newest)
            newest = log->records[log->count - 1].time;
    }
    return newest;
}

static void receive_batch(int source, int count)
{
    PMPI_Recv(place.batch, CAPTURE_BATCH_BYTES, MPI_BYTE, source, CAPTURE_BATCH_TAG, place.setup.tool_comm,
              MPI_STATUS_IGNORE);
    struct capture_batch_header header;
    if (source < 0 || source >= served || count < (int)sizeof(header)) {
        check_failed("unexpected batch of %d bytes from world rank %d", count, source);
        return;
    }
    memcpy(&header, place.batch, sizeof(header));
    struct served_rank *rank = &place.ranks[source];
    if (!rank->clock_known) {
        rank->clock_known = true;
        rank->clock_tsc = (header.flags & CAPTURE_BATCH_TSC) != 0;
        rank->ns_per_tick = header.ns_per_tick > 0 ? header.ns_per_tick : 1.0;
        rank->ref_ticks = header.ref_ticks;
        rank->ref_ns = header.ref_ns;
        rank->offset_ns = header.offset_ns;
    }
    struct place_stream *stream = stream_of(source, header.thread);
    uint64_t records = 0;
    if (!stream || !place_ingest_records(&place, rank, stream, place.batch + sizeof(header),
                                         (size_t)header.record_bytes, &records))
        rejected++;
    const uint64_t newest =
        log_records(source, &header, place.batch + sizeof(header), (size_t)header.record_bytes);
    if (header.thread < MAX_THREADS && newest > logs[source].newest[header.thread])
        logs[source].newest[header.thread] = newest;
    /* Its flush (the answering thread's comes before the answer): it may hold only records written
     * before the FLUSH (a rank waiting in a collective). A thread flushes once per FLUSH it notices: one
     * from the previous FLUSH (while recording was off) arrives by now unless the thread slept through
     * the whole time in between. */
    if (header.thread < MAX_THREADS && flush_sent_at != UINT64_MAX && (header.flags & CAPTURE_BATCH_FLUSHED))
        logs[source].past_flush[header.thread] = true;
    if ((header.flags & CAPTURE_BATCH_FLUSHED) && flush_sequence &&
        rank->control.answered >= flush_sequence &&
        header.record_bytes + sizeof(header) + FULL_BATCH_SLACK <= CAPTURE_BATCH_BYTES)
        flushed_before_full++;
    if ((header.flags & CAPTURE_BATCH_GOODBYE) && !rank->said_goodbye) {
        rank->said_goodbye = true;
        goodbyes++;
    }
}

/* Handles whatever arrived on the tool communicator; false when nothing did. */
static bool pump_once(void)
{
    int flag = 0;
    MPI_Status status;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, place.setup.tool_comm, &flag, &status);
    if (!flag)
        return false;
    int count = 0;
    PMPI_Get_count(&status, MPI_BYTE, &count);
    if (status.MPI_TAG == CAPTURE_SYNC_TAG) {
        char name[MPI_MAX_PROCESSOR_NAME + 2] = {0}, own[MPI_MAX_PROCESSOR_NAME + 1] = {0};
        int length = 0;
        PMPI_Recv(name, MPI_MAX_PROCESSOR_NAME + 1, MPI_CHAR, status.MPI_SOURCE, CAPTURE_SYNC_TAG,
                  place.setup.tool_comm, MPI_STATUS_IGNORE);
        PMPI_Get_processor_name(own, &length);
        const uint64_t answer[2] = {now_ns(), strcmp(name, own) == 0};
        PMPI_Send(answer, 2, MPI_UINT64_T, status.MPI_SOURCE, CAPTURE_SYNC_TAG, place.setup.tool_comm);
    } else if (status.MPI_TAG == CAPTURE_CONTROL_TAG) {
        unsigned char answer[256];
        PMPI_Recv(answer, (int)sizeof(answer), MPI_BYTE, status.MPI_SOURCE, CAPTURE_CONTROL_TAG,
                  place.setup.tool_comm, MPI_STATUS_IGNORE);
        place_control_answer(&place, status.MPI_SOURCE, answer, (size_t)count);
    } else if (status.MPI_TAG == CAPTURE_BATCH_TAG) {
        receive_batch(status.MPI_SOURCE, count);
    } else {
        check_failed("message with tag %d", status.MPI_TAG);
        PMPI_Recv(place.batch, CAPTURE_BATCH_BYTES, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
                  place.setup.tool_comm, MPI_STATUS_IGNORE);
    }
    return true;
}

static void pump_for(uint64_t ns)
{
    const uint64_t end = now_ns() + ns;
    const struct timespec pause = {0, 50 * 1000};
    while (now_ns() < end)
        if (!pump_once())
            nanosleep(&pause, NULL);
}

/* Sends a command and handles messages until every rank answered it; returns when that happened (the
 * place's clock). */
static uint64_t command(enum capture_control_command what, uint64_t argument, const char *name)
{
    const uint64_t sequence = place_control_send(&place, what, argument);
    if (what == CAPTURE_CONTROL_FLUSH) {
        flush_sequence = sequence;
        flushes++;
    }
    const uint64_t give_up = now_ns() + 20 * 1000000000ull;
    const struct timespec pause = {0, 50 * 1000};
    while (sequence && !place_control_done(&place, sequence)) {
        if (now_ns() > give_up) {
            check_failed("%s not answered by every rank within 20 s", name);
            return now_ns();
        }
        if (!pump_once())
            nanosleep(&pause, NULL);
    }
    return now_ns();
}

static bool is_enter(uint16_t kind)
{
    return kind == CAPTURE_RECORD_ENTER || kind == CAPTURE_RECORD_USER_ENTER ||
           kind == CAPTURE_RECORD_REGION_BEGIN;
}

static bool is_p2p(uint16_t function_id)
{
    const char *cls = capture_function_classes[function_id];
    return strncmp(cls, "p2p", 3) == 0 || strcmp(cls, "probe") == 0;
}

enum selection { ENTERS, ALL_EVENTS, P2P_ENTERS, OTHER_MPI_ENTERS, USER_ENTERS };
static const char *const selection_names[] = {"enter", "event", "point-to-point enter", "other MPI enter",
                                              "user region"};

static size_t count_between(int r, uint64_t from, uint64_t to, enum selection which)
{
    size_t n = 0;
    for (size_t i = 0; i < logs[r].count; i++) {
        const struct record_time *record = &logs[r].records[i];
        if (record->time <= from || record->time >= to || record->kind == CAPTURE_RECORD_RECORDING)
            continue;
        switch (which) {
        case ENTERS:
            n += is_enter(record->kind);
            break;
        case ALL_EVENTS:
            n++;
            break;
        case P2P_ENTERS:
            n += record->kind == CAPTURE_RECORD_ENTER && is_p2p(record->function_id);
            break;
        case OTHER_MPI_ENTERS:
            n += record->kind == CAPTURE_RECORD_ENTER && !is_p2p(record->function_id);
            break;
        case USER_ENTERS:
            n += record->kind == CAPTURE_RECORD_REGION_BEGIN;
            break;
        }
    }
    return n;
}

static void check_states(const char *after, bool recording, bool paused)
{
    for (int r = 0; r < served; r++) {
        const struct rank_control_state *control = &place.ranks[r].control;
        if (control->recording != recording || control->paused != paused)
            check_failed("after %s rank %d reports recording=%d paused=%d", after, r, control->recording,
                         control->paused);
    }
}

/* Handles messages until every rank has recorded, after `since`, a record of the selection (it arrives
 * with the rank's next batch): the window before the next command holds some. */
static void wait_for_records(uint64_t since, enum selection which, const char *after)
{
    const uint64_t give_up = now_ns() + CEILING_NS;
    const struct timespec pause = {0, 100 * 1000};
    for (int r = 0; r < served; r++)
        while (!count_between(r, since, UINT64_MAX, which)) {
            if (now_ns() > give_up) {
                check_failed("after %s rank %d recorded no %s within 60 s", after, r, selection_names[which]);
                return;
            }
            while (pump_once()) /* the counts are read between bursts, not per message */
                ;
            nanosleep(&pause, NULL);
        }
}

/* Handles messages until every rank reports recording off by itself (RECORD_UNTIL's window ended). */
static void wait_for_recording_off(const char *after)
{
    const uint64_t give_up = now_ns() + CEILING_NS;
    const struct timespec pause = {0, 100 * 1000};
    for (int r = 0; r < served; r++)
        while (place.ranks[r].control.recording) {
            if (now_ns() > give_up) {
                check_failed("after %s rank %d still reports recording on after 60 s", after, r);
                return;
            }
            if (!pump_once())
                nanosleep(&pause, NULL);
        }
}

/* FLUSH while recording, answered: handles messages until every thread that has sent records has sent
 * all it wrote before the FLUSH (rank_log.past_flush). Returns when (the place's clock). */
static uint64_t wait_past_flush(void)
{
    const uint64_t give_up = now_ns() + CEILING_NS;
    const struct timespec pause = {0, 100 * 1000};
    for (int r = 0; r < served; r++)
        for (uint32_t t = 0; t < MAX_THREADS; t++)
            while (logs[r].streams[t] && !logs[r].past_flush[t]) {
                if (now_ns() > give_up) {
                    check_failed("rank %d thread %u: nothing written after the FLUSH arrived within 60 s", r,
                                 t);
                    return now_ns();
                }
                if (!pump_once())
                    nanosleep(&pause, NULL);
            }
    return now_ns();
}

static void stop_application(void)
{
    const int stop = 1;
    for (int r = 0; r < served; r++)
        PMPI_Send(&stop, 1, MPI_INT, r, STOP_TAG, MPI_COMM_WORLD);
    const struct timespec pause = {0, 100 * 1000};
    while (goodbyes < served)
        if (!pump_once())
            nanosleep(&pause, NULL);
}

static int compare_requests(const void *a, const void *b)
{
    const uint64_t x = ((const struct record_time *)a)->request, y = ((const struct record_time *)b)->request;
    return (x > y) - (x < y);
}

static void steer(void)
{
    const uint64_t ms = 1000000;
    pump_for(100 * ms);
    /* Recording off and on. */
    const uint64_t off = command(CAPTURE_CONTROL_RECORD_OFF, 0, "RECORD_OFF");
    check_states("RECORD_OFF", false, false);
    pump_for(150 * ms);
    const uint64_t on_sent = now_ns();
    command(CAPTURE_CONTROL_RECORD_ON, 0, "RECORD_ON");
    check_states("RECORD_ON", true, false);
    pump_for(100 * ms);
    wait_for_records(on_sent, ENTERS, "RECORD_ON");
    /* Application paused and resumed. */
    const uint64_t paused = command(CAPTURE_CONTROL_APP_PAUSE, 0, "APP_PAUSE");
    check_states("APP_PAUSE", true, true);
    pump_for(150 * ms);
    const uint64_t resume_sent = now_ns();
    command(CAPTURE_CONTROL_APP_RESUME, 0, "APP_RESUME");
    check_states("APP_RESUME", true, false);
    pump_for(100 * ms);
    wait_for_records(resume_sent, ENTERS, "APP_RESUME");
    /* Point-to-point disabled. */
    const uint64_t disabled =
        command(CAPTURE_CONTROL_SET_CLASSES, CAPTURE_CLASS_ALL & ~CAPTURE_CLASS_P2P, "SET_CLASSES");
    for (int r = 0; r < served; r++)
        if (place.ranks[r].control.classes != (CAPTURE_CLASS_ALL & ~CAPTURE_CLASS_P2P))
            check_failed("rank %d reports classes %#x", r, place.ranks[r].control.classes);
    pump_for(150 * ms);
    wait_for_records(disabled, OTHER_MPI_ENTERS, "SET_CLASSES without p2p");
    wait_for_records(disabled, USER_ENTERS, "SET_CLASSES without p2p");
    const uint64_t enable_sent = now_ns();
    command(CAPTURE_CONTROL_SET_CLASSES, CAPTURE_CLASS_ALL, "SET_CLASSES");
    pump_for(100 * ms);
    /* A window of 100 ms from now, ended by the ranks themselves. A rank that got no core inside it
     * recorded nothing there, which says nothing about the window: then again with a longer one (the
     * FLUSH brings the answering threads' records in before its answer; a rank whose window records are
     * still on their way costs one needless retry). */
    uint64_t window_length = 100 * ms, window_end = 0, window_acked = 0;
    for (;;) {
        window_end = now_ns() + window_length;
        window_acked = command(CAPTURE_CONTROL_RECORD_UNTIL, window_end, "RECORD_UNTIL");
        pump_for(250 * ms);
        wait_for_recording_off("the window's end");
        check_states("the window's end (the ranks' notice)", false, false);
        command(CAPTURE_CONTROL_FLUSH, 0, "FLUSH");
        check_states("the window's end", false, false);
        bool every_rank_inside = true;
        for (int r = 0; r < served; r++)
            every_rank_inside &= count_between(r, window_acked, window_end, ENTERS) > 0;
        if (every_rank_inside || window_length >= 5000 * ms)
            break; /* the checks below judge the last window */
        window_length *= 4;
        printf("steer-driver: a rank recorded nothing inside the window yet: again with %.0f ms\n",
               (double)window_length / 1e6);
        command(CAPTURE_CONTROL_RECORD_ON, 0, "RECORD_ON before a longer window");
        check_states("RECORD_ON before a longer window", true, false);
    }
    /* A malformed message, then a command that must still be carried out. */
    const char garbage[5] = "oops";
    for (int r = 0; r < served; r++)
        PMPI_Send(garbage, (int)sizeof(garbage), MPI_BYTE, r, CAPTURE_CONTROL_TAG, place.setup.tool_comm);
    const uint64_t on_again_sent = now_ns();
    const uint64_t on_again = command(CAPTURE_CONTROL_RECORD_ON, 0, "RECORD_ON after a malformed message");
    check_states("RECORD_ON after a malformed message", true, false);
    pump_for(100 * ms);
    wait_for_records(on_again, ENTERS, "RECORD_ON after a malformed message");
    /* FLUSH while recording: every thread that records sends what it holds, not only the one that
     * answered (steer_app's helper thread fills a batch in about half a second, and would otherwise hold
     * its records until then or until MPI_Finalize): every record written before the FLUSH that arrives
     * after its answer comes in a batch flagged FLUSHED. How soon after the answer they all arrived is a
     * figure, not a check. (Not "each thread's newest record is recent": a rank of `coupled` may wait in
     * a collective for a slower one for a while.) */
    const uint64_t flush_sent = now_ns();
    flush_sent_at = flush_sent;
    const uint64_t flush_done = command(CAPTURE_CONTROL_FLUSH, 0, "FLUSH while recording");
    flush_answered = true;
    const uint64_t all_past = wait_past_flush();
    printf("steer-driver: every thread's records written before the FLUSH arrived %.1f ms after its answer\n",
           ((double)all_past - (double)flush_done) / 1e6);
    for (int r = 0; r < served; r++)
        for (uint32_t t = 0; t < MAX_THREADS; t++)
            if (logs[r].newest[t])
                printf("steer-driver: rank %d thread %u newest record %.1f ms after the FLUSH\n", r, t,
                       ((double)logs[r].newest[t] - (double)flush_sent) / 1e6);
    stop_application();
    for (int r = 0; r < served; r++)
        for (uint32_t t = 0; t < MAX_THREADS; t++)
            if (logs[r].late[t])
                check_failed(
                    "rank %d thread %u: %zu records written before the FLUSH arrived after its answer "
                    "in batches not flagged FLUSHED (%zu in the goodbye batch): the flush did not "
                    "reach the thread",
                    r, t, logs[r].late[t], logs[r].late_in_goodbye[t]);
    bool threads = false;
    for (int r = 0; r < served; r++)
        for (uint32_t t = 1; t < MAX_THREADS; t++)
            threads |= logs[r].streams[t] != NULL;
    printf("steer-driver: %zu batches flushed before they were full after their rank's answer to one of %d "
           "FLUSHes\n",
           flushed_before_full, flushes);
    if (threads && !flushed_before_full)
        check_failed("after %d FLUSHes no thread other than the answering one flushed before its batch was "
                     "full",
                     flushes);

    for (int r = 0; r < served; r++) {
        const size_t before_off = count_between(r, 0, off, ENTERS);
        const size_t while_off = count_between(r, off, on_sent, ENTERS);
        const size_t after_on = count_between(r, on_sent, paused, ENTERS);
        const size_t while_paused = count_between(r, paused, resume_sent, ALL_EVENTS);
        const size_t after_resume = count_between(r, resume_sent, disabled, ENTERS);
        const size_t p2p_disabled = count_between(r, disabled, enable_sent, P2P_ENTERS);
        const size_t other_disabled = count_between(r, disabled, enable_sent, OTHER_MPI_ENTERS);
        const size_t user_disabled = count_between(r, disabled, enable_sent, USER_ENTERS);
        const size_t in_window = count_between(r, window_acked, window_end, ENTERS);
        const size_t after_window = count_between(r, window_end, on_again_sent, ENTERS);
        const size_t after_malformed = count_between(r, on_again, UINT64_MAX, ENTERS);
        printf("steer-driver: rank %d before_off=%zu while_off=%zu after_on=%zu while_paused=%zu "
               "after_resume=%zu p2p_disabled=%zu other_disabled=%zu user_disabled=%zu in_window=%zu "
               "after_window=%zu after_malformed=%zu\n",
               r, before_off, while_off, after_on, while_paused, after_resume, p2p_disabled, other_disabled,
               user_disabled, in_window, after_window, after_malformed);
        if (!before_off || while_off || !after_on)
            check_failed("rank %d: recording off/on", r);
        if (while_paused || !after_resume)
            check_failed("rank %d: application pause", r);
        if (p2p_disabled || !other_disabled || !user_disabled)
            check_failed("rank %d: classes", r);
        if (!in_window || after_window)
            check_failed("rank %d: window", r);
        if (!after_malformed)
            check_failed("rank %d: nothing recorded after the malformed message", r);
        /* Requests made or completed while unrecorded must not lend their entries to others with the same
         * handle: every receive completion names its own request (the app's tag changes every
         * iteration), and a request id names one request only. A receive posted while unrecorded may
         * complete recorded: its post is then not in the trace. */
        size_t completions = 0, posts = 0;
        struct record_time *posted = malloc((logs[r].count + 1) * sizeof(*posted));
        for (size_t i = 0; posted && i < logs[r].count; i++)
            if (logs[r].records[i].kind == CAPTURE_RECORD_RECV_POSTED)
                posted[posts++] = logs[r].records[i];
        if (posts > 1)
            qsort(posted, posts, sizeof(*posted), compare_requests);
        for (size_t i = 1; i < posts; i++)
            if (posted[i].request == posted[i - 1].request) {
                check_failed("rank %d: receive request id %llu posted twice", r,
                             (unsigned long long)posted[i].request);
                break;
            }
        for (size_t i = 0; posted && i < logs[r].count; i++) {
            const struct record_time *record = &logs[r].records[i];
            if (record->kind != CAPTURE_RECORD_REQUEST_DONE || record->request_kind != CAPTURE_REQUEST_RECV)
                continue;
            completions++;
            const struct record_time *post =
                posts ? bsearch(record, posted, posts, sizeof(*posted), compare_requests) : NULL;
            if (post && post->tag != record->tag) {
                check_failed("rank %d: a receive completion with tag %d for request %llu, posted with tag %d",
                             r, record->tag, (unsigned long long)record->request, post->tag);
                break;
            }
        }
        free(posted);
        if (!completions)
            check_failed("rank %d: no request completions recorded", r);
    }
}

static void start_paused(void)
{
    const uint64_t ms = 1000000;
    check_states("start", true, true);
    pump_for(300 * ms);
    const uint64_t resume_sent = now_ns();
    command(CAPTURE_CONTROL_APP_RESUME, 0, "APP_RESUME");
    check_states("APP_RESUME", true, false);
    pump_for(100 * ms);
    stop_application();
    for (int r = 0; r < served; r++) {
        size_t before = 0, init_leave_after = 0;
        for (size_t i = 0; i < logs[r].count; i++) {
            const struct record_time *record = &logs[r].records[i];
            if (record->time < resume_sent && is_enter(record->kind) &&
                record->function_id != CAPTURE_FN_MPI_Init)
                before++;
            if (record->kind == CAPTURE_RECORD_LEAVE && record->function_id == CAPTURE_FN_MPI_Init &&
                record->time >= resume_sent)
                init_leave_after++;
        }
        printf("steer-driver: rank %d entered_before_resume=%zu init_left_after_resume=%zu\n", r, before,
               init_leave_after);
        if (before || init_leave_after != 1)
            check_failed("rank %d did not wait in MPI_Init for APP_RESUME", r);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "steer";
    int provided = 0, world_rank = 0, world_size = 0;
    PMPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    served = world_size - 1;
    /* The application ranks' world split (capture/src/manual_wrappers.c), from the place's side. */
    MPI_Comm places, tool;
    PMPI_Comm_split(MPI_COMM_WORLD, 1, world_rank, &places);
    PMPI_Comm_dup(MPI_COMM_WORLD, &tool);
    PMPI_Comm_set_errhandler(tool, MPI_ERRORS_RETURN);
    setup_place(tool, world_rank);
    if (strcmp(mode, "start_paused") == 0)
        start_paused();
    else
        steer();
    place_control_finish(&place);
    uint64_t dropped_leaves = 0;
    for (int r = 0; r < served; r++)
        for (int t = 0; t < MAX_THREADS; t++)
            if (logs[r].streams[t])
                dropped_leaves += logs[r].streams[t]->dropped_leaves;
    printf("steer-driver: batches rejected=%llu leaves dropped after resume=%llu\n",
           (unsigned long long)rejected, (unsigned long long)dropped_leaves);
    if (rejected)
        check_failed("%llu batches rejected", (unsigned long long)rejected);
    if (!failures)
        printf("steer-driver: OK\n");
    fflush(stdout);
    PMPI_Comm_free(&places);
    PMPI_Comm_free(&tool);
    PMPI_Finalize();
    return failures ? 1 : 0;
}

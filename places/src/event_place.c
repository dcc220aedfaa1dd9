/*
 * event_place.c — the event place's receive loop and its traces (see otfx/place.h); how ranks that
 * died are noticed is in rank_deaths.c, the end-of-run report in place_report.c.
 *
 * The place's main loop (place_loop.c) probes the tool communicator and hands every message here:
 * batches are checked and ingested on the MPI thread; queries run on a worker thread (otfx traces take
 * a write lock per append and a read lock per query, so a slow query delays one append at most, never
 * the receive queue).
 */
/* clock_gettime(CLOCK_MONOTONIC) for the ranks' clock offsets is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "event_place_internal.h"
#include "place_triggers.h"

#include <otfx/settings.h>
#include <otfx/support/growth.h>
#include <otfx/testpoint.h>

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Threads per rank the place accepts: a larger index is a corrupt header, not a real program. */
#define MAX_THREADS_PER_RANK 4096u
/* Most events one batch can produce: two per record, records at least a header long. */
#define EVENTS_PER_BATCH (2 * (CAPTURE_BATCH_BYTES / sizeof(struct capture_record_header)) + 2)

static void destroy_place(struct event_place *place)
{
    if (place->keep_traces)
        return; /* a module's thread still reads them (place_loop.c): the process ends next */
    for (int r = 0; place->ranks && r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        for (uint32_t t = 0; t < rank->stream_capacity; t++) {
            if (rank->streams[t]) {
                otfx_trace_destroy(rank->streams[t]->trace);
                for (uint32_t n = 0; n < rank->streams[t]->name_capacity; n++)
                    free(rank->streams[t]->names[n]);
                free(rank->streams[t]->names);
                place_triggers_free_stream(rank->streams[t]);
                free(rank->streams[t]);
            }
        }
        free(rank->streams);
        free(rank->comms);
        place_symbols_destroy(rank->symbols);
        free(rank->clock_segments);
        free(rank->throttled);
        free(rank->cost_changes);
    }
    free(place->ranks);
    free(place->functions);
    free(place->batch);
    free(place->events);
    free(place->new_comm_ids);
    place_triggers_free(place);
    if (place->defs)
        otfx_defs_destroy(place->defs);
}

static bool create_place(struct event_place *place, const otfx_event_place_setup *setup)
{
    memset(place, 0, sizeof(*place));
    place->setup = *setup;
    place->defs = otfx_defs_create();
    place->ranks = calloc((size_t)(setup->served_count > 0 ? setup->served_count : 1), sizeof(*place->ranks));
    place->batch = malloc(CAPTURE_BATCH_BYTES);
    place->event_capacity = EVENTS_PER_BATCH;
    place->events = malloc(place->event_capacity * sizeof(otfx_event));
    if (!place->defs || !place->ranks || !place->batch || !place->events || !place_describe_functions(place))
        return false;
    for (int r = 0; r < setup->served_count; r++)
        place->ranks[r].rank = setup->first_served + r;
    return otfx_defs_region(place->defs, "MPI_Pcontrol level", OTFX_ROLE_PHASE, &place->phase_region) ==
           OTFX_OK;
}

/* The stream of `thread` on `rank`, its trace created on the thread's first batch. */
struct place_stream *place_stream_of(struct event_place *place, struct served_rank *rank, uint32_t thread)
{
    if (thread >= MAX_THREADS_PER_RANK)
        return NULL;
    if (thread >= rank->stream_capacity) {
        const uint32_t known = rank->stream_capacity;
        if (!otfx_reserve_u32((void **)&rank->streams, &rank->stream_capacity, (size_t)thread + 1,
                              sizeof(*rank->streams), 1))
            return NULL;
        memset(rank->streams + known, 0, (rank->stream_capacity - known) * sizeof(*rank->streams));
    }
    if (rank->streams[thread])
        return rank->streams[thread];
    struct place_stream *stream = calloc(1, sizeof(*stream));
    otfx_ref location;
    if (!stream || otfx_defs_location(place->defs, (uint32_t)rank->rank, thread, &location) != OTFX_OK ||
        otfx_trace_create(&place->trace_config, place->defs, location, &stream->trace) != OTFX_OK) {
        fprintf(stderr, "otfx-place %d: cannot create the trace of rank %d thread %u: %s\n",
                place->setup.place_rank, rank->rank, thread, otfx_last_error());
        free(stream);
        return NULL;
    }
    stream->thread = thread;
    rank->streams[thread] = stream;
    return stream;
}

/* Records in a batch whose header was refused, as far as their sizes can be followed: what the place's
 * `dropped=` counts for it (a decoder-refused batch's records are counted by the decoder). */
static uint64_t records_in(const unsigned char *records, size_t bytes)
{
    uint64_t count = 0;
    struct capture_record_header header;
    for (size_t offset = 0; bytes - offset >= sizeof(header); offset += header.size, count++) {
        memcpy(&header, records + offset, sizeof(header));
        if (header.size < sizeof(header) || header.size > bytes - offset || header.size % 8 != 0)
            break;
    }
    return count;
}

/* OTFX_TEST_PLACE_DELAY_US (test-only, tests/capture's back-pressure tests): the place sleeps this long
 * before ingesting each batch, so that it falls behind its ranks on purpose. Unset (0) in real runs. */
static void test_delay_per_batch(void)
{
    long long delay_us = 0;
    if (otfx_testpoint_integer(OTFX_SETTING_TEST_PLACE_DELAY_US, &delay_us) && delay_us > 0) {
        const struct timespec pause = {delay_us / 1000000, (delay_us % 1000000) * 1000};
        nanosleep(&pause, NULL);
    }
}

/* Checks a batch's header and hands its records to the decoder. Returns whether it was the rank's
 * goodbye (counted once even from a malformed batch: the rank sends nothing after it). */
static bool ingest_batch(struct event_place *place, struct served_rank *rank, size_t bytes)
{
    struct capture_batch_header header;
    const char *problem = NULL;
    test_delay_per_batch();
    if (bytes < sizeof(header)) {
        problem = "shorter than its header";
    } else {
        memcpy(&header, place->batch, sizeof(header));
        if (header.magic != CAPTURE_BATCH_MAGIC)
            problem = "wrong magic number";
        else if (header.version != CAPTURE_BATCH_VERSION)
            problem = "other record format version (libotfx-capture and the place differ)";
        else if (header.record_bytes != bytes - sizeof(header))
            problem = "record bytes do not match the message size";
        else if (header.app_rank != rank->rank)
            problem = "sent on behalf of another rank";
    }
    struct place_stream *stream = problem ? NULL : place_stream_of(place, rank, header.thread);
    if (!problem && !stream)
        problem = "no trace for its thread (thread index out of range or out of memory)";
    if (problem) {
        fprintf(stderr, "otfx-place %d: malformed batch of %zu bytes from rank %d dropped: %s\n",
                place->setup.place_rank, bytes, rank->rank, problem);
        rank->rejected_batches++;
        if (bytes > sizeof(header))
            rank->rejected_records += records_in(place->batch + sizeof(header), bytes - sizeof(header));
        return bytes >= sizeof(header) && header.magic == CAPTURE_BATCH_MAGIC &&
               (header.flags & CAPTURE_BATCH_GOODBYE);
    }
    if (header.sequence != stream->next_sequence) {
        fprintf(stderr, "otfx-place %d: rank %d thread %u: batch %llu arrived, %llu expected\n",
                place->setup.place_rank, rank->rank, header.thread, (unsigned long long)header.sequence,
                (unsigned long long)stream->next_sequence);
        if (header.sequence > stream->next_sequence)
            rank->lost_batches += header.sequence - stream->next_sequence;
    }
    stream->next_sequence = header.sequence + 1;
    stream->blocked_ns = header.blocked_ns;
    if (!rank->clock_known) {
        rank->clock_known = true;
        rank->clock_tsc = (header.flags & CAPTURE_BATCH_TSC) != 0;
        rank->ns_per_tick = header.ns_per_tick > 0 ? header.ns_per_tick : 1.0;
        rank->ref_ticks = header.ref_ticks;
        rank->ref_ns = header.ref_ns;
        rank->offset_ns = header.offset_ns;
        rank->offset_round_trip_ns = header.offset_round_trip_ns;
    }
    if (header.flags & CAPTURE_BATCH_GOODBYE) {
        rank->clock_final_known = true;
        rank->final_ns_per_tick = header.ns_per_tick;
        rank->final_ref_ticks = header.ref_ticks;
        rank->final_ref_ns = header.ref_ns;
        rank->final_offset_ns = header.offset_ns;
        rank->final_offset_round_trip_ns = header.offset_round_trip_ns;
    }
    uint64_t records = 0;
    if (place_ingest_records(place, rank, stream, place->batch + sizeof(header), (size_t)header.record_bytes,
                             &records)) {
        rank->batches++;
    } else {
        rank->rejected_batches++;
        rank->rejected_records += records;
    }
    return (header.flags & CAPTURE_BATCH_GOODBYE) != 0;
}

/* Test only: a place whose clock runs this far ahead, as one on another node would (with the ranks'
 * OTFX_TEST_REMOTE_PLACE=1, tests/places check that the measured offset carries it into the times).
 * Read once; a malformed value is reported once and ignored. */
static uint64_t test_clock_ahead_ns(void)
{
    long long ahead_ns = 0;
    return otfx_testpoint_integer(OTFX_SETTING_TEST_PLACE_CLOCK_AHEAD_NS, &ahead_ns) ? (uint64_t)ahead_ns : 0;
}

/* A rank measures its clock offset (otfx/capture_wire.h, CAPTURE_SYNC_TAG): answers its burst of pings
 * with this place's clock. The first ping waited for this loop; the rest are awaited here, probing and
 * yielding the core, so that their round trips measure the transport. Not for long: after 200 µs
 * without the next ping (the rank descheduled on a busy node, or dead) the loop takes over again and
 * answers the rest as they come, late, which the rank's choice of the shortest round trip discards. */
/* The rank's process id after the name and the count byte of its ping (otfx/capture_wire.h). */
static void note_process(struct event_place *place, int source, const char *ping, size_t count,
                         size_t name_length, bool same_node)
{
    const int first = place->setup.first_served;
    if (source < first || source >= first + place->setup.served_count)
        return;
    struct served_rank *rank = &place->ranks[source - first];
    int32_t pid = 0;
    if (count >= name_length + 2 + sizeof(pid))
        memcpy(&pid, ping + name_length + 2, sizeof(pid));
    rank->pid = pid;
    rank->on_node = same_node && pid > 0;
}

static void answer_clock_pings(struct event_place *place, MPI_Comm tool_comm, int source)
{
    char own[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    int own_length = 0;
    PMPI_Get_processor_name(own, &own_length);
    const uint64_t ahead_ns = test_clock_ahead_ns();
    for (;;) {
        char ping[MPI_MAX_PROCESSOR_NAME + 3 + sizeof(int32_t)] = {0};
        MPI_Status status;
        PMPI_Recv(ping, (int)sizeof(ping) - 1, MPI_CHAR, source, CAPTURE_SYNC_TAG, tool_comm, &status);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int count = 0;
        PMPI_Get_count(&status, MPI_CHAR, &count);
        const size_t name_length = strnlen(ping, (size_t)(count > 0 ? count : 0));
        const uint64_t answer[2] = {(uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + ahead_ns,
                                    strcmp(ping, own) == 0};
        PMPI_Send(answer, 2, MPI_UINT64_T, source, CAPTURE_SYNC_TAG, tool_comm);
        /* the processor name a test pretends (OTFX_TEST_REMOTE_PLACE) is not this node's: no watch */
        note_process(place, source, ping, (size_t)(count > 0 ? count : 0), name_length, answer[1] != 0);
        const unsigned still_to_come =
            (size_t)count > name_length + 1 ? (unsigned char)ping[name_length + 1] : 0;
        if (still_to_come == 0)
            return;
        struct timespec give_up;
        clock_gettime(CLOCK_MONOTONIC, &give_up);
        give_up.tv_nsec += 200 * 1000;
        if (give_up.tv_nsec >= 1000000000) {
            give_up.tv_sec++;
            give_up.tv_nsec -= 1000000000;
        }
        for (int arrived = 0;;) {
            PMPI_Iprobe(source, CAPTURE_SYNC_TAG, tool_comm, &arrived, MPI_STATUS_IGNORE);
            if (arrived)
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > give_up.tv_sec ||
                (now.tv_sec == give_up.tv_sec && now.tv_nsec >= give_up.tv_nsec))
                return;
            sched_yield();
        }
    }
}

/* Receives the message `status` announced on the tool communicator. Batches go into place->batch and
 * are ingested; clock syncs are answered; control answers go to rank_control.c. Anything else (another
 * tag, a batch from a rank not served here, a message too large for the buffer) is reported and
 * consumed: the tool communicator returns errors, so an oversized message is truncated and dropped
 * instead of aborting the job. */
bool place_receive_tool_message(struct event_place *place, const MPI_Status *status)
{
    const MPI_Comm tool_comm = place->setup.tool_comm;
    const int source = status->MPI_SOURCE, tag = status->MPI_TAG;
    int count = 0;
    PMPI_Get_count(status, MPI_BYTE, &count);
    if (tag == CAPTURE_SYNC_TAG) {
        answer_clock_pings(place, tool_comm, source);
        return false;
    }
    if (tag == CAPTURE_CONTROL_TAG && count >= 0 && count <= 1024) {
        unsigned char answer[1024];
        if (PMPI_Recv(answer, (int)sizeof(answer), MPI_BYTE, source, tag, tool_comm, MPI_STATUS_IGNORE) ==
            MPI_SUCCESS)
            place_control_answer(place, source, answer, (size_t)count);
        return false;
    }
    if (tag != CAPTURE_BATCH_TAG) {
        fprintf(stderr, "otfx-place %d: dropped a %d-byte message with tag %d from world rank %d\n",
                place->setup.place_rank, count, tag, source);
        PMPI_Recv(place->batch, CAPTURE_BATCH_BYTES, MPI_BYTE, source, tag, tool_comm, MPI_STATUS_IGNORE);
        return false;
    }
    int result = PMPI_Recv(place->batch, CAPTURE_BATCH_BYTES, MPI_BYTE, source, CAPTURE_BATCH_TAG, tool_comm,
                           MPI_STATUS_IGNORE);
    const int first = place->setup.first_served;
    if (result != MPI_SUCCESS || count < 0 || count > CAPTURE_BATCH_BYTES || source < first ||
        source >= first + place->setup.served_count) {
        fprintf(stderr, "otfx-place %d: dropped an unexpected %d-byte message from world rank %d%s\n",
                place->setup.place_rank, count, source,
                result != MPI_SUCCESS ? " (larger than a batch)" : " (not a rank this place serves)");
        return false;
    }
    struct served_rank *rank = &place->ranks[source - first];
    if (ingest_batch(place, rank, (size_t)count) && !rank->said_goodbye) {
        rank->said_goodbye = true;
        place->goodbyes++;
        return true;
    }
    return false;
}

void otfx_place_settings_from_env(otfx_place_settings *settings)
{
    settings->listen = otfx_setting_text(OTFX_SETTING_LISTEN); /* unset: the server's own default */
    settings->session_dir = otfx_setting_string(OTFX_SETTING_SESSION_DIR);
    settings->snapshot_dir = otfx_setting_string(OTFX_SETTING_SNAPSHOT_DIR);
    settings->snapshot_at_exit = otfx_setting_string(OTFX_SETTING_SNAPSHOT_AT_EXIT);
    settings->snapshot_on_failure = otfx_setting_string(OTFX_SETTING_SNAPSHOT_ON_FAILURE);
    settings->snapshot_overwrite = otfx_setting_bool(OTFX_SETTING_SNAPSHOT_OVERWRITE);
    settings->run_status = otfx_setting_string(OTFX_SETTING_RUN_STATUS);
    settings->job_id = otfx_setting_string(OTFX_SETTING_JOB_ID);
    settings->triggers = otfx_setting_string(OTFX_SETTING_TRIGGERS);
}

int otfx_event_place_run(const otfx_event_place_setup *setup)
{
    struct event_place place;
    const uint64_t start_hwm_kib = place_vm_hwm_kib();
    if (!create_place(&place, setup)) {
        fprintf(stderr, "otfx-place %d: out of memory setting up the place\n", setup->place_rank);
        destroy_place(&place);
        return 1;
    }
    place.start_hwm_kib = start_hwm_kib;
    if (!place_read_trace_config(setup->place_rank, &place.trace_config) ||
        !place_read_query_limits(&place)) {
        destroy_place(&place);
        return 2;
    }
    PMPI_Comm_set_errhandler(setup->tool_comm, MPI_ERRORS_RETURN);
    place_control_init(&place);
    if (setup->served_count > 0 && !place_triggers_start(&place, setup->settings.triggers)) {
        destroy_place(&place);
        return 2;
    }
    const int result = place_loop_run(&place);
    place_control_finish(&place);
    destroy_place(&place);
    return result;
}

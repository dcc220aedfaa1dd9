/*
 * event_place.c — the event place's receive loop, its traces and its end-of-run report
 * (see otfx/place.h).
 *
 * The place's main loop (place_loop.c) probes the tool communicator and hands every message here:
 * batches are checked and ingested on the MPI thread; queries run on a worker thread (otfx traces take
 * a write lock per append and a read lock per query, so a slow query delays one append at most, never
 * the receive queue).
 */
/* clock_gettime(CLOCK_MONOTONIC) for the ranks' clock offsets is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "event_place_internal.h"

#include <otfx/settings.h>
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
                free(rank->streams[t]);
            }
        }
        free(rank->streams);
        free(rank->comms);
        place_symbols_destroy(rank->symbols);
        free(rank->clock_segments);
        free(rank->throttled);
    }
    free(place->ranks);
    free(place->functions);
    free(place->batch);
    free(place->events);
    free(place->new_comm_ids);
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
static struct place_stream *stream_of(struct event_place *place, struct served_rank *rank, uint32_t thread)
{
    if (thread >= MAX_THREADS_PER_RANK)
        return NULL;
    if (thread >= rank->stream_capacity) {
        uint32_t capacity = rank->stream_capacity ? rank->stream_capacity : 1;
        while (capacity <= thread)
            capacity *= 2;
        struct place_stream **bigger = realloc(rank->streams, capacity * sizeof(*bigger));
        if (!bigger)
            return NULL;
        memset(bigger + rank->stream_capacity, 0, (capacity - rank->stream_capacity) * sizeof(*bigger));
        rank->streams = bigger;
        rank->stream_capacity = capacity;
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
    struct place_stream *stream = problem ? NULL : stream_of(place, rank, header.thread);
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
    }
    if (header.flags & CAPTURE_BATCH_GOODBYE) {
        rank->clock_final_known = true;
        rank->final_ns_per_tick = header.ns_per_tick;
        rank->final_ref_ticks = header.ref_ticks;
        rank->final_ref_ns = header.ref_ns;
        rank->final_offset_ns = header.offset_ns;
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

/* ---- ranks that end without MPI_Finalize ---------------------------------------------------------- */

static const char *signal_name(int signal)
{
    static const struct {
        int number;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
                 {SIGABRT, "SIGABRT"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGKILL, "SIGKILL"},
                 {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].number == signal)
            return names[i].name;
    return NULL;
}

void place_describe_death(const struct event_place *place, const struct served_rank *rank, char *text,
                          size_t size)
{
    const struct rank_death *death = &rank->death;
    if (death->vanished) {
        snprintf(text, size, "died without a word (its process is gone: killed, e.g. by SIGKILL)");
        return;
    }
    char where[600] = "";
    otfx_region_def region;
    if (death->where != OTFX_REF_NONE && otfx_defs_get_region(place->defs, death->where, &region) == OTFX_OK)
        snprintf(where, sizeof(where), " in %s", region.name);
    switch (death->cause) {
    case CAPTURE_DEATH_SIGNAL: {
        const char *name = signal_name(death->value);
        char number[32];
        snprintf(number, sizeof(number), "signal %d", (int)death->value);
        const bool fault = death->value == SIGSEGV || death->value == SIGBUS || death->value == SIGFPE ||
                           death->value == SIGILL;
        char address[48] = "";
        if (fault)
            snprintf(address, sizeof(address), " at address 0x%llx", (unsigned long long)death->address);
        snprintf(text, size, "died of %s (%s)%s%s", name ? name : number, strsignal(death->value), address,
                 where);
        return;
    }
    case CAPTURE_DEATH_ABORT:
        snprintf(text, size, "called MPI_Abort with error code %d", (int)death->value);
        return;
    case CAPTURE_DEATH_EXIT:
        snprintf(text, size, "called exit(%d) without MPI_Finalize", (int)death->value);
        return;
    default:
        snprintf(text, size, "ended without MPI_Finalize");
    }
}

int place_death_exit_code(const struct served_rank *rank)
{
    const struct rank_death *death = &rank->death;
    if (death->vanished)
        return SIGKILL; /* what mpiexec reports for a process killed so */
    const int code = death->value & 0xff;
    return code ? code : 1; /* never "success" for a job that failed */
}

/* Whether process `pid` runs (a zombie has ended: its parent, hydra's proxy, just did not reap it yet). */
static bool process_runs(int pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file)
        return false;
    const size_t length = fread(stat, 1, sizeof(stat) - 1, file);
    fclose(file);
    stat[length] = '\0';
    const char *close = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold anything */
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X' && close[2] != 'x';
}

/* The trace of a rank found gone ends with the phase that says so, when it was found gone. */
static void mark_vanished(struct event_place *place, struct served_rank *rank, uint64_t now_ns)
{
    struct place_stream *stream =
        rank->stream_capacity && rank->streams[0] ? rank->streams[0] : stream_of(place, rank, 0);
    if (!stream)
        return;
    char text[600], name[700];
    place_describe_death(place, rank, text, sizeof(text));
    snprintf(name, sizeof(name), "otfx: rank %d %s", rank->rank, text);
    otfx_event event;
    memset(&event, 0, sizeof(event));
    event.type = OTFX_EV_PHASE;
    event.time = now_ns;
    event.u.phase.value = SIGKILL;
    otfx_trace_status status;
    if (otfx_trace_status_get(stream->trace, &status) == OTFX_OK && status.first_time <= status.last_time &&
        status.last_time > event.time)
        event.time = status.last_time;
    size_t appended = 0;
    if (otfx_defs_region(place->defs, name, OTFX_ROLE_PHASE, &event.u.phase.region) != OTFX_OK ||
        otfx_trace_append(stream->trace, &event, 1, &appended) != OTFX_OK)
        fprintf(stderr, "otfx-place %d: rank %d: cannot mark its end in its trace: %s\n",
                place->setup.place_rank, rank->rank, otfx_last_error());
}

bool place_watch_ranks(struct event_place *place, uint64_t now_ns)
{
    enum { GRACE_NS = 1000 * 1000 * 1000 };
    bool any = false;
    for (int r = 0; r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        if (rank->said_goodbye || !rank->on_node)
            continue;
        if (process_runs(rank->pid)) {
            rank->gone_since_ns = 0;
            continue;
        }
        /* Gone: its last batches may still be on their way (a rank sends its goodbye and exits) */
        if (!rank->gone_since_ns) {
            rank->gone_since_ns = now_ns;
            continue;
        }
        if (now_ns - rank->gone_since_ns < GRACE_NS)
            continue;
        rank->death = (struct rank_death){.died = true, .vanished = true, .where = OTFX_REF_NONE};
        rank->said_goodbye = true;
        place->goodbyes++;
        mark_vanished(place, rank, now_ns);
        any = true;
    }
    return any;
}

/* "otfx-place: rank R died of …" for a rank that ended without MPI_Finalize, "… unfinished …" for one
 * still running when a failed job ended. */
static void report_ending(const struct event_place *place, const struct served_rank *rank)
{
    char text[700];
    if (rank->death.died) {
        place_describe_death(place, rank, text, sizeof(text));
        printf("otfx-place: rank %d %s\n", rank->rank, text);
    } else if (!rank->said_goodbye && place->job_failed) {
        printf("otfx-place: rank %d unfinished: still running when the job ended after a failure\n",
               rank->rank);
    }
}

/* Insertion sort by name, once per place: C11's qsort has no context argument for the name table. */
static void sort_by_name(int *order, int count, const char *const *names)
{
    for (int i = 1; i < count; i++) {
        int value = order[i], j = i;
        while (j > 0 && strcmp(names[order[j - 1]], names[value]) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = value;
    }
}

struct enter_counter {
    uint64_t *per_region;
    uint32_t region_count;
};

static int count_enter(const otfx_event *event, void *user)
{
    struct enter_counter *counter = user;
    if (event->type == OTFX_EV_ENTER && event->u.region.region < counter->region_count)
        counter->per_region[event->u.region.region]++;
    else if (event->type == OTFX_EV_PHASE && event->u.phase.region < counter->region_count)
        counter->per_region[event->u.phase.region]++;
    return 0;
}

/* ENTER events per region held in a stream's trace; where reduction removed detail, the profile's
 * visits (exact under reduction) instead. */
static bool count_held_calls(struct place_stream *stream, const otfx_trace_status *status,
                             struct enter_counter *counter)
{
    bool reduced = status->stopped;
    for (int s = 0; s < OTFX_REDUCE_COUNT; s++)
        reduced = reduced || status->events_reduced[s] > 0;
    if (!reduced)
        return otfx_query_events(stream->trace, 0, OTFX_TIME_MAX, false, count_enter, counter) == OTFX_OK;
    otfx_profile *profile = otfx_profile_create();
    if (!profile || otfx_query_profile(stream->trace, 0, OTFX_TIME_MAX, profile) != OTFX_OK) {
        otfx_profile_destroy(profile);
        return false;
    }
    const otfx_profile_entry *entries = otfx_profile_entries(profile);
    for (size_t i = 0; i < otfx_profile_size(profile); i++)
        if (entries[i].region < counter->region_count)
            counter->per_region[entries[i].region] += entries[i].visits;
    otfx_profile_destroy(profile);
    return true;
}

/* Appends " NAME=COUNT" to a growing line; false when out of memory. */
static bool append_text(char **line, size_t *used, size_t *capacity, const char *name,
                        unsigned long long count)
{
    int length = snprintf(NULL, 0, " %s=%llu", name, count);
    if (length < 0)
        return false;
    if (*used + (size_t)length + 2 > *capacity) {
        size_t grown = 2 * (*used + (size_t)length + 2);
        char *bigger = realloc(*line, grown);
        if (!bigger)
            return false;
        *line = bigger;
        *capacity = grown;
    }
    snprintf(*line + *used, *capacity - *used, " %s=%llu", name, count);
    *used += (size_t)length;
    return true;
}

struct named_count {
    const char *name;
    uint64_t count;
};

static int compare_named_counts(const void *a, const void *b)
{
    return strcmp(((const struct named_count *)a)->name, ((const struct named_count *)b)->name);
}

/* "otfx-place: rank R held-functions NAME=COUNT …": ENTER events per user-function region (sorted by
 * name), from the same counts as held-calls; "held-phases": PHASE events per phase region (counted only
 * where no reduction removed detail: a profile has no phases). */
static void report_regions(struct event_place *place, struct served_rank *rank,
                           const struct enter_counter *counter, otfx_region_role role, const char *label)
{
    struct named_count *functions =
        calloc(counter->region_count ? counter->region_count : 1, sizeof(*functions));
    size_t capacity = 256, used = 0, count = 0;
    char *line = malloc(capacity);
    if (!functions || !line) {
        fprintf(stderr, "otfx-place %d: rank %d: out of memory for the %s line\n", place->setup.place_rank,
                rank->rank, label);
        free(functions);
        free(line);
        return;
    }
    for (uint32_t region = 0; region < counter->region_count; region++) {
        otfx_region_def def;
        if (counter->per_region[region] && otfx_defs_get_region(place->defs, region, &def) == OTFX_OK &&
            def.role == role)
            functions[count++] = (struct named_count){def.name, counter->per_region[region]};
    }
    qsort(functions, count, sizeof(*functions), compare_named_counts);
    used = (size_t)snprintf(line, capacity, "otfx-place: rank %d %s", rank->rank, label);
    for (size_t i = 0; i < count; i++)
        if (!append_text(&line, &used, &capacity, functions[i].name, (unsigned long long)functions[i].count))
            break;
    line[used++] = '\n';
    line[used] = '\0';
    fputs(line, stdout);
    free(line);
    free(functions);
}

/* "otfx-place: rank R throttled NAME=CALLS/MEAN_NSns/SKIPPED …" when the rank switched functions off. */
static void report_throttled(struct event_place *place, struct served_rank *rank)
{
    if (!rank->throttled_count)
        return;
    size_t capacity = 256;
    char *line = malloc(capacity);
    if (!line)
        return;
    size_t used = (size_t)snprintf(line, capacity, "otfx-place: rank %d throttled", rank->rank);
    for (uint32_t i = 0; i < rank->throttled_count; i++) {
        const struct throttled_function *function = &rank->throttled[i];
        otfx_region_def def;
        if (otfx_defs_get_region(place->defs, function->region, &def) != OTFX_OK)
            continue;
        char text[600];
        snprintf(text, sizeof(text), "%s(calls=%llu,mean_ns=%llu,skipped)", def.name,
                 (unsigned long long)function->calls, (unsigned long long)function->mean_ns);
        if (!append_text(&line, &used, &capacity, text, (unsigned long long)function->skipped))
            break;
    }
    line[used++] = '\n';
    line[used] = '\0';
    fputs(line, stdout);
    free(line);
}

/* Message pairs on the place's time base: every send and receive of the ranks this place serves, paired
 * by their channel (communicator, sender, receiver, tag) and ordinal (otfx_event.u.msg.seq), so a pair is
 * checked only when the place holds both ends — a reduction that removed either leaves the other alone,
 * and ends without an ordinal (0) are not paired. A receive must end (its RECV/IRECV event) after its
 * send started (the SEND/ISEND event, at the ENTER of the call that sent). Counted per receiving rank into
 * its clock line. Memory: the traces are read twice, to count the ends and then to note them in arrays
 * of that size, 24 bytes an end (channels named by an index into a small table). */
struct message_channel {
    otfx_ref comm;
    int32_t src, dst;
    uint32_t tag;
};
struct message_end {
    uint32_t channel; /* index into message_walk.channels */
    uint64_t seq;
    otfx_time time;
};
struct message_walk {
    struct message_end *ends[2]; /* sends, receives; NULL while counting */
    size_t count[2], capacity[2];
    struct message_channel *channels;
    uint32_t *slots; /* open addressing: channel index + 1, 0 free */
    uint32_t channel_count, slot_count;
    int32_t rank;
    bool failed;
};

static uint32_t channel_slot(const struct message_channel *c, uint32_t slot_count)
{
    uint64_t hash = ((uint64_t)c->comm << 32 | (uint32_t)c->src) * UINT64_C(0x9e3779b97f4a7c15);
    hash ^= ((uint64_t)(uint32_t)c->dst << 32 | c->tag) * UINT64_C(0xc2b2ae3d27d4eb4f);
    return (uint32_t)(hash >> 32) & (slot_count - 1);
}

/* The channel's index, added when new; UINT32_MAX when out of memory. */
static uint32_t channel_index(struct message_walk *walk, const struct message_channel *channel)
{
    if ((walk->channel_count + 1) * 2 > walk->slot_count) {
        const uint32_t slot_count = walk->slot_count ? 2 * walk->slot_count : 64;
        uint32_t *slots = calloc(slot_count, sizeof(*slots));
        struct message_channel *channels = realloc(walk->channels, slot_count / 2 * sizeof(*channels));
        if (!slots || !channels) {
            free(slots);
            if (channels)
                walk->channels = channels;
            return UINT32_MAX;
        }
        walk->channels = channels;
        for (uint32_t i = 0; i < walk->channel_count; i++) {
            uint32_t at = channel_slot(&channels[i], slot_count);
            while (slots[at])
                at = (at + 1) & (slot_count - 1);
            slots[at] = i + 1;
        }
        free(walk->slots);
        walk->slots = slots;
        walk->slot_count = slot_count;
    }
    uint32_t at = channel_slot(channel, walk->slot_count);
    for (; walk->slots[at]; at = (at + 1) & (walk->slot_count - 1)) {
        const struct message_channel *known = &walk->channels[walk->slots[at] - 1];
        if (known->comm == channel->comm && known->src == channel->src && known->dst == channel->dst &&
            known->tag == channel->tag)
            return walk->slots[at] - 1;
    }
    walk->channels[walk->channel_count] = *channel;
    walk->slots[at] = ++walk->channel_count;
    return walk->channel_count - 1;
}

static int collect_message(const otfx_event *event, void *user)
{
    struct message_walk *walk = user;
    const bool sent = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND;
    if ((!sent && event->type != OTFX_EV_RECV && event->type != OTFX_EV_IRECV) || event->u.msg.seq == 0)
        return 0;
    const int which = sent ? 0 : 1;
    if (!walk->ends[which]) { /* the counting read */
        walk->capacity[which]++;
        return 0;
    }
    if (walk->count[which] == walk->capacity[which])
        return 0; /* the trace grew since it was counted */
    const int32_t peer = (int32_t)event->u.msg.peer;
    const struct message_channel channel = {event->u.msg.comm, sent ? walk->rank : peer,
                                            sent ? peer : walk->rank, event->u.msg.tag};
    const uint32_t index = channel_index(walk, &channel);
    if (index == UINT32_MAX) {
        walk->failed = true;
        return 1;
    }
    walk->ends[which][walk->count[which]++] = (struct message_end){index, event->u.msg.seq, event->time};
    return 0;
}

static int compare_ends(const void *a, const void *b)
{
    const struct message_end *x = a, *y = b;
    if (x->channel != y->channel)
        return x->channel < y->channel ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void walk_traces(struct event_place *place, struct message_walk *walk)
{
    for (int r = 0; r < place->setup.served_count && !walk->failed; r++) {
        struct served_rank *rank = &place->ranks[r];
        walk->rank = rank->rank;
        for (uint32_t t = 0; t < rank->stream_capacity; t++) {
            if (rank->streams[t])
                otfx_query_events(rank->streams[t]->trace, 0, OTFX_TIME_MAX, false, collect_message, walk);
        }
    }
}

static void check_message_pairs(struct event_place *place)
{
    struct message_walk walk = {0};
    walk_traces(place, &walk);
    for (int side = 0; side < 2; side++) {
        walk.ends[side] =
            malloc((walk.capacity[side] ? walk.capacity[side] : 1) * sizeof(struct message_end));
        walk.failed = walk.failed || !walk.ends[side];
    }
    if (!walk.failed)
        walk_traces(place, &walk);
    if (!walk.failed) {
        for (int side = 0; side < 2; side++) {
            if (walk.count[side] > 1) /* qsort must not see the NULL of an empty list */
                qsort(walk.ends[side], walk.count[side], sizeof(struct message_end), compare_ends);
        }
        size_t i = 0, j = 0;
        while (i < walk.count[0] && j < walk.count[1]) {
            const struct message_end *send = &walk.ends[0][i], *recv = &walk.ends[1][j];
            const int order = compare_ends(send, recv);
            if (order < 0) {
                i++;
            } else if (order > 0) {
                j++;
            } else {
                const int32_t dst = walk.channels[recv->channel].dst - place->setup.first_served;
                if (dst >= 0 && dst < place->setup.served_count) {
                    place->ranks[dst].pairs_checked++;
                    if (recv->time < send->time) {
                        struct served_rank *receiver = &place->ranks[dst];
                        receiver->pairs_inverted++;
                        if (send->time - recv->time > receiver->worst_inversion_ns)
                            receiver->worst_inversion_ns = send->time - recv->time;
                    }
                }
                i++;
                j++;
            }
        }
    }
    free(walk.ends[0]);
    free(walk.ends[1]);
    free(walk.channels);
    free(walk.slots);
}

/* "otfx-place: rank R clock timer=tsc|monotonic ns_per_tick=INIT final_ns_per_tick=FINAL
 * drift_ns=D init_offset_ns=O1 final_offset_ns=O2": D is how far the finalize reference lies from where
 * MPI_Init's calibration puts it (0 for CLOCK_MONOTONIC); O1 and O2 the rank's clock offsets to this
 * place. Stored times carry D plus O2 - O1 of error at the end of the run: only O1 is applied. */
static void report_clock(const struct served_rank *rank)
{
    if (!rank->clock_known)
        return;
    double drift = 0, residual = 0;
    if (rank->clock_final_known) {
        const double ticks = (double)rank->final_ref_ticks - (double)rank->ref_ticks;
        drift = (double)rank->final_ref_ns - ((double)rank->ref_ns + ticks * rank->ns_per_tick);
        /* Where the place's model puts the rank's MPI_Finalize reference point, against where it is on
         * the place's clock: the timestamps' error at the end of the run. */
        residual = place_clock_local(rank, rank->final_ref_ticks) +
                   place_clock_correction(rank, rank->final_ref_ticks) -
                   ((double)rank->final_ref_ns + (double)rank->final_offset_ns);
    }
    char line[384];
    snprintf(line, sizeof(line),
             "otfx-place: rank %d clock timer=%s ns_per_tick=%.9f final_ns_per_tick=%.9f drift_ns=%lld "
             "init_offset_ns=%lld final_offset_ns=%lld clock_syncs=%llu residual_ns=%lld pairs_checked=%llu "
             "recv_end_before_send_start=%llu worst_inversion_ns=%llu\n",
             rank->rank, rank->clock_tsc ? "tsc" : "monotonic", rank->ns_per_tick,
             rank->clock_final_known ? rank->final_ns_per_tick : rank->ns_per_tick,
             (long long)(drift < 0 ? drift - 0.5 : drift + 0.5), (long long)rank->offset_ns,
             (long long)(rank->clock_final_known ? rank->final_offset_ns : rank->offset_ns),
             (unsigned long long)rank->clock_syncs,
             (long long)(residual < 0 ? residual - 0.5 : residual + 0.5),
             (unsigned long long)rank->pairs_checked, (unsigned long long)rank->pairs_inverted,
             (unsigned long long)rank->worst_inversion_ns);
    fputs(line, stdout);
}

static void report_rank(struct event_place *place, struct served_rank *rank, const int *by_name)
{
    otfx_trace_status total = {0};
    uint64_t reduced = 0, dropped = rank->rejected_records, blocked_ns = 0;
    const uint32_t region_count = otfx_defs_count_regions(place->defs);
    struct enter_counter counter = {calloc(region_count ? region_count : 1, sizeof(uint64_t)), region_count};
    bool counted = counter.per_region != NULL;
    for (uint32_t t = 0; t < rank->stream_capacity; t++) {
        struct place_stream *stream = rank->streams[t];
        otfx_trace_status status;
        if (!stream || otfx_trace_status_get(stream->trace, &status) != OTFX_OK)
            continue;
        total.events_received += status.events_received;
        total.events_held += status.events_held;
        total.bytes_used += status.bytes_used;
        total.bytes_open += status.bytes_open;
        total.budget_bytes += status.budget_bytes;
        for (int s = 0; s < OTFX_REDUCE_COUNT; s++) {
            /* Reduction strategies thin what was stored; stop and the drops before the trace lose it. */
            if (s == OTFX_REDUCE_STOP || s == OTFX_REDUCE_SOURCE_DROP || s == OTFX_REDUCE_THROTTLE)
                dropped += status.events_reduced[s];
            else
                reduced += status.events_reduced[s];
        }
        blocked_ns += stream->blocked_ns;
        if (counted)
            counted = count_held_calls(stream, &status, &counter);
    }
    char report[512];
    snprintf(report, sizeof(report),
             "otfx-place: rank %d events received=%llu held=%llu reduced=%llu dropped=%llu blocked_ns=%llu "
             "bytes_used=%zu/%zu bytes_open=%zu\n",
             rank->rank, (unsigned long long)total.events_received, (unsigned long long)total.events_held,
             (unsigned long long)reduced, (unsigned long long)dropped, (unsigned long long)blocked_ns,
             total.bytes_used, total.budget_bytes, total.bytes_open);
    fputs(report, stdout);
    report_ending(place, rank);
    report_clock(rank);
    if (rank->rejected_batches || rank->lost_batches)
        fprintf(stderr, "otfx-place %d: rank %d: %llu malformed batches dropped, %llu batches lost\n",
                place->setup.place_rank, rank->rank, (unsigned long long)rank->rejected_batches,
                (unsigned long long)rank->lost_batches);

    size_t capacity = 256, used = 0;
    char *line = malloc(capacity);
    if (!counted || !line) {
        fprintf(stderr, "otfx-place %d: rank %d: could not count the held calls: %s\n",
                place->setup.place_rank, rank->rank, otfx_last_error());
        free(line);
        free(counter.per_region);
        return;
    }
    used = (size_t)snprintf(line, capacity, "otfx-place: rank %d held-calls", rank->rank);
    for (int i = 0; i < place->setup.functions.count; i++) {
        const struct place_function *function = &place->functions[by_name[i]];
        if (function->region == OTFX_REF_NONE || function->region >= region_count ||
            !counter.per_region[function->region])
            continue;
        if (!append_text(&line, &used, &capacity, place->setup.functions.names[by_name[i]],
                         (unsigned long long)counter.per_region[function->region]))
            break;
    }
    /* One write per line, so that lines of different places do not mix in mpiexec's output. */
    line[used++] = '\n';
    line[used] = '\0';
    fputs(line, stdout);
    free(line);
    report_regions(place, rank, &counter, OTFX_ROLE_USER_FUNCTION, "held-functions");
    report_regions(place, rank, &counter, OTFX_ROLE_PHASE, "held-phases");
    report_throttled(place, rank);
    free(counter.per_region);
}

void place_print_report(struct event_place *place)
{
    if (place->reported)
        return;
    place->reported = true;
    const otfx_event_place_setup *setup = &place->setup;
    int *by_name = malloc(sizeof(int) * (size_t)(setup->functions.count > 0 ? setup->functions.count : 1));
    if (by_name) {
        for (int i = 0; i < setup->functions.count; i++)
            by_name[i] = i;
        sort_by_name(by_name, setup->functions.count, setup->functions.names);
        check_message_pairs(place);
        for (int r = 0; r < setup->served_count; r++)
            report_rank(place, &place->ranks[r], by_name);
        free(by_name);
    }
    size_t budget_total = 0;
    unsigned traces = 0;
    for (int r = 0; r < setup->served_count; r++)
        for (uint32_t t = 0; t < place->ranks[r].stream_capacity; t++)
            if (place->ranks[r].streams[t]) {
                traces++;
                budget_total += place->trace_config.budget_bytes;
            }
    printf("otfx-place %d: memory vmhwm_kib=%llu at_start_kib=%llu traces=%u budget_total_kib=%zu "
           "defs_kib=%zu\n",
           setup->place_rank, (unsigned long long)place_vm_hwm_kib(),
           (unsigned long long)place->start_hwm_kib, traces, budget_total / 1024,
           otfx_defs_bytes(place->defs) / 1024);
    fflush(stdout);
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
    const int result = place_loop_run(&place);
    place_control_finish(&place);
    destroy_place(&place);
    return result;
}

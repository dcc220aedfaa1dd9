/*
 * recorder.c — per-thread record buffers (see recorder.h and otfx/capture_wire.h).
 */
#include "recorder.h"

#include "communicators.h"
#include "metrics.h"
#include "nesting.h"
#include "requests.h"
#include "timer.h"
#include "transport.h"

#include <otfx/support/growth.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool capture_recording;
uint32_t capture_record_mask;
uint64_t capture_check_deadline = UINT64_MAX;
bool capture_has_place;
_Thread_local __attribute__((tls_model("initial-exec"))) uint64_t capture_entered;
uint32_t capture_injected_overhead_ns;
uint64_t capture_injected_overhead_loops;

/* Dropped records are written here and counted at the next slow-path call: every droppable record is
 * a fixed-size one far below this. */
enum { DROP_SCRATCH_BYTES = 256 };

/* Two batch buffers per thread: one is filled while the other may still be in flight. */
struct thread_recorder {
    unsigned char *batches[2];
    size_t used;     /* bytes of records in the current batch */
    size_t complete; /* where its last record starts: the records before it are written out (dying.c) */
    size_t limit;    /* RECORD_CAPACITY; 0 while dropping, so that every record takes reserve_slow */
    int current;
    uint32_t thread_index;
    uint64_t sequence;
    MPI_Request in_flight;
    bool flush_owed; /* a FLUSH found the previous batch still in flight (drop policy): the next is flagged */
    struct thread_recorder *next; /* registry, walked once in MPI_Finalize */
    /* OTFX_BACKPRESSURE=drop, touched only on the slow path: the batch is full and the previous one still
     * on its way. Records that must not be lost go to `kept` (grown as needed), the others to `scratch`,
     * and are counted: how many, their time range, and the call depth they went through (relative to
     * the drop's start: its lowest point and where it ended) for the place's CAPTURE_RECORD_DROPPED. */
    bool dropping;
    bool scratch_holds_dropped;
    uint64_t dropped, first_dropped, last_dropped;
    int64_t drop_depth, drop_lowest_depth;
    unsigned char *kept;
    size_t kept_used, kept_capacity;
    uint64_t scratch[DROP_SCRATCH_BYTES / sizeof(uint64_t)];
};

/* Read by every record: initial-exec (linkage.h), one %fs-relative load instead of a __tls_get_addr call. */
static CAPTURE_HOT_THREAD_LOCAL struct thread_recorder *this_thread;
static struct thread_recorder *all_threads;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t thread_count;
static int recorder_app_rank;
static bool drop_when_full;

/* Until capture_recorder_start sets the real ones: no FLUSH owed, no load map, no steering. */
static bool no_flush_due(void)
{
    return false;
}
static bool no_load_map_change(void)
{
    return false;
}
static void nothing(void) {}
static void no_check(uint64_t now)
{
    (void)now;
}
static struct capture_recorder_hooks hooks = {
    .check = no_check,
    .flush_due = no_flush_due,
    .load_map_changed = no_load_map_change,
    .write_load_map = nothing,
    .check_at_flush = nothing,
    .before_flushed_send = nothing,
};

enum { RECORD_CAPACITY = CAPTURE_BATCH_BYTES - sizeof(struct capture_batch_header) };

void capture_recorder_start(int app_rank, bool recording, bool drop,
                            const struct capture_recorder_hooks *above)
{
    hooks = *above;
    recorder_app_rank = app_rank;
    drop_when_full = drop;
    capture_has_place = true;
    capture_recording = recording;
}

/* Once per thread: the only allocation of the recorder. */
static struct thread_recorder *create_thread_recorder(void)
{
    struct thread_recorder *recorder = calloc(1, sizeof(*recorder));
    unsigned char *memory = malloc(2 * (size_t)CAPTURE_BATCH_BYTES);
    if (!recorder || !memory) {
        fprintf(stderr, "otfx-capture: out of memory for the record buffers: aborting\n");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    recorder->batches[0] = memory;
    recorder->batches[1] = memory + CAPTURE_BATCH_BYTES;
    recorder->in_flight = MPI_REQUEST_NULL;
    recorder->limit = RECORD_CAPACITY;
    pthread_mutex_lock(&registry_lock);
    recorder->thread_index = thread_count++;
    recorder->next = all_threads;
    all_threads = recorder;
    pthread_mutex_unlock(&registry_lock);
    this_thread = recorder;
    return recorder;
}

static void send_batch(struct thread_recorder *recorder, uint16_t flags)
{
    unsigned char *batch = recorder->batches[recorder->current];
    const struct capture_clock_calibration clock = capture_timer_calibration();
    if (recorder->flush_owed)
        flags |= CAPTURE_BATCH_FLUSHED;
    recorder->flush_owed = false;
    struct capture_batch_header header = {
        .magic = CAPTURE_BATCH_MAGIC,
        .version = CAPTURE_BATCH_VERSION,
        .flags = (uint16_t)(flags | (capture_timer_tsc ? CAPTURE_BATCH_TSC : 0)),
        .app_rank = recorder_app_rank,
        .thread = recorder->thread_index,
        .sequence = recorder->sequence++,
        .record_bytes = recorder->used,
        .blocked_ns = capture_blocked_ns(),
        .ns_per_tick = clock.ns_per_tick,
        .ref_ticks = clock.ref_ticks,
        .ref_ns = clock.ref_ns,
        .offset_ns = clock.offset_ns,
        .offset_round_trip_ns = clock.offset_round_trip_ns,
    };
    memcpy(batch, &header, sizeof(header));
    capture_flush(batch, sizeof(header) + recorder->used, &recorder->in_flight);
    recorder->current ^= 1;
    recorder->used = 0;
    recorder->complete = 0;
}

static inline void *append(struct thread_recorder *recorder, size_t size)
{
    void *record =
        recorder->batches[recorder->current] + sizeof(struct capture_batch_header) + recorder->used;
    recorder->complete = recorder->used;
    recorder->used += size;
    return record;
}

/* Records that later records depend on (definitions, the throttled list, steering markers): kept while
 * dropping. */
static bool must_keep(enum capture_record_kind kind)
{
    switch (kind) {
    case CAPTURE_RECORD_COMM_CREATED:
    case CAPTURE_RECORD_COMM_FREED:
    case CAPTURE_RECORD_OBJECT:
    case CAPTURE_RECORD_NAME:
    case CAPTURE_RECORD_THROTTLED:
    case CAPTURE_RECORD_RECORDING:
    case CAPTURE_RECORD_CLOCK:
    case CAPTURE_RECORD_DIED:
    case CAPTURE_RECORD_METRIC_SET:
        return true;
    default:
        return false;
    }
}

static int call_depth_change(uint16_t kind)
{
    switch (kind) {
    case CAPTURE_RECORD_ENTER:
    case CAPTURE_RECORD_USER_ENTER:
    case CAPTURE_RECORD_REGION_BEGIN:
        return 1;
    case CAPTURE_RECORD_LEAVE:
    case CAPTURE_RECORD_USER_LEAVE:
    case CAPTURE_RECORD_REGION_END:
        return -1;
    default:
        return 0;
    }
}

/* The caller filled the scratch record after the last reserve: now it can be counted. */
static void count_dropped(struct thread_recorder *recorder)
{
    if (!recorder->scratch_holds_dropped)
        return;
    recorder->scratch_holds_dropped = false;
    struct capture_record_header header;
    memcpy(&header, recorder->scratch, sizeof(header));
    if (recorder->dropped == 0 || header.timestamp < recorder->first_dropped)
        recorder->first_dropped = header.timestamp;
    if (recorder->dropped == 0 || header.timestamp > recorder->last_dropped)
        recorder->last_dropped = header.timestamp;
    recorder->dropped++;
    recorder->drop_depth += call_depth_change(header.kind);
    if (recorder->drop_depth < recorder->drop_lowest_depth)
        recorder->drop_lowest_depth = recorder->drop_depth;
}

static void start_drop(struct thread_recorder *recorder)
{
    recorder->dropping = true;
    recorder->limit = 0;
    recorder->dropped = 0;
    recorder->drop_depth = 0;
    recorder->drop_lowest_depth = 0;
    recorder->kept_used = 0;
}

static void *keep_or_drop(struct thread_recorder *recorder, size_t size, enum capture_record_kind kind)
{
    if (!must_keep(kind) && size <= sizeof(recorder->scratch)) {
        recorder->scratch_holds_dropped = true;
        return recorder->scratch;
    }
    if (!otfx_reserve((void **)&recorder->kept, &recorder->kept_capacity, recorder->kept_used + size, 1,
                      4096)) {
        fprintf(stderr, "otfx-capture: out of memory for the records kept while dropping: aborting\n");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    void *record = recorder->kept + recorder->kept_used;
    recorder->kept_used += size;
    return record;
}

/* The previous batch has left: sends the full one, then the kept records and the DROPPED record. Only
 * more kept records than a batch holds (definitions of hundreds of communicators during one drop) make
 * this wait for a send. */
static void end_drop(struct thread_recorder *recorder)
{
    count_dropped(recorder);
    recorder->dropping = false;
    recorder->limit = RECORD_CAPACITY;
    send_batch(recorder, 0);
    uint64_t latest = recorder->last_dropped;
    for (size_t offset = 0; offset < recorder->kept_used;) {
        struct capture_record_header header;
        memcpy(&header, recorder->kept + offset, sizeof(header));
        if (capture_record_kind(header.kind).time_ordered && header.timestamp > latest)
            latest = header.timestamp;
        if (recorder->used + header.size > RECORD_CAPACITY)
            send_batch(recorder, 0);
        memcpy(append(recorder, header.size), recorder->kept + offset, header.size);
        offset += header.size;
    }
    recorder->kept_used = 0;
    if (!recorder->dropped)
        return;
    if (recorder->used + sizeof(struct capture_dropped_record) > RECORD_CAPACITY)
        send_batch(recorder, 0);
    struct capture_dropped_record *marker = append(recorder, sizeof(*marker));
    marker->header.kind = CAPTURE_RECORD_DROPPED;
    marker->header.function_id = 0;
    marker->header.size = sizeof(*marker);
    marker->header.timestamp = latest;
    marker->dropped = recorder->dropped;
    marker->first = recorder->first_dropped;
    marker->last = recorder->last_dropped;
    marker->closed = (uint32_t)-recorder->drop_lowest_depth;
    marker->opened = (uint32_t)(recorder->drop_depth - recorder->drop_lowest_depth);
    recorder->dropped = 0;
}

static inline void *reserve(size_t size, enum capture_record_kind kind);

/* The batch is full (or the thread is dropping): inside the tool (nesting.h), since sending calls MPI. */
static void *reserve_slow_inside(struct thread_recorder *recorder, size_t size, enum capture_record_kind kind)
{
    if (recorder->dropping) {
        count_dropped(recorder);
        if (!capture_flush_ready(&recorder->in_flight))
            return keep_or_drop(recorder, size, kind);
        end_drop(recorder);
        if (recorder->used + size <= RECORD_CAPACITY)
            return append(recorder, size);
    }
    if (drop_when_full && !capture_flush_ready(&recorder->in_flight)) {
        start_drop(recorder);
        return keep_or_drop(recorder, size, kind);
    }
    /* Full while a FLUSH is due in this thread: this batch is the one that answers it. */
    send_batch(recorder, hooks.flush_due() ? CAPTURE_BATCH_FLUSHED : 0);
    /* Once per batch: objects dlopen'ed since the load map was sent go at the head of the next. */
    if (hooks.load_map_changed())
        hooks.write_load_map();
    /* A batch send is a check point too (a thread recording without MPI calls or user-function
     * enters, e.g. only otfx_phase); it may write RECORDING records before this one. */
    hooks.check_at_flush();
    return reserve(size, kind);
}

static __attribute__((noinline)) void *reserve_slow(struct thread_recorder *recorder, size_t size,
                                                    enum capture_record_kind kind)
{
    capture_tool_enter();
    void *record = reserve_slow_inside(recorder, size, kind);
    capture_tool_exit();
    return record;
}

/* Room for `size` bytes of records in this thread's batch; sends the batch first when it is full. */
static inline void *reserve(size_t size, enum capture_record_kind kind)
{
    struct thread_recorder *recorder = this_thread;
    if (__builtin_expect(!recorder, 0))
        recorder = create_thread_recorder();
    if (__builtin_expect(recorder->used + size > recorder->limit, 0))
        return reserve_slow(recorder, size, kind);
    return append(recorder, size);
}

void capture_spin_loops(uint64_t turns)
{
    uint64_t x = turns;
    for (uint64_t i = 0; i < turns; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        __asm__ volatile("" : "+r"(x)); /* kept: the compiler may not fold the loop */
    }
}

/* The test point's busy-spin, after the record's timestamp was taken: the intrusion it adds lies
 * between this event and the next, as the measured cost of writing the record does. It is a fixed amount
 * of work, as the recorder's own instructions are: it takes longer when the core is shared or slower,
 * and is not cut short when the thread is descheduled in it (a spin until a clock time would be).
 * It never ends before the injected ns have passed, though: the calibration's fastest run may itself
 * have been slowed (a busy sibling core, a low clock at MPI_Init), and then the work alone takes less
 * than the OVERHEAD record says. The place charges every event the injected ns; an event that came
 * sooner than its predecessor's charge would put its compensated time before the predecessor's, which
 * compensation cannot do (compensated time never goes back), so it would keep that event at the
 * predecessor's time and take the rest out of later events, and what a call loses would depend on how
 * fast the loop happened to run instead of on the costs the rank reported. */
static __attribute__((noinline)) void inject_overhead(enum capture_record_kind kind)
{
    if (!capture_overhead_injected((uint16_t)kind))
        return;
    const uint64_t begun = capture_monotonic_ns();
    capture_spin_loops(capture_injected_overhead_loops);
    while (capture_monotonic_ns() - begun < capture_injected_overhead_ns)
        capture_spin_loops(64);
}

static inline void fill_header(struct capture_record_header *header, enum capture_record_kind kind,
                               int function_id, size_t size, uint64_t timestamp)
{
    header->kind = (uint16_t)kind;
    header->function_id = (uint16_t)function_id;
    header->size = (uint32_t)size;
    header->timestamp = timestamp;
    if (__builtin_expect(capture_injected_overhead_ns != 0, 0))
        inject_overhead(kind);
}

/* The metrics after an ENTER or LEAVE record, with its timestamp; the thread's set first when it is new
 * (metrics.h). */
static __attribute__((noinline)) void write_metrics(int function_id, uint64_t timestamp)
{
    struct capture_metrics_reading reading;
    capture_metrics_read(&reading);
    if (reading.new_set) {
        const size_t size = sizeof(struct capture_metric_set_record) +
                            reading.count * sizeof(struct capture_metric_definition);
        struct capture_metric_set_record *set = reserve(size, CAPTURE_RECORD_METRIC_SET);
        fill_header(&set->header, CAPTURE_RECORD_METRIC_SET, 0, size, timestamp);
        set->set_id = reading.set_id;
        set->count = reading.count;
        memcpy(set + 1, reading.definitions, reading.count * sizeof(struct capture_metric_definition));
    }
    if (!reading.count)
        return;
    const size_t size = sizeof(struct capture_metrics_record) + reading.count * sizeof(uint64_t);
    struct capture_metrics_record *record = reserve(size, CAPTURE_RECORD_METRICS);
    fill_header(&record->header, CAPTURE_RECORD_METRICS, function_id, size, timestamp);
    record->set_id = reading.set_id;
    record->count = reading.count;
    memcpy(record + 1, reading.values, reading.count * sizeof(uint64_t));
}

void capture_enter_at(int function_id, uint64_t timestamp)
{
    struct capture_record_header *header = reserve(sizeof(*header), CAPTURE_RECORD_ENTER);
    fill_header(header, CAPTURE_RECORD_ENTER, function_id, sizeof(*header), timestamp);
    capture_entered = timestamp;
    if (__builtin_expect(capture_metrics_on, 0))
        write_metrics(function_id, timestamp);
}

bool capture_enter(int function_id, uint32_t event_class)
{
    uint64_t now = capture_now();
    if (__builtin_expect(now >= __atomic_load_n(&capture_check_deadline, __ATOMIC_RELAXED), 0)) {
        /* Before the ENTER: a pause blocks here, before the call reaches PMPI, and a command that
         * turns this class off leaves the call unrecorded (enter and leave alike). */
        hooks.check(now);
        if (!capture_records(event_class))
            return false;
        now = capture_now();
    }
    capture_enter_at(function_id, now);
    return true;
}

void capture_write_recording(bool on, uint32_t reason, uint64_t timestamp)
{
    struct capture_recording_record *record = reserve(sizeof(*record), CAPTURE_RECORD_RECORDING);
    fill_header(&record->header, CAPTURE_RECORD_RECORDING, 0, sizeof(*record), timestamp);
    record->on = on ? 1u : 0u;
    record->reason = reason;
}

void capture_leave(int function_id)
{
    struct capture_record_header *header = reserve(sizeof(*header), CAPTURE_RECORD_LEAVE);
    const uint64_t now = capture_now();
    fill_header(header, CAPTURE_RECORD_LEAVE, function_id, sizeof(*header), now);
    if (__builtin_expect(capture_metrics_on, 0))
        write_metrics(function_id, now);
}

void capture_write_p2p(enum capture_record_kind kind, int function_id, uint32_t comm_id, int32_t peer,
                       int32_t tag, int64_t bytes, uint16_t request_kind, uint64_t request_id,
                       uint64_t sequence, uint64_t timestamp)
{
    struct capture_p2p_record *record = reserve(sizeof(*record), kind);
    fill_header(&record->header, kind, function_id, sizeof(*record), timestamp ? timestamp : capture_now());
    record->comm_id = comm_id;
    record->peer = peer;
    record->tag = tag;
    record->request_kind = request_kind;
    record->reserved = 0;
    record->bytes = bytes > 0 ? (uint64_t)bytes : 0;
    record->request = request_id;
    record->sequence = sequence;
}

void capture_collective(int function_id, const struct capture_collective_info *info)
{
    struct capture_collective_record *record = reserve(sizeof(*record), CAPTURE_RECORD_COLLECTIVE);
    fill_header(&record->header, CAPTURE_RECORD_COLLECTIVE, function_id, sizeof(*record), capture_now());
    record->comm_id = info->comm_id;
    record->root = info->root_world;
    record->bytes_sent = info->bytes_sent > 0 ? (uint64_t)info->bytes_sent : 0;
    record->bytes_received = info->bytes_received > 0 ? (uint64_t)info->bytes_received : 0;
    record->sequence = info->sequence;
}

static __attribute__((noinline)) void user_event_slow(enum capture_record_kind kind, const void *address,
                                                      uint64_t timestamp)
{
    struct capture_user_record *record = reserve(sizeof(*record), kind);
    fill_header(&record->header, kind, 0, sizeof(*record), timestamp);
    record->address = (uint64_t)(uintptr_t)address;
    if (__builtin_expect(capture_metrics_on, 0) && kind != CAPTURE_RECORD_NAMED_PHASE)
        write_metrics(0, timestamp);
}

/* The hooks' record (every instrumented call writes two): the common case — the thread's batch has room,
 * no metrics, no injected overhead — is a handful of stores with no call and no register saved; anything
 * else takes user_event_slow, which writes the same record. */
void capture_user_event_at(enum capture_record_kind kind, const void *address, uint64_t timestamp)
{
    struct thread_recorder *recorder = this_thread;
    if (__builtin_expect(!recorder || recorder->used + sizeof(struct capture_user_record) > recorder->limit ||
                             capture_injected_overhead_ns != 0 || capture_metrics_on,
                         0)) {
        user_event_slow(kind, address, timestamp);
        return;
    }
    struct capture_user_record *record = append(recorder, sizeof(*record));
    record->header.kind = (uint16_t)kind;
    record->header.function_id = 0;
    record->header.size = sizeof(*record);
    record->header.timestamp = timestamp;
    record->address = (uint64_t)(uintptr_t)address;
}

void capture_user_event(enum capture_record_kind kind, const void *address)
{
    capture_user_event_at(kind, address, capture_now());
}

void capture_throttled(uint64_t address, uint64_t calls, uint64_t mean_ns, uint64_t skipped)
{
    struct capture_throttle_record *record = reserve(sizeof(*record), CAPTURE_RECORD_THROTTLED);
    fill_header(&record->header, CAPTURE_RECORD_THROTTLED, 0, sizeof(*record), capture_now());
    record->address = address;
    record->calls = calls;
    record->mean_ns = mean_ns;
    record->skipped = skipped;
}

void capture_write_object(const char *path, uint64_t base)
{
    const size_t path_bytes = strlen(path) + 1;
    size_t size = (sizeof(struct capture_object_record) + path_bytes + 7) & ~(size_t)7;
    if (size > RECORD_CAPACITY)
        return;
    struct capture_object_record *record = reserve(size, CAPTURE_RECORD_OBJECT);
    memset(record, 0, size);
    fill_header(&record->header, CAPTURE_RECORD_OBJECT, 0, size, 0);
    record->base = base;
    record->path_bytes = (uint32_t)path_bytes;
    memcpy(record + 1, path, path_bytes);
}

void capture_write_name(uint32_t name_id, const char *name, size_t length)
{
    if (length > 4000)
        length = 4000; /* a name longer than that is cut, not refused */
    size_t size = (sizeof(struct capture_name_record) + length + 1 + 7) & ~(size_t)7;
    struct capture_name_record *record = reserve(size, CAPTURE_RECORD_NAME);
    memset(record, 0, size);
    fill_header(&record->header, CAPTURE_RECORD_NAME, 0, size, 0);
    record->name_id = name_id;
    record->name_bytes = (uint32_t)length + 1;
    memcpy(record + 1, name, length);
}

/* With the drop policy this never waits either: records that cannot leave now go with the next batch
 * (a flush's flag with them). */
static void send_now_inside(struct thread_recorder *recorder, uint16_t flags)
{
    if (recorder->dropping) {
        count_dropped(recorder);
        if (!capture_flush_ready(&recorder->in_flight)) {
            recorder->flush_owed |= flags == CAPTURE_BATCH_FLUSHED;
            return;
        }
        end_drop(recorder);
    }
    if (!recorder->used)
        return;
    if (drop_when_full && !capture_flush_ready(&recorder->in_flight)) {
        recorder->flush_owed |= flags == CAPTURE_BATCH_FLUSHED;
        return;
    }
    send_batch(recorder, flags);
}

static void send_now(uint16_t flags)
{
    struct thread_recorder *recorder = this_thread;
    if (!recorder)
        return;
    capture_tool_enter();
    send_now_inside(recorder, flags);
    capture_tool_exit();
}

void capture_send_now(void)
{
    send_now(0);
}

void capture_send_flushed(void)
{
    hooks.before_flushed_send();
    send_now(CAPTURE_BATCH_FLUSHED);
}

/* MPI_Finalize: a dropping thread's last batches must reach the place, so here even the drop policy
 * waits; not back-pressure the application could have avoided, so not counted as blocked time. */
static void finish_drop(struct thread_recorder *recorder)
{
    if (!recorder->dropping)
        return;
    count_dropped(recorder);
    if (recorder->in_flight != MPI_REQUEST_NULL)
        PMPI_Wait(&recorder->in_flight, MPI_STATUS_IGNORE);
    end_drop(recorder);
}

/* The thread's own recorder while it writes into a scratch buffer (one measurement at a time per
 * thread). */
static _Thread_local struct thread_recorder *scratch_saved, *scratch_recorder;

bool capture_recorder_scratch_begin(void *buffer, size_t bytes)
{
    struct thread_recorder *scratch = calloc(1, sizeof(*scratch));
    if (!scratch)
        return false;
    scratch->batches[0] = buffer;
    scratch->batches[1] = buffer;
    scratch->limit = bytes - sizeof(struct capture_batch_header);
    scratch->in_flight = MPI_REQUEST_NULL;
    scratch_saved = this_thread;
    scratch_recorder = scratch;
    this_thread = scratch;
    return true;
}

void capture_recorder_scratch_end(void)
{
    this_thread = scratch_saved;
    free(scratch_recorder);
    scratch_recorder = scratch_saved = NULL;
}

void capture_write_overhead(const struct capture_overhead_record *overhead)
{
    struct capture_overhead_record *record = reserve(sizeof(*record), CAPTURE_RECORD_OVERHEAD);
    *record = *overhead;
    fill_header(&record->header, CAPTURE_RECORD_OVERHEAD, 0, sizeof(*record), overhead->header.timestamp);
}

void capture_write_clock(uint64_t at_ticks, int64_t correction_ns, uint64_t round_trip_ns)
{
    struct capture_clock_record *record = reserve(sizeof(*record), CAPTURE_RECORD_CLOCK);
    fill_header(&record->header, CAPTURE_RECORD_CLOCK, 0, sizeof(*record), at_ticks);
    record->correction_ns = correction_ns;
    record->round_trip_ns = round_trip_ns;
}

void capture_phase(int function_id, int level)
{
    struct capture_phase_record *record = reserve(sizeof(*record), CAPTURE_RECORD_PHASE);
    fill_header(&record->header, CAPTURE_RECORD_PHASE, function_id, sizeof(*record), capture_now());
    record->level = level;
    record->reserved = 0;
}

void capture_write_comm(enum capture_record_kind kind, int function_id, const struct capture_comm *comm,
                        bool with_members)
{
    size_t members = with_members ? (size_t)comm->size + (size_t)comm->remote_size : 0;
    size_t size = sizeof(struct capture_comm_record) + members * sizeof(int32_t);
    size = (size + 7) & ~(size_t)7;
    if (size > RECORD_CAPACITY) {
        members = 0;
        size = sizeof(struct capture_comm_record);
    }
    struct capture_comm_record *record = reserve(size, kind);
    memset(record, 0, size);
    fill_header(&record->header, kind, function_id, size, capture_now());
    record->comm_id = comm->id;
    record->flags = comm->inter ? CAPTURE_COMM_INTER : 0;
    record->local_size = (uint32_t)comm->size;
    record->remote_size = (uint32_t)comm->remote_size;
    if (members) {
        int32_t *member = (int32_t *)(record + 1);
        memcpy(member, comm->local_world, (size_t)comm->size * sizeof(int32_t));
        if (comm->remote_size)
            memcpy(member + comm->size, comm->remote_world, (size_t)comm->remote_size * sizeof(int32_t));
    }
}

static void recorder_finish_inside(void);

void capture_recorder_finish(void)
{
    capture_tool_enter();
    recorder_finish_inside();
    capture_tool_exit();
}

static void recorder_finish_inside(void)
{
    struct thread_recorder *calling = this_thread;
    if (!calling)
        calling = create_thread_recorder();
    capture_recording = false;
    capture_record_mask = 0;
    /* Other threads are done with MPI by now (MPI_Finalize's rule): send what they left behind. */
    for (struct thread_recorder *recorder = all_threads; recorder; recorder = recorder->next) {
        if (recorder == calling)
            continue;
        finish_drop(recorder);
        if (drop_when_full && recorder->in_flight != MPI_REQUEST_NULL)
            PMPI_Wait(&recorder->in_flight, MPI_STATUS_IGNORE);
        if (recorder->used)
            send_batch(recorder, 0);
        capture_flush_wait(&recorder->in_flight);
    }
    finish_drop(calling);
    if (drop_when_full && calling->in_flight != MPI_REQUEST_NULL)
        PMPI_Wait(&calling->in_flight, MPI_STATUS_IGNORE);
    send_batch(calling, CAPTURE_BATCH_GOODBYE);
    capture_flush_wait(&calling->in_flight);
}

/* ---- a rank that dies (dying.c) ---------------------------------------------------------------------- */

/* A thread that never recorded has no buffers, and a dying process should not allocate (it may have
 * died inside malloc): its DIED record goes in this batch, as a thread of its own. */
static struct thread_recorder emergency_recorder;
static uint64_t emergency_batch[(2 * CAPTURE_BATCH_BYTES) / sizeof(uint64_t)];

static struct thread_recorder *recorder_for_dying_thread(void)
{
    if (this_thread)
        return this_thread;
    struct thread_recorder *recorder = &emergency_recorder;
    recorder->batches[0] = (unsigned char *)emergency_batch;
    recorder->batches[1] = (unsigned char *)emergency_batch + CAPTURE_BATCH_BYTES;
    recorder->in_flight = MPI_REQUEST_NULL;
    recorder->limit = RECORD_CAPACITY;
    recorder->thread_index = __atomic_fetch_add(&thread_count, 1, __ATOMIC_RELAXED);
    this_thread = recorder;
    return recorder;
}

/* Waits for a send at most until `deadline_ns` (CLOCK_MONOTONIC): a dying rank whose place does not take
 * its batches (gone itself, or stuck) must still end. */
static bool settle(MPI_Request *request, uint64_t deadline_ns)
{
    const struct timespec nap = {0, 100 * 1000};
    while (*request != MPI_REQUEST_NULL) {
        int done = 0;
        if (PMPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return false;
        if (done)
            return true;
        if (capture_monotonic_ns() >= deadline_ns)
            return false;
        nanosleep(&nap, NULL);
    }
    return true;
}

/* Sends what `recorder` holds (flags: the goodbye), its previous batch out of the way first. */
static bool send_last(struct thread_recorder *recorder, uint16_t flags, uint64_t deadline_ns)
{
    if (!settle(&recorder->in_flight, deadline_ns))
        return false;
    if (recorder->dropping) {
        count_dropped(recorder);
        end_drop(recorder); /* the previous batch has left: sends the full one and the DROPPED record */
        if (!settle(&recorder->in_flight, deadline_ns))
            return false;
    }
    if (recorder->used || flags)
        send_batch(recorder, flags);
    return settle(&recorder->in_flight, deadline_ns);
}

static void recorder_die_inside(const struct capture_died_record *death, bool last_record_torn);

bool capture_recorder_die(const struct capture_died_record *death, bool last_record_torn)
{
    static bool died;
    if (!capture_has_place || __atomic_exchange_n(&died, true, __ATOMIC_ACQ_REL))
        return false;
    capture_tool_enter();
    recorder_die_inside(death, last_record_torn);
    capture_tool_exit();
    return true;
}

static void recorder_die_inside(const struct capture_died_record *death, bool last_record_torn)
{
    capture_recording = false;
    capture_record_mask = 0;
    __atomic_store_n(&capture_check_deadline, UINT64_MAX, __ATOMIC_RELAXED); /* no steering any more */
    const uint64_t deadline_ns = capture_monotonic_ns() + 10ull * 1000 * 1000 * 1000;
    struct thread_recorder *calling = recorder_for_dying_thread();
    if (last_record_torn)
        calling->used = calling->complete;
    /* The other threads' records so far (a thread busy writing one may leave a torn record: the place
     * then drops that batch, as it drops any malformed one). */
    for (struct thread_recorder *recorder = all_threads; recorder; recorder = recorder->next)
        if (recorder != calling && !send_last(recorder, 0, deadline_ns))
            return;
    if (!settle(&calling->in_flight, deadline_ns))
        return;
    if (calling->dropping) {
        count_dropped(calling);
        end_drop(calling);
        if (!settle(&calling->in_flight, deadline_ns))
            return;
    }
    if (calling->used + sizeof(struct capture_died_record) > RECORD_CAPACITY) {
        send_batch(calling, 0);
        if (!settle(&calling->in_flight, deadline_ns))
            return;
    }
    struct capture_died_record *record = append(calling, sizeof(*record));
    *record = *death;
    fill_header(&record->header, CAPTURE_RECORD_DIED, death->header.function_id, sizeof(*record),
                capture_now());
    send_last(calling, CAPTURE_BATCH_GOODBYE, deadline_ns);
}

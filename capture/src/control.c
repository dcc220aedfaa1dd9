/*
 * control.c — steering on an application rank: the place's struct capture_control messages
 * (otfx/capture_wire.h) arrive on the tool communicator with CAPTURE_CONTROL_TAG from the rank's event
 * place; the rank carries each one out and answers it.
 *
 * No helper thread: one PMPI_Irecv is always posted, and the rank tests it (PMPI_Test) at check points,
 * at most about once per millisecond of its own activity. A check point compares a timestamp the rank
 * takes anyway with capture_check_deadline (one load and one compare per event, no system call):
 *   - every MPI wrapper on entry, before it calls PMPI (a recorded call: the ENTER's timestamp; an
 *     unrecorded one reads the timer once),
 *   - user-function enters and otfx.h regions/phases (their record's timestamp), on the thread that
 *     called MPI_Init (any thread with MPI_THREAD_MULTIPLE; none with MPI_THREAD_SERIALIZED, where
 *     another thread may be inside MPI at that moment),
 *   - after a batch was sent (same threads as user functions; it never blocks there).
 * The deadline is also the end of a RECORD_UNTIL window converted to ticks, so an expired window is
 * noticed by the first record past it, whatever thread writes it.
 *
 * APP_PAUSE blocks at the next check point that may block (an MPI wrapper before PMPI, a user-function
 * enter), answers once blocked and then waits for APP_RESUME testing the receive after 200 µs, the
 * wait doubling up to 5 ms (nanosleep: never a busy spin); other commands are carried out and answered
 * meanwhile. With MPI_THREAD_MULTIPLE the other threads block at their next check point too. A rank waiting
 * inside a blocking MPI call (for a message of a paused rank, in a collective with it) checks as well: with a
 * place, blocking point-to-point calls, blocking collectives, the Wait family and the probes run as
 * their nonblocking or Test form in a loop that checks between tests (gen_wrappers.py, steered.c), so
 * every rank answers APP_PAUSE even when its peers stopped first. A blocking call that must run as itself
 * (a reduction whose result depends on the order of application) waits first in a barrier on its
 * communicator: an APP_PAUSE arriving there is answered at once and carried out after the call, since
 * the other ranks may already be inside the call waiting for this one (pause_deferred).
 */
#include "control.h"
#include "clock_sync.h"
#include "metrics.h"
#include "nesting.h"
#include "overhead.h"
#include "recorder.h"
#include "steered.h"
#include "timer.h"
#include "transport.h"
#include "world.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A paused rank tests for APP_RESUME after this long first, the wait doubling up to the last. */
#define PAUSED_POLL_FIRST_NS (200L * 1000)
#define PAUSED_POLL_LAST_NS  (5L * 1000 * 1000)

/* Receive buffer larger than a message, so that a slightly longer one is reported, not truncated. */
static union {
    struct capture_control message;
    unsigned char bytes[2 * sizeof(struct capture_control)];
} incoming;
static MPI_Request control_request = MPI_REQUEST_NULL;
static int control_place = -1; /* world rank of this rank's event place */
static int control_app_rank;
static int thread_level = MPI_THREAD_SINGLE;
static _Thread_local bool is_init_thread;
/* Set while the thread waits in a guard's barrier (steered.h): an APP_PAUSE is answered at once and
 * carried out once the guarded blocking call is done. */
static _Thread_local bool pause_deferred;
static atomic_flag control_busy = ATOMIC_FLAG_INIT;
static atomic_bool app_paused;
static uint32_t enabled_classes = CAPTURE_CLASS_ALL;
static uint64_t window_end = UINT64_MAX; /* RECORD_UNTIL's end in ticks */
static uint64_t poll_interval = 1000000; /* ticks per millisecond */
static bool pause_pending;               /* APP_PAUSE seen where blocking was not allowed */
static struct capture_control pending_pause;
static bool measure_pending; /* MEASURE_OVERHEAD seen inside a batch send */
static struct capture_control pending_measure;
static bool malformed_reported;
static bool window_notice_due;           /* the window ended: tell the place (from where MPI may be called) */
static double clock_sync_seconds = 10.0; /* OTFX_CLOCK_SYNC */
static uint64_t clock_sync_interval;     /* in ticks; 0: never */
static uint64_t next_clock_sync = UINT64_MAX; /* ticks */
/* FLUSH reaches one thread, which sends its batch; every other thread sends what it holds at its next
 * check point: for two poll intervals after the command every record goes through one (deadline 0), and
 * a thread whose generation lags behind this one flushes there (or sends its batch if it fills first).
 * A thread that records nothing meanwhile flushes at its next record. Those batches are flagged
 * CAPTURE_BATCH_FLUSHED: the place can tell a flush that reached a thread from one that did not. */
static atomic_uint flush_generation;
static _Thread_local unsigned flushed_generation;
static _Atomic uint64_t everyone_checks_until; /* ticks */
/* FLUSH_EVERY: the period in ticks (0: none) and when the next one is due. */
static _Atomic uint64_t flush_period;
static _Atomic uint64_t next_periodic_flush;

static void post_receive(void)
{
    if (PMPI_Irecv(incoming.bytes, (int)sizeof(incoming.bytes), MPI_BYTE, control_place, CAPTURE_CONTROL_TAG,
                   capture_tool_comm, &control_request) != MPI_SUCCESS) {
        fprintf(stderr, "otfx-capture: rank %d cannot receive control messages from its place: aborting\n",
                control_app_rank);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static uint32_t state_bits(void)
{
    return (capture_recording ? CAPTURE_STATE_RECORDING : 0u) | (app_paused ? CAPTURE_STATE_PAUSED : 0u);
}

static void answer(const struct capture_control *command)
{
    struct capture_control reply = *command;
    reply.state = state_bits();
    reply.classes = enabled_classes;
    /* 32 bytes: eager, PMPI_Send returns at once. */
    PMPI_Send(&reply, (int)sizeof(reply), MPI_BYTE, control_place, CAPTURE_CONTROL_TAG, capture_tool_comm);
}

/* SET_METRICS, PROBE_METRICS: the answer says what the rank counts and why it cannot count the rest. */
static void answer_metrics(const struct capture_control *command)
{
    struct capture_metrics_answer reply;
    memset(&reply, 0, sizeof reply);
    reply.control = *command;
    reply.control.state = state_bits();
    reply.control.classes = enabled_classes;
    capture_metrics_probe(command->command == CAPTURE_CONTROL_PROBE_METRICS ? command->argument : 0, &reply);
    /* under 200 bytes: eager, PMPI_Send returns at once */
    PMPI_Send(&reply, (int)sizeof(reply), MPI_BYTE, control_place, CAPTURE_CONTROL_TAG, capture_tool_comm);
}

/* Recording on/off and the enabled classes; a RECORDING record marks each switch of recording in the
 * stream of the thread doing it. */
static void apply_state(bool recording, uint32_t classes, uint32_t reason, uint64_t now)
{
    const bool was_recording = capture_recording;
    if (was_recording && !recording)
        capture_write_recording(false, reason, now);
    enabled_classes = classes & CAPTURE_CLASS_ALL;
    capture_recording = recording;
    __atomic_store_n(&capture_record_mask, recording ? enabled_classes : 0u, __ATOMIC_RELAXED);
    if (!was_recording && recording)
        capture_write_recording(true, reason, capture_now());
}

static uint64_t place_ns_to_ticks(uint64_t place_ns)
{
    const struct capture_clock_calibration clock = capture_timer_calibration();
    const double local_ns = (double)place_ns - (double)clock.offset_ns;
    const double ticks = (double)clock.ref_ticks + (local_ns - (double)clock.ref_ns) / clock.ns_per_tick;
    if (ticks <= 0)
        return 0;
    if (ticks >= 1.8e19)
        return UINT64_MAX - 1;
    return (uint64_t)ticks;
}

static bool valid(const struct capture_control *message, int bytes)
{
    return bytes == (int)sizeof(*message) && message->magic == CAPTURE_BATCH_MAGIC &&
           message->version == CAPTURE_BATCH_VERSION && message->command >= CAPTURE_CONTROL_RECORD_ON &&
           message->command <= CAPTURE_CONTROL_LAST;
}

static void wait_while_paused(void);

/* Paused from now on: every thread's next check (deadline 0) or user-function exit waits, so that
 * nothing is recorded after the answer. */
static void block_other_threads(void)
{
    atomic_store(&app_paused, true);
    __atomic_store_n(&capture_check_deadline, 0, __ATOMIC_SEQ_CST);
}

/* FLUSH on this thread (its batch now) and every other recording thread at its next check point. */
static void flush_everyone(uint64_t now)
{
    capture_send_flushed();
    flushed_generation = atomic_fetch_add(&flush_generation, 1) + 1;
    atomic_store(&everyone_checks_until, now + 2 * poll_interval);
}

/* Carries out one command; APP_PAUSE blocks here when `may_block`, else waits for the next check point. */
static void carry_out(const struct capture_control *command, bool may_block)
{
    const uint64_t now = capture_now();
    switch ((enum capture_control_command)command->command) {
    case CAPTURE_CONTROL_RECORD_ON:
        window_end = UINT64_MAX;
        apply_state(true, enabled_classes, CAPTURE_RECORDING_COMMAND, now);
        break;
    case CAPTURE_CONTROL_RECORD_OFF:
        window_end = UINT64_MAX;
        apply_state(false, enabled_classes, CAPTURE_RECORDING_COMMAND, now);
        break;
    case CAPTURE_CONTROL_RECORD_UNTIL:
        window_end = place_ns_to_ticks(command->argument);
        apply_state(true, enabled_classes, CAPTURE_RECORDING_COMMAND, now);
        break;
    case CAPTURE_CONTROL_APP_PAUSE:
        if (atomic_load(&app_paused))
            break; /* already blocked: answered at once */
        if (!may_block) {
            pause_pending = true;
            pending_pause = *command;
            return; /* answered once blocked */
        }
        block_other_threads();
        answer(command);
        if (!pause_deferred)
            wait_while_paused();
        return;
    case CAPTURE_CONTROL_APP_RESUME:
        pause_pending = false;
        atomic_store(&app_paused, false);
        break;
    case CAPTURE_CONTROL_SET_CLASSES:
        apply_state(capture_recording, (uint32_t)command->argument, CAPTURE_RECORDING_COMMAND, now);
        break;
    case CAPTURE_CONTROL_FLUSH:
        flush_everyone(now);
        break;
    case CAPTURE_CONTROL_MEASURE_OVERHEAD:
        if (!may_block) { /* inside a batch send the recorder is busy: at the next check point */
            measure_pending = true;
            pending_measure = *command;
            return;
        }
        capture_overhead_remeasure();
        break;
    case CAPTURE_CONTROL_SET_METRICS:
        capture_metrics_select(command->argument);
        answer_metrics(command);
        return;
    case CAPTURE_CONTROL_PROBE_METRICS:
        answer_metrics(command);
        return;
    case CAPTURE_CONTROL_FLUSH_EVERY: {
        const struct capture_clock_calibration clock = capture_timer_calibration();
        const double ticks = (double)command->argument / (clock.ns_per_tick > 0 ? clock.ns_per_tick : 1.0);
        atomic_store(&flush_period, command->argument ? (uint64_t)ticks + 1 : 0);
        atomic_store(&next_periodic_flush, now + atomic_load(&flush_period));
        break;
    }
    }
    answer(command);
}

/* Tests the receive until it holds nothing more. After an APP_PAUSE that waits for the next check
 * point, later commands wait too: answers go out in the order of the commands (rank_control.c takes the
 * highest sequence answered for all before it). */
static void poll_messages(bool may_block)
{
    while (control_request != MPI_REQUEST_NULL && !pause_pending && !measure_pending) {
        int flag = 0, bytes = 0;
        MPI_Status status;
        const int result = PMPI_Test(&control_request, &flag, &status);
        if (result == MPI_SUCCESS && !flag)
            return;
        control_request = MPI_REQUEST_NULL;
        if (result == MPI_SUCCESS)
            PMPI_Get_count(&status, MPI_BYTE, &bytes);
        struct capture_control command;
        memcpy(&command, incoming.bytes, sizeof(command));
        post_receive();
        if (result != MPI_SUCCESS || !valid(&command, bytes)) {
            if (!malformed_reported)
                fprintf(stderr,
                        "otfx-capture: rank %d: malformed control message from the place ignored (%d bytes); "
                        "further ones are ignored silently\n",
                        control_app_rank, result == MPI_SUCCESS ? bytes : -1);
            malformed_reported = true;
            continue;
        }
        carry_out(&command, may_block);
    }
}

/* Blocked by APP_PAUSE (or OTFX_START_PAUSED): carries out commands until APP_RESUME. */
static void wait_while_paused(void)
{
    /* The wait grows while nothing comes: a paused job of many ranks on few cores would otherwise wake
     * thousands of times a second per rank and starve the places it was paused for. */
    long pause_ns = PAUSED_POLL_FIRST_NS;
    while (atomic_load(&app_paused)) {
        poll_messages(false);
        if (!atomic_load(&app_paused))
            break;
        const struct timespec pause = {0, pause_ns};
        nanosleep(&pause, NULL);
        if (pause_ns < PAUSED_POLL_LAST_NS)
            pause_ns = pause_ns * 2 < PAUSED_POLL_LAST_NS ? pause_ns * 2 : PAUSED_POLL_LAST_NS;
    }
}

/* RECORD_UNTIL's end passed: recording off, and the place told so (its state of the rank would say
 * "recording" otherwise) by an unsolicited answer, sequence 0. */
static void end_window_if_due(uint64_t now)
{
    if (now < window_end)
        return;
    window_end = UINT64_MAX;
    if (capture_recording) {
        apply_state(false, enabled_classes, CAPTURE_RECORDING_WINDOW_END, now);
        window_notice_due = true;
    }
}

static void send_window_notice(void)
{
    if (!window_notice_due)
        return;
    window_notice_due = false;
    const struct capture_control notice = {
        .magic = CAPTURE_BATCH_MAGIC,
        .version = CAPTURE_BATCH_VERSION,
        .command = CAPTURE_CONTROL_RECORD_UNTIL,
        .sequence = 0,
    };
    answer(&notice);
}

/* Re-measures the clock against the place (capture_measure_correction) and puts the point into the
 * calling thread's stream; the place interpolates between such points. A measurement too imprecise to
 * use is tried again after a tenth of the interval. */
static void resync_clock(uint64_t now)
{
    uint64_t at_ticks = now;
    int64_t correction = 0;
    uint64_t round_trip = 0;
    if (capture_measure_correction(&at_ticks, &correction, &round_trip)) {
        capture_write_clock(at_ticks, correction, round_trip);
        next_clock_sync = capture_ticks() + clock_sync_interval;
    } else {
        next_clock_sync = capture_ticks() + clock_sync_interval / 10;
    }
}

static void update_deadline(uint64_t now)
{
    uint64_t deadline = now + poll_interval;
    if (window_end < deadline)
        deadline = window_end;
    if (pause_pending || measure_pending || atomic_load(&app_paused) ||
        now < atomic_load(&everyone_checks_until))
        deadline = 0;
    __atomic_store_n(&capture_check_deadline, deadline, __ATOMIC_RELAXED);
}

bool capture_control_flush_due(void)
{
    const unsigned generation = atomic_load_explicit(&flush_generation, memory_order_relaxed);
    if (generation == flushed_generation)
        return false;
    flushed_generation = generation;
    return true;
}

static void check_inside(uint64_t now, bool mpi_call);

/* A check sends batches and answers and may measure the clock: inside the tool (nesting.h). */
static void check(uint64_t now, bool mpi_call)
{
    capture_tool_enter();
    check_inside(now, mpi_call);
    capture_tool_exit();
}

static void check_inside(uint64_t now, bool mpi_call)
{
    if ((mpi_call || thread_level == MPI_THREAD_MULTIPLE) && capture_control_flush_due())
        capture_send_flushed();
    if (atomic_flag_test_and_set_explicit(&control_busy, memory_order_acquire)) {
        if (pause_deferred)
            return; /* a guard's barrier must go on (steered.h) */
        /* Another thread is checking (MPI_THREAD_MULTIPLE): if it paused the application, wait too. */
        const struct timespec pause = {0, 200 * 1000};
        while (atomic_load(&app_paused))
            nanosleep(&pause, NULL);
        return;
    }
    if (capture_deadline() == UINT64_MAX) { /* stopped meanwhile (MPI_Finalize) */
        atomic_flag_clear_explicit(&control_busy, memory_order_release);
        return;
    }
    end_window_if_due(now);
    /* MPI calls may always test (the application may call MPI now); user functions and batch sends only
     * where no other thread can be inside MPI. */
    const bool may_poll = mpi_call || thread_level == MPI_THREAD_MULTIPLE ||
                          (is_init_thread && thread_level < MPI_THREAD_SERIALIZED);
    if (may_poll) {
        if (now >= next_clock_sync && !atomic_load(&app_paused)) /* paused in a guard: nothing recorded */
            resync_clock(now);
        send_window_notice();
        const uint64_t period = atomic_load(&flush_period);
        if (period && now >= atomic_load(&next_periodic_flush)) {
            atomic_store(&next_periodic_flush, now + period);
            flush_everyone(now);
        }
        if (measure_pending) {
            measure_pending = false;
            capture_overhead_remeasure();
            answer(&pending_measure);
        }
        poll_messages(true);
        if (pause_pending) {
            pause_pending = false;
            block_other_threads();
            answer(&pending_pause);
            if (!pause_deferred)
                wait_while_paused();
        }
        /* Paused while a guarded call was under way (this thread's or another's): blocks here. */
        if (!pause_deferred && atomic_load(&app_paused))
            wait_while_paused();
    }
    update_deadline(capture_now());
    atomic_flag_clear_explicit(&control_busy, memory_order_release);
}

void capture_control_check(uint64_t now)
{
    check(now, true);
}

/* User-function enters and otfx.h (user_functions.c). */
void capture_control_check_user(uint64_t now)
{
    check(now, false);
}

/* User-function exits (user_functions.c): no command is carried out there (the exit of a recorded
 * enter is always recorded), but a thread waits while the application is paused. */
void capture_control_pause_point(void)
{
    const struct timespec pause = {0, 200 * 1000};
    while (atomic_load(&app_paused))
        nanosleep(&pause, NULL);
}

void capture_wait_pause_point(int *polls)
{
    const uint64_t now = capture_ticks();
    if (now >= capture_deadline())
        capture_control_check(now);
    /* A waiting rank leaves the core to others: a yield every 10 tests (as MPICH's blocking wait with
     * MPIR_CVAR_POLLS_BEFORE_YIELD=10), and once it has waited for 1000 tests a 20 µs sleep per turn,
     * so that an oversubscribed node (more ranks than cores) keeps its other processes running. */
    ++*polls;
    if (*polls >= 1000) {
        const struct timespec pause = {0, 20 * 1000};
        nanosleep(&pause, NULL);
        *polls = 1000;
    } else if (*polls % 10 == 0) {
        sched_yield();
    }
}

void capture_guard_pause_point(int *polls)
{
    pause_deferred = true;
    capture_wait_pause_point(polls);
    pause_deferred = false;
    if (atomic_load(&app_paused)) {
        /* Answered as paused: the barrier is still waited for, but at the pace of a paused rank. */
        const struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
    }
}

void capture_pause_if_paused(void)
{
    if (atomic_load(&app_paused))
        capture_control_check(capture_ticks());
}

/* Called from a batch send, already inside the tool (nesting.h). */
void capture_control_check_at_flush(void)
{
    if (capture_deadline() == UINT64_MAX)
        return; /* no steering: no place, or stopped */
    if (atomic_flag_test_and_set_explicit(&control_busy, memory_order_acquire))
        return; /* a check is under way (it may be what sent this batch) */
    const uint64_t now = capture_now();
    if (capture_deadline() != UINT64_MAX && now >= capture_deadline()) {
        end_window_if_due(now);
        if (thread_level == MPI_THREAD_MULTIPLE || (is_init_thread && thread_level < MPI_THREAD_SERIALIZED)) {
            send_window_notice();
            poll_messages(false);
        }
        update_deadline(capture_now());
    }
    atomic_flag_clear_explicit(&control_busy, memory_order_release);
}

void capture_control_set_clock_sync(double seconds)
{
    clock_sync_seconds = seconds;
}

void capture_control_start(int app_rank, int level, bool recording, uint32_t classes, bool start_paused)
{
    control_app_rank = app_rank;
    control_place = capture_own_place;
    thread_level = level;
    is_init_thread = true;
    const struct capture_clock_calibration clock = capture_timer_calibration();
    poll_interval = (uint64_t)(1e6 / (clock.ns_per_tick > 0 ? clock.ns_per_tick : 1.0));
    if (!poll_interval)
        poll_interval = 1;
    clock_sync_interval =
        (uint64_t)(clock_sync_seconds * 1e9 / (clock.ns_per_tick > 0 ? clock.ns_per_tick : 1.0));
    /* The first re-synchronisation comes after half a second at most: the 20 ms calibration leaves a rate
     * error of ~10⁻⁷ (drift_ns: ~1 µs after 4 s of capture-bench, more than a shared-memory message
     * takes, so receives appeared to end before their sends started), and from two measurements on the
     * place's model follows the measured drift instead. */
    const uint64_t first_sync = (uint64_t)(0.5e9 / (clock.ns_per_tick > 0 ? clock.ns_per_tick : 1.0));
    next_clock_sync =
        !clock_sync_interval
            ? UINT64_MAX
            : capture_now() + (clock_sync_interval < first_sync ? clock_sync_interval : first_sync);
    /* A malformed message must not abort the job: errors come back as codes on this communicator. */
    PMPI_Comm_set_errhandler(capture_tool_comm, MPI_ERRORS_RETURN);
    post_receive();
    enabled_classes = classes & CAPTURE_CLASS_ALL;
    capture_recording = recording;
    capture_record_mask = recording ? enabled_classes : 0u;
    if (start_paused)
        atomic_store(&app_paused, true);
    if (enabled_classes != CAPTURE_CLASS_ALL) {
        /* OTFX_DISABLE: the place assumes every class enabled; news (sequence 0) tells it otherwise. */
        const struct capture_control notice = {
            .magic = CAPTURE_BATCH_MAGIC,
            .version = CAPTURE_BATCH_VERSION,
            .command = CAPTURE_CONTROL_SET_CLASSES,
            .sequence = 0,
            .argument = enabled_classes,
        };
        answer(&notice);
    }
    if (start_paused) /* the place knows (OTFX_START_PAUSED): nothing to answer until it sends something */
        wait_while_paused();
    update_deadline(capture_now());
}

void capture_control_stop(void)
{
    const struct timespec pause = {0, 50 * 1000};
    /* Other threads are done with MPI by MPI_Finalize; a check still in progress ends quickly. */
    while (atomic_flag_test_and_set_explicit(&control_busy, memory_order_acquire))
        nanosleep(&pause, NULL);
    __atomic_store_n(&capture_check_deadline, UINT64_MAX, __ATOMIC_RELAXED);
    if (control_request != MPI_REQUEST_NULL) {
        /* A command that arrived just now stays unanswered: the goodbye batch answers it (rank_control.h). */
        PMPI_Cancel(&control_request);
        PMPI_Wait(&control_request, MPI_STATUS_IGNORE);
    }
    atomic_flag_clear_explicit(&control_busy, memory_order_release);
}

/*
 * recorder.h — the records (private to libotfx-capture): per-thread batches of fixed-size records.
 *
 * The hot path (enter/leave, payload records) appends a record to a per-thread buffer: no system call
 * (rdtsc, or CLOCK_MONOTONIC from the vDSO: timer.h), no lock, no malloc except once per thread. A full
 * buffer goes to capture_flush() (transport.h) as one batch; see otfx/capture_wire.h. Wrappers call these
 * only on application ranks with places configured (capture_is_recording()). The bookkeeping around the
 * records — requests, channels, communicators — is in requests.h, channels.h and communicators.h.
 */
#ifndef OTFX_CAPTURE_RECORDER_H
#define OTFX_CAPTURE_RECORDER_H

#include "linkage.h"
#include "nesting.h"
#include "timer.h"
#include <otfx/capture_wire.h>

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Set between the world split in MPI_Init and MPI_Finalize on application ranks with places while
 * recording is on (OTFX_RECORD=0 starts with it off; steering turns it on and off: control.c). */
CAPTURE_INTERNAL extern bool capture_recording;
/* What the wrappers test, one load and one bit test per call: the enabled event classes
 * (enum capture_event_class) while recording, 0 while not (and in pass-through mode). Steering
 * (control.c apply_state) sets it; the recorder clears it when it stops. */
CAPTURE_INTERNAL extern uint32_t capture_record_mask;
/* Set from the world split on application ranks that have a place, recording or not: they must send
 * their goodbye batch in MPI_Finalize, or their place would wait for ever. */
CAPTURE_INTERNAL extern bool capture_has_place;
static inline bool capture_is_recording(void)
{
    return __builtin_expect(capture_recording, 0);
}
static inline bool capture_records(uint32_t event_class)
{
    return __builtin_expect((capture_record_mask & event_class) != 0, 0);
}

/* The next time (raw ticks) at which the rank must look at its control channel or end a RECORD_UNTIL
 * window: UINT64_MAX without a place (pass-through, before the split, after MPI_Finalize began). Every
 * check point compares a timestamp it has anyway with it: one load and one compare per event. Steering
 * sets it (control.c; read it with control.h's capture_deadline); it is the recorder's because a recorded
 * MPI call's ENTER is a check point: capture_enter compares and, when it has passed, calls the check
 * through the hooks (capture_recorder_hooks, below) — steering is above the recorder. */
CAPTURE_INTERNAL extern uint64_t capture_check_deadline;

/* Records the ENTER of an MPI function of class `event_class` (after the check point): false when the
 * check turned recording or the class off (or the window ended): then nothing was written and the
 * wrapper calls PMPI untraced. */
CAPTURE_INTERNAL bool capture_enter(int function_id, uint32_t event_class);
CAPTURE_INTERNAL void capture_leave(int function_id);
/* The timestamp of this thread's last ENTER record (capture_enter_at sets it): a wrapper reads it before
 * its PMPI call and gives it to the send it records (otfx/capture_wire.h, CAPTURE_RECORD_SEND). */
CAPTURE_INTERNAL extern _Thread_local __attribute__((tls_model("initial-exec"))) uint64_t capture_entered;
/* A RECORDING record (control.c, when it turns recording on or off). */
CAPTURE_INTERNAL void capture_write_recording(bool on, uint32_t reason, uint64_t timestamp);

/* Collectives. */
struct capture_collective_info {
    uint32_t comm_id;
    int32_t root_world;
    int64_t bytes_sent;
    int64_t bytes_received;
    uint64_t sequence; /* instance ordinal on the communicator (capture_collective_next) */
};
CAPTURE_INTERNAL void capture_collective(int function_id, const struct capture_collective_info *info);
/* MPI_Pcontrol(level): a phase marker. */
CAPTURE_INTERNAL void capture_phase(int function_id, int level);

/* User functions and otfx.h (user_functions.c): USER_ENTER/USER_LEAVE with the function's address, the
 * load map as OBJECT records, otfx.h's NAME records; capture_send_now sends the calling thread's records
 * at once (the load map must reach the place before any other thread's batch). */
CAPTURE_INTERNAL void capture_user_event(enum capture_record_kind kind, const void *address);
CAPTURE_INTERNAL void capture_user_event_at(enum capture_record_kind kind, const void *address,
                                            uint64_t timestamp);
/* A function was throttled (skipped 0: just now) or, at MPI_Finalize, how many calls it skipped. */
CAPTURE_INTERNAL void capture_throttled(uint64_t address, uint64_t calls, uint64_t mean_ns, uint64_t skipped);
CAPTURE_INTERNAL void capture_write_object(const char *path, uint64_t base);
CAPTURE_INTERNAL void capture_send_now(void);
/* The same for a FLUSH from the place (control.c): the batch is flagged CAPTURE_BATCH_FLUSHED; with the
 * drop policy and the previous batch still in flight, the thread's next batch carries the flag. */
CAPTURE_INTERNAL void capture_send_flushed(void);
/* otfx.h's names: the definition of this thread's name id (NAME record). */
CAPTURE_INTERNAL void capture_write_name(uint32_t name_id, const char *name, size_t length);

/* A CLOCK record (control.c, after a re-synchronisation: clock_sync.h). */
CAPTURE_INTERNAL void capture_write_clock(uint64_t at_ticks, int64_t correction_ns, uint64_t round_trip_ns);
/* Point-to-point records share one layout (requests.c builds on it); a timestamp of 0 means now. */
CAPTURE_INTERNAL void capture_write_p2p(enum capture_record_kind kind, int function_id, uint32_t comm_id,
                                        int32_t peer, int32_t tag, int64_t bytes, uint16_t request_kind,
                                        uint64_t request_id, uint64_t sequence, uint64_t timestamp);
/* Communicator definitions (communicators.c) are variable-sized; a communicator larger than a batch is
 * announced with its sizes only (members cut) rather than failing. */
struct capture_comm;
CAPTURE_INTERNAL void capture_write_comm(enum capture_record_kind kind, int function_id,
                                         const struct capture_comm *comm, bool with_members);

/* The recorder is below steering (control.c) and the user functions' load map (user_functions.c) and
 * calls them only through these hooks, which the world split sets with capture_recorder_start: when a
 * check point's deadline passed and around the send of a full batch, never per record (as LTTng-UST and
 * libevent call the layers above them through callbacks registered at start-up). */
struct capture_recorder_hooks {
    /* A recorded MPI call's ENTER found capture_check_deadline passed (capture_control_check): before
     * the ENTER, so a pause blocks before PMPI and a class turned off leaves the call unrecorded. */
    void (*check)(uint64_t now);
    /* Whether this thread owes a FLUSH (capture_control_flush_due): the full batch is flagged
     * CAPTURE_BATCH_FLUSHED. */
    bool (*flush_due)(void);
    /* Objects loaded since the load map was written (capture_load_map_changed): it is written again
     * (capture_write_load_map) at the head of the next batch. */
    bool (*load_map_changed)(void);
    void (*write_load_map)(void);
    /* The batch send's check point (capture_control_check_at_flush; never blocks): it may write
     * RECORDING records before the record that did not fit. */
    void (*check_at_flush)(void);
    /* Before a FLUSH's batch is sent (capture_send_flushed): what the thread owes the place with it, the
     * throttled functions' counts (capture_user_functions_report_skipped). */
    void (*before_flushed_send)(void);
};

/* Recorder life cycle: start after the world split (world_split.c), stop in MPI_Finalize by
 * sending every thread's remaining records, the calling thread's batch flagged as goodbye (the throttled
 * functions' counts, capture_user_functions_finish, are written before).
 * drop_when_full (OTFX_BACKPRESSURE=drop): a thread whose batch is full while the previous one is still
 * being sent does not wait; it drops its records (keeping the definition-like ones, otfx/capture_wire.h's
 * CAPTURE_RECORD_DROPPED) until that send completes, then sends a DROPPED record saying what it lost.
 * The hot path is the same in both policies: one compare against the thread's batch limit, which is 0
 * while dropping. */
CAPTURE_INTERNAL void capture_recorder_start(int app_rank, bool recording, bool drop_when_full,
                                             const struct capture_recorder_hooks *hooks);
CAPTURE_INTERNAL void capture_recorder_finish(void);
/* The rank ends without MPI_Finalize (dying.c): what every thread recorded goes to the place now, the
 * calling thread's batch last, ending with a CAPTURE_RECORD_DIED record and flagged as goodbye; nothing
 * is recorded afterwards. `last_record_torn`: the calling thread was interrupted inside the recorder, so
 * its last record may be half written and is left out. Once only (false the second time, or without a
 * place). Calls MPI: the caller bounds how long it may take (dying.c). */
CAPTURE_INTERNAL bool capture_recorder_die(const struct capture_died_record *death, bool last_record_torn);
/* Overhead measurement (overhead.c). capture_recorder_scratch_begin sends this thread's records to
 * `buffer` (`bytes` long, at least a batch header more than the records written before the end) until
 * capture_recorder_scratch_end, which puts the thread's own batch back; the scratch is never sent, so
 * the caller keeps what it writes below its size (false: out of memory, nothing changed).
 * capture_write_overhead writes the OVERHEAD record. */
CAPTURE_INTERNAL bool capture_recorder_scratch_begin(void *buffer, size_t bytes);
CAPTURE_INTERNAL void capture_recorder_scratch_end(void);
CAPTURE_INTERNAL void capture_write_overhead(const struct capture_overhead_record *overhead);
/* OTFX_TEST_OVERHEAD_NS (overhead.c sets both; 0 unless a test asks): every record
 * capture_overhead_injected names is followed, after its timestamp, by capture_injected_overhead_loops
 * turns of capture_spin_loops, work that takes capture_injected_overhead_ns on an undisturbed core, and
 * never less than that many ns (recorder.c, inject_overhead). One predictable branch per record. */
CAPTURE_INTERNAL extern uint32_t capture_injected_overhead_ns;
CAPTURE_INTERNAL extern uint64_t capture_injected_overhead_loops;
/* `turns` turns of a loop of register arithmetic: fixed work, no memory, no system call. */
CAPTURE_INTERNAL void capture_spin_loops(uint64_t turns);

/* A record timestamp in raw ticks (timer.h); the place converts them with the batch's calibration. */
static inline uint64_t capture_now(void)
{
    return capture_ticks();
}
/* Enter/leave with an explicit timestamp (MPI_Init is entered before the recorder exists). */
CAPTURE_INTERNAL void capture_enter_at(int function_id, uint64_t timestamp);

#endif

/*
 * recorder.h — what every MPI wrapper calls (private to libotfx-capture).
 *
 * The hot path (enter/leave, payload records) appends a fixed-size record to a per-thread buffer:
 * no system call (rdtsc, or CLOCK_MONOTONIC from the vDSO: timer.h), no lock, no malloc except once per
 * thread. A full buffer goes to capture_flush() (transport.c) as one batch; see otfx/capture_wire.h. Wrappers
 * call these only on application ranks with places configured (capture_is_recording()).
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
 * (enum capture_event_class) while recording, 0 while not (and in pass-through mode). Written only by
 * control.c (capture_control_apply_state). */
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

/* ---- steering checks (control.c) ------------------------------------------------------------------
 * The next time (raw ticks) at which the rank must look at its control channel or end a RECORD_UNTIL
 * window: UINT64_MAX without a place (pass-through, before the split, after MPI_Finalize began). Every
 * check point compares a timestamp it has anyway with it: one load and one compare per event. */
CAPTURE_INTERNAL extern uint64_t capture_check_deadline;
/* Threads read it while the control thread moves it: a relaxed atomic load (a plain load on x86). */
static inline uint64_t capture_deadline(void)
{
    return __atomic_load_n(&capture_check_deadline, __ATOMIC_RELAXED);
}
/* Slow paths, taken when a timestamp reached the deadline. At a check point (an MPI wrapper before it
 * calls PMPI, a user-function enter): polls the control channel (if this thread may: the thread that
 * called MPI_Init, or any with MPI_THREAD_MULTIPLE), carries out commands, blocks while the application
 * is paused, ends an expired window. */
CAPTURE_INTERNAL void capture_control_check(uint64_t now);
/* OTFX_CLOCK_SYNC (manual_wrappers.c reads it, control.c re-measures the clock that often at a check
 * point where MPI may be called). */
CAPTURE_INTERNAL void capture_control_set_clock_sync(double seconds);
CAPTURE_INTERNAL bool capture_measure_correction(uint64_t *at_ticks, int64_t *correction_ns);
CAPTURE_INTERNAL void capture_write_clock(uint64_t at_ticks, int64_t correction_ns);
/* The same after a batch was sent from inside a record (never blocks: a pause waits for the next check
 * point). */
CAPTURE_INTERNAL void capture_control_check_at_flush(void);
/* An MPI wrapper that records nothing (recording off or its class disabled) still checks. */
static inline void capture_untraced_check(void)
{
    if (__builtin_expect(capture_deadline() != UINT64_MAX, 0)) {
        const uint64_t now = capture_ticks();
        if (now >= capture_deadline())
            capture_control_check(now);
    }
}
/* Blocking MPI calls with a place run as nonblocking calls (or Test/Iprobe forms) in a loop that checks
 * between tests (gen_wrappers.py STEERED_TEST_FORMS, nonblocking_variant): a rank waiting for a paused
 * rank notices APP_PAUSE itself. Without a place (and from MPI_Finalize on) they are the plain call. */
static inline bool capture_steering_waits(void)
{
    return __builtin_expect(capture_deadline() != UINT64_MAX, 0);
}
/* One turn of such a loop that found nothing done: the check when due, and the core yielded every few
 * turns (as MPICH's own blocking wait does with MPIR_CVAR_POLLS_BEFORE_YIELD). */
CAPTURE_INTERNAL void capture_wait_pause_point(int *polls);
/* The loops themselves: steered.h. */
/* control.c life cycle (manual_wrappers.c): start after the world split with the enabled event classes
 * (OTFX_DISABLE; posts the receive; blocks until APP_RESUME with OTFX_START_PAUSED=1), stop in
 * MPI_Finalize before the goodbye batch (cancels the receive). */
CAPTURE_INTERNAL void capture_control_start(int app_rank, int thread_level, bool recording, uint32_t classes,
                                            bool start_paused);
CAPTURE_INTERNAL void capture_control_stop(void);

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

/* ---- point-to-point payloads and requests (requests.c) ---------------------------------------------
 * Every function below does the rank's bookkeeping — message ordinals per channel (channels.c), the
 * request table, matched-probe messages — and writes records only when `record` is true. The wrappers
 * call them with record = false when the call is not recorded (recording off or paused, its class
 * disabled) but the rank has a place (capture_has_place): the n-th send of a channel must stay the n-th
 * receive at the other end however recording was steered on either rank, and every request MPI hands out
 * keeps its table entry until it completes, so no completion is ever matched to a stale entry. Without a
 * place (pass-through) the wrappers call PMPI only. Peers are ranks of `comm` (already translated to the
 * application's world); the functions translate them. `entered`: the call's ENTER timestamp
 * (capture_entered; anything when record is false), the time of the sends it records. */

/* A blocking call sent / received a message. */
CAPTURE_INTERNAL void capture_p2p_send(int function_id, MPI_Comm comm, int dest, int tag, int64_t bytes,
                                       uint64_t entered, bool record);
/* `source` as posted: a receive from MPI_PROC_NULL carries no message whatever its status says (with a place
 * MPI_Recv runs as MPI_Irecv and a test loop, and MPICH 4.0.2 then reports source 0, tag 0). */
CAPTURE_INTERNAL void capture_p2p_recv(int function_id, MPI_Comm comm, int source, const MPI_Status *status,
                                       bool record);
/* The receive of MPI_Sendrecv(_replace): with a place it runs as MPI_Isendrecv, whose status MPICH 4.0.2
 * does not fill, so it is recorded with the source, tag and bytes posted (the status's source and tag for
 * wildcards; requests.c, sendrecv_received). */
CAPTURE_INTERNAL void capture_p2p_sendrecv_received(int function_id, MPI_Comm comm, int source, int tag,
                                                    int64_t posted_bytes, const MPI_Status *status,
                                                    bool record);
CAPTURE_INTERNAL void capture_probe(int function_id, MPI_Comm comm, const MPI_Status *status,
                                    MPI_Message message, bool record);

/* Requests: a nonblocking or persistent point-to-point request was created. A nonblocking send counts
 * its message now; a receive when it completes. */
CAPTURE_INTERNAL void capture_p2p_request(int function_id, MPI_Request request,
                                          enum capture_request_kind kind, bool persistent, MPI_Comm comm,
                                          int peer, int tag, int64_t bytes, uint64_t entered, bool record);
/* MPI_Isendrecv(_replace): one request for a send and a receive, recorded as an MPI_Isend and an
 * MPI_Irecv would be (each half with a request id of its own). */
CAPTURE_INTERNAL void capture_p2p_sendrecv_request(int function_id, MPI_Request request, MPI_Comm comm,
                                                   int dest, int sendtag, int64_t send_bytes, int source,
                                                   int recvtag, int64_t recv_bytes, uint64_t entered,
                                                   bool record);
/* Persistent requests were started (MPI_Start/Startall): each activation gets a fresh request id, sends
 * count their message, and sends and collectives are recorded now. */
CAPTURE_INTERNAL void capture_requests_started(int function_id, const MPI_Request *requests, int count,
                                               uint64_t entered, bool record);
CAPTURE_INTERNAL void capture_request_forget(MPI_Request request);
/* Scratch copies for the Wait/Test family (per thread, grown rarely, never shrunk). */
CAPTURE_INTERNAL MPI_Request *capture_save_requests(const MPI_Request *requests, int count);
CAPTURE_INTERNAL MPI_Status *capture_scratch_statuses(int count);

/* Collectives. */
struct capture_collective_info {
    uint32_t comm_id;
    int32_t root_world;
    int64_t bytes_sent;
    int64_t bytes_received;
    uint64_t sequence; /* instance ordinal on the communicator (capture_collective_next) */
};
CAPTURE_INTERNAL void capture_collective(int function_id, const struct capture_collective_info *info);
/* A nonblocking or persistent collective's request (a recorded call). An unrecorded call's is tracked by
 * capture_collective_request_unrecorded (runtime.h): only so that its completion finds its own entry;
 * nothing about it is recorded, even if it completes or is started while recording. */
CAPTURE_INTERNAL void capture_collective_request(int function_id, MPI_Request request,
                                                 const struct capture_collective_info *info, bool persistent);

/* Communicators: the cache that maps a communicator to its id and its ranks to world ranks. */
struct capture_comm {
    MPI_Comm handle;
    uint32_t id;
    bool inter;
    int rank;                /* this rank in the (local group of the) communicator */
    int size;                /* local group size */
    int remote_size;         /* remote group size, 0 for intracommunicators */
    int indegree, outdegree; /* neighbourhood collectives; -1 until first needed */
    int32_t *local_world;    /* world rank of each local group member */
    int32_t *remote_world;   /* world rank of each remote group member */
};
/* Never NULL: an unknown communicator is added (and defined by a COMM_CREATED record) on first use. */
CAPTURE_INTERNAL const struct capture_comm *capture_comm_lookup(MPI_Comm comm);
/* The same without writing anything (bookkeeping of an unrecorded call): a thread announces the
 * communicator at its first record that names it. */
CAPTURE_INTERNAL const struct capture_comm *capture_comm_find(MPI_Comm comm);
/* A call created a communicator: cached under its creating function, announced when `record`. Called for
 * unrecorded calls too (with a place), so that every rank names a communicator by the function that
 * created it whether or not it was recording then. */
CAPTURE_INTERNAL void capture_comm_created(int function_id, MPI_Comm comm, bool record);
CAPTURE_INTERNAL void capture_comm_request(int function_id, MPI_Request request, MPI_Comm *new_comm,
                                           bool record);
CAPTURE_INTERNAL void capture_comm_freed(int function_id, MPI_Comm comm);
/* A communicator freed while nothing was recorded: dropped from the cache without a record. */
CAPTURE_INTERNAL void capture_comm_forget(MPI_Comm comm);
CAPTURE_INTERNAL void capture_comm_neighbor_degrees(MPI_Comm comm, int *indegree, int *outdegree);

static inline int capture_comm_peer_count(const struct capture_comm *comm)
{
    return comm->inter ? comm->remote_size : comm->size;
}
/* World rank of a peer (destination, source, root) given as a rank in comm: for intercommunicators a
 * rank of the remote group. -1 for MPI_PROC_NULL or a process outside the application's world, -2 for
 * MPI_ANY_SOURCE. */
CAPTURE_INTERNAL int32_t capture_peer_world(const struct capture_comm *comm, int peer);
CAPTURE_INTERNAL int32_t capture_root_world(const struct capture_comm *comm, int root);
static inline bool capture_is_root(const struct capture_comm *comm, int root)
{
    return comm->inter ? root == MPI_ROOT : root == comm->rank;
}
static inline bool capture_is_nonroot(const struct capture_comm *comm, int root)
{
    return comm->inter ? root >= 0 : root != comm->rank;
}

/* Bytes helpers for payload rules. */
CAPTURE_INTERNAL int64_t capture_type_bytes(MPI_Datatype datatype);
CAPTURE_INTERNAL int64_t capture_sum_int(const int *counts, int n);
CAPTURE_INTERNAL int64_t capture_sum_count(const MPI_Count *counts, int n);
CAPTURE_INTERNAL int64_t capture_sumw_int(const int *counts, const MPI_Datatype *types, int n);
CAPTURE_INTERNAL int64_t capture_sumw_count(const MPI_Count *counts, const MPI_Datatype *types, int n);

/* MPI_Pcontrol(level): a phase marker. */
CAPTURE_INTERNAL void capture_phase(int function_id, int level);

/* User functions (user_functions.c): USER_ENTER/USER_LEAVE with the function's address; the load map
 * as OBJECT records; capture_send_now sends the calling thread's records at once (the load map must
 * reach the place before any other thread's batch). */
CAPTURE_INTERNAL void capture_user_event(enum capture_record_kind kind, const void *address);
CAPTURE_INTERNAL void capture_user_event_at(enum capture_record_kind kind, const void *address,
                                            uint64_t timestamp);
/* A function was throttled (skipped 0: just now) or, at MPI_Finalize, how many calls it skipped. */
CAPTURE_INTERNAL void capture_throttled(uint64_t address, uint64_t calls, uint64_t mean_ns, uint64_t skipped);
/* OTFX_FILTER / OTFX_THROTTLE, read in MPI_Init; false after saying why when malformed. */
CAPTURE_INTERNAL bool capture_user_functions_start(int app_rank);
CAPTURE_INTERNAL void capture_user_functions_finish(void);
CAPTURE_INTERNAL void capture_write_object(const char *path, uint64_t base);
CAPTURE_INTERNAL void capture_send_now(void);
/* otfx.h's names: the definition of this thread's name id (NAME record). */
CAPTURE_INTERNAL void capture_write_name(uint32_t name_id, const char *name, size_t length);
CAPTURE_INTERNAL void capture_send_load_map(void);
/* Whether objects were loaded since the map was last written (dl_iterate_phdr's dlpi_adds: one call,
 * once per batch); capture_write_load_map writes the whole map again (the place ignores what it knows). */
CAPTURE_INTERNAL bool capture_load_map_changed(void);
CAPTURE_INTERNAL void capture_write_load_map(void);

/* Recorder life cycle (manual_wrappers.c): start after the world split, stop in MPI_Finalize by
 * sending every thread's remaining records, the calling thread's batch flagged as goodbye.
 * drop_when_full (OTFX_BACKPRESSURE=drop): a thread whose batch is full while the previous one is still
 * being sent does not wait; it drops its records (keeping the definition-like ones, otfx/capture_wire.h's
 * CAPTURE_RECORD_DROPPED) until that send completes, then sends a DROPPED record saying what it lost.
 * The hot path is the same in both policies: one compare against the thread's batch limit, which is 0
 * while dropping. */
CAPTURE_INTERNAL void capture_recorder_start(int app_rank, bool recording, bool drop_when_full);
CAPTURE_INTERNAL void capture_recorder_finish(void);
/* The rank ends without MPI_Finalize (dying.c): what every thread recorded goes to the place now, the
 * calling thread's batch last, ending with a CAPTURE_RECORD_DIED record and flagged as goodbye; nothing
 * is recorded afterwards. `last_record_torn`: the calling thread was interrupted inside the recorder, so
 * its last record may be half written and is left out. Once only (false the second time, or without a
 * place). Calls MPI: the caller bounds how long it may take (dying.c). */
CAPTURE_INTERNAL bool capture_recorder_die(const struct capture_died_record *death, bool last_record_torn);
/* A record timestamp in raw ticks (timer.h); the place converts them with the batch's calibration. */
static inline uint64_t capture_now(void)
{
    return capture_ticks();
}
/* Enter/leave with an explicit timestamp (MPI_Init is entered before the recorder exists). */
CAPTURE_INTERNAL void capture_enter_at(int function_id, uint64_t timestamp);

/* transport.c: sends one batch (header + records, `bytes` in all) to this rank's place. The batch
 * memory stays in use until the next capture_flush with the same `in_flight` returns: on entry
 * *in_flight is the previous batch's send (completed here, after the new one is started), on return
 * the new one's. */
CAPTURE_INTERNAL void capture_flush(const void *records, size_t bytes, MPI_Request *in_flight);
/* Nanoseconds this thread has waited in capture_flush for a previous batch to be sent: how much a
 * place that does not keep up slowed the application (sent in every batch header). */
CAPTURE_INTERNAL uint64_t capture_blocked_ns(void);
CAPTURE_INTERNAL void capture_flush_wait(MPI_Request *in_flight);
/* Whether the batch in *in_flight has left (PMPI_Test; true for MPI_REQUEST_NULL): with the `drop`
 * back-pressure policy a full batch is sent only then, never waited for. */
CAPTURE_INTERNAL bool capture_flush_ready(MPI_Request *in_flight);

#endif

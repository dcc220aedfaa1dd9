/*
 * control.h — steering (private to libotfx-capture; capture/README.md, "Steering"): the check points every
 * entry point passes, the blocking calls' wait loops, the control channel's life cycle.
 */
#ifndef OTFX_CAPTURE_CONTROL_H
#define OTFX_CAPTURE_CONTROL_H

#include "linkage.h"
#include "recorder.h"
#include "timer.h"

#include <stdbool.h>
#include <stdint.h>

/* The check points' deadline is capture_check_deadline (recorder.h), which steering sets. Threads read it
 * while the control thread moves it: a relaxed atomic load (a plain load on x86). */
static inline uint64_t capture_deadline(void)
{
    return __atomic_load_n(&capture_check_deadline, __ATOMIC_RELAXED);
}
/* Slow paths, taken when a timestamp reached the deadline. At a check point (an MPI wrapper before it
 * calls PMPI, a user-function enter): polls the control channel (if this thread may: the thread that
 * called MPI_Init, or any with MPI_THREAD_MULTIPLE), carries out commands, blocks while the application
 * is paused, ends an expired window. */
CAPTURE_INTERNAL void capture_control_check(uint64_t now);
/* OTFX_CLOCK_SYNC (read in MPI_Init, configuration.h; control.c re-measures the clock that often at a check
 * point where MPI may be called). */
CAPTURE_INTERNAL void capture_control_set_clock_sync(double seconds);
/* The same after a batch was sent from inside a record (never blocks: a pause waits for the next check
 * point); nothing without steering. The recorder calls it through its hooks (recorder.h), as it calls
 * capture_control_check when a recorded MPI call's ENTER finds the deadline passed. */
CAPTURE_INTERNAL void capture_control_check_at_flush(void);
/* True once per FLUSH in each thread that has not yet sent its records for it: the caller sends them now,
 * flagged CAPTURE_BATCH_FLUSHED (a check point, or a batch send that found the batch full). */
CAPTURE_INTERNAL bool capture_control_flush_due(void);
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
/* control.c life cycle: start after the world split (world_split.c) with the enabled event classes
 * (OTFX_DISABLE; posts the receive; blocks until APP_RESUME with OTFX_START_PAUSED=1), stop in
 * MPI_Finalize before the goodbye batch (cancels the receive). */
CAPTURE_INTERNAL void capture_control_start(int app_rank, int thread_level, bool recording, uint32_t classes,
                                            bool start_paused);
CAPTURE_INTERNAL void capture_control_stop(void);

/* User-function enters and otfx.h (user_functions.c): a check that never blocks in MPI. */
CAPTURE_INTERNAL void capture_control_check_user(uint64_t now);
/* User-function exits (user_functions.c): no command is carried out there (the exit of a recorded
 * enter is always recorded), but a thread waits while the application is paused. */
CAPTURE_INTERNAL void capture_control_pause_point(void);
/* One turn of a reduction guard's barrier loop (steered.c; capture_wait_pause_point, but an APP_PAUSE is
 * answered and the loop goes on), and blocking once the guarded call is done if a pause came meanwhile. */
CAPTURE_INTERNAL void capture_guard_pause_point(int *polls);
CAPTURE_INTERNAL void capture_pause_if_paused(void);

#endif

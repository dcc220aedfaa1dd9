/*
 * transport.c — ships batches from an application rank to its place over the tool communicator.
 * Nonblocking (PMPI_Isend) and double-buffered by the caller: sending one batch overlaps with filling
 * the next. The place side is place.c.
 */
#include "transport.h"
#include "nesting.h"
#include "timer.h"
#include "world.h"
#include <otfx/capture_wire.h>
#include <otfx/testpoint.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MPI_Comm capture_tool_comm = MPI_COMM_NULL;
static _Thread_local uint64_t blocked_ns;

uint64_t capture_blocked_ns(void)
{
    return blocked_ns;
}

/* Waits for a batch's send and adds the time it took to this thread's blocked time. A completed send
 * costs one PMPI_Wait and two clock reads, a few hundred ns per 100 KiB batch. */
static void wait_for_send(MPI_Request *request)
{
    const uint64_t started = capture_monotonic_ns();
    PMPI_Wait(request, MPI_STATUS_IGNORE);
    blocked_ns += capture_monotonic_ns() - started;
}

/* Test point OTFX_TEST_REENTER_AT_FLUSH=FUNCTION (tests/capture/reentry.c): the program's exported
 * function `void FUNCTION(void)` is called in the middle of every batch send — the new batch posted, the
 * previous one not yet waited for, the recorder's buffers not yet switched — as application code that
 * MPI runs from the tool's PMPI_Wait would be. It proves that such code re-enters nothing (nesting.h).
 * Unset: one predictable branch per batch. */
static void (*reenter_at_flush)(void);
static pthread_once_t reenter_at_flush_once = PTHREAD_ONCE_INIT;

static void find_reenter_at_flush(void)
{
    const char *name = otfx_testpoint_string(OTFX_SETTING_TEST_REENTER_AT_FLUSH);
    if (!name)
        return;
    void *function = dlsym(RTLD_DEFAULT, name);
    if (!function) {
        fprintf(
            stderr,
            "otfx-capture: OTFX_TEST_REENTER_AT_FLUSH=%s: the program exports no such function: ignored\n",
            name);
        return;
    }
    /* dlsym returns an object pointer; POSIX guarantees it converts to a function pointer. */
    memcpy(&reenter_at_flush, &function, sizeof(function));
}

static void flush_inside(const void *records, size_t bytes, MPI_Request *in_flight)
{
    MPI_Request previous = *in_flight;
    /* Batches are at most CAPTURE_BATCH_BYTES, far below INT_MAX. */
    if (PMPI_Isend(records, (int)bytes, MPI_BYTE, capture_own_place, CAPTURE_BATCH_TAG, capture_tool_comm,
                   in_flight) != MPI_SUCCESS) {
        int my_app_rank = 0;
        PMPI_Comm_rank(capture_app_world, &my_app_rank);
        fprintf(stderr, "otfx-capture: rank %d could not send a batch to its place: aborting\n", my_app_rank);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    pthread_once(&reenter_at_flush_once, find_reenter_at_flush);
    if (__builtin_expect(reenter_at_flush != NULL, 0))
        reenter_at_flush();
    if (previous != MPI_REQUEST_NULL)
        wait_for_send(&previous);
}

void capture_flush(const void *records, size_t bytes, MPI_Request *in_flight)
{
    capture_tool_enter();
    flush_inside(records, bytes, in_flight);
    capture_tool_exit();
}

bool capture_flush_ready(MPI_Request *in_flight)
{
    if (*in_flight == MPI_REQUEST_NULL)
        return true;
    int done = 0;
    capture_tool_enter();
    PMPI_Test(in_flight, &done, MPI_STATUS_IGNORE);
    capture_tool_exit();
    return done != 0;
}

void capture_flush_wait(MPI_Request *in_flight)
{
    if (*in_flight == MPI_REQUEST_NULL)
        return;
    capture_tool_enter();
    wait_for_send(in_flight);
    capture_tool_exit();
}

/*
 * transport.c — ships batches from an application rank to its place over the tool communicator.
 * Nonblocking (PMPI_Isend) and double-buffered by the caller: sending one batch overlaps with filling
 * the next. The place side is place.c.
 */
#include "recorder.h"
#include "runtime.h"

#include <stdio.h>

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

void capture_flush(const void *records, size_t bytes, MPI_Request *in_flight)
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
    if (previous != MPI_REQUEST_NULL)
        wait_for_send(&previous);
}

bool capture_flush_ready(MPI_Request *in_flight)
{
    if (*in_flight == MPI_REQUEST_NULL)
        return true;
    int done = 0;
    PMPI_Test(in_flight, &done, MPI_STATUS_IGNORE);
    return done != 0;
}

void capture_flush_wait(MPI_Request *in_flight)
{
    if (*in_flight != MPI_REQUEST_NULL)
        wait_for_send(in_flight);
}

/*
 * transport.h — batches from an application rank to its place (private to libotfx-capture; transport.c).
 */
#ifndef OTFX_CAPTURE_TRANSPORT_H
#define OTFX_CAPTURE_TRANSPORT_H

#include "linkage.h"

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tool communicator: a duplicate of the real MPI_COMM_WORLD made by the world split, over which
 * batches, clock pings and control messages go. */
CAPTURE_INTERNAL extern MPI_Comm capture_tool_comm;
/* Sends one batch (header + records, `bytes` in all) to this rank's place. The batch
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

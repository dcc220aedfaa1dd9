/*
 * requests.h — point-to-point payloads, requests and matched probes (private to libotfx-capture; requests.c).
 */
#ifndef OTFX_CAPTURE_REQUESTS_H
#define OTFX_CAPTURE_REQUESTS_H

#include "linkage.h"
#include "recorder.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

/* Every function below does the rank's bookkeeping — message ordinals per channel (channels.c), the
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

/* A nonblocking or persistent collective's request (a recorded call). An unrecorded call's is tracked by
 * capture_collective_request_unrecorded (below): only so that its completion finds its own entry;
 * nothing about it is recorded, even if it completes or is started while recording. */
CAPTURE_INTERNAL void capture_collective_request(int function_id, MPI_Request request,
                                                 const struct capture_collective_info *info, bool persistent);

/* Wait/Test family at MPI_THREAD_MULTIPLE: once a request completed inside PMPI, MPI may hand its handle
 * to another thread's new request before this thread looks it up. So the wrapper copies the tracked
 * entries of its requests before the PMPI call (capture_requests_snapshot, a no-op otherwise) and reports
 * completions by their index in that copy; the table entry is removed only if it is still the one
 * copied. Without concurrency capture_request_completed_at is capture_request_completed. */
CAPTURE_INTERNAL void capture_requests_snapshot(const MPI_Request *requests, int count);
CAPTURE_INTERNAL void capture_request_completed_at(int function_id, int index, MPI_Request request,
                                                   const MPI_Status *status, bool record);
/* Matched probes (MPI_Mrecv/MPI_Imrecv): the message's entry is taken before the PMPI call consumes the
 * handle (MPI may reuse it at once for another thread's probe); MPI_COMM_NULL when it was not tracked. */
CAPTURE_INTERNAL MPI_Comm capture_message_take(MPI_Message message);
CAPTURE_INTERNAL void capture_message_received_on(int function_id, MPI_Comm probed_comm,
                                                  const MPI_Status *status, bool record);
CAPTURE_INTERNAL void capture_message_request_on(int function_id, MPI_Comm probed_comm, MPI_Request request,
                                                 bool record);
/* A blocking collective of an unrecorded call: counts its instance ordinal (channels.h). */
CAPTURE_INTERNAL void capture_collective_unrecorded(MPI_Comm comm);
/* A nonblocking or persistent collective of an unrecorded call (recorder.h, capture_request_unrecorded):
 * a nonblocking one counts its instance ordinal now, a persistent one at each start. */
CAPTURE_INTERNAL void capture_collective_request_unrecorded(MPI_Comm comm, MPI_Request request,
                                                            bool persistent);

#endif

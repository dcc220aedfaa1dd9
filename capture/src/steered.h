/*
 * steered.h — blocking MPI calls that stay steerable without computing anything else than the plain
 * call (private to libotfx-capture; capture/README.md, "Blocking calls stay steerable").
 *
 * With a place, the generated wrappers (gen_wrappers.py steered_helper) run a blocking call as its
 * nonblocking form and wait for it here, in a loop that checks for steering commands, so that a rank
 * blocked waiting for a paused peer still answers APP_PAUSE. Where the nonblocking form could give
 * another result (a reduction whose result depends on the order in which the operation is applied,
 * MPICH's MPI_Isendrecv, whose status is never filled in), the real blocking call runs instead, after a
 * steerable barrier or built from calls whose results are exact. Without a place every wrapper calls
 * the plain PMPI function.
 */
#ifndef OTFX_CAPTURE_STEERED_H
#define OTFX_CAPTURE_STEERED_H

#include "linkage.h"

#include <mpi.h>
#include <stdbool.h>

/* Completes a nonblocking request that stands for a blocking call, checking for commands meanwhile.
 * `errors_on`: the communicator whose error handler the blocking call reports errors to (point-to-point
 * calls); MPICH reports an error of MPI_Test on a point-to-point request to MPI_COMM_WORLD's handler
 * instead, so the test runs with that one set to MPI_ERRORS_RETURN and the error is raised on
 * `errors_on`. MPI_COMM_NULL: the error goes where MPI_Test sends it, as the blocking call's would
 * (MPI_Mrecv, nonblocking collectives, whose requests report to their communicator). */
CAPTURE_INTERNAL int capture_wait_steered(MPI_Request *request, MPI_Status *status, MPI_Comm errors_on);

/* MPI_Waitall: waits until every request is complete (MPI_Request_get_status, which completes nothing),
 * then calls PMPI_Waitall, which returns at once with exactly what it returns untraced (statuses,
 * MPI_ERR_IN_STATUS with MPI_ERR_PENDING for the requests after a failed one, which stay active). */
CAPTURE_INTERNAL int capture_waitall_steered(int count, MPI_Request requests[], MPI_Status statuses[]);

/* Generalized requests started by the application: MPI_Request_get_status would run their query
 * function once more than the application's own call does, so an MPI_Waitall that includes one is the
 * plain call (not steerable; the application completes such requests itself anyway). A handle stays
 * known until an MPI_Waitall sees it completed (if MPI reused it meanwhile, that Waitall is merely not
 * steerable). */
CAPTURE_INTERNAL int capture_grequest_start(MPI_Grequest_query_function *query_fn,
                                            MPI_Grequest_free_function *free_fn,
                                            MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                            MPI_Request *request);
CAPTURE_INTERNAL int
capture_grequestx_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                        MPI_Grequest_cancel_function *cancel_fn, MPIX_Grequest_poll_function *poll_fn,
                        MPIX_Grequest_wait_function *wait_fn, void *extra_state, MPI_Request *request);
CAPTURE_INTERNAL int capture_grequest_class_allocate(MPIX_Grequest_class greq_class, void *extra_state,
                                                     MPI_Request *request);

/* MPI_Sendrecv and MPI_Sendrecv_replace as MPICH implements them, but steerable: `requests` are the
 * posted receive ([0]) and send ([1]); waits for both and fills `status` from the receive (all fields
 * but MPI_ERROR for MPI_Sendrecv, MPI_ERROR too for MPI_Sendrecv_replace, as MPICH does). Returns the
 * receive's error, else the send's, raised on `comm`. */
CAPTURE_INTERNAL int capture_sendrecv_complete(MPI_Request requests[2], MPI_Status *status, MPI_Comm comm,
                                               bool replace);
/* MPI_Sendrecv_replace (large: the _c form): the data to send packed into a temporary buffer (MPICH does
 * the same), the receive posted into `buf`, then capture_sendrecv_complete. Without memory for the
 * buffer, the plain blocking call (correct, not steerable). */
CAPTURE_INTERNAL int capture_sendrecv_replace_steered(void *buf, MPI_Count count, MPI_Datatype datatype,
                                                      int dest, int sendtag, int source, int recvtag,
                                                      MPI_Comm comm, MPI_Status *status, bool large);
/* A send of MPI_Sendrecv could not be posted after its receive was: the receive is cancelled (the real
 * call checks its arguments before posting anything). */
CAPTURE_INTERNAL void capture_sendrecv_abandon(MPI_Request *receive);

/* Whether an MPI_Sendrecv(_replace) that returned `error` sent its message: it did unless the send
 * itself failed, and MPI_ERR_TRUNCATE only ever comes from the receive. */
CAPTURE_INTERNAL bool capture_sendrecv_sent(int error);

/* Whether a predefined reduction gives the same bits whatever the order in which MPI applies it:
 * integer, logical and byte types with the predefined operations, MINLOC/MAXLOC on integer pairs. Never
 * floating point (sums and products round differently; MIN/MAX and MINLOC/MAXLOC pick between -0.0 and
 * +0.0, or NaN, by order), derived types or user-defined operations (which may even count their calls).
 * The same on every rank: MPI requires the same operation, and for predefined operations the same
 * datatype, on all of them. */
CAPTURE_INTERNAL bool capture_reduction_exact(MPI_Op op, MPI_Datatype datatype);

/* Around a blocking collective that must run as itself: a steerable PMPI_Ibarrier on `comm` first, so
 * that no rank enters the blocking call while a member is paused (every rank runs the same wrapper, so
 * the order of collectives on `comm` stays the same everywhere). An APP_PAUSE arriving during the barrier
 * is answered at once and carried out after the blocking call (capture_guard_end), since the other ranks
 * may already be inside it waiting for this one. */
CAPTURE_INTERNAL void capture_guard_begin(MPI_Comm comm);
CAPTURE_INTERNAL void capture_guard_end(void);

/* MPI_Comm_set_errhandler / MPI_Errhandler_set on the application's world (already translated): set on
 * the real MPI_COMM_WORLD too, whose handler MPICH uses for errors of calls without a communicator
 * (MPI_Wait, MPI_Test, MPI_Request_get_status, ...): the application set it on what it knows as
 * MPI_COMM_WORLD. */
CAPTURE_INTERNAL int capture_comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
CAPTURE_INTERNAL int capture_errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);

#endif

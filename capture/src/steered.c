/*
 * steered.c — blocking MPI calls that stay steerable and compute exactly what the plain call computes
 * (steered.h; capture/README.md, "Blocking calls stay steerable", lists the MPICH 4.0.2 defects worked
 * around here).
 */
#include "steered.h"
#include "control.h"
#include "nesting.h"
#include "world.h"

#include <otfx/support/growth.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* MPICH reports an error of MPI_Test, MPI_Request_get_status, ... on a point-to-point request to
 * MPI_COMM_WORLD's error handler. Where the call they stand for reports elsewhere, or not yet, they run
 * with that handler switched to MPI_ERRORS_RETURN (~27 ns, measured) and the caller raises the error
 * where the blocking call would. At MPI_THREAD_MULTIPLE threads may overlap: the first switches, the
 * last switches back (a handler the application sets on its world meanwhile is the one restored), and
 * no lock is held during the MPI calls themselves (they may call back into the application). The
 * switch spans one test or one pass over the requests, so other threads' errors are hardly affected. */
static pthread_mutex_t world_handler_lock = PTHREAD_MUTEX_INITIALIZER;
static int quiet_depth;                                    /* threads between the two calls below */
static MPI_Errhandler world_handler = MPI_ERRHANDLER_NULL; /* to restore, while quiet_depth > 0 */

static void world_errors_return(void)
{
    capture_lock(&world_handler_lock);
    if (quiet_depth++ == 0) {
        PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_handler);
        PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    capture_unlock(&world_handler_lock);
}

static void world_errors_restore(void)
{
    capture_lock(&world_handler_lock);
    if (--quiet_depth == 0) {
        PMPI_Comm_set_errhandler(MPI_COMM_WORLD, world_handler);
        PMPI_Errhandler_free(&world_handler);
    }
    capture_unlock(&world_handler_lock);
}

static int test_quietly(MPI_Request *request, int *done, MPI_Status *status)
{
    world_errors_return();
    const int error = PMPI_Test(request, done, status);
    world_errors_restore();
    return error;
}

int capture_wait_steered(MPI_Request *request, MPI_Status *status, MPI_Comm errors_on)
{
    for (int polls = 0;;) {
        int done = 0;
        if (errors_on == MPI_COMM_NULL) {
            const int error = PMPI_Test(request, &done, status);
            if (error != MPI_SUCCESS || done)
                return error;
        } else {
            const int error = test_quietly(request, &done, status);
            if (error != MPI_SUCCESS) {
                PMPI_Comm_call_errhandler(errors_on, error);
                return error;
            }
            if (done)
                return MPI_SUCCESS;
        }
        capture_wait_pause_point(&polls);
    }
}

/* ---- generalized requests ---------------------------------------------------------------------- */
static MPI_Request *grequests;
static size_t grequest_count, grequest_capacity;
static bool grequests_untracked; /* one could not be noted (no memory): every Waitall is the plain call */
static pthread_mutex_t grequest_lock = PTHREAD_MUTEX_INITIALIZER;

static void grequest_started(int error, MPI_Request request)
{
    if (error != MPI_SUCCESS || request == MPI_REQUEST_NULL)
        return;
    capture_lock(&grequest_lock);
    bool known = false;
    for (size_t i = 0; i < grequest_count && !known; i++)
        known = grequests[i] == request;
    if (!known &&
        !otfx_reserve((void **)&grequests, &grequest_capacity, grequest_count + 1, sizeof(*grequests), 16)) {
        grequests_untracked = true;
        known = true;
    }
    if (!known)
        grequests[grequest_count++] = request;
    capture_unlock(&grequest_lock);
}

int capture_grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                           MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request)
{
    const int error = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, extra_state, request);
    grequest_started(error, *request);
    return error;
}

int capture_grequestx_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                            MPI_Grequest_cancel_function *cancel_fn, MPIX_Grequest_poll_function *poll_fn,
                            MPIX_Grequest_wait_function *wait_fn, void *extra_state, MPI_Request *request)
{
    const int error =
        PMPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, extra_state, request);
    grequest_started(error, *request);
    return error;
}

int capture_grequest_class_allocate(MPIX_Grequest_class greq_class, void *extra_state, MPI_Request *request)
{
    const int error = PMPIX_Grequest_class_allocate(greq_class, extra_state, request);
    grequest_started(error, *request);
    return error;
}

/* Whether any of the requests is a known generalized request. */
static bool includes_grequest(int count, const MPI_Request requests[])
{
    capture_lock(&grequest_lock);
    bool found = grequests_untracked;
    for (size_t i = 0; i < grequest_count && !found; i++)
        for (int r = 0; r < count && !found; r++)
            found = requests[r] == grequests[i];
    capture_unlock(&grequest_lock);
    return found;
}

/* PMPI_Waitall, forgetting the generalized requests it completed. */
static int waitall_forgetting_grequests(int count, MPI_Request requests[], MPI_Status statuses[])
{
    MPI_Request *before = malloc((size_t)(count > 0 ? count : 1) * sizeof(*before));
    if (before)
        memcpy(before, requests, (size_t)count * sizeof(*before));
    const int error = PMPI_Waitall(count, requests, statuses);
    if (!before)
        return error;
    capture_lock(&grequest_lock);
    for (int r = 0; r < count; r++) {
        if (requests[r] != MPI_REQUEST_NULL)
            continue;
        for (size_t i = 0; i < grequest_count; i++)
            if (grequests[i] == before[r]) {
                grequests[i] = grequests[--grequest_count];
                break;
            }
    }
    capture_unlock(&grequest_lock);
    free(before);
    return error;
}

/* ---- the Wait family ------------------------------------------------------------------------------- */

int capture_waitall_steered(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (count <= 0 || !requests)
        return PMPI_Waitall(count, requests, statuses); /* nothing to wait for, or its argument error */
    if (__atomic_load_n(&grequest_count, __ATOMIC_RELAXED) || grequests_untracked) {
        if (includes_grequest(count, requests))
            return waitall_forgetting_grequests(count, requests, statuses);
    }
    enum { ON_STACK = 64 };
    bool on_stack[ON_STACK] = {false};
    bool *done = count <= ON_STACK ? on_stack : calloc((size_t)count, sizeof(bool));
    if (!done)
        return PMPI_Waitall(count, requests, statuses); /* not steerable, but correct */
    int remaining = count;
    for (int polls = 0;;) {
        /* A request that completed with an error makes MPI_Request_get_status fail: quietly, since
         * PMPI_Waitall reports it below as the application's call does. Each request is asked until it
         * is complete only: a generalized request's query function runs once here. */
        world_errors_return();
        for (int i = 0; i < count; i++) {
            if (done[i])
                continue;
            int flag = 0;
            if (PMPI_Request_get_status(requests[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag) {
                done[i] = true;
                remaining--;
            }
        }
        world_errors_restore();
        if (remaining == 0)
            break;
        capture_wait_pause_point(&polls);
    }
    if (done != on_stack)
        free(done);
    return PMPI_Waitall(count, requests, statuses);
}

int capture_sendrecv_complete(MPI_Request requests[2], MPI_Status *status, MPI_Comm comm, bool replace)
{
    MPI_Status receive_status, send_status;
    MPI_Status *const received = status == MPI_STATUS_IGNORE ? &receive_status : status;
    int receive_error = MPI_SUCCESS, send_error = MPI_SUCCESS;
    bool receive_done = false, send_done = false;
    if (requests[0] == MPI_REQUEST_NULL) {
        /* From MPI_PROC_NULL, nothing was posted: MPICH 4.0.2's MPI_Irecv from it completes with source 0
         * and tag 0, where MPI_Sendrecv says MPI_PROC_NULL and MPI_ANY_TAG. MPI_Recv from it returns at
         * once with that status (all but MPI_ERROR). */
        receive_error = PMPI_Recv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, received);
        receive_done = true;
    }
    for (int polls = 0;;) {
        int flag = 0;
        if (!receive_done) {
            receive_error = test_quietly(&requests[0], &flag, received);
            receive_done = flag || receive_error != MPI_SUCCESS;
        }
        if (!send_done) {
            flag = 0;
            send_error = test_quietly(&requests[1], &flag, &send_status);
            send_done = flag || send_error != MPI_SUCCESS;
        }
        if (receive_done && send_done)
            break;
        capture_wait_pause_point(&polls);
    }
    /* MPICH's MPI_Sendrecv_replace copies the receive's whole status, MPI_Sendrecv all but MPI_ERROR (as
     * MPI_Test did). */
    if (replace)
        received->MPI_ERROR = receive_error;
    const int error = receive_error != MPI_SUCCESS ? receive_error : send_error;
    if (error != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, error);
    return error;
}

void capture_sendrecv_abandon(MPI_Request *receive)
{
    int flag = 0;
    MPI_Status ignored;
    if (*receive == MPI_REQUEST_NULL)
        return;
    PMPI_Cancel(receive);
    while (*receive != MPI_REQUEST_NULL && test_quietly(receive, &flag, &ignored) == MPI_SUCCESS && !flag)
        ;
}

bool capture_sendrecv_sent(int error)
{
    int error_class = MPI_ERR_OTHER;
    return error == MPI_SUCCESS ||
           (PMPI_Error_class(error, &error_class) == MPI_SUCCESS && error_class == MPI_ERR_TRUNCATE);
}

int capture_sendrecv_replace_steered(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                                     int source, int recvtag, MPI_Comm comm, MPI_Status *status, bool large)
{
    /* As MPICH's MPIR_Sendrecv_replace_impl: the data packed first (only if there is something to send),
     * the receive posted, then the packed bytes sent as MPI_PACKED. */
    void *packed = NULL;
    MPI_Count packed_bytes = 0;
    if (count > 0 && dest != MPI_PROC_NULL) {
        MPI_Count size = 0;
        int error = PMPI_Pack_size_c(count, datatype, comm, &size);
        if (error != MPI_SUCCESS)
            return error;
        packed = malloc(size > 0 ? (size_t)size : 1);
        if (!packed) /* correct, though not steerable */
            return large ? PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                                   status)
                         : PMPI_Sendrecv_replace(buf, (int)count, datatype, dest, sendtag, source, recvtag,
                                                 comm, status);
        error = PMPI_Pack_c(buf, count, datatype, packed, size, &packed_bytes, comm);
        if (error != MPI_SUCCESS) {
            free(packed);
            return error;
        }
    }
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int error = MPI_SUCCESS;
    if (source != MPI_PROC_NULL) /* else no receive: capture_sendrecv_complete */
        error = PMPI_Irecv_c(buf, count, datatype, source, recvtag, comm, &requests[0]);
    if (error == MPI_SUCCESS) {
        error = PMPI_Isend_c(packed, packed_bytes, MPI_PACKED, dest, sendtag, comm, &requests[1]);
        if (error == MPI_SUCCESS)
            error = capture_sendrecv_complete(requests, status, comm, true);
        else
            capture_sendrecv_abandon(&requests[0]);
    }
    free(packed);
    return error;
}

static bool in_list(MPI_Datatype datatype, const MPI_Datatype *list, size_t length)
{
    for (size_t i = 0; i < length; i++)
        if (datatype == list[i])
            return true;
    return false;
}

bool capture_reduction_exact(MPI_Op op, MPI_Datatype datatype)
{
    /* The combinations MPI defines for the predefined operations (MPI 4.0 section 6.9.2) on types whose
     * results do not depend on the order: integers (wrap-around sums and products, MIN/MAX), logical
     * and bitwise results. Anything else runs as the blocking call itself (guarded), also the
     * combinations MPI does not define, so that their error is the blocking call's. */
    static const MPI_Datatype c_integers[] = {MPI_INT,
                                              MPI_LONG,
                                              MPI_SHORT,
                                              MPI_UNSIGNED_SHORT,
                                              MPI_UNSIGNED,
                                              MPI_UNSIGNED_LONG,
                                              MPI_LONG_LONG_INT,
                                              MPI_LONG_LONG,
                                              MPI_UNSIGNED_LONG_LONG,
                                              MPI_SIGNED_CHAR,
                                              MPI_UNSIGNED_CHAR,
                                              MPI_INT8_T,
                                              MPI_INT16_T,
                                              MPI_INT32_T,
                                              MPI_INT64_T,
                                              MPI_UINT8_T,
                                              MPI_UINT16_T,
                                              MPI_UINT32_T,
                                              MPI_UINT64_T,
                                              MPI_AINT,
                                              MPI_OFFSET,
                                              MPI_COUNT};
    static const MPI_Datatype fortran_integers[] = {MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4,
                                                    MPI_INTEGER8};
    static const MPI_Datatype logicals[] = {MPI_C_BOOL, MPI_CXX_BOOL, MPI_LOGICAL};
    static const MPI_Datatype integer_pairs[] = {MPI_2INT, MPI_SHORT_INT, MPI_LONG_INT, MPI_2INTEGER};
#define CAPTURE_IN(type, list) in_list(type, list, sizeof(list) / sizeof(list[0]))
    if (datatype == MPI_DATATYPE_NULL)
        return false;
    if (op == MPI_MAX || op == MPI_MIN || op == MPI_SUM || op == MPI_PROD)
        return CAPTURE_IN(datatype, c_integers) || CAPTURE_IN(datatype, fortran_integers);
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return CAPTURE_IN(datatype, c_integers) || CAPTURE_IN(datatype, logicals);
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return CAPTURE_IN(datatype, c_integers) || CAPTURE_IN(datatype, fortran_integers) ||
               datatype == MPI_BYTE;
    if (op == MPI_MINLOC || op == MPI_MAXLOC)
        return CAPTURE_IN(datatype, integer_pairs);
#undef CAPTURE_IN
    return false;
}

static void guard_barrier(MPI_Comm comm)
{
    MPI_Request barrier;
    if (comm == MPI_COMM_NULL || PMPI_Ibarrier(comm, &barrier) != MPI_SUCCESS)
        return; /* the blocking call reports what is wrong with the communicator */
    for (int polls = 0;;) {
        int done = 0;
        if (PMPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
            return;
        capture_guard_pause_point(&polls);
    }
}

/* The barrier is the tool's, not the application's call: inside the tool (nesting.h). */
void capture_guard_begin(MPI_Comm comm)
{
    capture_tool_enter();
    guard_barrier(comm);
    capture_tool_exit();
}

void capture_guard_end(void)
{
    capture_pause_if_paused();
}

static void mirror_on_real_world(int error, MPI_Comm comm, MPI_Errhandler errhandler)
{
    if (error != MPI_SUCCESS || comm != capture_app_world || comm == MPI_COMM_WORLD)
        return;
    capture_lock(&world_handler_lock);
    if (quiet_depth > 0) { /* another thread tests quietly: it restores this one */
        PMPI_Errhandler_free(&world_handler);
        PMPI_Comm_get_errhandler(capture_app_world, &world_handler);
    } else {
        PMPI_Comm_set_errhandler(MPI_COMM_WORLD, errhandler);
    }
    capture_unlock(&world_handler_lock);
}

int capture_comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    const int error = PMPI_Comm_set_errhandler(comm, errhandler);
    mirror_on_real_world(error, comm, errhandler);
    return error;
}

int capture_errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    const int error = PMPI_Errhandler_set(comm, errhandler);
    mirror_on_real_world(error, comm, errhandler);
    return error;
}

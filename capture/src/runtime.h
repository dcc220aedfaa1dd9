/*
 * runtime.h — the world split and the state every wrapper needs (private to libotfx-capture).
 */
#ifndef OTFX_CAPTURE_RUNTIME_H
#define OTFX_CAPTURE_RUNTIME_H

#include "recorder.h"

#include <otfx/tbon.h>

#include <mpi.h>
#include <pthread.h>

/* The application's world: MPI_COMM_WORLD until MPI_Init and in pass-through mode, afterwards the
 * communicator of the first N world ranks. */
CAPTURE_INTERNAL extern MPI_Comm capture_app_world;

/* Every communicator argument goes through this: the application names its world MPI_COMM_WORLD. */
static inline MPI_Comm capture_application_comm(MPI_Comm comm)
{
    return comm == MPI_COMM_WORLD ? capture_app_world : comm;
}

struct capture_layout {
    int world_size;  /* ranks of the real MPI_COMM_WORLD */
    int app_size;    /* N: application ranks 0 … N-1 */
    int place_count; /* P: places N … N+P-1 (0: pass-through) */
    /* The tool tree (tbon.h) from N, P and OTFX_FANIN: which event place serves which rank. */
    otfx_tbon_layout tree;
};
CAPTURE_INTERNAL extern struct capture_layout capture_layout;

/* World rank of the event place serving application rank r. */
static inline int capture_place_of(int app_rank)
{
    return capture_layout.app_size + (int)otfx_tbon_place_of_rank(&capture_layout.tree, (uint32_t)app_rank);
}
/* This application rank's event place (world rank), set by the world split; -1 on places. */
CAPTURE_INTERNAL extern int capture_own_place;

/* dying.c (capture/README.md, "When a rank dies"): after the world split on an application rank with a
 * place, handlers for the fatal signals and an exit hook that send the place the rank's records and how
 * it ended. MPI_Abort's wrapper calls capture_dying_abort first: it returns only when the places did not
 * end the job in time. */
CAPTURE_INTERNAL void capture_dying_install(void);
CAPTURE_INTERNAL void capture_dying_abort(int error_code);

/* transport.c */
CAPTURE_INTERNAL extern MPI_Comm capture_tool_comm;
/* place.c: runs the place (event or analysis place of the tree); ends with MPI_Finalize and exit(0).
 * places_comm holds the places only (place index = rank in it; this process owns it), thread_provided
 * is what MPI_Init_thread provided (MPI_THREAD_MULTIPLE where the MPI library can). */
CAPTURE_INTERNAL _Noreturn void capture_place_loop(int world_rank, MPI_Comm places_comm, int thread_provided);

/* ---- threads (capture/README.md, "Threads") --------------------------------------------------------
 * Whether the application may call MPI from several threads at once: it was given MPI_THREAD_MULTIPLE.
 * Set in MPI_Init(_thread) before the application has threads, never changed afterwards. Only then do the
 * request table (requests.c) and the communicator cache (communicators.c) take their locks: a
 * single-threaded application pays one predictable branch per table operation. */
CAPTURE_INTERNAL extern bool capture_threads_concurrent;
static inline void capture_lock(pthread_mutex_t *lock)
{
    if (__builtin_expect(capture_threads_concurrent, 0))
        pthread_mutex_lock(lock);
}
static inline void capture_unlock(pthread_mutex_t *lock)
{
    if (__builtin_expect(capture_threads_concurrent, 0))
        pthread_mutex_unlock(lock);
}

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
/* A record of this thread names communicator `comm_id` without a capture_comm_lookup (persistent
 * collectives started, collective requests completed, possibly by another thread than the one that
 * created them): announces it in this thread's stream first if it has not yet. */
CAPTURE_INTERNAL void capture_comm_announce(uint32_t comm_id);

/* Fortran (mpi_f08) MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE: addresses inside libmpichfort, NULL when
 * the program has no Fortran. */
CAPTURE_INTERNAL const void *capture_f08_status_ignore(void);
CAPTURE_INTERNAL const void *capture_f08_statuses_ignore(void);
/* mpi_f08 weight arrays (MPI_Dist_graph_*): Fortran's MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY arrive as the
 * addresses of libmpichfort's module variables; returns C's MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY for them
 * and `weights` otherwise, as MPICH's own entry points do. */
CAPTURE_INTERNAL int *capture_f08_weights(const int *weights);

/* mpi_f08 character arguments (fortran_strings.c). Each C string lives in `stack` (stack_size bytes, an
 * array of the generated entry point) when it fits, else on the heap; NULL when the heap allocation
 * failed (the entry point then returns MPI_ERR_NO_MEM without calling MPI). Release with
 * capture_f08_string_free. */
#define CAPTURE_F08_STRING_STACK (MPI_MAX_INFO_VAL + 1) /* every MPI_MAX_* string but the version */
/* Input: the Fortran string without leading and trailing blanks, NUL-terminated (MPICH 4.0.2's
 * MPIR_Fortran_string_f2c). */
CAPTURE_INTERNAL char *capture_f08_string_in(const char *fstring, size_t flen, char *stack,
                                             size_t stack_size);
/* Output: an empty C string of `size` bytes for MPI to fill. */
CAPTURE_INTERNAL char *capture_f08_string_buffer(size_t size, char *stack, size_t stack_size);
/* Copies a C string back into flen Fortran characters, blank padded (MPIR_Fortran_string_c2f),
 * truncated to flen. */
CAPTURE_INTERNAL void capture_f08_string_out(const char *cstring, char *fstring, size_t flen);
CAPTURE_INTERNAL void capture_f08_string_free(char *cstring, const char *stack);

#endif

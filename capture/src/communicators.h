/*
 * communicators.h — the communicator cache and the payload sizes (private to libotfx-capture;
 * communicators.c).
 */
#ifndef OTFX_CAPTURE_COMMUNICATORS_H
#define OTFX_CAPTURE_COMMUNICATORS_H

#include "linkage.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

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

/* A record of this thread names communicator `comm_id` without a capture_comm_lookup (persistent
 * collectives started, collective requests completed, possibly by another thread than the one that
 * created them): announces it in this thread's stream first if it has not yet. */
CAPTURE_INTERNAL void capture_comm_announce(uint32_t comm_id);

#endif

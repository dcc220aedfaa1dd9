/*
 * communicators.c — the communicator cache: id and world ranks of every communicator in use, so that a
 * peer becomes a world rank with one array lookup. Entries are made once per communicator (the only
 * allocations, at creation or first use) and removed when it is freed, since MPICH reuses handles.
 * Not thread safe: MPI calls of one rank must not run concurrently (MPI_THREAD_SERIALIZED at most).
 */
#include "capture_functions.h"
#include "recorder.h"
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>

CAPTURE_INTERNAL void capture_write_comm(enum capture_record_kind kind, int function_id,
                                         const struct capture_comm *comm, bool with_members);

struct comm_slot {
    MPI_Comm handle; /* MPI_COMM_NULL: free */
    struct capture_comm *comm;
};

static struct comm_slot *slots;
static size_t slot_count; /* power of two */
static size_t used_slots;
static uint32_t next_comm_id;
static MPI_Group app_world_group = MPI_GROUP_NULL;

static size_t slot_of(MPI_Comm handle)
{
    /* MPICH handles are small integers with the kind in the top bits: a multiplicative hash spreads them. */
    uint32_t key = (uint32_t)(uintptr_t)handle;
    return (size_t)((key * 2654435761u) >> 7) & (slot_count - 1);
}

static void *checked_calloc(size_t count, size_t size)
{
    void *memory = calloc(count ? count : 1, size);
    if (!memory) {
        fprintf(stderr, "otfx-capture: out of memory in the communicator cache: aborting\n");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    return memory;
}

static void insert_slot(struct capture_comm *comm);

static void grow_table(void)
{
    struct comm_slot *old = slots;
    size_t old_count = slot_count;
    slot_count = slot_count ? slot_count * 2 : 64;
    slots = checked_calloc(slot_count, sizeof(*slots));
    for (size_t i = 0; i < slot_count; i++)
        slots[i].handle = MPI_COMM_NULL;
    used_slots = 0;
    for (size_t i = 0; i < old_count; i++)
        if (old[i].handle != MPI_COMM_NULL)
            insert_slot(old[i].comm);
    free(old);
}

static void insert_slot(struct capture_comm *comm)
{
    if ((used_slots + 1) * 2 > slot_count)
        grow_table();
    size_t i = slot_of(comm->handle);
    while (slots[i].handle != MPI_COMM_NULL)
        i = (i + 1) & (slot_count - 1);
    slots[i].handle = comm->handle;
    slots[i].comm = comm;
    used_slots++;
}

static int32_t *world_ranks_of(MPI_Group group, int size)
{
    int32_t *world = checked_calloc((size_t)size, sizeof(int32_t));
    int *ranks = checked_calloc((size_t)size, sizeof(int));
    int *translated = checked_calloc((size_t)size, sizeof(int));
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    if (app_world_group == MPI_GROUP_NULL)
        PMPI_Comm_group(capture_app_world, &app_world_group);
    PMPI_Group_translate_ranks(group, size, ranks, app_world_group, translated);
    for (int i = 0; i < size; i++)
        world[i] = translated[i] == MPI_UNDEFINED ? -1 : translated[i];
    free(ranks);
    free(translated);
    return world;
}

static struct capture_comm *add_comm(MPI_Comm handle, int function_id)
{
    struct capture_comm *comm = checked_calloc(1, sizeof(*comm));
    int inter = 0;
    MPI_Group group;
    comm->handle = handle;
    comm->id = next_comm_id++;
    comm->indegree = comm->outdegree = -1;
    PMPI_Comm_test_inter(handle, &inter);
    comm->inter = inter != 0;
    PMPI_Comm_rank(handle, &comm->rank);
    PMPI_Comm_size(handle, &comm->size);
    PMPI_Comm_group(handle, &group);
    comm->local_world = world_ranks_of(group, comm->size);
    PMPI_Group_free(&group);
    if (comm->inter) {
        PMPI_Comm_remote_size(handle, &comm->remote_size);
        PMPI_Comm_remote_group(handle, &group);
        comm->remote_world = world_ranks_of(group, comm->remote_size);
        PMPI_Group_free(&group);
    }
    insert_slot(comm);
    capture_write_comm(CAPTURE_RECORD_COMM_CREATED, function_id, comm, true);
    return comm;
}

static struct capture_comm *find_comm(MPI_Comm handle)
{
    if (!slot_count)
        return NULL;
    for (size_t i = slot_of(handle);; i = (i + 1) & (slot_count - 1)) {
        if (slots[i].handle == handle)
            return slots[i].comm;
        if (slots[i].handle == MPI_COMM_NULL)
            return NULL;
    }
}

const struct capture_comm *capture_comm_lookup(MPI_Comm handle)
{
    struct capture_comm *comm = find_comm(handle);
    /* First use of a communicator that no traced call created (the application's world, MPI_COMM_SELF,
     * MPI_Comm_get_parent): defined now, under MPI_Init's function id since no call created it. */
    return comm ? comm : add_comm(handle, CAPTURE_FN_MPI_Init);
}

void capture_comm_created(int function_id, MPI_Comm handle)
{
    struct capture_comm *stale = find_comm(handle);
    if (stale)
        capture_comm_freed(function_id,
                           handle); /* a handle reused behind our back (MPI_Comm_free untraced) */
    add_comm(handle, function_id);
}

static void remove_comm(MPI_Comm handle, struct capture_comm *comm);

void capture_comm_freed(int function_id, MPI_Comm handle)
{
    struct capture_comm *comm = find_comm(handle);
    if (!comm)
        return;
    capture_write_comm(CAPTURE_RECORD_COMM_FREED, function_id, comm, false);
    remove_comm(handle, comm);
}

void capture_comm_forget(MPI_Comm handle)
{
    struct capture_comm *comm = capture_has_place ? find_comm(handle) : NULL;
    if (comm)
        remove_comm(handle, comm);
}

static void remove_comm(MPI_Comm handle, struct capture_comm *comm)
{
    /* Backward-shift deletion keeps every probe sequence unbroken without tombstones. */
    size_t hole = slot_of(handle);
    while (slots[hole].handle != handle)
        hole = (hole + 1) & (slot_count - 1);
    slots[hole].handle = MPI_COMM_NULL;
    used_slots--;
    for (size_t next = (hole + 1) & (slot_count - 1); slots[next].handle != MPI_COMM_NULL;
         next = (next + 1) & (slot_count - 1)) {
        size_t home = slot_of(slots[next].handle);
        bool movable = hole <= next ? (home <= hole || home > next) : (home <= hole && home > next);
        if (movable) {
            slots[hole] = slots[next];
            slots[next].handle = MPI_COMM_NULL;
            hole = next;
        }
    }
    free(comm->local_world);
    free(comm->remote_world);
    free(comm);
}

void capture_comm_neighbor_degrees(MPI_Comm handle, int *indegree, int *outdegree)
{
    struct capture_comm *comm = (struct capture_comm *)capture_comm_lookup(handle);
    if (comm->indegree < 0) {
        int topology = MPI_UNDEFINED, weighted = 0, ndims = 0, neighbors = 0;
        comm->indegree = comm->outdegree = 0;
        PMPI_Topo_test(handle, &topology);
        if (topology == MPI_CART) {
            PMPI_Cartdim_get(handle, &ndims);
            comm->indegree = comm->outdegree = 2 * ndims;
        } else if (topology == MPI_GRAPH) {
            PMPI_Graph_neighbors_count(handle, comm->rank, &neighbors);
            comm->indegree = comm->outdegree = neighbors;
        } else if (topology == MPI_DIST_GRAPH) {
            PMPI_Dist_graph_neighbors_count(handle, &comm->indegree, &comm->outdegree, &weighted);
        }
    }
    *indegree = comm->indegree;
    *outdegree = comm->outdegree;
}

int32_t capture_peer_world(const struct capture_comm *comm, int peer)
{
    if (peer == MPI_ANY_SOURCE)
        return -2;
    if (comm->inter) {
        if (peer >= 0 && peer < comm->remote_size)
            return comm->remote_world[peer];
        return -1;
    }
    if (peer >= 0 && peer < comm->size)
        return comm->local_world[peer];
    return -1;
}

int32_t capture_root_world(const struct capture_comm *comm, int root)
{
    if (comm->inter && root == MPI_ROOT)
        return comm->local_world[comm->rank];
    return capture_peer_world(comm, root);
}

int64_t capture_type_bytes(MPI_Datatype datatype)
{
    MPI_Count size = 0;
    if (datatype == MPI_DATATYPE_NULL)
        return 0;
    if (PMPI_Type_size_c(datatype, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (int64_t)size;
}

int64_t capture_sum_int(const int *counts, int n)
{
    int64_t sum = 0;
    for (int i = 0; counts && i < n; i++)
        sum += counts[i];
    return sum;
}

int64_t capture_sum_count(const MPI_Count *counts, int n)
{
    int64_t sum = 0;
    for (int i = 0; counts && i < n; i++)
        sum += (int64_t)counts[i];
    return sum;
}

int64_t capture_sumw_int(const int *counts, const MPI_Datatype *types, int n)
{
    int64_t sum = 0;
    for (int i = 0; counts && types && i < n; i++)
        sum += (int64_t)counts[i] * capture_type_bytes(types[i]);
    return sum;
}

int64_t capture_sumw_count(const MPI_Count *counts, const MPI_Datatype *types, int n)
{
    int64_t sum = 0;
    for (int i = 0; counts && types && i < n; i++)
        sum += (int64_t)counts[i] * capture_type_bytes(types[i]);
    return sum;
}

/*
 * communicators.c — the communicator cache: id and world ranks of every communicator in use, so that a
 * peer becomes a world rank with one array lookup. Entries are made once per communicator (the only
 * allocations, at creation or first use) and removed when it is freed, since MPICH reuses handles.
 *
 * Threads (capture/README.md, "Threads"): one cache per rank, ids dense per rank and never reused. At
 * MPI_THREAD_MULTIPLE the table is changed and searched under cache_lock (capture_lock: nothing without
 * concurrency); records are written outside it. Each thread's records go to the place in batches of
 * their own, which arrive in any order, so every thread announces a communicator (COMM_CREATED, with
 * the creating function and the members) in its own stream before its first record that names it:
 * a per-thread bit per id, one test per lookup. The place defines the id on the first announcement
 * that arrives and accepts the others.
 */
#include "communicators.h"
#include "capture_functions.h"
#include "nesting.h"
#include "recorder.h"
#include "world.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>

/* The cache's entry: what every record needs, and what a later announcement in another thread's stream
 * must repeat (the place names communicators by their creating function). */
struct cached_comm {
    struct capture_comm comm; /* first: callers get &entry->comm */
    uint16_t creator;         /* function id of the call that created it (MPI_Init: found in use) */
};

struct comm_slot {
    MPI_Comm handle; /* MPI_COMM_NULL: free */
    struct cached_comm *entry;
};

static struct comm_slot *slots;
static size_t slot_count; /* power of two */
static size_t used_slots;
static uint32_t next_comm_id;
static MPI_Group app_world_group = MPI_GROUP_NULL;
static struct cached_comm **by_id; /* id → live entry (NULL once freed), for capture_comm_announce */
static uint32_t by_id_capacity;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Bit `id` set: this thread's stream announced communicator `id`. Freed when the thread exits (a pthread
 * key destructor runs in the exiting thread, which still sees its _Thread_local variables). */
static CAPTURE_HOT_THREAD_LOCAL uint64_t *announced;
static CAPTURE_HOT_THREAD_LOCAL uint32_t announced_words;
static pthread_key_t announced_key;
static pthread_once_t announced_key_once = PTHREAD_ONCE_INIT;

static void free_announced(void *unused)
{
    (void)unused;
    free(announced);
    announced = NULL;
    announced_words = 0;
}

static void create_announced_key(void)
{
    pthread_key_create(&announced_key, free_announced);
}

static size_t slot_of(MPI_Comm handle)
{
    /* MPICH handles are small integers with the kind in the top bits: a multiplicative hash spreads them. */
    uint32_t key = (uint32_t)(uintptr_t)handle;
    return (size_t)((key * 2654435761u) >> 7) & (slot_count - 1);
}

static void out_of_memory(void)
{
    fprintf(stderr, "otfx-capture: out of memory in the communicator cache: aborting\n");
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

static void *checked_calloc(size_t count, size_t size)
{
    void *memory = calloc(count ? count : 1, size);
    if (!memory)
        out_of_memory();
    return memory;
}

static void insert_slot(struct cached_comm *entry);

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
            insert_slot(old[i].entry);
    free(old);
}

static void insert_slot(struct cached_comm *entry)
{
    if ((used_slots + 1) * 2 > slot_count)
        grow_table();
    size_t i = slot_of(entry->comm.handle);
    while (slots[i].handle != MPI_COMM_NULL)
        i = (i + 1) & (slot_count - 1);
    slots[i].handle = entry->comm.handle;
    slots[i].entry = entry;
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

/* A new entry with the next id (under cache_lock); announced by the caller, outside the lock. */
static struct cached_comm *add_comm(MPI_Comm handle, int function_id)
{
    struct cached_comm *entry = checked_calloc(1, sizeof(*entry));
    struct capture_comm *comm = &entry->comm;
    int inter = 0;
    MPI_Group group;
    entry->creator = (uint16_t)function_id;
    comm->handle = handle;
    comm->id = next_comm_id++;
    comm->indegree = comm->outdegree = -1;
    /* MPI may call an error handler from the queries (a communicator MPI no longer knows): inside the
     * tool (nesting.h), the cache's lock held. */
    capture_tool_enter();
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
    capture_tool_exit();
    insert_slot(entry);
    if (comm->id >= by_id_capacity) {
        const uint32_t known = by_id_capacity;
        if (!otfx_reserve_u32((void **)&by_id, &by_id_capacity, (size_t)comm->id + 1, sizeof(*by_id), 64))
            out_of_memory();
        for (uint32_t i = known; i < by_id_capacity; i++)
            by_id[i] = NULL;
    }
    by_id[comm->id] = entry;
    return entry;
}

static struct cached_comm *find_comm(MPI_Comm handle)
{
    if (!slot_count)
        return NULL;
    for (size_t i = slot_of(handle);; i = (i + 1) & (slot_count - 1)) {
        if (slots[i].handle == handle)
            return slots[i].entry;
        if (slots[i].handle == MPI_COMM_NULL)
            return NULL;
    }
}

static inline bool announced_here(uint32_t id)
{
    const uint32_t word = id >> 6;
    return word < announced_words && (announced[word] >> (id & 63)) & 1u;
}

/* The definition in this thread's stream (the creating thread's at creation, others' at first use). */
static void announce(const struct cached_comm *entry)
{
    const uint32_t id = entry->comm.id, word = id >> 6;
    if (word >= announced_words) {
        if (!announced_words) {
            pthread_once(&announced_key_once, create_announced_key);
            pthread_setspecific(announced_key, &announced_key);
        }
        const uint32_t known = announced_words;
        if (!otfx_reserve_u32((void **)&announced, &announced_words, (size_t)word + 1, sizeof(*announced), 4))
            out_of_memory();
        for (uint32_t i = known; i < announced_words; i++)
            announced[i] = 0;
    }
    announced[word] |= (uint64_t)1 << (id & 63);
    capture_write_comm(CAPTURE_RECORD_COMM_CREATED, entry->creator, &entry->comm, true);
}

/* First use of a communicator that no traced call created (the application's world, MPI_COMM_SELF,
 * MPI_Comm_get_parent): defined now, under MPI_Init's function id since no call created it. */
static struct cached_comm *find_or_add(MPI_Comm handle)
{
    struct cached_comm *entry = find_comm(handle);
    return __builtin_expect(entry != NULL, 1) ? entry : add_comm(handle, CAPTURE_FN_MPI_Init);
}

static __attribute__((noinline)) const struct capture_comm *lookup_locked(MPI_Comm handle)
{
    pthread_mutex_lock(&cache_lock);
    struct cached_comm *entry = find_or_add(handle);
    pthread_mutex_unlock(&cache_lock);
    if (!announced_here(entry->comm.id))
        announce(entry);
    return &entry->comm;
}

/* Every record that names a communicator comes through here: the single-threaded path is the probe, one
 * flag test and one bit test. */
const struct capture_comm *capture_comm_lookup(MPI_Comm handle)
{
    if (__builtin_expect(capture_threads_concurrent, 0))
        return lookup_locked(handle);
    struct cached_comm *entry = find_or_add(handle);
    if (__builtin_expect(!announced_here(entry->comm.id), 0))
        announce(entry);
    return &entry->comm;
}

const struct capture_comm *capture_comm_find(MPI_Comm handle)
{
    capture_lock(&cache_lock);
    struct cached_comm *entry = find_or_add(handle);
    capture_unlock(&cache_lock);
    return &entry->comm;
}

void capture_comm_announce(uint32_t comm_id)
{
    if (announced_here(comm_id))
        return;
    capture_lock(&cache_lock);
    struct cached_comm *entry = comm_id < by_id_capacity ? by_id[comm_id] : NULL;
    capture_unlock(&cache_lock);
    if (entry) /* else freed meanwhile: nothing left to announce it with */
        announce(entry);
}

static void unlink_comm(MPI_Comm handle, struct cached_comm *entry);
static void destroy_comm(struct cached_comm *entry)
{
    free(entry->comm.local_world);
    free(entry->comm.remote_world);
    free(entry);
}

void capture_comm_created(int function_id, MPI_Comm handle, bool record)
{
    capture_lock(&cache_lock);
    struct cached_comm *stale = find_comm(handle); /* a handle reused behind our back (untraced free) */
    if (stale)
        unlink_comm(handle, stale);
    struct cached_comm *entry = add_comm(handle, function_id);
    capture_unlock(&cache_lock);
    if (stale) {
        if (record)
            capture_write_comm(CAPTURE_RECORD_COMM_FREED, function_id, &stale->comm, false);
        destroy_comm(stale);
    }
    if (record)
        announce(entry);
}

void capture_comm_freed(int function_id, MPI_Comm handle)
{
    capture_lock(&cache_lock);
    struct cached_comm *entry = find_comm(handle);
    if (entry)
        unlink_comm(handle, entry);
    capture_unlock(&cache_lock);
    if (!entry)
        return;
    capture_write_comm(CAPTURE_RECORD_COMM_FREED, function_id, &entry->comm, false);
    destroy_comm(entry);
}

void capture_comm_forget(MPI_Comm handle)
{
    if (!capture_has_place)
        return;
    capture_lock(&cache_lock);
    struct cached_comm *entry = find_comm(handle);
    if (entry)
        unlink_comm(handle, entry);
    capture_unlock(&cache_lock);
    if (entry)
        destroy_comm(entry);
}

/* Out of the table and the id map (under cache_lock); the caller destroys it. */
static void unlink_comm(MPI_Comm handle, struct cached_comm *entry)
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
    by_id[entry->comm.id] = NULL;
}

void capture_comm_neighbor_degrees(MPI_Comm handle, int *indegree, int *outdegree)
{
    struct capture_comm *comm = (struct capture_comm *)capture_comm_lookup(handle);
    capture_lock(&cache_lock); /* filled in on first use: two threads may get there at once */
    if (comm->indegree < 0) {
        int topology = MPI_UNDEFINED, weighted = 0, ndims = 0, neighbors = 0;
        comm->indegree = comm->outdegree = 0;
        capture_tool_enter();
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
        capture_tool_exit();
    }
    *indegree = comm->indegree;
    *outdegree = comm->outdegree;
    capture_unlock(&cache_lock);
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
    capture_tool_enter(); /* an invalid datatype goes to the error handler */
    const int error = PMPI_Type_size_c(datatype, &size);
    capture_tool_exit();
    if (error != MPI_SUCCESS || size < 0)
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

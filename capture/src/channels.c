/*
 * channels.c — message ordinals per channel (otfx/capture_wire.h, capture_p2p_record.sequence).
 *
 * OTF2 readers pair a send with a receive by their order on (sender, receiver, communicator, tag): the
 * n-th send is the n-th receive. otfx makes that order explicit: each end of a channel numbers its
 * messages, so a snapshot can tell which sends and receives belong together even after a reduction
 * removed some of either side (otfx_otf2_export_shared keeps only pairs whose both ends it holds).
 *
 * One table per rank, since a channel is the rank's (threads of one rank share their channels: MPI
 * orders the messages of one sender, not of one thread). Keyed by (communicator id, peer world rank,
 * tag, end); open addressing with linear probing, doubled at half full, never shrunk: a steady state
 * allocates nothing. It holds one entry per channel the rank ever used, 24 bytes each — programs that
 * make up a new tag per message grow it without bound (counting them is what pairing needs).
 *
 * Collectives are numbered the same way, per communicator (capture_collective_next): the n-th
 * collective a rank started on a communicator is the n-th one of every other member, since MPI has every
 * member call a communicator's collectives in the same order. A snapshot keeps a collective only when
 * every member's trace holds it. Communicator ids are dense per rank (communicators.c), so the counts are
 * an array indexed by id, 8 bytes per communicator the rank ever knew.
 *
 * Threads: at MPI_THREAD_MULTIPLE every operation holds channel_lock (capture_lock: nothing without
 * concurrency).
 */
#include "channels.h"
#include "world.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>

struct channel {
    uint32_t comm_id;
    int32_t peer;
    int32_t tag;
    uint32_t end; /* enum capture_channel_end; 0: free slot */
    uint64_t count;
};

static struct channel *table;
static size_t table_size; /* power of two */
static size_t table_used;
static pthread_mutex_t channel_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t *collective_counts; /* indexed by communicator id */
static size_t collective_capacity;

static inline size_t slot_of(uint32_t comm_id, int32_t peer, int32_t tag, uint32_t end)
{
    uint64_t key = ((uint64_t)comm_id << 32 | (uint32_t)peer) ^
                   ((uint64_t)(uint32_t)tag << 2 | end) * UINT64_C(0x9e3779b97f4a7c15);
    key *= UINT64_C(0xc2b2ae3d27d4eb4f);
    return (size_t)(key >> 32) & (table_size - 1);
}

static struct channel *add(uint32_t comm_id, int32_t peer, int32_t tag, uint32_t end);

static void grow(void)
{
    struct channel *old = table;
    size_t old_size = table_size;
    table_size = table_size ? 2 * table_size : 256;
    table = calloc(table_size, sizeof(*table));
    if (!table) {
        fprintf(stderr, "otfx-capture: out of memory for the message channels: aborting\n");
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    table_used = 0;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].end)
            add(old[i].comm_id, old[i].peer, old[i].tag, old[i].end)->count = old[i].count;
    free(old);
}

/* A new channel (not in the table). */
static struct channel *add(uint32_t comm_id, int32_t peer, int32_t tag, uint32_t end)
{
    if ((table_used + 1) * 2 > table_size)
        grow();
    size_t i = slot_of(comm_id, peer, tag, end);
    while (table[i].end)
        i = (i + 1) & (table_size - 1);
    table[i] = (struct channel){comm_id, peer, tag, end, 0};
    table_used++;
    return &table[i];
}

static inline struct channel *find_or_add(uint32_t comm_id, int32_t peer, int32_t tag, uint32_t end)
{
    if (__builtin_expect(table_size != 0, 1)) {
        for (size_t i = slot_of(comm_id, peer, tag, end); table[i].end; i = (i + 1) & (table_size - 1)) {
            struct channel *slot = &table[i];
            if (slot->comm_id == comm_id && slot->peer == peer && slot->tag == tag && slot->end == end)
                return slot;
        }
    }
    return add(comm_id, peer, tag, end);
}

uint64_t capture_channel_next(uint32_t comm_id, int32_t peer, int32_t tag, enum capture_channel_end end)
{
    if (peer < 0)
        return 0; /* MPI_PROC_NULL or a process outside the application: no message */
    capture_lock(&channel_lock);
    const uint64_t ordinal = ++find_or_add(comm_id, peer, tag, end)->count;
    capture_unlock(&channel_lock);
    return ordinal;
}

bool capture_channel_withdraw(uint32_t comm_id, int32_t peer, int32_t tag, enum capture_channel_end end,
                              uint64_t ordinal)
{
    if (peer < 0 || ordinal == 0)
        return false;
    capture_lock(&channel_lock);
    struct channel *channel = find_or_add(comm_id, peer, tag, end);
    const bool last = channel->count == ordinal;
    if (last)
        channel->count--;
    capture_unlock(&channel_lock);
    return last;
}

uint64_t capture_collective_next(uint32_t comm_id)
{
    capture_lock(&channel_lock);
    if (comm_id >= collective_capacity) {
        const size_t known = collective_capacity;
        if (!otfx_reserve((void **)&collective_counts, &collective_capacity, (size_t)comm_id + 1,
                          sizeof(*collective_counts), 64)) {
            fprintf(stderr, "otfx-capture: out of memory for the collective ordinals: aborting\n");
            PMPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = known; i < collective_capacity; i++)
            collective_counts[i] = 0;
    }
    const uint64_t ordinal = ++collective_counts[comm_id];
    capture_unlock(&channel_lock);
    return ordinal;
}

/* otf2_pairing.c — which point-to-point records an OTF2 export writes (otf2_pairing.h). */
#include "otf2_pairing.h"

#include "error.h"
#include <otfx/support/growth.h>
#include <otfx/support/hash.h>

#include <stdlib.h>
#include <string.h>

/* ---- sets of ordinals or request ids, as runs of consecutive values ---------------------------------- */

typedef struct run {
    uint64_t first, last;
} run;

typedef struct run_set {
    run *runs;
    size_t count, capacity;
    bool sorted; /* runs ordered and disjoint */
} run_set;

static bool runs_reserve(run_set *set, size_t needed)
{
    if (needed <= set->capacity)
        return true;
    if (!otfx_reserve((void **)&set->runs, &set->capacity, needed, sizeof *set->runs, 4))
        return false;
    return true;
}

static int compare_runs(const void *a, const void *b)
{
    const run *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* Sorted, overlapping and touching runs merged. */
static void runs_normalize(run_set *set)
{
    if (set->sorted)
        return;
    if (set->count > 1)
        qsort(set->runs, set->count, sizeof *set->runs, compare_runs);
    size_t kept = 0;
    for (size_t i = 0; i < set->count; i++) {
        if (kept &&
            (set->runs[kept - 1].last == UINT64_MAX || set->runs[i].first <= set->runs[kept - 1].last + 1)) {
            if (set->runs[i].last > set->runs[kept - 1].last)
                set->runs[kept - 1].last = set->runs[i].last;
        } else {
            set->runs[kept++] = set->runs[i];
        }
    }
    set->count = kept;
    set->sorted = true;
}

/* Values mostly come in increasing order: each extends the last run or starts the next. Others (another
 * thread's trace of the same rank, an imported archive) make the set unsorted until runs_normalize; an
 * unsorted set is normalized before it grows, so interleaved values cost no more than their runs. */
static bool runs_add(run_set *set, uint64_t value)
{
    if (set->count) {
        run *last = &set->runs[set->count - 1];
        if (value >= last->first && value <= last->last)
            return true;
        if (last->last != UINT64_MAX && value == last->last + 1) {
            last->last = value;
            return true;
        }
    }
    if (set->count == set->capacity && !set->sorted)
        runs_normalize(set);
    if (!runs_reserve(set, set->count + 1))
        return false;
    set->sorted = !set->count || (set->sorted && value > set->runs[set->count - 1].last);
    set->runs[set->count++] = (run){value, value};
    return true;
}

static bool runs_contain(const run_set *set, uint64_t value)
{
    size_t low = 0, high = set->count;
    while (low < high) {
        const size_t middle = low + (high - low) / 2;
        if (set->runs[middle].last < value)
            low = middle + 1;
        else
            high = middle;
    }
    return low < set->count && set->runs[low].first <= value;
}

static uint64_t runs_size(const run *runs, size_t count)
{
    uint64_t size = 0;
    for (size_t i = 0; i < count; i++)
        size += runs[i].last - runs[i].first + 1;
    return size;
}

/* Appends the intersection of two sorted run lists to `out` (left unsorted: normalize after). */
static bool runs_intersect(run_set *out, const run *a, size_t a_count, const run *b, size_t b_count)
{
    size_t i = 0, j = 0;
    while (i < a_count && j < b_count) {
        const uint64_t first = a[i].first > b[j].first ? a[i].first : b[j].first;
        const uint64_t last = a[i].last < b[j].last ? a[i].last : b[j].last;
        if (first <= last) {
            if (!runs_reserve(out, out->count + 1))
                return false;
            out->runs[out->count++] = (run){first, last};
        }
        if (a[i].last < b[j].last)
            i++;
        else
            j++;
    }
    out->sorted = false;
    return true;
}

static void runs_free(run_set *set)
{
    free(set->runs);
    *set = (run_set){0};
}

/* ---- channel ends and ranks --------------------------------------------------------------------------- */

typedef struct end_key {
    uint32_t comm; /* this process's reference (notes) or the exchange's communicator index (decide) */
    uint32_t sender, receiver, tag;
    uint32_t receiving; /* 0: the sender's end, 1: the receiver's */
} end_key;

typedef struct channel_end {
    end_key key;
    run_set held;     /* ordinals this process's traces hold in the window */
    run_set paired;   /* of these, the ones whose other end is held too (after decide) */
    uint32_t channel; /* the channel's number, the same on every process (after decide) */
} channel_end;

typedef struct rank_requests {
    uint32_t rank;
    run_set started;           /* ids of the requests whose start the window holds */
    run_set dropped;           /* ids of the requests of the messages left out */
    bool numbered_collectives; /* its traces hold collectives with ordinals */
} rank_requests;

/* A communicator member's collectives on this process (otf2_pairing.h, "Collectives"). */
typedef struct coll_member {
    uint32_t comm;        /* this process's reference */
    uint32_t rank;        /* world rank */
    run_set begun, ended; /* ordinals of the blocking collectives whose COLL_BEGIN / COLL_END are held */
    run_set held;         /* ordinals of the instances held whole (otfx_pairing_write) */
    run_set kept;         /* of every member's held ones, those all covered members hold (decide) */
} coll_member;

/* A nonblocking collective's completion: its instance is held when its request's start is too. */
typedef struct nbc_done {
    uint32_t comm, rank;
    uint64_t seq, request;
} nbc_done;

struct otfx_pairing {
    coll_member *members;
    size_t member_count, member_capacity;
    otfx_hash_index member_index; /* of `members` (programs may split many communicators) */
    nbc_done *nbcs;
    size_t nbc_count, nbc_capacity;
    run_set covered; /* ranks whose traces this process exports */
    uint64_t collectives_left_out, collectives_left_out_everywhere;
    channel_end *ends;
    size_t end_count, end_capacity;
    otfx_hash_index end_index; /* of `ends` */
    rank_requests *ranks;
    size_t rank_count, rank_capacity;
    uint64_t unpaired, unpaired_everywhere;
    bool decided;
    bool dropped_sorted;
};

static bool same_key(const end_key *a, const end_key *b)
{
    return a->comm == b->comm && a->sender == b->sender && a->receiver == b->receiver && a->tag == b->tag &&
           a->receiving == b->receiving;
}

static uint64_t key_hash(const end_key *key)
{
    const uint64_t hash = otfx_hash_mix((uint64_t)key->comm << 32 | key->sender);
    return otfx_hash_mix(otfx_hash_mix(hash ^ ((uint64_t)key->receiver << 32 | key->tag)) ^ key->receiving);
}

static bool end_has_key(const void *ends, size_t end, const void *key)
{
    return same_key(&((const channel_end *)ends)[end].key, key);
}

static uint64_t end_hash(const void *ends, size_t end)
{
    return key_hash(&((const channel_end *)ends)[end].key);
}

static channel_end *find_end(const otfx_pairing *pairing, const end_key *key)
{
    const size_t at = otfx_hash_find(&pairing->end_index, key_hash(key), end_has_key, pairing->ends, key);
    return at == OTFX_HASH_NONE ? NULL : &pairing->ends[at];
}

static channel_end *find_or_add_end(otfx_pairing *pairing, const end_key *key)
{
    channel_end *end = find_end(pairing, key);
    if (end)
        return end;
    if (!otfx_reserve((void **)&pairing->ends, &pairing->end_capacity, pairing->end_count + 1,
                      sizeof *pairing->ends, 64) ||
        !otfx_hash_insert(&pairing->end_index, key_hash(key), pairing->end_count, end_hash, pairing->ends))
        return NULL;
    end = &pairing->ends[pairing->end_count++];
    *end = (channel_end){.key = *key};
    return end;
}

static rank_requests *find_rank(const otfx_pairing *pairing, uint32_t rank)
{
    for (size_t r = 0; r < pairing->rank_count; r++) /* a process holds few ranks */
        if (pairing->ranks[r].rank == rank)
            return &pairing->ranks[r];
    return NULL;
}

static rank_requests *find_or_add_rank(otfx_pairing *pairing, uint32_t rank)
{
    rank_requests *found = find_rank(pairing, rank);
    if (found)
        return found;
    if (!otfx_reserve((void **)&pairing->ranks, &pairing->rank_capacity, pairing->rank_count + 1,
                      sizeof *pairing->ranks, 8))
        return NULL;
    rank_requests *added = &pairing->ranks[pairing->rank_count++];
    *added = (rank_requests){.rank = rank};
    return added;
}

/* A member's key: its communicator reference and world rank in one word. */
static uint64_t member_key(uint32_t comm, uint32_t rank)
{
    return (uint64_t)comm << 32 | rank;
}

static bool member_has_key(const void *members, size_t member, const void *key)
{
    const coll_member *m = &((const coll_member *)members)[member];
    return member_key(m->comm, m->rank) == *(const uint64_t *)key;
}

static uint64_t member_hash(const void *members, size_t member)
{
    const coll_member *m = &((const coll_member *)members)[member];
    return otfx_hash_mix(member_key(m->comm, m->rank));
}

static coll_member *find_member(const otfx_pairing *pairing, uint32_t comm, uint32_t rank)
{
    const uint64_t key = member_key(comm, rank);
    const size_t at =
        otfx_hash_find(&pairing->member_index, otfx_hash_mix(key), member_has_key, pairing->members, &key);
    return at == OTFX_HASH_NONE ? NULL : &pairing->members[at];
}

static coll_member *find_or_add_member(otfx_pairing *pairing, uint32_t comm, uint32_t rank)
{
    coll_member *found = find_member(pairing, comm, rank);
    if (found)
        return found;
    if (!otfx_reserve((void **)&pairing->members, &pairing->member_capacity, pairing->member_count + 1,
                      sizeof *pairing->members, 8) ||
        !otfx_hash_insert(&pairing->member_index, otfx_hash_mix(member_key(comm, rank)),
                          pairing->member_count, member_hash, pairing->members))
        return NULL;
    coll_member *added = &pairing->members[pairing->member_count++];
    *added = (coll_member){.comm = comm, .rank = rank};
    return added;
}

static bool is_message(otfx_event_type type)
{
    return type == OTFX_EV_SEND || type == OTFX_EV_RECV || type == OTFX_EV_ISEND || type == OTFX_EV_IRECV;
}

static end_key key_of(uint32_t rank, const otfx_event *event)
{
    const bool receiving = event->type == OTFX_EV_RECV || event->type == OTFX_EV_IRECV;
    return (end_key){event->u.msg.comm, receiving ? event->u.msg.peer : rank,
                     receiving ? rank : event->u.msg.peer, event->u.msg.tag, receiving};
}

static otfx_status out_of_memory(void)
{
    return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory pairing the messages");
}

otfx_pairing *otfx_pairing_create(void)
{
    return calloc(1, sizeof(otfx_pairing));
}

void otfx_pairing_destroy(otfx_pairing *pairing)
{
    if (!pairing)
        return;
    for (size_t e = 0; e < pairing->end_count; e++) {
        runs_free(&pairing->ends[e].held);
        runs_free(&pairing->ends[e].paired);
    }
    for (size_t r = 0; r < pairing->rank_count; r++) {
        runs_free(&pairing->ranks[r].started);
        runs_free(&pairing->ranks[r].dropped);
    }
    for (size_t m = 0; m < pairing->member_count; m++) {
        runs_free(&pairing->members[m].begun);
        runs_free(&pairing->members[m].ended);
        runs_free(&pairing->members[m].held);
        runs_free(&pairing->members[m].kept);
    }
    runs_free(&pairing->covered);
    free(pairing->members);
    otfx_hash_free(&pairing->member_index);
    free(pairing->nbcs);
    free(pairing->ends);
    otfx_hash_free(&pairing->end_index);
    free(pairing->ranks);
    free(pairing);
}

otfx_status otfx_pairing_cover(otfx_pairing *pairing, uint32_t rank)
{
    return runs_add(&pairing->covered, rank) ? OTFX_OK : out_of_memory();
}

static otfx_status note_collective(otfx_pairing *pairing, uint32_t rank, const otfx_event *event)
{
    if (event->type == OTFX_EV_NBC_COMPLETE) {
        if (!otfx_reserve((void **)&pairing->nbcs, &pairing->nbc_capacity, pairing->nbc_count + 1,
                          sizeof *pairing->nbcs, 64))
            return out_of_memory();
        pairing->nbcs[pairing->nbc_count++] =
            (nbc_done){event->u.coll.comm, rank, event->u.coll.seq, event->u.coll.request};
        return find_or_add_member(pairing, event->u.coll.comm, rank) ? OTFX_OK : out_of_memory();
    }
    coll_member *member = find_or_add_member(pairing, event->u.coll.comm, rank);
    if (!member ||
        !runs_add(event->type == OTFX_EV_COLL_BEGIN ? &member->begun : &member->ended, event->u.coll.seq))
        return out_of_memory();
    return OTFX_OK;
}

otfx_status otfx_pairing_note(otfx_pairing *pairing, uint32_t rank, const otfx_event *event)
{
    if ((event->type == OTFX_EV_COLL_BEGIN || event->type == OTFX_EV_COLL_END ||
         event->type == OTFX_EV_NBC_COMPLETE) &&
        event->u.coll.seq != 0) {
        rank_requests *requests = find_or_add_rank(pairing, rank);
        if (!requests)
            return out_of_memory();
        requests->numbered_collectives = true;
        const otfx_status noted = note_collective(pairing, rank, event);
        if (noted != OTFX_OK)
            return noted;
    }
    if (is_message(event->type) && event->u.msg.seq != 0) {
        const end_key key = key_of(rank, event);
        channel_end *end = find_or_add_end(pairing, &key);
        if (!end || !runs_add(&end->held, event->u.msg.seq))
            return out_of_memory();
    }
    uint64_t started = 0;
    if (event->type == OTFX_EV_ISEND)
        started = event->u.msg.request;
    else if (event->type == OTFX_EV_IRECV_REQUEST || event->type == OTFX_EV_NBC_REQUEST)
        started = event->u.request.request;
    else
        return OTFX_OK;
    rank_requests *requests = find_or_add_rank(pairing, rank);
    if (!requests || !runs_add(&requests->started, started))
        return out_of_memory();
    return OTFX_OK;
}

/* ---- the exchange ---------------------------------------------------------------------------------------
 * A process's part: its communicators (those its channel ends and collectives name), its channel ends,
 * the ranks it exports and its collectives.
 *   u32 communicators; per communicator: u32 reference, text name, u32 size, u32 members[size]
 *   u64 ends; per end: u32 communicator reference, sender, receiver, tag, receiving, u64 runs, runs (u64
 * first, u64 last), sorted
 *   u64 runs, runs: the ranks exported
 *   u64 members; per member: u32 communicator reference, u32 rank, u64 runs, runs: the instances held
 */

/* A member's instances held whole: blocking ones whose begin and end are held, nonblocking ones whose
 * completion and request start are held (the start alone says nothing of the instance: it would be
 * written without a completion, which no member's sequence counts). */
static bool settle_held(otfx_pairing *pairing)
{
    for (size_t r = 0; r < pairing->rank_count; r++)
        runs_normalize(&pairing->ranks[r].started);
    for (size_t m = 0; m < pairing->member_count; m++) {
        coll_member *member = &pairing->members[m];
        runs_normalize(&member->begun);
        runs_normalize(&member->ended);
        member->held.count = 0;
        if (!runs_intersect(&member->held, member->begun.runs, member->begun.count, member->ended.runs,
                            member->ended.count))
            return false;
    }
    for (size_t n = 0; n < pairing->nbc_count; n++) {
        const nbc_done *done = &pairing->nbcs[n];
        const rank_requests *requests = find_rank(pairing, done->rank);
        coll_member *member = find_member(pairing, done->comm, done->rank);
        if (member && requests && runs_contain(&requests->started, done->request) &&
            !runs_add(&member->held, done->seq))
            return false;
    }
    for (size_t m = 0; m < pairing->member_count; m++) {
        pairing->members[m].held.sorted = false;
        runs_normalize(&pairing->members[m].held);
    }
    return true;
}

static void put_runs(otfx_bytes *out, const run_set *set)
{
    otfx_bytes_u64(out, set->count);
    for (size_t i = 0; i < set->count; i++) {
        otfx_bytes_u64(out, set->runs[i].first);
        otfx_bytes_u64(out, set->runs[i].last);
    }
}

static int compare_refs(const void *a, const void *b)
{
    const otfx_ref x = *(const otfx_ref *)a, y = *(const otfx_ref *)b;
    return (x > y) - (x < y);
}

otfx_status otfx_pairing_write(otfx_pairing *pairing, otfx_defs *defs, otfx_bytes *out)
{
    if (!settle_held(pairing))
        return out_of_memory();
    otfx_ref *comms = malloc((pairing->end_count + pairing->member_count + 1) * sizeof *comms);
    if (!comms)
        return out_of_memory();
    size_t comm_count = 0;
    for (size_t m = 0; m < pairing->member_count; m++)
        comms[comm_count++] = pairing->members[m].comm;
    for (size_t e = 0; e < pairing->end_count; e++) {
        runs_normalize(&pairing->ends[e].held);
        comms[comm_count++] = pairing->ends[e].key.comm;
    }
    for (size_t r = 0; r < pairing->rank_count; r++)
        runs_normalize(&pairing->ranks[r].started);
    if (comm_count > 1)
        qsort(comms, comm_count, sizeof *comms, compare_refs);
    size_t distinct = 0;
    for (size_t c = 0; c < comm_count; c++)
        if (!distinct || comms[distinct - 1] != comms[c])
            comms[distinct++] = comms[c];
    otfx_bytes_u32(out, (uint32_t)distinct);
    for (size_t c = 0; c < distinct; c++) {
        otfx_comm_def def = {0};
        otfx_status status = otfx_defs_get_comm(defs, comms[c], &def);
        if (status != OTFX_OK) {
            free(comms);
            return otfx_fail(OTFX_ERR_CORRUPT,
                             "OTF2 export: a message or collective names undefined communicator %u",
                             comms[c]);
        }
        otfx_bytes_u32(out, comms[c]);
        otfx_bytes_text(out, def.name);
        otfx_bytes_u32(out, def.size);
        for (uint32_t m = 0; m < def.size; m++)
            otfx_bytes_u32(out, def.world_ranks[m]);
    }
    free(comms);
    otfx_bytes_u64(out, pairing->end_count);
    for (size_t e = 0; e < pairing->end_count; e++) {
        const channel_end *end = &pairing->ends[e];
        otfx_bytes_u32(out, end->key.comm);
        otfx_bytes_u32(out, end->key.sender);
        otfx_bytes_u32(out, end->key.receiver);
        otfx_bytes_u32(out, end->key.tag);
        otfx_bytes_u32(out, end->key.receiving);
        put_runs(out, &end->held);
    }
    runs_normalize(&pairing->covered);
    put_runs(out, &pairing->covered);
    otfx_bytes_u64(out, pairing->member_count);
    for (size_t m = 0; m < pairing->member_count; m++) {
        otfx_bytes_u32(out, pairing->members[m].comm);
        otfx_bytes_u32(out, pairing->members[m].rank);
        put_runs(out, &pairing->members[m].held);
    }
    return out->out_of_memory ? out_of_memory() : OTFX_OK;
}

/* A communicator as the exchange names it: every process has its own references, the same communicator
 * has the same name and members everywhere. */
typedef struct comm_identity {
    const char *name;
    uint32_t size;
    const unsigned char *members; /* `size` u32s inside the gathered bytes (maybe unaligned) */
    uint64_t hash;
} comm_identity;

typedef struct comm_table {
    comm_identity *items;
    size_t count, capacity;
    otfx_hash_index index; /* of `items` */
} comm_table;

static bool same_identity(const comm_identity *a, const comm_identity *b)
{
    return a->hash == b->hash && a->size == b->size && strcmp(a->name, b->name) == 0 &&
           memcmp(a->members, b->members, (size_t)a->size * sizeof(uint32_t)) == 0;
}

static bool identity_is(const void *items, size_t item, const void *identity)
{
    return same_identity(&((const comm_identity *)items)[item], identity);
}

/* The identity's hash (FNV-1a) mixed: its low bits, which pick the slot, depend on every byte. */
static uint64_t identity_hash(const void *items, size_t item)
{
    return otfx_hash_mix(((const comm_identity *)items)[item].hash);
}

/* The index of `identity` in the table (added when new); SIZE_MAX when out of memory. */
static size_t comm_index(comm_table *table, const comm_identity *identity)
{
    const uint64_t hash = otfx_hash_mix(identity->hash);
    const size_t known = otfx_hash_find(&table->index, hash, identity_is, table->items, identity);
    if (known != OTFX_HASH_NONE)
        return known;
    if (!otfx_reserve((void **)&table->items, &table->capacity, table->count + 1, sizeof *table->items, 16) ||
        !otfx_hash_insert(&table->index, hash, table->count, identity_hash, table->items))
        return SIZE_MAX;
    table->items[table->count] = *identity;
    return table->count++;
}

/* One channel end of some process, its communicator named by the exchange's index. */
typedef struct gathered_end {
    end_key key;
    const unsigned char *runs; /* inside the gathered bytes: u64 first, u64 last per run */
    uint64_t run_count;
    uint32_t part;
    size_t own; /* the part that is this process's: index of its channel end */
} gathered_end;

static int compare_gathered(const void *a, const void *b)
{
    const end_key *x = &((const gathered_end *)a)->key, *y = &((const gathered_end *)b)->key;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->sender != y->sender)
        return x->sender < y->sender ? -1 : 1;
    if (x->receiver != y->receiver)
        return x->receiver < y->receiver ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return (x->receiving > y->receiving) - (x->receiving < y->receiving);
}

/* A run list inside the gathered bytes, unpacked (the bytes need not be aligned). */
static bool unpack_runs(const gathered_end *end, run_set *into)
{
    into->count = 0;
    if (!runs_reserve(into, (size_t)end->run_count))
        return false;
    for (uint64_t i = 0; i < end->run_count; i++)
        memcpy(&into->runs[i], end->runs + i * sizeof(run), sizeof(run));
    into->count = (size_t)end->run_count;
    into->sorted = true;
    return true;
}

typedef struct part_comm {
    uint32_t ref;
    size_t index;
} part_comm;

static int compare_part_comms(const void *a, const void *b)
{
    const uint32_t x = ((const part_comm *)a)->ref, y = ((const part_comm *)b)->ref;
    return (x > y) - (x < y);
}

/* One communicator member's instances held on some process, its communicator named by the exchange's
 * index. */
typedef struct gathered_member {
    uint32_t comm, rank;
    const unsigned char *runs; /* inside the gathered bytes */
    uint64_t run_count;
    uint32_t part;
    size_t own; /* the part that is this process's: index of its member */
} gathered_member;

typedef struct gathered_collectives {
    gathered_member *members;
    size_t count, capacity;
    run_set covered; /* ranks some process exports */
} gathered_collectives;

static int compare_members(const void *a, const void *b)
{
    const gathered_member *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Appends packed runs (inside the gathered bytes) to `set` (left unsorted); false when out of memory or
 * a run is malformed (*bad). */
static bool append_packed(run_set *set, const unsigned char *runs, uint64_t count, bool *bad)
{
    if (!runs_reserve(set, set->count + (size_t)count))
        return false;
    for (uint64_t i = 0; i < count; i++) {
        run r;
        memcpy(&r, runs + i * sizeof r, sizeof r);
        if (r.last < r.first) {
            *bad = true;
            return false;
        }
        set->runs[set->count++] = r;
    }
    set->sorted = false;
    return true;
}

/* The packed runs at the reader, skipped; NULL when they do not fit. */
static const unsigned char *take_runs(otfx_byte_reader *in, uint64_t *count)
{
    *count = otfx_read_u64(in);
    if (in->bad || *count > in->left / sizeof(run))
        return NULL;
    const unsigned char *runs = in->at;
    in->at += (size_t)*count * sizeof(run);
    in->left -= (size_t)*count * sizeof(run);
    return runs;
}

/* Reads one process's part into `table`, `ends` (appended) and `collectives`. */
static otfx_status read_part(otfx_byte_reader *in, uint32_t part, comm_table *table, gathered_end **ends,
                             size_t *end_count, size_t *end_capacity, gathered_collectives *collectives)
{
    const uint32_t comm_count = otfx_read_u32(in);
    if (in->bad || comm_count > in->left / 12)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed messages from process %u", part);
    part_comm *comms = malloc(((size_t)comm_count + 1) * sizeof *comms);
    if (!comms)
        return out_of_memory();
    otfx_status status = OTFX_OK;
    for (uint32_t c = 0; c < comm_count && status == OTFX_OK; c++) {
        comm_identity identity = {0};
        comms[c].ref = otfx_read_u32(in);
        identity.name = otfx_read_text(in);
        identity.size = otfx_read_u32(in);
        if (in->bad || identity.size > in->left / sizeof(uint32_t)) {
            status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed messages from process %u", part);
            break;
        }
        identity.members = in->at;
        in->at += (size_t)identity.size * sizeof(uint32_t);
        in->left -= (size_t)identity.size * sizeof(uint32_t);
        uint64_t hash = UINT64_C(0xcbf29ce484222325) ^ identity.size;
        for (const char *letter = identity.name; *letter; letter++)
            hash = (hash ^ (unsigned char)*letter) * UINT64_C(0x100000001b3);
        for (size_t b = 0; b < (size_t)identity.size * sizeof(uint32_t); b++)
            hash = (hash ^ identity.members[b]) * UINT64_C(0x100000001b3);
        identity.hash = hash;
        comms[c].index = comm_index(table, &identity);
        if (comms[c].index == SIZE_MAX)
            status = out_of_memory();
    }
    if (status == OTFX_OK)
        qsort(comms, comm_count, sizeof *comms, compare_part_comms);
    const uint64_t count = status == OTFX_OK ? otfx_read_u64(in) : 0;
    if (status == OTFX_OK && (in->bad || count > in->left / 28))
        status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed messages from process %u", part);
    for (uint64_t e = 0; e < count && status == OTFX_OK; e++) {
        gathered_end end = {.part = part, .own = (size_t)e};
        part_comm key = {otfx_read_u32(in), 0};
        end.key.sender = otfx_read_u32(in);
        end.key.receiver = otfx_read_u32(in);
        end.key.tag = otfx_read_u32(in);
        end.key.receiving = otfx_read_u32(in);
        end.run_count = otfx_read_u64(in);
        const part_comm *comm =
            comm_count ? bsearch(&key, comms, comm_count, sizeof *comms, compare_part_comms) : NULL;
        if (in->bad || !comm || end.key.receiving > 1 || end.run_count > in->left / sizeof(run)) {
            status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed messages from process %u", part);
            break;
        }
        end.key.comm = (uint32_t)comm->index;
        end.runs = in->at;
        in->at += (size_t)end.run_count * sizeof(run);
        in->left -= (size_t)end.run_count * sizeof(run);
        if (!otfx_reserve((void **)ends, end_capacity, *end_count + 1, sizeof **ends, 64)) {
            status = out_of_memory();
            break;
        }
        (*ends)[(*end_count)++] = end;
    }
    uint64_t run_count = 0;
    const unsigned char *runs = status == OTFX_OK ? take_runs(in, &run_count) : NULL;
    bool bad = false;
    if (status == OTFX_OK && (!runs || !append_packed(&collectives->covered, runs, run_count, &bad)))
        status = bad || !runs
                     ? otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from process %u", part)
                     : out_of_memory();
    const uint64_t member_count = status == OTFX_OK ? otfx_read_u64(in) : 0;
    if (status == OTFX_OK && (in->bad || member_count > in->left / 16))
        status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from process %u", part);
    for (uint64_t m = 0; m < member_count && status == OTFX_OK; m++) {
        gathered_member member = {.part = part, .own = (size_t)m};
        part_comm key = {otfx_read_u32(in), 0};
        member.rank = otfx_read_u32(in);
        member.runs = take_runs(in, &member.run_count);
        const part_comm *comm =
            comm_count ? bsearch(&key, comms, comm_count, sizeof *comms, compare_part_comms) : NULL;
        if (in->bad || !comm || !member.runs) {
            status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from process %u", part);
            break;
        }
        member.comm = (uint32_t)comm->index;
        if (!otfx_reserve((void **)&collectives->members, &collectives->capacity, collectives->count + 1,
                          sizeof *collectives->members, 64)) {
            status = out_of_memory();
            break;
        }
        collectives->members[collectives->count++] = member;
    }
    free(comms);
    return status;
}

/* The union of the instances held of communicator member (comm, rank), over every process that holds
 * some of its traces (members[from, to) sorted). */
static otfx_status member_held(const gathered_member *members, size_t from, size_t to, uint32_t rank,
                               run_set *into)
{
    into->count = 0;
    into->sorted = true;
    for (size_t m = from; m < to; m++) {
        bool bad = false;
        if (members[m].rank == rank && !append_packed(into, members[m].runs, members[m].run_count, &bad))
            return bad ? otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from process %u",
                                   members[m].part)
                       : out_of_memory();
    }
    runs_normalize(into);
    return OTFX_OK;
}

static bool runs_copy(run_set *to, const run_set *from)
{
    to->count = 0;
    if (!runs_reserve(to, from->count))
        return false;
    if (from->count)
        memcpy(to->runs, from->runs, from->count * sizeof *from->runs);
    to->count = from->count;
    to->sorted = true;
    return true;
}

/* Keeps `kept` ∩ `other` in `kept` (`scratch`: working room). */
static bool runs_narrow(run_set *kept, const run_set *other, run_set *scratch)
{
    scratch->count = 0;
    if (!runs_intersect(scratch, kept->runs, kept->count, other->runs, other->count))
        return false;
    runs_normalize(scratch);
    return runs_copy(kept, scratch);
}

/* Every communicator's instances that all its covered members hold: this process's members keep those. */
static otfx_status decide_collectives(otfx_pairing *pairing, const comm_table *table,
                                      gathered_collectives *collectives, uint32_t self)
{
    gathered_member *members = collectives->members;
    const size_t count = collectives->count;
    if (count > 1)
        qsort(members, count, sizeof *members, compare_members);
    runs_normalize(&collectives->covered);
    run_set everyone = {0}, kept = {0}, held = {0}, scratch = {0};
    otfx_status status = OTFX_OK;
    for (size_t from = 0, to; from < count && status == OTFX_OK; from = to) {
        for (to = from; to < count && members[to].comm == members[from].comm;)
            to++;
        const comm_identity *identity = &table->items[members[from].comm];
        /* Every instance any member holds, narrowed by each covered member's own. */
        everyone.count = 0;
        bool bad = false;
        for (size_t m = from; m < to && status == OTFX_OK; m++)
            if (!append_packed(&everyone, members[m].runs, members[m].run_count, &bad))
                status =
                    bad ? otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from process %u",
                                    members[m].part)
                        : out_of_memory();
        if (status != OTFX_OK)
            break;
        runs_normalize(&everyone);
        if (!runs_copy(&kept, &everyone)) {
            status = out_of_memory();
            break;
        }
        for (uint32_t i = 0; i < identity->size && kept.count && status == OTFX_OK; i++) {
            uint32_t rank;
            memcpy(&rank, identity->members + (size_t)i * sizeof rank, sizeof rank);
            if (!runs_contain(&collectives->covered, rank))
                continue; /* not exported: it cannot veto */
            status = member_held(members, from, to, rank, &held);
            if (status == OTFX_OK && !runs_narrow(&kept, &held, &scratch))
                status = out_of_memory();
        }
        if (status != OTFX_OK)
            break;
        pairing->collectives_left_out_everywhere +=
            runs_size(everyone.runs, everyone.count) - runs_size(kept.runs, kept.count);
        /* This process's share: the instances its members hold that are left out. */
        held.count = 0;
        for (size_t m = from; m < to && status == OTFX_OK; m++) {
            if (members[m].part != self)
                continue;
            if (members[m].own >= pairing->member_count) {
                status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from this process");
                break;
            }
            if (!append_packed(&held, members[m].runs, members[m].run_count, &bad) ||
                !runs_copy(&pairing->members[members[m].own].kept, &kept))
                status =
                    bad ? otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed collectives from process %u",
                                    members[m].part)
                        : out_of_memory();
        }
        if (status != OTFX_OK || held.count == 0)
            continue;
        runs_normalize(&held);
        const uint64_t own = runs_size(held.runs, held.count);
        if (!runs_narrow(&held, &kept, &scratch)) {
            status = out_of_memory();
            break;
        }
        pairing->collectives_left_out += own - runs_size(held.runs, held.count);
    }
    runs_free(&everyone);
    runs_free(&kept);
    runs_free(&held);
    runs_free(&scratch);
    return status;
}

/* The paired ordinals of `end`: those some process holds at the other end. */
static otfx_status pair_end(const gathered_end *end, const gathered_end *all, size_t count, run_set *mine,
                            run_set *theirs, run_set *paired)
{
    gathered_end partner = *end;
    partner.key.receiving ^= 1u;
    paired->count = 0;
    size_t low = 0, high = count; /* the first end with the partner's key */
    while (low < high) {
        const size_t middle = low + (high - low) / 2;
        if (compare_gathered(&all[middle], &partner) < 0)
            low = middle + 1;
        else
            high = middle;
    }
    if (low < count && compare_gathered(&all[low], &partner) == 0 && !unpack_runs(end, mine))
        return out_of_memory();
    for (; low < count && compare_gathered(&all[low], &partner) == 0; low++) {
        if (!unpack_runs(&all[low], theirs) ||
            !runs_intersect(paired, mine->runs, mine->count, theirs->runs, theirs->count))
            return out_of_memory();
    }
    runs_normalize(paired);
    return OTFX_OK;
}

otfx_status otfx_pairing_decide(otfx_pairing *pairing, otfx_byte_reader *parts, uint32_t count, uint32_t self)
{
    comm_table table = {0};
    gathered_end *ends = NULL;
    size_t end_count = 0, end_capacity = 0;
    gathered_collectives collectives = {0};
    otfx_status status = OTFX_OK;
    pairing->collectives_left_out = pairing->collectives_left_out_everywhere = 0;
    for (uint32_t p = 0; p < count && status == OTFX_OK; p++)
        status = read_part(&parts[p], p, &table, &ends, &end_count, &end_capacity, &collectives);
    if (status == OTFX_OK)
        status = decide_collectives(pairing, &table, &collectives, self);
    free(collectives.members);
    runs_free(&collectives.covered);
    if (status == OTFX_OK && end_count > 1)
        qsort(ends, end_count, sizeof *ends, compare_gathered);
    run_set mine = {0}, theirs = {0}, paired = {0};
    pairing->unpaired = pairing->unpaired_everywhere = 0;
    uint32_t channel = 0; /* ends sorted by channel: both ends of one channel get the same number */
    for (size_t e = 0; e < end_count && status == OTFX_OK; e++) {
        if (e > 0) {
            end_key previous = ends[e - 1].key, current = ends[e].key;
            previous.receiving = current.receiving = 0;
            if (!same_key(&previous, &current))
                channel++;
        }
        status = pair_end(&ends[e], ends, end_count, &mine, &theirs, &paired);
        if (status != OTFX_OK)
            break;
        uint64_t held = 0;
        for (uint64_t i = 0; i < ends[e].run_count; i++) {
            run r;
            memcpy(&r, ends[e].runs + i * sizeof r, sizeof r);
            if (r.last < r.first) {
                status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed messages from process %u",
                                   ends[e].part);
                break;
            }
            held += r.last - r.first + 1;
        }
        const uint64_t left_out = held - runs_size(paired.runs, paired.count);
        pairing->unpaired_everywhere += left_out;
        if (ends[e].part != self)
            continue;
        if (ends[e].own >= pairing->end_count) {
            status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed messages from this process");
            break;
        }
        pairing->unpaired += left_out;
        pairing->ends[ends[e].own].channel = channel;
        run_set *kept = &pairing->ends[ends[e].own].paired;
        runs_free(kept);
        *kept = paired;
        paired = (run_set){0};
    }
    runs_free(&mine);
    runs_free(&theirs);
    runs_free(&paired);
    free(ends);
    free(table.items);
    otfx_hash_free(&table.index);
    pairing->decided = status == OTFX_OK;
    return status;
}

bool otfx_pairing_needs_dropped(const otfx_pairing *pairing)
{
    return pairing->unpaired > 0 || pairing->collectives_left_out > 0;
}

/* Whether the collective instance of `event` is written: every covered member of its communicator holds
 * it. Without an ordinal: when the rank's traces have none (imported, filled by hand); a rank with
 * ordinals lost the ordinal only where a drop cut its collective short, and an instance no other member
 * can match would shift its sequence. */
static bool collective_kept(otfx_pairing *pairing, uint32_t rank, const otfx_event *event)
{
    if (event->u.coll.seq == 0) {
        const rank_requests *requests = find_rank(pairing, rank);
        return !requests || !requests->numbered_collectives;
    }
    const coll_member *member = find_member(pairing, event->u.coll.comm, rank);
    return member && runs_contain(&member->kept, event->u.coll.seq);
}

static bool paired(const otfx_pairing *pairing, uint32_t rank, const otfx_event *event)
{
    const end_key key = key_of(rank, event);
    const channel_end *end = find_end(pairing, &key);
    return end && runs_contain(&end->paired, event->u.msg.seq);
}

bool otfx_pairing_channel(const otfx_pairing *pairing, uint32_t rank, const otfx_event *event,
                          uint32_t *channel)
{
    if (!pairing->decided || !is_message(event->type) || event->u.msg.seq == 0)
        return false;
    const end_key key = key_of(rank, event);
    const channel_end *end = find_end(pairing, &key);
    if (!end || !runs_contain(&end->paired, event->u.msg.seq))
        return false;
    *channel = end->channel;
    return true;
}

bool otfx_pairing_any_channel(const otfx_pairing *pairing)
{
    for (size_t e = 0; pairing->decided && e < pairing->end_count; e++)
        if (pairing->ends[e].paired.count > 0)
            return true;
    return false;
}

otfx_status otfx_pairing_note_dropped(otfx_pairing *pairing, uint32_t rank, const otfx_event *event)
{
    if (event->type == OTFX_EV_NBC_COMPLETE) { /* its request's start goes with it */
        if (collective_kept(pairing, rank, event))
            return OTFX_OK;
        rank_requests *requests = find_or_add_rank(pairing, rank);
        if (!requests || !runs_add(&requests->dropped, event->u.coll.request))
            return out_of_memory();
        return OTFX_OK;
    }
    if ((event->type != OTFX_EV_ISEND && event->type != OTFX_EV_IRECV) || event->u.msg.seq == 0 ||
        paired(pairing, rank, event))
        return OTFX_OK;
    rank_requests *requests = find_or_add_rank(pairing, rank);
    if (!requests || !runs_add(&requests->dropped, event->u.msg.request))
        return out_of_memory();
    return OTFX_OK;
}

otfx_pairing_verdict otfx_pairing_judge(otfx_pairing *pairing, uint32_t rank, const otfx_event *event)
{
    if (!pairing->decided)
        return OTFX_PAIRING_WRITE;
    if (!pairing->dropped_sorted) { /* the first event written: every note is in */
        for (size_t r = 0; r < pairing->rank_count; r++)
            runs_normalize(&pairing->ranks[r].dropped);
        pairing->dropped_sorted = true;
    }
    const rank_requests *requests = find_rank(pairing, rank);
    switch (event->type) {
    case OTFX_EV_SEND:
    case OTFX_EV_RECV:
    case OTFX_EV_ISEND:
        return event->u.msg.seq == 0 || paired(pairing, rank, event) ? OTFX_PAIRING_WRITE
                                                                     : OTFX_PAIRING_LEAVE;
    case OTFX_EV_IRECV:
        if (event->u.msg.seq != 0 && !paired(pairing, rank, event))
            return OTFX_PAIRING_LEAVE;
        return requests && runs_contain(&requests->started, event->u.msg.request) ? OTFX_PAIRING_WRITE
                                                                                  : OTFX_PAIRING_AS_RECV;
    case OTFX_EV_IRECV_REQUEST:
        return requests && runs_contain(&requests->dropped, event->u.request.request) ? OTFX_PAIRING_LEAVE
                                                                                      : OTFX_PAIRING_WRITE;
    case OTFX_EV_ISEND_COMPLETE:
    case OTFX_EV_REQUEST_CANCELLED:
        return requests && runs_contain(&requests->started, event->u.request.request) &&
                       !runs_contain(&requests->dropped, event->u.request.request)
                   ? OTFX_PAIRING_WRITE
                   : OTFX_PAIRING_LEAVE;
    case OTFX_EV_NBC_COMPLETE:
        return requests && runs_contain(&requests->started, event->u.coll.request) &&
                       collective_kept(pairing, rank, event)
                   ? OTFX_PAIRING_WRITE
                   : OTFX_PAIRING_LEAVE;
    case OTFX_EV_NBC_REQUEST:
        return requests && runs_contain(&requests->dropped, event->u.request.request) ? OTFX_PAIRING_LEAVE
                                                                                      : OTFX_PAIRING_WRITE;
    case OTFX_EV_COLL_BEGIN:
    case OTFX_EV_COLL_END:
        return collective_kept(pairing, rank, event) ? OTFX_PAIRING_WRITE : OTFX_PAIRING_LEAVE;
    default:
        return OTFX_PAIRING_WRITE;
    }
}

uint64_t otfx_pairing_unpaired(const otfx_pairing *pairing)
{
    return pairing->unpaired;
}

uint64_t otfx_pairing_unpaired_everywhere(const otfx_pairing *pairing)
{
    return pairing->unpaired_everywhere;
}

uint64_t otfx_pairing_collectives_left_out(const otfx_pairing *pairing)
{
    return pairing->collectives_left_out;
}

uint64_t otfx_pairing_collectives_left_out_everywhere(const otfx_pairing *pairing)
{
    return pairing->collectives_left_out_everywhere;
}

/*
 * requests.c — point-to-point payloads and the request table: what a nonblocking, persistent or
 * collective request was for, so that the Wait/Test family can report its completion with the send's
 * original peer/tag/bytes (or, for receives, those of the status), under the request's own id.
 *
 * Request ids: a per-rank counter, one id per request made and per MPI_Start of a persistent one, so
 * an id is unique for the whole run (MPI's handles are not: MPICH hands out one shared handle for every
 * send that completed at once). Message ordinals: channels.c.
 *
 * The table is kept whenever the rank has a place, recording or not (recorder.h): every request MPI
 * hands out is tracked until it completes, so a handle MPI reuses never finds a stale entry, and a
 * receive posted while recording was off still counts its message when it completes.
 *
 * Threads: one table per rank, since MPI lets any thread complete a request another one posted. At
 * MPI_THREAD_MULTIPLE every table operation holds table_lock (capture_lock: nothing without
 * concurrency), entries are copied out and the lock released before anything is recorded (records go to
 * the calling thread's buffer; recording may send a batch). Completions work from a copy taken before
 * the PMPI call (capture_requests_snapshot, requests.h).
 */
#include "requests.h"
#include "channels.h"
#include "communicators.h"
#include "recorder.h"
#include "world.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>

/* MPI_Isendrecv(_replace): one request for a send and a receive (a table kind of its own, never in a
 * record). */
enum { TRACKED_SENDRECV = 16 };

struct tracked_request {
    MPI_Request handle; /* MPI_REQUEST_NULL: free slot (MPI_Message handles share the table: MPICH
                         * encodes the object kind in the handle, so they never collide) */
    uint8_t kind;       /* enum capture_request_kind, or TRACKED_SENDRECV */
    bool persistent;
    bool described; /* what the request is for is known (false: capture_collective_request_unrecorded) */
    bool recorded;  /* this activation's start was recorded: so is its completion (a receive's completion
                     * is recorded whenever its call is: it carries the message) */
    uint16_t function_id;
    MPI_Comm comm;    /* receives: the communicator the status's source is a rank of */
    uint32_t comm_id; /* point-to-point: the communicator's id when the request was made */
    int32_t peer;     /* world rank (sends, collectives: root) */
    int32_t tag;
    int64_t bytes;
    int64_t bytes_received; /* collectives; sendrecv: the receive half's bytes as posted */
    int32_t recv_source;    /* sendrecv: the receive half's source (a rank of comm) and tag, as posted */
    int32_t recv_tag;
    MPI_Comm *new_comm; /* MPI_Comm_idup: where the communicator appears on completion */
    uint64_t id;        /* this activation's request id (0 for a persistent request not started yet) */
    uint64_t recv_id;   /* sendrecv: the receive half's */
    uint64_t sequence;  /* sends: the message's ordinal on its channel; collectives: this activation's
                         * instance ordinal on its communicator (tag) */
    uint64_t serial;    /* MPI_THREAD_MULTIPLE: which insertion this is (a handle's reuse differs) */
};

static struct tracked_request *table;
static size_t table_size; /* power of two */
static size_t table_used;
static uint64_t next_serial;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* Used by every completion call: initial-exec (linkage.h), no __tls_get_addr call. */
static CAPTURE_HOT_THREAD_LOCAL MPI_Request *saved_requests;
static CAPTURE_HOT_THREAD_LOCAL size_t saved_capacity;
static CAPTURE_HOT_THREAD_LOCAL MPI_Status *scratch_statuses;
static CAPTURE_HOT_THREAD_LOCAL size_t scratch_capacity;
static CAPTURE_HOT_THREAD_LOCAL struct tracked_request *snapshot;
static CAPTURE_HOT_THREAD_LOCAL size_t snapshot_capacity;

/* A thread's scratch copies are freed when it exits (pthread key destructor: it runs in the exiting
 * thread, which still sees its _Thread_local variables). */
static pthread_key_t scratch_key;
static pthread_once_t scratch_key_once = PTHREAD_ONCE_INIT;

static void free_scratch(void *unused)
{
    (void)unused;
    free(saved_requests);
    free(scratch_statuses);
    free(snapshot);
    saved_requests = NULL;
    scratch_statuses = NULL;
    snapshot = NULL;
    saved_capacity = scratch_capacity = snapshot_capacity = 0;
}

static void create_scratch_key(void)
{
    pthread_key_create(&scratch_key, free_scratch);
}

/* On a thread's first scratch allocation. */
static void free_scratch_at_exit(void)
{
    pthread_once(&scratch_key_once, create_scratch_key);
    pthread_setspecific(scratch_key, &scratch_key);
}

static size_t slot_of(MPI_Request handle)
{
    uint32_t key = (uint32_t)(uintptr_t)handle;
    return (size_t)((key * 2654435761u) >> 7) & (table_size - 1);
}

static void out_of_memory(void)
{
    fprintf(stderr, "otfx-capture: out of memory in the request table: aborting\n");
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

static void *checked_malloc(size_t bytes)
{
    void *memory = malloc(bytes ? bytes : 1);
    if (!memory)
        out_of_memory();
    return memory;
}

/* Room for `count` items in one of this thread's scratch arrays (freed when the thread exits). */
static void reserve_scratch(void **items, size_t *capacity, int count, size_t item_size)
{
    if (count <= 0 || (size_t)count <= *capacity)
        return;
    if (!*capacity)
        free_scratch_at_exit();
    if (!otfx_reserve(items, capacity, (size_t)count, item_size, 16))
        out_of_memory();
}

/* MPICH hands out one shared, already completed "builtin" request for every nonblocking operation that
 * finished at once (a small eager MPI_Isend, for one): two MPI_Isend calls in a row may return the same
 * handle (kind bits 01 of MPICH's handle encoding; ordinary requests are 10 or 11). Such a handle has one
 * entry per operation, in the order they were started, and each completion takes the oldest. Any other
 * handle seen again replaces its entry: MPI reused it after a completion not seen (recording was off). */
static bool shared_handle(MPI_Request handle)
{
#if defined(MPICH)
    return ((uint32_t)(uintptr_t)handle >> 30) == 1u;
#else
    (void)handle;
    return false;
#endif
}

/* The n-th entry (0: the oldest) for `handle`: linear probing keeps a handle's entries in insertion
 * order along its probe sequence, and deletion by backward shift preserves that order. */
static struct tracked_request *find_nth(MPI_Request handle, int n)
{
    if (!table_size || handle == MPI_REQUEST_NULL)
        return NULL;
    for (size_t i = slot_of(handle);; i = (i + 1) & (table_size - 1)) {
        if (table[i].handle == handle && n-- == 0)
            return &table[i];
        if (table[i].handle == MPI_REQUEST_NULL)
            return NULL;
    }
}

static struct tracked_request *find(MPI_Request handle)
{
    return find_nth(handle, 0);
}

static void insert(const struct tracked_request *entry);

/* Doubling keeps inserts amortised O(1); the table never shrinks, so a steady state allocates nothing. */
static void grow(void)
{
    struct tracked_request *old = table;
    size_t old_size = table_size;
    table_size = table_size ? table_size * 2 : 1024;
    table = checked_malloc(table_size * sizeof(*table));
    for (size_t i = 0; i < table_size; i++)
        table[i].handle = MPI_REQUEST_NULL;
    table_used = 0;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].handle != MPI_REQUEST_NULL)
            insert(&old[i]);
    free(old);
}

static void insert(const struct tracked_request *entry)
{
    struct tracked_request *existing = shared_handle(entry->handle) ? NULL : find(entry->handle);
    if (existing) { /* a handle reused after a completion we did not see: replace */
        *existing = *entry;
        return;
    }
    if ((table_used + 1) * 2 > table_size)
        grow();
    size_t i = slot_of(entry->handle);
    while (table[i].handle != MPI_REQUEST_NULL)
        i = (i + 1) & (table_size - 1);
    table[i] = *entry;
    table_used++;
}

static void remove_entry(struct tracked_request *entry)
{
    size_t hole = (size_t)(entry - table);
    table[hole].handle = MPI_REQUEST_NULL;
    table_used--;
    for (size_t next = (hole + 1) & (table_size - 1); table[next].handle != MPI_REQUEST_NULL;
         next = (next + 1) & (table_size - 1)) {
        size_t home = slot_of(table[next].handle);
        bool movable = hole <= next ? (home <= hole || home > next) : (home <= hole && home > next);
        if (movable) {
            table[hole] = table[next];
            table[next].handle = MPI_REQUEST_NULL;
            hole = next;
        }
    }
}

static int64_t status_bytes(const MPI_Status *status)
{
    MPI_Count bytes = 0;
    if (PMPI_Get_count_c(status, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED)
        return 0;
    return (int64_t)bytes;
}

static bool cancelled(const MPI_Status *status)
{
    int flag = 0;
    PMPI_Test_cancelled(status, &flag);
    return flag != 0;
}

/* A recorded call announces the communicator in this thread's stream (its records name it); an
 * unrecorded one only needs its id and members. */
static inline const struct capture_comm *comm_entry(MPI_Comm comm, bool record)
{
    return record ? capture_comm_lookup(comm) : capture_comm_find(comm);
}

static uint64_t new_request_id(void)
{
    static uint64_t last_id;
    if (__builtin_expect(capture_threads_concurrent, 0))
        return __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
    return ++last_id;
}

void capture_p2p_send(int function_id, MPI_Comm comm, int dest, int tag, int64_t bytes, uint64_t entered,
                      bool record)
{
    if (dest == MPI_PROC_NULL)
        return; /* no message */
    const struct capture_comm *entry = comm_entry(comm, record);
    const int32_t peer = capture_peer_world(entry, dest);
    const uint64_t ordinal = capture_channel_next(entry->id, peer, tag, CAPTURE_CHANNEL_SEND);
    if (record)
        capture_write_p2p(CAPTURE_RECORD_SEND, function_id, entry->id, peer, tag, bytes, 0, 0, ordinal,
                          entered);
}

/* A received message (a blocking receive, or a request's completion): counted on its channel in the order
 * receives complete, recorded as `kind` when `record`. */
static void received(enum capture_record_kind kind, int function_id, MPI_Comm comm, int source, int tag,
                     int64_t bytes, uint16_t request_kind, uint64_t request_id, bool record)
{
    if (source == MPI_PROC_NULL)
        return;
    const struct capture_comm *entry = comm_entry(comm, record);
    const int32_t peer = capture_peer_world(entry, source);
    const uint64_t ordinal = capture_channel_next(entry->id, peer, tag, CAPTURE_CHANNEL_RECV);
    if (record)
        capture_write_p2p(kind, function_id, entry->id, peer, tag, bytes, request_kind, request_id, ordinal,
                          0);
}

void capture_p2p_recv(int function_id, MPI_Comm comm, int source, const MPI_Status *status, bool record)
{
    if (source == MPI_PROC_NULL)
        return;
    received(CAPTURE_RECORD_RECV, function_id, comm, status->MPI_SOURCE, status->MPI_TAG,
             status_bytes(status), 0, 0, record);
}

/* The receive half of a send-receive. MPICH 4.0.2 does not fill MPI_Isendrecv's status (it comes back empty
 * or as it was before the call), and with a place the blocking forms run as MPI_Isendrecv: so the source and
 * tag are taken as posted, the status's only for wildcards, and the bytes as posted (a message shorter than
 * the receive buffer is recorded with the buffer's size). */
static void sendrecv_received(enum capture_record_kind kind, int function_id, MPI_Comm comm, int source,
                              int tag, int64_t posted_bytes, const MPI_Status *status, uint64_t request_id,
                              bool record)
{
    if (source == MPI_PROC_NULL)
        return;
    received(kind, function_id, comm, source == MPI_ANY_SOURCE ? status->MPI_SOURCE : source,
             tag == MPI_ANY_TAG ? status->MPI_TAG : tag, posted_bytes, request_id ? CAPTURE_REQUEST_RECV : 0,
             request_id, record);
}

void capture_p2p_sendrecv_received(int function_id, MPI_Comm comm, int source, int tag, int64_t posted_bytes,
                                   const MPI_Status *status, bool record)
{
    sendrecv_received(CAPTURE_RECORD_RECV, function_id, comm, source, tag, posted_bytes, status, 0, record);
}

/* Adds an entry (under the lock, with a serial number, at MPI_THREAD_MULTIPLE). */
static void track(struct tracked_request *entry)
{
    if (__builtin_expect(!capture_threads_concurrent, 1)) {
        insert(entry);
        return;
    }
    pthread_mutex_lock(&table_lock);
    entry->serial = ++next_serial;
    insert(entry);
    pthread_mutex_unlock(&table_lock);
}

/* Copies the entry of `handle` out (false when untracked) and removes it unless it is persistent. */
static inline __attribute__((always_inline)) bool take(MPI_Request handle, struct tracked_request *copy,
                                                       bool keep_persistent)
{
    capture_lock(&table_lock);
    struct tracked_request *entry = find(handle);
    if (entry) {
        *copy = *entry;
        if (!(keep_persistent && entry->persistent))
            remove_entry(entry);
    }
    capture_unlock(&table_lock);
    return entry != NULL;
}

void capture_probe(int function_id, MPI_Comm comm, const MPI_Status *status, MPI_Message message, bool record)
{
    if (record && status->MPI_SOURCE != MPI_PROC_NULL) { /* a message seen, not received: no ordinal */
        const struct capture_comm *entry = capture_comm_lookup(comm);
        capture_write_p2p(CAPTURE_RECORD_PROBE, function_id, entry->id,
                          capture_peer_world(entry, status->MPI_SOURCE), status->MPI_TAG,
                          status_bytes(status), 0, 0, 0, 0);
    }
    if (message != MPI_MESSAGE_NULL && message != MPI_MESSAGE_NO_PROC) {
        struct tracked_request entry = {.handle = (MPI_Request)message,
                                        .kind = CAPTURE_REQUEST_MESSAGE,
                                        .function_id = (uint16_t)function_id,
                                        .comm = comm};
        track(&entry);
    }
}

MPI_Comm capture_message_take(MPI_Message message)
{
    struct tracked_request entry;
    if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC ||
        !take((MPI_Request)message, &entry, false))
        return MPI_COMM_NULL; /* no message (or probed before the rank had a place) */
    return entry.comm;
}

void capture_message_received_on(int function_id, MPI_Comm probed_comm, const MPI_Status *status, bool record)
{
    if (probed_comm != MPI_COMM_NULL)
        received(CAPTURE_RECORD_RECV, function_id, probed_comm, status->MPI_SOURCE, status->MPI_TAG,
                 status_bytes(status), 0, 0, record);
}

void capture_p2p_request(int function_id, MPI_Request request, enum capture_request_kind kind,
                         bool persistent, MPI_Comm comm, int peer, int tag, int64_t bytes, uint64_t entered,
                         bool record)
{
    if (peer == MPI_PROC_NULL)
        return; /* completes at once, carries no message */
    const struct capture_comm *entry = comm_entry(comm, record && !persistent);
    struct tracked_request tracked = {.handle = request,
                                      .kind = (uint8_t)kind,
                                      .persistent = persistent,
                                      .described = true,
                                      .recorded = record && !persistent,
                                      .function_id = (uint16_t)function_id,
                                      .comm = comm,
                                      .comm_id = entry->id,
                                      .peer = capture_peer_world(entry, peer),
                                      .tag = tag,
                                      .bytes = bytes};
    if (!persistent) { /* persistent ones get theirs when started */
        tracked.id = new_request_id();
        if (kind == CAPTURE_REQUEST_SEND)
            tracked.sequence = capture_channel_next(entry->id, tracked.peer, tag, CAPTURE_CHANNEL_SEND);
    }
    track(&tracked);
    if (!tracked.recorded)
        return;
    if (kind == CAPTURE_REQUEST_SEND)
        capture_write_p2p(CAPTURE_RECORD_SEND, function_id, entry->id, tracked.peer, tag, bytes,
                          (uint16_t)kind, tracked.id, tracked.sequence, entered);
    else
        capture_write_p2p(CAPTURE_RECORD_RECV_POSTED, function_id, entry->id, tracked.peer, tag, bytes,
                          (uint16_t)kind, tracked.id, 0, 0);
}

void capture_p2p_sendrecv_request(int function_id, MPI_Request request, MPI_Comm comm, int dest, int sendtag,
                                  int64_t send_bytes, int source, int recvtag, int64_t recv_bytes,
                                  uint64_t entered, bool record)
{
    const struct capture_comm *entry = comm_entry(comm, record);
    struct tracked_request tracked = {.handle = request,
                                      .kind = TRACKED_SENDRECV,
                                      .described = true,
                                      .recorded = record,
                                      .function_id = (uint16_t)function_id,
                                      .comm = comm,
                                      .comm_id = entry->id,
                                      .peer = capture_peer_world(entry, dest),
                                      .tag = sendtag,
                                      .bytes = send_bytes,
                                      .bytes_received = recv_bytes,
                                      .recv_source = source,
                                      .recv_tag = recvtag};
    if (dest != MPI_PROC_NULL) {
        tracked.id = new_request_id();
        tracked.sequence = capture_channel_next(entry->id, tracked.peer, sendtag, CAPTURE_CHANNEL_SEND);
    }
    if (source != MPI_PROC_NULL)
        tracked.recv_id = new_request_id();
    if (!tracked.id && !tracked.recv_id)
        return; /* both halves with MPI_PROC_NULL: nothing to complete */
    track(&tracked);
    if (!record)
        return;
    if (tracked.id)
        capture_write_p2p(CAPTURE_RECORD_SEND, function_id, entry->id, tracked.peer, sendtag, send_bytes,
                          CAPTURE_REQUEST_SEND, tracked.id, tracked.sequence, entered);
    if (tracked.recv_id)
        capture_write_p2p(CAPTURE_RECORD_RECV_POSTED, function_id, entry->id,
                          capture_peer_world(entry, source), recvtag, recv_bytes, CAPTURE_REQUEST_RECV,
                          tracked.recv_id, 0, 0);
}

void capture_message_request_on(int function_id, MPI_Comm probed_comm, MPI_Request request, bool record)
{
    if (probed_comm == MPI_COMM_NULL)
        return;
    const struct capture_comm *entry = comm_entry(probed_comm, record);
    struct tracked_request tracked = {.handle = request,
                                      .kind = CAPTURE_REQUEST_RECV,
                                      .described = true,
                                      .recorded = record,
                                      .function_id = (uint16_t)function_id,
                                      .comm = probed_comm,
                                      .comm_id = entry->id,
                                      .peer = -2,
                                      .tag = MPI_ANY_TAG,
                                      .id = new_request_id()};
    track(&tracked);
    if (record) /* the message's source and tag come with the completion */
        capture_write_p2p(CAPTURE_RECORD_RECV_POSTED, function_id, entry->id, -2, MPI_ANY_TAG, 0,
                          CAPTURE_REQUEST_RECV, tracked.id, 0, 0);
}

/* The request record of a nonblocking collective (otfx/capture_wire.h: it follows the collective's COLLECTIVE
 * record, and the place pairs the two; tag names the collective, so the completion says which one ended). */
static void write_collective_request(enum capture_record_kind kind, int function_id,
                                     const struct tracked_request *entry)
{
    capture_write_p2p(kind, function_id, (uint32_t)entry->tag, entry->peer, entry->function_id,
                      entry->bytes + entry->bytes_received, CAPTURE_REQUEST_COLLECTIVE, entry->id,
                      entry->sequence, 0);
}

/* The COLLECTIVE record of a tracked nonblocking collective, right before its request record at MPI_Start
 * and at its completion: the place takes the payload from the record before the request record, and the
 * completing thread may not be the one whose stream saw the start. */
static void write_collective_payload(const struct tracked_request *entry)
{
    struct capture_collective_info info = {.comm_id = (uint32_t)entry->tag,
                                           .root_world = entry->peer,
                                           .bytes_sent = entry->bytes,
                                           .bytes_received = entry->bytes_received,
                                           .sequence = entry->sequence};
    capture_comm_announce(info.comm_id); /* another thread may have created the request */
    capture_collective(entry->function_id, &info);
}

void capture_collective_request(int function_id, MPI_Request request,
                                const struct capture_collective_info *info, bool persistent)
{
    struct tracked_request tracked = {.handle = request,
                                      .kind = CAPTURE_REQUEST_COLLECTIVE,
                                      .persistent = persistent,
                                      .described = true,
                                      .recorded = !persistent,
                                      .function_id = (uint16_t)function_id,
                                      .peer = info->root_world,
                                      .tag = (int32_t)info->comm_id,
                                      .bytes = info->bytes_sent,
                                      .bytes_received = info->bytes_received,
                                      .id = persistent ? 0 : new_request_id(),
                                      .sequence = persistent ? 0 : info->sequence};
    track(&tracked);
    if (!persistent) /* the wrapper has just written the COLLECTIVE record; persistent ones start later */
        write_collective_request(CAPTURE_RECORD_COLLECTIVE_REQUEST, function_id, &tracked);
}

void capture_collective_unrecorded(MPI_Comm comm)
{
    capture_collective_next(capture_comm_find(comm)->id);
}

void capture_collective_request_unrecorded(MPI_Comm comm, MPI_Request request, bool persistent)
{
    const uint32_t comm_id = capture_comm_find(comm)->id;
    struct tracked_request tracked = {.handle = request,
                                      .kind = CAPTURE_REQUEST_COLLECTIVE,
                                      .persistent = persistent,
                                      .tag = (int32_t)comm_id, /* its starts count on it */
                                      .id = persistent ? 0 : new_request_id(),
                                      .sequence = persistent ? 0 : capture_collective_next(comm_id)};
    track(&tracked);
}

void capture_comm_request(int function_id, MPI_Request request, MPI_Comm *new_comm, bool record)
{
    struct tracked_request tracked = {.handle = request,
                                      .kind = CAPTURE_REQUEST_COMM,
                                      .described = true,
                                      .recorded = record,
                                      .function_id = (uint16_t)function_id,
                                      .new_comm = new_comm,
                                      .id = new_request_id()};
    track(&tracked);
}

/* MPI_Start of a persistent request: a fresh id (and, for a send, the next ordinal of its channel) in
 * its table entry, copied out. False when it is not tracked. */
static bool start_entry(MPI_Request handle, bool record, struct tracked_request *copy)
{
    capture_lock(&table_lock);
    struct tracked_request *entry = find(handle);
    if (entry && entry->persistent) {
        entry->id = new_request_id();
        entry->recorded = record && entry->described;
        if (entry->kind == CAPTURE_REQUEST_SEND)
            entry->sequence =
                capture_channel_next(entry->comm_id, entry->peer, entry->tag, CAPTURE_CHANNEL_SEND);
        else if (entry->kind == CAPTURE_REQUEST_COLLECTIVE)
            entry->sequence = capture_collective_next((uint32_t)entry->tag);
        *copy = *entry;
    }
    capture_unlock(&table_lock);
    return entry && entry->persistent;
}

void capture_requests_started(int function_id, const MPI_Request *requests, int count, uint64_t entered,
                              bool record)
{
    /* Sends first: their records carry the call's ENTER time, so nothing of this call may come before. */
    for (int i = 0; i < count; i++) {
        struct tracked_request entry = {0};
        if (!start_entry(requests[i], record, &entry) || !entry.recorded ||
            entry.kind != CAPTURE_REQUEST_SEND)
            continue;
        capture_comm_announce(entry.comm_id);
        capture_write_p2p(CAPTURE_RECORD_SEND, function_id, entry.comm_id, entry.peer, entry.tag, entry.bytes,
                          CAPTURE_REQUEST_SEND, entry.id, entry.sequence, entered);
    }
    for (int i = 0; record && i < count; i++) {
        struct tracked_request entry;
        if (!take(requests[i], &entry, true) || !entry.persistent || !entry.recorded)
            continue;
        if (entry.kind == CAPTURE_REQUEST_RECV) {
            capture_comm_announce(entry.comm_id);
            capture_write_p2p(CAPTURE_RECORD_RECV_POSTED, function_id, entry.comm_id, entry.peer, entry.tag,
                              entry.bytes, CAPTURE_REQUEST_RECV, entry.id, 0, 0);
        } else if (entry.kind == CAPTURE_REQUEST_COLLECTIVE) {
            write_collective_payload(&entry);
            write_collective_request(CAPTURE_RECORD_COLLECTIVE_REQUEST, function_id, &entry);
        }
    }
}

/* Records the completion of the request `entry` describes (already taken out of the table, unless
 * persistent), and counts a received message. */
static inline __attribute__((always_inline)) void
record_completion(int function_id, const struct tracked_request *entry, const MPI_Status *status, bool record)
{
    switch (entry->kind) {
    case CAPTURE_REQUEST_SEND:
        if (cancelled(status)) /* the message never left: its ordinal goes to the next send */
            capture_channel_withdraw(entry->comm_id, entry->peer, entry->tag, CAPTURE_CHANNEL_SEND,
                                     entry->sequence);
        else if (record && entry->recorded)
            capture_write_p2p(CAPTURE_RECORD_REQUEST_DONE, function_id, entry->comm_id, entry->peer,
                              entry->tag, entry->bytes, CAPTURE_REQUEST_SEND, entry->id, 0, 0);
        break;
    case CAPTURE_REQUEST_RECV:
        if (!cancelled(status))
            received(CAPTURE_RECORD_REQUEST_DONE, function_id, entry->comm, status->MPI_SOURCE,
                     status->MPI_TAG, status_bytes(status), CAPTURE_REQUEST_RECV, entry->id, record);
        break;
    case TRACKED_SENDRECV: {
        if (cancelled(status)) {
            capture_channel_withdraw(entry->comm_id, entry->peer, entry->tag, CAPTURE_CHANNEL_SEND,
                                     entry->sequence);
            break;
        }
        if (entry->id && record && entry->recorded)
            capture_write_p2p(CAPTURE_RECORD_REQUEST_DONE, function_id, entry->comm_id, entry->peer,
                              entry->tag, entry->bytes, CAPTURE_REQUEST_SEND, entry->id, 0, 0);
        if (entry->recv_id)
            sendrecv_received(CAPTURE_RECORD_REQUEST_DONE, function_id, entry->comm, entry->recv_source,
                              entry->recv_tag, entry->bytes_received, status, entry->recv_id, record);
        break;
    }
    case CAPTURE_REQUEST_COLLECTIVE:
        if (record && entry->recorded) {
            write_collective_payload(entry);
            write_collective_request(CAPTURE_RECORD_REQUEST_DONE, function_id, entry);
        }
        break;
    case CAPTURE_REQUEST_COMM:
        if (entry->new_comm && *entry->new_comm != MPI_COMM_NULL)
            capture_comm_created(entry->function_id, *entry->new_comm, record);
        break;
    default:
        break;
    }
}

void capture_requests_snapshot(const MPI_Request *requests, int count)
{
    if (!capture_threads_concurrent)
        return;
    reserve_scratch((void **)&snapshot, &snapshot_capacity, count, sizeof(*snapshot));
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < count; i++) {
        int earlier = 0; /* a shared handle's k-th occurrence in the array stands for its k-th entry */
        if (shared_handle(requests[i]))
            for (int j = 0; j < i; j++)
                earlier += requests[j] == requests[i];
        const struct tracked_request *entry = find_nth(requests[i], earlier);
        if (entry)
            snapshot[i] = *entry;
        else
            snapshot[i].handle = MPI_REQUEST_NULL;
    }
    pthread_mutex_unlock(&table_lock);
}

void capture_request_completed_at(int function_id, int index, MPI_Request request, const MPI_Status *status,
                                  bool record)
{
    if (__builtin_expect(!capture_threads_concurrent, 1)) {
        struct tracked_request entry;
        if (take(request, &entry, true))
            record_completion(function_id, &entry, status, record);
        return;
    }
    const struct tracked_request *copied = &snapshot[index];
    if (copied->handle == MPI_REQUEST_NULL)
        return; /* untracked when the call began */
    if (!copied->persistent) {
        /* Removed only if still the entry copied: else MPI already gave the handle to another thread's
         * new request, whose entry replaced ours. The completion is recorded either way, from the copy. */
        pthread_mutex_lock(&table_lock);
        struct tracked_request *entry = find(copied->handle);
        for (int n = 1; entry && entry->serial != copied->serial && shared_handle(copied->handle); n++)
            entry = find_nth(copied->handle, n);
        if (entry && entry->serial == copied->serial)
            remove_entry(entry);
        pthread_mutex_unlock(&table_lock);
    }
    record_completion(function_id, copied, status, record);
}

void capture_request_forget(MPI_Request request)
{
    capture_lock(&table_lock);
    struct tracked_request *entry = find(request);
    if (entry)
        remove_entry(entry);
    capture_unlock(&table_lock);
}

MPI_Request *capture_save_requests(const MPI_Request *requests, int count)
{
    reserve_scratch((void **)&saved_requests, &saved_capacity, count, sizeof(MPI_Request));
    for (int i = 0; i < count; i++)
        saved_requests[i] = requests[i];
    return saved_requests;
}

MPI_Status *capture_scratch_statuses(int count)
{
    reserve_scratch((void **)&scratch_statuses, &scratch_capacity, count, sizeof(MPI_Status));
    return scratch_statuses;
}

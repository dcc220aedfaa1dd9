/*
 * place_exchange.c — otfx_place_exchange over MPI point-to-point messages (see place_exchange.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "place_exchange.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_MIN_NS   50000u
#define WAIT_MAX_NS   1000000u
#define HEADER_BYTES  8u
#define TAG_DATA      0
#define TAG_ALLREDUCE 1

/* A send not known to be complete yet, with the bytes MPI reads. */
struct pending_send {
    struct pending_send *next;
    MPI_Request request;
    unsigned char *bytes;
};

struct place_exchange_hub {
    MPI_Comm comm;
    uint32_t size, self;
    uint32_t slots; /* request ids the tags tell apart: a power of two, 2 * slots - 1 <= MPI_TAG_UB */
    place_exchange_rank_fn place_of_rank;
    void *rank_context;
    pthread_mutex_t lock; /* everything below */
    unsigned references;  /* the place's (until close) and one per exchange not ended */
    bool closed;
    bool any_begun;
    uint32_t newest;               /* the newest request id begun here */
    bool newest_ended;             /* and whether its leaf returned */
    struct place_exchange *beside; /* exchanges begun beside the leaves and not ended (snapshots') */
    struct pending_send *orphans;  /* sends of exchanges that ended */
    /* what the stale discard dropped, for the report of an exchange that did not finish */
    uint64_t discarded;
    uint32_t discarded_request[8]; /* the latest, from their headers (ring) */
    int discarded_tag[8];
};

struct place_exchange {
    otfx_place_exchange interface;
    place_exchange_hub *hub;
    bool is_beside;
    struct place_exchange *next_beside;
    uint32_t request;
    uint64_t deadline_ns;
    uint32_t allreduce_calls;
    uint32_t next_source; /* where the next look for any place's message starts */
    struct pending_send *sends;
    uint64_t data_sent, data_taken, foreign_dropped; /* for the report of an unfinished exchange */
    bool broken;
    char error[256];
};

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    const struct timespec pause = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&pause, NULL);
}

static uint32_t slot_of(const place_exchange_hub *hub, uint32_t request)
{
    return request & (hub->slots - 1);
}

static int tag_of(const place_exchange_hub *hub, uint32_t request, int kind)
{
    return (int)(slot_of(hub, request) * 2u) + kind;
}

static void put_u32(unsigned char *out, uint32_t value)
{
    memcpy(out, &value, sizeof(value)); /* the places of one job share one byte order */
}

static uint32_t get_u32(const unsigned char *in)
{
    uint32_t value;
    memcpy(&value, in, sizeof(value));
    return value;
}

/* ---- the hub ---------------------------------------------------------------------------------------- */

place_exchange_hub *place_exchange_hub_create(MPI_Comm comm, place_exchange_rank_fn place_of_rank,
                                              void *rank_context, char *error, size_t error_size)
{
    /* collective: every member takes part before anything can fail on its own */
    MPI_Comm duplicate;
    if (PMPI_Comm_dup(comm, &duplicate) != MPI_SUCCESS) {
        snprintf(error, error_size, "cannot duplicate the event places' communicator");
        return NULL;
    }
    place_exchange_hub *hub = calloc(1, sizeof(*hub));
    if (!hub) {
        snprintf(error, error_size, "out of memory for the places' exchange");
        PMPI_Comm_free(&duplicate);
        return NULL;
    }
    hub->comm = duplicate;
    PMPI_Comm_set_errhandler(hub->comm, MPI_ERRORS_RETURN);
    int size = 0, self = 0;
    PMPI_Comm_size(hub->comm, &size);
    PMPI_Comm_rank(hub->comm, &self);
    hub->size = (uint32_t)size;
    int *tag_ub = NULL, found = 0;
    PMPI_Comm_get_attr(hub->comm, MPI_TAG_UB, &tag_ub, &found);
    const uint64_t largest_tag = found && tag_ub && *tag_ub > 32767 ? (uint64_t)*tag_ub : 32767u;
    hub->slots = 1u << 14;
    while (hub->slots < PLACE_EXCHANGE_MAX_SLOTS && 4u * (uint64_t)hub->slots - 1 <= largest_tag)
        hub->slots *= 2;
    hub->self = (uint32_t)self;
    hub->place_of_rank = place_of_rank;
    hub->rank_context = rank_context;
    hub->references = 1;
    pthread_mutex_init(&hub->lock, NULL);
    return hub;
}

static void send_free(struct pending_send *send)
{
    free(send->bytes);
    free(send);
}

/* Frees the sends of `list` that completed; returns whether any did. */
static bool complete_sends(struct pending_send **list)
{
    bool any = false;
    for (struct pending_send **at = list; *at;) {
        int done = 0;
        if (PMPI_Test(&(*at)->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 1; /* a failed send is over too */
        if (done) {
            struct pending_send *send = *at;
            *at = send->next;
            send_free(send);
            any = true;
        } else {
            at = &(*at)->next;
        }
    }
    return any;
}

/* Whether a message with this tag belongs to a request that ended here or is older than the newest one
 * begun here (hub->lock held). Slots are compared modulo hub->slots: a request id up to half of them
 * behind the newest is older, one up to half of them ahead is still to come. */
static bool tag_is_stale(const place_exchange_hub *hub, int tag)
{
    if (!hub->any_begun || tag < 0 || (uint32_t)tag >= 2 * hub->slots)
        return hub->any_begun; /* a tag no exchange uses: nothing waits for it */
    const uint32_t slot = (uint32_t)tag / 2;
    for (const struct place_exchange *e = hub->beside; e; e = e->next_beside)
        if (slot_of(hub, e->request) == slot)
            return false; /* a snapshot's, still running beside the leaves */
    const uint32_t behind = (slot_of(hub, hub->newest) - slot) & (hub->slots - 1);
    if (behind == 0)
        return hub->newest_ended;
    return behind < hub->slots / 2;
}

/* Receives and drops the stale message at the head of each place's queue, as long as there are. MPI
 * keeps each sender's messages in order, and a place sends a request's messages before the next
 * request's, so stale ones are found at the heads. */
static bool discard_stale(place_exchange_hub *hub)
{
    bool any = false;
    for (uint32_t from = 0; from < hub->size; from++) {
        if (from == hub->self)
            continue;
        for (;;) {
            int flag = 0;
            MPI_Status status;
            if (PMPI_Iprobe((int)from, MPI_ANY_TAG, hub->comm, &flag, &status) != MPI_SUCCESS || !flag)
                break;
            pthread_mutex_lock(&hub->lock);
            const bool stale = tag_is_stale(hub, status.MPI_TAG);
            pthread_mutex_unlock(&hub->lock);
            if (!stale)
                break;
            /* matched probe: another thread may have taken that message meanwhile; whatever matches
             * (from, tag) now is of the same request, stale as well */
            MPI_Message message;
            if (PMPI_Improbe((int)from, status.MPI_TAG, hub->comm, &flag, &message, &status) != MPI_SUCCESS ||
                !flag)
                continue;
            int count = 0;
            PMPI_Get_count(&status, MPI_BYTE, &count);
            unsigned char *bytes = malloc(count > 0 ? (size_t)count : 1);
            if (bytes) {
                PMPI_Mrecv(bytes, count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
                pthread_mutex_lock(&hub->lock);
                const unsigned slot = (unsigned)(hub->discarded++ % 8);
                hub->discarded_request[slot] = count >= (int)HEADER_BYTES ? get_u32(bytes) : 0;
                hub->discarded_tag[slot] = status.MPI_TAG;
                pthread_mutex_unlock(&hub->lock);
                free(bytes);
            } else {
                char byte;
                PMPI_Mrecv(&byte, 0, MPI_BYTE, &message, MPI_STATUS_IGNORE); /* truncated: still taken */
            }
            any = true;
        }
    }
    return any;
}

bool place_exchange_hub_poll(place_exchange_hub *hub)
{
    pthread_mutex_lock(&hub->lock);
    if (hub->closed) {
        pthread_mutex_unlock(&hub->lock);
        return false;
    }
    bool any = complete_sends(&hub->orphans);
    pthread_mutex_unlock(&hub->lock);
    return discard_stale(hub) || any;
}

static void hub_release(place_exchange_hub *hub)
{
    pthread_mutex_lock(&hub->lock);
    const bool last = --hub->references == 0;
    pthread_mutex_unlock(&hub->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&hub->lock);
    free(hub);
}

void place_exchange_hub_close(place_exchange_hub *hub, uint64_t linger_ns)
{
    if (!hub)
        return;
    /* from here on every message is stale: whatever comes is dropped, so the others' sends complete */
    pthread_mutex_lock(&hub->lock);
    hub->any_begun = true;
    hub->newest_ended = true;
    pthread_mutex_unlock(&hub->lock);
    const uint64_t until = now_ns() + linger_ns;
    uint64_t wait = WAIT_MIN_NS;
    for (;;) {
        pthread_mutex_lock(&hub->lock);
        complete_sends(&hub->orphans);
        const bool sends_left = hub->orphans != NULL;
        pthread_mutex_unlock(&hub->lock);
        int flag = 0;
        MPI_Status status;
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, hub->comm, &flag, &status);
        if (flag) {
            MPI_Message message;
            if (PMPI_Improbe(status.MPI_SOURCE, status.MPI_TAG, hub->comm, &flag, &message, &status) ==
                    MPI_SUCCESS &&
                flag) {
                int count = 0;
                PMPI_Get_count(&status, MPI_BYTE, &count);
                unsigned char *bytes = malloc(count > 0 ? (size_t)count : 1);
                PMPI_Mrecv(bytes, bytes ? count : 0, MPI_BYTE, &message, MPI_STATUS_IGNORE);
                free(bytes);
            }
            wait = WAIT_MIN_NS;
            continue;
        }
        if (!sends_left || now_ns() >= until)
            break;
        sleep_ns(wait);
        wait = wait * 2 > WAIT_MAX_NS ? WAIT_MAX_NS : wait * 2;
    }
    pthread_mutex_lock(&hub->lock);
    hub->closed = true;
    /* sends nobody took: cancelled; one that cannot be is let go (its bytes stay with MPI) */
    while (hub->orphans) {
        struct pending_send *send = hub->orphans;
        hub->orphans = send->next;
        int done = 0;
        PMPI_Cancel(&send->request);
        PMPI_Test(&send->request, &done, MPI_STATUS_IGNORE);
        if (done) {
            send_free(send);
        } else {
            PMPI_Request_free(&send->request);
            free(send); /* not the bytes: MPI may still read them */
        }
    }
    pthread_mutex_unlock(&hub->lock);
    PMPI_Comm_free(&hub->comm);
    hub_release(hub);
}

/* ---- one query's exchange ---------------------------------------------------------------------------- */

static bool fail(place_exchange *exchange, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Breaks the exchange with why (the first reason stays). */
static bool fail(place_exchange *exchange, const char *format, ...)
{
    if (!exchange->broken) {
        exchange->broken = true;
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(exchange->error, sizeof(exchange->error), format, arguments);
        va_end(arguments);
    }
    return false;
}

/* Whether the exchange can go on: not broken, the hub open, the deadline not passed. */
static bool usable(place_exchange *exchange)
{
    if (exchange->broken)
        return false;
    pthread_mutex_lock(&exchange->hub->lock);
    const bool closed = exchange->hub->closed;
    pthread_mutex_unlock(&exchange->hub->lock);
    if (closed)
        return fail(exchange, "the place is ending");
    if (exchange->deadline_ns && now_ns() >= exchange->deadline_ns)
        return fail(exchange, "the exchange with the other event places passed its deadline (the module time "
                              "limit, otfx-run --module-timeout)");
    return true;
}

static bool post_send(place_exchange *exchange, uint32_t to, int kind, uint32_t call, const void *bytes,
                      size_t length)
{
    if (length > (size_t)INT32_MAX - HEADER_BYTES)
        return fail(exchange, "a message to another event place is too large (over 2 GiB)");
    struct pending_send *send = malloc(sizeof(*send));
    unsigned char *copy = malloc(HEADER_BYTES + length);
    if (!send || !copy) {
        free(send);
        free(copy);
        return fail(exchange, "out of memory sending to another event place");
    }
    put_u32(copy, exchange->request);
    put_u32(copy + 4, call);
    if (length)
        memcpy(copy + HEADER_BYTES, bytes, length);
    send->bytes = copy;
    if (PMPI_Isend(copy, (int)(HEADER_BYTES + length), MPI_BYTE, (int)to,
                   tag_of(exchange->hub, exchange->request, kind), exchange->hub->comm,
                   &send->request) != MPI_SUCCESS) {
        send_free(send);
        return fail(exchange, "MPI failed sending to another event place");
    }
    send->next = exchange->sends;
    exchange->sends = send;
    return true;
}

/* A message of this request from place `from` on the tag of `kind`, taken into a
 * new buffer (*bytes, *length with the header; the caller frees it). 1 taken, 0 nothing there, -1 MPI
 * or memory failed. Messages with another request id in their header (a slot's earlier user) are
 * dropped. */
static int take_message_from(place_exchange *exchange, int from, int kind, unsigned char **bytes,
                             size_t *length, int *source)
{
    for (;;) {
        int flag = 0;
        MPI_Message message;
        MPI_Status status;
        if (PMPI_Improbe(from, tag_of(exchange->hub, exchange->request, kind), exchange->hub->comm, &flag,
                         &message, &status) != MPI_SUCCESS) {
            fail(exchange, "MPI failed probing for the other event places' messages");
            return -1;
        }
        if (!flag)
            return 0;
        int count = 0;
        PMPI_Get_count(&status, MPI_BYTE, &count);
        unsigned char *buffer = malloc(count > 0 ? (size_t)count : 1);
        if (!buffer) {
            char byte;
            PMPI_Mrecv(&byte, 0, MPI_BYTE, &message, MPI_STATUS_IGNORE);
            fail(exchange, "out of memory receiving from another event place");
            return -1;
        }
        if (PMPI_Mrecv(buffer, count, MPI_BYTE, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            free(buffer);
            fail(exchange, "MPI failed receiving from another event place");
            return -1;
        }
        if (count < (int)HEADER_BYTES || get_u32(buffer) != exchange->request) {
            exchange->foreign_dropped++;
            free(buffer);
            continue;
        }
        *bytes = buffer;
        *length = (size_t)count;
        *source = status.MPI_SOURCE;
        return 1;
    }
}

/* take_message_from, `from` MPI_ANY_SOURCE: any place. That looks at each place in turn, starting after
 * the one taken from last, rather than probing MPI_ANY_SOURCE: the places' own order is fair, and a
 * wildcard probe with another thread probing the same communicator is the path of MPI implementations
 * that sees the least use. */
static int take_message(place_exchange *exchange, int from, int kind, unsigned char **bytes, size_t *length,
                        int *source)
{
    if (from != MPI_ANY_SOURCE)
        return take_message_from(exchange, from, kind, bytes, length, source);
    const uint32_t size = exchange->hub->size;
    for (uint32_t k = 0; k < size; k++) {
        const uint32_t place = (exchange->next_source + k) % size;
        if (place == exchange->hub->self)
            continue;
        const int taken = take_message_from(exchange, (int)place, kind, bytes, length, source);
        if (taken != 0) {
            exchange->next_source = (place + 1) % size;
            return taken;
        }
    }
    return 0;
}

/* Waits for take_message to find something, until `until_ns` (0: the deadline only). 1 taken, 0 the
 * time ran out, -1 broken or the deadline passed. */
static int wait_message(place_exchange *exchange, int from, int kind, uint64_t until_ns,
                        unsigned char **bytes, size_t *length, int *source)
{
    uint64_t wait = WAIT_MIN_NS;
    for (;;) {
        if (!usable(exchange))
            return -1;
        const int taken = take_message(exchange, from, kind, bytes, length, source);
        if (taken != 0)
            return taken;
        /* meanwhile: own sends that completed, and what ended queries left behind */
        complete_sends(&exchange->sends);
        discard_stale(exchange->hub);
        const uint64_t now = now_ns();
        if (until_ns && now >= until_ns)
            return 0;
        uint64_t nap = wait;
        if (until_ns && until_ns - now < nap)
            nap = until_ns - now;
        if (exchange->deadline_ns && exchange->deadline_ns > now && exchange->deadline_ns - now < nap)
            nap = exchange->deadline_ns - now;
        sleep_ns(nap);
        wait = wait * 2 > WAIT_MAX_NS ? WAIT_MAX_NS : wait * 2;
    }
}

static uint32_t exchange_place_of_rank(void *context, uint32_t rank)
{
    place_exchange *exchange = context;
    const place_exchange_hub *hub = exchange->hub;
    const uint32_t place = hub->place_of_rank(hub->rank_context, rank);
    return place < hub->size ? place : UINT32_MAX;
}

static bool exchange_send(void *context, uint32_t to, const void *bytes, size_t length)
{
    place_exchange *exchange = context;
    if (!usable(exchange))
        return false;
    if (to >= exchange->hub->size || to == exchange->hub->self) {
        return fail(exchange, "a message to event place %u, which is not another place of the exchange", to);
    }
    complete_sends(&exchange->sends);
    if (!post_send(exchange, to, TAG_DATA, 0, bytes, length))
        return false;
    exchange->data_sent++;
    return true;
}

static int exchange_receive(void *context, uint64_t timeout_ns,
                            void (*fn)(void *user, uint32_t from, const void *bytes, size_t length),
                            void *user)
{
    place_exchange *exchange = context;
    unsigned char *bytes = NULL;
    size_t length = 0;
    int source = 0;
    /* timeout 0: one look, no sleep */
    const int taken =
        wait_message(exchange, MPI_ANY_SOURCE, TAG_DATA, now_ns() + timeout_ns, &bytes, &length, &source);
    if (taken != 1)
        return taken;
    exchange->data_taken++;
    fn(user, (uint32_t)source, bytes + HEADER_BYTES, length - HEADER_BYTES);
    free(bytes);
    return 1;
}

static void combine(otfx_exchange_op op, uint64_t *into, const unsigned char *values, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t value;
        memcpy(&value, values + i * sizeof(value), sizeof(value));
        switch (op) {
        case OTFX_EXCHANGE_SUM:
            into[i] += value;
            break;
        case OTFX_EXCHANGE_MIN:
            into[i] = value < into[i] ? value : into[i];
            break;
        case OTFX_EXCHANGE_MAX:
            into[i] = value > into[i] ? value : into[i];
            break;
        }
    }
}

/* An allreduce message of call `call` from `from`, its values checked against count (1 taken, -1 not). */
static int take_contribution(place_exchange *exchange, int from, uint32_t call, size_t count,
                             unsigned char **bytes)
{
    for (;;) {
        size_t length = 0;
        int source = 0;
        const int taken = wait_message(exchange, from, TAG_ALLREDUCE, 0, bytes, &length, &source);
        if (taken != 1)
            return -1;
        const uint32_t their_call = get_u32(*bytes + 4);
        if (their_call == call && length == HEADER_BYTES + count * sizeof(uint64_t))
            return 1;
        free(*bytes);
        *bytes = NULL;
        if (their_call >= call) {
            fail(exchange,
                 "the event places' allreduce does not match: call %u has another size or order at place %d",
                 call, from);
            return -1;
        }
        /* an earlier call's message: cannot happen between places that follow the rules; dropped */
    }
}

static bool exchange_allreduce(void *context, otfx_exchange_op op, uint64_t *values, size_t count)
{
    place_exchange *exchange = context;
    if (!usable(exchange))
        return false;
    if (op != OTFX_EXCHANGE_SUM && op != OTFX_EXCHANGE_MIN && op != OTFX_EXCHANGE_MAX)
        return fail(exchange, "allreduce with an unknown operation");
    if (count > (size_t)(INT32_MAX - HEADER_BYTES) / sizeof(uint64_t))
        return fail(exchange, "allreduce over too many values");
    const uint32_t call = ++exchange->allreduce_calls;
    const place_exchange_hub *hub = exchange->hub;
    if (hub->size == 1)
        return true;
    unsigned char *bytes = NULL;
    if (hub->self != 0) {
        if (!post_send(exchange, 0, TAG_ALLREDUCE, call, values, count * sizeof(uint64_t)))
            return false;
        if (take_contribution(exchange, 0, call, count, &bytes) != 1)
            return false;
        if (count)
            memcpy(values, bytes + HEADER_BYTES, count * sizeof(uint64_t));
        free(bytes);
        return true;
    }
    for (uint32_t from = 1; from < hub->size; from++) {
        if (take_contribution(exchange, (int)from, call, count, &bytes) != 1)
            return false;
        combine(op, values, bytes + HEADER_BYTES, count);
        free(bytes);
    }
    for (uint32_t to = 1; to < hub->size; to++)
        if (!post_send(exchange, to, TAG_ALLREDUCE, call, values, count * sizeof(uint64_t)))
            return false;
    return true;
}

static const char *exchange_last_error(void *context)
{
    const place_exchange *exchange = context;
    return exchange->error[0] ? exchange->error : "no error";
}

static place_exchange *begin(place_exchange_hub *hub, uint32_t request, uint64_t deadline_ns, bool beside)
{
    place_exchange *exchange = calloc(1, sizeof(*exchange));
    if (!exchange)
        return NULL;
    exchange->request = request;
    pthread_mutex_lock(&hub->lock);
    hub->references++;
    if (beside) {
        exchange->is_beside = true;
        exchange->next_beside = hub->beside;
        hub->beside = exchange;
    } else {
        /* a place runs its leaves in the order the requests came: the one beginning is the newest */
        hub->any_begun = true;
        hub->newest = request;
        hub->newest_ended = false;
    }
    pthread_mutex_unlock(&hub->lock);
    exchange->hub = hub;
    exchange->deadline_ns = deadline_ns;
    exchange->interface = (otfx_place_exchange){
        .place_count = hub->size,
        .self = hub->self,
        .context = exchange,
        .place_of_rank = exchange_place_of_rank,
        .send = exchange_send,
        .receive = exchange_receive,
        .allreduce = exchange_allreduce,
        .last_error = exchange_last_error,
    };
    return exchange;
}

place_exchange *place_exchange_begin(place_exchange_hub *hub, uint32_t request, uint64_t deadline_ns)
{
    return begin(hub, request, deadline_ns, false);
}

place_exchange *place_exchange_begin_beside(place_exchange_hub *hub, uint32_t request, uint64_t deadline_ns)
{
    return begin(hub, request, deadline_ns, true);
}

const otfx_place_exchange *place_exchange_interface(place_exchange *exchange)
{
    return &exchange->interface;
}

void place_exchange_end(place_exchange *exchange)
{
    if (!exchange)
        return;
    place_exchange_hub *hub = exchange->hub;
    pthread_mutex_lock(&hub->lock);
    if (exchange->broken || (exchange->deadline_ns && now_ns() >= exchange->deadline_ns)) {
        /* what this place's side of the exchange did, for whoever looks into why it did not finish */
        char discards[160] = "";
        size_t used = 0;
        for (uint64_t k = hub->discarded > 8 ? hub->discarded - 8 : 0;
             k < hub->discarded && used < sizeof discards; k++)
            used += (size_t)snprintf(discards + used, sizeof discards - used, " %u/%d",
                                     hub->discarded_request[k % 8], hub->discarded_tag[k % 8]);
        fprintf(
            stderr,
            "otfx-place: exchange of request %u with the other event places at place %u did not finish (%s): "
            "data messages sent %llu, taken %llu, of other requests dropped %llu; stale messages discarded "
            "here %llu, the latest (request/tag):%s\n",
            exchange->request, hub->self, exchange->error[0] ? exchange->error : "its deadline passed",
            (unsigned long long)exchange->data_sent, (unsigned long long)exchange->data_taken,
            (unsigned long long)exchange->foreign_dropped, (unsigned long long)hub->discarded,
            discards[0] ? discards : " none");
    }
    if (!hub->closed) {
        complete_sends(&exchange->sends);
        struct pending_send **tail = &hub->orphans;
        while (*tail)
            tail = &(*tail)->next;
        *tail = exchange->sends;
        exchange->sends = NULL;
    }
    if (!exchange->is_beside && hub->newest == exchange->request)
        hub->newest_ended = true;
    for (place_exchange **at = &hub->beside; exchange->is_beside && *at; at = &(*at)->next_beside)
        if (*at == exchange) {
            *at = exchange->next_beside;
            break;
        }
    pthread_mutex_unlock(&hub->lock);
    /* the hub closed meanwhile (a leaf given up on, ending after its place): its sends are let go */
    for (struct pending_send *send = exchange->sends, *next; send; send = next) {
        next = send->next;
        PMPI_Request_free(&send->request);
        free(send);
    }
    hub_release(hub);
    free(exchange);
}

/*
 * test_place_exchange_mpi.c — the event places' exchange over MPI (places/src/place_exchange.c) on 4
 * processes, each playing an event place: a worker thread runs the queries' exchanges while the main
 * thread polls the hub, as a place's MPI thread does.
 *   order      every place sends 300 messages of mixed sizes (up to 200 kB, past MPI's eager limit) to
 *              every other; each receives them whole and in order per sender;
 *   allreduce  sum, min and max over several values, twice each, with messages sent before the
 *              allreduce received after it; a place alone in its exchange sees its own values;
 *   deadline   one place stays out of an allreduce: the others fail at the deadline with the reason;
 *              a receive with nothing coming fails the same way; calls after it fail at once;
 *   abandoned  a query sends messages and allreduce contributions and ends without receiving them
 *              (given up on); the next queries (also far apart, and across the wrap of the ids) get only
 * their own messages and a right allreduce. Prints "place-exchange: ..." lines that ctest matches; any
 * failure exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include "place_exchange.h"

#include <mpi.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ORDER_MESSAGES = 300, MAX_PLACES = 8 };

static int me, places;

static void check(bool condition, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void check(bool condition, const char *format, ...)
{
    if (condition)
        return;
    va_list arguments;
    va_start(arguments, format);
    fprintf(stderr, "place-exchange: place %d: FAILED: ", me);
    vfprintf(stderr, format, arguments);
    fprintf(stderr, "\n");
    va_end(arguments);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Application rank r is served by place r % places. */
static uint32_t place_of_rank(void *context, uint32_t rank)
{
    (void)context;
    return rank < 100 ? rank % (uint32_t)places : UINT32_MAX;
}

/* The synchronisation of the test itself (not the exchange's): on its own duplicate of the world. */
static MPI_Comm test_comm;

static void test_barrier(void)
{
    MPI_Barrier(test_comm);
}

/* ---- messages ----------------------------------------------------------------------------------------- */

/* A message: sender, receiver, number, request tag, then filler bytes derived from them. */
struct message_head {
    uint32_t from, to, number, request;
};

static size_t message_size(uint32_t number)
{
    static const size_t sizes[] = {sizeof(struct message_head), 100, 4000, 70000, 200000};
    return sizes[number % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* Sends message `number` to `to`; false when the exchange's deadline passed first (the caller says
 * whether it may), any other failure ends the test. */
static bool send_message_until_deadline(const otfx_place_exchange *exchange, uint32_t to, uint32_t number,
                                        uint32_t request)
{
    const size_t size = message_size(number);
    unsigned char *bytes = malloc(size);
    check(bytes != NULL, "out of memory");
    const struct message_head head = {exchange->self, to, number, request};
    memcpy(bytes, &head, sizeof(head));
    for (size_t i = sizeof(head); i < size; i++)
        bytes[i] = (unsigned char)(i * 7 + number + exchange->self);
    const bool sent = exchange->send(exchange->context, to, bytes, size);
    free(bytes);
    check(sent || strstr(exchange->last_error(exchange->context), "deadline"), "send to %u: %s", to,
          exchange->last_error(exchange->context));
    return sent;
}

static void send_message(const otfx_place_exchange *exchange, uint32_t to, uint32_t number, uint32_t request)
{
    check(send_message_until_deadline(exchange, to, number, request), "send to %u: %s", to,
          exchange->last_error(exchange->context));
}

struct received {
    uint32_t request;
    uint32_t next_number[MAX_PLACES];
    uint32_t count;
};

static void on_message(void *user, uint32_t from, const void *bytes, size_t length)
{
    struct received *received = user;
    struct message_head head;
    check(length >= sizeof(head), "a message of %zu bytes", length);
    memcpy(&head, bytes, sizeof(head));
    check(head.request == received->request, "a message of request %u in request %u", head.request,
          received->request);
    check(head.from == from && head.to == (uint32_t)me, "a message from %u to %u handed over as from %u",
          head.from, head.to, from);
    check(head.number == received->next_number[from], "message %u from %u arrived, expected %u", head.number,
          from, received->next_number[from]);
    check(length == message_size(head.number), "message %u from %u has %zu bytes", head.number, from, length);
    const unsigned char *filler = bytes;
    for (size_t i = sizeof(head); i < length; i++)
        check(filler[i] == (unsigned char)(i * 7 + head.number + from),
              "message %u from %u: byte %zu differs", head.number, from, i);
    received->next_number[from]++;
    received->count++;
}

static void receive_all(const otfx_place_exchange *exchange, struct received *received, uint32_t expected)
{
    while (received->count < expected) {
        const int got = exchange->receive(exchange->context, 100u * 1000u * 1000u, on_message, received);
        check(got >= 0, "receive: %s", exchange->last_error(exchange->context));
    }
    /* and nothing more comes */
    const int got = exchange->receive(exchange->context, 0, on_message, received);
    check(got == 0, "an extra message (receive answered %d)", got);
}

/* ---- the scenarios ------------------------------------------------------------------------------------ */

static place_exchange_hub *hub;

static void order(uint32_t request)
{
    place_exchange *exchange = place_exchange_begin(hub, request, now_ns() + 60ull * 1000000000u);
    check(exchange != NULL, "begin");
    const otfx_place_exchange *x = place_exchange_interface(exchange);
    check(x->place_count == (uint32_t)places && x->self == (uint32_t)me, "places %u self %u", x->place_count,
          x->self);
    check(x->place_of_rank(x->context, 7) == 7u % (uint32_t)places, "place_of_rank(7)");
    check(x->place_of_rank(x->context, 1000) == UINT32_MAX, "place_of_rank of a rank nobody serves");
    check(!x->send(x->context, (uint32_t)me, "x", 1) &&
              strstr(x->last_error(x->context), "not another place"),
          "a send to itself is refused");
    place_exchange_end(exchange);

    exchange = place_exchange_begin(hub, request + 1, now_ns() + 60ull * 1000000000u);
    x = place_exchange_interface(exchange);
    struct received received = {.request = request + 1};
    for (uint32_t n = 0; n < ORDER_MESSAGES; n++)
        for (uint32_t to = 0; to < (uint32_t)places; to++)
            if (to != (uint32_t)me)
                send_message(x, to, n, request + 1);
    receive_all(x, &received, ORDER_MESSAGES * (uint32_t)(places - 1));
    place_exchange_end(exchange);
    test_barrier();
    if (me == 0)
        printf("place-exchange: order: %d messages per pair of places, whole and in order\n", ORDER_MESSAGES);
}

static void allreduce(uint32_t request)
{
    place_exchange *exchange = place_exchange_begin(hub, request, now_ns() + 60ull * 1000000000u);
    const otfx_place_exchange *x = place_exchange_interface(exchange);
    const uint32_t next = ((uint32_t)me + 1) % (uint32_t)places;
    send_message(x, next, 0, request); /* before the allreduce, received after it */
    for (int round = 0; round < 2; round++) {
        uint64_t values[3] = {(uint64_t)me + 1 + (uint64_t)round, 1000u - (uint64_t)me, (uint64_t)me * 10};
        check(x->allreduce(x->context, OTFX_EXCHANGE_SUM, values, 3), "sum: %s", x->last_error(x->context));
        const uint64_t n = (uint64_t)places;
        check(values[0] == n * (n + 1) / 2 + n * (uint64_t)round &&
                  values[1] == 1000u * n - n * (n - 1) / 2 && values[2] == 10u * n * (n - 1) / 2,
              "sum gave %lu %lu %lu", (unsigned long)values[0], (unsigned long)values[1],
              (unsigned long)values[2]);
        uint64_t low[2] = {(uint64_t)me + 5, UINT64_MAX - (uint64_t)me};
        check(x->allreduce(x->context, OTFX_EXCHANGE_MIN, low, 2), "min: %s", x->last_error(x->context));
        check(low[0] == 5 && low[1] == UINT64_MAX - (n - 1), "min gave %lu", (unsigned long)low[0]);
        uint64_t high[2] = {(uint64_t)me + 5, (uint64_t)(me == 2) * 77};
        check(x->allreduce(x->context, OTFX_EXCHANGE_MAX, high, 2), "max: %s", x->last_error(x->context));
        check(high[0] == 5 + n - 1 && high[1] == (n > 2 ? 77u : 0u), "max gave %lu", (unsigned long)high[0]);
        check(x->allreduce(x->context, OTFX_EXCHANGE_SUM, NULL, 0), "an empty allreduce");
    }
    struct received received = {.request = request};
    receive_all(x, &received, 1);
    place_exchange_end(exchange);
    test_barrier();
    if (me == 0)
        printf(
            "place-exchange: allreduce: sum, min and max over %d places; earlier messages still received\n",
            places);
}

static void deadline(uint32_t request)
{
    /* the last place stays out of the allreduce: everybody else gives up at the deadline */
    place_exchange *exchange = place_exchange_begin(hub, request, now_ns() + 300u * 1000u * 1000u);
    const otfx_place_exchange *x = place_exchange_interface(exchange);
    if (me != places - 1) {
        uint64_t value = 1;
        check(!x->allreduce(x->context, OTFX_EXCHANGE_SUM, &value, 1),
              "an allreduce without a place succeeded");
        check(strstr(x->last_error(x->context), "deadline") &&
                  strstr(x->last_error(x->context), "module time limit"),
              "the allreduce failed for another reason: %s", x->last_error(x->context));
        check(!x->send(x->context, (uint32_t)(places - 1), "x", 1), "a send after the deadline succeeded");
    } else {
        struct received received = {.request = request};
        const int got = x->receive(x->context, 10ull * 1000000000u, on_message, &received);
        check(got == -1 && strstr(x->last_error(x->context), "deadline"),
              "a receive past the deadline: %d %s", got, x->last_error(x->context));
    }
    if (me == 0)
        printf("place-exchange: deadline: %s\n", x->last_error(x->context));
    place_exchange_end(exchange);
    test_barrier();
}

/* A query given up on: messages and an allreduce contribution left behind, never received. */
static void abandon(uint32_t request)
{
    place_exchange *exchange = place_exchange_begin(hub, request, now_ns() + 200u * 1000u * 1000u);
    const otfx_place_exchange *x = place_exchange_interface(exchange);
    /* On a loaded machine the deadline may pass while sending: the query is given up on the earlier */
    bool sending = true;
    for (uint32_t n = 0; n < 20 && sending; n++)
        for (uint32_t to = 0; to < (uint32_t)places && sending; to++)
            if (to != (uint32_t)me)
                sending = send_message_until_deadline(x, to, n, request);
    if (me != 0) {
        /* place 0 never takes part: the contribution stays behind, the call fails at the deadline */
        uint64_t value = 1000000;
        check(!x->allreduce(x->context, OTFX_EXCHANGE_SUM, &value, 1), "an allreduce place 0 left succeeded");
    }
    place_exchange_end(exchange);
    test_barrier();
    /* let the left-behind messages arrive before the next query looks */
    const struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    test_barrier();
}

static void after_abandoned(uint32_t request)
{
    place_exchange *exchange = place_exchange_begin(hub, request, now_ns() + 60ull * 1000000000u);
    const otfx_place_exchange *x = place_exchange_interface(exchange);
    struct received received = {.request = request};
    for (uint32_t n = 0; n < 10; n++)
        for (uint32_t to = 0; to < (uint32_t)places; to++)
            if (to != (uint32_t)me)
                send_message(x, to, n, request);
    uint64_t value = (uint64_t)me + 1;
    check(x->allreduce(x->context, OTFX_EXCHANGE_SUM, &value, 1), "allreduce after an abandoned query: %s",
          x->last_error(x->context));
    const uint64_t n = (uint64_t)places;
    check(value == n * (n + 1) / 2, "allreduce after an abandoned query gave %lu", (unsigned long)value);
    receive_all(x, &received, 10u * (uint32_t)(places - 1));
    place_exchange_end(exchange);
    test_barrier();
}

static atomic_bool done;

static void *worker(void *argument)
{
    (void)argument;
    order(1);
    allreduce(3);
    deadline(4);
    abandon(5);
    after_abandoned(6);
    /* many requests without an exchange between two that have one */
    after_abandoned(5000);
    /* ids wrap around (skipping 0), the tags' slots with them */
    abandon(UINT32_MAX);
    after_abandoned(1);
    after_abandoned(2);
    if (me == 0)
        printf("place-exchange: abandoned: the next queries got only their own messages\n");
    atomic_store(&done, true);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &places);
    check(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
    check(places >= 2 && places <= MAX_PLACES, "run on 2 to %d processes", MAX_PLACES);
    MPI_Comm_dup(MPI_COMM_WORLD, &test_comm);

    /* a place alone: allreduce gives its own values, receive finds nothing */
    MPI_Comm alone;
    MPI_Comm_split(MPI_COMM_WORLD, me, 0, &alone);
    char error[256];
    place_exchange_hub *single = place_exchange_hub_create(alone, place_of_rank, NULL, error, sizeof(error));
    check(single != NULL, "hub: %s", error);
    place_exchange *exchange = place_exchange_begin(single, 1, 0);
    const otfx_place_exchange *x = place_exchange_interface(exchange);
    uint64_t value = 42;
    check(x->place_count == 1 && x->allreduce(x->context, OTFX_EXCHANGE_MAX, &value, 1) && value == 42,
          "a place alone");
    check(x->receive(x->context, 1000, on_message, NULL) == 0, "a place alone received something");
    place_exchange_end(exchange);
    place_exchange_hub_close(single, 0);
    MPI_Comm_free(&alone);

    hub = place_exchange_hub_create(MPI_COMM_WORLD, place_of_rank, NULL, error, sizeof(error));
    check(hub != NULL, "hub: %s", error);
    pthread_t thread;
    check(pthread_create(&thread, NULL, worker, NULL) == 0, "thread");
    while (!atomic_load(&done)) {
        (void)place_exchange_hub_poll(hub);
        const struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
    }
    pthread_join(thread, NULL);
    MPI_Barrier(test_comm);
    place_exchange_hub_close(hub, 2ull * 1000000000u);
    MPI_Comm_free(&test_comm);
    if (me == 0)
        printf("place-exchange: passed (%d places)\n", places);
    MPI_Finalize();
    return 0;
}

/*
 * place_exchange.h — the event places talking to each other during one query's leaf (the
 * otfx_place_exchange of otfx/replay.h) over MPI (private to places/).
 *
 * A hub belongs to one place for its whole run: a duplicate of the event places' communicator made at
 * setup (collective over the event places), so this traffic never mixes with snapshots or batches. A
 * leaf that replays across places begins an exchange of its own on the hub, named by the query's
 * request id, and ends it when the leaf returns; a compensated snapshot on the snapshot thread begins one
 * beside the worker's leaves (place_exchange_begin_beside). Calls of
 * an exchange run on the place's worker thread while the MPI thread goes on (MPI_THREAD_MULTIPLE); they never
 * block in MPI and never spin: a wait tests with PMPI_Improbe and sleeps 50 µs, doubling up to 1 ms, until
 * something comes or its time is up.
 *
 * Messages are point-to-point only. Each carries its request id twice: in its tag (two tags per request
 * id modulo a number of slots, one for the leaf's messages and one for allreduce) and in an 8-byte header
 * (request id, allreduce call number). The slots are as many as the tags MPI offers allow (MPI_TAG_UB),
 * from 2^14 (the standard's smallest MPI_TAG_UB, 32767) up to PLACE_EXCHANGE_MAX_SLOTS; ids are compared
 * modulo them (half behind the newest request begun here is the past, half ahead the future), which
 * holds while fewer requests than half the slots enter the tree during one exchange query's life. A query's
 * receive probes its own tag only, so it never takes another query's messages; MPI keeps the order of
 * messages between two places on one tag. allreduce is made of messages too, numbered per call: every place
 * sends its values to place 0, which combines them and sends the result back. So a query given up on at the
 * module time limit leaves no collective half done, only messages: the hub discards those of a request that
 * ended here, or that is older than the newest request begun here (place_exchange_hub_poll, and every wait of
 * a later exchange), and keeps those of requests not begun here yet. Sends whose receiver never took them are
 * handed to the hub when their exchange ends and freed once complete.
 *
 * An exchange has a deadline (the module time limit): once past, every call fails with that error, so a
 * leaf given up on stops using MPI soon after.
 */
#ifndef OTFX_PLACES_PLACE_EXCHANGE_H
#define OTFX_PLACES_PLACE_EXCHANGE_H

#include <otfx/replay.h>

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

/* The most request ids the tags tell apart (two tags each). */
#define PLACE_EXCHANGE_MAX_SLOTS (1u << 26)

typedef struct place_exchange_hub place_exchange_hub;
typedef struct place_exchange place_exchange;

/* The index among the exchange's places of the place serving an application rank (UINT32_MAX: none). */
typedef uint32_t (*place_exchange_rank_fn)(void *context, uint32_t rank);

/* Duplicates `comm` (collective over its members: every member calls it at the same point); member i of
 * comm is place i of the exchanges. `place_of_rank`/`rank_context` answer the exchanges' place_of_rank
 * and must stay valid as long as the hub. NULL with why in `error` when MPI or memory fails. */
place_exchange_hub *place_exchange_hub_create(MPI_Comm comm, place_exchange_rank_fn place_of_rank,
                                              void *rank_context, char *error, size_t error_size);
/* Frees the sends that completed and discards the messages of requests that ended here (any thread).
 * Returns whether it did anything. */
bool place_exchange_hub_poll(place_exchange_hub *hub);
/* The place's end: for up to `linger_ns` it discards what arrives and waits for its unreceived sends,
 * then frees the communicator. Exchanges still running (leaves given up on) fail from here on; the hub's
 * memory goes with the last of them. NULL: nothing. */
void place_exchange_hub_close(place_exchange_hub *hub, uint64_t linger_ns);

/* One query's exchange: `request` is the query's id (the same at every place, never 0), `deadline_ns`
 * CLOCK_MONOTONIC (0: none). NULL when out of memory. The hub must not be closed yet. */
place_exchange *place_exchange_begin(place_exchange_hub *hub, uint32_t request, uint64_t deadline_ns);
/* An exchange on another thread than the worker's, beside its leaves (a compensated snapshot's): its
 * messages are never discarded as stale while it runs, and it leaves the newest request alone (it is not
 * one of the leaves, which run in request order). */
place_exchange *place_exchange_begin_beside(place_exchange_hub *hub, uint32_t request, uint64_t deadline_ns);
/* What a leaf uses (valid until place_exchange_end). */
const otfx_place_exchange *place_exchange_interface(place_exchange *exchange);
/* The leaf returned: its unreceived sends go to the hub, its request counts as ended here. NULL:
 * nothing. */
void place_exchange_end(place_exchange *exchange);

#endif

/* inproc_exchange.h — an otfx_place_exchange (otfx/replay.h) between event places simulated on threads
 * of one process, for tests: a message queue per place, and allreduces that meet at a barrier. Messages
 * between two places stay in order; a wait that lasts longer than the world's patience (60 s) reports
 * the exchange broken, so a test that hangs fails instead. */
#ifndef OTFX_TESTS_INPROC_EXCHANGE_H
#define OTFX_TESTS_INPROC_EXCHANGE_H

#include <otfx/replay.h>

typedef struct inproc_world inproc_world;

/* `places` places; rank r is served by place_of_rank[r] (UINT32_MAX: by none), for `ranks` ranks. */
inproc_world *inproc_world_create(uint32_t places, const uint32_t *place_of_rank, uint32_t ranks);
void inproc_world_destroy(inproc_world *world);
/* Place `self`'s view of the world (valid while the world lives). */
otfx_place_exchange inproc_exchange(inproc_world *world, uint32_t self);

/* Runs fn(exchange of place p, users[p]) on one thread per place and waits for all of them. */
void inproc_run_places(inproc_world *world, void (*fn)(const otfx_place_exchange *exchange, void *user),
                       void **users);

#endif

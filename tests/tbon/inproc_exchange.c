/* inproc_exchange.c — see inproc_exchange.h. */
#define _POSIX_C_SOURCE 200809L

#include "inproc_exchange.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PATIENCE_S = 60 };

typedef struct inproc_message {
    struct inproc_message *next;
    uint32_t from;
    size_t length;
    unsigned char bytes[];
} inproc_message;

typedef struct inproc_place {
    inproc_world *world;
    uint32_t self;
    inproc_message *head, *tail;
    pthread_cond_t arrived;
    char error[128];
} inproc_place;

struct inproc_world {
    uint32_t places, ranks;
    uint32_t *place_of_rank;
    pthread_mutex_t lock;
    inproc_place *place;
    /* allreduce: contributions of the current generation, and the last result */
    pthread_cond_t reduced;
    uint32_t contributed;
    uint64_t generation;
    uint64_t accumulated[16], result[16];
};

inproc_world *inproc_world_create(uint32_t places, const uint32_t *place_of_rank, uint32_t ranks)
{
    inproc_world *world = calloc(1, sizeof *world);
    if (!world)
        return NULL;
    world->places = places;
    world->ranks = ranks;
    world->place_of_rank = malloc(sizeof(uint32_t) * (ranks ? ranks : 1));
    world->place = calloc(places, sizeof *world->place);
    if (!world->place_of_rank || !world->place) {
        free(world->place_of_rank);
        free(world->place);
        free(world);
        return NULL;
    }
    memcpy(world->place_of_rank, place_of_rank, sizeof(uint32_t) * ranks);
    pthread_mutex_init(&world->lock, NULL);
    pthread_cond_init(&world->reduced, NULL);
    for (uint32_t p = 0; p < places; p++) {
        world->place[p].world = world;
        world->place[p].self = p;
        pthread_cond_init(&world->place[p].arrived, NULL);
    }
    return world;
}

void inproc_world_destroy(inproc_world *world)
{
    if (!world)
        return;
    for (uint32_t p = 0; p < world->places; p++) {
        inproc_message *m = world->place[p].head;
        while (m) {
            inproc_message *next = m->next;
            free(m);
            m = next;
        }
        pthread_cond_destroy(&world->place[p].arrived);
    }
    pthread_cond_destroy(&world->reduced);
    pthread_mutex_destroy(&world->lock);
    free(world->place);
    free(world->place_of_rank);
    free(world);
}

static uint32_t place_of(void *context, uint32_t rank)
{
    inproc_place *place = context;
    return rank < place->world->ranks ? place->world->place_of_rank[rank] : UINT32_MAX;
}

static bool send_bytes(void *context, uint32_t to, const void *bytes, size_t length)
{
    inproc_place *place = context;
    inproc_world *world = place->world;
    if (to >= world->places || to == place->self)
        return false;
    inproc_message *m = malloc(sizeof *m + length);
    if (!m)
        return false;
    m->next = NULL;
    m->from = place->self;
    m->length = length;
    memcpy(m->bytes, bytes, length);
    pthread_mutex_lock(&world->lock);
    inproc_place *target = &world->place[to];
    if (target->tail)
        target->tail->next = m;
    else
        target->head = m;
    target->tail = m;
    pthread_cond_signal(&target->arrived);
    pthread_mutex_unlock(&world->lock);
    return true;
}

static struct timespec after_ns(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t total = (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec += (time_t)(total / 1000000000u);
    ts.tv_nsec = (long)(total % 1000000000u);
    return ts;
}

static int receive_bytes(void *context, uint64_t timeout_ns,
                         void (*fn)(void *user, uint32_t from, const void *bytes, size_t length), void *user)
{
    inproc_place *place = context;
    inproc_world *world = place->world;
    pthread_mutex_lock(&world->lock);
    if (!place->head && timeout_ns > 0) {
        struct timespec until = after_ns(timeout_ns);
        while (!place->head) {
            if (pthread_cond_timedwait(&place->arrived, &world->lock, &until) == ETIMEDOUT)
                break;
        }
    }
    inproc_message *m = place->head;
    if (m) {
        place->head = m->next;
        if (!place->head)
            place->tail = NULL;
    }
    pthread_mutex_unlock(&world->lock);
    if (!m)
        return 0;
    fn(user, m->from, m->bytes, m->length);
    free(m);
    return 1;
}

static bool allreduce(void *context, otfx_exchange_op op, uint64_t *values, size_t count)
{
    inproc_place *place = context;
    inproc_world *world = place->world;
    if (count > 16) {
        strcpy(place->error, "allreduce of more than 16 values");
        return false;
    }
    pthread_mutex_lock(&world->lock);
    for (size_t i = 0; i < count; i++) {
        uint64_t *a = &world->accumulated[i];
        if (world->contributed == 0)
            *a = values[i];
        else if (op == OTFX_EXCHANGE_SUM)
            *a += values[i];
        else if (op == OTFX_EXCHANGE_MIN)
            *a = values[i] < *a ? values[i] : *a;
        else
            *a = values[i] > *a ? values[i] : *a;
    }
    uint64_t generation = world->generation;
    bool ok = true;
    if (++world->contributed == world->places) {
        memcpy(world->result, world->accumulated, sizeof world->result);
        world->contributed = 0;
        world->generation++;
        pthread_cond_broadcast(&world->reduced);
    } else {
        struct timespec until = after_ns((uint64_t)PATIENCE_S * 1000000000u);
        while (world->generation == generation) {
            if (pthread_cond_timedwait(&world->reduced, &world->lock, &until) == ETIMEDOUT) {
                strcpy(place->error, "allreduce: the other places did not come within 60 s");
                ok = false;
                break;
            }
        }
    }
    if (ok)
        memcpy(values, world->result, count * sizeof *values);
    pthread_mutex_unlock(&world->lock);
    return ok;
}

static const char *last_error(void *context)
{
    inproc_place *place = context;
    return place->error;
}

otfx_place_exchange inproc_exchange(inproc_world *world, uint32_t self)
{
    return (otfx_place_exchange){.place_count = world->places,
                                 .self = self,
                                 .context = &world->place[self],
                                 .place_of_rank = place_of,
                                 .send = send_bytes,
                                 .receive = receive_bytes,
                                 .allreduce = allreduce,
                                 .last_error = last_error};
}

typedef struct place_thread {
    void (*fn)(const otfx_place_exchange *exchange, void *user);
    otfx_place_exchange exchange;
    void *user;
} place_thread;

static void *run_place(void *argument)
{
    place_thread *thread = argument;
    thread->fn(&thread->exchange, thread->user);
    return NULL;
}

void inproc_run_places(inproc_world *world, void (*fn)(const otfx_place_exchange *exchange, void *user),
                       void **users)
{
    pthread_t *threads = calloc(world->places, sizeof *threads);
    place_thread *args = calloc(world->places, sizeof *args);
    if (!threads || !args)
        abort();
    for (uint32_t p = 0; p < world->places; p++) {
        args[p] = (place_thread){.fn = fn, .exchange = inproc_exchange(world, p), .user = users[p]};
        if (pthread_create(&threads[p], NULL, run_place, &args[p]) != 0)
            abort();
    }
    for (uint32_t p = 0; p < world->places; p++)
        pthread_join(threads[p], NULL);
    free(threads);
    free(args);
}

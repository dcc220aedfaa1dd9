/*
 * world.h — what the world split decided (private to libotfx-capture; defined in world.c, set by
 * world_split.c): the application's world, the tool tree's layout, this rank's place, the thread level.
 */
#ifndef OTFX_CAPTURE_WORLD_H
#define OTFX_CAPTURE_WORLD_H

#include "linkage.h"

#include <otfx/tbon.h>

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>

/* The application's world: MPI_COMM_WORLD until MPI_Init and in pass-through mode, afterwards the
 * communicator of the first N world ranks. */
CAPTURE_INTERNAL extern MPI_Comm capture_app_world;

/* Every communicator argument goes through this: the application names its world MPI_COMM_WORLD. */
static inline MPI_Comm capture_application_comm(MPI_Comm comm)
{
    return comm == MPI_COMM_WORLD ? capture_app_world : comm;
}

struct capture_layout {
    int world_size;  /* ranks of the real MPI_COMM_WORLD */
    int app_size;    /* N: application ranks 0 … N-1 */
    int place_count; /* P: places N … N+P-1 (0: pass-through) */
    /* The tool tree (tbon.h) from N, P and OTFX_FANIN: which event place serves which rank. */
    otfx_tbon_layout tree;
};
CAPTURE_INTERNAL extern struct capture_layout capture_layout;

/* World rank of the event place serving application rank r. */
static inline int capture_place_of(int app_rank)
{
    return capture_layout.app_size + (int)otfx_tbon_place_of_rank(&capture_layout.tree, (uint32_t)app_rank);
}
/* This application rank's event place (world rank), set by the world split; -1 on places. */
CAPTURE_INTERNAL extern int capture_own_place;

/* ---- threads (capture/README.md, "Threads") --------------------------------------------------------
 * Whether the application may call MPI from several threads at once: it was given MPI_THREAD_MULTIPLE.
 * Set in MPI_Init(_thread) before the application has threads, never changed afterwards. Only then do the
 * request table (requests.c) and the communicator cache (communicators.c) take their locks: a
 * single-threaded application pays one predictable branch per table operation. */
CAPTURE_INTERNAL extern bool capture_threads_concurrent;
static inline void capture_lock(pthread_mutex_t *lock)
{
    if (__builtin_expect(capture_threads_concurrent, 0))
        pthread_mutex_lock(lock);
}
static inline void capture_unlock(pthread_mutex_t *lock)
{
    if (__builtin_expect(capture_threads_concurrent, 0))
        pthread_mutex_unlock(lock);
}

#endif

/*
 * runtime.h — the world split and the state every wrapper needs (private to libotfx-capture).
 */
#ifndef OTFX_CAPTURE_RUNTIME_H
#define OTFX_CAPTURE_RUNTIME_H

#include "recorder.h"

#include <otfx/tbon.h>

#include <mpi.h>

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

/* transport.c */
CAPTURE_INTERNAL extern MPI_Comm capture_tool_comm;
/* place.c: runs the place (event or analysis place of the tree); ends with MPI_Finalize and exit(0).
 * places_comm holds the places only (place index = rank in it; this process owns it), thread_provided
 * is what MPI_Init_thread provided (MPI_THREAD_MULTIPLE where the MPI library can). */
CAPTURE_INTERNAL _Noreturn void capture_place_loop(int world_rank, MPI_Comm places_comm, int thread_provided);

/* Fortran (mpi_f08) MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE: addresses inside libmpichfort, NULL when
 * the program has no Fortran. */
CAPTURE_INTERNAL const void *capture_f08_status_ignore(void);
CAPTURE_INTERNAL const void *capture_f08_statuses_ignore(void);

#endif

/*
 * place_start.h — the hand-over of a place rank (private to libotfx-capture). The world split calls
 * capture_run_place on the last P world ranks; capture/assembly/ defines it with the places' runtime
 * (the only code that knows both sides). Nothing here names a place type: the place gets what it needs
 * as plain data.
 */
#ifndef OTFX_CAPTURE_PLACE_START_H
#define OTFX_CAPTURE_PLACE_START_H

#include "linkage.h"

#include <otfx/tbon.h>

#include <mpi.h>

struct capture_place_start {
    MPI_Comm tool_comm;   /* the duplicate of the real MPI_COMM_WORLD the ranks send to */
    int world_rank;       /* this place's rank in the real world: place index = world_rank - app_size */
    MPI_Comm places_comm; /* the places only (place index = rank in it); the place owns and frees it */
    int thread_provided;  /* what PMPI_Init(_thread) provided (MPI_THREAD_MULTIPLE where it can) */
    const otfx_tbon_layout *layout; /* the tool tree: which ranks each event place serves */
    int app_size;                   /* N: application ranks 0 … N-1 */
    /* The MPI functions by record function_id (capture_functions.h): names and table classes. */
    const char *const *function_names;
    const char *const *function_classes;
    int function_count;
};

/* Runs the place (event or analysis place of the tree) and ends the process with MPI_Finalize and
 * exit(0); a wrong place setting aborts the job with the place's code. */
CAPTURE_INTERNAL _Noreturn void capture_run_place(const struct capture_place_start *start);

#endif

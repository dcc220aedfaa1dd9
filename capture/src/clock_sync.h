/*
 * clock_sync.h — this rank's clock against its place's (private to libotfx-capture; clock_sync.c).
 */
#ifndef OTFX_CAPTURE_CLOCK_SYNC_H
#define OTFX_CAPTURE_CLOCK_SYNC_H

#include "linkage.h"

#include <stdbool.h>
#include <stdint.h>

/* MPI_Init, after the world split: the ranks of one node install one calibration of the shared TSC,
 * measured by the node's first rank (a communicator of the node's application ranks, freed at once). */
CAPTURE_INTERNAL void capture_calibrate_per_node(int world_rank);
/* MPI_Init and MPI_Finalize: the place's CLOCK_MONOTONIC minus this rank's (0 on the place's node),
 * sent with the calibration in every batch header. */
CAPTURE_INTERNAL void capture_measure_place_offset(int app_rank);
/* A re-synchronisation (control.c, OTFX_CLOCK_SYNC): the place's clock minus this rank's tick-derived
 * time now; false when the round trip was too long to be trusted (the caller tries again soon). */
CAPTURE_INTERNAL bool capture_measure_correction(uint64_t *at_ticks, int64_t *correction_ns,
                                                 uint64_t *round_trip_ns);

#endif

/*
 * user_functions.h — user functions' life cycle and the load map (private to libotfx-capture;
 * user_functions.c).
 */
#ifndef OTFX_CAPTURE_USER_FUNCTIONS_H
#define OTFX_CAPTURE_USER_FUNCTIONS_H

#include "linkage.h"

#include <stdbool.h>

/* OTFX_FILTER / OTFX_THROTTLE, read in MPI_Init; false after saying why when malformed. */
CAPTURE_INTERNAL bool capture_user_functions_start(int app_rank);
/* A THROTTLED record with the cumulative skipped calls of each function this thread throttled whose
 * count changed since its last one (none while recording is off): before a flushed batch, at
 * MPI_Finalize, and every second while it skips. */
CAPTURE_INTERNAL void capture_user_functions_report_skipped(void);
CAPTURE_INTERNAL void capture_send_load_map(void);
/* Whether objects were loaded since the map was last written (dl_iterate_phdr's dlpi_adds: one call,
 * once per batch); capture_write_load_map writes the whole map again (the place ignores what it knows). */
CAPTURE_INTERNAL bool capture_load_map_changed(void);
CAPTURE_INTERNAL void capture_write_load_map(void);

#endif

/*
 * configuration.h — the OTFX_* settings of an application rank, read in MPI_Init (private to
 * libotfx-capture; the reading is in manual_wrappers.c). A malformed setting stops the job: rank 0
 * says why, every rank exits with code 2.
 */
#ifndef OTFX_CAPTURE_CONFIGURATION_H
#define OTFX_CAPTURE_CONFIGURATION_H

#include "linkage.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

struct capture_configuration {
    int places;                /* OTFX_PLACES, or the MPMD places counted (0: pass-through) */
    const char *places_reason; /* why there are none, for the pass-through notice */
    bool recording;            /* OTFX_RECORD */
    uint32_t classes;          /* the event classes OTFX_DISABLE leaves enabled */
    /* Read only with places: */
    uint32_t fanin;            /* OTFX_FANIN */
    bool start_paused;         /* OTFX_START_PAUSED */
    bool drop_when_full;       /* OTFX_BACKPRESSURE=drop */
    double clock_sync_seconds; /* OTFX_CLOCK_SYNC */
    uint64_t metrics;          /* OTFX_METRICS: a mask over capture/metrics/metric_table.h's table */
};

/* After PMPI_Init, on every rank of the real world (MPMD places are counted with two collectives). */
CAPTURE_INTERNAL void capture_read_configuration(int world_rank, int world_size,
                                                 struct capture_configuration *configuration);
/* Before PMPI_Init: whether this process will be a place of an OTFX_PLACES job. */
CAPTURE_INTERNAL bool capture_place_before_init(void);
/* Rank 0 prints "otfx-capture: MESSAGE VALUE", every rank ends the job with exit code 2. */
CAPTURE_INTERNAL _Noreturn void capture_configuration_error(int world_rank, const char *message,
                                                            const char *value);
/* Ends the job with exit code 2 once every rank of `comm` got here (`printed`: this rank said why). */
CAPTURE_INTERNAL _Noreturn void capture_abort_job(MPI_Comm comm, bool printed);

#endif

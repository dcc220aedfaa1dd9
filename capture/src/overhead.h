/*
 * overhead.h — what recording costs this rank (private to libotfx-capture): the recorder's cost per
 * record kind, measured at start-up and sent to the place as an OVERHEAD record (otfx/capture_wire.h),
 * and the test point that adds a known cost (OTFX_TEST_OVERHEAD_NS). docs/analyses.md ("Overhead
 * compensation") says what the place makes of it.
 */
#ifndef OTFX_CAPTURE_OVERHEAD_H
#define OTFX_CAPTURE_OVERHEAD_H

#include "linkage.h"

#include <otfx/capture_wire.h>

/* Times each record writer (see capture_overhead_record) into a scratch buffer: one warm-up run, then
 * the median of CAPTURE_OVERHEAD_RUNS runs of CAPTURE_OVERHEAD_REPETITIONS records; nothing is sent. */
#define CAPTURE_OVERHEAD_RUNS        7
#define CAPTURE_OVERHEAD_REPETITIONS 1000
CAPTURE_INTERNAL void capture_measure_overhead(struct capture_overhead_record *out);
/* MPI_Init, once the recorder has started: reads the test point, measures (with the injection off),
 * writes the OVERHEAD record into this thread's stream and calibrates the injection's loop (the fastest
 * of 7 timed runs: the turns that take the injected ns undisturbed). */
CAPTURE_INTERNAL void capture_overhead_start(void);
/* CAPTURE_CONTROL_MEASURE_OVERHEAD, at a check point: measures again (the injection off meanwhile) and
 * writes a new OVERHEAD record into this thread's stream, with how long that took. The test point
 * OTFX_TEST_OVERHEAD_REMEASURED_NS, when set, is the injection from then on. */
CAPTURE_INTERNAL void capture_overhead_remeasure(void);

#endif

/* synth.h — synthetic event streams of one rank for otfx-bench, in three shapes of real MPI codes:
 *
 *   user-functions — a program of 256 user functions with a fixed call graph up to 14 levels deep
 *                    (loops around some calls), run once per time step with exclusive times of
 *                    100 ns to ~20 us that vary by +-5 % from visit to visit, and an MPI_Allreduce
 *                    after each time step;
 *   stencil        — a 2-D halo exchange: compute, MPI_Irecv/MPI_Isend to four neighbours, MPI_Waitall,
 *                    an MPI_Allreduce and a metric every 10th iteration;
 *   collectives    — short compute phases between collectives (allreduce, bcast, barrier, alltoall,
 *                    reduce, allgather) on the world and on row/column communicators.
 *
 * Streams are deterministic for a seed, valid for otfx_trace_append (time-ordered, well nested,
 * references defined) and endless: synth_next always fills the buffer. Peers and roots are world
 * ranks; point-to-point messages and rooted collectives use the world communicator (whose ranks are
 * world ranks), so the OTF2 writer of the benchmark needs no rank translation. */
#ifndef OTFX_BENCH_SYNTH_H
#define OTFX_BENCH_SYNTH_H

#include <otfx/trace.h>

typedef enum synth_shape {
    SYNTH_USER_FUNCTIONS,
    SYNTH_STENCIL,
    SYNTH_COLLECTIVES,
    SYNTH_SHAPE_COUNT
} synth_shape;

const char *synth_shape_name(synth_shape shape);
bool synth_shape_parse(const char *name, synth_shape *shape);

typedef struct synth synth;

/* Defines the stream's location (rank of a world of `world_size` = side * side ranks), regions,
 * communicators and metric in `defs`. NULL when out of memory or a definition fails. */
synth *synth_create(otfx_defs *defs, synth_shape shape, uint32_t rank, uint32_t side, uint64_t seed);
void synth_destroy(synth *stream);

/* Fills events[0 .. capacity) and returns capacity (capacity must be >= SYNTH_MIN_BATCH). */
enum { SYNTH_MIN_BATCH = 256 };
size_t synth_next(synth *stream, otfx_event *events, size_t capacity);
/* LEAVEs of the regions still open; returns how many (at most SYNTH_MAX_DEPTH). */
enum { SYNTH_MAX_DEPTH = 32 };
size_t synth_finish(synth *stream, otfx_event *events, size_t capacity);

otfx_ref synth_location(const synth *stream);
/* The world communicator's reference (its ranks are world ranks). */
otfx_ref synth_world(const synth *stream);

#endif

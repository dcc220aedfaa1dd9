/*
 * imbalance — a known serial bottleneck and a known late rank, for the critical-path and wait-states
 * analyses (docs/analyses.md).
 *
 * Each iteration:
 *   1. rank 0 runs serial_setup (SETUP_UNITS units of work) while every other rank waits in the
 *      MPI_Bcast of its result (a late broadcast caused by rank 0);
 *   2. every rank computes: the last rank in late_compute (LATE_FACTOR times the work), the others in
 *      balanced_compute; then MPI_Allreduce of the results, in which all but the last rank wait (a
 *      wait at N×N caused by the last rank).
 * So the critical path runs through serial_setup on rank 0 and late_compute on the last rank, and
 * these two functions carry most of it. One unit of work is --size steps of a loop the compiler cannot
 * fold (the default 20000 keeps the examples' tests short; the end-to-end test asks for more); the result is
 * deterministic: rank 0 checks every iteration's sum against its closed form. Built with
 * -finstrument-functions (like stencil_instrumented) so that a tracer sees the functions. With one rank the
 * last rank is rank 0.
 * --corrupt spoils rank 0's first setup value.
 */
#include "call_count.h"
#include "example.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { DEFAULT_ITERATIONS = 4, DEFAULT_SIZE = 20000, SETUP_UNITS = 30, COMPUTE_UNITS = 10, LATE_FACTOR = 3 };

/* Sums 1..steps one by one through a volatile, so that the work is done (and takes time). Not
 * instrumented: its time is the exclusive time of the function that called it (serial_setup,
 * late_compute), which the critical path's per-function profile names. */
__attribute__((no_instrument_function)) static uint64_t work(long steps)
{
    volatile uint64_t sum = 0;
    for (long i = 1; i <= steps; i++)
        sum = sum + (uint64_t)i;
    return sum;
}

__attribute__((no_instrument_function)) static uint64_t work_sum(long steps)
{
    return (uint64_t)steps * (uint64_t)(steps + 1) / 2;
}

/* Not static and not inlined: the traces name them. */
uint64_t serial_setup(long size, long iteration);
uint64_t balanced_compute(long size, int rank);
uint64_t late_compute(long size, int rank);

__attribute__((noinline)) uint64_t serial_setup(long size, long iteration)
{
    return work(SETUP_UNITS * size + iteration);
}

__attribute__((noinline)) uint64_t balanced_compute(long size, int rank)
{
    return work(COMPUTE_UNITS * size + rank);
}

__attribute__((noinline)) uint64_t late_compute(long size, int rank)
{
    return work(LATE_FACTOR * COMPUTE_UNITS * size + rank);
}

int main(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_COUNTED(MPI_Init, &argc, &argv);
    MPI_COUNTED(MPI_Comm_rank, MPI_COMM_WORLD, &rank);
    MPI_COUNTED(MPI_Comm_size, MPI_COMM_WORLD, &size);

    struct example_options options;
    if (!example_parse_options(argc, argv, "imbalance", DEFAULT_ITERATIONS, DEFAULT_SIZE, rank != 0,
                               &options))
        return call_count_finalize(rank, EXAMPLE_EXIT_USAGE);
    const long steps = options.size;
    const int late_rank = size - 1;

    double start = rank == 0 ? MPI_COUNTED_NOARGS(MPI_Wtime) : 0.0, elapsed = 0.0;
    long iterations = 0, failures = 0;
    uint64_t checksum = 0;
    for (int stop = 0; !stop;) {
        uint64_t setup = 0;
        if (rank == 0) {
            setup = serial_setup(steps, iterations);
            if (options.corrupt && iterations == 0)
                setup++;
        }
        MPI_COUNTED(MPI_Bcast, &setup, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

        const uint64_t mine = rank == late_rank ? late_compute(steps, rank) : balanced_compute(steps, rank);
        const uint64_t contribution = mine + setup;
        uint64_t total = 0;
        MPI_COUNTED(MPI_Allreduce, &contribution, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);

        if (rank == 0) {
            uint64_t expected = (uint64_t)size * work_sum(SETUP_UNITS * steps + iterations);
            for (int r = 0; r < size; r++)
                expected += work_sum((r == late_rank ? LATE_FACTOR : 1) * COMPUTE_UNITS * steps + r);
            if (total != expected) {
                failures++;
                example_print("imbalance: verification FAILED: iteration %ld: sum %" PRIu64
                              ", expected %" PRIu64 "\n",
                              iterations, total, expected);
            }
            checksum = checksum * 1099511628211ull ^ total;
        }
        iterations++;
        if (rank == 0) {
            elapsed = MPI_COUNTED_NOARGS(MPI_Wtime) - start;
            stop = example_should_stop(&options, iterations, elapsed);
        }
        MPI_COUNTED(MPI_Bcast, &stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }

    if (rank == 0) {
        example_print(
            "imbalance: %ld iterations on %d ranks, serial_setup on rank 0, late_compute on rank %d, "
            "checksum %016" PRIx64 "\n",
            iterations, size, late_rank, checksum);
        if (failures == 0)
            example_print("imbalance: verification OK\n");
        example_print("elapsed-seconds: %.3f\n", elapsed);
    }
    return call_count_finalize(rank, failures == 0 ? EXAMPLE_EXIT_OK : EXAMPLE_EXIT_VERIFICATION_FAILED);
}

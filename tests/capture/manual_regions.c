/*
 * manual_regions.c — otfx.h's regions and phases: a region begun before MPI_Init (not recorded, and
 * neither is its end), nested regions around MPI calls, names built at run time in one reused buffer
 * (ids follow the text, not the pointer), phases. Prints its MPI calls as "expected-calls: RANK …" for
 * compare-calls; the test checks the place's held-functions and held-phases lines.
 */
#include <mpi.h>
#include <otfx.h>
#include <stdio.h>

enum { ITERATIONS = 7 };

int main(int argc, char **argv)
{
    otfx_region_begin("before_init"); /* pass-through until MPI_Init: not recorded */
    MPI_Init(&argc, &argv);
    otfx_region_end("before_init"); /* its begin was not recorded: nor is this */
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    otfx_phase("setup_done");
    char name[32];
    double sum = 0.0;
    for (int i = 0; i < ITERATIONS; i++) {
        otfx_region_begin("solve");
        snprintf(name, sizeof(name), "step_%d", i % 2);
        otfx_region_begin(name);
        double value = rank + i, total = 0.0;
        MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += total;
        otfx_region_end(name);
        otfx_region_end("solve");
        otfx_phase("iteration");
    }
    printf("expected-calls: %d MPI_Allreduce=%d MPI_Comm_rank=1 MPI_Comm_size=1 MPI_Finalize=1 MPI_Init=1\n",
           rank, ITERATIONS);
    printf("manual-regions: rank %d sum %.1f\n", rank, sum);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

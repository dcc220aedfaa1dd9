/*
 * otfx-place — the tool-place program for MPMD runs:
 *
 *   mpiexec -n N ./app : -n P otfx-place
 *
 * Linked with libotfx-capture, whose MPI_Init sees that these ranks run another program than rank 0
 * (MPI_APPNUM), makes them the places and runs the place loop there: MPI_Init never returns on a
 * place. Returning from it means this program was started on its own or as the first program.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr, "otfx-place: not started as a tool place: run it as the last program of an MPMD "
                        "job (mpiexec -n N ./app : -n P otfx-place)\n");
    MPI_Finalize();
    return 2;
}

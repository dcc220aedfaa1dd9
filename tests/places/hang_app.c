/* hang_app — a rank that waits in MPI_Recv for seconds (its sender computes meanwhile), for the trigger
 * `hang > T`: rank 1 receives one integer from rank 0, which sends it after sleeping --seconds S
 * (default 3). Every rank prints "hang-app: rank R done" and exits 0 when the value arrived right. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double seconds = 3.0;
    if (argc == 3 && strcmp(argv[1], "--seconds") == 0)
        seconds = atof(argv[2]);
    int value = 0, ok = 1;
    if (size >= 2 && rank == 0) {
        const struct timespec pause = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
        nanosleep(&pause, NULL);
        value = 42;
        MPI_Send(&value, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
    } else if (size >= 2 && rank == 1) {
        MPI_Recv(&value, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ok = value == 42;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("hang-app: rank %d %s\n", rank, ok ? "done" : "FAILED: wrong value");
    fflush(stdout);
    MPI_Finalize();
    return ok ? 0 : 1;
}

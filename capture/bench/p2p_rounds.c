/*
 * p2p_rounds.c — capture-p2p-rounds: a fixed amount of point-to-point work for counting what the
 * library's wrappers cost in instructions (callgrind is deterministic, unlike the clock on a shared
 * machine). Linked with libotfx-capture; two application ranks and one place:
 *
 *   OTFX_PLACES=1 mpiexec -n 3 sh -c \
 *     'if [ "$PMI_RANK" = 0 ]; then exec valgrind --tool=callgrind --callgrind-out-file=cg.out "$0" "$@";
 *      else exec "$0" "$@"; fi' ./capture-p2p-rounds 12000
 *
 * Rounds of MPI_Irecv + MPI_Isend + MPI_Waitall between ranks 0 and 1, then rounds of an MPI_Send /
 * MPI_Recv ping-pong (8-byte messages). The library's own instructions are the self cost of its
 * functions in cg.out (docs/benchmarks.md: the steerable calls' wait loops left out, since how long they
 * spin depends on the partner's timing). OTFX_RECORD=0 measures the unrecorded path.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long rounds = argc > 1 ? atol(argv[1]) : 12000;
    if (size != 2 || rounds <= 0) {
        if (rank == 0)
            fprintf(stderr, "capture-p2p-rounds: needs 2 application ranks and a positive round count\n");
        MPI_Finalize();
        return 2;
    }
    const int peer = 1 - rank;
    double in = 0, out = 1;
    MPI_Status statuses[2];
    for (long i = 0; i < rounds; i++) {
        MPI_Request requests[2];
        MPI_Irecv(&in, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &requests[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &requests[1]);
        MPI_Waitall(2, requests, statuses);
    }
    for (long i = 0; i < rounds; i++) {
        if (rank == 0) {
            MPI_Send(&out, 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD);
            MPI_Recv(&in, 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&out, 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        printf("capture-p2p-rounds: %ld rounds of each\n", rounds);
    MPI_Finalize();
    return 0;
}

/*
 * dying_app.c — an MPI program that fails on purpose, for the flight recorder's tests
 * (tests/capture/check-flight-recorder):
 *
 *   dying_app MODE [ITERATIONS]
 *
 * Every rank loops: MPI_Pcontrol(iteration) (a phase marker holding the iteration count in the trace)
 * and an MPI_Allreduce. After ITERATIONS (default 2000) iterations rank 1 prints
 * "dying-app: rank 1 ends at iteration I pid P" and then, by MODE:
 *   segv    writes through a null pointer in crash_here()
 *   abort   MPI_Abort(MPI_COMM_WORLD, 7)
 *   exit    exit(5) without MPI_Finalize
 *   kill    waits to be killed (the test sends it SIGKILL)
 *   wait    (every rank) waits to be interrupted (the test sends otfx-run SIGINT or SIGTERM)
 *   finish  nothing: every rank calls MPI_Finalize (a normal run)
 * while the other ranks go on: their next MPI_Allreduce waits for rank 1 for ever. "ready" is printed
 * by rank 0 when it reaches that point, flushed, so that a test can wait for it.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(void)
{
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
}

__attribute__((noinline)) static void crash_here(volatile int *where)
{
    *where = 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "finish";
    const int iterations = argc > 2 ? atoi(argv[2]) : 2000;
    if (size < 2) {
        fprintf(stderr, "dying-app: needs 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long sum = 0;
    int iteration = 0;
    for (; iteration < iterations; iteration++) {
        MPI_Pcontrol(iteration);
        long value = iteration, total = 0;
        MPI_Allreduce(&value, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        sum += total;
    }
    if (strcmp(mode, "finish") == 0) {
        printf("dying-app: rank %d finished %d iterations (sum %ld)\n", rank, iteration, sum);
        MPI_Finalize();
        return 0;
    }
    MPI_Pcontrol(iteration);
    if (rank == 0) {
        printf("dying-app: ready\n");
        fflush(stdout);
    }
    if (strcmp(mode, "wait") == 0) {
        for (;;)
            nap();
    }
    if (rank == 1) {
        printf("dying-app: rank 1 ends at iteration %d pid %ld\n", iteration, (long)getpid());
        fflush(stdout);
        if (strcmp(mode, "segv") == 0)
            crash_here(NULL);
        else if (strcmp(mode, "abort") == 0)
            MPI_Abort(MPI_COMM_WORLD, 7);
        else if (strcmp(mode, "exit") == 0)
            exit(5);
        else if (strcmp(mode, "kill") == 0)
            for (;;)
                nap();
        fprintf(stderr, "dying-app: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long value = 0, total = 0; /* waits for rank 1 for ever */
    MPI_Allreduce(&value, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    printf("dying-app: rank %d: the allreduce with a dead rank returned\n", rank);
    MPI_Finalize();
    return 1;
}

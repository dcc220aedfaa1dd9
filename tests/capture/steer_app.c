/*
 * steer_app.c — the application side of the steering tests (steer_driver.c is the place): each rank
 * loops over a user region around MPI_Comm_rank (class other), an MPI_Sendrecv with itself and an
 * MPI_Irecv/MPI_Isend pair with itself completed by MPI_Waitall (p2p),
 * with no dependency between ranks (a rank paused inside MPI never holds another up), until the driver
 * tells it to stop with a message on the real MPI_COMM_WORLD through PMPI (untraced, invisible to the
 * capture library), all inside a region steer_loop. Linked with -lotfx-capture.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <otfx.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STOP_TAG 77

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* `threads`: a second thread records user regions only (no MPI), so that with MPI_THREAD_MULTIPLE it
 * checks for commands itself and waits while the application is paused. */
static atomic_bool stop_helper;

static void *helper(void *unused)
{
    (void)unused;
    const struct timespec pause = {0, 100 * 1000};
    while (!atomic_load(&stop_helper)) {
        otfx_region_begin("steer_helper");
        nanosleep(&pause, NULL);
        otfx_region_end("steer_helper");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const int threads = argc > 1 && strcmp(argv[1], "threads") == 0;
    /* `coupled`: the MPI_Sendrecv goes round a ring and two MPI_Allreduce follow, so a rank paused first
     * leaves the others blocked inside MPI waiting for it: they must still answer APP_PAUSE. */
    const int coupled = argc > 1 && strcmp(argv[1], "coupled") == 0;
    const double before_init = seconds();
    pthread_t helper_thread;
    if (threads) {
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE)
            printf("steer-app: check failed: MPI_THREAD_MULTIPLE not provided\n");
        pthread_create(&helper_thread, NULL, helper, NULL);
    } else {
        MPI_Init(&argc, &argv);
    }
    const double init_s = seconds() - before_init;
    int rank = 0, real_size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &real_size); /* the real world: the driver is its last rank */
    const int driver = real_size - 1;
    const struct timespec pause = {0, 100 * 1000};
    long iterations = 0;
    /* Open across every pause of recording: its end comes while recording is on again, without its
     * begin in the trace since the restart (the place drops such a LEAVE and counts it). */
    otfx_region_begin("steer_loop");
    for (;;) {
        otfx_region_begin("steer_iteration");
        int me = -1, out = (int)iterations, in = -1, in_flight = -1;
        MPI_Request requests[2];
        /* Nonblocking requests open across the calls in between: commands that arrive in those calls
         * leave a request created recorded and completed unrecorded, or the other way round. */
        const int tag = 100 + (int)(iterations % 50); /* tells the requests of successive iterations apart */
        MPI_Irecv(&in_flight, 1, MPI_INT, rank, tag, MPI_COMM_WORLD, &requests[0]);
        MPI_Isend(&out, 1, MPI_INT, rank, tag, MPI_COMM_WORLD, &requests[1]);
        /* The sleep is where the place's commands arrive: they are carried out in the next call. */
        nanosleep(&pause, NULL);
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        int stop = 0;
        PMPI_Iprobe(driver, STOP_TAG, MPI_COMM_WORLD, &stop, MPI_STATUS_IGNORE);
        if (coupled) {
            /* All ranks stop at the same iteration: whoever saw the driver's message first decides. */
            int size = 1, any_stop = 0;
            MPI_Comm_size(MPI_COMM_WORLD, &size);
            MPI_Sendrecv(&out, 1, MPI_INT, (me + 1) % size, 5, &in, 1, MPI_INT, (me + size - 1) % size, 5,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Allreduce(&stop, &any_stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            /* A sum of doubles runs as the blocking MPI_Allreduce itself behind a steerable barrier
             * (capture/src/steered.h): a pause arriving in the barrier is carried out after it. */
            double mine = out, total = -1.0;
            MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (total != (double)size * out)
                printf("steer-app: rank %d check failed: sum %g, not %d\n", rank, total, size * out);
            stop = any_stop;
            in = out;
        } else {
            MPI_Sendrecv(&out, 1, MPI_INT, me, 5, &in, 1, MPI_INT, me, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Status statuses[2];
        MPI_Waitall(2, requests, statuses);
        otfx_region_end("steer_iteration");
        if (in != out || in_flight != out)
            printf("steer-app: rank %d check failed: received %d and %d, not %d\n", rank, in, in_flight, out);
        if (stop) {
            int ignored = 0;
            PMPI_Recv(&ignored, 1, MPI_INT, driver, STOP_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        }
        iterations++;
    }
    otfx_region_end("steer_loop");
    if (threads) {
        atomic_store(&stop_helper, true);
        pthread_join(helper_thread, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("steer-app: rank %d iterations=%ld init_s=%.3f\n", rank, iterations, init_s);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

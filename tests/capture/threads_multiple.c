/*
 * threads_multiple.c — an application at MPI_THREAD_MULTIPLE whose threads use MPI concurrently, for
 * the capture library's request table and communicator cache (capture/README.md, "Threads").
 *
 *   mpiexec -n N threads_multiple [THREADS] [ROUNDS]     (N even; defaults: 3 threads, 40 rounds)
 *
 * Rank r pairs with rank r^1; thread t of a rank talks only to thread t of its partner (tags distinct
 * per thread). Each thread, concurrently with the others:
 *   - ROUNDS rounds of MPI_Irecv + MPI_Isend, completed alternately by MPI_Waitall and by an
 *     MPI_Testsome loop (the number of Testsome calls varies: it is counted as it happens);
 *   - an MPI_Comm_dup of its own parent communicator (duplicated for it by the main thread, so that no
 *     two threads call a collective on one communicator at once), an MPI_Allreduce and an MPI_Ibcast +
 *     MPI_Wait on the duplicate, MPI_Comm_free;
 *   - requests completed by another thread: it posts an MPI_Irecv + MPI_Isend, hands them over, and the
 *     next thread completes them with MPI_Waitall (MPI_Wait / MPI_Test for the single receive).
 * Every received value is checked. Rank r then prints "expected-calls: r MPI_X=C ..." (the format of
 * examples/common/call_count.h, counted here with atomics since several threads call MPI) and
 * "threads-multiple: rank r threads=T OK" or "check failed: ...".
 */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 8

/* Functions this program calls, sorted by name (the expected-calls line's order). */
enum {
    F_ALLREDUCE,
    F_COMM_DUP,
    F_COMM_FREE,
    F_COMM_RANK,
    F_COMM_SIZE,
    F_FINALIZE,
    F_IBCAST,
    F_INIT_THREAD,
    F_IRECV,
    F_ISEND,
    F_TEST,
    F_TESTSOME,
    F_WAIT,
    F_WAITALL,
    F_COUNT
};
static const char *const function_names[F_COUNT] = {
    "MPI_Allreduce", "MPI_Comm_dup", "MPI_Comm_free",   "MPI_Comm_rank", "MPI_Comm_size",
    "MPI_Finalize",  "MPI_Ibcast",   "MPI_Init_thread", "MPI_Irecv",     "MPI_Isend",
    "MPI_Test",      "MPI_Testsome", "MPI_Wait",        "MPI_Waitall"};
static atomic_ulong calls[F_COUNT];
#define COUNTED(id, call) (atomic_fetch_add(&calls[id], 1), (call))

static int world_rank, partner, thread_count, rounds;
static atomic_int failures;
static pthread_barrier_t barrier;
static MPI_Comm parents[MAX_THREADS];

/* Requests posted by thread t for thread (t+1) % T to complete, and their buffers. */
struct handover {
    MPI_Request requests[2]; /* receive, send */
    int received, sent;
};
static struct handover handovers[MAX_THREADS];

static void check(int condition, const char *what, int thread, int round, int got, int want)
{
    if (!condition) {
        fprintf(stderr, "threads-multiple: rank %d thread %d round %d: check failed: %s (got %d, want %d)\n",
                world_rank, thread, round, what, got, want);
        atomic_fetch_add(&failures, 1);
    }
}

static int value_of(int rank, int thread, int round)
{
    return rank * 1000000 + thread * 10000 + round;
}

static void point_to_point(int thread)
{
    const int tag = 100 + thread;
    for (int round = 0; round < rounds; round++) {
        int received = -1, sent = value_of(world_rank, thread, round);
        MPI_Request requests[2];
        COUNTED(F_IRECV, MPI_Irecv(&received, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &requests[0]));
        COUNTED(F_ISEND, MPI_Isend(&sent, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &requests[1]));
        if (round % 2 == 0) {
            MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: GCC's stringop-overflow check trips on it */
            COUNTED(F_WAITALL, MPI_Waitall(2, requests, statuses));
        } else {
            int done = 0;
            while (done < 2) {
                int outcount = 0, indices[2];
                MPI_Status statuses[2];
                COUNTED(F_TESTSOME, MPI_Testsome(2, requests, &outcount, indices, statuses));
                if (outcount != MPI_UNDEFINED)
                    done += outcount;
            }
        }
        check(received == value_of(partner, thread, round), "point-to-point value", thread, round, received,
              value_of(partner, thread, round));
    }
}

static void private_communicator(int thread)
{
    MPI_Comm mine;
    int sum = 0, one = 1, size = 0, root_value = -1;
    COUNTED(F_COMM_DUP, MPI_Comm_dup(parents[thread], &mine));
    COUNTED(F_COMM_SIZE, MPI_Comm_size(mine, &size));
    COUNTED(F_ALLREDUCE, MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, mine));
    check(sum == size, "allreduce on the private duplicate", thread, 0, sum, size);
    MPI_Request request;
    if (world_rank == 0)
        root_value = 7000 + thread;
    COUNTED(F_IBCAST, MPI_Ibcast(&root_value, 1, MPI_INT, 0, mine, &request));
    COUNTED(F_WAIT, MPI_Wait(&request, MPI_STATUS_IGNORE));
    check(root_value == 7000 + thread, "ibcast on the private duplicate", thread, 0, root_value,
          7000 + thread);
    COUNTED(F_COMM_FREE, MPI_Comm_free(&mine));
}

/* Posts two requests that the next thread completes, then completes those the previous one posted. */
static void completed_elsewhere(int thread)
{
    const int tag = 500 + thread;
    struct handover *mine = &handovers[thread];
    mine->received = -1;
    mine->sent = value_of(world_rank, thread, 999);
    COUNTED(F_IRECV,
            MPI_Irecv(&mine->received, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &mine->requests[0]));
    COUNTED(F_ISEND, MPI_Isend(&mine->sent, 1, MPI_INT, partner, tag, MPI_COMM_WORLD, &mine->requests[1]));
    pthread_barrier_wait(&barrier);
    const int from = (thread + thread_count - 1) % thread_count;
    struct handover *theirs = &handovers[from];
    if (thread % 2 == 0) {
        MPI_Status statuses[2];
        COUNTED(F_WAITALL, MPI_Waitall(2, theirs->requests, statuses));
    } else {
        int flag = 0;
        COUNTED(F_WAIT, MPI_Wait(&theirs->requests[1], MPI_STATUS_IGNORE));
        while (!flag)
            COUNTED(F_TEST, MPI_Test(&theirs->requests[0], &flag, MPI_STATUS_IGNORE));
    }
    check(theirs->received == value_of(partner, from, 999), "value completed by another thread", thread, 999,
          theirs->received, value_of(partner, from, 999));
    pthread_barrier_wait(&barrier);
}

static void *thread_main(void *argument)
{
    const int thread = (int)(intptr_t)argument;
    point_to_point(thread);
    private_communicator(thread);
    completed_elsewhere(thread);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, world_size = 0;
    COUNTED(F_INIT_THREAD, MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    COUNTED(F_COMM_RANK, MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    COUNTED(F_COMM_SIZE, MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    thread_count = argc > 1 ? atoi(argv[1]) : 3;
    rounds = argc > 2 ? atoi(argv[2]) : 40;
    if (provided != MPI_THREAD_MULTIPLE || world_size % 2 != 0 || thread_count < 2 ||
        thread_count > MAX_THREADS || rounds < 1) {
        if (world_rank == 0)
            fprintf(stderr,
                    "threads-multiple: check failed: needs MPI_THREAD_MULTIPLE (got %d), an even "
                    "number of ranks and 2-%d threads\n",
                    provided, MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    partner = world_rank ^ 1;
    /* One parent per thread, created in the same order on every rank by this thread alone. */
    for (int t = 0; t < thread_count; t++)
        COUNTED(F_COMM_DUP, MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]));
    pthread_barrier_init(&barrier, NULL, (unsigned)thread_count);
    pthread_t threads[MAX_THREADS];
    for (int t = 0; t < thread_count; t++)
        pthread_create(&threads[t], NULL, thread_main, (void *)(intptr_t)t);
    for (int t = 0; t < thread_count; t++)
        pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&barrier);
    for (int t = 0; t < thread_count; t++)
        COUNTED(F_COMM_FREE, MPI_Comm_free(&parents[t]));

    atomic_fetch_add(&calls[F_FINALIZE], 1); /* counted before it happens: nothing prints afterwards */
    char line[2048];
    int used = snprintf(line, sizeof(line), "expected-calls: %d", world_rank);
    for (int f = 0; f < F_COUNT; f++)
        if (atomic_load(&calls[f]))
            used += snprintf(line + used, sizeof(line) - (size_t)used, " %s=%lu", function_names[f],
                             atomic_load(&calls[f]));
    printf("%s\n", line);
    if (atomic_load(&failures))
        printf("threads-multiple: rank %d check failed (%d problems)\n", world_rank, atomic_load(&failures));
    else
        printf("threads-multiple: rank %d threads=%d OK\n", world_rank, thread_count);
    fflush(stdout);
    MPI_Finalize();
    return atomic_load(&failures) ? 1 : 0;
}

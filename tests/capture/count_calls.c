/*
 * count_calls.c — exercises every event class of libotfx-capture (blocking, nonblocking, persistent
 * and large-count point-to-point, MPI_ANY_SOURCE, probes and matched probes, the Wait/Test family,
 * blocking, nonblocking and neighbourhood collectives, communicator creation, MPI_Pcontrol) and prints
 * its own count of MPI calls per rank as "expected-calls: RANK MPI_x=COUNT ..." (sorted by name), the
 * format compare-calls checks the places' "otfx-place: rank R received ..." lines against.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FUNCTIONS = 64 };
static const char *names[MAX_FUNCTIONS];
static long counts[MAX_FUNCTIONS];
static int function_count;

static void count(const char *name)
{
    for (int i = 0; i < function_count; i++)
        if (strcmp(names[i], name) == 0) {
            counts[i]++;
            return;
        }
    if (function_count == MAX_FUNCTIONS)
        abort();
    names[function_count] = name;
    counts[function_count++] = 1;
}

#define COUNTED(function, ...) (count(#function), function(__VA_ARGS__))

static int by_name(const void *a, const void *b)
{
    return strcmp(names[*(const int *)a], names[*(const int *)b]);
}

static void print_counts(int rank)
{
    int order[MAX_FUNCTIONS];
    char line[4096];
    int used = snprintf(line, sizeof(line), "expected-calls: %d", rank);
    for (int i = 0; i < function_count; i++)
        order[i] = i;
    qsort(order, (size_t)function_count, sizeof(order[0]), by_name);
    for (int i = 0; i < function_count; i++)
        used +=
            snprintf(line + used, sizeof(line) - (size_t)used, " %s=%ld", names[order[i]], counts[order[i]]);
    used += snprintf(line + used, sizeof(line) - (size_t)used, "\n");
    /* One write with the newline: mpiexec forwards the ranks' output in chunks, and a line written in
     * two pieces can be interleaved with another rank's. */
    fwrite(line, 1, (size_t)used, stdout);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, size;
    COUNTED(MPI_Init, &argc, &argv);
    COUNTED(MPI_Comm_rank, MPI_COMM_WORLD, &rank);
    COUNTED(MPI_Comm_size, MPI_COMM_WORLD, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    COUNTED(MPI_Pcontrol, 1);

    /* Blocking ring, then everybody sends to rank 0, received with MPI_ANY_SOURCE. */
    int token = rank, received = -1;
    COUNTED(MPI_Sendrecv, &token, 1, MPI_INT, right, 1, &received, 1, MPI_INT, left, 1, MPI_COMM_WORLD,
            MPI_STATUS_IGNORE);
    if (rank == 0) {
        for (int i = 1; i < size; i++) {
            MPI_Status status;
            COUNTED(MPI_Probe, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &status);
            COUNTED(MPI_Recv, &received, 1, MPI_INT, status.MPI_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        COUNTED(MPI_Send, &rank, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }

    /* Large-count and matched-probe receive. */
    MPI_Request large_send;
    COUNTED(MPI_Isend_c, &token, (MPI_Count)1, MPI_INT, right, 3, MPI_COMM_WORLD, &large_send);
    MPI_Message message;
    COUNTED(MPI_Mprobe, left, 3, MPI_COMM_WORLD, &message, MPI_STATUS_IGNORE);
    COUNTED(MPI_Mrecv, &received, 1, MPI_INT, &message, MPI_STATUS_IGNORE);
    COUNTED(MPI_Wait, &large_send, MPI_STATUS_IGNORE);

    /* Nonblocking exchange completed by Waitany and Testall. */
    MPI_Request requests[2];
    COUNTED(MPI_Irecv, &received, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &requests[0]);
    COUNTED(MPI_Isend, &token, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &requests[1]);
    int index = -1, flag = 0;
    MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: gcc 12 misreads MPICH's (MPI_Status *)1 as a buffer */
    COUNTED(MPI_Waitany, 2, requests, &index, MPI_STATUS_IGNORE);
    do
        COUNTED(MPI_Testall, 2, requests, &flag, statuses);
    while (!flag);

    /* Persistent requests, started three times. */
    MPI_Request persistent[2];
    COUNTED(MPI_Recv_init, &received, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &persistent[0]);
    COUNTED(MPI_Send_init, &token, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &persistent[1]);
    for (int round = 0; round < 3; round++) {
        if (round == 0) {
            COUNTED(MPI_Start, &persistent[0]);
            COUNTED(MPI_Start, &persistent[1]);
        } else {
            COUNTED(MPI_Startall, 2, persistent);
        }
        COUNTED(MPI_Waitall, 2, persistent, statuses);
    }
    COUNTED(MPI_Request_free, &persistent[0]);
    COUNTED(MPI_Request_free, &persistent[1]);

    /* Collectives, blocking and nonblocking. */
    int value = rank + 1, sum = 0, *gathered = malloc(sizeof(int) * (size_t)size);
    int *exchanged = malloc(sizeof(int) * (size_t)size);
    int *ones = malloc(sizeof(int) * (size_t)size), *offsets = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        ones[i] = 1;
        offsets[i] = i;
    }
    COUNTED(MPI_Allreduce, &value, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    COUNTED(MPI_Gatherv, &value, 1, MPI_INT, gathered, ones, offsets, MPI_INT, 0, MPI_COMM_WORLD);
    COUNTED(MPI_Alltoallv, gathered, ones, offsets, MPI_INT, exchanged, ones, offsets, MPI_INT,
            MPI_COMM_WORLD);
    COUNTED(MPI_Allgather, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 1, MPI_INT, MPI_COMM_WORLD);
    COUNTED(MPI_Reduce_scatter, gathered, &sum, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request collective[2];
    COUNTED(MPI_Ibcast, &value, 1, MPI_INT, size - 1, MPI_COMM_WORLD, &collective[0]);
    COUNTED(MPI_Iallreduce, &value, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &collective[1]);
    int done = 0, indices[2];
    while (done < 2) {
        int completed = 0;
        COUNTED(MPI_Testsome, 2, collective, &completed, indices, statuses);
        done += completed == MPI_UNDEFINED ? 0 : completed;
    }

    /* Communicators: a split, a nonblocking dup, a ring topology and its neighbourhood collective. */
    MPI_Comm half, copy, ring;
    COUNTED(MPI_Comm_split, MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Request dup_request;
    COUNTED(MPI_Comm_idup, half, &copy, &dup_request);
    COUNTED(MPI_Wait, &dup_request, MPI_STATUS_IGNORE);
    COUNTED(MPI_Barrier, copy);
    int periodic = 1;
    COUNTED(MPI_Cart_create, MPI_COMM_WORLD, 1, &size, &periodic, 0, &ring);
    int neighbours[2];
    COUNTED(MPI_Neighbor_allgather, &rank, 1, MPI_INT, neighbours, 1, MPI_INT, ring);
    COUNTED(MPI_Comm_free, &ring);
    COUNTED(MPI_Comm_free, &copy);
    COUNTED(MPI_Comm_free, &half);
    count("MPI_Wtime");
    (void)MPI_Wtime();
    COUNTED(MPI_Pcontrol, 0);

    free(gathered);
    free(exchanged);
    free(ones);
    free(offsets);
    count("MPI_Finalize");
    print_counts(rank);
    MPI_Finalize();
    return 0;
}

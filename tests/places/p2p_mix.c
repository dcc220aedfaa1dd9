/*
 * p2p_mix — every kind of point-to-point call on a ring of ranks, round after round, for the message
 * pairing check (pairs.cmake): MPI_Send/MPI_Recv, MPI_Sendrecv, MPI_Isendrecv, MPI_Isendrecv_replace,
 * persistent requests started by MPI_Startall, MPI_Mprobe/MPI_Mrecv, MPI_Improbe/MPI_Imrecv, MPI_Issend
 * with receives from MPI_ANY_SOURCE completed by MPI_Waitany, MPI_Testsome and MPI_Waitsome, messages to and
 * from MPI_PROC_NULL and, every tenth round, an MPI_Irecv that is cancelled. Every message has a size of its
 * own (so a snapshot that pairs the wrong ends shows different sizes) and says which round and kind it is;
 * each rank checks what it receives and prints "p2p-mix: rank R rounds=N OK" or what went wrong.
 *
 *   p2p_mix [ROUNDS]   (default 300; at least 2 ranks)
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INTS = 64, KINDS = 10 };

static int failures;

static int size_of(int round, int kind)
{
    return 1 + (round * 7 + kind * 5) % MAX_INTS;
}

static void fill(int *buffer, int round, int kind)
{
    for (int i = 0; i < size_of(round, kind); i++)
        buffer[i] = round * 100 + kind;
}

static void check(const int *buffer, int count, int round, int kind, int rank)
{
    if (count != size_of(round, kind) || buffer[0] != round * 100 + kind || buffer[count - 1] != buffer[0]) {
        if (failures++ < 5)
            printf("p2p-mix: rank %d check failed: round %d kind %d: %d ints starting %d\n", rank, round,
                   kind, count, buffer[0]);
    }
}

static int received(const MPI_Status *status)
{
    int count = 0;
    MPI_Get_count(status, MPI_INT, &count);
    return count;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = argc > 1 ? atoi(argv[1]) : 300;
    if (size < 2 || rounds < 1) {
        if (rank == 0)
            printf("p2p-mix: needs 2 ranks or more and a positive round count\n");
        MPI_Finalize();
        return 2;
    }
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[MAX_INTS], in[MAX_INTS], extra[MAX_INTS], persistent_out[MAX_INTS], persistent_in[MAX_INTS];
    MPI_Request persistent[2];
    MPI_Send_init(persistent_out, MAX_INTS, MPI_INT, right, 14, MPI_COMM_WORLD, &persistent[0]);
    MPI_Recv_init(persistent_in, MAX_INTS, MPI_INT, left, 14, MPI_COMM_WORLD, &persistent[1]);
    for (int round = 0; round < rounds; round++) {
        MPI_Status status;
        MPI_Request requests[4];
        int kind = 0;
        /* 0: a token around the ring with MPI_Send / MPI_Recv */
        fill(out, round, kind);
        if (rank == 0) {
            MPI_Send(out, size_of(round, kind), MPI_INT, right, 10, MPI_COMM_WORLD);
            MPI_Recv(in, MAX_INTS, MPI_INT, left, 10, MPI_COMM_WORLD, &status);
        } else {
            MPI_Recv(in, MAX_INTS, MPI_INT, left, 10, MPI_COMM_WORLD, &status);
            MPI_Send(out, size_of(round, kind), MPI_INT, right, 10, MPI_COMM_WORLD);
        }
        check(in, received(&status), round, kind, rank);
        /* 1: MPI_Sendrecv (with a place it runs as MPI_Isendrecv, whose status MPICH 4.0.2 leaves empty:
         * the size is known) */
        fill(out, round, ++kind);
        MPI_Sendrecv(out, size_of(round, kind), MPI_INT, right, 11, in, size_of(round, kind), MPI_INT, left,
                     11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(in, size_of(round, kind), round, kind, rank);
        /* 2: MPI_Isendrecv (MPICH 4.0.2 leaves its status empty: the size is known) */
        fill(out, round, ++kind);
        MPI_Isendrecv(out, size_of(round, kind), MPI_INT, right, 12, in, size_of(round, kind), MPI_INT, left,
                      12, MPI_COMM_WORLD, &requests[0]);
        MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
        check(in, size_of(round, kind), round, kind, rank);
        /* 3: MPI_Isendrecv_replace, completed by MPI_Test if it is done at once, else by MPI_Wait */
        fill(extra, round, ++kind);
        MPI_Isendrecv_replace(extra, size_of(round, kind), MPI_INT, right, 13, left, 13, MPI_COMM_WORLD,
                              &requests[0]);
        int done = 0;
        MPI_Test(&requests[0], &done, MPI_STATUS_IGNORE);
        if (!done)
            MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
        check(extra, size_of(round, kind), round, kind, rank);
        /* 4: persistent requests, MPI_Startall + MPI_Waitall (their size is fixed) */
        ++kind;
        for (int i = 0; i < MAX_INTS; i++)
            persistent_out[i] = round * 100 + kind;
        MPI_Startall(2, persistent);
        MPI_Status statuses[4];
        MPI_Waitall(2, persistent, statuses);
        if (received(&statuses[1]) != MAX_INTS || persistent_in[0] != round * 100 + kind)
            check(persistent_in, received(&statuses[1]), round, kind, rank);
        /* 5: MPI_Mprobe + MPI_Mrecv */
        fill(out, round, ++kind);
        MPI_Isend(out, size_of(round, kind), MPI_INT, right, 15, MPI_COMM_WORLD, &requests[0]);
        MPI_Message message;
        MPI_Mprobe(left, 15, MPI_COMM_WORLD, &message, &status);
        MPI_Mrecv(in, received(&status), MPI_INT, &message, &status);
        MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
        check(in, received(&status), round, kind, rank);
        /* 6: MPI_Improbe + MPI_Imrecv */
        fill(out, round, ++kind);
        MPI_Isend(out, size_of(round, kind), MPI_INT, right, 16, MPI_COMM_WORLD, &requests[0]);
        MPI_Probe(left, 16, MPI_COMM_WORLD, &status); /* so that MPI_Improbe finds it at once */
        for (int found = 0; !found;)
            MPI_Improbe(left, 16, MPI_COMM_WORLD, &found, &message, &status);
        MPI_Imrecv(in, received(&status), MPI_INT, &message, &requests[1]);
        MPI_Waitall(2, requests, statuses);
        check(in, received(&statuses[1]), round, kind, rank);
        /* 7: MPI_Issend, received from MPI_ANY_SOURCE, completed by MPI_Waitany */
        fill(out, round, ++kind);
        MPI_Irecv(in, MAX_INTS, MPI_INT, MPI_ANY_SOURCE, 17, MPI_COMM_WORLD, &requests[0]);
        MPI_Issend(out, size_of(round, kind), MPI_INT, right, 17, MPI_COMM_WORLD, &requests[1]);
        for (int left_to_do = 2; left_to_do > 0; left_to_do--) {
            int index = MPI_UNDEFINED;
            MPI_Waitany(2, requests, &index, &status);
            if (index == 0)
                check(in, received(&status), round, kind, rank);
        }
        /* 8: two exchanges completed by MPI_Testsome */
        fill(out, round, ++kind);
        fill(extra, round, kind);
        int second_in[MAX_INTS];
        MPI_Irecv(in, MAX_INTS, MPI_INT, left, 18, MPI_COMM_WORLD, &requests[0]);
        MPI_Irecv(second_in, MAX_INTS, MPI_INT, left, 18, MPI_COMM_WORLD, &requests[1]);
        MPI_Isend(out, size_of(round, kind), MPI_INT, right, 18, MPI_COMM_WORLD, &requests[2]);
        MPI_Isend(extra, size_of(round, kind), MPI_INT, right, 18, MPI_COMM_WORLD, &requests[3]);
        int count = 0, indices[4];
        MPI_Testsome(4, requests, &count, indices, statuses); /* what is done at once, then MPI_Waitsome */
        for (int completed = 0;;) {
            for (int i = 0; count != MPI_UNDEFINED && i < count; i++)
                if (indices[i] < 2)
                    check(indices[i] == 0 ? in : second_in, received(&statuses[i]), round, kind, rank);
            completed += count == MPI_UNDEFINED ? 4 : count;
            if (completed >= 4)
                break;
            MPI_Waitsome(4, requests, &count, indices, statuses);
        }
        /* 9: no message: MPI_PROC_NULL, and every tenth round a receive cancelled */
        ++kind;
        MPI_Send(out, 1, MPI_INT, MPI_PROC_NULL, 19, MPI_COMM_WORLD);
        MPI_Recv(in, 1, MPI_INT, MPI_PROC_NULL, 19, MPI_COMM_WORLD, &status);
        if (round % 10 == 0) {
            MPI_Irecv(in, 1, MPI_INT, left, 99, MPI_COMM_WORLD, &requests[0]);
            MPI_Cancel(&requests[0]);
            MPI_Wait(&requests[0], &status);
            int cancelled = 0;
            MPI_Test_cancelled(&status, &cancelled);
            if (!cancelled && failures++ < 5)
                printf("p2p-mix: rank %d check failed: round %d: the receive was not cancelled\n", rank,
                       round);
        }
    }
    MPI_Request_free(&persistent[0]);
    MPI_Request_free(&persistent[1]);
    if (failures)
        printf("p2p-mix: rank %d rounds=%d FAILED (%d wrong messages)\n", rank, rounds, failures);
    else
        printf("p2p-mix: rank %d rounds=%d OK\n", rank, rounds);
    MPI_Finalize();
    return failures ? 1 : 0;
}

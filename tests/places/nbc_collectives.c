/*
 * nbc_collectives.c — persistent (and, with --icollectives, nonblocking) collectives for the places'
 * nonblocking-collective test (check-nbc). Every collective started is completed by a Wait/Test call,
 * several of them together, on the world and on a split communicator, rooted and not.
 *
 * Per rank it prints what the snapshot must show, one line per nonblocking collective in the order
 * they were started, and a summary:
 *   nbc-collectives: rank R expect op=OP comm=world|half root=ROOT sent=S received=N
 *   nbc-collectives: rank R blocking=B nonblocking=K half=W0,W1,... OK
 * OP is the OTF2_CollectiveOp, ROOT the root's rank in the communicator (none: 4294967295), S and N
 * the bytes of this rank's send and receive buffers as the arguments describe them, B the blocking
 * collectives the program made, `half` the split communicator's members as world ranks. The program
 * also counts its calls (compare-calls) and checks every result.
 */
#include "call_count.h"
#include "example.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { OP_BARRIER = 0, OP_BCAST = 1, OP_ALLREDUCE = 11 }; /* OTF2_CollectiveOp */
#define NO_ROOT UINT32_MAX

static int world_rank, nonblocking;
static bool failed;

static void expect(int op, const char *comm, uint32_t root, long sent, long received)
{
    example_print("nbc-collectives: rank %d expect op=%d comm=%s root=%u sent=%ld received=%ld\n", world_rank,
                  op, comm, root, sent, received);
    nonblocking++;
}

static void check(bool condition, const char *what)
{
    if (!condition) {
        example_print("nbc-collectives: rank %d check failed: %s\n", world_rank, what);
        failed = true;
    }
}

/* A persistent broadcast from the world's last rank, started three times (one request, three
 * request/complete pairs). */
static void persistent_bcast(int size)
{
    const int root = size - 1;
    int values[4];
    MPI_Request request;
    MPI_COUNTED(MPI_Bcast_init, values, 4, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &request);
    for (int start = 0; start < 3; start++) {
        for (int i = 0; i < 4; i++)
            values[i] = world_rank == root ? 10 * start + i : -1;
        MPI_COUNTED(MPI_Start, &request);
        MPI_COUNTED(MPI_Wait, &request, MPI_STATUS_IGNORE);
        for (int i = 0; i < 4; i++)
            check(values[i] == 10 * start + i, "persistent MPI_Bcast");
        const bool at_root = world_rank == root;
        expect(OP_BCAST, "world", (uint32_t)root, at_root ? 16 : 0, at_root ? 0 : 16);
    }
    MPI_COUNTED(MPI_Request_free, &request);
}

/* Two persistent collectives on the split communicator, started by one MPI_Startall and completed in
 * the other order by two MPI_Wait, or by one MPI_Waitall (the traced Waitall must not poll with
 * PMPI_Testall: MPICH 4.0.2's fails with MPI_ERR_IN_STATUS on persistent collective requests even once
 * they completed). New requests each time: MPICH 4.0.2 gets a restarted persistent MPI_Allreduce wrong. */
static void persistent_pair(MPI_Comm half, int half_rank, int half_size, bool by_waitall)
{
    double local[2] = {(double)world_rank, 1.0}, sum[2] = {0, 0};
    long token = half_rank == 0 ? 4242 : 0;
    MPI_Request requests[2];
    MPI_COUNTED(MPI_Allreduce_init, local, sum, 2, MPI_DOUBLE, MPI_SUM, half, MPI_INFO_NULL, &requests[0]);
    MPI_COUNTED(MPI_Bcast_init, &token, 1, MPI_LONG, 0, half, MPI_INFO_NULL, &requests[1]);
    MPI_COUNTED(MPI_Startall, 2, requests);
    if (by_waitall) {
        MPI_Status statuses[2];
        MPI_COUNTED(MPI_Waitall, 2, requests, statuses);
    } else {
        MPI_COUNTED(MPI_Wait, &requests[1], MPI_STATUS_IGNORE);
        MPI_COUNTED(MPI_Wait, &requests[0], MPI_STATUS_IGNORE);
    }
    check(sum[1] == (double)half_size && token == 4242, "persistent MPI_Allreduce and MPI_Bcast");
    expect(OP_ALLREDUCE, "half", NO_ROOT, 16, 16);
    expect(OP_BCAST, "half", 0, half_rank == 0 ? 8 : 0, half_rank == 0 ? 0 : 8);
    MPI_COUNTED(MPI_Request_free, &requests[0]);
    MPI_COUNTED(MPI_Request_free, &requests[1]);
}

/* MPI_Ibcast + MPI_Wait, two MPI_Iallreduce completed by one MPI_Waitall, MPI_Ibarrier + MPI_Test. */
static void icollectives(MPI_Comm half, int half_size, int size)
{
    int data[8];
    for (int i = 0; i < 8; i++)
        data[i] = world_rank == 0 ? i * i : -1;
    MPI_Request request;
    MPI_COUNTED(MPI_Ibcast, data, 8, MPI_INT, 0, MPI_COMM_WORLD, &request);
    MPI_COUNTED(MPI_Wait, &request, MPI_STATUS_IGNORE);
    check(data[7] == 49, "MPI_Ibcast");
    expect(OP_BCAST, "world", 0, world_rank == 0 ? 32 : 0, world_rank == 0 ? 0 : 32);

    double three[3] = {1.0, 2.0, (double)world_rank}, three_sum[3];
    long mine = world_rank, largest = -1;
    MPI_Request requests[2];
    MPI_Status statuses[2];
    MPI_COUNTED(MPI_Iallreduce, three, three_sum, 3, MPI_DOUBLE, MPI_SUM, half, &requests[0]);
    MPI_COUNTED(MPI_Iallreduce, &mine, &largest, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD, &requests[1]);
    MPI_COUNTED(MPI_Waitall, 2, requests, statuses);
    check(three_sum[0] == (double)half_size && largest == size - 1, "MPI_Iallreduce");
    expect(OP_ALLREDUCE, "half", NO_ROOT, 24, 24);
    expect(OP_ALLREDUCE, "world", NO_ROOT, 8, 8);

    MPI_COUNTED(MPI_Ibarrier, MPI_COMM_WORLD, &request);
    int done = 0;
    while (!done)
        MPI_COUNTED(MPI_Test, &request, &done, MPI_STATUS_IGNORE);
    expect(OP_BARRIER, "world", NO_ROOT, 0, 0);
}

int main(int argc, char **argv)
{
    const bool with_icollectives = argc > 1 && strcmp(argv[1], "--icollectives") == 0;
    int size, half_rank, half_size;
    MPI_COUNTED(MPI_Init, &argc, &argv);
    MPI_COUNTED(MPI_Comm_rank, MPI_COMM_WORLD, &world_rank);
    MPI_COUNTED(MPI_Comm_size, MPI_COMM_WORLD, &size);
    MPI_Comm half;
    MPI_COUNTED(MPI_Comm_split, MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    MPI_COUNTED(MPI_Comm_rank, half, &half_rank);
    MPI_COUNTED(MPI_Comm_size, half, &half_size);

    persistent_bcast(size);
    persistent_pair(half, half_rank, half_size, false);
    persistent_pair(half, half_rank, half_size, true);
    if (with_icollectives)
        icollectives(half, half_size, size);
    MPI_COUNTED(MPI_Barrier, MPI_COMM_WORLD); /* the one blocking collective: still COLL_BEGIN/COLL_END */

    char members[256] = "";
    for (int r = world_rank % 2, length = 0; r < size && length < (int)sizeof(members) - 12; r += 2)
        length += snprintf(members + length, sizeof(members) - (size_t)length, "%s%d", length ? "," : "", r);
    example_print("nbc-collectives: rank %d blocking=1 nonblocking=%d half=%s %s\n", world_rank, nonblocking,
                  members, failed ? "FAILED" : "OK");
    MPI_COUNTED(MPI_Comm_free, &half);
    return call_count_finalize(world_rank, failed ? EXAMPLE_EXIT_VERIFICATION_FAILED : EXAMPLE_EXIT_OK);
}

/*
 * reentry.c — application code that MPI runs from inside the tool records nothing; application code
 * that MPI runs from the application's own call is recorded (capture/README.md, "Re-entry").
 *
 * Built with -finstrument-functions, so every function here is a user function. With the test point
 * OTFX_TEST_REENTER_AT_FLUSH=called_at_flush the library calls called_at_flush() in the middle of every
 * batch send: it calls MPI_Comm_rank, opens an otfx.h region and marks a phase, as an error handler or
 * a reduction operation MPI ran from the tool's PMPI_Wait could. None of it may reach the trace, and
 * the recorder, entered half-way through a send, must go on unharmed. The user reduction operation
 * `count_and_add`, run by the application's MPI_Allreduce, calls MPI_Comm_rank too: those calls are the
 * application's and are recorded, nested in the MPI_Allreduce.
 *
 * Prints "expected-calls: RANK …" for compare-calls (only the application's own calls, the operation's
 * included) and "reentry: rank R work=… operation=… at_flush=…": the test compares those counts with
 * the place's held-functions line.
 */
#include <mpi.h>
#include <otfx.h>
#include <stdio.h>

enum { WORK_CALLS = 40000, REDUCTIONS = 5 };

static volatile long work_done;
static int operation_calls;
static int at_flush_calls;

/* Exported (the test links with -rdynamic): the test point finds it by name. */
void called_at_flush(void);
void called_at_flush(void)
{
    int rank = -1;
    at_flush_calls++;
    otfx_region_begin("reentered_region");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* inside the tool: passed through, not recorded */
    otfx_phase("reentered_phase");
    otfx_region_end("reentered_region");
}

static void __attribute__((noinline)) work(long step)
{
    work_done += step;
}

/* MPI_SUM on ints, the application's own operation: MPI runs it from the application's MPI_Allreduce. */
static void count_and_add(void *in, void *inout, int *length, MPI_Datatype *datatype)
{
    (void)datatype;
    int rank = -1;
    operation_calls++;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* the application's: recorded */
    for (int i = 0; i < *length; i++)
        ((int *)inout)[i] += ((const int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Enough user-function records for a few dozen batches, each send calling the test point. */
    for (long i = 0; i < WORK_CALLS; i++)
        work(i);
    MPI_Op operation;
    MPI_Op_create(count_and_add, 1, &operation);
    int failures = 0;
    for (int i = 0; i < REDUCTIONS; i++) {
        int value = rank + i, total = 0;
        MPI_Allreduce(&value, &total, 1, MPI_INT, operation, MPI_COMM_WORLD);
        failures += total != size * (size - 1) / 2 + size * i;
    }
    MPI_Op_free(&operation);
    printf("expected-calls: %d MPI_Allreduce=%d MPI_Comm_rank=%d MPI_Comm_size=1 MPI_Finalize=1 MPI_Init=1 "
           "MPI_Op_create=1 MPI_Op_free=1\n",
           rank, REDUCTIONS, 1 + operation_calls);
    printf("reentry: rank %d work=%d operation=%d at_flush=%s reductions %s\n", rank, WORK_CALLS,
           operation_calls, at_flush_calls > 0 ? "called" : "never", failures ? "WRONG" : "right");
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

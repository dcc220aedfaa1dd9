/*
 * collectives — every common collective on three communicators: MPI_COMM_WORLD, a split of it (even and
 * odd world ranks, in reverse order) and a duplicate of it.
 *
 * Exercises: MPI_Comm_split, MPI_Comm_dup, MPI_Comm_free; per iteration and communicator MPI_Bcast,
 * MPI_Reduce, MPI_Allreduce, MPI_Gather, MPI_Gatherv, MPI_Scatter, MPI_Scatterv, MPI_Alltoall,
 * MPI_Alltoallv, MPI_Barrier and the nonblocking MPI_Iallreduce completed by MPI_Wait, with the root
 * moving from iteration to iteration. A tracer has to tell the communicators apart and map their ranks
 * back to world ranks. Every rank checks every result it receives against the value it must have;
 * one MPI_Allreduce at the end sums the failures. --corrupt spoils one element that rank 0 sends in the
 * first all-to-all on MPI_COMM_WORLD, so the last rank sees a wrong value.
 */
#include "call_count.h"
#include "example.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { DEFAULT_ITERATIONS = 10, BCAST_LENGTH = 4, GATHER_LENGTH = 2, MAX_PER_PEER = 3 };
/* Enough failure lines to see what went wrong without flooding the output. */
enum { MAX_REPORTED_FAILURES = 5 };

struct communicator {
    MPI_Comm comm;
    const char *name;
    int rank, size;
};

/* What one rank needs to check a result and report where it went wrong. */
struct checker {
    int world_rank;
    long iteration;
    const char *comm_name;
    int failures;
    uint64_t checksum; /* FNV-1a over every result this rank received, in order */
};

/* Scratch space for one collective, sized for the largest communicator (the world). */
struct buffers {
    int *send, *receive, *expected;
    int *counts, *displacements, *peer_counts, *peer_displacements;
};

static void check_values(struct checker *checker, const char *operation, const int *values,
                         const int *expected, int count)
{
    for (int i = 0; i < count; i++)
        checker->checksum = (checker->checksum ^ (uint32_t)values[i]) * 1099511628211ull;
    for (int i = 0; i < count; i++) {
        if (values[i] == expected[i])
            continue;
        if (checker->failures < MAX_REPORTED_FAILURES)
            example_print("collectives: rank %d: verification FAILED: %s on %s, iteration %ld, element %d: "
                          "%d instead of %d\n",
                          checker->world_rank, operation, checker->comm_name, checker->iteration, i,
                          values[i], expected[i]);
        checker->failures++;
        return;
    }
}

static void check_value(struct checker *checker, const char *operation, int value, int expected)
{
    check_values(checker, operation, &value, &expected, 1);
}

/* Variable counts per peer: 1 to MAX_PER_PEER elements, different for each pair of ranks. */
static int pair_count(int a, int b)
{
    return 1 + (a + b) % MAX_PER_PEER;
}

static int prefix_displacements(const int *counts, int n, int *displacements)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        displacements[i] = total;
        total += counts[i];
    }
    return total;
}

static void run_rooted_collectives(const struct communicator *c, int root, int seed, struct buffers *b,
                                   struct checker *checker)
{
    int n = c->size, me = c->rank;

    /* MPI_Bcast from a root that moves with the iteration. */
    for (int k = 0; k < BCAST_LENGTH; k++) {
        b->expected[k] = seed * 100 + root * 10 + k;
        b->receive[k] = me == root ? b->expected[k] : -1;
    }
    MPI_COUNTED(MPI_Bcast, b->receive, BCAST_LENGTH, MPI_INT, root, c->comm);
    check_values(checker, "MPI_Bcast", b->receive, b->expected, BCAST_LENGTH);

    /* MPI_Reduce: the sum of (rank + 1) * (seed + 1) is known in closed form. */
    int contribution = (me + 1) * (seed + 1), sum = -1;
    MPI_COUNTED(MPI_Reduce, &contribution, &sum, 1, MPI_INT, MPI_SUM, root, c->comm);
    if (me == root)
        check_value(checker, "MPI_Reduce", sum, (seed + 1) * n * (n + 1) / 2);

    /* MPI_Gather of two values per rank. */
    int mine[GATHER_LENGTH] = {me, seed};
    MPI_COUNTED(MPI_Gather, mine, GATHER_LENGTH, MPI_INT, b->receive, GATHER_LENGTH, MPI_INT, root, c->comm);
    if (me == root) {
        for (int j = 0; j < n; j++) {
            b->expected[j * GATHER_LENGTH] = j;
            b->expected[j * GATHER_LENGTH + 1] = seed;
        }
        check_values(checker, "MPI_Gather", b->receive, b->expected, n * GATHER_LENGTH);
    }

    /* MPI_Gatherv: rank j contributes pair_count(j, root) values. */
    int my_count = pair_count(me, root);
    for (int k = 0; k < my_count; k++)
        b->send[k] = seed + me * 10 + k;
    for (int j = 0; j < n; j++)
        b->counts[j] = pair_count(j, root);
    int total = prefix_displacements(b->counts, n, b->displacements);
    MPI_COUNTED(MPI_Gatherv, b->send, my_count, MPI_INT, b->receive, b->counts, b->displacements, MPI_INT,
                root, c->comm);
    if (me == root) {
        for (int j = 0; j < n; j++)
            for (int k = 0; k < b->counts[j]; k++)
                b->expected[b->displacements[j] + k] = seed + j * 10 + k;
        check_values(checker, "MPI_Gatherv", b->receive, b->expected, total);
    }

    /* MPI_Scatter of GATHER_LENGTH values to each rank. */
    if (me == root)
        for (int i = 0; i < n * GATHER_LENGTH; i++)
            b->send[i] = seed * 3 + i;
    MPI_COUNTED(MPI_Scatter, b->send, GATHER_LENGTH, MPI_INT, b->receive, GATHER_LENGTH, MPI_INT, root,
                c->comm);
    for (int k = 0; k < GATHER_LENGTH; k++)
        b->expected[k] = seed * 3 + me * GATHER_LENGTH + k;
    check_values(checker, "MPI_Scatter", b->receive, b->expected, GATHER_LENGTH);

    /* MPI_Scatterv: rank j receives pair_count(j, root) values. */
    if (me == root)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < b->counts[j]; k++)
                b->send[b->displacements[j] + k] = seed * 7 + j * 10 + k;
    MPI_COUNTED(MPI_Scatterv, b->send, b->counts, b->displacements, MPI_INT, b->receive, my_count, MPI_INT,
                root, c->comm);
    for (int k = 0; k < my_count; k++)
        b->expected[k] = seed * 7 + me * 10 + k;
    check_values(checker, "MPI_Scatterv", b->receive, b->expected, my_count);
}

static void run_all_to_all_collectives(const struct communicator *c, int seed, bool corrupt,
                                       struct buffers *b, struct checker *checker)
{
    int n = c->size, me = c->rank;

    /* MPI_Allreduce with MPI_MAX: the largest rank's value wins. */
    int value = me * 3 + seed, maximum = -1;
    MPI_COUNTED(MPI_Allreduce, &value, &maximum, 1, MPI_INT, MPI_MAX, c->comm);
    check_value(checker, "MPI_Allreduce", maximum, (n - 1) * 3 + seed);

    /* MPI_Alltoall: the value from j to i encodes both, so a misrouted element is caught. */
    for (int j = 0; j < n; j++) {
        b->send[j] = me * 100 + j + seed;
        b->expected[j] = j * 100 + me + seed;
    }
    if (corrupt)
        b->send[n - 1] += 1;
    MPI_COUNTED(MPI_Alltoall, b->send, 1, MPI_INT, b->receive, 1, MPI_INT, c->comm);
    check_values(checker, "MPI_Alltoall", b->receive, b->expected, n);

    /* MPI_Alltoallv: pair_count is symmetric, so what j sends to me is what I expect from j. */
    for (int j = 0; j < n; j++) {
        b->counts[j] = pair_count(me, j);
        b->peer_counts[j] = pair_count(j, me);
    }
    prefix_displacements(b->counts, n, b->displacements);
    int total = prefix_displacements(b->peer_counts, n, b->peer_displacements);
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < b->counts[j]; k++)
            b->send[b->displacements[j] + k] = seed + me * 1000 + j * 10 + k;
        for (int k = 0; k < b->peer_counts[j]; k++)
            b->expected[b->peer_displacements[j] + k] = seed + j * 1000 + me * 10 + k;
    }
    MPI_COUNTED(MPI_Alltoallv, b->send, b->counts, b->displacements, MPI_INT, b->receive, b->peer_counts,
                b->peer_displacements, MPI_INT, c->comm);
    check_values(checker, "MPI_Alltoallv", b->receive, b->expected, total);

    MPI_COUNTED(MPI_Barrier, c->comm);

    /* MPI_Iallreduce overlapped with a little local work, then MPI_Wait. */
    MPI_Request request;
    int addend = me + seed, sum = -1;
    MPI_COUNTED(MPI_Iallreduce, &addend, &sum, 1, MPI_INT, MPI_SUM, c->comm, &request);
    int expected_sum = n * (n - 1) / 2 + n * seed;
    MPI_COUNTED(MPI_Wait, &request, MPI_STATUS_IGNORE);
    check_value(checker, "MPI_Iallreduce", sum, expected_sum);
}

static void run_suite(const struct communicator *c, long iteration, bool corrupt, struct buffers *b,
                      struct checker *checker)
{
    int seed = (int)(iteration % 1000);
    checker->iteration = iteration;
    checker->comm_name = c->name;
    run_rooted_collectives(c, (int)(iteration % c->size), seed, b, checker);
    run_all_to_all_collectives(c, seed, corrupt, b, checker);
}

static bool buffers_alloc(struct buffers *b, int world_size)
{
    size_t elements = (size_t)world_size * MAX_PER_PEER + BCAST_LENGTH;
    b->send = calloc(elements, sizeof(int));
    b->receive = calloc(elements, sizeof(int));
    b->expected = calloc(elements, sizeof(int));
    b->counts = calloc((size_t)world_size, sizeof(int));
    b->displacements = calloc((size_t)world_size, sizeof(int));
    b->peer_counts = calloc((size_t)world_size, sizeof(int));
    b->peer_displacements = calloc((size_t)world_size, sizeof(int));
    return b->send && b->receive && b->expected && b->counts && b->displacements && b->peer_counts &&
           b->peer_displacements;
}

static void buffers_free(struct buffers *b)
{
    free(b->send);
    free(b->receive);
    free(b->expected);
    free(b->counts);
    free(b->displacements);
    free(b->peer_counts);
    free(b->peer_displacements);
}

static void describe(struct communicator *c)
{
    MPI_COUNTED(MPI_Comm_rank, c->comm, &c->rank);
    MPI_COUNTED(MPI_Comm_size, c->comm, &c->size);
}

/* The split keeps world ranks of equal parity, ordered from the highest world rank down. */
static void check_split(const struct communicator *split, int world_rank, int world_size,
                        struct checker *checker)
{
    int same_parity = 0, higher_same_parity = 0;
    for (int r = 0; r < world_size; r++) {
        if (r % 2 != world_rank % 2)
            continue;
        same_parity++;
        if (r > world_rank)
            higher_same_parity++;
    }
    checker->comm_name = split->name;
    check_value(checker, "MPI_Comm_split size", split->size, same_parity);
    check_value(checker, "MPI_Comm_split rank", split->rank, higher_same_parity);
}

int main(int argc, char **argv)
{
    struct communicator world = {.comm = MPI_COMM_WORLD, .name = "MPI_COMM_WORLD"};
    MPI_COUNTED(MPI_Init, &argc, &argv);
    describe(&world);

    struct example_options options;
    if (!example_parse_options(argc, argv, "collectives", DEFAULT_ITERATIONS, 0, world.rank != 0, &options))
        return call_count_finalize(world.rank, EXAMPLE_EXIT_USAGE);

    struct communicator split = {.name = "split"}, dup = {.name = "dup"};
    MPI_COUNTED(MPI_Comm_split, MPI_COMM_WORLD, world.rank % 2, world.size - world.rank, &split.comm);
    MPI_COUNTED(MPI_Comm_dup, MPI_COMM_WORLD, &dup.comm);
    describe(&split);
    describe(&dup);

    struct checker checker = {.world_rank = world.rank, .checksum = 1469598103934665603ull};
    check_split(&split, world.rank, world.size, &checker);
    checker.comm_name = dup.name;
    check_value(&checker, "MPI_Comm_dup rank", dup.rank, world.rank);

    struct buffers buffers;
    if (!buffers_alloc(&buffers, world.size)) {
        fprintf(stderr, "collectives: rank %d: out of memory\n", world.rank);
        MPI_COUNTED(MPI_Abort, MPI_COMM_WORLD, 1);
    }

    const struct communicator *communicators[] = {&world, &split, &dup};
    double start = world.rank == 0 ? MPI_COUNTED_NOARGS(MPI_Wtime) : 0.0, elapsed = 0.0;
    long iterations = 0;
    for (int stop = 0; !stop;) {
        for (size_t i = 0; i < sizeof(communicators) / sizeof(communicators[0]); i++) {
            bool corrupt =
                options.corrupt && iterations == 0 && world.rank == 0 && communicators[i] == &world;
            run_suite(communicators[i], iterations, corrupt, &buffers, &checker);
        }
        iterations++;
        if (world.rank == 0) {
            elapsed = MPI_COUNTED_NOARGS(MPI_Wtime) - start;
            stop = example_should_stop(&options, iterations, elapsed);
        }
        MPI_COUNTED(MPI_Bcast, &stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    buffers_free(&buffers);

    int failures = 0;
    MPI_COUNTED(MPI_Allreduce, &checker.failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_COUNTED(MPI_Comm_free, &split.comm);
    MPI_COUNTED(MPI_Comm_free, &dup.comm);

    example_print("collectives: rank %d checksum %016" PRIx64 "\n", world.rank, checker.checksum);
    if (world.rank == 0) {
        example_print("collectives: %ld iterations on 3 communicators\n", iterations);
        if (failures == 0)
            example_print("collectives: verification OK\n");
        else
            example_print("collectives: verification FAILED: %d wrong results\n", failures);
        example_print("elapsed-seconds: %.3f\n", elapsed);
    }
    return call_count_finalize(world.rank,
                               failures == 0 ? EXAMPLE_EXIT_OK : EXAMPLE_EXIT_VERIFICATION_FAILED);
}

/*
 * stencil — 2-D Jacobi relaxation of a square grid decomposed over a 2-D process grid.
 *
 * Exercises: MPI_Dims_create; halo exchange with MPI_Irecv/MPI_Isend/MPI_Waitall to existing
 * neighbours only (edge ranks post fewer requests than inner ones, so counts differ per rank); one
 * MPI_Allreduce per iteration; MPI_Reduce of the final checksum; MPI_Bcast of the verdict; MPI_Wtime on
 * rank 0. For function tracing (the same source is built as stencil_instrumented with
 * -finstrument-functions) the work is split into user functions of different call depth:
 *   stencil_iteration -> exchange_halos -> pack_column / unpack_column
 *                     -> update_interior -> update_row -> relax_point
 *                     -> compute_residual
 *
 * Verification: rank 0 repeats the same iterations serially on the whole grid with the same functions.
 * Every grid value is then bitwise identical to the parallel one, so the checksum and the residual may
 * only differ by the order of the global sums. --corrupt adds a spurious source to one grid point of the
 * last rank in every iteration (a diffusing error that the boundaries would damp out, were it added once).
 *
 * Test option (triggers): --slow-iteration K --slow-ms M makes the last rank sleep M ms in iteration K
 * before the iteration's MPI_Allreduce, so that every other rank's MPI_Allreduce of that iteration takes
 * at least that long. The result does not change.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "call_count.h"
#include "example.h"

#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NO_INSTRUMENT __attribute__((no_instrument_function))

enum { DEFAULT_ITERATIONS = 100, DEFAULT_GRID_SIZE = 32 };
/* Sums over the grid differ between the serial and the parallel run only by rounding. */
static const double RELATIVE_TOLERANCE = 1e-9;
static const double CORRUPTION_PER_ITERATION = 0.25;

/* Direction a halo message travels; used as its tag so that every message is unambiguous. */
enum direction { TO_NORTH, TO_SOUTH, TO_WEST, TO_EAST, DIRECTION_COUNT };

/*
 * One rank's block of the global N x N interior plus one ghost layer on each side. Ghost cells on the
 * global boundary hold the fixed boundary values, the others the neighbours' halos.
 */
struct block {
    int rows, columns;        /* interior points */
    int first_row, first_col; /* global index of the first interior point */
    int neighbour[DIRECTION_COUNT];
    double *u, *u_next;                   /* (rows + 2) x (columns + 2), row-major */
    double *column_out[2], *column_in[2]; /* packed west [0] and east [1] columns */
};

NO_INSTRUMENT static inline int stride(const struct block *b)
{
    return b->columns + 2;
}

/* Deterministic, not symmetric, so that a halo sent to the wrong side changes the result. */
NO_INSTRUMENT static double boundary_value(int global_row, int global_col)
{
    return (double)((global_row * 31 + global_col * 17 + 7) % 11) / 10.0;
}

NO_INSTRUMENT static double initial_value(int global_row, int global_col)
{
    return (double)((global_row * 7 + global_col * 3) % 5) / 4.0;
}

/* Distributes n points over parts as evenly as possible; the first n % parts get one more. */
NO_INSTRUMENT static void split_range(int n, int parts, int index, int *start, int *count)
{
    int base = n / parts, extra = n % parts;
    *count = base + (index < extra ? 1 : 0);
    *start = index * base + (index < extra ? index : extra);
}

NO_INSTRUMENT static bool block_init(struct block *b, int grid_size, int row_start, int rows, int col_start,
                                     int columns)
{
    memset(b, 0, sizeof(*b));
    b->rows = rows;
    b->columns = columns;
    b->first_row = row_start;
    b->first_col = col_start;
    for (int d = 0; d < DIRECTION_COUNT; d++)
        b->neighbour[d] = MPI_PROC_NULL;
    size_t points = (size_t)(rows + 2) * (size_t)(columns + 2);
    b->u = calloc(points, sizeof(double));
    b->u_next = calloc(points, sizeof(double));
    for (int side = 0; side < 2; side++) {
        b->column_out[side] = calloc((size_t)rows, sizeof(double));
        b->column_in[side] = calloc((size_t)rows, sizeof(double));
        if (!b->column_out[side] || !b->column_in[side])
            return false;
    }
    if (!b->u || !b->u_next)
        return false;

    for (int r = 0; r < rows + 2; r++) {
        for (int c = 0; c < columns + 2; c++) {
            int global_row = row_start + r - 1, global_col = col_start + c - 1;
            bool on_boundary =
                global_row < 0 || global_row >= grid_size || global_col < 0 || global_col >= grid_size;
            double value =
                on_boundary ? boundary_value(global_row, global_col) : initial_value(global_row, global_col);
            b->u[r * stride(b) + c] = value;
            b->u_next[r * stride(b) + c] = value;
        }
    }
    return true;
}

NO_INSTRUMENT static void block_free(struct block *b)
{
    free(b->u);
    free(b->u_next);
    for (int side = 0; side < 2; side++) {
        free(b->column_out[side]);
        free(b->column_in[side]);
    }
}

static double relax_point(const double *u, int index, int row_stride)
{
    return 0.25 * (u[index - row_stride] + u[index + row_stride] + u[index - 1] + u[index + 1]);
}

static void update_row(struct block *b, int row)
{
    for (int c = 1; c <= b->columns; c++) {
        int index = row * stride(b) + c;
        b->u_next[index] = relax_point(b->u, index, stride(b));
    }
}

static void update_interior(struct block *b)
{
    for (int r = 1; r <= b->rows; r++)
        update_row(b, r);
}

/* Sum of squared changes of this iteration, before u and u_next are swapped. */
static double compute_residual(const struct block *b)
{
    double sum = 0.0;
    for (int r = 1; r <= b->rows; r++) {
        for (int c = 1; c <= b->columns; c++) {
            double change = b->u_next[r * stride(b) + c] - b->u[r * stride(b) + c];
            sum += change * change;
        }
    }
    return sum;
}

/* Position-weighted so that values landing in the wrong place change the checksum. */
static double compute_checksum(const struct block *b)
{
    double sum = 0.0;
    for (int r = 1; r <= b->rows; r++) {
        for (int c = 1; c <= b->columns; c++) {
            int global_row = b->first_row + r - 1, global_col = b->first_col + c - 1;
            double weight = 1.0 + (double)((global_row * 3 + global_col * 5) % 7);
            sum += weight * b->u[r * stride(b) + c];
        }
    }
    return sum;
}

static void pack_column(const struct block *b, int column, double *out)
{
    for (int r = 1; r <= b->rows; r++)
        out[r - 1] = b->u[r * stride(b) + column];
}

static void unpack_column(struct block *b, int column, const double *in)
{
    for (int r = 1; r <= b->rows; r++)
        b->u[r * stride(b) + column] = in[r - 1];
}

/* Fills the ghost cells of u that belong to neighbours. Requests are posted only for neighbours that
 * exist, so the MPI calls a rank makes depend on where its block lies. */
static void exchange_halos(struct block *b, MPI_Comm comm)
{
    MPI_Request requests[2 * DIRECTION_COUNT];
    /* A real array, not MPI_STATUSES_IGNORE: gcc 12 mistakes MPICH's (MPI_Status *)1 for a buffer. */
    MPI_Status statuses[2 * DIRECTION_COUNT];
    int request_count = 0;
    int row_length = b->columns;
    double *first_row = &b->u[1 * stride(b) + 1], *last_row = &b->u[b->rows * stride(b) + 1];
    double *north_ghost = &b->u[1], *south_ghost = &b->u[(b->rows + 1) * stride(b) + 1];

    /* A message from the northern neighbour travels south, and so on. */
    if (b->neighbour[TO_NORTH] != MPI_PROC_NULL)
        MPI_COUNTED(MPI_Irecv, north_ghost, row_length, MPI_DOUBLE, b->neighbour[TO_NORTH], TO_SOUTH, comm,
                    &requests[request_count++]);
    if (b->neighbour[TO_SOUTH] != MPI_PROC_NULL)
        MPI_COUNTED(MPI_Irecv, south_ghost, row_length, MPI_DOUBLE, b->neighbour[TO_SOUTH], TO_NORTH, comm,
                    &requests[request_count++]);
    if (b->neighbour[TO_WEST] != MPI_PROC_NULL)
        MPI_COUNTED(MPI_Irecv, b->column_in[0], b->rows, MPI_DOUBLE, b->neighbour[TO_WEST], TO_EAST, comm,
                    &requests[request_count++]);
    if (b->neighbour[TO_EAST] != MPI_PROC_NULL)
        MPI_COUNTED(MPI_Irecv, b->column_in[1], b->rows, MPI_DOUBLE, b->neighbour[TO_EAST], TO_WEST, comm,
                    &requests[request_count++]);

    if (b->neighbour[TO_NORTH] != MPI_PROC_NULL)
        MPI_COUNTED(MPI_Isend, first_row, row_length, MPI_DOUBLE, b->neighbour[TO_NORTH], TO_NORTH, comm,
                    &requests[request_count++]);
    if (b->neighbour[TO_SOUTH] != MPI_PROC_NULL)
        MPI_COUNTED(MPI_Isend, last_row, row_length, MPI_DOUBLE, b->neighbour[TO_SOUTH], TO_SOUTH, comm,
                    &requests[request_count++]);
    if (b->neighbour[TO_WEST] != MPI_PROC_NULL) {
        pack_column(b, 1, b->column_out[0]);
        MPI_COUNTED(MPI_Isend, b->column_out[0], b->rows, MPI_DOUBLE, b->neighbour[TO_WEST], TO_WEST, comm,
                    &requests[request_count++]);
    }
    if (b->neighbour[TO_EAST] != MPI_PROC_NULL) {
        pack_column(b, b->columns, b->column_out[1]);
        MPI_COUNTED(MPI_Isend, b->column_out[1], b->rows, MPI_DOUBLE, b->neighbour[TO_EAST], TO_EAST, comm,
                    &requests[request_count++]);
    }

    /* Called even with no requests (a single rank) so every rank makes one per iteration. */
    MPI_COUNTED(MPI_Waitall, request_count, requests, statuses);

    if (b->neighbour[TO_WEST] != MPI_PROC_NULL)
        unpack_column(b, 0, b->column_in[0]);
    if (b->neighbour[TO_EAST] != MPI_PROC_NULL)
        unpack_column(b, b->columns + 1, b->column_in[1]);
}

static void swap_buffers(struct block *b)
{
    double *previous = b->u;
    b->u = b->u_next;
    b->u_next = previous;
}

/* One Jacobi sweep; returns this block's share of the residual. */
static double stencil_iteration(struct block *b, MPI_Comm comm, bool corrupt)
{
    if (comm != MPI_COMM_NULL)
        exchange_halos(b, comm);
    update_interior(b);
    if (corrupt)
        b->u_next[(b->rows / 2 + 1) * stride(b) + b->columns / 2 + 1] += CORRUPTION_PER_ITERATION;
    double residual = compute_residual(b);
    swap_buffers(b);
    return residual;
}

struct serial_result {
    double checksum;
    double last_residual;
    long fixed_point_after; /* sweeps until the grid stopped changing, 0 if it did not */
};

NO_INSTRUMENT static bool reached_fixed_point(const struct block *b)
{
    size_t points = (size_t)(b->rows + 2) * (size_t)(b->columns + 2);
    return memcmp(b->u, b->u_next, points * sizeof(double)) == 0;
}

/* The reference: the same sweeps over the whole grid in one block, without communication. */
static bool serial_reference(int grid_size, long iterations, struct serial_result *result)
{
    struct block whole;
    if (!block_init(&whole, grid_size, 0, grid_size, 0, grid_size)) {
        block_free(&whole);
        return false;
    }
    result->last_residual = 0.0;
    result->fixed_point_after = 0;
    for (long i = 0; i < iterations; i++) {
        result->last_residual = stencil_iteration(&whole, MPI_COMM_NULL, false);
        /* A sweep that changed no bit makes every later sweep repeat it exactly, so the rest can be
         * skipped: long --seconds runs then do not pay for a serial run of equal length. */
        if (result->last_residual == 0.0 && reached_fixed_point(&whole)) {
            result->fixed_point_after = i + 1;
            break;
        }
    }
    result->checksum = compute_checksum(&whole);
    block_free(&whole);
    return true;
}

NO_INSTRUMENT static bool nearly_equal(double value, double reference)
{
    return fabs(value - reference) <= RELATIVE_TOLERANCE * fabs(reference) + 1e-300;
}

/* Rank 0's verdict on the parallel result; printed there, returned as a process exit code. */
static int verify(int grid_size, long iterations, double checksum, double last_residual)
{
    struct serial_result reference;
    if (!serial_reference(grid_size, iterations, &reference)) {
        example_print("stencil: verification FAILED: out of memory for the serial reference\n");
        return EXAMPLE_EXIT_VERIFICATION_FAILED;
    }
    bool checksum_ok = nearly_equal(checksum, reference.checksum);
    bool residual_ok = nearly_equal(last_residual, reference.last_residual);
    /* The exact bits, for comparisons of whole runs (a traced run must compute the same). */
    uint64_t checksum_bits, residual_bits;
    memcpy(&checksum_bits, &checksum, sizeof(checksum_bits));
    memcpy(&residual_bits, &last_residual, sizeof(residual_bits));
    example_print("stencil: result bits checksum %016" PRIx64 " residual %016" PRIx64 "\n", checksum_bits,
                  residual_bits);
    if (checksum_ok && residual_ok) {
        if (reference.fixed_point_after > 0)
            example_print("stencil: the serial reference reached a fixed point after %ld iterations\n",
                          reference.fixed_point_after);
        example_print("stencil: checksum %.15g residual %.6g after %ld iterations\n"
                      "stencil: verification OK\n",
                      checksum, last_residual, iterations);
        return EXAMPLE_EXIT_OK;
    }
    example_print("stencil: verification FAILED: checksum %.15g (serial %.15g), residual %.15g (serial "
                  "%.15g) after %ld iterations\n",
                  checksum, reference.checksum, last_residual, reference.last_residual, iterations);
    return EXAMPLE_EXIT_VERIFICATION_FAILED;
}

/* Lays the ranks out row-major on the process grid and finds this rank's block and neighbours. */
static bool decompose(int grid_size, int rank, const int dims[2], struct block *b)
{
    int process_row = rank / dims[1], process_col = rank % dims[1];
    int row_start, rows, col_start, columns;
    split_range(grid_size, dims[0], process_row, &row_start, &rows);
    split_range(grid_size, dims[1], process_col, &col_start, &columns);
    if (!block_init(b, grid_size, row_start, rows, col_start, columns))
        return false;
    if (process_row > 0)
        b->neighbour[TO_NORTH] = rank - dims[1];
    if (process_row < dims[0] - 1)
        b->neighbour[TO_SOUTH] = rank + dims[1];
    if (process_col > 0)
        b->neighbour[TO_WEST] = rank - 1;
    if (process_col < dims[1] - 1)
        b->neighbour[TO_EAST] = rank + 1;
    return true;
}

/* --slow-iteration K --slow-ms M (the test option above): taken out of argv before the common options. */
NO_INSTRUMENT static bool take_slow_options(int *argc, char **argv, long *iteration, long *milliseconds)
{
    *iteration = 0;
    *milliseconds = 0;
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        const bool slow_iteration = strcmp(argv[i], "--slow-iteration") == 0;
        if (!slow_iteration && strcmp(argv[i], "--slow-ms") != 0) {
            argv[kept++] = argv[i];
            continue;
        }
        char *end = NULL;
        const long value = i + 1 < *argc ? strtol(argv[i + 1], &end, 10) : 0;
        if (!end || *end || value <= 0) {
            fprintf(stderr, "stencil: '%s' needs a positive whole number\n", argv[i]);
            return false;
        }
        *(slow_iteration ? iteration : milliseconds) = value;
        i++;
    }
    *argc = kept;
    argv[kept] = NULL;
    if ((*iteration > 0) != (*milliseconds > 0)) {
        fprintf(stderr, "stencil: --slow-iteration and --slow-ms go together\n");
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_COUNTED(MPI_Init, &argc, &argv);
    MPI_COUNTED(MPI_Comm_rank, MPI_COMM_WORLD, &rank);
    MPI_COUNTED(MPI_Comm_size, MPI_COMM_WORLD, &size);

    long slow_iteration, slow_ms;
    if (!take_slow_options(&argc, argv, &slow_iteration, &slow_ms))
        return call_count_finalize(rank, EXAMPLE_EXIT_USAGE);
    struct example_options options;
    if (!example_parse_options(argc, argv, "stencil", DEFAULT_ITERATIONS, DEFAULT_GRID_SIZE, rank != 0,
                               &options))
        return call_count_finalize(rank, EXAMPLE_EXIT_USAGE);
    if (options.size > 4096) {
        if (rank == 0)
            fprintf(stderr, "stencil: --size %ld is too large (at most 4096)\n", options.size);
        return call_count_finalize(rank, EXAMPLE_EXIT_USAGE);
    }
    int grid_size = (int)options.size;

    int dims[2] = {0, 0};
    MPI_COUNTED(MPI_Dims_create, size, 2, dims);
    /* Every rank computes the same dims, so all of them take this exit together. */
    if (dims[0] > grid_size || dims[1] > grid_size) {
        if (rank == 0)
            fprintf(stderr, "stencil: a %dx%d grid cannot be split over %dx%d ranks; use a larger --size\n",
                    grid_size, grid_size, dims[0], dims[1]);
        return call_count_finalize(rank, EXAMPLE_EXIT_USAGE);
    }

    struct block b;
    if (!decompose(grid_size, rank, dims, &b)) {
        fprintf(stderr, "stencil: rank %d: out of memory\n", rank);
        MPI_COUNTED(MPI_Abort, MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        example_print("stencil: %dx%d grid on %dx%d ranks\n", grid_size, grid_size, dims[0], dims[1]);

    bool corrupt_here = options.corrupt && rank == size - 1;
    double start = rank == 0 ? MPI_COUNTED_NOARGS(MPI_Wtime) : 0.0;
    double elapsed = 0.0, last_residual = 0.0;
    long iterations = 0;
    for (bool stop = false; !stop;) {
        /* Rank 0's wish to stop travels in the residual reduction: no extra message per iteration. */
        double local[2] = {stencil_iteration(&b, MPI_COMM_WORLD, corrupt_here), 0.0}, global[2];
        iterations++;
        if (iterations == slow_iteration && rank == size - 1) {
            const struct timespec pause = {slow_ms / 1000, (slow_ms % 1000) * 1000000L};
            nanosleep(&pause, NULL);
        }
        if (rank == 0) {
            elapsed = MPI_COUNTED_NOARGS(MPI_Wtime) - start;
            local[1] = example_should_stop(&options, iterations, elapsed) ? 1.0 : 0.0;
        }
        MPI_COUNTED(MPI_Allreduce, local, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        last_residual = global[0];
        stop = global[1] > 0.0;
    }

    double local_checksum = compute_checksum(&b), checksum = 0.0;
    MPI_COUNTED(MPI_Reduce, &local_checksum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int exit_code = EXAMPLE_EXIT_OK;
    if (rank == 0) {
        exit_code = verify(grid_size, iterations, checksum, last_residual);
        example_print("elapsed-seconds: %.3f\n", elapsed);
    }
    /* Every rank leaves with rank 0's verdict, so mpiexec's exit code is the verdict too. */
    MPI_COUNTED(MPI_Bcast, &exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    block_free(&b);
    return call_count_finalize(rank, exit_code);
}

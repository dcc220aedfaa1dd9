/*
 * latency.c — capture-latency: small-message MPI latency with and without recording, as IMB's PingPong
 * and Allreduce measure it. Linked with libotfx-capture (link-time mode); two application ranks and a
 * place, or two ranks alone (pass-through):
 *
 *   OTFX_PLACES=1 mpiexec -n 3 ./capture-latency [rounds] [repetitions]   (defaults 20000, 7)
 *
 * Every figure is taken through PMPI_* (untraced: the wrappers bypassed, the place present and idle)
 * and through MPI_* (the wrappers: recorded, or not with OTFX_RECORD=0), alternating, `repetitions`
 * times; rank 0 prints the median and the range of each as key=value lines:
 *
 *   pingpong_<B>_<side>_us     MPI_Send + MPI_Recv of B bytes (0 and 4) between ranks 0 and 1, round
 *                              trip / 2 (IMB PingPong's t[usec])
 *   allreduce_int_<side>_us    MPI_Allreduce of one int, MPI_SUM (exact: runs as MPI_Iallreduce and a
 *                              steerable test loop when traced)
 *   allreduce_double_<side>_us MPI_Allreduce of one double, MPI_SUM (order-dependent: runs as the
 *                              blocking call behind a steerable MPI_Ibarrier when traced)
 *   <figure>_cpu_us            the CPU time (user + system, getrusage) this rank spent per call of the
 *                              traced side: a figure less sensitive to other load than the wall time
 *
 * <side> is `untraced` (PMPI) or `wrapped` (MPI_*); `mode` says what the wrappers did: recording,
 * no-record (OTFX_RECORD=0) or pass-through (no place). capture/bench/latency_bench.py runs the three
 * modes alternately in one go and prints the medians side by side (docs/benchmarks.md, "Latency").
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { MAX_REPETITIONS = 101 };

static double now_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e6 + (double)now.tv_nsec / 1e3;
}

static double cpu_us(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 +
           (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

typedef int (*send_function)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_function)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
typedef int (*allreduce_function)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

struct timing {
    double wall_us; /* per call */
    double cpu_us;  /* per call, this rank */
};

/* One message of `bytes` each way between application ranks 0 and 1 per round; round trip / 2. */
static struct timing ping_pong(MPI_Comm comm, int rank, int bytes, long rounds, int wrapped)
{
    send_function send = wrapped ? MPI_Send : PMPI_Send;
    recv_function recv = wrapped ? MPI_Recv : PMPI_Recv;
    char message[8] = {0};
    PMPI_Barrier(comm);
    const double cpu_start = cpu_us(), start = now_us();
    for (long i = 0; i < rounds; i++) {
        if (rank == 0) {
            send(message, bytes, MPI_BYTE, 1, 1, comm);
            recv(message, bytes, MPI_BYTE, 1, 1, comm, MPI_STATUS_IGNORE);
        } else {
            recv(message, bytes, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE);
            send(message, bytes, MPI_BYTE, 0, 1, comm);
        }
    }
    return (struct timing){(now_us() - start) / (double)rounds / 2,
                           (cpu_us() - cpu_start) / (double)rounds / 2};
}

static struct timing allreduce(MPI_Comm comm, MPI_Datatype type, long rounds, int wrapped)
{
    allreduce_function reduce = wrapped ? MPI_Allreduce : PMPI_Allreduce;
    double in = 1, out = 0; /* room for an int or a double */
    PMPI_Barrier(comm);
    const double cpu_start = cpu_us(), start = now_us();
    for (long i = 0; i < rounds; i++)
        reduce(&in, &out, 1, type, MPI_SUM, comm);
    return (struct timing){(now_us() - start) / (double)rounds, (cpu_us() - cpu_start) / (double)rounds};
}

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of `count` values (sorts them). */
static void print_figure(const char *key, double *values, int count)
{
    qsort(values, (size_t)count, sizeof(*values), compare_doubles);
    const double median = count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
    printf("%s=%.3f min=%.3f max=%.3f\n", key, median, values[0], values[count - 1]);
}

enum figure { PING_0, PING_4, ALLREDUCE_INT, ALLREDUCE_DOUBLE, FIGURES };
static const char *const figure_names[FIGURES] = {"pingpong_0", "pingpong_4", "allreduce_int",
                                                  "allreduce_double"};

static struct timing measure(enum figure figure, MPI_Comm comm, int rank, long rounds, int wrapped)
{
    switch (figure) {
    case PING_0:
        return ping_pong(comm, rank, 0, rounds, wrapped);
    case PING_4:
        return ping_pong(comm, rank, 4, rounds, wrapped);
    case ALLREDUCE_INT:
        return allreduce(comm, MPI_INT, rounds, wrapped);
    default:
        return allreduce(comm, MPI_DOUBLE, rounds, wrapped);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* a place rank runs its place in here and never returns */
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long rounds = argc > 1 ? atol(argv[1]) : 20000;
    const int repetitions = argc > 2 ? atoi(argv[2]) : 7;
    if (size != 2 || rounds < 1 || repetitions < 1 || repetitions > MAX_REPETITIONS) {
        if (rank == 0)
            fprintf(stderr,
                    "capture-latency: run as OTFX_PLACES=1 mpiexec -n 3 %s [rounds] [repetitions 1-%d]: "
                    "two application ranks (got %d)\n",
                    argv[0], MAX_REPETITIONS, size);
        MPI_Finalize();
        return 2;
    }
    /* PMPI_* on MPI_COMM_WORLD would be the real world, place included (only the wrappers translate
     * it): both sides run on a duplicate of the application's world. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    static double wall[FIGURES][2][MAX_REPETITIONS], cpu[FIGURES][2][MAX_REPETITIONS];
    for (int figure = 0; figure < FIGURES; figure++) {
        measure(figure, comm, rank, rounds / 10, 0); /* warm up both paths */
        measure(figure, comm, rank, rounds / 10, 1);
        for (int repetition = 0; repetition < repetitions; repetition++)
            for (int wrapped = 0; wrapped < 2; wrapped++) {
                const struct timing timing = measure(figure, comm, rank, rounds, wrapped);
                wall[figure][wrapped][repetition] = timing.wall_us;
                cpu[figure][wrapped][repetition] = timing.cpu_us;
            }
    }
    MPI_Comm_free(&comm);
    if (rank == 0) {
        const char *places = getenv("OTFX_PLACES"), *record = getenv("OTFX_RECORD");
        const char *mode = !places || atoi(places) == 0         ? "pass-through"
                           : record && strcmp(record, "0") == 0 ? "no-record"
                                                                : "recording";
        printf("mode=%s\nrounds=%ld\nrepetitions=%d\n", mode, rounds, repetitions);
        for (int figure = 0; figure < FIGURES; figure++)
            for (int wrapped = 0; wrapped < 2; wrapped++) {
                char key[64];
                snprintf(key, sizeof(key), "%s_%s_us", figure_names[figure],
                         wrapped ? "wrapped" : "untraced");
                print_figure(key, wall[figure][wrapped], repetitions);
                snprintf(key, sizeof(key), "%s_%s_cpu_us", figure_names[figure],
                         wrapped ? "wrapped" : "untraced");
                print_figure(key, cpu[figure][wrapped], repetitions);
            }
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}

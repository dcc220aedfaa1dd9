/*
 * capture_bench.c — capture-bench: what recording costs, in one run of two application ranks and one
 * place. Linked with libotfx-capture (link-time mode), run as
 *
 *   OTFX_PLACES=1 mpiexec -n 3 ./capture-bench [calls]
 *
 * and prints key=value lines (rank 0):
 *
 *   metrics                    OTFX_METRICS: the metrics read at every recorded event ("none")
 *   user_event_ns              cost per recorded user-function enter or leave in the application
 *                              process, through the real -finstrument-functions hooks: a call of a
 *                              function built with them minus a call of its twin built without, halved
 *                              (best of 3 alternating repetitions of each), timed in bursts of one
 *                              batch that the place takes in between. Includes the timer read, the
 *                              record store and the batch sends, not back-pressure.
 *   user_event_cpu_ns          the same in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): robust on a
 *                              loaded machine, where the wall-clock figures grow with the others' load
 *   user_event_sustained_ns    the same without pauses (best of 5): 40 million events as fast as the
 *                              hooks go, so a place that cannot keep up makes the rank wait
 *                              (back-pressure; the place's report shows it as blocked_ns)
 *   mpi_wrapper_event_ns       the same through the cheapest MPI wrapper: MPI_Comm_rank (one ENTER and
 *                              one LEAVE record) minus PMPI_Comm_rank, halved (adds the wrapper's
 *                              class check and MPI_COMM_WORLD translation)
 *   clock_gettime_ns           one clock_gettime(CLOCK_MONOTONIC), for comparison
 *   rdtsc_ns                   one __rdtsc() (the recorder's timer with an invariant TSC, timer.h)
 *   mpi_pair_untraced_ns       MPI_Send+MPI_Recv pair in an 8-byte ping-pong between ranks 0 and 1,
 *                              through PMPI_* directly (not traced), round trip / 2
 *   mpi_pair_traced_ns         the same through the MPI_* wrappers (recorded)
 *   mpi_call_overhead_ns       traced minus untraced (best of several alternating repetitions of each)
 *   allreduce_sum_double_untraced_ns / _traced_ns
 *                              one MPI_Allreduce of one double with MPI_SUM on the two ranks, through
 *                              PMPI_* and through the wrapper, where it runs as the blocking call behind
 *                              a steerable MPI_Ibarrier (its result depends on the order of the additions:
 *                              capture/src/steered.h) (best of several alternating repetitions)
 *   allreduce_max_int_untraced_ns / _traced_ns
 *                              the same with one int and MPI_MAX, which runs as MPI_Iallreduce + test loop
 *   otf2_event_ns              OTF2_EvtWriter_Enter/Leave per event into a real archive in /tmp (POSIX
 *                              substrate, no compression), closing the writer included (best of 3)
 *   user_event_vs_otf2         user_event_ns / otf2_event_ns (target <= 0.3)
 *   otf2_event_timed_ns        the OTF2 writer with each timestamp read from the TSC, as a tracer
 *                              writing OTF2 directly pays (best of 3)
 *   user_event_vs_otf2_timed   user_event_ns / otf2_event_timed_ns
 * The traced/untraced split happens inside one run (PMPI_* bypasses the wrappers), so both sides share
 * the same processes, placement and MPI state.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <otf2/otf2.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define PING_PONG_REPETITIONS 5
#define EVENT_REPETITIONS     5

static double read_clock_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

static double now_ns(void)
{
    return read_clock_ns(CLOCK_MONOTONIC);
}

static void fail_and_abort(const char *what)
{
    fprintf(stderr, "capture-bench: %s\n", what);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ---- application side ---------------------------------------------------------------------------- */

/* One __rdtsc() (the recorder's timer where the CPU has an invariant TSC); 0 without a TSC. */
static double rdtsc_ns(long calls)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned long long sink = 0;
    double start = now_ns();
    for (long i = 0; i < calls; i++)
        sink ^= __rdtsc();
    double elapsed = now_ns() - start;
    if (sink == 1)
        puts("");
    return elapsed / (double)calls;
#else
    (void)calls;
    return 0;
#endif
}

static double clock_gettime_ns(long calls)
{
    struct timespec sink = {0, 0};
    double start = now_ns();
    for (long i = 0; i < calls; i++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        sink.tv_nsec ^= now.tv_nsec;
    }
    double elapsed = now_ns() - start;
    if (sink.tv_nsec == -1)
        puts("");
    return elapsed / (double)calls;
}

void capture_bench_hooked_call(volatile long *counter);
void capture_bench_plain_call(volatile long *counter);

/* Nanoseconds per call of the user function built with the hooks (traced) or of its twin without, timed
 * in bursts of `burst` calls (all of them at once if 0). After each burst a 2 ms pause, not timed, lets the
 * place take the batch: bursts of about one batch (2 000 calls: 4 000 records of 24 bytes) give what
 * recording costs the application while its place keeps up, batch sends included, back-pressure
 * excluded. */
static double user_call_clock_ns(long calls, long burst, int traced, clockid_t clock)
{
    const struct timespec drain = {0, 2 * 1000 * 1000};
    volatile long counter = 0;
    void (*call)(volatile long *) = traced ? capture_bench_hooked_call : capture_bench_plain_call;
    if (burst <= 0)
        burst = calls;
    double timed = 0;
    long done = 0;
    for (; done + burst <= calls; done += burst) {
        const double start = read_clock_ns(clock);
        for (long i = 0; i < burst; i++)
            call(&counter);
        timed += read_clock_ns(clock) - start;
        if (burst < calls)
            nanosleep(&drain, NULL);
    }
    return timed / (double)done;
}

static double user_call_ns(long calls, long burst, int traced)
{
    return user_call_clock_ns(calls, burst, traced, CLOCK_MONOTONIC);
}

/* Nanoseconds per MPI_Comm_rank call, through the wrapper (traced) or straight to PMPI (untraced). */
static double comm_rank_ns(long calls, int traced)
{
    int rank = 0;
    long sum = 0;
    double start = now_ns();
    if (traced)
        for (long i = 0; i < calls; i++) {
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            sum += rank;
        }
    else
        for (long i = 0; i < calls; i++) {
            PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
            sum += rank;
        }
    double elapsed = now_ns() - start;
    if (sum < 0)
        puts("");
    return elapsed / (double)calls;
}

/* Round trip / 2 of an 8-byte ping-pong between world ranks 0 and 1 (application ranks 0 and 1 in
 * both worlds), through MPI_* (traced) or PMPI_* (untraced). */
static double ping_pong_pair_ns(int rank, long rounds, int traced)
{
    int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm) = traced ? MPI_Send : PMPI_Send;
    int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *) = traced ? MPI_Recv : PMPI_Recv;
    double message = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* the application's world: the place never joins the real one */
    double start = now_ns();
    for (long i = 0; i < rounds; i++) {
        if (rank == 0) {
            send(&message, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            recv(&message, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            recv(&message, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            send(&message, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (now_ns() - start) / (double)rounds / 2;
}

static double minimum(double a, double b)
{
    return a < b ? a : b;
}

/* One MPI_Allreduce of one element on `comm` (the application ranks), through MPI_* (traced) or
 * PMPI_*. */
static double allreduce_ns(MPI_Comm comm, long rounds, MPI_Datatype type, MPI_Op op, int traced)
{
    int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm) =
        traced ? MPI_Allreduce : PMPI_Allreduce;
    double in[1] = {1.0}, out[1] = {0.0};
    PMPI_Barrier(comm);
    double start = now_ns();
    for (long i = 0; i < rounds; i++)
        allreduce(in, out, 1, type, op, comm);
    return (now_ns() - start) / (double)rounds;
}

/* ---- OTF2 ----------------------------------------------------------------------------------------- */

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location, void *data,
                                bool final)
{
    (void)user, (void)type, (void)location, (void)data, (void) final;
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *user, OTF2_FileType type, OTF2_LocationRef location)
{
    (void)user, (void)type, (void)location;
    return 0;
}

static const OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush,
                                                    .otf2_post_flush = post_flush};

static void otf2_check(OTF2_ErrorCode code, const char *what)
{
    if (code != OTF2_SUCCESS) {
        fprintf(stderr, "capture-bench: %s: %s\n", what, OTF2_Error_GetDescription(code));
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* A tracer's timestamp for the OTF2 writer: the TSC, as the recorder reads it. */
static OTF2_TimeStamp event_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return (OTF2_TimeStamp)now_ns();
#endif
}

/* Nanoseconds per OTF2 ENTER/LEAVE event written into an archive under /tmp (removed afterwards), with
 * made-up timestamps or (timed) each read from the TSC as a tracer must. */
static double otf2_event_ns(long events, int timed)
{
    char directory[64];
    snprintf(directory, sizeof(directory), "/tmp/capture-bench-otf2-%ld", (long)getpid());
    OTF2_Archive *archive = OTF2_Archive_Open(directory, "bench", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                              OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive)
        fail_and_abort("cannot open an OTF2 archive in /tmp");
    otf2_check(OTF2_Archive_SetFlushCallbacks(archive, &flush_callbacks, NULL), "OTF2 flush callbacks");
    otf2_check(OTF2_Archive_SetSerialCollectiveCallbacks(archive), "OTF2 collective callbacks");
    otf2_check(OTF2_Archive_OpenEvtFiles(archive), "OTF2 event files");
    OTF2_EvtWriter *writer = OTF2_Archive_GetEvtWriter(archive, 0);
    if (!writer)
        fail_and_abort("no OTF2 event writer");
    double start = now_ns();
    for (long i = 0; i < events; i += 2) {
        OTF2_EvtWriter_Enter(writer, NULL, timed ? event_ticks() : (OTF2_TimeStamp)(1000 + i), 0);
        OTF2_EvtWriter_Leave(writer, NULL, timed ? event_ticks() : (OTF2_TimeStamp)(1001 + i), 0);
    }
    otf2_check(OTF2_Archive_CloseEvtWriter(archive, writer), "closing the OTF2 event writer");
    double elapsed = now_ns() - start;
    otf2_check(OTF2_Archive_CloseEvtFiles(archive), "closing the OTF2 event files");
    OTF2_GlobalDefWriter *global = OTF2_Archive_GetGlobalDefWriter(archive);
    otf2_check(OTF2_GlobalDefWriter_WriteClockProperties(global, 1000000000, 0, (uint64_t)events + 2,
                                                         OTF2_UNDEFINED_TIMESTAMP),
               "OTF2 clock properties");
    otf2_check(OTF2_Archive_CloseGlobalDefWriter(archive, global), "closing the OTF2 definitions");
    otf2_check(OTF2_Archive_Close(archive), "closing the OTF2 archive");
    char command[sizeof(directory) + 16];
    snprintf(command, sizeof(command), "rm -rf '%s'", directory); /* the archive is bench.* inside it */
    if (system(command) != 0)
        fprintf(stderr, "capture-bench: could not remove %s\n", directory);
    return elapsed / (double)events;
}

int main(int argc, char **argv)
{
    /* Throttling (on by default) would stop recording the benchmark's function after 100 000 calls and
     * measure the skip instead; OTFX_THROTTLE in the environment still wins. */
    setenv("OTFX_THROTTLE", "0", 0);
    MPI_Init(&argc, &argv); /* place ranks run their place in here and never return */
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *places = getenv("OTFX_PLACES");
    if (size != 2 || !places || atoi(places) < 1) {
        if (rank == 0)
            fprintf(stderr,
                    "capture-bench: run as OTFX_PLACES=1 mpiexec -n 3 %s [calls]: two application "
                    "ranks and a place (got %d application ranks, OTFX_PLACES=%s)\n",
                    argv[0], size, places ? places : "unset");
        MPI_Finalize();
        return 2;
    }
    const long calls = argc > 1 ? atol(argv[1]) : 2000000;
    if (calls < 1000)
        fail_and_abort("calls must be at least 1000");

    double user_event_ns = 0, user_event_cpu_ns = 0, sustained_event_ns = 0, wrapper_event_ns = 0,
           clock_ns = 0, tsc_ns = 0, otf2_ns = 1e30, otf2_timed_ns = 1e30;
    if (rank == 0) {
        clock_ns = clock_gettime_ns(calls);
        tsc_ns = rdtsc_ns(calls);
        user_call_ns(calls / 10, 0, 0); /* warm up */
        user_call_ns(calls / 10, 0, 1);
        double plain = 1e30, hooked = 1e30, untraced = 1e30, traced = 1e30;
        for (int repetition = 0; repetition < EVENT_REPETITIONS; repetition++) {
            plain = minimum(plain, user_call_ns(calls, 0, 0));
            hooked = minimum(hooked, user_call_ns(calls, 0, 1));
        }
        sustained_event_ns = (hooked - plain) / 2;
        plain = hooked = 1e30;
        for (int repetition = 0; repetition < 3; repetition++) {
            plain = minimum(plain, user_call_ns(calls / 2, 2000, 0));
            hooked = minimum(hooked, user_call_ns(calls / 2, 2000, 1));
        }
        user_event_ns = (hooked - plain) / 2;
        /* the same in the thread's CPU time: what a loaded machine's other processes do not change */
        plain = hooked = 1e30;
        for (int repetition = 0; repetition < 3; repetition++) {
            plain = minimum(plain, user_call_clock_ns(calls / 2, 2000, 0, CLOCK_THREAD_CPUTIME_ID));
            hooked = minimum(hooked, user_call_clock_ns(calls / 2, 2000, 1, CLOCK_THREAD_CPUTIME_ID));
        }
        user_event_cpu_ns = (hooked - plain) / 2;
        comm_rank_ns(calls / 10, 0);
        comm_rank_ns(calls / 10, 1);
        for (int repetition = 0; repetition < EVENT_REPETITIONS; repetition++) {
            untraced = minimum(untraced, comm_rank_ns(calls, 0));
            traced = minimum(traced, comm_rank_ns(calls, 1));
        }
        wrapper_event_ns = (traced - untraced) / 2;
    }

    const long rounds = calls / 40;
    double untraced_pair = 1e30, traced_pair = 1e30;
    ping_pong_pair_ns(rank, rounds / 10, 0);
    ping_pong_pair_ns(rank, rounds / 10, 1);
    for (int repetition = 0; repetition < PING_PONG_REPETITIONS; repetition++) {
        untraced_pair = minimum(untraced_pair, ping_pong_pair_ns(rank, rounds, 0));
        traced_pair = minimum(traced_pair, ping_pong_pair_ns(rank, rounds, 1));
    }

    /* PMPI_Allreduce on MPI_COMM_WORLD would be the real world, place included (only the wrappers
     * translate it): both sides run on a duplicate of the application's world. */
    MPI_Comm application;
    MPI_Comm_dup(MPI_COMM_WORLD, &application);
    double sum_untraced = 1e30, sum_traced = 1e30, max_untraced = 1e30, max_traced = 1e30;
    allreduce_ns(application, rounds / 10, MPI_DOUBLE, MPI_SUM, 1);
    for (int repetition = 0; repetition < PING_PONG_REPETITIONS; repetition++) {
        sum_untraced = minimum(sum_untraced, allreduce_ns(application, rounds, MPI_DOUBLE, MPI_SUM, 0));
        sum_traced = minimum(sum_traced, allreduce_ns(application, rounds, MPI_DOUBLE, MPI_SUM, 1));
        max_untraced = minimum(max_untraced, allreduce_ns(application, rounds, MPI_INT, MPI_MAX, 0));
        max_traced = minimum(max_traced, allreduce_ns(application, rounds, MPI_INT, MPI_MAX, 1));
    }
    MPI_Comm_free(&application);

    if (rank == 0) {
        for (int repetition = 0; repetition < 3; repetition++)
            otf2_ns = minimum(otf2_ns, otf2_event_ns(calls, 0));
        for (int repetition = 0; repetition < 3; repetition++)
            otf2_timed_ns = minimum(otf2_timed_ns, otf2_event_ns(calls, 1));
        /* OTFX_METRICS: the metrics read at every recorded event (docs/benchmarks.md compares 0, 1, 3) */
        const char *metrics = getenv("OTFX_METRICS");
        printf("metrics=%s\n", metrics && metrics[0] ? metrics : "none");
        printf("user_event_ns=%.1f\n", user_event_ns);
        printf("user_event_cpu_ns=%.1f\n", user_event_cpu_ns);
        printf("user_event_method=-finstrument-functions call minus uninstrumented call, per ENTER or LEAVE "
               "record\n");
        printf("user_event_sustained_ns=%.1f\n", sustained_event_ns);
        printf("mpi_wrapper_event_ns=%.1f\n", wrapper_event_ns);
        printf("clock_gettime_ns=%.1f\n", clock_ns);
        printf("rdtsc_ns=%.1f\n", tsc_ns);
        printf("timer=%s\n", getenv("OTFX_TIMER") ? getenv("OTFX_TIMER") : "default (tsc where invariant)");
        printf("mpi_pair_untraced_ns=%.1f\n", untraced_pair);
        printf("mpi_pair_traced_ns=%.1f\n", traced_pair);
        printf("mpi_call_overhead_ns=%.1f\n", traced_pair - untraced_pair);
        printf("allreduce_sum_double_untraced_ns=%.1f\n", sum_untraced);
        printf("allreduce_sum_double_traced_ns=%.1f\n", sum_traced);
        printf("allreduce_max_int_untraced_ns=%.1f\n", max_untraced);
        printf("allreduce_max_int_traced_ns=%.1f\n", max_traced);
        printf("otf2_event_ns=%.1f\n", otf2_ns);
        printf("user_event_vs_otf2=%.2f\n", user_event_ns / otf2_ns);
        printf("otf2_event_timed_ns=%.1f\n", otf2_timed_ns);
        printf("user_event_vs_otf2_timed=%.2f\n", user_event_ns / otf2_timed_ns);
        printf("target_user_event_40ns=%s\n", user_event_ns <= 40 ? "met" : "missed");
        printf("target_user_event_0.3_otf2=%s\n", user_event_ns <= 0.3 * otf2_ns ? "met" : "missed");
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}

/*
 * manual_wrappers.c — the MPI functions marked "manual" in mpi_functions.tsv: the ones that cannot
 * follow the generated pattern, and the world split done in MPI_Init / MPI_Init_thread.
 */
#include "capture_functions.h"
#include "recorder.h"
#include "runtime.h"

#include <otfx/settings.h>
#include <otfx/testpoint.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

MPI_Comm capture_app_world = MPI_COMM_WORLD;
struct capture_layout capture_layout;
int capture_own_place = -1;

/* Every rank reaches the same verdict (same environment), so rank 0 alone explains and all abort. */
/* Ends the job with exit code 2 once every rank of `comm` got here. The one who printed why waits a
 * little first: hydra's proxies stop forwarding output when the abort reaches them, and on a busy node
 * the message could still be in the pipe (seen once in a parallel ctest run). */
static _Noreturn void abort_job(MPI_Comm comm, bool printed)
{
    if (printed) {
        const struct timespec forward_output = {0, 250 * 1000 * 1000};
        nanosleep(&forward_output, NULL);
    }
    PMPI_Barrier(comm);
    PMPI_Abort(MPI_COMM_WORLD, 2);
    abort(); /* not reached: PMPI_Abort does not return */
}

static _Noreturn void configuration_error(int world_rank, const char *message, const char *value)
{
    if (world_rank == 0)
        fprintf(stderr, "otfx-capture: %s%s\n", message, value ? value : "");
    abort_job(MPI_COMM_WORLD, world_rank == 0);
}

/* MPMD mode (`mpiexec -n N ./app : -n P otfx-place`): the ranks of another program than rank 0's are
 * places. Costs two collectives in MPI_Init when OTFX_PLACES is unset. */
static int mpmd_place_count(int world_rank, int world_size)
{
    int *appnum = NULL, found = 0, my_app = 0, first_app = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &found);
    if (found && appnum)
        my_app = *appnum;
    first_app = my_app;
    PMPI_Bcast(&first_app, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int is_place = my_app != first_app;
    int counts[2] = {is_place, 0}, totals[2];
    PMPI_Allreduce(counts, totals, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int places = totals[0];
    /* The places must be the last ranks (the last program on the mpiexec line). */
    counts[1] = is_place && world_rank < world_size - places;
    PMPI_Allreduce(&counts[1], &totals[1], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (totals[1])
        configuration_error(world_rank,
                            "in MPMD mode the places must be the last program on the mpiexec line", NULL);
    return places;
}

/* A setting with an invalid value (settings.tsv's message for it) stops the job. */
static void check_setting(int world_rank, otfx_setting setting)
{
    const char *problem = otfx_setting_problem(setting);
    if (problem)
        configuration_error(world_rank, problem, NULL);
}

static int configured_place_count(int world_rank, int world_size, const char **reason)
{
    if (!otfx_setting_is_set(OTFX_SETTING_PLACES)) {
        *reason = "OTFX_PLACES unset";
        return mpmd_place_count(world_rank, world_size);
    }
    check_setting(world_rank, OTFX_SETTING_PLACES);
    const long long places = otfx_setting_integer(OTFX_SETTING_PLACES);
    if (places >= world_size)
        configuration_error(
            world_rank, "OTFX_PLACES leaves no application rank: use mpiexec -n N+P for N ranks and P places",
            NULL);
    *reason = "OTFX_PLACES=0";
    return (int)places;
}

/* OTFX_FANIN: the tool tree's fan-in (tbon.h), default 16; at least 2. */
_Static_assert(OTFX_SETTING_FANIN_DEFAULT == OTFX_TBON_DEFAULT_FANIN,
               "settings.tsv and otfx/tbon.h differ on the default fan-in");
static uint32_t configured_fanin(int world_rank)
{
    check_setting(world_rank, OTFX_SETTING_FANIN);
    return (uint32_t)otfx_setting_integer(OTFX_SETTING_FANIN);
}

/* Before PMPI_Init: whether this process will be a place of an OTFX_PLACES job (the last P of
 * PMI_SIZE ranks, as hydra numbers them). Places initialise MPI with MPI_THREAD_MULTIPLE (their MPI,
 * worker and snapshot threads); MPMD places (otfx-place) ask for it themselves. Anything unusual
 * (no PMI variables, a malformed OTFX_PLACES) answers no: the world split then decides as before. */
static bool place_before_init(void)
{
    const char *rank = getenv("PMI_RANK"), *size = getenv("PMI_SIZE"); /* hydra's, not otfx's */
    if (!otfx_setting_is_set(OTFX_SETTING_PLACES) || otfx_setting_problem(OTFX_SETTING_PLACES) || !rank ||
        !size)
        return false;
    char *end_rank = NULL, *end_size = NULL;
    const long long p = otfx_setting_integer(OTFX_SETTING_PLACES);
    const long r = strtol(rank, &end_rank, 10), n = strtol(size, &end_size, 10);
    if (*end_rank || *end_size || p <= 0 || r < 0 || n <= p)
        return false;
    return r >= n - p;
}

/* OTFX_START_PAUSED=1: the application ranks block at the end of MPI_Init until APP_RESUME. */
static bool start_paused(int world_rank)
{
    check_setting(world_rank, OTFX_SETTING_START_PAUSED);
    return otfx_setting_bool(OTFX_SETTING_START_PAUSED);
}

/* OTFX_RECORD=0 starts the application ranks with recording off (otfx-run --no-record); unset or 1: on. */
static bool record_at_start(int world_rank)
{
    check_setting(world_rank, OTFX_SETTING_RECORD);
    return otfx_setting_bool(OTFX_SETTING_RECORD);
}

/* OTFX_DISABLE=CLASSES (otfx-run --disable): event classes to start with disabled, a comma list of p2p,
 * collective, mpi-other, user and all (the names of otfxctl's `disable`); unset or empty: none. */
static uint32_t enabled_classes_at_start(int world_rank)
{
    static const uint32_t class_bits[] = {[OTFX_SETTING_DISABLE_P2P] = CAPTURE_CLASS_P2P,
                                          [OTFX_SETTING_DISABLE_COLLECTIVE] = CAPTURE_CLASS_COLLECTIVE,
                                          [OTFX_SETTING_DISABLE_MPI_OTHER] = CAPTURE_CLASS_OTHER_MPI,
                                          [OTFX_SETTING_DISABLE_USER] = CAPTURE_CLASS_USER,
                                          [OTFX_SETTING_DISABLE_ALL] = CAPTURE_CLASS_ALL};
    check_setting(world_rank, OTFX_SETTING_DISABLE);
    const uint32_t named = otfx_setting_list(OTFX_SETTING_DISABLE);
    uint32_t disabled = 0;
    for (size_t i = 0; i < sizeof(class_bits) / sizeof(class_bits[0]); i++)
        if (named & (1u << i))
            disabled |= class_bits[i];
    return CAPTURE_CLASS_ALL & ~disabled;
}

/* OTFX_CLOCK_SYNC=SECONDS: how often a rank re-measures its clock against its place's (default 10, 0:
 * only at MPI_Init; fractions allowed). */
static double clock_sync_seconds(int world_rank)
{
    check_setting(world_rank, OTFX_SETTING_CLOCK_SYNC);
    return otfx_setting_seconds(OTFX_SETTING_CLOCK_SYNC);
}

/* OTFX_BACKPRESSURE: what a thread does when its batch is full and the previous one has not left yet:
 * `block` (unset or empty too) waits, nothing is lost and the time is reported as blocked_ns; `drop`
 * never waits, drops the events meanwhile and tells the place how many (recorder.h). */
static bool drop_when_full(int world_rank)
{
    check_setting(world_rank, OTFX_SETTING_BACKPRESSURE);
    return otfx_setting_choice(OTFX_SETTING_BACKPRESSURE) == OTFX_SETTING_BACKPRESSURE_DROP;
}

/* Whether this rank's place runs on its node (the clock offset's ping-pong says so). */
static bool place_on_this_node;

/* The processor name sent with each clock ping: the place compares it with its own. A test names
 * another node (OTFX_TEST_REMOTE_PLACE=1) so that one machine exercises the cross-node path: offsets
 * and re-synchronisations measured by ping-pong instead of taken from the shared CLOCK_MONOTONIC. */
static void clock_ping_name(char name[MPI_MAX_PROCESSOR_NAME + 2], int *length)
{
    if (otfx_testpoint_enabled(OTFX_SETTING_TEST_REMOTE_PLACE)) {
        static const char other_node[] = "otfx-test-remote-node";
        memcpy(name, other_node, sizeof(other_node));
        *length = (int)sizeof(other_node) - 1;
        return;
    }
    PMPI_Get_processor_name(name, length);
}

/* The ping-pong with the shortest round trip of a burst (otfx/capture_wire.h, CAPTURE_SYNC_TAG), timed with
 * `read_clock`: its middle and round trip on that clock, the place's clock when it answered, and whether
 * the place shares this node's clock. */
struct clock_ping {
    uint64_t middle, round_trip, place_ns;
    bool same_node;
};

static struct clock_ping ping_burst(int place, int pings, uint64_t (*read_clock)(void))
{
    char name[MPI_MAX_PROCESSOR_NAME + 2 + sizeof(int32_t)] = {0};
    int length = 0;
    clock_ping_name(name, &length);
    const int32_t pid = (int32_t)getpid(); /* the place watches this process by it (otfx/capture_wire.h) */
    memcpy(name + length + 2, &pid, sizeof(pid));
    struct clock_ping best = {.round_trip = UINT64_MAX};
    for (int i = 0; i < pings; i++) {
        uint64_t answer[2] = {0, 0};
        name[length + 1] = (char)(unsigned char)(pings - 1 - i); /* pings of the burst still to come */
        const uint64_t sent = read_clock();
        PMPI_Send(name, length + 2 + (int)sizeof(pid), MPI_CHAR, place, CAPTURE_SYNC_TAG, capture_tool_comm);
        PMPI_Recv(answer, 2, MPI_UINT64_T, place, CAPTURE_SYNC_TAG, capture_tool_comm, MPI_STATUS_IGNORE);
        const uint64_t received = read_clock();
        best.same_node = answer[1] != 0;
        if (received - sent < best.round_trip)
            best =
                (struct clock_ping){sent + (received - sent) / 2, received - sent, answer[0], best.same_node};
    }
    return best;
}

/* Round trips to a place on another node: a ping answered late (the place busy ingesting, either side
 * descheduled) puts the place's time off-centre by up to half its round trip, so only round trips
 * close to the shortest seen count. */
static uint64_t shortest_round_trip_ns = UINT64_MAX;
/* Before any round trip is known, 50 µs: a cluster's interconnect takes a few µs, TCP tens. */
enum { ROUND_TRIP_SLACK_NS = 10 * 1000, FIRST_ROUND_TRIP_NS = 50 * 1000 };
/* Re-synchronisations rejected in a row: each doubles what is accepted, up to 16 times the usual, since
 * on a busy node (more ranks than cores) no round trip may come close to the shortest for a while, and a
 * rough measurement beats letting the drift grow; a worse one would do more harm than the drift. */
static unsigned rejected_in_a_row;
enum { MAX_DOUBLINGS = 4 };

/* Whether a round trip is short enough to trust; one that is becomes the new shortest. */
static bool round_trip_acceptable(uint64_t round_trip_ns, unsigned doublings)
{
    const uint64_t base = shortest_round_trip_ns == UINT64_MAX
                              ? (uint64_t)FIRST_ROUND_TRIP_NS
                              : 2 * shortest_round_trip_ns + ROUND_TRIP_SLACK_NS;
    if (round_trip_ns > base << (doublings < MAX_DOUBLINGS ? doublings : MAX_DOUBLINGS))
        return false;
    if (round_trip_ns < shortest_round_trip_ns)
        shortest_round_trip_ns = round_trip_ns;
    return true;
}

/* The place's CLOCK_MONOTONIC minus this rank's: of bursts of 10 ping-pongs with the place (up to 8, until
 * one round trip is acceptable), the one with the smallest round trip, offset = place_time - (t_send +
 * t_recv) / 2 (exact up to the asymmetry of that round trip). Each ping carries this rank's processor
 * name; a place on the same node says so and the offset is 0 exactly (one CLOCK_MONOTONIC per node). */
static void measure_place_offset(int app_rank)
{
    enum { PINGS = 10, BURSTS = 8 };
    struct clock_ping best = {.round_trip = UINT64_MAX};
    for (unsigned burst = 0; burst < BURSTS; burst++) {
        const struct clock_ping ping = ping_burst(capture_place_of(app_rank), PINGS, capture_monotonic_ns);
        if (ping.round_trip < best.round_trip)
            best = ping;
        if (ping.same_node || round_trip_acceptable(best.round_trip, burst))
            break;
    }
    place_on_this_node = best.same_node;
    if (!best.same_node && best.round_trip < shortest_round_trip_ns) /* none acceptable: still the best */
        shortest_round_trip_ns = best.round_trip;
    capture_timer_set_offset(best.same_node ? 0 : (int64_t)best.place_ns - (int64_t)best.middle);
}

/* The place's clock minus this rank's tick-derived time (otfx/capture_wire.h's capture_clock_record), now.
 * Same node: one CLOCK_MONOTONIC, so no message: a reference pair. Else the ping-pong with the smallest
 * round trip of 5; false when even that one took too long to be trusted (the caller tries again soon,
 * accepting twice as long a round trip). */
bool capture_measure_correction(uint64_t *at_ticks, int64_t *correction_ns)
{
    if (place_on_this_node) {
        uint64_t ns = 0;
        capture_timer_reference_pair(at_ticks, &ns);
        *correction_ns = (int64_t)((double)ns - capture_timer_local_ns(*at_ticks));
        return true;
    }
    const struct clock_ping ping = ping_burst(capture_own_place, 5, capture_ticks);
    const double ns_per_tick = capture_timer_tsc ? capture_timer_calibration().ns_per_tick : 1.0;
    if (!round_trip_acceptable((uint64_t)((double)ping.round_trip * ns_per_tick), rejected_in_a_row)) {
        rejected_in_a_row++;
        return false;
    }
    rejected_in_a_row = 0;
    *at_ticks = ping.middle;
    *correction_ns = (int64_t)((double)ping.place_ns - capture_timer_local_ns(ping.middle));
    return true;
}

/* The ranks of one node read one TSC: calibrated separately, their rates would differ by the measurement's
 * error (about 0.5 ppm over 20 ms, microseconds of drift within seconds) and their messages invert. So
 * the node's first rank measures and the others install the same calibration. On a communicator of the
 * node's application ranks split off the application's world (a collective the application cannot
 * observe: it is done before MPI_Init returns and matches no point-to-point message), freed at once.
 * A rank whose timer differs from the first one's (OTFX_TIMER set differently) measures its own. */
static void calibrate_per_node(int world_rank)
{
    MPI_Comm node;
    int node_rank = 0;
    if (PMPI_Comm_split_type(capture_app_world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS) {
        const struct capture_clock_calibration own = capture_timer_measure(20 * 1000 * 1000);
        capture_timer_install(&own, world_rank);
        return;
    }
    PMPI_Comm_rank(node, &node_rank);
    struct capture_clock_calibration measured = {.ns_per_tick = 1.0};
    if (node_rank == 0)
        measured = capture_timer_measure(20 * 1000 * 1000); /* 20 ms against CLOCK_MONOTONIC */
    uint64_t shared[4] = {capture_timer_tsc, 0, measured.ref_ticks, measured.ref_ns};
    memcpy(&shared[1], &measured.ns_per_tick, sizeof(double));
    PMPI_Bcast(shared, 4, MPI_UINT64_T, 0, node);
    PMPI_Comm_free(&node);
    if (node_rank != 0) {
        if (shared[0] == (uint64_t)capture_timer_tsc) {
            memcpy(&measured.ns_per_tick, &shared[1], sizeof(double));
            measured.ref_ticks = shared[2];
            measured.ref_ns = shared[3];
        } else {
            measured = capture_timer_measure(20 * 1000 * 1000);
        }
    }
    capture_timer_install(&measured, world_rank);
}

/* Splits the world after PMPI_Init: application ranks return with capture_app_world set, places run the
 * place loop and never return. Returns whether MPI_Init's ENTER was recorded (its LEAVE must be then,
 * whatever steering did meanwhile, e.g. with OTFX_START_PAUSED). */
static bool split_world(int init_function, uint64_t init_entered, const char *timer_problem, int provided)
{
    int world_rank = 0, world_size = 0;
    const char *reason = "";
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int places = configured_place_count(world_rank, world_size, &reason);
    const bool recording = record_at_start(world_rank);
    const uint32_t classes = enabled_classes_at_start(world_rank);
    capture_layout.world_size = world_size;
    capture_layout.place_count = places;
    capture_layout.app_size = world_size - places;
    if (places == 0) {
        if (world_rank == 0)
            fprintf(stderr, "otfx-capture: no places configured (%s): passing MPI calls through untraced\n",
                    reason);
        return false;
    }
    const uint32_t fanin = configured_fanin(world_rank);
    const bool paused_at_start = start_paused(world_rank);
    const bool drop = drop_when_full(world_rank);
    const double clock_sync = clock_sync_seconds(world_rank);
    char layout_problem[256];
    if (!otfx_tbon_layout_init(&capture_layout.tree, (uint32_t)capture_layout.app_size, (uint32_t)places,
                               fanin, layout_problem, sizeof(layout_problem)))
        configuration_error(world_rank, "no tool tree for this job: ", layout_problem);

    const bool is_place = world_rank >= capture_layout.app_size;
    MPI_Comm own_side;
    PMPI_Comm_split(MPI_COMM_WORLD, is_place, world_rank, &own_side);
    PMPI_Comm_dup(MPI_COMM_WORLD, &capture_tool_comm);
    if (is_place)
        capture_place_loop(world_rank, own_side, provided); /* the places' communicator is theirs */
    capture_app_world = own_side;
    capture_own_place = capture_place_of(world_rank);
    if (timer_problem) {
        if (world_rank == 0)
            fprintf(stderr, "otfx-capture: %s: aborting\n", timer_problem);
        abort_job(capture_app_world, world_rank == 0);
    }
    calibrate_per_node(world_rank);
    measure_place_offset(world_rank);
    if (!capture_user_functions_start(world_rank)) {
        abort_job(capture_app_world, true);
    }
    capture_recorder_start(world_rank, recording, drop);
    capture_dying_install();
    capture_threads_concurrent = provided == MPI_THREAD_MULTIPLE; /* locks: requests.c, communicators.c */
    capture_send_load_map(); /* before any record that names a user function */
    const bool record_init = recording && (classes & CAPTURE_CLASS_OTHER_MPI);
    if (record_init)
        capture_enter_at(init_function, init_entered);
    capture_comm_lookup(capture_app_world); /* defines the application's world as communicator 0 */
    /* Last: with OTFX_START_PAUSED the rank blocks in here until its place resumes it. */
    capture_control_set_clock_sync(clock_sync);
    capture_control_start(world_rank, provided, recording, classes, paused_at_start);
    return record_init;
}

int MPI_Init(int *argc, char ***argv)
{
    const char *timer_problem = capture_timer_select();
    const uint64_t entered = capture_now();
    int provided = MPI_THREAD_SINGLE;
    int result = place_before_init() ? PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided)
                                     : PMPI_Init(argc, argv);
    if (result != MPI_SUCCESS)
        return result;
    PMPI_Query_thread(&provided);
    if (split_world(CAPTURE_FN_MPI_Init, entered, timer_problem, provided))
        capture_leave(CAPTURE_FN_MPI_Init);
    return result;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    const char *timer_problem = capture_timer_select();
    const uint64_t entered = capture_now();
    if (place_before_init())
        required = MPI_THREAD_MULTIPLE;
    int result = PMPI_Init_thread(argc, argv, required, provided);
    if (result != MPI_SUCCESS)
        return result;
    if (split_world(CAPTURE_FN_MPI_Init_thread, entered, timer_problem, *provided))
        capture_leave(CAPTURE_FN_MPI_Init_thread);
    return result;
}

int MPI_Finalize(void)
{
    if (capture_has_place) {
        capture_control_stop(); /* no command is carried out from here on */
        /* The leave is recorded before the real finalize: afterwards nothing can be sent. */
        if (capture_records(CAPTURE_CLASS_OTHER_MPI)) {
            capture_enter_at(CAPTURE_FN_MPI_Finalize, capture_now());
            capture_leave(CAPTURE_FN_MPI_Finalize);
        }
        capture_timer_recalibrate(); /* the goodbye batch carries the rate over the whole run */
        int app_rank = 0;
        PMPI_Comm_rank(capture_app_world, &app_rank);
        measure_place_offset(app_rank);
        capture_recorder_finish();
    }
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (capture_records(CAPTURE_CLASS_OTHER_MPI))
        capture_enter_at(CAPTURE_FN_MPI_Abort, capture_now());
    /* The places write the trace and end the job with this error code themselves (dying.c). */
    if (capture_has_place)
        capture_dying_abort(errorcode);
    /* The application's world is the whole job to the application: the places go down with it. */
    if (comm == MPI_COMM_WORLD || comm == capture_app_world)
        comm = MPI_COMM_WORLD;
    return PMPI_Abort(comm, errorcode);
}

int MPI_Pcontrol(const int level, ...)
{
    if (!capture_records(CAPTURE_CLASS_OTHER_MPI) ||
        !capture_enter(CAPTURE_FN_MPI_Pcontrol, CAPTURE_CLASS_OTHER_MPI)) {
        capture_untraced_check();
        return PMPI_Pcontrol(level);
    }
    capture_phase(CAPTURE_FN_MPI_Pcontrol, level);
    int result = PMPI_Pcontrol(level);
    capture_leave(CAPTURE_FN_MPI_Pcontrol);
    return result;
}

static bool is_world_only_attribute(int keyval)
{
    return keyval == MPI_TAG_UB || keyval == MPI_HOST || keyval == MPI_IO || keyval == MPI_WTIME_IS_GLOBAL ||
           keyval == MPI_UNIVERSE_SIZE || keyval == MPI_LASTUSEDCODE || keyval == MPI_APPNUM;
}

/* Predefined attributes live on the real MPI_COMM_WORLD only; the universe shrinks by the places. */
static int get_attribute(int (*real_get)(MPI_Comm, int, void *, int *), MPI_Comm comm, int keyval,
                         void *attribute_val, int *flag)
{
    static int application_universe;
    if (comm != MPI_COMM_WORLD || !is_world_only_attribute(keyval))
        return real_get(capture_application_comm(comm), keyval, attribute_val, flag);
    int result = real_get(MPI_COMM_WORLD, keyval, attribute_val, flag);
    if (result == MPI_SUCCESS && *flag && keyval == MPI_UNIVERSE_SIZE && capture_layout.place_count > 0) {
        int *universe = *(int **)attribute_val;
        application_universe = *universe - capture_layout.place_count;
        *(int **)attribute_val = &application_universe;
    }
    return result;
}

int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    if (!capture_records(CAPTURE_CLASS_OTHER_MPI) ||
        !capture_enter(CAPTURE_FN_MPI_Comm_get_attr, CAPTURE_CLASS_OTHER_MPI)) {
        capture_untraced_check();
        return get_attribute(PMPI_Comm_get_attr, comm, comm_keyval, attribute_val, flag);
    }
    int result = get_attribute(PMPI_Comm_get_attr, comm, comm_keyval, attribute_val, flag);
    capture_leave(CAPTURE_FN_MPI_Comm_get_attr);
    return result;
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    if (!capture_records(CAPTURE_CLASS_OTHER_MPI) ||
        !capture_enter(CAPTURE_FN_MPI_Attr_get, CAPTURE_CLASS_OTHER_MPI)) {
        capture_untraced_check();
        return get_attribute(PMPI_Attr_get, comm, keyval, attribute_val, flag);
    }
    int result = get_attribute(PMPI_Attr_get, comm, keyval, attribute_val, flag);
    capture_leave(CAPTURE_FN_MPI_Attr_get);
    return result;
}

/* mpi_f08's MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are objects in libmpichfort (declared by mpi.h);
 * weak, so that C programs without the Fortran library still load us. */
#pragma weak MPIR_F08_MPI_STATUS_IGNORE_OBJ
#pragma weak MPIR_F08_MPI_STATUSES_IGNORE_OBJ

const void *capture_f08_status_ignore(void)
{
    return &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
}

const void *capture_f08_statuses_ignore(void)
{
    return MPIR_F08_MPI_STATUSES_IGNORE_OBJ;
}

/* mpi_f08's MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are integer module variables of libmpichfort; the
 * program passes their addresses. Weak for the same reason as above (NULL without Fortran). */
extern int capture_f08_unweighted __asm__("__mpi_f08_link_constants_MOD_mpi_unweighted")
    __attribute__((weak));
extern int capture_f08_weights_empty __asm__("__mpi_f08_link_constants_MOD_mpi_weights_empty")
    __attribute__((weak));

int *capture_f08_weights(const int *weights)
{
    if (weights && weights == &capture_f08_unweighted)
        return MPI_UNWEIGHTED;
    if (weights && weights == &capture_f08_weights_empty)
        return MPI_WEIGHTS_EMPTY;
    return (int *)weights;
}

/*
 * manual_wrappers.c — the configuration read in MPI_Init (OTFX_* settings; configuration.h hands it to
 * the world split) and the MPI functions marked "manual" in mpi_functions.tsv that cannot follow the
 * generated pattern: MPI_Finalize, MPI_Abort, MPI_Pcontrol, the attribute getters. MPI_Init and
 * MPI_Init_thread are the world split (world_split.c).
 */
#include "capture_functions.h"
#include "clock_sync.h"
#include "configuration.h"
#include "control.h"
#include "dying.h"
#include "metric_table.h"
#include "nesting.h"
#include "recorder.h"
#include "timer.h"
#include "user_functions.h"
#include "world.h"

#include <otfx/settings.h>
#include <otfx/support/quiet_abort.h>
#include <otfx/testpoint.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    otfx_quiet_stderr_before_abort();
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

/* OTFX_METRICS=LIST: the metrics read at every recorded enter and leave (metrics.h); an unknown name stops
 * the job, a metric this machine cannot count is said at run time and left out. */
static uint64_t metrics_at_start(int world_rank)
{
    uint64_t mask = 0;
    char why[256];
    check_setting(world_rank, OTFX_SETTING_METRICS_SAMPLE); /* only 0: sampling between events is refused */
    if (!otfx_metric_parse_list(otfx_setting_string(OTFX_SETTING_METRICS), &mask, why, sizeof why))
        configuration_error(world_rank, "OTFX_METRICS: ", why);
    return mask;
}

/* The configuration as the world split reads it (configuration.h). */
void capture_read_configuration(int world_rank, int world_size, struct capture_configuration *configuration)
{
    configuration->places = configured_place_count(world_rank, world_size, &configuration->places_reason);
    configuration->recording = record_at_start(world_rank);
    configuration->classes = enabled_classes_at_start(world_rank);
    if (configuration->places == 0)
        return; /* pass-through: the other settings do not matter */
    configuration->fanin = configured_fanin(world_rank);
    configuration->start_paused = start_paused(world_rank);
    configuration->drop_when_full = drop_when_full(world_rank);
    configuration->clock_sync_seconds = clock_sync_seconds(world_rank);
    configuration->metrics = metrics_at_start(world_rank);
}

bool capture_place_before_init(void)
{
    return place_before_init();
}

void capture_configuration_error(int world_rank, const char *message, const char *value)
{
    configuration_error(world_rank, message, value);
}

void capture_abort_job(MPI_Comm comm, bool printed)
{
    abort_job(comm, printed);
}

int MPI_Finalize(void)
{
    if (capture_has_place && !capture_inside_tool()) {
        capture_tool_enter();   /* the goodbye is the tool's (nesting.h) */
        capture_control_stop(); /* no command is carried out from here on */
        /* The leave is recorded before the real finalize: afterwards nothing can be sent. */
        if (capture_records(CAPTURE_CLASS_OTHER_MPI)) {
            capture_enter_at(CAPTURE_FN_MPI_Finalize, capture_now());
            capture_leave(CAPTURE_FN_MPI_Finalize);
        }
        capture_timer_recalibrate(); /* the goodbye batch carries the rate over the whole run */
        int app_rank = 0;
        PMPI_Comm_rank(capture_app_world, &app_rank);
        capture_measure_place_offset(app_rank);
        capture_user_functions_report_skipped(); /* the throttled functions' counts, before the goodbye */
        capture_recorder_finish();
        capture_tool_exit();
    }
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    /* Inside the tool (an error handler MPI called from the tool's own MPI call) the abort is not
     * recorded, but the places still get the records and write the trace: a dying rank is sent off
     * from wherever it was (dying.c), as from a signal. */
    if (capture_records(CAPTURE_CLASS_OTHER_MPI) && !capture_inside_tool())
        capture_enter_at(CAPTURE_FN_MPI_Abort, capture_now());
    /* The places write the trace and end the job with this error code themselves (dying.c). */
    if (capture_has_place) {
        capture_tool_enter();
        capture_dying_abort(errorcode);
        capture_tool_exit();
    }
    /* The application's world is the whole job to the application: the places go down with it. */
    if (comm == MPI_COMM_WORLD || comm == capture_app_world)
        comm = MPI_COMM_WORLD;
    return PMPI_Abort(comm, errorcode);
}

int MPI_Pcontrol(const int level, ...)
{
    if (capture_inside_tool())
        return PMPI_Pcontrol(level);
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
    if (capture_inside_tool())
        return get_attribute(PMPI_Comm_get_attr, comm, comm_keyval, attribute_val, flag);
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
    if (capture_inside_tool())
        return get_attribute(PMPI_Attr_get, comm, keyval, attribute_val, flag);
    if (!capture_records(CAPTURE_CLASS_OTHER_MPI) ||
        !capture_enter(CAPTURE_FN_MPI_Attr_get, CAPTURE_CLASS_OTHER_MPI)) {
        capture_untraced_check();
        return get_attribute(PMPI_Attr_get, comm, keyval, attribute_val, flag);
    }
    int result = get_attribute(PMPI_Attr_get, comm, keyval, attribute_val, flag);
    capture_leave(CAPTURE_FN_MPI_Attr_get);
    return result;
}

/*
 * world_split.c — MPI_Init and MPI_Init_thread: after PMPI_Init the real MPI_COMM_WORLD is split into the
 * application's ranks, which go on with the tool set up (clock, recorder, steering), and the places,
 * which are handed over to the place (place_start.h) and never return (capture/README.md, "World split").
 */
#include "capture_functions.h"
#include "clock_sync.h"
#include "communicators.h"
#include "configuration.h"
#include "control.h"
#include "dying.h"
#include "metrics.h"
#include "nesting.h"
#include "overhead.h"
#include "place_start.h"
#include "recorder.h"
#include "timer.h"
#include "transport.h"
#include "user_functions.h"
#include "world.h"

#include <stdio.h>

/* A place rank leaves the application here for good: the place (assembly/, the only code that knows
 * both capture and the places) runs the place of the tool tree and ends the process. It runs inside the
 * tool (nesting.h): whatever MPI it calls through the wrappers goes straight to PMPI. */
static _Noreturn void hand_over_to_place(int world_rank, MPI_Comm places_comm, int thread_provided)
{
    const struct capture_place_start start = {
        .tool_comm = capture_tool_comm,
        .world_rank = world_rank,
        .places_comm = places_comm, /* the places' communicator is theirs */
        .thread_provided = thread_provided,
        .layout = &capture_layout.tree,
        .app_size = capture_layout.app_size,
        .function_names = capture_function_names,
        .function_classes = capture_function_classes,
        .function_count = CAPTURE_FUNCTION_COUNT,
    };
    capture_run_place(&start);
}

/* Splits the world after PMPI_Init: application ranks return with capture_app_world set, places run the
 * place loop and never return. Returns whether MPI_Init's ENTER was recorded (its LEAVE must be then,
 * whatever steering did meanwhile, e.g. with OTFX_START_PAUSED). */
static bool split_world(int init_function, uint64_t init_entered, const char *timer_problem, int provided)
{
    int world_rank = 0, world_size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    struct capture_configuration configuration = {0};
    capture_read_configuration(world_rank, world_size, &configuration);
    const int places = configuration.places;
    capture_layout.world_size = world_size;
    capture_layout.place_count = places;
    capture_layout.app_size = world_size - places;
    if (places == 0) {
        if (world_rank == 0)
            fprintf(stderr, "otfx-capture: no places configured (%s): passing MPI calls through untraced\n",
                    configuration.places_reason);
        return false;
    }
    char layout_problem[256];
    if (!otfx_tbon_layout_init(&capture_layout.tree, (uint32_t)capture_layout.app_size, (uint32_t)places,
                               configuration.fanin, layout_problem, sizeof(layout_problem)))
        capture_configuration_error(world_rank, "no tool tree for this job: ", layout_problem);

    const bool is_place = world_rank >= capture_layout.app_size;
    MPI_Comm own_side;
    PMPI_Comm_split(MPI_COMM_WORLD, is_place, world_rank, &own_side);
    PMPI_Comm_dup(MPI_COMM_WORLD, &capture_tool_comm);
    if (is_place)
        hand_over_to_place(world_rank, own_side, provided);
    capture_app_world = own_side;
    capture_own_place = capture_place_of(world_rank);
    if (timer_problem) {
        if (world_rank == 0)
            fprintf(stderr, "otfx-capture: %s: aborting\n", timer_problem);
        capture_abort_job(capture_app_world, world_rank == 0);
    }
    capture_calibrate_per_node(world_rank);
    capture_measure_place_offset(world_rank);
    if (!capture_user_functions_start(world_rank)) {
        capture_abort_job(capture_app_world, true);
    }
    /* The recorder reaches steering and the load map only through these (recorder.h). */
    const struct capture_recorder_hooks recorder_hooks = {
        .check = capture_control_check,
        .flush_due = capture_control_flush_due,
        .load_map_changed = capture_load_map_changed,
        .write_load_map = capture_write_load_map,
        .check_at_flush = capture_control_check_at_flush,
        .before_flushed_send = capture_user_functions_report_skipped,
    };
    capture_recorder_start(world_rank, configuration.recording, configuration.drop_when_full,
                           &recorder_hooks);
    capture_overhead_start(); /* the first record: the place knows the costs before any event */
    capture_metrics_start(world_rank, configuration.metrics); /* after: the measurement writes no metrics */
    capture_dying_install();
    capture_threads_concurrent = provided == MPI_THREAD_MULTIPLE; /* locks: requests.c, communicators.c */
    capture_send_load_map(); /* before any record that names a user function */
    const bool record_init = configuration.recording && (configuration.classes & CAPTURE_CLASS_OTHER_MPI);
    if (record_init)
        capture_enter_at(init_function, init_entered);
    capture_comm_lookup(capture_app_world); /* defines the application's world as communicator 0 */
    /* Last: with OTFX_START_PAUSED the rank blocks in here until its place resumes it. */
    capture_control_set_clock_sync(configuration.clock_sync_seconds);
    capture_control_start(world_rank, provided, configuration.recording, configuration.classes,
                          configuration.start_paused);
    return record_init;
}

int MPI_Init(int *argc, char ***argv)
{
    const char *timer_problem = capture_timer_select();
    const uint64_t entered = capture_now();
    int provided = MPI_THREAD_SINGLE;
    int result = capture_place_before_init() ? PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided)
                                             : PMPI_Init(argc, argv);
    if (result != MPI_SUCCESS)
        return result;
    PMPI_Query_thread(&provided);
    capture_tool_enter(); /* the world split is the tool's (nesting.h) */
    const bool recorded = split_world(CAPTURE_FN_MPI_Init, entered, timer_problem, provided);
    capture_tool_exit();
    if (recorded)
        capture_leave(CAPTURE_FN_MPI_Init);
    return result;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    const char *timer_problem = capture_timer_select();
    const uint64_t entered = capture_now();
    if (capture_place_before_init())
        required = MPI_THREAD_MULTIPLE;
    int result = PMPI_Init_thread(argc, argv, required, provided);
    if (result != MPI_SUCCESS)
        return result;
    capture_tool_enter();
    const bool recorded = split_world(CAPTURE_FN_MPI_Init_thread, entered, timer_problem, *provided);
    capture_tool_exit();
    if (recorded)
        capture_leave(CAPTURE_FN_MPI_Init_thread);
    return result;
}

/*
 * place_start.c — a place rank handed over by the world split (capture/src/place_start.h) runs its place
 * of the tool tree (places/, otfx/place.h) and never returns to the program. Event places serve the
 * block of application ranks the layout (otfx/tbon.h) gives them; analysis places serve none and run
 * only their part of the tree; the root also serves clients.
 */
#define _POSIX_C_SOURCE 200809L /* quiet_abort.h: open, dup2 */
#include "place_start.h"

#include <otfx/place.h>
#include <otfx/support/quiet_abort.h>

#include <stdlib.h>

void capture_run_place(const struct capture_place_start *start)
{
    const uint32_t index = (uint32_t)(start->world_rank - start->app_size);
    uint32_t first = 0, count = 0;
    otfx_tbon_served(start->layout, index, &first, &count);
    otfx_event_place_setup setup = {
        .tool_comm = start->tool_comm,
        .place_rank = start->world_rank,
        .first_served = (int)first,
        .served_count = (int)count,
        .functions = {start->function_names, start->function_classes, start->function_count},
        .places_comm = start->places_comm,
        .layout = start->layout,
        .place_index = (int)index,
        .thread_provided = start->thread_provided,
    };
    otfx_place_settings_from_env(&setup.settings);
    int result = otfx_event_place_run(&setup);
    if (result != 0) { /* a wrong setting: the whole job stops, as it said why */
        otfx_quiet_stderr_before_abort();
        PMPI_Abort(MPI_COMM_WORLD, result);
    }
    MPI_Comm places_comm = start->places_comm;
    if (places_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&places_comm);
    PMPI_Finalize();
    exit(0);
}

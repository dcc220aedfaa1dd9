/*
 * place.c — the in-binary place: the last P world ranks run their place of the tool tree (places/,
 * otfx/place.h) inside MPI_Init and never return to the program. Event places serve the block of
 * application ranks the layout (otfx/tbon.h) gives them; analysis places serve none and run only their
 * part of the tree; the root also serves clients.
 */
#include "capture_functions.h"
#include "recorder.h"
#include "runtime.h"

#include <otfx/place.h>

#include <stdlib.h>

void capture_place_loop(int world_rank, MPI_Comm places_comm, int thread_provided)
{
    const uint32_t index = (uint32_t)(world_rank - capture_layout.app_size);
    uint32_t first = 0, count = 0;
    otfx_tbon_served(&capture_layout.tree, index, &first, &count);
    otfx_event_place_setup setup = {
        .tool_comm = capture_tool_comm,
        .place_rank = world_rank,
        .first_served = (int)first,
        .served_count = (int)count,
        .functions = {capture_function_names, capture_function_classes, CAPTURE_FUNCTION_COUNT},
        .places_comm = places_comm,
        .layout = &capture_layout.tree,
        .place_index = (int)index,
        .thread_provided = thread_provided,
    };
    otfx_place_settings_from_env(&setup.settings);
    int result = otfx_event_place_run(&setup);
    if (result != 0)
        PMPI_Abort(MPI_COMM_WORLD, result); /* a wrong setting: the whole job stops, as it said why */
    if (places_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&places_comm);
    PMPI_Finalize();
    exit(0);
}

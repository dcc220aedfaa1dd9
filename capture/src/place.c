/*
 * place.c — the in-binary place: the last P world ranks run the event place (places/, otfx/place.h)
 * inside MPI_Init and never return to the program.
 */
#include "capture_functions.h"
#include "recorder.h"
#include "runtime.h"

#include <otfx/place.h>

#include <stdlib.h>

void capture_place_loop(int world_rank)
{
    const int first = (world_rank - capture_layout.app_size) * capture_layout.ranks_per_place;
    int last = first + capture_layout.ranks_per_place;
    if (last > capture_layout.app_size)
        last = capture_layout.app_size;
    const otfx_event_place_setup setup = {
        .tool_comm = capture_tool_comm,
        .place_rank = world_rank,
        .first_served = first,
        .served_count = last > first ? last - first : 0,
        .functions = {capture_function_names, capture_function_classes, CAPTURE_FUNCTION_COUNT},
    };
    int result = otfx_event_place_run(&setup);
    if (result != 0)
        PMPI_Abort(MPI_COMM_WORLD, result); /* a wrong setting: the whole job stops, as it said why */
    PMPI_Finalize();
    exit(0);
}

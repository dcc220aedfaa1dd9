/*
 * world.c — what the world split decided (world.h). Defined below every module that reads it; only the
 * world split (world_split.c, at the top) writes it, in MPI_Init.
 */
#include "world.h"

MPI_Comm capture_app_world = MPI_COMM_WORLD;
struct capture_layout capture_layout;
int capture_own_place = -1;
bool capture_threads_concurrent;

/*
 * dying.h — a rank that ends without MPI_Finalize (private to libotfx-capture; dying.c).
 */
#ifndef OTFX_CAPTURE_DYING_H
#define OTFX_CAPTURE_DYING_H

#include "linkage.h"

/* dying.c (capture/README.md, "When a rank dies"): after the world split on an application rank with a
 * place, handlers for the fatal signals and an exit hook that send the place the rank's records and how
 * it ended. MPI_Abort's wrapper calls capture_dying_abort first: it returns only when the places did not
 * end the job in time. */
CAPTURE_INTERNAL void capture_dying_install(void);
CAPTURE_INTERNAL void capture_dying_abort(int error_code);

#endif

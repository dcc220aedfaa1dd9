/*
 * nesting.h — whether this thread is inside the tool (private to libotfx-capture; capture/README.md,
 * "Re-entry").
 *
 * The tool's own work calls MPI: sending a batch (PMPI_Isend, PMPI_Wait, PMPI_Test), a steering check
 * (answers, clock pings), the communicator cache's queries, the barrier of a guarded reduction, the
 * world split in MPI_Init and the goodbye in MPI_Finalize. MPI may run application code from there: a
 * user reduction operation of a pending nonblocking collective progressing in the tool's PMPI_Wait, a
 * generalized request's callbacks, an error handler. That code may be instrumented
 * (-finstrument-functions, otfx.h) or call MPI, and would enter the recorder again with its state half
 * updated (a batch being sent, a command being carried out, a lock held). So each thread counts how deep
 * it is inside the tool's own code, and every entry point — the MPI wrappers (generated and manual),
 * __cyg_profile_func_enter/exit, otfx.h — tests the count first (one thread-local load and compare):
 * inside the tool, an MPI wrapper calls the real PMPI function with the application's arguments (its
 * MPI_COMM_WORLD still the application's world) and returns its result, recording nothing and keeping
 * no books; the others do nothing.
 *
 * The application's own PMPI call in a wrapper runs outside the tool: callbacks it runs are the
 * application's and are recorded as always. Only the code that calls out of the library is marked (the
 * slow paths listed above); appending a record calls nothing and cannot be entered again except by a
 * signal, which dying.c handles on its own.
 */
#ifndef OTFX_CAPTURE_NESTING_H
#define OTFX_CAPTURE_NESTING_H

#include "linkage.h"

#include <stdbool.h>

CAPTURE_INTERNAL extern CAPTURE_HOT_THREAD_LOCAL unsigned capture_tool_nesting;

static inline bool capture_inside_tool(void)
{
#ifdef OTFX_BENCH_WITHOUT_NESTING_GUARD
    /* Only for pricing the test with capture-bench (docs/benchmarks.md, "The nesting guard"), in a build
     * of its own: every entry point goes on as if outside the tool. Never in a real build: application
     * code run from the tool's MPI calls would be recorded into a batch being sent. */
    return false;
#else
    return __builtin_expect(capture_tool_nesting != 0, 0);
#endif
}

/* Around every section of the tool's own code that calls MPI (or anything else that may run application
 * code); sections nest. */
static inline void capture_tool_enter(void)
{
    capture_tool_nesting++;
}

static inline void capture_tool_exit(void)
{
    capture_tool_nesting--;
}

#endif

/* quiet_abort.h — silencing a tool rank's stderr just before it ends the job with MPI_Abort (header only,
 * target otfx_support; the includer defines _POSIX_C_SOURCE 200809L or more).
 *
 *   otfx_quiet_stderr_before_abort();
 *   PMPI_Abort(MPI_COMM_WORLD, exit_code);
 *
 * The tool ends a job itself when the trace of a failed job is written (the root place, with the failed
 * rank's error code) and when a setting is wrong (every rank, after one of them said why). MPI_Abort then
 * prints "Abort(N) on node R ...: application called MPI_Abort" before it sends the abort command to
 * mpiexec. That line names a tool rank, not the application's, and it can hang MPICH 4.0's mpiexec: when
 * the line reaches it just after the abort command and a new wall-clock second begins in between, hydra
 * kills its proxy alone and then waits, without end, for output pipes that the orphaned ranks inherited
 * and still hold open (reproduced with a plain two-rank MPI program). With nothing printed after the
 * abort command, mpiexec finds nothing to wait for and ends the job at once.
 *
 * What the process printed before is flushed first; stderr then points at /dev/null for the rest of the
 * process's short life. An application's own MPI_Abort is never silenced: its line is its own. */
#ifndef OTFX_SUPPORT_QUIET_ABORT_H
#define OTFX_SUPPORT_QUIET_ABORT_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static inline void otfx_quiet_stderr_before_abort(void)
{
    fflush(stdout);
    fflush(stderr);
    const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd < 0)
        return; /* the line is printed then: nothing worse than without this */
    dup2(null_fd, STDERR_FILENO);
    if (null_fd != STDERR_FILENO)
        close(null_fd);
}

#endif

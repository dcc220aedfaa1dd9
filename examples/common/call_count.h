/*
 * call_count.h — ground truth for the tracer: every example program routes each MPI call through
 * MPI_COUNTED so that it can print, per rank, exactly how many times it called every MPI function.
 *
 *   MPI_COUNTED(MPI_Send, buf, n, MPI_INT, dest, tag, comm);   // any MPI function with arguments
 *   double t = MPI_COUNTED_NOARGS(MPI_Wtime);                  // MPI_Wtime, MPI_Wtick
 *   return call_count_finalize(world_rank, exit_code);         // counts MPI_Finalize, prints, finalizes
 *
 * The report is one line per rank, functions sorted by name (byte order), zero counts left out:
 *   expected-calls: RANK MPI_Allreduce=5 MPI_Comm_rank=1 ... MPI_Finalize=1 MPI_Init=1
 * The counters are per process and not thread safe: the examples call MPI from one thread only.
 */
#ifndef OTFX_EXAMPLES_CALL_COUNT_H
#define OTFX_EXAMPLES_CALL_COUNT_H

/* The name is stringified here so a counter can never be attached to the wrong function. */
#define MPI_COUNTED(function, ...) (call_count_record(#function), function(__VA_ARGS__))
/* C11 needs at least one argument for "...", so functions without parameters get their own macro. */
#define MPI_COUNTED_NOARGS(function) (call_count_record(#function), function())

/* Adds one call of the named MPI function. The name must be a string literal or otherwise outlive the
 * process's last report. */
void call_count_record(const char *function_name);

/* Prints this rank's "expected-calls:" line with a single printf and flushes stdout. */
void call_count_print(int world_rank);

/* Records the MPI_Finalize call in advance, prints the report, calls MPI_Finalize and returns exit_code,
 * so that main can end with `return call_count_finalize(rank, code);`. */
int call_count_finalize(int world_rank, int exit_code);

#endif

/*
 * fortran.h — mpi_f08's constants and character arguments (private to libotfx-capture;
 * fortran_constants.c, fortran_strings.c).
 */
#ifndef OTFX_CAPTURE_FORTRAN_H
#define OTFX_CAPTURE_FORTRAN_H

#include "linkage.h"

#include <mpi.h>
#include <stddef.h>

/* Fortran (mpi_f08) MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE: addresses inside libmpichfort, NULL when
 * the program has no Fortran. */
CAPTURE_INTERNAL const void *capture_f08_status_ignore(void);
CAPTURE_INTERNAL const void *capture_f08_statuses_ignore(void);
/* mpi_f08 weight arrays (MPI_Dist_graph_*): Fortran's MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY arrive as the
 * addresses of libmpichfort's module variables; returns C's MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY for them
 * and `weights` otherwise, as MPICH's own entry points do. */
CAPTURE_INTERNAL int *capture_f08_weights(const int *weights);

/* mpi_f08 character arguments (fortran_strings.c). Each C string lives in `stack` (stack_size bytes, an
 * array of the generated entry point) when it fits, else on the heap; NULL when the heap allocation
 * failed (the entry point then returns MPI_ERR_NO_MEM without calling MPI). Release with
 * capture_f08_string_free. */
#define CAPTURE_F08_STRING_STACK (MPI_MAX_INFO_VAL + 1) /* every MPI_MAX_* string but the version */
/* Input: the Fortran string without leading and trailing blanks, NUL-terminated (MPICH 4.0.2's
 * MPIR_Fortran_string_f2c). */
CAPTURE_INTERNAL char *capture_f08_string_in(const char *fstring, size_t flen, char *stack,
                                             size_t stack_size);
/* Output: an empty C string of `size` bytes for MPI to fill. */
CAPTURE_INTERNAL char *capture_f08_string_buffer(size_t size, char *stack, size_t stack_size);
/* Copies a C string back into flen Fortran characters, blank padded (MPIR_Fortran_string_c2f),
 * truncated to flen. */
CAPTURE_INTERNAL void capture_f08_string_out(const char *cstring, char *fstring, size_t flen);
CAPTURE_INTERNAL void capture_f08_string_free(char *cstring, const char *stack);

#endif

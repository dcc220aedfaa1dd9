/*
 * fortran_constants.c — mpi_f08's MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_UNWEIGHTED and
 * MPI_WEIGHTS_EMPTY as the generated mpi_f08 entry points see them (fortran.h).
 */
#include "fortran.h"

#include <mpi.h>

/* mpi_f08's MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are objects in libmpichfort (declared by mpi.h);
 * weak, so that C programs without the Fortran library still load us. */
#pragma weak MPIR_F08_MPI_STATUS_IGNORE_OBJ
#pragma weak MPIR_F08_MPI_STATUSES_IGNORE_OBJ

const void *capture_f08_status_ignore(void)
{
    return &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
}

const void *capture_f08_statuses_ignore(void)
{
    return MPIR_F08_MPI_STATUSES_IGNORE_OBJ;
}

/* mpi_f08's MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are integer module variables of libmpichfort; the
 * program passes their addresses. Weak for the same reason as above (NULL without Fortran). */
extern int capture_f08_unweighted __asm__("__mpi_f08_link_constants_MOD_mpi_unweighted")
    __attribute__((weak));
extern int capture_f08_weights_empty __asm__("__mpi_f08_link_constants_MOD_mpi_weights_empty")
    __attribute__((weak));

int *capture_f08_weights(const int *weights)
{
    if (weights && weights == &capture_f08_unweighted)
        return MPI_UNWEIGHTED;
    if (weights && weights == &capture_f08_weights_empty)
        return MPI_WEIGHTS_EMPTY;
    return (int *)weights;
}

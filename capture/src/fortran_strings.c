/*
 * fortran_strings.c — Fortran character arguments of the generated mpi_f08 entry points
 * (capture_wrappers_f08.c). gfortran passes character(len=*) as a pointer plus a hidden size_t length
 * after all explicit arguments; neither side has a NUL. The conversions are those of MPICH's own
 * entry points (MPIR_Fortran_string_f2c / _c2f in libmpichfort), so a program sees the same strings
 * with the library as without it.
 */
#include "fortran.h"

#include <stdlib.h>
#include <string.h>

/* A buffer of `size` bytes: the caller's stack array when it fits, else the heap (NULL when malloc
 * fails). Starts as the empty string, so that copying it back after a failed call gives blanks instead
 * of whatever the stack held. */
static char *string_buffer(size_t size, char *stack, size_t stack_size)
{
    char *buffer = size <= stack_size ? stack : malloc(size);
    if (buffer)
        buffer[0] = '\0';
    return buffer;
}

char *capture_f08_string_in(const char *fstring, size_t flen, char *stack, size_t stack_size)
{
    /* MPICH 4.0.2 drops the blanks (only ' ', as len_trim) at both ends, keeps those inside. */
    while (flen > 0 && fstring[flen - 1] == ' ')
        flen--;
    while (flen > 0 && fstring[0] == ' ') {
        fstring++;
        flen--;
    }
    char *cstring = string_buffer(flen + 1, stack, stack_size);
    if (cstring) {
        memcpy(cstring, fstring, flen);
        cstring[flen] = '\0';
    }
    return cstring;
}

char *capture_f08_string_buffer(size_t size, char *stack, size_t stack_size)
{
    return string_buffer(size, stack, stack_size);
}

void capture_f08_string_out(const char *cstring, char *fstring, size_t flen)
{
    /* MPICH copies up to the NUL without looking at the Fortran length; stopping there as well keeps
     * a too short actual argument from being overrun. */
    size_t used = strnlen(cstring, flen);
    memcpy(fstring, cstring, used);
    memset(fstring + used, ' ', flen - used);
}

void capture_f08_string_free(char *cstring, const char *stack)
{
    if (cstring != stack)
        free(cstring);
}

/* error_text.h — private to tbon/src: the "char *error, size_t error_size" convention of its public
 * functions. Writes the message when the caller gave room for one; a NULL or empty buffer means it did not
 * want it. */
#ifndef OTFX_TBON_ERROR_TEXT_H
#define OTFX_TBON_ERROR_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void set_error(char *error, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static inline void set_error(char *error, size_t size, const char *format, ...)
{
    if (!error || size == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
}

#endif

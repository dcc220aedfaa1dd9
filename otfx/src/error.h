/* error.h — thread-local error messages shared by every otfx module (private). */
#ifndef OTFX_ERROR_H
#define OTFX_ERROR_H

#include "otfx/trace.h"

#if defined(__GNUC__)
#define OTFX_PRINTF_LIKE(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define OTFX_PRINTF_LIKE(fmt_index, args_index)
#endif

/* Records the calling thread's message for otfx_last_error() and returns `status`, so a failing
 * function can `return otfx_fail(OTFX_ERR_INVALID, "...", ...)`. */
otfx_status otfx_fail(otfx_status status, const char *format, ...) OTFX_PRINTF_LIKE(2, 3);

#endif

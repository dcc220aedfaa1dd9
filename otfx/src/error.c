/* error.c — status names, the per-thread error message and the names of enumerations. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Long enough for a message naming an event index, a time and a reference, or two paths; longer ones
 * are cut. */
static _Thread_local char last_error_message[512];

otfx_status otfx_fail(otfx_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error_message, sizeof last_error_message, format, args);
    va_end(args);
    return status;
}

const char *otfx_last_error(void)
{
    return last_error_message;
}

const char *otfx_strerror(otfx_status status)
{
    switch (status) {
    case OTFX_OK:
        return "ok";
    case OTFX_ERR_INVALID:
        return "invalid argument or event";
    case OTFX_ERR_NOMEM:
        return "out of memory";
    case OTFX_ERR_CORRUPT:
        return "corrupt data";
    case OTFX_ERR_STOPPED:
        return "recording stopped: buffer full";
    case OTFX_ERR_IO:
        return "input/output error";
    case OTFX_ERR_OTF2:
        return "OTF2 error";
    }
    return "unknown status";
}

static const char *const reduction_names[OTFX_REDUCE_COUNT] = {
    [OTFX_REDUCE_RING] = "ring",         [OTFX_REDUCE_TIME] = "time",
    [OTFX_REDUCE_TYPE] = "type",         [OTFX_REDUCE_DEPTH] = "depth",
    [OTFX_REDUCE_STOP] = "stop",         [OTFX_REDUCE_SOURCE_DROP] = "source-drop",
    [OTFX_REDUCE_THROTTLE] = "throttle",
};

const char *otfx_reduction_name(otfx_reduction strategy)
{
    if ((unsigned)strategy >= OTFX_REDUCE_COUNT)
        return "unknown";
    return reduction_names[strategy];
}

otfx_status otfx_reduction_parse(const char *name, otfx_reduction *out)
{
    if (!name || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_reduction_parse: NULL argument");
    /* Only the strategies a trace can run; the others exist only in reduction records. */
    for (int strategy = OTFX_REDUCE_RING; strategy <= OTFX_REDUCE_STOP; strategy++) {
        if (strcmp(name, reduction_names[strategy]) == 0) {
            *out = (otfx_reduction)strategy;
            return OTFX_OK;
        }
    }
    return otfx_fail(OTFX_ERR_INVALID, "unknown reduction strategy \"%s\" (ring, time, type, depth, stop)",
                     name);
}

const char *otfx_role_name(otfx_region_role role)
{
    switch (role) {
    case OTFX_ROLE_USER_FUNCTION:
        return "user function";
    case OTFX_ROLE_MPI_P2P:
        return "MPI point-to-point";
    case OTFX_ROLE_MPI_COLLECTIVE:
        return "MPI collective";
    case OTFX_ROLE_MPI_OTHER:
        return "MPI other";
    case OTFX_ROLE_PHASE:
        return "phase";
    case OTFX_ROLE_COUNT:
        break;
    }
    return "unknown";
}

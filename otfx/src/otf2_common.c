/* otf2_common.c — tables and error reporting shared by the OTF2 exporter and importer. */
#include "otf2_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const otfx_otf2_role_mapping otfx_otf2_roles[OTFX_ROLE_COUNT] = {
    {OTFX_ROLE_USER_FUNCTION, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER},
    {OTFX_ROLE_MPI_P2P, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
    {OTFX_ROLE_MPI_COLLECTIVE, OTF2_REGION_ROLE_COLL_OTHER, OTF2_PARADIGM_MPI},
    {OTFX_ROLE_MPI_OTHER, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    /* Phase markers are zero-length visits of their region; ARTIFICIAL keeps them apart from code. */
    {OTFX_ROLE_PHASE, OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_USER},
};

const otfx_otf2_attribute_def otfx_otf2_attributes[OTFX_OTF2_ATTR_COUNT] = {
    [OTFX_OTF2_ATTR_PHASE_VALUE] = {"otfx::phase_value", "value of an otfx phase marker", OTF2_TYPE_INT64},
    [OTFX_OTF2_ATTR_STRATEGY] = {"otfx::strategy", "otfx reduction strategy that removed the detail",
                                 OTF2_TYPE_STRING},
    [OTFX_OTF2_ATTR_EVENTS_REMOVED] = {"otfx::events_removed", "events removed from the reduced range",
                                       OTF2_TYPE_UINT64},
    [OTFX_OTF2_ATTR_RANGE_BEGIN] = {"otfx::range_begin", "begin of the reduced range (timestamp)",
                                    OTF2_TYPE_UINT64},
    [OTFX_OTF2_ATTR_RANGE_END] = {"otfx::range_end", "end of the reduced range (timestamp)",
                                  OTF2_TYPE_UINT64},
    [OTFX_OTF2_ATTR_RECORD_TIME] = {"otfx::record_time", "time of the otfx reduction record (timestamp)",
                                    OTF2_TYPE_UINT64},
    [OTFX_OTF2_ATTR_PIECE] = {"otfx::piece", "piece of a reduced range split by detail events (0: first)",
                              OTF2_TYPE_UINT32},
    [OTFX_OTF2_ATTR_PLACEHOLDER] = {"otfx::placeholder",
                                    "location not exported, defined only to complete the MPI location group",
                                    OTF2_TYPE_UINT8},
};

const char *otfx_otf2_record_name(otfx_event_type type)
{
    switch (type) {
#define OTFX_RECORD_NAME(otfx_type, record, printed, payload)                                                \
    case otfx_type:                                                                                          \
        return printed;
        OTFX_OTF2_RECORD_TABLE(OTFX_RECORD_NAME)
#undef OTFX_RECORD_NAME
    default:
        return NULL;
    }
}

const otfx_otf2_role_mapping *otfx_otf2_role_to_otf2(otfx_region_role role)
{
    for (size_t i = 0; i < OTFX_ROLE_COUNT; i++)
        if (otfx_otf2_roles[i].role == role)
            return &otfx_otf2_roles[i];
    return &otfx_otf2_roles[0];
}

static bool is_collective_role(OTF2_RegionRole role)
{
    return role == OTF2_REGION_ROLE_COLL_ONE2ALL || role == OTF2_REGION_ROLE_COLL_ALL2ONE ||
           role == OTF2_REGION_ROLE_COLL_ALL2ALL || role == OTF2_REGION_ROLE_COLL_OTHER ||
           role == OTF2_REGION_ROLE_BARRIER || role == OTF2_REGION_ROLE_IMPLICIT_BARRIER;
}

otfx_region_role otfx_otf2_role_from_otf2(OTF2_RegionRole otf2_role, OTF2_Paradigm paradigm)
{
    for (size_t i = 0; i < OTFX_ROLE_COUNT; i++)
        if (otfx_otf2_roles[i].otf2_role == otf2_role && otfx_otf2_roles[i].paradigm == paradigm)
            return otfx_otf2_roles[i].role;
    /* Archives of other tools (Score-P writes BARRIER, COLL_ONE2ALL, ... for MPI collectives). Anything
     * that is not MPI is a user function for otfx: OpenMP, CUDA, I/O regions have no otfx role. */
    if (paradigm != OTF2_PARADIGM_MPI)
        return OTFX_ROLE_USER_FUNCTION;
    if (otf2_role == OTF2_REGION_ROLE_POINT2POINT)
        return OTFX_ROLE_MPI_P2P;
    if (is_collective_role(otf2_role))
        return OTFX_ROLE_MPI_COLLECTIVE;
    return OTFX_ROLE_MPI_OTHER;
}

/* ---- errors ---- */

static _Thread_local char otf2_message[512];
static pthread_once_t capture_once = PTHREAD_ONCE_INIT;

/* The first failed system call OTF2 reported to this thread since otfx_otf2_capture_errors(): its errno
 * and OTF2's message with it (the file's path). OTF2 swallows some of these (a failed write of a file's
 * last buffered bytes when the file is closed, a failed anchor file in OTF2_Archive_Close), so the caller
 * asks for it after the calls that returned success too. */
static _Thread_local int first_system_errno;
static _Thread_local char first_system_message[512];

/* OTF2 reports a failed system call with the OTF2_ERROR_E* code of its errno. */
static int errno_of(OTF2_ErrorCode code)
{
    static const struct {
        OTF2_ErrorCode code;
        int value;
    } system_errors[] = {
        {OTF2_ERROR_EACCES, EACCES},   {OTF2_ERROR_EPERM, EPERM},
        {OTF2_ERROR_EROFS, EROFS},     {OTF2_ERROR_ENOSPC, ENOSPC},
        {OTF2_ERROR_EDQUOT, EDQUOT},   {OTF2_ERROR_EFBIG, EFBIG},
        {OTF2_ERROR_EIO, EIO},         {OTF2_ERROR_ENOENT, ENOENT},
        {OTF2_ERROR_ENOTDIR, ENOTDIR}, {OTF2_ERROR_EISDIR, EISDIR},
        {OTF2_ERROR_EEXIST, EEXIST},   {OTF2_ERROR_ENAMETOOLONG, ENAMETOOLONG},
        {OTF2_ERROR_ELOOP, ELOOP},     {OTF2_ERROR_EMFILE, EMFILE},
        {OTF2_ERROR_ENFILE, ENFILE},   {OTF2_ERROR_ENOMEM, ENOMEM},
        {OTF2_ERROR_EBADF, EBADF},     {OTF2_ERROR_EINVAL, EINVAL},
        {OTF2_ERROR_ESTALE, ESTALE},   {OTF2_ERROR_ENOTEMPTY, ENOTEMPTY},
        {OTF2_ERROR_ETXTBSY, ETXTBSY}, {OTF2_ERROR_EXDEV, EXDEV},
        {OTF2_ERROR_EINTR, EINTR},     {OTF2_ERROR_EAGAIN, EAGAIN},
        {OTF2_ERROR_ENODEV, ENODEV},   {OTF2_ERROR_ENXIO, ENXIO},
        {OTF2_ERROR_ESPIPE, ESPIPE},   {OTF2_ERROR_EOVERFLOW, EOVERFLOW},
    };
    for (size_t e = 0; e < sizeof system_errors / sizeof *system_errors; e++)
        if (system_errors[e].code == code)
            return system_errors[e].value;
    return 0;
}

static OTF2_ErrorCode keep_otf2_message(void *user, const char *file, uint64_t line, const char *function,
                                        OTF2_ErrorCode code, const char *format, va_list args)
    __attribute__((format(printf, 6, 0)));

static OTF2_ErrorCode keep_otf2_message(void *user, const char *file, uint64_t line, const char *function,
                                        OTF2_ErrorCode code, const char *format, va_list args)
{
    (void)user;
    (void)file;
    (void)line;
    (void)function;
    if (format)
        vsnprintf(otf2_message, sizeof otf2_message, format, args);
    else
        otf2_message[0] = '\0';
    const int system_error = errno_of(code);
    if (system_error && !first_system_errno) {
        /* OTF2 says "POSIX: <path>" */
        static const char prefix[] = "POSIX: ";
        const bool prefixed = strncmp(otf2_message, prefix, sizeof prefix - 1) == 0;
        first_system_errno = system_error;
        snprintf(first_system_message, sizeof first_system_message, "%s",
                 otf2_message + (prefixed ? sizeof prefix - 1 : 0));
    }
    return code;
}

static void install_capture(void)
{
    OTF2_Error_RegisterCallback(keep_otf2_message, NULL);
}

void otfx_otf2_capture_errors(void)
{
    pthread_once(&capture_once, install_capture);
    otf2_message[0] = '\0';
    first_system_errno = 0;
    first_system_message[0] = '\0';
}

int otfx_otf2_system_error(char *where, size_t size)
{
    if (first_system_errno && where && size)
        snprintf(where, size, "%s", first_system_message);
    return first_system_errno;
}

otfx_status otfx_otf2_fail_call(OTF2_ErrorCode code, const char *format, ...)
{
    char what[256];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    otfx_status status;
    if (first_system_errno) {
        /* The system's reason says more than the OTF2 error it led to ("Buffer deletion failed!"). */
        status = otfx_fail(OTFX_ERR_IO, "%s: %s%s%s", what, first_system_message,
                           first_system_message[0] ? ": " : "", strerror(first_system_errno));
    } else {
        const char *name = OTF2_Error_GetName(code);
        status = otfx_fail(OTFX_ERR_OTF2, "%s: %s%s%s", what, name ? name : "OTF2 error",
                           otf2_message[0] ? ": " : "", otf2_message);
    }
    otf2_message[0] = '\0';
    return status;
}

static OTF2_FlushType flush_every_buffer(void *user, OTF2_FileType type, OTF2_LocationRef location,
                                         void *caller, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    (void)caller;
    (void) final;
    return OTF2_FLUSH;
}

const OTF2_FlushCallbacks otfx_otf2_flush_always = {.otf2_pre_flush = flush_every_buffer,
                                                    .otf2_post_flush = NULL};

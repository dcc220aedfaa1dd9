/* otf2_common.c — tables and error reporting shared by the OTF2 exporter and importer. */
#include "otf2_common.h"

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
}

otfx_status otfx_otf2_fail_call(OTF2_ErrorCode code, const char *format, ...)
{
    char what[256];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    const char *name = OTF2_Error_GetName(code);
    otfx_status status = otfx_fail(OTFX_ERR_OTF2, "%s: %s%s%s", what, name ? name : "OTF2 error",
                                   otf2_message[0] ? ": " : "", otf2_message);
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

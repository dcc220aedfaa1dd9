/* otf2_common.h — what the OTF2 exporter and importer must agree on: the record table, the region
 * role mapping, location ids, the names of otfx's own attributes and regions, error reporting.
 * Private to libotfx (and the tests, which count records with the same table). */
#ifndef OTFX_OTF2_COMMON_H
#define OTFX_OTF2_COMMON_H

#include "error.h" /* otfx_fail() sets otfx_last_error() */

#include <otfx/trace.h>

#include <otf2/otf2.h>

#include <stdlib.h>

/* The otfx events that travel as exactly one OTF2 event record each: the otfx type, the OTF2 record
 * (the suffix of OTF2_EvtWriter_<record> and OTF2_EvtReaderCallbacks_Set<record>Callback), the name
 * otf2-print shows for it, and the shape of its payload. The exporter's writer switch, the importer's
 * reader callbacks and the tests' record counting are all generated from this one list.
 *
 * Two event types are composite and handled apart (see docs/otfx-format.md, "OTF2 export and import"):
 * PHASE becomes an Enter and a Leave of its region at the same time, the Enter carrying
 * otfx::phase_value; REDUCTION becomes one or more Enter/Leave pairs ("pieces") of the region
 * "otfx reduced: <strategy>". */
#define OTFX_OTF2_RECORD_TABLE(X)                                                                            \
    X(OTFX_EV_ENTER, Enter, "ENTER", REGION)                                                                 \
    X(OTFX_EV_LEAVE, Leave, "LEAVE", REGION)                                                                 \
    X(OTFX_EV_SEND, MpiSend, "MPI_SEND", MESSAGE)                                                            \
    X(OTFX_EV_RECV, MpiRecv, "MPI_RECV", MESSAGE)                                                            \
    X(OTFX_EV_ISEND, MpiIsend, "MPI_ISEND", MESSAGE_REQUEST)                                                 \
    X(OTFX_EV_ISEND_COMPLETE, MpiIsendComplete, "MPI_ISEND_COMPLETE", REQUEST)                               \
    X(OTFX_EV_IRECV_REQUEST, MpiIrecvRequest, "MPI_IRECV_REQUEST", REQUEST)                                  \
    X(OTFX_EV_IRECV, MpiIrecv, "MPI_IRECV", MESSAGE_REQUEST)                                                 \
    X(OTFX_EV_REQUEST_CANCELLED, MpiRequestCancelled, "MPI_REQUEST_CANCELLED", REQUEST)                      \
    X(OTFX_EV_COLL_BEGIN, MpiCollectiveBegin, "MPI_COLLECTIVE_BEGIN", NONE)                                  \
    X(OTFX_EV_COLL_END, MpiCollectiveEnd, "MPI_COLLECTIVE_END", COLLECTIVE)                                  \
    X(OTFX_EV_METRIC, Metric, "METRIC", METRIC)                                                              \
    X(OTFX_EV_NBC_REQUEST, NonBlockingCollectiveRequest, "NON_BLOCKING_COLLECTIVE_REQUEST", REQUEST)         \
    X(OTFX_EV_NBC_COMPLETE, NonBlockingCollectiveComplete, "NON_BLOCKING_COLLECTIVE_COMPLETE",               \
      COLLECTIVE_REQUEST)

/* Signatures of the OTF2_EvtWriter_<record> functions, one per payload shape of the table. */
typedef OTF2_ErrorCode (*otfx_otf2_REGION_writer)(OTF2_EvtWriter *, OTF2_AttributeList *, OTF2_TimeStamp,
                                                  OTF2_RegionRef);
typedef OTF2_ErrorCode (*otfx_otf2_MESSAGE_writer)(OTF2_EvtWriter *, OTF2_AttributeList *, OTF2_TimeStamp,
                                                   uint32_t, OTF2_CommRef, uint32_t, uint64_t);
typedef OTF2_ErrorCode (*otfx_otf2_MESSAGE_REQUEST_writer)(OTF2_EvtWriter *, OTF2_AttributeList *,
                                                           OTF2_TimeStamp, uint32_t, OTF2_CommRef, uint32_t,
                                                           uint64_t, uint64_t);
typedef OTF2_ErrorCode (*otfx_otf2_REQUEST_writer)(OTF2_EvtWriter *, OTF2_AttributeList *, OTF2_TimeStamp,
                                                   uint64_t);
typedef OTF2_ErrorCode (*otfx_otf2_NONE_writer)(OTF2_EvtWriter *, OTF2_AttributeList *, OTF2_TimeStamp);
typedef OTF2_ErrorCode (*otfx_otf2_COLLECTIVE_writer)(OTF2_EvtWriter *, OTF2_AttributeList *, OTF2_TimeStamp,
                                                      OTF2_CollectiveOp, OTF2_CommRef, uint32_t, uint64_t,
                                                      uint64_t);
typedef OTF2_ErrorCode (*otfx_otf2_COLLECTIVE_REQUEST_writer)(OTF2_EvtWriter *, OTF2_AttributeList *,
                                                              OTF2_TimeStamp, OTF2_CollectiveOp, OTF2_CommRef,
                                                              uint32_t, uint64_t, uint64_t, uint64_t);
typedef OTF2_ErrorCode (*otfx_otf2_METRIC_writer)(OTF2_EvtWriter *, OTF2_AttributeList *, OTF2_TimeStamp,
                                                  OTF2_MetricRef, uint8_t, const OTF2_Type *,
                                                  const OTF2_MetricValue *);

/* The otf2-print name of the record that carries an event of `type`, NULL for the composite types. */
const char *otfx_otf2_record_name(otfx_event_type type);

/* Region roles: otfx role <-> OTF2 region role and paradigm. Export uses the row of the role; import
 * takes the row that matches role and paradigm exactly and otherwise classifies by paradigm (see
 * otfx_otf2_role_from_otf2). */
typedef struct otfx_otf2_role_mapping {
    otfx_region_role role;
    OTF2_RegionRole otf2_role;
    OTF2_Paradigm paradigm;
} otfx_otf2_role_mapping;
extern const otfx_otf2_role_mapping otfx_otf2_roles[OTFX_ROLE_COUNT];

const otfx_otf2_role_mapping *otfx_otf2_role_to_otf2(otfx_region_role role);
otfx_region_role otfx_otf2_role_from_otf2(OTF2_RegionRole otf2_role, OTF2_Paradigm paradigm);

/* Reduced ranges are shown as regions named OTFX_OTF2_REDUCED_PREFIX + otfx_reduction_name(strategy)
 * with this role and paradigm, one per strategy that occurs. */
#define OTFX_OTF2_REDUCED_PREFIX   "otfx reduced: "
#define OTFX_OTF2_REDUCED_ROLE     OTF2_REGION_ROLE_ARTIFICIAL
#define OTFX_OTF2_REDUCED_PARADIGM OTF2_PARADIGM_MEASUREMENT_SYSTEM

/* The attributes otfx writes, in the order of their OTF2 attribute references. A reduction record is
 * written as pieces of its region; the first piece carries the record (its own time and the range it
 * describes, before any clipping to the export window), every piece its number. */
typedef enum otfx_otf2_attribute {
    OTFX_OTF2_ATTR_PHASE_VALUE = 0, /* INT64, on the Enter of a phase marker */
    OTFX_OTF2_ATTR_STRATEGY,        /* STRING, first piece of a reduced range */
    OTFX_OTF2_ATTR_EVENTS_REMOVED,  /* UINT64, first piece */
    OTFX_OTF2_ATTR_RANGE_BEGIN,     /* UINT64 timestamp, first piece */
    OTFX_OTF2_ATTR_RANGE_END,       /* UINT64 timestamp, first piece */
    OTFX_OTF2_ATTR_RECORD_TIME,     /* UINT64 timestamp of the reduction record itself, first piece */
    OTFX_OTF2_ATTR_PIECE,           /* UINT32, every piece of a reduced range: 0 for the first */
    OTFX_OTF2_ATTR_PLACEHOLDER,     /* UINT8 location property: location only completes the MPI group */
    OTFX_OTF2_ATTR_COUNT
} otfx_otf2_attribute;

typedef struct otfx_otf2_attribute_def {
    const char *name, *description;
    OTF2_Type type;
} otfx_otf2_attribute_def;
extern const otfx_otf2_attribute_def otfx_otf2_attributes[OTFX_OTF2_ATTR_COUNT];

/* OTF2 location of a thread of a rank, the scheme Score-P uses: the main thread's location id is its
 * rank, so otf2-print and Vampir show ranks as they are. Location group id = rank. */
static inline uint64_t otfx_otf2_location_id(uint32_t rank, uint32_t thread)
{
    return ((uint64_t)thread << 32) | rank;
}

/* qsort and bsearch for arrays that may be empty (and then NULL, which the C library's must not get). */
static inline void otfx_otf2_sort(void *items, size_t count, size_t size,
                                  int (*compare)(const void *, const void *))
{
    if (count > 1)
        qsort(items, count, size, compare);
}

static inline void *otfx_otf2_search(const void *key, const void *items, size_t count, size_t size,
                                     int (*compare)(const void *, const void *))
{
    return count > 0 ? bsearch(key, items, count, size, compare) : NULL;
}

/* OTF2 timer resolution of the archives otfx writes: otfx times are nanoseconds. */
#define OTFX_OTF2_TIMER_RESOLUTION UINT64_C(1000000000)

/* Errors. OTF2 reports errors through a process-wide callback that by default prints to stderr;
 * otfx_otf2_capture_errors() installs (once) a callback that keeps the calling thread's last OTF2
 * message instead, so it ends up in otfx_last_error(), and forgets the thread's system error. */
void otfx_otf2_capture_errors(void);
/* The errno of the first failed system call (open, write, mkdir, ...) OTF2 reported to this thread since
 * otfx_otf2_capture_errors(), 0 if none, and OTF2's message with it (the path) into `where`. OTF2 goes
 * on after some of these and returns success (the last bytes of a file written when it is closed, the
 * anchor file written by OTF2_Archive_Close): a writer asks after every step. */
int otfx_otf2_system_error(char *where, size_t size);
/* For a failed OTF2 call: OTFX_ERR_OTF2 with "<what>: <OTF2 error name>: <OTF2's message>", `what`
 * formatted like printf; after a failed system call OTFX_ERR_IO with "<what>: <path>: <strerror>". */
otfx_status otfx_otf2_fail_call(OTF2_ErrorCode code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Flush callbacks: every full OTF2 buffer goes to its file (memory stays bounded by one chunk per
 * location). No post-flush callback: OTF2 then writes no BufferFlush records into the traces. */
extern const OTF2_FlushCallbacks otfx_otf2_flush_always;

/* Return from the calling function on failure. OTF2_TRY reports the OTF2 error with the including
 * file's OTF2_TRY_CONTEXT ("OTF2 export: ") and `what` as the message. */
#define OTF2_TRY(call, what)                                                                                 \
    do {                                                                                                     \
        OTF2_ErrorCode otf2_code_ = (call);                                                                  \
        if (otf2_code_ != OTF2_SUCCESS)                                                                      \
            return otfx_otf2_fail_call(otf2_code_, "%s", OTF2_TRY_CONTEXT what);                             \
    } while (0)

#define OTFX_TRY(call)                                                                                       \
    do {                                                                                                     \
        otfx_status otfx_status_ = (call);                                                                   \
        if (otfx_status_ != OTFX_OK)                                                                         \
            return otfx_status_;                                                                             \
    } while (0)

#endif

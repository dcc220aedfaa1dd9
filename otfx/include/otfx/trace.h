/* otfx/trace.h — the otfx in-memory trace store.
 *
 * otfx keeps the event trace of one location (an application rank or one of its threads) in memory,
 * in a buffer whose size is fixed when the trace is created and never grows past it, however long the
 * run. Definitions (strings, regions, locations, communicators, metrics) live apart, in an otfx_defs
 * store that is never reduced: a trace whose metadata was evicted could not be read.
 *
 * Storage, from small to large: events are encoded compactly into a chunk; a full chunk is sealed
 * (summarised, LZ4-compressed, checksummed); sealed chunks form segments with an index of time ranges,
 * so queries and reductions touch only the chunks they need. When the budget is reached, the trace's
 * reduction strategy makes room (see otfx_reduction). Every reduction leaves a reduction record and
 * keeps exact per-region statistics of what it removed, so profiles stay exact.
 *
 * Threads: one thread appends to a trace; any number of threads may query it at the same time.
 * A trace uses a reader-writer lock: an append takes the write lock once per call (append in batches),
 * a query holds the read lock while it runs. Definitions have their own mutex.
 *
 * Errors: every function that can fail returns an otfx_status; otfx_strerror() names it and
 * otfx_last_error() gives the calling thread's detailed message for the last failure. A rejected call
 * changes nothing that was stored.
 *
 * Times are unsigned 64-bit nanoseconds on the job's global clock. Peers of messages and members of
 * communicators are world ranks of the application.
 */
#ifndef OTFX_TRACE_H
#define OTFX_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <otfx/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTFX_FORMAT_VERSION 2

/* Deepest calling context a location may have: an ENTER beyond it is rejected as invalid. */
#define OTFX_MAX_CALL_DEPTH 1024

typedef uint64_t otfx_time;
typedef uint32_t otfx_ref;
#define OTFX_REF_NONE UINT32_MAX
#define OTFX_TIME_MAX UINT64_MAX

typedef enum otfx_status {
    OTFX_OK = 0,
    OTFX_ERR_INVALID, /* bad argument or malformed event (nesting, order, unknown reference) */
    OTFX_ERR_NOMEM,   /* the system allocator failed */
    OTFX_ERR_CORRUPT, /* stored or imported data failed its checksum or could not be decoded */
    OTFX_ERR_STOPPED, /* strategy `stop`: the buffer is full, the event was counted but not stored */
    OTFX_ERR_IO,      /* a file could not be read or written */
    OTFX_ERR_OTF2     /* the OTF2 library reported an error */
} otfx_status;

OTFX_API const char *otfx_strerror(otfx_status status);
/* The calling thread's message for its last failed call, "" if none. */
OTFX_API const char *otfx_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Definitions (module prefix otfx_defs_): never reduced, never evicted, shared by many traces.
 * Every define function is idempotent: defining the same thing twice returns the same reference.
 * -------------------------------------------------------------------------------------------- */

typedef struct otfx_defs otfx_defs;

typedef enum otfx_region_role {
    OTFX_ROLE_USER_FUNCTION = 0,
    OTFX_ROLE_MPI_P2P,
    OTFX_ROLE_MPI_COLLECTIVE,
    OTFX_ROLE_MPI_OTHER,
    OTFX_ROLE_PHASE,
    OTFX_ROLE_COUNT
} otfx_region_role;

typedef enum otfx_metric_type { OTFX_METRIC_INT64, OTFX_METRIC_UINT64, OTFX_METRIC_DOUBLE } otfx_metric_type;

OTFX_API otfx_defs *otfx_defs_create(void);
OTFX_API void otfx_defs_destroy(otfx_defs *defs);

OTFX_API otfx_status otfx_defs_string(otfx_defs *defs, const char *text, otfx_ref *ref);
OTFX_API otfx_status otfx_defs_region(otfx_defs *defs, const char *name, otfx_region_role role,
                                      otfx_ref *ref);
/* A location is one stream of events: a thread of an application rank (thread 0 = the rank's main). */
OTFX_API otfx_status otfx_defs_location(otfx_defs *defs, uint32_t rank, uint32_t thread, otfx_ref *ref);
/* A communicator with its members as world ranks, in communicator rank order. */
OTFX_API otfx_status otfx_defs_comm(otfx_defs *defs, const char *name, const uint32_t *world_ranks,
                                    uint32_t size, otfx_ref *ref);
OTFX_API otfx_status otfx_defs_metric(otfx_defs *defs, const char *name, const char *unit,
                                      otfx_metric_type type, otfx_ref *ref);

typedef struct otfx_region_def {
    const char *name;
    otfx_region_role role;
} otfx_region_def;
typedef struct otfx_location_def {
    uint32_t rank, thread;
} otfx_location_def;
typedef struct otfx_comm_def {
    const char *name;
    const uint32_t *world_ranks;
    uint32_t size;
} otfx_comm_def;
typedef struct otfx_metric_def {
    const char *name, *unit;
    otfx_metric_type type;
} otfx_metric_def;
/* The metric whose METRIC events mark where a stream's set of metrics changed (the event places write
 * one, valued with the stream's new set id, before the first value of each set): values on both sides of
 * such a mark come from different counters, so a difference across it means nothing (docs/usage.md,
 * "Metrics"). */
#define OTFX_METRIC_SET_MARK "otfx:metric-set"

/* Lookups return OTFX_ERR_INVALID for an unknown reference. Returned pointers stay valid as long as the
 * store lives (definitions are never removed). */
OTFX_API uint32_t otfx_defs_count_strings(const otfx_defs *defs);
OTFX_API uint32_t otfx_defs_count_regions(const otfx_defs *defs);
OTFX_API uint32_t otfx_defs_count_locations(const otfx_defs *defs);
OTFX_API uint32_t otfx_defs_count_comms(const otfx_defs *defs);
OTFX_API uint32_t otfx_defs_count_metrics(const otfx_defs *defs);
OTFX_API otfx_status otfx_defs_get_string(const otfx_defs *defs, otfx_ref ref, const char **text);
OTFX_API otfx_status otfx_defs_get_region(const otfx_defs *defs, otfx_ref ref, otfx_region_def *out);
OTFX_API otfx_status otfx_defs_get_location(const otfx_defs *defs, otfx_ref ref, otfx_location_def *out);
OTFX_API otfx_status otfx_defs_get_comm(const otfx_defs *defs, otfx_ref ref, otfx_comm_def *out);
OTFX_API otfx_status otfx_defs_get_metric(const otfx_defs *defs, otfx_ref ref, otfx_metric_def *out);
/* Bytes the store holds (reported in status; not part of any trace's budget). */
OTFX_API size_t otfx_defs_bytes(const otfx_defs *defs);

/* ---------------------------------------------------------------------------------------------
 * Events
 * -------------------------------------------------------------------------------------------- */

typedef enum otfx_event_type {
    OTFX_EV_ENTER = 0,         /* region */
    OTFX_EV_LEAVE,             /* region: ignored on append (the open region is left), filled on read */
    OTFX_EV_SEND,              /* msg: blocking send */
    OTFX_EV_RECV,              /* msg: completed receive (blocking, or from a completed irecv) */
    OTFX_EV_ISEND,             /* msg + request: nonblocking send started */
    OTFX_EV_ISEND_COMPLETE,    /* request */
    OTFX_EV_IRECV_REQUEST,     /* request: nonblocking receive posted */
    OTFX_EV_IRECV,             /* msg + request: nonblocking receive completed */
    OTFX_EV_REQUEST_CANCELLED, /* request */
    OTFX_EV_COLL_BEGIN,        /* coll: comm and seq only (both 0 / OTFX_REF_NONE when unknown) */
    OTFX_EV_COLL_END,          /* coll */
    OTFX_EV_METRIC,            /* metric */
    OTFX_EV_PHASE,             /* phase: a marker (e.g. MPI_Pcontrol level) */
    OTFX_EV_REDUCTION,         /* reduction: what was removed from which time range */
    OTFX_EV_NBC_REQUEST,       /* request: a nonblocking collective was started (MPI_Ibcast, MPI_Start) */
    OTFX_EV_NBC_COMPLETE,      /* coll (with its request): the nonblocking collective completed */
    OTFX_EV_TYPE_COUNT
} otfx_event_type;

/* Event classes, for filtering and for the `type` reduction strategy. */
typedef enum otfx_event_class {
    OTFX_CLASS_USER_FUNCTION = 0, /* enter/leave of user-function regions */
    OTFX_CLASS_MPI_P2P,           /* enter/leave of p2p regions and their message/request events */
    OTFX_CLASS_MPI_COLLECTIVE,    /* enter/leave of collective regions, collective begin/end, and the
                                   * request/complete of nonblocking collectives */
    OTFX_CLASS_MPI_OTHER,         /* enter/leave of other MPI regions */
    OTFX_CLASS_OTHER,             /* phase regions and markers, metrics (never dropped by `type`) */
    OTFX_CLASS_COUNT
} otfx_event_class;

typedef enum otfx_reduction {
    OTFX_REDUCE_RING = 0,    /* drop the oldest detail first (flight recorder) */
    OTFX_REDUCE_TIME,        /* thin the older part progressively: oldest chunks become their summary */
    OTFX_REDUCE_TYPE,        /* drop event classes in the configured priority order, oldest first */
    OTFX_REDUCE_DEPTH,       /* drop the deepest calling-context levels first */
    OTFX_REDUCE_STOP,        /* stop storing when full (the classic cut-off); statistics go on */
    OTFX_REDUCE_SOURCE_DROP, /* only in reduction records: events dropped before they reached the trace */
    OTFX_REDUCE_THROTTLE,    /* only in reduction records: events of throttled regions not recorded */
    OTFX_REDUCE_COUNT
} otfx_reduction;

OTFX_API const char *otfx_reduction_name(otfx_reduction strategy); /* "ring", "time", … */
OTFX_API otfx_status otfx_reduction_parse(const char *name,
                                          otfx_reduction *out); /* only the five strategies */
OTFX_API const char *otfx_event_type_name(otfx_event_type type);
OTFX_API const char *otfx_role_name(otfx_region_role role);

typedef struct otfx_event {
    otfx_time time;
    otfx_event_type type;
    union {
        struct {
            otfx_ref region;
        } region; /* ENTER, LEAVE */
        struct {
            otfx_ref comm;
            uint32_t peer; /* world rank of the partner */
            uint32_t tag;
            uint64_t bytes;
            uint64_t request; /* ISEND, IRECV only */
            /* Ordinal of this message on its channel at this end, 1-based, 0 unknown. A channel is
             * (comm, sender, receiver, tag); a send's ordinal counts the sender's sends on it, a
             * receive's the receiver's completed receives on it in completion order, so the n-th send
             * and the n-th receive of a channel are one message (the order OTF2 readers pair by). The
             * sender's threads share one count (a rank's), as do the receiver's. */
            uint64_t seq;
        } msg; /* SEND, RECV, ISEND, IRECV */
        struct {
            uint64_t request;
        } request; /* ISEND_COMPLETE, IRECV_REQUEST, CANCELLED, NBC_REQUEST */
        struct {
            otfx_ref comm;
            uint32_t op;   /* OTF2_CollectiveOp value */
            uint32_t root; /* world rank, or UINT32_MAX when the operation has none */
            uint64_t sent, received;
            uint64_t request; /* NBC_COMPLETE only: the NBC_REQUEST's request id */
            /* Instance ordinal of the collective on its communicator, 1-based, 0 unknown: the n-th
             * collective operation (blocking, nonblocking at its start call, or a start of a persistent
             * one) the rank started on `comm`. MPI has every member call a communicator's collectives in
             * the same order, so the n-th is one operation on all of them. A blocking collective's
             * COLL_BEGIN and COLL_END carry the same one; an NBC_COMPLETE its start's. */
            uint64_t seq;
        } coll; /* COLL_BEGIN (comm, seq), COLL_END, NBC_COMPLETE */
        struct {
            otfx_ref metric;
            uint64_t value;
        } metric; /* value's bits per the metric's type */
        struct {
            otfx_ref region;
            int64_t value;
        } phase; /* region of role PHASE */
        struct {
            otfx_reduction strategy;
            otfx_time begin, end; /* the range whose detail was removed */
            uint64_t events_removed;
        } reduction;
    } u;
} otfx_event;

/* ---------------------------------------------------------------------------------------------
 * Traces (module prefix otfx_trace_)
 * -------------------------------------------------------------------------------------------- */

typedef struct otfx_trace otfx_trace;

typedef struct otfx_trace_config {
    size_t budget_bytes;     /* everything the trace holds for data, see docs/otfx-format.md
                              * (fixed working memory of <= 9 chunks + 128 KiB comes on top);
                              * >= 64 KiB and >= 4 * chunk_bytes */
    otfx_reduction strategy; /* one of the five strategies */
    bool compress;           /* compress sealed chunks: LZ4, then Huffman where it pays (default true) */
    uint32_t chunk_bytes;    /* encoded bytes per chunk before sealing (default 32 KiB; 1 KiB .. 1 MiB) */
    /* `type` strategy: classes dropped first to last; OTFX_CLASS_COUNT ends the list early. */
    otfx_event_class type_priority[OTFX_CLASS_COUNT];
    /* Build the task activity graph on append (otfx/structure.h; default true). Off, the graph stays
     * empty: for benchmarks that measure what building it costs. */
    bool structure;
} otfx_trace_config;

/* Defaults: ring, compression on, 32 KiB chunks, type order user functions, other MPI, p2p,
 * collectives, the task activity graph built. */
OTFX_API otfx_trace_config otfx_trace_config_default(size_t budget_bytes);

/* The trace refers to defs (not owned; must outlive the trace) and records one location. */
OTFX_API otfx_status otfx_trace_create(const otfx_trace_config *config, otfx_defs *defs, otfx_ref location,
                                       otfx_trace **out);
OTFX_API void otfx_trace_destroy(otfx_trace *trace);

/* Appends events in time order (equal times allowed). Each event is validated: its time must not go
 * backwards, references must be defined (a PHASE event's region must have role PHASE), a LEAVE needs an
 * open region, an ENTER may not go deeper than OTFX_MAX_CALL_DEPTH. The first invalid event stops
 * the call with OTFX_ERR_INVALID; the events before it are kept, *appended says how many.
 * Under `stop` with a full buffer the events are counted in the statistics but not stored, and the call
 * returns OTFX_ERR_STOPPED (*appended still counts them). A REDUCTION event adds its events_removed to
 * the status' events_reduced[strategy]. */
OTFX_API otfx_status otfx_trace_append(otfx_trace *trace, const otfx_event *events, size_t count,
                                       size_t *appended);
OTFX_API otfx_status otfx_trace_set_strategy(otfx_trace *trace, otfx_reduction strategy);
/* Drops everything held (events, summaries, counters, the task activity graph of otfx/structure.h);
 * definitions and the open calling context stay, so leaves of regions entered before the reset still
 * match. Times still may not go backwards. */
OTFX_API otfx_status otfx_trace_reset(otfx_trace *trace);
OTFX_API otfx_ref otfx_trace_location(const otfx_trace *trace);
OTFX_API otfx_defs *otfx_trace_defs(const otfx_trace *trace);

typedef struct otfx_trace_status {
    size_t bytes_used, budget_bytes; /* sealed data held, and its budget */
    size_t bytes_open; /* encoded events in the open chunk, not yet sealed (part of the fixed overhead) */
    uint64_t events_received;                   /* every event ever appended (stored or not) */
    uint64_t events_held;                       /* events currently stored in detail */
    uint64_t events_reduced[OTFX_REDUCE_COUNT]; /* events removed per strategy */
    uint64_t reductions;                        /* number of reduction steps taken */
    otfx_time first_time, last_time; /* of everything received; first > last when nothing received */
    otfx_time oldest_detail;         /* oldest time still held in detail (OTFX_TIME_MAX if none) */
    otfx_reduction strategy;
    uint32_t chunks, segments; /* sealed chunks holding detail; segments of the hierarchy */
    size_t structure_bytes;    /* the task activity graph (otfx_structure_bytes): outside the budget */
    bool stopped;              /* `stop` strategy has cut off recording */
} otfx_trace_status;

OTFX_API otfx_status otfx_trace_status_get(otfx_trace *trace, otfx_trace_status *out);

/* ---------------------------------------------------------------------------------------------
 * Queries (module prefix otfx_query_). Windows are half-open: [from, to).
 * -------------------------------------------------------------------------------------------- */

/* Called per event; return non-zero to stop the iteration early. */
typedef int (*otfx_event_fn)(const otfx_event *event, void *user);

/* Events held in detail with from <= time < to, in time order, plus the reduction records that
 * overlap the window (at time max(record begin, from)). With context=true, the regions already open at
 * the window's start (or at the start of the oldest detail held) are reported as ENTER events at their
 * original enter times (which lie before `from` when detail is held there), each before the first
 * event later than it, so the whole output stays in time order; after a range without detail, LEAVEs
 * (at the range's start) and ENTERs (at their enter times) bring the consumer's stack to the next
 * detail's, so every LEAVE closes the innermost open ENTER. */
OTFX_API otfx_status otfx_query_events(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                       otfx_event_fn fn, void *user);
/* otfx_query_events for long queries: once it delivered `events_per_lock` events (0: never) since it
 * took the trace's read lock, it releases the lock after the chunk it is reading, so that an append
 * waiting for it gets in, takes the lock again and goes on with the first chunk after that one. The
 * events are those of otfx_query_events while nothing changes; chunks appended meanwhile are read
 * too, chunks a reduction removed meanwhile are not (and ones it rewrote are read as they are then). */
OTFX_API otfx_status otfx_query_events_yielding(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                                otfx_event_fn fn, void *user, uint64_t events_per_lock);

/* A reader: otfx_query_events in pieces, for consumers that take a long window a slice at a time (the
 * replay of the analyses). It hands out the events of otfx_query_events(trace, from, to, context) in
 * arrays and keeps its place in between: the chunk and its decoded payload, and the position inside
 * it, so no chunk is decoded twice and nothing goes through a callback. It holds the trace's read lock
 * only inside otfx_trace_reader_next, never between calls, so appends and reductions go on.
 *
 * While the trace does not change, the concatenated arrays are exactly otfx_query_events' events.
 * Appends between calls are seen (the window permitting). When a reduction or a ring eviction rewrote
 * or removed chunks between calls, the reader finds its chunk again if it is still held unchanged;
 * otherwise it goes on after the last stored event it passed, known by its time and the number of
 * stored events at that time it passed: no event is delivered twice and none still held is skipped
 * (unless a `type` or `depth` thinning removed some events at that very time), the output stays in time
 * order (a reduction record of a range rewritten meanwhile comes no earlier than what was delivered).
 *
 * A reader keeps a chunk's decoded payload and calling context: about 3 chunk sizes plus 24 KiB (100
 * KiB with the context) of memory. One thread uses a reader; close it before destroying its trace. */
typedef struct otfx_trace_reader otfx_trace_reader;

OTFX_API otfx_status otfx_trace_reader_open(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                            otfx_trace_reader **out);
/* Up to `capacity` next events into `events`; *count says how many. *count < capacity: the reader has
 * caught up with what the trace holds now (a later call may find events appended since, unless the
 * window's end was reached: otfx_trace_reader_finished). A failure (OTFX_ERR_CORRUPT, OTFX_ERR_NOMEM)
 * ends the reader: every later call reports it again. */
OTFX_API otfx_status otfx_trace_reader_next(otfx_trace_reader *reader, otfx_event *events, size_t capacity,
                                            size_t *count);
/* True once an event at or after the window's end was met (nothing more will come) or reading failed. */
OTFX_API bool otfx_trace_reader_finished(const otfx_trace_reader *reader);
OTFX_API void otfx_trace_reader_close(otfx_trace_reader *reader);

/* Profiles: per region, exact statistics over a window, whether its events are still held or were
 * reduced. A region instance contributes the part of its duration inside the window (an instance still
 * open ends at the last event's time); exclusive time is the time the region is on top of the stack; a
 * visit counts when its ENTER lies in the window; point-to-point messages (SEND, ISEND sent; RECV,
 * IRECV received) count under the region on top of the stack, under OTFX_REF_NONE outside every
 * region. Reduced ranges are summarised at chunk granularity: a window edge that cuts through a reduced
 * range is pro-rated and the result is flagged approximate. */
typedef struct otfx_profile_entry {
    otfx_ref region;
    uint64_t visits;
    otfx_time inclusive, exclusive;
    uint64_t messages_sent, bytes_sent, messages_received, bytes_received;
} otfx_profile_entry;

typedef struct otfx_profile otfx_profile;
OTFX_API otfx_profile *otfx_profile_create(void);
OTFX_API void otfx_profile_destroy(otfx_profile *profile);
OTFX_API void otfx_profile_clear(otfx_profile *profile);
/* Adds the trace's profile of [from, to) to the profile (so profiles of many traces accumulate). */
OTFX_API otfx_status otfx_query_profile(otfx_trace *trace, otfx_time from, otfx_time to, otfx_profile *into);
OTFX_API otfx_status otfx_profile_merge(otfx_profile *into, const otfx_profile *from);
OTFX_API size_t otfx_profile_size(const otfx_profile *profile);
/* Entries sorted by region reference. */
OTFX_API const otfx_profile_entry *otfx_profile_entries(const otfx_profile *profile);
OTFX_API const otfx_profile_entry *otfx_profile_find(const otfx_profile *profile, otfx_ref region);
OTFX_API bool otfx_profile_approximate(const otfx_profile *profile);

/* Metric profiles: per region and metric, what the metric grew by over the region's visits in [from, to).
 * Metric values are METRIC events right after an ENTER or LEAVE, at its time (the capture library reads
 * its counters there). A visit counts for a metric when its ENTER and its LEAVE lie in the window and
 * both carry a value of the metric from one set: no METRIC event of OTFX_METRIC_SET_MARK and no
 * REDUCTION event between them. inclusive sums the value at the LEAVE minus the value at the ENTER
 * (64-bit wrap-around, as signed), inclusive_ns the visits' times; exclusive takes the callees'
 * inclusive growth and time out, over the visits whose callees all counted (exclusive_visits).
 * Chunks keep these statistics from all the events they had, so the answer is the one of every event
 * ever appended — through reductions too — and decodes only the chunks the window's edges cut; a
 * reduced or thinned chunk an edge cuts is pro-rated and the result flagged approximate (as is one
 * where a stream read more than 32 metrics at once). */
typedef struct otfx_metric_profile_entry {
    otfx_ref region, metric;
    uint64_t visits;
    int64_t inclusive;
    otfx_time inclusive_ns;
    uint64_t exclusive_visits;
    int64_t exclusive;
    otfx_time exclusive_ns;
} otfx_metric_profile_entry;

typedef struct otfx_metric_profile otfx_metric_profile;
OTFX_API otfx_metric_profile *otfx_metric_profile_create(void);
OTFX_API void otfx_metric_profile_destroy(otfx_metric_profile *profile);
/* Adds the trace's metric profile of [from, to) (so profiles of many traces accumulate). */
OTFX_API otfx_status otfx_query_metric_profile(otfx_trace *trace, otfx_time from, otfx_time to,
                                               otfx_metric_profile *into);
OTFX_API size_t otfx_metric_profile_size(const otfx_metric_profile *profile);
/* Entry `index` (sorted by region, then metric); false when index >= size. */
OTFX_API bool otfx_metric_profile_entry_at(const otfx_metric_profile *profile, size_t index,
                                           otfx_metric_profile_entry *out);
OTFX_API bool otfx_metric_profile_approximate(const otfx_metric_profile *profile);

/* Timeline bins: [from, to) split into `count` equal bins (bin k starts at from + floor(k*(to-from)/count));
 * per bin the time per region role, the time in reduced ranges, and the region with the most exclusive
 * time (OTFX_REF_NONE when idle). Reduced ranges contribute their statistics pro-rated. Cost grows
 * with the chunks overlapping the window, not with the run. */
typedef struct otfx_timeline_bin {
    otfx_time role_time[OTFX_ROLE_COUNT]; /* exclusive time per role of the innermost region */
    otfx_time reduced_time;               /* time covered by reduced ranges without detail */
    otfx_ref dominant_region;
} otfx_timeline_bin;
OTFX_API otfx_status otfx_query_timeline(otfx_trace *trace, otfx_time from, otfx_time to, uint32_t count,
                                         otfx_timeline_bin *bins);
/* otfx_query_timeline for long queries: after it decoded `chunks_per_lock` chunks (0: never) since it
 * took the trace's read lock, it releases the lock, so that an append waiting for it gets in, takes it
 * again and goes on with the first chunk after the last one it read (as otfx_query_events_yielding). */
OTFX_API otfx_status otfx_query_timeline_yielding(otfx_trace *trace, otfx_time from, otfx_time to,
                                                  uint32_t count, otfx_timeline_bin *bins,
                                                  uint32_t chunks_per_lock);

/* Point-to-point messages per peer in [from, to), sent and received, sorted by peer (same rules and
 * exactness as profiles). *count in: capacity of
 * `peers`; out: number of peers (when larger than the capacity, only capacity entries were written
 * and OTFX_ERR_INVALID is returned with the needed count). */
typedef struct otfx_peer_stats {
    uint32_t peer;
    uint64_t messages_sent, bytes_sent, messages_received, bytes_received;
} otfx_peer_stats;
OTFX_API otfx_status otfx_query_messages(otfx_trace *trace, otfx_time from, otfx_time to,
                                         otfx_peer_stats *peers, size_t *count);

/* ---------------------------------------------------------------------------------------------
 * OTF2 (module prefix otfx_otf2_)
 * -------------------------------------------------------------------------------------------- */

typedef struct otfx_export_options {
    otfx_time from, to;  /* window; [0, OTFX_TIME_MAX) for everything held */
    bool overwrite;      /* replace an existing archive at the path */
    const char *creator; /* written into the archive; NULL: "otfx" */
} otfx_export_options;

OTFX_API otfx_export_options otfx_export_options_default(void);

/* Writes the traces (each one location, all sharing `defs`) as one OTF2 archive
 * `<directory>/<name>.otf2` with its definitions and clock properties. Regions already open at the
 * window's start are entered at the window's start, and those still open at its end are left there;
 * reduced ranges appear as a region "otfx reduced: <strategy>" whose ENTER carries the attributes
 * otfx::events_removed and otfx::strategy. Refuses to overwrite unless asked. Each trace is exported
 * from a copy taken under its read lock, so another thread may keep appending to it: the append waits
 * for the copy (about a memcpy of what the trace holds), not for the export; events appended after
 * the copy are not exported. */
OTFX_API otfx_status otfx_otf2_export(const char *directory, const char *name, otfx_defs *defs,
                                      otfx_trace *const *traces, size_t trace_count,
                                      const otfx_export_options *options);

/* Several processes writing ONE archive together (e.g. the event places of a job, over MPI). otfx has
 * no MPI: what the processes need from each other comes through these callbacks. Every process calls
 * otfx_otf2_export_shared with the same directory, name and options (the traces are its own); process
 * 0 writes the anchor file and the global definitions (and is the root of the OTF2 collective context
 * archive_opened installs). Each process writes its own locations' events with its own references;
 * then the processes exchange their definitions, every process builds their union (regions by name and
 * role, communicators by name and members, metrics by name, unit and type) and writes mapping tables
 * (its references → the union's) into its locations' local definition files, which OTF2 readers
 * (otf2-print, python3-otf2, otfx_otf2_import) apply. Locations are (rank, thread): every (rank,
 * thread) must be held by one process only. Clock properties: earliest and latest record of all
 * processes. The MPI location group covers every world rank any communicator names; ranks no process
 * exported get placeholders, as in otfx_otf2_export. */
typedef struct otfx_otf2_collective {
    uint32_t size, rank; /* processes taking part; this one's index (0 writes the global definitions) */
    /* Called on every process right after the archive was created, with the OTF2_Archive *: it must
     * install OTF2's collective callbacks (OTF2_MPI_Archive_SetCollectiveCallbacks over a communicator
     * whose rank order is `rank`). Returns 0 on success. */
    int (*archive_opened)(void *otf2_archive, void *user);
    /* Every process contributes `size` bytes at `data`; on return *all (malloc'ed by the callback, freed
     * by otfx with free()) holds every process's contribution one after another in process order and
     * sizes[p] (an array of `size` entries otfx provides) their lengths. Returns 0 on success. Called
     * the same number of times on every process (four times per export: before the archive is
     * created, for the point-to-point messages each holds, for the definitions, at the end). */
    int (*allgather)(const void *data, size_t size, void **all, size_t *sizes, void *user);
    void *user;
} otfx_otf2_collective;

/* What this process wrote (may be NULL). */
typedef struct otfx_export_stats {
    uint64_t events;    /* OTF2 event records of its locations */
    uint32_t locations; /* its locations (placeholders not counted) */
    /* Point-to-point messages its traces held in the window but left out because the other end of the
     * message is in no process's traces (see otfx_otf2_export_shared); and every process's. */
    uint64_t messages_unpaired, messages_unpaired_everywhere;
    /* Collective instances (a communicator's n-th collective operation) its traces held in the window
     * but left out because a member of the communicator that some process exports does not hold it; and
     * every process's (each instance counted once). */
    uint64_t collectives_incomplete, collectives_incomplete_everywhere;
    /* Clock condition (every process's): events written later than recorded because a receive ended
     * before its send began, the largest such correction in ns, and the messages whose send time was
     * still being corrected when the export's rounds ran out (0 unless the archive may hold receives
     * earlier than their sends). The archive properties OTFX::CLOCK_CORRECTED_EVENTS,
     * OTFX::CLOCK_MAX_CORRECTION_NS and OTFX::CLOCK_UNRESOLVED_MESSAGES say the same. */
    uint64_t clock_corrected_events, clock_max_correction_ns, clock_unresolved_messages;
} otfx_export_stats;

/* Collective: see otfx_otf2_collective. Refusals are agreed on: when any process fails (its
 * arguments, an existing archive (checked by process 0), writing its events, the global definitions),
 * every process returns an error (the failing process's status; its message names it) and process 0
 * removes what was written. A failure inside OTF2's own collective setup cannot be agreed on. The
 * archive's files are written under the directory by every process: it must be shared between them.
 * otfx_otf2_export is this with one process.
 *
 * Point-to-point messages: OTF2 readers pair the n-th send of a (sender, receiver, communicator, tag)
 * with the n-th receive. A message whose other end is not in the archive (reduced away on the other
 * rank, outside the window there, or a rank not exported) would shift every later pair of its channel,
 * so the processes exchange the ordinals (otfx_event.u.msg.seq) of the message ends they hold and each
 * writes a send or receive only when the other end is held as well, by any process; what belongs to a
 * message left out goes with it (its request's start or completion), and a completion whose request's
 * start is not in the archive is left out too (an MPI_Irecv's becomes an MpiRecv: the message stays).
 * Ends without an ordinal (0) are written as they are. How many were left out: otfx_export_stats and
 * the archive property OTFX::UNPAIRED_MESSAGES. docs/otfx-format.md, "Messages".
 *
 * Collectives: OTF2 readers match the n-th collective of every member of a communicator. The processes
 * exchange the instance ordinals (otfx_event.u.coll.seq) each member's traces hold whole, and a
 * collective instance is written only when every member of its communicator that some process exports
 * holds it; otherwise its MpiCollectiveBegin/End (or its nonblocking request and completion) are left
 * out and the MPI call's Enter/Leave stay. How many: otfx_export_stats and the archive property
 * OTFX::INCOMPLETE_COLLECTIVES. docs/otfx-format.md, "Collectives".
 *
 * Clocks: a receive written is never earlier than its send (messages with ordinals): one that would be is
 * moved forward to its send's time, and the events after it on its location with it, the move decaying
 * slowly (a controlled logical clock; the processes exchange corrected send times until nothing changes).
 * docs/otfx-format.md, "Clock condition". */
OTFX_API otfx_status otfx_otf2_export_shared(const char *directory, const char *name, otfx_defs *defs,
                                             otfx_trace *const *traces, size_t trace_count,
                                             const otfx_export_options *options,
                                             const otfx_otf2_collective *collective,
                                             otfx_export_stats *stats);

/* Reads an OTF2 archive (path of its .otf2 anchor file) into new traces, one per location, all created
 * with `config` and sharing the newly created *defs. The caller destroys the traces (and then the
 * defs); *traces is an array of *trace_count pointers to be freed with free(). */
OTFX_API otfx_status otfx_otf2_import(const char *anchor_path, const otfx_trace_config *config,
                                      otfx_defs **defs, otfx_trace ***traces, size_t *trace_count);

/* What an import read. Records otfx has no event for (OpenMP, RMA, I/O, ... in other tools' archives)
 * are skipped and counted, not rejected. */
typedef struct otfx_import_stats {
    uint64_t records_read;         /* OTF2 event records of the imported locations */
    uint64_t records_ignored;      /* of these, the ones otfx has no event for */
    uint64_t events_imported;      /* otfx events appended to the traces */
    uint32_t placeholders_skipped; /* locations an otfx export wrote only to complete the MPI group */
} otfx_import_stats;

/* otfx_otf2_import, and fills *stats (may be NULL) on success. */
OTFX_API otfx_status otfx_otf2_import_with_stats(const char *anchor_path, const otfx_trace_config *config,
                                                 otfx_defs **defs, otfx_trace ***traces, size_t *trace_count,
                                                 otfx_import_stats *stats);

#ifdef __cplusplus
}
#endif
#endif

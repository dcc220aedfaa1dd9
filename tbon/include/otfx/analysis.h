/*
 * otfx/analysis.h — analysis modules: what the tree computes for a query, behind one signature
 * (MRNet's filters are the model). Library otfx_analysis, no MPI.
 *
 * A query runs in three steps:
 *   leaf    on every event place, from the otfx traces it holds → a partial result (bytes);
 *   merge   on every inner node (and the root), two partial results → one (associative; the order
 *           in which children answer does not matter);
 *   finish  on the root, the merged result → the reply's record lines (otfx/protocol.h).
 * Partial results travel between places as opaque bytes, so they must not contain pointers or
 * place-local references: name regions by their names, ranks by application rank.
 *
 * A module is one `otfx_analysis_module` value. The built-in ones are status, profile, timeline,
 * messages and events; `load-module PATH` makes a shared object's module available on every place (its
 * `otfx_analysis_module_entry`, OTFX_ANALYSIS_ENTRY_SYMBOL, returns the module); its queries are then
 * `query NAME [options]`. A loaded module's code runs only in helper processes ("Loaded modules run out
 * of process" below), under the module time limit, with its results bounded by the query memory bound
 * (otfx_leaf_input.result_limit, the limit of `out`): write modules that keep no state between calls
 * and build their results with otfx_blob_* (an append past the bound fails). (Only the built-in replay
 * modules keep state between calls, for --follow: otfx_analysis_follow_forget below.)
 */
#ifndef OTFX_ANALYSIS_H
#define OTFX_ANALYSIS_H

#include <otfx/protocol.h>
#include <otfx/replay.h>
#include <otfx/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTFX_ANALYSIS_ABI          5
#define OTFX_ANALYSIS_ENTRY_SYMBOL "otfx_analysis_module_entry"

/* Bytes of a partial result. An append that would take it past `limit` (0: none) fails like one
 * out of memory and sets `too_large` as well: a place hands every leaf an `out` whose limit is the
 * query memory bound, so a result stops growing at the bound while it is built. */
typedef struct otfx_blob {
    unsigned char *data;
    size_t length, capacity;
    bool failed; /* out of memory once, or the limit reached */
    size_t limit;
    bool too_large; /* the limit was reached */
} otfx_blob;
/* Frees the bytes; the limit stays. */
void otfx_blob_free(otfx_blob *blob);
void otfx_blob_append(otfx_blob *blob, const void *bytes, size_t length);
void otfx_blob_u32(otfx_blob *blob, uint32_t value);
void otfx_blob_u64(otfx_blob *blob, uint64_t value);
void otfx_blob_str(otfx_blob *blob, const char *text); /* u32 length + bytes */

/* Reading a blob: every read checks the bounds; a short or malformed blob sets `failed`. */
typedef struct otfx_blob_reader {
    const unsigned char *data;
    size_t length, offset;
    bool failed;
} otfx_blob_reader;
uint32_t otfx_blob_read_u32(otfx_blob_reader *reader);
uint64_t otfx_blob_read_u64(otfx_blob_reader *reader);
/* A pointer into the blob (not NUL-terminated) and its length; NULL when malformed. */
const char *otfx_blob_read_str(otfx_blob_reader *reader, uint32_t *length);
otfx_blob_reader otfx_blob_reader_make(const void *data, size_t length);
/* `length` raw bytes (NULL when fewer are left). */
const void *otfx_blob_read_bytes(otfx_blob_reader *reader, size_t length);
/* Whether everything was read without error. */
bool otfx_blob_reader_done(const otfx_blob_reader *reader);
/* The first four bytes of every built-in module's partial result identify the module and its layout. */
void otfx_blob_header(otfx_blob *blob, uint32_t magic);
bool otfx_blob_read_header(otfx_blob_reader *reader, uint32_t magic);

/* What recording costs one application rank, as its event place knows it (docs/analyses.md, "Overhead
 * compensation"): the capture library measures what writing one record of each kind costs when the rank
 * starts (and again on `overhead measure`), and the place maps those costs to the events its traces hold.
 * The accumulated intrusion at an event of a stream is the sum of the costs of the stream's earlier
 * events, each at the costs measured last before it. */
typedef struct otfx_record_costs {
    uint32_t injected_ns; /* the test point OTFX_TEST_OVERHEAD_NS, included in the costs below */
    /* Picoseconds per event of each otfx_event_type; ENTER and LEAVE: of MPI regions. */
    uint64_t event_ps[OTFX_EV_TYPE_COUNT];
    uint64_t user_enter_ps, user_leave_ps; /* ENTER and LEAVE of the other regions */
} otfx_record_costs;

/* A measurement after the first (`overhead measure`): its costs apply to every thread's events from
 * `since` on, and measuring delayed the stream of thread `thread` by `took_ns` right there. */
typedef struct otfx_cost_change {
    otfx_time since;
    uint32_t thread;
    uint64_t took_ns;
    otfx_record_costs costs;
} otfx_cost_change;

typedef struct otfx_rank_overhead {
    bool measured;           /* the rank sent its measurement (else every cost is 0) */
    uint64_t intrusion_ns;   /* estimated so far: every record the place received × its cost */
    otfx_record_costs costs; /* the first measurement's (MPI_Init), from the stream's start */
    uint32_t change_count;   /* the later ones, in time order */
    const otfx_cost_change *changes;
} otfx_rank_overhead;

/* What an event place knows about one application rank it serves, beyond its traces. */
typedef struct otfx_rank_info {
    uint32_t rank;
    bool recording; /* as the rank last acknowledged */
    bool paused;    /* the application rank is blocked by `app pause` */
    bool finished;  /* it said goodbye (MPI_Finalize) */
    /* While paused / not recording: when the place learned it (now_ns's clock; the rank tells as it
     * pauses or stops recording); 0 otherwise or not known. */
    uint64_t paused_since_ns, not_recording_since_ns;
    uint64_t blocked_ns;      /* time the rank waited for its place (back-pressure) */
    uint64_t dropped_events;  /* malformed batches and drop policy */
    uint64_t events_per_s;    /* received over the last second */
    uint32_t enabled_classes; /* enum otfx_steer_class */
    otfx_rank_overhead overhead;
} otfx_rank_info;

/* A leaf's view of its event place. traces[i] belongs to ranks[rank_of_trace[i]]. */
typedef struct otfx_leaf_input {
    int place;       /* the place's index in the tree (tbon layout) */
    otfx_defs *defs; /* shared by all its traces */
    otfx_trace *const *traces;
    const uint32_t *rank_of_trace;   /* index into ranks */
    const uint32_t *thread_of_trace; /* the thread of each trace (NULL: all are thread 0) */
    size_t trace_count;
    const otfx_rank_info *ranks;
    size_t rank_count;
    uint32_t app_ranks; /* N: ranks of the whole application */
    uint64_t now_ns;    /* the place's clock (the job's global time base) */
    /* The query memory bound: the largest partial result a place keeps (`out` is limited to it). */
    size_t result_limit;
    /* What this place's queries ran into so far (the status module reports them). */
    uint64_t queries_too_large; /* refused: a result would have exceeded the bound */
    uint64_t module_timeouts;   /* stopped at the module time limit */
    uint64_t module_crashes;    /* a loaded module's helper process died */
    /* The other event places of this query, for analyses that replay across places (otfx/replay.h).
     * NULL for a standalone place and for loaded modules (their helper processes must not use MPI). */
    const otfx_place_exchange *exchange;
    /* When the place gives up on this leaf (CLOCK_MONOTONIC ns; 0: never): the module time limit from
     * the leaf's start. A long computation (a replay: otfx_replay_run) should stop there with an
     * error rather than run on unanswered. */
    uint64_t deadline_ns;
} otfx_leaf_input;

/* Overhead compensation of whole traces (docs/analyses.md, "Overhead compensation"), for snapshots in
 * compensated time: for every trace of `input` whose rank `query` selects, copies[i] becomes a new trace
 * on input->defs (same location, twice the original's budget, its strategy, no task activity graph)
 * holding the same events at their compensated times; copies of traces not selected stay NULL. The
 * replay is profile --compensated's, from the beginning of what is held to its end, across the event
 * places with input->exchange (every place of the exchange calls it for the same query). Ranges without
 * detail keep their REDUCTION records, over their compensated ranges; a LEAVE whose region was entered
 * in a range a reduction removed is left out. False with why in `error` (then no copies are left). */
bool otfx_analysis_compensated_traces(const otfx_command *query, const otfx_leaf_input *input,
                                      otfx_trace **copies, char *error, size_t error_size);

typedef struct otfx_analysis_module {
    uint32_t abi; /* OTFX_ANALYSIS_ABI */
    const char *name;
    const char *help; /* one line: what it computes and which options it reads */
    /* Computes this place's partial result for `query` (its from/to/ranks/bins/rows/groups/limit). A
     * trace whose rank is not in query->ranks must be ignored. Returns false with a message in
     * `error` (the reply then says which place failed). */
    bool (*leaf)(const otfx_command *query, const otfx_leaf_input *input, otfx_blob *out, char *error,
                 size_t error_size);
    /* into = merge(into, other). `into` may be empty (length 0): then it becomes a copy of other.
     * Returns false for a malformed `other` (nothing changed). */
    bool (*merge)(const otfx_command *query, otfx_blob *into, const void *other, size_t other_length,
                  char *error, size_t error_size);
    /* The reply's record lines from the merged result (places_answered of places_total answered). */
    bool (*finish)(const otfx_command *query, const void *merged, size_t length, uint32_t places_answered,
                   uint32_t places_total, otfx_text *reply, char *error, size_t error_size);
} otfx_analysis_module;

/* leaf, merge and finish may run on several threads at once (several queries in flight): a module keeps
 * no state between calls. */
typedef const otfx_analysis_module *(*otfx_analysis_entry_fn)(void);

/* The application ranks a query selects (its rank set restricted to 0..app_ranks-1), in rank order,
 * and their split into at most `groups` contiguous groups of near-equal size (group g holds the
 * selected positions [ceil(g*count/groups), ceil((g+1)*count/groups)), so position p is in group
 * floor(p*groups/count)); with count <= groups each rank is its own group. Used by timeline (rows) and
 * messages (groups); modules of other authors may use it too. */
typedef struct otfx_rank_selection {
    uint32_t range_count;
    struct {
        uint32_t first, last;
    } ranges[32];    /* sorted, disjoint, within [0, app_ranks) */
    uint32_t count;  /* selected ranks */
    uint32_t groups; /* min(count, requested groups); 0 when nothing is selected */
} otfx_rank_selection;
void otfx_rank_selection_init(otfx_rank_selection *selection, const otfx_rank_set *set, uint32_t app_ranks,
                              uint32_t groups);
/* Position of a selected rank in the selection (UINT32_MAX when not selected). */
uint32_t otfx_rank_selection_position(const otfx_rank_selection *selection, uint32_t rank);
/* The rank at a position (< count). */
uint32_t otfx_rank_selection_rank(const otfx_rank_selection *selection, uint32_t position);
/* The group of a selected rank (UINT32_MAX when not selected), and a group's first and last rank. */
uint32_t otfx_rank_selection_group(const otfx_rank_selection *selection, uint32_t rank);
void otfx_rank_selection_group_ranks(const otfx_rank_selection *selection, uint32_t group, uint32_t *first,
                                     uint32_t *last);

/* What modules use instead of otfx_query_events (trace.h): otfx_query_events_yielding with
 * OTFX_ANALYSIS_EVENTS_PER_LOCK, so that a long query never holds a trace's read lock for more than
 * about that many events and one chunk, and so never stalls the place's appends (and with them the
 * application) for long. */
#define OTFX_ANALYSIS_EVENTS_PER_LOCK 16384u
otfx_status otfx_analysis_query_events(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                       otfx_event_fn fn, void *user);

/* The built-in replay modules (critical-path, wait-states) keep a follow's replay between its queries
 * (otfx_command.follow; docs/analyses.md "Following the live stream"), keyed by the place's definitions.
 * A place that destroys its traces drops their follow states first with this (NULL: every state of the
 * process). The states are bounded otherwise: at most 8 per place, dropped when idle for 120 s of the
 * place's clock (otfx_leaf_input.now_ns) or when a round failed. */
void otfx_analysis_follow_forget(const otfx_defs *defs);

/* The registry: one per process, built-ins first; lookups and registration take a mutex. */
const otfx_analysis_module *otfx_analysis_find(const char *name);
/* The built-in module answering a command kind (status, profile, timeline, messages, events). */
const otfx_analysis_module *otfx_analysis_for_command(otfx_command_kind kind);
/* dlopen()s PATH into this process, checks its ABI and registers it (for tools and tests: otfx places
 * never do this, they run loaded modules out of process, see below). Returns the module, or NULL with
 * why in `error`.
 * A PATH without '/' names a file in the working directory (it is not searched for like a library).
 * Loading the same object again returns its module; a name already taken by another module is refused.
 * The object is never unloaded. A module may call the otfx_* and otfx_blob_* functions: link it with
 * otfx_analysis (a shared library), as tests/tbon/example_module.c does. */
const otfx_analysis_module *otfx_analysis_load(const char *path, char *error, size_t error_size);
/* Checks a module value (ABI, name [a-z0-9_-]{1,63}, functions) and adds it to the registry. */
bool otfx_analysis_register(const otfx_analysis_module *module, char *error, size_t error_size);
/* The checks of otfx_analysis_register, without registering. */
bool otfx_analysis_validate(const otfx_analysis_module *module, char *error, size_t error_size);
/* Tokens for record lines: user, p2p, collective, mpi_other, phase ("unknown" otherwise), and enter,
 * leave, send, recv, isend, isend_complete, irecv_request, irecv, request_cancelled, coll_begin,
 * coll_end, metric, phase, reduction, nbc_request, nbc_complete. */
const char *otfx_analysis_role_token(otfx_region_role role);
const char *otfx_analysis_event_token(otfx_event_type type);
/* Registered modules (built-ins first), for help listings: NULL past the end. */
const otfx_analysis_module *otfx_analysis_at(size_t index);

/* ---- loaded modules run out of process ---------------------------------------------------------------
 *
 * A module loaded with `load-module` is code of a third party: otfx places never run it in their own
 * process. Every call of it — loading and checking it (probe), a leaf, the merge of the partial results
 * a place collected (and at the root the finish) — runs in a helper process forked for that call,
 * which dlopen()s the module and reads a copy-on-write view of the place's memory (its traces, the
 * results to merge). So a module that crashes kills its helper only ("module NAME crashed (SIGSEGV)
 * while its leaf"), one that hangs is killed at the time limit ("module NAME did not answer within
 * 30 s …"), one whose result grows past the query memory bound is stopped there, and the place, its
 * traces and the job are never touched. The helper never calls MPI and never returns into the caller's
 * code. Built-in modules (status, profile, timeline, messages, events) run in the place's process: their
 * leaves on the worker thread under the same time limit (a leaf over the limit is answered with that
 * error and its thread is not waited for), their merges on the MPI thread.
 *
 * A call is started, then polled without blocking until it ended, then taken (or cancelled: killed and
 * reaped). The caller's memory that the call reads (input, parts) must stay unchanged until the fork,
 * i.e. until the start function returned. */
typedef struct otfx_module_call otfx_module_call;

typedef struct otfx_module_limits {
    uint64_t time_limit_ns; /* the helper is killed after this long (0: no limit) */
    size_t result_limit;    /* the largest result (partial result, merged result, reply) it may return */
} otfx_module_limits;

/* dlopen()s PATH in a helper and checks the module: the result's data is "NAME\0HELP". */
otfx_module_call *otfx_module_call_probe(const char *path, const otfx_module_limits *limits, char *error,
                                         size_t error_size);
/* The module NAME of PATH computes its leaf over `input` (out limited to limits->result_limit). */
otfx_module_call *otfx_module_call_leaf(const char *path, const char *name, const otfx_command *query,
                                        const otfx_leaf_input *input, const otfx_module_limits *limits,
                                        char *error, size_t error_size);
/* Merges parts[0 .. part_count) in this order into one result (answered[i]: the leaves part i covers); a
 * part the module refuses is left out and listed. With `finish`, the merged result is then finished
 * into the reply's record lines for places_total places (places_answered: the merged parts' leaves). */
otfx_module_call *otfx_module_call_merge(const char *path, const char *name, const otfx_command *query,
                                         const otfx_blob *parts, const uint32_t *answered, size_t part_count,
                                         bool finish, uint32_t places_total, const otfx_module_limits *limits,
                                         char *error, size_t error_size);
/* A descriptor that becomes readable when the helper writes or ends (for poll()). */
int otfx_module_call_fd(const otfx_module_call *call);
/* Reads what the helper wrote; true once the call ended: it answered, died, or its time ran out (the
 * helper is then killed). Never blocks. */
bool otfx_module_call_poll(otfx_module_call *call);

typedef struct otfx_module_result {
    bool ok;           /* the module answered and succeeded */
    bool too_large;    /* a result reached the query memory bound */
    bool timed_out;    /* killed at the time limit */
    bool crashed;      /* the helper died (a signal, or it wrote nonsense) */
    char error[512];   /* why not ok (names the module) */
    otfx_blob data;    /* probe: "NAME\0HELP"; leaf: partial result; merge: merged result or,
                        * with finish, the reply's record lines */
    uint32_t *refused; /* merge: indexes of the parts the module refused */
    uint32_t refused_count;
    otfx_text reasons; /* their reasons, one line each */
} otfx_module_result;
/* The outcome of a call (a call not ended yet is cancelled first); frees the call. */
void otfx_module_call_take(otfx_module_call *call, otfx_module_result *out);
/* Kills the helper if it still runs, reaps it, frees the call (NULL: nothing). */
void otfx_module_call_cancel(otfx_module_call *call);
void otfx_module_result_free(otfx_module_result *result);

#ifdef __cplusplus
}
#endif
#endif

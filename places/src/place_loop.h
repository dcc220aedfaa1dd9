/*
 * place_loop.h — the running place: its main loop, threads and tree state (private to places/).
 *
 * Threads of a place process:
 *   MPI thread       place_loop.c's loop: every MPI call of the place except a snapshot's collectives
 *                    (batches, clock syncs, control answers on the tool communicator; tree messages on
 *                    tree_comm), the tree's requests (tree.c) and the root's client requests
 *   worker thread    built-in analysis modules' leaf() on this place's traces (place_loop.c), results
 *                    queued back; one whose leaf overran the module time limit is given up on (its query
 *                    answered with that error) and a new one takes the next jobs
 * and, for a loaded module's call (leaf, merge, load), a helper process forked from the MPI thread
 * (otfx/analysis.h, otfx_module_call_*), polled by the loop.
 *   snapshot thread  one snapshot at a time (MPI_THREAD_MULTIPLE only; otherwise the MPI thread writes it)
 *   server thread    the root only: libevent (otfx/server.h)
 * Anything queued for the MPI thread signals `wake`, so the loop handles it at once; otherwise the loop
 * sleeps on it for 50 µs, doubling up to 1 ms while nothing happens.
 */
#ifndef OTFX_PLACES_PLACE_LOOP_H
#define OTFX_PLACES_PLACE_LOOP_H

#include "event_place_internal.h"
#include "snapshot.h"
#include "tree_messages.h"

#include <otfx/analysis.h>
#include <otfx/protocol.h>
#include <otfx/server.h>
#include <otfx/tbon.h>

#include <pthread.h>

/* A leaf computation for the worker thread: the MPI thread copies the place's view (trace pointers,
 * rank infos) into the job, so the worker never reads structures the MPI thread changes. */
struct leaf_job {
    struct leaf_job *next;
    uint32_t request;
    const otfx_analysis_module *module;
    otfx_command command;
    otfx_leaf_input input;
    otfx_trace **traces;
    uint32_t *rank_of_trace, *thread_of_trace;
    otfx_rank_info *ranks;
    /* the worker's answer */
    bool ok;
    otfx_blob blob; /* limited to the query memory bound */
    char error[256];
    uint64_t took_ns; /* how long the leaf ran */
};

/* One worker thread. Freed by the MPI thread when it is joined, or by the thread itself when the MPI
 * thread gave up on it (its job overran the time limit): it then never touches the runtime again. */
struct worker {
    pthread_t thread;
    pthread_mutex_t lock; /* job, abandoned */
    struct leaf_job *job; /* running now */
    uint64_t job_started_ns;
    bool abandoned;
};

/* A snapshot this place writes with the other event places. */
struct snapshot_job {
    uint32_t request; /* the tree request (0: the snapshot at exit) */
    otfx_command command;
    otfx_trace **traces; /* this place's part, chosen on the MPI thread (place_snapshot_select) */
    size_t trace_count;
    bool selected; /* false: out of memory choosing them */
    place_snapshot_result result;
    bool on_thread;
};

/* A module loaded with load-module: its name and shared object. Its code runs only in helper processes,
 * each of which loads it again. */
struct loaded_module {
    char name[64];
    char path[1024];
};

/* A partial result of a loaded module's query waiting for its merge (in a helper process). */
struct stashed_part {
    otfx_blob blob;
    uint32_t answered; /* leaves it covers */
    uint32_t from;     /* the place it came from (this one for the own leaf) */
};

/* What a helper process is doing for a request. */
enum module_call_kind { CALL_NONE = 0, CALL_OWN_LEAF, CALL_MERGE, CALL_PARTIAL, CALL_LOAD };

/* One tree request as this place sees it: sent to its children, its own part (event places), and the
 * answers merged so far. */
struct tree_request {
    uint32_t id;
    enum tree_kind kind; /* TREE_QUERY, TREE_COMMAND or TREE_LOAD_MODULE */
    otfx_command command;
    uint64_t argument;
    const otfx_analysis_module *module; /* queries */
    uint32_t children_waiting;
    bool own_pending;
    /* queries: leaves merged and failed; commands: places ok and failed */
    uint32_t count_ok, count_failed;
    otfx_blob merged; /* queries */
    otfx_text errors; /* queries: "place I: why; …" */
    otfx_text lines;  /* commands: one record line per place */
    /* own part of a command at an event place */
    uint64_t control_sequence; /* waiting for the ranks to answer it (0: not waiting) */
    bool snapshot_after_flush; /* snapshot: write it once the FLUSH was answered */
    bool snapshot_running;
    uint64_t started_ns;
    /* a loaded module's query (its calls run in helper processes): the results waiting for the merge,
     * and the helper working for the request */
    const struct loaded_module *loaded;
    struct stashed_part *parts;
    size_t part_count, part_capacity;
    otfx_module_call *call;
    enum module_call_kind call_kind;
    bool merge_done; /* `merged` holds the merged result (at the root: the reply's lines) */
    /* the root: the client that asked (client 0: nobody waits, e.g. after `record window` replied) */
    uint64_t client;
    uint32_t client_request;
    bool partial_sent;
    bool at_exit; /* the root's snapshot at exit */
    bool final;   /* the last command of a failed job (tree.c, "A failed job") */
};

struct pending_send {
    struct tree_buffer message;
    MPI_Request request;
};

struct record_window {
    uint64_t from, to;
};

enum root_end_stage {
    ROOT_RUNNING = 0,
    ROOT_EXIT_SNAPSHOT, /* the snapshot at exit is being written */
    ROOT_DRAINING,      /* waiting for requests in flight before the job-ended notice */
    ROOT_FAILING,       /* a failed job: its last snapshot is being written, then the root ends the job */
    ROOT_SHUTDOWN
};

/* A failed job as this place knows it (tree.c, "A failed job"). */
struct job_failure {
    bool failed;          /* the root: an application rank ended without MPI_Finalize, or SIGINT/SIGTERM */
    bool interrupted;     /* by SIGINT/SIGTERM */
    uint32_t exit_code;   /* what the job ends with */
    char cause[640];      /* "rank 3 died of SIGSEGV (…) in compute", "interrupted by SIGTERM" */
    bool final_sent;      /* the root: the last command went down */
    uint64_t deadline_ns; /* the other places, once their part is done: end the job themselves by then */
};

struct place_runtime {
    struct event_place *place;
    bool tree; /* false: a standalone event place (no places_comm or layout) */
    const otfx_tbon_layout *layout;
    uint32_t index, parent, leaves_below;
    uint32_t *children;
    uint32_t child_count;
    bool is_event, is_root;
    MPI_Comm tree_comm;  /* dup of places_comm */
    MPI_Comm event_comm; /* split of places_comm: the event places (MPI_COMM_NULL on the others) */
    bool threaded_snapshots;
    const char *snapshot_dir; /* NULL: the working directory */

    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool signalled;

    /* worker thread (under lock) */
    struct worker *worker; /* NULL: none running (started by the next job) */
    bool worker_stop;
    struct leaf_job *jobs, *jobs_tail, *results, *results_tail;
    size_t unsent_bytes; /* tree messages sent but not taken yet (under lock): a new leaf waits while they
                          * are above twice the query memory bound */

    /* queries: the bound of a partial result, the time limit of a module's call, what they ran into */
    size_t query_memory;
    uint64_t module_timeout_ns;
    uint64_t queries_too_large, module_timeouts, module_crashes;
    /* modules loaded with load-module (their code runs only in helper processes) */
    struct loaded_module **loaded_modules;
    size_t loaded_count, loaded_capacity;

    /* snapshot thread */
    pthread_t snapshot_thread;
    bool snapshot_busy, snapshot_finished; /* finished: under lock */
    struct snapshot_job snapshot;

    struct pending_send *sends;
    size_t send_count, send_capacity;
    unsigned char *receive_buffer;
    size_t receive_capacity;

    struct tree_request *requests;
    size_t request_count, request_capacity;
    uint32_t next_request;

    bool own_ended;
    uint32_t children_done;
    bool done_sent, shutdown;
    uint32_t enabled_classes;
    uint64_t next_rate_ns, next_watch_ns;

    struct job_failure failure;
    bool status_written; /* the root: OTFX_RUN_STATUS says how the job ended */

    /* the root */
    otfx_server *server;
    char job_id[96];
    enum root_end_stage end_stage;
    uint64_t end_stage_ns;
    struct record_window *windows;
    size_t window_count, window_capacity;
    otfx_server_request *waiting; /* client queries waiting to enter the tree (MAX_QUERIES_IN_TREE) */
    size_t waiting_count, waiting_capacity;
};

uint64_t place_now_ns(void);
/* Wakes the MPI thread (any thread). */
void place_wake(struct place_runtime *runtime);

/* place_loop.c: the worker and snapshot threads, the tree's sends. */
bool place_worker_submit(struct place_runtime *runtime, struct leaf_job *job);
struct leaf_job *place_worker_take_result(struct place_runtime *runtime);
void place_leaf_job_free(struct leaf_job *job);
/* The leaf running on the worker thread, when it overran `limit`: the worker is given up on (a new one
 * takes the next jobs) and the job's request id and module name are returned. */
bool place_worker_overdue(struct place_runtime *runtime, uint64_t now, uint64_t limit, uint32_t *request,
                          const char **module);
/* Starts writing runtime->snapshot (on the snapshot thread, or right here when MPI is not
 * MPI_THREAD_MULTIPLE; then it is finished on return). */
void place_snapshot_start(struct place_runtime *runtime);
/* Whether the snapshot started last has finished (its result in runtime->snapshot.result). */
bool place_snapshot_take(struct place_runtime *runtime);
/* Sends a message to `place` on tree_comm (nonblocking; takes the buffer). */
void place_tree_send(struct place_runtime *runtime, uint32_t place, struct tree_buffer *message);

/* tree.c */
bool tree_start(struct place_runtime *runtime);
/* A message arrived on tree_comm from place `source`. */
void tree_handle_message(struct place_runtime *runtime, int source, const unsigned char *bytes,
                         size_t length);
/* Everything that is not a message: server requests, worker results, snapshot completion, control
 * answers, partial results, windows, the end of the run. Returns whether anything happened. */
bool tree_poll(struct place_runtime *runtime);
/* The standalone loop and the tree's end both ask this: leave the loop now. */
bool tree_finished(const struct place_runtime *runtime);
void tree_stop(struct place_runtime *runtime);

#endif

/*
 * place_loop.h — the running place: its main loop and threads (private to places/). Its part of the tool
 * tree is an otfx_tree (otfx/tree.h) that this place hosts (tree_host.c).
 *
 * Threads of a place process:
 *   MPI thread       place_loop.c's loop: every MPI call of the place except a snapshot's collectives
 *                    (batches, clock syncs, control answers on the tool communicator; tree messages on
 *                    tree_comm), the tree's requests and the root's client requests (otfx/tree.h)
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
#include "place_exchange.h"
#include "snapshot.h"

#include <otfx/analysis.h>
#include <otfx/protocol.h>
#include <otfx/tbon.h>
#include <otfx/tree.h>

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
    otfx_cost_change *cost_changes; /* the ranks' re-measured costs (ranks[r].overhead.changes), copied */
    /* a replay analysis: the worker begins an exchange with the other event places for it */
    bool exchanges;
    place_exchange *exchange;
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
    /* when the write began: the oldest detail the chosen traces held (UINT64_MAX: none), and how many of
     * them a reduction may have taken detail of the window from (ring: its oldest detail is after the
     * window's start; the other strategies thin anywhere) */
    uint64_t held_from;
    uint32_t window_reduced;
    /* snapshot --compensated: the place's view of its ranks and traces, taken on the MPI thread like a
     * leaf's, for the compensation replay that precedes the write (NULL: out of memory) */
    struct leaf_job *compensation;
    /* and its exchange with the other event places, begun on the MPI thread before any later request's
     * leaf can begin (so none of its messages is taken for a past request's) */
    place_exchange *exchange;
    place_snapshot_result result;
    bool on_thread;
};

struct place_runtime {
    struct event_place *place;
    otfx_tree *tree; /* this place's part of the tool tree (otfx/tree.h; this file hosts it: tree_host.c) */
    otfx_place_role role;
    const otfx_tbon_layout *layout; /* NULL: a standalone event place (no places_comm or layout) */
    uint32_t index;                 /* the place index (0 standalone) */
    MPI_Comm event_comm;            /* split of places_comm: the event places (MPI_COMM_NULL on the others) */
    /* the event places' exchange for replay analyses (place_exchange.h; NULL: none, e.g. without
     * MPI_THREAD_MULTIPLE, where the worker must not call MPI) */
    place_exchange_hub *exchange_hub;
    bool threaded_snapshots;
    const char *snapshot_dir; /* NULL: the working directory */

    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool signalled;

    /* worker thread (under lock) */
    struct worker *worker; /* NULL: none running (started by the next job) */
    bool worker_stop;
    struct leaf_job *jobs, *jobs_tail, *results, *results_tail;
    size_t unsent_bytes; /* tree messages sent but not taken yet (under lock; otfx_tree_host.backlog): a new
                          * leaf waits while they are above twice the query memory bound */
    size_t query_memory;
    uint64_t module_timeout_ns;

    /* snapshot thread */
    pthread_t snapshot_thread;
    bool snapshot_busy, snapshot_finished; /* finished: under lock */
    struct snapshot_job snapshot;

    uint32_t enabled_classes;  /* the event classes the served ranks record (enable/disable) */
    uint64_t metrics_selected; /* the metrics the served ranks read (a mask over the metric table) */
    uint64_t next_rate_ns, next_watch_ns;
};

uint64_t place_now_ns(void);
/* Wakes the MPI thread (any thread). */
void place_wake(struct place_runtime *runtime);

/* place_loop.c: the worker and snapshot threads. */
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
/* tree_host.c: the tree's host interface on this place (otfx_tree_host). */
otfx_tree_host place_tree_host(struct place_runtime *runtime);

#endif

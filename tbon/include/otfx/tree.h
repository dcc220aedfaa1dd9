/*
 * otfx/tree.h — the tool tree's runtime on one place (library otfx_tree, over MPI).
 *
 * Every place of a job runs one tree object (otfx_tree) on its MPI thread. The tree object is the place's
 * part of the tree-based overlay network: requests go down, results and acknowledgements come up, the
 * root serves clients (otfx/server.h) and ends the job. Its role in the tree (otfx/tbon.h,
 * otfx_place_role) decides what it does:
 *   leaf       (serves ranks)  carries out its own part of a request through the host (below)
 *   inner                      forwards requests to its children and merges their answers
 *   root                       numbers the clients' requests, answers them, ends the job
 *   standalone (no tree)       serves ranks and answers its own requests: there are no clients
 * A root can also be the leaf (one place: P = 1).
 *
 * Requests. The root numbers every client request (the tree request id) and sends it to its children
 * as QUERY, COMMAND or LOAD_MODULE; every place forwards it to its own children and, when it has a part
 * of its own (places serving ranks; load-module: every place), carries that out. A place answers its
 * parent (RESULT for queries, ACK for commands) once its part and every child answered; queries' partial
 * results are merged with the module's merge() as they arrive. The root finishes the merged result and
 * replies; when leaves are still missing 200 ms after the request it sends a PARTIAL first. At most 8
 * queries are in the tree at once; more wait at the root, in order.
 *
 * Command replies (record lines, otfx/protocol.h), one line per place that acted and a summary:
 *   place index=I command=NAME ok=1 ranks=R answered=A [recording=K | paused=K | classes=BITS |
 *         traces=T events_dropped=E | strategy=S traces=T | archive=PATH events=E locations=L
 *         thread=snapshot|mpi | module=NAME]          (ok=0 error=TEXT when it failed there)
 *   summary command=NAME places=N ok=K failed=F
 * The fields after `ok` are the host's (otfx_tree_host.carry_out, snapshot_take).
 * `record window D` is answered at once with `window from=T0 to=T1` (place clock ns, the job's global
 * time base), and every client gets `notice event=window-ended from=T0 to=T1` after T1.
 *
 * End of the run. A leaf prints its report once its ranks said goodbye (otfx_tree_host.ranks_ended); a
 * place sends DONE up once it and all its children are done. The root then writes the snapshot at exit
 * (snapshot_at_exit) as an ordinary snapshot command, lets the requests in flight finish (at most 10 s),
 * sends `notice event=job-ended`, stops the server and sends SHUTDOWN down the tree.
 *
 * A failed job. An application rank that ends without MPI_Finalize leaves the others unable to finish:
 * MPI_Finalize would wait for it for ever. Its leaf says so up the tree (FAILED; otfx_tree_host.next_death);
 * so does SIGINT or SIGTERM at the root (otfx_tree_host.interrupted). The root then sends one last command
 * down, a snapshot to snapshot_on_failure (else snapshot_at_exit, else none) whose argument says "final"
 * and carries the exit status: every leaf flushes its running ranks (waiting at most 2 s for ranks that
 * do not answer), writes its part, prints its report and answers. The root writes run_status, removes
 * the session file and ends the job with MPI_Abort and the exit status: a signal's number, MPI_Abort's
 * error code, exit()'s status, 128 + the signal of an interruption. A place whose part is done ends the
 * job itself if the root has not done so 60 s later (the root may be what failed).
 *
 * Triggers (otfx/trigger.h). The root keeps the job's triggers (config.triggers at the start, then
 * `trigger add|remove`, which also go down to every place as commands: the host installs them in
 * carry_out). A place serving ranks evaluates them on its events; when one holds it stops evaluating that
 * trigger and reports it up (otfx_tree_host.next_firing). The root acts on the first report of an armed
 * trigger — the trigger's actions go down as ordinary commands (app pause, record pause, a snapshot of
 * [time − before, time + after] once time + after has passed) and clients get notices — and merges the
 * reports of other places about the same firing (counted, noticed, not acted on). Once the actions are
 * answered the root arms the trigger again on every place (`trigger arm`, while it fired fewer than its
 * `times`); reports of events from before that are merged too. `trigger list` is answered by the root.
 *
 * Threads. Every otfx_tree_* call belongs on the place's MPI thread; the host's callbacks are called
 * there too, except `wake` (from the root's server thread).
 */
#ifndef OTFX_TREE_H
#define OTFX_TREE_H

#include <otfx/analysis.h>
#include <otfx/protocol.h>
#include <otfx/tbon.h>

#include <mpi.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct otfx_tree otfx_tree;

/* steer(): the command was sent, but no served rank runs: nothing to wait for. */
#define OTFX_TREE_NO_RANK_RUNNING UINT64_MAX

/* A trigger's condition held at a place serving ranks (otfx_tree_host.next_firing). */
typedef struct otfx_tree_firing {
    uint64_t trigger; /* its id */
    uint64_t time_ns; /* the event that made it hold (place clock ns) */
    uint32_t rank;    /* the application rank */
    char detail[256]; /* what was seen: "MPI_Allreduce took 312.5 ms (more than 200 ms)" */
} otfx_tree_firing;

/* A built-in module's leaf that the host's worker finished (otfx_tree_host.leaf_take). */
typedef struct otfx_tree_leaf_result {
    uint32_t request;   /* as given to leaf_start */
    const char *module; /* the module's name (a built-in module: static) */
    bool ok;
    otfx_blob blob;   /* the partial result; the tree takes it (and frees it) */
    bool too_large;   /* failed because the result exceeded the query memory bound */
    char error[256];  /* !ok: why */
    uint64_t took_ns; /* how long the leaf ran: over the module time limit it counts as timed out */
} otfx_tree_leaf_result;

/* What the tree needs from the place that hosts it: callbacks with the host's context, all on the MPI
 * thread unless said otherwise. A place serving no ranks (inner, root of P ≥ 2) never gets the leaf
 * calls; they may be NULL there. */
typedef struct otfx_tree_host {
    void *context;

    /* ---- every place */
    /* Any thread: wakes the MPI thread's loop (the root's server has a request). */
    void (*wake)(void *context);
    /* The bytes of tree messages sent but not yet taken by their receivers, whenever they change (the
     * host's worker starts no new leaf while they exceed twice the query memory bound). */
    void (*backlog)(void *context, size_t unsent_bytes);
    /* The root: SIGINT or SIGTERM caught (the signal), 0 if none. */
    int (*interrupted)(void *context);

    /* ---- places serving ranks: queries */
    /* Runs a built-in module's leaf for `request` on the host's worker thread, over a copy of the
     * place's view of its ranks and traces. Returns NULL when started, else why not (static text). */
    const char *(*leaf_start)(void *context, uint32_t request, const otfx_analysis_module *module,
                              const otfx_command *command);
    /* A finished leaf, if any (false: none). */
    bool (*leaf_take)(void *context, otfx_tree_leaf_result *result);
    /* The leaf running on the worker, when it overran `limit_ns`: the host gives up on that worker (a
     * new one takes the next leaves) and says which request and module it ran. */
    bool (*leaf_overdue)(void *context, uint64_t limit_ns, uint32_t *request, const char **module);
    /* The place's view for a loaded module's leaf (run in a helper process, which copies what it needs):
     * fills *input and returns what keeps it alive until leaf_view_free; NULL when out of memory. */
    void *(*leaf_view)(void *context, const otfx_command *command, otfx_leaf_input *input);
    void (*leaf_view_free)(void *context, void *view);

    /* ---- places serving ranks: commands */
    /* Sends the command's steering message to the served ranks: returns the sequence number whose
     * answers `steered` tells, OTFX_TREE_NO_RANK_RUNNING when no rank runs, or 0 when the command is
     * nothing the ranks do (then carry_out does it at once). A snapshot or reset flushes the ranks, and
     * so does a query that flushes first (otfx_command_flushes_first: critical-path, wait-states): the
     * tree starts its leaf once `steered` says the ranks answered, or after at most 2 s (a quarter of the
     * module time limit when that is shorter). */
    uint64_t (*steer)(void *context, const otfx_command *command, uint64_t argument);
    /* Whether every running rank answered steering message `sequence` (or ended). */
    bool (*steered)(void *context, uint64_t sequence);
    /* Carries out what the place itself does for a command once its ranks answered (reset: empties the
     * traces; reduction: sets the strategy; the others: nothing) and appends the fields of its line
     * (" key=value", otfx_kv_*) to `fields`, and whole record lines of its own that follow that line to
     * `lines` (metrics: one per group of ranks). Returns whether it succeeded (false for a command that
     * is not one for places serving ranks, with an `error` field). */
    bool (*carry_out)(void *context, const otfx_command *command, uint64_t argument, otfx_text *fields,
                      otfx_text *lines);
    /* Starts writing this place's part of the snapshot `command` asks for (a collective of the places
     * serving ranks). Returns false when a snapshot is being written already (the tree asks again). */
    bool (*snapshot_start)(void *context, uint32_t request, const otfx_command *command);
    /* Whether the snapshot of `request` finished: then *ok and its line's fields. */
    bool (*snapshot_take)(void *context, uint32_t request, bool *ok, otfx_text *fields);
    /* The last command of a failed job arrived: ranks still running are reported so at the end. */
    void (*job_failing)(void *context);
    /* Prints the place's end-of-run report (once; later calls do nothing). */
    void (*report)(void *context);
    /* Once every served rank said goodbye: prints the report and returns true, once (never when the
     * report was printed already: by the last command of a failed job, which ends the run anyway). */
    bool (*ranks_ended)(void *context);
    /* A served rank that ended without MPI_Finalize, not told yet: its rank, the exit status the job
     * ends with because of it and what happened ("rank 3 died of SIGSEGV (…) in compute"). */
    bool (*next_death)(void *context, uint32_t *rank, uint32_t *exit_code, char *cause, size_t size);
    /* A trigger whose condition held and that was not reported yet (the place evaluates it no more until
     * `trigger arm` comes down); false: none. */
    bool (*next_firing)(void *context, otfx_tree_firing *firing);
    /* Receives a late-sender trigger could not evaluate (their sender is served by another place) since
     * the last call: trigger `*trigger`, `*count` more of them; false: none to say now (NULL: never). */
    bool (*next_unseen)(void *context, uint64_t *trigger, uint64_t *count);
} otfx_tree_host;

/* The place's settings that the tree uses. */
typedef struct otfx_tree_config {
    MPI_Comm places_comm;           /* the places' communicator; MPI_COMM_NULL: standalone */
    const otfx_tbon_layout *layout; /* NULL: standalone */
    uint32_t index;                 /* this place's index in the layout */
    int place_rank;                 /* for messages: "otfx-place RANK: …" */
    size_t query_memory;            /* the bound of a partial result (OTFX_QUERY_MEMORY) */
    uint64_t module_timeout_ns;     /* the time limit of a module's call (OTFX_MODULE_TIMEOUT) */
    /* the root */
    const char *listen, *session_dir, *job_id; /* the server's (otfx/server.h); job_id NULL: made up */
    const char *snapshot_at_exit;              /* NULL: none */
    const char *snapshot_on_failure;           /* NULL: snapshot_at_exit */
    bool snapshot_overwrite;
    const char *run_status; /* NULL: none; else the file saying how the job ended (for otfx-run) */
    /* OTFX_TRIGGERS: triggers separated by ';', ids 1, 2, … in order (NULL: none); the places install the
     * same list themselves */
    const char *triggers;
} otfx_tree_config;

/* What queries at this place ran into (the status module reports them). */
typedef struct otfx_tree_counts {
    uint64_t queries_too_large, module_timeouts, module_crashes;
} otfx_tree_counts;

/* Starts the place's part of the tree: standalone without a places' communicator, else (collective over
 * the places) a duplicate of places_comm for the tree's messages and, at the root, the clients' server
 * (a server that cannot start is reported and the job runs on without steering). Returns NULL and says
 * why on stderr when it cannot start. The host must outlive the tree. */
otfx_tree *otfx_tree_start(const otfx_tree_config *config, const otfx_tree_host *host);
/* The place's role in the tree. */
otfx_place_role otfx_tree_role(const otfx_tree *tree);
/* Receives the tree messages waiting (at most 64) and completes the sends; returns whether anything
 * arrived. */
bool otfx_tree_receive(otfx_tree *tree);
/* Everything that is not a message: client requests, finished leaves and snapshots, the ranks' answers,
 * partial results, windows, failures, the end of the run. Returns whether anything happened. */
bool otfx_tree_poll(otfx_tree *tree);
/* Whether the place leaves its loop now: the tree shut down (standalone: every rank said goodbye and no
 * request is left). */
bool otfx_tree_finished(const otfx_tree *tree);
const otfx_tree_counts *otfx_tree_counts_of(const otfx_tree *tree);
/* Waits for the sends still in flight, answers no request any more, stops the server, frees the tree. */
void otfx_tree_stop(otfx_tree *tree);

#ifdef __cplusplus
}
#endif
#endif

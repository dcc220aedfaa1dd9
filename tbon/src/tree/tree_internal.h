/*
 * tree_internal.h — the tree object and its requests, shared by the tree runtime's files (private to
 * tbon/src/tree/; the manual is otfx/tree.h).
 *
 *   tree.c           start, stop, the poll, the request table, messages in (checked, then by kind)
 *   transport.c      the tree's MPI messages on tree_comm: nonblocking sends, receives
 *   tree_messages.c  the wire format (tree_messages.h)
 *   down.c           routing down: a request to the children and to the own part
 *   up.c             merging up: children's partial results and acknowledgements, the answer to the parent,
 *                    DONE and FAILED
 *   policy.c         when a request is answered, when a PARTIAL is due, how many queries enter, how long
 *                    the end waits (policy.h: no MPI, tested alone)
 *   leaf.c           the own part at a place serving ranks, through the host (otfx_tree_host)
 *   modules.c        modules loaded with load-module: every call in a helper process
 *   root.c           the root's client side: the server's requests, replies, windows
 *   ending.c         the root's end of the run, and a failed job
 *   triggers.c       the root's triggers: which report is acted on, the actions, notices, trigger list
 */
#ifndef OTFX_TBON_TREE_INTERNAL_H
#define OTFX_TBON_TREE_INTERNAL_H

#include "policy.h"
#include "tree_messages.h"

#include <otfx/analysis.h>
#include <otfx/protocol.h>
#include <otfx/server.h>
#include <otfx/tbon.h>
#include <otfx/tree.h>

#include <mpi.h>

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

/* One tree request as this place sees it: sent to its children, its own part (places serving ranks),
 * and the answers merged so far. */
struct tree_request {
    uint32_t id;
    enum tree_kind kind; /* TREE_QUERY, TREE_COMMAND or TREE_LOAD_MODULE */
    otfx_command command;
    uint64_t argument;
    const otfx_analysis_module *module; /* queries */
    struct answer_progress progress;    /* children and own part still out (policy.h) */
    /* queries: leaves merged and failed; commands: places ok and failed */
    uint32_t count_ok, count_failed;
    otfx_blob merged; /* queries */
    otfx_text errors; /* queries: "place I: why; …" */
    otfx_text lines;  /* commands: one record line per place */
    /* own part of a command at a place serving ranks */
    uint64_t steering;         /* the steering message whose answers it waits for (0: not waiting) */
    bool snapshot_after_flush; /* snapshot: write it once the ranks answered the flush */
    bool snapshot_running;
    bool leaf_after_flush; /* a query that flushes first: start its leaf once the ranks answered */
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
    bool at_exit;     /* the root's snapshot at exit */
    uint64_t trigger; /* the root: an action of this trigger's firing (triggers.c) */
    bool final;       /* the last command of a failed job (ending.c) */
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

/* A failed job as this place knows it (ending.c). */
struct job_failure {
    bool failed;          /* the root: an application rank ended without MPI_Finalize, or SIGINT/SIGTERM */
    bool interrupted;     /* by SIGINT/SIGTERM */
    uint32_t exit_code;   /* what the job ends with */
    char cause[640];      /* "rank 3 died of SIGSEGV (…) in compute", "interrupted by SIGTERM" */
    bool final_sent;      /* the root: the last command went down */
    uint64_t deadline_ns; /* the other places, once their part is done: end the job themselves by then */
};

/* The root's side: its server and clients. */
struct tree_root {
    otfx_server *server;
    char job_id[96];
    enum root_end_stage end_stage;
    uint64_t end_stage_ns;
    struct record_window *windows;
    size_t window_count, window_capacity;
    otfx_server_request *waiting; /* client queries waiting to enter the tree (policy.h) */
    size_t waiting_count, waiting_capacity;
    bool status_written;           /* run_status says how the job ended */
    struct root_trigger *triggers; /* triggers.c */
    size_t trigger_count, trigger_capacity;
    uint64_t next_trigger_id;
};

struct otfx_tree {
    otfx_tree_config config;
    otfx_tree_host host;
    otfx_place_role role;
    /* the place in the layout (standalone: index 0, no parent, no children, one leaf) */
    uint32_t index, parent, leaves_below;
    uint32_t *children;
    uint32_t child_count;

    /* transport.c */
    MPI_Comm comm; /* dup of places_comm (MPI_COMM_NULL: standalone) */
    struct pending_send *sends;
    size_t send_count, send_capacity;
    size_t unsent_bytes;
    unsigned char *receive_buffer;
    size_t receive_capacity;

    struct tree_request *requests;
    size_t request_count, request_capacity;
    uint32_t next_request;

    /* modules loaded with load-module (their code runs only in helper processes) */
    struct loaded_module **loaded_modules;
    size_t loaded_count, loaded_capacity;
    otfx_tree_counts counts;

    bool own_ended; /* the served ranks said goodbye (always for places serving none) */
    uint32_t children_done;
    bool done_sent, shutdown;
    struct job_failure failure;
    struct tree_root root;
};

uint64_t tree_now_ns(void);
/* "otfx-place RANK" in messages. */
int tree_place_rank(const otfx_tree *tree);
/* Whether this place finishes requests itself (the root, or standalone) instead of answering a parent. */
bool tree_finishes_requests(const otfx_tree *tree);
/* The command's name as one token for record lines: "app resume" → "app-resume". */
const char *tree_command_token(otfx_command_kind kind, char *out, size_t size);
/* The module a query runs in this process (a built-in one), or NULL. */
const otfx_analysis_module *tree_module_of(const otfx_command *command);
bool tree_is_query(otfx_command_kind kind);
/* Appends "place I: text" to a request's errors. */
void tree_add_error(otfx_text *errors, uint32_t place, const char *text, size_t length);

/* tree.c: the request table */
struct tree_request *tree_find_request(otfx_tree *tree, uint32_t id);
struct tree_request *tree_add_request(otfx_tree *tree, uint32_t id, enum tree_kind kind,
                                      const otfx_command *command, uint64_t argument);
void tree_remove_request(otfx_tree *tree, struct tree_request *request);
bool tree_snapshot_in_flight(const otfx_tree *tree);
/* A message arrived from place `source` (transport.c hands it over). */
void tree_handle_message(otfx_tree *tree, int source, const unsigned char *bytes, size_t length);

/* transport.c */
bool tree_transport_start(otfx_tree *tree);
/* Sends a message to `place` (nonblocking; takes the buffer). */
void tree_send(otfx_tree *tree, uint32_t place, struct tree_buffer *message);
bool tree_transport_receive(otfx_tree *tree);
void tree_transport_stop(otfx_tree *tree);

/* down.c */
/* A request arrived (from the parent, `bytes` its message; or the root's client, `bytes` NULL): forwards
 * it to the children, starts the own part. */
void tree_dispatch(otfx_tree *tree, struct tree_request *request, const unsigned char *bytes, size_t length);
/* SHUTDOWN to every child. */
void tree_shutdown_children(otfx_tree *tree);

/* up.c */
void tree_merge_result(otfx_tree *tree, struct tree_request *request, uint32_t from, uint32_t answered,
                       uint32_t failed, const void *blob, size_t length, const char *error,
                       size_t error_length);
void tree_stash_part(otfx_tree *tree, struct tree_request *request, uint32_t from, uint32_t answered,
                     const void *blob, size_t length);
/* A child's ACK. */
void tree_merge_ack(struct tree_request *request, const struct tree_message *message);
/* Answers the parent (or the client, at the root) once the own part and every child answered; may remove
 * the request. */
void tree_complete_if_answered(otfx_tree *tree, struct tree_request *request);
/* A rank failed (`rank` UINT32_MAX: none in particular): the root notes it, the others tell their parent. */
void tree_report_failure(otfx_tree *tree, uint32_t rank, uint32_t exit_code, const char *cause);
/* DONE to the parent once the own part ended and every child is done. */
bool tree_send_done(otfx_tree *tree);

/* leaf.c */
/* Appends this place's record line to a command's lines: "place index=I command=NAME ok=B" and `fields`
 * (may be NULL); counts it ok or failed. */
void tree_place_line(otfx_tree *tree, struct tree_request *request, bool ok, const otfx_text *fields);
void tree_start_own_part(otfx_tree *tree, struct tree_request *request);
/* Finished leaves, time limits, the ranks' answers, snapshots, deaths, goodbyes. */
bool tree_poll_leaf(otfx_tree *tree);

/* modules.c */
const struct loaded_module *tree_loaded_module_of(const otfx_tree *tree, const otfx_command *command);
otfx_module_limits tree_module_limits(const otfx_tree *tree);
void tree_load_module(otfx_tree *tree, struct tree_request *request);
const char *tree_start_loaded_leaf(otfx_tree *tree, struct tree_request *request);
/* All parts are in: a helper merges them (and at the root finishes the reply). Returns false when there
 * is nothing to wait for. */
bool tree_merge_loaded_parts(otfx_tree *tree, struct tree_request *request);
void tree_start_loaded_partial(otfx_tree *tree, struct tree_request *request);
bool tree_poll_module_calls(otfx_tree *tree);
void tree_free_parts(struct tree_request *request);
void tree_free_loaded_modules(otfx_tree *tree);

/* root.c */
bool tree_start_server(otfx_tree *tree);
void tree_reply(otfx_tree *tree, uint64_t client, uint32_t request, otfx_frame_kind kind,
                const otfx_text *text);
void tree_reply_error(otfx_tree *tree, uint64_t client, uint32_t request, const char *code,
                      const char *message);
void tree_broadcast_notice(otfx_tree *tree, const otfx_text *text);
/* The root's answer to a finished query (partial: a PARTIAL of what arrived so far) or command. */
void tree_answer_query(otfx_tree *tree, struct tree_request *request, bool partial);
void tree_answer_command(otfx_tree *tree, struct tree_request *request);
/* A loaded module's PARTIAL, once its helper merged what arrived so far. */
void tree_reply_loaded_partial(otfx_tree *tree, struct tree_request *request, uint32_t answered,
                               const otfx_blob *lines);
bool tree_poll_root(otfx_tree *tree);
void tree_stop_server(otfx_tree *tree);

/* triggers.c */
/* The root: config.triggers (false: one does not parse; said on stderr). */
bool tree_triggers_start(otfx_tree *tree);
void tree_triggers_free(otfx_tree *tree);
/* The root: a client's trigger add, list or remove. True: answered already (list, or refused); false: to
 * be sent down like any command with *argument (the trigger's id). */
bool tree_trigger_client(otfx_tree *tree, const otfx_server_request *client, uint64_t *argument);
/* "trigger id=K times=N spec=TEXT" for trigger add's reply. */
void tree_trigger_added_line(otfx_tree *tree, uint64_t id, otfx_text *lines);
/* A report that a trigger's condition held: the root decides, the others pass it to their parent. */
void tree_report_trigger(otfx_tree *tree, uint64_t trigger, uint64_t time_ns, uint32_t rank, uint32_t place,
                         const char *detail, size_t detail_length);
/* `count` more receives late-sender trigger `id` could not evaluate: summed at the root (trigger list's
 * unseen=), sent up from the other places. */
void tree_report_unseen(otfx_tree *tree, uint64_t id, uint64_t count);
/* The root: a firing's action (request->trigger) was answered. */
void tree_trigger_action_answered(otfx_tree *tree, const struct tree_request *request);
/* The root: a firing's snapshot not sent yet (the end of the run waits for it). */
bool tree_triggers_snapshot_due(const otfx_tree *tree);
/* The root: actions due, snapshots whose window has passed, firings done (re-armed or spent). */
bool tree_poll_triggers(otfx_tree *tree);

/* ending.c */
bool tree_is_final_command(const struct tree_request *request);
/* The root notes a failure (the first one counts). */
void tree_note_failure(otfx_tree *tree, uint32_t exit_code, const char *cause);
/* A place (not the root) did its part of the last command: the root ends the job now. */
void tree_await_end_of_failed_job(otfx_tree *tree, const struct tree_request *request);
/* The root ends a failed job (does not return). */
void tree_end_failed_job(otfx_tree *tree, const struct tree_request *request);
/* The normal end: the snapshot at exit answered (request), or none was asked for (NULL). */
void tree_write_exit_status(otfx_tree *tree, const struct tree_request *request);
/* Every turn at the root: interruptions and failures start the last command; at the other places: end
 * the job when the root did not. */
void tree_poll_failure(otfx_tree *tree);
/* The root's end of the run, once every place is done. */
void tree_poll_root_end(otfx_tree *tree);

#endif

/*
 * leaf.c — the own part of a request at a place serving ranks, carried out through the host
 * (otfx_tree_host): a query's leaf on the host's worker thread (a loaded module's in a helper process,
 * modules.c) within the module time limit, a replay analysis's once the ranks flushed; a command's
 * steering message to the ranks, then, once they answered, what the place does itself and its line, or
 * the snapshot (written after the ranks flushed); the ranks that died and the end of the ranks. load-module's
 * own part is every place's (modules.c).
 */
#include "tree_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One record line for this place: "place index=I command=NAME ok=B" and the host's fields. */
void tree_place_line(otfx_tree *tree, struct tree_request *request, bool ok, const otfx_text *fields)
{
    char token[64];
    otfx_kv_begin(&request->lines, "place");
    otfx_kv_u64(&request->lines, "index", tree->index);
    otfx_kv_str(&request->lines, "command", tree_command_token(request->command.kind, token, sizeof(token)));
    otfx_kv_u64(&request->lines, "ok", ok);
    if (fields && fields->data)
        otfx_text_append(&request->lines, fields->data, fields->length);
    otfx_kv_end(&request->lines);
    if (ok)
        request->count_ok++;
    else
        request->count_failed++;
}

/* The host carries out the command (its ranks answered, or it is nothing for them) and says how. */
static void carry_out(otfx_tree *tree, struct tree_request *request)
{
    otfx_text fields = {0}, lines = {0};
    const bool ok =
        tree->host.carry_out(tree->host.context, &request->command, request->argument, &fields, &lines);
    tree_place_line(tree, request, ok, &fields);
    if (lines.data)
        otfx_text_append(&request->lines, lines.data, lines.length);
    otfx_text_free(&fields);
    otfx_text_free(&lines);
}

/* The last command of a failed job that writes no snapshot: the report, then the line. */
static void final_line(otfx_tree *tree, struct tree_request *request)
{
    tree->host.report(tree->host.context);
    otfx_text fields = {0};
    otfx_kv_str(&fields, "snapshot", "none");
    tree_place_line(tree, request, true, &fields);
    otfx_text_free(&fields);
}

/* The query's leaf: on the host's worker, or a loaded module's in a helper process. */
static void start_leaf(otfx_tree *tree, struct tree_request *request)
{
    const char *problem = NULL;
    if (request->loaded)
        problem = tree_start_loaded_leaf(tree, request);
    else if (!request->module)
        problem = "module unknown at this place";
    else
        problem = tree->host.leaf_start(tree->host.context, request->id, request->module, &request->command);
    if (problem) {
        request->count_failed++;
        tree_add_error(&request->errors, tree->index, problem, strlen(problem));
        return;
    }
    request->progress.own_pending = true;
}

/* A query that flushes first (otfx_command_flushes_first) asks the running ranks to send what they
 * buffered and starts its leaf once they answered (poll_flushing_queries), so that it sees up to now. */
static void start_query(otfx_tree *tree, struct tree_request *request)
{
    if (!request->loaded && request->module && otfx_command_flushes_first(&request->command)) {
        const uint64_t steering = tree->host.steer(tree->host.context, &request->command, request->argument);
        if (steering && steering != OTFX_TREE_NO_RANK_RUNNING) {
            request->steering = steering;
            request->leaf_after_flush = true;
            request->progress.own_pending = true;
            return;
        }
    }
    start_leaf(tree, request);
}

void tree_start_own_part(otfx_tree *tree, struct tree_request *request)
{
    if (request->kind == TREE_LOAD_MODULE) {
        tree_load_module(tree, request);
        return;
    }
    if (!otfx_role_serves_ranks(tree->role))
        return;
    if (request->kind == TREE_QUERY) {
        start_query(tree, request);
        return;
    }
    if (request->final)
        tree->host.job_failing(tree->host.context);
    const uint64_t steering = tree->host.steer(tree->host.context, &request->command, request->argument);
    if (!steering) {
        carry_out(tree, request); /* nothing for the ranks: done at once */
        return;
    }
    request->progress.own_pending = true;
    request->snapshot_after_flush = request->command.kind == OTFX_CMD_SNAPSHOT;
    if (request->final)
        request->snapshot_after_flush = request->command.path[0] != '\0';
    request->steering = steering; /* OTFX_TREE_NO_RANK_RUNNING: done at the next poll */
}

/* ---- waiting for the own part --------------------------------------------------------------------- */

static void time_limit_error(const char *module, uint64_t limit_ns, char *out, size_t size)
{
    snprintf(out, size,
             "module %s did not answer within %.3g s (the module time limit, otfx-run --module-timeout)",
             module, (double)limit_ns / 1e9);
}

/* Leaves the host's worker finished. */
static bool take_leaves(otfx_tree *tree)
{
    bool active = false;
    otfx_tree_leaf_result result;
    const uint64_t limit = tree->config.module_timeout_ns;
    while (tree->host.leaf_take(tree->host.context, &result)) {
        struct tree_request *request = tree_find_request(tree, result.request);
        if (request && request->progress.own_pending) {
            request->progress.own_pending = false;
            if (result.took_ns > limit) {
                /* too late, even if the watchdog did not see it running: the same answer either way */
                char why[256];
                time_limit_error(result.module, limit, why, sizeof(why));
                tree->counts.module_timeouts++;
                tree_merge_result(tree, request, tree->index, 0, 1, NULL, 0, why, strlen(why));
            } else if (result.ok) {
                tree_merge_result(tree, request, tree->index, 1, 0, result.blob.data, result.blob.length,
                                  NULL, 0);
            } else {
                tree->counts.queries_too_large += result.too_large;
                tree_merge_result(tree, request, tree->index, 0, 1, NULL, 0, result.error,
                                  strlen(result.error));
            }
            tree_complete_if_answered(tree, request);
        }
        otfx_blob_free(&result.blob);
        active = true;
    }
    return active;
}

/* A built-in leaf over the time limit: its query is answered with that error now. */
static bool watch_worker(otfx_tree *tree)
{
    uint32_t id;
    const char *module;
    const uint64_t limit = tree->config.module_timeout_ns;
    if (!tree->host.leaf_overdue(tree->host.context, limit, &id, &module))
        return false;
    tree->counts.module_timeouts++;
    fprintf(stderr,
            "otfx-place %d: module %s did not answer within the time limit: its thread was given up on\n",
            tree_place_rank(tree), module);
    struct tree_request *request = tree_find_request(tree, id);
    if (request && request->progress.own_pending) {
        char why[256];
        time_limit_error(module, limit, why, sizeof(why));
        request->progress.own_pending = false;
        tree_merge_result(tree, request, tree->index, 0, 1, NULL, 0, why, strlen(why));
        tree_complete_if_answered(tree, request);
    }
    return true;
}

/* The commands' own parts waiting for the ranks' answers or for a snapshot. */
static bool poll_commands(otfx_tree *tree)
{
    bool active = false;
    const uint64_t now = tree_now_ns();
    for (size_t i = 0; i < tree->request_count; i++) {
        struct tree_request *request = &tree->requests[i];
        if (!request->progress.own_pending || request->kind != TREE_COMMAND)
            continue;
        if (request->final && request->steering && answer_final_flush_over(&request->progress, now))
            request->steering = OTFX_TREE_NO_RANK_RUNNING; /* ranks that do not answer: stuck, or gone */
        if (request->steering && (request->steering == OTFX_TREE_NO_RANK_RUNNING ||
                                  tree->host.steered(tree->host.context, request->steering))) {
            request->steering = 0;
            active = true;
            if (request->final && !request->snapshot_after_flush) {
                final_line(tree, request);
                request->progress.own_pending = false;
            } else if (!request->snapshot_after_flush) {
                carry_out(tree, request); /* a reset: every batch sent before the flush's answer is in */
                request->progress.own_pending = false;
            }
        }
        if (request->snapshot_after_flush && !request->steering && !request->snapshot_running &&
            tree->host.snapshot_start(tree->host.context, request->id, &request->command)) {
            request->snapshot_running = true; /* it may have finished already (no MPI_THREAD_MULTIPLE) */
            active = true;
        }
        bool ok = false;
        otfx_text fields = {0};
        if (request->snapshot_running &&
            tree->host.snapshot_take(tree->host.context, request->id, &ok, &fields)) {
            request->snapshot_running = false;
            request->snapshot_after_flush = false;
            tree_place_line(tree, request, ok, &fields);
            if (request->final)
                tree->host.report(tree->host.context); /* the run is over: what this place held */
            request->progress.own_pending = false;
            active = true;
        }
        otfx_text_free(&fields);
        if (!request->progress.own_pending) {
            tree_complete_if_answered(tree, request);
            i = (size_t)-1; /* the array changed: look again from the start */
        }
    }
    return active;
}

/* Queries waiting for their ranks' flush: the leaf starts once every running rank answered (ranks that
 * said goodbye or vanished count as answered), or at the latest after ANSWER_QUERY_FLUSH_NS (ranks that
 * do not answer, e.g. computing without calling MPI, must not hold up the query: its answer then says
 * how old their data is). */
static bool poll_flushing_queries(otfx_tree *tree)
{
    bool active = false;
    const uint64_t now = tree_now_ns();
    for (size_t i = 0; i < tree->request_count; i++) {
        struct tree_request *request = &tree->requests[i];
        if (!request->leaf_after_flush)
            continue;
        if (!tree->host.steered(tree->host.context, request->steering) &&
            !answer_query_flush_over(&request->progress, now, tree->config.module_timeout_ns))
            continue;
        request->leaf_after_flush = false;
        request->steering = 0;
        request->progress.own_pending = false;
        start_leaf(tree, request);
        active = true;
        if (!request->progress.own_pending) {
            tree_complete_if_answered(tree, request);
            i = (size_t)-1; /* the array changed: look again from the start */
        }
    }
    return active;
}

/* Served ranks that ended without MPI_Finalize, reported once each. */
static bool report_deaths(otfx_tree *tree)
{
    bool any = false;
    uint32_t rank, exit_code;
    char cause[sizeof(tree->failure.cause)];
    while (tree->host.next_death(tree->host.context, &rank, &exit_code, cause, sizeof(cause))) {
        tree_report_failure(tree, rank, exit_code, cause);
        any = true;
    }
    return any;
}

/* Triggers whose condition held at this place: reported up (the root decides). */
static bool report_firings(otfx_tree *tree)
{
    bool any = false;
    otfx_tree_firing firing;
    while (tree->host.next_firing && tree->host.next_firing(tree->host.context, &firing)) {
        tree_report_trigger(tree, firing.trigger, firing.time_ns, firing.rank, tree->index, firing.detail,
                            strlen(firing.detail));
        any = true;
    }
    uint64_t trigger, count;
    while (tree->host.next_unseen && tree->host.next_unseen(tree->host.context, &trigger, &count)) {
        tree_report_unseen(tree, trigger, count);
        any = true;
    }
    return any;
}

bool tree_poll_leaf(otfx_tree *tree)
{
    bool active = false;
    if (report_firings(tree))
        active = true;
    if (take_leaves(tree))
        active = true;
    if (watch_worker(tree))
        active = true;
    if (tree_poll_module_calls(tree))
        active = true;
    if (tree->request_count && poll_commands(tree))
        active = true;
    if (tree->request_count && poll_flushing_queries(tree))
        active = true;
    if (report_deaths(tree))
        active = true;
    if (tree->host.ranks_ended(tree->host.context)) {
        tree->own_ended = true;
        active = true;
    }
    return active;
}

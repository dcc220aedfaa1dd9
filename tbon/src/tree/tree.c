/*
 * tree.c — the tree object: start, stop, the poll, the request table, and the messages that arrive
 * (checked whole, then handed to the direction they travel). The manual is otfx/tree.h; the files are
 * listed in tree_internal.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "tree_internal.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tree_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int tree_place_rank(const otfx_tree *tree)
{
    return tree->config.place_rank;
}

bool tree_finishes_requests(const otfx_tree *tree)
{
    return otfx_role_is_root(tree->role) || tree->role == OTFX_PLACE_STANDALONE;
}

bool tree_is_query(otfx_command_kind kind)
{
    return kind == OTFX_CMD_STATUS || kind == OTFX_CMD_PROFILE || kind == OTFX_CMD_TIMELINE ||
           kind == OTFX_CMD_MESSAGES || kind == OTFX_CMD_EVENTS || kind == OTFX_CMD_QUERY ||
           kind == OTFX_CMD_CRITICAL_PATH || kind == OTFX_CMD_WAIT_STATES || kind == OTFX_CMD_STRUCTURE ||
           kind == OTFX_CMD_METRIC_TIMELINE;
}

const char *tree_command_token(otfx_command_kind kind, char *out, size_t size)
{
    snprintf(out, size, "%s", otfx_command_name(kind));
    for (char *c = out; *c; c++)
        if (*c == ' ')
            *c = '-';
    return out;
}

const otfx_analysis_module *tree_module_of(const otfx_command *command)
{
    if (command->kind == OTFX_CMD_PROFILE && command->metrics[0])
        return otfx_analysis_find("metric-profile"); /* profile --metrics */
    return command->kind == OTFX_CMD_QUERY ? otfx_analysis_find(command->module)
                                           : otfx_analysis_for_command(command->kind);
}

void tree_add_error(otfx_text *errors, uint32_t place, const char *text, size_t length)
{
    char prefix[48];
    const int n = snprintf(prefix, sizeof(prefix), "%splace %u: ", errors->length ? "; " : "", place);
    otfx_text_append(errors, prefix, (size_t)n);
    otfx_text_append(errors, text, length);
}

/* ---- requests ------------------------------------------------------------------------------------- */

struct tree_request *tree_find_request(otfx_tree *tree, uint32_t id)
{
    for (size_t i = 0; i < tree->request_count; i++)
        if (tree->requests[i].id == id)
            return &tree->requests[i];
    return NULL;
}

struct tree_request *tree_add_request(otfx_tree *tree, uint32_t id, enum tree_kind kind,
                                      const otfx_command *command, uint64_t argument)
{
    if (!otfx_reserve((void **)&tree->requests, &tree->request_capacity, tree->request_count + 1,
                      sizeof(*tree->requests), 8))
        return NULL;
    struct tree_request *request = &tree->requests[tree->request_count++];
    memset(request, 0, sizeof(*request));
    request->id = id;
    request->kind = kind;
    request->command = *command;
    request->argument = argument;
    answer_begin(&request->progress, tree_now_ns());
    request->module = kind == TREE_QUERY ? tree_module_of(command) : NULL;
    request->loaded = kind == TREE_QUERY && !request->module ? tree_loaded_module_of(tree, command) : NULL;
    request->merged.limit = tree->config.query_memory; /* a merged result is bounded like the leaves' */
    return request;
}

void tree_remove_request(otfx_tree *tree, struct tree_request *request)
{
    otfx_module_call_cancel(request->call);
    tree_free_parts(request);
    otfx_blob_free(&request->merged);
    otfx_text_free(&request->errors);
    otfx_text_free(&request->lines);
    const size_t index = (size_t)(request - tree->requests);
    tree->requests[index] = tree->requests[--tree->request_count];
}

bool tree_snapshot_in_flight(const otfx_tree *tree)
{
    for (size_t i = 0; i < tree->request_count; i++)
        if (tree->requests[i].command.kind == OTFX_CMD_SNAPSHOT)
            return true;
    return false;
}

/* ---- start and stop ------------------------------------------------------------------------------- */

otfx_tree *otfx_tree_start(const otfx_tree_config *config, const otfx_tree_host *host)
{
    otfx_tree *tree = calloc(1, sizeof(*tree));
    if (!tree) {
        fprintf(stderr, "otfx-place %d: out of memory starting the tree\n", config->place_rank);
        return NULL;
    }
    tree->config = *config;
    tree->host = *host;
    tree->comm = MPI_COMM_NULL;
    tree->next_request = 1;
    tree->parent = OTFX_TBON_NO_PARENT;
    const bool standalone = config->places_comm == MPI_COMM_NULL || config->layout == NULL;
    tree->role = otfx_tbon_role(standalone ? NULL : config->layout, config->index);
    if (standalone) {
        tree->leaves_below = 1;
        if (!tree_triggers_start(tree)) {
            otfx_tree_stop(tree);
            return NULL;
        }
        return tree;
    }
    const otfx_tbon_layout *layout = config->layout;
    tree->index = config->index;
    tree->parent = otfx_tbon_parent(layout, tree->index);
    tree->leaves_below = otfx_tbon_leaves_below(layout, tree->index);
    tree->child_count = otfx_tbon_children(layout, tree->index, NULL, 0);
    tree->children = calloc(tree->child_count ? tree->child_count : 1, sizeof(uint32_t));
    if (!tree->children) {
        fprintf(stderr, "otfx-place %d: out of memory starting the tree\n", tree_place_rank(tree));
        free(tree);
        return NULL;
    }
    otfx_tbon_children(layout, tree->index, tree->children, tree->child_count);
    tree->own_ended = !otfx_role_serves_ranks(tree->role); /* no ranks to wait for */
    if (!tree_transport_start(tree)) {
        otfx_tree_stop(tree);
        return NULL;
    }
    if (otfx_role_is_root(tree->role) && !tree_triggers_start(tree)) {
        otfx_tree_stop(tree);
        return NULL;
    }
    if (otfx_role_is_root(tree->role))
        tree_start_server(tree);
    return tree;
}

otfx_place_role otfx_tree_role(const otfx_tree *tree)
{
    return tree->role;
}

const otfx_tree_counts *otfx_tree_counts_of(const otfx_tree *tree)
{
    return &tree->counts;
}

bool otfx_tree_finished(const otfx_tree *tree)
{
    return tree->shutdown;
}

void otfx_tree_stop(otfx_tree *tree)
{
    if (!tree)
        return;
    tree_transport_stop(tree); /* the sends in flight first: they read the requests' buffers no more */
    while (tree->request_count)
        tree_remove_request(tree, &tree->requests[0]);
    free(tree->requests);
    tree_stop_server(tree);
    tree_free_loaded_modules(tree);
    free(tree->root.waiting);
    free(tree->root.windows);
    tree_triggers_free(tree);
    free(tree->children);
    free(tree);
}

/* ---- messages in ---------------------------------------------------------------------------------- */

/* Why a decoded message from place `source` cannot be taken here, or NULL. */
static const char *refusal(otfx_tree *tree, int source, const struct tree_message *message)
{
    const bool from_parent = tree->parent != OTFX_TBON_NO_PARENT && (uint32_t)source == tree->parent;
    bool from_child = false;
    for (uint32_t c = 0; c < tree->child_count; c++)
        from_child = from_child || tree->children[c] == (uint32_t)source;
    switch (message->kind) {
    case TREE_QUERY:
    case TREE_COMMAND:
    case TREE_LOAD_MODULE:
    case TREE_SHUTDOWN:
        if (!from_parent)
            return "a request or shutdown that did not come from the parent";
        if (message->kind != TREE_SHUTDOWN && tree_find_request(tree, message->request))
            return "a request id already in flight";
        return NULL;
    case TREE_RESULT:
    case TREE_ACK: {
        const struct tree_request *request = tree_find_request(tree, message->request);
        if (!from_child)
            return "an answer that did not come from a child";
        if (!request || !request->progress.children_waiting)
            return "an answer to no request in flight here";
        if ((message->kind == TREE_RESULT) != (request->kind == TREE_QUERY))
            return "an answer of the wrong kind for its request";
        return NULL;
    }
    case TREE_DONE:
        if (!from_child)
            return "DONE that did not come from a child";
        if (tree->children_done >= tree->child_count)
            return "more DONE messages than children";
        return NULL;
    case TREE_FAILED:
        if (!from_child)
            return "a failure report that did not come from a child";
        return NULL;
    case TREE_TRIGGER:
        if (!from_child)
            return "a trigger report that did not come from a child";
        return NULL;
    case TREE_UNSEEN:
        if (!from_child)
            return "an unseen report that did not come from a child";
        return NULL;
    }
    return NULL;
}

void tree_handle_message(otfx_tree *tree, int source, const unsigned char *bytes, size_t length)
{
    struct tree_message message;
    const char *problem = tree_decode(bytes, length, &message);
    if (!problem)
        problem = refusal(tree, source, &message);
    if (problem) {
        fprintf(stderr, "otfx-place %d: malformed tree message of %zu bytes from place %d dropped: %s\n",
                tree_place_rank(tree), length, source, problem);
        return;
    }
    switch (message.kind) {
    case TREE_QUERY:
    case TREE_COMMAND:
    case TREE_LOAD_MODULE: {
        struct tree_request *request =
            tree_add_request(tree, message.request, message.kind, &message.command, message.argument);
        if (!request) {
            fprintf(stderr, "otfx-place %d: out of memory: request %u dropped\n", tree_place_rank(tree),
                    message.request);
            return;
        }
        request->final = tree_is_final_command(request);
        tree_dispatch(tree, request, bytes, length);
        return;
    }
    case TREE_RESULT:
    case TREE_ACK: {
        struct tree_request *request = tree_find_request(tree, message.request);
        request->progress.children_waiting--;
        if (message.kind == TREE_RESULT)
            tree_merge_result(tree, request, (uint32_t)source, message.count_ok, message.count_failed,
                              message.data, message.data_length, message.error, message.error_length);
        else
            tree_merge_ack(request, &message);
        tree_complete_if_answered(tree, request);
        return;
    }
    case TREE_DONE:
        tree->children_done++;
        return;
    case TREE_FAILED: {
        char what[sizeof(tree->failure.cause)];
        const size_t kept = message.data_length < sizeof(what) - 1 ? message.data_length : sizeof(what) - 1;
        memcpy(what, message.data, kept);
        what[kept] = '\0';
        tree_report_failure(tree, message.failed_rank, message.exit_code, what);
        return;
    }
    case TREE_TRIGGER:
        tree_report_trigger(tree, message.trigger_id, message.trigger_time, message.failed_rank,
                            message.trigger_place, (const char *)message.data, message.data_length);
        return;
    case TREE_UNSEEN:
        tree_report_unseen(tree, message.trigger_id, message.trigger_time);
        return;
    case TREE_SHUTDOWN:
        tree_shutdown_children(tree);
        tree->shutdown = true;
        return;
    }
}

bool otfx_tree_receive(otfx_tree *tree)
{
    return tree->comm != MPI_COMM_NULL && tree_transport_receive(tree);
}

/* ---- the poll ------------------------------------------------------------------------------------- */

bool otfx_tree_poll(otfx_tree *tree)
{
    /* a place serving ranks polls its loaded modules' helpers among its own parts */
    bool active = otfx_role_serves_ranks(tree->role) ? tree_poll_leaf(tree) : tree_poll_module_calls(tree);
    if (tree->role == OTFX_PLACE_STANDALONE) {
        if (tree_poll_triggers(tree))
            active = true;
        if (tree->own_ended && !tree->request_count)
            tree->shutdown = true;
        return active;
    }
    const bool root = otfx_role_is_root(tree->role);
    if (root && tree_poll_root(tree))
        active = true;
    tree_poll_failure(tree);
    if (tree_send_done(tree))
        active = true;
    if (root && tree->done_sent && !tree->shutdown && tree->root.end_stage != ROOT_FAILING)
        tree_poll_root_end(tree);
    return active;
}

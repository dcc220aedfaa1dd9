/*
 * root.c — the root's client side: the server's requests (otfx/server.h) become tree requests (queries
 * wait at the root while ANSWER_MAX_QUERIES_IN_TREE are in the tree), finished requests become replies
 * (a query's PARTIAL when the answer policy says so), and `record window` gets its reply at once and its
 * notice when the window ends.
 */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include "tree_internal.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tree_reply(otfx_tree *tree, uint64_t client, uint32_t request, otfx_frame_kind kind,
                const otfx_text *text)
{
    if (tree->root.server && client)
        otfx_server_reply(tree->root.server, client, request, kind, text->data ? text->data : "",
                          text->length);
}

void tree_reply_error(otfx_tree *tree, uint64_t client, uint32_t request, const char *code,
                      const char *message)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "error");
    otfx_kv_str(&text, "code", code);
    otfx_kv_str(&text, "message", message);
    otfx_kv_end(&text);
    tree_reply(tree, client, request, OTFX_FRAME_ERROR, &text);
    otfx_text_free(&text);
}

void tree_broadcast_notice(otfx_tree *tree, const otfx_text *text)
{
    if (tree->root.server && text->data && !text->failed)
        otfx_server_broadcast(tree->root.server, text->data, text->length);
}

/* "partial partial=1 answered=A total=T" */
static void partial_line(otfx_text *text, uint32_t answered, uint32_t total)
{
    otfx_kv_begin(text, "partial");
    otfx_kv_u64(text, "partial", 1);
    otfx_kv_u64(text, "answered", answered);
    otfx_kv_u64(text, "total", total);
    otfx_kv_end(text);
}

void tree_answer_query(otfx_tree *tree, struct tree_request *request, bool partial)
{
    otfx_text text = {0};
    char error[512] = "";
    const uint32_t total = tree->leaves_below;
    if (partial)
        partial_line(&text, request->count_ok, total);
    if (request->count_ok == 0 && !partial) {
        otfx_text_append(&request->errors, "", 1);
        tree_reply_error(tree, request->client, request->client_request, OTFX_ERR_CODE_FAILED,
                         request->errors.data && request->errors.data[0] ? request->errors.data
                                                                         : "no event place answered");
        otfx_text_free(&text);
        return;
    }
    if (request->loaded) {
        /* finished in the merge's helper: `merged` holds the reply's lines */
        otfx_text_append(&text, (const char *)request->merged.data, request->merged.length);
    } else if (!request->module->finish(&request->command, request->merged.data, request->merged.length,
                                        request->count_ok, total, &text, error, sizeof(error))) {
        if (!partial)
            tree_reply_error(tree, request->client, request->client_request, OTFX_ERR_CODE_FAILED,
                             error[0] ? error : "the module could not finish the result");
        otfx_text_free(&text);
        return;
    }
    if (!partial && request->count_failed) {
        otfx_kv_begin(&text, "failed");
        otfx_kv_u64(&text, "places", request->count_failed);
        otfx_text_append(&request->errors, "", 1);
        otfx_kv_str(&text, "message", request->errors.data ? request->errors.data : "");
        otfx_kv_end(&text);
    }
    if (text.failed)
        tree_reply_error(tree, request->client, request->client_request, OTFX_ERR_CODE_FAILED,
                         "out of memory for the reply");
    else
        tree_reply(tree, request->client, request->client_request,
                   partial ? OTFX_FRAME_PARTIAL : OTFX_FRAME_REPLY, &text);
    otfx_text_free(&text);
}

void tree_reply_loaded_partial(otfx_tree *tree, struct tree_request *request, uint32_t answered,
                               const otfx_blob *lines)
{
    otfx_text text = {0};
    partial_line(&text, answered, tree->leaves_below);
    otfx_text_append(&text, (const char *)lines->data, lines->length);
    if (!text.failed)
        tree_reply(tree, request->client, request->client_request, OTFX_FRAME_PARTIAL, &text);
    otfx_text_free(&text);
}

void tree_answer_command(otfx_tree *tree, struct tree_request *request)
{
    char token[64];
    const char *name = tree_command_token(request->command.kind, token, sizeof(token));
    if (request->trigger) {
        tree_trigger_action_answered(tree, request);
        return;
    }
    if (request->final) {
        tree_end_failed_job(tree, request); /* does not return */
        return;
    }
    if (request->at_exit) {
        fprintf(stderr, "otfx: snapshot at exit %s: %u places ok, %u failed\n%.*s", request->command.path,
                request->count_ok, request->count_failed, (int)request->lines.length,
                request->lines.data ? request->lines.data : "");
        tree_write_exit_status(tree, request);
        tree->root.end_stage = ROOT_DRAINING;
        tree->root.end_stage_ns = tree_now_ns();
        return;
    }
    if (!request->client)
        return;
    otfx_text text = {0};
    if (request->count_failed) {
        char message[160];
        snprintf(message, sizeof(message), "%s failed on %u of %u places", name, request->count_failed,
                 request->count_ok + request->count_failed);
        otfx_kv_begin(&text, "error");
        otfx_kv_str(&text, "code", OTFX_ERR_CODE_FAILED);
        otfx_kv_str(&text, "message", message);
        otfx_kv_end(&text);
    }
    otfx_text_append(&text, request->lines.data, request->lines.length);
    otfx_kv_begin(&text, "summary");
    otfx_kv_str(&text, "command", name);
    otfx_kv_u64(&text, "places", request->count_ok + request->count_failed);
    otfx_kv_u64(&text, "ok", request->count_ok);
    otfx_kv_u64(&text, "failed", request->count_failed);
    otfx_kv_end(&text);
    tree_reply(tree, request->client, request->client_request,
               request->count_failed ? OTFX_FRAME_ERROR : OTFX_FRAME_REPLY, &text);
    otfx_text_free(&text);
}

/* ---- client requests ------------------------------------------------------------------------------ */

static void add_window(otfx_tree *tree, uint64_t from, uint64_t to)
{
    struct tree_root *root = &tree->root;
    if (!otfx_reserve((void **)&root->windows, &root->window_capacity, root->window_count + 1,
                      sizeof(*root->windows), 4))
        return;
    root->windows[root->window_count++] = (struct record_window){from, to};
}

static void handle_client_request(otfx_tree *tree, const otfx_server_request *client)
{
    const otfx_command *command = &client->command;
    if (tree->root.end_stage >= ROOT_DRAINING) {
        tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_JOB_ENDED,
                         "the application finished; the tree is going down");
        return;
    }
    enum tree_kind kind = TREE_COMMAND;
    if (tree_is_query(command->kind)) {
        kind = TREE_QUERY;
        if (!tree_module_of(command) && !tree_loaded_module_of(tree, command)) {
            char message[128];
            snprintf(message, sizeof(message), "no analysis module %s (load it with load-module PATH)",
                     command->kind == OTFX_CMD_QUERY ? command->module : otfx_command_name(command->kind));
            tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND, message);
            return;
        }
    } else if (command->kind == OTFX_CMD_LOAD_MODULE) {
        kind = TREE_LOAD_MODULE;
    } else if (command->kind == OTFX_CMD_SNAPSHOT && tree_snapshot_in_flight(tree)) {
        tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_BUSY,
                         "a snapshot is being written; try again when it is done");
        return;
    }
    uint64_t argument = 0;
    const bool trigger_command = command->kind == OTFX_CMD_TRIGGER_ADD ||
                                 command->kind == OTFX_CMD_TRIGGER_LIST ||
                                 command->kind == OTFX_CMD_TRIGGER_REMOVE;
    if (trigger_command && tree_trigger_client(tree, client, &argument))
        return;
    if (command->kind == OTFX_CMD_RECORD_WINDOW) {
        const uint64_t from = tree_now_ns();
        if (command->duration_ns > UINT64_MAX - from) {
            tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND,
                             "record window: the duration is too long: the window would end past the end of "
                             "the 64-bit nanosecond clock");
            return;
        }
        argument = from + command->duration_ns;
        otfx_text text = {0};
        otfx_kv_begin(&text, "window");
        otfx_kv_u64(&text, "from", from);
        otfx_kv_u64(&text, "to", argument);
        otfx_kv_end(&text);
        tree_reply(tree, client->client, client->request, OTFX_FRAME_REPLY, &text);
        otfx_text_free(&text);
        add_window(tree, from, argument);
    }
    const uint32_t id = tree->next_request++;
    if (tree->next_request == 0)
        tree->next_request = 1; /* ids wrap around, skipping 0 */
    struct tree_request *request = tree_add_request(tree, id, kind, command, argument);
    if (!request) {
        tree_reply_error(tree, client->client, client->request, OTFX_ERR_CODE_FAILED, "out of memory");
        return;
    }
    if (command->kind != OTFX_CMD_RECORD_WINDOW) {
        request->client = client->client;
        request->client_request = client->request;
    }
    if (command->kind == OTFX_CMD_TRIGGER_ADD)
        tree_trigger_added_line(tree, argument, &request->lines);
    tree_dispatch(tree, request, NULL, 0);
}

static size_t queries_in_tree(const otfx_tree *tree)
{
    size_t count = 0;
    for (size_t i = 0; i < tree->request_count; i++)
        count += tree->requests[i].kind == TREE_QUERY;
    return count;
}

/* Queries enter the tree at most ANSWER_MAX_QUERIES_IN_TREE at once (each may hold up to the query memory
 * bound at every place on its way); the others wait here, in order. The places' workers answer one
 * leaf after the other anyway, so waiting here costs no time. */
static bool admit_queries(otfx_tree *tree)
{
    struct tree_root *root = &tree->root;
    bool active = false;
    while (root->waiting_count && answer_admits_query(0, queries_in_tree(tree))) {
        const otfx_server_request next = root->waiting[0];
        memmove(root->waiting, root->waiting + 1, --root->waiting_count * sizeof(*root->waiting));
        if (!otfx_server_client_connected(root->server, next.client))
            continue; /* nobody waits for it any more */
        handle_client_request(tree, &next);
        active = true;
    }
    return active;
}

/* A client's query that may not enter the tree yet waits; false when out of memory. */
static bool wait_at_root(otfx_tree *tree, const otfx_server_request *client)
{
    struct tree_root *root = &tree->root;
    if (!otfx_reserve((void **)&root->waiting, &root->waiting_capacity, root->waiting_count + 1,
                      sizeof(*root->waiting), 16))
        return false;
    root->waiting[root->waiting_count++] = *client;
    return true;
}

/* Every window past its end: the notice to every client. */
static bool end_windows(otfx_tree *tree, uint64_t now)
{
    struct tree_root *root = &tree->root;
    bool active = false;
    for (size_t i = 0; i < root->window_count;) {
        if (now < root->windows[i].to) {
            i++;
            continue;
        }
        otfx_text text = {0};
        otfx_kv_begin(&text, "notice");
        otfx_kv_str(&text, "event", "window-ended");
        otfx_kv_u64(&text, "from", root->windows[i].from);
        otfx_kv_u64(&text, "to", root->windows[i].to);
        otfx_kv_end(&text);
        tree_broadcast_notice(tree, &text);
        otfx_text_free(&text);
        root->windows[i] = root->windows[--root->window_count];
        active = true;
    }
    return active;
}

bool tree_poll_root(otfx_tree *tree)
{
    struct tree_root *root = &tree->root;
    bool active = false;
    otfx_server_request client;
    while (root->server && otfx_server_next_request(root->server, &client)) {
        if (tree_is_query(client.command.kind) &&
            !answer_admits_query(root->waiting_count, queries_in_tree(tree))) {
            if (!wait_at_root(tree, &client)) {
                tree_reply_error(tree, client.client, client.request, OTFX_ERR_CODE_FAILED, "out of memory");
                continue;
            }
        } else {
            handle_client_request(tree, &client);
        }
        active = true;
    }
    if (root->server && admit_queries(tree))
        active = true;
    const uint64_t now = tree_now_ns();
    for (size_t i = 0; i < tree->request_count; i++) {
        struct tree_request *request = &tree->requests[i];
        const bool anything_in = request->loaded ? request->part_count > 0 : request->count_ok > 0;
        if (!answer_partial_due(&request->progress, request->kind == TREE_QUERY && request->client != 0,
                                anything_in, now))
            continue;
        request->progress.partial_sent = true;
        if (request->loaded)
            tree_start_loaded_partial(tree, request);
        else
            tree_answer_query(tree, request, true);
        active = true;
    }
    if (end_windows(tree, now))
        active = true;
    if (tree_poll_triggers(tree))
        active = true;
    return active;
}

/* ---- the server ----------------------------------------------------------------------------------- */

static void notify_server(void *user)
{
    otfx_tree *tree = user;
    tree->host.wake(tree->host.context);
}

static void describe_layout(const otfx_tree *tree)
{
    const otfx_tbon_layout *layout = tree->config.layout;
    const size_t size = 64u * layout->places + 16u * layout->places + 1024u;
    char *text = malloc(size);
    if (!text)
        return;
    otfx_tbon_describe(layout, text, size);
    fprintf(stderr, "otfx: tree of %u place%s (%u event place%s, fan-in %u) over %u application ranks\n%s",
            layout->places, layout->places == 1 ? "" : "s", layout->event_places,
            layout->event_places == 1 ? "" : "s", layout->fanin, layout->app_ranks, text);
    if (size && text[0] && text[strlen(text) - 1] != '\n')
        fputc('\n', stderr);
    free(text);
}

bool tree_start_server(otfx_tree *tree)
{
    const otfx_tree_config *config = &tree->config;
    struct tree_root *root = &tree->root;
    if (config->job_id)
        snprintf(root->job_id, sizeof(root->job_id), "%s", config->job_id);
    else
        snprintf(root->job_id, sizeof(root->job_id), "%llu-%ld",
                 (unsigned long long)(tree_now_ns() / 1000000u), (long)getpid());
    const otfx_server_config server = {
        .listen = config->listen,
        .session_dir = config->session_dir,
        .job_id = root->job_id,
        .app_ranks = config->layout->app_ranks,
        .places = config->layout->places,
        .notify = notify_server,
        .user = tree,
    };
    char error[512] = "";
    describe_layout(tree);
    root->server = otfx_server_start(&server, error, sizeof(error));
    if (!root->server) {
        fprintf(stderr,
                "otfx-place %d: the root cannot serve clients: %s (the job runs on without steering)\n",
                tree_place_rank(tree), error);
        return false;
    }
    return true;
}

void tree_stop_server(otfx_tree *tree)
{
    if (tree->root.server) {
        otfx_server_stop(tree->root.server); /* removes the session file */
        tree->root.server = NULL;
    }
}

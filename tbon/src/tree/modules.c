/*
 * modules.c — modules loaded with load-module (otfx/analysis.h): this process never runs their code.
 * Every call is a helper process polled by the loop: load-module's own part at every place (the helper
 * loads and checks the module), a loaded module's leaf at a place serving ranks (the helper reads a
 * copy-on-write view of the traces), the merge of the parts that arrived (at the root also finishing
 * the reply), and the root's PARTIAL.
 */
#include "tree_internal.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct loaded_module *tree_loaded_module_of(const otfx_tree *tree, const otfx_command *command)
{
    if (command->kind != OTFX_CMD_QUERY)
        return NULL;
    for (size_t i = 0; i < tree->loaded_count; i++)
        if (strcmp(tree->loaded_modules[i]->name, command->module) == 0)
            return tree->loaded_modules[i];
    return NULL;
}

otfx_module_limits tree_module_limits(const otfx_tree *tree)
{
    return (otfx_module_limits){.time_limit_ns = tree->config.module_timeout_ns,
                                .result_limit = tree->config.query_memory};
}

void tree_free_parts(struct tree_request *request)
{
    for (size_t i = 0; i < request->part_count; i++)
        otfx_blob_free(&request->parts[i].blob);
    free(request->parts);
    request->parts = NULL;
    request->part_count = request->part_capacity = 0;
}

void tree_free_loaded_modules(otfx_tree *tree)
{
    for (size_t i = 0; i < tree->loaded_count; i++)
        free(tree->loaded_modules[i]);
    free(tree->loaded_modules);
    tree->loaded_modules = NULL;
    tree->loaded_count = tree->loaded_capacity = 0;
}

/* ---- load-module ---------------------------------------------------------------------------------- */

static void load_module_line(otfx_tree *tree, struct tree_request *request, const char *name,
                             const char *error)
{
    otfx_text fields = {0};
    if (!error)
        otfx_kv_str(&fields, "module", name);
    else
        otfx_kv_str(&fields, "error", error);
    tree_place_line(tree, request, error == NULL, &fields);
    otfx_text_free(&fields);
}

/* A path without '/' names a file in the working directory (not a library to search for). */
void tree_load_module(otfx_tree *tree, struct tree_request *request)
{
    char *path = request->command.path;
    if (!strchr(path, '/')) {
        const size_t length = strlen(path);
        if (length + 3 > sizeof(request->command.path)) {
            load_module_line(tree, request, NULL, "module path too long");
            return;
        }
        memmove(path + 2, path, length + 1);
        memcpy(path, "./", 2);
    }
    char error[512] = "";
    const otfx_module_limits limits = tree_module_limits(tree);
    request->call = otfx_module_call_probe(request->command.path, &limits, error, sizeof(error));
    if (!request->call) {
        load_module_line(tree, request, NULL, error);
        return;
    }
    request->call_kind = CALL_LOAD;
    request->progress.own_pending = true;
}

static void loaded(otfx_tree *tree, struct tree_request *request, const otfx_module_result *result)
{
    if (!result->ok) {
        load_module_line(tree, request, NULL, result->error[0] ? result->error : "could not load the module");
        return;
    }
    const char *name = (const char *)result->data.data;
    if (!name || !memchr(name, '\0', result->data.length) ||
        strlen(name) >= sizeof(((struct loaded_module *)0)->name)) {
        load_module_line(tree, request, NULL, "the module's helper answered without a name");
        return;
    }
    char error[256] = "";
    for (size_t i = 0; i < tree->loaded_count; i++)
        if (strcmp(tree->loaded_modules[i]->name, name) == 0 &&
            strcmp(tree->loaded_modules[i]->path, request->command.path) != 0)
            snprintf(error, sizeof(error), "a module named %s is already loaded (from %.150s)", name,
                     tree->loaded_modules[i]->path);
    if (otfx_analysis_find(name))
        snprintf(error, sizeof(error), "%s is the name of a built-in module", name);
    if (error[0]) {
        load_module_line(tree, request, NULL, error);
        return;
    }
    bool known = false;
    for (size_t i = 0; i < tree->loaded_count; i++)
        known = known || strcmp(tree->loaded_modules[i]->name, name) == 0;
    if (!known) {
        struct loaded_module *module = calloc(1, sizeof(*module));
        if (!module || !otfx_reserve((void **)&tree->loaded_modules, &tree->loaded_capacity,
                                     tree->loaded_count + 1, sizeof(*tree->loaded_modules), 4)) {
            free(module);
            load_module_line(tree, request, NULL, "out of memory");
            return;
        }
        snprintf(module->name, sizeof(module->name), "%s", name);
        snprintf(module->path, sizeof(module->path), "%s", request->command.path);
        tree->loaded_modules[tree->loaded_count++] = module;
    }
    load_module_line(tree, request, name, NULL);
}

/* ---- a loaded module's query ---------------------------------------------------------------------- */

const char *tree_start_loaded_leaf(otfx_tree *tree, struct tree_request *request)
{
    static char problem[512];
    otfx_leaf_input input;
    void *view = tree->host.leaf_view(tree->host.context, &request->command, &input);
    if (!view)
        return "out of memory for the query";
    const otfx_module_limits limits = tree_module_limits(tree);
    problem[0] = '\0';
    request->call = otfx_module_call_leaf(request->loaded->path, request->loaded->name, &request->command,
                                          &input, &limits, problem, sizeof(problem));
    tree->host.leaf_view_free(tree->host.context, view); /* the helper has its own copy */
    if (!request->call)
        return problem[0] ? problem : "cannot start the module's helper process";
    request->call_kind = CALL_OWN_LEAF;
    return NULL;
}

/* A merge of the stashed parts in a helper (finish: into the reply's lines, at the root). */
static otfx_module_call *start_merge(otfx_tree *tree, struct tree_request *request, bool finish, char *error,
                                     size_t error_size)
{
    otfx_module_call *call = NULL;
    otfx_blob *blobs = calloc(request->part_count, sizeof(*blobs));
    uint32_t *answered = calloc(request->part_count, sizeof(*answered));
    if (blobs && answered) {
        for (size_t i = 0; i < request->part_count; i++) {
            blobs[i] = request->parts[i].blob;
            answered[i] = request->parts[i].answered;
        }
        const otfx_module_limits limits = tree_module_limits(tree);
        error[0] = '\0';
        call = otfx_module_call_merge(request->loaded->path, request->loaded->name, &request->command, blobs,
                                      answered, request->part_count, finish, tree->leaves_below, &limits,
                                      error, error_size);
    }
    free(blobs);
    free(answered);
    return call;
}

bool tree_merge_loaded_parts(otfx_tree *tree, struct tree_request *request)
{
    if (request->call && request->call_kind == CALL_PARTIAL) {
        otfx_module_call_cancel(request->call); /* the final answer supersedes it */
        request->call = NULL;
    }
    if (request->call)
        return true;
    if (request->part_count == 0) {
        request->merge_done = true;
        return false;
    }
    const bool finish = tree_finishes_requests(tree);
    if (request->part_count == 1 && !finish) {
        /* merged into nothing a part stays itself (otfx/analysis.h): no helper needed */
        request->count_ok += request->parts[0].answered;
        otfx_blob_free(&request->merged);
        request->merged = request->parts[0].blob;
        request->merged.limit = tree->config.query_memory;
        request->parts[0].blob = (otfx_blob){0};
        tree_free_parts(request);
        request->merge_done = true;
        return false;
    }
    char error[512] = "could not merge: out of memory";
    request->call = start_merge(tree, request, finish, error, sizeof(error));
    if (request->call) {
        request->call_kind = CALL_MERGE;
        return true;
    }
    for (size_t i = 0; i < request->part_count; i++)
        request->count_failed += request->parts[i].answered;
    tree_add_error(&request->errors, tree->index, error, strlen(error));
    tree_free_parts(request);
    request->merge_done = true;
    return false;
}

void tree_start_loaded_partial(otfx_tree *tree, struct tree_request *request)
{
    if (request->call || request->part_count == 0)
        return;
    char error[256];
    request->call = start_merge(tree, request, true, error, sizeof(error));
    if (request->call)
        request->call_kind = CALL_PARTIAL;
}

/* The parts a merge helper left out or all of them when it failed (`partial`: counted nowhere); the others
 * count as answered. */
static uint32_t account_merge(struct tree_request *request, const otfx_module_result *result, bool partial)
{
    uint32_t answered = 0;
    size_t reason_offset = 0;
    for (size_t i = 0; i < request->part_count; i++) {
        bool refused = !result->ok;
        for (uint32_t k = 0; k < result->refused_count && !refused; k++)
            refused = result->refused[k] == i;
        if (!refused) {
            answered += request->parts[i].answered;
            continue;
        }
        if (partial)
            continue; /* a partial answer changes no count */
        request->count_failed += request->parts[i].answered;
        const char *why = result->ok ? NULL : result->error;
        size_t why_length = why ? strlen(why) : 0;
        if (!why && result->reasons.data) {
            const char *line = result->reasons.data + reason_offset;
            const char *end = strchr(line, '\n');
            why = line;
            why_length = end ? (size_t)(end - line) : strlen(line);
            reason_offset += why_length + (end ? 1 : 0);
        }
        tree_add_error(&request->errors, request->parts[i].from, why ? why : "refused", why ? why_length : 7);
    }
    return answered;
}

/* A helper of a request ended. */
static void call_done(otfx_tree *tree, struct tree_request *request)
{
    otfx_module_result result;
    const enum module_call_kind kind = request->call_kind;
    otfx_module_call_take(request->call, &result);
    request->call = NULL;
    request->call_kind = CALL_NONE;
    if (!result.ok) {
        tree->counts.module_crashes += result.crashed;
        tree->counts.module_timeouts += result.timed_out;
        tree->counts.queries_too_large += result.too_large;
    }
    switch (kind) {
    case CALL_LOAD:
        request->progress.own_pending = false;
        loaded(tree, request, &result);
        break;
    case CALL_OWN_LEAF:
        request->progress.own_pending = false;
        if (result.ok) {
            tree_stash_part(tree, request, tree->index, 1, result.data.data, result.data.length);
        } else {
            request->count_failed++;
            tree_add_error(&request->errors, tree->index, result.error, strlen(result.error));
        }
        break;
    case CALL_MERGE: {
        const uint32_t answered = account_merge(request, &result, false);
        request->count_ok += result.ok ? answered : 0;
        if (result.ok) {
            otfx_blob_free(&request->merged);
            otfx_blob_append(&request->merged, result.data.data, result.data.length);
        }
        tree_free_parts(request);
        request->merge_done = true;
        break;
    }
    case CALL_PARTIAL: {
        const uint32_t answered = account_merge(request, &result, true);
        if (result.ok && request->client)
            tree_reply_loaded_partial(tree, request, answered, &result.data);
        break;
    }
    case CALL_NONE:
        break;
    }
    otfx_module_result_free(&result);
    tree_complete_if_answered(tree, request); /* may remove the request */
}

bool tree_poll_module_calls(otfx_tree *tree)
{
    bool active = false;
    for (size_t i = 0; i < tree->request_count; i++) {
        struct tree_request *request = &tree->requests[i];
        if (!request->call || !otfx_module_call_poll(request->call))
            continue;
        call_done(tree, request);
        active = true;
        i = (size_t)-1; /* the array may have changed: look again from the start */
    }
    return active;
}

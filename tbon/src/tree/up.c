/*
 * up.c — merging up the tree: a child's partial result (RESULT) is merged into the request's with the
 * module's merge() as it arrives (a loaded module's is kept for a merge in a helper, modules.c), a
 * child's acknowledgement (ACK) adds its places' lines; once the answer policy says the request is
 * answered (policy.h) the place answers its parent, or the root its client (root.c). Failures (FAILED)
 * and the end of the place's subtree (DONE) go up the same way.
 */
#include "tree_internal.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tree_stash_part(otfx_tree *tree, struct tree_request *request, uint32_t from, uint32_t answered,
                     const void *blob, size_t length)
{
    size_t kept = length;
    for (size_t i = 0; i < request->part_count; i++)
        kept += request->parts[i].blob.length;
    if (kept > 2 * tree->config.query_memory) {
        /* the parts waiting for their merge stay within twice the bound */
        char text[160];
        snprintf(text, sizeof(text), "the results to merge exceed twice the query memory bound of %zu bytes",
                 tree->config.query_memory);
        request->count_failed += answered;
        tree->counts.queries_too_large++;
        tree_add_error(&request->errors, from, text, strlen(text));
        return;
    }
    if (!otfx_reserve((void **)&request->parts, &request->part_capacity, request->part_count + 1,
                      sizeof(*request->parts), 4)) {
        request->count_failed += answered;
        tree_add_error(&request->errors, from, "out of memory keeping the result", 32);
        return;
    }
    struct stashed_part *part = &request->parts[request->part_count];
    memset(part, 0, sizeof(*part));
    otfx_blob_append(&part->blob, blob, length);
    if (part->blob.failed) {
        otfx_blob_free(&part->blob);
        request->count_failed += answered;
        tree_add_error(&request->errors, from, "out of memory keeping the result", 32);
        return;
    }
    part->answered = answered;
    part->from = from;
    request->part_count++;
}

void tree_merge_result(otfx_tree *tree, struct tree_request *request, uint32_t from, uint32_t answered,
                       uint32_t failed, const void *blob, size_t length, const char *error,
                       size_t error_length)
{
    char why[256] = "";
    if (error_length && from == tree->index) {
        tree_add_error(&request->errors, from, error, error_length);
    } else if (error_length) {
        /* a subtree's errors name their places already */
        if (request->errors.length)
            otfx_text_append(&request->errors, "; ", 2);
        otfx_text_append(&request->errors, error, error_length);
    }
    request->count_failed += failed;
    if (!answered)
        return;
    if (request->loaded) {
        tree_stash_part(tree, request, from, answered, blob, length);
        return;
    }
    if (!request->module) {
        request->count_failed += answered;
        tree_add_error(&request->errors, from, "module unknown at this place", 28);
        return;
    }
    if (length &&
        !request->module->merge(&request->command, &request->merged, blob, length, why, sizeof(why))) {
        request->count_failed += answered;
        const char *text = why[0] ? why : "malformed partial result";
        tree_add_error(&request->errors, from, text, strlen(text));
        if (request->merged.too_large)
            tree->counts.queries_too_large++;
        return;
    }
    if (request->merged.length > request->merged.limit) {
        /* a module that ignores the bound: nothing of this request can be kept */
        char text[160];
        snprintf(text, sizeof(text), "%s: the merged result exceeds the query memory bound of %zu bytes",
                 request->module->name, request->merged.limit);
        request->count_failed += request->count_ok + answered;
        request->count_ok = 0;
        otfx_blob_free(&request->merged);
        tree_add_error(&request->errors, from, text, strlen(text));
        tree->counts.queries_too_large++;
        return;
    }
    request->count_ok += answered;
}

void tree_merge_ack(struct tree_request *request, const struct tree_message *message)
{
    request->count_ok += message->count_ok;
    request->count_failed += message->count_failed;
    otfx_text_append(&request->lines, (const char *)message->data, message->data_length);
}

/* RESULT or ACK to the parent. */
static void answer_parent(otfx_tree *tree, struct tree_request *request)
{
    struct tree_buffer message;
    bool encoded;
    if (request->kind == TREE_QUERY)
        encoded = tree_encode_result(&message, request->id, request->count_ok, request->count_failed,
                                     request->errors.data, request->errors.length, request->merged.data,
                                     request->merged.length);
    else
        encoded = tree_encode_ack(&message, request->id, request->count_ok, request->count_failed,
                                  request->lines.data, request->lines.length);
    if (!encoded && request->kind == TREE_QUERY) {
        /* too large or out of memory: the subtree's leaves count as failed */
        static const char why[] = "result too large or out of memory";
        encoded = tree_encode_result(&message, request->id, 0, request->count_ok + request->count_failed, why,
                                     sizeof(why) - 1, NULL, 0);
    }
    if (encoded)
        tree_send(tree, tree->parent, &message);
    else
        fprintf(stderr, "otfx-place %d: out of memory: the answer to request %u is lost\n",
                tree_place_rank(tree), request->id);
    if (request->final)
        tree_await_end_of_failed_job(tree, request);
}

void tree_complete_if_answered(otfx_tree *tree, struct tree_request *request)
{
    if (!answer_complete(&request->progress))
        return;
    if (request->loaded && !request->merge_done && tree_merge_loaded_parts(tree, request))
        return; /* the merge runs in a helper; this is called again when it is done */
    if (tree_finishes_requests(tree)) {
        if (request->kind == TREE_QUERY)
            tree_answer_query(tree, request, false);
        else
            tree_answer_command(tree, request);
    } else {
        answer_parent(tree, request);
    }
    tree_remove_request(tree, request);
}

void tree_report_failure(otfx_tree *tree, uint32_t rank, uint32_t exit_code, const char *cause)
{
    if (tree_finishes_requests(tree)) {
        tree_note_failure(tree, exit_code, cause);
        return;
    }
    struct tree_buffer message;
    if (tree_encode_failed(&message, rank, exit_code, cause, strlen(cause)))
        tree_send(tree, tree->parent, &message);
    else
        fprintf(stderr, "otfx-place %d: out of memory: the failure of rank %u is not reported\n",
                tree_place_rank(tree), rank);
}

bool tree_send_done(otfx_tree *tree)
{
    if (tree->done_sent || !tree->own_ended || tree->children_done != tree->child_count)
        return false;
    tree->done_sent = true;
    if (otfx_role_has_parent(tree->role)) {
        struct tree_buffer done;
        if (tree_encode_empty(&done, TREE_DONE, 0))
            tree_send(tree, tree->parent, &done);
    }
    return true;
}

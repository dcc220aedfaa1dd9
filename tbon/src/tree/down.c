/*
 * down.c — routing down the tree: a request goes to every child (the parent's message as it came, or
 * the root's encoding of a client's request) and to this place's own part; SHUTDOWN goes to every child.
 * A child that cannot be sent the request counts its leaves as failed.
 */
#include "tree_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tree_dispatch(otfx_tree *tree, struct tree_request *request, const unsigned char *bytes, size_t length)
{
    struct tree_buffer encoded = {0};
    if (!bytes && tree->child_count) {
        if (!tree_encode_command(&encoded, request->kind, request->id, request->argument,
                                 &request->command)) {
            fprintf(stderr, "otfx-place %d: out of memory sending request %u\n", tree_place_rank(tree),
                    request->id);
            request->count_failed += tree->leaves_below;
        } else {
            bytes = encoded.data;
            length = encoded.length;
        }
    }
    for (uint32_t c = 0; bytes && c < tree->child_count; c++) {
        struct tree_buffer copy = {malloc(length), length, length, false};
        if (!copy.data) {
            request->count_failed += otfx_tbon_leaves_below(tree->config.layout, tree->children[c]);
            continue;
        }
        memcpy(copy.data, bytes, length);
        tree_send(tree, tree->children[c], &copy);
        request->progress.children_waiting++;
    }
    tree_buffer_free(&encoded);
    tree_start_own_part(tree, request);
    tree_complete_if_answered(tree, request);
}

void tree_shutdown_children(otfx_tree *tree)
{
    for (uint32_t c = 0; c < tree->child_count; c++) {
        struct tree_buffer shutdown;
        if (tree_encode_empty(&shutdown, TREE_SHUTDOWN, 0))
            tree_send(tree, tree->children[c], &shutdown);
    }
}

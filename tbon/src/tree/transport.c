/*
 * transport.c — the tree's messages on tree_comm (a dup of the places' communicator: a place's rank in
 * it is its place index). Sends are nonblocking and completed as the loop turns; the bytes not yet
 * taken by their receivers are told to the host (otfx_tree_host.backlog), whose worker holds back while
 * they are large. Receives take any size up to TREE_MAX_MESSAGE.
 */
#include "tree_internal.h"

#include <otfx/support/growth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages taken at once before the loop looks at its other work. */
#define MESSAGES_PER_ROUND 64
/* The receive buffer is kept between messages up to this size. */
#define KEPT_RECEIVE_BUFFER (1024u * 1024u)

bool tree_transport_start(otfx_tree *tree)
{
    /* collective over the places */
    PMPI_Comm_dup(tree->config.places_comm, &tree->comm);
    PMPI_Comm_set_errhandler(tree->comm, MPI_ERRORS_RETURN);
    int own = -1;
    PMPI_Comm_rank(tree->comm, &own);
    if (own != (int)tree->index) {
        fprintf(stderr, "otfx-place %d: place index %u is rank %d of the places' communicator: no tree\n",
                tree_place_rank(tree), tree->index, own);
        return false;
    }
    return true;
}

static void tell_backlog(otfx_tree *tree)
{
    if (tree->host.backlog)
        tree->host.backlog(tree->host.context, tree->unsent_bytes);
}

void tree_send(otfx_tree *tree, uint32_t place, struct tree_buffer *message)
{
    if (!otfx_reserve((void **)&tree->sends, &tree->send_capacity, tree->send_count + 1, sizeof(*tree->sends),
                      16)) {
        fprintf(stderr, "otfx-place %d: out of memory: a %s message to place %u is lost\n",
                tree_place_rank(tree), tree_kind_name((enum tree_kind)message->data[6]), place);
        tree_buffer_free(message);
        return;
    }
    struct pending_send *send = &tree->sends[tree->send_count];
    const size_t bytes = message->length;
    send->message = *message;
    memset(message, 0, sizeof(*message));
    if (PMPI_Isend(send->message.data, (int)send->message.length, MPI_BYTE, (int)place, TREE_TAG, tree->comm,
                   &send->request) != MPI_SUCCESS) {
        fprintf(stderr, "otfx-place %d: could not send to place %u\n", tree_place_rank(tree), place);
        tree_buffer_free(&send->message);
        return;
    }
    tree->send_count++;
    tree->unsent_bytes += bytes;
    tell_backlog(tree);
}

/* Frees the sends that completed. */
static void progress_sends(otfx_tree *tree)
{
    size_t kept = 0, sent = 0;
    for (size_t i = 0; i < tree->send_count; i++) {
        int done = 0;
        PMPI_Test(&tree->sends[i].request, &done, MPI_STATUS_IGNORE);
        if (done) {
            sent += tree->sends[i].message.length;
            tree_buffer_free(&tree->sends[i].message);
        } else {
            tree->sends[kept++] = tree->sends[i];
        }
    }
    tree->send_count = kept;
    if (sent) {
        tree->unsent_bytes -= sent;
        tell_backlog(tree); /* a worker may wait for room */
    }
}

/* Receives one message (probed with `status`) and hands it to tree.c. */
static void receive_message(otfx_tree *tree, const MPI_Status *status)
{
    int count = 0;
    PMPI_Get_count(status, MPI_BYTE, &count);
    if (count < 0 || (size_t)count > TREE_MAX_MESSAGE) {
        fprintf(stderr,
                "otfx-place %d: malformed tree message of %d bytes from place %d dropped: too large\n",
                tree_place_rank(tree), count, status->MPI_SOURCE);
        count = 0; /* truncated into nothing: tree_comm returns errors */
    } else if ((size_t)count > tree->receive_capacity) {
        unsigned char *bigger = realloc(tree->receive_buffer, (size_t)count);
        if (!bigger) {
            fprintf(stderr, "otfx-place %d: out of memory: a %d-byte tree message from place %d dropped\n",
                    tree_place_rank(tree), count, status->MPI_SOURCE);
            count = 0;
        } else {
            tree->receive_buffer = bigger;
            tree->receive_capacity = (size_t)count;
        }
    }
    const int result = PMPI_Recv(tree->receive_buffer, count, MPI_BYTE, status->MPI_SOURCE, status->MPI_TAG,
                                 tree->comm, MPI_STATUS_IGNORE);
    if (result != MPI_SUCCESS || count == 0) {
        if (result == MPI_SUCCESS)
            tree_handle_message(tree, status->MPI_SOURCE, tree->receive_buffer, 0);
        return;
    }
    tree_handle_message(tree, status->MPI_SOURCE, tree->receive_buffer, (size_t)count);
    if (tree->receive_capacity > KEPT_RECEIVE_BUFFER) {
        /* a large result (up to the query memory bound) is not kept for the rest of the run */
        free(tree->receive_buffer);
        tree->receive_buffer = NULL;
        tree->receive_capacity = 0;
    }
}

bool tree_transport_receive(otfx_tree *tree)
{
    bool active = false;
    int flag = 1;
    for (int n = 0; flag && n < MESSAGES_PER_ROUND; n++) {
        MPI_Status status;
        PMPI_Iprobe(MPI_ANY_SOURCE, TREE_TAG, tree->comm, &flag, &status);
        if (flag) {
            receive_message(tree, &status);
            active = true;
        }
    }
    if (tree->send_count)
        progress_sends(tree);
    return active;
}

void tree_transport_stop(otfx_tree *tree)
{
    for (size_t i = 0; i < tree->send_count; i++) {
        PMPI_Wait(&tree->sends[i].request, MPI_STATUS_IGNORE);
        tree_buffer_free(&tree->sends[i].message);
    }
    tree->send_count = 0;
    free(tree->sends);
    tree->sends = NULL;
    free(tree->receive_buffer);
    tree->receive_buffer = NULL;
    if (tree->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&tree->comm);
}

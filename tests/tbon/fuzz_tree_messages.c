/*
 * fuzz_tree_messages.c — fuzz.tree_messages: arbitrary bytes as a message on tree_comm for the tree's
 * decoder (tbon/src/tree/tree_messages.c). Beyond not crashing (and every read in bounds, under the
 * sanitizers), an accepted message must be canonical: encoding what was decoded gives back exactly the
 * input bytes, so two places can never read one message differently.
 */
#include "tree_messages.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define require(condition) require_at((condition), __LINE__)
static void require_at(bool condition, int line)
{
    if (!condition) {
        fprintf(stderr, "fuzz_tree_messages.c:%d: invariant broken\n", line);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tree_message message;
    if (tree_decode(data, size, &message) != NULL)
        return 0;
    struct tree_buffer again;
    bool encoded = false;
    switch (message.kind) {
    case TREE_QUERY:
    case TREE_COMMAND:
    case TREE_LOAD_MODULE:
        encoded =
            tree_encode_command(&again, message.kind, message.request, message.argument, &message.command);
        break;
    case TREE_RESULT:
        encoded = tree_encode_result(&again, message.request, message.count_ok, message.count_failed,
                                     message.error, message.error_length, message.data, message.data_length);
        break;
    case TREE_ACK:
        encoded = tree_encode_ack(&again, message.request, message.count_ok, message.count_failed,
                                  (const char *)message.data, message.data_length);
        break;
    case TREE_DONE:
    case TREE_SHUTDOWN:
        encoded = tree_encode_empty(&again, message.kind, message.request);
        break;
    case TREE_FAILED:
        encoded = tree_encode_failed(&again, message.failed_rank, message.exit_code,
                                     (const char *)message.data, message.data_length);
        break;
    case TREE_TRIGGER:
        encoded = tree_encode_trigger(&again, message.trigger_id, message.trigger_time, message.failed_rank,
                                      message.trigger_place, (const char *)message.data, message.data_length);
        break;
    case TREE_UNSEEN:
        encoded = tree_encode_unseen(&again, message.trigger_id, message.trigger_time);
        break;
    }
    require(encoded);
    require(again.length == size && memcmp(again.data, data, size) == 0);
    tree_buffer_free(&again);
    return 0;
}

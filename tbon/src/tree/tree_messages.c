/*
 * tree_messages.c — encoding and validating the tree's messages (see tree_messages.h).
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include "tree_messages.h"

#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>

const char *tree_kind_name(enum tree_kind kind)
{
    switch (kind) {
    case TREE_QUERY:
        return "QUERY";
    case TREE_COMMAND:
        return "COMMAND";
    case TREE_RESULT:
        return "RESULT";
    case TREE_ACK:
        return "ACK";
    case TREE_DONE:
        return "DONE";
    case TREE_SHUTDOWN:
        return "SHUTDOWN";
    case TREE_LOAD_MODULE:
        return "LOAD_MODULE";
    case TREE_FAILED:
        return "FAILED";
    case TREE_TRIGGER:
        return "TRIGGER";
    case TREE_UNSEEN:
        return "UNSEEN";
    }
    return "?";
}

void tree_buffer_free(struct tree_buffer *buffer)
{
    free(buffer->data);
    memset(buffer, 0, sizeof(*buffer));
}

static void put_bytes(struct tree_buffer *out, const void *bytes, size_t length)
{
    if (out->failed)
        return;
    if (length > TREE_MAX_MESSAGE || out->length + length > TREE_MAX_MESSAGE) {
        out->failed = true;
        return;
    }
    if (!otfx_reserve((void **)&out->data, &out->capacity, out->length + length, 1, 256)) {
        out->failed = true;
        return;
    }
    if (length)
        memcpy(out->data + out->length, bytes, length);
    out->length += length;
}

static void put_u64(struct tree_buffer *out, uint64_t value, int bytes)
{
    unsigned char little[8];
    for (int i = 0; i < bytes; i++)
        little[i] = (unsigned char)(value >> (8 * i));
    put_bytes(out, little, (size_t)bytes);
}

static void put_u32(struct tree_buffer *out, uint32_t value)
{
    put_u64(out, value, 4);
}

static void put_str(struct tree_buffer *out, const char *text, size_t length)
{
    put_u32(out, (uint32_t)length);
    put_bytes(out, text, length);
}

static void begin(struct tree_buffer *out, enum tree_kind kind, uint32_t request)
{
    memset(out, 0, sizeof(*out));
    put_u32(out, TREE_MAGIC);
    put_u64(out, TREE_VERSION, 2);
    put_u64(out, (uint64_t)kind, 2);
    put_u32(out, request);
    put_u32(out, 0); /* payload length, patched by finish */
}

static bool finish(struct tree_buffer *out)
{
    if (out->failed) {
        tree_buffer_free(out);
        return false;
    }
    const uint32_t payload = (uint32_t)(out->length - TREE_HEADER_BYTES);
    for (int i = 0; i < 4; i++)
        out->data[12 + i] = (unsigned char)(payload >> (8 * i));
    return true;
}

bool tree_encode_command(struct tree_buffer *out, enum tree_kind kind, uint32_t request, uint64_t argument,
                         const otfx_command *command)
{
    begin(out, kind, request);
    put_u64(out, argument, 8);
    put_u32(out, (uint32_t)command->kind);
    put_u64(out, command->from, 8);
    put_u64(out, command->to, 8);
    put_u64(out, command->duration_ns, 8);
    const uint32_t ranges = command->ranks.count <= 32 ? command->ranks.count : 32;
    put_u32(out, ranges);
    for (uint32_t i = 0; i < ranges; i++) {
        put_u32(out, command->ranks.ranges[i].first);
        put_u32(out, command->ranks.ranges[i].last);
    }
    put_u32(out, command->bins);
    put_u32(out, command->rows);
    put_u32(out, command->groups);
    put_u32(out, command->limit);
    put_u32(out, command->classes);
    put_u64(out,
            (command->overwrite ? COMMAND_OVERWRITE : 0u) | (command->from_given ? COMMAND_FROM_GIVEN : 0u) |
                (command->to_given ? COMMAND_TO_GIVEN : 0u) | (command->no_flush ? COMMAND_NO_FLUSH : 0u) |
                (command->compensated ? COMMAND_COMPENSATED : 0u),
            1);
    put_str(out, command->strategy, strnlen(command->strategy, sizeof(command->strategy)));
    put_str(out, command->path, strnlen(command->path, sizeof(command->path)));
    put_str(out, command->module, strnlen(command->module, sizeof(command->module)));
    put_u32(out, command->top);
    put_str(out, command->zero, strnlen(command->zero, sizeof(command->zero)));
    put_u64(out, command->follow, 8);
    put_u32(out, command->group_tolerance_ppm);
    put_str(out, command->metrics, strnlen(command->metrics, sizeof(command->metrics)));
    return finish(out);
}

bool tree_encode_result(struct tree_buffer *out, uint32_t request, uint32_t answered, uint32_t failed,
                        const char *error, size_t error_length, const void *blob, size_t blob_length)
{
    begin(out, TREE_RESULT, request);
    put_u32(out, answered);
    put_u32(out, failed);
    put_str(out, error, error_length);
    put_u32(out, (uint32_t)blob_length);
    put_bytes(out, blob, blob_length);
    return finish(out);
}

bool tree_encode_ack(struct tree_buffer *out, uint32_t request, uint32_t ok, uint32_t failed,
                     const char *lines, size_t lines_length)
{
    begin(out, TREE_ACK, request);
    put_u32(out, ok);
    put_u32(out, failed);
    put_str(out, lines, lines_length);
    return finish(out);
}

bool tree_encode_empty(struct tree_buffer *out, enum tree_kind kind, uint32_t request)
{
    begin(out, kind, request);
    return finish(out);
}

bool tree_encode_failed(struct tree_buffer *out, uint32_t rank, uint32_t exit_code, const char *what,
                        size_t what_length)
{
    begin(out, TREE_FAILED, 0);
    put_u32(out, rank);
    put_u32(out, exit_code);
    put_str(out, what, what_length);
    return finish(out);
}

bool tree_encode_trigger(struct tree_buffer *out, uint64_t trigger, uint64_t time, uint32_t rank,
                         uint32_t place, const char *what, size_t what_length)
{
    begin(out, TREE_TRIGGER, 0);
    put_u64(out, trigger, 8);
    put_u64(out, time, 8);
    put_u32(out, rank);
    put_u32(out, place);
    put_str(out, what, what_length);
    return finish(out);
}

bool tree_encode_unseen(struct tree_buffer *out, uint64_t trigger, uint64_t count)
{
    begin(out, TREE_UNSEEN, 0);
    put_u64(out, trigger, 8);
    put_u64(out, count, 8);
    return finish(out);
}

/* ---- decoding ------------------------------------------------------------------------------------- */

struct reader {
    const unsigned char *data;
    size_t length, offset;
    bool failed;
};

static uint64_t get_u64(struct reader *in, int bytes)
{
    if (in->failed || in->length - in->offset < (size_t)bytes) {
        in->failed = true;
        return 0;
    }
    uint64_t value = 0;
    for (int i = 0; i < bytes; i++)
        value |= (uint64_t)in->data[in->offset + (size_t)i] << (8 * i);
    in->offset += (size_t)bytes;
    return value;
}

static uint32_t get_u32(struct reader *in)
{
    return (uint32_t)get_u64(in, 4);
}

/* A counted byte string; NULL (and failed) when it runs past the end. */
static const unsigned char *get_bytes(struct reader *in, size_t *length)
{
    const uint32_t count = get_u32(in);
    if (in->failed || in->length - in->offset < count) {
        in->failed = true;
        *length = 0;
        return NULL;
    }
    const unsigned char *bytes = in->data + in->offset;
    in->offset += count;
    *length = count;
    return bytes;
}

/* A string into a fixed NUL-terminated field: no NUL inside, room for its terminator. */
static bool get_field(struct reader *in, char *field, size_t size)
{
    size_t length = 0;
    const unsigned char *bytes = get_bytes(in, &length);
    if (!bytes || length >= size || memchr(bytes, '\0', length))
        return false;
    memcpy(field, bytes, length);
    field[length] = '\0';
    return true;
}

static const char *decode_command(struct reader *in, struct tree_message *out)
{
    otfx_command *command = &out->command;
    out->argument = get_u64(in, 8);
    const uint32_t kind = get_u32(in);
    command->from = get_u64(in, 8);
    command->to = get_u64(in, 8);
    command->duration_ns = get_u64(in, 8);
    const uint32_t ranges = get_u32(in);
    if (in->failed)
        return "command cut short";
    if (kind < OTFX_CMD_STATUS || kind >= OTFX_CMD_COUNT)
        return "unknown command kind";
    command->kind = (otfx_command_kind)kind;
    if (ranges > 32)
        return "more than 32 rank ranges";
    command->ranks.count = ranges;
    for (uint32_t i = 0; i < ranges; i++) {
        command->ranks.ranges[i].first = get_u32(in);
        command->ranks.ranges[i].last = get_u32(in);
        if (!in->failed && command->ranks.ranges[i].first > command->ranks.ranges[i].last)
            return "a rank range ends before it starts";
    }
    command->bins = get_u32(in);
    command->rows = get_u32(in);
    command->groups = get_u32(in);
    command->limit = get_u32(in);
    command->classes = get_u32(in);
    const uint64_t flags = get_u64(in, 1);
    if (in->failed)
        return "command cut short";
    if (flags & ~(uint64_t)(COMMAND_OVERWRITE | COMMAND_FROM_GIVEN | COMMAND_TO_GIVEN | COMMAND_NO_FLUSH |
                            COMMAND_COMPENSATED))
        return "unknown command flags";
    command->overwrite = (flags & COMMAND_OVERWRITE) != 0;
    command->from_given = (flags & COMMAND_FROM_GIVEN) != 0;
    command->to_given = (flags & COMMAND_TO_GIVEN) != 0;
    command->no_flush = (flags & COMMAND_NO_FLUSH) != 0;
    command->compensated = (flags & COMMAND_COMPENSATED) != 0;
    if (!get_field(in, command->strategy, sizeof(command->strategy)) ||
        !get_field(in, command->path, sizeof(command->path)) ||
        !get_field(in, command->module, sizeof(command->module)))
        return in->failed ? "command cut short" : "a string field too long or holding a NUL";
    command->top = get_u32(in);
    if (!get_field(in, command->zero, sizeof(command->zero)))
        return in->failed ? "command cut short" : "a string field too long or holding a NUL";
    command->follow = get_u64(in, 8);
    command->group_tolerance_ppm = get_u32(in);
    if (!get_field(in, command->metrics, sizeof(command->metrics)))
        return in->failed ? "command cut short" : "a string field too long or holding a NUL";
    return NULL;
}

static bool is_query_kind(otfx_command_kind kind)
{
    return kind == OTFX_CMD_STATUS || kind == OTFX_CMD_PROFILE || kind == OTFX_CMD_TIMELINE ||
           kind == OTFX_CMD_MESSAGES || kind == OTFX_CMD_EVENTS || kind == OTFX_CMD_QUERY ||
           kind == OTFX_CMD_CRITICAL_PATH || kind == OTFX_CMD_WAIT_STATES || kind == OTFX_CMD_STRUCTURE ||
           kind == OTFX_CMD_METRIC_TIMELINE;
}

const char *tree_decode(const void *bytes, size_t length, struct tree_message *out)
{
    memset(out, 0, sizeof(*out));
    if (!bytes || length < TREE_HEADER_BYTES)
        return "shorter than a header";
    if (length > TREE_MAX_MESSAGE)
        return "larger than the largest tree message";
    struct reader in = {bytes, length, 0, false};
    const uint32_t magic = get_u32(&in);
    const uint32_t version = (uint32_t)get_u64(&in, 2);
    const uint32_t kind = (uint32_t)get_u64(&in, 2);
    out->request = get_u32(&in);
    const uint32_t payload = get_u32(&in);
    if (magic != TREE_MAGIC)
        return "wrong magic number";
    if (version != TREE_VERSION)
        return "other tree message version";
    if (kind < TREE_QUERY || kind > TREE_KIND_MAX)
        return "unknown message kind";
    if (payload != length - TREE_HEADER_BYTES)
        return "payload length does not match the message size";
    out->kind = (enum tree_kind)kind;
    const char *problem = NULL;
    switch (out->kind) {
    case TREE_QUERY:
    case TREE_COMMAND:
    case TREE_LOAD_MODULE:
        problem = decode_command(&in, out);
        if (!problem && out->kind == TREE_QUERY && !is_query_kind(out->command.kind))
            problem = "QUERY of a command that is no query";
        if (!problem && out->kind == TREE_COMMAND &&
            (is_query_kind(out->command.kind) || out->command.kind == OTFX_CMD_LOAD_MODULE))
            problem = "COMMAND of a query or load-module";
        if (!problem && out->kind == TREE_LOAD_MODULE && out->command.kind != OTFX_CMD_LOAD_MODULE)
            problem = "LOAD_MODULE of another command";
        break;
    case TREE_RESULT: {
        out->count_ok = get_u32(&in);
        out->count_failed = get_u32(&in);
        out->error = (const char *)get_bytes(&in, &out->error_length);
        out->data = get_bytes(&in, &out->data_length);
        if (in.failed)
            problem = "result cut short";
        break;
    }
    case TREE_ACK:
        out->count_ok = get_u32(&in);
        out->count_failed = get_u32(&in);
        out->data = get_bytes(&in, &out->data_length);
        if (in.failed)
            problem = "acknowledgement cut short";
        break;
    case TREE_FAILED:
        out->failed_rank = get_u32(&in);
        out->exit_code = get_u32(&in);
        out->data = get_bytes(&in, &out->data_length);
        if (in.failed)
            problem = "failure report cut short";
        else if (out->request != 0)
            problem = "a failure report with a request id";
        break;
    case TREE_TRIGGER:
        out->trigger_id = get_u64(&in, 8);
        out->trigger_time = get_u64(&in, 8);
        out->failed_rank = get_u32(&in);
        out->trigger_place = get_u32(&in);
        out->data = get_bytes(&in, &out->data_length);
        if (in.failed)
            problem = "trigger report cut short";
        else if (out->request != 0)
            problem = "a trigger report with a request id";
        break;
    case TREE_UNSEEN:
        out->trigger_id = get_u64(&in, 8);
        out->trigger_time = get_u64(&in, 8);
        if (in.failed)
            problem = "unseen report cut short";
        else if (out->request != 0)
            problem = "an unseen report with a request id";
        break;
    case TREE_DONE:
    case TREE_SHUTDOWN:
        break;
    }
    if (!problem && in.offset != in.length)
        problem = "bytes left over after the payload";
    return problem;
}

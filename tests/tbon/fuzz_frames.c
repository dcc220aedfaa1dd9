/*
 * fuzz_frames.c — arbitrary bytes through everything the server parses from a client (and a client
 * from the server): the frame stream, record lines, command lines and rank sets, and the client
 * library's frame scanning, HELLO answer and ERROR fields (otfx/client.h). Invariants, checked
 * with abort() so libFuzzer reports them: nothing reads out of bounds (ASan), a parsed command's
 * canonical line parses to the same command, and a parsed record line re-encoded parses to the same
 * fields.
 */
#include <otfx/client.h>
#include <otfx/protocol.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *invariant)
{
    fprintf(stderr, "fuzz_frames: invariant broken: %s\n", invariant);
    abort();
}

static void record_lines(const char *text, size_t size)
{
    size_t offset = 0, length;
    const char *line;
    while (otfx_kv_next_line(text, size, &offset, &line, &length)) {
        otfx_kv_line kv;
        if (!otfx_kv_parse(line, length, &kv))
            continue;
        otfx_text again = {0};
        otfx_kv_begin(&again, kv.type);
        for (size_t i = 0; i < kv.count; i++)
            otfx_kv_str(&again, kv.fields[i].key, kv.fields[i].value);
        otfx_kv_line reparsed;
        if (!otfx_kv_parse(again.data, again.length, &reparsed))
            broken("a re-encoded record line parses");
        if (strcmp(reparsed.type, kv.type) != 0 || reparsed.count != kv.count)
            broken("a re-encoded record line has the same type and field count");
        for (size_t i = 0; i < kv.count; i++)
            if (strcmp(reparsed.fields[i].key, kv.fields[i].key) != 0 ||
                strcmp(reparsed.fields[i].value, kv.fields[i].value) != 0)
                broken("a re-encoded record line has the same fields");
        otfx_kv_line_free(&reparsed);
        otfx_kv_line_free(&kv);
        otfx_text_free(&again);
    }
}

static void command_line(const char *line)
{
    otfx_command command, again;
    char error[256];
    if (!otfx_command_parse(line, &command, error, sizeof error)) {
        if (error[0] == '\0')
            broken("a refused command says why");
        return;
    }
    otfx_text text = {0};
    otfx_command_format(&command, &text);
    if (text.failed)
        return;
    if (!otfx_command_parse(text.data, &again, error, sizeof error))
        broken("a command's canonical line parses");
    if (memcmp(&command, &again, sizeof command) != 0)
        broken("a command's canonical line parses to the same command");
    otfx_text_free(&text);
}

static void rank_set(const char *text)
{
    otfx_rank_set set, again;
    if (!otfx_rank_set_parse(text, &set))
        return;
    char formatted[32 * 24];
    otfx_rank_set_format(&set, formatted, sizeof formatted);
    if (!otfx_rank_set_parse(formatted, &again) || memcmp(&set, &again, sizeof set) != 0)
        broken("a rank set's formatted text parses to the same set");
}

/* The payloads of a frame stream, cut as the server cuts it. */
static void frames(const uint8_t *data, size_t size)
{
    size_t offset = 0;
    while (offset < size) {
        otfx_frame_header header;
        const otfx_frame_status status =
            otfx_frame_parse_header(data + offset, size - offset, OTFX_PROTOCOL_MAX_REQUEST, &header);
        if (status != OTFX_FRAME_OK)
            return;
        if (header.length > OTFX_PROTOCOL_MAX_REQUEST)
            broken("an accepted frame respects the size limit");
        offset += OTFX_FRAME_HEADER_BYTES;
        if (size - offset < header.length)
            return; /* truncated: the server waits for the rest */
        char *payload = malloc((size_t)header.length + 1);
        if (!payload)
            return;
        memcpy(payload, data + offset, header.length);
        payload[header.length] = '\0';
        offset += header.length;
        if (header.kind == OTFX_FRAME_REQUEST)
            command_line(payload);
        else
            record_lines(payload, header.length);
        free(payload);
    }
}

/* The frame stream as a client scans it: a frame never claims bytes beyond the buffer, a refusal says
 * why, and the first frame judged as the answer to a HELLO says why when it is no WELCOME. */
static void client_frames(const uint8_t *data, size_t size)
{
    size_t offset = 0;
    for (bool first = true; offset < size; first = false) {
        otfx_frame_header header;
        const char *payload;
        size_t frame_bytes;
        char error[256] = "";
        const otfx_frame_scan scan = otfx_client_scan_frame(data + offset, size - offset, &header, &payload,
                                                            &frame_bytes, error, sizeof error);
        if (scan == OTFX_FRAME_SCAN_BAD && error[0] == '\0')
            broken("a refused frame says why");
        if (scan != OTFX_FRAME_SCAN_READY)
            return;
        if (frame_bytes > size - offset || frame_bytes != OTFX_FRAME_HEADER_BYTES + (size_t)header.length ||
            payload != (const char *)data + offset + OTFX_FRAME_HEADER_BYTES)
            broken("a scanned frame lies within the buffer");
        char code[64], message[256];
        otfx_client_error_fields(payload, header.length, code, sizeof code, message, sizeof message);
        if (first &&
            otfx_client_check_welcome(&header, payload, header.length, "fuzz", error, sizeof error) !=
                OTFX_CLIENT_OK &&
            error[0] == '\0')
            broken("a refused HELLO says why");
        offset += frame_bytes;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    frames(data, size);
    client_frames(data, size);
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    record_lines(text, size);
    command_line(text);
    rank_set(text);
    free(text);
    return 0;
}

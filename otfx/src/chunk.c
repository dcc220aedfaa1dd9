/* chunk.c — sealing chunks, checked parsing, event cursors and the statistics walk. */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "chunk.h"

#include "defs_internal.h"
#include "error.h"
#include "huffman.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Header offsets (little-endian). The checksum covers every byte from CHECKSUMMED_FROM on. */
enum {
    AT_MAGIC = 0,
    AT_CHECKSUM = 4,
    CHECKSUMMED_FROM = 8,
    AT_VERSION = 8,
    AT_FLAGS = 9,
    AT_CLASSES = 10,
    AT_RESERVED = 11,
    AT_TOTAL = 12,
    AT_RAW = 16,
    AT_STORED = 20,
    AT_EVENTS = 24,
    AT_CONTEXT = 28,
    AT_SUMMARY = 32,
    AT_PAIR_DEPTH = 36,
    AT_BEGIN = 40,
    AT_END = 48,
    AT_FIRST_EVENT = 56,
};

static void put_u32(uint8_t *at, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

static void put_u64(uint8_t *at, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

static uint32_t get_u32(const uint8_t *at)
{
    uint32_t value = 0;
    for (int i = 3; i >= 0; i--)
        value = value << 8 | at[i];
    return value;
}

static uint64_t get_u64(const uint8_t *at)
{
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--)
        value = value << 8 | at[i];
    return value;
}

static uint32_t checksum(const uint8_t *blob, uint32_t size)
{
    return (uint32_t)crc32(0L, blob + CHECKSUMMED_FROM, size - CHECKSUMMED_FROM);
}

void chunk_scratch_free(chunk_scratch *scratch)
{
    free(scratch->bytes);
    scratch->bytes = NULL;
    scratch->capacity = 0;
}

static otfx_status scratch_reserve(chunk_scratch *scratch, size_t size)
{
    if (size <= scratch->capacity)
        return OTFX_OK;
    uint8_t *bigger = realloc(scratch->bytes, size);
    if (!bigger)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a %zu-byte sealing buffer", size);
    scratch->bytes = bigger;
    scratch->capacity = size;
    return OTFX_OK;
}

#define MAX_VARINT 10

/* Stream methods, the first byte of each compressed stream. */
enum { STREAM_LZ4 = 1, STREAM_HUFFMAN = 2 };
/* A compressed stream's record: method byte, [size after LZ4 when both stages ran], stored size. */
#define STREAM_RECORD_BOUND (1 + 2 * MAX_VARINT)

/* Compresses one stream at `out` as a record; `work` holds 2 * LZ4_compressBound(size) bytes. */
static uint8_t *compress_stream(const uint8_t *data, size_t size, uint8_t *work, uint8_t *out)
{
    size_t bound = (size_t)LZ4_compressBound((int)size);
    uint8_t *lz4_out = work, *huffman_out = work + bound;
    uint8_t method = 0;
    const uint8_t *middle = data;
    size_t middle_size = size;
    int lz4_size =
        size ? LZ4_compress_default((const char *)data, (char *)lz4_out, (int)size, (int)bound) : 0;
    if (lz4_size > 0 && (size_t)lz4_size < size) {
        method |= STREAM_LZ4;
        middle = lz4_out;
        middle_size = (size_t)lz4_size;
    }
    const uint8_t *stored = middle;
    size_t stored_size = huffman_encode(middle, middle_size, huffman_out, bound);
    if (stored_size > 0)
        method |= STREAM_HUFFMAN;
    else
        stored_size = middle_size;
    if (method & STREAM_HUFFMAN)
        stored = huffman_out;
    *out++ = method;
    if (method == (STREAM_LZ4 | STREAM_HUFFMAN))
        out = varint_put(out, middle_size);
    out = varint_put(out, stored_size);
    memcpy(out, stored, stored_size);
    return out + stored_size;
}

otfx_status chunk_seal(const chunk_contents *contents, chunk_scratch *scratch, uint8_t **blob, uint32_t *size)
{
    bool summary_only = contents->flags & CHUNK_SUMMARY_ONLY;
    size_t raw_bytes = summary_only ? 0 : (size_t)contents->event_count + contents->operand_bytes;
    size_t context_bound = summary_only ? 0 : MAX_VARINT * (1 + 2 * (size_t)contents->context_depth);
    size_t summary_bound = summary_encoded_bound(contents->summary);
    if (raw_bytes > CHUNK_MAX_RAW_BYTES)
        return otfx_fail(OTFX_ERR_INVALID, "chunk payload of %zu bytes exceeds the format's limit",
                         raw_bytes);
    /* Scratch: the chunk being assembled (payload at most raw plus two stream records, since a
     * stream is stored as it is when compression does not pay), then the compressors' work space. */
    size_t assembled_bound =
        CHUNK_HEADER_BYTES + context_bound + summary_bound + raw_bytes + 2 * STREAM_RECORD_BOUND;
    size_t larger_stream =
        contents->event_count > contents->operand_bytes ? contents->event_count : contents->operand_bytes;
    size_t work_bytes = raw_bytes ? 2 * (size_t)LZ4_compressBound((int)larger_stream) : 0;
    otfx_status status = scratch_reserve(scratch, assembled_bound + work_bytes);
    if (status != OTFX_OK)
        return status;
    uint8_t *out = scratch->bytes;
    uint8_t *p = out + CHUNK_HEADER_BYTES;

    const uint8_t *context_at = p;
    if (!summary_only) {
        p = varint_put(p, contents->context_depth);
        for (uint32_t i = 0; i < contents->context_depth; i++) {
            p = varint_put(p, contents->context[i].region);
            p = varint_put(p, contents->begin - contents->context[i].enter);
        }
    }
    uint32_t context_bytes = (uint32_t)(p - context_at);
    uint32_t summary_bytes = (uint32_t)summary_encode(contents->summary, p);
    p += summary_bytes;

    uint8_t flags = contents->flags & (uint8_t)~CHUNK_COMPRESSED;
    uint32_t stored_bytes = (uint32_t)raw_bytes;
    if (raw_bytes) {
        uint8_t *work = out + assembled_bound;
        uint8_t *compressed_end = NULL;
        if (contents->compress) {
            compressed_end = compress_stream(contents->tokens, contents->event_count, work, p);
            compressed_end =
                compress_stream(contents->operands, contents->operand_bytes, work, compressed_end);
        }
        if (compressed_end && (size_t)(compressed_end - p) < raw_bytes) {
            stored_bytes = (uint32_t)(compressed_end - p);
            flags |= CHUNK_COMPRESSED;
        } else {
            memcpy(p, contents->tokens, contents->event_count);
            memcpy(p + contents->event_count, contents->operands, contents->operand_bytes);
        }
        p += stored_bytes;
    }
    uint32_t total = (uint32_t)(p - out);

    memset(out, 0, CHUNK_HEADER_BYTES);
    put_u32(out + AT_MAGIC, CHUNK_MAGIC);
    out[AT_VERSION] = OTFX_FORMAT_VERSION;
    out[AT_FLAGS] = flags;
    out[AT_CLASSES] = contents->classes_present;
    put_u32(out + AT_TOTAL, total);
    put_u32(out + AT_RAW, (uint32_t)raw_bytes);
    put_u32(out + AT_STORED, stored_bytes);
    put_u32(out + AT_EVENTS, summary_only ? 0 : contents->event_count);
    put_u32(out + AT_CONTEXT, context_bytes);
    put_u32(out + AT_SUMMARY, summary_bytes);
    put_u32(out + AT_PAIR_DEPTH, contents->max_pair_depth);
    put_u64(out + AT_BEGIN, contents->begin);
    put_u64(out + AT_END, contents->end);
    put_u64(out + AT_FIRST_EVENT, contents->first_event);
    put_u32(out + AT_CHECKSUM, checksum(out, total));

    uint8_t *sealed = malloc(total);
    if (!sealed)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory for a %u-byte chunk", total);
    memcpy(sealed, out, total);
    *blob = sealed;
    *size = total;
    return OTFX_OK;
}

uint8_t chunk_sealed_flags(const uint8_t *blob)
{
    return blob[AT_FLAGS];
}

uint32_t chunk_stored_checksum(const uint8_t *blob)
{
    return get_u32(blob + AT_CHECKSUM);
}

otfx_status chunk_parse(const uint8_t *blob, size_t size, bool verify_checksum, chunk_info *info)
{
    if (size < CHUNK_HEADER_BYTES)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk of %zu bytes is shorter than its header", size);
    if (get_u32(blob + AT_MAGIC) != CHUNK_MAGIC)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk has no chunk magic");
    if (blob[AT_VERSION] != OTFX_FORMAT_VERSION)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk format version %u, expected %u", blob[AT_VERSION],
                         OTFX_FORMAT_VERSION);
    memset(info, 0, sizeof *info);
    info->flags = blob[AT_FLAGS];
    info->classes_present = blob[AT_CLASSES];
    info->total_bytes = get_u32(blob + AT_TOTAL);
    info->raw_bytes = get_u32(blob + AT_RAW);
    info->stored_bytes = get_u32(blob + AT_STORED);
    info->event_count = get_u32(blob + AT_EVENTS);
    info->context_bytes = get_u32(blob + AT_CONTEXT);
    info->summary_bytes = get_u32(blob + AT_SUMMARY);
    info->max_pair_depth = get_u32(blob + AT_PAIR_DEPTH);
    info->begin = get_u64(blob + AT_BEGIN);
    info->end = get_u64(blob + AT_END);
    info->first_event = get_u64(blob + AT_FIRST_EVENT);
    if (info->total_bytes != size)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk says it has %u bytes but has %zu", info->total_bytes, size);
    if (verify_checksum && get_u32(blob + AT_CHECKSUM) != checksum(blob, info->total_bytes))
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk checksum mismatch (stored data was damaged)");
    uint64_t sections =
        (uint64_t)CHUNK_HEADER_BYTES + info->context_bytes + info->summary_bytes + info->stored_bytes;
    bool summary_only = info->flags & CHUNK_SUMMARY_ONLY;
    if ((info->flags & ~CHUNK_KNOWN_FLAGS) || blob[AT_RESERVED] != 0 || sections != size ||
        info->raw_bytes > CHUNK_MAX_RAW_BYTES || info->event_count > info->raw_bytes ||
        info->begin > info->end || info->max_pair_depth > OTFX_MAX_CALL_DEPTH ||
        (info->classes_present >> OTFX_CLASS_COUNT) != 0 ||
        (!(info->flags & CHUNK_COMPRESSED) && info->stored_bytes != info->raw_bytes) ||
        (summary_only && (info->raw_bytes || info->context_bytes || info->flags & CHUNK_COMPRESSED)) ||
        (!summary_only && info->event_count > 0 &&
         (info->first_event < info->begin || info->first_event > info->end)))
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk header is inconsistent");
    info->context = blob + CHUNK_HEADER_BYTES;
    info->summary_bytes_at = info->context + info->context_bytes;
    info->payload = info->summary_bytes_at + info->summary_bytes;
    return OTFX_OK;
}

otfx_status chunk_read_context(const chunk_info *info, call_frame *frames, uint32_t *depth)
{
    *depth = 0;
    if (info->flags & CHUNK_SUMMARY_ONLY)
        return OTFX_OK;
    const uint8_t *in = info->context, *end = in + info->context_bytes;
    uint64_t count;
    if (!varint_get(&in, end, &count) || count > OTFX_MAX_CALL_DEPTH)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk context is malformed");
    otfx_time previous_enter = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t region, before_begin;
        if (!varint_get(&in, end, &region) || region >= OTFX_REF_NONE ||
            !varint_get(&in, end, &before_begin) || before_begin > info->begin ||
            info->begin - before_begin < previous_enter)
            return otfx_fail(OTFX_ERR_CORRUPT, "chunk context is malformed");
        frames[i] = (call_frame){(otfx_ref)region, 0, info->begin - before_begin, 0};
        previous_enter = frames[i].enter;
    }
    if (in != end)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk context has trailing bytes");
    *depth = (uint32_t)count;
    return OTFX_OK;
}

otfx_status chunk_read_summary(const chunk_info *info, summary *into)
{
    return summary_decode(info->summary_bytes_at, info->summary_bytes, into);
}

otfx_status payload_buffers_alloc(payload_buffers *buffers, size_t raw_capacity)
{
    buffers->raw_capacity = raw_capacity;
    buffers->middle_capacity = (size_t)LZ4_compressBound((int)raw_capacity);
    buffers->raw = malloc(buffers->raw_capacity);
    buffers->middle = malloc(buffers->middle_capacity);
    if (!buffers->raw || !buffers->middle) {
        payload_buffers_free(buffers);
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory for decompression buffers");
    }
    return OTFX_OK;
}

void payload_buffers_free(payload_buffers *buffers)
{
    free(buffers->raw);
    free(buffers->middle);
    buffers->raw = buffers->middle = NULL;
}

/* Expands one stream record from [*in, end) into exactly `size` bytes at dst. */
static bool expand_stream(const uint8_t **in, const uint8_t *end, uint8_t *dst, size_t size,
                          const payload_buffers *buffers)
{
    const uint8_t *p = *in;
    uint64_t middle_size = size, stored_size;
    if (p == end)
        return false;
    uint8_t method = *p++;
    if (method > (STREAM_LZ4 | STREAM_HUFFMAN))
        return false;
    if (method == (STREAM_LZ4 | STREAM_HUFFMAN) &&
        (!varint_get(&p, end, &middle_size) || middle_size > buffers->middle_capacity))
        return false;
    if (!varint_get(&p, end, &stored_size) || stored_size > (uint64_t)(end - p))
        return false;
    bool ok;
    switch (method) {
    case STREAM_LZ4 | STREAM_HUFFMAN:
        ok = huffman_decode(p, stored_size, buffers->middle, middle_size) &&
             LZ4_decompress_safe((const char *)buffers->middle, (char *)dst, (int)middle_size, (int)size) ==
                 (int)size;
        break;
    case STREAM_HUFFMAN:
        ok = huffman_decode(p, stored_size, dst, size);
        break;
    case STREAM_LZ4:
        ok = stored_size <= INT32_MAX &&
             LZ4_decompress_safe((const char *)p, (char *)dst, (int)stored_size, (int)size) == (int)size;
        break;
    default:
        ok = stored_size == size;
        if (ok && size)
            memcpy(dst, p, size);
        break;
    }
    *in = p + stored_size;
    return ok;
}

otfx_status chunk_read_payload(const chunk_info *info, const payload_buffers *buffers, const uint8_t **raw)
{
    if (!(info->flags & CHUNK_COMPRESSED)) {
        *raw = info->payload;
        return OTFX_OK;
    }
    if (buffers->raw_capacity < info->raw_bytes)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload of %u bytes exceeds the trace's chunk size",
                         info->raw_bytes);
    const uint8_t *in = info->payload, *end = in + info->stored_bytes;
    if (!expand_stream(&in, end, buffers->raw, info->event_count, buffers) ||
        !expand_stream(&in, end, buffers->raw + info->event_count, info->raw_bytes - info->event_count,
                       buffers) ||
        in != end)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload does not decompress");
    *raw = buffers->raw;
    return OTFX_OK;
}

static otfx_status close_frame(summary *into, const call_frame *frame, otfx_time begin, otfx_time end,
                               otfx_time from, otfx_time to)
{
    otfx_profile_entry *entry = summary_region(into, frame->region);
    if (!entry)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory computing statistics");
    entry->inclusive += time_overlap(frame->enter > begin ? frame->enter : begin, end, from, to);
    entry->exclusive += frame->exclusive;
    if (frame->entered_here && frame->enter >= from && frame->enter < to)
        entry->visits++;
    return OTFX_OK;
}

static otfx_status count_message(summary *into, const event_cursor *cursor, const otfx_event *event,
                                 bool sent)
{
    otfx_ref region = cursor->depth ? cursor->frames[cursor->depth - 1].region : OTFX_REF_NONE;
    otfx_profile_entry *entry = summary_region(into, region);
    otfx_peer_stats *peer = entry ? summary_peer(into, event->u.msg.peer) : NULL;
    if (!peer)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory computing statistics");
    if (sent) {
        entry->messages_sent++;
        entry->bytes_sent += event->u.msg.bytes;
        peer->messages_sent++;
        peer->bytes_sent += event->u.msg.bytes;
    } else {
        entry->messages_received++;
        entry->bytes_received += event->u.msg.bytes;
        peer->messages_received++;
        peer->bytes_received += event->u.msg.bytes;
    }
    return OTFX_OK;
}

otfx_status chunk_walk_summary(event_cursor *cursor, const otfx_defs *defs, otfx_time begin, otfx_time end,
                               otfx_time from, otfx_time to, summary *into, strippable_info *strippable,
                               metric_walk *metrics)
{
    otfx_time now = begin;
    strippable_info found = {0, 0};
    otfx_event event;
    int next;
    otfx_status status = OTFX_OK;
    for (uint32_t i = 0; i < cursor->depth; i++)
        cursor->frames[i].exclusive = 0;
    while (status == OTFX_OK && (next = event_cursor_next(cursor, &event)) > 0) {
        /* The time since the previous event belonged to the region on top before this event. */
        uint32_t depth_before = cursor->depth - (event.type == OTFX_EV_ENTER) + (event.type == OTFX_EV_LEAVE);
        if (depth_before > 0) {
            call_frame *top =
                event.type == OTFX_EV_LEAVE ? event_cursor_left(cursor) : &cursor->frames[depth_before - 1];
            top->exclusive += time_overlap(now, event.time, from, to);
        }
        now = event.time;
        if (metrics)
            metric_walk_event(metrics, &event);
        bool in_window = event.time >= from && event.time < to;
        switch (event.type) {
        case OTFX_EV_LEAVE: {
            const call_frame *left = event_cursor_left(cursor);
            status = close_frame(into, left, begin, event.time, from, to);
            if (left->entered_here) {
                otfx_event_class event_class =
                    codec_event_class(OTFX_EV_ENTER, defs_region_role_or_user(defs, left->region));
                found.classes |= (uint8_t)(1u << event_class);
                if (cursor->depth + 1 > found.max_pair_depth)
                    found.max_pair_depth = cursor->depth + 1;
            }
            break;
        }
        case OTFX_EV_SEND:
        case OTFX_EV_ISEND:
        case OTFX_EV_RECV:
        case OTFX_EV_IRECV:
            if (in_window)
                status = count_message(into, cursor, &event,
                                       event.type == OTFX_EV_SEND || event.type == OTFX_EV_ISEND);
            found.classes |= 1u << OTFX_CLASS_MPI_P2P;
            break;
        case OTFX_EV_ISEND_COMPLETE:
        case OTFX_EV_IRECV_REQUEST:
        case OTFX_EV_REQUEST_CANCELLED:
            found.classes |= 1u << OTFX_CLASS_MPI_P2P;
            break;
        case OTFX_EV_COLL_BEGIN:
        case OTFX_EV_COLL_END:
        case OTFX_EV_NBC_REQUEST:
        case OTFX_EV_NBC_COMPLETE:
            found.classes |= 1u << OTFX_CLASS_MPI_COLLECTIVE;
            break;
        case OTFX_EV_ENTER:
        case OTFX_EV_METRIC:
        case OTFX_EV_PHASE:
        case OTFX_EV_REDUCTION:
        case OTFX_EV_TYPE_COUNT:
            break;
        }
    }
    if (status != OTFX_OK)
        return status;
    if (next < 0)
        return otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor->index);
    if (cursor->depth > 0)
        cursor->frames[cursor->depth - 1].exclusive += time_overlap(now, end, from, to);
    for (uint32_t i = 0; i < cursor->depth && status == OTFX_OK; i++)
        status = close_frame(into, &cursor->frames[i], begin, end, from, to);
    if (strippable)
        *strippable = found;
    return status;
}

otfx_status chunk_check(const uint8_t *blob, size_t size, bool verify_checksum)
{
    chunk_info info;
    otfx_status status = chunk_parse(blob, size, verify_checksum, &info);
    if (status != OTFX_OK)
        return status;
    summary stats;
    summary_init(&stats);
    status = chunk_read_summary(&info, &stats);
    summary_free(&stats);
    if (status != OTFX_OK || (info.flags & CHUNK_SUMMARY_ONLY))
        return status;
    call_frame *frames = malloc(sizeof *frames * OTFX_MAX_CALL_DEPTH);
    payload_buffers buffers = {0};
    uint32_t depth = 0;
    const uint8_t *raw = NULL;
    if (!frames)
        status = otfx_fail(OTFX_ERR_NOMEM, "out of memory checking a chunk");
    if (status == OTFX_OK)
        status = payload_buffers_alloc(&buffers, info.raw_bytes ? info.raw_bytes : 1);
    if (status == OTFX_OK)
        status = chunk_read_context(&info, frames, &depth);
    if (status == OTFX_OK)
        status = chunk_read_payload(&info, &buffers, &raw);
    if (status == OTFX_OK) {
        event_cursor cursor;
        event_cursor_init(&cursor, info.begin, info.flags & CHUNK_PREDICTED_TIME, raw, info.event_count,
                          raw + info.event_count, info.raw_bytes - info.event_count, frames, depth);
        otfx_event event;
        int next;
        while ((next = event_cursor_next(&cursor, &event)) > 0) {
            if (event.time > info.end)
                break;
        }
        if (next != 0)
            status = otfx_fail(OTFX_ERR_CORRUPT, "chunk payload is malformed at event %u", cursor.index);
    }
    free(frames);
    payload_buffers_free(&buffers);
    return status;
}

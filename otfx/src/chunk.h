/* chunk.h — sealed chunks: layout, sealing, checked parsing and event cursors (private).
 *
 * A sealed chunk is one allocation: a 64-byte header, the calling context at the chunk's start, the
 * chunk's summary and the payload: the token stream followed by the operand stream, each
 * LZ4-compressed and then Huffman-coded where that pays. A CRC-32 covers everything after the checksum field.
 * A chunk is decodable on its own: its context gives the open regions, its codec state starts fresh. A
 * summary-only chunk keeps header and summary of a range whose events were removed. Layout:
 * docs/otfx-format.md.
 */
#ifndef OTFX_CHUNK_H
#define OTFX_CHUNK_H

#include "codec.h"
#include "summary.h"

#include "otfx/trace.h"

#define CHUNK_MAGIC        0x4b43584fu /* "OXCK" little-endian */
#define CHUNK_HEADER_BYTES 64
/* Largest raw payload a decoder accepts; traces use far smaller chunks (at most 1 MiB of operands). */
#define CHUNK_MAX_RAW_BYTES (4u << 20)

enum chunk_flags {
    CHUNK_COMPRESSED = 1u << 0,     /* payload is one LZ4 block */
    CHUNK_SUMMARY_ONLY = 1u << 1,   /* no context, no payload: the range's events were removed */
    CHUNK_THINNED_TYPE = 1u << 2,   /* `type` removed event classes from the payload */
    CHUNK_THINNED_DEPTH = 1u << 3,  /* `depth` removed deep enter/leave pairs from the payload */
    CHUNK_PREDICTED_TIME = 1u << 4, /* time deltas are coded as residuals of a prediction (codec.h) */
    CHUNK_KNOWN_FLAGS = (1u << 5) - 1,
};

/* A parsed, bounds-checked header with pointers to the sections. */
typedef struct chunk_info {
    uint8_t flags;
    uint8_t classes_present; /* bit per otfx_event_class of events `type` could still remove */
    uint32_t total_bytes, raw_bytes, stored_bytes, event_count, context_bytes, summary_bytes;
    uint32_t max_pair_depth; /* deepest level + 1 of an enter/leave pair inside the chunk, 0 if none */
    otfx_time begin, end, first_event;
    const uint8_t *context, *summary_bytes_at, *payload;
} chunk_info;

/* What a chunk is sealed from. */
typedef struct chunk_contents {
    otfx_time begin, end, first_event;
    const call_frame *context;
    uint32_t context_depth;
    const summary *summary;
    const uint8_t *tokens; /* event_count tokens */
    uint32_t event_count;
    const uint8_t *operands;
    uint32_t operand_bytes;
    uint8_t flags; /* all but CHUNK_COMPRESSED, which chunk_seal decides */
    uint8_t classes_present;
    uint32_t max_pair_depth;
    bool compress;
} chunk_contents;

/* Reusable buffers for sealing; grown on demand, owned by the trace (part of its fixed overhead). */
typedef struct chunk_scratch {
    uint8_t *bytes;
    size_t capacity;
} chunk_scratch;

void chunk_scratch_free(chunk_scratch *scratch);

/* Builds the sealed chunk in a new allocation of *size bytes. */
otfx_status chunk_seal(const chunk_contents *contents, chunk_scratch *scratch, uint8_t **blob,
                       uint32_t *size);

/* The flags of a chunk chunk_seal() produced (COMPRESSED tells whether LZ4 paid off). */
uint8_t chunk_sealed_flags(const uint8_t *blob);

/* The checksum a sealed chunk carries (not verified): with its address and size it tells a chunk apart
 * from one rewritten at the same address. */
uint32_t chunk_stored_checksum(const uint8_t *blob);

/* Checks the header (magic, version, sizes) and, if asked, the checksum. Reports OTFX_ERR_CORRUPT. */
otfx_status chunk_parse(const uint8_t *blob, size_t size, bool verify_checksum, chunk_info *info);
/* Reads the context into frames[OTFX_MAX_CALL_DEPTH]. */
otfx_status chunk_read_context(const chunk_info *info, call_frame *frames, uint32_t *depth);
otfx_status chunk_read_summary(const chunk_info *info, summary *into);
/* Where compressed payloads are expanded: `raw` receives the payload, `middle` holds a stream between
 * its Huffman and LZ4 stages. */
typedef struct payload_buffers {
    uint8_t *raw, *middle;
    size_t raw_capacity, middle_capacity;
} payload_buffers;

otfx_status payload_buffers_alloc(payload_buffers *buffers, size_t raw_capacity);
void payload_buffers_free(payload_buffers *buffers);

/* Points *raw at the uncompressed payload (tokens, then operands): the stored bytes, or
 * buffers->raw after decompressing into it. */
otfx_status chunk_read_payload(const chunk_info *info, const payload_buffers *buffers, const uint8_t **raw);

/* Statistics of a payload over the window [from, to), walked from a cursor at the payload's start:
 * the piece spans [begin, end] where begin precedes its first event (the end of the previous chunk).
 * Adds to `into`; fills `strippable` (may be NULL) with what `type`/`depth` could remove: a bit per
 * event class in classes, the deepest enter/leave pair level + 1 in max_pair_depth. Needs the
 * definitions for region roles (regions must be defined). */
typedef struct strippable_info {
    uint8_t classes;
    uint32_t max_pair_depth;
} strippable_info;

/* `metrics` (may be NULL) sees every event too (metric_stats.h). */
otfx_status chunk_walk_summary(event_cursor *cursor, const otfx_defs *defs, otfx_time begin, otfx_time end,
                               otfx_time from, otfx_time to, summary *into, strippable_info *strippable,
                               metric_walk *metrics);

/* Parses and decodes a whole chunk (header, context, summary, every event) without definitions; the
 * decoder entry point of the fuzz target and of checks. Never reads outside [blob, blob + size). */
otfx_status chunk_check(const uint8_t *blob, size_t size, bool verify_checksum);

static inline otfx_time time_overlap(otfx_time begin, otfx_time end, otfx_time from, otfx_time to)
{
    otfx_time low = begin > from ? begin : from;
    otfx_time high = end < to ? end : to;
    return high > low ? high - low : 0;
}

#endif

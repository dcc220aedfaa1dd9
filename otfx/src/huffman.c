/* huffman.c — canonical, length-limited Huffman coding of bytes. */
#include "huffman.h"

#include <string.h>

#define SYMBOLS 256

/* Code lengths of an optimal prefix code for the counts (two-queue Huffman construction over the
 * symbols sorted by count), then limited to HUFFMAN_MAX_BITS by lengthening the longest codes that
 * still fit until the Kraft sum is back to one. */
static void code_lengths(const uint32_t counts[SYMBOLS], uint8_t lengths[SYMBOLS])
{
    uint64_t weight[2 * SYMBOLS];
    int parent[2 * SYMBOLS];
    int order[SYMBOLS];
    int used = 0;
    memset(lengths, 0, SYMBOLS);
    for (int s = 0; s < SYMBOLS; s++) {
        if (!counts[s])
            continue;
        /* Insertion sort by count: few symbols, once per chunk. */
        int at = used++;
        while (at > 0 && counts[order[at - 1]] > counts[s]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = s;
    }
    if (used == 0)
        return;
    if (used == 1) {
        lengths[order[0]] = 1;
        return;
    }
    /* Nodes 0..used-1 are the sorted leaves, used.. the inner nodes, created in weight order. */
    for (int i = 0; i < used; i++) {
        weight[i] = counts[order[i]];
        parent[i] = -1;
    }
    int next_leaf = 0, next_inner = used, nodes = used;
    for (int merge = 0; merge < used - 1; merge++) {
        int pick[2];
        for (int k = 0; k < 2; k++) {
            if (next_leaf < used && (next_inner == nodes || weight[next_leaf] <= weight[next_inner]))
                pick[k] = next_leaf++;
            else
                pick[k] = next_inner++;
        }
        weight[nodes] = weight[pick[0]] + weight[pick[1]];
        parent[nodes] = -1;
        parent[pick[0]] = parent[pick[1]] = nodes;
        nodes++;
    }
    int depth_of[2 * SYMBOLS];
    for (int n = nodes - 1; n >= 0; n--)
        depth_of[n] = parent[n] < 0 ? 0 : depth_of[parent[n]] + 1;
    uint32_t kraft = 0; /* in units of 2^-HUFFMAN_MAX_BITS */
    for (int i = 0; i < used; i++) {
        int depth = depth_of[i] > HUFFMAN_MAX_BITS ? HUFFMAN_MAX_BITS : depth_of[i];
        lengths[order[i]] = (uint8_t)depth;
        kraft += 1u << (HUFFMAN_MAX_BITS - depth);
    }
    /* Clipping made the code over-full: lengthen the longest codes below the limit. */
    while (kraft > (1u << HUFFMAN_MAX_BITS)) {
        int victim = -1;
        for (int s = 0; s < SYMBOLS; s++) {
            if (lengths[s] && lengths[s] < HUFFMAN_MAX_BITS && (victim < 0 || lengths[s] > lengths[victim]))
                victim = s;
        }
        kraft -= 1u << (HUFFMAN_MAX_BITS - lengths[victim] - 1);
        lengths[victim]++;
    }
}

/* Canonical codes: by length, then symbol; stored bit-reversed for LSB-first output. The first code of
 * each length from the counts of the shorter ones, then one pass over the symbols (every chunk's
 * streams build their tables with it). */
static void canonical_codes(const uint8_t lengths[SYMBOLS], uint16_t codes[SYMBOLS])
{
    uint16_t count[16] = {0}, next[16]; /* lengths are nibbles, at most HUFFMAN_MAX_BITS here */
    for (int s = 0; s < SYMBOLS; s++)
        count[lengths[s]]++;
    uint16_t code = 0;
    count[0] = 0;
    for (int length = 1; length <= HUFFMAN_MAX_BITS; length++) {
        code = (uint16_t)((code + count[length - 1]) << 1);
        next[length] = code;
    }
    for (int s = 0; s < SYMBOLS; s++) {
        const int length = lengths[s];
        if (!length)
            continue;
        const uint16_t value = next[length]++;
        uint16_t reversed = 0;
        for (int bit = 0; bit < length; bit++)
            reversed |= (uint16_t)(((value >> bit) & 1) << (length - 1 - bit));
        codes[s] = reversed;
    }
}

size_t huffman_encode(const uint8_t *src, size_t size, uint8_t *dst, size_t capacity)
{
    if (size <= HUFFMAN_TABLE_BYTES)
        return 0;
    /* Four count tables break the dependency between neighbouring equal bytes. */
    uint32_t counts[4][SYMBOLS];
    memset(counts, 0, sizeof counts);
    size_t i = 0;
    for (; i + 4 <= size; i += 4) {
        counts[0][src[i]]++;
        counts[1][src[i + 1]]++;
        counts[2][src[i + 2]]++;
        counts[3][src[i + 3]]++;
    }
    for (; i < size; i++)
        counts[0][src[i]]++;
    for (int s = 0; s < SYMBOLS; s++)
        counts[0][s] += counts[1][s] + counts[2][s] + counts[3][s];
    uint8_t lengths[SYMBOLS];
    uint16_t codes[SYMBOLS];
    code_lengths(counts[0], lengths);
    uint64_t bits = 0;
    for (int s = 0; s < SYMBOLS; s++)
        bits += (uint64_t)counts[0][s] * lengths[s];
    size_t total = HUFFMAN_TABLE_BYTES + (size_t)((bits + 7) / 8);
    /* The writer stores 8 bytes at a time, up to 7 beyond the last one it keeps. */
    if (total >= size || total + 8 > capacity)
        return 0;
    for (int k = 0; k < HUFFMAN_TABLE_BYTES; k++)
        dst[k] = (uint8_t)(lengths[2 * k] | lengths[2 * k + 1] << 4);
    canonical_codes(lengths, codes);
    uint8_t *out = dst + HUFFMAN_TABLE_BYTES;
    uint64_t buffer = 0;
    unsigned filled = 0;
    for (i = 0; i < size; i++) {
        buffer |= (uint64_t)codes[src[i]] << filled;
        filled += lengths[src[i]];
        if (filled >= 32) {
            uint8_t word[8];
            for (int b = 0; b < 8; b++)
                word[b] = (uint8_t)(buffer >> (8 * b));
            memcpy(out, word, 8);
            out += 4;
            buffer >>= 32;
            filled -= 32;
        }
    }
    while (filled > 0) {
        *out++ = (uint8_t)buffer;
        buffer >>= 8;
        filled = filled > 8 ? filled - 8 : 0;
    }
    return (size_t)(out - dst);
}

/* Eight bytes, the first in the lowest bits. */
static inline uint64_t load_le64(const uint8_t *in)
{
    uint64_t word;
    memcpy(&word, in, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

typedef struct decode_entry {
    uint8_t symbol;
    uint8_t length; /* 0: no code starts with these bits */
} decode_entry;

/* Two codes at a time where both fit in HUFFMAN_MAX_BITS: the lookup that yields most bytes of operand
 * streams (their codes are short). */
typedef struct pair_entry {
    uint8_t symbols[2];
    uint8_t length; /* of both codes; 0: no code starts with these bits */
    uint8_t count;  /* symbols: 1 or 2 */
} pair_entry;

bool huffman_decode(const uint8_t *src, size_t stored, uint8_t *dst, size_t size)
{
    if (stored < HUFFMAN_TABLE_BYTES)
        return false;
    uint8_t lengths[SYMBOLS];
    uint16_t codes[SYMBOLS];
    uint32_t kraft = 0;
    for (int k = 0; k < HUFFMAN_TABLE_BYTES; k++) {
        lengths[2 * k] = src[k] & 0x0f;
        lengths[2 * k + 1] = src[k] >> 4;
    }
    for (int s = 0; s < SYMBOLS; s++) {
        if (lengths[s] > HUFFMAN_MAX_BITS)
            return false;
        if (lengths[s])
            kraft += 1u << (HUFFMAN_MAX_BITS - lengths[s]);
    }
    if (kraft == 0 || kraft > (1u << HUFFMAN_MAX_BITS))
        return false;
    canonical_codes(lengths, codes);
    decode_entry table[1u << HUFFMAN_MAX_BITS];
    memset(table, 0, sizeof table);
    for (int s = 0; s < SYMBOLS; s++) {
        if (!lengths[s])
            continue;
        for (uint32_t high = 0; high < (1u << (HUFFMAN_MAX_BITS - lengths[s])); high++)
            table[codes[s] | high << lengths[s]] = (decode_entry){(uint8_t)s, lengths[s]};
    }
    const uint32_t mask = (1u << HUFFMAN_MAX_BITS) - 1;
    /* The pair table pays for its build only over a long enough stream. */
    const bool pairs = size >= 4u << HUFFMAN_MAX_BITS;
    pair_entry pair[1u << HUFFMAN_MAX_BITS];
    if (pairs) {
        for (uint32_t bits = 0; bits <= mask; bits++) {
            decode_entry first = table[bits], second = table[bits >> first.length];
            if (first.length && second.length && first.length + second.length <= HUFFMAN_MAX_BITS)
                pair[bits] =
                    (pair_entry){{first.symbol, second.symbol}, (uint8_t)(first.length + second.length), 2};
            else
                pair[bits] = (pair_entry){{first.symbol, 0}, first.length, 1};
        }
    }
    const uint8_t *in = src + HUFFMAN_TABLE_BYTES, *end = src + stored;
    const uint64_t bits_total = (uint64_t)(end - in) * 8;
    uint64_t buffer = 0, bits_used;
    unsigned filled = 0; /* valid bits in buffer, zeros past the input's end count as padding */
    size_t i = 0;
    /* While 8 input bytes remain: one unaligned load tops the buffer up to >= 56 bits, enough for five
     * lookups of at most HUFFMAN_MAX_BITS bits. A pair lookup writes two bytes (the second is
     * overwritten when only one was decoded), so it runs while ten bytes of room remain. */
    if (pairs) {
        while (i + 10 <= size && end - in >= 8) {
            buffer |= load_le64(in) << filled;
            in += (63 - filled) >> 3;
            filled |= 56;
            for (int k = 0; k < 5; k++) {
                pair_entry entry = pair[buffer & mask];
                if (entry.length == 0)
                    return false;
                dst[i] = entry.symbols[0];
                dst[i + 1] = entry.symbols[1];
                i += entry.count;
                buffer >>= entry.length;
                filled -= entry.length;
            }
        }
    }
    while (i + 5 <= size && end - in >= 8) {
        buffer |= load_le64(in) << filled;
        in += (63 - filled) >> 3;
        filled |= 56;
        for (int k = 0; k < 5; k++) {
            decode_entry entry = table[buffer & mask];
            if (entry.length == 0)
                return false;
            dst[i++] = entry.symbol;
            buffer >>= entry.length;
            filled -= entry.length;
        }
    }
    /* The loops above count the bits they took in `in` and `filled` alone: each byte they moved past
     * came into the buffer whole. */
    bits_used = (uint64_t)(in - (src + HUFFMAN_TABLE_BYTES)) * 8 - filled;
    for (; i < size; i++) {
        while (filled <= 56 && in < end) {
            buffer |= (uint64_t)*in++ << filled;
            filled += 8;
        }
        decode_entry entry = table[buffer & mask];
        if (entry.length == 0)
            return false;
        dst[i] = entry.symbol;
        buffer >>= entry.length;
        filled = filled > entry.length ? filled - entry.length : 0;
        bits_used += entry.length;
    }
    /* Codes may not run past the input, and what remains must be the final byte's padding. */
    return bits_used <= bits_total && bits_total - bits_used < 8;
}

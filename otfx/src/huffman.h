/* huffman.h — a canonical Huffman coder for byte streams (private).
 *
 * LZ4 finds repeats but stores what it cannot match byte for byte; event operands (time deltas) are
 * mostly such noise with a skewed byte distribution, which an entropy coder shrinks by a further
 * third. Codes are at most HUFFMAN_MAX_BITS long so the decoder needs one table lookup per byte (on a
 * long stream one per two bytes where both codes fit in HUFFMAN_MAX_BITS together).
 * Layout: 128 bytes of 4-bit code lengths (symbol 2k in the low nibble of byte k, 0 = unused), then
 * the codes, least significant bit first. */
#ifndef OTFX_HUFFMAN_H
#define OTFX_HUFFMAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HUFFMAN_MAX_BITS    11
#define HUFFMAN_TABLE_BYTES 128

/* Encodes src[0 .. size) into dst (room for `capacity` bytes); returns the bytes written, or 0 when
 * the result would not be smaller than the input (then nothing useful is in dst). */
size_t huffman_encode(const uint8_t *src, size_t size, uint8_t *dst, size_t capacity);

/* Decodes exactly `size` bytes into dst from src[0 .. stored). False on malformed input; never reads
 * or writes out of bounds. */
bool huffman_decode(const uint8_t *src, size_t stored, uint8_t *dst, size_t size);

#endif

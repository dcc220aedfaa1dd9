/* fuzz_decoder.c — arbitrary bytes into the chunk decoder (header, context, summary, LZ4 and
 * Huffman stages, events) with and without the checksum, and into the Huffman decoder alone. The
 * decoder must reject what is malformed without reading or writing out of bounds. Seeds: real sealed
 * chunks (tests/otfx/corpus/decoder, written by test_codec with OTFX_WRITE_DECODER_CORPUS). */
#include "chunk.h"
#include "huffman.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A checksum a fuzzer rarely matches guards the first call; the second decodes regardless. */
    (void)chunk_check(data, size, true);
    (void)chunk_check(data, size, false);
    if (size >= 2) {
        size_t decoded_size = (size_t)(data[0] | data[1] << 8) % 8192;
        uint8_t *decoded = malloc(decoded_size ? decoded_size : 1);
        if (decoded) {
            (void)huffman_decode(data + 2, size - 2, decoded, decoded_size);
            free(decoded);
        }
    }
    return 0;
}

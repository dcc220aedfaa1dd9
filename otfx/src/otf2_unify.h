/* otf2_unify.h — definitions of several otfx_defs stores as bytes, and their union: what the processes
 * of a shared OTF2 export (otfx_otf2_export_shared) send each other. Private to libotfx.
 *
 * Each process writes the definitions its events may refer to (regions with their role, communicators
 * with their members, metrics) with otfx_otf2_defs_write; every process reads every process's bytes
 * in process order and defines them in a fresh store with otfx_otf2_defs_merge. Definitions are
 * idempotent by what they are (a region by name and role, a communicator by name and members, a
 * metric by name, unit and type), so the union holds each once, in the order first met, and the map
 * of a process says which union reference each of its own references became. */
#ifndef OTFX_OTF2_UNIFY_H
#define OTFX_OTF2_UNIFY_H

#include <otfx/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer; a failed allocation is remembered and reported by the caller. */
typedef struct otfx_bytes {
    unsigned char *data;
    size_t size, capacity;
    bool out_of_memory;
} otfx_bytes;

void otfx_bytes_u32(otfx_bytes *bytes, uint32_t value);
void otfx_bytes_u64(otfx_bytes *bytes, uint64_t value);
/* Length, the text, and a NUL (so a reader can hand out pointers into the bytes). */
void otfx_bytes_text(otfx_bytes *bytes, const char *text);
void otfx_bytes_free(otfx_bytes *bytes);

/* Reads what otfx_bytes wrote; anything short or malformed sets `bad` and yields zeros / "". */
typedef struct otfx_byte_reader {
    const unsigned char *at;
    size_t left;
    bool bad;
} otfx_byte_reader;

uint32_t otfx_read_u32(otfx_byte_reader *reader);
uint64_t otfx_read_u64(otfx_byte_reader *reader);
const char *otfx_read_text(otfx_byte_reader *reader);

/* The store's regions, communicators and metrics as they are now (a live store only grows: the
 * references events already used are all included). */
otfx_status otfx_otf2_defs_write(otfx_defs *defs, otfx_bytes *out);

/* One process's references → the union's. */
typedef struct otfx_otf2_def_map {
    otfx_ref *regions, *comms, *metrics;
    uint32_t region_count, comm_count, metric_count;
} otfx_otf2_def_map;

/* Defines what otfx_otf2_defs_write wrote in `into`; fills *map (when not NULL; free it with
 * otfx_otf2_def_map_free). OTFX_ERR_CORRUPT when the bytes are malformed. */
otfx_status otfx_otf2_defs_merge(otfx_byte_reader *in, otfx_defs *into, otfx_otf2_def_map *map);
void otfx_otf2_def_map_free(otfx_otf2_def_map *map);
/* Whether every reference of the map stays what it was. */
bool otfx_otf2_def_map_is_identity(const otfx_otf2_def_map *map);

#endif

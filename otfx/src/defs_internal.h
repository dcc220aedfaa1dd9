/* defs_internal.h — the definition store's layout, for lock-free lookups on the append path (private).
 *
 * Definitions are appended under the store's mutex and never removed or moved, so a reader may look a
 * published definition up without the lock: elements live in blocks that never move (block k holds
 * STABLE_FIRST_BLOCK << k elements), and the element count is published with a release store after the
 * element is written. A reader that loads the count with acquire may then read every element below it.
 */
#ifndef OTFX_DEFS_INTERNAL_H
#define OTFX_DEFS_INTERNAL_H

#include "otfx/trace.h"

#include <pthread.h>
#include <stdatomic.h>

#define STABLE_FIRST_BLOCK_BITS 5
#define STABLE_FIRST_BLOCK      (1u << STABLE_FIRST_BLOCK_BITS)
/* 32 * (2^27 - 1) elements exceed the 2^32 - 1 references an otfx_ref can name. */
#define STABLE_MAX_BLOCKS 27

typedef struct stable_array {
    void *blocks[STABLE_MAX_BLOCKS];
    atomic_uint_least32_t count;
    uint32_t element_size;
} stable_array;

static inline void *stable_array_at(const stable_array *array, uint32_t index)
{
    uint64_t shifted = (uint64_t)index + STABLE_FIRST_BLOCK;
    unsigned block = 63u - (unsigned)__builtin_clzll(shifted) - STABLE_FIRST_BLOCK_BITS;
    uint64_t offset = shifted - ((uint64_t)STABLE_FIRST_BLOCK << block);
    return (char *)array->blocks[block] + offset * array->element_size;
}

static inline uint32_t stable_array_count(const stable_array *array)
{
    return atomic_load_explicit(&array->count, memory_order_acquire);
}

/* Open-addressing index from a definition's content to its reference, for idempotent defines. */
typedef struct defs_index {
    uint32_t *refs; /* OTFX_REF_NONE = empty slot */
    uint64_t *hashes;
    uint32_t capacity; /* a power of two */
} defs_index;

typedef struct stored_region {
    otfx_region_def def;
    otfx_ref name_string;
} stored_region;

struct otfx_defs {
    pthread_mutex_t mutex;  /* serialises defines; lookups need no lock */
    stable_array strings;   /* const char * */
    stable_array regions;   /* stored_region */
    stable_array locations; /* otfx_location_def */
    stable_array comms;     /* otfx_comm_def */
    stable_array metrics;   /* otfx_metric_def */
    defs_index string_index, region_index, location_index, comm_index, metric_index;
    atomic_size_t bytes;
};

/* Role of a region known to exist (ref < otfx_defs_count_regions()). */
static inline otfx_region_role defs_region_role(const otfx_defs *defs, otfx_ref region)
{
    return ((const stored_region *)stable_array_at(&defs->regions, region))->def.role;
}

/* Role of a region that may be unknown (only in damaged data): unknown ones count as user functions
 * rather than reading out of bounds. */
static inline otfx_region_role defs_region_role_or_user(const otfx_defs *defs, otfx_ref region)
{
    if (region < stable_array_count(&defs->regions))
        return defs_region_role(defs, region);
    return OTFX_ROLE_USER_FUNCTION;
}

#endif

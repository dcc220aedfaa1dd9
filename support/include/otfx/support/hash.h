/* hash.h — an open-addressing index of a caller's array (header only, target otfx_support).
 *
 * The caller keeps its items in its own array (growth.h) and an otfx_hash_index of their positions:
 * linear probing over a power-of-two table of `size_t` slots (position + 1, 0 free), at most half full.
 * The index holds no keys: the caller says which item has the key looked for (`same`) and, when the
 * table grows, what an item's hash is (`hash_of`). `items` is passed through to both untouched.
 *
 *   static bool same_point(const void *items, size_t item, const void *key)
 *   { const point *p = &((const point *)items)[item], *k = key; return p->x == k->x && p->y == k->y; }
 *   static uint64_t point_hash_of(const void *items, size_t item) { return hash_point(&((const point
 * *)items)[item]); }
 *
 *   size_t at = otfx_hash_find(&index, hash_point(&key), same_point, points, &key);
 *   if (at == OTFX_HASH_NONE) {
 *       if (!otfx_reserve((void **)&points, &capacity, count + 1, sizeof *points, 64) ||
 *           !otfx_hash_insert(&index, hash_point(&key), count, point_hash_of, points))
 *           return out_of_memory();
 *       points[at = count++] = key;
 *   }
 *
 * Items are never removed (the users build a table, use it, free it). otfx_hash_mix spreads a 64-bit key
 * over all 64 bits (the MurmurHash3 finaliser), so keys built from small fields probe well; combine
 * fields with otfx_hash_mix(otfx_hash_mix(a) ^ b). Static inline: no shared library exports these. */
#ifndef OTFX_SUPPORT_HASH_H
#define OTFX_SUPPORT_HASH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define OTFX_HASH_NONE        SIZE_MAX
#define OTFX_HASH_FIRST_SLOTS 64

typedef struct otfx_hash_index {
    size_t *slots;     /* an item's position + 1; 0 free */
    size_t slot_count; /* a power of two, or 0 before the first insert */
    size_t count;      /* items indexed */
} otfx_hash_index;

typedef bool otfx_hash_same(const void *items, size_t item, const void *key);
typedef uint64_t otfx_hash_of(const void *items, size_t item);

static inline uint64_t otfx_hash_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* The slot where `hash` probing starts, then the next one. */
static inline size_t otfx_hash_first_slot(const otfx_hash_index *index, uint64_t hash)
{
    return (size_t)hash & (index->slot_count - 1);
}

static inline size_t otfx_hash_next_slot(const otfx_hash_index *index, size_t slot)
{
    return (slot + 1) & (index->slot_count - 1);
}

/* The position of the item with `key` (`same` decides), OTFX_HASH_NONE when none is indexed. */
static inline size_t otfx_hash_find(const otfx_hash_index *index, uint64_t hash, otfx_hash_same *same,
                                    const void *items, const void *key)
{
    if (!index->slot_count)
        return OTFX_HASH_NONE;
    for (size_t slot = otfx_hash_first_slot(index, hash); index->slots[slot];
         slot = otfx_hash_next_slot(index, slot))
        if (same(items, index->slots[slot] - 1, key))
            return index->slots[slot] - 1;
    return OTFX_HASH_NONE;
}

/* Puts `item` in the first free slot of its probe sequence (room known). */
static inline void otfx_hash_place(otfx_hash_index *index, uint64_t hash, size_t item)
{
    size_t slot = otfx_hash_first_slot(index, hash);
    while (index->slots[slot])
        slot = otfx_hash_next_slot(index, slot);
    index->slots[slot] = item + 1;
}

/* A table of `slot_count` slots (a power of two, more than twice the items) holding the same items;
 * false (the index unchanged) when out of memory. */
static inline bool otfx_hash_rehash(otfx_hash_index *index, size_t slot_count, otfx_hash_of *hash_of,
                                    const void *items)
{
    if (slot_count / 2 < index->count + 1 || (slot_count & (slot_count - 1)))
        return false;
    otfx_hash_index grown = {calloc(slot_count, sizeof(size_t)), slot_count, index->count};
    if (!grown.slots)
        return false;
    for (size_t slot = 0; slot < index->slot_count; slot++)
        if (index->slots[slot])
            otfx_hash_place(&grown, hash_of(items, index->slots[slot] - 1), index->slots[slot] - 1);
    free(index->slots);
    *index = grown;
    return true;
}

/* Indexes `item` (not indexed yet) under `hash`; the table doubles (from OTFX_HASH_FIRST_SLOTS) before it
 * would be more than half full. False (the index unchanged) when out of memory. */
static inline bool otfx_hash_insert(otfx_hash_index *index, uint64_t hash, size_t item, otfx_hash_of *hash_of,
                                    const void *items)
{
    if ((index->count + 1) > index->slot_count / 2) {
        size_t slot_count = index->slot_count ? index->slot_count : OTFX_HASH_FIRST_SLOTS / 2;
        do {
            if (slot_count > SIZE_MAX / 2 / sizeof(size_t))
                return false;
            slot_count *= 2;
        } while (index->count + 1 > slot_count / 2);
        if (!otfx_hash_rehash(index, slot_count, hash_of, items))
            return false;
    }
    otfx_hash_place(index, hash, item);
    index->count++;
    return true;
}

static inline void otfx_hash_free(otfx_hash_index *index)
{
    free(index->slots);
    *index = (otfx_hash_index){0};
}

#endif

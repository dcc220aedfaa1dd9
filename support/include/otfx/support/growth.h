/* growth.h — heap arrays that grow by doubling (header only, target otfx_support; support/README.md).
 *
 *   if (!otfx_reserve((void **)&items, &capacity, count + 1, sizeof *items, 64))
 *       return out_of_memory();
 *   items[count++] = item;
 *
 * Makes room for `needed` items: the capacity doubles from `first` until it holds them; the items keep
 * their place and value, new room is uninitialised. False (nothing changed) when the allocation fails
 * or the size overflows. otfx_reserve_u32 is the same for compact structures that keep their capacity
 * in 32 bits: the capacity never passes UINT32_MAX. otfx_grow_to is the general form: the capacity never
 * passes `limit` (the last step stops at it), and it fails when `needed` does.
 *
 * Static inline: every component compiles its own copy, so no shared library exports these. */
#ifndef OTFX_SUPPORT_GROWTH_H
#define OTFX_SUPPORT_GROWTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity that holds `needed` items: `capacity` (`first` when 0) doubled as often as needed but at
 * most `limit`, and its allocation; false when `needed` passes `limit` or the bytes SIZE_MAX. */
static inline bool otfx_grow_to(void **items, size_t capacity, size_t needed, size_t item_size, size_t first,
                                size_t limit, size_t *grown_capacity)
{
    if (needed > limit || item_size == 0)
        return false;
    size_t grown = capacity ? capacity : first ? first : 1;
    if (grown > limit)
        grown = limit;
    while (grown < needed)
        grown = grown > limit / 2 ? limit : grown * 2;
    if (grown > SIZE_MAX / item_size)
        return false;
    void *moved = realloc(*items, grown * item_size);
    if (!moved)
        return false;
    *items = moved;
    *grown_capacity = grown;
    return true;
}

static inline bool otfx_reserve(void **items, size_t *capacity, size_t needed, size_t item_size, size_t first)
{
    if (needed <= *capacity)
        return true;
    return otfx_grow_to(items, *capacity, needed, item_size, first, SIZE_MAX, capacity);
}

static inline bool otfx_reserve_u32(void **items, uint32_t *capacity, size_t needed, size_t item_size,
                                    uint32_t first)
{
    if (needed <= *capacity)
        return true;
    size_t grown;
    if (!otfx_grow_to(items, *capacity, needed, item_size, first, UINT32_MAX, &grown))
        return false;
    *capacity = (uint32_t)grown;
    return true;
}

#endif

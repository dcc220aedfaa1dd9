/* growth.h — heap arrays that grow by doubling (private to libotfx).
 *
 *   if (!otfx_reserve((void **)&items, &capacity, count + 1, sizeof *items, 64))
 *       return out_of_memory();
 *   items[count++] = item;
 *
 * Makes room for `needed` items: the capacity doubles from `first` until it holds them; the items keep
 * their place and value, new room is uninitialised. False (nothing changed) when the allocation fails
 * or the size overflows. otfx_reserve_u32 is the same for compact structures that keep their capacity
 * in 32 bits; it also fails when the capacity would pass UINT32_MAX. */
#ifndef OTFX_GROWTH_H
#define OTFX_GROWTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity that holds `needed` items: `capacity` (`first` when 0) doubled as often as needed, and
 * its allocation; false when the capacity would pass `limit` or the bytes SIZE_MAX. */
static inline bool otfx_grow_to(void **items, size_t capacity, size_t needed, size_t item_size, size_t first,
                                size_t limit, size_t *grown_capacity)
{
    size_t grown = capacity ? capacity : first;
    while (grown < needed) {
        if (grown > limit / 2)
            return false;
        grown *= 2;
    }
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

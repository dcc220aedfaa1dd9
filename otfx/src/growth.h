/* growth.h — heap arrays that grow by doubling (private to libotfx).
 *
 *   if (!otfx_reserve((void **)&items, &capacity, count + 1, sizeof *items, 64))
 *       return out_of_memory();
 *   items[count++] = item;
 *
 * Makes room for `needed` items: the capacity doubles from `first` until it holds them; the items keep
 * their place and value. False (nothing changed) when the allocation fails or the size overflows. */
#ifndef OTFX_GROWTH_H
#define OTFX_GROWTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static inline bool otfx_reserve(void **items, size_t *capacity, size_t needed, size_t item_size, size_t first)
{
    if (needed <= *capacity)
        return true;
    size_t grown = *capacity ? *capacity : first;
    while (grown < needed) {
        if (grown > SIZE_MAX / 2)
            return false;
        grown *= 2;
    }
    if (grown > SIZE_MAX / item_size)
        return false;
    void *moved = realloc(*items, grown * item_size);
    if (!moved)
        return false;
    *items = moved;
    *capacity = grown;
    return true;
}

#endif

/*
 * layout.c — the tool tree's shape (see otfx/tbon.h).
 */
#include <otfx/tbon.h>

#include <stdio.h>
#include <string.h>

#define MAX_LEVELS 32u

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
    return (uint32_t)(((uint64_t)a + b - 1) / b);
}

/* Inner nodes a tree over `leaves` needs; fills the level sizes when `sizes` is given. */
static uint32_t inner_nodes(uint32_t leaves, uint32_t fanin, uint32_t *sizes, uint32_t *levels)
{
    uint32_t total = 0, count = 0, width = leaves;
    if (leaves <= 1) {
        if (levels)
            *levels = 0;
        return 0;
    }
    do {
        width = ceil_div(width, fanin);
        if (sizes && count < MAX_LEVELS)
            sizes[count] = width;
        count++;
        total += width;
    } while (width > 1);
    if (levels)
        *levels = count;
    return total;
}

/* Node k of a level of `size` nodes, whose parent level has `parents` nodes: blocks are balanced,
 * parent j takes children floor(j*size/parents) … floor((j+1)*size/parents) - 1. */
static uint32_t block_first(uint32_t j, uint32_t size, uint32_t parents)
{
    return (uint32_t)((uint64_t)j * size / parents);
}

static uint32_t block_owner(uint32_t k, uint32_t size, uint32_t parents)
{
    /* The largest j with block_first(j) <= k. */
    return (uint32_t)(((uint64_t)(k + 1) * parents + size - 1) / size) - 1;
}

bool otfx_tbon_layout_init(otfx_tbon_layout *layout, uint32_t app_ranks, uint32_t places, uint32_t fanin,
                           char *error, size_t error_size)
{
    memset(layout, 0, sizeof(*layout));
    if (app_ranks == 0 || places == 0) {
        snprintf(error, error_size, "a tree needs at least one application rank and one place");
        return false;
    }
    if (fanin < 2) {
        snprintf(error, error_size, "the fan-in must be at least 2, not %u", fanin);
        return false;
    }
    layout->app_ranks = app_ranks;
    layout->places = places;
    layout->fanin = fanin;
    if (places == 1) {
        layout->event_places = 1;
        return true;
    }
    uint32_t leaves = 1;
    for (uint32_t e = 2; e < places; e++) {
        uint32_t inner = inner_nodes(e, fanin, NULL, NULL);
        if (e + inner > places)
            break;
        leaves = e;
    }
    uint32_t sizes[MAX_LEVELS] = {0}, levels = 0;
    uint32_t inner = inner_nodes(leaves, fanin, sizes, &levels);
    if (inner == 0) { /* one leaf under an analysis root */
        sizes[0] = 1;
        levels = 1;
        inner = 1;
    }
    if (levels > MAX_LEVELS) {
        snprintf(error, error_size, "a tree of %u places with fan-in %u is deeper than %u levels", places,
                 fanin, MAX_LEVELS);
        return false;
    }
    const uint32_t event_places = places - inner; /* the leftover places become leaves too */
    if (event_places > app_ranks) {
        snprintf(error, error_size,
                 "%u places make %u event places, more than the %u application ranks they would serve; "
                 "use fewer places",
                 places, event_places, app_ranks);
        return false;
    }
    layout->event_places = event_places;
    layout->levels = levels;
    uint32_t start = event_places;
    for (uint32_t level = 1; level <= levels; level++) {
        layout->level_start[level] = start;
        layout->level_size[level] = sizes[level - 1];
        start += sizes[level - 1];
    }
    return true;
}

/* Level of a place (0 = leaves) and its index within the level. */
static void locate(const otfx_tbon_layout *layout, uint32_t place, uint32_t *level, uint32_t *index)
{
    *level = 0;
    *index = place;
    for (uint32_t l = 1; l <= layout->levels; l++) {
        if (place >= layout->level_start[l] && place < layout->level_start[l] + layout->level_size[l]) {
            *level = l;
            *index = place - layout->level_start[l];
        }
    }
}

static uint32_t level_width(const otfx_tbon_layout *layout, uint32_t level)
{
    return level == 0 ? layout->event_places : layout->level_size[level];
}

uint32_t otfx_tbon_parent(const otfx_tbon_layout *layout, uint32_t place)
{
    if (place >= layout->places || place == otfx_tbon_root(layout))
        return OTFX_TBON_NO_PARENT;
    uint32_t level, index;
    locate(layout, place, &level, &index);
    const uint32_t parents = layout->level_size[level + 1];
    return layout->level_start[level + 1] + block_owner(index, level_width(layout, level), parents);
}

uint32_t otfx_tbon_children(const otfx_tbon_layout *layout, uint32_t place, uint32_t *children,
                            uint32_t capacity)
{
    uint32_t level, index;
    if (place >= layout->places)
        return 0;
    locate(layout, place, &level, &index);
    if (level == 0)
        return 0;
    const uint32_t below = level_width(layout, level - 1), parents = layout->level_size[level];
    const uint32_t first = block_first(index, below, parents), end = block_first(index + 1, below, parents);
    const uint32_t base = level == 1 ? 0 : layout->level_start[level - 1];
    for (uint32_t k = first; k < end && k - first < capacity; k++)
        children[k - first] = base + k;
    return end - first;
}

uint32_t otfx_tbon_place_of_rank(const otfx_tbon_layout *layout, uint32_t app_rank)
{
    return block_owner(app_rank, layout->app_ranks, layout->event_places);
}

void otfx_tbon_served(const otfx_tbon_layout *layout, uint32_t place, uint32_t *first, uint32_t *count)
{
    if (place >= layout->event_places) {
        *first = 0;
        *count = 0;
        return;
    }
    *first = block_first(place, layout->app_ranks, layout->event_places);
    *count = block_first(place + 1, layout->app_ranks, layout->event_places) - *first;
}

uint32_t otfx_tbon_leaves_below(const otfx_tbon_layout *layout, uint32_t place)
{
    uint32_t level, index;
    if (place >= layout->places)
        return 0;
    locate(layout, place, &level, &index);
    uint32_t first = index, end = index + 1;
    while (level > 0) { /* widen the block down to the leaves */
        const uint32_t below = level_width(layout, level - 1), parents = layout->level_size[level];
        first = block_first(first, below, parents);
        end = block_first(end, below, parents);
        level--;
    }
    return end - first;
}

otfx_place_role otfx_tbon_role(const otfx_tbon_layout *layout, uint32_t place)
{
    if (!layout)
        return OTFX_PLACE_STANDALONE;
    const bool event = otfx_tbon_is_event_place(layout, place), root = place == otfx_tbon_root(layout);
    if (root)
        return event ? OTFX_PLACE_ROOT_LEAF : OTFX_PLACE_ROOT;
    return event ? OTFX_PLACE_LEAF : OTFX_PLACE_INNER;
}

void otfx_tbon_describe(const otfx_tbon_layout *layout, char *out, size_t size)
{
    size_t used = 0;
    if (size)
        out[0] = '\0';
    for (uint32_t place = 0; place < layout->places && used < size; place++) {
        const bool root = place == otfx_tbon_root(layout);
        int n;
        if (otfx_tbon_is_event_place(layout, place)) {
            uint32_t first, count;
            otfx_tbon_served(layout, place, &first, &count);
            n = snprintf(out + used, size - used, "place %u (%sevent): ranks %u-%u\n", place,
                         root ? "root, " : "", first, first + count - 1);
        } else {
            uint32_t children[4096];
            const uint32_t count = otfx_tbon_children(layout, place, children, 4096);
            n = snprintf(out + used, size - used, "place %u (%sanalysis): children", place,
                         root ? "root, " : "");
            for (uint32_t c = 0; c < count && c < 4096 && n >= 0 && used + (size_t)n < size; c++)
                n += snprintf(out + used + n, size - used - (size_t)n, " %u", children[c]);
            if (n >= 0 && used + (size_t)n < size)
                n += snprintf(out + used + n, size - used - (size_t)n, "\n");
        }
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

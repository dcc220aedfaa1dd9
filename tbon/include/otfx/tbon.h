/*
 * otfx/tbon.h — the shape of the tool tree (library otfx_tbon_layout: pure arithmetic, no MPI).
 *
 * A job runs N application ranks (world ranks 0 … N-1) and P tool places (world ranks N … N+P-1,
 * place index 0 … P-1). Places 0 … E-1 are event places, the leaves: each serves a contiguous block of
 * application ranks. Places E … P-1 are analysis places, the inner nodes, built level by level with at
 * most `fanin` children each (the last level may take the few leftover leaves above it); the last
 * place, P-1, is the root. With P = 1 the single place is leaf and root.
 *
 * E is the largest number of leaves whose inner levels fit into the remaining places:
 *   inner(E) = 0 if E = 1, else L1 + L2 + … + Lk with L1 = ceil(E / fanin), L(i+1) = ceil(Li / fanin),
 *   Lk = 1; with P ≥ 2 the root is always an analysis place (inner(E) ≥ 1).
 * Places left over when one more leaf would not fit become extra leaves; every level's blocks are
 * balanced (node j of a level of n nodes over m below takes floor(j*m/n) … floor((j+1)*m/n) - 1), and
 * so are the application ranks over the event places.
 * Example, N = 64, P = 6, fanin 4: 4 leaves need 1 inner node (5 places); 5 leaves would need
 * 2 + 1 = 3 (8 places), so E = 4 + 1 spare = 5 event places (ranks 0-11, 12-24, 25-37, 38-50, 51-63)
 * under root 5 (5 children: the fan-in is exceeded by the spare).
 */
#ifndef OTFX_TBON_H
#define OTFX_TBON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTFX_TBON_DEFAULT_FANIN 16u
#define OTFX_TBON_NO_PARENT     UINT32_MAX

typedef struct otfx_tbon_layout {
    uint32_t app_ranks; /* N */
    uint32_t places;    /* P */
    uint32_t fanin;
    uint32_t event_places;    /* E: places 0 … E-1 */
    uint32_t levels;          /* inner levels (0 when P = 1) */
    uint32_t level_start[33]; /* place index of the first node of inner level 1 … levels (index 0 unused) */
    uint32_t level_size[33];
} otfx_tbon_layout;

/* Computes the layout. Returns false and says why (no place, more places than ranks + a tree needs,
 * fan-in < 2, …) in `error`. */
bool otfx_tbon_layout_init(otfx_tbon_layout *layout, uint32_t app_ranks, uint32_t places, uint32_t fanin,
                           char *error, size_t error_size);

static inline bool otfx_tbon_is_event_place(const otfx_tbon_layout *layout, uint32_t place)
{
    return place < layout->event_places;
}
static inline uint32_t otfx_tbon_root(const otfx_tbon_layout *layout)
{
    return layout->places - 1;
}
/* The parent's place index, OTFX_TBON_NO_PARENT for the root. */
uint32_t otfx_tbon_parent(const otfx_tbon_layout *layout, uint32_t place);
/* Children of a place (none for a leaf, unless it is also the root: still none). Writes at most
 * `capacity` and returns how many there are. */
uint32_t otfx_tbon_children(const otfx_tbon_layout *layout, uint32_t place, uint32_t *children,
                            uint32_t capacity);
/* The event place serving an application rank. */
uint32_t otfx_tbon_place_of_rank(const otfx_tbon_layout *layout, uint32_t app_rank);
/* The application ranks an event place serves: first … first + count - 1 (count 0 for inner nodes). */
void otfx_tbon_served(const otfx_tbon_layout *layout, uint32_t place, uint32_t *first, uint32_t *count);
/* Event places in the subtree of `place` (for "answered k of n"). */
uint32_t otfx_tbon_leaves_below(const otfx_tbon_layout *layout, uint32_t place);
/* A place's role in the tree. A standalone place (no tree: one event place without a layout) serves its
 * ranks and answers its own requests; with P = 1 the single place is root and leaf. */
typedef enum otfx_place_role {
    OTFX_PLACE_STANDALONE = 0,
    OTFX_PLACE_LEAF,      /* an event place under a parent */
    OTFX_PLACE_INNER,     /* an analysis place under a parent */
    OTFX_PLACE_ROOT,      /* the analysis place at the top (P >= 2) */
    OTFX_PLACE_ROOT_LEAF, /* the only place (P = 1): the root serving every rank */
} otfx_place_role;

/* The role of `place` (OTFX_PLACE_STANDALONE when `layout` is NULL). */
otfx_place_role otfx_tbon_role(const otfx_tbon_layout *layout, uint32_t place);
/* Whether a place of `role` serves application ranks (has an own part of queries and commands). */
static inline bool otfx_role_serves_ranks(otfx_place_role role)
{
    return role == OTFX_PLACE_STANDALONE || role == OTFX_PLACE_LEAF || role == OTFX_PLACE_ROOT_LEAF;
}
/* Whether a place of `role` has a parent in the tree (answers go up to it). */
static inline bool otfx_role_has_parent(otfx_place_role role)
{
    return role == OTFX_PLACE_LEAF || role == OTFX_PLACE_INNER;
}
/* Whether a place of `role` is the tree's root (serves clients, ends the job). */
static inline bool otfx_role_is_root(otfx_place_role role)
{
    return role == OTFX_PLACE_ROOT || role == OTFX_PLACE_ROOT_LEAF;
}
/* "place 5 (root, analysis): children 0 1 2 3 4" — one line per place into `out`. */
void otfx_tbon_describe(const otfx_tbon_layout *layout, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif

/*
 * user_symbols.c — names of user functions from their run-time addresses (see event_place_internal.h).
 *
 * Each served rank has its own load map (load biases differ between processes) and its own libdwfl
 * session: the objects are reported offline at their bias, and dwfl_module_addrname reads their
 * symbol tables (.symtab, else .dynsym). An address → region cache makes the lookup once per
 * function and rank. An address no symbol covers becomes the region "0x<offset>@<object file name>"
 * (the offset from the object's start, the same on every rank), one outside every object
 * "0x<address>@?".
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* strdup */
#endif
#include "event_place_internal.h"

#include <otfx/support/growth.h>

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct symbol_slot {
    uint64_t address; /* 0: empty (no function lives at address 0) */
    otfx_ref region;
};

struct place_symbols {
    Dwfl *dwfl;
    bool dwfl_stale; /* objects were added since the session was built */
    struct place_object {
        char *path;
        uint64_t base;
    } * objects;
    size_t object_count, object_capacity;
    struct symbol_slot *slots;
    size_t slot_count, slot_used; /* slot_count is a power of two */
};

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

void place_symbols_destroy(struct place_symbols *symbols)
{
    if (!symbols)
        return;
    if (symbols->dwfl)
        dwfl_end(symbols->dwfl);
    for (size_t i = 0; i < symbols->object_count; i++)
        free(symbols->objects[i].path);
    free(symbols->objects);
    free(symbols->slots);
    free(symbols);
}

static void clear_cache(struct place_symbols *symbols)
{
    if (symbols->slots)
        memset(symbols->slots, 0, symbols->slot_count * sizeof(*symbols->slots));
    symbols->slot_used = 0;
}

bool place_symbols_add_object(struct place_symbols **symbols_p, const char *path, uint64_t base)
{
    if (!*symbols_p) {
        *symbols_p = calloc(1, sizeof(**symbols_p));
        if (!*symbols_p)
            return false;
    }
    struct place_symbols *symbols = *symbols_p;
    for (size_t i = 0; i < symbols->object_count; i++)
        if (symbols->objects[i].base == base && strcmp(symbols->objects[i].path, path) == 0)
            return true; /* sent again: nothing new */
    if (!otfx_reserve((void **)&symbols->objects, &symbols->object_capacity, symbols->object_count + 1,
                      sizeof(*symbols->objects), 32))
        return false;
    char *copy = strdup(path);
    if (!copy)
        return false;
    symbols->objects[symbols->object_count].path = copy;
    symbols->objects[symbols->object_count].base = base;
    symbols->object_count++;
    symbols->dwfl_stale = true;
    clear_cache(symbols); /* addresses outside the old map may lie in the new object */
    return true;
}

static void build_session(struct place_symbols *symbols)
{
    if (symbols->dwfl)
        dwfl_end(symbols->dwfl);
    symbols->dwfl = dwfl_begin(&offline_callbacks);
    symbols->dwfl_stale = false;
    if (!symbols->dwfl)
        return;
    dwfl_report_begin(symbols->dwfl);
    for (size_t i = 0; i < symbols->object_count; i++) {
        const char *path = symbols->objects[i].path;
        const char *slash = strrchr(path, '/');
        /* A file that cannot be read leaves its functions unnamed (0x…@object), nothing worse. */
        (void)dwfl_report_elf(symbols->dwfl, slash ? slash + 1 : path, path, -1, symbols->objects[i].base,
                              true);
    }
    dwfl_report_end(symbols->dwfl, NULL, NULL);
}

/* The name of the function at `address`, written to `name`. */
static void resolve(struct place_symbols *symbols, uint64_t address, char *name, size_t size)
{
    if (symbols->dwfl_stale || !symbols->dwfl)
        build_session(symbols);
    Dwfl_Module *module = symbols->dwfl ? dwfl_addrmodule(symbols->dwfl, address) : NULL;
    if (module) {
        const char *symbol = dwfl_module_addrname(module, address);
        if (symbol && symbol[0]) {
            snprintf(name, size, "%s", symbol);
            return;
        }
    }
    if (module) {
        Dwarf_Addr start = 0;
        const char *module_name = dwfl_module_info(module, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        snprintf(name, size, "0x%llx@%s", (unsigned long long)(address - start),
                 module_name ? module_name : "?");
        return;
    }
    /* Outside every object the rank announced (loaded after its last load map). */
    snprintf(name, size, "0x%llx@?", (unsigned long long)address);
}

static bool grow_cache(struct place_symbols *symbols)
{
    size_t count = symbols->slot_count ? 2 * symbols->slot_count : 256;
    struct symbol_slot *slots = calloc(count, sizeof(*slots));
    if (!slots)
        return false;
    for (size_t i = 0; i < symbols->slot_count; i++) {
        const struct symbol_slot *old = &symbols->slots[i];
        if (!old->address)
            continue;
        size_t j = (size_t)(old->address * 0x9e3779b97f4a7c15ull >> 20) & (count - 1);
        while (slots[j].address)
            j = (j + 1) & (count - 1);
        slots[j] = *old;
    }
    free(symbols->slots);
    symbols->slots = slots;
    symbols->slot_count = count;
    return true;
}

bool place_symbols_region(struct place_symbols **symbols_p, otfx_defs *defs, uint64_t address,
                          otfx_ref *region)
{
    if (!*symbols_p) {
        *symbols_p = calloc(1, sizeof(**symbols_p));
        if (!*symbols_p)
            return false;
    }
    struct place_symbols *symbols = *symbols_p;
    if (address && symbols->slot_count) {
        size_t j = (size_t)(address * 0x9e3779b97f4a7c15ull >> 20) & (symbols->slot_count - 1);
        while (symbols->slots[j].address) {
            if (symbols->slots[j].address == address) {
                *region = symbols->slots[j].region;
                return true;
            }
            j = (j + 1) & (symbols->slot_count - 1);
        }
    }
    char name[512];
    resolve(symbols, address, name, sizeof(name));
    if (otfx_defs_region(defs, name, OTFX_ROLE_USER_FUNCTION, region) != OTFX_OK)
        return false;
    if (!address)
        return true;
    if (2 * (symbols->slot_used + 1) > symbols->slot_count && !grow_cache(symbols))
        return true; /* not cached: resolved again next time */
    size_t j = (size_t)(address * 0x9e3779b97f4a7c15ull >> 20) & (symbols->slot_count - 1);
    while (symbols->slots[j].address)
        j = (j + 1) & (symbols->slot_count - 1);
    symbols->slots[j].address = address;
    symbols->slots[j].region = *region;
    symbols->slot_used++;
    return true;
}

/* defs.c — the definition store: strings, regions, locations, communicators and metrics.
 *
 * Writers take the mutex; readers index the stable arrays without it (see defs_internal.h). Every
 * define is idempotent through a content hash index per kind. */
/* rwlocks are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "defs_internal.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

/* Estimated bookkeeping of the system allocator per allocation, so otfx_defs_bytes() is honest. */
#define ALLOCATION_OVERHEAD 16

static uint64_t hash_bytes(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ull; /* FNV-1a */
    }
    return hash;
}

#define HASH_SEED 0xcbf29ce484222325ull

static uint64_t hash_text(uint64_t hash, const char *text)
{
    /* Includes the terminator so ("ab", "c") and ("a", "bc") differ. */
    return hash_bytes(hash, text, strlen(text) + 1);
}

static void stable_array_init(stable_array *array, size_t element_size)
{
    memset(array->blocks, 0, sizeof array->blocks);
    atomic_init(&array->count, 0);
    array->element_size = (uint32_t)element_size;
}

static void stable_array_free(stable_array *array)
{
    for (unsigned block = 0; block < STABLE_MAX_BLOCKS; block++)
        free(array->blocks[block]);
}

/* Copies `element` behind the last one and publishes it; caller holds the mutex. */
static otfx_status stable_array_push(otfx_defs *defs, stable_array *array, const void *element, otfx_ref *ref)
{
    uint32_t index = atomic_load_explicit(&array->count, memory_order_relaxed);
    if (index >= OTFX_REF_NONE - 1)
        return otfx_fail(OTFX_ERR_INVALID, "too many definitions of one kind");
    uint64_t shifted = (uint64_t)index + STABLE_FIRST_BLOCK;
    unsigned block = 63u - (unsigned)__builtin_clzll(shifted) - STABLE_FIRST_BLOCK_BITS;
    if (!array->blocks[block]) {
        size_t block_bytes = ((size_t)STABLE_FIRST_BLOCK << block) * array->element_size;
        array->blocks[block] = malloc(block_bytes);
        if (!array->blocks[block])
            return otfx_fail(OTFX_ERR_NOMEM, "out of memory growing the definition store");
        atomic_fetch_add(&defs->bytes, block_bytes + ALLOCATION_OVERHEAD);
    }
    memcpy(stable_array_at(array, index), element, array->element_size);
    atomic_store_explicit(&array->count, index + 1, memory_order_release);
    *ref = index;
    return OTFX_OK;
}

typedef bool (*defs_equal_fn)(const otfx_defs *defs, otfx_ref candidate, const void *key);

static otfx_ref defs_index_find(const otfx_defs *defs, const defs_index *index, uint64_t hash,
                                defs_equal_fn equal, const void *key)
{
    if (index->capacity == 0)
        return OTFX_REF_NONE;
    for (uint32_t slot = (uint32_t)hash & (index->capacity - 1);; slot = (slot + 1) & (index->capacity - 1)) {
        otfx_ref ref = index->refs[slot];
        if (ref == OTFX_REF_NONE)
            return OTFX_REF_NONE;
        if (index->hashes[slot] == hash && equal(defs, ref, key))
            return ref;
    }
}

static void defs_index_place(defs_index *index, uint64_t hash, otfx_ref ref)
{
    uint32_t slot = (uint32_t)hash & (index->capacity - 1);
    while (index->refs[slot] != OTFX_REF_NONE)
        slot = (slot + 1) & (index->capacity - 1);
    index->refs[slot] = ref;
    index->hashes[slot] = hash;
}

/* Makes room for one more entry, keeping the load factor at most 1/2. */
static otfx_status defs_index_reserve(otfx_defs *defs, defs_index *index, uint32_t entries)
{
    if ((uint64_t)(entries + 1) * 2 <= index->capacity)
        return OTFX_OK;
    uint32_t capacity = index->capacity ? index->capacity * 2 : 64;
    uint32_t *refs = malloc(sizeof *refs * capacity);
    uint64_t *hashes = malloc(sizeof *hashes * capacity);
    if (!refs || !hashes) {
        free(refs);
        free(hashes);
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory growing the definition index");
    }
    for (uint32_t slot = 0; slot < capacity; slot++)
        refs[slot] = OTFX_REF_NONE;
    defs_index grown = {refs, hashes, capacity};
    for (uint32_t slot = 0; slot < index->capacity; slot++) {
        if (index->refs[slot] != OTFX_REF_NONE)
            defs_index_place(&grown, index->hashes[slot], index->refs[slot]);
    }
    size_t old_bytes =
        index->capacity ? (sizeof *refs + sizeof *hashes) * index->capacity + 2 * ALLOCATION_OVERHEAD : 0;
    atomic_fetch_add(&defs->bytes, (sizeof *refs + sizeof *hashes) * capacity + 2 * ALLOCATION_OVERHEAD);
    atomic_fetch_sub(&defs->bytes, old_bytes);
    free(index->refs);
    free(index->hashes);
    *index = grown;
    return OTFX_OK;
}

static void defs_index_free(defs_index *index)
{
    free(index->refs);
    free(index->hashes);
}

otfx_defs *otfx_defs_create(void)
{
    otfx_defs *defs = calloc(1, sizeof *defs);
    if (!defs) {
        otfx_fail(OTFX_ERR_NOMEM, "out of memory creating a definition store");
        return NULL;
    }
    pthread_mutex_init(&defs->mutex, NULL);
    stable_array_init(&defs->strings, sizeof(const char *));
    stable_array_init(&defs->regions, sizeof(stored_region));
    stable_array_init(&defs->locations, sizeof(otfx_location_def));
    stable_array_init(&defs->comms, sizeof(otfx_comm_def));
    stable_array_init(&defs->metrics, sizeof(otfx_metric_def));
    atomic_init(&defs->bytes, sizeof *defs + ALLOCATION_OVERHEAD);
    return defs;
}

void otfx_defs_destroy(otfx_defs *defs)
{
    if (!defs)
        return;
    /* Strings own the texts that regions, comms and metrics point to. */
    for (uint32_t i = 0; i < stable_array_count(&defs->strings); i++)
        free(*(char **)stable_array_at(&defs->strings, i));
    for (uint32_t i = 0; i < stable_array_count(&defs->comms); i++)
        free((void *)((otfx_comm_def *)stable_array_at(&defs->comms, i))->world_ranks);
    stable_array_free(&defs->strings);
    stable_array_free(&defs->regions);
    stable_array_free(&defs->locations);
    stable_array_free(&defs->comms);
    stable_array_free(&defs->metrics);
    defs_index_free(&defs->string_index);
    defs_index_free(&defs->region_index);
    defs_index_free(&defs->location_index);
    defs_index_free(&defs->comm_index);
    defs_index_free(&defs->metric_index);
    pthread_mutex_destroy(&defs->mutex);
    free(defs);
}

/* ---- strings ---- */

static bool string_equal(const otfx_defs *defs, otfx_ref candidate, const void *key)
{
    return strcmp(*(char *const *)stable_array_at(&defs->strings, candidate), key) == 0;
}

/* Caller holds the mutex. */
static otfx_status intern_string_locked(otfx_defs *defs, const char *text, otfx_ref *ref)
{
    uint64_t hash = hash_text(HASH_SEED, text);
    otfx_ref found = defs_index_find(defs, &defs->string_index, hash, string_equal, text);
    if (found != OTFX_REF_NONE) {
        *ref = found;
        return OTFX_OK;
    }
    otfx_status status = defs_index_reserve(defs, &defs->string_index, stable_array_count(&defs->strings));
    if (status != OTFX_OK)
        return status;
    size_t length = strlen(text);
    char *copy = malloc(length + 1);
    if (!copy)
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory copying a string definition");
    memcpy(copy, text, length + 1);
    status = stable_array_push(defs, &defs->strings, &copy, ref);
    if (status != OTFX_OK) {
        free(copy);
        return status;
    }
    atomic_fetch_add(&defs->bytes, length + 1 + ALLOCATION_OVERHEAD);
    defs_index_place(&defs->string_index, hash, *ref);
    return OTFX_OK;
}

static const char *string_text(const otfx_defs *defs, otfx_ref ref)
{
    return *(char *const *)stable_array_at(&defs->strings, ref);
}

otfx_status otfx_defs_string(otfx_defs *defs, const char *text, otfx_ref *ref)
{
    if (!defs || !text || !ref)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_string: NULL argument");
    pthread_mutex_lock(&defs->mutex);
    otfx_status status = intern_string_locked(defs, text, ref);
    pthread_mutex_unlock(&defs->mutex);
    return status;
}

/* ---- regions ---- */

typedef struct region_key {
    const char *name;
    otfx_region_role role;
} region_key;

static bool region_equal(const otfx_defs *defs, otfx_ref candidate, const void *key)
{
    const stored_region *region = stable_array_at(&defs->regions, candidate);
    const region_key *wanted = key;
    return region->def.role == wanted->role && strcmp(region->def.name, wanted->name) == 0;
}

otfx_status otfx_defs_region(otfx_defs *defs, const char *name, otfx_region_role role, otfx_ref *ref)
{
    if (!defs || !name || !ref)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_region: NULL argument");
    if ((unsigned)role >= OTFX_ROLE_COUNT)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_region: unknown role %d for \"%s\"", (int)role, name);
    region_key key = {name, role};
    uint32_t role_bits = (uint32_t)role;
    uint64_t hash = hash_bytes(hash_text(HASH_SEED, name), &role_bits, sizeof role_bits);
    pthread_mutex_lock(&defs->mutex);
    otfx_status status = OTFX_OK;
    otfx_ref found = defs_index_find(defs, &defs->region_index, hash, region_equal, &key);
    if (found != OTFX_REF_NONE) {
        *ref = found;
        goto out;
    }
    status = defs_index_reserve(defs, &defs->region_index, stable_array_count(&defs->regions));
    stored_region region = {{NULL, role}, 0};
    if (status == OTFX_OK)
        status = intern_string_locked(defs, name, &region.name_string);
    if (status != OTFX_OK)
        goto out;
    region.def.name = string_text(defs, region.name_string);
    status = stable_array_push(defs, &defs->regions, &region, ref);
    if (status == OTFX_OK)
        defs_index_place(&defs->region_index, hash, *ref);
out:
    pthread_mutex_unlock(&defs->mutex);
    return status;
}

/* ---- locations ---- */

static bool location_equal(const otfx_defs *defs, otfx_ref candidate, const void *key)
{
    const otfx_location_def *location = stable_array_at(&defs->locations, candidate);
    const otfx_location_def *wanted = key;
    return location->rank == wanted->rank && location->thread == wanted->thread;
}

otfx_status otfx_defs_location(otfx_defs *defs, uint32_t rank, uint32_t thread, otfx_ref *ref)
{
    if (!defs || !ref)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_location: NULL argument");
    otfx_location_def location = {rank, thread};
    uint64_t hash = hash_bytes(hash_bytes(HASH_SEED, &rank, sizeof rank), &thread, sizeof thread);
    pthread_mutex_lock(&defs->mutex);
    otfx_status status = OTFX_OK;
    otfx_ref found = defs_index_find(defs, &defs->location_index, hash, location_equal, &location);
    if (found != OTFX_REF_NONE) {
        *ref = found;
    } else {
        status = defs_index_reserve(defs, &defs->location_index, stable_array_count(&defs->locations));
        if (status == OTFX_OK)
            status = stable_array_push(defs, &defs->locations, &location, ref);
        if (status == OTFX_OK)
            defs_index_place(&defs->location_index, hash, *ref);
    }
    pthread_mutex_unlock(&defs->mutex);
    return status;
}

/* ---- communicators ---- */

static bool comm_equal(const otfx_defs *defs, otfx_ref candidate, const void *key)
{
    const otfx_comm_def *comm = stable_array_at(&defs->comms, candidate);
    const otfx_comm_def *wanted = key;
    return comm->size == wanted->size && strcmp(comm->name, wanted->name) == 0 &&
           (comm->size == 0 ||
            memcmp(comm->world_ranks, wanted->world_ranks, sizeof(uint32_t) * comm->size) == 0);
}

otfx_status otfx_defs_comm(otfx_defs *defs, const char *name, const uint32_t *world_ranks, uint32_t size,
                           otfx_ref *ref)
{
    if (!defs || !name || !ref || (size > 0 && !world_ranks))
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_comm: NULL argument");
    otfx_comm_def wanted = {name, world_ranks, size};
    uint64_t hash = hash_bytes(hash_text(HASH_SEED, name), world_ranks ? (const void *)world_ranks : "",
                               sizeof(uint32_t) * size);
    pthread_mutex_lock(&defs->mutex);
    otfx_status status = OTFX_OK;
    otfx_ref found = defs_index_find(defs, &defs->comm_index, hash, comm_equal, &wanted);
    if (found != OTFX_REF_NONE) {
        *ref = found;
        goto out;
    }
    otfx_ref name_string;
    status = defs_index_reserve(defs, &defs->comm_index, stable_array_count(&defs->comms));
    if (status == OTFX_OK)
        status = intern_string_locked(defs, name, &name_string);
    if (status != OTFX_OK)
        goto out;
    /* One element even for an empty communicator, so the pointer is never NULL. */
    uint32_t *ranks_copy = malloc(sizeof(uint32_t) * (size ? size : 1));
    if (!ranks_copy) {
        status = otfx_fail(OTFX_ERR_NOMEM, "out of memory copying communicator \"%s\"", name);
        goto out;
    }
    if (size)
        memcpy(ranks_copy, world_ranks, sizeof(uint32_t) * size);
    otfx_comm_def comm = {string_text(defs, name_string), ranks_copy, size};
    status = stable_array_push(defs, &defs->comms, &comm, ref);
    if (status != OTFX_OK) {
        free(ranks_copy);
        goto out;
    }
    atomic_fetch_add(&defs->bytes, sizeof(uint32_t) * (size ? size : 1) + ALLOCATION_OVERHEAD);
    defs_index_place(&defs->comm_index, hash, *ref);
out:
    pthread_mutex_unlock(&defs->mutex);
    return status;
}

/* ---- metrics ---- */

static bool metric_equal(const otfx_defs *defs, otfx_ref candidate, const void *key)
{
    const otfx_metric_def *metric = stable_array_at(&defs->metrics, candidate);
    const otfx_metric_def *wanted = key;
    return metric->type == wanted->type && strcmp(metric->name, wanted->name) == 0 &&
           strcmp(metric->unit, wanted->unit) == 0;
}

otfx_status otfx_defs_metric(otfx_defs *defs, const char *name, const char *unit, otfx_metric_type type,
                             otfx_ref *ref)
{
    if (!defs || !name || !unit || !ref)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_metric: NULL argument");
    if (type != OTFX_METRIC_INT64 && type != OTFX_METRIC_UINT64 && type != OTFX_METRIC_DOUBLE)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_metric: unknown type %d for \"%s\"", (int)type, name);
    otfx_metric_def wanted = {name, unit, type};
    uint32_t type_bits = (uint32_t)type;
    uint64_t hash = hash_bytes(hash_text(hash_text(HASH_SEED, name), unit), &type_bits, sizeof type_bits);
    pthread_mutex_lock(&defs->mutex);
    otfx_status status = OTFX_OK;
    otfx_ref found = defs_index_find(defs, &defs->metric_index, hash, metric_equal, &wanted);
    if (found != OTFX_REF_NONE) {
        *ref = found;
        goto out;
    }
    otfx_ref name_string, unit_string;
    status = defs_index_reserve(defs, &defs->metric_index, stable_array_count(&defs->metrics));
    if (status == OTFX_OK)
        status = intern_string_locked(defs, name, &name_string);
    if (status == OTFX_OK)
        status = intern_string_locked(defs, unit, &unit_string);
    if (status != OTFX_OK)
        goto out;
    otfx_metric_def metric = {string_text(defs, name_string), string_text(defs, unit_string), type};
    status = stable_array_push(defs, &defs->metrics, &metric, ref);
    if (status == OTFX_OK)
        defs_index_place(&defs->metric_index, hash, *ref);
out:
    pthread_mutex_unlock(&defs->mutex);
    return status;
}

/* ---- lookups (lock-free) ---- */

uint32_t otfx_defs_count_strings(const otfx_defs *defs)
{
    return defs ? stable_array_count(&defs->strings) : 0;
}

uint32_t otfx_defs_count_regions(const otfx_defs *defs)
{
    return defs ? stable_array_count(&defs->regions) : 0;
}

uint32_t otfx_defs_count_locations(const otfx_defs *defs)
{
    return defs ? stable_array_count(&defs->locations) : 0;
}

uint32_t otfx_defs_count_comms(const otfx_defs *defs)
{
    return defs ? stable_array_count(&defs->comms) : 0;
}

uint32_t otfx_defs_count_metrics(const otfx_defs *defs)
{
    return defs ? stable_array_count(&defs->metrics) : 0;
}

static otfx_status lookup(const stable_array *array, otfx_ref ref, const char *kind, const void **element)
{
    if (ref >= stable_array_count(array))
        return otfx_fail(OTFX_ERR_INVALID, "unknown %s reference %u", kind, ref);
    *element = stable_array_at(array, ref);
    return OTFX_OK;
}

otfx_status otfx_defs_get_string(const otfx_defs *defs, otfx_ref ref, const char **text)
{
    const void *element = NULL;
    if (!defs || !text)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_get_string: NULL argument");
    otfx_status status = lookup(&defs->strings, ref, "string", &element);
    if (status == OTFX_OK)
        *text = *(char *const *)element;
    return status;
}

otfx_status otfx_defs_get_region(const otfx_defs *defs, otfx_ref ref, otfx_region_def *out)
{
    const void *element = NULL;
    if (!defs || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_get_region: NULL argument");
    otfx_status status = lookup(&defs->regions, ref, "region", &element);
    if (status == OTFX_OK)
        *out = ((const stored_region *)element)->def;
    return status;
}

otfx_status otfx_defs_get_location(const otfx_defs *defs, otfx_ref ref, otfx_location_def *out)
{
    const void *element = NULL;
    if (!defs || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_get_location: NULL argument");
    otfx_status status = lookup(&defs->locations, ref, "location", &element);
    if (status == OTFX_OK)
        *out = *(const otfx_location_def *)element;
    return status;
}

otfx_status otfx_defs_get_comm(const otfx_defs *defs, otfx_ref ref, otfx_comm_def *out)
{
    const void *element = NULL;
    if (!defs || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_get_comm: NULL argument");
    otfx_status status = lookup(&defs->comms, ref, "communicator", &element);
    if (status == OTFX_OK)
        *out = *(const otfx_comm_def *)element;
    return status;
}

otfx_status otfx_defs_get_metric(const otfx_defs *defs, otfx_ref ref, otfx_metric_def *out)
{
    const void *element = NULL;
    if (!defs || !out)
        return otfx_fail(OTFX_ERR_INVALID, "otfx_defs_get_metric: NULL argument");
    otfx_status status = lookup(&defs->metrics, ref, "metric", &element);
    if (status == OTFX_OK)
        *out = *(const otfx_metric_def *)element;
    return status;
}

size_t otfx_defs_bytes(const otfx_defs *defs)
{
    return defs ? atomic_load(&defs->bytes) : 0;
}

/* table.c — the replay's hash tables: open addressing with linear probing and backward-shift deletion,
 * so that tables whose entries come and go (messages in flight) never fill up with tombstones. */
#include "replay_internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_key(const uint64_t *key, size_t words)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < words; i++) {
        h ^= key[i];
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    h ^= h >> 29;
    return h ? h : 1; /* 0 marks an empty slot */
}

static unsigned char *entry_at(const replay_table *table, size_t index)
{
    return table->entries + index * table->entry_size;
}

void replay_table_init(replay_table *table, size_t key_words, size_t payload_size)
{
    memset(table, 0, sizeof *table);
    table->key_words = key_words;
    table->payload_size = payload_size;
    table->entry_size = (1 + key_words) * sizeof(uint64_t) + ((payload_size + 7) & ~(size_t)7);
}

void replay_table_free(replay_table *table)
{
    free(table->entries);
    table->entries = NULL;
    table->capacity = table->count = 0;
}

static bool same_key(const unsigned char *stored, const uint64_t *key, size_t words)
{
    /* Keys are one to four words: a loop of word compares beats a memcmp call per probe. */
    for (size_t i = 0; i < words; i++) {
        uint64_t word;
        memcpy(&word, stored + i * sizeof(uint64_t), sizeof word);
        if (word != key[i])
            return false;
    }
    return true;
}

static size_t find_slot(const replay_table *table, const uint64_t *key, uint64_t hash, bool *found)
{
    size_t mask = table->capacity - 1;
    size_t index = hash & mask;
    for (;;) {
        const unsigned char *entry = entry_at(table, index);
        uint64_t stored;
        memcpy(&stored, entry, sizeof stored);
        if (stored == 0) {
            *found = false;
            return index;
        }
        if (stored == hash && same_key(entry + sizeof(uint64_t), key, table->key_words)) {
            *found = true;
            return index;
        }
        index = (index + 1) & mask;
    }
}

void *replay_table_find(const replay_table *table, const uint64_t *key)
{
    if (table->count == 0)
        return NULL;
    bool found;
    size_t index = find_slot(table, key, hash_key(key, table->key_words), &found);
    return found ? entry_at(table, index) + (1 + table->key_words) * sizeof(uint64_t) : NULL;
}

static bool grow(replay_table *table)
{
    size_t capacity = table->capacity ? table->capacity * 2 : 64;
    unsigned char *entries = calloc(capacity, table->entry_size);
    if (!entries)
        return false;
    replay_table old = *table;
    table->entries = entries;
    table->capacity = capacity;
    for (size_t i = 0; i < old.capacity; i++) {
        const unsigned char *entry = entry_at(&old, i);
        uint64_t hash;
        memcpy(&hash, entry, sizeof hash);
        if (hash == 0)
            continue;
        size_t index = hash & (capacity - 1);
        while (memcmp(entry_at(table, index), &(uint64_t){0}, sizeof(uint64_t)) != 0)
            index = (index + 1) & (capacity - 1);
        memcpy(entry_at(table, index), entry, table->entry_size);
    }
    free(old.entries);
    return true;
}

void *replay_table_insert(replay_table *table, const uint64_t *key, bool *inserted)
{
    /* At most half full: a new key (every message is one) probes about 2.5 slots instead of 8.5 at
     * three quarters. */
    if ((table->count + 1) * 2 > table->capacity && !grow(table))
        return NULL;
    uint64_t hash = hash_key(key, table->key_words);
    bool found;
    size_t index = find_slot(table, key, hash, &found);
    unsigned char *entry = entry_at(table, index);
    if (!found) {
        memset(entry, 0, table->entry_size);
        memcpy(entry, &hash, sizeof hash);
        memcpy(entry + sizeof(uint64_t), key, table->key_words * sizeof(uint64_t));
        table->count++;
    }
    if (inserted)
        *inserted = !found;
    return entry + (1 + table->key_words) * sizeof(uint64_t);
}

/* Empties the slot at `hole`. Backward shift: later entries of the probe run move into the hole when
 * their home allows it. */
static void remove_at(replay_table *table, size_t hole)
{
    size_t mask = table->capacity - 1;
    size_t index = hole;
    for (;;) {
        index = (index + 1) & mask;
        unsigned char *entry = entry_at(table, index);
        uint64_t hash;
        memcpy(&hash, entry, sizeof hash);
        if (hash == 0)
            break;
        size_t home = hash & mask;
        bool movable = hole <= index ? (home <= hole || home > index) : (home <= hole && home > index);
        if (movable) {
            memcpy(entry_at(table, hole), entry, table->entry_size);
            hole = index;
        }
    }
    memset(entry_at(table, hole), 0, table->entry_size);
    table->count--;
}

void replay_table_remove(replay_table *table, const uint64_t *key)
{
    if (table->count == 0)
        return;
    bool found;
    size_t hole = find_slot(table, key, hash_key(key, table->key_words), &found);
    if (found)
        remove_at(table, hole);
}

void replay_table_each(const replay_table *table, void (*fn)(void *user, const uint64_t *key, void *payload),
                       void *user)
{
    for (size_t i = 0; i < table->capacity; i++) {
        unsigned char *entry = entry_at(table, i);
        uint64_t hash;
        memcpy(&hash, entry, sizeof hash);
        if (hash == 0)
            continue;
        uint64_t key[8];
        memcpy(key, entry + sizeof(uint64_t), table->key_words * sizeof(uint64_t));
        fn(user, key, entry + (1 + table->key_words) * sizeof(uint64_t));
    }
}

/* ---- the messages in flight ---------------------------------------------------------------------- */

void message_table_init(message_table *table, size_t value_size)
{
    memset(table, 0, sizeof *table);
    table->value_size = value_size;
    size_t stride = (value_size + REPLAY_VALUE_ALIGN - 1) / REPLAY_VALUE_ALIGN * REPLAY_VALUE_ALIGN;
    table->value_stride = stride ? stride : REPLAY_VALUE_ALIGN;
}

void message_table_free(message_table *table)
{
    free(table->slots);
    free(table->pool);
    free(table->free_values);
    size_t value_size = table->value_size;
    message_table_init(table, value_size);
}

/* hash_key for the four words of a message key, unrolled: one multiply per word and one final mix
 * (the replay hashes every message twice). */
static inline uint64_t hash_message_key(const uint64_t *key)
{
    uint64_t h = key[0] + key[1] * 0x9e3779b97f4a7c15ull + key[2] * 0xc2b2ae3d27d4eb4full +
                 key[3] * 0x165667b19e3779f9ull;
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return h ? h : 1; /* 0 marks an empty slot */
}

static inline bool message_key_equal(const message_slot *slot, const uint64_t *key)
{
    return slot->key[0] == key[0] && slot->key[1] == key[1] && slot->key[2] == key[2] &&
           slot->key[3] == key[3];
}

/* The slot of `key`, or the empty slot ending its probe run (*found false). */
static inline size_t message_find(const message_table *table, const uint64_t *key, uint64_t hash, bool *found)
{
    const size_t mask = table->capacity - 1;
    for (size_t index = hash & mask;; index = (index + 1) & mask) {
        const message_slot *slot = &table->slots[index];
        if (slot->hash == 0) {
            *found = false;
            return index;
        }
        if (slot->hash == hash && message_key_equal(slot, key)) {
            *found = true;
            return index;
        }
    }
}

static bool message_grow(message_table *table)
{
    size_t capacity = table->capacity ? table->capacity * 2 : 64;
    message_slot *slots = calloc(capacity, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < table->capacity; i++) {
        const message_slot *old = &table->slots[i];
        if (old->hash == 0)
            continue;
        size_t index = old->hash & (capacity - 1);
        while (slots[index].hash != 0)
            index = (index + 1) & (capacity - 1);
        slots[index] = *old;
    }
    free(table->slots);
    table->slots = slots;
    table->capacity = capacity;
    return true;
}

/* A place in the pool for a value: a given-back one first. UINT32_MAX when out of memory. */
static uint32_t message_value_place(message_table *table)
{
    if (table->free_count)
        return table->free_values[--table->free_count];
    if (table->pool_used == table->pool_capacity) {
        if (table->pool_capacity >= UINT32_MAX / 2)
            return UINT32_MAX;
        uint32_t capacity = table->pool_capacity ? table->pool_capacity * 2 : 64;
        /* malloc's alignment is that of max_align_t, at least REPLAY_VALUE_ALIGN on the targets */
        unsigned char *pool = realloc(table->pool, (size_t)capacity * table->value_stride);
        if (!pool)
            return UINT32_MAX;
        table->pool = pool;
        table->pool_capacity = capacity;
    }
    return table->pool_used++;
}

bool message_table_insert(message_table *table, const uint64_t *key, const void *value, bool remote)
{
    /* At most half full: a new key (every message is one) probes about 2.5 slots. */
    if ((table->count + 1) * 2 > table->capacity && !message_grow(table))
        return false;
    const uint64_t hash = hash_message_key(key);
    bool found;
    message_slot *slot = &table->slots[message_find(table, key, hash, &found)];
    if (!found) {
        uint32_t place = message_value_place(table);
        if (place == UINT32_MAX)
            return false;
        slot->hash = hash;
        memcpy(slot->key, key, sizeof slot->key);
        slot->value = place;
        table->count++;
    }
    slot->remote = remote;
    memcpy(table->pool + (size_t)slot->value * table->value_stride, value, table->value_size);
    return true;
}

bool message_table_take(message_table *table, const uint64_t *key, uint32_t *value, bool *remote)
{
    if (table->count == 0)
        return false;
    const size_t mask = table->capacity - 1;
    bool found;
    size_t hole = message_find(table, key, hash_message_key(key), &found);
    if (!found)
        return false;
    *value = table->slots[hole].value;
    *remote = table->slots[hole].remote != 0;
    /* backward shift, as remove_at */
    for (size_t index = (hole + 1) & mask;; index = (index + 1) & mask) {
        const message_slot *slot = &table->slots[index];
        if (slot->hash == 0)
            break;
        size_t home = slot->hash & mask;
        bool movable = hole <= index ? (home <= hole || home > index) : (home <= hole && home > index);
        if (movable) {
            table->slots[hole] = *slot;
            hole = index;
        }
    }
    table->slots[hole].hash = 0;
    table->count--;
    return true;
}

void message_table_release(message_table *table, uint32_t value)
{
    if (table->free_count == table->free_capacity) {
        uint32_t capacity = table->free_capacity ? table->free_capacity * 2 : 64;
        uint32_t *free_values = realloc(table->free_values, (size_t)capacity * sizeof *free_values);
        if (!free_values)
            return; /* the place stays unused: memory, not correctness */
        table->free_values = free_values;
        table->free_capacity = capacity;
    }
    table->free_values[table->free_count++] = value;
}

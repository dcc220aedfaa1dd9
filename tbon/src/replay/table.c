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

bool replay_table_take(replay_table *table, const uint64_t *key, void *payload)
{
    if (table->count == 0)
        return false;
    bool found;
    size_t index = find_slot(table, key, hash_key(key, table->key_words), &found);
    if (!found)
        return false;
    memcpy(payload, entry_at(table, index) + (1 + table->key_words) * sizeof(uint64_t), table->payload_size);
    remove_at(table, index);
    return true;
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

/* summary.c — sorted per-region and per-peer statistics, their arithmetic and their serialised form. */
#include "summary.h"

#include "codec.h"
#include "error.h"
#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>

void summary_init(summary *s)
{
    memset(s, 0, sizeof *s);
    metric_stats_init(&s->metrics);
}

void summary_free(summary *s)
{
    free(s->regions);
    free(s->peers);
    metric_stats_free(&s->metrics);
    summary_init(s);
}

void summary_clear(summary *s)
{
    s->region_count = 0;
    s->peer_count = 0;
    s->events = 0;
    memset(s->removed, 0, sizeof s->removed);
    metric_stats_clear(&s->metrics);
}

size_t summary_heap_bytes(const summary *s)
{
    return (size_t)s->region_capacity * sizeof *s->regions + (size_t)s->peer_capacity * sizeof *s->peers +
           metric_stats_heap_bytes(&s->metrics);
}

uint64_t summary_scale_u64(uint64_t value, uint64_t numerator, uint64_t denominator)
{
    if (denominator == 0 || numerator >= denominator)
        return value;
    return (uint64_t)((unsigned __int128)value * numerator / denominator);
}

/* A summary's arrays start with room for 8 entries. */
static bool grow(void **array, uint32_t *capacity, uint32_t needed, size_t element_size)
{
    return otfx_reserve_u32(array, capacity, needed, element_size, 8);
}

/* Index of the first entry whose key (the leading uint32 of every entry) is >= key. */
static uint32_t lower_bound(const void *entries, uint32_t count, size_t element_size, uint32_t key)
{
    uint32_t low = 0, high = count;
    while (low < high) {
        uint32_t middle = low + (high - low) / 2;
        uint32_t middle_key;
        memcpy(&middle_key, (const char *)entries + middle * element_size, sizeof middle_key);
        if (middle_key < key)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

otfx_profile_entry *summary_region(summary *s, otfx_ref region)
{
    uint32_t at = lower_bound(s->regions, s->region_count, sizeof *s->regions, region);
    if (at < s->region_count && s->regions[at].region == region)
        return &s->regions[at];
    if (!grow((void **)&s->regions, &s->region_capacity, s->region_count + 1, sizeof *s->regions))
        return NULL;
    memmove(&s->regions[at + 1], &s->regions[at], (s->region_count - at) * sizeof *s->regions);
    s->region_count++;
    memset(&s->regions[at], 0, sizeof *s->regions);
    s->regions[at].region = region;
    return &s->regions[at];
}

otfx_peer_stats *summary_peer(summary *s, uint32_t peer)
{
    uint32_t at = lower_bound(s->peers, s->peer_count, sizeof *s->peers, peer);
    if (at < s->peer_count && s->peers[at].peer == peer)
        return &s->peers[at];
    if (!grow((void **)&s->peers, &s->peer_capacity, s->peer_count + 1, sizeof *s->peers))
        return NULL;
    memmove(&s->peers[at + 1], &s->peers[at], (s->peer_count - at) * sizeof *s->peers);
    s->peer_count++;
    memset(&s->peers[at], 0, sizeof *s->peers);
    s->peers[at].peer = peer;
    return &s->peers[at];
}

static void region_add_scaled(otfx_profile_entry *into, const otfx_profile_entry *from, uint64_t numerator,
                              uint64_t denominator)
{
    into->visits += summary_scale_u64(from->visits, numerator, denominator);
    into->inclusive += summary_scale_u64(from->inclusive, numerator, denominator);
    into->exclusive += summary_scale_u64(from->exclusive, numerator, denominator);
    into->messages_sent += summary_scale_u64(from->messages_sent, numerator, denominator);
    into->bytes_sent += summary_scale_u64(from->bytes_sent, numerator, denominator);
    into->messages_received += summary_scale_u64(from->messages_received, numerator, denominator);
    into->bytes_received += summary_scale_u64(from->bytes_received, numerator, denominator);
}

static void peer_add_scaled(otfx_peer_stats *into, const otfx_peer_stats *from, uint64_t numerator,
                            uint64_t denominator)
{
    into->messages_sent += summary_scale_u64(from->messages_sent, numerator, denominator);
    into->bytes_sent += summary_scale_u64(from->bytes_sent, numerator, denominator);
    into->messages_received += summary_scale_u64(from->messages_received, numerator, denominator);
    into->bytes_received += summary_scale_u64(from->bytes_received, numerator, denominator);
}

/* Sorted-array merging, written once for both entry types through the leading uint32 key. */
typedef void (*entry_add_fn)(void *into, const void *from, uint64_t numerator, uint64_t denominator);

static uint32_t entry_key(const void *entries, int64_t index, size_t element_size)
{
    uint32_t key;
    memcpy(&key, (const char *)entries + index * (int64_t)element_size, sizeof key);
    return key;
}

/* Keys of `from` that `into` lacks: the entries a merge adds. */
static uint32_t missing_keys(const void *into, uint32_t into_count, const void *from, uint32_t from_count,
                             size_t element_size)
{
    uint32_t missing = 0, i = 0, j = 0;
    while (j < from_count) {
        uint32_t key_from = entry_key(from, j, element_size);
        while (i < into_count && entry_key(into, i, element_size) < key_from)
            i++;
        if (i == into_count || entry_key(into, i, element_size) != key_from)
            missing++;
        j++;
    }
    return missing;
}

/* Merges backwards in place; `into` has room for `missing` more entries. */
static void merge_sorted(void *into, uint32_t *into_count, uint32_t missing, const void *from,
                         uint32_t from_count, size_t element_size, entry_add_fn add, uint64_t numerator,
                         uint64_t denominator)
{
    char *base = into;
    int64_t i = (int64_t)*into_count - 1, j = (int64_t)from_count - 1,
            out = (int64_t)(*into_count + missing) - 1;
    while (j >= 0) {
        uint32_t key_from = entry_key(from, j, element_size);
        const char *source = (const char *)from + j * (int64_t)element_size;
        char *target = base + out * (int64_t)element_size;
        if (i >= 0 && entry_key(base, i, element_size) > key_from) {
            memmove(target, base + i * (int64_t)element_size, element_size);
            i--;
        } else if (i >= 0 && entry_key(base, i, element_size) == key_from) {
            memmove(target, base + i * (int64_t)element_size, element_size);
            add(target, source, numerator, denominator);
            i--;
            j--;
        } else {
            memset(target, 0, element_size);
            memcpy(target, &key_from, sizeof key_from);
            add(target, source, numerator, denominator);
            j--;
        }
        out--;
    }
    *into_count += missing;
}

static void region_add_fn(void *into, const void *from, uint64_t numerator, uint64_t denominator)
{
    region_add_scaled(into, from, numerator, denominator);
}

static void peer_add_fn(void *into, const void *from, uint64_t numerator, uint64_t denominator)
{
    peer_add_scaled(into, from, numerator, denominator);
}

otfx_status summary_add_scaled(summary *into, const summary *from, uint64_t numerator, uint64_t denominator)
{
    /* Both arrays get their room before either changes, so a failure leaves `into` as it was. */
    uint32_t missing_regions = missing_keys(into->regions, into->region_count, from->regions,
                                            from->region_count, sizeof *from->regions);
    uint32_t missing_peers =
        missing_keys(into->peers, into->peer_count, from->peers, from->peer_count, sizeof *from->peers);
    if (!grow((void **)&into->regions, &into->region_capacity, into->region_count + missing_regions,
              sizeof *into->regions) ||
        !grow((void **)&into->peers, &into->peer_capacity, into->peer_count + missing_peers,
              sizeof *into->peers))
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory merging statistics");
    merge_sorted(into->regions, &into->region_count, missing_regions, from->regions, from->region_count,
                 sizeof *from->regions, region_add_fn, numerator, denominator);
    merge_sorted(into->peers, &into->peer_count, missing_peers, from->peers, from->peer_count,
                 sizeof *from->peers, peer_add_fn, numerator, denominator);
    into->events += summary_scale_u64(from->events, numerator, denominator);
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++)
        into->removed[strategy] += summary_scale_u64(from->removed[strategy], numerator, denominator);
    return OTFX_OK;
}

/* grow() doubles until the count fits, so a capacity never exceeds twice the entries it holds. */
static size_t array_growth_bound(uint32_t count, uint32_t capacity, uint32_t added, size_t element_size)
{
    uint64_t worst = 2 * ((uint64_t)count + added);
    if (worst < 8)
        worst = 8;
    return worst > capacity ? (size_t)(worst - capacity) * element_size : 0;
}

size_t summary_add_growth_bound(const summary *into, const summary *from)
{
    return array_growth_bound(into->region_count, into->region_capacity, from->region_count,
                              sizeof *into->regions) +
           array_growth_bound(into->peer_count, into->peer_capacity, from->peer_count, sizeof *into->peers);
}

otfx_status summary_add(summary *into, const summary *from)
{
    return summary_add_scaled(into, from, 1, 1);
}

static bool region_is_zero(const otfx_profile_entry *entry)
{
    return !(entry->visits | entry->inclusive | entry->exclusive | entry->messages_sent | entry->bytes_sent |
             entry->messages_received | entry->bytes_received);
}

static bool peer_is_zero(const otfx_peer_stats *entry)
{
    return !(entry->messages_sent | entry->bytes_sent | entry->messages_received | entry->bytes_received);
}

void summary_subtract(summary *from, const summary *part)
{
    uint32_t kept = 0, j = 0;
    for (uint32_t i = 0; i < from->region_count; i++) {
        otfx_profile_entry entry = from->regions[i];
        while (j < part->region_count && part->regions[j].region < entry.region)
            j++;
        if (j < part->region_count && part->regions[j].region == entry.region) {
            const otfx_profile_entry *minus = &part->regions[j];
            entry.visits -= minus->visits;
            entry.inclusive -= minus->inclusive;
            entry.exclusive -= minus->exclusive;
            entry.messages_sent -= minus->messages_sent;
            entry.bytes_sent -= minus->bytes_sent;
            entry.messages_received -= minus->messages_received;
            entry.bytes_received -= minus->bytes_received;
        }
        if (!region_is_zero(&entry))
            from->regions[kept++] = entry;
    }
    from->region_count = kept;
    kept = 0;
    j = 0;
    for (uint32_t i = 0; i < from->peer_count; i++) {
        otfx_peer_stats entry = from->peers[i];
        while (j < part->peer_count && part->peers[j].peer < entry.peer)
            j++;
        if (j < part->peer_count && part->peers[j].peer == entry.peer) {
            entry.messages_sent -= part->peers[j].messages_sent;
            entry.bytes_sent -= part->peers[j].bytes_sent;
            entry.messages_received -= part->peers[j].messages_received;
            entry.bytes_received -= part->peers[j].bytes_received;
        }
        if (!peer_is_zero(&entry))
            from->peers[kept++] = entry;
    }
    from->peer_count = kept;
    from->events -= part->events;
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++)
        from->removed[strategy] -= part->removed[strategy];
}

/* Serialised layout: events, removed[OTFX_REDUCE_COUNT], region count, per region (key delta to the
 * previous key, visits, inclusive, exclusive, messages/bytes sent/received), peer count, per peer
 * (key delta, messages/bytes sent/received), then the metric statistics when the range has any
 * (metric_stats.c). All varints; keys strictly increase. */
#define MAX_VARINT 10

size_t summary_encoded_bound(const summary *s)
{
    return MAX_VARINT * (3 + OTFX_REDUCE_COUNT + 8 * (size_t)s->region_count + 5 * (size_t)s->peer_count) +
           metric_stats_encoded_bound(&s->metrics);
}

size_t summary_encode(const summary *s, uint8_t *out)
{
    uint8_t *p = varint_put(out, s->events);
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++)
        p = varint_put(p, s->removed[strategy]);
    p = varint_put(p, s->region_count);
    uint64_t previous = 0;
    for (uint32_t i = 0; i < s->region_count; i++) {
        const otfx_profile_entry *entry = &s->regions[i];
        p = varint_put(p, entry->region - previous);
        previous = entry->region;
        p = varint_put(p, entry->visits);
        p = varint_put(p, entry->inclusive);
        p = varint_put(p, entry->exclusive);
        p = varint_put(p, entry->messages_sent);
        p = varint_put(p, entry->bytes_sent);
        p = varint_put(p, entry->messages_received);
        p = varint_put(p, entry->bytes_received);
    }
    p = varint_put(p, s->peer_count);
    previous = 0;
    for (uint32_t i = 0; i < s->peer_count; i++) {
        const otfx_peer_stats *entry = &s->peers[i];
        p = varint_put(p, entry->peer - previous);
        previous = entry->peer;
        p = varint_put(p, entry->messages_sent);
        p = varint_put(p, entry->bytes_sent);
        p = varint_put(p, entry->messages_received);
        p = varint_put(p, entry->bytes_received);
    }
    const metric_stats *metrics = &s->metrics;
    if (metrics->entry_count || metrics->span_count || metrics->incomplete)
        p = metric_stats_encode(metrics, p);
    return (size_t)(p - out);
}

/* Reads a key: the first absolute, later ones as a positive delta, all below 2^32. */
static bool get_key(const uint8_t **in, const uint8_t *end, uint32_t index, uint64_t *previous, uint32_t *key)
{
    uint64_t delta;
    if (!varint_get(in, end, &delta) || (index > 0 && delta == 0) || delta > UINT32_MAX - *previous)
        return false;
    *previous += delta;
    *key = (uint32_t)*previous;
    return true;
}

static otfx_status malformed(void)
{
    return otfx_fail(OTFX_ERR_CORRUPT, "chunk summary is malformed");
}

otfx_status summary_decode(const uint8_t *in, size_t size, summary *into)
{
    const uint8_t *end = in + size;
    uint64_t count, previous = 0;
    summary_clear(into);
    if (!varint_get(&in, end, &into->events))
        return malformed();
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++) {
        if (!varint_get(&in, end, &into->removed[strategy]))
            return malformed();
    }
    /* Every entry takes at least 8 (5) bytes, which bounds the counts by the input size. */
    if (!varint_get(&in, end, &count) || count > (uint64_t)(end - in) / 8)
        return malformed();
    if (!grow((void **)&into->regions, &into->region_capacity, (uint32_t)count, sizeof *into->regions))
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory reading statistics");
    for (uint32_t i = 0; i < count; i++) {
        otfx_profile_entry *entry = &into->regions[i];
        if (!get_key(&in, end, i, &previous, &entry->region) || !varint_get(&in, end, &entry->visits) ||
            !varint_get(&in, end, &entry->inclusive) || !varint_get(&in, end, &entry->exclusive) ||
            !varint_get(&in, end, &entry->messages_sent) || !varint_get(&in, end, &entry->bytes_sent) ||
            !varint_get(&in, end, &entry->messages_received) || !varint_get(&in, end, &entry->bytes_received))
            return malformed();
        into->region_count = i + 1;
    }
    previous = 0;
    if (!varint_get(&in, end, &count) || count > (uint64_t)(end - in) / 5)
        return malformed();
    if (!grow((void **)&into->peers, &into->peer_capacity, (uint32_t)count, sizeof *into->peers))
        return otfx_fail(OTFX_ERR_NOMEM, "out of memory reading statistics");
    for (uint32_t i = 0; i < count; i++) {
        otfx_peer_stats *entry = &into->peers[i];
        if (!get_key(&in, end, i, &previous, &entry->peer) || !varint_get(&in, end, &entry->messages_sent) ||
            !varint_get(&in, end, &entry->bytes_sent) || !varint_get(&in, end, &entry->messages_received) ||
            !varint_get(&in, end, &entry->bytes_received))
            return malformed();
        into->peer_count = i + 1;
    }
    if (in == end)
        return OTFX_OK;
    bool nomem;
    if (!metric_stats_decode(&in, end, &into->metrics, &nomem))
        return nomem ? otfx_fail(OTFX_ERR_NOMEM, "out of memory reading statistics") : malformed();
    return in == end ? OTFX_OK : malformed();
}

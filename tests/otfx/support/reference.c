/* reference.c — the independent reference statistics (see reference.h). */
#include "reference.h"

#include <stdlib.h>
#include <string.h>

typedef struct open_instance {
    otfx_ref region;
    otfx_time enter;
} open_instance;

static otfx_time overlap(otfx_time begin, otfx_time end, otfx_time from, otfx_time to)
{
    otfx_time low = begin > from ? begin : from, high = end < to ? end : to;
    return high > low ? high - low : 0;
}

/* Dense tables indexed by region (last slot: OTFX_REF_NONE) and by peer, grown on demand. */
typedef struct tables {
    otfx_profile_entry *regions;
    size_t region_slots;
    otfx_peer_stats *peers;
    size_t peer_slots;
} tables;

static otfx_profile_entry *region_slot(tables *t, otfx_ref region)
{
    size_t index = region == OTFX_REF_NONE ? 0 : (size_t)region + 1;
    if (index >= t->region_slots) {
        size_t slots = (index + 1) * 2;
        otfx_profile_entry *grown = realloc(t->regions, slots * sizeof *grown);
        if (!grown)
            return NULL;
        memset(grown + t->region_slots, 0, (slots - t->region_slots) * sizeof *grown);
        t->regions = grown;
        t->region_slots = slots;
    }
    t->regions[index].region = region;
    return &t->regions[index];
}

static otfx_peer_stats *peer_slot(tables *t, uint32_t peer)
{
    if (peer >= t->peer_slots) {
        size_t slots = ((size_t)peer + 1) * 2;
        otfx_peer_stats *grown = realloc(t->peers, slots * sizeof *grown);
        if (!grown)
            return NULL;
        memset(grown + t->peer_slots, 0, (slots - t->peer_slots) * sizeof *grown);
        t->peers = grown;
        t->peer_slots = slots;
    }
    t->peers[peer].peer = peer;
    return &t->peers[peer];
}

static bool region_nonzero(const otfx_profile_entry *e)
{
    return e->visits || e->inclusive || e->exclusive || e->messages_sent || e->bytes_sent ||
           e->messages_received || e->bytes_received;
}

bool reference_compute(const otfx_event *events, size_t count, otfx_time from, otfx_time to,
                       reference_stats *out)
{
    memset(out, 0, sizeof *out);
    tables t = {0};
    open_instance *stack = malloc(sizeof *stack * (OTFX_MAX_CALL_DEPTH + 1));
    bool ok = stack != NULL;
    size_t depth = 0;
    otfx_time end = count ? events[count - 1].time : 0;
    for (size_t i = 0; ok && i < count; i++) {
        const otfx_event *event = &events[i];
        bool in_window = event->time >= from && event->time < to;
        if (event->type == OTFX_EV_ENTER) {
            stack[depth++] = (open_instance){event->u.region.region, event->time};
            if (in_window) {
                otfx_profile_entry *entry = region_slot(&t, event->u.region.region);
                ok = entry != NULL;
                if (ok)
                    entry->visits++;
            }
        } else if (event->type == OTFX_EV_LEAVE) {
            open_instance closed = stack[--depth];
            otfx_profile_entry *entry = region_slot(&t, closed.region);
            ok = entry != NULL;
            if (ok)
                entry->inclusive += overlap(closed.enter, event->time, from, to);
        } else if (in_window && (event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND ||
                                 event->type == OTFX_EV_RECV || event->type == OTFX_EV_IRECV)) {
            bool sent = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND;
            otfx_profile_entry *entry = region_slot(&t, depth ? stack[depth - 1].region : OTFX_REF_NONE);
            otfx_peer_stats *peer = entry ? peer_slot(&t, event->u.msg.peer) : NULL;
            ok = peer != NULL;
            if (ok && sent) {
                entry->messages_sent++;
                entry->bytes_sent += event->u.msg.bytes;
                peer->messages_sent++;
                peer->bytes_sent += event->u.msg.bytes;
            } else if (ok) {
                entry->messages_received++;
                entry->bytes_received += event->u.msg.bytes;
                peer->messages_received++;
                peer->bytes_received += event->u.msg.bytes;
            }
        }
        /* The time until the next event belongs to the region now on top. */
        if (ok && depth && i + 1 < count) {
            otfx_profile_entry *entry = region_slot(&t, stack[depth - 1].region);
            ok = entry != NULL;
            if (ok)
                entry->exclusive += overlap(event->time, events[i + 1].time, from, to);
        }
    }
    while (ok && depth) {
        open_instance still_open = stack[--depth];
        otfx_profile_entry *entry = region_slot(&t, still_open.region);
        ok = entry != NULL;
        if (ok)
            entry->inclusive += overlap(still_open.enter, end, from, to);
    }
    free(stack);
    if (ok) {
        out->regions = malloc(sizeof *out->regions * (t.region_slots + 1));
        out->peers = malloc(sizeof *out->peers * (t.peer_slots + 1));
        ok = out->regions && out->peers;
    }
    /* Slot 0 is OTFX_REF_NONE, which sorts last. */
    for (size_t i = 1; ok && i <= t.region_slots; i++) {
        size_t slot = i % t.region_slots;
        if (region_nonzero(&t.regions[slot]))
            out->regions[out->region_count++] = t.regions[slot];
    }
    for (size_t i = 0; ok && i < t.peer_slots; i++) {
        const otfx_peer_stats *p = &t.peers[i];
        if (p->messages_sent || p->messages_received)
            out->peers[out->peer_count++] = *p;
    }
    free(t.regions);
    free(t.peers);
    if (!ok)
        reference_free(out);
    return ok;
}

void reference_free(reference_stats *stats)
{
    free(stats->regions);
    free(stats->peers);
    memset(stats, 0, sizeof *stats);
}

bool event_log_append(event_log *log, const otfx_event *events, size_t count)
{
    if (log->count + count > log->capacity) {
        size_t capacity = log->capacity ? log->capacity : 1024;
        while (capacity < log->count + count)
            capacity *= 2;
        otfx_event *grown = realloc(log->events, capacity * sizeof *grown);
        if (!grown)
            return false;
        log->events = grown;
        log->capacity = capacity;
    }
    memcpy(log->events + log->count, events, count * sizeof *events);
    log->count += count;
    return true;
}

void event_log_free(event_log *log)
{
    free(log->events);
    memset(log, 0, sizeof *log);
}

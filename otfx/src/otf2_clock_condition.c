/* otf2_clock_condition.c — an OTF2 export's correction of clock condition violations
 * (otf2_clock_condition.h). */
#include "otf2_clock_condition.h"

#include "error.h"
#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>

/* A message's send time as this process knows it: its own sends (to tell what changed) and the sends
 * of the messages its locations receive (known or not: a receive's entry, time 0, says it asked). */
typedef struct send_entry {
    uint64_t seq;
    otfx_time time;
    otfx_time received; /* when `asked`: the receive's time before it was compared with the send's */
    uint32_t channel;
    uint16_t used;
    uint16_t asked; /* the round in which its receive last read the time */
} send_entry;

typedef struct published {
    uint64_t seq;
    otfx_time time;
    uint32_t channel;
} published;

struct otfx_clock_condition {
    send_entry *sends;
    size_t send_count, slot_count;
    uint32_t *receiving; /* channels this process receives on: channel + 1, 0 free (open addressing) */
    size_t receiving_count, receiving_slots;
    published *changed; /* this round's sends whose corrected time is new */
    size_t changed_count, changed_capacity;
    bool recording;
    uint16_t round;                 /* counts the rounds from 1 */
    bool repeatable;                /* no time a receive read in this round has changed since */
    uint64_t moved, max_correction; /* this process, this round */
    uint64_t total_moved, total_max, total_unresolved; /* every process, the last round */
};

static otfx_status out_of_memory(void)
{
    return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory correcting the clocks");
}

static size_t hash_message(uint32_t channel, uint64_t seq)
{
    uint64_t hash = (seq * UINT64_C(0x9e3779b97f4a7c15)) ^ ((uint64_t)channel * UINT64_C(0xc2b2ae3d27d4eb4f));
    return (size_t)(hash ^ hash >> 29);
}

static size_t hash_channel(uint32_t channel)
{
    uint64_t hash = (uint64_t)channel * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(hash ^ hash >> 31);
}

otfx_clock_condition *otfx_clock_create(void)
{
    return calloc(1, sizeof(otfx_clock_condition));
}

void otfx_clock_destroy(otfx_clock_condition *clock)
{
    if (!clock)
        return;
    free(clock->sends);
    free(clock->receiving);
    free(clock->changed);
    free(clock);
}

otfx_time otfx_clock_map(const otfx_clock_location *location, otfx_time time)
{
    const uint64_t decay = time > location->last ? (time - location->last) / CLOCK_AMORTIZATION : 0;
    return time + (location->shift > decay ? location->shift - decay : 0);
}

static send_entry *find_send(const otfx_clock_condition *clock, uint32_t channel, uint64_t seq)
{
    if (!clock->slot_count)
        return NULL;
    for (size_t i = hash_message(channel, seq) & (clock->slot_count - 1);;
         i = (i + 1) & (clock->slot_count - 1)) {
        send_entry *entry = &clock->sends[i];
        if (!entry->used)
            return NULL;
        if (entry->channel == channel && entry->seq == seq)
            return entry;
    }
}

static bool grow_sends(otfx_clock_condition *clock)
{
    const size_t slot_count = clock->slot_count ? 2 * clock->slot_count : 1024;
    send_entry *sends = calloc(slot_count, sizeof *sends);
    if (!sends)
        return false;
    for (size_t s = 0; s < clock->slot_count; s++) {
        if (!clock->sends[s].used)
            continue;
        size_t i = hash_message(clock->sends[s].channel, clock->sends[s].seq) & (slot_count - 1);
        while (sends[i].used)
            i = (i + 1) & (slot_count - 1);
        sends[i] = clock->sends[s];
    }
    free(clock->sends);
    clock->sends = sends;
    clock->slot_count = slot_count;
    return true;
}

/* The entry of (channel, seq), added (time 0) when new; NULL when out of memory. */
static send_entry *find_or_add_send(otfx_clock_condition *clock, uint32_t channel, uint64_t seq)
{
    send_entry *found = find_send(clock, channel, seq);
    if (found)
        return found;
    if ((clock->send_count + 1) * 4 > clock->slot_count * 3 && !grow_sends(clock))
        return NULL;
    size_t i = hash_message(channel, seq) & (clock->slot_count - 1);
    while (clock->sends[i].used)
        i = (i + 1) & (clock->slot_count - 1);
    clock->sends[i] = (send_entry){seq, 0, 0, channel, 1, 0};
    clock->send_count++;
    return &clock->sends[i];
}

static bool receives_on(const otfx_clock_condition *clock, uint32_t channel)
{
    if (!clock->receiving_slots)
        return false;
    for (size_t i = hash_channel(channel) & (clock->receiving_slots - 1);;
         i = (i + 1) & (clock->receiving_slots - 1)) {
        if (!clock->receiving[i])
            return false;
        if (clock->receiving[i] == channel + 1)
            return true;
    }
}

static bool note_receiving(otfx_clock_condition *clock, uint32_t channel)
{
    if (receives_on(clock, channel))
        return true;
    if ((clock->receiving_count + 1) * 2 > clock->receiving_slots) {
        const size_t slots = clock->receiving_slots ? 2 * clock->receiving_slots : 64;
        uint32_t *grown = calloc(slots, sizeof *grown);
        if (!grown)
            return false;
        for (size_t s = 0; s < clock->receiving_slots; s++) {
            if (!clock->receiving[s])
                continue;
            size_t i = hash_channel(clock->receiving[s] - 1) & (slots - 1);
            while (grown[i])
                i = (i + 1) & (slots - 1);
            grown[i] = clock->receiving[s];
        }
        free(clock->receiving);
        clock->receiving = grown;
        clock->receiving_slots = slots;
    }
    size_t i = hash_channel(channel) & (clock->receiving_slots - 1);
    while (clock->receiving[i])
        i = (i + 1) & (clock->receiving_slots - 1);
    clock->receiving[i] = channel + 1;
    clock->receiving_count++;
    return true;
}

static otfx_time later(otfx_time a, otfx_time b)
{
    return a > b ? a : b;
}

/* A send's time changes: a round whose receive read the old one computes the same again only if the
 * receive's time stays what it was. */
static void set_send_time(otfx_clock_condition *clock, send_entry *send, otfx_time time)
{
    if (send->asked == clock->round && later(send->received, send->time + CLOCK_MIN_LATENCY_NS) !=
                                           later(send->received, time + CLOCK_MIN_LATENCY_NS))
        clock->repeatable = false;
    send->time = time;
}

void otfx_clock_round_begin(otfx_clock_condition *clock)
{
    clock->recording = true;
    clock->round++;
    clock->repeatable = true;
    clock->changed_count = 0;
    clock->moved = clock->max_correction = 0;
}

void otfx_clock_settle(otfx_clock_condition *clock)
{
    clock->recording = false;
}

static bool is_send(otfx_event_type type)
{
    return type == OTFX_EV_SEND || type == OTFX_EV_ISEND;
}

static bool is_receive(otfx_event_type type)
{
    return type == OTFX_EV_RECV || type == OTFX_EV_IRECV;
}

otfx_status otfx_clock_event(otfx_clock_condition *clock, otfx_clock_location *location, otfx_time time,
                             const otfx_event *event, bool named, uint32_t channel, otfx_time *corrected)
{
    otfx_time at = otfx_clock_map(location, time);
    if (named && is_receive(event->type)) {
        send_entry *send = find_send(clock, channel, event->u.msg.seq);
        if (clock->recording) {
            if (!note_receiving(clock, channel) ||
                (!send && !(send = find_or_add_send(clock, channel, event->u.msg.seq))))
                return out_of_memory();
            send->asked = clock->round;
            send->received = at;
        }
        if (send && send->time + CLOCK_MIN_LATENCY_NS > at)
            at = send->time + CLOCK_MIN_LATENCY_NS;
    }
    location->last = time;
    location->shift = at - time;
    *corrected = at;
    if (!clock->recording)
        return OTFX_OK;
    if (at != time) {
        clock->moved++;
        if (at - time > clock->max_correction)
            clock->max_correction = at - time;
    }
    if (named && is_send(event->type)) {
        send_entry *send = find_or_add_send(clock, channel, event->u.msg.seq);
        if (!send)
            return out_of_memory();
        if (send->time != at || send->used == 1) {
            set_send_time(clock, send, at);
            send->used = 2; /* published at least once */
            if (!otfx_reserve((void **)&clock->changed, &clock->changed_capacity, clock->changed_count + 1,
                              sizeof *clock->changed, 256))
                return out_of_memory();
            clock->changed[clock->changed_count++] = (published){event->u.msg.seq, at, channel};
        }
    }
    return OTFX_OK;
}

/* A part: u64 changed, u64 events moved, u64 largest correction, then per change u32 channel, u64 seq,
 * u64 time. */
void otfx_clock_write_round(const otfx_clock_condition *clock, otfx_bytes *out)
{
    otfx_bytes_u64(out, clock->changed_count);
    otfx_bytes_u64(out, clock->moved);
    otfx_bytes_u64(out, clock->max_correction);
    for (size_t c = 0; c < clock->changed_count; c++) {
        otfx_bytes_u32(out, clock->changed[c].channel);
        otfx_bytes_u64(out, clock->changed[c].seq);
        otfx_bytes_u64(out, clock->changed[c].time);
    }
}

otfx_status otfx_clock_read_round(otfx_clock_condition *clock, otfx_byte_reader *parts, uint32_t count,
                                  uint32_t self, bool *settled)
{
    uint64_t changed = 0, moved = 0, max_correction = 0;
    for (uint32_t p = 0; p < count; p++) {
        otfx_byte_reader *in = &parts[p];
        const uint64_t changes = otfx_read_u64(in);
        moved += otfx_read_u64(in);
        const uint64_t largest = otfx_read_u64(in);
        if (largest > max_correction)
            max_correction = largest;
        if (in->bad || changes > in->left / 20)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed clock corrections from process %u", p);
        changed += changes;
        for (uint64_t c = 0; c < changes; c++) {
            const uint32_t channel = otfx_read_u32(in);
            const uint64_t seq = otfx_read_u64(in);
            const otfx_time time = otfx_read_u64(in);
            if (p == self || !receives_on(clock, channel))
                continue;
            send_entry *send = find_or_add_send(clock, channel, seq);
            if (!send)
                return out_of_memory();
            if (time > send->time)
                set_send_time(clock, send, time);
        }
    }
    clock->total_moved = moved;
    clock->total_max = max_correction;
    clock->total_unresolved = changed;
    *settled = changed == 0;
    return OTFX_OK;
}

bool otfx_clock_round_repeatable(const otfx_clock_condition *clock)
{
    return clock->repeatable;
}

void otfx_clock_settle_repeated(otfx_clock_condition *clock)
{
    clock->total_unresolved = 0; /* the round that would repeat this one would change nothing */
}

uint64_t otfx_clock_events_moved(const otfx_clock_condition *clock)
{
    return clock->total_moved;
}

uint64_t otfx_clock_max_correction(const otfx_clock_condition *clock)
{
    return clock->total_max;
}

uint64_t otfx_clock_unresolved(const otfx_clock_condition *clock)
{
    return clock->total_unresolved;
}

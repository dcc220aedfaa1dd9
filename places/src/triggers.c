/*
 * triggers.c — triggers at an event place (place_triggers.h): the conditions on each appended batch, the
 * ranks' silence, the periodic flush while a trigger is armed, the firings waiting to go up the tree.
 */
#define _POSIX_C_SOURCE 200809L
#include "place_triggers.h"

#include "event_place_internal.h"

#include <otfx/support/growth.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct trigger_frame {
    otfx_ref region; /* OTFX_REF_NONE: entered while no trigger was armed (unknown) */
    uint64_t time;
};

/* One stream's open regions as the events of its batches opened and closed them. */
struct trigger_stack {
    struct trigger_frame *frames;
    size_t depth, capacity;
    uint64_t epoch; /* place_triggers.epoch it followed the stream in */
};

struct place_trigger {
    uint64_t id; /* 0: a free slot */
    otfx_trigger_spec spec;
    uint64_t *visits;       /* count, rate: per served rank, since armed / in the current second */
    uint64_t *window_start; /* rate: per served rank, the current second's start */
    /* late-sender: receives whose send this place saw too (paired), and those whose sender another
     * event place serves (unseen: never evaluated, so a quiet trigger there proves nothing) */
    uint64_t paired, unseen;
    uint64_t unseen_reported, unseen_reported_at; /* up the tree: how many, and when last (ns) */
};

/* late-sender: one end of a message whose other end has not arrived yet, keyed by the channel
 * (communicator, sender, receiver, tag) and the message's ordinal on it. The table is bounded: an end
 * that lands on a slot still holding another end replaces it, and the older one is counted as lost. */
#define PENDING_ENDS 4096u
struct pending_end {
    otfx_ref comm;
    int32_t src, dst;
    uint32_t tag;
    uint64_t seq; /* 0: a free slot (ends without an ordinal are never paired) */
    bool is_send;
    uint64_t enter; /* the call's enter: the send's, or the receive's (MPI_Recv, the completing Wait) */
    uint64_t time;  /* a receive: its RECV/IRECV event, when its call saw it complete */
};

struct place_triggers {
    struct place_trigger slots[OTFX_TRIGGER_MAX_COUNT];
    uint32_t armed;                                        /* bit i: slot i armed */
    uint32_t by_condition[OTFX_TRIGGER_CONDITION_MAX + 1]; /* bit i: slot i holds that condition */
    /* By region id: the slots naming the region (duration, count, rate, marker), known once looked up. */
    uint32_t *region_bits;
    uint8_t *region_known;
    size_t region_capacity;
    uint32_t *metric_bits;
    uint8_t *metric_known;
    size_t metric_capacity;
    /* Stacks are followed while some trigger is armed; a new epoch starts when one is armed after none
     * was, and a stack of an older epoch starts over with its regions unknown. */
    uint64_t epoch;
    otfx_tree_firing *fired;
    size_t fired_count, fired_next, fired_capacity;
    uint64_t start_ns;
    bool ranks_flushing;   /* the ranks were asked to flush every PLACE_TRIGGER_FLUSH_NS */
    uint64_t *quiet_since; /* per served rank: last seen paused, not recording (or the start) */
    int served;
    struct pending_end *pending; /* PENDING_ENDS, allocated with the first late-sender trigger */
    uint64_t pending_lost;       /* ends replaced before their other end arrived */
    bool warned_unseen;          /* the stderr line about senders served elsewhere was printed */
};

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static struct place_triggers *triggers_of(struct event_place *place)
{
    if (place->triggers)
        return place->triggers;
    struct place_triggers *t = calloc(1, sizeof(*t));
    const int served = place->setup.served_count;
    if (!t || !(t->quiet_since = calloc(served > 0 ? (size_t)served : 1, sizeof(uint64_t)))) {
        free(t);
        return NULL;
    }
    t->served = served;
    t->start_ns = now_ns();
    for (int r = 0; r < served; r++)
        t->quiet_since[r] = t->start_ns;
    t->epoch = 1;
    place->triggers = t;
    return t;
}

/* The region and metric tables are filled again after a trigger came or went. */
static void forget_names(struct place_triggers *t)
{
    if (t->region_known)
        memset(t->region_known, 0, t->region_capacity);
    if (t->metric_known)
        memset(t->metric_known, 0, t->metric_capacity);
}

static void free_slot(struct place_trigger *slot)
{
    free(slot->visits);
    free(slot->window_start);
    memset(slot, 0, sizeof(*slot));
}

static void arm_slot(struct place_triggers *t, uint32_t i)
{
    if (!t->armed)
        t->epoch++; /* stacks followed from here on: the older ones are stale */
    t->armed |= 1u << i;
    const size_t served = t->served > 0 ? (size_t)t->served : 0;
    if (t->slots[i].visits)
        memset(t->slots[i].visits, 0, served * sizeof(uint64_t));
    if (t->slots[i].window_start)
        memset(t->slots[i].window_start, 0, served * sizeof(uint64_t));
}

static bool add_spec(struct event_place *place, uint64_t id, const otfx_trigger_spec *spec)
{
    struct place_triggers *t = triggers_of(place);
    if (!t)
        return false;
    place_trigger_remove(place, id);
    for (uint32_t i = 0; i < OTFX_TRIGGER_MAX_COUNT; i++) {
        struct place_trigger *slot = &t->slots[i];
        if (slot->id)
            continue;
        slot->id = id;
        slot->spec = *spec;
        const size_t served = t->served > 0 ? (size_t)t->served : 1;
        if (spec->condition == OTFX_TRIGGER_COUNT || spec->condition == OTFX_TRIGGER_RATE) {
            slot->visits = calloc(served, sizeof(uint64_t));
            slot->window_start = calloc(served, sizeof(uint64_t));
            if (!slot->visits || !slot->window_start) {
                free_slot(slot);
                return false;
            }
        }
        if (spec->condition == OTFX_TRIGGER_LATE_SENDER && !t->pending &&
            !(t->pending = calloc(PENDING_ENDS, sizeof(*t->pending)))) {
            free_slot(slot);
            return false;
        }
        t->by_condition[spec->condition] |= 1u << i;
        arm_slot(t, i);
        forget_names(t);
        return true;
    }
    return false;
}

struct start_context {
    struct event_place *place;
    uint64_t next_id;
};

static bool add_from_list(void *user, const otfx_trigger_spec *spec)
{
    struct start_context *context = user;
    return add_spec(context->place, ++context->next_id, spec);
}

bool place_triggers_start(struct event_place *place, const char *list)
{
    if (!list || !list[0])
        return true;
    struct start_context context = {place, 0};
    size_t index = 0, column = 0;
    char error[256];
    if (!otfx_trigger_list_parse(list, add_from_list, &context, &index, &column, error, sizeof(error))) {
        fprintf(stderr, "otfx-place %d: OTFX_TRIGGERS: trigger %zu, column %zu: %s\n",
                place->setup.place_rank, index, column, error);
        return false;
    }
    return true;
}

void place_triggers_free(struct event_place *place)
{
    struct place_triggers *t = place->triggers;
    if (!t)
        return;
    for (uint32_t i = 0; i < OTFX_TRIGGER_MAX_COUNT; i++)
        free_slot(&t->slots[i]);
    free(t->region_bits);
    free(t->region_known);
    free(t->metric_bits);
    free(t->metric_known);
    free(t->fired);
    free(t->quiet_since);
    free(t->pending);
    free(t);
    place->triggers = NULL;
}

void place_triggers_free_stream(struct place_stream *stream)
{
    if (stream->trigger_stack)
        free(stream->trigger_stack->frames);
    free(stream->trigger_stack);
    stream->trigger_stack = NULL;
}

bool place_trigger_add(struct event_place *place, uint64_t id, const char *text, char *why, size_t size)
{
    otfx_trigger_spec spec;
    size_t column = 0;
    char error[256];
    if (!otfx_trigger_parse(text, &spec, &column, error, sizeof(error))) {
        snprintf(why, size, "column %zu: %s", column, error);
        return false;
    }
    if (!add_spec(place, id, &spec)) {
        snprintf(why, size, "out of memory or too many triggers (at most %u)", OTFX_TRIGGER_MAX_COUNT);
        return false;
    }
    return true;
}

bool place_trigger_remove(struct event_place *place, uint64_t id)
{
    struct place_triggers *t = place->triggers;
    for (uint32_t i = 0; t && i < OTFX_TRIGGER_MAX_COUNT; i++) {
        if (t->slots[i].id != id)
            continue;
        t->armed &= ~(1u << i);
        for (size_t c = 0; c <= OTFX_TRIGGER_CONDITION_MAX; c++)
            t->by_condition[c] &= ~(1u << i);
        free_slot(&t->slots[i]);
        forget_names(t);
        return true;
    }
    return false;
}

bool place_trigger_arm(struct event_place *place, uint64_t id)
{
    struct place_triggers *t = place->triggers;
    for (uint32_t i = 0; t && i < OTFX_TRIGGER_MAX_COUNT; i++)
        if (t->slots[i].id == id) {
            arm_slot(t, i);
            return true;
        }
    return false;
}

/* ---- names ------------------------------------------------------------------------------------------ */

static bool grow_table(uint32_t **bits, uint8_t **known, size_t *capacity, size_t need)
{
    if (need <= *capacity)
        return true;
    size_t bits_capacity = *capacity, known_capacity = *capacity;
    if (!otfx_reserve((void **)bits, &bits_capacity, need, sizeof(**bits), 64) ||
        !otfx_reserve((void **)known, &known_capacity, bits_capacity, 1, 64))
        return false;
    memset(*known + *capacity, 0, known_capacity - *capacity);
    *capacity = bits_capacity < known_capacity ? bits_capacity : known_capacity;
    return true;
}

static bool marker_matches(const char *region, const char *marker)
{
    const size_t prefix = sizeof(OTFX_TRIGGER_MARKER_PREFIX) - 1;
    return strncmp(region, OTFX_TRIGGER_MARKER_PREFIX, prefix) == 0 && strcmp(region + prefix, marker) == 0;
}

/* The slots whose condition names region `ref`. */
static uint32_t region_bits(struct event_place *place, struct place_triggers *t, otfx_ref ref)
{
    if (ref == OTFX_REF_NONE)
        return 0;
    if (ref < t->region_capacity && t->region_known[ref])
        return t->region_bits[ref];
    otfx_region_def def;
    if (otfx_defs_get_region(place->defs, ref, &def) != OTFX_OK)
        return 0;
    uint32_t bits = 0;
    const uint32_t named = t->by_condition[OTFX_TRIGGER_DURATION] | t->by_condition[OTFX_TRIGGER_COUNT] |
                           t->by_condition[OTFX_TRIGGER_RATE];
    for (uint32_t i = 0; i < OTFX_TRIGGER_MAX_COUNT; i++) {
        const uint32_t bit = 1u << i;
        if ((named & bit) && strcmp(def.name, t->slots[i].spec.name) == 0)
            bits |= bit;
        if ((t->by_condition[OTFX_TRIGGER_MARKER] & bit) && def.role == OTFX_ROLE_PHASE &&
            marker_matches(def.name, t->slots[i].spec.name))
            bits |= bit;
    }
    if (grow_table(&t->region_bits, &t->region_known, &t->region_capacity, (size_t)ref + 1)) {
        t->region_bits[ref] = bits;
        t->region_known[ref] = 1;
    }
    return bits;
}

static uint32_t metric_bits(struct event_place *place, struct place_triggers *t, otfx_ref ref)
{
    if (ref < t->metric_capacity && t->metric_known[ref])
        return t->metric_bits[ref];
    otfx_metric_def def;
    if (otfx_defs_get_metric(place->defs, ref, &def) != OTFX_OK)
        return 0;
    uint32_t bits = 0;
    for (uint32_t i = 0; i < OTFX_TRIGGER_MAX_COUNT; i++)
        if ((t->by_condition[OTFX_TRIGGER_METRIC] & (1u << i)) &&
            strcmp(def.name, t->slots[i].spec.name) == 0)
            bits |= 1u << i;
    if (grow_table(&t->metric_bits, &t->metric_known, &t->metric_capacity, (size_t)ref + 1)) {
        t->metric_bits[ref] = bits;
        t->metric_known[ref] = 1;
    }
    return bits;
}

static const char *region_name(const struct event_place *place, otfx_ref ref)
{
    otfx_region_def def;
    return ref != OTFX_REF_NONE && otfx_defs_get_region(place->defs, ref, &def) == OTFX_OK ? def.name : "?";
}

/* ---- firing ------------------------------------------------------------------------------------------ */

/*/* "312.5 ms", "1.20 s", "850 us", "40 ns" */
static void format_duration(uint64_t ns, char *out, size_t size)
{
    if (ns >= 1000000000u)
        snprintf(out, size, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000u)
        snprintf(out, size, "%.4g ms", (double)ns / 1e6);
    else if (ns >= 1000u)
        snprintf(out, size, "%.4g us", (double)ns / 1e3);
    else
        snprintf(out, size, "%" PRIu64 " ns", ns);
}

static bool eligible(const struct place_triggers *t, uint32_t slot, int rank, uint64_t time)
{
    const otfx_trigger_spec *spec = &t->slots[slot].spec;
    return (t->armed & (1u << slot)) && otfx_rank_set_contains(&spec->ranks, (uint32_t)rank) &&
           (!spec->after_ns || time >= t->start_ns + spec->after_ns);
}

__attribute__((format(printf, 5, 6))) static void fire(struct place_triggers *t, uint32_t slot, int rank,
                                                       uint64_t time, const char *format, ...)
{
    t->armed &= ~(1u << slot);
    if (t->fired_next == t->fired_count)
        t->fired_next = t->fired_count = 0;
    if (!otfx_reserve((void **)&t->fired, &t->fired_capacity, t->fired_count + 1, sizeof(*t->fired), 4))
        return; /* out of memory: the trigger stays disarmed until it is armed again */
    otfx_tree_firing *firing = &t->fired[t->fired_count++];
    memset(firing, 0, sizeof(*firing));
    firing->trigger = t->slots[slot].id;
    firing->time_ns = time;
    firing->rank = (uint32_t)rank;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(firing->detail, sizeof(firing->detail), format, arguments);
    va_end(arguments);
}

bool place_triggers_next_firing(struct event_place *place, otfx_tree_firing *firing)
{
    struct place_triggers *t = place->triggers;
    if (!t || t->fired_next == t->fired_count)
        return false;
    *firing = t->fired[t->fired_next++];
    return true;
}

/* ---- the events of a batch ------------------------------------------------------------------------- */

static struct trigger_stack *stack_of(struct place_triggers *t, struct place_stream *stream, uint32_t depth)
{
    struct trigger_stack *stack = stream->trigger_stack;
    if (!stack) {
        stack = calloc(1, sizeof(*stack));
        if (!stack)
            return NULL;
        stream->trigger_stack = stack;
    }
    if (stack->epoch != t->epoch || stack->depth != depth) {
        /* not followed meanwhile: the regions open now are unknown (their LEAVEs test nothing) */
        if (!otfx_reserve((void **)&stack->frames, &stack->capacity, depth ? depth : 1,
                          sizeof(*stack->frames), 16))
            return NULL;
        for (size_t d = 0; d < depth; d++)
            stack->frames[d] = (struct trigger_frame){OTFX_REF_NONE, 0};
        stack->depth = depth;
        stack->epoch = t->epoch;
    }
    return stack;
}

static void check_visits(struct place_triggers *t, uint32_t bits, int rank_index, int rank, uint64_t time,
                         const char *name)
{
    for (uint32_t i = 0; bits; i++, bits >>= 1) {
        if (!(bits & 1u) || !eligible(t, i, rank, time))
            continue;
        struct place_trigger *slot = &t->slots[i];
        if (slot->spec.condition == OTFX_TRIGGER_COUNT) {
            if (++slot->visits[rank_index] > slot->spec.threshold)
                fire(t, i, rank, time, "rank %d entered %s %" PRIu64 " times (more than %" PRIu64 ")", rank,
                     name, slot->visits[rank_index], slot->spec.threshold);
        } else if (slot->spec.condition == OTFX_TRIGGER_RATE) {
            if (time >= slot->window_start[rank_index] + 1000000000u) {
                slot->window_start[rank_index] = time;
                slot->visits[rank_index] = 0;
            }
            if (++slot->visits[rank_index] > slot->spec.threshold)
                fire(t, i, rank, time,
                     "rank %d entered %s %" PRIu64 " times within a second (more than %" PRIu64 ")", rank,
                     name, slot->visits[rank_index], slot->spec.threshold);
        }
    }
}

static double metric_value(const struct event_place *place, const otfx_event *event)
{
    otfx_metric_def def;
    if (otfx_defs_get_metric(place->defs, event->u.metric.metric, &def) != OTFX_OK)
        return 0;
    switch (def.type) {
    case OTFX_METRIC_INT64:
        return (double)(int64_t)event->u.metric.value;
    case OTFX_METRIC_DOUBLE: {
        double value;
        memcpy(&value, &event->u.metric.value, sizeof(value));
        return value;
    }
    default:
        return (double)event->u.metric.value;
    }
}

/* ---- late senders ---------------------------------------------------------------------------------- */

static size_t pending_slot(const struct pending_end *end)
{
    uint64_t hash = (uint64_t)end->comm * UINT64_C(0x9e3779b97f4a7c15);
    hash ^= ((uint64_t)(uint32_t)end->src << 32 | (uint32_t)end->dst) * UINT64_C(0xc2b2ae3d27d4eb4f);
    hash ^= ((uint64_t)end->tag << 40 ^ end->seq) * UINT64_C(0x165667b19e3779f9);
    hash ^= hash >> 29;
    return (size_t)(hash % PENDING_ENDS);
}

static bool same_message(const struct pending_end *a, const struct pending_end *b)
{
    return a->seq == b->seq && a->comm == b->comm && a->src == b->src && a->dst == b->dst && a->tag == b->tag;
}

/* The waiting of a pair at the moment its second end arrived: Scalasca's late sender, the send's call
 * enter minus the receive's call enter (docs/analyses.md), on the receiver. */
static void check_late_sender(struct place_triggers *t, const struct pending_end *send,
                              const struct pending_end *recv)
{
    uint32_t bits = t->armed & t->by_condition[OTFX_TRIGGER_LATE_SENDER];
    const uint64_t waited = send->enter > recv->enter ? send->enter - recv->enter : 0;
    for (uint32_t i = 0; bits; i++, bits >>= 1) {
        if (!(bits & 1u) || !eligible(t, i, recv->dst, recv->time))
            continue;
        t->slots[i].paired++;
        if (waited <= t->slots[i].spec.threshold)
            continue;
        char waited_text[32], limit_text[32];
        format_duration(waited, waited_text, sizeof(waited_text));
        format_duration(t->slots[i].spec.threshold, limit_text, sizeof(limit_text));
        fire(t, i, recv->dst, recv->time,
             "rank %" PRId32 " waited %s (more than %s) for rank %" PRId32 "'s message (tag %" PRIu32
             "), receive entered at %" PRIu64 ", send at %" PRIu64,
             recv->dst, waited_text, limit_text, send->src, send->tag, recv->enter, send->enter);
    }
}

/* A send or receive of `rank` (a RECV/IRECV at the end of the call that completed it, whose enter is
 * `enter`); 0 as `enter`: the call was entered before the place followed the stream. */
static void late_sender_end(struct event_place *place, struct place_triggers *t, int rank,
                            const otfx_event *event, uint64_t enter)
{
    const bool sent = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND;
    const int32_t peer = (int32_t)event->u.msg.peer;
    const struct pending_end end = {
        .comm = event->u.msg.comm,
        .src = sent ? rank : peer,
        .dst = sent ? peer : rank,
        .tag = event->u.msg.tag,
        .seq = event->u.msg.seq,
        .is_send = sent,
        .enter = sent ? (enter ? enter : event->time) : enter,
        .time = event->time,
    };
    const int other = sent ? end.dst : end.src;
    if (other < place->setup.first_served || other >= place->setup.first_served + place->setup.served_count) {
        if (sent)
            return; /* the receiver's place counts it */
        uint32_t bits = t->armed & t->by_condition[OTFX_TRIGGER_LATE_SENDER];
        for (uint32_t i = 0; bits; i++, bits >>= 1) {
            if (!(bits & 1u) || !eligible(t, i, rank, event->time))
                continue;
            t->slots[i].unseen++;
            if (!t->warned_unseen) {
                t->warned_unseen = true;
                fprintf(stderr,
                        "otfx-place %d: trigger %" PRIu64
                        " (late-sender): rank %d receives from rank %" PRId32
                        ", which another event place serves; such messages are not evaluated (trigger list "
                        "counts them as unseen=N)\n",
                        place->setup.place_rank, t->slots[i].id, rank, peer);
            }
        }
        return;
    }
    if (!end.seq || !t->pending || (!sent && !enter))
        return; /* no ordinal to pair by, or a receive whose call's enter the place did not see */
    struct pending_end *slot = &t->pending[pending_slot(&end)];
    if (slot->seq && same_message(slot, &end) && slot->is_send != sent) {
        const struct pending_end first = *slot;
        slot->seq = 0;
        check_late_sender(t, sent ? &end : &first, sent ? &first : &end);
        return;
    }
    if (slot->seq)
        t->pending_lost++;
    *slot = end;
}

void place_triggers_on_batch(struct event_place *place, struct served_rank *rank, struct place_stream *stream,
                             const otfx_event *events, size_t count, uint32_t depth_before)
{
    struct place_triggers *t = place->triggers;
    if (!t || !t->armed)
        return;
    struct trigger_stack *stack = stack_of(t, stream, depth_before);
    if (!stack)
        return;
    const int rank_index = rank->rank - place->setup.first_served;
    const uint32_t visits = t->by_condition[OTFX_TRIGGER_COUNT] | t->by_condition[OTFX_TRIGGER_RATE];
    const uint32_t durations = t->by_condition[OTFX_TRIGGER_DURATION];
    const uint32_t markers = t->by_condition[OTFX_TRIGGER_MARKER];
    for (size_t e = 0; e < count && t->armed; e++) {
        const otfx_event *event = &events[e];
        switch (event->type) {
        case OTFX_EV_ENTER: {
            const otfx_ref region = event->u.region.region;
            if (otfx_reserve((void **)&stack->frames, &stack->capacity, stack->depth + 1,
                             sizeof(*stack->frames), 16))
                stack->frames[stack->depth++] = (struct trigger_frame){region, event->time};
            const uint32_t bits = t->armed & visits ? region_bits(place, t, region) & visits & t->armed : 0;
            if (bits)
                check_visits(t, bits, rank_index, rank->rank, event->time, region_name(place, region));
            break;
        }
        case OTFX_EV_LEAVE: {
            if (!stack->depth)
                break;
            const struct trigger_frame frame = stack->frames[--stack->depth];
            uint32_t bits =
                t->armed & durations ? region_bits(place, t, frame.region) & durations & t->armed : 0;
            const uint64_t took = event->time > frame.time ? event->time - frame.time : 0;
            for (uint32_t i = 0; bits; i++, bits >>= 1)
                if ((bits & 1u) && took > t->slots[i].spec.threshold &&
                    eligible(t, i, rank->rank, event->time)) {
                    char took_text[32], limit_text[32];
                    format_duration(took, took_text, sizeof(took_text));
                    format_duration(t->slots[i].spec.threshold, limit_text, sizeof(limit_text));
                    fire(t, i, rank->rank, event->time, "%s took %s (more than %s) on rank %d, from %" PRIu64,
                         region_name(place, frame.region), took_text, limit_text, rank->rank, frame.time);
                }
            break;
        }
        case OTFX_EV_SEND:
        case OTFX_EV_ISEND:
        case OTFX_EV_RECV:
        case OTFX_EV_IRECV: {
            if (t->armed & t->by_condition[OTFX_TRIGGER_LATE_SENDER]) {
                /* the innermost open call is the one that sent, or that completed the receive */
                const struct trigger_frame *frame = stack->depth ? &stack->frames[stack->depth - 1] : NULL;
                const uint64_t enter = frame && frame->region != OTFX_REF_NONE ? frame->time : 0;
                late_sender_end(place, t, rank->rank, event, enter);
            }
            uint32_t bits = t->armed & t->by_condition[OTFX_TRIGGER_MESSAGE];
            const bool sent = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND;
            for (uint32_t i = 0; bits; i++, bits >>= 1)
                if ((bits & 1u) && event->u.msg.bytes > t->slots[i].spec.threshold &&
                    eligible(t, i, rank->rank, event->time))
                    fire(t, i, rank->rank, event->time,
                         "a message of %" PRIu64 " bytes (more than %" PRIu64 ") %s rank %d %s rank %" PRIu32,
                         event->u.msg.bytes, t->slots[i].spec.threshold, sent ? "sent by" : "received by",
                         rank->rank, sent ? "to" : "from", event->u.msg.peer);
            break;
        }
        case OTFX_EV_METRIC: {
            uint32_t bits = t->armed & t->by_condition[OTFX_TRIGGER_METRIC]
                                ? metric_bits(place, t, event->u.metric.metric) & t->armed
                                : 0;
            if (!bits)
                break;
            const double value = metric_value(place, event);
            for (uint32_t i = 0; bits; i++, bits >>= 1)
                if ((bits & 1u) && value > t->slots[i].spec.metric_threshold &&
                    eligible(t, i, rank->rank, event->time))
                    fire(t, i, rank->rank, event->time, "metric %s read %.17g (more than %.17g) on rank %d",
                         t->slots[i].spec.name, value, t->slots[i].spec.metric_threshold, rank->rank);
            break;
        }
        case OTFX_EV_PHASE: {
            uint32_t bits =
                t->armed & markers ? region_bits(place, t, event->u.phase.region) & markers & t->armed : 0;
            for (uint32_t i = 0; bits; i++, bits >>= 1)
                if ((bits & 1u) && eligible(t, i, rank->rank, event->time))
                    fire(t, i, rank->rank, event->time, "marker %s raised by rank %d", t->slots[i].spec.name,
                         rank->rank);
            break;
        }
        default:
            break;
        }
    }
    /* the decoder's count of open regions is the truth: a stack that lost track starts over */
    if (stack->depth != stream->depth) {
        stack->epoch = 0;
        stack_of(t, stream, stream->depth);
    }
}

/* ---- silence ---------------------------------------------------------------------------------------- */

static void check_silence(struct event_place *place, struct place_triggers *t, uint64_t now)
{
    const uint32_t hangs = t->armed & t->by_condition[OTFX_TRIGGER_HANG];
    for (int r = 0; hangs && r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        if (rank->said_goodbye)
            continue;
        if (!rank->control.recording || rank->control.paused) {
            t->quiet_since[r] = now; /* paused by steering, or nothing recorded on purpose: not a hang */
            continue;
        }
        uint64_t last = t->quiet_since[r];
        const struct place_stream *main_stream = NULL;
        for (uint32_t s = 0; s < rank->stream_capacity; s++) {
            const struct place_stream *stream = rank->streams[s];
            if (!stream)
                continue;
            if (!main_stream)
                main_stream = stream;
            if (stream->any_time && stream->last_event_time > last)
                last = stream->last_event_time;
        }
        for (uint32_t i = 0; i < OTFX_TRIGGER_MAX_COUNT; i++) {
            if (!(t->armed & hangs & (1u << i)) || now <= last + t->slots[i].spec.threshold ||
                !eligible(t, i, rank->rank, now))
                continue;
            /* where it is: the innermost call open on its first thread, as far as the place followed it */
            const struct trigger_stack *stack = main_stream ? main_stream->trigger_stack : NULL;
            const bool followed = stack && stack->epoch == t->epoch;
            const otfx_ref inside =
                followed && stack->depth ? stack->frames[stack->depth - 1].region : OTFX_REF_NONE;
            const char *where = inside != OTFX_REF_NONE ? region_name(place, inside)
                                : !main_stream || !main_stream->depth
                                    ? "outside any recorded call"
                                    : "in a call entered before the trigger was armed";
            char quiet[32];
            format_duration(now - last, quiet, sizeof(quiet));
            fire(t, i, rank->rank, now, "rank %d recorded no event for %s (%s%s)", rank->rank, quiet,
                 inside != OTFX_REF_NONE ? "inside " : "", where);
        }
    }
}

bool place_triggers_poll(struct event_place *place, uint64_t now)
{
    struct place_triggers *t = place->triggers;
    if (!t)
        return false;
    bool active = false;
    if ((t->armed != 0) != t->ranks_flushing) {
        /* while a trigger is armed the ranks send what they buffered every PLACE_TRIGGER_FLUSH_NS by
         * themselves, not when a batch fills (asked once, not every period: a request in flight to a rank
         * that is finishing would arrive after it stopped listening) */
        t->ranks_flushing = t->armed != 0;
        place_control_send(place, CAPTURE_CONTROL_FLUSH_EVERY,
                           t->ranks_flushing ? PLACE_TRIGGER_FLUSH_NS : 0);
        active = true;
    }
    if (t->by_condition[OTFX_TRIGGER_HANG] & t->armed)
        check_silence(place, t, now);
    return active || t->fired_next != t->fired_count;
}

bool place_trigger_late_sender_counts(struct event_place *place, uint64_t id, uint64_t *paired,
                                      uint64_t *unseen)
{
    struct place_triggers *t = place->triggers;
    for (uint32_t i = 0; t && i < OTFX_TRIGGER_MAX_COUNT; i++)
        if (t->slots[i].id == id && t->slots[i].spec.condition == OTFX_TRIGGER_LATE_SENDER) {
            *paired = t->slots[i].paired;
            *unseen = t->slots[i].unseen;
            return true;
        }
    return false;
}

void place_triggers_report(struct event_place *place)
{
    struct place_triggers *t = place->triggers;
    for (uint32_t i = 0; t && i < OTFX_TRIGGER_MAX_COUNT; i++)
        if (t->slots[i].id && t->slots[i].spec.condition == OTFX_TRIGGER_LATE_SENDER)
            printf("otfx-place %d: trigger %" PRIu64 " late-sender paired=%" PRIu64 " unseen=%" PRIu64
                   " lost=%" PRIu64 "\n",
                   place->setup.place_rank, t->slots[i].id, t->slots[i].paired, t->slots[i].unseen,
                   t->pending_lost);
}

bool place_triggers_next_unseen(struct event_place *place, uint64_t *trigger, uint64_t *count)
{
    struct place_triggers *t = place->triggers;
    if (!t || !t->by_condition[OTFX_TRIGGER_LATE_SENDER])
        return false;
    const uint64_t now = now_ns();
    for (uint32_t i = 0; i < OTFX_TRIGGER_MAX_COUNT; i++) {
        struct place_trigger *slot = &t->slots[i];
        if (!(t->by_condition[OTFX_TRIGGER_LATE_SENDER] & (1u << i)) ||
            slot->unseen == slot->unseen_reported || now < slot->unseen_reported_at + PLACE_TRIGGER_FLUSH_NS)
            continue;
        *trigger = slot->id;
        *count = slot->unseen - slot->unseen_reported;
        slot->unseen_reported = slot->unseen;
        slot->unseen_reported_at = now;
        return true;
    }
    return false;
}

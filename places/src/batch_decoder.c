/*
 * batch_decoder.c — turns one batch of raw records (capture/include/otfx/capture_wire.h) into otfx events and
 * appends them to the trace of the rank and thread that sent it, with one otfx_trace_append.
 *
 * The whole batch is decoded and checked against the stream's state (open regions, last time,
 * announced communicators) before anything is appended, so that a malformed batch is dropped whole:
 * a half-appended batch would leave the trace's calling context out of step with the next batches.
 *
 * Record → event:
 *   ENTER                       ENTER (+ COLL_BEGIN for a blocking collective, held back until its
 *                               COLLECTIVE record gives it the communicator and instance ordinal, or
 *                               until another event of the call comes first: then without them)
 *   LEAVE                       LEAVE (+ COLL_END first if the collective failed and sent no record)
 *   SEND                        SEND, or ISEND with its request for nonblocking/persistent sends, at
 *                               the call's ENTER time (the record's), or later when records of the call
 *                               came in between (otfx/capture_wire.h): a stream stays in time order
 *   RECV                        RECV
 *   RECV_POSTED                 IRECV_REQUEST
 *   REQUEST_DONE send / recv    ISEND_COMPLETE / IRECV (with the status' peer, tag and bytes)
 *   COLLECTIVE                  blocking collective: COLL_END with op, root, bytes and the instance
 *                               ordinal (COLL_BEGIN first: the one held back, or a new one when none is
 *                               open). Nonblocking collective (its function is an
 *                               MPI_I<collective> or <collective>_init): no event, the payload of the
 *                               request record that must follow it (kept across batches)
 *   COLLECTIVE_REQUEST          NBC_REQUEST with the request id (MPI_I<collective>, MPI_Start/Startall)
 *   REQUEST_DONE collective     NBC_COMPLETE with op (of the function the record's tag names), comm,
 *                               root, request, instance ordinal, and the bytes sent and received of the
 * COLLECTIVE record before it (none when that one was dropped at the source) COMM_CREATED                a
 * communicator definition (members as world ranks; an intercommunicator's two groups in a canonical order,
 * the group holding the lowest world rank first, so that both sides define the same one) PHASE PHASE on the
 * region "MPI_Pcontrol level" with the level as value USER_ENTER / USER_LEAVE     ENTER / LEAVE of the user
 * function's region (named from the address) OBJECT                      the rank's load map grows (no event;
 * not subject to time order) NAME                        the stream's otfx.h name id → name (no event; no
 * time order) REGION_BEGIN / REGION_END   ENTER / LEAVE of the named region (role USER_FUNCTION) NAMED_PHASE
 * PHASE on the named region of role PHASE, value 0 THROTTLED                   REDUCTION (strategy throttle;
 * events_removed = 2 x the growth of the cumulative skipped calls of that thread's function: a record that
 * says no more than one before gives no event), and the rank's throttled list
 *   RECORDING                   no event: recording stopped / started (steering). After a restart the
 *                               regions open before it stay open (nothing is closed), and a LEAVE that
 *                               would close one of them (depth at the restart, "depth 0" of what
 *                               was recorded since) is dropped and counted: user functions entered
 *                               before the pause return while recording is on again.
 *   DROPPED                     REDUCTION (strategy source-drop, the dropped records' time range,
 *                               events_removed = the records dropped): OTFX_BACKPRESSURE=drop lost
 *                               events. The regions the rank left during the drop are closed here
 *                               (LEAVE, COLL_END for an open collective); the LEAVEs of regions it
 *                               entered during the drop and left afterwards are dropped (struct
 *                               place_drop_gap), so nesting stays exact and no batch is rejected.
 *   PROBE, COMM_FREED, unknown kinds: no event.
 * A nonblocking collective's COLLECTIVE record and its request record must be adjacent (communicator
 * records, markers without time and a DROPPED record, which forgets the payload, aside) and agree on
 * function, communicator and root: anything else fails the batch.
 */
#include "event_place_internal.h"
#include "place_triggers.h"

#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Communicator ids are dense per rank; anything beyond this is corruption, not a real program. */
#define MAX_COMM_ID (1u << 24)

struct decoder {
    struct event_place *place;
    struct served_rank *rank;
    struct place_stream *stream;
    size_t event_count;
    size_t new_comm_count;
    /* The stream's state as the batch advances it; committed only when the batch is accepted. */
    uint64_t last_time;
    uint64_t last_event_time;
    bool any_time;
    uint32_t depth;
    uint32_t collective_depth;
    bool begin_pending;
    uint64_t begin_time;
    bool recording_resumed;
    uint32_t resume_floor;
    uint64_t dropped_leaves;
    struct place_drop_gap drop_gaps[PLACE_MAX_DROP_GAPS];
    uint32_t drop_gap_count;
    bool nbc_pending;
    struct capture_collective_record nbc_payload;
    uint32_t metric_set, metric_count;
    otfx_ref metric_refs[CAPTURE_METRICS_MAX];
    uint32_t throttled_before; /* the rank's throttled functions before the batch */
    bool throttled_staged;     /* the batch staged counts of some of them */
    char problem[200];
};

/* Notes why the batch is malformed (the first problem only) and returns false for the caller to pass on. */
__attribute__((format(printf, 2, 3))) static bool fail(struct decoder *decoder, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(decoder->problem, sizeof(decoder->problem), format, arguments);
    va_end(arguments);
    return false;
}

/* A blocking collective's COLL_BEGIN is held back from its ENTER until its COLLECTIVE record names the
 * communicator and the instance ordinal (the export keeps a collective only where every member holds it,
 * otf2_pairing.h). Any other event of the call (a callback's, a drop's) brings it out first, without
 * them, at the ENTER's time. It is the second event of the ENTER's record, within the two per record the
 * scratch holds (place_ingest_records). */
static otfx_event *next_event(struct decoder *decoder, otfx_event_type type, uint64_t time)
{
    /* Metrics read after a blocking collective's ENTER come before its COLL_BEGIN (same time). */
    if (decoder->begin_pending && type != OTFX_EV_COLL_BEGIN && type != OTFX_EV_METRIC) {
        decoder->begin_pending = false;
        otfx_event *begin = next_event(decoder, OTFX_EV_COLL_BEGIN, decoder->begin_time);
        begin->u.coll.comm = OTFX_REF_NONE;
        begin->u.coll.root = UINT32_MAX;
    }
    /* Never before the stream's previous event (place_stream.last_event_time says why). */
    if (time < decoder->last_event_time)
        time = decoder->last_event_time;
    decoder->last_event_time = time;
    otfx_event *event = &decoder->place->events[decoder->event_count++];
    memset(event, 0, sizeof(*event));
    event->type = type;
    event->time = time;
    return event;
}

static bool region_of(struct decoder *decoder, uint16_t function_id, otfx_ref *region)
{
    struct place_function *function = &decoder->place->functions[function_id];
    if (function->region == OTFX_REF_NONE &&
        otfx_defs_region(decoder->place->defs, decoder->place->setup.functions.names[function_id],
                         function->role, &function->region) != OTFX_OK)
        return fail(decoder, "cannot define a region (%llu)", (unsigned long long)(function_id));
    *region = function->region;
    return true;
}

static bool comm_of(struct decoder *decoder, uint32_t comm_id, otfx_ref *comm)
{
    if (comm_id >= decoder->rank->comm_capacity || decoder->rank->comms[comm_id] == OTFX_REF_NONE)
        return fail(decoder, "communicator %llu used before it was announced", (unsigned long long)(comm_id));
    *comm = decoder->rank->comms[comm_id];
    return true;
}

/* Every thread of a rank announces a communicator in its own stream before its first record that names
 * it, and the threads' batches arrive in any order (capture/README.md, "Threads"): the first
 * announcement defines the id, a repeat must match it. */
static bool announced_again(struct decoder *decoder, uint32_t comm_id, const int32_t *members,
                            uint32_t member_count)
{
    otfx_comm_def known;
    bool same = otfx_defs_get_comm(decoder->place->defs, decoder->rank->comms[comm_id], &known) == OTFX_OK &&
                known.size == member_count;
    for (uint32_t i = 0; same && i < member_count; i++)
        same = known.world_ranks[i] == (members[i] < 0 ? UINT32_MAX : (uint32_t)members[i]);
    return same || fail(decoder, "communicator %llu announced twice with different members",
                        (unsigned long long)(comm_id));
}

/* A communicator's definition. Ranks create communicators collectively and in the same order, so
 * the k-th communicator a rank created with a given function and members is the same communicator
 * on all its members: that makes its name ("MPI_Comm_split #k"), and otfx_defs_comm's idempotence
 * then gives all members one definition. */
static bool define_comm(struct decoder *decoder, const struct capture_comm_record *record,
                        const int32_t *members, uint32_t member_count, uint16_t function_id)
{
    struct served_rank *rank = decoder->rank;
    struct event_place *place = decoder->place;
    if (record->comm_id >= MAX_COMM_ID)
        return fail(decoder, "communicator id %llu out of range", (unsigned long long)(record->comm_id));
    if (record->comm_id < rank->comm_capacity && rank->comms[record->comm_id] != OTFX_REF_NONE)
        return announced_again(decoder, record->comm_id, members, member_count);
    uint32_t old_capacity = rank->comm_capacity;
    if (!otfx_reserve_u32((void **)&rank->comms, &rank->comm_capacity, (size_t)record->comm_id + 1,
                          sizeof(otfx_ref), 8))
        return fail(decoder, "out of memory for communicator %llu", (unsigned long long)(record->comm_id));
    for (uint32_t i = old_capacity; i < rank->comm_capacity; i++)
        rank->comms[i] = OTFX_REF_NONE;
    uint32_t *world_ranks = malloc(sizeof(uint32_t) * (member_count ? member_count : 1));
    if (!world_ranks)
        return fail(decoder, "out of memory for communicator %llu", (unsigned long long)(record->comm_id));
    /* An intercommunicator's members are its local group, then its remote group: the two sides would
     * define two communicators, and a message between them would name a different one at each end.
     * The group holding the lowest world rank goes first. */
    uint32_t first = 0;
    if ((record->flags & CAPTURE_COMM_INTER) && member_count == record->local_size + record->remote_size) {
        uint32_t lowest_local = UINT32_MAX, lowest_remote = UINT32_MAX;
        for (uint32_t i = 0; i < member_count; i++) {
            const uint32_t world = members[i] < 0 ? UINT32_MAX : (uint32_t)members[i];
            uint32_t *lowest = i < record->local_size ? &lowest_local : &lowest_remote;
            if (world < *lowest)
                *lowest = world;
        }
        if (lowest_remote < lowest_local)
            first = record->local_size;
    }
    for (uint32_t i = 0; i < member_count; i++) {
        const int32_t member = members[(first + i) % member_count];
        world_ranks[i] = member < 0 ? UINT32_MAX : (uint32_t)member;
    }

    const char *creator = record->comm_id == 0 ? "MPI_COMM_WORLD" : place->setup.functions.names[function_id];
    const char *kind = (record->flags & CAPTURE_COMM_INTER) ? "intercommunicator " : "";
    otfx_ref ref = OTFX_REF_NONE;
    for (unsigned instance = 1; ref == OTFX_REF_NONE; instance++) {
        char name[160];
        if (record->comm_id == 0)
            snprintf(name, sizeof(name), "%s", creator);
        else
            snprintf(name, sizeof(name), "%s%s #%u", kind, creator, instance);
        otfx_ref candidate;
        if (otfx_defs_comm(place->defs, name, world_ranks, member_count, &candidate) != OTFX_OK) {
            free(world_ranks);
            return fail(decoder, "cannot define communicator %llu", (unsigned long long)(record->comm_id));
        }
        bool used_by_this_rank = false;
        for (uint32_t id = 0; id < rank->comm_capacity && !used_by_this_rank && record->comm_id != 0; id++)
            used_by_this_rank = rank->comms[id] == candidate;
        if (!used_by_this_rank)
            ref = candidate;
    }
    free(world_ranks);
    if (!otfx_reserve((void **)&place->new_comm_ids, &place->new_comm_capacity, decoder->new_comm_count + 1,
                      sizeof(uint32_t), 16))
        return fail(decoder, "out of memory for communicator %llu", (unsigned long long)(record->comm_id));
    place->new_comm_ids[decoder->new_comm_count++] = record->comm_id;
    rank->comms[record->comm_id] = ref;
    return true;
}

static void message_event(otfx_event *event, otfx_ref comm, const struct capture_p2p_record *record)
{
    event->u.msg.comm = comm;
    event->u.msg.peer = (uint32_t)record->peer;
    event->u.msg.tag = (uint32_t)record->tag;
    event->u.msg.bytes = record->bytes;
    event->u.msg.request = record->request;
    event->u.msg.seq = record->sequence;
}

/* The correction (place clock minus the rank's tick-derived time) at `ticks`: offset_ns until the first
 * re-synchronisation, then the segment that starts last at or before `ticks`. (A send record carries its
 * call's ENTER time, which may lie before a segment that a re-synchronisation during the call started:
 * it gets the correction its ENTER got.) */
double place_clock_correction(const struct served_rank *rank, uint64_t ticks)
{
    if (!rank->clock_segment_count || ticks < rank->clock_segments[0].ticks)
        return (double)rank->offset_ns;
    uint32_t i = rank->clock_segment_count - 1;
    while (i > 0 && rank->clock_segments[i].ticks > ticks)
        i--;
    const struct clock_segment *segment = &rank->clock_segments[i];
    return segment->correction + segment->slope * ((double)ticks - (double)segment->ticks);
}

/* The model and the measured line are both linear over a segment, so how far the model is from the
 * line is known exactly; the true correction is within the line's own error of the line. This holds
 * whether the segment reaches the line when planned or was clamped to a slope that cannot. */
double place_clock_error_bound(const struct served_rank *rank, uint64_t ticks)
{
    if (!rank->clock_segment_count || ticks < rank->clock_segments[0].ticks)
        return -1;
    uint32_t i = rank->clock_segment_count - 1;
    while (i > 0 && rank->clock_segments[i].ticks > ticks)
        i--;
    const struct clock_segment *segment = &rank->clock_segments[i];
    const double from_line = (double)ticks - (double)segment->line_ticks;
    const double model = segment->correction + segment->slope * ((double)ticks - (double)segment->ticks);
    const double line = segment->line_correction + segment->line_drift * from_line;
    return fabs(model - line) + segment->line_bound + segment->line_growth * fabs(from_line);
}

/* The rank's tick-derived time: its MPI_Init calibration applied to raw ticks (otfx/capture_wire.h). */
double place_clock_local(const struct served_rank *rank, uint64_t ticks)
{
    if (!rank->clock_tsc)
        return (double)ticks;
    const double since = ticks >= rank->ref_ticks ? (double)(ticks - rank->ref_ticks) * rank->ns_per_tick
                                                  : -((double)(rank->ref_ticks - ticks) * rank->ns_per_tick);
    return (double)rank->ref_ns + since;
}

/* Raw ticks → the place's CLOCK_MONOTONIC ns: the rank's calibration plus the correction. Monotonic in the
 * ticks (the correction is continuous and its slope far below a tick's ns), so the order checked on the
 * raw ticks holds for the times. */
static uint64_t record_time(const struct served_rank *rank, uint64_t ticks)
{
    if (!rank->clock_known)
        return ticks;
    const double ns = place_clock_local(rank, ticks) + place_clock_correction(rank, ticks);
    return ns > 0 ? (uint64_t)ns : 0;
}

/* A week of 10 s re-syncs; past it the last segment goes on. */
#define MAX_CLOCK_SEGMENTS 65536

/* A CLOCK record: the correction measured at `ticks`. The next segment starts where the current model
 * stands at the stream's latest record (continuity: times already converted stay in order) and heads for
 * the measured line extended by the drift seen since the previous measurement, reaching it one sync
 * interval later. A measurement more than 1 s off the model is ignored (counted): no clock drifts that
 * fast, a corrupt record could. */
static bool decode_clock(struct decoder *decoder, const struct capture_record_header *header,
                         const void *record)
{
    struct capture_clock_record clock;
    struct served_rank *rank = decoder->rank;
    memcpy(&clock, record, sizeof(clock));
    if (!rank->clock_known)
        return true;
    const uint64_t at = header->timestamp;
    const double measured = (double)clock.correction_ns;
    if (fabs(measured - place_clock_correction(rank, at)) > 1e9) {
        rank->clock_syncs_ignored++;
        return true;
    }
    const uint64_t previous_ticks = rank->clock_sync_known ? rank->clock_sync_ticks : rank->ref_ticks;
    const double previous = rank->clock_sync_known ? rank->clock_sync_correction : (double)rank->offset_ns;
    const double previous_bound =
        rank->clock_sync_known ? rank->clock_sync_bound : 0.5 * (double)rank->offset_round_trip_ns;
    const double bound = 0.5 * (double)clock.round_trip_ns;
    const double per_tick_ns = rank->clock_tsc ? rank->ns_per_tick : 1.0;
    const double interval = at > previous_ticks ? (double)(at - previous_ticks) : 1e9 / per_tick_ns;
    const double drift = at > previous_ticks ? (measured - previous) / interval : 0.0;
    uint64_t start = at;
    if (decoder->any_time && decoder->last_time > start)
        start = decoder->last_time;
    const double start_correction = place_clock_correction(rank, start);
    const double target_ticks = (double)at + interval, target = measured + drift * interval;
    double slope =
        target_ticks > (double)start ? (target - start_correction) / (target_ticks - (double)start) : 0;
    const double limit = 0.01 * per_tick_ns; /* 1 %: far beyond any clock, far below reordering times */
    slope = slope > limit ? limit : slope < -limit ? -limit : slope;
    /* The measured line is off by `bound` at `at`, and its drift by up to both measurements' errors over
     * the interval between them. */
    const double growth = (bound + previous_bound) / interval;
    if (rank->clock_segment_count == rank->clock_segment_capacity) {
        size_t capacity;
        if (!otfx_grow_to((void **)&rank->clock_segments, rank->clock_segment_capacity,
                          (size_t)rank->clock_segment_count + 1, sizeof(*rank->clock_segments), 16,
                          MAX_CLOCK_SEGMENTS, &capacity)) {
            rank->clock_syncs_ignored++; /* MAX_CLOCK_SEGMENTS, or no memory: keep the last segment going */
            return true;
        }
        rank->clock_segment_capacity = (uint32_t)capacity;
    }
    rank->clock_segments[rank->clock_segment_count++] =
        (struct clock_segment){start, start_correction, slope, measured, drift, bound, growth, at};
    rank->clock_sync_known = true;
    rank->clock_sync_ticks = at;
    rank->clock_sync_correction = measured;
    rank->clock_sync_bound = bound;
    rank->clock_syncs++;
    return true;
}

/* The request record of a nonblocking collective (COLLECTIVE_REQUEST when started, REQUEST_DONE when
 * completed), with the COLLECTIVE record right before it (decoder->nbc_payload): NBC_REQUEST or
 * NBC_COMPLETE. */
static bool decode_collective_request(struct decoder *decoder, const struct capture_p2p_record *record,
                                      uint64_t time)
{
    const struct event_place *place = decoder->place;
    if (record->request_kind != CAPTURE_REQUEST_COLLECTIVE)
        return fail(decoder, "collective request record of request kind %llu",
                    (unsigned long long)(record->request_kind));
    if (record->tag < 0 || record->tag >= place->setup.functions.count ||
        place->functions[record->tag].role != OTFX_ROLE_MPI_COLLECTIVE ||
        place->functions[record->tag].blocking_collective)
        return fail(decoder, "collective request record names function %lld, no nonblocking collective",
                    (long long)(record->tag));
    otfx_ref comm = OTFX_REF_NONE;
    if (!comm_of(decoder, record->comm_id, &comm))
        return false;
    const bool paired = decoder->nbc_pending;
    const struct capture_collective_record *payload = &decoder->nbc_payload;
    if (paired && (payload->header.function_id != (uint32_t)record->tag ||
                   payload->comm_id != record->comm_id || payload->root != record->peer))
        return fail(decoder,
                    "collective request record (function %llu, communicator %llu, root %lld) does not match "
                    "the collective record before it (function %llu, communicator %llu, root %lld)",
                    (unsigned long long)(record->tag), (unsigned long long)(record->comm_id),
                    (long long)(record->peer), (unsigned long long)(payload->header.function_id),
                    (unsigned long long)(payload->comm_id), (long long)(payload->root));
    decoder->nbc_pending = false;
    if (record->header.kind == CAPTURE_RECORD_COLLECTIVE_REQUEST) {
        next_event(decoder, OTFX_EV_NBC_REQUEST, time)->u.request.request = record->request;
        return true;
    }
    otfx_event *done = next_event(decoder, OTFX_EV_NBC_COMPLETE, time);
    done->u.coll.comm = comm;
    done->u.coll.op = place->functions[record->tag].collective_op;
    done->u.coll.root = record->peer < 0 ? UINT32_MAX : (uint32_t)record->peer;
    /* Unpaired only when the rank dropped the COLLECTIVE record (back-pressure, a DROPPED record says so):
     * the bytes are then not known apart, and none are claimed. */
    done->u.coll.sent = paired ? payload->bytes_sent : 0;
    done->u.coll.received = paired ? payload->bytes_received : 0;
    done->u.coll.request = record->request;
    done->u.coll.seq = record->sequence;
    return true;
}

static bool decode_p2p(struct decoder *decoder, const struct capture_p2p_record *record, uint64_t ticks)
{
    const uint64_t time = record_time(decoder->rank, ticks);
    otfx_ref comm = OTFX_REF_NONE;
    const bool has_request = record->request_kind != 0;
    switch (record->header.kind) {
    case CAPTURE_RECORD_SEND:
    case CAPTURE_RECORD_RECV:
        if (record->peer < 0)
            return true; /* MPI_PROC_NULL or outside the application: no message */
        if (!comm_of(decoder, record->comm_id, &comm))
            return false;
        if (record->header.kind == CAPTURE_RECORD_RECV)
            message_event(next_event(decoder, OTFX_EV_RECV, time), comm, record);
        else
            message_event(next_event(decoder, has_request ? OTFX_EV_ISEND : OTFX_EV_SEND, time), comm,
                          record);
        return true;
    case CAPTURE_RECORD_RECV_POSTED:
        next_event(decoder, OTFX_EV_IRECV_REQUEST, time)->u.request.request = record->request;
        return true;
    case CAPTURE_RECORD_COLLECTIVE_REQUEST:
        return decode_collective_request(decoder, record, time);
    case CAPTURE_RECORD_REQUEST_DONE:
        if (record->request_kind == CAPTURE_REQUEST_COLLECTIVE)
            return decode_collective_request(decoder, record, time);
        if (decoder->nbc_pending)
            return fail(decoder, "a nonblocking collective's record is followed by the completion of another "
                                 "request");
        if (record->request_kind == CAPTURE_REQUEST_SEND) {
            next_event(decoder, OTFX_EV_ISEND_COMPLETE, time)->u.request.request = record->request;
        } else if (record->request_kind == CAPTURE_REQUEST_RECV && record->peer >= 0) {
            if (!comm_of(decoder, record->comm_id, &comm))
                return false;
            message_event(next_event(decoder, OTFX_EV_IRECV, time), comm, record);
        }
        return true;
    default: /* PROBE: a message seen, not yet received */
        return true;
    }
}

/* Names of otfx.h ids are dense per stream; anything far beyond is corruption. */
#define MAX_NAME_ID (1u << 20)

static bool define_name(struct decoder *decoder, const struct capture_record_header *header,
                        const unsigned char *record)
{
    struct capture_name_record name;
    memcpy(&name, record, sizeof(name));
    const char *text = (const char *)record + sizeof(name);
    if (name.name_bytes == 0 || name.name_bytes > header->size - sizeof(name) ||
        text[name.name_bytes - 1] != '\0')
        return fail(decoder, "name record with a malformed name");
    if (name.name_id >= MAX_NAME_ID)
        return fail(decoder, "name id %llu out of range", (unsigned long long)(name.name_id));
    struct place_stream *stream = decoder->stream;
    uint32_t old_capacity = stream->name_capacity;
    if (!otfx_reserve_u32((void **)&stream->names, &stream->name_capacity, (size_t)name.name_id + 1,
                          sizeof(char *), 8))
        return fail(decoder, "out of memory for name %llu", (unsigned long long)(name.name_id));
    for (uint32_t i = old_capacity; i < stream->name_capacity; i++)
        stream->names[i] = NULL;
    char *copy = malloc(name.name_bytes);
    if (!copy)
        return fail(decoder, "out of memory for name %llu", (unsigned long long)(name.name_id));
    memcpy(copy, text, name.name_bytes);
    free(stream->names[name.name_id]);
    stream->names[name.name_id] = copy;
    return true;
}

static bool named_region(struct decoder *decoder, uint64_t name_id, otfx_region_role role, otfx_ref *region)
{
    const struct place_stream *stream = decoder->stream;
    if (name_id >= stream->name_capacity || !stream->names[name_id])
        return fail(decoder, "name id %llu used before it was defined", (unsigned long long)(name_id));
    if (otfx_defs_region(decoder->place->defs, stream->names[name_id], role, region) != OTFX_OK)
        return fail(decoder, "cannot define the region '%s'", stream->names[name_id]);
    return true;
}

/* A LEAVE (MPI, user function, otfx.h region): true when there is a region to close, false when the
 * LEAVE is dropped (a region entered before recording restarted) or, with *malformed set, when there is
 * no open region and recording never restarted. */
static bool leave_closes_region(struct decoder *decoder, bool *malformed, const char *what,
                                uint16_t function_id)
{
    *malformed = false;
    if (decoder->drop_gap_count && decoder->drop_gaps[decoder->drop_gap_count - 1].depth == decoder->depth) {
        /* Closes a region entered while the rank dropped events: its ENTER was never held. */
        if (--decoder->drop_gaps[decoder->drop_gap_count - 1].count == 0)
            decoder->drop_gap_count--;
        return false;
    }
    const uint32_t floor = decoder->recording_resumed ? decoder->resume_floor : 0;
    if (decoder->depth > floor)
        return true;
    if (decoder->recording_resumed || decoder->rank->recording_resumed) {
        decoder->dropped_leaves++;
        return false;
    }
    *malformed = true;
    fail(decoder, "%s without an open region (function id %llu)", what, (unsigned long long)function_id);
    return false;
}

/* Room for `more` events in the place's scratch beyond the two per record the batch loop provides. */
static bool reserve_events(struct decoder *decoder, size_t more)
{
    struct event_place *place = decoder->place;
    return otfx_reserve((void **)&place->events, &place->event_capacity, decoder->event_count + more + 2,
                        sizeof(otfx_event), 1024);
}

/* Closes the innermost held region at `time` (as a LEAVE would, a blocking collective without its
 * payload record included). */
static bool close_region(struct decoder *decoder, uint64_t time)
{
    if (decoder->collective_depth == decoder->depth) {
        otfx_event *end = next_event(decoder, OTFX_EV_COLL_END, time);
        if (!comm_of(decoder, 0, &end->u.coll.comm))
            return false;
        end->u.coll.op = 0;
        end->u.coll.root = UINT32_MAX;
        decoder->collective_depth = 0;
    }
    next_event(decoder, OTFX_EV_LEAVE, time);
    decoder->depth--;
    return true;
}

/* CAPTURE_RECORD_DROPPED: the reduction record, then the call stack brought in step with the rank's. */
static bool decode_dropped(struct decoder *decoder, const struct capture_record_header *header,
                           const unsigned char *record, uint64_t time)
{
    struct capture_dropped_record dropped;
    memcpy(&dropped, record, sizeof(dropped));
    if (dropped.first > dropped.last || dropped.last > header->timestamp)
        return fail(decoder, "dropped record with a malformed time range");
    /* Closing more regions than are held is harmless (nothing is left to close), but the event scratch
     * needs room for what is closed: at most the held depth, two events each. */
    const uint32_t closable = dropped.closed < decoder->depth ? dropped.closed : decoder->depth;
    if (!reserve_events(decoder, 1 + 2 * (size_t)closable))
        return fail(decoder, "out of memory for the events of a dropped record");
    /* The request record a pending collective record waited for may be among the records lost. */
    decoder->nbc_pending = false;
    otfx_event *event = next_event(decoder, OTFX_EV_REDUCTION, time);
    event->u.reduction.strategy = OTFX_REDUCE_SOURCE_DROP;
    event->u.reduction.begin = record_time(decoder->rank, dropped.first);
    event->u.reduction.end = record_time(decoder->rank, dropped.last);
    event->u.reduction.events_removed = dropped.dropped;

    uint32_t closed = dropped.closed;
    while (closed) {
        struct place_drop_gap *gap =
            decoder->drop_gap_count ? &decoder->drop_gaps[decoder->drop_gap_count - 1] : NULL;
        if (gap && gap->depth == decoder->depth) {
            const uint32_t n = closed < gap->count ? closed : gap->count;
            gap->count -= n;
            closed -= n;
            if (!gap->count)
                decoder->drop_gap_count--;
            continue;
        }
        if (!decoder->depth)
            break;
        if (!close_region(decoder, time))
            return false;
        closed--;
    }
    if (decoder->resume_floor > decoder->depth)
        decoder->resume_floor = decoder->depth;
    if (!dropped.opened)
        return true;
    struct place_drop_gap *gap =
        decoder->drop_gap_count ? &decoder->drop_gaps[decoder->drop_gap_count - 1] : NULL;
    if (gap && gap->depth == decoder->depth) {
        gap->count += dropped.opened;
    } else if (decoder->drop_gap_count < PLACE_MAX_DROP_GAPS) {
        decoder->drop_gaps[decoder->drop_gap_count++] =
            (struct place_drop_gap){decoder->depth, dropped.opened};
    } else {
        /* Too many interleaved gaps to track exactly: from here LEAVEs at this depth are dropped, as
         * after a recording restart. */
        decoder->recording_resumed = true;
        decoder->resume_floor = decoder->depth;
        decoder->rank->recording_resumed = true;
    }
    return true;
}

/* A rank ending without MPI_Finalize (capture/src/dying.c): remembered for the report and the tree,
 * and marked in its trace as a phase "otfx: rank R died of …" whose value is the signal, MPI_Abort's
 * error code or exit()'s status. */
static bool decode_died(struct decoder *decoder, const unsigned char *record, uint64_t time)
{
    struct event_place *place = decoder->place;
    struct served_rank *rank = decoder->rank;
    struct capture_died_record died;
    memcpy(&died, record, sizeof(died));
    if (died.cause < CAPTURE_DEATH_SIGNAL || died.cause > CAPTURE_DEATH_EXIT)
        return fail(decoder, "died record of unknown cause %llu", (unsigned long long)died.cause);
    struct rank_death death = {.died = true,
                               .cause = died.cause,
                               .value = died.value,
                               .signal_code = died.signal_code,
                               .address = died.address,
                               .where = OTFX_REF_NONE};
    if (died.instruction &&
        !place_symbols_region(&rank->symbols, place->defs, died.instruction, &death.where))
        death.where = OTFX_REF_NONE;
    rank->death = death;
    char text[600], name[700];
    place_describe_death(place, rank, text, sizeof(text));
    snprintf(name, sizeof(name), "otfx: rank %d %s", rank->rank, text);
    otfx_ref region;
    if (otfx_defs_region(place->defs, name, OTFX_ROLE_PHASE, &region) != OTFX_OK)
        return fail(decoder, "cannot define the region of its end");
    otfx_event *event = next_event(decoder, OTFX_EV_PHASE, time);
    event->u.phase.region = region;
    event->u.phase.value = died.value;
    return true;
}

/* COMM_CREATED (COMM_FREED: nothing to do, ids are never reused). */
static bool decode_comm(struct decoder *decoder, const struct capture_record_header *header,
                        const unsigned char *record)
{
    if (header->kind != CAPTURE_RECORD_COMM_CREATED)
        return true;
    struct capture_comm_record comm;
    memcpy(&comm, record, sizeof(comm));
    uint64_t members = (uint64_t)comm.local_size + comm.remote_size;
    /* A communicator larger than a batch comes without members (otfx/capture_wire.h). */
    if (header->size == sizeof(comm))
        members = 0;
    else if (members > (header->size - sizeof(comm)) / sizeof(int32_t))
        return fail(decoder, "communicator record too short for %llu members", (unsigned long long)(members));
    int32_t *member_ranks = NULL;
    if (members) {
        member_ranks = malloc(members * sizeof(int32_t));
        if (!member_ranks)
            return fail(decoder, "out of memory for %llu members", (unsigned long long)(members));
        memcpy(member_ranks, record + sizeof(comm), members * sizeof(int32_t));
    }
    bool defined = define_comm(decoder, &comm, member_ranks, (uint32_t)members, header->function_id);
    free(member_ranks);
    return defined;
}

static void costs_of_events(const uint64_t *cost, uint32_t injected_ns, otfx_record_costs *out);

/* OVERHEAD: the rank's cost per record kind from now on. The first (MPI_Init) applies from the stream's
 * start; a re-measurement (`overhead measure`) from its time on, and its own duration is intrusion of the
 * stream that measured. */
static bool decode_overhead(struct decoder *decoder, const struct capture_record_header *header,
                            const unsigned char *record)
{
    struct capture_overhead_record overhead;
    memcpy(&overhead, record, sizeof(overhead));
    struct served_rank *rank = decoder->rank;
    for (uint16_t kind = 0; kind < CAPTURE_OVERHEAD_KINDS; kind++) {
        uint64_t cost = overhead.cost_ps[kind];
        if (capture_overhead_injected(kind))
            cost += (uint64_t)overhead.injected_ns * 1000u;
        rank->record_cost_ps[kind] = cost;
    }
    rank->injected_ns = overhead.injected_ns;
    rank->overhead_measurements++;
    if (!rank->overhead_known) {
        rank->overhead_known = true;
        costs_of_events(rank->record_cost_ps, overhead.injected_ns, &rank->first_costs);
        return true;
    }
    if (!otfx_reserve((void **)&rank->cost_changes, &rank->cost_change_capacity, rank->cost_change_count + 1,
                      sizeof(*rank->cost_changes), 4))
        return fail(decoder, "out of memory for a re-measured overhead");
    otfx_cost_change *change = &rank->cost_changes[rank->cost_change_count];
    change->since = record_time(rank, header->timestamp);
    if (rank->cost_change_count && change->since < change[-1].since)
        change->since = change[-1].since; /* another thread's, a little later: in time order */
    change->thread = decoder->stream->thread;
    change->took_ns = overhead.took_ns;
    costs_of_events(rank->record_cost_ps, overhead.injected_ns, &change->costs);
    rank->cost_change_count++;
    rank->intrusion_ps += overhead.took_ns * 1000u;
    return true;
}

/* A record's cost to the rank; records a drop lost cost what an ENTER does (the writers differ little). */
static uint64_t record_cost_ps(const struct served_rank *rank, const struct capture_record_header *header,
                               const unsigned char *record)
{
    if (header->kind >= CAPTURE_OVERHEAD_KINDS)
        return 0;
    uint64_t cost = rank->record_cost_ps[header->kind];
    if (header->kind == CAPTURE_RECORD_DROPPED) {
        struct capture_dropped_record dropped;
        memcpy(&dropped, record, sizeof(dropped));
        cost += dropped.dropped * rank->record_cost_ps[CAPTURE_RECORD_ENTER];
    }
    return cost;
}

void place_rank_overhead(const struct served_rank *rank, otfx_rank_overhead *out)
{
    memset(out, 0, sizeof(*out));
    out->measured = rank->overhead_known;
    out->intrusion_ns = rank->intrusion_ps / 1000u;
    out->costs = rank->first_costs;
    out->change_count = rank->cost_change_count;
    out->changes = rank->cost_changes;
}

/* Per record kind → per event kind. */
static void costs_of_events(const uint64_t *cost, uint32_t injected_ns, otfx_record_costs *out)
{
    memset(out, 0, sizeof(*out));
    out->injected_ns = injected_ns;
    /* The records each event comes from (batch_decoder.c's decode_record): a blocking collective's
     * COLL_BEGIN comes with its ENTER, its COLL_END from its COLLECTIVE record; a nonblocking one's
     * request and completion records follow a COLLECTIVE record each. */
    out->event_ps[OTFX_EV_ENTER] = cost[CAPTURE_RECORD_ENTER];
    out->event_ps[OTFX_EV_LEAVE] = cost[CAPTURE_RECORD_LEAVE];
    out->user_enter_ps = cost[CAPTURE_RECORD_USER_ENTER];
    out->user_leave_ps = cost[CAPTURE_RECORD_USER_LEAVE];
    out->event_ps[OTFX_EV_SEND] = cost[CAPTURE_RECORD_SEND];
    out->event_ps[OTFX_EV_ISEND] = cost[CAPTURE_RECORD_SEND];
    out->event_ps[OTFX_EV_RECV] = cost[CAPTURE_RECORD_RECV];
    out->event_ps[OTFX_EV_IRECV] = cost[CAPTURE_RECORD_REQUEST_DONE];
    out->event_ps[OTFX_EV_ISEND_COMPLETE] = cost[CAPTURE_RECORD_REQUEST_DONE];
    out->event_ps[OTFX_EV_REQUEST_CANCELLED] = cost[CAPTURE_RECORD_REQUEST_DONE];
    out->event_ps[OTFX_EV_IRECV_REQUEST] = cost[CAPTURE_RECORD_RECV_POSTED];
    out->event_ps[OTFX_EV_COLL_END] = cost[CAPTURE_RECORD_COLLECTIVE];
    out->event_ps[OTFX_EV_NBC_REQUEST] =
        cost[CAPTURE_RECORD_COLLECTIVE] + cost[CAPTURE_RECORD_COLLECTIVE_REQUEST];
    out->event_ps[OTFX_EV_NBC_COMPLETE] = cost[CAPTURE_RECORD_COLLECTIVE] + cost[CAPTURE_RECORD_REQUEST_DONE];
    out->event_ps[OTFX_EV_PHASE] = cost[CAPTURE_RECORD_PHASE];
}

/* METRIC_SET: the thread's metrics from now on, defined in the place's store. */
static bool decode_metric_set(struct decoder *decoder, const struct capture_record_header *header,
                              const unsigned char *record)
{
    struct capture_metric_set_record set;
    memcpy(&set, record, sizeof(set));
    if (set.count > CAPTURE_METRICS_MAX ||
        (header->size - sizeof(set)) / sizeof(struct capture_metric_definition) < set.count)
        return fail(decoder, "metric set of %llu metrics in %llu bytes", (unsigned long long)set.count,
                    (unsigned long long)header->size);
    if (set.set_id <= decoder->metric_set)
        return fail(decoder, "metric set %llu after set %llu", (unsigned long long)set.set_id,
                    (unsigned long long)decoder->metric_set);
    static const otfx_metric_type types[] = {[CAPTURE_METRIC_UINT64] = OTFX_METRIC_UINT64,
                                             [CAPTURE_METRIC_INT64] = OTFX_METRIC_INT64,
                                             [CAPTURE_METRIC_DOUBLE] = OTFX_METRIC_DOUBLE};
    for (uint32_t i = 0; i < set.count; i++) {
        struct capture_metric_definition definition;
        memcpy(&definition, record + sizeof(set) + i * sizeof(definition), sizeof(definition));
        if (!memchr(definition.name, '\0', sizeof(definition.name)) || !definition.name[0] ||
            !memchr(definition.unit, '\0', sizeof(definition.unit)) ||
            definition.value_type > CAPTURE_METRIC_DOUBLE)
            return fail(decoder, "malformed definition of metric %u in set %llu", i,
                        (unsigned long long)set.set_id);
        if (otfx_defs_metric(decoder->place->defs, definition.name, definition.unit,
                             types[definition.value_type], &decoder->metric_refs[i]) != OTFX_OK)
            return fail(decoder, "cannot define metric %s", definition.name);
    }
    decoder->metric_set = set.set_id;
    decoder->metric_count = set.count;
    /* The mark: at the event the set was read first with (its timestamp), before the set's values. */
    otfx_ref mark;
    if (otfx_defs_metric(decoder->place->defs, OTFX_METRIC_SET_MARK, "set", OTFX_METRIC_UINT64, &mark) !=
        OTFX_OK)
        return fail(decoder, "cannot define metric %s", OTFX_METRIC_SET_MARK);
    uint64_t ticks = header->timestamp;
    if (decoder->any_time && ticks < decoder->last_time)
        ticks = decoder->last_time;
    otfx_event *event = next_event(decoder, OTFX_EV_METRIC, record_time(decoder->rank, ticks));
    event->u.metric.metric = mark;
    event->u.metric.value = set.set_id;
    return true;
}

/* METRICS: one METRIC event per value, at the event's time. */
static bool decode_metrics(struct decoder *decoder, const struct capture_record_header *header,
                           const unsigned char *record, uint64_t time)
{
    struct capture_metrics_record metrics;
    memcpy(&metrics, record, sizeof(metrics));
    if (metrics.set_id != decoder->metric_set || metrics.count != decoder->metric_count || metrics.count == 0)
        return fail(decoder, "%llu metric values of set %llu, but the thread's set is %llu with %llu metrics",
                    (unsigned long long)metrics.count, (unsigned long long)metrics.set_id,
                    (unsigned long long)decoder->metric_set, (unsigned long long)decoder->metric_count);
    if ((header->size - sizeof(metrics)) / sizeof(uint64_t) < metrics.count)
        return fail(decoder, "metrics record of %llu bytes for %llu values", (unsigned long long)header->size,
                    (unsigned long long)metrics.count);
    if (decoder->event_count + metrics.count + 1 > decoder->place->event_capacity)
        return fail(decoder, "more metric values than a batch holds");
    for (uint32_t i = 0; i < metrics.count; i++) {
        otfx_event *event = next_event(decoder, OTFX_EV_METRIC, time);
        event->u.metric.metric = decoder->metric_refs[i];
        memcpy(&event->u.metric.value, record + sizeof(metrics) + i * sizeof(uint64_t), sizeof(uint64_t));
    }
    return true;
}

static bool decode_record(struct decoder *decoder, const struct capture_record_header *header,
                          const unsigned char *record)
{
    struct event_place *place = decoder->place;
    if (header->function_id >= place->setup.functions.count)
        return fail(decoder, "unknown function id %llu", (unsigned long long)(header->function_id));
    /* Every kind's struct fits (the contract's table); longer records carry members, paths or names. */
    const struct capture_record_kind_info kind = capture_record_kind(header->kind);
    if (header->size < kind.min_size)
        return fail(decoder, "%s record of %llu bytes", kind.name, (unsigned long long)(header->size));
    if (header->kind == CAPTURE_RECORD_OBJECT) {
        struct capture_object_record object;
        memcpy(&object, record, sizeof(object));
        const char *path = (const char *)record + sizeof(object);
        if (object.path_bytes == 0 || object.path_bytes > header->size - sizeof(object) ||
            path[object.path_bytes - 1] != '\0')
            return fail(decoder, "object record with a malformed path");
        if (!place_symbols_add_object(&decoder->rank->symbols, path, object.base))
            return fail(decoder, "out of memory for the load map");
        return true;
    }
    if (header->kind == CAPTURE_RECORD_NAME)
        return define_name(decoder, header, record);
    if (header->kind == CAPTURE_RECORD_CLOCK)
        return decode_clock(decoder, header, record);
    if (header->kind == CAPTURE_RECORD_RECORDING) {
        struct capture_recording_record recording;
        memcpy(&recording, record, sizeof(recording));
        if (recording.on) {
            decoder->recording_resumed = true;
            decoder->resume_floor = decoder->depth;
            decoder->rank->recording_resumed = true;
        }
        return true;
    }
    if (header->kind == CAPTURE_RECORD_COMM_CREATED || header->kind == CAPTURE_RECORD_COMM_FREED)
        return decode_comm(decoder, header, record); /* definitions: no time order */
    if (header->kind == CAPTURE_RECORD_OVERHEAD)
        return decode_overhead(decoder, header, record);
    if (header->kind == CAPTURE_RECORD_METRIC_SET)
        return decode_metric_set(decoder, header, record);
    uint64_t ticks = header->timestamp;
    if (decoder->any_time && ticks < decoder->last_time) {
        /* A send carries its call's ENTER time and comes after what the call recorded meanwhile
         * (otfx/capture_wire.h): it moves up to the record before it. */
        if (header->kind != CAPTURE_RECORD_SEND)
            return fail(decoder, "time goes backwards (record at %llu ns)", (unsigned long long)(ticks));
        ticks = decoder->last_time;
    }
    decoder->any_time = true;
    decoder->last_time = ticks;
    const uint64_t time = record_time(decoder->rank, ticks);
    otfx_ref region = OTFX_REF_NONE;
    /* A nonblocking collective's COLLECTIVE record is followed by its request record (definitions and
     * a drop marker aside): anything else means records were lost or reordered. */
    if (decoder->nbc_pending && header->kind != CAPTURE_RECORD_COLLECTIVE_REQUEST &&
        header->kind != CAPTURE_RECORD_REQUEST_DONE && header->kind != CAPTURE_RECORD_COMM_CREATED &&
        header->kind != CAPTURE_RECORD_COMM_FREED && header->kind != CAPTURE_RECORD_DROPPED)
        return fail(decoder, "the collective record of %s is not followed by its request record",
                    place->setup.functions.names[decoder->nbc_payload.header.function_id]);

    switch ((enum capture_record_kind)header->kind) {
    case CAPTURE_RECORD_ENTER:
        if (decoder->depth == OTFX_MAX_CALL_DEPTH)
            return fail(decoder, "calls nested deeper than %llu", (unsigned long long)(OTFX_MAX_CALL_DEPTH));
        if (!region_of(decoder, header->function_id, &region))
            return false;
        next_event(decoder, OTFX_EV_ENTER, time)->u.region.region = region;
        decoder->depth++;
        if (place->functions[header->function_id].blocking_collective && !decoder->collective_depth) {
            decoder->begin_pending = true;
            decoder->begin_time = time;
            decoder->collective_depth = decoder->depth;
        }
        return true;
    case CAPTURE_RECORD_LEAVE: {
        bool malformed;
        if (!leave_closes_region(decoder, &malformed, "leave", header->function_id))
            return !malformed;
        if (decoder->collective_depth == decoder->depth) {
            /* The collective returned an error and recorded no payload: close it without one. */
            otfx_event *end = next_event(decoder, OTFX_EV_COLL_END, time);
            if (!comm_of(decoder, 0, &end->u.coll.comm))
                return false;
            end->u.coll.op = place->functions[header->function_id].collective_op;
            end->u.coll.root = UINT32_MAX;
            decoder->collective_depth = 0;
        }
        next_event(decoder, OTFX_EV_LEAVE, time);
        decoder->depth--;
        return true;
    }
    case CAPTURE_RECORD_SEND:
    case CAPTURE_RECORD_RECV:
    case CAPTURE_RECORD_RECV_POSTED:
    case CAPTURE_RECORD_PROBE:
    case CAPTURE_RECORD_REQUEST_DONE:
    case CAPTURE_RECORD_COLLECTIVE_REQUEST: {
        struct capture_p2p_record p2p;
        memcpy(&p2p, record, sizeof(p2p));
        return decode_p2p(decoder, &p2p, ticks);
    }
    case CAPTURE_RECORD_COLLECTIVE: {
        struct capture_collective_record collective;
        memcpy(&collective, record, sizeof(collective));
        otfx_ref comm = OTFX_REF_NONE;
        if (!comm_of(decoder, collective.comm_id, &comm))
            return false;
        const struct place_function *function = &place->functions[header->function_id];
        if (decoder->nbc_pending)
            return fail(decoder, "the collective record of %s is not followed by its request record",
                        place->setup.functions.names[decoder->nbc_payload.header.function_id]);
        if (!function->blocking_collective) {
            /* A nonblocking collective's payload: its request record comes next. */
            if (function->role != OTFX_ROLE_MPI_COLLECTIVE)
                return fail(decoder, "collective record of %s, which is no collective",
                            place->setup.functions.names[header->function_id]);
            decoder->nbc_pending = true;
            decoder->nbc_payload = collective;
            return true;
        }
        if (decoder->begin_pending || !decoder->collective_depth) {
            otfx_event *begin =
                next_event(decoder, OTFX_EV_COLL_BEGIN, decoder->begin_pending ? decoder->begin_time : time);
            begin->u.coll.comm = comm;
            begin->u.coll.root = UINT32_MAX;
            begin->u.coll.seq = collective.sequence;
            decoder->begin_pending = false;
        }
        otfx_event *end = next_event(decoder, OTFX_EV_COLL_END, time);
        end->u.coll.seq = collective.sequence;
        end->u.coll.comm = comm;
        end->u.coll.op = place->functions[header->function_id].collective_op;
        end->u.coll.root = collective.root < 0 ? UINT32_MAX : (uint32_t)collective.root;
        end->u.coll.sent = collective.bytes_sent;
        end->u.coll.received = collective.bytes_received;
        decoder->collective_depth = 0;
        return true;
    }
    case CAPTURE_RECORD_PHASE: {
        struct capture_phase_record phase;
        memcpy(&phase, record, sizeof(phase));
        otfx_event *event = next_event(decoder, OTFX_EV_PHASE, time);
        event->u.phase.region = place->phase_region;
        event->u.phase.value = phase.level;
        return true;
    }
    case CAPTURE_RECORD_USER_ENTER:
    case CAPTURE_RECORD_USER_LEAVE: {
        struct capture_user_record user;
        memcpy(&user, record, sizeof(user));
        if (header->kind == CAPTURE_RECORD_USER_LEAVE) {
            bool malformed;
            if (!leave_closes_region(decoder, &malformed, "user-function leave", 0))
                return !malformed;
            next_event(decoder, OTFX_EV_LEAVE, time);
            decoder->depth--;
            return true;
        }
        if (decoder->depth == OTFX_MAX_CALL_DEPTH)
            return fail(decoder, "calls nested deeper than %llu", (unsigned long long)(OTFX_MAX_CALL_DEPTH));
        if (!place_symbols_region(&decoder->rank->symbols, place->defs, user.address, &region))
            return fail(decoder, "cannot define the region of user function 0x%llx",
                        (unsigned long long)user.address);
        next_event(decoder, OTFX_EV_ENTER, time)->u.region.region = region;
        decoder->depth++;
        return true;
    }
    case CAPTURE_RECORD_REGION_BEGIN:
    case CAPTURE_RECORD_REGION_END:
    case CAPTURE_RECORD_NAMED_PHASE: {
        struct capture_user_record user;
        memcpy(&user, record, sizeof(user));
        if (header->kind == CAPTURE_RECORD_REGION_END) {
            bool malformed;
            if (!leave_closes_region(decoder, &malformed, "otfx_region_end", 0))
                return !malformed;
            next_event(decoder, OTFX_EV_LEAVE, time);
            decoder->depth--;
            return true;
        }
        if (header->kind == CAPTURE_RECORD_NAMED_PHASE) {
            if (!named_region(decoder, user.address, OTFX_ROLE_PHASE, &region))
                return false;
            otfx_event *event = next_event(decoder, OTFX_EV_PHASE, time);
            event->u.phase.region = region;
            event->u.phase.value = 0;
            return true;
        }
        if (decoder->depth == OTFX_MAX_CALL_DEPTH)
            return fail(decoder, "calls nested deeper than %llu", (unsigned long long)(OTFX_MAX_CALL_DEPTH));
        if (!named_region(decoder, user.address, OTFX_ROLE_USER_FUNCTION, &region))
            return false;
        next_event(decoder, OTFX_EV_ENTER, time)->u.region.region = region;
        decoder->depth++;
        return true;
    }
    case CAPTURE_RECORD_THROTTLED: {
        struct capture_throttle_record throttle;
        memcpy(&throttle, record, sizeof(throttle));
        if (!place_symbols_region(&decoder->rank->symbols, place->defs, throttle.address, &region))
            return fail(decoder, "cannot define the region of user function 0x%llx",
                        (unsigned long long)throttle.address);
        struct served_rank *rank = decoder->rank;
        const uint32_t thread = decoder->stream->thread;
        uint32_t i = 0;
        while (i < rank->throttled_count &&
               (rank->throttled[i].region != region || rank->throttled[i].thread != thread))
            i++;
        const bool first = i == rank->throttled_count;
        if (first) {
            if (!otfx_reserve_u32((void **)&rank->throttled, &rank->throttled_capacity, (size_t)i + 1,
                                  sizeof(*rank->throttled), 8))
                return fail(decoder, "out of memory for the throttled functions");
            rank->throttled[i] = (struct throttled_function){.thread = thread, .region = region};
            rank->throttled_count++;
        }
        struct throttled_function *function = &rank->throttled[i];
        /* Cumulative counts: what an earlier record already said is not counted again. */
        const uint64_t known = function->staged ? function->staged_skipped : function->skipped;
        if (!first && throttle.skipped <= known)
            return true;
        function->staged = true;
        function->staged_calls = throttle.calls;
        function->staged_mean_ns = throttle.mean_ns;
        function->staged_skipped = throttle.skipped;
        decoder->throttled_staged = true;
        otfx_event *event = next_event(decoder, OTFX_EV_REDUCTION, time);
        event->u.reduction.strategy = OTFX_REDUCE_THROTTLE;
        event->u.reduction.begin = time;
        event->u.reduction.end = time;
        event->u.reduction.events_removed = 2 * (throttle.skipped - known);
        return true;
    }
    case CAPTURE_RECORD_METRICS:
        return decode_metrics(decoder, header, record, time);
    case CAPTURE_RECORD_DROPPED:
        return decode_dropped(decoder, header, record, time);
    case CAPTURE_RECORD_DIED:
        return decode_died(decoder, record, time);
    case CAPTURE_RECORD_NAME:
    case CAPTURE_RECORD_OBJECT: /* handled above */
    case CAPTURE_RECORD_RECORDING:
    case CAPTURE_RECORD_CLOCK:
    case CAPTURE_RECORD_COMM_CREATED: /* handled above */
    case CAPTURE_RECORD_COMM_FREED:
    case CAPTURE_RECORD_OVERHEAD: /* handled above */
    case CAPTURE_RECORD_METRIC_SET:
        return true;
    }
    return true; /* a kind this place does not know: skipped, as the format allows */
}

/* The THROTTLED counts the batch staged: kept with an accepted batch; a rejected one's are forgotten,
 * functions it named first included. */
static void settle_throttled(struct decoder *decoder, bool accepted)
{
    struct served_rank *rank = decoder->rank;
    if (!decoder->throttled_staged && rank->throttled_count == decoder->throttled_before)
        return;
    if (!accepted)
        rank->throttled_count = decoder->throttled_before;
    for (uint32_t i = 0; i < rank->throttled_count; i++) {
        struct throttled_function *function = &rank->throttled[i];
        if (function->staged && accepted) {
            function->calls = function->staged_calls;
            function->mean_ns = function->staged_mean_ns;
            function->skipped = function->staged_skipped;
        }
        function->staged = false;
    }
}

/* Undoes the communicator announcements of a rejected batch: the definitions stay in the place's
 * store (never reduced, unused by any trace), the rank's id → definition map forgets them. */
static void forget_new_comms(struct decoder *decoder)
{
    for (size_t i = 0; i < decoder->new_comm_count; i++)
        decoder->rank->comms[decoder->place->new_comm_ids[i]] = OTFX_REF_NONE;
}

bool place_ingest_records(struct event_place *place, struct served_rank *rank, struct place_stream *stream,
                          const unsigned char *records, size_t bytes, uint64_t *record_count)
{
    struct decoder decoder = {.place = place,
                              .rank = rank,
                              .stream = stream,
                              .last_time = stream->last_time,
                              .last_event_time = stream->last_event_time,
                              .any_time = stream->any_time,
                              .depth = stream->depth,
                              .collective_depth = stream->collective_depth,
                              .begin_pending = stream->begin_pending,
                              .begin_time = stream->begin_time,
                              .recording_resumed = stream->recording_resumed,
                              .resume_floor = stream->resume_floor,
                              .drop_gap_count = stream->drop_gap_count,
                              .nbc_pending = stream->nbc_pending,
                              .nbc_payload = stream->nbc_payload,
                              .metric_set = stream->metric_set,
                              .metric_count = stream->metric_count,
                              .throttled_before = rank->throttled_count};
    memcpy(decoder.metric_refs, stream->metric_refs, sizeof(decoder.metric_refs));
    memcpy(decoder.drop_gaps, stream->drop_gaps, stream->drop_gap_count * sizeof(stream->drop_gaps[0]));
    size_t offset = 0;
    bool ok = true;
    uint64_t intrusion_ps = 0;
    *record_count = 0;
    while (ok && offset < bytes) {
        struct capture_record_header header;
        if (bytes - offset < sizeof(header)) {
            ok = fail(&decoder, "%llu bytes left over after the last record",
                      (unsigned long long)(bytes - offset));
            break;
        }
        memcpy(&header, records + offset, sizeof(header));
        if (header.size < sizeof(header) || header.size > bytes - offset || header.size % 8 != 0) {
            ok = fail(&decoder, "record of impossible size %llu", (unsigned long long)(header.size));
            break;
        }
        /* Two events per record at most; the scratch holds two per smallest record of a full batch. */
        if (decoder.event_count + 2 > place->event_capacity) {
            ok =
                fail(&decoder, "more records than a batch holds (%llu)", (unsigned long long)(*record_count));
            break;
        }
        ok = decode_record(&decoder, &header, records + offset);
        if (ok)
            intrusion_ps += record_cost_ps(rank, &header, records + offset);
        offset += header.size;
        ++*record_count;
    }
    if (!ok) {
        forget_new_comms(&decoder);
        settle_throttled(&decoder, false);
        fprintf(stderr, "otfx-place %d: rank %d thread %u: malformed batch dropped: record %llu: %s\n",
                place->setup.place_rank, rank->rank, stream->thread, (unsigned long long)*record_count,
                decoder.problem);
        return false;
    }
    size_t appended = 0;
    otfx_status status = otfx_trace_append(stream->trace, place->events, decoder.event_count, &appended);
    /* STOPPED: the `stop` strategy counted the events without storing them, as asked. */
    settle_throttled(&decoder, status == OTFX_OK || status == OTFX_ERR_STOPPED);
    if (status != OTFX_OK && status != OTFX_ERR_STOPPED) {
        /* Not expected after the checks above; the trace kept the `appended` events before the bad one. */
        fprintf(stderr, "otfx-place %d: rank %d thread %u: the trace refused event %zu of a batch: %s (%s)\n",
                place->setup.place_rank, rank->rank, stream->thread, appended, otfx_strerror(status),
                otfx_last_error());
        return false;
    }
    rank->intrusion_ps += intrusion_ps;
    const uint32_t depth_before = stream->depth;
    stream->last_time = decoder.last_time;
    stream->last_event_time = decoder.last_event_time;
    stream->any_time = decoder.any_time;
    stream->depth = decoder.depth;
    stream->collective_depth = decoder.collective_depth;
    stream->begin_pending = decoder.begin_pending;
    stream->begin_time = decoder.begin_time;
    stream->recording_resumed = decoder.recording_resumed;
    stream->resume_floor = decoder.resume_floor;
    stream->dropped_leaves += decoder.dropped_leaves;
    memcpy(stream->drop_gaps, decoder.drop_gaps, decoder.drop_gap_count * sizeof(stream->drop_gaps[0]));
    stream->drop_gap_count = decoder.drop_gap_count;
    stream->nbc_pending = decoder.nbc_pending;
    stream->nbc_payload = decoder.nbc_payload;
    stream->metric_set = decoder.metric_set;
    stream->metric_count = decoder.metric_count;
    memcpy(stream->metric_refs, decoder.metric_refs, sizeof(stream->metric_refs));
    if (place->triggers)
        place_triggers_on_batch(place, rank, stream, place->events, decoder.event_count, depth_before);
    return true;
}

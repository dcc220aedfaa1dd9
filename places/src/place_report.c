/*
 * place_report.c — the event place's end-of-run report (otfx/place.h lists its lines): per rank what was
 * received, held, reduced and dropped, the held calls, functions and phases counted from the traces,
 * throttled functions, how the rank ended, its clock and the message pairs checked on the place's time
 * base; and the place's own memory.
 */
#include "event_place_internal.h"
#include "place_triggers.h"

#include <otfx/support/growth.h>
#include <otfx/support/hash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "otfx-place: rank R died of …" for a rank that ended without MPI_Finalize, "… unfinished …" for one
 * still running when a failed job ended. */
static void report_ending(const struct event_place *place, const struct served_rank *rank)
{
    char text[700];
    if (rank->death.died) {
        place_describe_death(place, rank, text, sizeof(text));
        printf("otfx-place: rank %d %s\n", rank->rank, text);
    } else if (!rank->said_goodbye && place->job_failed) {
        printf("otfx-place: rank %d unfinished: still running when the job ended after a failure\n",
               rank->rank);
    }
}

/* Insertion sort by name, once per place: C11's qsort has no context argument for the name table. */
static void sort_by_name(int *order, int count, const char *const *names)
{
    for (int i = 1; i < count; i++) {
        int value = order[i], j = i;
        while (j > 0 && strcmp(names[order[j - 1]], names[value]) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = value;
    }
}

struct enter_counter {
    uint64_t *per_region;
    uint32_t region_count;
};

static int count_enter(const otfx_event *event, void *user)
{
    struct enter_counter *counter = user;
    if (event->type == OTFX_EV_ENTER && event->u.region.region < counter->region_count)
        counter->per_region[event->u.region.region]++;
    else if (event->type == OTFX_EV_PHASE && event->u.phase.region < counter->region_count)
        counter->per_region[event->u.phase.region]++;
    return 0;
}

/* ENTER events per region held in a stream's trace; where reduction removed detail, the profile's
 * visits (exact under reduction) instead. */
static bool count_held_calls(struct place_stream *stream, const otfx_trace_status *status,
                             struct enter_counter *counter)
{
    bool reduced = status->stopped;
    for (int s = 0; s < OTFX_REDUCE_COUNT; s++)
        reduced = reduced || status->events_reduced[s] > 0;
    if (!reduced)
        return otfx_query_events(stream->trace, 0, OTFX_TIME_MAX, false, count_enter, counter) == OTFX_OK;
    otfx_profile *profile = otfx_profile_create();
    if (!profile || otfx_query_profile(stream->trace, 0, OTFX_TIME_MAX, profile) != OTFX_OK) {
        otfx_profile_destroy(profile);
        return false;
    }
    const otfx_profile_entry *entries = otfx_profile_entries(profile);
    for (size_t i = 0; i < otfx_profile_size(profile); i++)
        if (entries[i].region < counter->region_count)
            counter->per_region[entries[i].region] += entries[i].visits;
    otfx_profile_destroy(profile);
    return true;
}

/* Appends " NAME=COUNT" to a growing line; false when out of memory. */
static bool append_text(char **line, size_t *used, size_t *capacity, const char *name,
                        unsigned long long count)
{
    int length = snprintf(NULL, 0, " %s=%llu", name, count);
    if (length < 0)
        return false;
    if (!otfx_reserve((void **)line, capacity, *used + (size_t)length + 2, 1, 256))
        return false;
    snprintf(*line + *used, *capacity - *used, " %s=%llu", name, count);
    *used += (size_t)length;
    return true;
}

struct named_count {
    const char *name;
    uint64_t count;
};

static int compare_named_counts(const void *a, const void *b)
{
    return strcmp(((const struct named_count *)a)->name, ((const struct named_count *)b)->name);
}

/* "otfx-place: rank R held-functions NAME=COUNT …": ENTER events per user-function region (sorted by
 * name), from the same counts as held-calls; "held-phases": PHASE events per phase region (counted only
 * where no reduction removed detail: a profile has no phases). */
static void report_regions(struct event_place *place, struct served_rank *rank,
                           const struct enter_counter *counter, otfx_region_role role, const char *label)
{
    struct named_count *functions =
        calloc(counter->region_count ? counter->region_count : 1, sizeof(*functions));
    size_t capacity = 256, used = 0, count = 0;
    char *line = malloc(capacity);
    if (!functions || !line) {
        fprintf(stderr, "otfx-place %d: rank %d: out of memory for the %s line\n", place->setup.place_rank,
                rank->rank, label);
        free(functions);
        free(line);
        return;
    }
    for (uint32_t region = 0; region < counter->region_count; region++) {
        otfx_region_def def;
        if (counter->per_region[region] && otfx_defs_get_region(place->defs, region, &def) == OTFX_OK &&
            def.role == role)
            functions[count++] = (struct named_count){def.name, counter->per_region[region]};
    }
    qsort(functions, count, sizeof(*functions), compare_named_counts);
    used = (size_t)snprintf(line, capacity, "otfx-place: rank %d %s", rank->rank, label);
    for (size_t i = 0; i < count; i++)
        if (!append_text(&line, &used, &capacity, functions[i].name, (unsigned long long)functions[i].count))
            break;
    line[used++] = '\n';
    line[used] = '\0';
    fputs(line, stdout);
    free(line);
    free(functions);
}

/* "otfx-place: rank R throttled NAME=CALLS/MEAN_NSns/SKIPPED …" when the rank switched functions off. */
static void report_throttled(struct event_place *place, struct served_rank *rank)
{
    if (!rank->throttled_count)
        return;
    size_t capacity = 256;
    char *line = malloc(capacity);
    if (!line)
        return;
    size_t used = (size_t)snprintf(line, capacity, "otfx-place: rank %d throttled", rank->rank);
    for (uint32_t i = 0; i < rank->throttled_count; i++) {
        const struct throttled_function *function = &rank->throttled[i];
        otfx_region_def def;
        if (otfx_defs_get_region(place->defs, function->region, &def) != OTFX_OK)
            continue;
        char text[600];
        snprintf(text, sizeof(text), "%s(calls=%llu,mean_ns=%llu,skipped)", def.name,
                 (unsigned long long)function->calls, (unsigned long long)function->mean_ns);
        if (!append_text(&line, &used, &capacity, text, (unsigned long long)function->skipped))
            break;
    }
    line[used++] = '\n';
    line[used] = '\0';
    fputs(line, stdout);
    free(line);
}

/* Message pairs on the place's time base: every send and receive of the ranks this place serves, paired
 * by their channel (communicator, sender, receiver, tag) and ordinal (otfx_event.u.msg.seq), so a pair is
 * checked only when the place holds both ends — a reduction that removed either leaves the other alone,
 * and ends without an ordinal (0) are not paired. A receive must end (its RECV/IRECV event) after its
 * send started (the SEND/ISEND event, at the ENTER of the call that sent). Counted per receiving rank into
 * its clock line. Memory: the traces are read twice, to count the ends and then to note them in arrays
 * of that size, 24 bytes an end (channels named by an index into a small table). */
struct message_channel {
    otfx_ref comm;
    int32_t src, dst;
    uint32_t tag;
};
struct message_end {
    uint32_t channel; /* index into message_walk.channels */
    uint64_t seq;
    otfx_time time;
};
struct message_walk {
    struct message_end *ends[2]; /* sends, receives; NULL while counting */
    size_t count[2], capacity[2];
    struct message_channel *channels;
    uint32_t channel_count, channel_capacity;
    otfx_hash_index channel_index; /* of `channels` */
    int32_t rank;
    bool failed;
};

static uint64_t channel_hash(const struct message_channel *c)
{
    const uint64_t hash = otfx_hash_mix((uint64_t)c->comm << 32 | (uint32_t)c->src);
    return otfx_hash_mix(hash ^ ((uint64_t)(uint32_t)c->dst << 32 | c->tag));
}

static bool channel_is(const void *channels, size_t index, const void *channel)
{
    const struct message_channel *known = &((const struct message_channel *)channels)[index], *c = channel;
    return known->comm == c->comm && known->src == c->src && known->dst == c->dst && known->tag == c->tag;
}

static uint64_t channel_hash_at(const void *channels, size_t index)
{
    return channel_hash(&((const struct message_channel *)channels)[index]);
}

/* The channel's index, added when new; UINT32_MAX when out of memory. */
static uint32_t channel_index(struct message_walk *walk, const struct message_channel *channel)
{
    const uint64_t hash = channel_hash(channel);
    const size_t known = otfx_hash_find(&walk->channel_index, hash, channel_is, walk->channels, channel);
    if (known != OTFX_HASH_NONE)
        return (uint32_t)known;
    /* 32-bit capacity: every index stays below UINT32_MAX */
    if (!otfx_reserve_u32((void **)&walk->channels, &walk->channel_capacity, (size_t)walk->channel_count + 1,
                          sizeof(*walk->channels), 32) ||
        !otfx_hash_insert(&walk->channel_index, hash, walk->channel_count, channel_hash_at, walk->channels))
        return UINT32_MAX;
    walk->channels[walk->channel_count] = *channel;
    return walk->channel_count++;
}

static int collect_message(const otfx_event *event, void *user)
{
    struct message_walk *walk = user;
    const bool sent = event->type == OTFX_EV_SEND || event->type == OTFX_EV_ISEND;
    if ((!sent && event->type != OTFX_EV_RECV && event->type != OTFX_EV_IRECV) || event->u.msg.seq == 0)
        return 0;
    const int which = sent ? 0 : 1;
    if (!walk->ends[which]) { /* the counting read */
        walk->capacity[which]++;
        return 0;
    }
    if (walk->count[which] == walk->capacity[which])
        return 0; /* the trace grew since it was counted */
    const int32_t peer = (int32_t)event->u.msg.peer;
    const struct message_channel channel = {event->u.msg.comm, sent ? walk->rank : peer,
                                            sent ? peer : walk->rank, event->u.msg.tag};
    const uint32_t index = channel_index(walk, &channel);
    if (index == UINT32_MAX) {
        walk->failed = true;
        return 1;
    }
    walk->ends[which][walk->count[which]++] = (struct message_end){index, event->u.msg.seq, event->time};
    return 0;
}

static int compare_ends(const void *a, const void *b)
{
    const struct message_end *x = a, *y = b;
    if (x->channel != y->channel)
        return x->channel < y->channel ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void walk_traces(struct event_place *place, struct message_walk *walk)
{
    for (int r = 0; r < place->setup.served_count && !walk->failed; r++) {
        struct served_rank *rank = &place->ranks[r];
        walk->rank = rank->rank;
        for (uint32_t t = 0; t < rank->stream_capacity; t++) {
            if (rank->streams[t])
                otfx_query_events(rank->streams[t]->trace, 0, OTFX_TIME_MAX, false, collect_message, walk);
        }
    }
}

static void check_message_pairs(struct event_place *place)
{
    struct message_walk walk = {0};
    walk_traces(place, &walk);
    for (int side = 0; side < 2; side++) {
        walk.ends[side] =
            malloc((walk.capacity[side] ? walk.capacity[side] : 1) * sizeof(struct message_end));
        walk.failed = walk.failed || !walk.ends[side];
    }
    if (!walk.failed)
        walk_traces(place, &walk);
    if (!walk.failed) {
        for (int side = 0; side < 2; side++) {
            if (walk.count[side] > 1) /* qsort must not see the NULL of an empty list */
                qsort(walk.ends[side], walk.count[side], sizeof(struct message_end), compare_ends);
        }
        size_t i = 0, j = 0;
        while (i < walk.count[0] && j < walk.count[1]) {
            const struct message_end *send = &walk.ends[0][i], *recv = &walk.ends[1][j];
            const int order = compare_ends(send, recv);
            if (order < 0) {
                i++;
            } else if (order > 0) {
                j++;
            } else {
                const int32_t dst = walk.channels[recv->channel].dst - place->setup.first_served;
                if (dst >= 0 && dst < place->setup.served_count) {
                    place->ranks[dst].pairs_checked++;
                    if (recv->time < send->time) {
                        struct served_rank *receiver = &place->ranks[dst];
                        receiver->pairs_inverted++;
                        if (send->time - recv->time > receiver->worst_inversion_ns)
                            receiver->worst_inversion_ns = send->time - recv->time;
                    }
                }
                i++;
                j++;
            }
        }
    }
    free(walk.ends[0]);
    free(walk.ends[1]);
    free(walk.channels);
    otfx_hash_free(&walk.channel_index);
}

/* "otfx-place: rank R clock timer=tsc|monotonic ns_per_tick=INIT final_ns_per_tick=FINAL
 * drift_ns=D init_offset_ns=O1 final_offset_ns=O2 ... residual_ns=E ... residual_bound_ns=B
 * residual_in_bound=yes|no|unknown": D is how far the finalize reference lies from where MPI_Init's
 * calibration puts it (0 for CLOCK_MONOTONIC); O1 and O2 the rank's clock offsets to this place.
 * Stored times carry D plus O2 - O1 of error at the end of the run: only O1 is applied. E compares the
 * model with O2, and both come from ping-pongs, each off by up to half its round trip: on a busy node
 * round trips take hundreds of µs, so E is only meaningful against B, what those round trips allow
 * (-1 and unknown without re-synchronisations: the calibration's rate error is not bounded then). */
static void report_clock(const struct served_rank *rank)
{
    if (!rank->clock_known)
        return;
    double drift = 0, residual = 0, bound = -1;
    if (rank->clock_final_known) {
        const double ticks = (double)rank->final_ref_ticks - (double)rank->ref_ticks;
        drift = (double)rank->final_ref_ns - ((double)rank->ref_ns + ticks * rank->ns_per_tick);
        /* Where the place's model puts the rank's MPI_Finalize reference point, against where it is on
         * the place's clock: the timestamps' error at the end of the run. */
        residual = place_clock_local(rank, rank->final_ref_ticks) +
                   place_clock_correction(rank, rank->final_ref_ticks) -
                   ((double)rank->final_ref_ns + (double)rank->final_offset_ns);
        const double model_bound = place_clock_error_bound(rank, rank->final_ref_ticks);
        if (model_bound >= 0)
            bound = model_bound + 0.5 * (double)rank->final_offset_round_trip_ns;
    }
    /* Integers compared, as printed: a residual rounded to the bound is within it. */
    const long long residual_ns = (long long)(residual < 0 ? residual - 0.5 : residual + 0.5);
    long long bound_ns = -1;
    if (bound >= 0) { /* rounded up */
        bound_ns = (long long)bound;
        if ((double)bound_ns < bound)
            bound_ns++;
    }
    char line[512];
    snprintf(line, sizeof(line),
             "otfx-place: rank %d clock timer=%s ns_per_tick=%.9f final_ns_per_tick=%.9f drift_ns=%lld "
             "init_offset_ns=%lld final_offset_ns=%lld clock_syncs=%llu residual_ns=%lld pairs_checked=%llu "
             "recv_end_before_send_start=%llu worst_inversion_ns=%llu residual_bound_ns=%lld "
             "residual_in_bound=%s\n",
             rank->rank, rank->clock_tsc ? "tsc" : "monotonic", rank->ns_per_tick,
             rank->clock_final_known ? rank->final_ns_per_tick : rank->ns_per_tick,
             (long long)(drift < 0 ? drift - 0.5 : drift + 0.5), (long long)rank->offset_ns,
             (long long)(rank->clock_final_known ? rank->final_offset_ns : rank->offset_ns),
             (unsigned long long)rank->clock_syncs, residual_ns, (unsigned long long)rank->pairs_checked,
             (unsigned long long)rank->pairs_inverted, (unsigned long long)rank->worst_inversion_ns, bound_ns,
             bound_ns < 0                     ? "unknown"
             : llabs(residual_ns) <= bound_ns ? "yes"
                                              : "no");
    fputs(line, stdout);
}

/* What recording cost the rank, as estimated from its measured cost per record (docs/analyses.md). */
static void report_overhead(const struct served_rank *rank)
{
    if (!rank->overhead_known) {
        printf("otfx-place: rank %d overhead measured=0\n", rank->rank);
        return;
    }
    const uint64_t *cost = rank->record_cost_ps;
    const uint64_t injected_ps = (uint64_t)rank->injected_ns * 1000u;
    printf("otfx-place: rank %d overhead measured=1 measurements=%u intrusion_ns=%llu injected_ns=%u "
           "enter_ps=%llu "
           "leave_ps=%llu "
           "p2p_ps=%llu collective_ps=%llu user_ps=%llu\n",
           rank->rank, rank->overhead_measurements, (unsigned long long)(rank->intrusion_ps / 1000u),
           rank->injected_ns, (unsigned long long)(cost[CAPTURE_RECORD_ENTER] - injected_ps),
           (unsigned long long)(cost[CAPTURE_RECORD_LEAVE] - injected_ps),
           (unsigned long long)(cost[CAPTURE_RECORD_RECV] - injected_ps),
           (unsigned long long)(cost[CAPTURE_RECORD_COLLECTIVE] - injected_ps),
           (unsigned long long)(cost[CAPTURE_RECORD_USER_ENTER] - injected_ps));
}

static void report_rank(struct event_place *place, struct served_rank *rank, const int *by_name)
{
    otfx_trace_status total = {0};
    uint64_t reduced = 0, dropped = rank->rejected_records, blocked_ns = 0;
    const uint32_t region_count = otfx_defs_count_regions(place->defs);
    struct enter_counter counter = {calloc(region_count ? region_count : 1, sizeof(uint64_t)), region_count};
    bool counted = counter.per_region != NULL;
    for (uint32_t t = 0; t < rank->stream_capacity; t++) {
        struct place_stream *stream = rank->streams[t];
        otfx_trace_status status;
        if (!stream || otfx_trace_status_get(stream->trace, &status) != OTFX_OK)
            continue;
        total.events_received += status.events_received;
        total.events_held += status.events_held;
        total.bytes_used += status.bytes_used;
        total.bytes_open += status.bytes_open;
        total.budget_bytes += status.budget_bytes;
        total.structure_bytes += status.structure_bytes;
        for (int s = 0; s < OTFX_REDUCE_COUNT; s++) {
            /* Reduction strategies thin what was stored; stop and the drops before the trace lose it. */
            if (s == OTFX_REDUCE_STOP || s == OTFX_REDUCE_SOURCE_DROP || s == OTFX_REDUCE_THROTTLE)
                dropped += status.events_reduced[s];
            else
                reduced += status.events_reduced[s];
        }
        blocked_ns += stream->blocked_ns;
        if (counted)
            counted = count_held_calls(stream, &status, &counter);
    }
    char report[512];
    snprintf(report, sizeof(report),
             "otfx-place: rank %d events received=%llu held=%llu reduced=%llu dropped=%llu blocked_ns=%llu "
             "bytes_used=%zu/%zu bytes_open=%zu structure_bytes=%zu\n",
             rank->rank, (unsigned long long)total.events_received, (unsigned long long)total.events_held,
             (unsigned long long)reduced, (unsigned long long)dropped, (unsigned long long)blocked_ns,
             total.bytes_used, total.budget_bytes, total.bytes_open, total.structure_bytes);
    fputs(report, stdout);
    report_overhead(rank);
    report_ending(place, rank);
    report_clock(rank);
    if (rank->rejected_batches || rank->lost_batches)
        fprintf(stderr, "otfx-place %d: rank %d: %llu malformed batches dropped, %llu batches lost\n",
                place->setup.place_rank, rank->rank, (unsigned long long)rank->rejected_batches,
                (unsigned long long)rank->lost_batches);

    size_t capacity = 256, used = 0;
    char *line = malloc(capacity);
    if (!counted || !line) {
        fprintf(stderr, "otfx-place %d: rank %d: could not count the held calls: %s\n",
                place->setup.place_rank, rank->rank, otfx_last_error());
        free(line);
        free(counter.per_region);
        return;
    }
    used = (size_t)snprintf(line, capacity, "otfx-place: rank %d held-calls", rank->rank);
    for (int i = 0; i < place->setup.functions.count; i++) {
        const struct place_function *function = &place->functions[by_name[i]];
        if (function->region == OTFX_REF_NONE || function->region >= region_count ||
            !counter.per_region[function->region])
            continue;
        if (!append_text(&line, &used, &capacity, place->setup.functions.names[by_name[i]],
                         (unsigned long long)counter.per_region[function->region]))
            break;
    }
    /* One write per line, so that lines of different places do not mix in mpiexec's output. */
    line[used++] = '\n';
    line[used] = '\0';
    fputs(line, stdout);
    free(line);
    report_regions(place, rank, &counter, OTFX_ROLE_USER_FUNCTION, "held-functions");
    report_regions(place, rank, &counter, OTFX_ROLE_PHASE, "held-phases");
    report_throttled(place, rank);
    free(counter.per_region);
}

void place_print_report(struct event_place *place)
{
    if (place->reported)
        return;
    place->reported = true;
    const otfx_event_place_setup *setup = &place->setup;
    int *by_name = malloc(sizeof(int) * (size_t)(setup->functions.count > 0 ? setup->functions.count : 1));
    if (by_name) {
        for (int i = 0; i < setup->functions.count; i++)
            by_name[i] = i;
        sort_by_name(by_name, setup->functions.count, setup->functions.names);
        check_message_pairs(place);
        for (int r = 0; r < setup->served_count; r++)
            report_rank(place, &place->ranks[r], by_name);
        free(by_name);
    }
    place_triggers_report(place);
    size_t budget_total = 0;
    unsigned traces = 0;
    for (int r = 0; r < setup->served_count; r++)
        for (uint32_t t = 0; t < place->ranks[r].stream_capacity; t++)
            if (place->ranks[r].streams[t]) {
                traces++;
                budget_total += place->trace_config.budget_bytes;
            }
    printf("otfx-place %d: memory vmhwm_kib=%llu at_start_kib=%llu traces=%u budget_total_kib=%zu "
           "defs_kib=%zu\n",
           setup->place_rank, (unsigned long long)place_vm_hwm_kib(),
           (unsigned long long)place->start_hwm_kib, traces, budget_total / 1024,
           otfx_defs_bytes(place->defs) / 1024);
    fflush(stdout);
}

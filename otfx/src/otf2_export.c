/* otf2_export.c — writes otfx traces as one OTF2 archive (serial, POSIX, uncompressed): the entry points,
 * their arguments and sizes, and the exchanges between the processes of a shared export. The other
 * parts of the export are listed in otf2_export_internal.h. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

otfx_export_options otfx_export_options_default(void)
{
    return (otfx_export_options){.from = 0, .to = OTFX_TIME_MAX, .overwrite = false, .creator = NULL};
}

/* ---------------------------------------------------------------------------------------------
 * Arguments and the sizes of the archive's chunks
 * -------------------------------------------------------------------------------------------- */

static otfx_status check_arguments(const char *directory, const char *name, otfx_defs *defs,
                                   otfx_trace *const *traces, size_t trace_count,
                                   const otfx_export_options *options)
{
    if (!directory || !*directory || !name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: needs a directory and an archive name without '/'");
    if (!defs || (trace_count > 0 && !traces) || !options)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: needs definitions, traces and options");
    if (options->from >= options->to)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: empty window [%llu, %llu)",
                         (unsigned long long)options->from, (unsigned long long)options->to);
    for (size_t t = 0; t < trace_count; t++) {
        if (!traces[t] || otfx_trace_defs(traces[t]) != defs)
            return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: trace %zu does not use the given definitions",
                             t);
        for (size_t u = 0; u < t; u++)
            if (otfx_trace_location(traces[u]) == otfx_trace_location(traces[t]))
                return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: traces %zu and %zu record the same location",
                                 u, t);
    }
    return OTFX_OK;
}

/* Members of the largest group this process knows of: the MPI location group (one member per world
 * rank) or its largest communicator. */
static otfx_status group_members(otfx_defs *defs, otfx_trace *const *traces, size_t trace_count,
                                 uint64_t *members)
{
    *members = 0;
    uint32_t comms = otfx_defs_count_comms(defs);
    for (uint32_t c = 0; c < comms; c++) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(defs, c, &def));
        if (def.size > *members)
            *members = def.size;
        for (uint32_t i = 0; i < def.size; i++)
            if ((uint64_t)def.world_ranks[i] + 1 > *members)
                *members = (uint64_t)def.world_ranks[i] + 1;
    }
    for (size_t t = 0; t < trace_count; t++) {
        otfx_location_def where = {0};
        OTFX_TRY(otfx_defs_get_location(defs, otfx_trace_location(traces[t]), &where));
        if ((uint64_t)where.rank + 1 > *members)
            *members = (uint64_t)where.rank + 1;
    }
    return OTFX_OK;
}

/* The definition chunk size: a record must fit in one chunk, and the largest is the Group of the
 * largest group (every process uses the same size: readers read every file with the anchor's).
 * Readers allocate (and clear) a chunk per definition file they read, so it is no larger than that
 * needs while the definitions fit in OTF2's file buffer; beyond, it is the buffer's size
 * (OTF2_FILE_BUFFER_BYTES says why), which is OTF2's default. */
static otfx_status definition_chunk_bytes(uint64_t members, uint64_t definition_bytes, uint64_t *bytes)
{
    uint64_t needed = members * GROUP_MEMBER_BYTES + GROUP_RECORD_SLACK;
    if (members > OTF2_CHUNK_SIZE_MAX / GROUP_MEMBER_BYTES || needed > OTF2_CHUNK_SIZE_MAX)
        return otfx_fail(OTFX_ERR_INVALID,
                         "OTF2 export: a group of %llu members does not fit in an OTF2 definition chunk",
                         (unsigned long long)members);
    *bytes = definition_bytes < DEFINITIONS_IN_BUFFER ? OTF2_CHUNK_SIZE_MIN : OTF2_FILE_BUFFER_BYTES;
    while (*bytes < needed)
        *bytes *= 2;
    return OTFX_OK;
}

/* An upper bound of the bytes a store's definitions take in OTF2 definition files (every record at the
 * largest encoding of its fields, strings whole, mapping table entries included): the global definitions
 * of the union of every process's stores, and each process's local definitions, stay below the sum. */
static otfx_status definition_bytes_bound(otfx_defs *defs, uint64_t *bytes)
{
    uint64_t total = DEFINITION_FIXED_BYTES;
    const uint32_t strings = otfx_defs_count_strings(defs);
    for (uint32_t i = 0; i < strings; i++) {
        const char *text = NULL;
        OTFX_TRY(otfx_defs_get_string(defs, i, &text));
        total += DEFINITION_RECORD_BYTES + strlen(text);
    }
    const uint32_t regions = otfx_defs_count_regions(defs);
    for (uint32_t i = 0; i < regions; i++) {
        otfx_region_def def = {0};
        OTFX_TRY(otfx_defs_get_region(defs, i, &def));
        total += 3 * DEFINITION_RECORD_BYTES + strlen(def.name);
    }
    const uint32_t comms = otfx_defs_count_comms(defs);
    for (uint32_t i = 0; i < comms; i++) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(defs, i, &def));
        total += 4 * DEFINITION_RECORD_BYTES + strlen(def.name) + (uint64_t)def.size * GROUP_MEMBER_BYTES;
    }
    const uint32_t metrics = otfx_defs_count_metrics(defs);
    for (uint32_t i = 0; i < metrics; i++) {
        otfx_metric_def def = {0};
        OTFX_TRY(otfx_defs_get_metric(defs, i, &def));
        total += 4 * DEFINITION_RECORD_BYTES + strlen(def.name) + strlen(def.unit ? def.unit : "");
    }
    total += (uint64_t)otfx_defs_count_locations(defs) * DEFINITION_LOCATION_BYTES;
    *bytes = total;
    return OTFX_OK;
}

/* ---------------------------------------------------------------------------------------------
 * What the processes of a shared export tell each other. Every exchange is an allgather (one process:
 * a copy); every contribution starts with the process's status and message, so a failure anywhere
 * is known everywhere and every process takes the same path through OTF2's collective calls.
 *   1. before the archive is created: arguments, the existing archive (master), group sizes;
 *   2. after the events: clock range, locations with their record counts, definitions;
 *   3. after the archive was closed: whether the definitions were written.
 * -------------------------------------------------------------------------------------------- */

typedef struct shared_run {
    const otfx_otf2_collective *collective; /* NULL: one process, serial OTF2 collectives */
    uint32_t size, rank;
} shared_run;

typedef struct gathered {
    unsigned char *all;
    size_t *sizes;
    otfx_byte_reader *parts; /* per process, just after its status */
} gathered;

static void gathered_free(gathered *g)
{
    free(g->all);
    free(g->sizes);
    free(g->parts);
    *g = (gathered){0};
}

static void put_status(otfx_bytes *bytes, otfx_status status)
{
    otfx_bytes_u32(bytes, (uint32_t)status);
    otfx_bytes_text(bytes, status == OTFX_OK ? "" : otfx_last_error());
}

/* Exchanges `mine` and returns the first failure any process reported (OTFX_OK when none). */
static otfx_status exchange(const shared_run *run, const otfx_bytes *mine, gathered *g)
{
    *g = (gathered){0};
    if (mine->out_of_memory)
        return out_of_memory(); /* would leave the others waiting: the process is in trouble anyway */
    g->sizes = calloc(run->size, sizeof *g->sizes);
    g->parts = calloc(run->size, sizeof *g->parts);
    if (!g->sizes || !g->parts)
        return out_of_memory();
    if (!run->collective) {
        g->all = malloc(mine->size ? mine->size : 1);
        if (!g->all)
            return out_of_memory();
        if (mine->size)
            memcpy(g->all, mine->data, mine->size);
        g->sizes[0] = mine->size;
    } else {
        void *all = NULL;
        if (run->collective->allgather(mine->data, mine->size, &all, g->sizes, run->collective->user) != 0) {
            free(all);
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: the processes could not exchange their data");
        }
        g->all = all;
    }
    otfx_status first = OTFX_OK;
    size_t offset = 0;
    for (uint32_t p = 0; p < run->size; p++) {
        g->parts[p] = (otfx_byte_reader){g->all + offset, g->sizes[p], false};
        offset += g->sizes[p];
        otfx_status status = (otfx_status)otfx_read_u32(&g->parts[p]);
        const char *message = otfx_read_text(&g->parts[p]);
        if (g->parts[p].bad)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed data from process %u", p);
        if (status == OTFX_OK || first != OTFX_OK)
            continue;
        first = status;
        if (p == run->rank)
            otfx_fail(status, "%s", message);
        else
            otfx_fail(status, "OTF2 export: process %u failed: %s", p, message);
    }
    return first;
}

/* Exchange 2 on this process: its clock range, locations and definitions. */
static otfx_status describe_part(exporter *x, otfx_status status, otfx_bytes *mine)
{
    put_status(mine, status);
    if (status != OTFX_OK)
        return OTFX_OK;
    otfx_bytes_u32(mine, x->any_time);
    otfx_bytes_u64(mine, x->earliest);
    otfx_bytes_u64(mine, x->latest);
    otfx_bytes_u32(mine, (uint32_t)x->own_count);
    for (size_t l = 0; l < x->own_count; l++) {
        otfx_bytes_u32(mine, x->own[l].rank);
        otfx_bytes_u32(mine, x->own[l].thread);
        otfx_bytes_u64(mine, x->own[l].events);
    }
    otfx_status written = otfx_otf2_defs_write(x->defs, mine);
    if (written != OTFX_OK) {
        /* Still tell the others: a contribution that says so. */
        char message[512];
        snprintf(message, sizeof message, "%s", otfx_last_error());
        otfx_bytes_free(mine);
        put_status(mine, otfx_fail(written, "%s", message));
    }
    return OTFX_OK;
}

/* After exchange 2: every process's clock range and locations, the union of the definitions and this
 * process's map into it. */
static otfx_status unify(exporter *x, const shared_run *run, gathered *g)
{
    x->global_defs = otfx_defs_create();
    if (!x->global_defs)
        return out_of_memory();
    x->any_time = false;
    x->location_count = 0;
    for (uint32_t p = 0; p < run->size; p++) {
        otfx_byte_reader *in = &g->parts[p];
        bool any_time = otfx_read_u32(in) != 0;
        otfx_time earliest = otfx_read_u64(in), latest = otfx_read_u64(in);
        if (any_time) {
            if (!x->any_time || earliest < x->earliest)
                x->earliest = earliest;
            if (!x->any_time || latest > x->latest)
                x->latest = latest;
            x->any_time = true;
        }
        uint32_t locations = otfx_read_u32(in);
        for (uint32_t l = 0; l < locations && !in->bad; l++) {
            uint32_t rank = otfx_read_u32(in), thread = otfx_read_u32(in);
            uint64_t events = otfx_read_u64(in);
            if (!in->bad)
                OTFX_TRY(export_add_location(x, rank, thread, events, false));
        }
        if (in->bad)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed data from process %u", p);
        OTFX_TRY(otfx_otf2_defs_merge(in, x->global_defs, p == run->rank ? &x->map : NULL));
    }
    otfx_otf2_sort(x->locations, x->location_count, sizeof *x->locations, export_compare_locations);
    for (size_t l = 1; l < x->location_count; l++)
        if (export_compare_locations(&x->locations[l - 1], &x->locations[l]) == 0)
            return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: rank %u thread %u is exported by two processes",
                             x->locations[l].rank, x->locations[l].thread);
    x->map_identity = otfx_otf2_def_map_is_identity(&x->map);
    return OTFX_OK;
}

/* A failed system call OTF2 went on after (otfx_otf2_system_error): the step failed all the same. */
static otfx_status system_error_of(const char *what)
{
    char where[512] = "";
    const int value = otfx_otf2_system_error(where, sizeof where);
    if (!value)
        return OTFX_OK;
    return otfx_fail(OTFX_ERR_IO, "OTF2 export: %s: %s%s%s", what, where, where[0] ? ": " : "",
                     strerror(value));
}

static otfx_status open_event_files(exporter *x, const otfx_export_options *options)
{
    OTF2_TRY(OTF2_Archive_SetFlushCallbacks(x->archive, &otfx_otf2_flush_always, NULL),
             "setting up the archive");
    OTF2_TRY(OTF2_Archive_SetCreator(x->archive, options->creator ? options->creator : "otfx"),
             "setting the creator");
    char description[96];
    snprintf(description, sizeof description, "otfx export of [%llu, %llu) ns",
             (unsigned long long)options->from, (unsigned long long)options->to);
    OTF2_TRY(OTF2_Archive_SetDescription(x->archive, description), "setting the description");
    OTF2_TRY(OTF2_Archive_OpenEvtFiles(x->archive), "opening the event files");
    return OTFX_OK;
}

/* After exchange 2: definitions written in chunks smaller than OTF2's file buffer must stay below it
 * (OTF2_FILE_BUFFER_BYTES says why): the stores may have grown since the archive was opened. */
static otfx_status definitions_still_fit(exporter *x)
{
    if (x->definition_chunk >= OTF2_FILE_BUFFER_BYTES)
        return OTFX_OK;
    uint64_t bytes = 0;
    OTFX_TRY(definition_bytes_bound(x->global_defs, &bytes));
    bytes += (uint64_t)x->location_count * DEFINITION_LOCATION_BYTES;
    if (bytes < OTF2_FILE_BUFFER_BYTES)
        return OTFX_OK;
    return otfx_fail(OTFX_ERR_INVALID,
                     "OTF2 export: the definitions grew from under %u to %llu bytes while the archive was "
                     "written, more than its definition chunks allow: export again",
                     (unsigned)DEFINITIONS_IN_BUFFER, (unsigned long long)bytes);
}

/* Keeps the first failure: later steps still run their collective parts. */
static void keep_first(otfx_status *status, otfx_status next)
{
    if (*status == OTFX_OK)
        *status = next;
}

static otfx_status otf2_step(OTF2_ErrorCode code, const char *what)
{
    return code == OTF2_SUCCESS ? OTFX_OK : otfx_otf2_fail_call(code, "OTF2 export: %s", what);
}

/* Which messages the archive gets (otf2_pairing.h): this process's channel ends are exchanged with every
 * process's — on every process, whatever failed before — and each process keeps the ends whose other
 * end is held somewhere. Returns this process's status. */
static otfx_status pair_messages(exporter *x, const shared_run *run, otfx_status status,
                                 prepared_trace *prepared, size_t trace_count)
{
    otfx_bytes mine = {0};
    put_status(&mine, status);
    if (status == OTFX_OK) {
        otfx_status written = otfx_pairing_write(x->pairing, x->defs, &mine);
        if (written != OTFX_OK) {
            char message[512];
            snprintf(message, sizeof message, "%s", otfx_last_error());
            otfx_bytes_free(&mine);
            put_status(&mine, otfx_fail(written, "%s", message));
        }
    }
    gathered g;
    otfx_status agreed = exchange(run, &mine, &g);
    otfx_bytes_free(&mine);
    if (agreed == OTFX_OK)
        agreed = otfx_pairing_decide(x->pairing, g.parts, run->size, run->rank);
    gathered_free(&g);
    keep_first(&status, agreed);
    /* The second read of this process's traces: the requests of the messages left out, and the plan. */
    const bool dropped = status == OTFX_OK && otfx_pairing_needs_dropped(x->pairing);
    for (size_t t = 0; status == OTFX_OK && t < trace_count; t++)
        status = export_plan_trace(&prepared[t].te, prepared[t].copy, dropped);
    if (status == OTFX_OK && x->master) {
        /* Readers that know no otfx attribute still see that messages were left out, and how many. */
        char unpaired[32];
        snprintf(unpaired, sizeof unpaired, "%llu",
                 (unsigned long long)otfx_pairing_unpaired_everywhere(x->pairing));
        status = otf2_step(OTF2_Archive_SetProperty(x->archive, "OTFX::UNPAIRED_MESSAGES", unpaired, true),
                           "setting the archive's properties");
        snprintf(unpaired, sizeof unpaired, "%llu",
                 (unsigned long long)otfx_pairing_collectives_left_out_everywhere(x->pairing));
        if (status == OTFX_OK)
            status = otf2_step(
                OTF2_Archive_SetProperty(x->archive, "OTFX::INCOMPLETE_COLLECTIVES", unpaired, true),
                "setting the archive's properties");
    }
    return status;
}

/* After a round that published changes: when on every process the next round would compute what this
 * one did (otfx_clock_round_repeatable), it would publish nothing, and the traces need not be read for
 * it. The same answer on every process. */
static otfx_status settle_repeated(exporter *x, const shared_run *run, bool *settled)
{
    otfx_bytes mine = {0};
    put_status(&mine, OTFX_OK);
    otfx_bytes_u32(&mine, otfx_clock_round_repeatable(x->clock));
    gathered g;
    otfx_status agreed = exchange(run, &mine, &g);
    otfx_bytes_free(&mine);
    bool repeatable = true;
    for (uint32_t p = 0; agreed == OTFX_OK && p < run->size; p++) {
        repeatable = otfx_read_u32(&g.parts[p]) != 0 && repeatable;
        if (g.parts[p].bad)
            agreed = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed clock state from process %u", p);
    }
    gathered_free(&g);
    if (agreed == OTFX_OK && repeatable) {
        otfx_clock_settle_repeated(x->clock);
        *settled = true;
    }
    return agreed;
}

/* The receives that would end before their sends began are moved (otf2_clock_condition.h): rounds of
 * a pass over this process's traces and an exchange of the send times that changed, until none changed
 * anywhere or the rounds run out. On every process, whatever failed before (each round's exchange says
 * so). Process 0 records the result in the archive's properties. Returns this process's status. */
static otfx_status correct_clocks(exporter *x, const shared_run *run, otfx_status status,
                                  prepared_trace *prepared, size_t trace_count)
{
    /* Without a message end that has a channel, every event keeps its time and no send is published:
     * the round's read would change nothing, and this process only takes part in the exchanges. */
    const bool named = status == OTFX_OK && otfx_pairing_any_channel(x->pairing);
    for (uint32_t round = 0; round < CLOCK_MAX_ROUNDS; round++) {
        otfx_clock_round_begin(x->clock);
        for (size_t t = 0; status == OTFX_OK && named && t < trace_count; t++)
            status = export_run_pass(&prepared[t].te, prepared[t].copy, PASS_CLOCK);
        otfx_bytes mine = {0};
        put_status(&mine, status);
        if (status == OTFX_OK)
            otfx_clock_write_round(x->clock, &mine);
        gathered g;
        otfx_status agreed = exchange(run, &mine, &g);
        otfx_bytes_free(&mine);
        bool settled = false;
        if (agreed == OTFX_OK)
            agreed = otfx_clock_read_round(x->clock, g.parts, run->size, run->rank, &settled);
        gathered_free(&g);
        keep_first(&status, agreed);
        if (status == OTFX_OK && !settled && round + 1 < CLOCK_MAX_ROUNDS)
            status = settle_repeated(x, run, &settled);
        if (status != OTFX_OK || settled)
            break; /* every process reads the same parts: all of them stop at the same round */
    }
    otfx_clock_settle(x->clock);
    if (status == OTFX_OK && x->master) {
        const struct {
            const char *name;
            uint64_t value;
        } properties[] = {{"OTFX::CLOCK_CORRECTED_EVENTS", otfx_clock_events_moved(x->clock)},
                          {"OTFX::CLOCK_MAX_CORRECTION_NS", otfx_clock_max_correction(x->clock)},
                          {"OTFX::CLOCK_UNRESOLVED_MESSAGES", otfx_clock_unresolved(x->clock)}};
        for (size_t p = 0; status == OTFX_OK && p < sizeof properties / sizeof *properties; p++) {
            char value[32];
            snprintf(value, sizeof value, "%llu", (unsigned long long)properties[p].value);
            status = otf2_step(OTF2_Archive_SetProperty(x->archive, properties[p].name, value, true),
                               "setting the archive's properties");
        }
    }
    return status;
}

/* Everything after exchange 1. `status` says whether the archive was created here; the exchanges
 * happen on every process whatever failed. Returns this process's status. */
static otfx_status write_shared_archive(exporter *x, const shared_run *run, otfx_status status,
                                        otfx_trace *const *traces, size_t trace_count,
                                        const otfx_export_options *options)
{
    bool opened = status == OTFX_OK;
    if (status == OTFX_OK && run->collective) {
        if (run->collective->archive_opened(x->archive, run->collective->user) != 0) {
            /* OTF2 creates the archive's directory there */
            status = system_error_of("creating the archive");
            if (status == OTFX_OK)
                status = otfx_fail(OTFX_ERR_OTF2, "OTF2 export: installing the collective callbacks failed");
        }
    } else if (status == OTFX_OK) {
        status = otf2_step(OTF2_Archive_SetSerialCollectiveCallbacks(x->archive), "setting up the archive");
    }
    if (status == OTFX_OK)
        status = open_event_files(x, options);
    opened = opened && status == OTFX_OK;
    prepared_trace *prepared = NULL;
    if (status == OTFX_OK)
        status = export_prepare_traces(x, traces, trace_count, options, &prepared);
    status = pair_messages(x, run, status, prepared, trace_count);
    status = correct_clocks(x, run, status, prepared, trace_count);
    if (status == OTFX_OK)
        status = export_traces(x, prepared, trace_count);
    export_free_prepared(prepared, trace_count);
    if (status == OTFX_OK)
        status = system_error_of("writing the event files");

    otfx_bytes mine = {0};
    describe_part(x, status, &mine);
    gathered g;
    otfx_status agreed = exchange(run, &mine, &g);
    otfx_bytes_free(&mine);
    if (agreed == OTFX_OK)
        agreed = unify(x, run, &g);
    gathered_free(&g);
    if (agreed == OTFX_OK)
        agreed = definitions_still_fit(x); /* the same union on every process */
    keep_first(&status, agreed);
    uint32_t world_size = 0;
    if (status == OTFX_OK && x->master)
        status = export_add_placeholders(x, &world_size);
    if (status == OTFX_OK && x->master)
        status = export_write_placeholder_event_files(x);
    if (opened)
        keep_first(&status, otf2_step(OTF2_Archive_CloseEvtFiles(x->archive), "closing the event files"));
    if (status == OTFX_OK) {
        status = otf2_step(OTF2_Archive_OpenDefFiles(x->archive), "opening the local definition files");
        if (status == OTFX_OK)
            status = export_write_local_definition_files(x);
        keep_first(&status,
                   otf2_step(OTF2_Archive_CloseDefFiles(x->archive), "closing the local definition files"));
    }
    if (status == OTFX_OK && x->master)
        status = export_write_global_definitions(x, world_size);
    if (status == OTFX_OK)
        status = system_error_of("writing the definition files");
    return status;
}

static void exporter_free(exporter *x)
{
    otfx_pairing_destroy(x->pairing);
    otfx_clock_destroy(x->clock);
    for (size_t c = 0; c < x->comm_capacity; c++)
        free(x->comms[c].by_world);
    free(x->comms);
    free(x->metric_types);
    free(x->locations);
    free(x->own);
    otfx_otf2_def_map_free(&x->map);
    if (x->global_defs)
        otfx_defs_destroy(x->global_defs);
}

otfx_status otfx_otf2_export_shared(const char *directory, const char *name, otfx_defs *defs,
                                    otfx_trace *const *traces, size_t trace_count,
                                    const otfx_export_options *options,
                                    const otfx_otf2_collective *collective, otfx_export_stats *stats)
{
    otfx_otf2_capture_errors();
    if (stats)
        *stats = (otfx_export_stats){0};
    shared_run run = {collective, 1, 0};
    if (collective) {
        if (collective->size == 0 || collective->rank >= collective->size || !collective->archive_opened ||
            !collective->allgather)
            return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: invalid description of the processes");
        run.size = collective->size;
        run.rank = collective->rank;
    }
    bool master = run.rank == 0;

    /* Exchange 1. */
    archive_paths paths = {0};
    uint64_t members = 0, definition_bytes = 0;
    otfx_status status = check_arguments(directory, name, defs, traces, trace_count, options);
    if (status == OTFX_OK) {
        status = export_archive_paths_make(&paths, directory, name);
    }
    if (status == OTFX_OK)
        status = group_members(defs, traces, trace_count, &members);
    if (status == OTFX_OK)
        status = definition_bytes_bound(defs, &definition_bytes);
    if (status == OTFX_OK && master)
        status = export_prepare_directory(&paths, directory, options->overwrite);
    otfx_bytes mine = {0};
    put_status(&mine, status);
    otfx_bytes_u64(&mine, members);
    otfx_bytes_u64(&mine, definition_bytes);
    gathered g;
    status = exchange(&run, &mine, &g);
    otfx_bytes_free(&mine);
    uint64_t all_definition_bytes = 0;
    for (uint32_t p = 0; status == OTFX_OK && p < run.size; p++) {
        uint64_t theirs = otfx_read_u64(&g.parts[p]);
        if (theirs > members)
            members = theirs;
        all_definition_bytes += otfx_read_u64(&g.parts[p]);
    }
    gathered_free(&g);
    all_definition_bytes += members * DEFINITION_LOCATION_BYTES; /* the master's placeholders */
    uint64_t definition_chunk = 0;
    if (status == OTFX_OK) /* the same on every process */
        status = definition_chunk_bytes(members, all_definition_bytes, &definition_chunk);
    if (status != OTFX_OK) {
        export_archive_paths_free(&paths);
        return status;
    }

    exporter x = {.defs = defs,
                  .master = master,
                  .next_string = 0,
                  .definition_chunk = definition_chunk,
                  .pairing = otfx_pairing_create(),
                  .clock = otfx_clock_create()};
    if (!x.pairing || !x.clock)
        status = out_of_memory(); /* still takes part in every exchange: the others learn of it */
    x.archive = OTF2_Archive_Open(directory, name, OTF2_FILEMODE_WRITE, EVENT_CHUNK_BYTES, definition_chunk,
                                  OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    x.attributes = OTF2_AttributeList_New();
    if (!x.archive)
        status = otfx_otf2_fail_call(OTF2_ERROR_FILE_CAN_NOT_OPEN, "OTF2 export: creating the archive");
    else if (!x.attributes)
        status = out_of_memory();
    else if (status == OTFX_OK)
        status = export_pool_chunks(&x);
    status = write_shared_archive(&x, &run, status, traces, trace_count, options);
    if (x.archive) {
        OTF2_ErrorCode code = OTF2_Archive_Close(x.archive);
        if (status == OTFX_OK && code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 export: closing the archive");
        if (status == OTFX_OK)
            status = system_error_of("closing the archive"); /* the anchor file */
    }
    export_chunk_pool_free(&x.chunks);
    if (x.attributes)
        OTF2_AttributeList_Delete(x.attributes);

    /* Exchange 3: whether every process (the master's global definitions) succeeded. */
    put_status(&mine, status);
    otfx_status agreed = exchange(&run, &mine, &g);
    otfx_bytes_free(&mine);
    gathered_free(&g);
    if (agreed != OTFX_OK && master)
        export_discard_partial_archive(&paths, agreed);
    if (agreed == OTFX_OK && stats) {
        stats->locations = (uint32_t)x.own_count;
        for (size_t l = 0; l < x.own_count; l++)
            stats->events += x.own[l].events;
        stats->messages_unpaired = otfx_pairing_unpaired(x.pairing);
        stats->messages_unpaired_everywhere = otfx_pairing_unpaired_everywhere(x.pairing);
        stats->collectives_incomplete = otfx_pairing_collectives_left_out(x.pairing);
        stats->collectives_incomplete_everywhere = otfx_pairing_collectives_left_out_everywhere(x.pairing);
        stats->clock_corrected_events = otfx_clock_events_moved(x.clock);
        stats->clock_max_correction_ns = otfx_clock_max_correction(x.clock);
        stats->clock_unresolved_messages = otfx_clock_unresolved(x.clock);
    }
    exporter_free(&x);
    export_archive_paths_free(&paths);
    return agreed;
}

otfx_status otfx_otf2_export(const char *directory, const char *name, otfx_defs *defs,
                             otfx_trace *const *traces, size_t trace_count,
                             const otfx_export_options *options)
{
    return otfx_otf2_export_shared(directory, name, defs, traces, trace_count, options, NULL, NULL);
}

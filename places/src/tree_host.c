/*
 * tree_host.c — what the tool tree (otfx/tree.h) needs from this place, as its host interface
 * (otfx_tree_host): leaves on the worker thread over a copy of the place's view of its ranks and traces,
 * steering messages to the served ranks (rank_control.c) and what the place does itself for a command
 * (its fields of the command's record line), the snapshot (snapshot.c, on the snapshot thread), the
 * end-of-run report, the ranks that ended or died.
 */
#include "place_loop.h"
#include "place_triggers.h"
#include "rank_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- queries -------------------------------------------------------------------------------------- */

static uint64_t dropped_of(const struct served_rank *rank)
{
    uint64_t dropped = rank->rejected_records;
    for (uint32_t t = 0; t < rank->stream_capacity; t++) {
        otfx_trace_status status;
        if (rank->streams[t] && otfx_trace_status_get(rank->streams[t]->trace, &status) == OTFX_OK)
            dropped += status.events_reduced[OTFX_REDUCE_STOP] +
                       status.events_reduced[OTFX_REDUCE_SOURCE_DROP] +
                       status.events_reduced[OTFX_REDUCE_THROTTLE];
    }
    return dropped;
}

/* The worker's job: a copy of the place's view of its ranks and traces. */
static struct leaf_job *make_leaf_job(struct place_runtime *runtime, uint32_t request,
                                      const otfx_analysis_module *module, const otfx_command *command)
{
    struct event_place *place = runtime->place;
    const int ranks = place->setup.served_count;
    size_t traces = 0, changes = 0;
    for (int r = 0; r < ranks; r++) {
        for (uint32_t t = 0; t < place->ranks[r].stream_capacity; t++)
            traces += place->ranks[r].streams[t] != NULL;
        changes += place->ranks[r].cost_change_count;
    }
    struct leaf_job *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->traces = calloc(traces ? traces : 1, sizeof(*job->traces));
    job->rank_of_trace = calloc(traces ? traces : 1, sizeof(uint32_t));
    job->thread_of_trace = calloc(traces ? traces : 1, sizeof(uint32_t));
    job->ranks = calloc(ranks > 0 ? (size_t)ranks : 1, sizeof(*job->ranks));
    job->cost_changes = calloc(changes ? changes : 1, sizeof(*job->cost_changes));
    if (!job->traces || !job->rank_of_trace || !job->thread_of_trace || !job->ranks || !job->cost_changes) {
        place_leaf_job_free(job);
        return NULL;
    }
    size_t i = 0, c = 0;
    for (int r = 0; r < ranks; r++) {
        const struct served_rank *rank = &place->ranks[r];
        otfx_rank_info *info = &job->ranks[r];
        info->rank = (uint32_t)rank->rank;
        info->recording = rank->control.recording;
        info->paused = rank->control.paused;
        info->paused_since_ns = rank->control.paused_since_ns;
        info->not_recording_since_ns = rank->control.not_recording_since_ns;
        info->finished = rank->said_goodbye;
        info->enabled_classes = rank->control.classes;
        info->events_per_s = rank->said_goodbye ? 0 : rank->events_per_s;
        info->dropped_events = dropped_of(rank);
        place_rank_overhead(rank, &info->overhead);
        /* the worker reads them while the next batches may move the rank's table */
        if (info->overhead.change_count)
            memcpy(&job->cost_changes[c], info->overhead.changes,
                   info->overhead.change_count * sizeof(*job->cost_changes));
        info->overhead.changes = &job->cost_changes[c];
        c += info->overhead.change_count;
        for (uint32_t t = 0; t < rank->stream_capacity; t++) {
            if (!rank->streams[t])
                continue;
            info->blocked_ns += rank->streams[t]->blocked_ns;
            job->traces[i] = rank->streams[t]->trace;
            job->rank_of_trace[i] = (uint32_t)r;
            job->thread_of_trace[i] = t;
            i++;
        }
    }
    const otfx_tree_counts *counts = otfx_tree_counts_of(runtime->tree);
    job->request = request;
    job->module = module;
    job->command = *command;
    job->input = (otfx_leaf_input){
        .place = (int)runtime->index,
        .defs = place->defs,
        .traces = job->traces,
        .rank_of_trace = job->rank_of_trace,
        .thread_of_trace = job->thread_of_trace,
        .trace_count = i,
        .ranks = job->ranks,
        .rank_count = (size_t)ranks,
        .app_ranks = runtime->layout ? runtime->layout->app_ranks : (uint32_t)ranks,
        .now_ns = place_now_ns(),
        .result_limit = runtime->query_memory,
        .queries_too_large = counts->queries_too_large,
        .module_timeouts = counts->module_timeouts,
        .module_crashes = counts->module_crashes,
        /* from now until the worker starts the leaf (place_loop.c sets it from the start, as for the
         * exchange) */
        .deadline_ns = place_now_ns() + runtime->module_timeout_ns,
    };
    /* replay analyses run with the other event places; loaded modules never get the exchange (their
     * helper processes must not use MPI), and leaf_view serves only them */
    job->exchanges =
        module != NULL &&
        (command->kind == OTFX_CMD_CRITICAL_PATH || command->kind == OTFX_CMD_WAIT_STATES ||
         ((command->kind == OTFX_CMD_PROFILE || command->kind == OTFX_CMD_TIMELINE) && command->compensated));
    job->blob.limit = runtime->query_memory;
    return job;
}

static const char *leaf_start(void *context, uint32_t request, const otfx_analysis_module *module,
                              const otfx_command *command)
{
    struct place_runtime *runtime = context;
    struct leaf_job *job = make_leaf_job(runtime, request, module, command);
    if (!job)
        return "out of memory for the query";
    if (!place_worker_submit(runtime, job)) {
        place_leaf_job_free(job);
        return "cannot start the worker thread";
    }
    return NULL; /* the worker's now */
}

static bool leaf_take(void *context, otfx_tree_leaf_result *result)
{
    struct leaf_job *job = place_worker_take_result(context);
    if (!job)
        return false;
    result->request = job->request;
    result->module = job->module->name;
    result->ok = job->ok;
    result->blob = job->blob;
    job->blob = (otfx_blob){0}; /* the tree's now */
    result->too_large = result->blob.too_large;
    snprintf(result->error, sizeof(result->error), "%s", job->error);
    result->took_ns = job->took_ns;
    place_leaf_job_free(job);
    return true;
}

static bool leaf_overdue(void *context, uint64_t limit_ns, uint32_t *request, const char **module)
{
    return place_worker_overdue(context, place_now_ns(), limit_ns, request, module);
}

static void *leaf_view(void *context, const otfx_command *command, otfx_leaf_input *input)
{
    struct leaf_job *job = make_leaf_job(context, 0, NULL, command);
    if (job)
        *input = job->input;
    return job;
}

static void leaf_view_free(void *context, void *view)
{
    (void)context;
    place_leaf_job_free(view);
}

/* ---- commands ------------------------------------------------------------------------------------- */

static enum capture_control_command control_of(const struct place_runtime *runtime,
                                               const otfx_command *command, uint64_t argument,
                                               uint64_t *control_argument)
{
    *control_argument = 0;
    /* critical-path, wait-states: the ranks send what they buffered before the replay reads it */
    if (otfx_command_flushes_first(command))
        return CAPTURE_CONTROL_FLUSH;
    switch (command->kind) {
    case OTFX_CMD_RECORD_PAUSE:
        return CAPTURE_CONTROL_RECORD_OFF;
    case OTFX_CMD_RECORD_RESUME:
        return CAPTURE_CONTROL_RECORD_ON;
    case OTFX_CMD_RECORD_WINDOW:
        *control_argument = argument;
        return CAPTURE_CONTROL_RECORD_UNTIL;
    case OTFX_CMD_APP_PAUSE:
        return CAPTURE_CONTROL_APP_PAUSE;
    case OTFX_CMD_APP_RESUME:
        return CAPTURE_CONTROL_APP_RESUME;
    case OTFX_CMD_ENABLE:
        *control_argument = runtime->enabled_classes | command->classes;
        return CAPTURE_CONTROL_SET_CLASSES;
    case OTFX_CMD_DISABLE:
        *control_argument = runtime->enabled_classes & ~command->classes;
        return CAPTURE_CONTROL_SET_CLASSES;
    case OTFX_CMD_SNAPSHOT:
    case OTFX_CMD_RESET: /* what the ranks recorded before the reset goes too: flush it first */
        return CAPTURE_CONTROL_FLUSH;
    case OTFX_CMD_METRICS_SET:
    case OTFX_CMD_METRICS_ADD:
    case OTFX_CMD_METRICS_REMOVE: {
        char why[256];
        return place_metrics_control(runtime->metrics_selected, command, control_argument, why, sizeof why)
                   ? CAPTURE_CONTROL_SET_METRICS
                   : 0; /* carry_out says why */
    }
    case OTFX_CMD_METRICS_LIST:
    case OTFX_CMD_METRICS_AVAILABLE: {
        char why[256];
        place_metrics_control(runtime->metrics_selected, command, control_argument, why, sizeof why);
        return CAPTURE_CONTROL_PROBE_METRICS;
    }
    case OTFX_CMD_OVERHEAD_MEASURE:
        return CAPTURE_CONTROL_MEASURE_OVERHEAD;
    default:
        return 0;
    }
}

static uint64_t steer(void *context, const otfx_command *command, uint64_t argument)
{
    struct place_runtime *runtime = context;
    uint64_t control_argument = 0;
    const enum capture_control_command control = control_of(runtime, command, argument, &control_argument);
    if (!control)
        return 0;
    if (control == CAPTURE_CONTROL_SET_CLASSES)
        runtime->enabled_classes = (uint32_t)control_argument;
    if (control == CAPTURE_CONTROL_SET_METRICS)
        runtime->metrics_selected = control_argument;
    const uint64_t sequence = place_control_send(runtime->place, control, control_argument);
    return sequence ? sequence : OTFX_TREE_NO_RANK_RUNNING;
}

static bool steered(void *context, uint64_t sequence)
{
    const struct place_runtime *runtime = context;
    return place_control_done(runtime->place, sequence);
}

/* The steering state after the ranks' answers. */
static bool describe_control(struct place_runtime *runtime, const otfx_command *command, uint64_t argument,
                             otfx_text *fields)
{
    const struct event_place *place = runtime->place;
    uint32_t running = 0, recording = 0, paused = 0, classes = 0;
    for (int r = 0; r < place->setup.served_count; r++) {
        const struct served_rank *rank = &place->ranks[r];
        if (rank->said_goodbye)
            continue;
        running++;
        recording += rank->control.recording;
        paused += rank->control.paused;
        classes = rank->control.classes;
    }
    otfx_kv_u64(fields, "ranks", (uint64_t)place->setup.served_count);
    otfx_kv_u64(fields, "running", running);
    switch (command->kind) {
    case OTFX_CMD_APP_PAUSE:
    case OTFX_CMD_APP_RESUME:
        otfx_kv_u64(fields, "paused", paused);
        break;
    case OTFX_CMD_ENABLE:
    case OTFX_CMD_DISABLE:
        otfx_kv_u64(fields, "classes", running ? classes : runtime->enabled_classes);
        break;
    case OTFX_CMD_RECORD_WINDOW:
        otfx_kv_u64(fields, "until", argument);
        otfx_kv_u64(fields, "recording", recording);
        break;
    default:
        otfx_kv_u64(fields, "recording", recording);
        break;
    }
    return true;
}

/* Every batch sent before the flush's answer is in: the traces are emptied. */
static bool reset_traces(struct place_runtime *runtime, otfx_text *fields)
{
    struct event_place *place = runtime->place;
    uint64_t held = 0, traces = 0;
    bool ok = true;
    for (int r = 0; r < place->setup.served_count; r++)
        for (uint32_t t = 0; t < place->ranks[r].stream_capacity; t++) {
            struct place_stream *stream = place->ranks[r].streams[t];
            otfx_trace_status status;
            if (!stream)
                continue;
            if (otfx_trace_status_get(stream->trace, &status) == OTFX_OK)
                held += status.events_held;
            ok = otfx_trace_reset(stream->trace) == OTFX_OK && ok;
            traces++;
        }
    otfx_kv_u64(fields, "traces", traces);
    otfx_kv_u64(fields, "events_dropped", held);
    if (!ok)
        otfx_kv_str(fields, "error", otfx_last_error());
    return ok;
}

static bool set_reduction(struct place_runtime *runtime, const otfx_command *command, otfx_text *fields)
{
    struct event_place *place = runtime->place;
    int strategy = -1;
    for (int s = 0; s <= OTFX_REDUCE_STOP; s++)
        if (strcmp(otfx_reduction_name((otfx_reduction)s), command->strategy) == 0)
            strategy = s;
    uint64_t traces = 0;
    bool ok = strategy >= 0;
    if (ok) {
        place->trace_config.strategy = (otfx_reduction)strategy; /* traces created later too */
        for (int r = 0; r < place->setup.served_count; r++)
            for (uint32_t t = 0; t < place->ranks[r].stream_capacity; t++)
                if (place->ranks[r].streams[t]) {
                    ok = otfx_trace_set_strategy(place->ranks[r].streams[t]->trace,
                                                 (otfx_reduction)strategy) == OTFX_OK &&
                         ok;
                    traces++;
                }
    }
    otfx_kv_str(fields, "strategy", command->strategy);
    otfx_kv_u64(fields, "traces", traces);
    if (!ok)
        otfx_kv_str(fields, "error", strategy < 0 ? "unknown reduction strategy" : otfx_last_error());
    return ok;
}

/* trigger add, remove, arm: `argument` is the trigger's id (the root's numbering). */
static bool carry_out_trigger(struct place_runtime *runtime, const otfx_command *command, uint64_t argument,
                              otfx_text *fields)
{
    struct event_place *place = runtime->place;
    otfx_kv_u64(fields, "trigger", argument);
    char why[320] = "";
    bool ok;
    if (command->kind == OTFX_CMD_TRIGGER_ADD)
        ok = place_trigger_add(place, argument, command->path, why, sizeof(why));
    else if (command->kind == OTFX_CMD_TRIGGER_REMOVE)
        ok = place_trigger_remove(place, argument) ||
             (snprintf(why, sizeof(why), "no such trigger here"), false);
    else
        ok =
            place_trigger_arm(place, argument) || (snprintf(why, sizeof(why), "no such trigger here"), false);
    if (!ok)
        otfx_kv_str(fields, "error", why);
    return ok;
}

/* The metrics commands once the ranks answered, or why the list was refused. */
static bool describe_metrics(struct place_runtime *runtime, const otfx_command *command, otfx_text *fields,
                             otfx_text *lines)
{
    char why[256];
    uint64_t argument;
    if (!place_metrics_control(runtime->metrics_selected, command, &argument, why, sizeof why)) {
        otfx_kv_str(fields, "error", why);
        return false;
    }
    return place_metrics_describe(runtime->place, runtime->index, runtime->metrics_selected, command, fields,
                                  lines);
}

static bool carry_out(void *context, const otfx_command *command, uint64_t argument, otfx_text *fields,
                      otfx_text *lines)
{
    struct place_runtime *runtime = context;
    uint64_t unused;
    switch (command->kind) {
    case OTFX_CMD_REDUCTION:
        return set_reduction(runtime, command, fields);
    case OTFX_CMD_RESET:
        return reset_traces(runtime, fields);
    case OTFX_CMD_METRICS_SET:
    case OTFX_CMD_METRICS_ADD:
    case OTFX_CMD_METRICS_REMOVE:
    case OTFX_CMD_METRICS_LIST:
    case OTFX_CMD_METRICS_AVAILABLE:
        return describe_metrics(runtime, command, fields, lines);
    case OTFX_CMD_TRIGGER_ADD:
    case OTFX_CMD_TRIGGER_REMOVE:
    case OTFX_CMD_TRIGGER_ARM:
        return carry_out_trigger(runtime, command, argument, fields);
    default:
        if (!control_of(runtime, command, argument, &unused)) {
            otfx_kv_str(fields, "error", "not a command for event places");
            return false;
        }
        return describe_control(runtime, command, argument, fields);
    }
}

static bool snapshot_start(void *context, uint32_t request, const otfx_command *command)
{
    struct place_runtime *runtime = context;
    if (runtime->snapshot_busy)
        return false;
    runtime->snapshot.request = request;
    runtime->snapshot.command = *command;
    place_leaf_job_free(runtime->snapshot.compensation);
    runtime->snapshot.compensation =
        command->compensated ? make_leaf_job(runtime, request, NULL, command) : NULL;
    place_snapshot_start(runtime);
    return true;
}

static bool snapshot_take(void *context, uint32_t request, bool *ok, otfx_text *fields)
{
    struct place_runtime *runtime = context;
    if (runtime->snapshot.request != request || !place_snapshot_take(runtime))
        return false;
    const place_snapshot_result *result = &runtime->snapshot.result;
    *ok = result->ok;
    if (result->ok) {
        otfx_kv_str(fields, "archive", result->archive);
        otfx_kv_u64(fields, "events", result->events_written);
        otfx_kv_u64(fields, "locations", result->locations);
        otfx_kv_u64(fields, "unpaired", result->messages_unpaired);
        otfx_kv_u64(fields, "clock_moved", result->clock_corrected_events);
        otfx_kv_u64(fields, "clock_max_ns", result->clock_max_correction_ns);
        otfx_kv_u64(fields, "clock_unresolved", result->clock_unresolved_messages);
        otfx_kv_u64(fields, "incomplete_collectives", result->collectives_incomplete);
        if (runtime->snapshot.held_from != UINT64_MAX)
            otfx_kv_u64(fields, "held_from", runtime->snapshot.held_from);
        otfx_kv_u64(fields, "window_reduced", runtime->snapshot.window_reduced);
    } else {
        otfx_kv_str(fields, "error", result->error);
    }
    otfx_kv_str(fields, "thread", runtime->snapshot.on_thread ? "snapshot" : "mpi");
    if (!runtime->snapshot.on_thread)
        otfx_kv_str(fields, "note", "MPI is not MPI_THREAD_MULTIPLE: ingestion paused while writing");
    return true;
}

static void job_failing(void *context)
{
    struct place_runtime *runtime = context;
    runtime->place->job_failed = true;
}

/* ---- the ranks' end ------------------------------------------------------------------------------- */

static void report(void *context)
{
    struct place_runtime *runtime = context;
    place_print_report(runtime->place);
}

static bool ranks_ended(void *context)
{
    struct place_runtime *runtime = context;
    struct event_place *place = runtime->place;
    if (place->reported || place->goodbyes < place->setup.served_count)
        return false;
    place_print_report(place);
    return true;
}

static bool next_death(void *context, uint32_t *rank_out, uint32_t *exit_code, char *cause, size_t size)
{
    struct place_runtime *runtime = context;
    struct event_place *place = runtime->place;
    for (int r = 0; r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        if (!rank->death.died || rank->death.reported)
            continue;
        rank->death.reported = true;
        char what[640 - 32];
        place_describe_death(place, rank, what, sizeof(what));
        snprintf(cause, size, "rank %d %s", rank->rank, what);
        fprintf(stderr, "otfx-place %d: %s\n", place->setup.place_rank, cause);
        *rank_out = (uint32_t)rank->rank;
        *exit_code = (uint32_t)place_death_exit_code(rank);
        return true;
    }
    return false;
}

static bool next_unseen(void *context, uint64_t *trigger, uint64_t *count)
{
    struct place_runtime *runtime = context;
    return place_triggers_next_unseen(runtime->place, trigger, count);
}

static bool next_firing(void *context, otfx_tree_firing *firing)
{
    struct place_runtime *runtime = context;
    return place_triggers_next_firing(runtime->place, firing);
}

/* ---- the loop ------------------------------------------------------------------------------------- */

static void wake(void *context)
{
    place_wake(context);
}

static void backlog(void *context, size_t unsent_bytes)
{
    struct place_runtime *runtime = context;
    pthread_mutex_lock(&runtime->lock);
    const bool less = unsent_bytes < runtime->unsent_bytes;
    runtime->unsent_bytes = unsent_bytes;
    if (less)
        pthread_cond_broadcast(&runtime->wake); /* a worker may wait for room */
    pthread_mutex_unlock(&runtime->lock);
}

static int interrupted(void *context)
{
    (void)context;
    return place_interrupted();
}

otfx_tree_host place_tree_host(struct place_runtime *runtime)
{
    return (otfx_tree_host){
        .context = runtime,
        .wake = wake,
        .backlog = backlog,
        .interrupted = interrupted,
        .leaf_start = leaf_start,
        .leaf_take = leaf_take,
        .leaf_overdue = leaf_overdue,
        .leaf_view = leaf_view,
        .leaf_view_free = leaf_view_free,
        .steer = steer,
        .steered = steered,
        .carry_out = carry_out,
        .snapshot_start = snapshot_start,
        .snapshot_take = snapshot_take,
        .job_failing = job_failing,
        .report = report,
        .ranks_ended = ranks_ended,
        .next_death = next_death,
        .next_firing = next_firing,
        .next_unseen = next_unseen,
    };
}

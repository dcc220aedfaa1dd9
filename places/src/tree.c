/*
 * tree.c — the tool tree on the places: requests go down, results and acknowledgements come up, the
 * root serves clients (otfx/server.h) and ends the job (see place_loop.h and tree_messages.h).
 *
 * Requests. The root numbers every client request (the tree request id) and sends it to its children
 * as QUERY, COMMAND or LOAD_MODULE; every place forwards it to its own children and, when it has a part
 * of its own (event places; load-module: every place), carries that out. A place answers its parent
 * (RESULT for queries, ACK for commands) once its part and every child answered; queries' partial
 * results are merged with the module's merge() as they arrive. The root finishes the merged result and
 * replies; when leaves are still missing 200 ms after the request it sends a PARTIAL first.
 *
 * Command replies (record lines, otfx/protocol.h), one line per place that acted and a summary:
 *   place index=I command=NAME ok=1 ranks=R answered=A [recording=K | paused=K | classes=BITS |
 *         traces=T events_dropped=E | strategy=S traces=T | archive=PATH events=E locations=L
 *         thread=snapshot|mpi | module=NAME]          (ok=0 error=TEXT when it failed there)
 *   summary command=NAME places=N ok=K failed=F
 * `record window D` is answered at once with `window from=T0 to=T1` (place clock ns, the job's global
 * time base), and every client gets `notice event=window-ended from=T0 to=T1` after T1.
 *
 * End of the run. An event place prints its report once its ranks said goodbye; a place sends DONE up
 * once it and all its children are done. The root then writes the snapshot at exit (OTFX_SNAPSHOT_AT_EXIT)
 * as an ordinary snapshot command, lets the requests in flight finish, sends `notice event=job-ended`,
 * stops the server and sends SHUTDOWN down the tree. A job that fails ends otherwise: "a failed job" below.
 */
#define _POSIX_C_SOURCE 200809L
#include "place_loop.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PARTIAL_AFTER_NS (200u * 1000u * 1000u)
/* Queries in the tree at once (more wait at the root). */
#define MAX_QUERIES_IN_TREE 8
/* How long the root waits for requests in flight at the end before it shuts the tree down anyway. */
#define DRAIN_TIMEOUT_NS (10ull * 1000u * 1000u * 1000u)

static int place_rank(const struct place_runtime *runtime)
{
    return runtime->place->setup.place_rank;
}

static bool is_query(otfx_command_kind kind)
{
    return kind == OTFX_CMD_STATUS || kind == OTFX_CMD_PROFILE || kind == OTFX_CMD_TIMELINE ||
           kind == OTFX_CMD_MESSAGES || kind == OTFX_CMD_EVENTS || kind == OTFX_CMD_QUERY;
}

/* The command's name as one token for record lines: "app resume" → "app-resume". */
static const char *command_token(otfx_command_kind kind, char *out, size_t size)
{
    snprintf(out, size, "%s", otfx_command_name(kind));
    for (char *c = out; *c; c++)
        if (*c == ' ')
            *c = '-';
    return out;
}

/* The module a query runs in this process (a built-in one), or NULL (see loaded_module_of). */
static const otfx_analysis_module *module_of(const otfx_command *command)
{
    return command->kind == OTFX_CMD_QUERY ? otfx_analysis_find(command->module)
                                           : otfx_analysis_for_command(command->kind);
}

/* The loaded module a `query NAME` runs (in helper processes), or NULL. */
static const struct loaded_module *loaded_module_of(const struct place_runtime *runtime,
                                                    const otfx_command *command)
{
    if (command->kind != OTFX_CMD_QUERY)
        return NULL;
    for (size_t i = 0; i < runtime->loaded_count; i++)
        if (strcmp(runtime->loaded_modules[i]->name, command->module) == 0)
            return runtime->loaded_modules[i];
    return NULL;
}

static otfx_module_limits module_limits(const struct place_runtime *runtime)
{
    return (otfx_module_limits){.time_limit_ns = runtime->module_timeout_ns,
                                .result_limit = runtime->query_memory};
}

/* ---- requests ------------------------------------------------------------------------------------- */

static struct tree_request *find_request(struct place_runtime *runtime, uint32_t id)
{
    for (size_t i = 0; i < runtime->request_count; i++)
        if (runtime->requests[i].id == id)
            return &runtime->requests[i];
    return NULL;
}

static struct tree_request *add_request(struct place_runtime *runtime, uint32_t id, enum tree_kind kind,
                                        const otfx_command *command, uint64_t argument)
{
    if (runtime->request_count == runtime->request_capacity) {
        const size_t capacity = runtime->request_capacity ? 2 * runtime->request_capacity : 8;
        struct tree_request *bigger = realloc(runtime->requests, capacity * sizeof(*bigger));
        if (!bigger)
            return NULL;
        runtime->requests = bigger;
        runtime->request_capacity = capacity;
    }
    struct tree_request *request = &runtime->requests[runtime->request_count++];
    memset(request, 0, sizeof(*request));
    request->id = id;
    request->kind = kind;
    request->command = *command;
    request->argument = argument;
    request->started_ns = place_now_ns();
    request->module = kind == TREE_QUERY ? module_of(command) : NULL;
    request->loaded = kind == TREE_QUERY && !request->module ? loaded_module_of(runtime, command) : NULL;
    request->merged.limit = runtime->query_memory; /* a merged result is bounded like the leaves' */
    return request;
}

static void free_parts(struct tree_request *request)
{
    for (size_t i = 0; i < request->part_count; i++)
        otfx_blob_free(&request->parts[i].blob);
    free(request->parts);
    request->parts = NULL;
    request->part_count = request->part_capacity = 0;
}

static void remove_request(struct place_runtime *runtime, struct tree_request *request)
{
    otfx_module_call_cancel(request->call);
    free_parts(request);
    otfx_blob_free(&request->merged);
    otfx_text_free(&request->errors);
    otfx_text_free(&request->lines);
    const size_t index = (size_t)(request - runtime->requests);
    runtime->requests[index] = runtime->requests[--runtime->request_count];
}

static void reply(struct place_runtime *runtime, uint64_t client, uint32_t request, otfx_frame_kind kind,
                  const otfx_text *text)
{
    if (runtime->server && client)
        otfx_server_reply(runtime->server, client, request, kind, text->data ? text->data : "", text->length);
}

static void reply_error(struct place_runtime *runtime, uint64_t client, uint32_t request, const char *code,
                        const char *message)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "error");
    otfx_kv_str(&text, "code", code);
    otfx_kv_str(&text, "message", message);
    otfx_kv_end(&text);
    reply(runtime, client, request, OTFX_FRAME_ERROR, &text);
    otfx_text_free(&text);
}

static void add_error(otfx_text *errors, uint32_t place, const char *text, size_t length)
{
    char prefix[48];
    const int n = snprintf(prefix, sizeof(prefix), "%splace %u: ", errors->length ? "; " : "", place);
    otfx_text_append(errors, prefix, (size_t)n);
    otfx_text_append(errors, text, length);
}

/* The root's answer to a finished query: the module's lines (PARTIAL: after a first line saying how
 * many leaves answered). */
static void answer_query(struct place_runtime *runtime, struct tree_request *request, bool partial)
{
    otfx_text text = {0};
    char error[512] = "";
    const uint32_t total = runtime->leaves_below;
    if (partial) {
        otfx_kv_begin(&text, "partial");
        otfx_kv_u64(&text, "partial", 1);
        otfx_kv_u64(&text, "answered", request->count_ok);
        otfx_kv_u64(&text, "total", total);
        otfx_kv_end(&text);
    }
    if (request->count_ok == 0 && !partial) {
        otfx_text_append(&request->errors, "", 1);
        reply_error(runtime, request->client, request->client_request, OTFX_ERR_CODE_FAILED,
                    request->errors.data && request->errors.data[0] ? request->errors.data
                                                                    : "no event place answered");
        otfx_text_free(&text);
        return;
    }
    if (request->loaded) {
        /* finished in the merge's helper: `merged` holds the reply's lines */
        otfx_text_append(&text, (const char *)request->merged.data, request->merged.length);
    } else if (!request->module->finish(&request->command, request->merged.data, request->merged.length,
                                        request->count_ok, total, &text, error, sizeof(error))) {
        if (!partial)
            reply_error(runtime, request->client, request->client_request, OTFX_ERR_CODE_FAILED,
                        error[0] ? error : "the module could not finish the result");
        otfx_text_free(&text);
        return;
    }
    if (!partial && request->count_failed) {
        otfx_kv_begin(&text, "failed");
        otfx_kv_u64(&text, "places", request->count_failed);
        otfx_text_append(&request->errors, "", 1);
        otfx_kv_str(&text, "message", request->errors.data ? request->errors.data : "");
        otfx_kv_end(&text);
    }
    if (text.failed)
        reply_error(runtime, request->client, request->client_request, OTFX_ERR_CODE_FAILED,
                    "out of memory for the reply");
    else
        reply(runtime, request->client, request->client_request,
              partial ? OTFX_FRAME_PARTIAL : OTFX_FRAME_REPLY, &text);
    otfx_text_free(&text);
}

static void begin_shutdown(struct place_runtime *runtime);
static void end_failed_job(struct place_runtime *runtime, const struct tree_request *request);
static void await_end_of_failed_job(struct place_runtime *runtime, const struct tree_request *request);
static void final_line(struct place_runtime *runtime, struct tree_request *request);
static bool is_final_command(const struct tree_request *request);
static void broadcast_notice(struct place_runtime *runtime, const otfx_text *text);
static void write_exit_status(struct place_runtime *runtime, const struct tree_request *request);

/* The root's answer to a finished command: the places' lines and a summary. */
static void answer_command(struct place_runtime *runtime, struct tree_request *request)
{
    char token[64];
    const char *name = command_token(request->command.kind, token, sizeof(token));
    if (request->final) {
        end_failed_job(runtime, request); /* does not return */
        return;
    }
    if (request->at_exit) {
        fprintf(stderr, "otfx: snapshot at exit %s: %u places ok, %u failed\n%.*s", request->command.path,
                request->count_ok, request->count_failed, (int)request->lines.length,
                request->lines.data ? request->lines.data : "");
        write_exit_status(runtime, request);
        runtime->end_stage = ROOT_DRAINING;
        runtime->end_stage_ns = place_now_ns();
        return;
    }
    if (!request->client)
        return;
    otfx_text text = {0};
    if (request->count_failed) {
        char message[160];
        snprintf(message, sizeof(message), "%s failed on %u of %u places", name, request->count_failed,
                 request->count_ok + request->count_failed);
        otfx_kv_begin(&text, "error");
        otfx_kv_str(&text, "code", OTFX_ERR_CODE_FAILED);
        otfx_kv_str(&text, "message", message);
        otfx_kv_end(&text);
    }
    otfx_text_append(&text, request->lines.data, request->lines.length);
    otfx_kv_begin(&text, "summary");
    otfx_kv_str(&text, "command", name);
    otfx_kv_u64(&text, "places", request->count_ok + request->count_failed);
    otfx_kv_u64(&text, "ok", request->count_ok);
    otfx_kv_u64(&text, "failed", request->count_failed);
    otfx_kv_end(&text);
    reply(runtime, request->client, request->client_request,
          request->count_failed ? OTFX_FRAME_ERROR : OTFX_FRAME_REPLY, &text);
    otfx_text_free(&text);
}

/* Answers the parent (or the client, at the root) once the place's own part and every child answered. */
static bool merge_loaded_parts(struct place_runtime *runtime, struct tree_request *request);

static void complete_if_answered(struct place_runtime *runtime, struct tree_request *request)
{
    if (request->children_waiting || request->own_pending)
        return;
    if (request->loaded && !request->merge_done && merge_loaded_parts(runtime, request))
        return; /* the merge runs in a helper; this is called again when it is done */
    if (runtime->is_root || !runtime->tree) {
        if (request->kind == TREE_QUERY)
            answer_query(runtime, request, false);
        else
            answer_command(runtime, request);
    } else {
        struct tree_buffer message;
        bool encoded;
        if (request->kind == TREE_QUERY)
            encoded = tree_encode_result(&message, request->id, request->count_ok, request->count_failed,
                                         request->errors.data, request->errors.length, request->merged.data,
                                         request->merged.length);
        else
            encoded = tree_encode_ack(&message, request->id, request->count_ok, request->count_failed,
                                      request->lines.data, request->lines.length);
        if (!encoded && request->kind == TREE_QUERY) {
            /* too large or out of memory: the subtree's leaves count as failed */
            static const char why[] = "result too large or out of memory";
            encoded = tree_encode_result(&message, request->id, 0, request->count_ok + request->count_failed,
                                         why, sizeof(why) - 1, NULL, 0);
        }
        if (encoded)
            place_tree_send(runtime, runtime->parent, &message);
        else
            fprintf(stderr, "otfx-place %d: out of memory: the answer to request %u is lost\n",
                    place_rank(runtime), request->id);
        if (request->final)
            await_end_of_failed_job(runtime, request);
    }
    remove_request(runtime, request);
}

/* A loaded module's partial result, kept (a copy) for the merge in a helper. */
static void stash_part(struct place_runtime *runtime, struct tree_request *request, uint32_t from,
                       uint32_t answered, const void *blob, size_t length)
{
    size_t kept = length;
    for (size_t i = 0; i < request->part_count; i++)
        kept += request->parts[i].blob.length;
    if (kept > 2 * runtime->query_memory) {
        /* the parts waiting for their merge stay within twice the bound */
        char text[160];
        snprintf(text, sizeof(text), "the results to merge exceed twice the query memory bound of %zu bytes",
                 runtime->query_memory);
        request->count_failed += answered;
        runtime->queries_too_large++;
        add_error(&request->errors, from, text, strlen(text));
        return;
    }
    if (request->part_count == request->part_capacity) {
        const size_t capacity = request->part_capacity ? 2 * request->part_capacity : 4;
        struct stashed_part *bigger = realloc(request->parts, capacity * sizeof(*bigger));
        if (!bigger) {
            request->count_failed += answered;
            add_error(&request->errors, from, "out of memory keeping the result", 32);
            return;
        }
        request->parts = bigger;
        request->part_capacity = capacity;
    }
    struct stashed_part *part = &request->parts[request->part_count];
    memset(part, 0, sizeof(*part));
    otfx_blob_append(&part->blob, blob, length);
    if (part->blob.failed) {
        otfx_blob_free(&part->blob);
        request->count_failed += answered;
        add_error(&request->errors, from, "out of memory keeping the result", 32);
        return;
    }
    part->answered = answered;
    part->from = from;
    request->part_count++;
}

/* Merges one subtree's (or the own leaf's) partial result. */
static void merge_result(struct place_runtime *stats, struct tree_request *request, uint32_t from,
                         uint32_t answered, uint32_t failed, const void *blob, size_t length,
                         const char *error, size_t error_length)
{
    char why[256] = "";
    if (error_length && from == stats->index) {
        add_error(&request->errors, from, error, error_length);
    } else if (error_length) {
        /* a subtree's errors name their places already */
        if (request->errors.length)
            otfx_text_append(&request->errors, "; ", 2);
        otfx_text_append(&request->errors, error, error_length);
    }
    request->count_failed += failed;
    if (!answered)
        return;
    if (request->loaded) {
        stash_part(stats, request, from, answered, blob, length);
        return;
    }
    if (!request->module) {
        request->count_failed += answered;
        add_error(&request->errors, from, "module unknown at this place", 28);
        return;
    }
    if (length &&
        !request->module->merge(&request->command, &request->merged, blob, length, why, sizeof(why))) {
        request->count_failed += answered;
        const char *text = why[0] ? why : "malformed partial result";
        add_error(&request->errors, from, text, strlen(text));
        if (request->merged.too_large)
            stats->queries_too_large++;
        return;
    }
    if (request->merged.length > request->merged.limit) {
        /* a module that ignores the bound: nothing of this request can be kept */
        char text[160];
        snprintf(text, sizeof(text), "%s: the merged result exceeds the query memory bound of %zu bytes",
                 request->module->name, request->merged.limit);
        request->count_failed += request->count_ok + answered;
        request->count_ok = 0;
        otfx_blob_free(&request->merged);
        add_error(&request->errors, from, text, strlen(text));
        stats->queries_too_large++;
        return;
    }
    request->count_ok += answered;
}

/* ---- the own part of a request at this place ------------------------------------------------------ */

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
static struct leaf_job *make_leaf_job(struct place_runtime *runtime, const struct tree_request *request)
{
    struct event_place *place = runtime->place;
    const int ranks = place->setup.served_count;
    size_t traces = 0;
    for (int r = 0; r < ranks; r++)
        for (uint32_t t = 0; t < place->ranks[r].stream_capacity; t++)
            traces += place->ranks[r].streams[t] != NULL;
    struct leaf_job *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->traces = calloc(traces ? traces : 1, sizeof(*job->traces));
    job->rank_of_trace = calloc(traces ? traces : 1, sizeof(uint32_t));
    job->thread_of_trace = calloc(traces ? traces : 1, sizeof(uint32_t));
    job->ranks = calloc(ranks > 0 ? (size_t)ranks : 1, sizeof(*job->ranks));
    if (!job->traces || !job->rank_of_trace || !job->thread_of_trace || !job->ranks) {
        place_leaf_job_free(job);
        return NULL;
    }
    size_t i = 0;
    for (int r = 0; r < ranks; r++) {
        const struct served_rank *rank = &place->ranks[r];
        otfx_rank_info *info = &job->ranks[r];
        info->rank = (uint32_t)rank->rank;
        info->recording = rank->control.recording;
        info->paused = rank->control.paused;
        info->finished = rank->said_goodbye;
        info->enabled_classes = rank->control.classes;
        info->events_per_s = rank->said_goodbye ? 0 : rank->events_per_s;
        info->dropped_events = dropped_of(rank);
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
    job->request = request->id;
    job->module = request->module;
    job->command = request->command;
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
        .queries_too_large = runtime->queries_too_large,
        .module_timeouts = runtime->module_timeouts,
        .module_crashes = runtime->module_crashes,
    };
    job->blob.limit = runtime->query_memory;
    return job;
}

static void begin_line(struct place_runtime *runtime, struct tree_request *request, bool ok)
{
    char token[64];
    otfx_kv_begin(&request->lines, "place");
    otfx_kv_u64(&request->lines, "index", runtime->index);
    otfx_kv_str(&request->lines, "command", command_token(request->command.kind, token, sizeof(token)));
    otfx_kv_u64(&request->lines, "ok", ok);
    if (ok)
        request->count_ok++;
    else
        request->count_failed++;
}

/* One line for a command carried out by the ranks (the steering state after their answers). */
static void control_line(struct place_runtime *runtime, struct tree_request *request)
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
    begin_line(runtime, request, true);
    otfx_kv_u64(&request->lines, "ranks", (uint64_t)place->setup.served_count);
    otfx_kv_u64(&request->lines, "running", running);
    switch (request->command.kind) {
    case OTFX_CMD_APP_PAUSE:
    case OTFX_CMD_APP_RESUME:
        otfx_kv_u64(&request->lines, "paused", paused);
        break;
    case OTFX_CMD_ENABLE:
    case OTFX_CMD_DISABLE:
        otfx_kv_u64(&request->lines, "classes", running ? classes : runtime->enabled_classes);
        break;
    case OTFX_CMD_RECORD_WINDOW:
        otfx_kv_u64(&request->lines, "until", request->argument);
        otfx_kv_u64(&request->lines, "recording", recording);
        break;
    default:
        otfx_kv_u64(&request->lines, "recording", recording);
        break;
    }
    otfx_kv_end(&request->lines);
}

static void reset_traces(struct place_runtime *runtime, struct tree_request *request)
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
    begin_line(runtime, request, ok);
    otfx_kv_u64(&request->lines, "traces", traces);
    otfx_kv_u64(&request->lines, "events_dropped", held);
    if (!ok)
        otfx_kv_str(&request->lines, "error", otfx_last_error());
    otfx_kv_end(&request->lines);
}

static void set_reduction(struct place_runtime *runtime, struct tree_request *request)
{
    struct event_place *place = runtime->place;
    int strategy = -1;
    for (int s = 0; s <= OTFX_REDUCE_STOP; s++)
        if (strcmp(otfx_reduction_name((otfx_reduction)s), request->command.strategy) == 0)
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
    begin_line(runtime, request, ok);
    otfx_kv_str(&request->lines, "strategy", request->command.strategy);
    otfx_kv_u64(&request->lines, "traces", traces);
    if (!ok)
        otfx_kv_str(&request->lines, "error",
                    strategy < 0 ? "unknown reduction strategy" : otfx_last_error());
    otfx_kv_end(&request->lines);
}

/* ---- loaded modules: every call in a helper process (otfx/analysis.h) ----------------------------- */

static void load_module_line(struct place_runtime *runtime, struct tree_request *request, const char *name,
                             const char *error)
{
    begin_line(runtime, request, error == NULL);
    if (!error)
        otfx_kv_str(&request->lines, "module", name);
    else
        otfx_kv_str(&request->lines, "error", error);
    otfx_kv_end(&request->lines);
}

/* load-module: a helper loads and checks the module; this process never runs its code. A path without
 * '/' names a file in the working directory (not a library to search for). */
static void load_module(struct place_runtime *runtime, struct tree_request *request)
{
    char *path = request->command.path;
    if (!strchr(path, '/')) {
        const size_t length = strlen(path);
        if (length + 3 > sizeof(request->command.path)) {
            load_module_line(runtime, request, NULL, "module path too long");
            return;
        }
        memmove(path + 2, path, length + 1);
        memcpy(path, "./", 2);
    }
    char error[512] = "";
    const otfx_module_limits limits = module_limits(runtime);
    request->call = otfx_module_call_probe(request->command.path, &limits, error, sizeof(error));
    if (!request->call) {
        load_module_line(runtime, request, NULL, error);
        return;
    }
    request->call_kind = CALL_LOAD;
    request->own_pending = true;
}

static void loaded(struct place_runtime *runtime, struct tree_request *request,
                   const otfx_module_result *result)
{
    if (!result->ok) {
        load_module_line(runtime, request, NULL,
                         result->error[0] ? result->error : "could not load the module");
        return;
    }
    const char *name = (const char *)result->data.data;
    if (!name || !memchr(name, '\0', result->data.length) ||
        strlen(name) >= sizeof(((struct loaded_module *)0)->name)) {
        load_module_line(runtime, request, NULL, "the module's helper answered without a name");
        return;
    }
    char error[256] = "";
    for (size_t i = 0; i < runtime->loaded_count; i++)
        if (strcmp(runtime->loaded_modules[i]->name, name) == 0 &&
            strcmp(runtime->loaded_modules[i]->path, request->command.path) != 0)
            snprintf(error, sizeof(error), "a module named %s is already loaded (from %.150s)", name,
                     runtime->loaded_modules[i]->path);
    if (otfx_analysis_find(name))
        snprintf(error, sizeof(error), "%s is the name of a built-in module", name);
    if (error[0]) {
        load_module_line(runtime, request, NULL, error);
        return;
    }
    bool known = false;
    for (size_t i = 0; i < runtime->loaded_count; i++)
        known = known || strcmp(runtime->loaded_modules[i]->name, name) == 0;
    if (!known) {
        struct loaded_module *module = calloc(1, sizeof(*module));
        if (runtime->loaded_count == runtime->loaded_capacity) {
            const size_t capacity = runtime->loaded_capacity ? 2 * runtime->loaded_capacity : 4;
            struct loaded_module **bigger = realloc(runtime->loaded_modules, capacity * sizeof(*bigger));
            if (bigger) {
                runtime->loaded_modules = bigger;
                runtime->loaded_capacity = capacity;
            }
        }
        if (!module || runtime->loaded_count == runtime->loaded_capacity) {
            free(module);
            load_module_line(runtime, request, NULL, "out of memory");
            return;
        }
        snprintf(module->name, sizeof(module->name), "%s", name);
        snprintf(module->path, sizeof(module->path), "%s", request->command.path);
        runtime->loaded_modules[runtime->loaded_count++] = module;
    }
    load_module_line(runtime, request, name, NULL);
}

static void count_failure(struct place_runtime *runtime, const otfx_module_result *result)
{
    runtime->module_crashes += result->crashed;
    runtime->module_timeouts += result->timed_out;
    runtime->queries_too_large += result->too_large;
}

/* The own leaf of a loaded module's query: a helper reads a copy-on-write view of the traces. */
static const char *start_loaded_leaf(struct place_runtime *runtime, struct tree_request *request)
{
    static char problem[512];
    struct leaf_job *job = make_leaf_job(runtime, request);
    if (!job)
        return "out of memory for the query";
    const otfx_module_limits limits = module_limits(runtime);
    problem[0] = '\0';
    request->call = otfx_module_call_leaf(request->loaded->path, request->loaded->name, &request->command,
                                          &job->input, &limits, problem, sizeof(problem));
    place_leaf_job_free(job); /* the helper has its own copy */
    if (!request->call)
        return problem[0] ? problem : "cannot start the module's helper process";
    request->call_kind = CALL_OWN_LEAF;
    return NULL;
}

/* All parts are in: a helper merges them (and at the root finishes the reply). Returns false when there
 * is nothing to wait for (no part, or the helper could not start: then everything counts as failed). */
static bool merge_loaded_parts(struct place_runtime *runtime, struct tree_request *request)
{
    if (request->call && request->call_kind == CALL_PARTIAL) {
        otfx_module_call_cancel(request->call); /* the final answer supersedes it */
        request->call = NULL;
    }
    if (request->call)
        return true;
    if (request->part_count == 0) {
        request->merge_done = true;
        return false;
    }
    const bool finish = runtime->is_root || !runtime->tree;
    if (request->part_count == 1 && !finish) {
        /* merged into nothing a part stays itself (otfx/analysis.h): no helper needed */
        request->count_ok += request->parts[0].answered;
        otfx_blob_free(&request->merged);
        request->merged = request->parts[0].blob;
        request->merged.limit = runtime->query_memory;
        request->parts[0].blob = (otfx_blob){0};
        free_parts(request);
        request->merge_done = true;
        return false;
    }
    otfx_blob *blobs = calloc(request->part_count, sizeof(*blobs));
    uint32_t *answered = calloc(request->part_count, sizeof(*answered));
    char error[512] = "could not merge: out of memory";
    if (blobs && answered) {
        for (size_t i = 0; i < request->part_count; i++) {
            blobs[i] = request->parts[i].blob;
            answered[i] = request->parts[i].answered;
        }
        const otfx_module_limits limits = module_limits(runtime);
        error[0] = '\0';
        request->call = otfx_module_call_merge(request->loaded->path, request->loaded->name,
                                               &request->command, blobs, answered, request->part_count,
                                               finish, runtime->leaves_below, &limits, error, sizeof(error));
    }
    free(blobs);
    free(answered);
    if (request->call) {
        request->call_kind = CALL_MERGE;
        return true;
    }
    for (size_t i = 0; i < request->part_count; i++)
        request->count_failed += request->parts[i].answered;
    add_error(&request->errors, runtime->index, error, strlen(error));
    free_parts(request);
    request->merge_done = true;
    return false;
}

/* The parts a merge helper left out or all of them when it failed; the others count as answered. */
static void account_merge(struct place_runtime *runtime, struct tree_request *request,
                          const otfx_module_result *result, uint32_t *answered)
{
    *answered = 0;
    size_t reason_offset = 0;
    for (size_t i = 0; i < request->part_count; i++) {
        bool refused = !result->ok;
        for (uint32_t k = 0; k < result->refused_count && !refused; k++)
            refused = result->refused[k] == i;
        if (!refused) {
            *answered += request->parts[i].answered;
            continue;
        }
        if (request->kind == TREE_QUERY && request->call_kind == CALL_PARTIAL)
            continue; /* a partial answer changes no count */
        request->count_failed += request->parts[i].answered;
        const char *why = result->ok ? NULL : result->error;
        size_t why_length = why ? strlen(why) : 0;
        if (!why && result->reasons.data) {
            const char *line = result->reasons.data + reason_offset;
            const char *end = strchr(line, '\n');
            why = line;
            why_length = end ? (size_t)(end - line) : strlen(line);
            reason_offset += why_length + (end ? 1 : 0);
        }
        add_error(&request->errors, request->parts[i].from, why ? why : "refused", why ? why_length : 7);
    }
    (void)runtime;
}

/* A helper of a request ended. */
static void loaded_call_done(struct place_runtime *runtime, struct tree_request *request)
{
    otfx_module_result result;
    const enum module_call_kind kind = request->call_kind;
    otfx_module_call_take(request->call, &result);
    request->call = NULL;
    request->call_kind = CALL_NONE;
    if (!result.ok)
        count_failure(runtime, &result);
    switch (kind) {
    case CALL_LOAD:
        request->own_pending = false;
        loaded(runtime, request, &result);
        break;
    case CALL_OWN_LEAF:
        request->own_pending = false;
        if (result.ok)
            stash_part(runtime, request, runtime->index, 1, result.data.data, result.data.length);
        else {
            request->count_failed++;
            add_error(&request->errors, runtime->index, result.error, strlen(result.error));
        }
        break;
    case CALL_MERGE: {
        uint32_t answered;
        account_merge(runtime, request, &result, &answered);
        request->count_ok += result.ok ? answered : 0;
        if (result.ok) {
            otfx_blob_free(&request->merged);
            otfx_blob_append(&request->merged, result.data.data, result.data.length);
        }
        free_parts(request);
        request->merge_done = true;
        break;
    }
    case CALL_PARTIAL: {
        uint32_t answered;
        request->call_kind = CALL_PARTIAL; /* for account_merge */
        account_merge(runtime, request, &result, &answered);
        request->call_kind = CALL_NONE;
        if (result.ok && request->client) {
            otfx_text text = {0};
            otfx_kv_begin(&text, "partial");
            otfx_kv_u64(&text, "partial", 1);
            otfx_kv_u64(&text, "answered", answered);
            otfx_kv_u64(&text, "total", runtime->leaves_below);
            otfx_kv_end(&text);
            otfx_text_append(&text, (const char *)result.data.data, result.data.length);
            if (!text.failed)
                reply(runtime, request->client, request->client_request, OTFX_FRAME_PARTIAL, &text);
            otfx_text_free(&text);
        }
        break;
    }
    case CALL_NONE:
        break;
    }
    otfx_module_result_free(&result);
    complete_if_answered(runtime, request); /* may remove the request */
}

/* Polls every helper; returns whether any ended. */
static bool poll_module_calls(struct place_runtime *runtime)
{
    bool active = false;
    for (size_t i = 0; i < runtime->request_count; i++) {
        struct tree_request *request = &runtime->requests[i];
        if (!request->call || !otfx_module_call_poll(request->call))
            continue;
        loaded_call_done(runtime, request);
        active = true;
        i = (size_t)-1; /* the array may have changed: look again from the start */
    }
    return active;
}

/* The root's PARTIAL of a loaded module's query: a helper merges and finishes what arrived so far. */
static void start_loaded_partial(struct place_runtime *runtime, struct tree_request *request)
{
    if (request->call || request->part_count == 0)
        return;
    otfx_blob *blobs = calloc(request->part_count, sizeof(*blobs));
    uint32_t *answered = calloc(request->part_count, sizeof(*answered));
    if (blobs && answered) {
        for (size_t i = 0; i < request->part_count; i++) {
            blobs[i] = request->parts[i].blob;
            answered[i] = request->parts[i].answered;
        }
        const otfx_module_limits limits = module_limits(runtime);
        char error[256];
        request->call = otfx_module_call_merge(request->loaded->path, request->loaded->name,
                                               &request->command, blobs, answered, request->part_count, true,
                                               runtime->leaves_below, &limits, error, sizeof(error));
        if (request->call)
            request->call_kind = CALL_PARTIAL;
    }
    free(blobs);
    free(answered);
}

static void snapshot_line(struct place_runtime *runtime, struct tree_request *request)
{
    const place_snapshot_result *result = &runtime->snapshot.result;
    begin_line(runtime, request, result->ok);
    if (result->ok) {
        otfx_kv_str(&request->lines, "archive", result->archive);
        otfx_kv_u64(&request->lines, "events", result->events_written);
        otfx_kv_u64(&request->lines, "locations", result->locations);
        otfx_kv_u64(&request->lines, "unpaired", result->messages_unpaired);
        otfx_kv_u64(&request->lines, "clock_moved", result->clock_corrected_events);
        otfx_kv_u64(&request->lines, "clock_max_ns", result->clock_max_correction_ns);
        otfx_kv_u64(&request->lines, "clock_unresolved", result->clock_unresolved_messages);
        otfx_kv_u64(&request->lines, "incomplete_collectives", result->collectives_incomplete);
    } else {
        otfx_kv_str(&request->lines, "error", result->error);
    }
    otfx_kv_str(&request->lines, "thread", runtime->snapshot.on_thread ? "snapshot" : "mpi");
    if (!runtime->snapshot.on_thread)
        otfx_kv_str(&request->lines, "note",
                    "MPI is not MPI_THREAD_MULTIPLE: ingestion paused while writing");
    otfx_kv_end(&request->lines);
}

static void start_snapshot(struct place_runtime *runtime, struct tree_request *request)
{
    runtime->snapshot.request = request->id;
    runtime->snapshot.command = request->command;
    request->snapshot_running = true;
    place_snapshot_start(runtime);
}

static enum capture_control_command control_of(const struct place_runtime *runtime,
                                               const otfx_command *command, uint64_t argument,
                                               uint64_t *control_argument)
{
    *control_argument = 0;
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
    default:
        return 0;
    }
}

/* Starts this place's own part of a request (if it has one). */
static void start_own_part(struct place_runtime *runtime, struct tree_request *request)
{
    if (request->kind == TREE_LOAD_MODULE) {
        load_module(runtime, request);
        return;
    }
    if (!runtime->is_event)
        return;
    if (request->kind == TREE_QUERY) {
        const char *problem = NULL;
        struct leaf_job *job = NULL;
        if (request->loaded)
            problem = start_loaded_leaf(runtime, request);
        else if (!request->module)
            problem = "module unknown at this place";
        else if (!(job = make_leaf_job(runtime, request)))
            problem = "out of memory for the query";
        else if (!place_worker_submit(runtime, job))
            problem = "cannot start the worker thread";
        else
            job = NULL; /* the worker's now */
        if (problem) {
            place_leaf_job_free(job);
            request->count_failed++;
            add_error(&request->errors, runtime->index, problem, strlen(problem));
            return;
        }
        request->own_pending = true;
        return;
    }
    switch (request->command.kind) {
    case OTFX_CMD_REDUCTION:
        set_reduction(runtime, request);
        return;
    default:
        break;
    }
    uint64_t argument = 0;
    const enum capture_control_command control =
        control_of(runtime, &request->command, request->argument, &argument);
    if (!control) {
        begin_line(runtime, request, false);
        otfx_kv_str(&request->lines, "error", "not a command for event places");
        otfx_kv_end(&request->lines);
        return;
    }
    if (control == CAPTURE_CONTROL_SET_CLASSES)
        runtime->enabled_classes = (uint32_t)argument;
    request->own_pending = true;
    request->snapshot_after_flush = request->command.kind == OTFX_CMD_SNAPSHOT;
    if (request->final) {
        runtime->place->job_failed = true;
        request->snapshot_after_flush = request->command.path[0] != '\0';
    }
    request->control_sequence = place_control_send(runtime->place, control, argument);
    if (request->control_sequence == 0)
        request->control_sequence = UINT64_MAX; /* no rank running: done at once (tree_poll) */
}

/* A request arrived (from the parent, or the root's client): forward it, start the own part. */
static void dispatch(struct place_runtime *runtime, struct tree_request *request, const unsigned char *bytes,
                     size_t length)
{
    struct tree_buffer encoded = {0};
    if (!bytes && runtime->child_count) {
        if (!tree_encode_command(&encoded, request->kind, request->id, request->argument,
                                 &request->command)) {
            fprintf(stderr, "otfx-place %d: out of memory sending request %u\n", place_rank(runtime),
                    request->id);
            request->count_failed += runtime->leaves_below;
        } else {
            bytes = encoded.data;
            length = encoded.length;
        }
    }
    for (uint32_t c = 0; bytes && c < runtime->child_count; c++) {
        struct tree_buffer copy = {malloc(length), length, length, false};
        if (!copy.data) {
            request->count_failed += otfx_tbon_leaves_below(runtime->layout, runtime->children[c]);
            continue;
        }
        memcpy(copy.data, bytes, length);
        place_tree_send(runtime, runtime->children[c], &copy);
        request->children_waiting++;
    }
    tree_buffer_free(&encoded);
    start_own_part(runtime, request);
    complete_if_answered(runtime, request);
}

/* ---- the root: client requests ------------------------------------------------------------------- */

static bool snapshot_in_flight(const struct place_runtime *runtime)
{
    for (size_t i = 0; i < runtime->request_count; i++)
        if (runtime->requests[i].command.kind == OTFX_CMD_SNAPSHOT)
            return true;
    return false;
}

static void add_window(struct place_runtime *runtime, uint64_t from, uint64_t to)
{
    if (runtime->window_count == runtime->window_capacity) {
        const size_t capacity = runtime->window_capacity ? 2 * runtime->window_capacity : 4;
        struct record_window *bigger = realloc(runtime->windows, capacity * sizeof(*bigger));
        if (!bigger)
            return;
        runtime->windows = bigger;
        runtime->window_capacity = capacity;
    }
    runtime->windows[runtime->window_count++] = (struct record_window){from, to};
}

static void handle_client_request(struct place_runtime *runtime, const otfx_server_request *client)
{
    const otfx_command *command = &client->command;
    if (runtime->end_stage >= ROOT_DRAINING) {
        reply_error(runtime, client->client, client->request, OTFX_ERR_CODE_JOB_ENDED,
                    "the application finished; the tree is going down");
        return;
    }
    enum tree_kind kind = TREE_COMMAND;
    if (is_query(command->kind)) {
        kind = TREE_QUERY;
        if (!module_of(command) && !loaded_module_of(runtime, command)) {
            char message[128];
            snprintf(message, sizeof(message), "no analysis module %s (load it with load-module PATH)",
                     command->kind == OTFX_CMD_QUERY ? command->module : otfx_command_name(command->kind));
            reply_error(runtime, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND, message);
            return;
        }
    } else if (command->kind == OTFX_CMD_LOAD_MODULE) {
        kind = TREE_LOAD_MODULE;
    } else if (command->kind == OTFX_CMD_SNAPSHOT && snapshot_in_flight(runtime)) {
        reply_error(runtime, client->client, client->request, OTFX_ERR_CODE_BUSY,
                    "a snapshot is being written; try again when it is done");
        return;
    }
    uint64_t argument = 0;
    if (command->kind == OTFX_CMD_RECORD_WINDOW) {
        const uint64_t from = place_now_ns();
        if (command->duration_ns > UINT64_MAX - from) {
            reply_error(runtime, client->client, client->request, OTFX_ERR_CODE_BAD_COMMAND,
                        "record window: the duration is too long: the window would end past the end of the "
                        "64-bit nanosecond clock");
            return;
        }
        argument = from + command->duration_ns;
        otfx_text text = {0};
        otfx_kv_begin(&text, "window");
        otfx_kv_u64(&text, "from", from);
        otfx_kv_u64(&text, "to", argument);
        otfx_kv_end(&text);
        reply(runtime, client->client, client->request, OTFX_FRAME_REPLY, &text);
        otfx_text_free(&text);
        add_window(runtime, from, argument);
    }
    const uint32_t id = runtime->next_request++;
    if (runtime->next_request == 0)
        runtime->next_request = 1; /* ids wrap around, skipping 0 */
    struct tree_request *request = add_request(runtime, id, kind, command, argument);
    if (!request) {
        reply_error(runtime, client->client, client->request, OTFX_ERR_CODE_FAILED, "out of memory");
        return;
    }
    if (command->kind != OTFX_CMD_RECORD_WINDOW) {
        request->client = client->client;
        request->client_request = client->request;
    }
    dispatch(runtime, request, NULL, 0);
}

static void notify_server(void *user)
{
    place_wake(user);
}

static void describe_layout(const struct place_runtime *runtime)
{
    const otfx_tbon_layout *layout = runtime->layout;
    const size_t size = 64u * layout->places + 16u * layout->places + 1024u;
    char *text = malloc(size);
    if (!text)
        return;
    otfx_tbon_describe(layout, text, size);
    fprintf(stderr, "otfx: tree of %u place%s (%u event place%s, fan-in %u) over %u application ranks\n%s",
            layout->places, layout->places == 1 ? "" : "s", layout->event_places,
            layout->event_places == 1 ? "" : "s", layout->fanin, layout->app_ranks, text);
    if (size && text[0] && text[strlen(text) - 1] != '\n')
        fputc('\n', stderr);
    free(text);
}

static bool start_server(struct place_runtime *runtime)
{
    const otfx_place_settings *settings = &runtime->place->setup.settings;
    if (settings->job_id)
        snprintf(runtime->job_id, sizeof(runtime->job_id), "%s", settings->job_id);
    else
        snprintf(runtime->job_id, sizeof(runtime->job_id), "%llu-%ld",
                 (unsigned long long)(place_now_ns() / 1000000u), (long)getpid());
    const otfx_server_config config = {
        .listen = settings->listen,
        .session_dir = settings->session_dir,
        .job_id = runtime->job_id,
        .app_ranks = runtime->layout->app_ranks,
        .places = runtime->layout->places,
        .notify = notify_server,
        .user = runtime,
    };
    char error[512] = "";
    describe_layout(runtime);
    runtime->server = otfx_server_start(&config, error, sizeof(error));
    if (!runtime->server) {
        fprintf(stderr,
                "otfx-place %d: the root cannot serve clients: %s (the job runs on without steering)\n",
                place_rank(runtime), error);
        return false;
    }
    return true;
}

/* ---- a failed job --------------------------------------------------------------------------------
 * An application rank that ends without MPI_Finalize (capture/src/dying.c: a fatal signal, MPI_Abort,
 * exit(); or its process found gone, event_place.c) leaves the others unable to finish: MPI_Finalize
 * would wait for it for ever. Its event place says so up the tree (FAILED); so does SIGINT or SIGTERM at
 * the root (mpiexec forwards them to every process). The root then sends one last command down, a
 * snapshot to OTFX_SNAPSHOT_ON_FAILURE (else OTFX_SNAPSHOT_AT_EXIT, else none) whose argument says
 * "final" and carries the exit status: every event place flushes its running ranks (waiting at most
 * FINAL_FLUSH_NS for ranks that do not answer), writes its part, prints its report (ranks that died and
 * ranks still running said so) and answers. The root writes OTFX_RUN_STATUS, removes the session file
 * and ends the job with MPI_Abort and the exit status: a signal's number, MPI_Abort's error code,
 * exit()'s status, 128 + the signal of an interruption. A place whose part is done ends the job itself
 * if the root has not done so FAILED_END_WAIT_NS later (the root may be what failed). */

#define FINAL_FLUSH_NS     (2ull * 1000u * 1000u * 1000u)
#define FAILED_END_WAIT_NS (60ull * 1000u * 1000u * 1000u)
#define FINAL_ARGUMENT     1u /* the command's argument: the last command of a failed job */
#define FINAL_NO_SNAPSHOT  2u /* ... which writes no snapshot (none was asked for) */
#define FINAL_CODE_SHIFT   32 /* the job's exit status in the argument's upper half */

static bool is_final_command(const struct tree_request *request)
{
    return request->kind == TREE_COMMAND && request->command.kind == OTFX_CMD_SNAPSHOT &&
           (request->argument & FINAL_ARGUMENT);
}

static void note_failure(struct place_runtime *runtime, uint32_t exit_code, const char *cause)
{
    if (runtime->failure.failed)
        return;
    runtime->failure.failed = true;
    runtime->failure.exit_code = exit_code ? exit_code : 1;
    snprintf(runtime->failure.cause, sizeof(runtime->failure.cause), "%s", cause);
}

/* A rank failed (`rank` UINT32_MAX: none in particular): the root notes it, the others tell their parent. */
static void report_failure(struct place_runtime *runtime, uint32_t rank, uint32_t exit_code,
                           const char *cause)
{
    if (runtime->is_root || !runtime->tree) {
        note_failure(runtime, exit_code, cause);
        return;
    }
    struct tree_buffer message;
    if (tree_encode_failed(&message, rank, exit_code, cause, strlen(cause)))
        place_tree_send(runtime, runtime->parent, &message);
    else
        fprintf(stderr, "otfx-place %d: out of memory: the failure of rank %u is not reported\n",
                place_rank(runtime), rank);
}

/* An event place's ranks that ended without MPI_Finalize, reported once each. */
static bool report_deaths(struct place_runtime *runtime)
{
    struct event_place *place = runtime->place;
    bool any = false;
    for (int r = 0; r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        if (!rank->death.died || rank->death.reported)
            continue;
        rank->death.reported = true;
        any = true;
        char what[sizeof(runtime->failure.cause) - 32], cause[sizeof(runtime->failure.cause)];
        place_describe_death(place, rank, what, sizeof(what));
        snprintf(cause, sizeof(cause), "rank %d %s", rank->rank, what);
        fprintf(stderr, "otfx-place %d: %s\n", place_rank(runtime), cause);
        report_failure(runtime, (uint32_t)rank->rank, (uint32_t)place_death_exit_code(rank), cause);
    }
    return any;
}

/* The root: the last command of a failed job (once no other snapshot is being written). */
static void start_final_command(struct place_runtime *runtime)
{
    if (runtime->failure.final_sent || snapshot_in_flight(runtime))
        return;
    runtime->failure.final_sent = true;
    runtime->end_stage = ROOT_FAILING;
    const otfx_place_settings *settings = &runtime->place->setup.settings;
    const char *path =
        settings->snapshot_on_failure ? settings->snapshot_on_failure : settings->snapshot_at_exit;
    otfx_command command;
    memset(&command, 0, sizeof(command));
    command.kind = OTFX_CMD_SNAPSHOT;
    command.to = UINT64_MAX;
    command.overwrite = settings->snapshot_overwrite != 0;
    if (path)
        snprintf(command.path, sizeof(command.path), "%s", path);
    const uint64_t argument = FINAL_ARGUMENT | (path ? 0u : FINAL_NO_SNAPSHOT) |
                              ((uint64_t)runtime->failure.exit_code << FINAL_CODE_SHIFT);
    if (!settings->run_status)
        fprintf(stderr, "otfx: the job failed: %s: %s\n", runtime->failure.cause,
                path ? "writing what the places hold" : "no snapshot on failure was asked for");
    struct tree_request *request =
        add_request(runtime, runtime->next_request++, TREE_COMMAND, &command, argument);
    if (!request) {
        fprintf(stderr, "otfx: out of memory: no snapshot of the failed job\n");
        end_failed_job(runtime, NULL);
        return;
    }
    request->final = true;
    dispatch(runtime, request, NULL, 0);
}

/* An event place's line for a final command without a snapshot, after its report. */
static void final_line(struct place_runtime *runtime, struct tree_request *request)
{
    place_print_report(runtime->place);
    begin_line(runtime, request, true);
    otfx_kv_str(&request->lines, "snapshot", "none");
    otfx_kv_end(&request->lines);
}

/* A place (not the root) did its part of the last command: the root ends the job now. */
static void await_end_of_failed_job(struct place_runtime *runtime, const struct tree_request *request)
{
    runtime->failure.exit_code = (uint32_t)(request->argument >> FINAL_CODE_SHIFT);
    runtime->failure.deadline_ns = place_now_ns() + FAILED_END_WAIT_NS;
}

static void end_if_root_did_not(struct place_runtime *runtime)
{
    if (!runtime->failure.deadline_ns || place_now_ns() < runtime->failure.deadline_ns)
        return;
    fprintf(stderr, "otfx-place %d: the failed job was not ended by the root: ending it\n",
            place_rank(runtime));
    fflush(stdout);
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, runtime->failure.exit_code ? (int)runtime->failure.exit_code : 1);
}

/* What a snapshot command's place lines say: written (with the archive), failed (the first error) or
 * none. */
struct snapshot_outcome {
    const char *state;
    char archive[4096];
    char error[512];
};

static void snapshot_outcome_of(const struct tree_request *request, struct snapshot_outcome *outcome)
{
    memset(outcome, 0, sizeof(*outcome));
    outcome->state = "none";
    if (!request)
        return;
    size_t offset = 0, length = 0;
    const char *line;
    while (request->lines.data &&
           otfx_kv_next_line(request->lines.data, request->lines.length, &offset, &line, &length)) {
        otfx_kv_line parsed;
        if (!otfx_kv_parse(line, length, &parsed))
            continue;
        const char *ok = otfx_kv_get(&parsed, "ok"), *archive = otfx_kv_get(&parsed, "archive"),
                   *error = otfx_kv_get(&parsed, "error");
        if (ok && strcmp(ok, "1") == 0 && archive && !outcome->archive[0])
            snprintf(outcome->archive, sizeof(outcome->archive), "%s", archive);
        if (ok && strcmp(ok, "0") == 0 && !outcome->error[0])
            snprintf(outcome->error, sizeof(outcome->error), "%s", error ? error : "unknown");
        otfx_kv_line_free(&parsed);
    }
    if (request->count_failed)
        outcome->state = "failed";
    else if (outcome->archive[0])
        outcome->state = "written";
}

/* One value per line: what a message holds in line breaks would end it early. */
static void put_status_value(FILE *file, const char *key, const char *value)
{
    fprintf(file, "%s=", key);
    for (const char *c = value; *c; c++)
        fputc(*c == '\n' || *c == '\r' ? ' ' : *c, file);
    fputc('\n', file);
}

/* OTFX_RUN_STATUS: how the job ended, for otfx-run's last line (written to a temporary file and renamed,
 * so a reader never sees half of it). */
static void write_run_status(struct place_runtime *runtime, const char *ending, const char *cause,
                             uint32_t exit_code, const struct snapshot_outcome *outcome)
{
    const char *path = runtime->place->setup.settings.run_status;
    if (!path || runtime->status_written)
        return;
    runtime->status_written = true;
    char temporary[4200];
    snprintf(temporary, sizeof(temporary), "%s.%ld", path, (long)getpid());
    FILE *file = fopen(temporary, "w");
    if (!file) {
        fprintf(stderr, "otfx: cannot write %s: %s\n", temporary, strerror(errno));
        return;
    }
    put_status_value(file, "ending", ending);
    if (cause)
        put_status_value(file, "cause", cause);
    fprintf(file, "exit_code=%u\n", exit_code);
    put_status_value(file, "snapshot", outcome->state);
    if (outcome->archive[0])
        put_status_value(file, "archive", outcome->archive);
    if (outcome->error[0])
        put_status_value(file, "error", outcome->error);
    if (fclose(file) != 0 || rename(temporary, path) != 0) {
        fprintf(stderr, "otfx: cannot write %s: %s\n", path, strerror(errno));
        unlink(temporary);
    }
}

/* The normal end: the snapshot at exit answered (request), or none was asked for (NULL). */
static void write_exit_status(struct place_runtime *runtime, const struct tree_request *request)
{
    struct snapshot_outcome outcome;
    snapshot_outcome_of(request, &outcome);
    write_run_status(runtime, "finished", NULL, 0, &outcome);
}

static void end_failed_job(struct place_runtime *runtime, const struct tree_request *request)
{
    struct snapshot_outcome outcome;
    snapshot_outcome_of(request, &outcome);
    const struct job_failure *failure = &runtime->failure;
    if (!runtime->place->setup.settings.run_status) {
        if (strcmp(outcome.state, "written") == 0)
            fprintf(stderr, "otfx: the job failed: %s; its trace is in %s\n", failure->cause,
                    outcome.archive);
        else if (strcmp(outcome.state, "failed") == 0)
            fprintf(stderr, "otfx: the job failed: %s; its snapshot failed: %s\n", failure->cause,
                    outcome.error);
    }
    write_run_status(runtime, failure->interrupted ? "interrupted" : "failed", failure->cause,
                     failure->exit_code, &outcome);
    for (size_t i = 0; i < runtime->request_count; i++)
        if (runtime->requests[i].client)
            reply_error(runtime, runtime->requests[i].client, runtime->requests[i].client_request,
                        OTFX_ERR_CODE_JOB_ENDED, "the job failed before this request was answered");
    otfx_text text = {0};
    otfx_kv_begin(&text, "notice");
    otfx_kv_str(&text, "event", "job-failed");
    otfx_kv_str(&text, "cause", failure->cause);
    otfx_kv_end(&text);
    broadcast_notice(runtime, &text);
    otfx_text_free(&text);
    if (runtime->server) {
        otfx_server_stop(runtime->server); /* removes the session file */
        runtime->server = NULL;
    }
    fflush(stdout);
    fflush(stderr);
    /* mpiexec's proxies stop forwarding output when the abort reaches them (manual_wrappers.c, abort_job) */
    const struct timespec forward_output = {0, 250 * 1000 * 1000};
    nanosleep(&forward_output, NULL);
    PMPI_Abort(MPI_COMM_WORLD, (int)failure->exit_code);
}

/* The root's side of a failed job, every turn of the loop. */
static void poll_root_failure(struct place_runtime *runtime)
{
    const int interrupt = place_interrupted();
    if (interrupt && !runtime->failure.failed && runtime->end_stage == ROOT_RUNNING) {
        char cause[64];
        snprintf(cause, sizeof(cause), "interrupted by %s", interrupt == SIGINT ? "SIGINT" : "SIGTERM");
        note_failure(runtime, 128u + (uint32_t)interrupt, cause);
        runtime->failure.interrupted = true;
    }
    if (runtime->failure.failed && runtime->end_stage == ROOT_RUNNING)
        start_final_command(runtime);
}

/* ---- start, messages, polling, end ---------------------------------------------------------------- */

bool tree_start(struct place_runtime *runtime)
{
    struct event_place *place = runtime->place;
    const otfx_event_place_setup *setup = &place->setup;
    runtime->next_request = 1;
    runtime->enabled_classes = OTFX_STEER_ALL;
    runtime->query_memory = place->query_memory;
    runtime->module_timeout_ns = place->module_timeout_ns;
    if (setup->served_count > 0 && place->ranks[0].control.classes)
        runtime->enabled_classes = place->ranks[0].control.classes;
    runtime->snapshot_dir = setup->settings.snapshot_dir;
    runtime->tree = setup->places_comm != MPI_COMM_NULL && setup->layout != NULL;
    if (!runtime->tree) {
        runtime->is_event = true;
        runtime->is_root = true;
        runtime->leaves_below = 1;
        return true;
    }
    const otfx_tbon_layout *layout = setup->layout;
    runtime->layout = layout;
    runtime->index = (uint32_t)setup->place_index;
    runtime->is_event = otfx_tbon_is_event_place(layout, runtime->index);
    runtime->is_root = runtime->index == otfx_tbon_root(layout);
    runtime->parent = otfx_tbon_parent(layout, runtime->index);
    runtime->leaves_below = otfx_tbon_leaves_below(layout, runtime->index);
    runtime->child_count = otfx_tbon_children(layout, runtime->index, NULL, 0);
    runtime->children = calloc(runtime->child_count ? runtime->child_count : 1, sizeof(uint32_t));
    if (!runtime->children) {
        fprintf(stderr, "otfx-place %d: out of memory starting the tree\n", place_rank(runtime));
        return false;
    }
    otfx_tbon_children(layout, runtime->index, runtime->children, runtime->child_count);
    runtime->threaded_snapshots = setup->thread_provided == MPI_THREAD_MULTIPLE;
    runtime->own_ended = !runtime->is_event; /* analysis places have no ranks to wait for */

    /* Collective over the places: every place does both, in this order. */
    PMPI_Comm_dup(setup->places_comm, &runtime->tree_comm);
    PMPI_Comm_set_errhandler(runtime->tree_comm, MPI_ERRORS_RETURN);
    PMPI_Comm_split(setup->places_comm, runtime->is_event ? 0 : MPI_UNDEFINED, (int)runtime->index,
                    &runtime->event_comm);
    int own = -1;
    PMPI_Comm_rank(runtime->tree_comm, &own);
    if (own != (int)runtime->index) {
        fprintf(stderr, "otfx-place %d: place index %u is rank %d of the places' communicator: no tree\n",
                place_rank(runtime), runtime->index, own);
        return false;
    }
    if (runtime->is_root)
        start_server(runtime);
    return true;
}

void tree_handle_message(struct place_runtime *runtime, int source, const unsigned char *bytes, size_t length)
{
    struct tree_message message;
    const char *problem = tree_decode(bytes, length, &message);
    const bool from_parent = runtime->parent != OTFX_TBON_NO_PARENT && (uint32_t)source == runtime->parent;
    bool from_child = false;
    for (uint32_t c = 0; c < runtime->child_count; c++)
        from_child = from_child || runtime->children[c] == (uint32_t)source;
    if (!problem) {
        switch (message.kind) {
        case TREE_QUERY:
        case TREE_COMMAND:
        case TREE_LOAD_MODULE:
        case TREE_SHUTDOWN:
            if (!from_parent)
                problem = "a request or shutdown that did not come from the parent";
            else if (message.kind != TREE_SHUTDOWN && find_request(runtime, message.request))
                problem = "a request id already in flight";
            break;
        case TREE_RESULT:
        case TREE_ACK: {
            const struct tree_request *request = find_request(runtime, message.request);
            if (!from_child)
                problem = "an answer that did not come from a child";
            else if (!request || !request->children_waiting)
                problem = "an answer to no request in flight here";
            else if ((message.kind == TREE_RESULT) != (request->kind == TREE_QUERY))
                problem = "an answer of the wrong kind for its request";
            break;
        }
        case TREE_DONE:
            if (!from_child)
                problem = "DONE that did not come from a child";
            else if (runtime->children_done >= runtime->child_count)
                problem = "more DONE messages than children";
            break;
        case TREE_FAILED:
            if (!from_child)
                problem = "a failure report that did not come from a child";
            break;
        }
    }
    if (problem) {
        fprintf(stderr, "otfx-place %d: malformed tree message of %zu bytes from place %d dropped: %s\n",
                place_rank(runtime), length, source, problem);
        return;
    }
    switch (message.kind) {
    case TREE_QUERY:
    case TREE_COMMAND:
    case TREE_LOAD_MODULE: {
        struct tree_request *request =
            add_request(runtime, message.request, message.kind, &message.command, message.argument);
        if (!request) {
            fprintf(stderr, "otfx-place %d: out of memory: request %u dropped\n", place_rank(runtime),
                    message.request);
            return;
        }
        request->final = is_final_command(request);
        dispatch(runtime, request, bytes, length);
        return;
    }
    case TREE_RESULT:
    case TREE_ACK: {
        struct tree_request *request = find_request(runtime, message.request);
        request->children_waiting--;
        if (message.kind == TREE_RESULT) {
            merge_result(runtime, request, (uint32_t)source, message.count_ok, message.count_failed,
                         message.data, message.data_length, message.error, message.error_length);
        } else {
            request->count_ok += message.count_ok;
            request->count_failed += message.count_failed;
            otfx_text_append(&request->lines, (const char *)message.data, message.data_length);
        }
        complete_if_answered(runtime, request);
        return;
    }
    case TREE_DONE:
        runtime->children_done++;
        return;
    case TREE_FAILED: {
        char what[sizeof(runtime->failure.cause)];
        const size_t kept = message.data_length < sizeof(what) - 1 ? message.data_length : sizeof(what) - 1;
        memcpy(what, message.data, kept);
        what[kept] = '\0';
        report_failure(runtime, message.failed_rank, message.exit_code, what);
        return;
    }
    case TREE_SHUTDOWN:
        for (uint32_t c = 0; c < runtime->child_count; c++) {
            struct tree_buffer shutdown;
            if (tree_encode_empty(&shutdown, TREE_SHUTDOWN, 0))
                place_tree_send(runtime, runtime->children[c], &shutdown);
        }
        runtime->shutdown = true;
        return;
    }
}

/* The own parts waiting for the ranks (control answers) or for a snapshot. */
static bool poll_own_parts(struct place_runtime *runtime)
{
    bool active = false;
    for (size_t i = 0; i < runtime->request_count; i++) {
        struct tree_request *request = &runtime->requests[i];
        if (!request->own_pending || request->kind != TREE_COMMAND)
            continue;
        if (request->final && request->control_sequence &&
            place_now_ns() - request->started_ns >= FINAL_FLUSH_NS)
            request->control_sequence = UINT64_MAX; /* ranks that do not answer: stuck, or gone unnoticed */
        if (request->control_sequence && (request->control_sequence == UINT64_MAX ||
                                          place_control_done(runtime->place, request->control_sequence))) {
            request->control_sequence = 0;
            active = true;
            if (request->command.kind == OTFX_CMD_RESET) {
                reset_traces(runtime, request); /* every batch sent before the FLUSH's answer is in */
                request->own_pending = false;
            } else if (request->final && !request->snapshot_after_flush) {
                final_line(runtime, request);
                request->own_pending = false;
            } else if (!request->snapshot_after_flush) {
                control_line(runtime, request);
                request->own_pending = false;
            }
        }
        if (request->snapshot_after_flush && !request->control_sequence && !request->snapshot_running &&
            !runtime->snapshot_busy) {
            start_snapshot(runtime, request); /* may finish right here (no MPI_THREAD_MULTIPLE) */
            active = true;
        }
        if (request->snapshot_running && runtime->snapshot.request == request->id &&
            place_snapshot_take(runtime)) {
            request->snapshot_running = false;
            request->snapshot_after_flush = false;
            snapshot_line(runtime, request);
            if (request->final)
                place_print_report(runtime->place); /* the run is over: what this place held */
            request->own_pending = false;
            active = true;
        }
        if (!request->own_pending) {
            complete_if_answered(runtime, request);
            i = (size_t)-1; /* the array changed: look again from the start */
        }
    }
    return active;
}

static void broadcast_notice(struct place_runtime *runtime, const otfx_text *text)
{
    if (runtime->server && text->data && !text->failed)
        otfx_server_broadcast(runtime->server, text->data, text->length);
}

static size_t queries_in_tree(const struct place_runtime *runtime)
{
    size_t count = 0;
    for (size_t i = 0; i < runtime->request_count; i++)
        count += runtime->requests[i].kind == TREE_QUERY;
    return count;
}

/* Queries enter the tree at most MAX_QUERIES_IN_TREE at once (each may hold up to the query memory
 * bound at every place on its way); the others wait here, in order. The places' workers answer one
 * leaf after the other anyway, so waiting here costs no time. */
static bool admit_queries(struct place_runtime *runtime)
{
    bool active = false;
    size_t in_tree = queries_in_tree(runtime);
    while (runtime->waiting_count && in_tree < MAX_QUERIES_IN_TREE) {
        const otfx_server_request next = runtime->waiting[0];
        memmove(runtime->waiting, runtime->waiting + 1, --runtime->waiting_count * sizeof(*runtime->waiting));
        if (!otfx_server_client_connected(runtime->server, next.client))
            continue; /* nobody waits for it any more */
        handle_client_request(runtime, &next);
        in_tree = queries_in_tree(runtime);
        active = true;
    }
    return active;
}

static bool poll_root(struct place_runtime *runtime)
{
    bool active = false;
    otfx_server_request client;
    while (runtime->server && otfx_server_next_request(runtime->server, &client)) {
        if (is_query(client.command.kind) &&
            (runtime->waiting_count || queries_in_tree(runtime) >= MAX_QUERIES_IN_TREE)) {
            if (runtime->waiting_count == runtime->waiting_capacity) {
                const size_t capacity = runtime->waiting_capacity ? 2 * runtime->waiting_capacity : 16;
                otfx_server_request *bigger = realloc(runtime->waiting, capacity * sizeof(*bigger));
                if (!bigger) {
                    reply_error(runtime, client.client, client.request, OTFX_ERR_CODE_FAILED,
                                "out of memory");
                    continue;
                }
                runtime->waiting = bigger;
                runtime->waiting_capacity = capacity;
            }
            runtime->waiting[runtime->waiting_count++] = client;
        } else {
            handle_client_request(runtime, &client);
        }
        active = true;
    }
    if (runtime->server && admit_queries(runtime))
        active = true;
    const uint64_t now = place_now_ns();
    for (size_t i = 0; i < runtime->request_count; i++) {
        struct tree_request *request = &runtime->requests[i];
        if (request->kind == TREE_QUERY && request->client && !request->partial_sent &&
            (request->loaded ? request->part_count > 0 : request->count_ok > 0) &&
            (request->children_waiting || request->own_pending) &&
            now - request->started_ns >= PARTIAL_AFTER_NS) {
            request->partial_sent = true;
            if (request->loaded)
                start_loaded_partial(runtime, request);
            else
                answer_query(runtime, request, true);
            active = true;
        }
    }
    for (size_t i = 0; i < runtime->window_count;) {
        if (now < runtime->windows[i].to) {
            i++;
            continue;
        }
        otfx_text text = {0};
        otfx_kv_begin(&text, "notice");
        otfx_kv_str(&text, "event", "window-ended");
        otfx_kv_u64(&text, "from", runtime->windows[i].from);
        otfx_kv_u64(&text, "to", runtime->windows[i].to);
        otfx_kv_end(&text);
        broadcast_notice(runtime, &text);
        otfx_text_free(&text);
        runtime->windows[i] = runtime->windows[--runtime->window_count];
        active = true;
    }
    return active;
}

/* The root's end of the run, once every place is done. */
static void poll_root_end(struct place_runtime *runtime)
{
    const char *at_exit = runtime->place->setup.settings.snapshot_at_exit;
    if (runtime->end_stage == ROOT_RUNNING) {
        if (at_exit && runtime->layout->event_places > 0) {
            if (snapshot_in_flight(runtime))
                return; /* a client's snapshot first: one collective at a time */
            otfx_command command;
            memset(&command, 0, sizeof(command));
            command.kind = OTFX_CMD_SNAPSHOT;
            command.to = UINT64_MAX;
            command.overwrite = runtime->place->setup.settings.snapshot_overwrite != 0;
            snprintf(command.path, sizeof(command.path), "%s", at_exit);
            runtime->end_stage = ROOT_EXIT_SNAPSHOT;
            struct tree_request *request =
                add_request(runtime, runtime->next_request++, TREE_COMMAND, &command, 0);
            if (request) {
                request->at_exit = true;
                dispatch(runtime, request, NULL, 0);
                return;
            }
            fprintf(stderr, "otfx: out of memory: no snapshot at exit\n");
        }
        runtime->end_stage = ROOT_DRAINING;
        runtime->end_stage_ns = place_now_ns();
    }
    if (runtime->end_stage != ROOT_DRAINING)
        return;
    if (runtime->request_count && place_now_ns() - runtime->end_stage_ns < DRAIN_TIMEOUT_NS)
        return;
    begin_shutdown(runtime);
}

static void begin_shutdown(struct place_runtime *runtime)
{
    write_exit_status(runtime, NULL); /* unless the snapshot at exit wrote it */
    if (runtime->request_count)
        fprintf(stderr, "otfx: %zu requests still unanswered at the end of the job\n",
                runtime->request_count);
    while (runtime->request_count) {
        struct tree_request *request = &runtime->requests[0];
        if (request->client)
            reply_error(runtime, request->client, request->client_request, OTFX_ERR_CODE_JOB_ENDED,
                        "the application finished before this request was answered");
        remove_request(runtime, request);
    }
    for (size_t i = 0; i < runtime->waiting_count; i++)
        reply_error(runtime, runtime->waiting[i].client, runtime->waiting[i].request, OTFX_ERR_CODE_JOB_ENDED,
                    "the application finished before this request was answered");
    runtime->waiting_count = 0;
    otfx_text text = {0};
    otfx_kv_begin(&text, "notice");
    otfx_kv_str(&text, "event", "job-ended");
    otfx_kv_end(&text);
    broadcast_notice(runtime, &text);
    otfx_text_free(&text);
    if (runtime->server) {
        otfx_server_stop(runtime->server);
        runtime->server = NULL;
    }
    for (uint32_t c = 0; c < runtime->child_count; c++) {
        struct tree_buffer shutdown;
        if (tree_encode_empty(&shutdown, TREE_SHUTDOWN, 0))
            place_tree_send(runtime, runtime->children[c], &shutdown);
    }
    runtime->end_stage = ROOT_SHUTDOWN;
    runtime->shutdown = true;
}

static void time_limit_error(const char *module, uint64_t limit_ns, char *out, size_t size)
{
    snprintf(out, size,
             "module %s did not answer within %.3g s (the module time limit, otfx-run --module-timeout)",
             module, (double)limit_ns / 1e9);
}

/* A built-in leaf over the time limit: its query is answered with that error now. */
static bool watch_worker(struct place_runtime *runtime)
{
    uint32_t id;
    const char *module;
    if (!place_worker_overdue(runtime, place_now_ns(), runtime->module_timeout_ns, &id, &module))
        return false;
    runtime->module_timeouts++;
    fprintf(stderr,
            "otfx-place %d: module %s did not answer within the time limit: its thread was given up on\n",
            place_rank(runtime), module);
    struct tree_request *request = find_request(runtime, id);
    if (request && request->own_pending) {
        char why[256];
        time_limit_error(module, runtime->module_timeout_ns, why, sizeof(why));
        request->own_pending = false;
        merge_result(runtime, request, runtime->index, 0, 1, NULL, 0, why, strlen(why));
        complete_if_answered(runtime, request);
    }
    return true;
}

bool tree_poll(struct place_runtime *runtime)
{
    struct event_place *place = runtime->place;
    bool active = false;
    struct leaf_job *job;
    while ((job = place_worker_take_result(runtime))) {
        struct tree_request *request = find_request(runtime, job->request);
        if (request && request->own_pending) {
            request->own_pending = false;
            if (job->took_ns > runtime->module_timeout_ns) {
                /* too late, even if the watchdog did not see it running: the same answer either way */
                char why[256];
                time_limit_error(job->module->name, runtime->module_timeout_ns, why, sizeof(why));
                runtime->module_timeouts++;
                merge_result(runtime, request, runtime->index, 0, 1, NULL, 0, why, strlen(why));
            } else if (job->ok) {
                merge_result(runtime, request, runtime->index, 1, 0, job->blob.data, job->blob.length, NULL,
                             0);
            } else {
                runtime->queries_too_large += job->blob.too_large;
                merge_result(runtime, request, runtime->index, 0, 1, NULL, 0, job->error, strlen(job->error));
            }
            complete_if_answered(runtime, request);
        }
        place_leaf_job_free(job);
        active = true;
    }
    if (watch_worker(runtime))
        active = true;
    if (poll_module_calls(runtime))
        active = true;
    if (runtime->request_count && poll_own_parts(runtime))
        active = true;
    if (runtime->is_event && report_deaths(runtime))
        active = true;
    if (runtime->is_event && !place->reported && place->goodbyes >= place->setup.served_count) {
        place_print_report(place);
        runtime->own_ended = true;
        active = true;
    }
    if (!runtime->tree) {
        if (runtime->own_ended && !runtime->request_count)
            runtime->shutdown = true;
        return active;
    }
    if (runtime->is_root && poll_root(runtime))
        active = true;
    if (runtime->is_root)
        poll_root_failure(runtime);
    else
        end_if_root_did_not(runtime);
    if (!runtime->done_sent && runtime->own_ended && runtime->children_done == runtime->child_count) {
        runtime->done_sent = true;
        active = true;
        if (!runtime->is_root) {
            struct tree_buffer done;
            if (tree_encode_empty(&done, TREE_DONE, 0))
                place_tree_send(runtime, runtime->parent, &done);
        }
    }
    if (runtime->is_root && runtime->done_sent && !runtime->shutdown && runtime->end_stage != ROOT_FAILING)
        poll_root_end(runtime);
    return active;
}

bool tree_finished(const struct place_runtime *runtime)
{
    return runtime->shutdown;
}

void tree_stop(struct place_runtime *runtime)
{
    while (runtime->request_count)
        remove_request(runtime, &runtime->requests[0]);
    free(runtime->requests);
    runtime->requests = NULL;
    if (runtime->server) {
        otfx_server_stop(runtime->server);
        runtime->server = NULL;
    }
    for (size_t i = 0; i < runtime->loaded_count; i++)
        free(runtime->loaded_modules[i]);
    free(runtime->loaded_modules);
    runtime->loaded_modules = NULL;
    runtime->loaded_count = 0;
    free(runtime->waiting);
    runtime->waiting = NULL;
    runtime->waiting_count = 0;
    free(runtime->windows);
    free(runtime->children);
    runtime->children = NULL;
    if (runtime->event_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&runtime->event_comm);
    if (runtime->tree_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&runtime->tree_comm);
}

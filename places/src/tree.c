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
 * stops the server and sends SHUTDOWN down the tree.
 */
#define _POSIX_C_SOURCE 200809L
#include "place_loop.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PARTIAL_AFTER_NS (200u * 1000u * 1000u)
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

static const otfx_analysis_module *module_of(const otfx_command *command)
{
    return command->kind == OTFX_CMD_QUERY ? otfx_analysis_find(command->module)
                                           : otfx_analysis_for_command(command->kind);
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
    return request;
}

static void remove_request(struct place_runtime *runtime, struct tree_request *request)
{
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
    if (!request->module->finish(&request->command, request->merged.data, request->merged.length,
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

/* The root's answer to a finished command: the places' lines and a summary. */
static void answer_command(struct place_runtime *runtime, struct tree_request *request)
{
    char token[64];
    const char *name = command_token(request->command.kind, token, sizeof(token));
    if (request->at_exit) {
        fprintf(stderr, "otfx: snapshot at exit %s: %u places ok, %u failed\n%.*s", request->command.path,
                request->count_ok, request->count_failed, (int)request->lines.length,
                request->lines.data ? request->lines.data : "");
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
static void complete_if_answered(struct place_runtime *runtime, struct tree_request *request)
{
    if (request->children_waiting || request->own_pending)
        return;
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
    }
    remove_request(runtime, request);
}

/* Merges one subtree's (or the own leaf's) partial result. */
static void merge_result(struct tree_request *request, uint32_t from, uint32_t answered, uint32_t failed,
                         const void *blob, size_t length, const char *error, size_t error_length)
{
    char why[256] = "";
    if (error_length)
        add_error(&request->errors, from, error, error_length);
    request->count_failed += failed;
    if (!answered)
        return;
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
    };
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

static void load_module(struct place_runtime *runtime, struct tree_request *request)
{
    char error[512] = "";
    const otfx_analysis_module *module = otfx_analysis_load(request->command.path, error, sizeof(error));
    begin_line(runtime, request, module != NULL);
    if (module)
        otfx_kv_str(&request->lines, "module", module->name);
    else
        otfx_kv_str(&request->lines, "error", error[0] ? error : "could not load the module");
    otfx_kv_end(&request->lines);
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
        if (!request->module)
            problem = "module unknown at this place";
        else if (!(job = make_leaf_job(runtime, request)))
            problem = "out of memory for the query";
        else if (!place_worker_submit(runtime, job))
            problem = "cannot start the worker thread";
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
        if (!module_of(command)) {
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

/* ---- start, messages, polling, end ---------------------------------------------------------------- */

bool tree_start(struct place_runtime *runtime)
{
    struct event_place *place = runtime->place;
    const otfx_event_place_setup *setup = &place->setup;
    runtime->next_request = 1;
    runtime->enabled_classes = OTFX_CLASS_ALL;
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
        dispatch(runtime, request, bytes, length);
        return;
    }
    case TREE_RESULT:
    case TREE_ACK: {
        struct tree_request *request = find_request(runtime, message.request);
        request->children_waiting--;
        if (message.kind == TREE_RESULT) {
            merge_result(request, (uint32_t)source, message.count_ok, message.count_failed, message.data,
                         message.data_length, message.error, message.error_length);
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
        if (request->control_sequence && (request->control_sequence == UINT64_MAX ||
                                          place_control_done(runtime->place, request->control_sequence))) {
            request->control_sequence = 0;
            active = true;
            if (request->command.kind == OTFX_CMD_RESET) {
                reset_traces(runtime, request); /* every batch sent before the FLUSH's answer is in */
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

static bool poll_root(struct place_runtime *runtime)
{
    bool active = false;
    otfx_server_request client;
    while (runtime->server && otfx_server_next_request(runtime->server, &client)) {
        handle_client_request(runtime, &client);
        active = true;
    }
    const uint64_t now = place_now_ns();
    for (size_t i = 0; i < runtime->request_count; i++) {
        struct tree_request *request = &runtime->requests[i];
        if (request->kind == TREE_QUERY && request->client && !request->partial_sent &&
            request->count_ok > 0 && (request->children_waiting || request->own_pending) &&
            now - request->started_ns >= PARTIAL_AFTER_NS) {
            request->partial_sent = true;
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

bool tree_poll(struct place_runtime *runtime)
{
    struct event_place *place = runtime->place;
    bool active = false;
    struct leaf_job *job;
    while ((job = place_worker_take_result(runtime))) {
        struct tree_request *request = find_request(runtime, job->request);
        if (request && request->own_pending) {
            request->own_pending = false;
            if (job->ok)
                merge_result(request, runtime->index, 1, 0, job->blob.data, job->blob.length, NULL, 0);
            else
                merge_result(request, runtime->index, 0, 1, NULL, 0, job->error, strlen(job->error));
            complete_if_answered(runtime, request);
        }
        place_leaf_job_free(job);
        active = true;
    }
    if (runtime->request_count && poll_own_parts(runtime))
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
    if (!runtime->done_sent && runtime->own_ended && runtime->children_done == runtime->child_count) {
        runtime->done_sent = true;
        active = true;
        if (!runtime->is_root) {
            struct tree_buffer done;
            if (tree_encode_empty(&done, TREE_DONE, 0))
                place_tree_send(runtime, runtime->parent, &done);
        }
    }
    if (runtime->is_root && runtime->done_sent && !runtime->shutdown)
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
    free(runtime->windows);
    free(runtime->children);
    runtime->children = NULL;
    if (runtime->event_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&runtime->event_comm);
    if (runtime->tree_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&runtime->tree_comm);
}

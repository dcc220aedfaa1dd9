/*
 * archive.c — an OTF2 archive in an in-process store, answering the protocol's queries with the analysis
 * modules on one place that holds every rank, and served with the root's server (otfx/archive.h).
 */
#define _GNU_SOURCE
#include <otfx/analysis.h>
#include <otfx/archive.h>
#include <otfx/server.h>
#include <otfx/trace.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BUDGET       ((size_t)1 << 30)
#define DEFAULT_QUERY_MEMORY ((size_t)64 << 20)

struct otfx_archive {
    otfx_defs *defs;
    otfx_trace **traces;
    uint32_t *rank_of_trace, *thread_of_trace;
    otfx_rank_info *ranks;
    size_t trace_count;
    size_t query_memory;
    otfx_archive_info info;
};

static void say(char *out, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void say(char *out, size_t size, const char *format, ...)
{
    if (!out || !size)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(out, size, format, args);
    va_end(args);
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void archive_name(const char *anchor_path, char *name, size_t size)
{
    const char *base = strrchr(anchor_path, '/');
    base = base ? base + 1 : anchor_path;
    size_t length = strlen(base);
    if (length > 5 && strcmp(base + length - 5, ".otf2") == 0)
        length -= 5;
    say(name, size, "%.*s", (int)length, base);
}

otfx_archive *otfx_archive_open(const char *anchor_path, const otfx_archive_options *options, char *error,
                                size_t error_size)
{
    if (!anchor_path || !*anchor_path) {
        say(error, error_size, "no archive given");
        return NULL;
    }
    if (access(anchor_path, R_OK) != 0) {
        say(error, error_size, "%s: %s", anchor_path, strerror(errno));
        return NULL;
    }
    otfx_archive *archive = calloc(1, sizeof *archive);
    if (!archive) {
        say(error, error_size, "out of memory");
        return NULL;
    }
    const size_t budget =
        options && options->budget_per_location ? options->budget_per_location : DEFAULT_BUDGET;
    archive->query_memory = options && options->query_memory ? options->query_memory : DEFAULT_QUERY_MEMORY;
    otfx_trace_config config = otfx_trace_config_default(budget);
    otfx_import_stats stats = {0};
    otfx_status status = otfx_otf2_import_with_stats(anchor_path, &config, &archive->defs, &archive->traces,
                                                     &archive->trace_count, &stats);
    if (status != OTFX_OK) {
        say(error, error_size, "%s: cannot read it as an OTF2 archive: %s", anchor_path,
            otfx_strerror(status));
        free(archive);
        return NULL;
    }
    otfx_archive_info *info = &archive->info;
    archive_name(anchor_path, info->name, sizeof info->name);
    info->locations = (uint32_t)archive->trace_count;
    info->events = stats.events_imported;
    info->records_ignored = stats.records_ignored;
    archive->rank_of_trace = calloc(archive->trace_count ? archive->trace_count : 1, sizeof(uint32_t));
    archive->thread_of_trace = calloc(archive->trace_count ? archive->trace_count : 1, sizeof(uint32_t));
    if (!archive->rank_of_trace || !archive->thread_of_trace) {
        say(error, error_size, "out of memory");
        otfx_archive_close(archive);
        return NULL;
    }
    bool any_time = false;
    for (size_t i = 0; i < archive->trace_count; i++) {
        otfx_location_def location = {0};
        if (otfx_defs_get_location(archive->defs, otfx_trace_location(archive->traces[i]), &location) !=
            OTFX_OK) {
            say(error, error_size, "%s: a trace without its location definition", anchor_path);
            otfx_archive_close(archive);
            return NULL;
        }
        archive->rank_of_trace[i] = location.rank;
        archive->thread_of_trace[i] = location.thread;
        if (location.rank >= info->ranks)
            info->ranks = location.rank + 1;
        otfx_trace_status held;
        if (otfx_trace_status_get(archive->traces[i], &held) == OTFX_OK &&
            held.first_time <= held.last_time) {
            if (!any_time || held.first_time < info->first_time)
                info->first_time = held.first_time;
            if (!any_time || held.last_time > info->last_time)
                info->last_time = held.last_time;
            any_time = true;
        }
    }
    if (archive->trace_count == 0 || info->ranks == 0) {
        say(error, error_size, "%s holds no locations of application ranks", anchor_path);
        otfx_archive_close(archive);
        return NULL;
    }
    archive->ranks = calloc(info->ranks, sizeof *archive->ranks);
    if (!archive->ranks) {
        say(error, error_size, "out of memory");
        otfx_archive_close(archive);
        return NULL;
    }
    /* The run is over: every rank finished, nothing records, every class was recorded. */
    for (uint32_t r = 0; r < info->ranks; r++)
        archive->ranks[r] = (otfx_rank_info){.rank = r, .finished = true, .enabled_classes = OTFX_STEER_ALL};
    return archive;
}

void otfx_archive_close(otfx_archive *archive)
{
    if (!archive)
        return;
    otfx_analysis_follow_forget(archive->defs);
    for (size_t i = 0; i < archive->trace_count; i++)
        otfx_trace_destroy(archive->traces[i]);
    free(archive->traces);
    if (archive->defs)
        otfx_defs_destroy(archive->defs);
    free(archive->rank_of_trace);
    free(archive->thread_of_trace);
    free(archive->ranks);
    free(archive);
}

const otfx_archive_info *otfx_archive_info_of(const otfx_archive *archive)
{
    return &archive->info;
}

static otfx_frame_kind error_line(otfx_text *out, const char *code, const char *message)
{
    out->length = 0;
    otfx_kv_begin(out, "error");
    otfx_kv_str(out, "code", code);
    otfx_kv_str(out, "message", message);
    otfx_kv_end(out);
    return OTFX_FRAME_ERROR;
}

/* What an archive cannot do, for the commands that need a running job. */
static const char *refusal(otfx_command_kind kind)
{
    switch (kind) {
    case OTFX_CMD_RECORD_PAUSE:
    case OTFX_CMD_RECORD_RESUME:
    case OTFX_CMD_RECORD_WINDOW:
    case OTFX_CMD_APP_PAUSE:
    case OTFX_CMD_APP_RESUME:
    case OTFX_CMD_RESET:
    case OTFX_CMD_REDUCTION:
    case OTFX_CMD_ENABLE:
    case OTFX_CMD_DISABLE:
        return "steers a running job; an opened archive is a finished run";
    case OTFX_CMD_SNAPSHOT:
        return "writes a running job's events; an opened archive is on disk already (cut it with --from/--to "
               "in a live job, or with OTF2 tools)";
    case OTFX_CMD_LOAD_MODULE:
    case OTFX_CMD_QUERY:
        return "runs loaded modules in a job's helper processes; an opened archive answers the built-in "
               "queries only";
    default:
        return NULL;
    }
}

otfx_frame_kind otfx_archive_answer(otfx_archive *archive, const otfx_command *command, otfx_text *out)
{
    char message[1024];
    const char *refused = refusal(command->kind);
    if (refused) {
        say(message, sizeof message, "%s %s", otfx_command_name(command->kind), refused);
        return error_line(out, OTFX_ERR_CODE_FAILED, message);
    }
    const otfx_analysis_module *module = otfx_analysis_for_command(command->kind);
    if (!module) {
        say(message, sizeof message, "%s is not a query an archive answers",
            otfx_command_name(command->kind));
        return error_line(out, OTFX_ERR_CODE_FAILED, message);
    }
    const otfx_leaf_input input = {
        .place = 0,
        .defs = archive->defs,
        .traces = archive->traces,
        .rank_of_trace = archive->rank_of_trace,
        .thread_of_trace = archive->thread_of_trace,
        .trace_count = archive->trace_count,
        .ranks = archive->ranks,
        .rank_count = archive->info.ranks,
        .app_ranks = archive->info.ranks,
        .now_ns = monotonic_ns(),
        .result_limit = archive->query_memory,
        .exchange = NULL, /* one place holds every rank */
    };
    char error[512] = "";
    otfx_blob partial = {.limit = archive->query_memory}, merged = {.limit = archive->query_memory};
    otfx_frame_kind kind = OTFX_FRAME_REPLY;
    out->length = 0;
    if (!module->leaf(command, &input, &partial, error, sizeof error)) {
        say(message, sizeof message, "place 0: %s", error[0] ? error : "the module failed");
        kind = error_line(out, OTFX_ERR_CODE_FAILED, message);
    } else if (!module->merge(command, &merged, partial.data, partial.length, error, sizeof error) ||
               !module->finish(command, merged.data, merged.length, 1, 1, out, error, sizeof error)) {
        kind = error_line(out, OTFX_ERR_CODE_FAILED,
                          error[0] ? error : "the module could not finish the result");
    } else if (out->failed) {
        kind = error_line(out, OTFX_ERR_CODE_FAILED, "out of memory for the reply");
    }
    otfx_blob_free(&partial);
    otfx_blob_free(&merged);
    return kind;
}

/* ---- serving ------------------------------------------------------------------------------------------ */

#define MAX_WORKERS 8

struct otfx_archive_server {
    otfx_archive *archive;
    otfx_server *server;
    char directory[PATH_MAX];
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    pthread_t workers[MAX_WORKERS];
    uint32_t worker_count;
};

static void notify(void *user)
{
    otfx_archive_server *self = user;
    pthread_mutex_lock(&self->lock);
    pthread_cond_broadcast(&self->wake);
    pthread_mutex_unlock(&self->lock);
}

static void *serve_requests(void *user)
{
    otfx_archive_server *self = user;
    for (;;) {
        otfx_server_request request;
        pthread_mutex_lock(&self->lock);
        while (!self->stopping && !otfx_server_next_request(self->server, &request))
            pthread_cond_wait(&self->wake, &self->lock);
        const bool stop = self->stopping;
        pthread_mutex_unlock(&self->lock);
        if (stop)
            return NULL;
        if (!otfx_server_client_connected(self->server, request.client))
            continue;
        otfx_text text = {0};
        const otfx_frame_kind kind = otfx_archive_answer(self->archive, &request.command, &text);
        otfx_server_reply(self->server, request.client, request.request, kind, text.data ? text.data : "",
                          text.length);
        otfx_text_free(&text);
    }
}

otfx_archive_server *otfx_archive_serve(otfx_archive *archive, uint32_t workers, char *error,
                                        size_t error_size)
{
    otfx_archive_server *self = calloc(1, sizeof *self);
    if (!self) {
        say(error, error_size, "out of memory");
        return NULL;
    }
    self->archive = archive;
    const char *tmp = getenv("TMPDIR");
    say(self->directory, sizeof self->directory, "%s/otfx-archive-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(self->directory)) {
        say(error, error_size, "cannot create a session directory under %s: %s", tmp && *tmp ? tmp : "/tmp",
            strerror(errno));
        free(self);
        return NULL;
    }
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->wake, NULL);
    char job[300];
    say(job, sizeof job, "archive:%s", archive->info.name);
    const otfx_server_config config = {.session_dir = self->directory,
                                       .job_id = job,
                                       .app_ranks = archive->info.ranks,
                                       .places = 1,
                                       .notify = notify,
                                       .user = self};
    self->server = otfx_server_start(&config, error, error_size);
    if (!self->server) {
        rmdir(self->directory);
        pthread_cond_destroy(&self->wake);
        pthread_mutex_destroy(&self->lock);
        free(self);
        return NULL;
    }
    const uint32_t wanted = workers == 0 ? 2 : workers > MAX_WORKERS ? MAX_WORKERS : workers;
    for (uint32_t i = 0; i < wanted; i++) {
        if (pthread_create(&self->workers[i], NULL, serve_requests, self) != 0)
            break;
        self->worker_count++;
    }
    if (self->worker_count == 0) {
        say(error, error_size, "cannot start a thread to answer requests");
        otfx_archive_server_stop(self);
        return NULL;
    }
    return self;
}

const char *otfx_archive_server_session_path(const otfx_archive_server *server)
{
    return otfx_server_session_path(server->server);
}

void otfx_archive_server_stop(otfx_archive_server *server)
{
    if (!server)
        return;
    pthread_mutex_lock(&server->lock);
    server->stopping = true;
    pthread_cond_broadcast(&server->wake);
    pthread_mutex_unlock(&server->lock);
    for (uint32_t i = 0; i < server->worker_count; i++)
        pthread_join(server->workers[i], NULL);
    otfx_server_stop(server->server); /* requests still queued get job-ended; the session file goes */
    rmdir(server->directory);
    pthread_cond_destroy(&server->wake);
    pthread_mutex_destroy(&server->lock);
    free(server);
}

/*
 * gui_fake_root.c — the root's server (otfx_server, the real frames) with recorded answers instead of a
 * tree, for testing otfx-gui without MPI. Usage: gui-fake-root SESSION_DIR REPLIES_DIR
 * Runs until SIGTERM/SIGINT, then tells its clients the job ended and removes its session file.
 *
 * Answers: status, timeline, profile, events → REPLIES_DIR/NAME.txt (recorded from a real job by
 * record_replies.py); status comes as a PARTIAL first, and says recording=off / app_state=paused after
 * `record pause` / `app pause`. record pause|resume, app pause|resume, reset, reduction, enable, disable,
 * snapshot → one place line per place and a summary; `record window D` → "window from= to=" and the
 * notice window-ended D later; `reduction stop` and a snapshot path with ".." → ERROR failed.
 */
#define _POSIX_C_SOURCE 200809L
#include <otfx/server.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stopping;
static const char *replies_dir;
static int recording = 1, app_running = 1;

static void on_signal(int signal)
{
    (void)signal;
    stopping = 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *read_reply(const char *name, size_t *length)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.txt", replies_dir, name);
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    char *data = NULL;
    size_t capacity = 0, used = 0;
    for (;;) {
        if (used + 4096 > capacity) {
            capacity = (capacity + 4096) * 2;
            char *grown = realloc(data, capacity + 1);
            if (!grown)
                break;
            data = grown;
        }
        size_t got = fread(data + used, 1, capacity - used, file);
        used += got;
        if (got == 0)
            break;
    }
    fclose(file);
    if (data)
        data[used] = '\0';
    *length = used;
    return data;
}

/* Replaces every "key=from" by "key=to" (same key) in the text. */
static void substitute(otfx_text *out, const char *text, const char *from, const char *to)
{
    size_t flen = strlen(from);
    const char *at;
    while ((at = strstr(text, from)) != NULL) {
        otfx_text_append(out, text, (size_t)(at - text));
        otfx_text_append(out, to, strlen(to));
        text = at + flen;
    }
    otfx_text_append(out, text, strlen(text));
}

static void status_reply(otfx_server *server, const otfx_server_request *request)
{
    size_t length = 0;
    char *data = read_reply("status", &length);
    if (!data) {
        otfx_server_reply(server, request->client, request->request, OTFX_FRAME_ERROR,
                          "error code=failed message=no%20recorded%20status\n", 45);
        return;
    }
    otfx_text first = {0}, second = {0};
    substitute(&first, data, " recording=on", recording ? " recording=on" : " recording=off");
    substitute(&second, first.data, " app_state=running",
               app_running ? " app_state=running" : " app_state=paused");
    otfx_server_reply(server, request->client, request->request, OTFX_FRAME_PARTIAL, second.data,
                      second.length);
    otfx_server_reply(server, request->client, request->request, OTFX_FRAME_REPLY, second.data,
                      second.length);
    otfx_text_free(&first);
    otfx_text_free(&second);
    free(data);
}

static void recorded(otfx_server *server, const otfx_server_request *request, const char *name)
{
    size_t length = 0;
    char *data = read_reply(name, &length);
    if (data)
        otfx_server_reply(server, request->client, request->request, OTFX_FRAME_REPLY, data, length);
    else
        otfx_server_reply(server, request->client, request->request, OTFX_FRAME_ERROR,
                          "error code=failed message=no%20recorded%20answer\n", 46);
    free(data);
}

static void error_reply(otfx_server *server, const otfx_server_request *request, const char *message)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "error");
    otfx_kv_str(&text, "code", OTFX_ERR_CODE_FAILED);
    otfx_kv_str(&text, "message", message);
    otfx_kv_end(&text);
    otfx_server_reply(server, request->client, request->request, OTFX_FRAME_ERROR, text.data, text.length);
    otfx_text_free(&text);
}

static uint64_t window_end, window_start;

static void answer(otfx_server *server, const otfx_server_request *request)
{
    const otfx_command *command = &request->command;
    switch (command->kind) {
    case OTFX_CMD_STATUS:
        status_reply(server, request);
        return;
    case OTFX_CMD_TIMELINE:
        recorded(server, request, "timeline");
        return;
    case OTFX_CMD_PROFILE:
        recorded(server, request, "profile");
        return;
    case OTFX_CMD_EVENTS:
        recorded(server, request, "events");
        return;
    case OTFX_CMD_REDUCTION:
        if (strcmp(command->strategy, "stop") == 0) {
            error_reply(server, request, "canned failure");
            return;
        }
        break;
    case OTFX_CMD_SNAPSHOT:
        if (strstr(command->path, "..")) {
            error_reply(server, request, "the path leaves the snapshot directory");
            return;
        }
        break;
    case OTFX_CMD_RECORD_PAUSE:
    case OTFX_CMD_RECORD_RESUME:
        recording = command->kind == OTFX_CMD_RECORD_RESUME;
        break;
    case OTFX_CMD_APP_PAUSE:
    case OTFX_CMD_APP_RESUME:
        app_running = command->kind == OTFX_CMD_APP_RESUME;
        break;
    case OTFX_CMD_RECORD_WINDOW: {
        otfx_text text = {0};
        window_start = now_ns();
        window_end = window_start + command->duration_ns;
        recording = 1;
        otfx_kv_begin(&text, "window");
        otfx_kv_u64(&text, "from", window_start);
        otfx_kv_u64(&text, "to", window_end);
        otfx_kv_end(&text);
        otfx_server_reply(server, request->client, request->request, OTFX_FRAME_REPLY, text.data,
                          text.length);
        otfx_text_free(&text);
        return;
    }
    default:
        break;
    }
    otfx_text text = {0};
    for (int place = 0; place < 2; place++) {
        otfx_kv_begin(&text, "place");
        otfx_kv_u64(&text, "index", (uint64_t)place);
        otfx_kv_str(&text, "command", otfx_command_name(command->kind));
        otfx_kv_u64(&text, "ok", 1);
        if (command->kind == OTFX_CMD_SNAPSHOT)
            otfx_kv_str(&text, "archive", command->path);
        otfx_kv_end(&text);
    }
    otfx_kv_begin(&text, "summary");
    otfx_kv_str(&text, "command", otfx_command_name(command->kind));
    otfx_kv_u64(&text, "places", 2);
    otfx_kv_u64(&text, "ok", 2);
    otfx_kv_u64(&text, "failed", 0);
    otfx_kv_end(&text);
    otfx_server_reply(server, request->client, request->request, OTFX_FRAME_REPLY, text.data, text.length);
    otfx_text_free(&text);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gui-fake-root SESSION_DIR REPLIES_DIR\n");
        return 2;
    }
    replies_dir = argv[2];
    struct sigaction action = {.sa_handler = on_signal};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    otfx_server_config config = {.session_dir = argv[1], .job_id = "gui-fake", .app_ranks = 4, .places = 3};
    char error[512];
    otfx_server *server = otfx_server_start(&config, error, sizeof error);
    if (!server) {
        fprintf(stderr, "gui-fake-root: %s\n", error);
        return 1;
    }
    while (!stopping) {
        otfx_server_request request;
        if (otfx_server_next_request(server, &request))
            answer(server, &request);
        else
            sleep_ms(2);
        if (window_end && now_ns() >= window_end) {
            otfx_text text = {0};
            otfx_kv_begin(&text, "notice");
            otfx_kv_str(&text, "event", "window-ended");
            otfx_kv_u64(&text, "from", window_start);
            otfx_kv_u64(&text, "to", window_end);
            otfx_kv_end(&text);
            otfx_server_broadcast(server, text.data, text.length);
            otfx_text_free(&text);
            window_end = 0;
            recording = 0;
        }
    }
    const char notice[] = "notice event=job-ended\n";
    otfx_server_broadcast(server, notice, sizeof notice - 1);
    otfx_server_stop(server);
    return 0;
}

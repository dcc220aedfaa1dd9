/*
 * fake_root.c — the root's server (otfx_server) with canned answers instead of a tree, for testing
 * otfxctl and other clients without MPI. Usage: otfx-fake-root SESSION_DIR [JOB_ID]
 * Runs until SIGTERM/SIGINT, then tells its clients the job ended and removes its session file.
 *
 * Answers: status → a status-module-like reply (summary + 2 place lines; a PARTIAL first);
 * profile → PARTIAL then REPLY; events → after 3 s (for client timeouts); reduction stop → ERROR
 * failed; snapshot fail and load-module fail → ERROR failed with a line per place saying why, as the
 * tree answers; every other command → "ok command=NAME line=LINE".
 */
#define _POSIX_C_SOURCE 200809L
#include <otfx/server.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stopping;

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

static void status_lines(otfx_text *text, int answered)
{
    otfx_kv_begin(text, "summary");
    otfx_kv_u64(text, "places", 2);
    otfx_kv_u64(text, "places_answered", (uint64_t)answered);
    otfx_kv_u64(text, "places_total", 2);
    otfx_kv_u64(text, "ranks", 8);
    otfx_kv_u64(text, "events_per_s", 123456);
    otfx_kv_u64(text, "buffer_used", 32u << 20);
    otfx_kv_u64(text, "buffer_budget", 128u << 20);
    otfx_kv_f64(text, "fill", 0.25);
    otfx_kv_str(text, "recording", "on");
    otfx_kv_str(text, "app_state", "running");
    otfx_kv_end(text);
    for (int place = 0; place < answered; place++) {
        otfx_kv_begin(text, "place");
        otfx_kv_u64(text, "index", (uint64_t)place);
        otfx_kv_u64(text, "ranks", 4);
        otfx_kv_u64(text, "events_per_s", 61728);
        otfx_kv_u64(text, "buffer_used", 16u << 20);
        otfx_kv_u64(text, "buffer_budget", 64u << 20);
        otfx_kv_f64(text, "fill", 0.25);
        otfx_kv_str(text, "strategy", "ring");
        otfx_kv_str(text, "recording", "on");
        otfx_kv_str(text, "app_state", "running");
        otfx_kv_u64(text, "blocked_ns", 1500000);
        otfx_kv_str(text, "note", place ? "a \"quoted\" name\twith tab" : "plain");
        otfx_kv_end(text);
    }
}

static void answer(otfx_server *server, const otfx_server_request *request)
{
    otfx_text text = {0};
    otfx_frame_kind kind = OTFX_FRAME_REPLY;
    switch (request->command.kind) {
    case OTFX_CMD_STATUS:
        status_lines(&text, 1);
        otfx_server_reply(server, request->client, request->request, OTFX_FRAME_PARTIAL, text.data,
                          text.length);
        otfx_text_free(&text);
        status_lines(&text, 2);
        break;
    case OTFX_CMD_PROFILE:
        otfx_kv_begin(&text, "profile");
        otfx_kv_u64(&text, "partial", 1);
        otfx_kv_end(&text);
        otfx_server_reply(server, request->client, request->request, OTFX_FRAME_PARTIAL, text.data,
                          text.length);
        otfx_text_free(&text);
        otfx_kv_begin(&text, "profile");
        otfx_kv_u64(&text, "partial", 0);
        otfx_kv_end(&text);
        otfx_kv_begin(&text, "region");
        otfx_kv_str(&text, "name", "MPI_Send");
        otfx_kv_u64(&text, "visits", 10);
        otfx_kv_u64(&text, "inclusive_ns", 2500);
        otfx_kv_end(&text);
        otfx_kv_begin(&text, "region");
        otfx_kv_str(&text, "name", "main");
        otfx_kv_u64(&text, "visits", 1);
        otfx_kv_u64(&text, "inclusive_ns", 3000000000ull);
        otfx_kv_end(&text);
        break;
    case OTFX_CMD_CRITICAL_PATH:
        /* the record lines of docs/protocol.md, a few of each */
        otfx_text_appendf(&text,
                          "critical-path from=0 to=2000000000 ranks=all length_ns=1500000000 "
                          "path_cpu_ns=1500000000 cpu_ns=4000000000 zero=%s zeroed_ns=1000000000 "
                          "functions=2 segments=2 segments_total=2 truncated=0 walk_breaks=0 "
                          "places_answered=2 places_total=2 partial=0\n",
                          request->command.zero[0] ? request->command.zero : "-");
        otfx_text_appendf(&text,
                          "cp-function name=late_compute cp_ns=900000000 cp_share=0.6 cpu_ns=1200000000 "
                          "cpu_share=0.3\n");
        otfx_text_appendf(&text, "cp-function name=serial_setup cp_ns=500000000 cp_share=0.3333 "
                                 "cpu_ns=500000000 cpu_share=0.125 zeroed_ns=1000000000\n");
        otfx_text_appendf(&text,
                          "cp-segment rank=0 thread=0 function=serial_setup start=1000 end=500001000\n");
        otfx_text_appendf(&text, "cp-segment rank=3 thread=0 function=late_compute start=500001000 "
                                 "end=1400001000\n");
        break;
    case OTFX_CMD_WAIT_STATES:
        otfx_text_appendf(&text,
                          "wait-states from=0 to=2000000000 ranks=all total_ns=2000000000 late_sender_ns=0 "
                          "late_receiver_ns=0 wait_nxn_ns=1200000000 late_broadcast_ns=800000000 "
                          "early_reduce_ns=0 functions=2 waiting_ranks=3 pairs=2 late_receiver_unknown=0 "
                          "places_answered=2 places_total=2 partial=0\n");
        otfx_text_appendf(&text, "ws-function name=MPI_Allreduce kind=wait-nxn wait_ns=1200000000 count=30 "
                                 "share=0.6\n");
        otfx_text_appendf(&text, "ws-function name=MPI_Bcast kind=late-broadcast wait_ns=800000000 count=3 "
                                 "share=0.4\n");
        otfx_text_appendf(&text, "ws-rank rank=1 wait_ns=700000000 late_sender_ns=0 late_receiver_ns=0 "
                                 "wait_nxn_ns=400000000 late_broadcast_ns=300000000 early_reduce_ns=0\n");
        otfx_text_appendf(&text, "ws-pair waiting=1 causing=3 wait_ns=400000000 share=0.2\n");
        otfx_text_appendf(&text, "ws-pair waiting=1 causing=0 wait_ns=300000000 share=0.15\n");
        break;
    case OTFX_CMD_EVENTS:
        sleep_ms(3000);
        otfx_kv_begin(&text, "events");
        otfx_kv_u64(&text, "count", 0);
        otfx_kv_end(&text);
        break;
    case OTFX_CMD_SNAPSHOT:
    case OTFX_CMD_LOAD_MODULE:
        if (strcmp(request->command.path, "fail") == 0) {
            /* as the tree answers a command that failed on its places */
            const char *name = request->command.kind == OTFX_CMD_SNAPSHOT ? "snapshot" : "load-module";
            kind = OTFX_FRAME_ERROR;
            otfx_kv_begin(&text, "error");
            otfx_kv_str(&text, "code", OTFX_ERR_CODE_FAILED);
            otfx_text_appendf(&text, " message=%s%%20failed%%20on%%202%%20of%%202%%20places", name);
            otfx_kv_end(&text);
            for (int place = 0; place < 2; place++) {
                otfx_kv_begin(&text, "place");
                otfx_kv_u64(&text, "index", (uint64_t)place);
                otfx_kv_str(&text, "command", name);
                otfx_kv_u64(&text, "ok", 0);
                otfx_kv_str(&text, "error", place ? "canned reason two" : "canned reason one");
                otfx_kv_end(&text);
            }
            otfx_kv_begin(&text, "summary");
            otfx_kv_str(&text, "command", name);
            otfx_kv_u64(&text, "places", 2);
            otfx_kv_u64(&text, "ok", 0);
            otfx_kv_u64(&text, "failed", 2);
            otfx_kv_end(&text);
            break;
        }
        goto plain;
    case OTFX_CMD_REDUCTION:
        if (strcmp(request->command.strategy, "stop") == 0) {
            kind = OTFX_FRAME_ERROR;
            otfx_kv_begin(&text, "error");
            otfx_kv_str(&text, "code", OTFX_ERR_CODE_FAILED);
            otfx_kv_str(&text, "message", "canned failure");
            otfx_kv_end(&text);
            break;
        }
        goto plain;
    default:
    plain:
        otfx_kv_begin(&text, "ok");
        otfx_kv_str(&text, "command", otfx_command_name(request->command.kind));
        otfx_kv_str(&text, "line", request->line);
        otfx_kv_end(&text);
        break;
    }
    otfx_server_reply(server, request->client, request->request, kind, text.data, text.length);
    otfx_text_free(&text);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: otfx-fake-root SESSION_DIR [JOB_ID]\n");
        return 2;
    }
    struct sigaction action = {.sa_handler = on_signal};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    otfx_server_config config = {
        .session_dir = argv[1], .job_id = argc > 2 ? argv[2] : "fake", .app_ranks = 8, .places = 2};
    char error[512];
    otfx_server *server = otfx_server_start(&config, error, sizeof error);
    if (!server) {
        fprintf(stderr, "otfx-fake-root: %s\n", error);
        return 1;
    }
    while (!stopping) {
        otfx_server_request request;
        if (otfx_server_next_request(server, &request))
            answer(server, &request);
        else
            sleep_ms(2);
    }
    const char notice[] = "notice event=job-ended\n";
    otfx_server_broadcast(server, notice, sizeof notice - 1);
    otfx_server_stop(server);
    return 0;
}

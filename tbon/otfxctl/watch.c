/*
 * watch.c — otfxctl watch: `status` every few seconds as one line of the job's state and a table of the
 * places' moving figures, until the count is reached or the job ends; and critical-path / wait-states
 * --follow: the same query under one follow ID every few seconds, each answer printed.
 */
#define _GNU_SOURCE
#include "otfxctl.h"
#include "output.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The status reply as watch shows it: one line of the job's state, then per place the figures that
 * move (all fields: otfxctl status). */
static void print_watch(const char *payload, size_t length)
{
    static const char *const place_keys[] = {
        "index",    "ranks",      "events_per_s",   "buffer_used",    "buffer_budget",   "fill",
        "strategy", "reductions", "events_reduced", "dropped_events", "throttled_calls", "recording",
        "app_state"};
    otfx_text places = {0};
    size_t offset = 0, line_length;
    const char *line;
    while (otfx_kv_next_line(payload, length, &offset, &line, &line_length)) {
        otfx_kv_line kv;
        if (!otfx_kv_parse(line, line_length, &kv))
            continue;
        if (strcmp(kv.type, "summary") == 0) {
            char used[64] = "?", budget[64] = "?", fill[64] = "?";
            const char *v;
            if ((v = otfx_kv_get(&kv, "buffer_used")))
                humanize("buffer_used", v, used, sizeof used);
            if ((v = otfx_kv_get(&kv, "buffer_budget")))
                humanize("buffer_budget", v, budget, sizeof budget);
            if ((v = otfx_kv_get(&kv, "fill")))
                humanize("fill", v, fill, sizeof fill);
            const char *app = otfx_kv_get(&kv, "app_state"), *recording = otfx_kv_get(&kv, "recording");
            const char *rate = otfx_kv_get(&kv, "events_per_s"),
                       *answered = otfx_kv_get(&kv, "places_answered");
            const char *total = otfx_kv_get(&kv, "places_total");
            printf(
                "application %s, recording %s, %s events/s, buffers %s of %s (%s), places %s/%s answered\n",
                app ? app : "?", recording ? recording : "?", rate ? rate : "?", used, budget, fill,
                answered ? answered : "?", total ? total : "?");
        } else if (strcmp(kv.type, "place") == 0) {
            otfx_kv_begin(&places, "place");
            for (size_t k = 0; k < sizeof place_keys / sizeof place_keys[0]; k++) {
                const char *value = otfx_kv_get(&kv, place_keys[k]);
                if (value)
                    otfx_kv_str(&places, place_keys[k], value);
            }
            otfx_kv_end(&places);
        } else {
            otfx_text_append(&places, line, line_length);
            otfx_text_append(&places, "\n", 1);
        }
        otfx_kv_line_free(&kv);
    }
    if (places.length) {
        fputc('\n', stdout);
        print_payload(places.data, places.length, false);
    }
    otfx_text_free(&places);
    fflush(stdout);
}

/* Waits until `interval_s` after `started_ms`, but notices a job that ends meanwhile: EXIT_OK, the
 * exit code of a failure, or EXIT_JOB_ENDED (said on stderr). */
enum { EXIT_JOB_ENDED = -1 };
static int pause_for_next(otfx_client *client, uint64_t started_ms, double interval_s, const char *next)
{
    const uint64_t elapsed = now_ms() - started_ms;
    const uint64_t interval_ms = (uint64_t)(interval_s * 1000.0);
    if (elapsed >= interval_ms)
        return EXIT_OK;
    const uint64_t pause_ms = interval_ms - elapsed;
    if (!otfx_client_wait_readable(client, pause_ms > INT_MAX ? INT_MAX : (int)pause_ms))
        return EXIT_OK;
    otfx_client_frame frame;
    const int rc = read_next_frame(client, 1000, next, &frame);
    if (rc != EXIT_OK)
        return rc;
    if (frame.header.kind == OTFX_FRAME_NOTICE && strstr(frame.payload, "event=job-ended")) {
        fprintf(stderr, "otfxctl: the job ended\n");
        return EXIT_JOB_ENDED;
    }
    return EXIT_OK;
}

int watch(otfx_client *client, const options *opts, double interval_s, uint64_t count)
{
    const otfx_session *session = otfx_client_session(client);
    const bool tty = !opts->json && isatty(STDOUT_FILENO);
    for (uint64_t round = 0; count == 0 || round < count; round++) {
        const uint64_t started = now_ms();
        otfx_text reply = {0};
        if (tty)
            fputs("\033[H\033[2J", stdout);
        if (!opts->json) {
            const time_t wall = time(NULL);
            struct tm tm;
            localtime_r(&wall, &tm);
            char when[32];
            strftime(when, sizeof when, "%H:%M:%S", &tm);
            printf("otfx job %s (%s:%s) at %s\n\n", session->job, session->address, session->port, when);
        }
        const request_result result =
            run_request(client, (uint32_t)(round % 0xfffffffeu) + 1, "status", opts, false, &reply);
        if (result.exit_code == EXIT_OK) {
            if (opts->json)
                print_payload(reply.data, reply.length, true);
            else
                print_watch(reply.data, reply.length);
        }
        otfx_text_free(&reply);
        if (result.job_ended) {
            fprintf(stderr, "otfxctl: the job ended\n");
            return EXIT_OK;
        }
        if (result.exit_code != EXIT_OK)
            return result.exit_code;
        if (!tty && !opts->json)
            fputc('\n', stdout);
        fflush(stdout);
        if (count && round + 1 == count)
            break;
        const int rc = pause_for_next(client, started, interval_s, "the next status");
        if (rc != EXIT_OK)
            return rc == EXIT_JOB_ENDED ? EXIT_OK : rc;
    }
    return EXIT_OK;
}

/* A fresh follow ID, 1 .. 2^63-1: random, so that two clients following the same job never share one. */
static uint64_t random_follow_id(void)
{
    uint64_t id = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (random) {
        if (fread(&id, sizeof id, 1, random) != 1)
            id = 0;
        fclose(random);
    }
    if (!id) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) * 0x9E3779B97F4A7C15ull ^
             (uint64_t)getpid();
    }
    id &= INT64_MAX;
    return id ? id : 1;
}

int follow(otfx_client *client, const options *opts, otfx_command *command, double interval_s, uint64_t count)
{
    if (!command->follow)
        command->follow = random_follow_id();
    otfx_text line = {0};
    otfx_command_format(command, &line);
    if (line.failed) {
        otfx_text_free(&line);
        return fail(EXIT_BAD_ARGUMENT, "out of memory");
    }
    int rc = EXIT_OK;
    for (uint64_t round = 0; count == 0 || round < count; round++) {
        const uint64_t started = now_ms();
        const request_result result =
            run_request(client, (uint32_t)(round % 0xfffffffeu) + 1, line.data, opts, opts->partial, NULL);
        if (result.job_ended) {
            fprintf(stderr, "otfxctl: the job ended\n");
            break;
        }
        if (result.exit_code != EXIT_OK) {
            rc = result.exit_code;
            break;
        }
        if (!opts->json)
            fputc('\n', stdout);
        fflush(stdout);
        if (count && round + 1 == count)
            break;
        rc = pause_for_next(client, started, interval_s, "the next round");
        if (rc != EXIT_OK) {
            rc = rc == EXIT_JOB_ENDED ? EXIT_OK : rc;
            break;
        }
    }
    otfx_text_free(&line);
    return rc;
}

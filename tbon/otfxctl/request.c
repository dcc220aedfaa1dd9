/*
 * request.c — otfxctl and the job: finding it, connecting, and one request's frames (otfx/client.h).
 */
#define _GNU_SOURCE
#include "otfxctl.h"
#include "output.h"

#include <otfx/archive.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit code of a failure of the client library, after saying why. */
static int client_failure(otfx_client_status status, const char *error)
{
    switch (status) {
    case OTFX_CLIENT_OK:
        return EXIT_OK;
    case OTFX_CLIENT_NO_SESSION:
        return fail(EXIT_NO_SESSION, "%s", error);
    case OTFX_CLIENT_BAD_ARGUMENT:
        return fail(EXIT_BAD_ARGUMENT, "%s", error);
    case OTFX_CLIENT_REFUSED_TOKEN:
        return fail(EXIT_REFUSED_TOKEN, "%s", error);
    case OTFX_CLIENT_TIMEOUT:
        return fail(EXIT_UNREACHABLE, "%s (see --timeout)", error);
    case OTFX_CLIENT_UNREACHABLE:
    case OTFX_CLIENT_OUT_OF_MEMORY:
    default:
        return fail(EXIT_UNREACHABLE, "%s", error);
    }
}

static void print_skipped(void *user, const char *path, const char *why)
{
    (void)user;
    fprintf(stderr, "otfxctl: ignoring the session file %s: %s\n", path, why);
}

static int64_t timeout_ms(const options *opts)
{
    return opts->timeout_s > 0 ? (int64_t)(opts->timeout_s * 1000.0) : -1;
}

/* --archive: the archive and its server live as long as the connection (close_job). */
static otfx_archive *served_archive;
static otfx_archive_server *archive_server;

int open_job(const options *opts, otfx_client **client)
{
    *client = NULL;
    otfx_session session;
    char error[8192];
    otfx_client_status status;
    if (opts->archive) {
        served_archive = otfx_archive_open(opts->archive, NULL, error, sizeof error);
        if (served_archive)
            archive_server = otfx_archive_serve(served_archive, 0, error, sizeof error);
        if (!archive_server) {
            close_job(NULL);
            return fail(EXIT_NO_SESSION, "%s", error);
        }
        status = otfx_session_read(otfx_archive_server_session_path(archive_server), &session, error,
                                   sizeof error);
    } else if (opts->session) {
        status = otfx_session_read(opts->session, &session, error, sizeof error);
    } else if (opts->connect) {
        if (!opts->token_file)
            return fail(EXIT_BAD_ARGUMENT,
                        "--connect needs --token-file (a session file or a file with the token)");
        status = otfx_session_from_address(opts->connect, opts->token_file, &session, error, sizeof error);
    } else {
        if (opts->token_file)
            return fail(EXIT_BAD_ARGUMENT, "--token-file goes with --connect ADDR:PORT");
        status = otfx_session_discover(NULL, &session, print_skipped, NULL, error, sizeof error);
    }
    if (status == OTFX_CLIENT_OK)
        *client = otfx_client_connect(&session, "otfxctl", timeout_ms(opts), &status, error, sizeof error);
    return client_failure(status, error);
}

void close_job(otfx_client *client)
{
    otfx_client_close(client);
    otfx_archive_server_stop(archive_server);
    archive_server = NULL;
    otfx_archive_close(served_archive);
    served_archive = NULL;
}

int read_next_frame(otfx_client *client, int64_t timeout, const char *waiting_for, otfx_client_frame *frame)
{
    char error[8192];
    otfx_client_set_timeout(client, timeout);
    return client_failure(otfx_client_read(client, frame, waiting_for, error, sizeof error), error);
}

request_result run_request(otfx_client *client, uint32_t id, const char *line, const options *opts,
                           bool print_partial, otfx_text *capture)
{
    request_result result = {EXIT_OK, false};
    char error[8192];
    otfx_client_set_timeout(client, timeout_ms(opts));
    otfx_client_status status = otfx_client_send(client, id, line, error, sizeof error);
    for (;;) {
        otfx_client_frame frame;
        if (status == OTFX_CLIENT_OK)
            status = otfx_client_read(client, &frame, "an answer", error, sizeof error);
        if (status != OTFX_CLIENT_OK) {
            result.exit_code = client_failure(status, error);
            return result;
        }
        const otfx_frame_header *header = &frame.header;
        const char *payload = frame.payload;
        if (header->kind == OTFX_FRAME_NOTICE) {
            if (strstr(payload, "event=job-ended"))
                result.job_ended = true;
            if (opts->json)
                print_payload(payload, header->length, true);
            else
                fprintf(stderr, "otfxctl: %.*s\n", (int)strcspn(payload, "\n"), payload);
        } else if (header->request != id) {
            /* not ours (an answer to a request given up on): ignore */
        } else if (header->kind == OTFX_FRAME_PARTIAL) {
            if (print_partial) {
                print_payload(payload, header->length, opts->json);
                if (!opts->json)
                    fputc('\n', stdout);
            }
        } else if (header->kind == OTFX_FRAME_REPLY) {
            if (capture)
                otfx_text_append(capture, payload, header->length);
            else
                print_payload(payload, header->length, opts->json);
            return result;
        } else if (header->kind == OTFX_FRAME_ERROR) {
            char code[64], message[1024];
            otfx_client_error_fields(payload, header->length, code, sizeof code, message, sizeof message);
            if (opts->json)
                print_payload(payload, header->length, true);
            if (strcmp(code, OTFX_ERR_CODE_JOB_ENDED) == 0) {
                result.job_ended = true;
                result.exit_code = fail(EXIT_UNREACHABLE, "the job ended before it answered");
            } else {
                result.exit_code = fail(EXIT_SERVER_ERROR, "%s (%s)", message, code);
                if (!opts->json)
                    print_failure_details(payload, header->length);
            }
            return result;
        }
    }
}

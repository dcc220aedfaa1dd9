/*
 * otfxctl.h — what the parts of otfxctl share: exit codes, options, the way it fails, and requests to
 * the job (request.c, over the client library otfx/client.h).
 */
#ifndef OTFXCTL_H
#define OTFXCTL_H

#include <otfx/client.h>
#include <otfx/protocol.h>

#include <stdbool.h>
#include <stdint.h>

enum {
    EXIT_OK = 0,
    EXIT_SERVER_ERROR = 1,
    EXIT_BAD_ARGUMENT = 2,
    EXIT_NO_SESSION = 3,
    EXIT_UNREACHABLE = 4,
    EXIT_REFUSED_TOKEN = 5
};

typedef struct options {
    const char *session;
    const char *connect;
    const char *token_file;
    const char *archive; /* --archive: an OTF2 archive opened and served in this process */
    bool json, partial;
    double timeout_s;
} options;

/* Prints "otfxctl: MESSAGE" on stderr and returns `code` (main.c). */
int fail(int code, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* ---- request.c ---------------------------------------------------------------------------------- */

/* Finds the job the options name (a session file, an address and token file, the newest session file
 * of $OTFX_SESSION_DIR / the working directory, or an archive served by this process: otfx/archive.h)
 * and connects to it. EXIT_OK with *client set, or the
 * exit code after saying why. */
int open_job(const options *opts, otfx_client **client);
/* Closes the connection and, with --archive, stops serving the archive. */
void close_job(otfx_client *client);

typedef struct request_result {
    int exit_code;
    bool job_ended; /* the job said it ended (a notice or ERROR code=job-ended) */
} request_result;

/* Sends `line` as request `id` and prints what comes back until the REPLY or ERROR (the REPLY's payload
 * goes into `capture` instead when given). Notices go to stderr (stdout with --json); PARTIAL answers
 * are printed when `print_partial`. */
request_result run_request(otfx_client *client, uint32_t id, const char *line, const options *opts,
                           bool print_partial, otfx_text *capture);

/* Reads the next frame (a notice between requests), with the exit code of a failure. */
int read_next_frame(otfx_client *client, int64_t timeout_ms, const char *waiting_for,
                    otfx_client_frame *frame);

/* ---- watch.c ------------------------------------------------------------------------------------ */

/* `status` every interval_s seconds, `count` times (0: until interrupted or the job ends). */
int watch(otfx_client *client, const options *opts, double interval_s, uint64_t count);

/* critical-path / wait-states --follow: `command` (its follow ID chosen at random when 0) every interval_s
 * seconds, `count` times (0: until interrupted or the job ends), each answer printed. */
int follow(otfx_client *client, const options *opts, otfx_command *command, double interval_s,
           uint64_t count);

#endif

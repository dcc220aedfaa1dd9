/*
 * otfx/client.h — the client side of the root server's protocol (docs/protocol.md): finding a running
 * job through its session file, connecting, the token's HELLO, requests and the frames that answer
 * them. Library otfx_client (static, position-independent; links otfx_protocol, nothing else).
 * otfxctl uses all of it; the viewer (otfx-gui), which drives its socket from the Qt event loop, uses
 * the parts that do no IO: discovery, the HELLO payload, the check of the server's answer to it, frame
 * scanning over a buffer and the fields of an ERROR.
 *
 * Blocking use, as otfxctl does it:
 *
 *   otfx_session session;
 *   char error[1024];
 *   otfx_client_status status = otfx_session_discover(NULL, &session, print_skipped, NULL, error,
 *                                                     sizeof error);
 *   otfx_client *client = status == OTFX_CLIENT_OK
 *       ? otfx_client_connect(&session, "my-tool", 30000, &status, error, sizeof error) : NULL;
 *   if (client && otfx_client_send(client, 1, "status", error, sizeof error) == OTFX_CLIENT_OK) {
 *       otfx_client_frame frame;
 *       while (otfx_client_read(client, &frame, "an answer", error, sizeof error) == OTFX_CLIENT_OK)
 *           if (frame.header.request == 1 && (frame.header.kind == OTFX_FRAME_REPLY ||
 *                                             frame.header.kind == OTFX_FRAME_ERROR))
 *               break; // frame.payload: record lines (otfx_kv_next_line, otfx_kv_parse)
 *   }
 *   otfx_client_close(client);
 *
 * Every function that can fail returns an otfx_client_status and writes a sentence for people into
 * `error` (without a program prefix: "otfxctl: " and the like are the caller's).
 */
#ifndef OTFX_CLIENT_H
#define OTFX_CLIENT_H

#include <otfx/protocol.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum otfx_client_status {
    OTFX_CLIENT_OK = 0,
    OTFX_CLIENT_NO_SESSION,    /* no usable session file found, or the file named is not one */
    OTFX_CLIENT_BAD_ARGUMENT,  /* a bad ADDR:PORT, or a token file without a token */
    OTFX_CLIENT_UNREACHABLE,   /* cannot resolve, connect or send; the job closed the connection or
                                * refused it for another reason than the token; a malformed frame */
    OTFX_CLIENT_TIMEOUT,       /* the deadline passed before the job answered */
    OTFX_CLIENT_REFUSED_TOKEN, /* the job answered the HELLO with ERROR code=auth */
    OTFX_CLIENT_OUT_OF_MEMORY
} otfx_client_status;

/* ---- finding a job: session files (docs/protocol.md section 1) ---------------------------------- */

#define OTFX_SESSION_TOKEN_DIGITS 32

/* What a client needs to reach a job. Numbers a session line lacks are 0; `job` is "?" then. */
typedef struct otfx_session {
    char path[4096]; /* the session file; with otfx_session_from_address: the token file */
    char address[256];
    char port[16];                             /* decimal, 1 to 65535 */
    char token[OTFX_SESSION_TOKEN_DIGITS + 1]; /* 32 lower-case hex digits */
    char job[128];
    uint64_t ranks, places, pid, started_ns;
} otfx_session;

/* Called for every otfx-session-*.txt that discovery skips because it may not be trusted (`why`:
 * "owned by uid 1001, not by you (uid 1000)", "mode 0644, not 0600 (…)", "not a regular file").
 * otfxctl prints it every time; the viewer, which looks every half second, once per file. */
typedef void otfx_session_skipped_fn(void *user, const char *path, const char *why);

/* The directory discovery searches: $OTFX_SESSION_DIR when set and not empty, else "." (the working
 * directory). */
const char *otfx_session_default_dir(void);

/* Whether a session file may be trusted: it names the server the token is handed to, so it must be a
 * regular file owned by the effective user and of mode 0600, as the job writes it. Returns true, or
 * false with the reason in `why` (stat's error when the file cannot be examined). */
bool otfx_session_file_trusted(const char *path, char *why, size_t why_size);

/* The newest (by modification time) trusted file named otfx-session-*.txt in `dir`, into `path`;
 * false when there is none. Untrusted files are reported to `skipped` (may be NULL) and passed over. */
bool otfx_session_find_newest(const char *dir, char *path, size_t path_size, otfx_session_skipped_fn *skipped,
                              void *user);

/* Reads a session file: checked for trust on the open file, then its first line must be a "session"
 * record line with address, port and a 32-digit token. OTFX_CLIENT_NO_SESSION when it is not one or
 * may not be used. */
otfx_client_status otfx_session_read(const char *path, otfx_session *out, char *error, size_t error_size);

/* otfx_session_find_newest + otfx_session_read in `dir` (NULL: otfx_session_default_dir()).
 * OTFX_CLIENT_NO_SESSION when no trusted file is there (the message says where it looked and how else
 * to name a job). */
otfx_client_status otfx_session_discover(const char *dir, otfx_session *out, otfx_session_skipped_fn *skipped,
                                         void *user, char *error, size_t error_size);

/* Splits "ADDR:PORT" ("[ADDR]:PORT" for IPv6). False with why in `error` ("expected ADDR:PORT", "the port
 * must be 1 to 65535"). */
bool otfx_parse_address(const char *text, char *address, size_t address_size, char *port, size_t port_size,
                        char *error, size_t error_size);

/* Reads a token file: a session file (its first line's token) or a file whose first line is just the
 * 32 hex digits. Not checked for trust: the user named it, and it only supplies the token. */
otfx_client_status otfx_session_read_token(const char *path, char *token, size_t token_size, char *error,
                                           size_t error_size);

/* A session from an address and a token file (--connect ADDR:PORT --token-file F). A bad address or
 * token file is OTFX_CLIENT_BAD_ARGUMENT; the address's error reads "bad --connect '…': …". */
otfx_client_status otfx_session_from_address(const char *address_port, const char *token_file,
                                             otfx_session *out, char *error, size_t error_size);

/* ---- frames over a buffer (no IO) --------------------------------------------------------------- */

typedef enum otfx_frame_scan {
    OTFX_FRAME_SCAN_READY = 0, /* a whole frame starts the buffer */
    OTFX_FRAME_SCAN_NEED_MORE, /* its header or payload is incomplete: read more and scan again */
    OTFX_FRAME_SCAN_BAD        /* not a frame of the server (error says why): close the connection */
} otfx_frame_scan;

/* Looks at the start of [data, data + size) for a frame from the server (payload up to
 * OTFX_PROTOCOL_MAX_REPLY). READY: *header is set, *payload points at its header->length bytes inside
 * `data` and *frame_bytes is what to drop from the buffer. NEED_MORE: *header is set when the header is
 * whole. Any bytes are safe input. */
otfx_frame_scan otfx_client_scan_frame(const void *data, size_t size, otfx_frame_header *header,
                                       const char **payload, size_t *frame_bytes, char *error,
                                       size_t error_size);

/* The payload of the HELLO frame: "hello token=TOKEN client=NAME\n". */
void otfx_client_hello_payload(const char *token, const char *client_name, otfx_text *out);

/* Judges the server's answer to the HELLO: OK for a WELCOME; REFUSED_TOKEN for ERROR code=auth
 * ("the job refused the token of PATH: why", `token_source` may be NULL); UNREACHABLE for another ERROR
 * or frame kind. */
otfx_client_status otfx_client_check_welcome(const otfx_frame_header *header, const char *payload,
                                             size_t length, const char *token_source, char *error,
                                             size_t error_size);

/* The code and message of an ERROR payload's first line ("error code=… message=…"); "?" and the raw
 * first line when it does not parse. */
void otfx_client_error_fields(const char *payload, size_t length, char *code, size_t code_size, char *message,
                              size_t message_size);

/* ---- a blocking connection ---------------------------------------------------------------------- */

typedef struct otfx_client otfx_client;

/* One frame read; `payload` is NUL-terminated (header.length bytes before the NUL) and stays valid until
 * the next otfx_client_read or otfx_client_close. */
typedef struct otfx_client_frame {
    otfx_frame_header header;
    const char *payload;
} otfx_client_frame;

/* Connects to the session's address (TCP, TCP_NODELAY), sends the HELLO with the session's token and
 * `client_name`, and waits for the WELCOME, all within `timeout_ms` (-1: no limit). NULL with *status
 * and `error` set on failure ("cannot connect to ADDR:PORT (job J): Connection refused — the job has
 * ended? stale session file PATH", "the job refused the token of PATH: …"). */
otfx_client *otfx_client_connect(const otfx_session *session, const char *client_name, int64_t timeout_ms,
                                 otfx_client_status *status, char *error, size_t error_size);
/* Closes the connection (NULL: nothing). */
void otfx_client_close(otfx_client *client);

/* The WELCOME's record line ("session job=… ranks=N places=P … max_in_flight=16"). */
const char *otfx_client_welcome(const otfx_client *client);
const otfx_session *otfx_client_session(const otfx_client *client);

/* Sets the deadline of the sends and reads that follow: now + timeout_ms (-1: none). A request and
 * every frame answering it share one deadline, so set it once per request. */
void otfx_client_set_timeout(otfx_client *client, int64_t timeout_ms);

/* Sends one command line as request `id` (not 0). */
otfx_client_status otfx_client_send(otfx_client *client, uint32_t id, const char *line, char *error,
                                    size_t error_size);

/* Reads the next frame (any request, notices included) before the deadline. `waiting_for` names it in
 * the error ("the job (ADDR:PORT, job J) closed the connection while NAME waited for an answer").
 * UNREACHABLE (closed, malformed: the connection is of no further use) or TIMEOUT. After a TIMEOUT
 * the connection may be read again when nothing of the next frame had arrived (a late answer still
 * comes); when part of it had, the connection is shut down and the next read says it closed. */
otfx_client_status otfx_client_read(otfx_client *client, otfx_client_frame *frame, const char *waiting_for,
                                    char *error, size_t error_size);

/* Waits up to timeout_ms (-1: forever) for the next frame to begin: true when bytes are there to read
 * (or the connection closed: the next otfx_client_read says so). Lets a caller sleep between requests
 * and still hear a notice at once. */
bool otfx_client_wait_readable(otfx_client *client, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif

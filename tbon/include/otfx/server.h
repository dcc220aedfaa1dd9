/*
 * otfx/server.h — the root's client server: TCP with libevent on a thread of its own (library
 * otfx_server). It authenticates clients, parses frames and hands every valid request to its owner
 * (the root place's MPI thread) through a queue; answers go back through otfx_server_reply from any
 * thread. The server never blocks its owner, and a client that sends garbage or disappears costs
 * only its own connection.
 *
 * At start it writes the session file `otfx-session-<jobid>.txt` (mode 0600, atomically: a temporary
 * file renamed) into config.session_dir, one record line (otfx/protocol.h):
 *   session address=127.0.0.1 port=PORT token=HEX32 job=ID ranks=N places=P pid=PID started_ns=T version=1
 * and removes it when stopped. The server thread blocks every signal (a client that went away gives
 * EPIPE, never SIGPIPE). Protocol details and limits: docs/protocol.md.
 */
#ifndef OTFX_SERVER_H
#define OTFX_SERVER_H

#include <otfx/protocol.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct otfx_server otfx_server;

typedef struct otfx_server_config {
    const char *listen;      /* "ADDR:PORT"; NULL: "127.0.0.1:0" (any free port) */
    const char *session_dir; /* NULL: the working directory (the place passes OTFX_SESSION_DIR's) */
    const char *job_id;      /* written into the session file and the WELCOME frame */
    uint32_t app_ranks, places;
    uint32_t max_clients;             /* authenticated at once; 0: 64 */
    uint32_t max_unauthenticated;     /* connected, no valid HELLO yet; when full, the oldest is cut; 0: 16 */
    uint32_t max_requests_per_client; /* in flight; 0: 16 */
    uint32_t hello_timeout_ms;        /* a connection without a valid HELLO by then is closed; 0: 5000 */
    size_t max_client_output;         /* answers one client has not read yet; 0: 64 MiB + 16 MiB */
    size_t max_total_output;          /* the same for all clients together; 0: 256 MiB */
    /* Called from the server thread whenever a request was queued (e.g. to wake the owner). */
    void (*notify)(void *user);
    void *user;
} otfx_server_config;

/* Binds, writes the session file, starts the thread. Prints "otfx: session file PATH (ADDR:PORT)" on
 * stderr. Returns NULL after writing why into `error`. */
otfx_server *otfx_server_start(const otfx_server_config *config, char *error, size_t error_size);

/* Where the session file is (valid until stop). */
const char *otfx_server_session_path(const otfx_server *server);
uint16_t otfx_server_port(const otfx_server *server);

typedef struct otfx_server_request {
    uint64_t client;  /* connection id (never reused) */
    uint32_t request; /* the client's request id */
    otfx_command command;
    char line[1024]; /* the command line as received (for logs) */
} otfx_server_request;

/* Takes the oldest queued request, if any (non-blocking, any thread). Requests of a client that
 * disconnected before they were taken are dropped from the queue. */
bool otfx_server_next_request(otfx_server *server, otfx_server_request *out);

/* Whether the client is still connected (an owner may skip work for a client that left). */
bool otfx_server_client_connected(otfx_server *server, uint64_t client);

/* Sends a PARTIAL, REPLY or ERROR frame with `payload` (record lines) to the client; silently dropped
 * when the client is gone or the request is not in flight (answered already). Thread-safe. A REPLY or
 * ERROR ends the request. A payload above OTFX_PROTOCOL_MAX_REPLY becomes "error code=failed". A
 * NOTICE with request 0 goes to that one client. */
void otfx_server_reply(otfx_server *server, uint64_t client, uint32_t request, otfx_frame_kind kind,
                       const char *payload, size_t length);
/* A NOTICE to every client (e.g. "notice event=job-ended"). */
void otfx_server_broadcast(otfx_server *server, const char *payload, size_t length);

/* Closes every connection (clients with requests in flight get error code job-ended), stops the
 * thread, removes the session file, frees everything. */
void otfx_server_stop(otfx_server *server);

#ifdef __cplusplus
}
#endif
#endif

/*
 * server.c — the root's client server (otfx/server.h): libevent on a thread of its own.
 *
 * Everything that touches a connection runs on the server thread. Other threads talk to it through
 * two locked queues: requests go out to the owner (otfx_server_next_request), answers come in
 * (otfx_server_reply/broadcast) and wake the loop with event_active on `wake`.
 */
#define _GNU_SOURCE
#include <otfx/server.h>
#include <otfx/support/growth.h>

#include "error_text.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>

enum {
    DEFAULT_MAX_CLIENTS = 64,
    DEFAULT_MAX_UNAUTHENTICATED = 16,
    DEFAULT_MAX_REQUESTS = 16,
    DEFAULT_HELLO_TIMEOUT_MS = 5000,
    CLOSE_LINGER_MS = 1000, /* a closing connection gets this long to take its error */
    TOKEN_BYTES = 16
};
/* Unread answers: a client may have at most one largest reply and some more waiting; all clients
 * together at most DEFAULT_MAX_TOTAL_OUTPUT. A client with more than READ_PAUSE_OUTPUT unread (or a
 * quarter of its bound, if less) is not read from (its requests wait in the socket) until it took all
 * but a quarter of that. */
#define DEFAULT_MAX_CLIENT_OUTPUT ((size_t)OTFX_PROTOCOL_MAX_REPLY + 16u * 1024u * 1024u)
#define DEFAULT_MAX_TOTAL_OUTPUT  ((size_t)256u * 1024u * 1024u)
#define READ_PAUSE_OUTPUT         ((size_t)4u * 1024u * 1024u)
#define STALLED_NS                (2ull * 1000u * 1000u * 1000u)

typedef struct request_node {
    otfx_server_request request;
    struct request_node *next;
} request_node;

typedef struct outgoing {
    uint64_t client; /* 0: every client (broadcast) */
    uint32_t request;
    otfx_frame_kind kind;
    size_t length;
    struct outgoing *next;
    char payload[];
} outgoing;

typedef struct connection {
    struct otfx_server *server;
    struct bufferevent *bev;
    struct event *hello_timer; /* until authenticated: a deadline that trickled bytes do not move */
    uint64_t id;
    bool authenticated, closing;
    bool reading_paused; /* too many answers unread: its requests wait in the socket */
    uint64_t paused_ns;  /* since when */
    uint32_t in_flight_count;
    uint32_t *in_flight; /* request ids, max_requests_per_client of them */
    struct connection *next;
} connection;

struct otfx_server {
    otfx_server_config config;
    char listen_text[256];
    char job_id[128];
    char token[2 * TOKEN_BYTES + 1];
    char session_path[4096];
    char address[INET6_ADDRSTRLEN];
    uint16_t port;

    struct event_base *base;
    struct evconnlistener *listener;
    struct event *wake;
    pthread_t thread;
    bool thread_started;

    /* server thread only */
    connection *connections;
    uint32_t connection_count;
    uint32_t authenticated_count; /* not closing */
    uint64_t next_client_id;
    bool shutting_down;
    uint64_t evicted_unauthenticated, refused_unread, dropped_unread;

    /* shared, under `lock` */
    pthread_mutex_t lock;
    request_node *requests_head, *requests_tail;
    outgoing *outgoing_head, *outgoing_tail;
    uint64_t *live_clients; /* ids of connected clients (for otfx_server_client_connected) */
    uint32_t live_count, live_capacity;
    bool stop_requested, stopped;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- frames out --------------------------------------------------------------------------------- */

static void send_frame(connection *conn, otfx_frame_kind kind, uint32_t request, const char *payload,
                       size_t length)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, kind, request, (uint32_t)length);
    struct evbuffer *output = bufferevent_get_output(conn->bev);
    evbuffer_add(output, header, sizeof header);
    if (length)
        evbuffer_add(output, payload, length);
}

static void send_error(connection *conn, uint32_t request, const char *code, const char *message)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "error");
    otfx_kv_str(&text, "code", code);
    otfx_kv_str(&text, "message", message);
    otfx_kv_end(&text);
    if (!text.failed)
        send_frame(conn, OTFX_FRAME_ERROR, request, text.data, text.length);
    otfx_text_free(&text);
}

/* ---- connections -------------------------------------------------------------------------------- */

static bool live_add(otfx_server *server, uint64_t id)
{
    bool ok = true;
    pthread_mutex_lock(&server->lock);
    ok = otfx_reserve_u32((void **)&server->live_clients, &server->live_capacity,
                          (size_t)server->live_count + 1, sizeof *server->live_clients, 64);
    if (ok)
        server->live_clients[server->live_count++] = id;
    pthread_mutex_unlock(&server->lock);
    return ok;
}

/* Forgets a client: its requests not yet taken by the owner are dropped. */
static void live_remove(otfx_server *server, uint64_t id)
{
    pthread_mutex_lock(&server->lock);
    for (uint32_t i = 0; i < server->live_count; i++)
        if (server->live_clients[i] == id) {
            server->live_clients[i] = server->live_clients[--server->live_count];
            break;
        }
    request_node **link = &server->requests_head;
    server->requests_tail = NULL;
    while (*link) {
        request_node *node = *link;
        if (node->request.client == id) {
            *link = node->next;
            free(node);
        } else {
            server->requests_tail = node;
            link = &node->next;
        }
    }
    pthread_mutex_unlock(&server->lock);
}

static void free_connection(connection *conn)
{
    otfx_server *server = conn->server;
    for (connection **link = &server->connections; *link; link = &(*link)->next)
        if (*link == conn) {
            *link = conn->next;
            break;
        }
    server->connection_count--;
    if (conn->authenticated && !conn->closing)
        server->authenticated_count--;
    live_remove(server, conn->id);
    if (conn->hello_timer)
        event_free(conn->hello_timer);
    bufferevent_free(conn->bev);
    free(conn->in_flight);
    free(conn);
    if (server->shutting_down && server->connections == NULL)
        event_base_loopbreak(server->base);
}

static void closing_write_cb(struct bufferevent *bev, void *arg)
{
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        free_connection(arg);
}

static void event_cb(struct bufferevent *bev, short events, void *arg);

/* Stops reading; the connection is freed once what was written has gone out (or after a linger). */
static void close_after_flush(connection *conn)
{
    if (conn->closing)
        return;
    if (conn->authenticated)
        conn->server->authenticated_count--;
    conn->closing = true;
    bufferevent_disable(conn->bev, EV_READ);
    const struct timeval linger = {CLOSE_LINGER_MS / 1000, (CLOSE_LINGER_MS % 1000) * 1000};
    bufferevent_set_timeouts(conn->bev, NULL, &linger);
    bufferevent_setwatermark(conn->bev, EV_WRITE, 0, 0);
    bufferevent_setcb(conn->bev, NULL, closing_write_cb, event_cb, conn);
    /* never frees here (callers still hold conn): the deferred write callback does, even when the
     * output is empty already */
    bufferevent_trigger(conn->bev, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

static void protocol_error(connection *conn, uint32_t request, const char *code, const char *message)
{
    send_error(conn, request, code, message);
    close_after_flush(conn);
}

static bool in_flight_find(connection *conn, uint32_t request, uint32_t *index)
{
    for (uint32_t i = 0; i < conn->in_flight_count; i++)
        if (conn->in_flight[i] == request) {
            if (index)
                *index = i;
            return true;
        }
    return false;
}

static connection *find_connection(otfx_server *server, uint64_t id)
{
    for (connection *conn = server->connections; conn; conn = conn->next)
        if (conn->id == id)
            return conn;
    return NULL;
}

/* Constant time in the token's contents (its length is no secret). */
static bool token_matches(const char *expected, const char *given)
{
    const size_t n = strlen(expected);
    if (!given || strlen(given) != n)
        return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(expected[i] ^ given[i]);
    return diff == 0;
}

static void handle_hello(connection *conn, uint32_t request, const char *payload, size_t length)
{
    otfx_server *server = conn->server;
    otfx_kv_line line;
    /* one line, optionally ending in '\n' */
    if (length && payload[length - 1] == '\n')
        length--;
    if (!otfx_kv_parse(payload, length, &line) || strcmp(line.type, "hello") != 0) {
        if (line.storage)
            otfx_kv_line_free(&line);
        protocol_error(conn, request, OTFX_ERR_CODE_AUTH, "the first frame must be 'hello token=…'");
        return;
    }
    const bool ok = token_matches(server->token, otfx_kv_get(&line, "token"));
    otfx_kv_line_free(&line);
    if (!ok) {
        protocol_error(conn, request, OTFX_ERR_CODE_AUTH, "missing or wrong token");
        return;
    }
    if (server->authenticated_count >= server->config.max_clients) {
        char message[128];
        snprintf(message, sizeof message, "too many clients (at most %" PRIu32 ")",
                 server->config.max_clients);
        protocol_error(conn, request, OTFX_ERR_CODE_BUSY, message);
        return;
    }
    conn->authenticated = true;
    server->authenticated_count++;
    event_free(conn->hello_timer);
    conn->hello_timer = NULL;
    otfx_text text = {0};
    otfx_kv_begin(&text, "session");
    otfx_kv_str(&text, "job", server->job_id);
    otfx_kv_u64(&text, "ranks", server->config.app_ranks);
    otfx_kv_u64(&text, "places", server->config.places);
    otfx_kv_u64(&text, "version", OTFX_PROTOCOL_VERSION);
    otfx_kv_u64(&text, "client", conn->id);
    otfx_kv_u64(&text, "max_request", OTFX_PROTOCOL_MAX_REQUEST);
    otfx_kv_u64(&text, "max_in_flight", server->config.max_requests_per_client);
    otfx_kv_end(&text);
    if (!text.failed)
        send_frame(conn, OTFX_FRAME_WELCOME, request, text.data, text.length);
    otfx_text_free(&text);
}

static void handle_request(connection *conn, uint32_t request, const char *payload, size_t length)
{
    otfx_server *server = conn->server;
    if (request == 0) {
        protocol_error(conn, 0, OTFX_ERR_CODE_BAD_FRAME, "request id 0 is reserved for the connection");
        return;
    }
    if (in_flight_find(conn, request, NULL)) {
        send_error(conn, request, OTFX_ERR_CODE_BAD_COMMAND, "this request id is already in flight");
        return;
    }
    if (conn->in_flight_count >= server->config.max_requests_per_client) {
        char message[128];
        snprintf(message, sizeof message, "too many requests in flight (at most %" PRIu32 ")",
                 server->config.max_requests_per_client);
        send_error(conn, request, OTFX_ERR_CODE_BUSY, message);
        return;
    }
    request_node *node = calloc(1, sizeof *node);
    char *line = malloc(length + 1);
    if (!node || !line) {
        free(node);
        free(line);
        send_error(conn, request, OTFX_ERR_CODE_FAILED, "out of memory");
        return;
    }
    memcpy(line, payload, length);
    line[length] = '\0';
    char error[256];
    if (memchr(payload, '\0', length)) {
        send_error(conn, request, OTFX_ERR_CODE_BAD_COMMAND, "the command line contains a NUL byte");
    } else if (!otfx_command_parse(line, &node->request.command, error, sizeof error)) {
        send_error(conn, request, OTFX_ERR_CODE_BAD_COMMAND, error);
    } else {
        node->request.client = conn->id;
        node->request.request = request;
        snprintf(node->request.line, sizeof node->request.line, "%s", line);
        free(line);
        conn->in_flight[conn->in_flight_count++] = request;
        pthread_mutex_lock(&server->lock);
        if (server->requests_tail)
            server->requests_tail->next = node;
        else
            server->requests_head = node;
        server->requests_tail = node;
        pthread_mutex_unlock(&server->lock);
        if (server->config.notify)
            server->config.notify(server->config.user);
        return;
    }
    free(line);
    free(node);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    connection *conn = arg;
    struct evbuffer *input = bufferevent_get_input(bev);
    while (!conn->closing) {
        const size_t available = evbuffer_get_length(input);
        if (available < OTFX_FRAME_HEADER_BYTES)
            return;
        otfx_frame_header header;
        const otfx_frame_status status = otfx_frame_parse_header(
            evbuffer_pullup(input, OTFX_FRAME_HEADER_BYTES), available, OTFX_PROTOCOL_MAX_REQUEST, &header);
        if (status != OTFX_FRAME_OK) {
            protocol_error(conn, 0, OTFX_ERR_CODE_BAD_FRAME, otfx_frame_status_text(status));
            return;
        }
        if (available < OTFX_FRAME_HEADER_BYTES + (size_t)header.length)
            return; /* the payload is still on its way */
        evbuffer_drain(input, OTFX_FRAME_HEADER_BYTES);
        char *payload = malloc((size_t)header.length + 1);
        if (!payload) {
            protocol_error(conn, 0, OTFX_ERR_CODE_FAILED, "out of memory");
            return;
        }
        evbuffer_remove(input, payload, header.length);
        payload[header.length] = '\0';
        if (!conn->authenticated) {
            if (header.kind == OTFX_FRAME_HELLO)
                handle_hello(conn, header.request, payload, header.length);
            else
                protocol_error(conn, header.request, OTFX_ERR_CODE_AUTH,
                               "the first frame must be HELLO with the session's token");
        } else if (header.kind == OTFX_FRAME_REQUEST) {
            handle_request(conn, header.request, payload, header.length);
        } else {
            protocol_error(conn, header.request, OTFX_ERR_CODE_BAD_FRAME,
                           header.kind == OTFX_FRAME_HELLO ? "HELLO sent twice"
                                                           : "clients send only HELLO and REQUEST frames");
        }
        free(payload);
    }
}

static void event_cb(struct bufferevent *bev, short events, void *arg)
{
    (void)bev;
    connection *conn = arg;
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        free_connection(conn);
}

static void hello_timeout_cb(evutil_socket_t fd, short events, void *arg)
{
    (void)fd;
    (void)events;
    connection *conn = arg;
    if (!conn->closing && !conn->authenticated)
        protocol_error(conn, 0, OTFX_ERR_CODE_AUTH, "no HELLO in time");
}

/* ---- unread answers ------------------------------------------------------------------------------ */

static size_t unread(const connection *conn)
{
    return evbuffer_get_length(bufferevent_get_output(conn->bev));
}

static size_t total_unread(const otfx_server *server)
{
    size_t total = 0;
    for (const connection *conn = server->connections; conn; conn = conn->next)
        total += unread(conn);
    return total;
}

static size_t read_pause_output(const otfx_server *server)
{
    const size_t quarter = server->config.max_client_output / 4;
    return quarter < READ_PAUSE_OUTPUT ? quarter : READ_PAUSE_OUTPUT;
}

static void drained_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    connection *conn = arg;
    if (conn->reading_paused && !conn->closing && unread(conn) <= read_pause_output(conn->server) / 4) {
        conn->reading_paused = false;
        bufferevent_setwatermark(conn->bev, EV_WRITE, 0, 0);
        bufferevent_enable(conn->bev, EV_READ);
        read_cb(conn->bev, conn); /* requests that arrived meanwhile: no new byte may come to announce them */
    }
}

/* A client that does not take its answers sends no more requests until it did (they wait in its
 * socket): its unread answers stay bounded, error answers included. */
static void pause_reading_if_behind(connection *conn)
{
    const size_t pause = read_pause_output(conn->server);
    if (conn->closing || conn->reading_paused || unread(conn) <= pause)
        return;
    conn->reading_paused = true;
    conn->paused_ns = now_ns();
    bufferevent_disable(conn->bev, EV_READ);
    bufferevent_setwatermark(conn->bev, EV_WRITE, pause / 4, 0);
}

/* Whether `bytes` more may wait for `conn`: within its own bound, and within the bound of all clients
 * once clients that stopped reading (paused for STALLED_NS, where one that reads catches up in
 * milliseconds) were cut, largest first. */
static bool room_for_output(otfx_server *server, connection *conn, size_t bytes)
{
    if (unread(conn) + bytes > server->config.max_client_output)
        return false;
    const uint64_t now = now_ns();
    while (total_unread(server) + bytes > server->config.max_total_output) {
        connection *largest = NULL;
        for (connection *other = server->connections; other; other = other->next)
            if (other != conn && other->reading_paused && now - other->paused_ns >= STALLED_NS &&
                (!largest || unread(other) > unread(largest)))
                largest = other;
        if (!largest)
            return false;
        fprintf(stderr, "otfx: client %" PRIu64 " disconnected: it left %zu bytes of answers unread\n",
                largest->id, unread(largest));
        free_connection(largest);
        server->dropped_unread++;
    }
    return true;
}

/* Connections that have not authenticated have a quota of their own, so that idle or refused ones
 * never keep a real client out: when it is full, the oldest of them (closing ones first) is cut. */
static void make_room_before_hello(otfx_server *server, const connection *newcomer)
{
    for (;;) {
        uint32_t waiting = 0;
        connection *oldest = NULL, *oldest_closing = NULL;
        for (connection *conn = server->connections; conn; conn = conn->next) {
            if (conn->authenticated || conn == newcomer)
                continue;
            waiting++;
            if (conn->closing && (!oldest_closing || conn->id < oldest_closing->id))
                oldest_closing = conn;
            if (!conn->closing && (!oldest || conn->id < oldest->id))
                oldest = conn;
        }
        if (waiting < server->config.max_unauthenticated)
            return;
        free_connection(oldest_closing ? oldest_closing : oldest);
        server->evicted_unauthenticated++;
    }
}

static void accept_cb(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address,
                      int socklen, void *arg)
{
    (void)listener;
    (void)address;
    (void)socklen;
    otfx_server *server = arg;
    struct bufferevent *bev = bufferevent_socket_new(server->base, fd, BEV_OPT_CLOSE_ON_FREE);
    connection *conn = calloc(1, sizeof *conn);
    uint32_t *in_flight = calloc(server->config.max_requests_per_client, sizeof *in_flight);
    if (!bev || !conn || !in_flight) {
        if (bev)
            bufferevent_free(bev);
        else
            evutil_closesocket(fd);
        free(conn);
        free(in_flight);
        return;
    }
    conn->server = server;
    conn->bev = bev;
    conn->id = ++server->next_client_id;
    conn->in_flight = in_flight;
    if (!live_add(server, conn->id)) {
        bufferevent_free(bev);
        free(conn);
        free(in_flight);
        return;
    }
    conn->next = server->connections;
    server->connections = conn;
    server->connection_count++;
    bufferevent_setcb(bev, read_cb, drained_cb, event_cb, conn);
    if (server->shutting_down) {
        protocol_error(conn, 0, OTFX_ERR_CODE_JOB_ENDED, "the job is ending");
        return;
    }
    make_room_before_hello(server, conn);
    const struct timeval hello = {server->config.hello_timeout_ms / 1000,
                                  (server->config.hello_timeout_ms % 1000) * 1000};
    conn->hello_timer = evtimer_new(server->base, hello_timeout_cb, conn);
    if (!conn->hello_timer || evtimer_add(conn->hello_timer, &hello) != 0) {
        protocol_error(conn, 0, OTFX_ERR_CODE_FAILED, "out of memory");
        return;
    }
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* ---- answers from other threads ----------------------------------------------------------------- */

static void deliver(otfx_server *server, outgoing *out)
{
    if (out->client == 0) {
        for (connection *conn = server->connections; conn; conn = conn->next)
            if (conn->authenticated && !conn->closing)
                send_frame(conn, out->kind, 0, out->payload, out->length);
        return;
    }
    connection *conn = find_connection(server, out->client);
    if (!conn || conn->closing)
        return;
    if (out->kind == OTFX_FRAME_NOTICE && out->request == 0) {
        send_frame(conn, out->kind, 0, out->payload, out->length);
        return;
    }
    uint32_t index;
    if (!in_flight_find(conn, out->request, &index))
        return;
    const size_t frame = OTFX_FRAME_HEADER_BYTES + out->length;
    if (out->length > OTFX_PROTOCOL_MAX_REPLY) {
        if (out->kind == OTFX_FRAME_PARTIAL)
            return;
        send_error(conn, out->request, OTFX_ERR_CODE_FAILED, "the reply is larger than the protocol allows");
    } else if (!room_for_output(server, conn, frame)) {
        if (out->kind == OTFX_FRAME_PARTIAL)
            return; /* the final answer follows (or its refusal) */
        char message[256];
        snprintf(message, sizeof message,
                 "not sent: too many answers unread (%zu bytes for this client, at most %zu; %zu for all "
                 "clients, at most %zu): read the answers, then ask again",
                 unread(conn), server->config.max_client_output, total_unread(server),
                 server->config.max_total_output);
        send_error(conn, out->request, OTFX_ERR_CODE_BUSY, message);
        server->refused_unread++;
    } else {
        send_frame(conn, out->kind, out->request, out->payload, out->length);
    }
    if (out->kind == OTFX_FRAME_REPLY || out->kind == OTFX_FRAME_ERROR)
        conn->in_flight[index] = conn->in_flight[--conn->in_flight_count];
    pause_reading_if_behind(conn);
}

static void begin_shutdown(otfx_server *server)
{
    server->shutting_down = true;
    if (server->listener) {
        evconnlistener_free(server->listener);
        server->listener = NULL;
    }
    connection *conn = server->connections;
    while (conn) {
        connection *next = conn->next;
        if (!conn->closing) {
            for (uint32_t i = 0; i < conn->in_flight_count; i++)
                send_error(conn, conn->in_flight[i], OTFX_ERR_CODE_JOB_ENDED, "the job is ending");
            conn->in_flight_count = 0;
            close_after_flush(conn); /* may free conn */
        }
        conn = next;
    }
    if (server->connections == NULL) {
        event_base_loopbreak(server->base);
        return;
    }
    const struct timeval cap = {CLOSE_LINGER_MS / 1000 + 1, 0};
    event_base_loopexit(server->base, &cap);
}

static void wake_cb(evutil_socket_t fd, short events, void *arg)
{
    (void)fd;
    (void)events;
    otfx_server *server = arg;
    pthread_mutex_lock(&server->lock);
    outgoing *list = server->outgoing_head;
    server->outgoing_head = server->outgoing_tail = NULL;
    const bool stop = server->stop_requested;
    pthread_mutex_unlock(&server->lock);
    while (list) {
        outgoing *next = list->next;
        deliver(server, list);
        free(list);
        list = next;
    }
    if (stop && !server->shutting_down)
        begin_shutdown(server);
}

static void enqueue_outgoing(otfx_server *server, uint64_t client, uint32_t request, otfx_frame_kind kind,
                             const char *payload, size_t length)
{
    /* an oversized reply is not copied: deliver() turns it into an error */
    const size_t copy = length > OTFX_PROTOCOL_MAX_REPLY ? 0 : length;
    outgoing *out = malloc(sizeof *out + copy + 1);
    if (!out)
        return;
    out->client = client;
    out->request = request;
    out->kind = kind;
    out->length = length;
    out->next = NULL;
    if (copy)
        memcpy(out->payload, payload, copy);
    pthread_mutex_lock(&server->lock);
    if (server->stopped) {
        pthread_mutex_unlock(&server->lock);
        free(out);
        return;
    }
    if (server->outgoing_tail)
        server->outgoing_tail->next = out;
    else
        server->outgoing_head = out;
    server->outgoing_tail = out;
    pthread_mutex_unlock(&server->lock);
    event_active(server->wake, EV_READ, 0);
}

void otfx_server_reply(otfx_server *server, uint64_t client, uint32_t request, otfx_frame_kind kind,
                       const char *payload, size_t length)
{
    if (!server || client == 0)
        return;
    if (kind != OTFX_FRAME_PARTIAL && kind != OTFX_FRAME_REPLY && kind != OTFX_FRAME_ERROR &&
        kind != OTFX_FRAME_NOTICE)
        return;
    enqueue_outgoing(server, client, request, kind, payload, length);
}

void otfx_server_broadcast(otfx_server *server, const char *payload, size_t length)
{
    if (!server || length > OTFX_PROTOCOL_MAX_REPLY)
        return;
    enqueue_outgoing(server, 0, 0, OTFX_FRAME_NOTICE, payload, length);
}

bool otfx_server_next_request(otfx_server *server, otfx_server_request *out)
{
    pthread_mutex_lock(&server->lock);
    request_node *node = server->requests_head;
    if (node) {
        server->requests_head = node->next;
        if (!server->requests_head)
            server->requests_tail = NULL;
    }
    pthread_mutex_unlock(&server->lock);
    if (!node)
        return false;
    *out = node->request;
    free(node);
    return true;
}

bool otfx_server_client_connected(otfx_server *server, uint64_t client)
{
    bool found = false;
    pthread_mutex_lock(&server->lock);
    for (uint32_t i = 0; i < server->live_count && !found; i++)
        found = server->live_clients[i] == client;
    pthread_mutex_unlock(&server->lock);
    return found;
}

/* ---- start and stop ----------------------------------------------------------------------------- */

static void *server_thread(void *arg)
{
    otfx_server *server = arg;
    event_base_dispatch(server->base);
    /* whatever is still open after the linger is cut */
    while (server->connections)
        free_connection(server->connections);
    return NULL;
}

static pthread_once_t evthread_once = PTHREAD_ONCE_INIT;
static int evthread_status = -1;
static void init_evthread(void)
{
    evthread_status = evthread_use_pthreads();
}

/* Copies [text, text + n) into out when it fits. */
static bool copy_part(const char *text, size_t n, char *out, size_t size)
{
    if (n >= size)
        return false;
    memcpy(out, text, n);
    out[n] = '\0';
    return true;
}

/* "ADDR:PORT", "[v6]:PORT", ":PORT" or "PORT" (address 127.0.0.1). */
static bool parse_listen(const char *text, char *host, size_t host_size, char *port, size_t port_size)
{
    const char *port_text;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':' || !copy_part(text + 1, (size_t)(close - text - 1), host, host_size))
            return false;
        port_text = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        const size_t host_length = colon ? (size_t)(colon - text) : 0;
        if (host_length == 0)
            snprintf(host, host_size, "127.0.0.1");
        else if (!copy_part(text, host_length, host, host_size))
            return false;
        port_text = colon ? colon + 1 : text;
    }
    const size_t digits = strspn(port_text, "0123456789");
    return digits > 0 && digits <= 5 && port_text[digits] == '\0' && atoi(port_text) <= 65535 &&
           copy_part(port_text, digits, port, port_size);
}

static bool bind_listener(otfx_server *server, char *error, size_t error_size)
{
    char host[256], port[16];
    if (!parse_listen(server->listen_text, host, sizeof host, port, sizeof port)) {
        set_error(error, error_size, "bad listen address '%s' (expected ADDR:PORT, port 0 = any free port)",
                  server->listen_text);
        return false;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *found = NULL;
    const int rc = getaddrinfo(host, port, &hints, &found);
    if (rc != 0) {
        set_error(error, error_size, "listen address '%s': %s", server->listen_text, gai_strerror(rc));
        return false;
    }
    int saved_errno = 0;
    for (struct addrinfo *ai = found; ai && !server->listener; ai = ai->ai_next) {
        server->listener =
            evconnlistener_new_bind(server->base, accept_cb, server,
                                    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1,
                                    ai->ai_addr, (int)ai->ai_addrlen);
        if (!server->listener)
            saved_errno = errno;
    }
    freeaddrinfo(found);
    if (!server->listener) {
        set_error(error, error_size, "cannot listen on %s: %s", server->listen_text, strerror(saved_errno));
        return false;
    }
    struct sockaddr_storage bound;
    socklen_t bound_length = sizeof bound;
    if (getsockname(evconnlistener_get_fd(server->listener), (struct sockaddr *)&bound, &bound_length) != 0) {
        set_error(error, error_size, "getsockname: %s", strerror(errno));
        return false;
    }
    if (bound.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&bound;
        inet_ntop(AF_INET6, &in6->sin6_addr, server->address, sizeof server->address);
        server->port = ntohs(in6->sin6_port);
    } else {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)&bound;
        inet_ntop(AF_INET, &in4->sin_addr, server->address, sizeof server->address);
        server->port = ntohs(in4->sin_port);
    }
    return true;
}

static bool make_token(otfx_server *server, char *error, size_t error_size)
{
    unsigned char bytes[TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_error(error, error_size, "getrandom: %s", strerror(errno));
            return false;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof bytes; i++)
        snprintf(server->token + 2 * i, 3, "%02x", bytes[i]);
    return true;
}

/* The job id as a file-name part: [A-Za-z0-9._-], anything else becomes '_'. */
static void file_safe(const char *in, char *out, size_t size)
{
    size_t i = 0;
    for (; in[i] && i + 1 < size; i++) {
        const char c = in[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '.' || c == '_' || c == '-';
        out[i] = ok && !(i == 0 && c == '.') ? c : '_';
    }
    out[i] = '\0';
}

static bool write_session_file(otfx_server *server, const char *dir, char *error, size_t error_size)
{
    if (!dir || !*dir) /* the caller resolved OTFX_SESSION_DIR (the place: otfx_place_settings_from_env) */
        dir = ".";
    char safe_job[128];
    file_safe(server->job_id, safe_job, sizeof safe_job);
    const int n =
        snprintf(server->session_path, sizeof server->session_path, "%s/otfx-session-%s.txt", dir, safe_job);
    char temp[sizeof server->session_path + 32];
    if (n < 0 || (size_t)n >= sizeof server->session_path ||
        (size_t)snprintf(temp, sizeof temp, "%s/.otfx-session-%s.XXXXXX", dir, safe_job) >= sizeof temp) {
        set_error(error, error_size, "session directory path too long: %s", dir);
        return false;
    }
    otfx_text text = {0};
    otfx_kv_begin(&text, "session");
    otfx_kv_str(&text, "address", server->address);
    otfx_kv_u64(&text, "port", server->port);
    otfx_kv_str(&text, "token", server->token);
    otfx_kv_str(&text, "job", server->job_id);
    otfx_kv_u64(&text, "ranks", server->config.app_ranks);
    otfx_kv_u64(&text, "places", server->config.places);
    otfx_kv_u64(&text, "pid", (uint64_t)getpid());
    otfx_kv_u64(&text, "started_ns", now_ns());
    otfx_kv_u64(&text, "version", OTFX_PROTOCOL_VERSION);
    otfx_kv_end(&text);
    if (text.failed) {
        otfx_text_free(&text);
        set_error(error, error_size, "out of memory");
        return false;
    }
    const mode_t old_mask = umask(077);
    const int fd = mkostemp(temp, O_CLOEXEC); /* O_EXCL, mode 0600 */
    umask(old_mask);
    if (fd < 0) {
        set_error(error, error_size, "cannot create the session file in %s: %s", dir, strerror(errno));
        otfx_text_free(&text);
        return false;
    }
    bool ok = fchmod(fd, 0600) == 0;
    size_t written = 0;
    while (ok && written < text.length) {
        const ssize_t w = write(fd, text.data + written, text.length - written);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        if (ok)
            written += (size_t)w;
    }
    const int saved_errno = errno;
    ok = close(fd) == 0 && ok;
    otfx_text_free(&text);
    if (!ok || rename(temp, server->session_path) != 0) {
        set_error(error, error_size, "cannot write the session file %s: %s", server->session_path,
                  strerror(ok ? errno : saved_errno));
        unlink(temp);
        server->session_path[0] = '\0';
        return false;
    }
    return true;
}

static void free_server(otfx_server *server)
{
    if (server->listener)
        evconnlistener_free(server->listener);
    if (server->wake)
        event_free(server->wake);
    if (server->base)
        event_base_free(server->base);
    for (request_node *node = server->requests_head; node;) {
        request_node *next = node->next;
        free(node);
        node = next;
    }
    for (outgoing *out = server->outgoing_head; out;) {
        outgoing *next = out->next;
        free(out);
        out = next;
    }
    free(server->live_clients);
    pthread_mutex_destroy(&server->lock);
    free(server);
}

otfx_server *otfx_server_start(const otfx_server_config *config, char *error, size_t error_size)
{
    pthread_once(&evthread_once, init_evthread);
    if (evthread_status != 0) {
        set_error(error, error_size, "libevent without pthreads support");
        return NULL;
    }
    otfx_server *server = calloc(1, sizeof *server);
    if (!server) {
        set_error(error, error_size, "out of memory");
        return NULL;
    }
    server->config = *config;
    if (!server->config.max_clients)
        server->config.max_clients = DEFAULT_MAX_CLIENTS;
    if (!server->config.max_unauthenticated)
        server->config.max_unauthenticated = DEFAULT_MAX_UNAUTHENTICATED;
    if (!server->config.max_client_output)
        server->config.max_client_output = DEFAULT_MAX_CLIENT_OUTPUT;
    if (!server->config.max_total_output)
        server->config.max_total_output = DEFAULT_MAX_TOTAL_OUTPUT;
    if (!server->config.max_requests_per_client)
        server->config.max_requests_per_client = DEFAULT_MAX_REQUESTS;
    if (!server->config.hello_timeout_ms)
        server->config.hello_timeout_ms = DEFAULT_HELLO_TIMEOUT_MS;
    snprintf(server->listen_text, sizeof server->listen_text, "%s",
             config->listen && *config->listen ? config->listen : "127.0.0.1:0");
    if (config->job_id && *config->job_id)
        snprintf(server->job_id, sizeof server->job_id, "%s", config->job_id);
    else
        snprintf(server->job_id, sizeof server->job_id, "pid%ld", (long)getpid());
    server->config.listen = server->listen_text;
    server->config.job_id = server->job_id;
    server->config.session_dir = NULL; /* not kept: the caller's string may not outlive us */
    pthread_mutex_init(&server->lock, NULL);
    server->base = event_base_new();
    if (!server->base) {
        set_error(error, error_size, "out of memory");
        free_server(server);
        return NULL;
    }
    server->wake = event_new(server->base, -1, EV_PERSIST, wake_cb, server);
    if (!server->wake || !make_token(server, error, error_size) ||
        !bind_listener(server, error, error_size)) {
        if (!server->wake)
            set_error(error, error_size, "out of memory");
        free_server(server);
        return NULL;
    }
    if (!write_session_file(server, config->session_dir, error, error_size)) {
        free_server(server);
        return NULL;
    }
    /* The server thread takes no signals: a write to a client that went away must give EPIPE, not
     * kill the place with SIGPIPE, and the application's signals belong to its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int created = pthread_create(&server->thread, NULL, server_thread, server);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (created != 0) {
        set_error(error, error_size, "cannot start the server thread");
        unlink(server->session_path);
        free_server(server);
        return NULL;
    }
    server->thread_started = true;
    fprintf(stderr, "otfx: session file %s (%s:%u)\n", server->session_path, server->address,
            (unsigned)server->port);
    return server;
}

const char *otfx_server_session_path(const otfx_server *server)
{
    return server->session_path;
}

uint16_t otfx_server_port(const otfx_server *server)
{
    return server->port;
}

void otfx_server_stop(otfx_server *server)
{
    if (!server)
        return;
    pthread_mutex_lock(&server->lock);
    server->stop_requested = true;
    pthread_mutex_unlock(&server->lock);
    event_active(server->wake, EV_READ, 0);
    if (server->thread_started)
        pthread_join(server->thread, NULL);
    pthread_mutex_lock(&server->lock);
    server->stopped = true;
    pthread_mutex_unlock(&server->lock);
    if (server->session_path[0])
        unlink(server->session_path);
    free_server(server);
}

/*
 * client.c — the connection side of otfx/client.h: frame scanning over a buffer, the HELLO and its
 * answer, and a blocking connection with one deadline per request (plain sockets and poll).
 */
#define _GNU_SOURCE
#include <otfx/client.h>

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- frames over a buffer ----------------------------------------------------------------------- */

otfx_frame_scan otfx_client_scan_frame(const void *data, size_t size, otfx_frame_header *header,
                                       const char **payload, size_t *frame_bytes, char *error,
                                       size_t error_size)
{
    *payload = NULL;
    *frame_bytes = 0;
    const otfx_frame_status status = otfx_frame_parse_header(data, size, OTFX_PROTOCOL_MAX_REPLY, header);
    switch (status) {
    case OTFX_FRAME_OK:
        break;
    case OTFX_FRAME_NEED_MORE:
        return OTFX_FRAME_SCAN_NEED_MORE;
    case OTFX_FRAME_TOO_LARGE:
        snprintf(error, error_size, "%s (%u bytes, at most %u)", otfx_frame_status_text(status),
                 (unsigned)header->length, (unsigned)OTFX_PROTOCOL_MAX_REPLY);
        return OTFX_FRAME_SCAN_BAD;
    case OTFX_FRAME_BAD_VERSION:
        snprintf(error, error_size, "%s (%u, expected %u)", otfx_frame_status_text(status),
                 (unsigned)header->version, (unsigned)OTFX_PROTOCOL_VERSION);
        return OTFX_FRAME_SCAN_BAD;
    case OTFX_FRAME_BAD_KIND:
        snprintf(error, error_size, "%s (%u)", otfx_frame_status_text(status), (unsigned)header->kind);
        return OTFX_FRAME_SCAN_BAD;
    default:
        snprintf(error, error_size, "%s", otfx_frame_status_text(status));
        return OTFX_FRAME_SCAN_BAD;
    }
    if (size - OTFX_FRAME_HEADER_BYTES < header->length)
        return OTFX_FRAME_SCAN_NEED_MORE;
    *payload = (const char *)data + OTFX_FRAME_HEADER_BYTES;
    *frame_bytes = OTFX_FRAME_HEADER_BYTES + (size_t)header->length;
    return OTFX_FRAME_SCAN_READY;
}

/* ---- the HELLO and its answer ------------------------------------------------------------------- */

void otfx_client_hello_payload(const char *token, const char *client_name, otfx_text *out)
{
    otfx_kv_begin(out, "hello");
    otfx_kv_str(out, "token", token);
    otfx_kv_str(out, "client", client_name);
    otfx_kv_end(out);
}

void otfx_client_error_fields(const char *payload, size_t length, char *code, size_t code_size, char *message,
                              size_t message_size)
{
    const char *newline = memchr(payload, '\n', length);
    const size_t first = newline ? (size_t)(newline - payload) : length;
    snprintf(code, code_size, "?");
    snprintf(message, message_size, "%.*s", (int)(first > INT_MAX ? INT_MAX : first), payload);
    otfx_kv_line kv;
    if (first && otfx_kv_parse(payload, first, &kv)) {
        const char *value;
        if ((value = otfx_kv_get(&kv, "code")))
            snprintf(code, code_size, "%s", value);
        if ((value = otfx_kv_get(&kv, "message")))
            snprintf(message, message_size, "%s", value);
        otfx_kv_line_free(&kv);
    }
}

otfx_client_status otfx_client_check_welcome(const otfx_frame_header *header, const char *payload,
                                             size_t length, const char *token_source, char *error,
                                             size_t error_size)
{
    if (header->kind == OTFX_FRAME_WELCOME)
        return OTFX_CLIENT_OK;
    if (header->kind != OTFX_FRAME_ERROR) {
        snprintf(error, error_size, "the job answered the hello with frame kind %u", (unsigned)header->kind);
        return OTFX_CLIENT_UNREACHABLE;
    }
    char code[64], message[512];
    otfx_client_error_fields(payload, length, code, sizeof code, message, sizeof message);
    if (strcmp(code, OTFX_ERR_CODE_AUTH) == 0) {
        if (token_source && *token_source)
            snprintf(error, error_size, "the job refused the token of %s: %s", token_source, message);
        else
            snprintf(error, error_size, "the job refused the token: %s", message);
        return OTFX_CLIENT_REFUSED_TOKEN;
    }
    snprintf(error, error_size, "the job refused the connection (%s): %s", code, message);
    return OTFX_CLIENT_UNREACHABLE;
}

/* ---- a blocking connection ---------------------------------------------------------------------- */

struct otfx_client {
    int fd;
    otfx_session session;
    char name[64];
    uint64_t deadline_ms; /* 0: none */
    char *payload;        /* the last frame read */
    char *welcome;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* What poll may wait before the deadline (-1: no deadline). */
static int wait_ms(const otfx_client *client)
{
    if (client->deadline_ms == 0)
        return -1;
    const uint64_t now = now_ms();
    if (now >= client->deadline_ms)
        return 0;
    return client->deadline_ms - now > INT_MAX ? INT_MAX : (int)(client->deadline_ms - now);
}

void otfx_client_set_timeout(otfx_client *client, int64_t timeout_ms)
{
    client->deadline_ms = timeout_ms < 0 ? 0 : now_ms() + (uint64_t)timeout_ms;
}

const char *otfx_client_welcome(const otfx_client *client)
{
    return client->welcome ? client->welcome : "";
}

const otfx_session *otfx_client_session(const otfx_client *client)
{
    return &client->session;
}

static otfx_client_status open_socket(otfx_client *client, char *error, size_t error_size)
{
    const otfx_session *s = &client->session;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found = NULL;
    const int rc = getaddrinfo(s->address, s->port, &hints, &found);
    if (rc != 0) {
        snprintf(error, error_size, "cannot resolve %s: %s", s->address, gai_strerror(rc));
        return OTFX_CLIENT_UNREACHABLE;
    }
    int saved_errno = ECONNREFUSED;
    for (struct addrinfo *ai = found; ai && client->fd < 0; ai = ai->ai_next) {
        const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            saved_errno = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, wait_ms(client)) == 1) {
                int so_error = 0;
                socklen_t length = sizeof so_error;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
                errno = so_error;
            } else {
                errno = ETIMEDOUT;
            }
        } else {
            errno = 0;
        }
        if (errno == 0) {
            client->fd = fd;
        } else {
            saved_errno = errno;
            close(fd);
        }
    }
    freeaddrinfo(found);
    if (client->fd < 0) {
        snprintf(error, error_size, "cannot connect to %s:%s (job %s): %s%s%s", s->address, s->port, s->job,
                 strerror(saved_errno),
                 saved_errno == ECONNREFUSED ? " — the job has ended? stale session file " : "",
                 saved_errno == ECONNREFUSED ? s->path : "");
        return saved_errno == ETIMEDOUT ? OTFX_CLIENT_TIMEOUT : OTFX_CLIENT_UNREACHABLE;
    }
    const int one = 1;
    setsockopt(client->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return OTFX_CLIENT_OK;
}

static bool send_all(otfx_client *client, const void *bytes, size_t length)
{
    const char *p = bytes;
    while (length) {
        const ssize_t n = send(client->fd, p, length, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            length -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = client->fd, .events = POLLOUT};
            if (poll(&pfd, 1, wait_ms(client)) == 1)
                continue;
            errno = ETIMEDOUT;
        }
        return false;
    }
    return true;
}

static otfx_client_status send_frame(otfx_client *client, otfx_frame_kind kind, uint32_t request,
                                     const char *payload, size_t length, char *error, size_t error_size)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, kind, request, (uint32_t)length);
    if (send_all(client, header, sizeof header) && send_all(client, payload, length))
        return OTFX_CLIENT_OK;
    snprintf(error, error_size, "cannot send to %s:%s: %s", client->session.address, client->session.port,
             strerror(errno));
    return errno == ETIMEDOUT ? OTFX_CLIENT_TIMEOUT : OTFX_CLIENT_UNREACHABLE;
}

otfx_client_status otfx_client_send(otfx_client *client, uint32_t id, const char *line, char *error,
                                    size_t error_size)
{
    const size_t length = strlen(line);
    if (id == 0 || length > OTFX_PROTOCOL_MAX_REQUEST) {
        snprintf(error, error_size,
                 id == 0 ? "request id 0 is reserved" : "command line too long (%zu bytes)", length);
        return OTFX_CLIENT_BAD_ARGUMENT;
    }
    return send_frame(client, OTFX_FRAME_REQUEST, id, line, length, error, error_size);
}

typedef enum { READ_OK, READ_CLOSED, READ_TIMEOUT } read_status;

/* `started` turns true once a byte was read: a frame begun and not finished leaves the stream out of
 * step. */
static read_status read_exactly(otfx_client *client, void *out, size_t length, bool *started)
{
    char *p = out;
    while (length) {
        const ssize_t n = recv(client->fd, p, length, 0);
        if (n > 0) {
            *started = true;
            p += n;
            length -= (size_t)n;
            continue;
        }
        if (n == 0)
            return READ_CLOSED;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return READ_CLOSED;
        struct pollfd pfd = {.fd = client->fd, .events = POLLIN};
        const int ready = poll(&pfd, 1, wait_ms(client));
        if (ready == 0)
            return READ_TIMEOUT;
        if (ready < 0 && errno != EINTR)
            return READ_CLOSED;
    }
    return READ_OK;
}

otfx_client_status otfx_client_read(otfx_client *client, otfx_client_frame *frame, const char *waiting_for,
                                    char *error, size_t error_size)
{
    const otfx_session *s = &client->session;
    free(client->payload);
    client->payload = NULL;
    frame->payload = NULL;
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    bool started = false;
    read_status status = read_exactly(client, header, sizeof header, &started);
    if (status == READ_OK) {
        const char *ignored;
        size_t frame_bytes;
        char why[128];
        if (otfx_client_scan_frame(header, sizeof header, &frame->header, &ignored, &frame_bytes, why,
                                   sizeof why) == OTFX_FRAME_SCAN_BAD) {
            snprintf(error, error_size,
                     "the job (%s:%s) sent a malformed frame (%s): is that an otfx session?", s->address,
                     s->port, why);
            return OTFX_CLIENT_UNREACHABLE;
        }
        client->payload = malloc((size_t)frame->header.length + 1);
        if (!client->payload) {
            snprintf(error, error_size, "out of memory for a frame of %u bytes",
                     (unsigned)frame->header.length);
            return OTFX_CLIENT_OUT_OF_MEMORY;
        }
        status = read_exactly(client, client->payload, frame->header.length, &started);
        client->payload[frame->header.length] = '\0';
    }
    switch (status) {
    case READ_OK:
        frame->payload = client->payload;
        return OTFX_CLIENT_OK;
    case READ_CLOSED:
        snprintf(error, error_size, "the job (%s:%s, job %s) closed the connection while %s waited for %s",
                 s->address, s->port, s->job, client->name, waiting_for);
        return OTFX_CLIENT_UNREACHABLE;
    case READ_TIMEOUT:
    default:
        if (started) /* half a frame read: what follows cannot be told apart from a frame any more */
            shutdown(client->fd, SHUT_RDWR);
        snprintf(error, error_size, "the job (%s:%s, job %s) did not send %s in time", s->address, s->port,
                 s->job, waiting_for);
        return OTFX_CLIENT_TIMEOUT;
    }
}

bool otfx_client_wait_readable(otfx_client *client, int timeout_ms)
{
    struct pollfd pfd = {.fd = client->fd, .events = POLLIN};
    return poll(&pfd, 1, timeout_ms) == 1;
}

otfx_client *otfx_client_connect(const otfx_session *session, const char *client_name, int64_t timeout_ms,
                                 otfx_client_status *status, char *error, size_t error_size)
{
    otfx_client *client = calloc(1, sizeof *client);
    if (!client) {
        snprintf(error, error_size, "out of memory");
        *status = OTFX_CLIENT_OUT_OF_MEMORY;
        return NULL;
    }
    client->fd = -1;
    client->session = *session;
    snprintf(client->name, sizeof client->name, "%s", client_name);
    otfx_client_set_timeout(client, timeout_ms);
    *status = open_socket(client, error, error_size);
    if (*status == OTFX_CLIENT_OK) {
        otfx_text hello = {0};
        otfx_client_hello_payload(session->token, client_name, &hello);
        if (hello.failed) {
            snprintf(error, error_size, "out of memory");
            *status = OTFX_CLIENT_OUT_OF_MEMORY;
        } else {
            *status = send_frame(client, OTFX_FRAME_HELLO, 0, hello.data, hello.length, error, error_size);
        }
        otfx_text_free(&hello);
    }
    otfx_client_frame frame;
    if (*status == OTFX_CLIENT_OK)
        *status = otfx_client_read(client, &frame, "the welcome", error, error_size);
    if (*status == OTFX_CLIENT_OK)
        *status = otfx_client_check_welcome(&frame.header, frame.payload, frame.header.length, session->path,
                                            error, error_size);
    if (*status != OTFX_CLIENT_OK) {
        otfx_client_close(client);
        return NULL;
    }
    client->welcome = client->payload; /* kept: the next read frees only its own payload */
    client->payload = NULL;
    return client;
}

void otfx_client_close(otfx_client *client)
{
    if (!client)
        return;
    if (client->fd >= 0)
        close(client->fd);
    free(client->payload);
    free(client->welcome);
    free(client);
}

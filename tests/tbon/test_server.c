/*
 * test_server.c — the root's client server (tbon/include/otfx/server.h) over real TCP, in one
 * process without MPI: the test plays the owner (the root's MPI thread) and any number of clients,
 * speaking raw frames, and once through the client library (otfx/client.h) as otfxctl does.
 */
#define _GNU_SOURCE
#include <otfx/client.h>
#include <otfx/server.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- a minimal client --------------------------------------------------------------------------- */

typedef struct frame {
    otfx_frame_header header;
    char *payload; /* NUL-terminated */
} frame;

/* receive_buffer > 0: that SO_RCVBUF, set before connecting (so the window stays that small) */
static int client_connect_buffered(uint16_t port, int receive_buffer)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    if (receive_buffer > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&address, sizeof address), 0);
    return fd;
}

static int client_connect(uint16_t port)
{
    return client_connect_buffered(port, 0);
}

static void send_bytes(int fd, const void *bytes, size_t length)
{
    const char *p = bytes;
    while (length) {
        const ssize_t n = send(fd, p, length, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the server may have closed on us: tests check what they read */
        p += n;
        length -= (size_t)n;
    }
}

static void send_frame(int fd, otfx_frame_kind kind, uint32_t request, const char *payload)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    const size_t length = payload ? strlen(payload) : 0;
    otfx_frame_write_header(header, kind, request, (uint32_t)length);
    send_bytes(fd, header, sizeof header);
    if (length)
        send_bytes(fd, payload, length);
}

/* Reads exactly `length` bytes; 1 ok, 0 end of stream, -1 timeout or error. */
static int read_exactly(int fd, void *out, size_t length, int timeout_ms)
{
    char *p = out;
    while (length) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        const int ready = poll(&pfd, 1, timeout_ms);
        if (ready <= 0)
            return -1;
        const ssize_t n = recv(fd, p, length, 0);
        if (n == 0)
            return 0;
        if (n < 0)
            return errno == EINTR ? read_exactly(fd, p, length, timeout_ms) : 0; /* reset = closed */
        p += n;
        length -= (size_t)n;
    }
    return 1;
}

static int read_frame(int fd, frame *out, int timeout_ms)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    memset(out, 0, sizeof *out);
    const int rc = read_exactly(fd, header, sizeof header, timeout_ms);
    if (rc != 1)
        return rc;
    assert_int_equal(otfx_frame_parse_header(header, sizeof header, OTFX_PROTOCOL_MAX_REPLY, &out->header),
                     OTFX_FRAME_OK);
    out->payload = calloc(1, out->header.length + 1);
    assert_non_null(out->payload);
    if (out->header.length)
        assert_int_equal(read_exactly(fd, out->payload, out->header.length, timeout_ms), 1);
    return 1;
}

static void frame_free(frame *f)
{
    free(f->payload);
    f->payload = NULL;
}

/* The frame must be of `kind` for `request`, its first line containing `fragment`. */
static void expect_frame(int fd, otfx_frame_kind kind, uint32_t request, const char *fragment)
{
    frame f;
    const int rc = read_frame(fd, &f, 60000);
    if (rc != 1)
        fail_msg("expected frame kind %d request %u, got %s", kind, request,
                 rc == 0 ? "end of stream" : "timeout");
    if (f.header.kind != kind || f.header.request != request || (fragment && !strstr(f.payload, fragment)))
        fail_msg("expected kind %d request %u with '%s', got kind %u request %u: %s", kind, request,
                 fragment ? fragment : "", f.header.kind, f.header.request, f.payload);
    frame_free(&f);
}

static void expect_closed(int fd)
{
    frame f;
    const int rc = read_frame(fd, &f, 5000);
    if (rc != 0)
        fail_msg("expected the server to close the connection, got %s: %s", rc < 0 ? "timeout" : "a frame",
                 rc > 0 ? f.payload : "");
}

/* ---- the server and its owner ------------------------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    otfx_server *server;
    char token[64];
    uint16_t port;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    unsigned notified;
} fixture;

static void notify(void *user)
{
    fixture *fx = user;
    pthread_mutex_lock(&fx->lock);
    fx->notified++;
    pthread_cond_signal(&fx->wake);
    pthread_mutex_unlock(&fx->lock);
}

static unsigned notified(fixture *fx)
{
    pthread_mutex_lock(&fx->lock);
    const unsigned count = fx->notified;
    pthread_mutex_unlock(&fx->lock);
    return count;
}

static void read_session_file(fixture *fx)
{
    const char *path = otfx_server_session_path(fx->server);
    assert_memory_equal(path, fx->dir, strlen(fx->dir));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    otfx_kv_line kv;
    assert_true(otfx_kv_parse(line, strcspn(line, "\n"), &kv));
    assert_string_equal(kv.type, "session");
    assert_string_equal(otfx_kv_get(&kv, "address"), "127.0.0.1");
    assert_int_equal(atoi(otfx_kv_get(&kv, "port")), otfx_server_port(fx->server));
    assert_int_equal(strlen(otfx_kv_get(&kv, "token")), 32);
    assert_string_equal(otfx_kv_get(&kv, "ranks"), "8");
    assert_string_equal(otfx_kv_get(&kv, "places"), "3");
    assert_non_null(otfx_kv_get(&kv, "pid"));
    snprintf(fx->token, sizeof fx->token, "%s", otfx_kv_get(&kv, "token"));
    fx->port = otfx_server_port(fx->server);
    otfx_kv_line_free(&kv);
}

static fixture *start(otfx_server_config config)
{
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/otfx-test-server-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    pthread_mutex_init(&fx->lock, NULL);
    pthread_cond_init(&fx->wake, NULL);
    config.session_dir = fx->dir;
    config.job_id = config.job_id ? config.job_id : "job-1";
    config.app_ranks = 8;
    config.places = 3;
    config.notify = notify;
    config.user = fx;
    char error[256];
    fx->server = otfx_server_start(&config, error, sizeof error);
    if (!fx->server)
        fail_msg("server did not start: %s", error);
    read_session_file(fx);
    return fx;
}

static void stop(fixture *fx)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", otfx_server_session_path(fx->server));
    otfx_server_stop(fx->server);
    assert_int_not_equal(access(path, F_OK), 0); /* removed */
    assert_int_equal(rmdir(fx->dir), 0);         /* and nothing else left behind */
    pthread_mutex_destroy(&fx->lock);
    pthread_cond_destroy(&fx->wake);
    free(fx);
}

static int hello_buffered(fixture *fx, int receive_buffer)
{
    const int fd = client_connect_buffered(fx->port, receive_buffer);
    char line[128];
    snprintf(line, sizeof line, "hello token=%s client=test", fx->token);
    send_frame(fd, OTFX_FRAME_HELLO, 0, line);
    expect_frame(fd, OTFX_FRAME_WELCOME, 0, "session job=job-1 ranks=8 places=3 version=1");
    return fd;
}

static int hello(fixture *fx)
{
    return hello_buffered(fx, 0);
}

/* Waits for a queued request, up to 60 s (a loaded machine's worst, not an expected time). */
static bool next_request(fixture *fx, otfx_server_request *out)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    for (;;) {
        if (otfx_server_next_request(fx->server, out))
            return true;
        pthread_mutex_lock(&fx->lock);
        const unsigned seen = fx->notified;
        int rc = 0;
        while (fx->notified == seen && rc == 0) {
            struct timespec soon;
            clock_gettime(CLOCK_REALTIME, &soon);
            soon.tv_nsec += 20 * 1000 * 1000;
            if (soon.tv_nsec >= 1000000000) {
                soon.tv_sec++;
                soon.tv_nsec -= 1000000000;
            }
            rc = pthread_cond_timedwait(&fx->wake, &fx->lock, &soon);
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            if (now.tv_sec > deadline.tv_sec)
                break;
        }
        pthread_mutex_unlock(&fx->lock);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec > deadline.tv_sec)
            return otfx_server_next_request(fx->server, out);
    }
}

static void reply(fixture *fx, const otfx_server_request *request, otfx_frame_kind kind, const char *payload)
{
    otfx_server_reply(fx->server, request->client, request->request, kind, payload, strlen(payload));
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until the server has seen the client leave, up to 60 s. */
static void wait_until_gone(fixture *fx, uint64_t client)
{
    for (int i = 0; i < 30000 && otfx_server_client_connected(fx->server, client); i++)
        sleep_ms(2);
    assert_false(otfx_server_client_connected(fx->server, client));
}

/* ---- tests -------------------------------------------------------------------------------------- */

static void test_request_reply(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    const int fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 7, "profile --ranks 0-3 --from 1s");
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    assert_int_equal(request.request, 7);
    assert_int_equal(request.command.kind, OTFX_CMD_PROFILE);
    assert_true(request.command.from == 1000000000ull);
    assert_string_equal(request.line, "profile --ranks 0-3 --from 1s");
    assert_true(otfx_server_client_connected(fx->server, request.client));
    reply(fx, &request, OTFX_FRAME_PARTIAL, "profile partial=1 answered=1 total=2\n");
    reply(fx, &request, OTFX_FRAME_REPLY, "profile partial=0 answered=2 total=2\nregion name=main\n");
    expect_frame(fd, OTFX_FRAME_PARTIAL, 7, "partial=1");
    expect_frame(fd, OTFX_FRAME_REPLY, 7, "region name=main");
    /* a reply to a finished request is dropped; the next request still works */
    reply(fx, &request, OTFX_FRAME_REPLY, "late\n");
    send_frame(fd, OTFX_FRAME_REQUEST, 8, "status");
    assert_true(next_request(fx, &request));
    assert_int_equal(request.command.kind, OTFX_CMD_STATUS);
    reply(fx, &request, OTFX_FRAME_ERROR, "error code=failed message=no\n");
    expect_frame(fd, OTFX_FRAME_ERROR, 8, "code=failed");
    /* a broadcast and a notice to one client */
    otfx_server_broadcast(fx->server, "notice event=window-ended\n", 26);
    expect_frame(fd, OTFX_FRAME_NOTICE, 0, "event=window-ended");
    otfx_server_reply(fx->server, request.client, 0, OTFX_FRAME_NOTICE, "notice event=x\n", 15);
    expect_frame(fd, OTFX_FRAME_NOTICE, 0, "event=x");
    close(fd);
    stop(fx);
}

static void test_bad_commands_keep_the_connection(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    const int fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "frobnicate");
    expect_frame(fd, OTFX_FRAME_ERROR, 1, "code=bad-command message=unknown%20command");
    send_frame(fd, OTFX_FRAME_REQUEST, 2, "timeline --bins 0");
    expect_frame(fd, OTFX_FRAME_ERROR, 2, "code=bad-command");
    const char with_nul[] = "status\0x";
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, OTFX_FRAME_REQUEST, 3, sizeof with_nul - 1);
    send_bytes(fd, header, sizeof header);
    send_bytes(fd, with_nul, sizeof with_nul - 1);
    expect_frame(fd, OTFX_FRAME_ERROR, 3, "NUL");
    /* a duplicate id in flight */
    send_frame(fd, OTFX_FRAME_REQUEST, 4, "status");
    send_frame(fd, OTFX_FRAME_REQUEST, 4, "status");
    expect_frame(fd, OTFX_FRAME_ERROR, 4, "already%20in%20flight");
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    assert_int_equal(request.request, 4);
    assert_false(otfx_server_next_request(fx->server, &request));
    reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
    expect_frame(fd, OTFX_FRAME_REPLY, 4, "ok");
    close(fd);
    stop(fx);
}

static void test_busy(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){.max_requests_per_client = 2});
    const int fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "status");
    send_frame(fd, OTFX_FRAME_REQUEST, 2, "status");
    send_frame(fd, OTFX_FRAME_REQUEST, 3, "status");
    expect_frame(fd, OTFX_FRAME_ERROR, 3, "code=busy");
    otfx_server_request a, b;
    assert_true(next_request(fx, &a));
    assert_true(next_request(fx, &b));
    reply(fx, &a, OTFX_FRAME_REPLY, "a\n");
    expect_frame(fd, OTFX_FRAME_REPLY, 1, "a");
    send_frame(fd, OTFX_FRAME_REQUEST, 3, "status"); /* room again */
    assert_true(next_request(fx, &a));
    assert_int_equal(a.request, 3);
    close(fd);
    stop(fx);
}

static void test_authentication(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){.hello_timeout_ms = 300});
    /* wrong token */
    int fd = client_connect(fx->port);
    send_frame(fd, OTFX_FRAME_HELLO, 5, "hello token=00000000000000000000000000000000");
    expect_frame(fd, OTFX_FRAME_ERROR, 5, "code=auth");
    expect_closed(fd);
    close(fd);
    /* token of another length, no token, not a hello line */
    const char *bad[] = {"hello token=abc", "hello client=x", "hola", "", "hello token=%zz"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fd = client_connect(fx->port);
        send_frame(fd, OTFX_FRAME_HELLO, 1, bad[i]);
        expect_frame(fd, OTFX_FRAME_ERROR, 1, "code=auth");
        expect_closed(fd);
        close(fd);
    }
    /* a request before HELLO */
    fd = client_connect(fx->port);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "status");
    expect_frame(fd, OTFX_FRAME_ERROR, 1, "code=auth");
    expect_closed(fd);
    close(fd);
    /* silence */
    fd = client_connect(fx->port);
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "no%20HELLO%20in%20time");
    expect_closed(fd);
    close(fd);
    /* a HELLO trickled byte by byte does not move the deadline */
    fd = client_connect(fx->port);
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, OTFX_FRAME_HELLO, 0, 40);
    for (size_t i = 0; i < 8; i++) {
        send_bytes(fd, header + i, 1);
        sleep_ms(60);
    }
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "no%20HELLO%20in%20time");
    expect_closed(fd);
    close(fd);
    /* HELLO twice */
    fd = hello(fx);
    char line[128];
    snprintf(line, sizeof line, "hello token=%s", fx->token);
    send_frame(fd, OTFX_FRAME_HELLO, 0, line);
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "code=bad-frame");
    expect_closed(fd);
    close(fd);
    /* an authenticated client is not timed out */
    fd = hello(fx);
    sleep_ms(500);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "status");
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
    expect_frame(fd, OTFX_FRAME_REPLY, 1, "ok");
    close(fd);
    /* no request of a refused client ever reached the owner */
    assert_false(otfx_server_next_request(fx->server, &request));
    stop(fx);
}

static void test_malformed_frames(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    const int good = hello(fx);

    int fd = hello(fx);
    send_bytes(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27); /* garbage */
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "code=bad-frame message=not%20an%20otfx%20frame");
    expect_closed(fd);
    close(fd);

    fd = client_connect(fx->port); /* garbage before HELLO */
    send_bytes(fd, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f", 16);
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "code=bad-frame");
    expect_closed(fd);
    close(fd);

    fd = hello(fx); /* oversized */
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, OTFX_FRAME_REQUEST, 9, OTFX_PROTOCOL_MAX_REQUEST + 1);
    send_bytes(fd, header, sizeof header);
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "code=bad-frame message=frame%20payload%20too%20large");
    expect_closed(fd);
    close(fd);

    fd = hello(fx); /* wrong version, unknown kind, a server-only kind, request id 0 */
    otfx_frame_write_header(header, OTFX_FRAME_REQUEST, 1, 0);
    header[5] = 9;
    send_bytes(fd, header, sizeof header);
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "unsupported%20protocol%20version");
    expect_closed(fd);
    close(fd);
    fd = hello(fx);
    otfx_frame_write_header(header, (otfx_frame_kind)77, 1, 0);
    send_bytes(fd, header, sizeof header);
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "unknown%20frame%20kind");
    close(fd);
    fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REPLY, 1, "x");
    expect_frame(fd, OTFX_FRAME_ERROR, 1, "code=bad-frame");
    expect_closed(fd);
    close(fd);
    fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 0, "status");
    expect_frame(fd, OTFX_FRAME_ERROR, 0, "reserved");
    expect_closed(fd);
    close(fd);

    /* truncated: half a header, then half a payload, then gone */
    fd = hello(fx);
    otfx_frame_write_header(header, OTFX_FRAME_REQUEST, 1, 100);
    send_bytes(fd, header, 7);
    close(fd);
    fd = hello(fx);
    send_bytes(fd, header, sizeof header);
    send_bytes(fd, "status", 6);
    close(fd);
    /* a frame split into single bytes still arrives */
    fd = hello(fx);
    const char *line = "status";
    otfx_frame_write_header(header, OTFX_FRAME_REQUEST, 11, (uint32_t)strlen(line));
    for (size_t i = 0; i < sizeof header; i++) {
        send_bytes(fd, header + i, 1);
        sleep_ms(1);
    }
    for (size_t i = 0; i < strlen(line); i++)
        send_bytes(fd, line + i, 1);
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    assert_int_equal(request.request, 11);
    reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
    expect_frame(fd, OTFX_FRAME_REPLY, 11, "ok");
    close(fd);

    /* the first client never noticed */
    send_frame(good, OTFX_FRAME_REQUEST, 1, "status");
    assert_true(next_request(fx, &request));
    reply(fx, &request, OTFX_FRAME_REPLY, "still here\n");
    expect_frame(good, OTFX_FRAME_REPLY, 1, "still here");
    close(good);
    stop(fx);
}

/* Random bytes, random headers with random payloads, cut anywhere, with and without HELLO: the
 * server answers or closes, and serves a good client afterwards. */
static void test_random_frames(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){.hello_timeout_ms = 200});
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 60; round++) {
        const int fd = round % 2 ? hello(fx) : client_connect(fx->port);
        unsigned char bytes[512];
        for (size_t i = 0; i < sizeof bytes; i++) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes[i] = (unsigned char)seed;
        }
        size_t length = 1 + (size_t)(seed % sizeof bytes);
        if (round % 3 == 0) { /* a plausible header: right magic and version, random kind and length */
            otfx_frame_write_header(bytes, (otfx_frame_kind)(1 + seed % 8), (uint32_t)(seed >> 8),
                                    (uint32_t)((seed >> 16) % 600));
            length =
                OTFX_FRAME_HEADER_BYTES + (size_t)((seed >> 24) % (sizeof bytes - OTFX_FRAME_HEADER_BYTES));
        }
        send_bytes(fd, bytes, length);
        if (round % 4 == 0) {
            close(fd); /* gone at once */
            continue;
        }
        /* whatever comes back is well-formed, and the connection ends or idles */
        for (;;) {
            frame f;
            const int rc = read_frame(fd, &f, 300);
            if (rc != 1)
                break;
            frame_free(&f);
        }
        close(fd);
    }
    otfx_server_request request;
    while (otfx_server_next_request(fx->server, &request)) /* random requests that happened to parse */
        reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
    const int good = hello(fx);
    send_frame(good, OTFX_FRAME_REQUEST, 1, "status");
    assert_true(next_request(fx, &request));
    reply(fx, &request, OTFX_FRAME_REPLY, "fine\n");
    expect_frame(good, OTFX_FRAME_REPLY, 1, "fine");
    close(good);
    stop(fx);
}

static void test_client_leaves_mid_request(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    int fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "profile");
    otfx_server_request taken;
    assert_true(next_request(fx, &taken));
    send_frame(fd, OTFX_FRAME_REQUEST, 2, "timeline");
    send_frame(fd, OTFX_FRAME_REQUEST, 3, "status");
    /* both queued: wait until the server has handed them over, then leave */
    for (int i = 0; i < 30000 && notified(fx) < 3; i++)
        sleep_ms(2);
    assert_true(notified(fx) >= 3);
    close(fd);
    wait_until_gone(fx, taken.client);
    /* what it left in the queue is gone; answering what was taken costs nothing */
    otfx_server_request request;
    assert_false(otfx_server_next_request(fx->server, &request));
    reply(fx, &taken, OTFX_FRAME_PARTIAL, "partial\n");
    reply(fx, &taken, OTFX_FRAME_REPLY, "reply\n");
    /* the server carries on */
    fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "status");
    assert_true(next_request(fx, &request));
    assert_int_not_equal(request.client, taken.client); /* ids are never reused */
    reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
    expect_frame(fd, OTFX_FRAME_REPLY, 1, "ok");
    close(fd);
    stop(fx);
}

static void test_max_clients(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){.max_clients = 2});
    const int a = hello(fx), b = hello(fx);
    int c = client_connect(fx->port);
    char line[128];
    snprintf(line, sizeof line, "hello token=%s", fx->token);
    send_frame(c, OTFX_FRAME_HELLO, 0, line);
    expect_frame(c, OTFX_FRAME_ERROR, 0, "code=busy message=too%20many%20clients");
    expect_closed(c);
    close(c);
    /* once the server has seen a leave, c gets in (a's request tells a's client id) */
    send_frame(a, OTFX_FRAME_REQUEST, 1, "status");
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    close(a);
    wait_until_gone(fx, request.client);
    c = hello(fx);
    close(b);
    close(c);
    stop(fx);
}

/* Connections that never authenticate have a quota of their own: however many sit idle, a client with
 * the token gets in, and the idle ones are cut (oldest first) or time out. */
static void test_idle_unauthenticated_connections(void **state)
{
    (void)state;
    fixture *fx =
        start((otfx_server_config){.max_clients = 2, .max_unauthenticated = 4, .hello_timeout_ms = 3000});
    enum { IDLE = 70 };
    int idle[IDLE];
    for (int i = 0; i < IDLE; i++)
        idle[i] = client_connect(fx->port);
    for (int round = 0; round < 3; round++) {
        const int fd = hello(fx); /* WELCOME, every time */
        send_frame(fd, OTFX_FRAME_REQUEST, 1, "status");
        otfx_server_request request;
        assert_true(next_request(fx, &request));
        reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
        expect_frame(fd, OTFX_FRAME_REPLY, 1, "ok");
        close(fd);
        for (int i = 0; i < 8; i++) /* more idle connections meanwhile */
            close(client_connect(fx->port));
    }
    /* all but the newest few were cut at once; those time out without a HELLO */
    int cut = 0, timed_out = 0;
    for (int i = 0; i < IDLE; i++) {
        frame f;
        const int rc = read_frame(idle[i], &f, 5000);
        if (rc == 0)
            cut++;
        else if (rc == 1 && strstr(f.payload, "no%20HELLO%20in%20time")) {
            timed_out++;
            expect_closed(idle[i]);
        }
        if (rc == 1)
            frame_free(&f);
        close(idle[i]);
    }
    assert_int_equal(cut + timed_out, IDLE);
    assert_true(timed_out <= 4);
    stop(fx);
}

/* Sends `count` requests on `fd` and answers each one the server hands over within `wait_ms` with a
 * reply of `size` bytes; returns the client id (0: none was handed over). */
static uint64_t answer_lazily(fixture *fx, int fd, uint32_t count, const char *reply_bytes, size_t size)
{
    uint64_t client = 0;
    for (uint32_t r = 1; r <= count; r++)
        send_frame(fd, OTFX_FRAME_REQUEST, r, "events");
    for (int idle = 0; idle < 100;) {
        otfx_server_request request;
        if (!otfx_server_next_request(fx->server, &request)) {
            sleep_ms(10); /* the rest waits in the socket once the server stopped reading this client */
            idle++;
            continue;
        }
        client = request.client;
        otfx_server_reply(fx->server, request.client, request.request, OTFX_FRAME_REPLY, reply_bytes, size);
        idle = 0;
    }
    return client;
}

/* Reads frames until the connection closes or stays silent for 2 s: whole replies, busy refusals. */
static void count_answers(int fd, size_t largest, int *replies, int *refused)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    char *payload = malloc(largest + 1);
    assert_non_null(payload);
    *replies = *refused = 0;
    while (read_exactly(fd, header, sizeof header, 2000) == 1) {
        otfx_frame_header h;
        assert_int_equal(otfx_frame_parse_header(header, sizeof header, OTFX_PROTOCOL_MAX_REPLY, &h),
                         OTFX_FRAME_OK);
        assert_true(h.length <= largest);
        if (read_exactly(fd, payload, h.length, 2000) != 1)
            break;
        payload[h.length] = '\0';
        if (h.kind == OTFX_FRAME_REPLY)
            (*replies)++;
        else if (h.kind == OTFX_FRAME_ERROR && strstr(payload, "code=busy") &&
                 strstr(payload, "answers%20unread"))
            (*refused)++;
    }
    free(payload);
}

enum { BIG_REPLY = 1024 * 1024, CLIENT_LIMIT = 4 * BIG_REPLY };

static char *big_reply(void)
{
    char *big = malloc(BIG_REPLY + 1);
    assert_non_null(big);
    memset(big, 'x', BIG_REPLY);
    big[BIG_REPLY] = '\0';
    return big;
}

/* A client that reads nothing: the answers waiting for it stay within its bound (the later ones are
 * refused with busy, small), and its requests are no longer read meanwhile. */
static void test_unread_answers_bounded_per_client(void **state)
{
    (void)state;
    fixture *fx =
        start((otfx_server_config){.max_client_output = CLIENT_LIMIT, .max_requests_per_client = 64});
    char *big = big_reply();
    const int lazy = hello_buffered(fx, 4096); /* small socket buffers: little hides in the kernel */
    assert_int_not_equal(answer_lazily(fx, lazy, 48, big, BIG_REPLY), 0);
    /* not read from while it is behind: this request stays in the socket */
    send_frame(lazy, OTFX_FRAME_REQUEST, 100, "status");
    sleep_ms(500);
    otfx_server_request request;
    assert_false(otfx_server_next_request(fx->server, &request));
    int replies, refused;
    count_answers(lazy, BIG_REPLY, &replies, &refused);
    assert_true(refused >= 1);
    assert_true(replies >= 1);
    /* within the bound, plus what the kernel's buffers took before */
    assert_int_equal(replies + refused, 48);
    assert_true(replies <= 2 * CLIENT_LIMIT / BIG_REPLY);
    /* once it has read, it is read from again */
    assert_true(next_request(fx, &request));
    assert_int_equal(request.request, 100);
    reply(fx, &request, OTFX_FRAME_REPLY, "ok\n");
    expect_frame(lazy, OTFX_FRAME_REPLY, 100, "ok");
    close(lazy);
    free(big);
    stop(fx);
}

/* When the answers of all clients together reach their bound, a client that has stopped reading is
 * cut so that one that reads still gets its answers. */
static void test_stalled_client_cut_for_room(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){.max_client_output = CLIENT_LIMIT,
                                             .max_total_output = CLIENT_LIMIT / 2,
                                             .max_requests_per_client = 64});
    char *big = big_reply();
    const int lazy = hello_buffered(fx, 4096);
    const uint64_t lazy_client = answer_lazily(fx, lazy, 48, big, BIG_REPLY);
    assert_int_not_equal(lazy_client, 0);
    sleep_ms(2500); /* it has not read for long enough to count as stalled */
    const int reader = hello(fx);
    for (uint32_t r = 1; r <= 4; r++) {
        send_frame(reader, OTFX_FRAME_REQUEST, r, "events");
        otfx_server_request request;
        assert_true(next_request(fx, &request));
        otfx_server_reply(fx->server, request.client, request.request, OTFX_FRAME_REPLY, big, BIG_REPLY);
        expect_frame(reader, OTFX_FRAME_REPLY, r, "xxxx");
    }
    wait_until_gone(fx, lazy_client);
    close(lazy);
    close(reader);
    free(big);
    stop(fx);
}

static void test_oversized_reply(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    const int fd = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "events");
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    char *huge = calloc(1, OTFX_PROTOCOL_MAX_REPLY + 1);
    assert_non_null(huge);
    otfx_server_reply(fx->server, request.client, 1, OTFX_FRAME_REPLY, huge, OTFX_PROTOCOL_MAX_REPLY + 1);
    free(huge);
    expect_frame(fd, OTFX_FRAME_ERROR, 1, "code=failed");
    close(fd);
    stop(fx);
}

/* An owner thread answering every request with PARTIAL + REPLY naming the request. */
typedef struct owner {
    fixture *fx;
    _Atomic int running;
    pthread_t thread;
} owner;

static void *owner_main(void *arg)
{
    owner *o = arg;
    while (o->running) {
        otfx_server_request request;
        if (!otfx_server_next_request(o->fx->server, &request)) {
            sleep_ms(1);
            continue;
        }
        char payload[256];
        snprintf(payload, sizeof payload, "answer client=%llu request=%u command=%s\n",
                 (unsigned long long)request.client, request.request,
                 otfx_command_name(request.command.kind));
        otfx_server_reply(o->fx->server, request.client, request.request, OTFX_FRAME_PARTIAL, payload,
                          strlen(payload));
        otfx_server_reply(o->fx->server, request.client, request.request, OTFX_FRAME_REPLY, payload,
                          strlen(payload));
    }
    return NULL;
}

static void test_several_clients(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    owner o = {.fx = fx, .running = 1};
    assert_int_equal(pthread_create(&o.thread, NULL, owner_main, &o), 0);
    enum { CLIENTS = 4, REQUESTS = 10 };
    int fds[CLIENTS];
    for (int c = 0; c < CLIENTS; c++)
        fds[c] = hello(fx);
    for (int r = 1; r <= REQUESTS; r++)
        for (int c = 0; c < CLIENTS; c++)
            send_frame(fds[c], OTFX_FRAME_REQUEST, (uint32_t)(100 * c + r), r % 2 ? "status" : "reset");
    for (int c = 0; c < CLIENTS; c++) {
        int replies = 0, partials = 0;
        while (replies < REQUESTS) {
            frame f;
            assert_int_equal(read_frame(fds[c], &f, 5000), 1);
            const uint32_t r = f.header.request - 100u * (uint32_t)c;
            assert_true(r >= 1 && r <= REQUESTS);
            char expected[64];
            snprintf(expected, sizeof expected, "request=%u command=%s", f.header.request,
                     r % 2 ? "status" : "reset");
            assert_non_null(strstr(f.payload, expected));
            if (f.header.kind == OTFX_FRAME_REPLY)
                replies++;
            else
                partials++;
            frame_free(&f);
        }
        assert_int_equal(partials, REQUESTS);
        close(fds[c]);
    }
    o.running = 0;
    pthread_join(o.thread, NULL);
    stop(fx);
}

static void test_stop_with_requests_in_flight(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    const int fd = hello(fx);
    const int idle = hello(fx);
    send_frame(fd, OTFX_FRAME_REQUEST, 1, "status");
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    otfx_server_broadcast(fx->server, "notice event=job-ended\n", 23);
    stop(fx);
    expect_frame(fd, OTFX_FRAME_NOTICE, 0, "event=job-ended");
    expect_frame(fd, OTFX_FRAME_ERROR, 1, "code=job-ended");
    expect_closed(fd);
    expect_frame(idle, OTFX_FRAME_NOTICE, 0, "event=job-ended");
    expect_closed(idle);
    close(fd);
    close(idle);
}

/* The client library against the real server: discovery in the session directory, the token's HELLO,
 * a request's PARTIAL and REPLY, a notice, a deadline that passes, a refused token, the job's end. */
static void test_through_the_client_library(void **state)
{
    (void)state;
    fixture *fx = start((otfx_server_config){0});
    otfx_session session;
    char error[8192];
    assert_int_equal(otfx_session_discover(fx->dir, &session, NULL, NULL, error, sizeof error),
                     OTFX_CLIENT_OK);
    assert_string_equal(session.path, otfx_server_session_path(fx->server));
    assert_int_equal(atoi(session.port), fx->port);
    assert_string_equal(session.token, fx->token);
    assert_string_equal(session.job, "job-1");

    otfx_client_status status;
    otfx_client *client = otfx_client_connect(&session, "test", 5000, &status, error, sizeof error);
    if (!client)
        fail_msg("connect: %s", error);
    assert_non_null(strstr(otfx_client_welcome(client), "session job=job-1 ranks=8 places=3 version=1"));
    assert_string_equal(otfx_client_session(client)->job, "job-1");

    otfx_client_set_timeout(client, 5000);
    assert_int_equal(otfx_client_send(client, 3, "profile --ranks 0-3", error, sizeof error), OTFX_CLIENT_OK);
    otfx_server_request request;
    assert_true(next_request(fx, &request));
    assert_int_equal(request.request, 3);
    assert_int_equal(request.command.kind, OTFX_CMD_PROFILE);
    reply(fx, &request, OTFX_FRAME_PARTIAL, "profile partial=1\n");
    reply(fx, &request, OTFX_FRAME_REPLY, "profile partial=0\nregion name=main\n");
    otfx_client_frame answer;
    assert_int_equal(otfx_client_read(client, &answer, "an answer", error, sizeof error), OTFX_CLIENT_OK);
    assert_int_equal(answer.header.kind, OTFX_FRAME_PARTIAL);
    assert_int_equal(answer.header.request, 3);
    assert_string_equal(answer.payload, "profile partial=1\n");
    assert_int_equal(otfx_client_read(client, &answer, "an answer", error, sizeof error), OTFX_CLIENT_OK);
    assert_int_equal(answer.header.kind, OTFX_FRAME_REPLY);
    assert_string_equal(answer.payload, "profile partial=0\nregion name=main\n");

    otfx_server_broadcast(fx->server, "notice event=window-ended\n", 26);
    assert_true(otfx_client_wait_readable(client, 5000));
    assert_int_equal(otfx_client_read(client, &answer, "a notice", error, sizeof error), OTFX_CLIENT_OK);
    assert_int_equal(answer.header.kind, OTFX_FRAME_NOTICE);
    assert_string_equal(answer.payload, "notice event=window-ended\n");

    /* a request never answered: the deadline passes */
    assert_int_equal(otfx_client_send(client, 4, "status", error, sizeof error), OTFX_CLIENT_OK);
    assert_true(next_request(fx, &request));
    otfx_client_set_timeout(client, 100);
    assert_int_equal(otfx_client_read(client, &answer, "an answer", error, sizeof error),
                     OTFX_CLIENT_TIMEOUT);
    assert_non_null(strstr(error, "did not send an answer in time"));
    assert_int_equal(otfx_client_send(client, 0, "status", error, sizeof error), OTFX_CLIENT_BAD_ARGUMENT);

    /* a wrong token */
    otfx_session wrong = session;
    memcpy(wrong.token, "00000000000000000000000000000000", 32);
    assert_null(otfx_client_connect(&wrong, "test", 5000, &status, error, sizeof error));
    assert_int_equal(status, OTFX_CLIENT_REFUSED_TOKEN);
    assert_non_null(strstr(error, "the job refused the token of"));

    /* the job ends: the notice, then the request in flight fails, then the connection closes */
    otfx_server_broadcast(fx->server, "notice event=job-ended\n", 23);
    stop(fx);
    otfx_client_set_timeout(client, 5000);
    assert_int_equal(otfx_client_read(client, &answer, "an answer", error, sizeof error), OTFX_CLIENT_OK);
    assert_string_equal(answer.payload, "notice event=job-ended\n");
    assert_int_equal(otfx_client_read(client, &answer, "an answer", error, sizeof error), OTFX_CLIENT_OK);
    assert_int_equal(answer.header.kind, OTFX_FRAME_ERROR);
    assert_int_equal(answer.header.request, 4);
    assert_int_equal(otfx_client_read(client, &answer, "an answer", error, sizeof error),
                     OTFX_CLIENT_UNREACHABLE);
    assert_non_null(strstr(error, "closed the connection while test waited for an answer"));
    otfx_client_close(client);
}

static void test_start_errors(void **state)
{
    (void)state;
    char error[256];
    otfx_server_config config = {.listen = "127.0.0.1:99999", .session_dir = "/tmp"};
    assert_null(otfx_server_start(&config, error, sizeof error));
    assert_non_null(strstr(error, "bad listen address"));
    config.listen = "no-such-host.invalid:0";
    assert_null(otfx_server_start(&config, error, sizeof error));
    assert_non_null(strstr(error, "no-such-host.invalid"));
    config.listen = NULL;
    config.session_dir = "/nonexistent/dir";
    assert_null(otfx_server_start(&config, error, sizeof error));
    assert_non_null(strstr(error, "session file"));
    /* a job id that is no file name is made one */
    fixture *fx = start((otfx_server_config){.job_id = "../x y", .listen = ":0"});
    assert_non_null(strstr(otfx_server_session_path(fx->server), "/otfx-session-_._x_y.txt"));
    stop(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_reply),
        cmocka_unit_test(test_bad_commands_keep_the_connection),
        cmocka_unit_test(test_busy),
        cmocka_unit_test(test_authentication),
        cmocka_unit_test(test_malformed_frames),
        cmocka_unit_test(test_random_frames),
        cmocka_unit_test(test_client_leaves_mid_request),
        cmocka_unit_test(test_max_clients),
        cmocka_unit_test(test_idle_unauthenticated_connections),
        cmocka_unit_test(test_unread_answers_bounded_per_client),
        cmocka_unit_test(test_stalled_client_cut_for_room),
        cmocka_unit_test(test_oversized_reply),
        cmocka_unit_test(test_several_clients),
        cmocka_unit_test(test_stop_with_requests_in_flight),
        cmocka_unit_test(test_through_the_client_library),
        cmocka_unit_test(test_start_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

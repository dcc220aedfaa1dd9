/*
 * test_client.c — the parts of the client library (tbon/include/otfx/client.h) that need no server:
 * session discovery in a directory (found, none, several, untrusted, stale), session and token files,
 * ADDR:PORT, frame scanning of partial and malformed input, the HELLO and the judgement of its answer,
 * and a connection to a scripted peer that breaks the protocol. test_server.c runs the connection
 * against the real server.
 */
#define _GNU_SOURCE
#include <otfx/client.h>

#include <errno.h>
#include <netinet/in.h>
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
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

static const char token[] = "0123456789abcdef0123456789abcdef";

/* ---- a session directory ------------------------------------------------------------------------ */

typedef struct directory {
    char path[64];
    char files[16][128];
    size_t count;
} directory;

static directory *make_directory(void)
{
    directory *d = calloc(1, sizeof *d);
    assert_non_null(d);
    snprintf(d->path, sizeof d->path, "/tmp/otfx-test-client-XXXXXX");
    assert_non_null(mkdtemp(d->path));
    return d;
}

/* Writes `name` with `text`, mode `mode`, modified `age_s` seconds ago; returns its path. */
static const char *write_file(directory *d, const char *name, const char *text, mode_t mode, int age_s)
{
    assert_true(d->count < sizeof d->files / sizeof d->files[0]);
    char full[sizeof d->files[0]];
    snprintf(full, sizeof full, "%s/%s", d->path, name);
    char *path = d->files[d->count++];
    memcpy(path, full, sizeof full);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    struct timeval now;
    gettimeofday(&now, NULL);
    const struct timeval times[2] = {{now.tv_sec - age_s, 0}, {now.tv_sec - age_s, 0}};
    assert_int_equal(utimes(path, times), 0);
    return path;
}

static void remove_directory(directory *d)
{
    for (size_t i = 0; i < d->count; i++)
        unlink(d->files[i]);
    assert_int_equal(rmdir(d->path), 0);
    free(d);
}

static char session_line[512];

static const char *session_text(const char *port, const char *job)
{
    snprintf(
        session_line, sizeof session_line,
        "session address=127.0.0.1 port=%s token=%s job=%s ranks=8 places=3 pid=42 started_ns=5 version=1\n",
        port, token, job);
    return session_line;
}

typedef struct skipped_files {
    size_t count;
    char why[4][256];
} skipped_files;

static void note_skipped(void *user, const char *path, const char *why)
{
    skipped_files *skipped = user;
    if (skipped->count < 4)
        snprintf(skipped->why[skipped->count], sizeof skipped->why[0], "%s: %s", path, why);
    skipped->count++;
}

/* ---- discovery ---------------------------------------------------------------------------------- */

static void test_discover_none(void **state)
{
    (void)state;
    directory *d = make_directory();
    /* files that are not session files by name do not count */
    write_file(d, "otfx-session-1.log", session_text("1111", "a"), 0600, 0);
    write_file(d, "session-2.txt", session_text("1111", "b"), 0600, 0);
    otfx_session session;
    char error[1024];
    assert_int_equal(otfx_session_discover(d->path, &session, NULL, NULL, error, sizeof error),
                     OTFX_CLIENT_NO_SESSION);
    assert_non_null(strstr(error, "no session file (otfx-session-*.txt) in /tmp/otfx-test-client-"));
    assert_non_null(strstr(error, "--session FILE"));
    char path[4096];
    assert_false(otfx_session_find_newest(d->path, path, sizeof path, NULL, NULL));
    assert_false(otfx_session_find_newest("/nonexistent/otfx", path, sizeof path, NULL, NULL));
    remove_directory(d);

    /* the default directory: $OTFX_SESSION_DIR, else the working directory (named so in the error) */
    setenv("OTFX_SESSION_DIR", "/tmp/elsewhere", 1);
    assert_string_equal(otfx_session_default_dir(), "/tmp/elsewhere");
    setenv("OTFX_SESSION_DIR", "", 1);
    assert_string_equal(otfx_session_default_dir(), ".");
    unsetenv("OTFX_SESSION_DIR");
    assert_string_equal(otfx_session_default_dir(), ".");
}

static void test_discover_one(void **state)
{
    (void)state;
    directory *d = make_directory();
    const char *path = write_file(d, "otfx-session-4711.txt", session_text("40123", "4711"), 0600, 0);
    otfx_session session;
    char error[1024];
    assert_int_equal(otfx_session_discover(d->path, &session, NULL, NULL, error, sizeof error),
                     OTFX_CLIENT_OK);
    assert_string_equal(session.path, path);
    assert_string_equal(session.address, "127.0.0.1");
    assert_string_equal(session.port, "40123");
    assert_string_equal(session.token, token);
    assert_string_equal(session.job, "4711");
    assert_int_equal(session.ranks, 8);
    assert_int_equal(session.places, 3);
    assert_int_equal(session.pid, 42);
    assert_int_equal(session.started_ns, 5);
    remove_directory(d);
}

static void test_discover_newest_of_several(void **state)
{
    (void)state;
    directory *d = make_directory();
    write_file(d, "otfx-session-old.txt", session_text("1111", "old"), 0600, 100);
    const char *newest = write_file(d, "otfx-session-new.txt", session_text("2222", "new"), 0600, 1);
    write_file(d, "otfx-session-older.txt", session_text("3333", "older"), 0600, 200);
    /* newer, but not private to the user: skipped and reported */
    write_file(d, "otfx-session-open.txt", session_text("4444", "open"), 0644, 0);
    skipped_files skipped = {0};
    otfx_session session;
    char error[1024];
    assert_int_equal(otfx_session_discover(d->path, &session, note_skipped, &skipped, error, sizeof error),
                     OTFX_CLIENT_OK);
    assert_string_equal(session.path, newest);
    assert_string_equal(session.job, "new");
    assert_int_equal(skipped.count, 1);
    assert_non_null(strstr(skipped.why[0], "otfx-session-open.txt: mode 0644, not 0600"));
    if (geteuid() == 0) { /* only root can give a file away */
        const char *other = write_file(d, "otfx-session-other.txt", session_text("5555", "other"), 0600, 0);
        assert_int_equal(chown(other, 65534, 65534), 0);
        skipped.count = 0;
        assert_int_equal(
            otfx_session_discover(d->path, &session, note_skipped, &skipped, error, sizeof error),
            OTFX_CLIENT_OK);
        assert_string_equal(session.job, "new");
        assert_int_equal(skipped.count, 2);
        char why[256];
        assert_false(otfx_session_file_trusted(other, why, sizeof why));
        assert_non_null(strstr(why, "owned by uid 65534, not by you"));
    }
    remove_directory(d);
}

static void test_discover_only_untrusted(void **state)
{
    (void)state;
    directory *d = make_directory();
    const char *open_file = write_file(d, "otfx-session-open.txt", session_text("4444", "open"), 0644, 0);
    skipped_files skipped = {0};
    otfx_session session;
    char error[1024];
    assert_int_equal(otfx_session_discover(d->path, &session, note_skipped, &skipped, error, sizeof error),
                     OTFX_CLIENT_NO_SESSION);
    assert_int_equal(skipped.count, 1);
    /* named directly it is refused, saying why */
    assert_int_equal(otfx_session_read(open_file, &session, error, sizeof error), OTFX_CLIENT_NO_SESSION);
    assert_non_null(strstr(error, "not using the session file"));
    assert_non_null(strstr(error, "mode 0644"));
    char why[256];
    assert_false(otfx_session_file_trusted(open_file, why, sizeof why));
    assert_false(otfx_session_file_trusted(d->path, why, sizeof why)); /* a directory */
    assert_string_equal(why, "not a regular file");
    remove_directory(d);
}

/* A session file whose job is gone (killed before it could remove it): found like any other, and the
 * connection is refused with the file named as stale. */
static void test_discover_stale(void **state)
{
    (void)state;
    /* a port nobody listens on: bound, never listening, then closed */
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&address, sizeof address), 0);
    socklen_t length = sizeof address;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&address, &length), 0);
    char port[16];
    snprintf(port, sizeof port, "%u", (unsigned)ntohs(address.sin_port));
    close(fd);

    directory *d = make_directory();
    const char *path = write_file(d, "otfx-session-gone.txt", session_text(port, "gone"), 0600, 0);
    otfx_session session;
    char error[8192];
    assert_int_equal(otfx_session_discover(d->path, &session, NULL, NULL, error, sizeof error),
                     OTFX_CLIENT_OK);
    otfx_client_status status;
    otfx_client *client = otfx_client_connect(&session, "test", 5000, &status, error, sizeof error);
    assert_null(client);
    assert_int_equal(status, OTFX_CLIENT_UNREACHABLE);
    assert_non_null(strstr(error, "cannot connect to 127.0.0.1:"));
    assert_non_null(strstr(error, "(job gone)"));
    assert_non_null(strstr(error, "stale session file"));
    assert_non_null(strstr(error, path));
    remove_directory(d);
}

static void test_session_files_that_are_not(void **state)
{
    (void)state;
    directory *d = make_directory();
    otfx_session session;
    char error[8192];
    static const struct {
        const char *text, *fragment;
    } cases[] = {
        {"", "is not an otfx session file (empty)"},
        {"nonsense\n", "is not an otfx session file"},
        {"hello token=0123456789abcdef0123456789abcdef\n", "is not an otfx session file"},
        {"session address=127.0.0.1 port=1 job=x\n", "lacks address, port or token"},
        {"session address=127.0.0.1 port=1 token=abc\n", "lacks address, port or token"},
        {"session address=127.0.0.1 port=0 token=0123456789abcdef0123456789abcdef\n", "lacks address"},
        {"session address=127.0.0.1 port=70000 token=0123456789abcdef0123456789abcdef\n", "lacks address"},
        {"session port=1 token=0123456789abcdef0123456789abcdef\n", "lacks address"},
        {"session address=127.0.0.1 port=1 token=0123456789ABCDEF0123456789ABCDEF\n", "lacks address"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "otfx-session-bad%zu.txt", i);
        const char *path = write_file(d, name, cases[i].text, 0600, 0);
        assert_int_equal(otfx_session_read(path, &session, error, sizeof error), OTFX_CLIENT_NO_SESSION);
        if (!strstr(error, cases[i].fragment) || !strstr(error, path))
            fail_msg("case %zu: '%s' lacks '%s'", i, error, cases[i].fragment);
    }
    assert_int_equal(otfx_session_read("/nonexistent/otfx-session-x.txt", &session, error, sizeof error),
                     OTFX_CLIENT_NO_SESSION);
    assert_non_null(strstr(error, "cannot read the session file /nonexistent/otfx-session-x.txt"));
    /* a session line without job: "?" */
    const char *bare =
        write_file(d, "otfx-session-bare.txt",
                   "session address=::1 port=9 token=0123456789abcdef0123456789abcdef\n", 0600, 0);
    assert_int_equal(otfx_session_read(bare, &session, error, sizeof error), OTFX_CLIENT_OK);
    assert_string_equal(session.job, "?");
    assert_string_equal(session.address, "::1");
    assert_int_equal(session.ranks, 0);
    remove_directory(d);
}

static void test_token_files_and_addresses(void **state)
{
    (void)state;
    directory *d = make_directory();
    char got[64], error[8192];
    const char *session_file = write_file(d, "otfx-session-1.txt", session_text("1", "1"), 0600, 0);
    assert_int_equal(otfx_session_read_token(session_file, got, sizeof got, error, sizeof error),
                     OTFX_CLIENT_OK);
    assert_string_equal(got, token);
    char bare_text[64];
    snprintf(bare_text, sizeof bare_text, "%s\n", token);
    const char *bare = write_file(d, "token", bare_text, 0644, 0); /* token files are not checked for trust */
    assert_int_equal(otfx_session_read_token(bare, got, sizeof got, error, sizeof error), OTFX_CLIENT_OK);
    assert_string_equal(got, token);
    const char *short_token = write_file(d, "short", "0123abcd\n", 0600, 0);
    assert_int_equal(otfx_session_read_token(short_token, got, sizeof got, error, sizeof error),
                     OTFX_CLIENT_BAD_ARGUMENT);
    assert_non_null(strstr(error, "holds no token"));
    const char *other_line = write_file(d, "other", "notice event=x\n", 0600, 0);
    assert_int_equal(otfx_session_read_token(other_line, got, sizeof got, error, sizeof error),
                     OTFX_CLIENT_BAD_ARGUMENT);
    const char *empty = write_file(d, "empty", "", 0600, 0);
    assert_int_equal(otfx_session_read_token(empty, got, sizeof got, error, sizeof error),
                     OTFX_CLIENT_BAD_ARGUMENT);
    assert_non_null(strstr(error, "cannot read the token file"));
    assert_int_equal(otfx_session_read_token("/nonexistent/token", got, sizeof got, error, sizeof error),
                     OTFX_CLIENT_BAD_ARGUMENT);
    assert_non_null(strstr(error, "No such file"));

    otfx_session session;
    assert_int_equal(otfx_session_from_address("[::1]:40123", bare, &session, error, sizeof error),
                     OTFX_CLIENT_OK);
    assert_string_equal(session.address, "::1");
    assert_string_equal(session.port, "40123");
    assert_string_equal(session.token, token);
    assert_string_equal(session.path, bare);
    assert_string_equal(session.job, "?");
    static const struct {
        const char *text, *fragment;
    } bad[] = {{"host", "expected ADDR:PORT"},       {":5", "expected ADDR:PORT"},
               {"host:", "expected ADDR:PORT"},      {"host:5x", "expected ADDR:PORT"},
               {"host:0", "must be 1 to 65535"},     {"host:65536", "must be 1 to 65535"},
               {"host:99999", "must be 1 to 65535"}, {"[]:5", "expected ADDR:PORT"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(otfx_session_from_address(bad[i].text, bare, &session, error, sizeof error),
                         OTFX_CLIENT_BAD_ARGUMENT);
        if (!strstr(error, "bad --connect") || !strstr(error, bad[i].fragment))
            fail_msg("'%s': '%s' lacks '%s'", bad[i].text, error, bad[i].fragment);
    }
    char host[256], port[16];
    assert_true(otfx_parse_address("127.0.0.1:1", host, sizeof host, port, sizeof port, error, sizeof error));
    assert_string_equal(host, "127.0.0.1");
    assert_string_equal(port, "1");
    remove_directory(d);
}

/* ---- frames over a buffer ----------------------------------------------------------------------- */

static size_t make_frame(unsigned char *out, otfx_frame_kind kind, uint32_t request, const char *payload)
{
    const size_t length = strlen(payload);
    otfx_frame_write_header(out, kind, request, (uint32_t)length);
    memcpy(out + OTFX_FRAME_HEADER_BYTES, payload, length);
    return OTFX_FRAME_HEADER_BYTES + length;
}

static void test_scan_partial_frames(void **state)
{
    (void)state;
    unsigned char buffer[256];
    size_t size = make_frame(buffer, OTFX_FRAME_REPLY, 7, "status ok=1\n");
    const size_t first = size;
    size += make_frame(buffer + size, OTFX_FRAME_NOTICE, 0, "notice event=x\n");
    otfx_frame_header header;
    const char *payload;
    size_t frame_bytes;
    char error[256];
    /* every prefix of the first frame: more is needed, nothing is consumed */
    for (size_t n = 0; n < first; n++) {
        assert_int_equal(
            otfx_client_scan_frame(buffer, n, &header, &payload, &frame_bytes, error, sizeof error),
            OTFX_FRAME_SCAN_NEED_MORE);
        assert_null(payload);
        assert_int_equal(frame_bytes, 0);
        if (n >= OTFX_FRAME_HEADER_BYTES)
            assert_int_equal(header.length, first - OTFX_FRAME_HEADER_BYTES); /* the header is known */
    }
    assert_int_equal(
        otfx_client_scan_frame(buffer, size, &header, &payload, &frame_bytes, error, sizeof error),
        OTFX_FRAME_SCAN_READY);
    assert_int_equal(header.kind, OTFX_FRAME_REPLY);
    assert_int_equal(header.request, 7);
    assert_int_equal(frame_bytes, first);
    assert_memory_equal(payload, "status ok=1\n", header.length);
    assert_int_equal(otfx_client_scan_frame(buffer + first, size - first, &header, &payload, &frame_bytes,
                                            error, sizeof error),
                     OTFX_FRAME_SCAN_READY);
    assert_int_equal(header.kind, OTFX_FRAME_NOTICE);
    assert_int_equal(frame_bytes, size - first);
    /* an empty payload */
    size = make_frame(buffer, OTFX_FRAME_REPLY, 1, "");
    assert_int_equal(
        otfx_client_scan_frame(buffer, size, &header, &payload, &frame_bytes, error, sizeof error),
        OTFX_FRAME_SCAN_READY);
    assert_int_equal(frame_bytes, OTFX_FRAME_HEADER_BYTES);
}

static void test_scan_malformed_frames(void **state)
{
    (void)state;
    unsigned char buffer[64];
    otfx_frame_header header;
    const char *payload;
    size_t frame_bytes;
    char error[256];
    static const struct {
        size_t byte;
        unsigned char value;
        const char *fragment;
    } cases[] = {
        {0, 'X', "wrong magic"},
        {5, 2, "unsupported protocol version (2, expected 1)"},
        {7, 0, "unknown frame kind (0)"},
        {7, 8, "unknown frame kind (8)"},
        {12, 0xff, "too large (4278190090 bytes, at most 67108864)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_frame(buffer, OTFX_FRAME_REPLY, 1, "payload");
        buffer[cases[i].byte] = cases[i].value;
        if (cases[i].byte == 12)
            buffer[15] = 0x0a; /* length 0xff00000a */
        error[0] = '\0';
        assert_int_equal(otfx_client_scan_frame(buffer, OTFX_FRAME_HEADER_BYTES, &header, &payload,
                                                &frame_bytes, error, sizeof error),
                         OTFX_FRAME_SCAN_BAD);
        if (!strstr(error, cases[i].fragment))
            fail_msg("case %zu: '%s' lacks '%s'", i, error, cases[i].fragment);
        assert_null(payload);
        assert_int_equal(frame_bytes, 0);
    }
    /* random bytes: any answer but a crash, and READY never claims more than was given */
    srand(7);
    for (int round = 0; round < 20000; round++) {
        const size_t n = (size_t)rand() % sizeof buffer;
        for (size_t i = 0; i < n; i++)
            buffer[i] = (unsigned char)rand();
        if (round % 2 && n >= 8) { /* a valid start: magic and version, random kind and length */
            otfx_frame_write_header(buffer, OTFX_FRAME_REPLY, 0, 0);
            buffer[7] = (unsigned char)(rand() % 9);
            buffer[12] = buffer[13] = 0;
            buffer[14] = (unsigned char)(rand() % 2);
        }
        const otfx_frame_scan scan =
            otfx_client_scan_frame(buffer, n, &header, &payload, &frame_bytes, error, sizeof error);
        if (scan == OTFX_FRAME_SCAN_READY)
            assert_true(frame_bytes <= n && payload == (const char *)buffer + OTFX_FRAME_HEADER_BYTES);
    }
}

/* ---- the HELLO and its answer ------------------------------------------------------------------- */

static void test_hello_and_welcome(void **state)
{
    (void)state;
    otfx_text hello = {0};
    otfx_client_hello_payload(token, "otfx-gui", &hello);
    assert_false(hello.failed);
    assert_string_equal(hello.data, "hello token=0123456789abcdef0123456789abcdef client=otfx-gui\n");
    otfx_text_free(&hello);

    char error[1024];
    otfx_frame_header header = {.version = 1, .kind = OTFX_FRAME_WELCOME};
    const char welcome[] = "session job=1 ranks=8 places=3 version=1\n";
    assert_int_equal(otfx_client_check_welcome(&header, welcome, strlen(welcome), NULL, error, sizeof error),
                     OTFX_CLIENT_OK);
    header.kind = OTFX_FRAME_ERROR;
    const char auth[] = "error code=auth message=wrong%20token\n";
    assert_int_equal(
        otfx_client_check_welcome(&header, auth, strlen(auth), "/tmp/s.txt", error, sizeof error),
        OTFX_CLIENT_REFUSED_TOKEN);
    assert_string_equal(error, "the job refused the token of /tmp/s.txt: wrong token");
    assert_int_equal(otfx_client_check_welcome(&header, auth, strlen(auth), NULL, error, sizeof error),
                     OTFX_CLIENT_REFUSED_TOKEN);
    assert_string_equal(error, "the job refused the token: wrong token");
    const char busy[] = "error code=busy message=too%20many%20clients\n";
    assert_int_equal(otfx_client_check_welcome(&header, busy, strlen(busy), NULL, error, sizeof error),
                     OTFX_CLIENT_UNREACHABLE);
    assert_string_equal(error, "the job refused the connection (busy): too many clients");
    header.kind = OTFX_FRAME_REPLY;
    assert_int_equal(otfx_client_check_welcome(&header, "", 0, NULL, error, sizeof error),
                     OTFX_CLIENT_UNREACHABLE);
    assert_string_equal(error, "the job answered the hello with frame kind 5");

    /* ERROR payloads: fields, or the raw first line when it does not parse (not NUL-terminated here) */
    char code[64], message[256];
    otfx_client_error_fields(busy, strlen(busy), code, sizeof code, message, sizeof message);
    assert_string_equal(code, "busy");
    assert_string_equal(message, "too many clients");
    const char raw[] = {'o', 'o', 'p', 's', '\n', 'x'};
    otfx_client_error_fields(raw, sizeof raw, code, sizeof code, message, sizeof message);
    assert_string_equal(code, "?");
    assert_string_equal(message, "oops");
    otfx_client_error_fields("", 0, code, sizeof code, message, sizeof message);
    assert_string_equal(code, "?");
    assert_string_equal(message, "");
}

/* ---- a scripted peer: what a broken server may send ------------------------------------------------ */

typedef struct peer {
    int listener;
    char port[16];
    const unsigned char *bytes; /* sent after the HELLO was read */
    size_t length;
    pthread_t thread;
} peer;

static void *peer_main(void *arg)
{
    peer *p = arg;
    const int fd = accept(p->listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    size_t got = 0;
    while (got < sizeof header) { /* the HELLO's header; its payload is left unread */
        const ssize_t n = recv(fd, header + got, sizeof header - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (p->length)
        (void)!send(fd, p->bytes, p->length, MSG_NOSIGNAL);
    char drain[256];
    while (recv(fd, drain, sizeof drain, 0) > 0) /* until the client closes */
        ;
    close(fd);
    return NULL;
}

static void peer_start(peer *p, const unsigned char *bytes, size_t length)
{
    p->bytes = bytes;
    p->length = length;
    p->listener = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(p->listener >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(p->listener, (struct sockaddr *)&address, sizeof address), 0);
    assert_int_equal(listen(p->listener, 1), 0);
    socklen_t size = sizeof address;
    assert_int_equal(getsockname(p->listener, (struct sockaddr *)&address, &size), 0);
    snprintf(p->port, sizeof p->port, "%u", (unsigned)ntohs(address.sin_port));
    assert_int_equal(pthread_create(&p->thread, NULL, peer_main, p), 0);
}

static void peer_stop(peer *p)
{
    pthread_join(p->thread, NULL);
    close(p->listener);
}

static otfx_session peer_session(const peer *p)
{
    otfx_session session = {0};
    snprintf(session.path, sizeof session.path, "/tmp/otfx-session-peer.txt");
    snprintf(session.address, sizeof session.address, "127.0.0.1");
    snprintf(session.port, sizeof session.port, "%s", p->port);
    snprintf(session.token, sizeof session.token, "%s", token);
    snprintf(session.job, sizeof session.job, "peer");
    return session;
}

/* A server that answers the HELLO with garbage, or sends half a frame and stalls: clear errors. */
static void test_broken_servers(void **state)
{
    (void)state;
    char error[8192];
    otfx_client_status status;

    static const unsigned char garbage[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    peer p;
    peer_start(&p, garbage, sizeof garbage - 1);
    otfx_session session = peer_session(&p);
    assert_null(otfx_client_connect(&session, "test", 5000, &status, error, sizeof error));
    assert_int_equal(status, OTFX_CLIENT_UNREACHABLE);
    assert_non_null(strstr(error, "sent a malformed frame (not an otfx frame (wrong magic number))"));
    peer_stop(&p);

    /* a WELCOME, then 10 bytes of a 16-byte header: the deadline passes mid-frame, and the connection is
     * shut down rather than read out of step */
    unsigned char bytes[64];
    const char welcome[] = "session job=peer\n";
    otfx_frame_write_header(bytes, OTFX_FRAME_WELCOME, 0, sizeof welcome - 1);
    memcpy(bytes + OTFX_FRAME_HEADER_BYTES, welcome, sizeof welcome - 1);
    const size_t welcome_bytes = OTFX_FRAME_HEADER_BYTES + sizeof welcome - 1;
    otfx_frame_write_header(bytes + welcome_bytes, OTFX_FRAME_REPLY, 1, 100);
    peer_start(&p, bytes, welcome_bytes + 10);
    session = peer_session(&p);
    otfx_client *client = otfx_client_connect(&session, "test", 5000, &status, error, sizeof error);
    if (!client)
        fail_msg("connect: %s", error);
    assert_string_equal(otfx_client_welcome(client), welcome);
    otfx_client_frame frame;
    otfx_client_set_timeout(client, 200);
    assert_int_equal(otfx_client_read(client, &frame, "an answer", error, sizeof error), OTFX_CLIENT_TIMEOUT);
    assert_non_null(strstr(error, "the job (127.0.0.1:"));
    assert_non_null(strstr(error, "job peer) did not send an answer in time"));
    otfx_client_set_timeout(client, 5000);
    assert_int_equal(otfx_client_read(client, &frame, "an answer", error, sizeof error),
                     OTFX_CLIENT_UNREACHABLE);
    assert_non_null(strstr(error, "closed the connection while test waited for an answer"));
    otfx_client_close(client);
    peer_stop(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discover_none),
        cmocka_unit_test(test_discover_one),
        cmocka_unit_test(test_discover_newest_of_several),
        cmocka_unit_test(test_discover_only_untrusted),
        cmocka_unit_test(test_discover_stale),
        cmocka_unit_test(test_session_files_that_are_not),
        cmocka_unit_test(test_token_files_and_addresses),
        cmocka_unit_test(test_scan_partial_frames),
        cmocka_unit_test(test_scan_malformed_frames),
        cmocka_unit_test(test_hello_and_welcome),
        cmocka_unit_test(test_broken_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

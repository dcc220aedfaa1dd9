/*
 * otfxctl — the command-line client of a running otfx job (docs/protocol.md, docs/usage.md).
 *
 *   otfxctl [--connect ADDR:PORT --token-file F | --session FILE] [--json] [--partial] [--timeout S]
 *           COMMAND...
 *   otfxctl [connection options] watch [--interval S] [--count N]
 *
 * The command is checked here with otfx_command_parse before anything is contacted. Exit codes:
 * 0 done, 1 the job answered with an error, 2 bad argument, 3 no session file, 4 cannot reach the job
 * (refused, gone, no answer in time), 5 the token was refused.
 */
#define _GNU_SOURCE
#include <otfx/protocol.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
    EXIT_OK = 0,
    EXIT_SERVER_ERROR = 1,
    EXIT_BAD_ARGUMENT = 2,
    EXIT_NO_SESSION = 3,
    EXIT_UNREACHABLE = 4,
    EXIT_REFUSED_TOKEN = 5
};

static const char usage_text[] =
    "usage: otfxctl [OPTIONS] COMMAND [ARGS...]\n"
    "\n"
    "Talks to a running otfx job (started with otfx-run) through the session file its root place\n"
    "wrote: the newest otfx-session-*.txt in $OTFX_SESSION_DIR, else in the working directory.\n"
    "\n"
    "options (before the command):\n"
    "  --session FILE          use this session file\n"
    "  --connect ADDR:PORT     connect there (needs --token-file)\n"
    "  --token-file FILE       the token: a session file or a file holding just the token\n"
    "  --json                  one JSON object per record line on stdout (JSON lines); the line's type\n"
    "                          is the key \"record\", numbers are JSON numbers, all else strings\n"
    "  --partial               also print partial results (sent before the slowest places answered)\n"
    "  --timeout S             give up after S seconds without the answer (default 30; 0: wait forever)\n"
    "  -h, --help              this text\n"
    "\n"
    "commands:\n"
    "  status                                  per place: ranks, events/s, buffer, reduction, states\n"
    "  record pause | record resume            stop / restart recording on every rank\n"
    "  record window DURATION                  record from now for DURATION, then stop\n"
    "  app pause | app resume                  block / release the application ranks\n"
    "  reset                                   drop the events held (definitions stay)\n"
    "  reduction ring|time|type|depth|stop     reduction strategy when a buffer is full\n"
    "  enable CLASSES | disable CLASSES        comma list of p2p, collective, mpi-other, user, all\n"
    "  snapshot PATH [--from T] [--to T] [--ranks SET] [--overwrite]\n"
    "                                          write an OTF2 archive under the snapshot directory\n"
    "  profile  [--from T] [--to T] [--ranks SET]\n"
    "  timeline [--from T] [--to T] [--ranks SET] [--bins N] [--rows N]\n"
    "  messages [--from T] [--to T] [--ranks SET] [--groups N]\n"
    "  events   [--from T] [--to T] [--ranks SET] [--limit N]\n"
    "  query MODULE [--from T] [--to T] [--ranks SET] [--bins N] [--rows N] [--groups N] [--limit N]\n"
    "  load-module PATH                        load an analysis module (a shared object) on every place\n"
    "  watch [--interval S] [--count N]        live status every S seconds (default 1), N times (0: until\n"
    "                                          interrupted or the job ends)\n"
    "\n"
    "  Times and durations: 2s, 1.5s, 500ms, 10us, 100ns or plain seconds, on the job's clock.\n"
    "  Rank sets: all, or a list like 0-3,7.\n"
    "\n"
    "exit codes: 0 done, 1 the job answered with an error, 2 bad argument, 3 no session file,\n"
    "            4 the job cannot be reached (refused, gone, no answer in time), 5 token refused\n";

typedef struct options {
    const char *session;
    const char *connect;
    const char *token_file;
    bool json, partial;
    double timeout_s;
} options;

typedef struct session {
    char path[4096];
    char host[256];
    char port[16];
    char token[128];
    char job[128];
} session;

static int fail(int code, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("otfxctl: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    return code;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- session files ------------------------------------------------------------------------------ */

/* Reads the first line of a small file into `out` (without its newline). */
static bool read_first_line(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    const bool ok = fgets(out, (int)size, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\r\n")] = '\0';
    return ok;
}

static bool copy_value(const otfx_kv_line *line, const char *key, char *out, size_t size)
{
    const char *value = otfx_kv_get(line, key);
    if (!value || strlen(value) >= size)
        return false;
    memcpy(out, value, strlen(value) + 1);
    return true;
}

/* Why a session file must not be trusted (NULL: it may be): it leads otfxctl to a server and hands
 * that server the token, so it must be the user's own and private to them, as the job writes it. */
static const char *untrusted_session(const struct stat *st, char *why, size_t size)
{
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, size, "not a regular file");
        return why;
    }
    if (st->st_uid != geteuid()) {
        snprintf(why, size, "owned by uid %u, not by you (uid %u)", (unsigned)st->st_uid,
                 (unsigned)geteuid());
        return why;
    }
    if ((st->st_mode & 07777) != 0600) {
        snprintf(why, size, "mode %04o, not 0600 (others could read it or have written it)",
                 (unsigned)(st->st_mode & 07777));
        return why;
    }
    return NULL;
}

/* Reads the first line of a session file after checking (on the open file) that it may be trusted. */
static int read_session_line(const char *path, char *line, size_t size)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return fail(EXIT_NO_SESSION, "cannot read the session file %s: %s", path, strerror(errno));
    struct stat st;
    char why[160] = "";
    if (fstat(fd, &st) != 0 || untrusted_session(&st, why, sizeof why)) {
        const int saved = errno;
        close(fd);
        return fail(EXIT_NO_SESSION, "not using the session file %s: %s", path,
                    why[0] ? why : strerror(saved));
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return fail(EXIT_NO_SESSION, "cannot read the session file %s: %s", path, strerror(errno));
    }
    const bool ok = fgets(line, (int)size, f) != NULL;
    fclose(f);
    if (!ok)
        return fail(EXIT_NO_SESSION, "%s is not an otfx session file (empty)", path);
    line[strcspn(line, "\r\n")] = '\0';
    return EXIT_OK;
}

static int load_session(const char *path, session *out)
{
    char line[4096];
    const int rc = read_session_line(path, line, sizeof line);
    if (rc != EXIT_OK)
        return rc;
    otfx_kv_line kv;
    if (!otfx_kv_parse(line, strlen(line), &kv) || strcmp(kv.type, "session") != 0) {
        if (kv.storage)
            otfx_kv_line_free(&kv);
        return fail(EXIT_NO_SESSION, "%s is not an otfx session file", path);
    }
    const bool ok = copy_value(&kv, "address", out->host, sizeof out->host) &&
                    copy_value(&kv, "port", out->port, sizeof out->port) &&
                    copy_value(&kv, "token", out->token, sizeof out->token);
    if (!copy_value(&kv, "job", out->job, sizeof out->job))
        snprintf(out->job, sizeof out->job, "?");
    otfx_kv_line_free(&kv);
    if (!ok)
        return fail(EXIT_NO_SESSION, "the session file %s lacks address, port or token", path);
    snprintf(out->path, sizeof out->path, "%s", path);
    return EXIT_OK;
}

/* The newest otfx-session-*.txt of `dir` (by modification time). */
static bool newest_session_file(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct timespec newest = {0, 0};
    bool found = false;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        const char *name = entry->d_name;
        const size_t n = strlen(name);
        if (strncmp(name, "otfx-session-", 13) != 0 || n < 18 || strcmp(name + n - 4, ".txt") != 0)
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
            continue;
        struct stat st;
        char why[160];
        if (stat(path, &st) != 0)
            continue;
        if (untrusted_session(&st, why, sizeof why)) {
            fprintf(stderr, "otfxctl: ignoring the session file %s: %s\n", path, why);
            continue;
        }
        if (!found || st.st_mtim.tv_sec > newest.tv_sec ||
            (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec)) {
            newest = st.st_mtim;
            snprintf(out, size, "%s", path);
            found = true;
        }
    }
    closedir(d);
    return found;
}

static int find_session(const options *opts, session *out)
{
    memset(out, 0, sizeof *out);
    if (opts->session)
        return load_session(opts->session, out);
    if (opts->connect) {
        if (!opts->token_file)
            return fail(EXIT_BAD_ARGUMENT,
                        "--connect needs --token-file (a session file or a file with the token)");
        const char *colon = strrchr(opts->connect, ':');
        const char *host = opts->connect;
        size_t host_length = colon ? (size_t)(colon - host) : 0;
        if (host_length >= 2 && host[0] == '[' && host[host_length - 1] == ']') {
            host++;
            host_length -= 2;
        }
        if (!colon || host_length == 0 || host_length >= sizeof out->host || strlen(colon + 1) == 0 ||
            strlen(colon + 1) >= sizeof out->port || strspn(colon + 1, "0123456789") != strlen(colon + 1))
            return fail(EXIT_BAD_ARGUMENT, "bad --connect '%s': expected ADDR:PORT", opts->connect);
        const long port = strtol(colon + 1, NULL, 10);
        if (port < 1 || port > 65535)
            return fail(EXIT_BAD_ARGUMENT, "bad --connect '%s': the port must be 1 to 65535", opts->connect);
        memcpy(out->host, host, host_length);
        out->host[host_length] = '\0';
        snprintf(out->port, sizeof out->port, "%s", colon + 1);
        char line[4096];
        if (!read_first_line(opts->token_file, line, sizeof line))
            return fail(EXIT_BAD_ARGUMENT, "cannot read the token file %s: %s", opts->token_file,
                        strerror(errno));
        otfx_kv_line kv;
        if (otfx_kv_parse(line, strlen(line), &kv)) {
            const bool ok =
                strcmp(kv.type, "session") == 0 && copy_value(&kv, "token", out->token, sizeof out->token);
            otfx_kv_line_free(&kv);
            if (!ok)
                return fail(EXIT_BAD_ARGUMENT, "the token file %s holds no token", opts->token_file);
        } else {
            const size_t n = strspn(line, "0123456789abcdefABCDEF");
            if (n == 0 || line[n] != '\0' || n >= sizeof out->token)
                return fail(EXIT_BAD_ARGUMENT, "the token file %s holds no token", opts->token_file);
            memcpy(out->token, line, n + 1);
        }
        snprintf(out->job, sizeof out->job, "?");
        snprintf(out->path, sizeof out->path, "%s", opts->token_file);
        return EXIT_OK;
    }
    if (opts->token_file)
        return fail(EXIT_BAD_ARGUMENT, "--token-file goes with --connect ADDR:PORT");
    const char *dir = getenv("OTFX_SESSION_DIR");
    if (!dir || !*dir)
        dir = ".";
    char path[4096];
    if (!newest_session_file(dir, path, sizeof path))
        return fail(EXIT_NO_SESSION,
                    "no session file (otfx-session-*.txt) in %s: is an otfx job running? (otfx-run writes it "
                    "into $OTFX_SESSION_DIR or its working directory; or use --session FILE, or --connect "
                    "ADDR:PORT --token-file FILE)",
                    strcmp(dir, ".") == 0 ? "the working directory" : dir);
    return load_session(path, out);
}

/* ---- the connection ----------------------------------------------------------------------------- */

typedef struct connection {
    int fd;
    const session *session;
    uint64_t deadline_ms; /* 0: none */
    int64_t timeout_ms;   /* per request; -1: none */
} connection;

static int wait_ms(const connection *conn)
{
    if (conn->deadline_ms == 0)
        return -1;
    const uint64_t now = now_ms();
    if (now >= conn->deadline_ms)
        return 0;
    return conn->deadline_ms - now > INT_MAX ? INT_MAX : (int)(conn->deadline_ms - now);
}

static int connect_to(connection *conn, const session *s)
{
    conn->session = s;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found = NULL;
    const int rc = getaddrinfo(s->host, s->port, &hints, &found);
    if (rc != 0)
        return fail(EXIT_UNREACHABLE, "cannot resolve %s: %s", s->host, gai_strerror(rc));
    int saved_errno = ECONNREFUSED;
    conn->fd = -1;
    for (struct addrinfo *ai = found; ai && conn->fd < 0; ai = ai->ai_next) {
        const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            saved_errno = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, wait_ms(conn)) == 1) {
                int error = 0;
                socklen_t length = sizeof error;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
                errno = error;
            } else {
                errno = ETIMEDOUT;
            }
        } else {
            errno = 0;
        }
        if (errno == 0) {
            conn->fd = fd;
        } else {
            saved_errno = errno;
            close(fd);
        }
    }
    freeaddrinfo(found);
    if (conn->fd < 0)
        return fail(EXIT_UNREACHABLE, "cannot connect to %s:%s (job %s): %s%s%s", s->host, s->port, s->job,
                    strerror(saved_errno),
                    saved_errno == ECONNREFUSED ? " — the job has ended? stale session file " : "",
                    saved_errno == ECONNREFUSED ? s->path : "");
    const int one = 1;
    setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return EXIT_OK;
}

static bool send_all(connection *conn, const void *bytes, size_t length)
{
    const char *p = bytes;
    while (length) {
        const ssize_t n = send(conn->fd, p, length, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            length -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = conn->fd, .events = POLLOUT};
            if (poll(&pfd, 1, wait_ms(conn)) == 1)
                continue;
        }
        return false;
    }
    return true;
}

static bool send_frame(connection *conn, otfx_frame_kind kind, uint32_t request, const char *payload,
                       size_t length)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, kind, request, (uint32_t)length);
    return send_all(conn, header, sizeof header) && send_all(conn, payload, length);
}

typedef enum { READ_OK, READ_CLOSED, READ_TIMEOUT, READ_BAD } read_status;

static read_status read_exactly(connection *conn, void *out, size_t length)
{
    char *p = out;
    while (length) {
        const ssize_t n = recv(conn->fd, p, length, 0);
        if (n > 0) {
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
        struct pollfd pfd = {.fd = conn->fd, .events = POLLIN};
        const int ready = poll(&pfd, 1, wait_ms(conn));
        if (ready == 0)
            return READ_TIMEOUT;
        if (ready < 0 && errno != EINTR)
            return READ_CLOSED;
    }
    return READ_OK;
}

/* One frame from the server; the payload (NUL-terminated) is the caller's to free. */
static read_status read_frame(connection *conn, otfx_frame_header *header, char **payload)
{
    unsigned char bytes[OTFX_FRAME_HEADER_BYTES];
    *payload = NULL;
    read_status status = read_exactly(conn, bytes, sizeof bytes);
    if (status != READ_OK)
        return status;
    if (otfx_frame_parse_header(bytes, sizeof bytes, OTFX_PROTOCOL_MAX_REPLY, header) != OTFX_FRAME_OK)
        return READ_BAD;
    *payload = malloc((size_t)header->length + 1);
    if (!*payload)
        return READ_BAD;
    status = read_exactly(conn, *payload, header->length);
    (*payload)[header->length] = '\0';
    if (status != READ_OK) {
        free(*payload);
        *payload = NULL;
    }
    return status;
}

static int read_failure(const connection *conn, read_status status, const char *waiting_for)
{
    const session *s = conn->session;
    switch (status) {
    case READ_CLOSED:
        return fail(EXIT_UNREACHABLE,
                    "the job (%s:%s, job %s) closed the connection while otfxctl waited for %s", s->host,
                    s->port, s->job, waiting_for);
    case READ_TIMEOUT:
        return fail(EXIT_UNREACHABLE, "the job (%s:%s, job %s) did not send %s in time (see --timeout)",
                    s->host, s->port, s->job, waiting_for);
    default:
        return fail(EXIT_UNREACHABLE, "the job (%s:%s) sent a malformed frame: is that an otfx session?",
                    s->host, s->port);
    }
}

/* The "error code=… message=…" line of an ERROR frame. */
static void error_fields(const char *payload, char *code, size_t code_size, char *message,
                         size_t message_size)
{
    snprintf(code, code_size, "?");
    snprintf(message, message_size, "%s", payload);
    message[strcspn(message, "\n")] = '\0';
    otfx_kv_line kv;
    if (otfx_kv_parse(payload, strcspn(payload, "\n"), &kv)) {
        copy_value(&kv, "code", code, code_size);
        copy_value(&kv, "message", message, message_size);
        otfx_kv_line_free(&kv);
    }
}

static int hello(connection *conn)
{
    otfx_text text = {0};
    otfx_kv_begin(&text, "hello");
    otfx_kv_str(&text, "token", conn->session->token);
    otfx_kv_str(&text, "client", "otfxctl");
    otfx_kv_end(&text);
    const bool sent = !text.failed && send_frame(conn, OTFX_FRAME_HELLO, 0, text.data, text.length);
    otfx_text_free(&text);
    if (!sent)
        return fail(EXIT_UNREACHABLE, "cannot send to %s:%s: %s", conn->session->host, conn->session->port,
                    strerror(errno));
    otfx_frame_header header;
    char *payload;
    const read_status status = read_frame(conn, &header, &payload);
    if (status != READ_OK)
        return read_failure(conn, status, "the welcome");
    int rc = EXIT_OK;
    if (header.kind == OTFX_FRAME_ERROR) {
        char code[64], message[512];
        error_fields(payload, code, sizeof code, message, sizeof message);
        if (strcmp(code, OTFX_ERR_CODE_AUTH) == 0)
            rc =
                fail(EXIT_REFUSED_TOKEN, "the job refused the token of %s: %s", conn->session->path, message);
        else
            rc = fail(EXIT_UNREACHABLE, "the job refused the connection (%s): %s", code, message);
    } else if (header.kind != OTFX_FRAME_WELCOME) {
        rc = fail(EXIT_UNREACHABLE, "the job answered the hello with frame kind %u", header.kind);
    }
    free(payload);
    return rc;
}

/* ---- output ------------------------------------------------------------------------------------- */

static bool is_json_number(const char *s)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void print_json_line(const otfx_kv_line *kv)
{
    fputs("{\"record\":", stdout);
    json_string(stdout, kv->type);
    for (size_t i = 0; i < kv->count; i++) {
        fputc(',', stdout);
        json_string(stdout, kv->fields[i].key);
        fputc(':', stdout);
        if (is_json_number(kv->fields[i].value))
            fputs(kv->fields[i].value, stdout);
        else
            json_string(stdout, kv->fields[i].value);
    }
    fputs("}\n", stdout);
}

static bool ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A value for people: durations in ns, fractions and byte counts made readable. */
static void humanize(const char *key, const char *value, char *out, size_t size)
{
    char *end;
    errno = 0;
    const double number = strtod(value, &end);
    const bool numeric = *value && *end == '\0' && errno == 0 && is_json_number(value);
    if (numeric && (ends_with(key, "_ns") || strcmp(key, "duration") == 0)) {
        const double abs = number < 0 ? -number : number;
        if (abs >= 1e9)
            snprintf(out, size, "%.3fs", number / 1e9);
        else if (abs >= 1e6)
            snprintf(out, size, "%.3fms", number / 1e6);
        else if (abs >= 1e3)
            snprintf(out, size, "%.3fus", number / 1e3);
        else
            snprintf(out, size, "%sns", value);
    } else if (numeric &&
               (strcmp(key, "fill") == 0 || strcmp(key, "share") == 0 || ends_with(key, "_fraction"))) {
        snprintf(out, size, "%.1f%%", number * 100.0);
    } else if (numeric &&
               (ends_with(key, "_bytes") || strncmp(key, "buffer_", 7) == 0 || strcmp(key, "bytes") == 0) &&
               number >= 1024) {
        if (number >= 1024.0 * 1024 * 1024)
            snprintf(out, size, "%.1fGiB", number / (1024.0 * 1024 * 1024));
        else if (number >= 1024.0 * 1024)
            snprintf(out, size, "%.1fMiB", number / (1024.0 * 1024));
        else
            snprintf(out, size, "%.1fKiB", number / 1024.0);
    } else if (!*value) {
        snprintf(out, size, "-");
    } else {
        /* control characters would wreck the table: shown escaped */
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)value; *p && n + 5 < size; p++) {
            if (*p >= 0x20 && *p != 0x7f)
                out[n++] = (char)*p;
            else if (*p == '\t' || *p == '\n')
                n += (size_t)snprintf(out + n, size - n, "\\%c", *p == '\t' ? 't' : 'n');
            else
                n += (size_t)snprintf(out + n, size - n, "\\x%02x", *p);
        }
        out[n] = '\0';
    }
}

enum { TABLE_MAX_WIDTH = 160, BLOCK_WRAP = 110 };

typedef struct table {
    char type[32];
    size_t rows, columns;
    char keys[OTFX_KV_MAX_FIELDS * 2][32];
    char ***cells; /* [row][column], NULL: empty */
    size_t row_capacity;
} table;

static size_t table_column(table *t, const char *key)
{
    for (size_t c = 0; c < t->columns; c++)
        if (strcmp(t->keys[c], key) == 0)
            return c;
    if (t->columns == sizeof t->keys / sizeof t->keys[0])
        return SIZE_MAX;
    snprintf(t->keys[t->columns], sizeof t->keys[0], "%s", key);
    return t->columns++;
}

static void table_add(table *t, const otfx_kv_line *kv)
{
    if (t->rows == t->row_capacity) {
        const size_t capacity = t->row_capacity ? 2 * t->row_capacity : 16;
        char ***cells = realloc(t->cells, capacity * sizeof *cells);
        if (!cells)
            return;
        t->cells = cells;
        t->row_capacity = capacity;
    }
    char **row = calloc(sizeof t->keys / sizeof t->keys[0], sizeof *row);
    if (!row)
        return;
    for (size_t i = 0; i < kv->count; i++) {
        const size_t c = table_column(t, kv->fields[i].key);
        if (c == SIZE_MAX || row[c])
            continue;
        char value[256];
        humanize(kv->fields[i].key, kv->fields[i].value, value, sizeof value);
        row[c] = strdup(value);
    }
    t->cells[t->rows++] = row;
}

static size_t display_width(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80; /* UTF-8 continuation bytes take no column */
    return n;
}

/* "12", "-3", "1.5", "25.0%", "3.000ms", "16.0MiB": starts like a number */
static bool looks_numeric(const char *cell)
{
    if (cell[0] == '-' && cell[1] == '\0')
        return true; /* the empty cell */
    const char *p = cell[0] == '-' ? cell + 1 : cell;
    return *p >= '0' && *p <= '9';
}

static void table_flush(table *t, bool *first_output)
{
    if (t->rows == 0)
        return;
    if (!*first_output)
        fputc('\n', stdout);
    *first_output = false;
    size_t width[sizeof t->keys / sizeof t->keys[0]], total = 0;
    for (size_t c = 0; c < t->columns; c++) {
        width[c] = display_width(t->keys[c]);
        for (size_t r = 0; r < t->rows; r++)
            if (t->cells[r][c] && display_width(t->cells[r][c]) > width[c])
                width[c] = display_width(t->cells[r][c]);
        total += width[c] + 2;
    }
    if (t->rows == 1 || total > TABLE_MAX_WIDTH) {
        /* one record, or too wide for a table: "type  key=value  key=value", wrapped */
        for (size_t r = 0; r < t->rows; r++) {
            size_t column = display_width(t->type);
            fputs(t->type, stdout);
            for (size_t c = 0; c < t->columns; c++) {
                if (!t->cells[r][c])
                    continue;
                const size_t field = display_width(t->keys[c]) + 1 + display_width(t->cells[r][c]);
                if (column > 4 && column + 2 + field > BLOCK_WRAP) {
                    fputs("\n   ", stdout);
                    column = 3;
                }
                printf("  %s=%s", t->keys[c], t->cells[r][c]);
                column += 2 + field;
            }
            fputc('\n', stdout);
        }
    } else {
        /* a column of numbers is right-aligned, header included */
        bool numeric[sizeof t->keys / sizeof t->keys[0]];
        for (size_t c = 0; c < t->columns; c++) {
            numeric[c] = true;
            for (size_t r = 0; r < t->rows && numeric[c]; r++)
                numeric[c] = !t->cells[r][c] || looks_numeric(t->cells[r][c]);
        }
        printf("%s (%zu)\n", t->type, t->rows);
        for (size_t r = 0; r <= t->rows; r++) {
            for (size_t c = 0; c < t->columns; c++) {
                const char *cell = r == 0 ? t->keys[c] : t->cells[r - 1][c] ? t->cells[r - 1][c] : "-";
                const int pad = (int)(width[c] - display_width(cell));
                if (numeric[c])
                    printf("  %*s%s", pad, "", cell);
                else if (c + 1 < t->columns)
                    printf("  %s%*s", cell, pad, "");
                else
                    printf("  %s", cell); /* no trailing blanks */
            }
            fputc('\n', stdout);
        }
    }
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t c = 0; c < sizeof t->keys / sizeof t->keys[0]; c++)
            free(t->cells[r][c]);
        free(t->cells[r]);
    }
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* Prints a payload of record lines: JSON lines, or a table per run of lines of one type. */
static void print_payload(const char *payload, size_t length, bool json)
{
    table t;
    memset(&t, 0, sizeof t);
    bool first_output = true;
    size_t offset = 0, line_length;
    const char *line;
    while (otfx_kv_next_line(payload, length, &offset, &line, &line_length)) {
        if (line_length == 0)
            continue;
        otfx_kv_line kv;
        if (!otfx_kv_parse(line, line_length, &kv)) {
            fprintf(stderr, "otfxctl: a malformed line in the answer: %.*s\n",
                    (int)(line_length > 200 ? 200 : line_length), line);
            continue;
        }
        if (json) {
            print_json_line(&kv);
        } else {
            if (t.rows && strcmp(t.type, kv.type) != 0)
                table_flush(&t, &first_output);
            snprintf(t.type, sizeof t.type, "%s", kv.type);
            table_add(&t, &kv);
        }
        otfx_kv_line_free(&kv);
    }
    table_flush(&t, &first_output);
    fflush(stdout);
}

/* An ERROR frame's lines after its "error" line (the places' lines, a summary): every failed place's
 * reason on stderr, then the lines as a reply's, so plain output says as much as --json. */
static void print_failure_details(const char *payload, size_t length)
{
    const char *rest = memchr(payload, '\n', length);
    if (!rest)
        return;
    rest++;
    const size_t rest_length = length - (size_t)(rest - payload);
    size_t offset = 0, line_length;
    const char *line;
    while (otfx_kv_next_line(rest, rest_length, &offset, &line, &line_length)) {
        otfx_kv_line kv;
        if (line_length == 0 || !otfx_kv_parse(line, line_length, &kv))
            continue;
        const char *why = otfx_kv_get(&kv, "error"), *ok = otfx_kv_get(&kv, "ok");
        if (why && (!ok || strcmp(ok, "0") == 0)) {
            const char *index = otfx_kv_get(&kv, "index");
            fprintf(stderr, "otfxctl:   %s %s: ", kv.type, index ? index : "?");
            for (const unsigned char *p = (const unsigned char *)why; *p; p++)
                fputc(*p >= 0x20 && *p != 0x7f ? *p : '?', stderr);
            fputc('\n', stderr);
        }
        otfx_kv_line_free(&kv);
    }
    if (rest_length)
        print_payload(rest, rest_length, false);
}

/* ---- requests ----------------------------------------------------------------------------------- */

typedef struct request_result {
    int exit_code;
    bool job_ended;
} request_result;

/* Sends `line` as request `id` and prints what comes back until the REPLY or ERROR. */
static request_result run_request(connection *conn, uint32_t id, const char *line, const options *opts,
                                  bool print_partial, otfx_text *capture)
{
    request_result result = {EXIT_OK, false};
    conn->deadline_ms = conn->timeout_ms < 0 ? 0 : now_ms() + (uint64_t)conn->timeout_ms;
    if (!send_frame(conn, OTFX_FRAME_REQUEST, id, line, strlen(line))) {
        result.exit_code = fail(EXIT_UNREACHABLE, "cannot send to %s:%s: %s", conn->session->host,
                                conn->session->port, strerror(errno));
        return result;
    }
    for (;;) {
        otfx_frame_header header;
        char *payload;
        const read_status status = read_frame(conn, &header, &payload);
        if (status != READ_OK) {
            result.exit_code = read_failure(conn, status, "an answer");
            return result;
        }
        if (header.kind == OTFX_FRAME_NOTICE) {
            if (strstr(payload, "event=job-ended"))
                result.job_ended = true;
            if (opts->json)
                print_payload(payload, header.length, true);
            else
                fprintf(stderr, "otfxctl: %.*s\n", (int)strcspn(payload, "\n"), payload);
        } else if (header.request != id) {
            /* not ours (an answer to a request given up on): ignore */
        } else if (header.kind == OTFX_FRAME_PARTIAL) {
            if (print_partial) {
                print_payload(payload, header.length, opts->json);
                if (!opts->json)
                    fputc('\n', stdout);
            }
        } else if (header.kind == OTFX_FRAME_REPLY) {
            if (capture)
                otfx_text_append(capture, payload, header.length);
            else
                print_payload(payload, header.length, opts->json);
            free(payload);
            return result;
        } else if (header.kind == OTFX_FRAME_ERROR) {
            char code[64], message[1024];
            error_fields(payload, code, sizeof code, message, sizeof message);
            if (opts->json)
                print_payload(payload, header.length, true);
            if (strcmp(code, OTFX_ERR_CODE_JOB_ENDED) == 0) {
                result.job_ended = true;
                result.exit_code = fail(EXIT_UNREACHABLE, "the job ended before it answered");
            } else {
                result.exit_code = fail(EXIT_SERVER_ERROR, "%s (%s)", message, code);
                if (!opts->json)
                    print_failure_details(payload, header.length);
            }
            free(payload);
            return result;
        }
        free(payload);
    }
}

static bool parse_seconds(const char *text, double *out)
{
    char *end;
    errno = 0;
    const double value = strtod(text, &end);
    if (!*text || *end || errno || !(value >= 0) || value > 1e7)
        return false;
    *out = value;
    return true;
}

/* The command words as one line: each word percent-encoded, so a path with blanks stays one word. */
static void join_words(char **words, int count, otfx_text *out)
{
    for (int i = 0; i < count; i++) {
        if (i)
            otfx_text_append(out, " ", 1);
        /* "--opt=value": the '=' must stay raw */
        const char *equals = strncmp(words[i], "--", 2) == 0 ? strchr(words[i], '=') : NULL;
        if (equals) {
            otfx_text_append(out, words[i], (size_t)(equals - words[i]) + 1);
            otfx_text_append_encoded(out, equals + 1);
        } else {
            otfx_text_append_encoded(out, words[i]);
        }
    }
}

/* The status reply as watch shows it: one line of the job's state, then per place the figures that
 * move (all fields: otfxctl status). */
static void print_watch(const char *payload, size_t length)
{
    static const char *const place_keys[] = {
        "index",    "ranks",      "events_per_s",   "buffer_used",    "buffer_budget", "fill",
        "strategy", "reductions", "events_reduced", "dropped_events", "recording",     "app_state"};
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

static int watch(connection *conn, const options *opts, double interval_s, uint64_t count)
{
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
            printf("otfx job %s (%s:%s) at %s\n\n", conn->session->job, conn->session->host,
                   conn->session->port, when);
        }
        const request_result result =
            run_request(conn, (uint32_t)(round % 0xfffffffeu) + 1, "status", opts, false, &reply);
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
        const uint64_t elapsed = now_ms() - started;
        const uint64_t interval_ms = (uint64_t)(interval_s * 1000.0);
        if (elapsed < interval_ms) {
            /* sleep, but notice a job that ends meanwhile */
            struct pollfd pfd = {.fd = conn->fd, .events = POLLIN};
            const uint64_t pause_ms = interval_ms - elapsed;
            if (poll(&pfd, 1, pause_ms > INT_MAX ? INT_MAX : (int)pause_ms) == 1) {
                otfx_frame_header header;
                char *payload;
                conn->deadline_ms = now_ms() + 1000;
                const read_status status = read_frame(conn, &header, &payload);
                if (status != READ_OK)
                    return read_failure(conn, status, "the next status");
                const bool ended = header.kind == OTFX_FRAME_NOTICE && strstr(payload, "event=job-ended");
                free(payload);
                if (ended) {
                    fprintf(stderr, "otfxctl: the job ended\n");
                    return EXIT_OK;
                }
            }
        }
    }
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    options opts = {.timeout_s = 30};
    int i = 1;
    for (; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            opts.json = true;
        } else if (strcmp(arg, "--partial") == 0) {
            opts.partial = true;
        } else if (strcmp(arg, "--session") == 0 || strcmp(arg, "--connect") == 0 ||
                   strcmp(arg, "--token-file") == 0 || strcmp(arg, "--timeout") == 0) {
            if (!value)
                return fail(EXIT_BAD_ARGUMENT, "%s needs a value (see otfxctl --help)", arg);
            i++;
            if (strcmp(arg, "--session") == 0)
                opts.session = value;
            else if (strcmp(arg, "--connect") == 0)
                opts.connect = value;
            else if (strcmp(arg, "--token-file") == 0)
                opts.token_file = value;
            else if (!parse_seconds(value, &opts.timeout_s))
                return fail(EXIT_BAD_ARGUMENT, "bad --timeout '%s': expected seconds", value);
        } else {
            return fail(EXIT_BAD_ARGUMENT, "unknown option %s (see otfxctl --help)", arg);
        }
    }
    if (i == argc)
        return fail(EXIT_BAD_ARGUMENT, "no command given (see otfxctl --help)");
    if (opts.session && opts.connect)
        return fail(EXIT_BAD_ARGUMENT, "--session and --connect exclude each other");

    /* the command, checked before anything is contacted */
    bool watching = strcmp(argv[i], "watch") == 0;
    double interval_s = 1.0;
    uint64_t count = 0;
    otfx_text line = {0};
    if (watching) {
        for (int w = i + 1; w < argc; w++) {
            if (w + 1 < argc && strcmp(argv[w], "--interval") == 0) {
                if (!parse_seconds(argv[++w], &interval_s) || interval_s < 0.05)
                    return fail(EXIT_BAD_ARGUMENT, "bad --interval '%s': expected seconds (at least 0.05)",
                                argv[w]);
            } else if (w + 1 < argc && strcmp(argv[w], "--count") == 0) {
                char *end;
                errno = 0;
                count = strtoull(argv[++w], &end, 10);
                if (!*argv[w] || *end || errno || argv[w][0] == '-')
                    return fail(EXIT_BAD_ARGUMENT, "bad --count '%s': expected a number", argv[w]);
            } else {
                return fail(EXIT_BAD_ARGUMENT, "watch takes --interval S and --count N, not '%s'", argv[w]);
            }
        }
    } else {
        join_words(argv + i, argc - i, &line);
        otfx_command command;
        char error[512];
        if (line.failed || !otfx_command_parse(line.data, &command, error, sizeof error)) {
            otfx_text_free(&line);
            return fail(EXIT_BAD_ARGUMENT, "%s (see otfxctl --help)", line.failed ? "out of memory" : error);
        }
        /* send the canonical form: what the job sees is exactly what was checked here */
        otfx_text_free(&line);
        otfx_command_format(&command, &line);
        if (line.failed)
            return fail(EXIT_BAD_ARGUMENT, "out of memory");
    }

    session s;
    int rc = find_session(&opts, &s);
    if (rc != EXIT_OK) {
        otfx_text_free(&line);
        return rc;
    }
    connection conn = {.fd = -1, .timeout_ms = opts.timeout_s > 0 ? (int64_t)(opts.timeout_s * 1000.0) : -1};
    conn.deadline_ms = conn.timeout_ms < 0 ? 0 : now_ms() + (uint64_t)conn.timeout_ms;
    rc = connect_to(&conn, &s);
    if (rc == EXIT_OK)
        rc = hello(&conn);
    if (rc == EXIT_OK) {
        if (watching)
            rc = watch(&conn, &opts, interval_s, count);
        else
            rc = run_request(&conn, 1, line.data, &opts, opts.partial, NULL).exit_code;
    }
    if (conn.fd >= 0)
        close(conn.fd);
    otfx_text_free(&line);
    return rc;
}

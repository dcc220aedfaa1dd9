/*
 * client_session.c — finding a job (otfx/client.h): session files, token files, ADDR:PORT. The rules
 * are docs/protocol.md section 1; tbon/python/otfx_client.py follows the same ones.
 */
#define _GNU_SOURCE
#include <otfx/client.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char session_prefix[] = "otfx-session-";
static const char session_suffix[] = ".txt";

const char *otfx_session_default_dir(void)
{
    const char *dir = getenv("OTFX_SESSION_DIR");
    return dir && *dir ? dir : ".";
}

/* Why a session file must not be trusted (NULL: it may be): it leads a client to a server and hands
 * that server the token, so it must be the user's own and private to them, as the job writes it. */
static const char *untrusted(const struct stat *st, char *why, size_t size)
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

bool otfx_session_file_trusted(const char *path, char *why, size_t why_size)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, why_size, "%s", strerror(errno));
        return false;
    }
    return untrusted(&st, why, why_size) == NULL;
}

static bool is_session_file_name(const char *name)
{
    const size_t n = strlen(name), prefix = sizeof session_prefix - 1, suffix = sizeof session_suffix - 1;
    return n >= prefix + suffix && strncmp(name, session_prefix, prefix) == 0 &&
           strcmp(name + n - suffix, session_suffix) == 0;
}

bool otfx_session_find_newest(const char *dir, char *path, size_t path_size, otfx_session_skipped_fn *skipped,
                              void *user)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct timespec newest = {0, 0};
    bool found = false;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (!is_session_file_name(entry->d_name))
            continue;
        char candidate[4096];
        if ((size_t)snprintf(candidate, sizeof candidate, "%s/%s", dir, entry->d_name) >= sizeof candidate)
            continue;
        struct stat st;
        char why[160];
        if (stat(candidate, &st) != 0)
            continue; /* removed meanwhile: its job ended */
        if (untrusted(&st, why, sizeof why)) {
            if (skipped)
                skipped(user, candidate, why);
            continue;
        }
        if (!found || st.st_mtim.tv_sec > newest.tv_sec ||
            (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec)) {
            newest = st.st_mtim;
            snprintf(path, path_size, "%s", candidate);
            found = true;
        }
    }
    closedir(d);
    return found;
}

static bool is_token(const char *text)
{
    return strlen(text) == OTFX_SESSION_TOKEN_DIGITS &&
           strspn(text, "0123456789abcdef") == OTFX_SESSION_TOKEN_DIGITS;
}

static bool is_port(const char *text)
{
    const size_t n = strlen(text);
    if (n == 0 || n > 5 || strspn(text, "0123456789") != n)
        return false;
    const long port = strtol(text, NULL, 10);
    return port >= 1 && port <= 65535;
}

static bool copy_value(const otfx_kv_line *line, const char *key, char *out, size_t size)
{
    const char *value = otfx_kv_get(line, key);
    if (!value || strlen(value) >= size)
        return false;
    memcpy(out, value, strlen(value) + 1);
    return true;
}

static uint64_t number_value(const otfx_kv_line *line, const char *key)
{
    const char *value = otfx_kv_get(line, key);
    return value ? strtoull(value, NULL, 10) : 0;
}

/* Reads the first line of `path` after checking (on the open file) that it may be trusted. */
static otfx_client_status read_trusted_line(const char *path, char *line, size_t size, char *error,
                                            size_t error_size)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(error, error_size, "cannot read the session file %s: %s", path, strerror(errno));
        return OTFX_CLIENT_NO_SESSION;
    }
    struct stat st;
    char why[160] = "";
    if (fstat(fd, &st) != 0 || untrusted(&st, why, sizeof why)) {
        const int saved = errno;
        close(fd);
        snprintf(error, error_size, "not using the session file %s: %s", path,
                 why[0] ? why : strerror(saved));
        return OTFX_CLIENT_NO_SESSION;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(error, error_size, "cannot read the session file %s: %s", path, strerror(errno));
        close(fd);
        return OTFX_CLIENT_NO_SESSION;
    }
    const bool ok = fgets(line, (int)size, f) != NULL;
    fclose(f);
    if (!ok) {
        snprintf(error, error_size, "%s is not an otfx session file (empty)", path);
        return OTFX_CLIENT_NO_SESSION;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return OTFX_CLIENT_OK;
}

otfx_client_status otfx_session_read(const char *path, otfx_session *out, char *error, size_t error_size)
{
    memset(out, 0, sizeof *out);
    char line[4096];
    const otfx_client_status status = read_trusted_line(path, line, sizeof line, error, error_size);
    if (status != OTFX_CLIENT_OK)
        return status;
    otfx_kv_line kv;
    if (!otfx_kv_parse(line, strlen(line), &kv) || strcmp(kv.type, "session") != 0) {
        if (kv.storage)
            otfx_kv_line_free(&kv);
        snprintf(error, error_size, "%s is not an otfx session file", path);
        return OTFX_CLIENT_NO_SESSION;
    }
    const bool ok = copy_value(&kv, "address", out->address, sizeof out->address) &&
                    copy_value(&kv, "port", out->port, sizeof out->port) && is_port(out->port) &&
                    copy_value(&kv, "token", out->token, sizeof out->token) && is_token(out->token);
    if (!copy_value(&kv, "job", out->job, sizeof out->job))
        snprintf(out->job, sizeof out->job, "?");
    out->ranks = number_value(&kv, "ranks");
    out->places = number_value(&kv, "places");
    out->pid = number_value(&kv, "pid");
    out->started_ns = number_value(&kv, "started_ns");
    otfx_kv_line_free(&kv);
    if (!ok) {
        snprintf(error, error_size, "the session file %s lacks address, port or token (32 hex digits)", path);
        return OTFX_CLIENT_NO_SESSION;
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    return OTFX_CLIENT_OK;
}

otfx_client_status otfx_session_discover(const char *dir, otfx_session *out, otfx_session_skipped_fn *skipped,
                                         void *user, char *error, size_t error_size)
{
    if (!dir)
        dir = otfx_session_default_dir();
    char path[4096];
    if (!otfx_session_find_newest(dir, path, sizeof path, skipped, user)) {
        memset(out, 0, sizeof *out);
        snprintf(error, error_size,
                 "no session file (otfx-session-*.txt) in %s: is an otfx job running? (otfx-run writes it "
                 "into $OTFX_SESSION_DIR or its working directory; or use --session FILE, or --connect "
                 "ADDR:PORT --token-file FILE)",
                 strcmp(dir, ".") == 0 ? "the working directory" : dir);
        return OTFX_CLIENT_NO_SESSION;
    }
    return otfx_session_read(path, out, error, error_size);
}

bool otfx_parse_address(const char *text, char *address, size_t address_size, char *port, size_t port_size,
                        char *error, size_t error_size)
{
    const char *colon = strrchr(text, ':');
    const char *host = text;
    size_t host_length = colon ? (size_t)(colon - host) : 0;
    if (host_length >= 2 && host[0] == '[' && host[host_length - 1] == ']') {
        host++;
        host_length -= 2;
    }
    const char *digits = colon ? colon + 1 : "";
    if (!colon || host_length == 0 || host_length >= address_size || strlen(digits) == 0 ||
        strlen(digits) >= port_size || strspn(digits, "0123456789") != strlen(digits)) {
        snprintf(error, error_size, "expected ADDR:PORT");
        return false;
    }
    if (!is_port(digits)) {
        snprintf(error, error_size, "the port must be 1 to 65535");
        return false;
    }
    memcpy(address, host, host_length);
    address[host_length] = '\0';
    snprintf(port, port_size, "%s", digits);
    return true;
}

otfx_client_status otfx_session_read_token(const char *path, char *token, size_t token_size, char *error,
                                           size_t error_size)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    const bool read = f && fgets(line, (int)sizeof line, f) != NULL;
    const int saved = errno;
    if (f)
        fclose(f);
    if (!read) {
        snprintf(error, error_size, "cannot read the token file %s: %s", path,
                 f ? "it is empty" : strerror(saved));
        return OTFX_CLIENT_BAD_ARGUMENT;
    }
    line[strcspn(line, "\r\n")] = '\0';
    char found[OTFX_SESSION_TOKEN_DIGITS + 1] = "";
    otfx_kv_line kv;
    if (otfx_kv_parse(line, strlen(line), &kv)) {
        if (strcmp(kv.type, "session") != 0 || !copy_value(&kv, "token", found, sizeof found))
            found[0] = '\0';
        otfx_kv_line_free(&kv);
    } else {
        const size_t n = strcspn(line, " \t"); /* a bare token, perhaps with trailing blanks */
        if (n == OTFX_SESSION_TOKEN_DIGITS && line[n + strspn(line + n, " \t")] == '\0') {
            memcpy(found, line, n);
            found[n] = '\0';
        }
    }
    if (!is_token(found) || strlen(found) >= token_size) {
        snprintf(error, error_size, "the token file %s holds no token", path);
        return OTFX_CLIENT_BAD_ARGUMENT;
    }
    memcpy(token, found, strlen(found) + 1);
    return OTFX_CLIENT_OK;
}

otfx_client_status otfx_session_from_address(const char *address_port, const char *token_file,
                                             otfx_session *out, char *error, size_t error_size)
{
    memset(out, 0, sizeof *out);
    char why[128];
    if (!otfx_parse_address(address_port, out->address, sizeof out->address, out->port, sizeof out->port, why,
                            sizeof why)) {
        snprintf(error, error_size, "bad --connect '%s': %s", address_port, why);
        return OTFX_CLIENT_BAD_ARGUMENT;
    }
    const otfx_client_status status =
        otfx_session_read_token(token_file, out->token, sizeof out->token, error, error_size);
    if (status != OTFX_CLIENT_OK)
        return status;
    snprintf(out->job, sizeof out->job, "?");
    snprintf(out->path, sizeof out->path, "%s", token_file);
    return OTFX_CLIENT_OK;
}

/*
 * tree_client.c — a minimal client of the root's server for the tree tests (otfx/protocol.h only).
 *
 *   tree_client --session-dir DIR [--wait SECONDS] STEP...
 *
 * Waits for the newest session file in DIR, connects with its token and runs the steps in order:
 *   "COMMAND LINE"     sends it as a request and prints every frame up to its REPLY or ERROR
 *   sleep:MS           waits
 *   notice:EVENT       waits (up to --wait seconds) for `notice event=EVENT`
 *   parallel:A;B;…     sends every command line at once (several requests in flight), then prints
 *                      frames until each got its REPLY or ERROR
 * Every frame is printed as "tree-client: KIND request=N" followed by its payload lines, each prefixed
 * with "tree-client:   ". Exits 0 when every step was answered (an ERROR frame is an answer too: the
 * test decides), 1 when the session or the connection failed or a step timed out.
 */
#define _POSIX_C_SOURCE 200809L
#include <otfx/protocol.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The newest otfx-session-*.txt in dir, read whole into `line`. */
static bool read_session(const char *dir, char *line, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    char newest[4096] = "";
    time_t newest_time = 0;
    struct dirent *entry;
    while ((entry = readdir(d))) {
        if (strncmp(entry->d_name, "otfx-session-", 13) != 0 || !strstr(entry->d_name, ".txt"))
            continue;
        char path[4096];
        struct stat info;
        snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
        if (stat(path, &info) == 0 && (!newest[0] || info.st_mtime >= newest_time)) {
            snprintf(newest, sizeof(newest), "%s", path);
            newest_time = info.st_mtime;
        }
    }
    closedir(d);
    if (!newest[0])
        return false;
    FILE *file = fopen(newest, "r");
    if (!file)
        return false;
    const bool ok = fgets(line, (int)size, file) != NULL;
    fclose(file);
    if (ok)
        line[strcspn(line, "\n")] = '\0';
    return ok;
}

static bool send_all(int fd, const void *data, size_t length)
{
    const char *bytes = data;
    while (length) {
        const ssize_t n = send(fd, bytes, length, MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        bytes += n;
        length -= (size_t)n;
    }
    return true;
}

static bool send_frame(int fd, otfx_frame_kind kind, uint32_t request, const char *payload)
{
    unsigned char header[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(header, kind, request, (uint32_t)strlen(payload));
    return send_all(fd, header, sizeof(header)) && send_all(fd, payload, strlen(payload));
}

/* Reads exactly `length` bytes before `deadline`. */
static bool receive_all(int fd, void *data, size_t length, double deadline)
{
    char *bytes = data;
    while (length) {
        const double left = deadline - now_s();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            return false;
        const ssize_t n = recv(fd, bytes, length, 0);
        if (n <= 0)
            return false;
        bytes += n;
        length -= (size_t)n;
    }
    return true;
}

static const char *kind_name(uint16_t kind)
{
    static const char *names[] = {"?", "HELLO", "WELCOME", "REQUEST", "PARTIAL", "REPLY", "ERROR", "NOTICE"};
    return kind <= 7 ? names[kind] : "?";
}

/* Receives one frame and prints it; its payload (NUL-terminated, malloc'd) into *payload. */
static bool receive_frame(int fd, double deadline, otfx_frame_header *header, char **payload)
{
    unsigned char bytes[OTFX_FRAME_HEADER_BYTES];
    if (!receive_all(fd, bytes, sizeof(bytes), deadline))
        return false;
    if (otfx_frame_parse_header(bytes, sizeof(bytes), OTFX_PROTOCOL_MAX_REPLY, header) != OTFX_FRAME_OK) {
        printf("tree-client: malformed frame header from the server\n");
        return false;
    }
    *payload = malloc((size_t)header->length + 1);
    if (!*payload || !receive_all(fd, *payload, header->length, deadline + 30)) {
        free(*payload);
        return false;
    }
    (*payload)[header->length] = '\0';
    printf("tree-client: %s request=%u\n", kind_name(header->kind), header->request);
    for (char *line = *payload; *line;) {
        const size_t length = strcspn(line, "\n");
        printf("tree-client:   %.*s\n", (int)length, line);
        line += length + (line[length] == '\n');
    }
    fflush(stdout);
    return true;
}

int main(int argc, char **argv)
{
    const char *dir = ".";
    double wait_s = 60;
    int first_step = 1;
    while (first_step + 1 < argc && strncmp(argv[first_step], "--", 2) == 0) {
        if (strcmp(argv[first_step], "--session-dir") == 0)
            dir = argv[first_step + 1];
        else if (strcmp(argv[first_step], "--wait") == 0)
            wait_s = atof(argv[first_step + 1]);
        first_step += 2;
    }
    char session[2048] = "";
    const double give_up = now_s() + wait_s;
    while (!read_session(dir, session, sizeof(session))) {
        if (now_s() > give_up) {
            printf("tree-client: no session file in %s\n", dir);
            return 1;
        }
        sleep_ms(50);
    }
    otfx_kv_line line;
    if (!otfx_kv_parse(session, strlen(session), &line) || !otfx_kv_get(&line, "port") ||
        !otfx_kv_get(&line, "token")) {
        printf("tree-client: malformed session file: %s\n", session);
        return 1;
    }
    struct sockaddr_in address = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)atoi(otfx_kv_get(&line, "port")))};
    inet_pton(AF_INET, otfx_kv_get(&line, "address") ? otfx_kv_get(&line, "address") : "127.0.0.1",
              &address.sin_addr);
    char hello[256];
    snprintf(hello, sizeof(hello), "hello token=%s client=tree-client", otfx_kv_get(&line, "token"));
    otfx_kv_line_free(&line);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        printf("tree-client: cannot connect: %s\n", strerror(errno));
        return 1;
    }
    otfx_frame_header header;
    char *payload = NULL;
    if (!send_frame(fd, OTFX_FRAME_HELLO, 0, hello) ||
        !receive_frame(fd, now_s() + wait_s, &header, &payload) || header.kind != OTFX_FRAME_WELCOME) {
        printf("tree-client: no welcome from the server\n");
        return 1;
    }
    free(payload);
    int status = 0;
    for (int step = first_step; step < argc && status == 0; step++) {
        const char *text = argv[step];
        printf("tree-client: step %s\n", text);
        fflush(stdout);
        if (strncmp(text, "sleep:", 6) == 0) {
            sleep_ms(atol(text + 6));
            continue;
        }
        if (strncmp(text, "touch:", 6) == 0) { /* tells the program to end (its --until-file) */
            FILE *file = fopen(text + 6, "w");
            if (!file || fclose(file) != 0) {
                printf("tree-client: cannot create %s\n", text + 6);
                status = 1;
            }
            continue;
        }
        const bool notice = strncmp(text, "notice:", 7) == 0;
        /* the requests of this step: one, or every line of a parallel step (ids step * 100 + k) */
        char lines[8][512];
        uint32_t ids[8];
        bool answered[8] = {false};
        int count = 0;
        if (strncmp(text, "parallel:", 9) == 0) {
            for (const char *part = text + 9; *part && count < 8;) {
                const size_t length = strcspn(part, ";");
                snprintf(lines[count], sizeof(lines[count]), "%.*s", (int)length, part);
                ids[count] = (uint32_t)(step * 100 + count);
                count++;
                part += length + (part[length] == ';');
            }
        } else if (!notice) {
            snprintf(lines[0], sizeof(lines[0]), "%s", text);
            ids[0] = (uint32_t)step;
            count = 1;
        }
        for (int k = 0; k < count; k++) {
            if (!send_frame(fd, OTFX_FRAME_REQUEST, ids[k], lines[k])) {
                printf("tree-client: connection lost\n");
                status = 1;
            }
        }
        const double deadline = now_s() + wait_s;
        int open = count;
        while (status == 0) {
            if (!receive_frame(fd, deadline, &header, &payload)) {
                printf("tree-client: step timed out or connection closed: %s\n", text);
                status = 1;
                break;
            }
            bool finished = false;
            if (notice) {
                char wanted[160];
                snprintf(wanted, sizeof(wanted), "event=%s", text + 7);
                finished = header.kind == OTFX_FRAME_NOTICE && strstr(payload, wanted);
            } else if (header.kind == OTFX_FRAME_REPLY || header.kind == OTFX_FRAME_ERROR) {
                for (int k = 0; k < count; k++) {
                    if (ids[k] == header.request && !answered[k]) {
                        answered[k] = true;
                        open--;
                    }
                }
                finished = open == 0;
            }
            free(payload);
            if (finished)
                break;
        }
    }
    close(fd);
    printf("tree-client: %s\n", status ? "failed" : "all steps answered");
    return status;
}

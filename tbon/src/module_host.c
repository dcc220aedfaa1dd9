/*
 * module_host.c — loaded modules' code runs in short-lived helper processes (see otfx/analysis.h,
 * "Loaded modules run out of process").
 *
 * A call forks the calling process. The child sees a copy-on-write image of the parent's memory (the
 * traces, the definitions, the partial results to merge), so nothing is copied up front. It resets the
 * signals a crash raises to their defaults (the parent's handlers, e.g. MPI's, must not run in it),
 * turns off core files (a core of a place is as large as its traces), closes every descriptor but
 * stdin/stdout/stderr and its end of the pipe, limits its address space, dlopen()s the module, checks
 * it, runs the call and writes the outcome into the pipe. It never calls MPI, never returns into the
 * parent's code and ends with _exit(). glibc makes malloc and dlopen usable in the child of a
 * multithreaded process (it takes their locks around fork); a lock some other thread of the parent held
 * at the fork (stdio, say) can still make the child wait forever, which the time limit ends like any
 * hang. The parent polls the pipe without blocking, kills the child at the time limit and reaps it.
 *
 * The outcome in the pipe: u8 ok, u8 too_large, u32 length + error text, u32 count + the indexes of
 * merged parts that were refused, u32 length + their reasons, u64 length + data. Everything a helper
 * writes is bounded by the result limit (plus room for texts): more is refused as too large.
 */
#define _GNU_SOURCE
#include <otfx/analysis.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { CALL_PROBE, CALL_LEAF, CALL_MERGE };
enum { TEXT_ROOM = 64 * 1024 }; /* error texts beside the result's bytes */
enum { HELPER_NICE = 10 };

struct otfx_module_call {
    pid_t pid;
    int fd;
    int kind;
    char name[64];
    uint64_t deadline_ns; /* 0: none */
    uint64_t time_limit_ns;
    size_t read_limit;
    otfx_blob output; /* what the helper wrote so far */
    bool eof, reaped, too_much;
    int wait_status;
};

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* ---- the child ---------------------------------------------------------------------------------- */

static void child_write(int fd, const void *bytes, size_t length)
{
    const char *p = bytes;
    while (length) {
        const ssize_t n = write(fd, p, length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(3); /* the parent is gone or gave up */
        p += n;
        length -= (size_t)n;
    }
}

static void child_u32(int fd, uint32_t value)
{
    unsigned char b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(value >> (8 * i));
    child_write(fd, b, 4);
}

static void child_u64(int fd, uint64_t value)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(value >> (8 * i));
    child_write(fd, b, 8);
}

/* Writes the outcome and ends the helper. */
static _Noreturn void child_finish(int fd, bool ok, bool too_large, const char *error,
                                   const uint32_t *refused, uint32_t refused_count, const char *reasons,
                                   size_t reasons_length, const void *data, size_t length)
{
    const unsigned char flags[2] = {ok, too_large};
    child_write(fd, flags, 2);
    const size_t error_length = strnlen(error, TEXT_ROOM / 4);
    child_u32(fd, (uint32_t)error_length);
    child_write(fd, error, error_length);
    child_u32(fd, refused_count);
    for (uint32_t i = 0; i < refused_count; i++)
        child_u32(fd, refused[i]);
    if (reasons_length > TEXT_ROOM / 2)
        reasons_length = TEXT_ROOM / 2;
    child_u32(fd, (uint32_t)reasons_length);
    child_write(fd, reasons, reasons_length);
    child_u64(fd, length);
    child_write(fd, data, length);
    _exit(0);
}

static _Noreturn void child_fail(int fd, const char *format, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void child_fail(int fd, const char *format, ...)
{
    char error[512];
    va_list args;
    va_start(args, format);
    vsnprintf(error, sizeof error, format, args);
    va_end(args);
    child_finish(fd, false, false, error, NULL, 0, "", 0, "", 0);
}

/* The child's own set-up: default crash signals, no core, no descriptors it does not need, a bound on
 * its address space. */
static void child_setup(int fd, size_t address_space)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP, SIGPIPE, SIGXCPU};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (fd != 3) {
        if (dup2(fd, 3) < 0)
            _exit(4);
        fd = 3;
    }
    syscall(SYS_close_range, 4u, ~0u, 0u);
    if (address_space) {
        const struct rlimit space = {address_space, address_space};
        setrlimit(RLIMIT_AS, &space);
    }
    /* a module's work comes after the place's and the application's on shared cores */
    setpriority(PRIO_PROCESS, 0, HELPER_NICE);
}

/* dlopen()s the module and checks it (and that it still has the name it was loaded under). */
static const otfx_analysis_module *child_open(int fd, const char *path, const char *expected_name)
{
    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        child_fail(fd, "cannot load %s: %s", path, why ? why : "unknown error");
    }
    void *symbol = dlsym(handle, OTFX_ANALYSIS_ENTRY_SYMBOL);
    if (!symbol)
        child_fail(fd, "%s is not an otfx analysis module: it has no %s function", path,
                   OTFX_ANALYSIS_ENTRY_SYMBOL);
    otfx_analysis_entry_fn entry;
    memcpy(&entry, &symbol, sizeof entry);
    const otfx_analysis_module *module = entry();
    char why[256] = "";
    if (!module)
        child_fail(fd, "%s: %s returned no module", path, OTFX_ANALYSIS_ENTRY_SYMBOL);
    if (!otfx_analysis_validate(module, why, sizeof why))
        child_fail(fd, "%s: %s", path, why);
    if (expected_name && strcmp(module->name, expected_name) != 0)
        child_fail(fd, "%s now holds module %s, not %s", path, module->name, expected_name);
    return module;
}

/* ---- the parent --------------------------------------------------------------------------------- */

/* The process's address space now (VmSize), so that a child may take `more` beyond it. */
static size_t address_space_with(size_t more)
{
    FILE *statm = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!statm)
        return 0;
    const int got = fscanf(statm, "%lu", &pages);
    fclose(statm);
    if (got != 1)
        return 0;
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) + more;
}

typedef struct call_args {
    const char *path, *name;
    const otfx_command *query;
    const otfx_leaf_input *input;
    const otfx_blob *parts;
    const uint32_t *answered;
    size_t part_count;
    bool finish;
    uint32_t places_total;
    size_t result_limit;
} call_args;

static _Noreturn void child_main(int kind, int fd, const call_args *a)
{
    if (kind == CALL_PROBE) {
        const otfx_analysis_module *module = child_open(fd, a->path, NULL);
        otfx_blob out = {0};
        otfx_blob_append(&out, module->name, strlen(module->name) + 1);
        const char *help = module->help ? module->help : "";
        otfx_blob_append(&out, help, strnlen(help, 1024));
        child_finish(fd, !out.failed, false, out.failed ? "out of memory" : "", NULL, 0, "", 0, out.data,
                     out.length);
    }
    const otfx_analysis_module *module = child_open(fd, a->path, a->name);
    char error[512] = "";
    if (kind == CALL_LEAF) {
        otfx_blob out = {.limit = a->result_limit};
        otfx_leaf_input input = *a->input;
        const bool ok = module->leaf(a->query, &input, &out, error, sizeof error) && !out.failed;
        if (!ok && !error[0])
            snprintf(error, sizeof error, "%s",
                     out.too_large ? "the result exceeds the query memory bound"
                     : out.failed  ? "out of memory"
                                   : "the module failed");
        child_finish(fd, ok, out.too_large, error, NULL, 0, "", 0, out.data, ok ? out.length : 0);
    }
    /* merge (and finish): the parts one after another; a part the module refuses is left out */
    otfx_blob merged = {.limit = a->result_limit};
    uint32_t *refused = calloc(a->part_count + 1, sizeof *refused);
    otfx_text reasons = {0};
    uint32_t refused_count = 0, answered = 0;
    bool too_large = false;
    for (size_t i = 0; i < a->part_count; i++) {
        char why[256] = "";
        if (module->merge(a->query, &merged, a->parts[i].data, a->parts[i].length, why, sizeof why) &&
            !merged.failed && (!merged.limit || merged.length <= merged.limit)) {
            answered += a->answered[i];
            continue;
        }
        too_large = too_large || merged.too_large || (merged.limit && merged.length > merged.limit);
        if (merged.failed)
            child_fail(fd, "%s",
                       merged.too_large ? "the merged result exceeds the query memory bound"
                                        : "out of memory merging");
        if (refused)
            refused[refused_count++] = (uint32_t)i;
        otfx_text_appendf(&reasons, "%s%s", reasons.length ? "\n" : "",
                          why[0] ? why : "malformed partial result");
    }
    if (!a->finish)
        child_finish(fd, true, too_large, "", refused, refused_count, reasons.data ? reasons.data : "",
                     reasons.length, merged.data, merged.length);
    otfx_text reply = {0};
    const bool ok = module->finish(a->query, merged.data, merged.length, answered, a->places_total, &reply,
                                   error, sizeof error) &&
                    !reply.failed && reply.length <= OTFX_PROTOCOL_MAX_REPLY;
    if (!ok && !error[0])
        snprintf(error, sizeof error, "%s",
                 reply.length > OTFX_PROTOCOL_MAX_REPLY ? "the reply would exceed the protocol's 64 MiB"
                                                        : "the module could not finish the result");
    child_finish(fd, ok, too_large, error, refused, refused_count, reasons.data ? reasons.data : "",
                 reasons.length, reply.data, ok ? reply.length : 0);
}

static otfx_module_call *start_call(int kind, const call_args *args, const otfx_module_limits *limits,
                                    char *error, size_t error_size)
{
    otfx_module_call *call = calloc(1, sizeof *call);
    if (!call) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        snprintf(error, error_size, "cannot create a pipe for the module's helper process: %s",
                 strerror(errno));
        free(call);
        return NULL;
    }
    /* The child may take the result's bound twice over (what it builds and what it copies) and some
     * working memory beyond what the process maps now. */
    const size_t space = address_space_with(4 * limits->result_limit + ((size_t)512 << 20));
    fflush(NULL); /* nothing buffered is written twice */
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(error, error_size, "cannot start the module's helper process: %s", strerror(errno));
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        free(call);
        return NULL;
    }
    if (pid == 0) {
        close(pipe_fds[0]);
        child_setup(pipe_fds[1], space);
        child_main(kind, 3, args);
    }
    close(pipe_fds[1]);
    fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
    call->pid = pid;
    call->fd = pipe_fds[0];
    call->kind = kind;
    snprintf(call->name, sizeof call->name, "%s", args->name ? args->name : "");
    call->time_limit_ns = limits->time_limit_ns;
    call->deadline_ns = limits->time_limit_ns ? monotonic_ns() + limits->time_limit_ns : 0;
    call->read_limit = limits->result_limit + TEXT_ROOM + 64;
    call->output.limit = call->read_limit;
    return call;
}

otfx_module_call *otfx_module_call_probe(const char *path, const otfx_module_limits *limits, char *error,
                                         size_t error_size)
{
    const call_args args = {.path = path};
    otfx_module_call *call = start_call(CALL_PROBE, &args, limits, error, error_size);
    if (call) { /* no name yet: the errors name the file */
        const char *slash = strrchr(path, '/');
        snprintf(call->name, sizeof call->name, "%s", slash ? slash + 1 : path);
    }
    return call;
}

otfx_module_call *otfx_module_call_leaf(const char *path, const char *name, const otfx_command *query,
                                        const otfx_leaf_input *input, const otfx_module_limits *limits,
                                        char *error, size_t error_size)
{
    const call_args args = {
        .path = path, .name = name, .query = query, .input = input, .result_limit = limits->result_limit};
    return start_call(CALL_LEAF, &args, limits, error, error_size);
}

otfx_module_call *otfx_module_call_merge(const char *path, const char *name, const otfx_command *query,
                                         const otfx_blob *parts, const uint32_t *answered, size_t part_count,
                                         bool finish, uint32_t places_total, const otfx_module_limits *limits,
                                         char *error, size_t error_size)
{
    const call_args args = {.path = path,
                            .name = name,
                            .query = query,
                            .parts = parts,
                            .answered = answered,
                            .part_count = part_count,
                            .finish = finish,
                            .places_total = places_total,
                            .result_limit = limits->result_limit};
    return start_call(CALL_MERGE, &args, limits, error, error_size);
}

int otfx_module_call_fd(const otfx_module_call *call)
{
    return call->fd;
}

static void kill_and_reap(otfx_module_call *call)
{
    if (call->reaped)
        return;
    kill(call->pid, SIGKILL);
    while (waitpid(call->pid, &call->wait_status, 0) < 0 && errno == EINTR)
        continue;
    call->reaped = true;
}

bool otfx_module_call_poll(otfx_module_call *call)
{
    if (call->reaped)
        return true;
    while (!call->eof) {
        unsigned char buffer[64 * 1024];
        const ssize_t n = read(call->fd, buffer, sizeof buffer);
        if (n > 0) {
            otfx_blob_append(&call->output, buffer, (size_t)n);
            if (call->output.failed) {
                call->too_much = true;
                kill_and_reap(call);
                return true;
            }
            continue;
        }
        if (n == 0) {
            call->eof = true;
            break;
        }
        if (errno == EINTR)
            continue;
        break; /* EAGAIN: nothing more for now */
    }
    if (call->eof) {
        const pid_t got = waitpid(call->pid, &call->wait_status, WNOHANG);
        if (got == call->pid) {
            call->reaped = true;
            return true;
        }
    }
    if (call->deadline_ns && monotonic_ns() >= call->deadline_ns) {
        kill_and_reap(call);
        call->deadline_ns = UINT64_MAX; /* marks the time limit as the cause */
        return true;
    }
    return false;
}

static uint32_t read_u32(otfx_blob_reader *r)
{
    return otfx_blob_read_u32(r);
}

void otfx_module_call_take(otfx_module_call *call, otfx_module_result *out)
{
    memset(out, 0, sizeof *out);
    kill_and_reap(call); /* a call taken before it ended is cancelled */
    const char *what = call->kind == CALL_PROBE  ? "loading"
                       : call->kind == CALL_LEAF ? "its leaf"
                                                 : "merging";
    const char *name = call->name[0] ? call->name : "the module";
    if (call->deadline_ns == UINT64_MAX) {
        out->timed_out = true;
        snprintf(out->error, sizeof out->error,
                 "module %s did not answer within %.3g s (the module time limit, otfx-run --module-timeout): "
                 "its helper process was killed",
                 name, (double)call->time_limit_ns / 1e9);
    } else if (call->too_much) {
        out->too_large = true;
        snprintf(out->error, sizeof out->error,
                 "module %s: its result exceeds the query memory bound of %zu bytes", name,
                 call->read_limit - TEXT_ROOM - 64);
    } else if (WIFSIGNALED(call->wait_status)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(call->wait_status));
        out->crashed = true;
        snprintf(out->error, sizeof out->error, "module %s crashed (SIG%s) while %s", name,
                 abbrev ? abbrev : "?", what);
    } else if (!WIFEXITED(call->wait_status) || WEXITSTATUS(call->wait_status) != 0) {
        out->crashed = true;
        snprintf(out->error, sizeof out->error, "module %s's helper process exited with %d while %s", name,
                 WIFEXITED(call->wait_status) ? WEXITSTATUS(call->wait_status) : -1, what);
    } else {
        otfx_blob_reader r = otfx_blob_reader_make(call->output.data, call->output.length);
        const unsigned char *flags = otfx_blob_read_bytes(&r, 2);
        uint32_t length = read_u32(&r);
        const char *error = otfx_blob_read_bytes(&r, length);
        if (error && flags) {
            snprintf(out->error, sizeof out->error, "%.*s",
                     (int)(length < sizeof out->error ? length : sizeof out->error - 1), error);
            out->ok = flags[0] != 0;
            out->too_large = flags[1] != 0;
        }
        const uint32_t refused = read_u32(&r);
        if (!r.failed && refused <= (r.length - r.offset) / 4) {
            out->refused = calloc(refused + 1, sizeof *out->refused);
            for (uint32_t i = 0; i < refused; i++) {
                const uint32_t index = read_u32(&r);
                if (out->refused)
                    out->refused[out->refused_count++] = index;
            }
        } else {
            r.failed = true;
        }
        length = read_u32(&r);
        const char *reasons = otfx_blob_read_bytes(&r, length);
        if (reasons)
            otfx_text_append(&out->reasons, reasons, length);
        const uint64_t data_length = otfx_blob_read_u64(&r);
        const void *data = r.failed || data_length > r.length - r.offset
                               ? NULL
                               : otfx_blob_read_bytes(&r, (size_t)data_length);
        if (data)
            otfx_blob_append(&out->data, data, (size_t)data_length);
        if (!otfx_blob_reader_done(&r) || out->data.failed || out->reasons.failed) {
            otfx_module_result_free(out);
            memset(out, 0, sizeof *out);
            out->crashed = true;
            snprintf(out->error, sizeof out->error, "module %s's helper process wrote a malformed answer",
                     name);
        }
    }
    close(call->fd);
    otfx_blob_free(&call->output);
    free(call);
}

void otfx_module_call_cancel(otfx_module_call *call)
{
    if (!call)
        return;
    kill_and_reap(call);
    close(call->fd);
    otfx_blob_free(&call->output);
    free(call);
}

void otfx_module_result_free(otfx_module_result *result)
{
    otfx_blob_free(&result->data);
    otfx_text_free(&result->reasons);
    free(result->refused);
    result->refused = NULL;
    result->refused_count = 0;
}

/*
 * otfx-run — runs an MPI program traced by otfx:
 *
 *   otfx-run [options] -n N [--] PROGRAM [ARGS...]
 *
 * becomes (and is replaced by, through exec)
 *
 *   mpiexec -n N+P -genv LD_PRELOAD <libotfx-capture.so> -genv OTFX_PLACES P -genv OTFX_BUFFER B
 *           -genv OTFX_REDUCTION S [...] PROGRAM ARGS...
 *
 * The capture library goes to the ranks only (-genv), never into mpiexec and its proxies. The last P
 * ranks become the tool places inside MPI_Init: event places (leaves) and analysis places (the tree's
 * inner nodes and root, otfx/tbon.h). Every option is checked here, before a single rank starts, so
 * that a typo costs a clear message and exit code 2 instead of a job.
 */
#include <otfx/place.h>
#include <otfx/tbon.h>

#include "filter_file.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
/* One event place per this many application ranks by default. */
#define DEFAULT_RANKS_PER_PLACE 8

static const char usage[] =
    "usage: otfx-run [options] -n N [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM on N MPI ranks with mpiexec, traced by otfx: libotfx-capture.so is preloaded into the\n"
    "N application ranks (not into mpiexec), and P more ranks are the tool places: event places hold the\n"
    "traces in memory, analysis places merge query results in a tree whose root serves otfxctl and\n"
    "otfx-gui (it writes a session file and says where). The program sees a world of N ranks. Each event\n"
    "place prints a report per rank at the end.\n"
    "\n"
    "options:\n"
    "  -n, --ranks N           application ranks (required)\n"
    "  --places P              tool places in all, event and analysis (default: one event place per 8\n"
    "                          application ranks, at least 1, plus the analysis places their tree needs;\n"
    "                          with P = 1 the one place is leaf and root)\n"
    "  --ranks-per-place K     instead of --places: ceil(N / K) event places, plus their tree\n"
    "  --fanin F               children per analysis place (default 16, at least 2)\n"
    "  --buffer SIZE           otfx trace budget per application rank and thread, e.g. 256K, 64M, 1G\n"
    "                          (K/M/G are powers of 1024; at least 64K; default 64M)\n"
    "  --reduction STRATEGY    what a full buffer does: ring (default: drop the oldest detail), time (thin\n"
    "                          the older part), type (drop event classes in priority order), depth (drop\n"
    "                          the deepest call levels), stop (stop storing)\n"
    "  --backpressure POLICY   what a rank does when its place falls behind: block (default: wait,\n"
    "                          nothing lost, the time waited is reported as blocked_ns) or drop (never\n"
    "                          wait: events are dropped, counted, and marked in the trace as a reduction\n"
    "                          record; definitions are never dropped) (OTFX_BACKPRESSURE)\n"
    "  --no-record             start with recording off (until `otfxctl record resume`)\n"
    "  --start-paused          the application ranks wait right after MPI_Init until `otfxctl app resume`\n"
    "  --listen ADDR:PORT      where the root serves clients (default 127.0.0.1:0, any free port)\n"
    "  --session-dir DIR       where the root writes its session file (default: $OTFX_SESSION_DIR, else the\n"
    "                          working directory); otfxctl and otfx-gui find the newest one there\n"
    "  --snapshot-dir DIR      snapshots are written under DIR, relative paths resolved there; paths that\n"
    "                          leave it are refused (default: the working directory)\n"
    "  --snapshot-at-exit PATH write a snapshot of everything held when the application ends\n"
    "  --job-id ID             the job's name in the session file (default: otfx-HOST-PID)\n"
    "  --filter FILE           user functions (-finstrument-functions) to record: lines 'include GLOB' /\n"
    "                          'exclude GLOB', first match wins, '#' comments (OTFX_FILTER); checked here\n"
    "  --query-memory SIZE     the largest partial result of a query at any place (default 64M, at least\n"
    "                          64K); a query that needs more is refused as too large (OTFX_QUERY_MEMORY)\n"
    "  --module-timeout S      time limit of an analysis module's call, in seconds (default 30): a leaf,\n"
    "                          merge or load over it is answered with an error (OTFX_MODULE_TIMEOUT)\n"
    "  --mpiexec PATH          the mpiexec to run (default: the one found at build time)\n"
    "  --dry-run               print the mpiexec command instead of running it\n"
    "  -h, --help              this text\n"
    "  --version               otfx-run's version\n"
    "\n"
    "environment:\n"
    "  OTFX_CAPTURE_LIBRARY    libotfx-capture.so to preload (default: installed next to otfx-run, else the\n"
    "                          build tree's)\n"
    "  MPIR_CVAR_POLLS_BEFORE_YIELD  passed on as 10 unless set: MPICH then yields the core while a rank\n"
    "                          (a place especially) waits, instead of busy-polling\n"
    "\n"
    "exit status: mpiexec's, or 2 for a wrong option.\n";

struct run_options {
    long ranks;
    long places;
    long ranks_per_place;
    size_t buffer_bytes;
    const char *reduction;
    const char *backpressure; /* NULL: the capture library's default (block) */
    long fanin;
    bool no_record;
    bool start_paused;
    bool dry_run;
    const char *listen;
    char *session_dir;  /* absolute */
    char *snapshot_dir; /* absolute */
    const char *snapshot_at_exit;
    const char *job_id;
    char *filter;               /* absolute path of --filter's file, NULL without */
    const char *query_memory;   /* as given (checked) */
    const char *module_timeout; /* as given (checked) */
    const char *mpiexec;
    char **program; /* PROGRAM ARGS..., NULL-terminated (argv's tail) */
};

__attribute__((format(printf, 1, 2))) static _Noreturn void usage_error(const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    fputs("otfx-run: ", stderr);
    vfprintf(stderr, format, arguments);
    va_end(arguments);
    fputs("\n(otfx-run --help lists the options)\n", stderr);
    exit(EXIT_USAGE);
}

static long parse_count(const char *option, const char *text)
{
    char *end = NULL;
    errno = 0;
    long value = text ? strtol(text, &end, 10) : 0;
    if (!text || errno || end == text || *end || value < 1 || value > INT_MAX / 2) {
        fprintf(stderr, "otfx-run: %s needs a positive whole number, not '%s'\n", option, text ? text : "");
        exit(EXIT_USAGE);
    }
    return value;
}

static bool is_strategy(const char *name)
{
    static const char *const strategies[] = {"ring", "time", "type", "depth", "stop"};
    for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++)
        if (strcmp(name, strategies[i]) == 0)
            return true;
    return false;
}

/* "--buffer=64M" and "--buffer 64M" both work; returns the value and advances *index past it. */
static const char *option_value(int argc, char **argv, int *index, const char *name)
{
    const char *argument = argv[*index];
    size_t length = strlen(name);
    if (argument[length] == '=')
        return argument + length + 1;
    if (*index + 1 >= argc)
        usage_error("%s needs a value", name);
    return argv[++*index];
}

static bool matches(const char *argument, const char *name)
{
    size_t length = strlen(name);
    return strncmp(argument, name, length) == 0 && (argument[length] == '\0' || argument[length] == '=');
}

/* The absolute path of an existing directory the user can write into. */
static char *existing_directory(const char *option, const char *path)
{
    char *absolute = realpath(path, NULL);
    struct stat info;
    if (!absolute || stat(absolute, &info) != 0 || !S_ISDIR(info.st_mode) || access(absolute, W_OK) != 0)
        usage_error("%s: '%s' is not a directory this user can write into%s%s", option, path,
                    absolute ? "" : ": ", absolute ? "" : strerror(errno));
    return absolute;
}

static void parse_options(int argc, char **argv, struct run_options *options)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *argument = argv[i];
        if (strcmp(argument, "--") == 0) {
            i++;
            break;
        }
        if (argument[0] != '-')
            break; /* the program: everything from here on is its command line */
        if (strcmp(argument, "-h") == 0 || strcmp(argument, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(argument, "--version") == 0) {
            printf("otfx-run %s\n", OTFX_RUN_VERSION);
            exit(0);
        } else if (strcmp(argument, "-n") == 0 || strcmp(argument, "-np") == 0 ||
                   matches(argument, "--ranks")) {
            options->ranks =
                parse_count("-n", option_value(argc, argv, &i, argument[1] == 'n' ? "-n" : "--ranks"));
        } else if (matches(argument, "--places")) {
            options->places = parse_count("--places", option_value(argc, argv, &i, "--places"));
        } else if (matches(argument, "--ranks-per-place")) {
            options->ranks_per_place =
                parse_count("--ranks-per-place", option_value(argc, argv, &i, "--ranks-per-place"));
        } else if (matches(argument, "--buffer")) {
            const char *size = option_value(argc, argv, &i, "--buffer");
            if (otfx_place_parse_size(size, &options->buffer_bytes) != 0)
                usage_error("--buffer needs a size such as 256K, 64M or 1G, not '%s'", size);
            if (options->buffer_bytes < OTFX_PLACE_MIN_BUFFER)
                usage_error("--buffer %s is below the smallest trace budget, 64K", size);
        } else if (matches(argument, "--reduction")) {
            options->reduction = option_value(argc, argv, &i, "--reduction");
            if (!is_strategy(options->reduction))
                usage_error("--reduction must be ring, time, type, depth or stop, not '%s'",
                            options->reduction);
        } else if (matches(argument, "--backpressure")) {
            options->backpressure = option_value(argc, argv, &i, "--backpressure");
            if (strcmp(options->backpressure, "block") != 0 && strcmp(options->backpressure, "drop") != 0)
                usage_error("--backpressure must be block or drop, not '%s'", options->backpressure);
        } else if (strcmp(argument, "--no-record") == 0) {
            options->no_record = true;
        } else if (strcmp(argument, "--start-paused") == 0) {
            options->start_paused = true;
        } else if (matches(argument, "--fanin")) {
            options->fanin = parse_count("--fanin", option_value(argc, argv, &i, "--fanin"));
            if (options->fanin < 2)
                usage_error("--fanin must be at least 2");
        } else if (matches(argument, "--listen")) {
            options->listen = option_value(argc, argv, &i, "--listen");
            const char *colon = strrchr(options->listen, ':');
            char *end = NULL;
            long port = colon ? strtol(colon + 1, &end, 10) : -1;
            if (!colon || colon == options->listen || !end || end == colon + 1 || *end || port < 0 ||
                port > 65535)
                usage_error("--listen needs ADDR:PORT (port 0: any free port), not '%s'", options->listen);
        } else if (matches(argument, "--session-dir")) {
            free(options->session_dir);
            options->session_dir =
                existing_directory("--session-dir", option_value(argc, argv, &i, "--session-dir"));
        } else if (matches(argument, "--snapshot-dir")) {
            free(options->snapshot_dir);
            options->snapshot_dir =
                existing_directory("--snapshot-dir", option_value(argc, argv, &i, "--snapshot-dir"));
        } else if (matches(argument, "--snapshot-at-exit")) {
            options->snapshot_at_exit = option_value(argc, argv, &i, "--snapshot-at-exit");
            if (!*options->snapshot_at_exit)
                usage_error("--snapshot-at-exit needs a path");
        } else if (matches(argument, "--job-id")) {
            options->job_id = option_value(argc, argv, &i, "--job-id");
            for (const char *c = options->job_id; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '-' || *c == '_' || *c == '.'))
                    usage_error("--job-id may hold letters, digits, '-', '_' and '.' only, not '%s'",
                                options->job_id);
            if (!*options->job_id)
                usage_error("--job-id needs a name");
        } else if (matches(argument, "--filter")) {
            const char *file = option_value(argc, argv, &i, "--filter");
            free(options->filter);
            options->filter = realpath(file, NULL);
            if (!options->filter || access(options->filter, R_OK) != 0)
                usage_error("--filter: cannot read '%s': %s", file, strerror(errno));
            /* checked here, not first on every rank inside MPI_Init */
            otfx_filter_rule *rules;
            size_t rule_count;
            char why[512];
            if (!otfx_filter_read(options->filter, &rules, &rule_count, why, sizeof(why)))
                usage_error("--filter: %s", why);
            otfx_filter_free(rules, rule_count);
        } else if (matches(argument, "--query-memory")) {
            options->query_memory = option_value(argc, argv, &i, "--query-memory");
            size_t bytes;
            if (otfx_place_parse_size(options->query_memory, &bytes) != 0 || bytes < 64 * 1024)
                usage_error("--query-memory needs a size of at least 64K such as 16M or 64M, not '%s'",
                            options->query_memory);
        } else if (matches(argument, "--module-timeout")) {
            options->module_timeout = option_value(argc, argv, &i, "--module-timeout");
            char *end = NULL;
            const double seconds = strtod(options->module_timeout, &end);
            if (end == options->module_timeout || *end != '\0' || !(seconds > 0) || seconds > 1e6)
                usage_error(
                    "--module-timeout needs seconds above 0 (at most 1000000) such as 10 or 0.5, not '%s'",
                    options->module_timeout);
        } else if (matches(argument, "--mpiexec")) {
            options->mpiexec = option_value(argc, argv, &i, "--mpiexec");
        } else if (strcmp(argument, "--dry-run") == 0) {
            options->dry_run = true;
        } else {
            usage_error("unknown option '%s'", argument);
        }
    }
    if (i >= argc)
        usage_error("no program given");
    options->program = argv + i;
    if (!options->ranks)
        usage_error("-n N (the number of application ranks) is required");
    if (options->places && options->ranks_per_place)
        usage_error("--places and --ranks-per-place exclude each other");
}

/* Places for `event_places` leaves: the leaves plus the inner nodes their tree needs (otfx/tbon.h). */
static long tree_places(long event_places, uint32_t fanin)
{
    if (event_places <= 1)
        return 1;
    long places = event_places, width = event_places;
    do {
        width = (width + fanin - 1) / fanin;
        places += width;
    } while (width > 1);
    return places;
}

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* The capture library: OTFX_CAPTURE_LIBRARY, else installed relative to this program, else the build
 * tree's (this program was built with it). */
static char *find_capture_library(void)
{
    const char *override = getenv("OTFX_CAPTURE_LIBRARY");
    if (override && *override) {
        if (!readable(override))
            usage_error("OTFX_CAPTURE_LIBRARY=%s cannot be read", override);
        return strdup(override);
    }
    char self[PATH_MAX];
    char *resolved = realpath("/proc/self/exe", NULL);
    if (resolved) {
        snprintf(self, sizeof(self), "%s", resolved);
        free(resolved);
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            char installed[PATH_MAX + 256];
            snprintf(installed, sizeof(installed), "%s/%s", self, OTFX_RUN_INSTALLED_CAPTURE);
            char *canonical = realpath(installed, NULL);
            if (canonical && readable(canonical))
                return canonical;
            free(canonical);
        }
    }
    if (readable(OTFX_RUN_BUILD_CAPTURE))
        return strdup(OTFX_RUN_BUILD_CAPTURE);
    fprintf(
        stderr,
        "otfx-run: libotfx-capture.so not found (neither installed next to otfx-run as %s nor in the build "
        "tree as %s): set OTFX_CAPTURE_LIBRARY\n",
        OTFX_RUN_INSTALLED_CAPTURE, OTFX_RUN_BUILD_CAPTURE);
    exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
    struct run_options options = {.buffer_bytes = 64 * 1024 * 1024, .reduction = "ring"};
    parse_options(argc, argv, &options);
    const uint32_t fanin = options.fanin ? (uint32_t)options.fanin : OTFX_TBON_DEFAULT_FANIN;
    long places = options.places;
    if (!places) {
        const long per_place = options.ranks_per_place ? options.ranks_per_place : DEFAULT_RANKS_PER_PLACE;
        places = tree_places((options.ranks + per_place - 1) / per_place, fanin);
    }
    otfx_tbon_layout layout;
    char problem[256];
    if (!otfx_tbon_layout_init(&layout, (uint32_t)options.ranks, (uint32_t)places, fanin, problem,
                               sizeof(problem))) {
        fprintf(stderr, "otfx-run: %s\n", problem);
        return EXIT_USAGE;
    }
    fprintf(stderr, "otfx-run: %ld application ranks, %ld places (%u event, %u analysis, fan-in %u)\n",
            options.ranks, places, layout.event_places, layout.places - layout.event_places, fanin);
    char *capture = find_capture_library();

    char total_ranks[32], place_count[32], buffer[32], fanin_text[32], job_id[128];
    snprintf(total_ranks, sizeof(total_ranks), "%ld", options.ranks + places);
    snprintf(place_count, sizeof(place_count), "%ld", places);
    snprintf(buffer, sizeof(buffer), "%zu", options.buffer_bytes);
    snprintf(fanin_text, sizeof(fanin_text), "%u", fanin);
    if (options.job_id) {
        snprintf(job_id, sizeof(job_id), "%s", options.job_id);
    } else {
        char host[64] = "host";
        gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = '\0';
        for (char *c = host; *c; c++)
            if (*c == '.')
                *c = '\0';
        snprintf(job_id, sizeof(job_id), "otfx-%s-%ld", host, (long)getpid());
    }
    const char *mpiexec =
        options.mpiexec ? options.mpiexec : (*OTFX_RUN_MPIEXEC ? OTFX_RUN_MPIEXEC : "mpiexec");

    size_t program_args = 0;
    while (options.program[program_args])
        program_args++;
    const char **command = calloc(64 + program_args, sizeof(char *));
    if (!command) {
        fputs("otfx-run: out of memory\n", stderr);
        return 1;
    }
    size_t n = 0;
    command[n++] = mpiexec;
    command[n++] = "-n";
    command[n++] = total_ranks;
#define GENV(name, value)                                                                                    \
    do {                                                                                                     \
        command[n++] = "-genv";                                                                              \
        command[n++] = (name);                                                                               \
        command[n++] = (value);                                                                              \
    } while (0)
    GENV("LD_PRELOAD", capture);
    GENV("OTFX_PLACES", place_count);
    GENV("OTFX_BUFFER", buffer);
    GENV("OTFX_REDUCTION", options.reduction);
    GENV("OTFX_FANIN", fanin_text);
    GENV("OTFX_JOB_ID", job_id);
    if (options.backpressure)
        GENV("OTFX_BACKPRESSURE", options.backpressure);
    if (options.no_record)
        GENV("OTFX_RECORD", "0");
    if (options.start_paused)
        GENV("OTFX_START_PAUSED", "1");
    if (options.listen)
        GENV("OTFX_LISTEN", options.listen);
    if (options.session_dir)
        GENV("OTFX_SESSION_DIR", options.session_dir);
    if (options.snapshot_dir)
        GENV("OTFX_SNAPSHOT_DIR", options.snapshot_dir);
    if (options.snapshot_at_exit)
        GENV("OTFX_SNAPSHOT_AT_EXIT", options.snapshot_at_exit);
    if (options.filter)
        GENV("OTFX_FILTER", options.filter);
    if (options.query_memory)
        GENV("OTFX_QUERY_MEMORY", options.query_memory);
    if (options.module_timeout)
        GENV("OTFX_MODULE_TIMEOUT", options.module_timeout);
    if (!getenv("MPIR_CVAR_POLLS_BEFORE_YIELD"))
        GENV("MPIR_CVAR_POLLS_BEFORE_YIELD", "10");
#undef GENV
    for (size_t i = 0; i < program_args; i++)
        command[n++] = options.program[i];
    command[n] = NULL;

    int status = 0;
    if (options.dry_run) {
        for (size_t i = 0; i < n; i++)
            printf("%s%s", i ? " " : "", command[i]);
        putchar('\n');
    } else {
        fflush(stdout);
        execvp(mpiexec, (char *const *)command);
        fprintf(stderr, "otfx-run: cannot run %s: %s\n", mpiexec, strerror(errno));
        status = 127;
    }
    free(command);
    free(capture);
    free(options.filter);
    free(options.session_dir);
    free(options.snapshot_dir);
    return status;
}

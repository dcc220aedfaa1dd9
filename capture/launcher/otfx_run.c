/*
 * otfx-run — runs an MPI program traced by otfx:
 *
 *   otfx-run [options] -n N [--] PROGRAM [ARGS...]
 *
 * runs, and waits for,
 *
 *   mpiexec -disable-auto-cleanup -n N+P -genv OTFX_GUARD_PRELOAD <libotfx-capture.so> -genv OTFX_PLACES P
 *           -genv OTFX_BUFFER B -genv OTFX_REDUCTION S [...] otfx-run --guard PROGRAM ARGS...
 *
 * The capture library goes to the ranks only (the guard below preloads it), never into mpiexec and its
 * proxies. The last P
 * ranks become the tool places inside MPI_Init: event places (leaves) and analysis places (the tree's
 * inner nodes and root, otfx/tbon.h). Every option is checked here, before a single rank starts, so
 * that a typo costs a clear message and exit code 2 instead of a job.
 *
 * The end of the job (docs/usage.md, "When the application fails"): -disable-auto-cleanup keeps the
 * places alive when an application rank dies, so that they can write what they hold; the root then ends
 * the job and says how in OTFX_RUN_STATUS. SIGINT and SIGTERM are forwarded to mpiexec, which forwards
 * them to every process (a terminal's Ctrl-C reaches mpiexec by itself); the places write their snapshot
 * and end the job; after END_TIMEOUT_SECONDS, or at a second signal, what is left is killed. otfx-run
 * then prints one line saying what happened and where the trace is (nothing for a normal run), removes
 * the session file if the root could not, and exits with the job's status (128 + the signal when it was
 * interrupted; never 0 for an application that did not finish or a snapshot at exit that failed).
 */
#include "filter_file.h"
#include "metric_table.h"
#include <otfx/trigger.h>

#include <otfx/settings.h>
#include <otfx/tbon.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
/* How long the places may take to write their snapshot after an interruption before the job is killed. */
#define END_TIMEOUT_SECONDS 120
/* One event place per this many application ranks by default. */
#define DEFAULT_RANKS_PER_PLACE 8

/* A setting's default and lower bound as settings.tsv gives them (sizes written as the table writes them,
 * 64K rather than 65536): the option lines of --help take them from the table, so that the help cannot
 * disagree with what a job gets. */
static const char *setting_default(otfx_setting id)
{
    const char *text = otfx_setting_describe(id)->default_text;
    return text ? text : "none";
}

static const char *setting_minimum(otfx_setting id, char *text, size_t capacity)
{
    const otfx_setting_info *info = otfx_setting_describe(id);
    long long value = info->has_min ? info->min : 0;
    const char *suffix = "";
    if (info->type == OTFX_SETTING_TYPE_SIZE) {
        static const char *const units[] = {"K", "M", "G"};
        for (size_t unit = 0; unit < 3 && value >= 1024 && value % 1024 == 0; unit++) {
            value /= 1024;
            suffix = units[unit];
        }
    }
    snprintf(text, capacity, "%lld%s", value, suffix);
    return text;
}

/* The help's first part (then the settings from settings.tsv: print_help). A printf format: the defaults
 * and lower bounds of the options that set a setting come from the table. */
#define USAGE_FORMAT                                                                                         \
    "usage: otfx-run [options] -n N [--] PROGRAM [ARGS...]\n"                                                \
    "\n"                                                                                                     \
    "Runs PROGRAM on N MPI ranks with mpiexec, traced by otfx: libotfx-capture.so is preloaded into the\n"   \
    "N application ranks (not into mpiexec), and P more ranks are the tool places: event places hold the\n"  \
    "traces in memory, analysis places merge query results in a tree whose root serves otfxctl and\n"        \
    "otfx-gui (it writes a session file and says where). The program sees a world of N ranks. Each event\n"  \
    "place prints a report per rank at the end.\n"                                                           \
    "\n"                                                                                                     \
    "options:\n"                                                                                             \
    "  -n, --ranks N           application ranks (required)\n"                                               \
    "  --places P              tool places in all, event and analysis (default: one event place per 8\n"     \
    "                          application ranks, at least 1, plus the analysis places their tree needs;\n"  \
    "                          with P = 1 the one place is leaf and root)\n"                                 \
    "  --ranks-per-place K     instead of --places: ceil(N / K) event places, plus their tree\n"             \
    "  --fanin F               children per analysis place (default %s, at least %s)\n"                      \
    "  --buffer SIZE           otfx trace budget per application rank and thread, e.g. 256K, 64M, 1G\n"      \
    "                          (K/M/G are powers of 1024; at least %s; default %s)\n"                        \
    "  --reduction STRATEGY    what a full buffer does: ring (default: drop the oldest detail), time "       \
    "(thin\n"                                                                                                \
    "                          the older part), type (drop event classes in priority order), depth (drop\n"  \
    "                          the deepest call levels), stop (stop storing)\n"                              \
    "  --backpressure POLICY   what a rank does when its place falls behind: block (default: wait,\n"        \
    "                          nothing lost, the time waited is reported as blocked_ns) or drop (never\n"    \
    "                          wait: events are dropped, counted, and marked in the trace as a reduction\n"  \
    "                          record; definitions are never dropped) (OTFX_BACKPRESSURE)\n"                 \
    "  --no-record             start with recording off (until `otfxctl record resume`)\n"                   \
    "  --disable CLASSES       start with these event classes disabled (until `otfxctl enable ...`): a "     \
    "comma\n"                                                                                                \
    "                          list of p2p, collective, mpi-other, user, all (OTFX_DISABLE)\n"               \
    "  --metrics LIST          read these metrics at every recorded MPI call's and user region's enter\n"    \
    "                          and leave, a comma list (task-clock, page-faults, cycles, ru-maxrss, ...;\n"  \
    "                          `--metrics help` lists them) (OTFX_METRICS)\n"                                \
    "  --metrics-sample MS     refused but for 0: metrics are read at enters and leaves, never between "     \
    "them\n"                                                                                                 \
    "                          by a timer signal (docs/usage.md, \"Metrics\") (OTFX_METRICS_SAMPLE)\n"       \
    "  --start-paused          the application ranks wait right after MPI_Init until `otfxctl app resume`\n" \
    "  --listen ADDR:PORT      where the root serves clients (default %s, port 0: any free port)\n"          \
    "  --session-dir DIR       where the root writes its session file (default: $OTFX_SESSION_DIR, else "    \
    "the\n"                                                                                                  \
    "                          working directory); otfxctl and otfx-gui find the newest one there\n"         \
    "  --snapshot-dir DIR      snapshots are written under DIR, relative paths resolved there; paths that\n" \
    "                          leave it are refused (default: the working directory)\n"                      \
    "  --snapshot-at-exit PATH write a snapshot of everything held when the application ends, also when\n"   \
    "                          it fails (a rank dies, calls MPI_Abort or exit() without MPI_Finalize, or\n"  \
    "                          otfx-run gets SIGINT/SIGTERM)\n"                                              \
    "  --snapshot-on-failure PATH  write it there instead when the application fails\n"                      \
    "  --overwrite-snapshot    replace an existing archive at those paths (without it otfx-run refuses to\n" \
    "                          start when one exists)\n"                                                     \
    "  --job-id ID             the job's name in the session file (default: otfx-HOST-PID)\n"                \
    "  --filter FILE           user functions (-finstrument-functions) to record: lines 'include GLOB' /\n"  \
    "                          'exclude GLOB', first match wins, '#' comments (OTFX_FILTER); checked here\n" \
    "  --query-memory SIZE     the largest partial result of a query at any place (default %s, at least\n"   \
    "                          %s); a query that needs more is refused as too large (OTFX_QUERY_MEMORY)\n"   \
    "  --module-timeout S      time limit of an analysis module's call, in seconds (default %s): a leaf,\n"  \
    "                          merge or load over it is answered with an error (OTFX_MODULE_TIMEOUT)\n"      \
    "  --trigger SPEC          a trigger: when its condition holds on the incoming events the job acts,\n"   \
    "                          e.g. 'duration(MPI_Allreduce) > 50ms => pause-app, snapshot(-1s) to DIR,\n"   \
    "                          notify' (repeatable; grammar in docs/usage.md, \"Triggers\"; checked here,\n" \
    "                          an error says where) (OTFX_TRIGGERS)\n"                                       \
    "  --mpiexec PATH          the mpiexec to run (default: the one found at build time)\n"                  \
    "  --dry-run               print the mpiexec command instead of running it\n"                            \
    "  -h, --help              this text\n"                                                                  \
    "  --version               otfx-run's version\n"                                                         \
    "\n"                                                                                                     \
    "exit status: the job's (mpiexec's); 2 for a wrong option; 128 + the signal when interrupted by\n"       \
    "SIGINT or SIGTERM; 1 when the application finished but its snapshot at exit failed. When the job\n"     \
    "fails or is interrupted otfx-run says in one last line what happened and where the trace is.\n"         \
    "\n"                                                                                                     \
    "environment (the options set most of these for the job; without otfx-run set them yourself,\n"          \
    "docs/settings.md):\n"

/* USAGE_FORMAT, then the settings from settings.tsv, then the one that is not otfx's. */
static void print_help(void)
{
    char fanin_minimum[32], buffer_minimum[32], query_memory_minimum[32];
    printf(USAGE_FORMAT, setting_default(OTFX_SETTING_FANIN),
           setting_minimum(OTFX_SETTING_FANIN, fanin_minimum, sizeof(fanin_minimum)),
           setting_minimum(OTFX_SETTING_BUFFER, buffer_minimum, sizeof(buffer_minimum)),
           setting_default(OTFX_SETTING_BUFFER), setting_default(OTFX_SETTING_LISTEN),
           setting_default(OTFX_SETTING_QUERY_MEMORY),
           setting_minimum(OTFX_SETTING_QUERY_MEMORY, query_memory_minimum, sizeof(query_memory_minimum)),
           setting_default(OTFX_SETTING_MODULE_TIMEOUT));
    otfx_settings_print_help(stdout, 1u << OTFX_SETTING_KIND_USER, 104);
    fputs("  MPIR_CVAR_POLLS_BEFORE_YIELD\n"
          "                          passed on as 10 unless set: MPICH then yields the core while a rank\n"
          "                          (a place especially) waits, instead of busy-polling\n",
          stdout);
}

struct run_options {
    long ranks;
    long places;
    long ranks_per_place;
    size_t buffer_bytes;
    const char *reduction;
    const char *backpressure; /* NULL: the capture library's default (block) */
    long fanin;
    bool no_record;
    const char *disable; /* OTFX_DISABLE's comma list, NULL without */
    const char *metrics; /* OTFX_METRICS's comma list, NULL without */
    bool start_paused;
    bool dry_run;
    const char *listen;
    char *session_dir;  /* absolute */
    char *snapshot_dir; /* absolute */
    const char *snapshot_at_exit;
    const char *snapshot_on_failure;
    bool overwrite_snapshot;
    const char *job_id;
    char *filter;               /* absolute path of --filter's file, NULL without */
    const char *query_memory;   /* as given (checked) */
    const char *module_timeout; /* as given (checked) */
    char *triggers;             /* OTFX_TRIGGERS: every --trigger (checked), separated by ';'; NULL without */
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

/* `--metrics help`: the table, with what this machine can count of it. */
static void list_metrics(void)
{
    static const char *const sources[] = {"perf software", "perf hardware", "getrusage", "PAPI"};
    struct stat pmu;
    const bool has_pmu = stat("/sys/bus/event_source/devices/cpu", &pmu) == 0;
    printf("%-20s %-12s %-14s %s\n", "METRIC", "UNIT", "SOURCE", "WHAT");
    for (size_t i = 0; i < otfx_metric_count(); i++) {
        const struct otfx_metric_info *m = otfx_metric_at(i);
        printf("%-20s %-12s %-14s %s%s\n", m->name, m->unit, sources[m->source], m->help,
               m->source == OTFX_METRIC_PERF_HARDWARE && !has_pmu ? " (not on this machine: no hardware PMU)"
                                                                  : "");
    }
    printf("At most %d at once. Hardware events need a PMU (/sys/bus/event_source/devices/cpu); a metric a\n"
           "rank cannot count is left out and said on its stderr.\n",
           OTFX_METRICS_AT_ONCE);
}

/* --trigger SPEC: checked with the places' parser (an error names the column), appended to OTFX_TRIGGERS. */
static void add_trigger(struct run_options *options, const char *spec)
{
    otfx_trigger_spec parsed;
    size_t column = 0;
    char why[256];
    if (strchr(spec, ';'))
        usage_error("--trigger '%s': one trigger per --trigger (';' separates them in OTFX_TRIGGERS)", spec);
    if (!otfx_trigger_parse(spec, &parsed, &column, why, sizeof(why)))
        usage_error("--trigger '%s': at column %zu: %s\n  %s\n  %*s^", spec, column, why, spec,
                    (int)column - 1, "");
    const size_t had = options->triggers ? strlen(options->triggers) : 0;
    char *joined = realloc(options->triggers, had + strlen(spec) + 2);
    if (!joined)
        usage_error("out of memory");
    snprintf(joined + had, strlen(spec) + 2, "%s%s", had ? ";" : "", spec);
    options->triggers = joined;
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
            print_help();
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
            if (otfx_settings_parse_size(size, &options->buffer_bytes) != 0)
                usage_error("--buffer needs a size such as 256K, 64M or 1G, not '%s'", size);
            if (options->buffer_bytes < OTFX_SETTING_BUFFER_MIN)
                usage_error("--buffer %s is below the smallest trace budget, 64K", size);
        } else if (matches(argument, "--reduction")) {
            options->reduction = option_value(argc, argv, &i, "--reduction");
            if (!otfx_setting_accepts(OTFX_SETTING_REDUCTION, options->reduction))
                usage_error("--reduction must be ring, time, type, depth or stop, not '%s'",
                            options->reduction);
        } else if (matches(argument, "--backpressure")) {
            options->backpressure = option_value(argc, argv, &i, "--backpressure");
            if (!otfx_setting_accepts(OTFX_SETTING_BACKPRESSURE, options->backpressure))
                usage_error("--backpressure must be block or drop, not '%s'", options->backpressure);
        } else if (strcmp(argument, "--no-record") == 0) {
            options->no_record = true;
        } else if (matches(argument, "--disable")) {
            options->disable = option_value(argc, argv, &i, "--disable");
            if (!otfx_setting_accepts(OTFX_SETTING_DISABLE, options->disable))
                usage_error("--disable needs a comma list of p2p, collective, mpi-other, user, all, not '%s'",
                            options->disable);
        } else if (matches(argument, "--metrics")) {
            options->metrics = option_value(argc, argv, &i, "--metrics");
            if (strcmp(options->metrics, "help") == 0) {
                list_metrics();
                exit(0);
            }
            uint64_t mask;
            char why[256];
            if (!otfx_metric_parse_list(options->metrics, &mask, why, sizeof why))
                usage_error("--metrics: %s", why);
        } else if (matches(argument, "--metrics-sample")) {
            const char *every = option_value(argc, argv, &i, "--metrics-sample");
            if (!otfx_setting_accepts(OTFX_SETTING_METRICS_SAMPLE, every))
                usage_error(
                    "--metrics-sample %s: reading metrics every N ms between events is refused: a timer "
                    "signal would make the application's poll, select, nanosleep, sem_wait, ... return "
                    "EINTR even with SA_RESTART (docs/usage.md, \"Metrics\"); metrics are read at every "
                    "recorded enter and leave",
                    every);
        } else if (strcmp(argument, "--start-paused") == 0) {
            options->start_paused = true;
        } else if (matches(argument, "--fanin")) {
            options->fanin = parse_count("--fanin", option_value(argc, argv, &i, "--fanin"));
            if (options->fanin < OTFX_SETTING_FANIN_MIN)
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
        } else if (matches(argument, "--snapshot-on-failure")) {
            options->snapshot_on_failure = option_value(argc, argv, &i, "--snapshot-on-failure");
            if (!*options->snapshot_on_failure)
                usage_error("--snapshot-on-failure needs a path");
        } else if (strcmp(argument, "--overwrite-snapshot") == 0) {
            options->overwrite_snapshot = true;
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
            if (!otfx_setting_accepts(OTFX_SETTING_QUERY_MEMORY, options->query_memory))
                usage_error("--query-memory needs a size of at least 64K such as 16M or 64M, not '%s'",
                            options->query_memory);
        } else if (matches(argument, "--module-timeout")) {
            options->module_timeout = option_value(argc, argv, &i, "--module-timeout");
            if (!otfx_setting_accepts(OTFX_SETTING_MODULE_TIMEOUT, options->module_timeout))
                usage_error(
                    "--module-timeout needs seconds above 0 (at most 1000000) such as 10 or 0.5, not '%s'",
                    options->module_timeout);
        } else if (matches(argument, "--trigger")) {
            add_trigger(options, option_value(argc, argv, &i, "--trigger"));
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
    const char *override = otfx_setting_string(OTFX_SETTING_CAPTURE_LIBRARY);
    if (override) {
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

/* ---- the guard: how every process of the job is started ---------------------------------------------
 * MPICH's hydra (4.0.2) kills every process of the job when one of them dies of a signal, even with
 * -disable-auto-cleanup (which keeps them alive after a process exits otherwise): a rank that crashes, or
 * is killed with SIGKILL, would take its places with it before they could write what they hold. So
 * mpiexec starts `otfx-run --guard PROGRAM ARGS` on every rank: the guard runs the program as its child
 * (with the capture library preloaded, OTFX_GUARD_PRELOAD), waits for it and exits with the signal's
 * number as its status when the child died of one. hydra then sees an exit, not a death by signal, and
 * keeps the others running: the places notice (capture/src/dying.c, the place's watch of its ranks),
 * write the trace and end the job. The guard passes nothing on: signals that mpiexec forwards reach the
 * program by themselves (the guard's process group), and the guard ignores them. */

/* The signals the guard ignores (hydra's SIGUSR1 says another process ended: its default would kill). */
static const int guard_ignores[] = {SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGQUIT};
#define GUARD_IGNORED (sizeof(guard_ignores) / sizeof(guard_ignores[0]))

/* The world rank of this process when it is a tool place (the last OTFX_PLACES ranks), else -1. */
static int guarded_place_rank(void)
{
    const char *rank = getenv("PMI_RANK"), *size = getenv("PMI_SIZE"); /* hydra's */
    if (!rank || !size || !otfx_setting_is_set(OTFX_SETTING_PLACES))
        return -1;
    const long long p = otfx_setting_integer(OTFX_SETTING_PLACES);
    const int r = atoi(rank), n = atoi(size);
    return p > 0 && r >= n - p && r < n ? r : -1;
}

/* Every other process hydra's proxy started on this node, with its program: hydra ends a job whose
 * process died of a signal most of the time, not always (seen with -disable-auto-cleanup: the others went
 * on waiting for the dead place). Ranks on other nodes are left to hydra, which sees this node's end. */
static void end_sibling_processes(void)
{
    const pid_t proxy = getppid(), self = getpid();
    const pid_t proxy_group = getpgid(proxy);
    DIR *processes = opendir("/proc");
    if (!processes)
        return;
    struct dirent *entry;
    while ((entry = readdir(processes))) {
        char *end;
        const long pid = strtol(entry->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self)
            continue;
        char path[64], line[512];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        FILE *stat_file = fopen(path, "r");
        if (!stat_file)
            continue;
        const bool read = fgets(line, sizeof(line), stat_file) != NULL;
        fclose(stat_file);
        /* pid (comm) state ppid ...: comm may hold spaces and parentheses, the last ')' ends it */
        const char *after = read ? strrchr(line, ')') : NULL;
        long parent = 0;
        if (!after || sscanf(after + 1, " %*c %ld", &parent) != 1 || parent != proxy)
            continue;
        const pid_t group = getpgid((pid_t)pid);
        if (group > 0 && group != proxy_group && group != getpgid(0))
            kill(-group, SIGKILL); /* the guard and its program */
        else
            kill((pid_t)pid, SIGKILL);
    }
    closedir(processes);
}

/* A place that died of a signal is a defect of otfx: the ranks it served would wait for it forever (the
 * job runs with -disable-auto-cleanup), and the other places cannot write a shared archive without it.
 * The guard ends this node's other processes and dies of the same signal, so that hydra ends the whole job
 * at once; otfx-run's last line says why (OTFX_RUN_STATUS, `ending=tool-failed`). */
static void end_job_for_dead_place(int world_rank, int signal_number)
{
    char cause[256];
    snprintf(cause, sizeof(cause),
             "the tool place on world rank %d died of signal %d (%s): the job cannot go on without it and is "
             "ended",
             world_rank, signal_number, strsignal(signal_number));
    /* For otfx-run's last line: this process's own output may not make it through hydra once the job is
     * being torn down. Written as the root writes it (a temporary file renamed). */
    const char *status_path = otfx_setting_string(OTFX_SETTING_RUN_STATUS);
    if (status_path) {
        char temporary[PATH_MAX + 32];
        snprintf(temporary, sizeof(temporary), "%s.guard-%ld", status_path, (long)getpid());
        FILE *file = fopen(temporary, "w");
        if (file) {
            fprintf(file, "ending=tool-failed\ncause=%s\nsnapshot=none\n", cause);
            if (fclose(file) != 0 || rename(temporary, status_path) != 0)
                unlink(temporary);
        }
    }
    const bool crashed = signal_number == SIGSEGV || signal_number == SIGBUS || signal_number == SIGILL ||
                         signal_number == SIGFPE || signal_number == SIGABRT || signal_number == SIGSYS;
    fprintf(stderr, "otfx-run: %s%s\n", cause,
            crashed ? "; this is a defect of otfx: please report it with the lines above" : "");
    fflush(stderr);
    struct sigaction fatal;
    memset(&fatal, 0, sizeof(fatal));
    fatal.sa_handler = SIG_DFL;
    sigemptyset(&fatal.sa_mask);
    sigaction(signal_number, &fatal, NULL);
    end_sibling_processes();
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the place's own core is the useful one */
    raise(signal_number);
    raise(SIGKILL); /* a signal the guard does not die of by default (SIGCHLD, …) */
}

static int run_guarded(char **program)
{
    if (!program[0]) {
        fputs("otfx-run --guard: no program given\n", stderr);
        return EXIT_USAGE;
    }
    struct sigaction inherited[GUARD_IGNORED];
    for (size_t i = 0; i < GUARD_IGNORED; i++) {
        struct sigaction ignore;
        memset(&ignore, 0, sizeof(ignore));
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        sigaction(guard_ignores[i], &ignore, &inherited[i]);
    }
    const char *preload = otfx_setting_string(OTFX_SETTING_GUARD_PRELOAD);
    const pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "otfx-run --guard: cannot start %s: %s\n", program[0], strerror(errno));
        return 127;
    }
    if (child == 0) {
        for (size_t i = 0; i < GUARD_IGNORED; i++)
            sigaction(guard_ignores[i], &inherited[i], NULL);
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        unsetenv("OTFX_GUARD_PRELOAD");
        execvp(program[0], program);
        fprintf(stderr, "otfx-run: cannot run %s: %s\n", program[0], strerror(errno));
        _exit(127);
    }
    /* The program's connection to hydra's proxy: closed here, so that the proxy sees it end with the
     * program. */
    const char *pmi_fd = getenv("PMI_FD");
    if (pmi_fd && *pmi_fd)
        close(atoi(pmi_fd));
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (!WIFSIGNALED(status))
        return 1;
    const int world_rank = guarded_place_rank();
    if (world_rank >= 0)
        end_job_for_dead_place(world_rank, WTERMSIG(status));
    return WTERMSIG(status);
}

/* ---- snapshots that would replace an archive ------------------------------------------------------ */

/* Whether an archive is where the places would write `path` (relative to --snapshot-dir, else the working
 * directory; ".otf2" optional, as snapshot.c resolves it): its anchor, definitions or directory. */
static bool archive_exists(const char *snapshot_dir, const char *path, char *anchor, size_t size)
{
    char base[PATH_MAX] = ".";
    if (snapshot_dir)
        snprintf(base, sizeof(base), "%s", snapshot_dir);
    else if (!getcwd(base, sizeof(base)))
        snprintf(base, sizeof(base), ".");
    char stem[PATH_MAX + 8];
    if (path[0] == '/')
        snprintf(stem, sizeof(stem), "%s", path);
    else
        snprintf(stem, sizeof(stem), "%s/%s", base, path);
    const size_t length = strlen(stem), suffix = strlen(".otf2");
    if (length > suffix && strcmp(stem + length - suffix, ".otf2") == 0)
        stem[length - suffix] = '\0';
    snprintf(anchor, size, "%s.otf2", stem);
    static const char *const parts[] = {".otf2", ".def", ""};
    for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
        char file[PATH_MAX + 16];
        struct stat info;
        snprintf(file, sizeof(file), "%s%s", stem, parts[p]);
        if (lstat(file, &info) == 0)
            return true;
    }
    return false;
}

/* A trace is never lost silently: an existing archive is refused before the job starts. */
static void refuse_existing_archive(const struct run_options *options, const char *option, const char *path)
{
    char anchor[PATH_MAX + 16];
    if (path && !options->overwrite_snapshot &&
        archive_exists(options->snapshot_dir, path, anchor, sizeof(anchor))) {
        fprintf(stderr, "otfx-run: %s: %s already exists (--overwrite-snapshot replaces it)\n", option,
                anchor);
        exit(EXIT_USAGE);
    }
}

/* ---- the running job --------------------------------------------------------------------------------- */

static volatile sig_atomic_t received_signal, signal_count;
static volatile pid_t job_pid;
static struct timespec first_signal;

/* The first SIGINT or SIGTERM goes on to mpiexec (once: hydra takes a second SIGINT as "kill everything
 * now"); another one more than a second later (a user who insists) kills the job. The same signal sent
 * twice at once (to the process and to its group, as timeout(1) does) counts once. */
static void on_signal(int signal, siginfo_t *info, void *context)
{
    (void)info;
    (void)context;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (received_signal) {
        if (now.tv_sec - first_signal.tv_sec > 1)
            signal_count++;
        return;
    }
    first_signal = now;
    received_signal = signal;
    signal_count = 1;
    if (job_pid > 0)
        kill(job_pid, signal);
}

static void catch_signals(void)
{
    static const int signals[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = on_signal;
        action.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid returns, the wait switches to polling */
        sigemptyset(&action.sa_mask);
        sigaction(signals[i], &action, NULL);
    }
}

/* The parent of process `pid` (from /proc), 0 if unknown. */
static pid_t parent_of(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *file = fopen(path, "r");
    if (!file)
        return 0;
    const size_t length = fread(stat, 1, sizeof(stat) - 1, file);
    fclose(file);
    stat[length] = '\0';
    const char *close = strrchr(stat, ')');
    int parent = 0;
    if (!close || sscanf(close + 1, " %*c %d", &parent) != 1)
        return 0;
    return (pid_t)parent;
}

/* mpiexec runs in a process group of its own: signals sent to otfx-run's group (timeout(1), a batch
 * system) reach otfx-run alone, which passes them on once. A terminal's Ctrl-C goes to the foreground
 * group: mpiexec's while it runs (it forwards it to the ranks, the root says so in OTFX_RUN_STATUS), so
 * that mpiexec may also read the terminal for the program's standard input. */
static void with_sigttou_blocked(pid_t group)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTTOU);
    sigprocmask(SIG_BLOCK, &block, &old);
    tcsetpgrp(STDIN_FILENO, group);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* In the child, before exec: its own group, in the terminal's foreground if otfx-run was there. */
static void take_terminal(void)
{
    const bool foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    setpgid(0, 0);
    if (foreground)
        with_sigttou_blocked(getpid());
}

static void give_back_terminal(void)
{
    if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == job_pid) {
        with_sigttou_blocked(getpgrp());
    }
}

/* Kills mpiexec and every process below it on this node (its proxies and their ranks). */
static void kill_job(pid_t root)
{
    pid_t family[4096];
    size_t count = 0;
    family[count++] = root;
    for (bool grew = true; grew && count < sizeof(family) / sizeof(family[0]);) {
        grew = false;
        DIR *proc = opendir("/proc");
        if (!proc)
            break;
        struct dirent *entry;
        while ((entry = readdir(proc)) && count < sizeof(family) / sizeof(family[0])) {
            char *end = NULL;
            const long pid = strtol(entry->d_name, &end, 10);
            if (*end || pid <= 0)
                continue;
            bool known = false, child = false;
            const pid_t parent = parent_of((pid_t)pid);
            for (size_t i = 0; i < count; i++) {
                known = known || family[i] == (pid_t)pid;
                child = child || family[i] == parent;
            }
            if (child && !known) {
                family[count++] = (pid_t)pid;
                grew = true;
            }
        }
        closedir(proc);
    }
    for (size_t i = 0; i < count; i++)
        kill(family[i], SIGKILL);
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Waits for mpiexec; after a signal, END_TIMEOUT_SECONDS at most (a second signal: not at all). Returns
 * its wait status; *killed when it had to be killed. */
static int wait_for_job(pid_t pid, bool *killed)
{
    int status = 0;
    double deadline = 0;
    *killed = false;
    for (;;) {
        const pid_t done = waitpid(pid, &status, received_signal ? WNOHANG : 0);
        if (done == pid)
            return status;
        if (done < 0 && errno != EINTR)
            return status;
        if (!received_signal)
            continue;
        if (!deadline)
            deadline = seconds_now() + END_TIMEOUT_SECONDS;
        if (!*killed && (signal_count > 1 || seconds_now() >= deadline)) {
            kill_job(pid);
            *killed = true;
        }
        const struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

/* What the root wrote into OTFX_RUN_STATUS (otfx/tree.h): key=value lines. */
struct job_status {
    bool present;
    char ending[32], snapshot[32];
    char cause[1024], archive[PATH_MAX + 16], error[1024];
    int exit_code;
};

static void read_status(const char *path, struct job_status *status)
{
    memset(status, 0, sizeof(*status));
    FILE *file = fopen(path, "r");
    if (!file)
        return;
    char line[PATH_MAX + 1100];
    while (fgets(line, sizeof(line), file)) {
        line[strcspn(line, "\n")] = '\0';
        char *value = strchr(line, '=');
        if (!value)
            continue;
        *value++ = '\0';
        status->present = true;
        if (strcmp(line, "ending") == 0)
            snprintf(status->ending, sizeof(status->ending), "%s", value);
        else if (strcmp(line, "snapshot") == 0)
            snprintf(status->snapshot, sizeof(status->snapshot), "%s", value);
        else if (strcmp(line, "cause") == 0)
            snprintf(status->cause, sizeof(status->cause), "%s", value);
        else if (strcmp(line, "archive") == 0)
            snprintf(status->archive, sizeof(status->archive), "%s", value);
        else if (strcmp(line, "error") == 0)
            snprintf(status->error, sizeof(status->error), "%s", value);
        else if (strcmp(line, "exit_code") == 0)
            status->exit_code = atoi(value);
    }
    fclose(file);
}

/* "the trace is in X" / "the snapshot failed: why" / "no snapshot was asked for" */
static void describe_snapshot(const struct job_status *status, const struct run_options *options, char *text,
                              size_t size)
{
    if (status->present && strcmp(status->snapshot, "written") == 0)
        snprintf(text, size, "the trace is in %s", status->archive);
    else if (status->present && strcmp(status->snapshot, "failed") == 0)
        snprintf(text, size, "the snapshot failed: %s", status->error);
    else if (!options->snapshot_at_exit && !options->snapshot_on_failure)
        snprintf(text, size,
                 "no trace was written (--snapshot-at-exit or --snapshot-on-failure asks for one)");
    else
        snprintf(text, size, "no trace was written: the places did not get to it");
}

static const char *signal_name(int signal)
{
    return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal";
}

/* One line for anything but a normal run, and the exit status. */
static int report_end(const struct run_options *options, int wait_status, bool killed,
                      const struct job_status *status)
{
    const int job_code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
    char snapshot[PATH_MAX + 1200];
    describe_snapshot(status, options, snapshot, sizeof(snapshot));
    const char *killed_note = killed ? " (the job did not end in time and was killed)" : "";
    /* A terminal's Ctrl-C reached mpiexec, not otfx-run: the root says so */
    const bool interrupted = status->present && strcmp(status->ending, "interrupted") == 0;
    if (received_signal || interrupted) {
        const int signal = received_signal           ? received_signal
                           : status->exit_code > 128 ? status->exit_code - 128
                                                     : SIGINT;
        const bool finished = status->present && strcmp(status->ending, "finished") == 0;
        fprintf(stderr, "otfx-run: interrupted by %s%s; %s%s\n", signal_name(signal),
                finished ? " after the application finished" : "", snapshot, killed_note);
        return 128 + signal;
    }
    if (status->present && strcmp(status->ending, "tool-failed") == 0) {
        fprintf(stderr, "otfx-run: %s; no trace was written\n", status->cause);
        return job_code ? job_code : 1;
    }
    if (status->present && strcmp(status->ending, "finished") != 0) {
        fprintf(stderr, "otfx-run: the application failed: %s; %s\n", status->cause, snapshot);
        return job_code ? job_code : status->exit_code ? status->exit_code : 1;
    }
    if (status->present) {
        if (strcmp(status->snapshot, "failed") == 0) {
            fprintf(stderr, "otfx-run: the application finished, but its snapshot at exit failed: %s\n",
                    status->error);
            return job_code ? job_code : 1;
        }
        return job_code;
    }
    if (job_code) {
        fprintf(stderr,
                "otfx-run: the job failed (mpiexec's exit status %d) before the places could say how; %s\n",
                job_code, snapshot);
        return job_code;
    }
    if (options->snapshot_at_exit) {
        fprintf(stderr, "otfx-run: the job ended, but the places did not confirm the snapshot at exit\n");
        return 1;
    }
    return 0;
}

/* The session file of the root: gone with a normal end; left behind by a root that died. */
static void remove_session_file(const struct run_options *options, const char *job_id)
{
    const char *dir =
        options->session_dir ? options->session_dir : otfx_setting_string(OTFX_SETTING_SESSION_DIR);
    char path[PATH_MAX + 256];
    snprintf(path, sizeof(path), "%s/otfx-session-%s.txt", dir && *dir ? dir : ".", job_id);
    unlink(path);
}

/* Runs the job and waits for it; returns otfx-run's exit status. */
static int supervise(const char **command, const struct run_options *options, const char *job_id,
                     const char *status_path)
{
    catch_signals();
    fflush(stdout);
    fflush(stderr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "otfx-run: cannot start %s: %s\n", command[0], strerror(errno));
        return 127;
    }
    if (pid == 0) {
        take_terminal();
        /* otfx-run killed outright: the job is interrupted as by SIGTERM (the places write their trace) */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127); /* otfx-run died before the line above */
        execvp(command[0], (char *const *)command);
        fprintf(stderr, "otfx-run: cannot run %s: %s\n", command[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    job_pid = pid;
    bool killed = false;
    const int wait_status = wait_for_job(pid, &killed);
    give_back_terminal();
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 127 && !received_signal) {
        struct stat info;
        if (stat(status_path, &info) != 0 || info.st_size == 0) {
            unlink(status_path);
            return 127; /* mpiexec could not be run: said so above */
        }
    }
    struct job_status status;
    read_status(status_path, &status);
    unlink(status_path);
    remove_session_file(options, job_id);
    return report_end(options, wait_status, killed, &status);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--guard") == 0)
        return run_guarded(argv + 2);
    struct run_options options = {.buffer_bytes = (size_t)OTFX_SETTING_BUFFER_DEFAULT,
                                  .reduction = otfx_setting_describe(OTFX_SETTING_REDUCTION)->default_text};
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
        for (char *c = host; *c; c++) /* the session file is named after it: file-safe characters only */
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '-' || *c == '_'))
                *c = '_';
        snprintf(job_id, sizeof(job_id), "otfx-%s-%ld", host, (long)getpid());
    }
    refuse_existing_archive(&options, "--snapshot-at-exit", options.snapshot_at_exit);
    refuse_existing_archive(&options, "--snapshot-on-failure", options.snapshot_on_failure);
    /* Where the root says how the job ended: beside the session file, which the root's node can write. */
    char status_path[PATH_MAX + 256];
    {
        const char *dir =
            options.session_dir ? options.session_dir : otfx_setting_string(OTFX_SETTING_SESSION_DIR);
        char absolute[PATH_MAX];
        if (!realpath(dir && *dir ? dir : ".", absolute))
            snprintf(absolute, sizeof(absolute), "%s", dir && *dir ? dir : ".");
        snprintf(status_path, sizeof(status_path), "%s/.otfx-run-%s.status", absolute, job_id);
        unlink(status_path); /* a stale one would tell the wrong story */
    }
    const char *mpiexec =
        options.mpiexec ? options.mpiexec : (*OTFX_RUN_MPIEXEC ? OTFX_RUN_MPIEXEC : "mpiexec");

    size_t program_args = 0;
    while (options.program[program_args])
        program_args++;
    /* mpiexec's own arguments, a -genv for every setting (3 words each) and the guard */
    const char **command = calloc(128 + program_args, sizeof(char *));
    if (!command) {
        fputs("otfx-run: out of memory\n", stderr);
        return 1;
    }
    size_t n = 0;
    command[n++] = mpiexec;
    /* An application rank that dies must not take the places with it: they write what they hold and end
     * the job themselves (otfx/tree.h, "A failed job"). */
    command[n++] = "-disable-auto-cleanup";
    command[n++] = "-n";
    command[n++] = total_ranks;
#define GENV(name, value)                                                                                    \
    do {                                                                                                     \
        command[n++] = "-genv";                                                                              \
        command[n++] = (name);                                                                               \
        command[n++] = (value);                                                                              \
    } while (0)
    GENV("OTFX_GUARD_PRELOAD", capture);
    GENV("OTFX_PLACES", place_count);
    GENV("OTFX_BUFFER", buffer);
    GENV("OTFX_REDUCTION", options.reduction);
    GENV("OTFX_FANIN", fanin_text);
    GENV("OTFX_JOB_ID", job_id);
    if (options.backpressure)
        GENV("OTFX_BACKPRESSURE", options.backpressure);
    if (options.no_record)
        GENV("OTFX_RECORD", "0");
    if (options.disable)
        GENV("OTFX_DISABLE", options.disable);
    if (options.metrics)
        GENV("OTFX_METRICS", options.metrics);
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
    if (options.snapshot_on_failure)
        GENV("OTFX_SNAPSHOT_ON_FAILURE", options.snapshot_on_failure);
    if (options.overwrite_snapshot)
        GENV("OTFX_SNAPSHOT_OVERWRITE", "1");
    if (!options.dry_run)
        GENV("OTFX_RUN_STATUS", status_path);
    if (options.filter)
        GENV("OTFX_FILTER", options.filter);
    if (options.query_memory)
        GENV("OTFX_QUERY_MEMORY", options.query_memory);
    if (options.module_timeout)
        GENV("OTFX_MODULE_TIMEOUT", options.module_timeout);
    if (options.triggers)
        GENV("OTFX_TRIGGERS", options.triggers);
    if (!getenv("MPIR_CVAR_POLLS_BEFORE_YIELD"))
        GENV("MPIR_CVAR_POLLS_BEFORE_YIELD", "10");
#undef GENV
    char *self = realpath("/proc/self/exe", NULL);
    command[n++] = self ? self : argv[0];
    command[n++] = "--guard";
    for (size_t i = 0; i < program_args; i++)
        command[n++] = options.program[i];
    command[n] = NULL;

    int status = 0;
    if (options.dry_run) {
        for (size_t i = 0; i < n; i++)
            printf("%s%s", i ? " " : "", command[i]);
        putchar('\n');
    } else {
        status = supervise(command, &options, job_id, status_path);
    }
    free(command);
    free(self);
    free(capture);
    free(options.filter);
    free(options.triggers);
    free(options.session_dir);
    free(options.snapshot_dir);
    return status;
}

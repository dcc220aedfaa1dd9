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
 * ranks become the event places inside MPI_Init. Every option is checked here, before a single rank
 * starts, so that a typo costs a clear message and exit code 2 instead of a job.
 */
#include <otfx/place.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_USAGE 2
/* One event place per this many application ranks by default. */
#define DEFAULT_RANKS_PER_PLACE 8

static const char usage[] =
    "usage: otfx-run [options] -n N [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM on N MPI ranks with mpiexec, traced by otfx: libotfx-capture.so is preloaded into the\n"
    "N application ranks (not into mpiexec), and P more ranks are the event places that hold the traces\n"
    "in memory. The program sees a world of N ranks. Each place prints a report per rank at the end.\n"
    "\n"
    "options:\n"
    "  -n, --ranks N           application ranks (required)\n"
    "  --places P              event places (default: one per 8 application ranks, at least 1; at most N)\n"
    "  --ranks-per-place K     instead of --places: P = ceil(N / K)\n"
    "  --buffer SIZE           otfx trace budget per application rank and thread, e.g. 256K, 64M, 1G\n"
    "                          (K/M/G are powers of 1024; at least 64K; default 64M)\n"
    "  --reduction STRATEGY    what a full buffer does: ring (default: drop the oldest detail), time (thin\n"
    "                          the older part), type (drop event classes in priority order), depth (drop\n"
    "                          the deepest call levels), stop (stop storing)\n"
    "  --no-record             start with recording off (the ranks run untraced until steering turns it\n"
    "                          on; steering comes with issue 5)\n"
    "  --start-paused          not available yet: needs steering (issue 5); exits with code 2\n"
    "  --filter FILE           user functions (-finstrument-functions) to record: lines 'include GLOB' /\n"
    "                          'exclude GLOB', first match wins, '#' comments (OTFX_FILTER)\n"
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
    bool no_record;
    bool dry_run;
    char *filter; /* absolute path of --filter's file, NULL without */
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
        } else if (strcmp(argument, "--no-record") == 0) {
            options->no_record = true;
        } else if (strcmp(argument, "--start-paused") == 0) {
            usage_error("--start-paused needs steering (issue 5), not available yet");
        } else if (matches(argument, "--filter")) {
            const char *file = option_value(argc, argv, &i, "--filter");
            free(options->filter);
            options->filter = realpath(file, NULL);
            if (!options->filter || access(options->filter, R_OK) != 0)
                usage_error("--filter: cannot read '%s': %s", file, strerror(errno));
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
    long places = options.places;
    if (options.ranks_per_place)
        places = (options.ranks + options.ranks_per_place - 1) / options.ranks_per_place;
    if (!places)
        places = (options.ranks + DEFAULT_RANKS_PER_PLACE - 1) / DEFAULT_RANKS_PER_PLACE;
    if (places > options.ranks) {
        fprintf(stderr, "otfx-run: %ld places for %ld application ranks: a place needs a rank to serve\n",
                places, options.ranks);
        return EXIT_USAGE;
    }
    char *capture = find_capture_library();

    char total_ranks[32], place_count[32], buffer[32];
    snprintf(total_ranks, sizeof(total_ranks), "%ld", options.ranks + places);
    snprintf(place_count, sizeof(place_count), "%ld", places);
    snprintf(buffer, sizeof(buffer), "%zu", options.buffer_bytes);
    const char *mpiexec =
        options.mpiexec ? options.mpiexec : (*OTFX_RUN_MPIEXEC ? OTFX_RUN_MPIEXEC : "mpiexec");

    size_t program_args = 0;
    while (options.program[program_args])
        program_args++;
    const char **command = calloc(32 + program_args, sizeof(char *));
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
    if (options.no_record)
        GENV("OTFX_RECORD", "0");
    if (options.filter)
        GENV("OTFX_FILTER", options.filter);
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
    return status;
}

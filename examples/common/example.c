/*
 * example.c — command line parsing and output shared by the C examples (see example.h).
 * Never instrumented: none of this is part of what the function traces are meant to show.
 */
/* access() is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "example.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NO_INSTRUMENT __attribute__((no_instrument_function))

NO_INSTRUMENT static void print_usage(const char *program, long default_iterations, long default_size)
{
    fprintf(stderr,
            "usage: %s [--iterations N] [--seconds S] [--until-file PATH]%s [--corrupt]\n"
            "  --iterations N  at least N iterations (default %ld)\n"
            "  --seconds S     and at least S seconds of running time (default 0)\n"
            "  --until-file P  and until the file P exists (checked once per iteration)\n",
            program, default_size > 0 ? " [--size N]" : "", default_iterations);
    if (default_size > 0)
        fprintf(stderr, "  --size N        problem size (default %ld)\n", default_size);
    fprintf(stderr, "  --corrupt       corrupt one value so that verification fails (for tests)\n");
}

NO_INSTRUMENT static bool parse_positive_long(const char *text, long *value)
{
    char *end = NULL;
    errno = 0;
    long parsed = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || parsed <= 0)
        return false;
    *value = parsed;
    return true;
}

NO_INSTRUMENT static bool parse_seconds(const char *text, double *value)
{
    char *end = NULL;
    errno = 0;
    double parsed = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(parsed) || parsed < 0.0)
        return false;
    *value = parsed;
    return true;
}

NO_INSTRUMENT bool example_parse_options(int argc, char **argv, const char *program, long default_iterations,
                                         long default_size, bool quiet, struct example_options *options)
{
    options->iterations = default_iterations;
    options->seconds = 0.0;
    options->size = default_size;
    options->corrupt = false;
    options->until_file = NULL;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        const char *problem = NULL;
        if (strcmp(arg, "--help") == 0) {
            problem = "";
        } else if (strcmp(arg, "--corrupt") == 0) {
            options->corrupt = true;
        } else if (strcmp(arg, "--iterations") == 0) {
            if (!value || !parse_positive_long(value, &options->iterations))
                problem = "needs a positive whole number";
            i++;
        } else if (strcmp(arg, "--seconds") == 0) {
            if (!value || !parse_seconds(value, &options->seconds))
                problem = "needs a number of seconds >= 0";
            i++;
        } else if (strcmp(arg, "--until-file") == 0) {
            if (!value || !*value)
                problem = "needs a path";
            options->until_file = value;
            i++;
        } else if (strcmp(arg, "--size") == 0 && default_size > 0) {
            if (!value || !parse_positive_long(value, &options->size))
                problem = "needs a positive whole number";
            i++;
        } else {
            problem = "is not an option";
        }
        if (problem) {
            if (!quiet) {
                if (problem[0] != '\0')
                    fprintf(stderr, "%s: '%s' %s\n", program, arg, problem);
                print_usage(program, default_iterations, default_size);
            }
            return false;
        }
    }
    return true;
}

NO_INSTRUMENT bool example_should_stop(const struct example_options *options, long iterations_done,
                                       double elapsed_seconds)
{
    return iterations_done >= options->iterations && elapsed_seconds >= options->seconds &&
           (!options->until_file || access(options->until_file, F_OK) == 0);
}

NO_INSTRUMENT void example_print(const char *format, ...)
{
    char text[4096];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(text, sizeof(text), format, arguments);
    va_end(arguments);
    if (length < 0)
        return;
    if ((size_t)length >= sizeof(text))
        text[sizeof(text) - 2] = '\n'; /* cut, but still a whole line */
    fputs(text, stdout);
    fflush(stdout);
}

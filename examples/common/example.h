/*
 * example.h — what the C examples share besides call counting: exit codes, output, and the command
 * line every one of them understands:
 *
 *   --iterations N   run at least N iterations (each program says what one iteration is)
 *   --seconds S      and keep going until at least S seconds have passed (default 0)
 *   --size N         problem size, only for programs that have one (default given by the program)
 *   --corrupt        corrupt one value of the computation so that verification must fail (tests only)
 */
#ifndef OTFX_EXAMPLES_EXAMPLE_H
#define OTFX_EXAMPLES_EXAMPLE_H

#include <stdbool.h>

/* Exit codes shared by the examples; 3 is what the tests expect from a failed verification. */
enum {
    EXAMPLE_EXIT_OK = 0,
    EXAMPLE_EXIT_USAGE = 2,
    EXAMPLE_EXIT_VERIFICATION_FAILED = 3,
};

struct example_options {
    long iterations;
    double seconds;
    long size; /* stays 0 for programs without a problem size */
    bool corrupt;
    const char *until_file; /* NULL, or: keep running until this file exists (end-to-end tests) */
};

/* Fills options from argv. default_size 0 means the program has no --size option. On an error or
 * --help it prints the usage (to stderr when quiet is false; pass quiet on all ranks but one so the
 * message appears once) and returns false: the caller then ends with EXAMPLE_EXIT_USAGE. */
bool example_parse_options(int argc, char **argv, const char *program, long default_iterations,
                           long default_size, bool quiet, struct example_options *options);

/* The stop rule every example applies on rank 0 after each iteration. */
bool example_should_stop(const struct example_options *options, long iterations_done, double elapsed_seconds);

/*
 * Prints one or more whole lines to stdout with a single write and flushes. MPICH makes stdout
 * unbuffered, and gcc turns printf("text\n") into puts(), which writes the text and the newline
 * separately: mpiexec then glues other ranks' output into the middle of a line. Every line the
 * examples print on stdout goes through here. format must end with a newline.
 */
void example_print(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif

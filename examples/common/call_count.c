/*
 * call_count.c — per-process MPI call counters behind MPI_COUNTED (see call_count.h).
 *
 * Compiled without -finstrument-functions (and marked no_instrument_function in case it ever is) so
 * that the counting itself never shows up in a function trace.
 */
#include "call_count.h"
#include "example.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_INSTRUMENT __attribute__((no_instrument_function))

/* Far more distinct MPI functions than any example uses; running out is a programming error. */
enum { MAX_COUNTED_FUNCTIONS = 64, REPORT_BUFFER_SIZE = 2048 };

struct call_counter {
    const char *function_name;
    long calls;
};

static struct call_counter counters[MAX_COUNTED_FUNCTIONS];
static int counter_count;

NO_INSTRUMENT static struct call_counter *find_counter(const char *function_name)
{
    for (int i = 0; i < counter_count; i++) {
        /* Pointer equality catches the common case (same literal) without a string compare. */
        if (counters[i].function_name == function_name ||
            strcmp(counters[i].function_name, function_name) == 0)
            return &counters[i];
    }
    return NULL;
}

NO_INSTRUMENT void call_count_record(const char *function_name)
{
    struct call_counter *counter = find_counter(function_name);
    if (!counter) {
        if (counter_count == MAX_COUNTED_FUNCTIONS) {
            fprintf(stderr, "call_count: more than %d distinct MPI functions\n", MAX_COUNTED_FUNCTIONS);
            abort();
        }
        counter = &counters[counter_count++];
        counter->function_name = function_name;
        counter->calls = 0;
    }
    counter->calls++;
}

NO_INSTRUMENT static int compare_by_name(const void *a, const void *b)
{
    const struct call_counter *left = a;
    const struct call_counter *right = b;
    return strcmp(left->function_name, right->function_name);
}

NO_INSTRUMENT void call_count_print(int world_rank)
{
    struct call_counter sorted[MAX_COUNTED_FUNCTIONS];
    char line[REPORT_BUFFER_SIZE];
    size_t used = 0;

    memcpy(sorted, counters, sizeof(counters[0]) * (size_t)counter_count);
    qsort(sorted, (size_t)counter_count, sizeof(sorted[0]), compare_by_name);

    /* Built in a buffer and written at once so that lines of different ranks cannot interleave. */
    int written = snprintf(line, sizeof(line), "expected-calls: %d", world_rank);
    if (written > 0)
        used = (size_t)written;
    for (int i = 0; i < counter_count; i++) {
        if (sorted[i].calls == 0)
            continue;
        written =
            snprintf(line + used, sizeof(line) - used, " %s=%ld", sorted[i].function_name, sorted[i].calls);
        if (written < 0 || (size_t)written >= sizeof(line) - used) {
            fprintf(stderr, "call_count: report line longer than %d bytes\n", REPORT_BUFFER_SIZE);
            abort();
        }
        used += (size_t)written;
    }
    example_print("%s\n", line);
}

NO_INSTRUMENT int call_count_finalize(int world_rank, int exit_code)
{
    call_count_record("MPI_Finalize");
    call_count_print(world_rank);
    MPI_Finalize();
    return exit_code;
}

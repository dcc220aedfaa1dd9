/*
 * filter_file.h — the user-function filter file (OTFX_FILTER, otfx-run --filter), parsed in one place:
 * the capture library reads it inside MPI_Init, the launcher checks it before it starts the job, so
 * that a malformed file is refused at once, not on every rank of a running job.
 *
 * Lines: `include GLOB` or `exclude GLOB` (fnmatch patterns, first match wins), blank lines and lines
 * starting with '#' (after blanks) are ignored. A line longer than OTFX_FILTER_MAX_LINE bytes, a
 * keyword other than include/exclude, a missing or extra word, or a pattern with a control character
 * is an error that names the line.
 */
#ifndef OTFX_CAPTURE_FILTER_FILE_H
#define OTFX_CAPTURE_FILTER_FILE_H

#include <stdbool.h>
#include <stddef.h>

#define OTFX_FILTER_MAX_LINE 1024

typedef struct otfx_filter_rule {
    bool include;
    char *pattern;
} otfx_filter_rule;

/* Reads the file at `path`. On success *rules (malloc'd, free with otfx_filter_free) holds *count
 * rules in file order. Returns false with "PATH line N: why" (or why the file cannot be read) in
 * `error`; nothing is allocated then. */
bool otfx_filter_read(const char *path, otfx_filter_rule **rules, size_t *count, char *error,
                      size_t error_size);
void otfx_filter_free(otfx_filter_rule *rules, size_t count);

#endif

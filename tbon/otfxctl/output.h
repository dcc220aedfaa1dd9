/*
 * output.h — how otfxctl prints answers: record lines as tables for people (durations, fractions and
 * sizes made readable) or as JSON lines (--json: one object per line, its type under "record").
 */
#ifndef OTFXCTL_OUTPUT_H
#define OTFXCTL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* Prints a payload of record lines on stdout: JSON lines, or a table per run of lines of one type. */
void print_payload(const char *payload, size_t length, bool json);
/* An ERROR frame's lines after its "error" line: every failed place's reason on stderr, then the lines
 * as a reply's. */
void print_failure_details(const char *payload, size_t length);
/* A value for people: durations in ns, fractions and byte counts made readable, control characters
 * escaped. */
void humanize(const char *key, const char *value, char *out, size_t size);

#endif

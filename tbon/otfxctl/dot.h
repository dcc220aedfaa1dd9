/*
 * dot.h — the reply of `structure` as a Graphviz file (otfxctl structure --dot FILE).
 */
#ifndef OTFXCTL_DOT_H
#define OTFXCTL_DOT_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the record lines of a structure reply as a Graphviz digraph to `path`; false when the file
 * cannot be written. */
bool write_structure_dot(const char *payload, size_t length, const char *path);

#endif

/* filter_file.c — the user-function filter file (see filter_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "filter_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void otfx_filter_free(otfx_filter_rule *rules, size_t count)
{
    for (size_t i = 0; rules && i < count; i++)
        free(rules[i].pattern);
    free(rules);
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits `text` (one line without its end) into at most `max` words; returns how many, max + 1 when
 * there are more. */
static size_t split(char *text, char **words, size_t max)
{
    size_t n = 0;
    for (char *p = text;;) {
        while (is_blank(*p))
            p++;
        if (!*p)
            return n;
        if (n == max)
            return max + 1;
        words[n++] = p;
        while (*p && !is_blank(*p))
            p++;
        if (*p)
            *p++ = '\0';
    }
}

bool otfx_filter_read(const char *path, otfx_filter_rule **rules, size_t *count, char *error,
                      size_t error_size)
{
    *rules = NULL;
    *count = 0;
    FILE *file = fopen(path, "r");
    if (!file) {
        snprintf(error, error_size, "cannot open '%s': %s", path, strerror(errno));
        return false;
    }
    otfx_filter_rule *list = NULL;
    size_t used = 0;
    char line[OTFX_FILTER_MAX_LINE + 2];
    unsigned number = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, file)) {
        number++;
        const size_t length = strlen(line);
        if (length == sizeof line - 1 && line[length - 1] != '\n') {
            snprintf(error, error_size, "%s line %u: longer than %d bytes", path, number,
                     OTFX_FILTER_MAX_LINE);
            ok = false;
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *text = line;
        while (is_blank(*text))
            text++;
        if (text[0] == '\0' || text[0] == '#')
            continue;
        for (const unsigned char *c = (const unsigned char *)text; *c; c++)
            if ((*c < 0x20 && *c != '\t') || *c == 0x7f) {
                snprintf(error, error_size, "%s line %u: a control character", path, number);
                ok = false;
                break;
            }
        if (!ok)
            break;
        char *words[2];
        const size_t n = split(text, words, 2);
        if (n != 2 || (strcmp(words[0], "include") != 0 && strcmp(words[0], "exclude") != 0)) {
            snprintf(error, error_size, "%s line %u: want 'include GLOB' or 'exclude GLOB'", path, number);
            ok = false;
            break;
        }
        otfx_filter_rule *bigger = realloc(list, (used + 1) * sizeof *bigger);
        char *pattern = strdup(words[1]);
        if (bigger)
            list = bigger;
        if (!bigger || !pattern) {
            free(pattern);
            snprintf(error, error_size, "%s: out of memory", path);
            ok = false;
            break;
        }
        list[used++] = (otfx_filter_rule){strcmp(words[0], "include") == 0, pattern};
    }
    if (ok && ferror(file)) {
        snprintf(error, error_size, "cannot read '%s': %s", path, strerror(errno));
        ok = false;
    }
    fclose(file);
    if (!ok) {
        otfx_filter_free(list, used);
        return false;
    }
    *rules = list;
    *count = used;
    return true;
}

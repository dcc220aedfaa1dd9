/*
 * output.c — otfxctl's output (output.h): record lines as tables or JSON lines.
 */
#define _GNU_SOURCE
#include "output.h"

#include <otfx/protocol.h>
#include <otfx/support/growth.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_json_number(const char *s)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void print_json_line(const otfx_kv_line *kv)
{
    fputs("{\"record\":", stdout);
    json_string(stdout, kv->type);
    for (size_t i = 0; i < kv->count; i++) {
        fputc(',', stdout);
        json_string(stdout, kv->fields[i].key);
        fputc(':', stdout);
        if (is_json_number(kv->fields[i].value))
            fputs(kv->fields[i].value, stdout);
        else
            json_string(stdout, kv->fields[i].value);
    }
    fputs("}\n", stdout);
}

static bool ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A value for people: durations in ns, fractions and byte counts made readable. */
void humanize(const char *key, const char *value, char *out, size_t size)
{
    char *end;
    errno = 0;
    const double number = strtod(value, &end);
    const bool numeric = *value && *end == '\0' && errno == 0 && is_json_number(value);
    if (numeric && (ends_with(key, "_ns") || strcmp(key, "duration") == 0)) {
        const double abs = number < 0 ? -number : number;
        if (abs >= 1e9)
            snprintf(out, size, "%.3fs", number / 1e9);
        else if (abs >= 1e6)
            snprintf(out, size, "%.3fms", number / 1e6);
        else if (abs >= 1e3)
            snprintf(out, size, "%.3fus", number / 1e3);
        else
            snprintf(out, size, "%sns", value);
    } else if (numeric && (strcmp(key, "fill") == 0 || strcmp(key, "share") == 0 ||
                           ends_with(key, "_share") || ends_with(key, "_fraction"))) {
        snprintf(out, size, "%.1f%%", number * 100.0);
    } else if (numeric &&
               (ends_with(key, "_bytes") || strncmp(key, "buffer_", 7) == 0 || strcmp(key, "bytes") == 0) &&
               number >= 1024) {
        if (number >= 1024.0 * 1024 * 1024)
            snprintf(out, size, "%.1fGiB", number / (1024.0 * 1024 * 1024));
        else if (number >= 1024.0 * 1024)
            snprintf(out, size, "%.1fMiB", number / (1024.0 * 1024));
        else
            snprintf(out, size, "%.1fKiB", number / 1024.0);
    } else if (!*value) {
        snprintf(out, size, "-");
    } else {
        /* control characters would wreck the table: shown escaped */
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)value; *p && n + 5 < size; p++) {
            if (*p >= 0x20 && *p != 0x7f)
                out[n++] = (char)*p;
            else if (*p == '\t' || *p == '\n')
                n += (size_t)snprintf(out + n, size - n, "\\%c", *p == '\t' ? 't' : 'n');
            else
                n += (size_t)snprintf(out + n, size - n, "\\x%02x", *p);
        }
        out[n] = '\0';
    }
}

enum { TABLE_MAX_WIDTH = 160, BLOCK_WRAP = 110 };

typedef struct table {
    char type[32];
    size_t rows, columns;
    char keys[OTFX_KV_MAX_FIELDS * 2][32];
    char ***cells; /* [row][column], NULL: empty */
    size_t row_capacity;
} table;

static size_t table_column(table *t, const char *key)
{
    for (size_t c = 0; c < t->columns; c++)
        if (strcmp(t->keys[c], key) == 0)
            return c;
    if (t->columns == sizeof t->keys / sizeof t->keys[0])
        return SIZE_MAX;
    snprintf(t->keys[t->columns], sizeof t->keys[0], "%s", key);
    return t->columns++;
}

static void table_add(table *t, const otfx_kv_line *kv)
{
    if (!otfx_reserve((void **)&t->cells, &t->row_capacity, t->rows + 1, sizeof *t->cells, 16))
        return;
    char **row = calloc(sizeof t->keys / sizeof t->keys[0], sizeof *row);
    if (!row)
        return;
    for (size_t i = 0; i < kv->count; i++) {
        const size_t c = table_column(t, kv->fields[i].key);
        if (c == SIZE_MAX || row[c])
            continue;
        char value[256];
        humanize(kv->fields[i].key, kv->fields[i].value, value, sizeof value);
        row[c] = strdup(value);
    }
    t->cells[t->rows++] = row;
}

static size_t display_width(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80; /* UTF-8 continuation bytes take no column */
    return n;
}

/* "12", "-3", "1.5", "25.0%", "3.000ms", "16.0MiB": starts like a number */
static bool looks_numeric(const char *cell)
{
    if (cell[0] == '-' && cell[1] == '\0')
        return true; /* the empty cell */
    const char *p = cell[0] == '-' ? cell + 1 : cell;
    return *p >= '0' && *p <= '9';
}

static void table_flush(table *t, bool *first_output)
{
    if (t->rows == 0)
        return;
    if (!*first_output)
        fputc('\n', stdout);
    *first_output = false;
    size_t width[sizeof t->keys / sizeof t->keys[0]], total = 0;
    for (size_t c = 0; c < t->columns; c++) {
        width[c] = display_width(t->keys[c]);
        for (size_t r = 0; r < t->rows; r++)
            if (t->cells[r][c] && display_width(t->cells[r][c]) > width[c])
                width[c] = display_width(t->cells[r][c]);
        total += width[c] + 2;
    }
    if (t->rows == 1 || total > TABLE_MAX_WIDTH) {
        /* one record, or too wide for a table: "type  key=value  key=value", wrapped */
        for (size_t r = 0; r < t->rows; r++) {
            size_t column = display_width(t->type);
            fputs(t->type, stdout);
            for (size_t c = 0; c < t->columns; c++) {
                if (!t->cells[r][c])
                    continue;
                const size_t field = display_width(t->keys[c]) + 1 + display_width(t->cells[r][c]);
                if (column > 4 && column + 2 + field > BLOCK_WRAP) {
                    fputs("\n   ", stdout);
                    column = 3;
                }
                printf("  %s=%s", t->keys[c], t->cells[r][c]);
                column += 2 + field;
            }
            fputc('\n', stdout);
        }
    } else {
        /* a column of numbers is right-aligned, header included */
        bool numeric[sizeof t->keys / sizeof t->keys[0]];
        for (size_t c = 0; c < t->columns; c++) {
            numeric[c] = true;
            for (size_t r = 0; r < t->rows && numeric[c]; r++)
                numeric[c] = !t->cells[r][c] || looks_numeric(t->cells[r][c]);
        }
        printf("%s (%zu)\n", t->type, t->rows);
        for (size_t r = 0; r <= t->rows; r++) {
            for (size_t c = 0; c < t->columns; c++) {
                const char *cell = r == 0 ? t->keys[c] : t->cells[r - 1][c] ? t->cells[r - 1][c] : "-";
                const int pad = (int)(width[c] - display_width(cell));
                if (numeric[c])
                    printf("  %*s%s", pad, "", cell);
                else if (c + 1 < t->columns)
                    printf("  %s%*s", cell, pad, "");
                else
                    printf("  %s", cell); /* no trailing blanks */
            }
            fputc('\n', stdout);
        }
    }
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t c = 0; c < sizeof t->keys / sizeof t->keys[0]; c++)
            free(t->cells[r][c]);
        free(t->cells[r]);
    }
    free(t->cells);
    memset(t, 0, sizeof *t);
}

/* Prints a payload of record lines: JSON lines, or a table per run of lines of one type. */
void print_payload(const char *payload, size_t length, bool json)
{
    table t;
    memset(&t, 0, sizeof t);
    bool first_output = true;
    size_t offset = 0, line_length;
    const char *line;
    while (otfx_kv_next_line(payload, length, &offset, &line, &line_length)) {
        if (line_length == 0)
            continue;
        otfx_kv_line kv;
        if (!otfx_kv_parse(line, line_length, &kv)) {
            fprintf(stderr, "otfxctl: a malformed line in the answer: %.*s\n",
                    (int)(line_length > 200 ? 200 : line_length), line);
            continue;
        }
        if (json) {
            print_json_line(&kv);
        } else {
            if (t.rows && strcmp(t.type, kv.type) != 0)
                table_flush(&t, &first_output);
            snprintf(t.type, sizeof t.type, "%s", kv.type);
            table_add(&t, &kv);
        }
        otfx_kv_line_free(&kv);
    }
    table_flush(&t, &first_output);
    fflush(stdout);
}

/* An ERROR frame's lines after its "error" line (the places' lines, a summary): every failed place's
 * reason on stderr, then the lines as a reply's, so plain output says as much as --json. */
void print_failure_details(const char *payload, size_t length)
{
    const char *rest = memchr(payload, '\n', length);
    if (!rest)
        return;
    rest++;
    const size_t rest_length = length - (size_t)(rest - payload);
    size_t offset = 0, line_length;
    const char *line;
    while (otfx_kv_next_line(rest, rest_length, &offset, &line, &line_length)) {
        otfx_kv_line kv;
        if (line_length == 0 || !otfx_kv_parse(line, line_length, &kv))
            continue;
        const char *why = otfx_kv_get(&kv, "error"), *ok = otfx_kv_get(&kv, "ok");
        if (why && (!ok || strcmp(ok, "0") == 0)) {
            const char *index = otfx_kv_get(&kv, "index");
            fprintf(stderr, "otfxctl:   %s %s: ", kv.type, index ? index : "?");
            for (const unsigned char *p = (const unsigned char *)why; *p; p++)
                fputc(*p >= 0x20 && *p != 0x7f ? *p : '?', stderr);
            fputc('\n', stderr);
        }
        otfx_kv_line_free(&kv);
    }
    if (rest_length)
        print_payload(rest, rest_length, false);
}

/*
 * otfx/settings.h — every OTFX_* environment setting, read once and checked (static library
 * otfx_settings: C11, no MPI).
 *
 * The settings are the rows of capture/settings/settings.tsv: name, type, accepted values, default,
 * range, who reads it, the message for an invalid value and a help line. capture/gen/gen_settings.py
 * makes the ids (otfx/settings_table.h: OTFX_BUFFER is OTFX_SETTING_BUFFER), the descriptors, and
 * docs/settings.md from it; otfx-run --help prints the same descriptors.
 *
 * The first getter (or otfx_settings_load) copies every setting out of the environment and checks it
 * against its row: later setenv calls of the application change nothing, and no thread of ours calls
 * getenv while the application might call setenv. An empty value counts as unset. A value that breaks
 * its row gets a problem (the row's message with the value in it) and its getter answers the default:
 * the reader decides what a problem means (the ranks and places stop the job in MPI_Init, exit 2).
 *
 * A getter of the wrong type, or of a test point (kind "test": read those through otfx/testpoint.h),
 * is a programming error: it prints why and aborts.
 */
#ifndef OTFX_SETTINGS_H
#define OTFX_SETTINGS_H

#include <otfx/settings_table.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum otfx_setting_type {
    OTFX_SETTING_TYPE_BOOL,     /* 0 or 1 */
    OTFX_SETTING_TYPE_INTEGER,  /* decimal, within the range */
    OTFX_SETTING_TYPE_SIZE,     /* otfx_settings_parse_size, within the range */
    OTFX_SETTING_TYPE_DURATION, /* seconds, fractions allowed, within the range */
    OTFX_SETTING_TYPE_REAL,     /* a number within the range */
    OTFX_SETTING_TYPE_STRING,   /* anything */
    OTFX_SETTING_TYPE_ENUM,     /* one of the values */
    OTFX_SETTING_TYPE_LIST,     /* a comma list of the values */
    OTFX_SETTING_TYPE_RATE,     /* CALLS:NS (both above 0), or 0 / off */
} otfx_setting_type;

enum otfx_setting_reader {
    OTFX_READER_RANK = 1u << 0,     /* the application ranks (libotfx-capture) */
    OTFX_READER_PLACE = 1u << 1,    /* the tool places, the root among them */
    OTFX_READER_LAUNCHER = 1u << 2, /* otfx-run and its guard */
    OTFX_READER_CLIENT = 1u << 3,   /* otfxctl, otfx-gui */
};

typedef enum otfx_setting_kind {
    OTFX_SETTING_KIND_USER,     /* for users (otfx-run sets most from its options) */
    OTFX_SETTING_KIND_INTERNAL, /* otfx-run sets it for its own processes */
    OTFX_SETTING_KIND_TEST,     /* a test point (otfx/testpoint.h): never set in real runs */
} otfx_setting_kind;

/* One row of settings.tsv. Range bounds: integers and sizes in min/max, durations and reals in
 * min_real/max_real; an open end excludes its bound. */
typedef struct otfx_setting_info {
    const char *name;
    otfx_setting_type type;
    const char *const *values; /* enum and list settings */
    unsigned value_count;
    const char *default_text; /* NULL: no default (unset means something of its own, see help) */
    bool has_min, min_open, has_max, max_open;
    long long min, max;
    double min_real, max_real;
    unsigned readers; /* enum otfx_setting_reader bits */
    otfx_setting_kind kind;
    const char *option;    /* the otfx-run option that sets it, NULL if none */
    const char *problem;   /* the message for an invalid value, "{}" standing for the value */
    const char *too_small; /* the message for a size below its range; NULL: problem */
    const char *help;
} otfx_setting_info;

/* Reads and checks every setting. Called by the first getter; call it again only when nothing else
 * runs (tests, a program that changed its own environment before starting). */
void otfx_settings_load(void);

const otfx_setting_info *otfx_setting_describe(otfx_setting id);

/* Whether the variable is set to a non-empty value (valid or not). */
bool otfx_setting_is_set(otfx_setting id);
/* The value as set (the library's copy), NULL when unset. */
const char *otfx_setting_text(otfx_setting id);
/* The message for an invalid value (e.g. "OTFX_FANIN must be a fan-in of 2 or more, not 1"), NULL
 * when the setting is unset or valid. */
const char *otfx_setting_problem(otfx_setting id);

/* The typed value: the one set when it is valid, else the default (0, NULL or -1 without one). */
bool otfx_setting_bool(otfx_setting id);
long long otfx_setting_integer(otfx_setting id);
size_t otfx_setting_size(otfx_setting id);
double otfx_setting_seconds(otfx_setting id);
const char *otfx_setting_string(otfx_setting id);
/* enum: the index of the value (OTFX_SETTING_<NAME>_<VALUE>), -1 when unset without a default. */
int otfx_setting_choice(otfx_setting id);
/* list: one bit (1u << OTFX_SETTING_<NAME>_<VALUE>) per value named; 0 when unset. */
uint32_t otfx_setting_list(otfx_setting id);
/* rate: false when off (0 or off), else true with both thresholds. */
bool otfx_setting_rate(otfx_setting id, uint64_t *calls, uint64_t *ns);

/* Whether `text` would be a valid value of the setting (otfx-run checks its options with it). */
bool otfx_setting_accepts(otfx_setting id, const char *text);

/* Parses a size: a positive integer with an optional suffix K, M or G (powers of 1024, an optional
 * trailing "B" or "iB" allowed, case-insensitive): "65536", "256K", "64M", "1GiB". Returns 0 and sets
 * *bytes, or -1 for anything else (empty, negative, garbage, overflow). */
int otfx_settings_parse_size(const char *text, size_t *bytes);

/* Prints the settings of these kinds (bits 1u << otfx_setting_kind), each with its option, default
 * and help, indented for a --help text of `width` columns. */
void otfx_settings_print_help(FILE *out, unsigned kinds, int width);

#ifdef __cplusplus
}
#endif
#endif

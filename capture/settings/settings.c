/*
 * settings.c — the settings of settings.tsv read once from the environment, checked, and answered by
 * type (otfx/settings.h), and the test points (otfx/testpoint.h). No MPI and no otfx inside: otfx-run
 * links it as well as libotfx-capture and the places.
 */
#include "settings_internal.h"

#include <otfx/testpoint.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct setting_state {
    char *text;    /* our copy of the value, NULL when unset */
    char *problem; /* why the value is invalid, NULL when unset or valid */
    bool from_default;
    union {
        bool flag;
        long long integer;
        size_t size;
        double real;
        int choice;
        uint32_t list;
        struct {
            uint64_t calls, ns;
        } rate;
    } value;
};

static struct setting_state states[OTFX_SETTING_COUNT];
static pthread_once_t first_load = PTHREAD_ONCE_INIT;

int otfx_settings_parse_size(const char *text, size_t *bytes)
{
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || value == 0)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return -1;
    if (value > (SIZE_MAX >> shift))
        return -1;
    *bytes = (size_t)value << shift;
    return 0;
}

static bool within_integer(const otfx_setting_info *info, long long value)
{
    if (info->has_min && (info->min_open ? value <= info->min : value < info->min))
        return false;
    return !info->has_max || (info->max_open ? value < info->max : value <= info->max);
}

/* Written so that NaN is outside every range. */
static bool within_real(const otfx_setting_info *info, double value)
{
    if (value != value)
        return false;
    if (info->has_min && !(info->min_open ? value > info->min_real : value >= info->min_real))
        return false;
    return !info->has_max || (info->max_open ? value < info->max_real : value <= info->max_real);
}

static int value_index(const otfx_setting_info *info, const char *text, size_t length)
{
    for (unsigned i = 0; i < info->value_count; i++)
        if (strlen(info->values[i]) == length && strncmp(text, info->values[i], length) == 0)
            return (int)i;
    return -1;
}

/* Parses `text` as the row says into *state's value. Returns NULL when valid, else the message
 * (problem or too_small) to fill in. */
static const char *parse_value(const otfx_setting_info *info, const char *text, struct setting_state *state)
{
    char *end = NULL;
    switch (info->type) {
    case OTFX_SETTING_TYPE_BOOL:
        if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0)
            return info->problem;
        state->value.flag = text[0] == '1';
        return NULL;
    case OTFX_SETTING_TYPE_INTEGER: {
        errno = 0;
        const long long value = strtoll(text, &end, 10);
        if (errno || end == text || *end || !within_integer(info, value))
            return info->problem;
        state->value.integer = value;
        return NULL;
    }
    case OTFX_SETTING_TYPE_SIZE: {
        size_t bytes = 0;
        if (otfx_settings_parse_size(text, &bytes) != 0 || bytes > (size_t)LLONG_MAX)
            return info->problem;
        if (!within_integer(info, (long long)bytes))
            return info->too_small && info->has_min && (long long)bytes < info->min ? info->too_small
                                                                                    : info->problem;
        state->value.size = bytes;
        return NULL;
    }
    case OTFX_SETTING_TYPE_DURATION:
    case OTFX_SETTING_TYPE_REAL: {
        errno = 0;
        const double value = strtod(text, &end);
        if (errno || end == text || *end || !within_real(info, value))
            return info->problem;
        state->value.real = value;
        return NULL;
    }
    case OTFX_SETTING_TYPE_STRING:
        return NULL;
    case OTFX_SETTING_TYPE_ENUM: {
        const int index = value_index(info, text, strlen(text));
        if (index < 0)
            return info->problem;
        state->value.choice = index;
        return NULL;
    }
    case OTFX_SETTING_TYPE_LIST: {
        uint32_t bits = 0;
        /* A trailing comma ends the list; an empty item elsewhere is no value. */
        for (const char *item = text; item && *item;) {
            const char *comma = strchr(item, ',');
            const size_t length = comma ? (size_t)(comma - item) : strlen(item);
            const int index = value_index(info, item, length);
            if (index < 0)
                return info->problem;
            bits |= 1u << index;
            item = comma ? comma + 1 : NULL;
        }
        state->value.list = bits;
        return NULL;
    }
    case OTFX_SETTING_TYPE_RATE: {
        if (strcmp(text, "0") == 0 || strcmp(text, "off") == 0) {
            state->value.rate.calls = state->value.rate.ns = 0;
            return NULL;
        }
        const unsigned long long calls = strtoull(text, &end, 10);
        if (end == text || *end != ':')
            return info->problem;
        const char *ns_text = end + 1;
        const unsigned long long ns = strtoull(ns_text, &end, 10);
        if (end == ns_text || *end || calls == 0 || ns == 0)
            return info->problem;
        state->value.rate.calls = calls;
        state->value.rate.ns = ns;
        return NULL;
    }
    }
    return info->problem;
}

/* The row's message with every "{}" replaced by the value. */
static char *fill_in(const char *message, const char *value)
{
    size_t length = 1;
    for (const char *c = message; *c; c++)
        length += c[0] == '{' && c[1] == '}' ? strlen(value) : 1;
    char *text = malloc(length);
    if (!text)
        return NULL;
    char *out = text;
    for (const char *c = message; *c; c++) {
        if (c[0] == '{' && c[1] == '}') {
            out = stpcpy(out, value);
            c++;
        } else {
            *out++ = *c;
        }
    }
    *out = '\0';
    return text;
}

static void load(void)
{
    for (int id = 0; id < OTFX_SETTING_COUNT; id++) {
        const otfx_setting_info *info = &otfx_setting_table[id];
        struct setting_state *state = &states[id];
        free(state->text);
        free(state->problem);
        memset(state, 0, sizeof(*state));
        if (info->type == OTFX_SETTING_TYPE_ENUM)
            state->value.choice = -1;
        /* The generator checked every default against its row. */
        if (info->default_text)
            parse_value(info, info->default_text, state);
        const char *value = getenv(info->name);
        if (!value || !*value)
            continue;
        state->text = strdup(value);
        if (!state->text) {
            fprintf(stderr, "otfx: out of memory reading %s: its default is used\n", info->name);
            continue;
        }
        struct setting_state parsed = *state;
        const char *message = parse_value(info, state->text, &parsed);
        if (!message) {
            state->value = parsed.value;
            continue;
        }
        state->problem = fill_in(message, state->text);
        if (!state->problem)
            state->problem = strdup(info->name); /* out of memory: at least say which */
    }
}

/* Set by the first load when otfx_settings_load caused it (no second reading needed then). */
static bool first_load_now;

static void load_first(void)
{
    load();
    first_load_now = true;
}

void otfx_settings_load(void)
{
    first_load_now = false;
    pthread_once(&first_load, load_first);
    if (!first_load_now)
        load();
}

static void ensure_loaded(void)
{
    pthread_once(&first_load, load_first);
}

const otfx_setting_info *otfx_setting_describe(otfx_setting id)
{
    return &otfx_setting_table[id];
}

static _Noreturn void misuse(otfx_setting id, const char *what)
{
    fprintf(stderr, "otfx: %s read %s: a defect of otfx\n", otfx_setting_table[id].name, what);
    abort();
}

/* The state of `id` after checking that the caller reads it as its row says. */
static const struct setting_state *typed(otfx_setting id, otfx_setting_type type, bool testpoint)
{
    if ((unsigned)id >= OTFX_SETTING_COUNT)
        misuse(0, "with an id out of range");
    const otfx_setting_info *info = &otfx_setting_table[id];
    if (info->type != type)
        misuse(id, "as another type than settings.tsv gives it");
    if ((info->kind == OTFX_SETTING_KIND_TEST) != testpoint)
        misuse(id,
               testpoint ? "as a test point, which it is not" : "outside otfx/testpoint.h (a test point)");
    ensure_loaded();
    return &states[id];
}

bool otfx_setting_is_set(otfx_setting id)
{
    ensure_loaded();
    return states[id].text != NULL;
}

const char *otfx_setting_text(otfx_setting id)
{
    ensure_loaded();
    return states[id].text;
}

const char *otfx_setting_problem(otfx_setting id)
{
    ensure_loaded();
    return states[id].problem;
}

bool otfx_setting_bool(otfx_setting id)
{
    return typed(id, OTFX_SETTING_TYPE_BOOL, false)->value.flag;
}

long long otfx_setting_integer(otfx_setting id)
{
    return typed(id, OTFX_SETTING_TYPE_INTEGER, false)->value.integer;
}

size_t otfx_setting_size(otfx_setting id)
{
    return typed(id, OTFX_SETTING_TYPE_SIZE, false)->value.size;
}

double otfx_setting_seconds(otfx_setting id)
{
    return typed(id, OTFX_SETTING_TYPE_DURATION, false)->value.real;
}

const char *otfx_setting_string(otfx_setting id)
{
    const struct setting_state *state = typed(id, OTFX_SETTING_TYPE_STRING, false);
    return state->text ? state->text : otfx_setting_table[id].default_text;
}

int otfx_setting_choice(otfx_setting id)
{
    return typed(id, OTFX_SETTING_TYPE_ENUM, false)->value.choice;
}

uint32_t otfx_setting_list(otfx_setting id)
{
    return typed(id, OTFX_SETTING_TYPE_LIST, false)->value.list;
}

bool otfx_setting_rate(otfx_setting id, uint64_t *calls, uint64_t *ns)
{
    const struct setting_state *state = typed(id, OTFX_SETTING_TYPE_RATE, false);
    *calls = state->value.rate.calls;
    *ns = state->value.rate.ns;
    return *calls != 0;
}

bool otfx_setting_accepts(otfx_setting id, const char *text)
{
    struct setting_state scratch = {0};
    return text && *text && parse_value(&otfx_setting_table[id], text, &scratch) == NULL;
}

/* ---- test points ------------------------------------------------------------------------------- */

/* A test point's state once it is known to be set; an invalid value is reported once. */
static const struct setting_state *testpoint(otfx_setting id, otfx_setting_type type)
{
    static atomic_bool reported[OTFX_SETTING_COUNT];
    const struct setting_state *state = typed(id, type, true);
    if (!state->text)
        return NULL;
    if (state->problem) {
        if (!atomic_exchange(&reported[id], true))
            fprintf(stderr, "otfx: %s\n", state->problem);
        return NULL;
    }
    return state;
}

bool otfx_testpoint_enabled(otfx_setting id)
{
    const struct setting_state *state = testpoint(id, OTFX_SETTING_TYPE_BOOL);
    return state && state->value.flag;
}

bool otfx_testpoint_integer(otfx_setting id, long long *value)
{
    const struct setting_state *state = testpoint(id, OTFX_SETTING_TYPE_INTEGER);
    if (state)
        *value = state->value.integer;
    return state != NULL;
}

const char *otfx_testpoint_string(otfx_setting id)
{
    const struct setting_state *state = testpoint(id, OTFX_SETTING_TYPE_STRING);
    return state ? state->text : NULL;
}

bool otfx_testpoint_real(otfx_setting id, double *value)
{
    const struct setting_state *state = testpoint(id, OTFX_SETTING_TYPE_REAL);
    if (state)
        *value = state->value.real;
    return state != NULL;
}

/* ---- help -------------------------------------------------------------------------------------- */

/* Words of `text` from column `indent` up to `width`, continued lines indented as much. */
static void print_wrapped(FILE *out, const char *text, int column, int indent, int width)
{
    while (*text) {
        while (*text == ' ')
            text++;
        const size_t word = strcspn(text, " ");
        if (word == 0)
            break;
        if (column > indent && column + 1 + (int)word > width) {
            fprintf(out, "\n%*s", indent, "");
            column = indent;
        } else if (column > indent) {
            fputc(' ', out);
            column++;
        }
        fprintf(out, "%.*s", (int)word, text);
        column += (int)word;
        text += word;
    }
    fputc('\n', out);
}

void otfx_settings_print_help(FILE *out, unsigned kinds, int width)
{
    enum { NAME_COLUMN = 2, TEXT_COLUMN = 27 };
    for (int id = 0; id < OTFX_SETTING_COUNT; id++) {
        const otfx_setting_info *info = &otfx_setting_table[id];
        if (!(kinds & (1u << info->kind)))
            continue;
        const int name_width = TEXT_COLUMN - NAME_COLUMN - 1;
        fprintf(out, "%*s%-*s", NAME_COLUMN, "", name_width, info->name);
        if ((int)strlen(info->name) >= name_width)
            fprintf(out, "\n%*s", TEXT_COLUMN - 1, "");
        char text[1024];
        snprintf(text, sizeof(text), "%s%s%s%s%s%s%s", info->help,
                 info->default_text || info->option ? " (" : "", info->default_text ? "default " : "",
                 info->default_text ? info->default_text : "", info->default_text && info->option ? "; " : "",
                 info->option ? info->option : "", info->default_text || info->option ? ")" : "");
        print_wrapped(out, text, TEXT_COLUMN - 1, TEXT_COLUMN - 1, width);
    }
}

/* protocol.c — frames, record lines and command lines of the client protocol (otfx/protocol.h). */
#define _POSIX_C_SOURCE 200809L
#include <otfx/protocol.h>
#include <otfx/support/growth.h>
#include <otfx/trigger.h>

#include "error_text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- frames ------------------------------------------------------------------------------------- */

static uint32_t read_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static uint16_t read_be16(const unsigned char *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | (unsigned)p[1]);
}

static void write_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void write_be16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

otfx_frame_status otfx_frame_parse_header(const void *data, size_t size, size_t max_length,
                                          otfx_frame_header *header)
{
    const unsigned char *p = data;
    if (size < OTFX_FRAME_HEADER_BYTES)
        return OTFX_FRAME_NEED_MORE;
    if (read_be32(p) != OTFX_PROTOCOL_MAGIC)
        return OTFX_FRAME_BAD_MAGIC;
    const uint16_t version = read_be16(p + 4);
    const uint16_t kind = read_be16(p + 6);
    const uint32_t request = read_be32(p + 8);
    const uint32_t length = read_be32(p + 12);
    if (header) {
        header->version = version;
        header->kind = kind;
        header->request = request;
        header->length = length;
    }
    if (version != OTFX_PROTOCOL_VERSION)
        return OTFX_FRAME_BAD_VERSION;
    if (kind < OTFX_FRAME_HELLO || kind > OTFX_FRAME_KIND_MAX)
        return OTFX_FRAME_BAD_KIND;
    if ((size_t)length > max_length)
        return OTFX_FRAME_TOO_LARGE;
    return OTFX_FRAME_OK;
}

void otfx_frame_write_header(void *out, otfx_frame_kind kind, uint32_t request, uint32_t length)
{
    unsigned char *p = out;
    write_be32(p, OTFX_PROTOCOL_MAGIC);
    write_be16(p + 4, (uint16_t)OTFX_PROTOCOL_VERSION);
    write_be16(p + 6, (uint16_t)kind);
    write_be32(p + 8, request);
    write_be32(p + 12, length);
}

const char *otfx_frame_status_text(otfx_frame_status status)
{
    switch (status) {
    case OTFX_FRAME_OK:
        return "ok";
    case OTFX_FRAME_NEED_MORE:
        return "incomplete frame header";
    case OTFX_FRAME_BAD_MAGIC:
        return "not an otfx frame (wrong magic number)";
    case OTFX_FRAME_BAD_VERSION:
        return "unsupported protocol version";
    case OTFX_FRAME_BAD_KIND:
        return "unknown frame kind";
    case OTFX_FRAME_TOO_LARGE:
        return "frame payload too large";
    }
    return "unknown frame status";
}

/* ---- text buffers ------------------------------------------------------------------------------- */

void otfx_text_free(otfx_text *text)
{
    free(text->data);
    text->data = NULL;
    text->length = text->capacity = 0;
    text->failed = false;
}

static bool text_reserve(otfx_text *text, size_t more)
{
    if (text->failed)
        return false;
    if (more > SIZE_MAX - text->length - 1) {
        text->failed = true;
        return false;
    }
    const size_t need = text->length + more + 1; /* always room for a terminating NUL */
    if (need <= text->capacity)
        return true;
    if (!otfx_reserve((void **)&text->data, &text->capacity, need, 1, 256)) {
        text->failed = true;
        return false;
    }
    return true;
}

void otfx_text_append(otfx_text *text, const char *bytes, size_t length)
{
    if (!text_reserve(text, length))
        return;
    if (length)
        memcpy(text->data + text->length, bytes, length);
    text->length += length;
    text->data[text->length] = '\0';
}

void otfx_text_appendf(otfx_text *text, const char *format, ...)
{
    char small[256];
    va_list args;
    va_start(args, format);
    const int n = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (n < 0) {
        text->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        otfx_text_append(text, small, (size_t)n);
        return;
    }
    if (!text_reserve(text, (size_t)n))
        return;
    va_start(args, format);
    vsnprintf(text->data + text->length, (size_t)n + 1, format, args);
    va_end(args);
    text->length += (size_t)n;
}

static bool needs_escape(unsigned char c)
{
    return c < 0x21 || c > 0x7e || c == '%' || c == '=';
}

void otfx_text_append_encoded(otfx_text *text, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)(value ? value : "");
    while (*p) {
        const unsigned char *start = p;
        while (*p && !needs_escape(*p))
            p++;
        otfx_text_append(text, (const char *)start, (size_t)(p - start));
        if (*p) {
            const char escaped[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            otfx_text_append(text, escaped, 3);
            p++;
        }
    }
}

/* ---- record lines ------------------------------------------------------------------------------- */

void otfx_kv_begin(otfx_text *text, const char *type)
{
    otfx_text_append(text, type, strlen(type));
}

static void kv_key(otfx_text *text, const char *key)
{
    otfx_text_append(text, " ", 1);
    otfx_text_append(text, key, strlen(key));
    otfx_text_append(text, "=", 1);
}

void otfx_kv_str(otfx_text *text, const char *key, const char *value)
{
    kv_key(text, key);
    otfx_text_append_encoded(text, value);
}

void otfx_kv_u64(otfx_text *text, const char *key, uint64_t value)
{
    kv_key(text, key);
    otfx_text_appendf(text, "%" PRIu64, value);
}

void otfx_kv_i64(otfx_text *text, const char *key, int64_t value)
{
    kv_key(text, key);
    otfx_text_appendf(text, "%" PRId64, value);
}

void otfx_kv_f64(otfx_text *text, const char *key, double value)
{
    kv_key(text, key);
    if (isnan(value)) {
        otfx_text_append(text, "nan", 3);
        return;
    }
    if (isinf(value)) {
        otfx_text_append(text, value < 0 ? "-inf" : "inf", value < 0 ? 4 : 3);
        return;
    }
    /* The shortest of %.15g/%.17g that reads back exactly. */
    char buffer[64];
    snprintf(buffer, sizeof buffer, "%.15g", value);
    if (strtod(buffer, NULL) != value)
        snprintf(buffer, sizeof buffer, "%.17g", value);
    otfx_text_append(text, buffer, strlen(buffer));
}

void otfx_kv_end(otfx_text *text)
{
    otfx_text_append(text, "\n", 1);
}

static bool is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool otfx_text_is_clean_utf8(const char *text, size_t length)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + length;
    while (p < end) {
        const unsigned char c = *p;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                return false;
            p++;
            continue;
        }
        size_t more;
        uint32_t code, lowest;
        if ((c & 0xe0) == 0xc0) {
            more = 1, code = c & 0x1f, lowest = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            more = 2, code = c & 0x0f, lowest = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            more = 3, code = c & 0x07, lowest = 0x10000;
        } else {
            return false; /* a continuation byte first, or 0xf8-0xff */
        }
        if ((size_t)(end - p) <= more)
            return false;
        for (size_t i = 1; i <= more; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            code = (code << 6) | (p[i] & 0x3f);
        }
        /* overlong forms, UTF-16 surrogates, beyond U+10FFFF, and the C1 control characters */
        if (code < lowest || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff ||
            (code >= 0x80 && code <= 0x9f))
            return false;
        p += more + 1;
    }
    return true;
}

/* Decodes [p, end) into out (which has room for end - p + 1 bytes); false on a bad escape, %00 or a
 * byte that must have been escaped. `allow_equals`: a raw '=' is kept (command words). */
static bool percent_decode(const char *p, const char *end, char *out, bool allow_equals)
{
    while (p < end) {
        const unsigned char c = (unsigned char)*p;
        if (c == '%') {
            if (end - p < 3)
                return false;
            const int hi = hex_value((unsigned char)p[1]), lo = hex_value((unsigned char)p[2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return false;
            *out++ = (char)(hi * 16 + lo);
            p += 3;
            continue;
        }
        if (c < 0x21 || c > 0x7e || (c == '=' && !allow_equals))
            return false;
        *out++ = (char)c;
        p++;
    }
    *out = '\0';
    return true;
}

void otfx_kv_line_free(otfx_kv_line *line)
{
    if (!line)
        return;
    free(line->storage);
    line->storage = NULL;
    line->count = 0;
}

bool otfx_kv_parse(const char *line, size_t length, otfx_kv_line *out)
{
    memset(out, 0, sizeof *out);
    if (!line || length == 0)
        return false;
    const char *p = line, *end = line + length;
    const char *type = p;
    while (p < end && *p != ' ')
        p++;
    const size_t type_length = (size_t)(p - type);
    if (type_length == 0 || type_length >= sizeof out->type)
        return false;
    for (size_t i = 0; i < type_length; i++)
        if (!is_name_char((unsigned char)type[i]))
            return false;
    memcpy(out->type, type, type_length);
    out->type[type_length] = '\0';

    out->storage = malloc(length + 1);
    if (!out->storage)
        return false;
    char *storage = out->storage;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *key = p;
        while (p < end && *p != '=' && *p != ' ')
            p++;
        const size_t key_length = (size_t)(p - key);
        if (p == end || *p != '=' || key_length == 0 || key_length >= sizeof out->fields[0].key ||
            out->count == OTFX_KV_MAX_FIELDS)
            goto malformed;
        for (size_t i = 0; i < key_length; i++)
            if (!is_name_char((unsigned char)key[i]))
                goto malformed;
        const char *value = ++p;
        while (p < end && *p != ' ')
            p++;
        if (!percent_decode(value, p, storage, false))
            goto malformed;
        memcpy(out->fields[out->count].key, key, key_length);
        out->fields[out->count].key[key_length] = '\0';
        out->fields[out->count].value = storage;
        out->count++;
        storage += strlen(storage) + 1;
    }
    return true;
malformed:
    otfx_kv_line_free(out);
    return false;
}

const char *otfx_kv_get(const otfx_kv_line *line, const char *key)
{
    for (size_t i = 0; i < line->count; i++)
        if (strcmp(line->fields[i].key, key) == 0)
            return line->fields[i].value;
    return NULL;
}

bool otfx_kv_next_line(const char *payload, size_t length, size_t *offset, const char **line,
                       size_t *line_length)
{
    if (!payload || *offset >= length)
        return false;
    const char *start = payload + *offset;
    const char *newline = memchr(start, '\n', length - *offset);
    const size_t n = newline ? (size_t)(newline - start) : length - *offset;
    *line = start;
    *line_length = n;
    *offset += n + (newline ? 1 : 0);
    return true;
}

/* ---- rank sets ---------------------------------------------------------------------------------- */

bool otfx_rank_set_contains(const otfx_rank_set *set, uint32_t rank)
{
    if (set->count == 0)
        return true;
    for (uint32_t i = 0; i < set->count && i < 32; i++)
        if (rank >= set->ranges[i].first && rank <= set->ranges[i].last)
            return true;
    return false;
}

void otfx_rank_set_format(const otfx_rank_set *set, char *out, size_t size)
{
    if (size == 0)
        return;
    out[0] = '\0';
    if (set->count == 0) {
        snprintf(out, size, "all");
        return;
    }
    size_t used = 0;
    for (uint32_t i = 0; i < set->count && i < 32; i++) {
        int n;
        const char *comma = i ? "," : "";
        if (set->ranges[i].first == set->ranges[i].last)
            n = snprintf(out + used, size - used, "%s%" PRIu32, comma, set->ranges[i].first);
        else
            n = snprintf(out + used, size - used, "%s%" PRIu32 "-%" PRIu32, comma, set->ranges[i].first,
                         set->ranges[i].last);
        if (n < 0 || (size_t)n >= size - used) {
            out[used] = '\0'; /* truncated: never end in the middle of a number */
            return;
        }
        used += (size_t)n;
    }
}

/* A decimal uint32 below UINT32_MAX (that value means "all"), at least one digit. */
static bool parse_u32(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint64_t value = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        value = value * 10 + (uint64_t)(*s - '0');
        if (value >= UINT32_MAX)
            return false;
        s++;
    }
    *p = s;
    *out = (uint32_t)value;
    return true;
}

bool otfx_rank_set_parse(const char *text, otfx_rank_set *out)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return false;
    if (strcmp(text, "all") == 0)
        return true;
    const char *p = text;
    for (;;) {
        uint32_t first, last;
        if (!parse_u32(&p, &first))
            return false;
        last = first;
        if (*p == '-') {
            p++;
            if (!parse_u32(&p, &last) || last < first)
                return false;
        }
        if (out->count == 32)
            return false;
        out->ranges[out->count].first = first;
        out->ranges[out->count].last = last;
        out->count++;
        if (*p == '\0')
            return true;
        if (*p != ',')
            return false;
        p++;
    }
}

/* ---- commands ----------------------------------------------------------------------------------- */

static const char *const command_names[OTFX_CMD_COUNT] = {
    [OTFX_CMD_STATUS] = "status",
    [OTFX_CMD_RECORD_PAUSE] = "record pause",
    [OTFX_CMD_RECORD_RESUME] = "record resume",
    [OTFX_CMD_RECORD_WINDOW] = "record window",
    [OTFX_CMD_APP_PAUSE] = "app pause",
    [OTFX_CMD_APP_RESUME] = "app resume",
    [OTFX_CMD_RESET] = "reset",
    [OTFX_CMD_REDUCTION] = "reduction",
    [OTFX_CMD_ENABLE] = "enable",
    [OTFX_CMD_DISABLE] = "disable",
    [OTFX_CMD_SNAPSHOT] = "snapshot",
    [OTFX_CMD_PROFILE] = "profile",
    [OTFX_CMD_TIMELINE] = "timeline",
    [OTFX_CMD_MESSAGES] = "messages",
    [OTFX_CMD_EVENTS] = "events",
    [OTFX_CMD_LOAD_MODULE] = "load-module",
    [OTFX_CMD_QUERY] = "query",
    [OTFX_CMD_CRITICAL_PATH] = "critical-path",
    [OTFX_CMD_WAIT_STATES] = "wait-states",
    [OTFX_CMD_STRUCTURE] = "structure",
    [OTFX_CMD_METRICS_SET] = "metrics set",
    [OTFX_CMD_METRICS_ADD] = "metrics add",
    [OTFX_CMD_METRICS_REMOVE] = "metrics remove",
    [OTFX_CMD_METRICS_LIST] = "metrics list",
    [OTFX_CMD_METRICS_AVAILABLE] = "metrics available",
    [OTFX_CMD_METRIC_TIMELINE] = "metric-timeline",
    [OTFX_CMD_TRIGGER_ADD] = "trigger add",
    [OTFX_CMD_TRIGGER_LIST] = "trigger list",
    [OTFX_CMD_TRIGGER_REMOVE] = "trigger remove",
    [OTFX_CMD_TRIGGER_ARM] = "trigger arm",
    [OTFX_CMD_OVERHEAD_MEASURE] = "overhead measure",
};

const char *otfx_command_name(otfx_command_kind kind)
{
    if ((int)kind < OTFX_CMD_STATUS || kind >= OTFX_CMD_COUNT)
        return "unknown";
    return command_names[kind];
}

bool otfx_command_flushes_first(const otfx_command *command)
{
    return (command->kind == OTFX_CMD_CRITICAL_PATH || command->kind == OTFX_CMD_WAIT_STATES) &&
           !command->no_flush;
}

static const char *const strategies[] = {"ring", "time", "type", "depth", "stop"};

static const struct {
    const char *name;
    uint32_t bits;
} class_names[] = {
    {"p2p", OTFX_STEER_P2P},
    {"collective", OTFX_STEER_COLLECTIVE},
    {"mpi-other", OTFX_STEER_OTHER_MPI},
    {"user", OTFX_STEER_USER},
    {"all", OTFX_STEER_ALL},
    /* other spellings, accepted on input */
    {"point-to-point", OTFX_STEER_P2P},
    {"collectives", OTFX_STEER_COLLECTIVE},
    {"other-mpi", OTFX_STEER_OTHER_MPI},
    {"user-functions", OTFX_STEER_USER},
};

enum {
    MAX_WORDS = 32,
    /* limits of the numeric options (0 = the module's default) */
    MAX_BINS = OTFX_COMMAND_MAX_BINS,
    MAX_ROWS = OTFX_COMMAND_MAX_ROWS,
    MAX_GROUPS = 4096,
    MAX_LIMIT = OTFX_COMMAND_MAX_LIMIT,
    MAX_TOP = 10000
};

/* Option bits: which options a command takes. */
enum {
    OPT_FROM = 1u << 0,
    OPT_TO = 1u << 1,
    OPT_RANKS = 1u << 2,
    OPT_BINS = 1u << 3,
    OPT_ROWS = 1u << 4,
    OPT_GROUPS = 1u << 5,
    OPT_LIMIT = 1u << 6,
    OPT_OVERWRITE = 1u << 7,
    OPT_ZERO = 1u << 8,
    OPT_TOP = 1u << 9,
    OPT_FOLLOW = 1u << 10,
    OPT_NO_FLUSH = 1u << 11,
    OPT_GROUP_TOLERANCE = 1u << 12,
    OPT_COMPENSATED = 1u << 13,
    OPT_METRICS = 1u << 14,
    OPT_WINDOW = OPT_FROM | OPT_TO | OPT_RANKS
};

static const char *const option_names[] = {"from",   "to",       "ranks",           "bins",        "rows",
                                           "groups", "limit",    "overwrite",       "zero",        "top",
                                           "follow", "no-flush", "group-tolerance", "compensated", "metrics"};

static unsigned options_of(otfx_command_kind kind)
{
    switch (kind) {
    case OTFX_CMD_SNAPSHOT:
        return OPT_WINDOW | OPT_OVERWRITE | OPT_COMPENSATED;
    case OTFX_CMD_PROFILE:
        return OPT_WINDOW | OPT_COMPENSATED | OPT_METRICS;
    case OTFX_CMD_METRIC_TIMELINE:
        return OPT_WINDOW | OPT_BINS | OPT_ROWS;
    case OTFX_CMD_TIMELINE:
        return OPT_WINDOW | OPT_BINS | OPT_ROWS | OPT_COMPENSATED;
    case OTFX_CMD_MESSAGES:
        return OPT_WINDOW | OPT_GROUPS;
    case OTFX_CMD_EVENTS:
        return OPT_WINDOW | OPT_LIMIT;
    case OTFX_CMD_QUERY:
        return OPT_WINDOW | OPT_BINS | OPT_ROWS | OPT_GROUPS | OPT_LIMIT;
    case OTFX_CMD_CRITICAL_PATH:
        return OPT_WINDOW | OPT_ZERO | OPT_TOP | OPT_LIMIT | OPT_FOLLOW | OPT_NO_FLUSH;
    case OTFX_CMD_WAIT_STATES:
        return OPT_WINDOW | OPT_TOP | OPT_LIMIT | OPT_FOLLOW | OPT_NO_FLUSH;
    case OTFX_CMD_STRUCTURE:
        return OPT_RANKS | OPT_TOP | OPT_GROUP_TOLERANCE;
    default:
        return 0;
    }
}

typedef struct {
    char *words[MAX_WORDS];
    size_t count;
    char *storage;
} word_list;

static bool split_words(const char *line, word_list *list, char *error, size_t error_size)
{
    memset(list, 0, sizeof *list);
    const size_t length = strlen(line);
    list->storage = malloc(length + 1);
    if (!list->storage) {
        set_error(error, error_size, "out of memory");
        return false;
    }
    char *storage = list->storage;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            return true;
        const char *start = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            p++;
        if (list->count == MAX_WORDS) {
            set_error(error, error_size, "too many words (at most %d)", MAX_WORDS);
            return false;
        }
        if (!percent_decode(start, p, storage, true)) {
            set_error(error, error_size, "bad word '%.*s': a bad %%-escape, %%00 or a control character",
                      (int)(p - start > 60 ? 60 : p - start), start);
            return false;
        }
        if (!otfx_text_is_clean_utf8(storage, strlen(storage))) {
            set_error(error, error_size,
                      "bad word '%.*s': once decoded it is not UTF-8 text or holds a control character",
                      (int)(p - start > 60 ? 60 : p - start), start);
            return false;
        }
        list->words[list->count++] = storage;
        storage += strlen(storage) + 1;
    }
}

/* "2s", "1.5ms", "250us", "100ns", "3" (seconds) → ns. */
static bool parse_duration(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t whole = 0;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        const uint64_t digit = (uint64_t)(*p++ - '0');
        if (whole > (UINT64_MAX - digit) / 10)
            return false;
        whole = whole * 10 + digit;
    }
    uint64_t fraction = 0, scale = 1; /* fraction / scale */
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9') {
            if (scale < 1000000000000000000ull) { /* digits beyond 1e-18 cannot matter */
                fraction = fraction * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
            p++;
        }
    }
    uint64_t unit;
    if (*p == '\0' || strcmp(p, "s") == 0)
        unit = 1000000000ull;
    else if (strcmp(p, "ms") == 0)
        unit = 1000000ull;
    else if (strcmp(p, "us") == 0)
        unit = 1000ull;
    else if (strcmp(p, "ns") == 0)
        unit = 1ull;
    else
        return false;
    if (whole > UINT64_MAX / unit)
        return false;
    uint64_t ns = whole * unit;
    /* fraction * unit / scale without overflow: fraction < scale ≤ 1e18, unit ≤ 1e9 */
    const unsigned __int128 part = (unsigned __int128)fraction * unit / scale;
    if (part > UINT64_MAX - ns)
        return false;
    ns += (uint64_t)part;
    if ((unsigned __int128)fraction * unit % scale != 0)
        return false; /* finer than a nanosecond */
    *out = ns;
    return true;
}

bool otfx_duration_parse(const char *text, uint64_t *ns)
{
    return text && parse_duration(text, ns);
}

static bool parse_count(const char *text, uint32_t max, uint32_t *out)
{
    const char *p = text;
    uint32_t value;
    if (!parse_u32(&p, &value) || *p != '\0' || value == 0 || value > max)
        return false;
    *out = value;
    return true;
}

/* A percentage as millionths: "2" → 20000, "0.5" → 5000; from 1 ppm (0.0001) to 100000 %; "inf". */
static bool parse_percent_ppm(const char *text, uint32_t *out)
{
    char *end = NULL;
    if (strcmp(text, "inf") == 0) {
        *out = OTFX_GROUP_TOLERANCE_INF;
        return true;
    }
    if (!text[0] || !(text[0] >= '0' && text[0] <= '9'))
        return false;
    const double percent = strtod(text, &end);
    if (*end != '\0' || !(percent >= 0.0001 && percent <= 100000.0))
        return false;
    *out = (uint32_t)(percent * 10000.0 + 0.5);
    return true;
}

/* A follow identifier: decimal digits only, 1 .. INT64_MAX (so that every language's client can hold
 * it in a signed 64-bit integer). */
static bool parse_follow_id(const char *text, uint64_t *out)
{
    uint64_t value = 0;
    if (!*text)
        return false;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9' || value > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10)
            return false;
        value = value * 10 + (uint64_t)(*p - '0');
    }
    if (value == 0)
        return false;
    *out = value;
    return true;
}

static bool parse_classes(const char *text, uint32_t *out)
{
    uint32_t bits = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        bool known = false;
        for (size_t i = 0; i < sizeof class_names / sizeof class_names[0]; i++)
            if (strlen(class_names[i].name) == n && strncmp(class_names[i].name, p, n) == 0) {
                bits |= class_names[i].bits;
                known = true;
            }
        if (!known)
            return false;
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = bits;
    return true;
}

/* A comma list of metric names: [A-Za-z0-9:._-] words (PAPI's are upper case), no empty one. */
static bool is_metric_list(const char *list)
{
    if (!list[0] || strlen(list) >= sizeof(((otfx_command *)0)->metrics))
        return false;
    bool word = false;
    for (const char *c = list; *c; c++) {
        if (*c == ',') {
            if (!word)
                return false;
            word = false;
        } else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                   *c == ':' || *c == '.' || *c == '_' || *c == '-') {
            word = true;
        } else {
            return false;
        }
    }
    return word;
}

static bool is_module_name(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || n >= sizeof(((otfx_command *)0)->module) || name[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_name_char((unsigned char)name[i]))
            return false;
    return true;
}

/* Parses the options words[first...] of a command that takes `allowed`. */
static bool parse_options(word_list *words, size_t first, unsigned allowed, otfx_command *out, char *error,
                          size_t error_size)
{
    unsigned seen = 0;
    const char *name = otfx_command_name(out->kind);
    for (size_t i = first; i < words->count; i++) {
        char *word = words->words[i];
        if (strncmp(word, "--", 2) != 0) {
            set_error(error, error_size, "%s: unexpected argument '%s'", name, word);
            return false;
        }
        char *option = word + 2;
        char *value = strchr(option, '=');
        if (value)
            *value++ = '\0';
        unsigned bit = 0;
        for (size_t b = 0; b < sizeof option_names / sizeof option_names[0]; b++)
            if (strcmp(option, option_names[b]) == 0)
                bit = 1u << b;
        if (!bit || !(allowed & bit)) {
            set_error(error, error_size, "%s does not take --%s", name, option);
            return false;
        }
        if (seen & bit) {
            set_error(error, error_size, "%s: --%s given twice", name, option);
            return false;
        }
        seen |= bit;
        if (bit == OPT_OVERWRITE) {
            if (value) {
                set_error(error, error_size, "%s: --overwrite takes no value", name);
                return false;
            }
            out->overwrite = true;
            continue;
        }
        if (bit == OPT_NO_FLUSH) {
            if (value) {
                set_error(error, error_size, "%s: --no-flush takes no value", name);
                return false;
            }
            out->no_flush = true;
            continue;
        }
        if (bit == OPT_COMPENSATED) {
            if (value) {
                set_error(error, error_size, "%s: --compensated takes no value", name);
                return false;
            }
            out->compensated = true;
            continue;
        }
        if (bit == OPT_METRICS) {
            /* the list may be left out: every metric */
            if (!value && i + 1 < words->count && strncmp(words->words[i + 1], "--", 2) != 0)
                value = words->words[++i];
            if (!value || strcmp(value, "all") == 0) {
                snprintf(out->metrics, sizeof out->metrics, "all");
            } else if (is_metric_list(value) && strcmp(value, "none") != 0) {
                snprintf(out->metrics, sizeof out->metrics, "%s", value);
            } else {
                set_error(error, error_size, "%s: bad --metrics '%s': expected a comma list of metric names",
                          name, value);
                return false;
            }
            continue;
        }
        if (!value) {
            if (i + 1 == words->count) {
                set_error(error, error_size, "%s: --%s needs a value", name, option);
                return false;
            }
            value = words->words[++i];
        }
        bool ok = true;
        const char *expected = "";
        switch (bit) {
        case OPT_FROM:
            ok = parse_duration(value, &out->from);
            out->from_given = ok;
            expected = "a time like 1.5s, 200ms, 10us, 100ns or plain seconds";
            break;
        case OPT_TO:
            ok = parse_duration(value, &out->to);
            out->to_given = ok;
            expected = "a time like 1.5s, 200ms, 10us, 100ns or plain seconds";
            break;
        case OPT_RANKS:
            ok = otfx_rank_set_parse(value, &out->ranks);
            expected = "'all' or a list like 0-3,7 (at most 32 ranges)";
            break;
        case OPT_BINS:
            ok = parse_count(value, MAX_BINS, &out->bins);
            expected = "a count from 1 to 10000";
            break;
        case OPT_ROWS:
            ok = parse_count(value, MAX_ROWS, &out->rows);
            expected = "a count from 1 to 4096";
            break;
        case OPT_GROUPS:
            ok = parse_count(value, MAX_GROUPS, &out->groups);
            expected = "a count from 1 to 4096";
            break;
        case OPT_LIMIT:
            ok = parse_count(value, MAX_LIMIT, &out->limit);
            expected = "a count from 1 to 10000000";
            break;
        case OPT_TOP:
            ok = parse_count(value, MAX_TOP, &out->top);
            expected = "a count from 1 to 10000";
            break;
        case OPT_FOLLOW:
            ok = parse_follow_id(value, &out->follow);
            expected = "an identifier from 1 to 9223372036854775807";
            break;
        case OPT_GROUP_TOLERANCE:
            ok = parse_percent_ppm(value, &out->group_tolerance_ppm);
            expected = "a percentage from 0.0001 to 100000 (2 for 2 %) or inf";
            break;
        case OPT_ZERO:
            ok = value[0] != '\0' && strlen(value) < sizeof out->zero;
            if (ok)
                snprintf(out->zero, sizeof out->zero, "%s", value);
            expected = "a function name (at most 255 bytes)";
            break;
        default:
            break;
        }
        if (!ok) {
            set_error(error, error_size, "%s: bad --%s '%s': expected %s", name, option, value, expected);
            return false;
        }
    }
    if (out->from > out->to) {
        set_error(error, error_size, "%s: --from is after --to", name);
        return false;
    }
    if (out->compensated && out->metrics[0]) {
        set_error(error, error_size, "%s: --metrics and --compensated do not go together", name);
        return false;
    }
    return true;
}

/* trigger add SPEC… (the words after `add`, joined by one blank, are the trigger: otfx/trigger.h), trigger
 * list, trigger remove ID. */
static bool parse_trigger(word_list *words, otfx_command *out, char *error, size_t error_size)
{
    const char *arg = words->count > 1 ? words->words[1] : "";
    if (strcmp(arg, "list") == 0 || strcmp(arg, "remove") == 0) {
        out->kind = arg[0] == 'l' ? OTFX_CMD_TRIGGER_LIST : OTFX_CMD_TRIGGER_REMOVE;
        const size_t expected = out->kind == OTFX_CMD_TRIGGER_LIST ? 2 : 3;
        if (out->kind == OTFX_CMD_TRIGGER_REMOVE) {
            char *end = NULL;
            const char *id = words->count > 2 ? words->words[2] : "";
            const unsigned long long value = id[0] >= '1' && id[0] <= '9' ? strtoull(id, &end, 10) : 0;
            if (!end || *end || value == 0 || value > INT64_MAX) {
                set_error(error, error_size, "trigger remove needs a trigger's id (trigger list shows them)");
                return false;
            }
            out->trigger_id = value;
        }
        if (words->count > expected) {
            set_error(error, error_size, "%s: unexpected argument '%s'", otfx_command_name(out->kind),
                      words->words[expected]);
            return false;
        }
        return true;
    }
    if (strcmp(arg, "add") != 0) {
        set_error(error, error_size, "trigger needs add SPEC, list or remove ID");
        return false;
    }
    out->kind = OTFX_CMD_TRIGGER_ADD;
    otfx_text text = {0};
    for (size_t i = 2; i < words->count; i++) {
        if (i > 2)
            otfx_text_append(&text, " ", 1);
        otfx_text_append(&text, words->words[i], strlen(words->words[i]));
    }
    if (text.failed) {
        otfx_text_free(&text);
        set_error(error, error_size, "out of memory");
        return false;
    }
    otfx_trigger_spec spec;
    size_t column = 0;
    char why[256];
    const bool ok = otfx_trigger_parse(text.data ? text.data : "", &spec, &column, why, sizeof why);
    if (!ok)
        set_error(error, error_size, "trigger add: at column %zu of '%s': %s", column,
                  text.data ? text.data : "", why);
    else
        snprintf(out->path, sizeof out->path, "%s", text.data);
    otfx_text_free(&text);
    return ok;
}

/* overhead measure (docs/analyses.md, "Overhead compensation"). */
static bool parse_overhead_words(const char *arg, otfx_command *out, char *error, size_t error_size)
{
    if (!arg || strcmp(arg, "measure") != 0) {
        set_error(error, error_size, "overhead needs measure");
        return false;
    }
    out->kind = OTFX_CMD_OVERHEAD_MEASURE;
    return true;
}

static bool parse_words(word_list *words, otfx_command *out, char *error, size_t error_size)
{
    if (words->count == 0) {
        set_error(error, error_size, "empty command");
        return false;
    }
    const char *verb = words->words[0];
    const char *arg = words->count > 1 ? words->words[1] : NULL;
    size_t used = 1; /* words consumed before the options */

    if (strcmp(verb, "status") == 0) {
        out->kind = OTFX_CMD_STATUS;
    } else if (strcmp(verb, "record") == 0) {
        if (arg && strcmp(arg, "pause") == 0) {
            out->kind = OTFX_CMD_RECORD_PAUSE;
        } else if (arg && strcmp(arg, "resume") == 0) {
            out->kind = OTFX_CMD_RECORD_RESUME;
        } else if (arg && strcmp(arg, "window") == 0) {
            out->kind = OTFX_CMD_RECORD_WINDOW;
            if (words->count < 3 || !parse_duration(words->words[2], &out->duration_ns) ||
                out->duration_ns == 0) {
                set_error(
                    error, error_size,
                    "record window needs a duration above zero like 2s, 500ms, 10us, 100ns or plain seconds");
                return false;
            }
            if (out->duration_ns > OTFX_COMMAND_MAX_WINDOW_NS) {
                set_error(error, error_size,
                          "record window: %s is too long (at most %" PRIu64
                          "ns, about 292 years: the window's end must stay on the clock)",
                          words->words[2], (uint64_t)OTFX_COMMAND_MAX_WINDOW_NS);
                return false;
            }
            used = 3;
        } else {
            set_error(error, error_size, "record needs pause, resume or window DURATION");
            return false;
        }
        if (used == 1)
            used = 2;
    } else if (strcmp(verb, "app") == 0) {
        if (arg && strcmp(arg, "pause") == 0)
            out->kind = OTFX_CMD_APP_PAUSE;
        else if (arg && strcmp(arg, "resume") == 0)
            out->kind = OTFX_CMD_APP_RESUME;
        else {
            set_error(error, error_size, "app needs pause or resume");
            return false;
        }
        used = 2;
    } else if (strcmp(verb, "overhead") == 0) {
        if (!parse_overhead_words(arg, out, error, error_size))
            return false;
        used = 2;
    } else if (strcmp(verb, "reset") == 0) {
        out->kind = OTFX_CMD_RESET;
    } else if (strcmp(verb, "reduction") == 0) {
        out->kind = OTFX_CMD_REDUCTION;
        bool known = false;
        for (size_t i = 0; arg && i < sizeof strategies / sizeof strategies[0]; i++)
            if (strcmp(arg, strategies[i]) == 0)
                known = true;
        if (!known) {
            set_error(error, error_size, "reduction needs a strategy: ring, time, type, depth or stop");
            return false;
        }
        snprintf(out->strategy, sizeof out->strategy, "%s", arg);
        used = 2;
    } else if (strcmp(verb, "enable") == 0 || strcmp(verb, "disable") == 0) {
        out->kind = verb[0] == 'e' ? OTFX_CMD_ENABLE : OTFX_CMD_DISABLE;
        if (!arg || !parse_classes(arg, &out->classes)) {
            set_error(error, error_size,
                      "%s needs event classes: a comma list of p2p, collective, mpi-other, user or all",
                      verb);
            return false;
        }
        used = 2;
    } else if (strcmp(verb, "snapshot") == 0 || strcmp(verb, "load-module") == 0) {
        out->kind = verb[0] == 's' ? OTFX_CMD_SNAPSHOT : OTFX_CMD_LOAD_MODULE;
        if (!arg || strncmp(arg, "--", 2) == 0) {
            set_error(error, error_size, "%s needs a path", verb);
            return false;
        }
        if (strlen(arg) >= sizeof out->path) {
            set_error(error, error_size, "%s: path longer than %zu bytes", verb, sizeof out->path - 1);
            return false;
        }
        snprintf(out->path, sizeof out->path, "%s", arg);
        used = 2;
    } else if (strcmp(verb, "profile") == 0) {
        out->kind = OTFX_CMD_PROFILE;
    } else if (strcmp(verb, "timeline") == 0) {
        out->kind = OTFX_CMD_TIMELINE;
    } else if (strcmp(verb, "messages") == 0) {
        out->kind = OTFX_CMD_MESSAGES;
    } else if (strcmp(verb, "events") == 0) {
        out->kind = OTFX_CMD_EVENTS;
    } else if (strcmp(verb, "critical-path") == 0) {
        out->kind = OTFX_CMD_CRITICAL_PATH;
    } else if (strcmp(verb, "wait-states") == 0) {
        out->kind = OTFX_CMD_WAIT_STATES;
    } else if (strcmp(verb, "structure") == 0) {
        out->kind = OTFX_CMD_STRUCTURE;
    } else if (strcmp(verb, "metrics") == 0) {
        static const struct {
            const char *word;
            otfx_command_kind kind;
            bool takes_list;
        } actions[] = {{"set", OTFX_CMD_METRICS_SET, true},
                       {"add", OTFX_CMD_METRICS_ADD, true},
                       {"remove", OTFX_CMD_METRICS_REMOVE, true},
                       {"list", OTFX_CMD_METRICS_LIST, false},
                       {"available", OTFX_CMD_METRICS_AVAILABLE, false}};
        size_t a = 0;
        while (a < sizeof actions / sizeof actions[0] && !(arg && strcmp(arg, actions[a].word) == 0))
            a++;
        if (a == sizeof actions / sizeof actions[0]) {
            set_error(error, error_size, "metrics needs set LIST, add LIST, remove LIST, list or available");
            return false;
        }
        out->kind = actions[a].kind;
        used = 2;
        if (actions[a].takes_list) {
            const char *list = words->count > 2 ? words->words[2] : NULL;
            /* "set none": read nothing */
            if (out->kind == OTFX_CMD_METRICS_SET && list && strcmp(list, "none") == 0) {
                used = 3;
            } else if (!list || !is_metric_list(list) || strcmp(list, "none") == 0) {
                set_error(
                    error, error_size,
                    "metrics %s needs a comma list of metric names like task-clock,page-faults (at most "
                    "%zu characters; `metrics available` lists them)%s",
                    arg, sizeof out->metrics - 1, out->kind == OTFX_CMD_METRICS_SET ? ", or none" : "");
                return false;
            } else {
                snprintf(out->metrics, sizeof out->metrics, "%s", list);
                used = 3;
            }
        }
    } else if (strcmp(verb, "metric-timeline") == 0) {
        out->kind = OTFX_CMD_METRIC_TIMELINE;
        if (!arg || !is_metric_list(arg) || strchr(arg, ',')) {
            set_error(error, error_size, "metric-timeline needs a metric name like task-clock");
            return false;
        }
        snprintf(out->metrics, sizeof out->metrics, "%s", arg);
        used = 2;
    } else if (strcmp(verb, "trigger") == 0) {
        return parse_trigger(words, out, error, error_size);
    } else if (strcmp(verb, "query") == 0) {
        out->kind = OTFX_CMD_QUERY;
        if (!arg || !is_module_name(arg)) {
            set_error(error, error_size,
                      "query needs a module name ([a-z0-9_-], not starting with '-', at most %zu characters)",
                      sizeof out->module - 1);
            return false;
        }
        snprintf(out->module, sizeof out->module, "%s", arg);
        used = 2;
    } else {
        set_error(
            error, error_size,
            "unknown command '%s' (commands: status, record, app, reset, reduction, enable, disable, "
            "snapshot, profile, timeline, messages, events, critical-path, wait-states, structure, metrics, "
            "metric-timeline, query, load-module, trigger)",
            verb);
        return false;
    }
    return parse_options(words, used, options_of(out->kind), out, error, error_size);
}

bool otfx_command_parse(const char *line, otfx_command *out, char *error, size_t error_size)
{
    memset(out, 0, sizeof *out);
    out->to = UINT64_MAX;
    if (error && error_size)
        error[0] = '\0';
    if (!line) {
        set_error(error, error_size, "empty command");
        return false;
    }
    word_list words;
    bool ok = split_words(line, &words, error, error_size) && parse_words(&words, out, error, error_size);
    free(words.storage);
    if (!ok) {
        memset(out, 0, sizeof *out);
        out->to = UINT64_MAX;
    }
    return ok;
}

static void format_classes(uint32_t classes, otfx_text *out)
{
    if ((classes & OTFX_STEER_ALL) == OTFX_STEER_ALL) {
        otfx_text_append(out, "all", 3);
        return;
    }
    bool first = true;
    for (size_t i = 0; i < 4; i++)
        if (classes & class_names[i].bits) {
            if (!first)
                otfx_text_append(out, ",", 1);
            otfx_text_append(out, class_names[i].name, strlen(class_names[i].name));
            first = false;
        }
}

void otfx_command_format(const otfx_command *command, otfx_text *out)
{
    otfx_text_appendf(out, "%s", otfx_command_name(command->kind));
    switch (command->kind) {
    case OTFX_CMD_RECORD_WINDOW:
        otfx_text_appendf(out, " %" PRIu64 "ns", command->duration_ns);
        break;
    case OTFX_CMD_REDUCTION:
        otfx_text_append(out, " ", 1);
        otfx_text_append_encoded(out, command->strategy);
        break;
    case OTFX_CMD_ENABLE:
    case OTFX_CMD_DISABLE:
        otfx_text_append(out, " ", 1);
        format_classes(command->classes, out);
        break;
    case OTFX_CMD_SNAPSHOT:
    case OTFX_CMD_LOAD_MODULE:
        otfx_text_append(out, " ", 1);
        otfx_text_append_encoded(out, command->path);
        break;
    case OTFX_CMD_QUERY:
        otfx_text_append(out, " ", 1);
        otfx_text_append_encoded(out, command->module);
        break;
    case OTFX_CMD_METRIC_TIMELINE:
        otfx_text_append(out, " ", 1);
        otfx_text_append_encoded(out, command->metrics);
        break;
    case OTFX_CMD_METRICS_SET:
    case OTFX_CMD_METRICS_ADD:
    case OTFX_CMD_METRICS_REMOVE:
        otfx_text_append(out, " ", 1);
        otfx_text_append_encoded(out, command->metrics[0] ? command->metrics : "none");
        break;
    case OTFX_CMD_TRIGGER_ADD:
        otfx_text_append(out, " ", 1);
        otfx_text_append_encoded(out, command->path);
        break;
    case OTFX_CMD_TRIGGER_REMOVE:
        otfx_text_appendf(out, " %" PRIu64, command->trigger_id);
        break;
    default:
        break;
    }
    const unsigned allowed = options_of(command->kind);
    if ((allowed & OPT_FROM) && command->from_given)
        otfx_text_appendf(out, " --from %" PRIu64 "ns", command->from);
    if ((allowed & OPT_TO) && command->to_given)
        otfx_text_appendf(out, " --to %" PRIu64 "ns", command->to);
    if ((allowed & OPT_RANKS) && command->ranks.count) {
        char ranks[32 * 24];
        otfx_rank_set_format(&command->ranks, ranks, sizeof ranks);
        otfx_text_appendf(out, " --ranks %s", ranks);
    }
    if ((allowed & OPT_BINS) && command->bins)
        otfx_text_appendf(out, " --bins %" PRIu32, command->bins);
    if ((allowed & OPT_ROWS) && command->rows)
        otfx_text_appendf(out, " --rows %" PRIu32, command->rows);
    if ((allowed & OPT_GROUPS) && command->groups)
        otfx_text_appendf(out, " --groups %" PRIu32, command->groups);
    if ((allowed & OPT_LIMIT) && command->limit)
        otfx_text_appendf(out, " --limit %" PRIu32, command->limit);
    if ((allowed & OPT_OVERWRITE) && command->overwrite)
        otfx_text_append(out, " --overwrite", 12);
    if ((allowed & OPT_ZERO) && command->zero[0]) {
        otfx_text_append(out, " --zero ", 8);
        otfx_text_append_encoded(out, command->zero);
    }
    if ((allowed & OPT_TOP) && command->top)
        otfx_text_appendf(out, " --top %" PRIu32, command->top);
    if ((allowed & OPT_FOLLOW) && command->follow)
        otfx_text_appendf(out, " --follow %" PRIu64, command->follow);
    if ((allowed & OPT_NO_FLUSH) && command->no_flush)
        otfx_text_append(out, " --no-flush", 11);
    if ((allowed & OPT_GROUP_TOLERANCE) && command->group_tolerance_ppm == OTFX_GROUP_TOLERANCE_INF)
        otfx_text_append(out, " --group-tolerance inf", 22);
    else if ((allowed & OPT_GROUP_TOLERANCE) && command->group_tolerance_ppm)
        otfx_text_appendf(out, " --group-tolerance %" PRIu32 ".%04" PRIu32,
                          command->group_tolerance_ppm / 10000, command->group_tolerance_ppm % 10000);
    if ((allowed & OPT_COMPENSATED) && command->compensated)
        otfx_text_append(out, " --compensated", 14);
    if ((allowed & OPT_METRICS) && command->metrics[0]) {
        otfx_text_append(out, " --metrics ", 11);
        otfx_text_append_encoded(out, command->metrics);
    }
}

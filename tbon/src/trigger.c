/* trigger.c — the trigger grammar (otfx/trigger.h): parsing with the position of the first error, and
 * the canonical text. */
#define _POSIX_C_SOURCE 200809L
#include <otfx/trigger.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cursor {
    const char *text;
    size_t at;
    size_t error_at;
    char *error;
    size_t error_size;
    bool failed;
};

__attribute__((format(printf, 3, 4))) static bool fail_at(struct cursor *c, size_t at, const char *format,
                                                          ...)
{
    if (c->failed)
        return false;
    c->failed = true;
    c->error_at = at;
    if (c->error && c->error_size) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(c->error, c->error_size, format, arguments);
        va_end(arguments);
    }
    return false;
}

static void skip_blanks(struct cursor *c)
{
    while (c->text[c->at] == ' ' || c->text[c->at] == '\t')
        c->at++;
}

static bool at_end(struct cursor *c)
{
    skip_blanks(c);
    return c->text[c->at] == '\0';
}

/* The literal `token` next (after blanks): consumed. */
static bool accept(struct cursor *c, const char *token)
{
    skip_blanks(c);
    const size_t n = strlen(token);
    if (strncmp(c->text + c->at, token, n) != 0)
        return false;
    c->at += n;
    return true;
}

static bool expect(struct cursor *c, const char *token, const char *after)
{
    if (accept(c, token))
        return true;
    return fail_at(c, c->at, "expected '%s' %s", token, after);
}

static bool is_word_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || ch == '-';
}

/* A word of [a-z-] (the keywords) into `out`; "" when none is there. */
static void read_word(struct cursor *c, char *out, size_t size)
{
    skip_blanks(c);
    size_t n = 0;
    while (is_word_char(c->text[c->at])) {
        if (n + 1 < size)
            out[n++] = c->text[c->at];
        c->at++;
    }
    out[n] = '\0';
}

/* A token up to a blank, ',', ')' or the end (a number with its unit, a path, a rank set). */
static size_t read_token(struct cursor *c, char *out, size_t size, const char *stops)
{
    skip_blanks(c);
    const size_t start = c->at;
    size_t n = 0;
    while (c->text[c->at] && c->text[c->at] != ' ' && c->text[c->at] != '\t' &&
           !strchr(stops, c->text[c->at])) {
        if (n + 1 < size)
            out[n++] = c->text[c->at];
        c->at++;
    }
    out[n] = '\0';
    return start;
}

/* "(NAME)": everything up to the matching ')', trimmed. */
static bool read_name(struct cursor *c, char *out, size_t size, const char *what)
{
    if (!expect(c, "(", what))
        return false;
    const size_t start = c->at;
    int depth = 1;
    size_t end = c->at;
    while (c->text[end]) {
        if (c->text[end] == '(')
            depth++;
        else if (c->text[end] == ')' && --depth == 0)
            break;
        end++;
    }
    if (!c->text[end])
        return fail_at(c, start, "no ')' closes this name");
    size_t first = start, last = end;
    while (first < last && (c->text[first] == ' ' || c->text[first] == '\t'))
        first++;
    while (last > first && (c->text[last - 1] == ' ' || c->text[last - 1] == '\t'))
        last--;
    if (first == last)
        return fail_at(c, start, "the name is empty");
    if (last - first >= size)
        return fail_at(c, start, "the name is longer than %zu bytes", size - 1);
    memcpy(out, c->text + first, last - first);
    out[last - first] = '\0';
    c->at = end + 1;
    return true;
}

static bool read_duration(struct cursor *c, uint64_t *ns, const char *what)
{
    char token[64];
    const size_t start = read_token(c, token, sizeof token, ",)=;");
    if (!token[0] || !otfx_duration_parse(token, ns))
        return fail_at(c, start, "%s must be a time like 50ms, 1.5s, 10us, 100ns or plain seconds%s%s%s",
                       what, token[0] ? ", not '" : "", token, token[0] ? "'" : "");
    return true;
}

static bool read_count(struct cursor *c, uint64_t *value, uint64_t max, const char *what, const char *stops)
{
    char token[64];
    const size_t start = read_token(c, token, sizeof token, stops);
    char *end = NULL;
    const unsigned long long parsed = token[0] >= '0' && token[0] <= '9' ? strtoull(token, &end, 10) : 0;
    if (!end || *end || parsed > max)
        return fail_at(c, start, "%s must be a whole number up to %" PRIu64 "%s%s%s", what, max,
                       token[0] ? ", not '" : "", token, token[0] ? "'" : "");
    *value = parsed;
    return true;
}

/* Bytes with an optional K, M or G (powers of 1024). */
static bool read_size(struct cursor *c, uint64_t *bytes)
{
    char token[64];
    const size_t start = read_token(c, token, sizeof token, ",=;");
    char *end = NULL;
    unsigned long long value = token[0] >= '0' && token[0] <= '9' ? strtoull(token, &end, 10) : 0;
    unsigned shift = 0;
    if (end && (*end == 'K' || *end == 'M' || *end == 'G')) {
        shift = *end == 'K' ? 10 : *end == 'M' ? 20 : 30;
        end++;
    }
    if (!end || *end || value > (UINT64_MAX >> shift))
        return fail_at(c, start,
                       "the size must be bytes with an optional K, M or G (e.g. 4096, 64K, 1M)%s%s%s",
                       token[0] ? ", not '" : "", token, token[0] ? "'" : "");
    *bytes = (uint64_t)value << shift;
    return true;
}

static bool read_condition(struct cursor *c, otfx_trigger_spec *out)
{
    char word[32];
    skip_blanks(c);
    const size_t start = c->at;
    read_word(c, word, sizeof word);
    if (strcmp(word, "duration") == 0 || strcmp(word, "count") == 0 || strcmp(word, "rate") == 0) {
        out->condition = word[0] == 'd'   ? OTFX_TRIGGER_DURATION
                         : word[0] == 'c' ? OTFX_TRIGGER_COUNT
                                          : OTFX_TRIGGER_RATE;
        if (!read_name(c, out->name, sizeof out->name, "and a region name after the condition"))
            return false;
        if (!expect(c, ">", "and a threshold after the region"))
            return false;
        if (out->condition == OTFX_TRIGGER_DURATION)
            return read_duration(c, &out->threshold, "the duration");
        if (out->condition == OTFX_TRIGGER_COUNT)
            return read_count(c, &out->threshold, UINT64_MAX - 1, "the count", ",=;");
        if (!read_count(c, &out->threshold, UINT32_MAX, "the rate", "/,=;"))
            return false;
        return expect(c, "/s", "after the rate (visits per second)");
    }
    if (strcmp(word, "message") == 0) {
        out->condition = OTFX_TRIGGER_MESSAGE;
        return expect(c, ">", "and a size after message") && read_size(c, &out->threshold);
    }
    if (strcmp(word, "hang") == 0) {
        out->condition = OTFX_TRIGGER_HANG;
        if (!expect(c, ">", "and a time after hang") || !read_duration(c, &out->threshold, "the time"))
            return false;
        if (out->threshold == 0)
            return fail_at(c, start, "hang needs a time above zero");
        return true;
    }
    if (strcmp(word, "metric") == 0) {
        out->condition = OTFX_TRIGGER_METRIC;
        if (!read_name(c, out->name, sizeof out->name, "and a metric name after metric") ||
            !expect(c, ">", "and a threshold after the metric"))
            return false;
        char token[64];
        const size_t at = read_token(c, token, sizeof token, ",=;");
        char *end = NULL;
        out->metric_threshold = token[0] ? strtod(token, &end) : 0;
        if (!end || *end || !isfinite(out->metric_threshold))
            return fail_at(c, at, "the metric's threshold must be a number%s%s%s", token[0] ? ", not '" : "",
                           token, token[0] ? "'" : "");
        return true;
    }
    if (strcmp(word, "marker") == 0) {
        out->condition = OTFX_TRIGGER_MARKER;
        return read_name(c, out->name, sizeof out->name, "and the marker's name after marker");
    }
    if (strcmp(word, "late-sender") == 0) {
        out->condition = OTFX_TRIGGER_LATE_SENDER;
        skip_blanks(c);
        if (c->text[c->at] == '(')
            return fail_at(c, c->at,
                           "late-sender takes no region: 'late-sender > TIME', a receive's call that began "
                           "TIME before its send's; seen only when one event place serves both ranks, "
                           "the others are counted as unseen");
        if (!expect(c, ">", "and a time after late-sender (late-sender > TIME)") ||
            !read_duration(c, &out->threshold, "the time"))
            return false;
        return true;
    }
    if (strcmp(word, "late-receiver") == 0 || strcmp(word, "wait") == 0)
        return fail_at(c, start,
                       "%s is not a condition (it needs what the other ranks did, which other places "
                       "hold); use late-sender > TIME, duration(MPI_Send) > TIME or the wait-states query",
                       word);
    if (!word[0] && c->text[c->at] == '\0')
        return fail_at(c, start, "empty trigger: expected a condition");
    return fail_at(c, start,
                   "expected a condition: duration(REGION), count(REGION), rate(REGION), message, "
                   "metric(NAME), marker(NAME), hang or late-sender");
}

static bool read_snapshot(struct cursor *c, otfx_trigger_spec *out)
{
    if (!expect(c, "(", "after snapshot: snapshot(-TIME[,+TIME]) to PATH"))
        return false;
    if (!expect(c, "-", "before the time the snapshot reaches back (e.g. snapshot(-1s) to DIR)") ||
        !read_duration(c, &out->snapshot_before_ns, "the time before the firing"))
        return false;
    if (accept(c, ",")) {
        if (!expect(c, "+",
                    "before the time the snapshot reaches forward (e.g. snapshot(-1s,+0.5s) to DIR)") ||
            !read_duration(c, &out->snapshot_after_ns, "the time after the firing"))
            return false;
    }
    if (!expect(c, ")", "after the snapshot's times"))
        return false;
    char word[8];
    skip_blanks(c);
    const size_t at = c->at;
    read_word(c, word, sizeof word);
    if (strcmp(word, "to") != 0)
        return fail_at(c, at, "expected 'to PATH' after snapshot(…)");
    const size_t path_at = read_token(c, out->snapshot_path, sizeof out->snapshot_path, ",;");
    if (!out->snapshot_path[0])
        return fail_at(c, path_at, "expected the snapshot's PATH after 'to'");
    if (c->at - path_at >= sizeof out->snapshot_path)
        return fail_at(c, path_at, "the snapshot path is longer than %zu bytes",
                       sizeof out->snapshot_path - 1);
    return true;
}

static bool read_actions(struct cursor *c, otfx_trigger_spec *out)
{
    do {
        char word[32];
        skip_blanks(c);
        const size_t start = c->at;
        read_word(c, word, sizeof word);
        uint32_t action = 0;
        if (strcmp(word, "pause-app") == 0)
            action = OTFX_TRIGGER_PAUSE_APP;
        else if (strcmp(word, "pause-recording") == 0)
            action = OTFX_TRIGGER_PAUSE_RECORDING;
        else if (strcmp(word, "notify") == 0)
            action = OTFX_TRIGGER_NOTIFY;
        else if (strcmp(word, "snapshot") == 0)
            action = OTFX_TRIGGER_SNAPSHOT;
        else
            return fail_at(
                c, start,
                "expected an action: pause-app, pause-recording, notify or snapshot(-TIME[,+TIME]) "
                "to PATH");
        if (out->actions & action)
            return fail_at(c, start, "the action '%s' is given twice", word);
        out->actions |= action;
        if (action == OTFX_TRIGGER_SNAPSHOT && !read_snapshot(c, out))
            return false;
    } while (accept(c, ","));
    return true;
}

bool otfx_trigger_parse(const char *text, otfx_trigger_spec *out, size_t *error_column, char *error,
                        size_t error_size)
{
    memset(out, 0, sizeof *out);
    struct cursor c = {.text = text ? text : "", .error = error, .error_size = error_size};
    if (error && error_size)
        error[0] = '\0';
    bool ok = true;
    if (strlen(c.text) > OTFX_TRIGGER_MAX_TEXT)
        ok = fail_at(&c, OTFX_TRIGGER_MAX_TEXT, "the trigger is longer than %u bytes", OTFX_TRIGGER_MAX_TEXT);
    ok = ok && read_condition(&c, out);
    char word[16];
    if (ok) {
        skip_blanks(&c);
        size_t at = c.at;
        read_word(&c, word, sizeof word);
        if (strcmp(word, "on") == 0) {
            char ranks[8];
            skip_blanks(&c);
            const size_t ranks_at = c.at;
            read_word(&c, ranks, sizeof ranks);
            if (strcmp(ranks, "ranks") != 0) {
                ok = fail_at(&c, ranks_at, "expected 'ranks SET' after 'on'");
            } else {
                char set[512];
                const size_t set_at = read_token(&c, set, sizeof set, "=;");
                if (!otfx_rank_set_parse(set, &out->ranks))
                    ok = fail_at(&c, set_at,
                                 "the ranks must be 'all' or a list like 0-3,7 (at most 32 ranges)");
            }
            skip_blanks(&c);
            at = c.at;
            read_word(&c, word, sizeof word);
        }
        if (ok && strcmp(word, "after") == 0) {
            ok = read_duration(&c, &out->after_ns, "the time after the start");
            skip_blanks(&c);
            at = c.at;
        } else if (ok) {
            c.at = at; /* not a keyword of this part: "=>" comes next */
        }
        if (ok && !accept(&c, "=>"))
            ok = fail_at(&c, at,
                         "expected '=>' and the actions (or 'on ranks SET', 'after TIME' before them)");
    }
    ok = ok && read_actions(&c, out);
    out->times = 1;
    if (ok && !at_end(&c)) {
        const size_t at = c.at;
        read_word(&c, word, sizeof word);
        uint64_t times = 0;
        if (strcmp(word, "times") != 0)
            ok = fail_at(&c, at, "expected ',' and another action, 'times N' or the end");
        else if (!read_count(&c, &times, OTFX_TRIGGER_MAX_TIMES, "times", ";") || times == 0)
            ok = c.failed ? false : fail_at(&c, at, "times must be at least 1");
        else
            out->times = (uint32_t)times;
        if (ok && !at_end(&c))
            ok = fail_at(&c, c.at, "unexpected text after the trigger");
    }
    if (!ok) {
        if (error_column)
            *error_column = c.error_at + 1;
        memset(out, 0, sizeof *out);
    }
    return ok;
}

const char *otfx_trigger_condition_name(otfx_trigger_condition condition)
{
    switch (condition) {
    case OTFX_TRIGGER_DURATION:
        return "duration";
    case OTFX_TRIGGER_COUNT:
        return "count";
    case OTFX_TRIGGER_RATE:
        return "rate";
    case OTFX_TRIGGER_MESSAGE:
        return "message";
    case OTFX_TRIGGER_METRIC:
        return "metric";
    case OTFX_TRIGGER_MARKER:
        return "marker";
    case OTFX_TRIGGER_HANG:
        return "hang";
    case OTFX_TRIGGER_LATE_SENDER:
        return "late-sender";
    }
    return "unknown";
}

void otfx_trigger_format(const otfx_trigger_spec *spec, otfx_text *out)
{
    const char *condition = otfx_trigger_condition_name(spec->condition);
    switch (spec->condition) {
    case OTFX_TRIGGER_DURATION:
        otfx_text_appendf(out, "duration(%s) > %" PRIu64 "ns", spec->name, spec->threshold);
        break;
    case OTFX_TRIGGER_COUNT:
        otfx_text_appendf(out, "count(%s) > %" PRIu64, spec->name, spec->threshold);
        break;
    case OTFX_TRIGGER_RATE:
        otfx_text_appendf(out, "rate(%s) > %" PRIu64 "/s", spec->name, spec->threshold);
        break;
    case OTFX_TRIGGER_MESSAGE:
        otfx_text_appendf(out, "message > %" PRIu64, spec->threshold);
        break;
    case OTFX_TRIGGER_METRIC:
        otfx_text_appendf(out, "metric(%s) > %.17g", spec->name, spec->metric_threshold);
        break;
    case OTFX_TRIGGER_MARKER:
        otfx_text_appendf(out, "marker(%s)", spec->name);
        break;
    case OTFX_TRIGGER_HANG:
        otfx_text_appendf(out, "hang > %" PRIu64 "ns", spec->threshold);
        break;
    case OTFX_TRIGGER_LATE_SENDER:
        otfx_text_appendf(out, "late-sender > %" PRIu64 "ns", spec->threshold);
        break;
    default:
        otfx_text_appendf(out, "%s", condition);
        break;
    }
    if (spec->ranks.count) {
        char ranks[32 * 24];
        otfx_rank_set_format(&spec->ranks, ranks, sizeof ranks);
        otfx_text_appendf(out, " on ranks %s", ranks);
    }
    if (spec->after_ns)
        otfx_text_appendf(out, " after %" PRIu64 "ns", spec->after_ns);
    otfx_text_append(out, " =>", 3);
    const char *separator = " ";
    if (spec->actions & OTFX_TRIGGER_PAUSE_APP) {
        otfx_text_appendf(out, "%spause-app", separator);
        separator = ", ";
    }
    if (spec->actions & OTFX_TRIGGER_PAUSE_RECORDING) {
        otfx_text_appendf(out, "%spause-recording", separator);
        separator = ", ";
    }
    if (spec->actions & OTFX_TRIGGER_SNAPSHOT) {
        otfx_text_appendf(out, "%ssnapshot(-%" PRIu64 "ns", separator, spec->snapshot_before_ns);
        if (spec->snapshot_after_ns)
            otfx_text_appendf(out, ",+%" PRIu64 "ns", spec->snapshot_after_ns);
        otfx_text_appendf(out, ") to %s", spec->snapshot_path);
        separator = ", ";
    }
    if (spec->actions & OTFX_TRIGGER_NOTIFY)
        otfx_text_appendf(out, "%snotify", separator);
    if (spec->times != 1)
        otfx_text_appendf(out, " times %" PRIu32, spec->times);
}

bool otfx_trigger_list_parse(const char *list, bool (*add)(void *user, const otfx_trigger_spec *spec),
                             void *user, size_t *index, size_t *error_column, char *error, size_t error_size)
{
    const char *p = list ? list : "";
    size_t number = 0;
    while (*p) {
        const char *end = strchr(p, ';');
        const size_t length = end ? (size_t)(end - p) : strlen(p);
        number++;
        char *one = strndup(p, length);
        if (!one) {
            snprintf(error, error_size, "out of memory");
            *index = number;
            *error_column = 1;
            return false;
        }
        bool blank = true;
        for (size_t i = 0; i < length; i++)
            blank = blank && (one[i] == ' ' || one[i] == '\t' || one[i] == '\n');
        otfx_trigger_spec spec;
        bool ok = blank || otfx_trigger_parse(one, &spec, error_column, error, error_size);
        free(one);
        if (!ok) {
            *index = number;
            return false;
        }
        if (!blank && !add(user, &spec)) {
            snprintf(error, error_size, "too many triggers (at most %u)", OTFX_TRIGGER_MAX_COUNT);
            *index = number;
            *error_column = 1;
            return false;
        }
        p += length;
        if (*p == ';')
            p++;
    }
    return true;
}

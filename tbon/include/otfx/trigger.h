/*
 * otfx/trigger.h — triggers: a condition the event places evaluate on the incoming events, and what the
 * whole job does when it holds (library otfx_protocol; no MPI). One parser serves otfx-run (--trigger,
 * checked before the job starts), otfxctl and the root (`trigger add`) and the places (OTFX_TRIGGERS).
 * docs/usage.md, "Triggers", is the manual for people; the grammar:
 *
 *   trigger   := condition [on ranks SET] [after TIME] => action {, action} [times N]
 *   condition := duration(REGION) > TIME     a call of REGION (an MPI function, a user function, an
 *                                            otfx.h region) that took longer than TIME, seen at its end
 *              | count(REGION) > N           a rank entered REGION more than N times since the trigger
 *                                            was (re-)armed
 *              | rate(REGION) > R/s          a rank entered REGION more than R times within one second
 *              | message > SIZE              a message larger than SIZE bytes sent or received
 *              | metric(NAME) > X            a metric value (OTFX_METRICS) above X, as the rank read it
 *              | marker(NAME)                the application called otfx_trigger("NAME")
 *              | hang > TIME                 a running, recording rank that recorded no event for TIME
 *              | late-sender > TIME          a receive (MPI_Recv, or the Wait/Test completing an IRECV)
 *                                            whose call began more than TIME before the matching send's
 *                                            call (docs/analyses.md); seen only where one event place
 *                                            serves both ranks (the others are counted as unseen)
 *   action    := pause-app | pause-recording | notify
 *              | snapshot(-TIME[,+TIME]) to PATH   the TIME before the firing event (and the TIME after it)
 *                                                  as an OTF2 archive under the snapshot directory
 *
 * TIME is a number with a unit s, ms, us, ns (plain: seconds); SIZE a number of bytes with an optional
 * K, M, G (powers of 1024); SET "all" or a list like 0-3,7; N from 1 to 1000000. Blanks between tokens
 * are optional; a REGION or NAME is everything up to its closing parenthesis (parentheses inside it
 * must balance), leading and trailing blanks dropped. Words are case-sensitive.
 */
#ifndef OTFX_TRIGGER_H
#define OTFX_TRIGGER_H

#include <otfx/protocol.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest trigger text (its canonical form travels in a command's path). */
#define OTFX_TRIGGER_MAX_TEXT 1023u
/* The most triggers the job holds at once (a place keeps one bit per trigger per region). */
#define OTFX_TRIGGER_MAX_COUNT 32u
#define OTFX_TRIGGER_MAX_TIMES 1000000u
/* The phase region otfx_trigger("NAME") records: this prefix and NAME. */
#define OTFX_TRIGGER_MARKER_PREFIX "trigger:"

typedef enum otfx_trigger_condition {
    OTFX_TRIGGER_DURATION = 1, /* threshold: ns */
    OTFX_TRIGGER_COUNT,        /* threshold: visits */
    OTFX_TRIGGER_RATE,         /* threshold: visits per second */
    OTFX_TRIGGER_MESSAGE,      /* threshold: bytes */
    OTFX_TRIGGER_METRIC,       /* metric_threshold */
    OTFX_TRIGGER_MARKER,       /* name only */
    OTFX_TRIGGER_HANG,         /* threshold: ns */
    OTFX_TRIGGER_LATE_SENDER   /* threshold: ns of waiting (send enter - receive enter) */
} otfx_trigger_condition;

/* The largest otfx_trigger_condition (tables by condition). */
#define OTFX_TRIGGER_CONDITION_MAX OTFX_TRIGGER_LATE_SENDER

enum otfx_trigger_action {
    OTFX_TRIGGER_PAUSE_APP = 1u << 0,
    OTFX_TRIGGER_PAUSE_RECORDING = 1u << 1,
    OTFX_TRIGGER_SNAPSHOT = 1u << 2,
    OTFX_TRIGGER_NOTIFY = 1u << 3
};

typedef struct otfx_trigger_spec {
    otfx_trigger_condition condition;
    char name[256];          /* REGION, metric or marker NAME ("" for message, hang, late-sender) */
    uint64_t threshold;      /* ns (duration, hang, late-sender), visits (count, rate: per s), bytes */
    double metric_threshold; /* metric */
    otfx_rank_set ranks;     /* on ranks SET (count 0: every rank) */
    uint64_t after_ns;       /* after TIME: only events this long after the places started (0: any) */
    uint32_t actions;        /* enum otfx_trigger_action bits, at least one */
    uint64_t snapshot_before_ns, snapshot_after_ns;
    char snapshot_path[512];
    uint32_t times; /* the job acts on at most this many firings (1 unless `times N`) */
} otfx_trigger_spec;

/* Parses one trigger. Returns false with *error_column (1-based position in `text` where the problem
 * is) and a sentence in `error`; `out` is zeroed first. */
bool otfx_trigger_parse(const char *text, otfx_trigger_spec *out, size_t *error_column, char *error,
                        size_t error_size);
/* The canonical text of a trigger (times in ns): parse(format(s)) == s. */
void otfx_trigger_format(const otfx_trigger_spec *spec, otfx_text *out);
/* "duration", "count", … */
const char *otfx_trigger_condition_name(otfx_trigger_condition condition);

/* A list of triggers separated by ';' (OTFX_TRIGGERS, otfx-run --trigger): calls `add` for each one in
 * order. Returns false at the first one that does not parse, with its number (1-based) in *index and
 * the column within it. */
bool otfx_trigger_list_parse(const char *list, bool (*add)(void *user, const otfx_trigger_spec *spec),
                             void *user, size_t *index, size_t *error_column, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif

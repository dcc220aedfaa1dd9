/*
 * otfx/protocol.h — the wire protocol between the tree's root server and its clients (otfxctl,
 * otfx-gui, third parties). docs/protocol.md is the manual for people; this header is the one
 * implementation every component shares (library otfx_protocol, no MPI, no libevent).
 *
 * A connection is a sequence of frames in both directions. A frame is a 16-byte header, all fields
 * big-endian, then `length` payload bytes:
 *
 *   uint32 magic    0x4F544658 ("OTFX")
 *   uint16 version  OTFX_PROTOCOL_VERSION
 *   uint16 kind     enum otfx_frame_kind
 *   uint32 request  the client's request id, echoed in every answer to it (0 for notices)
 *   uint32 length   payload bytes (≤ OTFX_PROTOCOL_MAX_REQUEST from clients, ≤ OTFX_PROTOCOL_MAX_REPLY
 *                   from the server)
 *
 * Payloads are UTF-8 text. A request's payload is one command line (otfx_command_parse). Every other
 * payload is a list of "record lines": `TYPE key=value key=value ...\n`, where TYPE and keys are
 * [a-z0-9_-]+ and values are percent-encoded (otfx_kv_*): a client needs no JSON library, and otfxctl
 * --json maps each line to one JSON object.
 */
#ifndef OTFX_PROTOCOL_H
#define OTFX_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTFX_PROTOCOL_MAGIC       0x4F544658u
#define OTFX_PROTOCOL_VERSION     1u
#define OTFX_FRAME_HEADER_BYTES   16u
#define OTFX_PROTOCOL_MAX_REQUEST (64u * 1024u)
#define OTFX_PROTOCOL_MAX_REPLY   (64u * 1024u * 1024u)

typedef enum otfx_frame_kind {
    OTFX_FRAME_HELLO = 1,   /* client → server, first frame: "hello token=HEX client=NAME" */
    OTFX_FRAME_WELCOME = 2, /* server → client: "session job=… ranks=N places=P version=1 …" */
    OTFX_FRAME_REQUEST = 3, /* client → server: one command line */
    OTFX_FRAME_PARTIAL = 4, /* server → client: a merged result without the slowest subtrees yet
                             * (its first line says partial=1 and how many places answered) */
    OTFX_FRAME_REPLY = 5,   /* server → client: the final answer to a request */
    OTFX_FRAME_ERROR = 6,   /* server → client: "error code=CODE message=TEXT" (request 0: about the
                             * connection; the server closes it after a protocol error) */
    OTFX_FRAME_NOTICE = 7,  /* server → client, unasked: "notice event=job-ended" etc. */
    OTFX_FRAME_KIND_MAX = 7
} otfx_frame_kind;

typedef struct otfx_frame_header {
    uint16_t version;
    uint16_t kind;
    uint32_t request;
    uint32_t length;
} otfx_frame_header;

typedef enum otfx_frame_status {
    OTFX_FRAME_OK = 0,        /* a whole header was parsed (the payload may still be incomplete) */
    OTFX_FRAME_NEED_MORE = 1, /* fewer than 16 bytes */
    OTFX_FRAME_BAD_MAGIC = -1,
    OTFX_FRAME_BAD_VERSION = -2,
    OTFX_FRAME_BAD_KIND = -3,
    OTFX_FRAME_TOO_LARGE = -4 /* length above the limit the caller passed */
} otfx_frame_status;

/* Parses the header at the start of `data`; `max_length` is the largest payload the reader accepts. */
otfx_frame_status otfx_frame_parse_header(const void *data, size_t size, size_t max_length,
                                          otfx_frame_header *header);
/* Writes a 16-byte header into `out`. */
void otfx_frame_write_header(void *out, otfx_frame_kind kind, uint32_t request, uint32_t length);
const char *otfx_frame_status_text(otfx_frame_status status);

/* ---- record lines ------------------------------------------------------------------------------- */

/* A growing text buffer (payloads are built with it). */
typedef struct otfx_text {
    char *data;
    size_t length, capacity;
    bool failed; /* out of memory once: every later append is ignored */
} otfx_text;

void otfx_text_free(otfx_text *text);
void otfx_text_append(otfx_text *text, const char *bytes, size_t length);
/* printf into the text. */
void otfx_text_appendf(otfx_text *text, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Whether [text, text + length) is well-formed UTF-8 (no overlong forms, surrogates or code points above
 * U+10FFFF) without control characters (C0, DEL, C1). Names and paths in command lines must be. */
bool otfx_text_is_clean_utf8(const char *text, size_t length);
/* Appends `value` percent-encoded: every byte outside 0x21–0x7e, '%' and '=' become %XX (upper-case
 * hex). Record-line values and command-line words use this encoding. */
void otfx_text_append_encoded(otfx_text *text, const char *value);
/* Starts a line "TYPE". */
void otfx_kv_begin(otfx_text *text, const char *type);
/* Appends " key=value" (value percent-encoded), " key=123", " key=-5", " key=1.5". */
void otfx_kv_str(otfx_text *text, const char *key, const char *value);
void otfx_kv_u64(otfx_text *text, const char *key, uint64_t value);
void otfx_kv_i64(otfx_text *text, const char *key, int64_t value);
void otfx_kv_f64(otfx_text *text, const char *key, double value);
/* Ends the line with '\n'. */
void otfx_kv_end(otfx_text *text);

#define OTFX_KV_MAX_FIELDS 64
typedef struct otfx_kv_line {
    char type[32];
    size_t count;
    struct {
        char key[32];
        char *value; /* decoded, NUL-terminated, points into the line's own storage */
    } fields[OTFX_KV_MAX_FIELDS];
    char *storage;
} otfx_kv_line;

/* Parses one line (without its '\n'). Returns false for a malformed line (bad type or key, bad
 * escape, too many fields). Free with otfx_kv_line_free. */
bool otfx_kv_parse(const char *line, size_t length, otfx_kv_line *out);
void otfx_kv_line_free(otfx_kv_line *line);
/* The value of `key`, or NULL. */
const char *otfx_kv_get(const otfx_kv_line *line, const char *key);
/* Iterates over the lines of a payload: sets *line and *line_length to the next line (without '\n'; a
 * last line without '\n' counts too) and advances *offset; false when no line is left. */
bool otfx_kv_next_line(const char *payload, size_t length, size_t *offset, const char **line,
                       size_t *line_length);

/* ---- commands --------------------------------------------------------------------------------- */

typedef enum otfx_command_kind {
    OTFX_CMD_STATUS = 1,
    OTFX_CMD_RECORD_PAUSE,
    OTFX_CMD_RECORD_RESUME,
    OTFX_CMD_RECORD_WINDOW, /* duration_ns */
    OTFX_CMD_APP_PAUSE,
    OTFX_CMD_APP_RESUME,
    OTFX_CMD_RESET,
    OTFX_CMD_REDUCTION,         /* strategy */
    OTFX_CMD_ENABLE,            /* classes */
    OTFX_CMD_DISABLE,           /* classes */
    OTFX_CMD_SNAPSHOT,          /* path, from/to, ranks, overwrite */
    OTFX_CMD_PROFILE,           /* from/to, ranks, compensated */
    OTFX_CMD_TIMELINE,          /* from/to, ranks, bins, rows, compensated */
    OTFX_CMD_MESSAGES,          /* from/to, ranks, groups */
    OTFX_CMD_EVENTS,            /* from/to, ranks, limit */
    OTFX_CMD_LOAD_MODULE,       /* path */
    OTFX_CMD_QUERY,             /* module (a loaded module's name), from/to, ranks, bins, rows, limit */
    OTFX_CMD_CRITICAL_PATH,     /* from/to, ranks, zero, top, limit (path segments), follow, no_flush */
    OTFX_CMD_WAIT_STATES,       /* from/to, ranks, top, limit (rank pairs), follow, no_flush */
    OTFX_CMD_STRUCTURE,         /* ranks, top (paths per group), group_tolerance_ppm */
    OTFX_CMD_METRICS_SET,       /* metrics: what the ranks read from now on */
    OTFX_CMD_METRICS_ADD,       /* metrics: read these too */
    OTFX_CMD_METRICS_REMOVE,    /* metrics: stop reading these */
    OTFX_CMD_METRICS_LIST,      /* what each rank reads, and what it could not */
    OTFX_CMD_METRICS_AVAILABLE, /* the metric table, with what the ranks can count */
    OTFX_CMD_METRIC_TIMELINE,   /* metrics (one name), from/to, ranks, bins, rows */
    /* triggers (otfx/trigger.h): add SPEC (path: the trigger's text), list, remove ID (trigger_id); arm ID
     * is the root's own command to the places (never parsed from a client): the trigger acts again */
    OTFX_CMD_TRIGGER_ADD,
    OTFX_CMD_TRIGGER_LIST,
    OTFX_CMD_TRIGGER_REMOVE,
    OTFX_CMD_TRIGGER_ARM,
    OTFX_CMD_OVERHEAD_MEASURE, /* every rank measures its recording costs again */
    OTFX_CMD_COUNT
} otfx_command_kind;

/* Event classes of enable/disable, as a bit set (the same bits the capture library uses). Not otfx's
 * otfx_event_class (trace.h: the classes reduction by type removes). */
enum otfx_steer_class {
    OTFX_STEER_P2P = 1u << 0,        /* "p2p": point-to-point */
    OTFX_STEER_COLLECTIVE = 1u << 1, /* "collective" */
    OTFX_STEER_OTHER_MPI = 1u << 2,  /* "mpi-other": every other MPI function */
    OTFX_STEER_USER = 1u << 3,       /* "user": user functions and otfx.h regions */
    OTFX_STEER_ALL = 0xfu
};

/* A set of application ranks: "all" or a list like "0-3,7". */
#define OTFX_RANKS_ALL UINT32_MAX
typedef struct otfx_rank_set {
    uint32_t count; /* ranges used; 0: all ranks */
    struct {
        uint32_t first, last;
    } ranges[32];
} otfx_rank_set;
bool otfx_rank_set_contains(const otfx_rank_set *set, uint32_t rank);
/* Writes "all" or "0-3,7" (for record lines). */
void otfx_rank_set_format(const otfx_rank_set *set, char *out, size_t size);
bool otfx_rank_set_parse(const char *text, otfx_rank_set *out);

/* Limits of the numeric options (docs/protocol.md section 5). */
#define OTFX_COMMAND_MAX_BINS  10000u
#define OTFX_COMMAND_MAX_ROWS  4096u
#define OTFX_COMMAND_MAX_LIMIT 10000000u
/* `record window`: the window's end (now + duration) must stay a time on the 64-bit clock. */
#define OTFX_COMMAND_MAX_WINDOW_NS ((uint64_t)INT64_MAX)

#define OTFX_GROUP_TOLERANCE_INF UINT32_MAX

/* A parsed command line. Times are ns on the job's global clock; without --from/--to a query covers
 * everything held (from = 0, to = UINT64_MAX, from_given/to_given false); `--from 0` is a given time.
 * Durations and times accept a unit: 2s, 500ms, 10us, 100ns (plain: seconds). Words must be UTF-8
 * text without control characters once percent-decoded. */
typedef struct otfx_command {
    otfx_command_kind kind;
    uint64_t from, to;
    uint64_t duration_ns;
    otfx_rank_set ranks;
    uint32_t bins, rows, groups, limit;
    uint32_t classes;  /* enum otfx_steer_class bits */
    char strategy[16]; /* ring|time|type|depth|stop */
    char path[1024];   /* snapshot / load-module */
    char module[64];   /* query */
    char zero[256];    /* critical-path --zero FUNC: the region whose time is set to zero ("": none) */
    uint32_t top;      /* critical-path, wait-states --top M: the M largest functions (0: the default) */
    /* critical-path, wait-states --follow ID (1 .. 2^63-1; 0: not given): the places keep this query's
     * replay under ID and each later query with the same ID and options only replays what arrived since
     * (a client repeats it to follow the live stream: otfxctl critical-path --follow). */
    uint64_t follow;
    /* critical-path, wait-states --no-flush: answer from what the ranks have sent; without it the ranks
     * are first asked to send what they buffered (otfx_command_flushes_first). */
    bool no_flush;
    /* structure --group-tolerance PCT: how far (relative) two ranks' computation times may differ and the
     * ranks still be one group, in millionths (2 % is 20000; 0: not given, the module's default 2 %;
     * OTFX_GROUP_TOLERANCE_INF, "inf": times do not matter, only the structure). */
    uint32_t group_tolerance_ppm;
    /* profile, timeline --compensated: times with the measurement's intrusion taken out
     * (docs/analyses.md, "Overhead compensation"): a replay across the event places. */
    bool compensated;
    /* metrics set|add|remove: a comma list of metric names ([A-Za-z0-9:._-], docs/usage.md "Metrics"); the
     * places check the names against their metric table. profile --metrics [LIST]: the metrics of the
     * metric profile ("all" when given without a list; "": a profile of time). metric-timeline NAME: the
     * metric. */
    char metrics[256];
    bool overwrite;
    bool from_given, to_given; /* --from / --to were given (a module may treat an open end differently) */
    uint64_t trigger_id;       /* trigger remove ID */
} otfx_command;

/* Parses e.g. "profile --from 1s --to 2s --ranks 0-3", "snapshot run1 --overwrite",
 * "record window 2s", "disable p2p,user". Words are separated by blanks and percent-decoded (a path
 * with a blank is sent as "snapshot my%20run"); "--opt=value" equals "--opt value". Returns false and
 * writes why into `error`; `out` is zeroed first (so two parses of one line compare equal with memcmp). */
bool otfx_command_parse(const char *line, otfx_command *out, char *error, size_t error_size);
/* "2s", "1.5ms", "250us", "100ns", "3" (seconds) → ns, as command lines write times; false for anything
 * else (finer than a nanosecond, beyond the 64-bit clock, another unit). */
bool otfx_duration_parse(const char *text, uint64_t *ns);
/* Whether the places ask their ranks to send what they buffered before they answer the command: the
 * replay analyses (critical-path, wait-states) do unless --no-flush, so that they see up to now. */
bool otfx_command_flushes_first(const otfx_command *command);
/* The canonical command line of a command (what otfxctl sends; parse(format(c)) == c). */
void otfx_command_format(const otfx_command *command, otfx_text *out);
const char *otfx_command_name(otfx_command_kind kind);

/* Error codes of OTFX_FRAME_ERROR lines ("error code=… message=…"). */
#define OTFX_ERR_CODE_BAD_FRAME   "bad-frame"   /* connection closed */
#define OTFX_ERR_CODE_AUTH        "auth"        /* missing or wrong token: connection closed */
#define OTFX_ERR_CODE_BAD_COMMAND "bad-command" /* the request's line did not parse */
#define OTFX_ERR_CODE_BUSY        "busy"        /* too many requests in flight on this connection */
#define OTFX_ERR_CODE_FAILED      "failed"      /* the tree could not carry it out (message says why) */
#define OTFX_ERR_CODE_JOB_ENDED   "job-ended"   /* the application finished; the tree is going down */

#ifdef __cplusplus
}
#endif
#endif

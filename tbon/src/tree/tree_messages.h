/*
 * tree_messages.h — the tree's own messages between places on tree_comm (private to the tree runtime,
 * tbon/src/tree/).
 *
 * Every message is one MPI message of MPI_BYTE with tag TREE_TAG on tree_comm (a dup of the places'
 * communicator: a place's rank in it is its place index). Layout, all integers little-endian:
 *
 *   header   u32 magic TREE_MAGIC ("OTXT"), u16 version TREE_VERSION, u16 kind (enum tree_kind),
 *            u32 request (the root's tree request id; 0 for DONE and SHUTDOWN), u32 payload bytes
 *   QUERY, COMMAND, LOAD_MODULE
 *            u64 argument (RECORD_WINDOW: the window's end on the place clock), then the command:
 *            u32 kind, u64 from, u64 to, u64 duration_ns, u32 range count (≤ 32) and that many
 *            u32 first/last pairs, u32 bins, rows, groups, limit, classes, u8 flags (1 overwrite,
 *            2 from given, 4 to given, 8 no flush, 16 compensated),
 *            str strategy, str path, str module          (str: u32 length, bytes, no NUL),
 *            u32 top, str zero, u64 follow, u32 group tolerance (ppm), str metrics
 *   RESULT   u32 leaves answered, u32 leaves failed, str error text, u32 length + the module's
 *            partial result (otfx/analysis.h)
 *   ACK      u32 places ok, u32 places failed, str per-place record lines
 *   FAILED   u32 the application rank, u32 the exit status the job ends with, str what happened
 *   TRIGGER  u64 the trigger's id, u64 the firing event's time (place clock ns), u32 the application rank,
 *            u32 the event place that saw it, str what it saw
 *   UNSEEN   u64 a late-sender trigger's id, u64 how many more receives it could not evaluate (their
 *            sender is served by another event place); summed at the root for `trigger list`
 *   DONE, SHUTDOWN   no payload
 *
 * A message is validated whole before anything uses it (header, kind, lengths, string bounds, the
 * command's kind and range count, nothing left over): a malformed one is reported and dropped.
 */
#ifndef OTFX_TBON_TREE_MESSAGES_H
#define OTFX_TBON_TREE_MESSAGES_H

#include <otfx/protocol.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TREE_TAG          4250
#define TREE_MAGIC        0x5458544Fu /* "OTXT" little-endian */
#define TREE_VERSION      8u
#define TREE_HEADER_BYTES 16u
/* The command's flags byte. */
#define COMMAND_OVERWRITE   1u
#define COMMAND_FROM_GIVEN  2u
#define COMMAND_TO_GIVEN    4u
#define COMMAND_NO_FLUSH    8u
#define COMMAND_COMPENSATED 16u
/* Largest tree message accepted: a reply's limit plus room for the header and counts. */
#define TREE_MAX_MESSAGE (OTFX_PROTOCOL_MAX_REPLY + 64u * 1024u)

enum tree_kind {
    TREE_QUERY = 1,       /* down: run an analysis module (command kinds status … events, query) */
    TREE_COMMAND = 2,     /* down: a steering command */
    TREE_RESULT = 3,      /* up: a subtree's merged partial result of a query */
    TREE_ACK = 4,         /* up: a subtree's answer to a command (one record line per place) */
    TREE_DONE = 5,        /* up: every event place below ended (their ranks said goodbye) */
    TREE_SHUTDOWN = 6,    /* down: leave the loop, finalize */
    TREE_LOAD_MODULE = 7, /* down: load an analysis module from a shared object on every place */
    TREE_FAILED = 8,      /* up: an application rank ended without MPI_Finalize: the job fails */
    TREE_TRIGGER = 9,     /* up: an event place saw a trigger's condition hold (the root decides) */
    TREE_UNSEEN = 10,     /* up: messages a late-sender trigger could not evaluate at an event place */
    TREE_KIND_MAX = 10
};

/* A decoded message; `data` points into the buffer it was decoded from. */
struct tree_message {
    enum tree_kind kind;
    uint32_t request;
    uint64_t argument;    /* QUERY, COMMAND, LOAD_MODULE */
    otfx_command command; /* QUERY, COMMAND, LOAD_MODULE */
    uint32_t count_ok;    /* RESULT: leaves answered; ACK: places ok */
    uint32_t count_failed;
    const char *error; /* RESULT: error text (not NUL-terminated), error_length bytes */
    size_t error_length;
    const unsigned char *data; /* RESULT: the partial result; ACK: the record lines; FAILED: what happened */
    size_t data_length;
    uint32_t failed_rank, exit_code;   /* FAILED; TRIGGER: failed_rank is the rank */
    uint64_t trigger_id, trigger_time; /* TRIGGER; UNSEEN: the trigger and how many more */
    uint32_t trigger_place;            /* TRIGGER */
};

/* A message being built (malloc'd bytes; failed after an allocation failure). */
struct tree_buffer {
    unsigned char *data;
    size_t length, capacity;
    bool failed;
};

const char *tree_kind_name(enum tree_kind kind);

/* Encoders: each starts a fresh buffer (free with tree_buffer_free) and returns false when out of
 * memory or the message would exceed TREE_MAX_MESSAGE. */
bool tree_encode_command(struct tree_buffer *out, enum tree_kind kind, uint32_t request, uint64_t argument,
                         const otfx_command *command);
bool tree_encode_result(struct tree_buffer *out, uint32_t request, uint32_t answered, uint32_t failed,
                        const char *error, size_t error_length, const void *blob, size_t blob_length);
bool tree_encode_ack(struct tree_buffer *out, uint32_t request, uint32_t ok, uint32_t failed,
                     const char *lines, size_t lines_length);
bool tree_encode_empty(struct tree_buffer *out, enum tree_kind kind, uint32_t request);
bool tree_encode_failed(struct tree_buffer *out, uint32_t rank, uint32_t exit_code, const char *what,
                        size_t what_length);
bool tree_encode_trigger(struct tree_buffer *out, uint64_t trigger, uint64_t time, uint32_t rank,
                         uint32_t place, const char *what, size_t what_length);
/* UNSEEN: `count` more receives of late-sender trigger `trigger` whose sender another place serves. */
bool tree_encode_unseen(struct tree_buffer *out, uint64_t trigger, uint64_t count);
void tree_buffer_free(struct tree_buffer *buffer);

/* Decodes and validates `bytes`. Returns NULL on success, else why it is malformed (a static text). */
const char *tree_decode(const void *bytes, size_t length, struct tree_message *out);

#endif

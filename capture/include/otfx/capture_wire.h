/*
 * otfx/capture_wire.h — the contract between an application rank and its event place: the raw records a
 * rank sends, the batches that carry them, the clock pings and the steering messages. The capture
 * library writes it (capture/src), the event place reads it (places/src); neither side includes the
 * other's code, only this header. Both sides are the same library on the same machine: native byte
 * order, no packing beyond natural alignment (every record size is a multiple of 8).
 *
 * The record kinds are one table (CAPTURE_RECORD_KINDS below): it gives every kind its number, the
 * least a record of it holds, whether it is a time-ordered event or a definition, and its name; the
 * enum, the size check and the names both sides use are generated from it.
 *
 * A batch is one MPI message on the tool communicator (tag CAPTURE_BATCH_TAG):
 *
 *   struct capture_batch_header   (72 bytes)
 *   records...                    (header.record_bytes bytes, back to back)
 *
 * Every record starts with struct capture_record_header; `size` is the whole record in bytes, so a
 * reader can skip kinds it does not know. function_id indexes capture_function_names[]
 * (capture_functions.h, generated from mpi_functions.tsv). Timestamps are raw ticks of the rank's
 * timer (TSC cycles or CLOCK_MONOTONIC ns, capture/src/timer.h); the batch header's calibration maps
 * them to CLOCK_MONOTONIC ns: ns = ref_ns + (ticks - ref_ticks) * ns_per_tick. Ranks ("world ranks") are
 * ranks of the application's world, 0 … N-1; -1 means MPI_PROC_NULL / not an application rank, -2
 * MPI_ANY_SOURCE.
 *
 * Communicators are named by a per-rank id: 0 is the application's world, every communicator
 * this rank learns about afterwards gets the next id, announced by one CAPTURE_RECORD_COMM_CREATED
 * record (members as world ranks) before any record uses it.
 */
#ifndef OTFX_CAPTURE_WIRE_H
#define OTFX_CAPTURE_WIRE_H

#include <stdint.h>

#define CAPTURE_BATCH_MAGIC   0x5846544fu /* "OTFX" */
#define CAPTURE_BATCH_VERSION 9
#define CAPTURE_BATCH_TAG     4242
/* Clock offset to the place (MPI_Init, MPI_Finalize, re-synchronisations): the rank sends its processor
 * name (chars, NUL included) followed by one byte, how many pings of this burst are still to come, and its
 * process id (int32_t, native order; the place watches a rank on its node by it), with this tag; the place
 * answers with two uint64_t, its CLOCK_MONOTONIC ns and 1 if the name is its own (same node: same clock),
 * else 0, with the same tag. The place answers the rest of a burst at once (its loop may sleep up to a
 * millisecond between messages: an answer that late would put the place's time off-centre in the round trip),
 * so the rank's shortest round trip measures transport, not the loop. */
#define CAPTURE_SYNC_TAG 4243
/* Steering: the place sends struct capture_control messages to an application rank with
 * this tag; the rank answers each one with a struct capture_control (same command and sequence, `state`
 * and `classes` filled; SET_METRICS and PROBE_METRICS: a struct capture_metrics_answer) once it has carried
 * it out (for CAPTURE_CONTROL_APP_PAUSE: once it is blocked). The rank notices a message within about a
 * millisecond of its own activity: it tests for it in MPI calls, user-function events and batch sends
 * (capture/src/control.c), never from a helper thread, so a rank inside a long computation or a blocking MPI
 * call answers when it returns. A message that is not a capture_control (size, magic, version, command) is
 * reported once on the rank's stderr and ignored (no answer). When a RECORD_UNTIL window ends, the rank sends
 * one unsolicited answer (command RECORD_UNTIL, sequence 0) with its state (recording off). With
 * OTFX_START_PAUSED=1 every rank blocks at the end of MPI_Init until it receives APP_RESUME (it answers that
 * one). */
#define CAPTURE_CONTROL_TAG 4244

enum capture_control_command {
    CAPTURE_CONTROL_RECORD_ON = 1,  /* start recording (argument: 0) */
    CAPTURE_CONTROL_RECORD_OFF = 2, /* stop recording */
    /* record from now until argument = the end of the window, ns on the place's (global) clock; the
     * rank stops by itself at that time (checked with every record) */
    CAPTURE_CONTROL_RECORD_UNTIL = 3,
    CAPTURE_CONTROL_APP_PAUSE = 4, /* block in the next MPI call (or check) until APP_RESUME */
    CAPTURE_CONTROL_APP_RESUME = 5,
    CAPTURE_CONTROL_SET_CLASSES = 6, /* argument: enabled event classes (otfx_event_class bits) */
    /* send the records buffered so far now (before a snapshot): the answering thread sends its batch
     * before it answers, every other recording thread at its next check point or record (or its batch
     * when it fills first); each such batch is flagged CAPTURE_BATCH_FLUSHED. The answer does not wait
     * for the other threads. */
    CAPTURE_CONTROL_FLUSH = 7,
    /* read the metrics of argument (a mask over the metric table, capture/metrics/metric_table.h; 0: none)
     * from now on: every thread switches at its next recorded enter or leave, where it writes its new
     * METRIC_SET. Answered with a struct capture_metrics_answer. */
    CAPTURE_CONTROL_SET_METRICS = 8,
    /* nothing changes: answered with a struct capture_metrics_answer on the current selection and the
     * metrics of argument (a mask over the table: which of them this rank could count, and why not) */
    CAPTURE_CONTROL_PROBE_METRICS = 9,
    /* from now on, do what FLUSH does every `argument` ns of the rank's own time, at a check point once
     * that much passed since the last time (0: stop); the places ask for it while a trigger is armed, so
     * that what the ranks record reaches them within about that long */
    CAPTURE_CONTROL_FLUSH_EVERY = 10,
    /* measure the recording costs again (capture/src/overhead.c) and write a new OVERHEAD record into the
     * stream of the thread that does it; answered once it is written. At a check point that may not
     * measure (a batch send) it waits for the next one, and later commands wait behind it. */
    CAPTURE_CONTROL_MEASURE_OVERHEAD = 11,
};
#define CAPTURE_CONTROL_LAST CAPTURE_CONTROL_MEASURE_OVERHEAD

/* Event classes as in otfx_event_class (tbon/include/otfx/protocol.h): which MPI functions belong to
 * which comes from the class column of capture/mpi_functions.tsv (gen_wrappers.py). */
enum capture_event_class {
    CAPTURE_CLASS_P2P = 1u << 0,        /* p2p-*, probe, persistent-*, start, completion, request-free */
    CAPTURE_CLASS_COLLECTIVE = 1u << 1, /* collective, icollective, collective-init */
    CAPTURE_CLASS_OTHER_MPI = 1u << 2,  /* comm-*, other (and the manual wrappers) */
    CAPTURE_CLASS_USER = 1u << 3,       /* user functions (-finstrument-functions) and otfx.h */
    CAPTURE_CLASS_ALL = 0xfu,
};

enum capture_control_state {
    CAPTURE_STATE_RECORDING = 1u << 0,
    CAPTURE_STATE_PAUSED = 1u << 1,
};

struct capture_control {
    uint32_t magic;    /* CAPTURE_BATCH_MAGIC */
    uint16_t version;  /* CAPTURE_BATCH_VERSION */
    uint16_t command;  /* enum capture_control_command */
    uint64_t sequence; /* chosen by the place, echoed in the answer */
    uint64_t argument;
    uint32_t state;   /* answer: enum capture_control_state after the command */
    uint32_t classes; /* answer: the enabled event classes after the command */
};

/* The answer to SET_METRICS and PROBE_METRICS (instead of a bare struct capture_control): masks over
 * the metric table. A metric is refused when the answering thread cannot open it (perf_event_open's
 * errno); the other threads open theirs at their next event and say a refusal on the rank's stderr. */
struct capture_metrics_answer {
    struct capture_control control; /* as any answer */
    uint64_t selected;              /* the rank's selection after the command */
    uint64_t counted;               /* of selected | argument: what this rank counts */
    uint64_t refused;               /* of selected | argument: what it cannot count */
    uint32_t has_pmu;               /* 1: the rank's machine has a hardware PMU */
    uint32_t reserved;
    /* by table index, for the refused ones: perf_event_open's errno, or CAPTURE_METRIC_REFUSED_BY_PAPI |
     * -(PAPI's error code) */
    uint16_t refusal_errno[64];
};
#define CAPTURE_METRIC_REFUSED_BY_PAPI 0x8000u

/* Batch size: large enough that one message per ~3000 events amortises the send, small enough that a
 * place holding many ranks' in-flight batches stays modest. */
#define CAPTURE_BATCH_BYTES (100 * 1024)

enum capture_batch_flags {
    /* The rank's last batch: sent from MPI_Finalize; the rank sends nothing afterwards. */
    CAPTURE_BATCH_GOODBYE = 1u << 0,
    /* Timestamps are TSC cycles (else CLOCK_MONOTONIC ns; the calibration is then the identity). */
    CAPTURE_BATCH_TSC = 1u << 1,
    /* The thread's answer to a FLUSH: it holds every record the thread wrote before it learnt of the
     * FLUSH that it had not sent yet (sent early for it, or full when the FLUSH came). Informative: the
     * place reads these batches like any other. A reader ignores flags it does not know. */
    CAPTURE_BATCH_FLUSHED = 1u << 2,
};

struct capture_batch_header {
    uint32_t magic;        /* CAPTURE_BATCH_MAGIC */
    uint16_t version;      /* CAPTURE_BATCH_VERSION */
    uint16_t flags;        /* enum capture_batch_flags */
    int32_t app_rank;      /* sender's rank in the application's world */
    uint32_t thread;       /* per-rank thread index, 0 = the thread that called MPI_Init */
    uint64_t sequence;     /* batches of this (rank, thread) numbered from 0 */
    uint64_t record_bytes; /* bytes of records following the header */
    uint64_t blocked_ns;   /* this thread's total time so far waiting for its previous batch to leave
                            * (back-pressure from a place that does not keep up) */
    double ns_per_tick;    /* the timer's calibration (MPI_Init's; the goodbye batch's from
                            * MPI_Finalize, measured over the whole run) */
    uint64_t ref_ticks;    /* a reference pair: these ticks were ... */
    uint64_t ref_ns;       /* ... this CLOCK_MONOTONIC time */
    int64_t offset_ns;     /* place's CLOCK_MONOTONIC minus this rank's, from the ping-pong with the
                            * smallest round trip at MPI_Init (the goodbye batch: at MPI_Finalize) */
    /* That ping-pong's round trip: offset_ns is off by half of it at most (0: the place shares this
     * node's clock, the offset is 0). */
    uint64_t offset_round_trip_ns;
};

/* The record kinds: X(NAME, number, the struct a record of it starts with, time-ordered, name).
 * A time-ordered record is an event: its timestamp is never older than the previous time-ordered
 * record's of its stream (SEND excepted, below); the others are definitions or markers and carry no
 * time order. A record may be longer than its struct (members, paths and names follow some).
 *
 * ENTER, LEAVE: an MPI function was entered, it returned.
 * SEND: a message was sent (or a nonblocking / persistent send started). Written when the call
 *   returns, but with the timestamp of the call's ENTER (OTF2 readers take a send's time as when it
 *   began): it is the one record that may be older than the record before it. Within one call the
 *   records after the ENTER are untimed markers (RECORDING, CLOCK, communicator definitions), a DROPPED
 *   record, or events of code the call ran (an error handler, a callback); the place puts the send
 *   after them.
 * RECV: a message was received (from the status). RECV_POSTED: a nonblocking receive was posted;
 *   peer/tag as requested (may be MPI_ANY_SOURCE/MPI_ANY_TAG). PROBE: a probe found a message (from the
 *   status). REQUEST_DONE: a request completed in the Wait/Test family; request_kind says what it was.
 * COLLECTIVE: a blocking collective's payload, in its call. A nonblocking collective's (function_id:
 *   the collective that made the request, e.g. MPI_Ibcast or MPI_Bcast_init) comes right before each
 *   record of its request: COLLECTIVE_REQUEST when it is started, REQUEST_DONE when it completes.
 * COMM_CREATED: capture_comm_record + members. COMM_FREED: without members. Definitions: they may come
 *   between a call's ENTER and its SEND.
 * PHASE: MPI_Pcontrol(level).
 * USER_ENTER, USER_LEAVE: a user function was entered / returned (-finstrument-functions); function_id 0.
 * OBJECT: capture_object_record + path: one loaded object of the load map (the program and its shared
 *   libraries), sent in the rank's first batch before any user record.
 * NAME: capture_name_record + name: a name of otfx.h's API gets an id in this thread's stream; sent
 *   before its first use.
 * REGION_BEGIN, REGION_END, NAMED_PHASE: otfx_region_begin, otfx_region_end, otfx_phase (address = the
 *   name's id).
 * THROTTLED: a user function was switched off (short and frequent), skipped 0; later ones (while the
 *   job runs, before a flushed batch, at the end) say how many calls it skipped in the writing thread so
 *   far: cumulative, so the place takes the largest it saw, never a sum.
 * RECORDING: recording stopped or started (steering); written into the stream of the thread that
 *   carried out the command, possibly from a batch send, between a record's timestamp and the record.
 *   After "on" the stream may hold LEAVE records of regions entered before the pause (user functions
 *   whose exit comes after the resume): the place drops them; MPI calls are recorded whole or not at all.
 * DROPPED: OTFX_BACKPRESSURE=drop found the batch full while the previous one was still being sent, and
 *   the events in between were dropped (never the records that later records depend on: COMM_CREATED,
 *   COMM_FREED, OBJECT, NAME, THROTTLED, RECORDING, which were kept and come right before this record).
 *   Its timestamp is the latest of the time-ordered kept records and of the last dropped one.
 * CLOCK: a clock re-synchronisation (OTFX_CLOCK_SYNC).
 * COLLECTIVE_REQUEST: a nonblocking collective was started (MPI_I<collective>, or MPI_Start/Startall of
 *   a persistent one), right after its COLLECTIVE record; request_kind CAPTURE_REQUEST_COLLECTIVE,
 *   fields as in its REQUEST_DONE.
 * DIED: the rank is ending without MPI_Finalize; the last record of its goodbye batch.
 * OVERHEAD: capture_overhead_record: what writing one record of each kind costs this rank, measured in
 *   MPI_Init (capture/src/overhead.c); the first record of the rank's first batch, and again where the
 *   rank carried out a CAPTURE_CONTROL_MEASURE_OVERHEAD (its costs apply from its timestamp on). The place
 * estimates the rank's intrusion from it (records of each kind × their cost), and overhead compensation
 *   subtracts it (docs/analyses.md).
 * METRIC_SET: capture_metric_set_record + its metrics (capture_metric_definition each): the metrics this
 *   thread reads from now on (at its timestamp), under a set id new in its stream; count 0: none. Written
 *   before the first METRICS record of the set, so no value straddles two sets.
 * METRICS: capture_metrics_record + the set's values (uint64_t each, in the set's order), read right
 *   after the ENTER, LEAVE, USER_ENTER, USER_LEAVE, REGION_BEGIN or REGION_END record before it, with
 *   that record's timestamp (capture/src/metrics.c). */
#define CAPTURE_RECORD_KINDS(X)                                                                              \
    X(ENTER, 1, capture_record_header, 1, "enter")                                                           \
    X(LEAVE, 2, capture_record_header, 1, "leave")                                                           \
    X(SEND, 3, capture_p2p_record, 1, "send")                                                                \
    X(RECV, 4, capture_p2p_record, 1, "receive")                                                             \
    X(RECV_POSTED, 5, capture_p2p_record, 1, "posted receive")                                               \
    X(PROBE, 6, capture_p2p_record, 1, "probe")                                                              \
    X(REQUEST_DONE, 7, capture_p2p_record, 1, "request completion")                                          \
    X(COLLECTIVE, 8, capture_collective_record, 1, "collective")                                             \
    X(COMM_CREATED, 9, capture_comm_record, 0, "communicator")                                               \
    X(COMM_FREED, 10, capture_comm_record, 0, "communicator release")                                        \
    X(PHASE, 11, capture_phase_record, 1, "phase")                                                           \
    X(USER_ENTER, 12, capture_user_record, 1, "user enter")                                                  \
    X(USER_LEAVE, 13, capture_user_record, 1, "user leave")                                                  \
    X(OBJECT, 14, capture_object_record, 0, "object")                                                        \
    X(NAME, 15, capture_name_record, 0, "name")                                                              \
    X(REGION_BEGIN, 16, capture_user_record, 1, "region")                                                    \
    X(REGION_END, 17, capture_user_record, 1, "region")                                                      \
    X(NAMED_PHASE, 18, capture_user_record, 1, "region")                                                     \
    X(THROTTLED, 19, capture_throttle_record, 1, "throttle")                                                 \
    X(RECORDING, 20, capture_recording_record, 0, "recording")                                               \
    X(DROPPED, 21, capture_dropped_record, 1, "dropped")                                                     \
    X(CLOCK, 22, capture_clock_record, 0, "clock")                                                           \
    X(COLLECTIVE_REQUEST, 23, capture_p2p_record, 1, "collective request")                                   \
    X(DIED, 24, capture_died_record, 1, "died")                                                              \
    X(OVERHEAD, 25, capture_overhead_record, 0, "overhead")                                                  \
    X(METRIC_SET, 26, capture_metric_set_record, 0, "metric set")                                            \
    X(METRICS, 27, capture_metrics_record, 1, "metrics")

enum capture_record_kind {
#define CAPTURE_KIND_ENUM(name, number, type, ordered, text) CAPTURE_RECORD_##name = number,
    CAPTURE_RECORD_KINDS(CAPTURE_KIND_ENUM)
#undef CAPTURE_KIND_ENUM
};

enum capture_request_kind {
    CAPTURE_REQUEST_SEND = 1,
    CAPTURE_REQUEST_RECV = 2,
    CAPTURE_REQUEST_COLLECTIVE = 3,
    CAPTURE_REQUEST_COMM = 4,    /* MPI_Comm_idup */
    CAPTURE_REQUEST_MESSAGE = 5, /* an MPI_Message from Mprobe/Improbe (never completes) */
};

struct capture_record_header {
    uint16_t kind;        /* enum capture_record_kind */
    uint16_t function_id; /* enum capture_function_id of the call that produced the record */
    uint32_t size;        /* bytes of the whole record, header included */
    uint64_t timestamp;   /* raw timer ticks (see the batch header) */
};

struct capture_p2p_record {
    struct capture_record_header header;
    uint32_t comm_id;
    int32_t peer; /* world rank of the destination (send) or source (receive) */
    int32_t tag;
    uint16_t request_kind; /* CAPTURE_REQUEST_SEND/RECV for nonblocking and persistent operations (the
                            * SEND, RECV_POSTED and REQUEST_DONE records of a request), 0 for blocking;
                            * CAPTURE_REQUEST_COLLECTIVE for the COLLECTIVE_REQUEST and REQUEST_DONE
                            * records of a nonblocking collective: then comm_id is its communicator, peer
                            * its root (-1: none), tag the function id of the collective that made the
                            * request (MPI_Ibcast, MPI_Bcast_init, ...) and bytes sent + received */
    uint16_t reserved;
    uint64_t bytes;
    uint64_t request; /* the request's id, 0 for blocking operations: unique per rank for the whole run
                       * (a counter the rank assigns when the request is created, and afresh for every
                       * MPI_Start of a persistent one), never MPI's handle (MPICH returns one shared
                       * handle for all sends that completed at once) */
    /* SEND (blocking and nonblocking), RECV and REQUEST_DONE of a receive: the message's ordinal on its
     * channel at this end, 1-based. A channel is (communicator, sender, receiver, tag): a send's ordinal
     * counts this rank's sends to `peer` with `tag` on the communicator, a receive's this rank's
     * completed receives from `peer` with `tag` on it, in completion order (the order OTF2 readers
     * pair by). The rank counts whenever it has a place, recording or not, so the n-th send of a channel
     * is the n-th receive at the other end however recording was steered. COLLECTIVE_REQUEST and
     * REQUEST_DONE of a nonblocking collective: its instance ordinal, as in capture_collective_record.
     * 0: none (probes, posted receives, MPI_PROC_NULL). */
    uint64_t sequence;
};

struct capture_collective_record {
    struct capture_record_header header;
    uint32_t comm_id;
    int32_t root;            /* world rank of the root, -1 if the operation has none */
    uint64_t bytes_sent;     /* size of this rank's send buffer data as the arguments describe it */
    uint64_t bytes_received; /* size of this rank's receive buffer data */
    /* The collective's instance ordinal on its communicator, 1-based: the n-th collective (blocking,
     * nonblocking or a start of a persistent one) this rank started on the communicator. Every member
     * calls a communicator's collectives in the same order, so the n-th is one operation on all of them;
     * the rank counts whenever it has a place, recording or not (capture/src/channels.c). */
    uint64_t sequence;
};

struct capture_comm_record {
    struct capture_record_header header;
    uint32_t comm_id;
    uint32_t flags;       /* CAPTURE_COMM_INTER */
    uint32_t local_size;  /* members follow: local_size world ranks of the local group, */
    uint32_t remote_size; /* then remote_size of the remote group (intercommunicators) */
    /* int32_t members[local_size + remote_size], padded to a multiple of 8 bytes */
};

enum capture_comm_flags { CAPTURE_COMM_INTER = 1u << 0 };

enum capture_recording_reason {
    CAPTURE_RECORDING_COMMAND = 1,    /* RECORD_ON / RECORD_OFF / RECORD_UNTIL from the place */
    CAPTURE_RECORDING_WINDOW_END = 2, /* RECORD_UNTIL's end passed */
};

struct capture_recording_record {
    struct capture_record_header header; /* function_id 0 */
    uint32_t on;                         /* 1: recording from now on, 0: stopped */
    uint32_t reason;                     /* enum capture_recording_reason */
};

/* What a drop left behind on the call stack: `closed` regions open when the drop began were left during
 * it (the place closes them at the marker), and `opened` regions entered during it are still open (the
 * place drops that many LEAVEs, the first ones that would close a region below those entered after the
 * marker). */
struct capture_dropped_record {
    struct capture_record_header header; /* function_id 0 */
    uint64_t dropped;                    /* records dropped */
    uint64_t first;                      /* timestamp of the first dropped record (raw ticks) */
    uint64_t last;                       /* and of the last */
    uint32_t closed;
    uint32_t opened;
};

/* The place's clock minus the rank's tick-derived time (the batch header's MPI_Init calibration applied
 * to header.timestamp), measured at header.timestamp: against the place by ping-pong, or against this
 * node's CLOCK_MONOTONIC when the place shares it. It absorbs both the clock offset's drift and the TSC
 * calibration's rate error; the place interpolates between such points (batch_decoder.c). */
struct capture_clock_record {
    struct capture_record_header header; /* function_id 0; timestamp: ticks of the measurement */
    int64_t correction_ns;
    uint64_t round_trip_ns; /* the ping-pong's: correction_ns is off by half of it at most (same node:
                             * the time between the clock reads around the ticks, the same bound) */
};

struct capture_phase_record {
    struct capture_record_header header;
    int32_t level;
    uint32_t reserved;
};

/* User functions are named by their run-time address; the place resolves it with the load map. */
struct capture_user_record {
    struct capture_record_header header;
    uint64_t address; /* the function's address as __cyg_profile_func_enter/exit received it */
};

struct capture_object_record {
    struct capture_record_header header;
    uint64_t base;       /* load bias (dl_iterate_phdr's dlpi_addr): run-time address - ELF address */
    uint32_t path_bytes; /* the path's bytes with its terminating NUL; padded to a multiple of 8 */
    uint32_t reserved;
    /* char path[path_bytes] (absolute path of the file, the program's from /proc/self/exe) */
};

struct capture_throttle_record {
    struct capture_record_header header;
    uint64_t address; /* the function */
    uint64_t calls;   /* recorded calls when it was throttled */
    uint64_t mean_ns; /* their mean duration */
    uint64_t skipped; /* 0 when it was switched off; later: calls not recorded so far (cumulative) */
};

struct capture_name_record {
    struct capture_record_header header;
    uint32_t name_id;    /* per thread (stream), dense from 0 */
    uint32_t name_bytes; /* with the terminating NUL; padded to a multiple of 8 */
    /* char name[name_bytes] */
};

/* How a rank ended without MPI_Finalize (capture/src/dying.c). */
enum capture_death_cause {
    CAPTURE_DEATH_SIGNAL = 1, /* value: the signal (SIGSEGV, SIGTERM, ...), about to end the process */
    CAPTURE_DEATH_ABORT = 2,  /* value: MPI_Abort's error code */
    CAPTURE_DEATH_EXIT = 3,   /* value: the status passed to exit() */
};

struct capture_died_record {
    struct capture_record_header header; /* function_id: MPI_Abort's for CAPTURE_DEATH_ABORT, else 0 */
    uint32_t cause;                      /* enum capture_death_cause */
    int32_t value;
    int32_t signal_code; /* SIGNAL: siginfo's si_code (SEGV_MAPERR, SI_USER, ...) */
    uint32_t reserved;
    uint64_t address;     /* SIGNAL: siginfo's si_addr (the faulting address of SIGSEGV, SIGBUS, ...) */
    uint64_t instruction; /* SIGNAL: where the program was (its instruction pointer), 0 if unknown */
};

/* Record kinds numbered below this have a cost in capture_overhead_record. */
#define CAPTURE_OVERHEAD_KINDS 32

/* The cost of a record of each kind to the rank that writes it, in picoseconds, by record kind number
 * (cost_ps[CAPTURE_RECORD_ENTER], …; 0: not measured — definitions and markers, rare and untimed). It is
 * the recorder's own cost (the timer read and the append), measured as the median over `runs` timed
 * loops of `repetitions` records into a scratch buffer; kinds written by the same writer share its
 * measurement. Not included: the wrapper's bookkeeping around a record and the batch sends.
 * injected_ns: the test point OTFX_TEST_OVERHEAD_NS, fixed work taking that many ns on an undisturbed
 * core the rank adds after the timestamp of every record capture_overhead_injected names (0 in real
 * runs): the place adds it to those kinds' cost.
 * took_ns: how long measuring took, from the timestamp to the record (0 at MPI_Init, before the first
 * event): time the thread lost to the tool, which the place counts as intrusion. */
struct capture_overhead_record {
    struct capture_record_header header; /* function_id 0; timestamp: when measuring began (ticks) */
    uint32_t injected_ns;
    uint16_t runs;
    uint16_t repetitions;
    uint32_t cost_ps[CAPTURE_OVERHEAD_KINDS];
    uint64_t took_ns;
};

/* The most metrics one set holds. */
#define CAPTURE_METRICS_MAX 16

enum capture_metric_value_type {
    CAPTURE_METRIC_UINT64 = 0, /* as otfx_metric_type's OTFX_METRIC_UINT64 */
    CAPTURE_METRIC_INT64 = 1,
    CAPTURE_METRIC_DOUBLE = 2, /* the uint64_t holds the double's bits */
};

enum capture_metric_mode {
    /* a counter that only grows (cycles, task-clock, page faults): the value is the total since the
     * thread began counting, differences between two reads are what happened between them */
    CAPTURE_METRIC_ACCUMULATED = 0,
    CAPTURE_METRIC_ABSOLUTE = 1, /* a level read as it is (the largest resident set) */
};

struct capture_metric_definition {
    char name[40];       /* NUL-terminated: "task-clock", "ru-maxrss", … (docs/usage.md, "Metrics") */
    char unit[16];       /* NUL-terminated: "ns", "events", "KiB", … */
    uint32_t value_type; /* enum capture_metric_value_type */
    uint32_t mode;       /* enum capture_metric_mode */
};

struct capture_metric_set_record {
    struct capture_record_header header; /* function_id 0; timestamp: when the set took effect */
    uint32_t set_id;                     /* per thread (stream), from 1 */
    uint32_t count;                      /* definitions that follow, at most CAPTURE_METRICS_MAX */
    /* struct capture_metric_definition metrics[count] */
};

struct capture_metrics_record {
    struct capture_record_header header; /* the event's function_id and timestamp */
    uint32_t set_id;
    uint32_t count; /* values that follow: the set's count */
    /* uint64_t values[count] */
};

/* What the table says of a record kind: the least a record of it holds (its struct), whether its records
 * are events in time order (else definitions and markers), and its name in messages ("send",
 * "communicator", …). A kind this version does not know gets {0, 0, "unknown"}: a reader skips such
 * records, their header's size says how far. */
struct capture_record_kind_info {
    uint32_t min_size;
    int time_ordered;
    const char *name;
};

static inline struct capture_record_kind_info capture_record_kind(uint16_t kind)
{
    switch (kind) {
#define CAPTURE_KIND_INFO(name, number, type, ordered, text)                                                 \
    case number:                                                                                             \
        return (struct capture_record_kind_info){(uint32_t)sizeof(struct type), ordered, text};
        CAPTURE_RECORD_KINDS(CAPTURE_KIND_INFO)
#undef CAPTURE_KIND_INFO
    }
    return (struct capture_record_kind_info){0, 0, "unknown"};
}

/* Whether the test point OTFX_TEST_OVERHEAD_NS spins after a record of this kind (and the place adds the
 * spin to its cost): every time-ordered record but the METRICS that belong to the ENTER or LEAVE before
 * them, so that an event costs one spin whether metrics are read or not. */
static inline int capture_overhead_injected(uint16_t kind)
{
    return capture_record_kind(kind).time_ordered && kind != CAPTURE_RECORD_METRICS;
}

#endif

/*
 * otfx/structure.h — the task activity graph of one location: the program's structure, built from the
 * event stream as it is appended (module prefix otfx_structure_; part of libotfx, no MPI).
 *
 * Every otfx_trace builds one while events are appended (otfx_trace_append), before any reduction can
 * remove them: the graph describes the whole stream whatever the trace still holds in detail, and its
 * size follows the program's structure, not its run time (a loop run 10 or 1000 times gives the same
 * nodes and edges, only their counts differ). otfx_query_structure copies it out.
 *
 *   nodes        an MPI call (point-to-point or collective role) identified by (function, calling
 *                context: the names of the regions open around the call); a loop marker (the ENTER of a
 *                user region whose name contains "loop", any case); a phase marker (a PHASE event, or the
 *                ENTER of a region of role PHASE), identified by (region, value, context). MPI calls of
 *                the role "other" (MPI_Wtime, MPI_Comm_rank, …) and MPI calls inside an MPI call are not
 *                nodes. A node counts its visits; an MPI node also the duration of its calls.
 *   edges        consecutive nodes of the stream; the statistics are of the computation between them
 *                (the previous node's end — its call's LEAVE, a marker's time — to the next node's start).
 *   peers        per node, the point-to-point partners as offsets from the location's rank (peer − rank),
 *                per direction, with the messages' count and bytes.
 *   channels     per point-to-point channel end (communicator, partner, tag, direction): the count and the
 *                sum of the ends' times, and the times of the last OTFX_STRUCTURE_CHANNEL_TAIL ends. A
 *                send's time is its call's entry, a receive's the completion record's (taken when the call
 *                returned the message). The graph of one location cannot know the other end's time; the
 *                n-th send and the n-th receive of a channel are one message (the ordinals of
 *                otfx_event.u.msg.seq), so pairing the partner's end of a channel gives the transfer time
 *                of its messages, receive end − send start, summed: Σ receive times − Σ send times over
 *                the first n ends of both (the tail takes the ends one side has and the other not yet).
 *   completions  a nonblocking operation's start node → the node of the call that completed it
 *                (ISEND → ISEND_COMPLETE, IRECV_REQUEST → IRECV, NBC_REQUEST → NBC_COMPLETE).
 *   paths        causal paths: for every node, the node sequences between two consecutive visits of it
 *                (the node first), with counts. Sequences longer than OTFX_STRUCTURE_PATH_WINDOW nodes
 *                are only counted (the node's long_paths).
 *
 * The graph is bounded (OTFX_STRUCTURE_MAX_*): what would pass a bound is counted in `untracked` instead.
 * Times are ns of the trace's clock.
 */
#ifndef OTFX_STRUCTURE_H
#define OTFX_STRUCTURE_H

#include <otfx/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTFX_STRUCTURE_MAX_NODES    4096u
#define OTFX_STRUCTURE_MAX_EDGES    16384u
#define OTFX_STRUCTURE_MAX_PEERS    16384u
#define OTFX_STRUCTURE_MAX_PATHS    4096u
#define OTFX_STRUCTURE_PATH_WINDOW  32u
#define OTFX_STRUCTURE_MAX_CHANNELS 4096u
#define OTFX_STRUCTURE_CHANNEL_TAIL 32u

typedef enum otfx_structure_kind {
    OTFX_STRUCTURE_MPI = 0,
    OTFX_STRUCTURE_LOOP,
    OTFX_STRUCTURE_PHASE
} otfx_structure_kind;

/* Running statistics of durations (ns): count, sum, min, max and the sum of squares (for stddev). */
typedef struct otfx_structure_stat {
    uint64_t count, sum_ns, min_ns, max_ns;
    double sum_squares;
} otfx_structure_stat;
OTFX_API void otfx_structure_stat_add(otfx_structure_stat *stat, uint64_t ns);
OTFX_API double otfx_structure_stat_mean(const otfx_structure_stat *stat);
OTFX_API double otfx_structure_stat_stddev(const otfx_structure_stat *stat); /* population */

typedef struct otfx_structure_node {
    char *name;            /* MPI function, loop region, phase region */
    char *context;         /* the open regions around it, outermost first, joined by '/' ("" at top) */
    uint64_t context_hash; /* of those names (the identity; `context` may be cut at 255 bytes) */
    otfx_structure_kind kind;
    int64_t value;            /* PHASE events: the marker's value (MPI_Pcontrol's level); 0 otherwise */
    uint64_t visits;          /* times the stream reached it */
    otfx_structure_stat time; /* MPI: the calls' durations (ENTER to LEAVE) */
    uint64_t long_paths;      /* returns to it after more than OTFX_STRUCTURE_PATH_WINDOW nodes */
} otfx_structure_node;

typedef struct otfx_structure_edge {
    uint32_t from, to;           /* node indexes */
    otfx_structure_stat compute; /* the computation between the two */
} otfx_structure_edge;

typedef struct otfx_structure_peer {
    uint32_t node;
    bool sent;      /* SEND/ISEND at this node; false: RECV/IRECV */
    int64_t offset; /* partner's world rank − this location's rank */
    uint64_t count, bytes;
} otfx_structure_peer;

/* One end of a point-to-point channel at this location: the sends to, or the receives from, one partner
 * on one (communicator, tag). */
typedef struct otfx_structure_channel {
    uint32_t node;  /* the node of its first end */
    bool sent;      /* the sending end; false: the receiving end */
    bool mixed;     /* its ends are at more than one node */
    bool ordered;   /* every end had an ordinal, consecutive from first_seq (else it cannot be paired) */
    int64_t offset; /* partner's world rank − this location's rank */
    uint64_t comm;  /* the communicator: a hash of its name and members (the same on every place) */
    uint32_t tag;
    uint64_t first_seq;   /* the ordinal of its first end (1 unless the graph was reset) */
    uint64_t count;       /* ends */
    uint64_t time_sum[2]; /* Σ of the ends' times (ns), 128 bits: [0] the low word, [1] the high word */
    /* the times of the last min(count, OTFX_STRUCTURE_CHANNEL_TAIL) ends: the k-th last (k = 0 the
     * newest) at tail[(count − 1 − k) % OTFX_STRUCTURE_CHANNEL_TAIL] */
    uint64_t tail[OTFX_STRUCTURE_CHANNEL_TAIL];
} otfx_structure_channel;

typedef struct otfx_structure_completion {
    uint32_t start, end; /* the starting call's node, the completing call's node */
    uint64_t count;
} otfx_structure_completion;

typedef struct otfx_structure_path {
    uint32_t anchor; /* the node visited twice: the path's first node */
    uint32_t length; /* nodes in the path, path_nodes[first .. first + length) */
    uint32_t first;
    uint64_t count;
} otfx_structure_path;

/* A read-only view of a graph (pointers into it: valid until it changes or is destroyed). */
typedef struct otfx_structure_view {
    uint32_t rank;
    const otfx_structure_node *nodes;
    uint32_t node_count;
    const otfx_structure_edge *edges;
    uint32_t edge_count;
    const otfx_structure_peer *peers;
    uint32_t peer_count;
    const otfx_structure_completion *completions;
    uint32_t completion_count;
    const otfx_structure_channel *channels;
    uint32_t channel_count;
    const otfx_structure_path *paths;
    uint32_t path_count;
    const uint32_t *path_nodes;
    uint64_t events; /* events fed */
    uint64_t
        untracked; /* nodes, edges, peers, channels, completions or paths beyond the bounds (or memory) */
} otfx_structure_view;

typedef struct otfx_structure otfx_structure;

/* An empty graph for a location of application rank `rank`. NULL when out of memory. */
OTFX_API otfx_structure *otfx_structure_create(uint32_t rank);
OTFX_API void otfx_structure_destroy(otfx_structure *structure);
/* Feeds events in stream order (region names are looked up in `defs`). Never fails: what cannot be
 * kept (bounds, memory, unknown regions) is counted in `untracked`. */
OTFX_API void otfx_structure_feed(otfx_structure *structure, const otfx_defs *defs, const otfx_event *events,
                                  size_t count);
/* Drops the graph (nodes, edges, peers, channels, completions, paths, the counts) and frees its memory; the
 * regions still open stay open, so the stream goes on where it was (otfx_trace_reset calls it). */
OTFX_API void otfx_structure_reset(otfx_structure *structure);
OTFX_API void otfx_structure_view_get(const otfx_structure *structure, otfx_structure_view *out);
/* Bytes the graph takes (its arrays and names): a function of the structure, not of the run time. */
OTFX_API size_t otfx_structure_bytes(const otfx_structure *structure);
/* A copy of the trace's graph, taken under its read lock (*copy: destroy it). */
OTFX_API otfx_status otfx_query_structure(otfx_trace *trace, otfx_structure **copy);

#ifdef __cplusplus
}
#endif
#endif

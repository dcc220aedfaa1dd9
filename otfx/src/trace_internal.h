/* trace_internal.h — the layout of a trace, shared by trace.c (storage), reduction.c (the strategies)
 * and query.c (private).
 *
 * Time is partitioned into pieces, oldest first. A piece is a sealed chunk: either detail (events,
 * perhaps thinned by `type` or `depth`) or summary-only (the events were removed, the statistics
 * stay). Piece i covers [begin_i, end_i) with begin_i = end_{i-1}; its events lie in [begin_i, end_i]
 * (end_i is the time of its last event). The open chunk, still being appended to, covers
 * [open_begin, last time]. Pieces are grouped into segments of at most SEGMENT_PIECES with the sum of
 * their summaries, so a query adds whole segments and opens only the pieces at its window's edges.
 */
#ifndef OTFX_TRACE_INTERNAL_H
#define OTFX_TRACE_INTERNAL_H

#include "chunk.h"
#include "summary.h"

#include <otfx/structure.h>

#include <pthread.h>

#define SEGMENT_PIECES 64
/* Bookkeeping the system allocator adds per allocation, counted so bytes_used is honest. */
#define ALLOCATION_OVERHEAD 16
#define MIN_BUDGET_BYTES    (64u * 1024)
#define MIN_CHUNK_BYTES     1024u
#define MAX_CHUNK_BYTES     (1u << 20)
/* Summary-only pieces are merged (coarsened) once they take more than budget / this. */
#define SUMMARY_QUOTA_DIVISOR 8
/* Room `stop` keeps free for the summary of what it will refuse. */
#define STOP_RESERVE_BYTES 4096

/* A sealed chunk held by a trace and by frozen copies of it (trace_copy.c): a sealed chunk never
 * changes, so a copy takes the chunk itself, not its bytes, and whoever lets go of it last frees it. A
 * blob that was never copied has no share and belongs to its piece alone. */
typedef struct blob_share {
    uint32_t holders; /* atomic: the copy's owner may let go while the trace's appender does */
} blob_share;

typedef struct piece {
    otfx_time begin, end;  /* range [begin, end); events lie in [begin, end] */
    otfx_time first_event; /* time of the first event held (detail pieces with events) */
    uint8_t *blob;         /* the sealed chunk */
    blob_share *share;     /* NULL until a copy shares the blob (set under the trace's read lock) */
    uint32_t blob_size;
    uint32_t events;         /* events held in detail */
    uint32_t max_pair_depth; /* as chunk_info */
    uint8_t flags;           /* chunk flags */
    uint8_t classes_present; /* as chunk_info */
    uint8_t created_by;      /* summary-only: the strategy that removed the events */
    uint8_t level;           /* summary-only: merges it took to build it */
} piece;

typedef struct segment {
    otfx_time begin, end;
    uint32_t count;
    summary total; /* sum of the pieces' summaries */
    piece pieces[SEGMENT_PIECES];
} segment;

struct otfx_trace {
    pthread_rwlock_t lock; /* append, set_strategy, reset: write; queries, status: read */
    otfx_defs *defs;
    otfx_ref location;
    otfx_trace_config config;
    otfx_reduction strategy;
    bool stopped;

    segment **segments;
    uint32_t segment_count, segment_capacity;
    size_t bytes_used;         /* every byte counted against the budget */
    size_t summary_only_bytes; /* of which summary-only pieces */
    uint64_t events_in_pieces;
    uint32_t detail_pieces;
    /* Counts the changes that rewrite, move or remove pieces already held (appending one does not), so
     * that a reader (otfx_trace_reader) knows whether the position it kept between its calls still
     * names the same piece. */
    uint64_t layout_epoch;

    /* The open chunk: tokens and operands as appended, the context at its start. */
    uint8_t *tokens, *operands;
    uint32_t open_events, open_operand_bytes;
    codec_state encoder;
    call_frame *open_context;
    uint32_t open_context_depth;
    otfx_time open_begin, open_first_event;
    bool open_begin_set;
    bool open_refused; /* `stop` is refusing: the open chunk's events count as removed */

    /* The task activity graph (otfx/structure.h), fed on append: outside the budget, sized by the
     * program's structure. */
    otfx_structure *structure;

    /* The calling stack after the last event appended. */
    call_frame *stack;
    uint32_t depth;
    otfx_time last_time; /* kept across reset: times never go backwards */
    bool any_time;

    uint64_t events_received;
    uint64_t events_reduced[OTFX_REDUCE_COUNT];
    uint64_t reductions;
    otfx_time first_time;

    /* Fixed working memory of seal and reduction (documented overhead, outside the budget). */
    uint32_t raw_capacity;     /* largest raw payload a chunk of this trace has */
    uint32_t max_chunk_events; /* most events a chunk of this trace has */
    chunk_scratch seal_scratch;
    payload_buffers payload;
    uint8_t *thin_tokens, *thin_operands;
    uint8_t *drop_marks;
    uint32_t *enter_index;
    call_frame *work_frames;
    summary chunk_summary; /* of the chunk being sealed */
    /* Metric statistics (metric_stats.h): the walk's state at the open chunk's start (valid when its
     * ordinal is open_first_ordinal) and the one a seal works on; outside the budget, sized by the
     * calling depth. */
    metric_walk metric_carry, metric_work;
    uint64_t event_ordinal;      /* events ever appended (never reset) */
    uint64_t open_first_ordinal; /* of the open chunk's first event */
    otfx_ref metric_mark;        /* OTFX_METRIC_SET_MARK's reference once defined */
    uint32_t metric_mark_scanned;
    summary work_summary, other_summary;
};

/* Lets go of a piece's blob: frees it unless a copy still holds it (trace.c). */
void piece_blob_release(uint8_t *blob, blob_share *share);

/* Locations of pieces by position; `index` counts pieces from the oldest. */
static inline piece *trace_piece(const otfx_trace *trace, uint32_t segment_index, uint32_t piece_index)
{
    return &trace->segments[segment_index]->pieces[piece_index];
}

/* Position of a piece: segment and index inside it. */
typedef struct piece_position {
    uint32_t segment, index;
} piece_position;

/* Storage helpers of trace.c that the reduction strategies (reduction.c) use. */

/* Bytes a piece with a blob of `blob_size` bytes costs in the budget. */
size_t trace_piece_cost(uint32_t blob_size);
/* Bytes that appending a piece with summary `s` may take beyond its blob. */
size_t trace_append_overhead_bound(const otfx_trace *trace, const summary *s);
/* Bytes storing a piece with this blob and statistics may take. */
size_t trace_piece_need(const otfx_trace *trace, uint32_t blob_size, const summary *s);
bool trace_next_position(const otfx_trace *trace, piece_position *position);
piece *trace_piece_at(const otfx_trace *trace, piece_position position);
void trace_piece_replace_blob(otfx_trace *trace, piece *p, uint8_t *blob, uint32_t size, uint8_t flags);
otfx_status trace_segment_add(otfx_trace *trace, segment *seg, const summary *s);
otfx_status trace_piece_summary(const piece *p, summary *into);
void trace_remove_piece(otfx_trace *trace, piece_position position, const summary *s);
otfx_status trace_seal_summary_only(otfx_trace *trace, otfx_time begin, otfx_time end, const summary *s,
                                    uint8_t **blob, uint32_t *size);

/* Prepares `walk` to go over the open chunk's events from the state at its start, its visits going to
 * `into` (the open chunk's ordinals). */
otfx_status trace_metric_walk_start(const otfx_trace *trace, metric_walk *walk, metric_stats *into);

/* The reduction strategies (reduction.c). */

/* Reduces until a piece of `blob_size` bytes with statistics `s` fits, keeping `stop`'s reserve
 * free; *fits is false when nothing is left to reduce. */
otfx_status reduction_make_room(otfx_trace *trace, uint32_t blob_size, const summary *s, bool *fits);
/* While `stop` refuses, its summary may outgrow the reserve (new regions or peers); then the oldest
 * detail goes as under `ring` rather than the budget breaking. */
otfx_status reduction_make_room_while_stopped(otfx_trace *trace, size_t needed);

/* structure.c: a copy of a graph (without its builder's stack). NULL when out of memory. */
otfx_structure *structure_copy(const otfx_structure *structure);
/* structure.c: otfx_structure_feed in two steps, for an append that feeds its events in slices: the
 * slices, then once what the graph defers while the stream goes round a cycle (before anyone reads it). */
void structure_feed(otfx_structure *structure, const otfx_defs *defs, const otfx_event *events, size_t count);
void structure_settle(otfx_structure *structure);

/* Test hooks (tests link otfx_internal and include this header). */

/* Number of pieces (sealed chunks, detail or summary-only). */
uint32_t otfx_trace_test_piece_count(otfx_trace *trace);
/* The sealed bytes of piece `index` (oldest first); valid until the next append. */
otfx_status otfx_trace_test_piece_bytes(otfx_trace *trace, uint32_t index, const uint8_t **bytes,
                                        size_t *size);
/* Flips the bits of `mask` in byte `offset` of piece `index`, as memory damage would. */
otfx_status otfx_trace_test_damage_piece(otfx_trace *trace, uint32_t index, uint32_t offset, uint8_t mask);
/* Bytes of the trace's fixed working memory (outside the budget): the documented constant. */
size_t otfx_trace_test_working_bytes(otfx_trace *trace);
/* Seals the open chunk now (as if it were full), running reductions as needed. */
otfx_status otfx_trace_test_seal(otfx_trace *trace);

#endif

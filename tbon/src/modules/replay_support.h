/* replay_support.h — what the replay-based modules (critical-path, wait-states) share: a leaf's replay
 * over the selected ranks, region facts by reference, a stream's CPU clock and calling stack, and the
 * "what could not be seen" counters of a partial result. Private to otfx_analysis. */
#ifndef OTFX_REPLAY_SUPPORT_H
#define OTFX_REPLAY_SUPPORT_H

#include <otfx/analysis.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- regions by reference ------------------------------------------------------------------------ */

/* The role and name of a region reference, looked up in the defs once. */
typedef struct region_facts {
    otfx_defs *defs;
    size_t capacity;
    unsigned char *known; /* 0 not looked up, 1 known, 2 unknown reference */
    unsigned char *role;
    const char **name;
    const char *zero_name; /* critical-path --zero ("" or NULL: none) */
    bool failed;           /* out of memory */
} region_facts;
void region_facts_init(region_facts *facts, otfx_defs *defs, const char *zero_name);
void region_facts_free(region_facts *facts);
/* Time inside a region of an MPI role is communication, not CPU time. */
bool region_is_mpi(region_facts *facts, otfx_ref region);
/* "" for OTFX_REF_NONE or an unknown reference. */
const char *region_name(region_facts *facts, otfx_ref region);
bool region_is_zeroed(region_facts *facts, otfx_ref region);

/* ---- a stream's calling stack and CPU clock -------------------------------------------------------- */

typedef struct stack_frame {
    otfx_ref region;
    otfx_time enter;
    bool mpi;
} stack_frame;

/* Follows one stream's events: its open regions, and its CPU time — the time between consecutive
 * events of the window [from, to) while no MPI region is open, attributed to the innermost open region
 * (OTFX_REF_NONE outside every region). Ranges without detail (REDUCTION records) count nothing; the
 * clock starts at the stream's first event at or after `from` (the context ENTERs before it only build
 * the stack). Both passes of critical-path use it, so they cut the same pieces. */
typedef struct cpu_clock {
    otfx_time from, to;
    otfx_time last; /* accounted up to here */
    bool started;
    uint32_t depth, mpi_depth, capacity;
    stack_frame *stack;
    bool failed; /* out of memory, or deeper than OTFX_MAX_CALL_DEPTH */
} cpu_clock;
typedef void (*cpu_piece_fn)(void *user, otfx_ref function, otfx_time begin, otfx_time end);
void cpu_clock_init(cpu_clock *clock, otfx_time from, otfx_time to);
void cpu_clock_free(cpu_clock *clock);
/* Accounts the time up to the event (pieces handed to `piece`), then applies it to the stack. */
void cpu_clock_event(cpu_clock *clock, region_facts *facts, const otfx_event *event, cpu_piece_fn piece,
                     void *user);
/* The innermost open MPI region (NULL: none). */
const stack_frame *cpu_clock_mpi_frame(const cpu_clock *clock);

/* ---- what could not be seen -------------------------------------------------------------------------- */

enum {
    UNSEEN_NOT_HELD,
    UNSEEN_RANK_NOT_SERVED,
    UNSEEN_NO_ORDINAL,
    UNSEEN_STALLED,
    UNSEEN_SENDS_UNRECEIVED,
    UNSEEN_COLLECTIVES_PARTIAL,
    UNSEEN_GAPS,
    UNSEEN_GAP_NS,
    UNSEEN_RECEIVES,
    UNSEEN_COLLECTIVES,
    UNSEEN_STREAMS,
    UNSEEN_COUNT
};
typedef struct unseen_counts {
    uint64_t v[UNSEEN_COUNT];
} unseen_counts;
void unseen_from_stats(unseen_counts *out, const otfx_replay_stats *stats);
void unseen_write(otfx_blob *out, const unseen_counts *counts);
void unseen_read(otfx_blob_reader *reader, unseen_counts *counts);
void unseen_add(unseen_counts *into, const unseen_counts *other);
/* The `unseen` record line. */
void unseen_line(otfx_text *reply, const unseen_counts *counts);

/* ---- small pieces both modules use --------------------------------------------------------------- */

/* Item `index` of a pass's per-stream array (otfx_replay_stream.index), growing it with zeroed items as
 * needed; NULL when out of memory. */
void *stream_slot(void **array, size_t *capacity, size_t item_size, uint32_t index);
/* Orders names held as bytes and a length (not NUL-terminated): bytes first, then the shorter. */
int name_compare(const char *a, uint32_t a_length, const char *b, uint32_t b_length);

/* ---- a leaf's replay ------------------------------------------------------------------------------- */

/* Builds a replay of `pass` over the leaf's traces of the ranks `query` selects, in its window, and runs
 * it with the leaf's exchange (NULL: this place alone). On success the replay is returned for its
 * stats (destroy it); NULL with why in `error`. */
otfx_replay *replay_leaf_run(const otfx_command *query, const otfx_leaf_input *input,
                             const otfx_replay_pass *pass, void *pass_user, char *error, size_t error_size);
/* The two halves of replay_leaf_run: the replay built (`follow`: config.follow, to be run round after
 * round), and one run of it (false with why in `error`; the replay is the caller's either way). */
otfx_replay *replay_leaf_build(const otfx_command *query, const otfx_leaf_input *input,
                               const otfx_replay_pass *pass, void *pass_user, bool follow, char *error,
                               size_t error_size);
bool replay_leaf_go(otfx_replay *replay, const otfx_leaf_input *input, const otfx_replay_pass *pass,
                    char *error, size_t error_size);

/* ---- following (follow_states.h) ------------------------------------------------------------------- */

/* What a follow round adds to a partial result and to the answer's header line. */
typedef struct follow_fields {
    uint64_t round;     /* 0: not a follow query */
    uint64_t restarted; /* 0 or 1 */
    uint64_t events;    /* events replayed this round */
} follow_fields;
void follow_fields_write(otfx_blob *out, const follow_fields *fields);
void follow_fields_read(otfx_blob_reader *reader, follow_fields *fields);
/* The greater round and restart, the summed events: associative like the rest of a merge. */
void follow_fields_merge(follow_fields *into, const follow_fields *other);
/* follow=ID round=K restarted=0|1 events_this_round=E on the header line, for a follow query. */
void follow_fields_line(otfx_text *reply, const otfx_command *query, const follow_fields *fields);

#endif

/* replay_support.h — what the replay-based modules (critical-path, wait-states) share: a leaf's replay
 * over the selected ranks, region facts by reference, a stream's CPU clock and calling stack, and the
 * "what could not be seen" counters of a partial result. Private to otfx_analysis. */
#ifndef OTFX_REPLAY_SUPPORT_H
#define OTFX_REPLAY_SUPPORT_H

#include <otfx/analysis.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
/* Index of a known reference, looked up in the defs the first time, or SIZE_MAX (OTFX_REF_NONE, an
 * unknown reference, or out of memory). */
size_t region_facts_lookup(region_facts *facts, otfx_ref region);

/* The lookups below come at nearly every event of a replay: inline, known references without a call. */
static inline size_t region_index(region_facts *facts, otfx_ref region)
{
    if (region < facts->capacity && facts->known[region] == 1)
        return region;
    return region_facts_lookup(facts, region);
}

/* Time inside a region of an MPI role is communication, not CPU time. */
static inline bool region_is_mpi(region_facts *facts, otfx_ref region)
{
    size_t i = region_index(facts, region);
    if (i == SIZE_MAX)
        return false;
    otfx_region_role role = (otfx_region_role)facts->role[i];
    return role == OTFX_ROLE_MPI_P2P || role == OTFX_ROLE_MPI_COLLECTIVE || role == OTFX_ROLE_MPI_OTHER;
}

/* "" for OTFX_REF_NONE or an unknown reference. */
static inline const char *region_name(region_facts *facts, otfx_ref region)
{
    size_t i = region_index(facts, region);
    return i == SIZE_MAX ? "" : facts->name[i];
}

static inline bool region_is_zeroed(region_facts *facts, otfx_ref region)
{
    if (!facts->zero_name)
        return false;
    size_t i = region_index(facts, region);
    return i != SIZE_MAX && strcmp(facts->name[i], facts->zero_name) == 0;
}

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
/* Room for one more frame; false (and failed) beyond OTFX_MAX_CALL_DEPTH or out of memory. */
bool cpu_clock_grow(cpu_clock *clock);

/* The two halves of an event on the clock, for a pass that inlines its own piece handling. First the
 * time up to the event: true when it is a piece of CPU time (*function, [*begin, *end)); the clock is
 * accounted up to the event either way. */
static inline bool cpu_clock_piece(cpu_clock *clock, const otfx_event *event, otfx_ref *function,
                                   otfx_time *begin, otfx_time *end)
{
    if (!clock->started) {
        if (event->time < clock->from)
            return false;
        clock->started = true;
        clock->last = event->time;
    }
    otfx_time time = event->time > clock->to ? clock->to : event->time;
    if (time <= clock->last)
        return false;
    const otfx_time last = clock->last;
    clock->last = time;
    if (clock->mpi_depth != 0)
        return false;
    *function = clock->depth ? clock->stack[clock->depth - 1].region : OTFX_REF_NONE;
    *begin = last;
    *end = time;
    return true;
}

/* Then the event applied to the stack (the only half a pass that needs no CPU time calls). */
static inline void cpu_clock_apply(cpu_clock *clock, region_facts *facts, const otfx_event *event)
{
    switch (event->type) {
    case OTFX_EV_ENTER: {
        if (clock->depth >= clock->capacity && !cpu_clock_grow(clock))
            return;
        bool mpi = region_is_mpi(facts, event->u.region.region);
        clock->stack[clock->depth++] =
            (stack_frame){.region = event->u.region.region, .enter = event->time, .mpi = mpi};
        if (mpi)
            clock->mpi_depth++;
        break;
    }
    case OTFX_EV_LEAVE:
        if (clock->depth > 0 && clock->stack[--clock->depth].mpi)
            clock->mpi_depth--;
        break;
    case OTFX_EV_REDUCTION:
        /* no detail over the range: nothing is known to have run there */
        if (clock->started && event->u.reduction.end > clock->last)
            clock->last = event->u.reduction.end < clock->to ? event->u.reduction.end : clock->to;
        break;
    default:
        break;
    }
}

/* Accounts the time up to the event (pieces handed to `piece`), then applies it to the stack. */
static inline void cpu_clock_event(cpu_clock *clock, region_facts *facts, const otfx_event *event,
                                   cpu_piece_fn piece, void *user)
{
    otfx_ref function;
    otfx_time begin, end;
    if (cpu_clock_piece(clock, event, &function, &begin, &end) && piece)
        piece(user, function, begin, end);
    cpu_clock_apply(clock, facts, event);
}

/* The innermost open MPI region (NULL: none). */
static inline const stack_frame *cpu_clock_mpi_frame(const cpu_clock *clock)
{
    for (uint32_t i = clock->depth; i > 0; i--)
        if (clock->stack[i - 1].mpi)
            return &clock->stack[i - 1];
    return NULL;
}

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

/* Why a range of a stream has no detail: the replay's reasons (otfx_replay_gap), then a selected rank
 * that no event place serves or that holds nothing (the whole window). */
enum { UNSEEN_RANK_NOT_SERVED_RANGE = OTFX_REPLAY_GAP_COUNT, UNSEEN_WHY_COUNT };
const char *unseen_why_name(uint32_t why); /* "reduced", "before-held", "after-held", "rank-not-served" */

/* The ranges an answer lists: the longest ones (a bound independent of --limit). */
#define UNSEEN_RANGES_KEPT 100u

typedef struct unseen_range {
    uint32_t rank, thread, why;
    otfx_time begin, end;
} unseen_range;

/* What a replay-based answer could not see: the replay's counters, how fresh the held data of the
 * selected ranks is, and the ranges without detail per stream. Merged by union, order-independently
 * (a stream is served by one place): ranges of one stream and reason that touch or overlap coalesce,
 * and of the result the UNSEEN_RANGES_KEPT longest are kept (ties: by rank, thread, begin, reason),
 * the others counted. */
typedef struct unseen_report {
    unseen_counts counts;
    uint32_t app_ranks;
    /* the selected ranks holding events (sorted disjoint [first, last] pairs of held_pairs) */
    uint32_t *held;
    uint32_t held_pairs, held_capacity;
    /* the time of the last event each of them sent its place: the oldest (its rank) and the newest */
    otfx_time held_until_min, held_until_max;
    uint32_t oldest_rank;
    unseen_range *ranges; /* sorted by (rank, thread, begin, why) once normalized */
    size_t range_count, range_capacity;
    uint64_t ranges_total; /* ranges known (after coalescing), those left out included */
    otfx_time left_out_ns; /* the length of those left out */
    bool failed;           /* out of memory */
} unseen_report;

void unseen_free(unseen_report *report);
/* The pass's `gap` feeds it: stream `stream` has no detail over [begin, end). */
void unseen_gap(unseen_report *report, const otfx_replay_stream *stream, otfx_time begin, otfx_time end,
                otfx_replay_gap why);
/* The replay's counters, at the end of a leaf (the ranges are coalesced and bounded too). */
void unseen_from_stats(unseen_report *report, const otfx_replay_stats *stats);
void unseen_write(otfx_blob *out, const unseen_report *report);
/* Reads what unseen_write wrote into an empty report (it owns its arrays then); sets reader->failed
 * (and leaves the report empty) when malformed or out of memory. */
void unseen_read(otfx_blob_reader *reader, unseen_report *report);
/* into = into ∪ other. False when out of memory. */
bool unseen_add(unseen_report *into, const unseen_report *other);
/* The `unseen` record line and an `unseen-range` line per kept range, the ranks the query selects that
 * no place holds added (rank-not-served over the query's window). False when out of memory. */
bool unseen_lines(otfx_text *reply, const otfx_command *query, const unseen_report *report);

/* ---- small pieces both modules use --------------------------------------------------------------- */

/* Item `index` of a pass's per-stream array (otfx_replay_stream.index), growing it with zeroed items as
 * needed; NULL when out of memory. Inline: a pass asks for it at every event. */
void *stream_slot_grow(void **array, size_t *capacity, size_t item_size, uint32_t index);
static inline void *stream_slot(void **array, size_t *capacity, size_t item_size, uint32_t index)
{
    if (index < *capacity)
        return (unsigned char *)*array + (size_t)index * item_size;
    return stream_slot_grow(array, capacity, item_size, index);
}
/* Orders names held as bytes and a length (not NUL-terminated): bytes first, then the shorter. */
int name_compare(const char *a, uint32_t a_length, const char *b, uint32_t b_length);

/* ---- a leaf's replay ------------------------------------------------------------------------------- */

/* Builds a replay of `pass` over the leaf's traces of the ranks `query` selects, in its window, and runs
 * it with the leaf's exchange (NULL: this place alone). Records in `unseen` which selected ranks hold
 * events and how fresh they are (the pass's `gap` adds the ranges with unseen_gap). On success the
 * replay is returned for its stats (destroy it); NULL with why in `error`. */
otfx_replay *replay_leaf_run(const otfx_command *query, const otfx_leaf_input *input,
                             const otfx_replay_pass *pass, void *pass_user, char *error, size_t error_size);
/* Records in `unseen` which selected ranks hold events at this place and how fresh they are (the time
 * of the last event each sent). Asked when an answer is made, so a follow's round says how fresh the
 * data is now. False when out of memory. */
bool unseen_record_held(unseen_report *unseen, const otfx_command *query, const otfx_leaf_input *input);

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

/* ---- a replay module's leaf -------------------------------------------------------------------------- */

/* What a module built on a replay gives replay_leaf: its pass, its per-query state (`run`, the pass's
 * pass_user) and how to answer from it. */
typedef struct replay_module {
    const otfx_replay_pass *pass;
    /* A fresh state for `query` (kept as long as the state: a follow's query lives in the follow);
     * NULL when out of memory. */
    void *(*run_create)(const otfx_command *query, const otfx_leaf_input *input);
    void (*run_destroy)(void *run);
    /* This place's partial result from `run` after a replay's run; `run` stays as it is (a follow's
     * next round goes on from it). */
    bool (*answer)(void *run, const otfx_command *query, const otfx_leaf_input *input,
                   const otfx_replay_stats *stats, const follow_fields *follow, otfx_blob *out, char *error,
                   size_t error_size);
} replay_module;
/* The leaf of a replay module: one replay over the window, or with query->follow the next round of the
 * follow kept at this place (follow_states.h). */
bool replay_leaf(const replay_module *module, const otfx_command *query, const otfx_leaf_input *input,
                 otfx_blob *out, char *error, size_t error_size);

#endif

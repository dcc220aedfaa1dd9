/* follow_states.h — the replays an event place keeps between the queries of a follow (critical-path,
 * wait-states --follow ID, docs/analyses.md "Following the live stream"), for the built-in replay
 * modules, which run in the place's process. Private to otfx_analysis.
 *
 * A state belongs to one place (its definitions: simulated places in one process are told apart by
 * them), one module and one follow ID. It holds the replay (streams read up to where they stopped, the
 * values waiting for their receivers) and the pass's accumulated state, together with the query's
 * options (from, to, ranks, zero) and the traces it replays. A round takes the state out of the
 * registry (nothing else can touch it meanwhile, and no lock is held while it runs) and gives it back
 * when the round succeeded, or drops it when the round failed.
 *
 * Bounds: at most FOLLOW_STATES_PER_PLACE states per place (the least recently used one goes), a state
 * untouched for FOLLOW_IDLE_NS of the place's clock is dropped at the next follow query of any place in
 * the process, and a state whose round failed is dropped. */
#ifndef OTFX_FOLLOW_STATES_H
#define OTFX_FOLLOW_STATES_H

#include <otfx/analysis.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FOLLOW_STATES_PER_PLACE 8u
#define FOLLOW_IDLE_NS          (120ull * 1000000000ull)

typedef struct follow_trace {
    const otfx_trace *trace;
    uint32_t rank, thread;
} follow_trace;

typedef struct follow_state {
    uint64_t round;      /* this round's number: 1 for a fresh state */
    bool restarted;      /* a state was dropped: the places disagreed on the round or the traces changed */
    otfx_command query;  /* the options the state was built with; top and limit are this round's */
    otfx_replay *replay; /* NULL in a fresh state: the module builds it */
    void *run;           /* the pass's accumulated state, the module's (NULL in a fresh state) */
    void (*free_run)(void *run);

    /* the registry's */
    char module[32];
    uint64_t id;
    const otfx_defs *defs;
    uint64_t last_used_ns, use; /* the place's clock at the last round; the registry's use counter then */
    follow_trace *traces;
    size_t trace_count;
    struct follow_state *next;
} follow_state;

/* The state of this round of follow query->follow for `module` on the place of `input`. Every place of
 * the exchange calls it for the same query: they agree (allreduces of their round numbers) whether they
 * all continue their states or all start fresh. NULL with why in `error` when the exchange failed or
 * some place keeps the ID for other options (a different query under the same ID is refused: the ID
 * belongs to the follow that chose it; the kept states stay). */
follow_state *follow_begin(const char *module, const otfx_command *query, const otfx_leaf_input *input,
                           char *error, size_t error_size);
/* The round succeeded: the state is kept for the next one. */
void follow_keep(follow_state *state, const otfx_leaf_input *input);
/* The round failed: the state is dropped. */
void follow_drop(follow_state *state);

#endif

/*
 * event_place_internal.h — the event place's state, shared by its files (private to places/).
 *
 *   event_place.c    batches and clock sync, trace creation, the place's start (otfx_event_place_run)
 *   rank_deaths.c    ranks that end without MPI_Finalize: their description, exit status, vanished ones
 *   place_report.c   the end-of-run report (ranks, held calls, clock, message pairs, memory)
 *   place_loop.c     the place's main loop (MPI thread), its wake-ups, the worker and snapshot threads
 *   tree_host.c      what the place's tree runtime (otfx_tree, otfx/tree.h) needs from it: leaves,
 *                    steering and commands at event places, snapshots, the ranks' end
 *   rank_control.c   steering messages to the served ranks (rank_control.h)
 *   snapshot.c       the event places' common OTF2 snapshot (snapshot.h)
 *   batch_decoder.c  one batch of raw records → otfx events of one trace
 *   triggers.c       trigger conditions on the appended events, silent ranks (place_triggers.h)
 *   place_config.c   OTFX_BUFFER / OTFX_REDUCTION and size parsing
 *   user_symbols.c   user-function addresses → regions (load map, libdwfl)
 */
#ifndef OTFX_EVENT_PLACE_INTERNAL_H
#define OTFX_EVENT_PLACE_INTERNAL_H

#include "rank_control.h"
#include <otfx/analysis.h>
#include <otfx/capture_wire.h>

#include <otfx/place.h>
#include <otfx/trace.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the place needs to know about an MPI function beyond its name. */
struct place_function {
    otfx_region_role role;
    bool blocking_collective; /* class "collective": COLL_BEGIN right after its ENTER */
    uint32_t collective_op;   /* OTF2_CollectiveOp of collectives (COLL_END's op) */
    otfx_ref region;          /* defined on first use: OTFX_REF_NONE until then */
};

/* One location (an application rank's thread): one otfx trace, and the decoder's view of where that
 * trace stands after the last batch appended to it. */
#define PLACE_MAX_DROP_GAPS 16

struct place_stream {
    otfx_trace *trace;
    uint32_t thread;
    uint64_t next_sequence;
    uint64_t last_time;
    /* The latest event time given to the trace: the rank's clock model is shared by its threads, and a
     * re-synchronisation that one thread's records bring in may map another thread's next ticks a few ns
     * below what that thread's events already got (batch_decoder.c, next_event). */
    uint64_t last_event_time;
    bool any_time;
    uint32_t depth; /* regions open */
    uint32_t
        collective_depth; /* depth of a blocking collective's ENTER whose COLL_END is still due; 0: none */
    bool begin_pending;   /* that collective's COLL_BEGIN is held back (batch_decoder.c, next_event) */
    uint64_t begin_time;  /* the time it gets: its ENTER's */
    uint64_t blocked_ns;  /* the thread's blocked time as its last batch reported it */
    char **names;         /* otfx.h names by the thread's name id (NULL: not defined) */
    /* The thread's metric set (METRIC_SET): its id (0: none yet) and its metrics' definitions, in the
     * order of a METRICS record's values. */
    uint32_t metric_set, metric_count;
    otfx_ref metric_refs[CAPTURE_METRICS_MAX];
    uint32_t name_capacity;
    /* Steering (batch_decoder.c): after a RECORDING "on" record, LEAVEs at depth
     * resume_floor close regions entered before the pause: dropped and counted, not a malformed batch. */
    bool recording_resumed;
    uint32_t resume_floor;
    uint64_t dropped_leaves;
    /* Back-pressure drops (batch_decoder.c, CAPTURE_RECORD_DROPPED): regions entered while the
     * rank dropped events have no ENTER here; gap i stands for drop_gaps[i].count of them sitting on top
     * of the first drop_gaps[i].depth regions held open, so a LEAVE at that depth closes one of them
     * (dropped), not a held region. Innermost last; beyond PLACE_MAX_DROP_GAPS the decoder falls back to
     * the "recording resumed" rule above. */
    struct place_drop_gap {
        uint32_t depth;
        uint32_t count;
    } drop_gaps[PLACE_MAX_DROP_GAPS];
    uint32_t drop_gap_count;
    /* A nonblocking collective's COLLECTIVE record waiting for the request record that follows it
     * (batch_decoder.c; the two may arrive in different batches). */
    bool nbc_pending;
    struct capture_collective_record nbc_payload;
    struct trigger_stack *trigger_stack; /* triggers.c: the open regions while a trigger is armed */
};

/* served_rank.events_per_s is measured over this many one-second samples */
#define RATE_SAMPLES 10

struct served_rank {
    int rank;
    struct place_stream **streams; /* indexed by thread; NULL until the thread's first batch */
    uint32_t stream_capacity;
    otfx_ref *comms; /* communicator id of this rank → definition; OTFX_REF_NONE: not announced */
    uint32_t comm_capacity;
    uint64_t batches;
    uint64_t rejected_batches; /* malformed: dropped whole */
    uint64_t rejected_records; /* records in rejected batches */
    uint64_t lost_batches;     /* gaps in a thread's batch sequence */
    bool said_goodbye;
    /* The rank's timer (otfx/capture_wire.h): every record is converted with the calibration of the
     * rank's first batch (MPI_Init's); the goodbye batch's (MPI_Finalize's, over the whole run) is
     * only reported. */
    bool clock_known, clock_tsc, clock_final_known;
    double ns_per_tick, final_ns_per_tick;
    uint64_t ref_ticks, ref_ns, final_ref_ticks, final_ref_ns;
    uint64_t pairs_checked, pairs_inverted; /* messages to this rank (place_report.c's pair check) */
    otfx_time worst_inversion_ns;           /* the largest send start - receive end of those inverted */
    int64_t offset_ns, final_offset_ns;     /* the place's clock minus the rank's; offset_ns is applied */
    uint64_t offset_round_trip_ns, final_offset_round_trip_ns; /* theirs: each is off by half of it */
    /* Clock re-synchronisations (CLOCK records, OTFX_CLOCK_SYNC): the correction added to the rank's
     * tick-derived time is piecewise linear in the ticks, continuous, one segment per re-sync (before
     * the first: offset_ns). batch_decoder.c record_time. */
    struct clock_segment {
        uint64_t ticks;    /* where the segment starts */
        double correction; /* ns there */
        double slope;      /* ns of correction per tick */
        /* How far the correction can be off (place_clock_error_bound): from the measured line (the
         * measurement at line_ticks, line_correction there, extended by the drift since the previous
         * one, line_drift ns per tick) by a known amount, since both are linear; the line itself is off
         * by line_bound at line_ticks (half the round trip) and by line_growth more per tick away from it
         * (the drift's error, from two measurements' errors). */
        double line_correction, line_drift, line_bound, line_growth;
        uint64_t line_ticks;
    } * clock_segments;
    uint32_t clock_segment_count, clock_segment_capacity;
    bool clock_sync_known;
    uint64_t clock_sync_ticks; /* the last measurement */
    double clock_sync_correction;
    double clock_sync_bound; /* half its round trip: how far it can be off */
    uint64_t clock_syncs, clock_syncs_ignored;
    struct place_symbols *symbols; /* user functions: load map and address → region (user_symbols.c) */
    /* User functions the rank switched off (THROTTLED records), per thread as the rank throttles them.
     * `skipped` is the largest cumulative count received; the batch being decoded stages its own
     * (batch_decoder.c), kept only if the batch is. */
    struct throttled_function {
        uint32_t thread;
        otfx_ref region;
        uint64_t calls, mean_ns, skipped;
        bool staged;
        uint64_t staged_calls, staged_mean_ns, staged_skipped;
    } * throttled;
    uint32_t throttled_count, throttled_capacity;
    struct rank_control_state control; /* steering (rank_control.c) */
    /* What recording costs the rank (its OVERHEAD record; batch_decoder.c): picoseconds per record by
     * kind, the test point's injected busy-spin included for time-ordered kinds, and the intrusion
     * estimated from every record received so far (place_report.c, tree_host.c). */
    bool overhead_known;
    uint32_t injected_ns;
    uint64_t record_cost_ps[CAPTURE_OVERHEAD_KINDS]; /* the latest measurement's */
    uint64_t intrusion_ps;
    uint32_t overhead_measurements;
    /* The same per event kind: the first measurement's, and each later one's (`overhead measure`) with
     * where in the stream it applies from. */
    otfx_record_costs first_costs;
    otfx_cost_change *cost_changes;
    uint32_t cost_change_count;
    size_t cost_change_capacity;
    /* Steering (batch_decoder.c): a stream of this rank resumed recording, so stray LEAVEs at
     * depth 0 in its other threads' streams are dropped and counted too. */
    bool recording_resumed;
    /* events/s over the last RATE_SAMPLES samples (one a second): a rank's batches arrive in bursts
     * (one per ~100 KiB), so a one-second rate reads 0 between them although the rank records */
    uint64_t rate_events[RATE_SAMPLES], rate_times[RATE_SAMPLES];
    uint32_t rate_next, rate_count;
    uint64_t events_per_s;
    /* The rank's process, from its clock pings: watched while it runs when it shares this node
     * (rank_deaths.c, place_watch_ranks). */
    int pid;
    bool on_node;
    uint64_t gone_since_ns; /* its process was first found gone (0: not yet) */
    /* How it ended without MPI_Finalize (its DIED record, or its process gone without a goodbye). */
    struct rank_death {
        bool died;
        bool vanished;  /* gone without a word: killed outright (SIGKILL) */
        uint32_t cause; /* enum capture_death_cause */
        int32_t value, signal_code;
        uint64_t address;
        otfx_ref where; /* the region of the instruction it died at, OTFX_REF_NONE if unknown */
        bool reported;  /* told the tree (tree_host.c) */
    } death;
};

struct event_place {
    otfx_event_place_setup setup;
    otfx_defs *defs;
    otfx_trace_config trace_config;
    struct place_function *functions;
    otfx_ref phase_region;
    struct served_rank *ranks;
    /* Scratch for one batch: its bytes and its decoded events (at most two per record). */
    unsigned char *batch;
    otfx_event *events;
    size_t event_capacity;
    /* Communicator ids a batch mapped, undone when the batch is rejected. */
    uint32_t *new_comm_ids;
    size_t new_comm_capacity;
    uint64_t control_sequence; /* the last steering command's sequence number (rank_control.c) */
    int goodbyes;              /* served ranks that said goodbye */
    bool reported;             /* the end-of-run report was printed */
    bool job_failed;           /* the job ends after a failure: ranks still running are reported so */
    uint64_t start_hwm_kib;
    struct place_runtime *runtime; /* the loop, threads and tree host (place_loop.h); NULL before the loop */
    /* Queries (OTFX_QUERY_MEMORY, OTFX_MODULE_TIMEOUT): the bound of a partial result, the time limit of
     * a module's call. */
    size_t query_memory;
    uint64_t module_timeout_ns;
    bool keep_traces; /* a module's thread that was given up on may still read them: never freed */
    struct place_triggers *triggers; /* triggers.c; NULL: none was ever added */
};

/* event_place.c: one message arrived on the tool communicator (probed with `status`): receives it and
 * handles it (batch, clock sync, control answer; anything else is reported and dropped). Returns true
 * when it was a served rank's goodbye batch (counted in place->goodbyes). */
bool place_receive_tool_message(struct event_place *place, const MPI_Status *status);
/* event_place.c: the stream of `thread` on `rank`, its trace created at its first use; NULL (said on
 * stderr) when it cannot be created or the thread index is absurd. */
struct place_stream *place_stream_of(struct event_place *place, struct served_rank *rank, uint32_t thread);
/* place_report.c: the end-of-run report of every served rank and the memory line (once). */
void place_print_report(struct event_place *place);

/* rank_deaths.c, the end of a rank without MPI_Finalize. place_describe_death: "died of SIGSEGV
 * (Segmentation fault) at address 0x0 in compute", "called MPI_Abort(…, 3)", … into `text`;
 * place_death_exit_code: the exit status the job ends with because of it (a signal's number, MPI_Abort's
 * error code or exit()'s status, at least 1). place_watch_ranks: a served rank on this node whose process
 * is gone without its goodbye batch (for a second: batches still on their way are taken first) counts as
 * having said goodbye and died (vanished). Returns whether one did. */
void place_describe_death(const struct event_place *place, const struct served_rank *rank, char *text,
                          size_t size);
int place_death_exit_code(const struct served_rank *rank);
bool place_watch_ranks(struct event_place *place, uint64_t now_ns);
/* place_loop.c: SIGINT or SIGTERM (mpiexec forwards them to every process of the job) caught on this
 * place: the signal, 0 if none came. */
int place_interrupted(void);

/* place_loop.c: runs the loop until the tree shuts down (standalone: until every rank said goodbye and
 * the report is printed). Returns 0. */
int place_loop_run(struct event_place *place);

/* place_config.c: reads OTFX_BUFFER and OTFX_REDUCTION into *config; prints why and returns false when
 * either is invalid. */
bool place_read_trace_config(int place_rank, otfx_trace_config *config);
/* place_config.c: reads OTFX_QUERY_MEMORY (a size, default 64M) and OTFX_MODULE_TIMEOUT (seconds, default
 * 30) into the place; prints why and returns false when either is invalid. */
bool place_read_query_limits(struct event_place *place);
/* Peak and current resident set of this process in KiB, from /proc/self/status (0 if unreadable). */
uint64_t place_vm_hwm_kib(void);

/* place_config.c: the MPI function table → struct place_function (regions still undefined). */
bool place_describe_functions(struct event_place *place);

/* batch_decoder.c: decodes the records of one batch of `rank`'s thread `stream` and appends them to
 * its trace. Returns false, having printed why and changed no trace, for a malformed batch. */
/* batch_decoder.c: a rank's tick-derived time (its MPI_Init calibration) and the correction to the
 * place's clock at `ticks` (its clock re-synchronisations). */
double place_clock_local(const struct served_rank *rank, uint64_t ticks);
double place_clock_correction(const struct served_rank *rank, uint64_t ticks);
/* How far place_clock_correction(rank, ticks) can be off the place's clock, from the round trips the
 * offsets and re-synchronisations were measured in; negative when not known (before the first
 * re-synchronisation nothing bounds the calibration's rate error). */
double place_clock_error_bound(const struct served_rank *rank, uint64_t ticks);
bool place_ingest_records(struct event_place *place, struct served_rank *rank, struct place_stream *stream,
                          const unsigned char *records, size_t bytes, uint64_t *record_count);
/* batch_decoder.c: the rank's record costs as the cost of each event its trace holds (otfx/analysis.h). */
/* What recording costs the rank, for the analyses. out->changes points into the rank's table, which the
 * next batch may move: a copy for another thread copies them too (tree_host.c). */
void place_rank_overhead(const struct served_rank *rank, otfx_rank_overhead *out);

/* user_symbols.c: a served rank's load map and user-function names. Both create *symbols on first use;
 * false when out of memory (or the region cannot be defined). */
struct place_symbols;
bool place_symbols_add_object(struct place_symbols **symbols, const char *path, uint64_t base);
bool place_symbols_region(struct place_symbols **symbols, otfx_defs *defs, uint64_t address,
                          otfx_ref *region);
void place_symbols_destroy(struct place_symbols *symbols);

#endif

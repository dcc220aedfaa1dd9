/*
 * event_place_internal.h — the event place's state, shared by its files (private to places/).
 *
 *   event_place.c    receive loop, trace creation, end-of-run report
 *   batch_decoder.c  one batch of raw records → otfx events of one trace
 *   place_config.c   OTFX_BUFFER / OTFX_REDUCTION and size parsing
 *   user_symbols.c   user-function addresses → regions (load map, libdwfl)
 */
#ifndef OTFX_EVENT_PLACE_INTERNAL_H
#define OTFX_EVENT_PLACE_INTERNAL_H

#include "record_format.h"

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
struct place_stream {
    otfx_trace *trace;
    uint32_t thread;
    uint64_t next_sequence;
    uint64_t last_time;
    bool any_time;
    uint32_t depth; /* regions open */
    uint32_t
        collective_depth; /* depth of a blocking collective's ENTER whose COLL_END is still due; 0: none */
    uint64_t blocked_ns;  /* the thread's blocked time as its last batch reported it */
    char **names;         /* otfx.h names by the thread's name id (NULL: not defined) */
    uint32_t name_capacity;
};

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
    /* The rank's timer (record_format.h): every record is converted with the calibration of the
     * rank's first batch (MPI_Init's); the goodbye batch's (MPI_Finalize's, over the whole run) is
     * only reported. */
    bool clock_known, clock_tsc, clock_final_known;
    double ns_per_tick, final_ns_per_tick;
    uint64_t ref_ticks, ref_ns, final_ref_ticks, final_ref_ns;
    uint64_t pairs_checked, pairs_inverted; /* messages to this rank (event_place.c's pair check) */
    int64_t offset_ns, final_offset_ns;     /* the place's clock minus the rank's; offset_ns is applied */
    struct place_symbols *symbols; /* user functions: load map and address → region (user_symbols.c) */
    struct throttled_function {
        otfx_ref region;
        uint64_t calls, mean_ns, skipped;
    } * throttled; /* user functions the rank switched off (THROTTLED records) */
    uint32_t throttled_count, throttled_capacity;
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
};

/* place_config.c: reads OTFX_BUFFER and OTFX_REDUCTION into *config; prints why and returns false when
 * either is invalid. */
bool place_read_trace_config(int place_rank, otfx_trace_config *config);
/* Peak and current resident set of this process in KiB, from /proc/self/status (0 if unreadable). */
uint64_t place_vm_hwm_kib(void);

/* place_config.c: the MPI function table → struct place_function (regions still undefined). */
bool place_describe_functions(struct event_place *place);

/* batch_decoder.c: decodes the records of one batch of `rank`'s thread `stream` and appends them to
 * its trace. Returns false, having printed why and changed no trace, for a malformed batch. */
bool place_ingest_records(struct event_place *place, struct served_rank *rank, struct place_stream *stream,
                          const unsigned char *records, size_t bytes, uint64_t *record_count);

/* user_symbols.c: a served rank's load map and user-function names. Both create *symbols on first use;
 * false when out of memory (or the region cannot be defined). */
struct place_symbols;
bool place_symbols_add_object(struct place_symbols **symbols, const char *path, uint64_t base);
bool place_symbols_region(struct place_symbols **symbols, otfx_defs *defs, uint64_t address,
                          otfx_ref *region);
void place_symbols_destroy(struct place_symbols *symbols);

#endif

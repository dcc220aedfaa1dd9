/* otf2_clock_condition.h — an OTF2 export's correction of clock condition violations (private to libotfx).
 *
 * Ranks' clocks are synchronised only so far (capture/src/timer.h, places/src/batch_decoder.c): a
 * receive recorded on one rank's clock may end before its send began on another's. An archive with such
 * an inversion shows a message travelling back in time, so the export moves the receive forward, the way
 * Scalasca's controlled logical clock does (Becker et al., "Scalable timestamp synchronization for event
 * traces of message-passing applications", 2009), forward amortization only:
 *
 *  - every location has a shift, 0 at the window's start; an event at time t is written at t + shift;
 *  - a receive (RECV, IRECV) whose time + shift is earlier than its send's corrected time + the minimum
 *    latency (0: a receive may end when its send began) is written at that time, and the location's
 *    shift grows to match: the events after it move with it, so the intervals between them are kept;
 *  - the shift then decays by 1 ns per CLOCK_AMORTIZATION ns of the location's own time (Scalasca's
 *    gamma = 1 - 1/CLOCK_AMORTIZATION = 0.99), so a correction does not stay for the rest of the trace:
 *    an interval shrinks by at most 1 % while its location's shift decays, never below zero, and events
 *    stay in their order (times never decrease, Enter/Leave nesting is untouched).
 *
 * A send's corrected time depends on the receives before it on its location, and those on other sends,
 * on other processes of the export: the export runs rounds. In each round every process computes its
 * locations' corrections with the send times it knows (a send not known yet counts at its own time),
 * then publishes the corrected times of its sends that changed (otfx_clock_write_round); it keeps the
 * published times of the messages its own locations receive (otfx_clock_read_round). The corrections
 * only grow from round to round, and they stop changing after as many rounds as the longest chain of
 * corrections that crosses between processes (a receive moved, so a later send moves, so its receive on
 * another process moves, ...); the export stops at the first round in which nothing changed anywhere, or
 * after CLOCK_MAX_ROUNDS and then reports how many messages were still moving (their receives may still
 * be early): it never claims an archive free of inversions that is not.
 *
 * Messages are named by (channel, ordinal): otfx_pairing_channel's number, the same on every process,
 * and otfx_event.u.msg.seq. Messages without an ordinal are not corrected (no process can tell which
 * send is theirs).
 *
 * Memory: about 32 bytes per message whose send this process writes or whose receive it writes, for the
 * export's duration; a round's publication holds the sends that changed in it (all of them in the
 * first round).
 */
#ifndef OTFX_OTF2_CLOCK_CONDITION_H
#define OTFX_OTF2_CLOCK_CONDITION_H

#include "otf2_unify.h"

#include <otfx/trace.h>

enum {
    CLOCK_AMORTIZATION = 100, /* a shift decays by 1 ns per this many ns of its location's time */
    CLOCK_MIN_LATENCY_NS = 0, /* how long after its send began a receive ends at the earliest */
    CLOCK_MAX_ROUNDS = 32,
};

typedef struct otfx_clock_condition otfx_clock_condition;

/* One location's correction: its shift at its last event's time. */
typedef struct otfx_clock_location {
    otfx_time last;
    uint64_t shift;
} otfx_clock_location;

otfx_clock_condition *otfx_clock_create(void);
void otfx_clock_destroy(otfx_clock_condition *clock);

/* The corrected time of `time` (not before the location's last event). */
otfx_time otfx_clock_map(const otfx_clock_location *location, otfx_time time);

/* A round computes: the sends' corrected times are recorded (published by otfx_clock_write_round), the
 * events moved counted. After the last round (otfx_clock_settle), events only get their times. */
void otfx_clock_round_begin(otfx_clock_condition *clock);
void otfx_clock_settle(otfx_clock_condition *clock);

/* An event of the location at `time` (not before its last one): advances the location and returns the
 * event's corrected time. `channel` is valid when `named` (otfx_pairing_channel). */
otfx_status otfx_clock_event(otfx_clock_condition *clock, otfx_clock_location *location, otfx_time time,
                             const otfx_event *event, bool named, uint32_t channel, otfx_time *corrected);

/* After a round: this process's part of the exchange (its changes and counts). */
void otfx_clock_write_round(const otfx_clock_condition *clock, otfx_bytes *out);
/* Every process's parts, in process order (`self`: this one's): keeps the published sends of the
 * messages this process receives and sums the round up. *settled: nothing changed anywhere. */
otfx_status otfx_clock_read_round(otfx_clock_condition *clock, otfx_byte_reader *parts, uint32_t count,
                                  uint32_t self, bool *settled);

/* After a round's otfx_clock_read_round: whether the next round would compute on this process exactly
 * what this one did (no receive of it would get another time from the send times known now, its own and
 * the published ones): it would publish nothing. When that holds on every process, the rounds are settled
 * without reading the traces once more: otfx_clock_settle_repeated, then otfx_clock_settle. */
bool otfx_clock_round_repeatable(const otfx_clock_condition *clock);
void otfx_clock_settle_repeated(otfx_clock_condition *clock);

/* The last round's totals over every process: events written at a later time than recorded, the largest
 * correction, and the messages whose send still moved when the rounds ran out (0 when settled). */
uint64_t otfx_clock_events_moved(const otfx_clock_condition *clock);
uint64_t otfx_clock_max_correction(const otfx_clock_condition *clock);
uint64_t otfx_clock_unresolved(const otfx_clock_condition *clock);

#endif

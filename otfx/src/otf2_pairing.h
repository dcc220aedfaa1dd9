/* otf2_pairing.h — which point-to-point records an OTF2 export writes (private to libotfx).
 *
 * OTF2 readers pair the n-th MpiSend/MpiIsend from S to R on a (communicator, tag) with the n-th
 * MpiRecv/MpiIrecv at R from S on it. An export of reduced traces holds sends whose receives were reduced
 * away and the reverse (each rank's trace is reduced on its own), and every later pair of such a channel
 * would be wrong. otfx events carry each message's ordinal on its channel (otfx_event.u.msg.seq), so an
 * export can write exactly the messages whose both ends it holds:
 *
 *  1. note: every process notes, per channel end, the ordinals its traces hold in the window (as runs
 *     of consecutive ordinals), and per rank the ids of the requests whose start it holds (ISEND,
 *     IRECV_REQUEST, NBC_REQUEST);
 *  2. exchange: the processes exchange their channel ends (otfx_pairing_write / otfx_pairing_decide,
 *     over the export's allgather; communicators named by name and members, since every process has
 *     its own references);
 *  3. every process keeps a message end only when the other end is held too, on whichever process:
 *     the k-th send and the k-th receive written on a channel are then one message. When its own traces
 *     have ends without a partner, a second pass over them (otfx_pairing_note_dropped) finds the request
 *     ids those messages used;
 *  4. judge: the write pass asks for every event whether to write it. What belongs to a message left
 *     out goes with it: an ISEND's ISEND_COMPLETE and REQUEST_CANCELLED, an IRECV's IRECV_REQUEST.
 *     Every completion written refers to a request whose start is written: an ISEND_COMPLETE,
 *     REQUEST_CANCELLED or NBC_COMPLETE whose start is not held is left out, an IRECV whose
 *     IRECV_REQUEST is not held becomes a RECV (the message stays, as a blocking receive).
 *
 * Ends without an ordinal (seq 0) are written as they are (their readers pair them by order). Requests
 * are per rank (any thread of a rank may complete a request another one started).
 *
 * Collectives: OTF2 readers match the n-th collective operation of every member of a communicator. A
 * reduced trace holds collectives another member's trace lost, and the window cuts every trace at its
 * own place. otfx events carry each collective's instance ordinal on its communicator
 * (otfx_event.u.coll.seq), so the same four steps decide which instances are written:
 *  1. note: per (communicator, rank), the instances held whole (as runs): a blocking collective whose
 *     COLL_BEGIN and COLL_END are held, a nonblocking one whose NBC_COMPLETE and NBC_REQUEST are held;
 *     and (otfx_pairing_cover) the ranks whose traces the process exports;
 *  2. exchange: with the channel ends;
 *  3. an instance is written when every member of its communicator that some process exports holds it
 *     (members not exported do not veto: an export of some ranks keeps what they share);
 *  4. judge: an instance left out loses its COLL_BEGIN and COLL_END (the MPI call's ENTER and LEAVE
 *     stay, so nesting stays valid), or its NBC_COMPLETE and NBC_REQUEST. Collectives without an
 *     ordinal (seq 0) are written as they are when the rank has no ordinals at all (imported archives),
 *     left out otherwise (a drop cut them short). A COLL_BEGIN the place wrote before it knew the
 *     ordinal is judged by the export as the COLL_END that closes it (otf2_export_trace.c).
 *
 * Memory: a few words per channel end, per (communicator, rank) with collectives and per run of
 * consecutive ordinals or request ids, not per message; 24 bytes per nonblocking collective completion
 * held (its instance counts only if its request's start is held too, known once every trace is read);
 * all processes' channel ends and collective members are held on every process while deciding.
 */
#ifndef OTFX_OTF2_PAIRING_H
#define OTFX_OTF2_PAIRING_H

#include "otf2_unify.h"

#include <otfx/trace.h>

typedef struct otfx_pairing otfx_pairing;

typedef enum otfx_pairing_verdict {
    OTFX_PAIRING_WRITE,   /* write the event as it is */
    OTFX_PAIRING_LEAVE,   /* leave it out */
    OTFX_PAIRING_AS_RECV, /* write the IRECV as a RECV: its request's start is not in the archive */
} otfx_pairing_verdict;

otfx_pairing *otfx_pairing_create(void);
void otfx_pairing_destroy(otfx_pairing *pairing);

/* Step 1: the export holds traces of `rank` (once per trace, before or while noting its events). */
otfx_status otfx_pairing_cover(otfx_pairing *pairing, uint32_t rank);
/* Step 1: an event of a trace of `rank` that the export will meet. */
otfx_status otfx_pairing_note(otfx_pairing *pairing, uint32_t rank, const otfx_event *event);

/* Step 2: this process's channel ends as bytes for the exchange (after every note). */
otfx_status otfx_pairing_write(otfx_pairing *pairing, otfx_defs *defs, otfx_bytes *out);
/* Every process's bytes, in process order (`self`: this one's): decides which ends are paired. The
 * same on every process. OTFX_ERR_CORRUPT when a part is malformed. */
otfx_status otfx_pairing_decide(otfx_pairing *pairing, otfx_byte_reader *parts, uint32_t count,
                                uint32_t self);

/* Step 3: whether this process's traces must be read again with otfx_pairing_note_dropped (some of
 * their ends are left out). */
bool otfx_pairing_needs_dropped(const otfx_pairing *pairing);
otfx_status otfx_pairing_note_dropped(otfx_pairing *pairing, uint32_t rank, const otfx_event *event);

/* Step 4: what to do with an event of a trace of `rank` (after otfx_pairing_decide). */
otfx_pairing_verdict otfx_pairing_judge(otfx_pairing *pairing, uint32_t rank, const otfx_event *event);

/* A written message end's channel (sender, receiver, communicator, tag) as a number that is the same on
 * every process, so that (channel, otfx_event.u.msg.seq) names one message everywhere. False for an end
 * that is not written or has no ordinal. */
bool otfx_pairing_channel(const otfx_pairing *pairing, uint32_t rank, const otfx_event *event,
                          uint32_t *channel);

/* Whether any end of this process's traces has a channel (otfx_pairing_channel can be true): without
 * one, nothing of this process takes part in the correction of the clocks. */
bool otfx_pairing_any_channel(const otfx_pairing *pairing);

/* Messages left out because their other end is not held: this process's ends, and every process's. */
uint64_t otfx_pairing_unpaired(const otfx_pairing *pairing);
uint64_t otfx_pairing_unpaired_everywhere(const otfx_pairing *pairing);
/* Collective instances left out because a member did not hold them: of this process's members (each
 * instance once however many of its ranks held it), and of every process's (each instance once). */
uint64_t otfx_pairing_collectives_left_out(const otfx_pairing *pairing);
uint64_t otfx_pairing_collectives_left_out_everywhere(const otfx_pairing *pairing);

#endif

/*
 * channels.h — message ordinals per channel (private to libotfx-capture; channels.c says why).
 */
#ifndef OTFX_CAPTURE_CHANNELS_H
#define OTFX_CAPTURE_CHANNELS_H

#include "recorder.h"

#include <stdbool.h>
#include <stdint.h>

enum capture_channel_end {
    CAPTURE_CHANNEL_SEND = 1, /* this rank sends to `peer` */
    CAPTURE_CHANNEL_RECV = 2, /* this rank receives from `peer` */
};

/* The next message's ordinal (1, 2, …) on this rank's end of the channel (communicator id, peer world
 * rank, tag); 0 when the peer is no application rank (MPI_PROC_NULL, outside the world): no message. */
CAPTURE_INTERNAL uint64_t capture_channel_next(uint32_t comm_id, int32_t peer, int32_t tag,
                                               enum capture_channel_end end);

/* A send whose message never left (cancelled) gives its ordinal back, so the next send takes it: true when
 * it could (it was the channel's last one); a later send on the channel has already taken the next
 * number otherwise, and the channel's later messages stay off by one (MPI_Cancel of a send that then
 * succeeds is rare and deprecated). */
CAPTURE_INTERNAL bool capture_channel_withdraw(uint32_t comm_id, int32_t peer, int32_t tag,
                                               enum capture_channel_end end, uint64_t ordinal);

/* The next collective's ordinal (1, 2, …) on the communicator with this id: counted for every blocking
 * collective, nonblocking collective (at the call that starts it) and start of a persistent collective the
 * rank makes while it has a place, recorded or not, so that the n-th collective on a communicator is the
 * same operation on every member. */
CAPTURE_INTERNAL uint64_t capture_collective_next(uint32_t comm_id);

#endif

/*
 * rank_control.h — steering the application ranks an event place serves (private to places/).
 *
 * The place sends struct capture_control messages (capture/include/otfx/capture_wire.h) to its ranks on the
 * tool communicator and collects their answers. Every command gets a sequence number; a command is done
 * when every served rank that has not said goodbye answered it (a rank that says goodbye later counts
 * as having answered). Sends are nonblocking; nothing here waits.
 */
#ifndef OTFX_PLACES_RANK_CONTROL_H
#define OTFX_PLACES_RANK_CONTROL_H

#include <otfx/capture_wire.h>

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One served rank's steering state, as its answers reported it. */
struct rank_control_state {
    bool recording; /* the rank records (its last answer; initially from OTFX_RECORD) */
    bool paused;    /* the application is blocked by APP_PAUSE */
    /* While the rank is paused / does not record: the place's clock when an answer first said so (the
     * rank answers as it pauses, so this is its pause's start to within the answer's delivery); 0
     * otherwise. */
    uint64_t paused_since_ns, not_recording_since_ns;
    uint32_t classes;  /* enabled event classes (otfx_steer_class bits, otfx/protocol.h) */
    uint64_t answered; /* highest sequence the rank answered */
    /* Metrics, as the rank's last answer to SET_METRICS or PROBE_METRICS said (masks over the metric
     * table, capture/metrics/metric_table.h): its selection, what it counts of the selection and of the
     * metrics probed with it, what it cannot count and perf_event_open's errno for each of those. */
    bool metrics_answered;
    bool has_pmu;
    uint64_t metrics_selected, metrics_counted, metrics_refused;
    uint16_t refusal_errno[64];
    MPI_Request send;               /* the last control message in flight to it (MPI_REQUEST_NULL: none) */
    struct capture_control message; /* its buffer */
};

struct event_place;
struct served_rank;

/* Initial state of every served rank (from OTFX_RECORD, OTFX_START_PAUSED). */
void place_control_init(struct event_place *place);
/* Sends a command to every served rank still running; returns its sequence number (0 if no rank is
 * running: then it is done at once). */
uint64_t place_control_send(struct event_place *place, enum capture_control_command command,
                            uint64_t argument);
/* An answer arrived with CAPTURE_CONTROL_TAG from world rank `source` (already received into
 * `bytes`: a struct capture_control, or a struct capture_metrics_answer for the metrics commands); a
 * malformed one is reported and ignored. */
void place_control_answer(struct event_place *place, int source, const void *bytes, size_t length);
/* Whether every running served rank answered `sequence` (or said goodbye). */
bool place_control_done(const struct event_place *place, uint64_t sequence);
/* Completes/cancels pending sends (at the end of the run). */
void place_control_finish(struct event_place *place);

#endif

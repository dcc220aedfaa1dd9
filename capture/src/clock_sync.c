/*
 * clock_sync.c — this rank's clock against its place's (capture/README.md, "Timer"): the calibration
 * shared by a node's ranks in MPI_Init, the offset to the place by ping-pong (CAPTURE_SYNC_TAG on the
 * tool communicator) in MPI_Init and MPI_Finalize, and the corrections control.c asks for while running.
 * Called from inside the tool (nesting.h) only.
 */
#include "clock_sync.h"
#include "timer.h"
#include "transport.h"
#include "world.h"
#include <otfx/capture_wire.h>
#include <otfx/testpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether this rank's place runs on its node (the clock offset's ping-pong says so). */
static bool place_on_this_node;

/* The processor name sent with each clock ping: the place compares it with its own. A test names
 * another node (OTFX_TEST_REMOTE_PLACE=1) so that one machine exercises the cross-node path: offsets
 * and re-synchronisations measured by ping-pong instead of taken from the shared CLOCK_MONOTONIC. */
static void clock_ping_name(char name[MPI_MAX_PROCESSOR_NAME + 2], int *length)
{
    if (otfx_testpoint_enabled(OTFX_SETTING_TEST_REMOTE_PLACE)) {
        static const char other_node[] = "otfx-test-remote-node";
        memcpy(name, other_node, sizeof(other_node));
        *length = (int)sizeof(other_node) - 1;
        return;
    }
    PMPI_Get_processor_name(name, length);
}

/* The ping-pong with the shortest round trip of a burst (otfx/capture_wire.h, CAPTURE_SYNC_TAG), timed with
 * `read_clock`: its middle and round trip on that clock, the place's clock when it answered, and whether
 * the place shares this node's clock. */
struct clock_ping {
    uint64_t middle, round_trip, place_ns;
    bool same_node;
};

static struct clock_ping ping_burst(int place, int pings, uint64_t (*read_clock)(void))
{
    char name[MPI_MAX_PROCESSOR_NAME + 2 + sizeof(int32_t)] = {0};
    int length = 0;
    clock_ping_name(name, &length);
    const int32_t pid = (int32_t)getpid(); /* the place watches this process by it (otfx/capture_wire.h) */
    memcpy(name + length + 2, &pid, sizeof(pid));
    struct clock_ping best = {.round_trip = UINT64_MAX};
    for (int i = 0; i < pings; i++) {
        uint64_t answer[2] = {0, 0};
        name[length + 1] = (char)(unsigned char)(pings - 1 - i); /* pings of the burst still to come */
        const uint64_t sent = read_clock();
        PMPI_Send(name, length + 2 + (int)sizeof(pid), MPI_CHAR, place, CAPTURE_SYNC_TAG, capture_tool_comm);
        PMPI_Recv(answer, 2, MPI_UINT64_T, place, CAPTURE_SYNC_TAG, capture_tool_comm, MPI_STATUS_IGNORE);
        const uint64_t received = read_clock();
        best.same_node = answer[1] != 0;
        if (received - sent < best.round_trip)
            best =
                (struct clock_ping){sent + (received - sent) / 2, received - sent, answer[0], best.same_node};
    }
    return best;
}

/* Round trips to a place on another node: a ping answered late (the place busy ingesting, either side
 * descheduled) puts the place's time off-centre by up to half its round trip, so only round trips
 * close to the shortest seen count. */
static uint64_t shortest_round_trip_ns = UINT64_MAX;
/* Before any round trip is known, 50 µs: a cluster's interconnect takes a few µs, TCP tens. */
enum { ROUND_TRIP_SLACK_NS = 10 * 1000, FIRST_ROUND_TRIP_NS = 50 * 1000 };
/* Re-synchronisations rejected in a row: each doubles what is accepted, up to 16 times the usual, since
 * on a busy node (more ranks than cores) no round trip may come close to the shortest for a while. */
static unsigned rejected_in_a_row;
enum { MAX_DOUBLINGS = 4 };

/* The corrections of the last two accepted re-synchronisations: the drift between them is how fast the
 * model's error grows without one. A measurement is worth taking, however long its round trip, once
 * the drift since the last one exceeds half that round trip (its error): a rough measurement beats an
 * uncorrected drift, and the place knows each round trip and bounds its error by it. Until two are
 * accepted the drift is unknown and the doublings go on without the cap, so a loaded node still gets its
 * first corrections. */
static struct {
    uint64_t ticks;
    double correction_ns;
} accepted[2];
static unsigned accepted_count;

static double drift_since_last_accepted_ns(uint64_t now_ticks)
{
    if (accepted_count < 2 || accepted[1].ticks <= accepted[0].ticks || now_ticks <= accepted[1].ticks)
        return 0;
    const double rate = (accepted[1].correction_ns - accepted[0].correction_ns) /
                        (double)(accepted[1].ticks - accepted[0].ticks);
    return (rate < 0 ? -rate : rate) * (double)(now_ticks - accepted[1].ticks);
}

/* The longest round trip trusted after `doublings` rejections: twice the shortest seen plus some slack
 * (before any is known, FIRST_ROUND_TRIP_NS), doubled that many times; saturating. */
static uint64_t trusted_round_trip_ns(unsigned doublings)
{
    const uint64_t base = shortest_round_trip_ns == UINT64_MAX
                              ? (uint64_t)FIRST_ROUND_TRIP_NS
                              : 2 * shortest_round_trip_ns + ROUND_TRIP_SLACK_NS;
    return doublings < 64 && base <= (UINT64_MAX >> doublings) ? base << doublings : UINT64_MAX;
}

/* Whether a round trip is short enough to trust; one that is becomes the new shortest. */
static bool round_trip_acceptable(uint64_t round_trip_ns, unsigned doublings)
{
    if (round_trip_ns > trusted_round_trip_ns(doublings < MAX_DOUBLINGS ? doublings : MAX_DOUBLINGS))
        return false;
    if (round_trip_ns < shortest_round_trip_ns)
        shortest_round_trip_ns = round_trip_ns;
    return true;
}

/* A re-synchronisation's round trip: acceptable as above, or because the drift it corrects is larger
 * than its error, or (the drift not known yet) after more doublings than the cap. */
static bool correction_acceptable(uint64_t round_trip_ns, uint64_t now_ticks)
{
    if (round_trip_acceptable(round_trip_ns, rejected_in_a_row))
        return true;
    if (accepted_count >= 2)
        return 0.5 * (double)round_trip_ns < drift_since_last_accepted_ns(now_ticks);
    return shortest_round_trip_ns != UINT64_MAX && rejected_in_a_row > MAX_DOUBLINGS &&
           round_trip_ns <= trusted_round_trip_ns(rejected_in_a_row);
}

/* The place's CLOCK_MONOTONIC minus this rank's: of bursts of 10 ping-pongs with the place (up to 8, until
 * one round trip is acceptable), the one with the smallest round trip, offset = place_time - (t_send +
 * t_recv) / 2 (exact up to the asymmetry of that round trip). Each ping carries this rank's processor
 * name; a place on the same node says so and the offset is 0 exactly (one CLOCK_MONOTONIC per node). */
void capture_measure_place_offset(int app_rank)
{
    enum { PINGS = 10, BURSTS = 8 };
    struct clock_ping best = {.round_trip = UINT64_MAX};
    for (unsigned burst = 0; burst < BURSTS; burst++) {
        const struct clock_ping ping = ping_burst(capture_place_of(app_rank), PINGS, capture_monotonic_ns);
        if (ping.round_trip < best.round_trip)
            best = ping;
        if (ping.same_node || round_trip_acceptable(best.round_trip, burst))
            break;
    }
    place_on_this_node = best.same_node;
    if (!best.same_node && best.round_trip < shortest_round_trip_ns) /* none acceptable: still the best */
        shortest_round_trip_ns = best.round_trip;
    capture_timer_set_offset(best.same_node ? 0 : (int64_t)best.place_ns - (int64_t)best.middle,
                             best.same_node ? 0 : best.round_trip);
}

/* The place's clock minus this rank's tick-derived time (otfx/capture_wire.h's capture_clock_record), now.
 * Same node: one CLOCK_MONOTONIC, so no message: a reference pair. Else the ping-pong with the smallest
 * round trip of 5, with that round trip (the place sends it on: the correction is off by half of it at
 * most); false when even that one took too long to be trusted (the caller tries again soon, accepting
 * twice as long a round trip). */
bool capture_measure_correction(uint64_t *at_ticks, int64_t *correction_ns, uint64_t *round_trip_ns)
{
    *round_trip_ns = 0;
    if (place_on_this_node) {
        uint64_t ns = 0;
        *round_trip_ns = capture_timer_reference_pair(at_ticks, &ns); /* the same bound: half of it */
        *correction_ns = (int64_t)((double)ns - capture_timer_local_ns(*at_ticks));
        return true;
    }
    const struct clock_ping ping = ping_burst(capture_own_place, 5, capture_ticks);
    const double ns_per_tick = capture_timer_tsc ? capture_timer_calibration().ns_per_tick : 1.0;
    const uint64_t round_trip = (uint64_t)((double)ping.round_trip * ns_per_tick + 0.5);
    if (!correction_acceptable(round_trip, ping.middle)) {
        rejected_in_a_row++;
        return false;
    }
    rejected_in_a_row = 0;
    *at_ticks = ping.middle;
    *correction_ns = (int64_t)((double)ping.place_ns - capture_timer_local_ns(ping.middle));
    *round_trip_ns = round_trip;
    accepted[0] = accepted[1];
    accepted[1].ticks = ping.middle;
    accepted[1].correction_ns = (double)*correction_ns;
    accepted_count += accepted_count < 2;
    return true;
}

/* The ranks of one node read one TSC: calibrated separately, their rates would differ by the measurement's
 * error (about 0.5 ppm over 20 ms, microseconds of drift within seconds) and their messages invert. So
 * the node's first rank measures and the others install the same calibration. On a communicator of the
 * node's application ranks split off the application's world (a collective the application cannot
 * observe: it is done before MPI_Init returns and matches no point-to-point message), freed at once.
 * A rank whose timer differs from the first one's (OTFX_TIMER set differently) measures its own. */
void capture_calibrate_per_node(int world_rank)
{
    MPI_Comm node;
    int node_rank = 0;
    if (PMPI_Comm_split_type(capture_app_world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS) {
        const struct capture_clock_calibration own = capture_timer_measure(20 * 1000 * 1000);
        capture_timer_install(&own, world_rank);
        return;
    }
    PMPI_Comm_rank(node, &node_rank);
    struct capture_clock_calibration measured = {.ns_per_tick = 1.0};
    if (node_rank == 0)
        measured = capture_timer_measure(20 * 1000 * 1000); /* 20 ms against CLOCK_MONOTONIC */
    uint64_t shared[4] = {capture_timer_tsc, 0, measured.ref_ticks, measured.ref_ns};
    memcpy(&shared[1], &measured.ns_per_tick, sizeof(double));
    PMPI_Bcast(shared, 4, MPI_UINT64_T, 0, node);
    PMPI_Comm_free(&node);
    if (node_rank != 0) {
        if (shared[0] == (uint64_t)capture_timer_tsc) {
            memcpy(&measured.ns_per_tick, &shared[1], sizeof(double));
            measured.ref_ticks = shared[2];
            measured.ref_ns = shared[3];
        } else {
            measured = capture_timer_measure(20 * 1000 * 1000);
        }
    }
    capture_timer_install(&measured, world_rank);
}

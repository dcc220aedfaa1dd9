/*
 * rank_control.c — steering the application ranks an event place serves (rank_control.h): commands go
 * to every served rank that has not said goodbye as one struct capture_control each (PMPI_Isend on the
 * tool communicator, CAPTURE_CONTROL_TAG), their answers update the rank's state.
 *
 * The rank side (capture/src/control.c) carries commands out in the order they arrive and answers
 * each once done, so the highest sequence a rank answered says which commands it has carried out
 * (APP_PAUSE: once blocked). A rank blocked inside a long MPI call or computation answers when it
 * reaches its next check point; one that says goodbye first counts as having answered everything.
 */
#include "event_place_internal.h"
#include "place_loop.h"

#include <otfx/protocol.h>
#include <otfx/settings.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A client's enable/disable classes go to the ranks unchanged: the two bit sets must be one. */
_Static_assert((unsigned)OTFX_STEER_P2P == (unsigned)CAPTURE_CLASS_P2P &&
                   (unsigned)OTFX_STEER_COLLECTIVE == (unsigned)CAPTURE_CLASS_COLLECTIVE &&
                   (unsigned)OTFX_STEER_OTHER_MPI == (unsigned)CAPTURE_CLASS_OTHER_MPI &&
                   (unsigned)OTFX_STEER_USER == (unsigned)CAPTURE_CLASS_USER &&
                   (unsigned)OTFX_STEER_ALL == (unsigned)CAPTURE_CLASS_ALL,
               "the protocol's steering classes and the capture wire's event classes differ");

void place_control_init(struct event_place *place)
{
    /* The ranks read the same environment: OTFX_RECORD=0 starts them with recording off,
     * OTFX_START_PAUSED=1 blocks them at the end of MPI_Init until APP_RESUME. */
    const bool recording = otfx_setting_bool(OTFX_SETTING_RECORD);
    const bool paused = otfx_setting_bool(OTFX_SETTING_START_PAUSED);
    const uint64_t now = place_now_ns();
    for (int r = 0; r < place->setup.served_count; r++) {
        struct rank_control_state *control = &place->ranks[r].control;
        memset(control, 0, sizeof(*control));
        control->recording = recording;
        control->paused = paused;
        control->paused_since_ns = paused ? now : 0;
        control->not_recording_since_ns = recording ? 0 : now;
        control->classes = CAPTURE_CLASS_ALL;
        control->send = MPI_REQUEST_NULL;
    }
}

uint64_t place_control_send(struct event_place *place, enum capture_control_command command,
                            uint64_t argument)
{
    bool any = false;
    const uint64_t sequence = ++place->control_sequence;
    for (int r = 0; r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        struct rank_control_state *control = &rank->control;
        if (rank->said_goodbye)
            continue;
        if (control->send != MPI_REQUEST_NULL) {
            /* The previous message's buffer: 32 bytes go eagerly, so its send completed locally long ago
             * (this returns at once). */
            PMPI_Wait(&control->send, MPI_STATUS_IGNORE);
        }
        control->message = (struct capture_control){
            .magic = CAPTURE_BATCH_MAGIC,
            .version = CAPTURE_BATCH_VERSION,
            .command = (uint16_t)command,
            .sequence = sequence,
            .argument = argument,
        };
        if (PMPI_Isend(&control->message, (int)sizeof(control->message), MPI_BYTE, rank->rank,
                       CAPTURE_CONTROL_TAG, place->setup.tool_comm, &control->send) != MPI_SUCCESS) {
            fprintf(stderr, "otfx-place %d: cannot send a control message to rank %d\n",
                    place->setup.place_rank, rank->rank);
            control->send = MPI_REQUEST_NULL;
            control->answered = sequence; /* nothing to wait for */
            continue;
        }
        any = true;
    }
    return any ? sequence : 0;
}

void place_control_answer(struct event_place *place, int source, const void *bytes, size_t length)
{
    struct capture_control answer;
    struct capture_metrics_answer metrics;
    const int first = place->setup.first_served;
    const char *problem = NULL;
    if (length != sizeof(answer) && length != sizeof(metrics)) {
        problem = "wrong size";
    } else {
        memcpy(&answer, bytes, sizeof(answer));
        const bool about_metrics =
            answer.command == CAPTURE_CONTROL_SET_METRICS || answer.command == CAPTURE_CONTROL_PROBE_METRICS;
        if (about_metrics != (length == sizeof(metrics)))
            problem = "wrong size for its command";
        else if (answer.magic != CAPTURE_BATCH_MAGIC || answer.version != CAPTURE_BATCH_VERSION)
            problem = "wrong magic number or version";
        else if (source < first || source >= first + place->setup.served_count)
            problem = "not from a rank this place serves";
        else if (answer.sequence > place->control_sequence)
            problem = "answers no command sent";
    }
    if (problem) {
        fprintf(stderr,
                "otfx-place %d: malformed control answer of %zu bytes from world rank %d ignored: %s\n",
                place->setup.place_rank, length, source, problem);
        return;
    }
    /* Sequence 0: not an answer but news (a RECORD_UNTIL window ended): only the state changes. */
    struct rank_control_state *control = &place->ranks[source - first].control;
    if (answer.sequence > control->answered)
        control->answered = answer.sequence;
    const bool was_recording = control->recording, was_paused = control->paused;
    control->recording = (answer.state & CAPTURE_STATE_RECORDING) != 0;
    control->paused = (answer.state & CAPTURE_STATE_PAUSED) != 0;
    if (control->paused != was_paused)
        control->paused_since_ns = control->paused ? place_now_ns() : 0;
    if (control->recording != was_recording)
        control->not_recording_since_ns = control->recording ? 0 : place_now_ns();
    control->classes = answer.classes;
    if (length == sizeof(metrics)) {
        memcpy(&metrics, bytes, sizeof(metrics));
        control->metrics_answered = true;
        control->has_pmu = metrics.has_pmu != 0;
        control->metrics_selected = metrics.selected;
        control->metrics_counted = metrics.counted;
        control->metrics_refused = metrics.refused;
        memcpy(control->refusal_errno, metrics.refusal_errno, sizeof(control->refusal_errno));
    }
}

bool place_control_done(const struct event_place *place, uint64_t sequence)
{
    for (int r = 0; r < place->setup.served_count; r++) {
        const struct served_rank *rank = &place->ranks[r];
        if (!rank->said_goodbye && rank->control.answered < sequence)
            return false;
    }
    return true;
}

void place_control_finish(struct event_place *place)
{
    for (int r = 0; r < place->setup.served_count; r++) {
        struct rank_control_state *control = &place->ranks[r].control;
        if (control->send == MPI_REQUEST_NULL)
            continue;
        int done = 0;
        PMPI_Test(&control->send, &done, MPI_STATUS_IGNORE);
        if (!done) {
            PMPI_Cancel(&control->send);
            PMPI_Wait(&control->send, MPI_STATUS_IGNORE);
        }
        control->send = MPI_REQUEST_NULL;
    }
}

/*
 * rank_deaths.c — application ranks that end without MPI_Finalize, as the event place learns of them
 * (their DIED record, or their process vanishing on this node), and how they are described in the
 * place's report and the job's exit status (see event_place_internal.h).
 */
/* strsignal is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#include "event_place_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *signal_name(int signal)
{
    static const struct {
        int number;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
                 {SIGABRT, "SIGABRT"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGKILL, "SIGKILL"},
                 {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].number == signal)
            return names[i].name;
    return NULL;
}

void place_describe_death(const struct event_place *place, const struct served_rank *rank, char *text,
                          size_t size)
{
    const struct rank_death *death = &rank->death;
    if (death->vanished) {
        snprintf(text, size, "died without a word (its process is gone: killed, e.g. by SIGKILL)");
        return;
    }
    char where[600] = "";
    otfx_region_def region;
    if (death->where != OTFX_REF_NONE && otfx_defs_get_region(place->defs, death->where, &region) == OTFX_OK)
        snprintf(where, sizeof(where), " in %s", region.name);
    switch (death->cause) {
    case CAPTURE_DEATH_SIGNAL: {
        const char *name = signal_name(death->value);
        char number[32];
        snprintf(number, sizeof(number), "signal %d", (int)death->value);
        const bool fault = death->value == SIGSEGV || death->value == SIGBUS || death->value == SIGFPE ||
                           death->value == SIGILL;
        char address[48] = "";
        if (fault)
            snprintf(address, sizeof(address), " at address 0x%llx", (unsigned long long)death->address);
        snprintf(text, size, "died of %s (%s)%s%s", name ? name : number, strsignal(death->value), address,
                 where);
        return;
    }
    case CAPTURE_DEATH_ABORT:
        snprintf(text, size, "called MPI_Abort with error code %d", (int)death->value);
        return;
    case CAPTURE_DEATH_EXIT:
        snprintf(text, size, "called exit(%d) without MPI_Finalize", (int)death->value);
        return;
    default:
        snprintf(text, size, "ended without MPI_Finalize");
    }
}

int place_death_exit_code(const struct served_rank *rank)
{
    const struct rank_death *death = &rank->death;
    if (death->vanished)
        return SIGKILL; /* what mpiexec reports for a process killed so */
    const int code = death->value & 0xff;
    return code ? code : 1; /* never "success" for a job that failed */
}

/* Whether process `pid` runs (a zombie has ended: its parent, hydra's proxy, just did not reap it yet). */
static bool process_runs(int pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file)
        return false;
    const size_t length = fread(stat, 1, sizeof(stat) - 1, file);
    fclose(file);
    stat[length] = '\0';
    const char *close = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold anything */
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X' && close[2] != 'x';
}

/* The trace of a rank found gone ends with the phase that says so, when it was found gone. */
static void mark_vanished(struct event_place *place, struct served_rank *rank, uint64_t now_ns)
{
    struct place_stream *stream =
        rank->stream_capacity && rank->streams[0] ? rank->streams[0] : place_stream_of(place, rank, 0);
    if (!stream)
        return;
    char text[600], name[700];
    place_describe_death(place, rank, text, sizeof(text));
    snprintf(name, sizeof(name), "otfx: rank %d %s", rank->rank, text);
    otfx_event event;
    memset(&event, 0, sizeof(event));
    event.type = OTFX_EV_PHASE;
    event.time = now_ns;
    event.u.phase.value = SIGKILL;
    otfx_trace_status status;
    if (otfx_trace_status_get(stream->trace, &status) == OTFX_OK && status.first_time <= status.last_time &&
        status.last_time > event.time)
        event.time = status.last_time;
    size_t appended = 0;
    if (otfx_defs_region(place->defs, name, OTFX_ROLE_PHASE, &event.u.phase.region) != OTFX_OK ||
        otfx_trace_append(stream->trace, &event, 1, &appended) != OTFX_OK)
        fprintf(stderr, "otfx-place %d: rank %d: cannot mark its end in its trace: %s\n",
                place->setup.place_rank, rank->rank, otfx_last_error());
}

bool place_watch_ranks(struct event_place *place, uint64_t now_ns)
{
    enum { GRACE_NS = 1000 * 1000 * 1000 };
    bool any = false;
    for (int r = 0; r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        if (rank->said_goodbye || !rank->on_node)
            continue;
        if (process_runs(rank->pid)) {
            rank->gone_since_ns = 0;
            continue;
        }
        /* Gone: its last batches may still be on their way (a rank sends its goodbye and exits) */
        if (!rank->gone_since_ns) {
            rank->gone_since_ns = now_ns;
            continue;
        }
        if (now_ns - rank->gone_since_ns < GRACE_NS)
            continue;
        rank->death = (struct rank_death){.died = true, .vanished = true, .where = OTFX_REF_NONE};
        rank->said_goodbye = true;
        place->goodbyes++;
        mark_vanished(place, rank, now_ns);
        any = true;
    }
    return any;
}

/*
 * snapshot.h — one OTF2 archive written together by all event places (private to places/).
 *
 * A snapshot is collective over `event_comm` (every event place, in place order; the first writes the
 * anchor and the global definitions). It runs otfx_otf2_export_shared: each place writes its own
 * locations' events, the places exchange their definitions and each writes mapping tables to the
 * union (see otfx/trace.h). Every place must take part, also one that serves no selected rank.
 *
 * Threads: place_snapshot_select reads the place's rank table, which the MPI thread changes when a new
 * thread of a rank sends its first batch: call it on the MPI thread. place_snapshot_write_traces may
 * run on another thread (the snapshot thread) while the MPI thread keeps appending to the traces: otfx
 * traces are safe for one appender and many readers, otfx_defs has its own mutex. The export copies
 * each trace under its read lock and exports the copy (docs/otfx-format.md, "Exporting a live trace"):
 * an append to that trace waits for the copy only — the copy shares the trace's sealed chunks, measured
 * 0.03-8.5 ms for a full 64 MiB trace on this machine — and events appended after a trace's copy are not
 * in the archive. The places exchange the message ends their traces hold, so the archive holds only
 * messages whose both ends some place holds (docs/otfx-format.md, "Messages").
 */
#ifndef OTFX_PLACES_SNAPSHOT_H
#define OTFX_PLACES_SNAPSHOT_H

#include <otfx/trace.h>

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_place;
struct otfx_command; /* otfx/protocol.h */

typedef struct place_snapshot_result {
    bool ok;
    char archive[4096];      /* the anchor file's absolute path (.otf2), also when refused after resolving */
    uint64_t events_written; /* OTF2 event records written by this place */
    uint32_t locations;      /* written by this place */
    /* Point-to-point messages of this place's traces left out because the other end of the message is
     * in no place's traces (reduced away, outside the window, a rank not selected): otfx_export_stats */
    uint64_t messages_unpaired;
    /* Collective instances of this place's traces left out because a member of the communicator does not
     * hold them (otfx_export_stats.collectives_incomplete) */
    uint64_t collectives_incomplete;
    /* The archive's clock correction, every place's (otfx_export_stats): events moved, the largest move
     * in ns, messages still moving when the export's rounds ran out */
    uint64_t clock_corrected_events, clock_max_correction_ns, clock_unresolved_messages;
    char error[512]; /* when !ok: why (the same on every place when the path was refused) */
} place_snapshot_result;

/* Resolves a snapshot path under `directory` (NULL or "": the working directory, which must exist):
 * a relative path is taken from the directory, an absolute one must lie inside it; no component may
 * be "..", and the real path of the archive's parent (symbolic links resolved; missing directories
 * are created inside `directory`) must lie inside the directory's real path. The archive's name is the
 * last component without a trailing ".otf2". On success writes the parent's real path and the name;
 * otherwise writes why into `error` and returns false. Not collective. */
bool place_snapshot_resolve(const char *directory, const char *path, char *archive_dir, size_t dir_size,
                            char *name, size_t name_size, char *error, size_t error_size);

/* This place's traces of the ranks in command->ranks (every thread). *traces is malloc'ed (NULL when
 * there are none), free() it. Returns false when out of memory. Call on the MPI thread. */
bool place_snapshot_select(struct event_place *place, const struct otfx_command *command,
                           otfx_trace ***traces, size_t *count);

/* The collective write itself: `path` is resolved on the first place (place_snapshot_resolve) and the
 * result broadcast, so every place agrees on where the archive goes and on a refusal; an existing
 * archive is refused (by the first place, for everyone) unless `overwrite`; the window is [from, to)
 * (0 and UINT64_MAX: everything held). `traces` all use `defs`. */
void place_snapshot_write_traces(MPI_Comm event_comm, otfx_defs *defs, otfx_trace *const *traces,
                                 size_t trace_count, const char *directory, const char *path, uint64_t from,
                                 uint64_t to, bool overwrite, place_snapshot_result *result);
/* place_snapshot_write_traces naming the archive's creator (what otf2-print shows of it): the
 * compensated copies of a snapshot --compensated say so there. */
void place_snapshot_write_traces_as(MPI_Comm event_comm, otfx_defs *defs, otfx_trace *const *traces,
                                    size_t trace_count, const char *directory, const char *path,
                                    uint64_t from, uint64_t to, bool overwrite, const char *creator,
                                    place_snapshot_result *result);

/* The two hooks of otfx_otf2_collective (otfx/trace.h) place_snapshot_write_traces uses, `user` pointing
 * to the MPI_Comm of the processes: OTF2's MPI collectives, which the archive owns from the call on
 * whatever the result (OTF2_Archive_Close releases them), and an allgather. (The tests wrap them.) */
int place_snapshot_install_collectives(void *archive, void *user);
int place_snapshot_allgather(const void *data, size_t size, void **all, size_t *sizes, void *user);

/* place_snapshot_select + place_snapshot_write_traces with command->path, from, to, overwrite. For
 * when the snapshot runs on the MPI thread itself (ingestion paused meanwhile). */
void place_snapshot_write(struct event_place *place, MPI_Comm event_comm, const struct otfx_command *command,
                          const char *directory, place_snapshot_result *result);

#endif

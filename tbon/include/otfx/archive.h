/*
 * otfx/archive.h — an OTF2 archive opened after the run and served like a job (library otfx_archive; no
 * MPI). For post-mortem work with the same clients and the same analyses as a live job: otfx-gui's "Open
 * archive" and `otfxctl --archive`.
 *
 * Opening reads the archive (one of otfx's snapshots or one written by Score-P or any OTF2 writer) into
 * an in-process otfx store (otfx_otf2_import): one trace per location, all in one place that serves every
 * rank. The built-in analysis modules (otfx/analysis.h) answer its queries exactly as an event place and
 * the root would: leaf over every trace, merge, finish, one place of one answering. The replay modules
 * (critical-path, wait-states, profile --compensated) replay on that one place without an exchange:
 * every rank is local, so nothing is missing for want of another place.
 *
 * Serving runs the root's real server (otfx/server.h: session file, token, frames, limits) on a private
 * session directory, with the archive's answers instead of a tree's; a client connects with the session
 * file and cannot tell it from a job, except by what the answers say: the ranks are finished, nothing is
 * recording, and the commands that steer a running job (record, app, reset, reduction, enable, disable)
 * are refused with a clear error, and so are `snapshot` (the archive is on disk already) and
 * `load-module` (loaded modules run only in a job's helper processes).
 */
#ifndef OTFX_ARCHIVE_H
#define OTFX_ARCHIVE_H

#include <otfx/protocol.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct otfx_archive otfx_archive;

typedef struct otfx_archive_options {
    /* The buffer of each location's trace (0: 1 GiB, which holds archives of hundreds of millions of
     * events; a location with more is reduced by the ring strategy, and `status` says so). */
    size_t budget_per_location;
    /* The bound of one query's partial result (0: 64 MiB, as a place's default). */
    size_t query_memory;
} otfx_archive_options;

/* What the archive held. */
typedef struct otfx_archive_info {
    uint32_t ranks;                 /* application ranks: the highest rank of a location + 1 */
    uint32_t locations;             /* traces (a rank's threads are locations of their own) */
    uint64_t events;                /* events imported */
    uint64_t records_ignored;       /* OTF2 records otfx has no event for (OpenMP, RMA, I/O, …) */
    uint64_t first_time, last_time; /* the earliest and latest event held (ns; 0 when empty) */
    char name[256];                 /* the anchor file's name without ".otf2" */
} otfx_archive_info;

/* Reads the archive at `anchor_path` (its .otf2 anchor file). NULL with why in `error` (a missing
 * file, not an OTF2 archive, an archive without locations, out of memory). */
otfx_archive *otfx_archive_open(const char *anchor_path, const otfx_archive_options *options, char *error,
                                size_t error_size);
void otfx_archive_close(otfx_archive *archive);
const otfx_archive_info *otfx_archive_info_of(const otfx_archive *archive);

/* Answers one command as a job's root would: returns OTFX_FRAME_REPLY with the reply's record lines in
 * `out`, or OTFX_FRAME_ERROR with its line (`error code=… message=…`). Several threads may answer at
 * once. */
otfx_frame_kind otfx_archive_answer(otfx_archive *archive, const otfx_command *command, otfx_text *out);

/* ---- serving ----------------------------------------------------------------------------------------- */

typedef struct otfx_archive_server otfx_archive_server;

/* Serves the archive with the root's server on 127.0.0.1 (any free port), its session file in a new
 * private directory (mode 0700, removed at stop), answering on `workers` threads (0: 2) so that a long
 * replay does not hold the status and timeline back. The archive must outlive the server. NULL with why
 * in `error`. */
otfx_archive_server *otfx_archive_serve(otfx_archive *archive, uint32_t workers, char *error,
                                        size_t error_size);
/* The session file a client connects with (docs/protocol.md, section 1). */
const char *otfx_archive_server_session_path(const otfx_archive_server *server);
/* Answers the requests in flight with job-ended, stops the server and its threads, removes the session
 * file and its directory (NULL: nothing). */
void otfx_archive_server_stop(otfx_archive_server *server);

#ifdef __cplusplus
}
#endif
#endif

/*
 * snapshot.c — the event places write one OTF2 archive together (see snapshot.h).
 *
 * The first event place resolves the path and broadcasts where the archive goes (or why not); then
 * every place runs otfx_otf2_export_shared with OTF2's MPI collectives over event_comm and an
 * allgather over the same communicator for what otfx's processes exchange. MPI through PMPI_* only
 * (the capture library wraps MPI_* on place ranks too).
 */
/* realpath is XSI; lstat, mkdir are POSIX, not C11. */
#define _XOPEN_SOURCE 700
#include "snapshot.h"

#include "event_place_internal.h"

#include <otfx/protocol.h>
#include <otfx/support/growth.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* OTF2's collective callbacks over MPI come as a header of static functions; with PMPI. The header
 * defines callbacks and helpers it does not use itself. */
#define OTF2_MPI_USE_PMPI
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <otf2/OTF2_MPI_Collectives.h>
#include <otf2/otf2.h>
#pragma GCC diagnostic pop

#define ARCHIVE_SUFFIX ".otf2"

static void say(char *out, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

static void say(char *out, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(out, size, format, args);
    va_end(args);
}

/* Whether `path` (a real path) is `base` (a real path) or lies below it. */
static bool inside(const char *path, const char *base)
{
    size_t length = strlen(base);
    if (strcmp(base, "/") == 0)
        return path[0] == '/';
    return strncmp(path, base, length) == 0 && (path[length] == '\0' || path[length] == '/');
}

/* The part of an absolute `path` below `base` (NULL when it is not below it, "" when it is base). */
static const char *below(const char *path, const char *base)
{
    size_t length = strlen(base);
    while (length > 1 && base[length - 1] == '/')
        length--;
    if (strncmp(path, base, length) != 0 || (path[length] != '/' && path[length] != '\0'))
        return NULL;
    return path + length;
}

static bool is_symlink(const char *path)
{
    struct stat info;
    return lstat(path, &info) == 0 && S_ISLNK(info.st_mode);
}

bool place_snapshot_resolve(const char *directory, const char *path, char *archive_dir, size_t dir_size,
                            char *name, size_t name_size, char *error, size_t error_size)
{
    const char *given = directory && *directory ? directory : ".";
    char base[PATH_MAX];
    struct stat info;
    if (!realpath(given, base) || stat(base, &info) != 0 || !S_ISDIR(info.st_mode)) {
        say(error, error_size, "snapshot directory %s: %s", given,
            errno ? strerror(errno) : "not a directory");
        return false;
    }
    if (!path || !*path) {
        say(error, error_size, "snapshot needs a path");
        return false;
    }
    const char *rest = path;
    if (path[0] == '/') {
        rest = below(path, base);
        if (!rest && given[0] == '/')
            rest = below(path, given);
        if (!rest) {
            say(error, error_size, "snapshot path %s is outside the snapshot directory %s", path, base);
            return false;
        }
    }
    /* Components: empty and "." ones dropped, ".." refused; the last one is the archive. */
    char *copy = strdup(rest);
    if (!copy) {
        say(error, error_size, "out of memory");
        return false;
    }
    char current[PATH_MAX];
    say(current, sizeof current, "%s", base);
    const char *last = NULL;
    bool ok = true;
    char *save = NULL;
    for (char *part = strtok_r(copy, "/", &save); part && ok; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") == 0) {
            say(error, error_size, "snapshot path %s may not contain '..'", path);
            ok = false;
            break;
        }
        if (last) {
            /* `last` is a directory on the way: create it inside the snapshot directory. */
            char next[PATH_MAX];
            if (strlen(current) + strlen(last) + 2 > sizeof next) {
                say(error, error_size, "snapshot path %s is too long", path);
                ok = false;
                break;
            }
            say(next, sizeof next, "%s/%s", current, last);
            char real[PATH_MAX];
            if (mkdir(next, 0777) != 0 && errno != EEXIST) {
                say(error, error_size, "cannot create %s: %s", next, strerror(errno));
                ok = false;
            } else if (!realpath(next, real) || stat(real, &info) != 0 || !S_ISDIR(info.st_mode)) {
                say(error, error_size, "%s is not a directory", next);
                ok = false;
            } else if (!inside(real, base)) {
                say(error, error_size, "snapshot path %s leaves the snapshot directory %s (through %s)", path,
                    base, next);
                ok = false;
            } else {
                say(current, sizeof current, "%s", real);
            }
        }
        last = part;
    }
    if (ok && !last) {
        say(error, error_size, "snapshot path %s names no archive", path);
        ok = false;
    }
    if (ok) {
        size_t length = strlen(last), suffix = strlen(ARCHIVE_SUFFIX);
        if (length > suffix && strcmp(last + length - suffix, ARCHIVE_SUFFIX) == 0)
            length -= suffix;
        if (length + 1 > name_size || strlen(current) + 1 > dir_size) {
            say(error, error_size, "snapshot path %s is too long", path);
            ok = false;
        } else {
            say(name, name_size, "%.*s", (int)length, last);
            say(archive_dir, dir_size, "%s", current);
        }
    }
    /* An archive that is a symbolic link (its directory, anchor or definitions) could make an
     * overwrite delete files elsewhere. */
    static const char *const parts[] = {"", ARCHIVE_SUFFIX, ".def"};
    for (size_t p = 0; ok && p < sizeof parts / sizeof *parts; p++) {
        char file[PATH_MAX + 64];
        snprintf(file, sizeof file, "%s/%s%s", archive_dir, name, parts[p]);
        if (is_symlink(file)) {
            say(error, error_size, "snapshot path %s: %s is a symbolic link", path, file);
            ok = false;
        }
    }
    free(copy);
    return ok;
}

/* ---- the place's traces ---- */

static bool rank_selected(const otfx_rank_set *set, uint32_t rank)
{
    if (set->count == 0)
        return true;
    for (uint32_t r = 0; r < set->count && r < sizeof set->ranges / sizeof *set->ranges; r++)
        if (set->ranges[r].first <= rank && rank <= set->ranges[r].last)
            return true;
    return false;
}

bool place_snapshot_select(struct event_place *place, const otfx_command *command, otfx_trace ***traces,
                           size_t *count)
{
    *traces = NULL;
    *count = 0;
    size_t capacity = 0;
    for (int r = 0; place->ranks && r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        if (!rank_selected(&command->ranks, (uint32_t)rank->rank))
            continue;
        for (uint32_t t = 0; t < rank->stream_capacity; t++) {
            if (!rank->streams[t] || !rank->streams[t]->trace)
                continue;
            if (!otfx_reserve((void **)traces, &capacity, *count + 1, sizeof **traces, 16)) {
                free(*traces);
                *traces = NULL;
                *count = 0;
                return false;
            }
            (*traces)[(*count)++] = rank->streams[t]->trace;
        }
    }
    return true;
}

/* ---- the collective write ---- */

typedef struct resolved_path {
    int ok;
    char directory[PATH_MAX];
    char name[256];
    char error[512];
} resolved_path;

/* otfx's exchanges: sizes first, then the bytes (every place takes the same path: a total MPI cannot
 * count fails everywhere). */
int place_snapshot_allgather(const void *data, size_t size, void **all, size_t *sizes, void *user)
{
    MPI_Comm comm = *(MPI_Comm *)user;
    int count = 0;
    PMPI_Comm_size(comm, &count);
    uint64_t mine = size;
    uint64_t *every = malloc((size_t)count * sizeof *every);
    int *counts = malloc((size_t)count * sizeof *counts), *offsets = malloc((size_t)count * sizeof *offsets);
    if (!every || !counts || !offsets) {
        free(every);
        free(counts);
        free(offsets);
        return -1;
    }
    int result = PMPI_Allgather(&mine, 1, MPI_UINT64_T, every, 1, MPI_UINT64_T, comm) == MPI_SUCCESS ? 0 : -1;
    uint64_t total = 0;
    for (int p = 0; p < count && result == 0; p++) {
        if (every[p] > INT_MAX || total + every[p] > INT_MAX)
            result = -1;
        else {
            counts[p] = (int)every[p];
            offsets[p] = (int)total;
            sizes[p] = (size_t)every[p];
            total += every[p];
        }
    }
    if (result == 0) {
        *all = malloc(total ? total : 1);
        if (!*all)
            result = -1;
        else if (PMPI_Allgatherv(data, (int)size, MPI_BYTE, *all, counts, offsets, MPI_BYTE, comm) !=
                 MPI_SUCCESS)
            result = -1;
    }
    free(every);
    free(counts);
    free(offsets);
    return result;
}

/* OTF2's MPI collectives, installed as OTF2_MPI_Archive_SetCollectiveCallbacks does but for its error
 * path. OTF2_Archive_SetCollectiveCallbacks keeps the callbacks in the archive first and then has the
 * master create the archive's directory; when that fails (a read-only or foreign directory) it returns
 * the error with the callbacks kept, and OTF2_MPI_Archive_SetCollectiveCallbacks (OTF2 3.0.2) frees them
 * then: OTF2_Archive_Close, which calls them, jumps into freed memory. Here the archive owns them as soon
 * as they are handed over, whatever the result, and OTF2_Archive_Close releases them
 * (otf2_mpi_collectives_release) on every path. Their arguments are complete and set once, the only
 * failures OTF2 reports before keeping them. */
int place_snapshot_install_collectives(void *archive, void *user)
{
    MPI_Comm comm = *(MPI_Comm *)user;
    OTF2_MPI_UserData *data = calloc(1, sizeof *data);
    if (!data)
        return -1;
    otf2_mpi_get_collectives(&data->callbacks);
    data->global = otf2_mpi_create_context(comm, true);
    if (!data->global) {
        free(data);
        return -1;
    }
    return OTF2_Archive_SetCollectiveCallbacks((OTF2_Archive *)archive, &data->callbacks, data, data->global,
                                               NULL) == OTF2_SUCCESS
               ? 0
               : -1;
}

void place_snapshot_write_traces(MPI_Comm event_comm, otfx_defs *defs, otfx_trace *const *traces,
                                 size_t trace_count, const char *directory, const char *path, uint64_t from,
                                 uint64_t to, bool overwrite, place_snapshot_result *result)
{
    place_snapshot_write_traces_as(event_comm, defs, traces, trace_count, directory, path, from, to,
                                   overwrite, "otfx snapshot", result);
}

void place_snapshot_write_traces_as(MPI_Comm event_comm, otfx_defs *defs, otfx_trace *const *traces,
                                    size_t trace_count, const char *directory, const char *path,
                                    uint64_t from, uint64_t to, bool overwrite, const char *creator,
                                    place_snapshot_result *result)
{
    memset(result, 0, sizeof *result);
    int rank = 0, size = 1;
    PMPI_Comm_rank(event_comm, &rank);
    PMPI_Comm_size(event_comm, &size);

    /* Where the archive goes: decided once, by the first place. */
    resolved_path where_storage = {0}, *where = &where_storage;
    if (rank == 0)
        where->ok =
            place_snapshot_resolve(directory, path, where->directory, sizeof where->directory, where->name,
                                   sizeof where->name, where->error, sizeof where->error);
    PMPI_Bcast(where, (int)sizeof *where, MPI_BYTE, 0, event_comm);
    if (!where->ok) {
        say(result->error, sizeof result->error, "%s", where->error);
        return;
    }
    say(result->archive, sizeof result->archive, "%s/%s%s", where->directory, where->name, ARCHIVE_SUFFIX);

    otfx_export_options options = otfx_export_options_default();
    options.from = from;
    options.to = to;
    options.overwrite = overwrite;
    options.creator = creator;
    MPI_Comm comm = event_comm;
    otfx_otf2_collective collective = {.size = (uint32_t)size,
                                       .rank = (uint32_t)rank,
                                       .archive_opened = place_snapshot_install_collectives,
                                       .allgather = place_snapshot_allgather,
                                       .user = &comm};
    otfx_export_stats stats;
    otfx_status status = otfx_otf2_export_shared(where->directory, where->name, defs, traces, trace_count,
                                                 &options, &collective, &stats);
    if (status == OTFX_OK) {
        result->ok = true;
        result->events_written = stats.events;
        result->locations = stats.locations;
        result->messages_unpaired = stats.messages_unpaired;
        result->collectives_incomplete = stats.collectives_incomplete;
        result->clock_corrected_events = stats.clock_corrected_events;
        result->clock_max_correction_ns = stats.clock_max_correction_ns;
        result->clock_unresolved_messages = stats.clock_unresolved_messages;
    } else {
        say(result->error, sizeof result->error, "%s", otfx_last_error());
    }
}

void place_snapshot_write(struct event_place *place, MPI_Comm event_comm, const otfx_command *command,
                          const char *directory, place_snapshot_result *result)
{
    otfx_trace **traces = NULL;
    size_t count = 0;
    if (!place_snapshot_select(place, command, &traces, &count)) {
        /* Take part with no traces, so the others are not left waiting; the result says why. */
        place_snapshot_write_traces(event_comm, place->defs, NULL, 0, directory, command->path, command->from,
                                    command->to, command->overwrite, result);
        result->ok = false;
        say(result->error, sizeof result->error, "out of memory selecting the traces");
        return;
    }
    place_snapshot_write_traces(event_comm, place->defs, traces, count, directory, command->path,
                                command->from, command->to, command->overwrite, result);
    free(traces);
}

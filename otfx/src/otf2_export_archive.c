/* otf2_export_archive.c — the archive's files and directory for the OTF2 export: refusing or
 * removing an existing archive, creating the directory, removing a partial archive after a failure;
 * the memory of the archive's buffers. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_export_internal.h"
#include <otfx/support/growth.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *join(const char *directory, const char *name, const char *suffix)
{
    size_t size = strlen(directory) + strlen(name) + strlen(suffix) + 2;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%s/%s%s", directory, name, suffix);
    return path;
}

otfx_status export_archive_paths_make(archive_paths *paths, const char *directory, const char *name)
{
    *paths = (archive_paths){join(directory, name, ""), join(directory, name, ".otf2"),
                             join(directory, name, ".def"), join(directory, name, ".marker")};
    if (!paths->directory || !paths->anchor || !paths->global || !paths->marker)
        return out_of_memory();
    return OTFX_OK;
}

void export_archive_paths_free(archive_paths *paths)
{
    free(paths->directory);
    free(paths->anchor);
    free(paths->global);
    free(paths->marker);
}

static bool exists(const char *path)
{
    struct stat info;
    return lstat(path, &info) == 0;
}

static bool archive_exists(const archive_paths *paths)
{
    return exists(paths->anchor) || exists(paths->global) || exists(paths->directory);
}

static bool is_archive_file(const char *entry)
{
    static const char *const suffixes[] = {".evt", ".def", ".snap"};
    size_t length = strlen(entry);
    for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes; s++) {
        size_t suffix = strlen(suffixes[s]);
        if (length > suffix && strcmp(entry + length - suffix, suffixes[s]) == 0)
            return true;
    }
    return false;
}

/* Removes an existing archive. Only files an OTF2 archive consists of are removed: a directory that
 * holds anything else is not ours to delete, and the export is refused. */
static otfx_status remove_archive(const archive_paths *paths)
{
    DIR *dir = opendir(paths->directory);
    if (!dir && errno != ENOENT)
        return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot read %s: %s", paths->directory, strerror(errno));
    if (dir) {
        otfx_status status = OTFX_OK;
        struct dirent *entry;
        while (status == OTFX_OK && (entry = readdir(dir)) != NULL) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
                continue;
            char *path = join(paths->directory, entry->d_name, "");
            struct stat info;
            if (!path)
                status = out_of_memory();
            else if (lstat(path, &info) != 0 || !S_ISREG(info.st_mode) || !is_archive_file(entry->d_name))
                status = otfx_fail(OTFX_ERR_IO,
                                   "OTF2 export: will not overwrite %s: %s is not part of an OTF2 archive",
                                   paths->directory, entry->d_name);
            else if (unlink(path) != 0)
                status = otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s: %s", path, strerror(errno));
            free(path);
        }
        closedir(dir);
        if (status != OTFX_OK)
            return status;
        if (rmdir(paths->directory) != 0)
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s: %s", paths->directory,
                             strerror(errno));
    }
    const char *files[] = {paths->anchor, paths->global, paths->marker};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++)
        if (exists(files[f]) && unlink(files[f]) != 0 && errno != ENOENT) /* read-only: EROFS, not ENOENT */
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s: %s", files[f], strerror(errno));
    return OTFX_OK;
}

/* mkdir -p */
static otfx_status make_directory(const char *directory)
{
    char *path = strdup(directory);
    if (!path)
        return out_of_memory();
    otfx_status status = OTFX_OK;
    for (char *slash = path + 1;; slash++) {
        bool last = *slash == '\0';
        if (*slash != '/' && !last)
            continue;
        *slash = '\0';
        struct stat info;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            status = otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot create %s: %s", path, strerror(errno));
            break;
        }
        if (stat(path, &info) != 0 || !S_ISDIR(info.st_mode)) {
            status = otfx_fail(OTFX_ERR_IO, "OTF2 export: %s is not a directory", path);
            break;
        }
        if (last)
            break;
        *slash = '/';
    }
    free(path);
    return status;
}

/* OTF2 creates the archive's own directory on the master while the collective callbacks are installed,
 * and says only that it could not. Creating it once first gives the system's reason for a directory
 * that cannot be written (read-only, no permission) before any process has started. */
static otfx_status probe_archive_directory(const archive_paths *paths)
{
    if (mkdir(paths->directory, 0777) != 0)
        return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot create %s: %s", paths->directory, strerror(errno));
    if (rmdir(paths->directory) != 0)
        return otfx_fail(OTFX_ERR_IO, "OTF2 export: cannot remove %s again: %s", paths->directory,
                         strerror(errno));
    return OTFX_OK;
}

/* Exchange 1 on the master: the existing archive is refused or removed, the directory created. */
otfx_status export_prepare_directory(const archive_paths *paths, const char *directory, bool overwrite)
{
    if (archive_exists(paths) && !overwrite) {
        /* say what is there: an archive, or only a directory of the name its files would go into */
        if (exists(paths->anchor) || exists(paths->global))
            return otfx_fail(OTFX_ERR_IO, "OTF2 export: %s already exists (set overwrite to replace it)",
                             exists(paths->anchor) ? paths->anchor : paths->global);
        return otfx_fail(OTFX_ERR_IO,
                         "OTF2 export: the directory %s already exists, but there is no archive (no %s): "
                         "choose another name (or set overwrite if it holds only an old archive's files)",
                         paths->directory, paths->anchor);
    }
    if (archive_exists(paths))
        OTFX_TRY(remove_archive(paths));
    OTFX_TRY(make_directory(directory));
    return probe_archive_directory(paths);
}

/* After a failure: nothing half-written is left behind, and the failure's message is kept. */
void export_discard_partial_archive(const archive_paths *paths, otfx_status failure)
{
    char message[512], removal[512];
    snprintf(message, sizeof message, "%s", otfx_last_error());
    if (remove_archive(paths) == OTFX_OK) {
        otfx_fail(failure, "%s", message);
        return;
    }
    snprintf(removal, sizeof removal, "%s", otfx_last_error());
    otfx_fail(failure, "%s (and the partial archive could not be removed: %s)", message, removal);
}

/* ---- the buffers' chunks ----
 *
 * OTF2 gives every event writer (one per location, the placeholders' too) a fresh chunk of
 * EVENT_CHUNK_BYTES from malloc, fills it (its writes and the padding at the flush touch all of it) and
 * frees it when the writer closes. A chunk that size is returned to the system at once, so the next
 * writer's chunk faults every page in again: 64 writers of 4 MiB cost about a second of CPU time on a
 * virtual machine, more than the events of a trace of a million. The chunks given back wait in the pool
 * for the next buffer instead. A buffer takes at most OTF2_BUFFER_MEMORY_BYTES before OTF2 flushes it, as
 * with OTF2's own allocator, so the files are written the same and no more memory is held at once. */

enum { OTF2_BUFFER_MEMORY_BYTES = 128u << 20 }; /* OTF2's allocator's limit per buffer (otf2_buffer.c) */

typedef struct buffer_chunks { /* one buffer's chunks (OTF2's perBufferData) */
    void **chunks;
    size_t count, capacity;
} buffer_chunks;

static void *allocate_chunk(void *user, OTF2_FileType file_type, OTF2_LocationRef location, void **per_buffer,
                            uint64_t chunk_bytes)
{
    (void)location;
    export_chunk_pool *pool = user;
    buffer_chunks *buffer = *per_buffer;
    if (!buffer && !(buffer = *per_buffer = calloc(1, sizeof *buffer)))
        return NULL;
    if ((buffer->count + 1) * chunk_bytes > OTF2_BUFFER_MEMORY_BYTES ||
        !otfx_reserve((void **)&buffer->chunks, &buffer->capacity, buffer->count + 1, sizeof *buffer->chunks,
                      4))
        return NULL; /* OTF2 flushes the buffer, or fails cleanly */
    void *chunk = file_type == OTF2_FILETYPE_EVENTS && pool->free_count ? pool->free[--pool->free_count]
                                                                        : malloc(chunk_bytes);
    if (chunk)
        buffer->chunks[buffer->count++] = chunk;
    return chunk;
}

static void free_all_chunks(void *user, OTF2_FileType file_type, OTF2_LocationRef location, void **per_buffer,
                            bool final)
{
    (void)location;
    export_chunk_pool *pool = user;
    buffer_chunks *buffer = *per_buffer;
    if (!buffer)
        return;
    /* Only event chunks are pooled: they all have the archive's event chunk size. */
    for (size_t c = 0; c < buffer->count; c++) {
        void *chunk = buffer->chunks[c];
        if (file_type == OTF2_FILETYPE_EVENTS && otfx_reserve((void **)&pool->free, &pool->free_capacity,
                                                              pool->free_count + 1, sizeof *pool->free, 16))
            pool->free[pool->free_count++] = chunk;
        else
            free(chunk);
    }
    buffer->count = 0;
    if (final) {
        free(buffer->chunks);
        free(buffer);
        *per_buffer = NULL;
    }
}

otfx_status export_pool_chunks(exporter *x)
{
    static const OTF2_MemoryCallbacks callbacks = {allocate_chunk, free_all_chunks};
    OTF2_TRY(OTF2_Archive_SetMemoryCallbacks(x->archive, &callbacks, &x->chunks),
             "setting the memory callbacks");
    return OTFX_OK;
}

void export_chunk_pool_free(export_chunk_pool *pool)
{
    for (size_t c = 0; c < pool->free_count; c++)
        free(pool->free[c]);
    free(pool->free);
    *pool = (export_chunk_pool){0};
}

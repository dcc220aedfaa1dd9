/*
 * test_snapshot_faults_mpi.c — the event places' common snapshot (places/src/snapshot.c) into places that
 * cannot hold it, on 2 processes, run by tests/harness/with-scratch-mounts inside a mount namespace of its
 * own where SCRATCH/ro is a read-only tmpfs, SCRATCH/full a 3 MiB one and SCRATCH/tiny a 64 KiB one.
 *
 *   test_snapshot_faults_mpi SCRATCH
 *
 * Each process holds one trace of ~5 MB of OTF2 events (more than OTF2's 4 MiB file buffer, so that whole
 * chunks are written and fail as well as the buffered last part of a file). Every case fails on every
 * process with the system's reason, leaves nothing behind, and the process goes on:
 *   1. a read-only directory: "Read-only file system";
 *   2. a full disk, twice (OTF2 3.0.2 crashed on this, and the second time on its own freed memory):
 *      "No space left on device";
 *   3. a disk too small for anything but the first bytes: "No space left on device";
 *   4. definitions larger than OTF2's file buffer (40 000 regions a process) on a full disk;
 *   5. OTF2 itself failing to create the archive's directory (the path taken after the master's check:
 *      a dangling symbolic link put there in between), which made OTF2_Archive_Close jump into freed
 *      memory: an error, no crash;
 * and then a snapshot into a good directory succeeds and otf2-print reads it.
 * Prints "snapshot-faults: ..." lines that ctest matches; any failure aborts.
 */
#define _POSIX_C_SOURCE 200809L
#include "snapshot.h"

#include <mpi.h>

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EVENT_PAIRS = 200000 };

static int me, processes;

static void check(bool condition, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void check(bool condition, const char *format, ...)
{
    if (condition)
        return;
    va_list args;
    va_start(args, format);
    fprintf(stderr, "snapshot-faults: process %d: FAILED: ", me);
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define OK(call) check((call) == OTFX_OK, "%s: %s", #call, otfx_last_error())

/* One trace of this process's rank: EVENT_PAIRS Enter/Leave pairs of two regions, a send in each. */
static otfx_trace *build(otfx_defs *defs)
{
    otfx_ref location, work, send, world;
    OK(otfx_defs_location(defs, (uint32_t)me, 0, &location));
    OK(otfx_defs_region(defs, "work", OTFX_ROLE_USER_FUNCTION, &work));
    OK(otfx_defs_region(defs, "MPI_Send", OTFX_ROLE_MPI_P2P, &send));
    uint32_t members[64];
    for (int r = 0; r < processes && r < 64; r++)
        members[r] = (uint32_t)r;
    OK(otfx_defs_comm(defs, "MPI_COMM_WORLD", members, (uint32_t)processes, &world));
    const otfx_trace_config config = otfx_trace_config_default((size_t)256 << 20);
    otfx_trace *trace;
    OK(otfx_trace_create(&config, defs, location, &trace));
    enum { BLOCK = 4096 };
    static otfx_event events[BLOCK];
    size_t used = 0;
    otfx_time t = 1000;
    for (int i = 0; i < EVENT_PAIRS; i++) {
        const otfx_ref region = i % 2 ? send : work;
        events[used++] = (otfx_event){
            .time = t += 3 + (otfx_time)(i % 7), .type = OTFX_EV_ENTER, .u.region.region = region};
        if (region == send) {
            otfx_event message = {.time = t += 1, .type = OTFX_EV_SEND};
            message.u.msg.comm = world;
            message.u.msg.peer = (uint32_t)((me + 1) % processes);
            message.u.msg.tag = (uint32_t)(i % 100);
            message.u.msg.bytes = (uint64_t)i;
            events[used++] = message;
        }
        events[used++] = (otfx_event){.time = t += 5, .type = OTFX_EV_LEAVE, .u.region.region = region};
        if (used + 3 > BLOCK || i == EVENT_PAIRS - 1) {
            size_t appended = 0;
            OK(otfx_trace_append(trace, events, used, &appended));
            used = 0;
        }
    }
    return trace;
}

/* Files in `directory` (0 for an empty or missing one): nothing of a failed archive may be left. */
static int entries(const char *directory)
{
    DIR *dir = opendir(directory);
    if (!dir)
        return 0;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(dir));)
        count += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
    closedir(dir);
    return count;
}

/* A snapshot that must fail on every process with `reason` in its message and leave `leftover_dir` empty. */
static void expect_failure(const char *scratch, otfx_defs *defs, otfx_trace *trace, const char *path,
                           const char *reason, const char *what)
{
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, defs, &trace, 1, scratch, path, 0, UINT64_MAX, false,
                                &result);
    check(!result.ok, "%s: the snapshot %s did not fail", what, path);
    check(strstr(result.error, reason) != NULL, "%s: the error does not say \"%s\": %s", what, reason,
          result.error);
    MPI_Barrier(MPI_COMM_WORLD);
    char directory[4096];
    snprintf(directory, sizeof(directory), "%s/%s", scratch, path);
    *strrchr(directory, '/') = '\0';
    check(entries(directory) == 0, "%s: %d files left in %s", what, entries(directory), directory);
    if (me == 0)
        printf("snapshot-faults: %s: %s\n", what, result.error);
}

/* OTF2 itself fails to create the archive's directory, on the master, after the master's check: a
 * dangling symbolic link where the directory goes. */
struct racing {
    MPI_Comm comm;
    char link[4200];
};

static int install_after_planting(void *archive, void *user)
{
    struct racing *racing = user;
    if (me == 0)
        check(symlink("/nonexistent/otfx-snapshot-faults", racing->link) == 0, "symlink %s", racing->link);
    return place_snapshot_install_collectives(archive, &racing->comm);
}

static int allgather(const void *data, size_t size, void **all, size_t *sizes, void *user)
{
    struct racing *racing = user;
    return place_snapshot_allgather(data, size, all, sizes, &racing->comm);
}

static void otf2_fails_to_create(const char *scratch, otfx_defs *defs, otfx_trace *trace)
{
    char directory[4096];
    snprintf(directory, sizeof(directory), "%s/good", scratch);
    struct racing racing = {.comm = MPI_COMM_WORLD};
    snprintf(racing.link, sizeof(racing.link), "%s/raced", directory);
    const otfx_otf2_collective collective = {.size = (uint32_t)processes,
                                             .rank = (uint32_t)me,
                                             .archive_opened = install_after_planting,
                                             .allgather = allgather,
                                             .user = &racing};
    otfx_export_options options = otfx_export_options_default();
    const otfx_status status =
        otfx_otf2_export_shared(directory, "raced", defs, &trace, 1, &options, &collective, NULL);
    check(status != OTFX_OK, "the export through a dangling link did not fail");
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        printf("snapshot-faults: OTF2 cannot create the archive: %s\n", otfx_last_error());
        check(unlink(racing.link) == 0, "unlink %s", racing.link);
        check(entries(directory) == 0, "%d files left in %s", entries(directory), directory);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Definitions of more than OTF2's 4 MiB file buffer (the global definition file written in whole chunks,
 * the full disk failing in one of them), with a small trace: DEFINED_REGIONS regions on each process. */
enum { DEFINED_REGIONS = 40000 };

static void big_definitions(const char *scratch)
{
    otfx_defs *defs = otfx_defs_create();
    check(defs != NULL, "otfx_defs_create");
    otfx_ref location, region = 0;
    OK(otfx_defs_location(defs, (uint32_t)me, 0, &location));
    for (int i = 0; i < DEFINED_REGIONS; i++) {
        char name[128];
        snprintf(name, sizeof(name), "process_%d_a_function_with_a_long_name_as_C++_programs_have_%d", me, i);
        OK(otfx_defs_region(defs, name, OTFX_ROLE_USER_FUNCTION, &region));
    }
    const otfx_trace_config config = otfx_trace_config_default((size_t)1 << 20);
    otfx_trace *trace;
    OK(otfx_trace_create(&config, defs, location, &trace));
    const otfx_event events[] = {{.time = 10, .type = OTFX_EV_ENTER, .u.region.region = region},
                                 {.time = 20, .type = OTFX_EV_LEAVE, .u.region.region = region}};
    size_t appended = 0;
    OK(otfx_trace_append(trace, events, 2, &appended));
    expect_failure(scratch, defs, trace, "full/definitions", "No space left on device",
                   "full disk, big definitions");
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, defs, &trace, 1, scratch, "good/definitions", 0, UINT64_MAX,
                                false, &result);
    check(result.ok, "the snapshot of big definitions into a good directory failed: %s", result.error);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        char command[4200];
        snprintf(command, sizeof(command), "otf2-print -G %s | grep -c '^REGION' > %s/good/regions.txt",
                 result.archive, scratch);
        check(system(command) == 0, "otf2-print -G %s failed", result.archive);
        struct stat info;
        snprintf(command, sizeof(command), "%s/good/definitions.def", scratch);
        check(stat(command, &info) == 0 && info.st_size > (4 << 20), "the global definitions are %lld bytes",
              (long long)info.st_size);
        printf("snapshot-faults: big definitions afterwards: %lld bytes of global definitions\n",
               (long long)info.st_size);
    }
    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
}

static void good(const char *scratch, otfx_defs *defs, otfx_trace *trace)
{
    place_snapshot_result result;
    place_snapshot_write_traces(MPI_COMM_WORLD, defs, &trace, 1, scratch, "good/trace", 0, UINT64_MAX, false,
                                &result);
    check(result.ok, "the snapshot into a good directory failed: %s", result.error);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        char command[4200];
        snprintf(command, sizeof(command), "otf2-print %s > /dev/null", result.archive);
        check(system(command) == 0, "otf2-print %s failed", result.archive);
        printf("snapshot-faults: a good directory afterwards: %s, %llu events here, read by otf2-print\n",
               result.archive, (unsigned long long)result.events_written);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &processes);
    check(argc == 2, "usage: test_snapshot_faults_mpi SCRATCH");
    const char *scratch = argv[1];
    otfx_defs *defs = otfx_defs_create();
    check(defs != NULL, "otfx_defs_create");
    otfx_trace *trace = build(defs);

    expect_failure(scratch, defs, trace, "ro/trace", "Read-only file system", "read-only");
    expect_failure(scratch, defs, trace, "full/trace", "No space left on device", "full disk");
    expect_failure(scratch, defs, trace, "full/trace", "No space left on device", "full disk again");
    expect_failure(scratch, defs, trace, "tiny/trace", "No space left on device", "tiny disk");
    otf2_fails_to_create(scratch, defs, trace);
    good(scratch, defs, trace);
    big_definitions(scratch);

    otfx_trace_destroy(trace);
    otfx_defs_destroy(defs);
    if (me == 0)
        printf("snapshot-faults: passed\n");
    MPI_Finalize();
    return 0;
}

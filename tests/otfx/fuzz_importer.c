/* fuzz_importer.c — fuzz target for otfx_otf2_import.
 *
 * On first use it exports a small valid archive (two of four ranks, every event type) into a scratch
 * directory of its own (unique per process). Each input then replaces one file of that archive and
 * the archive is imported; the import may fail, it must never crash, hang or leak. The input's first
 * byte picks the file (modulo 3): the event file of rank 0, the global definitions, the local
 * definitions of rank 0; the rest of the input is the file's new content. The original file is put
 * back afterwards.
 *
 * The seed corpus (tests/otfx/corpus/importer/) holds the three real files with their selector byte;
 * to regenerate it run this target with OTFX_FUZZ_IMPORTER_SEEDS=<directory>. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct victim {
    const char *relative; /* inside the scratch directory */
    const char *seed_name;
    char *path;
    uint8_t *original;
    size_t size;
} victim;

static victim victims[] = {
    {"seed/0.evt", "rank0-events", NULL, NULL, 0},
    {"seed.def", "global-definitions", NULL, NULL, 0},
    {"seed/0.def", "rank0-local-definitions", NULL, NULL, 0},
};
enum { VICTIMS = sizeof victims / sizeof *victims };

static char *scratch;

static void die(const char *what)
{
    fprintf(stderr, "fuzz_importer: %s: %s\n", what, otfx_last_error());
    abort();
}

static uint8_t *read_whole(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        die(path);
    uint8_t *bytes = malloc(1 << 20);
    if (!bytes)
        die("out of memory");
    *size = fread(bytes, 1, 1 << 20, file);
    fclose(file);
    return bytes;
}

static void write_whole(const char *path, const uint8_t *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    if (!file || (size > 0 && fwrite(data, 1, size, file) != size))
        die(path);
    if (fclose(file) != 0)
        die(path);
}

static void remove_scratch(void)
{
    otf2_check_remove_tree(scratch);
    free(scratch);
    for (int v = 0; v < VICTIMS; v++) {
        free(victims[v].path);
        free(victims[v].original);
    }
}

static void set_up(void)
{
    scratch = otf2_check_scratch_dir("fuzz-importer");
    otf2_check_job job;
    /* Ranks 0 and 1 of a world of 4: ranks 2 and 3 become placeholder locations. */
    otf2_check_job_world(&job, RANDOM_STREAM_MIXED, 5, 2, 120, 1 << 20, OTFX_REDUCE_RING, 4);
    otfx_export_options options = otfx_export_options_default();
    if (otfx_otf2_export(scratch, "seed", job.defs, job.traces, job.count, &options) != OTFX_OK)
        die("exporting the seed archive");
    otf2_check_job_destroy(&job);
    for (int v = 0; v < VICTIMS; v++) {
        size_t length = strlen(scratch) + strlen(victims[v].relative) + 2;
        victims[v].path = malloc(length);
        if (!victims[v].path)
            die("out of memory");
        snprintf(victims[v].path, length, "%s/%s", scratch, victims[v].relative);
        victims[v].original = read_whole(victims[v].path, &victims[v].size);
    }
    atexit(remove_scratch);

    const char *seeds = getenv("OTFX_FUZZ_IMPORTER_SEEDS");
    for (int v = 0; seeds && v < VICTIMS; v++) {
        char path[4096];
        uint8_t *seed = malloc(victims[v].size + 1);
        if (!seed)
            die("out of memory");
        seed[0] = (uint8_t)v; /* the selector byte */
        memcpy(seed + 1, victims[v].original, victims[v].size);
        snprintf(path, sizeof path, "%s/%s", seeds, victims[v].seed_name);
        write_whole(path, seed, victims[v].size + 1);
        free(seed);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!scratch)
        set_up();
    if (size == 0)
        return 0;
    victim *target = &victims[data[0] % VICTIMS];
    write_whole(target->path, data + 1, size - 1);

    size_t length = strlen(scratch) + 16;
    char *anchor = malloc(length);
    if (!anchor)
        die("out of memory");
    snprintf(anchor, length, "%s/seed.otf2", scratch);
    otfx_trace_config config = otfx_trace_config_default(1 << 20);
    otfx_defs *defs = NULL;
    otfx_trace **traces = NULL;
    size_t count = 0;
    if (otfx_otf2_import(anchor, &config, &defs, &traces, &count) == OTFX_OK) {
        for (size_t t = 0; t < count; t++)
            otfx_trace_destroy(traces[t]);
        free(traces);
        otfx_defs_destroy(defs);
    } else if (defs || traces || count) {
        fprintf(stderr, "fuzz_importer: a failed import returned results\n");
        abort();
    }
    free(anchor);
    write_whole(target->path, target->original, target->size);
    return 0;
}

/* Stand-in driver for fuzz targets when libFuzzer is not available (gcc builds): replays every file
 * of the given corpus directories and then a fixed number of deterministic pseudo-random inputs, each
 * derived from a corpus file by flipping, truncating and splicing bytes. It finds regressions on known
 * inputs; the libFuzzer build (clang sanitizer build) does the real exploration. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_SEEDS = 4096, MAX_INPUT = 1 << 20 };

static uint8_t *seeds[MAX_SEEDS];
static size_t seed_sizes[MAX_SEEDS];
static size_t seed_count;

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static void load_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f || seed_count == MAX_SEEDS) {
        if (f)
            fclose(f);
        return;
    }
    uint8_t *buf = malloc(MAX_INPUT);
    size_t n = buf ? fread(buf, 1, MAX_INPUT, f) : 0;
    fclose(f);
    if (!buf)
        return;
    seeds[seed_count] = buf;
    seed_sizes[seed_count++] = n;
}

static void load_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        load_file(path);
        return;
    }
    DIR *dir = opendir(path);
    struct dirent *entry;
    while (dir && (entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
        load_path(child);
    }
    if (dir)
        closedir(dir);
}

int main(int argc, char **argv)
{
    long random_runs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--random") == 0 && i + 1 < argc)
            random_runs = strtol(argv[++i], NULL, 10);
        else
            load_path(argv[i]);
    }
    for (size_t i = 0; i < seed_count; i++)
        LLVMFuzzerTestOneInput(seeds[i], seed_sizes[i]);

    uint8_t *input = malloc(MAX_INPUT);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (long run = 0; input && run < random_runs; run++) {
        size_t size;
        if (seed_count > 0) {
            size_t pick = next_random(&state) % seed_count;
            size = seed_sizes[pick];
            memcpy(input, seeds[pick], size);
            if (size > 0 && next_random(&state) % 4 == 0)
                size = next_random(&state) % size; /* truncate */
        } else {
            size = next_random(&state) % 512;
            for (size_t b = 0; b < size; b++)
                input[b] = (uint8_t)next_random(&state);
        }
        unsigned flips = 1 + (unsigned)(next_random(&state) % 8);
        for (unsigned f = 0; size > 0 && f < flips; f++)
            input[next_random(&state) % size] ^= (uint8_t)(1u << (next_random(&state) % 8));
        LLVMFuzzerTestOneInput(input, size);
    }
    printf("fuzz_replay: %zu corpus inputs and %ld mutated inputs ran clean\n", seed_count, random_runs);
    for (size_t i = 0; i < seed_count; i++)
        free(seeds[i]);
    free(input);
    return 0;
}

/*
 * place_config.c — the event place's settings: trace budget and strategy from the environment
 * (otfx-run passes them with -genv), the MPI function table's event classes as region roles and
 * collective operations, and the place's own memory figures.
 */
#include "event_place_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUFFER ((size_t)64 * 1024 * 1024)
/* A query's partial result at any place: as large as the largest reply the protocol carries. */
#define DEFAULT_QUERY_MEMORY      ((size_t)64 * 1024 * 1024)
#define MIN_QUERY_MEMORY          ((size_t)64 * 1024)
#define DEFAULT_MODULE_TIMEOUT_NS (30ull * 1000u * 1000u * 1000u)

bool place_read_trace_config(int place_rank, otfx_trace_config *config)
{
    size_t budget = DEFAULT_BUFFER;
    const char *buffer = getenv("OTFX_BUFFER");
    if (buffer && *buffer && otfx_place_parse_size(buffer, &budget) != 0) {
        fprintf(stderr, "otfx-place %d: OTFX_BUFFER=%s is not a size (e.g. 256K, 64M, 1G)\n", place_rank,
                buffer);
        return false;
    }
    if (budget < OTFX_PLACE_MIN_BUFFER) {
        fprintf(stderr, "otfx-place %d: OTFX_BUFFER=%s is below the smallest trace budget, 64K\n", place_rank,
                buffer);
        return false;
    }
    *config = otfx_trace_config_default(budget);
    /* otfx wants at least four chunks per budget: small budgets get smaller chunks. */
    if (budget < 4 * (size_t)config->chunk_bytes)
        config->chunk_bytes = (uint32_t)(budget / 4 / 1024 * 1024);
    const char *reduction = getenv("OTFX_REDUCTION");
    if (reduction && *reduction && otfx_reduction_parse(reduction, &config->strategy) != OTFX_OK) {
        fprintf(stderr,
                "otfx-place %d: OTFX_REDUCTION=%s is not a strategy (ring, time, type, depth, stop)\n",
                place_rank, reduction);
        return false;
    }
    return true;
}

bool place_read_query_limits(struct event_place *place)
{
    const int place_rank = place->setup.place_rank;
    place->query_memory = DEFAULT_QUERY_MEMORY;
    place->module_timeout_ns = DEFAULT_MODULE_TIMEOUT_NS;
    const char *memory = getenv("OTFX_QUERY_MEMORY");
    if (memory && *memory &&
        (otfx_place_parse_size(memory, &place->query_memory) != 0 ||
         place->query_memory < MIN_QUERY_MEMORY)) {
        fprintf(stderr, "otfx-place %d: OTFX_QUERY_MEMORY=%s is not a size of at least 64K (e.g. 16M, 64M)\n",
                place_rank, memory);
        return false;
    }
    const char *timeout = getenv("OTFX_MODULE_TIMEOUT");
    if (timeout && *timeout) {
        char *end = NULL;
        const double seconds = strtod(timeout, &end);
        if (end == timeout || *end != '\0' || !(seconds > 0) || seconds > 1e6) {
            fprintf(stderr, "otfx-place %d: OTFX_MODULE_TIMEOUT=%s is not seconds above 0 (e.g. 10, 0.5)\n",
                    place_rank, timeout);
            return false;
        }
        place->module_timeout_ns = (uint64_t)(seconds * 1e9);
        if (place->module_timeout_ns == 0)
            place->module_timeout_ns = 1;
    }
    return true;
}

uint64_t place_vm_hwm_kib(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    if (!status)
        return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof(line), status))
        if (sscanf(line, "VmHWM: %llu kB", &kib) == 1)
            break;
    fclose(status);
    return kib;
}

/* OTF2_CollectiveOp values (OTF2_Events.h), by the operation's base name. Neighbourhood collectives
 * have no OTF2 operation: they are stored as the all-to-all/allgather they generalise. */
static const struct {
    const char *base;
    uint32_t op;
} collective_ops[] = {
    {"barrier", 0},
    {"bcast", 1},
    {"gather", 2},
    {"gatherv", 3},
    {"scatter", 4},
    {"scatterv", 5},
    {"allgather", 6},
    {"allgatherv", 7},
    {"alltoall", 8},
    {"alltoallv", 9},
    {"alltoallw", 10},
    {"allreduce", 11},
    {"reduce", 12},
    {"reduce_scatter", 13},
    {"scan", 14},
    {"exscan", 15},
    {"reduce_scatter_block", 16},
    {"neighbor_allgather", 6},
    {"neighbor_allgatherv", 7},
    {"neighbor_alltoall", 8},
    {"neighbor_alltoallv", 9},
    {"neighbor_alltoallw", 10},
};

/* "MPI_Iallreduce_init_c" → "allreduce": drops the prefix, the nonblocking "I", "_init" and "_c". */
static uint32_t collective_op_of(const char *function_name)
{
    char base[64];
    const char *name = strncmp(function_name, "MPI_", 4) == 0 ? function_name + 4 : function_name;
    snprintf(base, sizeof(base), "%s", name);
    for (char *c = base; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    size_t length = strlen(base);
    if (length > 2 && strcmp(base + length - 2, "_c") == 0)
        base[length -= 2] = '\0';
    if (length > 5 && strcmp(base + length - 5, "_init") == 0)
        base[length -= 5] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        const char *candidate = pass == 0 ? base : base + 1; /* second pass: without a leading "i" */
        if (pass == 1 && base[0] != 'i')
            break;
        for (size_t i = 0; i < sizeof(collective_ops) / sizeof(collective_ops[0]); i++)
            if (strcmp(candidate, collective_ops[i].base) == 0)
                return collective_ops[i].op;
    }
    return 0; /* MPI collectives outside OTF2's list (none in MPI 4.0 besides the above): barrier-like */
}

static otfx_region_role role_of_class(const char *event_class)
{
    if (strncmp(event_class, "p2p-", 4) == 0 || strcmp(event_class, "probe") == 0 ||
        strncmp(event_class, "persistent-", 11) == 0 || strcmp(event_class, "start") == 0 ||
        strcmp(event_class, "completion") == 0 || strcmp(event_class, "request-free") == 0)
        return OTFX_ROLE_MPI_P2P;
    if (strcmp(event_class, "collective") == 0 || strcmp(event_class, "icollective") == 0 ||
        strcmp(event_class, "collective-init") == 0)
        return OTFX_ROLE_MPI_COLLECTIVE;
    return OTFX_ROLE_MPI_OTHER;
}

bool place_describe_functions(struct event_place *place)
{
    const otfx_place_functions *table = &place->setup.functions;
    place->functions = calloc((size_t)(table->count > 0 ? table->count : 1), sizeof(*place->functions));
    if (!place->functions)
        return false;
    for (int i = 0; i < table->count; i++) {
        struct place_function *function = &place->functions[i];
        function->role = role_of_class(table->classes[i]);
        function->blocking_collective = strcmp(table->classes[i], "collective") == 0;
        function->collective_op =
            function->role == OTFX_ROLE_MPI_COLLECTIVE ? collective_op_of(table->names[i]) : 0;
        function->region = OTFX_REF_NONE;
    }
    return true;
}

/*
 * place_config.c — the event place's settings: trace budget and strategy from the environment
 * (otfx-run passes them with -genv), the MPI function table's event classes as region roles and
 * collective operations, and the place's own memory figures.
 */
#include "event_place_internal.h"

#include <otfx/settings.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The settings (capture/settings/settings.tsv) a place stops at when they are invalid: the defaults
 * and limits of the trace budget, the query memory (as large as the largest reply the protocol
 * carries) and the module time limit are the table's. */
static bool settings_valid(int place_rank, const otfx_setting *settings, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *problem = otfx_setting_problem(settings[i]);
        if (problem) {
            fprintf(stderr, "otfx-place %d: %s\n", place_rank, problem);
            return false;
        }
    }
    return true;
}

bool place_read_trace_config(int place_rank, otfx_trace_config *config)
{
    static const otfx_setting read_here[] = {OTFX_SETTING_BUFFER, OTFX_SETTING_REDUCTION,
                                             OTFX_SETTING_SNAPSHOT_OVERWRITE};
    if (!settings_valid(place_rank, read_here, sizeof(read_here) / sizeof(read_here[0])))
        return false;
    const size_t budget = otfx_setting_size(OTFX_SETTING_BUFFER);
    *config = otfx_trace_config_default(budget);
    /* otfx wants at least four chunks per budget: small budgets get smaller chunks. */
    if (budget < 4 * (size_t)config->chunk_bytes)
        config->chunk_bytes = (uint32_t)(budget / 4 / 1024 * 1024);
    const char *reduction = otfx_setting_text(OTFX_SETTING_REDUCTION);
    if (reduction && otfx_reduction_parse(reduction, &config->strategy) != OTFX_OK) {
        fprintf(stderr, "otfx-place %d: OTFX_REDUCTION=%s is a strategy this otfx does not know\n",
                place_rank, reduction);
        return false;
    }
    return true;
}

bool place_read_query_limits(struct event_place *place)
{
    static const otfx_setting read_here[] = {OTFX_SETTING_QUERY_MEMORY, OTFX_SETTING_MODULE_TIMEOUT};
    if (!settings_valid(place->setup.place_rank, read_here, sizeof(read_here) / sizeof(read_here[0])))
        return false;
    place->query_memory = otfx_setting_size(OTFX_SETTING_QUERY_MEMORY);
    place->module_timeout_ns = (uint64_t)(otfx_setting_seconds(OTFX_SETTING_MODULE_TIMEOUT) * 1e9);
    if (place->module_timeout_ns == 0)
        place->module_timeout_ns = 1;
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

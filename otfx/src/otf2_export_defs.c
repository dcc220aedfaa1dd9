/* otf2_export_defs.c — the definitions of the OTF2 export: the global definitions (master), the
 * local definition files with their mappings, the placeholder locations that complete the MPI
 * location group. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_export_internal.h"
#include <otfx/support/growth.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static otfx_status define_string(exporter *x, const char *text, OTF2_StringRef *ref)
{
    *ref = x->next_string++;
    OTF2_TRY(OTF2_GlobalDefWriter_WriteString(x->global, *ref, text), "writing a string definition");
    return OTFX_OK;
}

static otfx_status define_stringf(exporter *x, OTF2_StringRef *ref, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static otfx_status define_stringf(exporter *x, OTF2_StringRef *ref, const char *format, ...)
{
    char text[128];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return define_string(x, text, ref);
}

int export_compare_locations(const void *a, const void *b)
{
    const exported_location *left = a, *right = b;
    if (left->rank != right->rank)
        return (left->rank > right->rank) - (left->rank < right->rank);
    return (left->thread > right->thread) - (left->thread < right->thread);
}

/* The MPI location group must list a location for every world rank a communicator names, in world
 * rank order: ranks whose main thread is not exported get an empty placeholder location. Returns the
 * number of world ranks (0 when there are no communicators, and then no MPI groups are written). */
otfx_status export_add_placeholders(exporter *x, uint32_t *world_size)
{
    uint32_t comms = otfx_defs_count_comms(x->global_defs);
    uint64_t size = 0;
    for (uint32_t c = 0; c < comms; c++) {
        otfx_comm_def def = {0};
        OTFX_TRY(otfx_defs_get_comm(x->global_defs, c, &def));
        for (uint32_t i = 0; i < def.size; i++)
            if ((uint64_t)def.world_ranks[i] + 1 > size)
                size = (uint64_t)def.world_ranks[i] + 1;
    }
    if (comms > 0)
        for (size_t l = 0; l < x->location_count; l++)
            if ((uint64_t)x->locations[l].rank + 1 > size)
                size = (uint64_t)x->locations[l].rank + 1;
    if (size > UINT32_MAX)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 export: communicator names world rank %u",
                         (unsigned)(size - 1));
    otfx_otf2_sort(x->locations, x->location_count, sizeof *x->locations, export_compare_locations);
    size_t exported = x->location_count;
    for (uint32_t rank = 0; rank < size; rank++) {
        exported_location key = {.rank = rank, .thread = 0};
        if (!otfx_otf2_search(&key, x->locations, exported, sizeof key, export_compare_locations))
            OTFX_TRY(export_add_location(x, rank, 0, 0, true));
    }
    otfx_otf2_sort(x->locations, x->location_count, sizeof *x->locations, export_compare_locations);
    *world_size = (uint32_t)size;
    return OTFX_OK;
}

/* Placeholders get an empty event file, like every other location, so every reader finds one. */
otfx_status export_write_placeholder_event_files(exporter *x)
{
    for (size_t l = 0; l < x->location_count; l++) {
        if (!x->locations[l].placeholder)
            continue;
        OTF2_EvtWriter *writer =
            OTF2_Archive_GetEvtWriter(x->archive, otfx_otf2_location_id(x->locations[l].rank, 0));
        if (!writer)
            return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening an event writer");
        OTF2_TRY(OTF2_Archive_CloseEvtWriter(x->archive, writer), "closing an event writer");
    }
    return OTFX_OK;
}

/* One mapping table: OTF2 ref i of this process -> ref of the global definitions. `offset` refs at the
 * start map to themselves (the reduced-range regions), then local ref offset + i -> offset + refs[i]. */
static otfx_status write_mapping(OTF2_DefWriter *writer, OTF2_MappingType type, const otfx_ref *refs,
                                 uint32_t count, uint32_t offset)
{
    uint64_t length = (uint64_t)offset + count;
    bool identity = true;
    for (uint32_t i = 0; i < count; i++)
        identity = identity && refs[i] == i;
    if (identity)
        return OTFX_OK; /* (OTF2_IdMap_CreateFromUint64Array returns NULL for it) */
    uint64_t *mappings = malloc(length * sizeof *mappings);
    if (!mappings)
        return out_of_memory();
    for (uint64_t i = 0; i < offset; i++)
        mappings[i] = i;
    for (uint32_t i = 0; i < count; i++)
        mappings[offset + i] = (uint64_t)offset + refs[i];
    OTF2_IdMap *map = OTF2_IdMap_CreateFromUint64Array(length, mappings, true);
    free(mappings);
    if (!map)
        return out_of_memory();
    OTF2_ErrorCode code = OTF2_DefWriter_WriteMappingTable(writer, type, map);
    OTF2_IdMap_Free(map);
    if (code != OTF2_SUCCESS)
        return otfx_otf2_fail_call(code, "OTF2 export: writing a mapping table");
    return OTFX_OK;
}

static otfx_status write_local_definitions(exporter *x, uint32_t rank, uint32_t thread, bool mapped)
{
    OTF2_DefWriter *writer = OTF2_Archive_GetDefWriter(x->archive, otfx_otf2_location_id(rank, thread));
    if (!writer)
        return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening a local definition writer");
    otfx_status status = OTFX_OK;
    if (mapped) {
        status = write_mapping(writer, OTF2_MAPPING_REGION, x->map.regions, x->map.region_count,
                               REGION_REF_OFFSET);
        if (status == OTFX_OK)
            status = write_mapping(writer, OTF2_MAPPING_COMM, x->map.comms, x->map.comm_count, 0);
        if (status == OTFX_OK)
            status = write_mapping(writer, OTF2_MAPPING_METRIC, x->map.metrics, x->map.metric_count, 0);
    }
    OTF2_ErrorCode code = OTF2_Archive_CloseDefWriter(x->archive, writer);
    if (status == OTFX_OK && code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 export: closing a local definition writer");
    return status;
}

/* The local definition files of this process's locations (their mapping tables, when its references
 * are not the global ones) and, on the master, the placeholders' (empty). */
otfx_status export_write_local_definition_files(exporter *x)
{
    for (size_t l = 0; l < x->own_count; l++)
        OTFX_TRY(write_local_definitions(x, x->own[l].rank, x->own[l].thread, !x->map_identity));
    for (size_t l = 0; x->master && l < x->location_count; l++)
        if (x->locations[l].placeholder)
            OTFX_TRY(write_local_definitions(x, x->locations[l].rank, 0, false));
    return OTFX_OK;
}

static otfx_status define_system_tree(exporter *x, OTF2_StringRef placeholder_name)
{
    OTF2_StringRef name = STRING_EMPTY, class_name = STRING_EMPTY;
    OTFX_TRY(define_string(x, "job", &name));
    OTFX_TRY(define_string(x, "machine", &class_name));
    OTF2_TRY(OTF2_GlobalDefWriter_WriteSystemTreeNode(x->global, 0, name, class_name,
                                                      OTF2_UNDEFINED_SYSTEM_TREE_NODE),
             "writing the system tree");
    for (size_t l = 0; l < x->location_count; l++) {
        const exported_location *location = &x->locations[l];
        if (l == 0 || location->rank != x->locations[l - 1].rank) {
            OTFX_TRY(define_stringf(x, &name, "rank %u", location->rank));
            OTF2_TRY(OTF2_GlobalDefWriter_WriteLocationGroup(x->global, location->rank, name,
                                                             OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                             OTF2_UNDEFINED_LOCATION_GROUP),
                     "writing a location group");
        }
    }
    for (size_t l = 0; l < x->location_count; l++) {
        const exported_location *location = &x->locations[l];
        if (location->placeholder)
            OTFX_TRY(define_stringf(x, &name, "rank %u (not exported)", location->rank));
        else if (location->thread == 0)
            OTFX_TRY(define_stringf(x, &name, "rank %u", location->rank));
        else
            OTFX_TRY(define_stringf(x, &name, "rank %u thread %u", location->rank, location->thread));
        uint64_t id = otfx_otf2_location_id(location->rank, location->thread);
        OTF2_TRY(OTF2_GlobalDefWriter_WriteLocation(x->global, id, name, OTF2_LOCATION_TYPE_CPU_THREAD,
                                                    location->events, location->rank),
                 "writing a location");
    }
    for (size_t l = 0; l < x->location_count; l++) {
        if (!x->locations[l].placeholder)
            continue;
        OTF2_AttributeValue yes;
        yes.uint8 = 1;
        OTF2_TRY(OTF2_GlobalDefWriter_WriteLocationProperty(
                     x->global, otfx_otf2_location_id(x->locations[l].rank, 0), placeholder_name,
                     otfx_otf2_attributes[OTFX_OTF2_ATTR_PLACEHOLDER].type, yes),
                 "writing a location property");
    }
    return OTFX_OK;
}

static otfx_status define_regions(exporter *x)
{
    /* All of them, used or not: readers expect region refs to be dense and in definition order. */
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++) {
        OTF2_StringRef name = STRING_EMPTY, description = STRING_EMPTY;
        OTFX_TRY(define_stringf(x, &name, "%s%s", OTFX_OTF2_REDUCED_PREFIX,
                                otfx_reduction_name((otfx_reduction)strategy)));
        OTFX_TRY(define_string(x, "detail removed by otfx: see otfx::events_removed", &description));
        OTF2_TRY(OTF2_GlobalDefWriter_WriteRegion(
                     x->global, (OTF2_RegionRef)strategy, name, name, description, OTFX_OTF2_REDUCED_ROLE,
                     OTFX_OTF2_REDUCED_PARADIGM, OTF2_REGION_FLAG_NONE, STRING_EMPTY, 0, 0),
                 "writing a region");
    }
    uint32_t regions = otfx_defs_count_regions(x->global_defs);
    for (uint32_t r = 0; r < regions; r++) {
        otfx_region_def def = {0};
        OTFX_TRY(otfx_defs_get_region(x->global_defs, r, &def));
        const otfx_otf2_role_mapping *mapping = otfx_otf2_role_to_otf2(def.role);
        OTF2_StringRef name = STRING_EMPTY;
        OTFX_TRY(define_string(x, def.name, &name));
        OTF2_TRY(OTF2_GlobalDefWriter_WriteRegion(x->global, REGION_REF_OFFSET + r, name, name, STRING_EMPTY,
                                                  mapping->otf2_role, mapping->paradigm,
                                                  OTF2_REGION_FLAG_NONE, STRING_EMPTY, 0, 0),
                 "writing a region");
    }
    return OTFX_OK;
}

/* Communicators: the MPI location group (member i = location of world rank i), then per
 * communicator a group of its members as world ranks, i.e. indexes into that group. */
static otfx_status define_comms(exporter *x, uint32_t world_size)
{
    uint32_t comms = otfx_defs_count_comms(x->global_defs);
    if (comms == 0)
        return OTFX_OK;
    uint64_t *members = malloc(((size_t)world_size + 1) * sizeof *members);
    if (!members)
        return out_of_memory();
    otfx_status status = OTFX_OK;
    for (uint32_t rank = 0; rank < world_size; rank++)
        members[rank] = otfx_otf2_location_id(rank, 0);
    OTF2_ErrorCode code = OTF2_GlobalDefWriter_WriteGroup(x->global, GROUP_COMM_LOCATIONS, STRING_EMPTY,
                                                          OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                                          OTF2_GROUP_FLAG_NONE, world_size, members);
    if (code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 export: writing the MPI location group");
    for (uint32_t c = 0; c < comms && status == OTFX_OK; c++) {
        otfx_comm_def def;
        OTF2_StringRef name;
        status = otfx_defs_get_comm(x->global_defs, c, &def);
        if (status == OTFX_OK)
            status = define_string(x, def.name, &name);
        if (status != OTFX_OK)
            break;
        for (uint32_t i = 0; i < def.size; i++)
            members[i] = def.world_ranks[i];
        code =
            OTF2_GlobalDefWriter_WriteGroup(x->global, GROUP_COMM_FIRST + c, name, OTF2_GROUP_TYPE_COMM_GROUP,
                                            OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, def.size, members);
        if (code == OTF2_SUCCESS)
            code = OTF2_GlobalDefWriter_WriteComm(x->global, c, name, GROUP_COMM_FIRST + c,
                                                  OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
        if (code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 export: writing a communicator");
    }
    free(members);
    return status;
}

/* Each otfx metric is a metric member with a metric class of its own (the class is what Metric
 * records refer to), asynchronous: otfx records metric values whenever they come. */
static otfx_status define_metrics(exporter *x)
{
    uint32_t metrics = otfx_defs_count_metrics(x->global_defs);
    for (uint32_t m = 0; m < metrics; m++) {
        otfx_metric_def def = {0};
        OTFX_TRY(otfx_defs_get_metric(x->global_defs, m, &def));
        OTF2_Type type = def.type == OTFX_METRIC_INT64    ? OTF2_TYPE_INT64
                         : def.type == OTFX_METRIC_UINT64 ? OTF2_TYPE_UINT64
                                                          : OTF2_TYPE_DOUBLE;
        OTF2_StringRef name = STRING_EMPTY, unit = STRING_EMPTY;
        OTFX_TRY(define_string(x, def.name, &name));
        OTFX_TRY(define_string(x, def.unit ? def.unit : "", &unit));
        OTF2_TRY(OTF2_GlobalDefWriter_WriteMetricMember(x->global, m, name, STRING_EMPTY,
                                                        OTF2_METRIC_TYPE_USER, OTF2_METRIC_ABSOLUTE_POINT,
                                                        type, OTF2_BASE_DECIMAL, 0, unit),
                 "writing a metric member");
        OTF2_MetricMemberRef member = m;
        OTF2_TRY(OTF2_GlobalDefWriter_WriteMetricClass(x->global, m, 1, &member, OTF2_METRIC_ASYNCHRONOUS,
                                                       OTF2_RECORDER_KIND_ABSTRACT),
                 "writing a metric class");
    }
    return OTFX_OK;
}

otfx_status export_write_global_definitions(exporter *x, uint32_t world_size)
{
    x->global = OTF2_Archive_GetGlobalDefWriter(x->archive);
    if (!x->global)
        return otfx_otf2_fail_call(OTF2_ERROR_INVALID, "OTF2 export: opening the global definition writer");
    otfx_time offset = x->any_time ? x->earliest : 0;
    otfx_time length = x->any_time ? x->latest - x->earliest : 0;
    OTF2_TRY(OTF2_GlobalDefWriter_WriteClockProperties(x->global, OTFX_OTF2_TIMER_RESOLUTION, offset, length,
                                                       OTF2_UNDEFINED_TIMESTAMP),
             "writing the clock properties");

    /* The string refs events already used: "" and the strategy names. */
    OTF2_StringRef ref;
    OTFX_TRY(define_string(x, "", &ref));
    for (int strategy = 0; strategy < OTFX_REDUCE_COUNT; strategy++)
        OTFX_TRY(define_string(x, otfx_reduction_name((otfx_reduction)strategy), &ref));

    OTF2_StringRef placeholder_name = STRING_EMPTY;
    for (int a = 0; a < OTFX_OTF2_ATTR_COUNT; a++) {
        OTF2_StringRef name = STRING_EMPTY, description = STRING_EMPTY;
        OTFX_TRY(define_string(x, otfx_otf2_attributes[a].name, &name));
        OTFX_TRY(define_string(x, otfx_otf2_attributes[a].description, &description));
        if (a == OTFX_OTF2_ATTR_PLACEHOLDER)
            placeholder_name = name;
        OTF2_TRY(OTF2_GlobalDefWriter_WriteAttribute(x->global, (OTF2_AttributeRef)a, name, description,
                                                     otfx_otf2_attributes[a].type),
                 "writing an attribute definition");
    }
    OTFX_TRY(define_system_tree(x, placeholder_name));
    OTFX_TRY(define_regions(x));
    OTFX_TRY(define_comms(x, world_size));
    OTFX_TRY(define_metrics(x));
    OTF2_TRY(OTF2_Archive_CloseGlobalDefWriter(x->archive, x->global), "closing the global definitions");
    x->global = NULL;
    return OTFX_OK;
}

otfx_status export_add_location(exporter *x, uint32_t rank, uint32_t thread, uint64_t events,
                                bool placeholder)
{
    if (!otfx_reserve((void **)&x->locations, &x->location_capacity, x->location_count + 1,
                      sizeof *x->locations, 16))
        return out_of_memory();
    x->locations[x->location_count++] = (exported_location){rank, thread, events, placeholder};
    return OTFX_OK;
}

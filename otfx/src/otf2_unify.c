/* otf2_unify.c — definitions as bytes and their union, for the shared OTF2 export (otf2_unify.h). */
#include "otf2_unify.h"

#include "error.h"
#include <otfx/support/growth.h>

#include <stdlib.h>
#include <string.h>

static void put(otfx_bytes *bytes, const void *data, size_t size)
{
    if (bytes->out_of_memory)
        return;
    if (size > SIZE_MAX - bytes->size ||
        !otfx_reserve((void **)&bytes->data, &bytes->capacity, bytes->size + size, 1, 256)) {
        bytes->out_of_memory = true;
        return;
    }
    memcpy(bytes->data + bytes->size, data, size);
    bytes->size += size;
}

void otfx_bytes_u32(otfx_bytes *bytes, uint32_t value)
{
    put(bytes, &value, sizeof value);
}

void otfx_bytes_u64(otfx_bytes *bytes, uint64_t value)
{
    put(bytes, &value, sizeof value);
}

void otfx_bytes_text(otfx_bytes *bytes, const char *text)
{
    size_t length = text ? strlen(text) : 0;
    if (length > UINT32_MAX - 1) {
        bytes->out_of_memory = true;
        return;
    }
    otfx_bytes_u32(bytes, (uint32_t)length);
    put(bytes, text ? text : "", length);
    put(bytes, "", 1);
}

void otfx_bytes_free(otfx_bytes *bytes)
{
    free(bytes->data);
    *bytes = (otfx_bytes){0};
}

static bool take(otfx_byte_reader *reader, void *out, size_t size)
{
    if (reader->bad || reader->left < size) {
        reader->bad = true;
        memset(out, 0, size);
        return false;
    }
    memcpy(out, reader->at, size);
    reader->at += size;
    reader->left -= size;
    return true;
}

uint32_t otfx_read_u32(otfx_byte_reader *reader)
{
    uint32_t value;
    take(reader, &value, sizeof value);
    return value;
}

uint64_t otfx_read_u64(otfx_byte_reader *reader)
{
    uint64_t value;
    take(reader, &value, sizeof value);
    return value;
}

const char *otfx_read_text(otfx_byte_reader *reader)
{
    uint32_t length = otfx_read_u32(reader);
    if (reader->bad || reader->left < (size_t)length + 1 || reader->at[length] != '\0' ||
        memchr(reader->at, '\0', length)) {
        reader->bad = true;
        return "";
    }
    const char *text = (const char *)reader->at;
    reader->at += (size_t)length + 1;
    reader->left -= (size_t)length + 1;
    return text;
}

otfx_status otfx_otf2_defs_write(otfx_defs *defs, otfx_bytes *out)
{
    uint32_t regions = otfx_defs_count_regions(defs);
    otfx_bytes_u32(out, regions);
    for (uint32_t r = 0; r < regions; r++) {
        otfx_region_def def;
        otfx_status status = otfx_defs_get_region(defs, r, &def);
        if (status != OTFX_OK)
            return status;
        otfx_bytes_u32(out, (uint32_t)def.role);
        otfx_bytes_text(out, def.name);
    }
    uint32_t comms = otfx_defs_count_comms(defs);
    otfx_bytes_u32(out, comms);
    for (uint32_t c = 0; c < comms; c++) {
        otfx_comm_def def;
        otfx_status status = otfx_defs_get_comm(defs, c, &def);
        if (status != OTFX_OK)
            return status;
        otfx_bytes_text(out, def.name);
        otfx_bytes_u32(out, def.size);
        for (uint32_t i = 0; i < def.size; i++)
            otfx_bytes_u32(out, def.world_ranks[i]);
    }
    uint32_t metrics = otfx_defs_count_metrics(defs);
    otfx_bytes_u32(out, metrics);
    for (uint32_t m = 0; m < metrics; m++) {
        otfx_metric_def def;
        otfx_status status = otfx_defs_get_metric(defs, m, &def);
        if (status != OTFX_OK)
            return status;
        otfx_bytes_u32(out, (uint32_t)def.type);
        otfx_bytes_text(out, def.name);
        otfx_bytes_u32(out, def.unit != NULL);
        otfx_bytes_text(out, def.unit);
    }
    if (out->out_of_memory)
        return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory for the definitions");
    return OTFX_OK;
}

static otfx_status malformed(void)
{
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 export: malformed definitions from another process");
}

/* A count read from the bytes, refused when the bytes cannot hold that many items of `least` bytes. */
static bool read_count(otfx_byte_reader *in, size_t least, uint32_t *count)
{
    *count = otfx_read_u32(in);
    if (in->bad || (size_t)*count > in->left / least) {
        in->bad = true;
        return false;
    }
    return true;
}

static otfx_status merge_regions(otfx_byte_reader *in, otfx_defs *into, otfx_otf2_def_map *map)
{
    uint32_t count;
    if (!read_count(in, 9, &count))
        return malformed();
    if (map && !(map->regions = malloc(((size_t)count + 1) * sizeof *map->regions)))
        return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory for the definitions");
    for (uint32_t r = 0; r < count; r++) {
        uint32_t role = otfx_read_u32(in);
        const char *name = otfx_read_text(in);
        otfx_ref ref;
        if (in->bad || role >= OTFX_ROLE_COUNT)
            return malformed();
        otfx_status status = otfx_defs_region(into, name, (otfx_region_role)role, &ref);
        if (status != OTFX_OK)
            return status;
        if (map)
            map->regions[map->region_count++] = ref;
    }
    return OTFX_OK;
}

static otfx_status merge_comms(otfx_byte_reader *in, otfx_defs *into, otfx_otf2_def_map *map)
{
    uint32_t count;
    if (!read_count(in, 9, &count))
        return malformed();
    if (map && !(map->comms = malloc(((size_t)count + 1) * sizeof *map->comms)))
        return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory for the definitions");
    uint32_t *members = NULL;
    size_t member_capacity = 0;
    otfx_status status = OTFX_OK;
    for (uint32_t c = 0; c < count && status == OTFX_OK; c++) {
        const char *name = otfx_read_text(in);
        uint32_t size;
        if (!read_count(in, sizeof(uint32_t), &size)) {
            status = malformed();
            break;
        }
        if (!otfx_reserve((void **)&members, &member_capacity, (size_t)size + 1, sizeof *members, 16)) {
            status = otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory for the definitions");
            break;
        }
        for (uint32_t i = 0; i < size; i++)
            members[i] = otfx_read_u32(in);
        otfx_ref ref;
        status = in->bad ? malformed() : otfx_defs_comm(into, name, members, size, &ref);
        if (status == OTFX_OK && map)
            map->comms[map->comm_count++] = ref;
    }
    free(members);
    return status;
}

static otfx_status merge_metrics(otfx_byte_reader *in, otfx_defs *into, otfx_otf2_def_map *map)
{
    uint32_t count;
    if (!read_count(in, 18, &count))
        return malformed();
    if (map && !(map->metrics = malloc(((size_t)count + 1) * sizeof *map->metrics)))
        return otfx_fail(OTFX_ERR_NOMEM, "OTF2 export: out of memory for the definitions");
    for (uint32_t m = 0; m < count; m++) {
        uint32_t type = otfx_read_u32(in);
        const char *name = otfx_read_text(in);
        uint32_t has_unit = otfx_read_u32(in);
        const char *unit = otfx_read_text(in);
        if (in->bad || type > OTFX_METRIC_DOUBLE)
            return malformed();
        otfx_ref ref;
        otfx_status status =
            otfx_defs_metric(into, name, has_unit ? unit : NULL, (otfx_metric_type)type, &ref);
        if (status != OTFX_OK)
            return status;
        if (map)
            map->metrics[map->metric_count++] = ref;
    }
    return OTFX_OK;
}

otfx_status otfx_otf2_defs_merge(otfx_byte_reader *in, otfx_defs *into, otfx_otf2_def_map *map)
{
    if (map)
        *map = (otfx_otf2_def_map){0};
    otfx_status status = merge_regions(in, into, map);
    if (status == OTFX_OK)
        status = merge_comms(in, into, map);
    if (status == OTFX_OK)
        status = merge_metrics(in, into, map);
    if (status != OTFX_OK && map)
        otfx_otf2_def_map_free(map);
    return status;
}

void otfx_otf2_def_map_free(otfx_otf2_def_map *map)
{
    free(map->regions);
    free(map->comms);
    free(map->metrics);
    *map = (otfx_otf2_def_map){0};
}

static bool identity(const otfx_ref *refs, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        if (refs[i] != i)
            return false;
    return true;
}

bool otfx_otf2_def_map_is_identity(const otfx_otf2_def_map *map)
{
    return identity(map->regions, map->region_count) && identity(map->comms, map->comm_count) &&
           identity(map->metrics, map->metric_count);
}

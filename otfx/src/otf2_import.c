/* otf2_import.c — reads an OTF2 archive (ours or another tool's) into otfx traces.
 *
 * The global definitions are read first and kept as OTF2 wrote them; they are turned into otfx
 * definitions once all are known (OTF2 does not promise that a definition comes after those it names).
 * Communicators and metric classes are resolved only when an event uses them, so definitions otfx
 * has no use for (OpenMP thread teams, I/O) cannot make an import fail. Then every location's events
 * are read in order and appended, in batches, to its trace. Anything malformed stops the import with
 * an error and leaves nothing behind. */
#define _POSIX_C_SOURCE 200809L
#include "otf2_common.h"
#include <otfx/support/growth.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { APPEND_BATCH = 1024 };

/* Prefix of the error messages of OTF2_TRY (otf2_common.h). */
#define OTF2_TRY_CONTEXT "OTF2 import: "

static otfx_status out_of_memory(void)
{
    return otfx_fail(OTFX_ERR_NOMEM, "OTF2 import: out of memory");
}

/* Appends one element of `size` bytes to *items and returns it zeroed, NULL when out of memory. */
static void *push(void **items, size_t *count, size_t *capacity, size_t size)
{
    if (!otfx_reserve(items, capacity, *count + 1, size, 16))
        return NULL;
    void *item = (char *)*items + (*count)++ * size;
    memset(item, 0, size);
    return item;
}

/* ---------------------------------------------------------------------------------------------
 * OTF2 reference -> index into one of the importer's arrays. OTF2 references are arbitrary 32- or
 * 64-bit numbers (an archive may be hostile), so a hash table rather than an array indexed by them.
 * -------------------------------------------------------------------------------------------- */

typedef struct id_map {
    uint64_t *keys;
    uint32_t *values; /* index + 1; 0 = empty slot */
    size_t capacity, count;
} id_map;

static size_t id_slot(uint64_t key, size_t capacity)
{
    key ^= key >> 33;
    key *= UINT64_C(0xff51afd7ed558ccd);
    key ^= key >> 33;
    return (size_t)key & (capacity - 1);
}

static bool id_map_find(const id_map *map, uint64_t key, uint32_t *index)
{
    if (map->count == 0)
        return false;
    for (size_t slot = id_slot(key, map->capacity);; slot = (slot + 1) & (map->capacity - 1)) {
        if (map->values[slot] == 0)
            return false;
        if (map->keys[slot] == key) {
            *index = map->values[slot] - 1;
            return true;
        }
    }
}

/* Adds key -> index; false when out of memory. A key defined twice keeps its first index. */
static bool id_map_add(id_map *map, uint64_t key, uint32_t index)
{
    if (2 * (map->count + 1) > map->capacity) {
        size_t capacity = map->capacity ? 2 * map->capacity : 64;
        uint64_t *keys = calloc(capacity, sizeof *keys);
        uint32_t *values = calloc(capacity, sizeof *values);
        if (!keys || !values) {
            free(keys);
            free(values);
            return false;
        }
        for (size_t slot = 0; slot < map->capacity; slot++) {
            if (map->values[slot] == 0)
                continue;
            size_t moved = id_slot(map->keys[slot], capacity);
            while (values[moved] != 0)
                moved = (moved + 1) & (capacity - 1);
            keys[moved] = map->keys[slot];
            values[moved] = map->values[slot];
        }
        free(map->keys);
        free(map->values);
        map->keys = keys;
        map->values = values;
        map->capacity = capacity;
    }
    size_t slot = id_slot(key, map->capacity);
    while (map->values[slot] != 0) {
        if (map->keys[slot] == key)
            return true;
        slot = (slot + 1) & (map->capacity - 1);
    }
    map->keys[slot] = key;
    map->values[slot] = index + 1;
    map->count++;
    return true;
}

static void id_map_free(id_map *map)
{
    free(map->keys);
    free(map->values);
}

/* ---------------------------------------------------------------------------------------------
 * Definitions as read
 * -------------------------------------------------------------------------------------------- */

typedef struct string_def {
    char *text;
} string_def;

typedef struct attribute_def {
    OTF2_AttributeRef self;
    OTF2_StringRef name;
    OTF2_Type type;
} attribute_def;

typedef struct location_def {
    OTF2_LocationRef self;
    OTF2_LocationGroupRef group;
    bool placeholder;
    uint32_t rank, thread;
    otfx_trace *trace;
} location_def;

typedef struct location_property_def {
    OTF2_LocationRef location;
    OTF2_StringRef name;
} location_property_def;

typedef struct region_def {
    OTF2_StringRef name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
    bool reduced; /* "otfx reduced: <strategy>": its visits are reduction records */
    otfx_reduction strategy;
    otfx_ref ref;
} region_def;

typedef struct group_def {
    OTF2_GroupType type;
    OTF2_GroupFlag flags;
    uint32_t size;
    uint64_t *members;
} group_def;

typedef struct comm_def {
    OTF2_StringRef name;
    OTF2_GroupRef group;
    bool resolved;
    bool self;           /* MPI_COMM_SELF-like: its only member is the location's own rank */
    bool global_members; /* events name world ranks directly */
    otfx_ref ref;
    uint32_t size;
    uint32_t *world_ranks;
    otfx_ref *self_refs; /* per location, for self-like communicators */
} comm_def;

typedef struct metric_member_def {
    OTF2_StringRef name, unit;
    OTF2_Type type;
    bool resolved;
    otfx_ref ref;
} metric_member_def;

typedef struct metric_def {
    bool instance;           /* a metric instance: uses the members of class `of_class` */
    OTF2_MetricRef of_class; /* instances only */
    uint8_t count;
    OTF2_MetricMemberRef *members;
    bool resolved;
    otfx_ref *refs;
} metric_def;

typedef struct importer {
    otfx_defs *defs;
    const otfx_trace_config *config;
    OTF2_Reader *reader;
    otfx_status status; /* first failure inside a callback */
    const char *anchor_path;
    uint64_t definition_chunk_size;

    uint64_t timer_resolution;

#define OTFX_DEFINITION_TABLE(type, name)                                                                    \
    type *name;                                                                                              \
    size_t name##_count, name##_capacity;
    OTFX_DEFINITION_TABLE(string_def, strings)
    OTFX_DEFINITION_TABLE(attribute_def, attributes)
    OTFX_DEFINITION_TABLE(location_def, locations)
    OTFX_DEFINITION_TABLE(location_property_def, location_properties)
    OTFX_DEFINITION_TABLE(region_def, regions)
    OTFX_DEFINITION_TABLE(group_def, groups)
    OTFX_DEFINITION_TABLE(comm_def, comms)
    OTFX_DEFINITION_TABLE(metric_member_def, metric_members)
    OTFX_DEFINITION_TABLE(metric_def, metrics)
#undef OTFX_DEFINITION_TABLE
    id_map string_ids, region_ids, group_ids, comm_ids, metric_member_ids, metric_ids, location_ids;

    OTF2_AttributeRef attribute_refs[OTFX_OTF2_ATTR_COUNT]; /* OTF2_UNDEFINED_ATTRIBUTE: not in archive */
    otfx_import_stats stats;
} importer;

static otfx_status corrupt(const char *what, uint64_t ref)
{
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: %s %llu is not defined", what, (unsigned long long)ref);
}

static otfx_status string_of(const importer *im, OTF2_StringRef ref, const char **text)
{
    uint32_t index;
    if (!id_map_find(&im->string_ids, ref, &index))
        return corrupt("string", ref);
    *text = im->strings[index].text;
    return OTFX_OK;
}

/* Appends a definition to one of the importer's tables and, when `map` is given, makes `ref` name it.
 * On failure sets im->status and returns NULL. */
#define APPEND(im, table, map, ref, what)                                                                    \
    ((__typeof__((im)->table))append_definition(im, (void **)&(im)->table, &(im)->table##_count,             \
                                                &(im)->table##_capacity, sizeof *(im)->table, map, ref,      \
                                                what))

static void *append_definition(importer *im, void **items, size_t *count, size_t *capacity, size_t size,
                               id_map *map, uint64_t ref, const char *what)
{
    uint32_t existing;
    if (map && id_map_find(map, ref, &existing)) {
        im->status =
            otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: %s %llu defined twice", what, (unsigned long long)ref);
        return NULL;
    }
    if (*count >= UINT32_MAX - 1) {
        im->status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: too many %s definitions", what);
        return NULL;
    }
    uint32_t index = (uint32_t)*count;
    void *item = push(items, count, capacity, size);
    if (!item || (map && !id_map_add(map, ref, index))) {
        im->status = out_of_memory();
        return NULL;
    }
    return item;
}

static OTF2_CallbackCode on_clock_properties(void *user, uint64_t resolution, uint64_t offset,
                                             uint64_t length, uint64_t realtime)
{
    (void)offset;
    (void)length;
    (void)realtime;
    importer *im = user;
    if (resolution == 0) {
        im->status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: timer resolution 0");
        return OTF2_CALLBACK_ERROR;
    }
    im->timer_resolution = resolution;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_string(void *user, OTF2_StringRef self, const char *text)
{
    importer *im = user;
    string_def *def = APPEND(im, strings, &im->string_ids, self, "string");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    def->text = strdup(text ? text : "");
    if (!def->text) {
        im->status = out_of_memory();
        return OTF2_CALLBACK_ERROR;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_attribute(void *user, OTF2_AttributeRef self, OTF2_StringRef name,
                                      OTF2_StringRef description, OTF2_Type type)
{
    (void)description;
    importer *im = user;
    attribute_def *def = APPEND(im, attributes, NULL, self, "attribute");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    *def = (attribute_def){self, name, type};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location(void *user, OTF2_LocationRef self, OTF2_StringRef name,
                                     OTF2_LocationType type, uint64_t events, OTF2_LocationGroupRef group)
{
    (void)name;
    (void)type;
    (void)events;
    importer *im = user;
    location_def *def = APPEND(im, locations, &im->location_ids, self, "location");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    def->self = self;
    def->group = group;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location_property(void *user, OTF2_LocationRef location, OTF2_StringRef name,
                                              OTF2_Type type, OTF2_AttributeValue value)
{
    (void)type;
    (void)value;
    importer *im = user;
    location_property_def *def = APPEND(im, location_properties, NULL, location, "location property");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    *def = (location_property_def){location, name};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_region(void *user, OTF2_RegionRef self, OTF2_StringRef name,
                                   OTF2_StringRef canonical_name, OTF2_StringRef description,
                                   OTF2_RegionRole role, OTF2_Paradigm paradigm, OTF2_RegionFlag flags,
                                   OTF2_StringRef file, uint32_t begin_line, uint32_t end_line)
{
    (void)canonical_name;
    (void)description;
    (void)flags;
    (void)file;
    (void)begin_line;
    (void)end_line;
    importer *im = user;
    region_def *def = APPEND(im, regions, &im->region_ids, self, "region");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    *def = (region_def){.name = name, .role = role, .paradigm = paradigm, .ref = OTFX_REF_NONE};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_group(void *user, OTF2_GroupRef self, OTF2_StringRef name, OTF2_GroupType type,
                                  OTF2_Paradigm paradigm, OTF2_GroupFlag flags, uint32_t size,
                                  const uint64_t *members)
{
    (void)name;
    (void)paradigm;
    importer *im = user;
    group_def *def = APPEND(im, groups, &im->group_ids, self, "group");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    *def = (group_def){.type = type, .flags = flags, .size = size};
    def->members = malloc((size ? size : 1) * sizeof *members);
    if (!def->members) {
        im->status = out_of_memory();
        return OTF2_CALLBACK_ERROR;
    }
    if (size)
        memcpy(def->members, members, size * sizeof *members);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_comm(void *user, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group,
                                 OTF2_CommRef parent, OTF2_CommFlag flags)
{
    (void)parent;
    (void)flags;
    importer *im = user;
    comm_def *def = APPEND(im, comms, &im->comm_ids, self, "communicator");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    *def = (comm_def){.name = name, .group = group, .ref = OTFX_REF_NONE};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_metric_member(void *user, OTF2_MetricMemberRef self, OTF2_StringRef name,
                                          OTF2_StringRef description, OTF2_MetricType metric_type,
                                          OTF2_MetricMode mode, OTF2_Type type, OTF2_Base base,
                                          int64_t exponent, OTF2_StringRef unit)
{
    (void)description;
    (void)metric_type;
    (void)mode;
    (void)base;
    (void)exponent;
    importer *im = user;
    metric_member_def *def = APPEND(im, metric_members, &im->metric_member_ids, self, "metric member");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    *def = (metric_member_def){.name = name, .unit = unit, .type = type, .ref = OTFX_REF_NONE};
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_metric_class(void *user, OTF2_MetricRef self, uint8_t count,
                                         const OTF2_MetricMemberRef *members,
                                         OTF2_MetricOccurrence occurrence, OTF2_RecorderKind recorder)
{
    (void)occurrence;
    (void)recorder;
    importer *im = user;
    metric_def *def = APPEND(im, metrics, &im->metric_ids, self, "metric");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    def->count = count;
    def->members = malloc((count ? count : 1) * sizeof *members);
    if (!def->members) {
        im->status = out_of_memory();
        return OTF2_CALLBACK_ERROR;
    }
    if (count)
        memcpy(def->members, members, count * sizeof *members);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_metric_instance(void *user, OTF2_MetricRef self, OTF2_MetricRef of_class,
                                            OTF2_LocationRef recorder, OTF2_MetricScope scope_type,
                                            uint64_t scope)
{
    (void)recorder;
    (void)scope_type;
    (void)scope;
    importer *im = user;
    metric_def *def = APPEND(im, metrics, &im->metric_ids, self, "metric");
    if (!def)
        return OTF2_CALLBACK_ERROR;
    def->instance = true;
    def->of_class = of_class;
    return OTF2_CALLBACK_SUCCESS;
}

/* ---------------------------------------------------------------------------------------------
 * Guarding OTF2's definition readers. OTF2 3.0.2 reads the arrays of some definition records with
 * the length the file claims, without checking it against the record: it allocates that much (an
 * id map's size times 8 can overflow), reads past the record when it is shorter, and leaks the id map
 * of a MappingTable record it fails to read. Definition files are therefore checked before OTF2 reads
 * them: chunk headers, record framing, and the arrays of MappingTable, Group and MetricClass records
 * must lie inside their record, and the last chunk must end the file. (Event files are not checked: their
 * framing is more involved; see docs/otfx-format.md.) The layout is OTF2's: chunks of the archive's
 * definition chunk size, each starting with a header (type 3, byte order, two 64-bit event numbers), then
 * records (type byte, length byte or 0xff and a 64-bit length, payload) up to an end-of-chunk (0) or
 * end-of-file (2) marker; integers are "compressed" (a byte count 0-8, 0xff for "undefined", then that many
 * bytes).
 * -------------------------------------------------------------------------------------------- */

enum {
    CHUNK_HEADER = 3,
    CHUNK_HEADER_BYTES = 18,
    END_OF_CHUNK = 0,
    END_OF_FILE = 2,
    BYTE_ORDER_LITTLE = 0x42,
    BYTE_ORDER_BIG = 0x23,
    RECORD_LOCAL_MAPPING_TABLE = 5, /* in global definitions 5 is ClockProperties */
    RECORD_GROUP = 18,
    RECORD_METRIC_CLASS = 20,
};

typedef struct byte_reader {
    const uint8_t *at, *end;
    bool big_endian;
} byte_reader;

static bool read_byte(byte_reader *in, uint8_t *value)
{
    if (in->at >= in->end)
        return false;
    *value = *in->at++;
    return true;
}

static bool read_full64(byte_reader *in, uint64_t *value)
{
    if (in->end - in->at < 8)
        return false;
    *value = 0;
    for (int b = 0; b < 8; b++)
        *value |= (uint64_t)in->at[b] << (in->big_endian ? 8 * (7 - b) : 8 * b);
    in->at += 8;
    return true;
}

/* An OTF2 compressed integer of at most `width` bytes (4 for 32-bit fields, 8 for 64-bit ones). */
static bool read_compressed(byte_reader *in, int width, uint64_t *value)
{
    uint8_t size;
    if (!read_byte(in, &size))
        return false;
    if (size == 0 || size == 0xff) {
        *value = size == 0 ? 0 : UINT64_MAX;
        return true;
    }
    if (size > width || in->end - in->at < size)
        return false;
    *value = 0;
    for (int b = 0; b < size; b++)
        *value |= (uint64_t)in->at[b] << (in->big_endian ? 8 * (size - 1 - b) : 8 * b);
    in->at += size;
    return true;
}

/* `count` compressed integers inside the record; none may lie beyond it. */
static bool skip_compressed(byte_reader *in, int width, uint64_t count)
{
    uint64_t value;
    if (count > (uint64_t)(in->end - in->at))
        return false; /* each takes at least one byte */
    for (uint64_t i = 0; i < count; i++)
        if (!read_compressed(in, width, &value))
            return false;
    return true;
}

/* The fields OTF2 reads of the records it mishandles, in OTF2 3.0's layout (later fields are optional:
 * OTF2 reads them when the record has room for them). */
static bool record_fields_fit(uint8_t type, bool local, byte_reader *payload)
{
    uint64_t value, count;
    uint8_t byte;
    if (local && type == RECORD_LOCAL_MAPPING_TABLE) {
        uint8_t mode;
        return read_byte(payload, &byte) && read_compressed(payload, 8, &count) &&
               read_byte(payload, &mode) && mode <= OTF2_ID_MAP_SPARSE && count > 0 && count != UINT64_MAX &&
               skip_compressed(payload, 8, mode == OTF2_ID_MAP_SPARSE ? 2 * count : count);
    }
    if (type == RECORD_GROUP) {
        if (!read_compressed(payload, 4, &value) || !read_compressed(payload, 4, &value) ||
            !read_byte(payload, &byte) || !read_compressed(payload, 4, &count) || count == UINT64_MAX ||
            !skip_compressed(payload, 8, count))
            return false;
        return payload->at == payload->end || (read_byte(payload, &byte) && read_byte(payload, &byte) &&
                                               read_compressed(payload, 4, &value));
    }
    if (type == RECORD_METRIC_CLASS)
        return read_compressed(payload, 4, &value) && read_byte(payload, &byte) &&
               skip_compressed(payload, 4, byte) && read_byte(payload, &byte);
    return true;
}

/* The marker that ends a sound chunk (END_OF_CHUNK or END_OF_FILE), or -1. */
static int chunk_end_marker(const uint8_t *chunk, size_t size, bool local)
{
    if (size < CHUNK_HEADER_BYTES || chunk[0] != CHUNK_HEADER ||
        (chunk[1] != BYTE_ORDER_LITTLE && chunk[1] != BYTE_ORDER_BIG))
        return -1;
    byte_reader in = {chunk + CHUNK_HEADER_BYTES, chunk + size, chunk[1] == BYTE_ORDER_BIG};
    uint8_t type, short_length;
    while (read_byte(&in, &type)) {
        if (type == END_OF_CHUNK || type == END_OF_FILE)
            return type;
        uint64_t length;
        if (!read_byte(&in, &short_length))
            return -1;
        length = short_length;
        if (short_length == 0xff && !read_full64(&in, &length))
            return -1;
        if (length >= (uint64_t)(in.end - in.at)) /* OTF2 wants the record and one more byte */
            return -1;
        byte_reader payload = {in.at, in.at + length, in.big_endian};
        if (!record_fields_fit(type, local, &payload))
            return -1;
        in.at += length;
    }
    return -1;
}

/* Every chunk sound, and the last one ends the file: OTF2 3.0.2 reads "the next chunk" forever when
 * the last one ends with an end-of-chunk marker. */
static otfx_status check_definition_file(const char *path, uint64_t chunk_size, bool local)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return OTFX_OK; /* OTF2 reports a missing file itself (and local ones are optional) */
    bool size_ok = chunk_size > 0 && chunk_size <= (UINT64_C(1) << 30);
    uint8_t *chunk = size_ok ? malloc(chunk_size) : NULL;
    otfx_status status = OTFX_OK;
    if (!chunk)
        status = size_ok ? out_of_memory()
                         : otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: definition chunk size %llu",
                                     (unsigned long long)chunk_size);
    int marker = END_OF_CHUNK;
    size_t read;
    while (status == OTFX_OK && marker == END_OF_CHUNK && (read = fread(chunk, 1, chunk_size, file)) > 0)
        marker = chunk_end_marker(chunk, read, local);
    if (status == OTFX_OK && marker != END_OF_FILE)
        status = otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: %s: malformed definitions", path);
    fclose(file);
    free(chunk);
    return status;
}

/* `<archive>` of `<archive>.otf2` followed by `suffix`. */
static char *archive_path(const char *anchor_path, const char *suffix)
{
    size_t base = strlen(anchor_path);
    if (base >= 5 && strcmp(anchor_path + base - 5, ".otf2") == 0)
        base -= 5;
    size_t size = base + strlen(suffix) + 1;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%.*s%s", (int)base, anchor_path, suffix);
    return path;
}

static otfx_status read_global_definitions(importer *im)
{
    char *path = archive_path(im->anchor_path, ".def");
    if (!path)
        return out_of_memory();
    otfx_status checked = check_definition_file(path, im->definition_chunk_size, false);
    free(path);
    OTFX_TRY(checked);
    OTF2_GlobalDefReader *reader = OTF2_Reader_GetGlobalDefReader(im->reader);
    if (!reader)
        return otfx_otf2_fail_call(OTF2_ERROR_FILE_CAN_NOT_OPEN,
                                   "OTF2 import: opening the global definitions");
    OTF2_GlobalDefReaderCallbacks *callbacks = OTF2_GlobalDefReaderCallbacks_New();
    if (!callbacks)
        return out_of_memory();
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(callbacks, on_clock_properties);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(callbacks, on_string);
    OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(callbacks, on_attribute);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(callbacks, on_location);
    OTF2_GlobalDefReaderCallbacks_SetLocationPropertyCallback(callbacks, on_location_property);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(callbacks, on_region);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(callbacks, on_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(callbacks, on_comm);
    OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(callbacks, on_metric_member);
    OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(callbacks, on_metric_class);
    OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(callbacks, on_metric_instance);
    OTF2_ErrorCode code = OTF2_Reader_RegisterGlobalDefCallbacks(im->reader, reader, callbacks, im);
    OTF2_GlobalDefReaderCallbacks_Delete(callbacks);
    uint64_t read = 0;
    if (code == OTF2_SUCCESS)
        code = OTF2_Reader_ReadAllGlobalDefinitions(im->reader, reader, &read);
    if (code != OTF2_SUCCESS)
        return im->status != OTFX_OK
                   ? im->status
                   : otfx_otf2_fail_call(code, "OTF2 import: reading the global definitions");
    return OTFX_OK;
}

/* ---------------------------------------------------------------------------------------------
 * From OTF2 definitions to otfx definitions and traces
 * -------------------------------------------------------------------------------------------- */

static otfx_status resolve_attributes(importer *im)
{
    for (int a = 0; a < OTFX_OTF2_ATTR_COUNT; a++)
        im->attribute_refs[a] = OTF2_UNDEFINED_ATTRIBUTE;
    for (size_t i = 0; i < im->attributes_count; i++) {
        const attribute_def *def = &im->attributes[i];
        const char *name = NULL;
        OTFX_TRY(string_of(im, def->name, &name));
        for (int a = 0; a < OTFX_OTF2_ATTR_COUNT; a++)
            if (strcmp(name, otfx_otf2_attributes[a].name) == 0 && def->type == otfx_otf2_attributes[a].type)
                im->attribute_refs[a] = def->self;
    }
    return OTFX_OK;
}

static otfx_status resolve_regions(importer *im)
{
    size_t prefix = strlen(OTFX_OTF2_REDUCED_PREFIX);
    for (size_t i = 0; i < im->regions_count; i++) {
        region_def *def = &im->regions[i];
        const char *name = NULL;
        OTFX_TRY(string_of(im, def->name, &name));
        if (def->role == OTFX_OTF2_REDUCED_ROLE && def->paradigm == OTFX_OTF2_REDUCED_PARADIGM &&
            strncmp(name, OTFX_OTF2_REDUCED_PREFIX, prefix) == 0) {
            for (int strategy = 0; strategy < OTFX_REDUCE_COUNT && !def->reduced; strategy++) {
                if (strcmp(name + prefix, otfx_reduction_name((otfx_reduction)strategy)) == 0) {
                    def->reduced = true;
                    def->strategy = (otfx_reduction)strategy;
                }
            }
            if (def->reduced)
                continue;
        }
        OTFX_TRY(
            otfx_defs_region(im->defs, name, otfx_otf2_role_from_otf2(def->role, def->paradigm), &def->ref));
    }
    return OTFX_OK;
}

static int compare_locations(const void *a, const void *b)
{
    const location_def *left = a, *right = b;
    if (left->rank != right->rank)
        return (left->rank > right->rank) - (left->rank < right->rank);
    return (left->thread > right->thread) - (left->thread < right->thread);
}

/* Rank and thread of each location. Rank = location group (OTF2 asks MPI tools to number process
 * groups by rank). Thread: when every location id follows the otfx/Score-P scheme (thread << 32 |
 * rank) it is taken from the id, else locations are numbered in definition order within their group. */
static otfx_status resolve_locations(importer *im)
{
    const char *placeholder = otfx_otf2_attributes[OTFX_OTF2_ATTR_PLACEHOLDER].name;
    for (size_t p = 0; p < im->location_properties_count; p++) {
        const char *name = NULL;
        uint32_t index;
        OTFX_TRY(string_of(im, im->location_properties[p].name, &name));
        if (strcmp(name, placeholder) != 0)
            continue;
        if (!id_map_find(&im->location_ids, im->location_properties[p].location, &index))
            return corrupt("location", im->location_properties[p].location);
        im->locations[index].placeholder = true;
    }
    bool scheme = true;
    for (size_t l = 0; l < im->locations_count; l++) {
        const location_def *def = &im->locations[l];
        if (def->group == OTF2_UNDEFINED_LOCATION_GROUP)
            return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: location %llu has no location group",
                             (unsigned long long)def->self);
        scheme = scheme && def->self == otfx_otf2_location_id(def->group, (uint32_t)(def->self >> 32));
    }
    id_map threads_of_group = {0}; /* group -> index into thread_counts */
    uint32_t *thread_counts = calloc(im->locations_count + 1, sizeof *thread_counts);
    size_t groups = 0;
    if (!thread_counts)
        return out_of_memory();
    for (size_t l = 0; l < im->locations_count; l++) {
        location_def *def = &im->locations[l];
        def->rank = def->group;
        if (scheme) {
            def->thread = (uint32_t)(def->self >> 32);
            continue;
        }
        uint32_t group;
        if (!id_map_find(&threads_of_group, def->group, &group)) {
            group = (uint32_t)groups++;
            if (!id_map_add(&threads_of_group, def->group, group)) {
                id_map_free(&threads_of_group);
                free(thread_counts);
                return out_of_memory();
            }
        }
        def->thread = thread_counts[group]++;
    }
    id_map_free(&threads_of_group);
    free(thread_counts);
    /* Traces in rank and thread order; the id map is rebuilt to follow. */
    otfx_otf2_sort(im->locations, im->locations_count, sizeof *im->locations, compare_locations);
    id_map_free(&im->location_ids);
    im->location_ids = (id_map){0};
    for (size_t l = 0; l < im->locations_count; l++)
        if (!id_map_add(&im->location_ids, im->locations[l].self, (uint32_t)l))
            return out_of_memory();
    for (size_t l = 0; l < im->locations_count; l++) {
        location_def *def = &im->locations[l];
        if (def->placeholder) {
            im->stats.placeholders_skipped++;
            continue;
        }
        otfx_ref ref;
        OTFX_TRY(otfx_defs_location(im->defs, def->rank, def->thread, &ref));
        OTFX_TRY(otfx_trace_create(im->config, im->defs, ref, &def->trace));
    }
    return OTFX_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Events
 * -------------------------------------------------------------------------------------------- */

typedef struct location_import {
    importer *im;
    location_def *location;
    size_t index;
    otfx_event *batch;
    size_t batched;
    uint64_t handled; /* records that became events (or parts of one) */
    uint64_t position;
    /* Reduction records read from their first piece, waiting for their own time in the stream. */
    otfx_event *records;
    size_t record_count, record_capacity;
    /* A phase marker is an Enter with otfx::phase_value and the Leave right after it. */
    bool phase_leave_due;
    OTF2_RegionRef phase_region;
    OTF2_TimeStamp phase_time;
    /* Messages counted per channel end, for their ordinals (deliver_message), and blocking collectives
     * per communicator (deliver_collective). */
    struct channel_count *channels; /* open addressing; `end` 0: free */
    /* 1 + the batch index of a COLL_BEGIN whose COLL_END (which names the communicator) has not come
     * yet; 0: none. */
    size_t open_collective;
    size_t channel_count, channel_slots;
    otfx_status status;
} location_import;

/* One end of a channel at this location: (communicator, peer, tag, sending 1 / receiving 2), or a
 * communicator's blocking collectives (COLLECTIVE_INSTANCES). */
enum { COLLECTIVE_INSTANCES = 3 };
typedef struct channel_count {
    otfx_ref comm;
    uint32_t peer, tag, end;
    uint64_t count;
} channel_count;

static otfx_status event_error(const location_import *li, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static otfx_status event_error(const location_import *li, const char *format, ...)
{
    char detail[160];
    va_list args;
    va_start(args, format);
    vsnprintf(detail, sizeof detail, format, args);
    va_end(args);
    return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: rank %u thread %u, record %llu: %s", li->location->rank,
                     li->location->thread, (unsigned long long)li->position, detail);
}

static otfx_status flush_batch(location_import *li)
{
    if (li->batched == 0)
        return OTFX_OK;
    size_t appended = 0;
    otfx_status status = otfx_trace_append(li->location->trace, li->batch, li->batched, &appended);
    li->im->stats.events_imported += li->batched;
    li->batched = 0;
    /* A trace under `stop` counts what it cannot store: that is its configured behaviour, not a failure. */
    if (status == OTFX_OK || status == OTFX_ERR_STOPPED)
        return OTFX_OK;
    if (status == OTFX_ERR_NOMEM)
        return status;
    char reason[256];
    snprintf(reason, sizeof reason, "%s", otfx_last_error());
    return otfx_fail(OTFX_ERR_CORRUPT,
                     "OTF2 import: rank %u thread %u: the archive's events are not a valid "
                     "otfx stream: %s",
                     li->location->rank, li->location->thread, reason);
}

static otfx_time to_nanoseconds(const importer *im, OTF2_TimeStamp ticks)
{
    uint64_t resolution = im->timer_resolution;
    if (resolution == OTFX_OTF2_TIMER_RESOLUTION)
        return ticks;
    uint64_t seconds = ticks / resolution;
    if (seconds > (OTFX_TIME_MAX - 1) / OTFX_OTF2_TIMER_RESOLUTION - 1)
        return OTFX_TIME_MAX - 1;
    return seconds * OTFX_OTF2_TIMER_RESOLUTION +
           (otfx_time)((long double)(ticks % resolution) * 1e9L / (long double)resolution);
}

static otfx_status append_event(location_import *li, const otfx_event *event)
{
    if (event->type == OTFX_EV_COLL_BEGIN)
        li->open_collective = li->batched + 1;
    li->batch[li->batched++] = *event;
    if (li->batched < APPEND_BATCH)
        return OTFX_OK;
    if (li->open_collective > 1) {
        /* the open COLL_BEGIN and what follows it stay for its COLL_END to complete */
        const size_t kept_from = li->open_collective - 1, count = li->batched;
        li->batched = kept_from;
        otfx_status status = flush_batch(li);
        memmove(li->batch, li->batch + kept_from, (count - kept_from) * sizeof *li->batch);
        li->batched = count - kept_from;
        li->open_collective = 1;
        return status;
    }
    li->open_collective = 0; /* a whole batch inside one collective: its begin stays without instance */
    return flush_batch(li);
}

/* Appends the waiting reduction records whose time lies before `time` (all of them for
 * OTFX_TIME_MAX), in time order. */
static otfx_status release_records(location_import *li, otfx_time time)
{
    size_t released = 0;
    while (released < li->record_count && li->records[released].time < time)
        OTFX_TRY(append_event(li, &li->records[released++]));
    if (released == 0)
        return OTFX_OK;
    memmove(li->records, li->records + released, (li->record_count - released) * sizeof *li->records);
    li->record_count -= released;
    return OTFX_OK;
}

static otfx_status deliver(location_import *li, OTF2_TimeStamp time, otfx_event *event)
{
    if (li->phase_leave_due)
        return event_error(li, "phase marker without its leave");
    event->time = to_nanoseconds(li->im, time);
    OTFX_TRY(release_records(li, event->time));
    return append_event(li, event);
}

/* A reduction record goes into the stream at its own time (which may lie after the first piece of its
 * range); records are kept sorted by time, and one whose time has passed goes in at once. */
static otfx_status defer_record(location_import *li, otfx_event *record, otfx_time now)
{
    if (record->time <= now)
        record->time = now;
    if (!otfx_reserve((void **)&li->records, &li->record_capacity, li->record_count + 1, sizeof *li->records,
                      16))
        return out_of_memory();
    size_t at = li->record_count;
    while (at > 0 && li->records[at - 1].time > record->time)
        at--;
    memmove(li->records + at + 1, li->records + at, (li->record_count - at) * sizeof *li->records);
    li->records[at] = *record;
    li->record_count++;
    return OTFX_OK;
}

static bool get_uint64(const location_import *li, OTF2_AttributeList *attributes, otfx_otf2_attribute which,
                       uint64_t *value)
{
    OTF2_AttributeRef ref = li->im->attribute_refs[which];
    return attributes && ref != OTF2_UNDEFINED_ATTRIBUTE &&
           OTF2_AttributeList_GetUint64(attributes, ref, value) == OTF2_SUCCESS;
}

/* The Enter of a piece of a reduced range: the first piece carries the reduction record. */
static otfx_status import_reduced_piece(location_import *li, const region_def *region, OTF2_TimeStamp time,
                                        OTF2_AttributeList *attributes)
{
    OTF2_AttributeRef piece_ref = li->im->attribute_refs[OTFX_OTF2_ATTR_PIECE];
    uint32_t piece = 0;
    if (attributes && piece_ref != OTF2_UNDEFINED_ATTRIBUTE &&
        OTF2_AttributeList_GetUint32(attributes, piece_ref, &piece) == OTF2_SUCCESS && piece > 0)
        return OTFX_OK;
    uint64_t removed = 0, begin = 0, end = 0, record_time = 0;
    if (!get_uint64(li, attributes, OTFX_OTF2_ATTR_EVENTS_REMOVED, &removed) ||
        !get_uint64(li, attributes, OTFX_OTF2_ATTR_RANGE_BEGIN, &begin) ||
        !get_uint64(li, attributes, OTFX_OTF2_ATTR_RANGE_END, &end) ||
        !get_uint64(li, attributes, OTFX_OTF2_ATTR_RECORD_TIME, &record_time))
        return event_error(li, "reduced range without its otfx::events_removed, otfx::range_begin, "
                               "otfx::range_end and otfx::record_time");
    if (end < begin)
        return event_error(li, "reduced range ends before it begins");
    if (li->phase_leave_due)
        return event_error(li, "phase marker without its leave");
    otfx_event record = {.type = OTFX_EV_REDUCTION, .time = to_nanoseconds(li->im, record_time)};
    record.u.reduction.strategy = region->strategy;
    record.u.reduction.begin = to_nanoseconds(li->im, begin);
    record.u.reduction.end = to_nanoseconds(li->im, end);
    record.u.reduction.events_removed = removed;
    otfx_time now = to_nanoseconds(li->im, time);
    OTFX_TRY(release_records(li, now));
    return defer_record(li, &record, now);
}

/* Payload readers, one per payload shape of OTFX_OTF2_RECORD_TABLE. */

static otfx_status import_REGION(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                 OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    if (li->phase_leave_due) {
        if (type != OTFX_EV_LEAVE || region != li->phase_region || time != li->phase_time)
            return event_error(li, "phase marker without its leave");
        li->phase_leave_due = false;
        return OTFX_OK;
    }
    uint32_t index;
    if (!id_map_find(&li->im->region_ids, region, &index))
        return event_error(li, "region %u is not defined", region);
    const region_def *def = &li->im->regions[index];
    if (def->reduced)
        return type == OTFX_EV_ENTER ? import_reduced_piece(li, def, time, attributes) : OTFX_OK;
    otfx_event event = {.type = type};
    OTF2_AttributeRef phase_ref = li->im->attribute_refs[OTFX_OTF2_ATTR_PHASE_VALUE];
    int64_t phase_value;
    if (type == OTFX_EV_ENTER && attributes && phase_ref != OTF2_UNDEFINED_ATTRIBUTE &&
        OTF2_AttributeList_GetInt64(attributes, phase_ref, &phase_value) == OTF2_SUCCESS) {
        event.type = OTFX_EV_PHASE;
        event.u.phase.region = def->ref;
        event.u.phase.value = phase_value;
        OTFX_TRY(deliver(li, time, &event));
        li->phase_leave_due = true;
        li->phase_region = region;
        li->phase_time = time;
        return OTFX_OK;
    }
    event.u.region.region = def->ref;
    return deliver(li, time, &event);
}

static otfx_status resolve_comm(location_import *li, OTF2_CommRef ref, comm_def **out)
{
    importer *im = li->im;
    uint32_t index;
    if (!id_map_find(&im->comm_ids, ref, &index))
        return event_error(li, "communicator %u is not defined", ref);
    comm_def *comm = &im->comms[index];
    *out = comm;
    if (comm->resolved)
        return OTFX_OK;
    uint32_t group_index;
    if (!id_map_find(&im->group_ids, comm->group, &group_index))
        return event_error(li, "communicator %u: group %u is not defined", ref, comm->group);
    const group_def *group = &im->groups[group_index];
    const char *name = NULL;
    OTFX_TRY(string_of(im, comm->name, &name));
    switch (group->type) {
    case OTF2_GROUP_TYPE_COMM_SELF:
        comm->self = true;
        comm->self_refs = malloc((im->locations_count ? im->locations_count : 1) * sizeof *comm->self_refs);
        if (!comm->self_refs)
            return out_of_memory();
        for (size_t l = 0; l < im->locations_count; l++)
            comm->self_refs[l] = OTFX_REF_NONE;
        comm->resolved = true;
        return OTFX_OK;
    case OTF2_GROUP_TYPE_COMM_GROUP:
    case OTF2_GROUP_TYPE_COMM_LOCATIONS:
        break;
    default:
        return event_error(li, "communicator %u: group %u is not a communicator group", ref, comm->group);
    }
    /* Members of a COMM_GROUP are indexes into the MPI location group, i.e. world ranks; the MPI
     * location group itself lists world ranks 0..size-1. */
    comm->size = group->size;
    comm->world_ranks = malloc((group->size ? group->size : 1) * sizeof *comm->world_ranks);
    if (!comm->world_ranks)
        return out_of_memory();
    for (uint32_t i = 0; i < group->size; i++) {
        uint64_t world = group->type == OTF2_GROUP_TYPE_COMM_GROUP ? group->members[i] : i;
        if (world >= UINT32_MAX)
            return event_error(li, "communicator %u: member %llu is not a rank", ref,
                               (unsigned long long)world);
        comm->world_ranks[i] = (uint32_t)world;
    }
    comm->global_members = (group->flags & OTF2_GROUP_FLAG_GLOBAL_MEMBERS) != 0;
    OTFX_TRY(otfx_defs_comm(im->defs, name, comm->world_ranks, comm->size, &comm->ref));
    comm->resolved = true;
    return OTFX_OK;
}

/* The otfx communicator and the world rank of communicator rank `rank` (UINT32_MAX stays: no rank). */
static otfx_status comm_and_world_rank(location_import *li, OTF2_CommRef ref, uint32_t rank,
                                       otfx_ref *comm_ref, uint32_t *world)
{
    comm_def *comm = NULL;
    OTFX_TRY(resolve_comm(li, ref, &comm));
    if (comm->self) {
        if (comm->self_refs[li->index] == OTFX_REF_NONE) {
            const char *name = NULL;
            OTFX_TRY(string_of(li->im, comm->name, &name));
            OTFX_TRY(otfx_defs_comm(li->im->defs, name, &li->location->rank, 1, &comm->self_refs[li->index]));
        }
        *comm_ref = comm->self_refs[li->index];
        if (rank != 0 && rank != UINT32_MAX)
            return event_error(li, "rank %u in a self communicator", rank);
        *world = rank == UINT32_MAX ? rank : li->location->rank;
        return OTFX_OK;
    }
    *comm_ref = comm->ref;
    if (rank == UINT32_MAX || comm->global_members) {
        *world = rank;
        return OTFX_OK;
    }
    if (rank >= comm->size)
        return event_error(li, "rank %u in communicator %u of size %u", rank, ref, comm->size);
    *world = comm->world_ranks[rank];
    return OTFX_OK;
}

static size_t channel_slot(const channel_count *key, size_t slots)
{
    uint64_t hash = ((uint64_t)key->comm << 32 | key->peer) * UINT64_C(0x9e3779b97f4a7c15);
    hash ^= ((uint64_t)key->tag << 2 | key->end) * UINT64_C(0xc2b2ae3d27d4eb4f);
    return (size_t)(hash ^ hash >> 29) & (slots - 1);
}

/* The channel end's count, added when new (NULL: out of memory). */
static channel_count *find_channel(location_import *li, const channel_count *key)
{
    if ((li->channel_count + 1) * 2 > li->channel_slots) {
        size_t slots = li->channel_slots ? 2 * li->channel_slots : 64;
        channel_count *grown = calloc(slots, sizeof *grown);
        if (!grown)
            return NULL;
        for (size_t i = 0; i < li->channel_slots; i++) {
            if (!li->channels[i].end)
                continue;
            size_t at = channel_slot(&li->channels[i], slots);
            while (grown[at].end)
                at = (at + 1) & (slots - 1);
            grown[at] = li->channels[i];
        }
        free(li->channels);
        li->channels = grown;
        li->channel_slots = slots;
    }
    size_t at = channel_slot(key, li->channel_slots);
    for (;; at = (at + 1) & (li->channel_slots - 1)) {
        channel_count *slot = &li->channels[at];
        if (!slot->end) {
            *slot = *key;
            li->channel_count++;
            return slot;
        }
        if (slot->comm == key->comm && slot->peer == key->peer && slot->tag == key->tag &&
            slot->end == key->end)
            return slot;
    }
}

/* The message events with and without a request (0: none) share one body, as the collective ones below.
 * OTF2 has no message ordinals and its readers pair by order: the n-th message of this location on a
 * channel end (communicator, peer, tag, sending or receiving) gets ordinal n. */
static otfx_status deliver_message(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                   uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t length,
                                   uint64_t request)
{
    otfx_event event = {.type = type};
    OTFX_TRY(comm_and_world_rank(li, comm, peer, &event.u.msg.comm, &event.u.msg.peer));
    event.u.msg.tag = tag;
    event.u.msg.bytes = length;
    event.u.msg.request = request;
    const channel_count key = {event.u.msg.comm, event.u.msg.peer, tag,
                               type == OTFX_EV_SEND || type == OTFX_EV_ISEND ? 1u : 2u, 0};
    channel_count *channel = find_channel(li, &key);
    if (!channel)
        return out_of_memory();
    event.u.msg.seq = ++channel->count;
    return deliver(li, time, &event);
}

static otfx_status import_MESSAGE(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                  OTF2_AttributeList *attributes, uint32_t peer, OTF2_CommRef comm,
                                  uint32_t tag, uint64_t length)
{
    (void)attributes;
    return deliver_message(li, type, time, peer, comm, tag, length, 0);
}

static otfx_status import_MESSAGE_REQUEST(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                          OTF2_AttributeList *attributes, uint32_t peer, OTF2_CommRef comm,
                                          uint32_t tag, uint64_t length, uint64_t request)
{
    (void)attributes;
    return deliver_message(li, type, time, peer, comm, tag, length, request);
}

static otfx_status import_REQUEST(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                  OTF2_AttributeList *attributes, uint64_t request)
{
    (void)attributes;
    otfx_event event = {.type = type};
    event.u.request.request = request;
    return deliver(li, time, &event);
}

static otfx_status import_NONE(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                               OTF2_AttributeList *attributes)
{
    (void)attributes;
    otfx_event event = {.type = type};
    return deliver(li, time, &event);
}

static otfx_status deliver_collective(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                      OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root, uint64_t sent,
                                      uint64_t received, uint64_t request)
{
    otfx_event event = {.type = type};
    OTFX_TRY(comm_and_world_rank(li, comm, root, &event.u.coll.comm, &event.u.coll.root));
    event.u.coll.op = op;
    event.u.coll.sent = sent;
    event.u.coll.received = received;
    event.u.coll.request = request;
    if (type == OTFX_EV_COLL_END) {
        /* OTF2 has no instance ordinals and its readers match the n-th collective of every member of a
         * communicator: the n-th blocking one of this location on a communicator gets ordinal n (the
         * members count alike as long as they count the same kind), and so does its COLL_BEGIN, which
         * names no communicator in OTF2. Nonblocking ones keep 0 (unknown): their start does not name
         * the communicator either, and completions need not come in the order of the starts. */
        const channel_count key = {event.u.coll.comm, UINT32_MAX, 0, COLLECTIVE_INSTANCES, 0};
        channel_count *instances = find_channel(li, &key);
        if (!instances)
            return out_of_memory();
        event.u.coll.seq = ++instances->count;
        if (li->open_collective) {
            otfx_event *begin = &li->batch[li->open_collective - 1];
            begin->u.coll.comm = event.u.coll.comm;
            begin->u.coll.seq = event.u.coll.seq;
            begin->u.coll.root = UINT32_MAX;
            li->open_collective = 0;
        }
    }
    return deliver(li, time, &event);
}

static otfx_status import_COLLECTIVE(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                     OTF2_AttributeList *attributes, OTF2_CollectiveOp op, OTF2_CommRef comm,
                                     uint32_t root, uint64_t sent, uint64_t received)
{
    (void)attributes;
    return deliver_collective(li, type, time, op, comm, root, sent, received, 0);
}

static otfx_status import_COLLECTIVE_REQUEST(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                             OTF2_AttributeList *attributes, OTF2_CollectiveOp op,
                                             OTF2_CommRef comm, uint32_t root, uint64_t sent,
                                             uint64_t received, uint64_t request)
{
    (void)attributes;
    return deliver_collective(li, type, time, op, comm, root, sent, received, request);
}

static otfx_status metric_type_of(OTF2_Type type, otfx_metric_type *out)
{
    switch (type) {
    case OTF2_TYPE_INT64:
        *out = OTFX_METRIC_INT64;
        return OTFX_OK;
    case OTF2_TYPE_UINT64:
        *out = OTFX_METRIC_UINT64;
        return OTFX_OK;
    case OTF2_TYPE_DOUBLE:
        *out = OTFX_METRIC_DOUBLE;
        return OTFX_OK;
    default:
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: metric value type %u is not int64, uint64 or double",
                         (unsigned)type);
    }
}

/* The otfx metrics of the members of a metric class (instances use their class's members). */
static otfx_status resolve_metric(location_import *li, OTF2_MetricRef ref, const metric_def **out)
{
    importer *im = li->im;
    uint32_t index;
    if (!id_map_find(&im->metric_ids, ref, &index))
        return event_error(li, "metric %u is not defined", ref);
    if (im->metrics[index].instance) {
        OTF2_MetricRef of_class = im->metrics[index].of_class;
        if (!id_map_find(&im->metric_ids, of_class, &index) || im->metrics[index].instance)
            return event_error(li, "metric instance %u: class %u is not defined", ref, of_class);
    }
    metric_def *metric = &im->metrics[index];
    *out = metric;
    if (metric->resolved)
        return OTFX_OK;
    metric->refs = malloc((metric->count ? metric->count : 1) * sizeof *metric->refs);
    if (!metric->refs)
        return out_of_memory();
    for (uint8_t m = 0; m < metric->count; m++) {
        uint32_t member_index;
        if (!id_map_find(&im->metric_member_ids, metric->members[m], &member_index))
            return event_error(li, "metric member %u is not defined", metric->members[m]);
        metric_member_def *member = &im->metric_members[member_index];
        if (!member->resolved) {
            const char *name = NULL, *unit = NULL;
            otfx_metric_type type = OTFX_METRIC_UINT64;
            OTFX_TRY(string_of(im, member->name, &name));
            OTFX_TRY(string_of(im, member->unit, &unit));
            OTFX_TRY(metric_type_of(member->type, &type));
            OTFX_TRY(otfx_defs_metric(im->defs, name, unit, type, &member->ref));
            member->resolved = true;
        }
        metric->refs[m] = member->ref;
    }
    metric->resolved = true;
    return OTFX_OK;
}

/* One otfx METRIC event per member of the record's metric class. */
static otfx_status import_METRIC(location_import *li, otfx_event_type type, OTF2_TimeStamp time,
                                 OTF2_AttributeList *attributes, OTF2_MetricRef ref, uint8_t count,
                                 const OTF2_Type *types, const OTF2_MetricValue *values)
{
    (void)attributes;
    (void)types;
    const metric_def *metric = NULL;
    OTFX_TRY(resolve_metric(li, ref, &metric));
    if (count != metric->count)
        return event_error(li, "metric %u has %u members but the record holds %u values", ref, metric->count,
                           count);
    for (uint8_t m = 0; m < count; m++) {
        otfx_event event = {.type = type};
        event.u.metric.metric = metric->refs[m];
        event.u.metric.value = values[m].unsigned_int; /* the value's bits, as otfx keeps them */
        OTFX_TRY(deliver(li, time, &event));
    }
    return OTFX_OK;
}

static OTF2_CallbackCode record_done(location_import *li, otfx_status status)
{
    if (status != OTFX_OK) {
        li->status = status;
        return OTF2_CALLBACK_INTERRUPT;
    }
    li->handled++;
    return OTF2_CALLBACK_SUCCESS;
}

/* The reader callbacks, generated from OTFX_OTF2_RECORD_TABLE: each passes the record's payload to the
 * import_<payload> function of its shape. */
#define PAYLOAD_PARAMETERS_REGION  , OTF2_RegionRef region
#define PAYLOAD_ARGUMENTS_REGION   , region
#define PAYLOAD_PARAMETERS_MESSAGE , uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t length
#define PAYLOAD_ARGUMENTS_MESSAGE  , peer, comm, tag, length
#define PAYLOAD_PARAMETERS_MESSAGE_REQUEST                                                                   \
    , uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t length, uint64_t request
#define PAYLOAD_ARGUMENTS_MESSAGE_REQUEST , peer, comm, tag, length, request
#define PAYLOAD_PARAMETERS_REQUEST        , uint64_t request
#define PAYLOAD_ARGUMENTS_REQUEST         , request
#define PAYLOAD_PARAMETERS_NONE
#define PAYLOAD_ARGUMENTS_NONE
#define PAYLOAD_PARAMETERS_COLLECTIVE                                                                        \
    , OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root, uint64_t sent, uint64_t received
#define PAYLOAD_ARGUMENTS_COLLECTIVE , op, comm, root, sent, received
#define PAYLOAD_PARAMETERS_COLLECTIVE_REQUEST                                                                \
    , OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root, uint64_t sent, uint64_t received,              \
        uint64_t request
#define PAYLOAD_ARGUMENTS_COLLECTIVE_REQUEST , op, comm, root, sent, received, request
#define PAYLOAD_PARAMETERS_METRIC                                                                            \
    , OTF2_MetricRef metric, uint8_t count, const OTF2_Type *types, const OTF2_MetricValue *values
#define PAYLOAD_ARGUMENTS_METRIC , metric, count, types, values

#define OTFX_READ_RECORD(otfx_type, record, printed, payload)                                                \
    static OTF2_CallbackCode on_##record(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t position,  \
                                         void *user,                                                         \
                                         OTF2_AttributeList *attributes PAYLOAD_PARAMETERS_##payload)        \
    {                                                                                                        \
        (void)location;                                                                                      \
        location_import *li = user;                                                                          \
        li->position = position;                                                                             \
        return record_done(li,                                                                               \
                           import_##payload(li, otfx_type, time, attributes PAYLOAD_ARGUMENTS_##payload));   \
    }
OTFX_OTF2_RECORD_TABLE(OTFX_READ_RECORD)
#undef OTFX_READ_RECORD

static otfx_status register_event_callbacks(importer *im, OTF2_EvtReader *reader, location_import *li)
{
    OTF2_EvtReaderCallbacks *callbacks = OTF2_EvtReaderCallbacks_New();
    if (!callbacks)
        return out_of_memory();
#define OTFX_REGISTER_RECORD(otfx_type, record, printed, payload)                                            \
    OTF2_EvtReaderCallbacks_Set##record##Callback(callbacks, on_##record);
    OTFX_OTF2_RECORD_TABLE(OTFX_REGISTER_RECORD)
#undef OTFX_REGISTER_RECORD
    OTF2_ErrorCode code = OTF2_Reader_RegisterEvtCallbacks(im->reader, reader, callbacks, li);
    OTF2_EvtReaderCallbacks_Delete(callbacks);
    OTF2_TRY(code, "registering the event callbacks");
    return OTFX_OK;
}

/* OTF2 3.0 neither keeps nor frees the id map of a MappingTable record whose mapping type it does not
 * know (otf2_archive_location_set_mapping_table ignores it, the reader frees only on errors): such a
 * table is freed here and the archive rejected, as otfx cannot apply it either. */
static OTF2_CallbackCode on_mapping_table(void *user, OTF2_MappingType type, const OTF2_IdMap *map)
{
    bool *unknown_mapping = user;
    if (type < OTF2_MAPPING_MAX)
        return OTF2_CALLBACK_SUCCESS;
#if OTF2_VERSION_MAJOR == 3 && OTF2_VERSION_MINOR == 0
    OTF2_IdMap_Free((OTF2_IdMap *)map);
#else
    (void)map;
#endif
    *unknown_mapping = true;
    return OTF2_CALLBACK_INTERRUPT;
}

/* Local definitions hold the id mappings of archives that other tools wrote with unified global
 * definitions; OTF2 applies them to the events. */
static otfx_status read_local_definitions(importer *im, const location_def *location)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "/%llu.def", (unsigned long long)location->self);
    char *path = archive_path(im->anchor_path, suffix);
    if (!path)
        return out_of_memory();
    otfx_status checked = check_definition_file(path, im->definition_chunk_size, true);
    free(path);
    OTFX_TRY(checked);
    OTF2_DefReader *definitions = OTF2_Reader_GetDefReader(im->reader, location->self);
    if (!definitions)
        return OTFX_OK; /* optional: no file, no mappings */
    bool unknown_mapping = false;
    OTF2_DefReaderCallbacks *callbacks = OTF2_DefReaderCallbacks_New();
    if (!callbacks) {
        OTF2_Reader_CloseDefReader(im->reader, definitions);
        return out_of_memory();
    }
    OTF2_DefReaderCallbacks_SetMappingTableCallback(callbacks, on_mapping_table);
    OTF2_ErrorCode code =
        OTF2_Reader_RegisterDefCallbacks(im->reader, definitions, callbacks, &unknown_mapping);
    OTF2_DefReaderCallbacks_Delete(callbacks);
    uint64_t read = 0;
    if (code == OTF2_SUCCESS)
        code = OTF2_Reader_ReadAllLocalDefinitions(im->reader, definitions, &read);
    OTF2_Reader_CloseDefReader(im->reader, definitions);
    if (unknown_mapping)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: rank %u thread %u: mapping table of an unknown type",
                         location->rank, location->thread);
    if (code != OTF2_SUCCESS)
        return otfx_otf2_fail_call(code, "OTF2 import: rank %u thread %u: reading local definitions",
                                   location->rank, location->thread);
    return OTFX_OK;
}

static otfx_status read_location_events(importer *im, size_t index, bool local_definitions, otfx_event *batch)
{
    location_def *location = &im->locations[index];
    if (local_definitions)
        OTFX_TRY(read_local_definitions(im, location));
    OTF2_EvtReader *reader = OTF2_Reader_GetEvtReader(im->reader, location->self);
    if (!reader)
        return otfx_otf2_fail_call(OTF2_ERROR_FILE_CAN_NOT_OPEN,
                                   "OTF2 import: rank %u thread %u: opening the event file", location->rank,
                                   location->thread);
    location_import li = {.im = im, .location = location, .index = index, .batch = batch, .status = OTFX_OK};
    otfx_status status = register_event_callbacks(im, reader, &li);
    uint64_t read = 0;
    if (status == OTFX_OK) {
        OTF2_ErrorCode code = OTF2_Reader_ReadAllLocalEvents(im->reader, reader, &read);
        if (li.status != OTFX_OK)
            status = li.status;
        else if (code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 import: rank %u thread %u: reading events",
                                         location->rank, location->thread);
    }
    if (status == OTFX_OK && li.phase_leave_due)
        status = event_error(&li, "phase marker without its leave");
    if (status == OTFX_OK)
        status = release_records(&li, OTFX_TIME_MAX);
    if (status == OTFX_OK)
        status = flush_batch(&li);
    free(li.records);
    free(li.channels);
    OTF2_ErrorCode code = OTF2_Reader_CloseEvtReader(im->reader, reader);
    if (status == OTFX_OK && code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 import: rank %u thread %u: closing the event file",
                                     location->rank, location->thread);
    im->stats.records_read += read;
    im->stats.records_ignored += read - (li.handled < read ? li.handled : read);
    return status;
}

static otfx_status read_events(importer *im)
{
    size_t selected = 0;
    for (size_t l = 0; l < im->locations_count; l++) {
        if (im->locations[l].placeholder)
            continue;
        OTF2_TRY(OTF2_Reader_SelectLocation(im->reader, im->locations[l].self), "selecting a location");
        selected++;
    }
    if (selected == 0)
        return OTFX_OK;
    /* Local definition files are optional (otf2-print reads archives without them too). */
    bool local_definitions = OTF2_Reader_OpenDefFiles(im->reader) == OTF2_SUCCESS;
    OTF2_TRY(OTF2_Reader_OpenEvtFiles(im->reader), "opening the event files");
    otfx_event *batch = malloc(APPEND_BATCH * sizeof *batch);
    if (!batch)
        return out_of_memory();
    otfx_status status = OTFX_OK;
    for (size_t l = 0; l < im->locations_count && status == OTFX_OK; l++)
        if (!im->locations[l].placeholder)
            status = read_location_events(im, l, local_definitions, batch);
    free(batch);
    OTF2_ErrorCode code = OTF2_Reader_CloseEvtFiles(im->reader);
    if (status == OTFX_OK && code != OTF2_SUCCESS)
        status = otfx_otf2_fail_call(code, "OTF2 import: closing the event files");
    if (local_definitions) {
        code = OTF2_Reader_CloseDefFiles(im->reader);
        if (status == OTFX_OK && code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 import: closing the local definition files");
    }
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * Entry points
 * -------------------------------------------------------------------------------------------- */

static void importer_free(importer *im)
{
    for (size_t i = 0; i < im->strings_count; i++)
        free(im->strings[i].text);
    for (size_t i = 0; i < im->groups_count; i++)
        free(im->groups[i].members);
    for (size_t i = 0; i < im->comms_count; i++) {
        free(im->comms[i].world_ranks);
        free(im->comms[i].self_refs);
    }
    for (size_t i = 0; i < im->metrics_count; i++) {
        free(im->metrics[i].members);
        free(im->metrics[i].refs);
    }
    free(im->strings);
    free(im->attributes);
    free(im->locations);
    free(im->location_properties);
    free(im->regions);
    free(im->groups);
    free(im->comms);
    free(im->metric_members);
    free(im->metrics);
    id_map *maps[] = {&im->string_ids,        &im->region_ids, &im->group_ids,   &im->comm_ids,
                      &im->metric_member_ids, &im->metric_ids, &im->location_ids};
    for (size_t m = 0; m < sizeof maps / sizeof *maps; m++)
        id_map_free(maps[m]);
}

/* OTF2 3.0.2 leaks what it allocated when OTF2_Reader_Open fails on a file that is no anchor file,
 * so the anchor's header is checked first: a version byte, the byte order ('B' or 'L'), "OTF2". */
static otfx_status check_anchor(const char *anchor_path)
{
    struct stat info;
    if (stat(anchor_path, &info) != 0)
        return otfx_fail(OTFX_ERR_IO, "OTF2 import: cannot read %s: %s", anchor_path, strerror(errno));
    FILE *file = S_ISREG(info.st_mode) ? fopen(anchor_path, "rb") : NULL;
    if (!file)
        return otfx_fail(OTFX_ERR_IO, "OTF2 import: cannot read %s as a file", anchor_path);
    unsigned char header[6];
    size_t read = fread(header, 1, sizeof header, file);
    fclose(file);
    if (read != sizeof header || (header[1] != 'B' && header[1] != 'L') || memcmp(header + 2, "OTF2", 4) != 0)
        return otfx_fail(OTFX_ERR_CORRUPT, "OTF2 import: %s is not an OTF2 anchor file", anchor_path);
    return OTFX_OK;
}

static otfx_status import_archive(importer *im, const char *anchor_path)
{
    OTFX_TRY(check_anchor(anchor_path));
    im->reader = OTF2_Reader_Open(anchor_path);
    if (!im->reader)
        return otfx_otf2_fail_call(OTF2_ERROR_FILE_CAN_NOT_OPEN, "OTF2 import: opening the archive");
    OTF2_TRY(OTF2_Reader_SetSerialCollectiveCallbacks(im->reader), "setting up the reader");
    uint64_t event_chunk_size;
    OTF2_TRY(OTF2_Reader_GetChunkSize(im->reader, &event_chunk_size, &im->definition_chunk_size),
             "reading the chunk sizes");
    im->anchor_path = anchor_path;
    im->defs = otfx_defs_create();
    if (!im->defs)
        return out_of_memory();
    OTFX_TRY(read_global_definitions(im));
    OTFX_TRY(resolve_attributes(im));
    OTFX_TRY(resolve_regions(im));
    OTFX_TRY(resolve_locations(im));
    return read_events(im);
}

otfx_status otfx_otf2_import_with_stats(const char *anchor_path, const otfx_trace_config *config,
                                        otfx_defs **defs, otfx_trace ***traces, size_t *trace_count,
                                        otfx_import_stats *stats)
{
    if (!anchor_path || !config || !defs || !traces || !trace_count)
        return otfx_fail(OTFX_ERR_INVALID, "OTF2 import: NULL argument");
    *defs = NULL;
    *traces = NULL;
    *trace_count = 0;
    otfx_otf2_capture_errors();
    importer im = {.config = config, .timer_resolution = OTFX_OTF2_TIMER_RESOLUTION, .status = OTFX_OK};
    otfx_status status = import_archive(&im, anchor_path);
    if (im.reader) {
        OTF2_ErrorCode code = OTF2_Reader_Close(im.reader);
        if (status == OTFX_OK && code != OTF2_SUCCESS)
            status = otfx_otf2_fail_call(code, "OTF2 import: closing the archive");
    }
    size_t count = 0;
    for (size_t l = 0; l < im.locations_count; l++)
        count += im.locations[l].trace != NULL;
    otfx_trace **result = NULL;
    if (status == OTFX_OK && count > 0 && !(result = malloc(count * sizeof *result)))
        status = out_of_memory();
    count = 0;
    for (size_t l = 0; l < im.locations_count; l++) {
        if (!im.locations[l].trace)
            continue;
        if (status == OTFX_OK)
            result[count++] = im.locations[l].trace;
        else
            otfx_trace_destroy(im.locations[l].trace);
    }
    if (status == OTFX_OK) {
        *defs = im.defs;
        *traces = result;
        *trace_count = count;
        if (stats)
            *stats = im.stats;
    } else if (im.defs) {
        otfx_defs_destroy(im.defs);
    }
    importer_free(&im);
    return status;
}

otfx_status otfx_otf2_import(const char *anchor_path, const otfx_trace_config *config, otfx_defs **defs,
                             otfx_trace ***traces, size_t *trace_count)
{
    return otfx_otf2_import_with_stats(anchor_path, config, defs, traces, trace_count, NULL);
}

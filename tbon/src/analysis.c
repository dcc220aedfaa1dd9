/* analysis.c — partial-result blobs, rank selections, the module registry and the loader (see
 * otfx/analysis.h). */
#define _POSIX_C_SOURCE 200809L

#include <otfx/analysis.h>
#include <otfx/support/growth.h>

#include "error_text.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- blobs -------------------------------------------------------------------------------------- */

void otfx_blob_free(otfx_blob *blob)
{
    free(blob->data);
    blob->data = NULL;
    blob->length = blob->capacity = 0;
    blob->failed = false;
    blob->too_large = false;
}

void otfx_blob_append(otfx_blob *blob, const void *bytes, size_t length)
{
    if (blob->failed || length == 0)
        return;
    if (length > SIZE_MAX / 2 - blob->length) {
        blob->failed = true;
        return;
    }
    if (blob->limit && blob->length + length > blob->limit) {
        blob->failed = blob->too_large = true;
        return;
    }
    /* the capacity stops at the bound: never more memory than it allows */
    if (blob->length + length > blob->capacity &&
        !otfx_grow_to((void **)&blob->data, blob->capacity, blob->length + length, 1, 256,
                      blob->limit ? blob->limit : SIZE_MAX, &blob->capacity)) {
        blob->failed = true;
        return;
    }
    memcpy(blob->data + blob->length, bytes, length);
    blob->length += length;
}

/* Little-endian on the wire: places of one job may in principle differ in byte order. */
static void append_little_endian(otfx_blob *blob, uint64_t value, size_t bytes)
{
    unsigned char out[8];
    for (size_t i = 0; i < bytes; i++)
        out[i] = (unsigned char)(value >> (8 * i));
    otfx_blob_append(blob, out, bytes);
}

void otfx_blob_u32(otfx_blob *blob, uint32_t value)
{
    append_little_endian(blob, value, 4);
}

void otfx_blob_u64(otfx_blob *blob, uint64_t value)
{
    append_little_endian(blob, value, 8);
}

void otfx_blob_str(otfx_blob *blob, const char *text)
{
    size_t length = text ? strlen(text) : 0;
    if (length > UINT32_MAX) {
        blob->failed = true;
        return;
    }
    otfx_blob_u32(blob, (uint32_t)length);
    otfx_blob_append(blob, text, length);
}

void otfx_blob_header(otfx_blob *blob, uint32_t magic)
{
    otfx_blob_u32(blob, magic);
}

otfx_blob_reader otfx_blob_reader_make(const void *data, size_t length)
{
    otfx_blob_reader reader = {.data = data, .length = data ? length : 0, .offset = 0, .failed = false};
    return reader;
}

const void *otfx_blob_read_bytes(otfx_blob_reader *reader, size_t length)
{
    if (reader->failed || reader->length - reader->offset < length) {
        reader->failed = true;
        return NULL;
    }
    const void *p = reader->data + reader->offset;
    reader->offset += length;
    return p;
}

/* `bytes` little-endian bytes as a number; 0 once the reader failed. */
static uint64_t read_little_endian(otfx_blob_reader *reader, size_t bytes)
{
    const unsigned char *p = otfx_blob_read_bytes(reader, bytes);
    uint64_t value = 0;
    for (size_t i = 0; p && i < bytes; i++)
        value |= (uint64_t)p[i] << (8 * i);
    return value;
}

uint32_t otfx_blob_read_u32(otfx_blob_reader *reader)
{
    return (uint32_t)read_little_endian(reader, 4);
}

uint64_t otfx_blob_read_u64(otfx_blob_reader *reader)
{
    return read_little_endian(reader, 8);
}

const char *otfx_blob_read_str(otfx_blob_reader *reader, uint32_t *length)
{
    uint32_t n = otfx_blob_read_u32(reader);
    const char *p = otfx_blob_read_bytes(reader, n);
    if (length)
        *length = p ? n : 0;
    return p;
}

bool otfx_blob_read_header(otfx_blob_reader *reader, uint32_t magic)
{
    if (otfx_blob_read_u32(reader) != magic)
        reader->failed = true;
    return !reader->failed;
}

bool otfx_blob_reader_done(const otfx_blob_reader *reader)
{
    return !reader->failed && reader->offset == reader->length;
}

/* ---- events in pieces --------------------------------------------------------------------------- */

otfx_status otfx_analysis_query_events(otfx_trace *trace, otfx_time from, otfx_time to, bool context,
                                       otfx_event_fn fn, void *user)
{
    return otfx_query_events_yielding(trace, from, to, context, fn, user, OTFX_ANALYSIS_EVENTS_PER_LOCK);
}

/* ---- rank selections ---------------------------------------------------------------------------- */

static int compare_ranges(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

void otfx_rank_selection_init(otfx_rank_selection *selection, const otfx_rank_set *set, uint32_t app_ranks,
                              uint32_t groups)
{
    memset(selection, 0, sizeof *selection);
    uint32_t ranges[32][2];
    uint32_t n = 0;
    if (!set || set->count == 0) {
        if (app_ranks > 0) {
            ranges[0][0] = 0;
            ranges[0][1] = app_ranks - 1;
            n = 1;
        }
    } else {
        for (uint32_t i = 0; i < set->count && i < 32; i++) {
            uint32_t first = set->ranges[i].first, last = set->ranges[i].last;
            if (first > last || first >= app_ranks)
                continue;
            if (last >= app_ranks)
                last = app_ranks - 1;
            ranges[n][0] = first;
            ranges[n][1] = last;
            n++;
        }
    }
    qsort(ranges, n, sizeof ranges[0], compare_ranges);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = selection->range_count;
        if (k > 0 && ranges[i][0] <= selection->ranges[k - 1].last + 1ull) {
            if (ranges[i][1] > selection->ranges[k - 1].last)
                selection->ranges[k - 1].last = ranges[i][1];
            continue;
        }
        selection->ranges[k].first = ranges[i][0];
        selection->ranges[k].last = ranges[i][1];
        selection->range_count++;
    }
    uint64_t count = 0;
    for (uint32_t i = 0; i < selection->range_count; i++)
        count += (uint64_t)selection->ranges[i].last - selection->ranges[i].first + 1;
    selection->count = (uint32_t)count;
    if (groups == 0)
        groups = 1;
    selection->groups = selection->count < groups ? selection->count : groups;
}

uint32_t otfx_rank_selection_position(const otfx_rank_selection *selection, uint32_t rank)
{
    uint32_t before = 0;
    for (uint32_t i = 0; i < selection->range_count; i++) {
        if (rank < selection->ranges[i].first)
            return UINT32_MAX;
        if (rank <= selection->ranges[i].last)
            return before + (rank - selection->ranges[i].first);
        before += selection->ranges[i].last - selection->ranges[i].first + 1;
    }
    return UINT32_MAX;
}

uint32_t otfx_rank_selection_rank(const otfx_rank_selection *selection, uint32_t position)
{
    for (uint32_t i = 0; i < selection->range_count; i++) {
        uint32_t size = selection->ranges[i].last - selection->ranges[i].first + 1;
        if (position < size)
            return selection->ranges[i].first + position;
        position -= size;
    }
    return UINT32_MAX;
}

uint32_t otfx_rank_selection_group(const otfx_rank_selection *selection, uint32_t rank)
{
    uint32_t position = otfx_rank_selection_position(selection, rank);
    if (position == UINT32_MAX || selection->count == 0)
        return UINT32_MAX;
    /* group g holds positions [ceil(g*count/groups), ceil((g+1)*count/groups)): g = floor(p*groups/count) */
    return (uint32_t)(((uint64_t)position * selection->groups) / selection->count);
}

void otfx_rank_selection_group_ranks(const otfx_rank_selection *selection, uint32_t group, uint32_t *first,
                                     uint32_t *last)
{
    /* the positions p with floor(p*groups/count) == group */
    uint64_t count = selection->count, groups = selection->groups;
    uint64_t begin = (group * count + groups - 1) / groups;
    uint64_t end = ((group + 1) * count + groups - 1) / groups;
    *first = otfx_rank_selection_rank(selection, (uint32_t)begin);
    *last = end > begin ? otfx_rank_selection_rank(selection, (uint32_t)(end - 1)) : *first;
}

/* ---- tokens ------------------------------------------------------------------------------------- */

const char *otfx_analysis_role_token(otfx_region_role role)
{
    static const char *const names[OTFX_ROLE_COUNT] = {"user", "p2p", "collective", "mpi_other", "phase"};
    return (unsigned)role < OTFX_ROLE_COUNT ? names[role] : "unknown";
}

const char *otfx_analysis_event_token(otfx_event_type type)
{
    static const char *const names[OTFX_EV_TYPE_COUNT] = {
        [OTFX_EV_ENTER] = "enter",
        [OTFX_EV_LEAVE] = "leave",
        [OTFX_EV_SEND] = "send",
        [OTFX_EV_RECV] = "recv",
        [OTFX_EV_ISEND] = "isend",
        [OTFX_EV_ISEND_COMPLETE] = "isend_complete",
        [OTFX_EV_IRECV_REQUEST] = "irecv_request",
        [OTFX_EV_IRECV] = "irecv",
        [OTFX_EV_REQUEST_CANCELLED] = "request_cancelled",
        [OTFX_EV_COLL_BEGIN] = "coll_begin",
        [OTFX_EV_COLL_END] = "coll_end",
        [OTFX_EV_METRIC] = "metric",
        [OTFX_EV_PHASE] = "phase",
        [OTFX_EV_REDUCTION] = "reduction",
        [OTFX_EV_NBC_REQUEST] = "nbc_request",
        [OTFX_EV_NBC_COMPLETE] = "nbc_complete",
    };
    return (unsigned)type < OTFX_EV_TYPE_COUNT ? names[type] : "unknown";
}

/* ---- registry ----------------------------------------------------------------------------------- */

extern const otfx_analysis_module otfx_module_status;
extern const otfx_analysis_module otfx_module_profile;
extern const otfx_analysis_module otfx_module_timeline;
extern const otfx_analysis_module otfx_module_messages;
extern const otfx_analysis_module otfx_module_events;
extern const otfx_analysis_module otfx_module_critical_path;
extern const otfx_analysis_module otfx_module_wait_states;
extern const otfx_analysis_module otfx_module_structure;
extern const otfx_analysis_module otfx_module_metric_profile;
extern const otfx_analysis_module otfx_module_metric_timeline;

enum { MAX_MODULES = 64 };
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const otfx_analysis_module *registry[MAX_MODULES] = {
    &otfx_module_status,          &otfx_module_profile,   &otfx_module_timeline,
    &otfx_module_messages,        &otfx_module_events,    &otfx_module_critical_path,
    &otfx_module_wait_states,     &otfx_module_structure, &otfx_module_metric_profile,
    &otfx_module_metric_timeline,
};
static size_t registry_count = 10;

static bool valid_name(const char *name)
{
    if (!name || !name[0] || strlen(name) > 63)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return false;
    return true;
}

const otfx_analysis_module *otfx_analysis_find(const char *name)
{
    if (!name)
        return NULL;
    const otfx_analysis_module *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry_count && !found; i++)
        if (strcmp(registry[i]->name, name) == 0)
            found = registry[i];
    pthread_mutex_unlock(&registry_lock);
    return found;
}

const otfx_analysis_module *otfx_analysis_at(size_t index)
{
    pthread_mutex_lock(&registry_lock);
    const otfx_analysis_module *module = index < registry_count ? registry[index] : NULL;
    pthread_mutex_unlock(&registry_lock);
    return module;
}

const otfx_analysis_module *otfx_analysis_for_command(otfx_command_kind kind)
{
    switch (kind) {
    case OTFX_CMD_STATUS:
        return &otfx_module_status;
    case OTFX_CMD_PROFILE:
        return &otfx_module_profile;
    case OTFX_CMD_TIMELINE:
        return &otfx_module_timeline;
    case OTFX_CMD_MESSAGES:
        return &otfx_module_messages;
    case OTFX_CMD_EVENTS:
        return &otfx_module_events;
    case OTFX_CMD_CRITICAL_PATH:
        return &otfx_module_critical_path;
    case OTFX_CMD_WAIT_STATES:
        return &otfx_module_wait_states;
    case OTFX_CMD_STRUCTURE:
        return &otfx_module_structure;
    case OTFX_CMD_METRIC_TIMELINE:
        return &otfx_module_metric_timeline;
    default:
        return NULL;
    }
}

bool otfx_analysis_validate(const otfx_analysis_module *module, char *error, size_t error_size)
{
    if (!module) {
        set_error(error, error_size, "no module");
        return false;
    }
    if (module->abi != OTFX_ANALYSIS_ABI) {
        set_error(error, error_size,
                  "module ABI %u, but this otfx needs ABI %u (rebuild it against otfx/analysis.h)",
                  module->abi, (unsigned)OTFX_ANALYSIS_ABI);
        return false;
    }
    if (!valid_name(module->name)) {
        set_error(error, error_size, "module name must be 1-63 characters of [a-z0-9_-]");
        return false;
    }
    if (!module->leaf || !module->merge || !module->finish) {
        set_error(error, error_size, "module %s lacks a leaf, merge or finish function", module->name);
        return false;
    }
    return true;
}

bool otfx_analysis_register(const otfx_analysis_module *module, char *error, size_t error_size)
{
    if (!otfx_analysis_validate(module, error, error_size))
        return false;
    bool ok = true;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry_count; i++) {
        if (registry[i] == module)
            goto done; /* registered before: nothing to do */
        if (strcmp(registry[i]->name, module->name) == 0) {
            set_error(error, error_size, "a module named %s is already loaded", module->name);
            ok = false;
            goto done;
        }
    }
    if (registry_count == MAX_MODULES) {
        set_error(error, error_size, "too many modules (at most %d)", MAX_MODULES);
        ok = false;
        goto done;
    }
    registry[registry_count++] = module;
done:
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

const otfx_analysis_module *otfx_analysis_load(const char *path, char *error, size_t error_size)
{
    if (!path || !path[0]) {
        set_error(error, error_size, "load-module needs the path of a shared object");
        return NULL;
    }
    /* a name without '/' is a file in the working directory, not a library to search for */
    char local[4096];
    if (!strchr(path, '/')) {
        if ((size_t)snprintf(local, sizeof local, "./%s", path) >= sizeof local) {
            set_error(error, error_size, "module path too long");
            return NULL;
        }
        path = local;
    }
    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        set_error(error, error_size, "cannot load %s: %s", path, why ? why : "unknown error");
        return NULL;
    }
    dlerror();
    void *symbol = dlsym(handle, OTFX_ANALYSIS_ENTRY_SYMBOL);
    if (!symbol) {
        set_error(error, error_size, "%s is not an otfx analysis module: it has no %s function", path,
                  OTFX_ANALYSIS_ENTRY_SYMBOL);
        dlclose(handle);
        return NULL;
    }
    otfx_analysis_entry_fn entry;
    memcpy(&entry, &symbol, sizeof entry); /* ISO C has no object-to-function pointer cast */
    const otfx_analysis_module *module = entry();
    char why[256] = "";
    if (!module) {
        set_error(error, error_size, "%s: %s returned no module", path, OTFX_ANALYSIS_ENTRY_SYMBOL);
        dlclose(handle);
        return NULL;
    }
    if (!otfx_analysis_register(module, why, sizeof why)) {
        set_error(error, error_size, "%s: %s", path, why);
        /* the handle stays open: a module already registered under the name may be this very object */
        return NULL;
    }
    return module; /* never dlclose()d: queries may be running its code */
}

/*
 * user_functions.c — user-function hooks for programs built with -finstrument-functions, the load map
 * the place needs to name them, the filter (OTFX_FILTER) and throttling (OTFX_THROTTLE), and the manual
 * API of otfx.h (otfx_region_begin/end, otfx_phase).
 *
 * The hooks record USER_ENTER / USER_LEAVE with the function's address only (no name lookup, no lock,
 * no system call, no allocation once the thread's tables hold the function: one fixed-size record, as
 * for MPI calls). Names are found on the
 * place: capture_send_load_map() sends every loaded object's path and load bias once, from MPI_Init,
 * before any user record (otfx/capture_wire.h), and the place resolves addresses with libdwfl.
 *
 * A function entered before recording started (main, or whatever called MPI_Init) is not recorded, so
 * its exit must not be either: each thread counts the user regions it has open in the trace and
 * records an exit only when one is open.
 *
 * Objects dlopen'ed later: each thread checks once per batch whether objects were loaded
 * (dl_iterate_phdr's dlpi_adds) and then sends the map again at the head of its next batch. Calls of
 * a new object's functions recorded before that (at most one batch) are named 0x<address>@?.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "user_functions.h"
#include "control.h"
#include "filter_file.h"
#include "nesting.h"
#include "recorder.h"
#include "timer.h"

#include <otfx/settings.h>
#include <otfx/support/growth.h>

#include <elfutils/libdwfl.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NO_INSTRUMENT __attribute__((no_instrument_function))

/* User regions this thread has open in the trace. The hooks' per-thread state is initial-exec
 * (linkage.h): one %fs-relative load, not a __tls_get_addr call per hook. */
static CAPTURE_HOT_THREAD_LOCAL uint32_t open_user_regions;

/* ---- filter and throttling ----------------------------------------------------------------------
 * Without OTFX_FILTER and with throttling off (OTFX_THROTTLE=0) the hooks record every call. Otherwise
 * each thread keeps a table address → state: the filter's decision is made once per function (its
 * name from libdwfl on this process, under a lock, on the function's first call in the thread), calls
 * and their total duration are counted, and a function called more than `throttle_calls` times with
 * a mean duration below `throttle_ns` is switched off for the rest of the run (a THROTTLED record,
 * REDUCTION in the trace). A switched-off or excluded function costs one table lookup per hook.
 *
 * The calls a throttled function skips reach the place while the job runs, not only at MPI_Finalize:
 * a thread writes a THROTTLED record with the cumulative count of each of its functions whose count
 * changed at most once per SKIP_REPORT_NS (looked at every SKIP_CHECK_STRIDE skipped calls, so the
 * skip stays one increment and one test), before every batch a FLUSH makes it send, and at the end.
 * Cumulative counts: the place keeps the largest it saw, so a late or repeated record never counts
 * twice. */

enum function_state { FUNCTION_ON = 1, FUNCTION_EXCLUDED, FUNCTION_THROTTLED };

struct function_slot {
    uint64_t address;  /* 0: empty */
    uint64_t calls;    /* recorded calls that returned */
    uint64_t total_ns; /* in timer ticks (timer.h) */
    uint64_t skipped;  /* calls not recorded since it was throttled */
    uint64_t reported; /* `skipped` as the last THROTTLED record of this thread said */
    uint32_t open;     /* recorded enters without their exit yet (recursion) */
    uint32_t state;    /* enum function_state */
};

struct function_table {
    struct function_slot *slots;
    uint64_t *enter_times; /* TIMED_DEPTH: the enter time of each open recorded call, by depth */
    uint32_t slot_count;   /* a power of two */
    uint32_t used;
    uint64_t next_skip_report; /* ticks: the skipped counts go out again from then on */
};

enum { TIMED_DEPTH = 256 };
enum { SKIP_CHECK_STRIDE = 1024 }; /* a power of two */
#define SKIP_REPORT_NS 1e9

static CAPTURE_HOT_THREAD_LOCAL struct function_table function_table;

static otfx_filter_rule *filter_rules;
static size_t filter_rule_count;
static bool hooks_filtered;                                  /* a filter or throttling: the table is used */
static uint64_t throttle_calls = 100000, throttle_ns = 1000; /* OTFX_THROTTLE (its default); 0 calls: off */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static Dwfl *process_dwfl;

static const Dwfl_Callbacks process_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* The filter's verdict for the function at `address` (its name from this process's symbol tables). */
NO_INSTRUMENT static bool filter_includes(uint64_t address)
{
    if (!filter_rule_count)
        return true;
    pthread_mutex_lock(&names_lock);
    const char *name = NULL;
    for (int attempt = 0; attempt < 2 && !name; attempt++) {
        /* Built on first use, rebuilt once when an address lies outside every known object (dlopen). */
        if (!process_dwfl || attempt == 1) {
            if (process_dwfl)
                dwfl_end(process_dwfl);
            process_dwfl = dwfl_begin(&process_callbacks);
            if (process_dwfl) {
                dwfl_report_begin(process_dwfl);
                dwfl_linux_proc_report(process_dwfl, getpid());
                dwfl_report_end(process_dwfl, NULL, NULL);
            }
        }
        Dwfl_Module *module = process_dwfl ? dwfl_addrmodule(process_dwfl, address) : NULL;
        if (module)
            name = dwfl_module_addrname(module, address);
        if (module)
            break;
    }
    bool include = true;
    char unnamed[32];
    if (!name) {
        snprintf(unnamed, sizeof(unnamed), "0x%llx", (unsigned long long)address);
        name = unnamed;
    }
    for (size_t i = 0; i < filter_rule_count; i++)
        if (fnmatch(filter_rules[i].pattern, name, 0) == 0) {
            include = filter_rules[i].include;
            break;
        }
    pthread_mutex_unlock(&names_lock);
    return include;
}

/* The filter's verdict for an otfx.h region or phase name (the same rules as for functions). */
NO_INSTRUMENT static bool filter_includes_name(const char *name)
{
    for (size_t i = 0; i < filter_rule_count; i++)
        if (fnmatch(filter_rules[i].pattern, name, 0) == 0)
            return filter_rules[i].include;
    return true;
}

NO_INSTRUMENT static size_t slot_index(uint64_t address, uint32_t slot_count)
{
    return (size_t)((address * 0x9e3779b97f4a7c15ull) >> 24) & (slot_count - 1);
}

static void free_at_thread_exit(void);

NO_INSTRUMENT static bool grow_functions(struct function_table *table)
{
    uint32_t count = table->slot_count ? 2 * table->slot_count : 256;
    struct function_slot *slots = calloc(count, sizeof(*slots));
    if (!slots)
        return false;
    if (!table->enter_times && !(table->enter_times = calloc(TIMED_DEPTH, sizeof(*table->enter_times)))) {
        free(slots);
        return false;
    }
    for (uint32_t i = 0; i < table->slot_count; i++) {
        if (!table->slots[i].address)
            continue;
        size_t j = slot_index(table->slots[i].address, count);
        while (slots[j].address)
            j = (j + 1) & (count - 1);
        slots[j] = table->slots[i];
    }
    if (!table->slots)
        free_at_thread_exit(); /* the slots and the enter times */
    free(table->slots);
    table->slots = slots;
    table->slot_count = count;
    return true;
}

/* This thread's slot of the function at `address`, decided by the filter on first sight; NULL when out
 * of memory (the function is then not recorded, enter and exit alike). */
NO_INSTRUMENT static struct function_slot *function_slot(uint64_t address, bool create)
{
    struct function_table *table = &function_table;
    if (table->slot_count) {
        for (size_t j = slot_index(address, table->slot_count); table->slots[j].address;
             j = (j + 1) & (table->slot_count - 1))
            if (table->slots[j].address == address)
                return &table->slots[j];
    }
    if (!create || (2 * (table->used + 1) > table->slot_count && !grow_functions(table)))
        return NULL;
    size_t j = slot_index(address, table->slot_count);
    while (table->slots[j].address)
        j = (j + 1) & (table->slot_count - 1);
    struct function_slot *slot = &table->slots[j];
    slot->address = address;
    slot->state = filter_includes(address) ? FUNCTION_ON : FUNCTION_EXCLUDED;
    table->used++;
    return slot;
}

/* Steering (control.c): a user-function enter is a check point on the thread that called MPI_Init. */

/* Not recording users: still a check point with a place (RECORD_ON must be noticed in code that calls
 * only user functions); one load and compare without. */
NO_INSTRUMENT static inline void untraced_user_check(void)
{
    if (__builtin_expect(capture_deadline() != UINT64_MAX, 0)) {
        const uint64_t now = capture_ticks();
        if (now >= capture_deadline())
            capture_control_check_user(now);
    }
}

/* The timestamp of a user record, after the check when it is due (one compare otherwise); false when
 * the check turned user events off. */
NO_INSTRUMENT static inline bool user_timestamp(uint64_t *now)
{
    *now = capture_now();
    if (__builtin_expect(*now >= capture_deadline(), 0)) {
        capture_control_check_user(*now);
        if (!capture_records(CAPTURE_CLASS_USER))
            return false;
        *now = capture_now();
    }
    return true;
}

/* The timestamp of a user exit: the same single compare; past the deadline the thread waits while the
 * application is paused (another thread carried out APP_PAUSE) before it records. */
NO_INSTRUMENT static inline uint64_t exit_timestamp(void)
{
    uint64_t now = capture_now();
    if (__builtin_expect(now >= capture_deadline(), 0)) {
        capture_control_pause_point();
        now = capture_now();
    }
    return now;
}

NO_INSTRUMENT static uint64_t mean_ns_of(const struct function_slot *slot)
{
    return slot->calls ? (uint64_t)(capture_ticks_to_ns(slot->total_ns) / (double)slot->calls) : 0;
}

NO_INSTRUMENT static void schedule_skip_report(uint64_t now)
{
    const double ns_per_tick = capture_timer_calibration().ns_per_tick;
    function_table.next_skip_report =
        now + (uint64_t)(SKIP_REPORT_NS / (ns_per_tick > 0 ? ns_per_tick : 1.0));
}

NO_INSTRUMENT void capture_user_functions_report_skipped(void)
{
    if (!capture_recording)
        return; /* nothing is written while recording is off; the counts go out once it is on again */
    struct function_table *table = &function_table;
    for (uint32_t i = 0; i < table->slot_count; i++) {
        struct function_slot *slot = &table->slots[i];
        if (slot->state != FUNCTION_THROTTLED || slot->skipped == slot->reported)
            continue;
        capture_throttled(slot->address, slot->calls, mean_ns_of(slot), slot->skipped);
        slot->reported = slot->skipped;
    }
    schedule_skip_report(capture_now());
}

/* Every SKIP_CHECK_STRIDE skipped calls: the counts go out when SKIP_REPORT_NS passed since the last time. */
NO_INSTRUMENT static __attribute__((noinline)) void report_skipped_if_due(void)
{
    if (capture_now() >= function_table.next_skip_report)
        capture_user_functions_report_skipped();
}

CAPTURE_EXPORT void __cyg_profile_func_enter(void *function, void *call_site) NO_INSTRUMENT;
CAPTURE_EXPORT void __cyg_profile_func_exit(void *function, void *call_site) NO_INSTRUMENT;

/* The hooks' paths other than the plain recorded call (a filter or throttling, a check point due): out
 * of line, so that the common path saves no register and ends in a tail call (as LTTng-UST keeps its
 * tracepoints' fast path tiny). */
NO_INSTRUMENT static __attribute__((noinline)) void filtered_enter(void *function)
{
    struct function_slot *slot = function_slot((uint64_t)(uintptr_t)function, true);
    if (!slot)
        return;
    if (slot->state != FUNCTION_ON) {
        if (slot->state == FUNCTION_THROTTLED && (++slot->skipped & (SKIP_CHECK_STRIDE - 1)) == 0)
            report_skipped_if_due();
        return;
    }
    uint64_t now;
    if (!user_timestamp(&now))
        return;
    slot->open++;
    if (open_user_regions < TIMED_DEPTH)
        function_table.enter_times[open_user_regions] = now;
    open_user_regions++;
    capture_user_event_at(CAPTURE_RECORD_USER_ENTER, function, now);
}

NO_INSTRUMENT static __attribute__((noinline)) void enter_past_deadline(void *function)
{
    uint64_t now;
    if (!user_timestamp(&now))
        return;
    open_user_regions++;
    capture_user_event_at(CAPTURE_RECORD_USER_ENTER, function, now);
}

NO_INSTRUMENT static __attribute__((noinline)) void filtered_exit(void *function)
{
    struct function_slot *slot = function_slot((uint64_t)(uintptr_t)function, false);
    if (!slot || slot->open == 0)
        return; /* its enter was not recorded */
    slot->open--;
    open_user_regions--;
    const uint64_t now = exit_timestamp();
    capture_user_event_at(CAPTURE_RECORD_USER_LEAVE, function, now);
    if (throttle_calls && open_user_regions < TIMED_DEPTH) {
        slot->calls++;
        slot->total_ns += now - function_table.enter_times[open_user_regions];
        if (slot->state == FUNCTION_ON && slot->calls > throttle_calls &&
            capture_ticks_to_ns(slot->total_ns) < (double)throttle_ns * (double)slot->calls) {
            slot->state = FUNCTION_THROTTLED;
            capture_throttled(slot->address, slot->calls, mean_ns_of(slot), 0);
            if (!function_table.next_skip_report)
                schedule_skip_report(now);
        }
    }
}

NO_INSTRUMENT static __attribute__((noinline)) void exit_past_deadline(void *function)
{
    open_user_regions--;
    capture_user_event_at(CAPTURE_RECORD_USER_LEAVE, function, exit_timestamp());
}

NO_INSTRUMENT void __cyg_profile_func_enter(void *function, void *call_site)
{
    (void)call_site;
    if (capture_inside_tool())
        return; /* nesting.h */
    if (!capture_records(CAPTURE_CLASS_USER)) {
        untraced_user_check();
        return;
    }
    if (hooks_filtered) {
        filtered_enter(function);
        return;
    }
    const uint64_t now = capture_now();
    if (__builtin_expect(now >= capture_deadline(), 0)) {
        enter_past_deadline(function); /* the check first, then a fresh timestamp */
        return;
    }
    open_user_regions++;
    capture_user_event_at(CAPTURE_RECORD_USER_ENTER, function, now);
}

NO_INSTRUMENT void __cyg_profile_func_exit(void *function, void *call_site)
{
    (void)call_site;
    if (capture_inside_tool())
        return; /* nesting.h */
    if (!capture_records(CAPTURE_CLASS_USER) || open_user_regions == 0)
        return;
    if (hooks_filtered) {
        filtered_exit(function);
        return;
    }
    const uint64_t now = capture_now();
    if (__builtin_expect(now >= capture_deadline(), 0)) {
        exit_past_deadline(function); /* a pause waited for first, then a fresh timestamp */
        return;
    }
    open_user_regions--;
    capture_user_event_at(CAPTURE_RECORD_USER_LEAVE, function, now);
}

/* OTFX_FILTER (filter_file.h); false (after saying why on stderr) when it is malformed. */
static bool read_filter(const char *path, int app_rank)
{
    char error[512];
    if (otfx_filter_read(path, &filter_rules, &filter_rule_count, error, sizeof(error)))
        return true;
    if (app_rank == 0)
        fprintf(stderr, "otfx-capture: OTFX_FILTER: %s\n", error);
    return false;
}

/* OTFX_THROTTLE (settings.tsv: CALLS:NS, 0 or off); false (after saying why) when it is malformed. */
static bool read_throttle(int app_rank)
{
    const char *problem = otfx_setting_problem(OTFX_SETTING_THROTTLE);
    if (problem) {
        if (app_rank == 0)
            fprintf(stderr, "otfx-capture: %s\n", problem);
        return false;
    }
    uint64_t calls = 0, ns = 0;
    throttle_calls = 0;
    if (otfx_setting_rate(OTFX_SETTING_THROTTLE, &calls, &ns)) {
        throttle_calls = calls;
        throttle_ns = ns;
    }
    return true;
}

bool capture_user_functions_start(int app_rank)
{
    const char *filter = otfx_setting_string(OTFX_SETTING_FILTER);
    if (filter && !read_filter(filter, app_rank))
        return false;
    if (!read_throttle(app_rank))
        return false;
    hooks_filtered = filter_rule_count > 0 || throttle_calls > 0;
    return true;
}

struct load_map {
    struct loaded_object {
        char *path;
        uint64_t base;
    } * objects;
    size_t count, capacity;
};

static int collect_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct load_map *map = data;
    char program[4096];
    const char *path = info->dlpi_name;
    if (!path || !path[0]) {
        /* The program itself (the first entry) has no name here. */
        if (map->count != 0)
            return 0;
        ssize_t length = readlink("/proc/self/exe", program, sizeof(program) - 1);
        if (length <= 0)
            return 0;
        program[length] = '\0';
        path = program;
    }
    if (path[0] != '/' && strchr(path, '/') == NULL && map->count != 0)
        return 0; /* linux-vdso.so.1: no file to read symbols from */
    if (!otfx_reserve((void **)&map->objects, &map->capacity, map->count + 1, sizeof(*map->objects), 32))
        return 1;
    char *copy = strdup(path);
    if (!copy)
        return 1;
    map->objects[map->count].path = copy;
    map->objects[map->count].base = (uint64_t)info->dlpi_addr;
    map->count++;
    return 0;
}

/* dlpi_adds when the map was last written (loads since the program started). */
static _Atomic unsigned long long map_adds;

static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
        *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the counter is the same in every entry: the first is enough */
}

bool capture_load_map_changed(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(read_adds, &adds);
    return adds != map_adds;
}

void capture_write_load_map(void)
{
    /* Collected first and written afterwards: writing may send a batch, which must not happen under the
     * dynamic loader's lock that dl_iterate_phdr holds. */
    struct load_map map = {0};
    unsigned long long adds = 0;
    dl_iterate_phdr(read_adds, &adds);
    map_adds = adds;
    dl_iterate_phdr(collect_object, &map);
    for (size_t i = 0; i < map.count; i++) {
        capture_write_object(map.objects[i].path, map.objects[i].base);
        free(map.objects[i].path);
    }
    free(map.objects);
}

void capture_send_load_map(void)
{
    capture_write_load_map();
    capture_send_now();
}

/* ---- otfx.h: regions and phases named by the program ------------------------------------------------
 * Each thread keeps its own table name → id (ids dense from 0 per thread, defined in the thread's own
 * stream before first use), so no lock: a lookup hashes the text and compares it once. The table is
 * allocated on the thread's first name and grown rarely (never per event once every name is known). */

struct name_slot {
    uint64_t hash;
    char *name; /* NULL: empty */
    uint32_t id;
    bool excluded; /* by the filter: never recorded, no id used */
};

struct name_table {
    struct name_slot *slots;
    uint32_t slot_count; /* a power of two */
    uint32_t used;       /* slots in use */
    uint32_t next_id;    /* ids are dense over the names recorded (excluded names take none) */
};

static _Thread_local struct name_table names;

/* A thread's tables (functions seen, otfx.h names) are freed when the thread ends: a key's destructor
 * runs in the ending thread, whose thread-local variables are still there. The main thread's stay until
 * the process ends. */
static pthread_key_t thread_tables_key;
static pthread_once_t thread_tables_once = PTHREAD_ONCE_INIT;

NO_INSTRUMENT static void free_thread_tables(void *unused)
{
    (void)unused;
    free(function_table.slots);
    free(function_table.enter_times);
    function_table = (struct function_table){0};
    for (uint32_t i = 0; i < names.slot_count; i++)
        free(names.slots[i].name);
    free(names.slots);
    names = (struct name_table){0};
}

NO_INSTRUMENT static void create_thread_tables_key(void)
{
    pthread_key_create(&thread_tables_key, free_thread_tables);
}

NO_INSTRUMENT static void free_at_thread_exit(void)
{
    pthread_once(&thread_tables_once, create_thread_tables_key);
    pthread_setspecific(thread_tables_key, &thread_tables_key); /* any non-NULL value */
}
NO_INSTRUMENT static uint64_t hash_name(const char *name, size_t *length)
{
    uint64_t hash = 14695981039346656037ull; /* FNV-1a */
    size_t i = 0;
    for (; name[i]; i++)
        hash = (hash ^ (unsigned char)name[i]) * 1099511628211ull;
    *length = i;
    return hash;
}

NO_INSTRUMENT static bool grow_names(struct name_table *table)
{
    uint32_t count = table->slot_count ? 2 * table->slot_count : 64;
    struct name_slot *slots = calloc(count, sizeof(*slots));
    if (!slots)
        return false;
    for (uint32_t i = 0; i < table->slot_count; i++) {
        if (!table->slots[i].name)
            continue;
        uint32_t j = (uint32_t)table->slots[i].hash & (count - 1);
        while (slots[j].name)
            j = (j + 1) & (count - 1);
        slots[j] = table->slots[i];
    }
    if (!table->slots)
        free_at_thread_exit();
    free(table->slots);
    table->slots = slots;
    table->slot_count = count;
    return true;
}

/* The id of `name` in this thread's stream, defined (NAME record) on its first use; false when out of
 * memory or when the filter excludes the name (*excluded then says which): the event is not recorded.
 * `filtered`: whether the filter applies (not to otfx_trigger's markers). */
NO_INSTRUMENT static bool name_id(const char *name, uint64_t *id, bool *excluded, bool filtered)
{
    *excluded = false;
    struct name_table *table = &names;
    size_t length;
    const uint64_t hash = hash_name(name ? name : "", &length);
    if (!name)
        name = "";
    if (table->slot_count) {
        for (uint32_t j = (uint32_t)hash & (table->slot_count - 1); table->slots[j].name;
             j = (j + 1) & (table->slot_count - 1)) {
            if (table->slots[j].hash == hash && strcmp(table->slots[j].name, name) == 0) {
                *id = table->slots[j].id;
                *excluded = table->slots[j].excluded;
                return !*excluded;
            }
        }
    }
    if (2 * (table->used + 1) > table->slot_count && !grow_names(table))
        return false;
    char *copy = strdup(name);
    if (!copy)
        return false;
    uint32_t j = (uint32_t)hash & (table->slot_count - 1);
    while (table->slots[j].name)
        j = (j + 1) & (table->slot_count - 1);
    if (filtered && !filter_includes_name(name)) {
        table->slots[j] = (struct name_slot){hash, copy, UINT32_MAX, true};
        table->used++;
        *excluded = true;
        return false;
    }
    table->slots[j] = (struct name_slot){hash, copy, table->next_id, false};
    *id = table->next_id++;
    table->used++;
    capture_write_name((uint32_t)*id, name, length);
    return true;
}

CAPTURE_EXPORT void otfx_region_begin(const char *name) NO_INSTRUMENT;
CAPTURE_EXPORT void otfx_region_end(const char *name) NO_INSTRUMENT;
CAPTURE_EXPORT void otfx_phase(const char *name) NO_INSTRUMENT;
CAPTURE_EXPORT void otfx_trigger(const char *name) NO_INSTRUMENT;

/* otfx.h regions the filter excluded, open on this thread: bit d of `excluded_regions` says whether the
 * region at depth d (counted over recorded and excluded ones, first 64 levels) was excluded, so that its
 * otfx_region_end is skipped as well. */
static CAPTURE_HOT_THREAD_LOCAL uint32_t manual_depth;
static CAPTURE_HOT_THREAD_LOCAL uint64_t excluded_regions;

NO_INSTRUMENT void otfx_region_begin(const char *name)
{
    uint64_t id, now;
    bool excluded;
    if (capture_inside_tool())
        return; /* nesting.h; so is its end */
    if (!capture_records(CAPTURE_CLASS_USER)) {
        untraced_user_check();
        return;
    }
    if (!user_timestamp(&now))
        return;
    if (!name_id(name, &id, &excluded, true)) {
        if (excluded && manual_depth < 64) {
            excluded_regions |= UINT64_C(1) << manual_depth;
            manual_depth++;
        }
        return;
    }
    if (manual_depth < 64) {
        excluded_regions &= ~(UINT64_C(1) << manual_depth);
        manual_depth++;
    }
    open_user_regions++;
    capture_user_event_at(CAPTURE_RECORD_REGION_BEGIN, (const void *)(uintptr_t)id, now);
}

NO_INSTRUMENT void otfx_region_end(const char *name)
{
    (void)name; /* the innermost open region ends: no lookup needed */
    if (capture_inside_tool())
        return;
    if (manual_depth > 0) {
        manual_depth--;
        if (excluded_regions & (UINT64_C(1) << manual_depth))
            return; /* it was excluded: nothing was recorded for it */
    }
    if (!capture_records(CAPTURE_CLASS_USER) || open_user_regions == 0)
        return;
    open_user_regions--;
    capture_user_event_at(CAPTURE_RECORD_REGION_END, NULL, exit_timestamp());
}

/* A phase marker named `name`; `filtered`: whether the filter may exclude it. */
NO_INSTRUMENT static void record_phase(const char *name, bool filtered)
{
    uint64_t id, now;
    if (capture_inside_tool())
        return;
    if (!capture_records(CAPTURE_CLASS_USER)) {
        untraced_user_check();
        return;
    }
    bool excluded;
    if (!user_timestamp(&now) || !name_id(name, &id, &excluded, filtered))
        return;
    capture_user_event_at(CAPTURE_RECORD_NAMED_PHASE, (const void *)(uintptr_t)id, now);
}

NO_INSTRUMENT void otfx_phase(const char *name)
{
    record_phase(name, true);
}

/* A phase named "trigger:NAME" (OTFX_TRIGGER_MARKER_PREFIX, tbon/include/otfx/trigger.h), which marker(NAME)
 * triggers at the places look for; the filter does not apply to it. */
NO_INSTRUMENT void otfx_trigger(const char *name)
{
    char marker[256];
    snprintf(marker, sizeof(marker), "trigger:%s", name ? name : "");
    record_phase(marker, false);
}

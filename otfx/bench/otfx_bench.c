/* otfx_bench.c — otfx-bench: how fast otfx ingests events, how small it stores them compared with the
 * OTF2 library's event writer, and how fast a profile over a full buffer is. Prints one key=value
 * line per figure, shape by shape; docs/benchmarks.md records the figures.
 *
 *   otfx-bench [--events N] [--shape user-functions|stencil|collectives|all] [--budget MiB]
 *              [--structure on|off] [--keep DIR]
 *
 * --structure off: the traces do not build their task activity graphs (otfx_trace_config.structure),
 * to measure what building them costs. --keep DIR: the export of each shape's full buffer is left in DIR
 * as archive <shape> (to compare archives between versions of the export).
 *
 * Per shape (synth.h), on one thread:
 *   events                     N events of rank 0's stream
 *   otfx_ingest_events_per_s   N / time spent in otfx_trace_append (batches of 4096, budget --budget)
 *   otfx_bytes_per_event       bytes the trace uses / events it holds, after the N events
 *   otfx_raw_bytes_per_event   the same without LZ4 (compress = false)
 *   otf2_bytes_per_event       size of the .evt file the OTF2 event writer wrote for the same N events / N
 *   otf2_ns_per_event          time spent in OTF2_EvtWriter_* calls (and closing the writer) / N;
 *                              the archive goes to /dev/shm when there is one (OTF2's cost, not the disk's)
 *   otf2_cpu_ns_per_event      the same in the thread's CPU time (what a loaded machine cannot blur)
 *   storage_ratio_otf2_to_otfx otf2_bytes_per_event / otfx_bytes_per_event
 *   fill_events, fill_events_per_s, reductions   filling a buffer of --budget MiB until it has reduced
 *   profile_query_ms           otfx_query_profile over the whole full buffer, median of 7
 *   profile_window_ms          the same over the last tenth of the buffer's time range
 *   decode_cpu_ns_per_event    one otfx_query_events over the full buffer, thread CPU time / events held:
 *                              what each read of the export's passes costs at least
 *   otf2_export_ns_per_event   otfx_otf2_export of the full buffer (to /dev/shm if there) / events held
 *   otf2_export_cpu_ns_per_event  the same in the thread's CPU time
 *   otf2_import_ns_per_event   otfx_otf2_import of that archive / events imported
 *
 * With --metrics N (1..3), per shape also a stream that reads N counters at every ENTER and LEAVE (METRIC
 * events right after them, as the capture library writes them), filled into a buffer of --budget MiB
 * until it has reduced; figures in the thread's CPU time (the machine is shared):
 *   metric_events_held, metric_ingest_events_per_s
 *   metric_chunk_bytes, metric_summary_bytes, metric_summary_metric_bytes   per detail chunk held: the
 *                              sealed chunk, its summary section, and the metric statistics in it
 *   metric_profile_query_cpu_ms     otfx_query_metric_profile over the whole full buffer, median of 7
 *   metric_profile_window_cpu_ms    the same over the last tenth of the buffer's time range
 *   metric_profile_decode_floor_cpu_ms   otfx_query_events over the whole buffer with a callback that
 *                              only counts: what a profile that decodes every chunk (the module before
 *                              chunk summaries held metrics) spends before its own walk, median of 7
 */
#define _POSIX_C_SOURCE 200809L
#include "otf2_common.h"
#include "synth.h"
#include "trace_internal.h"

#include <otf2/otf2.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { BATCH = 4096, GRID_SIDE = 8, PROFILE_RUNS = 7 };

/* Filling stops here even if the buffer never reduced (it would mean a broken reduction). */
static const uint64_t FILL_LIMIT = UINT64_C(2000000000);

typedef struct options {
    uint64_t events;
    size_t budget_bytes;
    bool shapes[SYNTH_SHAPE_COUNT];
    bool structure;
    uint32_t metrics;
    const char *keep; /* --keep DIR: the export's archives stay there, one per shape */
} options;

static void die(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "otfx-bench: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static void check(otfx_status status, const char *what)
{
    if (status != OTFX_OK && status != OTFX_ERR_STOPPED) {
        fprintf(stderr, "otfx-bench: %s: %s: %s\n", what, otfx_strerror(status), otfx_last_error());
        exit(1);
    }
}

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static double cpu_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static void usage(void)
{
    fprintf(stderr, "usage: otfx-bench [--events N] [--shape user-functions|stencil|collectives|all] "
                    "[--budget MiB] [--structure on|off] [--metrics 0..3] [--keep DIR]\n");
    exit(2);
}

static options parse_options(int argc, char **argv)
{
    options opts = {.events = 4000000, .budget_bytes = (size_t)64 << 20, .structure = true};
    bool any_shape = false;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--events") == 0 && value) {
            opts.events = strtoull(value, NULL, 10);
            if (opts.events < BATCH)
                die("--events must be at least %d", BATCH);
        } else if (strcmp(argv[i], "--budget") == 0 && value) {
            unsigned long mib = strtoul(value, NULL, 10);
            if (mib < 1)
                die("--budget must be at least 1 MiB, not %s", value);
            opts.budget_bytes = (size_t)mib << 20;
        } else if (strcmp(argv[i], "--structure") == 0 && value) {
            if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
                die("--structure is on or off, not %s", value);
            opts.structure = strcmp(value, "on") == 0;
        } else if (strcmp(argv[i], "--metrics") == 0 && value) {
            opts.metrics = (uint32_t)strtoul(value, NULL, 10);
            if (opts.metrics > 3)
                die("--metrics is 0 to 3, not %s", value);
        } else if (strcmp(argv[i], "--keep") == 0 && value) {
            opts.keep = value;
        } else if (strcmp(argv[i], "--shape") == 0 && value) {
            synth_shape shape;
            if (strcmp(value, "all") == 0) {
                for (int s = 0; s < SYNTH_SHAPE_COUNT; s++)
                    opts.shapes[s] = true;
            } else if (synth_shape_parse(value, &shape)) {
                opts.shapes[shape] = true;
            } else {
                die("unknown shape %s", value);
            }
            any_shape = true;
        } else {
            usage();
        }
    }
    for (int s = 0; !any_shape && s < SYNTH_SHAPE_COUNT; s++)
        opts.shapes[s] = true;
    return opts;
}

static synth *new_stream(otfx_defs *defs, synth_shape shape)
{
    synth *stream = synth_create(defs, shape, 0, GRID_SIDE, 42);
    if (!stream)
        die("cannot create the %s stream", synth_shape_name(shape));
    return stream;
}

static otfx_trace *new_trace(otfx_defs *defs, const synth *stream, size_t budget, bool compress,
                             bool structure)
{
    otfx_trace_config config = otfx_trace_config_default(budget);
    config.compress = compress;
    config.structure = structure;
    otfx_trace *trace;
    check(otfx_trace_create(&config, defs, synth_location(stream), &trace), "otfx_trace_create");
    return trace;
}

/* ---- otfx ---- */

typedef struct ingest_result {
    double seconds;
    double bytes_per_event;
} ingest_result;

/* Appends `events` events to the trace, timing only otfx_trace_append. */
static ingest_result ingest(otfx_trace *trace, synth *stream, uint64_t events, otfx_event *batch)
{
    ingest_result result = {0};
    for (uint64_t done = 0; done < events; done += BATCH) {
        size_t n = events - done < BATCH ? (size_t)(events - done) : BATCH;
        synth_next(stream, batch, n);
        size_t appended;
        double start = now_seconds();
        otfx_status status = otfx_trace_append(trace, batch, n, &appended);
        result.seconds += now_seconds() - start;
        check(status, "otfx_trace_append");
    }
    otfx_trace_status status;
    check(otfx_trace_status_get(trace, &status), "otfx_trace_status_get");
    result.bytes_per_event = status.events_held ? (double)status.bytes_used / (double)status.events_held : 0;
    return result;
}

static int compare_doubles(const void *a, const void *b)
{
    double left = *(const double *)a, right = *(const double *)b;
    return (left > right) - (left < right);
}

static double median_profile_ms(otfx_trace *trace, otfx_time from, otfx_time to)
{
    otfx_profile *profile = otfx_profile_create();
    if (!profile)
        die("out of memory");
    double runs[PROFILE_RUNS];
    for (int r = 0; r < PROFILE_RUNS; r++) {
        otfx_profile_clear(profile);
        double start = now_seconds();
        check(otfx_query_profile(trace, from, to, profile), "otfx_query_profile");
        runs[r] = (now_seconds() - start) * 1e3;
    }
    otfx_profile_destroy(profile);
    qsort(runs, PROFILE_RUNS, sizeof *runs, compare_doubles);
    return runs[PROFILE_RUNS / 2];
}

/* ---- OTF2 ---- */

static void otf2_check(OTF2_ErrorCode code, const char *what)
{
    if (code != OTF2_SUCCESS) {
        fprintf(stderr, "otfx-bench: %s: %s\n", what, OTF2_Error_GetDescription(code));
        exit(1);
    }
}

/* Payload writers for the record table. The synthetic streams use the world communicator for
 * messages and rooted collectives, so ranks in the communicator are world ranks; region, communicator
 * and metric refs are used as they are (the benchmark measures the writer, not a full export). */
static OTF2_ErrorCode write_REGION(OTF2_EvtWriter *writer, otfx_otf2_REGION_writer record,
                                   const otfx_event *event)
{
    return record(writer, NULL, event->time, event->u.region.region);
}

static OTF2_ErrorCode write_MESSAGE(OTF2_EvtWriter *writer, otfx_otf2_MESSAGE_writer record,
                                    const otfx_event *event)
{
    return record(writer, NULL, event->time, event->u.msg.peer, event->u.msg.comm, event->u.msg.tag,
                  event->u.msg.bytes);
}

static OTF2_ErrorCode write_MESSAGE_REQUEST(OTF2_EvtWriter *writer, otfx_otf2_MESSAGE_REQUEST_writer record,
                                            const otfx_event *event)
{
    return record(writer, NULL, event->time, event->u.msg.peer, event->u.msg.comm, event->u.msg.tag,
                  event->u.msg.bytes, event->u.msg.request);
}

static OTF2_ErrorCode write_REQUEST(OTF2_EvtWriter *writer, otfx_otf2_REQUEST_writer record,
                                    const otfx_event *event)
{
    return record(writer, NULL, event->time, event->u.request.request);
}

static OTF2_ErrorCode write_NONE(OTF2_EvtWriter *writer, otfx_otf2_NONE_writer record,
                                 const otfx_event *event)
{
    return record(writer, NULL, event->time);
}

static OTF2_ErrorCode write_COLLECTIVE(OTF2_EvtWriter *writer, otfx_otf2_COLLECTIVE_writer record,
                                       const otfx_event *event)
{
    return record(writer, NULL, event->time, (OTF2_CollectiveOp)event->u.coll.op, event->u.coll.comm,
                  event->u.coll.root, event->u.coll.sent, event->u.coll.received);
}

static OTF2_ErrorCode write_COLLECTIVE_REQUEST(OTF2_EvtWriter *writer,
                                               otfx_otf2_COLLECTIVE_REQUEST_writer record,
                                               const otfx_event *event)
{
    return record(writer, NULL, event->time, (OTF2_CollectiveOp)event->u.coll.op, event->u.coll.comm,
                  event->u.coll.root, event->u.coll.sent, event->u.coll.received, event->u.coll.request);
}

static OTF2_ErrorCode write_METRIC(OTF2_EvtWriter *writer, otfx_otf2_METRIC_writer record,
                                   const otfx_event *event)
{
    OTF2_Type type = OTF2_TYPE_DOUBLE; /* the streams' only metric */
    OTF2_MetricValue value;
    value.unsigned_int = event->u.metric.value;
    return record(writer, NULL, event->time, event->u.metric.metric, 1, &type, &value);
}

static void otf2_write(OTF2_EvtWriter *writer, const otfx_event *event)
{
    OTF2_ErrorCode code;
    switch (event->type) {
#define BENCH_WRITE_RECORD(otfx_type, record, printed, payload)                                              \
    case otfx_type:                                                                                          \
        code = write_##payload(writer, OTF2_EvtWriter_##record, event);                                      \
        break;
        OTFX_OTF2_RECORD_TABLE(BENCH_WRITE_RECORD)
#undef BENCH_WRITE_RECORD
    default:
        die("the synthetic streams have no %s events", otfx_event_type_name(event->type));
    }
    otf2_check(code, "writing an OTF2 event");
}

typedef struct otf2_result {
    double seconds, cpu_seconds;
    double bytes_per_event;
} otf2_result;

/* A fresh directory in memory (tmpfs) when there is one: the figures are OTF2's and otfx's cost, not
 * the disk's. */
static void scratch_directory(char *directory, size_t size)
{
    struct stat shm;
    snprintf(directory, size, "%s/otfx-bench-XXXXXX",
             stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) ? "/dev/shm" : "/tmp");
    if (!mkdtemp(directory))
        die("cannot create a scratch directory: %s", strerror(errno));
}

/* Removes `<directory>/<name>.{otf2,def}` and `<directory>/<name>/<location>.{evt,def}` of the
 * locations 0 .. locations-1, then the directories. */
static void remove_archive(const char *directory, const char *name, size_t locations)
{
    char path[4096];
    for (size_t l = 0; l < locations; l++) {
        snprintf(path, sizeof path, "%s/%s/%zu.evt", directory, name, l);
        unlink(path);
        snprintf(path, sizeof path, "%s/%s/%zu.def", directory, name, l);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%s", directory, name);
    rmdir(path);
    snprintf(path, sizeof path, "%s/%s.otf2", directory, name);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.def", directory, name);
    unlink(path);
    if (rmdir(directory) != 0)
        fprintf(stderr, "otfx-bench: could not remove %s: %s\n", directory, strerror(errno));
}

/* The same events through OTF2's event writer into a one-location archive (POSIX, uncompressed). */
static otf2_result write_otf2(synth *stream, uint64_t events, otfx_event *batch)
{
    char directory[64];
    scratch_directory(directory, sizeof directory);
    OTF2_Archive *archive = OTF2_Archive_Open(directory, "bench", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                              OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!archive)
        die("cannot open an OTF2 archive");
    otf2_check(OTF2_Archive_SetFlushCallbacks(archive, &otfx_otf2_flush_always, NULL),
               "OTF2 flush callbacks");
    otf2_check(OTF2_Archive_SetSerialCollectiveCallbacks(archive), "OTF2 collective callbacks");
    otf2_check(OTF2_Archive_OpenEvtFiles(archive), "OTF2 event files");
    OTF2_EvtWriter *writer = OTF2_Archive_GetEvtWriter(archive, 0);
    if (!writer)
        die("cannot create an OTF2 event writer");

    otf2_result result = {0};
    for (uint64_t done = 0; done < events; done += BATCH) {
        size_t n = events - done < BATCH ? (size_t)(events - done) : BATCH;
        synth_next(stream, batch, n);
        double start = now_seconds(), cpu_start = cpu_seconds();
        for (size_t e = 0; e < n; e++)
            otf2_write(writer, &batch[e]);
        result.seconds += now_seconds() - start;
        result.cpu_seconds += cpu_seconds() - cpu_start;
    }
    double start = now_seconds(), cpu_start = cpu_seconds();
    otf2_check(OTF2_Archive_CloseEvtWriter(archive, writer), "closing the OTF2 event writer");
    result.seconds += now_seconds() - start;
    result.cpu_seconds += cpu_seconds() - cpu_start;
    otf2_check(OTF2_Archive_CloseEvtFiles(archive), "closing the OTF2 event files");
    OTF2_GlobalDefWriter *global = OTF2_Archive_GetGlobalDefWriter(archive);
    if (!global)
        die("cannot write OTF2 definitions");
    otf2_check(OTF2_GlobalDefWriter_WriteClockProperties(global, 1000000000, 0, 0, OTF2_UNDEFINED_TIMESTAMP),
               "OTF2 clock properties");
    otf2_check(OTF2_Archive_CloseGlobalDefWriter(archive, global), "closing the OTF2 definitions");
    otf2_check(OTF2_Archive_Close(archive), "closing the OTF2 archive");

    char path[4096];
    struct stat info;
    snprintf(path, sizeof path, "%s/bench/0.evt", directory);
    if (stat(path, &info) != 0)
        die("cannot stat %s", path);
    result.bytes_per_event = (double)info.st_size / (double)events;
    remove_archive(directory, "bench", 1);
    return result;
}

/* ---- export and import of the full buffer ---- */

static int count_event(const otfx_event *event, void *user)
{
    (void)event;
    ++*(uint64_t *)user;
    return 0;
}

static void export_and_import(otfx_defs *defs, otfx_trace *trace, size_t budget, uint64_t events_held,
                              const char *keep, const char *shape)
{
    uint64_t decoded = 0;
    double cpu_start = cpu_seconds();
    check(otfx_query_events(trace, 0, OTFX_TIME_MAX, true, count_event, &decoded), "otfx_query_events");
    printf("decode_cpu_ns_per_event=%.1f\n", (cpu_seconds() - cpu_start) * 1e9 / (double)decoded);

    char directory[2048];
    otfx_export_options whole = otfx_export_options_default();
    if (keep) {
        snprintf(directory, sizeof directory, "%s", keep);
        whole.overwrite = true;
    } else {
        scratch_directory(directory, sizeof directory);
    }
    double start = now_seconds();
    cpu_start = cpu_seconds();
    const char *name = keep ? shape : "full";
    check(otfx_otf2_export(directory, name, defs, &trace, 1, &whole), "otfx_otf2_export");
    printf("otf2_export_ns_per_event=%.1f\n", (now_seconds() - start) * 1e9 / (double)events_held);
    printf("otf2_export_cpu_ns_per_event=%.1f\n", (cpu_seconds() - cpu_start) * 1e9 / (double)events_held);

    char anchor[2200];
    snprintf(anchor, sizeof anchor, "%s/%s.otf2", directory, name);
    otfx_trace_config config = otfx_trace_config_default(budget);
    otfx_defs *imported_defs;
    otfx_trace **imported;
    size_t count;
    otfx_import_stats stats;
    start = now_seconds();
    check(otfx_otf2_import_with_stats(anchor, &config, &imported_defs, &imported, &count, &stats),
          "otfx_otf2_import");
    printf("otf2_import_ns_per_event=%.1f\n", (now_seconds() - start) * 1e9 / (double)stats.events_imported);
    for (size_t t = 0; t < count; t++)
        otfx_trace_destroy(imported[t]);
    free(imported);
    otfx_defs_destroy(imported_defs);
    if (!keep)
        remove_archive(directory, "full",
                       GRID_SIDE * GRID_SIDE); /* the world: exported rank and placeholders */
}

/* ---- one shape ---- */

static void run_shape(synth_shape shape, const options *opts, otfx_event *batch)
{
    printf("shape=%s\nstructure=%s\n", synth_shape_name(shape), opts->structure ? "on" : "off");
    printf("events=%llu\n", (unsigned long long)opts->events);

    otfx_defs *defs = otfx_defs_create();
    if (!defs)
        die("out of memory");

    /* Ingest, then keep appending until the buffer has reduced, then profile the full buffer. */
    synth *stream = new_stream(defs, shape);
    otfx_trace *trace = new_trace(defs, stream, opts->budget_bytes, true, opts->structure);
    ingest_result ingested = ingest(trace, stream, opts->events, batch);
    printf("otfx_ingest_events_per_s=%.0f\n", (double)opts->events / ingested.seconds);
    printf("otfx_bytes_per_event=%.3f\n", ingested.bytes_per_event);

    synth *raw_stream = new_stream(defs, shape);
    otfx_trace *raw = new_trace(defs, raw_stream, (size_t)1 << 30, false, opts->structure);
    uint64_t raw_events = opts->events < 2000000 ? opts->events : 2000000;
    printf("otfx_raw_bytes_per_event=%.3f\n", ingest(raw, raw_stream, raw_events, batch).bytes_per_event);
    otfx_trace_destroy(raw);
    synth_destroy(raw_stream);

    synth *otf2_stream = new_stream(defs, shape);
    otf2_result written = write_otf2(otf2_stream, opts->events, batch);
    synth_destroy(otf2_stream);
    printf("otf2_bytes_per_event=%.3f\n", written.bytes_per_event);
    printf("otf2_ns_per_event=%.1f\n", written.seconds * 1e9 / (double)opts->events);
    printf("otf2_cpu_ns_per_event=%.1f\n", written.cpu_seconds * 1e9 / (double)opts->events);
    printf("storage_ratio_otf2_to_otfx=%.2f\n", written.bytes_per_event / ingested.bytes_per_event);

    uint64_t filled = opts->events;
    double fill_seconds = ingested.seconds;
    otfx_trace_status status;
    check(otfx_trace_status_get(trace, &status), "otfx_trace_status_get");
    while (status.reductions == 0 && filled < FILL_LIMIT) {
        ingest_result more = ingest(trace, stream, 1 << 20, batch);
        fill_seconds += more.seconds;
        filled += 1 << 20;
        check(otfx_trace_status_get(trace, &status), "otfx_trace_status_get");
    }
    if (status.reductions == 0)
        die("the %s buffer never reduced", synth_shape_name(shape));
    printf("fill_events=%llu\n", (unsigned long long)filled);
    printf("fill_events_per_s=%.0f\n", (double)filled / fill_seconds);
    printf("fill_events_held=%llu\n", (unsigned long long)status.events_held);
    printf("fill_bytes_used=%zu\n", status.bytes_used);
    printf("reductions=%llu\n", (unsigned long long)status.reductions);
    printf("profile_query_ms=%.2f\n", median_profile_ms(trace, 0, OTFX_TIME_MAX));
    otfx_time tenth = (status.last_time - status.first_time) / 10;
    printf("profile_window_ms=%.2f\n", median_profile_ms(trace, status.last_time - tenth, OTFX_TIME_MAX));

    export_and_import(defs, trace, opts->budget_bytes, status.events_held, opts->keep,
                      synth_shape_name(shape));

    otfx_trace_destroy(trace);
    synth_destroy(stream);
    otfx_defs_destroy(defs);
    fflush(stdout);
}

/* ---- metrics read at every ENTER and LEAVE ---- */

/* `in` with `metrics` counter values after every ENTER and LEAVE: a clock-like counter that grows with
 * time and slower ones that grow by a few per read. Returns the events written to `out`. */
static size_t with_metric_reads(const otfx_event *in, size_t n, const otfx_ref *metric, uint32_t metrics,
                                uint64_t *value, otfx_event *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        out[k++] = in[i];
        if (in[i].type != OTFX_EV_ENTER && in[i].type != OTFX_EV_LEAVE)
            continue;
        for (uint32_t m = 0; m < metrics; m++) {
            value[m] = m == 0 ? in[i].time / 2 : value[m] + (in[i].time >> (4 + 3 * m)) % 7;
            out[k++] =
                (otfx_event){.time = in[i].time, .type = OTFX_EV_METRIC, .u.metric = {metric[m], value[m]}};
        }
    }
    return k;
}

static double median_cpu_ms(otfx_trace *trace, otfx_time from, otfx_time to, bool decode_floor)
{
    double ms[PROFILE_RUNS];
    for (int run = 0; run < PROFILE_RUNS; run++) {
        otfx_metric_profile *profile = otfx_metric_profile_create();
        uint64_t events = 0;
        if (!profile)
            die("out of memory");
        double start = cpu_seconds();
        if (decode_floor)
            check(otfx_query_events(trace, from, to, true, count_event, &events), "otfx_query_events");
        else
            check(otfx_query_metric_profile(trace, from, to, profile), "otfx_query_metric_profile");
        ms[run] = (cpu_seconds() - start) * 1e3;
        otfx_metric_profile_destroy(profile);
    }
    qsort(ms, PROFILE_RUNS, sizeof *ms, compare_doubles);
    return ms[PROFILE_RUNS / 2];
}

static void run_metrics(synth_shape shape, const options *opts, otfx_event *batch)
{
    static const char *names[3] = {"task-clock", "page-faults", "context-switches"};
    otfx_defs *defs = otfx_defs_create();
    if (!defs)
        die("out of memory");
    otfx_ref metric[3];
    for (uint32_t m = 0; m < opts->metrics; m++)
        check(otfx_defs_metric(defs, names[m], "1", OTFX_METRIC_UINT64, &metric[m]), "otfx_defs_metric");
    synth *stream = new_stream(defs, shape);
    otfx_trace *trace = new_trace(defs, stream, opts->budget_bytes, true, opts->structure);
    otfx_event *reads = malloc(sizeof *reads * BATCH * (1 + opts->metrics));
    if (!reads)
        die("out of memory");
    uint64_t value[3] = {0, 0, 0}, appended_total = 0;
    double seconds = 0;
    otfx_trace_status status;
    do {
        for (int i = 0; i < 256; i++) {
            synth_next(stream, batch, BATCH);
            size_t n = with_metric_reads(batch, BATCH, metric, opts->metrics, value, reads), appended;
            double start = cpu_seconds();
            check(otfx_trace_append(trace, reads, n, &appended), "otfx_trace_append");
            seconds += cpu_seconds() - start;
            appended_total += n;
        }
        check(otfx_trace_status_get(trace, &status), "otfx_trace_status_get");
    } while (status.reductions == 0 && appended_total < FILL_LIMIT);
    free(reads);
    printf("metrics=%u\nmetric_events_held=%llu\n", opts->metrics, (unsigned long long)status.events_held);
    printf("metric_ingest_events_per_s=%.0f\n", (double)appended_total / seconds);

    uint64_t chunks = 0, chunk_bytes = 0, summary_bytes = 0, metric_bytes = 0;
    summary stats;
    summary_init(&stats);
    uint8_t *encoded = NULL;
    size_t encoded_capacity = 0;
    for (uint32_t i = 0; i < otfx_trace_test_piece_count(trace); i++) {
        const uint8_t *bytes;
        size_t size;
        chunk_info info;
        check(otfx_trace_test_piece_bytes(trace, i, &bytes, &size), "otfx_trace_test_piece_bytes");
        check(chunk_parse(bytes, size, false, &info), "chunk_parse");
        if (info.flags & CHUNK_SUMMARY_ONLY)
            continue;
        check(chunk_read_summary(&info, &stats), "chunk_read_summary");
        const size_t bound = metric_stats_encoded_bound(&stats.metrics);
        if (bound > encoded_capacity) {
            free(encoded);
            encoded = malloc(bound);
            encoded_capacity = bound;
            if (!encoded)
                die("out of memory");
        }
        chunks++;
        chunk_bytes += size;
        summary_bytes += info.summary_bytes;
        metric_bytes += (uint64_t)(metric_stats_encode(&stats.metrics, encoded) - encoded);
    }
    free(encoded);
    summary_free(&stats);
    if (!chunks)
        die("no detail chunk held");
    printf("metric_chunk_bytes=%.0f\nmetric_summary_bytes=%.0f\nmetric_summary_metric_bytes=%.0f\n",
           (double)chunk_bytes / (double)chunks, (double)summary_bytes / (double)chunks,
           (double)metric_bytes / (double)chunks);
    printf("metric_profile_query_cpu_ms=%.2f\n", median_cpu_ms(trace, 0, OTFX_TIME_MAX, false));
    otfx_time tenth = (status.last_time - status.first_time) / 10;
    printf("metric_profile_window_cpu_ms=%.2f\n",
           median_cpu_ms(trace, status.last_time - tenth, OTFX_TIME_MAX, false));
    printf("metric_profile_decode_floor_cpu_ms=%.2f\n", median_cpu_ms(trace, 0, OTFX_TIME_MAX, true));
    otfx_trace_destroy(trace);
    synth_destroy(stream);
    otfx_defs_destroy(defs);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    options opts = parse_options(argc, argv);
    otfx_event *batch = malloc(BATCH * sizeof *batch);
    if (!batch)
        die("out of memory");
    for (int s = 0; s < SYNTH_SHAPE_COUNT; s++)
        if (opts.shapes[s]) {
            run_shape((synth_shape)s, &opts, batch);
            if (opts.metrics)
                run_metrics((synth_shape)s, &opts, batch);
        }
    free(batch);
    return 0;
}

/*
 * overhead.c — the recorder's cost per record kind (overhead.h).
 *
 * Each writer the wrappers use is timed on its real code path — the timer read, the append, the
 * header — with this thread's records redirected to a scratch buffer large enough for a whole run, so
 * that the loop walks through fresh memory as a batch does and nothing is ever sent. A run's cost is
 * its duration over its records (CLOCK_MONOTONIC, whose ~20 ns read is amortised over 1000 records); the
 * median of 7 runs after a warm-up one keeps a preemption or a cold cache from counting. What it does
 * not see: the wrapper's bookkeeping around the record (request and channel tables, the communicator
 * lookup) and the batch sends, amortised over ~3000 records but not free.
 */
#include "overhead.h"
#include "recorder.h"
#include "timer.h"

#include <otfx/testpoint.h>

#include <stdlib.h>
#include <string.h>

enum { SCRATCH_RECORD_BYTES = 64 }; /* above the largest fixed record a writer below makes */

typedef void (*record_writer)(void);

static void write_enter(void)
{
    capture_enter_at(0, capture_now());
}
static void write_leave(void)
{
    capture_leave(0);
}
static void write_p2p(void)
{
    capture_write_p2p(CAPTURE_RECORD_RECV, 0, 0, 1, 7, 8, 0, 0, 1, 0);
}
static void write_collective(void)
{
    const struct capture_collective_info info = {.comm_id = 0, .root_world = -1, .sequence = 1};
    capture_collective(0, &info);
}
static void write_phase(void)
{
    capture_phase(0, 1);
}
static void write_user(void)
{
    capture_user_event(CAPTURE_RECORD_USER_ENTER, (const void *)write_user);
}

/* Which writer makes each event kind's records. */
static const struct {
    enum capture_record_kind kind;
    record_writer writer;
} writers[] = {
    {CAPTURE_RECORD_ENTER, write_enter},
    {CAPTURE_RECORD_LEAVE, write_leave},
    {CAPTURE_RECORD_SEND, write_p2p},
    {CAPTURE_RECORD_RECV, write_p2p},
    {CAPTURE_RECORD_RECV_POSTED, write_p2p},
    {CAPTURE_RECORD_PROBE, write_p2p},
    {CAPTURE_RECORD_REQUEST_DONE, write_p2p},
    {CAPTURE_RECORD_COLLECTIVE_REQUEST, write_p2p},
    {CAPTURE_RECORD_COLLECTIVE, write_collective},
    {CAPTURE_RECORD_PHASE, write_phase},
    {CAPTURE_RECORD_USER_ENTER, write_user},
    {CAPTURE_RECORD_USER_LEAVE, write_user},
    {CAPTURE_RECORD_REGION_BEGIN, write_user},
    {CAPTURE_RECORD_REGION_END, write_user},
    {CAPTURE_RECORD_NAMED_PHASE, write_user},
};

static int compare_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Median picoseconds per record of one writer. */
static uint32_t time_writer(record_writer writer, void *scratch, size_t bytes)
{
    uint64_t runs[CAPTURE_OVERHEAD_RUNS];
    for (int run = -1; run < CAPTURE_OVERHEAD_RUNS; run++) {
        if (!capture_recorder_scratch_begin(scratch, bytes))
            return 0;
        const uint64_t begin = capture_monotonic_ns();
        for (int i = 0; i < CAPTURE_OVERHEAD_REPETITIONS; i++)
            writer();
        const uint64_t end = capture_monotonic_ns();
        capture_recorder_scratch_end();
        if (run >= 0)
            runs[run] = (end - begin) * 1000u / CAPTURE_OVERHEAD_REPETITIONS;
    }
    qsort(runs, CAPTURE_OVERHEAD_RUNS, sizeof(runs[0]), compare_u64);
    const uint64_t median = runs[CAPTURE_OVERHEAD_RUNS / 2];
    return median > UINT32_MAX ? UINT32_MAX : (uint32_t)median;
}

void capture_measure_overhead(struct capture_overhead_record *out)
{
    memset(out, 0, sizeof(*out));
    out->header.timestamp = capture_now();
    out->injected_ns = capture_injected_overhead_ns;
    out->runs = CAPTURE_OVERHEAD_RUNS;
    out->repetitions = CAPTURE_OVERHEAD_REPETITIONS;
    const size_t bytes =
        sizeof(struct capture_batch_header) + (size_t)CAPTURE_OVERHEAD_REPETITIONS * SCRATCH_RECORD_BYTES;
    void *scratch = malloc(bytes);
    if (!scratch)
        return; /* nothing measured: every cost 0, which the place reports as unmeasured */
    const uint32_t injected = capture_injected_overhead_ns;
    const uint64_t entered = capture_entered;
    capture_injected_overhead_ns = 0;
    uint32_t measured[sizeof(writers) / sizeof(writers[0])];
    for (size_t k = 0; k < sizeof(writers) / sizeof(writers[0]); k++) {
        measured[k] = 0;
        for (size_t j = 0; j < k; j++)
            if (writers[j].writer == writers[k].writer)
                measured[k] = measured[j];
        if (!measured[k])
            measured[k] = time_writer(writers[k].writer, scratch, bytes);
        out->cost_ps[writers[k].kind] = measured[k];
    }
    capture_injected_overhead_ns = injected;
    capture_entered = entered;
    free(scratch);
}

/* The turns of capture_spin_loops that take `ns` on this core undisturbed: the fastest of 7 timed runs
 * of 100000 turns (a run that was descheduled or shared the core is slower, never faster). */
static uint64_t spin_turns_for(uint32_t ns)
{
    if (!ns)
        return 0;
    enum { CALIBRATION_TURNS = 100000 };
    uint64_t fastest = UINT64_MAX;
    for (int run = 0; run < CAPTURE_OVERHEAD_RUNS; run++) {
        const uint64_t begin = capture_monotonic_ns();
        capture_spin_loops(CALIBRATION_TURNS);
        const uint64_t took = capture_monotonic_ns() - begin;
        fastest = took && took < fastest ? took : fastest;
    }
    return fastest == UINT64_MAX ? ns : (uint64_t)ns * CALIBRATION_TURNS / fastest;
}

static void set_injection(uint32_t ns)
{
    capture_injected_overhead_loops = spin_turns_for(ns);
    capture_injected_overhead_ns = ns;
}

void capture_overhead_start(void)
{
    long long injected_ns = 0;
    struct capture_overhead_record record;
    capture_measure_overhead(&record);
    if (otfx_testpoint_integer(OTFX_SETTING_TEST_OVERHEAD_NS, &injected_ns) && injected_ns > 0)
        record.injected_ns = (uint32_t)injected_ns;
    capture_write_overhead(&record);
    set_injection(record.injected_ns);
}

void capture_overhead_remeasure(void)
{
    const uint64_t begun = capture_monotonic_ns();
    struct capture_overhead_record record;
    capture_measure_overhead(&record);
    long long injected_ns = 0;
    if (otfx_testpoint_integer(OTFX_SETTING_TEST_OVERHEAD_REMEASURED_NS, &injected_ns))
        record.injected_ns = (uint32_t)injected_ns;
    if (record.injected_ns != capture_injected_overhead_ns)
        set_injection(record.injected_ns);
    record.took_ns = capture_monotonic_ns() - begun;
    capture_write_overhead(&record);
}

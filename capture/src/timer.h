/*
 * timer.h — record timestamps (private to libotfx-capture).
 *
 * Records carry raw ticks of the cheapest correct clock: the TSC (__rdtsc) when the CPU has an
 * invariant TSC (cpuid 0x80000007 EDX bit 8, or /proc/cpuinfo `constant_tsc nonstop_tsc`), else
 * CLOCK_MONOTONIC in ns (also when the kernel's clock source is not the TSC: it found the cores' TSCs
 * disagree). OTFX_TIMER=tsc|monotonic overrides. The ticks are calibrated against
 * CLOCK_MONOTONIC in MPI_Init (and again in MPI_Finalize); every batch header carries the calibration
 * and the place converts ticks to ns: the application does no arithmetic per event.
 */
#ifndef OTFX_CAPTURE_TIMER_H
#define OTFX_CAPTURE_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CAPTURE_HAVE_TSC 1
#else
#define CAPTURE_HAVE_TSC 0
#endif

#if defined(__GNUC__)
#define CAPTURE_TIMER_INTERNAL __attribute__((visibility("hidden")))
#else
#define CAPTURE_TIMER_INTERNAL
#endif

/* Whether records use the TSC (set by capture_timer_select, before PMPI_Init). */
CAPTURE_TIMER_INTERNAL extern bool capture_timer_tsc;

static inline uint64_t capture_monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* A record timestamp: raw ticks (TSC cycles, or CLOCK_MONOTONIC ns). */
static inline uint64_t capture_ticks(void)
{
#if CAPTURE_HAVE_TSC
    if (__builtin_expect(capture_timer_tsc, 1))
        return __rdtsc();
#endif
    return capture_monotonic_ns();
}

/* ns = ref_ns + (ticks - ref_ticks) * ns_per_tick; the identity (1, 0, 0) for CLOCK_MONOTONIC. */
struct capture_clock_calibration {
    double ns_per_tick;
    uint64_t ref_ticks;
    uint64_t ref_ns;
    int64_t offset_ns; /* the place's clock minus this rank's CLOCK_MONOTONIC (capture_timer_set_offset) */
    uint64_t offset_round_trip_ns; /* the round trip it was measured in: its error is half of it at most */
};

/* Chooses the timer from OTFX_TIMER and the CPU. Returns NULL, or why OTFX_TIMER is unusable (the
 * caller reports it from rank 0 once MPI is up and aborts). */
CAPTURE_TIMER_INTERNAL const char *capture_timer_select(void);
/* Measures ticks against CLOCK_MONOTONIC over `interval_ns` (MPI_Init: 20 ms); the identity for
 * CLOCK_MONOTONIC. The ranks of one node share its TSC: one of them measures and all install the same
 * calibration (clock_sync.c), so their records convert to one time base. */
CAPTURE_TIMER_INTERNAL struct capture_clock_calibration capture_timer_measure(uint64_t interval_ns);
/* Makes `measured` the current calibration and MPI_Init's (the test knob OTFX_TEST_CLOCK_SKEW_PPM, for
 * the rank OTFX_TEST_CLOCK_SKEW_RANK or every rank, is applied here). */
CAPTURE_TIMER_INTERNAL void capture_timer_install(const struct capture_clock_calibration *measured,
                                                  int world_rank);
/* Finalize: the rate over the whole run, from the init reference (reported, not applied). */
CAPTURE_TIMER_INTERNAL void capture_timer_recalibrate(void);
CAPTURE_TIMER_INTERNAL struct capture_clock_calibration capture_timer_calibration(void);
/* The offset to the place measured by the caller (clock_sync.c), sent with the calibration. */
CAPTURE_TIMER_INTERNAL void capture_timer_set_offset(int64_t offset_ns, uint64_t round_trip_ns);
/* A (ticks, CLOCK_MONOTONIC ns) pair read as close together as possible: the tightest of 16 tries.
 * Returns the ns between the clock reads around the ticks: the pair is off by half of it at most. */
CAPTURE_TIMER_INTERNAL uint64_t capture_timer_reference_pair(uint64_t *ticks, uint64_t *ns);
/* A timestamp as this rank's CLOCK_MONOTONIC ns by the MPI_Init calibration (the place does the same
 * with the calibration in the batch header; not per record). */
CAPTURE_TIMER_INTERNAL double capture_timer_local_ns(uint64_t ticks);
/* Ticks as ns with the current calibration (durations, e.g. throttling; not per record). */
CAPTURE_TIMER_INTERNAL double capture_ticks_to_ns(uint64_t ticks);
CAPTURE_TIMER_INTERNAL const char *capture_timer_name(void);

#endif

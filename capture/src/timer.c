/*
 * timer.c — timer choice and calibration (see timer.h).
 */
#include "timer.h"

#include <otfx/settings.h>
#include <otfx/testpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if CAPTURE_HAVE_TSC
#include <cpuid.h>
#endif

bool capture_timer_tsc;
static struct capture_clock_calibration calibration = {.ns_per_tick = 1.0};
static struct capture_clock_calibration init_calibration = {.ns_per_tick = 1.0};

static bool cpu_has_invariant_tsc(void)
{
#if CAPTURE_HAVE_TSC
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    /* gcc declares __get_cpuid_max unsigned, clang int: compare as unsigned for both. */
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000007u &&
        __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8)))
        return true;
    /* Hypervisors often hide the leaf; the kernel's flags say whether it trusts the TSC. */
    FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
    if (!cpuinfo)
        return false;
    char line[8192];
    bool found = false;
    while (fgets(line, sizeof(line), cpuinfo)) {
        if (strncmp(line, "flags", 5) == 0) {
            found = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    }
    fclose(cpuinfo);
    return found;
#else
    return false;
#endif
}

/* The kernel checks that the TSCs of all cores agree before it bases CLOCK_MONOTONIC on them; when it
 * chose another clock source (the TSC was found unstable), records from threads that move between
 * cores could go backwards. Unreadable: trust the CPU flags. */
static bool kernel_trusts_tsc(void)
{
    FILE *source = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!source)
        return true;
    char name[64] = "";
    const bool read = fgets(name, sizeof(name), source) != NULL;
    fclose(source);
    return !read || strncmp(name, "tsc", 3) == 0;
}

const char *capture_timer_select(void)
{
    if (otfx_setting_problem(OTFX_SETTING_TIMER))
        return otfx_setting_problem(OTFX_SETTING_TIMER);
    switch (otfx_setting_choice(OTFX_SETTING_TIMER)) {
    case OTFX_SETTING_TIMER_MONOTONIC:
        capture_timer_tsc = false;
        return NULL;
    case OTFX_SETTING_TIMER_TSC:
        if (!CAPTURE_HAVE_TSC)
            return "OTFX_TIMER=tsc: this CPU architecture has no TSC";
        capture_timer_tsc = true;
        return NULL;
    default: /* unset */
        capture_timer_tsc = cpu_has_invariant_tsc() && kernel_trusts_tsc();
        return NULL;
    }
}

/* The tightest of 16 tries (about 2 µs in all), so that a preemption or a slow clock read in some of them
 * does not shift this rank's time base against the other ranks'. */
uint64_t capture_timer_reference_pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int attempt = 0; attempt < 16; attempt++) {
        const uint64_t before = capture_monotonic_ns();
        const uint64_t t = capture_ticks();
        const uint64_t after = capture_monotonic_ns();
        if (after - before < best) {
            best = after - before;
            *ticks = t;
            *ns = before + (after - before) / 2;
        }
    }
    return best;
}

double capture_timer_local_ns(uint64_t ticks)
{
    if (!capture_timer_tsc)
        return (double)ticks;
    return (double)init_calibration.ref_ns +
           ((double)ticks - (double)init_calibration.ref_ticks) * init_calibration.ns_per_tick;
}

struct capture_clock_calibration capture_timer_measure(uint64_t interval_ns)
{
    if (!capture_timer_tsc)
        return (struct capture_clock_calibration){.ns_per_tick = 1.0};
    uint64_t ticks0 = 0, ns0 = 0, ticks1 = 0, ns1 = 0;
    capture_timer_reference_pair(&ticks0, &ns0);
    const struct timespec pause = {.tv_sec = (time_t)(interval_ns / 1000000000u),
                                   .tv_nsec = (long)(interval_ns % 1000000000u)};
    nanosleep(&pause, NULL);
    capture_timer_reference_pair(&ticks1, &ns1);
    return (struct capture_clock_calibration){
        .ns_per_tick = ticks1 > ticks0 ? (double)(ns1 - ns0) / (double)(ticks1 - ticks0) : 1.0,
        .ref_ticks = ticks1,
        .ref_ns = ns1};
}

/* Test-only: whether OTFX_TEST_CLOCK_SKEW_RANK (unset or empty: every rank; invalid: none) names this
 * rank. */
static bool skewed_rank(int world_rank)
{
    if (!otfx_setting_is_set(OTFX_SETTING_TEST_CLOCK_SKEW_RANK))
        return true;
    long long rank = -1;
    return otfx_testpoint_integer(OTFX_SETTING_TEST_CLOCK_SKEW_RANK, &rank) && rank == world_rank;
}

void capture_timer_install(const struct capture_clock_calibration *measured, int world_rank)
{
    if (!capture_timer_tsc) {
        calibration = (struct capture_clock_calibration){.ns_per_tick = 1.0};
        init_calibration = calibration;
        return;
    }
    calibration.ns_per_tick = measured->ns_per_tick;
    calibration.ref_ticks = measured->ref_ticks;
    calibration.ref_ns = measured->ref_ns;
    /* Test-only: a rate error of PPM parts per million, as a bad calibration or a drifting clock would
     * make, for the clock re-synchronisation's and the export's clock condition tests (tests/places). */
    double ppm = 0.0;
    if (otfx_testpoint_real(OTFX_SETTING_TEST_CLOCK_SKEW_PPM, &ppm) && skewed_rank(world_rank))
        calibration.ns_per_tick *= 1.0 + ppm * 1e-6;
    init_calibration = calibration;
}

void capture_timer_recalibrate(void)
{
    if (!capture_timer_tsc)
        return;
    uint64_t ticks = 0, ns = 0;
    capture_timer_reference_pair(&ticks, &ns);
    if (ticks > init_calibration.ref_ticks && ns > init_calibration.ref_ns)
        calibration.ns_per_tick =
            (double)(ns - init_calibration.ref_ns) / (double)(ticks - init_calibration.ref_ticks);
    calibration.ref_ticks = ticks;
    calibration.ref_ns = ns;
}

void capture_timer_set_offset(int64_t offset_ns, uint64_t round_trip_ns)
{
    calibration.offset_ns = offset_ns;
    calibration.offset_round_trip_ns = round_trip_ns;
}

struct capture_clock_calibration capture_timer_calibration(void)
{
    return calibration;
}

double capture_ticks_to_ns(uint64_t ticks)
{
    return (double)ticks * calibration.ns_per_tick;
}

const char *capture_timer_name(void)
{
    return capture_timer_tsc ? "tsc" : "monotonic";
}

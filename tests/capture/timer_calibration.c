/*
 * timer_calibration.c — unit check of capture/src/timer.c: the calibration made over 20 ms (as in
 * MPI_Init) converts a 100 ms sleep, measured in the timer's ticks, to 100 ms ± 1 % of
 * CLOCK_MONOTONIC. Runs with the timer OTFX_TIMER (or the CPU) selects; prints the timer and figures.
 */
#include "timer.h"

#include <stdbool.h>
#include <stdio.h>

int main(void)
{
    const char *problem = capture_timer_select();
    if (problem) {
        fprintf(stderr, "timer-calibration: %s\n", problem);
        return 1;
    }
    const struct capture_clock_calibration measured = capture_timer_measure(20 * 1000 * 1000);
    capture_timer_install(&measured, 0);
    /* Each end a reference pair (the tightest of several reads): a preemption between reading the timer
     * and CLOCK_MONOTONIC on a loaded machine would otherwise count as a conversion error. */
    uint64_t ticks0 = 0, ns0 = 0, ticks1 = 0, ns1 = 0;
    capture_timer_reference_pair(&ticks0, &ns0);
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    capture_timer_reference_pair(&ticks1, &ns1);
    const double converted = capture_ticks_to_ns(ticks1 - ticks0);
    const double reference = (double)(ns1 - ns0);
    const double error = (converted - reference) / reference;
    printf("timer-calibration: timer=%s ns_per_tick=%.9f converted_ms=%.3f monotonic_ms=%.3f error=%.5f%%\n",
           capture_timer_name(), capture_timer_calibration().ns_per_tick, converted / 1e6, reference / 1e6,
           error * 100);
    const bool ok = reference >= 100e6 && error > -0.01 && error < 0.01;
    printf("timer-calibration: %s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}

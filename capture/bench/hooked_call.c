/*
 * hooked_call.c — the user function capture-bench calls to measure what a recorded user-function enter
 * and leave cost through the real hooks. Built with -finstrument-functions (capture/CMakeLists.txt); its
 * twin without the hooks is the same code, so the difference is the recording alone.
 */
void capture_bench_hooked_call(volatile long *counter);
void capture_bench_plain_call(volatile long *counter) __attribute__((no_instrument_function));

void capture_bench_hooked_call(volatile long *counter)
{
    ++*counter;
}

void capture_bench_plain_call(volatile long *counter)
{
    ++*counter;
}

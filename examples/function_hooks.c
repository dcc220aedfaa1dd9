/*
 * function_hooks.c — libotfx-example-hooks.so: stand-in __cyg_profile_func_enter/exit for programs
 * built with -finstrument-functions (stencil_instrumented).
 *
 * It is a shared library and not part of the executable so that a tracing library given in LD_PRELOAD
 * takes these symbols over: the dynamic linker searches preloaded libraries before a program's own
 * dependencies, but never in place of a definition inside the executable.
 *
 * On its own it checks the instrumentation: every thread counts its enters and exits, and at process
 * exit the destructor prints "function-hooks: enter=N exit=M" to stderr and ends the process with
 * exit code 4 if any thread's counts do not balance (or a thread exited a function it never entered).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#define NO_INSTRUMENT __attribute__((no_instrument_function))

enum { MAX_THREADS = 256, UNBALANCED_EXIT_CODE = 4 };

/* One slot per thread, written only by its thread; the destructor reads them after the threads ended.
 * Atomic (relaxed) so that reading another thread's slot is not a data race. */
struct thread_counts {
    atomic_ulong enters;
    atomic_ulong exits;
    atomic_bool underflow; /* an exit without a matching enter */
};

static struct thread_counts slots[MAX_THREADS];
static atomic_int slots_used;
static atomic_bool out_of_slots;
static _Thread_local struct thread_counts *this_thread;

void __cyg_profile_func_enter(void *function, void *call_site) NO_INSTRUMENT;
void __cyg_profile_func_exit(void *function, void *call_site) NO_INSTRUMENT;

NO_INSTRUMENT static struct thread_counts *thread_slot(void)
{
    if (this_thread)
        return this_thread;
    int index = atomic_fetch_add_explicit(&slots_used, 1, memory_order_relaxed);
    if (index >= MAX_THREADS) {
        /* Counting would be wrong from here on; report it at exit rather than guess. */
        atomic_store_explicit(&out_of_slots, true, memory_order_relaxed);
        index = MAX_THREADS - 1;
    }
    this_thread = &slots[index];
    return this_thread;
}

NO_INSTRUMENT void __cyg_profile_func_enter(void *function, void *call_site)
{
    (void)function;
    (void)call_site;
    struct thread_counts *counts = thread_slot();
    atomic_fetch_add_explicit(&counts->enters, 1, memory_order_relaxed);
}

NO_INSTRUMENT void __cyg_profile_func_exit(void *function, void *call_site)
{
    (void)function;
    (void)call_site;
    struct thread_counts *counts = thread_slot();
    unsigned long exits = atomic_fetch_add_explicit(&counts->exits, 1, memory_order_relaxed) + 1;
    if (exits > atomic_load_explicit(&counts->enters, memory_order_relaxed))
        atomic_store_explicit(&counts->underflow, true, memory_order_relaxed);
}

NO_INSTRUMENT __attribute__((destructor)) static void report_function_hooks(void)
{
    unsigned long total_enters = 0, total_exits = 0;
    int unbalanced_threads = 0;
    int used = atomic_load_explicit(&slots_used, memory_order_relaxed);
    if (used > MAX_THREADS)
        used = MAX_THREADS;
    for (int i = 0; i < used; i++) {
        unsigned long enters = atomic_load_explicit(&slots[i].enters, memory_order_relaxed);
        unsigned long exits = atomic_load_explicit(&slots[i].exits, memory_order_relaxed);
        total_enters += enters;
        total_exits += exits;
        if (enters != exits || atomic_load_explicit(&slots[i].underflow, memory_order_relaxed))
            unbalanced_threads++;
    }
    fprintf(stderr, "function-hooks: enter=%lu exit=%lu threads=%d\n", total_enters, total_exits, used);
    if (atomic_load_explicit(&out_of_slots, memory_order_relaxed))
        fprintf(stderr, "function-hooks: more than %d threads, counts are merged\n", MAX_THREADS);
    if (unbalanced_threads > 0) {
        fprintf(stderr, "function-hooks: FAILED: enters and exits do not balance in %d thread(s)\n",
                unbalanced_threads);
        fflush(stderr);
        /* _exit: the exit status is the point, and other destructors should not run on bad state. */
        _exit(UNBALANCED_EXIT_CODE);
    }
}

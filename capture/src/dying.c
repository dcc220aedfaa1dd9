/*
 * dying.c — the flight recorder on an application rank (capture/README.md, "When a rank dies"): a rank
 * that ends without MPI_Finalize first sends its place what it recorded and how it ended
 * (capture_recorder_die), so that the places can write the trace of the failed job.
 *
 *   fatal signal   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: the DIED record (signal, its code and
 *                  address, the instruction pointer), then the handler that was there before (UCX's
 *                  prints a backtrace and ends the process), else the default action: the process ends
 *                  as it would have without otfx.
 *   SIGTERM/SIGINT the same when the application left them at their default action; a handler of the
 *                  application's own is called untouched (it decides whether the process ends).
 *   MPI_Abort      the DIED record with the error code, then the rank waits for the places: the root
 *                  ends the job with MPI_Abort once the trace is written (MPI_Abort here would kill the
 *                  places with it); after DYING_WAIT_SECONDS it calls MPI_Abort itself.
 *   exit()         without MPI_Finalize (on_exit): the DIED record with the status, then the same wait.
 *
 * A signal handler that sends MPI messages is not async-signal-safe: the process is ending anyway, and
 * the worst case, a deadlock because the signal interrupted MPI or malloc holding a lock, is bounded by
 * an alarm that ends the process with the original signal after DYING_FLUSH_SECONDS. A signal that
 * interrupted the recorder itself may have left the thread's last record half written: it is left out.
 * A rank killed outright (SIGKILL) runs nothing: its place notices that the process is gone.
 */
#define _GNU_SOURCE /* on_exit, REG_RIP, dl_iterate_phdr */
#include "dying.h"
#include "capture_functions.h"
#include "recorder.h"
#include "timer.h"
#include "world.h"

#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* How long the last batches may take to leave from a signal handler before the process ends anyway. */
#define DYING_FLUSH_SECONDS 20
/* How long MPI_Abort and exit() wait for the root to end the job once their trace was sent: longer than a
 * snapshot of everything held takes. */
#define DYING_WAIT_SECONDS 300

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};
#define FATAL_SIGNAL_COUNT (sizeof fatal_signals / sizeof *fatal_signals)

static struct sigaction previous[FATAL_SIGNAL_COUNT];
static volatile sig_atomic_t dying_signal;
static struct sigaction previous_alarm;
/* The recorder's own code: a signal that arrives there may find a record half written. */
static uintptr_t own_code_start, own_code_end;

static int signal_index(int signal)
{
    for (size_t i = 0; i < FATAL_SIGNAL_COUNT; i++)
        if (fatal_signals[i] == signal)
            return (int)i;
    return -1;
}

static bool has_handler(const struct sigaction *action)
{
    if (action->sa_flags & SA_SIGINFO)
        return action->sa_sigaction != NULL;
    return action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

static int find_own_code(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size;
    (void)user;
    const uintptr_t self = (uintptr_t)&find_own_code;
    for (int h = 0; h < info->dlpi_phnum; h++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[h];
        const uintptr_t start = info->dlpi_addr + segment->p_vaddr, end = start + segment->p_memsz;
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_X) && start <= self && self < end) {
            own_code_start = start;
            own_code_end = end;
            return 1;
        }
    }
    return 0;
}

static uintptr_t instruction_of(const void *context)
{
    if (!context)
        return 0;
    const ucontext_t *state = context;
#if defined(__x86_64__)
    return (uintptr_t)state->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)state->uc_mcontext.pc;
#else
    (void)state;
    return 0;
#endif
}

/* Ends the process with `signal`'s default action, as it would have ended without otfx. */
static void end_by_default(int signal)
{
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(signal);
}

/* The flush from a signal handler did not finish in time (a lock held by what the signal interrupted). */
static void on_watchdog(int signal)
{
    (void)signal;
    end_by_default(dying_signal ? dying_signal : SIGKILL);
}

static void arm_watchdog(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_watchdog;
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, &previous_alarm);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    alarm(DYING_FLUSH_SECONDS);
}

static void disarm_watchdog(void)
{
    alarm(0);
    sigaction(SIGALRM, &previous_alarm, NULL);
}

static void call_previous(int index, int signal, siginfo_t *info, void *context)
{
    const struct sigaction *before = &previous[index];
    if (before->sa_flags & SA_SIGINFO)
        before->sa_sigaction(signal, info, context);
    else
        before->sa_handler(signal);
}

static void on_signal(int signal, siginfo_t *info, void *context)
{
    const int index = signal_index(signal);
    if (index < 0)
        return;
    const bool interrupt = signal == SIGTERM || signal == SIGINT;
    if (interrupt && has_handler(&previous[index])) {
        /* The application catches it: it decides whether the process ends (if it does, with exit()). */
        call_previous(index, signal, info, context);
        return;
    }
    if (!dying_signal) {
        dying_signal = signal;
        const uintptr_t instruction = instruction_of(context);
        struct capture_died_record death;
        memset(&death, 0, sizeof(death));
        death.cause = CAPTURE_DEATH_SIGNAL;
        death.value = signal;
        death.signal_code = info ? info->si_code : 0;
        death.address = info ? (uint64_t)(uintptr_t)info->si_addr : 0;
        death.instruction = instruction;
        arm_watchdog();
        capture_recorder_die(&death, instruction >= own_code_start && instruction < own_code_end);
        disarm_watchdog();
    }
    if (has_handler(&previous[index]))
        call_previous(index, signal, info, context);
    end_by_default(signal);
}

/* Sleeps until the root ends the job (it does once the places wrote the trace), at most
 * DYING_WAIT_SECONDS. */
static void wait_for_the_places(void)
{
    const struct timespec nap = {0, 100 * 1000 * 1000};
    for (int i = 0; i < DYING_WAIT_SECONDS * 10; i++)
        nanosleep(&nap, NULL);
}

static void on_exit_hook(int status, void *unused)
{
    (void)unused;
    int finalized = 0;
    if (PMPI_Finalized(&finalized) != MPI_SUCCESS || finalized)
        return;
    struct capture_died_record death;
    memset(&death, 0, sizeof(death));
    death.cause = CAPTURE_DEATH_EXIT;
    death.value = status;
    if (capture_recorder_die(&death, false))
        wait_for_the_places();
}

void capture_dying_abort(int error_code)
{
    struct capture_died_record death;
    memset(&death, 0, sizeof(death));
    death.header.function_id = CAPTURE_FN_MPI_Abort;
    death.cause = CAPTURE_DEATH_ABORT;
    death.value = error_code;
    if (capture_recorder_die(&death, false))
        wait_for_the_places();
}

void capture_dying_install(void)
{
    dl_iterate_phdr(find_own_code, NULL);
    /* A stack overflow's SIGSEGV needs a stack of its own to run the handler on (MPI_Init's thread). */
    static uint64_t alternate_stack[64 * 1024 / sizeof(uint64_t)];
    stack_t current;
    if (sigaltstack(NULL, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
        const stack_t stack = {.ss_sp = alternate_stack, .ss_size = sizeof(alternate_stack), .ss_flags = 0};
        sigaltstack(&stack, NULL);
    }
    for (size_t i = 0; i < FATAL_SIGNAL_COUNT; i++) {
        if (sigaction(fatal_signals[i], NULL, &previous[i]) != 0)
            continue;
        if (!(previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_handler == SIG_IGN)
            continue; /* ignored stays ignored */
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = on_signal;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigfillset(&action.sa_mask);
        sigdelset(&action.sa_mask, SIGALRM); /* the watchdog */
        sigaction(fatal_signals[i], &action, NULL);
    }
    on_exit(on_exit_hook, NULL);
}

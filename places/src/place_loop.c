/*
 * place_loop.c — the place's main loop on the MPI thread, its worker and snapshot threads (see
 * place_loop.h).
 *
 * The loop never blocks in MPI and never spins: it drains what PMPI_Iprobe finds on the tool
 * communicator (batches first: ingestion is the place's main job) and the tree's messages
 * (otfx_tree_receive), then the queues of the other threads (otfx_tree_poll, which takes them through
 * the host interface, tree_host.c); when a whole round found nothing it sleeps on a condition variable,
 * 50 µs at first and twice as long after every idle round up to 1 ms. Any activity resets the sleep,
 * and another thread that queues something signals the variable.
 */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include "place_loop.h"
#include "place_triggers.h"
#include "rank_metrics.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define IDLE_WAIT_MIN_NS 50000u
#define IDLE_WAIT_MAX_NS 1000000u
/* Messages taken from one communicator before the loop looks at the other and at its queues. */
#define MESSAGES_PER_ROUND 64
/* The worker thread's nice value (see worker_main). */
#define WORKER_NICE 10

uint64_t place_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void place_wake(struct place_runtime *runtime)
{
    pthread_mutex_lock(&runtime->lock);
    runtime->signalled = true;
    pthread_cond_broadcast(&runtime->wake);
    pthread_mutex_unlock(&runtime->lock);
}

/* Sleeps up to `ns` unless something was signalled (the condition variable uses CLOCK_MONOTONIC). */
static void idle_wait(struct place_runtime *runtime, uint64_t ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)ns;
    while (until.tv_nsec >= 1000000000L) {
        until.tv_nsec -= 1000000000L;
        until.tv_sec++;
    }
    pthread_mutex_lock(&runtime->lock);
    while (!runtime->signalled) {
        if (pthread_cond_timedwait(&runtime->wake, &runtime->lock, &until) == ETIMEDOUT)
            break;
    }
    runtime->signalled = false;
    pthread_mutex_unlock(&runtime->lock);
}

/* ---- worker thread ----------------------------------------------------------------------------- */

void place_leaf_job_free(struct leaf_job *job)
{
    if (!job)
        return;
    free(job->traces);
    free(job->rank_of_trace);
    free(job->thread_of_trace);
    free(job->ranks);
    free(job->cost_changes);
    place_exchange_end(job->exchange);
    otfx_blob_free(&job->blob);
    free(job);
}

/* Workers given up on that may still be running a leaf (process-wide: they outlive the runtime). */
static atomic_uint abandoned_running;

struct worker_start {
    struct place_runtime *runtime;
    struct worker *self;
};

static void worker_free(struct worker *w)
{
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static void *worker_main(void *argument)
{
    struct worker_start start = *(struct worker_start *)argument;
    free(argument);
    struct place_runtime *runtime = start.runtime;
    struct worker *self = start.self;
    /* Queries come second: on a node whose cores are shared the MPI thread (ingestion) and the
     * application get the CPU before a long leaf (Linux: a thread has its own nice value). */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WORKER_NICE);
    pthread_mutex_lock(&runtime->lock);
    for (;;) {
        /* results waiting to be sent hold memory: no new leaf until they are under the bound */
        while (!runtime->worker_stop && (!runtime->jobs || runtime->unsent_bytes > 2 * runtime->query_memory))
            pthread_cond_wait(&runtime->wake, &runtime->lock);
        if (runtime->worker_stop)
            break; /* the jobs left are not answered any more */
        struct leaf_job *job = runtime->jobs;
        runtime->jobs = job->next;
        if (!runtime->jobs)
            runtime->jobs_tail = NULL;
        const uint64_t started = place_now_ns();
        pthread_mutex_lock(&self->lock);
        self->job = job;
        self->job_started_ns = started;
        pthread_mutex_unlock(&self->lock);
        /* the leaf gives up where the tree gives up on it: at the module time limit from its start */
        job->input.deadline_ns = started + runtime->module_timeout_ns;
        if (job->exchanges && runtime->exchange_hub) {
            /* the exchange gives up where the tree gives up on the leaf: at the module time limit */
            job->exchange = place_exchange_begin(runtime->exchange_hub, job->request,
                                                 started + runtime->module_timeout_ns);
            job->input.exchange = job->exchange ? place_exchange_interface(job->exchange) : NULL;
        }
        pthread_mutex_unlock(&runtime->lock);

        job->error[0] = '\0';
        job->ok = job->module->leaf(&job->command, &job->input, &job->blob, job->error, sizeof(job->error));
        if (job->ok && job->blob.failed) {
            job->ok = false;
            snprintf(job->error, sizeof(job->error), "out of memory for the result");
        }
        if (!job->ok && !job->error[0])
            snprintf(job->error, sizeof(job->error), "module %s failed", job->module->name);
        job->took_ns = place_now_ns() - started;
        place_exchange_end(job->exchange);
        job->exchange = NULL;
        job->input.exchange = NULL;

        /* given up on meanwhile: the runtime may be gone; only the job and this thread are ours */
        pthread_mutex_lock(&self->lock);
        const bool abandoned = self->abandoned;
        self->job = NULL;
        pthread_mutex_unlock(&self->lock);
        if (abandoned) {
            place_leaf_job_free(job);
            worker_free(self);
            atomic_fetch_sub(&abandoned_running, 1);
            return NULL;
        }
        pthread_mutex_lock(&runtime->lock);
        job->next = NULL;
        if (runtime->results_tail)
            runtime->results_tail->next = job;
        else
            runtime->results = job;
        runtime->results_tail = job;
        runtime->signalled = true;
        /* the MPI thread and this thread share the condition variable: wake everyone */
        pthread_cond_broadcast(&runtime->wake);
    }
    pthread_mutex_unlock(&runtime->lock);
    return NULL;
}

/* Starts a worker thread (runtime->lock held). */
static bool start_worker(struct place_runtime *runtime)
{
    struct worker *w = calloc(1, sizeof(*w));
    struct worker_start *start = malloc(sizeof(*start));
    if (!w || !start) {
        free(w);
        free(start);
        return false;
    }
    pthread_mutex_init(&w->lock, NULL);
    *start = (struct worker_start){runtime, w};
    /* the worker takes no signals: they belong to the application's threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int created = pthread_create(&w->thread, NULL, worker_main, start);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (created != 0) {
        free(start);
        worker_free(w);
        return false;
    }
    runtime->worker = w;
    return true;
}

bool place_worker_submit(struct place_runtime *runtime, struct leaf_job *job)
{
    pthread_mutex_lock(&runtime->lock);
    if (!runtime->worker && !start_worker(runtime)) {
        pthread_mutex_unlock(&runtime->lock);
        return false;
    }
    job->next = NULL;
    if (runtime->jobs_tail)
        runtime->jobs_tail->next = job;
    else
        runtime->jobs = job;
    runtime->jobs_tail = job;
    pthread_cond_broadcast(&runtime->wake);
    pthread_mutex_unlock(&runtime->lock);
    return true;
}

bool place_worker_overdue(struct place_runtime *runtime, uint64_t now, uint64_t limit, uint32_t *request,
                          const char **module)
{
    bool overdue = false;
    pthread_t thread = 0;
    pthread_mutex_lock(&runtime->lock);
    struct worker *w = runtime->worker;
    if (w) {
        pthread_mutex_lock(&w->lock);
        if (w->job && now > w->job_started_ns && now - w->job_started_ns > limit) {
            overdue = true;
            w->abandoned = true; /* from here on the thread frees itself: w is not ours any more */
            thread = w->thread;
            *request = w->job->request;
            *module = w->job->module->name; /* a built-in module: static */
            atomic_fetch_add(&abandoned_running, 1);
        }
        pthread_mutex_unlock(&w->lock);
    }
    if (overdue) {
        pthread_detach(thread);
        runtime->worker = NULL;
        if (runtime->jobs && !runtime->worker_stop)
            start_worker(runtime); /* the queued jobs need a thread; failing that, the next submit tries */
    }
    pthread_mutex_unlock(&runtime->lock);
    return overdue;
}

struct leaf_job *place_worker_take_result(struct place_runtime *runtime)
{
    pthread_mutex_lock(&runtime->lock);
    struct leaf_job *job = runtime->results;
    if (job) {
        runtime->results = job->next;
        if (!runtime->results)
            runtime->results_tail = NULL;
        job->next = NULL;
    }
    pthread_mutex_unlock(&runtime->lock);
    return job;
}

/* Joins the worker; a worker given up on is waited for up to the module time limit and then left
 * running (detached), reported, with the traces kept (it may still read them). Returns whether such a
 * worker is still running. */
static bool stop_worker(struct place_runtime *runtime)
{
    pthread_mutex_lock(&runtime->lock);
    runtime->worker_stop = true;
    pthread_cond_broadcast(&runtime->wake);
    pthread_mutex_unlock(&runtime->lock);
    /* the leaf running now may finish within the time limit; beyond it the worker is given up on */
    for (;;) {
        uint32_t request;
        const char *module;
        if (place_worker_overdue(runtime, place_now_ns(), runtime->module_timeout_ns, &request, &module)) {
            fprintf(stderr,
                    "otfx-place %d: module %s did not answer within the time limit at the end of the "
                    "job: its thread was given up on\n",
                    runtime->place->setup.place_rank, module);
            break;
        }
        bool busy = false;
        pthread_mutex_lock(&runtime->lock);
        struct worker *running = runtime->worker;
        if (running) {
            pthread_mutex_lock(&running->lock);
            busy = running->job != NULL;
            pthread_mutex_unlock(&running->lock);
        }
        pthread_mutex_unlock(&runtime->lock);
        if (!busy)
            break;
        const struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    pthread_mutex_lock(&runtime->lock);
    struct worker *w = runtime->worker;
    runtime->worker = NULL;
    pthread_mutex_unlock(&runtime->lock);
    if (w) {
        pthread_join(w->thread, NULL);
        worker_free(w);
    }
    struct leaf_job *job;
    while ((job = place_worker_take_result(runtime)))
        place_leaf_job_free(job);
    while (runtime->jobs) {
        job = runtime->jobs;
        runtime->jobs = job->next;
        place_leaf_job_free(job);
    }
    const uint64_t give_up = place_now_ns() + runtime->module_timeout_ns;
    while (atomic_load(&abandoned_running) > 0 && place_now_ns() < give_up) {
        const struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    const unsigned still = atomic_load(&abandoned_running);
    if (still)
        fprintf(stderr,
                "otfx-place %d: %u analysis thread%s given up on (a leaf over the module time limit) still "
                "running at the end: not waited for, the traces are kept for %s\n",
                runtime->place->setup.place_rank, still, still == 1 ? "" : "s", still == 1 ? "it" : "them");
    return still > 0;
}

/* ---- snapshot thread ----------------------------------------------------------------------------- */

/* snapshot --compensated: the compensation replay with the other event places copies the selected traces
 * into compensated time (otfx_analysis_compensated_traces), then the copies are written. The places
 * agree first whether every one made its copies, so that none writes a part of an archive the others
 * refused. */
static void write_compensated_snapshot(struct place_runtime *runtime)
{
    struct snapshot_job *snapshot = &runtime->snapshot;
    struct leaf_job *view = snapshot->compensation;
    const size_t count = view ? view->input.trace_count : 0;
    otfx_trace **copies = calloc(count ? count : 1, sizeof(*copies));
    char error[sizeof(snapshot->result.error)] = "";
    bool ok = view && copies;
    if (!ok)
        snprintf(error, sizeof(error), "out of memory for the compensation");
    else if (!snapshot->exchange) {
        ok = false;
        snprintf(error, sizeof(error), "%s",
                 runtime->exchange_hub
                     ? "out of memory for the exchange"
                     : "compensation needs the event places' exchange, which this place lacks");
    }
    if (ok) {
        view->input.exchange = place_exchange_interface(snapshot->exchange);
        view->input.deadline_ns = place_now_ns() + runtime->module_timeout_ns;
        ok = otfx_analysis_compensated_traces(&snapshot->command, &view->input, copies, error, sizeof(error));
        view->input.exchange = NULL;
    }
    place_exchange_end(snapshot->exchange);
    snapshot->exchange = NULL;
    int mine = ok, everyone = 0;
    if (PMPI_Allreduce(&mine, &everyone, 1, MPI_INT, MPI_MIN, runtime->event_comm) != MPI_SUCCESS)
        everyone = 0;
    size_t kept = 0;
    for (size_t i = 0; i < count && copies; i++)
        if (copies[i])
            copies[kept++] = copies[i];
    if (everyone)
        place_snapshot_write_traces_as(
            runtime->event_comm, runtime->place->defs, copies, kept, runtime->snapshot_dir,
            snapshot->command.path, snapshot->command.from, snapshot->command.to, snapshot->command.overwrite,
            "otfx snapshot, compensated: the measurement's intrusion taken out", &snapshot->result);
    else {
        memset(&snapshot->result, 0, sizeof(snapshot->result));
        snprintf(snapshot->result.error, sizeof(snapshot->result.error), "snapshot --compensated: %s",
                 ok ? "the compensation failed on another event place" : error);
    }
    for (size_t i = 0; i < kept; i++)
        otfx_trace_destroy(copies[i]);
    free(copies);
}

static void write_snapshot(struct place_runtime *runtime)
{
    const otfx_command *command = &runtime->snapshot.command;
    if (command->compensated) {
        write_compensated_snapshot(runtime);
        return;
    }
    place_snapshot_write_traces(runtime->event_comm, runtime->place->defs, runtime->snapshot.traces,
                                runtime->snapshot.trace_count, runtime->snapshot_dir, command->path,
                                command->from, command->to, command->overwrite, &runtime->snapshot.result);
    if (!runtime->snapshot.selected) {
        runtime->snapshot.result.ok = false;
        snprintf(runtime->snapshot.result.error, sizeof(runtime->snapshot.result.error),
                 "out of memory selecting the traces");
    }
}

static void *snapshot_main(void *argument)
{
    struct place_runtime *runtime = argument;
    write_snapshot(runtime);
    pthread_mutex_lock(&runtime->lock);
    runtime->snapshot_finished = true;
    runtime->signalled = true;
    pthread_cond_broadcast(&runtime->wake);
    pthread_mutex_unlock(&runtime->lock);
    return NULL;
}

void place_snapshot_start(struct place_runtime *runtime)
{
    memset(&runtime->snapshot.result, 0, sizeof(runtime->snapshot.result));
    /* The traces are chosen here, on the MPI thread, which alone changes the place's rank and stream
     * tables; the write only reads the traces (each under its read lock). Out of memory: the place still
     * takes part (with no traces), so that the others are not left waiting in the collective. */
    free(runtime->snapshot.traces);
    runtime->snapshot.traces = NULL;
    runtime->snapshot.trace_count = 0;
    runtime->snapshot.selected =
        place_snapshot_select(runtime->place, &runtime->snapshot.command, &runtime->snapshot.traces,
                              &runtime->snapshot.trace_count);
    runtime->snapshot.held_from = UINT64_MAX;
    runtime->snapshot.window_reduced = 0;
    for (size_t i = 0; i < runtime->snapshot.trace_count; i++) {
        otfx_trace_status status;
        if (otfx_trace_status_get(runtime->snapshot.traces[i], &status) != OTFX_OK)
            continue;
        if (status.oldest_detail < runtime->snapshot.held_from)
            runtime->snapshot.held_from = status.oldest_detail;
        if (status.reductions &&
            (status.strategy != OTFX_REDUCE_RING || status.oldest_detail > runtime->snapshot.command.from))
            runtime->snapshot.window_reduced++;
    }
    if (runtime->snapshot.command.compensated && runtime->exchange_hub && runtime->snapshot.request)
        runtime->snapshot.exchange = place_exchange_begin_beside(
            runtime->exchange_hub, runtime->snapshot.request, place_now_ns() + runtime->module_timeout_ns);
    runtime->snapshot_busy = true;
    runtime->snapshot_finished = false;
    runtime->snapshot.on_thread = false;
    if (runtime->threaded_snapshots &&
        pthread_create(&runtime->snapshot_thread, NULL, snapshot_main, runtime) == 0) {
        runtime->snapshot.on_thread = true;
        return;
    }
    /* Without MPI_THREAD_MULTIPLE the collective runs here: ingestion waits for it. */
    write_snapshot(runtime);
    runtime->snapshot_finished = true;
}

bool place_snapshot_take(struct place_runtime *runtime)
{
    if (!runtime->snapshot_busy)
        return false;
    pthread_mutex_lock(&runtime->lock);
    const bool finished = runtime->snapshot_finished;
    pthread_mutex_unlock(&runtime->lock);
    if (!finished)
        return false;
    if (runtime->snapshot.on_thread)
        pthread_join(runtime->snapshot_thread, NULL);
    runtime->snapshot_busy = false;
    free(runtime->snapshot.traces);
    runtime->snapshot.traces = NULL;
    place_leaf_job_free(runtime->snapshot.compensation);
    runtime->snapshot.compensation = NULL;
    return true;
}

/* ---- SIGINT and SIGTERM --------------------------------------------------------------------------
 * mpiexec forwards them to every process of the job: the application ranks end (dying.c tells their
 * places first), the places catch them and write what they hold before the job ends (otfx/tree.h). */

static volatile sig_atomic_t interrupt_signal;

static void on_interrupt(int signal)
{
    interrupt_signal = signal;
}

int place_interrupted(void)
{
    return interrupt_signal;
}

static void catch_interrupts(void)
{
    static const int signals[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        sigaction(signals[i], &action, NULL);
    }
}

/* ---- the loop ------------------------------------------------------------------------------------ */

/* events/s per served rank, from the traces' received counts over the last RATE_SAMPLES samples (about
 * ten seconds): batches come in bursts, a one-second rate would read 0 between them. */
static void sample_rates(struct event_place *place, uint64_t now)
{
    for (int r = 0; r < place->setup.served_count; r++) {
        struct served_rank *rank = &place->ranks[r];
        uint64_t received = 0;
        for (uint32_t t = 0; t < rank->stream_capacity; t++) {
            otfx_trace_status status;
            if (rank->streams[t] && otfx_trace_status_get(rank->streams[t]->trace, &status) == OTFX_OK)
                received += status.events_received;
        }
        /* the oldest sample kept is the one about to be overwritten once the ring is full */
        const uint32_t oldest = rank->rate_count < RATE_SAMPLES ? 0 : rank->rate_next;
        if (rank->rate_count > 0) {
            const uint64_t events =
                received >= rank->rate_events[oldest] ? received - rank->rate_events[oldest] : 0;
            const uint64_t elapsed = now > rank->rate_times[oldest] ? now - rank->rate_times[oldest] : 0;
            rank->events_per_s = elapsed ? (uint64_t)((double)events * 1e9 / (double)elapsed) : 0;
        }
        rank->rate_events[rank->rate_next] = received;
        rank->rate_times[rank->rate_next] = now;
        rank->rate_next = (rank->rate_next + 1) % RATE_SAMPLES;
        if (rank->rate_count < RATE_SAMPLES)
            rank->rate_count++;
    }
}

/* The event places are places 0 … E-1 of the layout, in event_comm in that order. */
static uint32_t event_place_of_rank(void *context, uint32_t rank)
{
    const otfx_tbon_layout *layout = context;
    return rank < layout->app_ranks ? otfx_tbon_place_of_rank(layout, rank) : UINT32_MAX;
}

/* The place's part of the tool tree (otfx/tree.h), hosted by this runtime. */
static bool start_tree(struct place_runtime *runtime)
{
    struct event_place *place = runtime->place;
    const otfx_event_place_setup *setup = &place->setup;
    runtime->enabled_classes = OTFX_STEER_ALL;
    if (setup->served_count > 0 && place->ranks[0].control.classes)
        runtime->enabled_classes = place->ranks[0].control.classes;
    runtime->metrics_selected = place_metrics_at_start();
    runtime->query_memory = place->query_memory;
    runtime->module_timeout_ns = place->module_timeout_ns;
    runtime->snapshot_dir = setup->settings.snapshot_dir;
    const bool in_tree = setup->places_comm != MPI_COMM_NULL && setup->layout != NULL;
    runtime->layout = in_tree ? setup->layout : NULL;
    runtime->index = in_tree ? (uint32_t)setup->place_index : 0;
    runtime->role = otfx_tbon_role(runtime->layout, runtime->index);
    runtime->threaded_snapshots = in_tree && setup->thread_provided == MPI_THREAD_MULTIPLE;
    const otfx_place_settings *settings = &setup->settings;
    const otfx_tree_config config = {
        .places_comm = in_tree ? setup->places_comm : MPI_COMM_NULL,
        .layout = runtime->layout,
        .index = runtime->index,
        .place_rank = setup->place_rank,
        .query_memory = place->query_memory,
        .module_timeout_ns = place->module_timeout_ns,
        .listen = settings->listen,
        .session_dir = settings->session_dir,
        .job_id = settings->job_id,
        .snapshot_at_exit = settings->snapshot_at_exit,
        .snapshot_on_failure = settings->snapshot_on_failure,
        .snapshot_overwrite = settings->snapshot_overwrite != 0,
        .run_status = settings->run_status,
        .triggers = settings->triggers,
    };
    const otfx_tree_host host = place_tree_host(runtime);
    runtime->tree = otfx_tree_start(&config, &host);
    /* Collective over the places, after the tree's own (otfx_tree_start): every place does it. */
    if (in_tree)
        PMPI_Comm_split(setup->places_comm, otfx_role_serves_ranks(runtime->role) ? 0 : MPI_UNDEFINED,
                        (int)runtime->index, &runtime->event_comm);
    /* Collective over the event places (all of them run with the same thread level). */
    if (runtime->event_comm != MPI_COMM_NULL && setup->thread_provided == MPI_THREAD_MULTIPLE) {
        char error[256];
        runtime->exchange_hub = place_exchange_hub_create(runtime->event_comm, event_place_of_rank,
                                                          (void *)runtime->layout, error, sizeof(error));
        if (!runtime->exchange_hub)
            fprintf(stderr, "otfx-place %d: %s: replay analyses see this place's ranks only\n",
                    setup->place_rank, error);
    }
    return runtime->tree != NULL;
}

int place_loop_run(struct event_place *place)
{
    struct place_runtime *runtime = calloc(1, sizeof(*runtime));
    if (!runtime) {
        fprintf(stderr, "otfx-place %d: out of memory starting the loop\n", place->setup.place_rank);
        return 1;
    }
    runtime->place = place;
    place->runtime = runtime;
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_mutex_init(&runtime->lock, NULL);
    pthread_cond_init(&runtime->wake, &attributes);
    pthread_condattr_destroy(&attributes);
    runtime->event_comm = MPI_COMM_NULL;

    int result = 0;
    catch_interrupts();
    if (!start_tree(runtime)) {
        result = 1;
    } else {
        const MPI_Comm tool_comm = place->setup.tool_comm;
        const bool serves = place->setup.served_count > 0;
        uint64_t wait_ns = IDLE_WAIT_MIN_NS;
        runtime->next_rate_ns = place_now_ns() + 1000000000u;
        while (!otfx_tree_finished(runtime->tree)) {
            bool active = false;
            int flag = 1;
            MPI_Status status;
            for (int n = 0; serves && flag && n < MESSAGES_PER_ROUND; n++) {
                PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, tool_comm, &flag, &status);
                if (flag) {
                    place_receive_tool_message(place, &status);
                    active = true;
                }
            }
            if (otfx_tree_receive(runtime->tree))
                active = true;
            const uint64_t now = place_now_ns();
            if (serves && now >= runtime->next_rate_ns) {
                sample_rates(place, now);
                runtime->next_rate_ns = now + 1000000000u;
            }
            if (serves && place->triggers && place_triggers_poll(place, now))
                active = true;
            if (serves && now >= runtime->next_watch_ns) {
                if (place_watch_ranks(place, now))
                    active = true;
                runtime->next_watch_ns = now + 200u * 1000u * 1000u;
            }
            if (otfx_tree_poll(runtime->tree))
                active = true;
            if (runtime->exchange_hub && place_exchange_hub_poll(runtime->exchange_hub))
                active = true;
            if (active) {
                wait_ns = IDLE_WAIT_MIN_NS;
            } else {
                idle_wait(runtime, wait_ns);
                wait_ns = wait_ns * 2 > IDLE_WAIT_MAX_NS ? IDLE_WAIT_MAX_NS : wait_ns * 2;
            }
        }
    }
    if (stop_worker(runtime))
        place->keep_traces = true;
    else
        otfx_analysis_follow_forget(place->defs); /* the follows' replays read the traces destroyed next */
    if (runtime->snapshot_busy && runtime->snapshot.on_thread)
        pthread_join(runtime->snapshot_thread, NULL);
    free(runtime->snapshot.traces);
    place_leaf_job_free(runtime->snapshot.compensation);
    otfx_tree_stop(runtime->tree);
    /* the other event places end now too: what they still send is dropped, ours waits for them a second */
    place_exchange_hub_close(runtime->exchange_hub, 1000000000u);
    if (runtime->event_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&runtime->event_comm);
    pthread_cond_destroy(&runtime->wake);
    pthread_mutex_destroy(&runtime->lock);
    place->runtime = NULL;
    free(runtime);
    return result;
}

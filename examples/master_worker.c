/*
 * master_worker — rank 0 hands out tasks of uneven size to whichever worker asks first.
 *
 * Exercises: dynamic, unpredictable message matching. The master receives every worker's header with
 * MPI_Recv(MPI_ANY_SOURCE, MPI_ANY_TAG), then sizes the variable-length result that follows with
 * MPI_Probe + MPI_Get_count before receiving it; workers use MPI_Send/MPI_Recv. How many tasks each
 * worker gets depends on timing, so the per-rank call counts differ from run to run: only the program's
 * own count is ground truth. At the end MPI_Reduce of the tasks done and MPI_Bcast of the verdict.
 *
 * One iteration is one round of TASKS_PER_ROUND tasks which together cover the numbers 1..M; a task
 * returns the squares of its numbers, each computed the slow way (a sum of odd numbers) so that the
 * work per task is uneven. The master checks the grand total against rounds * M(M+1)(2M+1)/6.
 * With one rank the master computes every task itself. --corrupt spoils one value of the first task.
 */
#include "call_count.h"
#include "example.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { DEFAULT_ITERATIONS = 3, TASKS_PER_ROUND = 24, MAX_TASK_LENGTH = 64 };

/* A worker's header says why it writes: the first time only to ask, afterwards to deliver a result
 * (which follows as a separate message with TAG_RESULT_DATA). The master answers with a task or stop. */
enum message_tag { TAG_READY = 1, TAG_RESULT_HEADER, TAG_RESULT_DATA, TAG_TASK, TAG_STOP };

struct task {
    int64_t id; /* counts up over all rounds; the task's index in its round is id % TASKS_PER_ROUND */
    int64_t first_number;
    int64_t length;
};

/* Task sizes vary between 5 and MAX_TASK_LENGTH numbers so that workers finish at different times. */
static int64_t task_length(int index_in_round)
{
    return 5 + (index_in_round * 37) % (MAX_TASK_LENGTH - 4);
}

static int64_t numbers_per_round(void)
{
    int64_t total = 0;
    for (int i = 0; i < TASKS_PER_ROUND; i++)
        total += task_length(i);
    return total;
}

static struct task make_task(int64_t id)
{
    int index_in_round = (int)(id % TASKS_PER_ROUND);
    struct task t = {.id = id, .first_number = 1, .length = task_length(index_in_round)};
    for (int i = 0; i < index_in_round; i++)
        t.first_number += task_length(i);
    return t;
}

static int64_t square_by_odd_sum(int64_t n)
{
    int64_t sum = 0;
    for (int64_t k = 1; k <= n; k++)
        sum += 2 * k - 1;
    return sum;
}

/* Writes task.length values to results. */
static void compute_task(const struct task *t, bool corrupt, int64_t *results)
{
    for (int64_t i = 0; i < t->length; i++)
        results[i] = square_by_odd_sum(t->first_number + i);
    if (corrupt && t->id == 0)
        results[t->length / 2] += 1;
}

struct master_state {
    const struct example_options *options;
    double start;
    double elapsed;
    int64_t next_task_id;
    int64_t rounds_started;
    bool out_of_tasks;
    int64_t total;      /* sum of all result values received */
    int64_t tasks_done; /* results received (or computed by the master itself) */
    uint64_t checksum;  /* sum over tasks of a hash of (task id, its values in order): independent of
                         * which worker delivered what when, but of every value and its place */
};

/* Hands out the next task id unless enough rounds have been started; the decision to stop is taken
 * only between rounds, so every round is complete. */
static bool next_task(struct master_state *m, struct task *t)
{
    if (m->out_of_tasks)
        return false;
    if (m->next_task_id % TASKS_PER_ROUND == 0) {
        m->elapsed = MPI_COUNTED_NOARGS(MPI_Wtime) - m->start;
        if (example_should_stop(m->options, m->rounds_started, m->elapsed)) {
            m->out_of_tasks = true;
            return false;
        }
        m->rounds_started++;
    }
    *t = make_task(m->next_task_id++);
    return true;
}

static bool add_result(struct master_state *m, const struct task *t, const int64_t *values, int count)
{
    if (count != t->length) {
        example_print("master_worker: verification FAILED: task %" PRId64 " returned %d values, expected "
                      "%" PRId64 "\n",
                      t->id, count, t->length);
        return false;
    }
    uint64_t hash = 1469598103934665603ull ^ (uint64_t)t->id; /* FNV-1a over the values */
    for (int i = 0; i < count; i++) {
        m->total += values[i];
        hash = (hash ^ (uint64_t)values[i]) * 1099511628211ull;
    }
    m->checksum += hash;
    m->tasks_done++;
    return true;
}

/* With a single rank there is nobody to ask: the master works through the tasks itself. */
static bool master_alone(struct master_state *m)
{
    int64_t values[MAX_TASK_LENGTH];
    struct task t;
    bool ok = true;
    while (next_task(m, &t)) {
        compute_task(&t, m->options->corrupt, values);
        ok = add_result(m, &t, values, (int)t.length) && ok;
    }
    return ok;
}

static void send_task_or_stop(struct master_state *m, int worker, int *active_workers)
{
    struct task t;
    if (next_task(m, &t)) {
        int64_t message[3] = {t.id, t.first_number, t.length};
        MPI_COUNTED(MPI_Send, message, 3, MPI_INT64_T, worker, TAG_TASK, MPI_COMM_WORLD);
    } else {
        MPI_COUNTED(MPI_Send, NULL, 0, MPI_INT64_T, worker, TAG_STOP, MPI_COMM_WORLD);
        (*active_workers)--;
    }
}

static bool master_with_workers(struct master_state *m, int size)
{
    int active_workers = size - 1;
    bool ok = true;
    while (active_workers > 0) {
        int64_t header;
        MPI_Status status;
        MPI_COUNTED(MPI_Recv, &header, 1, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        int worker = status.MPI_SOURCE;
        if (status.MPI_TAG == TAG_RESULT_HEADER) {
            /* The result's length is not in the header on purpose: the master learns it from the
             * message itself, as a program receiving data of unknown size must. */
            MPI_Status data_status;
            int count = 0;
            MPI_COUNTED(MPI_Probe, worker, TAG_RESULT_DATA, MPI_COMM_WORLD, &data_status);
            MPI_COUNTED(MPI_Get_count, &data_status, MPI_INT64_T, &count);
            int64_t *values = malloc(sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
            if (!values) {
                fprintf(stderr, "master_worker: out of memory\n");
                MPI_COUNTED(MPI_Abort, MPI_COMM_WORLD, 1);
            }
            MPI_COUNTED(MPI_Recv, values, count, MPI_INT64_T, worker, TAG_RESULT_DATA, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE);
            struct task done = make_task(header);
            ok = add_result(m, &done, values, count) && ok;
            free(values);
        } else if (status.MPI_TAG != TAG_READY) {
            example_print("master_worker: verification FAILED: unexpected tag %d from rank %d\n",
                          status.MPI_TAG, worker);
            ok = false;
        }
        send_task_or_stop(m, worker, &active_workers);
    }
    return ok;
}

/* Returns how many tasks this worker computed. */
static int64_t worker(bool corrupt)
{
    int64_t values[MAX_TASK_LENGTH];
    int64_t tasks_computed = 0;
    int64_t ready = -1;
    MPI_COUNTED(MPI_Send, &ready, 1, MPI_INT64_T, 0, TAG_READY, MPI_COMM_WORLD);
    for (;;) {
        int64_t message[3];
        MPI_Status status;
        MPI_COUNTED(MPI_Recv, message, 3, MPI_INT64_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        if (status.MPI_TAG == TAG_STOP)
            return tasks_computed;
        struct task t = {.id = message[0], .first_number = message[1], .length = message[2]};
        compute_task(&t, corrupt, values);
        tasks_computed++;
        MPI_COUNTED(MPI_Send, &t.id, 1, MPI_INT64_T, 0, TAG_RESULT_HEADER, MPI_COMM_WORLD);
        MPI_COUNTED(MPI_Send, values, (int)t.length, MPI_INT64_T, 0, TAG_RESULT_DATA, MPI_COMM_WORLD);
    }
}

/* The master's verdict, printed on rank 0. tasks_done_everywhere counts what the workers computed. */
static int verify(const struct master_state *m, bool protocol_ok, int64_t tasks_done_everywhere)
{
    int64_t numbers = numbers_per_round();
    int64_t expected_total = m->rounds_started * (numbers * (numbers + 1) * (2 * numbers + 1) / 6);
    int64_t expected_tasks = m->rounds_started * TASKS_PER_ROUND;
    example_print("master_worker: %" PRId64 " rounds of %d tasks, total %" PRId64 "\n"
                  "master_worker: checksum %016" PRIx64 "\n",
                  m->rounds_started, TASKS_PER_ROUND, m->total, m->checksum);
    if (protocol_ok && m->total == expected_total && m->tasks_done == expected_tasks &&
        tasks_done_everywhere == expected_tasks) {
        example_print("master_worker: verification OK\n");
        return EXAMPLE_EXIT_OK;
    }
    example_print("master_worker: verification FAILED: total %" PRId64 " (expected %" PRId64 "), tasks "
                  "received %" PRId64 ", computed %" PRId64 " (expected %" PRId64 ")\n",
                  m->total, expected_total, m->tasks_done, tasks_done_everywhere, expected_tasks);
    return EXAMPLE_EXIT_VERIFICATION_FAILED;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_COUNTED(MPI_Init, &argc, &argv);
    MPI_COUNTED(MPI_Comm_rank, MPI_COMM_WORLD, &rank);
    MPI_COUNTED(MPI_Comm_size, MPI_COMM_WORLD, &size);

    struct example_options options;
    if (!example_parse_options(argc, argv, "master_worker", DEFAULT_ITERATIONS, 0, rank != 0, &options))
        return call_count_finalize(rank, EXAMPLE_EXIT_USAGE);

    struct master_state master = {.options = &options};
    bool protocol_ok = true;
    /* Workers count the tasks they computed, the master those it received: the two must agree. */
    int64_t tasks_computed_here = 0;
    if (rank == 0) {
        master.start = MPI_COUNTED_NOARGS(MPI_Wtime);
        protocol_ok = size == 1 ? master_alone(&master) : master_with_workers(&master, size);
        if (size == 1)
            tasks_computed_here = master.tasks_done;
    } else {
        tasks_computed_here = worker(options.corrupt);
    }
    int64_t tasks_computed = 0;
    MPI_COUNTED(MPI_Reduce, &tasks_computed_here, &tasks_computed, 1, MPI_INT64_T, MPI_SUM, 0,
                MPI_COMM_WORLD);

    int exit_code = EXAMPLE_EXIT_OK;
    if (rank == 0) {
        exit_code = verify(&master, protocol_ok, tasks_computed);
        example_print("elapsed-seconds: %.3f\n", master.elapsed);
    }
    MPI_COUNTED(MPI_Bcast, &exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return call_count_finalize(rank, exit_code);
}

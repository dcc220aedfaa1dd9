/*
 * ending.c — how the job ends, at the root (otfx/tree.h, "End of the run" and "A failed job"): the
 * snapshot at exit, the requests in flight drained, the job-ended notice and SHUTDOWN; or, when a rank
 * failed or the job was interrupted, the last command (a final snapshot) and MPI_Abort with the job's
 * exit status. run_status says how it ended (for otfx-run's last line). The places other than the root
 * end a failed job themselves when the root did not.
 */
#define _POSIX_C_SOURCE 200809L
#include "tree_internal.h"

#include <otfx/support/quiet_abort.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FINAL_ARGUMENT    1u /* the command's argument: the last command of a failed job */
#define FINAL_NO_SNAPSHOT 2u /* ... which writes no snapshot (none was asked for) */
#define FINAL_CODE_SHIFT  32 /* the job's exit status in the argument's upper half */

bool tree_is_final_command(const struct tree_request *request)
{
    return request->kind == TREE_COMMAND && request->command.kind == OTFX_CMD_SNAPSHOT &&
           (request->argument & FINAL_ARGUMENT);
}

void tree_note_failure(otfx_tree *tree, uint32_t exit_code, const char *cause)
{
    if (tree->failure.failed)
        return;
    tree->failure.failed = true;
    tree->failure.exit_code = exit_code ? exit_code : 1;
    snprintf(tree->failure.cause, sizeof(tree->failure.cause), "%s", cause);
}

/* The root: the last command of a failed job (once no other snapshot is being written). */
static void start_final_command(otfx_tree *tree)
{
    if (tree->failure.final_sent || tree_snapshot_in_flight(tree))
        return;
    tree->failure.final_sent = true;
    tree->root.end_stage = ROOT_FAILING;
    const otfx_tree_config *config = &tree->config;
    const char *path = config->snapshot_on_failure ? config->snapshot_on_failure : config->snapshot_at_exit;
    otfx_command command;
    memset(&command, 0, sizeof(command));
    command.kind = OTFX_CMD_SNAPSHOT;
    command.to = UINT64_MAX;
    command.overwrite = config->snapshot_overwrite;
    if (path)
        snprintf(command.path, sizeof(command.path), "%s", path);
    const uint64_t argument = FINAL_ARGUMENT | (path ? 0u : FINAL_NO_SNAPSHOT) |
                              ((uint64_t)tree->failure.exit_code << FINAL_CODE_SHIFT);
    if (!config->run_status)
        fprintf(stderr, "otfx: the job failed: %s: %s\n", tree->failure.cause,
                path ? "writing what the places hold" : "no snapshot on failure was asked for");
    struct tree_request *request =
        tree_add_request(tree, tree->next_request++, TREE_COMMAND, &command, argument);
    if (!request) {
        fprintf(stderr, "otfx: out of memory: no snapshot of the failed job\n");
        tree_end_failed_job(tree, NULL);
        return;
    }
    request->final = true;
    tree_dispatch(tree, request, NULL, 0);
}

void tree_await_end_of_failed_job(otfx_tree *tree, const struct tree_request *request)
{
    tree->failure.exit_code = (uint32_t)(request->argument >> FINAL_CODE_SHIFT);
    tree->failure.deadline_ns = tree_now_ns() + ANSWER_FAILED_END_WAIT_NS;
}

static void end_if_root_did_not(otfx_tree *tree)
{
    if (!tree->failure.deadline_ns || tree_now_ns() < tree->failure.deadline_ns)
        return;
    fprintf(stderr, "otfx-place %d: the failed job was not ended by the root: ending it\n",
            tree_place_rank(tree));
    otfx_quiet_stderr_before_abort();
    PMPI_Abort(MPI_COMM_WORLD, tree->failure.exit_code ? (int)tree->failure.exit_code : 1);
}

/* What a snapshot command's place lines say: written (with the archive), failed (the first error) or
 * none. */
struct snapshot_outcome {
    const char *state;
    char archive[4096];
    char error[512];
};

static void snapshot_outcome_of(const struct tree_request *request, struct snapshot_outcome *outcome)
{
    memset(outcome, 0, sizeof(*outcome));
    outcome->state = "none";
    if (!request)
        return;
    size_t offset = 0, length = 0;
    const char *line;
    while (request->lines.data &&
           otfx_kv_next_line(request->lines.data, request->lines.length, &offset, &line, &length)) {
        otfx_kv_line parsed;
        if (!otfx_kv_parse(line, length, &parsed))
            continue;
        const char *ok = otfx_kv_get(&parsed, "ok"), *archive = otfx_kv_get(&parsed, "archive"),
                   *error = otfx_kv_get(&parsed, "error");
        if (ok && strcmp(ok, "1") == 0 && archive && !outcome->archive[0])
            snprintf(outcome->archive, sizeof(outcome->archive), "%s", archive);
        if (ok && strcmp(ok, "0") == 0 && !outcome->error[0])
            snprintf(outcome->error, sizeof(outcome->error), "%s", error ? error : "unknown");
        otfx_kv_line_free(&parsed);
    }
    if (request->count_failed)
        outcome->state = "failed";
    else if (outcome->archive[0])
        outcome->state = "written";
}

/* One value per line: what a message holds in line breaks would end it early. */
static void put_status_value(FILE *file, const char *key, const char *value)
{
    fprintf(file, "%s=", key);
    for (const char *c = value; *c; c++)
        fputc(*c == '\n' || *c == '\r' ? ' ' : *c, file);
    fputc('\n', file);
}

/* run_status: how the job ended, for otfx-run's last line (written to a temporary file and renamed, so a
 * reader never sees half of it). */
static void write_run_status(otfx_tree *tree, const char *ending, const char *cause, uint32_t exit_code,
                             const struct snapshot_outcome *outcome)
{
    const char *path = tree->config.run_status;
    if (!path || tree->root.status_written)
        return;
    tree->root.status_written = true;
    char temporary[4200];
    snprintf(temporary, sizeof(temporary), "%s.%ld", path, (long)getpid());
    FILE *file = fopen(temporary, "w");
    if (!file) {
        fprintf(stderr, "otfx: cannot write %s: %s\n", temporary, strerror(errno));
        return;
    }
    put_status_value(file, "ending", ending);
    if (cause)
        put_status_value(file, "cause", cause);
    fprintf(file, "exit_code=%u\n", exit_code);
    put_status_value(file, "snapshot", outcome->state);
    if (outcome->archive[0])
        put_status_value(file, "archive", outcome->archive);
    if (outcome->error[0])
        put_status_value(file, "error", outcome->error);
    if (fclose(file) != 0 || rename(temporary, path) != 0) {
        fprintf(stderr, "otfx: cannot write %s: %s\n", path, strerror(errno));
        unlink(temporary);
    }
}

void tree_write_exit_status(otfx_tree *tree, const struct tree_request *request)
{
    struct snapshot_outcome outcome;
    snapshot_outcome_of(request, &outcome);
    write_run_status(tree, "finished", NULL, 0, &outcome);
}

void tree_end_failed_job(otfx_tree *tree, const struct tree_request *request)
{
    struct snapshot_outcome outcome;
    snapshot_outcome_of(request, &outcome);
    const struct job_failure *failure = &tree->failure;
    if (!tree->config.run_status) {
        if (strcmp(outcome.state, "written") == 0)
            fprintf(stderr, "otfx: the job failed: %s; its trace is in %s\n", failure->cause,
                    outcome.archive);
        else if (strcmp(outcome.state, "failed") == 0)
            fprintf(stderr, "otfx: the job failed: %s; its snapshot failed: %s\n", failure->cause,
                    outcome.error);
    }
    write_run_status(tree, failure->interrupted ? "interrupted" : "failed", failure->cause,
                     failure->exit_code, &outcome);
    for (size_t i = 0; i < tree->request_count; i++)
        if (tree->requests[i].client)
            tree_reply_error(tree, tree->requests[i].client, tree->requests[i].client_request,
                             OTFX_ERR_CODE_JOB_ENDED, "the job failed before this request was answered");
    otfx_text text = {0};
    otfx_kv_begin(&text, "notice");
    otfx_kv_str(&text, "event", "job-failed");
    otfx_kv_str(&text, "cause", failure->cause);
    otfx_kv_end(&text);
    tree_broadcast_notice(tree, &text);
    otfx_text_free(&text);
    tree_stop_server(tree); /* removes the session file */
    fflush(stdout);
    fflush(stderr);
    /* mpiexec's proxies stop forwarding output when the abort reaches them (manual_wrappers.c, abort_job) */
    const struct timespec forward_output = {0, 250 * 1000 * 1000};
    nanosleep(&forward_output, NULL);
    otfx_quiet_stderr_before_abort();
    PMPI_Abort(MPI_COMM_WORLD, (int)failure->exit_code);
}

void tree_poll_failure(otfx_tree *tree)
{
    if (!otfx_role_is_root(tree->role)) {
        end_if_root_did_not(tree);
        return;
    }
    const int interrupt = tree->host.interrupted ? tree->host.interrupted(tree->host.context) : 0;
    if (interrupt && !tree->failure.failed && tree->root.end_stage == ROOT_RUNNING) {
        char cause[64];
        snprintf(cause, sizeof(cause), "interrupted by %s", interrupt == SIGINT ? "SIGINT" : "SIGTERM");
        tree_note_failure(tree, 128u + (uint32_t)interrupt, cause);
        tree->failure.interrupted = true;
    }
    if (tree->failure.failed && tree->root.end_stage == ROOT_RUNNING)
        start_final_command(tree);
}

/* Answers every request left, sends the job-ended notice, stops the server and the tree. */
static void begin_shutdown(otfx_tree *tree)
{
    struct tree_root *root = &tree->root;
    tree_write_exit_status(tree, NULL); /* unless the snapshot at exit wrote it */
    if (tree->request_count)
        fprintf(stderr, "otfx: %zu requests still unanswered at the end of the job\n", tree->request_count);
    while (tree->request_count) {
        struct tree_request *request = &tree->requests[0];
        if (request->client)
            tree_reply_error(tree, request->client, request->client_request, OTFX_ERR_CODE_JOB_ENDED,
                             "the application finished before this request was answered");
        tree_remove_request(tree, request);
    }
    for (size_t i = 0; i < root->waiting_count; i++)
        tree_reply_error(tree, root->waiting[i].client, root->waiting[i].request, OTFX_ERR_CODE_JOB_ENDED,
                         "the application finished before this request was answered");
    root->waiting_count = 0;
    otfx_text text = {0};
    otfx_kv_begin(&text, "notice");
    otfx_kv_str(&text, "event", "job-ended");
    otfx_kv_end(&text);
    tree_broadcast_notice(tree, &text);
    otfx_text_free(&text);
    tree_stop_server(tree);
    tree_shutdown_children(tree);
    root->end_stage = ROOT_SHUTDOWN;
    tree->shutdown = true;
}

void tree_poll_root_end(otfx_tree *tree)
{
    struct tree_root *root = &tree->root;
    const char *at_exit = tree->config.snapshot_at_exit;
    if (root->end_stage == ROOT_RUNNING && tree_triggers_snapshot_due(tree))
        return; /* a trigger's snapshot first (triggers.c sends it now that the ranks ended) */
    if (root->end_stage == ROOT_RUNNING) {
        if (at_exit && tree->config.layout->event_places > 0) {
            if (tree_snapshot_in_flight(tree))
                return; /* a client's snapshot first: one collective at a time */
            otfx_command command;
            memset(&command, 0, sizeof(command));
            command.kind = OTFX_CMD_SNAPSHOT;
            command.to = UINT64_MAX;
            command.overwrite = tree->config.snapshot_overwrite;
            snprintf(command.path, sizeof(command.path), "%s", at_exit);
            root->end_stage = ROOT_EXIT_SNAPSHOT;
            struct tree_request *request =
                tree_add_request(tree, tree->next_request++, TREE_COMMAND, &command, 0);
            if (request) {
                request->at_exit = true;
                tree_dispatch(tree, request, NULL, 0);
                return;
            }
            fprintf(stderr, "otfx: out of memory: no snapshot at exit\n");
        }
        root->end_stage = ROOT_DRAINING;
        root->end_stage_ns = tree_now_ns();
    }
    if (root->end_stage != ROOT_DRAINING)
        return;
    if (!answer_drained(tree->request_count, root->end_stage_ns, tree_now_ns()))
        return;
    begin_shutdown(tree);
}

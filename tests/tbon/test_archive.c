/* test_archive.c — an OTF2 archive opened after the run (otfx/archive.h): a synthetic two-rank run whose
 * analyses are known by construction is written with the store's OTF2 export, opened, and asked like a
 * job — directly and through the root's server with the client library. Its answers must be the ones
 * the modules give on the traces in memory, and the commands that steer a job are refused. */
#define _GNU_SOURCE
#include "replay_world.h"

#include <otfx/archive.h>
#include <otfx/client.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OP_BARRIER 0u

typedef struct fixture {
    rworld world;
    char directory[256], anchor[512];
} fixture;

/* Rank 1 computes f (60 ms) and g (40 ms) and sends to rank 0, which computed h for 90 ms and waits in
 * MPI_Recv from 90 to 101 ms (a late sender of 10 ms); then rank 0 computes h for 29 ms more, rank 1 g
 * for 9 ms, and both meet in a barrier that rank 1 enters 20 ms before rank 0 (a wait at N×N). */
static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    rworld *w = &fx->world;
    rw_init(w, 2);
    otfx_ref f = rw_region(w, "f", OTFX_ROLE_USER_FUNCTION);
    otfx_ref g = rw_region(w, "g", OTFX_ROLE_USER_FUNCTION);
    otfx_ref h = rw_region(w, "h", OTFX_ROLE_USER_FUNCTION);
    otfx_ref barrier = rw_region(w, "MPI_Barrier", OTFX_ROLE_MPI_COLLECTIVE);
    rw_compute(w, 1, f, 0, 60 * RW_MS);
    rw_compute(w, 1, g, 60 * RW_MS, 100 * RW_MS);
    rw_send(w, 1, 0, 100 * RW_MS, 101 * RW_MS);
    rw_compute(w, 0, h, 0, 90 * RW_MS);
    rw_recv(w, 0, 1, 90 * RW_MS, 101 * RW_MS);
    rw_compute(w, 0, h, 101 * RW_MS, 130 * RW_MS);
    rw_compute(w, 1, g, 101 * RW_MS, 110 * RW_MS);
    const uint64_t arrive[2] = {130 * RW_MS, 110 * RW_MS}, done[2] = {131 * RW_MS, 131 * RW_MS};
    rw_collective(w, barrier, OP_BARRIER, UINT32_MAX, arrive, done);

    snprintf(fx->directory, sizeof fx->directory, "%s/otfx-test-archive-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(fx->directory));
    otfx_export_options options = otfx_export_options_default();
    assert_int_equal(otfx_otf2_export(fx->directory, "run", w->defs, w->traces, w->ranks, &options), OTFX_OK);
    snprintf(fx->anchor, sizeof fx->anchor, "%s/run.otf2", fx->directory);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", fx->directory);
    assert_int_equal(system(command), 0);
    rw_free(&fx->world);
    free(fx);
    return 0;
}

/* The archive's answer to `line` (must be a REPLY); free it. */
static char *ask(otfx_archive *archive, const char *line)
{
    otfx_command command;
    char error[256];
    if (!otfx_command_parse(line, &command, error, sizeof error))
        fail_msg("%s: %s", line, error);
    otfx_text text = {0};
    const otfx_frame_kind kind = otfx_archive_answer(archive, &command, &text);
    otfx_text_append(&text, "", 1);
    if (kind != OTFX_FRAME_REPLY)
        fail_msg("%s answered %s", line, text.data);
    return text.data;
}

/* The modules' answer on the traces in memory, one place (what the archive must say too). */
static char *in_memory(fixture *fx, const char *line)
{
    otfx_command command;
    char error[256];
    assert_true(otfx_command_parse(line, &command, error, sizeof error));
    return rw_run_one_place(otfx_analysis_for_command(command.kind), &command, &fx->world);
}

static void same_answer(const char *line, const char *archive, const char *memory)
{
    if (strcmp(archive, memory) != 0) {
        fprintf(stderr, "%s: the archive answered\n%s\nthe traces in memory\n%s", line, archive, memory);
        fail_msg("%s: the answers differ", line);
    }
}

static void test_answers_known_by_construction(void **state)
{
    fixture *fx = *state;
    char error[512];
    otfx_archive *archive = otfx_archive_open(fx->anchor, NULL, error, sizeof error);
    if (!archive)
        fail_msg("open: %s", error);
    const otfx_archive_info *info = otfx_archive_info_of(archive);
    assert_int_equal(info->ranks, 2);
    assert_int_equal(info->locations, 2);
    assert_string_equal(info->name, "run");
    assert_int_equal(info->first_time, 0);
    assert_int_equal(info->last_time, 131 * RW_MS);

    /* the critical path: rank 1's f and g (100 ms), the send, then rank 0's h and the barrier */
    char *reply = ask(archive, "critical-path --zero f");
    assert_int_equal(rw_u64(reply, "critical-path", NULL, NULL, "places_answered"), 1);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "f", "cp_ns"), 60 * RW_MS);
    assert_int_equal(rw_u64(reply, "cp-function", "name", "g", "cp_ns"), 40 * RW_MS);
    assert_int_equal(rw_u64(reply, "cp-segment", "function", "f", "rank"), 1);
    char *expected = in_memory(fx, "critical-path --zero f");
    same_answer("critical-path --zero f", reply, expected);
    free(reply);
    free(expected);

    /* wait states: rank 0 waited 10 ms for the late sender, rank 1 20 ms in the barrier */
    reply = ask(archive, "wait-states");
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "late_sender_ns"), 10 * RW_MS);
    assert_int_equal(rw_u64(reply, "wait-states", NULL, NULL, "wait_nxn_ns"), 20 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "0", "late_sender_ns"), 10 * RW_MS);
    assert_int_equal(rw_u64(reply, "ws-rank", "rank", "1", "wait_nxn_ns"), 20 * RW_MS);
    expected = in_memory(fx, "wait-states");
    same_answer("wait-states", reply, expected);
    free(reply);
    free(expected);

    /* profiles per rank, the compensated profile, the message matrix, the structure */
    reply = ask(archive, "profile --ranks 0");
    assert_int_equal(rw_u64(reply, "region", "name", "h", "exclusive_ns"), 119 * RW_MS);
    assert_int_equal(rw_u64(reply, "region", "name", "h", "visits"), 2);
    assert_null(rw_field(reply, "region", "name", "f", "visits"));
    free(reply);
    const char *same[] = {"profile", "profile --ranks 1 --from 50ms --to 105ms", "profile --compensated",
                          "messages", "structure"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        reply = ask(archive, same[i]);
        expected = in_memory(fx, same[i]);
        same_answer(same[i], reply, expected);
        free(reply);
        free(expected);
    }
    reply = ask(archive, "messages");
    assert_int_equal(rw_u64(reply, "messages", "src", "1", "count"), 1);
    assert_int_equal(rw_u64(reply, "messages", "src", "1", "dst"), 0);
    free(reply);

    /* status: a finished run that records nothing, every event held */
    reply = ask(archive, "status");
    assert_string_equal(rw_field(reply, "summary", NULL, NULL, "app_state"), "finished");
    assert_int_equal(rw_u64(reply, "summary", NULL, NULL, "ranks"), 2);
    assert_int_equal(rw_u64(reply, "summary", NULL, NULL, "events_held"), info->events);
    free(reply);

    /* steering a finished run is refused, with why */
    const char *refused[] = {"record pause", "app resume", "reset", "snapshot x", "load-module /x.so"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        otfx_command command;
        assert_true(otfx_command_parse(refused[i], &command, error, sizeof error));
        otfx_text text = {0};
        assert_int_equal(otfx_archive_answer(archive, &command, &text), OTFX_FRAME_ERROR);
        otfx_text_append(&text, "", 1);
        assert_string_equal(rw_field(text.data, "error", NULL, NULL, "code"), "failed");
        assert_non_null(strstr(rw_field(text.data, "error", NULL, NULL, "message"), "archive"));
        otfx_text_free(&text);
    }
    otfx_archive_close(archive);
}

static void test_bad_archives(void **state)
{
    fixture *fx = *state;
    char error[512] = "";
    char path[600];
    snprintf(path, sizeof path, "%s/missing.otf2", fx->directory);
    assert_null(otfx_archive_open(path, NULL, error, sizeof error));
    assert_non_null(strstr(error, "missing.otf2"));
    snprintf(path, sizeof path, "%s/junk.otf2", fx->directory);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs("not an archive\n", file);
    fclose(file);
    error[0] = '\0';
    assert_null(otfx_archive_open(path, NULL, error, sizeof error));
    assert_non_null(strstr(error, "OTF2"));
}

/* Served with the root's server: a client of the protocol gets the same answers as a job's. */
static void test_served(void **state)
{
    fixture *fx = *state;
    char error[512];
    otfx_archive *archive = otfx_archive_open(fx->anchor, NULL, error, sizeof error);
    assert_non_null(archive);
    otfx_archive_server *server = otfx_archive_serve(archive, 2, error, sizeof error);
    if (!server)
        fail_msg("serve: %s", error);
    const char *session_path = otfx_archive_server_session_path(server);
    struct stat info;
    assert_int_equal(stat(session_path, &info), 0);
    assert_int_equal(info.st_mode & 0777, 0600);
    char session_file[512], directory[512];
    snprintf(session_file, sizeof session_file, "%s", session_path);
    snprintf(directory, sizeof directory, "%s", session_path);
    *strrchr(directory, '/') = '\0';

    otfx_session session;
    assert_int_equal(otfx_session_read(session_path, &session, error, sizeof error), OTFX_CLIENT_OK);
    otfx_client_status status;
    otfx_client *client = otfx_client_connect(&session, "test", 30000, &status, error, sizeof error);
    if (!client)
        fail_msg("connect: %s", error);
    assert_non_null(strstr(otfx_client_welcome(client), "job=archive:run"));
    assert_non_null(strstr(otfx_client_welcome(client), "ranks=2"));

    const char *lines[] = {"critical-path", "wait-states --top 5", "record pause"};
    /* pipelined: every request is in flight before the first answer is read */
    for (uint32_t id = 1; id <= 3; id++)
        assert_int_equal(otfx_client_send(client, id, lines[id - 1], error, sizeof error), OTFX_CLIENT_OK);
    int answered = 0;
    while (answered < 3) {
        otfx_client_frame frame;
        assert_int_equal(otfx_client_read(client, &frame, "an answer", error, sizeof error), OTFX_CLIENT_OK);
        const uint32_t id = frame.header.request;
        assert_true(id >= 1 && id <= 3);
        char *payload = strndup(frame.payload, frame.header.length);
        if (id == 3) {
            assert_int_equal(frame.header.kind, OTFX_FRAME_ERROR);
            assert_non_null(strstr(payload, "finished"));
        } else {
            assert_int_equal(frame.header.kind, OTFX_FRAME_REPLY);
            char *direct = ask(archive, lines[id - 1]);
            assert_string_equal(payload, direct);
            free(direct);
        }
        free(payload);
        answered++;
    }
    otfx_client_close(client);
    otfx_archive_server_stop(server);
    assert_int_not_equal(access(session_file, F_OK), 0);
    assert_int_not_equal(access(directory, F_OK), 0);
    otfx_archive_close(archive);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_answers_known_by_construction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_archives, setup, teardown),
        cmocka_unit_test_setup_teardown(test_served, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_trigger.c — the trigger grammar (tbon/include/otfx/trigger.h): what every condition and action
 * parses to, the canonical text, the position and reason of errors, lists, and `trigger` commands. */
#include <otfx/protocol.h>
#include <otfx/trigger.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static otfx_trigger_spec parse_ok(const char *text)
{
    otfx_trigger_spec spec;
    size_t column = 0;
    char error[256] = "";
    if (!otfx_trigger_parse(text, &spec, &column, error, sizeof error))
        fail_msg("'%s' did not parse: column %zu: %s", text, column, error);
    /* the canonical text parses to the same trigger */
    otfx_text canonical = {0};
    otfx_trigger_format(&spec, &canonical);
    otfx_trigger_spec again;
    if (!otfx_trigger_parse(canonical.data, &again, &column, error, sizeof error))
        fail_msg("canonical '%s' did not parse: column %zu: %s", canonical.data, column, error);
    assert_memory_equal(&spec, &again, sizeof spec);
    otfx_text_free(&canonical);
    return spec;
}

static void test_conditions(void **state)
{
    (void)state;
    otfx_trigger_spec s = parse_ok("duration(MPI_Allreduce) > 50ms => notify");
    assert_int_equal(s.condition, OTFX_TRIGGER_DURATION);
    assert_string_equal(s.name, "MPI_Allreduce");
    assert_int_equal(s.threshold, 50000000);
    assert_int_equal(s.actions, OTFX_TRIGGER_NOTIFY);
    assert_int_equal(s.times, 1);
    assert_int_equal(s.ranks.count, 0);

    s = parse_ok("count( solve ) > 100 => pause-app");
    assert_int_equal(s.condition, OTFX_TRIGGER_COUNT);
    assert_string_equal(s.name, "solve");
    assert_int_equal(s.threshold, 100);

    s = parse_ok("rate(MPI_Send)>2000/s=>notify");
    assert_int_equal(s.condition, OTFX_TRIGGER_RATE);
    assert_int_equal(s.threshold, 2000);

    s = parse_ok("message > 1M => notify");
    assert_int_equal(s.condition, OTFX_TRIGGER_MESSAGE);
    assert_int_equal(s.threshold, 1048576);

    s = parse_ok("metric(page-faults) > 1.5e3 => notify");
    assert_int_equal(s.condition, OTFX_TRIGGER_METRIC);
    assert_string_equal(s.name, "page-faults");
    assert_true(s.metric_threshold == 1500.0);

    s = parse_ok("marker(converged) => pause-recording");
    assert_int_equal(s.condition, OTFX_TRIGGER_MARKER);
    assert_string_equal(s.name, "converged");
    assert_int_equal(s.actions, OTFX_TRIGGER_PAUSE_RECORDING);

    s = parse_ok("hang > 5 => notify");
    assert_int_equal(s.condition, OTFX_TRIGGER_HANG);
    assert_int_equal(s.threshold, 5000000000u);

    s = parse_ok("late-sender > 20ms on ranks 1 => notify");
    assert_int_equal(s.condition, OTFX_TRIGGER_LATE_SENDER);
    assert_int_equal(s.threshold, 20000000u);
    assert_string_equal(s.name, "");
    assert_true(otfx_rank_set_contains(&s.ranks, 1));
    assert_string_equal(otfx_trigger_condition_name(s.condition), "late-sender");
    otfx_text canonical = {0};
    otfx_trigger_format(&s, &canonical);
    assert_string_equal(canonical.data, "late-sender > 20000000ns on ranks 1 => notify");
    otfx_text_free(&canonical);
    s = parse_ok("late-sender>1.5s=>pause-app");
    assert_int_equal(s.threshold, 1500000000u);

    /* names with parentheses and blanks (C++ functions) */
    s = parse_ok("duration(solve(int, double)) > 1s => notify");
    assert_string_equal(s.name, "solve(int, double)");
}

static void test_restrictions_and_actions(void **state)
{
    (void)state;
    otfx_trigger_spec s = parse_ok("duration(MPI_Allreduce) > 50ms on ranks 0-3,7 after 2s => pause-app, "
                                   "snapshot(-1s,+0.5s) to trig/run1, notify times 3");
    assert_int_equal(s.ranks.count, 2);
    assert_true(otfx_rank_set_contains(&s.ranks, 3));
    assert_true(otfx_rank_set_contains(&s.ranks, 7));
    assert_false(otfx_rank_set_contains(&s.ranks, 5));
    assert_int_equal(s.after_ns, 2000000000u);
    assert_int_equal(s.actions, OTFX_TRIGGER_PAUSE_APP | OTFX_TRIGGER_SNAPSHOT | OTFX_TRIGGER_NOTIFY);
    assert_int_equal(s.snapshot_before_ns, 1000000000u);
    assert_int_equal(s.snapshot_after_ns, 500000000u);
    assert_string_equal(s.snapshot_path, "trig/run1");
    assert_int_equal(s.times, 3);

    s = parse_ok("hang > 2s after 1s => snapshot(-10s) to hung");
    assert_int_equal(s.snapshot_after_ns, 0);
    assert_int_equal(s.after_ns, 1000000000u);

    otfx_text text = {0};
    otfx_trigger_format(&s, &text);
    assert_string_equal(text.data,
                        "hang > 2000000000ns after 1000000000ns => snapshot(-10000000000ns) to hung");
    otfx_text_free(&text);
}

static void expect_error(const char *text, size_t column, const char *words)
{
    otfx_trigger_spec spec;
    size_t at = 0;
    char error[256] = "";
    if (otfx_trigger_parse(text, &spec, &at, error, sizeof error))
        fail_msg("'%s' parsed", text);
    if (at != column || !strstr(error, words))
        fail_msg("'%s': column %zu '%s', expected column %zu with '%s'", text, at, error, column, words);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("", 1, "empty trigger");
    expect_error("speed(x) > 1 => notify", 1, "expected a condition");
    expect_error("duration MPI_Send > 1s => notify", 10, "expected '('");
    expect_error("duration(MPI_Send > 1s => notify", 10, "no ')' closes");
    expect_error("duration() > 1s => notify", 10, "name is empty");
    expect_error("duration(MPI_Send) 1s => notify", 20, "expected '>'");
    expect_error("duration(MPI_Send) > fast => notify", 22, "must be a time");
    expect_error("duration(MPI_Send) > 1h => notify", 22, "not '1h'");
    expect_error("count(x) > many => notify", 12, "whole number");
    expect_error("rate(x) > 10 => notify", 14, "expected '/s'");
    expect_error("message > 1T => notify", 11, "size must be bytes");
    expect_error("hang > 0 => notify", 1, "above zero");
    expect_error("duration(x) > 1s", 17, "expected '=>'");
    expect_error("duration(x) > 1s notify", 18, "expected '=>'");
    expect_error("duration(x) > 1s on rank 1 => notify", 21, "expected 'ranks SET'");
    expect_error("duration(x) > 1s on ranks 3-1 => notify", 27, "the ranks must be");
    expect_error("duration(x) > 1s =>", 20, "expected an action");
    expect_error("duration(x) > 1s => explode", 21, "expected an action");
    expect_error("duration(x) > 1s => notify, notify", 29, "given twice");
    expect_error("duration(x) > 1s => snapshot(1s) to d", 30, "expected '-'");
    expect_error("duration(x) > 1s => snapshot(-1s,0.5s) to d", 34, "expected '+'");
    expect_error("duration(x) > 1s => snapshot(-1s)", 34, "to PATH");
    expect_error("duration(x) > 1s => snapshot(-1s) to", 37, "PATH");
    expect_error("duration(x) > 1s => notify times 0", 28, "at least 1");
    expect_error("duration(x) > 1s => notify twice", 28, "times N");
    expect_error("duration(x) > 1s => notify times 2 more", 36, "unexpected text");
    expect_error("late-sender(MPI_Recv) > 1s => notify", 12, "late-sender takes no region");
    expect_error("late-sender(MPI_Recv) > 1s => notify", 12, "counted as unseen");
    expect_error("late-sender 1s => notify", 13, "expected '>'");
    expect_error("late-sender > soon => notify", 15, "the time must be a time");
    expect_error("late-receiver > 1s => notify", 1, "use late-sender > TIME");
    expect_error("wait > 1s => notify", 1, "wait is not a condition");
    expect_error("latency > 1s => notify", 1, "hang or late-sender");
}

static bool count_added(void *user, const otfx_trigger_spec *spec)
{
    (void)spec;
    return ++*(int *)user <= 2;
}

static void test_lists(void **state)
{
    (void)state;
    int added = 0;
    size_t index = 0, column = 0;
    char error[256];
    assert_true(otfx_trigger_list_parse("marker(a) => notify; ;hang > 1s => notify", count_added, &added,
                                        &index, &column, error, sizeof error));
    assert_int_equal(added, 2);
    added = 0;
    assert_false(otfx_trigger_list_parse("marker(a) => notify;marker(b) => explode", count_added, &added,
                                         &index, &column, error, sizeof error));
    assert_int_equal(index, 2);
    assert_int_equal(column, 14);
    added = 0;
    assert_false(otfx_trigger_list_parse("marker(a)=>notify;marker(b)=>notify;marker(c)=>notify", count_added,
                                         &added, &index, &column, error, sizeof error));
    assert_int_equal(index, 3);
    assert_non_null(strstr(error, "too many"));
}

static void test_commands(void **state)
{
    (void)state;
    otfx_command command;
    char error[512];
    assert_true(otfx_command_parse("trigger add duration(MPI_Allreduce) > 50ms => pause-app, notify",
                                   &command, error, sizeof error));
    assert_int_equal(command.kind, OTFX_CMD_TRIGGER_ADD);
    assert_string_equal(command.path, "duration(MPI_Allreduce) > 50ms => pause-app, notify");
    otfx_text line = {0};
    otfx_command_format(&command, &line);
    otfx_command again;
    assert_true(otfx_command_parse(line.data, &again, error, sizeof error));
    assert_memory_equal(&command, &again, sizeof command);
    otfx_text_free(&line);

    assert_true(otfx_command_parse("trigger list", &command, error, sizeof error));
    assert_int_equal(command.kind, OTFX_CMD_TRIGGER_LIST);
    assert_true(otfx_command_parse("trigger remove 12", &command, error, sizeof error));
    assert_int_equal(command.kind, OTFX_CMD_TRIGGER_REMOVE);
    assert_int_equal(command.trigger_id, 12);
    otfx_command_format(&command, &line);
    assert_string_equal(line.data, "trigger remove 12");
    otfx_text_free(&line);

    assert_false(otfx_command_parse("trigger remove x", &command, error, sizeof error));
    assert_false(otfx_command_parse("trigger list 3", &command, error, sizeof error));
    assert_false(otfx_command_parse("trigger arm 1", &command, error, sizeof error));
    assert_false(otfx_command_parse("trigger add duration(x) > 1s", &command, error, sizeof error));
    assert_non_null(strstr(error, "at column 17"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conditions), cmocka_unit_test(test_restrictions_and_actions),
        cmocka_unit_test(test_errors),     cmocka_unit_test(test_lists),
        cmocka_unit_test(test_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

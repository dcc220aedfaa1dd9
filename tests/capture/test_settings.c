/*
 * test_settings.c — the settings library (otfx/settings.h, otfx/testpoint.h): every type of
 * settings.tsv parsed as the ranks and places relied on before the table, the table's messages for
 * invalid values, defaults, test points and the size parser.
 */
#define _POSIX_C_SOURCE 200809L
#include <otfx/settings.h>
#include <otfx/testpoint.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Clears every OTFX_* variable of the table, then sets name=value pairs and reloads. */
static void environment(const char *first, ...)
{
    for (int id = 0; id < OTFX_SETTING_COUNT; id++)
        unsetenv(otfx_setting_describe((otfx_setting)id)->name);
    va_list pairs;
    va_start(pairs, first);
    for (const char *name = first; name; name = va_arg(pairs, const char *))
        setenv(name, va_arg(pairs, const char *), 1);
    va_end(pairs);
    otfx_settings_load();
}

static void defaults_when_unset(void **state)
{
    (void)state;
    environment(NULL);
    assert_false(otfx_setting_is_set(OTFX_SETTING_BUFFER));
    assert_int_equal(otfx_setting_size(OTFX_SETTING_BUFFER), 64u * 1024 * 1024);
    assert_int_equal(otfx_setting_integer(OTFX_SETTING_FANIN), 16);
    assert_true(otfx_setting_bool(OTFX_SETTING_RECORD));
    assert_false(otfx_setting_bool(OTFX_SETTING_START_PAUSED));
    assert_int_equal(otfx_setting_choice(OTFX_SETTING_REDUCTION), OTFX_SETTING_REDUCTION_RING);
    assert_int_equal(otfx_setting_choice(OTFX_SETTING_TIMER), -1); /* no default: the CPU decides */
    assert_int_equal(otfx_setting_list(OTFX_SETTING_DISABLE), 0);
    assert_true(otfx_setting_seconds(OTFX_SETTING_CLOCK_SYNC) == 10.0);
    assert_null(otfx_setting_string(OTFX_SETTING_SESSION_DIR));
    uint64_t calls = 0, ns = 0;
    assert_true(otfx_setting_rate(OTFX_SETTING_THROTTLE, &calls, &ns));
    assert_int_equal(calls, 100000);
    assert_int_equal(ns, 1000);
    for (int id = 0; id < OTFX_SETTING_COUNT; id++)
        assert_null(otfx_setting_problem((otfx_setting)id));
}

static void empty_counts_as_unset(void **state)
{
    (void)state;
    environment("OTFX_FANIN", "", "OTFX_SESSION_DIR", "", NULL);
    assert_false(otfx_setting_is_set(OTFX_SETTING_FANIN));
    assert_null(otfx_setting_problem(OTFX_SETTING_FANIN));
    assert_null(otfx_setting_string(OTFX_SETTING_SESSION_DIR));
}

static void valid_values(void **state)
{
    (void)state;
    environment("OTFX_BUFFER", "256K", "OTFX_FANIN", "2", "OTFX_RECORD", "0", "OTFX_REDUCTION", "depth",
                "OTFX_DISABLE", "p2p,user,", "OTFX_CLOCK_SYNC", "0.25", "OTFX_THROTTLE", "50:20",
                "OTFX_SESSION_DIR", "/tmp/x", "OTFX_MODULE_TIMEOUT", "0.5", NULL);
    assert_int_equal(otfx_setting_size(OTFX_SETTING_BUFFER), 256 * 1024);
    assert_int_equal(otfx_setting_integer(OTFX_SETTING_FANIN), 2);
    assert_false(otfx_setting_bool(OTFX_SETTING_RECORD));
    assert_int_equal(otfx_setting_choice(OTFX_SETTING_REDUCTION), OTFX_SETTING_REDUCTION_DEPTH);
    assert_int_equal(otfx_setting_list(OTFX_SETTING_DISABLE),
                     (1u << OTFX_SETTING_DISABLE_P2P) | (1u << OTFX_SETTING_DISABLE_USER));
    assert_true(otfx_setting_seconds(OTFX_SETTING_CLOCK_SYNC) == 0.25);
    assert_true(otfx_setting_seconds(OTFX_SETTING_MODULE_TIMEOUT) == 0.5);
    uint64_t calls = 0, ns = 0;
    assert_true(otfx_setting_rate(OTFX_SETTING_THROTTLE, &calls, &ns));
    assert_int_equal(calls, 50);
    assert_int_equal(ns, 20);
    assert_string_equal(otfx_setting_string(OTFX_SETTING_SESSION_DIR), "/tmp/x");
    for (int id = 0; id < OTFX_SETTING_COUNT; id++)
        assert_null(otfx_setting_problem((otfx_setting)id));
    environment("OTFX_THROTTLE", "off", NULL);
    assert_false(otfx_setting_rate(OTFX_SETTING_THROTTLE, &calls, &ns));
}

/* The messages the ranks and places printed before the table (tests/capture and tests/places assert
 * some of them through whole jobs); an invalid value answers the default. */
static void invalid_values_keep_their_messages(void **state)
{
    (void)state;
    environment("OTFX_FANIN", "1", "OTFX_PLACES", "-1", "OTFX_DISABLE", "p2p,sometimes", "OTFX_TIMER",
                "cycles", "OTFX_BUFFER", "12Q", "OTFX_QUERY_MEMORY", "10K", "OTFX_CLOCK_SYNC", "nan",
                "OTFX_THROTTLE", "5:", "OTFX_MODULE_TIMEOUT", "0", "OTFX_RECORD", "yes", NULL);
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_FANIN),
                        "OTFX_FANIN must be a fan-in of 2 or more, not 1");
    assert_int_equal(otfx_setting_integer(OTFX_SETTING_FANIN), 16);
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_PLACES),
                        "OTFX_PLACES must be a number of places (0 or more), not -1");
    assert_string_equal(
        otfx_setting_problem(OTFX_SETTING_DISABLE),
        "OTFX_DISABLE must be a comma list of p2p, collective, mpi-other, user, all, not p2p,sometimes");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_TIMER), "OTFX_TIMER must be 'tsc' or 'monotonic'");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_BUFFER),
                        "OTFX_BUFFER=12Q is not a size (e.g. 256K, 64M, 1G)");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_QUERY_MEMORY),
                        "OTFX_QUERY_MEMORY=10K is not a size of at least 64K (e.g. 16M, 64M)");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_CLOCK_SYNC),
                        "OTFX_CLOCK_SYNC must be seconds between re-synchronisations (0: off), not nan");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_THROTTLE),
                        "OTFX_THROTTLE must be CALLS:NS (e.g. 100000:1000) or 0, not '5:'");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_MODULE_TIMEOUT),
                        "OTFX_MODULE_TIMEOUT=0 is not seconds above 0 (e.g. 10, 0.5)");
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_RECORD),
                        "OTFX_RECORD must be 0 (start with recording off) or 1 (on), not yes");
    assert_true(otfx_setting_bool(OTFX_SETTING_RECORD));
    environment("OTFX_BUFFER", "1K", "OTFX_DISABLE", ",p2p", NULL);
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_BUFFER),
                        "OTFX_BUFFER=1K is below the smallest trace budget, 64K");
    assert_non_null(otfx_setting_problem(OTFX_SETTING_DISABLE));
}

/* Read once: a later change of the environment changes nothing until the next load. */
static void read_once(void **state)
{
    (void)state;
    environment("OTFX_FANIN", "4", NULL);
    setenv("OTFX_FANIN", "8", 1);
    assert_int_equal(otfx_setting_integer(OTFX_SETTING_FANIN), 4);
    otfx_settings_load();
    assert_int_equal(otfx_setting_integer(OTFX_SETTING_FANIN), 8);
}

static void accepts_checks_like_the_load(void **state)
{
    (void)state;
    assert_true(otfx_setting_accepts(OTFX_SETTING_REDUCTION, "stop"));
    assert_false(otfx_setting_accepts(OTFX_SETTING_REDUCTION, "fastest"));
    assert_true(otfx_setting_accepts(OTFX_SETTING_DISABLE, "p2p,collective"));
    assert_false(otfx_setting_accepts(OTFX_SETTING_DISABLE, ""));
    assert_false(otfx_setting_accepts(OTFX_SETTING_QUERY_MEMORY, "10K"));
    assert_true(otfx_setting_accepts(OTFX_SETTING_MODULE_TIMEOUT, "1000000"));
    assert_false(otfx_setting_accepts(OTFX_SETTING_MODULE_TIMEOUT, "1000001"));
}

static void testpoints(void **state)
{
    (void)state;
    environment(NULL);
    double ppm = 0;
    long long rank = 0;
    assert_false(otfx_testpoint_real(OTFX_SETTING_TEST_CLOCK_SKEW_PPM, &ppm));
    assert_false(otfx_testpoint_enabled(OTFX_SETTING_TEST_REMOTE_PLACE));
    environment("OTFX_TEST_CLOCK_SKEW_PPM", "-2000", "OTFX_TEST_CLOCK_SKEW_RANK", "3",
                "OTFX_TEST_REMOTE_PLACE", "1", NULL);
    assert_true(otfx_testpoint_real(OTFX_SETTING_TEST_CLOCK_SKEW_PPM, &ppm));
    assert_true(ppm == -2000.0);
    assert_true(otfx_testpoint_integer(OTFX_SETTING_TEST_CLOCK_SKEW_RANK, &rank));
    assert_int_equal(rank, 3);
    assert_true(otfx_testpoint_enabled(OTFX_SETTING_TEST_REMOTE_PLACE));
    /* invalid: reported on stderr and ignored */
    environment("OTFX_TEST_CLOCK_SKEW_RANK", "one", "OTFX_TEST_PLACE_DELAY_US", "-5", NULL);
    assert_false(otfx_testpoint_integer(OTFX_SETTING_TEST_CLOCK_SKEW_RANK, &rank));
    assert_false(otfx_testpoint_integer(OTFX_SETTING_TEST_PLACE_DELAY_US, &rank));
    assert_string_equal(otfx_setting_problem(OTFX_SETTING_TEST_CLOCK_SKEW_RANK),
                        "OTFX_TEST_CLOCK_SKEW_RANK=one is not a rank: ignored");
}

static void size_parser(void **state)
{
    (void)state;
    size_t bytes = 0;
    assert_int_equal(otfx_settings_parse_size("65536", &bytes), 0);
    assert_int_equal(bytes, 65536);
    assert_int_equal(otfx_settings_parse_size("64M", &bytes), 0);
    assert_int_equal(bytes, 64u << 20);
    assert_int_equal(otfx_settings_parse_size("1GiB", &bytes), 0);
    assert_int_equal(bytes, 1u << 30);
    assert_int_equal(otfx_settings_parse_size("256kb", &bytes), 0);
    assert_int_equal(bytes, 256u << 10);
    const char *bad[] = {"", "0", "-1", "12Q", "K", "1MM", "99999999999999999999", "18014398509481984G"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(otfx_settings_parse_size(bad[i], &bytes), -1);
}

/* Every setting otfx-run's help lists is in it, with its option. */
static void help_lists_the_table(void **state)
{
    (void)state;
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    assert_non_null(out);
    otfx_settings_print_help(out, 1u << OTFX_SETTING_KIND_USER, 100);
    fclose(out);
    for (int id = 0; id < OTFX_SETTING_COUNT; id++) {
        const otfx_setting_info *info = otfx_setting_describe((otfx_setting)id);
        assert_true((strstr(text, info->name) != NULL) == (info->kind == OTFX_SETTING_KIND_USER));
    }
    assert_non_null(strstr(text, "(default 64M; --buffer)"));
    assert_null(strstr(text, "OTFX_TEST_"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_when_unset),
        cmocka_unit_test(empty_counts_as_unset),
        cmocka_unit_test(valid_values),
        cmocka_unit_test(invalid_values_keep_their_messages),
        cmocka_unit_test(read_once),
        cmocka_unit_test(accepts_checks_like_the_load),
        cmocka_unit_test(testpoints),
        cmocka_unit_test(size_parser),
        cmocka_unit_test(help_lists_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

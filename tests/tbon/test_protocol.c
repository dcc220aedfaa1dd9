/* test_protocol.c — frames, record lines, rank sets and command lines (tbon/include/otfx/protocol.h). */
#include <otfx/protocol.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- frames ------------------------------------------------------------------------------------- */

static void test_frame_round_trip(void **state)
{
    (void)state;
    unsigned char bytes[OTFX_FRAME_HEADER_BYTES];
    otfx_frame_write_header(bytes, OTFX_FRAME_REPLY, 0xA1B2C3D4u, 0x01020304u);
    /* big-endian on the wire */
    const unsigned char expected[16] = {'O', 'T', 'F', 'X', 0, 1, 0, 5, 0xA1, 0xB2, 0xC3, 0xD4, 1, 2, 3, 4};
    assert_memory_equal(bytes, expected, 16);
    otfx_frame_header header;
    assert_int_equal(otfx_frame_parse_header(bytes, 16, OTFX_PROTOCOL_MAX_REPLY, &header), OTFX_FRAME_OK);
    assert_int_equal(header.version, OTFX_PROTOCOL_VERSION);
    assert_int_equal(header.kind, OTFX_FRAME_REPLY);
    assert_int_equal(header.request, 0xA1B2C3D4u);
    assert_int_equal(header.length, 0x01020304u);
    for (int kind = OTFX_FRAME_HELLO; kind <= OTFX_FRAME_KIND_MAX; kind++) {
        otfx_frame_write_header(bytes, (otfx_frame_kind)kind, 7, 0);
        assert_int_equal(otfx_frame_parse_header(bytes, 16, 0, &header), OTFX_FRAME_OK);
        assert_int_equal(header.kind, kind);
    }
}

static void test_frame_errors(void **state)
{
    (void)state;
    unsigned char bytes[OTFX_FRAME_HEADER_BYTES + 4];
    otfx_frame_header header;
    otfx_frame_write_header(bytes, OTFX_FRAME_REQUEST, 1, 100);
    for (size_t n = 0; n < 16; n++)
        assert_int_equal(otfx_frame_parse_header(bytes, n, 1000, &header), OTFX_FRAME_NEED_MORE);
    assert_int_equal(otfx_frame_parse_header(bytes, 20, 1000, &header), OTFX_FRAME_OK);
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 100, &header), OTFX_FRAME_OK);
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 99, &header), OTFX_FRAME_TOO_LARGE);

    bytes[0] = 'X';
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 1000, &header), OTFX_FRAME_BAD_MAGIC);
    otfx_frame_write_header(bytes, OTFX_FRAME_REQUEST, 1, 100);
    bytes[5] = 2;
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 1000, &header), OTFX_FRAME_BAD_VERSION);
    assert_int_equal(header.version, 2);
    otfx_frame_write_header(bytes, (otfx_frame_kind)0, 1, 100);
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 1000, &header), OTFX_FRAME_BAD_KIND);
    otfx_frame_write_header(bytes, (otfx_frame_kind)(OTFX_FRAME_KIND_MAX + 1), 1, 100);
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 1000, &header), OTFX_FRAME_BAD_KIND);
    otfx_frame_write_header(bytes, (otfx_frame_kind)0xffff, 1, 100);
    assert_int_equal(otfx_frame_parse_header(bytes, 16, 1000, NULL), OTFX_FRAME_BAD_KIND);

    const otfx_frame_status all[] = {OTFX_FRAME_OK,          OTFX_FRAME_NEED_MORE, OTFX_FRAME_BAD_MAGIC,
                                     OTFX_FRAME_BAD_VERSION, OTFX_FRAME_BAD_KIND,  OTFX_FRAME_TOO_LARGE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(otfx_frame_status_text(all[i]), otfx_frame_status_text(all[j]));
    assert_string_equal(otfx_frame_status_text((otfx_frame_status)42), "unknown frame status");
}

/* ---- text and record lines ---------------------------------------------------------------------- */

static void test_text_grows(void **state)
{
    (void)state;
    otfx_text text = {0};
    for (int i = 0; i < 1000; i++)
        otfx_text_appendf(&text, "%04d;", i);
    assert_false(text.failed);
    assert_int_equal(text.length, 5000);
    assert_int_equal(strlen(text.data), 5000);
    assert_memory_equal(text.data + 4995, "0999;", 5);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    otfx_text_appendf(&text, "<%s>", big); /* longer than appendf's stack buffer */
    assert_int_equal(text.length, 5000 + 601);
    assert_int_equal(text.data[text.length - 1], '>');
    otfx_text_free(&text);
    assert_null(text.data);
    assert_int_equal(text.length, 0);

    otfx_text failed = {.failed = true};
    otfx_text_append(&failed, "abc", 3);
    otfx_text_appendf(&failed, "%d", 5);
    assert_null(failed.data);
    assert_int_equal(failed.length, 0);
}

static void test_kv_round_trip(void **state)
{
    (void)state;
    otfx_text text = {0};
    const char *nasty = "a b=c%d\te\n\x01\x7f\xc3\xa9 end";
    otfx_kv_begin(&text, "place");
    otfx_kv_str(&text, "name", nasty);
    otfx_kv_str(&text, "empty", "");
    otfx_kv_u64(&text, "big", UINT64_MAX);
    otfx_kv_i64(&text, "neg", INT64_MIN);
    otfx_kv_f64(&text, "ratio", 0.1);
    otfx_kv_f64(&text, "third", 1.0 / 3.0);
    otfx_kv_f64(&text, "inf", -INFINITY);
    otfx_kv_f64(&text, "nan", NAN);
    otfx_kv_end(&text);
    assert_false(text.failed);
    assert_string_equal(text.data, "place name=a%20b%3Dc%25d%09e%0A%01%7F%C3%A9%20end empty= "
                                   "big=18446744073709551615 neg=-9223372036854775808 ratio=0.1 "
                                   "third=0.33333333333333331 inf=-inf nan=nan\n");

    size_t offset = 0, length;
    const char *line;
    assert_true(otfx_kv_next_line(text.data, text.length, &offset, &line, &length));
    assert_false(otfx_kv_next_line(text.data, text.length, &offset, &line, &length));

    otfx_kv_line kv;
    assert_true(otfx_kv_parse(text.data, text.length - 1, &kv));
    assert_string_equal(kv.type, "place");
    assert_int_equal(kv.count, 8);
    assert_string_equal(otfx_kv_get(&kv, "name"), nasty);
    assert_string_equal(otfx_kv_get(&kv, "empty"), "");
    assert_string_equal(otfx_kv_get(&kv, "big"), "18446744073709551615");
    assert_string_equal(otfx_kv_get(&kv, "neg"), "-9223372036854775808");
    assert_true(strtod(otfx_kv_get(&kv, "third"), NULL) == 1.0 / 3.0);
    assert_null(otfx_kv_get(&kv, "missing"));
    otfx_kv_line_free(&kv);
    otfx_kv_line_free(&kv); /* twice is harmless */
    otfx_text_free(&text);

    /* a type alone; blanks between fields tolerated; lower-case escapes accepted */
    assert_true(otfx_kv_parse("done", 4, &kv));
    assert_int_equal(kv.count, 0);
    otfx_kv_line_free(&kv);
    const char *spaced = "row  a=1   b=%c3%a9 ";
    assert_true(otfx_kv_parse(spaced, strlen(spaced), &kv));
    assert_int_equal(kv.count, 2);
    assert_string_equal(otfx_kv_get(&kv, "b"), "\xc3\xa9");
    otfx_kv_line_free(&kv);
}

static void test_kv_errors(void **state)
{
    (void)state;
    const char *bad[] = {
        "",                 /* empty */
        " a=1",             /* no type */
        "Place a=1",        /* upper case type */
        "pl.ace a=1",       /* bad type char */
        "place a",          /* field without '=' */
        "place =1",         /* empty key */
        "place A=1",        /* upper case key */
        "place a=%4",       /* short escape */
        "place a=%zz",      /* bad hex */
        "place a=%00",      /* NUL */
        "place a=b=c",      /* raw '=' in a value */
        "place a=\x01",     /* control byte */
        "place a=\xc3\xa9", /* raw non-ASCII */
        "place a=1\tb=2",   /* tab is not a separator */
        "a_type_name_that_is_far_too_long_for_the_field a=1",
        "place a_key_name_that_is_far_too_long_for_the_field=1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        otfx_kv_line kv;
        if (otfx_kv_parse(bad[i], strlen(bad[i]), &kv)) {
            fail_msg("accepted malformed line %zu: '%s'", i, bad[i]);
        }
        assert_null(kv.storage);
    }
    otfx_kv_line kv;
    assert_false(otfx_kv_parse(NULL, 0, &kv));
    /* too many fields */
    otfx_text text = {0};
    otfx_kv_begin(&text, "many");
    for (int i = 0; i < OTFX_KV_MAX_FIELDS; i++)
        otfx_kv_u64(&text, "k", (uint64_t)i);
    assert_true(otfx_kv_parse(text.data, text.length, &kv));
    assert_int_equal(kv.count, OTFX_KV_MAX_FIELDS);
    otfx_kv_line_free(&kv);
    otfx_kv_u64(&text, "k", 99);
    assert_false(otfx_kv_parse(text.data, text.length, &kv));
    otfx_text_free(&text);
    /* the length bounds the line: a NUL-free prefix parses */
    assert_true(otfx_kv_parse("ok a=1 garbage", 6, &kv));
    assert_int_equal(kv.count, 1);
    otfx_kv_line_free(&kv);
}

static void test_next_line(void **state)
{
    (void)state;
    const char payload[] = "a x=1\n\nb y=2\nc";
    size_t offset = 0, length;
    const char *line;
    const char *expected[] = {"a x=1", "", "b y=2", "c"};
    for (size_t i = 0; i < 4; i++) {
        assert_true(otfx_kv_next_line(payload, sizeof payload - 1, &offset, &line, &length));
        assert_int_equal(length, strlen(expected[i]));
        assert_memory_equal(line, expected[i], length);
    }
    assert_false(otfx_kv_next_line(payload, sizeof payload - 1, &offset, &line, &length));
    offset = 0;
    assert_false(otfx_kv_next_line(NULL, 0, &offset, &line, &length));
    assert_false(otfx_kv_next_line("", 0, &offset, &line, &length));
}

/* ---- rank sets ---------------------------------------------------------------------------------- */

static void test_rank_sets(void **state)
{
    (void)state;
    otfx_rank_set set;
    char text[256];
    assert_true(otfx_rank_set_parse("all", &set));
    assert_int_equal(set.count, 0);
    assert_true(otfx_rank_set_contains(&set, 12345));
    otfx_rank_set_format(&set, text, sizeof text);
    assert_string_equal(text, "all");

    assert_true(otfx_rank_set_parse("0-3,7,10-10", &set));
    assert_int_equal(set.count, 3);
    assert_true(otfx_rank_set_contains(&set, 0));
    assert_true(otfx_rank_set_contains(&set, 3));
    assert_false(otfx_rank_set_contains(&set, 4));
    assert_true(otfx_rank_set_contains(&set, 7));
    assert_true(otfx_rank_set_contains(&set, 10));
    assert_false(otfx_rank_set_contains(&set, 11));
    otfx_rank_set_format(&set, text, sizeof text);
    assert_string_equal(text, "0-3,7,10");
    /* a short buffer never ends inside a number */
    otfx_rank_set_format(&set, text, 6);
    assert_string_equal(text, "0-3,7");
    otfx_rank_set_format(&set, text, 5);
    assert_string_equal(text, "0-3");

    assert_true(otfx_rank_set_parse("4294967294", &set));
    assert_int_equal(set.ranges[0].first, 4294967294u);

    const char *bad[] = {"",    "x",          "1-",          "-1",    "3-1",   "1,,2", "1,",
                         "1 2", "4294967295", "99999999999", "1-2-3", "all,1", "+1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (otfx_rank_set_parse(bad[i], &set))
            fail_msg("accepted rank set '%s'", bad[i]);
    assert_false(otfx_rank_set_parse(NULL, &set));
    char many[512] = "";
    for (int i = 0; i < 32; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d", i ? "," : "", i * 2);
    assert_true(otfx_rank_set_parse(many, &set));
    assert_int_equal(set.count, 32);
    strcat(many, ",99");
    assert_false(otfx_rank_set_parse(many, &set));
}

/* ---- commands ----------------------------------------------------------------------------------- */

static otfx_command parse_ok(const char *line)
{
    otfx_command command;
    char error[256];
    if (!otfx_command_parse(line, &command, error, sizeof error))
        fail_msg("'%s' did not parse: %s", line, error);
    /* the canonical line parses to the same command */
    otfx_text text = {0};
    otfx_command_format(&command, &text);
    otfx_command again;
    if (!otfx_command_parse(text.data, &again, error, sizeof error))
        fail_msg("canonical '%s' of '%s' did not parse: %s", text.data, line, error);
    if (memcmp(&command, &again, sizeof command) != 0)
        fail_msg("'%s' → '%s' does not round-trip", line, text.data);
    otfx_text_free(&text);
    return command;
}

static void expect_canonical(const char *line, const char *canonical)
{
    otfx_command command = parse_ok(line);
    otfx_text text = {0};
    otfx_command_format(&command, &text);
    assert_string_equal(text.data, canonical);
    otfx_text_free(&text);
}

static void test_commands(void **state)
{
    (void)state;
    otfx_command c = parse_ok("status");
    assert_int_equal(c.kind, OTFX_CMD_STATUS);
    assert_int_equal(c.from, 0);
    assert_true(c.to == UINT64_MAX);
    assert_int_equal(parse_ok("  record   pause ").kind, OTFX_CMD_RECORD_PAUSE);
    assert_int_equal(parse_ok("record resume").kind, OTFX_CMD_RECORD_RESUME);
    c = parse_ok("record window 2s");
    assert_int_equal(c.kind, OTFX_CMD_RECORD_WINDOW);
    assert_true(c.duration_ns == 2000000000ull);
    assert_int_equal(parse_ok("app pause").kind, OTFX_CMD_APP_PAUSE);
    assert_int_equal(parse_ok("app resume\n").kind, OTFX_CMD_APP_RESUME);
    assert_int_equal(parse_ok("reset").kind, OTFX_CMD_RESET);
    const char *strategies[] = {"ring", "time", "type", "depth", "stop"};
    for (size_t i = 0; i < 5; i++) {
        char line[64];
        snprintf(line, sizeof line, "reduction %s", strategies[i]);
        c = parse_ok(line);
        assert_int_equal(c.kind, OTFX_CMD_REDUCTION);
        assert_string_equal(c.strategy, strategies[i]);
    }
    c = parse_ok("enable p2p,user");
    assert_int_equal(c.kind, OTFX_CMD_ENABLE);
    assert_int_equal(c.classes, OTFX_STEER_P2P | OTFX_STEER_USER);
    c = parse_ok("disable all");
    assert_int_equal(c.kind, OTFX_CMD_DISABLE);
    assert_int_equal(c.classes, OTFX_STEER_ALL);
    c = parse_ok("disable collectives,other-mpi,point-to-point,user-functions");
    assert_int_equal(c.classes, OTFX_STEER_ALL);
    c = parse_ok("disable mpi-other,collective");
    assert_int_equal(c.classes, OTFX_STEER_OTHER_MPI | OTFX_STEER_COLLECTIVE);

    c = parse_ok("snapshot run1 --from 1s --to 2.5s --ranks 0-3,7 --overwrite");
    assert_int_equal(c.kind, OTFX_CMD_SNAPSHOT);
    assert_string_equal(c.path, "run1");
    assert_true(c.from == 1000000000ull);
    assert_true(c.to == 2500000000ull);
    assert_int_equal(c.ranks.count, 2);
    assert_true(c.overwrite);
    c = parse_ok("snapshot my%20run%25/x=y");
    assert_string_equal(c.path, "my run%/x=y");
    assert_false(c.overwrite);

    c = parse_ok("profile --from=10ms --to 20ms --ranks all");
    assert_int_equal(c.kind, OTFX_CMD_PROFILE);
    assert_true(c.from == 10000000ull && c.to == 20000000ull);
    assert_int_equal(c.ranks.count, 0);
    c = parse_ok("timeline --bins 200 --rows 8");
    assert_int_equal(c.kind, OTFX_CMD_TIMELINE);
    assert_int_equal(c.bins, 200);
    assert_int_equal(c.rows, 8);
    c = parse_ok("messages --groups 4 --ranks 1");
    assert_int_equal(c.kind, OTFX_CMD_MESSAGES);
    assert_int_equal(c.groups, 4);
    c = parse_ok("events --limit 100 --from 1.000000001 --to 5");
    assert_int_equal(c.kind, OTFX_CMD_EVENTS);
    assert_int_equal(c.limit, 100);
    assert_true(c.from == 1000000001ull);
    c = parse_ok("load-module /tmp/libmod.so");
    assert_int_equal(c.kind, OTFX_CMD_LOAD_MODULE);
    assert_string_equal(c.path, "/tmp/libmod.so");
    c = parse_ok(
        "query critical_path-2 --bins 3 --rows 4 --groups 5 --limit 6 --from 1us --to 2us --ranks 5-9");
    assert_int_equal(c.kind, OTFX_CMD_QUERY);
    assert_string_equal(c.module, "critical_path-2");
    assert_int_equal(c.bins + c.rows + c.groups + c.limit, 18);
    assert_true(c.from == 1000 && c.to == 2000);

    c = parse_ok("critical-path --from 1s --to 2s --ranks 0-3 --zero serial%20setup --top 5 --limit 20");
    assert_int_equal(c.kind, OTFX_CMD_CRITICAL_PATH);
    assert_true(c.from == 1000000000ull && c.to == 2000000000ull);
    assert_int_equal(c.ranks.count, 1);
    assert_string_equal(c.zero, "serial setup");
    assert_int_equal(c.top, 5);
    assert_int_equal(c.limit, 20);
    c = parse_ok("critical-path");
    assert_int_equal(c.kind, OTFX_CMD_CRITICAL_PATH);
    assert_string_equal(c.zero, "");
    assert_int_equal(c.top, 0);
    c = parse_ok("wait-states --top=3 --limit 7 --ranks 1,3");
    assert_int_equal(c.kind, OTFX_CMD_WAIT_STATES);
    assert_int_equal(c.top, 3);
    assert_int_equal(c.limit, 7);
    assert_int_equal(c.ranks.count, 2);
    assert_false(c.no_flush);
    assert_true(otfx_command_flushes_first(&c));
    c = parse_ok("wait-states --follow 9223372036854775807 --no-flush");
    assert_true(c.follow == 9223372036854775807ull && c.no_flush);
    assert_false(otfx_command_flushes_first(&c));
    c = parse_ok("profile");
    assert_false(otfx_command_flushes_first(&c));
    assert_false(c.compensated);
    c = parse_ok("profile --compensated --from 1s");
    assert_true(c.compensated);
    c = parse_ok("timeline --compensated --bins 10");
    assert_true(c.compensated);
    c = parse_ok("snapshot run1-c --compensated --ranks 0-3");
    assert_true(c.compensated && c.kind == OTFX_CMD_SNAPSHOT);
    assert_string_equal(c.path, "run1-c");
    assert_int_equal(parse_ok("overhead measure").kind, OTFX_CMD_OVERHEAD_MEASURE);
    assert_false(otfx_command_flushes_first(&c));

    /* units and decimals */
    const struct {
        const char *text;
        uint64_t ns;
    } durations[] = {{"1", 1000000000ull},
                     {"1.5", 1500000000ull},
                     {"250ms", 250000000ull},
                     {"0.5ms", 500000ull},
                     {"10us", 10000ull},
                     {"1.5us", 1500ull},
                     {"100ns", 100ull},
                     {"0.25s", 250000000ull},
                     {"18446744073ns", 18446744073ull},
                     {"9223372036.854775807", 9223372036854775807ull}};
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "record window %s", durations[i].text);
        c = parse_ok(line);
        if (c.duration_ns != durations[i].ns)
            fail_msg("%s → %llu ns", durations[i].text, (unsigned long long)c.duration_ns);
    }

    expect_canonical("record window 1.5", "record window 1500000000ns");
    expect_canonical("disable user,p2p", "disable p2p,user");
    expect_canonical("enable point-to-point,collective,mpi-other,user", "enable all");
    expect_canonical("snapshot a%20b --overwrite --ranks 3", "snapshot a%20b --ranks 3 --overwrite");
    expect_canonical("profile --to 1s", "profile --to 1000000000ns");
    expect_canonical("query m", "query m");
    expect_canonical("critical-path --top 4 --zero MPI_Init --limit 9 --ranks 2 --to 1s",
                     "critical-path --to 1000000000ns --ranks 2 --limit 9 --zero MPI_Init --top 4");
    expect_canonical("critical-path --zero a%20b", "critical-path --zero a%20b");
    expect_canonical("wait-states --limit 3 --top 2 --from 0", "wait-states --from 0ns --limit 3 --top 2");
    expect_canonical("critical-path --no-flush --follow=42 --top 3",
                     "critical-path --top 3 --follow 42 --no-flush");
    expect_canonical("status", "status");

    /* --from 0 is a time like any other: kept by the canonical form, told apart from "not given" */
    c = parse_ok("timeline --from 0 --to 5s");
    assert_true(c.from_given && c.to_given);
    assert_int_equal(c.from, 0);
    c = parse_ok("timeline --to 5s");
    assert_false(c.from_given);
    assert_true(c.to_given);
    expect_canonical("timeline --from 0 --to 5s", "timeline --from 0ns --to 5000000000ns");
    expect_canonical("events --from 0", "events --from 0ns");
    expect_canonical("profile --to 18446744073709551615ns", "profile --to 18446744073709551615ns");
    c = parse_ok("events --from 18446744073");
    assert_true(c.from == 18446744073000000000ull);

    /* the documented limits, at their edges */
    assert_int_equal(parse_ok("timeline --bins 10000 --rows 4096").bins, 10000);
    assert_int_equal(parse_ok("events --limit 10000000").limit, 10000000);

    /* names and paths: any UTF-8 text (a blank as %20), never control characters */
    c = parse_ok("snapshot caf%C3%A9%20%E2%82%AC");
    assert_string_equal(c.path, "caf\xc3\xa9 \xe2\x82\xac");
}

static void expect_error(const char *line, const char *fragment)
{
    otfx_command command;
    char error[256] = "unchanged";
    if (otfx_command_parse(line, &command, error, sizeof error))
        fail_msg("'%s' parsed", line ? line : "(null)");
    if (!strstr(error, fragment))
        fail_msg("'%s': error '%s' does not mention '%s'", line ? line : "(null)", error, fragment);
    assert_int_equal(command.kind, 0); /* zeroed on failure */
}

static void test_command_errors(void **state)
{
    (void)state;
    expect_error(NULL, "empty");
    expect_error("", "empty");
    expect_error("   ", "empty");
    expect_error("messages --compensated", "compensated");
    expect_error("profile --compensated=1", "takes no value");
    expect_error("frobnicate", "unknown command 'frobnicate'");
    expect_error("status now", "unexpected argument 'now'");
    expect_error("status --from 1s", "status does not take --from");
    expect_error("record", "record needs pause, resume or window");
    expect_error("record stop", "record needs");
    expect_error("record pause now", "unexpected argument");
    expect_error("record window", "duration");
    expect_error("record window 0", "duration");
    expect_error("record window 2h", "duration");
    expect_error("record window -1s", "duration");
    expect_error("record window 1.s", "duration");
    expect_error("record window .5s", "duration");
    expect_error("record window 1.5ns", "duration");
    expect_error("record window 18446744074", "duration");  /* overflows u64 ns */
    expect_error("record window 18446744073s", "too long"); /* now + it would overflow */
    expect_error("record window 9223372036.854775808", "too long");
    expect_error("record window 99999999999999999999999ns", "duration");
    expect_error("record window 2s 3s", "unexpected argument");
    expect_error("app", "app needs pause or resume");
    expect_error("app stop", "app needs");
    expect_error("overhead", "overhead needs measure");
    expect_error("overhead stop", "overhead needs measure");
    expect_error("overhead measure --ranks 1", "ranks");
    expect_error("reset all", "unexpected argument");
    expect_error("reduction", "strategy");
    expect_error("reduction lossy", "strategy");
    expect_error("enable", "event classes");
    expect_error("enable p2p,,user", "event classes");
    expect_error("disable mpi", "event classes");
    expect_error("snapshot", "needs a path");
    expect_error("snapshot --overwrite", "needs a path");
    expect_error("snapshot x --overwrite --overwrite", "given twice");
    expect_error("snapshot x --overwrite=yes", "takes no value");
    expect_error("snapshot x --bins 4", "does not take --bins");
    expect_error("snapshot x extra", "unexpected argument 'extra'");
    expect_error("snapshot x --from", "needs a value");
    expect_error("snapshot x --from 2s --to 1s", "--from is after --to");
    expect_error("load-module", "needs a path");
    expect_error("load-module a.so --overwrite", "does not take --overwrite");
    expect_error("profile --ranks 3-1", "bad --ranks");
    expect_error("profile --ranks", "needs a value");
    expect_error("profile --frob 1", "does not take --frob");
    expect_error("profile --limit 3", "does not take --limit");
    expect_error("timeline --bins 0", "bad --bins");
    expect_error("critical-path --top 0", "bad --top");
    expect_error("critical-path --top 10001", "bad --top");
    expect_error("critical-path --zero", "needs a value");
    expect_error("critical-path --zero f --zero g", "given twice");
    expect_error("critical-path --bins 3", "does not take --bins");
    expect_error("critical-path --follow 0", "bad --follow");
    expect_error("critical-path --follow 9223372036854775808", "bad --follow");
    expect_error("critical-path --follow -3", "bad --follow");
    expect_error("critical-path --follow 12ab", "bad --follow");
    expect_error("critical-path --no-flush=1", "takes no value");
    expect_error("profile --follow 3", "does not take --follow");
    expect_error("timeline --no-flush", "does not take --no-flush");
    expect_error("wait-states --zero f", "wait-states does not take --zero");
    expect_error("wait-states --limit 0", "bad --limit");
    expect_error("profile --top 3", "profile does not take --top");
    expect_error("timeline --bins 10001", "from 1 to 10000");
    expect_error("timeline --rows 4097", "from 1 to 4096");
    expect_error("query m --bins 100000", "bad --bins");
    expect_error("timeline --rows x", "bad --rows");
    expect_error("timeline --groups 2", "does not take --groups");
    expect_error("messages --groups 4097", "bad --groups");
    expect_error("messages --bins 2", "does not take --bins");
    expect_error("events --limit 0", "bad --limit");
    expect_error("events --limit 10000001", "bad --limit");
    expect_error("events --to 1x", "bad --to");
    expect_error("query", "module name");
    expect_error("query Bad.Name", "module name");
    expect_error("query --bins 3", "module name");
    expect_error("snapshot a%2", "bad word");
    expect_error("snapshot a%00b", "bad word");
    expect_error("snapshot a\x01", "bad word");
    expect_error("snapshot a%0Ab", "not UTF-8 text or holds a control character");
    expect_error("snapshot a%09b", "control character");
    expect_error("snapshot a%7Fb", "control character");
    expect_error("snapshot a%C2%85b", "control character"); /* C1: NEL */
    expect_error("snapshot a%FFb", "not UTF-8");
    expect_error("snapshot a%C3", "not UTF-8");          /* cut short */
    expect_error("snapshot a%C0%AF", "not UTF-8");       /* overlong '/' */
    expect_error("snapshot a%ED%A0%80", "not UTF-8");    /* a surrogate */
    expect_error("snapshot a%F4%90%80%80", "not UTF-8"); /* beyond U+10FFFF */
    expect_error("load-module x%0A.so", "control character");

    char long_path[1200] = "snapshot ";
    memset(long_path + 9, 'p', 1100);
    long_path[1109] = '\0';
    expect_error(long_path, "path longer than");
    char many[512] = "status";
    for (int i = 0; i < 40; i++)
        strcat(many, " x");
    expect_error(many, "too many words");
    /* a NULL error buffer is allowed */
    otfx_command command;
    assert_false(otfx_command_parse("nope", &command, NULL, 0));
}

static void test_metrics_commands(void **state)
{
    (void)state;
    otfx_command c = parse_ok("metrics set task-clock,page-faults");
    assert_int_equal(c.kind, OTFX_CMD_METRICS_SET);
    assert_string_equal(c.metrics, "task-clock,page-faults");
    c = parse_ok("metrics add papi:PAPI_TOT_CYC");
    assert_int_equal(c.kind, OTFX_CMD_METRICS_ADD);
    c = parse_ok("metrics remove ru-maxrss");
    assert_int_equal(c.kind, OTFX_CMD_METRICS_REMOVE);
    assert_string_equal(c.metrics, "ru-maxrss");
    c = parse_ok("metrics set none");
    assert_int_equal(c.kind, OTFX_CMD_METRICS_SET);
    assert_string_equal(c.metrics, "");
    assert_int_equal(parse_ok("metrics list").kind, OTFX_CMD_METRICS_LIST);
    assert_int_equal(parse_ok("metrics available").kind, OTFX_CMD_METRICS_AVAILABLE);
    expect_canonical("metrics set none", "metrics set none");
    expect_canonical("metrics add cycles", "metrics add cycles");
    expect_error("metrics", "set LIST, add LIST, remove LIST, list or available");
    expect_error("metrics switch cycles", "set LIST");
    expect_error("metrics add", "comma list of metric names");
    expect_error("metrics add none", "comma list of metric names"); /* only set takes none */
    expect_error("metrics set cycles,,page-faults", "comma list");
    expect_error("metrics set cycles;ls", "comma list");
    expect_error("metrics set cycles,", "comma list");
    expect_error("metrics list --ranks 0", "does not take --ranks");
    expect_error("metrics set cycles extra", "unexpected argument 'extra'");
}

static void test_command_names(void **state)
{
    (void)state;
    for (int kind = OTFX_CMD_STATUS; kind < OTFX_CMD_COUNT; kind++) {
        const char *name = otfx_command_name((otfx_command_kind)kind);
        assert_non_null(name);
        assert_string_not_equal(name, "unknown");
        for (int other = OTFX_CMD_STATUS; other < kind; other++)
            assert_string_not_equal(name, otfx_command_name((otfx_command_kind)other));
    }
    assert_string_equal(otfx_command_name(OTFX_CMD_COUNT), "unknown");
    assert_string_equal(otfx_command_name((otfx_command_kind)0), "unknown");
    assert_string_equal(otfx_command_name(OTFX_CMD_RECORD_WINDOW), "record window");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_round_trip), cmocka_unit_test(test_frame_errors),
        cmocka_unit_test(test_text_grows),       cmocka_unit_test(test_kv_round_trip),
        cmocka_unit_test(test_kv_errors),        cmocka_unit_test(test_next_line),
        cmocka_unit_test(test_rank_sets),        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_command_errors),   cmocka_unit_test(test_command_names),
        cmocka_unit_test(test_metrics_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_tree_messages.c — the tree's wire format (tbon/src/tree/tree_messages.c): every kind survives an
 * encode/decode round trip; truncated, extended, corrupted and inconsistent messages are refused with
 * a reason, and random bytes never crash the decoder.
 *
 * With `--write-corpus DIR` it writes the fuzz target's seed messages (fuzz_tree_messages.c) instead.
 */
#include "tree_messages.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static otfx_command sample_command(otfx_command_kind kind)
{
    otfx_command command;
    memset(&command, 0, sizeof(command));
    command.kind = kind;
    command.from = 1000;
    command.from_given = true;
    command.to = UINT64_MAX;
    command.duration_ns = 2000000000u;
    command.ranks.count = 2;
    command.ranks.ranges[0].first = 0;
    command.ranks.ranges[0].last = 3;
    command.ranks.ranges[1].first = 7;
    command.ranks.ranges[1].last = 7;
    command.bins = 100;
    command.rows = 8;
    command.groups = 4;
    command.limit = 50;
    command.classes = OTFX_STEER_P2P | OTFX_STEER_USER;
    snprintf(command.strategy, sizeof(command.strategy), "time");
    snprintf(command.path, sizeof(command.path), "runs/snap one");
    snprintf(command.module, sizeof(command.module), "histogram");
    snprintf(command.zero, sizeof(command.zero), "serial_setup");
    snprintf(command.metrics, sizeof(command.metrics), "task-clock,page-faults");
    command.top = 12;
    command.follow = 9007199254740993u; /* above 2^53: must not pass through a double */
    command.overwrite = true;
    return command;
}

static void assert_commands_equal(const otfx_command *a, const otfx_command *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_true(a->from == b->from && a->to == b->to && a->duration_ns == b->duration_ns);
    assert_int_equal(a->ranks.count, b->ranks.count);
    for (uint32_t i = 0; i < a->ranks.count; i++) {
        assert_int_equal(a->ranks.ranges[i].first, b->ranks.ranges[i].first);
        assert_int_equal(a->ranks.ranges[i].last, b->ranks.ranges[i].last);
    }
    assert_int_equal(a->bins, b->bins);
    assert_int_equal(a->rows, b->rows);
    assert_int_equal(a->groups, b->groups);
    assert_int_equal(a->limit, b->limit);
    assert_int_equal(a->classes, b->classes);
    assert_string_equal(a->strategy, b->strategy);
    assert_string_equal(a->path, b->path);
    assert_string_equal(a->module, b->module);
    assert_string_equal(a->zero, b->zero);
    assert_string_equal(a->metrics, b->metrics);
    assert_int_equal(a->top, b->top);
    assert_int_equal(a->overwrite, b->overwrite);
    assert_int_equal(a->from_given, b->from_given);
    assert_int_equal(a->to_given, b->to_given);
}

static void test_command_round_trip(void **state)
{
    (void)state;
    const struct {
        enum tree_kind kind;
        otfx_command_kind command;
    } cases[] = {{TREE_QUERY, OTFX_CMD_PROFILE},          {TREE_QUERY, OTFX_CMD_QUERY},
                 {TREE_QUERY, OTFX_CMD_CRITICAL_PATH},    {TREE_QUERY, OTFX_CMD_WAIT_STATES},
                 {TREE_COMMAND, OTFX_CMD_RECORD_WINDOW},  {TREE_COMMAND, OTFX_CMD_SNAPSHOT},
                 {TREE_LOAD_MODULE, OTFX_CMD_LOAD_MODULE}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const otfx_command command = sample_command(cases[i].command);
        struct tree_buffer buffer;
        assert_true(tree_encode_command(&buffer, cases[i].kind, 42 + (uint32_t)i, 123456789, &command));
        struct tree_message message;
        assert_null(tree_decode(buffer.data, buffer.length, &message));
        assert_int_equal(message.kind, cases[i].kind);
        assert_int_equal(message.request, 42 + i);
        assert_true(message.argument == 123456789);
        assert_commands_equal(&message.command, &command);
        tree_buffer_free(&buffer);
    }
}

static void test_answers_round_trip(void **state)
{
    (void)state;
    const unsigned char blob[] = {1, 2, 3, 0, 255};
    struct tree_buffer buffer;
    struct tree_message message;
    assert_true(tree_encode_result(&buffer, 9, 3, 1, "place 2: slow", 13, blob, sizeof(blob)));
    assert_null(tree_decode(buffer.data, buffer.length, &message));
    assert_int_equal(message.kind, TREE_RESULT);
    assert_int_equal(message.request, 9);
    assert_int_equal(message.count_ok, 3);
    assert_int_equal(message.count_failed, 1);
    assert_int_equal(message.error_length, 13);
    assert_memory_equal(message.error, "place 2: slow", 13);
    assert_int_equal(message.data_length, sizeof(blob));
    assert_memory_equal(message.data, blob, sizeof(blob));
    tree_buffer_free(&buffer);

    const char lines[] = "place index=0 command=reset ok=1\n";
    assert_true(tree_encode_ack(&buffer, 10, 1, 0, lines, strlen(lines)));
    assert_null(tree_decode(buffer.data, buffer.length, &message));
    assert_int_equal(message.kind, TREE_ACK);
    assert_int_equal(message.count_ok, 1);
    assert_int_equal(message.data_length, strlen(lines));
    assert_memory_equal(message.data, lines, strlen(lines));
    tree_buffer_free(&buffer);

    assert_true(tree_encode_result(&buffer, 11, 0, 2, NULL, 0, NULL, 0)); /* empty result, no error text */
    assert_null(tree_decode(buffer.data, buffer.length, &message));
    assert_int_equal(message.data_length, 0);
    tree_buffer_free(&buffer);

    const char what[] = "rank 3 died of SIGSEGV (Segmentation fault) at address 0x0 in step";
    assert_true(tree_encode_failed(&buffer, 3, 11, what, strlen(what)));
    assert_null(tree_decode(buffer.data, buffer.length, &message));
    assert_int_equal(message.kind, TREE_FAILED);
    assert_int_equal(message.request, 0);
    assert_int_equal(message.failed_rank, 3);
    assert_int_equal(message.exit_code, 11);
    assert_int_equal(message.data_length, strlen(what));
    assert_memory_equal(message.data, what, strlen(what));
    buffer.data[8] = 1; /* a request id: FAILED carries none */
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message),
                        "a failure report with a request id");
    tree_buffer_free(&buffer);

    const char seen[] = "MPI_Allreduce took 312.5 ms (more than 200 ms) on rank 1";
    assert_true(tree_encode_trigger(&buffer, 4, 123456789012u, 1, 2, seen, strlen(seen)));
    assert_null(tree_decode(buffer.data, buffer.length, &message));
    assert_int_equal(message.kind, TREE_TRIGGER);
    assert_int_equal(message.trigger_id, 4);
    assert_int_equal(message.trigger_time, 123456789012u);
    assert_int_equal(message.failed_rank, 1);
    assert_int_equal(message.trigger_place, 2);
    assert_int_equal(message.data_length, strlen(seen));
    assert_memory_equal(message.data, seen, strlen(seen));
    buffer.data[8] = 1; /* a request id: TRIGGER carries none */
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message),
                        "a trigger report with a request id");
    tree_buffer_free(&buffer);

    assert_true(tree_encode_unseen(&buffer, 5, 17));
    assert_null(tree_decode(buffer.data, buffer.length, &message));
    assert_int_equal(message.kind, TREE_UNSEEN);
    assert_int_equal(message.trigger_id, 5);
    assert_int_equal(message.trigger_time, 17); /* the count */
    buffer.data[8] = 1;                         /* a request id: UNSEEN carries none */
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message),
                        "an unseen report with a request id");
    tree_buffer_free(&buffer);

    for (enum tree_kind kind = TREE_DONE; kind <= TREE_SHUTDOWN; kind++) {
        assert_true(tree_encode_empty(&buffer, kind, 0));
        assert_int_equal(buffer.length, TREE_HEADER_BYTES);
        assert_null(tree_decode(buffer.data, buffer.length, &message));
        assert_int_equal(message.kind, kind);
        tree_buffer_free(&buffer);
    }
}

/* Every proper prefix and every one-byte extension of valid messages is refused. */
static void test_truncated_and_extended(void **state)
{
    (void)state;
    const otfx_command command = sample_command(OTFX_CMD_TIMELINE);
    struct tree_buffer messages[3];
    assert_true(tree_encode_command(&messages[0], TREE_QUERY, 1, 0, &command));
    assert_true(tree_encode_result(&messages[1], 1, 1, 0, "x", 1, "abc", 3));
    assert_true(tree_encode_ack(&messages[2], 1, 1, 0, "line\n", 5));
    for (int m = 0; m < 3; m++) {
        struct tree_message message;
        for (size_t length = 0; length < messages[m].length; length++)
            assert_non_null(tree_decode(messages[m].data, length, &message));
        unsigned char *longer = malloc(messages[m].length + 1);
        assert_non_null(longer);
        memcpy(longer, messages[m].data, messages[m].length);
        longer[messages[m].length] = 0;
        assert_non_null(tree_decode(longer, messages[m].length + 1, &message));
        /* the same extra byte, announced in the header: bytes left over after the payload */
        const uint32_t payload = (uint32_t)(messages[m].length + 1 - TREE_HEADER_BYTES);
        for (int i = 0; i < 4; i++)
            longer[12 + i] = (unsigned char)(payload >> (8 * i));
        assert_string_equal(tree_decode(longer, messages[m].length + 1, &message),
                            "bytes left over after the payload");
        free(longer);
        tree_buffer_free(&messages[m]);
    }
    struct tree_message message;
    assert_non_null(tree_decode(NULL, 0, &message));
}

static void set_u32(unsigned char *at, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        at[i] = (unsigned char)(value >> (8 * i));
}

static void test_bad_headers(void **state)
{
    (void)state;
    struct tree_buffer buffer;
    struct tree_message message;
    assert_true(tree_encode_empty(&buffer, TREE_DONE, 0));
    buffer.data[0] ^= 1;
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message), "wrong magic number");
    buffer.data[0] ^= 1;
    buffer.data[4] = TREE_VERSION + 1;
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message), "other tree message version");
    buffer.data[4] = TREE_VERSION;
    for (unsigned kind = 0; kind < 300; kind += (kind < 10 ? 1 : 37)) {
        buffer.data[6] = (unsigned char)kind;
        buffer.data[7] = (unsigned char)(kind >> 8);
        const char *problem = tree_decode(buffer.data, buffer.length, &message);
        if (kind == TREE_DONE || kind == TREE_SHUTDOWN)
            assert_null(problem);
        else
            assert_non_null(problem); /* unknown, or a kind whose payload is missing */
    }
    buffer.data[6] = TREE_DONE;
    buffer.data[7] = 0;
    set_u32(buffer.data + 12, 5);
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message),
                        "payload length does not match the message size");
    tree_buffer_free(&buffer);
}

/* Encodes `command` as `kind` and returns the decoder's verdict (static text or NULL). */
static const char *verdict(enum tree_kind kind, const otfx_command *command)
{
    struct tree_buffer buffer;
    struct tree_message message;
    assert_true(tree_encode_command(&buffer, kind, 5, 0, command));
    const char *problem = tree_decode(buffer.data, buffer.length, &message);
    tree_buffer_free(&buffer);
    return problem;
}

static void test_inconsistent_commands(void **state)
{
    (void)state;
    otfx_command command = sample_command(OTFX_CMD_RESET);
    assert_non_null(verdict(TREE_QUERY, &command)); /* a command sent as a query */
    command.kind = OTFX_CMD_STATUS;
    assert_non_null(verdict(TREE_COMMAND, &command)); /* a query sent as a command */
    assert_non_null(verdict(TREE_LOAD_MODULE, &command));
    command.kind = OTFX_CMD_LOAD_MODULE;
    assert_non_null(verdict(TREE_COMMAND, &command));
    assert_null(verdict(TREE_LOAD_MODULE, &command));
    command.kind = (otfx_command_kind)0;
    assert_string_equal(verdict(TREE_COMMAND, &command), "unknown command kind");
    command.kind = OTFX_CMD_COUNT;
    assert_string_equal(verdict(TREE_COMMAND, &command), "unknown command kind");
    command.kind = OTFX_CMD_PROFILE;
    command.ranks.ranges[1].first = 9; /* 9-7 */
    assert_string_equal(verdict(TREE_QUERY, &command), "a rank range ends before it starts");

    /* fields the encoder cannot produce, patched into the bytes */
    command = sample_command(OTFX_CMD_PROFILE);
    struct tree_buffer buffer;
    struct tree_message message;
    assert_true(tree_encode_command(&buffer, TREE_QUERY, 5, 0, &command));
    const size_t ranges_at = TREE_HEADER_BYTES + 8 + 4 + 24;
    set_u32(buffer.data + ranges_at, 33);
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message), "more than 32 rank ranges");
    set_u32(buffer.data + ranges_at, 2);
    const size_t overwrite_at = ranges_at + 4 + 2 * 8 + 5 * 4;
    assert_int_equal(buffer.data[overwrite_at], COMMAND_OVERWRITE | COMMAND_FROM_GIVEN);
    buffer.data[overwrite_at] = 32;
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message), "unknown command flags");
    buffer.data[overwrite_at] = COMMAND_OVERWRITE | COMMAND_FROM_GIVEN;
    /* the strategy "time": a NUL inside, then a length running past the end */
    buffer.data[overwrite_at + 1 + 4 + 1] = '\0';
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message),
                        "a string field too long or holding a NUL");
    buffer.data[overwrite_at + 1 + 4 + 1] = 'i';
    set_u32(buffer.data + overwrite_at + 1, 0xFFFFFFF0u);
    assert_string_equal(tree_decode(buffer.data, buffer.length, &message), "command cut short");
    tree_buffer_free(&buffer);
}

/* A string longer than its field: the module name is limited to 63 bytes. */
static void test_string_too_long(void **state)
{
    (void)state;
    struct tree_buffer buffer;
    struct tree_message message;
    otfx_command command = sample_command(OTFX_CMD_QUERY);
    memset(command.module, 'm', sizeof(command.module) - 1);
    command.module[sizeof(command.module) - 1] = '\0';
    assert_true(tree_encode_command(&buffer, TREE_QUERY, 5, 0, &command));
    assert_null(tree_decode(buffer.data, buffer.length, &message)); /* 63 bytes fit */
    /* one more byte in the module name: rebuild the message by hand (the encoder cannot write it);
     * after the module come u32 top, the zero string, u64 follow and u32 group tolerance */
    const size_t tail = 4 + 4 + strlen(command.zero) + 8 + 4;
    const size_t module_end = buffer.length - tail;
    const size_t module_at = module_end - (sizeof(command.module) - 1) - 4;
    unsigned char *longer = malloc(buffer.length + 1);
    assert_non_null(longer);
    memcpy(longer, buffer.data, module_end);
    longer[module_end] = 'm';
    memcpy(longer + module_end + 1, buffer.data + module_end, tail);
    set_u32(longer + module_at, (uint32_t)sizeof(command.module));
    set_u32(longer + 12, (uint32_t)(buffer.length + 1 - TREE_HEADER_BYTES));
    assert_string_equal(tree_decode(longer, buffer.length + 1, &message),
                        "a string field too long or holding a NUL");
    free(longer);
    tree_buffer_free(&buffer);
}

/* Random bytes and random corruptions of valid messages: refused or accepted, never a crash (run
 * under the sanitizer build this also checks every read stays in bounds). */
static void test_random_bytes(void **state)
{
    (void)state;
    uint64_t seed = 0x9E3779B97F4A7C15u;
    unsigned char bytes[512];
    const otfx_command command = sample_command(OTFX_CMD_EVENTS);
    struct tree_buffer valid;
    assert_true(tree_encode_command(&valid, TREE_QUERY, 3, 0, &command));
    size_t accepted = 0;
    for (int round = 0; round < 20000; round++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t length = (size_t)(seed >> 33) % sizeof(bytes);
        if (round % 2 && valid.length <= sizeof(bytes)) {
            memcpy(bytes, valid.data, valid.length);
            length = valid.length;
            bytes[(seed >> 13) % length] ^= (unsigned char)(1u << ((seed >> 7) % 8));
        } else {
            for (size_t i = 0; i < length; i++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                bytes[i] = (unsigned char)(seed >> 56);
            }
            if (length >= 4)
                set_u32(bytes, TREE_MAGIC); /* get past the magic number now and then */
        }
        struct tree_message message;
        accepted += tree_decode(bytes, length, &message) == NULL;
    }
    tree_buffer_free(&valid);
    print_message("accepted %zu of 20000 random or corrupted messages\n", accepted);
}

/* One seed message of every kind for fuzz.tree_messages. */
static int write_corpus(const char *dir)
{
    const otfx_command query = sample_command(OTFX_CMD_TIMELINE), command = sample_command(OTFX_CMD_SNAPSHOT),
                       load = sample_command(OTFX_CMD_LOAD_MODULE);
    struct tree_buffer seeds[8];
    const char *names[8] = {"query", "command", "load_module", "result",
                            "ack",   "done",    "shutdown",    "trigger"};
    bool ok = tree_encode_command(&seeds[0], TREE_QUERY, 7, 0, &query) &&
              tree_encode_command(&seeds[1], TREE_COMMAND, 8, 99, &command) &&
              tree_encode_command(&seeds[2], TREE_LOAD_MODULE, 9, 0, &load) &&
              tree_encode_result(&seeds[3], 7, 2, 1, "place 3: busy", 13, "\1\2\3\4", 4) &&
              tree_encode_ack(&seeds[4], 8, 2, 0, "place index=0 ok=1\n", 19) &&
              tree_encode_empty(&seeds[5], TREE_DONE, 0) && tree_encode_empty(&seeds[6], TREE_SHUTDOWN, 0) &&
              tree_encode_trigger(&seeds[7], 1, 5000000000u, 3, 0, "marker done raised by rank 3", 28);
    for (int i = 0; ok && i < 8; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.msg", dir, names[i]);
        FILE *file = fopen(path, "wb");
        ok = file && fwrite(seeds[i].data, 1, seeds[i].length, file) == seeds[i].length;
        if (file)
            ok = fclose(file) == 0 && ok;
        tree_buffer_free(&seeds[i]);
    }
    fprintf(stderr, "%s\n", ok ? "corpus written" : "could not write the corpus");
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
        return write_corpus(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_command_round_trip),     cmocka_unit_test(test_answers_round_trip),
        cmocka_unit_test(test_truncated_and_extended), cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_inconsistent_commands),  cmocka_unit_test(test_string_too_long),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

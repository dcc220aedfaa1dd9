/* test_support.c — the shared helpers: otfx/support/growth.h, hash.h and quiet_abort.h. */
#define _POSIX_C_SOURCE 200809L /* quiet_abort.h; fork, pipe, waitpid */
#include <otfx/support/growth.h>
#include <otfx/support/hash.h>
#include <otfx/support/quiet_abort.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

/* Capacities double from `first`, the items keep their values, and room already there allocates nothing. */
static void test_reserve_doubles(void **state)
{
    (void)state;
    uint32_t *items = NULL;
    size_t capacity = 0;
    assert_true(otfx_reserve((void **)&items, &capacity, 1, sizeof *items, 4));
    assert_int_equal(capacity, 4);
    for (uint32_t i = 0; i < 4; i++)
        items[i] = i;
    assert_true(otfx_reserve((void **)&items, &capacity, 5, sizeof *items, 4));
    assert_int_equal(capacity, 8);
    assert_true(otfx_reserve((void **)&items, &capacity, 100, sizeof *items, 4));
    assert_int_equal(capacity, 128);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(items[i], i);
    uint32_t *before = items;
    assert_true(otfx_reserve((void **)&items, &capacity, 128, sizeof *items, 4));
    assert_ptr_equal(items, before);
    assert_int_equal(capacity, 128);
    free(items);
}

/* A size that does not fit size_t is refused before any allocation and changes nothing. */
static void test_reserve_refuses_overflow(void **state)
{
    (void)state;
    unsigned char *items = NULL;
    size_t capacity = 0;
    assert_false(otfx_reserve((void **)&items, &capacity, 8, SIZE_MAX / 4, 1));
    assert_null(items);
    assert_int_equal(capacity, 0);
    assert_true(otfx_reserve((void **)&items, &capacity, 3, 1, 2));
    assert_int_equal(capacity, 4);
    unsigned char *before = items;
    assert_false(otfx_reserve((void **)&items, &capacity, 5, SIZE_MAX / 3, 1)); /* 8 items: too many bytes */
    assert_ptr_equal(items, before);
    assert_int_equal(capacity, 4);
    free(items);
}

/* A 32-bit capacity never passes UINT32_MAX: more is refused without touching the array. */
static void test_reserve_u32_limit(void **state)
{
    (void)state;
    uint64_t *items = NULL;
    uint32_t capacity = 0;
    assert_true(otfx_reserve_u32((void **)&items, &capacity, 9, sizeof *items, 8));
    assert_int_equal(capacity, 16);
    items[15] = 15;
    assert_false(otfx_reserve_u32((void **)&items, &capacity, (size_t)UINT32_MAX + 1, sizeof *items, 8));
    assert_int_equal(capacity, 16);
    assert_int_equal(items[15], 15);
    free(items);
}

/* With a limit the last doubling stops at it; past it, nothing changes. */
static void test_grow_to_stops_at_limit(void **state)
{
    (void)state;
    int *items = NULL;
    size_t capacity = 0;
    assert_true(otfx_grow_to((void **)&items, capacity, 65, sizeof *items, 64, 100, &capacity));
    assert_int_equal(capacity, 100);
    items[99] = 99;
    assert_false(otfx_grow_to((void **)&items, capacity, 101, sizeof *items, 64, 100, &capacity));
    assert_int_equal(capacity, 100);
    assert_int_equal(items[99], 99);
    free(items);
    items = NULL;
    capacity = 0;
    assert_true(otfx_grow_to((void **)&items, capacity, 1, sizeof *items, 256, 100, &capacity));
    assert_int_equal(capacity, 100); /* a first capacity above the limit is cut to it */
    free(items);
}

typedef struct keyed {
    uint64_t key;
    uint32_t value;
} keyed;

static bool keyed_is(const void *items, size_t item, const void *key)
{
    return ((const keyed *)items)[item].key == *(const uint64_t *)key;
}

static uint64_t keyed_hash(const void *items, size_t item)
{
    return otfx_hash_mix(((const keyed *)items)[item].key);
}

/* Keys that differ only in their high bits (the ones slot indexes ignore unless mixed). */
static uint64_t test_key(uint32_t i)
{
    return (uint64_t)i << 40 | 7;
}

static size_t find(const otfx_hash_index *index, const keyed *items, uint64_t key)
{
    return otfx_hash_find(index, otfx_hash_mix(key), keyed_is, items, &key);
}

/* Many keys: each found at its position, absent ones not, the table at most half full after each grow. */
static void test_hash_many_keys(void **state)
{
    (void)state;
    enum { KEYS = 100000 };
    keyed *items = NULL;
    size_t capacity = 0, count = 0;
    otfx_hash_index index = {0};
    assert_int_equal(find(&index, items, test_key(0)), OTFX_HASH_NONE);
    for (uint32_t i = 0; i < KEYS; i++) {
        const uint64_t key = test_key(i);
        assert_int_equal(find(&index, items, key), OTFX_HASH_NONE);
        assert_true(otfx_reserve((void **)&items, &capacity, count + 1, sizeof *items, 64));
        assert_true(otfx_hash_insert(&index, otfx_hash_mix(key), count, keyed_hash, items));
        items[count++] = (keyed){key, i};
        assert_true(index.count * 2 <= index.slot_count);
        assert_int_equal(index.slot_count & (index.slot_count - 1), 0);
    }
    assert_int_equal(index.count, KEYS);
    for (uint32_t i = 0; i < KEYS; i++) {
        const size_t at = find(&index, items, test_key(i));
        assert_int_not_equal(at, OTFX_HASH_NONE);
        assert_int_equal(items[at].value, i);
        assert_int_equal(find(&index, items, test_key(i) + 1), OTFX_HASH_NONE);
    }
    /* An explicit rehash keeps every item; a table too small for them is refused and changes nothing. */
    const size_t slots = index.slot_count;
    assert_false(otfx_hash_rehash(&index, slots / 2, keyed_hash, items));
    assert_false(otfx_hash_rehash(&index, slots * 4 - 1, keyed_hash, items));
    assert_int_equal(index.slot_count, slots);
    assert_true(otfx_hash_rehash(&index, slots * 4, keyed_hash, items));
    assert_int_equal(index.slot_count, slots * 4);
    for (uint32_t i = 0; i < KEYS; i += 97)
        assert_int_equal(items[find(&index, items, test_key(i))].value, i);
    otfx_hash_free(&index);
    assert_null(index.slots);
    assert_int_equal(find(&index, items, test_key(1)), OTFX_HASH_NONE);
    free(items);
}

/* The mixing spreads keys that differ only in high bits over the low bits that pick a slot. */
static void test_hash_mix_spreads(void **state)
{
    (void)state;
    enum { SLOTS = 1024 };
    static unsigned char hit[SLOTS];
    size_t distinct = 0;
    for (uint32_t i = 0; i < SLOTS; i++) {
        const size_t slot = (size_t)otfx_hash_mix(test_key(i)) & (SLOTS - 1);
        distinct += !hit[slot];
        hit[slot] = 1;
    }
    assert_true(distinct > SLOTS / 2); /* 1024 random picks of 1024 slots give about 647 */
    assert_int_not_equal(otfx_hash_mix(1), otfx_hash_mix(2));
}

/* What was printed before reaches the reader, buffered or not; nothing printed after does. */
static void test_quiet_stderr_keeps_what_came_before(void **state)
{
    (void)state;
    int out[2];
    assert_int_equal(pipe(out), 0);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(out[0]);
        dup2(out[1], STDOUT_FILENO);
        dup2(out[1], STDERR_FILENO);
        close(out[1]);
        setvbuf(stdout, NULL, _IOFBF, 4096); /* still in the buffer when silenced */
        printf("out-before\n");
        fprintf(stderr, "err-before\n");
        otfx_quiet_stderr_before_abort();
        fprintf(stderr, "err-after\n");
        fflush(stderr);
        _exit(0);
    }
    close(out[1]);
    char text[256] = {0};
    size_t used = 0;
    ssize_t got;
    while (used < sizeof text - 1 && (got = read(out[0], text + used, sizeof text - 1 - used)) > 0)
        used += (size_t)got;
    close(out[0]);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_non_null(strstr(text, "out-before\n"));
    assert_non_null(strstr(text, "err-before\n"));
    assert_null(strstr(text, "err-after"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_doubles),
        cmocka_unit_test(test_reserve_refuses_overflow),
        cmocka_unit_test(test_reserve_u32_limit),
        cmocka_unit_test(test_grow_to_stops_at_limit),
        cmocka_unit_test(test_hash_many_keys),
        cmocka_unit_test(test_hash_mix_spreads),
        cmocka_unit_test(test_quiet_stderr_keeps_what_came_before),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

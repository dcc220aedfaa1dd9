/* test_layout.c — the tool tree's shape (tbon/include/otfx/tbon.h). */
#include <otfx/tbon.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* Every place but the root has exactly one parent that lists it as a child; every application rank
 * has exactly one event place; leaves below the root = event places. */
static void check_consistent(const otfx_tbon_layout *layout)
{
    uint32_t parent_of_count[4096] = {0};
    for (uint32_t place = 0; place < layout->places; place++) {
        uint32_t children[4096];
        const uint32_t count = otfx_tbon_children(layout, place, children, 4096);
        if (otfx_tbon_is_event_place(layout, place))
            assert_int_equal(count, 0);
        else
            assert_true(count >= 1);
        for (uint32_t c = 0; c < count; c++) {
            assert_int_equal(otfx_tbon_parent(layout, children[c]), place);
            parent_of_count[children[c]]++;
        }
    }
    for (uint32_t place = 0; place < layout->places; place++)
        assert_int_equal(parent_of_count[place], place == otfx_tbon_root(layout) ? 0 : 1);
    assert_int_equal(otfx_tbon_parent(layout, otfx_tbon_root(layout)), OTFX_TBON_NO_PARENT);
    assert_int_equal(otfx_tbon_leaves_below(layout, otfx_tbon_root(layout)), layout->event_places);
    uint32_t next = 0;
    for (uint32_t place = 0; place < layout->event_places; place++) {
        uint32_t first, count;
        otfx_tbon_served(layout, place, &first, &count);
        assert_int_equal(first, next);
        assert_true(count >= 1);
        for (uint32_t r = first; r < first + count; r++)
            assert_int_equal(otfx_tbon_place_of_rank(layout, r), place);
        next = first + count;
    }
    assert_int_equal(next, layout->app_ranks);
}

static void test_single_place_is_leaf_and_root(void **state)
{
    (void)state;
    otfx_tbon_layout layout;
    char error[256];
    assert_true(otfx_tbon_layout_init(&layout, 8, 1, 16, error, sizeof(error)));
    assert_int_equal(layout.event_places, 1);
    assert_int_equal(otfx_tbon_root(&layout), 0);
    assert_true(otfx_tbon_is_event_place(&layout, 0));
    assert_int_equal(otfx_tbon_role(&layout, 0), OTFX_PLACE_ROOT_LEAF);
    assert_true(otfx_role_serves_ranks(OTFX_PLACE_ROOT_LEAF));
    assert_true(otfx_role_is_root(OTFX_PLACE_ROOT_LEAF));
    assert_false(otfx_role_has_parent(OTFX_PLACE_ROOT_LEAF));
    check_consistent(&layout);
}

/* A place's role follows from the layout; without one a place is standalone (serves its ranks, answers
 * itself, has no parent and is no root: it serves no clients). */
static void test_roles(void **state)
{
    (void)state;
    otfx_tbon_layout layout;
    char error[256];
    assert_true(otfx_tbon_layout_init(&layout, 64, 6, 4, error, sizeof(error)));
    for (uint32_t p = 0; p < 5; p++)
        assert_int_equal(otfx_tbon_role(&layout, p), OTFX_PLACE_LEAF);
    assert_int_equal(otfx_tbon_role(&layout, 5), OTFX_PLACE_ROOT);
    assert_true(otfx_tbon_layout_init(&layout, 64, 7, 2, error, sizeof(error)));
    uint32_t inner = 0;
    for (uint32_t p = 0; p < layout.places; p++) {
        const otfx_place_role role = otfx_tbon_role(&layout, p);
        assert_int_equal(otfx_role_serves_ranks(role), otfx_tbon_is_event_place(&layout, p));
        assert_int_equal(otfx_role_is_root(role), p == otfx_tbon_root(&layout));
        assert_int_equal(otfx_role_has_parent(role), p != otfx_tbon_root(&layout));
        inner += role == OTFX_PLACE_INNER;
    }
    assert_true(inner > 0);
    assert_int_equal(otfx_tbon_role(NULL, 0), OTFX_PLACE_STANDALONE);
    assert_true(otfx_role_serves_ranks(OTFX_PLACE_STANDALONE));
    assert_false(otfx_role_is_root(OTFX_PLACE_STANDALONE));
    assert_false(otfx_role_has_parent(OTFX_PLACE_STANDALONE));
}

static void test_two_and_three_places(void **state)
{
    (void)state;
    otfx_tbon_layout layout;
    char error[256];
    assert_true(otfx_tbon_layout_init(&layout, 8, 2, 16, error, sizeof(error)));
    assert_int_equal(layout.event_places, 1); /* one leaf under an analysis root */
    check_consistent(&layout);
    assert_true(otfx_tbon_layout_init(&layout, 8, 3, 16, error, sizeof(error)));
    assert_int_equal(layout.event_places, 2);
    uint32_t first, count;
    otfx_tbon_served(&layout, 1, &first, &count);
    assert_int_equal(first, 4);
    assert_int_equal(count, 4);
    check_consistent(&layout);
}

static void test_documented_example(void **state)
{
    (void)state;
    otfx_tbon_layout layout;
    char error[256];
    assert_true(otfx_tbon_layout_init(&layout, 64, 6, 4, error, sizeof(error)));
    assert_int_equal(layout.event_places, 5);
    uint32_t children[16];
    assert_int_equal(otfx_tbon_children(&layout, 5, children, 16), 5);
    uint32_t first, count;
    otfx_tbon_served(&layout, 1, &first, &count);
    assert_int_equal(first, 12);
    assert_int_equal(count, 13);
    check_consistent(&layout);
}

static void test_many_shapes_are_consistent(void **state)
{
    (void)state;
    char error[256];
    for (uint32_t fanin = 2; fanin <= 17; fanin += 5)
        for (uint32_t places = 1; places <= 300; places += 7) {
            otfx_tbon_layout layout;
            if (!otfx_tbon_layout_init(&layout, 1000, places, fanin, error, sizeof(error)))
                fail_msg("places=%u fanin=%u: %s", places, fanin, error);
            check_consistent(&layout);
            uint32_t children[4096];
            /* Inner nodes above the first level never exceed the fan-in. */
            for (uint32_t place = layout.event_places; place < layout.places; place++)
                if (place >= layout.level_start[1] + layout.level_size[1])
                    assert_true(otfx_tbon_children(&layout, place, children, 4096) <= fanin);
        }
}

static void test_refuses_impossible_shapes(void **state)
{
    (void)state;
    otfx_tbon_layout layout;
    char error[256] = "";
    assert_false(otfx_tbon_layout_init(&layout, 8, 0, 16, error, sizeof(error)));
    assert_false(otfx_tbon_layout_init(&layout, 8, 4, 1, error, sizeof(error)));
    assert_non_null(strstr(error, "fan-in"));
    assert_false(otfx_tbon_layout_init(&layout, 1, 3, 16, error, sizeof(error)));
    assert_non_null(strstr(error, "fewer places"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_place_is_leaf_and_root),
        cmocka_unit_test(test_two_and_three_places),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_documented_example),
        cmocka_unit_test(test_many_shapes_are_consistent),
        cmocka_unit_test(test_refuses_impossible_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

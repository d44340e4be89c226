/* The result table: every code of PAMI_FOREACH_RESULT has its own text. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pami.h"

_Static_assert(PAMI_SUCCESS == 0, "PAMI_SUCCESS must be 0");

typedef struct {
    const char   *name;
    pami_result_t value;
    const char   *text;
} result_row_t;

static const result_row_t rows[] = {
#define ROW_(name, value, text) {#name, name, text},
    PAMI_FOREACH_RESULT(ROW_)
#undef ROW_
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static void test_success_is_zero(void **state)
{
    (void)state;
    assert_int_equal(PAMI_SUCCESS, 0);
    assert_string_equal(rows[0].name, "PAMI_SUCCESS");
}

static void test_every_code_has_its_text(void **state)
{
    (void)state;
    for (size_t i = 0; i < NROWS; i++) {
        const char *text = pami_error_text(rows[i].value);
        assert_non_null(text);
        assert_true(strlen(text) > 0);
        /* The text comes from the list, not from somewhere else. */
        assert_string_equal(text, rows[i].text);
        assert_string_not_equal(text, "unknown result");
        assert_true((int)rows[i].value >= 0);
        assert_true(rows[i].value < PAMI_RESULT_LAST);
    }
}

static void test_codes_and_texts_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < NROWS; i++) {
        for (size_t j = i + 1; j < NROWS; j++) {
            assert_int_not_equal(rows[i].value, rows[j].value);
            assert_string_not_equal(pami_error_text(rows[i].value),
                                    pami_error_text(rows[j].value));
        }
    }
}

static void test_out_of_range_is_unknown(void **state)
{
    (void)state;
    static const int bad[] = {PAMI_RESULT_LAST, PAMI_RESULT_LAST + 1, 100,
                              4096, INT_MAX, -1, INT_MIN};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *text = pami_error_text((pami_result_t)bad[i]);
        assert_non_null(text);
        assert_string_equal(text, "unknown result");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_is_zero),
        cmocka_unit_test(test_every_code_has_its_text),
        cmocka_unit_test(test_codes_and_texts_are_distinct),
        cmocka_unit_test(test_out_of_range_is_unknown),
    };
    return cmocka_run_group_tests_name("result_table", tests, NULL, NULL);
}

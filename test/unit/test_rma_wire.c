/*
 * The wire checks of one-sided operations through the owner
 * (docs/protocols/rma.md, "The owner's path"): what pami_rma_msg_decode
 * accepts and refuses, and the PUT_DONE that answers several puts at
 * once (1 to PAMI_RMA_PUT_DONE_MAX cookies as its data, nothing else).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static pami_rma_msg_t msg(uint8_t type, uint64_t bytes)
{
    return (pami_rma_msg_t){.version = PAMI_RMA_MSG_VERSION, .type = type,
                            .cookie = 7, .bytes = bytes};
}

static pami_wire_check_t decode(const pami_rma_msg_t *m, size_t data_len)
{
    pami_rma_msg_t out;
    return pami_rma_msg_decode(m, sizeof(*m), data_len, &out);
}

static void test_kinds(void **state)
{
    (void)state;
    pami_rma_msg_t m = msg(PAMI_RMA_MSG_PUT, 100), out;
    assert_int_equal(decode(&m, 100), PAMI_WIRE_OK);
    assert_int_equal(decode(&m, 99), PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(pami_rma_msg_decode(&m, sizeof(m) - 1, 100, &out),
                     PAMI_WIRE_SHORT);
    assert_int_equal(pami_rma_msg_decode(&m, sizeof(m) + 1, 100, &out),
                     PAMI_WIRE_BAD_LENGTH);
    m = msg(PAMI_RMA_MSG_FENCE, 0);
    assert_int_equal(decode(&m, 0), PAMI_WIRE_OK);
    assert_int_equal(decode(&m, 8), PAMI_WIRE_BAD_LENGTH);
    m = msg(PAMI_RMA_MSG_PUT_DONE + 1, 0);
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
}

static void test_put_done(void **state)
{
    (void)state;
    const size_t max = PAMI_RMA_PUT_DONE_MAX * sizeof(uint64_t);
    pami_rma_msg_t m = msg(PAMI_RMA_MSG_PUT_DONE, 8);
    assert_int_equal(decode(&m, 8), PAMI_WIRE_OK);
    m.bytes = max;
    assert_int_equal(decode(&m, max), PAMI_WIRE_OK);
    /* The data is exactly the cookies the header counts. */
    assert_int_equal(decode(&m, max - 8), PAMI_WIRE_BAD_LENGTH);
    m.bytes = max + 8;
    assert_int_equal(decode(&m, max + 8), PAMI_WIRE_BAD_FIELD);
    m.bytes = 0;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m.bytes = 12;
    assert_int_equal(decode(&m, 12), PAMI_WIRE_BAD_FIELD);
    /* Only successes travel this way. */
    m.bytes  = 16;
    m.result = PAMI_INVAL;
    assert_int_equal(decode(&m, 16), PAMI_WIRE_BAD_FIELD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_put_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

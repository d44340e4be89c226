/*
 * The wire checks of one-sided operations through the owner
 * (docs/protocols/rma.md, "The owner's path"): what pami_rma_msg_decode
 * accepts and refuses, the PUT_DONE that answers several puts at
 * once (1 to PAMI_RMA_PUT_DONE_MAX cookies as its data, nothing else),
 * the REPLIES that carries other answers back to back and the REQUESTS
 * that carries small puts and gets (pami_rma_gathered_next walks both),
 * and the CLAIMS that carries an origin's page of claim words (a region
 * handle, "Small puts by message").
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

static void test_replies(void **state)
{
    (void)state;
    /* A get's answer with 5 bytes, then an atomic's without data. */
    uint8_t        buf[2 * sizeof(pami_rma_msg_t) + 5];
    pami_rma_msg_t a = msg(PAMI_RMA_MSG_REPLY, 5), b = msg(PAMI_RMA_MSG_REPLY, 0);
    b.cookie  = 8;
    b.operand = 41;
    memcpy(buf, &a, sizeof(a));
    memcpy(buf + sizeof(a), "hello", 5);
    memcpy(buf + sizeof(a) + 5, &b, sizeof(b));

    pami_rma_msg_t m = msg(PAMI_RMA_MSG_REPLIES, sizeof(buf));
    assert_int_equal(decode(&m, sizeof(buf)), PAMI_WIRE_OK);
    assert_int_equal(decode(&m, sizeof(buf) - 1), PAMI_WIRE_BAD_LENGTH);
    m.bytes = PAMI_RMA_GATHER_BYTES + 1;
    assert_int_equal(decode(&m, m.bytes), PAMI_WIRE_BAD_FIELD);
    m.bytes = sizeof(m) - 1;
    assert_int_equal(decode(&m, m.bytes), PAMI_WIRE_BAD_FIELD);
    m        = msg(PAMI_RMA_MSG_REPLIES, sizeof(buf));
    m.result = PAMI_INVAL;
    assert_int_equal(decode(&m, sizeof(buf)), PAMI_WIRE_BAD_FIELD);

    size_t         off = 0;
    pami_rma_msg_t one;
    const uint8_t *data = NULL;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf, sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_OK);
    assert_int_equal(one.cookie, 7);
    assert_int_equal(one.bytes, 5);
    assert_ptr_equal(data, buf + sizeof(a));
    assert_int_equal(off, sizeof(a) + 5);
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf, sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_OK);
    assert_int_equal(one.cookie, 8);
    assert_int_equal(one.operand, 41);
    assert_int_equal(off, sizeof(buf));
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf, sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_SHORT);

    /* Data past the end, a message that is no REPLY, a short tail. */
    off = 0;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf, sizeof(a) + 4, &off, &one,
                                           &data),
                     PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(off, 0);
    pami_rma_msg_t g = msg(PAMI_RMA_MSG_GET, 0);
    memcpy(buf + sizeof(a) + 5, &g, sizeof(g));
    off = sizeof(a) + 5;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf, sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_BAD_FIELD);
    off = sizeof(a) + 5;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf, sizeof(buf) - 1, &off, &one,
                                           &data),
                     PAMI_WIRE_SHORT);
}

static void test_requests(void **state)
{
    (void)state;
    /* A put of 3 bytes, then a get of 4096. */
    uint8_t        buf[2 * sizeof(pami_rma_msg_t) + 3];
    pami_rma_msg_t p = msg(PAMI_RMA_MSG_PUT, 3), g = msg(PAMI_RMA_MSG_GET, 4096);
    memcpy(buf, &p, sizeof(p));
    memcpy(buf + sizeof(p), "abc", 3);
    memcpy(buf + sizeof(p) + 3, &g, sizeof(g));
    pami_rma_msg_t m = msg(PAMI_RMA_MSG_REQUESTS, sizeof(buf));
    assert_int_equal(decode(&m, sizeof(buf)), PAMI_WIRE_OK);
    m.op = 1;
    assert_int_equal(decode(&m, sizeof(buf)), PAMI_WIRE_BAD_FIELD);

    size_t         off = 0;
    pami_rma_msg_t one;
    const uint8_t *data = NULL;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REQUESTS, buf,
                                            sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_OK);
    assert_int_equal(one.type, PAMI_RMA_MSG_PUT);
    assert_memory_equal(data, "abc", 3);
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REQUESTS, buf,
                                            sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_OK);
    assert_int_equal(one.type, PAMI_RMA_MSG_GET);
    assert_int_equal(off, sizeof(buf));
    /* Requests are no answers, and answers no requests. */
    off = 0;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REPLIES, buf,
                                            sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_BAD_FIELD);
    pami_rma_msg_t r = msg(PAMI_RMA_MSG_REPLY, 0);
    memcpy(buf + sizeof(p) + 3, &r, sizeof(r));
    off = sizeof(p) + 3;
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REQUESTS, buf,
                                            sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_BAD_FIELD);
    /* An atomic is never gathered; a get larger than a gathered one. */
    pami_rma_msg_t a = msg(PAMI_RMA_MSG_ATOMIC, 8);
    a.size = 8;
    memcpy(buf + sizeof(p) + 3, &a, sizeof(a));
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REQUESTS, buf,
                                            sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_BAD_FIELD);
    g.bytes = PAMI_RMA_GATHER_DATA_MAX + 1;
    memcpy(buf + sizeof(p) + 3, &g, sizeof(g));
    assert_int_equal(pami_rma_gathered_next(PAMI_RMA_MSG_REQUESTS, buf,
                                            sizeof(buf), &off, &one, &data),
                     PAMI_WIRE_BAD_LENGTH);
}

static void test_claims(void **state)
{
    (void)state;
    const size_t   h = sizeof(pami_memregion_t);
    pami_rma_msg_t m = msg(PAMI_RMA_MSG_CLAIMS, h);
    m.cookie = 0;
    assert_int_equal(decode(&m, h), PAMI_WIRE_OK);
    /* The payload is exactly one handle. */
    assert_int_equal(decode(&m, h - 1), PAMI_WIRE_BAD_LENGTH);
    m.bytes = h + 8;
    assert_int_equal(decode(&m, h + 8), PAMI_WIRE_BAD_FIELD);
    m.bytes = h;
    m.op    = 1;
    assert_int_equal(decode(&m, h), PAMI_WIRE_BAD_FIELD);
    m.op     = 0;
    m.result = PAMI_INVAL;
    assert_int_equal(decode(&m, h), PAMI_WIRE_BAD_FIELD);
    /* A claimed PUT or FENCE is a PUT or FENCE with compare set. */
    m = msg(PAMI_RMA_MSG_PUT, 8);
    m.compare = 3;
    assert_int_equal(decode(&m, 8), PAMI_WIRE_OK);
    m = msg(PAMI_RMA_MSG_FENCE, 0);
    m.compare = 4;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_OK);
    m = msg(PAMI_RMA_MSG_CLAIMS + 1, 0);
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_put_done),
        cmocka_unit_test(test_replies),
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_claims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

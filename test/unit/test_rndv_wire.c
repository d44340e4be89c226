/*
 * The wire checks of the rendezvous served by its origin
 * (docs/protocols/rendezvous.md, "The transfer by chunk messages"): every
 * field of a FETCH and a DATA that pami_rndv_chunk_decode refuses, the
 * target's test of a DATA against the chunks it asked for
 * (pami_rndv_chunk_wanted), the RTS's MSG flag, and the ASK and DONE of
 * the split read on one node (pami_rndv_write_decode, "Two cores on one
 * transfer").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static pami_rndv_chunk_t fetch(void)
{
    return (pami_rndv_chunk_t){.version = RNDV_VERSION,
                               .type = RNDV_CHUNK_FETCH,
                               .send_cookie = 5, .recv_cookie = 9,
                               .offset = 256 * 1024, .bytes = 256 * 1024};
}

static pami_wire_check_t decode(const pami_rndv_chunk_t *m, size_t data_len)
{
    pami_rndv_chunk_t out;
    return pami_rndv_chunk_decode(m, sizeof(*m), data_len, &out);
}

static void test_decode(void **state)
{
    (void)state;
    pami_rndv_chunk_t m = fetch(), out;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_OK);
    assert_int_equal(pami_rndv_chunk_decode(&m, sizeof(m), 0, &out),
                     PAMI_WIRE_OK);
    assert_memory_equal(&m, &out, sizeof(m));
    /* Sizes of the message itself. */
    assert_int_equal(pami_rndv_chunk_decode(&m, sizeof(m) - 1, 0, &out),
                     PAMI_WIRE_SHORT);
    uint8_t longer[sizeof(m) + 1] = {0};
    memcpy(longer, &m, sizeof(m));
    assert_int_equal(pami_rndv_chunk_decode(longer, sizeof(longer), 0, &out),
                     PAMI_WIRE_BAD_LENGTH);
    /* Each field. */
    m = fetch(); m.version = 2;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_VERSION);
    m = fetch(); m.reserved = 1;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch(); m.type = 3;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch(); m.type = 0;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch(); m.bytes = 0;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch(); m.bytes = RNDV_CHUNK_MAX;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_OK);
    m = fetch(); m.bytes = RNDV_CHUNK_MAX + 1u;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch(); m.offset = UINT64_MAX - m.bytes + 1;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch(); m.offset = UINT64_MAX - m.bytes;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_OK);
    m = fetch(); m.result = PAMI_INVAL; /* a FETCH carries no result */
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = fetch();                        /* nor data */
    assert_int_equal(decode(&m, 1), PAMI_WIRE_BAD_LENGTH);
    /* DATA: exactly bytes of data with success, none with a refusal. */
    m = fetch(); m.type = RNDV_CHUNK_DATA;
    assert_int_equal(decode(&m, m.bytes), PAMI_WIRE_OK);
    assert_int_equal(decode(&m, m.bytes - 1), PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(decode(&m, m.bytes + 1), PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_LENGTH);
    m.result = PAMI_INVAL;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_OK);
    assert_int_equal(decode(&m, m.bytes), PAMI_WIRE_BAD_LENGTH);
    m.result = PAMI_RESULT_LAST;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m.result = -1;
    assert_int_equal(decode(&m, 0), PAMI_WIRE_BAD_FIELD);
}

static void test_wanted(void **state)
{
    (void)state;
    const uint64_t c = 256 * 1024, total = 3 * c + 5;
    uint64_t k = 99;
    /* Chunks 0..3 asked for, none here: each whole chunk is wanted. */
    assert_true(pami_rndv_chunk_wanted(total, c, 0, 4, 0, 0, c, &k));
    assert_int_equal(k, 0);
    assert_true(pami_rndv_chunk_wanted(total, c, 0, 4, 0, 2 * c, c, &k));
    assert_int_equal(k, 2);
    /* The last one is 5 bytes, not more, not less. */
    assert_true(pami_rndv_chunk_wanted(total, c, 0, 4, 0, 3 * c, 5, &k));
    assert_int_equal(k, 3);
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 4, 0, 3 * c, 6, &k));
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 4, 0, 3 * c, 4, &k));
    /* A short or long middle chunk, a misaligned offset. */
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 4, 0, c, c - 1, &k));
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 4, 0, c, c + 1, &k));
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 4, 0, c + 1, c, &k));
    /* Past the end, not asked for yet, or before the window. */
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 4, 0, 4 * c, 1, &k));
    assert_false(pami_rndv_chunk_wanted(total, c, 0, 2, 0, 2 * c, c, &k));
    assert_false(pami_rndv_chunk_wanted(total, c, 2, 4, 0, c, c, &k));
    /* Here already: chunk 1 = bit 0 with lo = 1. */
    assert_false(pami_rndv_chunk_wanted(total, c, 1, 4, 1, c, c, &k));
    assert_true(pami_rndv_chunk_wanted(total, c, 1, 4, 1, 2 * c, c, &k));
    /* A window wider than the bitmap is never trusted. */
    assert_false(pami_rndv_chunk_wanted(UINT64_MAX, 1024, 0, 100, 0,
                                        64 * 1024, 1024, &k));
    assert_false(pami_rndv_chunk_wanted(total, 0, 0, 4, 0, 0, c, &k));
    assert_int_equal(k, 2); /* the last accepted; refusals leave it */
}

/* An RTS with MSG names nothing of the origin's memory. */
static void test_rts_msg(void **state)
{
    (void)state;
    uint8_t secrets[16 * 4] = {0};
    pami_rndv_rts_t r = {.version = RNDV_VERSION, .dispatch = 3,
                         .bytes = 1 << 20, .flags = RNDV_FLAG_MSG}, out;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_OK);
    r.base = 0x1000;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.base = 0;
    r.mr.opaque[12] = 1;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.mr.opaque[12] = 0;
    r.bytes = 0;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.bytes = 1;
    r.flags = RNDV_FLAG_MSG | RNDV_FLAG_CMA;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.flags = 0x10;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    /* The first chunk rides along only with MSG. */
    r.flags = RNDV_FLAG_MSG | RNDV_FLAG_DATA;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_OK);
    r.flags = RNDV_FLAG_DATA;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.flags = RNDV_FLAG_CMA | RNDV_FLAG_DATA;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    /* No ack only when the RTS holds the whole payload. */
    r.flags = RNDV_FLAG_MSG | RNDV_FLAG_DATA | RNDV_FLAG_NOACK;
    r.bytes = RNDV_MSG_CHUNK;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_OK);
    assert_int_equal(out.flags, r.flags);
    r.bytes = RNDV_MSG_CHUNK + 1;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.bytes = 1;
    r.flags = RNDV_FLAG_MSG | RNDV_FLAG_NOACK;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.flags = RNDV_FLAG_CMA | RNDV_FLAG_NOACK;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
    r.flags = RNDV_FLAG_NOACK;
    assert_int_equal(pami_rndv_rts_decode(&r, sizeof(r), 1, secrets, 4,
                                          &out), PAMI_WIRE_BAD_FIELD);
}

static pami_rndv_write_t ask(void)
{
    return (pami_rndv_write_t){.version = RNDV_VERSION,
                               .type = RNDV_WRITE_ASK,
                               .send_cookie = 5, .recv_cookie = 9,
                               .offset = 4u << 20, .bytes = 4u << 20,
                               .dest = 0x7f0000400000ull};
}

static pami_wire_check_t wdecode(const pami_rndv_write_t *m, size_t data_len)
{
    pami_rndv_write_t out;
    return pami_rndv_write_decode(m, sizeof(*m), data_len, &out);
}

static void test_write_decode(void **state)
{
    (void)state;
    pami_rndv_write_t m = ask(), out;
    assert_int_equal(sizeof(m), 56);
    assert_int_equal(pami_rndv_write_decode(&m, sizeof(m), 0, &out),
                     PAMI_WIRE_OK);
    assert_memory_equal(&m, &out, sizeof(m));
    assert_int_equal(pami_rndv_write_decode(&m, sizeof(m) - 1, 0, &out),
                     PAMI_WIRE_SHORT);
    uint8_t longer[sizeof(m) + 1] = {0};
    memcpy(longer, &m, sizeof(m));
    assert_int_equal(pami_rndv_write_decode(longer, sizeof(longer), 0, &out),
                     PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(wdecode(&m, 1), PAMI_WIRE_BAD_LENGTH); /* no data */
    m = ask(); m.version = 2;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_VERSION);
    m = ask(); m.reserved = 1;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.type = 0;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.type = 3;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.bytes = 0;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.offset = UINT64_MAX - m.bytes + 1;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.offset = UINT64_MAX - m.bytes;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_OK);
    m = ask(); m.dest = 0;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.dest = UINT64_MAX - m.bytes + 1;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m = ask(); m.dest = UINT64_MAX - m.bytes;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_OK);
    m = ask(); m.result = PAMI_EAGAIN; /* an ASK carries no result */
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    /* DONE: any known result. */
    m = ask(); m.type = RNDV_WRITE_DONE;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_OK);
    m.result = PAMI_EAGAIN;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_OK);
    m.result = PAMI_RESULT_LAST - 1;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_OK);
    m.result = PAMI_RESULT_LAST;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
    m.result = -1;
    assert_int_equal(wdecode(&m, 0), PAMI_WIRE_BAD_FIELD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_wanted),
        cmocka_unit_test(test_rts_msg),
        cmocka_unit_test(test_write_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Gathered eager sends (docs/protocols/am.md, "SENDS"):
 *   wire    what pami_sends_msg_decode, pami_sends_next and
 *           pami_sends_check accept and refuse;
 *   gather  two contexts of this task over UCX (PAMI_SHM_FASTPATH=0),
 *           and again over the shared-memory queues: a
 *           lone send leaves in its call, sends that follow it wait in
 *           the list (toward the queues, up to immediate_max bytes of
 *           records), a send that is not gathered (remote_fn, rendezvous)
 *           sends the list first, handlers run in call order with every
 *           byte; forged SENDS messages: a malformed one is dropped
 *           whole (no handler runs), a good one runs its records in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "pami_test.h"
#include "unit_world.h"

/* Appends one record to buf at *len (padded as the sender pads). */
static void put_rec(uint8_t *buf, size_t *len, uint16_t dispatch,
                    const void *uhdr, uint16_t uhdr_len, const void *data,
                    uint32_t data_len)
{
    pami_sends_rec_t r = {dispatch, uhdr_len, data_len};
    size_t           size = pami_sends_rec_size(uhdr_len, data_len);
    memset(buf + *len, 0, size);
    memcpy(buf + *len, &r, sizeof(r));
    if (uhdr_len > 0)
        memcpy(buf + *len + sizeof(r), uhdr, uhdr_len);
    if (data_len > 0)
        memcpy(buf + *len + sizeof(r) + uhdr_len, data, data_len);
    *len += size;
}

static void test_wire(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t  len = 0;
    put_rec(buf, &len, 7, "hdr", 3, "0123456789", 10);
    put_rec(buf, &len, 300, "", 0, "x", 1);
    assert_int_equal(len, 24 + 16);

    pami_sends_msg_t m = {.count = 2}, out;
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m), len, &out),
                     PAMI_WIRE_OK);
    assert_int_equal(pami_sends_check(buf, len, 2), PAMI_WIRE_OK);
    /* The count must match the records exactly. */
    assert_int_not_equal(pami_sends_check(buf, len, 1), PAMI_WIRE_OK);
    assert_int_not_equal(pami_sends_check(buf, len, 3), PAMI_WIRE_OK);

    size_t           off = 0;
    pami_sends_rec_t r;
    const uint8_t   *uhdr, *data;
    assert_int_equal(pami_sends_next(buf, len, &off, &r, &uhdr, &data),
                     PAMI_WIRE_OK);
    assert_int_equal(r.dispatch, 7);
    assert_memory_equal(uhdr, "hdr", 3);
    assert_memory_equal(data, "0123456789", 10);
    assert_int_equal(off, 24);
    assert_int_equal(pami_sends_next(buf, len, &off, &r, &uhdr, &data),
                     PAMI_WIRE_OK);
    assert_int_equal(r.dispatch, 300);
    assert_int_equal(off, len);
    assert_int_equal(pami_sends_next(buf, len, &off, &r, &uhdr, &data),
                     PAMI_WIRE_SHORT);

    /* The core payload: size, count, reserved, the data's length. */
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m) - 1, len, &out),
                     PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m), len - 8, &out),
                     PAMI_WIRE_OK);
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m), len - 1, &out),
                     PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m), 0, &out),
                     PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m),
                                           PAMI_SENDS_BYTES + 8, &out),
                     PAMI_WIRE_BAD_LENGTH);
    m.count = 0;
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m), len, &out),
                     PAMI_WIRE_BAD_FIELD);
    m = (pami_sends_msg_t){.count = 1, .reserved = 1};
    assert_int_equal(pami_sends_msg_decode(&m, sizeof(m), len, &out),
                     PAMI_WIRE_BAD_FIELD);

    /* A record: a core id, a header over the limit, data past the end,
     * padding past the end. */
    pami_sends_rec_t bad = {PAMI_DISPATCH_CORE_BASE, 0, 0};
    memcpy(buf, &bad, sizeof(bad));
    off = 0;
    assert_int_equal(pami_sends_next(buf, 8, &off, &r, &uhdr, &data),
                     PAMI_WIRE_BAD_FIELD);
    bad = (pami_sends_rec_t){1, PAMI_HEADER_MAX + 1, 0};
    memcpy(buf, &bad, sizeof(bad));
    assert_int_equal(pami_sends_next(buf, sizeof(buf), &off, &r, &uhdr,
                                     &data),
                     PAMI_WIRE_BAD_FIELD);
    bad = (pami_sends_rec_t){1, 0, 9};
    memcpy(buf, &bad, sizeof(bad));
    assert_int_equal(pami_sends_next(buf, 16, &off, &r, &uhdr, &data),
                     PAMI_WIRE_BAD_LENGTH);
    bad = (pami_sends_rec_t){1, 0, UINT32_MAX};
    memcpy(buf, &bad, sizeof(bad));
    assert_int_equal(pami_sends_next(buf, 16, &off, &r, &uhdr, &data),
                     PAMI_WIRE_BAD_LENGTH);
    bad = (pami_sends_rec_t){1, 2, 5};
    memcpy(buf, &bad, sizeof(bad));
    assert_int_equal(pami_sends_next(buf, 15, &off, &r, &uhdr, &data),
                     PAMI_WIRE_BAD_LENGTH);
    assert_int_equal(off, 0);
}

/* ---- gather ---- */

enum { ID = 9, SEQ_MAX = 20 };

typedef struct {
    uint32_t seq[SEQ_MAX];
    size_t   n;
    int      bad;
} got_t;

/* Payload byte i of message k. */
static uint8_t byte_of(uint32_t k, size_t i)
{
    return (uint8_t)(k * 31 + i * 7);
}

static void recv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    got_t *g = cookie;
    if (rc != PAMI_SUCCESS)
        g->bad++;
}

static uint8_t *large_landing;

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hdr_len, const void *data, size_t data_len,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)origin;
    got_t   *g = cookie;
    uint32_t k;
    if (hdr_len != sizeof(k) || g->n == SEQ_MAX) {
        g->bad++;
        return;
    }
    memcpy(&k, hdr, sizeof(k));
    g->seq[g->n++] = k;
    if (recv != NULL) {
        large_landing = malloc(data_len);
        recv->addr     = large_landing;
        recv->local_fn = recv_done;
        recv->cookie   = g;
        return;
    }
    for (size_t i = 0; i < data_len; i++)
        if (((const uint8_t *)data)[i] != byte_of(k, i))
            g->bad++;
}

typedef struct {
    world_t       *w;
    pami_endpoint_t to;
    uint8_t       *buf[SEQ_MAX];
    cb_count_t     calls[SEQ_MAX];
    got_t          got;
} gather_t;

static void send_one(gather_t *t, uint32_t k, size_t bytes, bool immediate,
                     bool remote)
{
    t->buf[k] = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++)
        t->buf[k][i] = byte_of(k, i);
    pami_send_immediate_t s = {.dest = t->to, .dispatch = ID,
                               .header = &k, .header_len = sizeof(k),
                               .data = t->buf[k], .data_len = bytes};
    if (immediate) {
        assert_int_equal(pami_send_immediate(t->w->ctx[0], &s), PAMI_SUCCESS);
        return;
    }
    pami_send_t p = {.send = s, .local_fn = cb_count_local,
                     .remote_fn = remote ? cb_count_remote : NULL,
                     .cookie = &t->calls[k]};
    assert_int_equal(pami_send(t->w->ctx[0], &p), PAMI_SUCCESS);
}

static size_t listed(gather_t *t)
{
    return t->w->ctx[0]->sends.n;
}

static void run_gather(bool queue)
{
    setenv("PAMI_SHM_FASTPATH", queue ? "1" : "0", 1);
    gather_t t = {.w = world_up(2)};
    assert_int_equal(pami_dispatch_set(t.w->ctx[1], ID, on_msg, &t.got, NULL),
                     PAMI_SUCCESS);
    t.to = endpoint(t.w, 1);
    size_t big = t.w->attr.rndv_threshold + 100;
    assert_true(t.w->ctx[0]->client->config.send_gather >= 16384);

    /* The first: alone, it leaves in its call; the next ones wait. */
    pami_context_advance(t.w->ctx[0], 1);
    send_one(&t, 0, 100, true, false);
    assert_int_equal(listed(&t), 0);
    /* Context 1 of this task: slot 1. */
    assert_int_equal(t.w->ctx[0]->peers[1].gather,
                     queue ? PAMI_GATHER_QUEUE : PAMI_GATHER_UCX);
    send_one(&t, 1, 200, false, false);
    send_one(&t, 2, 0, true, false);
    assert_int_equal(listed(&t), 2);
    /* remote_fn: not gathered, the list leaves first. */
    send_one(&t, 3, 300, false, true);
    assert_int_equal(listed(&t), 0);
    send_one(&t, 4, 16384 - sizeof(uint32_t), false, false);
    send_one(&t, 5, 16384, false, false); /* over PAMI_SEND_GATHER */
    assert_int_equal(listed(&t), 0);
    send_one(&t, 6, 40, true, false);
    assert_int_equal(listed(&t), 1);
    /* A rendezvous sends the list first too. */
    send_one(&t, 7, big, false, false);
    assert_int_equal(listed(&t), 0);
    send_one(&t, 8, 1, false, false);
    assert_int_equal(listed(&t), 1);
    /* Progress sends the list. */
    pami_context_advance(t.w->ctx[0], 1);
    assert_int_equal(listed(&t), 0);
    /* After it, a send is alone again. */
    send_one(&t, 9, 5, true, false);
    assert_int_equal(listed(&t), 0);
    /* Toward the queues a list holds at most immediate_max bytes: these
     * leave alone, and 6 more of 300 B go in lists of 3 records at most. */
    for (uint32_t k = 10; k < 14; k++)
        send_one(&t, k, 1000 * k, false, false);
    assert_int_equal(listed(&t), queue ? 0 : 4);
    size_t imax = t.w->ctx[0]->client->config.immediate_max;
    for (uint32_t k = 14; k < SEQ_MAX; k++) {
        send_one(&t, k, 300, k % 2 == 0, false);
        if (queue)
            assert_true(t.w->ctx[0]->sends.len <= imax);
    }
    assert_true(listed(&t) >= 1);

    uint64_t deadline = now_ms() + 5000;
    while ((t.got.n < SEQ_MAX || t.calls[3].remote == 0 ||
            large_landing == NULL) && now_ms() < deadline)
        advance_all(t.w);
    for (int i = 0; i < 100; i++)
        advance_all(t.w);
    assert_int_equal(t.got.n, SEQ_MAX);
    assert_int_equal(t.got.bad, 0);
    for (uint32_t k = 0; k < SEQ_MAX; k++)
        assert_int_equal(t.got.seq[k], k);
    for (size_t i = 0; i < big; i++)
        if (large_landing[i] != byte_of(7, i))
            fail_msg("rendezvous payload wrong at %zu", i);
    for (uint32_t k = 0; k < SEQ_MAX; k++) {
        bool imm = k == 0 || k == 2 || k == 6 || k == 9 ||
                   (k >= 14 && k % 2 == 0);
        assert_int_equal(t.calls[k].local, imm ? 0 : 1);
        if (!imm)
            assert_int_equal(t.calls[k].local_rc, PAMI_SUCCESS);
    }
    assert_int_equal(t.calls[3].remote, 1);
    assert_int_equal(t.calls[3].remote_rc, PAMI_SUCCESS);

    /* Forged: a record with a core id among good ones drops the whole
     * message, no handler runs; a good one runs its records in order. */
    uint8_t recs[128];
    size_t  len = 0;
    uint32_t k = 0;
    put_rec(recs, &len, ID, &k, sizeof(k), NULL, 0);
    put_rec(recs, &len, PAMI_DISPATCH_ACK, NULL, 0, NULL, 0);
    pami_sends_msg_t m = {.count = 2};
    pami_send_t raw = {.send = {.dest = t.to, .dispatch = PAMI_DISPATCH_SENDS,
                                .header = &m, .header_len = sizeof(m),
                                .data = recs, .data_len = len}};
    pami_context_stats_t before, after;
    assert_int_equal(pami_context_stats(t.w->ctx[1], &before), PAMI_SUCCESS);
    size_t n0 = t.got.n;
    t.got.n = 0;
    pami_context_advance(t.w->ctx[0], 1);
    assert_int_equal(pami_test_send_raw_msg(t.w->ctx[0], &raw), PAMI_SUCCESS);
    for (int i = 0; i < 200; i++)
        advance_all(t.w);
    assert_int_equal(pami_context_stats(t.w->ctx[1], &after), PAMI_SUCCESS);
    assert_int_equal(after.dropped_malformed, before.dropped_malformed + 1);
    assert_int_equal(t.got.n, 0);

    len = 0;
    for (k = 0; k < 3; k++) {
        uint8_t d[3] = {byte_of(k, 0), byte_of(k, 1), byte_of(k, 2)};
        put_rec(recs, &len, ID, &k, sizeof(k), d, k);
    }
    m.count = 3;
    raw.send.data_len = len;
    assert_int_equal(pami_test_send_raw_msg(t.w->ctx[0], &raw), PAMI_SUCCESS);
    deadline = now_ms() + 5000;
    while (t.got.n < 3 && now_ms() < deadline)
        advance_all(t.w);
    assert_int_equal(t.got.n, 3);
    assert_int_equal(t.got.bad, 0);
    for (k = 0; k < 3; k++)
        assert_int_equal(t.got.seq[k], k);
    (void)n0;

    world_down(t.w);
    for (size_t i = 0; i < SEQ_MAX; i++)
        free(t.buf[i]);
    free(large_landing);
    unsetenv("PAMI_SHM_FASTPATH");
}

static void test_gather(void **state)
{
    (void)state;
    run_gather(false);
}

static void test_gather_queue(void **state)
{
    (void)state;
    run_gather(true);
}

int main(int argc, char **argv)
{
    const char *group = argc > 1 ? argv[1] : "";
    const struct CMUnitTest wire[] = {cmocka_unit_test(test_wire)};
    const struct CMUnitTest gather[] = {cmocka_unit_test(test_gather),
                                        cmocka_unit_test(test_gather_queue)};
    int failed = 0;
    if (group[0] == '\0' || strcmp(group, "wire") == 0)
        failed += cmocka_run_group_tests_name("sends_wire", wire, NULL, NULL);
    if (group[0] == '\0' || strcmp(group, "gather") == 0)
        failed += cmocka_run_group_tests_name("sends_gather", gather, NULL,
                                              NULL);
    return failed == 0 ? 0 : 1;
}

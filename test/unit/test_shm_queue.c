/*
 * The shared-memory queue (adapters/transport/shm_queue.c) on a ring in
 * this process: its producer and consumer as two tasks use them.
 *
 * stale_payload: a line that held the middle of a long entry in the
 * previous lap still holds those bytes when the consumer reaches it
 * again. The consumer knows an entry is there by the stamp in its first
 * 4 bytes; payload bytes equal to the stamp it waits for (any small
 * number a program sends can be) must not pass for an entry.
 *
 * stamp_wrap: stamps are positions + 1 modulo 2^32; where the consumer
 * waits for stamp 0, the line the producer guarded after the last entry
 * must not read 0.
 *
 * mixed_sizes: messages of 1 to 10 lines in a pattern that moves the
 * entries' first lines around the ring lap after lap, the consumer taking
 * them at once or some laps behind: every message arrives whole, in
 * order, nothing more.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "shm_queue.h"

#define NLINES 8u
#define MAXL   4u

typedef struct {
    unsigned delivered, dropped;
    size_t   last_total;
} sink_t;

static void deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                    uint8_t *data, size_t data_len)
{
    (void)hdr;
    (void)data;
    sink_t *s = arg;
    s->delivered++;
    s->last_total = hdr_len + data_len;
}

static void drop(void *arg, const char *why)
{
    (void)why;
    ((sink_t *)arg)->dropped++;
}

static void stale_payload(void **state)
{
    (void)state;
    _Alignas(64) static uint8_t ring[NLINES * SHMQ_LINE];
    static shmq_ctl_t ctl;
    uint8_t scratch[MAXL * SHMQ_LINE];
    memset(ring, 0, sizeof(ring));
    memset(&ctl, 0, sizeof(ctl));
    shmq_prod_t p;
    assert_true(shmq_prod_init(&p, &ctl, ring, NLINES, MAXL));
    shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = NLINES,
                     .max_lines = MAXL, .msg_max = 4096};
    sink_t s = {0};

    /* A 3-line entry at lines 0-2: line 1 starts at payload byte 48. Put
     * there the stamp the consumer will wait for at line 9 (line 1 of the
     * next lap): 10. */
    uint8_t big[150];
    memset(big, 0xab, sizeof(big));
    uint32_t forged = 10;
    memcpy(big + SHMQ_LINE - SHMQ_ENTRY_HDR, &forged, sizeof(forged));
    assert_int_equal(shmq_put_frag(&p, 0, sizeof(big), big, sizeof(big),
                                   NULL, 0, 0), (long)sizeof(big));
    assert_int_equal(shmq_poll(&c, 16, scratch, deliver, drop, &s), 1);
    assert_int_equal(s.delivered, 1);

    /* One-line entries up to line 8 (line 0 of the next lap). */
    uint8_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (unsigned i = 0; i < 6; i++) {
        assert_int_equal(shmq_put_frag(&p, 0, sizeof(small), small,
                                       sizeof(small), NULL, 0, 0),
                         (long)sizeof(small));
        assert_int_equal(shmq_poll(&c, 16, scratch, deliver, drop, &s), 1);
    }
    assert_int_equal(c.head, 9);
    /* Nothing was sent after that: the consumer must find nothing. */
    assert_int_equal(shmq_poll(&c, 16, scratch, deliver, drop, &s), 0);
    assert_int_equal(s.dropped, 0);
    assert_false(c.broken);
    assert_int_equal(s.delivered, 7);

    /* And the next real message still comes through. */
    assert_int_equal(shmq_put_frag(&p, 0, sizeof(small), small,
                                   sizeof(small), NULL, 0, 0),
                     (long)sizeof(small));
    assert_int_equal(shmq_poll(&c, 16, scratch, deliver, drop, &s), 1);
    assert_int_equal(s.delivered, 8);
    assert_int_equal(s.last_total, sizeof(small));
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);
}

static void stamp_wrap(void **state)
{
    (void)state;
    _Alignas(64) static uint8_t ring[NLINES * SHMQ_LINE];
    static shmq_ctl_t ctl;
    uint8_t scratch[MAXL * SHMQ_LINE];
    memset(ring, 0, sizeof(ring));
    memset(&ctl, 0, sizeof(ctl));
    shmq_prod_t p;
    assert_true(shmq_prod_init(&p, &ctl, ring, NLINES, MAXL));
    shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = NLINES,
                     .max_lines = MAXL, .msg_max = 4096};
    uint64_t start = 0xffffffffull - 2 * NLINES;
    p.tail = p.head_seen = c.head = start;
    atomic_store(&ctl.head, start);
    sink_t  s = {0};
    uint8_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (unsigned i = 0; i < 4 * NLINES; i++) {
        assert_int_equal(shmq_put_frag(&p, 0, sizeof(small), small,
                                       sizeof(small), NULL, 0, 0),
                         (long)sizeof(small));
        assert_int_equal(shmq_poll(&c, 16, scratch, deliver, drop, &s), 1);
        /* Nothing else was sent: at every head, stamp 0 included,
         * nothing is there. */
        assert_int_equal(shmq_poll(&c, 16, scratch, deliver, drop, &s), 0);
    }
    assert_int_equal(s.delivered, 4 * NLINES);
    assert_int_equal(s.dropped, 0);
    assert_false(c.broken);
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);
}

typedef struct {
    unsigned next, dropped;
    bool     bad;
} seq_sink_t;

/* Message k is k % 600 + 1 bytes (up to 3 entries of 4 lines), every
 * byte (k * 7 + i) % 251. */
static size_t seq_len(unsigned k)
{
    return k % 600 + 1;
}

static void seq_deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                        uint8_t *data, size_t data_len)
{
    seq_sink_t *s = arg;
    (void)hdr;
    unsigned k = s->next++;
    if (hdr_len != 0 || data_len != seq_len(k))
        s->bad = true;
    for (size_t i = 0; i < data_len && !s->bad; i++)
        if (data[i] != (uint8_t)((k * 7 + i) % 251))
            s->bad = true;
}

static void seq_drop(void *arg, const char *why)
{
    (void)why;
    ((seq_sink_t *)arg)->dropped++;
}

static void mixed_sizes(void **state)
{
    (void)state;
    enum { LINES = 64, MAXL4 = 4 };
    _Alignas(64) static uint8_t ring[LINES * SHMQ_LINE];
    static shmq_ctl_t ctl;
    uint8_t scratch[MAXL4 * SHMQ_LINE], msg[600];
    memset(ring, 0, sizeof(ring));
    memset(&ctl, 0, sizeof(ctl));
    shmq_prod_t p;
    assert_true(shmq_prod_init(&p, &ctl, ring, LINES, MAXL4));
    shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = LINES,
                     .max_lines = MAXL4, .msg_max = 4096};
    seq_sink_t s = {0};
    unsigned   sent = 0;
    for (unsigned round = 0; round < 2000; round++) {
        /* A burst of 1..7 messages, or as many as fit. */
        for (unsigned j = 0; j < round % 7 + 1; j++) {
            size_t len = seq_len(sent);
            for (size_t i = 0; i < len; i++)
                msg[i] = (uint8_t)((sent * 7 + i) % 251);
            size_t need = shmq_lines_needed(&p, len);
            if (shmq_room(&p, need) < need)
                break;
            size_t off = 0;
            while (off < len) {
                long n = shmq_put_frag(&p, 0, len, msg, len, NULL, 0, off);
                assert_true(n > 0);
                off += (size_t)n;
            }
            sent++;
        }
        /* The consumer sometimes lags, sometimes takes one entry. */
        if (round % 3 != 0)
            shmq_poll(&c, round % 5 == 0 ? 1 : 64, scratch, seq_deliver,
                      seq_drop, &s);
        assert_false(s.bad);
    }
    while (shmq_poll(&c, 64, scratch, seq_deliver, seq_drop, &s) > 0)
        ;
    assert_false(s.bad);
    assert_int_equal(s.dropped, 0);
    assert_int_equal(s.next, sent);
    assert_true(sent > 1000);
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stale_payload),
        cmocka_unit_test(stamp_wrap),
        cmocka_unit_test(mixed_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

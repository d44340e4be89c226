/*
 * The shared-memory queue (adapters/transport/shm_queue.c) on a ring in
 * this process: its producer and consumer as two tasks use them.
 *
 * stale_payload: a line that held the middle of a long entry in the
 * previous lap still holds those bytes when the consumer reaches it
 * again. The consumer knows an entry is there by the stamp in its first
 * 4 bytes; payload bytes equal to the stamp it waits for (any small
 * number a program sends can be) must not pass for an entry.
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
    shmq_prod_t p = {.ctl = &ctl, .ring = ring, .nlines = NLINES,
                     .max_lines = MAXL};
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stale_payload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

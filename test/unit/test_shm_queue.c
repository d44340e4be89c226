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
 *
 * short_lap_then_grow: a producer that uses only the first lines of the
 * ring (its lap) pads to the ring's end and never writes a line past
 * the lap; growing the lap in the middle of a message of several entries
 * loses and reorders nothing; every message comes out byte for byte.
 *
 * hostile_pads: a pad that does not end at the ring's end, or one at
 * line 0, is refused and breaks only that queue.
 *
 * put_line_as_put_frag: the producer's lean path for one-line messages
 * (shmq_put_line) writes exactly what shmq_put_frag writes, byte for
 * byte in the ring and in its record of stamps, among longer messages
 * that leave payload in lines it comes back to, through pads and laps;
 * where it does not apply it writes nothing. The consumer's lean path
 * (shmq_take_line, inside shmq_poll) hands every message over whole.
 *
 * references: a reference (shmq_put_ref) is delivered with its header
 * and the data its consumer's fetch read, in order among messages,
 * and the head passes it only after the fetch; a consumer without a
 * fetch, a failed fetch, or a reference entry of the wrong length
 * breaks that queue without delivering it.
 */
#include <stdarg.h>
#include <stdbool.h>
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
    assert_true(shmq_prod_init(&p, &ctl, ring, NLINES, MAXL, 0));
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
    assert_true(shmq_prod_init(&p, &ctl, ring, NLINES, MAXL, 0));
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
    assert_true(shmq_prod_init(&p, &ctl, ring, LINES, MAXL4, 0));
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

/* Messages whose bytes say their number and offset; the sink checks. */
typedef struct {
    unsigned got, dropped;
    uint32_t next;
} checker_t;

static uint8_t pattern(uint32_t n, size_t i)
{
    return (uint8_t)(n * 131u + i * 7u + (i >> 8));
}

static void check_deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                          uint8_t *data, size_t data_len)
{
    checker_t *k = arg;
    uint32_t   n = k->next++;
    size_t     total = hdr_len + data_len;
    for (size_t i = 0; i < total; i++)
        assert_int_equal(i < hdr_len ? hdr[i] : data[i - hdr_len],
                         pattern(n, i));
    k->got++;
}

static void check_drop(void *arg, const char *why)
{
    (void)why;
    ((checker_t *)arg)->dropped++;
}

/* Sends message n of total bytes (hdr_len of them header), polling the
 * consumer whenever there is no room. */
static void send_all(shmq_prod_t *p, shmq_cons_t *c, uint8_t *scratch,
                     checker_t *k, uint32_t n, size_t hdr_len, size_t total)
{
    static uint8_t msg[70000];
    for (size_t i = 0; i < total; i++)
        msg[i] = pattern(n, i);
    size_t off = 0;
    do {
        long w = shmq_put_frag(p, (uint16_t)hdr_len, total, msg, hdr_len,
                               msg + hdr_len, total - hdr_len, off);
        if (w < 0)
            assert_true(shmq_poll(c, 64, scratch, check_deliver, check_drop,
                                  k) > 0);
        else
            off += (size_t)w;
    } while (off < total);
}

#define RING 256u
#define LAP  32u

static void short_lap_then_grow(void **state)
{
    (void)state;
    _Alignas(64) static uint8_t ring[RING * SHMQ_LINE];
    static shmq_ctl_t ctl;
    static uint8_t    scratch[64 * SHMQ_LINE];
    memset(ring, 0, sizeof(ring));
    memset(&ctl, 0, sizeof(ctl));
    shmq_prod_t p;
    assert_true(shmq_prod_init(&p, &ctl, ring, RING, 4, LAP));
    shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = RING,
                     .max_lines = 64, .msg_max = 1 << 20};
    checker_t k = {0};
    uint32_t  n = 0;
    /* Around one line, one entry, a lap, with and without a header. */
    const size_t sizes[] = {0, 1, 47, 48, 49, 239, 240, 241, 1000, 2031,
                            2032, 2033, 5000};
    for (unsigned rep = 0; rep < 20; rep++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            send_all(&p, &c, scratch, &k, n++, sizes[i] % 40, sizes[i]);
    while (shmq_poll(&c, 64, scratch, check_deliver, check_drop, &k) > 0)
        ;
    assert_int_equal(k.got, n);
    assert_int_equal(k.dropped, 0);
    for (size_t i = (size_t)LAP * SHMQ_LINE; i < sizeof(ring); i++)
        assert_int_equal(ring[i], 0); /* past the lap: never written */

    /* Half a message of several entries in the short lap, then the
     * whole ring and entries of 64 lines. */
    static uint8_t msg[9000];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = pattern(n, i);
    long w = shmq_put_frag(&p, 10, sizeof(msg), msg, 10, msg + 10,
                           sizeof(msg) - 10, 0);
    assert_true(w > 0);
    assert_true(shmq_prod_grow(&p, 64));
    size_t off = (size_t)w;
    while (off < sizeof(msg)) {
        w = shmq_put_frag(&p, 10, sizeof(msg), msg, 10, msg + 10,
                          sizeof(msg) - 10, off);
        if (w < 0)
            assert_true(shmq_poll(&c, 64, scratch, check_deliver, check_drop,
                                  &k) > 0);
        else
            off += (size_t)w;
    }
    n++;
    for (unsigned rep = 0; rep < 20; rep++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            send_all(&p, &c, scratch, &k, n++, sizes[i] % 40,
                     sizes[i] + 3000 * (i % 2));
    while (shmq_poll(&c, 64, scratch, check_deliver, check_drop, &k) > 0)
        ;
    assert_int_equal(k.got, n);
    assert_int_equal(k.dropped, 0);
    assert_false(c.broken);
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);
}

/* A raw pad of lines at the consumer's head, stamped as expected. */
static void forge_pad(uint8_t *ring, uint32_t nlines, uint64_t pos,
                      uint16_t lines)
{
    shmq_entry_t *e = (shmq_entry_t *)(ring + (size_t)(pos & (nlines - 1)) *
                                                  SHMQ_LINE);
    e->nlines = lines;
    e->kind   = SHMQ_KIND_PAD;
    e->flags  = 0;
    atomic_store(&e->stamp, (uint32_t)(pos + 1));
}

static void hostile_pads(void **state)
{
    (void)state;
    _Alignas(64) static uint8_t ring[64 * SHMQ_LINE];
    static shmq_ctl_t ctl;
    static uint8_t    scratch[8 * SHMQ_LINE];
    const uint16_t bad[][2] = {
        {0, 64},  /* at line 0: a pad of a whole lap */
        {0, 0},   /* no lines */
        {5, 58},  /* short of the ring's end */
        {5, 60},  /* past it */
    };
    for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
        memset(ring, 0, sizeof(ring));
        memset(&ctl, 0, sizeof(ctl));
        shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = 64,
                         .max_lines = 8, .msg_max = 4096, .head = bad[t][0]};
        checker_t k = {0};
        forge_pad(ring, 64, bad[t][0], bad[t][1]);
        assert_int_equal(shmq_poll(&c, 64, scratch, check_deliver,
                                   check_drop, &k), 0);
        assert_int_equal(k.dropped, 1);
        assert_true(c.broken);
        shmq_cons_fini(&c);
    }
    /* The good one: from line 5 to the end, then an entry at line 0. */
    memset(ring, 0, sizeof(ring));
    memset(&ctl, 0, sizeof(ctl));
    atomic_store(&ctl.head, 5);
    shmq_cons_t c = {.ctl = &ctl, .ring = ring, .nlines = 64,
                     .max_lines = 8, .msg_max = 4096, .head = 5};
    shmq_prod_t p;
    assert_true(shmq_prod_init(&p, &ctl, ring, 64, 8, 0));
    p.tail      = 64;
    p.head_seen = 5;
    checker_t k = {0};
    forge_pad(ring, 64, 5, 59);
    send_all(&p, &c, scratch, &k, 0, 3, 100);
    assert_int_equal(shmq_poll(&c, 64, scratch, check_deliver, check_drop,
                               &k), 2);
    assert_int_equal(k.got, 1);
    assert_int_equal(k.dropped, 0);
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);
}

/* One message: by the lean path when it applies (true), else by
 * fragments. */
static bool put_msg(shmq_prod_t *p, bool lean, const uint8_t *msg,
                    size_t hdr_len, size_t total)
{
    if (lean && shmq_put_line(p, (uint16_t)hdr_len, msg, hdr_len,
                              msg + hdr_len, total - hdr_len))
        return true;
    size_t off = 0;
    do { /* an empty message is one entry too */
        long w = shmq_put_frag(p, (uint16_t)hdr_len, total, msg, hdr_len,
                               msg + hdr_len, total - hdr_len, off);
        assert_true(w >= 0);
        off += (size_t)w;
    } while (off < total);
    return false;
}

static void put_line_as_put_frag(void **state)
{
    (void)state;
    _Alignas(64) static uint8_t ring[2][RING * SHMQ_LINE];
    static shmq_ctl_t ctl[2];
    static uint8_t    scratch[64 * SHMQ_LINE];
    static uint8_t    msg[4096];
    shmq_prod_t p[2];
    shmq_cons_t c[2];
    checker_t   k[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) {
        memset(ring[i], 0, sizeof(ring[i]));
        memset(&ctl[i], 0, sizeof(ctl[i]));
        assert_true(shmq_prod_init(&p[i], &ctl[i], ring[i], RING, 8, LAP));
        c[i] = (shmq_cons_t){.ctl = &ctl[i], .ring = ring[i],
                             .nlines = RING, .max_lines = 64,
                             .msg_max = 1 << 20};
    }
    unsigned lean = 0;
    for (uint32_t n = 0; n < 5000; n++) {
        /* Mostly one line (0..48 bytes), now and then up to 8 lines. */
        size_t total = n % 7 == 3 ? 49 + (n * 37) % 400 : (n * 13) % 49;
        size_t hdr   = total == 0 ? 0 : (n % 3) * (n % 11) % (total + 1);
        for (size_t i = 0; i < total; i++)
            msg[i] = pattern(n, i);
        for (int i = 0; i < 2; i++) {
            size_t need = shmq_lines_needed(&p[i], total);
            while (shmq_room(&p[i], need) < need)
                assert_true(shmq_poll(&c[i], 64, scratch, check_deliver,
                                      check_drop, &k[i]) > 0);
        }
        lean += put_msg(&p[0], true, msg, hdr, total);
        put_msg(&p[1], false, msg, hdr, total);
        assert_int_equal(p[0].tail, p[1].tail);
        assert_memory_equal(ring[0], ring[1], sizeof(ring[0]));
        assert_memory_equal(p[0].shadow, p[1].shadow, LAP * sizeof(uint32_t));
        /* The consumers lag by turns, so the lean path meets stale heads. */
        if (n % 5 == 0)
            for (int i = 0; i < 2; i++)
                shmq_poll(&c[i], n % 10 == 0 ? 3 : 64, scratch, check_deliver,
                          check_drop, &k[i]);
    }
    for (int i = 0; i < 2; i++) {
        while (shmq_poll(&c[i], 64, scratch, check_deliver, check_drop,
                         &k[i]) > 0)
            ;
        assert_int_equal(k[i].got, 5000);
        assert_int_equal(k[i].dropped, 0);
        shmq_cons_fini(&c[i]);
        shmq_prod_fini(&p[i]);
    }
    assert_true(lean > 1000); /* the lean path did most one-line sends */
}

/* The references test's consumer: reads the referenced bytes of this
 * process, or fails when told to. */
typedef struct {
    sink_t   sink;
    bool     fail;
    unsigned fetched, batches;
    uint64_t head_at_fetch;
    uint8_t  buf[128];
    uint8_t  hdr[8], data[64];
    size_t   hdr_len, data_len;
} ref_sink_t;

static const char *ref_fetch(void *arg, shmq_cons_t *q,
                             const shmq_ref_t *refs, unsigned n,
                             uint8_t **data)
{
    ref_sink_t *r = arg;
    r->head_at_fetch = atomic_load(&q->ctl->head);
    size_t off = 0;
    for (unsigned k = 0; k < n; k++) {
        if (r->fail || refs[k].len > sizeof(r->buf) - off)
            return "fetch refused";
        memcpy(r->buf + off, (const void *)(uintptr_t)refs[k].addr,
               refs[k].len);
        off += refs[k].len;
        r->fetched++;
        r->batches += k == 0;
    }
    *data = r->buf;
    return NULL;
}

static void ref_deliver(void *arg, const uint8_t *hdr, size_t hdr_len,
                        uint8_t *data, size_t data_len)
{
    ref_sink_t *r = arg;
    r->sink.delivered++;
    r->hdr_len  = hdr_len;
    r->data_len = data_len;
    memcpy(r->hdr, hdr, hdr_len < sizeof(r->hdr) ? hdr_len : sizeof(r->hdr));
    memcpy(r->data, data,
           data_len < sizeof(r->data) ? data_len : sizeof(r->data));
}

static void ref_drop(void *arg, const char *why)
{
    (void)why;
    ((ref_sink_t *)arg)->sink.dropped++;
}

/* An empty ring, its producer, and a consumer that fetches with f. */
static void ref_queue(uint8_t *ring, shmq_ctl_t *ctl, shmq_prod_t *p,
                      shmq_cons_t *c, shmq_fetch_fn f)
{
    memset(ring, 0, NLINES * SHMQ_LINE);
    memset(ctl, 0, sizeof(*ctl));
    assert_true(shmq_prod_init(p, ctl, ring, NLINES, MAXL, 0));
    *c = (shmq_cons_t){.ctl = ctl, .ring = ring, .nlines = NLINES,
                       .max_lines = MAXL, .msg_max = 4096, .fetch = f};
}

static void references(void **state)
{
    (void)state;
    _Alignas(64) static uint8_t ring[NLINES * SHMQ_LINE];
    static shmq_ctl_t ctl;
    uint8_t scratch[MAXL * SHMQ_LINE];
    shmq_prod_t p;
    shmq_cons_t c;
    ref_queue(ring, &ctl, &p, &c, ref_fetch);
    ref_sink_t r = {0};
    uint8_t hdr[4] = {9, 8, 7, 6}, data[40];
    for (unsigned i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 3 + 1);
    shmq_ref_t ref = {.addr = (uint64_t)(uintptr_t)data, .len = sizeof(data)};

    /* A message, a reference, a message: three deliveries in order; the
     * reference with its header and the fetched bytes. */
    uint8_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(shmq_put_frag(&p, 0, sizeof(small), small,
                                   sizeof(small), NULL, 0, 0), 8);
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    uint64_t ref_end = p.tail;
    assert_int_equal(shmq_put_frag(&p, 0, sizeof(small), small,
                                   sizeof(small), NULL, 0, 0), 8);
    assert_int_equal(shmq_poll(&c, 16, scratch, ref_deliver, ref_drop, &r),
                     3);
    assert_int_equal(r.sink.delivered, 3);
    assert_int_equal(r.fetched, 1);
    /* The head passed the reference only after its fetch. */
    assert_true(r.head_at_fetch < ref_end);
    assert_true(atomic_load(&ctl.head) >= ref_end);
    assert_int_equal(r.sink.dropped, 0);

    /* Alone, to look at what was delivered. */
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    assert_int_equal(shmq_poll(&c, 16, scratch, ref_deliver, ref_drop, &r),
                     1);
    assert_int_equal(r.hdr_len, sizeof(hdr));
    assert_memory_equal(r.hdr, hdr, sizeof(hdr));
    assert_int_equal(r.data_len, sizeof(data));
    assert_memory_equal(r.data, data, sizeof(data));

    /* Two references back to back: one fetch, two deliveries. */
    unsigned b0 = r.batches, d0 = r.sink.delivered;
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    assert_int_equal(shmq_poll(&c, 16, scratch, ref_deliver, ref_drop, &r),
                     2);
    assert_int_equal(r.batches, b0 + 1);
    assert_int_equal(r.sink.delivered, d0 + 2);
    assert_memory_equal(r.data, data, sizeof(data));

    /* A header that leaves no room for the reference in one entry. */
    uint8_t long_hdr[MAXL * SHMQ_LINE];
    memset(long_hdr, 1, sizeof(long_hdr));
    assert_int_equal(shmq_put_ref(&p, (uint16_t)(shmq_frag_max(MAXL) - 15),
                                  long_hdr, &ref), -1);

    /* A failed fetch: dropped, the queue read no more, nothing handed. */
    r.fail = true;
    unsigned before = r.sink.delivered;
    uint64_t head   = c.head;
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    assert_int_equal(shmq_poll(&c, 16, scratch, ref_deliver, ref_drop, &r),
                     0);
    assert_int_equal(r.sink.dropped, 1);
    assert_true(c.broken);
    assert_int_equal(c.head, head);
    assert_int_equal(r.sink.delivered, before);
    shmq_cons_fini(&c);
    shmq_prod_fini(&p);

    /* A consumer without a fetch refuses references. */
    shmq_cons_t plain;
    ref_queue(ring, &ctl, &p, &plain, NULL);
    ref_sink_t  r2 = {0};
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    assert_int_equal(shmq_poll(&plain, 16, scratch, ref_deliver, ref_drop,
                               &r2), 0);
    assert_int_equal(r2.sink.dropped, 1);
    assert_int_equal(r2.sink.delivered, 0);
    shmq_cons_fini(&plain);
    shmq_prod_fini(&p);

    /* A reference entry whose payload is not a header and 16 bytes. */
    shmq_cons_t c3;
    ref_queue(ring, &ctl, &p, &c3, ref_fetch);
    ref_sink_t  r3 = {0};
    assert_int_equal(shmq_put_ref(&p, sizeof(hdr), hdr, &ref), 0);
    shmq_entry_t *e = (shmq_entry_t *)ring;
    e->total    = sizeof(hdr) + 20; /* 20 bytes after the header */
    e->frag_len = sizeof(hdr) + 20;
    assert_int_equal(shmq_poll(&c3, 16, scratch, ref_deliver, ref_drop, &r3),
                     0);
    assert_int_equal(r3.sink.dropped, 1);
    assert_int_equal(r3.fetched, 0);
    shmq_cons_fini(&c3);
    shmq_prod_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stale_payload),
        cmocka_unit_test(stamp_wrap),
        cmocka_unit_test(mixed_sizes),
        cmocka_unit_test(short_lap_then_grow),
        cmocka_unit_test(hostile_pads),
        cmocka_unit_test(put_line_as_put_frag),
        cmocka_unit_test(references),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

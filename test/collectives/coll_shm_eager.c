/*
 * The eager shared-memory broadcast (a ring of entries in the node's
 * segment, coll_alg_shm.c): broadcast_shm_eager by name, and through AUTO
 * where AUTO picks it (the query says which; AUTO's other picks run
 * their rounds among the ring calls). Results checked byte by byte, the
 * ring's calls counted against the names and the query.
 *
 *   coll_shm_eager loop N   N iterations of broadcasts of 0..4096 bytes
 *                           (every fourth of up to 16 KiB, beyond the
 *                           ring's dense entries)
 *                           with rotating roots (named and AUTO, blocking),
 *                           mixed with allreduce_shm, barrier_shm and 16 KiB
 *                           broadcast_shm (register rounds); every 250th
 *                           iteration 80 non-blocking broadcasts in flight
 *                           (more than the ring's 64 entries) with an
 *                           allreduce among them
 *   coll_shm_eager ahead    the root runs 300 calls ahead while the
 *                           others sleep 50 ms: all correct, no hang
 *   coll_shm_eager mismatch counts, roots and no root that differ between
 *                           tasks (blocking and not): PAMI_INVAL for the
 *                           readers that differ, nobody hangs, the next
 *                           call is right
 *   coll_shm_eager dead     the last task leaves in a loop: the others get
 *                           PAMI_PEER_FAILED, no hang
 */
#include "coll_util.h"

#include <unistd.h>

static mp_job_t  job;
static ct_geom_t world = {.name = "world"};
static size_t    n, me;

#define RING 64
#define RING_MAX 16384 /* CSHM_RING_MAX */

static bool auto_ring; /* more tasks than CPUs: ring calls go by AUTO */

static pami_xfer_t xfer(pami_xfer_type_t kind, const char *name, void *sbuf,
                        void *rbuf, size_t count, pami_type_t t, size_t root);

/* Whether AUTO takes the ring for a broadcast of bytes from root: only
 * where it picks broadcast_shm_eager (its broadcast_shm runs rounds). */
static bool auto_takes_ring(size_t bytes, size_t root)
{
    static uint8_t buf[RING_MAX + 1];
    if (bytes == 0 || bytes > RING_MAX)
        return false;
    pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, NULL, NULL, buf, bytes,
                         PAMI_TYPE_BYTE, root);
    pami_algorithm_selection_t sel;
    MP_CHECK(pami_geometry_algorithm_selected(&x, &sel));
    return sel.name != NULL && strcmp(sel.name, "broadcast_shm_eager") == 0;
}

/* The name for a call that must take the ring: AUTO with more tasks
 * than CPUs where AUTO picks the ring, else the ring's name (both kinds
 * of call are covered). */
static const char *ring_name(size_t bytes, size_t root)
{
    return auto_ring && auto_takes_ring(bytes, root) ? NULL
                                                     : "broadcast_shm_eager";
}


static pami_xfer_t xfer(pami_xfer_type_t kind, const char *name, void *sbuf,
                        void *rbuf, size_t count, pami_type_t t, size_t root)
{
    return ct_xfer(world.g, kind, name, sbuf, rbuf, count, t, root);
}

static uint64_t stat_of(const char *name)
{
    return ct_stat(job.ctx[0], "coll_shm", name);
}

static uint8_t pat(size_t i, size_t j, size_t root)
{
    return (uint8_t)(i * 7 + j * 13 + root * 31 + (j >> 8));
}

static void fill(uint8_t *buf, size_t i, size_t bytes, size_t root)
{
    for (size_t j = 0; j < bytes; j++)
        buf[j] = me == root ? pat(i, j, root) : 0xEE;
    buf[bytes] = 0x5A;
}

static void check(const uint8_t *buf, size_t i, size_t bytes, size_t root)
{
    for (size_t j = 0; j < bytes; j++)
        if (buf[j] != pat(i, j, root))
            mp_fail("call %zu: broadcast of %zu B from %zu: byte %zu is %u, "
                    "want %u", i, bytes, root, j, buf[j], pat(i, j, root));
    MP_EXPECT(buf[bytes] == 0x5A, "call %zu: broadcast wrote past", i);
}

static void bcast(size_t i, size_t bytes, size_t root, const char *name)
{
    static uint8_t buf[RING_MAX + 1];
    fill(buf, i, bytes, root);
    pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, name, NULL, buf, bytes,
                         PAMI_TYPE_BYTE, root);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    check(buf, i, bytes, root);
}

static double allreduce(double v)
{
    double out = -1;
    pami_xfer_t x = xfer(PAMI_XFER_ALLREDUCE, "allreduce_shm", &v, &out, 1,
                         PAMI_TYPE_DOUBLE, 0);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    return out;
}

static void check_allreduce(size_t i)
{
    double want = (double)(n * (n - 1) / 2 + n * (i % 1000));
    double got  = allreduce((double)(me + i % 1000));
    MP_EXPECT(got == want, "call %zu: allreduce %g, want %g", i, got, want);
}

static void wait_done(unsigned want)
{
    ct_wait_done(job.ctx[0], want);
}

/* 80 broadcasts in flight (and an allreduce among them). */
#define BURST 80
/* BURST broadcasts in flight, half named eager, half AUTO; returns how
 * many of them take the ring. */
static size_t burst(size_t i)
{
    size_t ring = 0;
    static uint8_t bufs[BURST][4097];
    static pami_xfer_t xs[BURST];
    double in = (double)me, out = -1;
    pami_xfer_t ar = xfer(PAMI_XFER_ALLREDUCE, "allreduce_shm", &in, &out, 1,
                          PAMI_TYPE_DOUBLE, 0);
    ar.done_fn = ct_on_done;
    ct_done_count = 0;
    for (size_t b = 0; b < BURST; b++) {
        size_t bytes = 1 + (i + b * 53) % 4096, root = (i + b) % n;
        fill(bufs[b], i + b, bytes, root);
        xs[b] = xfer(PAMI_XFER_BROADCAST, b % 2 ? "broadcast_shm_eager" : NULL,
                     NULL, bufs[b], bytes, PAMI_TYPE_BYTE, root);
        ring += b % 2 || auto_takes_ring(bytes, root);
        xs[b].done_fn = ct_on_done;
        xs[b].cookie  = (void *)(uintptr_t)(i + b);
        MP_CHECK(pami_collective(job.ctx[0], &xs[b]));
        if (b == BURST / 2)
            MP_CHECK(pami_collective(job.ctx[0], &ar));
    }
    wait_done(BURST + 1);
    for (size_t b = 0; b < BURST; b++)
        check(bufs[b], i + b, xs[b].count, xs[b].root);
    MP_EXPECT(out == (double)(n * (n - 1) / 2), "burst %zu: allreduce %g", i,
              out);
    return ring;
}

static void mode_loop(size_t iters)
{
    uint64_t ring0 = stat_of("ring_calls");
    size_t ring_calls = 0;
    pami_xfer_t bar = xfer(PAMI_XFER_BARRIER, "barrier_shm", NULL, NULL, 0,
                           PAMI_TYPE_BYTE, 0);
    for (size_t i = 0; i < iters; i++) {
        size_t bytes = i % 4 == 1 ? (i * 337) % (RING_MAX + 1)
                                  : (i * 37) % 4097;
        bcast(i, bytes, i % n, i % 3 == 0 ? "broadcast_shm_eager" : NULL);
        ring_calls += bytes > 0 && (i % 3 == 0 || auto_takes_ring(bytes, i % n));
        if (i % 7 == 3)
            check_allreduce(i);
        if (i % 13 == 5)
            MP_CHECK(pami_collective_wait(job.ctx[0], &bar));
        if (i % 101 == 50)
            bcast(i, 16384, (i + 1) % n, "broadcast_shm");
        if (i % 250 == 100) {
            ring_calls += burst(i);
        }
    }
    uint64_t got = stat_of("ring_calls") - ring0;
    MP_EXPECT(got == ring_calls, "ring calls %llu, expected %zu",
              (unsigned long long)got, ring_calls);
    if (me == 0)
        printf("coll_shm_eager loop: %zu tasks, %zu iterations, %zu ring "
               "calls, %llu ring sleeps here\n", n, iters, ring_calls,
               (unsigned long long)stat_of("ring_sleeps"));
}

/* ---- ahead ---- */

static void mode_ahead(void)
{
    enum { CALLS = 300 };
    static uint8_t bufs[CALLS][65];
    check_allreduce(0); /* the segment is set up: the root needs nobody */
    double t0 = mp_now();
    if (me != 0)
        usleep(50000);
    for (size_t i = 0; i < CALLS; i++) {
        size_t bytes = 1 + i % 64;
        fill(bufs[i], i, bytes, 0);
        pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, ring_name(bytes, 0), NULL,
                             bufs[i], bytes, PAMI_TYPE_BYTE, 0);
        MP_CHECK(pami_collective_wait(job.ctx[0], &x));
        if (me == 0 && i == RING - 1)
            MP_EXPECT(mp_now() - t0 < 0.045, "the root waited for the "
                      "others within the ring (%.3f s)", mp_now() - t0);
    }
    for (size_t i = 0; i < CALLS; i++)
        check(bufs[i], i, 1 + i % 64, 0);
    check_allreduce(1);
    if (me == 0)
        printf("coll_shm_eager ahead: %d calls, %.3f s\n", CALLS,
               mp_now() - t0);
}

/* ---- mismatch ---- */

static pami_result_t rc_any;

static void on_any(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)cookie;
    rc_any = rc;
}

static pami_result_t run(pami_xfer_t *x, bool blocking)
{
    if (blocking)
        return pami_collective_wait(job.ctx[0], x);
    rc_any     = PAMI_EAGAIN;
    x->done_fn = on_any;
    MP_CHECK(pami_collective(job.ctx[0], x));
    double t0 = mp_now();
    while (rc_any == PAMI_EAGAIN) {
        pami_context_wait(job.ctx[0], 100);
        MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "non-blocking: no end");
    }
    return rc_any;
}

static void mode_mismatch(void)
{
    size_t cases = 0;
    for (int form = 0; form < 4; form++) {
        bool blocking = form & 1;
        /* AUTO only where it takes the ring at both counts: a task's
         * AUTO picks by its own count. */
        const char *name = form < 2 && ring_name(8, 0) == ring_name(16, 0)
                               ? ring_name(8, 0)
                               : "broadcast_shm_eager";
        uint8_t b[33];
        pami_result_t rc;
        /* Counts: root 0 sends 8 B; odd tasks expect 16 B. */
        size_t count = 8 + 8 * (me % 2);
        fill(b, 100 + form, count, 0);
        pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, name, NULL, b, count,
                             PAMI_TYPE_BYTE, 0);
        rc = run(&x, blocking);
        if (me % 2) {
            MP_EXPECT(rc == PAMI_INVAL, "8 B against 16 B: %s",
                      pami_error_text(rc));
        } else {
            MP_EXPECT(rc == PAMI_SUCCESS, "8 B, same as the root: %s",
                      pami_error_text(rc));
            check(b, 100 + form, 8, 0);
        }
        cases++;
        bcast(form, 24, 1 % n, name);
        /* Roots 0 and 1 both: one wins the entry; a reader of the other
         * root and the other root fail. */
        size_t root = me % 2;
        fill(b, 200 + form, 16, root);
        x  = xfer(PAMI_XFER_BROADCAST, name, NULL, b, 16, PAMI_TYPE_BYTE,
                  root);
        rc = run(&x, blocking);
        MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_INVAL, "two roots: %s",
                  pami_error_text(rc));
        if (rc == PAMI_SUCCESS)
            check(b, 200 + form, 16, root);
        double roots_ok = allreduce(me == root && rc == PAMI_SUCCESS);
        MP_EXPECT(roots_ok == 1, "two roots: %g of them succeeded",
                  roots_ok);
        double winner = allreduce(me == root && rc == PAMI_SUCCESS
                                      ? (double)me : 0);
        size_t want = 0;
        for (size_t r = 2; r < n; r++)
            want += r % 2 == (size_t)winner;
        double readers_ok = allreduce(me != root && rc == PAMI_SUCCESS);
        MP_EXPECT(readers_ok == (double)want, "two roots (%g won): %g "
                  "readers succeeded, want %zu", winner, readers_ok, want);
        cases++;
        bcast(form, 32, 0, name);
        /* No root: every task names the next one. */
        x  = xfer(PAMI_XFER_BROADCAST, name, NULL, b, 8, PAMI_TYPE_BYTE,
                  (me + 1) % n);
        rc = run(&x, blocking);
        MP_EXPECT(rc == PAMI_INVAL, "no root: %s", pami_error_text(rc));
        cases++;
        bcast(form, 8, n - 1, name);
    }
    check_allreduce(3);
    if (me == 0)
        printf("coll_shm_eager mismatch: %zu tasks, %zu cases\n", n, cases);
}

/* ---- dead ---- */

static void mode_dead(void)
{
    size_t victim_at = 3000;
    double t0 = 0;
    pami_result_t rc = PAMI_SUCCESS;
    size_t i;
    uint8_t b[257];
    for (i = 0; rc == PAMI_SUCCESS; i++) {
        if (me == n - 1 && i == victim_at) {
            fflush(stdout);
            _exit(0);
        }
        if (i == victim_at)
            t0 = mp_now();
        /* A root may run up to the ring's length past the death. */
        MP_EXPECT(i < victim_at + RING + 10, "call %zu after the death", i);
        size_t bytes = 1 + i % 256, root = i % n;
        fill(b, i, bytes, root);
        pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, ring_name(bytes, root), NULL,
                             b, bytes, PAMI_TYPE_BYTE, root);
        rc = run(&x, i % 2 == 0);
        if (rc == PAMI_SUCCESS)
            check(b, i, bytes, root);
    }
    MP_EXPECT(i > victim_at, "failed at call %zu, before the death: %s", i,
              pami_error_text(rc));
    MP_EXPECT(rc == PAMI_PEER_FAILED, "broadcast with a dead task: %s",
              pami_error_text(rc));
    MP_EXPECT(mp_now() - t0 < 15, "took %.1f s to notice", mp_now() - t0);
    pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, ring_name(8, 0), NULL, b, 8,
                         PAMI_TYPE_BYTE, 0);
    rc = pami_collective_wait(job.ctx[0], &x);
    MP_EXPECT(rc == PAMI_PEER_FAILED, "after the death: %s",
              pami_error_text(rc));
    pami_client_destroy(&job.client); /* a task is gone: may fail */
    printf("coll_shm_eager dead: task %zu ok after %.2f s\n", me,
           mp_now() - t0);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_shm_eager", &argc, argv, NULL, 1, true);
    const char *mode = argc > 1 ? argv[1] : "loop";
    ct_world(&job, &world);
    n  = world.n;
    me = world.rank;
    MP_EXPECT(n >= 2 && n <= 64 && job.attr.num_local_tasks == job.size,
              "needs 2..64 tasks, all on this node");
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_LOCAL_CPUS};
    MP_CHECK(pami_client_query(job.client, &a));
    auto_ring = n > a.num_local_cpus;
    double t0 = mp_now();
    if (strcmp(mode, "dead") == 0) {
        mode_dead();
        return 0;
    }
    if (strcmp(mode, "loop") == 0)
        mode_loop(argc > 2 ? strtoull(argv[2], NULL, 10) : 1000);
    else if (strcmp(mode, "ahead") == 0)
        mode_ahead();
    else if (strcmp(mode, "mismatch") == 0)
        mode_mismatch();
    else
        mp_fail("unknown mode %s", mode);
    mp_sync(&job);
    if (me == 0)
        printf("coll_shm_eager %s: %.1f s\n", mode, mp_now() - t0);
    mp_finish(&job);
    return 0;
}

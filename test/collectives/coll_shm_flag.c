/*
 * Flag rounds of the shared-memory collectives (calls of up to 48 bytes
 * synchronised by numbers in their control lines, coll_alg_shm.c) mixed
 * with everything that still runs register rounds; results checked
 * element by element.
 *
 *   coll_shm_flag loop N    N iterations: tiny allreduce and broadcast
 *                           (blocking, AUTO and named, every root), every
 *                           5th also 56 B .. 8 KiB ones (slots) and an
 *                           allgather and alltoall of up to 2 KiB a task
 *                           (numbered lines from 49 to 512 B), every 8th also
 *                           non-blocking tiny allreduce, reduce, an
 *                           allgather of up to 1600 B and barrier_shm in
 *                           flight together,
 *                           every 97th a register-round allreduce and
 *                           broadcast; the counters show which rounds ran
 *   coll_shm_flag mismatch  counts and roots that differ between tasks,
 *                           tiny against tiny and tiny against a register
 *                           round, numbered lines against lines, tiny
 *                           and slots, blocking and not: PAMI_INVAL on every
 *                           task, then a correct call
 *   coll_shm_flag dead      the last task leaves in a loop of tiny calls:
 *                           the others get PAMI_PEER_FAILED, no hang
 */
#include "coll_util.h"

#include <unistd.h>

#include "pami_barrier.h"

static mp_job_t  job;
static ct_geom_t world = {.name = "world"};
static size_t    n, me;


static pami_xfer_t xfer(pami_xfer_type_t kind, const char *name, void *sbuf,
                        void *rbuf, size_t count, pami_type_t t, size_t root)
{
    return ct_xfer(world.g, kind, name, sbuf, rbuf, count, t, root);
}

static uint64_t stat_of(const char *name)
{
    return ct_stat(job.ctx[0], "coll_shm", name);
}

static size_t ncpus(void)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_LOCAL_CPUS};
    MP_CHECK(pami_client_query(job.client, &a));
    return a.num_local_cpus;
}

/* ---- loop ---- */

static void allreduce_sum(size_t i, size_t count, bool named)
{
    double in[1024], out[1025];
    for (size_t j = 0; j < count; j++)
        in[j] = (double)(me * 1000 + i % 1000 + j);
    out[count] = -1;
    pami_xfer_t x = xfer(PAMI_XFER_ALLREDUCE, named ? "allreduce_shm" : NULL,
                         in, out, count, PAMI_TYPE_DOUBLE, 0);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    for (size_t j = 0; j < count; j++) {
        double want = (double)(n * (n - 1) / 2 * 1000 +
                               n * (i % 1000 + j));
        if (out[j] != want)
            mp_fail("iteration %zu: allreduce element %zu: %g, want %g", i, j,
                    out[j], want);
    }
    MP_EXPECT(out[count] == -1, "iteration %zu: allreduce wrote past", i);
}

static void bcast(size_t i, size_t bytes, size_t root, bool named)
{
    uint8_t buf[8193];
    for (size_t j = 0; j < bytes; j++)
        buf[j] = me == root ? (uint8_t)(i * 7 + j + root) : 0xEE;
    buf[bytes] = 0x5A;
    pami_xfer_t x = xfer(PAMI_XFER_BROADCAST, named ? "broadcast_shm" : NULL,
                         NULL, buf, bytes, PAMI_TYPE_BYTE, root);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    for (size_t j = 0; j < bytes; j++)
        if (buf[j] != (uint8_t)(i * 7 + j + root))
            mp_fail("iteration %zu: broadcast from %zu: byte %zu is %u", i,
                    root, j, buf[j]);
    MP_EXPECT(buf[bytes] == 0x5A, "iteration %zu: broadcast wrote past", i);
}

/* Blocking allgather (named or AUTO) and alltoall_shm (in place every
 * other time) of bytes a task. */
static void gather_all(size_t i, size_t bytes, bool named)
{
    static uint8_t in[2048 * 64 + 1], out[2048 * 64 + 1];
    size_t total = bytes * n;
    for (size_t j = 0; j < bytes; j++)
        in[j] = (uint8_t)(me * 31 + i + j);
    out[total] = 0x5A;
    pami_xfer_t x = xfer(PAMI_XFER_ALLGATHER, named ? "allgather_shm" : NULL,
                         in, out, bytes, PAMI_TYPE_BYTE, 0);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < bytes; j++)
            if (out[r * bytes + j] != (uint8_t)(r * 31 + i + j))
                mp_fail("iteration %zu: allgather %zu B: block %zu byte %zu",
                        i, bytes, r, j);
    MP_EXPECT(out[total] == 0x5A, "iteration %zu: allgather wrote past", i);
    bool inplace = i % 2 == 1;
    uint8_t *src = inplace ? out : in;
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < bytes; j++)
            src[r * bytes + j] = (uint8_t)(me * 7 + r * 13 + i + j);
    pami_xfer_t y = xfer(PAMI_XFER_ALLTOALL, "alltoall_shm",
                         inplace ? PAMI_IN_PLACE : (void *)in, out, bytes,
                         PAMI_TYPE_BYTE, 0);
    MP_CHECK(pami_collective_wait(job.ctx[0], &y));
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < bytes; j++)
            if (out[r * bytes + j] != (uint8_t)(r * 7 + me * 13 + i + j))
                mp_fail("iteration %zu: alltoall %zu B%s: block %zu byte %zu",
                        i, bytes, inplace ? " in place" : "", r, j);
    MP_EXPECT(out[total] == 0x5A, "iteration %zu: alltoall wrote past", i);
}

static void wait_done(unsigned want)
{
    ct_wait_done(job.ctx[0], want);
}

/* Above CSHM_FLAG_MAX (8 KiB): register rounds. */
#define BIG 1500
#define BC  20000

/* Tiny allreduce (max), reduce (sum), allgather and a barrier_shm in
 * flight at once; every 97th (of those) a register-round allreduce and
 * broadcast join them. */
static void nonblocking(size_t i)
{
    int64_t ar_in[2], ar_out[2], rd_in[3], rd_out[3] = {-7, -7, -7};
    static int32_t ag_in[400], ag_out[400 * 64];
    static int64_t big_in[BIG], big_out[BIG];
    static uint8_t bc[BC];
    /* Up to 1600 B a task: a flag round (numbered lines from 49 to
     * 512 B). */
    size_t  agc = 1 + i * 7 % 400;
    size_t  root = (i / 3) % n, broot = (i + 1) % n;
    bool    big = i % 97 == 0;
    for (size_t j = 0; j < 2; j++)
        ar_in[j] = (int64_t)(me * 10 + j) * (j ? -1 : 1);
    for (size_t j = 0; j < 3; j++)
        rd_in[j] = (int64_t)(me + j + i);
    for (size_t j = 0; j < agc; j++)
        ag_in[j] = (int32_t)(me * 100000 + i % 1000 + j);
    for (size_t j = 0; j < BIG; j++)
        big_in[j] = (int64_t)(me + j * i);
    for (size_t j = 0; j < sizeof(bc); j++)
        bc[j] = me == broot ? (uint8_t)(j + i) : 0;
    pami_xfer_t x[6] = {
        xfer(PAMI_XFER_ALLREDUCE, i % 2 ? "allreduce_shm" : NULL, ar_in,
             ar_out, 2, PAMI_TYPE_INT64, 0),
        xfer(PAMI_XFER_REDUCE, "reduce_shm", rd_in, rd_out, 3,
             PAMI_TYPE_INT64, root),
        {.field_mask = PAMI_XFER_FIELD_ALGORITHM, .kind = PAMI_XFER_BARRIER,
         .geometry = world.g, .algorithm = ct_algo("barrier_shm")},
        xfer(PAMI_XFER_ALLGATHER, "allgather_shm", ag_in, ag_out, agc,
             PAMI_TYPE_INT32, 0),
        xfer(PAMI_XFER_ALLREDUCE, "allreduce_shm", big_in, big_out, BIG,
             PAMI_TYPE_INT64, 0),
        xfer(PAMI_XFER_BROADCAST, "broadcast_shm", NULL, bc, sizeof(bc),
             PAMI_TYPE_BYTE, broot)};
    x[0].op = PAMI_OP_MAX;
    size_t nx = big ? 6 : 4;
    ct_done_count = 0;
    for (size_t k = 0; k < nx; k++) {
        x[k].done_fn = ct_on_done;
        x[k].cookie  = (void *)(uintptr_t)k;
        MP_CHECK(pami_collective(job.ctx[0], &x[k]));
    }
    wait_done((unsigned)nx);
    MP_EXPECT(ar_out[0] == (int64_t)((n - 1) * 10) && ar_out[1] == -1,
              "iteration %zu: max gave %lld %lld", i, (long long)ar_out[0],
              (long long)ar_out[1]);
    for (size_t j = 0; j < 3; j++) {
        int64_t want = me == root ? (int64_t)(n * (n - 1) / 2 + n * (j + i))
                                  : -7;
        MP_EXPECT(rd_out[j] == want, "iteration %zu: reduce to %zu element "
                  "%zu: %lld, want %lld", i, root, j, (long long)rd_out[j],
                  (long long)want);
    }
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < agc; j++)
            MP_EXPECT(ag_out[r * agc + j] ==
                          (int32_t)(r * 100000 + i % 1000 + j),
                      "iteration %zu: allgather block %zu element %zu", i, r,
                      j);
    if (!big)
        return;
    for (size_t j = 0; j < BIG; j++)
        MP_EXPECT(big_out[j] == (int64_t)(n * (n - 1) / 2 + n * j * i),
                  "iteration %zu: large allreduce element %zu", i, j);
    for (size_t j = 0; j < sizeof(bc); j++)
        MP_EXPECT(bc[j] == (uint8_t)(j + i), "iteration %zu: large broadcast "
                  "byte %zu", i, j);
}

static void mode_loop(size_t iters)
{
    uint64_t flags0 = stat_of("flag_rounds"), lines0 = stat_of("line_rounds");
    for (size_t i = 0; i < iters; i++) {
        allreduce_sum(i, 1 + i % 6, i % 2 == 0);
        bcast(i, 1 + i % 48, i % n, i % 4 < 2);
        /* One round in the slots: flag rounds too, up to 8 KiB. */
        if (i % 5 == 0) {
            allreduce_sum(i, 7 + i % 1017, i % 2 == 1);
            bcast(i, 49 + i % 8144, (i + 1) % n, true);
            gather_all(i, 1 + i * 13 % 2048, i % 10 == 0);
        }
        if (i % 8 == 0)
            nonblocking(i);
        if (i % 101 == 0)
            MP_CHECK(pami_barrier_wait(job.ctx[0], PAMI_BARRIER_SHM, NULL,
                                       0));
    }
    uint64_t flags = stat_of("flag_rounds") - flags0;
    const char *env = getenv("PAMI_COLL_SHM_FLAG");
    bool expect = env != NULL && strcmp(env, "2") == 0
                      ? true
                      : (env == NULL || strcmp(env, "0") != 0) &&
                            job.size <= ncpus();
    /* At least the allreduces (AUTO picks shared memory for them; for a
     * broadcast only with no more tasks than CPUs). */
    uint64_t lines = stat_of("line_rounds") - lines0;
    /* Some of every 5th iteration's allgathers and alltoalls and of the
     * non-blocking allgathers (how many is incidental). */
    if (expect)
        MP_EXPECT(flags >= iters && lines > 0,
                  "%llu flag rounds, %llu through lines in %zu iterations",
                  (unsigned long long)flags, (unsigned long long)lines,
                  iters);
    else
        MP_EXPECT(flags == 0 && lines == 0, "%llu flag rounds, expected "
                  "none", (unsigned long long)flags);
    if (me == 0)
        printf("coll_shm_flag loop: %zu tasks, %zu iterations, %llu flag "
               "rounds, %llu slept\n", n, iters, (unsigned long long)flags,
               (unsigned long long)stat_of("flag_sleeps"));
}

/* ---- mismatch ---- */

static pami_result_t rc_any;

static void on_any(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)cookie;
    rc_any = rc;
}

/* x on every task (blocking or not): PAMI_INVAL everywhere. */
static void expect_inval(pami_xfer_t *x, bool blocking, const char *what)
{
    pami_result_t rc;
    if (blocking) {
        rc = pami_collective_wait(job.ctx[0], x);
    } else {
        rc_any     = PAMI_EAGAIN;
        x->done_fn = on_any;
        MP_CHECK(pami_collective(job.ctx[0], x));
        double t0 = mp_now();
        while (rc_any == PAMI_EAGAIN) {
            pami_context_wait(job.ctx[0], 100);
            MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "%s: no end", what);
        }
        rc = rc_any;
    }
    MP_EXPECT(rc == PAMI_INVAL, "%s (%s): %s", what,
              blocking ? "blocking" : "non-blocking", pami_error_text(rc));
}

static void mode_mismatch(void)
{
    uint64_t mis0 = stat_of("mismatches");
    size_t cases = 0;
    for (int form = 0; form < 4; form++) {
        bool blocking = form & 1;
        double in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
        /* Tiny against tiny (1 or 2 doubles), and a flag round (6
         * doubles) against a register round (1100, above 8 KiB). */
        static double big_in[1100], big_out[1100];
        size_t count = form < 2 ? 1 + me % 2 : me % 2 ? 1100 : 6;
        pami_xfer_t x = xfer(PAMI_XFER_ALLREDUCE, "allreduce_shm",
                             count > 8 ? big_in : in,
                             count > 8 ? big_out : out, count,
                             PAMI_TYPE_DOUBLE, 0);
        expect_inval(&x, blocking, form < 2 ? "allreduce 8 B against 16 B"
                                            : "allreduce 48 B against 8800 B");
        cases++;
        allreduce_sum(form, 3, true);
        /* Roots differ. */
        uint8_t b[8] = {0};
        pami_xfer_t y = xfer(PAMI_XFER_BROADCAST, "broadcast_shm", NULL, b,
                             8, PAMI_TYPE_BYTE, me % 2);
        expect_inval(&y, blocking, "broadcast with roots 0 and 1");
        cases++;
        bcast(form, 8, 1 % n, true);
        /* Numbered lines against lines (100 or 200 B), against a tiny
         * call (8 B) and against the slots (3000 B). */
        static uint8_t g_in[100 * 64 + 3000], g_out[3000 * 64];
        size_t gc = form == 0 ? 100 + 100 * (me % 2)
                    : form == 1 ? (me % 2 ? 8 : 200)
                                : (me % 2 ? 3000 : 300);
        pami_xfer_t z = xfer(PAMI_XFER_ALLGATHER, "allgather_shm", g_in,
                             g_out, gc, PAMI_TYPE_BYTE, 0);
        expect_inval(&z, blocking, form == 0   ? "allgather 100 B against 200"
                                   : form == 1 ? "allgather 200 B against 8"
                                               : "allgather 300 B against 3000");
        cases++;
        gather_all(form, 200, true);
        /* 100 B blocks against 20 B ones: lines against a tiny call at
         * 2 tasks, against lines above. */
        size_t ac = me % 2 ? 100 : 20;
        pami_xfer_t w = xfer(PAMI_XFER_ALLTOALL, "alltoall_shm", g_in, g_out,
                             ac, PAMI_TYPE_BYTE, 0);
        expect_inval(&w, blocking, "alltoall of two sizes");
        cases++;
    }
    /* Every task saw every mismatch (the odd pairs with a register round
     * too: the flag side reads the other's line). */
    MP_EXPECT(stat_of("mismatches") - mis0 == cases, "mismatches %llu, "
              "expected %zu", (unsigned long long)(stat_of("mismatches") -
                                                   mis0), cases);
    if (me == 0)
        printf("coll_shm_flag mismatch: %zu tasks, %zu cases\n", n, cases);
}

/* ---- dead ---- */

static void mode_dead(void)
{
    size_t victim_at = 2000;
    double t0 = 0;
    pami_result_t rc = PAMI_SUCCESS;
    size_t i;
    for (i = 0; rc == PAMI_SUCCESS; i++) {
        if (me == n - 1 && i == victim_at) {
            fflush(stdout);
            _exit(0);
        }
        if (i == victim_at)
            t0 = mp_now();
        MP_EXPECT(i < victim_at + 10, "iteration %zu after the death", i);
        double in = 1, out = 0;
        pami_xfer_t x = xfer(PAMI_XFER_ALLREDUCE, "allreduce_shm", &in, &out,
                             1, PAMI_TYPE_DOUBLE, 0);
        if (i % 2 == 0) {
            rc = pami_collective_wait(job.ctx[0], &x);
        } else {
            rc_any    = PAMI_EAGAIN;
            x.done_fn = on_any;
            MP_CHECK(pami_collective(job.ctx[0], &x));
            double t1 = mp_now();
            while (rc_any == PAMI_EAGAIN) {
                pami_context_wait(job.ctx[0], 100);
                MP_EXPECT(mp_now() - t1 < 20, "non-blocking: no end");
            }
            rc = rc_any;
        }
        if (rc == PAMI_SUCCESS)
            MP_EXPECT(out == (double)n, "iteration %zu: %g", i, out);
    }
    MP_EXPECT(i > victim_at, "failed at iteration %zu, before the death: %s",
              i, pami_error_text(rc));
    MP_EXPECT(rc == PAMI_PEER_FAILED, "tiny allreduce with a dead task: %s",
              pami_error_text(rc));
    MP_EXPECT(mp_now() - t0 < 15, "took %.1f s to notice", mp_now() - t0);
    double in = 1, out = 0;
    pami_xfer_t x = xfer(PAMI_XFER_ALLREDUCE, "allreduce_shm", &in, &out, 1,
                         PAMI_TYPE_DOUBLE, 0);
    rc = pami_collective_wait(job.ctx[0], &x);
    MP_EXPECT(rc == PAMI_PEER_FAILED, "after the death: %s",
              pami_error_text(rc));
    pami_client_destroy(&job.client); /* a task is gone: may fail */
    printf("coll_shm_flag dead: task %zu ok after %.2f s\n", me,
           mp_now() - t0);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_shm_flag", &argc, argv, NULL, 1, true);
    const char *mode = argc > 1 ? argv[1] : "loop";
    ct_world(&job, &world);
    n  = world.n;
    me = world.rank;
    MP_EXPECT(n >= 2 && n <= 64 && job.attr.num_local_tasks == job.size,
              "needs 2..64 tasks, all on this node");
    double t0 = mp_now();
    if (strcmp(mode, "dead") == 0) {
        mode_dead();
        return 0;
    }
    if (strcmp(mode, "loop") == 0)
        mode_loop(argc > 2 ? strtoull(argv[2], NULL, 10) : 1000);
    else if (strcmp(mode, "mismatch") == 0)
        mode_mismatch();
    else
        mp_fail("unknown mode %s", mode);
    mp_sync(&job);
    if (me == 0)
        printf("coll_shm_flag %s: %.1f s\n", mode, mp_now() - t0);
    mp_finish(&job);
    return 0;
}

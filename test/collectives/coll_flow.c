/*
 * Flow control (collectives/coll_flow.c): tasks whose part of a call ends
 * without a slow member stream calls ahead of it, with small bounds on
 * the messages a member keeps for later (set in the test's env). Without
 * flow control the slow member drops messages past the bounds and its
 * collective waits for ever; with it, every value arrives, nothing is
 * dropped and the job ends.
 *
 *   coll_flow bcast N   root 0 streams N small broadcasts (every 16th a
 *                       scatter), half blocking, half non-blocking; the
 *                       last rank starts 2 s late
 *   coll_flow large N   N broadcasts of 64 KiB to 1 MiB (binomial and
 *                       pipelined chain, in pieces), half non-blocking
 *   coll_flow leaves N  the leaves stream N gathers and reduces to root
 *                       0, which starts 2 s late
 * Between the three, two geometries (the world and its reverse) take
 * turns, so windows of both are open at once.
 */
#include "coll_util.h"

#include <stdlib.h>
#include <string.h>

static mp_job_t job;
#define CTX (job.ctx[0])
#define BATCH 64

static pami_algorithm_t algo(const char *name)
{
    pami_algorithm_t id;
    MP_CHECK(pami_algorithm_by_name(name, &id));
    return id;
}

typedef struct {
    bool done;
    int  rc;
} flag_t;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    flag_t *f = cookie;
    f->rc   = rc;
    f->done = true;
}

/* Runs x, blocking or not (then f tracks it). */
static void run(pami_xfer_t *x, bool blocking, flag_t *f)
{
    x->field_mask |= PAMI_XFER_FIELD_ALGORITHM;
    if (blocking) {
        MP_CHECK(pami_collective_wait(CTX, x));
        return;
    }
    f->done = false;
    x->done_fn = on_done;
    x->cookie  = f;
    MP_CHECK(pami_collective(CTX, x));
}

static void wait_all(flag_t *f, size_t n, size_t at)
{
    for (size_t k = 0; k < n; k++) {
        MP_WAIT(&job, CTX, f[k].done, MP_WAIT_S, "call %zu", at + k);
        if (f[k].rc != PAMI_SUCCESS)
            mp_fail("call %zu: %s", at + k, pami_error_text(f[k].rc));
    }
}

/* The slow member: handles what comes, for 2 s, before its first call. */
static void late(bool me)
{
    if (!me)
        return;
    double until = mp_now() + 2.0;
    while (mp_now() < until)
        pami_context_wait(CTX, 10);
}

/* The root of every call: task 0, whatever its rank in the geometry. */
static size_t root_of(const ct_geom_t *cg)
{
    for (size_t r = 0; r < cg->n; r++)
        if (cg->tasks[r] == 0)
            return r;
    mp_fail("task 0 is not in geometry %s", cg->name);
}

static int64_t value(size_t i, size_t k)
{
    return (int64_t)(i * 7919 + k * 31 + 1);
}

static void bcast(ct_geom_t *gs, size_t n)
{
    pami_algorithm_t bin = algo("broadcast_binomial"),
                     sca = algo("scatter_linear");
    int64_t (*buf)[8] = calloc(BATCH, sizeof(*buf));
    int64_t *srcs = calloc(BATCH * 8 * job.size, sizeof(int64_t));
    flag_t *f = calloc(BATCH, sizeof(*f));
    late(job.me == job.size - 1);
    for (size_t i = 0; i < n; i += BATCH) {
        bool blocking = i < n / 2;
        size_t m = n - i < BATCH ? n - i : BATCH;
        for (size_t k = 0; k < m; k++) {
            ct_geom_t *cg = &gs[(i + k) / 100 % 2];
            bool scatter = (i + k) % 16 == 15;
            bool root_rank = cg->rank == root_of(cg);
            for (size_t e = 0; e < 8; e++)
                buf[k][e] = root_rank ? value(i + k, e) : -1;
            int64_t *src = &srcs[k * 8 * job.size];
            for (size_t e = 0; e < 8 * cg->n; e++)
                src[e] = value(i + k, e);
            pami_xfer_t x = {.kind = scatter ? PAMI_XFER_SCATTER
                                             : PAMI_XFER_BROADCAST,
                             .geometry = cg->g, .root = root_of(cg),
                             .algorithm = scatter ? sca : bin,
                             .sbuf = scatter ? src : NULL, .rbuf = buf[k],
                             .count = scatter ? 8 : 1 + (i + k) % 8,
                             .dtype = PAMI_TYPE_INT64};
            if (scatter && root_rank)
                memset(buf[k], 0xff, sizeof(buf[k]));
            run(&x, blocking, &f[k]);
            if (!blocking)
                continue;
            for (size_t e = 0; e < x.count; e++) {
                int64_t want = value(i + k, scatter ? cg->rank * 8 + e : e);
                if (buf[k][e] != want)
                    mp_fail("call %zu element %zu: %lld, expected %lld",
                            i + k, e, (long long)buf[k][e], (long long)want);
            }
        }
        if (blocking)
            continue;
        wait_all(f, m, i);
        for (size_t k = 0; k < m; k++) {
            ct_geom_t *cg = &gs[(i + k) / 100 % 2];
            bool scatter = (i + k) % 16 == 15;
            size_t cnt = scatter ? 8 : 1 + (i + k) % 8;
            for (size_t e = 0; e < cnt; e++) {
                int64_t want = value(i + k, scatter ? cg->rank * 8 + e : e);
                if (buf[k][e] != want)
                    mp_fail("call %zu element %zu: %lld, expected %lld",
                            i + k, e, (long long)buf[k][e], (long long)want);
            }
        }
    }
    free(buf);
    free(srcs);
    free(f);
}

static void large(ct_geom_t *gs, size_t n)
{
    static const size_t sizes[] = {64 * 1024, 192 * 1024 + 8, 1024 * 1024};
    pami_algorithm_t bin = algo("broadcast_binomial"),
                     chain = algo("broadcast_pipelined_chain");
    enum { NB = 4 };
    unsigned char *buf[NB];
    flag_t f[NB];
    for (int k = 0; k < NB; k++)
        buf[k] = malloc(1024 * 1024);
    late(job.me == job.size - 1);
    for (size_t i = 0; i < n; i += NB) {
        bool blocking = i < n / 2;
        size_t m = n - i < NB ? n - i : NB;
        for (size_t k = 0; k < m; k++) {
            size_t c = i + k, bytes = sizes[c % 3];
            ct_geom_t *cg = &gs[c / 10 % 2];
            for (size_t e = 0; e < bytes; e++)
                buf[k][e] = cg->rank == root_of(cg)
                                ? (unsigned char)(c + e * 13) : 0;
            pami_xfer_t x = {.kind = PAMI_XFER_BROADCAST, .geometry = cg->g,
                             .root = root_of(cg),
                             .algorithm = bytes >= 256 * 1024 && c % 2
                                              ? chain : bin,
                             .rbuf = buf[k], .count = bytes,
                             .dtype = PAMI_TYPE_BYTE};
            run(&x, blocking, &f[k]);
        }
        if (!blocking)
            wait_all(f, m, i);
        for (size_t k = 0; k < m; k++) {
            size_t c = i + k, bytes = sizes[c % 3];
            for (size_t e = 0; e < bytes; e++)
                if (buf[k][e] != (unsigned char)(c + e * 13))
                    mp_fail("call %zu byte %zu: %u, expected %u", c, e,
                            buf[k][e], (unsigned char)(c + e * 13));
        }
    }
    for (int k = 0; k < NB; k++)
        free(buf[k]);
}

static void leaves(ct_geom_t *gs, size_t n)
{
    pami_algorithm_t gl = algo("gather_linear"), gb = algo("gather_binomial"),
                     rb = algo("reduce_binomial");
    size_t nmax = job.size;
    int64_t *out = calloc(BATCH * nmax, sizeof(int64_t));
    int64_t *in  = calloc(BATCH, sizeof(int64_t));
    flag_t  *f   = calloc(BATCH, sizeof(*f));
    late(job.me == 0);
    for (size_t i = 0; i < n; i += BATCH) {
        bool blocking = i < n / 2;
        size_t m = n - i < BATCH ? n - i : BATCH;
        for (size_t k = 0; k < m; k++) {
            size_t c = i + k;
            ct_geom_t *cg = &gs[c / 100 % 2];
            bool reduce = c % 3 == 2;
            in[k] = value(c, cg->rank);
            pami_xfer_t x = {.kind = reduce ? PAMI_XFER_REDUCE
                                            : PAMI_XFER_GATHER,
                             .geometry = cg->g, .root = root_of(cg),
                             .algorithm = reduce ? rb : c % 2 ? gl : gb,
                             .sbuf = &in[k], .rbuf = &out[k * nmax],
                             .count = 1, .dtype = PAMI_TYPE_INT64,
                             .op = PAMI_OP_SUM};
            run(&x, blocking, &f[k]);
        }
        if (!blocking)
            wait_all(f, m, i);
        for (size_t k = 0; k < m; k++) {
            size_t c = i + k;
            ct_geom_t *cg = &gs[c / 100 % 2];
            if (cg->rank != root_of(cg))
                continue;
            if (c % 3 == 2) {
                int64_t want = 0;
                for (size_t r = 0; r < cg->n; r++)
                    want += value(c, r);
                if (out[k * nmax] != want)
                    mp_fail("reduce %zu: %lld, expected %lld", c,
                            (long long)out[k * nmax], (long long)want);
            } else {
                for (size_t r = 0; r < cg->n; r++)
                    if (out[k * nmax + r] != value(c, r))
                        mp_fail("gather %zu rank %zu: %lld, expected %lld",
                                c, r, (long long)out[k * nmax + r],
                                (long long)value(c, r));
            }
        }
    }
    free(out);
    free(in);
    free(f);
}

/* A counter, or -1 when this build has none (to run the test against a
 * library without flow control: it then fails by its drops or hangs). */
static long long opt_stat(const char *name)
{
    pami_protocol_stat_t st[64];
    size_t ns;
    MP_CHECK(pami_protocol_stats(CTX, "collectives", st, 64, &ns));
    for (size_t i = 0; i < ns && i < 64; i++)
        if (strcmp(st[i].name, name) == 0)
            return (long long)st[i].value;
    return -1;
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_flow", &argc, argv, NULL, 1, true);
    if (argc < 3)
        mp_fail("usage: coll_flow bcast|large|leaves N");
    size_t n = strtoul(argv[2], NULL, 10);
    ct_geom_t gs[2];
    ct_world(&job, &gs[0]);
    gs[0].name = "world";
    /* The world's tasks in reverse; task 0 is the root on both. */
    pami_task_t *rev = malloc(job.size * sizeof(*rev));
    for (size_t t = 0; t < job.size; t++)
        rev[t] = (pami_task_t)(job.size - 1 - t);
    if (!ct_create(&job, &gs[1], "reverse", 7, rev, job.size, NULL))
        mp_fail("not in the reverse geometry");
    free(rev);
    mp_sync(&job);
    double t0 = mp_now();
    if (strcmp(argv[1], "bcast") == 0)
        bcast(gs, n);
    else if (strcmp(argv[1], "large") == 0)
        large(gs, n);
    else if (strcmp(argv[1], "leaves") == 0)
        leaves(gs, n);
    else
        mp_fail("unknown mode %s", argv[1]);
    uint64_t dropped = ct_stat(CTX, "collectives", "kept_dropped");
    uint64_t failed  = ct_stat(CTX, "collectives", "collectives_failed");
    printf("coll_flow %s: task %u: %zu calls in %.2f s, kept_dropped %llu, "
           "waiting_high_water %llu, flow_syncs %lld, flow_waits %lld, "
           "flow_prepended %lld\n", argv[1], job.me, n, mp_now() - t0,
           (unsigned long long)dropped,
           (unsigned long long)ct_stat(CTX, "collectives",
                                       "waiting_high_water"),
           opt_stat("flow_syncs"), opt_stat("flow_waits"),
           opt_stat("flow_prepended"));
    MP_EXPECT(dropped == 0, "%llu messages dropped",
              (unsigned long long)dropped);
    MP_EXPECT(failed == 0, "%llu collectives failed",
              (unsigned long long)failed);
    MP_CHECK(pami_geometry_destroy(&gs[1].g));
    mp_finish(&job);
    return 0;
}

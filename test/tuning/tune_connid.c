/*
 * The client-wide ConnID count (PAMI_CONNID_GLOBAL_THRESHOLD, set to 32
 * by meson).
 *
 *   tune_connid global    8 geometries, 16 non-blocking allreduces in
 *                         flight on each, started in the same order on
 *                         every task: calls wait for the client's count,
 *                         all complete with the right sums, the count's
 *                         high-water mark stays at or below 32
 *   tune_connid threads   three contexts each driven by its own thread,
 *                         64 calls at once on each (PAMI_CONNID_THRESHOLD
 *                         16 per geometry): the threads reserve units of
 *                         the one count with compare-and-swap, so the mark
 *                         stays at or below 32 as well. (Three contexts
 *                         of 16 on two tasks cannot deadlock at 32: a
 *                         task's count is full with two contexts, and the
 *                         other task's full count shares one with it.)
 */
#include "../collectives/coll_util.h"

#include <pthread.h>

#define GEOMS 8
#define PER   16
#define LIMIT 32
#define COUNT 4
#define NCTX 3

static mp_job_t job;
static int64_t  in[GEOMS][PER][COUNT], out[GEOMS][PER][COUNT];

static uint64_t stat(pami_context_t ctx, const char *name)
{
    return ct_stat(ctx, "collectives", name);
}

static void expect_limits(pami_context_t ctx, bool waits)
{
    uint64_t hw = stat(ctx, "connid_global_high_water");
    MP_EXPECT(stat(ctx, "connid_global_threshold") == LIMIT,
              "global threshold %llu",
              (unsigned long long)stat(ctx, "connid_global_threshold"));
    MP_EXPECT(hw <= LIMIT && hw > 0, "global high water %llu",
              (unsigned long long)hw);
    MP_EXPECT(stat(ctx, "connid_global_overruns") == 0, "overruns");
    if (waits)
        MP_EXPECT(stat(ctx, "connid_global_waits") > 0, "no global waits");
    MP_EXPECT(stat(ctx, "connid_global_in_use") == 0, "units left in use");
}

static void global(void)
{
    ct_geom_t w, g[GEOMS];
    ct_world(&job, &w);
    pami_task_t tasks[64];
    if (w.n > 64)
        mp_fail("at most 64 tasks");
    for (size_t k = 0; k < GEOMS; k++) {
        for (size_t i = 0; i < w.n; i++)
            tasks[i] = (pami_task_t)((i + k) % w.n); /* rotated */
        if (!ct_create(&job, &g[k], "rotated", (uint32_t)(20 + k), tasks,
                       w.n, NULL))
            mp_fail("not a member of geometry %zu", k);
    }
    pami_algorithm_t rd = ct_algo("allreduce_recursive_doubling");
    unsigned started = 0;
    for (size_t j = 0; j < PER; j++)
        for (size_t k = 0; k < GEOMS; k++) {
            for (size_t e = 0; e < COUNT; e++)
                in[k][j][e] = (int64_t)(g[k].rank * 1000 + j * 10 + e + k);
            pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                             .kind = PAMI_XFER_ALLREDUCE, .geometry = g[k].g,
                             .algorithm = rd, .done_fn = ct_on_done,
                             .cookie = (void *)(uintptr_t)started,
                             .sbuf = in[k][j], .rbuf = out[k][j],
                             .count = COUNT, .dtype = PAMI_TYPE_INT64,
                             .op = PAMI_OP_SUM};
            MP_CHECK(pami_collective(job.ctx[0], &x));
            started++;
            uint64_t iu = stat(job.ctx[0], "connid_global_in_use");
            MP_EXPECT(iu <= LIMIT, "%llu in use after call %u",
                      (unsigned long long)iu, started);
        }
    ct_wait_done(job.ctx[0], started);
    int64_t n = (int64_t)w.n, ranks = n * (n - 1) / 2 * 1000;
    for (size_t k = 0; k < GEOMS; k++)
        for (size_t j = 0; j < PER; j++)
            for (size_t e = 0; e < COUNT; e++) {
                int64_t want = ranks + n * (int64_t)(j * 10 + e + k);
                if (out[k][j][e] != want)
                    mp_fail("geometry %zu call %zu element %zu: %lld, not "
                            "%lld", k, j, e, (long long)out[k][j][e],
                            (long long)want);
            }
    expect_limits(job.ctx[0], true);
    for (size_t k = 0; k < GEOMS; k++)
        MP_CHECK(pami_geometry_destroy(&g[k].g));
}

typedef struct {
    size_t   c;
    unsigned done;
    int64_t  v[64][COUNT], r[64][COUNT];
} thr_t;

static void thr_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS)
        mp_fail("threads: %s", pami_error_text(rc));
    ((thr_t *)cookie)->done++;
}

static void *thread_main(void *arg)
{
    thr_t *t = arg;
    pami_context_t ctx = job.ctx[t->c];
    pami_geometry_t w;
    pami_context_lock(ctx);
    MP_CHECK(pami_geometry_world(ctx, &w));
    for (int round = 0; round < 20; round++) {
        unsigned want = t->done + 64;
        for (size_t j = 0; j < 64; j++) {
            for (size_t e = 0; e < COUNT; e++)
                t->v[j][e] = (int64_t)(j + e + t->c + job.me);
            pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = w,
                             .done_fn = thr_done, .cookie = t,
                             .sbuf = t->v[j], .rbuf = t->r[j],
                             .count = COUNT, .dtype = PAMI_TYPE_INT64,
                             .op = PAMI_OP_SUM};
            MP_CHECK(pami_collective(ctx, &x));
        }
        double t0 = mp_now();
        while (t->done < want) {
            pami_context_wait(ctx, 10);
            MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "threads: stuck");
        }
        for (size_t j = 0; j < 64; j++)
            for (size_t e = 0; e < COUNT; e++)
                MP_EXPECT(t->r[j][e] ==
                              (int64_t)job.size * (int64_t)(j + e + t->c) +
                                  (int64_t)(job.size * (job.size - 1) / 2),
                          "threads: call %zu element %zu", j, e);
    }
    pami_context_unlock(ctx);
    return NULL;
}

static void threads(void)
{
    static thr_t t[NCTX];
    pthread_t th[NCTX];
    for (size_t c = 0; c < NCTX; c++) {
        t[c].c = c;
        if (pthread_create(&th[c], NULL, thread_main, &t[c]) != 0)
            mp_fail("pthread_create");
    }
    for (size_t c = 0; c < NCTX; c++)
        pthread_join(th[c], NULL);
    expect_limits(job.ctx[0], false);
    for (size_t c = 1; c < NCTX; c++)
        MP_EXPECT(stat(job.ctx[c], "connid_global_high_water") ==
                      stat(job.ctx[0], "connid_global_high_water"),
                  "the contexts see different counts");
    printf("tune_connid threads: task %u: global high water %llu, %llu "
           "waits\n", job.me,
           (unsigned long long)stat(job.ctx[0], "connid_global_high_water"),
           (unsigned long long)stat(job.ctx[0], "connid_global_waits"));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    mp_init(&job, "tune_connid", &argc, argv, NULL,
            strcmp(mode, "threads") == 0 ? NCTX : 1, true);
    if (strcmp(mode, "global") == 0)
        global();
    else if (strcmp(mode, "threads") == 0)
        threads();
    else
        mp_fail("usage: tune_connid global | threads");
    mp_sync(&job);
    mp_finish(&job);
    return 0;
}

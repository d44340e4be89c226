/*
 * Online refinement (PAMI_COLL_TUNE=online, no profile; set by meson).
 * AUTO allreduces of three sizes and broadcasts, blocking and not, on
 * the world and on a reversed sub-geometry, every result checked while
 * the candidates are tried. At the end: every point has converged (the
 * query says "online" with the same algorithm on every call since), and
 * every task ran each algorithm the same number of times (the counters
 * per algorithm, gathered). Barriers too, whose dtype is not looked at
 * (here one no type has): with PAMI_COLL_PROFILE_OUT, task 0's profile
 * then lists the barrier as bytes, and the whole file loads.
 */
#include "../collectives/coll_util.h"

#define CALLS 120

static mp_job_t job;

static void allreduce(const ct_geom_t *cg, size_t count, bool blocking)
{
    int64_t in[1024], out[1024];
    if (count > 1024)
        mp_fail("count");
    for (size_t i = 0; i < count; i++)
        in[i] = (int64_t)(cg->rank * 5 + i);
    pami_xfer_t x = ct_xfer(cg->g, PAMI_XFER_ALLREDUCE, NULL, in, out, count,
                            PAMI_TYPE_INT64, 0);
    if (blocking) {
        MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    } else {
        unsigned want = ct_done_count + 1;
        x.done_fn = ct_on_done;
        MP_CHECK(pami_collective(job.ctx[0], &x));
        ct_wait_done(job.ctx[0], want);
    }
    int64_t n = (int64_t)cg->n;
    for (size_t i = 0; i < count; i++)
        if (out[i] != n * (n - 1) / 2 * 5 + n * (int64_t)i)
            mp_fail("%s: allreduce of %zu: element %zu is %lld", cg->name,
                    count, i, (long long)out[i]);
}

static void bcast(const ct_geom_t *cg, size_t bytes, size_t key)
{
    uint8_t buf[4096];
    if (cg->rank == 0)
        ct_fill(buf, key, bytes);
    else
        memset(buf, 0, bytes);
    pami_xfer_t x = ct_xfer(cg->g, PAMI_XFER_BROADCAST, NULL, NULL, buf,
                            bytes, PAMI_TYPE_BYTE, 0);
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    long bad = ct_check(buf, key, bytes);
    if (bad >= 0)
        mp_fail("%s: broadcast of %zu wrong at %ld", cg->name, bytes, bad);
}

static void expect_learnt(const ct_geom_t *cg, pami_xfer_type_t kind,
                          size_t count, pami_type_t t)
{
    pami_xfer_t x = ct_xfer(cg->g, kind, NULL, NULL, NULL, count, t, 0);
    pami_algorithm_selection_t s;
    MP_CHECK(pami_geometry_algorithm_selected(&x, &s));
    MP_EXPECT(s.reason == PAMI_SELECTED_ONLINE &&
                  strstr(s.why, "fastest") != NULL,
              "%s kind %d count %zu: not learnt (%s: %s)", cg->name,
              (int)kind, count, s.name, s.why);
}

int main(int argc, char **argv)
{
    mp_init(&job, "tune_online", &argc, argv, NULL, 1, true);
    ct_geom_t w, r;
    ct_world(&job, &w);
    pami_task_t rev[64];
    if (w.n > 64)
        mp_fail("at most 64 tasks");
    for (size_t i = 0; i < w.n; i++)
        rev[i] = (pami_task_t)(w.n - 1 - i);
    if (!ct_create(&job, &r, "reversed", 5, rev, w.n, NULL))
        mp_fail("not in the reversed geometry");
    static const size_t counts[] = {1, 64, 1024};
    for (int i = 0; i < CALLS; i++)
        for (size_t c = 0; c < 3; c++) {
            allreduce(&w, counts[c], i % 2 == 0);
            allreduce(&r, counts[c], i % 3 == 0);
            if (c == 1)
                bcast(&w, 100, (size_t)i);
        }
    for (int i = 0; i < CALLS; i++) {
        pami_xfer_t b = ct_xfer(w.g, PAMI_XFER_BARRIER, NULL, NULL, NULL, 0,
                                (pami_type_t)200, 0);
        MP_CHECK(pami_collective_wait(job.ctx[0], &b));
    }
    for (size_t c = 0; c < 3; c++) {
        expect_learnt(&w, PAMI_XFER_ALLREDUCE, counts[c], PAMI_TYPE_INT64);
        expect_learnt(&r, PAMI_XFER_ALLREDUCE, counts[c], PAMI_TYPE_INT64);
    }
    expect_learnt(&w, PAMI_XFER_BROADCAST, 100, PAMI_TYPE_BYTE);
    MP_EXPECT(ct_stat(job.ctx[0], "coll_select", "selected_online") > 0,
              "no online decision counted");

    /* Every task ran every algorithm as often: gather the counters. */
    pami_protocol_stat_t st[128];
    size_t ns;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "coll_select", st, 128, &ns));
    if (ns > 128)
        mp_fail("too many counters");
    uint64_t mine[128], all[64 * 128];
    for (size_t i = 0; i < ns; i++)
        mine[i] = st[i].value;
    pami_xfer_t x = {.kind = PAMI_XFER_ALLGATHER, .geometry = w.g,
                     .sbuf = mine, .rbuf = all, .count = ns,
                     .dtype = PAMI_TYPE_UINT64};
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    for (size_t t = 1; t < w.n; t++)
        for (size_t i = 0; i < ns; i++)
            if (all[t * ns + i] != all[i] &&
                strcmp(st[i].name, "table_mismatches") != 0)
                mp_fail("task %zu ran %s %llu times, task 0 %llu", t,
                        st[i].name, (unsigned long long)all[t * ns + i],
                        (unsigned long long)all[i]);
    if (job.me == 0) {
        printf("tune_online: %zu tasks;", w.n);
        for (size_t i = 0; i < ns; i++)
            if (all[i] > 0 && strncmp(st[i].name, "selected_", 9) != 0)
                printf(" %s %llu", st[i].name, (unsigned long long)all[i]);
        printf("\n");
    }
    MP_CHECK(pami_geometry_destroy(&r.g));
    mp_sync(&job);
    mp_finish(&job);
    /* Written when the context ended; every type in it must be one of
     * the profile's names (a barrier's: byte). */
    const char *out = getenv("PAMI_COLL_PROFILE_OUT");
    if (job.me == 0 && out != NULL) {
        FILE *f = fopen(out, "r");
        MP_EXPECT(f != NULL, "no profile written to %s", out);
        static char text[1 << 20];
        size_t len = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[len] = '\0';
        MP_EXPECT(strstr(text, "\"collective\":\"barrier\"") != NULL,
                  "%s: no barrier learnt", out);
        for (const char *b = strstr(text, "\"collective\":\"barrier\"");
             b != NULL; b = strstr(b + 1, "\"collective\":\"barrier\"")) {
            const char *t = strstr(b, "\"type\":");
            MP_EXPECT(t != NULL && strncmp(t, "\"type\":\"byte\"", 13) == 0,
                      "%s: a barrier entry's type is not byte: %.40s", out,
                      t != NULL ? t : "(none)");
        }
    }
    return 0;
}

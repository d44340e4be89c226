/*
 * Data-moving collectives on teams of several shapes (world, the even
 * PEs, rows and columns of a 2-d split): broadcast, collect, fcollect,
 * alltoall, alltoalls, typed and mem forms, from one element to sizes
 * past pami's rendezvous threshold. Every result is compared with what
 * a serial computation over the team's PEs gives.
 */
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

#define MAX_ELEMS 40000

static int me, npes;
static long *src, *dst;       /* symmetric, MAX_ELEMS * npes * 3 each */
static size_t cap;

/* The value world PE w puts at index k (to PE j for alltoall). */
static long val(int w, size_t k, int j)
{
    return (long)(w + 1) * 1000003L + (long)k * 7 + j * 131;
}

static void fill_dst(void)
{
    for (size_t i = 0; i < cap; i++)
        dst[i] = -1;
}

static void test_team(shmem_team_t team, const char *name)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    int n = shmem_team_n_pes(team), r = shmem_team_my_pe(team);
    int w[64];
    CHECK(n <= 64, "team too large");
    for (int i = 0; i < n; i++)
        w[i] = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
    size_t sizes[] = { 1, 3, 257, MAX_ELEMS };

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t ne = sizes[si];

        /* broadcast from the first and the last PE; the root's dest gets
         * the data too (team form). */
        int roots[2] = { 0, n - 1 };
        for (int ri = 0; ri < 2; ri++) {
            int root = roots[ri];
            for (size_t k = 0; k < ne; k++)
                src[k] = val(me, k, 0);
            fill_dst();
            CHECK(shmem_long_broadcast(team, dst, src, ne, root) == 0,
                  "%s: broadcast", name);
            for (size_t k = 0; k < ne; k++)
                CHECK(dst[k] == val(w[root], k, 0),
                      "%s: broadcast %zu from %d: [%zu] = %ld", name, ne,
                      root, k, dst[k]);
            CHECK(dst[ne] == -1, "%s: broadcast wrote past its end", name);
            /* in place (dest == source): from 1 KiB the root, which
             * then has no copy of its own, writes part of every dest */
            fill_dst();
            for (size_t k = 0; k < ne; k++)
                dst[k] = val(me, k, 2);
            CHECK(shmem_long_broadcast(team, dst, dst, ne, root) == 0,
                  "%s: broadcast in place", name);
            for (size_t k = 0; k < ne; k++)
                CHECK(dst[k] == val(w[root], k, 2),
                      "%s: broadcast in place %zu from %d: [%zu] = %ld",
                      name, ne, root, k, dst[k]);
            CHECK(dst[ne] == -1, "%s: broadcast in place wrote past its end",
                  name);
        }
        /* broadcastmem of an odd byte count: the bytes after it stay */
        fill_dst();
        for (size_t k = 0; k < ne; k++)
            src[k] = val(me, k, 1);
        size_t bytes = ne * sizeof(long) - 3;
        CHECK(shmem_broadcastmem(team, dst, src, bytes, n - 1) == 0,
              "%s: broadcastmem", name);
        for (size_t k = 0; k < ne; k++) {
            long want = val(w[n - 1], k, 1), got = dst[k];
            if (k == ne - 1) { /* the last long: its first bytes only */
                long keep = -1;
                memcpy(&keep, &want, sizeof(long) - 3);
                want = keep;
            }
            CHECK(got == want, "%s: broadcastmem %zu bytes: [%zu]", name,
                  bytes, k);
        }

        /* fcollect: ne from each PE, in PE order */
        for (size_t k = 0; k < ne; k++)
            src[k] = val(me, k, 2);
        fill_dst();
        CHECK(shmem_long_fcollect(team, dst, src, ne) == 0, "%s: fcollect",
              name);
        for (int i = 0; i < n; i++)
            for (size_t k = 0; k < ne; k++)
                CHECK(dst[(size_t)i * ne + k] == val(w[i], k, 2),
                      "%s: fcollect %zu: block %d [%zu]", name, ne, i, k);

        /* collect: team PE i gives ne + i elements (ne - i for the
         * largest size, to stay in the buffer) */
        size_t mine = si == 3 ? ne - (size_t)r : ne + (size_t)r;
        for (size_t k = 0; k < mine; k++)
            src[k] = val(me, k, 3);
        fill_dst();
        CHECK(shmem_long_collect(team, dst, src, mine) == 0, "%s: collect",
              name);
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            size_t theirs = si == 3 ? ne - (size_t)i : ne + (size_t)i;
            for (size_t k = 0; k < theirs; k++, at++)
                CHECK(dst[at] == val(w[i], k, 3),
                      "%s: collect: block %d [%zu] = %ld", name, i, k,
                      dst[at]);
        }
        CHECK(dst[at] == -1, "%s: collect wrote past its end", name);

        /* alltoall: block j of PE i goes to PE j's block i */
        if (ne * (size_t)n <= cap / 2) {
            for (int j = 0; j < n; j++)
                for (size_t k = 0; k < ne; k++)
                    src[(size_t)j * ne + k] = val(me, k, j);
            fill_dst();
            CHECK(shmem_long_alltoall(team, dst, src, ne) == 0,
                  "%s: alltoall", name);
            for (int i = 0; i < n; i++)
                for (size_t k = 0; k < ne; k++)
                    CHECK(dst[(size_t)i * ne + k] == val(w[i], k, r),
                          "%s: alltoall %zu: from %d [%zu]", name, ne, i, k);
        }
    }

    /* alltoalls: source stride 3, dest stride 2, 5 elements per PE */
    {
        size_t ne = 5;
        fill_dst();
        for (int j = 0; j < n; j++)
            for (size_t k = 0; k < ne; k++)
                src[3 * ((size_t)j * ne + k)] = val(me, k, j);
        CHECK(shmem_long_alltoalls(team, dst, src, 2, 3, ne) == 0,
              "%s: alltoalls", name);
        for (int i = 0; i < n; i++)
            for (size_t k = 0; k < ne; k++) {
                size_t at = 2 * ((size_t)i * ne + k);
                CHECK(dst[at] == val(w[i], k, r), "%s: alltoalls", name);
                CHECK(dst[at + 1] == -1, "%s: alltoalls wrote a gap", name);
            }
    }

    /* Other types and the mem forms, small. */
    {
        static char csrc[64], cdst[64 * 64]; /* globals: symmetric too */
        for (int k = 0; k < 64; k++)
            csrc[k] = (char)(me * 3 + k);
        CHECK(shmem_fcollectmem(team, cdst, csrc, 10) == 0, "%s: fcollectmem",
              name);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < 10; k++)
                CHECK(cdst[i * 10 + k] == (char)(w[i] * 3 + k),
                      "%s: fcollectmem", name);
        CHECK(shmem_collectmem(team, cdst, csrc, (size_t)r + 1) == 0,
              "%s: collectmem", name);
        int at = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k <= i; k++, at++)
                CHECK(cdst[at] == (char)(w[i] * 3 + k), "%s: collectmem",
                      name);
        CHECK(shmem_alltoallmem(team, cdst, csrc, 1) == 0, "%s: alltoallmem",
              name);
        for (int i = 0; i < n; i++)
            CHECK(cdst[i] == (char)(w[i] * 3 + r), "%s: alltoallmem", name);

        static double d[2];
        d[0] = me + 0.5;
        CHECK(shmem_double_broadcast(team, d + 1, d, 1, 0) == 0,
              "%s: double broadcast", name);
        CHECK(d[1] == w[0] + 0.5, "%s: double broadcast %g", name, d[1]);
    }
    CHECK(shmem_long_broadcast(team, dst, src, 1, n) != 0,
          "%s: a root outside the team is an error", name);
    CHECK(shmem_long_alltoalls(team, dst, src, 0, 1, 1) != 0,
          "%s: a stride of 0 is an error", name);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    cap = (size_t)MAX_ELEMS * 3 * (size_t)npes;
    src = shmem_malloc(cap * sizeof(long));
    dst = shmem_malloc(cap * sizeof(long));
    CHECK(src != NULL && dst != NULL, "symmetric buffers");

    test_team(SHMEM_TEAM_WORLD, "world");
    test_team(SHMEM_TEAM_SHARED, "shared");

    shmem_team_t evens, x, y;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2,
                                   NULL, 0, &evens) == 0, "evens");
    test_team(evens, "evens");
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y)
              == 0, "2d");
    test_team(x, "row");
    test_team(y, "column");
    shmem_team_destroy(evens);
    shmem_team_destroy(x);
    shmem_team_destroy(y);

    shmem_barrier_all();
    if (me == 0)
        printf("coll_data: %d PEs ok\n", npes);
    shmem_finalize();
    return 0;
}

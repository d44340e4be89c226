/*
 * Teams: the predefined ones, strided and 2-d splits (nested too), their
 * queries and PE translation checked against the arithmetic of the
 * split, team_sync, destroy, and the errors of bad splits. Any PE count.
 */
#include <shmem.h>

#include "shmem_check.h"

static int me, npes;

/* Checks that team holds the world PEs start + i * stride, i < size, as
 * its PEs i, and that this PE's place in it is right. */
static void check_strided(shmem_team_t team, int start, int stride, int size,
                          const char *what)
{
    int mine = -1;
    for (int i = 0; i < size; i++)
        if (start + i * stride == me)
            mine = i;
    if (mine < 0) {
        CHECK(team == SHMEM_TEAM_INVALID, "%s: a non-member got a team",
              what);
        CHECK(shmem_team_my_pe(team) == -1, "%s", what);
        CHECK(shmem_team_n_pes(team) == -1, "%s", what);
        return;
    }
    CHECK(team != SHMEM_TEAM_INVALID, "%s: a member got no team", what);
    CHECK(shmem_team_n_pes(team) == size, "%s: n_pes %d, expected %d", what,
          shmem_team_n_pes(team), size);
    CHECK(shmem_team_my_pe(team) == mine, "%s: my_pe %d, expected %d", what,
          shmem_team_my_pe(team), mine);
    for (int i = 0; i < size; i++) {
        int w = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
        CHECK(w == start + i * stride, "%s: PE %d is world %d, expected %d",
              what, i, w, start + i * stride);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, w, team) == i,
              "%s: world %d back", what, w);
    }
    CHECK(shmem_team_translate_pe(team, size, SHMEM_TEAM_WORLD) == -1,
          "%s: PE out of range", what);
    for (int w = 0; w < npes; w++) {
        int in = (w - start) % stride == 0 && (w - start) / stride >= 0
                 && (w - start) / stride < size;
        if (stride == 0)
            in = w == start;
        if (!in)
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, w, team) == -1,
                  "%s: world %d is not a member", what, w);
    }
    CHECK(shmem_team_sync(team) == 0, "%s: team_sync", what);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    /* Predefined teams. SHARED is this node's PEs in world order: the
     * world under pamirun, a part of it on a cluster (test/cluster). */
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world n_pes");
    int ns = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    int ms = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    CHECK(ns >= 1 && ns <= npes && ms >= 0 && ms < ns,
          "shared: PE %d of %d", ms, ns);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, ms, SHMEM_TEAM_WORLD)
              == me, "shared to world");
    for (int i = 0, prev = -1; i < ns; i++) {
        int w = shmem_team_translate_pe(SHMEM_TEAM_SHARED, i,
                                        SHMEM_TEAM_WORLD);
        CHECK(w > prev && w < npes, "shared PE %d is world %d", i, w);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, w, SHMEM_TEAM_SHARED)
                  == i, "world %d back to shared", w);
        prev = w;
    }
    {
        static int one = 1, count, first;
        CHECK(shmem_int_sum_reduce(SHMEM_TEAM_SHARED, &count, &one, 1) == 0
                  && count == ns, "shared: %d PEs counted, %d", count, ns);
        /* every member sees the same first PE of the node */
        first = me;
        CHECK(shmem_int_min_reduce(SHMEM_TEAM_SHARED, &first, &first, 1) == 0
                  && first == shmem_team_translate_pe(SHMEM_TEAM_SHARED, 0,
                                                      SHMEM_TEAM_WORLD),
              "shared: first PE %d", first);
    }
    /* A split of the shared team (its even PEs): a list of world PEs
     * when the node's PEs are not consecutive. */
    {
        shmem_team_t half;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_SHARED, 0, 2, (ns + 1) / 2,
                                       NULL, 0, &half) == 0, "shared split");
        CHECK((half != SHMEM_TEAM_INVALID) == (ms % 2 == 0),
              "shared split membership");
        if (half != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_my_pe(half) == ms / 2, "shared split my_pe");
            for (int i = 0; i < shmem_team_n_pes(half); i++)
                CHECK(shmem_team_translate_pe(half, i, SHMEM_TEAM_WORLD)
                          == shmem_team_translate_pe(SHMEM_TEAM_SHARED, 2 * i,
                                                     SHMEM_TEAM_WORLD),
                      "shared split PE %d", i);
            CHECK(shmem_team_sync(half) == 0, "shared split sync");
            shmem_team_destroy(half);
        }
    }
    CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "world sync");
    CHECK(shmem_team_sync(SHMEM_TEAM_SHARED) == 0, "shared sync");
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "invalid my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid n_pes");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD)
              == -1, "invalid translate");

    /* Strided splits of several shapes, each destroyed after. */
    int shapes[][3] = {
        { 0, 1, npes },                    /* all */
        { 0, 2, (npes + 1) / 2 },          /* evens */
        { 1, 2, npes / 2 },                /* odds */
        { npes - 1, 1, 1 },                /* the last alone */
        { 0, 3, (npes + 2) / 3 },          /* every third */
        { npes - 1, -1, npes },            /* all, reversed */
    };
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int start = shapes[s][0], stride = shapes[s][1], size = shapes[s][2];
        if (size < 1)
            continue;
        shmem_team_config_t cfg = { .num_contexts = (int)s };
        shmem_team_t t;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride,
                                          size, &cfg,
                                          SHMEM_TEAM_NUM_CONTEXTS, &t);
        CHECK(rc == 0, "split %zu returned %d", s, rc);
        char what[64];
        snprintf(what, sizeof what, "split(%d, %d, %d)", start, stride, size);
        check_strided(t, start, stride, size, what);
        if (t != SHMEM_TEAM_INVALID) {
            shmem_team_config_t got = { .num_contexts = -1 };
            CHECK(shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &got)
                      == 0 && got.num_contexts == (int)s,
                  "%s: config %d", what, got.num_contexts);
            shmem_team_destroy(t);
        }
    }

    /* A split of a split: the odd PEs of the evens are world PEs 2, 6,
     * 10, ... */
    shmem_team_t evens, sub;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2,
                                   NULL, 0, &evens) == 0, "evens");
    if (evens != SHMEM_TEAM_INVALID) {
        int ne = shmem_team_n_pes(evens);
        if (ne >= 2) {
            CHECK(shmem_team_split_strided(evens, 1, 2, ne / 2, NULL, 0,
                                           &sub) == 0, "sub");
            check_strided(sub, 2, 4, ne / 2, "evens' odds");
            if (sub != SHMEM_TEAM_INVALID) {
                int w = shmem_team_translate_pe(sub, 0, evens);
                CHECK(w == 1, "sub PE 0 is evens' PE %d", w);
                shmem_team_destroy(sub);
            }
        }
        shmem_team_destroy(evens);
    }

    /* 2-d splits: rows of xrange consecutive PEs, columns of stride
     * xrange; the last row may be short. */
    int xranges[] = { 1, 2, 3, npes, npes + 5 };
    for (size_t k = 0; k < sizeof(xranges) / sizeof(xranges[0]); k++) {
        int xr = xranges[k] > npes ? npes : xranges[k];
        shmem_team_t x, y;
        int rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, xranges[k], NULL, 0,
                                     &x, NULL, 0, &y);
        CHECK(rc == 0, "split_2d(%d) returned %d", xranges[k], rc);
        int row = me / xr, col = me % xr;
        int row_size = npes - row * xr < xr ? npes - row * xr : xr;
        int col_size = (npes - col + xr - 1) / xr;
        char what[64];
        snprintf(what, sizeof what, "2d(%d) row", xranges[k]);
        check_strided(x, row * xr, 1, row_size, what);
        snprintf(what, sizeof what, "2d(%d) column", xranges[k]);
        check_strided(y, col, xr, col_size, what);
        shmem_team_destroy(x);
        shmem_team_destroy(y);
    }

    /* Bad splits: every PE gets an error and SHMEM_TEAM_INVALID. */
    shmem_team_t bad = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes + 1, NULL, 0,
                                   &bad) != 0 && bad == SHMEM_TEAM_INVALID,
          "a split larger than its parent");
    bad = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, -1, 1, 1, NULL, 0,
                                   &bad) != 0 && bad == SHMEM_TEAM_INVALID,
          "a negative start");
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &bad, NULL, 0,
                              &bad) != 0, "xrange 0");
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "sync of no team");

    /* Many splits in a row: the geometry ids do not run out or clash. */
    for (int i = 0; i < 100; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, i % npes, 1, 1,
                                       NULL, 0, &t) == 0, "split %d", i);
        if (t != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_sync(t) == 0, "sync of split %d", i);
            shmem_team_destroy(t);
        }
    }

    shmem_barrier_all();
    if (me == 0)
        printf("coll_team: %d PEs ok (shared team of %d)\n", npes, ns);
    shmem_finalize();
    return 0;
}

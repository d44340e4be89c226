/* Atomics: every PE hammers counters on every PE (the heap, reached by
 * the CPU's atomics through the mapping, and global variables, reached by
 * pami_rmw), each operation of the three tables on several types; the
 * totals and the values each operation returned are checked. */
#include <stdint.h>

#include <shmem.h>

#include "shmem_check.h"

#define ROUNDS 200

static long g_long;
static int g_int;
static unsigned long long g_ull;
static uint32_t g_u32;
static double g_double;
static float g_float;
static long g_slots[64];

struct counters {
    long *l;
    int *i;
    unsigned long long *ull;
    uint32_t *u32;
    double *d;
    float *f;
    long *slots;
};

static void run(struct counters c, const char *where)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    long seen;

    *c.l = 0;
    *c.i = 0;
    *c.ull = 0;
    *c.u32 = 0;
    for (int s = 0; s < 64; s++)
        c.slots[s] = -1;
    shmem_barrier_all();

    /* fetch_add and add, fetch_inc and inc on every PE */
    for (int r = 0; r < ROUNDS; r++) {
        for (int pe = 0; pe < n; pe++) {
            shmem_long_atomic_add(c.l, 2, pe);
            seen = shmem_long_atomic_fetch_add(c.l, 3, pe);
            CHECK(seen >= 0 && seen <= 5L * ROUNDS * n, "%s: fetch_add "
                  "returned %ld", where, seen);
            shmem_int_atomic_inc(c.i, pe);
            shmem_int_atomic_fetch_inc(c.i, pe);
            shmem_ctx_ulonglong_atomic_add(SHMEM_CTX_DEFAULT, c.ull,
                                           1ULL << 33, pe);
        }
    }
    shmem_barrier_all();
    CHECK(*c.l == 5L * ROUNDS * n, "%s: long counter %ld, not %ld", where,
          *c.l, 5L * ROUNDS * n);
    CHECK(*c.i == 2 * ROUNDS * n, "%s: int counter %d", where, *c.i);
    CHECK(*c.ull == (1ULL << 33) * ROUNDS * n, "%s: ull counter %llu",
          where, *c.ull);

    /* fetch_or: every PE sets its own bit on PE 0; xor twice leaves it */
    shmem_uint32_atomic_fetch_or(c.u32, 1u << (me % 32), 0);
    shmem_uint32_atomic_xor(c.u32, 1u << 31, 0);
    shmem_uint32_atomic_xor(c.u32, 1u << 31, 0);
    shmem_barrier_all();
    {
        uint32_t want = 0;

        for (int pe = 0; pe < n; pe++)
            want |= 1u << (pe % 32);
        CHECK(shmem_uint32_atomic_fetch(c.u32, 0) == want,
              "%s: or gives %#x, not %#x", where,
              shmem_uint32_atomic_fetch(c.u32, 0), want);
        shmem_barrier_all();
        shmem_uint32_atomic_and(c.u32, ~(1u << (me % 32)), 0);
        shmem_barrier_all();
        CHECK(shmem_uint32_atomic_fetch(c.u32, 0) == 0, "%s: and", where);
    }

    /* compare_swap: each slot of PE 0 is claimed by exactly one PE */
    {
        int mine = 0, total = 0;

        for (int s = 0; s < 64; s++)
            if (shmem_long_atomic_compare_swap(&c.slots[s], -1, me, 0) == -1)
                mine++;
        shmem_barrier_all();
        if (me == 0) {
            for (int s = 0; s < 64; s++)
                CHECK(c.slots[s] >= 0 && c.slots[s] < n, "%s: slot %d "
                      "holds %ld", where, s, c.slots[s]);
        }
        shmem_int_atomic_add(c.i, mine, 0);
        shmem_barrier_all();
        total = shmem_int_atomic_fetch(c.i, 0);
        CHECK(total == 2 * ROUNDS * n + 64, "%s: %d slots claimed", where,
              total - 2 * ROUNDS * n);
    }

    /* swap, set and fetch on double and float; fetch_nbi and friends */
    shmem_barrier_all();
    if (me == 0) {
        shmem_double_atomic_set(c.d, 1.5, n - 1);
        shmem_float_atomic_set(c.f, 2.25f, n - 1);
    }
    shmem_barrier_all();
    if (me == n - 1) {
        CHECK(*c.d == 1.5 && *c.f == 2.25f, "%s: set double/float", where);
    }
    shmem_barrier_all();
    if (me == 0) {
        double old = shmem_double_atomic_swap(c.d, -3.0, n - 1);
        float fo;

        CHECK(old == 1.5, "%s: swap returned %g", where, old);
        CHECK(shmem_double_atomic_fetch(c.d, n - 1) == -3.0, "%s: fetch",
              where);
        shmem_float_atomic_fetch_nbi(&fo, c.f, n - 1);
        shmem_quiet();
        CHECK(fo == 2.25f, "%s: fetch_nbi %g", where, fo);
    }
    {
        long f1 = -1, f2 = -1;

        shmem_barrier_all();
        *c.l = 0;
        shmem_barrier_all();
        shmem_long_atomic_fetch_add_nbi(&f1, c.l, 1, 0);
        shmem_long_atomic_fetch_inc_nbi(&f2, c.l, 0);
        shmem_quiet();
        CHECK(f1 >= 0 && f2 >= 0 && f1 != f2 && f1 < 2 * n && f2 < 2 * n,
              "%s: fetching nbi returned %ld, %ld", where, f1, f2);
        shmem_barrier_all();
        CHECK(shmem_long_atomic_fetch(c.l, 0) == 2L * n, "%s: nbi total",
              where);
    }
    /* the deprecated names and a generic */
    shmem_barrier_all();
    *c.l = 0;
    shmem_barrier_all();
    shmem_long_add(c.l, 1, 0);
    shmem_long_finc(c.l, 0);
    shmem_atomic_add(c.l, 1L, 0);
    shmem_barrier_all();
    CHECK(shmem_long_fetch(c.l, 0) == 3L * n, "%s: deprecated names: %ld",
          where, shmem_long_fetch(c.l, 0));
    shmem_barrier_all();
}

int main(void)
{
    struct counters heap, global = { &g_long, &g_int, &g_ull, &g_u32,
                                     &g_double, &g_float, g_slots };

    shmem_init();
    heap.l = shmem_malloc(sizeof(long));
    heap.i = shmem_malloc(sizeof(int));
    heap.ull = shmem_malloc(sizeof(unsigned long long));
    heap.u32 = shmem_malloc(sizeof(uint32_t));
    heap.d = shmem_malloc(sizeof(double));
    heap.f = shmem_malloc(sizeof(float));
    heap.slots = shmem_malloc(64 * sizeof(long));
    run(heap, "heap");
    run(global, "globals");
    shmem_finalize();
    return 0;
}

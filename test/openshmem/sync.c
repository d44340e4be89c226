/* Ordering and synchronization: fence orders puts to one PE (a flag put
 * after the data, fenced, never shows before the data), quiet completes
 * them, wait_until and the test forms in their variants, put with
 * signal, and a lock excludes (a read-modify-write by get and put under
 * the lock loses no increment). Heap and global targets both. */
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

#define LEN 512
#define ROUNDS 50

static long g_data[LEN];
static long g_flag;
static uint64_t g_sig;
static long g_lock;
static long g_shared_count;

static void fence_order(long *data, long *flag, const char *where)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long src[LEN];

    for (int r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < LEN; i++)
            src[i] = (long)r * 1000000 + me * 1000 + i;
        shmem_long_put(data, src, LEN, right);
        shmem_fence();
        shmem_long_p(flag, r, right);
        shmem_long_wait_until(flag, SHMEM_CMP_GE, r);
        for (int i = 0; i < LEN; i++)
            CHECK(data[i] == (long)r * 1000000 + left * 1000 + i,
                  "%s: round %d: data[%d] = %ld behind the flag", where, r,
                  i, data[i]);
        shmem_barrier_all();
    }
}

static void signal_order(long *data, uint64_t *sig, const char *where)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long src[LEN];

    *sig = 0;
    shmem_barrier_all();
    for (int r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < LEN; i++)
            src[i] = (long)r * 7 + left * 0 + me + i;
        if (r % 2)
            shmem_long_put_signal(data, src, LEN, sig, (uint64_t)r,
                                  SHMEM_SIGNAL_SET, right);
        else
            shmem_putmem_signal_nbi(data, src, LEN * sizeof(long), sig, 1,
                                    SHMEM_SIGNAL_ADD, right);
        CHECK(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)r) ==
              (uint64_t)r, "%s: signal", where);
        for (int i = 0; i < LEN; i++)
            CHECK(data[i] == (long)r * 7 + left + i,
                  "%s: round %d: data[%d] = %ld behind the signal", where, r,
                  i, data[i]);
        CHECK(shmem_signal_fetch(sig) == (uint64_t)r, "signal_fetch");
        shmem_barrier_all();
    }
}

static void lock_excludes(long *lock, long *count, const char *where)
{
    int n = shmem_n_pes();

    *count = 0;
    *lock = 0;
    shmem_barrier_all();
    for (int r = 0; r < ROUNDS; r++) {
        long v;

        if (r % 2)
            shmem_set_lock(lock);
        else
            while (shmem_test_lock(lock) != 0)
                ;
        /* not atomic: only the lock keeps two PEs apart */
        v = shmem_long_g(count, 0);
        shmem_long_p(count, v + 1, 0);
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    CHECK(shmem_long_g(count, 0) == (long)ROUNDS * n,
          "%s: %ld increments under the lock, not %ld", where,
          shmem_long_g(count, 0), (long)ROUNDS * n);
    shmem_barrier_all();
}

static void waits(long *flags, const char *where)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int status[4] = { 0, 0, 1, 0 };
    size_t idx[4], k;
    long cmp[4] = { 11, 12, 99, 14 };

    for (int i = 0; i < 4; i++)
        flags[i] = 0;
    shmem_barrier_all();
    CHECK(!shmem_long_test(&flags[0], SHMEM_CMP_NE, 0), "%s: test", where);
    CHECK(shmem_long_test_any(flags, 4, status, SHMEM_CMP_GT, 0) ==
          SIZE_MAX, "%s: test_any", where);
    CHECK(shmem_long_test_some(flags, 4, idx, NULL, SHMEM_CMP_GT, 0) == 0,
          "%s: test_some", where);
    /* the left neighbour sets flags 0, 1 and 3 to 11, 12, 14 */
    shmem_barrier_all();
    shmem_long_p(&flags[1], 12, (me + 1) % n);
    k = shmem_long_wait_until_any(flags, 4, status, SHMEM_CMP_GT, 0);
    /* flag 0 may be set already too (the left neighbour goes on) */
    CHECK((k == 1 || k == 0) && flags[k] > 0,
          "%s: wait_until_any gave %zu", where, k);
    shmem_long_p(&flags[0], 11, (me + 1) % n);
    shmem_long_p(&flags[3], 14, (me + 1) % n);
    shmem_long_wait_until_all_vector(flags, 4, status, SHMEM_CMP_EQ, cmp);
    k = shmem_long_wait_until_some(flags, 4, idx, status, SHMEM_CMP_GE, 11);
    CHECK(k == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 3,
          "%s: wait_until_some gave %zu", where, k);
    CHECK(shmem_long_test_all(flags, 4, status, SHMEM_CMP_GT, 10),
          "%s: test_all", where);
    CHECK(shmem_long_test_all_vector(flags, 4, status, SHMEM_CMP_EQ, cmp),
          "%s: test_all_vector", where);
    CHECK(shmem_long_wait_until_any(flags, 4, (int[]){ 1, 1, 1, 1 },
                                    SHMEM_CMP_EQ, 0) == SIZE_MAX,
          "%s: wait_until_any over nothing", where);
    shmem_wait_until(&flags[3], SHMEM_CMP_EQ, 14L); /* generic */
    shmem_barrier_all();
}

int main(void)
{
    long *data, *flag, *lock, *count;
    uint64_t *sig;

    shmem_init();
    data = shmem_malloc(LEN * sizeof(long));
    flag = shmem_calloc(4, sizeof(long));
    sig = shmem_calloc(1, sizeof(uint64_t));
    lock = shmem_calloc(1, sizeof(long));
    count = shmem_calloc(1, sizeof(long));

    fence_order(data, flag, "heap");
    g_flag = 0;
    shmem_barrier_all();
    fence_order(g_data, &g_flag, "globals");
    signal_order(data, sig, "heap");
    signal_order(g_data, &g_sig, "globals");
    waits(flag, "heap");
    lock_excludes(lock, count, "heap");
    lock_excludes(&g_lock, &g_shared_count, "globals");
    {
        shmem_ctx_t ctx;
        shmem_team_t team;
        long v = shmem_my_pe();

        CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
        CHECK(shmem_ctx_get_team(ctx, &team) == 0 &&
              team == SHMEM_TEAM_WORLD, "ctx_get_team");
        shmem_ctx_long_put_nbi(ctx, data, &v, 1,
                               (shmem_my_pe() + 1) % shmem_n_pes());
        shmem_ctx_quiet(ctx);
        shmem_ctx_destroy(ctx);
        shmem_barrier_all();
        CHECK(data[0] == (shmem_my_pe() + shmem_n_pes() - 1) %
                             shmem_n_pes(), "ctx put: %ld", data[0]);
        CHECK(shmem_ctx_create(1L << 20, &ctx) != 0 &&
              ctx == SHMEM_CTX_INVALID, "a bad option accepted");
    }
    shmem_finalize();
    return 0;
}

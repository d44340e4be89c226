/*
 * The deprecated active-set collectives (PE_start, logPE_stride,
 * PE_size, pSync, pWrk) that benchmarks and old programs still call:
 * barrier, sync, broadcast32/64 (the root's dest untouched), collect,
 * fcollect, alltoall(s) 32/64 and *_to_all reductions, on the whole
 * world and on strided sets, checked against a serial computation.
 */
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

#define N 300

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long psync2[SHMEM_BCAST_SYNC_SIZE];
static int ipwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static double dpwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static long lpwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];

static int me, npes;

static long val(int w, int k, int j) { return (w + 1) * 100000L + k * 10 + j; }

static void test_set(int start, int logstride, int size)
{
    int stride = 1 << logstride;
    if (size < 1 || start + (size - 1) * stride >= npes)
        return;
    int r = -1;
    for (int i = 0; i < size; i++)
        if (start + i * stride == me)
            r = i;
    if (r < 0)
        return;
    char name[64];
    snprintf(name, sizeof name, "set(%d, %d, %d)", start, logstride, size);
    static int32_t s32[N * 64], d32[N * 64];
    static int64_t s64[N * 64], d64[N * 64];

    shmem_barrier(start, logstride, size, psync);
    shmem_sync(start, logstride, size, psync);

    /* broadcast: the root's dest keeps what it had (deprecated form) */
    int root = size - 1;
    for (int k = 0; k < N; k++) {
        s32[k] = (int32_t)val(me, k, 0);
        s64[k] = val(me, k, 1);
        d32[k] = -1;
        d64[k] = -1;
    }
    shmem_broadcast32(d32, s32, N, root, start, logstride, size, psync2);
    shmem_broadcast64(d64, s64, N, root, start, logstride, size, psync2);
    int wroot = start + root * stride;
    for (int k = 0; k < N; k++) {
        if (r == root) {
            CHECK(d32[k] == -1 && d64[k] == -1,
                  "%s: broadcast wrote the root's dest", name);
        } else {
            CHECK(d32[k] == (int32_t)val(wroot, k, 0), "%s: broadcast32 [%d]",
                  name, k);
            CHECK(d64[k] == val(wroot, k, 1), "%s: broadcast64 [%d]", name,
                  k);
        }
    }

    /* a large broadcast64 (past 1 KiB: the root, whose dest stays as it
     * was, writes part of every other member's dest) */
    for (int k = 0; k < N * 64; k++) {
        s64[k] = val(me, k, 5);
        d64[k] = -1;
    }
    shmem_broadcast64(d64, s64, N * 64, root, start, logstride, size, psync2);
    for (int k = 0; k < N * 64; k++)
        CHECK(d64[k] == (r == root ? -1 : val(wroot, k, 5)),
              "%s: large broadcast64 [%d] = %ld", name, k, (long)d64[k]);
    shmem_barrier(start, logstride, size, psync);

    /* fcollect and collect (PE i of the set gives i + 1 elements) */
    for (int k = 0; k < N; k++) {
        s32[k] = (int32_t)val(me, k, 2);
        s64[k] = val(me, k, 3);
    }
    shmem_fcollect32(d32, s32, N, start, logstride, size, psync);
    shmem_fcollect64(d64, s64, N, start, logstride, size, psync);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < N; k++) {
            int w = start + i * stride;
            CHECK(d32[i * N + k] == (int32_t)val(w, k, 2), "%s: fcollect32",
                  name);
            CHECK(d64[i * N + k] == val(w, k, 3), "%s: fcollect64", name);
        }
    shmem_collect32(d32, s32, (size_t)r + 1, start, logstride, size, psync);
    shmem_collect64(d64, s64, (size_t)r + 1, start, logstride, size, psync);
    int at = 0;
    for (int i = 0; i < size; i++)
        for (int k = 0; k <= i; k++, at++) {
            int w = start + i * stride;
            CHECK(d32[at] == (int32_t)val(w, k, 2), "%s: collect32", name);
            CHECK(d64[at] == val(w, k, 3), "%s: collect64", name);
        }

    /* alltoall: 3 elements per PE; alltoalls with strides 2 and 3 */
    for (int j = 0; j < size; j++)
        for (int k = 0; k < 3; k++) {
            s32[j * 3 + k] = (int32_t)val(me, k, j);
            s64[j * 3 + k] = val(me, k, j + 1);
        }
    shmem_alltoall32(d32, s32, 3, start, logstride, size, psync);
    shmem_alltoall64(d64, s64, 3, start, logstride, size, psync);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 3; k++) {
            int w = start + i * stride;
            CHECK(d32[i * 3 + k] == (int32_t)val(w, k, r), "%s: alltoall32",
                  name);
            CHECK(d64[i * 3 + k] == val(w, k, r + 1), "%s: alltoall64",
                  name);
        }
    for (int j = 0; j < size; j++)
        for (int k = 0; k < 3; k++)
            s64[3 * (j * 3 + k)] = val(me, k, j);
    memset(d64, 0, sizeof d64);
    shmem_alltoalls64(d64, s64, 2, 3, 3, start, logstride, size, psync);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 3; k++)
            CHECK(d64[2 * (i * 3 + k)] == val(start + i * stride, k, r),
                  "%s: alltoalls64", name);

    /* reductions */
    static int is[N], id[N];
    static double ds[N], dd[N];
    static long ls[N], ld[N];
    for (int k = 0; k < N; k++) {
        is[k] = me + k;
        ds[k] = (me * 7 + k) % 13;
        ls[k] = (long)(0xff00ff00ffL >> (me % 8)) ^ k;
    }
    shmem_int_sum_to_all(id, is, N, start, logstride, size, ipwrk, psync);
    shmem_double_max_to_all(dd, ds, N, start, logstride, size, dpwrk, psync);
    shmem_barrier(start, logstride, size, psync); /* psync reused */
    shmem_long_and_to_all(ld, ls, N, start, logstride, size, lpwrk, psync);
    for (int k = 0; k < N; k++) {
        int isum = 0;
        double dmax = -1;
        long land = -1;
        for (int i = 0; i < size; i++) {
            int w = start + i * stride;
            isum += w + k;
            double dv = (w * 7 + k) % 13;
            dmax = dv > dmax ? dv : dmax;
            land &= (long)(0xff00ff00ffL >> (w % 8)) ^ k;
        }
        CHECK(id[k] == isum, "%s: int_sum_to_all [%d] %d != %d", name, k,
              id[k], isum);
        CHECK(dd[k] == dmax, "%s: double_max_to_all", name);
        CHECK(ld[k] == land, "%s: long_and_to_all", name);
    }
    /* in place, and a complex sum */
    shmem_int_prod_to_all(is, is, 1, start, logstride, size, ipwrk, psync);
    {
        int p = 1;
        for (int i = 0; i < size; i++)
            p *= start + i * stride;
        CHECK(is[0] == p, "%s: int_prod_to_all in place: %d != %d", name,
              is[0], p);
    }
    static double _Complex cs[4], cd[4];
    static double _Complex cw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    cs[0] = me + 2.0 * me * __extension__ 1.0i;
    shmem_complexd_sum_to_all(cd, cs, 1, start, logstride, size, cw, psync);
    double re = 0;
    for (int i = 0; i < size; i++)
        re += start + i * stride;
    CHECK(__real__ cd[0] == re && __imag__ cd[0] == 2 * re,
          "%s: complexd_sum_to_all", name);
    shmem_barrier(start, logstride, size, psync);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        psync2[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* every set twice: the second use takes the cached team */
    for (int rep = 0; rep < 2; rep++) {
        test_set(0, 0, npes);               /* all */
        test_set(0, 1, (npes + 1) / 2);     /* evens */
        test_set(1, 1, npes / 2);           /* odds */
        test_set(0, 2, (npes + 3) / 4);     /* every fourth */
        test_set(npes - 1, 0, 1);           /* the last alone */
        test_set(npes > 2 ? 1 : 0, 0, npes > 2 ? npes - 2 : 1); /* middle */
    }
    shmem_barrier_all();
    if (me == 0)
        printf("coll_legacy: %d PEs ok\n", npes);
    shmem_finalize();
    return 0;
}

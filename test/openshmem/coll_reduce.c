/*
 * Reductions on teams (world, the node's PEs, the even PEs, rows and
 * columns of a 2-d split): and, or, xor, min, max, sum, prod on every type the
 * specification lists for them, out of place and in place, short and
 * long vectors. Each result is compared with the same reduction done
 * serially over the values the team's PEs gave.
 */
#include <complex.h>
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

#define MAX_COUNT 20000

static int me;
static char *sbuf, *dbuf; /* symmetric, MAX_COUNT * 16 bytes each */

/* Small values so that no sum or product leaves the smallest type:
 * sums stay below 100, products below 64, and signed ones go negative. */
static int v_sum(int w, size_t k) { return (int)((w * 3 + k + 1) % 11); }
static int v_prod(int w, size_t k) { return (w + (int)k) % 3 == 0 ? 2 : 1; }
static int v_cmp(int w, size_t k, int sgn)
{
    return (int)((w * 5 + k * 3) % 17) - (sgn ? 8 : 0);
}
static int v_bits(int w, size_t k) { return (int)((w * 37 + k * 11) & 0x7f); }

#define AND(a, b) ((a) & (b))
#define OR(a, b) ((a) | (b))
#define XOR(a, b) ((a) ^ (b))
#define MIN(a, b) ((b) < (a) ? (b) : (a))
#define MAX(a, b) ((b) > (a) ? (b) : (a))
#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))

/* One op on one type: each PE puts VAL(w, k) in source, reduces, and
 * checks dest against the serial fold over the team's world PEs. */
#define CHECK_OP(T, N, OPNAME, FOLD, VAL)                                     \
    for (int inplace = 0; inplace < 2; inplace++) {                           \
        T *s = (T *)sbuf, *d = inplace ? s : (T *)dbuf;                       \
        for (size_t k = 0; k < cnt; k++)                                      \
            s[k] = (T)(VAL(me, k));                                           \
        if (!inplace)                                                         \
            memset(d, 0x5a, cnt * sizeof(T));                                 \
        CHECK(shmem_##N##_##OPNAME##_reduce(team, d, s, cnt) == 0,            \
              "%s: " #N "_" #OPNAME "_reduce", name);                         \
        for (size_t k = 0; k < cnt; k++) {                                    \
            T want = (T)(VAL(w[0], k));                                       \
            for (int i = 1; i < n; i++)                                       \
                want = (T)FOLD(want, (T)(VAL(w[i], k)));                      \
            CHECK(d[k] == want,                                               \
                  "%s: " #N "_" #OPNAME "_reduce of %zu%s: [%zu]", name,      \
                  cnt, inplace ? " in place" : "", k);                        \
        }                                                                     \
    }

#define VS(w, k) v_sum(w, k)
#define VP(w, k) v_prod(w, k)
#define VB(w, k) v_bits(w, k)

#define TEST_BITS(T, N)                                                       \
    static void bits_##N(shmem_team_t team, const char *name, int n,          \
                         const int *w, size_t cnt)                            \
    {                                                                         \
        CHECK_OP(T, N, and, AND, VB)                                          \
        CHECK_OP(T, N, or, OR, VB)                                            \
        CHECK_OP(T, N, xor, XOR, VB)                                          \
    }
#define TEST_CMP(T, N)                                                        \
    static void cmp_##N(shmem_team_t team, const char *name, int n,           \
                        const int *w, size_t cnt)                             \
    {                                                                         \
        const int sgn = (T)-1 < (T)1; /* signed (or real) */                  \
        CHECK_OP(T, N, min, MIN, VC)                                          \
        CHECK_OP(T, N, max, MAX, VC)                                          \
        CHECK_OP(T, N, sum, SUM, VS)                                          \
        CHECK_OP(T, N, prod, PROD, VP)                                        \
    }
#define VC(w, k) v_cmp(w, k, sgn)

#define BIT_TYPES(X)                                                          \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)   \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                  \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)     \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)                 \
    X(uint64_t, uint64) X(size_t, size)
#define CMP_TYPES(X)                                                          \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)           \
    X(long, long) X(long long, longlong) X(ptrdiff_t, ptrdiff)                \
    BIT_TYPES(X) X(float, float) X(double, double)                            \
    X(long double, longdouble)

BIT_TYPES(TEST_BITS)
CMP_TYPES(TEST_CMP)

#define CALL_BITS(T, N) bits_##N(team, name, n, w, cnt);
#define CALL_CMP(T, N) cmp_##N(team, name, n, w, cnt);

/* Complex: sum and prod of small Gaussian integers, exact in floating
 * point whatever the order. */
#define VCX(w, k) ((double)v_sum(w, k) + (double)((w + (int)(k)) % 2) * I)
#define VCP(w, k) (1.0 + (double)((w + (int)(k)) % 3 == 0) * I)
static void complex_ops(shmem_team_t team, const char *name, int n,
                        const int *w, size_t cnt)
{
    CHECK_OP(double _Complex, complexd, sum, SUM, VCX)
    CHECK_OP(double _Complex, complexd, prod, PROD, VCP)
    CHECK_OP(float _Complex, complexf, sum, SUM, VCX)
    CHECK_OP(float _Complex, complexf, prod, PROD, VCP)
}

static void test_team(shmem_team_t team, const char *name)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    int n = shmem_team_n_pes(team), w[64];
    CHECK(n <= 64, "team too large");
    for (int i = 0; i < n; i++)
        w[i] = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
    size_t counts[] = { 1, 5, 1000, MAX_COUNT };
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t cnt = counts[c];
        BIT_TYPES(CALL_BITS)
        CMP_TYPES(CALL_CMP)
        complex_ops(team, name, n, w, cnt);
    }
    /* nreduce 0: nothing happens, no error */
    CHECK(shmem_int_sum_reduce(team, (int *)dbuf, (int *)sbuf, 0) == 0,
          "%s: empty reduction", name);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    int npes = shmem_n_pes();
    sbuf = shmem_malloc(MAX_COUNT * 16);
    dbuf = shmem_malloc(MAX_COUNT * 16);
    CHECK(sbuf != NULL && dbuf != NULL, "symmetric buffers");

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
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, (int *)dbuf,
                               (int *)sbuf, 1) != 0, "no team");

    shmem_barrier_all();
    if (me == 0)
        printf("coll_reduce: %d PEs ok\n", npes);
    shmem_finalize();
    return 0;
}

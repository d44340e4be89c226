/* Names of OpenSHMEM 1.5 that public test suites (Sandia OpenSHMEM's
 * tests-sos) call and that pami's library once lacked: the C11 generics
 * of the bitwise atomics on int32_t/int64_t and of the bitwise reductions
 * on int8_t..int64_t, shmem_sync(team), shmem_team_ptr, shmem_pcontrol,
 * and test_any returning every satisfied element in turn.
 * Each is checked on its result, at any number of PEs. */
#include <shmem.h>
#include <stdint.h>

#include "shmem_check.h"

static int32_t word32;
static int64_t word64;
static int8_t red8_src[4], red8_dst[4];
static int16_t red16_src[4], red16_dst[4];
static long heap_probe;

static void check_bitwise_amos(int me, int n)
{
    word32 = -1;
    word64 = -1;
    shmem_barrier_all();
    /* each PE clears its bit (mod 32) on PE 0 */
    shmem_atomic_and(&word32, ~(int32_t)(1u << (me % 32)), 0);
    int64_t old = shmem_atomic_fetch_xor(SHMEM_CTX_DEFAULT, &word64,
                                         (int64_t)1 << (me % 64), 0);
    CHECK((old & ((int64_t)1 << (me % 64))) != 0, "fetch_xor old %lld",
          (long long)old);
    shmem_barrier_all();
    if (me == 0) {
        int32_t want32 = -1;
        int64_t want64 = -1;
        for (int pe = 0; pe < n; pe++) {
            want32 &= ~(int32_t)(1u << (pe % 32));
            want64 ^= (int64_t)1 << (pe % 64);
        }
        CHECK(word32 == want32, "and: %d, want %d", word32, want32);
        CHECK(word64 == want64, "xor: %lld, want %lld", (long long)word64,
              (long long)want64);
    }
    shmem_barrier_all();
}

static void check_bitwise_reduce(int me, int n)
{
    for (int i = 0; i < 4; i++) {
        red8_src[i] = (int8_t)(1 << (me % 7));
        red16_src[i] = (int16_t)(me == i ? 0 : 0x7ff);
    }
    CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, red8_dst, red8_src, 4) == 0,
          "or_reduce int8_t");
    CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, red16_dst, red16_src, 4) == 0,
          "and_reduce int16_t");
    int8_t want8 = 0;
    for (int pe = 0; pe < n; pe++)
        want8 |= (int8_t)(1 << (pe % 7));
    for (int i = 0; i < 4; i++) {
        CHECK(red8_dst[i] == want8, "or[%d] %d, want %d", i, red8_dst[i],
              want8);
        int16_t want16 = i < n ? 0 : 0x7ff;
        CHECK(red16_dst[i] == want16, "and[%d] %d, want %d", i,
              red16_dst[i], want16);
    }
}

static void check_team_ptr(int me, int n)
{
    long *block = shmem_malloc(sizeof *block);
    CHECK(block != NULL, "shmem_malloc");
    for (int pe = 0; pe < n; pe++) {
        CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, block, pe)
                  == shmem_ptr(block, pe),
              "world team_ptr of PE %d", pe);
        CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, &heap_probe, pe)
                  == shmem_ptr(&heap_probe, pe),
              "world team_ptr of a global on PE %d", pe);
    }
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, block, n) == NULL,
          "team_ptr past the team");
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, block, 0) == NULL,
          "team_ptr of the invalid team");
    /* the odd PEs' team: its PE i is world PE 2i+1 */
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    if (n >= 2) {
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0,
                                 &odd);
        if (odd != SHMEM_TEAM_INVALID) {
            for (int i = 0; i < n / 2; i++)
                CHECK(shmem_team_ptr(odd, block, i)
                          == shmem_ptr(block, 2 * i + 1),
                      "odd team's PE %d", i);
            CHECK(shmem_sync(odd) == 0, "shmem_sync(odd team)");
            shmem_team_destroy(odd);
        } else {
            CHECK(me % 2 == 0, "odd PE %d left out of its team", me);
        }
    }
    shmem_free(block);
}

/* Every element satisfied and no status array: polling test_any must
 * return each index in turn, not always the first. */
static void check_test_any_turns(int n)
{
    int *flags = shmem_calloc((size_t)n, sizeof(int));
    int seen[64] = { 0 };
    int found = 0;

    CHECK(flags != NULL && n <= 64, "calloc flags");
    for (int i = 0; i < n; i++)
        flags[i] = 1;
    for (int k = 0; k < 2 * n; k++) {
        size_t i = shmem_int_test_any(flags, (size_t)n, NULL, SHMEM_CMP_EQ,
                                      1);
        CHECK(i < (size_t)n, "test_any returned %zu", i);
        found += !seen[i];
        seen[i] = 1;
    }
    CHECK(found == n, "test_any returned %d distinct indices of %d", found,
          n);
    shmem_free(flags);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_pcontrol(0);
    shmem_pcontrol(2, "any extra argument");
    shmem_pcontrol(1);
    check_bitwise_amos(me, n);
    check_bitwise_reduce(me, n);
    check_team_ptr(me, n);
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(world)");
    check_test_any_turns(n);
    shmem_finalize();
    return 0;
}

/*
 * Contexts made from teams (OpenSHMEM 1.5, 9.4.1): the PE numbers their
 * RMA, atomics and put-with-signal take are numbers in the team. The
 * team of the odd world PEs (stride 2 from 1; the even ones when the job
 * has a single PE) and SHMEM_TEAM_SHARED (its context made before any
 * other team call) each get a context; every member writes its world
 * number to the next member of the team through that context, then
 * checks that what it got came from the member before it.
 */
#include <shmem.h>

#include "shmem_check.h"

static int  from_put, from_atomic;
static long signal_word;
static int  from_signal;

static void ring_on(shmem_team_t team, const char *what)
{
    shmem_ctx_t ctx;
    CHECK(shmem_team_create_ctx(team, 0, &ctx) == 0,
          "%s: cannot make a context", what);
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int world = shmem_my_pe();

    from_put = from_atomic = from_signal = -1;
    signal_word = 0;
    shmem_team_sync(team);
    shmem_ctx_int_put(ctx, &from_put, &world, 1, next);
    shmem_ctx_int_atomic_set(ctx, &from_atomic, world, next);
    shmem_ctx_int_put_signal(ctx, &from_signal, &world, 1,
                             (uint64_t *)&signal_word, 1, SHMEM_SIGNAL_SET,
                             next);
    shmem_ctx_quiet(ctx);
    shmem_team_sync(team);
    int want = shmem_team_translate_pe(team, prev, SHMEM_TEAM_WORLD);
    CHECK(from_put == want && from_atomic == want && from_signal == want &&
              signal_word == 1,
          "%s: team PE %d of %d got put %d, atomic %d, signal %d (%ld); "
          "expected world PE %d", what, me, n, from_put, from_atomic,
          from_signal, signal_word, want);
    /* A number outside the team is not a world number: fetch from team
     * PE 0 must read team PE 0's word, not world PE 0's. */
    int got = shmem_ctx_int_atomic_fetch(ctx, &from_put, 0);
    int of0 = shmem_team_translate_pe(team, n - 1, SHMEM_TEAM_WORLD);
    CHECK(got == of0, "%s: fetch from team PE 0 read %d, expected %d", what,
          got, of0);
    shmem_team_sync(team);
    shmem_ctx_destroy(ctx);
}

int main(void)
{
    shmem_init();
    /* First: the shared team's context before any other team call. */
    ring_on(SHMEM_TEAM_SHARED, "shared");

    int npes = shmem_n_pes(), start = npes > 1 ? 1 : 0;
    int size = npes > 1 ? npes / 2 : 1;
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, size, NULL, 0, &odd);
    if (odd != SHMEM_TEAM_INVALID) {
        ring_on(odd, "odd");
        shmem_team_destroy(odd);
    }
    shmem_barrier_all();
    if (shmem_my_pe() == 0)
        printf("team_ctx: %d PEs ok\n", npes);
    shmem_finalize();
    return 0;
}

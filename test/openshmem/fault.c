/* A PE that dies in the middle of an OpenSHMEM program; the others must
 * end with an error (exit code 1, a line naming the failure), never hang.
 *   shmem_fault WHERE HOW
 * WHERE: what the survivors do when the victim (PE n-1) goes
 *   barrier  shmem_barrier_all in a loop; the victim goes in its 50th
 *   lock     the victim takes a lock and goes holding it; the others
 *            wait for it in shmem_set_lock
 *   wait     the others wait in shmem_wait_until for a flag only the
 *            victim would set
 *   test     lock and wait, but the others loop on shmem_test_lock and
 *            then on shmem_int_test themselves
 *   put      the others put 4 KiB to the victim (through the node's
 *            mapping) and barrier, round after round; the victim goes
 *            in its 20th round
 *   bcast    8 KiB broadcasts from PE 0 on the world team (the direct
 *            path through the mappings), the victim goes before its 30th;
 *            a call must then return non-zero (the survivor exits 1)
 *   reduce   64 KiB sum reductions on the world team (direct path too),
 *            the same
 * HOW: how the victim goes
 *   exit     _exit(0): a PE that just ends, without shmem_finalize (the
 *            launcher sees a normal end and leaves the job to run)
 *   stop     SIGSTOP: a PE that hangs; the launcher kills it once the
 *            others failed
 * A survivor that returns from a wait it should not end in fails with
 * exit code 2. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <shmem.h>

static long lock_word;
static int flag;
static char box[4096];
static long red_src[8192], red_dst[8192];
static char bc_src[8192], bc_dst[8192];

static void go(const char *how)
{
    fflush(stdout);
    fflush(stderr);
    if (strcmp(how, "stop") == 0)
        raise(SIGSTOP);
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *where = argc > 2 ? argv[1] : "";
    const char *how = argc > 2 ? argv[2] : "";
    char buf[sizeof(box)];
    int me, n, victim;

    if (strcmp(how, "exit") != 0 && strcmp(how, "stop") != 0) {
        fprintf(stderr, "usage: shmem_fault barrier|lock|wait|test|put|bcast|reduce exit|stop\n");
        return 2;
    }
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    victim = n - 1;
    if (strcmp(where, "barrier") == 0) {
        for (int i = 0; i < 1000; i++) {
            if (me == victim && i == 50)
                go(how);
            shmem_barrier_all();
        }
    } else if (strcmp(where, "lock") == 0) {
        if (me == victim)
            shmem_set_lock(&lock_word);
        shmem_barrier_all();
        if (me == victim) {
            usleep(100 * 1000); /* the others are in shmem_set_lock */
            go(how);
        }
        shmem_set_lock(&lock_word);
    } else if (strcmp(where, "test") == 0) {
        if (me == victim)
            shmem_set_lock(&lock_word);
        shmem_barrier_all();
        if (me == victim) {
            usleep(100 * 1000);
            go(how);
        }
        /* PE 0 loops on the lock, the others on a flag. */
        if (me == 0)
            while (shmem_test_lock(&lock_word))
                ;
        else
            while (!shmem_int_test(&flag, SHMEM_CMP_NE, 0))
                ;
    } else if (strcmp(where, "wait") == 0) {
        shmem_barrier_all();
        if (me == victim) {
            usleep(100 * 1000);
            go(how);
        }
        shmem_int_wait_until(&flag, SHMEM_CMP_NE, 0);
    } else if (strcmp(where, "put") == 0) {
        memset(buf, me, sizeof(buf));
        for (int i = 0; i < 1000; i++) {
            if (me == victim && i == 20)
                go(how);
            if (me != victim)
                shmem_putmem(box, buf, sizeof(buf), victim);
            shmem_barrier_all();
        }
    } else if (strcmp(where, "bcast") == 0 || strcmp(where, "reduce") == 0) {
        int bc = where[0] == 'b';
        for (int k = 0; k < 8192; k++)
            red_src[k] = me + 1;
        for (int i = 0; i < 1000; i++) {
            if (me == victim && i == 30)
                go(how);
            int rc = bc ? shmem_char_broadcast(SHMEM_TEAM_WORLD, bc_dst,
                                               bc_src, sizeof(bc_dst), 0)
                        : shmem_long_sum_reduce(SHMEM_TEAM_WORLD, red_dst,
                                                red_src, 8192);
            if (rc != 0) {
                /* The team collectives report a failure (1.5). */
                fprintf(stderr, "PE %d: %s %d failed (%d)\n", me, where, i,
                        rc);
                return 1;
            }
            /* A call that succeeds has all members' data. */
            for (int k = 0; !bc && k < 8192; k++)
                if (red_dst[k] != (long)n * (n + 1) / 2) {
                    fprintf(stderr, "PE %d: reduction %d: element %d is "
                            "%ld, not %ld\n", me, i, k, red_dst[k],
                            (long)n * (n + 1) / 2);
                    return 3;
                }
        }
    } else {
        fprintf(stderr, "unknown WHERE '%s'\n", where);
        return 2;
    }
    fprintf(stderr, "PE %d: %s returned although PE %d is gone\n", me, where,
            victim);
    return 2;
}

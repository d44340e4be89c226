/*
 * OSU's put and get latency loop at one size, each call timed, to see
 * what OSU's mean hides: the first call (cold lines, faults) and gaps
 * where PE 0 was interrupted. As OSU: both PEs write their buffers, a
 * barrier, then PE 0 makes 100 calls to PE 1 (put + quiet, get,
 * put_nbi + quiet or get_nbi + quiet) while PE 1 waits in the next
 * barrier; repeated REPS times.
 *
 *   oshcc -O2 -o put-loop tools/osu/shmem-put-loop.c
 *   oshrun -n 2 ./put-loop [BYTES [REPS [put|get|put_nb|get_nb]]]
 *
 * Prints, over the repetitions: the median first call; the median and
 * minimum of the mean of calls 2-100; the median of OSU's mean (all
 * 100); and how many calls took more than 4 times the median call, with
 * the time they added over it per repetition. Defaults: 65536 B, 30
 * repetitions, put.
 *
 * On x86-64 PE 0 also reads its core's clock after each repetition (a
 * chain of dependent multiplies, 3 cycles each, timed by the clock):
 * this VM's host moves the clock between 100 MHz steps while a program
 * runs, and a copy of 64 KiB costs the same cycles at every step, so
 * the median call is also given in cycles, which compare across runs
 * and libraries where microseconds do not. Last, where the PEs ran: in
 * how many repetitions both were on one CPU, and PE 0's cycles apart for
 * repetitions on one CPU and on two.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <sched.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_BYTES ((size_t)1 << 22) /* OSU's MYBUFSIZE: the two buffers 4 MiB apart */
#define CALLS     100
#define MAX_REPS  1000

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#if defined(__x86_64__)
/* MHz of this core now: 30000 dependent imuls take 90000 cycles. */
static double core_mhz(void)
{
    uint64_t x = 1, y = 3;
    double t = now_us();
    for (int i = 0; i < 6000; i++)
        __asm__ volatile("imul %1,%0\n\timul %1,%0\n\timul %1,%0\n\t"
                         "imul %1,%0\n\timul %1,%0" : "+r"(x) : "r"(y));
    return 90000.0 / (now_us() - t);
}
#else
static double core_mhz(void) { return 0; }
#endif

static int pe1_cpu[MAX_REPS]; /* symmetric: PE 0 reads PE 1's at the end */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void one_call(int mode, char *r, const char *s, size_t n)
{
    switch (mode) {
    case 0: shmem_putmem(r, s, n, 1); shmem_quiet(); break;
    case 1: shmem_getmem(r, s, n, 1); break;
    case 2: shmem_putmem_nbi(r, s, n, 1); shmem_quiet(); break;
    default: shmem_getmem_nbi(r, s, n, 1); shmem_quiet(); break;
    }
}

int main(int argc, char **argv)
{
    static const char *modes[] = {"put", "get", "put_nb", "get_nb"};
    static double call[MAX_REPS][CALLS], mhz[MAX_REPS], cycles[MAX_REPS];
    static int pe0_cpu[MAX_REPS], pe0_moved[MAX_REPS];
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
    int reps = argc > 2 ? atoi(argv[2]) : 30;
    int mode = 0;

    if (argc > 3)
        for (mode = 0; mode < 4 && strcmp(argv[3], modes[mode]) != 0; mode++)
            ;
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() != 2 || n == 0 || n > BUF_BYTES || reps < 1 ||
        reps > MAX_REPS || mode == 4) {
        if (me == 0)
            fprintf(stderr, "usage: oshrun -n 2 %s [BYTES (1..%zu) [REPS "
                    "(1..%d) [put|get|put_nb|get_nb]]]\n", argv[0],
                    BUF_BYTES, MAX_REPS);
        shmem_finalize();
        return 2;
    }
    char *s = shmem_malloc(BUF_BYTES), *r = shmem_malloc(BUF_BYTES);
    if (s == NULL || r == NULL) {
        fprintf(stderr, "shmem_malloc of 2 x %zu bytes failed\n", BUF_BYTES);
        shmem_global_exit(1);
    }
    for (int k = 0; k < reps; k++) {
        memset(s, 'a', n);
        memset(r, 'b', n);
        shmem_barrier_all();
        if (me != 0)
            pe1_cpu[k] = sched_getcpu();
        if (me == 0) {
            pe0_cpu[k] = sched_getcpu();
            double t = now_us();
            for (int i = 0; i < CALLS; i++) {
                one_call(mode, r, s, n);
                double u = now_us();
                call[k][i] = u - t;
                t = u;
            }
            /* the best of three probes: a preempted one reads low */
            double m = 0;
            for (int j = 0; j < 3; j++) {
                double f = core_mhz();
                m = f > m ? f : m;
            }
            mhz[k] = m;
            pe0_moved[k] = sched_getcpu() != pe0_cpu[k];
        }
        shmem_barrier_all();
    }
    static int other_cpu[MAX_REPS];
    if (me == 0)
        shmem_getmem(other_cpu, pe1_cpu, sizeof(int) * (size_t)reps, 1);
    shmem_barrier_all();
    if (me == 0) {
        static double all[MAX_REPS * CALLS];
        double one_cpu[MAX_REPS], two_cpus[MAX_REPS];
        int n_one = 0, n_two = 0, n_moved = 0;
        double first[MAX_REPS], rest[MAX_REPS], osu[MAX_REPS];
        for (int k = 0; k < reps; k++) {
            double sum = 0;
            for (int i = 1; i < CALLS; i++)
                sum += call[k][i];
            first[k] = call[k][0];
            rest[k] = sum / (CALLS - 1);
            cycles[k] = rest[k] * mhz[k];
            n_moved += pe0_moved[k];
            if (pe0_cpu[k] == other_cpu[k])
                one_cpu[n_one++] = cycles[k];
            else
                two_cpus[n_two++] = cycles[k];
            osu[k] = (sum + call[k][0]) / CALLS;
            memcpy(&all[k * (CALLS - 1)], &call[k][1],
                   sizeof(double) * (CALLS - 1));
        }
        qsort(all, (size_t)reps * (CALLS - 1), sizeof(double), cmp_double);
        double median_call = all[(size_t)reps * (CALLS - 1) / 2];
        long gaps = 0;
        double gap_us = 0;
        for (int k = 0; k < reps; k++)
            for (int i = 1; i < CALLS; i++)
                if (call[k][i] > 4 * median_call) {
                    gaps++;
                    gap_us += call[k][i] - median_call;
                }
        qsort(first, (size_t)reps, sizeof(double), cmp_double);
        qsort(rest, (size_t)reps, sizeof(double), cmp_double);
        qsort(osu, (size_t)reps, sizeof(double), cmp_double);
        qsort(cycles, (size_t)reps, sizeof(double), cmp_double);
        qsort(mhz, (size_t)reps, sizeof(double), cmp_double);
        printf("%s %zu B, %d x %d calls: first call median %.2f us; calls "
               "2-%d mean: median %.3f, min %.3f us; OSU mean median %.3f "
               "us; median call %.3f us; %ld calls over 4x it, %.2f us "
               "added per repetition\n",
               modes[mode], n, reps, CALLS, first[reps / 2], CALLS,
               rest[reps / 2], rest[0], osu[reps / 2], median_call, gaps,
               gap_us / reps);
        if (mhz[0] > 0)
            printf("  core clock after each repetition %.0f..%.0f MHz "
                   "(median %.0f); calls 2-%d mean in cycles: median %.0f, "
                   "min %.0f\n", mhz[0], mhz[reps - 1], mhz[reps / 2], CALLS,
                   cycles[reps / 2], cycles[0]);
        qsort(one_cpu, (size_t)n_one, sizeof(double), cmp_double);
        qsort(two_cpus, (size_t)n_two, sizeof(double), cmp_double);
        printf("  PEs on one CPU in %d repetitions (median %.0f cycles), on "
               "two in %d (median %.0f); PE 0 moved during %d\n", n_one,
               n_one ? one_cpu[n_one / 2] : 0.0, n_two,
               n_two ? two_cpus[n_two / 2] : 0.0, n_moved);
    }
    shmem_free(r);
    shmem_free(s);
    shmem_finalize();
    return 0;
}

/*
 * Per-call times of large collectives at two sizes, called the way the OSU
 * OpenSHMEM benchmarks call them (the deprecated active-set forms over all
 * PEs): a barrier, then one timed call, ITERS times. A call's time is
 * the longest any PE spent in it (a broadcast's root may return before
 * the others have the data); PE 0 prints the minimum, first quartile and
 * median over the calls. OSU prints a mean, which on a loaded
 * machine is mostly the calls in which a PE waited for a CPU; the minimum
 * shows what a call costs when both PEs run. Builds with any OpenSHMEM's
 * compiler wrapper (the reference's needs -no-pie):
 *
 *   build/openshmem/oshcc -O2 -o loop tools/osu/shmem-coll-loop.c
 *   build/openshmem/oshrun -n 2 ./loop [ITERS]
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BYTES (1u << 20)

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static float pwrk[MAX_BYTES / 8 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    if (iters < 4)
        iters = 4;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    char *src = shmem_malloc((size_t)MAX_BYTES * (size_t)n);
    char *dst = shmem_malloc((size_t)MAX_BYTES * (size_t)n);
    double *t = shmem_malloc((size_t)iters * sizeof(double));
    double *peer = malloc((size_t)iters * sizeof(double));
    if (src == NULL || dst == NULL || t == NULL || peer == NULL) {
        fprintf(stderr, "PE %d: out of memory\n", me);
        shmem_global_exit(1);
    }
    memset(src, 1, (size_t)MAX_BYTES * (size_t)n);
    memset(dst, 2, (size_t)MAX_BYTES * (size_t)n);
    static const char *const names[] = { "reduce", "broadcast", "collect" };
    static const size_t sizes[] = { 65536, MAX_BYTES };
    for (int op = 0; op < 3; op++) {
        for (int s = 0; s < 2; s++) {
            int nelems = (int)(sizes[s] / 4);
            for (int i = 0; i < iters; i++) {
                shmem_barrier_all();
                double start = now_us();
                if (op == 0)
                    shmem_float_sum_to_all((float *)dst, (float *)src, nelems,
                                           0, 0, n, pwrk, psync);
                else if (op == 1)
                    shmem_broadcast32(src, src, (size_t)nelems, 0, 0, 0, n,
                                      psync);
                else
                    shmem_collect32(dst, src, (size_t)nelems, 0, 0, n, psync);
                t[i] = now_us() - start;
            }
            shmem_barrier_all();
            if (me == 0)
                for (int pe = 1; pe < n; pe++) {
                    shmem_getmem(peer, t, (size_t)iters * sizeof(double), pe);
                    for (int i = 0; i < iters; i++)
                        if (peer[i] > t[i])
                            t[i] = peer[i];
                }
            shmem_barrier_all();
            qsort(t, (size_t)iters, sizeof(double), by_value);
            if (me == 0)
                printf("%-9s %8zu B: min %8.2f  p25 %8.2f  median %8.2f us\n",
                       names[op], sizes[s], t[0], t[iters / 4],
                       t[iters / 2]);
        }
    }
    free(peer);
    shmem_free(t);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}

/*
 * footprint: the memory a task holds once it has talked to every peer.
 * Every task runs --iters (default 20) alltoalls of 1 KiB per peer (more
 * than the 16 messages to a peer after which Open MPI's shared-memory
 * transport gives the pair a fast box), then reads its peak resident set
 * (VmHWM of /proc/self/status); task 0 prints the largest and smallest
 * among the tasks.
 *
 * pami-bench footprint under pamirun measures pami (no MPI in the
 * process); pami-bench-mpi footprint --vs-mpi under mpirun measures Open
 * MPI alone with MPI_Alltoall (no pami client is created), so the two
 * figures come from two jobs of the same size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pami_collectives.h>

#include "bench.h"

#ifdef PAMI_BENCH_MPI
#include <mpi.h>
#endif

#define BLOCK 1024

/* KiB, or 0 when /proc does not say. */
static uint64_t vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmHWM: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

static size_t rounds_of(const opts_t *o)
{
    return o->iters > 0 ? (size_t)o->iters : 20;
}

static void report(const opts_t *o, const char *library, size_t tasks,
                   uint64_t max_kib, uint64_t min_kib, size_t rounds)
{
    if (o->json)
        printf("{\"test\": \"footprint\", \"library\": \"%s\", "
               "\"ranks\": %zu, \"vmhwm_max_kib\": %llu, "
               "\"vmhwm_min_kib\": %llu, \"alltoalls\": %zu, "
               "\"block_bytes\": %d}\n", library, tasks,
               (unsigned long long)max_kib, (unsigned long long)min_kib,
               rounds, BLOCK);
    else
        printf("footprint %s: %zu tasks, VmHWM after %zu alltoalls of %d B "
               "per peer: largest %.1f MiB, smallest %.1f MiB\n", library,
               tasks, rounds, BLOCK, (double)max_kib / 1024.0,
               (double)min_kib / 1024.0);
    fflush(stdout);
}

static uint64_t reduce_u64(group_t *g, pami_geometry_t world, uint64_t v,
                           pami_op_t op)
{
    uint64_t out = 0;
    pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                     .sbuf = &v, .rbuf = &out, .count = 1,
                     .dtype = PAMI_TYPE_UINT64, .op = op};
    bench_check(pami_collective_wait(g->ctx, &x), "allreduce");
    return out;
}

void footprint_run(group_t *g)
{
    const opts_t *o = g->opt;
    size_t rounds = rounds_of(o);
    uint8_t *sbuf = malloc(BLOCK * g->size);
    uint8_t *rbuf = malloc(BLOCK * g->size);
    if (sbuf == NULL || rbuf == NULL)
        bench_die("out of memory");
    memset(sbuf, (int)g->me, BLOCK * g->size);
    pami_geometry_t world;
    bench_check(pami_geometry_world(g->ctx, &world), "pami_geometry_world");
    pami_xfer_t x = {.kind = PAMI_XFER_ALLTOALL, .geometry = world,
                     .sbuf = sbuf, .rbuf = rbuf, .count = BLOCK,
                     .dtype = PAMI_TYPE_BYTE};
    for (size_t i = 0; i < rounds; i++)
        bench_check(pami_collective_wait(g->ctx, &x), "alltoall");
    /* What every peer sent must be there: the alltoall did touch it. */
    for (size_t t = 0; t < g->size; t++)
        if (rbuf[t * BLOCK] != (uint8_t)t ||
            rbuf[t * BLOCK + BLOCK - 1] != (uint8_t)t)
            bench_die("alltoall: block of task %zu is wrong", t);
    free(sbuf);
    free(rbuf);
    uint64_t hwm = vm_hwm_kib();
    if (hwm == 0)
        bench_die("no VmHWM in /proc/self/status");
    uint64_t max = reduce_u64(g, world, hwm, PAMI_OP_MAX);
    uint64_t min = reduce_u64(g, world, hwm, PAMI_OP_MIN);
    if (g->me == 0)
        report(o, "pami", g->size, max, min, rounds);
}

int footprint_mpi_main(const opts_t *o)
{
#ifdef PAMI_BENCH_MPI
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t   rounds = rounds_of(o);
    uint8_t *sbuf   = malloc((size_t)BLOCK * (size_t)size);
    uint8_t *rbuf   = malloc((size_t)BLOCK * (size_t)size);
    if (sbuf == NULL || rbuf == NULL)
        bench_die("out of memory");
    memset(sbuf, me, (size_t)BLOCK * (size_t)size);
    for (size_t i = 0; i < rounds; i++)
        MPI_Alltoall(sbuf, BLOCK, MPI_BYTE, rbuf, BLOCK, MPI_BYTE,
                     MPI_COMM_WORLD);
    for (int t = 0; t < size; t++)
        if (rbuf[(size_t)t * BLOCK] != (uint8_t)t)
            bench_die("MPI_Alltoall: block of rank %d is wrong", t);
    free(sbuf);
    free(rbuf);
    unsigned long long hwm = vm_hwm_kib(), max = 0, min = 0;
    if (hwm == 0)
        bench_die("no VmHWM in /proc/self/status");
    MPI_Reduce(&hwm, &max, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(&hwm, &min, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, 0,
               MPI_COMM_WORLD);
    if (me == 0)
        report(o, "mpi", (size_t)size, max, min, rounds);
    return 0;
#else
    (void)o;
    return 2;
#endif
}

/*
 * Group tests: every task runs the same loop, task 0 times it and prints.
 * In pami-bench-mpi, --vs-mpi runs the same loop over Open MPI in the same
 * processes, pami and MPI alternating which goes first, so each line is a
 * ratio measured moments apart (docs/PERFORMANCE.md).
 *
 *   barrier  pami_barrier_wait with each algorithm against MPI_Barrier
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pami_barrier.h>

#include "bench.h"

typedef struct {
    const opts_t  *opt;
    pami_client_t  client;
    pami_context_t ctx;
    pami_task_t    me;
    size_t         size;
    bool           one_node;
} group_t;

static const struct {
    const char         *line;
    pami_barrier_algo_t algo;
    bool                node_only; /* a barrier of this node alone */
} barriers[] = {
    {"barrier_packets", PAMI_BARRIER_PACKETS, false},
    {"barrier_shm", PAMI_BARRIER_SHM, true},
    {"barrier_hier", PAMI_BARRIER_HIER, false},
};

static double pami_barrier_loop(group_t *g, pami_barrier_algo_t algo,
                                size_t ops)
{
    bench_check(pami_barrier_wait(g->ctx, algo, NULL, 0), "barrier");
    double t0 = bench_now();
    for (size_t i = 0; i < ops; i++)
        bench_check(pami_barrier_wait(g->ctx, algo, NULL, 0), "barrier");
    return bench_now() - t0;
}

static double mpi_barrier_loop(size_t ops)
{
#ifdef PAMI_BENCH_MPI
    return bench_mpi_barrier(ops);
#else
    (void)ops;
    return -1;
#endif
}

static void run_barriers(group_t *g)
{
    const opts_t *o    = g->opt;
    size_t        ops  = o->iters > 0 ? (size_t)o->iters : 10000;
    size_t        warm = o->warmup >= 0 ? (size_t)o->warmup : ops / 10;
    for (size_t k = 0; k < sizeof(barriers) / sizeof(barriers[0]); k++) {
        if (barriers[k].node_only && !g->one_node) {
            if (g->me == 0)
                fprintf(stderr, "pami-bench: %s skipped: the job spans "
                                "nodes\n", barriers[k].line);
            continue;
        }
        double ps[64], ms[64];
        if (warm > 0) {
            pami_barrier_loop(g, barriers[k].algo, warm);
            if (o->vs_mpi)
                mpi_barrier_loop(warm);
        }
        for (unsigned r = 0; r < o->reps; r++) {
            double pt = -1, mt = -1;
            if (r % 2 == 0)
                pt = pami_barrier_loop(g, barriers[k].algo, ops);
            if (o->vs_mpi)
                mt = mpi_barrier_loop(ops);
            if (r % 2 == 1)
                pt = pami_barrier_loop(g, barriers[k].algo, ops);
            ps[r] = pt < 0 ? -1 : pt * 1e6 / (double)ops;
            ms[r] = mt < 0 ? -1 : mt * 1e6 / (double)ops;
        }
        if (g->me != 0)
            continue;
        summary_t sp = summarize(ps, o->reps);
        summary_t sm = o->vs_mpi ? summarize(ms, o->reps) : (summary_t){0};
        report_group_line(o, g->size, barriers[k].line, 0, METRIC_LAT_US,
                          &sp, &sm, "MPI_Barrier", ops);
    }
}

int group_main(const opts_t *o, int *argc, char ***argv)
{
#ifdef PAMI_BENCH_MPI
    if (o->vs_mpi && bench_mpi_init(argc, argv) != 0)
        bench_die("MPI_Init failed");
#else
    (void)argc;
    (void)argv;
    if (o->vs_mpi) {
        fprintf(stderr, "pami-bench: --vs-mpi needs pami-bench-mpi, started "
                        "by mpirun\n");
        return 2;
    }
#endif
    group_t g = {.opt = o};
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE |
                                          PAMI_CLIENT_ATTR_LOCAL_TASKS};
    bench_check(pami_client_create("pami-bench", NULL, &g.client),
                "pami_client_create");
    bench_check(pami_client_query(g.client, &a), "pami_client_query");
    g.me       = a.task;
    g.size     = a.size;
    g.one_node = a.num_local_tasks == a.size;
    bench_check(pami_context_createv(g.client, NULL, 1, &g.ctx),
                "pami_context_createv");
    bench_check(pami_dispatch_fence(g.client), "pami_dispatch_fence");
    if (g.me == 0)
        report_group_header(o, g.size, o->vs_mpi);

    if (o->tests & (1u << T_BARRIER))
        run_barriers(&g);

    bench_check(pami_dispatch_fence(g.client), "pami_dispatch_fence");
    bench_check(pami_client_destroy(&g.client), "pami_client_destroy");
#ifdef PAMI_BENCH_MPI
    if (o->vs_mpi)
        bench_mpi_fini();
#endif
    return 0;
}

/*
 * Group tests: every task runs the same loop, task 0 times it and prints.
 * In pami-bench-mpi, --vs-mpi runs the same loop over Open MPI in the same
 * processes, pami and MPI alternating which goes first, so each line is a
 * ratio measured moments apart (docs/PERFORMANCE.md).
 *
 *   barrier     pami_barrier_wait with each algorithm against MPI_Barrier
 *   svd_update  an owner's pami_svd_update_wait to 1, 4 and 7 users, 64 B,
 *               64 KiB and 4 MiB of data (no MPI counterpart)
 *   allreduce, bcast, allgather, alltoall, reduce_scatter, reduce
 *               every registry algorithm and AUTO (coll_bench.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pami_barrier.h>
#include <pami_svd.h>

#include "bench.h"

static const struct {
    const char         *line;
    pami_barrier_algo_t algo;
    bool                node_only; /* a barrier of this node alone */
} barriers[] = {
    {"barrier_packets", PAMI_BARRIER_PACKETS, false},
    {"barrier_shm", PAMI_BARRIER_SHM, true},
    {"barrier_hier", PAMI_BARRIER_HIER, false},
};

void group_poll_pami(void *arg)
{
    group_t      *g  = arg;
    pami_result_t rc = pami_context_advance(g->ctx, 1);
    if (rc != PAMI_SUCCESS && rc != PAMI_EAGAIN)
        bench_check(rc, "pami_context_advance");
}

/* With --vs-mpi, between the two libraries' loops (bench.h). */
static void switch_library(group_t *g)
{
#ifdef PAMI_BENCH_MPI
    if (g->opt->vs_mpi)
        bench_mpi_joint_barrier(group_poll_pami, g);
#else
    (void)g;
#endif
}

static double pami_barrier_loop(group_t *g, pami_barrier_algo_t algo,
                                size_t ops)
{
    switch_library(g);
    bench_check(pami_barrier_wait(g->ctx, algo, NULL, 0), "barrier");
    double t0 = bench_now();
    for (size_t i = 0; i < ops; i++)
        bench_check(pami_barrier_wait(g->ctx, algo, NULL, 0), "barrier");
    return bench_now() - t0;
}

static double mpi_barrier_loop(group_t *g, size_t ops)
{
#ifdef PAMI_BENCH_MPI
    switch_library(g);
    return bench_mpi_barrier(ops);
#else
    (void)g;
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
                mpi_barrier_loop(g, warm);
        }
        for (unsigned r = 0; r < o->reps; r++) {
            double pt = -1, mt = -1;
            if (r % 2 == 0)
                pt = pami_barrier_loop(g, barriers[k].algo, ops);
            if (o->vs_mpi)
                mt = mpi_barrier_loop(g, ops);
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

static void sync_all(group_t *g)
{
    bench_check(pami_barrier_wait(g->ctx, PAMI_BARRIER_PACKETS, NULL, 0),
                "barrier");
}

/* Task 0 owns one key per line; tasks 1..users look it up (becoming its
 * users) and then only progress, inside a barrier, while task 0 times its
 * updates. */
static double svd_line_rep(group_t *g, pami_svd_key_t key, void *buf,
                           size_t bytes, size_t ops)
{
    double secs = -1;
    sync_all(g);
    if (g->me == 0) {
        pami_svd_update_t u = {.field_mask = PAMI_SVD_UPDATE_DATA,
                               .key = key, .data = buf, .data_size = bytes};
        double t0 = bench_now();
        for (size_t i = 0; i < ops; i++) {
            ((uint8_t *)buf)[0] = (uint8_t)i; /* a new version each time */
            bench_check(pami_svd_update_wait(g->ctx, &u), "svd update");
        }
        secs = bench_now() - t0;
    }
    sync_all(g);
    return secs;
}

static void run_svd(group_t *g)
{
    static const size_t users_of[] = {1, 4, 7};
    static const size_t bytes_of[] = {64, 64 << 10, 4 << 20};
    const opts_t *o = g->opt;
    uint8_t *buf = calloc(1, 4 << 20);
    if (buf == NULL)
        bench_die("no memory for the svd data");
    for (size_t ui = 0; ui < 3; ui++) {
        size_t users = users_of[ui];
        if (users >= g->size) {
            if (g->me == 0)
                fprintf(stderr, "pami-bench: svd_update with %zu users "
                                "skipped: needs %zu tasks\n", users,
                        users + 1);
            continue;
        }
        for (size_t bi = 0; bi < 3; bi++) {
            size_t bytes = bytes_of[bi];
            if (bytes < o->min_bytes || bytes > o->max_bytes)
                continue;
            pami_svd_key_t key = 1000 * users + bi;
            if (g->me == 0) {
                pami_svd_register_t r = {
                    .field_mask = PAMI_SVD_REGISTER_DATA, .key = key,
                    .addr = buf, .size = bytes, .data = buf,
                    .data_size = bytes};
                bench_check(pami_svd_register(g->ctx, &r), "svd register");
            }
            sync_all(g);
            bool user = g->me >= 1 && g->me <= users;
            if (user) {
                pami_svd_lookup_t l = {.owner = 0, .key = key};
                pami_svd_entry_t  e;
                bench_check(pami_svd_lookup_wait(g->ctx, &l, &e),
                            "svd lookup");
            }
            size_t ops = o->iters > 0 ? (size_t)o->iters
                                      : (bytes >= (1u << 20) ? 20 : 200);
            size_t warm = o->warmup >= 0 ? (size_t)o->warmup : ops / 10;
            if (warm > 0)
                svd_line_rep(g, key, buf, bytes, warm);
            double ts[64];
            for (unsigned r = 0; r < o->reps; r++) {
                double t = svd_line_rep(g, key, buf, bytes, ops);
                ts[r] = t < 0 ? -1 : t * 1e6 / (double)ops;
            }
            if (user)
                bench_check(pami_svd_release(g->ctx, 0, key), "svd release");
            if (g->me != 0)
                continue;
            char line[32];
            snprintf(line, sizeof(line), "svd_update_%zu", users);
            summary_t sp = summarize(ts, o->reps);
            summary_t none = {0};
            report_group_line(o, g->size, line, bytes, METRIC_LAT_US, &sp,
                              &none, "-", ops);
        }
    }
    free(buf);
}

int group_main(const opts_t *o, int *argc, char ***argv)
{
#ifdef PAMI_BENCH_MPI
    if (o->vs_mpi && bench_mpi_init(argc, argv) != 0)
        bench_die("MPI_Init failed");
    /* Open MPI's footprint is measured alone: no pami in the process. */
    if (o->vs_mpi && o->tests == (1u << T_FOOTPRINT)) {
        int rc = footprint_mpi_main(o);
        bench_mpi_fini();
        return rc;
    }
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
    /* burst_oversub and footprint print lines of their own. */
    unsigned own = (1u << T_BURST_OVERSUB) | (1u << T_FOOTPRINT);
    if (g.me == 0 && (o->tests & ~own) != 0)
        report_group_header(o, g.size, o->vs_mpi);

    if (o->tests & (1u << T_BARRIER))
        run_barriers(&g);
    if (o->tests & (1u << T_SVD_UPDATE))
        run_svd(&g);
    for (int t = T_ALLREDUCE; t <= T_REDUCE; t++)
        if (o->tests & (1u << t))
            coll_bench_run(&g, (test_id_t)t);
    if (o->tests & (1u << T_AUTO_VS_BEST))
        auto_vs_best_run(&g);
    if (o->tests & (1u << T_BURST_OVERSUB))
        burst_oversub_run(&g);
    if (o->tests & (1u << T_FOOTPRINT))
        footprint_run(&g);

    bench_check(pami_dispatch_fence(g.client), "pami_dispatch_fence");
    bench_check(pami_client_destroy(&g.client), "pami_client_destroy");
#ifdef PAMI_BENCH_MPI
    if (o->vs_mpi)
        bench_mpi_fini();
#endif
    return 0;
}

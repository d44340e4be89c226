/*
 * Collective group tests: allreduce, bcast, allgather, alltoall,
 * reduce_scatter and reduce (to rank 0) over the world geometry, each with every algorithm the
 * registry lists for it (queried at run time, so new algorithms appear
 * without a change here) that can run the call, and with AUTO; with
 * --vs-mpi the matching Open MPI call on the same buffers and counts in
 * the same processes. docs/performance-log.md, section "Collectives".
 *
 * bytes is count * element size as in pami_xfer_t: the whole vector of
 * allreduce, bcast and reduce, one rank's block of allgather, alltoall and
 * reduce_scatter. Reductions sum doubles; the rest moves bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pami_collectives.h>
#include <pami_protocol.h>

#include "bench.h"

typedef struct {
    test_id_t        test;
    pami_xfer_type_t kind;
    const char      *prefix; /* of the registry's names; "<prefix>_auto" */
    const char      *mpi_op;
    bool             reduce; /* doubles summed, else bytes */
    bool             blocks; /* count is per rank: n blocks somewhere */
} coll_kind_t;

static const coll_kind_t kinds[] = {
    {T_ALLREDUCE, PAMI_XFER_ALLREDUCE, "allreduce", "MPI_Allreduce", true,
     false},
    {T_BCAST, PAMI_XFER_BROADCAST, "broadcast", "MPI_Bcast", false, false},
    {T_ALLGATHER, PAMI_XFER_ALLGATHER, "allgather", "MPI_Allgather", false,
     true},
    {T_ALLTOALL, PAMI_XFER_ALLTOALL, "alltoall", "MPI_Alltoall", false,
     true},
    {T_REDUCE_SCATTER, PAMI_XFER_REDUCE_SCATTER, "reduce_scatter",
     "MPI_Reduce_scatter_block", true, true},
    {T_REDUCE, PAMI_XFER_REDUCE, "reduce", "MPI_Reduce", true, false},
};

/* 8 B, then powers of 4 from 64 B to 4 MiB. */
static const size_t coll_sizes[] = {8,         64,        256,
                                    1 << 10,   4 << 10,   16 << 10,
                                    64 << 10,  256 << 10, 1 << 20,
                                    4 << 20};
#define NSIZES (sizeof(coll_sizes) / sizeof(coll_sizes[0]))

/* Without --iters a measurement lasts about this long (from the pami
 * warm-up's time per call), within these bounds of calls. */
#define TARGET_S 0.02
#define MIN_OPS  1
#define MAX_OPS  10000

typedef struct {
    pami_algorithm_t          id; /* PAMI_ALGORITHM_AUTO for the AUTO line */
    pami_algorithm_metadata_t md;
    char                      name[64];
} algo_t;

typedef struct {
    group_t           *g;
    const coll_kind_t *k;
    pami_geometry_t    world;
    uint8_t           *sbuf, *rbuf;
    size_t             buf_bytes;
} coll_run_t;

/* The data a rank contributes: byte k of rank r, element k of rank r. */
static uint8_t pat(size_t r, size_t k)
{
    return (uint8_t)(r * 31 + k * 7 + (k >> 8) * 3 + 1);
}

static double val(size_t r, size_t k)
{
    return (double)(r + 1) + (double)(k % 7);
}

static void *alloc_touched(size_t bytes)
{
    size_t len = (bytes + 4095) / 4096 * 4096;
    void *p = aligned_alloc(4096, len ? len : 4096);
    if (p == NULL)
        bench_die("cannot allocate %zu bytes", bytes);
    memset(p, 0, len);
    return p;
}

static void fill_input(coll_run_t *c)
{
    size_t me = c->g->me;
    if (c->k->reduce) {
        double *d = (double *)c->sbuf;
        for (size_t k = 0; k < c->buf_bytes / sizeof(double); k++)
            d[k] = val(me, k);
    } else {
        for (size_t k = 0; k < c->buf_bytes; k++)
            c->sbuf[k] = pat(me, k);
    }
}

/* rbuf before the line's first call: cleared, the root's bcast data. */
static void prepare_output(coll_run_t *c, size_t bytes)
{
    size_t n = c->g->size;
    size_t used = c->k->test == T_ALLGATHER || c->k->test == T_ALLTOALL
                      ? n * bytes
                      : bytes;
    memset(c->rbuf, 0, used);
    if (c->k->test == T_BCAST && c->g->me == 0)
        for (size_t k = 0; k < bytes; k++)
            c->rbuf[k] = pat(0, k);
}

/* Index of the first wrong byte or element of rbuf, or -1. */
static long verify_output(const coll_run_t *c, size_t bytes)
{
    size_t n = c->g->size, me = c->g->me;
    const double *d = (const double *)c->rbuf;
    double base = (double)(n * (n + 1) / 2);
    switch (c->k->test) {
    case T_ALLREDUCE:
        for (size_t j = 0; j < bytes / 8; j++)
            if (d[j] != base + (double)n * (double)(j % 7))
                return (long)j;
        break;
    case T_REDUCE:
        if (me != 0)
            break; /* only the root's rbuf holds the sum */
        for (size_t j = 0; j < bytes / 8; j++)
            if (d[j] != base + (double)n * (double)(j % 7))
                return (long)j;
        break;
    case T_REDUCE_SCATTER:
        for (size_t j = 0; j < bytes / 8; j++)
            if (d[j] != base + (double)n * (double)((me * (bytes / 8) + j) % 7))
                return (long)j;
        break;
    case T_BCAST:
        for (size_t k = 0; k < bytes; k++)
            if (c->rbuf[k] != pat(0, k))
                return (long)k;
        break;
    case T_ALLGATHER:
        for (size_t b = 0; b < n; b++)
            for (size_t i = 0; i < bytes; i++)
                if (c->rbuf[b * bytes + i] != pat(b, i))
                    return (long)(b * bytes + i);
        break;
    case T_ALLTOALL:
        for (size_t s = 0; s < n; s++)
            for (size_t i = 0; i < bytes; i++)
                if (c->rbuf[s * bytes + i] != pat(s, me * bytes + i))
                    return (long)(s * bytes + i);
        break;
    default:
        break;
    }
    return -1;
}

static pami_xfer_t make_xfer(const coll_run_t *c, const algo_t *a,
                             size_t bytes)
{
    bool red = c->k->reduce;
    return (pami_xfer_t){
        .field_mask = a->id != PAMI_ALGORITHM_AUTO ? PAMI_XFER_FIELD_ALGORITHM
                                                   : 0,
        .kind      = c->k->kind,
        .geometry  = c->world,
        .algorithm = a->id,
        .root      = 0,
        .sbuf      = c->k->test == T_BCAST ? NULL : c->sbuf,
        .rbuf      = c->rbuf,
        .count     = red ? bytes / sizeof(double) : bytes,
        .dtype     = red ? PAMI_TYPE_DOUBLE : PAMI_TYPE_BYTE,
        .op        = PAMI_OP_SUM,
    };
}

/* Whether a can run this call: its check, and its message range unless
 * --any-range or AUTO picks a for it (a profile's choice need not lie in
 * the registry's range, and AUTO's line is read beside its algorithm's).
 * AUTO runs everything. */
static bool applies(const coll_run_t *c, const algo_t *a,
                    const pami_xfer_t *x, size_t bytes)
{
    if (a->id == PAMI_ALGORITHM_AUTO)
        return true;
    if (a->md.check != NULL && a->md.check(x) != PAMI_SUCCESS)
        return false;
    pami_xfer_t xa = *x;
    xa.field_mask &= ~(uint64_t)PAMI_XFER_FIELD_ALGORITHM;
    xa.algorithm = PAMI_ALGORITHM_AUTO;
    pami_algorithm_selection_t sel;
    return c->g->opt->any_range ||
           (bytes >= a->md.range_lo && bytes <= a->md.range_hi) ||
           (pami_geometry_algorithm_selected(&xa, &sel) == PAMI_SUCCESS &&
            sel.algorithm == a->id);
}

/* With --vs-mpi, between the two libraries' loops (bench.h). */
static void switch_library(coll_run_t *c)
{
#ifdef PAMI_BENCH_MPI
    if (c->g->opt->vs_mpi)
        bench_mpi_joint_barrier(group_poll_pami, c->g);
#else
    (void)c;
#endif
}

/* Seconds of ops calls between two barriers, the same frame as the MPI
 * loop's. */
static double pami_loop(coll_run_t *c, const pami_xfer_t *x, size_t ops)
{
    switch_library(c);
    bench_check(pami_geometry_barrier(c->g->ctx, c->world), "barrier");
    double t0 = bench_now();
    for (size_t i = 0; i < ops; i++)
        bench_check(pami_collective_wait(c->g->ctx, x), c->k->prefix);
    bench_check(pami_geometry_barrier(c->g->ctx, c->world), "barrier");
    return bench_now() - t0;
}

static double mpi_loop(coll_run_t *c, const pami_xfer_t *x, size_t ops)
{
#ifdef PAMI_BENCH_MPI
    switch_library(c);
    return bench_mpi_coll(c->k->test, c->sbuf, c->rbuf, x->count, ops);
#else
    (void)c;
    (void)x;
    (void)ops;
    return -1;
#endif
}

/* Task 0's choice of calls per measurement, the same on every task. */
static size_t agree_ops(coll_run_t *c, double per_call)
{
    uint64_t ops = MAX_OPS;
    if (c->g->me == 0 && per_call > 0) {
        double want = TARGET_S / per_call;
        ops = want < MIN_OPS ? MIN_OPS : want > MAX_OPS ? MAX_OPS
                                                        : (uint64_t)want;
    }
    bench_check(pami_geometry_broadcast(c->g->ctx, c->world, 0, &ops, 1,
                                        PAMI_TYPE_UINT64),
                "broadcast of the call count");
    return (size_t)ops;
}

#define MAX_STATS 32

static size_t read_stats(coll_run_t *c, pami_protocol_stat_t *out)
{
    size_t n = 0;
    if (pami_protocol_stats(c->g->ctx, "collectives", out, MAX_STATS, &n) !=
        PAMI_SUCCESS)
        return 0;
    return n < MAX_STATS ? n : MAX_STATS;
}

/* --coll-stats: the counters that moved during a line, one stderr line
 * per task (e.g. unexpected_kept: messages that came before their
 * collective was posted here). */
static void print_stats(coll_run_t *c, const algo_t *a, size_t bytes,
                        const pami_protocol_stat_t *before, size_t nb)
{
    pami_protocol_stat_t now[MAX_STATS];
    size_t n = read_stats(c, now);
    char   line[1024];
    int    len = snprintf(line, sizeof(line), "pami-bench: task %u %s %zu B:",
                          (unsigned)c->g->me, a->name, bytes);
    for (size_t i = 0; i < n && i < nb && len > 0 &&
                       (size_t)len < sizeof(line); i++) {
        if (now[i].value == before[i].value ||
            strcmp(now[i].name, "connid_in_use") == 0 ||
            strcmp(now[i].name, "connid_threshold") == 0)
            continue;
        len += snprintf(line + len, sizeof(line) - (size_t)len, " %s +%llu",
                        now[i].name,
                        (unsigned long long)(now[i].value - before[i].value));
    }
    fprintf(stderr, "%s\n", line);
}

static void run_line(coll_run_t *c, const algo_t *a, size_t bytes)
{
    pami_protocol_stat_t before[MAX_STATS];
    size_t nb = c->g->opt->coll_stats ? read_stats(c, before) : 0;
    const opts_t *o = c->g->opt;
    pami_xfer_t   x = make_xfer(c, a, bytes);

    /* One checked call first: a wrong result ends the run. A refused
     * call is refused on every task (an abort reaches the others). */
    prepare_output(c, bytes);
    double        t0 = bench_now();
    pami_result_t rc = pami_collective_wait(c->g->ctx, &x);
    double        first = bench_now() - t0;
    if (rc != PAMI_SUCCESS) {
        if (c->g->me == 0)
            fprintf(stderr, "pami-bench: %s %zu B skipped: %s\n", a->name,
                    bytes, pami_error_text(rc));
        return;
    }
    long bad = verify_output(c, bytes);
    if (bad >= 0)
        bench_die("%s %zu B: wrong result at %s %ld", a->name, bytes,
                  c->k->reduce ? "element" : "byte", bad);

    size_t warm = o->warmup >= 0 ? (size_t)o->warmup
                                 : bytes >= (256u << 10) ? 2 : 100;
    double per_call = first;
    if (warm > 0) {
        double t = pami_loop(c, &x, warm);
        per_call = t / (double)warm;
        if (o->vs_mpi)
            mpi_loop(c, &x, warm);
    }
    size_t ops = o->iters > 0 ? (size_t)o->iters : agree_ops(c, per_call);

    double ps[64], ms[64];
    for (unsigned r = 0; r < o->reps; r++) {
        double pt = -1, mt = -1;
        if (r % 2 == 0)
            pt = pami_loop(c, &x, ops);
        if (o->vs_mpi)
            mt = mpi_loop(c, &x, ops);
        if (r % 2 == 1)
            pt = pami_loop(c, &x, ops);
        ps[r] = pt < 0 ? -1 : pt * 1e6 / (double)ops;
        ms[r] = mt < 0 ? -1 : mt * 1e6 / (double)ops;
    }
    if (o->coll_stats)
        print_stats(c, a, bytes, before, nb);
    if (c->g->me != 0)
        return;
    summary_t sp = summarize(ps, o->reps);
    summary_t sm = o->vs_mpi ? summarize(ms, o->reps) : (summary_t){0};
    report_group_line(o, c->g->size, a->name, bytes, METRIC_LAT_US, &sp, &sm,
                      c->k->mpi_op, ops);
}

/* AUTO, then the registry's algorithms of this collective on world: those
 * that always work, then those with a check. */
static algo_t *list_algorithms(coll_run_t *c, size_t *count)
{
    size_t na = 0, nc = 0;
    bench_check(pami_geometry_algorithms_num(c->world, c->k->kind, &na, &nc),
                "pami_geometry_algorithms_num");
    pami_algorithm_t          *ids = calloc(na + nc + 1, sizeof(*ids));
    pami_algorithm_metadata_t *mds = calloc(na + nc + 1, sizeof(*mds));
    algo_t                    *out = calloc(na + nc + 1, sizeof(*out));
    if (ids == NULL || mds == NULL || out == NULL)
        bench_die("no memory for the algorithm list");
    bench_check(pami_geometry_algorithms_query(c->world, c->k->kind, ids,
                                               mds, na, ids + na, mds + na,
                                               nc),
                "pami_geometry_algorithms_query");
    out[0].id = PAMI_ALGORITHM_AUTO;
    snprintf(out[0].name, sizeof(out[0].name), "%s_auto", c->k->prefix);
    for (size_t i = 0; i < na + nc; i++) {
        out[i + 1].id = ids[i];
        out[i + 1].md = mds[i];
        snprintf(out[i + 1].name, sizeof(out[i + 1].name), "%s",
                 mds[i].name != NULL ? mds[i].name : "unnamed");
    }
    free(ids);
    free(mds);
    *count = na + nc + 1;
    return out;
}

void coll_bench_run(group_t *g, test_id_t test)
{
    const opts_t *o = g->opt;
    coll_run_t    c = {.g = g};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (kinds[i].test == test)
            c.k = &kinds[i];
    if (c.k == NULL)
        bench_die("test %d is not a collective", (int)test);
    bench_check(pami_geometry_world(g->ctx, &c.world), "pami_geometry_world");

    size_t largest = 0;
    for (size_t s = 0; s < NSIZES; s++)
        if (coll_sizes[s] >= o->min_bytes && coll_sizes[s] <= o->max_bytes)
            largest = coll_sizes[s];
    if (largest == 0) {
        if (g->me == 0)
            fprintf(stderr, "pami-bench: %s: no size in --min-bytes .. "
                            "--max-bytes\n", test_name(test));
        return;
    }
    c.buf_bytes = (c.k->blocks ? g->size : 1) * largest;
    c.sbuf = alloc_touched(c.buf_bytes);
    c.rbuf = alloc_touched(c.buf_bytes);
    fill_input(&c);

    size_t  na;
    algo_t *algos = list_algorithms(&c, &na);
    for (size_t s = 0; s < NSIZES; s++) {
        size_t bytes = coll_sizes[s];
        if (bytes < o->min_bytes || bytes > o->max_bytes)
            continue;
        for (size_t i = 0; i < na; i++) {
            pami_xfer_t x = make_xfer(&c, &algos[i], bytes);
            if (applies(&c, &algos[i], &x, bytes))
                run_line(&c, &algos[i], bytes);
        }
    }
    free(algos);
    free(c.sbuf);
    free(c.rbuf);
}

/*
 * auto_vs_best: for every size the profile (--profile, also loaded as
 * PAMI_COLL_PROFILE) measured for allreduce, bcast, allgather, alltoall,
 * reduce_scatter and barrier (8 B - 4 MiB), AUTO's time beside the best
 * algorithm's, measured again in this run. AUTO and every algorithm that
 * can run the call are measured interleaved, repetition by repetition,
 * so the machine's noise falls on all alike; ratio = AUTO / best, and
 * builtin_ratio the same for the algorithm the built-in rules would
 * take. docs/tuning.md, "pami-bench auto_vs_best".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pami_collectives.h>

#include "bench.h"
#include "coll_profile.h"

#define MAX_CAND 32
#define TARGET_S 0.01 /* one measurement of one candidate */
#define MAX_OPS 100000 /* 2000 cut small calls' windows to under 1 ms */
#define CAL_OPS 32     /* AUTO's calls that size the windows */

typedef struct {
    pami_xfer_type_t kind;
    const char      *name; /* as the JSON names the collective */
    bool             reduce;
    bool             blocks; /* n blocks in a buffer */
} avb_kind_t;

static const avb_kind_t kinds[] = {
    {PAMI_XFER_ALLREDUCE, "allreduce", true, false},
    {PAMI_XFER_BROADCAST, "bcast", false, false},
    {PAMI_XFER_ALLGATHER, "allgather", false, true},
    {PAMI_XFER_ALLTOALL, "alltoall", false, true},
    {PAMI_XFER_REDUCE_SCATTER, "reduce_scatter", true, true},
    {PAMI_XFER_BARRIER, "barrier", false, false},
};

typedef struct {
    pami_algorithm_t id; /* AUTO for AUTO */
    const char      *name;
    uint64_t         ops; /* calls per measurement */
    double           t[64];
} cand_t;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The sizes the profile has for kind, 8 B - 4 MiB (barrier: 0). */
static size_t sizes_of(const coll_profile_t *p, const opts_t *o,
                       pami_xfer_type_t kind, uint64_t *out, size_t max)
{
    if (kind == PAMI_XFER_BARRIER) {
        for (size_t i = 0; i < p->n; i++)
            if (p->e[i].kind == kind && !p->e[i].failed) {
                out[0] = 0;
                return 1;
            }
        return 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->n && n < max; i++) {
        const coll_prof_entry_t *e = &p->e[i];
        if (e->kind != kind || e->failed || e->bytes < 8 ||
            e->bytes > (4u << 20) || e->bytes < o->min_bytes ||
            e->bytes > o->max_bytes)
            continue;
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++)
            seen = out[j] == e->bytes;
        if (!seen)
            out[n++] = e->bytes;
    }
    qsort(out, n, sizeof(*out), cmp_u64);
    return n;
}

static pami_xfer_t xfer_of(const avb_kind_t *k, pami_geometry_t w,
                           pami_algorithm_t id, void *sbuf, void *rbuf,
                           uint64_t bytes)
{
    return (pami_xfer_t){
        .field_mask = id != PAMI_ALGORITHM_AUTO ? PAMI_XFER_FIELD_ALGORITHM
                                                : 0,
        .kind = k->kind, .geometry = w, .algorithm = id, .root = 0,
        .sbuf = k->kind == PAMI_XFER_BROADCAST ? NULL : sbuf, .rbuf = rbuf,
        .count = k->reduce ? bytes / sizeof(double) : bytes,
        .dtype = k->reduce ? PAMI_TYPE_DOUBLE : PAMI_TYPE_BYTE,
        .op = PAMI_OP_SUM};
}

/* Seconds of ops calls between two barriers. */
static double loop(group_t *g, pami_geometry_t w, const pami_xfer_t *x,
                   size_t ops)
{
    bench_check(pami_geometry_barrier(g->ctx, w), "barrier");
    double t0 = bench_now();
    for (size_t i = 0; i < ops; i++)
        bench_check(pami_collective_wait(g->ctx, x), "auto_vs_best");
    bench_check(pami_geometry_barrier(g->ctx, w), "barrier");
    return bench_now() - t0;
}

static double median(double *v, unsigned n)
{
    double s[64];
    memcpy(s, v, n * sizeof(double));
    for (unsigned i = 1; i < n; i++)
        for (unsigned j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The order of the candidates in repetition r: a shuffle that every
 * task draws alike (same seed), so that no candidate always follows the
 * same one. A rotation kept each one behind the same predecessor, so
 * whatever that leaves for a window's first calls (the pool's rooms,
 * the caches) fell on the same candidate in every repetition. */
static void shuffle(size_t *order, size_t n, unsigned r)
{
    uint64_t z = 0x9e3779b97f4a7c15ull * (r + 1);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        size_t j = (size_t)((z >> 33) % i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

static void point(group_t *g, pami_geometry_t w, const avb_kind_t *k,
                  uint64_t bytes, void *sbuf, void *rbuf)
{
    const opts_t *o = g->opt;
    cand_t c[MAX_CAND];
    size_t nc = 0;
    pami_xfer_t xa = xfer_of(k, w, PAMI_ALGORITHM_AUTO, sbuf, rbuf, bytes);
    pami_algorithm_selection_t sel;
    bench_check(pami_geometry_algorithm_selected(&xa, &sel),
                "pami_geometry_algorithm_selected");
    c[nc++] = (cand_t){.id = PAMI_ALGORITHM_AUTO, .name = "auto"};
    size_t na = 0, nk = 0;
    bench_check(pami_geometry_algorithms_num(w, k->kind, &na, &nk),
                "pami_geometry_algorithms_num");
    pami_algorithm_t ids[MAX_CAND];
    pami_algorithm_metadata_t md[MAX_CAND];
    if (na + nk > MAX_CAND - 1)
        bench_die("more than %d algorithms", MAX_CAND - 1);
    bench_check(pami_geometry_algorithms_query(w, k->kind, ids, md, na,
                                               ids + na, md + na, nk),
                "pami_geometry_algorithms_query");
    for (size_t i = 0; i < na + nk; i++) {
        pami_xfer_t x = xfer_of(k, w, ids[i], sbuf, rbuf, bytes);
        if (md[i].check != NULL && md[i].check(&x) != PAMI_SUCCESS)
            continue;
        c[nc++] = (cand_t){.id = ids[i], .name = md[i].name};
    }
    /* Warm-up of each, and its calls per measurement from its time
     * over CAL_OPS calls when two took under 1 ms (task 0's, broadcast
     * so that all agree): every candidate's window lasts about TARGET_S,
     * however much slower than AUTO it is. */
    uint64_t ops[MAX_CAND];
    for (size_t i = 0; i < nc; i++) {
        pami_xfer_t x = xfer_of(k, w, c[i].id, sbuf, rbuf, bytes);
        double per = loop(g, w, &x, 2) / 2;
        if (per < 0.5e-3 && o->iters == 0)
            per = loop(g, w, &x, CAL_OPS) / CAL_OPS;
        ops[i] = o->iters > 0 ? (uint64_t)o->iters
               : per > 0 ? (uint64_t)(TARGET_S / per) : MAX_OPS;
        if (ops[i] < 1)
            ops[i] = 1;
        if (ops[i] > MAX_OPS)
            ops[i] = MAX_OPS;
    }
    bench_check(pami_geometry_broadcast(g->ctx, w, 0, ops, nc,
                                        PAMI_TYPE_UINT64), "broadcast");
    for (size_t i = 0; i < nc; i++)
        c[i].ops = ops[i];
    /* How much of the measurement each task had a CPU when it could run
     * (its run-queue wait, /proc/self/schedstat); the smallest share
     * over the tasks is printed as cpu. With more tasks than CPUs it is
     * below 1 by construction. */
    double wait0 = tool_cpu_waited(0), wall0 = bench_now();
    for (unsigned r = 0; r < o->reps; r++) {
        size_t order[MAX_CAND];
        shuffle(order, nc, r);
        for (size_t i = 0; i < nc; i++) {
            size_t j = order[i];
            pami_xfer_t x = xfer_of(k, w, c[j].id, sbuf, rbuf, bytes);
            c[j].t[r] = loop(g, w, &x, c[j].ops) * 1e6 / (double)c[j].ops;
        }
    }
    double wait1 = tool_cpu_waited(0), wall = bench_now() - wall0;
    double cpu = wait0 >= 0 && wait1 >= 0 && wall > 0
               ? 1.0 - (wait1 - wait0) / wall : 1.0;
    bench_check(pami_geometry_allreduce(g->ctx, w, PAMI_IN_PLACE, &cpu, 1,
                                        PAMI_TYPE_DOUBLE, PAMI_OP_MIN),
                "allreduce");
    if (g->me != 0)
        return;
    double auto_us = median(c[0].t, o->reps), best_us = -1, builtin_us = -1;
    const char *best = NULL;
    for (size_t i = 1; i < nc; i++) {
        double m = median(c[i].t, o->reps);
        if (best == NULL || m < best_us) {
            best_us = m;
            best = c[i].name;
        }
        if (c[i].id == sel.builtin)
            builtin_us = m;
    }
    if (best == NULL)
        return;
    double ratio = best_us > 0 ? auto_us / best_us : 0;
    if (o->json) {
        printf("{\"test\": \"auto_vs_best\", \"collective\": \"%s\", "
               "\"bytes\": %llu, \"ranks\": %zu, \"auto\": \"%s\", "
               "\"auto_reason\": %d, \"best\": \"%s\", \"auto_us\": %.4f, "
               "\"best_us\": %.4f, \"ratio\": %.4f, \"builtin\": \"%s\", "
               "\"builtin_ratio\": ", k->name, (unsigned long long)bytes,
               g->size, sel.name ? sel.name : "", (int)sel.reason, best,
               auto_us, best_us, ratio,
               sel.builtin_name ? sel.builtin_name : "");
        if (builtin_us >= 0 && best_us > 0)
            printf("%.4f", builtin_us / best_us);
        else
            printf("null");
        printf(", \"reps\": %u, \"ops\": %llu, \"cpu\": %.3f}\n", o->reps,
               (unsigned long long)c[0].ops, cpu);
    } else {
        printf("%-15s %9llu  %-34s %9.2f  %-34s %9.2f  %6.3f  %6.3f  "
               "%5.2f\n", k->name, (unsigned long long)bytes,
               sel.name ? sel.name : "-", auto_us, best, best_us, ratio,
               builtin_us >= 0 && best_us > 0 ? builtin_us / best_us : 0,
               cpu);
    }
    fflush(stdout);
}

void auto_vs_best_run(group_t *g)
{
    const opts_t *o = g->opt;
    if (o->profile == NULL)
        bench_die("auto_vs_best needs --profile PROFILE.json");
    coll_profile_t p;
    char why[256];
    if (!coll_profile_load(o->profile, NULL, &p, NULL, NULL, 0, why,
                           sizeof(why)))
        bench_die("%s: %s", o->profile, why);
    pami_geometry_t w;
    bench_check(pami_geometry_world(g->ctx, &w), "pami_geometry_world");
    size_t cap = (size_t)(4u << 20) * g->size + 64;
    uint8_t *sbuf = calloc(1, cap), *rbuf = calloc(1, cap);
    if (sbuf == NULL || rbuf == NULL)
        bench_die("no memory for %zu-byte buffers", cap);
    for (size_t i = 0; i < cap / sizeof(double); i++)
        ((double *)sbuf)[i] = (double)(i % 7 + g->me);
    if (g->me == 0 && !o->json)
        printf("%-15s %9s  %-34s %9s  %-34s %9s  %6s  %6s  %5s\n",
               "collective", "bytes", "auto", "auto_us", "best", "best_us",
               "ratio", "builtin", "cpu");
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        uint64_t sizes[64];
        size_t ns = sizes_of(&p, o, kinds[i].kind, sizes, 64);
        for (size_t s = 0; s < ns; s++)
            point(g, w, &kinds[i], sizes[s], sbuf, rbuf);
    }
    free(sbuf);
    free(rbuf);
    coll_profile_free(&p);
}

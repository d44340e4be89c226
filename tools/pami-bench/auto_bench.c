/*
 * auto_vs_best: for every size the profile (--profile, also loaded as
 * PAMI_COLL_PROFILE) measured for allreduce, bcast, allgather, alltoall,
 * reduce_scatter and barrier (8 B - 4 MiB), AUTO's time beside the best
 * algorithm's, measured again in this run. Two passes, each interleaved
 * repetition by repetition so that the machine's noise falls on all
 * alike: pass 1 measures AUTO and every algorithm that can run the call
 * and names the best (task 0's medians); pass 2 measures AUTO, that best
 * and the built-in rules' pick again, with twice the repetitions, and
 * its figures are the ones reported. The best of many close candidates'
 * medians is biased low (the winner's curse); measured again, it is
 * not. ratio = AUTO's median time over the best's (auto_us / best_us,
 * as the issue that asked for the bench defines it), builtin_ratio the
 * same for the built-in rules' pick; paired_ratio and
 * paired_builtin_ratio = the median over pass 2's repetitions of the
 * time over the best's in the same repetition (paired: both saw the
 * machine in the same state), for a reader who wants the tighter figure.
 * docs/tuning.md, "pami-bench auto_vs_best".
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
#define CAL_OPS 32     /* calls that give a window's first guess */
#define GROW_STEPS 3   /* windows that grow the guess towards TARGET_S */

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
    double           t[64]; /* us per call, by repetition */
} cand_t;

/* One pass's medians, its paired ratios (the median over repetitions
 * of a candidate's time over the best's in the same repetition) and
 * cpu share. */
typedef struct {
    double auto_us, best_us, builtin_us, cpu; /* builtin_us < 0: none */
    double auto_paired, builtin_paired;
} pass_t;

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

/* Calls per window for about n: 1..MAX_OPS. */
static uint64_t ops_within(double n)
{
    return n < 1 ? 1 : n > MAX_OPS ? MAX_OPS : (uint64_t)n;
}

/* s[0..n-1] in ascending order (n <= 64: insertion). */
static void sort_up(double *s, unsigned n)
{
    for (unsigned i = 1; i < n; i++)
        for (unsigned j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
}

/* The q-quantile of sorted s, linear between the values at q (n - 1)
 * (Python's statistics.quantiles, method "inclusive"); q = 0.5 is the
 * median. */
static double quantile(const double *s, unsigned n, double q)
{
    double at = q * (n - 1);
    unsigned i = (unsigned)at;
    return i + 1 < n ? s[i] + (at - i) * (s[i + 1] - s[i]) : s[n - 1];
}

static double median(const double *v, unsigned n)
{
    double s[64];
    memcpy(s, v, n * sizeof(double));
    sort_up(s, n);
    return quantile(s, n, 0.5);
}

/* The q-quantile over the repetitions of a[r] / b[r]. */
static double paired_q(const double *a, const double *b, unsigned n, double q)
{
    double r[64];
    for (unsigned i = 0; i < n; i++)
        r[i] = b[i] > 0 ? a[i] / b[i] : 0;
    sort_up(r, n);
    return quantile(r, n, q);
}

/* Median over the repetitions of a[r] / b[r]: two candidates timed
 * side by side in one repetition share its state of the machine (a
 * neighbour's build, the scheduler's slices), which the ratio of their
 * medians does not pair. */
static double paired(const double *a, const double *b, unsigned n)
{
    return paired_q(a, b, n, 0.5);
}

/* The order of the candidates in repetition r: a shuffle that every
 * task draws alike (same seed), so that no candidate always follows the
 * same one. A rotation kept each one behind the same predecessor, so
 * whatever that leaves for a window's first calls (the pool's rooms,
 * the caches) fell on the same candidate in every repetition. The seed
 * is the point's and the pass's: seeded by r alone, every pass 2 of two
 * candidates ran one pattern (the best first in repetitions 0, 1 and 4,
 * AUTO, always candidate 0, in 2 and 3), so an effect of the place in a
 * repetition fell on the same side at every point. */
static void shuffle(size_t *order, size_t n, unsigned r, uint64_t seed)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (r + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
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

/* reps repetitions of the candidates c[pick[0..np-1]], in an order
 * shuffled anew every repetition; returns the smallest share over the
 * tasks of the time each had a CPU when it could run (its run-queue
 * wait, /proc/self/schedstat; below 1 by construction with more tasks
 * than CPUs). */
static double measure(group_t *g, pami_geometry_t w, const avb_kind_t *k,
                      cand_t *c, const size_t *pick, size_t np,
                      uint64_t bytes, void *sbuf, void *rbuf, unsigned pass,
                      unsigned reps)
{
    double wait0 = tool_cpu_waited(0), wall0 = bench_now();
    uint64_t seed = (uint64_t)k->kind << 56 ^ (uint64_t)pass << 48 ^ bytes;
    for (unsigned r = 0; r < reps; r++) {
        size_t order[MAX_CAND];
        shuffle(order, np, r, seed);
        for (size_t i = 0; i < np; i++) {
            cand_t *cj = &c[pick[order[i]]];
            pami_xfer_t x = xfer_of(k, w, cj->id, sbuf, rbuf, bytes);
            cj->t[r] = loop(g, w, &x, cj->ops) * 1e6 / (double)cj->ops;
        }
    }
    double wait1 = tool_cpu_waited(0), wall = bench_now() - wall0;
    double cpu = wait0 >= 0 && wait1 >= 0 && wall > 0
               ? 1.0 - (wait1 - wait0) / wall : 1.0;
    bench_check(pami_geometry_allreduce(g->ctx, w, PAMI_IN_PLACE, &cpu, 1,
                                        PAMI_TYPE_DOUBLE, PAMI_OP_MIN),
                "allreduce");
    return cpu;
}

/* A JSON array of n us figures. */
static void print_reps(const char *key, const double *t, unsigned n)
{
    printf(", \"%s\": [", key);
    for (unsigned r = 0; r < n; r++)
        printf("%s%.4f", r ? ", " : "", t[r]);
    printf("]");
}

/* A ratio of two medians; 0 when there is no denominator. */
static double of_medians(double num, double den)
{
    return den > 0 ? num / den : 0;
}

/* The profile's median of algorithm name at this point (the bench's
 * call: doubles summed for reductions, bytes otherwise; the job's size,
 * contiguous), or -1 when it has none. Beside the bench's own times it
 * shows whether the machine ran as fast as when the profile was made:
 * both algorithms far slower than their entries (s12, 2 tasks: 3 x at
 * 8 B) is another state of the machine, in which the profile's order
 * of two close algorithms need not hold. */
static double profile_us(const coll_profile_t *p, const avb_kind_t *k,
                         const char *name, uint64_t bytes, size_t size)
{
    uint8_t type = k->reduce ? PAMI_TYPE_DOUBLE : PAMI_TYPE_BYTE;
    uint8_t op = k->reduce ? PAMI_OP_SUM : COLL_PROFILE_OP_NONE;
    for (size_t i = 0; i < p->n; i++) {
        const coll_prof_entry_t *e = &p->e[i];
        if (e->kind == k->kind && !e->failed && e->bytes == bytes &&
            e->type == type && e->op == op && e->shape.size == size &&
            e->shape.layout == COLL_LAYOUT_CONTIGUOUS &&
            strcmp(e->algo, name) == 0)
            return e->median_us;
    }
    return -1;
}

/* `, "name": v` with 4 decimals, or null for v < 0 (no such figure). */
static void print_opt(const char *name, double v)
{
    if (v >= 0)
        printf(", \"%s\": %.4f", name, v);
    else
        printf(", \"%s\": null", name);
}

/* au: AUTO; bi: the built-in pick when another candidate than the
 * best, else NULL; aa: the best's twin in pass 2 (--aa), else NULL. */
static void print_point(group_t *g, const coll_profile_t *prof,
                        const avb_kind_t *k, uint64_t bytes,
                        const pami_algorithm_selection_t *sel,
                        const cand_t *au, const cand_t *best,
                        const cand_t *bi, const cand_t *aa, const pass_t *p1,
                        const pass_t *p2, uint64_t ops, unsigned reps2)
{
    const opts_t *o = g->opt;
    double ratio = of_medians(p2->auto_us, p2->best_us);
    double bratio = of_medians(p2->builtin_us, p2->best_us);
    if (!o->json) {
        printf("%-15s %9llu  %-34s %9.2f  %-34s %9.2f  %6.3f  %6.3f  "
               "%6.3f  %5.2f  %6.3f\n", k->name, (unsigned long long)bytes,
               sel->name ? sel->name : "-", p2->auto_us, best->name,
               p2->best_us, ratio, p2->auto_paired,
               p2->builtin_us >= 0 ? bratio : 0, p2->cpu,
               of_medians(p1->auto_us, p1->best_us));
        return;
    }
    printf("{\"test\": \"auto_vs_best\", \"collective\": \"%s\", "
           "\"bytes\": %llu, \"ranks\": %zu, \"auto\": \"%s\", "
           "\"auto_reason\": %d, \"best\": \"%s\", \"auto_us\": %.4f, "
           "\"best_us\": %.4f, \"ratio\": %.4f, \"paired_ratio\": %.4f, "
           "\"builtin\": \"%s\"", k->name,
           (unsigned long long)bytes, g->size,
           sel->name ? sel->name : "", (int)sel->reason, best->name,
           p2->auto_us, p2->best_us, ratio, p2->auto_paired,
           sel->builtin_name ? sel->builtin_name : "");
    print_opt("builtin_ratio", p2->builtin_us >= 0 ? bratio : -1);
    print_opt("paired_builtin_ratio",
              p2->builtin_us >= 0 ? p2->builtin_paired : -1);
    printf(", \"reps\": %u, \"ops\": %llu, \"cpu\": %.3f, "
           "\"pass1_auto_us\": %.4f, \"pass1_best_us\": %.4f, "
           "\"pass1_ratio\": %.4f, \"pass1_paired_ratio\": %.4f", reps2,
           (unsigned long long)ops, p2->cpu, p1->auto_us, p1->best_us,
           of_medians(p1->auto_us, p1->best_us), p1->auto_paired);
    print_opt("pass1_builtin_ratio",
              p1->builtin_us >= 0 ? of_medians(p1->builtin_us, p1->best_us)
                                  : -1);
    print_opt("pass1_paired_builtin_ratio",
              p1->builtin_us >= 0 ? p1->builtin_paired : -1);
    printf(", \"pass1_cpu\": %.3f, \"pass1_reps\": %u", p1->cpu, o->reps);
    /* The spread of AUTO's time over the best's, repetition by
     * repetition: a miss whose quartiles hold 1 is the noise of the
     * point, one whose first quartile is above 1.05 a real gap. */
    printf(", \"paired_q1\": %.4f, \"paired_q3\": %.4f",
           paired_q(au->t, best->t, reps2, 0.25),
           paired_q(au->t, best->t, reps2, 0.75));
    print_opt("profile_auto_us",
              sel->name ? profile_us(prof, k, sel->name, bytes, g->size)
                        : -1);
    print_opt("profile_best_us",
              profile_us(prof, k, best->name, bytes, g->size));
    if (aa != NULL) {
        printf(", \"aa_ratio\": %.4f, \"aa_paired_ratio\": %.4f",
               of_medians(median(aa->t, reps2), p2->best_us),
               paired(aa->t, best->t, reps2));
        print_reps("auto_reps", au->t, reps2);
        print_reps("best_reps", best->t, reps2);
        print_reps("aa_reps", aa->t, reps2);
        if (bi != NULL)
            print_reps("builtin_reps", bi->t, reps2);
    }
    printf("}\n");
}

static void point(group_t *g, const coll_profile_t *prof, pami_geometry_t w,
                  const avb_kind_t *k, uint64_t bytes, void *sbuf,
                  void *rbuf)
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
    if (na + nk > MAX_CAND - 2) /* AUTO and --aa's twin */
        bench_die("more than %d algorithms", MAX_CAND - 2);
    bench_check(pami_geometry_algorithms_query(w, k->kind, ids, md, na,
                                               ids + na, md + na, nk),
                "pami_geometry_algorithms_query");
    for (size_t i = 0; i < na + nk; i++) {
        pami_xfer_t x = xfer_of(k, w, ids[i], sbuf, rbuf, bytes);
        if (md[i].check != NULL && md[i].check(&x) != PAMI_SUCCESS)
            continue;
        c[nc++] = (cand_t){.id = ids[i], .name = md[i].name};
    }
    if (nc < 2)
        return;
    /* Warm-up of each, and its calls per measurement: a first guess
     * from its time over CAL_OPS calls when two took under 1 ms on
     * every task (task 0's guess, broadcast so that all agree), then
     * grown until a window of them takes at least half of TARGET_S by
     * the slowest task's clock.
     * Right after a barrier the first calls are slow (wake-ups, with
     * more tasks than CPUs the scheduler): the guess alone gave 8-task
     * windows of 0.2 ms for 0.4 us broadcasts, where the window's
     * closing barrier and the noise weigh, and unequally for two
     * candidates whose guesses differed. */
    uint64_t ops[MAX_CAND];
    for (size_t i = 0; i < nc; i++) {
        pami_xfer_t x = xfer_of(k, w, c[i].id, sbuf, rbuf, bytes);
        double per = loop(g, w, &x, 2) / 2;
        if (o->iters > 0) {
            ops[i] = (uint64_t)o->iters;
            continue;
        }
        /* Agreed: a task that ran CAL_OPS calls alone would hang. */
        bench_check(pami_geometry_allreduce(g->ctx, w, PAMI_IN_PLACE, &per,
                                            1, PAMI_TYPE_DOUBLE, PAMI_OP_MAX),
                    "allreduce");
        if (per < 0.5e-3)
            per = loop(g, w, &x, CAL_OPS) / CAL_OPS;
        ops[i] = ops_within(per > 0 ? TARGET_S / per : MAX_OPS);
        bench_check(pami_geometry_broadcast(g->ctx, w, 0, &ops[i], 1,
                                            PAMI_TYPE_UINT64), "broadcast");
        for (int step = 0; step < GROW_STEPS && ops[i] < MAX_OPS; step++) {
            double t = loop(g, w, &x, ops[i]);
            bench_check(pami_geometry_allreduce(g->ctx, w, PAMI_IN_PLACE, &t,
                                                1, PAMI_TYPE_DOUBLE,
                                                PAMI_OP_MAX), "allreduce");
            if (t >= TARGET_S / 2)
                break;
            ops[i] = ops_within(t > 0 ? (double)ops[i] * TARGET_S / t
                                      : MAX_OPS);
        }
    }
    /* AUTO takes the calls of the algorithm it runs (its twin, named):
     * two warm-ups of one algorithm size their windows apart by their
     * noise, a difference that is not AUTO's. */
    for (size_t i = 1; i < nc; i++)
        if (c[i].id == sel.algorithm)
            ops[0] = ops[i];
    bench_check(pami_geometry_broadcast(g->ctx, w, 0, ops, nc,
                                        PAMI_TYPE_UINT64), "broadcast");
    for (size_t i = 0; i < nc; i++)
        c[i].ops = ops[i];

    /* Pass 1: every candidate; task 0's medians name the best and find
     * the built-in rules' pick (pick[1], pick[2]: indices into c, the
     * builtin nc when it cannot run the call), broadcast so that every
     * task measures the same pass 2. */
    size_t all[MAX_CAND];
    for (size_t i = 0; i < nc; i++)
        all[i] = i;
    pass_t p1 = {.builtin_us = -1}, p2 = {.builtin_us = -1};
    p1.cpu = measure(g, w, k, c, all, nc, bytes, sbuf, rbuf, 1, o->reps);
    uint64_t pick[3] = {0, 1, nc};
    p1.auto_us = median(c[0].t, o->reps);
    p1.best_us = median(c[1].t, o->reps);
    for (size_t i = 1; i < nc; i++) {
        double m = median(c[i].t, o->reps);
        if (m < p1.best_us) {
            p1.best_us = m;
            pick[1] = i;
        }
        if (c[i].id == sel.builtin) {
            p1.builtin_us = m;
            pick[2] = i;
        }
    }
    bench_check(pami_geometry_broadcast(g->ctx, w, 0, pick, 3,
                                        PAMI_TYPE_UINT64), "broadcast");
    if (pick[1] < 1 || pick[1] >= nc || pick[2] < 1 || pick[2] > nc)
        bench_die("auto_vs_best: task 0's picks out of range");

    p1.auto_paired = paired(c[0].t, c[pick[1]].t, o->reps);
    if (pick[2] < nc)
        p1.builtin_paired = paired(c[pick[2]].t, c[pick[1]].t, o->reps);

    /* Pass 2: AUTO, the best and the built-in pick (when another)
     * again, interleaved; these are the reported figures. With --aa the
     * best also runs as a candidate of its own (c[nc], its twin): what
     * one algorithm against itself reads in this pass, the noise the
     * ratio of AUTO on the same algorithm reads too. */
    unsigned reps2 = 2 * o->reps < 63 ? 2 * o->reps : 63;
    size_t sel2[4] = {0, (size_t)pick[1], (size_t)pick[2]};
    size_t n2 = pick[2] == nc || pick[2] == pick[1] ? 2 : 3;
    cand_t *aa = NULL;
    if (o->aa) {
        c[nc] = c[pick[1]];
        aa = &c[nc];
        sel2[n2++] = nc;
    }
    p2.cpu = measure(g, w, k, c, sel2, n2, bytes, sbuf, rbuf, 2, reps2);
    if (g->me != 0)
        return;
    p2.auto_us = median(c[0].t, reps2);
    p2.best_us = median(c[pick[1]].t, reps2);
    p2.auto_paired = paired(c[0].t, c[pick[1]].t, reps2);
    if (pick[2] < nc) {
        p2.builtin_us = median(c[pick[2]].t, reps2);
        p2.builtin_paired = paired(c[pick[2]].t, c[pick[1]].t, reps2);
    }
    print_point(g, prof, k, bytes, &sel, &c[0], &c[pick[1]],
                n2 > 2 && pick[2] < nc && pick[2] != pick[1] ? &c[pick[2]]
                                                           : NULL,
                aa, &p1, &p2, c[0].ops, reps2);
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
        printf("%-15s %9s  %-34s %9s  %-34s %9s  %6s  %6s  %6s  %5s  %6s\n",
               "collective", "bytes", "auto", "auto_us", "best", "best_us",
               "ratio", "paired", "builtin", "cpu", "pass1");
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        uint64_t sizes[64];
        size_t ns = sizes_of(&p, o, kinds[i].kind, sizes, 64);
        for (size_t s = 0; s < ns; s++)
            point(g, &p, w, &kinds[i], sizes[s], sbuf, rbuf);
    }
    free(sbuf);
    free(rbuf);
    coll_profile_free(&p);
}

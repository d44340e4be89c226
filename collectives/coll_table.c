/*
 * A profile filtered for one geometry shape: per collective and type
 * class, rows "from lo bytes: algorithm", at each measured size the
 * algorithm the geometry can run whose worst ratio to the fastest over
 * the profile's rounds is smallest: the fastest when there is one round
 * (docs/tuning.md). Pure:
 * the same profile and shape give the same table (and hash) anywhere.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_profile.h"
#include "fnv1a.h"

unsigned coll_tclass(unsigned kind, unsigned type, unsigned op)
{
    if (!coll_kind_reduces(kind))
        return 0;
    unsigned c;
    switch (type) {
    case PAMI_TYPE_INT64:
    case PAMI_TYPE_UINT64:
        c = 2;
        break;
    case PAMI_TYPE_FLOAT:
        c = 3;
        break;
    case PAMI_TYPE_DOUBLE:
    case PAMI_TYPE_LONG_DOUBLE:
        c = 4;
        break;
    default:
        c = 1;
    }
    return op == PAMI_OP_USER ? c + 5 : c;
}

static bool same_shape(const coll_shape_t *a, const coll_shape_t *b)
{
    return a->size == b->size && a->nodes == b->nodes && a->ppn == b->ppn &&
           a->layout == b->layout;
}

/* Is candidate c nearer to want than the best so far? Size first (ratio),
 * then tasks per node, nodes, layout, and the smaller size on a tie. */
static bool nearer(const coll_shape_t *want, const coll_shape_t *c,
                   const coll_shape_t *best)
{
    double dc = fabs(log2((double)c->size / want->size));
    double db = fabs(log2((double)best->size / want->size));
    if (dc != db)
        return dc < db;
#define BY_(f) { long x = labs((long)c->f - (long)want->f),                 \
                      y = labs((long)best->f - (long)want->f);              \
                 if (x != y) return x < y; }
    BY_(ppn);
    BY_(nodes);
    BY_(layout);
#undef BY_
    return c->size < best->size;
}

/* The profile's shape for kind nearest to want; false when it has none. */
static bool pick_shape(const coll_profile_t *p, unsigned kind,
                       const coll_shape_t *want, coll_shape_t *out)
{
    bool have = false;
    for (size_t i = 0; i < p->n; i++) {
        const coll_prof_entry_t *e = &p->e[i];
        if (e->kind != kind || e->failed)
            continue;
        if (!have || nearer(want, &e->shape, out)) {
            *out = e->shape;
            have = true;
        }
    }
    return have;
}

typedef struct {
    uint64_t bytes;
    double   sum;
    unsigned n;
    uint8_t  algo;
    uint8_t  round;
} agg_t;

static int agg_cmp(const void *a, const void *b)
{
    const agg_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    if (x->algo != y->algo)
        return (int)x->algo - (int)y->algo;
    return (int)x->round - (int)y->round;
}

/* v's bytes least significant first, so every host hashes alike. */
static uint64_t fnv(uint64_t h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    return pami_fnv1a(h, b, sizeof(b));
}

/* An algorithm at one size: in how many of the rounds that measured the
 * size it was measured, and its worst ratio to the best of a round. */
typedef struct {
    uint8_t  algo;
    unsigned cover;
    double   worst;
} score_t;

static bool score_better(const score_t *a, const score_t *b)
{
    if (a->cover != b->cover)
        return a->cover > b->cover;
    if (a->worst != b->worst)
        return a->worst < b->worst;
    return a->algo < b->algo;
}

/* The choice at agg[i]'s size (agg sorted by size, algorithm, round),
 * in *end the index after the size's entries, and in *prev_s the score
 * of algorithm prev (cover 0 when it was not measured there). Minimax
 * regret over the rounds (docs/tuning.md): the algorithm whose worst
 * ratio to the fastest of a round is smallest, among those measured in
 * the most rounds. With one round it is the fastest. */
static score_t choose(const agg_t *agg, size_t i, size_t na, size_t *end,
                      unsigned prev, score_t *prev_s)
{
    double best[COLL_PROFILE_MAX_ROUNDS];
    for (size_t r = 0; r < COLL_PROFILE_MAX_ROUNDS; r++)
        best[r] = -1;
    size_t j = i;
    for (; j < na && agg[j].bytes == agg[i].bytes; j++) {
        double t = agg[j].sum / agg[j].n;
        if (best[agg[j].round] < 0 || t < best[agg[j].round])
            best[agg[j].round] = t;
    }
    *end = j;
    score_t win = {0};
    *prev_s = (score_t){0};
    for (size_t k = i; k < j;) {
        score_t s = {.algo = agg[k].algo};
        for (; k < j && agg[k].algo == s.algo; k++) {
            double b = best[agg[k].round], t = agg[k].sum / agg[k].n;
            double ratio = b > 0 ? t / b : t > 0 ? INFINITY : 1;
            s.cover++;
            if (ratio > s.worst)
                s.worst = ratio;
        }
        if (win.cover == 0 || score_better(&s, &win))
            win = s;
        if (s.algo == prev)
            *prev_s = s;
    }
    return win;
}

/* Rows of (kind, class) into t->rules from t->nrules on; agg has room
 * for every entry of p. */
static void build_span(const coll_profile_t *p, coll_table_t *t,
                       unsigned kind, unsigned cls, agg_t *agg,
                       coll_runnable_fn runnable, void *arg)
{
    coll_span_t *sp = &t->span[kind][cls];
    size_t na = 0;
    for (size_t i = 0; i < p->n; i++) {
        const coll_prof_entry_t *e = &p->e[i];
        if (e->kind != kind || e->failed ||
            !same_shape(&e->shape, &sp->shape) ||
            coll_tclass(kind, e->type, e->op) != cls)
            continue;
        unsigned id = runnable(arg, e->algo, kind, cls);
        if (id == 0 || id > UINT8_MAX)
            continue;
        /* Several types or ops of one class at one size and round: their
         * mean. */
        size_t j = 0;
        while (j < na && !(agg[j].bytes == e->bytes && agg[j].algo == id &&
                           agg[j].round == e->round))
            j++;
        if (j == na)
            agg[na++] = (agg_t){.bytes = e->bytes, .algo = (uint8_t)id,
                                .round = e->round};
        agg[j].sum += e->median_us;
        agg[j].n++;
    }
    if (na == 0)
        return;
    qsort(agg, na, sizeof(*agg), agg_cmp);
    sp->first = (uint32_t)t->nrules;
    uint64_t prev = 0;
    unsigned prev_algo = 0;
    for (size_t i = 0; i < na;) {
        size_t end = i, next_end;
        score_t kept, unused;
        score_t best = choose(agg, i, na, &end, prev_algo, &kept);
        /* A size alone between two that agree keeps their algorithm:
         * the previous size's stays first while its worst ratio is
         * within COLL_TABLE_STICKY of the choice's (with one round: it
         * is within that of the fastest) when the next size's choice is
         * it again (coll_profile.h). Where the next size agrees with
         * this one (a crossover) or there is none, the choice: keeping
         * the previous there spent the bench's whole 5 % (4 tasks,
         * reduce_scatter 256 KiB: _shm_cma kept 0.3 % behind in the
         * profile, 9 % behind in auto_vs_best). */
        if (kept.cover > 0 && kept.cover == best.cover && end < na &&
            choose(agg, end, na, &next_end, 0, &unused).algo == prev_algo &&
            kept.worst <= COLL_TABLE_STICKY * best.worst)
            best = kept;
        prev_algo = best.algo;
        uint64_t b = agg[i].bytes, lo;
        if (sp->n == 0)
            lo = b / 2;
        else if (prev == 0)
            lo = 1;
        else
            lo = (uint64_t)floor(sqrt((double)prev * (double)b)) + 1;
        t->rules[t->nrules++] = (coll_rule_t){.lo = lo, .point = b,
                                              .algo = best.algo};
        sp->n++;
        prev = b;
        i = end;
    }
    sp->hi = prev > UINT64_MAX / 2 ? UINT64_MAX : prev * 2;
}

coll_table_t *coll_table_build(const coll_profile_t *p,
                               const coll_shape_t *shape,
                               coll_runnable_fn runnable, void *arg)
{
    if (p == NULL || p->n == 0)
        return NULL;
    coll_table_t *t = calloc(1, sizeof(*t) + p->n * sizeof(coll_rule_t));
    agg_t *agg = malloc(p->n * sizeof(*agg));
    if (t == NULL || agg == NULL) {
        free(t);
        free(agg);
        return NULL;
    }
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++) {
        coll_shape_t s;
        if (!pick_shape(p, k, shape, &s))
            continue;
        for (unsigned c = 0; c < COLL_TCLASSES; c++) {
            t->span[k][c].shape = s;
            t->span[k][c].exact = s.size == shape->size &&
                                  s.nodes == shape->nodes &&
                                  s.ppn == shape->ppn;
            build_span(p, t, k, c, agg, runnable, arg);
        }
    }
    free(agg);
    if (t->nrules == 0) {
        free(t);
        return NULL;
    }
    uint64_t h = PAMI_FNV1A_INIT;
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++)
        for (unsigned c = 0; c < COLL_TCLASSES; c++) {
            const coll_span_t *sp = &t->span[k][c];
            if (sp->n == 0)
                continue;
            h = fnv(h, (uint64_t)k << 8 | c);
            h = fnv(h, sp->hi);
            for (uint32_t i = 0; i < sp->n; i++) {
                h = fnv(h, t->rules[sp->first + i].lo);
                h = fnv(h, t->rules[sp->first + i].algo);
            }
        }
    t->hash = h | 1; /* 0 means no table */
    coll_table_t *shrunk =
        realloc(t, sizeof(*t) + t->nrules * sizeof(coll_rule_t));
    return shrunk != NULL ? shrunk : t;
}

const coll_rule_t *coll_table_lookup(const coll_table_t *t, unsigned kind,
                                     unsigned tclass, uint64_t bytes)
{
    if (t == NULL || kind >= PAMI_XFER_COUNT || tclass >= COLL_TCLASSES)
        return NULL;
    const coll_span_t *sp = &t->span[kind][tclass];
    if (sp->n == 0 || bytes > sp->hi)
        return NULL;
    const coll_rule_t *r = &t->rules[sp->first];
    if (bytes < r[0].lo)
        return NULL;
    size_t lo = 0, hi = sp->n; /* r[lo].lo <= bytes < r[hi].lo */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].lo <= bytes)
            lo = mid;
        else
            hi = mid;
    }
    return &r[lo];
}

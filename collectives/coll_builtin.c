/*
 * The measured built-in rules (coll_builtin.h): spans chosen once per
 * geometry, rows found by binary search, names resolved to registry ids
 * once per process. Every input is the same on all members (shape,
 * collective, type class, bytes, the registry's checks), so all members
 * pick alike.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "coll_builtin.h"

#define ROW_ALGOS 8 /* gen_builtin_rules.py's MAX_ALGOS */

static uint8_t       (*row_ids)[ROW_ALGOS]; /* 0: unknown name */
static size_t          nrows;
static pthread_once_t  ids_once = PTHREAD_ONCE_INIT;

static bool           hand_only; /* PAMI_COLL_BUILTIN=rules */

static void resolve_ids(void)
{
    const char *v = getenv("PAMI_COLL_BUILTIN");
    if (v != NULL && strcmp(v, "rules") == 0) {
        hand_only = true;
        return;
    }
    if (v != NULL && *v != '\0' && strcmp(v, "measured") != 0)
        coll_warn("PAMI_COLL_BUILTIN=%s is neither measured nor rules: "
                  "measured", v);
    for (size_t i = 0; i < coll_builtin_nspans; i++) {
        size_t end = coll_builtin_spans[i].first + coll_builtin_spans[i].n;
        if (end > nrows)
            nrows = end;
    }
    row_ids = nrows ? calloc(nrows, sizeof(*row_ids)) : NULL;
    if (row_ids == NULL) {
        nrows = 0;
        return;
    }
    /* Names this build does not have (a profile of another version)
     * are left out of the row. */
    for (size_t r = 0; r < nrows; r++)
        for (size_t j = 0, k = 0; j < ROW_ALGOS &&
                                  coll_builtin_rows[r].algos[j] != NULL; j++) {
            pami_algorithm_t id;
            if (pami_algorithm_by_name(coll_builtin_rows[r].algos[j], &id) ==
                    PAMI_SUCCESS && id <= UINT8_MAX)
                row_ids[r][k++] = (uint8_t)id;
        }
}

void coll_builtin_geometry(struct pami_geometry *g)
{
    pthread_once(&ids_once, resolve_ids);
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++)
        for (unsigned c = 0; c < COLL_TCLASSES; c++)
            g->builtin[k][c] = 0;
    if (hand_only || g->shape.nodes != 1 || nrows == 0)
        return; /* measured on one node only */
    double best[PAMI_XFER_COUNT][COLL_TCLASSES] = {{0}};
    for (size_t i = 0; i < coll_builtin_nspans; i++) {
        const coll_builtin_span_t *sp = &coll_builtin_spans[i];
        if (sp->nodes != 1 || (unsigned)sp->kind >= PAMI_XFER_COUNT ||
            sp->tclass >= COLL_TCLASSES || sp->size == 0 || sp->n == 0)
            continue;
        double d = fabs(log2((double)sp->size / (double)g->shape.size));
        uint16_t *slot = &g->builtin[sp->kind][sp->tclass];
        double *b = &best[sp->kind][sp->tclass];
        /* Nearest size in log scale; on a tie the smaller. */
        if (*slot == 0 || d < *b ||
            (d == *b && sp->size < coll_builtin_spans[*slot - 1].size)) {
            *slot = (uint16_t)(i + 1);
            *b = d;
        }
    }
    /* A class the profiles lack takes the class of the same element
     * size: a user op its type's, then 64-bit integers double's (and
     * back), float 32-bit integers' (and back). */
    static const uint8_t same_size[5] = {0, 3, 4, 1, 2};
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++)
        for (unsigned c = 1; c < COLL_TCLASSES; c++) {
            unsigned base = c > 5 ? c - 5 : c;
            if (g->builtin[k][c] != 0 || base > 4)
                continue;
            g->builtin[k][c] = g->builtin[k][base] != 0
                                   ? g->builtin[k][base]
                                   : g->builtin[k][same_size[base]];
        }
}

pami_algorithm_t coll_builtin_pick(const pami_xfer_t *x,
                                   const struct pami_geometry *g,
                                   uint64_t bytes)
{
    if ((unsigned)x->kind >= PAMI_XFER_COUNT)
        return 0;
    unsigned cls = coll_tclass(x->kind, x->dtype, x->op);
    if (cls >= COLL_TCLASSES || g->builtin[x->kind][cls] == 0)
        return 0;
    const coll_builtin_span_t *sp =
        &coll_builtin_spans[g->builtin[x->kind][cls] - 1];
    const coll_builtin_row_t *r = &coll_builtin_rows[sp->first];
    if (bytes > sp->hi || bytes < r[0].lo)
        return 0;
    size_t lo = 0, hi = sp->n; /* r[lo].lo <= bytes < r[hi].lo */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].lo <= bytes)
            lo = mid;
        else
            hi = mid;
    }
    const uint8_t *ids = row_ids[sp->first + lo];
    for (size_t j = 0; j < ROW_ALGOS && ids[j] != 0; j++) {
        const coll_algo_t *a = &coll_algos[ids[j] - 1];
        if (a->build == coll_shm_build &&
            !coll_shm_auto_allowed(g->cc->ctx))
            continue; /* PAMI_COLL_SHM_AUTO=0 keeps AUTO off them */
        if (coll_algo_runs(a, x, g))
            return ids[j];
    }
    return 0;
}

/*
 * AUTO's measured built-in rules (docs/tuning.md, "Built-in rules"), in
 * a job without a profile: for every collective and size the committed
 * profiles measured, the query says "built-in" and names the algorithm
 * the generated table lists first among those this geometry runs (found
 * here from the table and the registry's own listing, not from the
 * library's look-up); each is run once and its result checked through
 * the algorithm's counter. On a sub-geometry that is not the node's
 * tasks the _shm algorithms are skipped. With PAMI_COLL_BUILTIN=rules
 * (tune_builtin rules) the measured table is not used: the query's pick
 * is the hand-set rule's, which the test sees through the reason's
 * counter only (both are "built-in").
 *
 *   tune_builtin [measured | rules]
 */
#include "../collectives/coll_util.h"

#include <math.h>

#include "coll_builtin.h"
#include "coll_profile.h"

static mp_job_t job;
static size_t   checked, differ;

/* The registry's algorithms of kind that g runs for x (check accepted). */
static bool listed(pami_geometry_t g, const pami_xfer_t *x, const char *name)
{
    size_t na, nc;
    pami_algorithm_t ids[64];
    pami_algorithm_metadata_t md[64];
    MP_CHECK(pami_geometry_algorithms_num(g, x->kind, &na, &nc));
    MP_EXPECT(na + nc <= 64, "%zu algorithms", na + nc);
    MP_CHECK(pami_geometry_algorithms_query(g, x->kind, ids, md, na,
                                            ids + na, md + na, nc));
    for (size_t i = 0; i < na + nc; i++)
        if (strcmp(md[i].name, name) == 0)
            return i < na || md[i].check(x) == PAMI_SUCCESS;
    return false;
}

/* The generated table's choice for x on a geometry of n tasks of one
 * node: the span of the nearest measured size (the smaller on a tie),
 * the row holding bytes, its first listed name; NULL outside the rows. */
static const char *expected(pami_geometry_t g, size_t n, const pami_xfer_t *x,
                            uint64_t bytes)
{
    unsigned cls = coll_tclass(x->kind, x->dtype, x->op);
    /* A class without rows: its type's without the user op, then the
     * class of the same element size (int64 - double, int32 - float). */
    static const unsigned same_size[5] = {0, 3, 4, 1, 2};
    unsigned order[3] = {cls, cls > 5 ? cls - 5 : cls, 0};
    order[2] = same_size[order[1]];
    const coll_builtin_span_t *best = NULL;
    for (size_t o = 0; o < 3 && best == NULL; o++)
        for (size_t i = 0; i < coll_builtin_nspans; i++) {
            const coll_builtin_span_t *sp = &coll_builtin_spans[i];
            if (sp->kind != x->kind || sp->tclass != order[o] ||
                sp->nodes != 1)
                continue;
            double d = fabs(log2((double)sp->size / (double)n));
            double b = best ? fabs(log2((double)best->size / (double)n)) : 0;
            if (best == NULL || d < b || (d == b && sp->size < best->size))
                best = sp;
        }
    if (best == NULL || bytes > best->hi ||
        bytes < coll_builtin_rows[best->first].lo)
        return NULL;
    size_t r = best->first;
    while (r + 1 < best->first + best->n && coll_builtin_rows[r + 1].lo <= bytes)
        r++;
    for (const char *const *a = coll_builtin_rows[r].algos; *a != NULL; a++) {
        pami_algorithm_t id;
        if (pami_algorithm_by_name(*a, &id) == PAMI_SUCCESS &&
            listed(g, x, *a))
            return *a;
    }
    return NULL;
}

/* Runs x (buffers big enough for every kind here) and returns the name
 * whose coll_select counter rose by one. */
static const char *run(pami_xfer_t *x, size_t n)
{
    size_t es = pami_type_size(x->dtype);
    size_t bytes = x->count * es * (n + 1) + 64;
    uint8_t *in = calloc(1, bytes), *out = calloc(1, bytes);
    if (in == NULL || out == NULL)
        mp_fail("no memory");
    pami_protocol_stat_t a[128], b[128];
    size_t na, nb;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "coll_select", a, 128, &na));
    x->sbuf = in;
    x->rbuf = out;
    MP_CHECK(pami_collective_wait(job.ctx[0], x));
    MP_CHECK(pami_protocol_stats(job.ctx[0], "coll_select", b, 128, &nb));
    free(in);
    free(out);
    const char *ran = NULL;
    for (size_t i = 0; i < nb && i < na; i++)
        if (strncmp(b[i].name, "selected_", 9) != 0 &&
            strncmp(b[i].name, "table_", 6) != 0 && b[i].value != a[i].value) {
            MP_EXPECT(ran == NULL && b[i].value == a[i].value + 1,
                      "more than one algorithm counted");
            ran = b[i].name;
        }
    MP_EXPECT(ran != NULL, "no algorithm counted");
    return ran;
}

static void sweep(const ct_geom_t *cg, bool measured)
{
    static const pami_xfer_type_t kinds[] = {
        PAMI_XFER_BROADCAST, PAMI_XFER_ALLREDUCE, PAMI_XFER_ALLGATHER,
        PAMI_XFER_ALLTOALL, PAMI_XFER_REDUCE_SCATTER};
    static const pami_type_t types[] = {PAMI_TYPE_INT32, PAMI_TYPE_DOUBLE,
                                        PAMI_TYPE_INT64, PAMI_TYPE_FLOAT};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (size_t t = 0; t < 4; t++) {
            bool red = coll_kind_reduces(kinds[k]);
            if (!red && t > 0)
                continue;
            pami_type_t ty = red ? types[t] : PAMI_TYPE_BYTE;
            size_t es = pami_type_size(ty);
            for (uint64_t bytes = 8; bytes <= 64 * 1024; bytes *= 8) {
                pami_xfer_t x = ct_xfer(cg->g, kinds[k], NULL, NULL, NULL,
                                        bytes / es, ty, 0);
                pami_algorithm_selection_t s;
                MP_CHECK(pami_geometry_algorithm_selected(&x, &s));
                MP_EXPECT(s.reason == PAMI_SELECTED_BUILTIN,
                          "kind %d %llu B: reason %d", (int)kinds[k],
                          (unsigned long long)bytes, (int)s.reason);
                const char *want = expected(cg->g, cg->n, &x, bytes);
                if (measured && want != NULL) {
                    MP_EXPECT(strcmp(s.name, want) == 0,
                              "%s kind %d type %d %llu B: AUTO takes %s, "
                              "the measured table %s", cg->name, (int)kinds[k],
                              (int)ty, (unsigned long long)bytes, s.name,
                              want);
                    checked++;
                } else if (want != NULL && strcmp(s.name, want) != 0) {
                    differ++;
                }
                const char *ran = run(&x, cg->n);
                MP_EXPECT(strcmp(ran, s.name) == 0,
                          "kind %d %llu B: the query said %s, %s ran",
                          (int)kinds[k], (unsigned long long)bytes, s.name,
                          ran);
            }
        }
}

int main(int argc, char **argv)
{
    bool measured = argc < 2 || strcmp(argv[1], "rules") != 0;
    if (!measured)
        setenv("PAMI_COLL_BUILTIN", "rules", 1);
    else
        unsetenv("PAMI_COLL_BUILTIN");
    mp_init(&job, "tune_builtin", &argc, argv, NULL, 1, true);
    ct_geom_t w;
    ct_world(&job, &w);
    w.name = "world";
    sweep(&w, measured);
    /* Every task but the last: not the node's tasks, so no _shm one. */
    if (w.n > 2) {
        pami_task_t tasks[64];
        for (size_t i = 0; i + 1 < w.n && i < 64; i++)
            tasks[i] = w.tasks[i];
        ct_geom_t sub;
        if (ct_create(&job, &sub, "all but the last", 77, tasks, w.n - 1,
                      NULL))
            sweep(&sub, measured);
    }
    if (measured)
        MP_EXPECT(checked > 0 || coll_builtin_nspans == 0,
                  "the measured table served no call");
    if (w.rank == 0)
        printf("tune_builtin %s: %zu tasks, %zu calls as the measured table "
               "says, %zu where the hand-set rule differs\n",
               measured ? "measured" : "rules", w.n, checked, differ);
    mp_sync(&job);
    mp_finish(&job);
    return 0;
}

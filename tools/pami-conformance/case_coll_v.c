/*
 * The v collectives (allgatherv, gatherv, scatterv, alltoallv):
 * v_every_algorithm checks every algorithm listed for them on the world
 * geometry with uneven counts (zeros included) and blocks laid out in
 * reverse rank order with gaps; v_refusals checks the refusals of their
 * count arrays.
 */
#include "cf.h"

#include <pami_collectives.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const pami_xfer_type_t vkinds[] = {
    PAMI_XFER_ALLGATHERV, PAMI_XFER_GATHERV, PAMI_XFER_SCATTERV,
    PAMI_XFER_ALLTOALLV};

/* Elements rank p sends to rank q (the v kinds other than alltoallv
 * use m(p, 0) as rank p's block); zero for some pairs. */
static size_t m_of(size_t p, size_t q, size_t base)
{
    return (p * 3 + q * 5 + base) % 7 == 0 ? 0 : (p + 2 * q) % 5 + base;
}

/* Element i of what rank p sends to rank q. */
static int64_t v_in(const cf_env_t *e, size_t p, size_t q, size_t i)
{
    return (int64_t)(p * 1000003 + q * 1009 + i * 7 + e->seed % 11);
}

/* Blocks in reverse rank order, one element of gap after each: displs of
 * counts c; the total length. */
static size_t layout(const size_t *c, size_t n, size_t *d)
{
    size_t off = 0;
    for (size_t q = n; q-- > 0;) {
        d[q] = off;
        off += c[q] + 1;
    }
    return off;
}

typedef struct {
    size_t  *rc, *rd, *sc, *sd;
    int64_t *sbuf, *rbuf, *want;
    size_t   rlen;
} vbufs_t;

/* The call's arrays and the serial result for rank r of n. */
static int v_prepare(cf_env_t *e, pami_xfer_type_t k, size_t n, size_t r,
                     size_t root, size_t base, vbufs_t *b, pami_xfer_t *x)
{
    b->rc = calloc(n, sizeof(size_t));
    b->rd = calloc(n, sizeof(size_t));
    b->sc = calloc(n, sizeof(size_t));
    b->sd = calloc(n, sizeof(size_t));
    if (!b->rc || !b->rd || !b->sc || !b->sd)
        return -1;
    size_t slen = 1, count = 0;
    b->rlen = 1;
    for (size_t q = 0; q < n; q++) {
        b->rc[q] = k == PAMI_XFER_ALLTOALLV ? m_of(q, r, base)
                                            : m_of(q, 0, base);
        b->sc[q] = k == PAMI_XFER_ALLTOALLV ? m_of(r, q, base)
                                            : m_of(q, 0, base);
    }
    b->rlen += layout(b->rc, n, b->rd);
    slen += layout(b->sc, n, b->sd);
    if (k == PAMI_XFER_ALLGATHERV || k == PAMI_XFER_GATHERV) {
        count = b->rc[r];
        slen = count + 1;
    } else if (k == PAMI_XFER_SCATTERV) {
        count = b->sc[r];
        b->rlen = count + 1;
    }
    b->sbuf = calloc(slen, sizeof(int64_t));
    b->rbuf = calloc(b->rlen, sizeof(int64_t));
    b->want = calloc(b->rlen, sizeof(int64_t));
    if (!b->sbuf || !b->rbuf || !b->want)
        return -1;
    for (size_t i = 0; i < b->rlen; i++)
        b->rbuf[i] = b->want[i] = -1; /* gaps stay -1 */
    switch (k) {
    case PAMI_XFER_ALLGATHERV:
    case PAMI_XFER_GATHERV:
        for (size_t i = 0; i < count; i++)
            b->sbuf[i] = v_in(e, r, 0, i);
        if (k == PAMI_XFER_GATHERV && r != root)
            break;
        for (size_t q = 0; q < n; q++)
            for (size_t i = 0; i < b->rc[q]; i++)
                b->want[b->rd[q] + i] = v_in(e, q, 0, i);
        break;
    case PAMI_XFER_SCATTERV:
        if (r == root)
            for (size_t q = 0; q < n; q++)
                for (size_t i = 0; i < b->sc[q]; i++)
                    b->sbuf[b->sd[q] + i] = v_in(e, root, q, i);
        for (size_t i = 0; i < count; i++)
            b->want[i] = v_in(e, root, r, i);
        break;
    default: /* alltoallv */
        for (size_t q = 0; q < n; q++) {
            for (size_t i = 0; i < b->sc[q]; i++)
                b->sbuf[b->sd[q] + i] = v_in(e, r, q, i);
            for (size_t i = 0; i < b->rc[q]; i++)
                b->want[b->rd[q] + i] = v_in(e, q, r, i);
        }
        break;
    }
    *x = (pami_xfer_t){.field_mask = PAMI_XFER_FIELD_VCOUNTS, .kind = k,
                       .root = root, .sbuf = b->sbuf, .rbuf = b->rbuf,
                       .count = count, .dtype = PAMI_TYPE_INT64,
                       .op = PAMI_OP_SUM, .rcounts = b->rc,
                       .rdispls = b->rd, .scounts = b->sc, .sdispls = b->sd};
    return 0;
}

static void v_free(vbufs_t *b)
{
    free(b->rc), free(b->rd), free(b->sc), free(b->sd);
    free(b->sbuf), free(b->rbuf), free(b->want);
}

/* 1 when the algorithm ran (its check accepted the call). */
static int v_one(cf_env_t *e, pami_geometry_t g, size_t n, size_t r,
                 pami_xfer_type_t k, pami_algorithm_t alg,
                 const pami_algorithm_metadata_t *md, size_t base)
{
    vbufs_t b = {0};
    pami_xfer_t x;
    size_t root = n / 2;
    if (v_prepare(e, k, n, r, root, base, &b, &x) != 0) {
        CF_FAIL(e, "expected memory");
        v_free(&b);
        return 0;
    }
    x.geometry = g;
    x.field_mask |= PAMI_XFER_FIELD_ALGORITHM;
    x.algorithm = alg;
    /* A check-list algorithm runs only where its check accepts the call
     * (the same verdict on every member: the check sees this task's
     * counts, so ask everyone). */
    int run = md->check == NULL || md->check(&x) == PAMI_SUCCESS;
    int all[1024];
    if (n <= 1024 && md->check != NULL) {
        if (cf_allgather(&run, all, sizeof(run)) != 0) {
            CF_FAIL(e, "expected the runner's exchange");
            v_free(&b);
            return 0;
        }
        for (size_t q = 0; q < n; q++)
            run = run && all[q];
    }
    if (run) {
        pami_result_t rc = pami_collective_wait(e->ctx, &x);
        if (rc != PAMI_SUCCESS)
            CF_FAIL(e, "%s (base %zu): expected PAMI_SUCCESS, seen %s",
                    md->name, base, cf_rc_name(rc));
        else
            for (size_t i = 0; i < b.rlen - 1; i++)
                if (b.rbuf[i] != b.want[i]) {
                    CF_FAIL(e, "%s (base %zu, blocks in reverse rank order "
                            "with gaps): expected rbuf[%zu] = %lld (serial; "
                            "-1: a gap, untouched), seen %lld", md->name,
                            base, i, (long long)b.want[i],
                            (long long)b.rbuf[i]);
                    break;
                }
    }
    v_free(&b);
    return run;
}

static void v_every_algorithm(cf_env_t *e)
{
    pami_geometry_t g;
    CF_OK(e, pami_geometry_world(e->ctx, &g));
    size_t n = e->size, r = e->task;
    for (size_t k = 0; k < sizeof(vkinds) / sizeof(vkinds[0]) && !e->failed;
         k++) {
        size_t na = 0, nc = 0;
        CF_OK(e, pami_geometry_algorithms_num(g, vkinds[k], &na, &nc));
        CF_CHECK(e, na + nc > 0, "expected an algorithm of kind %d",
                 (int)vkinds[k]);
        pami_algorithm_t al[64];
        pami_algorithm_metadata_t md[64];
        if (na > 32)
            na = 32;
        if (nc > 32)
            nc = 32;
        CF_OK(e, pami_geometry_algorithms_query(g, vkinds[k], al, md, na,
                                                al + na, md + na, nc));
        size_t ran = 0;
        for (size_t a = 0; a < na + nc && !e->failed; a++)
            for (size_t base = 0; base <= 300 && !e->failed; base += 150)
                ran += (size_t)v_one(e, g, n, r, vkinds[k], al[a], &md[a],
                                     base);
        CF_CHECK(e, ran >= 3, "expected an algorithm of kind %d to run at "
                 "every size, seen %zu runs", (int)vkinds[k], ran);
    }
}

/* collectives.md: "PAMI_INVAL (with one log line) for ... bad buffers";
 * the v arrays are read as "size entries each" (pami_collectives.h). On
 * a geometry of this task alone (so every array is read, and the refused
 * calls, which "still count as that geometry's next collective", concern
 * nobody else); then a valid call on it still gives its result. */
static void v_refusals(cf_env_t *e)
{
    pami_geometry_t world, g = NULL;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    pami_task_t me = e->task;
    CF_OK(e, pami_geometry_create_tasklist(e->ctx, world, 100 + me, &me, 1,
                                           NULL, &g, NULL, NULL));
    CF_OK(e, pami_geometry_wait_ready(e->ctx, g));
    cf_count_t d = {0};
    size_t huge = SIZE_MAX / 2;
    for (size_t k = 0; k < sizeof(vkinds) / sizeof(vkinds[0]) && !e->failed;
         k++) {
        vbufs_t b = {0};
        pami_xfer_t x;
        if (v_prepare(e, vkinds[k], 1, 0, 0, 3, &b, &x) != 0) {
            CF_FAIL(e, "expected memory");
            v_free(&b);
            break;
        }
        x.geometry = g;
        x.done_fn = cf_count_fn;
        x.cookie = &d;
        int uses_r = vkinds[k] != PAMI_XFER_SCATTERV;
        int uses_s = vkinds[k] == PAMI_XFER_SCATTERV ||
                     vkinds[k] == PAMI_XFER_ALLTOALLV;
        struct {
            const char *what;
            const size_t **field;
            const size_t *value;
            int applies;
        } bad[] = {
            {"NULL rcounts", &x.rcounts, NULL, uses_r},
            {"NULL rdispls", &x.rdispls, NULL, uses_r},
            {"rcounts near SIZE_MAX", &x.rcounts, &huge, uses_r},
            {"rdispls near SIZE_MAX (the block's end overflows)", &x.rdispls,
             &huge, uses_r},
            {"NULL scounts", &x.scounts, NULL, uses_s},
            {"NULL sdispls", &x.sdispls, NULL, uses_s},
            {"scounts near SIZE_MAX", &x.scounts, &huge, uses_s},
            {"sdispls near SIZE_MAX", &x.sdispls, &huge, uses_s},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            if (!bad[i].applies)
                continue;
            const size_t *keep = *bad[i].field;
            *bad[i].field = bad[i].value;
            pami_result_t rc = pami_collective(e->ctx, &x);
            *bad[i].field = keep;
            if (rc != PAMI_INVAL) {
                CF_FAIL(e, "kind %d: expected PAMI_INVAL for %s, seen %s",
                        (int)vkinds[k], bad[i].what, cf_rc_name(rc));
                break;
            }
        }
        /* The v arrays are read only with their field_mask bit. */
        if (!e->failed) {
            x.field_mask &= ~(uint64_t)PAMI_XFER_FIELD_VCOUNTS;
            pami_result_t rc = pami_collective(e->ctx, &x);
            x.field_mask |= PAMI_XFER_FIELD_VCOUNTS;
            if (rc != PAMI_INVAL)
                CF_FAIL(e, "kind %d: expected PAMI_INVAL without "
                        "PAMI_XFER_FIELD_VCOUNTS, seen %s", (int)vkinds[k],
                        cf_rc_name(rc));
        }
        /* "count is rcounts[rank]" (scounts[rank] for scatterv). */
        if (!e->failed && vkinds[k] != PAMI_XFER_ALLTOALLV) {
            x.count++;
            pami_result_t rc = pami_collective(e->ctx, &x);
            x.count--;
            if (rc != PAMI_INVAL)
                CF_FAIL(e, "kind %d: expected PAMI_INVAL for a count that is "
                        "not this rank's entry of the counts, seen %s",
                        (int)vkinds[k], cf_rc_name(rc));
        }
        /* The geometry still works: the well-formed call. */
        if (!e->failed) {
            x.done_fn = NULL;
            pami_result_t rc = pami_collective_wait(e->ctx, &x);
            if (rc != PAMI_SUCCESS)
                CF_FAIL(e, "kind %d: expected the well-formed call after the "
                        "refused ones to succeed, seen %s", (int)vkinds[k],
                        cf_rc_name(rc));
            else if (memcmp(b.rbuf, b.want, (b.rlen - 1) * sizeof(int64_t)))
                CF_FAIL(e, "kind %d: expected the serial result after the "
                        "refused calls", (int)vkinds[k]);
        }
        v_free(&b);
    }
    CF_CHECK(e, d.n == 0, "expected no done_fn for a refused call, seen %zu",
             d.n);
    pami_result_t rc;
    while ((rc = pami_geometry_destroy(&g)) == PAMI_EAGAIN)
        pami_context_wait(e->ctx, 10);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected the geometry destroyed, seen %s",
             cf_rc_name(rc));
}

const cf_case_t cf_coll_v_cases[] = {
    {"coll", "v_every_algorithm", 1, 0, 0, v_every_algorithm, NULL},
    {"coll", "v_refusals", 1, 0, 0, v_refusals, NULL},
};
const size_t cf_num_coll_v_cases =
    sizeof(cf_coll_v_cases) / sizeof(cf_coll_v_cases[0]);

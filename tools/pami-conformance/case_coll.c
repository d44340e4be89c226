/*
 * Suite coll: every algorithm the registry offers for a call, on the world
 * geometry and on sub-geometries, against the same computation done
 * serially from every rank's known input.
 */
#include "cf.h"

#include <pami_collectives.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank r's input element i. */
static int64_t in_of(const cf_env_t *e, size_t r, size_t i)
{
    return (int64_t)((r + 1) * 1000003 + i * 7 + e->seed % 13);
}

typedef struct {
    cf_env_t       *e;
    pami_geometry_t g;
    size_t          gsize, grank;
    const char     *gname;
} geo_t;

static void expect_eq(cf_env_t *e, const geo_t *g, const char *alg,
                      const int64_t *got, const int64_t *want, size_t n,
                      const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            CF_FAIL(e, "%s on %s: expected %s[%zu] = %lld (serial), seen "
                    "%lld", alg, g->gname, what, i, (long long)want[i],
                    (long long)got[i]);
            return;
        }
}

/* One run of kind with algorithm alg on g; count elements per block. */
static void one(cf_env_t *e, const geo_t *g, pami_xfer_type_t kind,
                pami_algorithm_t alg, const char *name,
                pami_data_function check_only, size_t count)
{
    (void)check_only;
    size_t P = g->gsize, r = g->grank, root = P - 1;
    size_t blocks = (kind == PAMI_XFER_ALLGATHER || kind == PAMI_XFER_GATHER ||
                     kind == PAMI_XFER_SCATTER || kind == PAMI_XFER_ALLTOALL ||
                     kind == PAMI_XFER_REDUCE_SCATTER) ? P : 1;
    int64_t *sbuf = calloc(count * P + 1, sizeof(int64_t));
    int64_t *rbuf = calloc(count * P + 1, sizeof(int64_t));
    int64_t *want = calloc(count * P + 1, sizeof(int64_t));
    /* The input of geometry rank q is in_of(q, .): the same data whatever
     * task holds the rank. */
    size_t sn = (kind == PAMI_XFER_ALLTOALL || kind == PAMI_XFER_SCATTER ||
                 kind == PAMI_XFER_REDUCE_SCATTER) ? P * count : count;
    for (size_t i = 0; i < sn; i++)
        sbuf[i] = in_of(e, r, i);
    size_t rn = 0;
    switch (kind) {
    case PAMI_XFER_BARRIER:
        break;
    case PAMI_XFER_BROADCAST:
        rn = count;
        if (r == root)
            memcpy(rbuf, sbuf, count * sizeof(int64_t));
        for (size_t i = 0; i < count; i++)
            want[i] = in_of(e, root, i);
        break;
    case PAMI_XFER_REDUCE:
    case PAMI_XFER_ALLREDUCE:
    case PAMI_XFER_SCAN:
    case PAMI_XFER_EXSCAN: {
        size_t upto = kind == PAMI_XFER_SCAN ? r + 1
                      : kind == PAMI_XFER_EXSCAN ? r : P;
        rn = (kind == PAMI_XFER_REDUCE && r != root) ||
             (kind == PAMI_XFER_EXSCAN && r == 0) ? 0 : count;
        for (size_t i = 0; i < count; i++)
            for (size_t q = 0; q < upto; q++)
                want[i] += in_of(e, q, i);
        break;
    }
    case PAMI_XFER_ALLGATHER:
    case PAMI_XFER_GATHER:
        rn = kind == PAMI_XFER_GATHER && r != root ? 0 : P * count;
        for (size_t q = 0; q < P; q++)
            for (size_t i = 0; i < count; i++)
                want[q * count + i] = in_of(e, q, i);
        break;
    case PAMI_XFER_SCATTER:
        rn = count;
        for (size_t i = 0; i < count; i++)
            want[i] = in_of(e, root, r * count + i);
        break;
    case PAMI_XFER_ALLTOALL:
        rn = P * count;
        for (size_t q = 0; q < P; q++)
            for (size_t i = 0; i < count; i++)
                want[q * count + i] = in_of(e, q, r * count + i);
        break;
    case PAMI_XFER_REDUCE_SCATTER:
        rn = count;
        for (size_t i = 0; i < count; i++)
            for (size_t q = 0; q < P; q++)
                want[i] += in_of(e, q, r * count + i);
        break;
    default:
        break;
    }
    (void)blocks;
    pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM, .kind = kind,
                     .geometry = g->g, .algorithm = alg, .root = root,
                     .sbuf = sbuf, .rbuf = rbuf, .count = count,
                     .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    pami_result_t rc = pami_collective_wait(e->ctx, &x);
    if (rc != PAMI_SUCCESS)
        CF_FAIL(e, "%s on %s (%zu elements): expected PAMI_SUCCESS, seen %s",
                name, g->gname, count, cf_rc_name(rc));
    else
        expect_eq(e, g, name, rbuf, want, rn, "rbuf");
    free(sbuf);
    free(rbuf);
    free(want);
}

static const pami_xfer_type_t kinds[] = {
    PAMI_XFER_BARRIER, PAMI_XFER_BROADCAST, PAMI_XFER_REDUCE,
    PAMI_XFER_ALLREDUCE, PAMI_XFER_ALLGATHER, PAMI_XFER_GATHER,
    PAMI_XFER_SCATTER, PAMI_XFER_ALLTOALL, PAMI_XFER_REDUCE_SCATTER,
    PAMI_XFER_SCAN, PAMI_XFER_EXSCAN};

/* Every algorithm of every kind on g; the check-list ones where their
 * check accepts the call (the same verdict on every member). */
static void every_algorithm(cf_env_t *e, const geo_t *g)
{
    static const size_t counts[] = {1, 5, 2000};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && !e->failed;
         k++) {
        size_t na = 0, nc = 0;
        pami_result_t rc = pami_geometry_algorithms_num(g->g, kinds[k], &na,
                                                        &nc);
        if (rc != PAMI_SUCCESS) {
            CF_FAIL(e, "expected the algorithms of kind %d on %s, seen %s",
                    (int)kinds[k], g->gname, cf_rc_name(rc));
            return;
        }
        if (na + nc == 0) {
            CF_FAIL(e, "expected an algorithm of kind %d on %s, seen none",
                    (int)kinds[k], g->gname);
            return;
        }
        pami_algorithm_t *al = calloc(na + nc + 1, sizeof(*al));
        pami_algorithm_metadata_t *md = calloc(na + nc + 1, sizeof(*md));
        rc = pami_geometry_algorithms_query(g->g, kinds[k], al, md, na,
                                            al + na, md + na, nc);
        if (rc != PAMI_SUCCESS)
            CF_FAIL(e, "expected algorithms_query to succeed, seen %s",
                    cf_rc_name(rc));
        for (size_t a = 0; a < na + nc && !e->failed; a++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]) &&
                               !e->failed; c++) {
                if (a >= na && md[a].check != NULL) {
                    pami_xfer_t probe = {
                        .field_mask = PAMI_XFER_FIELD_ALGORITHM,
                        .kind = kinds[k], .geometry = g->g, .algorithm = al[a],
                        .root = g->gsize - 1, .count = counts[c],
                        .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
                    int64_t dummy;
                    probe.sbuf = &dummy;
                    probe.rbuf = &dummy;
                    if (md[a].check(&probe) != PAMI_SUCCESS)
                        continue;
                }
                one(e, g, kinds[k], al[a], md[a].name ? md[a].name : "?",
                    NULL, counts[c]);
            }
        free(al);
        free(md);
    }
}

static int make_geo(cf_env_t *e, geo_t *g, uint32_t id, const pami_task_t *t,
                    size_t n, const char *name)
{
    pami_geometry_t world;
    pami_geometry_world(e->ctx, &world);
    g->e = e;
    g->gname = name;
    pami_result_t rc = pami_geometry_create_tasklist(e->ctx, world, id, t, n,
                                                     NULL, &g->g, NULL, NULL);
    if (rc == PAMI_SUCCESS)
        rc = pami_geometry_wait_ready(e->ctx, g->g);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(e, "expected geometry %s to be made, seen %s", name,
                cf_rc_name(rc));
        return -1;
    }
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE |
                                            PAMI_GEOMETRY_ATTR_RANK};
    pami_geometry_query(g->g, &a);
    g->gsize = a.size;
    g->grank = a.rank;
    if (a.size != n) {
        CF_FAIL(e, "expected %s of %zu ranks, seen %zu", name, n, a.size);
        return -1;
    }
    return 0;
}

static void world(cf_env_t *e)
{
    geo_t g = {.e = e, .gname = "world"};
    CF_OK(e, pami_geometry_world(e->ctx, &g.g));
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE |
                                            PAMI_GEOMETRY_ATTR_RANK |
                                            PAMI_GEOMETRY_ATTR_ID};
    CF_OK(e, pami_geometry_query(g.g, &a));
    CF_CHECK(e, a.size == e->size && a.rank == e->task && a.id == 0,
             "expected world of %zu with rank %u and id 0, seen %zu, %zu, %u",
             e->size, e->task, a.size, a.rank, a.id);
    g.gsize = a.size;
    g.grank = a.rank;
    every_algorithm(e, &g);
    pami_geometry_t w = g.g;
    CF_RC(e, PAMI_INVAL, pami_geometry_destroy(&w));
}

static void sub_reversed(cf_env_t *e)
{
    pami_task_t *t = calloc(e->size, sizeof(*t));
    for (size_t i = 0; i < e->size; i++)
        t[i] = (pami_task_t)(e->size - 1 - i);
    geo_t g;
    if (make_geo(e, &g, 7, t, e->size, "the reversed world") == 0) {
        every_algorithm(e, &g);
        pami_result_t rc;
        while ((rc = pami_geometry_destroy(&g.g)) == PAMI_EAGAIN)
            pami_context_wait(e->ctx, 10);
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected the geometry destroyed, "
                 "seen %s", cf_rc_name(rc));
    }
    free(t);
}

static void sub_odd(cf_env_t *e)
{
    /* Tasks 1, 3, 5, ...: the others do not take part at all. */
    size_t n = e->size / 2;
    pami_task_t t[64];
    for (size_t i = 0; i < n && i < 64; i++)
        t[i] = (pami_task_t)(2 * i + 1);
    if (e->task % 2 == 1) {
        geo_t g;
        if (make_geo(e, &g, 9, t, n, "the odd tasks") == 0) {
            every_algorithm(e, &g);
            pami_result_t rc;
            while ((rc = pami_geometry_destroy(&g.g)) == PAMI_EAGAIN)
                pami_context_wait(e->ctx, 10);
        }
    }
    /* Everyone meets again before the job ends. */
    pami_dispatch_fence(e->client);
}

static void mismatch(cf_env_t *e)
{
    /* Members passing different lists: fn gets PAMI_INVAL. */
    pami_geometry_t world, g = NULL;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    pami_task_t t[2] = {0, 1};
    if (e->task == 1) {
        t[0] = 1;
        t[1] = 0;
    }
    if (e->task > 1) {
        pami_dispatch_fence(e->client);
        return;
    }
    CF_OK(e, pami_geometry_create_tasklist(e->ctx, world, 11, t, 2, NULL, &g,
                                           NULL, NULL));
    pami_result_t rc = pami_geometry_wait_ready(e->ctx, g);
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for members passing "
             "different lists, seen %s", cf_rc_name(rc));
    while (pami_geometry_destroy(&g) == PAMI_EAGAIN)
        pami_context_wait(e->ctx, 10);
    pami_dispatch_fence(e->client);
}

const cf_case_t cf_coll_cases[] = {
    {"coll", "world_every_algorithm", 1, 0, 0, world, NULL},
    {"coll", "reversed_every_algorithm", 2, 0, 0, sub_reversed, NULL},
    {"coll", "odd_tasks_every_algorithm", 2, 128, 0, sub_odd, NULL},
    {"coll", "geometry_mismatch", 2, 0, 0, mismatch, NULL},
};
const size_t cf_num_coll_cases =
    sizeof(cf_coll_cases) / sizeof(cf_coll_cases[0]);

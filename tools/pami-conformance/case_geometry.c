/*
 * Suite coll, the calls one by one: the geometry and registry calls'
 * results (collectives.md's table), what pami_collective refuses, every
 * reduction op against the serial result, and a user op's rank order.
 * Each case names the sentences it checks in docs/conformance.md.
 */
#include "cf.h"

#include <pami_collectives.h>

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t        n;
    pami_result_t rc;
} ev_t;

static void ev_fn(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    ev_t *v = k;
    v->rc = rc;
    v->n++;
}

/* ---- geometry_calls ---- */

static void geometry_calls(cf_env_t *e)
{
    pami_geometry_t world, g = NULL;
    CF_RC(e, PAMI_INVAL, pami_geometry_world(e->ctx, NULL));
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_ID |
                                            PAMI_GEOMETRY_ATTR_SIZE |
                                            PAMI_GEOMETRY_ATTR_RANK |
                                            PAMI_GEOMETRY_ATTR_TASKS |
                                            PAMI_GEOMETRY_ATTR_READY};
    CF_OK(e, pami_geometry_query(world, &a));
    CF_CHECK(e, a.id == 0 && a.size == e->size && a.rank == e->task &&
                    a.ready && a.tasks != NULL,
             "expected the world: id 0, size %zu, rank %u, ready; seen id "
             "%u, size %zu, rank %zu, ready %d", e->size, e->task, a.id,
             a.size, a.rank, a.ready);
    for (size_t i = 0; i < e->size; i++)
        CF_CHECK(e, a.tasks[i] == i, "expected the world in task order, "
                 "seen task %u at rank %zu", a.tasks[i], i);
    CF_RC(e, PAMI_INVAL, pami_geometry_query(NULL, &a));
    CF_RC(e, PAMI_INVAL, pami_geometry_query(world, NULL));
    a.field_mask = 1ull << 33;
    CF_RC(e, PAMI_INVAL, pami_geometry_query(world, &a));
    CF_RC(e, PAMI_INVAL, pami_geometry_destroy(NULL));
    pami_geometry_t none = NULL;
    CF_RC(e, PAMI_INVAL, pami_geometry_destroy(&none));
    CF_RC(e, PAMI_INVAL, pami_geometry_wait_ready(e->ctx, NULL));
    /* Refused creations, the same on every task (no message). */
    pami_task_t all[64], dup[2] = {0, 0}, beyond[1] = {(pami_task_t)e->size};
    size_t n = e->size < 64 ? e->size : 64;
    for (size_t i = 0; i < n; i++)
        all[i] = (pami_task_t)i;
    ev_t v = {0};
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 0, all, n, NULL, &g, ev_fn, &v));
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, all, 0, NULL, &g, ev_fn, &v));
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, all, n, NULL, NULL, ev_fn,
                             &v));
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, NULL, 3, all, n, NULL, &g, ev_fn, &v));
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, beyond, 1, NULL, &g, ev_fn,
                             &v));
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, dup, 2, NULL, &g, ev_fn, &v));
    pami_geometry_params_t gp = {.field_mask = 1ull << 20};
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, all, n, &gp, &g, ev_fn, &v));
    gp.field_mask = PAMI_GEOMETRY_PARAM_CONNID_THRESHOLD;
    gp.connid_threshold = 0;
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, all, n, &gp, &g, ev_fn, &v));
    gp.connid_threshold = PAMI_CONNID_BUFFER + 1;
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, all, n, &gp, &g, ev_fn, &v));
    pami_geometry_range_t bad_range = {.lo = 1, .hi = 0};
    CF_RC(e, PAMI_INVAL, pami_geometry_create_taskrange(
                             e->ctx, world, 3, &bad_range, 1, NULL, &g,
                             ev_fn, &v));
    CF_RC(e, PAMI_INVAL, pami_geometry_create_taskrange(
                             e->ctx, world, 3, &bad_range, 0, NULL, &g,
                             ev_fn, &v));
    CF_CHECK(e, v.n == 0, "expected no fn for a refused creation");
    /* The whole job by range, with its threshold. */
    pami_geometry_range_t whole = {.lo = 0, .hi = (pami_task_t)(e->size - 1)};
    gp.connid_threshold = 3;
    CF_OK(e, pami_geometry_create_taskrange(e->ctx, world, 3, &whole, 1, &gp,
                                            &g, ev_fn, &v));
    CF_OK(e, pami_geometry_wait_ready(e->ctx, g));
    cf_wait_count(e, &v.n, 1, "the creation's fn");
    CF_CHECK(e, v.rc == PAMI_SUCCESS, "expected fn PAMI_SUCCESS, seen %s",
             cf_rc_name(v.rc));
    /* An id a live geometry has. */
    pami_geometry_t g2 = NULL;
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             e->ctx, world, 3, all, n, NULL, &g2, ev_fn,
                             &v));
    a.field_mask = PAMI_GEOMETRY_ATTR_ID | PAMI_GEOMETRY_ATTR_SIZE |
                   PAMI_GEOMETRY_ATTR_TASKS | PAMI_GEOMETRY_ATTR_CONNID |
                   PAMI_GEOMETRY_ATTR_READY;
    CF_OK(e, pami_geometry_query(g, &a));
    CF_CHECK(e, a.id == 3 && a.size == e->size && a.ready &&
                    a.connid_threshold == 3,
             "expected id 3 of %zu tasks, ready, threshold 3; seen id %u, "
             "%zu, ready %d, threshold %u", e->size, a.id, a.size, a.ready,
             a.connid_threshold);
    for (size_t i = 0; i < e->size; i++)
        CF_CHECK(e, a.tasks[i] == i, "expected the range's tasks in order");
    CF_OK(e, pami_geometry_barrier(e->ctx, g));
    CF_OK(e, pami_geometry_destroy(&g));
    CF_CHECK(e, g == NULL, "expected destroy to set the handle NULL");
    /* A non-member: NULL geometry, fn PAMI_SUCCESS from its next
     * progress. Task 0 alone is the member. */
    ev_t nv = {0};
    pami_task_t zero = 0;
    g = world;
    CF_OK(e, pami_geometry_create_tasklist(e->ctx, world, 3, &zero, 1, NULL,
                                           &g, ev_fn, &nv));
    CF_CHECK(e, nv.n == 0, "expected fn not to run inside the call");
    cf_wait_count(e, &nv.n, 1, "the creation's fn");
    CF_CHECK(e, nv.rc == PAMI_SUCCESS, "expected fn PAMI_SUCCESS, seen %s",
             cf_rc_name(nv.rc));
    if (e->task != 0) {
        CF_CHECK(e, g == NULL, "expected a non-member's geometry NULL");
    } else {
        CF_CHECK(e, g != NULL, "expected a member's geometry");
        CF_OK(e, pami_geometry_destroy(&g));
    }
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- registry_calls ---- */

static void registry_calls(cf_env_t *e)
{
    static const struct {
        pami_type_t t;
        size_t      n;
    } sizes[] = {
        {PAMI_TYPE_BYTE, 1}, {PAMI_TYPE_INT8, 1}, {PAMI_TYPE_INT16, 2},
        {PAMI_TYPE_INT32, 4}, {PAMI_TYPE_INT64, 8}, {PAMI_TYPE_UINT8, 1},
        {PAMI_TYPE_UINT16, 2}, {PAMI_TYPE_UINT32, 4}, {PAMI_TYPE_UINT64, 8},
        {PAMI_TYPE_FLOAT, 4}, {PAMI_TYPE_DOUBLE, 8},
        {PAMI_TYPE_LONG_DOUBLE, sizeof(long double)}, {PAMI_TYPE_COUNT, 0},
        {(pami_type_t)-1, 0},
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        CF_CHECK(e, pami_type_size(sizes[i].t) == sizes[i].n,
                 "expected pami_type_size(%d) = %zu, seen %zu",
                 (int)sizes[i].t, sizes[i].n, pami_type_size(sizes[i].t));
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    pami_algorithm_t alg;
    CF_RC(e, PAMI_NOT_FOUND, pami_algorithm_by_name("no_such_algorithm",
                                                    &alg));
    CF_RC(e, PAMI_INVAL, pami_algorithm_by_name(NULL, &alg));
    CF_RC(e, PAMI_INVAL, pami_algorithm_by_name("allreduce_ring", NULL));
    size_t na, nc;
    CF_RC(e, PAMI_INVAL, pami_geometry_algorithms_num(NULL, PAMI_XFER_BARRIER,
                                                      &na, &nc));
    CF_RC(e, PAMI_INVAL, pami_geometry_algorithms_num(world, PAMI_XFER_COUNT,
                                                      &na, &nc));
    CF_RC(e, PAMI_INVAL, pami_geometry_algorithms_num(world,
                                                      PAMI_XFER_BARRIER,
                                                      NULL, &nc));
    for (int k = 0; k < PAMI_XFER_COUNT; k++) {
        CF_OK(e, pami_geometry_algorithms_num(world, (pami_xfer_type_t)k,
                                              &na, &nc));
        CF_CHECK(e, na + nc > 0, "expected an algorithm for kind %d", k);
        size_t tot = na + nc;
        pami_algorithm_t *av = calloc(tot + 2, sizeof(*av));
        pami_algorithm_metadata_t *md = calloc(tot + 2, sizeof(*md));
        CF_CHECK(e, av && md, "expected memory");
        /* At most num_always / num_check entries: one less, one sentinel. */
        av[na > 0 ? na - 1 : 0] = 0xdeadbeef;
        av[tot + 1] = 0xdeadbeef;
        CF_OK(e, pami_geometry_algorithms_query(
                     world, (pami_xfer_type_t)k, av, md,
                     na > 0 ? na - 1 : 0, av + tot + 1, md + tot + 1, 0));
        CF_CHECK(e, na == 0 || av[na - 1] == 0xdeadbeef,
                 "expected at most num_always entries written (kind %d)", k);
        CF_CHECK(e, av[tot + 1] == 0xdeadbeef, "expected no check entry "
                 "written with num_check 0 (kind %d)", k);
        CF_OK(e, pami_geometry_algorithms_query(world, (pami_xfer_type_t)k,
                                                av, md, na, av + na, md + na,
                                                nc));
        for (size_t i = 0; i < tot; i++) {
            CF_CHECK(e, md[i].name != NULL && av[i] != PAMI_ALGORITHM_AUTO,
                     "expected a named algorithm (kind %d, %zu)", k, i);
            CF_CHECK(e, i < na || md[i].check != NULL, "expected a check "
                     "function for %s of the check list", md[i].name);
            pami_algorithm_t back;
            CF_OK(e, pami_algorithm_by_name(md[i].name, &back));
            CF_CHECK(e, back == av[i], "expected pami_algorithm_by_name(%s) "
                     "to give the listed value", md[i].name);
        }
        /* What a named call would run: that very algorithm. */
        if (k == PAMI_XFER_BARRIER && tot > 0) {
            pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                             .kind = PAMI_XFER_BARRIER, .geometry = world,
                             .algorithm = av[0]};
            pami_algorithm_selection_t s;
            CF_OK(e, pami_geometry_algorithm_selected(&x, &s));
            CF_CHECK(e, s.algorithm == av[0] &&
                            s.reason == PAMI_SELECTED_NAMED && s.name &&
                            strcmp(s.name, md[0].name) == 0,
                     "expected a named call's selection NAMED %s, seen %s "
                     "(reason %d)", md[0].name, s.name ? s.name : "NULL",
                     (int)s.reason);
            x.field_mask = 0;
            x.algorithm = 12345; /* not read without the bit */
            CF_OK(e, pami_geometry_algorithm_selected(&x, &s));
            CF_CHECK(e, s.algorithm != PAMI_ALGORITHM_AUTO && s.name &&
                            s.why && s.reason <= PAMI_SELECTED_ONLINE &&
                            s.reason != PAMI_SELECTED_NAMED,
                     "expected AUTO to select a named algorithm with why, "
                     "seen %u (reason %d)", s.algorithm, (int)s.reason);
            int listed = 0;
            for (size_t i = 0; i < tot; i++)
                listed |= av[i] == s.algorithm;
            CF_CHECK(e, listed, "expected AUTO's barrier among the listed "
                     "ones, seen %s", s.name);
            CF_RC(e, PAMI_INVAL, pami_geometry_algorithm_selected(NULL, &s));
            CF_RC(e, PAMI_INVAL, pami_geometry_algorithm_selected(&x, NULL));
        }
        free(av);
        free(md);
    }
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- xfer_refusals ---- */

static void xfer_refusals(cf_env_t *e)
{
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    int64_t sb[4] = {1, 2, 3, 4}, rb[4];
    ev_t v = {0};
    const pami_xfer_t good = {.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                              .done_fn = ev_fn, .cookie = &v, .sbuf = sb,
                              .rbuf = rb, .count = 4,
                              .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    pami_xfer_t x;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, NULL));
    x = good;
    CF_RC(e, PAMI_INVAL, pami_collective(NULL, &x));
    x.field_mask = 1ull << 30;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.kind = PAMI_XFER_COUNT;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.geometry = NULL;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.dtype = PAMI_TYPE_COUNT;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.op = PAMI_OP_COUNT;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.dtype = PAMI_TYPE_DOUBLE;
    x.op = PAMI_OP_BXOR; /* integers only */
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.op = PAMI_OP_USER; /* without user_fn */
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.kind = PAMI_XFER_REDUCE;
    x.root = e->size;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.sbuf = NULL;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    x = good;
    x.rbuf = NULL;
    CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    /* Counts whose bytes overflow: bad buffers, not a wrapped size. */
    pami_xfer_type_t wide[] = {PAMI_XFER_ALLREDUCE, PAMI_XFER_BROADCAST,
                               PAMI_XFER_ALLGATHER, PAMI_XFER_ALLTOALL};
    for (size_t k = 0; k < 4; k++) {
        x = good;
        x.kind = wide[k];
        x.count = SIZE_MAX / 8 + 2;
        CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    }
    /* An algorithm of another collective. */
    size_t na, nc;
    CF_OK(e, pami_geometry_algorithms_num(world, PAMI_XFER_BARRIER, &na,
                                          &nc));
    if (na > 0) {
        pami_algorithm_t b[64];
        pami_algorithm_metadata_t md[64];
        CF_OK(e, pami_geometry_algorithms_query(world, PAMI_XFER_BARRIER, b,
                                                md, na < 64 ? na : 64, NULL,
                                                NULL, 0));
        x = good;
        x.field_mask = PAMI_XFER_FIELD_ALGORITHM;
        x.algorithm = b[0];
        CF_RC(e, PAMI_INVAL, pami_collective(e->ctx, &x));
    }
    for (int k = 0; k < 20; k++)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, v.n == 0, "expected no done_fn for a refused call, seen %zu",
             v.n);
    /* The geometry still works: a good allreduce gives the serial sum. */
    x = good;
    sb[0] = (int64_t)e->task;
    CF_OK(e, pami_collective_wait(e->ctx, &x));
    CF_CHECK(e, v.n == 1 && v.rc == PAMI_SUCCESS, "expected done_fn once "
             "with PAMI_SUCCESS, seen %zu (%s)", v.n, cf_rc_name(v.rc));
    int64_t want0 = (int64_t)(e->size * (e->size - 1) / 2);
    CF_CHECK(e, rb[0] == want0 && rb[3] == 4 * (int64_t)e->size,
             "expected the sums %lld and %lld, seen %lld and %lld",
             (long long)want0, (long long)(4 * e->size), (long long)rb[0],
             (long long)rb[3]);
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- reduce_ops ---- */

static int64_t in_int(size_t r, size_t i)
{
    return (int64_t)((r * 37 + i * 11) % 23) - 7 + (int64_t)(i == 2 && r % 2);
}

static int64_t fold(pami_op_t op, int64_t a, int64_t b)
{
    switch (op) {
    case PAMI_OP_SUM: return a + b;
    case PAMI_OP_PROD: return a * b;
    case PAMI_OP_MIN: return a < b ? a : b;
    case PAMI_OP_MAX: return a > b ? a : b;
    case PAMI_OP_BAND: return a & b;
    case PAMI_OP_BOR: return a | b;
    case PAMI_OP_BXOR: return a ^ b;
    case PAMI_OP_LAND: return (a != 0) && (b != 0);
    case PAMI_OP_LOR: return (a != 0) || (b != 0);
    case PAMI_OP_LXOR: return (a != 0) != (b != 0);
    default: return 0;
    }
}

#define RO_N 5

static void reduce_ops(cf_env_t *e)
{
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    for (int op = PAMI_OP_SUM; op <= PAMI_OP_LXOR; op++) {
        /* int32 and int64; products of small values stay in range. */
        int32_t s32[RO_N], r32[RO_N];
        int64_t s64[RO_N], r64[RO_N], want[RO_N];
        double sd[RO_N], rd[RO_N];
        for (size_t i = 0; i < RO_N; i++) {
            int64_t v = in_int(e->task, i);
            if (op == PAMI_OP_PROD)
                v = (v % 3) + (v % 3 == 0);
            s32[i] = (int32_t)v;
            s64[i] = v;
            sd[i] = (double)v;
            int64_t w = 0;
            for (size_t r = 0; r < e->size; r++) {
                int64_t x = in_int(r, i);
                if (op == PAMI_OP_PROD)
                    x = (x % 3) + (x % 3 == 0);
                w = r == 0 ? x : fold((pami_op_t)op, w, x);
            }
            want[i] = w;
        }
        pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                         .sbuf = s32, .rbuf = r32, .count = RO_N,
                         .dtype = PAMI_TYPE_INT32, .op = (pami_op_t)op};
        CF_OK(e, pami_collective_wait(e->ctx, &x));
        x.sbuf = s64;
        x.rbuf = r64;
        x.dtype = PAMI_TYPE_INT64;
        CF_OK(e, pami_collective_wait(e->ctx, &x));
        int arith = op <= PAMI_OP_MAX;
        if (arith) {
            x.sbuf = sd;
            x.rbuf = rd;
            x.dtype = PAMI_TYPE_DOUBLE;
            CF_OK(e, pami_collective_wait(e->ctx, &x));
        }
        for (size_t i = 0; i < RO_N; i++) {
            CF_CHECK(e, r32[i] == (int32_t)want[i] && r64[i] == want[i],
                     "expected op %d element %zu = %lld (serial), seen int32 "
                     "%d, int64 %lld", op, i, (long long)want[i], r32[i],
                     (long long)r64[i]);
            CF_CHECK(e, !arith || rd[i] == (double)want[i], "expected op %d "
                     "element %zu = %lld as double, seen %g", op, i,
                     (long long)want[i], rd[i]);
        }
    }
}

/* ---- user_op_order: "in holds the contribution of lower ranks" ---- */

static void keep_lower(void *inout, const void *in, size_t count, void *k)
{
    (void)k;
    memcpy(inout, in, count * sizeof(uint64_t));
}

static void user_op_order(cf_env_t *e)
{
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    /* inout = in: associative, not commutative; rank order leaves the
     * lowest rank's value, for every algorithm that keeps it. */
    size_t counts[] = {1, 3, 1000};
    for (size_t c = 0; c < 3; c++) {
        size_t n = counts[c];
        uint64_t *sb = malloc(n * 8), *rb = malloc(n * 8);
        for (size_t i = 0; i < n; i++)
            sb[i] = (uint64_t)(e->task + 1) * 1000000 + i;
        pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_USER_OP,
                         .kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                         .sbuf = sb, .rbuf = rb, .count = n,
                         .dtype = PAMI_TYPE_UINT64, .op = PAMI_OP_USER,
                         .user_fn = keep_lower, .user_commutative = 0};
        CF_OK(e, pami_collective_wait(e->ctx, &x));
        for (size_t i = 0; i < n; i++)
            CF_CHECK(e, rb[i] == 1000000 + i, "expected rank 0's element "
                     "%zu of %zu (%llu) from a rank-ordered user op, seen "
                     "%llu", i, n, (unsigned long long)(1000000 + i),
                     (unsigned long long)rb[i]);
        /* Scan: ranks 0..r reduced, so rank 0's value everywhere. */
        x.kind = PAMI_XFER_SCAN;
        memset(rb, 0, n * 8);
        CF_OK(e, pami_collective_wait(e->ctx, &x));
        for (size_t i = 0; i < n; i++)
            CF_CHECK(e, rb[i] == 1000000 + i, "expected scan's rank 0 "
                     "element %zu, seen %llu", i,
                     (unsigned long long)rb[i]);
        free(sb);
        free(rb);
    }
}

/* ---- foreign_geometry: a geometry used with another context ---- */

static void foreign_geometry(cf_env_t *e)
{
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    pami_context_t c0 = e->contexts[0], c1 = e->contexts[1];
    pami_geometry_t w0, w1, g = NULL;
    CF_OK(e, pami_geometry_world(c0, &w0));
    CF_OK(e, pami_geometry_world(c1, &w1));
    CF_CHECK(e, w0 != w1, "expected a world geometry per context");
    pami_task_t all[64];
    size_t n = e->size < 64 ? e->size : 64;
    for (size_t i = 0; i < n; i++)
        all[i] = (pami_task_t)i;
    ev_t v = {0};
    /* "a NULL or foreign `parent`" */
    CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                             c1, w0, 4, all, n, NULL, &g, ev_fn, &v));
    /* "`pami_geometry_wait_ready` ... one of another context" */
    CF_RC(e, PAMI_INVAL, pami_geometry_wait_ready(c1, w0));
    /* pami_collective: "a NULL or foreign geometry" */
    int64_t sb = 1, rb = 0;
    pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = w0,
                     .done_fn = ev_fn, .cookie = &v, .sbuf = &sb, .rbuf = &rb,
                     .count = 1, .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    CF_RC(e, PAMI_INVAL, pami_collective(c1, &x));
    CF_RC(e, PAMI_INVAL, pami_collective_wait(c1, &x));
    for (int k = 0; k < 10; k++) {
        pami_context_advance(c0, 1);
        pami_context_advance(c1, 1);
    }
    CF_CHECK(e, v.n == 0, "expected no callback for refused calls");
    /* Each context's world still works on its own. */
    CF_OK(e, pami_collective_wait(c0, &x));
    CF_CHECK(e, rb == (int64_t)e->size, "expected the sum %zu on context 0, "
             "seen %lld", e->size, (long long)rb);
    x.geometry = w1;
    rb = 0;
    CF_OK(e, pami_collective_wait(c1, &x));
    CF_CHECK(e, rb == (int64_t)e->size, "expected the sum %zu on context 1, "
             "seen %lld", e->size, (long long)rb);
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- env_forced_algorithm ---- */

static void env_forced_algorithm(cf_env_t *e)
{
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    int64_t sb[8], rb[8];
    for (int i = 0; i < 8; i++)
        sb[i] = (int64_t)e->task * 10 + i;
    pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                     .sbuf = sb, .rbuf = rb, .count = 8,
                     .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    pami_algorithm_selection_t sel;
    CF_OK(e, pami_geometry_algorithm_selected(&x, &sel));
    CF_CHECK(e, sel.reason == PAMI_SELECTED_FORCED && sel.name &&
                    strcmp(sel.name, "allreduce_ring") == 0,
             "expected PAMI_COLL_ALLREDUCE_ALGORITHM=allreduce_ring to force "
             "AUTO's allreduce (reason FORCED), seen %s (reason %d)",
             sel.name ? sel.name : "NULL", (int)sel.reason);
    CF_OK(e, pami_collective_wait(e->ctx, &x));
    for (int i = 0; i < 8; i++) {
        int64_t want = 10 * (int64_t)(e->size * (e->size - 1) / 2) +
                       (int64_t)e->size * i;
        CF_CHECK(e, rb[i] == want, "expected the forced allreduce's sum "
                 "%lld at %d, seen %lld", (long long)want, i,
                 (long long)rb[i]);
    }
    /* A name of no barrier algorithm: one warning, ignored. */
    pami_xfer_t b = {.kind = PAMI_XFER_BARRIER, .geometry = world};
    CF_OK(e, pami_geometry_algorithm_selected(&b, &sel));
    CF_CHECK(e, sel.reason != PAMI_SELECTED_FORCED &&
                    sel.algorithm != PAMI_ALGORITHM_AUTO,
             "expected an unknown forced name ignored, seen reason %d",
             (int)sel.reason);
    CF_OK(e, pami_collective_wait(e->ctx, &b));
    /* A profile file that cannot be used is left out. */
    CF_CHECK(e, sel.reason != PAMI_SELECTED_PROFILE &&
                    sel.reason != PAMI_SELECTED_NEAREST,
             "expected no profile in use, seen reason %d", (int)sel.reason);
}

/* ---- env_connid: PAMI_CONNID_THRESHOLD read by the world ---- */

static void connid_is(cf_env_t *e, unsigned want, const char *why)
{
    pami_geometry_t world;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_CONNID};
    CF_OK(e, pami_geometry_query(world, &a));
    CF_CHECK(e, a.connid_threshold == want, "expected the world's "
             "connid_threshold %u (%s), seen %u", want, why,
             a.connid_threshold);
    CF_OK(e, pami_geometry_barrier(e->ctx, world));
}

static void env_connid(cf_env_t *e)
{
    connid_is(e, 5, "PAMI_CONNID_THRESHOLD=5");
}

static void env_connid_range(cf_env_t *e)
{
    connid_is(e, 64, "PAMI_CONNID_THRESHOLD=300 is outside 1..256: the "
              "default");
}

const cf_case_t cf_geometry_cases[] = {
    {"coll", "geometry_calls", 1, 0, 0, geometry_calls, NULL},
    {"coll", "registry_calls", 1, 0, 0, registry_calls, NULL},
    {"coll", "xfer_refusals", 1, 0, 0, xfer_refusals, NULL},
    {"coll", "reduce_ops", 1, 0, 0, reduce_ops, NULL},
    {"coll", "user_op_order", 1, 0, 0, user_op_order, NULL},
    {"coll", "foreign_geometry", 1, 0, CF_OWN_CONTEXTS, foreign_geometry,
     NULL},
    {"coll", "env_forced_algorithm", 1, 0, 0, env_forced_algorithm,
     "PAMI_COLL_ALLREDUCE_ALGORITHM=allreduce_ring "
     "PAMI_COLL_BARRIER_ALGORITHM=no_such_barrier "
     "PAMI_COLL_PROFILE=/nonexistent/cf.profile"},
    {"coll", "env_connid", 1, 0, 0, env_connid, "PAMI_CONNID_THRESHOLD=5"},
    {"coll", "env_connid_range", 1, 0, 0, env_connid_range,
     "PAMI_CONNID_THRESHOLD=300"},
};
const size_t cf_num_geometry_cases =
    sizeof(cf_geometry_cases) / sizeof(cf_geometry_cases[0]);

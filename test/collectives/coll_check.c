/*
 * Every collective x every algorithm the registry offers x types x ops x
 * sizes, on the world and on sub-geometries (reversed, interleaved, and
 * the odd / even halves at once), in place and not; each result checked
 * element by element against a serial computation.
 *
 *   coll_check [--large]   --large: 4 MiB per rank on the world only
 */
#include "coll_util.h"

static mp_job_t job;
static size_t   runs;


static const pami_type_t move_types[] = {PAMI_TYPE_BYTE, PAMI_TYPE_INT32,
                                         PAMI_TYPE_LONG_DOUBLE};

static bool reduces(pami_xfer_type_t k)
{
    return k == PAMI_XFER_REDUCE || k == PAMI_XFER_ALLREDUCE ||
           k == PAMI_XFER_REDUCE_SCATTER || k == PAMI_XFER_SCAN ||
           k == PAMI_XFER_EXSCAN;
}

static const char *kind_name[PAMI_XFER_COUNT] = {
    "barrier", "broadcast", "reduce", "allreduce", "allgather", "gather",
    "scatter", "alltoall", "reduce_scatter", "scan", "exscan", "allgatherv",
    "gatherv", "scatterv", "alltoallv"};

typedef struct {
    const ct_geom_t *cg;
    pami_algorithm_t algo;
    const char      *algo_name;
    pami_xfer_type_t kind;
    pami_type_t      t;
    pami_op_t        op;
    int              user;
    size_t           count, root;
    bool             in_place;
} case_t;

#define CASE_FMT "%s on %s (n=%zu), %s, type %d op %d user %d, count %zu, " \
                 "root %zu%s"
#define CASE_ARGS(c) (c)->algo_name, (c)->cg->name, (c)->cg->n,            \
    kind_name[(c)->kind], (int)(c)->t, (int)(c)->op, (c)->user, (c)->count, \
    (c)->root, (c)->in_place ? ", in place" : ""

/* Fills elements [0, count) of buf with rank's input, elements offset by
 * first (for reduce_scatter's blocks). */
static void put_values(const case_t *c, void *buf, size_t rank, size_t count)
{
    size_t es = pami_type_size(c->t);
    for (size_t i = 0; i < count; i++)
        ct_put(c->t, c->user, (char *)buf + i * es, rank, i);
}

/* Checks count elements of buf against the fold over ranks lo..hi of
 * elements first.. . */
static void check_fold(const case_t *c, const void *buf, size_t lo, size_t hi,
                       size_t first, size_t count)
{
    size_t es = pami_type_size(c->t);
    unsigned char want[32];
    for (size_t i = 0; i < count; i++) {
        long double mag;
        ct_fold(c->t, c->op, c->user, lo, hi, first + i, want, &mag);
        if (!ct_same(c->t, (const char *)buf + i * es, want, mag, c->cg->n))
            mp_fail(CASE_FMT ": element %zu (ranks %zu..%zu) is wrong",
                    CASE_ARGS(c), i, lo, hi);
    }
}

static void check_block(const case_t *c, const void *buf, size_t key,
                        size_t bytes, const char *what, size_t idx)
{
    long at = ct_check(buf, key, bytes);
    if (at >= 0)
        mp_fail(CASE_FMT ": %s %zu wrong at byte %ld", CASE_ARGS(c), what,
                idx, at);
}

static void check_untouched(const case_t *c, const void *buf, size_t bytes,
                            const char *what)
{
    for (size_t k = 0; k < bytes; k++)
        if (((const uint8_t *)buf)[k] != 0xEE)
            mp_fail(CASE_FMT ": %s overwritten at byte %zu", CASE_ARGS(c),
                    what, k);
}

/* v counts: some zero, uneven; displacements leave one-element gaps. */
static size_t vcount(size_t count, size_t a, size_t b)
{
    return (count + a * 3 + b) % (count + 3);
}

static void run_case(const case_t *c)
{
    const ct_geom_t *cg = c->cg;
    size_t n = cg->n, r = cg->rank, es = pami_type_size(c->t);
    size_t cnt = c->count, blk = cnt * es;
    size_t sbytes = 0, rbytes = 0;
    size_t *rc = calloc(n, sizeof(size_t)), *rd = calloc(n, sizeof(size_t));
    size_t *sc = calloc(n, sizeof(size_t)), *sd = calloc(n, sizeof(size_t));
    if (!rc || !rd || !sc || !sd)
        mp_fail("out of memory");
    size_t my_count = cnt;
    switch (c->kind) {
    case PAMI_XFER_BROADCAST: rbytes = blk; break;
    case PAMI_XFER_REDUCE: case PAMI_XFER_ALLREDUCE:
    case PAMI_XFER_SCAN: case PAMI_XFER_EXSCAN:
        sbytes = rbytes = blk; break;
    case PAMI_XFER_REDUCE_SCATTER:
        sbytes = n * blk; rbytes = c->in_place ? n * blk : blk; break;
    case PAMI_XFER_ALLGATHER: sbytes = blk; rbytes = n * blk; break;
    case PAMI_XFER_GATHER: sbytes = blk; rbytes = n * blk; break;
    case PAMI_XFER_SCATTER: sbytes = n * blk; rbytes = blk; break;
    case PAMI_XFER_ALLTOALL: sbytes = rbytes = n * blk; break;
    case PAMI_XFER_ALLGATHERV: case PAMI_XFER_GATHERV:
    case PAMI_XFER_SCATTERV: {
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            rc[i] = vcount(cnt, i, 0);
            rd[i] = off;
            off += rc[i] + 1;
        }
        if (c->kind == PAMI_XFER_SCATTERV) {
            memcpy(sc, rc, n * sizeof(size_t));
            memcpy(sd, rd, n * sizeof(size_t));
            sbytes = off * es;
            rbytes = rc[r] * es;
        } else {
            sbytes = rc[r] * es;
            rbytes = off * es;
        }
        my_count = rc[r];
        break;
    }
    case PAMI_XFER_ALLTOALLV: {
        size_t so = 0, ro = 0;
        for (size_t j = 0; j < n; j++) {
            /* In place the counts must be symmetric (sends use the
             * receive layout). */
            sc[j] = c->in_place ? vcount(cnt, r + j, 0) : vcount(cnt, r, j);
            rc[j] = c->in_place ? vcount(cnt, r + j, 0) : vcount(cnt, j, r);
            sd[j] = so; so += sc[j] + 1;
            rd[j] = ro; ro += rc[j] + 1;
        }
        if (c->in_place) { /* sends use the receive layout */
            memcpy(sc, rc, n * sizeof(size_t));
            memcpy(sd, rd, n * sizeof(size_t));
            so = ro;
        }
        sbytes = so * es;
        rbytes = ro * es;
        break;
    }
    default: break;
    }
    uint8_t *sbuf = malloc(sbytes + 1), *rbuf = malloc(rbytes + 1);
    if (!sbuf || !rbuf)
        mp_fail("out of memory for %zu + %zu bytes", sbytes, rbytes);
    memset(rbuf, 0xEE, rbytes + 1);
    memset(sbuf, 0xDD, sbytes + 1);

    /* Inputs. */
    switch (c->kind) {
    case PAMI_XFER_BROADCAST:
        if (r == c->root)
            ct_fill(rbuf, 77, blk);
        break;
    case PAMI_XFER_REDUCE: case PAMI_XFER_ALLREDUCE:
    case PAMI_XFER_SCAN: case PAMI_XFER_EXSCAN:
        put_values(c, c->in_place ? rbuf : sbuf, r, cnt);
        break;
    case PAMI_XFER_REDUCE_SCATTER:
        put_values(c, c->in_place ? rbuf : sbuf, r, n * cnt);
        break;
    case PAMI_XFER_ALLGATHER: case PAMI_XFER_GATHER:
        ct_fill(c->in_place ? rbuf + r * blk : sbuf, r, blk);
        break;
    case PAMI_XFER_SCATTER:
        for (size_t j = 0; j < n; j++)
            ct_fill(sbuf + j * blk, 1000 + j, blk);
        if (c->in_place && r == c->root)
            ct_fill(rbuf, 1000 + r, blk); /* untouched in place */
        break;
    case PAMI_XFER_ALLTOALL:
        for (size_t j = 0; j < n; j++)
            ct_fill((c->in_place ? rbuf : sbuf) + j * blk, r * 64 + j, blk);
        break;
    case PAMI_XFER_ALLGATHERV: case PAMI_XFER_GATHERV:
        ct_fill(c->in_place ? rbuf + rd[r] * es : sbuf, r, rc[r] * es);
        break;
    case PAMI_XFER_SCATTERV:
        for (size_t j = 0; j < n; j++)
            ct_fill(sbuf + sd[j] * es, 1000 + j, sc[j] * es);
        if (c->in_place && r == c->root)
            ct_fill(rbuf, 1000 + r, rc[r] * es);
        break;
    case PAMI_XFER_ALLTOALLV:
        for (size_t j = 0; j < n; j++)
            ct_fill((c->in_place ? rbuf : sbuf) + sd[j] * es, r * 64 + j,
                    sc[j] * es);
        break;
    default: break;
    }

    pami_xfer_t x = {
        .field_mask = PAMI_XFER_FIELD_ALGORITHM | PAMI_XFER_FIELD_USER_OP |
                      PAMI_XFER_FIELD_VCOUNTS,
        .kind = c->kind, .geometry = cg->g, .algorithm = c->algo,
        .root = c->root, .sbuf = sbuf, .rbuf = rbuf, .count = my_count,
        .dtype = c->t, .op = c->op,
        .user_fn = c->user == CT_USER_MATRIX ? ct_user_matrix : ct_user_sum,
        .user_commutative = c->user != CT_USER_MATRIX,
        .rcounts = rc, .rdispls = rd, .scounts = sc, .sdispls = sd};
    if (c->in_place) {
        if (c->kind == PAMI_XFER_SCATTER || c->kind == PAMI_XFER_SCATTERV)
            x.rbuf = PAMI_IN_PLACE;
        else
            x.sbuf = PAMI_IN_PLACE;
    }
    pami_result_t res = pami_collective_wait(job.ctx[0], &x);
    if (res != PAMI_SUCCESS)
        mp_fail(CASE_FMT ": %s", CASE_ARGS(c), pami_error_text(res));
    runs++;

    /* Results. */
    switch (c->kind) {
    case PAMI_XFER_BROADCAST:
        check_block(c, rbuf, 77, blk, "buffer", 0);
        break;
    case PAMI_XFER_ALLREDUCE:
        check_fold(c, rbuf, 0, n - 1, 0, cnt);
        break;
    case PAMI_XFER_REDUCE:
        if (r == c->root)
            check_fold(c, rbuf, 0, n - 1, 0, cnt);
        else
            check_untouched(c, rbuf, rbytes, "rbuf off the root");
        break;
    case PAMI_XFER_SCAN:
        check_fold(c, rbuf, 0, r, 0, cnt);
        break;
    case PAMI_XFER_EXSCAN:
        if (r > 0)
            check_fold(c, rbuf, 0, r - 1, 0, cnt);
        else if (!c->in_place)
            check_untouched(c, rbuf, rbytes, "rank 0's rbuf");
        break;
    case PAMI_XFER_REDUCE_SCATTER:
        check_fold(c, rbuf, 0, n - 1, r * cnt, cnt);
        break;
    case PAMI_XFER_ALLGATHER:
        for (size_t j = 0; j < n; j++)
            check_block(c, rbuf + j * blk, j, blk, "block", j);
        break;
    case PAMI_XFER_GATHER:
        if (r == c->root)
            for (size_t j = 0; j < n; j++)
                check_block(c, rbuf + j * blk, j, blk, "block", j);
        else
            check_untouched(c, rbuf, rbytes, "rbuf off the root");
        break;
    case PAMI_XFER_SCATTER: case PAMI_XFER_SCATTERV:
        check_block(c, rbuf, 1000 + r, rc[r] * es + 0 * blk +
                    (c->kind == PAMI_XFER_SCATTER ? blk - rc[r] * es : 0),
                    "own block", r);
        break;
    case PAMI_XFER_ALLTOALL:
        for (size_t j = 0; j < n; j++)
            check_block(c, rbuf + j * blk, j * 64 + r, blk, "block", j);
        break;
    case PAMI_XFER_ALLGATHERV: case PAMI_XFER_GATHERV:
        if (c->kind == PAMI_XFER_GATHERV && r != c->root) {
            check_untouched(c, rbuf, rbytes, "rbuf off the root");
            break;
        }
        for (size_t j = 0; j < n; j++) {
            check_block(c, rbuf + rd[j] * es, j, rc[j] * es, "block", j);
            check_untouched(c, rbuf + (rd[j] + rc[j]) * es, es, "gap");
        }
        break;
    case PAMI_XFER_ALLTOALLV:
        for (size_t j = 0; j < n; j++) {
            check_block(c, rbuf + rd[j] * es, j * 64 + r, rc[j] * es,
                        "block", j);
            if (!c->in_place)
                check_untouched(c, rbuf + (rd[j] + rc[j]) * es, es, "gap");
        }
        break;
    default: break;
    }
    if (rbuf[rbytes] != 0xEE)
        mp_fail(CASE_FMT ": wrote past the end of rbuf", CASE_ARGS(c));
    free(sbuf); free(rbuf); free(rc); free(rd); free(sc); free(sd);
}

static bool in_place_allowed(pami_xfer_type_t k, size_t root, size_t r)
{
    switch (k) {
    case PAMI_XFER_BROADCAST: return false;
    case PAMI_XFER_REDUCE: case PAMI_XFER_GATHER: case PAMI_XFER_SCATTER:
    case PAMI_XFER_GATHERV: case PAMI_XFER_SCATTERV:
        return root == r;
    default: return true;
    }
}

/* Every algorithm of kind on cg; the check list's ones where they accept
 * the call. */
static void run_kind(const ct_geom_t *cg, pami_xfer_type_t kind,
                     const size_t *counts, size_t ncounts, bool large)
{
    size_t na, nc;
    MP_CHECK(pami_geometry_algorithms_num(cg->g, kind, &na, &nc));
    MP_EXPECT(na >= 1, "%s: no algorithm that always works", kind_name[kind]);
    pami_algorithm_t ids[32];
    pami_algorithm_metadata_t md[32];
    MP_CHECK(pami_geometry_algorithms_query(cg->g, kind, ids, md, na,
                                            ids + na, md + na, nc));
    MP_EXPECT(na + nc < 32, "%zu algorithms", na + nc);
    /* The last round is AUTO (id 0), which must always find one. */
    ids[na + nc] = PAMI_ALGORITHM_AUTO;
    md[na + nc] = (pami_algorithm_metadata_t){.name = "AUTO"};
    for (size_t a = 0; a <= na + nc; a++) {
        MP_EXPECT(md[a].name != NULL &&
                      (a >= na + nc || (a < na) == (md[a].check == NULL)),
                  "%s: metadata %zu is inconsistent", kind_name[kind], a);
        size_t ntypes = reduces(kind) ? sizeof(reds) / sizeof(reds[0])
                                      : sizeof(move_types) / sizeof(move_types[0]);
        if (kind == PAMI_XFER_BARRIER)
            ntypes = 1;
        if (large)
            ntypes = 1;
        for (size_t ti = 0; ti < ntypes; ti++) {
            for (size_t ci = 0; ci < ncounts; ci++) {
                case_t c = {.cg = cg, .algo = ids[a], .algo_name = md[a].name,
                            .kind = kind, .count = counts[ci]};
                if (reduces(kind)) {
                    c.t = large ? PAMI_TYPE_DOUBLE : reds[ti].t;
                    c.op = large ? PAMI_OP_SUM : reds[ti].op;
                    c.user = large ? 0 : reds[ti].user;
                } else {
                    c.t = large ? PAMI_TYPE_BYTE : move_types[ti];
                }
                if (large)
                    c.count /= pami_type_size(c.t);
                /* Roots walk around the geometry. */
                c.root = (ti + ci + a) % cg->n;
                c.in_place = ((ti + ci) % 2 == 1) &&
                             in_place_allowed(kind, c.root, cg->rank);
                /* In place must be the same choice on all members where it
                 * decides the layout (alltoallv's send counts). */
                if (kind == PAMI_XFER_ALLTOALLV || kind == PAMI_XFER_REDUCE_SCATTER)
                    c.in_place = (ti + ci) % 2 == 1;
                if (md[a].check != NULL) {
                    /* In place or not, as the call will be (a check
                     * may refuse PAMI_IN_PLACE: alltoall_shm_cma). */
                    pami_xfer_t probe = {.field_mask = PAMI_XFER_FIELD_USER_OP,
                                         .kind = kind, .geometry = cg->g,
                                         .sbuf = c.in_place ? PAMI_IN_PLACE
                                                            : NULL,
                                         .dtype = c.t, .op = c.op,
                                         .user_commutative =
                                             c.user != CT_USER_MATRIX};
                    if (md[a].check(&probe) != PAMI_SUCCESS)
                        continue;
                }
                if (kind == PAMI_XFER_BARRIER) {
                    pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                                     .kind = kind, .geometry = cg->g,
                                     .algorithm = ids[a]};
                    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
                    runs++;
                    continue;
                }
                run_case(&c);
            }
        }
    }
}

/* A barrier holds everybody until the last arrives: ranks arrive
 * staggered; every exit must follow every arrival. */
static void check_barrier(const ct_geom_t *cg)
{
    size_t na, nc;
    MP_CHECK(pami_geometry_algorithms_num(cg->g, PAMI_XFER_BARRIER, &na, &nc));
    pami_algorithm_t ids[16];
    pami_algorithm_metadata_t md[16];
    MP_EXPECT(na + nc <= 16, "%zu barrier algorithms", na + nc);
    MP_CHECK(pami_geometry_algorithms_query(cg->g, PAMI_XFER_BARRIER, ids, md,
                                            na, ids + na, md + na, nc));
    for (size_t a = 0; a <= na + nc + 1; a++) {
        /* The last rounds are AUTO, and the blocking pami_geometry_barrier
         * (AUTO too, maybe without a request: see coll_api.c). */
        pami_xfer_t probe = {.kind = PAMI_XFER_BARRIER, .geometry = cg->g};
        if (a < na + nc && md[a].check != NULL &&
            md[a].check(&probe) != PAMI_SUCCESS)
            continue;
        const char *name = a < na + nc ? md[a].name
                           : a == na + nc ? "barrier AUTO"
                                          : "pami_geometry_barrier";
        double t[2];
        mp_sleep_ms(3.0 * (double)((cg->rank * 5) % cg->n));
        t[0] = mp_now();
        pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                         .kind = PAMI_XFER_BARRIER, .geometry = cg->g,
                         .algorithm = a < na + nc ? ids[a]
                                                  : PAMI_ALGORITHM_AUTO};
        if (a <= na + nc)
            MP_CHECK(pami_collective_wait(job.ctx[0], &x));
        else
            MP_CHECK(pami_geometry_barrier(job.ctx[0], cg->g));
        t[1] = mp_now();
        double *all = malloc(cg->n * sizeof(t));
        pami_xfer_t ag = {.kind = PAMI_XFER_ALLGATHER, .geometry = cg->g,
                          .sbuf = t, .rbuf = all, .count = sizeof(t),
                          .dtype = PAMI_TYPE_BYTE};
        MP_CHECK(pami_collective_wait(job.ctx[0], &ag));
        for (size_t i = 0; i < cg->n; i++)
            for (size_t j = 0; j < cg->n; j++)
                if (all[2 * i + 1] < all[2 * j])
                    mp_fail("%s on %s: rank %zu left at %.6f before rank %zu "
                            "arrived at %.6f", name, cg->name, i,
                            all[2 * i + 1], j, all[2 * j]);
        free(all);
    }
}

static void run_geometry(const ct_geom_t *cg, bool large)
{
    static const size_t small[] = {0, 1, 5, 1000};
    size_t big[1] = {4u << 20};
    check_barrier(cg);
    for (int k = 0; k < PAMI_XFER_COUNT; k++) {
        if (large) {
            /* 4 MiB per rank for the per-rank collectives, 4 MiB / n per
             * block for those with n blocks. */
            bool blocks = k == PAMI_XFER_ALLGATHER || k == PAMI_XFER_ALLTOALL ||
                          k == PAMI_XFER_REDUCE_SCATTER || k == PAMI_XFER_GATHER ||
                          k == PAMI_XFER_SCATTER || k == PAMI_XFER_ALLGATHERV ||
                          k == PAMI_XFER_GATHERV || k == PAMI_XFER_SCATTERV ||
                          k == PAMI_XFER_ALLTOALLV;
            big[0] = blocks ? (4u << 20) / cg->n : 4u << 20;
            run_kind(cg, (pami_xfer_type_t)k, big, 1, true);
        } else {
            run_kind(cg, (pami_xfer_type_t)k, small, 4, false);
        }
    }
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_check", &argc, argv, NULL, 1, true);
    bool large = argc > 1 && strcmp(argv[1], "--large") == 0;
    size_t n = job.size;
    double t0 = mp_now();

    ct_geom_t world = {.name = "world"};
    ct_world(&job, &world);
    MP_EXPECT(world.n == n && world.rank == job.me, "world is %zu/%zu",
              world.rank, world.n);
    run_geometry(&world, large);

    if (!large) {
        pami_task_t *list = malloc(n * sizeof(*list));
        /* Reversed. */
        for (size_t i = 0; i < n; i++)
            list[i] = (pami_task_t)(n - 1 - i);
        ct_geom_t rev;
        if (ct_create(&job, &rev, "reversed", 1, list, n, NULL)) {
            MP_EXPECT(rev.rank == n - 1 - job.me, "reversed rank %zu", rev.rank);
            run_geometry(&rev, false);
            MP_CHECK(pami_geometry_destroy(&rev.g));
        }
        /* Interleaved: odd tasks first, then even ones. */
        size_t k = 0;
        for (size_t i = 1; i < n; i += 2)
            list[k++] = (pami_task_t)i;
        for (size_t i = 0; i < n; i += 2)
            list[k++] = (pami_task_t)i;
        ct_geom_t il;
        if (ct_create(&job, &il, "interleaved", 2, list, n, NULL)) {
            run_geometry(&il, false);
            MP_CHECK(pami_geometry_destroy(&il.g));
        }
        /* Two disjoint halves at once: odd tasks (reversed) and even
         * tasks; a task creates only its own (the other's members never
         * involve it). */
        if (n >= 2) {
            k = 0;
            bool odd = job.me % 2 == 1;
            for (size_t i = n; i-- > 0;)
                if ((i % 2 == 1) == odd)
                    list[k++] = (pami_task_t)i;
            ct_geom_t half;
            MP_EXPECT(ct_create(&job, &half, odd ? "odd" : "even",
                                odd ? 3 : 4, list, k, NULL),
                      "not a member of my own half");
            run_geometry(&half, false);
            MP_CHECK(pami_geometry_destroy(&half.g));
        }
        free(list);
    }

    pami_protocol_stat_t st[32];
    size_t ns;
    unsigned long long direct = 0, staged = 0;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "collectives", st, 32, &ns));
    for (size_t i = 0; i < ns && i < 32; i++) {
        if ((strcmp(st[i].name, "malformed_dropped") == 0 ||
             strcmp(st[i].name, "collectives_failed") == 0 ||
             strcmp(st[i].name, "late_dropped") == 0 ||
             strcmp(st[i].name, "connid_in_use") == 0) && st[i].value != 0)
            mp_fail("stat %s is %llu", st[i].name,
                    (unsigned long long)st[i].value);
        if (strcmp(st[i].name, "large_direct") == 0)
            direct = st[i].value;
        if (strcmp(st[i].name, "large_staged") == 0)
            staged = st[i].value;
    }
    /* Payloads of 16000 bytes and more were sent: from a threshold that
     * low on, some must have arrived by get, most straight in place. */
    pami_client_attr_t ca = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    MP_CHECK(pami_client_query(job.client, &ca));
    if (n > 1 && (large || ca.rndv_threshold <= 16000))
        MP_EXPECT(direct > 0, "no payload landed in place (threshold %zu)",
                  ca.rndv_threshold);
    mp_sync(&job);
    if (job.me == 0)
        printf("coll_check: %zu tasks, %zu collectives checked (task 0) in "
               "%.1f s; rendezvous threshold %zu: %llu payloads fetched in "
               "place, %llu staged\n", n, runs, mp_now() - t0,
               ca.rndv_threshold, direct, staged);
    mp_finish(&job);
    return 0;
}

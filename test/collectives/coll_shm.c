/*
 * The shared-memory collectives (allreduce_shm, reduce_shm,
 * broadcast_shm, allgather_shm) on geometries that are this node's tasks
 * in three orders; every result checked element by element.
 *
 *   coll_shm            every type x op at small sizes and around the
 *                       slot (PAMI_COLL_SHM_SLOT), every root, in place;
 *                       64 in flight mixed with register barriers; a
 *                       mismatched call; a call that fails on one task
 *                       only; a sub-geometry refused; nothing
 *                       left in /dev/shm; the protocol's counters
 *   coll_shm large      4 MiB (many rounds with a small slot); a
 *                       blocking call of four rounds inline, beside a
 *                       queued one
 *   coll_shm dead       the last task leaves while the others wait in an
 *                       allreduce_shm: PAMI_PEER_FAILED, no hang
 *   coll_shm dead-cma   the same in allreduce_shm_cma
 *   coll_shm cma        the same sweeps with allreduce_shm_cma,
 *                       broadcast_shm_cma and allgather_shm_cma (read
 *                       from the others' buffers),
 *                       in flight among the rounds, 4 MiB, calls that
 *                       differ (count, algorithm) or fail on one task,
 *                       broadcasts from every root back to back among
 *                       other rounds,
 *                       blocking calls inline beside a queued one
 */
#include "coll_util.h"

#include <dirent.h>
#include <unistd.h>

static mp_job_t job;
static size_t   runs;
static size_t   slot;

#define NREDS (sizeof(reds) / sizeof(reds[0]))

static const pami_type_t move_types[] = {PAMI_TYPE_BYTE, PAMI_TYPE_INT32,
                                         PAMI_TYPE_LONG_DOUBLE};


/* One call: the xfer filled for kind on cg with algorithm name. */
typedef struct {
    const ct_geom_t *cg;
    pami_xfer_type_t kind;
    red_t            red;
    size_t           count, root;
    bool             in_place;
    uint8_t         *sbuf, *rbuf;
    size_t           rbytes;
    pami_xfer_t      x;
} call_t;

/* Mode cma: allreduce, broadcast and allgather name their _shm_cma
 * algorithms. */
static bool cma;

static const char *kind_text(pami_xfer_type_t k)
{
    return k == PAMI_XFER_ALLREDUCE ? (cma ? "allreduce_shm_cma"
                                           : "allreduce_shm")
           : k == PAMI_XFER_REDUCE  ? "reduce_shm"
           : k == PAMI_XFER_BROADCAST ? (cma ? "broadcast_shm_cma"
                                             : "broadcast_shm")
                                      : (cma ? "allgather_shm_cma"
                                             : "allgather_shm");
}

#define CALL_FMT "%s on %s (n=%zu), type %d op %d user %d, count %zu, root " \
                 "%zu%s"
#define CALL_ARGS(c) kind_text((c)->kind), (c)->cg->name, (c)->cg->n,       \
    (int)(c)->red.t, (int)(c)->red.op, (c)->red.user, (c)->count, (c)->root, \
    (c)->in_place ? ", in place" : ""

static void call_prepare(call_t *c)
{
    size_t n = c->cg->n, r = c->cg->rank, es = pami_type_size(c->red.t);
    size_t blk = c->count * es;
    c->rbytes = c->kind == PAMI_XFER_ALLGATHER ? n * blk : blk;
    c->sbuf = malloc(blk + 1);
    c->rbuf = malloc(c->rbytes + 1);
    if (c->sbuf == NULL || c->rbuf == NULL)
        mp_fail("out of memory");
    memset(c->sbuf, 0xDD, blk + 1);
    memset(c->rbuf, 0xEE, c->rbytes + 1);
    switch (c->kind) {
    case PAMI_XFER_BROADCAST:
        if (r == c->root)
            ct_fill(c->rbuf, 77 + c->root, blk);
        break;
    case PAMI_XFER_ALLGATHER:
        ct_fill(c->in_place ? c->rbuf + r * blk : c->sbuf, r, blk);
        break;
    default:
        for (size_t i = 0; i < c->count; i++)
            ct_put(c->red.t, c->red.user,
                   (c->in_place ? c->rbuf : c->sbuf) + i * es, r, i);
        break;
    }
    c->x = (pami_xfer_t){
        .field_mask = PAMI_XFER_FIELD_ALGORITHM | PAMI_XFER_FIELD_USER_OP,
        .kind = c->kind, .geometry = c->cg->g,
        .algorithm = ct_algo(kind_text(c->kind)), .root = c->root,
        .sbuf = c->in_place ? PAMI_IN_PLACE : c->sbuf, .rbuf = c->rbuf,
        .count = c->count, .dtype = c->red.t, .op = c->red.op,
        .user_fn = c->red.user == CT_USER_MATRIX ? ct_user_matrix
                                                 : ct_user_sum,
        .user_commutative = c->red.user != CT_USER_MATRIX};
}

static void call_check(call_t *c)
{
    size_t n = c->cg->n, r = c->cg->rank, es = pami_type_size(c->red.t);
    size_t blk = c->count * es;
    bool result = c->kind == PAMI_XFER_ALLREDUCE ||
                  (c->kind == PAMI_XFER_REDUCE && r == c->root);
    if (c->kind == PAMI_XFER_BROADCAST) {
        long at = ct_check(c->rbuf, 77 + c->root, blk);
        if (at >= 0)
            mp_fail(CALL_FMT ": wrong at byte %ld", CALL_ARGS(c), at);
    } else if (c->kind == PAMI_XFER_ALLGATHER) {
        for (size_t j = 0; j < n; j++) {
            long at = ct_check(c->rbuf + j * blk, j, blk);
            if (at >= 0)
                mp_fail(CALL_FMT ": block %zu wrong at byte %ld",
                        CALL_ARGS(c), j, at);
        }
    } else if (result) {
        unsigned char want[32];
        for (size_t i = 0; i < c->count; i++) {
            long double mag;
            ct_fold(c->red.t, c->red.op, c->red.user, 0, n - 1, i, want,
                    &mag);
            if (!ct_same(c->red.t, c->rbuf + i * es, want, mag, n))
                mp_fail(CALL_FMT ": element %zu is wrong", CALL_ARGS(c), i);
        }
    } else if (!c->in_place) {
        for (size_t k = 0; k < c->rbytes; k++)
            if (c->rbuf[k] != 0xEE)
                mp_fail(CALL_FMT ": rbuf off the root written at byte %zu",
                        CALL_ARGS(c), k);
    }
    if (c->rbuf[c->rbytes] != 0xEE)
        mp_fail(CALL_FMT ": wrote past the end of rbuf", CALL_ARGS(c));
    free(c->sbuf);
    free(c->rbuf);
    runs++;
}

static void run(const ct_geom_t *cg, pami_xfer_type_t kind, red_t red,
                size_t count, size_t root, bool in_place)
{
    call_t c = {.cg = cg, .kind = kind, .red = red, .count = count,
                .root = root, .in_place = in_place};
    call_prepare(&c);
    pami_result_t rc = pami_collective_wait(job.ctx[0], &c.x);
    if (rc != PAMI_SUCCESS)
        mp_fail(CALL_FMT ": %s", CALL_ARGS(&c), pami_error_text(rc));
    call_check(&c);
}

/* Byte sizes that matter: none, one element, below / at / above a slot
 * and the small-path limit, several slots. */
static size_t sizes(size_t *out)
{
    size_t k = 0;
    out[k++] = 0;
    out[k++] = 8;
    out[k++] = 1000;
    out[k++] = 8192;
    out[k++] = 8192 + 64;
    out[k++] = slot - 64;
    out[k++] = slot;
    out[k++] = slot + 64;
    out[k++] = 3 * slot + 64 * 5;
    return k;
}

static size_t elems(size_t bytes, pami_type_t t)
{
    size_t es = pami_type_size(t);
    return bytes == 0 ? 0 : bytes / es > 0 ? bytes / es : 1;
}

static void sweep(const ct_geom_t *cg)
{
    size_t sz[16], ns = sizes(sz), n = cg->n, r = cg->rank;
    /* Every type x op at every size when a slot is small, else the large
     * sizes with a few of them (the reference fold is slow). */
    for (size_t si = 0; si < ns; si++) {
        for (size_t ri = 0; ri < NREDS; ri++) {
            bool cheap = sz[si] <= 1000 || slot <= 4096;
            if (!cheap && ri % 6 != 0 && ri != NREDS - 1)
                continue;
            size_t cnt = elems(sz[si], reds[ri].t);
            bool ip = (ri + si) % 2 == 1;
            run(cg, PAMI_XFER_ALLREDUCE, reds[ri], cnt, 0, ip);
            size_t root = (ri + si) % n;
            run(cg, PAMI_XFER_REDUCE, reds[ri], cnt, root, ip && r == root);
        }
        for (size_t ti = 0; ti < 3; ti++) {
            red_t mv = {.t = move_types[ti]};
            size_t cnt = elems(sz[si], mv.t);
            for (size_t root = 0; root < n; root++)
                run(cg, PAMI_XFER_BROADCAST, mv, cnt, root, false);
            run(cg, PAMI_XFER_ALLGATHER, mv, cnt, 0, (ti + si) % 2 == 1);
        }
    }
}

/* 64 non-blocking ones in flight, mixed with register barriers started
 * between them (barrier_shm, and the blocking pami_geometry_barrier). */
static unsigned done_count;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS)
        mp_fail("in-flight collective %zu: %s", (size_t)(uintptr_t)cookie,
                pami_error_text(rc));
    done_count++;
}

static void inflight(const ct_geom_t *cg)
{
    enum { N = 64 };
    call_t *c = calloc(N, sizeof(*c));
    pami_xfer_t bar = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                       .kind = PAMI_XFER_BARRIER, .geometry = cg->g,
                       .algorithm = ct_algo("barrier_shm"),
                       .done_fn = on_done};
    unsigned expect = 0;
    done_count = 0;
    for (size_t i = 0; i < N; i++) {
        static const pami_xfer_type_t kinds[] = {
            PAMI_XFER_ALLREDUCE, PAMI_XFER_BROADCAST, PAMI_XFER_ALLGATHER,
            PAMI_XFER_REDUCE};
        c[i] = (call_t){.cg = cg, .kind = kinds[i % 4],
                        .red = reds[i % NREDS], .root = i % cg->n,
                        .count = elems(i % 3 == 0 ? slot + 8 * i : 8 * i + 8,
                                       reds[i % NREDS].t)};
        if (c[i].kind == PAMI_XFER_BROADCAST ||
            c[i].kind == PAMI_XFER_ALLGATHER)
            c[i].red = (red_t){.t = PAMI_TYPE_BYTE};
        c[i].in_place = c[i].kind == PAMI_XFER_ALLREDUCE && i % 8 == 0;
        call_prepare(&c[i]);
        c[i].x.done_fn = on_done;
        c[i].x.cookie  = (void *)(uintptr_t)i;
        MP_CHECK(pami_collective(job.ctx[0], &c[i].x));
        expect++;
        if (i % 8 == 7) {
            MP_CHECK(pami_collective(job.ctx[0], &bar));
            expect++;
        }
    }
    MP_CHECK(pami_geometry_barrier(job.ctx[0], cg->g));
    double t0 = mp_now();
    while (done_count < expect) {
        pami_context_wait(job.ctx[0], 100);
        MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "%u of %u in flight done",
                  done_count, expect);
    }
    for (size_t i = 0; i < N; i++)
        call_check(&c[i]);
    free(c);
}

static pami_result_t any_rc;

static void on_any(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)cookie;
    any_rc = rc;
}

/* Counts differ between members: every member gets PAMI_INVAL, and the
 * next call works. */
static void mismatch(const ct_geom_t *cg)
{
    red_t red = {PAMI_TYPE_INT32, PAMI_OP_SUM, 0};
    call_t c = {.cg = cg, .kind = PAMI_XFER_ALLREDUCE, .red = red,
                .count = 10 + cg->rank};
    call_prepare(&c);
    pami_result_t rc = pami_collective_wait(job.ctx[0], &c.x);
    MP_EXPECT(rc == PAMI_INVAL, "mismatched counts gave %s",
              pami_error_text(rc));
    free(c.sbuf);
    free(c.rbuf);
    run(cg, PAMI_XFER_ALLREDUCE, red, 100, 0, false);
}

/* Task 0's call fails its checks (NULL sbuf) while the others run it
 * non-blocking: they end with PAMI_INVAL, not a hang, and the register
 * stays aligned for the next calls. */
static void null_on_one(const ct_geom_t *cg)
{
    red_t red = {PAMI_TYPE_INT64, PAMI_OP_SUM, 0};
    for (int form = 0; form < 2; form++) {
        call_t c = {.cg = cg, .kind = PAMI_XFER_ALLREDUCE, .red = red,
                    .count = form ? 3 * slot / 8 : 4};
        call_prepare(&c);
        c.x.field_mask &= ~PAMI_XFER_FIELD_ALGORITHM; /* AUTO */
        if (job.me == 0)
            c.x.sbuf = NULL;
        c.x.done_fn = on_any;
        any_rc      = PAMI_ERROR;
        pami_result_t rc = pami_collective(job.ctx[0], &c.x);
        if (job.me == 0) {
            MP_EXPECT(rc == PAMI_INVAL, "NULL sbuf accepted: %s",
                      pami_error_text(rc));
        } else {
            MP_CHECK(rc);
            double t0 = mp_now();
            while (any_rc == PAMI_ERROR) {
                pami_context_wait(job.ctx[0], 100);
                MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "no end after task 0 "
                          "failed its call");
            }
            MP_EXPECT(any_rc == PAMI_INVAL, "the others' call ended with %s",
                      pami_error_text(any_rc));
        }
        free(c.sbuf);
        free(c.rbuf);
        run(cg, PAMI_XFER_ALLREDUCE, red, 1000, 0, false);
        run(cg, PAMI_XFER_BROADCAST, red, 3 * slot / 8, 1, false);
    }
}

static uint64_t stat_of(const char *name)
{
    return ct_stat(job.ctx[0], "coll_shm", name);
}

static int segments_left(void)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    MP_CHECK(pami_client_query(job.client, &a));
    char prefix[160];
    snprintf(prefix, sizeof(prefix), "pami-%s-collshm",
             a.job_id ? a.job_id : "nojob");
    DIR *d = opendir("/dev/shm");
    int  k = 0;
    if (d == NULL)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
            k++;
        }
    closedir(d);
    return k;
}

/* Not the node's tasks: the check refuses, AUTO still works. */
static void refused(void)
{
    if (job.size < 3)
        return;
    pami_task_t list[64];
    size_t k = 0;
    for (size_t i = 0; i + 1 < job.size; i++)
        list[k++] = (pami_task_t)i;
    ct_geom_t part;
    bool in = ct_create(&job, &part, "all but the last", 9, list, k, NULL);
    if (!in)
        return;
    static const char *names[] = {"allreduce_shm", "broadcast_shm",
                                  "reduce_shm", "allgather_shm"};
    static const pami_xfer_type_t kinds[] = {
        PAMI_XFER_ALLREDUCE, PAMI_XFER_BROADCAST, PAMI_XFER_REDUCE,
        PAMI_XFER_ALLGATHER};
    for (int i = 0; i < 4; i++) {
        size_t na, nc;
        MP_CHECK(pami_geometry_algorithms_num(part.g, kinds[i], &na, &nc));
        pami_algorithm_t ids[32];
        pami_algorithm_metadata_t md[32];
        MP_CHECK(pami_geometry_algorithms_query(part.g, kinds[i], ids, md, na,
                                                ids + na, md + na, nc));
        bool found = false;
        for (size_t j = 0; j < na + nc; j++) {
            if (strcmp(md[j].name, names[i]) != 0)
                continue;
            found = true;
            MP_EXPECT(md[j].check != NULL, "%s has no check", names[i]);
            pami_xfer_t probe = {.kind = kinds[i], .geometry = part.g};
            MP_EXPECT(md[j].check(&probe) != PAMI_SUCCESS,
                      "%s accepts a geometry that is not the node", names[i]);
        }
        MP_EXPECT(found, "%s not in the check list", names[i]);
    }
    int32_t v = 1, sum = 0;
    pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = part.g,
                     .sbuf = &v, .rbuf = &sum, .count = 1,
                     .dtype = PAMI_TYPE_INT32, .op = PAMI_OP_SUM};
    MP_CHECK(pami_collective_wait(job.ctx[0], &x));
    MP_EXPECT(sum == (int32_t)k, "AUTO on the part: %d", sum);
    MP_CHECK(pami_geometry_destroy(&part.g));
}

static void mode_dead(const ct_geom_t *world)
{
    red_t red = {PAMI_TYPE_INT32, PAMI_OP_SUM, 0};
    for (int i = 0; i < 20; i++)
        run(world, PAMI_XFER_ALLREDUCE, red, (size_t)(i * 1000 + 1), 0,
            false);
    if (job.me == job.size - 1) {
        mp_sleep_ms(200); /* the others are waiting for it by now */
        fflush(stdout);
        _exit(0);
    }
    double t0 = mp_now();
    call_t c = {.cg = world, .kind = PAMI_XFER_ALLREDUCE, .red = red,
                .count = 3 * slot};
    call_prepare(&c);
    pami_result_t rc = pami_collective_wait(job.ctx[0], &c.x);
    MP_EXPECT(rc == PAMI_PEER_FAILED, "allreduce_shm with a dead task: %s",
              pami_error_text(rc));
    MP_EXPECT(mp_now() - t0 < 15, "took %.1f s to notice", mp_now() - t0);
    rc = pami_collective_wait(job.ctx[0], &c.x);
    MP_EXPECT(rc == PAMI_PEER_FAILED, "allreduce_shm after the death: %s",
              pami_error_text(rc));
    free(c.sbuf);
    free(c.rbuf);
    pami_client_destroy(&job.client); /* a task is gone: may fail */
    printf("coll_shm dead: ok\n");
}

/* Task 0 names allreduce_shm where the others name allreduce_shm_cma:
 * the signatures differ, every member gets PAMI_INVAL after one barrier,
 * and the next call works. */
static void cma_other_algorithm(const ct_geom_t *cg)
{
    red_t red = {PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 0};
    call_t c = {.cg = cg, .kind = PAMI_XFER_ALLREDUCE, .red = red,
                .count = 100000};
    call_prepare(&c);
    if (job.me == 0)
        c.x.algorithm = ct_algo("allreduce_shm");
    pami_result_t rc = pami_collective_wait(job.ctx[0], &c.x);
    MP_EXPECT(rc == PAMI_INVAL, "allreduce_shm against allreduce_shm_cma "
              "gave %s", pami_error_text(rc));
    free(c.sbuf);
    free(c.rbuf);
    run(cg, PAMI_XFER_ALLREDUCE, red, 100001, 0, true);
}

/* broadcast_shm_cma runs without barriers (coll_alg_shm_a2a.c): the
 * last task names broadcast_shm (a register round) where the others
 * name it, then task 0 passes one byte more: each time every member
 * sees the other signature, gets PAMI_INVAL, and the next call works. */
static void cma_bcast_mismatch(const ct_geom_t *cg)
{
    red_t byte = {.t = PAMI_TYPE_BYTE};
    uint64_t mis0 = stat_of("mismatches");
    for (int form = 0; form < 2; form++) {
        call_t c = {.cg = cg, .kind = PAMI_XFER_BROADCAST, .red = byte,
                    .count = 200003 + (form == 1 && job.me == 0),
                    .root = 1 % cg->n};
        call_prepare(&c);
        if (form == 0 && job.me == job.size - 1)
            c.x.algorithm = ct_algo("broadcast_shm");
        pami_result_t rc = pami_collective_wait(job.ctx[0], &c.x);
        MP_EXPECT(rc == PAMI_INVAL, "broadcast_shm_cma against %s gave %s",
                  form == 0 ? "broadcast_shm" : "another count",
                  pami_error_text(rc));
        free(c.sbuf);
        free(c.rbuf);
        run(cg, PAMI_XFER_BROADCAST, byte, 200003, 0, false);
    }
    MP_EXPECT(stat_of("mismatches") == mis0 + 2, "mismatches moved by "
              "%llu, not 2", (unsigned long long)(stat_of("mismatches") -
                                                  mis0));
}

/* Broadcasts from every root in turn, back to back, between flag or
 * register rounds and allgather_shm_cma: a task that left one may be
 * in the next while others still read, so the control lines of both
 * parities are reused at once; every result checked. */
static void cma_bcast_loop(const ct_geom_t *cg)
{
    red_t byte = {.t = PAMI_TYPE_BYTE}, isum = {PAMI_TYPE_INT32,
                                                PAMI_OP_SUM, 0};
    for (size_t i = 0; i < 60; i++) {
        size_t root = i % cg->n, count = 20000 + 4093 * (i % 7);
        run(cg, PAMI_XFER_BROADCAST, byte, count, root, false);
        run(cg, PAMI_XFER_BROADCAST, byte, count + 1, (root + 1) % cg->n,
            false);
        if (i % 3 == 0) {
            cma = false; /* allreduce_shm: a flag or register round */
            run(cg, PAMI_XFER_ALLREDUCE, isum, 4, 0, false);
            cma = true;
        } else if (i % 3 == 1) {
            run(cg, PAMI_XFER_ALLGATHER, byte, 30001, 0, false);
        }
    }
}

/* Task 0's call fails its checks (NULL rbuf) where the others run
 * the named call: they end with PAMI_INVAL, and the next call works. */
static void cma_null_on_one(const ct_geom_t *cg, pami_xfer_type_t kind)
{
    red_t red = {kind == PAMI_XFER_BROADCAST ? PAMI_TYPE_BYTE
                                             : PAMI_TYPE_INT64,
                 kind == PAMI_XFER_BROADCAST ? 0 : PAMI_OP_SUM, 0};
    call_t c = {.cg = cg, .kind = kind, .red = red, .count = 70001,
                .root = cg->n - 1};
    call_prepare(&c);
    unsigned char *keep = c.rbuf;
    if (job.me == 0)
        c.x.rbuf = NULL;
    pami_result_t rc = pami_collective_wait(job.ctx[0], &c.x);
    MP_EXPECT(rc == PAMI_INVAL, "%s with a NULL rbuf on task 0 gave %s",
              kind_text(kind), pami_error_text(rc));
    free(c.sbuf);
    free(keep);
    run(cg, kind, red, 70001, 0, false);
}

/* A blocking allgather of count bytes a task (allgather_shm_cma in mode
 * cma, else allgather_shm) runs inline at any size (counter inline): no
 * request, its `barriers` register barriers waited for one by one. Then
 * rank 0 starts the same call with pami_collective (the queued form)
 * while the others wait inline: the two forms pair their barriers alike,
 * and the result is right on both. */
static void inline_beside_queued(const ct_geom_t *cg, size_t count,
                                 uint64_t barriers)
{
    red_t byte = {.t = PAMI_TYPE_BYTE};
    uint64_t in0 = stat_of("inline"), bar0 = stat_of("barriers");
    run(cg, PAMI_XFER_ALLGATHER, byte, count, 0, false);
    MP_EXPECT(stat_of("inline") == in0 + 1, "%s of %zu B blocking: inline "
              "moved by %llu, not 1", kind_text(PAMI_XFER_ALLGATHER), count,
              (unsigned long long)(stat_of("inline") - in0));
    MP_EXPECT(stat_of("barriers") == bar0 + barriers, "%s of %zu B inline: "
              "%llu barriers, not %llu", kind_text(PAMI_XFER_ALLGATHER),
              count, (unsigned long long)(stat_of("barriers") - bar0),
              (unsigned long long)barriers);
    in0 = stat_of("inline");
    call_t c = {.cg = cg, .kind = PAMI_XFER_ALLGATHER, .red = byte,
                .count = count};
    call_prepare(&c);
    if (cg->rank == 0) {
        done_count  = 0;
        c.x.done_fn = on_done;
        MP_CHECK(pami_collective(job.ctx[0], &c.x));
        double t0 = mp_now();
        while (done_count == 0) {
            pami_context_wait(job.ctx[0], 100);
            MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "the queued call never "
                      "ended");
        }
    } else {
        MP_CHECK(pami_collective_wait(job.ctx[0], &c.x));
    }
    uint64_t moved = stat_of("inline") - in0;
    MP_EXPECT(moved == (cg->rank == 0 ? 0u : 1u), "rank %zu: inline moved "
              "by %llu", cg->rank, (unsigned long long)moved);
    call_check(&c);
}

/* PAMI_COLL_SHM_CMA=0: the checks refuse, a named call gets PAMI_INVAL
 * on every task (nobody waits), AUTO still runs. */
static void cma_off(const ct_geom_t *world)
{
    static const char *names[] = {"allreduce_shm_cma", "broadcast_shm_cma",
                                  "allgather_shm_cma", "alltoall_shm_cma",
                                  "reduce_scatter_shm_cma"};
    uint8_t in[64 * 8], out[64 * 8];
    memset(in, 1, sizeof(in));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        pami_algorithm_t id = ct_algo(names[i]);
        pami_algorithm_metadata_t md;
        pami_xfer_type_t kind = i == 0   ? PAMI_XFER_ALLREDUCE
                                : i == 1 ? PAMI_XFER_BROADCAST
                                : i == 2 ? PAMI_XFER_ALLGATHER
                                : i == 3 ? PAMI_XFER_ALLTOALL
                                         : PAMI_XFER_REDUCE_SCATTER;
        size_t na, nc;
        pami_algorithm_t ids[32];
        pami_algorithm_metadata_t mds[32];
        MP_CHECK(pami_geometry_algorithms_num(world->g, kind, &na, &nc));
        MP_CHECK(pami_geometry_algorithms_query(world->g, kind, ids, mds, na,
                                                ids + na, mds + na, nc));
        md.check = NULL;
        for (size_t j = 0; j < na + nc; j++)
            if (ids[j] == id)
                md = mds[j];
        MP_EXPECT(md.check != NULL, "%s has no check", names[i]);
        pami_xfer_t probe = {.kind = kind, .geometry = world->g};
        MP_EXPECT(md.check(&probe) != PAMI_SUCCESS,
                  "%s accepted with PAMI_COLL_SHM_CMA=0", names[i]);
        pami_xfer_t x = ct_xfer(world->g, kind, names[i], in, out,
                                8 / world->n + 1, PAMI_TYPE_DOUBLE, 0);
        pami_result_t rc = pami_collective_wait(job.ctx[0], &x);
        MP_EXPECT(rc == PAMI_INVAL, "%s named with PAMI_COLL_SHM_CMA=0: %s",
                  names[i], pami_error_text(rc));
    }
    red_t dsum = {PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 0};
    call_t c = {.cg = world, .kind = PAMI_XFER_ALLREDUCE, .red = dsum,
                .count = 200000};
    call_prepare(&c);
    c.x.field_mask &= ~PAMI_XFER_FIELD_ALGORITHM; /* AUTO */
    MP_CHECK(pami_collective_wait(job.ctx[0], &c.x));
    call_check(&c);
}

/* The world's tasks in reverse order (geometry id 1). */
static void reversed(ct_geom_t *rev)
{
    pami_task_t list[64];
    for (size_t i = 0; i < job.size; i++)
        list[i] = (pami_task_t)(job.size - 1 - i);
    MP_EXPECT(ct_create(&job, rev, "reversed", 1, list, job.size, NULL),
              "not in reversed");
}

static void mode_cma(const ct_geom_t *world)
{
    const char *off = getenv("PAMI_COLL_SHM_CMA");
    if (off != NULL && strcmp(off, "0") == 0) {
        cma_off(world);
        return;
    }
    cma = true;
    uint64_t failed0 = stat_of("failed");
    sweep(world);
    ct_geom_t rev;
    reversed(&rev);
    sweep(&rev);
    inflight(&rev);
    /* Fewer elements than tasks, one chunk and a bit, several chunks
     * with an odd count; in place and not, built-in and a user op that
     * does not commute. */
    red_t dsum = {PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 0};
    red_t user = {PAMI_TYPE_UINT32, PAMI_OP_USER, CT_USER_MATRIX};
    red_t imax = {PAMI_TYPE_INT32, PAMI_OP_MAX, 0};
    size_t counts[] = {1, job.size - 1, 8193 * job.size, 300001};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        if (counts[i] == 0)
            continue;
        for (int ip = 0; ip < 2; ip++) {
            run(&rev, PAMI_XFER_ALLREDUCE, dsum, counts[i], 0, ip);
            run(world, PAMI_XFER_ALLREDUCE, user, counts[i], 0, ip);
            run(&rev, PAMI_XFER_ALLREDUCE, imax, counts[i], 0, ip);
        }
    }
    red_t byte = {.t = PAMI_TYPE_BYTE};
    run(world, PAMI_XFER_ALLREDUCE, dsum, ((size_t)4 << 20) / 8, 0, false);
    run(world, PAMI_XFER_BROADCAST, byte, ((size_t)4 << 20) + 3,
        1 % world->n, false);
    run(world, PAMI_XFER_ALLGATHER, byte, ((size_t)1 << 20) + 5, 0, false);
    run(&rev, PAMI_XFER_ALLGATHER, byte, ((size_t)1 << 20) + 5, 0, true);
    MP_EXPECT(stat_of("failed") == failed0, "calls failed: %llu",
              (unsigned long long)(stat_of("failed") - failed0));
    cma_other_algorithm(&rev);
    cma_bcast_mismatch(&rev);
    cma_bcast_loop(world);
    cma_bcast_loop(&rev);
    inline_beside_queued(world, ((size_t)1 << 18) + 3, 2);
    inline_beside_queued(&rev, ((size_t)1 << 18) + 3, 2);
    cma_null_on_one(world, PAMI_XFER_ALLREDUCE);
    cma_null_on_one(world, PAMI_XFER_BROADCAST);
    MP_CHECK(pami_geometry_destroy(&rev.g));
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_shm", &argc, argv, NULL, 1, true);
    const char *mode = argc > 1 ? argv[1] : "all";
    const char *env = getenv("PAMI_COLL_SHM_SLOT");
    slot = env != NULL ? strtoull(env, NULL, 10) / 64 * 64 : 262144;
    double t0 = mp_now();
    ct_geom_t world = {.name = "world"};
    ct_world(&job, &world);
    MP_EXPECT(job.attr.num_local_tasks == job.size,
              "the test needs every task on this node");

    if (strcmp(mode, "dead") == 0 || strcmp(mode, "dead-cma") == 0) {
        cma = strcmp(mode, "dead-cma") == 0; /* allreduce_shm_cma */
        mode_dead(&world);
        return 0;
    }
    if (strcmp(mode, "cma") == 0) {
        mode_cma(&world);
    } else if (strcmp(mode, "large") == 0) {
        size_t big = (size_t)4 << 20;
        red_t dsum = {PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 0};
        red_t byte = {.t = PAMI_TYPE_BYTE};
        red_t user = {PAMI_TYPE_UINT32, PAMI_OP_USER, CT_USER_MATRIX};
        run(&world, PAMI_XFER_ALLREDUCE, dsum, big / 8, 0, false);
        run(&world, PAMI_XFER_ALLREDUCE, user, big / 4, 0, true);
        run(&world, PAMI_XFER_REDUCE, dsum, big / 8, world.n - 1, false);
        run(&world, PAMI_XFER_BROADCAST, byte, big, 1 % world.n, false);
        run(&world, PAMI_XFER_ALLGATHER, byte, big / world.n, 0, false);
        /* Four rounds of a slot each (the last one 5 B): one barrier each. */
        inline_beside_queued(&world, 3 * slot + 5, 4);
    } else {
        MP_EXPECT(world.n >= 2, "needs two tasks");
        sweep(&world);
        MP_CHECK(pami_geometry_barrier(job.ctx[0], world.g));
        MP_EXPECT(segments_left() == 0, "the segment's name is left");
        ct_geom_t rev;
        reversed(&rev);
        sweep(&rev);
        pami_task_t list[64];
        size_t k = 0;
        for (size_t i = 1; i < job.size; i += 2)
            list[k++] = (pami_task_t)i;
        for (size_t i = 0; i < job.size; i += 2)
            list[k++] = (pami_task_t)i;
        ct_geom_t il;
        MP_EXPECT(ct_create(&job, &il, "interleaved", 2, list, k, NULL),
                  "not in interleaved");
        inflight(&il);
        inflight(&world);
        mismatch(&rev);
        MP_CHECK(pami_geometry_destroy(&rev.g));
        MP_CHECK(pami_geometry_destroy(&il.g));
        refused();
        MP_EXPECT(stat_of("mismatches") == 1, "mismatches %llu",
                  (unsigned long long)stat_of("mismatches"));
        MP_EXPECT(stat_of("failed") == 1, "failed %llu",
                  (unsigned long long)stat_of("failed"));
        MP_EXPECT(stat_of("setups") == 1, "setups %llu",
                  (unsigned long long)stat_of("setups"));
        null_on_one(&world);
        MP_EXPECT(stat_of("queued") > 0, "nothing was queued");
    }
    MP_EXPECT(stat_of("ops") > 0, "no shared-memory collective ran");
    mp_sync(&job);
    MP_EXPECT(segments_left() == 0, "the segment's name is left");
    if (job.me == 0)
        printf("coll_shm %s: %zu tasks, slot %zu, %zu collectives checked "
               "(task 0) in %.1f s\n", mode, job.size, slot, runs,
               mp_now() - t0);
    mp_finish(&job);
    return 0;
}

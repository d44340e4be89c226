/*
 * Bad input: clear result codes on every member, no hang, and the
 * geometry still works afterwards.
 */
#include "coll_util.h"

static mp_job_t job;

typedef struct {
    bool          done;
    pami_result_t rc;
} res_t;

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    res_t *r = cookie;
    r->done = true;
    r->rc   = rc;
}

/* Starts x; returns the call's result, or (when it started) the
 * collective's. */
static pami_result_t run(pami_xfer_t *x)
{
    res_t r = {0};
    x->done_fn = on_done;
    x->cookie  = &r;
    pami_result_t rc = pami_collective(job.ctx[0], x);
    if (rc != PAMI_SUCCESS)
        return rc;
    MP_WAIT(&job, job.ctx[0], r.done, MP_WAIT_S, "collective kind %d",
            (int)x->kind);
    return r.rc;
}

static void still_works(pami_geometry_t g, const char *after)
{
    int64_t one = 1, sum = 0;
    pami_result_t rc = pami_geometry_allreduce(job.ctx[0], g, &one, &sum, 1,
                                               PAMI_TYPE_INT64, PAMI_OP_SUM);
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE};
    MP_CHECK(pami_geometry_query(g, &a));
    if (rc != PAMI_SUCCESS || sum != (int64_t)a.size)
        mp_fail("after %s: allreduce %s, sum %lld", after,
                pami_error_text(rc), (long long)sum);
}

#define EXPECT_RC(expr, want, what)                                         \
    do {                                                                    \
        pami_result_t rc_ = (expr);                                         \
        if (rc_ != (want))                                                  \
            mp_fail("%s: %s, expected %s", what, pami_error_text(rc_),      \
                    pami_error_text(want));                                 \
    } while (0)

static void matrix_user(void *inout, const void *in, size_t count, void *ck)
{
    (void)ck;
    ct_user_matrix(inout, in, count, NULL);
}

int main(int argc, char **argv)
{
    mp_init(&job, "coll_bad", &argc, argv, NULL, 1, true);
    size_t n = job.size;
    pami_geometry_t world;
    MP_CHECK(pami_geometry_world(job.ctx[0], &world));
    int64_t s[64] = {0}, r[64];

    /* Not a geometry, not a kind: refused before anything starts. */
    pami_xfer_t x = {.kind = PAMI_XFER_BARRIER};
    EXPECT_RC(run(&x), PAMI_INVAL, "NULL geometry");
    x = (pami_xfer_t){.kind = (pami_xfer_type_t)99, .geometry = world};
    EXPECT_RC(run(&x), PAMI_INVAL, "unknown kind");
    EXPECT_RC(pami_collective(job.ctx[0], NULL), PAMI_INVAL, "NULL xfer");
    EXPECT_RC(pami_geometry_destroy(&world), PAMI_INVAL, "destroy world");

    /* Unknown algorithm, algorithm of another collective, everywhere. */
    x = (pami_xfer_t){.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                      .kind = PAMI_XFER_BARRIER, .geometry = world,
                      .algorithm = 9999};
    EXPECT_RC(run(&x), PAMI_INVAL, "unknown algorithm");
    pami_algorithm_t ring;
    MP_CHECK(pami_algorithm_by_name("allreduce_ring", &ring));
    EXPECT_RC(pami_algorithm_by_name("no_such", &ring), PAMI_NOT_FOUND,
              "by_name");
    MP_CHECK(pami_algorithm_by_name("allreduce_ring", &ring));
    x.algorithm = ring;
    EXPECT_RC(run(&x), PAMI_INVAL, "allreduce algorithm for a barrier");
    still_works(world, "unknown algorithms");

    /* A non-commutative user op on the ring: its check refuses. */
    x = (pami_xfer_t){.field_mask = PAMI_XFER_FIELD_ALGORITHM |
                                    PAMI_XFER_FIELD_USER_OP,
                      .kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                      .algorithm = ring, .sbuf = s, .rbuf = r, .count = 8,
                      .dtype = PAMI_TYPE_UINT32, .op = PAMI_OP_USER,
                      .user_fn = matrix_user};
    EXPECT_RC(run(&x), PAMI_INVAL, "non-commutative op on the ring");
    /* Bitwise op on floats, reduction of bytes, root out of range. */
    x = (pami_xfer_t){.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                      .sbuf = s, .rbuf = r, .count = 4,
                      .dtype = PAMI_TYPE_DOUBLE, .op = PAMI_OP_BXOR};
    EXPECT_RC(run(&x), PAMI_INVAL, "bxor on double");
    x.dtype = PAMI_TYPE_BYTE;
    x.op = PAMI_OP_SUM;
    EXPECT_RC(run(&x), PAMI_INVAL, "sum of bytes");
    x = (pami_xfer_t){.kind = PAMI_XFER_BROADCAST, .geometry = world,
                      .root = n, .rbuf = r, .count = 1,
                      .dtype = PAMI_TYPE_INT64};
    EXPECT_RC(run(&x), PAMI_INVAL, "root beyond the geometry");
    still_works(world, "invalid ops");

    /* NULL buffers everywhere; then on task 0 only: the others' instance
     * ends with PAMI_INVAL instead of waiting for task 0. */
    x = (pami_xfer_t){.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                      .sbuf = NULL, .rbuf = r, .count = 4,
                      .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    EXPECT_RC(run(&x), PAMI_INVAL, "NULL sbuf everywhere");
    x.sbuf = job.me == 0 ? NULL : s;
    EXPECT_RC(run(&x), n > 1 || job.me == 0 ? PAMI_INVAL : PAMI_SUCCESS,
              "NULL sbuf on task 0");
    still_works(world, "NULL buffers");

    /* Mismatched counts: every member ends with PAMI_INVAL. */
    if (n > 1) {
        x = (pami_xfer_t){.kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                          .sbuf = s, .rbuf = r, .count = job.me == 0 ? 4 : 8,
                          .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
        EXPECT_RC(run(&x), PAMI_INVAL, "mismatched counts");
        x = (pami_xfer_t){.kind = PAMI_XFER_BROADCAST, .geometry = world,
                          .root = 0, .rbuf = r, .count = job.me == 1 ? 3 : 5,
                          .dtype = PAMI_TYPE_INT64};
        /* Only a member that receives a mismatched message can tell;
         * the root may have finished already. */
        pami_result_t brc = run(&x);
        if (job.me == 1)
            EXPECT_RC(brc, PAMI_INVAL, "mismatched broadcast counts");
        else if (brc != PAMI_INVAL && brc != PAMI_SUCCESS)
            mp_fail("mismatched broadcast counts: %s", pami_error_text(brc));
        still_works(world, "mismatched counts");
    }

    /* Mismatched barrier algorithms: task 0 runs dissemination (messages
     * of the collectives), the others the control-packet protocol. The
     * members that get task 0's message fail and abort the rest; the
     * others' protocol barrier stays pending (it can never complete) and
     * is finished with PAMI_SHUTDOWN at context destroy. */
    if (n > 1) {
        pami_algorithm_t diss, pk;
        MP_CHECK(pami_algorithm_by_name("barrier_dissemination", &diss));
        MP_CHECK(pami_algorithm_by_name("barrier_packets", &pk));
        x = (pami_xfer_t){.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                          .kind = PAMI_XFER_BARRIER, .geometry = world,
                          .algorithm = job.me == 0 ? diss : pk};
        EXPECT_RC(run(&x), PAMI_INVAL, "mismatched barrier algorithms");
        still_works(world, "mismatched barrier algorithms");
    }

    /* Geometry creation: bad lists refused here; different lists on the
     * members fail on all of them. */
    pami_geometry_t g = NULL;
    pami_task_t list[64];
    for (size_t i = 0; i < n; i++)
        list[i] = (pami_task_t)i;
    EXPECT_RC(pami_geometry_create_tasklist(job.ctx[0], world, 0, list, n,
                                            NULL, &g, NULL, NULL),
              PAMI_INVAL, "id 0");
    list[0] = (pami_task_t)n;
    EXPECT_RC(pami_geometry_create_tasklist(job.ctx[0], world, 5, list, n,
                                            NULL, &g, NULL, NULL),
              PAMI_INVAL, "task beyond the job");
    list[0] = 0;
    if (n > 1) {
        if (job.me == 0) { list[0] = 1; list[1] = 0; }
        MP_CHECK(pami_geometry_create_tasklist(job.ctx[0], world, 6, list, n,
                                               NULL, &g, NULL, NULL));
        EXPECT_RC(pami_geometry_wait_ready(job.ctx[0], g), PAMI_INVAL,
                  "members with different lists");
        pami_xfer_t b = {.kind = PAMI_XFER_BARRIER, .geometry = g};
        EXPECT_RC(run(&b), PAMI_INVAL, "barrier on a failed geometry");
        MP_CHECK(pami_geometry_destroy(&g));
        list[0] = 0; list[1] = 1;
    }

    /* Destroy with a collective in flight: PAMI_EAGAIN, nothing lost. */
    MP_CHECK(pami_geometry_create_tasklist(job.ctx[0], world, 7, list, n,
                                           NULL, &g, NULL, NULL));
    MP_CHECK(pami_geometry_wait_ready(job.ctx[0], g));
    res_t br = {0};
    pami_xfer_t b = {.kind = PAMI_XFER_BARRIER, .geometry = g,
                     .done_fn = on_done, .cookie = &br};
    MP_CHECK(pami_collective(job.ctx[0], &b));
    if (n > 1)
        EXPECT_RC(pami_geometry_destroy(&g), PAMI_EAGAIN,
                  "destroy with a barrier in flight");
    MP_WAIT(&job, job.ctx[0], br.done, MP_WAIT_S, "barrier");
    MP_CHECK(br.rc);
    MP_CHECK(pami_geometry_destroy(&g));
    MP_EXPECT(g == NULL, "destroy left the handle");

    pami_protocol_stat_t st[32];
    size_t ns;
    MP_CHECK(pami_protocol_stats(job.ctx[0], "collectives", st, 32, &ns));
    for (size_t i = 0; i < ns && i < 32; i++)
        if (strcmp(st[i].name, "connid_in_use") == 0)
            MP_EXPECT(st[i].value == 0, "ConnIDs still in use");
    mp_sync(&job);
    if (job.me == 0)
        printf("coll_bad: %zu tasks: all bad input refused or failed "
               "cleanly\n", n);
    mp_finish(&job);
    return 0;
}

/*
 * Collectives as a runtime uses them: the world geometry, a sub-geometry,
 * blocking and non-blocking calls, many in flight, an algorithm chosen by
 * hand, and a reduction of your own. Every result is checked; the program
 * exits non-zero on the first wrong one.
 *
 *   pamirun -n 4 collectives
 */
#include <pami.h>
#include <pami_collectives.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(expr)                                                         \
    do {                                                                    \
        pami_result_t rc_ = (expr);                                         \
        if (rc_ != PAMI_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,   \
                    pami_error_text(rc_));                                  \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

static void expect(int ok, const char *what, pami_task_t me)
{
    if (!ok) {
        fprintf(stderr, "[%u] wrong result: %s\n", me, what);
        exit(1);
    }
}

static void on_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS) {
        fprintf(stderr, "collective failed: %s\n", pami_error_text(rc));
        exit(1);
    }
    (*(int *)cookie)++;
}

/* A user reduction: element-wise max of absolute values. Runs inside
 * progress, so it must not call pami. */
static void absmax(void *inout, const void *in, size_t count, void *cookie)
{
    (void)cookie;
    long *io = inout;
    const long *x = in;
    for (size_t i = 0; i < count; i++) {
        long a = labs(x[i]), b = labs(io[i]);
        io[i] = a > b ? a : b;
    }
}

int main(void)
{
    pami_client_t client;
    pami_context_t ctx;
    CHECK(pami_client_create("collectives", NULL, &client));
    pami_client_attr_t ca = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                           PAMI_CLIENT_ATTR_SIZE};
    CHECK(pami_client_query(client, &ca));
    pami_task_t me = ca.task;
    size_t n = ca.size;
    CHECK(pami_context_createv(client, NULL, 1, &ctx));

    /* 1. The world geometry exists with the context: a blocking sum. */
    pami_geometry_t world;
    CHECK(pami_geometry_world(ctx, &world));
    double x[4] = {me, 1, -1.0 * me, 0.5}, sum[4];
    CHECK(pami_geometry_allreduce(ctx, world, x, sum, 4, PAMI_TYPE_DOUBLE,
                                  PAMI_OP_SUM));
    double tri = (double)n * (double)(n - 1) / 2;
    expect(sum[0] == tri && sum[1] == (double)n && sum[2] == -tri &&
               sum[3] == 0.5 * (double)n, "allreduce sum", me);

    /* 2. A sub-geometry of the even tasks, in reverse order: created by
     * its members only, usable once its creation completed. */
    pami_task_t evens[n];
    size_t ne = 0;
    for (size_t t = n; t-- > 0;)
        if (t % 2 == 0)
            evens[ne++] = (pami_task_t)t;
    pami_geometry_t even = NULL;
    if (me % 2 == 0) {
        CHECK(pami_geometry_create_tasklist(ctx, world, 1, evens, ne, NULL,
                                            &even, NULL, NULL));
        CHECK(pami_geometry_wait_ready(ctx, even));
    }

    /* 3. Non-blocking broadcasts in flight at once on it, from rank 0 (the
     * highest even task): the ConnIDs keep them apart; each done_fn runs
     * from progress. */
    enum { FLIGHT = 16 };
    int bufs[FLIGHT][8], done = 0;
    if (even != NULL) {
        for (int k = 0; k < FLIGHT; k++) {
            for (int i = 0; i < 8; i++)
                bufs[k][i] = me == evens[0] ? 100 * k + i : -1;
            pami_xfer_t b = {.kind = PAMI_XFER_BROADCAST, .geometry = even,
                             .root = 0, .rbuf = bufs[k], .count = 8,
                             .dtype = PAMI_TYPE_INT32, .done_fn = on_done,
                             .cookie = &done};
            CHECK(pami_collective(ctx, &b));
        }
        while (done < FLIGHT)
            pami_context_wait(ctx, -1);
        for (int k = 0; k < FLIGHT; k++)
            for (int i = 0; i < 8; i++)
                expect(bufs[k][i] == 100 * k + i, "broadcast", me);
    }

    /* 4. An algorithm chosen by hand: what the registry offers for
     * allgather on the world, then a run of one of them by name. */
    size_t always = 0, checked = 0;
    CHECK(pami_geometry_algorithms_num(world, PAMI_XFER_ALLGATHER, &always,
                                       &checked));
    pami_algorithm_t algo;
    CHECK(pami_algorithm_by_name("allgather_ring", &algo));
    long mine = 7 * (long)me, all[n];
    pami_xfer_t g = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                     .kind = PAMI_XFER_ALLGATHER, .geometry = world,
                     .algorithm = algo, .sbuf = &mine, .rbuf = all,
                     .count = 1, .dtype = PAMI_TYPE_INT64};
    CHECK(pami_collective_wait(ctx, &g));
    for (size_t t = 0; t < n; t++)
        expect(all[t] == 7 * (long)t, "allgather", me);

    /* 5. A reduction of your own (commutative, so any algorithm may run). */
    long v = me % 2 ? -(long)me : (long)me, r = 0;
    pami_xfer_t u = {.field_mask = PAMI_XFER_FIELD_USER_OP,
                     .kind = PAMI_XFER_ALLREDUCE, .geometry = world,
                     .sbuf = &v, .rbuf = &r, .count = 1,
                     .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_USER,
                     .user_fn = absmax, .user_commutative = 1};
    CHECK(pami_collective_wait(ctx, &u));
    expect(r == (long)n - 1, "user reduction", me);

    /* A geometry is destroyed by each member when none of its
     * collectives is in flight; the world lives as long as the context. */
    if (even != NULL)
        CHECK(pami_geometry_destroy(&even));
    if (me == 0)
        printf("collectives: %zu tasks, %zu + %zu allgather algorithms, "
               "all results right\n", n, always, checked);
    CHECK(pami_client_destroy(&client));
    return 0;
}

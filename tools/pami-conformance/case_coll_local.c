/*
 * coll_empty_and_alone: collectives that need no message.
 * pami_collectives.h / collectives.md: each collective is "non-blocking
 * with a done_fn that runs from progress", never inside pami_collective;
 * the buffers are refused only when NULL "with a count" (xfer_refusals),
 * so count 0 with NULL buffers is a valid call; on a geometry of this
 * task alone the result is this task's own input.
 */
#include "cf.h"

#include <pami_collectives.h>

#include <string.h>

static const pami_xfer_type_t kinds[] = {
    PAMI_XFER_BARRIER, PAMI_XFER_BROADCAST, PAMI_XFER_REDUCE,
    PAMI_XFER_ALLREDUCE, PAMI_XFER_ALLGATHER, PAMI_XFER_GATHER,
    PAMI_XFER_SCATTER, PAMI_XFER_ALLTOALL, PAMI_XFER_REDUCE_SCATTER,
    PAMI_XFER_SCAN, PAMI_XFER_EXSCAN};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Starts x and checks that done_fn runs once, later, with PAMI_SUCCESS. */
static int start_and_wait(cf_env_t *e, pami_xfer_t *x, const char *what)
{
    cf_count_t d = {0};
    x->done_fn = cf_count_fn;
    x->cookie = &d;
    pami_result_t rc = pami_collective(e->ctx, x);
    if (rc != PAMI_SUCCESS) {
        CF_FAIL(e, "kind %d, %s: expected PAMI_SUCCESS, seen %s",
                (int)x->kind, what, cf_rc_name(rc));
        return -1;
    }
    if (d.n != 0) {
        CF_FAIL(e, "kind %d, %s: expected done_fn not to run inside "
                "pami_collective", (int)x->kind, what);
        return -1;
    }
    if (cf_wait_count(e, &d.n, 1, "done_fn") != 0)
        return -1;
    if (d.n != 1 || d.bad != 0) {
        CF_FAIL(e, "kind %d, %s: expected done_fn once with PAMI_SUCCESS, "
                "seen %zu (%s)", (int)x->kind, what, d.n, cf_rc_name(d.rc));
        return -1;
    }
    return 0;
}

static void coll_empty_and_alone(cf_env_t *e)
{
    pami_geometry_t world, self = NULL;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    /* Count 0, NULL buffers, on the world: every member calls. */
    for (size_t k = 0; k < NKINDS && !e->failed; k++) {
        pami_xfer_t x = {.kind = kinds[k], .geometry = world, .root = 0,
                         .count = 0, .dtype = PAMI_TYPE_INT32,
                         .op = PAMI_OP_SUM};
        if (start_and_wait(e, &x, "count 0 with NULL buffers on the world"))
            return;
    }
    /* This task alone: the result is its own input. */
    pami_task_t me = e->task;
    CF_OK(e, pami_geometry_create_tasklist(e->ctx, world, 40 + me, &me, 1,
                                           NULL, &self, NULL, NULL));
    CF_OK(e, pami_geometry_wait_ready(e->ctx, self));
    for (size_t k = 0; k < NKINDS && !e->failed; k++) {
        int32_t in[3] = {7 + (int32_t)me, 11, -5}, out[3] = {-1, -1, -1};
        pami_xfer_t x = {.kind = kinds[k], .geometry = self, .root = 0,
                         .sbuf = in, .rbuf = out, .count = 3,
                         .dtype = PAMI_TYPE_INT32, .op = PAMI_OP_SUM};
        if (kinds[k] == PAMI_XFER_BROADCAST)
            x.rbuf = in;
        if (start_and_wait(e, &x, "on a geometry of this task alone"))
            return;
        const int32_t *got = kinds[k] == PAMI_XFER_BROADCAST ? in : out;
        int want_untouched = kinds[k] == PAMI_XFER_BARRIER ||
                             kinds[k] == PAMI_XFER_EXSCAN;
        int ok = want_untouched ? out[0] == -1 && out[2] == -1
                                : got[0] == 7 + (int32_t)me && got[1] == 11 &&
                                      got[2] == -5;
        CF_CHECK(e, ok, "kind %d alone: expected %s, seen %d %d %d",
                 (int)kinds[k], want_untouched ? "rbuf untouched (exscan: "
                 "\"rbuf of rank 0 untouched\")" : "its own input",
                 got[0], got[1], got[2]);
    }
    pami_result_t rc;
    while ((rc = pami_geometry_destroy(&self)) == PAMI_EAGAIN)
        pami_context_wait(e->ctx, 10);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected the geometry destroyed, seen %s",
             cf_rc_name(rc));
}

const cf_case_t cf_coll_local_cases[] = {
    {"coll", "empty_and_alone", 1, 0, 0, coll_empty_and_alone, NULL},
};
const size_t cf_num_coll_local_cases =
    sizeof(cf_coll_local_cases) / sizeof(cf_coll_local_cases[0]);

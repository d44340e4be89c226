/*
 * A member forges an ABORT for a geometry's hidden flow-control sync
 * (collectives/coll_flow.c, docs/collectives.md "Running ahead"). The
 * sync used to fail silently: the victim ran on past its windows with no
 * result code anywhere. Now every member's free-running calls fail from
 * the next window on, at the same call, and nothing hangs.
 *
 * Two tasks, a geometry of both (id 5), windows of M messages (M from
 * the environment's bounds: 8 here). Task 1 sends task 0, before any
 * call, an ABORT for the number task 0's first sync will take (the
 * geometry's next number + M: M broadcasts of one message fill the first
 * window). Then both run broadcast_binomial from task 0, one at a time:
 *  - calls 0 .. 2M-1 end with PAMI_SUCCESS and the root's values (the
 *    failed sync's window still runs);
 *  - call 2M, at the next window, fails with PAMI_INVAL on both;
 *  - a barrier and an allreduce on the geometry (not free-running) still
 *    give the right results, and a broadcast after them fails again.
 *
 * White-box only to read the geometry's next number and window.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pami_collectives.h>
#include <pami_protocol.h>

#include "coll.h"
#include "mp_util.h"

static mp_job_t job;
#define CTX (job.ctx[0])

static pami_result_t bcast(pami_geometry_t g, pami_algorithm_t bin,
                           int64_t *v)
{
    pami_xfer_t x = {.kind = PAMI_XFER_BROADCAST, .geometry = g, .root = 0,
                     .field_mask = PAMI_XFER_FIELD_ALGORITHM,
                     .algorithm = bin, .rbuf = v, .count = 1,
                     .dtype = PAMI_TYPE_INT64};
    return pami_collective_wait(CTX, &x);
}

int main(int argc, char **argv)
{
    mp_init(&job, "flow_forged_abort", &argc, argv, NULL, 1, true);
    MP_EXPECT(job.size == 2, "needs 2 tasks");
    pami_geometry_t   world, g;
    const pami_task_t pair[2] = {0, 1};
    MP_CHECK(pami_geometry_world(CTX, &world));
    MP_CHECK(pami_geometry_create_tasklist(CTX, world, 5, pair, 2, NULL, &g,
                                           NULL, NULL));
    MP_CHECK(pami_geometry_wait_ready(CTX, g));
    pami_algorithm_t bin;
    MP_CHECK(pami_algorithm_by_name("broadcast_binomial", &bin));
    uint64_t m = g->cc->flow_msgs;
    MP_EXPECT(m >= 2 && m <= 64, "a window of %llu messages (the test's "
              "environment sets 8)", (unsigned long long)m);
    mp_sync(&job);
    if (job.me == 1) {
        /* As coll_send_abort writes it, for the first sync's number. */
        uint32_t   seq = g->next_seq + (uint32_t)m;
        coll_hdr_t h   = {.version = COLL_WIRE_VERSION,
                          .type = COLL_MSG_ABORT,
                          .connid = (uint16_t)(seq % PAMI_CONNID_BUFFER),
                          .kind = PAMI_XFER_BARRIER, .geom_id = g->id,
                          .seq = seq, .src_rank = 1};
        pami_send_immediate_t s = {.dest = mp_ep(&job, 0, 0),
                                   .dispatch = mp_protocol_base(&job, "collectives"), .header = &h,
                                   .header_len = sizeof(h)};
        mp_inject_imm(&job, CTX, &s);
    }
    for (uint64_t i = 0; i < 2 * m; i++) {
        int64_t v = job.me == 0 ? (int64_t)(1000 + i) : -1;
        pami_result_t rc = bcast(g, bin, &v);
        MP_EXPECT(rc == PAMI_SUCCESS, "broadcast %llu: %s",
                  (unsigned long long)i, pami_error_text(rc));
        MP_EXPECT(v == (int64_t)(1000 + i), "broadcast %llu: %lld",
                  (unsigned long long)i, (long long)v);
    }
    int64_t       v  = 7;
    pami_result_t rc = bcast(g, bin, &v);
    MP_EXPECT(rc == PAMI_INVAL, "broadcast %llu, at the window after the "
              "failed sync: %s, expected PAMI_INVAL",
              (unsigned long long)(2 * m), pami_error_text(rc));
    pami_xfer_t b = {.kind = PAMI_XFER_BARRIER, .geometry = g};
    MP_CHECK(pami_collective_wait(CTX, &b));
    int64_t     one = job.me + 1, sum = 0;
    pami_xfer_t ar  = {.kind = PAMI_XFER_ALLREDUCE, .geometry = g,
                       .sbuf = &one, .rbuf = &sum, .count = 1,
                       .dtype = PAMI_TYPE_INT64, .op = PAMI_OP_SUM};
    MP_CHECK(pami_collective_wait(CTX, &ar));
    MP_EXPECT(sum == 3, "allreduce after the failed sync: %lld",
              (long long)sum);
    rc = bcast(g, bin, &v);
    MP_EXPECT(rc == PAMI_INVAL, "a broadcast after the allreduce: %s, "
              "expected PAMI_INVAL", pami_error_text(rc));
    mp_sync(&job);
    MP_CHECK(pami_geometry_destroy(&g));
    printf("flow_forged_abort: task %u: %llu broadcasts, then PAMI_INVAL "
           "at the next window\n", job.me, (unsigned long long)(2 * m));
    mp_finish(&job);
    return 0;
}

/*
 * call_mismatch: members of the world calling one allreduce algorithm
 * differently (the last task's op, count or type differs).
 * pami_collectives.h, pami_xfer_t: "Every member must pass the same kind,
 * algorithm, root, dtype, op and count (a mismatch that a message shows
 * ends the collective on all members with PAMI_INVAL)"; collectives.md:
 * the task that sees it "sends an abort ... to every member, which ends it
 * there too", and in shared memory "either all find a difference and end
 * the call with PAMI_INVAL after that one barrier ... or none does".
 */
#include "cf.h"

#include <pami_collectives.h>

#include <stdlib.h>
#include <string.h>

enum { M_OP, M_COUNT, M_TYPE, M_KINDS };
static const char *const m_name[M_KINDS] = {"op (MAX for SUM)",
                                            "count (6 for 5)",
                                            "type (UINT64 for INT64)"};

static int all_agree(cf_env_t *e, int mine)
{
    int v[1024];
    if (e->size > 1024 || cf_allgather(&mine, v, sizeof(mine)) != 0)
        return 0;
    for (size_t q = 0; q < e->size; q++)
        mine = mine && v[q];
    return mine;
}

static void call_mismatch(cf_env_t *e)
{
    pami_geometry_t g;
    CF_OK(e, pami_geometry_world(e->ctx, &g));
    size_t na = 0, nc = 0;
    CF_OK(e, pami_geometry_algorithms_num(g, PAMI_XFER_ALLREDUCE, &na, &nc));
    if (na > 32)
        na = 32;
    if (nc > 32)
        nc = 32;
    pami_algorithm_t al[64];
    pami_algorithm_metadata_t md[64];
    CF_OK(e, pami_geometry_algorithms_query(g, PAMI_XFER_ALLREDUCE, al, md,
                                            na, al + na, md + na, nc));
    int odd = e->task == e->size - 1;
    size_t tried = 0;
    for (size_t a = 0; a < na + nc && !e->failed; a++)
        for (int m = 0; m < M_KINDS && !e->failed; m++) {
            int64_t in[6], out[6];
            for (size_t i = 0; i < 6; i++)
                in[i] = (int64_t)(e->task * 10 + i);
            pami_xfer_t x = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                             .kind = PAMI_XFER_ALLREDUCE, .geometry = g,
                             .algorithm = al[a], .sbuf = in, .rbuf = out,
                             .count = 5, .dtype = PAMI_TYPE_INT64,
                             .op = PAMI_OP_SUM};
            if (odd && m == M_OP)
                x.op = PAMI_OP_MAX;
            if (odd && m == M_COUNT)
                x.count = 6;
            if (odd && m == M_TYPE)
                x.dtype = PAMI_TYPE_UINT64;
            /* An algorithm is tried where every member's check accepts
             * its own call. */
            if (!all_agree(e, md[a].check == NULL ||
                                  md[a].check(&x) == PAMI_SUCCESS))
                continue;
            tried++;
            pami_result_t rc = pami_collective_wait(e->ctx, &x);
            if (rc != PAMI_INVAL) {
                CF_FAIL(e, "%s: expected PAMI_INVAL on every member when "
                        "the last task's %s differs, seen %s", md[a].name,
                        m_name[m], cf_rc_name(rc));
                break;
            }
            /* The geometry goes on: the same call, matched. */
            x.op = PAMI_OP_SUM;
            x.count = 5;
            x.dtype = PAMI_TYPE_INT64;
            rc = pami_collective_wait(e->ctx, &x);
            int64_t want0 = 0;
            for (size_t q = 0; q < e->size; q++)
                want0 += (int64_t)(q * 10);
            if (rc != PAMI_SUCCESS || out[0] != want0 ||
                out[4] != want0 + (int64_t)(4 * e->size))
                CF_FAIL(e, "%s: expected the matched call after the "
                        "mismatched one (%s) to give the sum %lld, seen %s "
                        "and %lld", md[a].name, m_name[m], (long long)want0,
                        cf_rc_name(rc), (long long)out[0]);
        }
    CF_CHECK(e, tried > 0, "expected an allreduce algorithm to try");
}

const cf_case_t cf_coll_mismatch_cases[] = {
    {"coll", "call_mismatch", 2, 0, 0, call_mismatch, NULL},
};
const size_t cf_num_coll_mismatch_cases =
    sizeof(cf_coll_mismatch_cases) / sizeof(cf_coll_mismatch_cases[0]);

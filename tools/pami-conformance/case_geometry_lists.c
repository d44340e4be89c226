/*
 * geometry_lists: collectives.md, results of pami_geometry_create_tasklist
 * and _taskrange: PAMI_INVAL (no fn) for "a task beyond the job, twice, or
 * not in parent" and "(_taskrange: ... of more than 2^24 tasks)", where
 * "twice" is also two ranges that overlap; a valid list of every task in
 * a scrambled order then makes a geometry whose ranks follow the list.
 */
#include "cf.h"

#include <pami_collectives.h>

#include <stdlib.h>

static void geometry_lists(cf_env_t *e)
{
    pami_geometry_t world, sub = NULL, g = NULL;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    cf_count_t v = {0};
    pami_task_t last = (pami_task_t)(e->size - 1);
    /* Two ranges that overlap in the last task. */
    pami_geometry_range_t overlap[2] = {{0, last}, {last, last}};
    CF_RC(e, PAMI_INVAL, pami_geometry_create_taskrange(
                             e->ctx, world, 31, overlap, 2, NULL, &g,
                             cf_count_fn, &v));
    /* The same range twice. */
    pami_geometry_range_t same[2] = {{0, 0}, {0, 0}};
    CF_RC(e, PAMI_INVAL, pami_geometry_create_taskrange(
                             e->ctx, world, 31, same, 2, NULL, &g, cf_count_fn,
                             &v));
    /* More than 2^24 tasks in one range. */
    pami_geometry_range_t wide = {0, 1u << 24};
    CF_RC(e, PAMI_INVAL, pami_geometry_create_taskrange(
                             e->ctx, world, 31, &wide, 1, NULL, &g, cf_count_fn,
                             &v));
    CF_CHECK(e, v.n == 0 && g == NULL, "expected no fn and no geometry for a "
             "refused creation");
    /* Not in parent: a geometry of the first half, then a list naming a
     * task outside it (only its members can call). */
    size_t half = (e->size + 1) / 2;
    pami_geometry_range_t first = {0, (pami_task_t)(half - 1)};
    cf_count_t sv = {0};
    CF_OK(e, pami_geometry_create_taskrange(e->ctx, world, 32, &first, 1,
                                            NULL, &sub, cf_count_fn, &sv));
    if (cf_wait_count(e, &sv.n, 1, "the half's creation") != 0)
        return;
    CF_CHECK(e, sv.rc == PAMI_SUCCESS, "expected the half's creation to "
             "succeed, seen %s", cf_rc_name(sv.rc));
    if (e->task < half) {
        pami_task_t outside[2] = {0, (pami_task_t)half};
        if (half < e->size)
            CF_RC(e, PAMI_INVAL, pami_geometry_create_tasklist(
                                     e->ctx, sub, 33, outside, 2, NULL, &g,
                                     cf_count_fn, &v));
        CF_CHECK(e, v.n == 0, "expected no fn for a list not in parent");
    } else {
        CF_CHECK(e, sub == NULL, "expected a non-member's geometry NULL");
    }
    /* A valid list: every task, rotated by one; rank i is tasks[i]. */
    pami_task_t *t = calloc(e->size, sizeof(*t));
    CF_CHECK(e, t != NULL, "expected memory");
    for (size_t i = 0; i < e->size; i++)
        t[i] = (pami_task_t)((i + 1) % e->size);
    pami_result_t rc = pami_geometry_create_tasklist(
        e->ctx, world, 34, t, e->size, NULL, &g, cf_count_fn, &v);
    if (rc == PAMI_SUCCESS)
        rc = pami_geometry_wait_ready(e->ctx, g);
    free(t);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected the rotated list's geometry, "
             "seen %s", cf_rc_name(rc));
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_RANK |
                                            PAMI_GEOMETRY_ATTR_SIZE};
    CF_OK(e, pami_geometry_query(g, &a));
    size_t want = (e->task + e->size - 1) % e->size;
    CF_CHECK(e, a.size == e->size && a.rank == want, "expected rank %zu of "
             "%zu (\"rank i is tasks[i]\"), seen %zu of %zu", want, e->size,
             a.rank, a.size);
    /* Rank 0 of it broadcasts its task id. */
    int64_t who = e->task;
    pami_xfer_t x = {.kind = PAMI_XFER_BROADCAST, .geometry = g, .root = 0,
                     .rbuf = &who, .count = 1, .dtype = PAMI_TYPE_INT64};
    CF_OK(e, pami_collective_wait(e->ctx, &x));
    CF_CHECK(e, who == (int64_t)(1 % e->size), "expected the broadcast of "
             "rank 0 (task %zu), seen %lld", 1 % e->size, (long long)who);
    while ((rc = pami_geometry_destroy(&g)) == PAMI_EAGAIN)
        pami_context_wait(e->ctx, 10);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected the geometry destroyed, seen %s",
             cf_rc_name(rc));
    if (sub != NULL)
        while ((rc = pami_geometry_destroy(&sub)) == PAMI_EAGAIN)
            pami_context_wait(e->ctx, 10);
    cf_wait_count(e, &v.n, 1, "the creation's fn");
    CF_CHECK(e, v.n == 1 && v.rc == PAMI_SUCCESS, "expected fn once, for the "
             "valid creation, with PAMI_SUCCESS; seen %zu (%s)", v.n,
             cf_rc_name(v.rc));
}

const cf_case_t cf_geometry_lists_cases[] = {
    {"coll", "geometry_lists", 1, 0, 0, geometry_lists, NULL},
};
const size_t cf_num_geometry_lists_cases =
    sizeof(cf_geometry_lists_cases) / sizeof(cf_geometry_lists_cases[0]);

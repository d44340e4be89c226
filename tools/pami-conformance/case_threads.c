/*
 * Progress from other places: a handler of one context advancing
 * another, the progress thread (PAMI_ASYNC_PROGRESS=1), and collectives
 * still in flight (a geometry that cannot go yet, a ConnID that a
 * callback cannot wait for). Each case names the sentences it checks in
 * docs/conformance.md.
 */
#include "cf.h"

#include <pami_collectives.h>
#include <pami_protocol.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- nested_contexts ---- */

typedef struct {
    pami_context_t c0, c1;
    pami_work_t    outer_w, inner_w;
    size_t         outer_ran, inner_ran;
    pami_result_t  adv_c1_from_c0;  /* a handler of c0 advancing c1 */
    pami_result_t  adv_c0_in_c1;    /* c1's work, advanced from c0's */
    pami_result_t  adv_c1_in_c1;
    int            in_c0_seen_in_c1, in_c1_seen_in_c1;
} nest_t;

static pami_result_t inner_work(pami_context_t c, void *k)
{
    nest_t *s = k;
    s->adv_c0_in_c1 = pami_context_advance(s->c0, 1);
    s->adv_c1_in_c1 = pami_context_advance(c, 1);
    s->in_c0_seen_in_c1 = pami_protocol_in_handler(s->c0);
    s->in_c1_seen_in_c1 = pami_protocol_in_handler(c);
    s->inner_ran++;
    return PAMI_SUCCESS;
}

static pami_result_t outer_work(pami_context_t c, void *k)
{
    (void)c;
    nest_t *s = k;
    pami_context_post(s->c1, &s->inner_w, inner_work, s);
    /* Advancing another context from here is allowed. */
    pami_result_t rc = PAMI_EAGAIN;
    for (int i = 0; i < 1000 && s->inner_ran == 0; i++)
        rc = pami_context_advance(s->c1, 1);
    s->adv_c1_from_c0 = s->inner_ran ? PAMI_SUCCESS : rc;
    s->outer_ran++;
    return PAMI_SUCCESS;
}

static void nested_contexts(cf_env_t *e)
{
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    static nest_t s;
    s = (nest_t){.c0 = e->contexts[0], .c1 = e->contexts[1]};
    CF_OK(e, pami_context_post(s.c0, &s.outer_w, outer_work, &s));
    double end = cf_now() + 20;
    while (s.outer_ran == 0 && cf_now() < end)
        pami_context_wait(s.c0, 100);
    CF_CHECK(e, s.outer_ran == 1 && s.inner_ran == 1, "expected both posted "
             "items run, seen %zu and %zu", s.outer_ran, s.inner_ran);
    CF_CHECK(e, s.adv_c1_from_c0 == PAMI_SUCCESS, "expected a handler of one "
             "context to advance another, seen %s",
             cf_rc_name(s.adv_c1_from_c0));
    CF_CHECK(e, s.adv_c0_in_c1 == PAMI_IN_HANDLER &&
                    s.adv_c1_in_c1 == PAMI_IN_HANDLER,
             "expected PAMI_IN_HANDLER for both contexts inside the inner "
             "work (\"also from one of another context that such a handler "
             "advanced\"), seen %s and %s", cf_rc_name(s.adv_c0_in_c1),
             cf_rc_name(s.adv_c1_in_c1));
    CF_CHECK(e, s.in_c0_seen_in_c1 && s.in_c1_seen_in_c1,
             "expected pami_protocol_in_handler non-zero for both contexts "
             "there");
    CF_CHECK(e, !pami_protocol_in_handler(s.c0) &&
                    !pami_protocol_in_handler(s.c1),
             "expected in_handler 0 again outside");
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- env_async_progress ---- */

#define AP_ID 50

typedef struct {
    atomic_size_t got, posted;
} ap_t;

static void ap_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
    atomic_fetch_add(&((ap_t *)k)->got, 1);
}

static pami_result_t ap_work(pami_context_t c, void *k)
{
    (void)c;
    atomic_fetch_add(&((ap_t *)k)->posted, 1);
    return PAMI_SUCCESS;
}

/* Sleeps (never advances) until *v reaches want or the deadline. */
static int sleep_until(cf_env_t *e, atomic_size_t *v, size_t want,
                       const char *what)
{
    while (atomic_load(v) < want) {
        if (cf_now() > e->deadline) {
            CF_FAIL(e, "expected %s from the progress thread alone, seen "
                    "%zu of %zu", what, atomic_load(v), want);
            return -1;
        }
        usleep(2000);
    }
    return 0;
}

static void env_async_progress(cf_env_t *e)
{
    static ap_t s;
    atomic_store(&s.got, 0);
    atomic_store(&s.posted, 0);
    CF_OK(e, pami_context_lock(e->ctx));
    pami_result_t rc = pami_dispatch_set(e->ctx, AP_ID, ap_handler, &s, NULL);
    CF_OK(e, pami_context_unlock(e->ctx));
    CF_OK(e, rc);
    CF_OK(e, pami_dispatch_fence(e->client));
    /* Posted work runs without this thread's progress. */
    pami_work_t w;
    CF_OK(e, pami_context_post(e->ctx, &w, ap_work, &s));
    if (sleep_until(e, &s.posted, 1, "the posted work") != 0)
        return;
    uint64_t v = 1;
    for (int i = 0; i < 10; i++) {
        pami_send_immediate_t m = {.dest = cf_ep(e, (e->task + 1) % e->size),
                                   .dispatch = AP_ID, .header = &v,
                                   .header_len = sizeof(v)};
        CF_OK(e, pami_context_lock(e->ctx));
        rc = pami_send_immediate(e->ctx, &m);
        CF_OK(e, pami_context_unlock(e->ctx));
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected the send to succeed, seen "
                 "%s", cf_rc_name(rc));
    }
    /* The previous task's messages: handlers on the progress thread. */
    if (sleep_until(e, &s.got, 10, "the previous task's messages") != 0)
        return;
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- geometry_busy ---- */

typedef struct {
    size_t        n;
    pami_result_t rc;
    pami_work_t   w;
    pami_xfer_t   x;
    pami_result_t from_work;
    size_t        work_ran;
} gb_t;

static void gb_done(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    gb_t *s = k;
    s->rc = rc;
    s->n++;
}

static pami_result_t gb_work(pami_context_t c, void *k)
{
    gb_t *s = k;
    s->from_work = pami_collective(c, &s->x);
    s->work_ran++;
    return PAMI_SUCCESS;
}

static void geometry_busy(cf_env_t *e)
{
    pami_geometry_t world, g = NULL;
    CF_OK(e, pami_geometry_world(e->ctx, &world));
    pami_geometry_range_t all = {0, (pami_task_t)(e->size - 1)};
    pami_geometry_params_t gp = {
        .field_mask = PAMI_GEOMETRY_PARAM_CONNID_THRESHOLD,
        .connid_threshold = 1};
    CF_OK(e, pami_geometry_create_taskrange(e->ctx, world, 21, &all, 1, &gp,
                                            &g, NULL, NULL));
    CF_OK(e, pami_geometry_wait_ready(e->ctx, g));
    static gb_t s;
    s = (gb_t){.x = {.kind = PAMI_XFER_BARRIER, .geometry = g,
                     .done_fn = gb_done, .cookie = &s}};
    int token = 0, tokens[1024];
    if (e->task == 0) {
        /* The others have not started: this barrier is in flight. */
        CF_OK(e, pami_collective(e->ctx, &s.x));
        pami_geometry_t keep = g;
        if (e->size > 1) {
            CF_RC(e, PAMI_EAGAIN, pami_geometry_destroy(&g));
            CF_CHECK(e, g == keep, "expected a refused destroy to leave the "
                     "handle");
        }
        /* Threshold 1, one in flight: from posted work the next call
         * cannot wait and takes nothing. */
        CF_OK(e, pami_context_post(e->ctx, &s.w, gb_work, &s));
        while (s.work_ran == 0 && cf_now() < e->deadline)
            pami_context_wait(e->ctx, 100);
        if (e->size > 1)
            CF_CHECK(e, s.from_work == PAMI_EAGAIN, "expected PAMI_EAGAIN "
                     "from a callback that would wait for a ConnID, seen %s",
                     cf_rc_name(s.from_work));
    }
    /* Now the others start (the runner's exchange does not progress). */
    CF_CHECK(e, e->size <= 1024 &&
                    cf_allgather(&token, tokens, sizeof(token)) == 0,
             "expected the runner's exchange to work");
    if (e->task != 0)
        CF_OK(e, pami_collective(e->ctx, &s.x));
    while (s.n < 1 && cf_now() < e->deadline)
        pami_context_wait(e->ctx, 100);
    CF_CHECK(e, s.n == 1 && s.rc == PAMI_SUCCESS, "expected the barrier's "
             "done_fn once with PAMI_SUCCESS, seen %zu (%s)", s.n,
             cf_rc_name(s.rc));
    /* The refused call was not counted: one more barrier matches. */
    s.n = 0;
    CF_OK(e, pami_collective_wait(e->ctx, &s.x));
    CF_OK(e, pami_geometry_destroy(&g));
    CF_CHECK(e, g == NULL, "expected destroy to set the handle NULL");
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_threads_cases[] = {
    {"core", "nested_contexts", 1, 0, CF_OWN_CONTEXTS, nested_contexts,
     NULL},
    {"core", "env_async_progress", 1, 0, 0, env_async_progress,
     "PAMI_ASYNC_PROGRESS=1"},
};
const size_t cf_num_threads_cases =
    sizeof(cf_threads_cases) / sizeof(cf_threads_cases[0]);

/* ---- coll_in_handler: blocking collective calls from posted work ---- */

typedef struct {
    pami_geometry_t world, g;
    pami_result_t   wait_rc, barrier_rc, ready_rc;
    size_t          ran;
    pami_work_t     w;
} cih_t;

static pami_result_t cih_work(pami_context_t c, void *k)
{
    cih_t *s = k;
    pami_xfer_t x = {.kind = PAMI_XFER_BARRIER, .geometry = s->world};
    s->wait_rc = pami_collective_wait(c, &x);
    s->barrier_rc = pami_geometry_barrier(c, s->world);
    s->ready_rc = s->g ? pami_geometry_wait_ready(c, s->g) : PAMI_IN_HANDLER;
    s->ran++;
    return PAMI_SUCCESS;
}

static void coll_in_handler(cf_env_t *e)
{
    static cih_t s;
    s = (cih_t){0};
    CF_OK(e, pami_geometry_world(e->ctx, &s.world));
    pami_geometry_range_t all = {0, (pami_task_t)(e->size - 1)};
    if (e->task == 0 && e->size > 1)
        /* The others create theirs after the exchange below. */
        CF_OK(e, pami_geometry_create_taskrange(e->ctx, s.world, 23, &all,
                                                1, NULL, &s.g, NULL, NULL));
    CF_OK(e, pami_context_post(e->ctx, &s.w, cih_work, &s));
    while (s.ran == 0 && cf_now() < e->deadline)
        pami_context_wait(e->ctx, 100);
    CF_CHECK(e, s.wait_rc == PAMI_IN_HANDLER &&
                    s.barrier_rc == PAMI_IN_HANDLER &&
                    s.ready_rc == PAMI_IN_HANDLER,
             "expected PAMI_IN_HANDLER from posted work for "
             "pami_collective_wait, pami_geometry_barrier and "
             "pami_geometry_wait_ready of a creation not complete; seen %s, "
             "%s, %s", cf_rc_name(s.wait_rc), cf_rc_name(s.barrier_rc),
             cf_rc_name(s.ready_rc));
    int token = 0, tokens[1024];
    CF_CHECK(e, e->size <= 1024 &&
                    cf_allgather(&token, tokens, sizeof(token)) == 0,
             "expected the runner's exchange to work");
    if (e->task != 0 || e->size == 1)
        CF_OK(e, pami_geometry_create_taskrange(e->ctx, s.world, 23, &all,
                                                1, NULL, &s.g, NULL, NULL));
    CF_OK(e, pami_geometry_wait_ready(e->ctx, s.g));
    /* Nothing was started: the next barriers match on every task. */
    CF_OK(e, pami_geometry_barrier(e->ctx, s.world));
    CF_OK(e, pami_geometry_barrier(e->ctx, s.g));
    CF_OK(e, pami_geometry_destroy(&s.g));
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_threads_coll_cases[] = {
    {"coll", "geometry_busy", 1, 1024, 0, geometry_busy, NULL},
    {"coll", "coll_in_handler", 1, 1024, 0, coll_in_handler, NULL},
};
const size_t cf_num_threads_coll_cases =
    sizeof(cf_threads_coll_cases) / sizeof(cf_threads_coll_cases[0]);

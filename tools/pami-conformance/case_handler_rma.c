/*
 * rma_first_from_handler: api.md, pami_put/pami_get/pami_rmw and
 * pami_fence_endpoint: PAMI_EAGAIN when the operation needs a UCX
 * endpoint to dest that this context has not made yet and the call comes
 * from inside UCX's progress (a handler of a message UCX delivered: here
 * with PAMI_SHM_FASTPATH=0); nothing is queued, retry from outside.
 * pami_fence_endpoint always needs it; put, get and rmw only by UCX RMA.
 * A handler of the task's own message is not inside UCX's progress.
 * Context 0 of each task aims at context 1 of the next task.
 */
#include "cf.h"

#include <string.h>

#define HR_ID 9

typedef struct {
    cf_env_t        *e;
    pami_endpoint_t  dest;
    pami_memregion_t remote;
    uint64_t         word, got, old;
    pami_result_t    put, get, rmw, fence;
    cf_count_t       done;
    size_t           ran;
    int              fence_only;  /* the self message's turn */
    pami_endpoint_t  self1;       /* this task's context 1 */
    pami_result_t    self_fence;
    pami_result_t    rmw0;        /* the first handler's rmw */
} hr_t;

static hr_t hr;

static void hr_handler(pami_context_t ctx, void *cookie, const void *h,
                       size_t hs, const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)h, (void)hs, (void)d, (void)ds, (void)o, (void)r;
    hr_t *s = cookie;
    if (s->fence_only) {
        s->self_fence = pami_fence_endpoint(ctx, s->self1, cf_count_fn,
                                            &s->done);
        s->fence_only = 0;
        s->ran++;
        return;
    }
    pami_rma_t p = {.dest = s->dest, .local = &s->word, .bytes = 8,
                    .remote_mr = &s->remote, .remote_offset = 0,
                    .remote_fn = cf_count_fn, .cookie = &s->done};
    s->put = pami_put(ctx, &p);
    pami_rma_t g = {.dest = s->dest, .local = &s->got, .bytes = 8,
                    .remote_mr = &s->remote, .remote_offset = 0,
                    .local_fn = cf_count_fn, .cookie = &s->done};
    s->get = pami_get(ctx, &g);
    pami_rmw_t m = {.dest = s->dest, .remote_mr = &s->remote,
                    .remote_offset = 8, .op = PAMI_RMW_FETCH_ADD, .size = 8,
                    .value = 1, .result = &s->old, .done_fn = cf_count_fn,
                    .cookie = &s->done};
    s->rmw = pami_rmw(ctx, &m);
    s->fence = pami_fence_endpoint(ctx, s->dest, cf_count_fn, &s->done);
    s->ran++;
}

/* Progress both contexts until *n reaches want. */
static int both_until(cf_env_t *e, volatile size_t *n, size_t want,
                      const char *what)
{
    while (*n < want) {
        if (cf_now() > e->deadline) {
            CF_FAIL(e, "expected %s before the deadline", what);
            return -1;
        }
        pami_context_advance(e->contexts[0], 1);
        pami_context_advance(e->contexts[1], 1);
    }
    return 0;
}

/* One message to ep's handler, from context ctx. */
static void message(cf_env_t *e, pami_context_t ctx, pami_endpoint_t ep)
{
    pami_send_immediate_t m = {.dest = ep, .dispatch = HR_ID};
    pami_result_t rc;
    while ((rc = pami_send_immediate(ctx, &m)) == PAMI_EAGAIN)
        pami_context_advance(ctx, 1);
    if (rc != PAMI_SUCCESS)
        CF_FAIL(e, "expected the send to succeed, seen %s", cf_rc_name(rc));
}

static void rma_first_from_handler(cf_env_t *e)
{
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    pami_context_t c0 = e->contexts[0], c1 = e->contexts[1];
    static uint64_t window[2];
    memset(window, 0, sizeof(window));
    pami_memregion_t mine;
    CF_OK(e, pami_memregion_create(c1, window, sizeof(window), &mine));
    static pami_memregion_t all[256];
    CF_CHECK(e, e->size <= 256, "expected at most 256 tasks");
    CF_CHECK(e, cf_allgather(&mine, all, sizeof(mine)) == 0,
             "expected the runner's exchange");
    pami_task_t next = (pami_task_t)((e->task + 1) % e->size);
    hr = (hr_t){.e = e, .word = 0x1100 + e->task};
    hr.remote = all[next];
    CF_OK(e, pami_endpoint_create(e->client, next, 1, &hr.dest));
    pami_endpoint_t me0, next0;
    CF_OK(e, pami_endpoint_create(e->client, e->task, 0, &me0));
    CF_OK(e, pami_endpoint_create(e->client, next, 0, &next0));
    CF_OK(e, pami_endpoint_create(e->client, e->task, 1, &hr.self1));
    CF_OK(e, pami_dispatch_set(c0, HR_ID, hr_handler, &hr, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));

    /* A handler of the task's own message does not run inside UCX's
     * progress: toward its own context 1, never talked to, the fence
     * starts. */
    hr.fence_only = 1;
    message(e, c0, me0);
    if (both_until(e, &hr.ran, 1, "the handler of the own message") != 0 ||
        both_until(e, &hr.done.n, 1, "its fence's fn") != 0)
        return;
    CF_CHECK(e, hr.self_fence == PAMI_SUCCESS && hr.done.bad == 0,
             "expected pami_fence_endpoint from the handler of the task's "
             "own message to start (not inside UCX's progress), seen %s",
             cf_rc_name(hr.self_fence));
    CF_OK(e, pami_dispatch_fence(e->client));
    /* The previous task's message comes by UCX (PAMI_SHM_FASTPATH=0), so
     * its handler runs inside UCX's progress. */
    message(e, c0, next0);
    if (both_until(e, &hr.ran, 2, "the handler") != 0)
        return;
    /* pami_fence_endpoint needs the endpoint: refused. put, get and rmw
     * need it only by UCX RMA (RDMA to another node); CMA and the owner's
     * messages queue instead. Each is started or refused, nothing else. */
    CF_CHECK(e, hr.fence == PAMI_EAGAIN, "expected pami_fence_endpoint "
             "PAMI_EAGAIN from a handler inside UCX's progress toward a "
             "context never talked to, seen %s", cf_rc_name(hr.fence));
    size_t started = 0;
    pami_result_t three[3] = {hr.put, hr.get, hr.rmw};
    for (int i = 0; i < 3; i++) {
        CF_CHECK(e, three[i] == PAMI_SUCCESS || three[i] == PAMI_EAGAIN,
                 "expected put, get and rmw from that handler to start or "
                 "give PAMI_EAGAIN, seen %s, %s, %s", cf_rc_name(hr.put),
                 cf_rc_name(hr.get), cf_rc_name(hr.rmw));
        started += three[i] == PAMI_SUCCESS;
    }
    if (both_until(e, &hr.done.n, 1 + started, "the started ones' "
                   "callbacks") != 0)
        return;
    hr.rmw0 = hr.rmw;
    /* From outside the handler the same put starts; then a handler can
     * reach that context. */
    pami_rma_t p = {.dest = hr.dest, .local = &hr.word, .bytes = 8,
                    .remote_mr = &hr.remote, .remote_fn = cf_count_fn,
                    .cookie = &hr.done};
    CF_OK(e, pami_put(c0, &p));
    if (both_until(e, &hr.done.n, 2 + started, "the put's remote_fn") != 0)
        return;
    CF_OK(e, pami_dispatch_fence(e->client));
    message(e, c0, next0);
    if (both_until(e, &hr.ran, 3, "the handler again") != 0)
        return;
    CF_CHECK(e, hr.put == PAMI_SUCCESS && hr.get == PAMI_SUCCESS &&
                    hr.rmw == PAMI_SUCCESS && hr.fence == PAMI_SUCCESS,
             "expected the handler's operations to start once the context "
             "talked to the target, seen put %s, get %s, rmw %s, fence %s",
             cf_rc_name(hr.put), cf_rc_name(hr.get), cf_rc_name(hr.rmw),
             cf_rc_name(hr.fence));
    /* Nothing was queued by the refused calls. */
    size_t want = 2 + started + 4;
    if (both_until(e, &hr.done.n, want, "the handler's callbacks") != 0)
        return;
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_CHECK(e, hr.done.n == want && hr.done.bad == 0, "expected %zu "
             "callbacks with PAMI_SUCCESS (none for the refused calls), seen "
             "%zu, %zu failed (%s)", want, hr.done.n, hr.done.bad,
             cf_rc_name(hr.done.rc));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t prev = (pami_task_t)((e->task + e->size - 1) % e->size);
    CF_CHECK(e, window[0] == 0x1100 + prev && window[1] ==
                                                  1 + (hr.rmw0 == PAMI_SUCCESS),
             "expected the previous task's word and its fetch-adds, seen "
             "%#llx and %llu", (unsigned long long)window[0],
             (unsigned long long)window[1]);
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(c1, &mine));
}

const cf_case_t cf_handler_rma_cases[] = {
    {"rma", "rma_first_from_handler", 2, 0, CF_OWN_CONTEXTS,
     rma_first_from_handler, "PAMI_SHM_FASTPATH=0"},
};
const size_t cf_num_handler_rma_cases =
    sizeof(cf_handler_rma_cases) / sizeof(cf_handler_rma_cases[0]);

/*
 * Suite core: what holds per context (dispatch is local to one context,
 * endpoints name the context, regions name their owner context), sends
 * to the own endpoint, when a large send's callbacks run, progress
 * results, and what a task's death does to new calls toward it. Each case
 * names the sentences it checks in docs/conformance.md.
 */
#include "cf.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    cf_env_t      *e;
    size_t         got;
    pami_context_t seen_ctx;
    pami_endpoint_t origin;
    size_t         local, remote;
    pami_result_t  remote_rc;
} mc_t;

static void mc_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)h; (void)hs; (void)d; (void)ds; (void)r;
    mc_t *s = k;
    s->seen_ctx = c;
    s->origin = o;
    s->got++;
}

static void mc_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    mc_t *s = k;
    s->remote_rc = rc;
    s->remote++;
}

/* Waits on both contexts in turn (each wait blocks a little). */
static int wait2(cf_env_t *e, volatile size_t *count, size_t want,
                 const char *what)
{
    while (*count < want) {
        if (cf_now() > e->deadline) {
            CF_FAIL(e, "expected %zu %s before the deadline, seen %zu", want,
                    what, *count);
            return -1;
        }
        pami_context_wait(e->contexts[0], 5);
        pami_context_wait(e->contexts[1], 5);
    }
    return 0;
}

/* ---- contexts_apart ---- */

#define MC_ID 5

static void contexts_apart(cf_env_t *e)
{
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    static mc_t on1, on0; /* a peer's message may outlive a failure */
    on1 = (mc_t){.e = e};
    on0 = (mc_t){.e = e};
    /* Registered on context 1 only; context 0's handler for another id
     * catches what must not reach it. */
    CF_OK(e, pami_dispatch_set(e->contexts[1], MC_ID, mc_handler, &on1,
                               NULL));
    CF_OK(e, pami_dispatch_set(e->contexts[0], MC_ID + 1, mc_handler, &on0,
                               NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t to1, to0, me0, me1;
    CF_OK(e, pami_endpoint_create(e->client, to, 1, &to1));
    CF_OK(e, pami_endpoint_create(e->client, to, 0, &to0));
    CF_OK(e, pami_endpoint_create(e->client, e->task, 0, &me0));
    CF_OK(e, pami_endpoint_create(e->client, e->task, 1, &me1));
    static mc_t cb;
    cb = (mc_t){.e = e};
    uint64_t h = 42;
    pami_send_t m = {.send = {.dest = to1, .dispatch = MC_ID, .header = &h,
                              .header_len = sizeof(h)},
                     .remote_fn = mc_remote, .cookie = &cb};
    CF_OK(e, pami_send(e->contexts[0], &m));
    if (wait2(e, &on1.got, 1, "the message to context 1") != 0)
        return;
    CF_CHECK(e, on1.seen_ctx == e->contexts[1], "expected the handler to "
             "run on context 1, the one the endpoint names");
    pami_task_t ot;
    size_t oo;
    pami_task_t from = (pami_task_t)((e->task + e->size - 1) % e->size);
    CF_OK(e, pami_endpoint_query(on1.origin, &ot, &oo));
    CF_CHECK(e, ot == from && oo == 0, "expected origin (%u, 0), seen (%u, "
             "%zu)", from, ot, oo);
    if (wait2(e, &cb.remote, 1, "remote_fn of the send to context 1") != 0)
        return;
    CF_CHECK(e, cb.remote_rc == PAMI_SUCCESS, "expected PAMI_SUCCESS, seen "
             "%s", cf_rc_name(cb.remote_rc));
    /* The same id at context 0, where it is not registered. */
    m.send.dest = to0;
    CF_OK(e, pami_send(e->contexts[0], &m));
    if (wait2(e, &cb.remote, 2, "remote_fn of the send to context 0") != 0)
        return;
    CF_CHECK(e, cb.remote_rc == PAMI_NOT_FOUND, "expected PAMI_NOT_FOUND: "
             "registration is local to one context, seen %s",
             cf_rc_name(cb.remote_rc));
    /* From context 1: the origin names context 1. */
    m.send.dest = to1;
    CF_OK(e, pami_send(e->contexts[1], &m));
    if (wait2(e, &on1.got, 2, "the message from context 1") != 0)
        return;
    CF_OK(e, pami_endpoint_query(on1.origin, &ot, &oo));
    CF_CHECK(e, ot == from && oo == 1, "expected origin (%u, 1), seen (%u, "
             "%zu)", from, ot, oo);
    if (wait2(e, &cb.remote, 3, "the third remote_fn") != 0)
        return;
    CF_CHECK(e, on0.got == 0, "expected nothing on context 0's handler");
    /* A region names its context; another context cannot destroy it. */
    static uint8_t buf[256];
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->contexts[1], buf, sizeof(buf), &mr));
    pami_endpoint_t owner;
    CF_OK(e, pami_memregion_query(&mr, NULL, NULL, &owner));
    CF_CHECK(e, owner == me1, "expected the owner endpoint (%u, 1)",
             e->task);
    pami_memregion_t copy = mr;
    CF_RC(e, PAMI_INVAL, pami_memregion_destroy(e->contexts[0], &copy));
    /* The landing side refuses a region of another context. */
    CF_OK(e, pami_memregion_destroy(e->contexts[1], &mr));
    (void)me0;
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- self_no_recursion ---- */

#define SR_ID  13
#define SR_MAX 30

typedef struct {
    cf_env_t *e;
    size_t    got;
    int       depth, max_depth;
    pami_result_t resend_rc;
} sr_t;

static void sr_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)h; (void)hs; (void)d; (void)ds; (void)r;
    sr_t *s = k;
    if (++s->depth > s->max_depth)
        s->max_depth = s->depth;
    s->got++;
    if (s->got < SR_MAX) {
        /* The origin is this very endpoint: send to it again. */
        pami_send_immediate_t m = {.dest = o, .dispatch = SR_ID,
                                   .header = &s->got,
                                   .header_len = sizeof(s->got)};
        pami_result_t rc = pami_send_immediate(c, &m);
        if (rc != PAMI_SUCCESS)
            s->resend_rc = rc;
    }
    s->depth--;
}

static void self_no_recursion(cf_env_t *e)
{
    sr_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, SR_ID, sr_handler, &s, NULL));
    pami_send_immediate_t m = {.dest = cf_ep(e, e->task), .dispatch = SR_ID,
                               .header = &s.got, .header_len = 8};
    CF_OK(e, cf_send_immediate(e, &m));
    CF_CHECK(e, s.got == 0, "expected no handler inside the send");
    /* With a self message queued, wait must not sleep (a wait that slept
     * forever would time the case out). */
    pami_result_t rc = pami_context_wait(e->ctx, -1);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected wait PAMI_SUCCESS with a self "
             "message queued, seen %s", cf_rc_name(rc));
    /* "each progress call delivers only the messages queued before it":
     * one handler per advance here. */
    size_t calls = 0;
    while (s.got < SR_MAX && cf_now() < e->deadline) {
        size_t before = s.got;
        pami_context_advance(e->ctx, 1);
        calls++;
        CF_CHECK(e, s.got - before <= 1, "expected at most one self message "
                 "per advance, seen %zu", s.got - before);
    }
    CF_CHECK(e, s.got == SR_MAX, "expected %d self messages, seen %zu",
             SR_MAX, s.got);
    CF_CHECK(e, s.max_depth == 1, "expected no recursion into the handler, "
             "seen depth %d", s.max_depth);
    CF_CHECK(e, s.resend_rc == PAMI_SUCCESS, "expected the handler's sends "
             "to succeed, seen %s", cf_rc_name(s.resend_rc));
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- large_callbacks_together ---- */

#define LC_ID 14

typedef struct {
    size_t progress_calls;
    size_t local_at, remote_at, local, remote;
    size_t landed;
    uint8_t *land;
} lc_t;

static lc_t *lc_state;

static void lc_local(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k; (void)rc;
    lc_state->local_at = lc_state->progress_calls;
    lc_state->local++;
}

static void lc_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k; (void)rc;
    lc_state->remote_at = lc_state->progress_calls;
    lc_state->remote++;
}

static void lc_landed(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k; (void)rc;
    lc_state->landed++;
}

static void lc_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c; (void)k; (void)h; (void)hs; (void)d; (void)o;
    if (r != NULL) {
        r->addr = lc_state->land;
        r->local_fn = lc_landed;
    } else {
        lc_state->landed += ds > 0;
    }
}

static void large_callbacks_together(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    size_t len = a.rndv_threshold + 4096;
    static lc_t s; /* a peer's payload may outlive a failure */
    s = (lc_t){.land = malloc(len)};
    lc_state = &s;
    uint8_t *src = malloc(len);
    CF_CHECK(e, s.land && src, "expected memory");
    memset(src, 7, len);
    CF_OK(e, pami_dispatch_set(e->ctx, LC_ID, lc_handler, NULL, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    uint32_t h = 1;
    pami_send_t m = {.send = {.dest = cf_ep(e, to), .dispatch = LC_ID,
                              .header = &h, .header_len = sizeof(h),
                              .data = src, .data_len = len},
                     .local_fn = lc_local, .remote_fn = lc_remote};
    for (int round = 0; round < 3; round++) {
        CF_OK(e, pami_send(e->ctx, &m));
        while ((s.remote <= (size_t)round || s.landed <= (size_t)round) &&
               cf_now() < e->deadline) {
            s.progress_calls++;
            pami_context_wait(e->ctx, 100);
        }
        CF_CHECK(e, s.local == (size_t)round + 1 &&
                        s.remote == (size_t)round + 1,
                 "expected local_fn and remote_fn once per send, seen %zu "
                 "and %zu", s.local, s.remote);
        CF_CHECK(e, s.local_at == s.remote_at, "expected a large send's "
                 "local_fn and remote_fn from the same progress call, seen "
                 "calls %zu and %zu", s.local_at, s.remote_at);
    }
    CF_OK(e, pami_dispatch_fence(e->client));
    free(src);
    free(s.land);
}

/* ---- progress_results (one task: nothing else can happen) ---- */

static void progress_results(cf_env_t *e)
{
    if (e->size != 1)
        return;
    pami_result_t rc = pami_context_advance(e->ctx, 0);
    CF_CHECK(e, rc == PAMI_EAGAIN || rc == PAMI_SUCCESS, "expected advance "
             "with max 0 (counted as 1) to poll, seen %s", cf_rc_name(rc));
    /* Settle whatever the context's start left. */
    for (int i = 0; i < 100; i++)
        pami_context_advance(e->ctx, 10);
    CF_RC(e, PAMI_EAGAIN, pami_context_advance(e->ctx, 10));
    CF_RC(e, PAMI_TIMEOUT, pami_context_wait(e->ctx, 0));
    double t0 = cf_now();
    CF_RC(e, PAMI_TIMEOUT, pami_context_wait(e->ctx, 50));
    CF_CHECK(e, cf_now() - t0 >= 0.045, "expected wait to last its 50 ms "
             "timeout, seen %.3f s", cf_now() - t0);
}

/* ---- dead_peer_calls ---- */

#define DP_ID 15

static void dp_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c; (void)k; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
}

static void dead_peer_calls(cf_env_t *e)
{
    pami_task_t victim = (pami_task_t)(e->size - 1);
    /* Memory stays for the life of the process: guide.md, "Keep exposed
     * memory after a death". */
    static uint64_t cell[8] __attribute__((aligned(64)));
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, cell, sizeof(cell), &mr));
    pami_memregion_t *all = calloc(e->size, sizeof(*all));
    CF_CHECK(e, all && cf_allgather(&mr, all, sizeof(mr)) == 0,
             "expected the runner's exchange to work");
    CF_OK(e, pami_dispatch_set(e->ctx, DP_ID, dp_handler, NULL, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    if (e->task == victim) {
        cf_report_now(e);
        _exit(0);
    }
    e->no_destroy = 1;
    pami_context_stats_t s0, s1;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    /* The fence finds the death (the probe of this node's tasks, or the
     * monitors); from then on the task is known dead. */
    CF_RC(e, PAMI_PEER_FAILED, pami_dispatch_fence(e->client));
    CF_RC(e, PAMI_PEER_FAILED, pami_dispatch_fence(e->client));
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.peer_failures > s0.peer_failures ||
                    s0.peer_failures > 0,
             "expected peer_failures to count the dead task");
    pami_endpoint_t ep = cf_ep(e, victim);
    uint64_t v = 1, old;
    pami_send_immediate_t si = {.dest = ep, .dispatch = DP_ID, .header = &v,
                                .header_len = sizeof(v)};
    CF_RC(e, PAMI_PEER_FAILED, pami_send_immediate(e->ctx, &si));
    pami_send_t sd = {.send = si};
    CF_RC(e, PAMI_PEER_FAILED, pami_send(e->ctx, &sd));
    pami_rma_t p = {.dest = ep, .local = &v, .bytes = sizeof(v),
                    .remote_mr = &all[victim]};
    CF_RC(e, PAMI_PEER_FAILED, pami_put(e->ctx, &p));
    CF_RC(e, PAMI_PEER_FAILED, pami_get(e->ctx, &p));
    pami_rmw_t r = {.dest = ep, .remote_mr = &all[victim],
                    .op = PAMI_RMW_FETCH_ADD, .size = 8, .value = 1,
                    .result = &old};
    CF_RC(e, PAMI_PEER_FAILED, pami_rmw(e->ctx, &r));
    CF_RC(e, PAMI_PEER_FAILED, pami_fence_endpoint(e->ctx, ep, NULL, NULL));
    free(all);
}

/* ---- env_wait_spin: PAMI_WAIT_SPIN=0, one task ---- */

static void env_wait_spin(cf_env_t *e)
{
    for (int i = 0; i < 100; i++)
        pami_context_advance(e->ctx, 10);
    pami_context_stats_t s0, s1, s2;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    /* "`0` polls `PAMI_WAIT_SPIN + 1` times and returns": no sleep. */
    CF_RC(e, PAMI_TIMEOUT, pami_context_wait(e->ctx, 0));
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.sleeps == s0.sleeps, "expected no sleep for a timeout of "
             "0, seen %llu", (unsigned long long)(s1.sleeps - s0.sleeps));
    /* "`0` sleeps almost at once": the wait sleeps on its event fd (a
     * task kept off its core for the whole 30 ms may not get to; so
     * several tries, each of which must time out). */
    s2 = s1;
    for (int i = 0; i < 20 && s2.sleeps == s1.sleeps; i++) {
        CF_RC(e, PAMI_TIMEOUT, pami_context_wait(e->ctx, 30));
        CF_OK(e, pami_context_stats(e->ctx, &s2));
    }
    CF_CHECK(e, s2.sleeps > s1.sleeps, "expected a 30 ms wait to sleep "
             "(counted in sleeps), seen none in 20");
}

const cf_case_t cf_contexts_cases[] = {
    {"core", "contexts_apart", 1, 0, CF_OWN_CONTEXTS, contexts_apart, NULL},
    {"core", "self_no_recursion", 1, 0, 0, self_no_recursion, NULL},
    {"core", "large_callbacks_together", 1, 0, 0, large_callbacks_together,
     NULL},
    {"core", "progress_results", 1, 1, 0, progress_results, NULL},
    {"core", "env_wait_spin", 1, 1, 0, env_wait_spin, "PAMI_WAIT_SPIN=0"},
    {"core", "dead_peer_calls", 2, 0, 0, dead_peer_calls, NULL},
};
const size_t cf_num_contexts_cases =
    sizeof(cf_contexts_cases) / sizeof(cf_contexts_cases[0]);

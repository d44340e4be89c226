/*
 * dispatch_replace: api.md, pami_dispatch_set "Registers fn for id on
 * this context, replacing any previous handler; fn == NULL clears it",
 * also from inside the handler of that id.
 */
#include "cf.h"

#include <string.h>

#define REPLACE_ID 7

typedef struct {
    size_t        n;
    void         *cookie_seen; /* the cookie the handler got last */
    int           clear;       /* clear REPLACE_ID from the first call */
    pami_result_t clear_rc;
} hits_t;

static void on_msg(pami_context_t ctx, void *cookie, const void *h,
                   size_t hs, const void *d, size_t ds, pami_endpoint_t o,
                   pami_recv_t *r)
{
    (void)h, (void)hs, (void)d, (void)ds, (void)o, (void)r;
    hits_t *t = cookie;
    t->cookie_seen = cookie;
    if (t->n++ == 0 && t->clear)
        t->clear_rc = pami_dispatch_set(ctx, REPLACE_ID, NULL, NULL, NULL);
}

/* A second function, so that a call through the old one shows. */
static void on_msg_b(pami_context_t ctx, void *cookie, const void *h,
                     size_t hs, const void *d, size_t ds, pami_endpoint_t o,
                     pami_recv_t *r)
{
    on_msg(ctx, cookie, h, hs, d, ds, o, r);
}

static void dispatch_replace(cf_env_t *e)
{
    hits_t a = {0}, b = {.clear = 1, .clear_rc = PAMI_ERROR};
    pami_endpoint_t next = cf_ep(e, (pami_task_t)((e->task + 1) % e->size));
    uint8_t byte = 1;

    CF_OK(e, pami_dispatch_set(e->ctx, REPLACE_ID, on_msg, &a, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_send_immediate_t m = {.dest = next, .dispatch = REPLACE_ID,
                               .data = &byte, .data_len = 1};
    CF_OK(e, cf_send_immediate(e, &m));
    if (cf_wait_count(e, &a.n, 1, "the first handler") != 0)
        return;

    /* Replaced: the same id, another function and cookie. Read the
     * counters before the fence: the previous task sends once it left. */
    pami_context_stats_t s0, s1;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    CF_OK(e, pami_dispatch_set(e->ctx, REPLACE_ID, on_msg_b, &b, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    /* Two sends back to back: the target's new handler clears the id
     * while it runs for the first, so the second finds no handler
     * ("handlers run in the order the sends were called"). */
    cf_count_t r1 = {0}, r2 = {0};
    pami_send_t s = {.send = {.dest = next, .dispatch = REPLACE_ID,
                              .data = &byte, .data_len = 1},
                     .remote_fn = cf_count_fn, .cookie = &r1};
    CF_OK(e, pami_send(e->ctx, &s));
    s.cookie = &r2;
    CF_OK(e, pami_send(e->ctx, &s));
    if (cf_wait_count(e, &r1.n, 1, "remote_fn of the first send") != 0 ||
        cf_wait_count(e, &r2.n, 1, "remote_fn of the second send") != 0 ||
        cf_wait_count(e, &b.n, 1, "the replacing handler") != 0)
        return;
    CF_CHECK(e, r1.bad == 0, "expected remote_fn PAMI_SUCCESS for the send "
             "the replacing handler took, seen %s", cf_rc_name(r1.rc));
    CF_CHECK(e, r2.bad == 1 && r2.rc == PAMI_NOT_FOUND, "expected remote_fn "
             "PAMI_NOT_FOUND for the send after its handler cleared the id "
             "(\"fn == NULL clears it\"), seen %s", cf_rc_name(r2.rc));
    CF_CHECK(e, b.clear_rc == PAMI_SUCCESS, "expected pami_dispatch_set "
             "from inside the handler of that id to succeed, seen %s",
             cf_rc_name(b.clear_rc));
    CF_CHECK(e, a.n == 1 && b.n == 1 && a.cookie_seen == &a &&
                    b.cookie_seen == &b,
             "expected the old handler once and the new one once, each with "
             "its own cookie (\"replacing any previous handler\"), seen %zu "
             "and %zu", a.n, b.n);
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.dropped_unknown - s0.dropped_unknown == 1,
             "expected dropped_unknown to rise by the one message after the "
             "clear, seen %llu", (unsigned long long)(s1.dropped_unknown -
                                                     s0.dropped_unknown));
}

const cf_case_t cf_dispatch_cases[] = {
    {"core", "dispatch_replace", 1, 0, 0, dispatch_replace, NULL},
};
const size_t cf_num_dispatch_cases =
    sizeof(cf_dispatch_cases) / sizeof(cf_dispatch_cases[0]);

/*
 * The configuration cases: each sets variables of docs/config.md before
 * its client is created (cf_case_t.env) and checks what the page says
 * they do, through the public API only; and the lifetime rules of shared
 * regions and landing regions. Each case names the sentences it checks
 * in docs/conformance.md.
 */
#include "cf.h"

#include <stdlib.h>
#include <string.h>

static pami_memregion_t *gather(cf_env_t *e, const void *v, size_t len)
{
    pami_memregion_t *all = calloc(e->size, len);
    if (all == NULL || cf_allgather(v, all, len) != 0) {
        CF_FAIL(e, "expected the runner's exchange to work");
        free(all);
        return NULL;
    }
    return all;
}

/* ---- large sends landing in a buffer, data checked ---- */

#define LS_ID 40

typedef struct {
    cf_env_t *e;
    uint8_t  *land;
    size_t    handled, landed, data_null, data_here, empty;
    size_t    rounds; /* payloads sent to each task so far */
} ls_t;

static void ls_landed(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    ls_t *s = k;
    if (rc != PAMI_SUCCESS)
        CF_FAIL(s->e, "expected recv->local_fn PAMI_SUCCESS, seen %s",
                cf_rc_name(rc));
    s->landed++;
}

static void ls_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)o;
    ls_t *s = k;
    s->handled++;
    if (ds == 0) {
        s->empty += r == NULL;
        return;
    }
    if (r != NULL) {
        s->data_null += d == NULL;
        r->addr = s->land;
        r->local_fn = ls_landed;
        r->cookie = s;
    } else {
        s->data_here++;
        memcpy(s->land, d, ds);
        s->landed++;
    }
}

/* One send of len bytes to the next task, landed and checked there. */
static void send_checked(cf_env_t *e, ls_t *s, uint8_t *src, size_t len,
                         uint64_t tag)
{
    /* Counted by round: the previous task's payload may land while this
     * task is still in the fence before. */
    size_t want = ++s->rounds;
    cf_count_t d = {0};
    cf_fill(src, len, e->seed, e->task, tag);
    pami_send_t m = {.send = {.dest = cf_ep(e, (e->task + 1) % e->size),
                              .dispatch = LS_ID, .header = &tag,
                              .header_len = sizeof(tag), .data = src,
                              .data_len = len},
                     .local_fn = cf_count_fn, .remote_fn = cf_count_fn,
                     .cookie = &d};
    CF_OK(e, pami_send(e->ctx, &m));
    cf_wait_count(e, &d.n, 2, "local_fn and remote_fn");
    CF_CHECK(e, d.bad == 0, "expected PAMI_SUCCESS for %zu bytes, seen %s",
             len, cf_rc_name(d.rc));
    cf_wait_count(e, &s->landed, want, "the previous task's payload");
    pami_task_t from = (pami_task_t)((e->task + e->size - 1) % e->size);
    size_t bad = cf_verify(s->land, len, e->seed, from, tag);
    CF_CHECK(e, bad == len, "expected the %zu-byte payload intact, first "
             "difference at %zu", len, bad);
    /* The previous task's next payload lands in the same buffer. */
    CF_OK(e, pami_dispatch_fence(e->client));
}

static void env_rndv_zero(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.rndv_threshold == 0, "expected rndv_threshold 0, seen %zu",
             a.rndv_threshold);
    /* Static: a payload may still land after an early return. */
    static ls_t s;
    s = (ls_t){.e = e, .land = calloc(1, 4096)};
    uint8_t *src = malloc(4096);
    CF_OK(e, pami_dispatch_set(e->ctx, LS_ID, ls_handler, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    /* "0 sends every non-empty pami_send this way". */
    send_checked(e, &s, src, 1, 1);
    send_checked(e, &s, src, 4096, 2);
    CF_CHECK(e, s.data_null == 2 && s.data_here == 0, "expected both "
             "payloads left at the origin (data NULL), seen %zu of 2",
             s.data_null);
    /* An empty send has no payload to fetch. */
    cf_count_t d = {0};
    uint64_t tag = 3;
    pami_send_t m = {.send = {.dest = cf_ep(e, (e->task + 1) % e->size),
                              .dispatch = LS_ID, .header = &tag,
                              .header_len = sizeof(tag)},
                     .remote_fn = cf_count_fn, .cookie = &d};
    CF_OK(e, pami_send(e->ctx, &m));
    cf_wait_count(e, &s.empty, 1, "the empty message (recv NULL)");
    cf_wait_count(e, &d.n, 1, "its remote_fn");
    CF_OK(e, pami_dispatch_fence(e->client));
    free(src);
    free(s.land);
}

static void env_rndv_via_origin(cf_env_t *e)
{
    size_t max = (1u << 20) + 3;
    static ls_t s;
    s = (ls_t){.e = e, .land = calloc(1, max)};
    uint8_t *src = malloc(max);
    CF_CHECK(e, s.land && src, "expected memory");
    CF_OK(e, pami_dispatch_set(e->ctx, LS_ID, ls_handler, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    /* Around the 256 KiB that go with the request, and chunks after. */
    size_t sizes[] = {65536, (256u << 10) - 1, 256u << 10, (256u << 10) + 1,
                      max};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        send_checked(e, &s, src, sizes[i], 10 + i);
    CF_CHECK(e, s.data_null == 5, "expected every payload fetched, seen %zu",
             s.data_null);
    CF_OK(e, pami_dispatch_fence(e->client));
    free(src);
    free(s.land);
}

/* ---- puts and gets through another path, data checked ---- */

static void rma_round(cf_env_t *e, const size_t *sizes, size_t ns,
                      size_t win_len)
{
    uint8_t *win = calloc(1, win_len), *src = malloc(win_len),
            *back = malloc(win_len);
    CF_CHECK(e, win && src && back, "expected memory");
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, win, win_len, &mr));
    pami_memregion_t *all = gather(e, &mr, sizeof(mr));
    if (all == NULL)
        return;
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t ep = cf_ep(e, to);
    for (size_t i = 0; i < ns; i++) {
        size_t len = sizes[i], off = win_len - len;
        cf_fill(src, len, e->seed, e->task, 100 + i);
        cf_count_t d = {0};
        pami_rma_t p = {.dest = ep, .local = src, .bytes = len,
                        .remote_mr = &all[to], .remote_offset = off,
                        .local_fn = cf_count_fn, .remote_fn = cf_count_fn,
                        .cookie = &d};
        CF_OK(e, pami_put(e->ctx, &p));
        cf_wait_count(e, &d.n, 2, "the put's callbacks");
        memset(back, 0, len);
        p.local = back;
        p.remote_fn = NULL;
        CF_OK(e, pami_get(e->ctx, &p));
        cf_wait_count(e, &d.n, 3, "the get's local_fn");
        CF_CHECK(e, d.bad == 0, "expected PAMI_SUCCESS (%zu bytes), seen %s",
                 len, cf_rc_name(d.rc));
        size_t bad = cf_verify(back, len, e->seed, e->task, 100 + i);
        CF_CHECK(e, bad == len, "expected the %zu bytes put read back, first "
                 "difference at %zu", len, bad);
    }
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
    free(win);
    free(src);
    free(back);
}

static void env_rma_via_owner(cf_env_t *e)
{
    static const size_t sizes[] = {1, 8, 4096, 4097, 100000};
    rma_round(e, sizes, 5, 128 * 1024);
    /* Gathered small puts: many at once, one progress call sends them. */
    static uint64_t cells[64] __attribute__((aligned(64)));
    memset(cells, 0, sizeof(cells));
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, cells, sizeof(cells), &mr));
    pami_memregion_t *all = gather(e, &mr, sizeof(mr));
    if (all == NULL)
        return;
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t ep = cf_ep(e, to);
    cf_count_t d = {0};
    uint64_t vals[32];
    for (size_t i = 0; i < 32; i++) {
        vals[i] = e->seed + i;
        pami_rma_t p = {.dest = ep, .local = &vals[i], .bytes = 8,
                        .remote_mr = &all[to], .remote_offset = 8 * i,
                        .remote_fn = cf_count_fn, .cookie = &d};
        CF_OK(e, pami_put(e->ctx, &p));
    }
    uint64_t old = 0;
    pami_rmw_t r = {.dest = ep, .remote_mr = &all[to], .remote_offset = 256,
                    .op = PAMI_RMW_FETCH_ADD, .size = 8, .value = 5,
                    .result = &old, .done_fn = cf_count_fn, .cookie = &d};
    CF_OK(e, pami_rmw(e->ctx, &r));
    cf_wait_count(e, &d.n, 33, "the puts' remote_fn and the rmw");
    CF_CHECK(e, d.bad == 0 && old == 0, "expected PAMI_SUCCESS and old 0, "
             "seen %s and %llu", cf_rc_name(d.rc), (unsigned long long)old);
    CF_OK(e, pami_dispatch_fence(e->client));
    for (size_t i = 0; i < 32; i++)
        CF_CHECK(e, cells[i] == e->seed + i, "expected cell %zu from the "
                 "previous task's put", i);
    CF_CHECK(e, cells[32] == 5, "expected the fetch-add's 5, seen %llu",
             (unsigned long long)cells[32]);
    /* A destroyed region on the owner's checked path: the callbacks get
     * PAMI_INVAL ("the owner no longer has the region"). */
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    CF_OK(e, pami_dispatch_fence(e->client));
    cf_count_t g = {0};
    uint64_t v = 9;
    pami_rma_t p = {.dest = ep, .local = &v, .bytes = 8,
                    .remote_mr = &all[to], .local_fn = cf_count_fn,
                    .cookie = &g};
    CF_OK(e, pami_get(e->ctx, &p));
    cf_wait_count(e, &g.n, 1, "the get of a destroyed region");
    CF_CHECK(e, g.rc == PAMI_INVAL, "expected PAMI_INVAL for a get of a "
             "destroyed region on the owner's path, seen %s",
             cf_rc_name(g.rc));
    r.done_fn = cf_count_fn;
    r.cookie = &g;
    CF_OK(e, pami_rmw(e->ctx, &r));
    cf_wait_count(e, &g.n, 2, "the rmw on a destroyed region");
    CF_CHECK(e, g.bad == 2 && g.rc == PAMI_INVAL, "expected PAMI_INVAL for "
             "an rmw on a destroyed region on the owner's path, seen %s",
             cf_rc_name(g.rc));
    CF_OK(e, pami_dispatch_fence(e->client));
    free(all);
}

static void env_cma_unbatched(cf_env_t *e)
{
    /* PAMI_CMA_BATCH=0, PAMI_RMA_GATHER=0, PAMI_CMA_SPLIT=64k: every
     * size each its own way, the split from 64 KiB. */
    static const size_t sizes[] = {1, 4096, 65535, 65536, 65536 + 4097,
                                   300001};
    rma_round(e, sizes, 6, 512 * 1024);
}

/* ---- the shared-memory queues switched off ---- */

#define SQ_ID 41

typedef struct {
    size_t got;
} sq_t;

static void sq_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
    ((sq_t *)k)->got++;
}

static void env_shm_off(cf_env_t *e)
{
    sq_t s = {0};
    CF_OK(e, pami_dispatch_set(e->ctx, SQ_ID, sq_handler, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint8_t b[64] = {0};
    for (int i = 0; i < 20; i++) {
        pami_send_immediate_t m = {.dest = cf_ep(e, (e->task + 1) % e->size),
                                   .dispatch = SQ_ID, .header = b,
                                   .header_len = sizeof(b)};
        CF_OK(e, cf_send_immediate(e, &m));
    }
    cf_wait_count(e, &s.got, 20, "messages from the previous task");
    pami_context_stats_t st;
    CF_OK(e, pami_context_stats(e->ctx, &st));
    CF_CHECK(e, st.shm_on == 0 && st.shm_sent == 0 && st.shm_received == 0,
             "expected no shared-memory queue with PAMI_SHM_FASTPATH=0, "
             "seen shm_on %llu, sent %llu, received %llu",
             (unsigned long long)st.shm_on, (unsigned long long)st.shm_sent,
             (unsigned long long)st.shm_received);
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- alloc_lifetime: a node peer's shared region ---- */

static void alloc_lifetime(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NODES};
    CF_OK(e, pami_client_query(e->client, &a));
    void *kept_addr, *gone_addr;
    pami_memregion_t mine[2];
    CF_OK(e, pami_memregion_alloc(e->ctx, 4096, &kept_addr, &mine[0]));
    CF_OK(e, pami_memregion_alloc(e->ctx, 4096, &gone_addr, &mine[1]));
    memset(kept_addr, 0x5a, 4096);
    pami_memregion_t *all = calloc(2 * e->size, sizeof(*all));
    CF_CHECK(e, all && cf_allgather(mine, all, sizeof(mine)) == 0,
             "expected the runner's exchange to work");
    /* The second region goes before anybody mapped it. */
    CF_OK(e, pami_memregion_destroy(e->ctx, &mine[1]));
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    int local = a.task_node[to] == a.task_node[e->task] && to != e->task;
    void *addr = NULL, *again = NULL;
    if (local)
        CF_OK(e, pami_memregion_map(e->ctx, &all[2 * to], &addr));
    CF_OK(e, pami_dispatch_fence(e->client));
    /* Now the owner destroys the first one, which this task mapped. */
    CF_OK(e, pami_memregion_destroy(e->ctx, &mine[0]));
    CF_OK(e, pami_dispatch_fence(e->client));
    if (local) {
        pami_result_t rc = pami_memregion_map(e->ctx, &all[2 * to + 1],
                                              &again);
        CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for a peer's "
                 "region destroyed before this context mapped it, seen %s",
                 cf_rc_name(rc));
        CF_OK(e, pami_memregion_map(e->ctx, &all[2 * to], &again));
        CF_CHECK(e, again == addr, "expected the same address after the "
                 "owner destroyed the region");
        uint8_t *m = addr;
        CF_CHECK(e, m[0] == 0x5a && m[4095] == 0x5a, "expected the owner's "
                 "bytes still readable through the mapping");
        /* A put through the mapping still completes, in the call. */
        int completed = -1;
        cf_count_t d = {0};
        uint64_t v = 77;
        pami_rma_t p = {.dest = cf_ep(e, to), .local = &v, .bytes = 8,
                        .remote_mr = &all[2 * to], .local_fn = cf_count_fn,
                        .remote_fn = cf_count_fn, .cookie = &d,
                        .completed = &completed};
        CF_OK(e, pami_put(e->ctx, &p));
        if (completed == 0)
            cf_wait_count(e, &d.n, 2, "the put's callbacks");
        CF_CHECK(e, d.bad == 0 && (completed == 1 || d.n == 2),
                 "expected the put through a kept mapping to succeed, seen "
                 "%s", cf_rc_name(d.rc));
        CF_CHECK(e, memcmp(m, &v, 8) == 0, "expected the put's data in the "
                 "mapping");
    }
    CF_OK(e, pami_dispatch_fence(e->client));
    free(all);
}

/* ---- landing_refused: recv->mr of another context or destroyed ---- */

#define LR_ID 42

typedef struct {
    cf_env_t               *e;
    const pami_memregion_t *use;
    size_t                  local_n, remote_n, handled;
    pami_result_t           local_rc, remote_rc;
    uint8_t                *buf;
} lr_t;

static void lr_local(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    lr_t *s = k;
    s->local_rc = rc;
    s->local_n++;
}

static void lr_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    lr_t *s = k;
    s->remote_rc = rc;
    s->remote_n++;
}

static void lr_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)o;
    lr_t *s = k;
    s->handled++;
    if (r == NULL)
        return;
    r->mr = s->use;
    r->mr_offset = 0;
    r->local_fn = lr_local;
    r->cookie = s;
}

static void landing_refused(cf_env_t *e)
{
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    e->ctx = e->contexts[0]; /* for cf_* helpers; destroyed as a set */
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    size_t len = a.rndv_threshold + 100;
    static lr_t s;
    s = (lr_t){.e = e, .buf = calloc(1, 2 * len)};
    /* Static: the handler reads them through s.use. */
    static pami_memregion_t of_ctx1, gone_copy;
    pami_memregion_t gone;
    CF_OK(e, pami_memregion_create(e->contexts[1], s.buf, 2 * len, &of_ctx1));
    CF_OK(e, pami_memregion_create(e->contexts[0], s.buf, 2 * len, &gone));
    gone_copy = gone;
    CF_OK(e, pami_memregion_destroy(e->contexts[0], &gone));
    CF_OK(e, pami_dispatch_set(e->contexts[0], LR_ID, lr_handler, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint8_t *src = calloc(1, len);
    const pami_memregion_t *which[2] = {&of_ctx1, &gone_copy};
    for (int i = 0; i < 2; i++) {
        s.use = which[i];
        size_t want = s.remote_n + 1;
        pami_send_t m = {.send = {.dest = cf_ep(e, (e->task + 1) % e->size),
                                  .dispatch = LR_ID, .header = &i,
                                  .header_len = sizeof(i), .data = src,
                                  .data_len = len},
                         .remote_fn = lr_remote, .cookie = &s};
        /* Both tasks set s.use before the fence lets anything arrive. */
        CF_OK(e, pami_dispatch_fence(e->client));
        CF_OK(e, pami_send(e->ctx, &m));
        cf_wait_count(e, &s.remote_n, want, "remote_fn");
        cf_wait_count(e, &s.local_n, want, "recv->local_fn");
        CF_CHECK(e, s.local_rc == PAMI_INVAL && s.remote_rc == PAMI_INVAL,
                 "expected recv->local_fn and remote_fn PAMI_INVAL for %s, "
                 "seen %s and %s", i == 0 ? "a region of another context" :
                 "a destroyed region", cf_rc_name(s.local_rc),
                 cf_rc_name(s.remote_rc));
    }
    for (size_t i = 0; i < 2 * len; i++)
        CF_CHECK(e, s.buf[i] == 0, "expected nothing written, byte %zu", i);
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->contexts[1], &of_ctx1));
    e->ctx = NULL;
    free(src);
    free(s.buf);
}

/* ---- env_shm_odd_sizes: malformed queue sizes take the defaults ---- */

static void env_shm_odd_sizes(cf_env_t *e)
{
    /* Whole payloads of every size class through the queues. */
    size_t max = 20000;
    static ls_t s;
    s = (ls_t){.e = e, .land = calloc(1, max)};
    uint8_t *src = malloc(max);
    CF_CHECK(e, s.land && src, "expected memory");
    CF_OK(e, pami_dispatch_set(e->ctx, LS_ID, ls_handler, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    size_t sizes[] = {1, 100, 2032, 2033, 8000, max};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        send_checked(e, &s, src, sizes[i], 30 + i);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_LOCAL_TASKS};
    CF_OK(e, pami_client_query(e->client, &a));
    pami_context_stats_t st;
    CF_OK(e, pami_context_stats(e->ctx, &st));
    CF_CHECK(e, a.num_local_tasks < 2 || st.shm_on == 1,
             "expected the queues on (PAMI_SHM_FASTPATH's default) despite "
             "malformed sizes");
    CF_OK(e, pami_dispatch_fence(e->client));
    free(src);
    free(s.land);
}

/* ---- env_timeouts_max: the longest shutdown and peer timeouts ---- */

static void env_timeouts_max(cf_env_t *e)
{
    /* config.md: "at most 2147483647 (24.8 days: a larger value is
     * lowered to it with a warning at pami_client_create)", set to 2^64-1
     * and 2^40 here. Such a value once overflowed the shutdown's
     * deadline into the past, so destroyv's barriers timed out at once. */
    CF_OK(e, pami_context_createv(e->client, NULL, 1, e->contexts));
    e->ncontexts = 1;
    CF_OK(e, pami_dispatch_fence(e->client));
    /* api.md, destroyv: "PAMI_TIMEOUT the deadline passed before a
     * barrier completed" must not happen with the longest deadline. */
    CF_OK(e, pami_context_destroyv(e->contexts, 1));
    e->ncontexts = 0;
    /* And once more through the runner's own teardown. */
    CF_OK(e, pami_context_createv(e->client, NULL, 1, e->contexts));
    e->ncontexts = 1;
}

const cf_case_t cf_config_cases[] = {
    {"core", "env_rndv_zero", 1, 0, 0, env_rndv_zero, "PAMI_RNDV_THRESHOLD=0"},
    {"core", "env_rndv_via_origin", 1, 0, 0, env_rndv_via_origin,
     "PAMI_RNDV_VIA_ORIGIN=1"},
    {"core", "env_shm_off", 1, 0, 0, env_shm_off, "PAMI_SHM_FASTPATH=0"},
    {"core", "env_shm_odd_sizes", 1, 0, 0, env_shm_odd_sizes,
     "PAMI_SHM_QUEUE_LINES=100 PAMI_SHM_ENTRY_MAX=9 PAMI_SHM_QUEUE_GROW=3"},
    {"core", "landing_refused", 1, 0, CF_OWN_CONTEXTS, landing_refused, NULL},
    {"core", "env_timeouts_max", 1, 0, CF_OWN_CONTEXTS, env_timeouts_max,
     "PAMI_SHUTDOWN_TIMEOUT=18446744073709551615 PAMI_PEER_TIMEOUT=1099511627776"},
};
const size_t cf_num_config_cases =
    sizeof(cf_config_cases) / sizeof(cf_config_cases[0]);

/* ---- region_in_use: destroying a local region an rget still uses ---- */

typedef struct {
    pami_context_t    ctx;
    pami_memregion_t *mr;
    pami_result_t     rc;
    size_t            ran;
} riu_t;

static pami_result_t riu_work(pami_context_t c, void *k)
{
    riu_t *s = k;
    s->rc = pami_memregion_destroy(c, s->mr);
    s->ran++;
    return PAMI_SUCCESS;
}

static void region_in_use(cf_env_t *e)
{
    static uint8_t win[4096], loc[4096];
    static pami_memregion_t mr, lmr;
    static cf_count_t d;
    static riu_t s;
    d = (cf_count_t){0};
    CF_OK(e, pami_memregion_create(e->ctx, win, sizeof(win), &mr));
    CF_OK(e, pami_memregion_create(e->ctx, loc, sizeof(loc), &lmr));
    pami_memregion_t *all = gather(e, &mr, sizeof(mr));
    if (all == NULL)
        return;
    if (e->task == 0) {
        /* On the owner's path task 1 must answer, and it waits in the
         * runner's exchange below. */
        pami_rrma_t r = {.dest = cf_ep(e, 1), .local_mr = &lmr,
                         .remote_mr = &all[1], .bytes = 64,
                         .local_fn = cf_count_fn, .cookie = &d};
        CF_OK(e, pami_rget(e->ctx, &r));
        s = (riu_t){.mr = &lmr};
        pami_work_t w;
        CF_OK(e, pami_context_post(e->ctx, &w, riu_work, &s));
        while (s.ran == 0 && cf_now() < e->deadline)
            pami_context_wait(e->ctx, 100);
        CF_CHECK(e, s.rc == PAMI_EAGAIN, "expected PAMI_EAGAIN destroying a "
                 "region an rget uses from posted work, seen %s",
                 cf_rc_name(s.rc));
        pami_memregion_t before = lmr;
        pami_result_t rc = pami_memregion_destroy(e->ctx, &lmr);
        CF_CHECK(e, rc == PAMI_TIMEOUT, "expected PAMI_TIMEOUT after "
                 "PAMI_SHUTDOWN_TIMEOUT with the rget still in flight, seen "
                 "%s", cf_rc_name(rc));
        CF_CHECK(e, memcmp(&before, &lmr, sizeof(lmr)) == 0,
                 "expected the region kept, *mr unchanged");
    }
    int token = 0, tokens[1024];
    CF_CHECK(e, e->size <= 1024 &&
                    cf_allgather(&token, tokens, sizeof(token)) == 0,
             "expected the runner's exchange to work");
    if (e->task == 0) {
        cf_wait_count(e, &d.n, 1, "the rget's local_fn");
        CF_CHECK(e, d.bad == 0, "expected the rget PAMI_SUCCESS, seen %s",
                 cf_rc_name(d.rc));
    }
    CF_OK(e, pami_memregion_destroy(e->ctx, &lmr));
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
}

const cf_case_t cf_config_rma_cases[] = {
    {"rma", "env_rma_via_owner", 1, 0, 0, env_rma_via_owner,
     "PAMI_RMA_VIA_OWNER=1"},
    {"rma", "env_cma_unbatched", 1, 0, 0, env_cma_unbatched,
     "PAMI_CMA_BATCH=0 PAMI_RMA_GATHER=0 PAMI_CMA_SPLIT=64k"},
    {"rma", "alloc_lifetime", 1, 0, 0, alloc_lifetime, NULL},
    {"rma", "region_in_use", 2, 1024, 0, region_in_use,
     "PAMI_RMA_VIA_OWNER=1 PAMI_SHUTDOWN_TIMEOUT=3000"},
};
const size_t cf_num_config_rma_cases =
    sizeof(cf_config_rma_cases) / sizeof(cf_config_rma_cases[0]);

/*
 * Suite core: dispatch, sends, callbacks, ordering, handler rules,
 * threads, peer death and shutdown. Each case names the spec sentence it
 * checks in docs/conformance.md.
 */
#include "cf.h"
#include "cf_child.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pami_client_attr_t attrs(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_DISPATCH_MAX |
                                          PAMI_CLIENT_ATTR_HEADER_MAX |
                                          PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                          PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    if (pami_client_query(e->client, &a) != PAMI_SUCCESS)
        CF_FAIL(e, "expected pami_client_query to succeed");
    return a;
}

static void nop_handler(pami_context_t c, void *k, const void *h, size_t hs,
                        const void *d, size_t ds, pami_endpoint_t o,
                        pami_recv_t *r)
{
    (void)c; (void)k; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
}

/* ---- limits ---- */

static void limits(cf_env_t *e)
{
    pami_client_attr_t a = attrs(e);
    CF_CHECK(e, a.dispatch_max == 256, "expected dispatch_max 256, seen %zu",
             a.dispatch_max);
    CF_CHECK(e, a.header_max == 1024, "expected header_max 1024, seen %zu",
             a.header_max);
    CF_CHECK(e, a.immediate_max > 0 && a.immediate_max <= 4096,
             "expected 0 < immediate_max <= 4096, seen %zu", a.immediate_max);
    CF_OK(e, pami_dispatch_set(e->ctx, a.dispatch_max - 1, nop_handler, NULL,
                               NULL));
    CF_OK(e, pami_dispatch_set(e->ctx, a.dispatch_max - 1, NULL, NULL, NULL));
    CF_RC(e, PAMI_INVAL, pami_dispatch_set(e->ctx, a.dispatch_max,
                                           nop_handler, NULL, NULL));
    CF_RC(e, PAMI_INVAL, pami_dispatch_set(NULL, 0, nop_handler, NULL, NULL));
    pami_endpoint_t self = cf_ep(e, e->task);
    static uint8_t buf[8192];
    pami_send_immediate_t si = {.dest = self, .dispatch = a.dispatch_max,
                                .header = buf, .header_len = 8};
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &si));
    si.dispatch = 1000;
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &si));
    si.dispatch = 0;
    si.header_len = 0;
    si.data = buf;
    si.data_len = a.immediate_max + 1;
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &si));
    si.data = NULL;
    si.data_len = 4;
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &si));
    pami_send_t s = {.send = {.dest = self, .dispatch = 0, .header = buf,
                              .header_len = a.header_max + 1}};
    CF_RC(e, PAMI_INVAL, pami_send(e->ctx, &s));
    s.send.header_len = 8;
    s.send.dispatch = a.dispatch_max;
    CF_RC(e, PAMI_INVAL, pami_send(e->ctx, &s));
    CF_RC(e, PAMI_INVAL, pami_send(NULL, &s));
    pami_endpoint_t ep;
    CF_RC(e, PAMI_INVAL, pami_endpoint_create(e->client,
                                              (pami_task_t)e->size, 0, &ep));
    CF_RC(e, PAMI_INVAL, pami_endpoint_create(e->client, 0, PAMI_CONTEXT_MAX,
                                              &ep));
    pami_task_t t;
    size_t off;
    CF_OK(e, pami_endpoint_create(e->client, e->task, 0, &ep));
    CF_OK(e, pami_endpoint_query(ep, &t, &off));
    CF_CHECK(e, t == e->task && off == 0,
             "expected endpoint (%u, 0) back, seen (%u, %zu)", e->task, t, off);
}

static void error_text(cf_env_t *e)
{
    for (int r = 0; r < PAMI_RESULT_LAST; r++) {
        const char *s = pami_error_text((pami_result_t)r);
        CF_CHECK(e, s != NULL && strcmp(s, "unknown result") != 0,
                 "expected a text for result %d, seen %s", r,
                 s ? s : "NULL");
    }
    const char *s = pami_error_text(PAMI_RESULT_LAST);
    CF_CHECK(e, s != NULL && strcmp(s, "unknown result") == 0,
             "expected \"unknown result\" past the list, seen %s",
             s ? s : "NULL");
}

/* ---- immediate sends between every pair ---- */

#define IMM_ID   3
#define IMM_MSGS 40

typedef struct {
    cf_env_t *e;
    size_t    got;
    uint32_t *next; /* per origin: the sequence number expected */
    size_t    imax;
} imm_t;

typedef struct {
    uint32_t origin, seq;
} seq_hdr_t;

static size_t imm_len(const imm_t *s, uint32_t seq)
{
    return (seq * 37u) % (s->imax - sizeof(seq_hdr_t) + 1);
}

static void on_imm(pami_context_t c, void *k, const void *h, size_t hs,
                   const void *d, size_t ds, pami_endpoint_t o,
                   pami_recv_t *r)
{
    (void)c; (void)o; (void)r;
    imm_t *s = k;
    seq_hdr_t sh;
    s->got++;
    if (hs != sizeof(sh)) {
        CF_FAIL(s->e, "expected a header of %zu bytes, seen %zu", sizeof(sh),
                hs);
        return;
    }
    memcpy(&sh, h, sizeof(sh));
    if (sh.origin >= s->e->size || sh.seq != s->next[sh.origin]) {
        CF_FAIL(s->e, "expected message %u from task %u, seen %u",
                sh.origin < s->e->size ? s->next[sh.origin] : 0, sh.origin,
                sh.seq);
        return;
    }
    s->next[sh.origin]++;
    size_t want = imm_len(s, sh.seq);
    if (ds != want || (ds > 0 && d == NULL)) {
        CF_FAIL(s->e, "expected %zu bytes of data, seen %zu", want, ds);
        return;
    }
    size_t bad = cf_verify(d, ds, s->e->seed, sh.origin, sh.seq);
    if (bad != ds)
        CF_FAIL(s->e, "expected the pattern at byte %zu of message %u from "
                "task %u, seen other data", bad, sh.seq, sh.origin);
}

static void immediate(cf_env_t *e)
{
    pami_client_attr_t a = attrs(e);
    imm_t s = {.e = e, .next = calloc(e->size, sizeof(uint32_t)),
               .imax = a.immediate_max};
    CF_OK(e, pami_dispatch_set(e->ctx, IMM_ID, on_imm, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint8_t *buf = malloc(a.immediate_max);
    for (uint32_t q = 0; q < IMM_MSGS && !e->failed; q++)
        for (size_t i = 0; i < e->size; i++) {
            pami_task_t to = (pami_task_t)((e->task + i) % e->size);
            seq_hdr_t h = {e->task, q};
            size_t len = imm_len(&s, q);
            cf_fill(buf, len, e->seed, e->task, q);
            pami_send_immediate_t m = {.dest = cf_ep(e, to),
                                       .dispatch = IMM_ID, .header = &h,
                                       .header_len = sizeof(h), .data = buf,
                                       .data_len = len};
            pami_result_t rc = cf_send_immediate(e, &m);
            /* The buffers are ours again on return. */
            memset(buf, 0xee, len);
            if (rc != PAMI_SUCCESS) {
                CF_FAIL(e, "expected pami_send_immediate to succeed, seen %s",
                        cf_rc_name(rc));
                break;
            }
        }
    free(buf);
    cf_wait_count(e, &s.got, IMM_MSGS * e->size, "immediate messages");
    pami_dispatch_fence(e->client);
    free(s.next);
}

/* ---- pami_send of every size class, callbacks exactly once ---- */

#define SZ_ID 4
#define NSIZES 9

typedef struct {
    cf_env_t *e;
    size_t    got_handler, got_data;
    size_t    sizes[NSIZES];
    int       local[NSIZES], remote[NSIZES];
    int       local_first[NSIZES];
    uint8_t  *bufs[NSIZES];
    size_t    cb_ok;
} sz_t;

typedef struct {
    sz_t  *s;
    size_t idx;
    uint8_t *buf;
    uint32_t origin;
} sz_land_t;

static void sz_landed(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    sz_land_t *l = k;
    sz_t *s = l->s;
    if (rc != PAMI_SUCCESS)
        CF_FAIL(s->e, "expected recv->local_fn PAMI_SUCCESS, seen %s",
                cf_rc_name(rc));
    size_t n = s->sizes[l->idx];
    size_t bad = cf_verify(l->buf, n, s->e->seed, l->origin, l->idx);
    if (bad != n)
        CF_FAIL(s->e, "expected the pattern at byte %zu of %zu (landed), "
                "seen other data", bad, n);
    s->got_data++;
    free(l->buf);
    free(l);
}

static void on_sz(pami_context_t c, void *k, const void *h, size_t hs,
                  const void *d, size_t ds, pami_endpoint_t o, pami_recv_t *r)
{
    (void)c; (void)o;
    sz_t *s = k;
    seq_hdr_t sh;
    s->got_handler++;
    if (hs != sizeof(sh)) {
        CF_FAIL(s->e, "expected a %zu-byte header, seen %zu", sizeof(sh), hs);
        return;
    }
    memcpy(&sh, h, sizeof(sh));
    if (sh.seq >= NSIZES || ds != s->sizes[sh.seq]) {
        CF_FAIL(s->e, "expected message %u of %zu bytes, seen %zu", sh.seq,
                sh.seq < NSIZES ? s->sizes[sh.seq] : 0, ds);
        return;
    }
    if (ds == 0 || d != NULL) {
        if (r != NULL)
            CF_FAIL(s->e, "expected recv NULL with the payload here");
        size_t bad = cf_verify(d, ds, s->e->seed, sh.origin, sh.seq);
        if (bad != ds)
            CF_FAIL(s->e, "expected the pattern at byte %zu of %zu, seen "
                    "other data", bad, ds);
        s->got_data++;
        return;
    }
    sz_land_t *l = calloc(1, sizeof(*l));
    l->s = s;
    l->idx = sh.seq;
    l->origin = sh.origin;
    l->buf = malloc(ds);
    r->addr = l->buf;
    r->local_fn = sz_landed;
    r->cookie = l;
}

typedef struct {
    sz_t  *s;
    size_t idx;
} sz_cookie_t;

static sz_cookie_t sz_cookies[NSIZES];
static int in_send_call;

static void sz_local(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    sz_cookie_t *ck = k;
    sz_t *s = ck->s;
    if (in_send_call)
        CF_FAIL(s->e, "expected local_fn after pami_send returned, seen it "
                "inside the call");
    if (rc != PAMI_SUCCESS)
        CF_FAIL(s->e, "expected local_fn PAMI_SUCCESS for %zu bytes, seen %s",
                s->sizes[ck->idx], cf_rc_name(rc));
    s->local[ck->idx]++;
}

static void sz_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    sz_cookie_t *ck = k;
    sz_t *s = ck->s;
    if (in_send_call)
        CF_FAIL(s->e, "expected remote_fn after pami_send returned, seen it "
                "inside the call");
    if (rc != PAMI_SUCCESS)
        CF_FAIL(s->e, "expected remote_fn PAMI_SUCCESS for %zu bytes, seen "
                "%s", s->sizes[ck->idx], cf_rc_name(rc));
    if (s->local[ck->idx] != 1)
        CF_FAIL(s->e, "expected local_fn before remote_fn (%zu bytes), seen "
                "remote_fn first", s->sizes[ck->idx]);
    s->remote[ck->idx]++;
    s->cb_ok++;
}

static void send_sizes(cf_env_t *e)
{
    pami_client_attr_t a = attrs(e);
    size_t rt = a.rndv_threshold;
    sz_t s = {.e = e,
              .sizes = {0, 1, 100, a.immediate_max, rt - 1, rt, rt + 1,
                        256 * 1024 + 7, 2 * 1024 * 1024 + 3}};
    CF_OK(e, pami_dispatch_set(e->ctx, SZ_ID, on_sz, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    pami_endpoint_t ep = cf_ep(e, to);
    for (size_t i = 0; i < NSIZES; i++) {
        s.bufs[i] = malloc(s.sizes[i] + 1);
        cf_fill(s.bufs[i], s.sizes[i], e->seed, e->task, i);
        sz_cookies[i] = (sz_cookie_t){&s, i};
        seq_hdr_t h = {e->task, (uint32_t)i};
        pami_send_t m = {.send = {.dest = ep, .dispatch = SZ_ID,
                                  .header = &h, .header_len = sizeof(h),
                                  .data = s.sizes[i] ? s.bufs[i] : NULL,
                                  .data_len = s.sizes[i]},
                         .local_fn = sz_local, .remote_fn = sz_remote,
                         .cookie = &sz_cookies[i]};
        in_send_call = 1;
        pami_result_t rc = pami_send(e->ctx, &m);
        in_send_call = 0;
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected pami_send of %zu bytes to "
                 "succeed, seen %s", s.sizes[i], cf_rc_name(rc));
    }
    cf_wait_count(e, &s.cb_ok, NSIZES, "remote_fn callbacks");
    cf_wait_count(e, &s.got_data, NSIZES, "payloads delivered");
    pami_dispatch_fence(e->client);
    /* Late duplicates would have arrived by now: the fence went after. */
    for (size_t i = 0; i < NSIZES; i++) {
        if (s.local[i] != 1 || s.remote[i] != 1)
            CF_FAIL(e, "expected local_fn and remote_fn once each for %zu "
                    "bytes, seen %d and %d", s.sizes[i], s.local[i],
                    s.remote[i]);
        free(s.bufs[i]);
    }
    CF_CHECK(e, s.got_handler == NSIZES, "expected %d handler calls, seen %zu",
             NSIZES, s.got_handler);
}

/* ---- landing choices: discard, region, region out of range ---- */

#define LAND_ID 5

typedef struct {
    cf_env_t        *e;
    pami_memregion_t mr;
    uint8_t         *pool;
    size_t           pool_len;
    size_t           handled, landed, refused;
    int              remote_rc[3];
    size_t           remote_n;
} land_t;

static void land_local(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    land_t *s = k;
    if (rc == PAMI_SUCCESS)
        s->landed++;
    else if (rc == PAMI_INVAL)
        s->refused++;
    else
        CF_FAIL(s->e, "expected recv->local_fn PAMI_SUCCESS or PAMI_INVAL, "
                "seen %s", cf_rc_name(rc));
}

static void on_land(pami_context_t c, void *k, const void *h, size_t hs,
                    const void *d, size_t ds, pami_endpoint_t o,
                    pami_recv_t *r)
{
    (void)c; (void)o; (void)d;
    land_t *s = k;
    uint32_t mode = 0;
    if (hs == sizeof(mode))
        memcpy(&mode, h, sizeof(mode));
    s->handled++;
    if (r == NULL) {
        CF_FAIL(s->e, "expected a large message (payload not here), seen "
                "%zu bytes delivered", ds);
        return;
    }
    if (mode == 0)
        return; /* discard: addr stays NULL */
    r->mr = &s->mr;
    r->mr_offset = mode == 1 ? 0 : s->pool_len - ds / 2;
    r->local_fn = land_local;
    r->cookie = s;
}

static void land_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    land_t *s = k;
    if (s->remote_n < 3)
        s->remote_rc[s->remote_n] = rc;
    s->remote_n++;
}

static void landing(cf_env_t *e)
{
    pami_client_attr_t a = attrs(e);
    size_t len = a.rndv_threshold + 4096;
    land_t s = {.e = e, .pool_len = len};
    s.pool = calloc(1, len);
    CF_OK(e, pami_memregion_create(e->ctx, s.pool, len, &s.mr));
    CF_OK(e, pami_dispatch_set(e->ctx, LAND_ID, on_land, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint8_t *src = malloc(len);
    cf_fill(src, len, e->seed, e->task, 77);
    pami_endpoint_t ep = cf_ep(e, (pami_task_t)((e->task + 1) % e->size));
    for (uint32_t mode = 0; mode < 3; mode++) {
        pami_send_t m = {.send = {.dest = ep, .dispatch = LAND_ID,
                                  .header = &mode, .header_len = sizeof(mode),
                                  .data = src, .data_len = len},
                         .remote_fn = land_remote, .cookie = &s};
        CF_OK(e, pami_send(e->ctx, &m));
        cf_wait_count(e, &s.remote_n, mode + 1, "remote_fn callbacks");
    }
    cf_wait_count(e, &s.handled, 3, "handler calls");
    cf_wait_count(e, &s.landed, 1, "landings in the region");
    cf_wait_count(e, &s.refused, 1, "refused landings");
    pami_dispatch_fence(e->client);
    if (!e->failed) {
        pami_task_t from = (pami_task_t)((e->task + e->size - 1) % e->size);
        size_t bad = cf_verify(s.pool, len, e->seed, from, 77);
        if (bad != len)
            CF_FAIL(e, "expected the payload in the region at byte %zu, seen "
                    "other data", bad);
        if (s.remote_rc[0] != PAMI_SUCCESS || s.remote_rc[1] != PAMI_SUCCESS ||
            s.remote_rc[2] != PAMI_INVAL)
            CF_FAIL(e, "expected remote_fn SUCCESS (discarded), SUCCESS "
                    "(landed), INVAL (out of the region), seen %s, %s, %s",
                    cf_rc_name(s.remote_rc[0]), cf_rc_name(s.remote_rc[1]),
                    cf_rc_name(s.remote_rc[2]));
    }
    pami_memregion_destroy(e->ctx, &s.mr);
    free(s.pool);
    free(src);
}

/* ---- per-pair order across ids and sizes ---- */

#define ORD_ID_A 6
#define ORD_ID_B 7
#define ORD_MSGS 60

typedef struct {
    cf_env_t *e;
    uint32_t  next;
    size_t    got, done;
    uint8_t  *sink;
} ord_t;

static void ord_done(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)rc;
    ((ord_t *)k)->done++;
}

static void on_ord(pami_context_t c, void *k, const void *h, size_t hs,
                   const void *d, size_t ds, pami_endpoint_t o,
                   pami_recv_t *r)
{
    (void)c; (void)o; (void)d; (void)hs;
    ord_t *s = k;
    uint32_t seq;
    memcpy(&seq, h, sizeof(seq));
    if (seq != s->next)
        CF_FAIL(s->e, "expected handler of message %u first (send order), "
                "seen %u", s->next, seq);
    s->next = seq + 1;
    s->got++;
    if (r != NULL) {
        r->addr = s->sink;
        r->local_fn = ord_done;
        r->cookie = s;
        (void)ds;
    }
}

static void order(cf_env_t *e)
{
    pami_client_attr_t a = attrs(e);
    size_t big = a.rndv_threshold * 2;
    ord_t s = {.e = e, .sink = malloc(big)};
    uint8_t *src = calloc(1, big);
    CF_OK(e, pami_dispatch_set(e->ctx, ORD_ID_A, on_ord, &s, NULL));
    CF_OK(e, pami_dispatch_set(e->ctx, ORD_ID_B, on_ord, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_endpoint_t ep = cf_ep(e, (pami_task_t)((e->task + 1) % e->size));
    for (uint32_t q = 0; q < ORD_MSGS; q++) {
        uint64_t r = cf_byte(e->seed, e->task, q, 0) % 3;
        size_t id = q % 2 ? ORD_ID_A : ORD_ID_B;
        pami_result_t rc;
        if (r == 0) {
            pami_send_immediate_t m = {.dest = ep, .dispatch = id,
                                       .header = &q, .header_len = sizeof(q),
                                       .data = src, .data_len = 16};
            rc = cf_send_immediate(e, &m);
        } else {
            size_t len = r == 1 ? 200 : big;
            pami_send_t m = {.send = {.dest = ep, .dispatch = id,
                                      .header = &q, .header_len = sizeof(q),
                                      .data = src, .data_len = len}};
            rc = pami_send(e->ctx, &m);
        }
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected send %u to succeed, seen %s",
                 q, cf_rc_name(rc));
    }
    cf_wait_count(e, &s.got, ORD_MSGS, "ordered messages");
    pami_dispatch_fence(e->client);
    free(src);
    free(s.sink);
}

/* ---- self sends ---- */

#define SELF_ID 8

typedef struct {
    cf_env_t *e;
    size_t    got, remote;
    int       inside;
} self_t;

static void on_self(pami_context_t c, void *k, const void *h, size_t hs,
                    const void *d, size_t ds, pami_endpoint_t o,
                    pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)r;
    self_t *s = k;
    pami_task_t t;
    size_t off;
    pami_endpoint_query(o, &t, &off);
    if (t != s->e->task)
        CF_FAIL(s->e, "expected origin task %u, seen %u", s->e->task, t);
    if (s->inside)
        CF_FAIL(s->e, "expected the handler from advance, seen it inside "
                "the send call");
    s->got++;
}

static void self_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    self_t *s = k;
    if (rc != PAMI_SUCCESS)
        CF_FAIL(s->e, "expected remote_fn PAMI_SUCCESS, seen %s",
                cf_rc_name(rc));
    s->remote++;
}

static void self_send(cf_env_t *e)
{
    self_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, SELF_ID, on_self, &s, NULL));
    pami_endpoint_t me = cf_ep(e, e->task);
    uint64_t v = 42;
    pami_send_immediate_t m = {.dest = me, .dispatch = SELF_ID, .header = &v,
                               .header_len = sizeof(v)};
    s.inside = 1;
    pami_result_t rc = pami_send_immediate(e->ctx, &m);
    pami_send_t l = {.send = m, .remote_fn = self_remote, .cookie = &s};
    pami_result_t rc2 = pami_send(e->ctx, &l);
    s.inside = 0;
    CF_CHECK(e, rc == PAMI_SUCCESS && rc2 == PAMI_SUCCESS,
             "expected both self sends to succeed, seen %s and %s",
             cf_rc_name(rc), cf_rc_name(rc2));
    cf_wait_count(e, &s.got, 2, "self messages");
    cf_wait_count(e, &s.remote, 1, "remote_fn of the self send");
}

/* ---- handler rules ---- */

#define HR_ID 9

typedef struct {
    cf_env_t *e;
    int       handled, callback, posted;
    pami_work_t work;
} hr_t;

static void check_refusals(hr_t *s, pami_context_t c, const char *where)
{
    pami_result_t r1 = pami_context_advance(c, 1);
    pami_result_t r2 = pami_context_wait(c, 0);
    pami_result_t r3 = pami_dispatch_fence(s->e->client);
    pami_result_t r4 = pami_context_destroyv(&c, 1);
    if (r1 != PAMI_IN_HANDLER || r2 != PAMI_IN_HANDLER ||
        r3 != PAMI_IN_HANDLER || r4 != PAMI_IN_HANDLER)
        CF_FAIL(s->e, "expected PAMI_IN_HANDLER from advance, wait, "
                "dispatch_fence and context_destroyv in a %s, seen %s, %s, "
                "%s, %s", where, cf_rc_name(r1), cf_rc_name(r2),
                cf_rc_name(r3), cf_rc_name(r4));
    pami_client_t cl = s->e->client;
    pami_result_t r5 = pami_client_destroy(&cl);
    if (r5 != PAMI_IN_HANDLER || cl == NULL)
        CF_FAIL(s->e, "expected PAMI_IN_HANDLER and the client kept from "
                "pami_client_destroy in a %s, seen %s", where,
                cf_rc_name(r5));
}

static pami_result_t hr_work(pami_context_t c, void *k)
{
    hr_t *s = k;
    check_refusals(s, c, "posted work item");
    s->posted = 1;
    return PAMI_SUCCESS;
}

static void hr_cb(pami_context_t c, void *k, pami_result_t rc)
{
    (void)rc;
    hr_t *s = k;
    check_refusals(s, c, "completion callback");
    s->callback |= 1;
}

static void on_hr(pami_context_t c, void *k, const void *h, size_t hs,
                  const void *d, size_t ds, pami_endpoint_t o, pami_recv_t *r)
{
    (void)h; (void)hs; (void)d; (void)ds; (void)r;
    hr_t *s = k;
    check_refusals(s, c, "handler");
    /* Sending is allowed in a handler. */
    uint32_t v = 1;
    pami_send_immediate_t m = {.dest = o, .dispatch = HR_ID + 1,
                               .header = &v, .header_len = sizeof(v)};
    pami_result_t rc = pami_send_immediate(c, &m);
    if (rc != PAMI_SUCCESS && rc != PAMI_EAGAIN)
        CF_FAIL(s->e, "expected a send from a handler to succeed, seen %s",
                cf_rc_name(rc));
    s->handled = 1;
}

static void on_hr_reply(pami_context_t c, void *k, const void *h, size_t hs,
                        const void *d, size_t ds, pami_endpoint_t o,
                        pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
    ((hr_t *)k)->callback |= 2;
}

static void handler_rules(cf_env_t *e)
{
    hr_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, HR_ID, on_hr, &s, NULL));
    CF_OK(e, pami_dispatch_set(e->ctx, HR_ID + 1, on_hr_reply, &s, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint32_t v = 0;
    pami_send_t m = {.send = {.dest = cf_ep(e, (pami_task_t)((e->task + 1) %
                                                             e->size)),
                              .dispatch = HR_ID, .header = &v,
                              .header_len = sizeof(v)},
                     .remote_fn = hr_cb, .cookie = &s};
    CF_OK(e, pami_send(e->ctx, &m));
    CF_OK(e, pami_context_post(e->ctx, &s.work, hr_work, &s));
    cf_wait_flag(e, &s.handled, "the handler to run");
    cf_wait_flag(e, &s.posted, "the posted work to run");
    while (!e->failed && (s.callback & 3) != 3 && cf_now() < e->deadline)
        pami_context_wait(e->ctx, 100);
    CF_CHECK(e, (s.callback & 3) == 3, "expected remote_fn and the handler's "
             "reply, seen flags %d", s.callback);
    pami_dispatch_fence(e->client);
}

/* ---- posts from threads ---- */

#define POST_THREADS 4
#define POST_ITEMS   200

typedef struct {
    pami_work_t       work;
    atomic_int        runs;
    int               again; /* returns EAGAIN on its first run */
} post_item_t;

typedef struct {
    cf_env_t   *e;
    post_item_t items[POST_THREADS][POST_ITEMS];
    size_t      done;
    atomic_int  errors;
    int         t;
} post_t;

static post_t *post_state;

static pami_result_t post_fn(pami_context_t c, void *k)
{
    (void)c;
    post_item_t *it = k;
    int n = atomic_fetch_add(&it->runs, 1) + 1;
    if (it->again && n == 1)
        return PAMI_EAGAIN;
    post_state->done++;
    return PAMI_SUCCESS;
}

static void *post_thread(void *arg)
{
    size_t t = (size_t)(uintptr_t)arg;
    for (size_t i = 0; i < POST_ITEMS; i++) {
        post_item_t *it = &post_state->items[t][i];
        it->again = (i % 7) == 3;
        if (pami_context_post(post_state->e->ctx, &it->work, post_fn, it) !=
            PAMI_SUCCESS)
            atomic_fetch_add(&post_state->errors, 1);
    }
    return NULL;
}

static void post_threads(cf_env_t *e)
{
    post_t *s = calloc(1, sizeof(*s));
    s->e = e;
    post_state = s;
    pthread_t th[POST_THREADS];
    for (size_t t = 0; t < POST_THREADS; t++)
        pthread_create(&th[t], NULL, post_thread, (void *)(uintptr_t)t);
    /* Meanwhile this thread waits on the context: posts must wake it. */
    cf_wait_count(e, &s->done, POST_THREADS * POST_ITEMS, "posted items run");
    for (size_t t = 0; t < POST_THREADS; t++)
        pthread_join(th[t], NULL);
    if (atomic_load(&s->errors))
        CF_FAIL(e, "expected every pami_context_post to succeed, seen %d "
                "failures", atomic_load(&s->errors));
    for (size_t t = 0; t < POST_THREADS && !e->failed; t++)
        for (size_t i = 0; i < POST_ITEMS; i++) {
            int want = s->items[t][i].again ? 2 : 1;
            int runs = atomic_load(&s->items[t][i].runs);
            if (runs != want) {
                CF_FAIL(e, "expected item %zu of thread %zu to run %d times, "
                        "seen %d", i, t, want, runs);
                break;
            }
        }
    free(s);
}

/* ---- unknown ids are dropped and counted ---- */

static void unknown_id(cf_env_t *e)
{
    pami_context_stats_t before, after;
    /* Read before the fence: once a peer left it, its message may come. */
    CF_OK(e, pami_context_stats(e->ctx, &before));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint32_t v = 7;
    pami_send_immediate_t m = {.dest = cf_ep(e, (pami_task_t)((e->task + 1) %
                                                              e->size)),
                               .dispatch = 200, .header = &v,
                               .header_len = sizeof(v)};
    CF_OK(e, cf_send_immediate(e, &m));
    /* The fence's messages follow ours on the same pair. */
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_context_stats(e->ctx, &after));
    CF_CHECK(e, after.dropped_unknown == before.dropped_unknown + 1,
             "expected dropped_unknown to rise by 1, seen %llu -> %llu",
             (unsigned long long)before.dropped_unknown,
             (unsigned long long)after.dropped_unknown);
}

/* ---- a peer dies ---- */

#define PF_ID 10

typedef struct {
    cf_env_t *e;
    size_t    n;
    int       rc;
} pf_t;

static void pf_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    pf_t *s = k;
    s->rc = rc;
    s->n++;
}

static void peer_failed(cf_env_t *e)
{
    pami_task_t victim = (pami_task_t)(e->size - 1);
    CF_OK(e, pami_dispatch_set(e->ctx, PF_ID, nop_handler, NULL, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    if (e->task == victim) {
        /* Passes by dying: report first, then go without a word. */
        cf_report_now(e);
        _exit(0);
    }
    e->no_destroy = 1; /* the job cannot end collectively any more */
    pf_t s = {.e = e};
    static uint8_t big[1 << 20];
    pami_send_t m = {.send = {.dest = cf_ep(e, victim), .dispatch = PF_ID,
                              .header = &s.n, .header_len = sizeof(s.n),
                              .data = big, .data_len = sizeof(big)},
                     .remote_fn = pf_remote, .cookie = &s};
    pami_result_t rc = PAMI_SUCCESS;
    /* Until the death is noticed, sends may still succeed; then the send
     * or its callbacks fail (PAMI_PEER_FAILED, or the transport's error
     * for the local part, docs/api.md), and the fence says who died. */
    for (int i = 0; i < 1000 && rc == PAMI_SUCCESS && cf_now() < e->deadline;
         i++) {
        size_t before = s.n;
        rc = pami_send(e->ctx, &m);
        if (rc != PAMI_SUCCESS)
            break;
        if (cf_wait_count(e, &s.n, before + 1, "remote_fn toward the dead "
                          "task") != 0)
            return;
        if (s.rc != PAMI_SUCCESS)
            break;
        usleep(10000);
    }
    CF_CHECK(e, rc == PAMI_PEER_FAILED || s.rc == PAMI_PEER_FAILED ||
             s.rc == PAMI_TRANSPORT,
             "expected PAMI_PEER_FAILED (or the transport's error) toward the "
             "dead task, seen send %s, remote_fn %s", cf_rc_name(rc),
             cf_rc_name(s.rc));
    CF_RC(e, PAMI_PEER_FAILED, pami_dispatch_fence(e->client));
}

/* ---- shutdown with operations in flight ---- */

#define SD_ID 11
#define SD_MSGS 32

typedef struct {
    cf_env_t *e;
    int       local[SD_MSGS], remote[SD_MSGS];
    int       bad;
} sd_t;

static sd_t *sd_state;

static void sd_cb(pami_context_t c, void *k, pami_result_t rc, int remote)
{
    (void)c;
    size_t i = (size_t)(uintptr_t)k;
    (remote ? sd_state->remote : sd_state->local)[i]++;
    if (rc != PAMI_SUCCESS && rc != PAMI_SHUTDOWN)
        sd_state->bad = rc;
}
static void sd_local(pami_context_t c, void *k, pami_result_t rc)
{
    sd_cb(c, k, rc, 0);
}
static void sd_remote(pami_context_t c, void *k, pami_result_t rc)
{
    sd_cb(c, k, rc, 1);
}

static void shutdown_inflight(cf_env_t *e)
{
    sd_t s = {.e = e};
    sd_state = &s;
    CF_OK(e, pami_dispatch_set(e->ctx, SD_ID, nop_handler, NULL, NULL));
    CF_OK(e, pami_dispatch_fence(e->client));
    static uint8_t buf[256 * 1024];
    pami_endpoint_t ep = cf_ep(e, (pami_task_t)((e->task + 1) % e->size));
    for (size_t i = 0; i < SD_MSGS; i++) {
        pami_send_t m = {.send = {.dest = ep, .dispatch = SD_ID,
                                  .header = &i, .header_len = sizeof(i),
                                  .data = buf,
                                  .data_len = i % 2 ? sizeof(buf) : 64},
                         .local_fn = sd_local, .remote_fn = sd_remote,
                         .cookie = (void *)(uintptr_t)i};
        CF_OK(e, pami_send(e->ctx, &m));
    }
    pami_result_t rc = pami_context_destroyv(&e->ctx, 1);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected pami_context_destroyv to "
             "succeed with sends in flight, seen %s", cf_rc_name(rc));
    CF_CHECK(e, e->ctx == NULL, "expected destroyv to set the context NULL");
    for (size_t i = 0; i < SD_MSGS; i++)
        CF_CHECK(e, s.local[i] == 1 && s.remote[i] == 1,
                 "expected local_fn and remote_fn once each by the end of "
                 "destroyv (message %zu), seen %d and %d", i, s.local[i],
                 s.remote[i]);
    CF_CHECK(e, s.bad == 0, "expected PAMI_SUCCESS or PAMI_SHUTDOWN in the "
             "callbacks, seen %s", cf_rc_name(s.bad));
}

const cf_case_t cf_core_cases[] = {
    {"core", "limits", 1, 0, 0, limits, NULL},
    {"core", "error_text", 1, 0, 0, error_text, NULL},
    {"core", "immediate_all_pairs", 1, 0, 0, immediate, NULL},
    {"core", "send_sizes", 1, 0, 0, send_sizes, NULL},
    {"core", "landing", 1, 0, 0, landing, NULL},
    {"core", "order_per_pair", 1, 0, 0, order, NULL},
    {"core", "self_send", 1, 0, 0, self_send, NULL},
    {"core", "handler_rules", 1, 0, 0, handler_rules, NULL},
    {"core", "post_threads", 1, 0, 0, post_threads, NULL},
    {"core", "unknown_id", 2, 0, 0, unknown_id, NULL},
    {"core", "peer_failed", 2, 0, 0, peer_failed, NULL},
    {"core", "shutdown_inflight", 2, 0, 0, shutdown_inflight, NULL},
};
const size_t cf_num_core_cases =
    sizeof(cf_core_cases) / sizeof(cf_core_cases[0]);

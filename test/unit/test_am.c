/* Active messages between the contexts of one process (task 0 of 1): the
 * dispatch table, every context sending to every other with headers and
 * data of several sizes, and what a handler may and may not do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pami.h"

#define WAIT_MS  5000 /* bound of every "progress until" */
#define QUIET_MS 100  /* extra progress that must not repeat a callback */

#define MAX_CTX  3    /* contexts of the all-to-all mesh */

#include "unit_world.h"

/* Advances every context until cond holds or WAIT_MS passed. */
#define PROGRESS_UNTIL(w, cond)                                              \
    do {                                                                     \
        uint64_t end_ = now_ms() + WAIT_MS;                                  \
        while (!(cond) && now_ms() < end_)                                   \
            advance_all(w);                                                  \
    } while (0)

static void progress_for(world_t *w, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    while (now_ms() < end)
        advance_all(w);
}

/* pami_send_immediate may say EAGAIN until the UCX endpoint is wired up. */
static pami_result_t send_immediate_retry(world_t *w, size_t from,
                                          const pami_send_immediate_t *p)
{
    uint64_t end = now_ms() + WAIT_MS;
    pami_result_t rc;
    while ((rc = pami_send_immediate(w->ctx[from], p)) == PAMI_EAGAIN &&
           now_ms() < end)
        advance_all(w);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* dispatch                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
    int    calls;
    size_t last_header_len;
} counter_t;

static void count_handler(pami_context_t ctx, void *cookie, const void *hdr,
                          size_t hdr_len, const void *data, size_t data_len,
                          pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)hdr, (void)data, (void)data_len, (void)origin;
    (void)recv;
    counter_t *c = cookie;
    c->calls++;
    c->last_header_len = hdr_len;
}

static uint64_t dropped_unknown(world_t *w, size_t i)
{
    pami_context_stats_t st;
    assert_int_equal(pami_context_stats(w->ctx[i], &st), PAMI_SUCCESS);
    return st.dropped_unknown;
}

static void test_dispatch_bounds(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    size_t   max = w->attr.dispatch_max;
    counter_t c  = {0};
    assert_true(max > 0);

    assert_int_equal(pami_dispatch_set(w->ctx[1], 0, count_handler, &c,
                                       NULL), PAMI_SUCCESS);
    assert_int_equal(pami_dispatch_set(w->ctx[1], max - 1, count_handler, &c,
                                       NULL), PAMI_SUCCESS);
    assert_int_equal(pami_dispatch_set(w->ctx[1], max, count_handler, &c,
                                       NULL), PAMI_INVAL);
    assert_int_equal(pami_dispatch_set(w->ctx[1], max + 1, count_handler, &c,
                                       NULL), PAMI_INVAL);
    assert_int_equal(pami_dispatch_set(w->ctx[1], max * 2, count_handler, &c,
                                       NULL), PAMI_INVAL);
    assert_int_equal(pami_dispatch_set(w->ctx[1], SIZE_MAX, count_handler,
                                       &c, NULL), PAMI_INVAL);
    assert_int_equal(pami_dispatch_set(NULL, 0, count_handler, &c, NULL),
                     PAMI_INVAL);

    /* The highest user id really delivers. */
    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = max - 1};
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, c.calls == 1);
    assert_int_equal(c.calls, 1);

    /* Cleared with fn NULL: the next message to it is dropped, counted. */
    assert_int_equal(pami_dispatch_set(w->ctx[1], max - 1, NULL, NULL, NULL),
                     PAMI_SUCCESS);
    uint64_t dropped = dropped_unknown(w, 1);
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, dropped_unknown(w, 1) == dropped + 1);
    assert_int_equal(dropped_unknown(w, 1), dropped + 1);
    assert_int_equal(c.calls, 1);

    /* Id 0 is untouched by clearing another id; set again, it delivers. */
    p.dispatch = 0;
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, c.calls == 2);
    assert_int_equal(c.calls, 2);
    assert_int_equal(pami_dispatch_set(w->ctx[1], max - 1, count_handler, &c,
                                       NULL), PAMI_SUCCESS);
    p.dispatch = max - 1;
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, c.calls == 3);
    assert_int_equal(c.calls, 3);
    world_down(w);
}

/* A message to an id without a handler at the target is dropped and
 * counted there; the handler of another id does not see it. */
static void test_dispatch_unknown_dropped(void **state)
{
    (void)state;
    world_t  *w = world_up(2);
    counter_t marker = {0};
    assert_int_equal(pami_dispatch_set(w->ctx[1], 3, count_handler, &marker,
                                       NULL), PAMI_SUCCESS);
    pami_context_stats_t before, after;
    assert_int_equal(pami_context_stats(w->ctx[1], &before), PAMI_SUCCESS);

    uint32_t hdr = 0xfeedu;
    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = 4,
                               .header = &hdr, .header_len = sizeof(hdr)};
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    /* Sends from one context to one endpoint arrive in order, so once the
     * marker is in, the first message was handled too. */
    p.dispatch   = 3;
    p.header_len = 1;
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, marker.calls == 1);
    assert_int_equal(marker.calls, 1);
    assert_int_equal(marker.last_header_len, 1);
    assert_int_equal(pami_context_stats(w->ctx[1], &after), PAMI_SUCCESS);
    assert_int_equal(after.dropped_unknown, before.dropped_unknown + 1);
    assert_int_equal(after.receives, before.receives + 1);
    assert_int_equal(after.dropped_malformed, before.dropped_malformed);
    world_down(w);
}

/* pami_send with remote_fn to an id without a handler: remote_fn runs
 * exactly once with PAMI_NOT_FOUND; local_fn once with success. Eager and
 * rendezvous sizes alike. */
static void test_dispatch_unknown_remote_fn(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    static const size_t sizes[] = {0, 64, 65536, 1 << 20};
    enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
    static char payload[1 << 20];
    cb_count_t calls[NSIZES];
    memset(calls, 0, sizeof(calls));
    uint64_t dropped = dropped_unknown(w, 1);

    for (size_t i = 0; i < NSIZES; i++) {
        pami_send_t s = {
            .send      = {.dest = endpoint(w, 1), .dispatch = 17,
                          .header = &i, .header_len = sizeof(i),
                          .data = payload, .data_len = sizes[i]},
            .local_fn  = cb_count_local,
            .remote_fn = cb_count_remote,
            .cookie    = &calls[i],
        };
        assert_int_equal(pami_send(w->ctx[0], &s), PAMI_SUCCESS);
    }
    bool all = false;
    uint64_t end = now_ms() + WAIT_MS;
    while (!all && now_ms() < end) {
        advance_all(w);
        all = true;
        for (size_t i = 0; i < NSIZES; i++)
            all = all && calls[i].remote > 0 &&
                  calls[i].local > 0;
    }
    progress_for(w, QUIET_MS);
    for (size_t i = 0; i < NSIZES; i++) {
        if (calls[i].remote != 1 || calls[i].local != 1)
            fail_msg("%zu bytes to an unknown id: remote_fn ran %d times, "
                     "local_fn %d times; want once each", sizes[i],
                     calls[i].remote, calls[i].local);
        if (calls[i].remote_rc != PAMI_NOT_FOUND)
            fail_msg("%zu bytes to an unknown id: remote_fn got %s, want "
                     "PAMI_NOT_FOUND", sizes[i],
                     pami_error_text(calls[i].remote_rc));
        assert_int_equal(calls[i].local_rc, PAMI_SUCCESS);
    }
    assert_int_equal(dropped_unknown(w, 1), dropped + NSIZES);
    world_down(w);
}

/* ------------------------------------------------------------------------ */
/* contexts: every context sends to every other one                         */
/* ------------------------------------------------------------------------ */

typedef struct {
    size_t hdr;
    size_t data;
    bool   immediate;
} msg_case_t;

#define MAX_CASES 16

typedef struct mesh mesh_t;

/* The cookie of dispatch id k at context t: knows both. */
typedef struct {
    mesh_t *m;
    size_t  target;
    size_t  kase;
} slot_t;

/* One message, origin o -> target t, case k. */
typedef struct {
    mesh_t *m;
    size_t  o, t, k;
    int     received;   /* handler calls */
    int     data_ok;    /* payload verified (in the handler or recv) */
    int     recv_calls; /* recv->local_fn calls */
    cb_count_t calls;      /* origin callbacks of pami_send */
    int     remote_before_data;
    uint8_t *send_buf;
} msg_t;

struct mesh {
    world_t   *w;
    msg_case_t cases[MAX_CASES];
    size_t     ncases;
    slot_t     slots[MAX_CTX][MAX_CASES];
    msg_t      msgs[MAX_CTX][MAX_CTX][MAX_CASES];
    size_t     next[MAX_CTX][MAX_CTX]; /* next case expected, per pair */
    int        bad_origin, bad_ctx, bad_size, bad_header, bad_data;
    int        bad_recv, out_of_order;
};

static uint8_t pattern_byte(size_t o, size_t t, size_t k, int part, size_t i)
{
    return (uint8_t)(o * 61 + t * 29 + k * 13 + (size_t)part * 101 + i * 7 +
                     (i >> 8));
}

static void fill(uint8_t *buf, size_t len, size_t o, size_t t, size_t k,
                 int part)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern_byte(o, t, k, part, i);
}

static bool matches(const void *buf, size_t len, size_t o, size_t t,
                    size_t k, int part)
{
    const uint8_t *b = buf;
    for (size_t i = 0; i < len; i++)
        if (b[i] != pattern_byte(o, t, k, part, i))
            return false;
    return true;
}

/* Where a payload that was not all here lands. */
typedef struct {
    msg_t  *msg;
    uint8_t data[];
} landing_t;

static void mesh_recv_done(pami_context_t ctx, void *cookie,
                           pami_result_t result)
{
    (void)ctx;
    landing_t *l   = cookie;
    msg_t     *msg = l->msg;
    msg->recv_calls++;
    if (result != PAMI_SUCCESS)
        msg->m->bad_recv++;
    else if (!matches(l->data, msg->m->cases[msg->k].data, msg->o, msg->t,
                      msg->k, 1))
        msg->m->bad_data++;
    else
        msg->data_ok++;
    free(l);
}

/* The origin's offset picks the message slot and seeds the expected
 * contents, so a wrong origin shows up as a missing or corrupt message. */
static void mesh_handler(pami_context_t ctx, void *cookie, const void *hdr,
                         size_t hdr_len, const void *data, size_t data_len,
                         pami_endpoint_t origin, pami_recv_t *recv)
{
    slot_t *s = cookie;
    mesh_t *m = s->m;
    pami_task_t task = 99;
    size_t      o    = 99;
    if (pami_endpoint_query(origin, &task, &o) != PAMI_SUCCESS ||
        task != 0 || o >= m->w->n || o == s->target) {
        m->bad_origin++;
        return;
    }
    if (ctx != m->w->ctx[s->target])
        m->bad_ctx++;
    msg_t *msg = &m->msgs[o][s->target][s->kase];
    msg->received++;
    if (m->next[o][s->target] != s->kase)
        m->out_of_order++;
    m->next[o][s->target] = s->kase + 1;

    const msg_case_t *c = &m->cases[s->kase];
    if (hdr_len != c->hdr || data_len != c->data) {
        m->bad_size++;
        return;
    }
    if (hdr_len > 0 && (hdr == NULL ||
                        !matches(hdr, hdr_len, o, s->target, s->kase, 0)))
        m->bad_header++;

    if (data_len > 0 && data == NULL) {
        /* Not all here: say where it goes. */
        if (recv == NULL) {
            m->bad_recv++;
            return;
        }
        landing_t *l = calloc(1, sizeof(*l) + data_len);
        assert_non_null(l);
        l->msg         = msg;
        recv->addr     = l->data;
        recv->local_fn = mesh_recv_done;
        recv->cookie   = l;
        return;
    }
    if (recv != NULL)
        m->bad_recv++; /* recv is NULL when the payload is all here */
    if (data_len > 0 && !matches(data, data_len, o, s->target, s->kase, 1))
        m->bad_data++;
    else
        msg->data_ok++;
}

static void mesh_remote(pami_context_t ctx, void *cookie,
                        pami_result_t result)
{
    msg_t *msg = cookie;
    cb_count_remote(ctx, &msg->calls, result);
    /* remote_fn means the target's receive completed. */
    if (msg->data_ok == 0)
        msg->remote_before_data++;
}

static void mesh_local(pami_context_t ctx, void *cookie, pami_result_t result)
{
    msg_t *msg = cookie;
    cb_count_local(ctx, &msg->calls, result);
}

static bool mesh_done(mesh_t *m)
{
    for (size_t o = 0; o < m->w->n; o++)
        for (size_t t = 0; t < m->w->n; t++)
            for (size_t k = 0; o != t && k < m->ncases; k++) {
                msg_t *msg = &m->msgs[o][t][k];
                if (msg->received == 0 || msg->data_ok == 0)
                    return false;
                if (!m->cases[k].immediate &&
                    (msg->calls.local == 0 ||
                     msg->calls.remote == 0))
                    return false;
            }
    return true;
}

static void add_case(mesh_t *m, size_t hdr, size_t data, bool immediate)
{
    assert_true(m->ncases < MAX_CASES);
    m->cases[m->ncases++] = (msg_case_t){hdr, data, immediate};
}

static void test_all_to_all(void **state)
{
    (void)state;
    mesh_t *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    world_t *w = m->w = world_up(MAX_CTX);
    size_t hmax = w->attr.header_max, rndv = w->attr.rndv_threshold;

    /* Immediate: empty, 1-byte header or data, a little of both. Sizes up
     * to immediate_max have their own test (test_immediate_limit). */
    add_case(m, 0, 0, true);
    add_case(m, 1, 0, true);
    add_case(m, 0, 1, true);
    add_case(m, 1, 1, true);
    add_case(m, 16, 32, true);
    /* pami_send: the same, then 64 KiB and beyond the rendezvous
     * threshold, with small and largest headers. */
    add_case(m, 0, 0, false);
    add_case(m, 1, 1, false);
    add_case(m, hmax, 0, false);
    add_case(m, hmax, 1, false);
    add_case(m, 8, rndv - 1, false);
    add_case(m, 1, 65536, false);
    add_case(m, hmax, 65536, false);
    add_case(m, 0, 1 << 20, false);

    for (size_t t = 0; t < w->n; t++)
        for (size_t k = 0; k < m->ncases; k++) {
            m->slots[t][k] = (slot_t){m, t, k};
            assert_int_equal(pami_dispatch_set(w->ctx[t], k, mesh_handler,
                                               &m->slots[t][k], NULL),
                             PAMI_SUCCESS);
        }

    uint8_t *hbuf = malloc(hmax);
    assert_non_null(hbuf);
    for (size_t o = 0; o < w->n; o++) {
        for (size_t t = 0; t < w->n; t++) {
            if (o == t)
                continue;
            pami_endpoint_t dest = endpoint(w, t);
            for (size_t k = 0; k < m->ncases; k++) {
                const msg_case_t *c = &m->cases[k];
                msg_t *msg = &m->msgs[o][t][k];
                *msg = (msg_t){.m = m, .o = o, .t = t, .k = k};
                msg->send_buf = malloc(c->data + 1);
                assert_non_null(msg->send_buf);
                fill(hbuf, c->hdr, o, t, k, 0);
                fill(msg->send_buf, c->data, o, t, k, 1);
                pami_send_immediate_t p = {
                    .dest = dest, .dispatch = k,
                    .header = c->hdr ? hbuf : NULL, .header_len = c->hdr,
                    .data = c->data ? msg->send_buf : NULL,
                    .data_len = c->data,
                };
                pami_result_t rc;
                if (c->immediate) {
                    rc = send_immediate_retry(w, o, &p);
                    /* Buffers are reusable at once: scribble on them. */
                    memset(msg->send_buf, 0xee, c->data);
                } else {
                    pami_send_t s = {.send = p, .local_fn = mesh_local,
                                     .remote_fn = mesh_remote,
                                     .cookie = msg};
                    rc = pami_send(w->ctx[o], &s);
                }
                memset(hbuf, 0xdd, c->hdr); /* headers are copied */
                if (rc != PAMI_SUCCESS)
                    fail_msg("%s %zu -> %zu, header %zu, data %zu: %s",
                             c->immediate ? "send_immediate" : "send", o, t,
                             c->hdr, c->data, pami_error_text(rc));
            }
        }
    }
    free(hbuf);

    PROGRESS_UNTIL(w, mesh_done(m));
    progress_for(w, QUIET_MS);

    for (size_t o = 0; o < w->n; o++)
        for (size_t t = 0; t < w->n; t++)
            for (size_t k = 0; o != t && k < m->ncases; k++) {
                const msg_case_t *c   = &m->cases[k];
                msg_t            *msg = &m->msgs[o][t][k];
                if (msg->received != 1 || msg->data_ok != 1)
                    fail_msg("%zu -> %zu case %zu (header %zu, data %zu): "
                             "handled %d times, payload verified %d times",
                             o, t, k, c->hdr, c->data, msg->received,
                             msg->data_ok);
                if (msg->recv_calls > 1)
                    fail_msg("%zu -> %zu case %zu: recv local_fn ran %d "
                             "times", o, t, k, msg->recv_calls);
                if (c->immediate) {
                    assert_int_equal(msg->calls.local, 0);
                    assert_int_equal(msg->calls.remote, 0);
                } else if (msg->calls.local != 1 ||
                           msg->calls.remote != 1 ||
                           msg->calls.local_rc != PAMI_SUCCESS ||
                           msg->calls.remote_rc != PAMI_SUCCESS) {
                    fail_msg("%zu -> %zu case %zu (header %zu, data %zu): "
                             "local_fn %d times (%s), remote_fn %d times "
                             "(%s); want once each, success", o, t, k,
                             c->hdr, c->data, msg->calls.local,
                             pami_error_text(msg->calls.local_rc),
                             msg->calls.remote,
                             pami_error_text(msg->calls.remote_rc));
                }
                assert_int_equal(msg->remote_before_data, 0);
            }
    assert_int_equal(m->bad_origin, 0);
    assert_int_equal(m->bad_ctx, 0);
    assert_int_equal(m->bad_size, 0);
    assert_int_equal(m->bad_header, 0);
    assert_int_equal(m->bad_data, 0);
    assert_int_equal(m->bad_recv, 0);
    /* Per origin context and target endpoint, handlers run in send order,
     * across dispatch ids and the rendezvous threshold. */
    assert_int_equal(m->out_of_order, 0);

    for (size_t i = 0; i < w->n; i++) {
        pami_context_stats_t st;
        assert_int_equal(pami_context_stats(w->ctx[i], &st), PAMI_SUCCESS);
        assert_int_equal(st.sends, (w->n - 1) * m->ncases);
        assert_int_equal(st.receives, (w->n - 1) * m->ncases);
        assert_int_equal(st.dropped_unknown, 0);
        assert_int_equal(st.dropped_malformed, 0);
    }

    world_down(w);
    for (size_t o = 0; o < MAX_CTX; o++)
        for (size_t t = 0; t < MAX_CTX; t++)
            for (size_t k = 0; k < m->ncases; k++)
                free(m->msgs[o][t][k].send_buf);
    free(m);
}

/* ------------------------------------------------------------------------ */
/* immediate_limit: every split of immediate_max bytes goes through          */
/* ------------------------------------------------------------------------ */

typedef struct {
    int    calls;
    int    bad;
    size_t hdr, data;
} imm_check_t;

static void imm_handler(pami_context_t ctx, void *cookie, const void *hdr,
                        size_t hdr_len, const void *data, size_t data_len,
                        pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)origin;
    imm_check_t *c = cookie;
    c->calls++;
    if (hdr_len != c->hdr || data_len != c->data || recv != NULL ||
        (hdr_len > 0 && !matches(hdr, hdr_len, 0, 1, 0, 0)) ||
        (data_len > 0 && (data == NULL ||
                          !matches(data, data_len, 0, 1, 0, 1))))
        c->bad++;
}

/* pami_send_immediate accepts header_len + data_len <= immediate_max; each
 * such message must get through after at most a short run of PAMI_EAGAIN
 * (not forever, whatever transport UCX picked). */
static void test_immediate_limit(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    size_t imax = w->attr.immediate_max, hmax = w->attr.header_max;
    size_t himm = hmax < imax ? hmax : imax;
    imm_check_t check = {0};
    assert_int_equal(pami_dispatch_set(w->ctx[1], 0, imm_handler, &check,
                                       NULL), PAMI_SUCCESS);
    uint8_t *hbuf = malloc(himm + 1), *dbuf = malloc(imax + 1);
    assert_non_null(hbuf);
    assert_non_null(dbuf);
    fill(hbuf, himm, 0, 1, 0, 0);
    fill(dbuf, imax, 0, 1, 0, 1);

    const size_t splits[][2] = {
        {0, 0}, {16, 16}, {64, 64}, {himm, 0}, {0, imax},
        {imax / 2, imax - imax / 2}, {1, imax - 1}, {himm, imax - himm},
    };
    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        check.hdr  = splits[i][0];
        check.data = splits[i][1];
        pami_send_immediate_t p = {
            .dest = endpoint(w, 1), .dispatch = 0,
            .header = hbuf, .header_len = check.hdr,
            .data = dbuf, .data_len = check.data,
        };
        int before = check.calls;
        pami_result_t rc = send_immediate_retry(w, 0, &p);
        if (rc != PAMI_SUCCESS)
            fail_msg("send_immediate of header %zu + data %zu bytes "
                     "(immediate_max %zu): still %s after %d ms of retries",
                     check.hdr, check.data, imax, pami_error_text(rc),
                     WAIT_MS);
        PROGRESS_UNTIL(w, check.calls > before);
        assert_int_equal(check.calls, before + 1);
        assert_int_equal(check.bad, 0);
    }
    free(hbuf);
    free(dbuf);
    world_down(w);
}

/* ------------------------------------------------------------------------ */
/* lazy_connect: a context answers a peer it has no endpoint to yet, from    */
/* inside the receive path, over TCP                                         */
/* ------------------------------------------------------------------------ */

static void expect_child_ok(const char *name, const char *what)
{
    int rc = run_child(name);
    if (rc != 0)
        fail_msg("%s: the child %s %d", what,
                 rc >= 128 ? "died of signal" : "exited with",
                 rc >= 128 ? rc - 128 : rc);
}

/* The children use no cmocka asserts; they exit 0 on success. */
typedef struct {
    int pings;
    int pongs;
    int remote_calls;
} lazy_t;

static void lazy_ping(pami_context_t ctx, void *cookie, const void *hdr,
                      size_t hdr_len, const void *data, size_t data_len,
                      pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)hdr, (void)hdr_len, (void)data, (void)data_len, (void)recv;
    lazy_t *l = cookie;
    if (l->pings++ == 0 && getenv("LAZY_REPLY") != NULL) {
        pami_send_t s = {.send = {.dest = origin, .dispatch = 1}};
        if (pami_send(ctx, &s) != PAMI_SUCCESS)
            l->pongs = -1000;
    }
}

static void lazy_pong(pami_context_t ctx, void *cookie, const void *hdr,
                      size_t hdr_len, const void *data, size_t data_len,
                      pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)hdr, (void)hdr_len, (void)data, (void)data_len;
    (void)origin, (void)recv;
    lazy_t *l = cookie;
    l->pongs++;
}

static void lazy_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    lazy_t *l = cookie;
    l->remote_calls += rc == PAMI_SUCCESS ? 1 : 1000;
}

/* Context 0 reaches context 1 first; then context 1 must answer (the
 * completion ack of a remote_fn send, or a handler's own reply) over an
 * endpoint it creates on the spot. */
static int lazy_child(bool handler_reply)
{
    setenv("UCX_TLS", "tcp", 1);
    if (handler_reply)
        setenv("LAZY_REPLY", "1", 1);
    lazy_t l = {0};
    pami_client_t   client;
    pami_context_t  ctx[2];
    pami_endpoint_t dest;
    if (pami_client_create("unit", NULL, &client) != PAMI_SUCCESS ||
        pami_context_createv(client, NULL, 2, ctx) != PAMI_SUCCESS ||
        pami_dispatch_set(ctx[1], 0, lazy_ping, &l, NULL) != PAMI_SUCCESS ||
        pami_dispatch_set(ctx[0], 1, lazy_pong, &l, NULL) != PAMI_SUCCESS ||
        pami_endpoint_create(client, 0, 1, &dest) != PAMI_SUCCESS)
        return 2;
    /* The message that makes context 1 connect back is followed by one
     * more on the same connection before context 1 progresses. */
    pami_send_immediate_t p = {.dest = dest, .dispatch = 0};
    for (int i = 0; i < 2; i++) {
        uint64_t end = now_ms() + WAIT_MS;
        pami_result_t rc;
        while ((rc = pami_send_immediate(ctx[0], &p)) == PAMI_EAGAIN &&
               now_ms() < end) {
            pami_context_advance(ctx[0], 1);
            pami_context_advance(ctx[1], 1);
        }
        if (rc != PAMI_SUCCESS)
            return 3;
        if (i == 0 && !handler_reply) {
            pami_send_t s = {.send = p, .remote_fn = lazy_remote,
                             .cookie = &l};
            if (pami_send(ctx[0], &s) != PAMI_SUCCESS)
                return 4;
        }
    }
    uint64_t end = now_ms() + WAIT_MS;
    while ((handler_reply ? l.pongs == 0 : l.remote_calls == 0) &&
           now_ms() < end) {
        pami_context_advance(ctx[0], 1);
        pami_context_advance(ctx[1], 1);
    }
    if (handler_reply ? l.pongs != 1 : l.remote_calls != 1) {
        fprintf(stderr, "pongs %d, remote_fn calls %d\n", l.pongs,
                l.remote_calls);
        return 5;
    }
    pami_client_destroy(&client);
    return 0;
}

static void test_lazy_connect_ack(void **state)
{
    (void)state;
    expect_child_ok("lazy-ack", "a remote_fn send whose ack needs a new "
                                "endpoint back to the origin (UCX_TLS=tcp)");
}

static void test_lazy_connect_reply(void **state)
{
    (void)state;
    expect_child_ok("lazy-reply", "a handler replying to its origin over a "
                                  "new endpoint (UCX_TLS=tcp)");
}

/* ------------------------------------------------------------------------ */
/* handler_rules                                                             */
/* ------------------------------------------------------------------------ */

enum { ID_PING = 1, ID_PONG_IMM = 2, ID_PONG_SEND = 3 };

typedef struct {
    world_t      *w;
    int           pings;
    pami_result_t advance_rc;
    pami_result_t wait_rc;
    pami_result_t fence_rc;
    pami_result_t destroy_rc;
    pami_result_t reply_imm_rc;
    pami_result_t reply_send_rc;
    cb_count_t    reply_calls;
    int           pong_imm;
    int           pong_send;
    int           pong_bad;
    pami_result_t cb_advance_rc;
    int           cb_calls;
} rules_t;

static const char pong_text[] = "pong";

static void ping_handler(pami_context_t ctx, void *cookie, const void *hdr,
                         size_t hdr_len, const void *data, size_t data_len,
                         pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)hdr, (void)hdr_len, (void)data, (void)data_len, (void)recv;
    rules_t *r = cookie;
    r->pings++;
    r->advance_rc = pami_context_advance(ctx, 1);
    r->wait_rc    = pami_context_wait(ctx, 0);
    r->fence_rc   = pami_dispatch_fence(r->w->client);
    r->destroy_rc = pami_context_destroyv(r->w->ctx, r->w->n);

    pami_send_immediate_t p = {.dest = origin, .dispatch = ID_PONG_IMM,
                               .header = pong_text,
                               .header_len = sizeof(pong_text)};
    r->reply_imm_rc = pami_send_immediate(ctx, &p);
    p.dispatch = ID_PONG_SEND;
    pami_send_t s = {.send = p, .local_fn = cb_count_local,
                     .remote_fn = cb_count_remote, .cookie = &r->reply_calls};
    r->reply_send_rc = pami_send(ctx, &s);
}

/* A reply from context 1 carrying pong_text; counts into *count. */
static void pong(rules_t *r, int *count, const void *hdr, size_t hdr_len,
                 pami_endpoint_t origin)
{
    size_t off = 99;
    if (hdr_len != sizeof(pong_text) || memcmp(hdr, pong_text, hdr_len) != 0 ||
        pami_endpoint_query(origin, NULL, &off) != PAMI_SUCCESS || off != 1)
        r->pong_bad++;
    else
        (*count)++;
}

static void pong_imm_handler(pami_context_t ctx, void *cookie,
                             const void *hdr, size_t hdr_len,
                             const void *data, size_t data_len,
                             pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)data, (void)data_len, (void)recv;
    rules_t *r = cookie;
    pong(r, &r->pong_imm, hdr, hdr_len, origin);
}

static void pong_send_handler(pami_context_t ctx, void *cookie,
                              const void *hdr, size_t hdr_len,
                              const void *data, size_t data_len,
                              pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)data, (void)data_len, (void)recv;
    rules_t *r = cookie;
    pong(r, &r->pong_send, hdr, hdr_len, origin);
}

/* A completion callback is under the same rules as a handler. */
static void cb_advances(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)rc;
    rules_t *r = cookie;
    r->cb_calls++;
    r->cb_advance_rc = pami_context_advance(ctx, 1);
}

static void test_handler_rules(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    rules_t  r = {.w = w, .advance_rc = -1, .wait_rc = -1, .fence_rc = -1,
                  .destroy_rc = -1, .reply_imm_rc = -1,
                  .reply_send_rc = -1, .cb_advance_rc = -1};
    assert_int_equal(pami_dispatch_set(w->ctx[1], ID_PING, ping_handler, &r,
                                       NULL), PAMI_SUCCESS);
    assert_int_equal(pami_dispatch_set(w->ctx[0], ID_PONG_IMM, pong_imm_handler,
                                       &r, NULL), PAMI_SUCCESS);
    assert_int_equal(pami_dispatch_set(w->ctx[0], ID_PONG_SEND, pong_send_handler,
                                       &r, NULL), PAMI_SUCCESS);

    /* Wire 1 -> 0 beforehand: a handler cannot advance to retry an
     * immediate send that finds the endpoint not ready. */
    counter_t warm = {0};
    assert_int_equal(pami_dispatch_set(w->ctx[0], 9, count_handler, &warm,
                                       NULL), PAMI_SUCCESS);
    pami_send_immediate_t p = {.dest = endpoint(w, 0), .dispatch = 9};
    assert_int_equal(send_immediate_retry(w, 1, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, warm.calls == 1);
    assert_int_equal(warm.calls, 1);

    pami_send_t s = {.send = {.dest = endpoint(w, 1), .dispatch = ID_PING},
                     .local_fn = cb_advances, .cookie = &r};
    assert_int_equal(pami_send(w->ctx[0], &s), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, r.pings == 1 && r.pong_imm == 1 && r.pong_send == 1 &&
                          r.reply_calls.remote == 1 &&
                          r.cb_calls == 1);
    progress_for(w, QUIET_MS);

    assert_int_equal(r.pings, 1);
    if (r.advance_rc != PAMI_IN_HANDLER || r.wait_rc != PAMI_IN_HANDLER)
        fail_msg("from a handler: advance gave %s, wait gave %s; want "
                 "PAMI_IN_HANDLER", pami_error_text(r.advance_rc),
                 pami_error_text(r.wait_rc));
    assert_int_equal(r.fence_rc, PAMI_IN_HANDLER);
    assert_int_equal(r.destroy_rc, PAMI_IN_HANDLER);
    assert_non_null(w->ctx[0]);
    assert_non_null(w->ctx[1]);

    /* Sends from the handler work and reach the origin. */
    assert_int_equal(r.reply_imm_rc, PAMI_SUCCESS);
    assert_int_equal(r.reply_send_rc, PAMI_SUCCESS);
    assert_int_equal(r.pong_bad, 0);
    assert_int_equal(r.pong_imm, 1);
    assert_int_equal(r.pong_send, 1);
    assert_int_equal(r.reply_calls.local, 1);
    assert_int_equal(r.reply_calls.remote, 1);
    assert_int_equal(r.reply_calls.remote_rc, PAMI_SUCCESS);

    assert_int_equal(r.cb_calls, 1);
    assert_int_equal(r.cb_advance_rc, PAMI_IN_HANDLER);

    /* Outside handlers, advance and wait are allowed again. */
    pami_result_t rc = pami_context_advance(w->ctx[1], 1);
    assert_true(rc == PAMI_SUCCESS || rc == PAMI_EAGAIN);
    rc = pami_context_wait(w->ctx[1], 0);
    assert_true(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT);
    world_down(w);
}

/* A handler of context 1 advances context 0 (allowed); a handler of
 * context 0 run by that advance must still be refused context 1. */
enum { ID_NEST_OUTER = 4, ID_NEST_INNER = 5, ID_NEST_WARM = 6 };

typedef struct {
    world_t      *w;
    int           outer_calls, inner_calls;
    pami_result_t inner_send_rc, outer_advance_rc;
    pami_result_t inner_advance_rc, inner_wait_rc, inner_advance_own_rc;
} nest_t;

static void nest_inner_handler(pami_context_t ctx, void *cookie,
                               const void *hdr, size_t hdr_len,
                               const void *data, size_t data_len,
                               pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)hdr, (void)hdr_len, (void)data, (void)data_len,
        (void)origin, (void)recv;
    nest_t *n = cookie;
    n->inner_calls++;
    n->inner_advance_rc     = pami_context_advance(n->w->ctx[1], 1);
    n->inner_wait_rc        = pami_context_wait(n->w->ctx[1], 0);
    n->inner_advance_own_rc = pami_context_advance(n->w->ctx[0], 1);
}

static void nest_outer_handler(pami_context_t ctx, void *cookie,
                               const void *hdr, size_t hdr_len,
                               const void *data, size_t data_len,
                               pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)hdr, (void)hdr_len, (void)data, (void)data_len, (void)origin,
        (void)recv;
    nest_t *n = cookie;
    n->outer_calls++;
    pami_send_immediate_t p = {.dest = endpoint(n->w, 0),
                               .dispatch = ID_NEST_INNER};
    n->inner_send_rc = pami_send_immediate(ctx, &p);
    for (int i = 0; i < 100000 && n->inner_calls == 0; i++) {
        n->outer_advance_rc = pami_context_advance(n->w->ctx[0], 1);
        if (n->outer_advance_rc != PAMI_SUCCESS &&
            n->outer_advance_rc != PAMI_EAGAIN)
            break;
    }
}

static void test_handler_nested_contexts(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    nest_t   n = {.w = w, .inner_send_rc = -1, .outer_advance_rc = -1,
                  .inner_advance_rc = -1, .inner_wait_rc = -1,
                  .inner_advance_own_rc = -1};
    counter_t warm = {0};
    assert_int_equal(pami_dispatch_set(w->ctx[1], ID_NEST_OUTER,
                                       nest_outer_handler, &n, NULL),
                     PAMI_SUCCESS);
    assert_int_equal(pami_dispatch_set(w->ctx[0], ID_NEST_INNER,
                                       nest_inner_handler, &n, NULL),
                     PAMI_SUCCESS);
    assert_int_equal(pami_dispatch_set(w->ctx[0], ID_NEST_WARM, count_handler,
                                       &warm, NULL), PAMI_SUCCESS);
    /* Wire 1 -> 0 first, as in handler_rules. */
    pami_send_immediate_t p = {.dest = endpoint(w, 0), .dispatch = ID_NEST_WARM};
    assert_int_equal(send_immediate_retry(w, 1, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, warm.calls == 1);

    p = (pami_send_immediate_t){.dest = endpoint(w, 1),
                                .dispatch = ID_NEST_OUTER};
    assert_int_equal(send_immediate_retry(w, 0, &p), PAMI_SUCCESS);
    PROGRESS_UNTIL(w, n.outer_calls == 1 && n.inner_calls == 1);

    assert_int_equal(n.outer_calls, 1);
    assert_int_equal(n.inner_send_rc, PAMI_SUCCESS);
    assert_int_equal(n.inner_calls, 1);
    assert_true(n.outer_advance_rc == PAMI_SUCCESS ||
                n.outer_advance_rc == PAMI_EAGAIN);
    if (n.inner_advance_rc != PAMI_IN_HANDLER ||
        n.inner_wait_rc != PAMI_IN_HANDLER)
        fail_msg("context 1 from a handler of 0 run inside a handler of 1: "
                 "advance gave %s, wait gave %s; want PAMI_IN_HANDLER",
                 pami_error_text(n.inner_advance_rc),
                 pami_error_text(n.inner_wait_rc));
    assert_int_equal(n.inner_advance_own_rc, PAMI_IN_HANDLER);
    world_down(w);
}

/* With an argument, run only the group of that name. */
#define RUN(name, tests)                                                     \
    (argc < 2 || strcmp(argv[1], name) == 0                                  \
         ? cmocka_run_group_tests_name(name, tests, NULL, NULL)              \
         : 0)

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        if (strcmp(argv[2], "lazy-ack") == 0)
            return lazy_child(false);
        if (strcmp(argv[2], "lazy-reply") == 0)
            return lazy_child(true);
        return 99;
    }
    const struct CMUnitTest dispatch[] = {
        cmocka_unit_test(test_dispatch_bounds),
        cmocka_unit_test(test_dispatch_unknown_dropped),
        cmocka_unit_test(test_dispatch_unknown_remote_fn),
    };
    const struct CMUnitTest contexts[] = {
        cmocka_unit_test(test_all_to_all),
    };
    const struct CMUnitTest immediate_limit[] = {
        cmocka_unit_test(test_immediate_limit),
    };
    const struct CMUnitTest lazy_connect[] = {
        cmocka_unit_test(test_lazy_connect_ack),
        cmocka_unit_test(test_lazy_connect_reply),
    };
    const struct CMUnitTest handler_rules[] = {
        cmocka_unit_test(test_handler_rules),
        cmocka_unit_test(test_handler_nested_contexts),
    };
    int failed = 0;
    failed += RUN("dispatch", dispatch);
    failed += RUN("contexts", contexts);
    failed += RUN("immediate_limit", immediate_limit);
    failed += RUN("lazy_connect", lazy_connect);
    failed += RUN("handler_rules", handler_rules);
    return failed;
}

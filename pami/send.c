/*
 * The send side of active messages: immediate sends, sends with callbacks,
 * and the core's own small messages (acks, barrier). Every send that needs
 * a request goes through pami_submit(), which keeps the order of a peer's
 * sends when some of them must wait for an endpoint.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "params.h"
#include "pami_test.h"

/* limit: the first id the caller may not send on; PAMI_DISPATCH_USER_MAX
 * for the program, the end of the protocols' ids for the protocol SDK
 * (which checked the id against the protocol's own block already). */
static inline pami_result_t check_send(const pami_send_immediate_t *p,
                                       size_t limit)
{
    if (unlikely(p->dispatch >= limit)) {
        if (limit == PAMI_DISPATCH_USER_MAX)
            pami_warn("send", "dispatch id %zu is out of range: user ids "
                              "are 0..%d; the ids above are reserved for "
                              "protocols (pami_protocol_send)", p->dispatch,
                      PAMI_DISPATCH_USER_MAX - 1);
        else
            pami_warn("send", "dispatch id %zu is not a protocol id",
                      p->dispatch);
        return PAMI_INVAL;
    }
    if (unlikely(p->header_len > PAMI_HEADER_MAX)) {
        pami_warn("send", "header of %zu bytes exceeds the limit of %d",
                  p->header_len, PAMI_HEADER_MAX);
        return PAMI_INVAL;
    }
    if (unlikely((p->header_len > 0 && p->header == NULL) ||
                 (p->data_len > 0 && p->data == NULL))) {
        pami_warn("send", "NULL header or data with a non-zero length");
        return PAMI_INVAL;
    }
    return PAMI_SUCCESS;
}

static inline void fill_hdr(struct pami_context *ctx, pami_am_hdr_t *h,
                            size_t dispatch, uint8_t flags)
{
    h->origin_task = ctx->client->task;
    h->dispatch    = (uint16_t)dispatch;
    h->origin_ctx  = (uint8_t)ctx->offset;
    h->flags       = flags;
}

/* Hands a request to the transport; its callbacks run from advance. */
static void start_send(struct pami_context *ctx, pami_peer_t *peer,
                       pami_request_t *req)
{
    req->tp.fn = pami_request_tp_done;
    pami_request_local_start(req);
    int trc = ctx->tp->am_send(peer->ep, req->hdr, req->hdr_len, req->data,
                               req->data_len, req->tp_flags, &req->tp);
    if (trc == 1)
        return;
    pami_request_local_end(req);
    if (trc == 0)
        pami_request_done(req, PAMI_SUCCESS);
    else
        pami_request_fail(req, pami_result_from_errno(trc));
}

static void defer(struct pami_context *ctx, pami_request_t *req)
{
    req->next = NULL;
    *ctx->deferred_tail = req;
    ctx->deferred_tail  = &req->next;
}

/* Any failure is reported through the request. */
void pami_submit(struct pami_context *ctx, pami_request_t *req)
{
    /* Gathered sends were called before this one: they leave first. */
    if (unlikely(ctx->sends.n != 0))
        pami_sends_flush(ctx);
    pami_peer_t  *peer;
    pami_result_t rc = ctx->deferred_head != NULL
                           ? PAMI_EAGAIN
                           : pami_peer_by_index(ctx, req->peer, &peer);
    if (likely(rc == PAMI_SUCCESS)) {
        if (req->kind != REQ_ACK_SEND)
            pami_live_sent(ctx, req->peer);
        if (req->rndv && req->kind == REQ_RECV)
            pami_rndv_start_get(ctx, peer, req);
        else
            start_send(ctx, peer, req);
    } else if (rc == PAMI_EAGAIN)
        defer(ctx, req);
    else
        pami_request_fail(req, rc);
}

unsigned pami_send_deferred(struct pami_context *ctx)
{
    pami_request_t *req = ctx->deferred_head;
    unsigned n = 0;
    ctx->deferred_head = NULL;
    ctx->deferred_tail = &ctx->deferred_head;
    while (req != NULL) {
        pami_request_t *next = req->next;
        pami_submit(ctx, req);
        req = next;
        n++;
    }
    return n;
}

/* The transport could not take an immediate send at once (or the peer has
 * no endpoint yet): copy it, so the caller's buffers are free on return
 * as promised, and send the copy like any other. */
static pami_result_t send_bounced(struct pami_context *ctx, uint32_t index,
                                  const pami_send_immediate_t *p)
{
    size_t hlen = sizeof(pami_am_hdr_t) + p->header_len;
    if (ctx->bounced >= PAMI_BOUNCE_MAX)
        return PAMI_EAGAIN;
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return PAMI_ENOMEM;
    if (req->bounce == NULL) {
        req->bounce = malloc(sizeof(pami_am_hdr_t) + PAMI_HEADER_MAX +
                             PAMI_IMMEDIATE_LIMIT);
        if (req->bounce == NULL) {
            pami_request_put(req);
            return PAMI_ENOMEM;
        }
    }
    req->kind     = REQ_IMM;
    req->peer     = index;
    req->hdr      = req->bounce;
    req->hdr_len  = hlen;
    req->data     = req->bounce + hlen;
    req->data_len = p->data_len;
    req->tp_flags = TP_SEND_EAGER;
    fill_hdr(ctx, (pami_am_hdr_t *)req->bounce, p->dispatch, 0);
    if (p->header_len > 0)
        memcpy(req->bounce + sizeof(pami_am_hdr_t), p->header, p->header_len);
    if (p->data_len > 0)
        memcpy(req->bounce + hlen, p->data, p->data_len);
    req->imm_count = 1;
    ctx->bounced++;
    if (ctx->peers[index].backlog < UINT16_MAX)
        ctx->peers[index].backlog++;
    pami_submit(ctx, req);
    return PAMI_SUCCESS;
}

/* The checks of send_immediate one by one, with their log lines: run
 * only when the combined test of the fast path failed. */
static pami_result_t immediate_refused(struct pami_context *ctx,
                                       const pami_send_immediate_t *p,
                                       size_t limit)
{
    pami_result_t rc = check_send(p, limit);
    if (rc != PAMI_SUCCESS)
        return rc;
    size_t imax = ctx->client->config.immediate_max;
    if (p->header_len > imax || p->data_len > imax - p->header_len) {
        pami_warn("send", "send_immediate of %zu + %zu bytes exceeds the "
                          "limit of %zu; use pami_send", p->header_len,
                  p->data_len, imax);
        return PAMI_INVAL;
    }
    uint32_t index;
    rc = pami_peer_index(ctx, p->dest, &index);
    return rc != PAMI_SUCCESS ? rc : PAMI_ERROR; /* the tests disagree */
}

/* Copies n bytes without a call for the small sizes of the hot path. */
static inline void copy_small(uint8_t *dst, const void *src, size_t n)
{
    const uint8_t *s = src;
    if (n >= 8 && n <= 16) {
        memcpy(dst, s, 8);
        memcpy(dst + n - 8, s + n - 8, 8);
    } else if (n > 0) {
        memcpy(dst, s, n);
    }
}

/* Offers a message to the transport for immediate completion: small ones
 * whole as one payload, which UCX sends cheaper than two parts (a larger
 * one's copy costs more than that part: counted in docs/PERFORMANCE.md,
 * "Across nodes (s9, second round)"), else pami's header and the data as
 * two parts. The transport's result (0: taken, the buffers are free). */
static inline __attribute__((always_inline)) int
send_now(struct pami_context *ctx, pami_peer_t *peer, size_t dispatch,
         const void *uhdr, size_t hl, const void *data, size_t dl)
{
    uint8_t buf[sizeof(pami_am_hdr_t) + PAMI_HEADER_MAX];
    if (hl + dl <= PAMI_PACKED_MAX) {
        uint16_t uhlen = (uint16_t)hl;
        uint8_t *o = buf + sizeof(pami_am_hdr_t);
        fill_hdr(ctx, (pami_am_hdr_t *)buf, dispatch, PAMI_AM_FLAG_PACKED);
        memcpy(o, &uhlen, sizeof(uhlen));
        o += sizeof(uhlen);
        copy_small(o, uhdr, hl);
        copy_small(o + hl, data, dl);
        return ctx->tp->am_send_imm(peer->ep, NULL, 0, buf,
                                    (size_t)(o - buf) + hl + dl);
    }
    fill_hdr(ctx, (pami_am_hdr_t *)buf, dispatch, 0);
    if (hl > 0)
        memcpy(buf + sizeof(pami_am_hdr_t), uhdr, hl);
    return ctx->tp->am_send_imm(peer->ep, buf, sizeof(pami_am_hdr_t) + hl,
                                data, dl);
}

/* A send of the program left in its call: one to the same endpoint
 * before the next progress is not alone (send_gather.c). */
static inline void sent_at_once(struct pami_context *ctx, pami_peer_t *peer)
{
    if (peer->gather)
        peer->sent_poll = ctx->polls;
}

/* An immediate send that follows another to its endpoint since the last
 * progress waits in the list (true); otherwise the list, whatever it
 * holds, leaves before it (false: send it now). */
static __attribute__((noinline)) bool
immediate_gathered(struct pami_context *ctx, pami_peer_t *peer,
                   uint32_t index, const pami_send_immediate_t *p)
{
    if (pami_sends_wanted(ctx, peer, index, (uint32_t)p->dispatch,
                          p->header_len + p->data_len) &&
        pami_sends_add(ctx, index, (uint16_t)p->dispatch, p->header,
                       p->header_len, p->data, p->data_len)) {
        ctx->stats.sends++;
        return true;
    }
    if (ctx->sends.n != 0)
        pami_sends_flush(ctx);
    return false;
}

/* Both send_immediate entries: the program's and the protocols'. */
static inline __attribute__((always_inline)) pami_result_t
send_immediate(struct pami_context *ctx, const pami_send_immediate_t *p,
               size_t limit)
{
    /* Every check the common case passes, before any log line. */
    pami_client_impl_t *c = ctx->client;
    size_t   hl = p->header_len, dl = p->data_len;
    size_t   imax = c->config.immediate_max;
    uint32_t task = pami_ep_task(p->dest), offset = pami_ep_offset(p->dest);
    uint32_t index = task * (uint32_t)c->num_contexts + offset;
    if (unlikely(p->dispatch >= limit ||
                 hl > PAMI_HEADER_MAX || hl > imax || dl > imax - hl ||
                 (hl != 0 && p->header == NULL) ||
                 (dl != 0 && p->data == NULL) || task >= c->size ||
                 offset >= c->num_contexts))
        return immediate_refused(ctx, p, limit);
    pami_result_t rc;
    if (unlikely(ctx->peers[index].failed))
        return PAMI_PEER_FAILED;
    pami_peer_t *peer;
    rc = ctx->deferred_head != NULL ? PAMI_EAGAIN
                                    : pami_peer_by_index(ctx, index, &peer);
    if (likely(rc == PAMI_SUCCESS)) {
        /* The list holds this endpoint's sends only while that count
         * holds: one test keeps the order. */
        if (unlikely(peer->sent_poll == ctx->polls) &&
            immediate_gathered(ctx, peer, index, p))
            return PAMI_SUCCESS;
        /* UCX 1.13 cannot copy the header for us; a stack copy is enough
         * because this attempt leaves now or not at all. */
        int trc = send_now(ctx, peer, p->dispatch, p->header, hl,
                           p->data, dl);
        if (likely(trc == 0)) {
            ctx->stats.sends++;
            pami_live_sent(ctx, index);
            sent_at_once(ctx, peer);
            return PAMI_SUCCESS;
        }
        rc = pami_result_from_errno(trc);
    }
    if (rc != PAMI_EAGAIN)
        return rc;
    rc = send_bounced(ctx, index, p);
    if (rc == PAMI_SUCCESS) {
        ctx->stats.sends++;
        sent_at_once(ctx, &ctx->peers[index]);
    }
    return rc;
}

/* The layouts a program may pass (params.h): the fields up to dispatch
 * are required; a later field missing is taken as zero. pami_send_t
 * holds a whole pami_send_immediate_t and may lack its callbacks. */
PAMI_PARAMS_LAYOUTS(send_immediate_layouts, pami_send_immediate_t,
                    PAMI_PARAMS_PREFIX(pami_send_immediate_t, dispatch),
                    PAMI_PARAMS_PREFIX(pami_send_immediate_t, header),
                    PAMI_PARAMS_PREFIX(pami_send_immediate_t, header_len),
                    PAMI_PARAMS_PREFIX(pami_send_immediate_t, data));
PAMI_PARAMS_LAYOUTS(send_layouts, pami_send_t,
                    PAMI_PARAMS_PREFIX(pami_send_t, send),
                    PAMI_PARAMS_PREFIX(pami_send_t, local_fn),
                    PAMI_PARAMS_PREFIX(pami_send_t, remote_fn));

pami_result_t pami_send_immediate_import(const pami_send_immediate_t *p,
                                         size_t size,
                                         pami_send_immediate_t *buf,
                                         const pami_send_immediate_t **out)
{
    return pami_params_in(&send_immediate_layouts, p, size, buf,
                          (const void **)out);
}

pami_result_t pami_send_import(const pami_send_t *p, size_t size,
                               pami_send_t *buf, const pami_send_t **out)
{
    return pami_params_in(&send_layouts, p, size, buf, (const void **)out);
}

pami_result_t pami_send_immediate_sized(pami_context_t ctx,
                                        const pami_send_immediate_t *p,
                                        size_t size)
{
    if (unlikely(ctx == NULL || p == NULL)) {
        pami_warn("send", "send_immediate with a NULL context or params");
        return PAMI_INVAL;
    }
    pami_send_immediate_t buf;
    pami_result_t rc = pami_send_immediate_import(p, size, &buf, &p);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    return send_immediate(ctx, p, PAMI_DISPATCH_USER_MAX);
}

pami_result_t pami_send_immediate_protocol(struct pami_context *ctx,
                                           const pami_send_immediate_t *p)
{
    return send_immediate(ctx, p,
                          PAMI_DISPATCH_USER_MAX + ctx->client->protocol_ids);
}

/* An eager send without remote_fn that the transport takes at once needs
 * no transport request nor header copy: only local_fn's report, which
 * runs from advance as always (the data is free already). PAMI_EAGAIN:
 * nothing left, the request path takes it, in order (nothing is queued
 * before it for this endpoint). */
/* A send whose data the transport or the list took: its request only
 * carries local_fn, queued at once so that it runs from advance. */
static void report_local(pami_request_t *req, uint32_t index,
                         const pami_send_t *p)
{
    req->kind     = REQ_SEND;
    req->peer     = index;
    req->local_fn = p->local_fn;
    req->cookie   = p->cookie;
    pami_request_done(req, PAMI_SUCCESS);
}

/* A send that follows another to its endpoint since the last progress,
 * copied into the list: the request only carries local_fn's report, as
 * for one the transport took at once. PAMI_EAGAIN: not taken. */
static __attribute__((noinline)) pami_result_t
send_gathered(struct pami_context *ctx, uint32_t index, const pami_send_t *p)
{
    const pami_send_immediate_t *s   = &p->send;
    pami_request_t              *req = NULL;
    if (p->local_fn != NULL && (req = pami_request_get(ctx)) == NULL)
        return PAMI_ENOMEM;
    if (!pami_sends_add(ctx, index, (uint16_t)s->dispatch, s->header,
                        s->header_len, s->data, s->data_len)) {
        if (req != NULL)
            pami_request_put(req);
        return PAMI_EAGAIN;
    }
    if (req != NULL)
        report_local(req, index, p);
    return PAMI_SUCCESS;
}

static pami_result_t send_eager_now(struct pami_context *ctx, uint32_t index,
                                    const pami_send_t *p)
{
    const pami_send_immediate_t *s = &p->send;
    size_t       len = s->header_len + s->data_len;
    pami_peer_t *peer;
    if (ctx->deferred_head != NULL ||
        pami_peer_by_index(ctx, index, &peer) != PAMI_SUCCESS)
        return PAMI_EAGAIN;
    if (unlikely(peer->sent_poll == ctx->polls)) {
        if (pami_sends_wanted(ctx, peer, index, (uint32_t)s->dispatch,
                              len)) {
            pami_result_t rc = send_gathered(ctx, index, p);
            if (rc != PAMI_EAGAIN)
                return rc;
        }
        if (ctx->sends.n != 0)
            pami_sends_flush(ctx);
    }
    if (len > PAMI_IMMEDIATE_LIMIT)
        return PAMI_EAGAIN;
    if (peer->now_refused != 0 && len >= peer->now_refused) {
        if (++peer->now_skipped < PAMI_NOW_RETRY)
            return PAMI_EAGAIN;
        peer->now_refused = 0;
    }
    pami_request_t *req = NULL;
    if (p->local_fn != NULL && (req = pami_request_get(ctx)) == NULL)
        return PAMI_ENOMEM;
    if (send_now(ctx, peer, s->dispatch, s->header,
                 s->header_len, s->data, s->data_len) != 0) {
        if (req != NULL)
            pami_request_put(req);
        peer->now_refused = (uint32_t)len;
        peer->now_skipped = 0;
        return PAMI_EAGAIN;
    }
    pami_live_sent(ctx, index);
    sent_at_once(ctx, peer);
    if (req != NULL)
        report_local(req, index, p);
    return PAMI_SUCCESS;
}

static pami_result_t send_any(struct pami_context *ctx, const pami_send_t *p,
                              size_t limit)
{
    const pami_send_immediate_t *s = &p->send;
    pami_result_t rc = check_send(s, limit);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    uint32_t index;
    rc = pami_peer_index(ctx, s->dest, &index);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    if (unlikely(ctx->peers[index].failed))
        return PAMI_PEER_FAILED;

    if (s->data_len >= ctx->client->config.rndv_threshold && s->data_len > 0) {
        rc = pami_rndv_send(ctx, index, p);
        if (rc == PAMI_SUCCESS)
            ctx->stats.sends++;
        return rc;
    }
    if (p->remote_fn == NULL) {
        rc = send_eager_now(ctx, index, p);
        if (rc != PAMI_EAGAIN) {
            if (rc == PAMI_SUCCESS)
                ctx->stats.sends++;
            return rc;
        }
    }
    pami_request_t *req = pami_request_get(ctx);
    if (unlikely(req == NULL))
        return PAMI_ENOMEM;
    bool   ack   = p->remote_fn != NULL;
    size_t extra = ack ? sizeof(uint64_t) : 0;
    if (pami_request_set_header(req, sizeof(pami_am_hdr_t) + extra +
                                         s->header_len) != 0) {
        pami_request_put(req);
        return PAMI_ENOMEM;
    }
    req->kind      = REQ_SEND;
    req->peer      = index;
    req->local_fn  = p->local_fn;
    req->remote_fn = p->remote_fn;
    req->cookie    = p->cookie;
    req->data      = s->data;
    req->data_len  = s->data_len;
    req->tp_flags  = TP_SEND_EAGER;
    fill_hdr(ctx, (pami_am_hdr_t *)req->hdr, s->dispatch,
             ack ? PAMI_AM_FLAG_ACK : 0);
    if (ack) {
        uint64_t cookie = pami_request_cookie(req);
        memcpy(req->hdr + sizeof(pami_am_hdr_t), &cookie, sizeof(cookie));
        /* Waiting starts before the send: the ack may come back within
         * the progress call that completes the send. */
        pami_request_wait_ack(req);
    }
    if (s->header_len > 0)
        memcpy(req->hdr + sizeof(pami_am_hdr_t) + extra, s->header,
               s->header_len);
    pami_submit(ctx, req);
    sent_at_once(ctx, &ctx->peers[index]);
    ctx->stats.sends++;
    return PAMI_SUCCESS;
}

pami_result_t pami_send_sized(pami_context_t ctx, const pami_send_t *p,
                              size_t size)
{
    if (unlikely(ctx == NULL || p == NULL)) {
        pami_warn("send", "send with a NULL context or params");
        return PAMI_INVAL;
    }
    pami_send_t   buf;
    pami_result_t rc = pami_send_import(p, size, &buf, &p);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    return send_any(ctx, p, PAMI_DISPATCH_USER_MAX);
}

pami_result_t pami_send_protocol(struct pami_context *ctx,
                                 const pami_send_t *p)
{
    return send_any(ctx, p, PAMI_DISPATCH_USER_MAX + ctx->client->protocol_ids);
}

/* Core messages carry a small payload where the user header would be. */
pami_result_t pami_send_internal(struct pami_context *ctx, uint32_t index,
                                 uint16_t dispatch, const void *payload,
                                 size_t len, pami_req_kind_t kind)
{
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL || pami_request_set_header(req, sizeof(pami_am_hdr_t) +
                                                        len) != 0) {
        if (req != NULL)
            pami_request_put(req);
        return PAMI_ENOMEM;
    }
    req->kind     = (uint8_t)kind;
    req->peer     = index;
    req->data     = NULL;
    req->data_len = 0;
    req->tp_flags = TP_SEND_EAGER;
    fill_hdr(ctx, (pami_am_hdr_t *)req->hdr, dispatch, 0);
    memcpy(req->hdr + sizeof(pami_am_hdr_t), payload, len);
    pami_submit(ctx, req);
    return PAMI_SUCCESS;
}

pami_result_t pami_send_core_now(struct pami_context *ctx, uint32_t index,
                                 uint16_t dispatch, const void *body,
                                 size_t body_len, const void *data,
                                 size_t data_len)
{
    uint8_t      hdr[PAMI_REQ_INLINE_HDR];
    pami_peer_t *peer;
    if (unlikely(ctx->sends.n != 0))
        pami_sends_flush(ctx);
    if (ctx->deferred_head != NULL ||
        data_len > ctx->client->config.immediate_max ||
        sizeof(pami_am_hdr_t) + body_len > sizeof(hdr) ||
        pami_peer_by_index(ctx, index, &peer) != PAMI_SUCCESS)
        return PAMI_EAGAIN;
    fill_hdr(ctx, (pami_am_hdr_t *)hdr, dispatch, 0);
    memcpy(hdr + sizeof(pami_am_hdr_t), body, body_len);
    return ctx->tp->am_send_imm(peer->ep, hdr, sizeof(pami_am_hdr_t) + body_len,
                                data, data_len) == 0
               ? PAMI_SUCCESS
               : PAMI_EAGAIN;
}

pami_result_t pami_send_ack(struct pami_context *ctx, uint32_t peer,
                            uint64_t cookie, pami_result_t result)
{
    pami_ack_t ack = {.cookie = cookie, .result = (int32_t)result};
    if (pami_send_core_now(ctx, peer, PAMI_DISPATCH_ACK, &ack, sizeof(ack),
                           NULL, 0) == PAMI_SUCCESS)
        return PAMI_SUCCESS;
    pami_result_t rc = pami_send_internal(ctx, peer, PAMI_DISPATCH_ACK, &ack,
                                          sizeof(ack), REQ_ACK_SEND);
    if (rc != PAMI_SUCCESS)
        pami_warn("send", "cannot send a completion ack: %s",
                  pami_error_text(rc));
    return rc;
}

/* pami_test.h: tests forge protocol packets through this. */
pami_result_t pami_test_send_raw_sized(pami_context_t ctx,
                                       const pami_send_immediate_t *p,
                                       size_t size)
{
    if (ctx == NULL || p == NULL) {
        pami_warn("send", "send_raw with a NULL context or params");
        return PAMI_INVAL;
    }
    pami_send_immediate_t buf;
    pami_result_t rc = pami_send_immediate_import(p, size, &buf, &p);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    /* Protocol ids not given out stay refused; the core's are open. */
    if (p->dispatch >= PAMI_DISPATCH_CORE_BASE)
        return send_immediate(ctx, p, PAMI_DISPATCH_TABLE_SIZE);
    return pami_send_immediate_protocol(ctx, p);
}

pami_result_t pami_test_send_raw_msg_sized(pami_context_t ctx,
                                           const pami_send_t *p, size_t size)
{
    if (ctx == NULL || p == NULL) {
        pami_warn("send", "send_raw_msg with a NULL context or params");
        return PAMI_INVAL;
    }
    pami_send_t   buf;
    pami_result_t rc = pami_send_import(p, size, &buf, &p);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    if (p->send.dispatch >= PAMI_DISPATCH_CORE_BASE)
        return send_any(ctx, p, PAMI_DISPATCH_TABLE_SIZE);
    return pami_send_protocol(ctx, p);
}

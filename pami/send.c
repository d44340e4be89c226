/*
 * The send side of active messages: immediate sends, sends with callbacks,
 * and the core's own small messages (acks, shutdown barrier).
 */
#include <string.h>

#include "internal.h"

static inline pami_result_t check_send(struct pami_context *ctx,
                                       const pami_send_immediate_t *p)
{
    if (unlikely(p->dispatch >= PAMI_DISPATCH_USER_MAX)) {
        pami_warn("send", "dispatch id %zu is out of range (user ids are "
                          "0..%d)", p->dispatch, PAMI_DISPATCH_USER_MAX - 1);
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
    (void)ctx;
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

pami_result_t pami_send_immediate(pami_context_t ctx,
                                  const pami_send_immediate_t *p)
{
    if (unlikely(ctx == NULL || p == NULL)) {
        pami_warn("send", "send_immediate with a NULL context or params");
        return PAMI_INVAL;
    }
    pami_result_t rc = check_send(ctx, p);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    if (unlikely(p->header_len + p->data_len > ctx->client->config.immediate_max)) {
        pami_warn("send", "send_immediate of %zu bytes exceeds the limit of "
                          "%zu; use pami_send", p->header_len + p->data_len,
                  ctx->client->config.immediate_max);
        return PAMI_INVAL;
    }
    pami_peer_t *peer;
    rc = pami_peer_get(ctx, p->dest, &peer);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;

    /* UCX 1.13 cannot copy the header for us; a stack copy is enough because
     * an immediate send either leaves now or not at all. */
    uint8_t buf[sizeof(pami_am_hdr_t) + PAMI_HEADER_MAX];
    fill_hdr(ctx, (pami_am_hdr_t *)buf, p->dispatch, 0);
    if (p->header_len > 0)
        memcpy(buf + sizeof(pami_am_hdr_t), p->header, p->header_len);
    int trc = ctx->tp->am_send_imm(peer->ep, buf,
                                   sizeof(pami_am_hdr_t) + p->header_len,
                                   p->data, p->data_len);
    if (likely(trc == 0)) {
        ctx->stats.sends++;
        return PAMI_SUCCESS;
    }
    return pami_result_from_errno(trc);
}

static void send_done(tp_req_t *tp, int status)
{
    pami_request_t *req = container_of(tp, pami_request_t, tp);
    pami_request_local_end(req);
    pami_request_done(req, pami_result_from_errno(status));
}

/* Hands a prepared request to the transport. */
static pami_result_t start_send(struct pami_context *ctx, pami_peer_t *peer,
                                pami_request_t *req, const void *data,
                                size_t len, unsigned flags)
{
    req->tp.fn         = send_done;
    req->peer          = peer->index;
    pami_request_local_start(req);
    int trc = ctx->tp->am_send(peer->ep, req->hdr, req->hdr_len, data, len,
                               flags, &req->tp);
    if (trc == 1)
        return PAMI_SUCCESS;
    pami_request_local_end(req);
    if (trc == 0) {
        pami_request_done(req, PAMI_SUCCESS);
        return PAMI_SUCCESS;
    }
    return pami_result_from_errno(trc);
}

pami_result_t pami_send(pami_context_t ctx, const pami_send_t *p)
{
    if (unlikely(ctx == NULL || p == NULL)) {
        pami_warn("send", "send with a NULL context or params");
        return PAMI_INVAL;
    }
    const pami_send_immediate_t *s = &p->send;
    pami_result_t rc = check_send(ctx, s);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    pami_peer_t *peer;
    rc = pami_peer_get(ctx, s->dest, &peer);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;

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
    req->local_fn  = p->local_fn;
    req->remote_fn = p->remote_fn;
    req->cookie    = p->cookie;
    fill_hdr(ctx, (pami_am_hdr_t *)req->hdr, s->dispatch,
             ack ? PAMI_AM_FLAG_ACK : 0);
    if (ack) {
        uint64_t cookie = pami_request_cookie(req);
        memcpy(req->hdr + sizeof(pami_am_hdr_t), &cookie, sizeof(cookie));
    }
    if (s->header_len > 0)
        memcpy(req->hdr + sizeof(pami_am_hdr_t) + extra, s->header,
               s->header_len);

    /* Waiting for the ack starts before the send: the ack may come back
     * within the same progress call that completes the send. */
    req->peer = peer->index;
    if (ack)
        pami_request_wait_ack(req);
    unsigned flags = s->data_len < ctx->client->config.rndv_threshold
                         ? TP_SEND_EAGER : 0;
    rc = start_send(ctx, peer, req, s->data, s->data_len, flags);
    if (unlikely(rc != PAMI_SUCCESS)) {
        /* Nothing was sent: no callback, the caller learns it here. */
        if (ack)
            pami_request_unwait(req);
        pami_request_put(req);
        return rc;
    }
    ctx->stats.sends++;
    return PAMI_SUCCESS;
}

/* Core messages carry a small payload as the user header would. */
pami_result_t pami_send_internal(struct pami_context *ctx, uint32_t peer_index,
                                 uint16_t dispatch, const void *payload,
                                 size_t len, pami_req_kind_t kind)
{
    pami_peer_t *peer;
    pami_result_t rc = pami_peer_by_index(ctx, peer_index, &peer);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL || pami_request_set_header(req, sizeof(pami_am_hdr_t) +
                                                        len) != 0) {
        if (req != NULL)
            pami_request_put(req);
        return PAMI_ENOMEM;
    }
    req->kind = (uint8_t)kind;
    fill_hdr(ctx, (pami_am_hdr_t *)req->hdr, dispatch, 0);
    memcpy(req->hdr + sizeof(pami_am_hdr_t), payload, len);
    rc = start_send(ctx, peer, req, NULL, 0, TP_SEND_EAGER);
    if (rc != PAMI_SUCCESS)
        pami_request_put(req);
    return rc;
}

pami_result_t pami_send_ack(struct pami_context *ctx, uint32_t peer,
                            uint64_t cookie, pami_result_t result)
{
    pami_ack_t ack = {.cookie = cookie, .result = (int32_t)result};
    pami_result_t rc = pami_send_internal(ctx, peer, PAMI_DISPATCH_ACK, &ack,
                                          sizeof(ack), REQ_ACK_SEND);
    if (rc != PAMI_SUCCESS)
        pami_warn("send", "cannot send a completion ack: %s",
                  pami_error_text(rc));
    return rc;
}

/*
 * Large messages by active GET (docs/protocols/rendezvous.md).
 *
 * The origin registers its buffer and sends a small request (RTS) that
 * carries the region and the user's header. The target's handler, called
 * with data == NULL, says where the data lands; the target gets it
 * straight there (CMA on one node: a single copy) and answers with the
 * core's ack, which completes the origin: local_fn (buffer free again)
 * and remote_fn, then the registration is dropped. A discarded message is
 * answered at once.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "internal.h"

/* RNDV_VERSION, RNDV_FLAG_CMA/MSG and pami_rndv_rts_t: wire.h. Without
 * RDMA to the target (TCP) the origin serves the payload in chunk
 * messages instead of being read (rndv_msg.c). */

/* Builds a region for a one-shot buffer: no table slot, its key is
 * unpacked once by the target and never cached (id UINT32_MAX). */
static pami_result_t pack_buffer(struct pami_context *ctx, const void *data,
                                 size_t bytes, pami_memregion_t *mr,
                                 tp_mem_t **mem)
{
    pami_region_t r = {0};
    pami_result_t rc = pami_mr_pack(ctx, (void *)data, bytes, UINT32_MAX, &r,
                                    mr);
    *mem = r.mem;
    return rc;
}

pami_result_t pami_rndv_send(struct pami_context *ctx, uint32_t index,
                             const pami_send_t *p)
{
    const pami_send_immediate_t *s = &p->send;
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return PAMI_ENOMEM;
    size_t hlen = sizeof(pami_am_hdr_t) + sizeof(uint64_t) +
                  sizeof(pami_rndv_rts_t) + s->header_len;
    if (pami_request_set_header(req, hlen) != 0) {
        pami_request_put(req);
        return PAMI_ENOMEM;
    }
    pami_rndv_rts_t rts = {.version = RNDV_VERSION,
                           .dispatch = (uint32_t)s->dispatch,
                           .bytes = s->data_len,
                           .base = (uint64_t)(uintptr_t)s->data};
    /* UCX 1.13's get between two processes of a node is emulated over
     * shared-memory messages; reading directly is one copy and needs no
     * registration. */
    uint32_t task = index / (uint32_t)ctx->client->num_contexts;
    const void *push = NULL;
    size_t      push_len = 0;
    if (pami_rndv_msg_wanted(ctx, task)) {
        /* No RDMA (TCP): this task serves the chunks itself
         * (rndv_msg.c), the first one at once with the RTS: a FETCH
         * for it would cost a round trip per message. */
        rts.flags |= RNDV_FLAG_MSG | RNDV_FLAG_DATA;
        rts.base        = 0;
        push            = s->data;
        push_len        = pami_rndv_msg_first(s->data_len);
        req->rndv_msg   = true;
        req->rndv_base  = (uint64_t)(uintptr_t)s->data;
        req->rndv_bytes = s->data_len;
        /* All of it leaves with the RTS and nobody asked for remote
         * completion: the RTS's own completion frees the buffer, and an
         * ACK per message would only cost the target a send. */
        if (push_len == s->data_len && p->remote_fn == NULL)
            rts.flags |= RNDV_FLAG_NOACK;
    } else if (ctx->client->tasks[task].local) {
        rts.flags |= RNDV_FLAG_CMA;
        /* The target may ask us to write part of it (rndv_split.c). */
        req->rndv_cma   = true;
        req->rndv_base  = rts.base;
        req->rndv_bytes = s->data_len;
    } else {
        pami_result_t rc = pack_buffer(ctx, s->data, s->data_len, &rts.mr,
                                       &req->rndv_mem);
        if (rc != PAMI_SUCCESS) {
            pami_request_put(req);
            return rc;
        }
    }
    req->kind      = REQ_SEND;
    req->rndv      = true;
    req->peer      = index;
    req->local_fn  = p->local_fn;
    req->remote_fn = p->remote_fn;
    req->cookie    = p->cookie;
    req->data      = push;
    req->data_len  = push_len;
    req->tp_flags  = TP_SEND_EAGER;

    uint8_t *h = req->hdr;
    pami_am_hdr_t am = {.origin_task = ctx->client->task,
                        .dispatch = PAMI_DISPATCH_RNDV,
                        .origin_ctx = (uint8_t)ctx->offset,
                        .flags = PAMI_AM_FLAG_ACK};
    uint64_t cookie = pami_request_cookie(req);
    memcpy(h, &am, sizeof(am));
    memcpy(h + sizeof(am), &cookie, sizeof(cookie));
    memcpy(h + sizeof(am) + sizeof(cookie), &rts, sizeof(rts));
    if (s->header_len > 0)
        memcpy(h + sizeof(am) + sizeof(cookie) + sizeof(rts), s->header,
               s->header_len);
    /* Both completions come with the target's answer (without NOACK). */
    if (!(rts.flags & RNDV_FLAG_NOACK))
        pami_request_wait_ack(req);
    pami_submit(ctx, req);
    return PAMI_SUCCESS;
}

/* Where the handler wants the data: its address, or a range of one of
 * this context's regions (checked). */
static pami_result_t landing(struct pami_context *ctx, const pami_recv_t *r,
                             size_t bytes, void **addr, int32_t *region)
{
    *region = -1;
    if (r->mr == NULL) {
        *addr = r->addr;
        return PAMI_SUCCESS;
    }
    pami_mr_view_t v;
    pami_region_t *reg = pami_region_local(ctx, r->mr, &v);
    if (reg == NULL)
        return PAMI_INVAL;
    if (r->mr_offset > reg->bytes || bytes > reg->bytes - r->mr_offset) {
        pami_warn("rndv", "%zu bytes at offset %zu do not fit the %llu-byte "
                          "region given by the handler", bytes, r->mr_offset,
                  (unsigned long long)reg->bytes);
        return PAMI_INVAL;
    }
    *addr   = (void *)(uintptr_t)(reg->base + r->mr_offset);
    *region = (int32_t)v.id;
    return PAMI_SUCCESS;
}

void pami_rndv_recv(struct pami_context *ctx, uint32_t peer,
                    pami_endpoint_t origin, uint64_t ack_cookie,
                    const uint8_t *rest, size_t rest_len, const void *data,
                    size_t data_len)
{
    pami_rndv_rts_t rts;
    pami_wire_check_t why = pami_rndv_rts_decode(
        rest, rest_len, pami_ep_task(origin), ctx->client->secrets,
        ctx->client->size, &rts);
    if (why == PAMI_WIRE_SHORT) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped a %zu-byte rendezvous request", rest_len);
        pami_send_ack(ctx, peer, ack_cookie, PAMI_INVAL);
        return;
    }
    bool cma = (rts.flags & RNDV_FLAG_CMA) != 0;
    /* The origin waits for no answer: none is sent, whatever happens. */
    bool ack = why != PAMI_WIRE_OK || !(rts.flags & RNDV_FLAG_NOACK);
    if (why == PAMI_WIRE_BAD_REGION) {
        ctx->stats.bad_regions++;
        pami_warn("rma", "refused a memory region that fails its owner's "
                         "seal (forged, corrupted, or of another job)");
    }
    /* The first chunk comes whole with DATA, nothing comes without. */
    size_t pushed = (rts.flags & RNDV_FLAG_DATA)
                        ? pami_rndv_msg_first(rts.bytes) : 0;
    if (why != PAMI_WIRE_OK ||
        (cma && !ctx->client->tasks[pami_ep_task(origin)].local) ||
        data_len != pushed) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped a malformed rendezvous request (version "
                            "%u, %zu bytes of data)",
                            rts.version, data_len);
        if (ack)
            pami_send_ack(ctx, peer, ack_cookie, PAMI_INVAL);
        return;
    }
    /* Protocols send large messages on their ids like the program. */
    pami_dispatch_entry_t *d = rts.dispatch < PAMI_DISPATCH_CORE_BASE
                                   ? &ctx->dispatch[rts.dispatch] : NULL;
    if (d == NULL || d->fn == NULL) {
        ctx->stats.dropped_unknown++;
        pami_warn("rndv", "dropped a %llu-byte message from task %u for "
                          "dispatch id %u, which has no handler here",
                  (unsigned long long)rts.bytes, pami_ep_task(origin),
                  rts.dispatch);
        if (ack)
            pami_send_ack(ctx, peer, ack_cookie, PAMI_NOT_FOUND);
        return;
    }
    ctx->stats.receives++;
    pami_recv_t r = {0};
    d->fn(ctx, d->cookie, rest + sizeof(rts), rest_len - sizeof(rts), NULL,
          rts.bytes, origin, &r);
    if (r.addr == NULL && r.mr == NULL) {
        if (ack)
            pami_send_ack(ctx, peer, ack_cookie, PAMI_SUCCESS); /* discarded */
        return;
    }

    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL || pami_request_set_header(req, sizeof(rts.mr)) != 0) {
        if (req != NULL)
            pami_request_put(req);
        /* Both sides hear it: this runs from progress like any callback. */
        if (r.local_fn != NULL)
            r.local_fn(ctx, r.cookie, PAMI_ENOMEM);
        if (ack)
            pami_send_ack(ctx, peer, ack_cookie, PAMI_ENOMEM);
        return;
    }
    req->kind       = REQ_RECV;
    req->rndv       = true;
    req->rndv_cma   = cma;
    req->rndv_msg   = (rts.flags & RNDV_FLAG_MSG) != 0;
    req->rndv_base  = rts.base;
    req->tp.fn      = pami_request_tp_done;
    req->local_fn   = r.local_fn;
    req->cookie     = r.cookie;
    req->peer       = peer;
    req->ack_wanted = ack;
    req->ack_cookie = ack_cookie;
    req->data_len   = rts.bytes;
    memcpy(req->hdr, &rts.mr, sizeof(rts.mr));

    void   *addr;
    int32_t region;
    pami_result_t rc = landing(ctx, &r, rts.bytes, &addr, &region);
    if (rc != PAMI_SUCCESS) {
        /* The origin completes; the handler's callback hears why. */
        pami_request_done(req, rc);
        return;
    }
    req->data   = addr;
    req->region = region;
    if (region >= 0)
        ctx->regions[region].users++;
    /* The RTS's data is valid only during this call. */
    if (pushed > 0) {
        memcpy(addr, data, pushed);
        req->rndv_first = true;
    }
    pami_submit(ctx, req);
}

/* Reads the payload straight out of the origin's memory, a large one
 * with the origin writing its upper part meanwhile (rndv_split.c). A dead
 * origin gives ESRCH, which here is an ordinary PAMI_PEER_FAILED. */
static void cma_get(struct pami_context *ctx, pami_request_t *req)
{
    uint32_t task = req->peer / (uint32_t)ctx->client->num_contexts;
    uint64_t own  = pami_rndv_split_ask(ctx, req);
    int err = pami_cma_read(ctx->client->tasks[task].pid, (void *)req->data,
                            req->rndv_base, own,
                            pami_cma_spare_core(ctx->client));
    if (err == 0) {
        if (req->rndv_split == 0)
            pami_request_done(req, PAMI_SUCCESS);
        return; /* split: the origin's answer ends it */
    }
    pami_warn("rndv", "reading %llu bytes from task %u failed: %s",
              (unsigned long long)own, task, strerror(err));
    if (err == ESRCH) {
        if (req->local_pending)
            pami_request_local_end(req); /* nobody is left to write */
        pami_task_failed(ctx, task, -ESRCH);
        pami_request_fail(req, PAMI_PEER_FAILED);
        return;
    }
    pami_result_t rc = err == EFAULT ? PAMI_INVAL : PAMI_TRANSPORT;
    if (req->rndv_split != 0 && req->result == PAMI_SUCCESS)
        req->result = rc; /* reported once the origin answered */
    else
        pami_request_done(req, rc);
}

void pami_rndv_start_get(struct pami_context *ctx, pami_peer_t *peer,
                         pami_request_t *req)
{
    pami_client_impl_t *c = ctx->client;
    if (req->rndv_cma) {
        cma_get(ctx, req);
        return;
    }
    if (req->rndv_msg) {
        pami_rndv_msg_start(ctx, req);
        return;
    }
    pami_mr_view_t v;
    /* Verified when the request came; checked again rather than kept. */
    if (pami_mr_decode(ctx, (const pami_memregion_t *)req->hdr, &v) != 0) {
        pami_request_done(req, PAMI_INVAL);
        return;
    }
    /* UCX aborts the process when it reads (CMA) from a task that is gone:
     * look first. */
    if (c->config.peer_errors && !pami_task_alive(c, v.owner_task)) {
        pami_task_failed(ctx, v.owner_task, -ESRCH);
        pami_request_fail(req, PAMI_PEER_FAILED);
        return;
    }
    int trc = ctx->tp->rkey_unpack(peer->ep, v.rkey, &req->rkey);
    if (trc == 0)
        trc = ctx->tp->get(peer->ep, (void *)req->data, req->data_len, v.base,
                           req->rkey, &req->tp);
    if (trc == 1) {
        pami_request_local_start(req);
        return;
    }
    pami_request_done(req, pami_result_from_errno(trc));
}

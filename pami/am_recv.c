/*
 * The receive side of active messages: decode pami's wire header, validate
 * it, and call the handler registered for the dispatch id. Anything that
 * does not decode is counted and dropped, never read out of bounds.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "params.h"

pami_result_t pami_dispatch_set(pami_context_t ctx, size_t id,
                                pami_dispatch_fn fn, void *cookie,
                                const pami_dispatch_hint_t *hints)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "dispatch",
               "dispatch_set on a NULL context");
    if (hints != NULL &&
        pami_params_mask("pami_dispatch_hint_t", hints->field_mask,
                         PAMI_DISPATCH_HINT_KNOWN) != PAMI_SUCCESS)
        return PAMI_INVAL;
    PAMI_CHECK(id < PAMI_DISPATCH_USER_MAX, PAMI_INVAL, "dispatch",
               "dispatch id %zu is out of range (user ids are 0..%d)", id,
               PAMI_DISPATCH_USER_MAX - 1);
    ctx->dispatch[id].fn     = fn;
    ctx->dispatch[id].cookie = cookie;
    return PAMI_SUCCESS;
}

static void recv_ack(struct pami_context *ctx, uint32_t peer,
                     const uint8_t *payload, size_t len)
{
    pami_ack_t    ack;
    pami_result_t r;
    if (pami_ack_decode(payload, len, &ack, &r) != PAMI_WIRE_OK) {
        pami_drop_malformed(ctx, "am", "dropped an ack of %zu bytes", len);
        return;
    }
    pami_request_t *req = pami_request_by_cookie(ctx, ack.cookie);
    if (req == NULL) {
        pami_drop_malformed(ctx, "am", "dropped an ack for no waiting send");
        return;
    }
    /* A put, get or rmw through the owner waits for the owner's REPLY,
     * which carries its data and old value: an ack would end it with
     * nothing written (a get's buffer left as it was). */
    if (req->rma_owner) {
        pami_drop_malformed(ctx, "am",
                            "dropped an ack from endpoint %u for a one-sided "
                            "operation, which only its owner's answer ends",
                            peer);
        return;
    }
    /* A cookie can be guessed: only the task the send went to answers. */
    if (req->peer != peer) {
        pami_drop_malformed(ctx, "am",
                            "dropped an ack from endpoint %u for a send to "
                            "endpoint %u",
                            peer, req->peer);
        return;
    }
    pami_request_acked(req, r);
}

/* Logs why pami_am_decode refused a message. */
static void am_drop(struct pami_context *ctx, pami_wire_check_t why,
                    const pami_am_msg_t *m, size_t hdr_len, size_t data_len)
{
    ctx->stats.dropped_malformed++;
    if (why == PAMI_WIRE_UCX_RNDV)
        /* pami sends everything eager (large payloads go by its own
         * active GET), so a UCX rendezvous descriptor is nothing we sent. */
        pami_warn("am", "dropped a %zu-byte UCX rendezvous message", data_len);
    else if (why == PAMI_WIRE_BAD_PACKED)
        pami_warn("am", "dropped a malformed packed message (flags 0x%x, "
                        "%zu bytes)", m->h.flags, data_len);
    else if (why == PAMI_WIRE_SHORT)
        pami_warn("am", "dropped a message with a %zu-byte header", hdr_len);
    else
        pami_warn("am", "dropped a malformed message (origin %u/%u, flags "
                        "0x%x, header %zu bytes)", m->h.origin_task,
                  m->h.origin_ctx, m->h.flags, hdr_len);
}

/* Runs the handler of a user's or protocol's id (below the core's). */
static inline __attribute__((always_inline)) void
deliver_user(struct pami_context *ctx, uint32_t origin_task,
             uint32_t origin_ctx, uint16_t dispatch, const uint8_t *uhdr,
             size_t uhdr_len, void *data, size_t data_len, bool ack,
             uint64_t ack_cookie)
{
    pami_dispatch_entry_t *d = &ctx->dispatch[dispatch];
    uint32_t peer = origin_task * (uint32_t)ctx->client->num_contexts +
                    origin_ctx;
    if (unlikely(d->fn == NULL)) {
        ctx->stats.dropped_unknown++;
        pami_warn("am", "dropped a message from task %u for dispatch id %u, "
                        "which has no handler here", origin_task, dispatch);
        /* Tell a sender waiting for remote completion, or it waits forever. */
        if (ack)
            pami_send_ack(ctx, peer, ack_cookie, PAMI_NOT_FOUND);
        return;
    }
    ctx->stats.receives++;
    pami_endpoint_t origin = (origin_task << 8) | origin_ctx;
    d->fn(ctx, d->cookie, uhdr, uhdr_len, data, data_len, origin, NULL);
    if (ack)
        pami_send_ack(ctx, peer, ack_cookie, PAMI_SUCCESS);
}

/* Decodes and delivers; self: the message comes from this context's
 * own queue of sends to itself (self.c), so it runs now. */
static inline __attribute__((always_inline)) void
am_deliver(struct pami_context *ctx, const void *hdr, size_t hdr_len,
           void *data, size_t data_len, void *desc, bool self)
{
    pami_client_impl_t *c = ctx->client;
    pami_am_msg_t       m;

    pami_wire_check_t why = pami_am_decode_inline(hdr, hdr_len, data, data_len,
                                           desc, (uint32_t)c->size,
                                           (uint32_t)c->num_contexts, &m);
    if (unlikely(why != PAMI_WIRE_OK)) {
        am_drop(ctx, why, &m, hdr_len, data_len);
        return;
    }
    /* UCX's self transport delivers a send to the own endpoint inside the
     * send call; its handler must run from advance/wait instead. */
    if (unlikely(!self && m.h.origin_task == c->task &&
                 m.h.origin_ctx == ctx->offset)) {
        pami_self_queue(ctx, hdr, hdr_len, data, data_len);
        return;
    }
    pami_am_hdr_t  h          = m.h;
    bool           ack        = m.ack;
    uint64_t       ack_cookie = m.ack_cookie;
    const uint8_t *rest       = m.uhdr;
    size_t         rest_len   = m.uhdr_len;
    data     = m.data;
    data_len = m.data_len;
    uint32_t peer = h.origin_task * (uint32_t)c->num_contexts + h.origin_ctx;
    /* Anything from a task shows it alive (liveness.c). */
    ctx->peers[h.origin_task * (uint32_t)c->num_contexts].live_heard = true;

    if (h.dispatch >= PAMI_DISPATCH_CORE_BASE) {
        if (h.dispatch == PAMI_DISPATCH_ACK)
            recv_ack(ctx, peer, rest, rest_len);
        else if (h.dispatch == PAMI_DISPATCH_BARRIER)
            pami_barrier_recv(ctx, rest, rest_len, h.origin_task);
        else if (h.dispatch == PAMI_DISPATCH_MONITOR)
            ; /* only there to connect the watching endpoint */
        else if (h.dispatch == PAMI_DISPATCH_RNDV && ack)
            pami_rndv_recv(ctx, peer, (h.origin_task << 8) | h.origin_ctx,
                           ack_cookie, rest, rest_len, data, data_len);
        else if (h.dispatch == PAMI_DISPATCH_RNDV_CHUNK && !ack)
            pami_rndv_msg_recv(ctx, peer, h.origin_task, rest, rest_len,
                               data, data_len);
        else if (h.dispatch == PAMI_DISPATCH_RNDV_WRITE && !ack)
            pami_rndv_split_recv(ctx, peer, h.origin_task, rest, rest_len,
                                 data_len);
        else if (h.dispatch == PAMI_DISPATCH_PROBE && !ack)
            pami_probe_recv(ctx, peer, h.origin_task, rest, rest_len);
        else if (h.dispatch == PAMI_DISPATCH_RMA && !ack)
            pami_rma_owner_recv(ctx, peer, h.origin_task, rest, rest_len,
                                data, data_len);
        else if (h.dispatch == PAMI_DISPATCH_SENDS && !ack)
            pami_sends_recv(ctx, h.origin_task, h.origin_ctx, rest, rest_len,
                            data, data_len);
        else {
            ctx->stats.dropped_unknown++;
            pami_warn("am", "dropped a message for core id %u", h.dispatch);
        }
        return;
    }

    deliver_user(ctx, h.origin_task, h.origin_ctx, h.dispatch, rest,
                 rest_len, data, data_len, ack, ack_cookie);
}

void pami_am_deliver_user(struct pami_context *ctx, uint32_t origin_task,
                          uint32_t origin_ctx, uint16_t dispatch,
                          const uint8_t *uhdr, size_t uhdr_len, void *data,
                          size_t data_len)
{
    deliver_user(ctx, origin_task, origin_ctx, dispatch, uhdr, uhdr_len, data,
                 data_len, false, 0);
}

void pami_am_recv(void *arg, const void *hdr, size_t hdr_len, void *data,
                  size_t data_len, void *desc)
{
    am_deliver(arg, hdr, hdr_len, data, data_len, desc, false);
}

void pami_am_recv_self(struct pami_context *ctx, const void *hdr,
                       size_t hdr_len, void *data, size_t data_len)
{
    am_deliver(ctx, hdr, hdr_len, data, data_len, NULL, true);
}

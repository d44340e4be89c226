/*
 * Gathered eager sends (docs/protocols/am.md, "SENDS"). Over TCP every
 * message costs a send call, and a packet through the kernel's stack, at
 * the sender and its share of a receive at the target: a window of small
 * pami_sends cost one each. Through a shared-memory queue each message
 * takes a 64-byte line or more, and each line moves to the receiver's
 * core: several small ones in one entry move fewer. A send that follows
 * another to the same endpoint before any progress (over UCX: only while
 * earlier ones to it wait copied in the transport, as they need progress
 * to leave anyway) waits, copied, in the context's list; the
 * list leaves at the start and the end of the next progress call, when it
 * is full, when a send to another endpoint is gathered, or before any
 * message this context sends that is not gathered (so a peer's messages
 * keep their order). A send with none before it since the last progress
 * leaves in its call: a lone message never waits.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The list's buffer keeps room in front for the header of the message
 * that carries it. */
#define SENDS_HEAD (sizeof(pami_am_hdr_t) + sizeof(pami_sends_msg_t))

bool pami_sends_add(struct pami_context *ctx, uint32_t index,
                    uint16_t dispatch, const void *uhdr, size_t uhdr_len,
                    const void *data, size_t data_len)
{
    pami_rma_gather_t *g    = &ctx->sends;
    size_t             size = pami_sends_rec_size(uhdr_len, data_len);
    size_t             cap  = pami_sends_cap(ctx, index);
    if (size > cap)
        return false;
    if (g->n != 0 && (g->peer != index || g->len + size > cap))
        pami_sends_flush(ctx);
    if (g->buf == NULL &&
        (g->buf = malloc(SENDS_HEAD + PAMI_SENDS_BYTES)) == NULL)
        return false;
    uint8_t         *at  = g->buf + SENDS_HEAD + g->len;
    pami_sends_rec_t rec = {.dispatch = dispatch,
                            .uhdr_len = (uint16_t)uhdr_len,
                            .data_len = (uint32_t)data_len};
    size_t used = sizeof(rec) + uhdr_len + data_len;
    memcpy(at, &rec, sizeof(rec));
    if (uhdr_len > 0)
        memcpy(at + sizeof(rec), uhdr, uhdr_len);
    if (data_len > 0)
        memcpy(at + sizeof(rec) + uhdr_len, data, data_len);
    memset(at + used, 0, size - used);
    g->peer = index;
    g->len += size;
    g->n++;
    return true;
}

/* One message alone leaves as it would have without the list (the
 * header form): the wire is then what it was before. */
static bool send_one(struct pami_context *ctx, pami_peer_t *peer,
                     const uint8_t *rec_at, size_t len)
{
    pami_sends_rec_t rec;
    const uint8_t   *uhdr, *data;
    size_t           off = 0;
    if (pami_sends_next(rec_at, len, &off, &rec, &uhdr, &data) !=
        PAMI_WIRE_OK)
        return false;
    uint8_t       hdr[sizeof(pami_am_hdr_t) + PAMI_HEADER_MAX];
    pami_am_hdr_t h = {.origin_task = ctx->client->task,
                       .dispatch    = rec.dispatch,
                       .origin_ctx  = (uint8_t)ctx->offset};
    memcpy(hdr, &h, sizeof(h));
    if (rec.uhdr_len > 0)
        memcpy(hdr + sizeof(h), uhdr, rec.uhdr_len);
    return ctx->tp->am_send_imm(peer->ep, hdr, sizeof(h) + rec.uhdr_len,
                                data, rec.data_len) == 0;
}

void pami_sends_flush(struct pami_context *ctx)
{
    pami_rma_gather_t *g     = &ctx->sends;
    uint32_t           index = g->peer, n = g->n;
    size_t             len   = g->len;
    g->n   = 0;
    g->len = 0;
    if (n == 0)
        return;
    pami_live_sent(ctx, index);
    pami_sends_msg_t m = {.count = n};
    pami_am_hdr_t    h = {.origin_task = ctx->client->task,
                          .dispatch    = PAMI_DISPATCH_SENDS,
                          .origin_ctx  = (uint8_t)ctx->offset};
    memcpy(g->buf, &h, sizeof(h));
    memcpy(g->buf + sizeof(h), &m, sizeof(m));
    pami_peer_t *peer;
    if (ctx->deferred_head == NULL &&
        pami_peer_by_index(ctx, index, &peer) == PAMI_SUCCESS) {
        if (n == 1 ? send_one(ctx, peer, g->buf + SENDS_HEAD, len)
                   : ctx->tp->am_send_imm(peer->ep, g->buf, SENDS_HEAD,
                                          g->buf + SENDS_HEAD, len) == 0)
            return;
    }
    /* The transport could not take it at once (or sends wait for an
     * endpoint): a request takes the buffer, header and records, and
     * frees it when done; the next list gets a new one. */
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL) {
        ctx->stats.dropped_malformed++;
        pami_error("send", "no request for %u gathered sends to task %u: "
                           "they are lost",
                   n, index / (uint32_t)ctx->client->num_contexts);
        return;
    }
    req->kind     = REQ_IMM; /* a copy, counted in ctx->bounced */
    req->peer     = index;
    req->hdr      = g->buf;
    req->hdr_len  = SENDS_HEAD;
    req->data     = g->buf + SENDS_HEAD;
    req->data_len = len;
    req->tp_flags  = TP_SEND_EAGER;
    req->imm_count = n;
    g->buf         = NULL;
    ctx->bounced  += n;
    pami_peer_t *p = &ctx->peers[index];
    p->backlog = n > (uint32_t)(UINT16_MAX - p->backlog)
                     ? UINT16_MAX : (uint16_t)(p->backlog + n);
    pami_submit(ctx, req);
}

void pami_sends_recv(struct pami_context *ctx, uint32_t origin_task,
                     uint32_t origin_ctx, const uint8_t *rest,
                     size_t rest_len, void *data, size_t data_len)
{
    pami_sends_msg_t  m;
    pami_wire_check_t why = pami_sends_msg_decode(rest, rest_len, data_len,
                                                  &m);
    if (why == PAMI_WIRE_OK)
        why = pami_sends_check(data, data_len, m.count);
    if (why != PAMI_WIRE_OK) {
        /* Checked whole first: none of its handlers ran. */
        pami_drop_malformed(ctx, "am",
                            "dropped gathered sends from task %u (%zu + "
                            "%zu bytes, check %d)",
                            origin_task, rest_len, data_len, (int)why);
        return;
    }
    uint8_t *buf = data;
    size_t   off = 0;
    while (off < data_len) {
        pami_sends_rec_t rec;
        const uint8_t   *uhdr, *body;
        (void)pami_sends_next(buf, data_len, &off, &rec, &uhdr, &body);
        pami_am_deliver_user(ctx, origin_task, origin_ctx, rec.dispatch,
                             uhdr, rec.uhdr_len,
                             buf + (body - (const uint8_t *)buf),
                             rec.data_len);
    }
}

/*
 * Origin-served rendezvous (docs/protocols/rendezvous.md, "The transfer
 * by chunk messages"): where UCX has no RDMA to the peer (TCP), its get
 * would be emulated with messages whose handler reads the origin's memory
 * unchecked, and an endpoint that dies under it aborts the process. So
 * the target asks the origin for the payload chunk by chunk, a window of
 * requests in flight, and the origin answers each from the send it names
 * after checking the cookie, the asking endpoint and the range; the
 * target checks every answer against what it asked. A dead peer ends
 * both sides through the ordinary peer-failure path (PAMI_PEER_FAILED).
 */
#include <string.h>

#include "internal.h"

/* What the target asks for in one FETCH, and the pieces the origin
 * answers it in. To another node a piece behind pami's headers fits one
 * of UCX's TCP pieces (68 KiB, adapters/transport/ucx.c), which UCX
 * sends straight from the origin's buffer and hands over straight from
 * its receive buffer, where a 256 KiB message costs a copy into UCX's
 * send buffers at the origin and one more to join its pieces at the
 * target (docs/performance-log.md, s14). On this node (only with
 * PAMI_RNDV_VIA_ORIGIN=1) a chunk goes whole, as before: the shared-
 * memory path sends it by reference, without UCX's copies. The
 * target counts in pieces and keeps a window of 2 MiB asked for, which
 * keeps a TCP link busy. */
#define CHUNK  RNDV_MSG_CHUNK
#define WINDOW_BYTES (8u * CHUNK)

_Static_assert(CHUNK <= RNDV_CHUNK_MAX, "a chunk the origin accepts");
_Static_assert(CHUNK % RNDV_MSG_PIECE == 0, "a chunk is whole pieces");
_Static_assert(WINDOW_BYTES / RNDV_MSG_PIECE <= 64,
               "the window fits rndv_got");

/* Both ends of a transfer know whether they share a node. */
static uint64_t piece(struct pami_context *ctx, uint32_t peer)
{
    uint32_t task = peer / (uint32_t)ctx->client->num_contexts;
    return ctx->client->tasks[task].local ? CHUNK : RNDV_MSG_PIECE;
}

bool pami_rndv_msg_wanted(struct pami_context *ctx, uint32_t task)
{
    pami_client_impl_t *c = ctx->client;
    if (unlikely(c->config.rndv_via_origin))
        return true;
    return !c->tasks[task].local && !pami_client_has_rdma(c);
}

static uint64_t npieces(uint64_t bytes, uint64_t unit)
{
    return bytes / unit + (bytes % unit != 0);
}

/* Sends one chunk message to endpoint peer for transfer src; data (DATA
 * only) stays valid until it ends: src waits for it (rndv_out). */
static int chunk_send(struct pami_context *ctx, uint32_t peer,
                      pami_request_t *src, pami_req_kind_t kind,
                      const pami_rndv_chunk_t *m, const void *data)
{
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return -1;
    PAMI_CORE_MSG_FITS(*m);
    pami_request_core_header(req, PAMI_DISPATCH_RNDV_CHUNK, m, sizeof(*m));
    req->kind     = (uint8_t)kind;
    req->peer     = peer;
    req->data     = data;
    req->data_len = data != NULL ? m->bytes : 0;
    req->tp_flags = TP_SEND_EAGER;
    if (src != NULL) {
        req->rndv_src = src;
        src->rndv_out++;
    }
    pami_submit(ctx, req);
    return 0;
}

/* Ends the target's transfer: the handler's callback, then the ack. */
static void finish(pami_request_t *req, pami_result_t rc)
{
    if (!req->local_pending)
        return;
    pami_request_local_end(req);
    pami_request_done(req, rc);
}

/* Keeps up to WINDOW_BYTES asked for, a chunk per FETCH: one is asked
 * for only when the window has room for all of it, so pieces that come
 * one by one do not each cost a FETCH. */
static void fetch_more(struct pami_context *ctx, pami_request_t *req)
{
    uint64_t unit = piece(ctx, req->peer), per = CHUNK / unit;
    uint64_t n    = npieces(req->data_len, unit);
    while (req->rndv_next < n) {
        uint64_t k = n - req->rndv_next < per ? n - req->rndv_next : per;
        if (req->rndv_next - req->rndv_lo + k > WINDOW_BYTES / unit)
            break;
        uint64_t          off = req->rndv_next * unit;
        uint64_t          len = req->data_len - off;
        pami_rndv_chunk_t m   = {.version     = RNDV_VERSION,
                                 .type        = RNDV_CHUNK_FETCH,
                                 .send_cookie = req->ack_cookie,
                                 .recv_cookie = pami_request_cookie(req),
                                 .offset      = off,
                                 .bytes       = len < CHUNK ? len : CHUNK};
        if (chunk_send(ctx, req->peer, req, REQ_SEND, &m, NULL) != 0) {
            finish(req, PAMI_ENOMEM);
            return;
        }
        req->rndv_next += k;
    }
}

uint64_t pami_rndv_msg_first(uint64_t bytes)
{
    return bytes < CHUNK ? bytes : CHUNK;
}

void pami_rndv_msg_start(struct pami_context *ctx, pami_request_t *req)
{
    /* The first chunk came with the RTS (rndv.c copied it). */
    uint64_t unit  = piece(ctx, req->peer), per = CHUNK / unit;
    uint64_t n     = npieces(req->data_len, unit);
    req->rndv_next = req->rndv_first ? (n < per ? n : per) : 0;
    req->rndv_lo   = req->rndv_next;
    req->rndv_got  = 0;
    pami_request_local_start(req);
    if (req->rndv_lo == n)
        finish(req, PAMI_SUCCESS);
    else
        fetch_more(ctx, req);
}

void pami_rndv_msg_part_done(pami_request_t *part)
{
    pami_request_t *src = part->rndv_src;
    part->rndv_src = NULL;
    src->rndv_out--;
    /* A request that could not leave ends its transfer (a dead peer ends
     * it through the peer-failure path as well). */
    if (part->result != PAMI_SUCCESS && src->kind == REQ_RECV)
        finish(src, part->result);
    if (src->rndv_out == 0 && !src->local_pending && !src->remote_pending)
        pami_request_done(src, PAMI_SUCCESS); /* report it now */
}

/* The origin: a FETCH for one of its sends waiting for the target. */
static void serve(struct pami_context *ctx, uint32_t peer, uint32_t task,
                  const pami_rndv_chunk_t *m)
{
    pami_request_t   *req = pami_request_by_cookie(ctx, m->send_cookie);
    pami_rndv_chunk_t a   = *m;
    a.type = RNDV_CHUNK_DATA;
    if (req == NULL || !req->rndv || !req->rndv_msg || req->peer != peer ||
        m->offset > req->rndv_bytes ||
        m->bytes > req->rndv_bytes - m->offset) {
        pami_drop_malformed(ctx, "rndv",
                            "refused a request from task %u for %llu bytes at "
                            "offset %llu: no large send to it holds them",
                            task, (unsigned long long)m->bytes,
                            (unsigned long long)m->offset);
        a.result = PAMI_INVAL;
        req = NULL;
    }
    if (req == NULL) {
        if (chunk_send(ctx, peer, NULL, REQ_ACK_SEND, &a, NULL) != 0)
            pami_warn("rndv", "no request for a refusal to task %u; its "
                              "transfer fails when the task is found dead or "
                              "the context is destroyed", task);
        return;
    }
    /* In pieces, to another node each one message of UCX's (piece()). */
    const uint8_t *base = (const uint8_t *)(uintptr_t)req->rndv_base;
    uint64_t       unit = piece(ctx, peer);
    for (uint64_t off = 0; off < m->bytes; off += unit) {
        uint64_t left = m->bytes - off;
        a.offset = m->offset + off;
        a.bytes  = left < unit ? left : unit;
        if (chunk_send(ctx, peer, req, REQ_ACK_SEND, &a,
                       base + a.offset) != 0) {
            pami_warn("rndv", "no request for a chunk to task %u; its "
                              "transfer fails when the task is found dead "
                              "or the context is destroyed", task);
            return;
        }
    }
}

/* The target: a DATA for one of its transfers. */
static void take(struct pami_context *ctx, uint32_t peer, uint32_t task,
                 const pami_rndv_chunk_t *m, const void *data)
{
    pami_request_t *req = pami_request_at(ctx, m->recv_cookie);
    if (req == NULL || req->kind != REQ_RECV || !req->rndv_msg ||
        !req->local_pending || req->peer != peer ||
        req->ack_cookie != m->send_cookie) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped a chunk from task %u for no transfer "
                            "waiting for it",
                            task);
        return;
    }
    if (m->result != PAMI_SUCCESS) {
        pami_warn("rndv", "task %u refused a chunk of a large message: %s",
                  task, pami_error_text((pami_result_t)m->result));
        finish(req, (pami_result_t)m->result);
        return;
    }
    /* It must be a piece asked for and not yet here, whole. */
    uint64_t k;
    uint64_t unit = piece(ctx, peer);
    if (!pami_rndv_chunk_wanted(req->data_len, unit, req->rndv_lo,
                                req->rndv_next, req->rndv_got, m->offset,
                                m->bytes, &k)) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped a chunk from task %u of %llu bytes at "
                            "offset %llu that was not asked for; the message "
                            "fails",
                            task, (unsigned long long)m->bytes,
                            (unsigned long long)m->offset);
        finish(req, PAMI_INVAL);
        return;
    }
    memcpy((uint8_t *)req->data + m->offset, data, m->bytes);
    req->rndv_got |= 1ull << (k - req->rndv_lo);
    while (req->rndv_got & 1u) {
        req->rndv_got >>= 1;
        req->rndv_lo++;
    }
    if (req->rndv_lo == npieces(req->data_len, unit))
        finish(req, PAMI_SUCCESS);
    else
        fetch_more(ctx, req);
}

void pami_rndv_msg_recv(struct pami_context *ctx, uint32_t peer,
                        uint32_t origin_task, const void *buf, size_t len,
                        const void *data, size_t data_len)
{
    pami_rndv_chunk_t m;
    pami_wire_check_t why = pami_rndv_chunk_decode(buf, len, data_len, &m);
    if (why != PAMI_WIRE_OK) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped a malformed chunk message from task %u "
                            "(check %d, %zu + %zu bytes)",
                            origin_task, (int)why, len, data_len);
        return;
    }
    if (m.type == RNDV_CHUNK_FETCH)
        serve(ctx, peer, origin_task, &m);
    else
        take(ctx, peer, origin_task, &m, data);
}

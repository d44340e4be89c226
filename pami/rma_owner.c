/*
 * One-sided operations through the owner (docs/protocols/rma.md, "The
 * owner's path"): put, get and atomics travel as core messages, and the
 * owner applies each itself after checking the region's id, generation,
 * liveness and bounds against its own table. Used where UCX would
 * emulate the operation with messages whose handler touches the address
 * unchecked (atomics on one node, anything over TCP): an access through a
 * stale or forged copy then fails at the origin, with PAMI_INVAL on the
 * operation's callback, and never touches the owner's memory.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

pami_wire_check_t pami_rma_msg_decode(const void *buf, size_t len,
                                      size_t data_len, pami_rma_msg_t *out)
{
    if (len < sizeof(*out))
        return PAMI_WIRE_SHORT;
    if (len != sizeof(*out))
        return PAMI_WIRE_BAD_LENGTH;
    memcpy(out, buf, sizeof(*out));
    if (out->version != PAMI_RMA_MSG_VERSION)
        return PAMI_WIRE_BAD_VERSION;
    if (out->reserved != 0)
        return PAMI_WIRE_BAD_FIELD;
    switch (out->type) {
    case PAMI_RMA_MSG_PUT:
        /* Only a claimed put can go unanswered: its word answers. */
        if (out->op > PAMI_RMA_PUT_QUIET ||
            (out->op == PAMI_RMA_PUT_QUIET && out->compare == 0))
            return PAMI_WIRE_BAD_FIELD;
        return data_len == out->bytes ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    case PAMI_RMA_MSG_GET:
        /* compare: a claimed get's number (rma_claim.c), never with the
         * bit that marks a claim word busy. */
        if (out->compare >= PAMI_RMA_CLAIM_BUSY)
            return PAMI_WIRE_BAD_FIELD;
        return data_len == 0 ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    case PAMI_RMA_MSG_ATOMIC:
        if (data_len != 0)
            return PAMI_WIRE_BAD_LENGTH;
        if ((out->size != 4 && out->size != 8) || out->bytes != out->size ||
            out->op > PAMI_RMW_ADD)
            return PAMI_WIRE_BAD_FIELD;
        return PAMI_WIRE_OK;
    case PAMI_RMA_MSG_REPLY:
        return out->result >= 0 && out->result < PAMI_RESULT_LAST
                   ? PAMI_WIRE_OK : PAMI_WIRE_BAD_FIELD;
    case PAMI_RMA_MSG_FENCE:
        return data_len == 0 ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    case PAMI_RMA_MSG_PUT_DONE:
        if (out->result != PAMI_SUCCESS || out->bytes == 0 ||
            out->bytes % sizeof(uint64_t) != 0 ||
            out->bytes > PAMI_RMA_PUT_DONE_MAX * sizeof(uint64_t))
            return PAMI_WIRE_BAD_FIELD;
        return data_len == out->bytes ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    case PAMI_RMA_MSG_HELP:
        if (data_len != 0)
            return PAMI_WIRE_BAD_LENGTH;
        if (out->op > 1 || out->size != 0 || out->result < 0 ||
            out->bytes == 0 || out->compare == 0)
            return PAMI_WIRE_BAD_FIELD;
        return PAMI_WIRE_OK;
    case PAMI_RMA_MSG_CLAIMS:
        if (out->result != PAMI_SUCCESS || out->op != 0 || out->size != 0 ||
            out->bytes != sizeof(pami_memregion_t))
            return PAMI_WIRE_BAD_FIELD;
        return data_len == out->bytes ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    case PAMI_RMA_MSG_REPLIES:
    case PAMI_RMA_MSG_REQUESTS:
        if (out->result != PAMI_SUCCESS || out->op != 0 || out->size != 0 ||
            out->bytes < sizeof(*out) || out->bytes > PAMI_RMA_GATHER_BYTES)
            return PAMI_WIRE_BAD_FIELD;
        return data_len == out->bytes ? PAMI_WIRE_OK : PAMI_WIRE_BAD_LENGTH;
    default:
        return PAMI_WIRE_BAD_FIELD;
    }
}

pami_wire_check_t pami_rma_gathered_next(uint8_t type, const uint8_t *buf,
                                         size_t len, size_t *off,
                                         pami_rma_msg_t *out,
                                         const uint8_t **data)
{
    if (*off > len || len - *off < sizeof(*out))
        return PAMI_WIRE_SHORT;
    size_t left = len - *off - sizeof(*out);
    memcpy(out, buf + *off, sizeof(*out));
    /* REPLIES: answers, each with its data; REQUESTS: puts with their
     * data and gets. */
    bool fits = type == PAMI_RMA_MSG_REPLIES
                    ? out->type == PAMI_RMA_MSG_REPLY
                    : out->type == PAMI_RMA_MSG_PUT ||
                          out->type == PAMI_RMA_MSG_GET;
    if (!fits)
        return PAMI_WIRE_BAD_FIELD;
    size_t data_len = out->type == PAMI_RMA_MSG_GET ? 0 : out->bytes;
    if (out->bytes > PAMI_RMA_GATHER_DATA_MAX || data_len > left)
        return PAMI_WIRE_BAD_LENGTH;
    pami_wire_check_t why = pami_rma_msg_decode(buf + *off, sizeof(*out),
                                                data_len, out);
    if (why != PAMI_WIRE_OK)
        return why;
    *data = buf + *off + sizeof(*out);
    *off += sizeof(*out) + data_len;
    return PAMI_WIRE_OK;
}

static bool requests_add(struct pami_context *ctx, uint32_t index,
                         const pami_rma_msg_t *m, const void *data,
                         size_t len);

pami_result_t pami_rma_owner_start(struct pami_context *ctx, uint32_t index,
                                   const pami_rma_msg_t *m, const void *src,
                                   void *dst, size_t dst_len,
                                   pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region)
{
    pami_request_t *req;
    return pami_rma_owner_begin(ctx, index, m, src, dst, dst_len, local_fn,
                                remote_fn, cookie, region, &req);
}

pami_result_t pami_rma_owner_begin(struct pami_context *ctx, uint32_t index,
                                   const pami_rma_msg_t *m, const void *src,
                                   void *dst, size_t dst_len,
                                   pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region, pami_request_t **out)
{
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return PAMI_ENOMEM;
    pami_rma_msg_t msg = *m;
    msg.version = PAMI_RMA_MSG_VERSION;
    msg.cookie  = pami_request_cookie(req);
    PAMI_CORE_MSG_FITS(msg);
    req->kind       = REQ_SEND;
    req->rma_owner  = true;
    req->peer       = index;
    req->local_fn   = local_fn;
    req->remote_fn  = remote_fn;
    req->cookie     = cookie;
    req->ack_result = PAMI_SUCCESS;
    req->data       = m->type == PAMI_RMA_MSG_PUT ? src : NULL;
    req->data_len   = m->type == PAMI_RMA_MSG_PUT ? m->bytes : 0;
    req->tp_flags   = TP_SEND_EAGER;
    req->rma_type   = m->type;
    req->rma_dst    = dst;
    req->rma_len    = dst_len;
    if (region >= 0) {
        req->region = region;
        ctx->regions[region].users++;
    }
    ctx->peers[index].owner_used = true;
    /* Every callback waits for the owner's answer, which carries the
     * result of its checks. */
    pami_request_wait_ack(req);
    *out = req;
    if (requests_add(ctx, index, &msg, req->data, req->data_len))
        return PAMI_SUCCESS;
    /* Messages to an owner leave in the order of their calls. */
    if (ctx->requests.n != 0)
        pami_rma_requests_flush(ctx);
    /* Sent at once, the request only waits for that answer: no
     * transport request, no report of the send, no header kept (over
     * TCP this path carries every operation). */
    if (pami_send_core_now(ctx, index, PAMI_DISPATCH_RMA, &msg, sizeof(msg),
                           req->data, req->data_len) == PAMI_SUCCESS) {
        pami_live_sent(ctx, index);
        return PAMI_SUCCESS;
    }
    /* A claimed put may be taken back, and its callbacks run, while a
     * queued message still reads the caller's buffer: it leaves copied
     * (gathered, or at once) or not at all, and then goes by CMA. */
    if (msg.type == PAMI_RMA_MSG_PUT && msg.compare != 0) {
        pami_request_unwait(req);
        pami_request_put(req);
        *out = NULL;
        return PAMI_EAGAIN;
    }
    pami_request_core_header(req, PAMI_DISPATCH_RMA, &msg, sizeof(msg));
    pami_submit(ctx, req);
    return PAMI_SUCCESS;
}

bool pami_rma_owner_quiet(struct pami_context *ctx, uint32_t index,
                          const pami_rma_msg_t *m, const void *src)
{
    pami_rma_msg_t msg = *m;
    msg.version = PAMI_RMA_MSG_VERSION;
    if (requests_add(ctx, index, &msg, src, msg.bytes))
        return true;
    if (ctx->requests.n != 0)
        pami_rma_requests_flush(ctx);
    if (pami_send_core_now(ctx, index, PAMI_DISPATCH_RMA, &msg, sizeof(msg),
                           src, msg.bytes) != PAMI_SUCCESS)
        return false;
    pami_live_sent(ctx, index);
    return true;
}

/* What the transport did not take at once leaves through a request whose
 * header buffer (of header bytes, unless 0: the caller brings one) holds
 * the message; NULL (with a warning) when there is none: the operations
 * then fail when the task is found dead or the context is destroyed. */
static pami_request_t *answer_request(struct pami_context *ctx, uint32_t peer,
                                      size_t header, const char *what)
{
    pami_request_t *req = pami_request_get(ctx);
    if (req != NULL && header != 0 &&
        pami_request_set_header(req, header) != 0) {
        pami_request_put(req);
        req = NULL;
    }
    if (req == NULL)
        pami_warn("rma", "no request for %s to task %u; the operations "
                         "fail when the task is found dead or the context "
                         "is destroyed",
                  what, peer / (uint32_t)ctx->client->num_contexts);
    return req;
}

static void answer_submit(struct pami_context *ctx, pami_request_t *req,
                          uint32_t peer, const pami_rma_msg_t *m,
                          const void *data, size_t len)
{
    pami_request_core_header(req, PAMI_DISPATCH_RMA, m, sizeof(*m));
    req->kind     = REQ_ACK_SEND;
    req->peer     = peer;
    req->data     = data;
    req->data_len = len;
    req->tp_flags = TP_SEND_EAGER;
    pami_submit(ctx, req);
}

/* The data copied behind the message, in the request's header buffer. */
static void send_owned(struct pami_context *ctx, uint32_t peer,
                       const pami_rma_msg_t *m, const void *data, size_t len,
                       const char *what)
{
    size_t          head = sizeof(pami_am_hdr_t) + sizeof(*m);
    pami_request_t *req  = answer_request(ctx, peer, head + len, what);
    if (req == NULL)
        return;
    uint8_t *copy = req->hdr + head;
    if (len > 0)
        memcpy(copy, data, len);
    answer_submit(ctx, req, peer, m, copy, len);
}

void pami_rma_owner_flush(struct pami_context *ctx)
{
    uint32_t n = ctx->put_done_n;
    size_t   len = n * sizeof(uint64_t);
    ctx->put_done_n = 0;
    pami_rma_msg_t  m   = {.version = PAMI_RMA_MSG_VERSION,
                           .type = PAMI_RMA_MSG_PUT_DONE, .bytes = len};
    if (pami_send_core_now(ctx, ctx->put_done_peer, PAMI_DISPATCH_RMA, &m,
                           sizeof(m), ctx->put_done, len) == PAMI_SUCCESS)
        return;
    send_owned(ctx, ctx->put_done_peer, &m, ctx->put_done, len,
               "the answers to puts");
}

/* The list's buffer keeps room for the header of the message that
 * carries it in front of the messages. */
#define GATHER_HEAD (sizeof(pami_am_hdr_t) + sizeof(pami_rma_msg_t))

/* Hands g's buffer to a request that sends it (its header written in the
 * room at the front, the data where it lies): freed with the request,
 * no copy. */
static void send_list(struct pami_context *ctx, pami_rma_gather_t *g,
                      uint32_t peer, const pami_rma_msg_t *m,
                      const uint8_t *data, size_t len, const char *what)
{
    pami_request_t *req = answer_request(ctx, peer, 0, what);
    if (req == NULL)
        return;
    req->hdr = g->buf;
    g->buf   = NULL;
    answer_submit(ctx, req, peer, m, data, len);
}

/* Sends what g gathered: one message as itself (the wire is then what
 * it was without the gathering), more as one message of type. */
static void gather_flush(struct pami_context *ctx, pami_rma_gather_t *g,
                         uint8_t type)
{
    uint32_t       peer = g->peer;
    const uint8_t *buf  = g->buf + GATHER_HEAD;
    size_t         len  = g->len;
    pami_rma_msg_t m;
    if (g->n == 1) {
        memcpy(&m, buf, sizeof(m));
        buf += sizeof(m);
        len -= sizeof(m);
    } else {
        m = (pami_rma_msg_t){.version = PAMI_RMA_MSG_VERSION, .type = type,
                             .bytes = len};
    }
    g->n   = 0;
    g->len = 0;
    if (type == PAMI_RMA_MSG_REQUESTS)
        pami_live_sent(ctx, peer);
    if (pami_send_core_now(ctx, peer, PAMI_DISPATCH_RMA, &m, sizeof(m), buf,
                           len) != PAMI_SUCCESS)
        send_list(ctx, g, peer, &m, buf, len,
                  type == PAMI_RMA_MSG_REPLIES ? "answers" : "puts and gets");
}

/* Appends m and its data to g (flushed first when it goes elsewhere or
 * is full). False: no memory, or m alone is beyond the list's cap: send
 * m alone. */
static bool gather_add(struct pami_context *ctx, pami_rma_gather_t *g,
                       uint8_t type, uint32_t peer, const pami_rma_msg_t *m,
                       const void *data, size_t len)
{
    size_t cap = pami_list_cap(ctx, peer, PAMI_RMA_GATHER_BYTES);
    if (sizeof(*m) + len > cap)
        return false;
    if (g->n != 0 && (g->peer != peer || g->len + sizeof(*m) + len > cap))
        gather_flush(ctx, g, type);
    if (g->buf == NULL &&
        (g->buf = malloc(GATHER_HEAD + PAMI_RMA_GATHER_BYTES)) == NULL)
        return false;
    uint8_t *at = g->buf + GATHER_HEAD + g->len;
    memcpy(at, m, sizeof(*m));
    if (len > 0)
        memcpy(at + sizeof(*m), data, len);
    g->peer = peer;
    g->len += sizeof(*m) + len;
    if (++g->n == PAMI_RMA_GATHER_MAX)
        gather_flush(ctx, g, type);
    return true;
}

/* A small put or a get waits for the program's next progress (or for
 * the next such operation to another owner, or one that is not
 * gathered): a window of them to one owner leaves as one message. */
static bool requests_add(struct pami_context *ctx, uint32_t index,
                         const pami_rma_msg_t *m, const void *data,
                         size_t len)
{
    return (m->type == PAMI_RMA_MSG_PUT || m->type == PAMI_RMA_MSG_GET) &&
           m->bytes <= PAMI_RMA_GATHER_DATA_MAX &&
           ctx->client->config.rma_gather &&
           gather_add(ctx, &ctx->requests, PAMI_RMA_MSG_REQUESTS, index, m,
                      data, len);
}

void pami_rma_replies_flush(struct pami_context *ctx)
{
    gather_flush(ctx, &ctx->replies, PAMI_RMA_MSG_REPLIES);
}

void pami_rma_answers_flush(struct pami_context *ctx)
{
    if (ctx->put_done_n != 0)
        pami_rma_owner_flush(ctx);
    if (ctx->replies.n != 0)
        pami_rma_replies_flush(ctx);
}

void pami_rma_requests_flush(struct pami_context *ctx)
{
    gather_flush(ctx, &ctx->requests, PAMI_RMA_MSG_REQUESTS);
}

/* A GET's answer (the only one with data) made during a transport poll,
 * with little data, waits for the others of that poll to the same
 * endpoint: one message for all (over TCP, a window of small gets cost
 * one answer each). An atomic's or a fence's answer goes alone: it is
 * mostly waited for, one at a time. False: send it alone. */
static bool replies_add(struct pami_context *ctx, uint32_t peer,
                        const pami_rma_msg_t *m, const void *data, size_t len)
{
    return data != NULL && ctx->in_tp_progress &&
           len <= PAMI_RMA_GATHER_DATA_MAX &&
           ctx->client->config.rma_gather &&
           gather_add(ctx, &ctx->replies, PAMI_RMA_MSG_REPLIES, peer, m, data,
                      len);
}

/* A put applied during a transport poll is answered with the others of
 * that poll to the same endpoint: one message instead of one each. */
static void put_done(struct pami_context *ctx, uint32_t peer, uint64_t cookie)
{
    /* Answers leave in the order of the operations they answer. */
    if (ctx->replies.n != 0)
        pami_rma_replies_flush(ctx);
    if (ctx->put_done_n != 0 && ctx->put_done_peer != peer)
        pami_rma_owner_flush(ctx);
    ctx->put_done_peer = peer;
    ctx->put_done[ctx->put_done_n++] = cookie;
    if (ctx->put_done_n == PAMI_RMA_PUT_DONE_MAX)
        pami_rma_owner_flush(ctx);
}

/* The owner's answer; data (a get's bytes) stays valid until sent: its
 * region counts the reply as a user, so destroy waits for it. */
static void reply(struct pami_context *ctx, uint32_t peer, uint64_t cookie,
                  pami_result_t result, uint64_t old, const void *data,
                  size_t len, int32_t region)
{
    /* Answers leave in the order of the operations they answer (a
     * FENCE's after the puts before it). */
    if (ctx->put_done_n != 0)
        pami_rma_owner_flush(ctx);
    pami_rma_msg_t m = {.version = PAMI_RMA_MSG_VERSION,
                        .type = PAMI_RMA_MSG_REPLY, .result = (int32_t)result,
                        .cookie = cookie, .bytes = len, .operand = old};
    if (replies_add(ctx, peer, &m, data, len))
        return;
    if (ctx->replies.n != 0)
        pami_rma_replies_flush(ctx);
    /* Sent at once, a get's bytes are copied before this returns and the
     * region needs no user count. */
    if (pami_send_core_now(ctx, peer, PAMI_DISPATCH_RMA, &m, sizeof(m), data,
                           len) == PAMI_SUCCESS)
        return;
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL) {
        pami_warn("rma", "no request for an answer to task %u; its "
                         "operation fails when the task is found dead or "
                         "the context is destroyed",
                  peer / (uint32_t)ctx->client->num_contexts);
        return;
    }
    PAMI_CORE_MSG_FITS(m);
    pami_request_core_header(req, PAMI_DISPATCH_RMA, &m, sizeof(m));
    req->kind     = REQ_ACK_SEND;
    req->peer     = peer;
    req->data     = data;
    req->data_len = len;
    req->tp_flags = TP_SEND_EAGER;
    if (region >= 0) {
        req->region = region;
        ctx->regions[region].users++;
    }
    pami_submit(ctx, req);
}

void pami_rma_owner_reply(struct pami_context *ctx, uint32_t peer,
                          uint64_t cookie, pami_result_t result)
{
    reply(ctx, peer, cookie, result, 0, NULL, 0, -1);
}

/* The owner's side: the region must be a live one of this context, of
 * the copy's generation, and hold the whole access. */
static void serve(struct pami_context *ctx, uint32_t peer, uint32_t task,
                  const pami_rma_msg_t *m, const void *data)
{
    /* A claimed PUT, GET or FENCE (rma_claim.c) is served only by the
     * side that claims it; one its origin took back is skipped,
     * unanswered. */
    bool claimed = m->compare != 0 && (m->type == PAMI_RMA_MSG_PUT ||
                                       m->type == PAMI_RMA_MSG_GET ||
                                       m->type == PAMI_RMA_MSG_FENCE);
    if (claimed && !pami_rma_claim_take(ctx, peer, m->compare))
        return;
    if (m->type == PAMI_RMA_MSG_FENCE) {
        /* Messages of one endpoint are handled in order: what came
         * before is applied. */
        if (claimed)
            pami_rma_claim_applied(ctx, peer, m->compare);
        reply(ctx, peer, m->cookie, PAMI_SUCCESS, 0, NULL, 0, -1);
        return;
    }
    pami_region_t *r = NULL;
    if (m->owner_ctx == ctx->offset && m->id < ctx->nregions &&
        ctx->regions[m->id].live &&
        ctx->regions[m->id].generation == m->generation)
        r = &ctx->regions[m->id];
    if (r == NULL || m->offset > r->bytes || m->bytes > r->bytes - m->offset ||
        (m->type == PAMI_RMA_MSG_ATOMIC &&
         (r->base + m->offset) % m->size != 0)) {
        ctx->stats.bad_regions++;
        pami_warn("rma", "refused a %s of %llu bytes at offset %llu from "
                         "task %u: region %u/%u is not a live region of "
                         "this context holding it",
                  m->type == PAMI_RMA_MSG_PUT    ? "put"
                  : m->type == PAMI_RMA_MSG_GET  ? "get"
                  : m->type == PAMI_RMA_MSG_HELP ? "part of a put or get"
                                                 : "atomic",
                  (unsigned long long)m->bytes,
                  (unsigned long long)m->offset, task, m->id,
                  m->generation);
        if (claimed)
            pami_rma_claim_applied(ctx, peer, m->compare);
        /* A part is answered only by whoever claims it; a quiet put
         * has nobody waiting for an answer (the warning stays). */
        if (m->type == PAMI_RMA_MSG_HELP)
            pami_rma_help_serve(ctx, peer, task, m, NULL);
        else if (m->type != PAMI_RMA_MSG_PUT || m->op != PAMI_RMA_PUT_QUIET)
            reply(ctx, peer, m->cookie, PAMI_INVAL, 0, NULL, 0, -1);
        return;
    }
    uint8_t *addr = (uint8_t *)(uintptr_t)(r->base + m->offset);
    switch (m->type) {
    case PAMI_RMA_MSG_HELP:
        pami_rma_help_serve(ctx, peer, task, m, addr);
        break;
    case PAMI_RMA_MSG_PUT:
        if (m->bytes > 0)
            memcpy(addr, data, m->bytes);
        if (claimed)
            pami_rma_claim_applied(ctx, peer, m->compare);
        if (m->op == PAMI_RMA_PUT_QUIET)
            break; /* the word just stored is its answer */
        if (ctx->in_tp_progress)
            put_done(ctx, peer, m->cookie);
        else
            reply(ctx, peer, m->cookie, PAMI_SUCCESS, 0, NULL, 0, -1);
        break;
    case PAMI_RMA_MSG_GET:
        /* The data is copied into the answer (or the answer holds the
         * region) before the word says the get was served: the origin
         * then waits for this answer instead of reading by CMA. */
        reply(ctx, peer, m->cookie, PAMI_SUCCESS, 0, addr, m->bytes,
              (int32_t)m->id);
        if (claimed)
            pami_rma_claim_applied(ctx, peer, m->compare);
        break;
    default:
        reply(ctx, peer, m->cookie, PAMI_SUCCESS,
              pami_atomic_apply(addr, m->size, m->op, m->operand,
                                m->compare),
              NULL, 0, -1);
        break;
    }
}

/* The origin's side: the answer completes the request it names, when it
 * comes from the task the request went to and fits it. */
static void answered(struct pami_context *ctx, uint32_t peer,
                     const pami_rma_msg_t *m, const void *data,
                     size_t data_len)
{
    pami_request_t *req = pami_request_by_cookie(ctx, m->cookie);
    /* An operation whose part the origin took back ended without it. */
    if (req == NULL || !req->rma_owner || req->peer != peer ||
        !req->remote_pending) {
        pami_drop_malformed(ctx, "rma",
                            "dropped an answer for no operation waiting on "
                            "task %u",
                            peer / (uint32_t)ctx->client->num_contexts);
        return;
    }
    pami_result_t rc = (pami_result_t)m->result;
    bool get = req->rma_type == PAMI_RMA_MSG_GET;
    if (rc == PAMI_SUCCESS &&
        (get ? data_len != req->rma_len : data_len != 0)) {
        pami_drop_malformed(ctx, "rma",
                            "an answer with %zu bytes of data for an operation "
                            "waiting for %zu",
                            data_len, get ? req->rma_len : 0);
        rc = PAMI_ERROR;
    } else if (rc == PAMI_SUCCESS && req->rma_dst != NULL) {
        if (get) {
            if (data_len > 0)
                memcpy(req->rma_dst, data, data_len);
        } else if (req->rma_len == 4) {
            uint32_t v32 = (uint32_t)m->operand;
            memcpy(req->rma_dst, &v32, 4);
        } else {
            memcpy(req->rma_dst, &m->operand, 8);
        }
    }
    if (rc != PAMI_SUCCESS && req->result == PAMI_SUCCESS)
        req->result = rc;
    pami_request_acked(req, rc);
}

/* Each cookie of a PUT_DONE stands for a REPLY of PAMI_SUCCESS without
 * data, to a put only. */
static void puts_answered(struct pami_context *ctx, uint32_t peer,
                          const void *data, size_t data_len)
{
    pami_rma_msg_t one = {.type = PAMI_RMA_MSG_REPLY, .result = PAMI_SUCCESS};
    for (size_t off = 0; off < data_len; off += sizeof(uint64_t)) {
        memcpy(&one.cookie, (const uint8_t *)data + off, sizeof(one.cookie));
        pami_request_t *req = pami_request_by_cookie(ctx, one.cookie);
        if (req != NULL && req->rma_owner &&
            req->rma_type != PAMI_RMA_MSG_PUT) {
            pami_drop_malformed(ctx, "rma",
                                "dropped the answer to a put for an operation "
                                "of task %u that is no put",
                                peer / (uint32_t)ctx->client->num_contexts);
            continue;
        }
        answered(ctx, peer, &one, NULL, 0); /* checks the rest */
    }
}

/* Each message of a REPLIES or REQUESTS as if it had come alone; a
 * malformed one ends the walk (the operations it and the rest name keep
 * waiting: the sender's own). */
static void gathered(struct pami_context *ctx, uint32_t peer, uint32_t task,
                     uint8_t type, const void *data, size_t data_len)
{
    size_t off = 0;
    while (off < data_len) {
        pami_rma_msg_t    one;
        const uint8_t    *bytes;
        pami_wire_check_t why = pami_rma_gathered_next(type, data, data_len,
                                                       &off, &one, &bytes);
        if (why != PAMI_WIRE_OK) {
            pami_drop_malformed(ctx, "rma",
                                "dropped the rest of %zu bytes of %s from "
                                "task %u at %zu (check %d)",
                                data_len,
                                type == PAMI_RMA_MSG_REPLIES ? "answers"
                                                             : "requests",
                                task, off, (int)why);
            return;
        }
        if (type == PAMI_RMA_MSG_REPLIES)
            answered(ctx, peer, &one, bytes, one.bytes);
        else
            serve(ctx, peer, task, &one, bytes);
    }
}

void pami_rma_owner_recv(struct pami_context *ctx, uint32_t peer,
                         uint32_t origin_task, const void *buf, size_t len,
                         const void *data, size_t data_len)
{
    pami_rma_msg_t    m;
    pami_wire_check_t why = pami_rma_msg_decode(buf, len, data_len, &m);
    if (why != PAMI_WIRE_OK) {
        pami_drop_malformed(
            ctx, "rma",
            "dropped a malformed one-sided message from task %u "
            "(check %d, %zu + %zu bytes)",
            origin_task, (int)why, len, data_len);
        /* A request whose answer can be addressed is answered, so its
         * origin does not wait for nothing. */
        if (len == sizeof(m) && m.type != PAMI_RMA_MSG_REPLY &&
            m.type != PAMI_RMA_MSG_PUT_DONE && m.type != PAMI_RMA_MSG_HELP &&
            m.type != PAMI_RMA_MSG_REPLIES &&
            m.type != PAMI_RMA_MSG_REQUESTS &&
            m.type != PAMI_RMA_MSG_CLAIMS && why != PAMI_WIRE_SHORT)
            reply(ctx, peer, m.cookie, PAMI_INVAL, 0, NULL, 0, -1);
        return;
    }
    if (m.type == PAMI_RMA_MSG_REPLY)
        answered(ctx, peer, &m, data, data_len);
    else if (m.type == PAMI_RMA_MSG_REPLIES ||
             m.type == PAMI_RMA_MSG_REQUESTS)
        gathered(ctx, peer, origin_task, m.type, data, data_len);
    else if (m.type == PAMI_RMA_MSG_PUT_DONE)
        puts_answered(ctx, peer, data, data_len);
    else if (m.type == PAMI_RMA_MSG_CLAIMS)
        pami_rma_claims_recv(ctx, peer, origin_task, data, data_len);
    else
        serve(ctx, peer, origin_task, &m, data);
}

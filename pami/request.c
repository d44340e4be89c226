/*
 * Requests: a per-context table that grows in chunks and never shrinks, so
 * the send path takes one from a free list without allocating. A request's
 * (index, generation) pair is the cookie an ack carries back; a stale or
 * forged cookie is recognised and dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define REQ_CHUNK_SHIFT PAMI_REQ_CHUNK_SHIFT
#define REQ_CHUNK       (1u << REQ_CHUNK_SHIFT)
#define REQ_MAX_CHUNKS  (1u << 16) /* 16M requests in flight per context */

static int grow(struct pami_context *ctx)
{
    if (ctx->req_nchunks == REQ_MAX_CHUNKS)
        return -1;
    pami_request_t **chunks = realloc(ctx->req_chunks,
                                      (ctx->req_nchunks + 1) * sizeof(*chunks));
    if (chunks == NULL)
        return -1;
    ctx->req_chunks = chunks;
    pami_request_t *chunk = calloc(REQ_CHUNK, sizeof(*chunk));
    if (chunk == NULL)
        return -1;
    chunks[ctx->req_nchunks] = chunk;
    uint32_t base = (uint32_t)(ctx->req_nchunks * REQ_CHUNK);
    for (uint32_t i = REQ_CHUNK; i-- > 0;) {
        chunk[i].ctx   = ctx;
        chunk[i].index = base + i;
        chunk[i].next  = ctx->req_free;
        ctx->req_free  = &chunk[i];
    }
    ctx->req_nchunks++;
    return 0;
}

pami_request_t *pami_request_get(struct pami_context *ctx)
{
    if (unlikely(ctx->req_free == NULL) && grow(ctx) != 0) {
        pami_error("request", "cannot allocate more requests (%zu in flight)",
                   ctx->inflight);
        return NULL;
    }
    pami_request_t *req = ctx->req_free;
    ctx->req_free = req->next;
    req->next           = NULL;
    req->generation++;
    req->local_pending  = false;
    req->remote_pending = false;
    req->queued         = false;
    req->abandoned      = false;
    req->reported       = false;
    req->ack_wanted     = false;
    req->result         = PAMI_SUCCESS;
    req->local_fn       = NULL;
    req->remote_fn      = NULL;
    req->hdr            = req->inline_hdr;
    req->hdr_len        = 0;
    req->region         = -1;
    req->rndv           = false;
    req->rndv_mem       = NULL;
    req->rkey           = NULL;
    req->rndv_cma       = false;
    req->rndv_split     = 0;
    req->rma_owner      = false;
    req->rma_dst        = NULL;
    req->rndv_msg       = false;
    req->rndv_first     = false;
    req->rndv_out       = 0;
    req->rndv_src       = NULL;
    ctx->inflight++;
    return req;
}

int pami_request_set_header(pami_request_t *req, size_t len)
{
    if (len > sizeof(req->inline_hdr)) {
        req->hdr = malloc(len);
        if (req->hdr == NULL) {
            req->hdr = req->inline_hdr;
            return -1;
        }
    }
    req->hdr_len = len;
    return 0;
}

void pami_request_core_header(pami_request_t *req, uint16_t dispatch,
                              const void *body, size_t len)
{
    struct pami_context *ctx = req->ctx;
    pami_am_hdr_t am = {.origin_task = ctx->client->task,
                        .dispatch    = dispatch,
                        .origin_ctx  = (uint8_t)ctx->offset};
    req->hdr_len = sizeof(am) + len;
    memcpy(req->hdr, &am, sizeof(am));
    memcpy(req->hdr + sizeof(am), body, len);
}

void pami_request_put(pami_request_t *req)
{
    struct pami_context *ctx = req->ctx;
    if (req->hdr != req->inline_hdr && req->hdr != req->bounce)
        free(req->hdr);
    if (req->kind == REQ_IMM) {
        ctx->bounced -= req->imm_count;
        if (ctx->peers != NULL) {
            pami_peer_t *peer = &ctx->peers[req->peer];
            peer->backlog = peer->backlog > req->imm_count
                                ? (uint16_t)(peer->backlog - req->imm_count)
                                : 0;
        }
    }
    if (req->region >= 0)
        ctx->regions[req->region].users--;
    if (req->rndv_mem != NULL)
        ctx->tp->mem_dereg(ctx->client->tp_ctx, req->rndv_mem);
    if (req->rkey != NULL)
        ctx->tp->rkey_destroy(req->rkey);
    req->hdr  = req->inline_hdr;
    req->kind = REQ_FREE;
    req->next = ctx->req_free;
    ctx->req_free = req;
    ctx->inflight--;
}

pami_request_t *pami_request_at(struct pami_context *ctx, uint64_t cookie)
{
    uint32_t index = (uint32_t)cookie, generation = (uint32_t)(cookie >> 32);
    size_t chunk = index >> REQ_CHUNK_SHIFT;
    if (chunk >= ctx->req_nchunks)
        return NULL;
    pami_request_t *req = &ctx->req_chunks[chunk][index & (REQ_CHUNK - 1)];
    return req->generation == generation && req->kind != REQ_FREE ? req
                                                                  : NULL;
}

pami_request_t *pami_request_by_cookie(struct pami_context *ctx,
                                       uint64_t cookie)
{
    uint32_t index = (uint32_t)cookie, generation = (uint32_t)(cookie >> 32);
    size_t chunk = index >> REQ_CHUNK_SHIFT;
    if (chunk >= ctx->req_nchunks)
        return NULL;
    pami_request_t *req = &ctx->req_chunks[chunk][index & (REQ_CHUNK - 1)];
    if (req->generation != generation || req->kind != REQ_SEND ||
        !req->remote_pending)
        return NULL;
    return req;
}

void pami_request_unwait(pami_request_t *req)
{
    struct pami_context *ctx = req->ctx;
    if (req->wait_prev != NULL)
        req->wait_prev->wait_next = req->wait_next;
    else
        ctx->ack_wait = req->wait_next;
    if (req->wait_next != NULL)
        req->wait_next->wait_prev = req->wait_prev;
    req->wait_prev = req->wait_next = NULL;
    req->remote_pending = false;
}

void pami_request_wait_ack(pami_request_t *req)
{
    struct pami_context *ctx = req->ctx;
    req->remote_pending = true;
    req->wait_prev = NULL;
    req->wait_next = ctx->ack_wait;
    if (ctx->ack_wait != NULL)
        ctx->ack_wait->wait_prev = req;
    ctx->ack_wait = req;
}

/* Queues the request so its callbacks run from advance, never from inside
 * the call that started it. */
static void enqueue_done(pami_request_t *req)
{
    struct pami_context *ctx = req->ctx;
    if (req->queued)
        return;
    req->queued = true;
    req->next   = NULL;
    *ctx->done_tail = req;
    ctx->done_tail  = &req->next;
}

void pami_request_done(pami_request_t *req, pami_result_t result)
{
    if (result != PAMI_SUCCESS && req->result == PAMI_SUCCESS)
        req->result = result;
    enqueue_done(req);
}

void pami_request_acked(pami_request_t *req, pami_result_t result)
{
    pami_request_unwait(req);
    req->remote_pending = false;
    req->ack_result     = result;
    enqueue_done(req);
}

void pami_request_fail(pami_request_t *req, pami_result_t result)
{
    if (req->remote_pending)
        pami_request_acked(req, result);
    pami_request_done(req, result);
}

void pami_request_fail_waiting(struct pami_context *ctx, uint32_t peer,
                               pami_result_t result)
{
    pami_request_t *req = ctx->ack_wait;
    while (req != NULL) {
        pami_request_t *next = req->wait_next;
        if (peer == UINT32_MAX || req->peer == peer)
            pami_request_acked(req, result);
        req = next;
    }
}

/* Runs the callbacks of finished requests. A send whose data is out but
 * whose ack is still due reports local completion now and stays alive. */
unsigned pami_request_report(struct pami_context *ctx)
{
    unsigned n = 0;
    while (ctx->done_head != NULL) {
        pami_request_t *req = ctx->done_head;
        ctx->done_head = req->next;
        if (ctx->done_head == NULL)
            ctx->done_tail = &ctx->done_head;
        req->queued = false;
        if (req == &ctx->rma_batch) {
            n += pami_rma_done_report(ctx);
            continue;
        }
        n++;
        /* Chunk messages of an origin-served transfer still out: it
         * reports after them (rndv_msg.c queues it again). */
        if (req->rndv_out > 0)
            continue;

        /* An active-GET origin's buffer is free only when the target
         * says it has the data. */
        bool origin_rndv = (req->rndv || req->rma_owner) &&
                           req->kind == REQ_SEND;
        if (!req->local_pending && req->local_fn != NULL &&
            !(origin_rndv && req->remote_pending)) {
            pami_event_fn fn = req->local_fn;
            req->local_fn = NULL;
            fn(ctx, req->cookie, req->result);
        }
        if (req->local_pending || req->remote_pending)
            continue;
        if (req->rndv_src != NULL)
            pami_rndv_msg_part_done(req);
        if (req->remote_fn != NULL) {
            pami_result_t r = req->result != PAMI_SUCCESS ? req->result
                                                          : req->ack_result;
            req->remote_fn(ctx, req->cookie, r);
        }
        if (req->kind == REQ_RECV && req->ack_wanted)
            pami_send_ack(ctx, req->peer, req->ack_cookie, req->result);
        /* An abandoned request is freed when UCX lets go of it. */
        if (req->abandoned) {
            req->reported = true;
            ctx->zombies++;
        } else
            pami_request_put(req);
    }
    return n;
}

/* True when req was abandoned (its callbacks ran already) and only waited
 * for UCX to let go of it; it is freed once both happened. */
static bool pami_request_released(pami_request_t *req)
{
    if (!req->abandoned)
        return false;
    req->abandoned = false;
    if (req->reported) {
        req->ctx->zombies--;
        pami_request_put(req);
    }
    return true;
}

void pami_request_tp_done(tp_req_t *tp, int status)
{
    pami_request_t *req = container_of(tp, pami_request_t, tp);
    if (pami_request_released(req))
        return;
    pami_request_local_end(req);
    pami_request_done(req, pami_result_from_errno(status));
}

void pami_requests_abandon(struct pami_context *ctx, uint32_t peer)
{
    for (size_t c = 0; c < ctx->req_nchunks; c++)
        for (size_t i = 0; i < REQ_CHUNK; i++) {
            pami_request_t *req = &ctx->req_chunks[c][i];
            if (req->kind == REQ_FREE || req->peer != peer ||
                !req->local_pending)
                continue;
            pami_request_local_end(req);
            /* An origin-served transfer, or the origin's part of a split
             * read, is pami's own: UCX holds none. */
            req->abandoned = !((req->rndv_msg || req->rndv_split != 0) &&
                               req->kind == REQ_RECV);
            pami_request_fail(req, PAMI_PEER_FAILED);
        }
}

void pami_requests_peer_failed(struct pami_context *ctx, uint32_t peer)
{
    for (size_t c = 0; c < ctx->req_nchunks; c++)
        for (size_t i = 0; i < REQ_CHUNK; i++) {
            pami_request_t *req = &ctx->req_chunks[c][i];
            if (req->kind == REQ_FREE || req->peer != peer ||
                !req->local_pending)
                continue;
            /* An origin-served transfer (or the origin's part of a split
             * read) is pami's own, UCX holds none of it: it ends now (its
             * messages end with UCX). */
            if ((req->rndv_msg || req->rndv_split != 0) &&
                req->kind == REQ_RECV) {
                pami_request_local_end(req);
                pami_request_done(req, PAMI_PEER_FAILED);
            } else if (req->result == PAMI_SUCCESS)
                req->result = PAMI_PEER_FAILED;
        }
}

void pami_requests_destroy(struct pami_context *ctx)
{
    /* Nothing can answer any more: what still waits ends with SHUTDOWN. */
    pami_request_fail_waiting(ctx, UINT32_MAX, PAMI_SHUTDOWN);
    for (size_t c = 0; c < ctx->req_nchunks; c++)
        for (size_t i = 0; i < REQ_CHUNK; i++) {
            pami_request_t *req = &ctx->req_chunks[c][i];
            if (req->kind != REQ_FREE && req->local_pending) {
                pami_request_local_end(req);
                pami_request_done(req, PAMI_SHUTDOWN);
            }
        }
    pami_progress_frame_t frame;
    pami_progress_enter(ctx, &frame);
    pami_request_report(ctx);
    pami_progress_leave(&frame);
}

void pami_requests_free(struct pami_context *ctx)
{
    for (size_t c = 0; c < ctx->req_nchunks; c++) {
        for (size_t i = 0; i < REQ_CHUNK; i++) {
            pami_request_t *req = &ctx->req_chunks[c][i];
            if (req->hdr != req->inline_hdr && req->hdr != req->bounce)
                free(req->hdr);
            free(req->bounce);
        }
        free(ctx->req_chunks[c]);
    }
    free(ctx->req_chunks);
    ctx->req_chunks  = NULL;
    ctx->req_nchunks = 0;
}

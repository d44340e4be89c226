/*
 * The split read on one node (docs/protocols/rendezvous.md, "Two cores
 * on one transfer"): one core moves about 4 GB/s through the kernel once
 * a payload leaves the cache, and in a full node the only other core
 * near the transfer is the origin's, which otherwise just waits for its
 * ack. So for a large CMA transfer the target asks the origin to write
 * the upper part of the payload straight into the landing buffer
 * (process_vm_writev) while it reads the lower part itself; the origin's
 * answer, after its write, ends the transfer. Every message is checked
 * like the chunk messages of rndv_msg.c: the origin writes only bytes of
 * a send of its own still waiting for the asking endpoint's ack, and the
 * target takes only the answer to what it asked.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

static int write_msg(struct pami_context *ctx, uint32_t peer,
                     const pami_rndv_write_t *m)
{
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return -1;
    PAMI_CORE_MSG_FITS(*m);
    pami_request_core_header(req, PAMI_DISPATCH_RNDV_WRITE, m, sizeof(*m));
    req->kind     = REQ_SEND;
    req->peer     = peer;
    req->data     = NULL;
    req->data_len = 0;
    req->tp_flags = TP_SEND_EAGER;
    pami_submit(ctx, req);
    return 0;
}

uint64_t pami_rndv_split_ask(struct pami_context *ctx, pami_request_t *req)
{
    pami_client_impl_t *c    = ctx->client;
    uint32_t            task = req->peer / (uint32_t)c->num_contexts;
    /* A task's send to itself has no second core to offer. */
    if (req->data_len < PAMI_RNDV_SPLIT_MIN || task == c->task)
        return req->data_len;
    uint64_t first = (req->data_len / 2) & ~(uint64_t)4095;
    pami_rndv_write_t m = {.version     = RNDV_VERSION,
                           .type        = RNDV_WRITE_ASK,
                           .send_cookie = req->ack_cookie,
                           .recv_cookie = pami_request_cookie(req),
                           .offset      = first,
                           .bytes       = req->data_len - first,
                           .dest = (uint64_t)(uintptr_t)req->data + first};
    if (write_msg(ctx, req->peer, &m) != 0)
        return req->data_len; /* no request: read it all */
    req->rndv_split = first;
    /* Until the origin answered, it may still write into the landing
     * buffer: the transfer stays open (and destroy's drain waits). */
    pami_request_local_start(req);
    return first;
}

/* Whether this send has company: a large send to another task waiting
 * for its ack. Its target reads on another core at the same time, and
 * the origin's one core would serve both targets' writes one after the
 * other, slower than each target reading alone. */
static bool other_large_sends(struct pami_context *ctx, uint32_t task)
{
    uint32_t n = (uint32_t)ctx->client->num_contexts;
    for (pami_request_t *r = ctx->ack_wait; r != NULL; r = r->wait_next)
        if (r->rndv && r->rndv_cma && r->peer / n != task &&
            r->rndv_bytes >= PAMI_RNDV_SPLIT_MIN)
            return true;
    return false;
}

/* The origin: the target asks it to write part of one of its sends. */
static void serve(struct pami_context *ctx, uint32_t peer, uint32_t task,
                  const pami_rndv_write_t *m)
{
    pami_request_t   *req = pami_request_by_cookie(ctx, m->send_cookie);
    pami_rndv_write_t a   = *m;
    a.type   = RNDV_WRITE_DONE;
    a.result = PAMI_SUCCESS;
    if (req == NULL || !req->rndv || !req->rndv_cma || req->peer != peer ||
        m->offset > req->rndv_bytes ||
        m->bytes > req->rndv_bytes - m->offset) {
        pami_drop_malformed(ctx, "rndv",
                            "refused to write %llu bytes at offset %llu for "
                            "task %u: no large send to it holds them",
                            (unsigned long long)m->bytes,
                            (unsigned long long)m->offset, task);
        a.result = PAMI_INVAL;
    } else if (other_large_sends(ctx, task)) {
        a.result = PAMI_EAGAIN; /* the target reads it */
    } else {
        int err = pami_cma_write(ctx->client->tasks[task].pid, m->dest,
                                 (const uint8_t *)(uintptr_t)req->rndv_base +
                                     m->offset,
                                 m->bytes);
        if (err == ESRCH) {
            /* Gone: nobody to answer; its send fails with it. */
            pami_task_failed(ctx, task, -ESRCH);
            return;
        }
        if (err != 0) {
            pami_warn("rndv", "writing %llu bytes of a large message into "
                              "task %u failed: %s; it reads them itself",
                      (unsigned long long)m->bytes, task, strerror(err));
            a.result = PAMI_EAGAIN;
        }
    }
    if (write_msg(ctx, peer, &a) != 0)
        pami_warn("rndv", "no request for an answer to task %u; its "
                          "transfer fails when the task is found dead or "
                          "the context is destroyed", task);
}

/* The target: the origin's answer for one of its transfers. */
static void take(struct pami_context *ctx, uint32_t peer, uint32_t task,
                 const pami_rndv_write_t *m)
{
    pami_request_t *req = pami_request_at(ctx, m->recv_cookie);
    if (req == NULL || req->kind != REQ_RECV || !req->rndv_cma ||
        req->rndv_split == 0 || !req->local_pending || req->peer != peer ||
        req->ack_cookie != m->send_cookie || m->offset != req->rndv_split ||
        m->bytes != req->data_len - req->rndv_split ||
        m->dest != (uint64_t)(uintptr_t)req->data + req->rndv_split) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped an answer from task %u for no transfer "
                            "waiting for it", task);
        return;
    }
    pami_request_local_end(req);
    pami_result_t rc = (pami_result_t)m->result;
    if (rc == PAMI_EAGAIN) {
        /* Not written (busy, or not allowed): the rest is ours. */
        int err = pami_cma_read(ctx->client->tasks[task].pid,
                                (uint8_t *)req->data + m->offset,
                                req->rndv_base + m->offset, m->bytes,
                                pami_cma_spare_core(ctx->client));
        if (err == ESRCH) {
            pami_task_failed(ctx, task, -ESRCH);
            pami_request_fail(req, PAMI_PEER_FAILED);
            return;
        }
        rc = err == 0 ? PAMI_SUCCESS
                      : err == EFAULT ? PAMI_INVAL : PAMI_TRANSPORT;
    } else if (rc != PAMI_SUCCESS) {
        pami_warn("rndv", "task %u refused to write part of a large "
                          "message: %s", task, pami_error_text(rc));
    }
    /* The read of the lower part may have failed already (req->result). */
    pami_request_done(req, rc);
}

void pami_rndv_split_recv(struct pami_context *ctx, uint32_t peer,
                          uint32_t origin_task, const void *buf, size_t len,
                          size_t data_len)
{
    pami_rndv_write_t m;
    pami_wire_check_t why = pami_rndv_write_decode(buf, len, data_len, &m);
    if (why != PAMI_WIRE_OK || !ctx->client->tasks[origin_task].local) {
        pami_drop_malformed(ctx, "rndv",
                            "dropped a malformed split-read message from "
                            "task %u (check %d, %zu + %zu bytes)",
                            origin_task, (int)why, len, data_len);
        return;
    }
    if (m.type == RNDV_WRITE_ASK)
        serve(ctx, peer, origin_task, &m);
    else
        take(ctx, peer, origin_task, &m);
}

/*
 * Context destroy, for all contexts of a client at once: their phases are
 * interleaved because a context may need another one (of this task or a
 * peer's) to progress before it can finish.
 *
 * 1. drain: wait until every send has left (its local completion);
 * 2. barrier over the contexts' own active messages, so progress goes on
 *    while tasks wait for each other (a peer may still be fetching a
 *    rendezvous payload from us). Dissemination: in round k a task tells
 *    task + 2^k and waits to hear from task - 2^k;
 * 3. close the endpoints and wait for the closes.
 * Each phase ends at the shutdown deadline at the latest.
 */
#include <string.h>

#include "internal.h"

typedef struct {
    uint32_t round;
    uint32_t reserved;
} pami_bye_t;

void pami_bye_recv(struct pami_context *ctx, const void *payload, size_t len,
                   uint32_t origin_task)
{
    pami_bye_t bye;
    if (len != sizeof(bye)) {
        ctx->stats.dropped_malformed++;
        pami_warn("shutdown", "dropped a %zu-byte shutdown message", len);
        return;
    }
    memcpy(&bye, payload, sizeof(bye));
    if (bye.round >= 64 || (bye.round & 31) >= 31) {
        ctx->stats.dropped_malformed++;
        pami_warn("shutdown", "dropped a shutdown message for round %u from "
                              "task %u", bye.round, origin_task);
        return;
    }
    ctx->bye_rounds |= 1ull << bye.round;
}

/* One step of the barrier of ctx: sends the current round's message once,
 * moves on when the matching one arrived. Returns true when finished. */
static bool barrier_step(struct pami_context *ctx, pami_result_t *rc)
{
    pami_client_impl_t *c = ctx->client;
    for (;;) {
        size_t dist = (size_t)1 << ctx->bye_round;
        if (dist >= c->size || *rc != PAMI_SUCCESS)
            return true;
        uint32_t round = ctx->bye_base + ctx->bye_round;
        if (!ctx->bye_sent) {
            size_t to = (c->task + dist) % c->size;
            pami_bye_t bye = {.round = round};
            uint32_t peer = (uint32_t)(to * c->num_contexts + ctx->offset);
            *rc = pami_send_internal(ctx, peer, PAMI_DISPATCH_BYE, &bye,
                                     sizeof(bye), REQ_BYE);
            ctx->bye_sent = true;
            continue;
        }
        if (!(ctx->bye_rounds & (1ull << round)))
            return false;
        ctx->bye_round++;
        ctx->bye_sent = false;
    }
}

typedef enum { PHASE_DRAIN, PHASE_BARRIER, PHASE_CLOSE } phase_t;

static bool phase_done(struct pami_context *ctx, phase_t phase,
                       pami_result_t *rc)
{
    switch (phase) {
    case PHASE_DRAIN:   return ctx->local_inflight == 0;
    case PHASE_BARRIER: return barrier_step(ctx, rc);
    case PHASE_CLOSE:   return ctx->closing == 0;
    }
    return true;
}

/* Progresses all contexts until each finished the phase or the deadline;
 * sleeps on the first context's event fd when nothing moves. */
static pami_result_t run_phase(pami_context_t *ctxs, size_t n, phase_t phase,
                               uint64_t deadline, pami_result_t *rcs)
{
    for (;;) {
        bool     all = true;
        unsigned events = 0;
        for (size_t i = 0; i < n; i++) {
            if (!phase_done(ctxs[i], phase, &rcs[i]))
                all = false;
            events += pami_progress_once(ctxs[i]);
        }
        if (all)
            return PAMI_SUCCESS;
        if (pami_time_ns() >= deadline)
            return PAMI_TIMEOUT;
        /* One context sleeps on its fd; several nap briefly. */
        if (events == 0) {
            bool armed = n == 1 && ctxs[0]->tp->arm(ctxs[0]->worker) == 0;
            evloop_libev_ops.run_once(ctxs[0]->loop, armed ? 10 : 1);
        }
    }
}

pami_result_t pami_shutdown(pami_context_t *ctxs, size_t n, int timeout_ms)
{
    uint64_t deadline = pami_time_ns() + (uint64_t)timeout_ms * 1000000ull;
    pami_result_t rcs[PAMI_CONTEXT_MAX] = {0};

    /* From here on peers leaving is expected, not worth a warning. */
    for (size_t i = 0; i < n; i++)
        ctxs[i]->closing_down = true;
    pami_result_t rc = run_phase(ctxs, n, PHASE_DRAIN, deadline, rcs);
    if (rc != PAMI_SUCCESS)
        pami_warn("shutdown", "sends still in flight at the deadline");
    pami_result_t brc = run_phase(ctxs, n, PHASE_BARRIER, deadline, rcs);
    /* A second barrier, everyone progressing meanwhile: UCX 1.13 aborts
     * when a worker goes with a connection handshake reply still queued,
     * and such a reply may need its peer's progress to leave. */
    run_phase(ctxs, n, PHASE_DRAIN, deadline, rcs);
    for (size_t i = 0; i < n; i++) {
        ctxs[i]->bye_base  = 32;
        ctxs[i]->bye_round = 0;
        ctxs[i]->bye_sent  = false;
    }
    if (brc == PAMI_SUCCESS)
        brc = run_phase(ctxs, n, PHASE_BARRIER, deadline, rcs);
    for (size_t i = 0; i < n && brc == PAMI_SUCCESS; i++)
        brc = rcs[i];
    if (brc != PAMI_SUCCESS)
        pami_warn("shutdown", "shutdown barrier: %s; closing anyway",
                  pami_error_text(brc));
    /* Our last barrier messages must be out before the close cancels
     * them, and what peers sent before theirs should run here too. */
    run_phase(ctxs, n, PHASE_DRAIN, deadline, rcs);
    for (size_t i = 0; i < n; i++)
        while (pami_progress_once(ctxs[i]) > 0 && pami_time_ns() < deadline)
            ;
    /* Everything was delivered before the barrier ended, so the close
     * need not flush; a flushing close would wait for peers that already
     * left progress. */
    for (size_t i = 0; i < n; i++)
        pami_peers_close(ctxs[i], true);
    if (run_phase(ctxs, n, PHASE_CLOSE, deadline, rcs) != PAMI_SUCCESS)
        pami_warn("shutdown", "endpoints did not close in time");
    return brc;
}

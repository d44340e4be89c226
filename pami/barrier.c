/*
 * The core's own barrier, over each context's active messages so progress
 * goes on while tasks wait for each other (a peer may need us to progress
 * before it can arrive: a queued send, a rendezvous fetch). Used by
 * pami_dispatch_fence and by context destroy.
 *
 * Dissemination: in round k a task tells task + 2^k and waits to hear from
 * task - 2^k. Messages carry an epoch; a peer can be at most one barrier
 * ahead of us, so two masks (by epoch parity) keep early arrivals apart.
 */
#include <string.h>

#include "internal.h"

void pami_barrier_recv(struct pami_context *ctx, const void *payload,
                       size_t len, uint32_t origin_task)
{
    pami_barrier_msg_t m;
    pami_wire_check_t  why = pami_barrier_msg_decode(payload, len, &m);
    if (why == PAMI_WIRE_BAD_LENGTH) {
        pami_drop_malformed(ctx, "barrier",
                            "dropped a %zu-byte barrier message", len);
        return;
    }
    uint32_t ahead = m.epoch - ctx->bar_epoch;
    if (why != PAMI_WIRE_OK || ahead > 1) {
        pami_drop_malformed(ctx, "barrier",
                            "dropped a barrier message (epoch %u round %u) "
                            "from task %u in epoch %u",
                            m.epoch, m.round, origin_task, ctx->bar_epoch);
        return;
    }
    ctx->bar_seen[m.epoch & 1] |= 1ull << m.round;
}

/* Advances ctx's part of the current barrier as far as it can; true once
 * it is through (the context is then ready for the next epoch). */
static bool barrier_step(struct pami_context *ctx, pami_result_t *rc)
{
    pami_client_impl_t *c = ctx->client;
    uint64_t *seen = &ctx->bar_seen[ctx->bar_epoch & 1];
    for (;;) {
        size_t dist = (size_t)1 << ctx->bar_round;
        /* A dead task would hold everyone until the deadline. */
        if (c->tasks_failed && *rc == PAMI_SUCCESS)
            *rc = PAMI_PEER_FAILED;
        if (dist >= c->size || *rc != PAMI_SUCCESS) {
            *seen = 0;
            ctx->bar_epoch++;
            ctx->bar_round = 0;
            ctx->bar_sent  = false;
            ctx->bar_nomem = false;
            return true;
        }
        if (!ctx->bar_sent) {
            size_t to = (c->task + dist) % c->size;
            pami_barrier_msg_t m = {.epoch = ctx->bar_epoch,
                                    .round = ctx->bar_round};
            uint32_t peer = (uint32_t)(to * c->num_contexts + ctx->offset);
            if (pami_send_internal(ctx, peer, PAMI_DISPATCH_BARRIER, &m,
                                   sizeof(m), REQ_BARRIER) != PAMI_SUCCESS) {
                /* No memory for the message (the only failure): failing
                 * here would leave the others waiting for it forever, so
                 * try again at the next step. */
                if (!ctx->bar_nomem)
                    pami_warn("barrier", "no memory for a barrier message "
                                         "to task %zu; trying again", to);
                ctx->bar_nomem = true;
                return false;
            }
            ctx->bar_sent = true;
            continue;
        }
        if (!(*seen & (1ull << ctx->bar_round)))
            return false;
        ctx->bar_round++;
        ctx->bar_sent = false;
    }
}

pami_result_t pami_barrier(struct pami_context **ctxs, size_t n,
                           uint64_t deadline_ns)
{
    pami_result_t rcs[PAMI_CONTEXT_MAX] = {0};
    bool          done[PAMI_CONTEXT_MAX] = {0};
    size_t        left = n;
    bool          async = ctxs[0]->client->progress_running;
    while (left > 0) {
        unsigned events = 0;
        for (size_t i = 0; i < n; i++) {
            /* The progress thread may hold a context: skip it this time. */
            if (async && pthread_mutex_trylock(&ctxs[i]->lock) != 0)
                continue;
            if (!done[i] && barrier_step(ctxs[i], &rcs[i])) {
                done[i] = true;
                left--;
            }
            events += pami_progress_once(ctxs[i]);
            if (async)
                pami_context_release(ctxs[i]);
        }
        if (left == 0)
            break;
        if (pami_time_ns() >= deadline_ns) {
            /* Leave the epoch so a later barrier does not inherit it. */
            for (size_t i = 0; i < n; i++)
                if (!done[i]) {
                    rcs[i] = PAMI_TIMEOUT;
                    barrier_step(ctxs[i], &rcs[i]);
                }
            return PAMI_TIMEOUT;
        }
        if (events == 0)
            pami_idle(ctxs, async ? 0 : n);
    }
    for (size_t i = 0; i < n; i++)
        if (rcs[i] != PAMI_SUCCESS)
            return rcs[i];
    return PAMI_SUCCESS;
}

/* Nothing moved: sleep a little instead of spinning. One context can
 * sleep on its event fd; several nap briefly on the first one's loop. */
void pami_idle(struct pami_context **ctxs, size_t n)
{
    /* n == 0: the contexts are not ours to arm (progress thread). */
    for (size_t i = 0; i < n; i++)
        pami_tasks_watch(ctxs[i]);
    bool armed = n == 1 && ctxs[0]->tp->arm(ctxs[0]->worker) == 0;
    evloop_libev_ops.run_once(ctxs[0]->loop, armed ? 10 : 1);
}

/*
 * The barrier of context destroy, over the context's own active messages
 * so progress continues while tasks wait for each other (a peer may still
 * be fetching a rendezvous payload from us). Dissemination: in round k a
 * task tells task + 2^k and waits to hear from task - 2^k.
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
    if (bye.round >= 64) {
        ctx->stats.dropped_malformed++;
        pami_warn("shutdown", "dropped a shutdown message for round %u from "
                              "task %u", bye.round, origin_task);
        return;
    }
    ctx->bye_rounds |= 1ull << bye.round;
}

/* Progress until every local operation is done or the deadline passes. */
static void drain(struct pami_context *ctx, uint64_t deadline)
{
    while (ctx->inflight > 0 && pami_time_ns() < deadline) {
        if (pami_progress_once(ctx) == 0 && ctx->tp->arm(ctx->worker) == 0)
            evloop_libev_ops.run_once(ctx->loop, 10);
    }
}

pami_result_t pami_shutdown_barrier(struct pami_context *ctx, int timeout_ms)
{
    pami_client_impl_t *c = ctx->client;
    uint64_t deadline = pami_time_ns() + (uint64_t)timeout_ms * 1000000ull;
    size_t   n = c->size, me = c->task;

    /* Sends waiting only for an ack are not ours to finish; do not wait
     * the whole timeout for them here. */
    drain(ctx, deadline);
    for (uint32_t round = 0; ((size_t)1 << round) < n; round++) {
        size_t to = (me + ((size_t)1 << round)) % n;
        pami_bye_t bye = {.round = round};
        uint32_t peer = (uint32_t)(to * c->num_contexts + ctx->offset);
        pami_result_t rc = pami_send_internal(ctx, peer, PAMI_DISPATCH_BYE,
                                              &bye, sizeof(bye), REQ_BYE);
        if (rc != PAMI_SUCCESS)
            return rc;
        while (!(ctx->bye_rounds & (1ull << round))) {
            if (pami_time_ns() >= deadline)
                return PAMI_TIMEOUT;
            if (pami_progress_once(ctx) == 0 && ctx->tp->arm(ctx->worker) == 0)
                evloop_libev_ops.run_once(ctx->loop, 10);
        }
    }
    /* Let what peers sent before their barrier messages run here too. */
    while (pami_progress_once(ctx) > 0 && pami_time_ns() < deadline)
        ;
    return PAMI_SUCCESS;
}

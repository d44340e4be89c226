/*
 * put, get and rmw to a task of this node through this context's mapping
 * of a region pami allocated in shared memory (pami_memregion_alloc):
 * memcpy and the CPU's atomics, done during the call, reported from the
 * next advance (docs/protocols/rma.md, "Load and store").
 */
#include <string.h>

#include "internal.h"

void *pami_rma_shm_base(struct pami_context *ctx, const pami_mr_view_t *v)
{
    /* The last copy that verified is v: its mapping is remembered with
     * it, so a loop of operations on one region looks nothing up. */
    if (likely(ctx->mr_verified_shm != 0))
        return ctx->mr_verified_shm == 1 ? ctx->mr_verified_map : NULL;
    pami_client_impl_t *c = ctx->client;
    void *base = NULL;
    if ((v->flags & PAMI_MR_FLAG_SHM) && v->owner_task != c->task &&
        c->tasks[v->owner_task].local &&
        pami_shm_map_view(ctx, v, &base) != PAMI_SUCCESS)
        base = NULL; /* gone or refused (warned): the usual path decides */
    ctx->mr_verified_map = base;
    ctx->mr_verified_shm = base != NULL ? 1 : 2;
    return base;
}

uint64_t pami_atomic_apply(void *addr, size_t size, int op, uint64_t value,
                           uint64_t compare)
{
    if (size == 4) {
        uint32_t *p = addr, v = (uint32_t)value, old;
        switch (op) {
        case PAMI_RMW_SWAP:
            return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
        case PAMI_RMW_CSWAP:
            old = (uint32_t)compare;
            __atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return old;
        default:
            return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
        }
    }
    uint64_t *p = addr, old;
    switch (op) {
    case PAMI_RMW_SWAP:
        return __atomic_exchange_n(p, value, __ATOMIC_SEQ_CST);
    case PAMI_RMW_CSWAP:
        old = compare;
        __atomic_compare_exchange_n(p, &old, value, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return old;
    default:
        return __atomic_fetch_add(p, value, __ATOMIC_SEQ_CST);
    }
}

pami_result_t pami_rma_report_later(struct pami_context *ctx, uint32_t index,
                                    pami_result_t rc, pami_event_fn local_fn,
                                    pami_event_fn remote_fn, void *cookie,
                                    int32_t region)
{
    pami_request_t *req = pami_request_get(ctx);
    if (unlikely(req == NULL))
        return PAMI_ENOMEM;
    req->kind       = REQ_RMA;
    req->peer       = index;
    req->local_fn   = local_fn;
    req->remote_fn  = remote_fn;
    req->cookie     = cookie;
    req->ack_result = PAMI_SUCCESS;
    /* A local region stays in use until the callbacks ran, as on the
     * other paths: destroy waits for them. */
    if (region >= 0) {
        req->region = region;
        ctx->regions[region].users++;
    }
    pami_request_done(req, rc);
    return PAMI_SUCCESS;
}

pami_result_t pami_rma_shm_xfer(struct pami_context *ctx, uint32_t index,
                                bool put, void *local, size_t bytes,
                                uint8_t *remote, pami_event_fn local_fn,
                                pami_event_fn remote_fn, void *cookie,
                                int32_t region)
{
    if (bytes == 0) {
        /* Nothing moves (local may be NULL). */
    } else if (put) {
        memcpy(remote, local, bytes);
        /* remote_fn says the data is in the owner's memory: the stores
         * are visible to every task before any callback can run. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        memcpy(local, remote, bytes);
    }
    return pami_rma_report_later(ctx, index, PAMI_SUCCESS, local_fn,
                                 remote_fn, cookie, region);
}

pami_result_t pami_rma_shm_rmw(struct pami_context *ctx, uint32_t index,
                               const pami_rmw_t *p, uint8_t *remote)
{
    /* Take the request first: once the atomic is applied, a failure could
     * no longer mean "nothing happened". */
    pami_request_t *req = pami_request_get(ctx);
    if (unlikely(req == NULL))
        return PAMI_ENOMEM;
    uint64_t old = pami_atomic_apply(remote, p->size, p->op, p->value,
                                     p->compare);
    if (p->result != NULL) {
        uint32_t old32 = (uint32_t)old;
        memcpy(p->result, p->size == 4 ? (const void *)&old32
                                       : (const void *)&old, p->size);
    }
    req->kind       = REQ_RMA;
    req->peer       = index;
    req->local_fn   = p->done_fn;
    req->cookie     = p->cookie;
    req->ack_result = PAMI_SUCCESS;
    pami_request_done(req, PAMI_SUCCESS);
    return PAMI_SUCCESS;
}

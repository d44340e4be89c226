/*
 * put, get and rmw to a task of this node through this context's mapping
 * of a region pami allocated in shared memory (pami_memregion_alloc):
 * memcpy and the CPU's atomics, done during the call, reported from the
 * next advance, or at return to a caller that set `completed`
 * (docs/protocols/rma.md, "Load and store").
 */
#include <stdlib.h>
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

static bool done_grow(struct pami_context *ctx)
{
    uint32_t cap = ctx->rma_done_cap ? ctx->rma_done_cap * 2 : 64;
    pami_rma_done_t *r = malloc(cap * sizeof(*r));
    if (r == NULL)
        return false;
    uint32_t n = ctx->rma_done_tail - ctx->rma_done_head;
    for (uint32_t i = 0; i < n; i++)
        r[i] = ctx->rma_done[(ctx->rma_done_head + i) &
                             (ctx->rma_done_cap - 1)];
    free(ctx->rma_done);
    ctx->rma_done      = r;
    ctx->rma_done_cap  = cap;
    ctx->rma_done_head = 0;
    ctx->rma_done_tail = n;
    if (ctx->rma_batch.ctx == NULL) {
        ctx->rma_batch.ctx  = ctx;
        ctx->rma_batch.kind = REQ_RMA;
        ctx->rma_batch.peer = UINT32_MAX;
    }
    return true;
}

/* Room for one more entry (grown when full). */
static inline bool done_room(struct pami_context *ctx)
{
    return likely(ctx->rma_done_tail - ctx->rma_done_head !=
                  ctx->rma_done_cap) ||
           done_grow(ctx);
}

bool pami_rma_done_room(struct pami_context *ctx)
{
    return done_room(ctx);
}

/* Appends an entry there is room for; the batch joins the finished
 * requests if it is not among them. */
static inline void done_push(struct pami_context *ctx, pami_result_t rc,
                             pami_event_fn local_fn, pami_event_fn remote_fn,
                             void *cookie, int32_t region)
{
    pami_rma_done_t *d =
        &ctx->rma_done[ctx->rma_done_tail++ & (ctx->rma_done_cap - 1)];
    d->local_fn  = local_fn;
    d->remote_fn = remote_fn;
    d->cookie    = cookie;
    d->region    = region;
    d->result    = rc;
    /* A local region stays in use until the callbacks ran, as on the
     * other paths: destroy waits for them. */
    if (region >= 0)
        ctx->regions[region].users++;
    if (!ctx->rma_batch.queued)
        pami_request_done(&ctx->rma_batch, PAMI_SUCCESS);
}

pami_result_t pami_rma_report_later(struct pami_context *ctx, uint32_t index,
                                    pami_result_t rc, pami_event_fn local_fn,
                                    pami_event_fn remote_fn, void *cookie,
                                    int32_t region)
{
    (void)index;
    if (!done_room(ctx))
        return PAMI_ENOMEM;
    done_push(ctx, rc, local_fn, remote_fn, cookie, region);
    return PAMI_SUCCESS;
}

unsigned pami_rma_done_report(struct pami_context *ctx)
{
    unsigned n = 0;
    /* A callback may start more: they are run too (as finished requests
     * queued meanwhile are); each entry is copied out first, the ring
     * may grow under it. Gathered CMA operations move first: their
     * callbacks say the data moved. */
    while (ctx->rma_done_head != ctx->rma_done_tail) {
        pami_cma_batch_end(ctx);
        pami_rma_done_t d = ctx->rma_done[ctx->rma_done_head++ &
                                          (ctx->rma_done_cap - 1)];
        if (d.region >= 0)
            ctx->regions[d.region].users--;
        if (d.local_fn != NULL)
            d.local_fn(ctx, d.cookie, d.result);
        if (d.remote_fn != NULL)
            d.remote_fn(ctx, d.cookie, d.result);
        n++;
    }
    return n;
}

void pami_rma_done_free(struct pami_context *ctx)
{
    free(ctx->rma_done);
    ctx->rma_done = NULL;
    ctx->rma_done_cap = ctx->rma_done_head = ctx->rma_done_tail = 0;
}

/* A put or get of a few bytes (a flag, a counter, a pointer) with
 * fixed-size moves instead of a call into the C library. */
static inline void copy_few(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else {
        memcpy(dst, src, n);
    }
}

pami_result_t pami_rma_shm_xfer(struct pami_context *ctx, uint32_t index,
                                bool put, void *local, size_t bytes,
                                uint8_t *remote, pami_event_fn local_fn,
                                pami_event_fn remote_fn, void *cookie,
                                int32_t region, int *completed)
{
    (void)index;
    pami_cma_batch_end(ctx); /* its entries stay the ring's last */
    /* Room first: once the data moved, a failure could no longer mean
     * "nothing happened". A caller that asked to hear completion at
     * return needs none. */
    if (completed == NULL && !done_room(ctx))
        return PAMI_ENOMEM;
    if (bytes == 0) {
        /* Nothing moves (local may be NULL). */
    } else if (put) {
        copy_few(remote, local, bytes);
        /* remote_fn says the data is in the owner's memory: a release
         * fence orders these stores before every store this task makes
         * after the call (the flag or message by which the program tells
         * the owner), so whoever sees that sees the data. x86 keeps
         * stores in order anyway (no instruction); ARM needs a dmb. */
        __atomic_thread_fence(__ATOMIC_RELEASE);
    } else {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        copy_few(local, remote, bytes);
    }
    if (completed != NULL)
        *completed = 1; /* done: no callback will run */
    else
        done_push(ctx, PAMI_SUCCESS, local_fn, remote_fn, cookie, region);
    return PAMI_SUCCESS;
}

pami_result_t pami_rma_shm_rmw(struct pami_context *ctx, uint32_t index,
                               const pami_rmw_t *p, uint8_t *remote)
{
    (void)index;
    pami_cma_batch_end(ctx); /* its entries stay the ring's last */
    if (p->completed == NULL && !done_room(ctx))
        return PAMI_ENOMEM;
    uint64_t old = pami_atomic_apply(remote, p->size, p->op, p->value,
                                     p->compare);
    if (p->result == NULL)
        ;
    else if (p->size == 8)
        memcpy(p->result, &old, 8);
    else {
        uint32_t old32 = (uint32_t)old;
        memcpy(p->result, &old32, 4);
    }
    if (p->completed != NULL)
        *p->completed = 1;
    else
        done_push(ctx, PAMI_SUCCESS, p->done_fn, NULL, p->cookie, -1);
    return PAMI_SUCCESS;
}

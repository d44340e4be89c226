/*
 * One-sided operations: put, get (plain or region-to-region), atomic
 * read-modify-write, and fences. Every remote access is checked against
 * the remote region's bounds before anything is issued.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "params.h"

typedef enum { RMA_PUT, RMA_GET } rma_dir_t;

/* Bounds of [offset, offset + bytes) in a region of `size` bytes, written
 * so that no sum can overflow. */
static inline bool in_bounds(uint64_t size, size_t offset, size_t bytes)
{
    return offset <= size && bytes <= size - offset;
}

/* How an operation reaches the owner's memory (docs/protocols/rma.md,
 * "Paths"). */
typedef enum {
    ROUTE_UCX,    /* UCX RMA/atomics on hardware that checks the key */
    ROUTE_CMA,    /* process_vm_writev/readv on this node */
    ROUTE_SHM,    /* memcpy and CPU atomics on a node peer's shared region
                     mapped here */
    ROUTE_OWNER   /* a message the owner checks and applies itself */
} rma_route_t;

/* UCX does RMA and atomics in hardware only over its RDMA transports (rc,
 * dc); over anything else it emulates them with messages to the owner. */
bool pami_client_has_rdma(pami_client_impl_t *c)
{
    if (c->rdma == 0) {
        c->rdma = 1;
        for (const char *t = c->tp_info.transports; *t != '\0';) {
            if ((t[0] == 'r' || t[0] == 'd') && t[1] == 'c')
                c->rdma = 2;
            const char *comma = strchr(t, ',');
            if (comma == NULL)
                break;
            t = comma + 1;
        }
    }
    return c->rdma == 2;
}

/* v is the copy pami_mr_decode verified last; *shm receives the base of
 * its mapping for ROUTE_SHM. */
static rma_route_t route(struct pami_context *ctx, const pami_mr_view_t *v,
                         bool atomic, uint8_t **shm)
{
    pami_client_impl_t *c = ctx->client;
    if (unlikely(c->config.rma_owner))
        return ROUTE_OWNER;
    if (c->tasks[v->owner_task].local) {
        if ((v->flags & PAMI_MR_FLAG_SHM) &&
            (*shm = pami_rma_shm_base(ctx, v)) != NULL)
            return ROUTE_SHM;
        return atomic || c->cma_denied ? ROUTE_OWNER : ROUTE_CMA;
    }
    /* Every rmw on a shared region is then a CPU atomic on its memory
     * (here, or at the owner), never UCX's, which would not be atomic
     * with those. */
    if (atomic && (v->flags & PAMI_MR_FLAG_SHM))
        return ROUTE_OWNER;
    return pami_client_has_rdma(c) ? ROUTE_UCX : ROUTE_OWNER;
}

/* Checks the target of an operation: a live peer, and a region it owns
 * (sealed by it) that holds [offset, offset + bytes). */
static pami_result_t rma_check(struct pami_context *ctx, pami_endpoint_t dest,
                               const pami_memregion_t *mr, size_t offset,
                               size_t bytes, uint32_t *index,
                               pami_mr_view_t *v)
{
    pami_result_t rc = pami_peer_index(ctx, dest, index);
    if (rc == PAMI_SUCCESS)
        rc = pami_mr_decode(ctx, mr, v);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (unlikely(v->owner_task != pami_ep_task(dest))) {
        pami_warn("rma", "region of task %u used toward task %u",
                  v->owner_task, pami_ep_task(dest));
        return PAMI_INVAL;
    }
    if (unlikely(!in_bounds(v->bytes, offset, bytes))) {
        pami_warn("rma", "access of %zu bytes at offset %zu is outside the "
                         "%llu-byte region of task %u", bytes, offset,
                  (unsigned long long)v->bytes, v->owner_task);
        return PAMI_INVAL;
    }
    if (unlikely(ctx->peers[*index].failed))
        return PAMI_PEER_FAILED;
    return PAMI_SUCCESS;
}

/* The UCX side of a checked target: its endpoint and remote key. */
static pami_result_t rma_ucx_target(struct pami_context *ctx, uint32_t index,
                                    const pami_mr_view_t *v, size_t offset,
                                    pami_peer_t **peer, tp_rkey_t **rkey,
                                    uint64_t *raddr)
{
    pami_result_t rc = pami_peer_by_index(ctx, index, peer);
    if (rc != PAMI_SUCCESS)
        return rc; /* EAGAIN: no endpoint can be made inside a handler */
    rc = pami_rkey_get(ctx, *peer, v, rkey);
    *raddr = v->base + offset;
    return rc;
}

/* The message the owner's path sends for an access to v. */
static pami_rma_msg_t owner_msg(uint8_t type, const pami_mr_view_t *v,
                                size_t offset, size_t bytes)
{
    return (pami_rma_msg_t){.type = type, .owner_ctx = v->owner_ctx,
                            .id = v->id, .generation = v->generation,
                            .offset = offset, .bytes = bytes};
}

/* A request that reports through local_fn when the transport is done. */
static pami_request_t *rma_request(struct pami_context *ctx, uint32_t peer,
                                   pami_event_fn fn, void *cookie)
{
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return NULL;
    req->kind     = REQ_RMA;
    req->peer     = peer;
    req->local_fn = fn;
    req->cookie   = cookie;
    req->tp.fn    = pami_request_tp_done;
    return req;
}

/* Hands the outcome of a transport call to req: done now, later, or
 * failed (then nothing was issued and the caller gets the error). */
static pami_result_t rma_issued(pami_request_t *req, int trc)
{
    if (trc == 1) {
        pami_request_local_start(req);
        return PAMI_SUCCESS;
    }
    if (trc == 0) {
        pami_request_done(req, PAMI_SUCCESS);
        return PAMI_SUCCESS;
    }
    pami_request_put(req);
    return pami_result_from_errno(trc);
}

static pami_result_t rma_issue(struct pami_context *ctx, rma_dir_t dir,
                               uint32_t index, const pami_mr_view_t *vp,
                               rma_route_t how, void *local, size_t bytes,
                               size_t roff, pami_event_fn local_fn,
                               pami_event_fn remote_fn, void *cookie,
                               int32_t region);

/* A node peer's shared region used again: the load-and-store path
 * without a view or a route (docs/protocols/rma.md, "Load and store").
 * PAMI_EAGAIN, which that path never returns, when it does not apply.
 * Apart from rma: the full path's saves of registers stay out of its
 * way. */
static inline pami_result_t rma_shm_try(struct pami_context *ctx,
                                        rma_dir_t dir, pami_endpoint_t dest,
                                        void *local, size_t bytes,
                                        const pami_memregion_t *rmr,
                                        size_t roff, pami_event_fn local_fn,
                                        pami_event_fn remote_fn, void *cookie,
                                        int32_t region, int *completed)
{
    if (ctx->mr_verified_shm != 1)
        return PAMI_EAGAIN;
    uint8_t *at = pami_mr_shm_fast(ctx, dest, rmr, roff, bytes, 0);
    if (at == NULL || (local == NULL && bytes != 0))
        return PAMI_EAGAIN;
    return pami_rma_shm_xfer(ctx, 0, dir == RMA_PUT, local, bytes, at,
                             local_fn, remote_fn, cookie, region, completed);
}

/* completed: the caller's pami_rma_t.completed (NULL: callbacks always);
 * written on success only. */
static __attribute__((noinline)) pami_result_t
rma(struct pami_context *ctx, rma_dir_t dir, pami_endpoint_t dest,
    void *local, size_t bytes, const pami_memregion_t *rmr, size_t roff,
    pami_event_fn local_fn, pami_event_fn remote_fn, void *cookie,
    int32_t region, int *completed)
{
    uint32_t       index;
    pami_mr_view_t v;
    pami_result_t  rc = rma_check(ctx, dest, rmr, roff, bytes, &index, &v);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    if (unlikely(bytes > 0 && local == NULL)) {
        pami_warn("rma", "NULL local buffer for %zu bytes", bytes);
        return PAMI_INVAL;
    }
    uint8_t    *shm = NULL;
    rma_route_t how = route(ctx, &v, false, &shm);
    /* Gathered CMA operations move before any other path's: issued in
     * order, done in order. */
    if (how != ROUTE_CMA)
        pami_cma_batch_end(ctx);
    if (how == ROUTE_SHM)
        return pami_rma_shm_xfer(ctx, index, dir == RMA_PUT, local, bytes,
                                 shm + roff, local_fn, remote_fn, cookie,
                                 region, completed);
    rc = rma_issue(ctx, dir, index, &v, how, local, bytes, roff, local_fn,
                   remote_fn, cookie, region);
    if (rc == PAMI_SUCCESS && completed != NULL)
        *completed = 0; /* every other path reports from advance */
    return rc;
}

/* The paths that report from advance: CMA, the owner's, UCX. */
static pami_result_t rma_issue(struct pami_context *ctx, rma_dir_t dir,
                               uint32_t index, const pami_mr_view_t *vp,
                               rma_route_t how, void *local, size_t bytes,
                               size_t roff, pami_event_fn local_fn,
                               pami_event_fn remote_fn, void *cookie,
                               int32_t region)
{
    pami_result_t rc;
    if (how == ROUTE_CMA) {
        rc = pami_rma_claim_start(ctx, dir == RMA_GET, index, vp, roff, local,
                                  bytes, local_fn, remote_fn, cookie, region);
        if (rc != PAMI_EAGAIN)
            return rc;
    }
    /* Claimed puts and gets to this task before it land before it (taken
     * back when the owner has not applied them yet). */
    if (how == ROUTE_CMA && unlikely(ctx->claims_out != 0))
        pami_rma_claims_settle(ctx, index);
    if (how == ROUTE_CMA && bytes >= ctx->client->config.cma_split &&
        ctx->client->config.cma_split != 0) {
        pami_cma_batch_end(ctx);
        pami_rma_msg_t part = owner_msg(PAMI_RMA_MSG_HELP, vp, roff, bytes);
        rc = pami_rma_help_start(ctx, index, dir == RMA_PUT, local, bytes,
                                 vp->base + roff, &part, local_fn, remote_fn,
                                 cookie, region);
        if (rc != PAMI_EAGAIN)
            return rc;
    }
    if (how == ROUTE_CMA) {
        rc = pami_rma_cma(ctx, index, dir == RMA_PUT, local, bytes,
                          vp->base + roff, local_fn, remote_fn, cookie,
                          region);
        if (rc != PAMI_EAGAIN)
            return rc;
        how = ROUTE_OWNER;
    }
    if (how == ROUTE_OWNER) {
        pami_rma_msg_t m = owner_msg(dir == RMA_PUT ? PAMI_RMA_MSG_PUT
                                                    : PAMI_RMA_MSG_GET,
                                     vp, roff, bytes);
        size_t piece = ctx->client->config.rma_owner_piece;
        if (piece != 0 && bytes > piece)
            return pami_rma_owner_pieces(ctx, index, &m, local, piece,
                                         local_fn, remote_fn, cookie,
                                         region);
        return pami_rma_owner_start(ctx, index, &m, local,
                                    dir == RMA_GET ? local : NULL,
                                    dir == RMA_GET ? bytes : 0, local_fn,
                                    remote_fn, cookie, region);
    }
    pami_peer_t *peer;
    tp_rkey_t   *rkey = NULL;
    uint64_t     raddr;
    rc = rma_ucx_target(ctx, index, vp, roff, &peer, &rkey, &raddr);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    pami_request_t *req = rma_request(ctx, peer->index, local_fn, cookie);
    /* The flush behind remote_fn is taken first: once the put is out, an
     * error could no longer mean "nothing was sent". */
    pami_request_t *flush = NULL;
    if (likely(req != NULL) && remote_fn != NULL &&
        (flush = rma_request(ctx, peer->index, remote_fn, cookie)) == NULL) {
        pami_request_put(req);
        req = NULL;
    }
    if (unlikely(req == NULL))
        return PAMI_ENOMEM;
    int trc = 0;
    if (bytes > 0)
        trc = dir == RMA_PUT
                  ? ctx->tp->put(peer->ep, local, bytes, raddr, rkey, &req->tp)
                  : ctx->tp->get(peer->ep, local, bytes, raddr, rkey, &req->tp);
    rc = rma_issued(req, trc);
    if (rc != PAMI_SUCCESS) {
        if (flush != NULL)
            pami_request_put(flush);
        return rc;
    }
    if (region >= 0) {
        req->region = region;
        ctx->regions[region].users++;
    }
    /* Remote completion of a put is a flush of the endpoint behind it; if
     * the flush cannot start, remote_fn hears it. */
    if (flush != NULL) {
        int frc = ctx->tp->ep_flush(peer->ep, &flush->tp);
        if (frc == 1)
            pami_request_local_start(flush);
        else
            pami_request_done(flush, pami_result_from_errno(frc));
    }
    return PAMI_SUCCESS;
}

/* The layouts a program may pass (params.h): the target and the range
 * are required, callbacks and cookie may be missing (then zero). */
/* put or get of p while the copy verified last has a mapping: the
 * load-and-store path when p's copy is that one, else rma. Apart from
 * pami_put and pami_get, whose other paths then pay one compare. */
static __attribute__((noinline)) pami_result_t
rma_mapped(struct pami_context *ctx, rma_dir_t dir, const pami_rma_t *p)
{
    pami_event_fn remote_fn = dir == RMA_PUT ? p->remote_fn : NULL;
    pami_result_t rc = rma_shm_try(ctx, dir, p->dest, p->local, p->bytes,
                                   p->remote_mr, p->remote_offset,
                                   p->local_fn, remote_fn, p->cookie, -1,
                                   p->completed);
    if (likely(rc != PAMI_EAGAIN))
        return rc;
    return rma(ctx, dir, p->dest, p->local, p->bytes, p->remote_mr,
               p->remote_offset, p->local_fn, remote_fn, p->cookie, -1,
               p->completed);
}

PAMI_PARAMS_LAYOUTS(rma_layouts, pami_rma_t,
                    PAMI_PARAMS_PREFIX(pami_rma_t, remote_offset),
                    PAMI_PARAMS_PREFIX(pami_rma_t, local_fn),
                    PAMI_PARAMS_PREFIX(pami_rma_t, remote_fn),
                    PAMI_PARAMS_PREFIX(pami_rma_t, cookie));
PAMI_PARAMS_LAYOUTS(rrma_layouts, pami_rrma_t,
                    PAMI_PARAMS_PREFIX(pami_rrma_t, bytes),
                    PAMI_PARAMS_PREFIX(pami_rrma_t, local_fn),
                    PAMI_PARAMS_PREFIX(pami_rrma_t, remote_fn),
                    PAMI_PARAMS_PREFIX(pami_rrma_t, cookie));
PAMI_PARAMS_LAYOUTS(rmw_layouts, pami_rmw_t,
                    PAMI_PARAMS_PREFIX(pami_rmw_t, value),
                    PAMI_PARAMS_PREFIX(pami_rmw_t, compare),
                    PAMI_PARAMS_PREFIX(pami_rmw_t, result),
                    PAMI_PARAMS_PREFIX(pami_rmw_t, done_fn),
                    PAMI_PARAMS_PREFIX(pami_rmw_t, cookie));

pami_result_t pami_put_sized(pami_context_t ctx, const pami_rma_t *p,
                             size_t size)
{
    PAMI_CHECK(ctx != NULL && p != NULL, PAMI_INVAL, "rma",
               "put with a NULL context or params");
    pami_rma_t    buf;
    pami_result_t rc = pami_params_in(&rma_layouts, p, size, &buf,
                                      (const void **)&p);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (ctx->mr_verified_shm == 1)
        return rma_mapped(ctx, RMA_PUT, p);
    return rma(ctx, RMA_PUT, p->dest, p->local, p->bytes, p->remote_mr,
               p->remote_offset, p->local_fn, p->remote_fn, p->cookie, -1,
               p->completed);
}

pami_result_t pami_get_sized(pami_context_t ctx, const pami_rma_t *p,
                             size_t size)
{
    PAMI_CHECK(ctx != NULL && p != NULL, PAMI_INVAL, "rma",
               "get with a NULL context or params");
    pami_rma_t    buf;
    pami_result_t rc = pami_params_in(&rma_layouts, p, size, &buf,
                                      (const void **)&p);
    if (rc != PAMI_SUCCESS)
        return rc;
    PAMI_CHECK(p->remote_fn == NULL, PAMI_INVAL, "rma",
               "get has no remote completion; use local_fn");
    if (ctx->mr_verified_shm == 1)
        return rma_mapped(ctx, RMA_GET, p);
    return rma(ctx, RMA_GET, p->dest, p->local, p->bytes, p->remote_mr,
               p->remote_offset, p->local_fn, NULL, p->cookie, -1,
               p->completed);
}

/* The local side of rput/rget: a live region of this context. */
static pami_result_t local_side(struct pami_context *ctx,
                                const pami_rrma_t *p, void **addr,
                                int32_t *region)
{
    pami_mr_view_t v;
    pami_region_t *r = pami_region_local(ctx, p->local_mr, &v);
    if (r == NULL)
        return PAMI_INVAL;
    if (!in_bounds(r->bytes, p->local_offset, p->bytes)) {
        pami_warn("rma", "access of %zu bytes at offset %zu is outside the "
                         "local %llu-byte region", p->bytes, p->local_offset,
                  (unsigned long long)r->bytes);
        return PAMI_INVAL;
    }
    *addr   = (void *)(uintptr_t)(r->base + p->local_offset);
    *region = (int32_t)v.id;
    return PAMI_SUCCESS;
}

/* rput/rget: resolve the local region, then as put/get. */
static pami_result_t rrma(struct pami_context *ctx, rma_dir_t dir,
                          const pami_rrma_t *p, size_t size)
{
    PAMI_CHECK(ctx != NULL && p != NULL, PAMI_INVAL, "rma",
               "rput/rget with a NULL context or params");
    pami_rrma_t   buf;
    pami_result_t prc = pami_params_in(&rrma_layouts, p, size, &buf,
                                       (const void **)&p);
    if (prc != PAMI_SUCCESS)
        return prc;
    PAMI_CHECK(dir == RMA_PUT || p->remote_fn == NULL, PAMI_INVAL, "rma",
               "rget has no remote completion; use local_fn");
    void   *addr;
    int32_t region;
    pami_result_t rc = local_side(ctx, p, &addr, &region);
    if (rc != PAMI_SUCCESS)
        return rc;
    rc = rma_shm_try(ctx, dir, p->dest, addr, p->bytes, p->remote_mr,
                     p->remote_offset, p->local_fn, p->remote_fn, p->cookie,
                     region, p->completed);
    if (likely(rc != PAMI_EAGAIN))
        return rc;
    return rma(ctx, dir, p->dest, addr, p->bytes, p->remote_mr,
               p->remote_offset, p->local_fn, p->remote_fn, p->cookie, region,
               p->completed);
}

pami_result_t pami_rput_sized(pami_context_t ctx, const pami_rrma_t *p,
                              size_t size)
{
    return rrma(ctx, RMA_PUT, p, size);
}

pami_result_t pami_rget_sized(pami_context_t ctx, const pami_rrma_t *p,
                              size_t size)
{
    return rrma(ctx, RMA_GET, p, size);
}

static pami_result_t rmw_issue(struct pami_context *ctx, uint32_t index,
                               const pami_mr_view_t *vp, rma_route_t how,
                               const pami_rmw_t *p, bool cswap);

static pami_result_t rmw_full(struct pami_context *ctx, const pami_rmw_t *p);

pami_result_t pami_rmw_sized(pami_context_t ctx, const pami_rmw_t *p,
                             size_t size)
{
    PAMI_CHECK(ctx != NULL && p != NULL, PAMI_INVAL, "rma",
               "rmw with a NULL context or params");
    pami_rmw_t    buf;
    pami_result_t prc = pami_params_in(&rmw_layouts, p, size, &buf,
                                       (const void **)&p);
    if (prc != PAMI_SUCCESS)
        return prc;
    PAMI_CHECK((unsigned)p->op <= PAMI_RMW_ADD, PAMI_INVAL, "rma",
               "unknown rmw operation %d", (int)p->op);
    PAMI_CHECK(p->size == 4 || p->size == 8, PAMI_INVAL, "rma",
               "rmw of %zu bytes; 4 or 8", p->size);

    PAMI_CHECK(p->result != NULL || p->op == PAMI_RMW_ADD, PAMI_INVAL, "rma",
               "rmw that fetches needs a result buffer");
    /* The compare-and-swap's *result rule (rmw_full) means nothing here:
     * the old value is written over it during the call. */
    if (ctx->mr_verified_shm == 1) {
        uint8_t *at = pami_mr_shm_fast(ctx, p->dest, p->remote_mr,
                                       p->remote_offset, p->size,
                                       p->size - 1);
        if (likely(at != NULL))
            return pami_rma_shm_rmw(ctx, 0, p, at);
    }
    return rmw_full(ctx, p);
}

/* Every rmw path but the check before it (pami_rmw_sized). Not inlined:
 * its saves of registers stay out of that check's way. */
static __attribute__((noinline)) pami_result_t
rmw_full(struct pami_context *ctx, const pami_rmw_t *p)
{
    uint32_t       index;
    pami_mr_view_t v;
    pami_result_t  rc = rma_check(ctx, p->dest, p->remote_mr,
                                  p->remote_offset, p->size, &index, &v);
    if (rc != PAMI_SUCCESS)
        return rc;
    /* size is 4 or 8: a mask, not a division (tens of cycles). */
    PAMI_CHECK(((v.base + p->remote_offset) & (p->size - 1)) == 0,
               PAMI_INVAL, "rma",
               "rmw at address 0x%llx is not aligned to %zu",
               (unsigned long long)(v.base + p->remote_offset), p->size);
    /* For a compare-and-swap UCX wants the new value in the reply buffer,
     * where the old value comes back; the owner's path writes it too, so
     * *result means the same on every path. */
    bool     cswap = p->op == PAMI_RMW_CSWAP;
    uint32_t new32 = (uint32_t)p->value;
    if (cswap)
        memcpy(p->result, p->size == 4 ? (const void *)&new32
                                       : (const void *)&p->value, p->size);
    pami_cma_batch_end(ctx);
    uint8_t    *shm = NULL;
    rma_route_t how = route(ctx, &v, true, &shm);
    if (how == ROUTE_SHM)
        return pami_rma_shm_rmw(ctx, index, p, shm + p->remote_offset);
    pami_result_t orc = rmw_issue(ctx, index, &v, how, p, cswap);
    if (orc == PAMI_SUCCESS && p->completed != NULL)
        *p->completed = 0; /* reported from advance */
    return orc;
}

/* The rmw paths that report from advance: the owner's and UCX. */
static pami_result_t rmw_issue(struct pami_context *ctx, uint32_t index,
                               const pami_mr_view_t *vp, rma_route_t how,
                               const pami_rmw_t *p, bool cswap)
{
    static const int tp_op[] = {
        [PAMI_RMW_FETCH_ADD] = TP_ATOMIC_FADD,
        [PAMI_RMW_SWAP]      = TP_ATOMIC_SWAP,
        [PAMI_RMW_CSWAP]     = TP_ATOMIC_CSWAP,
        [PAMI_RMW_ADD]       = TP_ATOMIC_ADD,
    };
    pami_result_t rc;
    if (how == ROUTE_OWNER) {
        pami_rma_msg_t m = owner_msg(PAMI_RMA_MSG_ATOMIC, vp,
                                     p->remote_offset, p->size);
        m.op      = (uint8_t)p->op;
        m.size    = (uint8_t)p->size;
        m.operand = p->value;
        m.compare = p->compare;
        return pami_rma_owner_start(ctx, index, &m, NULL, p->result,
                                    p->result != NULL ? p->size : 0,
                                    p->done_fn, NULL, p->cookie, -1);
    }
    pami_peer_t *peer;
    tp_rkey_t   *rkey = NULL;
    uint64_t     raddr;
    rc = rma_ucx_target(ctx, index, vp, p->remote_offset, &peer, &rkey,
                        &raddr);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_request_t *req = rma_request(ctx, peer->index, p->done_fn, p->cookie);
    if (req == NULL)
        return PAMI_ENOMEM;
    /* The operand lives in the request until UCX has taken it; for a
     * compare-and-swap it is the compare value. */
    uint64_t operand = cswap ? p->compare : p->value;
    uint32_t op32    = (uint32_t)operand;
    memcpy(req->inline_hdr, p->size == 4 ? (const void *)&op32
                                         : (const void *)&operand, p->size);
    return rma_issued(req, ctx->tp->atomic(peer->ep, tp_op[p->op], p->size,
                                           req->inline_hdr, p->result, raddr,
                                           rkey, &req->tp));
}

/* A fence of several parts (UCX's flush, and a FENCE through the owner's
 * path to each endpoint that had operations on it) is a join
 * (pami_rma_join_t): fn runs once, after the last part, with the first
 * error. */
static void fence_owner(struct pami_context *ctx, uint32_t index,
                        pami_rma_join_t *j)
{
    pami_result_t rc;
    if (!ctx->peers[index].owner_used) {
        /* Only claimed puts went there: a FENCE the caller may take back
         * when the owner does not progress. */
        rc = pami_rma_claim_fence(ctx, index, pami_rma_join_part, j);
        if (rc == PAMI_EAGAIN)
            return; /* settled here: nothing left to wait for */
    } else {
        pami_rma_msg_t m = {.type = PAMI_RMA_MSG_FENCE};
        rc = pami_rma_owner_start(ctx, index, &m, NULL, NULL, 0,
                                  pami_rma_join_part, NULL, j, -1);
    }
    if (rc == PAMI_SUCCESS)
        j->left++;
    else if (j->result == PAMI_SUCCESS)
        j->result = rc;
}

/* Does a fence ask the owner of endpoint i: operations went through
 * its path (claimed puts included)? */
static bool fence_asks(struct pami_context *ctx, uint32_t i)
{
    return !ctx->peers[i].failed &&
           (ctx->peers[i].owner_used || pami_rma_claims_to(ctx, i));
}

/* fn after the transport's flush (req_issue: flush of one endpoint or of
 * the worker) and the owner's answer on every endpoint of `which` (one
 * index, or UINT32_MAX: all) that had operations through the owner. */
static pami_result_t fence(struct pami_context *ctx, pami_peer_t *peer,
                           uint32_t which, pami_event_fn fn, void *cookie)
{
    /* Gathered CMA puts are complete once moved: before fn can run. */
    pami_cma_batch_end(ctx);
    size_t n = ctx->client->size * ctx->client->num_contexts;
    bool   owner = false;
    for (size_t i = 0; i < n && !owner; i++)
        owner = (which == UINT32_MAX || i == which) &&
                fence_asks(ctx, (uint32_t)i);
    if (!owner) {
        pami_request_t *req = rma_request(ctx, which, fn, cookie);
        if (req == NULL)
            return PAMI_ENOMEM;
        return rma_issued(req, peer != NULL
                                   ? ctx->tp->ep_flush(peer->ep, &req->tp)
                                   : ctx->tp->worker_flush(ctx->worker,
                                                           &req->tp));
    }
    pami_rma_join_t *j = calloc(1, sizeof(*j));
    pami_request_t  *req =
        j != NULL ? rma_request(ctx, which, pami_rma_join_part, j) : NULL;
    if (req == NULL) {
        free(j);
        return PAMI_ENOMEM;
    }
    j->local_fn = fn;
    j->cookie   = cookie;
    pami_result_t rc = rma_issued(
        req, peer != NULL ? ctx->tp->ep_flush(peer->ep, &req->tp)
                          : ctx->tp->worker_flush(ctx->worker, &req->tp));
    if (rc != PAMI_SUCCESS) {
        free(j);
        return rc;
    }
    j->left = 1;
    for (size_t i = 0; i < n; i++)
        if ((which == UINT32_MAX || i == which) &&
            fence_asks(ctx, (uint32_t)i))
            fence_owner(ctx, (uint32_t)i, j);
    return PAMI_SUCCESS;
}

pami_result_t pami_fence_endpoint(pami_context_t ctx, pami_endpoint_t dest,
                                  pami_event_fn fn, void *cookie)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "rma", "fence on a NULL context");
    uint32_t      index;
    pami_peer_t  *peer;
    pami_result_t rc = pami_peer_index(ctx, dest, &index);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (ctx->peers[index].failed)
        return PAMI_PEER_FAILED;
    rc = pami_peer_by_index(ctx, index, &peer);
    if (rc != PAMI_SUCCESS)
        return rc;
    return fence(ctx, peer, index, fn, cookie);
}

pami_result_t pami_fence_all(pami_context_t ctx, pami_event_fn fn,
                             void *cookie)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "rma", "fence on a NULL context");
    return fence(ctx, NULL, UINT32_MAX, fn, cookie);
}

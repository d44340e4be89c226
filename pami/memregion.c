/*
 * Memory regions: a per-context table of local registrations, the
 * fixed-size wire form of pami_memregion_t, and a cache of remote keys
 * unpacked per peer so the RMA hot path does not unpack every time.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "siphash.h"

#define MR_MAGIC   0x524d4150u /* "PAMR" */
#define MR_VERSION 2
/* Bytes of the wire form before the seal: everything it covers but the
 * key bytes. */
#define MR_SEALED_HEAD 40

/* The layout behind pami_memregion_t (docs/protocols/rma.md). */
typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t rkey_len;
    uint32_t owner_task;
    uint16_t owner_ctx;
    uint16_t flags;       /* PAMI_MR_FLAG_*; unknown bits are refused */
    uint32_t id;          /* slot in the owner context's region table */
    uint32_t generation;  /* of that slot: a stale copy is told apart */
    uint64_t base;
    uint64_t bytes;
    uint64_t seal;        /* SipHash-2-4 under the owner's job secret */
    uint8_t  rkey[PAMI_MEMREGION_SIZE - 48];
} mr_wire_t;

_Static_assert(sizeof(mr_wire_t) == sizeof(pami_memregion_t),
               "pami_memregion_t and its wire form differ in size");
_Static_assert(offsetof(mr_wire_t, seal) == MR_SEALED_HEAD,
               "the seal follows the fields it covers");

/* The seal covers the 40 bytes in front of it and the packed key. */
static uint64_t mr_seal(const mr_wire_t *w, const uint8_t *secret)
{
    size_t klen = w->rkey_len <= sizeof(w->rkey) ? w->rkey_len : 0;
    return pami_siphash24_2(secret, w, MR_SEALED_HEAD, w->rkey, klen);
}

/* The view of w, whose form and seal were verified. */
static void mr_view(const mr_wire_t *w, const void *buf, pami_mr_view_t *v)
{
    v->owner_task = w->owner_task;
    v->owner_ctx  = w->owner_ctx;
    v->id         = w->id;
    v->generation = w->generation;
    v->base       = w->base;
    v->bytes      = w->bytes;
    v->flags      = w->flags;
    v->rkey       = (const uint8_t *)buf + offsetof(mr_wire_t, rkey);
}

pami_mr_verdict_t pami_mr_wire_decode(const void *buf, size_t len,
                                      const uint8_t *secrets, size_t ntasks,
                                      pami_mr_view_t *v)
{
    mr_wire_t w;
    if (buf == NULL || len != sizeof(w))
        return PAMI_MR_BAD_FORM;
    memcpy(&w, buf, sizeof(w));
    if (w.magic != MR_MAGIC || w.version != MR_VERSION ||
        (w.flags & ~(PAMI_MR_FLAG_SHM | PAMI_MR_FLAG_JOBDIR)) != 0 ||
        w.flags == PAMI_MR_FLAG_JOBDIR ||
        w.rkey_len == 0 || w.rkey_len > sizeof(w.rkey))
        return PAMI_MR_BAD_FORM;
    if (w.owner_task >= ntasks)
        return PAMI_MR_BAD_OWNER;
    /* Nothing else is read before the owner's seal says it made these
     * bytes. */
    uint64_t want = mr_seal(&w, secrets + (size_t)w.owner_task *
                                              PAMI_SIPHASH_KEY_LEN);
    if (want != w.seal)
        return PAMI_MR_BAD_SEAL;
    mr_view(&w, buf, v);
    return PAMI_MR_OK;
}

static const char *verdict_text(pami_mr_verdict_t r)
{
    switch (r) {
    case PAMI_MR_BAD_FORM:  return "is not a memory region of this version";
    case PAMI_MR_BAD_OWNER: return "names an owner outside the job";
    case PAMI_MR_BAD_SEAL:  return "fails its owner's seal (forged, "
                                   "corrupted, or of another job)";
    default:                return "is fine";
    }
}

/* Whether mr holds the bytes of the last verified copy: the head and
 * seal as six words, then the key (its length is in the head). */
static inline bool same_as_verified(const struct pami_context *ctx,
                                    const pami_memregion_t *mr)
{
    /* Copied, not read in place: a copy may sit unaligned in a packet. */
    uint64_t a[6];
    memcpy(a, mr, sizeof(a));
    const uint64_t *b = ctx->mr_verified.opaque;
    if (((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) |
         (a[4] ^ b[4]) | (a[5] ^ b[5])) != 0)
        return false;
    size_t key = ctx->mr_verified_len - offsetof(mr_wire_t, rkey);
    return memcmp((const uint8_t *)mr + sizeof(a), b + 6, key) == 0;
}
_Static_assert(offsetof(mr_wire_t, rkey) == 6 * sizeof(uint64_t),
               "same_as_verified compares the head and the seal as words");

/* A copy that came from anywhere: trusted only when its owner sealed it.
 * The last copy that verified on this context is kept: the same bytes
 * again (a program's loop of puts) need no second seal computation. */
pami_result_t pami_mr_decode(struct pami_context *ctx,
                             const pami_memregion_t *mr, pami_mr_view_t *v)
{
    pami_client_impl_t *c = ctx->client;
    if (mr == NULL) {
        pami_warn("rma", "NULL memory region");
        return PAMI_INVAL;
    }
    const mr_wire_t *last = (const mr_wire_t *)&ctx->mr_verified;
    if (likely(ctx->mr_verified_len > 0) && same_as_verified(ctx, mr)) {
        mr_view(last, last, v);
        return PAMI_SUCCESS;
    }
    pami_mr_verdict_t r = pami_mr_wire_decode(mr, sizeof(*mr), c->secrets,
                                              c->size, v);
    if (likely(r == PAMI_MR_OK)) {
        memcpy(&ctx->mr_verified, mr, sizeof(*mr));
        ctx->mr_verified_shm = 0;
        ctx->mr_verified_len = offsetof(mr_wire_t, rkey) +
                               ((const mr_wire_t *)mr)->rkey_len;
        return PAMI_SUCCESS;
    }
    ctx->stats.bad_regions++;
    pami_warn("rma", "refused a memory region that %s", verdict_text(r));
    return PAMI_INVAL;
}

/* The hot path of load and store: a loop of operations on one shared
 * region checks the copy against the last verified one and reuses the
 * mapping kept with it, without building a view or asking route. NULL
 * leaves every decision (and every error and log line) to the full path. */
uint8_t *pami_mr_shm_fast(struct pami_context *ctx, pami_endpoint_t dest,
                          const pami_memregion_t *mr, size_t offset,
                          size_t bytes, uint64_t align_mask)
{
    if (ctx->mr_verified_shm != 1 || mr == NULL || !same_as_verified(ctx, mr))
        return NULL;
    const mr_wire_t    *w = (const mr_wire_t *)&ctx->mr_verified;
    pami_client_impl_t *c = ctx->client;
    uint32_t task = pami_ep_task(dest), off = pami_ep_offset(dest);
    if (unlikely(task != w->owner_task || off >= c->num_contexts ||
                 offset > w->bytes || bytes > w->bytes - offset ||
                 ((w->base + offset) & align_mask) != 0 ||
                 ctx->peers[task * (uint32_t)c->num_contexts + off].failed))
        return NULL;
    return (uint8_t *)ctx->mr_verified_map + offset;
}

/* pami_memregion_query has no context: it checks a copy against the
 * secrets of every client of this process. */
static pthread_mutex_t     jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pami_client_impl_t *jobs[8];

void pami_mr_job_add(pami_client_impl_t *c)
{
    size_t i = 0, n = sizeof(jobs) / sizeof(jobs[0]);
    pthread_mutex_lock(&jobs_lock);
    while (i < n && jobs[i] != NULL)
        i++;
    if (i < n)
        jobs[i] = c;
    pthread_mutex_unlock(&jobs_lock);
    if (i == n)
        pami_warn("rma", "more than %zu clients at once: "
                         "pami_memregion_query refuses the regions of client "
                         "'%s'", n, c->name);
}

void pami_mr_job_remove(pami_client_impl_t *c)
{
    pthread_mutex_lock(&jobs_lock);
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
        if (jobs[i] == c)
            jobs[i] = NULL;
    pthread_mutex_unlock(&jobs_lock);
}

static pami_mr_verdict_t query_decode(const pami_memregion_t *mr,
                                      pami_mr_view_t *v)
{
    pami_mr_verdict_t best = PAMI_MR_BAD_FORM;
    pthread_mutex_lock(&jobs_lock);
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        if (jobs[i] == NULL)
            continue;
        pami_mr_verdict_t r = pami_mr_wire_decode(mr, sizeof(*mr),
                                                  jobs[i]->secrets,
                                                  jobs[i]->size, v);
        if (r == PAMI_MR_OK || r > best)
            best = r;
        if (r == PAMI_MR_OK)
            break;
    }
    pthread_mutex_unlock(&jobs_lock);
    return best;
}

pami_result_t pami_memregion_query(const pami_memregion_t *mr, void **base,
                                   size_t *bytes, pami_endpoint_t *owner)
{
    pami_mr_view_t v;
    PAMI_CHECK(mr != NULL, PAMI_INVAL, "rma", "query of a NULL region");
    pami_mr_verdict_t r = query_decode(mr, &v);
    if (r != PAMI_MR_OK) {
        pami_warn("rma", "query of a memory region that %s",
                  verdict_text(r));
        return PAMI_INVAL;
    }
    if (base != NULL)
        *base = (void *)(uintptr_t)v.base;
    if (bytes != NULL)
        *bytes = v.bytes;
    if (owner != NULL)
        *owner = (v.owner_task << 8) | v.owner_ctx;
    return PAMI_SUCCESS;
}

pami_result_t pami_region_slot(struct pami_context *ctx, uint32_t *id)
{
    for (uint32_t i = 0; i < ctx->nregions; i++)
        if (!ctx->regions[i].live) {
            *id = i;
            return PAMI_SUCCESS;
        }
    size_t cap = ctx->nregions ? ctx->nregions * 2 : 16;
    pami_region_t *r = realloc(ctx->regions, cap * sizeof(*r));
    if (r == NULL)
        return PAMI_ENOMEM;
    memset(r + ctx->nregions, 0, (cap - ctx->nregions) * sizeof(*r));
    ctx->regions = r;
    *id = (uint32_t)ctx->nregions;
    ctx->nregions = cap;
    return PAMI_SUCCESS;
}

pami_result_t pami_mr_pack(struct pami_context *ctx, void *addr, size_t bytes,
                           uint32_t id, pami_region_t *r, pami_memregion_t *mr)
{
    mr_wire_t w = {0};
    size_t    rkey_len = sizeof(w.rkey);
    int trc = ctx->tp->mem_reg(ctx->client->tp_ctx, addr, bytes, &r->mem,
                               w.rkey, &rkey_len);
    if (trc != 0)
        return pami_result_from_errno(trc);
    r->live  = true;
    r->base  = (uint64_t)(uintptr_t)addr;
    r->bytes = bytes;
    r->users = 0;
    r->generation++;
    w.magic      = MR_MAGIC;
    w.version    = MR_VERSION;
    w.rkey_len   = (uint16_t)rkey_len;
    w.owner_task = ctx->client->task;
    w.owner_ctx  = (uint16_t)ctx->offset;
    w.flags      = r->shm_bytes == 0 ? 0
                   : r->shm_in_dir  ? PAMI_MR_FLAG_SHM | PAMI_MR_FLAG_JOBDIR
                                    : PAMI_MR_FLAG_SHM;
    w.id         = id;
    w.generation = r->generation;
    w.base       = r->base;
    w.bytes      = bytes;
    w.seal       = mr_seal(&w, ctx->client->secrets +
                                   (size_t)ctx->client->task *
                                       PAMI_SIPHASH_KEY_LEN);
    memcpy(mr, &w, sizeof(w));
    return PAMI_SUCCESS;
}

pami_result_t pami_memregion_create(pami_context_t ctx, void *addr,
                                    size_t bytes, pami_memregion_t *mr)
{
    PAMI_CHECK(ctx != NULL && mr != NULL, PAMI_INVAL, "rma",
               "memregion_create with a NULL context or output");
    PAMI_CHECK(addr != NULL && bytes > 0, PAMI_INVAL, "rma",
               "memregion_create of %p, %zu bytes: need memory", addr, bytes);
    uint32_t id;
    pami_result_t rc = pami_region_slot(ctx, &id);
    if (rc != PAMI_SUCCESS)
        return rc;
    return pami_mr_pack(ctx, addr, bytes, id, &ctx->regions[id], mr);
}

pami_region_t *pami_region_local(struct pami_context *ctx,
                                 const pami_memregion_t *mr,
                                 pami_mr_view_t *v)
{
    if (pami_mr_decode(ctx, mr, v) != PAMI_SUCCESS)
        return NULL;
    if (v->owner_task != ctx->client->task || v->owner_ctx != ctx->offset ||
        v->id >= ctx->nregions || !ctx->regions[v->id].live ||
        ctx->regions[v->id].generation != v->generation) {
        pami_warn("rma", "memory region %u/%u of task %u context %u is not a "
                         "live region of this context", v->id, v->generation,
                  v->owner_task, v->owner_ctx);
        return NULL;
    }
    return &ctx->regions[v->id];
}

pami_result_t pami_memregion_destroy(pami_context_t ctx, pami_memregion_t *mr)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "rma", "memregion_destroy on NULL");
    pami_mr_view_t v;
    pami_region_t *r = pami_region_local(ctx, mr, &v);
    if (r == NULL)
        return PAMI_INVAL;
    /* Operations reading or writing it finish first, within the bound
     * destroy also has. */
    uint64_t deadline = pami_time_ns() +
                        ctx->client->config.shutdown_timeout_ms * 1000000ull;
    while (r->users > 0) {
        if (pami_progressing(ctx))
            return PAMI_EAGAIN;
        if (pami_time_ns() > deadline) {
            pami_warn("rma", "region %u still used by %u operations; not "
                             "destroyed", v.id, r->users);
            return PAMI_TIMEOUT;
        }
        pami_progress_once(ctx);
        /* A callback may have created a region and moved the table, or
         * destroyed this one through a copy. */
        r = &ctx->regions[v.id];
        if (!r->live || r->generation != v.generation)
            return PAMI_INVAL;
    }
    ctx->tp->mem_dereg(ctx->client->tp_ctx, r->mem);
    r->mem  = NULL;
    r->live = false;
    if (r->shm_bytes > 0)
        pami_shm_region_free(ctx, v.id, r);
    memset(mr, 0, sizeof(*mr));
    return PAMI_SUCCESS;
}

/* ---- remote keys, cached per (peer, region) ---- */

static inline size_t rkey_hash(uint32_t peer, uint32_t owner_ctx, uint32_t id,
                               uint32_t gen)
{
    uint64_t k = ((uint64_t)peer << 40) ^ ((uint64_t)owner_ctx << 56) ^
                 ((uint64_t)id << 20) ^ gen;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

static pami_result_t rkey_grow(struct pami_context *ctx)
{
    size_t cap = ctx->rkey_cap ? ctx->rkey_cap * 2 : 64;
    pami_rkey_entry_t *t = calloc(cap, sizeof(*t));
    if (t == NULL)
        return PAMI_ENOMEM;
    for (size_t i = 0; i < ctx->rkey_cap; i++) {
        pami_rkey_entry_t *e = &ctx->rkeys[i];
        if (e->rkey == NULL)
            continue;
        size_t j = rkey_hash(e->peer, e->owner_ctx, e->id, e->generation) &
                   (cap - 1);
        while (t[j].rkey != NULL)
            j = (j + 1) & (cap - 1);
        t[j] = *e;
    }
    free(ctx->rkeys);
    ctx->rkeys    = t;
    ctx->rkey_cap = cap;
    return PAMI_SUCCESS;
}

pami_result_t pami_rkey_get(struct pami_context *ctx, pami_peer_t *peer,
                            const pami_mr_view_t *v, tp_rkey_t **out)
{
    if (ctx->rkey_cap > 0) {
        size_t mask = ctx->rkey_cap - 1;
        for (size_t j = rkey_hash(peer->index, v->owner_ctx, v->id,
                                  v->generation) & mask;
             ctx->rkeys[j].rkey != NULL; j = (j + 1) & mask) {
            pami_rkey_entry_t *e = &ctx->rkeys[j];
            if (e->peer == peer->index && e->owner_ctx == v->owner_ctx &&
                e->id == v->id && e->generation == v->generation) {
                *out = e->rkey;
                return PAMI_SUCCESS;
            }
        }
    }
    if (2 * (ctx->rkey_count + 1) > ctx->rkey_cap &&
        rkey_grow(ctx) != PAMI_SUCCESS)
        return PAMI_ENOMEM;
    tp_rkey_t *rkey;
    int trc = ctx->tp->rkey_unpack(peer->ep, v->rkey, &rkey);
    if (trc != 0)
        return PAMI_INVAL;
    size_t mask = ctx->rkey_cap - 1;
    size_t j = rkey_hash(peer->index, v->owner_ctx, v->id, v->generation) &
               mask;
    while (ctx->rkeys[j].rkey != NULL)
        j = (j + 1) & mask;
    ctx->rkeys[j] = (pami_rkey_entry_t){.peer = peer->index,
                                        .owner_ctx = v->owner_ctx,
                                        .id = v->id,
                                        .generation = v->generation,
                                        .rkey = rkey};
    ctx->rkey_count++;
    *out = rkey;
    return PAMI_SUCCESS;
}

void pami_regions_destroy(struct pami_context *ctx)
{
    for (size_t i = 0; i < ctx->rkey_cap; i++)
        if (ctx->rkeys[i].rkey != NULL)
            ctx->tp->rkey_destroy(ctx->rkeys[i].rkey);
    free(ctx->rkeys);
    ctx->rkeys    = NULL;
    ctx->rkey_cap = ctx->rkey_count = 0;
    for (size_t i = 0; i < ctx->nregions; i++)
        if (ctx->regions[i].live) {
            pami_debug("rma", "region %zu still registered at destroy", i);
            ctx->tp->mem_dereg(ctx->client->tp_ctx, ctx->regions[i].mem);
            ctx->regions[i].live = false;
            if (ctx->regions[i].shm_bytes > 0)
                pami_shm_region_free(ctx, (uint32_t)i, &ctx->regions[i]);
        }
    free(ctx->regions);
    ctx->regions  = NULL;
    ctx->nregions = 0;
}

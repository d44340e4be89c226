/*
 * Per-context free lists, so a steady stream of collectives allocates
 * nothing: requests keep their step, op and temporary arrays and their
 * temporaries for the next call; kept messages keep their payload room.
 * Rooms above COLL_KEEP_TMP / COLL_KEEP_MSG bytes are kept too while the
 * lists hold at most COLL_KEEP_BYTES of them: memory handed back to the
 * system costs a page fault per page when touched again (about 10 us
 * each on the test VMs, 2.7 ms per fresh MiB), which made every large
 * call that fetched into a new temporary or staging buffer 10-20x
 * slower. A request that outlives its context's state (a zombie, see
 * coll_sched.c) is freed for good, never pooled.
 *
 * A request that ended well also keeps its built schedule in a small
 * per-context cache (COLL_CACHE entries): the same call again (same
 * fields but done_fn and cookie, on a geometry of the same size, rank and
 * kind) takes it back without checking, choosing or building anything.
 * A schedule depends only on those fields and on the geometry's size,
 * rank and node membership, never on the data.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define COLL_POOL_REQS 256           /* the most requests in flight + some */
#define COLL_POOL_MSGS 1024
#define COLL_KEEP_TMP  (64u * 1024)
#define COLL_KEEP_MSG  4096u
#define COLL_KEEP_BYTES (32u * 1024 * 1024) /* large rooms, per context */
#define COLL_MSG_ROOM  256u /* payload room allocated with a kept message */

/* Whether the free lists may keep a large room of bytes more. */
static bool keep_large(coll_ctx_t *cc, size_t bytes)
{
    if (cc->pool_bytes + bytes > COLL_KEEP_BYTES)
        return false;
    cc->pool_bytes += bytes;
    return true;
}

bool coll_grow(coll_ctx_t *cc, void **arr, size_t *cap, size_t need,
               size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * elem);
    if (p == NULL)
        return false;
    cc->st.allocs++;
    *arr = p;
    *cap = n;
    return true;
}

coll_req_t *coll_req_new(struct pami_geometry *g, const pami_xfer_t *x,
                         uint16_t kind)
{
    coll_ctx_t *cc  = g->cc;
    coll_req_t *req = cc->req_pool;
    if (req != NULL) {
        cc->req_pool = req->pool_next;
        cc->nreq_pool--;
        coll_req_t keep = *req;
        memset(req, 0, sizeof(*req));
        req->ops     = keep.ops;
        req->opcap   = keep.opcap;
        req->steps   = keep.steps;
        req->stepcap = keep.stepcap;
        req->tmps    = keep.tmps;
        req->tmpsz   = keep.tmpsz;
        req->tmpcap  = keep.tmpcap;
        req->tmpkept = keep.tmpkept;
        for (size_t i = 0; i < req->tmpkept; i++)
            if (req->tmpsz[i] > COLL_KEEP_TMP)
                cc->pool_bytes -= req->tmpsz[i];
    } else {
        req = calloc(1, sizeof(*req));
        if (req == NULL)
            return NULL;
        cc->st.allocs++;
    }
    if (++cc->st.reqs_live > cc->st.reqs_high_water)
        cc->st.reqs_high_water = cc->st.reqs_live;
    req->g  = g;
    req->cc = cc;
    if (x != NULL)
        coll_xfer_copy(&req->x, x);
    req->kind   = kind;
    req->status = PAMI_SUCCESS;
    req->dtsize = pami_type_size(req->x.dtype);
    req->online_slot = -1;
    return req;
}

static void req_destroy(coll_req_t *req)
{
    for (size_t i = 0; i < req->tmpkept; i++)
        free(req->tmps[i]);
    free(req->tmps);
    free(req->tmpsz);
    free(req->ops);
    free(req->steps);
    free(req);
}

/* Large temporaries of req, which the pool's budget must hold while req
 * sits in the cache or the free list. */
static size_t large_tmps(const coll_req_t *req)
{
    size_t sum = 0;
    for (size_t i = 0; i < req->tmpkept; i++)
        if (req->tmpsz[i] > COLL_KEEP_TMP)
            sum += req->tmpsz[i];
    return sum;
}

static bool same_call(const coll_req_t *c, const struct pami_geometry *g,
                      const pami_xfer_t *x)
{
    const pami_xfer_t *y = &c->x;
    return y->kind == x->kind && y->count == x->count &&
           y->sbuf == x->sbuf && y->rbuf == x->rbuf &&
           y->dtype == x->dtype && y->op == x->op && y->root == x->root &&
           y->field_mask == x->field_mask &&
           (!(x->field_mask & PAMI_XFER_FIELD_ALGORITHM) ||
            y->algorithm == x->algorithm) &&
           (!(x->field_mask & PAMI_XFER_FIELD_USER_OP) ||
            (y->user_fn == x->user_fn && y->user_cookie == x->user_cookie &&
             y->user_commutative == x->user_commutative)) &&
           c->key_n == g->size && c->key_r == g->rank &&
           c->key_node == g->on_node && c->key_list == g->hash;
}

/* A cached schedule for call x on g, ready to start again, or NULL. */
coll_req_t *coll_cache_take(coll_ctx_t *cc, struct pami_geometry *g,
                            const pami_xfer_t *x)
{
    for (unsigned i = 0; i < COLL_CACHE; i++) {
        coll_req_t *req = cc->cache[i];
        if (req == NULL || !same_call(req, g, x))
            continue;
        cc->cache[i] = NULL;
        cc->pool_bytes -= large_tmps(req);
        if (++cc->st.reqs_live > cc->st.reqs_high_water)
            cc->st.reqs_high_water = cc->st.reqs_live;
        cc->st.cache_hits++;
        req->g = g;
        req->x.geometry = g;
        req->x.done_fn  = x->done_fn;
        req->x.cookie   = x->cookie;
        req->done_fn     = x->done_fn;
        req->done_cookie = x->cookie;
        req->cur = req->recvs_left = req->sends_left = 0;
        req->rdv_pending = req->ext_pending = 0;
        req->early  = NULL;
        req->status = PAMI_SUCCESS;
        req->online_slot = -1;
        req->in_advance = req->again = req->in_call = false;
        req->posted = req->completed = req->zombie = false;
        req->peer_died = false;
        req->pool_next = NULL;
        for (size_t k = 0; k < req->nops; k++) {
            req->ops[k].done    = 0;
            req->ops[k].got     = 0;
            req->ops[k].landing = 0;
        }
        return req;
    }
    return NULL;
}

static void pool_put(coll_ctx_t *cc, coll_req_t *req);

/* Keeps req's schedule for the same call again: it replaces an entry of
 * the same call, or a free one, or the oldest. */
static bool cache_put(coll_ctx_t *cc, coll_req_t *req)
{
    size_t large = large_tmps(req);
    if (large > 0 && !keep_large(cc, large))
        return false;
    unsigned slot = COLL_CACHE;
    for (unsigned i = 0; i < COLL_CACHE && slot == COLL_CACHE; i++)
        if (cc->cache[i] == NULL ||
            same_call(cc->cache[i], req->g, &req->x))
            slot = i;
    if (slot == COLL_CACHE) {
        slot = cc->cache_next;
        cc->cache_next = (cc->cache_next + 1) % COLL_CACHE;
    }
    coll_req_t *old = cc->cache[slot];
    cc->cache[slot] = req;
    if (old != NULL) {
        cc->pool_bytes -= large_tmps(old);
        pool_put(cc, old);
    }
    return true;
}

void coll_req_free(coll_req_t *req)
{
    bool alive = !req->zombie; /* else the context's state may be gone */
    for (coll_msg_t *m = req->early, *n; m != NULL; m = n) {
        n = m->next;
        m->owner = NULL;
        if (!m->complete)
            m->dead = true; /* freed when its data arrives */
        else if (alive)
            coll_msg_free(m);
        else
            coll_msg_destroy(m);
    }
    req->early = NULL;
    coll_ctx_t *cc = req->cc;
    if (!alive) {
        req_destroy(req);
        return;
    }
    cc->st.reqs_live--;
    if (req->cacheable && req->status == PAMI_SUCCESS && cache_put(cc, req))
        return;
    pool_put(cc, req);
}

static void pool_put(coll_ctx_t *cc, coll_req_t *req)
{
    if (cc->nreq_pool >= COLL_POOL_REQS) {
        req_destroy(req);
        return;
    }
    for (size_t i = 0; i < req->tmpkept; i++)
        if (req->tmpsz[i] > COLL_KEEP_TMP &&
            !keep_large(cc, req->tmpsz[i])) {
            free(req->tmps[i]);
            req->tmps[i]  = NULL;
            req->tmpsz[i] = 0;
        }
    req->pool_next = cc->req_pool;
    cc->req_pool   = req;
    cc->nreq_pool++;
}

/* Temporaries are taken in build order, so the same collective called
 * again finds each one big enough. */
void *sb_tmp(coll_req_t *req, size_t bytes)
{
    coll_ctx_t *cc = req->cc;
    size_t need = bytes ? bytes : 1, i = req->ntmps;
    if (i == req->tmpkept) {
        size_t cap = req->tmpcap;
        if (!coll_grow(cc, (void **)&req->tmps, &cap, i + 1,
                       sizeof(*req->tmps)) ||
            !coll_grow(cc, (void **)&req->tmpsz, &req->tmpcap, i + 1,
                       sizeof(*req->tmpsz))) {
            req->build_failed = true;
            return NULL;
        }
        req->tmps[i]  = NULL;
        req->tmpsz[i] = 0;
        req->tmpkept++;
    }
    if (req->tmpsz[i] < need) {
        free(req->tmps[i]);
        req->tmpsz[i] = 0;
        req->tmps[i]  = malloc(need);
        if (req->tmps[i] == NULL) {
            req->build_failed = true;
            return NULL;
        }
        cc->st.allocs++;
        req->tmpsz[i] = need;
    }
    req->ntmps++;
    return req->tmps[i];
}

/* A kept message is allocated with COLL_MSG_ROOM bytes of payload room,
 * so a small one never allocates twice, whatever it was used for before:
 * allocations follow the number of messages kept at once exactly
 * (kept_high_water). */
static coll_msg_t *msg_alloc(coll_ctx_t *cc)
{
    coll_msg_t *m = calloc(1, sizeof(*m) + COLL_MSG_ROOM);
    if (m == NULL)
        return NULL;
    cc->st.allocs++;
    m->data        = m + 1;
    m->cap         = COLL_MSG_ROOM;
    m->room_inline = true;
    return m;
}

static void msg_room_reset(coll_msg_t *m)
{
    if (!m->room_inline)
        free(m->data);
    m->data        = m + 1;
    m->cap         = COLL_MSG_ROOM;
    m->room_inline = true;
}

coll_msg_t *coll_msg_new(coll_ctx_t *cc, size_t len)
{
    coll_msg_t *m = NULL;
    if (len > COLL_KEEP_MSG && cc->msg_big != NULL) {
        m = cc->msg_big;
        cc->msg_big = m->next;
        cc->pool_bytes -= m->cap;
    } else if (cc->msg_pool != NULL) {
        m = cc->msg_pool;
        cc->msg_pool = m->next;
        cc->nmsg_pool--;
    }
    if (m != NULL) {
        void  *data = m->data;
        size_t cap  = m->cap;
        bool   room = m->room_inline;
        memset(m, 0, sizeof(*m));
        m->data        = data;
        m->cap         = cap;
        m->room_inline = room;
    } else if ((m = msg_alloc(cc)) == NULL) {
        return NULL;
    }
    m->cc = cc;
    if (len > m->cap) {
        void *data = malloc(len);
        if (data == NULL) {
            coll_msg_destroy(m);
            return NULL;
        }
        cc->st.allocs++;
        if (!m->room_inline)
            free(m->data);
        m->data        = data;
        m->cap         = len;
        m->room_inline = false;
    }
    if (++cc->st.kept_live > cc->st.kept_high_water)
        cc->st.kept_high_water = cc->st.kept_live;
    return m;
}

void coll_msg_destroy(coll_msg_t *m)
{
    if (!m->room_inline)
        free(m->data);
    free(m);
}

void coll_msg_free(coll_msg_t *m)
{
    coll_ctx_t *cc = m->cc;
    coll_kept_release(m);
    cc->st.kept_live--;
    if (m->cap > COLL_KEEP_MSG && keep_large(cc, m->cap)) {
        m->next     = cc->msg_big;
        cc->msg_big = m;
        return;
    }
    if (cc->nmsg_pool >= COLL_POOL_MSGS) {
        coll_msg_destroy(m);
        return;
    }
    if (m->cap > COLL_KEEP_MSG)
        msg_room_reset(m);
    m->next      = cc->msg_pool;
    cc->msg_pool = m;
    cc->nmsg_pool++;
}

uint32_t *coll_scratch(coll_ctx_t *cc, size_t n)
{
    if (!coll_grow(cc, (void **)&cc->scratch, &cc->scratch_cap, n,
                   sizeof(*cc->scratch)))
        return NULL;
    memset(cc->scratch, 0, n * sizeof(*cc->scratch));
    return cc->scratch;
}

void coll_pool_fini(coll_ctx_t *cc)
{
    for (unsigned i = 0; i < COLL_CACHE; i++) {
        if (cc->cache[i] != NULL)
            req_destroy(cc->cache[i]);
        cc->cache[i] = NULL;
    }
    while (cc->req_pool != NULL) {
        coll_req_t *req = cc->req_pool;
        cc->req_pool = req->pool_next;
        req_destroy(req);
    }
    coll_msg_t *lists[] = {cc->msg_pool, cc->msg_big};
    for (size_t l = 0; l < 2; l++)
        for (coll_msg_t *m = lists[l], *n; m != NULL; m = n) {
            n = m->next;
            coll_msg_destroy(m);
        }
    cc->msg_pool = cc->msg_big = NULL;
    free(cc->scratch);
    cc->scratch     = NULL;
    cc->scratch_cap = 0;
    cc->nreq_pool = cc->nmsg_pool = 0;
    cc->pool_bytes = 0;
}

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
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define COLL_POOL_REQS 256           /* the most requests in flight + some */
#define COLL_POOL_MSGS 1024
#define COLL_KEEP_TMP  (64u * 1024)
#define COLL_KEEP_MSG  4096u
#define COLL_KEEP_BYTES (32u * 1024 * 1024) /* large rooms, per context */

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
    req->g  = g;
    req->cc = cc;
    if (x != NULL)
        req->x = *x;
    req->kind   = kind;
    req->status = PAMI_SUCCESS;
    req->dtsize = pami_type_size(req->x.dtype);
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
    coll_ctx_t *cc = req->cc;
    if (!alive || cc->nreq_pool >= COLL_POOL_REQS) {
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
        memset(m, 0, sizeof(*m));
        m->data = data;
        m->cap  = cap;
    } else {
        m = calloc(1, sizeof(*m));
        if (m == NULL)
            return NULL;
        cc->st.allocs++;
    }
    m->cc = cc;
    if (len > m->cap) {
        free(m->data);
        m->cap  = 0;
        m->data = malloc(len);
        if (m->data == NULL) {
            free(m);
            return NULL;
        }
        cc->st.allocs++;
        m->cap = len;
    }
    return m;
}

void coll_msg_destroy(coll_msg_t *m)
{
    free(m->data);
    free(m);
}

void coll_msg_free(coll_msg_t *m)
{
    coll_ctx_t *cc = m->cc;
    if (m->cap > COLL_KEEP_MSG && keep_large(cc, m->cap)) {
        m->next     = cc->msg_big;
        cc->msg_big = m;
        return;
    }
    if (cc->nmsg_pool >= COLL_POOL_MSGS) {
        coll_msg_destroy(m);
        return;
    }
    if (m->cap > COLL_KEEP_MSG) {
        free(m->data);
        m->data = NULL;
        m->cap  = 0;
    }
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

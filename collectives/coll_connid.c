/*
 * ConnID administration (seed 002). Each geometry has a buffer of
 * PAMI_CONNID_BUFFER ConnIDs. Collective number seq on a geometry takes
 * ConnID seq % PAMI_CONNID_BUFFER: every member counts the collectives it
 * calls on the geometry in the same order, so all derive the same ConnID
 * without a message. The element stays locked until the collective
 * completes here. Before a call takes one, the number in use is checked
 * against the threshold; at or above it, or while the element is still
 * locked by an older collective, the caller progresses until it falls.
 *
 * Messages carry the ConnID and the full seq: a peer may already run
 * collective seq + PAMI_CONNID_BUFFER, which reuses the ConnID, while we
 * still run seq; the seq keeps them apart, and a message of a collective
 * not posted here yet is kept until it is.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll.h"

static bool geometry_free(const struct pami_geometry *g)
{
    return g->in_use < g->threshold &&
           g->slots[g->next_seq % PAMI_CONNID_BUFFER] == NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

pami_result_t coll_connid_acquire(struct pami_geometry *g)
{
    coll_ctx_t *cc = g->cc;
    if (geometry_free(g) && coll_global_try(cc->gl))
        return PAMI_SUCCESS;
    bool counted = false, counted_global = false;
    double since = 0;
    pami_result_t rc = PAMI_SUCCESS;
    g->waiters++;
    for (;;) {
        bool mine = geometry_free(g);
        if (mine && coll_global_try(cc->gl))
            break;
        if (!mine && !counted) {
            counted = true;
            g->waits++;
            cc->st.waits++;
        } else if (mine && !counted_global) {
            counted_global = true;
            since = now_s();
            coll_global_waited(cc->gl);
        }
        /* The client's ConnIDs may all be held by collectives that wait
         * for peers which wait for ours (tasks that start collectives of
         * different geometries or contexts in different orders): after
         * COLL_GLOBAL_WAIT_S the call goes over the threshold. */
        if (mine && counted_global && now_s() - since > COLL_GLOBAL_WAIT_S) {
            coll_global_overrun(cc);
            break;
        }
        /* Held by this geometry: our progress frees it. Held by the
         * client: maybe by other contexts, whose progress does. */
        if (mine)
            coll_global_progress_others(cc);
        rc = coll_wait_once(cc, mine ? 1 : 100);
        if (rc != PAMI_SUCCESS)
            break;
    }
    g->waiters--;
    return rc;
}

pami_result_t coll_wait_once(coll_ctx_t *cc, int timeout_ms)
{
    pami_result_t rc = pami_context_wait(cc->ctx, timeout_ms);
    if (rc == PAMI_IN_HANDLER) {
        cc->st.eagain++;
        return PAMI_EAGAIN;
    }
    return rc == PAMI_TIMEOUT ? PAMI_SUCCESS : rc;
}

void coll_connid_unreserve(struct pami_geometry *g)
{
    coll_global_put(g->cc->gl);
}

/* Below both thresholds, a look at the counts, where acquire and
 * unreserve cost every small inline call two locked instructions.
 * Otherwise acquire's wait, then the unit back. */
pami_result_t coll_connid_pass(struct pami_geometry *g)
{
    if (geometry_free(g) && coll_global_below(g->cc->gl))
        return PAMI_SUCCESS;
    pami_result_t rc = coll_connid_acquire(g);
    if (rc == PAMI_SUCCESS)
        coll_connid_unreserve(g);
    return rc;
}

void coll_connid_lock(struct pami_geometry *g, coll_req_t *req,
                      bool with_unit)
{
    coll_ctx_t *cc = g->cc;
    req->seq    = g->next_seq++;
    req->connid = (uint16_t)(req->seq % PAMI_CONNID_BUFFER);
    g->slots[req->connid] = req;
    if (req->hidden)
        return; /* a flow sync holds its element, and counts nowhere */
    if (!with_unit)
        coll_global_take(cc->gl);
    g->started++;
    if (++g->in_use > g->high_water)
        g->high_water = g->in_use;
    if (++cc->st.in_use > cc->st.high_water)
        cc->st.high_water = cc->st.in_use;
    cc->st.started++;
}

void coll_connid_release(struct pami_geometry *g, coll_req_t *req)
{
    if (g->slots[req->connid] != req)
        return;
    g->slots[req->connid] = NULL;
    if (req->hidden)
        return;
    g->in_use--;
    g->cc->st.in_use--;
    coll_global_put(g->cc->gl);
    if (req->online_slot >= 0)
        coll_online_done(req); /* an online trial: its time */
}

/* A message for geometry g (sender already checked to be a member). */
void coll_deliver(struct pami_geometry *g, const coll_hdr_t *h,
                  pami_task_t origin, const void *data, size_t len,
                  pami_recv_t *recv)
{
    coll_ctx_t *cc  = g->cc;
    coll_req_t *req = g->slots[h->connid];
    if (req != NULL && req->seq == h->seq && !req->completed) {
        coll_on_message(req, h, data, len, recv);
        return;
    }
    if ((int32_t)(h->seq - g->next_seq) >= 0) {
        /* Not posted here yet: keep it. */
        bool        refused;
        coll_msg_t *m = coll_kept_keep(cc, h, origin, data, len, recv,
                                       &refused);
        if (refused)
            return; /* counted in kept_dropped */
        if (m == NULL) {
            coll_warn("geometry %u seq %u: no memory to keep an early "
                      "message; dropped", h->geom_id, h->seq);
            cc->st.malformed++;
            return;
        }
        cc->st.unexpected++;
        g->unexp_n[h->connid]++;
        *g->unexp_tail = m;
        g->unexp_tail  = &m->next;
        return;
    }
    /* Only messages of a collective that already ended here can be late:
     * one ended by an abort, since a completed one received all of its. */
    cc->st.late++;
    coll_debug("geometry %u seq %u: message for a collective that ended "
               "here (next is %u); dropped", h->geom_id, h->seq, g->next_seq);
}

/* Messages kept for req's collective join it. The geometry's list is in
 * arrival order; unexp_n counts its messages per ConnID, so a call for
 * which none came costs nothing and a walk ends at the last message of
 * req's ConnID (a later collective that reuses it may have some too).
 * Messages claimed from the orphans when the geometry was created are
 * not counted yet: the creation, the first collective, walks the whole
 * list and counts them. */
void coll_claim_unexpected(coll_req_t *req)
{
    struct pami_geometry *g = req->g;
    bool     all  = req->kind == COLL_KIND_CREATE;
    unsigned left = g->unexp_n[req->connid];
    if (all)
        memset(g->unexp_n, 0, sizeof(g->unexp_n));
    else if (left == 0)
        return;
    coll_msg_t **pp = &g->unexp;
    while (*pp != NULL && (all || left > 0)) {
        coll_msg_t *m = *pp;
        if (!all && m->hdr.connid == req->connid)
            left--;
        if (m->hdr.seq == req->seq) {
            *pp = m->next;
            if (!all)
                g->unexp_n[req->connid]--;
            coll_adopt(req, m);
        } else {
            if (all)
                g->unexp_n[m->hdr.connid]++;
            pp = &m->next;
        }
    }
    if (*pp == NULL)
        g->unexp_tail = pp;
}

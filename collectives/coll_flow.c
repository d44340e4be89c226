/*
 * Flow control of collectives that let a task run ahead
 * (docs/collectives.md, "Running ahead"). In a broadcast or scatter the
 * root, in a reduce or gather a leaf, completes without hearing from some
 * member; in a loop it could run any number of calls ahead, and the slow
 * member would have to keep all their messages (coll_kept.c drops what
 * passes its bounds, and the call that lost one would never complete).
 *
 * So every member counts such free-running calls on a geometry, with a
 * bound on the messages and bytes one member may receive from each,
 * computed from what all members pass alike (collective, algorithm,
 * geometry size, bytes of the call). A window closes before the call
 * that would pass either bound: the geometry then runs a hidden
 * dissemination barrier (a sync), its own collective number, which
 * completes only once every member started it. Before a member starts
 * the next sync it waits for the previous one, so a task is at most two
 * windows ahead of any member; in a steady stream the sync has long
 * completed by then and nobody waits. A call too large for one window
 * begins with the barrier in its own schedule (prepended), so its data
 * moves only once every member posted it; the v-variants, whose bytes
 * the members do not all know, always do.
 */
#include <pthread.h>
#include <string.h>

#include "coll.h"

/* The algorithms where some member's part ends before another member
 * started the call and that member then receives from it. The others
 * either hear from everyone (trees, exchanges, rings) or move data
 * through shared memory, whose rounds and ring wait for the readers. */
static const char *const free_running[] = {
    "broadcast_binomial", "broadcast_knomial4", "broadcast_pipelined_chain",
    "reduce_binomial",    "gather_linear",      "gather_binomial",
    "scatter_linear",     "scatter_binomial",   "gatherv_linear",
    "scatterv_linear"};

static pthread_once_t   once = PTHREAD_ONCE_INIT;
static uint64_t         free_mask; /* bit id - 1 */
static pami_algorithm_t sync_id;   /* barrier_dissemination */
static pami_algorithm_t chain_id;  /* broadcast_pipelined_chain */

static void find_algorithms(void)
{
    for (size_t i = 0; i < sizeof(free_running) / sizeof(free_running[0]);
         i++) {
        pami_algorithm_t id;
        if (pami_algorithm_by_name(free_running[i], &id) == PAMI_SUCCESS &&
            id - 1 < 64)
            free_mask |= 1ull << (id - 1);
    }
    if (pami_algorithm_by_name("barrier_dissemination", &sync_id) !=
        PAMI_SUCCESS)
        sync_id = 0;
    if (pami_algorithm_by_name("broadcast_pipelined_chain", &chain_id) !=
        PAMI_SUCCESS)
        chain_id = 0;
}

/* The smallest piece a sender may cut (PAMI_COLL_PIECE*'s lower bound):
 * a send of d bytes is at most 1 + d / COLL_FLOW_PIECE messages, whatever
 * the members' piece settings. */
#define COLL_FLOW_PIECE 4096

void coll_flow_init(coll_ctx_t *cc)
{
    pthread_once(&once, find_algorithms);
    size_t cm, cb, gm, gb;
    coll_kept_limits(cc, &cm, &cb, &gm, &gb);
    /* A sending task may hold half the context's bounds; two windows per
     * geometry take an eighth of the smaller of its and the geometry's. */
    size_t m = gm < cm / 2 ? gm : cm / 2, b = gb < cb / 2 ? gb : cb / 2;
    cc->flow_msgs  = m / 16 > 0 ? m / 16 : 1;
    cc->flow_bytes = b / 16 > 0 ? b / 16 : 1;
}

/* Messages and bytes one member may receive from call x of algorithm id
 * on g; false when the members cannot all tell (the v-variants). */
static bool weigh(const struct pami_geometry *g, const pami_xfer_t *x,
                  uint8_t id, uint64_t *msgs, uint64_t *bytes)
{
    uint64_t p = g->size, b = (uint64_t)x->count * pami_type_size(x->dtype);
    uint64_t sends, data;
    switch (x->kind) {
    case PAMI_XFER_BROADCAST: /* from its parent; the chain: 16 chunks + 1 */
        sends = id == chain_id ? 17 : 1;
        data  = b;
        break;
    case PAMI_XFER_SCATTER: /* a subtree's blocks from its parent */
        sends = 1;
        data  = b * p;
        break;
    case PAMI_XFER_REDUCE: /* from each child */
    case PAMI_XFER_GATHER: /* from each child, or every leaf */
        sends = p - 1;
        data  = b * p;
        break;
    default:
        return false;
    }
    *msgs  = sends + data / COLL_FLOW_PIECE;
    *bytes = data;
    return true;
}

bool coll_flow_prepends(const coll_ctx_t *cc, const struct pami_geometry *g,
                        const pami_xfer_t *x, uint8_t algo_id)
{
    if (g->size < 2 || algo_id == 0 || algo_id > 64 ||
        !(free_mask >> (algo_id - 1) & 1))
        return false;
    uint64_t msgs, bytes;
    return !weigh(g, x, algo_id, &msgs, &bytes) || msgs > cc->flow_msgs ||
           bytes > cc->flow_bytes;
}

static void on_sync_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    struct pami_geometry *g = cookie;
    g->flow_pending--;
    /* A failed sync (a member died, or a member's abort for it, which
     * no member of a sound job sends) bounds nothing: running on would
     * let this task pass the others' bounds for kept messages, and a
     * call that lost one there would never end. */
    if (rc != PAMI_SUCCESS && rc != PAMI_SHUTDOWN &&
        g->flow_rc == PAMI_SUCCESS) {
        g->flow_rc = rc;
        coll_warn("geometry %u: its flow control's sync failed (%s); its "
                  "calls that may run ahead fail so from the next window "
                  "on", g->id, pami_error_text(rc));
        /* The other members' sync fails too (they may wait for this
         * task's part of it), so all of them stop at the same window. */
        coll_send_abort(g->cc, g, g->flow_seq, (uint16_t)PAMI_XFER_BARRIER);
    }
}

/* Waits, progressing, until the geometry's sync completed. */
static pami_result_t wait_sync(struct pami_geometry *g)
{
    coll_ctx_t *cc = g->cc;
    if (g->flow_pending == 0)
        return PAMI_SUCCESS;
    cc->st.flow_waits++;
    g->waiters++;
    pami_result_t rc = PAMI_SUCCESS;
    while (g->flow_pending > 0 && rc == PAMI_SUCCESS)
        rc = coll_wait_once(cc, 1);
    g->waiters--;
    return rc;
}

/* Starts the geometry's hidden sync: the next collective number, on
 * every member at the same place in its call order. */
static pami_result_t start_sync(struct pami_geometry *g)
{
    coll_ctx_t *cc = g->cc;
    pami_result_t rc = wait_sync(g);
    if (rc == PAMI_SUCCESS && g->flow_rc != PAMI_SUCCESS) {
        /* A sync failed: no next window. The members take a number for
         * this sync; it ends on them too (and the caller's call after
         * it), so their numbers stay those of this task. */
        coll_send_abort(cc, g, g->next_seq++, (uint16_t)PAMI_XFER_BARRIER);
        return g->flow_rc;
    }
    if (rc == PAMI_SUCCESS)
        rc = coll_connid_pass(g); /* its element free */
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_xfer_t x = {.kind = PAMI_XFER_BARRIER, .geometry = g};
    coll_req_t *req = coll_req_new(g, &x, PAMI_XFER_BARRIER);
    if (req == NULL)
        return PAMI_ENOMEM;
    req->hidden   = true;
    req->algo     = &coll_algos[sync_id - 1];
    req->algo_id  = (uint8_t)sync_id;
    req->sig      = 0x464c4f57u; /* "FLOW": no call of the program's */
    req->done_fn     = on_sync_done;
    req->done_cookie = g;
    bld_barrier_dissemination(req);
    if (req->build_failed) {
        coll_req_free(req);
        return PAMI_ENOMEM;
    }
    g->flow_pending++;
    g->flow_msgs = g->flow_bytes = 0;
    cc->st.flow_syncs++;
    coll_connid_lock(g, req, false);
    g->flow_seq = req->seq;
    coll_claim_unexpected(req);
    coll_start_call(req, true);
    return PAMI_SUCCESS;
}

pami_result_t coll_flow_before(struct pami_geometry *g, const pami_xfer_t *x,
                               uint8_t algo_id, uint64_t *msgs,
                               uint64_t *bytes)
{
    coll_ctx_t *cc = g->cc;
    *msgs = *bytes = 0;
    if (g->size < 2 || sync_id == 0 || algo_id == 0 || algo_id > 64 ||
        !(free_mask >> (algo_id - 1) & 1) ||
        !weigh(g, x, algo_id, msgs, bytes) || *msgs > cc->flow_msgs ||
        *bytes > cc->flow_bytes) {
        *msgs = *bytes = 0; /* none, or prepended: not in a window */
        return PAMI_SUCCESS;
    }
    if (g->flow_msgs + *msgs <= cc->flow_msgs &&
        g->flow_bytes + *bytes <= cc->flow_bytes)
        return PAMI_SUCCESS;
    return start_sync(g);
}

void coll_flow_count(struct pami_geometry *g, uint64_t msgs, uint64_t bytes)
{
    g->flow_msgs += msgs;
    g->flow_bytes += bytes;
}

pami_result_t coll_flow_drain(struct pami_geometry *g)
{
    if (g->flow_pending == 0)
        return PAMI_SUCCESS;
    if (pami_protocol_in_handler(g->cc->ctx))
        return PAMI_EAGAIN;
    return wait_sync(g);
}

/* A call refused here while the other members may run it: one member's
 * NULL buffer or bad in-place use must not shift the windows of all the
 * calls after it. Its algorithm is the one the members choose (named, or
 * AUTO from the inputs they pass alike); a call whose collective, type,
 * count or root is bad is refused on every member, which all skip it. */
void coll_flow_aborted(struct pami_geometry *g, const pami_xfer_t *x)
{
    bool kind = x->kind == PAMI_XFER_BROADCAST ||
                x->kind == PAMI_XFER_SCATTER || x->kind == PAMI_XFER_GATHER ||
                (x->kind == PAMI_XFER_REDUCE && coll_type_valid(x->dtype) &&
                 coll_op_valid(x->dtype, x->op));
    /* (the v-variants always begin with their barrier: in no window) */
    if (!kind || !coll_type_valid(x->dtype) || x->count > UINT32_MAX ||
        x->root >= g->size)
        return;
    pami_algorithm_t id = PAMI_ALGORITHM_AUTO;
    if (x->field_mask & PAMI_XFER_FIELD_ALGORITHM)
        id = x->algorithm;
    if (id == PAMI_ALGORITHM_AUTO)
        id = coll_auto_select(x, g, NULL, false);
    if (id == 0 || id > coll_num_algos ||
        (uint32_t)coll_algos[id - 1].kind != (uint32_t)x->kind)
        return;
    uint64_t msgs, bytes;
    if (coll_flow_before(g, x, (uint8_t)id, &msgs, &bytes) == PAMI_SUCCESS)
        coll_flow_count(g, msgs, bytes);
}

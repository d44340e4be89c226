/*
 * Hierarchical allreduce for a geometry over several nodes: a binomial
 * reduce to each node's leader (its lowest geometry rank), an allreduce
 * among the leaders, a broadcast from each leader to its node. All three
 * phases are messages of one schedule (one ConnID), so concurrent calls
 * stay apart; docs/collectives.md says why the node's part is not the
 * shared segment. The phases reuse the flat builders on a group of the
 * geometry: they are built against a geometry of the group's size and
 * rank, then their peers are mapped back to geometry ranks.
 */
#include <string.h>

#include "coll.h"

/* Below this many bytes the leaders use recursive doubling, from it on
 * Rabenseifner; the nodes broadcast by binomial tree below it, by
 * scatter + allgather from it on. */
#define HIER_LARGE ((size_t)64 * 1024)

typedef struct {
    size_t nodes;      /* nodes the geometry spans */
    size_t largest;    /* most tasks of the geometry on one node */
    bool   contiguous; /* each node's tasks are a run of geometry ranks */
} hier_layout_t;

static const uint32_t *task_nodes(coll_ctx_t *cc, size_t *num_nodes)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NODES};
    if (pami_client_query(cc->client, &a) != PAMI_SUCCESS ||
        a.task_node == NULL)
        return NULL;
    *num_nodes = a.num_nodes;
    return a.task_node;
}

/* The node layout of g; false when the node map is not there. */
static bool layout_of(struct pami_geometry *g, hier_layout_t *l)
{
    size_t nn;
    const uint32_t *tn = task_nodes(g->cc, &nn);
    uint32_t *first = tn ? coll_scratch(g->cc, 2 * nn) : NULL;
    if (first == NULL)
        return false;
    uint32_t *cnt = first + nn; /* first: lowest rank + 1, 0 for none */
    *l = (hier_layout_t){.contiguous = true};
    for (size_t i = 0; i < g->size; i++) {
        uint32_t nd = tn[g->tasks[i]];
        if (first[nd] == 0) {
            first[nd] = (uint32_t)i + 1;
            l->nodes++;
        } else if (first[nd] - 1 + cnt[nd] != i) {
            l->contiguous = false;
        }
        if (++cnt[nd] > l->largest)
            l->largest = cnt[nd];
    }
    return true;
}

/* Runs where it saves something over a flat algorithm: two nodes or more,
 * one of them with two tasks or more. A non-commutative user op needs
 * each node's tasks to be a run of ranks, so that folding each node,
 * then the nodes in order, is rank order. */
pami_result_t coll_hier_check(const pami_xfer_t *x)
{
    hier_layout_t l;
    if (x == NULL || x->geometry == NULL || !layout_of(x->geometry, &l))
        return PAMI_INVAL;
    if (l.nodes < 2 || l.largest < 2)
        return PAMI_INVAL;
    if (!coll_commutative(x) && !l.contiguous)
        return PAMI_INVAL;
    return PAMI_SUCCESS;
}

/* A flat builder run on a group of the geometry: group rank k is
 * geometry rank ranks[k]. */
typedef struct {
    struct pami_geometry *g;
    struct pami_geometry  sub;
    size_t                from; /* first op of the group's part */
} hier_group_t;

static void group_begin(coll_req_t *req, hier_group_t *grp, size_t size,
                        size_t rank)
{
    grp->g    = req->g;
    grp->sub  = (struct pami_geometry){.cc = req->cc, .size = size,
                                       .rank = rank};
    grp->from = req->nops;
    req->g    = &grp->sub;
}

static void group_end(coll_req_t *req, hier_group_t *grp,
                      const uint32_t *ranks)
{
    req->g = grp->g;
    for (size_t i = grp->from; i < req->nops; i++) {
        coll_sop_t *op = &req->ops[i];
        if (op->kind == SOP_SEND || op->kind == SOP_RECV ||
            op->kind == SOP_RECV_REDUCE)
            op->peer = ranks[op->peer];
    }
}

pami_result_t coll_hier_build(coll_req_t *req)
{
    struct pami_geometry *g = req->g;
    size_t n = g->size, r = g->rank, nn;
    size_t count = req->x.count, bytes = count * req->dtsize;
    const void *in = (const void *)req->x.sbuf == PAMI_IN_PLACE
                         ? req->x.rbuf : req->x.sbuf;
    void *out = req->x.rbuf;
    const uint32_t *tn = task_nodes(req->cc, &nn);
    uint32_t *local = tn ? coll_scratch(req->cc, 2 * n + nn) : NULL;
    if (local == NULL)
        return PAMI_ENOMEM;
    uint32_t *leaders = local + n, *seen = leaders + n;
    uint32_t mine = tn[g->tasks[r]];
    size_t m = 0, li = 0, nl = 0, lr = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t nd = tn[g->tasks[i]];
        if (nd == mine) {
            if (i == r)
                li = m;
            local[m++] = (uint32_t)i;
        }
        if (!seen[nd]) {
            seen[nd] = 1;
            if (i == r)
                lr = nl;
            leaders[nl++] = (uint32_t)i;
        }
    }
    hier_group_t grp;
    group_begin(req, &grp, m, li);
    bld_reduce_binomial(req, 0, in, out, bytes);
    group_end(req, &grp, local);
    if (li == 0 && nl > 1) {
        group_begin(req, &grp, nl, lr);
        if (bytes >= HIER_LARGE && count >= nl)
            bld_allreduce_rabenseifner(req, out, out, count);
        else
            bld_allreduce_rd(req, out, out, bytes);
        group_end(req, &grp, leaders);
    }
    group_begin(req, &grp, m, li);
    if (bytes >= HIER_LARGE && count >= m)
        bld_bcast_scatter_allgather(req, 0, out, count);
    else
        bld_bcast_binomial(req, 0, out, bytes);
    group_end(req, &grp, local);
    return PAMI_SUCCESS;
}

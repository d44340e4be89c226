/*
 * How calls enter the shared-memory collectives (coll_alg_shm.c runs
 * them): the registry's check, builder and AUTO rule, the poison round of
 * a call that failed here, and blocking calls run inline.
 */
#include <string.h>

#include "coll_shm.h"
#include "pami_barrier.h"

#define IN_PLACE(p) ((const void *)(p) == (const void *)PAMI_IN_PLACE)

/* The shared-memory algorithm x names, or NULL. */
static const coll_algo_t *named_shm(const pami_xfer_t *x)
{
    if (x->algorithm == PAMI_ALGORITHM_AUTO || x->algorithm > coll_num_algos)
        return NULL;
    const coll_algo_t *a = &coll_algos[x->algorithm - 1];
    return a->build == coll_shm_build && (uint32_t)a->kind == (uint32_t)x->kind
               ? a : NULL;
}

/* Does AUTO pick a shared-memory algorithm for x (asked without starting
 * it: nothing logged)? */
static bool auto_shm(const pami_xfer_t *x)
{
    pami_algorithm_t id = coll_auto_select(x, x->geometry, NULL, false);
    return id != 0 && coll_algos[id - 1].build == coll_shm_build;
}

/* Would the other members run x with a shared-memory algorithm? Only
 * what this task can tell from its own (failed) call. */
static bool runs_here(const pami_xfer_t *x)
{
    if (x == NULL || coll_shm_check(x) != PAMI_SUCCESS ||
        (unsigned)x->kind >= PAMI_XFER_COUNT)
        return false;
    if ((x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
        x->algorithm != PAMI_ALGORITHM_AUTO)
        return named_shm(x) != NULL;
    if (x->kind == PAMI_XFER_BROADCAST || x->kind == PAMI_XFER_REDUCE)
        return coll_type_valid(x->dtype) && auto_shm(x);
    return auto_shm(x);
}

void coll_shm_poison(pami_context_t ctx, const pami_xfer_t *x)
{
    cshm_t *s = cshm_of(ctx);
    if (s == NULL || !runs_here(x) || x->geometry->cc->ctx != ctx ||
        s->setup == CSHM_SETUP_FAILED)
        return;
    size_t es = coll_type_valid(x->dtype) ? pami_type_size(x->dtype) : 0;
    pami_selected_reason_t why;
    pami_algorithm_t id = (x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
                                  x->algorithm != PAMI_ALGORITHM_AUTO
                              ? x->algorithm
                              : coll_auto_choice(x, x->geometry, &why);
    bool ring = cshm_ring_runs(s, x, x->count * es, id);
    if (!cshm_push(s, (cshm_entry_t){.which = COLL_EXT_SHM, .ring = ring,
                                     .ring_root = ring && x->root ==
                                                  x->geometry->rank}))
        return;
    cshm_kick(s);
}

/* ---- the blocking call, inline ---- */

/* The registry is constant: each kind's first shared-memory entry is
 * found once, not on every blocking call. */
static const coll_algo_t *shm_by_kind[PAMI_XFER_COUNT];
static size_t             shm_eager_id;
static pthread_once_t     shm_found = PTHREAD_ONCE_INIT;

static void find_shm_algos(void)
{
    for (size_t i = coll_num_algos; i-- > 0;) {
        if (coll_algos[i].build == coll_shm_build)
            shm_by_kind[coll_algos[i].kind] = &coll_algos[i];
        if (strcmp(coll_algos[i].name, "broadcast_shm_eager") == 0)
            shm_eager_id = i + 1;
    }
}

const coll_algo_t *cshm_algo(pami_xfer_type_t kind)
{
    if ((unsigned)kind >= PAMI_XFER_COUNT)
        return NULL;
    pthread_once(&shm_found, find_shm_algos);
    return shm_by_kind[kind];
}

size_t cshm_eager_id(void)
{
    pthread_once(&shm_found, find_shm_algos);
    return shm_eager_id;
}

/* What every inline call needs, checked once for both forms below: a
 * geometry of this context, ready, of this node's tasks (coll_shm_check),
 * the queue idle and the segment set up. */
static bool inline_idle(const cshm_t *s, const coll_ctx_t *cc,
                        const struct pami_geometry *g)
{
    return g != NULL && g->cc == cc && g->ready && g->on_node &&
           g->size >= 2 && s->qlen == 0 && !s->running &&
           s->setup == CSHM_SETUP_READY;
}

/* The _shm_cma algorithms: their check (the kernel's leave to read the
 * others, not in place) runs at every size. */
static bool cma_algo(const coll_algo_t *a)
{
    return a->check == coll_shm_cma_check ||
           a->check == coll_shm_cma_any_check ||
           a->check == coll_shm_cma_rs_check;
}

/* Calls this path takes (after inline_idle); anything else (and any bad
 * argument) goes the ordinary way, which reports it. */
static bool inline_fits(const cshm_t *s, const pami_xfer_t *x,
                        const coll_algo_t **algo, pami_selected_reason_t *why)
{
    struct pami_geometry *g = x->geometry;
    /* Alltoall and reduce_scatter write a block per rank. */
    bool blk = x->kind == PAMI_XFER_ALLTOALL ||
               x->kind == PAMI_XFER_REDUCE_SCATTER;
    bool red = x->kind == PAMI_XFER_ALLREDUCE || x->kind == PAMI_XFER_REDUCE ||
               x->kind == PAMI_XFER_REDUCE_SCATTER;
    if (!red && !blk && x->kind != PAMI_XFER_BROADCAST &&
        x->kind != PAMI_XFER_ALLGATHER)
        return false;
    bool named = (x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
                 x->algorithm != PAMI_ALGORITHM_AUTO;
    size_t es = coll_type_valid(x->dtype) ? pami_type_size(x->dtype) : 0;
    size_t per = blk ? g->size : 1;
    if (es == 0 || x->count == 0 || x->count > SIZE_MAX / es / per ||
        x->rbuf == NULL || IN_PLACE(x->rbuf) || x->root >= g->size)
        return false;
    /* Through the slots: one round. */
    bool small = x->count <= CSHM_SMALL_MAX / es / per &&
                 x->count * es <= s->slot / per;
    bool root = x->root == g->rank;
    if (red && (!coll_op_valid(x->dtype, x->op) ||
                (x->op == PAMI_OP_USER &&
                 (!(x->field_mask & PAMI_XFER_FIELD_USER_OP) ||
                  x->user_fn == NULL))))
        return false;
    if (x->kind != PAMI_XFER_BROADCAST &&
        (x->sbuf == NULL || (IN_PLACE(x->sbuf) &&
                             x->kind == PAMI_XFER_REDUCE && !root)))
        return false;
    const coll_algo_t *a;
    if (named) {
        a    = named_shm(x);
        *why = PAMI_SELECTED_NAMED;
    } else if (small) {
        /* Once per call: it is also the one counted, and logged. */
        pami_algorithm_t id = coll_auto_choice(x, g, why);
        a = id != 0 && coll_algos[id - 1].build == coll_shm_build
                ? &coll_algos[id - 1] : NULL;
    } else {
        /* Larger: only a decision kept in the memo (nothing logged
         * twice when the ordinary way selects instead). */
        pami_algorithm_t id = coll_auto_memo(x, g, why);
        a = id != 0 ? &coll_algos[id - 1] : NULL;
    }
    if (a == NULL)
        return false;
    /* More than one round through the slots, or reads of the others'
     * buffers: the registry's check decides, as on the queued way. */
    if (a->build != coll_shm_build ||
        ((!small || cma_algo(a)) && a->check != NULL &&
         a->check(x) != PAMI_SUCCESS))
        return false;
    *algo = a;
    return true;
}

/* inline_fits for the eager ring's calls (after inline_idle), with only
 * the checks the ring needs: a broadcast the ring takes (cshm_ring_fits),
 * on an agreed geometry without online tuning, whose algorithm is the
 * ring's: named, or AUTO's decision for an equal call, kept in the ring's
 * memo beside the call's signature (the first goes through inline_fits,
 * which selects, logs and keeps it). A loop of small broadcasts spends
 * most of its time in the call, not in the ring: a call equal to the
 * memo's (geometry, type, root, count) whose checks passed once checks
 * only its buffer and the geometry's state again, since the node, the
 * geometry's size and a built-in type's size do not change. */
static bool ring_fits_lean(cshm_t *s, const pami_xfer_t *x,
                           const coll_algo_t **algo,
                           pami_selected_reason_t *why, size_t *es)
{
    struct pami_geometry *g = x->geometry;
    if (x->kind != PAMI_XFER_BROADCAST || !g->agreed || g->online != NULL ||
        x->rbuf == NULL || IN_PLACE(x->rbuf))
        return false;
    cshm_ring_memo_t *m = &s->ring_memo;
    bool hit = m->valid && m->g == g && m->gid == g->id &&
               m->dtype == x->dtype && m->root == x->root &&
               m->count == x->count;
    if (!hit || m->es == 0) {
        if (g->size != s->nlocal || !s->ring_ok || x->root >= g->size ||
            x->count == 0 || x->count > CSHM_SMALL_MAX ||
            !coll_type_valid(x->dtype))
            return false;
        size_t e = pami_type_size(x->dtype), bytes = x->count * e;
        if (bytes > s->slot || bytes > CSHM_RING_MAX)
            return false;
        if (!hit)
            cshm_ring_memo_make(s, x, g);
        m->es = e;
    }
    *es = m->es;
    size_t eager = s->eager_id;
    if ((x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
        x->algorithm != PAMI_ALGORITHM_AUTO) {
        *why = PAMI_SELECTED_NAMED;
        if (x->algorithm != (pami_algorithm_t)eager)
            return false;
        *algo = &coll_algos[eager - 1];
    } else if (m->auto_id != PAMI_ALGORITHM_AUTO) {
        *why  = m->auto_why;
        *algo = &coll_algos[m->auto_id - 1];
    } else {
        return false;
    }
    return true;
}

/* A blocking call on an idle queue: the same rounds as the queued form
 * (members may mix the two), with the register polled inline by
 * pami_barrier_wait (or a flag round's lines, cshm_flag_round_inline),
 * and no request or schedule. The call still takes
 * the geometry's next collective number, like the blocking register
 * barrier (coll_api.c). Entries started meanwhile from progress wait in
 * the queue (running is set) and start when it ends. */
bool coll_shm_wait_inline(coll_ctx_t *cc, const pami_xfer_t *x,
                          pami_result_t *rc)
{
    if (cc == NULL || x == NULL)
        return false;
    cshm_t *s = cshm_of_cc(cc);
    pami_context_t ctx = cc->ctx;
    const coll_algo_t *a = NULL;
    pami_selected_reason_t why;
    if (s == NULL || !inline_idle(s, cc, x->geometry))
        return false;
    size_t es = 0;
    bool lean = ring_fits_lean(s, x, &a, &why, &es);
    if (!lean && !inline_fits(s, x, &a, &why))
        return false;
    if (pami_protocol_in_handler(ctx))
        return false;
    struct pami_geometry *g = x->geometry;
    int slot = -1;
    *rc = coll_connid_pass(g); /* runs inline, locks no element */
    if (*rc != PAMI_SUCCESS)
        return true;
    if (s->qlen > 0 || s->running) /* started while it waited */
        return false;
    g->next_seq++;
    g->started++;
    cc->st.started++;
    cc->algo_calls[a - coll_algos]++;
    cc->selected[why]++;
    if (why != PAMI_SELECTED_NAMED && g->online != NULL)
        slot = coll_online_commit(g, x, (pami_algorithm_t)(a - coll_algos + 1),
                                  NULL);
    /* The clock only for online tuning: two reads cost a small call
     * about a sixth of its time. */
    double t0 = slot >= 0 ? coll_online_now_us() : 0;
    s->running = true;
    cshm_count(s, CSHM_STAT_inline);
    if (lean) {
        cshm_ring_start(s, NULL, x, g, es);
    } else {
        cshm_op_setup(s, NULL, x, g, pami_type_size(x->dtype),
                      (size_t)(a - coll_algos + 1));
        /* AUTO's ring: its decision kept for the next equal call, which
         * then takes ring_fits_lean. A broadcast's decision reads only
         * the geometry, type, count (and root, as the memo's key). */
        if (s->op.ring && why != PAMI_SELECTED_NAMED && g->agreed &&
            g->online == NULL) {
            s->ring_memo.auto_id  = (pami_algorithm_t)(a - coll_algos + 1);
            s->ring_memo.auto_why = why;
        }
    }
    if (s->op.ring) {
        *rc = cshm_ring_inline(s);
    } else if (cshm_nobar_kind(s->op.kind)) {
        *rc = cshm_a2a_run_inline(s);
    } else if (s->op.flag) {
        *rc = cshm_flag_round_inline(s);
    } else {
        /* One barrier through the slots; a _shm_cma call's further ones
         * cshm_op_next only counts (inline_bar) and this loop waits for,
         * without a request, the engine or its waiter thread. */
        bool done = false;
        s->inline_bar = true;
        cshm_count(s, CSHM_STAT_barriers);
        for (;;) {
            *rc = pami_barrier_wait(ctx, PAMI_BARRIER_SHM, NULL, 0);
            if (*rc != PAMI_SUCCESS)
                break;
            *rc = cshm_op_next(s, &done);
            if (*rc != PAMI_SUCCESS || done)
                break;
        }
        s->inline_bar = false;
    }
    s->running = false;
    if (slot >= 0)
        coll_online_record(g, slot, *rc == PAMI_SUCCESS
                                        ? coll_online_now_us() - t0 : 1e12);
    if (*rc != PAMI_SUCCESS && *rc != PAMI_INVAL)
        cshm_seg_failed(s, *rc);
    if (*rc == PAMI_SUCCESS) {
        cc->st.completed++;
    } else {
        cc->st.failed++;
        cshm_count(s, CSHM_STAT_failed);
    }
    cshm_pump(s);
    if (x->done_fn != NULL)
        x->done_fn(ctx, x->cookie, *rc);
    return true;
}

/* ---- the registry's side ---- */

pami_result_t coll_shm_check(const pami_xfer_t *x)
{
    return x->geometry != NULL && x->geometry->on_node &&
                   x->geometry->size >= 2
               ? PAMI_SUCCESS
               : PAMI_INVAL;
}

/* The AUTO rule (coll_api.c asks it too, so both agree; its inputs are
 * the same on every task of the node). Allreduce and allgather need
 * every task anyway: shared memory won at every size measured. A rooted
 * call through the register waits for every task, where a tree lets the
 * leaves go: with more tasks than CPUs that costs more than the copies
 * save below 64 KiB (docs/collectives.md). */
bool coll_shm_auto(const pami_xfer_t *x)
{
    if (coll_shm_check(x) != PAMI_SUCCESS)
        return false;
    cshm_t *s = cshm_of_cc(x->geometry->cc);
    size_t bytes = x->count * pami_type_size(x->dtype);
    if (s == NULL || !s->auto_ok)
        return false;
    switch (x->kind) {
    case PAMI_XFER_ALLREDUCE:
    case PAMI_XFER_ALLGATHER:
        return true;
    case PAMI_XFER_BROADCAST:
    case PAMI_XFER_REDUCE:
        if (x->kind == PAMI_XFER_BROADCAST && cshm_ring_fits(s, x, bytes))
            return true;
        return s->nlocal <= s->ncpus || bytes >= 64 * 1024;
    default:
        return false;
    }
}

bool coll_shm_auto_ring(const pami_xfer_t *x)
{
    cshm_t *s = cshm_of_cc(x->geometry->cc);
    return s != NULL &&
           cshm_ring_fits(s, x, x->count * pami_type_size(x->dtype));
}

bool coll_shm_auto_allowed(pami_context_t ctx)
{
    cshm_t *s = cshm_of(ctx);
    return s != NULL && s->auto_ok;
}

/* One step holding the whole collective; nothing at all for no data
 * (every member skips it alike). */
pami_result_t coll_shm_build(coll_req_t *req)
{
    if (req->x.count == 0 || req->dtsize == 0)
        return PAMI_SUCCESS;
    /* Queued now, in call order; coll_shm_start attaches it. Until then
     * it runs, if it must, as a poison round (the call failed here). */
    cshm_t *s = cshm_of(req->cc->ctx);
    if (s != NULL && (s->setup != CSHM_SETUP_FAILED || s->qlen > 0)) {
        if (!cshm_push(s, (cshm_entry_t){.req = req, .which = COLL_EXT_SHM}))
            return PAMI_ENOMEM;
        if (s->qlen == 1)
            cshm_kick(s);
    }
    sb_step(req);
    sb_barrier(req, COLL_EXT_SHM);
    return PAMI_SUCCESS;
}

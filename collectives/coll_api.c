/*
 * pami_collective: checks a call, picks its algorithm (named or AUTO),
 * takes a ConnID, builds the schedule and starts it; the queries of the
 * registry; the blocking helpers.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "coll.h"
#include "coll_builtin.h"
#include "pami_barrier.h"

#define IN_PLACE(p) ((const void *)(p) == (const void *)PAMI_IN_PLACE)

static bool reduces(pami_xfer_type_t k)
{
    return k == PAMI_XFER_REDUCE || k == PAMI_XFER_ALLREDUCE ||
           k == PAMI_XFER_REDUCE_SCATTER || k == PAMI_XFER_SCAN ||
           k == PAMI_XFER_EXSCAN;
}

static bool rooted(pami_xfer_type_t k)
{
    return k == PAMI_XFER_BROADCAST || k == PAMI_XFER_REDUCE ||
           k == PAMI_XFER_GATHER || k == PAMI_XFER_SCATTER ||
           k == PAMI_XFER_GATHERV || k == PAMI_XFER_SCATTERV;
}

static bool geometry_fits(const coll_algo_t *a, const struct pami_geometry *g)
{
    return !(a->requirements & PAMI_ALGORITHM_REQ_POW2) || coll_pow2(g->size);
}

static size_t sum_counts(const size_t *c, const size_t *d, size_t n,
                         bool *overflow)
{
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i] > SIZE_MAX / 64 || d[i] > SIZE_MAX / 64)
            *overflow = true;
        else if (c[i] + d[i] > end)
            end = c[i] + d[i];
    }
    return end;
}

/* NULL when the call is well formed here, else why not. */
static const char *invalid(const pami_xfer_t *x, const struct pami_geometry *g)
{
    size_t n = g->size, r = g->rank;
    pami_xfer_type_t k = x->kind;
    if (k == PAMI_XFER_BARRIER)
        return NULL;
    if (!coll_type_valid(x->dtype))
        return "unknown data type";
    size_t es = pami_type_size(x->dtype);
    if (x->count > SIZE_MAX / es / (n + 1))
        return "count too large";
    if (reduces(k)) {
        if (!coll_op_valid(x->dtype, x->op))
            return "op not defined for the type";
        if (x->op == PAMI_OP_USER &&
            (!(x->field_mask & PAMI_XFER_FIELD_USER_OP) || x->user_fn == NULL))
            return "PAMI_OP_USER without user_fn";
    }
    if (rooted(k) && x->root >= n)
        return "root beyond the geometry";
    bool root = rooted(k) && x->root == r;
    bool v = k == PAMI_XFER_ALLGATHERV || k == PAMI_XFER_GATHERV ||
             k == PAMI_XFER_SCATTERV || k == PAMI_XFER_ALLTOALLV;
    if (v && !(x->field_mask & PAMI_XFER_FIELD_VCOUNTS))
        return "a v collective without PAMI_XFER_FIELD_VCOUNTS";
    bool has_data = x->count > 0;
    bool sbuf_in_place = IN_PLACE(x->sbuf), rbuf_in_place = IN_PLACE(x->rbuf);
    bool ovf = false;
    switch (k) {
    case PAMI_XFER_BROADCAST:
        if (has_data && (x->rbuf == NULL || rbuf_in_place))
            return "NULL rbuf";
        break;
    case PAMI_XFER_REDUCE:
    case PAMI_XFER_GATHER:
        if (sbuf_in_place && !root)
            return "PAMI_IN_PLACE off the root";
        if (has_data && x->sbuf == NULL)
            return "NULL sbuf";
        if (root && has_data && (x->rbuf == NULL || rbuf_in_place))
            return "NULL rbuf at the root";
        break;
    case PAMI_XFER_SCATTER:
        if (rbuf_in_place && !root)
            return "PAMI_IN_PLACE off the root";
        if (has_data && x->rbuf == NULL)
            return "NULL rbuf";
        if (root && has_data && (x->sbuf == NULL || sbuf_in_place))
            return "NULL sbuf at the root";
        break;
    case PAMI_XFER_ALLREDUCE:
    case PAMI_XFER_ALLGATHER:
    case PAMI_XFER_ALLTOALL:
    case PAMI_XFER_REDUCE_SCATTER:
    case PAMI_XFER_SCAN:
    case PAMI_XFER_EXSCAN:
        if (has_data && rbuf_in_place)
            return "PAMI_IN_PLACE as rbuf (it goes in sbuf)";
        if (has_data && (x->sbuf == NULL || x->rbuf == NULL))
            return "NULL sbuf or rbuf";
        break;
    case PAMI_XFER_ALLGATHERV:
        if (x->rcounts == NULL || x->rdispls == NULL)
            return "NULL rcounts or rdispls";
        sum_counts(x->rcounts, x->rdispls, n, &ovf);
        if (ovf)
            return "counts too large";
        if (!sbuf_in_place && x->rcounts[r] != x->count)
            return "count is not rcounts[rank]";
        if (rbuf_in_place)
            return "PAMI_IN_PLACE as rbuf (it goes in sbuf)";
        if (x->rbuf == NULL || (x->sbuf == NULL && x->count > 0))
            return "NULL sbuf or rbuf";
        break;
    case PAMI_XFER_GATHERV:
        if (sbuf_in_place && !root)
            return "PAMI_IN_PLACE off the root";
        if (has_data && x->sbuf == NULL)
            return "NULL sbuf";
        if (root) {
            if (x->rcounts == NULL || x->rdispls == NULL || x->rbuf == NULL)
                return "NULL rcounts, rdispls or rbuf at the root";
            sum_counts(x->rcounts, x->rdispls, n, &ovf);
            if (ovf)
                return "counts too large";
            if (!sbuf_in_place && x->rcounts[r] != x->count)
                return "count is not rcounts[root]";
        }
        break;
    case PAMI_XFER_SCATTERV:
        if (rbuf_in_place && !root)
            return "PAMI_IN_PLACE off the root";
        if (has_data && x->rbuf == NULL)
            return "NULL rbuf";
        if (root) {
            if (x->scounts == NULL || x->sdispls == NULL || x->sbuf == NULL)
                return "NULL scounts, sdispls or sbuf at the root";
            sum_counts(x->scounts, x->sdispls, n, &ovf);
            if (ovf)
                return "counts too large";
            if (!rbuf_in_place && x->scounts[r] != x->count)
                return "count is not scounts[root]";
        }
        break;
    case PAMI_XFER_ALLTOALLV:
        if (x->rcounts == NULL || x->rdispls == NULL || x->rbuf == NULL ||
            rbuf_in_place || x->sbuf == NULL)
            return "NULL rcounts, rdispls, sbuf or rbuf";
        sum_counts(x->rcounts, x->rdispls, n, &ovf);
        if (!sbuf_in_place) {
            if (x->scounts == NULL || x->sdispls == NULL)
                return "NULL scounts or sdispls";
            sum_counts(x->scounts, x->sdispls, n, &ovf);
            if (!ovf && x->scounts[r] != x->rcounts[r])
                return "scounts[rank] differs from rcounts[rank]";
        }
        if (ovf)
            return "counts too large";
        break;
    default:
        return "unknown collective";
    }
    return NULL;
}

/* Built-in rules for PAMI_ALGORITHM_AUTO; the same inputs on every
 * member, so every member picks the same. */
static const char *auto_name(const pami_xfer_t *x,
                             const struct pami_geometry *g)
{
    size_t n = g->size;
    size_t bytes = x->count * pami_type_size(x->dtype);
    bool comm = coll_commutative(x);
    switch (x->kind) {
    case PAMI_XFER_BARRIER:
        /* No message at all on one node; one round of packets between
         * node leaders for the job; else packets while n - 1 per task
         * stay few. */
        if (g->on_node && n > 1)
            return "barrier_shm";
        if (n == g->cc->ntasks && n > 1)
            return "barrier_hier";
        return n <= 8 ? "barrier_packets" : "barrier_dissemination";
    case PAMI_XFER_BROADCAST:
        if (coll_shm_auto(x))
            return coll_shm_auto_ring(x) ? "broadcast_shm_eager"
                                         : "broadcast_shm";
        if (bytes >= 64 * 1024 && n > 2 && x->count >= n)
            return "broadcast_scatter_allgather";
        if (bytes >= 256 * 1024 && n == 2)
            return "broadcast_pipelined_chain";
        return n > 4 && bytes <= 4096 ? "broadcast_knomial4"
                                      : "broadcast_binomial";
    case PAMI_XFER_REDUCE:
        return coll_shm_auto(x) ? "reduce_shm" : "reduce_binomial";
    case PAMI_XFER_ALLREDUCE:
        if (coll_shm_auto(x))
            return "allreduce_shm";
        if (bytes < 16 * 1024 || x->count < n)
            return "allreduce_recursive_doubling";
        if (comm && (bytes >= 1024 * 1024 ||
                     (!coll_pow2(n) && bytes >= 64 * 1024)))
            return "allreduce_ring";
        return "allreduce_rabenseifner";
    case PAMI_XFER_ALLGATHER:
        if (coll_shm_auto(x))
            return "allgather_shm";
        if (coll_pow2(n) && bytes * n <= 256 * 1024)
            return "allgather_recursive_doubling";
        return bytes * n <= 64 * 1024 ? "allgather_bruck" : "allgather_ring";
    case PAMI_XFER_GATHER:
        return bytes <= 4096 ? "gather_binomial" : "gather_linear";
    case PAMI_XFER_SCATTER:
        return bytes <= 4096 ? "scatter_binomial" : "scatter_linear";
    case PAMI_XFER_ALLTOALL:
        /* All at once while n - 1 messages per task stay few and not
         * large (at 16 and 64 KiB, 4 and 8 tasks: 0.5 to 0.85 of the
         * time of pairwise; at 256 KiB mixed). */
        if (n > 2 && bytes <= 64 * 1024 && n <= 16)
            return "alltoall_linear";
        return n > 2 && bytes <= 2048 ? "alltoall_bruck" : "alltoall_pairwise";
    case PAMI_XFER_REDUCE_SCATTER:
        if (!comm)
            return "reduce_scatter_reduce_scatter";
        /* Halving at any size for a power of two: at 4 and 8 tasks it
         * was at or below ring from 8 B to 4 MiB (half at 8 x 4 MiB). */
        return coll_pow2(n) ? "reduce_scatter_recursive_halving"
                            : "reduce_scatter_ring";
    case PAMI_XFER_SCAN:
        return "scan_recursive_doubling";
    case PAMI_XFER_EXSCAN:
        return "exscan_recursive_doubling";
    case PAMI_XFER_ALLGATHERV:
        return "allgatherv_ring";
    case PAMI_XFER_GATHERV:
        return "gatherv_linear";
    case PAMI_XFER_SCATTERV:
        return "scatterv_linear";
    case PAMI_XFER_ALLTOALLV:
        return "alltoallv_pairwise";
    default:
        return NULL;
    }
}

pami_result_t pami_algorithm_by_name(const char *name,
                                     pami_algorithm_t *algorithm)
{
    if (name == NULL || algorithm == NULL)
        return PAMI_INVAL;
    for (size_t i = 0; i < coll_num_algos; i++)
        if (strcmp(coll_algos[i].name, name) == 0) {
            *algorithm = (pami_algorithm_t)(i + 1);
            return PAMI_SUCCESS;
        }
    return PAMI_NOT_FOUND;
}

/* The registry id of an AUTO rule's name (PAMI_ALGORITHM_AUTO: none).
 * The rules return string literals, so the context remembers each
 * literal's id by its address instead of comparing names on every call. */
static pami_algorithm_t auto_id(coll_ctx_t *cc, const char *name)
{
    if (name == NULL)
        return PAMI_ALGORITHM_AUTO;
    size_t slot = ((uintptr_t)name >> 3) % COLL_AUTO_IDS;
    if (cc->auto_ids[slot].name == name)
        return cc->auto_ids[slot].id;
    pami_algorithm_t id;
    if (pami_algorithm_by_name(name, &id) != PAMI_SUCCESS)
        return PAMI_ALGORITHM_AUTO;
    cc->auto_ids[slot].name = name;
    cc->auto_ids[slot].id   = id;
    return id;
}

/* The rules measured on this machine (coll_builtin.c) where they have
 * a row for the call that the geometry can run, else the hand-set ones
 * above (other nodes' shapes, sizes beyond the measured ones). */
pami_algorithm_t coll_auto_builtin(const pami_xfer_t *x,
                                   struct pami_geometry *g)
{
    pami_algorithm_t id = coll_builtin_pick(x, g, coll_select_bytes(x, g));
    return id != 0 ? id : auto_id(g->cc, auto_name(x, g));
}

bool coll_algo_runs(const coll_algo_t *a, const pami_xfer_t *x,
                    const struct pami_geometry *g)
{
    return (uint32_t)a->kind == (uint32_t)x->kind && geometry_fits(a, g) &&
           (a->check == NULL || a->check(x) == PAMI_SUCCESS);
}

/* The algorithm for the call, or NULL with why. */
static const coll_algo_t *choose(const pami_xfer_t *x,
                                 struct pami_geometry *g,
                                 const char **why)
{
    pami_algorithm_t id = PAMI_ALGORITHM_AUTO;
    if (x->field_mask & PAMI_XFER_FIELD_ALGORITHM)
        id = x->algorithm;
    if (id == PAMI_ALGORITHM_AUTO) {
        pami_selected_reason_t why_auto;
        id = coll_auto_choice(x, g, &why_auto);
        g->cc->selected[why_auto]++;
        if (id == PAMI_ALGORITHM_AUTO) {
            *why = "no algorithm for this collective";
            return NULL;
        }
    } else {
        g->cc->selected[PAMI_SELECTED_NAMED]++;
    }
    if (id > coll_num_algos) {
        *why = "unknown algorithm";
        return NULL;
    }
    const coll_algo_t *a = &coll_algos[id - 1];
    if ((uint32_t)a->kind != (uint32_t)x->kind)
        *why = "the algorithm is for another collective";
    else if (!geometry_fits(a, g))
        *why = "the algorithm needs a power-of-two geometry";
    else if (a->check != NULL && a->check(x) != PAMI_SUCCESS)
        *why = "the algorithm cannot run this call (e.g. a non-commutative op)";
    else
        return a;
    return NULL;
}

/* One multiply and xor-shift per field. */
static uint32_t mix(uint32_t h, uint64_t v)
{
    uint64_t z = ((uint64_t)h << 32 | h) ^ v;
    z *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(z >> 32) ^ (uint32_t)z;
}

/* What every member must pass alike, hashed into each message. */
static uint32_t signature(const pami_xfer_t *x, uint8_t algo)
{
    uint32_t h = mix(0x2545f491u, (uint64_t)x->kind << 8 | algo);
    if (x->kind == PAMI_XFER_BARRIER)
        return h;
    h = mix(h, x->dtype);
    if (reduces(x->kind))
        h = mix(h, (uint64_t)x->op << 1 | (x->op == PAMI_OP_USER &&
                                            x->user_commutative));
    if (rooted(x->kind))
        h = mix(h, x->root);
    bool v = x->kind == PAMI_XFER_ALLGATHERV || x->kind == PAMI_XFER_GATHERV ||
             x->kind == PAMI_XFER_SCATTERV || x->kind == PAMI_XFER_ALLTOALLV;
    if (!v)
        h = mix(h, x->count);
    return h;
}

static bool v_kind(pami_xfer_type_t k)
{
    return k == PAMI_XFER_ALLGATHERV || k == PAMI_XFER_GATHERV ||
           k == PAMI_XFER_SCATTERV || k == PAMI_XFER_ALLTOALLV;
}

/* Whether a's builder only fills the request, so its schedule may serve
 * the same call again. coll_shm_build also queues the call on the node's
 * segment: it must run for every call. */
static bool build_is_pure(const coll_algo_t *a)
{
    return a->build != coll_shm_build;
}

/* A checked call's new request with its schedule built, or NULL with rc
 * (the other members were told to end their instance). */
static coll_req_t *build(coll_ctx_t *cc, struct pami_geometry *g,
                         const pami_xfer_t *x, const coll_algo_t *a,
                         bool prepend, pami_result_t *rc)
{
    coll_req_t *req = coll_req_new(g, x, (uint16_t)x->kind);
    *rc = PAMI_ENOMEM;
    if (req != NULL) {
        req->algo     = a;
        req->algo_id  = (uint8_t)(a - coll_algos + 1);
        req->sig      = signature(x, req->algo_id);
        req->done_fn     = x->done_fn;
        req->done_cookie = x->cookie;
        req->key_n    = g->size;
        req->key_r    = g->rank;
        req->key_node = g->on_node;
        req->key_list = g->hash;
        if (prepend) { /* its data moves once every member posted it */
            bld_barrier_dissemination(req);
            sb_step(req);
        }
        *rc = a->build(req);
        if (*rc == PAMI_SUCCESS && req->build_failed)
            *rc = PAMI_ENOMEM;
        /* v counts live in the caller's arrays: their contents may
         * change under the same pointers. */
        req->cacheable = !v_kind(x->kind) && build_is_pure(a);
    }
    if (*rc == PAMI_SUCCESS)
        return req;
    if (req != NULL)
        coll_req_free(req);
    coll_warn("collective on geometry %u: %s", g->id, pami_error_text(*rc));
    coll_send_abort(cc, g, g->next_seq++, (uint16_t)x->kind);
    return NULL;
}

/* pami_collective; finish_inline: a collective already complete when
 * started ends before the return (see coll_start_call). */
static pami_result_t collective(pami_context_t context, const pami_xfer_t *x,
                                bool finish_inline)
{
    coll_ctx_t *cc = coll_ctx_of(context);
    if (cc == NULL || x == NULL) {
        coll_warn("collective: %s", cc == NULL
                  ? "collectives are not running on this context"
                  : "NULL xfer");
        return PAMI_INVAL;
    }
    struct pami_geometry *g = x->geometry;
    if (g == NULL || g->cc != cc || !g->ready) {
        coll_warn("collective: %s", g == NULL ? "NULL geometry"
                  : g->cc != cc ? "the geometry is of another context"
                                : "the geometry is not ready");
        return PAMI_INVAL;
    }
    if ((unsigned)x->kind >= PAMI_XFER_COUNT) {
        coll_warn("collective: unknown kind %d", (int)x->kind);
        return PAMI_INVAL;
    }
    const char *mask_why = coll_xfer_mask_invalid(x->field_mask);
    if (mask_why != NULL) {
        coll_warn("collective: pami_xfer_t %s", mask_why);
        return PAMI_INVAL;
    }
    if (!g->agreed) {
        pami_result_t arc = coll_select_ready(cc, g, x);
        if (arc != PAMI_SUCCESS)
            return arc;
    }
    bool is_auto = !(x->field_mask & PAMI_XFER_FIELD_ALGORITHM) ||
                   x->algorithm == PAMI_ALGORITHM_AUTO;
    if (g->online != NULL && is_auto) {
        pami_result_t orc = coll_select_ready(cc, g, x);
        if (orc != PAMI_SUCCESS)
            return orc;
    }
    /* The same call as one that ended well: its schedule as built (not
     * while online tuning may pick another algorithm for it). */
    coll_req_t *req = g->online != NULL && is_auto
                          ? NULL : coll_cache_take(cc, g, x);
    const coll_algo_t *a = NULL;
    if (req == NULL) {
        const char *why = invalid(x, g);
        a = why == NULL ? choose(x, g, &why) : NULL;
        if (a == NULL) {
            /* The members count this call as one of the geometry's
             * collectives: take its number and end it on all of them. */
            coll_warn("collective (kind %d) on geometry %u: %s; the other "
                      "members' instance ends with PAMI_INVAL", (int)x->kind,
                      g->id, why);
            coll_flow_aborted(g, x);
            coll_send_abort(cc, g, g->next_seq++, (uint16_t)x->kind);
            coll_shm_poison(context, x);
            return PAMI_INVAL;
        }
    }
    /* How far this task may run ahead (coll_flow.c): may start the
     * geometry's sync, or wait for the one before. */
    uint8_t  id = (uint8_t)((req != NULL ? req->algo : a) - coll_algos + 1);
    uint64_t fmsgs, fbytes;
    pami_result_t rc = coll_flow_before(g, x, id, &fmsgs, &fbytes);
    if (rc != PAMI_SUCCESS && rc == g->flow_rc) {
        /* A failed sync (coll_flow.c): the call ends on every member. */
        coll_send_abort(cc, g, g->next_seq++, (uint16_t)x->kind);
        if (req != NULL)
            coll_req_free(req);
        return rc;
    }
    bool prepend = coll_flow_prepends(cc, g, x, id);
    if (rc == PAMI_SUCCESS)
        rc = coll_connid_acquire(g);
    if (rc != PAMI_SUCCESS) {
        if (req != NULL)
            coll_req_free(req); /* back to the cache */
        return rc;
    }
    if (prepend)
        cc->st.flow_prepended++;
    if (req == NULL && (req = build(cc, g, x, a, prepend, &rc)) == NULL) {
        coll_flow_count(g, fmsgs, fbytes); /* the members counted it */
        coll_connid_unreserve(g);
        return rc;
    }
    coll_connid_lock(g, req, true);
    coll_claim_unexpected(req);
    cc->algo_calls[req->algo_id - 1]++;
    if (g->online != NULL && is_auto)
        coll_online_commit(g, x, req->algo_id, req);
    coll_flow_count(g, fmsgs, fbytes); /* before: done_fn may end g */
    coll_start_call(req, finish_inline);
    return PAMI_SUCCESS;
}

pami_result_t pami_collective(pami_context_t context, const pami_xfer_t *x)
{
    return collective(context, x, false);
}

/* ---- registry queries ---- */

pami_result_t pami_geometry_algorithms_num(pami_geometry_t g,
                                           pami_xfer_type_t kind,
                                           size_t *num_always,
                                           size_t *num_check)
{
    if (g == NULL || num_always == NULL || num_check == NULL ||
        (unsigned)kind >= PAMI_XFER_COUNT) {
        coll_warn("algorithms_num: NULL argument or unknown kind");
        return PAMI_INVAL;
    }
    *num_always = *num_check = 0;
    for (size_t i = 0; i < coll_num_algos; i++) {
        const coll_algo_t *a = &coll_algos[i];
        if (a->kind != kind || !geometry_fits(a, g))
            continue;
        if (a->check == NULL)
            ++*num_always;
        else
            ++*num_check;
    }
    return PAMI_SUCCESS;
}

static void describe(const coll_algo_t *a, pami_algorithm_metadata_t *md)
{
    md->name         = a->name;
    md->range_lo     = a->range_lo;
    md->range_hi     = a->range_hi;
    md->requirements = a->requirements;
    md->check        = a->check;
}

pami_result_t pami_geometry_algorithms_query(
    pami_geometry_t g, pami_xfer_type_t kind, pami_algorithm_t *always,
    pami_algorithm_metadata_t *always_md, size_t num_always,
    pami_algorithm_t *check, pami_algorithm_metadata_t *check_md,
    size_t num_check)
{
    if (g == NULL || (unsigned)kind >= PAMI_XFER_COUNT) {
        coll_warn("algorithms_query: NULL geometry or unknown kind");
        return PAMI_INVAL;
    }
    size_t na = 0, nc = 0;
    for (size_t i = 0; i < coll_num_algos; i++) {
        const coll_algo_t *a = &coll_algos[i];
        if (a->kind != kind || !geometry_fits(a, g))
            continue;
        if (a->check == NULL && na < num_always) {
            if (always != NULL)
                always[na] = (pami_algorithm_t)(i + 1);
            if (always_md != NULL)
                describe(a, &always_md[na]);
            na++;
        } else if (a->check != NULL && nc < num_check) {
            if (check != NULL)
                check[nc] = (pami_algorithm_t)(i + 1);
            if (check_md != NULL)
                describe(a, &check_md[nc]);
            nc++;
        }
    }
    return PAMI_SUCCESS;
}

/* ---- blocking helpers ---- */

typedef struct {
    bool          done;
    pami_result_t rc;
    pami_event_fn fn;
    void         *cookie;
} waiter_t;

static void on_wait_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    waiter_t *w = cookie;
    w->done = true;
    w->rc   = rc;
    if (w->fn != NULL)
        w->fn(ctx, w->cookie, rc);
}

/* Polls instead of sleeping while the collective waits: its peers are
 * about to send, and a sleeping task is woken through its event fd, a
 * few microseconds on each side for every message (a recursive doubling
 * of 4 KiB at 2 tasks took 1.6 us a call when both polled, 5-10 when the
 * default wait spin ran out and they slept; a large payload's pieces are
 * a few round trips each). Only when this node has a cpu for every task:
 * else the peer we wait for may need this cpu. At most spin_ns before
 * one pami_context_wait. */
static void spin_before_sleep(coll_ctx_t *cc, const waiter_t *w)
{
    if (cc->spin_ns == 0)
        return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 1; !w->done; i++) {
        pami_result_t rc = pami_context_advance(cc->ctx, 1);
        if (rc != PAMI_SUCCESS && rc != PAMI_EAGAIN)
            return;
        if (w->done)
            return;
        if (i % 64 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000000000L +
                (t.tv_nsec - t0.tv_nsec) > (long)cc->spin_ns)
                return;
        }
    }
}

static bool barrier_inline(coll_ctx_t *cc, struct pami_geometry *g,
                           const pami_xfer_t *x, pami_result_t *rc);

pami_result_t pami_collective_wait(pami_context_t context,
                                   const pami_xfer_t *xfer)
{
    if (xfer == NULL)
        return pami_collective(context, NULL);
    const char *mask_why = coll_xfer_mask_invalid(xfer->field_mask);
    if (mask_why != NULL) {
        coll_warn("collective_wait: pami_xfer_t %s", mask_why);
        return PAMI_INVAL;
    }
    pami_result_t rc;
    struct pami_geometry *xg = xfer->geometry;
    /* A geometry of this context names its state: the context's list
     * of protocols is searched only for other calls (36 instructions a
     * call in callgrind, on every small inline call). */
    coll_ctx_t *xcc = xg != NULL && xg->cc != NULL && xg->cc->ctx == context
                          ? xg->cc
                          : coll_ctx_of(context);
    if (xcc != NULL && xg != NULL && xg->cc == xcc && xg->ready &&
        (!xg->agreed || xg->online != NULL)) {
        if (pami_protocol_in_handler(context))
            return PAMI_IN_HANDLER;
        rc = coll_select_ready(xcc, xg, xfer);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    if (xfer->kind == PAMI_XFER_BARRIER && xcc != NULL && xg != NULL &&
        xg->cc == xcc && xg->ready) { /* on the register: inline */
        if (pami_protocol_in_handler(context))
            return PAMI_IN_HANDLER;
        if (barrier_inline(xcc, xg, xfer, &rc))
            return rc;
    } else if (coll_shm_wait_inline(xcc, xfer, &rc)) { /* one node, shm */
        return rc;
    }
    /* Refuse before starting anything we could not wait for. */
    if (pami_protocol_in_handler(context))
        return PAMI_IN_HANDLER;
    waiter_t    w = {.fn = xfer->done_fn, .cookie = xfer->cookie};
    pami_xfer_t x;
    coll_xfer_copy(&x, xfer);
    x.done_fn = on_wait_done;
    x.cookie  = &w;
    /* With no done_fn of the program's to run, a collective complete at
     * the start ends at once, without a round through posted work. */
    rc = collective(context, &x, w.fn == NULL);
    if (rc != PAMI_SUCCESS)
        return rc;
    while (!w.done) {
        if (xcc != NULL)
            spin_before_sleep(xcc, &w);
        if (w.done)
            break;
        rc = pami_context_wait(context, 100);
        if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
            return rc;
    }
    return w.rc;
}

/* A blocking barrier whose algorithm is a register barrier (barrier_shm,
 * barrier_hier) goes to pami_barrier_wait, which may poll the register
 * inline instead of queueing. It is still the geometry's next collective:
 * it takes its number (every member does, with any form of the call) and
 * waits for a ConnID below the threshold, but needs no request and locks
 * no ConnID since no message of it travels. *started: it took its number
 * (the result is the barrier's; else nothing began). */
static pami_result_t barrier_on_register(coll_ctx_t *cc,
                                         struct pami_geometry *g,
                                         pami_barrier_algo_t algo,
                                         bool *started)
{
    *started = false;
    if (pami_protocol_in_handler(cc->ctx))
        return PAMI_IN_HANDLER;
    pami_result_t rc = coll_connid_pass(g); /* nothing of it travels */
    if (rc != PAMI_SUCCESS)
        return rc;
    *started = true;
    g->next_seq++;
    g->started++;
    cc->st.started++;
    rc = coll_shm_quiesce(cc->ctx); /* register barriers go in call order */
    if (rc == PAMI_SUCCESS)
        rc = pami_barrier_wait(cc->ctx, algo, NULL, 0);
    if (rc == PAMI_SUCCESS)
        cc->st.completed++;
    else
        cc->st.failed++;
    return rc;
}

static pthread_once_t   register_once = PTHREAD_ONCE_INIT;
static pami_algorithm_t barrier_shm_id, barrier_hier_id;

static void find_register_barriers(void)
{
    if (pami_algorithm_by_name("barrier_shm", &barrier_shm_id) != PAMI_SUCCESS)
        barrier_shm_id = 0;
    if (pami_algorithm_by_name("barrier_hier", &barrier_hier_id) !=
        PAMI_SUCCESS)
        barrier_hier_id = 0;
}

static bool register_barrier(pami_algorithm_t id)
{
    pthread_once(&register_once, find_register_barriers);
    return id != 0 && (id == barrier_shm_id || id == barrier_hier_id);
}

/* Blocking barrier x on g (ready, this context's, selection agreed) when
 * its algorithm, named or AUTO's (from the geometry's memo, else
 * selected and logged), is a register barrier: run inline, true with *rc;
 * else false, for the ordinary way. Named and AUTO calls cost alike, and
 * pami-tune measures the register barriers as AUTO runs them. */
static bool barrier_inline(coll_ctx_t *cc, struct pami_geometry *g,
                           const pami_xfer_t *x, pami_result_t *rc)
{
    bool named = (x->field_mask & PAMI_XFER_FIELD_ALGORITHM) &&
                 x->algorithm != PAMI_ALGORITHM_AUTO;
    pami_selected_reason_t why = PAMI_SELECTED_NAMED;
    pami_algorithm_t id;
    if (named) {
        id = x->algorithm;
        if (!register_barrier(id) ||
            !coll_algo_runs(&coll_algos[id - 1], x, g))
            return false; /* the ordinary way reports what is wrong */
    } else {
        id = coll_auto_choice(x, g, &why);
        if (!register_barrier(id))
            return false;
    }
    /* The clock only for online tuning (two reads cost a register
     * barrier more than its selection). */
    int slot = !named && g->online != NULL
                   ? coll_online_commit(g, x, id, NULL) : -1;
    double t0 = slot >= 0 ? coll_online_now_us() : 0;
    bool started;
    *rc = barrier_on_register(cc, g, id == barrier_shm_id ? PAMI_BARRIER_SHM
                                                          : PAMI_BARRIER_HIER,
                              &started);
    if (slot >= 0)
        coll_online_record(g, slot, *rc == PAMI_SUCCESS && started
                                        ? coll_online_now_us() - t0 : 1e12);
    if (!started)
        return true;
    cc->selected[why]++;
    cc->algo_calls[id - 1]++;
    if (x->done_fn != NULL)
        x->done_fn(cc->ctx, x->cookie, *rc);
    return true;
}

pami_result_t pami_geometry_barrier(pami_context_t context,
                                    pami_geometry_t geometry)
{
    pami_xfer_t x = {.kind = PAMI_XFER_BARRIER, .geometry = geometry};
    return pami_collective_wait(context, &x);
}

pami_result_t pami_geometry_broadcast(pami_context_t context,
                                      pami_geometry_t geometry, size_t root,
                                      void *buf, size_t count,
                                      pami_type_t dtype)
{
    pami_xfer_t x = {.kind = PAMI_XFER_BROADCAST, .geometry = geometry,
                     .root = root, .rbuf = buf, .count = count,
                     .dtype = dtype};
    return pami_collective_wait(context, &x);
}

pami_result_t pami_geometry_allreduce(pami_context_t context,
                                      pami_geometry_t geometry,
                                      const void *sbuf, void *rbuf,
                                      size_t count, pami_type_t dtype,
                                      pami_op_t op)
{
    pami_xfer_t x = {.kind = PAMI_XFER_ALLREDUCE, .geometry = geometry,
                     .sbuf = sbuf, .rbuf = rbuf, .count = count,
                     .dtype = dtype, .op = op};
    return pami_collective_wait(context, &x);
}

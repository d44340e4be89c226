/*
 * Online refinement (PAMI_COLL_TUNE=online, docs/tuning.md): for AUTO
 * calls that neither a forced algorithm nor the profile's table decides,
 * the first calls at a point (geometry, collective, type class, power of
 * two of the size) try the candidate algorithms in turn, COLL_ONLINE_TRIES
 * calls each; every member counts the calls at the point alike, so all
 * run the same candidate on the same call. Then, before the next call at
 * the point, the members reduce their median times per candidate (max
 * over the members: the slowest member's time) in an allreduce, and all
 * keep the fastest. PAMI_COLL_PROFILE_OUT receives what was learnt, as a
 * profile, when the context ends.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll.h"

#define COLL_ONLINE_POINTS 32
#define COLL_ONLINE_CANDS 12
#define COLL_ONLINE_TRIES 3

typedef struct coll_online_pt {
    bool     used;
    uint8_t  kind, cls, bucket;
    uint8_t  type, op;       /* of the first call: for the profile */
    uint64_t bytes;          /* of the first call */
    uint8_t  ncand;
    uint8_t  cand[COLL_ONLINE_CANDS];
    uint32_t calls;          /* committed exploration calls */
    uint32_t done;           /* of them, completed here */
    double   t[COLL_ONLINE_CANDS][COLL_ONLINE_TRIES];
    double   agreed[COLL_ONLINE_CANDS];
    uint8_t  chosen;         /* registry id once agreed */
    bool     failed;         /* the agreement failed: built-in rules */
} coll_online_pt_t;

struct coll_online {
    coll_online_pt_t pt[COLL_ONLINE_POINTS];
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

void coll_online_geometry(struct pami_geometry *g)
{
    g->online = calloc(1, sizeof(*g->online));
    if (g->online == NULL)
        coll_warn("geometry %u: no memory for online tuning; built-in "
                  "rules", g->id);
}

void coll_online_free(struct pami_geometry *g)
{
    free(g->online);
    g->online = NULL;
}

static unsigned bucket_of(uint64_t b)
{
    return b == 0 ? 0 : 64 - (unsigned)__builtin_clzll(b);
}

/* The point of x, or NULL. Made (with its candidates) only when a call
 * runs (create), so queries and peeks on one member never take a slot
 * the others do not; otherwise a new point is filled into *tmp. */
static coll_online_pt_t *point(struct pami_geometry *g, const pami_xfer_t *x,
                               unsigned cls, uint64_t bytes, bool create,
                               coll_online_pt_t *tmp)
{
    if (g->online == NULL)
        return NULL;
    /* Only calls that can run make points: a call that fails its checks
     * here (and maybe nowhere else) must not take one. */
    if (x->kind != PAMI_XFER_BARRIER &&
        (!coll_type_valid(x->dtype) ||
         (coll_kind_reduces(x->kind) && !coll_op_valid(x->dtype, x->op))))
        return NULL;
    unsigned b = bucket_of(bytes);
    coll_online_pt_t *free_pt = NULL;
    for (size_t i = 0; i < COLL_ONLINE_POINTS; i++) {
        coll_online_pt_t *p = &g->online->pt[i];
        if (p->used && p->kind == x->kind && p->cls == cls && p->bucket == b)
            return p;
        if (!p->used && free_pt == NULL)
            free_pt = p;
    }
    if (free_pt == NULL)
        return NULL; /* all in use: built-in rules (the same everywhere) */
    coll_online_pt_t *p = create ? free_pt : tmp;
    if (p == NULL)
        return NULL;
    memset(p, 0, sizeof(*p));
    p->used = true;
    p->kind = (uint8_t)x->kind;
    p->cls = (uint8_t)cls;
    p->bucket = (uint8_t)b;
    /* A barrier's dtype is never checked (any value may come in); the
     * profile lists barriers as bytes. */
    p->type = x->kind == PAMI_XFER_BARRIER ? (uint8_t)PAMI_TYPE_BYTE
                                           : (uint8_t)x->dtype;
    p->op = coll_kind_reduces(x->kind) ? (uint8_t)x->op
                                       : COLL_PROFILE_OP_NONE;
    p->bytes = bytes;
    for (size_t i = 0; i < coll_num_algos && p->ncand < COLL_ONLINE_CANDS;
         i++) {
        const coll_algo_t *a = &coll_algos[i];
        if (a->build == coll_shm_build && !coll_shm_auto_allowed(g->cc->ctx))
            continue;
        if (coll_algo_runs(a, x, g))
            p->cand[p->ncand++] = (uint8_t)(i + 1);
    }
    if (p->ncand == 1)
        p->chosen = p->cand[0]; /* nothing to try */
    p->failed = p->ncand == 0;
    return p;
}

pami_algorithm_t coll_online_peek(struct pami_geometry *g,
                                  const pami_xfer_t *x, unsigned cls,
                                  uint64_t bytes, bool *exploring)
{
    *exploring = false;
    coll_online_pt_t tmp, *p = point(g, x, cls, bytes, false, &tmp);
    if (p == NULL || p->failed)
        return 0;
    if (p->chosen != 0)
        return coll_algo_runs(&coll_algos[p->chosen - 1], x, g) ? p->chosen
                                                                : 0;
    if (p->calls >= (uint32_t)p->ncand * COLL_ONLINE_TRIES)
        return 0; /* waiting for the agreement (coll_online_ready) */
    pami_algorithm_t id = p->cand[p->calls % p->ncand];
    if (!coll_algo_runs(&coll_algos[id - 1], x, g))
        return 0; /* this call cannot: built-in, not counted */
    *exploring = true;
    return id;
}

/* The call runs id now: an exploration call takes its turn and is timed
 * (req, or by the caller around an inline call: returns its slot). */
int coll_online_commit(struct pami_geometry *g, const pami_xfer_t *x,
                       pami_algorithm_t id, coll_req_t *req)
{
    if (g->online == NULL)
        return -1;
    uint64_t bytes = coll_select_bytes(x, g);
    unsigned cls = coll_tclass(x->kind, x->dtype, x->op);
    bool exploring;
    if (coll_online_peek(g, x, cls, bytes, &exploring) != id || !exploring)
        return -1;
    coll_online_pt_t *p = point(g, x, cls, bytes, true, NULL);
    int slot = (int)(p - g->online->pt) * 256 + (int)p->calls;
    p->calls++;
    if (req != NULL) {
        req->online_slot = slot;
        req->online_t0 = now_us();
    }
    return slot;
}

void coll_online_record(struct pami_geometry *g, int slot, double us)
{
    if (g->online == NULL || slot < 0)
        return;
    coll_online_pt_t *p = &g->online->pt[slot / 256];
    unsigned call = (unsigned)(slot % 256);
    if (p->ncand == 0)
        return;
    p->t[call % p->ncand][call / p->ncand] = us;
    p->done++;
}

void coll_online_done(coll_req_t *req)
{
    if (req->online_slot >= 0 && req->status == PAMI_SUCCESS)
        coll_online_record(req->g, req->online_slot,
                           now_us() - req->online_t0);
    else if (req->online_slot >= 0)
        coll_online_record(req->g, req->online_slot, 1e12);
    req->online_slot = -1;
}

double coll_online_now_us(void)
{
    return now_us();
}

static double median3(const double *v)
{
    double a = v[0], b = v[1], c = v[2];
    return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

typedef struct {
    bool          done;
    pami_result_t rc;
} wait_t;

static void agree_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    wait_t *w = cookie;
    w->rc = rc;
    w->done = true;
}

/* Before an AUTO call at a point whose exploration ended: wait for its
 * calls, then agree. Every member gets here at the same call. */
pami_result_t coll_online_ready(coll_ctx_t *cc, struct pami_geometry *g,
                                const pami_xfer_t *x)
{
    if (g->online == NULL)
        return PAMI_SUCCESS;
    uint64_t bytes = coll_select_bytes(x, g);
    unsigned cls = coll_tclass(x->kind, x->dtype, x->op);
    coll_online_pt_t *p = point(g, x, cls, bytes, false, NULL);
    if (p == NULL || p->chosen != 0 || p->failed ||
        p->calls < (uint32_t)p->ncand * COLL_ONLINE_TRIES)
        return PAMI_SUCCESS;
    if (pami_protocol_in_handler(cc->ctx)) {
        cc->st.eagain++;
        return PAMI_EAGAIN;
    }
    while (p->done < p->calls) {
        pami_result_t rc = pami_context_wait(cc->ctx, 100);
        if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
            return rc;
    }
    for (size_t c = 0; c < p->ncand; c++)
        p->agreed[c] = median3(p->t[c]);
    pami_algorithm_t rd;
    if (pami_algorithm_by_name("allreduce_recursive_doubling", &rd) !=
        PAMI_SUCCESS)
        return PAMI_ERROR;
    double in[COLL_ONLINE_CANDS];
    memcpy(in, p->agreed, sizeof(in));
    wait_t w = {false, PAMI_SUCCESS};
    pami_xfer_t ax = {.field_mask = PAMI_XFER_FIELD_ALGORITHM,
                      .kind = PAMI_XFER_ALLREDUCE, .geometry = g,
                      .algorithm = rd, .done_fn = agree_done, .cookie = &w,
                      .sbuf = in, .rbuf = p->agreed, .count = p->ncand,
                      .dtype = PAMI_TYPE_DOUBLE, .op = PAMI_OP_MAX};
    pami_result_t rc = pami_collective(cc->ctx, &ax);
    if (rc == PAMI_SUCCESS) { /* not the program's call */
        cc->algo_calls[rd - 1]--;
        cc->selected[PAMI_SELECTED_NAMED]--;
    }
    while (rc == PAMI_SUCCESS && !w.done) {
        rc = pami_context_wait(cc->ctx, 100);
        if (rc == PAMI_TIMEOUT)
            rc = PAMI_SUCCESS;
    }
    if (rc == PAMI_SUCCESS)
        rc = w.rc;
    if (rc != PAMI_SUCCESS) {
        p->failed = true; /* every member sees the allreduce fail */
        return PAMI_SUCCESS;
    }
    size_t best = 0;
    for (size_t c = 1; c < p->ncand; c++)
        if (p->agreed[c] < p->agreed[best])
            best = c;
    p->chosen = p->cand[best];
    if (coll_select_logging())
        coll_warn("select: geometry %u (%zu tasks) %s from %llu B: online "
                  "tuning keeps %s (%.2f us; slowest member's median)",
                  g->id, g->size, coll_kind_name(p->kind),
                  (unsigned long long)p->bytes,
                  coll_algos[p->chosen - 1].name, p->agreed[best]);
    return PAMI_SUCCESS;
}

/* What the context learnt, into prof (entries of shape's geometries). */
void coll_online_collect(coll_ctx_t *cc, coll_profile_t *prof)
{
    for (struct pami_geometry *g = cc->geoms; g != NULL; g = g->next) {
        if (g->online == NULL)
            continue;
        for (size_t i = 0; i < COLL_ONLINE_POINTS; i++) {
            const coll_online_pt_t *p = &g->online->pt[i];
            if (!p->used || p->chosen == 0 || p->ncand < 2)
                continue;
            for (size_t c = 0; c < p->ncand; c++) {
                coll_prof_entry_t e = {.kind = p->kind, .type = p->type,
                                       .op = p->op, .bytes = p->bytes,
                                       .shape = g->shape,
                                       .median_us = p->agreed[c],
                                       .min_us = p->agreed[c],
                                       .max_us = p->agreed[c],
                                       .count = COLL_ONLINE_TRIES};
                if (!(e.median_us < COLL_PROFILE_MAX_US))
                    continue;
                snprintf(e.algo, sizeof(e.algo), "%s",
                         coll_algos[p->cand[c] - 1].name);
                coll_prof_entry_t *old = coll_profile_find(prof, &e);
                if (old != NULL)
                    *old = e;
                else
                    coll_profile_add(prof, &e);
            }
        }
    }
}

/*
 * Geometries: the world one, sub-geometries made from a task list or
 * ranges (collective over the members only), destroy and query.
 *
 * Creating a sub-geometry is its collective number 0: a dissemination
 * exchange among the members, each message carrying the hash of the
 * sender's task list (in the header's sig, and as {min h, min ~h} reduced
 * over the rounds) and the same pair for the hash of its decision table
 * from the profile (coll_select.c): members whose tables differ all use
 * the built-in rules on it. Nobody leaves it before every member entered it, so
 * a member's next collective on the geometry never finds a member
 * without it; a member whose list differs makes all of them fail with
 * PAMI_INVAL.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

bool coll_task_in(const pami_task_t *tasks, size_t n, pami_task_t t)
{
    for (size_t i = 0; i < n; i++)
        if (tasks[i] == t)
            return true;
    return false;
}

struct pami_geometry *coll_geometry_find(coll_ctx_t *cc, uint32_t id)
{
    for (struct pami_geometry *g = cc->geoms; g != NULL; g = g->next)
        if (g->id == id)
            return g;
    return NULL;
}

static uint64_t list_hash(const pami_task_t *tasks, size_t n)
{
    uint64_t h = pami_protocol_hash(PAMI_PROTOCOL_HASH_INIT ^ n, tasks,
                                    n * sizeof(*tasks));
    return h ^ (h >> 31);
}

/* Messages that came before the geometry existed here join it. */
static void claim_orphans(coll_ctx_t *cc, struct pami_geometry *g)
{
    coll_msg_t **pp = &cc->orphans;
    while (*pp != NULL) {
        coll_msg_t *m = *pp;
        if (m->hdr.geom_id != g->id) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        m->next = NULL;
        if (m->hdr.src_rank >= g->size ||
            g->tasks[m->hdr.src_rank] != m->origin) {
            if (m->hdr.kind == COLL_KIND_CREATE &&
                coll_task_in(g->tasks, g->size, m->origin)) {
                g->list_differs = true; /* the creation will fail */
                if (m->complete)
                    coll_msg_free(m);
                else {
                    coll_kept_release(m);
                    m->dead = true;
                }
                continue;
            }
            cc->st.malformed++;
            coll_warn("geometry %u: a message kept for it came from task %u, "
                      "not its rank %u; dropped", g->id, m->origin,
                      m->hdr.src_rank);
            if (m->complete)
                coll_msg_free(m);
            else {
                coll_kept_release(m);
                m->dead = true;
            }
            continue;
        }
        *g->unexp_tail = m;
        g->unexp_tail  = &m->next;
    }
    cc->orphans_tail = pp;
}

pami_result_t coll_geometry_new(coll_ctx_t *cc, uint32_t id,
                                const pami_task_t *tasks, size_t n,
                                bool world, struct pami_geometry **out)
{
    struct pami_geometry *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return PAMI_ENOMEM;
    g->tasks = malloc(n * sizeof(*g->tasks));
    g->eps   = malloc(n * sizeof(*g->eps));
    if (g->tasks == NULL || g->eps == NULL) {
        free(g->tasks);
        free(g->eps);
        free(g);
        return PAMI_ENOMEM;
    }
    memcpy(g->tasks, tasks, n * sizeof(*tasks));
    g->cc        = cc;
    g->id        = id;
    g->size      = n;
    g->world     = world;
    g->ready     = world;
    g->created   = world;
    g->create_rc = PAMI_SUCCESS;
    g->hash      = list_hash(tasks, n);
    g->on_node   = n == cc->num_local;
    for (size_t i = 0; i < n && g->on_node; i++)
        g->on_node = coll_task_in(cc->local_tasks, cc->num_local, tasks[i]);
    g->threshold = cc->threshold;
    g->unexp_tail = &g->unexp;
    for (size_t i = 0; i < n; i++) {
        if (tasks[i] == cc->me)
            g->rank = i;
        pami_result_t rc =
            pami_endpoint_create(cc->client, tasks[i], cc->offset, &g->eps[i]);
        if (rc != PAMI_SUCCESS) {
            free(g->tasks);
            free(g->eps);
            free(g);
            return rc;
        }
    }
    coll_select_geometry(cc, g);
    g->next   = cc->geoms;
    cc->geoms = g;
    if (!world)
        claim_orphans(cc, g);
    *out = g;
    return PAMI_SUCCESS;
}

void coll_geometry_free(struct pami_geometry *g)
{
    coll_ctx_t *cc = g->cc;
    for (struct pami_geometry **pp = &cc->geoms; *pp != NULL;
         pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    for (coll_msg_t *m = g->unexp, *n; m != NULL; m = n) {
        n = m->next;
        if (m->complete)
            coll_msg_free(m);
        else {
            coll_kept_release(m);
            m->dead = true;
        }
    }
    coll_select_free(g);
    free(g->tasks);
    free(g->eps);
    free(g);
}

void coll_geometry_created(coll_req_t *req)
{
    struct pami_geometry *g = req->g;
    if (req->status == PAMI_SUCCESS &&
        (req->create_check[0] != g->hash || ~req->create_check[1] != g->hash)) {
        coll_warn("geometry %u: the members passed different task lists",
                  g->id);
        req->status = PAMI_INVAL;
    }
    if (req->status == PAMI_SUCCESS)
        coll_select_agreed(g, req->create_check[2] == ~req->create_check[3]);
    g->created   = true;
    g->ready     = req->status == PAMI_SUCCESS;
    g->create_rc = req->status;
}

pami_result_t pami_geometry_world(pami_context_t context,
                                  pami_geometry_t *world)
{
    coll_ctx_t *cc = coll_ctx_of(context);
    if (cc == NULL || world == NULL) {
        coll_warn("geometry_world: %s", cc == NULL
                  ? "collectives are not running on this context"
                  : "NULL output");
        return PAMI_INVAL;
    }
    *world = cc->world;
    return PAMI_SUCCESS;
}

typedef struct {
    pami_work_t   work;
    pami_event_fn fn;
    void         *cookie;
} not_member_t;

static pami_result_t tell_not_member(pami_context_t ctx, void *cookie)
{
    not_member_t nm = *(not_member_t *)cookie;
    free(cookie);
    if (nm.fn != NULL)
        nm.fn(ctx, nm.cookie, PAMI_SUCCESS);
    return PAMI_SUCCESS;
}

pami_result_t pami_geometry_create_tasklist(
    pami_context_t context, pami_geometry_t parent, uint32_t id,
    const pami_task_t *tasks, size_t ntasks,
    const pami_geometry_params_t *params, pami_geometry_t *geometry,
    pami_event_fn fn, void *cookie)
{
    coll_ctx_t *cc = coll_ctx_of(context);
    const char *why = NULL;
    if (cc == NULL)
        why = "collectives are not running on this context";
    else if (parent == NULL || parent->cc != cc)
        why = "the parent is NULL or of another context";
    else if (geometry == NULL || tasks == NULL || ntasks == 0)
        why = "NULL output or an empty task list";
    else if (id == 0)
        why = "id 0 is the world's";
    else if (params != NULL &&
             (params->field_mask & ~(uint64_t)PAMI_GEOMETRY_PARAM_CONNID_THRESHOLD))
        why = "pami_geometry_params_t.field_mask has bits this pami does "
              "not know";
    else if (params != NULL &&
             (params->field_mask & PAMI_GEOMETRY_PARAM_CONNID_THRESHOLD) &&
             (params->connid_threshold < 1 ||
              params->connid_threshold > PAMI_CONNID_BUFFER))
        why = "connid_threshold is not in 1..PAMI_CONNID_BUFFER";
    if (why != NULL) {
        coll_warn("geometry_create %u: %s", id, why);
        return PAMI_INVAL;
    }
    uint8_t *seen = calloc(cc->ntasks, 1);
    if (seen == NULL)
        return PAMI_ENOMEM;
    bool member = false;
    for (size_t i = 0; i < ntasks && why == NULL; i++) {
        if (tasks[i] >= cc->ntasks)
            why = "a task beyond the job";
        else if (seen[tasks[i]]++)
            why = "a task twice";
        else if (!parent->world &&
                 !coll_task_in(parent->tasks, parent->size, tasks[i]))
            why = "a task that is not in the parent";
        else if (tasks[i] == cc->me)
            member = true;
    }
    free(seen);
    if (why != NULL) {
        coll_warn("geometry_create %u: the list has %s", id, why);
        return PAMI_INVAL;
    }
    if (!member) {
        not_member_t *nm = malloc(sizeof(*nm));
        if (nm == NULL)
            return PAMI_ENOMEM;
        nm->fn     = fn;
        nm->cookie = cookie;
        *geometry  = NULL;
        return pami_context_post(context, &nm->work, tell_not_member, nm);
    }
    if (coll_geometry_find(cc, id) != NULL) {
        coll_warn("geometry_create %u: a geometry with that id exists here",
                  id);
        return PAMI_INVAL;
    }

    struct pami_geometry *g;
    pami_result_t rc = coll_geometry_new(cc, id, tasks, ntasks, false, &g);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (params != NULL &&
        (params->field_mask & PAMI_GEOMETRY_PARAM_CONNID_THRESHOLD))
        g->threshold = params->connid_threshold;

    pami_xfer_t x = {.dtype = PAMI_TYPE_UINT64, .op = PAMI_OP_MIN};
    coll_req_t *req = coll_req_new(g, &x, COLL_KIND_CREATE);
    if (req == NULL) {
        coll_geometry_free(g);
        return PAMI_ENOMEM;
    }
    req->done_fn     = fn;
    req->done_cookie = cookie;
    req->sig         = (uint32_t)g->hash;
    req->create_check[0] = g->hash;
    req->create_check[1] = ~g->hash;
    req->create_check[2] = coll_select_hash(g);
    req->create_check[3] = ~req->create_check[2];
    size_t n = g->size, r = g->rank;
    for (size_t d = 1; d < n; d <<= 1) {
        sb_step(req);
        sb_send(req, (r + d) % n, req->create_check, 32);
        sb_recv_reduce(req, (r + n - d) % n, req->create_check, 32, false);
    }
    if (req->build_failed) {
        coll_req_free(req);
        coll_geometry_free(g);
        return PAMI_ENOMEM;
    }
    coll_connid_lock(g, req, false); /* a creation never waits */
    coll_claim_unexpected(req);
    if (g->list_differs) {
        coll_warn("geometry %u: a member has another task list", id);
        coll_fail(req, PAMI_INVAL, true);
    }
    *geometry = g;
    req->in_call = true;
    coll_start(req);
    if (g->slots[0] == req)
        req->in_call = false;
    return PAMI_SUCCESS;
}

pami_result_t pami_geometry_create_taskrange(
    pami_context_t context, pami_geometry_t parent, uint32_t id,
    const pami_geometry_range_t *ranges, size_t nranges,
    const pami_geometry_params_t *params, pami_geometry_t *geometry,
    pami_event_fn fn, void *cookie)
{
    size_t n = 0;
    if (ranges == NULL || nranges == 0) {
        coll_warn("geometry_create %u: no ranges", id);
        return PAMI_INVAL;
    }
    for (size_t i = 0; i < nranges; i++) {
        if (ranges[i].hi < ranges[i].lo || ranges[i].hi - ranges[i].lo > 1u << 24) {
            coll_warn("geometry_create %u: range %zu is [%u, %u]", id, i,
                      ranges[i].lo, ranges[i].hi);
            return PAMI_INVAL;
        }
        n += (size_t)(ranges[i].hi - ranges[i].lo) + 1;
    }
    pami_task_t *tasks = malloc(n * sizeof(*tasks));
    if (tasks == NULL)
        return PAMI_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nranges; i++)
        for (uint64_t t = ranges[i].lo; t <= ranges[i].hi; t++)
            tasks[k++] = (pami_task_t)t;
    pami_result_t rc = pami_geometry_create_tasklist(
        context, parent, id, tasks, n, params, geometry, fn, cookie);
    free(tasks);
    return rc;
}

pami_result_t pami_geometry_destroy(pami_geometry_t *geometry)
{
    if (geometry == NULL || *geometry == NULL) {
        coll_warn("geometry_destroy of a NULL geometry");
        return PAMI_INVAL;
    }
    struct pami_geometry *g = *geometry;
    if (g->world) {
        coll_warn("geometry_destroy: the world geometry stays");
        return PAMI_INVAL;
    }
    /* The flow sync the program never sees completes once every member
     * started it: they all did before destroying (docs/collectives.md). */
    pami_result_t drc = coll_flow_drain(g);
    if (drc != PAMI_SUCCESS && drc != PAMI_EAGAIN)
        return drc;
    if (g->in_use > 0 || g->waiters > 0 || g->flow_pending > 0) {
        coll_warn("geometry_destroy %u: %u collectives in flight and %u "
                  "callers waiting; complete them first", g->id, g->in_use,
                  g->waiters);
        return PAMI_EAGAIN;
    }
    coll_geometry_free(g);
    *geometry = NULL;
    return PAMI_SUCCESS;
}

pami_result_t pami_geometry_query(pami_geometry_t g,
                                  pami_geometry_attr_t *attr)
{
    if (g == NULL || attr == NULL) {
        coll_warn("geometry_query with a NULL argument");
        return PAMI_INVAL;
    }
    uint64_t m = attr->field_mask;
    const uint64_t known = PAMI_GEOMETRY_ATTR_ID | PAMI_GEOMETRY_ATTR_SIZE |
                           PAMI_GEOMETRY_ATTR_RANK | PAMI_GEOMETRY_ATTR_TASKS |
                           PAMI_GEOMETRY_ATTR_READY | PAMI_GEOMETRY_ATTR_CONNID;
    if (m & ~known) {
        coll_warn("geometry_query: pami_geometry_attr_t.field_mask has bits "
                  "0x%llx this pami does not know",
                  (unsigned long long)(m & ~known));
        return PAMI_INVAL;
    }
    if (m & PAMI_GEOMETRY_ATTR_ID)
        attr->id = g->id;
    if (m & PAMI_GEOMETRY_ATTR_SIZE)
        attr->size = g->size;
    if (m & PAMI_GEOMETRY_ATTR_RANK)
        attr->rank = g->rank;
    if (m & PAMI_GEOMETRY_ATTR_TASKS)
        attr->tasks = g->tasks;
    if (m & PAMI_GEOMETRY_ATTR_READY)
        attr->ready = g->ready;
    if (m & PAMI_GEOMETRY_ATTR_CONNID) {
        attr->connid_threshold  = g->threshold;
        attr->connid_in_use     = g->in_use;
        attr->connid_high_water = g->high_water;
        attr->connid_waits      = g->waits;
        attr->collectives       = g->started;
    }
    return PAMI_SUCCESS;
}

pami_result_t pami_geometry_wait_ready(pami_context_t context,
                                       pami_geometry_t g)
{
    if (g == NULL || g->cc != coll_ctx_of(context)) {
        coll_warn("geometry_wait_ready: NULL geometry or another context");
        return PAMI_INVAL;
    }
    while (!g->created) {
        pami_result_t rc = pami_context_wait(context, 100);
        if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
            return rc;
    }
    return g->create_rc;
}

/*
 * Teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, the strided and 2-d
 * splits, queries and translation. Each team is a pami geometry on the
 * library's context; the world team is pami's world geometry.
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_coll.h"

/* The predefined team objects are the core's (shmem_init.c); their
 * extensions are here. */
static struct shmemi_team_ext world_ext, shared_ext;
static int teams_ready;

/* Next geometry id this PE has not used (see SHMEMI_TEAM_ID_FIRST). */
static uint32_t next_team_id = SHMEMI_TEAM_ID_FIRST;

struct shmemi_team_ext *shmemi_team_ext(struct shmemi_team *t)
{
    if (t == SHMEM_TEAM_WORLD)
        return &world_ext;
    if (t == SHMEM_TEAM_SHARED)
        return &shared_ext;
    return (struct shmemi_team_ext *)t;
}

int shmemi_team_world_pe(struct shmemi_team *t, int pe)
{
    if (t->stride != 0)
        return t->start + pe * t->stride;
    return (int)shmemi_team_ext(t)->world_pes[pe];
}

int shmemi_ctx_team_pe(const struct shmemi_ctx *ctx, int pe, const char *fn)
{
    struct shmemi_team *t = ctx->team;
    if (pe < 0 || pe >= t->n_pes)
        shmemi_fatal("%s: PE %d is out of range of the context's team "
                     "(0..%d)", fn, pe, t->n_pes - 1);
    return shmemi_team_world_pe(t, pe);
}

static int cmp_task(const void *a, const void *b)
{
    pami_task_t x = *(const pami_task_t *)a, y = *(const pami_task_t *)b;
    return (x > y) - (x < y);
}

/* The shared team is filled by the first team call (or by the core
 * calling this at init): its members are known locally, and its
 * geometry needs no exchange before the first collective on it. The
 * world team is filled by shmem_init. */
int shmemi_team_init(void)
{
    if (teams_ready)
        return 0;
    if (!shmemi.initialized) {
        shmemi_warn("teams: OpenSHMEM is not initialized");
        return -1;
    }
    world_ext.id = 0;

    pami_client_attr_t attr = { .field_mask = PAMI_CLIENT_ATTR_LOCAL_TASKS };
    if (pami_client_query(shmemi.client, &attr) != PAMI_SUCCESS
        || attr.num_local_tasks == 0) {
        shmemi_warn("teams: cannot query the PEs of this node");
        return -1;
    }
    size_t nl = attr.num_local_tasks;
    pami_task_t *local = malloc(nl * sizeof(*local));
    if (local == NULL) {
        shmemi_warn("teams: out of memory");
        return -1;
    }
    memcpy(local, attr.local_tasks, nl * sizeof(*local));
    qsort(local, nl, sizeof(*local), cmp_task);
    struct shmemi_team *sh = SHMEM_TEAM_SHARED;
    sh->geometry = NULL;
    sh->n_pes = (int)nl;
    sh->my_pe = -1;
    for (size_t i = 0; i < nl; i++)
        if ((int)local[i] == shmemi.my_pe)
            sh->my_pe = (int)i;
    /* A node's PEs are often consecutive: then translation is
     * arithmetic; else stride 0 says "look in world_pes". */
    if (local[nl - 1] - local[0] == nl - 1) {
        sh->start = (int)local[0];
        sh->stride = 1;
    } else {
        sh->start = -1;
        sh->stride = 0;
    }
    /* One node holds every PE: the shared team is the world. */
    if (nl == (size_t)shmemi.n_pes)
        sh->geometry = shmemi.world;
    shared_ext.id = SHMEMI_TEAM_ID_SHARED;
    shared_ext.world_pes = local;
    teams_ready = 1;
    return 0;
}

struct shmemi_team *shmemi_team_get(shmem_team_t team, const char *what)
{
    if (shmemi_team_init() != 0)
        return NULL;
    struct shmemi_team *t = (struct shmemi_team *)team;
    if (t == NULL) {
        shmemi_warn("%s: SHMEM_TEAM_INVALID", what);
        return NULL;
    }
    if (t->my_pe < 0) {
        shmemi_warn("%s: PE %d is not a member of the team", what,
                         shmemi.my_pe);
        return NULL;
    }
    return t;
}

static pami_task_t *team_tasks(struct shmemi_team *t)
{
    struct shmemi_team_ext *e = shmemi_team_ext(t);
    if (e->world_pes != NULL)
        return e->world_pes;
    pami_task_t *tasks = malloc((size_t)t->n_pes * sizeof(*tasks));
    if (tasks == NULL)
        return NULL;
    for (int i = 0; i < t->n_pes; i++)
        tasks[i] = (pami_task_t)shmemi_team_world_pe(t, i);
    e->world_pes = tasks;
    return tasks;
}

pami_geometry_t shmemi_team_geometry(struct shmemi_team *t)
{
    if (t->geometry != NULL)
        return t->geometry;
    pami_task_t *tasks = team_tasks(t);
    if (tasks == NULL) {
        shmemi_warn("teams: out of memory");
        return NULL;
    }
    uint32_t id = shmemi_team_ext(t)->id;
    pami_geometry_t g = NULL;
    /* With several threads the lock is held until the members agree
     * (docs/openshmem.md, "Threads"). */
    shmemi_lock();
    pami_result_t rc = pami_geometry_create_tasklist(
        shmemi.context, shmemi.world, id, tasks,
        (size_t)t->n_pes, NULL, &g, NULL, NULL);
    if (rc == PAMI_SUCCESS)
        rc = pami_geometry_wait_ready(shmemi.context, g);
    shmemi_unlock();
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("teams: geometry %u of %d PEs: %s", id, t->n_pes,
                         pami_error_text(rc));
        if (g != NULL) {
            shmemi_lock();
            pami_geometry_destroy(&g);
            shmemi_unlock();
        }
        return NULL;
    }
    t->geometry = g;
    return g;
}

/* Every PE of parent takes the same count of fresh ids: the max over the
 * parent of each PE's next unused one. */
static int take_team_ids(struct shmemi_team *parent, uint32_t count,
                         uint32_t *first)
{
    pami_geometry_t g = shmemi_team_geometry(parent);
    if (g == NULL)
        return -1;
    uint32_t mine = next_team_id, base = 0;
    /* A blocking pami call like the geometry's creation above: under the
     * lock, or another thread (the program's, or pami's progress thread)
     * would advance the context at the same time. */
    shmemi_lock();
    pami_result_t rc = pami_geometry_allreduce(shmemi.context, g, &mine,
                                               &base, 1, PAMI_TYPE_UINT32,
                                               PAMI_OP_MAX);
    shmemi_unlock();
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("team split: id agreement failed: %s",
                         pami_error_text(rc));
        return -1;
    }
    if (base + count >= SHMEMI_TEAM_ID_ACTIVE) {
        shmemi_warn("team split: geometry ids exhausted");
        return -1;
    }
    next_team_id = base + count;
    *first = base;
    return 0;
}

/* A new team of parent PEs start + i * stride (i < size) with geometry
 * id, of which this PE is team PE my_pe (-1: not a member, then
 * *out = SHMEM_TEAM_INVALID and nothing else happens). */
static int team_make(struct shmemi_team *parent, int start, int stride,
                     int size, uint32_t id, int my_pe,
                     const shmem_team_config_t *config, long config_mask,
                     shmem_team_t *out)
{
    *out = SHMEM_TEAM_INVALID;
    if (my_pe < 0)
        return 0;
    struct shmemi_team_ext *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        shmemi_warn("team split: out of memory");
        return -1;
    }
    struct shmemi_team *t = &e->pub;
    e->id = id;
    t->my_pe = my_pe;
    t->n_pes = size;
    if (size == 1) {
        t->start = shmemi_team_world_pe(parent, start);
        t->stride = 1;
    } else if (parent->stride != 0) {
        t->start = parent->start + start * parent->stride;
        t->stride = parent->stride * stride;
    } else {
        pami_task_t *pw = shmemi_team_ext(parent)->world_pes;
        e->world_pes = malloc((size_t)size * sizeof(*e->world_pes));
        if (e->world_pes == NULL) {
            free(e);
            shmemi_warn("team split: out of memory");
            return -1;
        }
        for (int i = 0; i < size; i++)
            e->world_pes[i] = pw[start + i * stride];
        t->start = -1;
        t->stride = 0;
    }
    if (config != NULL && (config_mask & SHMEM_TEAM_NUM_CONTEXTS)) {
        t->config.num_contexts = config->num_contexts;
        t->config_mask = SHMEM_TEAM_NUM_CONTEXTS;
    }
    if (shmemi_team_geometry(t) == NULL) {
        free(e->world_pes);
        free(e);
        return -1;
    }
    *out = t;
    return 0;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                             int size, const shmem_team_config_t *config,
                             long config_mask, shmem_team_t *new_team)
{
    if (new_team == NULL) {
        shmemi_warn("team_split_strided: new_team is NULL");
        return -1;
    }
    *new_team = SHMEM_TEAM_INVALID;
    struct shmemi_team *p = shmemi_team_get(parent_team,
                                            "team_split_strided");
    if (p == NULL)
        return -1;
    long last = (long)start + (long)(size - 1) * stride;
    if (size < 1 || start < 0 || start >= p->n_pes || last < 0
        || last >= p->n_pes || (stride == 0 && size > 1)) {
        shmemi_warn("team_split_strided: start %d, stride %d, size %d "
                    "do not fit a parent of %d PEs", start, stride, size,
                    p->n_pes);
        return -1;
    }
    uint32_t id;
    if (take_team_ids(p, 1, &id) != 0)
        return -1;
    int me = -1, off = p->my_pe - start;
    if (stride == 0)
        me = off == 0 ? 0 : -1;
    else if (off % stride == 0 && off / stride >= 0 && off / stride < size)
        me = off / stride;
    return team_make(p, start, stride, size, id, me, config, config_mask,
                     new_team);
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team)
{
    if (xaxis_team == NULL || yaxis_team == NULL) {
        shmemi_warn("team_split_2d: a team pointer is NULL");
        return -1;
    }
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    struct shmemi_team *p = shmemi_team_get(parent_team, "team_split_2d");
    if (p == NULL)
        return -1;
    if (xrange < 1) {
        shmemi_warn("team_split_2d: xrange %d < 1", xrange);
        return -1;
    }
    int n = p->n_pes;
    if (xrange > n)
        xrange = n;
    uint32_t id;
    if (take_team_ids(p, 2, &id) != 0)
        return -1;
    /* The rows share one id, the columns another: members of different
     * rows are disjoint, and ids only need to be unique per PE. */
    int row = p->my_pe / xrange, col = p->my_pe % xrange;
    int row_start = row * xrange;
    int row_size = n - row_start < xrange ? n - row_start : xrange;
    int col_size = (n - col + xrange - 1) / xrange;
    int rc = team_make(p, row_start, 1, row_size, id, col, xaxis_config,
                       xaxis_mask, xaxis_team);
    if (rc == 0)
        rc = team_make(p, col, xrange, col_size, id + 1, row, yaxis_config,
                       yaxis_mask, yaxis_team);
    if (rc != 0 && *xaxis_team != SHMEM_TEAM_INVALID) {
        shmem_team_destroy(*xaxis_team);
        *xaxis_team = SHMEM_TEAM_INVALID;
    }
    return rc;
}

static void release_geometry(pami_geometry_t *g)
{
    if (*g == NULL)
        return;
    pami_result_t rc;
    /* This PE's collectives on it completed before they returned; EAGAIN
     * only while progress still holds a ConnID of the last one. */
    for (;;) {
        shmemi_lock();
        rc = pami_geometry_destroy(g);
        shmemi_unlock();
        if (rc != PAMI_EAGAIN)
            break;
        shmemi_advance(shmemi.context);
    }
    if (rc != PAMI_SUCCESS)
        shmemi_warn("team_destroy: %s", pami_error_text(rc));
}

void shmem_team_destroy(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    if (team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED)
        shmemi_fatal("shmem_team_destroy: a predefined team is never "
                     "destroyed");
    struct shmemi_team_ext *e = shmemi_team_ext(team);
    if (e->pub.contexts > 0)
        shmemi_warn("shmem_team_destroy: %d contexts of the team are still "
                    "alive", e->pub.contexts);
    release_geometry(&e->pub.geometry);
    free(e->world_pes);
    free(e->counts);
    free(e->displs);
    free(e->records);
    free(e->maps);
    free(e);
}

int shmem_team_my_pe(shmem_team_t team)
{
    if (shmemi_team_init() != 0 || team == SHMEM_TEAM_INVALID)
        return -1;
    return team->my_pe;
}

int shmem_team_n_pes(shmem_team_t team)
{
    if (shmemi_team_init() != 0 || team == SHMEM_TEAM_INVALID)
        return -1;
    return team->n_pes;
}

int shmem_team_get_config(shmem_team_t team, long config_mask,
                          shmem_team_config_t *config)
{
    if (shmemi_team_init() != 0 || team == SHMEM_TEAM_INVALID
        || config == NULL)
        return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = (team->config_mask & SHMEM_TEAM_NUM_CONTEXTS)
                                   ? team->config.num_contexts
                                   : 0;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                            shmem_team_t dest_team)
{
    if (shmemi_team_init() != 0 || src_team == SHMEM_TEAM_INVALID
        || dest_team == SHMEM_TEAM_INVALID)
        return -1;
    if (src_pe < 0 || src_pe >= src_team->n_pes)
        return -1;
    int w = shmemi_team_world_pe(src_team, src_pe);
    struct shmemi_team *d = dest_team;
    if (d->stride != 0) {
        int off = w - d->start;
        if (off % d->stride != 0)
            return -1;
        int pe = off / d->stride;
        return pe >= 0 && pe < d->n_pes ? pe : -1;
    }
    const pami_task_t *pes = shmemi_team_ext(d)->world_pes;
    for (int i = 0; i < d->n_pes; i++)
        if ((int)pes[i] == w)
            return i;
    return -1;
}

int shmem_team_sync(shmem_team_t team)
{
    struct shmemi_team *t = shmemi_team_get(team, "team_sync");
    if (t == NULL)
        return -1;
    return shmemi_coll_sync(t, "team_sync");
}

/* Active sets of the deprecated calls: a team each, kept until finalize,
 * its geometry id derived from the set itself so that only its members
 * take part in making it. */
#define ACTIVE_SET_CACHE 64

static struct active_set {
    int start, log_stride, size;
    struct shmemi_team *team;
} active_sets[ACTIVE_SET_CACHE];
static int n_active_sets;

struct shmemi_team *shmemi_active_set(int PE_start, int logPE_stride,
                                      int PE_size, const char *what)
{
    if (shmemi_team_init() != 0)
        return NULL;
    int n = shmemi.n_pes, me = shmemi.my_pe;
    if (PE_start < 0 || PE_size < 1 || logPE_stride < 0
        || logPE_stride > 30
        || (long)PE_start + ((long)PE_size - 1) * (1L << logPE_stride)
               >= n) {
        shmemi_warn("%s: active set (start %d, log stride %d, size %d) "
                    "does not fit %d PEs", what, PE_start, logPE_stride,
                    PE_size, n);
        return NULL;
    }
    int stride = 1 << logPE_stride;
    int off = me - PE_start;
    if (off < 0 || off % stride != 0 || off / stride >= PE_size) {
        shmemi_warn("%s: PE %d is not in the active set (start %d, log "
                    "stride %d, size %d)", what, me, PE_start, logPE_stride,
                    PE_size);
        return NULL;
    }
    if (PE_start == 0 && PE_size == n && (PE_size == 1 || stride == 1))
        return SHMEM_TEAM_WORLD;
    if (PE_size == 1)
        logPE_stride = 0; /* one PE: every stride is the same set */
    for (int i = 0; i < n_active_sets; i++) {
        struct active_set *a = &active_sets[i];
        if (a->start == PE_start && a->size == PE_size
            && a->log_stride == logPE_stride)
            return a->team;
    }
    /* The id must be the same on every member without a message: the set
     * itself, packed (13 bits of start, 13 of size - 1, 5 of log
     * stride). */
    if (n > (1 << 13)) {
        shmemi_warn("%s: active sets other than all PEs are limited to "
                    "8192 PEs", what);
        return NULL;
    }
    if (n_active_sets == ACTIVE_SET_CACHE) {
        shmemi_warn("%s: more than %d distinct active sets", what,
                    ACTIVE_SET_CACHE);
        return NULL;
    }
    struct shmemi_team_ext *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        shmemi_warn("%s: out of memory", what);
        return NULL;
    }
    e->id = SHMEMI_TEAM_ID_ACTIVE | ((uint32_t)PE_start << 18)
            | ((uint32_t)(PE_size - 1) << 5) | (uint32_t)logPE_stride;
    e->pub.my_pe = off / stride;
    e->pub.n_pes = PE_size;
    e->pub.start = PE_start;
    e->pub.stride = stride;
    if (shmemi_team_geometry(&e->pub) == NULL) {
        free(e->world_pes);
        free(e);
        return NULL;
    }
    active_sets[n_active_sets++] = (struct active_set){
        PE_start, logPE_stride, PE_size, &e->pub };
    return &e->pub;
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    if (shmemi_team_init() != 0 || team == SHMEM_TEAM_INVALID)
        return NULL;
    if (pe < 0 || pe >= team->n_pes)
        return NULL;
    return shmem_ptr(dest, shmemi_team_world_pe(team, pe));
}

/*
 * The bound on messages kept for a collective or a geometry that does
 * not exist here yet (docs/collectives.md, "Messages kept for later").
 * Such a message is input from a peer, and the receiver cannot ask it to
 * wait: so each is admitted against a count and a byte budget per
 * context, per geometry id and per sending task (half the context's, so
 * one sender cannot take the room of the others), and beyond them
 * dropped, counted (kept_dropped) and logged once per context. A message
 * stops counting when it joins its collective, or when it is freed.
 */
#include <stdlib.h>

#include "coll.h"

#define KEPT_BUCKETS 64

/* What one geometry id, or one sending task, holds. */
typedef struct kept_ent {
    struct kept_ent *next;
    uint32_t         id;
    size_t           n, bytes;
} kept_ent_t;

typedef struct {
    size_t      max_n, max_bytes;
    kept_ent_t *buckets[KEPT_BUCKETS];
} kept_table_t;

struct coll_kept {
    size_t       max_n, max_bytes; /* per context */
    size_t       n, bytes;
    bool         logged;
    kept_table_t geoms, tasks;
};

coll_kept_t *coll_kept_new(void)
{
    coll_kept_t *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return NULL;
    k->max_n = (size_t)pami_protocol_env_size(
        COLL_SUBSYS, "PAMI_COLL_KEPT_MAX", COLL_KEPT_MAX, 2, 1ull << 32);
    k->max_bytes = (size_t)pami_protocol_env_size(
        COLL_SUBSYS, "PAMI_COLL_KEPT_BYTES", COLL_KEPT_BYTES, 2,
        1ull << 40);
    k->geoms.max_n = (size_t)pami_protocol_env_size(
        COLL_SUBSYS, "PAMI_COLL_KEPT_GEOM_MAX", COLL_KEPT_GEOM_MAX, 1,
        1ull << 32);
    k->geoms.max_bytes = (size_t)pami_protocol_env_size(
        COLL_SUBSYS, "PAMI_COLL_KEPT_GEOM_BYTES", COLL_KEPT_GEOM_BYTES, 1,
        1ull << 40);
    k->tasks.max_n     = k->max_n / 2;
    k->tasks.max_bytes = k->max_bytes / 2;
    return k;
}

static void table_free(kept_table_t *t)
{
    for (size_t b = 0; b < KEPT_BUCKETS; b++)
        while (t->buckets[b] != NULL) {
            kept_ent_t *e = t->buckets[b];
            t->buckets[b] = e->next;
            free(e);
        }
}

void coll_kept_free(coll_kept_t *k)
{
    if (k == NULL)
        return;
    table_free(&k->geoms);
    table_free(&k->tasks);
    free(k);
}

static kept_ent_t **slot_of(kept_table_t *t, uint32_t id)
{
    kept_ent_t **pp = &t->buckets[(id * 2654435761u) >> 26];
    while (*pp != NULL && (*pp)->id != id)
        pp = &(*pp)->next;
    return pp;
}

/* Would one more message of len bytes for id stay within t's bounds? */
static bool fits(kept_table_t *t, uint32_t id, size_t len)
{
    kept_ent_t *e = *slot_of(t, id);
    size_t      n = e != NULL ? e->n : 0, b = e != NULL ? e->bytes : 0;
    return n + 1 <= t->max_n && len <= t->max_bytes - b;
}

static bool add(kept_table_t *t, uint32_t id, size_t len)
{
    kept_ent_t **pp = slot_of(t, id);
    if (*pp == NULL) {
        if ((*pp = calloc(1, sizeof(**pp))) == NULL)
            return false;
        (*pp)->id = id;
    }
    (*pp)->n++;
    (*pp)->bytes += len;
    return true;
}

static void sub(kept_table_t *t, uint32_t id, size_t len)
{
    kept_ent_t **pp = slot_of(t, id);
    kept_ent_t  *e  = *pp;
    if (e == NULL)
        return; /* cannot be: what was added has its entry */
    e->n--;
    e->bytes -= len;
    if (e->n == 0) {
        *pp = e->next;
        free(e);
    }
}

static void refuse(coll_ctx_t *cc, const coll_hdr_t *h, pami_task_t origin,
                   size_t len, const char *which)
{
    cc->st.kept_dropped++;
    if (cc->kept->logged)
        return;
    cc->kept->logged = true;
    coll_warn("geometry %u seq %u: a message of %zu bytes from task %u for "
              "a collective not posted here would pass the %s bound of "
              "messages kept for later; dropped (kept_dropped counts "
              "these, this line is not repeated)",
              h->geom_id, h->seq, len, origin, which);
}

bool coll_kept_admit(coll_ctx_t *cc, const coll_hdr_t *h, pami_task_t origin,
                     size_t len)
{
    coll_kept_t *k = cc->kept;
    const char  *over = NULL;
    if (k->n + 1 > k->max_n || len > k->max_bytes - k->bytes)
        over = "context's";
    else if (!fits(&k->tasks, origin, len))
        over = "sending task's";
    else if (!fits(&k->geoms, h->geom_id, len))
        over = "geometry's";
    if (over == NULL && !add(&k->tasks, origin, len))
        over = "memory's";
    if (over == NULL && !add(&k->geoms, h->geom_id, len)) {
        sub(&k->tasks, origin, len);
        over = "memory's";
    }
    if (over != NULL) {
        refuse(cc, h, origin, len, over);
        return false;
    }
    k->n++;
    k->bytes += len;
    if (k->n > cc->st.waiting_high_water)
        cc->st.waiting_high_water = k->n;
    if (k->bytes > cc->st.waiting_bytes_high_water)
        cc->st.waiting_bytes_high_water = k->bytes;
    return true;
}

void coll_kept_unadmit(coll_ctx_t *cc, const coll_hdr_t *h,
                       pami_task_t origin, size_t len)
{
    coll_kept_t *k = cc->kept;
    sub(&k->tasks, origin, len);
    sub(&k->geoms, h->geom_id, len);
    k->n--;
    k->bytes -= len;
}

coll_msg_t *coll_kept_keep(coll_ctx_t *cc, const coll_hdr_t *h,
                           pami_task_t origin, const void *data, size_t len,
                           pami_recv_t *recv, bool *refused)
{
    *refused = !coll_kept_admit(cc, h, origin, len);
    if (*refused)
        return NULL;
    coll_msg_t *m = coll_msg_keep(cc, h, origin, data, len, recv);
    if (m == NULL) {
        coll_kept_unadmit(cc, h, origin, len);
        return NULL;
    }
    m->waiting = true;
    return m;
}

void coll_kept_release(coll_msg_t *m)
{
    if (!m->waiting)
        return;
    m->waiting = false;
    coll_kept_unadmit(m->cc, &m->hdr, m->origin, m->len);
}

size_t coll_kept_bytes(const coll_ctx_t *cc)
{
    return cc->kept->bytes;
}

size_t coll_kept_count(const coll_ctx_t *cc)
{
    return cc->kept->n;
}

void coll_kept_limits(const coll_ctx_t *cc, size_t *ctx_n, size_t *ctx_bytes,
                      size_t *geom_n, size_t *geom_bytes)
{
    *ctx_n      = cc->kept->max_n;
    *ctx_bytes  = cc->kept->max_bytes;
    *geom_n     = cc->kept->geoms.max_n;
    *geom_bytes = cc->kept->geoms.max_bytes;
}

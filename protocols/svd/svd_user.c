/*
 * The user's side: lookups (cached, or fetched from the owner), release,
 * and entering new versions in the cache (whole records only, newest
 * wins, so a lookup never sees a torn entry).
 */
#include <stdlib.h>
#include <string.h>

#include "svd_internal.h"

#define USER_CHECK(cond, rc, ...)                                            \
    do {                                                                     \
        if (!(cond)) {                                                       \
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG, __VA_ARGS__); \
            return (rc);                                                     \
        }                                                                    \
    } while (0)

/* A waiter asked for by a blocking lookup keeps its record in st->held,
 * so the entry's data stays valid after the call returns. */
typedef struct {
    bool             done;
    pami_result_t    result;
    pami_svd_entry_t entry;
} lookup_box_t;

static void hold(svd_state_t *st, svd_blob_t *rec)
{
    rec->refs++;
    svd_blob_put(st->held);
    st->held = rec;
}

void svd_waiter_deliver(svd_state_t *st, svd_waiter_t *w)
{
    pami_svd_entry_t e;
    const pami_svd_entry_t *ep = NULL;
    if (w->result == PAMI_SUCCESS && w->rec != NULL) {
        svd_record_entry(w->rec, w->owner, w->key, &e);
        ep = &e;
        if (w->hold)
            hold(st, w->rec);
    } else if (w->result == PAMI_SUCCESS) {
        w->result = PAMI_ERROR;
    }
    if (w->fn != NULL)
        w->fn(st->ctx, w->cookie, w->result, ep);
    svd_blob_put(w->rec);
    free(w);
}

void svd_queue_done(svd_state_t *st, svd_waiter_t *w)
{
    w->next       = NULL;
    *st->done_tail = w;
    st->done_tail  = &w->next;
    svd_schedule_work(st);
}

/* Ends the lookups of list with result and rec (may be NULL). Callbacks
 * may change the cache, so nothing of it is read meanwhile. */
static void deliver_list(svd_state_t *st, svd_waiter_t *w, svd_blob_t *rec,
                         pami_result_t result)
{
    while (w != NULL) {
        svd_waiter_t *next = w->next;
        w->result = result;
        if (result == PAMI_SUCCESS && rec != NULL) {
            rec->refs++;
            w->rec = rec;
        }
        if (result == PAMI_PEER_FAILED)
            st->stats[SVD_STAT_peer_failed_ops]++;
        svd_waiter_deliver(st, w);
        w = next;
    }
}

/* Ends c's lookups with success and its record; c stays. */
static void deliver_waiters(svd_state_t *st, svd_cached_t *c)
{
    svd_waiter_t *w = c->waiters;
    svd_blob_t *rec = c->rec;
    c->waiters = NULL;
    rec->refs++;
    deliver_list(st, w, rec, PAMI_SUCCESS);
    svd_blob_put(rec);
}

/* Drops c from the cache and ends its lookups with result. */
static void drop_cached(svd_state_t *st, svd_cached_t *c,
                        pami_result_t result)
{
    svd_waiter_t *w = c->waiters;
    c->waiters = NULL;
    svd_cached_remove(st, c);
    deliver_list(st, w, NULL, result);
}

static void box_done(pami_context_t ctx, void *cookie, pami_result_t rc,
                     const pami_svd_entry_t *entry)
{
    (void)ctx;
    lookup_box_t *box = cookie;
    box->done   = true;
    box->result = rc;
    if (entry != NULL)
        box->entry = *entry;
}

static pami_result_t send_fetch(svd_state_t *st, svd_cached_t *c)
{
    svd_fetch_hdr_t f;
    memset(&f, 0, sizeof(f));
    f.version = SVD_WIRE_VERSION;
    f.type    = SVD_PKT_FETCH;
    f.req     = c->req;
    f.key     = c->key;
    svd_user_secret(st, c->owner, c->key, f.secret);
    st->stats[SVD_STAT_fetch_sent]++;
    return svd_send_ctl(st, c->owner, SVD_PKT_FETCH, &f, sizeof(f));
}

/* Starts a lookup ending in fn; hold_rec: for a blocking caller. */
static pami_result_t lookup_start(svd_state_t *st, const pami_svd_lookup_t *p,
                                  pami_svd_lookup_fn fn, void *cookie,
                                  bool hold_rec)
{
    USER_CHECK(p->owner < st->size, PAMI_INVAL,
               "lookup: owner task %u is beyond the job's %zu", p->owner,
               st->size);
    svd_waiter_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return PAMI_ENOMEM;
    w->owner  = p->owner;
    w->key    = p->key;
    w->fn     = fn;
    w->cookie = cookie;
    w->hold   = hold_rec;

    if (p->owner == st->me) {
        svd_owned_t *o = svd_owned_find(st, p->key);
        w->result = o != NULL ? PAMI_SUCCESS : PAMI_NOT_FOUND;
        if (o != NULL) {
            o->rec->refs++;
            w->rec = o->rec;
        }
        svd_queue_done(st, w);
        return PAMI_SUCCESS;
    }
    svd_cached_t *c = svd_cached_find(st, p->owner, p->key);
    if (c == NULL) {
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            free(w);
            return PAMI_ENOMEM;
        }
        c->owner    = p->owner;
        c->key      = p->key;
        c->fetching = true;
        c->req      = ++st->next_req;
        size_t b = svd_hash(p->owner, p->key);
        c->next        = st->cached[b];
        st->cached[b]  = c;
        pami_result_t rc = send_fetch(st, c);
        if (rc != PAMI_SUCCESS) {
            /* e.g. PAMI_PEER_FAILED: the owner is known dead */
            svd_cached_remove(st, c);
            free(w);
            return rc;
        }
    }
    if (p->field_mask & PAMI_SVD_LOOKUP_CHANGE) {
        c->change_fn     = p->change_fn;
        c->change_cookie = p->change_cookie;
    }
    if (!c->fetching) {
        st->stats[SVD_STAT_cache_hits]++;
        w->result = PAMI_SUCCESS;
        c->rec->refs++;
        w->rec = c->rec;
        svd_queue_done(st, w);
        return PAMI_SUCCESS;
    }
    /* Joins the fetch in flight; answered in order of arrival. */
    svd_waiter_t **pp = &c->waiters;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = w;
    return PAMI_SUCCESS;
}

/* The field_mask bits of pami_svd_lookup_t this pami knows. */
#define LOOKUP_KNOWN (PAMI_SVD_LOOKUP_CHANGE | PAMI_SVD_LOOKUP_TIMEOUT)

pami_result_t pami_svd_lookup(pami_context_t context,
                              const pami_svd_lookup_t *p)
{
    svd_state_t *st = svd_state(context);
    USER_CHECK(st != NULL && p != NULL && p->done_fn != NULL, PAMI_INVAL,
               "lookup: no SVD on this context, NULL params or no done_fn");
    USER_CHECK((p->field_mask & ~(uint64_t)LOOKUP_KNOWN) == 0, PAMI_INVAL,
               "lookup: pami_svd_lookup_t.field_mask has bits this pami "
               "does not know");
    return lookup_start(st, p, p->done_fn, p->cookie, false);
}

/* The entry from the directory itself, when no message is needed. */
static bool lookup_here(svd_state_t *st, const pami_svd_lookup_t *p,
                        pami_svd_entry_t *entry, pami_result_t *rc)
{
    svd_blob_t *rec = NULL;
    if (p->owner == st->me) {
        svd_owned_t *o = svd_owned_find(st, p->key);
        *rc = o != NULL ? PAMI_SUCCESS : PAMI_NOT_FOUND;
        if (o != NULL)
            rec = o->rec;
    } else {
        svd_cached_t *c = svd_cached_find(st, p->owner, p->key);
        if (c == NULL || c->fetching)
            return false;
        if (p->field_mask & PAMI_SVD_LOOKUP_CHANGE) {
            c->change_fn     = p->change_fn;
            c->change_cookie = p->change_cookie;
        }
        st->stats[SVD_STAT_cache_hits]++;
        *rc = PAMI_SUCCESS;
        rec = c->rec;
    }
    if (rec != NULL) {
        hold(st, rec);
        svd_record_entry(rec, p->owner, p->key, entry);
    }
    return true;
}

static pami_result_t lookup_wait(pami_context_t context,
                                 const pami_svd_lookup_t *p,
                                 pami_svd_entry_t *entry)
{
    svd_state_t *st = svd_state(context);
    USER_CHECK(st != NULL && p != NULL && entry != NULL, PAMI_INVAL,
               "lookup_wait: no SVD on this context or NULL argument");
    USER_CHECK((p->field_mask & ~(uint64_t)LOOKUP_KNOWN) == 0, PAMI_INVAL,
               "lookup_wait: pami_svd_lookup_t.field_mask has bits this "
               "pami does not know");
    USER_CHECK(p->owner < st->size, PAMI_INVAL,
               "lookup_wait: owner task %u is beyond the job's %zu",
               p->owner, st->size);
    pami_result_t rc;
    if (lookup_here(st, p, entry, &rc))
        return rc;
    /* It could not wait there: refuse before the fetch makes this task
     * a user. */
    USER_CHECK(!pami_protocol_in_handler(context), PAMI_IN_HANDLER,
               "lookup_wait from a handler or callback of its context; "
               "use pami_svd_lookup there");
    lookup_box_t box = {.done = false};
    rc = lookup_start(st, p, box_done, &box, true);
    if (rc != PAMI_SUCCESS)
        return rc;
    int timeout = (p->field_mask & PAMI_SVD_LOOKUP_TIMEOUT) ? p->timeout_ms
                                                            : -1;
    rc = svd_wait(st, &box.done, timeout);
    if (rc != PAMI_SUCCESS) {
        /* Not answered yet: our waiter still hangs on the entry. */
        svd_cached_t *c = svd_cached_find(st, p->owner, p->key);
        for (svd_waiter_t **pp = c ? &c->waiters : NULL; pp && *pp;
             pp = &(*pp)->next)
            if ((*pp)->cookie == &box) {
                svd_waiter_t *w = *pp;
                *pp = w->next;
                free(w);
                break;
            }
        return rc;
    }
    if (box.result == PAMI_SUCCESS)
        *entry = box.entry; /* its data is held in st->held */
    return box.result;
}

pami_result_t pami_svd_release(pami_context_t context, pami_task_t owner,
                               pami_svd_key_t key)
{
    svd_state_t *st = svd_state(context);
    USER_CHECK(st != NULL, PAMI_INVAL, "release: no SVD on this context");
    svd_cached_t *c = svd_cached_find(st, owner, key);
    if (c == NULL)
        return PAMI_NOT_FOUND;
    if (c->fetching)
        return PAMI_EAGAIN;
    svd_cached_remove(st, c);
    svd_release_hdr_t r;
    memset(&r, 0, sizeof(r));
    r.version = SVD_WIRE_VERSION;
    r.type    = SVD_PKT_RELEASE;
    r.key     = key;
    st->stats[SVD_STAT_releases]++;
    svd_send_ctl(st, owner, SVD_PKT_RELEASE, &r, sizeof(r));
    return PAMI_SUCCESS;
}

pami_result_t pami_svd_set_change_fn(pami_context_t context,
                                     pami_svd_change_fn fn, void *cookie)
{
    svd_state_t *st = svd_state(context);
    USER_CHECK(st != NULL, PAMI_INVAL, "set_change_fn: no SVD here");
    st->change_fn     = fn;
    st->change_cookie = cookie;
    return PAMI_SUCCESS;
}

void svd_commit(svd_state_t *st, pami_task_t owner, pami_svd_key_t key,
                svd_blob_t *rec, uint64_t version)
{
    svd_cached_t *c = svd_cached_find(st, owner, key);
    if (c == NULL || version <= c->version)
        return;
    rec->refs++;
    svd_blob_put(c->rec);
    c->rec     = rec;
    c->version = version;
    st->stats[SVD_STAT_commits]++;
    pami_svd_change_fn fn = c->change_fn ? c->change_fn : st->change_fn;
    void *cookie = c->change_fn ? c->change_cookie : st->change_cookie;
    if (fn != NULL) {
        pami_svd_entry_t e;
        svd_record_entry(rec, owner, key, &e);
        fn(st->ctx, cookie, &e);
    }
}

/* The reply to our FETCH is complete in rec (or failed: result). */
static void fetch_done(svd_state_t *st, pami_task_t owner, pami_svd_key_t key,
                       uint32_t req, svd_blob_t *rec, uint64_t version,
                       pami_result_t result, pami_endpoint_t origin)
{
    svd_cached_t *c = svd_cached_find(st, owner, key);
    if (c == NULL || !c->fetching || c->req != req) {
        svd_drop(st, SVD_STAT_drop_stale, origin, "ENTRY for no lookup");
        svd_blob_put(rec);
        return;
    }
    if (result == PAMI_SUCCESS && !svd_record_check(rec, version)) {
        svd_drop(st, SVD_STAT_drop_bad, origin, "ENTRY with a bad record");
        result = PAMI_ERROR;
    }
    if (result != PAMI_SUCCESS) {
        svd_blob_put(rec);
        drop_cached(st, c, result);
        return;
    }
    /* An update may have reached us first through another user. */
    if (version > c->version) {
        svd_blob_put(c->rec);
        c->rec     = rec;
        c->version = version;
    } else {
        svd_blob_put(rec);
    }
    c->fetching = false;
    deliver_waiters(st, c);
}

typedef struct {
    svd_state_t    *st;
    svd_blob_t     *rec;
    pami_task_t     owner;
    pami_svd_key_t  key;
    uint32_t        req;
    uint64_t        version;
    pami_endpoint_t origin;
} entry_recv_t;

static void entry_received(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    entry_recv_t *r  = cookie;
    svd_state_t  *st = r->st;
    if (st->closed)
        svd_blob_put(r->rec);
    else
        fetch_done(st, r->owner, r->key, r->req, r->rec, r->version, rc,
                   r->origin);
    free(r);
    svd_op_end(st);
}

/* ---- a record too large for ENTRY, got from the owner's region ---- */

static void fetchget_issue(svd_fetchget_t *fg);

static void fetchget_finish(svd_fetchget_t *fg, pami_result_t rc)
{
    svd_state_t *st = fg->st;
    svd_fetched_hdr_t f;
    memset(&f, 0, sizeof(f));
    f.version       = SVD_WIRE_VERSION;
    f.type          = SVD_PKT_FETCHED;
    f.req           = fg->req;
    f.key           = fg->key;
    f.entry_version = fg->version;
    svd_send_ctl(st, fg->owner, SVD_PKT_FETCHED, &f, sizeof(f));
    svd_fetchget_t **pp = &st->fetchgets;
    while (*pp != fg)
        pp = &(*pp)->next;
    *pp = fg->next;
    fetch_done(st, fg->owner, fg->key, fg->req, fg->rec, fg->version, rc,
               fg->origin);
    free(fg);
}

static void fetchget_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    svd_fetchget_t *fg = cookie;
    if (!svd_op_end(fg->st))
        return;
    fetchget_finish(fg, rc);
}

static void fetchget_issue(svd_fetchget_t *fg)
{
    svd_state_t *st = fg->st;
    pami_rma_t r = {.dest = svd_ep(st, fg->owner), .local = fg->rec->bytes,
                    .bytes = fg->rec->len, .remote_mr = &fg->src,
                    .local_fn = fetchget_done, .cookie = fg};
    svd_op_start(st);
    pami_result_t rc = pami_get(st->ctx, &r);
    if (rc == PAMI_SUCCESS) {
        st->stats[SVD_STAT_gets]++;
        return;
    }
    svd_op_end(st);
    if (rc == PAMI_EAGAIN) {
        fg->retry = true;
        svd_schedule_work(st);
        return;
    }
    fetchget_finish(fg, rc);
}

void svd_fetchget_retry(svd_state_t *st)
{
    for (;;) {
        svd_fetchget_t *fg = st->fetchgets;
        while (fg != NULL && !fg->retry)
            fg = fg->next;
        if (fg == NULL)
            return;
        fg->retry = false;
        fetchget_issue(fg);
    }
}

void svd_fetchgets_free(svd_state_t *st)
{
    while (st->fetchgets != NULL) {
        svd_fetchget_t *fg = st->fetchgets;
        st->fetchgets = fg->next;
        svd_blob_put(fg->rec);
        free(fg);
    }
}

static void entry_by_get(svd_state_t *st, const svd_entry_hdr_t *e,
                         svd_cached_t *c, size_t dlen, pami_endpoint_t origin)
{
    pami_task_t from = svd_origin_task(origin);
    if (dlen != 0 || e->rec_len < SVD_REC_HDR ||
        e->rec_len > st->cfg.max_record) {
        svd_drop(st, SVD_STAT_drop_size, origin,
                 "ENTRY record size out of range");
        return;
    }
    size_t          bytes = 0, off;
    pami_endpoint_t mr_owner;
    pami_task_t     mr_task = UINT32_MAX;
    if (pami_memregion_query(&e->src, NULL, &bytes, &mr_owner) ==
        PAMI_SUCCESS)
        pami_endpoint_query(mr_owner, &mr_task, &off);
    if (mr_task != from || bytes < e->rec_len) {
        svd_drop(st, SVD_STAT_drop_bad, origin,
                 "ENTRY whose region is not the owner's record");
        return;
    }
    if (c == NULL || !c->fetching || c->req != e->req) {
        svd_drop(st, SVD_STAT_drop_stale, origin, "ENTRY for no lookup");
        return;
    }
    svd_fetchget_t *fg  = calloc(1, sizeof(*fg));
    svd_blob_t     *rec = svd_blob_new(st, e->rec_len);
    if (fg == NULL || rec == NULL) {
        free(fg);
        svd_blob_put(rec);
        drop_cached(st, c, PAMI_ENOMEM);
        return;
    }
    *fg = (svd_fetchget_t){.st = st, .owner = from, .key = e->key,
                           .req = e->req, .version = e->entry_version,
                           .rec = rec, .src = e->src, .origin = origin};
    fg->next      = st->fetchgets;
    st->fetchgets = fg;
    fetchget_issue(fg);
}

void svd_on_entry(pami_context_t ctx, void *cookie, const void *hdr,
                  size_t hlen, const void *data, size_t dlen,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    svd_state_t    *st = cookie;
    svd_entry_hdr_t e;
    if (!svd_check_hdr(st, SVD_PKT_ENTRY, hdr, hlen, sizeof(e), origin))
        return;
    memcpy(&e, hdr, sizeof(e));
    pami_task_t from = svd_origin_task(origin);
    svd_cached_t *c = svd_cached_find(st, from, e.key);
    if (e.status == SVD_ST_NOT_FOUND) {
        if (dlen != 0 || e.rec_len != 0) {
            svd_drop(st, SVD_STAT_drop_size, origin,
                     "ENTRY not-found with a record");
            return;
        }
        if (c == NULL || !c->fetching || c->req != e.req) {
            svd_drop(st, SVD_STAT_drop_stale, origin, "ENTRY for no lookup");
            return;
        }
        drop_cached(st, c, PAMI_NOT_FOUND);
        return;
    }
    if (e.status == SVD_ST_FAILED) {
        if (dlen != 0 || e.rec_len != 0)
            svd_drop(st, SVD_STAT_drop_size, origin,
                     "ENTRY failed with a record");
        else if (c == NULL || !c->fetching || c->req != e.req)
            svd_drop(st, SVD_STAT_drop_stale, origin, "ENTRY for no lookup");
        else
            drop_cached(st, c, PAMI_ERROR);
        return;
    }
    if (e.status != SVD_ST_OK || (e.flags & ~SVD_ENTRY_BY_GET) != 0) {
        svd_drop(st, SVD_STAT_drop_bad, origin,
                 "ENTRY with unknown status or flags");
        return;
    }
    if (e.flags & SVD_ENTRY_BY_GET) {
        entry_by_get(st, &e, c, dlen, origin);
        return;
    }
    if (e.rec_len != dlen || dlen < SVD_REC_HDR ||
        dlen > st->cfg.max_record) {
        svd_drop(st, SVD_STAT_drop_size, origin,
                 "ENTRY record size out of range");
        return;
    }
    if (c == NULL || !c->fetching || c->req != e.req) {
        svd_drop(st, SVD_STAT_drop_stale, origin, "ENTRY for no lookup");
        return;
    }
    svd_blob_t *rec = svd_blob_new(st, dlen);
    if (rec == NULL) {
        drop_cached(st, c, PAMI_ENOMEM);
        return;
    }
    if (data != NULL) {
        memcpy(rec->bytes, data, dlen);
        fetch_done(st, from, e.key, e.req, rec, e.entry_version,
                   PAMI_SUCCESS, origin);
        return;
    }
    entry_recv_t *r = malloc(sizeof(*r));
    if (r == NULL) {
        svd_blob_put(rec);
        return; /* discarded; the lookup waits for peer death or timeout */
    }
    *r = (entry_recv_t){st, rec, from, e.key, e.req, e.entry_version, origin};
    svd_op_start(st);
    recv->addr     = rec->bytes;
    recv->local_fn = entry_received;
    recv->cookie   = r;
}

void svd_user_peer_failed(svd_state_t *st, pami_task_t task)
{
    for (size_t b = 0; b < SVD_HASH_BUCKETS; b++) {
        svd_cached_t *c = st->cached[b];
        while (c != NULL) {
            svd_cached_t *next = c->next;
            if (c->owner == task) {
                drop_cached(st, c, PAMI_PEER_FAILED);
                next = st->cached[b]; /* callbacks may have changed it */
            }
            c = next;
        }
    }
}

void svd_cached_fini(svd_state_t *st)
{
    for (size_t b = 0; b < SVD_HASH_BUCKETS; b++)
        while (st->cached[b] != NULL) {
            drop_cached(st, st->cached[b], PAMI_SHUTDOWN);
        }
}

/* Writes only the program's layout of the entry (pami_svd.h). */
pami_result_t pami_svd_lookup_wait_sized(pami_context_t context,
                                         const pami_svd_lookup_t *p,
                                         pami_svd_entry_t *out, size_t size)
{
    static const size_t sizes[] = {
        SVD_PREFIX(pami_svd_entry_t, mr), SVD_PREFIX(pami_svd_entry_t, data),
        sizeof(pami_svd_entry_t)};
    bool known = false;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        known |= sizes[i] == size;
    USER_CHECK(known, PAMI_INVAL, "lookup_wait: pami_svd_entry_t of %zu "
               "bytes is no layout of this pami (%zu bytes now)", size,
               sizeof(pami_svd_entry_t));
    USER_CHECK(out != NULL, PAMI_INVAL,
               "lookup_wait: no SVD on this context or NULL argument");
    pami_svd_entry_t entry;
    pami_result_t    rc = lookup_wait(context, p, &entry);
    if (rc == PAMI_SUCCESS)
        memcpy(out, &entry, size);
    return rc;
}

/*
 * The owner's side: entries, their users, their broadcast header, serving
 * fetches and releases, and starting updates.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "svd_internal.h"

#define OWNER_CHECK(cond, rc, ...)                                           \
    do {                                                                     \
        if (!(cond)) {                                                       \
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG, __VA_ARGS__); \
            return (rc);                                                     \
        }                                                                    \
    } while (0)

/* The rule of docs/protocols/svd.md. */
void svd_choose(const svd_config_t *cfg, size_t rec_len, size_t nusers,
                uint8_t *htype, uint8_t *sched)
{
    *htype = rec_len <= cfg->inline_max ? PAMI_SVD_HEADER_INLINE
                                        : PAMI_SVD_HEADER_GET;
    if (nusers <= cfg->direct_users)
        *sched = PAMI_SVD_SCHEDULE_DIRECT;
    else if (rec_len >= cfg->pipeline_min)
        *sched = PAMI_SVD_SCHEDULE_PIPELINE;
    else if (rec_len >= cfg->tree_min || nusers > cfg->tree_users)
        *sched = PAMI_SVD_SCHEDULE_TREE;
    else
        *sched = PAMI_SVD_SCHEDULE_DIRECT;
}

void svd_owned_rechoose(svd_state_t *st, svd_owned_t *o)
{
    svd_choose(&st->cfg, o->rec->len, o->nusers, &o->htype, &o->sched);
    if (o->force_htype)
        o->htype = o->force_htype;
    if (o->force_sched)
        o->sched = o->force_sched;
    if (o->nusers * SVD_USER_BYTES + o->rec->len >= st->eager_max)
        o->htype = PAMI_SVD_HEADER_GET;
}

static svd_blob_t *make_record(svd_state_t *st, uint64_t version,
                               uint64_t addr, uint64_t size,
                               const pami_memregion_t *mr, const void *data,
                               size_t data_size)
{
    svd_blob_t *rec = svd_blob_new(st, SVD_REC_HDR + data_size);
    if (rec == NULL)
        return NULL;
    svd_record_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.version       = SVD_WIRE_VERSION;
    h.flags         = mr != NULL ? SVD_REC_HAS_MR : 0;
    h.addr          = addr;
    h.size          = size;
    h.entry_version = version;
    h.data_size     = data_size;
    if (mr != NULL)
        h.mr = *mr;
    memcpy(rec->bytes, &h, sizeof(h));
    if (data_size > 0)
        memcpy(rec->bytes + SVD_REC_HDR, data, data_size);
    return rec;
}

static bool valid_htype(unsigned h)
{
    return h <= PAMI_SVD_HEADER_GET;
}

static bool valid_sched(unsigned s)
{
    return s <= PAMI_SVD_SCHEDULE_PIPELINE;
}

pami_result_t pami_svd_register(pami_context_t context,
                                const pami_svd_register_t *p)
{
    svd_state_t *st = svd_state(context);
    OWNER_CHECK(st != NULL && p != NULL, PAMI_INVAL,
                "register: no SVD on this context or NULL params");
    uint64_t m = p->field_mask;
    /* A bit this pami does not know names a field it would ignore. */
    OWNER_CHECK((m & ~(uint64_t)(PAMI_SVD_REGISTER_MR |
                                 PAMI_SVD_REGISTER_DATA |
                                 PAMI_SVD_REGISTER_HEADER |
                                 PAMI_SVD_REGISTER_SCHEDULE)) == 0,
                PAMI_INVAL, "register: pami_svd_register_t.field_mask has "
                "bits this pami does not know");
    OWNER_CHECK(svd_owned_find(st, p->key) == NULL, PAMI_INVAL,
                "register: key %llu is registered already",
                (unsigned long long)p->key);
    OWNER_CHECK(!(m & PAMI_SVD_REGISTER_MR) || p->mr != NULL, PAMI_INVAL,
                "register: PAMI_SVD_REGISTER_MR with a NULL mr");
    size_t dsize = (m & PAMI_SVD_REGISTER_DATA) ? p->data_size : 0;
    OWNER_CHECK(dsize == 0 || p->data != NULL, PAMI_INVAL,
                "register: data_size %zu with NULL data", dsize);
    OWNER_CHECK(dsize <= st->cfg.max_record - SVD_REC_HDR, PAMI_INVAL,
                "register: %zu bytes of data exceed PAMI_SVD_MAX_RECORD",
                dsize);
    unsigned h = (m & PAMI_SVD_REGISTER_HEADER) ? p->header : 0;
    unsigned s = (m & PAMI_SVD_REGISTER_SCHEDULE) ? p->schedule : 0;
    OWNER_CHECK(valid_htype(h) && valid_sched(s), PAMI_INVAL,
                "register: unknown header type %u or schedule %u", h, s);

    svd_owned_t *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return PAMI_ENOMEM;
    o->key     = p->key;
    o->version = 1;
    o->rec = make_record(st, 1, (uint64_t)(uintptr_t)p->addr, p->size,
                         (m & PAMI_SVD_REGISTER_MR) ? p->mr : NULL, p->data,
                         dsize);
    if (o->rec == NULL) {
        free(o);
        return PAMI_ENOMEM;
    }
    o->force_htype = (uint8_t)h;
    o->force_sched = (uint8_t)s;
    svd_owned_rechoose(st, o);
    size_t b = svd_hash(st->me, p->key);
    o->next       = st->owned[b];
    st->owned[b]  = o;
    return PAMI_SUCCESS;
}

/* Starts the update; *out is the broadcast until it reports. */
static pami_result_t update_start(svd_state_t *st, const pami_svd_update_t *p,
                                  svd_bcast_t **out)
{
    uint64_t m = p->field_mask;
    OWNER_CHECK((m & ~(uint64_t)(PAMI_SVD_UPDATE_ADDR | PAMI_SVD_UPDATE_MR |
                                 PAMI_SVD_UPDATE_DATA |
                                 PAMI_SVD_UPDATE_HEADER |
                                 PAMI_SVD_UPDATE_SCHEDULE |
                                 PAMI_SVD_UPDATE_TIMEOUT)) == 0,
                PAMI_INVAL, "update: pami_svd_update_t.field_mask has bits "
                "this pami does not know");
    svd_owned_t *o = svd_owned_find(st, p->key);
    OWNER_CHECK(o != NULL, PAMI_NOT_FOUND,
                "update: key %llu is not owned by this task",
                (unsigned long long)p->key);
    OWNER_CHECK(!(m & PAMI_SVD_UPDATE_DATA) || p->data_size == 0 ||
                    p->data != NULL,
                PAMI_INVAL, "update: data_size %zu with NULL data",
                p->data_size);
    OWNER_CHECK(!(m & PAMI_SVD_UPDATE_DATA) ||
                    p->data_size <= st->cfg.max_record - SVD_REC_HDR,
                PAMI_INVAL, "update: %zu bytes of data exceed "
                "PAMI_SVD_MAX_RECORD", p->data_size);
    unsigned h = (m & PAMI_SVD_UPDATE_HEADER) ? p->header : 0;
    unsigned s = (m & PAMI_SVD_UPDATE_SCHEDULE) ? p->schedule : 0;
    OWNER_CHECK(valid_htype(h) && valid_sched(s), PAMI_INVAL,
                "update: unknown header type %u or schedule %u", h, s);
    OWNER_CHECK(o->nusers * SVD_USER_BYTES < st->eager_max, PAMI_UNIMPL,
                "update: the list of %zu users does not fit one eager "
                "notification (PAMI_RNDV_THRESHOLD %zu)", o->nusers,
                st->eager_max);

    svd_record_hdr_t old;
    memcpy(&old, o->rec->bytes, sizeof(old));
    const pami_memregion_t *mr = (old.flags & SVD_REC_HAS_MR) ? &old.mr
                                                               : NULL;
    if (m & PAMI_SVD_UPDATE_MR)
        mr = p->mr;
    const void *data  = o->rec->bytes + SVD_REC_HDR;
    size_t      dsize = o->rec->len - SVD_REC_HDR;
    if (m & PAMI_SVD_UPDATE_DATA) {
        data  = p->data;
        dsize = p->data_size;
    }
    uint64_t addr = (m & PAMI_SVD_UPDATE_ADDR) ? (uintptr_t)p->addr : old.addr;
    uint64_t size = (m & PAMI_SVD_UPDATE_ADDR) ? p->size : old.size;
    svd_blob_t *rec = make_record(st, o->version + 1, addr, size, mr, data,
                                  dsize);
    if (rec == NULL)
        return PAMI_ENOMEM;

    svd_bcast_t *b = svd_bcast_new(st, o->nusers);
    if (b == NULL) {
        svd_blob_put(rec);
        return PAMI_ENOMEM;
    }
    svd_blob_put(o->rec);
    o->rec = rec;
    o->version++;
    svd_owned_rechoose(st, o);
    st->stats[SVD_STAT_updates]++;

    b->is_owner = true;
    b->owner    = st->me;
    b->key      = o->key;
    b->version  = o->version;
    b->htype    = h ? h : o->htype;
    b->sched    = s ? s : o->sched;
    b->fanout   = st->cfg.fanout;
    b->chunk    = st->cfg.chunk;
    b->rec_len  = rec->len;
    b->done_fn  = p->done_fn;
    b->cookie   = p->cookie;
    b->data     = SVD_DATA_DONE;
    rec->refs++;
    b->rec = rec;
    *out = b;

    if (o->nusers == 0) {
        st->stats[SVD_STAT_updates_no_users]++;
        b->reported     = true;
        b->next         = st->done_bcasts;
        st->done_bcasts = b;
        svd_schedule_work(st);
        return PAMI_SUCCESS;
    }
    memcpy(b->tasks, o->users, o->nusers * sizeof(pami_task_t));
    /* A notification travels whole (eager): a record that would not fit
     * goes by GET, forced or not. */
    if (b->htype == PAMI_SVD_HEADER_INLINE &&
        o->nusers * SVD_USER_BYTES + rec->len >= st->eager_max)
        b->htype = PAMI_SVD_HEADER_GET;
    st->stats[b->htype == PAMI_SVD_HEADER_INLINE ? SVD_STAT_hdr_inline
                                                 : SVD_STAT_hdr_get]++;
    st->stats[b->sched == PAMI_SVD_SCHEDULE_DIRECT ? SVD_STAT_sched_direct
              : b->sched == PAMI_SVD_SCHEDULE_TREE ? SVD_STAT_sched_tree
                                                   : SVD_STAT_sched_pipeline]++;
    b->node = 0;
    svd_bcast_layout(b);

    /* What NOTIFY carries: the users, their tags, then the record when
     * inline. */
    size_t tl = b->ntasks * SVD_USER_BYTES;
    b->payload_len = tl + (b->htype == PAMI_SVD_HEADER_INLINE ? rec->len : 0);
    b->payload = malloc(b->payload_len);
    pami_result_t rc = b->payload != NULL ? PAMI_SUCCESS : PAMI_ENOMEM;
    if (rc == PAMI_SUCCESS) {
        memcpy(b->payload, b->tasks, b->ntasks * sizeof(uint32_t));
        svd_notify_hdr_t th = {.htype = b->htype, .sched = b->sched,
                               .key = b->key, .owner = b->owner,
                               .entry_version = b->version,
                               .rec_len = b->rec_len};
        for (size_t i = 0; i < b->ntasks; i++) {
            uint64_t tag = svd_notify_tag(o->secrets[i], o->users[i], &th);
            memcpy(b->payload + b->ntasks * sizeof(uint32_t) +
                       i * sizeof(tag), &tag, sizeof(tag));
        }
        if (b->htype == PAMI_SVD_HEADER_INLINE)
            memcpy(b->payload + tl, rec->bytes, rec->len);
        else if ((rc = pami_memregion_create(st->ctx, rec->bytes, rec->len,
                                             &b->mr)) == PAMI_SUCCESS)
            b->has_mr = true;
    }
    o->in_flight++;
    b->next   = st->bcasts;
    st->bcasts = b;
    if (rc != PAMI_SUCCESS) {
        /* The version is made; its users cannot be told. */
        b->failed   = true;
        b->done_fn  = NULL;
        b->data     = SVD_DATA_FAILED;
        b->children_told = true;
        b->pending_acks  = 0;
        svd_bcast_check(b);
        return rc;
    }
    svd_bcast_tell_children(b);
    svd_bcast_check(b);
    return PAMI_SUCCESS;
}

pami_result_t pami_svd_update(pami_context_t context,
                              const pami_svd_update_t *p)
{
    svd_state_t *st = svd_state(context);
    OWNER_CHECK(st != NULL && p != NULL, PAMI_INVAL,
                "update: no SVD on this context or NULL params");
    svd_bcast_t *b;
    return update_start(st, p, &b);
}

typedef struct {
    bool          done;
    pami_result_t result;
} waitbox_t;

static void waitbox_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    waitbox_t *w = cookie;
    w->done   = true;
    w->result = rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits through pami_context_wait until *done or the timeout. It
 * progresses at least once, as pami_context_wait(ctx, 0) does: an
 * answer one poll away (an update with no users) is not a timeout. */
pami_result_t svd_wait(svd_state_t *st, const bool *done, int timeout_ms)
{
    double deadline = timeout_ms < 0 ? 0 : now_s() + timeout_ms / 1000.0;
    while (!*done) {
        int slice = 100;
        if (timeout_ms >= 0) {
            double left = deadline - now_s();
            slice = left <= 0 ? 0 : left * 1000 < slice
                                        ? (int)(left * 1000) + 1 : slice;
        }
        pami_result_t rc = pami_context_wait(st->ctx, slice);
        if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
            return rc;
        if (!*done && timeout_ms >= 0 && now_s() >= deadline)
            return PAMI_TIMEOUT;
    }
    return PAMI_SUCCESS;
}

pami_result_t pami_svd_update_wait(pami_context_t context,
                                   const pami_svd_update_t *p)
{
    svd_state_t *st = svd_state(context);
    OWNER_CHECK(st != NULL && p != NULL, PAMI_INVAL,
                "update_wait: no SVD on this context or NULL params");
    /* It could not wait there: refuse before the version is made. */
    OWNER_CHECK(!pami_protocol_in_handler(context), PAMI_IN_HANDLER,
                "update_wait from a handler or callback of its context; "
                "use pami_svd_update there");
    waitbox_t box = {false, PAMI_SUCCESS};
    pami_svd_update_t q = *p;
    q.done_fn = waitbox_done;
    q.cookie  = &box;
    svd_bcast_t *b;
    pami_result_t rc = update_start(st, &q, &b);
    if (rc != PAMI_SUCCESS)
        return rc;
    int timeout = (p->field_mask & PAMI_SVD_UPDATE_TIMEOUT) ? p->timeout_ms
                                                            : -1;
    rc = svd_wait(st, &box.done, timeout);
    if (rc != PAMI_SUCCESS) {
        b->done_fn = NULL; /* not reported yet, so b is still there */
        return rc;
    }
    if (p->done_fn != NULL)
        p->done_fn(context, p->cookie, box.result);
    return box.result;
}

static pami_result_t query(pami_context_t context, pami_svd_key_t key,
                           pami_svd_info_t *info, pami_task_t *users,
                           size_t max_users)
{
    svd_state_t *st = svd_state(context);
    OWNER_CHECK(st != NULL && info != NULL, PAMI_INVAL,
                "query: no SVD on this context or NULL info");
    svd_owned_t *o = svd_owned_find(st, key);
    if (o == NULL)
        return PAMI_NOT_FOUND;
    *info = (pami_svd_info_t){
        .version           = o->version,
        .num_users         = o->nusers,
        .record_size       = o->rec->len,
        .header            = (pami_svd_header_t)o->htype,
        .schedule          = (pami_svd_schedule_t)o->sched,
        .updates_in_flight = o->in_flight,
    };
    for (size_t i = 0; users != NULL && i < o->nusers && i < max_users; i++)
        users[i] = o->users[i];
    return PAMI_SUCCESS;
}

/* ---- users of an entry ---- */

static size_t user_pos(const svd_owned_t *o, pami_task_t t, bool *found)
{
    size_t lo = 0, hi = o->nusers;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->users[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < o->nusers && o->users[lo] == t;
    return lo;
}

static bool user_add(svd_state_t *st, svd_owned_t *o, pami_task_t t,
                     const uint8_t secret[SVD_SECRET_LEN])
{
    bool   found;
    size_t i = user_pos(o, t, &found);
    if (found) {
        memcpy(o->secrets[i], secret, SVD_SECRET_LEN);
        return true;
    }
    if (o->nusers == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        pami_task_t *u = realloc(o->users, cap * sizeof(*u));
        if (u == NULL)
            return false;
        o->users = u;
        uint8_t (*sc)[SVD_SECRET_LEN] = realloc(o->secrets,
                                                cap * sizeof(*sc));
        if (sc == NULL)
            return false;
        o->secrets = sc;
        o->cap     = cap;
    }
    memmove(&o->users[i + 1], &o->users[i],
            (o->nusers - i) * sizeof(pami_task_t));
    memmove(&o->secrets[i + 1], &o->secrets[i],
            (o->nusers - i) * sizeof(o->secrets[0]));
    o->users[i] = t;
    memcpy(o->secrets[i], secret, SVD_SECRET_LEN);
    o->nusers++;
    svd_owned_rechoose(st, o);
    return true;
}

static bool user_remove(svd_state_t *st, svd_owned_t *o, pami_task_t t)
{
    bool   found;
    size_t i = user_pos(o, t, &found);
    if (!found)
        return false;
    memmove(&o->users[i], &o->users[i + 1],
            (o->nusers - i - 1) * sizeof(pami_task_t));
    memmove(&o->secrets[i], &o->secrets[i + 1],
            (o->nusers - i - 1) * sizeof(o->secrets[0]));
    o->nusers--;
    svd_owned_rechoose(st, o);
    return true;
}

static void entry_sent(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)rc;
    svd_blob_t  *rec = cookie;
    svd_state_t *st  = rec->st;
    svd_blob_put(rec);
    svd_op_end(st);
}

void svd_on_fetch(pami_context_t ctx, void *cookie, const void *hdr,
                  size_t hlen, const void *data, size_t dlen,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)data;
    (void)recv;
    svd_state_t    *st = cookie;
    svd_fetch_hdr_t f;
    if (!svd_decode_bare(st, SVD_PKT_FETCH, hdr, hlen, dlen, &f,
                         sizeof(f), origin))
        return;
    pami_task_t     from = svd_origin_task(origin);
    svd_entry_hdr_t e;
    memset(&e, 0, sizeof(e));
    e.version = SVD_WIRE_VERSION;
    e.type    = SVD_PKT_ENTRY;
    e.req     = f.req;
    e.key     = f.key;
    svd_owned_t *o = svd_owned_find(st, f.key);
    if (o == NULL || from == st->me || !user_add(st, o, from, f.secret)) {
        st->stats[SVD_STAT_fetch_not_found]++;
        e.status = SVD_ST_NOT_FOUND;
        svd_send_ctl(st, from, SVD_PKT_ENTRY, &e, sizeof(e));
        return;
    }
    st->stats[SVD_STAT_fetch_served]++;
    e.status        = SVD_ST_OK;
    e.entry_version = o->version;
    e.rec_len       = o->rec->len;
    if (o->rec->len >= st->eager_max) {
        /* Too large to travel whole: the user gets it from a region kept
         * until its FETCHED. */
        svd_serve_t *sv = calloc(1, sizeof(*sv));
        if (sv == NULL ||
            pami_memregion_create(st->ctx, o->rec->bytes, o->rec->len,
                                  &sv->mr) != PAMI_SUCCESS) {
            free(sv);
            e.status  = SVD_ST_FAILED;
            e.rec_len = 0;
            svd_send_ctl(st, from, SVD_PKT_ENTRY, &e, sizeof(e));
            return;
        }
        sv->task = from;
        sv->req  = f.req;
        sv->key  = f.key;
        sv->rec  = o->rec;
        o->rec->refs++;
        sv->next   = st->serves;
        st->serves = sv;
        e.flags = SVD_ENTRY_BY_GET;
        e.src   = sv->mr;
        svd_send_ctl(st, from, SVD_PKT_ENTRY, &e, sizeof(e));
        return;
    }
    o->rec->refs++;
    svd_op_start(st);
    pami_send_t s = {.send = {.dest = origin, .dispatch = SVD_PKT_ENTRY,
                              .header = &e, .header_len = sizeof(e),
                              .data = o->rec->bytes, .data_len = o->rec->len},
                     .local_fn = entry_sent, .cookie = o->rec};
    pami_result_t rc = pami_protocol_send(&st->env, &s);
    if (rc != PAMI_SUCCESS) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_DEBUG, SVD_LOG,
                          "entry for task %u not sent: %s", from,
                          pami_error_text(rc));
        entry_sent(st->ctx, o->rec, rc);
    }
}

static void serve_free(svd_state_t *st, svd_serve_t *sv)
{
    pami_memregion_destroy(st->ctx, &sv->mr);
    svd_blob_put(sv->rec);
    free(sv);
}

void svd_on_fetched(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)data;
    (void)recv;
    svd_state_t      *st = cookie;
    svd_fetched_hdr_t f;
    if (!svd_decode_bare(st, SVD_PKT_FETCHED, hdr, hlen, dlen, &f,
                         sizeof(f), origin))
        return;
    pami_task_t from = svd_origin_task(origin);
    for (svd_serve_t **pp = &st->serves; *pp; pp = &(*pp)->next) {
        svd_serve_t *sv = *pp;
        if (sv->task == from && sv->req == f.req && sv->key == f.key) {
            *pp = sv->next;
            serve_free(st, sv);
            return;
        }
    }
    svd_drop(st, SVD_STAT_drop_stale, origin, "FETCHED for nothing served");
}

void svd_serves_fini(svd_state_t *st)
{
    while (st->serves != NULL) {
        svd_serve_t *sv = st->serves;
        st->serves = sv->next;
        serve_free(st, sv);
    }
}

void svd_on_release(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)data;
    (void)recv;
    svd_state_t      *st = cookie;
    svd_release_hdr_t r;
    if (!svd_decode_bare(st, SVD_PKT_RELEASE, hdr, hlen, dlen, &r,
                         sizeof(r), origin))
        return;
    svd_owned_t *o = svd_owned_find(st, r.key);
    if (o == NULL || !user_remove(st, o, svd_origin_task(origin))) {
        svd_drop(st, SVD_STAT_drop_stale, origin,
                 "RELEASE of a key the task does not use");
        return;
    }
    st->stats[SVD_STAT_releases]++;
}

void svd_owner_peer_failed(svd_state_t *st, pami_task_t task)
{
    for (svd_serve_t **pp = &st->serves; *pp;) {
        svd_serve_t *sv = *pp;
        if (sv->task == task) {
            *pp = sv->next;
            serve_free(st, sv);
        } else {
            pp = &sv->next;
        }
    }
    for (size_t b = 0; b < SVD_HASH_BUCKETS; b++)
        for (svd_owned_t *o = st->owned[b]; o; o = o->next)
            user_remove(st, o, task);
}

void svd_owned_free_all(svd_state_t *st)
{
    for (size_t b = 0; b < SVD_HASH_BUCKETS; b++)
        while (st->owned[b] != NULL) {
            svd_owned_t *o = st->owned[b];
            st->owned[b] = o->next;
            svd_blob_put(o->rec);
            free(o->users);
            free(o->secrets);
            free(o);
        }
}

/* Writes only the program's layout of the info (pami_svd.h). */
pami_result_t pami_svd_query_sized(pami_context_t context, pami_svd_key_t key,
                                   pami_svd_info_t *out, pami_task_t *users,
                                   size_t max_users, size_t size)
{
    static const size_t sizes[] = {
        SVD_PREFIX(pami_svd_info_t, version),
        SVD_PREFIX(pami_svd_info_t, num_users),
        SVD_PREFIX(pami_svd_info_t, record_size),
        SVD_PREFIX(pami_svd_info_t, header),
        SVD_PREFIX(pami_svd_info_t, schedule), sizeof(pami_svd_info_t)};
    bool known = false;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        known |= sizes[i] == size;
    OWNER_CHECK(known, PAMI_INVAL, "query: pami_svd_info_t of %zu bytes is "
                "no layout of this pami (%zu bytes now)", size,
                sizeof(pami_svd_info_t));
    OWNER_CHECK(out != NULL, PAMI_INVAL, "query: NULL info");
    pami_svd_info_t info;
    pami_result_t   rc = query(context, key, &info, users, max_users);
    if (rc == PAMI_SUCCESS)
        memcpy(out, &info, size);
    return rc;
}

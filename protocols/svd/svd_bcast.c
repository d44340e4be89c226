/*
 * One update version travelling from the owner through its users: the
 * schedules (direct, tree, pipelined chain), NOTIFY, the active GETs of
 * the record, CHUNK along the chain and ACK back up. The same object
 * serves the owner (node 0) and every user the version passes.
 */
#include <stdlib.h>
#include <string.h>

#include "svd_internal.h"

pami_task_t svd_node_task(const svd_bcast_t *b, size_t node)
{
    return node == 0 ? b->owner : b->tasks[node - 1];
}

svd_bcast_t *svd_bcast_new(svd_state_t *st, size_t ntasks)
{
    svd_bcast_t *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->tasks = calloc(ntasks ? ntasks : 1, sizeof(pami_task_t));
    if (b->tasks == NULL) {
        free(b);
        return NULL;
    }
    b->st     = st;
    b->ntasks = ntasks;
    return b;
}

/* Parent and children of b->node under b's schedule. */
void svd_bcast_layout(svd_bcast_t *b)
{
    size_t n = b->ntasks, node = b->node;
    switch (b->sched) {
    case PAMI_SVD_SCHEDULE_TREE:
        b->parent    = node ? (node - 1) / b->fanout : 0;
        b->child0    = node * b->fanout + 1;
        b->nchildren = b->child0 > n ? 0 : n - b->child0 + 1;
        if (b->nchildren > b->fanout)
            b->nchildren = b->fanout;
        break;
    case PAMI_SVD_SCHEDULE_PIPELINE:
        b->parent    = node ? node - 1 : 0;
        b->child0    = node + 1;
        b->nchildren = node < n ? 1 : 0;
        break;
    default: /* DIRECT */
        b->parent    = 0;
        b->child0    = 1;
        b->nchildren = node == 0 ? n : 0;
        break;
    }
}

static svd_bcast_t *find(svd_state_t *st, pami_task_t owner,
                         pami_svd_key_t key, uint64_t version)
{
    for (svd_bcast_t *b = st->bcasts; b; b = b->next)
        if (b->owner == owner && b->key == key && b->version == version)
            return b;
    return NULL;
}

static void bcast_free(svd_bcast_t *b)
{
    svd_blob_put(b->rec);
    free(b->tasks);
    free(b->acked);
    free(b->payload);
    free(b->chunk_done);
    free(b);
}

static void maybe_free(svd_bcast_t *b)
{
    svd_state_t *st = b->st;
    if (!b->reported || b->refs > 0 || st->closed)
        return;
    svd_bcast_t **pp = &st->bcasts;
    while (*pp != NULL && *pp != b)
        pp = &(*pp)->next;
    if (*pp == b)
        *pp = b->next;
    bcast_free(b);
}

static void drop_region(svd_bcast_t *b)
{
    if (!b->has_mr)
        return;
    pami_result_t rc = pami_memregion_destroy(b->st->ctx, &b->mr);
    if (rc != PAMI_SUCCESS)
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG,
                          "region of key %llu version %llu not destroyed: "
                          "%s (the context's destroy will)",
                          (unsigned long long)b->key,
                          (unsigned long long)b->version,
                          pami_error_text(rc));
    b->has_mr = false;
}

/* Done here: the record is in (or never will be) and every child told
 * answered. The owner reports to the program, a user to its parent; b
 * is freed when nothing refers to it any more, so callers leave it
 * alone afterwards. */
void svd_bcast_check(svd_bcast_t *b)
{
    svd_state_t *st = b->st;
    if (b->reported) {
        maybe_free(b);
        return;
    }
    if (b->data == SVD_DATA_PENDING || b->pending_acks > 0)
        return;
    b->reported = true;
    drop_region(b);
    if (b->is_owner) {
        svd_owned_t *o = svd_owned_find(st, b->key);
        if (o != NULL && o->in_flight > 0)
            o->in_flight--;
        if (b->done_fn != NULL)
            b->done_fn(st->ctx, b->cookie,
                       b->failed ? PAMI_PEER_FAILED : PAMI_SUCCESS);
    } else {
        svd_ack_hdr_t a;
        memset(&a, 0, sizeof(a));
        a.version       = SVD_WIRE_VERSION;
        a.type          = SVD_PKT_ACK;
        a.status        = b->failed ? SVD_ST_FAILED : SVD_ST_OK;
        a.owner         = b->owner;
        a.key           = b->key;
        a.entry_version = b->version;
        svd_send_ctl(st, svd_node_task(b, b->parent), SVD_PKT_ACK, &a,
                     sizeof(a));
    }
    maybe_free(b);
}

static void send_chunk(svd_bcast_t *b, uint8_t flags)
{
    svd_chunk_hdr_t c;
    memset(&c, 0, sizeof(c));
    c.version       = SVD_WIRE_VERSION;
    c.type          = SVD_PKT_CHUNK;
    c.flags         = flags;
    c.owner         = b->owner;
    c.key           = b->key;
    c.entry_version = b->version;
    c.ready         = b->got;
    b->st->stats[SVD_STAT_chunks_sent]++;
    svd_send_ctl(b->st, svd_node_task(b, b->child0), SVD_PKT_CHUNK, &c,
                 sizeof(c));
}

/* The record will not come; b may be gone on return. */
static void fail_data(svd_bcast_t *b)
{
    if (b->data != SVD_DATA_PENDING) {
        svd_bcast_check(b);
        return;
    }
    b->data   = SVD_DATA_FAILED;
    b->failed = true;
    /* A successor already told waits for chunks that will not come. */
    if (b->sched == PAMI_SVD_SCHEDULE_PIPELINE && b->children_told &&
        b->nchildren > 0)
        send_chunk(b, SVD_CHUNK_ABORT);
    svd_bcast_check(b);
}

static void notify_sent(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    (void)rc;
    svd_bcast_t *b = cookie;
    b->refs--;
    if (svd_op_end(b->st) && b->reported)
        maybe_free(b);
}

void svd_bcast_tell_children(svd_bcast_t *b)
{
    svd_state_t *st = b->st;
    if (b->children_told)
        return;
    b->children_told = true;
    if (b->nchildren == 0)
        return;
    b->acked = calloc(b->nchildren, 1);
    if (b->acked == NULL) {
        b->failed = true;
        return;
    }
    svd_notify_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.version       = SVD_WIRE_VERSION;
    h.type          = SVD_PKT_NOTIFY;
    h.htype         = b->htype;
    h.sched         = b->sched;
    h.fanout        = (uint16_t)b->fanout;
    h.key           = b->key;
    h.owner         = b->owner;
    h.ntasks        = (uint32_t)b->ntasks;
    h.entry_version = b->version;
    h.rec_len       = b->rec_len;
    h.chunk         = b->chunk;
    if (b->htype == PAMI_SVD_HEADER_GET) {
        h.ready = b->is_owner ? b->rec_len : b->got;
        h.src   = b->mr;
    }
    for (size_t i = 0; i < b->nchildren; i++) {
        pami_send_t s = {
            .send = {.dest = svd_ep(st, svd_node_task(b, b->child0 + i)),
                     .dispatch = SVD_PKT_NOTIFY, .header = &h,
                     .header_len = sizeof(h), .data = b->payload,
                     .data_len = b->payload_len},
            .local_fn = notify_sent,
            .cookie   = b};
        b->refs++;
        svd_op_start(st);
        pami_result_t rc = pami_protocol_send(&st->env, &s);
        if (rc != PAMI_SUCCESS) {
            b->refs--;
            svd_op_end(st);
            b->acked[i] = 1;
            b->failed   = true;
            pami_protocol_log(PAMI_PROTOCOL_LOG_DEBUG, SVD_LOG,
                              "notify to task %u not sent: %s",
                              svd_node_task(b, b->child0 + i),
                              pami_error_text(rc));
            continue;
        }
        st->stats[SVD_STAT_notify_sent]++;
        b->pending_acks++;
    }
}

/* The whole record is here: check it, enter it, pass it on. */
static void data_complete(svd_bcast_t *b)
{
    svd_state_t *st = b->st;
    if (!svd_record_check(b->rec, b->version)) {
        st->stats[SVD_STAT_drop_bad]++;
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG,
                          "record of key %llu version %llu from task %u is "
                          "malformed; dropped", (unsigned long long)b->key,
                          (unsigned long long)b->version,
                          svd_node_task(b, b->parent));
        fail_data(b);
        return;
    }
    b->data = SVD_DATA_DONE;
    svd_commit(st, b->owner, b->key, b->rec, b->version);
    svd_bcast_tell_children(b);
    svd_bcast_check(b);
}

static void issue_gets(svd_bcast_t *b);

static void get_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    svd_get_t   *g = cookie;
    svd_bcast_t *b = g->b;
    g->busy = false;
    b->refs--;
    if (!svd_op_end(b->st))
        return;
    if (b->data != SVD_DATA_PENDING) {
        svd_bcast_check(b);
        return;
    }
    if (rc != PAMI_SUCCESS) {
        if (rc == PAMI_PEER_FAILED)
            b->st->stats[SVD_STAT_peer_failed_ops]++;
        fail_data(b);
        return;
    }
    b->chunk_done[g->off / b->chunk] = 1;
    size_t before = b->got;
    while (b->got < b->rec_len && b->chunk_done[b->got / b->chunk]) {
        size_t left = b->rec_len - b->got;
        b->got += left < b->chunk ? left : b->chunk;
    }
    if (b->got != before && b->sched == PAMI_SVD_SCHEDULE_PIPELINE &&
        b->children_told && b->nchildren > 0)
        send_chunk(b, 0);
    if (b->got == b->rec_len)
        data_complete(b);
    else
        issue_gets(b);
}

static void issue_gets(svd_bcast_t *b)
{
    svd_state_t *st = b->st;
    while (b->data == SVD_DATA_PENDING && b->issued < b->rec_len) {
        size_t left = b->rec_len - b->issued;
        size_t len  = left < b->chunk ? left : b->chunk;
        if (b->issued + len > b->src_ready)
            return;
        svd_get_t *g = NULL;
        for (size_t i = 0; i < SVD_GET_DEPTH && g == NULL; i++)
            if (!b->gets[i].busy)
                g = &b->gets[i];
        if (g == NULL)
            return;
        *g = (svd_get_t){.b = b, .off = b->issued, .len = len, .busy = true};
        pami_rma_t r = {.dest = svd_ep(st, svd_node_task(b, b->parent)),
                        .local = b->rec->bytes + g->off, .bytes = len,
                        .remote_mr = &b->src, .remote_offset = g->off,
                        .local_fn = get_done, .cookie = g};
        b->refs++;
        svd_op_start(st);
        pami_result_t rc = pami_get(st->ctx, &r);
        if (rc != PAMI_SUCCESS) {
            g->busy = false;
            b->refs--;
            svd_op_end(st);
            if (rc == PAMI_EAGAIN) {
                /* No get from inside this progress step: next one. */
                b->retry = true;
                svd_schedule_work(st);
                return;
            }
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG,
                              "get of key %llu version %llu from task %u: %s",
                              (unsigned long long)b->key,
                              (unsigned long long)b->version,
                              svd_node_task(b, b->parent),
                              pami_error_text(rc));
            fail_data(b);
            return;
        }
        st->stats[SVD_STAT_gets]++;
        b->issued += len;
    }
}

void svd_bcast_retry(svd_state_t *st)
{
    /* issue_gets may free b: look for the next one from the start. */
    for (;;) {
        svd_bcast_t *b = st->bcasts;
        while (b != NULL && !b->retry)
            b = b->next;
        if (b == NULL)
            return;
        b->retry = false;
        issue_gets(b);
    }
}

/* Updates that had no users report from progress. */
void svd_bcast_done_empty(svd_state_t *st)
{
    while (st->done_bcasts != NULL) {
        svd_bcast_t *b = st->done_bcasts;
        st->done_bcasts = b->next;
        if (b->done_fn != NULL)
            b->done_fn(st->ctx, b->cookie, PAMI_SUCCESS);
        bcast_free(b);
    }
}

/* ---- NOTIFY ---- */

/* NOTIFY's payload is here (whole): build this task's part of the
 * broadcast. buf is taken over when owned, else copied as needed. */
static void notify_start(svd_state_t *st, const svd_notify_hdr_t *h,
                         const uint8_t *buf, uint8_t *owned_buf,
                         pami_endpoint_t origin)
{
    size_t       n = h->ntasks;
    svd_bcast_t *b = svd_bcast_new(st, n);
    if (b == NULL) {
        free(owned_buf);
        return;
    }
    memcpy(b->tasks, buf, n * sizeof(uint32_t));
    size_t node = 0;
    bool   ok   = true;
    for (size_t i = 0; i < n && ok; i++) {
        ok = b->tasks[i] < st->size && b->tasks[i] != h->owner &&
             (i == 0 || b->tasks[i - 1] < b->tasks[i]);
        if (b->tasks[i] == st->me)
            node = i + 1;
    }
    b->owner   = h->owner;
    b->key     = h->key;
    b->version = h->entry_version;
    b->htype   = h->htype;
    b->sched   = h->sched;
    b->fanout  = h->fanout;
    b->rec_len = h->rec_len;
    b->chunk   = h->chunk;
    b->node    = node;
    svd_bcast_layout(b);
    if (!ok || node == 0 ||
        svd_node_task(b, b->parent) != svd_origin_task(origin)) {
        svd_drop(st, SVD_STAT_drop_bad, origin,
                 "NOTIFY with a task list that does not lead here from it");
        bcast_free(b);
        free(owned_buf);
        return;
    }
    if (h->htype == PAMI_SVD_HEADER_GET) {
        size_t          bytes = 0;
        pami_endpoint_t mr_owner;
        pami_task_t     mr_task = UINT32_MAX;
        size_t          off;
        if (pami_memregion_query(&h->src, NULL, &bytes, &mr_owner) ==
            PAMI_SUCCESS)
            pami_endpoint_query(mr_owner, &mr_task, &off);
        if (mr_task != svd_origin_task(origin) || bytes < h->rec_len) {
            svd_drop(st, SVD_STAT_drop_bad, origin,
                     "NOTIFY whose region is not the sender's record");
            bcast_free(b);
            free(owned_buf);
            return;
        }
    }
    /* Only the owner knows our secret for this key: a NOTIFY without our
     * tag is forged, and must neither take the version nor occupy it. */
    uint8_t  secret[SVD_SECRET_LEN];
    uint64_t tag;
    svd_user_secret(st, h->owner, h->key, secret);
    memcpy(&tag, buf + n * sizeof(uint32_t) + (node - 1) * sizeof(tag),
           sizeof(tag));
    if (tag != svd_notify_tag(secret, st->me, h)) {
        svd_drop(st, SVD_STAT_drop_forged, origin,
                 "NOTIFY not tagged for this task by the owner");
        bcast_free(b);
        free(owned_buf);
        return;
    }
    st->stats[SVD_STAT_notify_received]++;
    if (svd_cached_find(st, h->owner, h->key) == NULL)
        st->stats[SVD_STAT_notify_unwanted]++;
    b->next    = st->bcasts;
    st->bcasts = b;

    size_t tl = n * SVD_USER_BYTES;
    b->rec = svd_blob_new(st, h->rec_len);
    if (b->nchildren > 0) {
        b->payload_len = tl + (h->htype == PAMI_SVD_HEADER_INLINE ? h->rec_len
                                                                  : 0);
        if (owned_buf != NULL) {
            b->payload = owned_buf;
            owned_buf  = NULL;
        } else if ((b->payload = malloc(b->payload_len)) != NULL) {
            memcpy(b->payload, buf, b->payload_len);
        }
    }
    if (b->rec == NULL || (b->nchildren > 0 && b->payload == NULL)) {
        free(owned_buf);
        fail_data(b);
        return;
    }
    if (h->htype == PAMI_SVD_HEADER_INLINE) {
        memcpy(b->rec->bytes, buf + tl, h->rec_len);
        free(owned_buf);
        b->got = b->rec_len;
        data_complete(b);
        return;
    }
    free(owned_buf);
    b->chunk = b->sched == PAMI_SVD_SCHEDULE_PIPELINE ? h->chunk : b->rec_len;
    b->chunk_done = calloc((b->rec_len + b->chunk - 1) / b->chunk, 1);
    b->src        = h->src;
    b->src_ready  = h->ready;
    if (b->chunk_done == NULL) {
        fail_data(b);
        return;
    }
    if (b->nchildren > 0) {
        pami_result_t rc = pami_memregion_create(st->ctx, b->rec->bytes,
                                                 b->rec_len, &b->mr);
        if (rc != PAMI_SUCCESS) {
            fail_data(b);
            return;
        }
        b->has_mr = true;
        /* Down the chain at once: the successor follows chunk by chunk. */
        if (b->sched == PAMI_SVD_SCHEDULE_PIPELINE)
            svd_bcast_tell_children(b);
    }
    issue_gets(b);
}

typedef struct {
    svd_state_t     *st;
    svd_notify_hdr_t h;
    uint8_t         *buf;
    pami_endpoint_t  origin;
} notify_recv_t;

static void notify_received(pami_context_t ctx, void *cookie,
                            pami_result_t rc)
{
    (void)ctx;
    notify_recv_t *r  = cookie;
    svd_state_t   *st = r->st;
    if (!st->closed && rc == PAMI_SUCCESS)
        notify_start(st, &r->h, r->buf, r->buf, r->origin);
    else
        free(r->buf);
    free(r);
    svd_op_end(st);
}

void svd_on_notify(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    svd_state_t     *st = cookie;
    svd_notify_hdr_t h;
    int rc = svd_notify_decode(hdr, hlen, dlen, (uint32_t)st->size,
                               (uint32_t)st->me, st->cfg.max_record, &h);
    if (rc != SVD_DEC_OK) {
        svd_drop_wire(st, rc, origin);
        return;
    }
    if (find(st, h.owner, h.key, h.entry_version) != NULL) {
        svd_drop(st, SVD_STAT_drop_stale, origin, "NOTIFY seen already");
        return;
    }
    if (data != NULL) {
        notify_start(st, &h, data, NULL, origin);
        return;
    }
    notify_recv_t *r = malloc(sizeof(*r));
    uint8_t       *buf = malloc(dlen);
    if (r == NULL || buf == NULL) {
        free(r);
        free(buf);
        return; /* discarded: the sender learns it from a dead child */
    }
    *r = (notify_recv_t){st, h, buf, origin};
    svd_op_start(st);
    recv->addr     = buf;
    recv->local_fn = notify_received;
    recv->cookie   = r;
}

/* ---- ACK and CHUNK ---- */

/* The child slot of task in b, or SIZE_MAX. */
static size_t child_slot(const svd_bcast_t *b, pami_task_t task)
{
    size_t lo = 0, hi = b->ntasks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->tasks[mid] < task)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == b->ntasks || b->tasks[lo] != task)
        return SIZE_MAX;
    size_t node = lo + 1;
    if (node < b->child0 || node >= b->child0 + b->nchildren)
        return SIZE_MAX;
    return node - b->child0;
}

void svd_on_ack(pami_context_t ctx, void *cookie, const void *hdr,
                size_t hlen, const void *data, size_t dlen,
                pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)data;
    (void)recv;
    svd_state_t  *st = cookie;
    svd_ack_hdr_t a;
    if (!svd_decode_bare(st, SVD_PKT_ACK, hdr, hlen, dlen, &a,
                         sizeof(a), origin))
        return;
    if (a.status > SVD_ST_FAILED || a.status == SVD_ST_NOT_FOUND) {
        svd_drop(st, SVD_STAT_drop_bad, origin, "ACK with unknown status");
        return;
    }
    svd_bcast_t *b = find(st, a.owner, a.key, a.entry_version);
    size_t slot = b != NULL && b->children_told && b->acked != NULL
                      ? child_slot(b, svd_origin_task(origin))
                      : SIZE_MAX;
    if (slot == SIZE_MAX || b->acked[slot]) {
        svd_drop(st, SVD_STAT_drop_stale, origin, "ACK for nothing told");
        return;
    }
    st->stats[SVD_STAT_acks_received]++;
    b->acked[slot] = 1;
    b->pending_acks--;
    if (a.status != SVD_ST_OK)
        b->failed = true;
    svd_bcast_check(b);
}

void svd_on_chunk(pami_context_t ctx, void *cookie, const void *hdr,
                  size_t hlen, const void *data, size_t dlen,
                  pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    (void)data;
    (void)recv;
    svd_state_t    *st = cookie;
    svd_chunk_hdr_t c;
    if (!svd_check_hdr(st, SVD_PKT_CHUNK, hdr, hlen, sizeof(c), origin))
        return;
    memcpy(&c, hdr, sizeof(c));
    if (dlen != 0 || (c.flags & ~SVD_CHUNK_ABORT) != 0) {
        svd_drop(st, SVD_STAT_drop_size, origin, "CHUNK with a payload");
        return;
    }
    svd_bcast_t *b = find(st, c.owner, c.key, c.entry_version);
    if (b == NULL || b->is_owner || b->sched != PAMI_SVD_SCHEDULE_PIPELINE ||
        svd_node_task(b, b->parent) != svd_origin_task(origin)) {
        svd_drop(st, SVD_STAT_drop_stale, origin, "CHUNK for no transfer");
        return;
    }
    if (c.ready > b->rec_len) {
        svd_drop(st, SVD_STAT_drop_size, origin, "CHUNK beyond the record");
        return;
    }
    if (c.flags & SVD_CHUNK_ABORT) {
        fail_data(b);
        return;
    }
    if (c.ready > b->src_ready)
        b->src_ready = c.ready;
    issue_gets(b);
}

/* ---- dead tasks, shutdown ---- */

static bool affected(const svd_bcast_t *b, pami_task_t task)
{
    if (!b->reported && b->acked != NULL) {
        size_t slot = child_slot(b, task);
        if (slot != SIZE_MAX && !b->acked[slot])
            return true;
    }
    return !b->is_owner && b->data == SVD_DATA_PENDING &&
           svd_node_task(b, b->parent) == task;
}

void svd_bcast_peer_failed(svd_state_t *st, pami_task_t task)
{
    /* Callbacks may add and free broadcasts: find one at a time. */
    for (;;) {
        svd_bcast_t *b = st->bcasts;
        while (b != NULL && !affected(b, task))
            b = b->next;
        if (b == NULL)
            return;
        st->stats[SVD_STAT_peer_failed_ops]++;
        size_t slot = b->acked != NULL ? child_slot(b, task) : SIZE_MAX;
        if (slot != SIZE_MAX && !b->acked[slot]) {
            b->acked[slot] = 1;
            b->pending_acks--;
            b->failed = true;
        }
        if (!b->is_owner && b->data == SVD_DATA_PENDING &&
            svd_node_task(b, b->parent) == task)
            fail_data(b);
        else
            svd_bcast_check(b);
    }
}

void svd_bcast_fini(svd_state_t *st)
{
    while (st->done_bcasts != NULL) {
        svd_bcast_t *b = st->done_bcasts;
        st->done_bcasts = b->next;
        if (b->done_fn != NULL)
            b->done_fn(st->ctx, b->cookie, PAMI_SHUTDOWN);
        bcast_free(b);
    }
    for (svd_bcast_t *b = st->bcasts; b; b = b->next) {
        drop_region(b);
        if (!b->reported) {
            b->reported = true;
            if (b->is_owner && b->done_fn != NULL)
                b->done_fn(st->ctx, b->cookie, PAMI_SHUTDOWN);
        }
    }
}

void svd_bcast_free_all(svd_state_t *st)
{
    while (st->bcasts != NULL) {
        svd_bcast_t *b = st->bcasts;
        st->bcasts = b->next;
        bcast_free(b);
    }
}

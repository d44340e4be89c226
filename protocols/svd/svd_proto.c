/*
 * SVD as a pami protocol: its ops table, configuration, per-context state,
 * the checks every packet goes through, and the posted work that reports
 * completions from progress.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "svd_internal.h"

static const pami_config_var_t svd_config_vars[] = {
    {"PAMI_SVD_INLINE_MAX", "4096",
     "SVD: update records (296-byte header + data) up to this size travel "
     "inline in the notification; larger ones by active GET"},
    {"PAMI_SVD_DIRECT_USERS", "8",
     "SVD: updates with at most this many users go DIRECT from the owner"},
    {"PAMI_SVD_TREE_USERS", "64",
     "SVD: updates with more users than this go at least by TREE"},
    {"PAMI_SVD_TREE_MIN", "262144",
     "SVD: records from this size go by TREE (above DIRECT_USERS users)"},
    {"PAMI_SVD_PIPELINE_MIN", "4194304",
     "SVD: records from this size go by PIPELINE (above DIRECT_USERS "
     "users)"},
    {"PAMI_SVD_TREE_FANOUT", "2", "SVD: children per node of the TREE"},
    {"PAMI_SVD_CHUNK", "262144", "SVD: PIPELINE chunk size in bytes"},
    {"PAMI_SVD_MAX_RECORD", "1073741824",
     "SVD: largest record accepted (update data + 296 bytes); larger "
     "updates are refused and larger packets dropped"},
};
#define SVD_NUM_CONFIG (sizeof(svd_config_vars) / sizeof(svd_config_vars[0]))

static const char *const svd_stat_names[] = {
#define SVD_STAT_NAME_(n) #n,
    SVD_FOREACH_STAT(SVD_STAT_NAME_)
#undef SVD_STAT_NAME_
};

/* A size from the environment (digits with an optional k, m or g). */
#define env_size(name, dflt, min, max)                                       \
    ((size_t)pami_protocol_env_size(SVD_LOG, name, dflt, min, max))

static void read_config(svd_config_t *c)
{
    c->inline_max   = env_size("PAMI_SVD_INLINE_MAX", 4096, 0, SIZE_MAX);
    c->direct_users = env_size("PAMI_SVD_DIRECT_USERS", 8, 0, SIZE_MAX);
    c->tree_users   = env_size("PAMI_SVD_TREE_USERS", 64, 0, SIZE_MAX);
    c->tree_min     = env_size("PAMI_SVD_TREE_MIN", 256 << 10, 0, SIZE_MAX);
    c->pipeline_min = env_size("PAMI_SVD_PIPELINE_MIN", 4 << 20, 0,
                               SIZE_MAX);
    c->fanout       = env_size("PAMI_SVD_TREE_FANOUT", 2, 1, 64);
    c->chunk        = env_size("PAMI_SVD_CHUNK", 256 << 10, 4096, 1ull << 30);
    c->max_record   = env_size("PAMI_SVD_MAX_RECORD", 1ull << 30,
                               SVD_REC_HDR, (size_t)1 << 40);
}

static pami_result_t svd_init(const pami_protocol_env_t *env, void **state)
{
    if (env->num_dispatch != SVD_PKT_COUNT)
        return PAMI_INVAL;
    pami_client_attr_t attr = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                             PAMI_CLIENT_ATTR_SIZE |
                                             PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    pami_result_t rc = pami_client_query(env->client, &attr);
    if (rc != PAMI_SUCCESS)
        return rc;
    svd_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->client    = env->client;
    st->ctx       = env->context;
    st->me        = attr.task;
    st->size      = attr.size;
    st->env       = *env;
    st->eager_max = attr.rndv_threshold;
    st->done_tail = &st->done_head;
    read_config(&st->cfg);
    if (!svd_tag_init(st)) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG,
                          "no random bytes for the NOTIFY tags");
        free(st);
        return PAMI_ERROR;
    }
    static const pami_dispatch_fn handlers[SVD_PKT_COUNT] = {
        [SVD_PKT_FETCH] = svd_on_fetch,   [SVD_PKT_ENTRY] = svd_on_entry,
        [SVD_PKT_RELEASE] = svd_on_release, [SVD_PKT_NOTIFY] = svd_on_notify,
        [SVD_PKT_ACK] = svd_on_ack,       [SVD_PKT_CHUNK] = svd_on_chunk,
        [SVD_PKT_FETCHED] = svd_on_fetched,
    };
    for (size_t i = 0; i < SVD_PKT_COUNT; i++) {
        rc = pami_protocol_dispatch_set(env, i, handlers[i], st);
        if (rc != PAMI_SUCCESS) {
            free(st);
            return rc;
        }
    }
    st->offset = env->context_offset;
    *state = st;
    return PAMI_SUCCESS;
}

static void free_all(svd_state_t *st)
{
    svd_bcast_free_all(st);
    svd_fetchgets_free(st);
    svd_owned_free_all(st);
    free(st);
}

static void svd_fini(pami_context_t context, void *state)
{
    (void)context;
    svd_state_t *st = state;
    if (st == NULL)
        return;
    /* Queued completions and waiting lookups end with SHUTDOWN. */
    svd_waiter_t *w = st->done_head;
    st->done_head = NULL;
    st->done_tail = &st->done_head;
    while (w != NULL) {
        svd_waiter_t *next = w->next;
        w->result = PAMI_SHUTDOWN;
        svd_waiter_deliver(st, w);
        w = next;
    }
    svd_cached_fini(st);
    svd_bcast_fini(st);
    svd_serves_fini(st);
    if (st->held != NULL)
        svd_blob_put(st->held);
    st->held   = NULL;
    st->closed = true;
    /* Callbacks of pami operations may still come while the context
     * closes: the last of them frees the state. */
    if (st->inflight == 0)
        free_all(st);
}

static size_t svd_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    svd_state_t *st = state;
    for (size_t i = 0; i < SVD_STAT_COUNT && i < max; i++)
        out[i] = (pami_protocol_stat_t){svd_stat_names[i], st->stats[i]};
    return SVD_STAT_COUNT;
}

static void svd_peer_failed(pami_context_t context, void *state,
                            pami_task_t task)
{
    (void)context;
    svd_state_t *st = state;
    svd_user_peer_failed(st, task);
    svd_owner_peer_failed(st, task);
    svd_bcast_peer_failed(st, task);
}

const pami_protocol_ops_t svd_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = "svd",
    .version      = SVD_WIRE_VERSION,
    .num_dispatch = SVD_PKT_COUNT,
    .init         = svd_init,
    .fini         = svd_fini,
    .stats        = svd_stats,
    .peer_failed  = svd_peer_failed,
    .config       = svd_config_vars,
    .num_config   = SVD_NUM_CONFIG,
};
PAMI_PROTOCOL_BUILTIN(svd_ops)

svd_state_t *svd_state(pami_context_t context)
{
    return pami_protocol_state(context, &svd_ops);
}

pami_endpoint_t svd_ep(svd_state_t *st, pami_task_t task)
{
    pami_endpoint_t ep = PAMI_ENDPOINT_NULL;
    pami_endpoint_create(st->client, task, st->offset, &ep);
    return ep;
}

pami_task_t svd_origin_task(pami_endpoint_t origin)
{
    pami_task_t task = UINT32_MAX;
    size_t      off;
    pami_endpoint_query(origin, &task, &off);
    return task;
}

/* A header-only packet; pami_protocol_send (which copies the header and never asks
 * for a retry) when the immediate path is busy. */
pami_result_t svd_send_ctl(svd_state_t *st, pami_task_t task, unsigned type,
                           const void *hdr, size_t len)
{
    pami_send_t s = {.send = {.dest = svd_ep(st, task),
                              .dispatch = type,
                              .header = hdr, .header_len = len}};
    pami_result_t rc = pami_protocol_send_immediate(&st->env, &s.send);
    if (rc == PAMI_EAGAIN)
        rc = pami_protocol_send(&st->env, &s);
    if (rc != PAMI_SUCCESS)
        pami_protocol_log(PAMI_PROTOCOL_LOG_DEBUG, SVD_LOG,
                          "packet type %u to task %u not sent: %s", type, task,
                          pami_error_text(rc));
    return rc;
}

void svd_op_start(svd_state_t *st)
{
    st->inflight++;
}

bool svd_op_end(svd_state_t *st)
{
    st->inflight--;
    if (!st->closed)
        return true;
    if (st->inflight == 0)
        free_all(st);
    return false;
}

void svd_drop(svd_state_t *st, int stat, pami_endpoint_t origin,
              const char *what)
{
    st->stats[stat]++;
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SVD_LOG,
                      "dropped a packet from task %u: %s",
                      svd_origin_task(origin), what);
}

void svd_drop_wire(svd_state_t *st, int rc, pami_endpoint_t origin)
{
    static const struct {
        int         stat;
        const char *what;
    } why[] = {
        [SVD_DEC_SHORT]   = {SVD_STAT_drop_short, "header too short"},
        [SVD_DEC_LONG]    = {SVD_STAT_drop_long, "header too long"},
        [SVD_DEC_VERSION]  = {SVD_STAT_drop_version, "unknown wire version"},
        [SVD_DEC_TYPE]    = {SVD_STAT_drop_type, "unknown packet type"},
        [SVD_DEC_BAD]     = {SVD_STAT_drop_bad, "NOTIFY with an unknown "
                              "header type, schedule or owner"},
        [SVD_DEC_SIZE]    = {SVD_STAT_drop_size,
                              "NOTIFY with sizes out of range"},
    };
    svd_drop(st, why[rc].stat, origin, why[rc].what);
}

/* The checks shared by every packet: exact header size, wire version,
 * the type of the id it came on. */
bool svd_check_hdr(svd_state_t *st, unsigned type, const void *hdr,
                   size_t len, size_t want, pami_endpoint_t origin)
{
    int rc = svd_hdr_decode(type, hdr, len, want);
    if (rc != SVD_DEC_OK) {
        svd_drop_wire(st, rc, origin);
        return false;
    }
    return true;
}

bool svd_decode_bare(svd_state_t *st, unsigned type, const void *hdr,
                     size_t hlen, size_t dlen, void *out, size_t want,
                     pami_endpoint_t origin)
{
    if (!svd_check_hdr(st, type, hdr, hlen, want, origin))
        return false;
    if (dlen != 0) {
        svd_drop(st, SVD_STAT_drop_size, origin,
                 "a header-only packet with a payload");
        return false;
    }
    memcpy(out, hdr, want);
    return true;
}

static pami_result_t run_work(pami_context_t context, void *cookie)
{
    (void)context;
    svd_state_t *st = cookie;
    st->work_posted = false;
    svd_waiter_t *w = st->done_head;
    st->done_head = NULL;
    st->done_tail = &st->done_head;
    while (w != NULL) {
        svd_waiter_t *next = w->next;
        svd_waiter_deliver(st, w);
        w = next;
    }
    svd_bcast_done_empty(st);
    svd_bcast_retry(st);
    svd_fetchget_retry(st);
    return PAMI_SUCCESS;
}

void svd_schedule_work(svd_state_t *st)
{
    if (st->work_posted || st->closed)
        return;
    if (pami_context_post(st->ctx, &st->work, run_work, st) == PAMI_SUCCESS)
        st->work_posted = true;
}

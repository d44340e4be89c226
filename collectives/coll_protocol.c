/*
 * The collectives as a built-in protocol: one dispatch id for all their
 * messages, per-context state (the world geometry, the list of
 * geometries, messages for geometries not created yet), counters, the
 * peer-failed hook and its settings (PAMI_CONNID_THRESHOLD,
 * PAMI_COLL_PIECE, PAMI_COLL_PIECE_LOCAL, PAMI_COLL_SPIN_US).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define COLL_THRESHOLD_DEFAULT 64
#define COLL_GLOBAL_THRESHOLD_DEFAULT 4096
#define COLL_PIECE (64u * 1024)
#define COLL_PIECE_LOCAL (4u * 1024 * 1024)
#define COLL_SPIN_US_DEFAULT 200
#define COLL_MSG_MAX ((size_t)1 << 26) /* PAMI_COLL_PIECE*'s upper bound */

static const pami_config_var_t coll_config[] = {
    {"PAMI_CONNID_THRESHOLD", "64",
     "collectives a task may have in flight on one geometry (ConnIDs in "
     "use) before a new call waits for one to complete; 1..256"},
    {"PAMI_CONNID_GLOBAL_THRESHOLD", "4096",
     "ConnIDs in use by collectives of every geometry and context of the "
     "client before a new call waits for one to complete (seed 002's "
     "global count); read by the client's first context; 1..2^20"},
    {"PAMI_COLL_PIECE", "65536",
     "bytes of one piece of a large collective message (each piece is "
     "fetched by its own get); at least the rendezvous threshold; "
     "4096..2^26"},
    {"PAMI_COLL_PIECE_LOCAL", "4194304",
     "the same for a peer on this node, whose pieces are read by one "
     "process_vm_readv each, one after the other: larger pieces only "
     "save messages; 4096..2^26"},
    {"PAMI_COLL_KEPT_MAX", "65536",
     "messages a context keeps for collectives not posted or geometries "
     "not created here yet; beyond it they are dropped (kept_dropped)"},
    {"PAMI_COLL_KEPT_BYTES", "2g",
     "their payload bytes per context; the same"},
    {"PAMI_COLL_KEPT_GEOM_MAX", "16384",
     "such messages per geometry id; the same"},
    {"PAMI_COLL_KEPT_GEOM_BYTES", "1g",
     "their payload bytes per geometry id; the same"},
    {"PAMI_COLL_SPIN_US", "200",
     "microseconds a blocking collective polls before each sleep while "
     "it waits; only when the node has a cpu for each of its tasks; 0 "
     "never polls"},
};

coll_ctx_t *coll_ctx_of(pami_context_t context)
{
    return pami_protocol_state(context, &coll_protocol_ops);
}

/* A whole number in lo..hi from the environment, else dflt (with a
 * warning when it was set but is not one). */
#define read_setting(name, dflt, lo, hi)                                     \
    ((unsigned long)pami_protocol_env_size(COLL_SUBSYS, name, dflt, lo, hi))

static void drop(coll_ctx_t *cc, const char *why, pami_endpoint_t origin)
{
    cc->st.malformed++;
    pami_task_t task = 0;
    size_t off = 0;
    pami_endpoint_query(origin, &task, &off);
    coll_warn("message from task %u context %zu dropped: %s", task, off, why);
}

const char *coll_hdr_decode(const void *header, size_t header_size,
                            size_t data_size, coll_hdr_t *h)
{
    if (header_size != sizeof(*h))
        return header_size < sizeof(*h) ? "short header" : "long header";
    memcpy(h, header, sizeof(*h));
    if (h->version != COLL_WIRE_VERSION)
        return "unknown version";
    if ((h->type != COLL_MSG_DATA && h->type != COLL_MSG_ABORT) ||
        (h->flags & ~COLL_FLAG_CREATE) != 0 || h->kind > COLL_KIND_CREATE ||
        ((h->flags & COLL_FLAG_CREATE) != 0) != (h->kind == COLL_KIND_CREATE) ||
        h->connid != h->seq % PAMI_CONNID_BUFFER ||
        (h->type == COLL_MSG_ABORT && data_size != 0) ||
        h->offset > h->total || data_size > h->total - h->offset)
        return "bad type, flags, kind or connid";
    return NULL;
}

static void on_message(pami_context_t ctx, void *cookie, const void *header,
                       size_t header_size, const void *data, size_t data_size,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx;
    coll_ctx_t *cc = cookie;
    coll_hdr_t  h;
    const char *why = coll_hdr_decode(header, header_size, data_size, &h);
    if (why != NULL) {
        drop(cc, why, origin);
        return;
    }
    /* No sender makes a piece larger (PAMI_COLL_PIECE*'s bound, or an
     * eager message below its threshold): a larger size is a forged one,
     * and it would be allocated before the geometry is even known. */
    if (data_size > COLL_MSG_MAX && data_size > cc->rndv_threshold) {
        drop(cc, "payload larger than any piece", origin);
        return;
    }
    pami_task_t task;
    size_t      off;
    if (pami_endpoint_query(origin, &task, &off) != PAMI_SUCCESS ||
        off != cc->offset) {
        drop(cc, "from another context offset", origin);
        return;
    }
    struct pami_geometry *g = coll_geometry_find(cc, h.geom_id);
    /* A creation message for an id whose geometry here finished its own
     * creation is for the next geometry with that id. */
    if (g != NULL && h.kind == COLL_KIND_CREATE && g->created)
        g = NULL;
    if (g == NULL) {
        bool        refused;
        coll_msg_t *m = coll_kept_keep(cc, &h, task, data, data_size, recv,
                                       &refused);
        if (refused)
            return; /* counted in kept_dropped */
        if (m == NULL) {
            drop(cc, "no memory to keep it", origin);
            return;
        }
        cc->st.orphans++;
        *cc->orphans_tail = m;
        cc->orphans_tail  = &m->next;
        return;
    }
    if (h.src_rank >= g->size || g->tasks[h.src_rank] != task) {
        coll_req_t *creq = g->slots[0];
        if (h.kind == COLL_KIND_CREATE && !g->created && creq != NULL &&
            creq->kind == COLL_KIND_CREATE && !creq->completed) {
            /* A member with another list: the creation fails on all. */
            coll_warn("geometry %u: task %u has another task list", g->id,
                      task);
            coll_fail(creq, PAMI_INVAL, true);
            coll_advance(creq);
            return;
        }
        drop(cc, "sender is not that rank of the geometry", origin);
        return;
    }
    coll_deliver(g, &h, task, data, data_size, recv);
}

void coll_send_abort(coll_ctx_t *cc, struct pami_geometry *g, uint32_t seq,
                     uint16_t kind)
{
    coll_hdr_t h = {
        .version = COLL_WIRE_VERSION, .type = COLL_MSG_ABORT,
        .flags = kind == COLL_KIND_CREATE ? COLL_FLAG_CREATE : 0,
        .connid = (uint16_t)(seq % PAMI_CONNID_BUFFER), .kind = kind,
        .geom_id = g->id, .seq = seq, .src_rank = (uint32_t)g->rank};
    for (size_t r = 0; r < g->size; r++) {
        if (r == g->rank)
            continue;
        pami_send_immediate_t im = {.dest = g->eps[r],
                                    .dispatch = 0,
                                    .header = &h, .header_len = sizeof(h)};
        pami_result_t rc = pami_protocol_send_immediate(&cc->env, &im);
        if (rc == PAMI_EAGAIN) {
            pami_send_t s = {.send = im};
            rc = pami_protocol_send(&cc->env, &s);
        }
        if (rc != PAMI_SUCCESS)
            coll_debug("abort of geometry %u seq %u to rank %zu: %s", g->id,
                       seq, r, pami_error_text(rc));
    }
    cc->st.aborts_sent++;
}

static pami_result_t coll_init(const pami_protocol_env_t *env, void **state)
{
    coll_ctx_t *cc = calloc(1, sizeof(*cc));
    if (cc == NULL)
        return PAMI_ENOMEM;
    cc->client   = env->client;
    cc->ctx      = env->context;
    cc->env      = *env;
    cc->offset   = env->context_offset;
    pami_client_attr_t attr = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                             PAMI_CLIENT_ATTR_SIZE |
                                             PAMI_CLIENT_ATTR_LOCAL_TASKS |
                                             PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                             PAMI_CLIENT_ATTR_RNDV_THRESHOLD |
                                             PAMI_CLIENT_ATTR_LOCAL_CPUS};
    pami_result_t rc = pami_client_query(env->client, &attr);
    if (rc != PAMI_SUCCESS) {
        free(cc);
        return rc;
    }
    cc->me            = attr.task;
    cc->ntasks        = attr.size;
    cc->local_tasks   = attr.local_tasks;
    cc->num_local     = attr.num_local_tasks;
    cc->immediate_max = attr.immediate_max;
    cc->rndv_threshold = attr.rndv_threshold;
    cc->spin_ns = attr.num_local_cpus >= attr.num_local_tasks
                      ? 1000 * read_setting("PAMI_COLL_SPIN_US",
                                            COLL_SPIN_US_DEFAULT, 0, 1000000)
                      : 0;
    /* Large messages in pieces fetched in parallel: one big get is slower
     * than several smaller ones in flight at once (docs/collectives.md). */
    cc->piece = read_setting("PAMI_COLL_PIECE", COLL_PIECE, 4096,
                             (size_t)1 << 26);
    if (cc->piece < attr.rndv_threshold)
        cc->piece = attr.rndv_threshold;
    cc->piece_local = read_setting("PAMI_COLL_PIECE_LOCAL", COLL_PIECE_LOCAL,
                                   4096, (size_t)1 << 26);
    if (cc->piece_local < attr.rndv_threshold)
        cc->piece_local = attr.rndv_threshold;
    cc->threshold = (unsigned)read_setting("PAMI_CONNID_THRESHOLD",
                                           COLL_THRESHOLD_DEFAULT, 1,
                                           PAMI_CONNID_BUFFER);
    cc->orphans_tail  = &cc->orphans;
    cc->kept          = coll_kept_new();
    if (cc->kept == NULL) {
        free(cc);
        return PAMI_ENOMEM;
    }
    coll_flow_init(cc);
    cc->gl = coll_global_join(cc, (unsigned)read_setting(
                                      "PAMI_CONNID_GLOBAL_THRESHOLD",
                                      COLL_GLOBAL_THRESHOLD_DEFAULT, 1,
                                      1u << 20));

    pami_task_t *all = malloc(cc->ntasks * sizeof(*all));
    if (all == NULL) {
        coll_global_leave(cc);
        coll_kept_free(cc->kept);
        free(cc);
        return PAMI_ENOMEM;
    }
    for (size_t i = 0; i < cc->ntasks; i++)
        all[i] = (pami_task_t)i;
    rc = coll_geometry_new(cc, 0, all, cc->ntasks, true, &cc->world);
    free(all);
    if (rc == PAMI_SUCCESS)
        rc = pami_protocol_dispatch_set(env, 0, on_message, cc);
    if (rc != PAMI_SUCCESS) {
        if (cc->world != NULL)
            coll_geometry_free(cc->world);
        coll_global_leave(cc);
        coll_kept_free(cc->kept);
        free(cc);
        return rc;
    }
    *state = cc;
    return PAMI_SUCCESS;
}

static void coll_fini(pami_context_t context, void *state)
{
    (void)context;
    coll_ctx_t *cc = state;
    coll_select_context_end(cc);
    for (struct pami_geometry *g = cc->geoms; g != NULL; g = g->next)
        for (size_t i = 0; i < PAMI_CONNID_BUFFER; i++)
            if (g->slots[i] != NULL)
                coll_finish_now(g->slots[i], PAMI_SHUTDOWN);
    while (cc->geoms != NULL)
        coll_geometry_free(cc->geoms);
    for (coll_msg_t *m = cc->orphans, *n; m != NULL; m = n) {
        n = m->next;
        if (m->complete)
            coll_msg_free(m);
        else {
            coll_kept_release(m);
            m->dead = true; /* its get still writes into it */
        }
    }
    coll_pool_fini(cc);
    coll_kept_free(cc->kept);
    coll_global_leave(cc);
    free(cc);
}

static void coll_peer_failed(pami_context_t context, void *state,
                             pami_task_t task)
{
    (void)context;
    coll_ctx_t *cc = state;
    for (struct pami_geometry *g = cc->geoms; g != NULL; g = g->next) {
        if (!coll_task_in(g->tasks, g->size, task))
            continue;
        for (size_t i = 0; i < PAMI_CONNID_BUFFER; i++) {
            coll_req_t *req = g->slots[i];
            if (req == NULL || req->completed)
                continue;
            /* A step that waits on extensions alone (the node segment's
             * data round, a barrier protocol) is theirs to end: each
             * sees the death itself, and what the dead task finished
             * before it died still counts (a ring broadcast whose root
             * wrote its entry and left). The steps after it fail. */
            if (req->ext_pending > 0 && req->recvs_left == 0 &&
                req->sends_left == 0 && req->rdv_pending == 0) {
                req->peer_died = true;
                continue;
            }
            coll_fail(req, PAMI_PEER_FAILED, false);
            coll_kick(req);
        }
    }
}

static size_t coll_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    coll_ctx_t *cc = state;
    uint64_t g_in_use, g_high, g_waits, g_thr, g_over;
    coll_global_stats(cc->gl, &g_in_use, &g_high, &g_waits, &g_thr,
                      &g_over);
    const pami_protocol_stat_t all[] = {
        {"connid_in_use", cc->st.in_use},
        {"connid_high_water", cc->st.high_water},
        {"connid_waits", cc->st.waits},
        {"connid_eagain", cc->st.eagain},
        {"collectives_started", cc->st.started},
        {"collectives_completed", cc->st.completed},
        {"collectives_failed", cc->st.failed},
        {"early_kept", cc->st.early},
        {"unexpected_kept", cc->st.unexpected},
        {"orphans_kept", cc->st.orphans},
        {"kept_dropped", cc->st.kept_dropped},
        {"waiting_now", coll_kept_count(cc)},
        {"waiting_bytes_now", coll_kept_bytes(cc)},
        {"waiting_high_water", cc->st.waiting_high_water},
        {"waiting_bytes_high_water", cc->st.waiting_bytes_high_water},
        {"late_dropped", cc->st.late},
        {"malformed_dropped", cc->st.malformed},
        {"aborts_sent", cc->st.aborts_sent},
        {"aborts_received", cc->st.aborts_received},
        {"large_direct", cc->st.large_direct},
        {"large_staged", cc->st.large_staged},
        {"allocations", cc->st.allocs},
        {"kept_high_water", cc->st.kept_high_water},
        {"requests_high_water", cc->st.reqs_high_water},
        {"schedules_reused", cc->st.cache_hits},
        {"connid_threshold", cc->threshold},
        {"connid_global_in_use", g_in_use},
        {"connid_global_high_water", g_high},
        {"connid_global_waits", g_waits},
        {"connid_global_threshold", g_thr},
        {"connid_global_overruns", g_over},
        {"flow_syncs", cc->st.flow_syncs},
        {"flow_waits", cc->st.flow_waits},
        {"flow_prepended", cc->st.flow_prepended},
    };
    size_t n = sizeof(all) / sizeof(all[0]);
    for (size_t i = 0; i < n && i < max; i++)
        out[i] = all[i];
    return n;
}

const pami_protocol_ops_t coll_protocol_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = "collectives",
    .version      = COLL_WIRE_VERSION,
    .num_dispatch = 1,
    .init         = coll_init,
    .fini         = coll_fini,
    .stats        = coll_stats,
    .peer_failed  = coll_peer_failed,
    .config       = coll_config,
    .num_config   = sizeof(coll_config) / sizeof(coll_config[0]),
};

PAMI_PROTOCOL_BUILTIN(coll_protocol_ops)

/*
 * The hierarchical barrier's part between nodes: node leaders announce
 * themselves once (the only message of this protocol), then meet with
 * pami_barrier_packets. Register side: shm_barrier.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pami_barrier.h"
#include "shm_internal.h"

#define ANNOUNCE_VERSION 1
#define ANNOUNCE_TYPE    1
#define ANNOUNCE_BYTES   16
#define ID_ANNOUNCE      0

const size_t shmb_hier_num_dispatch = 1;

/* The leaders' barrier may complete after this context's state is gone
 * (barrier_packets is finished after this protocol): its callback gets
 * this small record, which fini detaches and the callback frees. */
struct shmb_leaders_call {
    shmb_state_t *st;
};

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static bool is_local(const shmb_state_t *st, pami_task_t t)
{
    for (size_t i = 0; i < st->nlocal; i++)
        if (st->local[i] == t)
            return true;
    return false;
}

static void leaders_complete(shmb_state_t *st)
{
    /* Our own node's leader plus the announced ones, in task order. */
    size_t n = 0;
    for (size_t t = 0; t < st->size; t++)
        if (st->leader_seen[t] || t == st->local[0])
            st->leaders[n++] = (pami_task_t)t;
    st->nleaders      = n;
    st->leaders_ready = true;
    pami_protocol_log(PAMI_PROTOCOL_LOG_DEBUG, SHMB_SUBSYS,
                      "task %" PRIu32 " context %zu: %zu node leaders known",
                      st->me, st->offset, n);
    shmb_engine_kick(st);
}

static pami_result_t bad_packet(shmb_state_t *st, pami_task_t from,
                                const char *why)
{
    shmb_count(st, SHMB_STAT_bad_packets);
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                      "task %" PRIu32 ": announcement from task %" PRIu32
                      " dropped: %s", st->me, from, why);
    return PAMI_ERROR;
}

static void on_announce(pami_context_t context, void *cookie,
                        const void *header, size_t header_size,
                        const void *data, size_t data_size,
                        pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)context;
    (void)data;
    (void)recv;
    shmb_state_t *st = cookie;
    pami_task_t   from = PAMI_ENDPOINT_NULL;
    size_t        from_offset = 0;
    if (pami_endpoint_query(origin, &from, &from_offset) != PAMI_SUCCESS ||
        from >= st->size) {
        bad_packet(st, from, "unknown origin");
        return;
    }
    if (header_size != ANNOUNCE_BYTES || data_size != 0) {
        bad_packet(st, from, "wrong length");
        return;
    }
    const uint8_t *h = header;
    uint32_t leader = get32(h + 4), ntasks = get32(h + 8),
             offset = get32(h + 12);
    size_t   remote = st->size - st->nlocal;
    if (h[0] != ANNOUNCE_VERSION)
        bad_packet(st, from, "unknown version");
    else if (h[1] != ANNOUNCE_TYPE || h[2] != 0 || h[3] != 0)
        bad_packet(st, from, "unknown type or reserved bits set");
    else if (leader != from || is_local(st, leader))
        bad_packet(st, from, "leader is not the sender or is on this node");
    else if (offset != st->offset || from_offset != st->offset)
        bad_packet(st, from, "another context offset");
    else if (st->leader_seen[leader])
        bad_packet(st, from, "announced twice");
    else if (ntasks == 0 || ntasks > remote - st->covered)
        bad_packet(st, from, "more tasks than there are on other nodes");
    else {
        st->leader_seen[leader] = 1;
        st->covered += ntasks;
        if (st->covered == remote)
            leaders_complete(st);
    }
}

/* Leaders only, at their first hierarchical barrier. */
static pami_result_t announce(shmb_state_t *st)
{
    uint8_t h[ANNOUNCE_BYTES] = {ANNOUNCE_VERSION, ANNOUNCE_TYPE, 0, 0};
    put32(h + 4, st->me);
    put32(h + 8, (uint32_t)st->nlocal);
    put32(h + 12, (uint32_t)st->offset);
    for (size_t t = 0; t < st->size; t++) {
        if (is_local(st, (pami_task_t)t))
            continue;
        pami_endpoint_t ep;
        pami_result_t   rc = pami_endpoint_create(st->client, (pami_task_t)t,
                                                  st->offset, &ep);
        if (rc != PAMI_SUCCESS)
            return rc;
        /* pami_protocol_send copies the header and never asks for a retry. */
        pami_send_t s = {.send = {.dest       = ep,
                                  .dispatch   = ID_ANNOUNCE,
                                  .header     = h,
                                  .header_len = sizeof(h)}};
        if ((rc = pami_protocol_send(&st->env, &s)) != PAMI_SUCCESS)
            return rc;
    }
    return PAMI_SUCCESS;
}

static void on_leaders_done(pami_context_t context, void *cookie,
                            pami_result_t rc)
{
    (void)context;
    struct shmb_leaders_call *call = cookie;
    shmb_state_t *st = call->st;
    free(call);
    if (st == NULL)
        return; /* the context's state is gone (fini) */
    st->leaders_call = NULL;
    st->leaders_rc   = rc;
    st->leaders_done = true;
    shmb_engine_kick(st);
}

pami_result_t shmb_hier_leaders(shmb_state_t *st)
{
    if (st->leaders_done) {
        st->leaders_done = false;
        return st->leaders_rc;
    }
    if (st->leaders_call != NULL)
        return PAMI_EAGAIN; /* under way */
    if (!st->announced) {
        st->announced = true;
        pami_result_t rc = announce(st);
        if (rc != PAMI_SUCCESS) {
            pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                              "task %" PRIu32 ": cannot announce itself as "
                              "node leader: %s", st->me, pami_error_text(rc));
            return rc;
        }
    }
    if (!st->leaders_ready)
        return PAMI_EAGAIN; /* on_announce kicks the engine */
    struct shmb_leaders_call *call = malloc(sizeof(*call));
    if (call == NULL)
        return PAMI_ENOMEM;
    call->st = st;
    st->leaders_call = call;
    pami_result_t rc = pami_barrier_packets(st->context, st->leaders,
                                            st->nleaders, on_leaders_done,
                                            call);
    if (rc != PAMI_SUCCESS) {
        st->leaders_call = NULL;
        free(call);
        return rc;
    }
    return PAMI_EAGAIN;
}

pami_result_t shmb_hier_init(shmb_state_t *st, const pami_protocol_env_t *env)
{
    if (st->nlocal == st->size)
        return PAMI_SUCCESS; /* one node: nothing between nodes */
    st->leader_seen = calloc(st->size, 1);
    st->leaders     = calloc(st->size, sizeof(*st->leaders));
    if (st->leader_seen == NULL || st->leaders == NULL)
        return PAMI_ENOMEM;
    return pami_protocol_dispatch_set(env, ID_ANNOUNCE, on_announce, st);
}

void shmb_hier_fini(shmb_state_t *st)
{
    if (st->leaders_call != NULL)
        st->leaders_call->st = NULL;
    st->leaders_call = NULL;
    free(st->leader_seen);
    free(st->leaders);
    st->leader_seen = NULL;
    st->leaders     = NULL;
}

pami_result_t pami_barrier_hier(pami_context_t context, pami_event_fn done_fn,
                                void *cookie)
{
    return shmb_start(context, true, done_fn, cookie);
}

/*
 * Barrier control packets: sending. pami_protocol_send_immediate may answer
 * PAMI_EAGAIN; the packet then waits in a ring, and so does every later
 * one (per-destination order is kept), until posted work sends them from
 * progress. A failed send marks the group failed; the caller completes it.
 */
#include <stdlib.h>

#include "bp_state.h"

static pami_result_t send_one(bp_state_t *st, pami_endpoint_t dest,
                              const bp_packet_t *pkt)
{
    pami_send_immediate_t s = {.dest = dest, .dispatch = 0,
                               .header = pkt, .header_len = sizeof(*pkt)};
    pami_result_t rc = pami_protocol_send_immediate(&st->env, &s);
    if (rc == PAMI_SUCCESS)
        st->stats[BP_STAT_packets_out]++;
    return rc;
}

static void mark_failed(bp_group_t *g, pami_result_t rc)
{
    if (g->failed == PAMI_SUCCESS) {
        bp_log(WARN, "group %016llx: a packet could not be sent: %s",
               (unsigned long long)g->id, pami_error_text(rc));
        g->failed = rc == PAMI_EAGAIN ? PAMI_ERROR : rc;
    }
}

static pami_result_t flush_work(pami_context_t ctx, void *cookie);

static void enqueue(bp_state_t *st, bp_group_t *g, pami_endpoint_t dest,
                    const bp_packet_t *pkt)
{
    if (st->out_len == st->out_cap) {
        size_t    cap = st->out_cap ? 2 * st->out_cap : 64;
        bp_out_t *q   = malloc(cap * sizeof(*q));
        if (q == NULL) {
            mark_failed(g, PAMI_ENOMEM);
            return;
        }
        for (size_t i = 0; i < st->out_len; i++)
            q[i] = st->outq[(st->out_head + i) % st->out_cap];
        free(st->outq);
        st->outq     = q;
        st->out_cap  = cap;
        st->out_head = 0;
    }
    st->outq[(st->out_head + st->out_len) % st->out_cap] =
        (bp_out_t){.dest = dest, .group = g, .pkt = *pkt};
    st->out_len++;
    st->stats[BP_STAT_send_retries]++;
    if (!st->out_posted) {
        st->out_posted = true;
        pami_context_post(st->ctx, &st->out_work, flush_work, st);
    }
}

void bp_send(bp_state_t *st, bp_group_t *g, pami_endpoint_t dest,
             const bp_packet_t *pkt)
{
    if (st->out_len == 0) {
        pami_result_t rc = send_one(st, dest, pkt);
        if (rc == PAMI_SUCCESS)
            return;
        if (rc != PAMI_EAGAIN) {
            mark_failed(g, rc);
            return;
        }
    }
    enqueue(st, g, dest, pkt);
}

/* Posted: sends what waits, in order, until the transport is busy again
 * (then PAMI_EAGAIN queues this work once more). */
static pami_result_t flush_work(pami_context_t ctx, void *cookie)
{
    (void)ctx;
    bp_state_t *st = cookie;
    while (st->out_len > 0) {
        bp_out_t     *o  = &st->outq[st->out_head];
        bp_group_t   *g  = o->group;
        pami_result_t rc = PAMI_SUCCESS;
        if (g->failed == PAMI_SUCCESS) {
            rc = send_one(st, o->dest, &o->pkt);
            if (rc == PAMI_EAGAIN)
                return PAMI_EAGAIN;
        }
        st->out_head = (st->out_head + 1) % st->out_cap;
        st->out_len--;
        if (rc != PAMI_SUCCESS) {
            /* Its done_fns run from posted work too: this loop must not
             * meet a new send of theirs. */
            mark_failed(g, rc);
            bp_advance(g);
            bp_post_delivery(g);
        }
    }
    st->out_posted = false;
    return PAMI_SUCCESS;
}

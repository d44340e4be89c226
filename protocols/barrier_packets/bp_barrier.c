/*
 * Barrier control packets: the barrier counter of each group, the
 * barriers the program started on it, and their completion in order.
 *
 * Epoch cur is the oldest barrier not finished here. Its packets go out
 * only once cur - 1 finished, so a participant that sends a packet of
 * epoch e has finished e - 1, which needed our packet of e - 1: packets
 * can only be of cur or, once we sent ours of cur, of cur + 1. Two
 * counters by parity hold both.
 */
#include <stdlib.h>

#include "bp_state.h"

static void req_done(bp_group_t *g, pami_result_t result)
{
    bp_req_t *r  = g->wait_head;
    g->wait_head = r->next;
    if (g->wait_head == NULL)
        g->wait_tail = &g->wait_head;
    r->next      = NULL;
    r->result    = result;
    *g->done_tail = r;
    g->done_tail  = &r->next;
    g->st->stats[result == PAMI_SUCCESS ? BP_STAT_barriers
                                        : BP_STAT_failed]++;
}

/* Sends this task's packets of epoch cur to every other participant. */
static void send_all(bp_group_t *g)
{
    bp_packet_t pkt = {.version = BP_VERSION, .type = BP_TYPE_ARRIVE,
                       .size = g->size, .epoch = g->cur, .group = g->id};
    for (uint32_t k = 0; k + 1 < g->size && g->failed == PAMI_SUCCESS; k++)
        bp_send(g->st, g, g->peers[k], &pkt);
}

void bp_advance(bp_group_t *g)
{
    while (g->wait_head != NULL && g->failed == PAMI_SUCCESS) {
        int32_t *counter = &g->counter[g->cur & 1];
        if (!g->active) {
            g->active = true;
            *counter += (int32_t)g->size - 1;
            send_all(g);
            if (g->failed != PAMI_SUCCESS)
                break;
        }
        if (*counter != BP_EXIT_VALUE)
            return;
        req_done(g, PAMI_SUCCESS);
        g->cur++;
        g->active = false;
    }
    while (g->wait_head != NULL)
        req_done(g, g->failed);
}

void bp_fail(bp_group_t *g, pami_result_t result)
{
    if (g->failed == PAMI_SUCCESS)
        g->failed = result;
    bp_advance(g);
}

int bp_count(bp_group_t *g, uint32_t epoch)
{
    uint32_t ahead = epoch - g->cur;
    if (ahead > 1 || (ahead == 1 && !g->active))
        return BP_STAT_dropped_epoch;
    int32_t *counter = &g->counter[epoch & 1];
    /* Before entry the counter goes down to -(size - 1), after it to 0. */
    int32_t  floor = ahead == 0 && g->active ? 0 : 1 - (int32_t)g->size;
    if (*counter <= floor)
        return BP_STAT_dropped_excess;
    --*counter;
    g->st->stats[BP_STAT_packets_in]++;
    if (ahead == 0 && g->active && *counter == BP_EXIT_VALUE)
        bp_advance(g);
    return 0;
}

/* Runs the done_fn of finished barriers, oldest first. A done_fn may
 * start the next barrier; what that finishes is run by this same loop. */
void bp_deliver(bp_group_t *g)
{
    if (g->delivering)
        return;
    g->delivering = true;
    bp_state_t *st = g->st;
    bp_req_t   *r;
    while ((r = g->done_head) != NULL) {
        g->done_head = r->next;
        if (g->done_head == NULL)
            g->done_tail = &g->done_head;
        pami_event_fn fn     = r->fn;
        void         *cookie = r->cookie;
        pami_result_t result = r->result;
        r->next       = st->free_reqs;
        st->free_reqs = r;
        if (fn != NULL)
            fn(st->ctx, cookie, result);
    }
    g->delivering = false;
}

static pami_result_t delivery_work(pami_context_t ctx, void *cookie)
{
    (void)ctx;
    bp_group_t *g = cookie;
    g->posted = false;
    bp_deliver(g);
    return PAMI_SUCCESS;
}

/* For completions found where no callback may run (inside the start
 * call): run them from progress. */
void bp_post_delivery(bp_group_t *g)
{
    if (g->posted || g->delivering || g->done_head == NULL)
        return;
    g->posted = true;
    pami_context_post(g->st->ctx, &g->work, delivery_work, g);
}

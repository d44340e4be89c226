/*
 * Barrier control packets (seed 000): the protocol's ops table, its
 * per-context state, and pami_barrier_packets. Wire format and rules:
 * docs/protocols/barrier-packets.md.
 */
#include <stdlib.h>
#include <string.h>

#include "pami_barrier.h"

#include "bp_state.h"

static const pami_protocol_ops_t bp_ops;

static void state_free(bp_state_t *st)
{
    if (st->buckets != NULL)
        bp_groups_free(st);
    for (bp_req_t *r = st->free_reqs, *next; r; r = next) {
        next = r->next;
        free(r);
    }
    free(st->outq);
    free(st->mark);
    free(st->dead);
    free(st);
}

static pami_result_t bp_init(const pami_protocol_env_t *env, void **state)
{
    bp_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->ctx      = env->context;
    st->client   = env->client;
    st->env      = *env;
    pami_client_attr_t attr = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                             PAMI_CLIENT_ATTR_SIZE};
    pami_result_t rc = pami_client_query(env->client, &attr);
    st->offset = (uint32_t)env->context_offset;
    if (rc != PAMI_SUCCESS) {
        state_free(st);
        return rc;
    }
    st->me       = attr.task;
    st->ntasks   = (uint32_t)attr.size;
    st->nbuckets = 64;
    st->buckets  = calloc(st->nbuckets, sizeof(*st->buckets));
    st->mark     = calloc((st->ntasks + 7) / 8, 1);
    st->dead     = calloc((st->ntasks + 7) / 8, 1);
    uint64_t id  = bp_group_seed(st->offset, st->ntasks);
    for (uint32_t t = 0; t < st->ntasks; t++)
        id += bp_group_term(t);
    if (st->buckets == NULL || st->mark == NULL || st->dead == NULL ||
        (st->world = bp_group_new(st, id, st->ntasks)) == NULL ||
        bp_group_enter(st->world, NULL) != PAMI_SUCCESS) {
        state_free(st);
        return PAMI_ENOMEM;
    }
    rc = pami_protocol_dispatch_set(env, 0, bp_on_packet, st);
    if (rc != PAMI_SUCCESS) {
        state_free(st);
        return rc;
    }
    *state = st;
    return PAMI_SUCCESS;
}

/* Every barrier left completes with PAMI_SHUTDOWN (one that finished but
 * whose done_fn had not run yet still gets its own result). */
static void bp_fini(pami_context_t ctx, void *state)
{
    (void)ctx;
    bp_state_t *st = state;
    st->closing = true;
    for (size_t i = 0; i < st->nbuckets; i++)
        for (bp_group_t *g = st->buckets[i]; g; g = g->next) {
            bp_fail(g, PAMI_SHUTDOWN);
            bp_deliver(g);
        }
    state_free(st);
}

static size_t bp_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    static const char *const names[BP_STAT_COUNT] = {
#define BP_STAT_NAME_(name) #name,
        BP_FOREACH_STAT(BP_STAT_NAME_)
#undef BP_STAT_NAME_
    };
    bp_state_t *st = state;
    for (size_t i = 0; i < BP_STAT_COUNT && i < max; i++)
        out[i] = (pami_protocol_stat_t){names[i], st->stats[i]};
    return BP_STAT_COUNT;
}

static bool has_dead(const bp_state_t *st, const bp_group_t *g)
{
    if (st->ndead == 0)
        return false;
    if (g->world)
        return true;
    for (uint32_t i = 0; i < g->size; i++)
        if (bp_bit(st->dead, g->members[i]))
            return true;
    return false;
}

/* Every barrier of a group with task in it ends with PAMI_PEER_FAILED,
 * now and from then on. The done_fns run from posted work: one of them
 * may start a barrier on a new group while this walks the table. */
static void bp_peer_failed(pami_context_t ctx, void *state, pami_task_t task)
{
    (void)ctx;
    bp_state_t *st = state;
    if (task >= st->ntasks || bp_bit(st->dead, task))
        return;
    bp_bit_set(st->dead, task);
    st->ndead++;
    for (size_t i = 0; i < st->nbuckets; i++)
        for (bp_group_t *g = st->buckets[i]; g; g = g->next)
            if (g->known && bp_group_has(g, task)) {
                bp_fail(g, PAMI_PEER_FAILED);
                bp_post_delivery(g);
            }
}

static const pami_protocol_ops_t bp_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = BP_NAME,
    .version      = BP_VERSION,
    .num_dispatch = 1,
    .init         = bp_init,
    .fini         = bp_fini,
    .stats        = bp_stats,
    .peer_failed  = bp_peer_failed,
};
PAMI_PROTOCOL_BUILTIN(bp_ops)

/* ---- pami_barrier_packets ---- */

/* The group of an explicit task list, made and entered if new. */
static pami_result_t list_group(bp_state_t *st, const pami_task_t *tasks,
                                size_t ntasks, bp_group_t **out)
{
    if (ntasks == 0 || ntasks > st->ntasks) {
        bp_log(WARN, "barrier over %zu tasks in a job of %u", ntasks,
               st->ntasks);
        return PAMI_INVAL;
    }
    uint64_t id = bp_group_seed(st->offset, (uint32_t)ntasks);
    bool     me_in = false, dup = false;
    size_t   i;
    for (i = 0; i < ntasks && tasks[i] < st->ntasks && !dup; i++) {
        dup = bp_bit(st->mark, tasks[i]);
        bp_bit_set(st->mark, tasks[i]);
        me_in |= tasks[i] == st->me;
        id += bp_group_term(tasks[i]);
    }
    for (size_t k = 0; k < i; k++)
        bp_bit_clear(st->mark, tasks[k]);
    if (i < ntasks || dup || !me_in) {
        bp_log(WARN, "barrier over a bad task list: %s",
               dup ? "a task is listed twice"
                   : !me_in && i == ntasks ? "this task is not in it"
                                           : "a task is beyond the job");
        return PAMI_INVAL;
    }

    bp_group_t *g = bp_group_find(st, id);
    bool foreign = g != NULL && !g->known;
    if (g != NULL && g->known) {
        bool same = g->size == ntasks;
        for (size_t k = 0; same && !g->world && k < ntasks; k++)
            same = bp_group_has(g, tasks[k]);
        if (!same) {
            bp_log(ERROR, "task list collides with another group's id "
                          "%016llx", (unsigned long long)id);
            return PAMI_INVAL;
        }
        *out = g;
        return PAMI_SUCCESS;
    }
    if (g == NULL) {
        g = bp_group_new(st, id, (uint32_t)ntasks);
        if (g == NULL)
            return PAMI_ENOMEM;
    } else {
        /* Made by packets; a size unlike ours means they were wrong. */
        if (g->size != ntasks) {
            bp_log(WARN, "group %016llx: packets said %u participants, "
                         "this task lists %zu; their counts are dropped",
                   (unsigned long long)id, g->size, ntasks);
            st->stats[BP_STAT_dropped_size] +=
                (uint64_t)-(int64_t)(g->counter[0] + g->counter[1]);
            g->counter[0] = g->counter[1] = 0;
            g->size = (uint32_t)ntasks;
        }
        st->nforeign--;
    }
    pami_result_t rc = bp_group_enter(g, tasks);
    if (rc == PAMI_SUCCESS)
        *out = g;
    else if (foreign)
        st->nforeign++; /* still not entered */
    return rc;
}

pami_result_t pami_barrier_packets(pami_context_t context,
                                   const pami_task_t *tasks, size_t ntasks,
                                   pami_event_fn done_fn, void *cookie)
{
    bp_state_t *st = pami_protocol_state(context, &bp_ops);
    if (st == NULL) {
        bp_log(WARN, "pami_barrier_packets on %s",
               context ? "a context without the protocol" : "a NULL context");
        return PAMI_INVAL;
    }
    if (st->closing)
        return PAMI_SHUTDOWN;
    bp_group_t   *g  = st->world;
    pami_result_t rc = PAMI_SUCCESS;
    if (tasks != NULL)
        rc = list_group(st, tasks, ntasks, &g);
    else if (ntasks != 0) {
        bp_log(WARN, "pami_barrier_packets: tasks NULL with ntasks %zu",
               ntasks);
        rc = PAMI_INVAL;
    }
    if (rc != PAMI_SUCCESS)
        return rc;

    bp_req_t *r = st->free_reqs;
    if (r != NULL)
        st->free_reqs = r->next;
    else if ((r = malloc(sizeof(*r))) == NULL)
        return PAMI_ENOMEM;
    *r = (bp_req_t){.fn = done_fn, .cookie = cookie};
    *g->wait_tail = r;
    g->wait_tail  = &r->next;
    if (g->failed == PAMI_SUCCESS && has_dead(st, g))
        g->failed = PAMI_PEER_FAILED;
    bp_advance(g);
    bp_post_delivery(g);
    return PAMI_SUCCESS;
}

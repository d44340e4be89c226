/*
 * Barrier control packets: the groups of a context, in a chained hash
 * table by group id. A group lives until the context is destroyed.
 */
#include <stdlib.h>
#include <string.h>

#include "bp_state.h"

bp_group_t *bp_group_find(bp_state_t *st, uint64_t id)
{
    for (bp_group_t *g = st->buckets[id & (st->nbuckets - 1)]; g; g = g->next)
        if (g->id == id)
            return g;
    return NULL;
}

/* Doubles the table when it holds twice as many groups as buckets. */
static void grow(bp_state_t *st)
{
    size_t       n = st->nbuckets * 2;
    bp_group_t **b = calloc(n, sizeof(*b));
    if (b == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < st->nbuckets; i++)
        for (bp_group_t *g = st->buckets[i], *next; g; g = next) {
            next    = g->next;
            g->next = b[g->id & (n - 1)];
            b[g->id & (n - 1)] = g;
        }
    free(st->buckets);
    st->buckets  = b;
    st->nbuckets = n;
}

bp_group_t *bp_group_new(bp_state_t *st, uint64_t id, uint32_t size)
{
    bp_group_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->st        = st;
    g->id        = id;
    g->size      = size;
    g->failed    = PAMI_SUCCESS;
    g->wait_tail = &g->wait_head;
    g->done_tail = &g->done_head;
    if (st->ngroups >= 2 * st->nbuckets)
        grow(st);
    size_t b = id & (st->nbuckets - 1);
    g->next        = st->buckets[b];
    st->buckets[b] = g;
    st->ngroups++;
    st->stats[BP_STAT_groups]++;
    return g;
}

static int by_task(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Fills members (sorted) and peers: the others, starting after this task
 * around the sorted ring, so the tasks do not all send to the same one
 * first. tasks == NULL for the world. */
pami_result_t bp_group_enter(bp_group_t *g, const pami_task_t *tasks)
{
    bp_state_t *st = g->st;
    uint32_t    n  = g->size;
    if (tasks != NULL) {
        g->members = malloc(n * sizeof(*g->members));
        if (g->members == NULL)
            return PAMI_ENOMEM;
        memcpy(g->members, tasks, n * sizeof(*g->members));
        qsort(g->members, n, sizeof(*g->members), by_task);
    }
    g->peers = malloc((n > 1 ? n - 1 : 1) * sizeof(*g->peers));
    if (g->peers == NULL) {
        free(g->members);
        g->members = NULL;
        return PAMI_ENOMEM;
    }
    uint32_t pos = 0;
    if (tasks != NULL)
        while (g->members[pos] != st->me)
            pos++;
    else
        pos = st->me;
    for (uint32_t k = 1; k < n; k++) {
        uint32_t i = (pos + k) % n;
        uint32_t t = tasks != NULL ? g->members[i] : i;
        pami_endpoint_create(st->client, t, st->offset, &g->peers[k - 1]);
    }
    g->world = tasks == NULL;
    g->known = true;
    return PAMI_SUCCESS;
}

bool bp_group_has(const bp_group_t *g, uint32_t task)
{
    if (g->world)
        return task < g->size;
    size_t lo = 0, hi = g->size;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->members[mid] == task)
            return true;
        if (g->members[mid] < task)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

void bp_groups_free(bp_state_t *st)
{
    for (size_t i = 0; i < st->nbuckets; i++)
        for (bp_group_t *g = st->buckets[i], *next; g; g = next) {
            next = g->next;
            free(g->members);
            free(g->peers);
            free(g);
        }
    free(st->buckets);
    st->buckets = NULL;
    st->world   = NULL;
}

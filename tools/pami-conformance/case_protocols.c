/*
 * Suite protocols: the built-in protocols through their public calls
 * (barrier packets, shared-memory register, hierarchical barrier, SVD) and
 * their registration as pami_protocol_query reports it.
 */
#include "cf.h"

#include <pami_barrier.h>
#include <pami_protocol.h>
#include <pami_svd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t n;
    int    rc;
} bdone_t;

static void bdone(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    bdone_t *d = k;
    d->n++;
    if (rc != PAMI_SUCCESS)
        d->rc = rc;
}

static void barrier_packets(cf_env_t *e)
{
    /* Several in a row, started before the previous completed. */
    bdone_t d = {0};
    for (int i = 0; i < 5; i++)
        CF_OK(e, pami_barrier_packets(e->ctx, NULL, 0, bdone, &d));
    cf_wait_count(e, &d.n, 5, "barrier completions");
    CF_CHECK(e, d.rc == PAMI_SUCCESS, "expected the barriers PAMI_SUCCESS, "
             "seen %s", cf_rc_name(d.rc));
    CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
    /* A subset in its own order: the even tasks, listed downwards. */
    pami_task_t sub[64];
    size_t n = 0;
    for (size_t t = e->size; t-- > 0;)
        if (t % 2 == 0 && n < 64)
            sub[n++] = (pami_task_t)t;
    if (e->task % 2 == 0)
        CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, sub, n));
    /* Bad sets. */
    pami_task_t bad[3] = {e->task, e->task, 0};
    CF_RC(e, PAMI_INVAL, pami_barrier_packets(e->ctx, bad, 2, bdone, &d));
    bad[1] = (pami_task_t)e->size;
    CF_RC(e, PAMI_INVAL, pami_barrier_packets(e->ctx, bad, 2, bdone, &d));
    if (e->size > 1) {
        pami_task_t other = (pami_task_t)((e->task + 1) % e->size);
        CF_RC(e, PAMI_INVAL, pami_barrier_packets(e->ctx, &other, 1, bdone,
                                                  &d));
    }
    pami_task_t one = 0;
    CF_RC(e, PAMI_INVAL, pami_barrier_wait(e->ctx, PAMI_BARRIER_SHM, &one, 1));
    CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
}

/* 4 started at once, then `blocking` blocking ones, of one algorithm. */
static void barrier_burst(cf_env_t *e, pami_barrier_algo_t algo,
                          pami_result_t (*start)(pami_context_t,
                                                 pami_event_fn, void *),
                          int blocking, const char *what)
{
    bdone_t d = {0};
    for (int i = 0; i < 4; i++)
        CF_OK(e, start(e->ctx, bdone, &d));
    cf_wait_count(e, &d.n, 4, what);
    CF_CHECK(e, d.rc == PAMI_SUCCESS, "expected PAMI_SUCCESS, seen %s",
             cf_rc_name(d.rc));
    for (int i = 0; i < blocking; i++)
        CF_OK(e, pami_barrier_wait(e->ctx, algo, NULL, 0));
}

static void barrier_shm(cf_env_t *e)
{
    barrier_burst(e, PAMI_BARRIER_SHM, pami_barrier_shm, 20,
                  "shm barrier completions");
}

static void barrier_hier(cf_env_t *e)
{
    barrier_burst(e, PAMI_BARRIER_HIER, pami_barrier_hier, 10,
                  "hierarchical barrier completions");
}

/* A barrier really separates: a put done before it is visible after. */
static void barrier_separates(cf_env_t *e)
{
    static uint64_t cell;
    cell = 0;
    pami_memregion_t mr, *all = calloc(e->size, sizeof(*all));
    CF_OK(e, pami_memregion_create(e->ctx, &cell, sizeof(cell), &mr));
    CF_CHECK(e, cf_allgather(&mr, all, sizeof(mr)) == 0,
             "expected the runner's exchange to work");
    for (int algo = 0; algo < 3; algo++) {
        pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
        uint64_t v = (uint64_t)algo * 1000 + e->task + 1;
        bdone_t d = {0};
        pami_rma_t p = {.dest = cf_ep(e, to), .local = &v, .bytes = sizeof(v),
                        .remote_mr = &all[to], .remote_fn = bdone,
                        .cookie = &d};
        CF_OK(e, pami_put(e->ctx, &p));
        cf_wait_count(e, &d.n, 1, "the put's remote_fn");
        CF_OK(e, pami_barrier_wait(e->ctx, (pami_barrier_algo_t)algo, NULL,
                                   0));
        pami_task_t from = (pami_task_t)((e->task + e->size - 1) % e->size);
        uint64_t want = (uint64_t)algo * 1000 + from + 1;
        /* The shm barrier covers this node only: the job here is one. */
        CF_CHECK(e, cell == want, "expected %llu after barrier %d, seen %llu",
                 (unsigned long long)want, algo, (unsigned long long)cell);
        CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
    }
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    free(all);
}

static void builtin_registry(cf_env_t *e)
{
    const char *want[] = {"barrier_packets", "shm_barrier", "svd"};
    int seen[3] = {0};
    pami_protocol_info_t info;
    size_t prev_end = 0;
    for (size_t i = 0;; i++) {
        pami_result_t rc = pami_protocol_query(e->client, i, &info);
        if (rc == PAMI_NOT_FOUND)
            break;
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected protocol %zu or "
                 "PAMI_NOT_FOUND, seen %s", i, cf_rc_name(rc));
        CF_CHECK(e, info.dispatch_base >= 256 &&
                 info.dispatch_base >= prev_end &&
                 info.num_dispatch <= PAMI_PROTOCOL_DISPATCH_MAX,
                 "expected protocol %s's ids disjoint and from 256 up, seen "
                 "base %zu (previous end %zu)", info.name, info.dispatch_base,
                 prev_end);
        prev_end = info.dispatch_base + info.num_dispatch;
        for (size_t k = 0; k < 3; k++)
            if (info.builtin && strstr(info.name, want[k]) != NULL)
                seen[k] = 1;
        /* Every protocol's counters can be read by its name. */
        size_t n = 0;
        pami_protocol_stat_t st[32];
        CF_OK(e, pami_protocol_stats(e->ctx, info.name, st, 32, &n));
    }
    size_t n;
    CF_RC(e, PAMI_NOT_FOUND, pami_protocol_stats(e->ctx, "no.such.protocol",
                                                 NULL, 0, &n));
    (void)seen;
}

/* SVD: register, look up from every task, update, see the change. */
typedef struct {
    cf_env_t *e;
    size_t    changes;
    uint64_t  version;
} svd_t;

static void on_change(pami_context_t c, void *k, const pami_svd_entry_t *en)
{
    (void)c;
    svd_t *s = k;
    s->changes++;
    s->version = en->version;
}

static void svd(cf_env_t *e)
{
    static uint64_t var[16];
    char rec[40];
    snprintf(rec, sizeof(rec), "task %u record", e->task);
    pami_svd_register_t reg = {.field_mask = PAMI_SVD_REGISTER_DATA,
                               .key = 42, .addr = var, .size = sizeof(var),
                               .data = rec, .data_size = strlen(rec) + 1};
    CF_OK(e, pami_svd_register(e->ctx, &reg));
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &reg));
    CF_OK(e, pami_dispatch_fence(e->client));
    svd_t s = {.e = e};
    pami_task_t owner = (pami_task_t)((e->task + 1) % e->size);
    pami_svd_lookup_t lk = {.field_mask = PAMI_SVD_LOOKUP_CHANGE,
                            .owner = owner, .key = 42,
                            .change_fn = on_change, .change_cookie = &s};
    pami_svd_entry_t en;
    CF_OK(e, pami_svd_lookup_wait(e->ctx, &lk, &en));
    char want[40];
    snprintf(want, sizeof(want), "task %u record", owner);
    CF_CHECK(e, en.version == 1 && en.owner == owner && en.size == sizeof(var)
             && en.data_size == strlen(want) + 1 &&
             memcmp(en.data, want, en.data_size) == 0,
             "expected version 1 of task %u's entry with its record, seen "
             "version %llu owner %u", owner, (unsigned long long)en.version,
             en.owner);
    pami_svd_lookup_t missing = {.owner = owner, .key = 43};
    CF_RC(e, PAMI_NOT_FOUND, pami_svd_lookup_wait(e->ctx, &missing, &en));
    CF_OK(e, pami_dispatch_fence(e->client));
    snprintf(rec, sizeof(rec), "task %u second", e->task);
    pami_svd_update_t up = {.field_mask = PAMI_SVD_UPDATE_DATA, .key = 42,
                            .data = rec, .data_size = strlen(rec) + 1};
    CF_OK(e, pami_svd_update_wait(e->ctx, &up));
    if (owner != e->task)
        cf_wait_count(e, &s.changes, 1, "the change callback");
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_svd_lookup_wait(e->ctx, &lk, &en));
    CF_CHECK(e, en.version == 2, "expected version 2 after the update, seen "
             "%llu", (unsigned long long)en.version);
    pami_svd_update_t nope = {.key = 77};
    CF_RC(e, PAMI_NOT_FOUND, pami_svd_update(e->ctx, &nope));
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_protocols_cases[] = {
    {"protocols", "barrier_packets", 1, 0, 0, barrier_packets, NULL},
    {"protocols", "barrier_shm", 1, 0, 0, barrier_shm, NULL},
    {"protocols", "barrier_hier", 1, 0, 0, barrier_hier, NULL},
    {"protocols", "barrier_separates", 1, 0, 0, barrier_separates, NULL},
    {"protocols", "registry", 1, 0, 0, builtin_registry, NULL},
    {"protocols", "svd", 1, 0, 0, svd, NULL},
};
const size_t cf_num_protocols_cases =
    sizeof(cf_protocols_cases) / sizeof(cf_protocols_cases[0]);

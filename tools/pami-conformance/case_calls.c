/*
 * Suite core, the calls one by one: what each function of pami.h gives
 * for each kind of bad argument (docs/api.md's result tables), the sized
 * entry points and field masks (docs/abi.md), the client's attributes,
 * the configuration table against docs/config.md, endpoints, posted work,
 * the context lock and the counters. Each case names the sentences it
 * checks in docs/conformance.md.
 */
#include "cf.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIELD_END(type, field)                                               \
    (offsetof(type, field) + sizeof(((type *)0)->field))

typedef struct {
    cf_env_t *e;
    size_t    got;
    size_t    last_header;
    int       data_null;
    size_t    local, remote;
    pami_result_t local_rc, remote_rc;
    int       order_bad; /* remote_fn before local_fn */
} calls_t;

static void on_msg(pami_context_t c, void *k, const void *h, size_t hs,
                   const void *d, size_t ds, pami_endpoint_t o,
                   pami_recv_t *r)
{
    (void)c; (void)h; (void)o;
    calls_t *s = k;
    s->last_header = hs;
    s->data_null = d == NULL && ds > 0;
    if (r != NULL)
        r->addr = NULL; /* discard: only the arrival matters here */
    s->got++;
}

static void on_local(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    calls_t *s = k;
    s->local_rc = rc;
    s->local++;
}

static void on_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    calls_t *s = k;
    if (s->local == 0)
        s->order_bad = 1;
    s->remote_rc = rc;
    s->remote++;
}

/* For a layout whose cookie lies past the size: pami passes NULL. */
static size_t nocookie_calls, nocookie_nonnull;

static void on_local_nocookie(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)rc;
    nocookie_calls++;
    if (k != NULL)
        nocookie_nonnull++;
}

static pami_result_t nop_work(pami_context_t c, void *k)
{
    (void)c; (void)k;
    return PAMI_SUCCESS;
}

/* ---- null_arguments ---- */

static void null_arguments(cf_env_t *e)
{
    pami_context_stats_t st;
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK};
    pami_work_t w;
    pami_endpoint_t ep;
    CF_RC(e, PAMI_INVAL, pami_context_advance(NULL, 1));
    CF_RC(e, PAMI_INVAL, pami_context_wait(NULL, 0));
    CF_RC(e, PAMI_INVAL, pami_context_lock(NULL));
    CF_RC(e, PAMI_INVAL, pami_context_trylock(NULL));
    CF_RC(e, PAMI_INVAL, pami_context_unlock(NULL));
    CF_RC(e, PAMI_INVAL, pami_context_post(NULL, &w, nop_work, NULL));
    CF_RC(e, PAMI_INVAL, pami_context_post(e->ctx, NULL, nop_work, NULL));
    CF_RC(e, PAMI_INVAL, pami_context_post(e->ctx, &w, NULL, NULL));
    CF_RC(e, PAMI_INVAL, pami_context_stats(NULL, &st));
    CF_RC(e, PAMI_INVAL, pami_context_stats(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_client_query(NULL, &a));
    CF_RC(e, PAMI_INVAL, pami_client_query(e->client, NULL));
    CF_RC(e, PAMI_INVAL, pami_endpoint_create(NULL, 0, 0, &ep));
    CF_RC(e, PAMI_INVAL, pami_endpoint_create(e->client, 0, 0, NULL));
    CF_RC(e, PAMI_INVAL, pami_dispatch_fence(NULL));
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_send(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_config_var(0, NULL));
    CF_RC(e, PAMI_INVAL, pami_client_destroy(NULL));
    pami_client_t none = NULL;
    CF_RC(e, PAMI_INVAL, pami_client_destroy(&none));
    pami_context_t nctx = NULL;
    CF_RC(e, PAMI_INVAL, pami_context_destroyv(NULL, 1));
    CF_RC(e, PAMI_INVAL, pami_context_destroyv(&nctx, 1));
    pami_context_t copy = e->ctx;
    CF_RC(e, PAMI_INVAL, pami_context_destroyv(&copy, 0));
    CF_CHECK(e, copy == e->ctx, "expected a refused destroyv to leave the "
             "array alone");
    CF_RC(e, PAMI_INVAL, pami_put(NULL, NULL));
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_get(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_rput(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_rget(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_rmw(e->ctx, NULL));
    CF_RC(e, PAMI_INVAL, pami_fence_all(NULL, NULL, NULL));
    CF_RC(e, PAMI_INVAL, pami_fence_endpoint(NULL, cf_ep(e, e->task), NULL,
                                             NULL));
    CF_RC(e, PAMI_INVAL, pami_memregion_map(e->ctx, NULL, (void **)&a));
    /* The context still works after all of that. */
    calls_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, 7, on_msg, &s, NULL));
    pami_send_immediate_t m = {.dest = cf_ep(e, e->task), .dispatch = 7};
    CF_OK(e, cf_send_immediate(e, &m));
    cf_wait_count(e, &s.got, 1, "an empty self message");
    CF_OK(e, pami_dispatch_set(e->ctx, 7, NULL, NULL, NULL));
}

/* ---- sized_params ---- */

static void sized_params(cf_env_t *e)
{
    calls_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, 9, on_msg, &s, NULL));
    pami_endpoint_t self = cf_ep(e, e->task);
    static const uint8_t hdr[16] = {1, 2, 3};
    pami_send_immediate_t m = {.dest = self, .dispatch = 9, .header = hdr,
                               .header_len = sizeof(hdr)};
    /* Refused: shorter than the required fields, inside a field, longer
     * than this pami's struct, zero. */
    size_t bad_imm[] = {0, FIELD_END(pami_send_immediate_t, dest),
                        FIELD_END(pami_send_immediate_t, dispatch) + 1,
                        sizeof(m) + 8};
    for (size_t i = 0; i < sizeof(bad_imm) / sizeof(bad_imm[0]); i++)
        CF_RC(e, PAMI_INVAL, pami_send_immediate_sized(e->ctx, &m,
                                                       bad_imm[i]));
    /* Accepted: ending at dispatch, the rest read as zero (no header). */
    CF_OK(e, pami_send_immediate_sized(
                 e->ctx, &m, FIELD_END(pami_send_immediate_t, dispatch)));
    cf_wait_count(e, &s.got, 1, "the message of a short layout");
    CF_CHECK(e, s.last_header == 0, "expected the fields past the size read "
             "as zero (no header), seen a header of %zu bytes",
             s.last_header);
    CF_OK(e, pami_send_immediate_sized(
                 e->ctx, &m, FIELD_END(pami_send_immediate_t, header_len)));
    cf_wait_count(e, &s.got, 2, "the message ending at header_len");
    CF_CHECK(e, s.last_header == sizeof(hdr), "expected the %zu-byte header, "
             "seen %zu", sizeof(hdr), s.last_header);
    /* pami_send needs all of send; callbacks past the size are none. */
    pami_send_t sd = {.send = m, .local_fn = on_local, .remote_fn = on_remote,
                      .cookie = &s};
    CF_RC(e, PAMI_INVAL, pami_send_sized(e->ctx, &sd,
                                         sizeof(pami_send_immediate_t) - 8));
    CF_RC(e, PAMI_INVAL, pami_send_sized(e->ctx, &sd, sizeof(sd) + 8));
    CF_OK(e, pami_send_sized(e->ctx, &sd, sizeof(pami_send_immediate_t)));
    cf_wait_count(e, &s.got, 3, "the send of the short layout");
    sd.local_fn = on_local_nocookie;
    CF_OK(e, pami_send_sized(e->ctx, &sd, FIELD_END(pami_send_t, local_fn)));
    cf_wait_count(e, &s.got, 4, "the send ending at local_fn");
    cf_wait_count(e, &nocookie_calls, 1, "its local_fn");
    CF_CHECK(e, nocookie_nonnull == 0, "expected the cookie past the size "
             "read as NULL");
    /* By now the earlier send would have called its callbacks, had pami
     * read them past the size. */
    CF_CHECK(e, s.remote == 0 && s.local == 0, "expected no callback past "
             "the size given, seen %zu local, %zu remote", s.local, s.remote);
    /* Structs pami fills: only the bytes of the size given are written. */
    pami_context_stats_t st;
    memset(&st, 0xa5, sizeof(st));
    CF_OK(e, pami_context_stats_sized(e->ctx, &st,
                                      FIELD_END(pami_context_stats_t, sends)));
    CF_CHECK(e, st.sends >= 4 && st.receives == 0xa5a5a5a5a5a5a5a5ull,
             "expected only sends written (>= 4), seen sends %llu, receives "
             "%llx", (unsigned long long)st.sends,
             (unsigned long long)st.receives);
    CF_RC(e, PAMI_INVAL, pami_context_stats_sized(e->ctx, &st, 4));
    CF_RC(e, PAMI_INVAL, pami_context_stats_sized(e->ctx, &st,
                                                  sizeof(st) + 8));
    pami_config_var_t v;
    memset(&v, 0xa5, sizeof(v));
    CF_OK(e, pami_config_var_sized(0, &v,
                                   FIELD_END(pami_config_var_t, name)));
    const char *poison;
    memset(&poison, 0xa5, sizeof(poison));
    CF_CHECK(e, v.name != NULL && v.default_value == poison,
             "expected only name written for a one-field layout");
    CF_RC(e, PAMI_INVAL, pami_config_var_sized(0, &v, 3));
    /* RMA: required dest .. remote_offset (put), dest .. value (rmw). */
    static uint64_t cell[2] __attribute__((aligned(8)));
    cell[0] = 0;
    cell[1] = 0;
    uint64_t one = 0x1122334455667788ull;
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, cell, sizeof(cell), &mr));
    pami_rma_t p = {.dest = self, .local = &one, .bytes = 8,
                    .remote_mr = &mr, .remote_offset = 0,
                    .local_fn = on_local, .cookie = &s};
    CF_RC(e, PAMI_INVAL, pami_put_sized(e->ctx, &p,
                                        FIELD_END(pami_rma_t, remote_mr)));
    CF_RC(e, PAMI_INVAL, pami_put_sized(e->ctx, &p, sizeof(p) + 8));
    CF_OK(e, pami_put_sized(e->ctx, &p, FIELD_END(pami_rma_t, remote_offset)));
    calls_t f = {.e = e};
    CF_OK(e, pami_fence_all(e->ctx, on_local, &f));
    cf_wait_count(e, &f.local, 1, "the fence after a short-layout put");
    CF_CHECK(e, cell[0] == one, "expected the short-layout put's data, seen "
             "%llx", (unsigned long long)cell[0]);
    pami_rmw_t r = {.dest = self, .remote_mr = &mr, .remote_offset = 8,
                    .op = PAMI_RMW_ADD, .size = 8, .value = 5};
    CF_RC(e, PAMI_INVAL, pami_rmw_sized(e->ctx, &r,
                                        FIELD_END(pami_rmw_t, size)));
    CF_OK(e, pami_rmw_sized(e->ctx, &r, FIELD_END(pami_rmw_t, value)));
    CF_OK(e, pami_fence_all(e->ctx, on_local, &f));
    cf_wait_count(e, &f.local, 2, "the fence after a short-layout rmw");
    CF_CHECK(e, cell[1] == 5, "expected the short-layout add's 5, seen %llu",
             (unsigned long long)cell[1]);
    CF_CHECK(e, s.local == 0, "expected no local_fn past the size of the put, "
             "seen %zu", s.local);
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
}

/* ---- context_calls (the case makes its contexts) ---- */

static void context_calls(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS};
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.num_contexts == 0, "expected num_contexts 0 before "
             "createv, seen %zu", a.num_contexts);
    pami_context_t c[PAMI_CONTEXT_MAX + 1];
    pami_context_params_t bad = {.field_mask = 1};
    CF_RC(e, PAMI_INVAL, pami_context_createv(NULL, NULL, 1, c));
    CF_RC(e, PAMI_INVAL, pami_context_createv(e->client, NULL, 1, NULL));
    CF_RC(e, PAMI_INVAL, pami_context_createv(e->client, NULL, 0, c));
    CF_RC(e, PAMI_INVAL, pami_context_createv(e->client, NULL,
                                              PAMI_CONTEXT_MAX + 1, c));
    CF_RC(e, PAMI_INVAL, pami_context_createv(e->client, &bad, 1, c));
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.num_contexts == 0, "expected no context after refused "
             "createv calls, seen %zu", a.num_contexts);
    pami_context_params_t zero = {0};
    CF_OK(e, pami_context_createv(e->client, &zero, 2, e->contexts));
    e->ncontexts = 2;
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.num_contexts == 2, "expected num_contexts 2, seen %zu",
             a.num_contexts);
    CF_RC(e, PAMI_INVAL, pami_context_createv(e->client, NULL, 1, c));
    /* Not the client's set: one of two, or the two swapped. */
    pami_context_t part[2] = {e->contexts[0], e->contexts[1]};
    CF_RC(e, PAMI_INVAL, pami_context_destroyv(part, 1));
    pami_context_t swapped[2] = {e->contexts[1], e->contexts[0]};
    pami_result_t rc = pami_context_destroyv(swapped, 2);
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for a reordered "
             "array (\"the exact array createv filled\"), seen %s",
             cf_rc_name(rc));
    CF_CHECK(e, part[0] == e->contexts[0] && part[1] == e->contexts[1],
             "expected a refused destroyv to leave the array alone");
    /* The first element right, a later one NULL or repeated. */
    pami_context_t holed[2] = {e->contexts[0], NULL};
    rc = pami_context_destroyv(holed, 2);
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for {contexts[0], "
             "NULL}, seen %s", cf_rc_name(rc));
    pami_context_t twice[2] = {e->contexts[0], e->contexts[0]};
    rc = pami_context_destroyv(twice, 2);
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for {contexts[0], "
             "contexts[0]}, seen %s", cf_rc_name(rc));
    CF_CHECK(e, holed[0] == e->contexts[0] && twice[1] == e->contexts[0],
             "expected refused destroyv calls to leave their arrays alone");
    /* Dispatch hints with an unknown bit, on a live context. */
    pami_dispatch_hint_t h = {.field_mask = 1ull << 40};
    CF_RC(e, PAMI_INVAL, pami_dispatch_set(e->contexts[0], 1, on_msg, NULL,
                                           &h));
    h.field_mask = 0;
    CF_OK(e, pami_dispatch_set(e->contexts[0], 1, on_msg, NULL, &h));
    CF_OK(e, pami_dispatch_set(e->contexts[0], 1, NULL, NULL, NULL));
    /* Offset 1 now exists; offset 2 still passes endpoint_create and is
     * refused by the send. */
    pami_endpoint_t ep2;
    CF_OK(e, pami_endpoint_create(e->client, e->task, 2, &ep2));
    pami_send_immediate_t m = {.dest = ep2, .dispatch = 1};
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->contexts[0], &m));
    CF_OK(e, pami_context_destroyv(e->contexts, 2));
    e->ncontexts = 0;
    CF_CHECK(e, e->contexts[0] == NULL && e->contexts[1] == NULL,
             "expected destroyv to set every element NULL");
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.num_contexts == 0, "expected num_contexts 0 after "
             "destroyv, seen %zu", a.num_contexts);
}

/* ---- client_attributes ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void client_attributes(cf_env_t *e)
{
    pami_client_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = 1ull << 50;
    a.task = 12345;
    CF_RC(e, PAMI_INVAL, pami_client_query(e->client, &a));
    a.field_mask = (1ull << 50) | PAMI_CLIENT_ATTR_TASK;
    CF_RC(e, PAMI_INVAL, pami_client_query(e->client, &a));
    CF_CHECK(e, a.task == 12345, "expected nothing filled for an unknown "
             "bit, seen task %u", a.task);
    /* Only the fields asked for are filled. */
    a.field_mask = PAMI_CLIENT_ATTR_TASK;
    a.size = 777;
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.task == e->task && a.size == 777, "expected task %u and "
             "size untouched, seen %u and %zu", e->task, a.task, a.size);
    memset(&a, 0, sizeof(a));
    a.field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |
                   PAMI_CLIENT_ATTR_LOCAL_TASKS |
                   PAMI_CLIENT_ATTR_NUM_CONTEXTS | PAMI_CLIENT_ATTR_NAME |
                   PAMI_CLIENT_ATTR_BOOTSTRAP | PAMI_CLIENT_ATTR_TRANSPORT |
                   PAMI_CLIENT_ATTR_JOB_ID | PAMI_CLIENT_ATTR_LOCAL_CPUS |
                   PAMI_CLIENT_ATTR_NODES;
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.task == e->task && a.size == e->size,
             "expected task %u of %zu, seen %u of %zu", e->task, e->size,
             a.task, a.size);
    CF_CHECK(e, a.num_contexts == 1, "expected num_contexts 1, seen %zu",
             a.num_contexts);
    CF_CHECK(e, a.name && strcmp(a.name, "pami-conformance") == 0,
             "expected the name given at create, seen %s",
             a.name ? a.name : "NULL");
    CF_CHECK(e, a.bootstrap == PAMI_BOOTSTRAP_OOB, "expected the oob "
             "bootstrap in use, seen %d", (int)a.bootstrap);
    CF_CHECK(e, a.ucx_version && a.transports && a.job_id && *a.job_id,
             "expected ucx_version, transports and job_id set");
    CF_CHECK(e, a.num_local_cpus > 0, "expected num_local_cpus > 0");
    CF_CHECK(e, a.num_local_tasks >= 1 && a.num_local_tasks <= a.size &&
                    a.local_tasks != NULL,
             "expected 1 .. size local tasks, seen %zu", a.num_local_tasks);
    int self_in = 0;
    for (size_t i = 0; i < a.num_local_tasks; i++) {
        CF_CHECK(e, i == 0 || a.local_tasks[i] > a.local_tasks[i - 1],
                 "expected local_tasks ascending, seen %u after %u",
                 a.local_tasks[i], i ? a.local_tasks[i - 1] : 0);
        CF_CHECK(e, a.local_tasks[i] < a.size, "expected local tasks in "
                 "the job, seen %u", a.local_tasks[i]);
        self_in |= a.local_tasks[i] == e->task;
    }
    CF_CHECK(e, self_in, "expected this task among local_tasks");
    CF_CHECK(e, a.task_node != NULL && a.num_nodes >= 1 &&
                    a.num_nodes <= a.size && a.task_node[0] == 0,
             "expected task 0 on node 0 of 1 .. size nodes, seen %zu nodes",
             a.num_nodes);
    uint32_t next_new = 1;
    for (size_t t = 0; t < a.size; t++) {
        CF_CHECK(e, a.task_node[t] < a.num_nodes, "expected task %zu's node "
                 "below %zu, seen %u", t, a.num_nodes, a.task_node[t]);
        /* Numbered in the order of their lowest task. */
        CF_CHECK(e, a.task_node[t] <= next_new - 1 ||
                        a.task_node[t] == next_new,
                 "expected nodes numbered by their lowest task, seen task "
                 "%zu on node %u", t, a.task_node[t]);
        if (a.task_node[t] == next_new)
            next_new++;
    }
    for (size_t i = 0; i < a.num_local_tasks; i++)
        CF_CHECK(e, a.task_node[a.local_tasks[i]] == a.task_node[e->task],
                 "expected local task %u on this task's node",
                 a.local_tasks[i]);
    /* The same job id and node map on every task. */
    uint64_t mine[2] = {hash_str(a.job_id), 0};
    for (size_t t = 0; t < a.size; t++)
        mine[1] = mine[1] * 31 + a.task_node[t];
    uint64_t *all = calloc(e->size, sizeof(mine));
    CF_CHECK(e, all && cf_allgather(mine, all, sizeof(mine)) == 0,
             "expected the runner's exchange to work");
    for (size_t t = 0; t < e->size; t++)
        CF_CHECK(e, all[2 * t] == mine[0] && all[2 * t + 1] == mine[1],
                 "expected task %zu to see the same job_id and task_node",
                 t);
    free(all);
}

/* ---- config_vars: pami_config_var against docs/config.md's tables ---- */

static const struct {
    const char *name, *def;
} documented[] = {
    {"PAMI_LOG_LEVEL", "warn"}, {"PAMI_BOOTSTRAP", "auto"},
    {"PAMI_ASYNC_PROGRESS", "0"}, {"PAMI_WAIT_SPIN", "200"},
    {"PAMI_IMMEDIATE_MAX", "1024"}, {"PAMI_RNDV_THRESHOLD", "65536"},
    {"PAMI_PEER_ERRORS", "1"}, {"PAMI_SHUTDOWN_TIMEOUT", "10000"},
    {"PAMI_PEER_TIMEOUT", "10000"}, {"PAMI_RMA_VIA_OWNER", "0"},
    {"PAMI_CMA_BATCH", "16384"}, {"PAMI_RMA_PUT_MSG", "1024"},
    {"PAMI_RMA_GET_MSG", "0"}, {"PAMI_RMA_GATHER", "1"},
    {"PAMI_CMA_SPLIT", "2097152"}, {"PAMI_RMA_OWNER_PIECE", "262144"},
    {"PAMI_RNDV_VIA_ORIGIN", "0"}, {"PAMI_SEND_GATHER", "16384"},
    {"PAMI_SHM_FASTPATH", "1"}, {"PAMI_SHM_QUEUE_LINES", "256"},
    {"PAMI_SHM_ENTRY_MAX", "2032"}, {"PAMI_SHM_QUEUE_GROW", "8192"},
    {"PAMI_SHM_READ_MIN", "8192"},
    {"PAMI_SHM_MEMBARRIER", "1"}, {"PAMI_PROTOCOLS", ""},
    {"PAMI_SHM_BARRIER_SPIN", "50"}, {"PAMI_SHM_BARRIER_BLOCK", "1000"},
    {"PAMI_SHM_BARRIER_TIMEOUT", "30000"}, {"PAMI_SVD_INLINE_MAX", "4096"},
    {"PAMI_SVD_DIRECT_USERS", "8"}, {"PAMI_SVD_TREE_USERS", "64"},
    {"PAMI_SVD_TREE_MIN", "262144"}, {"PAMI_SVD_PIPELINE_MIN", "4194304"},
    {"PAMI_SVD_TREE_FANOUT", "2"}, {"PAMI_SVD_CHUNK", "262144"},
    {"PAMI_SVD_MAX_RECORD", "1073741824"}, {"PAMI_CONNID_THRESHOLD", "64"},
    {"PAMI_CONNID_GLOBAL_THRESHOLD", "4096"}, {"PAMI_COLL_PIECE", "65536"},
    {"PAMI_COLL_PIECE_LOCAL", "4194304"}, {"PAMI_COLL_SPIN_US", "200"},
    {"PAMI_COLL_KEPT_MAX", "65536"}, {"PAMI_COLL_KEPT_BYTES", "2g"},
    {"PAMI_COLL_KEPT_GEOM_MAX", "16384"}, {"PAMI_COLL_KEPT_GEOM_BYTES", "1g"},
    {"PAMI_COLL_PROFILE", "(none)"}, {"PAMI_COLL_BUILTIN", "measured"},
    {"PAMI_COLL_LOG", "0"}, {"PAMI_COLL_TUNE", "off"},
    {"PAMI_COLL_PROFILE_OUT", "(none)"}, {"PAMI_COLL_SHM_SLOT", "262144"},
    {"PAMI_COLL_SHM_AUTO", "1"}, {"PAMI_COLL_SHM_FLAG", "1"},
    {"PAMI_COLL_SHM_CMA", "1"}, {"PAMI_COLL_SHM_EAGER", "1"},
};
#define NDOCUMENTED (sizeof(documented) / sizeof(documented[0]))

/* "PAMI_COLL_<COLLECTIVE>_ALGORITHM": one row for the family. */
static int algorithm_family(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "PAMI_COLL_", 10) == 0 && n > 20 &&
           strcmp(name + n - 10, "_ALGORITHM") == 0;
}

static void config_vars(cf_env_t *e)
{
    int seen[NDOCUMENTED] = {0};
    unsigned i = 0;
    pami_config_var_t v;
    pami_result_t rc;
    while ((rc = pami_config_var(i, &v)) == PAMI_SUCCESS) {
        CF_CHECK(e, v.name && strncmp(v.name, "PAMI_", 5) == 0 &&
                        v.description && *v.description,
                 "expected variable %u named PAMI_* with a description", i);
        size_t k = 0;
        while (k < NDOCUMENTED && strcmp(documented[k].name, v.name) != 0)
            k++;
        if (k == NDOCUMENTED) {
            CF_CHECK(e, algorithm_family(v.name), "expected every variable "
                     "pami_config_var lists in config.md's tables, seen %s",
                     v.name);
        } else {
            const char *d = v.default_value ? v.default_value : "";
            CF_CHECK(e, !seen[k], "expected %s listed once", v.name);
            CF_CHECK(e, strcmp(d, documented[k].def) == 0, "expected %s's "
                     "default \"%s\" as config.md says, seen \"%s\"", v.name,
                     documented[k].def, d);
            seen[k] = 1;
        }
        i++;
        CF_CHECK(e, i < 1000, "expected the list to end");
    }
    CF_CHECK(e, rc == PAMI_NOT_FOUND, "expected PAMI_NOT_FOUND past the last "
             "variable, seen %s", cf_rc_name(rc));
    CF_RC(e, PAMI_NOT_FOUND, pami_config_var(i + 100, &v));
    for (size_t k = 0; k < NDOCUMENTED; k++)
        CF_CHECK(e, seen[k], "expected %s (config.md) listed by "
                 "pami_config_var", documented[k].name);
}

/* ---- endpoints ---- */

static void endpoints(cf_env_t *e)
{
    static const size_t offs[] = {0, 1, PAMI_CONTEXT_MAX - 1};
    size_t n = e->size * 3;
    pami_endpoint_t *v = calloc(n, sizeof(*v));
    CF_CHECK(e, v != NULL, "expected memory");
    for (size_t t = 0; t < e->size; t++)
        for (size_t o = 0; o < 3; o++) {
            pami_endpoint_t ep;
            pami_task_t tt;
            size_t oo;
            CF_OK(e, pami_endpoint_create(e->client, (pami_task_t)t, offs[o],
                                          &ep));
            CF_CHECK(e, ep != PAMI_ENDPOINT_NULL, "expected a real endpoint");
            CF_OK(e, pami_endpoint_query(ep, &tt, &oo));
            CF_CHECK(e, tt == t && oo == offs[o], "expected (%zu, %zu) back, "
                     "seen (%u, %zu)", t, offs[o], tt, oo);
            CF_OK(e, pami_endpoint_query(ep, NULL, NULL));
            for (size_t j = 0; j < t * 3 + o; j++)
                CF_CHECK(e, v[j] != ep, "expected distinct endpoints");
            v[t * 3 + o] = ep;
        }
    free(v);
    pami_task_t tt = 99;
    CF_RC(e, PAMI_INVAL, pami_endpoint_query(PAMI_ENDPOINT_NULL, &tt, NULL));
    CF_CHECK(e, tt == 99, "expected no output written on PAMI_INVAL");
    /* An offset without a context passes endpoint_create and is refused
     * by what uses it. */
    pami_endpoint_t ghost, null_ep = PAMI_ENDPOINT_NULL;
    CF_OK(e, pami_endpoint_create(e->client, e->task, 1, &ghost));
    calls_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, 4, on_msg, &s, NULL));
    uint8_t b[8] = {0};
    pami_send_immediate_t m = {.dest = ghost, .dispatch = 4, .header = b,
                               .header_len = 8};
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &m));
    pami_send_t sd = {.send = m, .local_fn = on_local, .cookie = &s};
    CF_RC(e, PAMI_INVAL, pami_send(e->ctx, &sd));
    m.dest = null_ep;
    sd.send.dest = null_ep;
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &m));
    CF_RC(e, PAMI_INVAL, pami_send(e->ctx, &sd));
    CF_RC(e, PAMI_INVAL, pami_fence_endpoint(e->ctx, null_ep, NULL, NULL));
    static uint8_t win[64];
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_create(e->ctx, win, sizeof(win), &mr));
    pami_rma_t p = {.dest = ghost, .local = b, .bytes = 8, .remote_mr = &mr,
                    .local_fn = on_local, .cookie = &s};
    CF_RC(e, PAMI_INVAL, pami_put(e->ctx, &p));
    p.dest = null_ep;
    CF_RC(e, PAMI_INVAL, pami_get(e->ctx, &p));
    CF_CHECK(e, s.local == 0 && s.got == 0, "expected no callback and no "
             "message from refused calls");
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
}

/* ---- no_handler_answer: remote_fn gets PAMI_NOT_FOUND ---- */

#define NOH_ID 211

static void no_handler_answer(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    /* Nobody registers NOH_ID; clearing an unset id is allowed. */
    CF_OK(e, pami_dispatch_set(e->ctx, NOH_ID, NULL, NULL, NULL));
    /* Read before the fence: the previous task may send while this one
     * is still inside it. */
    pami_context_stats_t s0, s1;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    CF_OK(e, pami_dispatch_fence(e->client));
    size_t big = a.rndv_threshold + 5;
    uint8_t *buf = calloc(1, big);
    CF_CHECK(e, buf != NULL, "expected memory");
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    size_t sizes[2] = {16, big};
    for (int i = 0; i < 2; i++) {
        calls_t s = {.e = e};
        pami_send_t sd = {.send = {.dest = cf_ep(e, to), .dispatch = NOH_ID,
                                   .header = buf, .header_len = 4,
                                   .data = buf, .data_len = sizes[i]},
                          .local_fn = on_local, .remote_fn = on_remote,
                          .cookie = &s};
        CF_OK(e, pami_send(e->ctx, &sd));
        CF_CHECK(e, s.local == 0 && s.remote == 0, "expected no callback "
                 "inside pami_send");
        cf_wait_count(e, &s.remote, 1, "remote_fn of a send to an id with "
                      "no handler");
        CF_CHECK(e, s.local == 1 && !s.order_bad, "expected local_fn once, "
                 "before remote_fn");
        CF_CHECK(e, s.local_rc == PAMI_SUCCESS, "expected local_fn "
                 "PAMI_SUCCESS (%zu bytes), seen %s", sizes[i],
                 cf_rc_name(s.local_rc));
        CF_CHECK(e, s.remote_rc == PAMI_NOT_FOUND, "expected remote_fn "
                 "PAMI_NOT_FOUND (no handler for dispatch, %zu bytes), seen "
                 "%s", sizes[i], cf_rc_name(s.remote_rc));
    }
    CF_OK(e, pami_dispatch_fence(e->client));
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.dropped_unknown - s0.dropped_unknown == 2,
             "expected dropped_unknown to rise by the 2 messages sent here, "
             "seen %llu", (unsigned long long)(s1.dropped_unknown -
                                               s0.dropped_unknown));
    free(buf);
}

/* ---- posted_work ---- */

typedef struct {
    size_t order[16];
    size_t n;
    size_t runs_again;
} post_t;

typedef struct {
    post_t *p;
    size_t  id;
} post_item_t;

static pami_result_t record_work(pami_context_t c, void *k)
{
    (void)c;
    post_item_t *it = k;
    if (it->p->n < 16)
        it->p->order[it->p->n] = it->id;
    it->p->n++;
    return PAMI_SUCCESS;
}

static pami_result_t again_work(pami_context_t c, void *k)
{
    (void)c;
    post_t *p = k;
    return ++p->runs_again < 3 ? PAMI_EAGAIN : PAMI_SUCCESS;
}

static void posted_work(cf_env_t *e)
{
    post_t p = {0};
    pami_work_t w[10], wa;
    post_item_t it[10];
    pami_context_stats_t s0, s1;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    for (size_t i = 0; i < 10; i++) {
        it[i] = (post_item_t){.p = &p, .id = i};
        CF_OK(e, pami_context_post(e->ctx, &w[i], record_work, &it[i]));
    }
    CF_OK(e, pami_context_post(e->ctx, &wa, again_work, &p));
    CF_CHECK(e, p.n == 0 && p.runs_again == 0, "expected no work run inside "
             "pami_context_post");
    /* "one `work` can be queued once at a time": posting a queued one
     * again is refused, and it still runs once. */
    CF_RC(e, PAMI_INVAL, pami_context_post(e->ctx, &w[9], record_work,
                                           &it[9]));
    CF_RC(e, PAMI_INVAL, pami_context_post(e->ctx, &w[3], record_work,
                                           &it[3]));
    pami_result_t rc = pami_context_wait(e->ctx, 1000);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected wait PAMI_SUCCESS with work "
             "queued, seen %s", cf_rc_name(rc));
    cf_wait_count(e, &p.n, 10, "posted work items");
    cf_wait_count(e, &p.runs_again, 3, "runs of a work item that says "
                  "PAMI_EAGAIN twice");
    for (size_t i = 0; i < 10; i++)
        CF_CHECK(e, p.order[i] == i, "expected work in queue order, seen "
                 "item %zu at %zu", p.order[i], i);
    for (int k = 0; k < 20; k++)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, p.n == 10 && p.runs_again == 3, "expected each item to run "
             "once (the EAGAIN one 3 times), seen %zu and %zu", p.n,
             p.runs_again);
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.posted - s0.posted == 13, "expected posted to count 13 "
             "runs (a re-queued item each run), seen %llu",
             (unsigned long long)(s1.posted - s0.posted));
}

/* ---- context_lock ---- */

typedef struct {
    pami_context_t ctx;
    pami_result_t  rc;
} lock_probe_t;

static void *try_other(void *arg)
{
    lock_probe_t *l = arg;
    l->rc = pami_context_trylock(l->ctx);
    if (l->rc == PAMI_SUCCESS)
        pami_context_unlock(l->ctx);
    return NULL;
}

static pami_result_t probe_from_thread(pami_context_t ctx)
{
    lock_probe_t l = {.ctx = ctx, .rc = PAMI_ERROR};
    pthread_t t;
    if (pthread_create(&t, NULL, try_other, &l) != 0)
        return PAMI_ERROR;
    pthread_join(t, NULL);
    return l.rc;
}

static void context_lock(cf_env_t *e)
{
    CF_OK(e, pami_context_lock(e->ctx));
    CF_OK(e, pami_context_lock(e->ctx));
    CF_OK(e, pami_context_trylock(e->ctx));
    CF_RC(e, PAMI_EAGAIN, probe_from_thread(e->ctx));
    CF_OK(e, pami_context_unlock(e->ctx));
    CF_OK(e, pami_context_unlock(e->ctx));
    CF_RC(e, PAMI_EAGAIN, probe_from_thread(e->ctx));
    CF_OK(e, pami_context_unlock(e->ctx));
    CF_OK(e, probe_from_thread(e->ctx));
}

/* ---- counters ---- */

#define CNT_ID 12
#define CNT_N  25

static void counters(cf_env_t *e)
{
    /* Static, as every handler state a peer's message may still reach
     * after an early return. */
    static calls_t s;
    s = (calls_t){.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, CNT_ID, on_msg, &s, NULL));
    pami_context_stats_t s0, s1;
    CF_OK(e, pami_context_stats(e->ctx, &s0));
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_task_t to = (pami_task_t)((e->task + 1) % e->size);
    uint8_t b[32] = {0};
    calls_t cb = {.e = e};
    for (size_t i = 0; i < CNT_N; i++) {
        pami_send_immediate_t m = {.dest = cf_ep(e, to), .dispatch = CNT_ID,
                                   .header = b, .header_len = 8,
                                   .data = b, .data_len = i};
        if (i % 2) {
            CF_OK(e, cf_send_immediate(e, &m));
        } else {
            pami_send_t sd = {.send = m, .local_fn = on_local,
                              .cookie = &cb};
            CF_OK(e, pami_send(e->ctx, &sd));
        }
    }
    /* Refused calls do not count. */
    pami_send_immediate_t badm = {.dest = cf_ep(e, to), .dispatch = 100000};
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &badm));
    cf_wait_count(e, &s.got, CNT_N, "messages from the previous task");
    cf_wait_count(e, &cb.local, (CNT_N + 1) / 2, "local_fn of the sends");
    CF_OK(e, pami_context_stats(e->ctx, &s1));
    CF_CHECK(e, s1.sends - s0.sends == CNT_N, "expected sends to rise by the "
             "%d successful sends, seen %llu", CNT_N,
             (unsigned long long)(s1.sends - s0.sends));
    CF_CHECK(e, s1.receives - s0.receives == CNT_N, "expected receives to "
             "rise by the %d messages handed to the handler, seen %llu",
             CNT_N, (unsigned long long)(s1.receives - s0.receives));
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- client_create_args: a second client, refused before it starts ---- */

static int never_allgather(void *k, const void *s, void *r, size_t len)
{
    (void)k; (void)s; (void)r; (void)len;
    return -1;
}

static void client_create_args(cf_env_t *e)
{
    pami_client_t c = NULL;
    pami_client_params_t p = {.field_mask = 1ull << 45};
    CF_RC(e, PAMI_INVAL, pami_client_create("x", NULL, NULL));
    CF_RC(e, PAMI_INVAL, pami_client_create("x", &p, &c));
    p.field_mask = PAMI_CLIENT_PARAM_BOOTSTRAP;
    p.bootstrap = (pami_bootstrap_kind_t)9;
    CF_RC(e, PAMI_INVAL, pami_client_create("x", &p, &c));
    p.bootstrap = PAMI_BOOTSTRAP_OOB;
    CF_RC(e, PAMI_INVAL, pami_client_create("x", &p, &c));
    p.field_mask |= PAMI_CLIENT_PARAM_OOB;
    p.oob_allgather = NULL;
    p.oob_size = 2;
    CF_RC(e, PAMI_INVAL, pami_client_create("x", &p, &c));
    p.oob_allgather = never_allgather;
    p.oob_size = 0;
    CF_RC(e, PAMI_INVAL, pami_client_create("x", &p, &c));
    p.oob_size = 2;
    p.oob_task = 2;
    CF_RC(e, PAMI_INVAL, pami_client_create("x", &p, &c));
    /* A well-formed PAMI_BOOTSTRAP that names no bootstrap. */
    setenv("PAMI_BOOTSTRAP", "carrier", 1);
    pami_result_t rc = pami_client_create("x", NULL, &c);
    unsetenv("PAMI_BOOTSTRAP");
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for PAMI_BOOTSTRAP="
             "carrier, seen %s", cf_rc_name(rc));
    /* The OOB callback failing: PAMI_BOOTSTRAP. */
    p.oob_task = 0;
    p.oob_size = 2;
    rc = pami_client_create("x", &p, &c);
    CF_CHECK(e, rc == PAMI_BOOTSTRAP, "expected PAMI_BOOTSTRAP when the OOB "
             "allgather fails, seen %s", cf_rc_name(rc));
    CF_CHECK(e, c == NULL, "expected *client unwritten on failure");
}

/* ---- configured_limits: the case's client reads the cases' env ---- */

#define LIM_ID 30

static void configured_limits(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                          PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    /* PAMI_IMMEDIATE_MAX=100, PAMI_RNDV_THRESHOLD=2k (cf_cases.c). */
    CF_CHECK(e, a.immediate_max == 100, "expected immediate_max 100 from "
             "PAMI_IMMEDIATE_MAX=100, seen %zu", a.immediate_max);
    CF_CHECK(e, a.rndv_threshold == 2048, "expected rndv_threshold 2048 "
             "from PAMI_RNDV_THRESHOLD=2k, seen %zu", a.rndv_threshold);
    calls_t s = {.e = e};
    CF_OK(e, pami_dispatch_set(e->ctx, LIM_ID, on_msg, &s, NULL));
    static uint8_t buf[4096];
    pami_send_immediate_t m = {.dest = cf_ep(e, e->task), .dispatch = LIM_ID,
                               .header = buf, .header_len = 10, .data = buf,
                               .data_len = 91};
    CF_RC(e, PAMI_INVAL, pami_send_immediate(e->ctx, &m));
    m.data_len = 90;
    CF_OK(e, cf_send_immediate(e, &m));
    cf_wait_count(e, &s.got, 1, "the immediate send of immediate_max bytes");
    pami_send_t sd = {.send = m, .local_fn = on_local, .cookie = &s};
    sd.send.data_len = 2047;
    CF_OK(e, pami_send(e->ctx, &sd));
    cf_wait_count(e, &s.got, 2, "a send below the threshold");
    CF_CHECK(e, !s.data_null, "expected 2047 bytes sent eagerly (data in the "
             "handler)");
    sd.send.data_len = 2048;
    CF_OK(e, pami_send(e->ctx, &sd));
    cf_wait_count(e, &s.got, 3, "a send at the threshold");
    CF_CHECK(e, s.data_null, "expected 2048 bytes left at the origin (data "
             "NULL in the handler)");
    cf_wait_count(e, &s.local, 2, "local_fn of both sends");
}

static void limit_clamped(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                          PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    /* PAMI_IMMEDIATE_MAX=8192 is lowered; PAMI_RNDV_THRESHOLD=12q is
     * malformed and keeps the default. */
    CF_CHECK(e, a.immediate_max == 4096, "expected PAMI_IMMEDIATE_MAX=8192 "
             "lowered to 4096, seen %zu", a.immediate_max);
    CF_CHECK(e, a.rndv_threshold == 65536, "expected the default 65536 for "
             "PAMI_RNDV_THRESHOLD=12q, seen %zu", a.rndv_threshold);
}

static void empty_values(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                          PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.immediate_max == 1024 && a.rndv_threshold == 65536,
             "expected the defaults 1024 and 65536 for empty values, seen "
             "%zu and %zu", a.immediate_max, a.rndv_threshold);
}

/* ---- second_client: a client of the case's own, over the runner's
 * exchange ---- */

static int runner_allgather(void *k, const void *s, void *r, size_t len)
{
    (void)k;
    return cf_allgather(s, r, len);
}

static void second_client(cf_env_t *e)
{
    char longname[101];
    memset(longname, 'n', 100);
    longname[100] = '\0';
    /* The OOB bit alone selects the oob bootstrap. */
    pami_client_params_t p = {.field_mask = PAMI_CLIENT_PARAM_OOB,
                              .oob_allgather = runner_allgather,
                              .oob_task = e->task, .oob_size = e->size};
    pami_client_t c2 = NULL;
    CF_OK(e, pami_client_create(longname, &p, &c2));
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NAME |
                                          PAMI_CLIENT_ATTR_BOOTSTRAP |
                                          PAMI_CLIENT_ATTR_NUM_CONTEXTS |
                                          PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE};
    CF_OK(e, pami_client_query(c2, &a));
    CF_CHECK(e, a.name && strlen(a.name) == 63 &&
                    strncmp(a.name, longname, 63) == 0,
             "expected the name truncated to 63 characters, seen %zu",
             a.name ? strlen(a.name) : 0);
    CF_CHECK(e, a.bootstrap == PAMI_BOOTSTRAP_OOB && a.num_contexts == 0 &&
                    a.task == e->task && a.size == e->size,
             "expected oob, no context, task %u of %zu; seen %d, %zu, %u of "
             "%zu", e->task, e->size, (int)a.bootstrap, a.num_contexts,
             a.task, a.size);
    /* Before createv the fence is the bootstrap's barrier. */
    CF_OK(e, pami_dispatch_fence(c2));
    CF_OK(e, pami_client_destroy(&c2));
    CF_CHECK(e, c2 == NULL, "expected pami_client_destroy to set *client "
             "NULL");
    /* NULL name: "pami"; destroy takes the contexts that are left. */
    p.field_mask |= PAMI_CLIENT_PARAM_BOOTSTRAP;
    p.bootstrap = PAMI_BOOTSTRAP_OOB;
    CF_OK(e, pami_client_create(NULL, &p, &c2));
    CF_OK(e, pami_client_query(c2, &a));
    CF_CHECK(e, a.name && strcmp(a.name, "pami") == 0, "expected the name "
             "\"pami\" for NULL, seen %s", a.name ? a.name : "NULL");
    pami_context_t cx;
    CF_OK(e, pami_context_createv(c2, NULL, 1, &cx));
    CF_OK(e, pami_client_query(c2, &a));
    CF_CHECK(e, a.num_contexts == 1, "expected num_contexts 1, seen %zu",
             a.num_contexts);
    /* A region of this client reads back while it lives; after the
     * destroy no client of the process knows its seal. */
    static uint8_t buf[64];
    pami_memregion_t mr;
    void *base = NULL;
    CF_OK(e, pami_memregion_create(cx, buf, sizeof(buf), &mr));
    CF_OK(e, pami_memregion_query(&mr, &base, NULL, NULL));
    CF_CHECK(e, base == buf, "expected the region's base back");
    CF_OK(e, pami_dispatch_fence(c2));
    CF_OK(e, pami_client_destroy(&c2));
    CF_CHECK(e, c2 == NULL, "expected *client NULL after destroy");
    pami_result_t rc = pami_memregion_query(&mr, &base, NULL, NULL);
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL for a region of a "
             "destroyed client (\"no client of this process knows the "
             "owner's seal\"), seen %s", cf_rc_name(rc));
    /* The case's own client is untouched. */
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- createv_mismatch: tasks passing different n ---- */

static void createv_mismatch(cf_env_t *e)
{
    size_t n = 1 + (e->task % 2);
    pami_result_t rc = pami_context_createv(e->client, NULL, n, e->contexts);
    CF_CHECK(e, rc == PAMI_INVAL, "expected PAMI_INVAL on every task when "
             "\"some task passed another `n`\", seen %s", cf_rc_name(rc));
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS};
    CF_OK(e, pami_client_query(e->client, &a));
    CF_CHECK(e, a.num_contexts == 0, "expected \"On failure no context "
             "exists\", seen %zu", a.num_contexts);
    /* The same n everywhere now works. */
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- env_log_lines: what a refused call writes on stderr ---- */

/* Runs one refused call with stderr sent to a file; its text in out. */
static void stderr_of_refusal(char *out, size_t len)
{
    char path[] = "/tmp/pami-cf-log-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    out[0] = '\0';
    if (fd < 0 || saved < 0)
        return;
    fflush(stderr);
    dup2(fd, 2);
    (void)pami_context_advance(NULL, 1);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

static void env_log_lines(cf_env_t *e)
{
    /* PAMI_LOG_LEVEL=WARN (any case) for the case's client. */
    char got[512], want[64];
    stderr_of_refusal(got, sizeof(got));
    snprintf(want, sizeof(want), "[%u] pami warn progress: ", e->task);
    CF_CHECK(e, strncmp(got, want, strlen(want)) == 0 &&
                    strchr(got, '\n') == got + strlen(got) - 1,
             "expected one line \"%s...\" for a refused call, seen \"%s\"",
             want, got);
    /* "the level of the client created last applies to every client":
     * a second client at error silences the first one's warnings. */
    setenv("PAMI_LOG_LEVEL", "0", 1);
    pami_client_params_t p = {.field_mask = PAMI_CLIENT_PARAM_OOB,
                              .oob_allgather = runner_allgather,
                              .oob_task = e->task, .oob_size = e->size};
    pami_client_t c2 = NULL;
    pami_result_t rc = pami_client_create("quiet", &p, &c2);
    unsetenv("PAMI_LOG_LEVEL");
    CF_OK(e, rc);
    stderr_of_refusal(got, sizeof(got));
    CF_CHECK(e, got[0] == '\0', "expected no warn line once the last "
             "client's level is error, seen \"%s\"", got);
    CF_OK(e, pami_client_destroy(&c2));
}

/* ---- protocols_env: PAMI_PROTOCOLS on a second client ---- */

static void protocols_env(cf_env_t *e)
{
    pami_client_params_t p = {.field_mask = PAMI_CLIENT_PARAM_OOB,
                              .oob_allgather = runner_allgather,
                              .oob_task = e->task, .oob_size = e->size};
    pami_client_t c2 = NULL;
    /* "splits it at `:` and skips empty parts": nothing to load. */
    setenv("PAMI_PROTOCOLS", "::", 1);
    pami_result_t rc = pami_client_create("empty-list", &p, &c2);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected PAMI_PROTOCOLS=:: to load "
             "nothing and succeed, seen %s", cf_rc_name(rc));
    CF_OK(e, pami_client_destroy(&c2));
    /* An object that cannot be loaded fails on every task; here on the
     * odd tasks only, so the even ones learn it through the exchange. */
    if (e->task % 2)
        setenv("PAMI_PROTOCOLS", "/nonexistent/libcf-none.so", 1);
    else
        unsetenv("PAMI_PROTOCOLS");
    rc = pami_client_create("missing", &p, &c2);
    unsetenv("PAMI_PROTOCOLS");
    pami_result_t want = e->size > 1 || e->task % 2 ? PAMI_INVAL
                                                    : PAMI_SUCCESS;
    CF_CHECK(e, rc == want, "expected %s (a plug-in of PAMI_PROTOCOLS could "
             "not be loaded \"here or on another task\"), seen %s",
             cf_rc_name(want), cf_rc_name(rc));
    CF_CHECK(e, rc == PAMI_SUCCESS || c2 == NULL, "expected no client on "
             "failure");
    if (rc == PAMI_SUCCESS)
        CF_OK(e, pami_client_destroy(&c2));
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_calls_cases[] = {
    {"core", "null_arguments", 1, 0, 0, null_arguments, NULL},
    {"core", "sized_params", 1, 0, 0, sized_params, NULL},
    {"core", "context_calls", 1, 0, CF_OWN_CONTEXTS, context_calls, NULL},
    {"core", "client_attributes", 1, 0, 0, client_attributes, NULL},
    {"core", "config_vars", 1, 0, 0, config_vars, NULL},
    {"core", "endpoints", 1, 0, 0, endpoints, NULL},
    {"core", "no_handler_answer", 1, 0, 0, no_handler_answer, NULL},
    {"core", "posted_work", 1, 0, 0, posted_work, NULL},
    {"core", "context_lock", 1, 0, 0, context_lock, NULL},
    {"core", "counters", 1, 0, 0, counters, NULL},
    {"core", "client_create_args", 1, 0, 0, client_create_args, NULL},
    {"core", "second_client", 1, 0, 0, second_client, NULL},
    {"core", "createv_mismatch", 2, 0, CF_OWN_CONTEXTS, createv_mismatch,
     NULL},
    {"core", "env_log_lines", 1, 0, 0, env_log_lines, "PAMI_LOG_LEVEL=WARN"},
    {"core", "protocols_env", 1, 0, 0, protocols_env, NULL},
    {"core", "env_limits", 1, 0, 0, configured_limits,
     "PAMI_IMMEDIATE_MAX=100 PAMI_RNDV_THRESHOLD=2k"},
    {"core", "env_limit_and_malformed", 1, 0, 0, limit_clamped,
     "PAMI_IMMEDIATE_MAX=8192 PAMI_RNDV_THRESHOLD=12q"},
    {"core", "env_empty_values", 1, 0, 0, empty_values,
     "PAMI_IMMEDIATE_MAX= PAMI_RNDV_THRESHOLD="},
};
const size_t cf_num_calls_cases =
    sizeof(cf_calls_cases) / sizeof(cf_calls_cases[0]);

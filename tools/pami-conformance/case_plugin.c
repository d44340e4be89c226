/*
 * The generic protocol suite, run over each --protocol plug-in: how pami
 * registers, initialises, isolates and finishes a protocol it knows
 * nothing about. The plug-in's own behaviour is for its own cases (suite
 * user).
 */
#include "cf_plugin.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The plug-in's table wrapped so init and fini are seen. */
typedef struct {
    char   what;   /* 'i' init, 'f' fini */
    char   who;    /* 'p' plug-in, 'q' the runner's probe */
    size_t offset; /* context offset (init) */
    pami_context_t ctx;
} call_t;

static call_t calls[64];
static size_t ncalls;
static const pami_protocol_ops_t *inner;
static pami_protocol_ops_t wrap, probe;
static pami_context_t ctx_of_offset[4];

static void log_call(char what, char who, size_t off, pami_context_t ctx)
{
    if (ncalls < 64)
        calls[ncalls] = (call_t){what, who, off, ctx};
    ncalls++;
}

/* The plug-in's block as init got it: the generic suite sends on it. */
static pami_protocol_env_t plugin_env;
static pami_task_t failed_task = (pami_task_t)-1;
/* Every task the plug-in heard of: other tasks may leave, and be reported,
 * once they are through with the case. */
static uint64_t failed_tasks;

static pami_result_t wrap_init(const pami_protocol_env_t *env, void **state)
{
    log_call('i', 'p', env->context_offset, env->context);
    if (env->context_offset < 4)
        ctx_of_offset[env->context_offset] = env->context;
    if (env->context_offset == 0)
        plugin_env = *env;
    return inner->init ? inner->init(env, state) : PAMI_SUCCESS;
}

static void wrap_peer_failed(pami_context_t ctx, void *state,
                             pami_task_t task)
{
    failed_task = task;
    if (task < 64)
        failed_tasks |= 1ull << task;
    if (inner->peer_failed)
        inner->peer_failed(ctx, state, task);
}

static void wrap_fini(pami_context_t ctx, void *state)
{
    log_call('f', 'p', 0, ctx);
    if (inner->fini)
        inner->fini(ctx, state);
}

static pami_result_t probe_init(const pami_protocol_env_t *env, void **state)
{
    log_call('i', 'q', env->context_offset, env->context);
    *state = NULL;
    return PAMI_SUCCESS;
}

static void probe_fini(pami_context_t ctx, void *state)
{
    (void)state;
    log_call('f', 'q', 0, ctx);
}

/* Builds wrap (the plug-in's table, as far as both know it) and probe. */
static int tables(cf_env_t *e)
{
    const pami_protocol_plugin_t *d = cf_plugin_load(e->plugin);
    if (d == NULL) {
        CF_FAIL(e, "expected plug-in %s to load", e->plugin);
        return -1;
    }
    inner = d->ops;
    memset(&wrap, 0, sizeof(wrap));
    size_t n = inner->struct_size < sizeof(wrap) ? inner->struct_size
                                                 : sizeof(wrap);
    memcpy(&wrap, inner, n);
    wrap.struct_size = sizeof(wrap);
    wrap.init = wrap_init;
    wrap.fini = wrap_fini;
    wrap.peer_failed = wrap_peer_failed;
    probe = (pami_protocol_ops_t){PAMI_PROTOCOL_OPS_HEADER,
                                  .name = "pami-conformance.probe",
                                  .version = 1, .num_dispatch = 2,
                                  .init = probe_init, .fini = probe_fini};
    ncalls = 0;
    return 0;
}

/* The block pami gave name, and that no other protocol's overlaps it. */
static int check_block(cf_env_t *e, const char *name, size_t want_n,
                       pami_protocol_info_t *out)
{
    pami_protocol_info_t all[PAMI_PROTOCOL_MAX], *mine = NULL;
    size_t n = 0;
    while (n < PAMI_PROTOCOL_MAX &&
           pami_protocol_query(e->client, n, &all[n]) == PAMI_SUCCESS)
        n++;
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].name, name) == 0)
            mine = &all[i];
    if (mine == NULL) {
        CF_FAIL(e, "expected protocol %s in pami_protocol_query, seen %zu "
                "others", name, n);
        return -1;
    }
    if (mine->num_dispatch != want_n || mine->dispatch_base < 256) {
        CF_FAIL(e, "expected %zu ids from 256 up for %s, seen %zu at %zu",
                want_n, name, mine->num_dispatch, mine->dispatch_base);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (&all[i] == mine || all[i].num_dispatch == 0)
            continue;
        size_t a0 = all[i].dispatch_base, a1 = a0 + all[i].num_dispatch;
        size_t b0 = mine->dispatch_base, b1 = b0 + mine->num_dispatch;
        if (a0 < b1 && b0 < a1) {
            CF_FAIL(e, "expected %s's ids %zu..%zu disjoint, seen %s at "
                    "%zu..%zu", name, b0, b1 - 1, all[i].name, a0, a1 - 1);
            return -1;
        }
    }
    if (out)
        *out = *mine;
    return 0;
}

static size_t count(char what, char who, pami_context_t ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < ncalls && i < 64; i++)
        if (calls[i].what == what && calls[i].who == who &&
            (ctx == NULL || calls[i].ctx == ctx))
            n++;
    return n;
}

static void register_before(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    CF_OK(e, pami_protocol_register(e->client, &wrap, NULL));
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &wrap, NULL));
    CF_OK(e, pami_protocol_register(e->client, &probe, NULL));
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    pami_protocol_info_t info;
    if (check_block(e, wrap.name, wrap.num_dispatch, &info) != 0 ||
        check_block(e, probe.name, 2, NULL) != 0)
        return;
    CF_CHECK(e, !info.builtin, "expected %s listed as not built in",
             wrap.name);
    for (size_t c = 0; c < 2; c++) {
        CF_CHECK(e, count('i', 'p', e->contexts[c]) == 1 &&
                 count('i', 'q', e->contexts[c]) == 1,
                 "expected init once per context (context %zu), seen %zu "
                 "and %zu", c, count('i', 'p', e->contexts[c]),
                 count('i', 'q', e->contexts[c]));
        size_t n = 0;
        CF_OK(e, pami_protocol_stats(e->contexts[c], wrap.name, NULL, 0, &n));
    }
    /* The program cannot reach the protocol's ids. */
    for (size_t i = 0; i < info.num_dispatch; i++) {
        uint32_t v = 0;
        pami_send_immediate_t m = {.dest = cf_ep(e, e->task),
                                   .dispatch = info.dispatch_base + i,
                                   .header = &v, .header_len = sizeof(v)};
        CF_RC(e, PAMI_INVAL, pami_send_immediate(e->contexts[0], &m));
        CF_RC(e, PAMI_INVAL, pami_dispatch_set(e->contexts[0],
                                               info.dispatch_base + i, NULL,
                                               NULL, NULL));
    }
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_context_t c0 = e->contexts[0], c1 = e->contexts[1];
    size_t before = ncalls;
    CF_OK(e, pami_context_destroyv(e->contexts, 2));
    e->ncontexts = 0;
    for (int c = 0; c < 2; c++) {
        pami_context_t x = c ? c1 : c0;
        CF_CHECK(e, count('f', 'p', x) == 1 && count('f', 'q', x) == 1,
                 "expected fini once per context, seen %zu and %zu",
                 count('f', 'p', x), count('f', 'q', x));
        /* Reverse order of registration: the probe's fini first. */
        size_t fp = 0, fq = 0;
        for (size_t i = before; i < ncalls && i < 64; i++) {
            if (calls[i].ctx == x && calls[i].who == 'p' && !fp)
                fp = i + 1;
            if (calls[i].ctx == x && calls[i].who == 'q' && !fq)
                fq = i + 1;
        }
        CF_CHECK(e, fq < fp, "expected the later protocol's fini before the "
                 "plug-in's on each context, seen it after");
    }
}

static void register_after(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    CF_OK(e, pami_context_createv(e->client, NULL, 1, &e->ctx));
    CF_OK(e, pami_protocol_register(e->client, &wrap, NULL));
    CF_CHECK(e, count('i', 'p', e->ctx) == 1, "expected init on the live "
             "context at registration, seen %zu calls", count('i', 'p',
                                                              e->ctx));
    if (check_block(e, wrap.name, wrap.num_dispatch, NULL) != 0)
        return;
    CF_OK(e, pami_dispatch_fence(e->client));
    pami_context_t c = e->ctx;
    CF_OK(e, pami_context_destroyv(&e->ctx, 1));
    CF_CHECK(e, count('f', 'p', c) == 1, "expected fini once at destroyv, "
             "seen %zu", count('f', 'p', c));
}

static void bad_tables(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    pami_protocol_ops_t t = wrap;
    t.abi_version = PAMI_PROTOCOL_ABI_VERSION + 1;
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &t, NULL));
    t = wrap;
    t.abi_version = 0;
    t.struct_size = 0;
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &t, NULL));
    t = wrap;
    t.struct_size = 8;
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &t, NULL));
    t = wrap;
    t.num_dispatch = PAMI_PROTOCOL_DISPATCH_MAX + 1;
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &t, NULL));
    t = wrap;
    t.name = "";
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &t, NULL));
    /* A shorter table of the same version (built against an older SDK)
     * still registers, its missing fields taken as zero. */
    t = wrap;
    t.struct_size = offsetof(pami_protocol_ops_t, num_config) + sizeof(size_t);
    CF_OK(e, pami_protocol_register(e->client, &t, NULL));
    CF_OK(e, pami_context_createv(e->client, NULL, 1, &e->ctx));
    CF_OK(e, pami_dispatch_fence(e->client));
}

static void by_environment(cf_env_t *e)
{
    const pami_protocol_plugin_t *d = cf_plugin_load(e->plugin), *q = NULL;
    CF_CHECK(e, d != NULL, "expected plug-in %s to load", e->plugin);
    const char *path = NULL;
    CF_OK(e, pami_protocol_plugin_query(e->client, d->ops->name, &q, &path));
    CF_CHECK(e, q == d && path != NULL && strcmp(path, e->plugin) == 0,
             "expected the plug-in's own description and path %s, seen %s",
             e->plugin, path ? path : "NULL");
    pami_protocol_info_t info;
    if (check_block(e, d->ops->name, d->ops->num_dispatch, &info) != 0)
        return;
    CF_CHECK(e, !info.builtin, "expected the plug-in's protocol not built in");
    /* Registered after every built-in protocol. */
    pami_protocol_info_t other;
    for (size_t i = 0; pami_protocol_query(e->client, i, &other) ==
                       PAMI_SUCCESS; i++)
        CF_CHECK(e, !other.builtin || other.dispatch_base < info.dispatch_base,
                 "expected built-in %s before the plug-in's ids", other.name);
    CF_OK(e, pami_dispatch_fence(e->client));
}

static void mismatched_sets(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    if (e->task % 2 == 1)
        CF_OK(e, pami_protocol_register(e->client, &wrap, NULL));
    pami_result_t rc = pami_context_createv(e->client, NULL, 1, &e->ctx);
    if (rc == PAMI_SUCCESS) {
        CF_FAIL(e, "expected pami_context_createv to fail when tasks "
                "registered different protocols, seen PAMI_SUCCESS");
        e->no_destroy = 1; /* the others are not in the job any more */
        return;
    }
    e->ctx = NULL;
    /* Every task must have failed: no task may be left in the job. */
    int failed = 1, all[256];
    if (e->size <= 256 && cf_allgather(&failed, all, sizeof(int)) == 0)
        for (size_t t = 0; t < e->size; t++)
            CF_CHECK(e, all[t] == 1, "expected createv to fail on every "
                     "task, seen task %zu succeed", t);
}

/* Sum of the plug-in's counters whose name says they count refusals. */
static int drops(cf_env_t *e, const char *name, uint64_t *sum)
{
    pami_protocol_stat_t st[64];
    size_t n = 0;
    if (pami_protocol_stats(e->ctx, name, st, 64, &n) != PAMI_SUCCESS)
        return -1;
    int any = 0;
    *sum = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (st[i].name != NULL && (strstr(st[i].name, "drop") ||
                                   strstr(st[i].name, "malformed") ||
                                   strstr(st[i].name, "bad") ||
                                   strstr(st[i].name, "invalid"))) {
            *sum += st[i].value;
            any = 1;
        }
    return any;
}

/* Seeded packets of random bytes and lengths on every id of the
 * plug-in's block, to the next task. */
static int send_garbage(cf_env_t *e, size_t count)
{
    uint64_t x = e->seed * 0x9e3779b97f4a7c15ull + e->task + 1;
    pami_endpoint_t to = cf_ep(e, (pami_task_t)((e->task + 1) % e->size));
    static uint8_t buf[512];
    for (size_t i = 0; i < count && plugin_env.num_dispatch > 0; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        for (size_t b = 0; b < sizeof(buf); b++)
            buf[b] = cf_byte(x, i, 0, b);
        size_t hl = (size_t)(x % 96), dl = (size_t)((x >> 8) % 400);
        pami_send_immediate_t m = {
            .dest = to, .dispatch = i % plugin_env.num_dispatch,
            .header = hl ? buf : NULL, .header_len = hl,
            .data = dl ? buf + 96 : NULL, .data_len = dl};
        pami_result_t rc;
        while ((rc = pami_protocol_send_immediate(&plugin_env, &m)) ==
               PAMI_EAGAIN)
            pami_context_advance(e->ctx, 1);
        if (rc == PAMI_INVAL && hl + dl > 0) {
            /* Beyond immediate_max: the same bytes by pami_protocol_send. */
            pami_send_t l = {.send = m};
            rc = pami_protocol_send(&plugin_env, &l);
        }
        if (rc != PAMI_SUCCESS) {
            CF_FAIL(e, "expected a packet on the plug-in's id %zu to be sent, "
                    "seen %s", m.dispatch, cf_rc_name(rc));
            return -1;
        }
    }
    return 0;
}

static void malformed_packets(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    CF_OK(e, pami_protocol_register(e->client, &wrap, NULL));
    CF_OK(e, pami_context_createv(e->client, NULL, 1, &e->ctx));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint64_t before = 0, after = 0;
    int counted = drops(e, wrap.name, &before);
    CF_CHECK(e, counted >= 0, "expected the plug-in's counters by its name");
    CF_OK(e, pami_dispatch_fence(e->client));
    if (send_garbage(e, 64) != 0)
        return;
    /* Messages of one pair arrive in order: the fence's come after. */
    CF_OK(e, pami_dispatch_fence(e->client));
    drops(e, wrap.name, &after);
    CF_CHECK(e, !counted || after > before,
             "expected the plug-in's drop counters to rise after 64 seeded "
             "malformed packets, seen %llu -> %llu",
             (unsigned long long)before, (unsigned long long)after);
}

static void fini_pending(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    CF_OK(e, pami_protocol_register(e->client, &wrap, NULL));
    CF_OK(e, pami_context_createv(e->client, NULL, 1, &e->ctx));
    CF_OK(e, pami_dispatch_fence(e->client));
    if (send_garbage(e, 32) != 0)
        return;
    /* No fence: the packets may still be on their way at fini. */
    pami_context_t c = e->ctx;
    CF_OK(e, pami_context_destroyv(&e->ctx, 1));
    CF_CHECK(e, count('f', 'p', c) == 1, "expected fini once with packets "
             "pending, seen %zu", count('f', 'p', c));
}

static void peer_dies(cf_env_t *e)
{
    if (tables(e) != 0)
        return;
    pami_task_t victim = (pami_task_t)(e->size - 1);
    CF_OK(e, pami_protocol_register(e->client, &wrap, NULL));
    CF_OK(e, pami_context_createv(e->client, NULL, 1, &e->ctx));
    CF_OK(e, pami_dispatch_fence(e->client));
    if (send_garbage(e, 16) != 0)
        return;
    /* Every task's packets were handled; then the last task goes. It may
     * leave this fence before the others end it (a fence is not a
     * promise that every task has left it), so they may see the death
     * in this fence already, or else in the next one. */
    pami_result_t rc = pami_dispatch_fence(e->client);
    if (e->task == victim) {
        CF_CHECK(e, rc == PAMI_SUCCESS, "expected PAMI_SUCCESS from the "
                 "fence before leaving, seen %s", cf_rc_name(rc));
        cf_report_now(e);
        _exit(0);
    }
    CF_CHECK(e, rc == PAMI_SUCCESS || rc == PAMI_PEER_FAILED,
             "expected PAMI_SUCCESS or PAMI_PEER_FAILED from the fence the "
             "last task leaves, seen %s", cf_rc_name(rc));
    if (rc == PAMI_SUCCESS)
        rc = pami_dispatch_fence(e->client);
    CF_CHECK(e, rc == PAMI_PEER_FAILED, "expected the fence to report the "
             "dead task (PAMI_PEER_FAILED), seen %s", cf_rc_name(rc));
    CF_CHECK(e, victim >= 64 || (failed_tasks >> victim & 1),
             "expected the protocol's peer_failed for task %u, last seen %d",
             victim, (int)failed_task);
    pami_context_t c = e->ctx;
    rc = pami_context_destroyv(&e->ctx, 1);
    CF_CHECK(e, rc == PAMI_SUCCESS || rc == PAMI_PEER_FAILED,
             "expected destroyv PAMI_SUCCESS or PAMI_PEER_FAILED after a "
             "death, seen %s", cf_rc_name(rc));
    CF_CHECK(e, count('f', 'p', c) == 1, "expected fini once after the "
             "death, seen %zu", count('f', 'p', c));
    e->no_destroy = 1; /* the client cannot leave a job with a dead task */
}

const cf_case_t cf_plugin_cases[] = {
    {"protocols", "register_before_createv", 1, 0, CF_OWN_CONTEXTS,
     register_before, NULL},
    {"protocols", "register_after_createv", 1, 0, CF_OWN_CONTEXTS,
     register_after, NULL},
    {"protocols", "bad_tables", 1, 0, CF_OWN_CONTEXTS, bad_tables, NULL},
    {"protocols", "loaded_by_environment", 1, 0, CF_LOAD_PLUGIN,
     by_environment, NULL},
    {"protocols", "mismatched_sets", 2, 0, CF_OWN_CONTEXTS, mismatched_sets, NULL},
    {"protocols", "malformed_packets", 2, 0, CF_OWN_CONTEXTS,
     malformed_packets, NULL},
    {"protocols", "fini_pending", 2, 0, CF_OWN_CONTEXTS, fini_pending, NULL},
    {"protocols", "peer_dies", 2, 0, CF_OWN_CONTEXTS, peer_dies, NULL},
};
const size_t cf_num_plugin_cases =
    sizeof(cf_plugin_cases) / sizeof(cf_plugin_cases[0]);

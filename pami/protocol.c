/*
 * The protocol registry: built-in and program-registered protocols, their
 * blocks of dispatch ids, and their per-context state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv1a.h"
#include "internal.h"
#include "params.h"
#include "pami_protocol.h"

/* Filled by PAMI_PROTOCOL_BUILTIN constructors before main runs. */
static const pami_protocol_ops_t *builtins[PAMI_PROTOCOL_MAX];
static size_t                     num_builtins;

void pami_protocol_builtin(const pami_protocol_ops_t *ops)
{
    /* NULL would be dereferenced when every client sorts the list. */
    if (ops != NULL && num_builtins < PAMI_PROTOCOL_MAX)
        builtins[num_builtins++] = ops;
}

pami_result_t pami_protocols_config_var(unsigned index,
                                        pami_config_var_t *var)
{
    for (size_t i = 0; i < num_builtins; i++) {
        if (index < builtins[i]->num_config) {
            *var = builtins[i]->config[index];
            return PAMI_SUCCESS;
        }
        index -= (unsigned)builtins[i]->num_config;
    }
    return PAMI_NOT_FOUND;
}

static int by_name(const void *a, const void *b)
{
    const pami_protocol_ops_t *x = *(const pami_protocol_ops_t *const *)a;
    const pami_protocol_ops_t *y = *(const pami_protocol_ops_t *const *)b;
    return strcmp(x->name, y->name);
}

static pami_result_t init_one(struct pami_context *ctx, size_t i)
{
    pami_client_impl_t *c = ctx->client;
    pami_protocol_slot_t *p = &c->protocols[i];
    pami_protocol_env_t env = {
        .client        = c,
        .context       = ctx,
        .context_offset = ctx->offset,
        .dispatch_base = p->base,
        .num_dispatch  = p->ops->num_dispatch,
        .cookie        = p->cookie,
    };
    void *state = NULL;
    pami_result_t rc = p->ops->init ? p->ops->init(&env, &state)
                                    : PAMI_SUCCESS;
    if (rc != PAMI_SUCCESS) {
        pami_error("protocol", "'%s' failed to start on context %zu: %s",
                   p->ops->name, ctx->offset, pami_error_text(rc));
        return rc;
    }
    ctx->protocol_state[i] = state;
    ctx->protocols_inited  = i + 1;
    return PAMI_SUCCESS;
}

/* The size of the first ops table this ABI version had: every table
 * must reach at least this far. */
#define OPS_V1_SIZE (offsetof(pami_protocol_ops_t, num_config) + sizeof(size_t))

/* Copies given into *out as this pami's struct, after checking its
 * header. Built-in tables are compiled with libpami itself, so one
 * without a header is taken as current. */
static pami_result_t adopt(const pami_protocol_ops_t *given, bool builtin,
                           pami_protocol_ops_t *out)
{
    PAMI_CHECK(given != NULL, PAMI_INVAL, "protocol",
               "register of a NULL table");
    memset(out, 0, sizeof(*out));
    if (builtin && given->struct_size == 0 && given->abi_version == 0) {
        *out = *given;
        return PAMI_SUCCESS;
    }
    PAMI_CHECK(given->abi_version == PAMI_PROTOCOL_ABI_VERSION, PAMI_INVAL,
               "protocol", "a protocol table of ABI version %u (this pami "
               "speaks %d%s)", given->abi_version, PAMI_PROTOCOL_ABI_VERSION,
               given->abi_version == 0 ? "; the table lacks "
                                         "PAMI_PROTOCOL_OPS_HEADER" : "");
    PAMI_CHECK(given->struct_size >= OPS_V1_SIZE, PAMI_INVAL, "protocol",
               "a protocol table of %u bytes; at least %zu",
               given->struct_size, (size_t)OPS_V1_SIZE);
    memcpy(out, given, given->struct_size < sizeof(*out) ? given->struct_size
                                                         : sizeof(*out));
    out->struct_size = sizeof(*out);
    return PAMI_SUCCESS;
}

/* The last protocol registered, whose init failed on context started:
 * stopped again on the contexts before it, and given up (slot, ids,
 * signature), so a failed register leaves no trace. */
static void drop_last(pami_client_impl_t *c, size_t started, uint64_t sig)
{
    size_t                i = c->num_protocols - 1;
    pami_protocol_slot_t *p = &c->protocols[i];
    size_t                n = p->ops->num_dispatch;
    for (size_t k = started; k-- > 0;) {
        struct pami_context *ctx = c->contexts[k];
        if (p->ops->fini != NULL)
            p->ops->fini(ctx, ctx->protocol_state[i]);
        ctx->protocol_state[i] = NULL;
        ctx->protocols_inited  = i;
        memset(&ctx->dispatch[p->base], 0, n * sizeof(ctx->dispatch[0]));
    }
    if (n > 0)
        c->protocol_at[p->base - PAMI_DISPATCH_USER_MAX] = 0;
    c->protocol_ids -= n;
    c->protocol_sig  = sig;
    c->num_protocols = i;
}

pami_result_t pami_protocols_add(pami_client_impl_t *c,
                                 const pami_protocol_ops_t *given,
                                 void *cookie, bool builtin)
{
    pami_protocol_ops_t table;
    pami_result_t rc = adopt(given, builtin, &table);
    if (rc != PAMI_SUCCESS)
        return rc;
    const pami_protocol_ops_t *ops = &table;
    PAMI_CHECK(ops->name != NULL && ops->name[0] != '\0',
               PAMI_INVAL, "protocol", "register of a table without a name");
    PAMI_CHECK(ops->num_dispatch <= PAMI_PROTOCOL_DISPATCH_MAX, PAMI_INVAL,
               "protocol", "'%s' asks for %zu dispatch ids; at most %d",
               ops->name, ops->num_dispatch, PAMI_PROTOCOL_DISPATCH_MAX);
    for (size_t i = 0; i < c->num_protocols; i++)
        PAMI_CHECK(strcmp(c->protocols[i].ops->name, ops->name) != 0,
                   PAMI_INVAL, "protocol", "a protocol named '%s' is "
                   "registered already", ops->name);
    PAMI_CHECK(c->num_protocols < PAMI_PROTOCOL_MAX, PAMI_ENOMEM, "protocol",
               "no slot left for '%s' (%d protocols at most)", ops->name,
               PAMI_PROTOCOL_MAX);
    PAMI_CHECK(c->protocol_ids + ops->num_dispatch <= PAMI_DISPATCH_PROTOCOL_MAX,
               PAMI_ENOMEM, "protocol", "no dispatch ids left for '%s' "
               "(%zu of %d taken)", ops->name, c->protocol_ids,
               PAMI_DISPATCH_PROTOCOL_MAX);

    uint64_t sig = c->protocol_sig;
    size_t   i   = c->num_protocols++;
    c->protocols[i] = (pami_protocol_slot_t){
        .given   = given,
        .table   = table,
        .cookie  = cookie,
        .base    = PAMI_DISPATCH_USER_MAX + c->protocol_ids,
        .builtin = builtin,
    };
    c->protocols[i].ops = ops = &c->protocols[i].table;
    if (ops->num_dispatch > 0)
        c->protocol_at[c->protocols[i].base - PAMI_DISPATCH_USER_MAX] =
            (uint8_t)(i + 1);
    c->protocol_ids += ops->num_dispatch;
    /* Order of registration decides the ids: fold it into the signature
     * createv compares across tasks. */
    c->protocol_sig = pami_fnv1a_str(c->protocol_sig, ops->name);
    c->protocol_sig = (c->protocol_sig ^ ops->num_dispatch) * PAMI_FNV1A_PRIME;

    for (size_t k = 0; k < c->num_contexts; k++) {
        pami_result_t rc = init_one(c->contexts[k], i);
        if (rc != PAMI_SUCCESS) {
            drop_last(c, k, sig);
            return rc;
        }
    }
    pami_debug("protocol", "'%s' v%u: dispatch ids %zu..%zu", ops->name,
               ops->version, c->protocols[i].base,
               c->protocols[i].base + ops->num_dispatch - 1);
    return PAMI_SUCCESS;
}

pami_result_t pami_protocols_builtin(pami_client_impl_t *c)
{
    c->protocol_sig = PAMI_FNV1A_INIT;
    const pami_protocol_ops_t *sorted[PAMI_PROTOCOL_MAX];
    memcpy(sorted, builtins, num_builtins * sizeof(*sorted));
    qsort(sorted, num_builtins, sizeof(*sorted), by_name);
    for (size_t i = 0; i < num_builtins; i++) {
        pami_result_t rc = pami_protocols_add(c, sorted[i], NULL, true);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    return PAMI_SUCCESS;
}

pami_result_t pami_protocol_register(pami_client_t c,
                                     const pami_protocol_ops_t *ops,
                                     void *cookie)
{
    PAMI_CHECK(c != NULL, PAMI_INVAL, "protocol", "register on a NULL client");
    PAMI_CHECK(pami_tls_progressing == NULL, PAMI_IN_HANDLER, "protocol",
               "pami_protocol_register called from a handler");
    return pami_protocols_add(c, ops, cookie, false);
}

pami_result_t pami_protocols_init(struct pami_context *ctx)
{
    for (size_t i = 0; i < ctx->client->num_protocols; i++) {
        pami_result_t rc = init_one(ctx, i);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    return PAMI_SUCCESS;
}

void pami_protocols_fini(struct pami_context *ctx)
{
    pami_client_impl_t *c = ctx->client;
    while (ctx->protocols_inited > 0) {
        size_t i = --ctx->protocols_inited;
        if (c->protocols[i].ops->fini != NULL)
            c->protocols[i].ops->fini(ctx, ctx->protocol_state[i]);
        ctx->protocol_state[i] = NULL;
    }
}

void pami_protocols_peer_failed(struct pami_context *ctx, uint32_t task)
{
    pami_client_impl_t *c = ctx->client;
    for (size_t i = 0; i < ctx->protocols_inited; i++)
        if (c->protocols[i].ops->peer_failed != NULL)
            c->protocols[i].ops->peer_failed(ctx, ctx->protocol_state[i],
                                             task);
}

/* The dispatch id of env's index: env must be one a protocol got from
 * init (its block, whole) and index inside that block. */
static pami_result_t protocol_id(const pami_protocol_env_t *env, size_t index,
                                 const char *what, size_t *id)
{
    if (unlikely(env == NULL || env->context == NULL)) {
        pami_warn("protocol", "%s without an environment", what);
        return PAMI_INVAL;
    }
    pami_client_impl_t *c   = env->context->client;
    size_t              off = env->dispatch_base - PAMI_DISPATCH_USER_MAX;
    size_t              at  = env->dispatch_base >= PAMI_DISPATCH_USER_MAX &&
                                 off < c->protocol_ids
                                  ? c->protocol_at[off] : 0;
    if (unlikely(at == 0 ||
                 c->protocols[at - 1].ops->num_dispatch != env->num_dispatch)) {
        pami_warn("protocol", "%s: dispatch ids %zu..+%zu belong to no "
                              "protocol", what, env->dispatch_base,
                  env->num_dispatch);
        return PAMI_INVAL;
    }
    if (unlikely(index >= env->num_dispatch)) {
        pami_warn("protocol", "%s: dispatch index %zu is beyond the "
                              "protocol's %zu ids", what, index,
                  env->num_dispatch);
        return PAMI_INVAL;
    }
    *id = env->dispatch_base + index;
    return PAMI_SUCCESS;
}

pami_result_t pami_protocol_dispatch_set(const pami_protocol_env_t *env,
                                         size_t index, pami_dispatch_fn fn,
                                         void *cookie)
{
    size_t id;
    pami_result_t rc = protocol_id(env, index, "dispatch_set", &id);
    if (rc != PAMI_SUCCESS)
        return rc;
    env->context->dispatch[id].fn     = fn;
    env->context->dispatch[id].cookie = cookie;
    return PAMI_SUCCESS;
}

pami_result_t pami_protocol_send_immediate_sized(
    const pami_protocol_env_t *env, const pami_send_immediate_t *params,
    size_t size)
{
    size_t id;
    if (unlikely(params == NULL)) {
        pami_warn("protocol", "send_immediate with NULL params");
        return PAMI_INVAL;
    }
    pami_send_immediate_t buf;
    pami_result_t rc = pami_send_immediate_import(params, size, &buf, &params);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    rc = protocol_id(env, params->dispatch, "send_immediate",
                                   &id);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    pami_send_immediate_t p = *params;
    p.dispatch = id;
    return pami_send_immediate_protocol(env->context, &p);
}

pami_result_t pami_protocol_send_sized(const pami_protocol_env_t *env,
                                       const pami_send_t *params, size_t size)
{
    size_t id;
    if (unlikely(params == NULL)) {
        pami_warn("protocol", "send with NULL params");
        return PAMI_INVAL;
    }
    pami_send_t   buf;
    pami_result_t rc = pami_send_import(params, size, &buf, &params);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    rc = protocol_id(env, params->send.dispatch, "send", &id);
    if (unlikely(rc != PAMI_SUCCESS))
        return rc;
    pami_send_t p = *params;
    p.send.dispatch = id;
    return pami_send_protocol(env->context, &p);
}

int pami_protocol_in_handler(pami_context_t ctx)
{
    return ctx != NULL && pami_progressing(ctx);
}

void *pami_protocol_state(pami_context_t ctx, const pami_protocol_ops_t *ops)
{
    if (ctx == NULL || ops == NULL)
        return NULL;
    pami_client_impl_t *c = ctx->client;
    for (size_t i = 0; i < ctx->protocols_inited; i++)
        if (c->protocols[i].given == ops)
            return ctx->protocol_state[i];
    return NULL;
}

/* Layouts of the structs pami fills here (params.h). */
PAMI_PARAMS_LAYOUTS(info_layouts, pami_protocol_info_t,
                    PAMI_PARAMS_PREFIX(pami_protocol_info_t, name),
                    PAMI_PARAMS_PREFIX(pami_protocol_info_t, version),
                    PAMI_PARAMS_PREFIX(pami_protocol_info_t, dispatch_base),
                    PAMI_PARAMS_PREFIX(pami_protocol_info_t, num_dispatch));
PAMI_PARAMS_LAYOUTS(job_key_layouts, pami_protocol_job_key_t,
                    PAMI_PARAMS_PREFIX(pami_protocol_job_key_t, name));

pami_result_t pami_protocol_query_sized(pami_client_t c, size_t index,
                                        pami_protocol_info_t *out,
                                        size_t size)
{
    PAMI_CHECK(c != NULL && out != NULL, PAMI_INVAL, "protocol",
               "query with a NULL client or output");
    pami_result_t rc = pami_params_out(&info_layouts, size);
    if (rc != PAMI_SUCCESS)
        return rc;
    if (index >= c->num_protocols)
        return PAMI_NOT_FOUND;
    const pami_protocol_slot_t *p = &c->protocols[index];
    pami_protocol_info_t info_full;
    pami_protocol_info_t *info = &info_full;
    *info = (pami_protocol_info_t){
        .name          = p->ops->name,
        .version       = p->ops->version,
        .dispatch_base = p->base,
        .num_dispatch  = p->ops->num_dispatch,
        .builtin       = p->builtin,
    };
    memcpy(out, info, size);
    return PAMI_SUCCESS;
}

pami_result_t pami_protocol_stats(pami_context_t ctx, const char *name,
                                  pami_protocol_stat_t *out, size_t max,
                                  size_t *n)
{
    PAMI_CHECK(ctx != NULL && name != NULL && n != NULL &&
                   (out != NULL || max == 0),
               PAMI_INVAL, "protocol", "stats with a NULL argument");
    pami_client_impl_t *c = ctx->client;
    for (size_t i = 0; i < ctx->protocols_inited; i++) {
        const pami_protocol_ops_t *ops = c->protocols[i].ops;
        if (strcmp(ops->name, name) != 0)
            continue;
        *n = ops->stats ? ops->stats(ctx->protocol_state[i], out, max) : 0;
        return PAMI_SUCCESS;
    }
    return PAMI_NOT_FOUND;
}

void pami_protocol_log(pami_protocol_log_level_t level, const char *subsys,
                       const char *fmt, ...)
{
    /* A level outside the enum would index past the log's level names;
     * it is taken as an error, so the line is not lost. */
    if ((unsigned)level > PAMI_PROTOCOL_LOG_DEBUG)
        level = PAMI_PROTOCOL_LOG_ERROR;
    if (subsys == NULL)
        subsys = "protocol";
    if (fmt == NULL) {
        pami_warn(subsys, "pami_protocol_log with a NULL format");
        return;
    }
    if ((int)level > pami_log_level_current)
        return;
    char    line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pami_log_emit((pami_log_level_t)level, subsys, "%s", line);
}

pami_result_t pami_protocol_job_key_sized(pami_client_t client,
                                          pami_protocol_job_key_t *out,
                                          size_t size)
{
    PAMI_CHECK(client != NULL && out != NULL, PAMI_INVAL, "protocol",
               "job_key with a NULL client or output");
    pami_result_t rc = pami_params_out(&job_key_layouts, size);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_protocol_job_key_t key_full, *key = &key_full;
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    rc = pami_client_query(client, &a);
    if (rc != PAMI_SUCCESS)
        return rc;
    const char *id = a.job_id != NULL ? a.job_id : "nojob";
    key->hash = pami_fnv1a_str(PAMI_FNV1A_INIT, id);
    size_t i = 0;
    for (; id[i] != '\0' && i + 1 < sizeof(key->name); i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        key->name[i] = ok ? c : '_';
    }
    key->name[i] = '\0';
    memcpy(out, key, size);
    return PAMI_SUCCESS;
}

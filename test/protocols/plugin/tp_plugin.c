/*
 * A protocol plug-in for the loading tests, built several ways from this
 * one file (TP_VARIANT): good; built for another ABI version; without the
 * entry point; with a built-in protocol's name; with no protocol.
 * It echoes: a packet to index 0 comes back on index 1, counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pami_protocol.h"

#define TP_GOOD     0
#define TP_ABI      1
#define TP_NO_ENTRY 2
#define TP_CLASH    3
#define TP_NO_OPS   4

typedef struct {
    pami_protocol_env_t env;
    uint64_t            pings, pongs;
} tp_state_t;

static void tp_ping(pami_context_t ctx, void *cookie, const void *header,
                    size_t header_size, const void *data, size_t data_size,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)data_size; (void)recv;
    tp_state_t *st = cookie;
    st->pings++;
    pami_send_immediate_t back = {.dispatch = 1, .dest = origin,
                                  .header = header, .header_len = header_size};
    if (pami_protocol_send_immediate(&st->env, &back) != PAMI_SUCCESS)
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, "test.plugin",
                          "echo failed");
}

static void tp_pong(pami_context_t ctx, void *cookie, const void *header,
                    size_t header_size, const void *data, size_t data_size,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)header; (void)header_size; (void)data; (void)data_size;
    (void)origin; (void)recv;
    ((tp_state_t *)cookie)->pongs++;
}

static pami_result_t tp_init(const pami_protocol_env_t *env, void **state)
{
    tp_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->env = *env;
    pami_protocol_dispatch_set(env, 0, tp_ping, st);
    pami_protocol_dispatch_set(env, 1, tp_pong, st);
    *state = st;
    return PAMI_SUCCESS;
}

static void tp_fini(pami_context_t ctx, void *state)
{
    (void)ctx;
    free(state);
}

static size_t tp_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    tp_state_t *st = state;
    if (max > 0)
        out[0] = (pami_protocol_stat_t){"pings", st->pings};
    if (max > 1)
        out[1] = (pami_protocol_stat_t){"pongs", st->pongs};
    return 2;
}

static const pami_protocol_ops_t tp_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
#if TP_VARIANT == TP_CLASH
    .name = "svd",
#else
    .name = "test.plugin",
#endif
    .version = 1, .num_dispatch = 2,
    .init = tp_init, .fini = tp_fini, .stats = tp_stats};

/* Its own case: every task pings its right neighbour and waits for the
 * echo. */
static int tp_case_echo(const pami_protocol_case_env_t *env, char *why,
                        size_t why_len)
{
    tp_state_t *st = pami_protocol_state(env->context, &tp_ops);
    if (st == NULL) {
        snprintf(why, why_len, "expected the protocol's state on the "
                               "context, saw none");
        return 1;
    }
    pami_endpoint_t ep;
    pami_task_t     right = (pami_task_t)((env->task + 1) % env->size);
    if (pami_endpoint_create(env->client, right, 0, &ep) != PAMI_SUCCESS) {
        snprintf(why, why_len, "endpoint to task %u failed", right);
        return 1;
    }
    uint64_t before = st->pongs, tag = env->seed;
    pami_send_immediate_t p = {.dispatch = 0, .dest = ep,
                               .header = &tag, .header_len = sizeof(tag)};
    pami_result_t rc;
    while ((rc = pami_protocol_send_immediate(&st->env, &p)) == PAMI_EAGAIN)
        pami_context_advance(env->context, 1);
    if (rc != PAMI_SUCCESS) {
        snprintf(why, why_len, "ping: expected PAMI_SUCCESS, saw %s",
                 pami_error_text(rc));
        return 1;
    }
    while (st->pongs == before)
        if ((rc = pami_context_wait(env->context, 20000)) != PAMI_SUCCESS) {
            snprintf(why, why_len, "expected the echo, saw %s waiting for it",
                     pami_error_text(rc));
            return 1;
        }
    return 0;
}

static const pami_protocol_case_t tp_echo = {
    .name = "echo", .description = "a ping to a neighbour comes back",
    .min_tasks = 1, .max_tasks = 0, .run = tp_case_echo};
__attribute__((unused))
static const pami_protocol_case_t *const tp_cases[] = {&tp_echo};

#if TP_VARIANT != TP_NO_ENTRY
static const pami_protocol_plugin_t tp_plugin = {
#if TP_VARIANT == TP_ABI
    .struct_size = sizeof(pami_protocol_plugin_t),
    .abi_version = PAMI_PROTOCOL_ABI_VERSION + 1,
#else
    PAMI_PROTOCOL_PLUGIN_HEADER,
#endif
#if TP_VARIANT != TP_NO_OPS
    .ops = &tp_ops,
#endif
    .cases = tp_cases, .num_cases = 1};
PAMI_PROTOCOL_PLUGIN(tp_plugin)
#endif

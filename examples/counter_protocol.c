/*
 * A protocol of your own: a remote counter service on pami's protocol SDK.
 *
 * Every task keeps one counter. counter_add(ctx, task, delta, fn, cookie)
 * adds delta to the counter of `task` and hands fn the value it had before.
 * The protocol takes two dispatch ids from pami (request, reply), keeps its
 * state per context, validates what it receives and counts what it drops.
 * Copy it as the skeleton of your own protocol.
 *
 *   pamirun -n 4 counter_protocol [adds per peer]
 */
#include <pami.h>
#include <pami_protocol.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the protocol ---- */

enum { ID_ADD = 0, ID_REPLY = 1, NUM_IDS };
#define COUNTER_VERSION 1

/* Wire form of both packets, sent as data of pami_protocol_send_immediate. */
typedef struct {
    uint8_t  version;
    uint8_t  pad[7];
    int64_t  value;  /* request: the delta; reply: the old value */
    uint64_t token;  /* names the request at its origin */
} counter_msg_t;

typedef void (*counter_fn)(void *cookie, pami_result_t result, int64_t old);

typedef struct {
    counter_fn fn;
    void      *cookie;
} pending_t;

typedef struct {
    pami_protocol_env_t env;     /* ids and context, kept from init */
    int64_t             value;   /* this task's counter */
    pending_t          *pending; /* indexed by token */
    size_t              npending;
    uint64_t            served, dropped;
} counter_state_t;

static int valid(counter_state_t *st, const void *data, size_t len,
                 const char *what)
{
    counter_msg_t m;
    if (len != sizeof(m)) {
        st->dropped++;
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "counter",
                          "dropped a %s of %zu bytes", what, len);
        return 0;
    }
    memcpy(&m, data, sizeof(m));
    if (m.version != COUNTER_VERSION) {
        st->dropped++;
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "counter",
                          "dropped a %s of version %u", what, m.version);
        return 0;
    }
    return 1;
}

static void on_add(pami_context_t ctx, void *cookie, const void *header,
                   size_t header_size, const void *data, size_t data_size,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)header; (void)header_size; (void)recv;
    counter_state_t *st = cookie;
    if (!valid(st, data, data_size, "request"))
        return;
    counter_msg_t m;
    memcpy(&m, data, sizeof(m));
    int64_t old = st->value;
    st->value += m.value;
    st->served++;
    m.value = old;
    /* pami_protocol_send copies nothing but the header: carry the reply
     * there so the stack buffer may go when this handler returns. Sends
     * name the protocol's own ids by index (the program's pami_send*
     * cannot reach them). */
    pami_send_t reply = {.send = {.dest = origin, .dispatch = ID_REPLY,
                                  .header = &m, .header_len = sizeof(m)}};
    pami_protocol_send(&st->env, &reply);
}

static void on_reply(pami_context_t ctx, void *cookie, const void *header,
                     size_t header_size, const void *data, size_t data_size,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)data_size; (void)origin; (void)recv;
    counter_state_t *st = cookie;
    if (!valid(st, header, header_size, "reply"))
        return;
    counter_msg_t m;
    memcpy(&m, header, sizeof(m));
    if (m.token >= st->npending || st->pending[m.token].fn == NULL) {
        st->dropped++;
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "counter",
                          "dropped a reply for no request");
        return;
    }
    pending_t p = st->pending[m.token];
    st->pending[m.token].fn = NULL;
    p.fn(p.cookie, PAMI_SUCCESS, m.value);
}

static pami_result_t counter_init(const pami_protocol_env_t *env,
                                  void **state)
{
    counter_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->env = *env;
    pami_protocol_dispatch_set(env, ID_ADD, on_add, st);
    pami_protocol_dispatch_set(env, ID_REPLY, on_reply, st);
    *state = st;
    return PAMI_SUCCESS;
}

static void counter_fini(pami_context_t ctx, void *state)
{
    (void)ctx;
    counter_state_t *st = state;
    for (size_t i = 0; i < st->npending; i++)
        if (st->pending[i].fn != NULL)
            st->pending[i].fn(st->pending[i].cookie, PAMI_SHUTDOWN, 0);
    free(st->pending);
    free(st);
}

static size_t counter_stats(void *state, pami_protocol_stat_t *out,
                            size_t max)
{
    counter_state_t *st = state;
    pami_protocol_stat_t all[] = {{"served", st->served},
                                  {"dropped", st->dropped}};
    size_t n = sizeof(all) / sizeof(all[0]);
    if (out != NULL && max > 0) /* callers may only ask how many */
        memcpy(out, all, (max < n ? max : n) * sizeof(*out));
    return n;
}

static const pami_protocol_ops_t counter_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = "example.counter",
    .version      = COUNTER_VERSION,
    .num_dispatch = NUM_IDS,
    .init         = counter_init,
    .fini         = counter_fini,
    .stats        = counter_stats,
};

static pami_result_t counter_add(pami_context_t ctx, pami_task_t task,
                                 int64_t delta, counter_fn fn, void *cookie)
{
    counter_state_t *st = pami_protocol_state(ctx, &counter_ops);
    if (st == NULL)
        return PAMI_INVAL;
    size_t token = 0;
    while (token < st->npending && st->pending[token].fn != NULL)
        token++;
    if (token == st->npending) {
        size_t n = st->npending ? 2 * st->npending : 16;
        pending_t *p = realloc(st->pending, n * sizeof(*p));
        if (p == NULL)
            return PAMI_ENOMEM;
        memset(p + st->npending, 0, (n - st->npending) * sizeof(*p));
        st->pending  = p;
        st->npending = n;
    }
    pami_endpoint_t dest;
    pami_result_t rc = pami_endpoint_create(st->env.client, task,
                                            0, &dest);
    if (rc != PAMI_SUCCESS)
        return rc;
    counter_msg_t m = {.version = COUNTER_VERSION, .value = delta,
                       .token = token};
    pami_send_immediate_t s = {.dest = dest,
                               .dispatch = ID_ADD,
                               .data = &m, .data_len = sizeof(m)};
    while ((rc = pami_protocol_send_immediate(&st->env, &s)) == PAMI_EAGAIN)
        pami_context_advance(ctx, 1);
    if (rc == PAMI_SUCCESS)
        st->pending[token] = (pending_t){fn, cookie};
    return rc;
}

/* ---- a program using it ---- */

typedef struct {
    size_t  replies;
    int     failed;
    int64_t max_old;
} tally_t;

static void added(void *cookie, pami_result_t result, int64_t old)
{
    tally_t *t = cookie;
    t->replies++;
    if (result != PAMI_SUCCESS)
        t->failed = 1;
    if (old > t->max_old)
        t->max_old = old;
}

int main(int argc, char **argv)
{
    long adds = argc > 1 ? atol(argv[1]) : 1000;
    pami_client_t  client;
    pami_context_t ctx;
    /* Register on every task, in the same order, before createv. */
    if (pami_client_create("counter", NULL, &client) != PAMI_SUCCESS ||
        pami_protocol_register(client, &counter_ops, NULL) != PAMI_SUCCESS ||
        pami_context_createv(client, NULL, 1, &ctx) != PAMI_SUCCESS)
        return 1;
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_SIZE};
    pami_client_query(client, &a);

    tally_t t = {0};
    size_t  want = 0;
    for (long i = 0; i < adds; i++)
        for (pami_task_t p = 0; p < a.size; p++)
            if (p != a.task && counter_add(ctx, p, 1, added, &t) ==
                                   PAMI_SUCCESS)
                want++;
    while (t.replies < want)
        pami_context_wait(ctx, 1000);
    /* Every add of every task has been answered once all passed here. */
    pami_dispatch_fence(client);

    counter_state_t *st = pami_protocol_state(ctx, &counter_ops);
    int64_t expect = (int64_t)adds * (int64_t)(a.size - 1);
    int ok = !t.failed && st->value == expect;
    printf("task %u: counter %lld (expected %lld), %zu adds answered%s\n",
           a.task, (long long)st->value, (long long)expect, t.replies,
           ok ? "" : " - WRONG");
    pami_client_destroy(&client);
    return ok ? 0 : 1;
}

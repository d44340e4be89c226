/*
 * An example protocol plug-in with its own conformance cases.
 *
 * "example.accumulate": every task keeps one 64-bit accumulator;
 * acc_add(ctx, task, delta, ...) adds delta to task's accumulator and
 * returns the value it had. Two ids: request and reply. Every packet is
 * checked (length, magic, version) and what fails is dropped and counted.
 *
 * Built out of tree against an installed pami:
 *   cc -shared -fPIC -o libexample_protocol.so example_protocol.c \
 *      $(pkg-config --cflags --libs pami)
 *   pamirun -n 4 pami-conformance --protocol ./libexample_protocol.so
 * Built with -DEXAMPLE_BROKEN it has two bugs its own cases catch: it
 * skips the version check and adds one too many for deltas above 1.
 */
#include <pami.h>
#include <pami_protocol.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ID_ADD = 0, ID_REPLY = 1, NUM_IDS };
#define ACC_VERSION 1
#define ACC_MAGIC   0x41434331u /* "ACC1" */

/* The wire form of both packets, carried as the header. */
typedef struct {
    uint32_t magic;
    uint8_t  version;
    uint8_t  pad[3];
    int64_t  value;  /* request: delta; reply: the old value */
    uint64_t token;  /* names the request at its origin */
} acc_msg_t;

typedef struct {
    pami_protocol_env_t env;
    int64_t             value;
    size_t              outstanding; /* requests sent, not answered */
    int64_t            *olds;        /* by token, for the cases */
    size_t              nolds;
    uint64_t            served, answered, dropped;
} acc_state_t;

static const pami_protocol_ops_t acc_ops;

static int acc_valid(acc_state_t *st, const void *h, size_t len,
                     acc_msg_t *m)
{
    const char *why = NULL;
    if (len != sizeof(*m))
        why = "length";
    else {
        memcpy(m, h, sizeof(*m));
        if (m->magic != ACC_MAGIC)
            why = "magic";
#ifndef EXAMPLE_BROKEN
        else if (m->version != ACC_VERSION)
            why = "version";
#endif
    }
    if (why == NULL)
        return 1;
    st->dropped++;
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "example.accumulate",
                      "dropped a packet of %zu bytes: bad %s", len, why);
    return 0;
}

static void on_add(pami_context_t ctx, void *cookie, const void *header,
                   size_t header_size, const void *data, size_t data_size,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)data_size; (void)recv;
    acc_state_t *st = cookie;
    acc_msg_t m;
    if (!acc_valid(st, header, header_size, &m))
        return;
    int64_t old = st->value;
    st->value += m.value;
#ifdef EXAMPLE_BROKEN
    if (m.value > 1)
        st->value += 1; /* the second bug: larger deltas count one more */
#endif
    st->served++;
    m.value = old;
    /* pami_send copies the header: the reply may live on this stack. */
    pami_send_t reply = {.send = {.dest = origin, .dispatch = ID_REPLY,
                                  .header = &m, .header_len = sizeof(m)}};
    if (pami_protocol_send(&st->env, &reply) != PAMI_SUCCESS)
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, "example.accumulate",
                          "reply could not be sent");
}

static void on_reply(pami_context_t ctx, void *cookie, const void *header,
                     size_t header_size, const void *data, size_t data_size,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)data_size; (void)origin; (void)recv;
    acc_state_t *st = cookie;
    acc_msg_t m;
    if (!acc_valid(st, header, header_size, &m))
        return;
    if (m.token >= st->nolds || st->outstanding == 0) {
        st->dropped++;
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "example.accumulate",
                          "dropped a reply to no request");
        return;
    }
    st->olds[m.token] = m.value;
    st->outstanding--;
    st->answered++;
}

static pami_result_t acc_init(const pami_protocol_env_t *env, void **state)
{
    acc_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->env = *env;
    pami_protocol_dispatch_set(env, ID_ADD, on_add, st);
    pami_protocol_dispatch_set(env, ID_REPLY, on_reply, st);
    *state = st;
    return PAMI_SUCCESS;
}

static void acc_fini(pami_context_t ctx, void *state)
{
    (void)ctx;
    acc_state_t *st = state;
    free(st->olds);
    free(st);
}

static size_t acc_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    acc_state_t *st = state;
    pami_protocol_stat_t all[] = {{"served", st->served},
                                  {"answered", st->answered},
                                  {"dropped", st->dropped}};
    size_t n = sizeof(all) / sizeof(all[0]);
    if (out != NULL && max > 0) /* callers may only ask how many */
        memcpy(out, all, (max < n ? max : n) * sizeof(*out));
    return n;
}

static const pami_protocol_ops_t acc_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = "example.accumulate",
    .version      = ACC_VERSION,
    .num_dispatch = NUM_IDS,
    .init         = acc_init,
    .fini         = acc_fini,
    .stats        = acc_stats,
};

/* Sends one request; its answer lands in st->olds[token]. */
static pami_result_t acc_add(pami_context_t ctx, pami_task_t task,
                             int64_t delta, uint64_t token)
{
    acc_state_t *st = pami_protocol_state(ctx, &acc_ops);
    if (st == NULL)
        return PAMI_INVAL;
    if (token >= st->nolds) {
        size_t n = token + 1 > 2 * st->nolds ? token + 1 : 2 * st->nolds;
        int64_t *o = realloc(st->olds, n * sizeof(*o));
        if (o == NULL)
            return PAMI_ENOMEM;
        st->olds = o;
        st->nolds = n;
    }
    pami_endpoint_t dest;
    pami_result_t rc = pami_endpoint_create(st->env.client, task, 0, &dest);
    if (rc != PAMI_SUCCESS)
        return rc;
    acc_msg_t m = {.magic = ACC_MAGIC, .version = ACC_VERSION,
                   .value = delta, .token = token};
    pami_send_immediate_t s = {.dest = dest, .dispatch = ID_ADD,
                               .header = &m, .header_len = sizeof(m)};
    while ((rc = pami_protocol_send_immediate(&st->env, &s)) == PAMI_EAGAIN)
        pami_context_advance(ctx, 1);
    if (rc == PAMI_SUCCESS)
        st->outstanding++;
    return rc;
}

/* ---- the protocol's own conformance cases ---- */

#define FAIL(...) (snprintf(why, why_len, __VA_ARGS__), 1)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits by the clock: every event ends one pami_context_wait early. */
static int wait_answers(const pami_protocol_case_env_t *env, acc_state_t *st,
                        char *why, size_t why_len)
{
    double end = now_s() + 25;
    while (st->outstanding > 0 && now_s() < end)
        pami_context_wait(env->context, 100);
    if (st->outstanding > 0)
        return FAIL("expected every request answered within 25 s, seen %zu "
                    "outstanding", st->outstanding);
    return 0;
}

static uint64_t stat_of(pami_context_t ctx, const char *name)
{
    pami_protocol_stat_t s[8];
    size_t n = 0;
    if (pami_protocol_stats(ctx, acc_ops.name, s, 8, &n) != PAMI_SUCCESS)
        return UINT64_MAX;
    for (size_t i = 0; i < n && i < 8; i++)
        if (strcmp(s[i].name, name) == 0)
            return s[i].value;
    return UINT64_MAX;
}

#define ROUNDS 20

/* Each task adds task+1 to every other task's accumulator ROUNDS times;
 * task t's ends at ROUNDS * (1 + 2 + ... + size - (t + 1)). */
static int case_add_every_peer(const pami_protocol_case_env_t *env,
                               char *why, size_t why_len)
{
    acc_state_t *st = pami_protocol_state(env->context, &acc_ops);
    if (st == NULL)
        return FAIL("expected the protocol's state on the context, seen none");
    uint64_t token = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (size_t t = 0; t < env->size; t++) {
            if (t == env->task)
                continue;
            pami_result_t rc = acc_add(env->context, (pami_task_t)t,
                                       (int64_t)env->task + 1, token++);
            if (rc != PAMI_SUCCESS)
                return FAIL("expected acc_add to succeed, seen %s",
                            pami_error_text(rc));
        }
    if (wait_answers(env, st, why, why_len))
        return 1;
    if (pami_dispatch_fence(env->client) != PAMI_SUCCESS)
        return FAIL("expected the fence to succeed");
    int64_t want = (int64_t)ROUNDS *
                   ((int64_t)(env->size * (env->size + 1) / 2) -
                    (int64_t)env->task - 1);
    if (st->value != want)
        return FAIL("expected the accumulator at %lld, seen %lld",
                    (long long)want, (long long)st->value);
    return 0;
}

/* Requests interleaved with the program's messages on the ids next to the
 * protocol's block (dispatch_max - 1) and on id 0. */
typedef struct {
    size_t got;
} user_t;

static void on_user(pami_context_t c, void *k, const void *h, size_t hs,
                    const void *d, size_t ds, pami_endpoint_t o,
                    pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
    ((user_t *)k)->got++;
}

static int case_interleaved(const pami_protocol_case_env_t *env, char *why,
                            size_t why_len)
{
    acc_state_t *st = pami_protocol_state(env->context, &acc_ops);
    if (st == NULL)
        return FAIL("expected the protocol's state on the context, seen none");
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_DISPATCH_MAX};
    pami_client_query(env->client, &a);
    user_t u = {0};
    size_t ids[2] = {0, a.dispatch_max - 1};
    for (int i = 0; i < 2; i++)
        if (pami_dispatch_set(env->context, ids[i], on_user, &u, NULL) !=
            PAMI_SUCCESS)
            return FAIL("expected user id %zu to register", ids[i]);
    /* Baselines before the fence: a peer that left it may send at once. */
    uint64_t served0 = st->served;
    pami_dispatch_fence(env->client);
    size_t n = 200;
    pami_endpoint_t to;
    pami_task_t next = (pami_task_t)((env->task + 1) % env->size);
    pami_endpoint_create(env->client, next, 0, &to);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = env->seed + i;
        pami_send_immediate_t m = {.dest = to, .dispatch = ids[i % 2],
                                   .header = &v, .header_len = sizeof(v)};
        pami_result_t rc;
        while ((rc = pami_send_immediate(env->context, &m)) == PAMI_EAGAIN)
            pami_context_advance(env->context, 1);
        if (rc != PAMI_SUCCESS)
            return FAIL("expected a user send to succeed, seen %s",
                        pami_error_text(rc));
        if ((rc = acc_add(env->context, next, 1, i)) != PAMI_SUCCESS)
            return FAIL("expected acc_add to succeed, seen %s",
                        pami_error_text(rc));
    }
    if (wait_answers(env, st, why, why_len))
        return 1;
    double end = now_s() + 25;
    while (u.got < n && now_s() < end)
        pami_context_wait(env->context, 100);
    pami_dispatch_fence(env->client);
    if (u.got != n || st->served - served0 != n)
        return FAIL("expected %zu user messages and %zu requests served, "
                    "seen %zu and %llu", n, n, u.got,
                    (unsigned long long)(st->served - served0));
    for (int i = 0; i < 2; i++)
        pami_dispatch_set(env->context, ids[i], NULL, NULL, NULL);
    return 0;
}

/* Seeded malformed packets on the protocol's own ids: each is dropped and
 * counted, none changes the accumulator. */
static int case_malformed_dropped(const pami_protocol_case_env_t *env,
                                  char *why, size_t why_len)
{
    acc_state_t *st = pami_protocol_state(env->context, &acc_ops);
    if (st == NULL)
        return FAIL("expected the protocol's state on the context, seen none");
    uint64_t dropped0 = stat_of(env->context, "dropped");
    int64_t value0 = st->value;
    pami_dispatch_fence(env->client);
    pami_endpoint_t to;
    pami_endpoint_create(env->client,
                         (pami_task_t)((env->task + 1) % env->size), 0, &to);
    uint64_t x = env->seed * 0x9e3779b97f4a7c15ull + env->task;
    size_t sent = 0;
    for (int i = 0; i < 64; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint8_t buf[64];
        for (size_t b = 0; b < sizeof(buf); b++)
            buf[b] = (uint8_t)(x >> (b % 8 * 8)) ^ (uint8_t)b;
        acc_msg_t m = {.magic = ACC_MAGIC, .version = ACC_VERSION + 1 +
                       (uint8_t)(x % 200), .value = 1000, .token = 0};
        size_t len;
        const void *h = buf;
        switch (i % 3) {
        case 0: len = (size_t)(x % sizeof(acc_msg_t)); break; /* short */
        case 1: len = sizeof(acc_msg_t) + 1 + (size_t)(x % 20); break;
        default: h = &m; len = sizeof(m); break;          /* bad version */
        }
        pami_send_immediate_t s = {.dest = to,
                                   .dispatch = (size_t)(i % NUM_IDS),
                                   .header = len ? h : NULL,
                                   .header_len = len};
        pami_result_t rc;
        while ((rc = pami_protocol_send_immediate(&st->env, &s)) ==
               PAMI_EAGAIN)
            pami_context_advance(env->context, 1);
        if (rc != PAMI_SUCCESS)
            return FAIL("expected a packet to be sent, seen %s",
                        pami_error_text(rc));
        sent++;
    }
    /* Messages between two tasks arrive in order: the fence's come after. */
    pami_dispatch_fence(env->client);
    uint64_t dropped = stat_of(env->context, "dropped") - dropped0;
    if (dropped != sent || st->value != value0)
        return FAIL("expected %zu packets dropped and the accumulator "
                    "unchanged, seen %llu dropped and %lld -> %lld", sent,
                    (unsigned long long)dropped, (long long)value0,
                    (long long)st->value);
    return 0;
}

static int case_stats_named(const pami_protocol_case_env_t *env, char *why,
                            size_t why_len)
{
    const char *names[] = {"served", "answered", "dropped"};
    for (int i = 0; i < 3; i++)
        if (stat_of(env->context, names[i]) == UINT64_MAX)
            return FAIL("expected counter %s by pami_protocol_stats, seen "
                        "none", names[i]);
    return 0;
}

#ifdef EXAMPLE_BROKEN
/* The broken build's third bug: its last task never answers, so the
 * runner must report a timeout naming the case and go on. */
static int case_last_task_answers(const pami_protocol_case_env_t *env,
                                  char *why, size_t why_len)
{
    if (env->task + 1 == env->size)
        for (;;)
            pami_context_wait(env->context, 1000);
    if (pami_dispatch_fence(env->client) != PAMI_SUCCESS)
        return FAIL("expected the fence to succeed");
    return 0;
}
static const pami_protocol_case_t c_hang = {
    "last_task_answers", "every task reaches the fence", 2, 0,
    case_last_task_answers};
#endif

static const pami_protocol_case_t c_add = {
    "add_every_peer", "every task's adds reach every accumulator once",
    2, 0, case_add_every_peer};
static const pami_protocol_case_t c_inter = {
    "interleaved_user_traffic",
    "requests interleaved with user messages on neighbouring ids", 2, 0,
    case_interleaved};
static const pami_protocol_case_t c_bad = {
    "malformed_dropped", "seeded malformed packets are dropped and counted",
    1, 0, case_malformed_dropped};
static const pami_protocol_case_t c_stats = {
    "stats_named", "the counters are readable by the protocol's name", 1, 0,
    case_stats_named};
static const pami_protocol_case_t *const acc_cases[] = {
    &c_add, &c_inter, &c_bad,
#ifdef EXAMPLE_BROKEN
    &c_hang,
#endif
    &c_stats};

static const pami_protocol_plugin_t acc_plugin = {
    PAMI_PROTOCOL_PLUGIN_HEADER,
    .ops       = &acc_ops,
    .cases     = acc_cases,
    .num_cases = sizeof(acc_cases) / sizeof(acc_cases[0]),
};
PAMI_PROTOCOL_PLUGIN(acc_plugin)

/*
 * register_rules: api.md, pami_protocol_register: "PAMI_IN_HANDLER called
 * from a handler or callback" (here posted work: nothing registered), and
 * "what init returned: init failed on a context; the protocol is then not
 * registered: the contexts it had started on stop it (fini), and its
 * dispatch ids are free again". Registered after createv on two
 * contexts, the table's init fails on context 1 only.
 */
#include "cf.h"

#include <pami_protocol.h>

#include <string.h>

typedef struct {
    size_t inits[2], finis[2];
    size_t base;
} rr_t;

static rr_t rr;

static pami_result_t rr_init(const pami_protocol_env_t *env, void **state)
{
    size_t o = env->context_offset < 2 ? env->context_offset : 1;
    rr.inits[o]++;
    rr.base = env->dispatch_base;
    *state = &rr;
    return o == 1 ? PAMI_ENOMEM : PAMI_SUCCESS;
}

static pami_protocol_env_t kept_env; /* what the working init got */

static pami_result_t rr_init_ok(const pami_protocol_env_t *env, void **state)
{
    kept_env = *env;
    rr.base = env->dispatch_base;
    *state = &rr;
    return PAMI_SUCCESS;
}

static void rr_fini(pami_context_t c, void *state)
{
    (void)state;
    (void)c;
    rr.finis[0]++;
}

static const pami_protocol_ops_t failing = {
    PAMI_PROTOCOL_OPS_HEADER, .name = "cf.register_rules", .version = 1,
    .num_dispatch = 3, .init = rr_init, .fini = rr_fini};
static const pami_protocol_ops_t working = {
    PAMI_PROTOCOL_OPS_HEADER, .name = "cf.register_rules", .version = 1,
    .num_dispatch = 3, .init = rr_init_ok, .fini = rr_fini};

typedef struct {
    pami_client_t client;
    pami_result_t rc;
    size_t        ran;
} in_work_t;

static pami_result_t register_in_work(pami_context_t c, void *k)
{
    (void)c;
    in_work_t *w = k;
    w->rc = pami_protocol_register(w->client, &working, NULL);
    w->ran++;
    return PAMI_SUCCESS;
}

/* Is a protocol of that name listed? */
static int listed(pami_client_t client, const char *name)
{
    pami_protocol_info_t info;
    for (size_t i = 0; pami_protocol_query(client, i, &info) == PAMI_SUCCESS;
         i++)
        if (info.name != NULL && strcmp(info.name, name) == 0)
            return 1;
    return 0;
}

static void register_rules(cf_env_t *e)
{
    rr = (rr_t){0};
    CF_OK(e, pami_context_createv(e->client, NULL, 2, e->contexts));
    e->ncontexts = 2;
    /* From posted work: refused, nothing registered. */
    static in_work_t w;
    w = (in_work_t){.client = e->client, .rc = PAMI_ERROR};
    pami_work_t item;
    CF_OK(e, pami_context_post(e->contexts[0], &item, register_in_work, &w));
    while (w.ran == 0 && cf_now() < e->deadline)
        pami_context_advance(e->contexts[0], 1);
    CF_CHECK(e, w.rc == PAMI_IN_HANDLER, "expected PAMI_IN_HANDLER from "
             "pami_protocol_register in posted work, seen %s",
             cf_rc_name(w.rc));
    CF_CHECK(e, !listed(e->client, working.name), "expected nothing "
             "registered by the refused call");
    /* init fails on context 1: its result, fini on context 0 alone. */
    pami_result_t rc = pami_protocol_register(e->client, &failing, NULL);
    CF_CHECK(e, rc == PAMI_ENOMEM, "expected what init returned "
             "(PAMI_ENOMEM), seen %s", cf_rc_name(rc));
    CF_CHECK(e, rr.inits[0] == 1 && rr.inits[1] == 1 && rr.finis[0] == 1,
             "expected init on both contexts and fini on the one it had "
             "started on, seen init %zu + %zu, fini %zu", rr.inits[0],
             rr.inits[1], rr.finis[0]);
    CF_CHECK(e, !listed(e->client, failing.name), "expected the protocol "
             "not registered after its init failed");
    /* Its ids are free again: the same name registers on the same block. */
    size_t first_base = rr.base;
    CF_OK(e, pami_protocol_register(e->client, &working, NULL));
    CF_CHECK(e, rr.base == first_base && listed(e->client, working.name),
             "expected the name registered again on the freed ids (from "
             "%zu), seen from %zu", first_base, rr.base);
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- env_checks: api.md, pami_protocol_dispatch_set and the protocol
 * sends: PAMI_INVAL "when index >= env->num_dispatch or env names no
 * registered protocol's block", "a forged one (another base, a larger
 * size) is refused", "for a NULL env or params"; "An env is valid when its
 * context is set and its dispatch_base and num_dispatch are those of a
 * registered protocol's block (the other fields are not looked at)". */

typedef struct {
    size_t   n;
    uint64_t last;
} ec_t;

static void ec_handler(pami_context_t c, void *k, const void *h, size_t hs,
                       const void *d, size_t ds, pami_endpoint_t o,
                       pami_recv_t *r)
{
    (void)c, (void)d, (void)ds, (void)o, (void)r;
    ec_t *s = k;
    if (hs == sizeof(s->last))
        memcpy(&s->last, h, sizeof(s->last));
    s->n++;
}

static void env_checks(cf_env_t *e)
{
    static ec_t got;
    got = (ec_t){0};
    kept_env = (pami_protocol_env_t){0};
    CF_OK(e, pami_protocol_register(e->client, &working, NULL));
    CF_CHECK(e, kept_env.context == e->ctx && kept_env.num_dispatch == 3,
             "expected init on the context with 3 ids");
    pami_protocol_env_t env = kept_env;
    CF_RC(e, PAMI_INVAL, pami_protocol_dispatch_set(&env, 3, ec_handler,
                                                    &got));
    CF_RC(e, PAMI_INVAL, pami_protocol_dispatch_set(NULL, 0, ec_handler,
                                                    &got));
    env.dispatch_base++;
    CF_RC(e, PAMI_INVAL, pami_protocol_dispatch_set(&env, 0, ec_handler,
                                                    &got));
    env = kept_env;
    env.num_dispatch++;
    CF_RC(e, PAMI_INVAL, pami_protocol_dispatch_set(&env, 0, ec_handler,
                                                    &got));
    /* A copy whose other fields differ is still the block's env. */
    env = kept_env;
    env.cookie = &env;
    env.context_offset = 7;
    CF_OK(e, pami_protocol_dispatch_set(&env, 2, ec_handler, &got));
    CF_OK(e, pami_dispatch_fence(e->client));
    uint64_t word = 0xcf0000 + e->task;
    pami_send_immediate_t m = {.dest = cf_ep(e, (e->task + 1) % e->size),
                               .dispatch = 3, .header = &word,
                               .header_len = sizeof(word)};
    CF_RC(e, PAMI_INVAL, pami_protocol_send_immediate(&env, &m));
    CF_RC(e, PAMI_INVAL, pami_protocol_send_immediate(NULL, &m));
    CF_RC(e, PAMI_INVAL, pami_protocol_send_immediate(&env, NULL));
    pami_send_t sm = {.send = m};
    CF_RC(e, PAMI_INVAL, pami_protocol_send(&env, &sm));
    pami_protocol_env_t forged = env;
    forged.dispatch_base--;
    m.dispatch = 0;
    CF_RC(e, PAMI_INVAL, pami_protocol_send_immediate(&forged, &m));
    forged = env;
    forged.num_dispatch = 64;
    CF_RC(e, PAMI_INVAL, pami_protocol_send_immediate(&forged, &m));
    /* Index 2 of the copy: delivered to the handler of that id. */
    m.dispatch = 2;
    pami_result_t rc;
    while ((rc = pami_protocol_send_immediate(&env, &m)) == PAMI_EAGAIN)
        pami_context_advance(e->ctx, 1);
    CF_CHECK(e, rc == PAMI_SUCCESS, "expected the send on index 2, seen %s",
             cf_rc_name(rc));
    if (cf_wait_count(e, &got.n, 1, "the protocol id's handler") != 0)
        return;
    pami_task_t prev = (pami_task_t)((e->task + e->size - 1) % e->size);
    CF_CHECK(e, got.n == 1 && got.last == 0xcf0000 + prev, "expected one "
             "message, the previous task's, seen %zu (%#llx)", got.n,
             (unsigned long long)got.last);
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_register_rules_cases[] = {
    {"protocols", "env_checks", 1, 0, 0, env_checks, NULL},
    {"protocols", "register_rules", 1, 0, CF_OWN_CONTEXTS, register_rules,
     NULL},
};
const size_t cf_num_register_rules_cases =
    sizeof(cf_register_rules_cases) / sizeof(cf_register_rules_cases[0]);

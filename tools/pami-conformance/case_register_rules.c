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

static pami_result_t rr_init_ok(const pami_protocol_env_t *env, void **state)
{
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

const cf_case_t cf_register_rules_cases[] = {
    {"protocols", "register_rules", 1, 0, CF_OWN_CONTEXTS, register_rules,
     NULL},
};
const size_t cf_num_register_rules_cases =
    sizeof(cf_register_rules_cases) / sizeof(cf_register_rules_cases[0]);

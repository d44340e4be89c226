/*
 * The protocol plug-in API in one process (task 0 of 1, contexts talking
 * to each other): registration rules, id blocks, per-context state, stats,
 * delivery on a protocol's own ids beside the program's, fini at destroy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pami.h"
#include "pami_protocol.h"
#include "../../unit/unit_world.h"

/* A protocol that counts what happens to it. */
typedef struct {
    pami_protocol_env_t env;
    size_t              received;
    size_t              last_len;
} probe_state_t;

static int inits, finis, init_fails;

static void probe_recv(pami_context_t ctx, void *cookie, const void *header,
                       size_t header_size, const void *data, size_t data_size,
                       pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)header; (void)header_size; (void)data; (void)origin;
    (void)recv;
    probe_state_t *st = cookie;
    st->received++;
    st->last_len = data_size;
}

static pami_result_t probe_init(const pami_protocol_env_t *env, void **state)
{
    if (init_fails)
        return PAMI_ENOMEM;
    probe_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->env = *env;
    for (size_t i = 0; i < env->num_dispatch; i++)
        if (pami_protocol_dispatch_set(env, i, probe_recv, st) != PAMI_SUCCESS)
            fail_msg("dispatch_set of the protocol's own id %zu", i);
    inits++;
    *state = st;
    return PAMI_SUCCESS;
}

static void probe_fini(pami_context_t ctx, void *state)
{
    (void)ctx;
    finis++;
    free(state);
}

static size_t probe_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    probe_state_t *st = state;
    if (max > 0)
        out[0] = (pami_protocol_stat_t){"received", st->received};
    return 1;
}

static const pami_protocol_ops_t probe_a = {
    .name = "test.probe_a", .version = 3, .num_dispatch = 4,
    .init = probe_init, .fini = probe_fini, .stats = probe_stats};
static const pami_protocol_ops_t probe_b = {
    .name = "test.probe_b", .version = 1, .num_dispatch = 2,
    .init = probe_init, .fini = probe_fini, .stats = probe_stats};

static void reset(void)
{
    inits = finis = init_fails = 0;
}

static pami_protocol_info_t find(pami_client_t client, const char *name)
{
    pami_protocol_info_t info;
    for (size_t i = 0; pami_protocol_query(client, i, &info) == PAMI_SUCCESS;
         i++)
        if (strcmp(info.name, name) == 0)
            return info;
    fail_msg("protocol %s is not listed", name);
    return info;
}

static void test_blocks_disjoint(void **state)
{
    (void)state;
    reset();
    pami_client_t c;
    assert_int_equal(pami_client_create("plugin", NULL, &c), PAMI_SUCCESS);
    assert_int_equal(pami_protocol_register(c, &probe_a, NULL), PAMI_SUCCESS);
    assert_int_equal(pami_protocol_register(c, &probe_b, NULL), PAMI_SUCCESS);

    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_DISPATCH_MAX};
    pami_client_query(c, &a);
    pami_protocol_info_t all[PAMI_PROTOCOL_MAX];
    size_t n = 0;
    while (pami_protocol_query(c, n, &all[n]) == PAMI_SUCCESS)
        n++;
    assert_true(n >= 2);
    for (size_t i = 0; i < n; i++) {
        assert_true(all[i].dispatch_base >= a.dispatch_max);
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(all[i].name, all[j].name);
            size_t lo = all[i].dispatch_base, hi = lo + all[i].num_dispatch;
            size_t lo2 = all[j].dispatch_base, hi2 = lo2 + all[j].num_dispatch;
            assert_true(hi <= lo2 || hi2 <= lo);
        }
    }
    pami_protocol_info_t pa = find(c, "test.probe_a");
    assert_int_equal(pa.version, 3);
    assert_int_equal(pa.num_dispatch, 4);
    assert_false(pa.builtin);
    assert_int_equal(pami_protocol_query(c, n, &all[0]), PAMI_NOT_FOUND);
    assert_int_equal(pami_client_destroy(&c), PAMI_SUCCESS);
    assert_int_equal(inits, 0); /* never had a context */
}

static void test_register_refused(void **state)
{
    (void)state;
    reset();
    pami_client_t c;
    assert_int_equal(pami_client_create("plugin", NULL, &c), PAMI_SUCCESS);
    pami_protocol_ops_t bad = probe_a;
    assert_int_equal(pami_protocol_register(NULL, &probe_a, NULL), PAMI_INVAL);
    assert_int_equal(pami_protocol_register(c, NULL, NULL), PAMI_INVAL);
    bad.name = NULL;
    assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);
    bad.name = "";
    assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);
    bad.name = "test.too_many_ids";
    bad.num_dispatch = PAMI_PROTOCOL_DISPATCH_MAX + 1;
    assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);

    assert_int_equal(pami_protocol_register(c, &probe_a, NULL), PAMI_SUCCESS);
    assert_int_equal(pami_protocol_register(c, &probe_a, NULL), PAMI_INVAL);
    /* A built-in's name is taken too. */
    pami_protocol_info_t first;
    if (pami_protocol_query(c, 0, &first) == PAMI_SUCCESS && first.builtin) {
        bad = probe_b;
        bad.name = first.name;
        assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);
    }
    /* The id space runs out before the slots do: 64 ids each. */
    static pami_protocol_ops_t many[PAMI_PROTOCOL_MAX];
    static char names[PAMI_PROTOCOL_MAX][32];
    pami_result_t rc = PAMI_SUCCESS;
    size_t i = 0;
    for (; i < PAMI_PROTOCOL_MAX && rc == PAMI_SUCCESS; i++) {
        many[i] = probe_b;
        many[i].num_dispatch = PAMI_PROTOCOL_DISPATCH_MAX;
        snprintf(names[i], sizeof(names[i]), "test.big%zu", i);
        many[i].name = names[i];
        rc = pami_protocol_register(c, &many[i], NULL);
    }
    assert_int_equal(rc, PAMI_ENOMEM);
    assert_true(i > 1);
    /* A small one still fits where a big one did not, or slots ran out. */
    assert_int_equal(pami_client_destroy(&c), PAMI_SUCCESS);
}

static void test_state_and_delivery(void **state)
{
    (void)state;
    reset();
    world_t *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    assert_int_equal(pami_client_create("plugin", NULL, &w->client),
                     PAMI_SUCCESS);
    assert_int_equal(pami_protocol_register(w->client, &probe_a, NULL),
                     PAMI_SUCCESS);
    assert_int_equal(pami_context_createv(w->client, NULL, 2, w->ctx),
                     PAMI_SUCCESS);
    w->n = 2;
    assert_int_equal(inits, 2);

    probe_state_t *s0 = pami_protocol_state(w->ctx[0], &probe_a);
    probe_state_t *s1 = pami_protocol_state(w->ctx[1], &probe_a);
    assert_non_null(s0);
    assert_non_null(s1);
    assert_ptr_not_equal(s0, s1);
    assert_ptr_equal(s1->env.context, w->ctx[1]);
    assert_null(pami_protocol_state(w->ctx[0], &probe_b));

    /* A protocol sets only its own ids. */
    assert_int_equal(pami_protocol_dispatch_set(&s1->env, 4, probe_recv, s1),
                     PAMI_INVAL);
    pami_protocol_env_t forged = s1->env;
    forged.dispatch_base = 0; /* the program's ids */
    assert_int_equal(pami_protocol_dispatch_set(&forged, 0, probe_recv, s1),
                     PAMI_INVAL);
    /* ...and the program cannot take them with pami_dispatch_set. */
    assert_int_equal(pami_dispatch_set(w->ctx[1], s1->env.dispatch_base,
                                       probe_recv, NULL, NULL), PAMI_INVAL);

    char payload[40] = "to the protocol";
    pami_send_immediate_t p = {.dest = endpoint(w, 1),
                               .dispatch = s1->env.dispatch_base + 3,
                               .data = payload, .data_len = sizeof(payload)};
    assert_int_equal(pami_send_immediate(w->ctx[0], &p), PAMI_SUCCESS);
    uint64_t deadline = now_ms() + 5000;
    while (s1->received == 0 && now_ms() < deadline)
        advance_all(w);
    assert_int_equal(s1->received, 1);
    assert_int_equal(s1->last_len, sizeof(payload));
    assert_int_equal(s0->received, 0);

    pami_protocol_stat_t st[4];
    size_t n = 99;
    assert_int_equal(pami_protocol_stats(w->ctx[1], "test.probe_a", st, 4, &n),
                     PAMI_SUCCESS);
    assert_int_equal(n, 1);
    assert_string_equal(st[0].name, "received");
    assert_int_equal(st[0].value, 1);
    assert_int_equal(pami_protocol_stats(w->ctx[1], "test.nothing", st, 4, &n),
                     PAMI_NOT_FOUND);
    assert_int_equal(pami_protocol_stats(w->ctx[1], "test.probe_a", NULL, 4,
                                         &n), PAMI_INVAL);

    /* Registered after createv: started on every context at once. */
    assert_int_equal(pami_protocol_register(w->client, &probe_b, NULL),
                     PAMI_SUCCESS);
    assert_int_equal(inits, 4);
    assert_non_null(pami_protocol_state(w->ctx[0], &probe_b));

    world_down(w);
    assert_int_equal(finis, 4);
}

static void test_init_failure(void **state)
{
    (void)state;
    reset();
    pami_client_t c;
    pami_context_t ctx[2];
    assert_int_equal(pami_client_create("plugin", NULL, &c), PAMI_SUCCESS);
    assert_int_equal(pami_protocol_register(c, &probe_a, NULL), PAMI_SUCCESS);
    init_fails = 1;
    assert_int_equal(pami_context_createv(c, NULL, 2, ctx), PAMI_ENOMEM);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS};
    pami_client_query(c, &a);
    assert_int_equal(a.num_contexts, 0);
    init_fails = 0;
    /* The client is usable again. */
    assert_int_equal(pami_context_createv(c, NULL, 2, ctx), PAMI_SUCCESS);
    assert_int_equal(inits, 2);
    assert_int_equal(pami_client_destroy(&c), PAMI_SUCCESS);
    assert_int_equal(finis, 2);
}

static void test_config_listed(void **state)
{
    (void)state;
    /* Every variable has a name, a default and a description, and names
     * are unique, built-in protocols' included. */
    pami_config_var_t v[256];
    unsigned n = 0;
    while (n < 256 && pami_config_var(n, &v[n]) == PAMI_SUCCESS) {
        assert_non_null(v[n].name);
        assert_non_null(v[n].default_value);
        assert_non_null(v[n].description);
        assert_int_equal(strncmp(v[n].name, "PAMI_", 5), 0);
        for (unsigned j = 0; j < n; j++)
            assert_string_not_equal(v[n].name, v[j].name);
        n++;
    }
    assert_true(n > 0 && n < 256);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_disjoint),
        cmocka_unit_test(test_register_refused),
        cmocka_unit_test(test_state_and_delivery),
        cmocka_unit_test(test_init_failure),
        cmocka_unit_test(test_config_listed),
    };
    return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}

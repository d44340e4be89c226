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
    PAMI_PROTOCOL_OPS_HEADER,
    .name = "test.probe_a", .version = 3, .num_dispatch = 4,
    .init = probe_init, .fini = probe_fini, .stats = probe_stats};
static const pami_protocol_ops_t probe_b = {
    PAMI_PROTOCOL_OPS_HEADER,
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

/* The table's header: ABI version and size. A shorter table (built
 * against an older, smaller struct) loads with what it lacks taken as
 * absent; another ABI version, a missing header or a size below the
 * first version's are refused. */
static void test_abi_header(void **state)
{
    (void)state;
    reset();
    pami_client_t c;
    assert_int_equal(pami_client_create("plugin", NULL, &c), PAMI_SUCCESS);
    pami_protocol_ops_t bad = probe_a;
    bad.abi_version = PAMI_PROTOCOL_ABI_VERSION + 1;
    assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);
    bad = probe_a;
    bad.abi_version = 0;
    bad.struct_size = 0;
    assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);
    bad = probe_a;
    bad.struct_size = (uint32_t)offsetof(pami_protocol_ops_t, stats);
    assert_int_equal(pami_protocol_register(c, &bad, NULL), PAMI_INVAL);

    /* A larger table (from a later pami of the same ABI) is read as far
     * as this one knows it. */
    static pami_protocol_ops_t larger;
    larger = probe_a;
    larger.struct_size = sizeof(larger) + 64;
    assert_int_equal(pami_protocol_register(c, &larger, NULL), PAMI_SUCCESS);
    pami_protocol_info_t info;
    size_t n = 0;
    while (pami_protocol_query(c, n, &info) == PAMI_SUCCESS)
        n++;
    assert_string_equal(info.name, "test.probe_a");
    assert_int_equal(info.num_dispatch, 4);
    assert_int_equal(pami_client_destroy(&c), PAMI_SUCCESS);
}

/* The SDK's settings and hash: one parser with the core's (sizes with
 * k/m/g, bools in words), defaults for unset, empty, malformed or out of
 * range; the hash is FNV-1a and continues across calls. */
/* PAMI_TEST_SDK_VAR set to v (unset for NULL), read as a size with the
 * default 7 and as a bool with the default dflt. */
static size_t env_size(const char *v, size_t min, size_t max)
{
    if (v == NULL)
        unsetenv("PAMI_TEST_SDK_VAR");
    else
        setenv("PAMI_TEST_SDK_VAR", v, 1);
    return pami_protocol_env_size("t", "PAMI_TEST_SDK_VAR", 7, min, max);
}

static int env_bool(const char *v, int dflt)
{
    if (v == NULL)
        unsetenv("PAMI_TEST_SDK_VAR");
    else
        setenv("PAMI_TEST_SDK_VAR", v, 1);
    return pami_protocol_env_bool("t", "PAMI_TEST_SDK_VAR", dflt);
}

static void test_sdk_env_and_hash(void **state)
{
    (void)state;
    assert_int_equal(env_size(NULL, 0, 100), 7);
    assert_int_equal(env_size("", 0, 100), 7);
    assert_int_equal(env_size("42", 0, 100), 42);
    assert_int_equal(env_size("2k", 0, 4096), 2048);
    assert_int_equal(env_size("2k", 0, 100), 7);        /* above max */
    assert_int_equal(env_size("2k", 4096, 8192), 7);    /* below min */
    assert_int_equal(env_size("-1", 0, 100), 7);
    assert_int_equal(env_size("12x", 0, 100), 7);
    assert_int_equal(env_bool("yes", 0), 1);
    assert_int_equal(env_bool("OFF", 1), 0);
    assert_int_equal(env_bool("maybe", 1), 1);
    assert_int_equal(env_bool(NULL, 0), 0);

    /* FNV-1a's published values: "" is the offset basis, "a" and
     * "foobar" as in the reference test vectors. */
    assert_true(pami_protocol_hash(PAMI_PROTOCOL_HASH_INIT, "", 0) ==
                0xcbf29ce484222325ull);
    assert_true(pami_protocol_hash(PAMI_PROTOCOL_HASH_INIT, "a", 1) ==
                0xaf63dc4c8601ec8cull);
    assert_true(pami_protocol_hash(PAMI_PROTOCOL_HASH_INIT, "foobar", 6) ==
                0x85944171f73967e8ull);
    uint64_t h = pami_protocol_hash(PAMI_PROTOCOL_HASH_INIT, "foo", 3);
    assert_true(pami_protocol_hash(h, "bar", 3) == 0x85944171f73967e8ull);

    /* SipHash-2-4's published vector: key 00..0f, message 00..0e. */
    uint8_t key[PAMI_PROTOCOL_MAC_KEY_LEN], msg[15];
    for (uint8_t i = 0; i < sizeof(key); i++)
        key[i] = i;
    for (uint8_t i = 0; i < sizeof(msg); i++)
        msg[i] = i;
    assert_true(pami_protocol_mac(key, msg, sizeof(msg)) ==
                0xa129ca6149be45e5ull);
}

/* Two contexts of one task with probe_a registered (and probe_b too when
 * both), as the delivery tests need them. */
static world_t *probe_world(int both)
{
    reset();
    world_t *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    assert_int_equal(pami_client_create("plugin", NULL, &w->client),
                     PAMI_SUCCESS);
    assert_int_equal(pami_protocol_register(w->client, &probe_a, NULL),
                     PAMI_SUCCESS);
    if (both)
        assert_int_equal(pami_protocol_register(w->client, &probe_b, NULL),
                         PAMI_SUCCESS);
    assert_int_equal(pami_context_createv(w->client, NULL, 2, w->ctx),
                     PAMI_SUCCESS);
    w->n = 2;
    return w;
}

static void test_state_and_delivery(void **state)
{
    (void)state;
    world_t *w = probe_world(0);
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

    /* The protocol on context 0 sends on its own index 3. */
    char payload[40] = "to the protocol";
    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = 3,
                               .data = payload, .data_len = sizeof(payload)};
    assert_int_equal(pami_protocol_send_immediate(&s0->env, &p),
                     PAMI_SUCCESS);
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

/* Stats of a context, and of probe_a on it, before and after. */
typedef struct {
    pami_context_stats_t ctx;
    size_t               probe0, probe1;
} seen_t;

static seen_t seen(world_t *w)
{
    seen_t s;
    assert_int_equal(pami_context_stats(w->ctx[1], &s.ctx), PAMI_SUCCESS);
    probe_state_t *p0 = pami_protocol_state(w->ctx[0], &probe_a);
    probe_state_t *p1 = pami_protocol_state(w->ctx[1], &probe_a);
    s.probe0 = p0->received;
    s.probe1 = p1->received;
    return s;
}

/* The program's sends to any id from dispatch_max up (the protocols' ids
 * 256..511, the core's 512.. and far beyond) are refused with PAMI_INVAL
 * by both calls, and nothing reaches the target: no protocol handler, no
 * delivery and no drop counted there. */
static void test_reserved_ids_refused(void **state)
{
    (void)state;
    world_t *w = probe_world(0);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_DISPATCH_MAX};
    assert_int_equal(pami_client_query(w->client, &a), PAMI_SUCCESS);
    assert_int_equal(a.dispatch_max, 256);
    assert_true(find(w->client, "test.probe_a").dispatch_base >=
                a.dispatch_max);

    seen_t before = seen(w);
    cb_count_t calls = {0};
    uint8_t hdr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t  n = 0;
    for (size_t id = a.dispatch_max; id < 2 * a.dispatch_max + 64; id++) {
        pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = id,
                                   .header = hdr, .header_len = sizeof(hdr)};
        pami_result_t rc = pami_send_immediate(w->ctx[0], &p);
        if (rc != PAMI_INVAL)
            fail_msg("send_immediate to id %zu: %s", id, pami_error_text(rc));
        pami_send_t s = {.send = p, .local_fn = cb_count_local,
                         .remote_fn = cb_count_remote, .cookie = &calls};
        rc = pami_send(w->ctx[0], &s);
        if (rc != PAMI_INVAL)
            fail_msg("send to id %zu: %s", id, pami_error_text(rc));
        n++;
    }
    pami_send_immediate_t far = {.dest = endpoint(w, 1),
                                 .dispatch = SIZE_MAX};
    assert_int_equal(pami_send_immediate(w->ctx[0], &far), PAMI_INVAL);
    assert_true(n == 256 + 64);

    for (int i = 0; i < 200; i++)
        advance_all(w);
    seen_t after = seen(w);
    assert_int_equal(after.probe0, before.probe0);
    assert_int_equal(after.probe1, before.probe1);
    assert_int_equal(after.ctx.receives, before.ctx.receives);
    assert_int_equal(after.ctx.dropped_unknown, before.ctx.dropped_unknown);
    assert_int_equal(after.ctx.dropped_malformed,
                     before.ctx.dropped_malformed);
    assert_int_equal(calls.local, 0);
    assert_int_equal(calls.remote, 0);
    world_down(w);
}

/* A protocol sends on its own ids only, named by index; both forms deliver
 * and report like the program's. */
static void test_protocol_send(void **state)
{
    (void)state;
    world_t *w = probe_world(1);
    probe_state_t *a0 = pami_protocol_state(w->ctx[0], &probe_a);
    probe_state_t *a1 = pami_protocol_state(w->ctx[1], &probe_a);
    probe_state_t *b0 = pami_protocol_state(w->ctx[0], &probe_b);
    probe_state_t *b1 = pami_protocol_state(w->ctx[1], &probe_b);
    assert_non_null(a0);
    assert_non_null(b1);

    /* Outside the block, a forged block, another protocol's block, or
     * NULL: refused before anything is sent. */
    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = 4};
    assert_int_equal(pami_protocol_send_immediate(&a0->env, &p), PAMI_INVAL);
    p.dispatch = SIZE_MAX;
    assert_int_equal(pami_protocol_send_immediate(&a0->env, &p), PAMI_INVAL);
    pami_send_t s = {.send = {.dest = endpoint(w, 1), .dispatch = 2}};
    assert_int_equal(pami_protocol_send(&b0->env, &s), PAMI_INVAL);
    pami_protocol_env_t forged = a0->env;
    forged.dispatch_base = 0; /* the program's ids */
    p.dispatch = 0;
    assert_int_equal(pami_protocol_send_immediate(&forged, &p), PAMI_INVAL);
    forged = b0->env;
    forged.num_dispatch = 4; /* b's base, a's size: reaches past b */
    assert_int_equal(pami_protocol_send_immediate(&forged, &p), PAMI_INVAL);
    forged = a0->env;
    forged.dispatch_base += 1; /* inside a's block, not its start */
    assert_int_equal(pami_protocol_send(&forged, &s), PAMI_INVAL);
    assert_int_equal(pami_protocol_send_immediate(NULL, &p), PAMI_INVAL);
    assert_int_equal(pami_protocol_send_immediate(&a0->env, NULL), PAMI_INVAL);
    assert_int_equal(pami_protocol_send(&a0->env, NULL), PAMI_INVAL);
    for (int i = 0; i < 50; i++)
        advance_all(w);
    assert_int_equal(a1->received + b1->received, 0);

    /* Index 1 of b is b's, not a's. */
    char data[16] = "b1";
    p = (pami_send_immediate_t){.dest = endpoint(w, 1), .dispatch = 1,
                                .data = data, .data_len = 3};
    assert_int_equal(pami_protocol_send_immediate(&b0->env, &p), PAMI_SUCCESS);
    /* pami_protocol_send, with both callbacks, on a's last index. */
    cb_count_t calls = {0};
    s = (pami_send_t){.send = {.dest = endpoint(w, 1), .dispatch = 3,
                               .data = data, .data_len = sizeof(data)},
                      .local_fn = cb_count_local, .remote_fn = cb_count_remote,
                      .cookie = &calls};
    assert_int_equal(pami_protocol_send(&a0->env, &s), PAMI_SUCCESS);
    uint64_t deadline = now_ms() + 5000;
    while ((b1->received < 1 || a1->received < 1 || calls.remote < 1) &&
           now_ms() < deadline)
        advance_all(w);
    assert_int_equal(b1->received, 1);
    assert_int_equal(b1->last_len, 3);
    assert_int_equal(a1->received, 1);
    assert_int_equal(a1->last_len, sizeof(data));
    assert_int_equal(calls.local, 1);
    assert_int_equal(calls.remote, 1);
    assert_int_equal(calls.remote_rc, PAMI_SUCCESS);
    world_down(w);
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

/* A protocol registered after createv whose init fails on the second
 * context: refused without a trace (the first context stops it, its ids
 * go back, it is not listed), so no fini meets a state init never made,
 * and the next protocol gets the ids it would have had. */
static int late_fini_null;

static pami_result_t late_init(const pami_protocol_env_t *env, void **state)
{
    if (env->context_offset == 1)
        return PAMI_ENOMEM;
    return probe_init(env, state);
}

static void late_fini(pami_context_t ctx, void *state)
{
    if (state == NULL)
        late_fini_null++;
    probe_fini(ctx, state);
}

static const pami_protocol_ops_t probe_late = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name = "test.probe_late", .version = 1, .num_dispatch = 3,
    .init = late_init, .fini = late_fini};

static void test_late_init_failure(void **state)
{
    (void)state;
    world_t *w = probe_world(0);
    late_fini_null = 0;
    pami_protocol_info_t a = find(w->client, "test.probe_a");
    size_t before = 0;
    pami_protocol_info_t info;
    while (pami_protocol_query(w->client, before, &info) == PAMI_SUCCESS)
        before++;
    assert_int_equal(pami_protocol_register(w->client, &probe_late, NULL),
                     PAMI_ENOMEM);
    assert_int_equal(inits, 3);
    assert_int_equal(finis, 1); /* context 0 stopped it again */
    assert_null(pami_protocol_state(w->ctx[0], &probe_late));
    assert_null(pami_protocol_state(w->ctx[1], &probe_late));
    assert_int_equal(pami_protocol_query(w->client, before, &info),
                     PAMI_NOT_FOUND);
    /* Its ids went back: probe_b starts where probe_late would have. */
    assert_int_equal(pami_protocol_register(w->client, &probe_b, NULL),
                     PAMI_SUCCESS);
    pami_protocol_info_t b = find(w->client, "test.probe_b");
    assert_true(b.dispatch_base >= a.dispatch_base + a.num_dispatch);
    size_t top = 0;
    for (size_t i = 0; pami_protocol_query(w->client, i, &info) ==
                       PAMI_SUCCESS; i++)
        if (strcmp(info.name, "test.probe_b") != 0 &&
            info.dispatch_base + info.num_dispatch > top)
            top = info.dispatch_base + info.num_dispatch;
    assert_int_equal(b.dispatch_base, top);
    probe_state_t *b1 = pami_protocol_state(w->ctx[1], &probe_b);
    assert_non_null(b1);
    world_down(w);
    assert_int_equal(late_fini_null, 0);
    assert_int_equal(finis, 1 + 2 * 2);
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
        cmocka_unit_test(test_abi_header),
        cmocka_unit_test(test_sdk_env_and_hash),
        cmocka_unit_test(test_state_and_delivery),
        cmocka_unit_test(test_reserved_ids_refused),
        cmocka_unit_test(test_protocol_send),
        cmocka_unit_test(test_init_failure),
        cmocka_unit_test(test_late_init_failure),
        cmocka_unit_test(test_config_listed),
    };
    return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}

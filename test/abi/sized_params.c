/*
 * Structs that grow (docs/abi.md): a program built against an older,
 * shorter layout of a struct it fills calls the *_sized entry points with
 * its own sizeof. Simulated here by passing the size of a prefix of
 * today's struct, whose bytes past the prefix are garbage that pami must
 * not read (nor, for structs pami fills, write). A size that is no layout
 * of the struct is refused with PAMI_INVAL and a log line, and so is a
 * field_mask bit pami does not know, in every struct that has one.
 *
 * One process, task 0 of 1 (no launcher), one context sending to itself.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pami.h>
#include <pami_collectives.h>
#include <pami_protocol.h>
#include <pami_svd.h>
#include <pami_test.h>

#define WAIT_MS 5000

static int failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stdout, "FAIL %s:%d: ", __FILE__, __LINE__);             \
            fprintf(stdout, __VA_ARGS__);                                    \
            fputc('\n', stdout);                                             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* sizeof a struct T that ended at field f (as pami/params.h computes). */
#define PREFIX(T, f)                                                         \
    ((offsetof(T, f) + sizeof(((T *)0)->f) + _Alignof(T) - 1) /              \
     _Alignof(T) * _Alignof(T))

#define GARBAGE 0xa5

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static pami_context_t ctx;

static void progress_until(volatile int *flag)
{
    uint64_t end = now_ms() + WAIT_MS;
    while (!*flag && now_ms() < end)
        pami_context_advance(ctx, 1);
}

/* Runs fn with stderr going to a file; returns what it wrote. */
static char logged[4096];
static pami_result_t with_log(pami_result_t (*fn)(void *), void *arg)
{
    char path[] = "/tmp/pami-sized-XXXXXX";
    int  fd     = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    pami_result_t rc = fn(arg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, logged, sizeof(logged) - 1, 0);
    logged[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

/* ------------------------------------------------------------------------ */

static int    am_calls;
static size_t am_header_len;
static char   am_data[64];

static void handler(pami_context_t c, void *cookie, const void *header,
                    size_t header_len, const void *data, size_t data_len,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)c, (void)cookie, (void)header, (void)origin, (void)recv;
    am_header_len = header_len;
    if (data != NULL && data_len < sizeof(am_data))
        memcpy(am_data, data, data_len);
    am_calls++;
}

static pami_endpoint_t self;

/* An old pami_send_t: the embedded immediate part only, no callbacks. */
static void old_send(void)
{
    union {
        pami_send_t   s;
        unsigned char raw[sizeof(pami_send_t)];
    } u;
    memset(u.raw, GARBAGE, sizeof(u.raw));
    u.s.send = (pami_send_immediate_t){.dest = self, .dispatch = 1,
                                       .data = "old-send", .data_len = 9};
    am_calls = 0;
    pami_result_t rc =
        pami_send_sized(ctx, &u.s, PREFIX(pami_send_t, send));
    CHECK(rc == PAMI_SUCCESS, "send with the old layout: %s",
          pami_error_text(rc));
    progress_until(&am_calls);
    CHECK(am_calls == 1 && strcmp(am_data, "old-send") == 0,
          "old-layout send delivered %d times, data '%s'", am_calls, am_data);
}

/* An old pami_send_immediate_t that ended at dispatch: no header, no data. */
static void old_send_immediate(void)
{
    union {
        pami_send_immediate_t s;
        unsigned char         raw[sizeof(pami_send_immediate_t)];
    } u;
    memset(u.raw, GARBAGE, sizeof(u.raw));
    u.s.dest     = self;
    u.s.dispatch = 1;
    am_calls     = 0;
    am_header_len = 99;
    pami_result_t rc;
    uint64_t end = now_ms() + WAIT_MS;
    while ((rc = pami_send_immediate_sized(
                ctx, &u.s, PREFIX(pami_send_immediate_t, dispatch))) ==
               PAMI_EAGAIN &&
           now_ms() < end)
        pami_context_advance(ctx, 1);
    CHECK(rc == PAMI_SUCCESS, "send_immediate with the old layout: %s",
          pami_error_text(rc));
    progress_until(&am_calls);
    CHECK(am_calls == 1 && am_header_len == 0,
          "old-layout immediate: %d calls, header of %zu bytes (want 1, 0)",
          am_calls, am_header_len);
}

static volatile int fenced;
static void fence_done(pami_context_t c, void *cookie, pami_result_t r)
{
    (void)c, (void)cookie;
    fenced = r == PAMI_SUCCESS ? 1 : -1;
}

static void fence(void)
{
    fenced = 0;
    CHECK(pami_fence_all(ctx, fence_done, NULL) == PAMI_SUCCESS, "fence");
    progress_until(&fenced);
    CHECK(fenced == 1, "fence ended with %d", fenced);
}

static volatile int got;
static void get_done(pami_context_t c, void *cookie, pami_result_t r)
{
    (void)c;
    /* The old layout had no cookie: pami passes NULL. */
    got = (cookie == NULL && r == PAMI_SUCCESS) ? 1 : -1;
}

static uint64_t          region_mem[8];
static pami_memregion_t  mr, lmr;
static uint64_t          local_mem[8];

static void old_rma(void)
{
    /* put that ended at remote_offset: no callbacks, seen after a fence */
    union {
        pami_rma_t    r;
        unsigned char raw[sizeof(pami_rma_t)];
    } u;
    uint64_t v = 0x1122334455667788ull;
    memset(u.raw, GARBAGE, sizeof(u.raw));
    u.r.dest = self, u.r.local = &v, u.r.bytes = sizeof(v);
    u.r.remote_mr = &mr, u.r.remote_offset = 0;
    pami_result_t rc = pami_put_sized(ctx, &u.r,
                                      PREFIX(pami_rma_t, remote_offset));
    CHECK(rc == PAMI_SUCCESS, "put with the old layout: %s",
          pami_error_text(rc));
    fence();
    CHECK(region_mem[0] == v, "old-layout put wrote %#llx",
          (unsigned long long)region_mem[0]);

    /* get that ended at local_fn: cookie missing, so NULL */
    uint64_t back = 0;
    memset(u.raw, GARBAGE, sizeof(u.raw));
    u.r.dest = self, u.r.local = &back, u.r.bytes = sizeof(back);
    u.r.remote_mr = &mr, u.r.remote_offset = 0, u.r.local_fn = get_done;
    got = 0;
    rc  = pami_get_sized(ctx, &u.r, PREFIX(pami_rma_t, local_fn));
    CHECK(rc == PAMI_SUCCESS, "get with the old layout: %s",
          pami_error_text(rc));
    progress_until(&got);
    CHECK(got == 1 && back == v, "old-layout get: done %d, read %#llx", got,
          (unsigned long long)back);

    /* rput that ended at bytes */
    union {
        pami_rrma_t   r;
        unsigned char raw[sizeof(pami_rrma_t)];
    } w;
    local_mem[1] = 0xabcdefull;
    memset(w.raw, GARBAGE, sizeof(w.raw));
    w.r.dest = self, w.r.local_mr = &lmr, w.r.local_offset = 8;
    w.r.remote_mr = &mr, w.r.remote_offset = 16, w.r.bytes = 8;
    rc = pami_rput_sized(ctx, &w.r, PREFIX(pami_rrma_t, bytes));
    CHECK(rc == PAMI_SUCCESS, "rput with the old layout: %s",
          pami_error_text(rc));
    fence();
    CHECK(region_mem[2] == 0xabcdefull, "old-layout rput wrote %#llx",
          (unsigned long long)region_mem[2]);

    /* rmw (add) that ended at value */
    union {
        pami_rmw_t    m;
        unsigned char raw[sizeof(pami_rmw_t)];
    } m;
    region_mem[3] = 40;
    memset(m.raw, GARBAGE, sizeof(m.raw));
    m.m.dest = self, m.m.remote_mr = &mr, m.m.remote_offset = 24;
    m.m.op = PAMI_RMW_ADD, m.m.size = 8, m.m.value = 2;
    rc = pami_rmw_sized(ctx, &m.m, PREFIX(pami_rmw_t, value));
    CHECK(rc == PAMI_SUCCESS, "rmw with the old layout: %s",
          pami_error_text(rc));
    fence();
    CHECK(region_mem[3] == 42, "old-layout rmw left %llu",
          (unsigned long long)region_mem[3]);
}

/* Structs pami fills: only the old layout's bytes are written. */
static void old_outputs(pami_client_t client)
{
    union {
        pami_context_stats_t s;
        unsigned char        raw[sizeof(pami_context_stats_t)];
    } u;
    size_t old = PREFIX(pami_context_stats_t, dropped_unknown);
    memset(u.raw, GARBAGE, sizeof(u.raw));
    pami_result_t rc = pami_context_stats_sized(ctx, &u.s, old);
    CHECK(rc == PAMI_SUCCESS, "stats with the old layout: %s",
          pami_error_text(rc));
    CHECK(u.s.sends > 0, "old-layout stats: %llu sends",
          (unsigned long long)u.s.sends);
    for (size_t i = old; i < sizeof(u.raw); i++)
        if (u.raw[i] != GARBAGE) {
            CHECK(0, "stats wrote byte %zu past the old layout's %zu", i,
                  old);
            break;
        }
    /* Every counter ends a layout (docs/abi.md), the shm ones too. */
    old = PREFIX(pami_context_stats_t, shm_on);
    memset(u.raw, GARBAGE, sizeof(u.raw));
    rc = pami_context_stats_sized(ctx, &u.s, old);
    CHECK(rc == PAMI_SUCCESS && u.raw[old] == GARBAGE,
          "stats with the layout ending at shm_on: %s", pami_error_text(rc));

    union {
        pami_config_var_t v;
        unsigned char     raw[sizeof(pami_config_var_t)];
    } c;
    old = PREFIX(pami_config_var_t, name);
    memset(c.raw, GARBAGE, sizeof(c.raw));
    rc = pami_config_var_sized(0, &c.v, old);
    CHECK(rc == PAMI_SUCCESS && c.v.name != NULL &&
              strncmp(c.v.name, "PAMI_", 5) == 0,
          "config_var with the old layout: %s", pami_error_text(rc));
    CHECK(c.raw[old] == GARBAGE && c.raw[sizeof(c.raw) - 1] == GARBAGE,
          "config_var wrote past the old layout");

    /* pami_collectives.h: the selection of an AUTO barrier on the world */
    pami_geometry_t world;
    CHECK(pami_geometry_world(ctx, &world) == PAMI_SUCCESS, "world");
    pami_xfer_t x = {.kind = PAMI_XFER_BARRIER, .geometry = world};
    union {
        pami_algorithm_selection_t s;
        unsigned char              raw[sizeof(pami_algorithm_selection_t)];
    } sel;
    old = PREFIX(pami_algorithm_selection_t, why);
    memset(sel.raw, GARBAGE, sizeof(sel.raw));
    rc = pami_geometry_algorithm_selected_sized(&x, &sel.s, old);
    CHECK(rc == PAMI_SUCCESS && sel.s.name != NULL && sel.s.why != NULL,
          "algorithm_selected with the old layout: %s", pami_error_text(rc));
    for (size_t i = old; i < sizeof(sel.raw); i++)
        if (sel.raw[i] != GARBAGE) {
            CHECK(0, "algorithm_selected wrote byte %zu past the old "
                     "layout's %zu", i, old);
            break;
        }

    /* pami_svd.h: query and lookup_wait of an entry of this task's */
    static uint64_t var;
    pami_svd_register_t reg = {.key = 11, .addr = &var, .size = sizeof(var)};
    CHECK(pami_svd_register(ctx, &reg) == PAMI_SUCCESS, "svd register");
    union {
        pami_svd_info_t i;
        unsigned char   raw[sizeof(pami_svd_info_t)];
    } si;
    old = PREFIX(pami_svd_info_t, record_size);
    memset(si.raw, GARBAGE, sizeof(si.raw));
    rc = pami_svd_query_sized(ctx, 11, &si.i, NULL, 0, old);
    CHECK(rc == PAMI_SUCCESS && si.i.version == 1,
          "svd_query with the old layout: %s", pami_error_text(rc));
    CHECK(si.raw[old] == GARBAGE && si.raw[sizeof(si.raw) - 1] == GARBAGE,
          "svd_query wrote past the old layout");
    union {
        pami_svd_entry_t e;
        unsigned char    raw[sizeof(pami_svd_entry_t)];
    } se;
    old = PREFIX(pami_svd_entry_t, mr);
    memset(se.raw, GARBAGE, sizeof(se.raw));
    pami_svd_lookup_t lk = {.owner = 0, .key = 11};
    rc = pami_svd_lookup_wait_sized(ctx, &lk, &se.e, old);
    CHECK(rc == PAMI_SUCCESS && se.e.version == 1 && se.e.key == 11,
          "svd_lookup_wait with the old layout: %s", pami_error_text(rc));
    CHECK(se.raw[old] == GARBAGE && se.raw[sizeof(se.raw) - 1] == GARBAGE,
          "svd_lookup_wait wrote past the old layout");

    union {
        pami_protocol_info_t i;
        unsigned char        raw[sizeof(pami_protocol_info_t)];
    } p;
    old = PREFIX(pami_protocol_info_t, name);
    memset(p.raw, GARBAGE, sizeof(p.raw));
    rc = pami_protocol_query_sized(client, 0, &p.i, old);
    CHECK(rc == PAMI_SUCCESS && p.i.name != NULL,
          "protocol_query with the old layout: %s", pami_error_text(rc));
    CHECK(p.raw[old] == GARBAGE, "protocol_query wrote past the old layout");
}

/* Sizes that are no layout: PAMI_INVAL, a log line naming the struct. */
typedef struct {
    const char *what;
    size_t      size;
    int         kind;
} bad_t;

static pami_result_t call_bad(void *arg)
{
    const bad_t *b = arg;
    static uint64_t big[128]; /* aligned for any of the structs */
    pami_send_immediate_t si = {.dest = self, .dispatch = 1};
    pami_send_t           s  = {.send = si};
    switch (b->kind) {
    case 0: return pami_send_sized(ctx, &s, b->size);
    case 1: return pami_send_immediate_sized(ctx, &si, b->size);
    case 2: return pami_put_sized(ctx, (const pami_rma_t *)big, b->size);
    case 3: return pami_get_sized(ctx, (const pami_rma_t *)big, b->size);
    case 4: return pami_rput_sized(ctx, (const pami_rrma_t *)big, b->size);
    case 5: return pami_rget_sized(ctx, (const pami_rrma_t *)big, b->size);
    case 6: return pami_rmw_sized(ctx, (const pami_rmw_t *)big, b->size);
    case 7:
        return pami_context_stats_sized(ctx, (pami_context_stats_t *)big,
                                        b->size);
    case 8:
        return pami_config_var_sized(0, (pami_config_var_t *)big, b->size);
    case 9: {
        pami_geometry_t world;
        if (pami_geometry_world(ctx, &world) != PAMI_SUCCESS)
            return PAMI_ERROR;
        pami_xfer_t x = {.kind = PAMI_XFER_BARRIER, .geometry = world};
        return pami_geometry_algorithm_selected_sized(
            &x, (pami_algorithm_selection_t *)big, b->size);
    }
    case 10: return pami_test_send_raw_sized(ctx, &si, b->size);
    case 12:
        return pami_svd_query_sized(ctx, 11, (pami_svd_info_t *)big, NULL, 0,
                                    b->size);
    case 13: {
        pami_svd_lookup_t lk = {.owner = 0, .key = 11};
        return pami_svd_lookup_wait_sized(ctx, &lk, (pami_svd_entry_t *)big,
                                          b->size);
    }
    case 11: return pami_test_send_raw_msg_sized(ctx, &s, b->size);
    default: return PAMI_ERROR;
    }
}

static void bad_sizes(void)
{
    static const struct {
        const char *name;
        size_t      now;
        int         kind;
    } s[] = {
        {"pami_send_t", sizeof(pami_send_t), 0},
        {"pami_send_immediate_t", sizeof(pami_send_immediate_t), 1},
        {"pami_rma_t", sizeof(pami_rma_t), 2},
        {"pami_rma_t", sizeof(pami_rma_t), 3},
        {"pami_rrma_t", sizeof(pami_rrma_t), 4},
        {"pami_rrma_t", sizeof(pami_rrma_t), 5},
        {"pami_rmw_t", sizeof(pami_rmw_t), 6},
        {"pami_context_stats_t", sizeof(pami_context_stats_t), 7},
        {"pami_config_var_t", sizeof(pami_config_var_t), 8},
        {"pami_algorithm_selection_t", sizeof(pami_algorithm_selection_t), 9},
        {"pami_send_immediate_t", sizeof(pami_send_immediate_t), 10},
        {"pami_send_t", sizeof(pami_send_t), 11},
        {"pami_svd_info_t", sizeof(pami_svd_info_t), 12},
        {"pami_svd_entry_t", sizeof(pami_svd_entry_t), 13},
    };
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        /* newer (longer), inside a field, and nothing at all */
        size_t sizes[] = {s[i].now + 8, 3, 0};
        for (size_t k = 0; k < 3; k++) {
            bad_t b = {s[i].name, sizes[k], s[i].kind};
            pami_result_t rc = with_log(call_bad, &b);
            CHECK(rc == PAMI_INVAL, "%s of %zu bytes: %s (want PAMI_INVAL)",
                  s[i].name, sizes[k], pami_error_text(rc));
            char want[96];
            snprintf(want, sizeof(want), "%s of %zu bytes", s[i].name,
                     sizes[k]);
            CHECK(strstr(logged, want) != NULL,
                  "no log line '%s' for a bad size (log: '%s')", want,
                  logged);
        }
    }
}

/* field_mask bits pami does not know: PAMI_INVAL and a log line. */
#define UNKNOWN_BIT (1ull << 40)
static pami_client_t the_client;

static pami_result_t call_mask(void *arg)
{
    int kind = *(int *)arg;
    pami_geometry_t world = NULL;
    if (kind >= 3 && pami_geometry_world(ctx, &world) != PAMI_SUCCESS)
        return PAMI_ERROR;
    switch (kind) {
    case 0: {
        pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                              UNKNOWN_BIT};
        return pami_client_query(the_client, &a);
    }
    case 1: {
        pami_dispatch_hint_t h = {.field_mask = UNKNOWN_BIT};
        return pami_dispatch_set(ctx, 2, handler, NULL, &h);
    }
    case 2: {
        pami_client_params_t p = {.field_mask = UNKNOWN_BIT};
        pami_client_t c = NULL;
        pami_result_t rc = pami_client_create("mask", &p, &c);
        if (c != NULL)
            pami_client_destroy(&c);
        return rc;
    }
    case 3: {
        pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE |
                                                UNKNOWN_BIT};
        return pami_geometry_query(world, &a);
    }
    case 4: {
        pami_xfer_t x = {.field_mask = UNKNOWN_BIT, .kind = PAMI_XFER_BARRIER,
                         .geometry = world};
        return pami_collective(ctx, &x);
    }
    case 5: {
        pami_xfer_t x = {.field_mask = UNKNOWN_BIT, .kind = PAMI_XFER_BARRIER,
                         .geometry = world};
        return pami_collective_wait(ctx, &x);
    }
    case 6: {
        pami_geometry_params_t p = {.field_mask = UNKNOWN_BIT};
        pami_task_t     t = 0;
        pami_geometry_t g = NULL;
        return pami_geometry_create_tasklist(ctx, world, 7, &t, 1, &p, &g,
                                             NULL, NULL);
    }
    case 7: {
        static uint64_t var;
        pami_svd_register_t r = {.field_mask = UNKNOWN_BIT, .key = 9,
                                 .addr = &var, .size = sizeof(var)};
        return pami_svd_register(ctx, &r);
    }
    case 8: {
        pami_svd_update_t u = {.field_mask = UNKNOWN_BIT, .key = 9};
        return pami_svd_update(ctx, &u);
    }
    case 9: {
        pami_svd_lookup_t l = {.field_mask = UNKNOWN_BIT, .owner = 0,
                               .key = 9};
        pami_svd_entry_t  en;
        return pami_svd_lookup_wait(ctx, &l, &en);
    }
    default: return PAMI_ERROR;
    }
}

static void unknown_bits(void)
{
    static const char *const what[] = {
        "pami_client_attr_t", "pami_dispatch_hint_t", "pami_client_params_t",
        "pami_geometry_attr_t", "pami_xfer_t", "pami_xfer_t",
        "pami_geometry_params_t", "pami_svd_register_t", "pami_svd_update_t",
        "pami_svd_lookup_t"};
    for (int k = 0; k < (int)(sizeof(what) / sizeof(what[0])); k++) {
        pami_result_t rc = with_log(call_mask, &k);
        CHECK(rc == PAMI_INVAL, "%s with an unknown field_mask bit: %s "
              "(want PAMI_INVAL)", what[k], pami_error_text(rc));
        CHECK(strstr(logged, what[k]) != NULL && strstr(logged, "field_mask"),
              "no log line naming %s.field_mask (log: '%s')", what[k], logged);
    }
    /* The known bits still work. */
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_SIZE};
    CHECK(pami_client_query(the_client, &a) == PAMI_SUCCESS && a.size == 1,
          "client_query with known bits");
}

int main(void)
{
    setenv("PAMI_LOG_LEVEL", "warn", 0);
    pami_client_t client;
    if (pami_client_create("sized", NULL, &client) != PAMI_SUCCESS ||
        pami_context_createv(client, NULL, 1, &ctx) != PAMI_SUCCESS) {
        fprintf(stdout, "FAIL: no client or context\n");
        return 1;
    }
    CHECK(pami_endpoint_create(client, 0, 0, &self) == PAMI_SUCCESS,
          "endpoint");
    CHECK(pami_dispatch_set(ctx, 1, handler, NULL, NULL) == PAMI_SUCCESS,
          "dispatch_set");
    CHECK(pami_memregion_create(ctx, region_mem, sizeof(region_mem), &mr) ==
              PAMI_SUCCESS,
          "region");
    CHECK(pami_memregion_create(ctx, local_mem, sizeof(local_mem), &lmr) ==
              PAMI_SUCCESS,
          "local region");

    old_send();
    old_send_immediate();
    old_rma();
    old_outputs(client);
    bad_sizes();
    the_client = client;
    unknown_bits();

    CHECK(pami_memregion_destroy(ctx, &lmr) == PAMI_SUCCESS, "destroy lmr");
    CHECK(pami_memregion_destroy(ctx, &mr) == PAMI_SUCCESS, "destroy mr");
    CHECK(pami_client_destroy(&client) == PAMI_SUCCESS, "client destroy");
    fprintf(stdout, "%s: %d failure(s)\n", failures ? "FAIL" : "PASS",
            failures);
    return failures ? 1 : 0;
}

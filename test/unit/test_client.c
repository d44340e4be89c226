/* The client and its contexts seen from one process (task 0 of 1): what
 * pami_client_query reports, and the clear results bad input gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pami.h"
#include "pami_protocol.h"

#define WAIT_MS 5000

#include "unit_world.h"

/* ------------------------------------------------------------------------ */
/* client_query                                                              */
/* ------------------------------------------------------------------------ */

#define ALL_ATTRS                                                            \
    (PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |                         \
     PAMI_CLIENT_ATTR_LOCAL_TASKS | PAMI_CLIENT_ATTR_DISPATCH_MAX |          \
     PAMI_CLIENT_ATTR_HEADER_MAX | PAMI_CLIENT_ATTR_IMMEDIATE_MAX |          \
     PAMI_CLIENT_ATTR_RNDV_THRESHOLD | PAMI_CLIENT_ATTR_NUM_CONTEXTS |       \
     PAMI_CLIENT_ATTR_NAME | PAMI_CLIENT_ATTR_BOOTSTRAP |                    \
     PAMI_CLIENT_ATTR_TRANSPORT | PAMI_CLIENT_ATTR_NODES)

static void test_query_singleton(void **state)
{
    (void)state;
    pami_client_t client = NULL;
    assert_int_equal(pami_client_create("unit-query", NULL, &client),
                     PAMI_SUCCESS);
    assert_non_null(client);

    pami_client_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask   = ALL_ATTRS;
    a.num_contexts = 99;
    assert_int_equal(pami_client_query(client, &a), PAMI_SUCCESS);
    assert_int_equal(a.task, 0);
    assert_int_equal(a.size, 1);
    assert_int_equal(a.num_local_tasks, 1);
    assert_non_null(a.local_tasks);
    assert_int_equal(a.local_tasks[0], 0);
    assert_int_equal(a.num_nodes, 1);
    assert_non_null(a.task_node);
    assert_int_equal(a.task_node[0], 0);
    assert_true(a.dispatch_max > 0);
    assert_true(a.header_max >= 128);
    assert_true(a.immediate_max > 0);
    assert_true(a.rndv_threshold > 0);
    assert_int_equal(a.num_contexts, 0);
    assert_non_null(a.name);
    assert_string_equal(a.name, "unit-query");
    assert_int_equal(a.bootstrap, PAMI_BOOTSTRAP_LOCAL);
    assert_non_null(a.ucx_version);
    assert_true(strlen(a.ucx_version) > 0);
    assert_non_null(strchr(a.ucx_version, '.'));
    assert_non_null(a.transports);

    pami_context_t ctx[3];
    assert_int_equal(pami_context_createv(client, NULL, 3, ctx),
                     PAMI_SUCCESS);
    a.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS;
    assert_int_equal(pami_client_query(client, &a), PAMI_SUCCESS);
    assert_int_equal(a.num_contexts, 3);

    assert_int_equal(pami_context_destroyv(ctx, 3), PAMI_SUCCESS);
    for (size_t i = 0; i < 3; i++)
        assert_null(ctx[i]);
    assert_int_equal(pami_client_query(client, &a), PAMI_SUCCESS);
    assert_int_equal(a.num_contexts, 0);

    assert_int_equal(pami_client_destroy(&client), PAMI_SUCCESS);
    assert_null(client);
}

/* Only the fields named in field_mask are written. */
static void test_query_field_mask(void **state)
{
    (void)state;
    world_t *w = world_up(1);
    pami_client_attr_t a, before;
    memset(&a, 0x5a, sizeof(a));
    a.field_mask = 0;
    before       = a;
    assert_int_equal(pami_client_query(w->client, &a), PAMI_SUCCESS);
    assert_memory_equal(&a, &before, sizeof(a));

    a.field_mask = PAMI_CLIENT_ATTR_SIZE;
    before       = a;
    assert_int_equal(pami_client_query(w->client, &a), PAMI_SUCCESS);
    assert_int_equal(a.size, 1);
    a.size = before.size;
    assert_memory_equal(&a, &before, sizeof(a));
    world_down(w);
}

static void test_query_follows_config(void **state)
{
    (void)state;
    setenv("PAMI_IMMEDIATE_MAX", "512", 1);
    setenv("PAMI_RNDV_THRESHOLD", "8k", 1);
    pami_client_t client;
    pami_result_t rc = pami_client_create("unit", NULL, &client);
    unsetenv("PAMI_IMMEDIATE_MAX");
    unsetenv("PAMI_RNDV_THRESHOLD");
    assert_int_equal(rc, PAMI_SUCCESS);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_IMMEDIATE_MAX |
                                          PAMI_CLIENT_ATTR_RNDV_THRESHOLD};
    assert_int_equal(pami_client_query(client, &a), PAMI_SUCCESS);
    assert_int_equal(a.immediate_max, 512);
    assert_int_equal(a.rndv_threshold, 8192);
    assert_int_equal(pami_client_destroy(&client), PAMI_SUCCESS);
}

static void test_query_null(void **state)
{
    (void)state;
    pami_client_attr_t a = {.field_mask = ALL_ATTRS};
    assert_int_equal(pami_client_query(NULL, &a), PAMI_INVAL);
    world_t *w = world_up(0);
    assert_int_equal(pami_client_query(w->client, NULL), PAMI_INVAL);
    world_down(w);
}

/* ------------------------------------------------------------------------ */
/* bad_input                                                                 */
/* ------------------------------------------------------------------------ */

static int handled;

static void count_handler(pami_context_t ctx, void *cookie, const void *hdr,
                          size_t hdr_len, const void *data, size_t data_len,
                          pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)cookie, (void)hdr, (void)hdr_len, (void)data;
    (void)data_len, (void)origin, (void)recv;
    handled++;
}

/* Each send must fail with want at both calls and leave no trace: no
 * counted send, no callback, no message at the target. */
static void expect_rejected(world_t *w, const pami_send_immediate_t *p,
                            pami_result_t want, const char *what)
{
    pami_context_stats_t before, after;
    assert_int_equal(pami_context_stats(w->ctx[0], &before), PAMI_SUCCESS);

    pami_result_t rc = pami_send_immediate(w->ctx[0], p);
    if (rc != want)
        fail_msg("send_immediate with %s: got %s, want %s", what,
                 pami_error_text(rc), pami_error_text(want));

    cb_count_t calls = {0};
    pami_send_t s = {.send = *p, .local_fn = cb_count_local,
                     .remote_fn = cb_count_remote, .cookie = &calls};
    rc = pami_send(w->ctx[0], &s);
    if (rc != want)
        fail_msg("send with %s: got %s, want %s", what, pami_error_text(rc),
                 pami_error_text(want));

    for (int i = 0; i < 20; i++)
        advance_all(w);
    assert_int_equal(calls.local, 0);
    assert_int_equal(calls.remote, 0);
    assert_int_equal(pami_context_stats(w->ctx[0], &after), PAMI_SUCCESS);
    assert_int_equal(after.sends, before.sends);
}

static void test_send_bad_header(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    assert_int_equal(pami_dispatch_set(w->ctx[1], 0, count_handler, NULL,
                                       NULL), PAMI_SUCCESS);
    handled = 0;
    size_t hmax = w->attr.header_max;
    char  *big  = calloc(1, hmax + 2);
    assert_non_null(big);

    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = 0};
    p.header     = big;
    p.header_len = hmax + 1;
    expect_rejected(w, &p, PAMI_INVAL, "header_len = header_max + 1");
    p.header_len = SIZE_MAX;
    expect_rejected(w, &p, PAMI_INVAL, "header_len = SIZE_MAX");
    p.header     = NULL;
    p.header_len = 1;
    expect_rejected(w, &p, PAMI_INVAL, "NULL header of length 1");
    p.header_len = hmax + 1;
    expect_rejected(w, &p, PAMI_INVAL, "NULL header over header_max");
    p.header_len = 0;
    p.data       = NULL;
    p.data_len   = 8;
    expect_rejected(w, &p, PAMI_INVAL, "NULL data of length 8");
    assert_int_equal(handled, 0);
    free(big);
    world_down(w);
}

static void test_send_immediate_over_limit(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    size_t imax = w->attr.immediate_max;
    char  *buf  = calloc(1, imax + 2);
    assert_non_null(buf);
    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = 0,
                               .data = buf, .data_len = imax + 1};
    assert_int_equal(pami_send_immediate(w->ctx[0], &p), PAMI_INVAL);
    p.header     = buf;
    p.header_len = 1;
    p.data_len   = imax;
    assert_int_equal(pami_send_immediate(w->ctx[0], &p), PAMI_INVAL);
    free(buf);
    world_down(w);
}

static void noop_handler(pami_context_t ctx, void *cookie, const void *hdr,
                         size_t hdr_len, const void *data, size_t data_len,
                         pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx, (void)cookie, (void)hdr, (void)hdr_len, (void)data;
    (void)data_len, (void)origin, (void)recv;
}

/* Child: 0 when header 1 + data SIZE_MAX is refused with PAMI_INVAL over a
 * wired endpoint, 2 when something else failed, 10 + result otherwise. */
static int overflow_child(void)
{
    pami_client_t  client;
    pami_context_t ctx[2];
    pami_endpoint_t dest;
    if (pami_client_create("unit", NULL, &client) != PAMI_SUCCESS ||
        pami_context_createv(client, NULL, 2, ctx) != PAMI_SUCCESS ||
        pami_dispatch_set(ctx[1], 0, noop_handler, NULL, NULL) !=
            PAMI_SUCCESS ||
        pami_endpoint_create(client, 0, 1, &dest) != PAMI_SUCCESS)
        return 2;
    char buf[8] = {0};
    pami_send_immediate_t p = {.dest = dest, .dispatch = 0, .header = buf,
                               .header_len = 1};
    /* Wire the endpoint first, so the transport would really try. */
    uint64_t end = now_ms() + WAIT_MS;
    pami_result_t rc;
    while ((rc = pami_send_immediate(ctx[0], &p)) == PAMI_EAGAIN &&
           now_ms() < end) {
        pami_context_advance(ctx[0], 1);
        pami_context_advance(ctx[1], 1);
    }
    if (rc != PAMI_SUCCESS)
        return 2;
    p.data     = buf;
    p.data_len = SIZE_MAX;
    rc = pami_send_immediate(ctx[0], &p);
    if (rc != PAMI_INVAL) {
        fprintf(stderr, "send_immediate of header 1 + data SIZE_MAX bytes: "
                        "got %s, want invalid argument\n",
                pami_error_text(rc));
        return 10 + (int)rc;
    }
    pami_client_destroy(&client);
    return 0;
}

/* header_len + data_len wrapping around size_t is not "small". */
static void test_send_immediate_length_overflow(void **state)
{
    (void)state;
    int rc = run_child("overflow");
    if (rc != 0)
        fail_msg("send_immediate with header_len + data_len > SIZE_MAX: the "
                 "child %s %d (want exit 0: PAMI_INVAL)",
                 rc >= 128 ? "died of signal" : "exited with",
                 rc >= 128 ? rc - 128 : rc);
}

static void test_send_bad_dispatch(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    size_t dmax = w->attr.dispatch_max;
    pami_send_immediate_t p = {.dest = endpoint(w, 1)};
    p.dispatch = SIZE_MAX;
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id SIZE_MAX");
    p.dispatch = dmax + 65536;
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id dispatch_max + 65536");
    p.dispatch = (size_t)1 << 32;
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id 2^32");
    world_down(w);
}

/* User ids are 0 .. dispatch_max-1: the first id beyond is refused at the
 * sender, like pami_dispatch_set refuses it at the target. */
static void test_send_dispatch_max(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    size_t dmax = w->attr.dispatch_max;
    assert_int_equal(pami_dispatch_set(w->ctx[1], dmax, count_handler, NULL,
                                       NULL), PAMI_INVAL);
    /* Ids from dispatch_max on are the protocols' (which send on them
     * with pami_protocol_send*) and the core's: the program may not. */
    pami_send_immediate_t p = {.dest = endpoint(w, 1), .dispatch = dmax};
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id dispatch_max");
    size_t end = dmax;
    pami_protocol_info_t info;
    for (size_t i = 0; pami_protocol_query(w->client, i, &info) ==
                       PAMI_SUCCESS; i++) {
        end = info.dispatch_base + info.num_dispatch;
        p.dispatch = info.dispatch_base;
        expect_rejected(w, &p, PAMI_INVAL, info.name);
    }
    p.dispatch = end;
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id past the protocols'");
    p.dispatch = end + 1;
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id past them + 1");
    p.dispatch = SIZE_MAX;
    expect_rejected(w, &p, PAMI_INVAL, "dispatch id SIZE_MAX");
    world_down(w);
}

/* The job key of a singleton: its id ("single-<pid>") is already a safe
 * name, so it comes back whole, with the FNV-1a hash of the id. */
static void test_job_key(void **state)
{
    (void)state;
    pami_client_t client = NULL;
    assert_int_equal(pami_client_create("unit-job-key", NULL, &client),
                     PAMI_SUCCESS);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    assert_int_equal(pami_client_query(client, &a), PAMI_SUCCESS);
    char want[32];
    snprintf(want, sizeof(want), "single-%ld", (long)getpid());
    assert_string_equal(a.job_id, want);

    pami_protocol_job_key_t key;
    memset(&key, 0x7f, sizeof(key));
    assert_int_equal(pami_protocol_job_key(client, &key), PAMI_SUCCESS);
    assert_string_equal(key.name, want);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = want; *c != '\0'; c++)
        h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
    assert_true(key.hash == h);

    assert_int_equal(pami_protocol_job_key(NULL, &key), PAMI_INVAL);
    assert_int_equal(pami_protocol_job_key(client, NULL), PAMI_INVAL);
    assert_int_equal(pami_client_destroy(&client), PAMI_SUCCESS);
}

static void test_bad_endpoints(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    pami_endpoint_t ep = 12345;
    assert_int_equal(pami_endpoint_create(w->client, 1, 0, &ep), PAMI_INVAL);
    assert_int_equal(pami_endpoint_create(w->client, UINT32_MAX, 0, &ep),
                     PAMI_INVAL);
    assert_int_equal(pami_endpoint_create(w->client, 0, PAMI_CONTEXT_MAX,
                                          &ep), PAMI_INVAL);
    assert_int_equal(pami_endpoint_create(w->client, 0, SIZE_MAX, &ep),
                     PAMI_INVAL);
    assert_int_equal(pami_endpoint_create(NULL, 0, 0, &ep), PAMI_INVAL);
    assert_int_equal(pami_endpoint_create(w->client, 0, 0, NULL),
                     PAMI_INVAL);
    assert_int_equal(ep, 12345);
    assert_int_equal(pami_endpoint_query(PAMI_ENDPOINT_NULL, NULL, NULL),
                     PAMI_INVAL);

    /* A round trip through create and query. */
    pami_task_t task = 7;
    size_t      off  = 7;
    assert_int_equal(pami_endpoint_query(endpoint(w, 1), &task, &off),
                     PAMI_SUCCESS);
    assert_int_equal(task, 0);
    assert_int_equal(off, 1);

    pami_send_immediate_t p = {.dispatch = 0};
    p.dest = PAMI_ENDPOINT_NULL;
    expect_rejected(w, &p, PAMI_INVAL, "PAMI_ENDPOINT_NULL");

    /* Offset 2 names no context of this 2-context client: refused at
     * create or at the send. */
    pami_endpoint_t beyond;
    if (pami_endpoint_create(w->client, 0, 2, &beyond) == PAMI_SUCCESS) {
        p.dest = beyond;
        expect_rejected(w, &p, PAMI_INVAL, "context offset = num_contexts");
    }
    if (pami_endpoint_create(w->client, 0, PAMI_CONTEXT_MAX - 1, &beyond) ==
        PAMI_SUCCESS) {
        p.dest = beyond;
        expect_rejected(w, &p, PAMI_INVAL, "context offset PAMI_CONTEXT_MAX-1");
    }
    /* A value no create can make: a task beyond the job. */
    pami_endpoint_t forged = endpoint(w, 0);
    for (pami_endpoint_t bit = 1u << 31; bit != 0; bit >>= 1) {
        pami_task_t t;
        size_t      o;
        pami_endpoint_t cand = forged | bit;
        if (pami_endpoint_query(cand, &t, &o) == PAMI_SUCCESS && t >= 1) {
            p.dest = cand;
            expect_rejected(w, &p, PAMI_INVAL, "a forged task id");
            break;
        }
    }
    world_down(w);
}

static void test_null_arguments(void **state)
{
    (void)state;
    assert_int_equal(pami_client_create("unit", NULL, NULL), PAMI_INVAL);
    assert_int_equal(pami_client_destroy(NULL), PAMI_INVAL);
    pami_client_t none = NULL;
    assert_int_equal(pami_client_destroy(&none), PAMI_INVAL);

    world_t *w = world_up(2);
    pami_send_immediate_t p = {.dest = endpoint(w, 1)};
    pami_send_t s = {.send = p};
    assert_int_equal(pami_send_immediate(NULL, &p), PAMI_INVAL);
    assert_int_equal(pami_send_immediate(w->ctx[0], NULL), PAMI_INVAL);
    assert_int_equal(pami_send(NULL, &s), PAMI_INVAL);
    assert_int_equal(pami_send(w->ctx[0], NULL), PAMI_INVAL);
    assert_int_equal(pami_context_advance(NULL, 1), PAMI_INVAL);
    assert_int_equal(pami_context_wait(NULL, 0), PAMI_INVAL);
    assert_int_equal(pami_context_stats(NULL, NULL), PAMI_INVAL);
    assert_int_equal(pami_context_stats(w->ctx[0], NULL), PAMI_INVAL);
    pami_work_t work;
    assert_int_equal(pami_context_post(w->ctx[0], &work, NULL, NULL),
                     PAMI_INVAL);
    assert_int_equal(pami_dispatch_fence(NULL), PAMI_INVAL);
    world_down(w);
}

static void test_createv_bad(void **state)
{
    (void)state;
    world_t *w = world_up(0);
    pami_context_t ctx[PAMI_CONTEXT_MAX + 1];
    memset(ctx, 0, sizeof(ctx));
    assert_int_equal(pami_context_createv(w->client, NULL, 0, ctx),
                     PAMI_INVAL);
    assert_int_equal(pami_context_createv(w->client, NULL,
                                          PAMI_CONTEXT_MAX + 1, ctx),
                     PAMI_INVAL);
    assert_int_equal(pami_context_createv(w->client, NULL, SIZE_MAX, ctx),
                     PAMI_INVAL);
    assert_int_equal(pami_context_createv(NULL, NULL, 1, ctx), PAMI_INVAL);
    assert_int_equal(pami_context_createv(w->client, NULL, 1, NULL),
                     PAMI_INVAL);

    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS};
    assert_int_equal(pami_client_query(w->client, &a), PAMI_SUCCESS);
    assert_int_equal(a.num_contexts, 0);

    /* After the failures a good createv still works, a second one not. */
    assert_int_equal(pami_context_createv(w->client, NULL, 2, w->ctx),
                     PAMI_SUCCESS);
    w->n = 2;
    pami_context_t again[2] = {NULL, NULL};
    assert_int_equal(pami_context_createv(w->client, NULL, 2, again),
                     PAMI_INVAL);
    assert_int_equal(pami_context_createv(w->client, NULL, 1, again),
                     PAMI_INVAL);
    assert_null(again[0]);
    assert_int_equal(pami_client_query(w->client, &a), PAMI_SUCCESS);
    assert_int_equal(a.num_contexts, 2);

    /* destroyv wants exactly the contexts of createv. */
    assert_int_equal(pami_context_destroyv(w->ctx, 1), PAMI_INVAL);
    assert_int_equal(pami_context_destroyv(NULL, 2), PAMI_INVAL);
    assert_non_null(w->ctx[0]);

    /* The contexts still work after the refused calls. */
    for (int i = 0; i < 10; i++)
        advance_all(w);
    world_down(w);
}

/* Operations still pending at destroy: destroy returns, and every callback
 * runs exactly once, whatever its result. */
#define PENDING 6

typedef struct {
    int recv_started;
    int recv_done;
} pending_target_t;

static void pending_recv_done(pami_context_t ctx, void *cookie,
                              pami_result_t result)
{
    (void)ctx, (void)result;
    pending_target_t *t = cookie;
    t->recv_done++;
}

static char pending_sink[1 << 20];

static void pending_handler(pami_context_t ctx, void *cookie, const void *hdr,
                            size_t hdr_len, const void *data,
                            size_t data_len, pami_endpoint_t origin,
                            pami_recv_t *recv)
{
    (void)ctx, (void)hdr, (void)hdr_len, (void)origin;
    pending_target_t *t = cookie;
    if (data == NULL && data_len > 0 && recv != NULL &&
        data_len <= sizeof(pending_sink)) {
        t->recv_started++;
        recv->addr     = pending_sink;
        recv->local_fn = pending_recv_done;
        recv->cookie   = t;
    }
}

static void test_destroy_with_pending(void **state)
{
    (void)state;
    world_t *w = world_up(2);
    pending_target_t target = {0};
    assert_int_equal(pami_dispatch_set(w->ctx[1], 0, pending_handler,
                                       &target, NULL), PAMI_SUCCESS);

    static char payload[1 << 20];
    memset(payload, 0x3c, sizeof(payload));
    static const size_t sizes[PENDING] = {0, 1, 100, 4096, 65536, 1 << 20};
    cb_count_t calls[PENDING];
    memset(calls, 0, sizeof(calls));
    pami_endpoint_t dest = endpoint(w, 1);
    for (size_t i = 0; i < PENDING; i++) {
        pami_send_t s = {
            .send      = {.dest = dest, .dispatch = 0, .header = &i,
                          .header_len = sizeof(i), .data = payload,
                          .data_len = sizes[i]},
            .local_fn  = cb_count_local,
            .remote_fn = cb_count_remote,
            .cookie    = &calls[i],
        };
        assert_int_equal(pami_send(w->ctx[0], &s), PAMI_SUCCESS);
    }
    /* A message to a dispatch id the target never registered, too. */
    cb_count_t unknown = {0};
    pami_send_t s = {.send = {.dest = dest, .dispatch = 9},
                     .local_fn = cb_count_local, .remote_fn = cb_count_remote,
                     .cookie = &unknown};
    assert_int_equal(pami_send(w->ctx[0], &s), PAMI_SUCCESS);

    /* Neither context was advanced. */
    pami_result_t rc = pami_context_destroyv(w->ctx, 2);
    assert_true(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT ||
                rc == PAMI_SHUTDOWN);
    for (size_t i = 0; i < 2; i++)
        assert_null(w->ctx[i]);
    w->n = 0;

    for (size_t i = 0; i < PENDING; i++) {
        if (calls[i].local != 1 || calls[i].remote != 1)
            fail_msg("send %zu (%zu bytes): local_fn ran %d times, remote_fn "
                     "%d times; want once each", i, sizes[i],
                     calls[i].local, calls[i].remote);
    }
    assert_int_equal(unknown.local, 1);
    assert_int_equal(unknown.remote, 1);
    assert_int_not_equal(unknown.remote_rc, PAMI_SUCCESS);
    assert_int_equal(target.recv_done, target.recv_started);

    /* The client is still usable: new contexts, a message between them. */
    assert_int_equal(pami_context_createv(w->client, NULL, 2, w->ctx),
                     PAMI_SUCCESS);
    w->n = 2;
    assert_int_equal(pami_dispatch_set(w->ctx[1], 0, count_handler, NULL,
                                       NULL), PAMI_SUCCESS);
    handled = 0;
    cb_count_t after = {0};
    s = (pami_send_t){.send = {.dest = endpoint(w, 1), .dispatch = 0},
                      .remote_fn = cb_count_remote, .cookie = &after};
    assert_int_equal(pami_send(w->ctx[0], &s), PAMI_SUCCESS);
    uint64_t end = now_ms() + WAIT_MS;
    while (after.remote == 0 && now_ms() < end)
        advance_all(w);
    assert_int_equal(handled, 1);
    assert_int_equal(after.remote, 1);
    assert_int_equal(after.remote_rc, PAMI_SUCCESS);

    /* Destroy with pending work from the client's destroy, too. */
    cb_count_t last = {0};
    s.cookie = &last;
    assert_int_equal(pami_send(w->ctx[0], &s), PAMI_SUCCESS);
    assert_int_equal(pami_client_destroy(&w->client), PAMI_SUCCESS);
    assert_int_equal(last.remote, 1);
    free(w);
}

/* An OOB allgather that corrupts the first word of the contexts' first
 * exchange (the length of the task's worker addresses): createv must
 * refuse a length no address has, and survive one shorter than its own
 * (before, a length of 2^63 with two contexts sized the address buffer
 * to 0 and the copy wrote past it). */
static uint64_t oob_forged_len;

static int forging_allgather(void *cookie, const void *send, void *recv,
                             size_t len)
{
    (void)cookie;
    memcpy(recv, send, len);
    if (len == 3 * sizeof(uint64_t)) /* {address bytes, n, protocols} */
        ((uint64_t *)recv)[0] = oob_forged_len;
    return 0;
}

/* The host exchange (the client's second allgather) with this task's
 * own slot changed, as an OOB allgather that misorders its tasks does:
 * the client refuses to start. */
static int slot_calls;

static int misplacing_allgather(void *cookie, const void *send, void *recv,
                                size_t len)
{
    (void)cookie;
    memcpy(recv, send, len);
    if (++slot_calls == 2 && len > 0)
        ((uint8_t *)recv)[len - 1] ^= 0x5a;
    return 0;
}

static void test_create_misplaced_oob_slot(void **state)
{
    (void)state;
    pami_client_params_t p = {0};
    p.field_mask    = PAMI_CLIENT_PARAM_OOB;
    p.oob_allgather = misplacing_allgather;
    p.oob_size      = 1;
    pami_client_t client = NULL;
    slot_calls           = 0;
    assert_int_equal(pami_client_create("oob-slot", &p, &client),
                     PAMI_BOOTSTRAP);
    assert_true(slot_calls >= 2);
}

static void test_createv_corrupt_oob(void **state)
{
    (void)state;
    static const struct {
        uint64_t      len;
        pami_result_t rc;
    } cases[] = {{(uint64_t)1 << 63, PAMI_BOOTSTRAP},
                 {(uint64_t)1 << 62, PAMI_BOOTSTRAP},
                 {((uint64_t)1 << 20) + 1, PAMI_BOOTSTRAP},
                 {1, PAMI_SUCCESS},
                 {0, PAMI_SUCCESS}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pami_client_params_t p = {0};
        p.field_mask    = PAMI_CLIENT_PARAM_OOB;
        p.oob_allgather = forging_allgather;
        p.oob_task      = 0;
        p.oob_size      = 1;
        oob_forged_len  = cases[i].len;
        pami_client_t  client;
        pami_context_t ctx[2];
        assert_int_equal(pami_client_create("oob-forged", &p, &client),
                         PAMI_SUCCESS);
        assert_int_equal(pami_context_createv(client, NULL, 2, ctx),
                         cases[i].rc);
        if (cases[i].rc == PAMI_SUCCESS)
            assert_int_equal(pami_context_destroyv(ctx, 2), PAMI_SUCCESS);
        assert_int_equal(pami_client_destroy(&client), PAMI_SUCCESS);
    }
}

/* With an argument, run only the group of that name. */
#define RUN(name, tests)                                                     \
    (argc < 2 || strcmp(argv[1], name) == 0                                  \
         ? cmocka_run_group_tests_name(name, tests, NULL, NULL)              \
         : 0)

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return strcmp(argv[2], "overflow") == 0 ? overflow_child() : 99;
    const struct CMUnitTest query[] = {
        cmocka_unit_test(test_query_singleton),
        cmocka_unit_test(test_query_field_mask),
        cmocka_unit_test(test_query_follows_config),
        cmocka_unit_test(test_query_null),
    };
    const struct CMUnitTest bad_input[] = {
        cmocka_unit_test(test_send_bad_header),
        cmocka_unit_test(test_send_immediate_over_limit),
        cmocka_unit_test(test_send_immediate_length_overflow),
        cmocka_unit_test(test_send_bad_dispatch),
        cmocka_unit_test(test_send_dispatch_max),
        cmocka_unit_test(test_job_key),
        cmocka_unit_test(test_bad_endpoints),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_createv_bad),
        cmocka_unit_test(test_destroy_with_pending),
        cmocka_unit_test(test_createv_corrupt_oob),
        cmocka_unit_test(test_create_misplaced_oob_slot),
    };
    int failed = 0;
    failed += RUN("client_query", query);
    failed += RUN("bad_input", bad_input);
    return failed;
}

/*
 * Suite protocols, the calls one by one: the protocol SDK's helpers
 * (hash, MAC, job key, settings, in_handler, the registry's queries),
 * the barriers' argument checks and the SVD calls' results (docs/api.md,
 * "Protocols", "Barriers", "Shared variable directory"). Each case names
 * the sentences it checks in docs/conformance.md.
 */
#include "cf.h"

#include <pami_barrier.h>
#include <pami_collectives.h>
#include <pami_protocol.h>
#include <pami_svd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- sdk_helpers ---- */

typedef struct {
    int in_work, in_cb, outside;
    size_t ran;
} inh_t;

static pami_result_t inh_work(pami_context_t c, void *k)
{
    inh_t *s = k;
    s->in_work = pami_protocol_in_handler(c);
    s->ran++;
    return PAMI_SUCCESS;
}

static void sdk_helpers(cf_env_t *e)
{
    /* FNV-1a 64 (docs: "the 64-bit FNV-1a"), its published values. */
    uint64_t h0 = PAMI_PROTOCOL_HASH_INIT;
    CF_CHECK(e, pami_protocol_hash(h0, "", 0) == 0xcbf29ce484222325ull &&
                    pami_protocol_hash(h0, "a", 1) == 0xaf63dc4c8601ec8cull &&
                    pami_protocol_hash(h0, "foobar", 6) ==
                        0x85944171f73967e8ull,
             "expected FNV-1a's published values");
    CF_CHECK(e, pami_protocol_hash(pami_protocol_hash(h0, "foo", 3), "bar",
                                   3) == pami_protocol_hash(h0, "foobar", 6),
             "expected hashing a then b to equal hashing ab");
    CF_CHECK(e, pami_protocol_hash(12345, NULL, 9) == 12345,
             "expected a NULL data to return h");
    /* SipHash-2-4, the reference's vectors (key 00..0f). */
    uint8_t key[PAMI_PROTOCOL_MAC_KEY_LEN], msg[15];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    CF_CHECK(e, pami_protocol_mac(key, msg, 15) == 0xa129ca6149be45e5ull,
             "expected SipHash-2-4's vector for 15 bytes, seen %llx",
             (unsigned long long)pami_protocol_mac(key, msg, 15));
    CF_CHECK(e, pami_protocol_mac(key, msg, 0) == 0x726fdb47dd0e0e31ull &&
                    pami_protocol_mac(key, NULL, 7) == 0x726fdb47dd0e0e31ull,
             "expected the empty message's vector, also for NULL data");
    /* Job key: the job id made path-safe, and its hash. */
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    CF_OK(e, pami_client_query(e->client, &a));
    pami_protocol_job_key_t jk;
    CF_RC(e, PAMI_INVAL, pami_protocol_job_key(NULL, &jk));
    CF_RC(e, PAMI_INVAL, pami_protocol_job_key(e->client, NULL));
    CF_OK(e, pami_protocol_job_key(e->client, &jk));
    size_t idlen = strlen(a.job_id), nl = strlen(jk.name);
    CF_CHECK(e, nl == (idlen < 64 ? idlen : 64), "expected the name cut to "
             "64 bytes of the id's %zu, seen %zu", idlen, nl);
    for (size_t i = 0; i < nl; i++) {
        char c = a.job_id[i], want = ((c >= 'a' && c <= 'z') ||
                                      (c >= 'A' && c <= 'Z') ||
                                      (c >= '0' && c <= '9') || c == '.' ||
                                      c == '_' || c == '-') ? c : '_';
        CF_CHECK(e, jk.name[i] == want, "expected byte %zu of the job key "
                 "'%c', seen '%c'", i, want, jk.name[i]);
    }
    CF_CHECK(e, jk.hash == pami_protocol_hash(h0, a.job_id, idlen),
             "expected the job key's hash to be FNV-1a of the whole id");
    /* Settings: the core's parser. */
    setenv("CF_TEST_SIZE", "64k", 1);
    CF_CHECK(e, pami_protocol_env_size("cf", "CF_TEST_SIZE", 7, 0, 1 << 20) ==
                    65536, "expected 64k = 65536");
    setenv("CF_TEST_SIZE", "2M", 1);
    CF_CHECK(e, pami_protocol_env_size("cf", "CF_TEST_SIZE", 7, 0,
                                       1ull << 40) == 2u << 20,
             "expected 2M = 2 MiB (any case)");
    CF_CHECK(e, pami_protocol_env_size("cf", "CF_TEST_SIZE", 7, 0, 1000) == 7,
             "expected a size outside min..max to give dflt");
    setenv("CF_TEST_SIZE", "12q", 1);
    CF_CHECK(e, pami_protocol_env_size("cf", "CF_TEST_SIZE", 7, 0, 1000) == 7,
             "expected a malformed size to give dflt");
    setenv("CF_TEST_SIZE", "", 1);
    CF_CHECK(e, pami_protocol_env_size("cf", "CF_TEST_SIZE", 7, 0, 1000) == 7,
             "expected an empty size to give dflt");
    unsetenv("CF_TEST_SIZE");
    CF_CHECK(e, pami_protocol_env_size("cf", "CF_TEST_SIZE", 7, 0, 1000) == 7,
             "expected an unset size to give dflt");
    static const struct {
        const char *v;
        int         want;
    } bools[] = {{"1", 1}, {"Y", 1}, {"yes", 1}, {"ON", 1}, {"True", 1},
                 {"0", 0}, {"n", 0}, {"NO", 0}, {"off", 0}, {"FALSE", 0},
                 {"maybe", 5}, {"", 5}};
    for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
        setenv("CF_TEST_BOOL", bools[i].v, 1);
        int got = pami_protocol_env_bool("cf", "CF_TEST_BOOL", 5);
        CF_CHECK(e, got == bools[i].want, "expected bool \"%s\" to give %d, "
                 "seen %d", bools[i].v, bools[i].want, got);
    }
    unsetenv("CF_TEST_BOOL");
    /* in_handler: 0 outside and for NULL, non-zero in posted work. */
    inh_t s = {0};
    CF_CHECK(e, pami_protocol_in_handler(e->ctx) == 0 &&
                    pami_protocol_in_handler(NULL) == 0,
             "expected in_handler 0 outside any handler and for NULL");
    pami_work_t w;
    CF_OK(e, pami_context_post(e->ctx, &w, inh_work, &s));
    cf_wait_count(e, &s.ran, 1, "the posted work");
    CF_CHECK(e, s.in_work != 0, "expected in_handler non-zero in posted "
             "work");
    /* The registry: built-ins from 256 up, then PAMI_NOT_FOUND. */
    pami_protocol_info_t info;
    size_t i = 0, builtins = 0;
    pami_result_t rc;
    while ((rc = pami_protocol_query(e->client, i, &info)) == PAMI_SUCCESS) {
        CF_CHECK(e, info.name != NULL && (info.num_dispatch == 0 ||
                                          info.dispatch_base >= 256),
                 "expected protocol %zu named with ids from 256", i);
        builtins += info.builtin != 0;
        pami_protocol_stat_t st[1];
        size_t n = 12345;
        CF_OK(e, pami_protocol_stats(e->ctx, info.name, NULL, 0, &n));
        CF_CHECK(e, n != 12345, "expected *n set with out NULL and max 0");
        CF_RC(e, PAMI_INVAL, pami_protocol_stats(e->ctx, info.name, NULL, 0,
                                                 NULL));
        CF_RC(e, PAMI_INVAL, pami_protocol_stats(NULL, info.name, st, 1,
                                                 &n));
        const pami_protocol_plugin_t *pl;
        CF_RC(e, PAMI_NOT_FOUND, pami_protocol_plugin_query(
                                     e->client, info.name, &pl, NULL));
        i++;
    }
    CF_CHECK(e, rc == PAMI_NOT_FOUND && builtins == i && i > 0,
             "expected only built-in protocols, then PAMI_NOT_FOUND; seen %zu "
             "of %zu built in, %s", builtins, i, cf_rc_name(rc));
    size_t n;
    pami_protocol_stat_t st[1];
    CF_RC(e, PAMI_NOT_FOUND, pami_protocol_stats(e->ctx, "no-such-protocol",
                                                 st, 1, &n));
    CF_RC(e, PAMI_INVAL, pami_protocol_stats(e->ctx, NULL, st, 1, &n));
    const pami_protocol_plugin_t *pl;
    CF_RC(e, PAMI_INVAL, pami_protocol_plugin_query(NULL, "svd", &pl, NULL));
    CF_RC(e, PAMI_INVAL, pami_protocol_plugin_query(e->client, NULL, &pl,
                                                    NULL));
    CF_RC(e, PAMI_INVAL, pami_protocol_plugin_query(e->client, "svd", NULL,
                                                    NULL));
    static const pami_protocol_ops_t stranger = {PAMI_PROTOCOL_OPS_HEADER,
                                                 .name = "cf-stranger"};
    CF_CHECK(e, pami_protocol_state(e->ctx, &stranger) == NULL,
             "expected NULL state for a table never registered");
}

/* ---- barrier_calls ---- */

typedef struct {
    size_t        n;
    pami_result_t rc;
    pami_result_t in_work_rc;
    size_t        work_ran;
} bar_t;

static void bar_done(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    bar_t *b = k;
    b->rc = rc;
    b->n++;
}

static pami_result_t bar_work(pami_context_t c, void *k)
{
    bar_t *b = k;
    b->in_work_rc = pami_barrier_wait(c, PAMI_BARRIER_PACKETS, NULL, 0);
    b->work_ran++;
    return PAMI_SUCCESS;
}

static void barrier_calls(cf_env_t *e)
{
    bar_t b = {0};
    pami_task_t me = e->task;
    CF_RC(e, PAMI_INVAL, pami_barrier_packets(NULL, NULL, 0, bar_done, &b));
    CF_RC(e, PAMI_INVAL, pami_barrier_packets(e->ctx, NULL, 1, bar_done, &b));
    CF_RC(e, PAMI_INVAL, pami_barrier_shm(NULL, bar_done, &b));
    CF_RC(e, PAMI_INVAL, pami_barrier_hier(NULL, bar_done, &b));
    CF_RC(e, PAMI_INVAL, pami_barrier_wait(NULL, PAMI_BARRIER_PACKETS, NULL,
                                           0));
    CF_RC(e, PAMI_INVAL, pami_barrier_wait(e->ctx, (pami_barrier_algo_t)3,
                                           NULL, 0));
    CF_RC(e, PAMI_INVAL, pami_barrier_wait(e->ctx, PAMI_BARRIER_HIER, &me,
                                           1));
    /* From posted work: PAMI_IN_HANDLER, nothing started. */
    pami_work_t w;
    CF_OK(e, pami_context_post(e->ctx, &w, bar_work, &b));
    cf_wait_count(e, &b.work_ran, 1, "the posted work");
    CF_CHECK(e, b.in_work_rc == PAMI_IN_HANDLER, "expected PAMI_IN_HANDLER "
             "from posted work, seen %s", cf_rc_name(b.in_work_rc));
    /* done_fn may be NULL; one that is not runs from progress only. A
     * barrier of this task alone completes at once. */
    CF_OK(e, pami_barrier_packets(e->ctx, &me, 1, NULL, NULL));
    CF_OK(e, pami_barrier_packets(e->ctx, &me, 1, bar_done, &b));
    CF_OK(e, pami_barrier_packets(e->ctx, NULL, 0, bar_done, &b));
    CF_OK(e, pami_barrier_shm(e->ctx, bar_done, &b));
    CF_OK(e, pami_barrier_hier(e->ctx, bar_done, &b));
    CF_CHECK(e, b.n == 0, "expected no done_fn inside the calls");
    cf_wait_count(e, &b.n, 4, "the barriers' done_fn");
    CF_CHECK(e, b.rc == PAMI_SUCCESS, "expected PAMI_SUCCESS, seen %s",
             cf_rc_name(b.rc));
    CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_PACKETS, NULL, 0));
}

/* ---- svd_calls ---- */

typedef struct {
    size_t                n;
    pami_result_t         rc;
    int                   entry_null;
    uint64_t              version;
    pami_result_t         wait_rc;
    size_t                work_ran;
    const pami_svd_update_t *up;
} svd_t;

static void svd_done(pami_context_t c, void *k, pami_result_t rc,
                     const pami_svd_entry_t *entry)
{
    (void)c;
    svd_t *s = k;
    s->rc = rc;
    s->entry_null = entry == NULL;
    s->version = entry ? entry->version : 0;
    s->n++;
}

static void svd_upd_done(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c;
    svd_t *s = k;
    s->rc = rc;
    s->n++;
}

static pami_result_t svd_work(pami_context_t c, void *k)
{
    svd_t *s = k;
    s->wait_rc = pami_svd_update_wait(c, s->up);
    s->work_ran++;
    return PAMI_SUCCESS;
}

static void svd_calls(cf_env_t *e)
{
    const pami_svd_key_t key = 0xcf00 + e->task;
    static uint8_t data[40];
    pami_svd_register_t r = {.key = key, .addr = data, .size = sizeof(data)};
    CF_RC(e, PAMI_INVAL, pami_svd_register(NULL, &r));
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, NULL));
    r.field_mask = 1ull << 40;
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &r));
    r.field_mask = PAMI_SVD_REGISTER_MR;
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &r));
    r.field_mask = PAMI_SVD_REGISTER_DATA;
    r.data_size = 8;
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &r));
    r.field_mask = PAMI_SVD_REGISTER_HEADER;
    r.header = (pami_svd_header_t)9;
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &r));
    r.field_mask = PAMI_SVD_REGISTER_SCHEDULE;
    r.schedule = (pami_svd_schedule_t)9;
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &r));
    pami_svd_info_t info;
    CF_RC(e, PAMI_NOT_FOUND, pami_svd_query(e->ctx, key, &info, NULL, 0));
    r.field_mask = PAMI_SVD_REGISTER_DATA;
    r.data = data;
    r.data_size = sizeof(data);
    CF_OK(e, pami_svd_register(e->ctx, &r));
    CF_RC(e, PAMI_INVAL, pami_svd_register(e->ctx, &r));
    CF_RC(e, PAMI_INVAL, pami_svd_query(e->ctx, key, NULL, NULL, 0));
    CF_RC(e, PAMI_INVAL, pami_svd_query(NULL, key, &info, NULL, 0));
    CF_OK(e, pami_svd_query(e->ctx, key, &info, NULL, 0));
    CF_CHECK(e, info.version == 1 && info.num_users == 0 &&
                    info.record_size == 296 + sizeof(data),
             "expected version 1, no users, a record of 296 + %zu bytes; "
             "seen %llu, %zu, %zu", sizeof(data),
             (unsigned long long)info.version, info.num_users,
             info.record_size);
    /* Lookups: done_fn required, owner in the job; an own entry's done_fn
     * runs from progress. */
    svd_t s = {0};
    pami_svd_lookup_t l = {.owner = e->task, .key = key};
    CF_RC(e, PAMI_INVAL, pami_svd_lookup(e->ctx, &l));
    l.done_fn = svd_done;
    l.cookie = &s;
    l.owner = (pami_task_t)e->size;
    CF_RC(e, PAMI_INVAL, pami_svd_lookup(e->ctx, &l));
    l.owner = e->task;
    l.field_mask = 1ull << 30;
    CF_RC(e, PAMI_INVAL, pami_svd_lookup(e->ctx, &l));
    l.field_mask = 0;
    CF_RC(e, PAMI_INVAL, pami_svd_lookup_wait(e->ctx, &l, NULL));
    CF_OK(e, pami_svd_lookup(e->ctx, &l));
    CF_CHECK(e, s.n == 0, "expected no done_fn inside pami_svd_lookup, "
             "also for an own entry");
    cf_wait_count(e, &s.n, 1, "the own lookup's done_fn");
    CF_CHECK(e, s.rc == PAMI_SUCCESS && !s.entry_null && s.version == 1,
             "expected the own entry at version 1, seen %s",
             cf_rc_name(s.rc));
    /* Not using it: release is PAMI_NOT_FOUND (an own lookup records no
     * user). */
    CF_RC(e, PAMI_NOT_FOUND, pami_svd_release(e->ctx, e->task, key));
    CF_RC(e, PAMI_INVAL, pami_svd_release(NULL, e->task, key));
    CF_RC(e, PAMI_INVAL, pami_svd_set_change_fn(NULL, NULL, NULL));
    CF_OK(e, pami_svd_set_change_fn(e->ctx, NULL, NULL));
    /* Updates: of a key not owned, with bad fields, then with no users:
     * done_fn from the next progress with PAMI_SUCCESS. */
    pami_svd_update_t u = {.key = key + 1000, .done_fn = svd_upd_done,
                           .cookie = &s};
    CF_RC(e, PAMI_NOT_FOUND, pami_svd_update(e->ctx, &u));
    u.key = key;
    CF_RC(e, PAMI_INVAL, pami_svd_update(NULL, &u));
    CF_RC(e, PAMI_INVAL, pami_svd_update(e->ctx, NULL));
    u.field_mask = PAMI_SVD_UPDATE_DATA;
    u.data_size = 4;
    CF_RC(e, PAMI_INVAL, pami_svd_update(e->ctx, &u));
    u.field_mask = 1ull << 33;
    CF_RC(e, PAMI_INVAL, pami_svd_update(e->ctx, &u));
    u.field_mask = PAMI_SVD_UPDATE_SCHEDULE;
    u.schedule = (pami_svd_schedule_t)7;
    CF_RC(e, PAMI_INVAL, pami_svd_update(e->ctx, &u));
    u.field_mask = 0;
    s.n = 0;
    CF_OK(e, pami_svd_update(e->ctx, &u));
    CF_CHECK(e, s.n == 0, "expected no done_fn inside pami_svd_update");
    cf_wait_count(e, &s.n, 1, "the update's done_fn");
    CF_CHECK(e, s.rc == PAMI_SUCCESS, "expected PAMI_SUCCESS with no users, "
             "seen %s", cf_rc_name(s.rc));
    CF_OK(e, pami_svd_query(e->ctx, key, &info, NULL, 0));
    CF_CHECK(e, info.version == 2, "expected version 2 after one update, "
             "seen %llu", (unsigned long long)info.version);
    /* update_wait from posted work: PAMI_IN_HANDLER, nothing done. */
    s.up = &u;
    pami_work_t w;
    CF_OK(e, pami_context_post(e->ctx, &w, svd_work, &s));
    cf_wait_count(e, &s.work_ran, 1, "the posted work");
    CF_CHECK(e, s.wait_rc == PAMI_IN_HANDLER, "expected PAMI_IN_HANDLER from "
             "posted work, seen %s", cf_rc_name(s.wait_rc));
    CF_OK(e, pami_svd_query(e->ctx, key, &info, NULL, 0));
    CF_CHECK(e, info.version == 2, "expected nothing done by the refused "
             "update_wait, seen version %llu",
             (unsigned long long)info.version);
    /* update_wait calls done_fn itself, just before it returns. */
    s.n = 0;
    CF_OK(e, pami_svd_update_wait(e->ctx, &u));
    CF_CHECK(e, s.n == 1, "expected update_wait to have run done_fn, seen "
             "%zu", s.n);
    /* "progressing at least once (`0` polls as pami_context_wait(context,
     * 0) does: an update with no users then returns PAMI_SUCCESS)". */
    u.field_mask = PAMI_SVD_UPDATE_TIMEOUT;
    u.timeout_ms = 0;
    s.n = 0;
    CF_OK(e, pami_svd_update_wait(e->ctx, &u));
    CF_CHECK(e, s.n == 1 && s.rc == PAMI_SUCCESS, "expected update_wait "
             "with timeout 0 and no users to succeed and run done_fn once, "
             "seen %zu runs", s.n);
    CF_OK(e, pami_svd_query(e->ctx, key, &info, NULL, 0));
    CF_CHECK(e, info.version == 4, "expected version 4 after four updates, "
             "seen %llu", (unsigned long long)info.version);
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- env_shm_barrier_max: the longest shared-memory barrier waits ---- */

static void env_shm_barrier_max(cf_env_t *e)
{
    /* config.md: PAMI_SHM_BARRIER_TIMEOUT's range 0..18446744073709
     * (ms); at its top the set-up's deadline once wrapped into the past,
     * so tasks that had to wait for the leader gave up at once
     * (PAMI_TIMEOUT). Three barriers of each kind on the register. */
    for (int i = 0; i < 3; i++) {
        CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_SHM, NULL, 0));
        CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_HIER, NULL, 0));
    }
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- sdk_log: pami_protocol_log's lines, bad arguments included ---- */

typedef void (*log_call_fn)(void);

/* Runs call with stderr sent to a file; what it wrote in out. */
static void stderr_of(log_call_fn call, char *out, size_t len)
{
    char path[] = "/tmp/pami-cf-log-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    out[0] = '\0';
    if (fd < 0 || saved < 0)
        return;
    fflush(stderr);
    dup2(fd, 2);
    call();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

/* Through a volatile, so the compiler cannot see the bad values. */
static volatile int        log_level_bad = -1;
static const char *volatile log_null;

static void log_warn(void)
{
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "cf", "w %d", 1);
}
static void log_debug(void)
{
    pami_protocol_log(PAMI_PROTOCOL_LOG_DEBUG, "cf", "d");
}
static void log_below(void)
{
    pami_protocol_log((pami_protocol_log_level_t)log_level_bad, "cf", "b");
}
static void log_above(void)
{
    pami_protocol_log((pami_protocol_log_level_t)(log_level_bad + 100),
                      "cf", "a");
}
static void log_no_subsys(void)
{
    pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, log_null, "s");
}
static void log_no_fmt(void)
{
    pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, "cf", log_null);
}

static void sdk_log(cf_env_t *e)
{
    static const struct {
        log_call_fn call;
        const char *want; /* after "[task] "; "" for no line */
    } calls[] = {
        {log_warn, "pami warn cf: w 1\n"},
        {log_debug, ""},
        {log_below, "pami error cf: b\n"},
        {log_above, "pami error cf: a\n"},
        {log_no_subsys, "pami error protocol: s\n"},
        {log_no_fmt, "pami warn cf: pami_protocol_log with a NULL format\n"},
    };
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        char got[512], want[256];
        stderr_of(calls[i].call, got, sizeof(got));
        if (calls[i].want[0] != '\0')
            snprintf(want, sizeof(want), "[%u] %s", e->task, calls[i].want);
        else
            want[0] = '\0';
        CF_CHECK(e, strcmp(got, want) == 0, "expected call %zu to write "
                 "\"%s\", seen \"%s\"", i, want, got);
    }
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- registry_limits: 32 protocols, 256 ids ---- */

static pami_result_t lim_init(const pami_protocol_env_t *env, void **state)
{
    (void)env;
    *state = NULL;
    return PAMI_SUCCESS;
}

static void lim_fini(pami_context_t c, void *state)
{
    (void)c; (void)state;
}

#define LIM_MAX 40

static void registry_limits(cf_env_t *e)
{
    static pami_protocol_ops_t t[LIM_MAX];
    static char names[LIM_MAX][24];
    size_t used = 0, before = 0;
    pami_protocol_info_t info;
    while (pami_protocol_query(e->client, before, &info) == PAMI_SUCCESS) {
        used += info.num_dispatch;
        before++;
    }
    CF_CHECK(e, before < 32 && used <= 256, "expected room for protocols, "
             "seen %zu using %zu ids", before, used);
    /* "at most 64 per protocol, 256 in all": blocks of 64 until the ids
     * run out (PAMI_ENOMEM, nothing registered). */
    size_t k = 0, big = 0;
    pami_result_t rc = PAMI_SUCCESS;
    for (; k < LIM_MAX && rc == PAMI_SUCCESS; k++) {
        snprintf(names[k], sizeof(names[k]), "cf-limit-%zu", k);
        t[k] = (pami_protocol_ops_t){PAMI_PROTOCOL_OPS_HEADER,
                                     .name = names[k], .num_dispatch = 64,
                                     .init = lim_init, .fini = lim_fini};
        rc = pami_protocol_register(e->client, &t[k], NULL);
        big += rc == PAMI_SUCCESS;
    }
    CF_CHECK(e, rc == PAMI_ENOMEM, "expected PAMI_ENOMEM once fewer than 64 "
             "ids are left, seen %s", cf_rc_name(rc));
    CF_CHECK(e, big == (256 - used) / 64, "expected %zu blocks of 64 in the "
             "%zu free ids, seen %zu", (256 - used) / 64, 256 - used, big);
    /* The refused table is not registered: its name is free. */
    t[k - 1].num_dispatch = 0;
    CF_OK(e, pami_protocol_register(e->client, &t[k - 1], NULL));
    /* 65 ids are refused as such, a name twice too. */
    static pami_protocol_ops_t wide = {PAMI_PROTOCOL_OPS_HEADER,
                                       .name = "cf-limit-wide",
                                       .num_dispatch = 65,
                                       .init = lim_init, .fini = lim_fini};
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &wide, NULL));
    CF_RC(e, PAMI_INVAL, pami_protocol_register(e->client, &t[0], NULL));
    /* Tables without ids until 32 protocols. */
    size_t total = before + big + 1;
    rc = PAMI_SUCCESS;
    for (; k < LIM_MAX && rc == PAMI_SUCCESS; k++) {
        snprintf(names[k], sizeof(names[k]), "cf-limit-%zu", k);
        t[k] = (pami_protocol_ops_t){PAMI_PROTOCOL_OPS_HEADER,
                                     .name = names[k], .num_dispatch = 0,
                                     .init = lim_init, .fini = lim_fini};
        rc = pami_protocol_register(e->client, &t[k], NULL);
        total += rc == PAMI_SUCCESS;
    }
    CF_CHECK(e, rc == PAMI_ENOMEM && total == 32, "expected PAMI_ENOMEM with "
             "32 protocols registered, seen %s with %zu", cf_rc_name(rc),
             total);
    /* In registration order after the built-ins, blocks disjoint. */
    size_t i = 0, last_end = 0;
    while (pami_protocol_query(e->client, i, &info) == PAMI_SUCCESS) {
        if (info.num_dispatch > 0) {
            CF_CHECK(e, info.dispatch_base >= 256 &&
                            info.dispatch_base >= last_end &&
                            info.dispatch_base + info.num_dispatch <= 512,
                     "expected disjoint blocks in 256..511, seen %s at %zu",
                     info.name, info.dispatch_base);
            last_end = info.dispatch_base + info.num_dispatch;
        }
        if (i >= before && i < before + big)
            CF_CHECK(e, strcmp(info.name, names[i - before]) == 0,
                     "expected %s at index %zu, seen %s", names[i - before],
                     i, info.name);
        i++;
    }
    CF_CHECK(e, i == 32, "expected 32 protocols listed, seen %zu", i);
    CF_OK(e, pami_context_createv(e->client, NULL, 1, e->contexts));
    e->ncontexts = 1;
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- svd_in_flight: a lookup the owner has not answered yet ---- */

static void svd_in_flight(cf_env_t *e)
{
    const pami_svd_key_t k1 = 0xcf10, k2 = 0xcf11;
    static uint8_t data[16];
    static svd_t s;
    s = (svd_t){0};
    if (e->task == 1) {
        pami_svd_register_t r = {.key = k1, .addr = data, .size = 16};
        CF_OK(e, pami_svd_register(e->ctx, &r));
        r.key = k2;
        CF_OK(e, pami_svd_register(e->ctx, &r));
    }
    pami_svd_entry_t ent;
    if (e->task == 0) {
        /* Task 1 waits in the runner's exchange below: it cannot answer
         * before task 0 joins it. */
        pami_svd_lookup_t l = {.owner = 1, .key = k1, .done_fn = svd_done,
                               .cookie = &s};
        CF_OK(e, pami_svd_lookup(e->ctx, &l));
        CF_RC(e, PAMI_EAGAIN, pami_svd_release(e->ctx, 1, k1));
        pami_svd_lookup_t lw = {.field_mask = PAMI_SVD_LOOKUP_TIMEOUT,
                                .owner = 1, .key = k2, .timeout_ms = 50};
        CF_RC(e, PAMI_TIMEOUT, pami_svd_lookup_wait(e->ctx, &lw, &ent));
    }
    int token = 0, tokens[1024];
    CF_CHECK(e, e->size <= 1024 &&
                    cf_allgather(&token, tokens, sizeof(token)) == 0,
             "expected the runner's exchange to work");
    if (e->task == 0) {
        cf_wait_count(e, &s.n, 1, "the lookup's done_fn");
        CF_CHECK(e, s.rc == PAMI_SUCCESS && s.version == 1,
                 "expected the entry at version 1, seen %s",
                 cf_rc_name(s.rc));
        CF_OK(e, pami_svd_release(e->ctx, 1, k1));
        CF_RC(e, PAMI_NOT_FOUND, pami_svd_release(e->ctx, 1, k1));
    }
    if (e->task == 1) {
        /* "the fetch goes on and this task becomes a user" */
        pami_svd_info_t info = {0};
        pami_task_t users[4] = {99, 99, 99, 99};
        while (cf_now() < e->deadline) {
            CF_OK(e, pami_svd_query(e->ctx, k2, &info, users, 4));
            if (info.num_users == 1)
                break;
            pami_context_wait(e->ctx, 10);
        }
        CF_CHECK(e, info.num_users == 1 && users[0] == 0, "expected task 0 "
                 "a user of the key its timed-out lookup asked for, seen "
                 "%zu users", info.num_users);
    }
    CF_OK(e, pami_dispatch_fence(e->client));
}

/* ---- outputs_on_failure: "Output arguments are written only on
 * success" ---- */

static void outputs_on_failure(cf_env_t *e)
{
    pami_endpoint_t ep = 12345;
    CF_RC(e, PAMI_INVAL, pami_endpoint_create(e->client, (pami_task_t)e->size,
                                              0, &ep));
    CF_CHECK(e, ep == 12345, "expected *endpoint unwritten on failure");
    pami_task_t t = 77;
    size_t off = 77;
    CF_RC(e, PAMI_INVAL, pami_endpoint_query(PAMI_ENDPOINT_NULL, &t, &off));
    CF_CHECK(e, t == 77 && off == 77, "expected endpoint_query's outputs "
             "unwritten on failure");
    pami_config_var_t v, v0;
    memset(&v, 0x5a, sizeof(v));
    v0 = v;
    CF_RC(e, PAMI_NOT_FOUND, pami_config_var(100000, &v));
    CF_CHECK(e, memcmp(&v, &v0, sizeof(v)) == 0, "expected *var unwritten "
             "past the last variable");
    pami_memregion_t mr, mr0;
    memset(&mr, 0x5a, sizeof(mr));
    mr0 = mr;
    void *addr = &mr;
    CF_RC(e, PAMI_INVAL, pami_memregion_create(e->ctx, NULL, 16, &mr));
    CF_RC(e, PAMI_ENOMEM, pami_memregion_alloc(e->ctx, 1ull << 40, &addr,
                                               &mr));
    CF_CHECK(e, memcmp(&mr, &mr0, sizeof(mr)) == 0 && addr == (void *)&mr,
             "expected *mr and *addr unwritten by failed region calls");
    void *base = &mr;
    size_t bytes = 99;
    pami_endpoint_t owner = 99;
    CF_RC(e, PAMI_INVAL, pami_memregion_query(&mr, &base, &bytes, &owner));
    CF_CHECK(e, base == (void *)&mr && bytes == 99 && owner == 99,
             "expected memregion_query's outputs unwritten on failure");
    pami_algorithm_t alg = 4242;
    CF_RC(e, PAMI_NOT_FOUND, pami_algorithm_by_name("no_such", &alg));
    CF_CHECK(e, alg == 4242, "expected *algorithm unwritten on failure");
    pami_protocol_info_t info;
    memset(&info, 0x5a, sizeof(info));
    pami_protocol_info_t info0 = info;
    CF_RC(e, PAMI_NOT_FOUND, pami_protocol_query(e->client, 1000, &info));
    CF_CHECK(e, memcmp(&info, &info0, sizeof(info)) == 0,
             "expected *info unwritten past the last protocol");
    size_t n = 31;
    pami_protocol_stat_t st[1];
    CF_RC(e, PAMI_NOT_FOUND, pami_protocol_stats(e->ctx, "no-such", st, 1,
                                                 &n));
    CF_CHECK(e, n == 31, "expected *n unwritten for an unknown protocol");
    pami_svd_entry_t ent, ent0;
    memset(&ent, 0x5a, sizeof(ent));
    ent0 = ent;
    pami_svd_lookup_t l = {.owner = e->task, .key = 0xdeadcf};
    CF_RC(e, PAMI_NOT_FOUND, pami_svd_lookup_wait(e->ctx, &l, &ent));
    CF_CHECK(e, memcmp(&ent, &ent0, sizeof(ent)) == 0,
             "expected *entry unwritten for a key nobody has");
}

const cf_case_t cf_sdk_cases[] = {
    {"protocols", "sdk_helpers", 1, 0, 0, sdk_helpers, NULL},
    {"protocols", "sdk_log", 1, 0, 0, sdk_log, "PAMI_LOG_LEVEL=warn"},
    {"protocols", "env_shm_barrier_max", 1, 0, 0, env_shm_barrier_max,
     "PAMI_SHM_BARRIER_TIMEOUT=18446744073709"},
    {"protocols", "barrier_calls", 1, 0, 0, barrier_calls, NULL},
    {"protocols", "svd_calls", 1, 0, 0, svd_calls, NULL},
    {"protocols", "registry_limits", 1, 0, CF_OWN_CONTEXTS, registry_limits,
     NULL},
    {"protocols", "svd_in_flight", 2, 1024, 0, svd_in_flight, NULL},
};
const size_t cf_num_sdk_cases = sizeof(cf_sdk_cases) / sizeof(cf_sdk_cases[0]);

/* The conventions of every call (suite core). */
const cf_case_t cf_sdk_core_cases[] = {
    {"core", "outputs_on_failure", 1, 0, 0, outputs_on_failure, NULL},
};
const size_t cf_num_sdk_core_cases =
    sizeof(cf_sdk_core_cases) / sizeof(cf_sdk_core_cases[0]);

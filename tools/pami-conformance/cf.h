/*
 * pami-conformance: what a case sees. A case runs in a process of its own
 * on every rank (a fresh client each time, joined through the runner's
 * out-of-band exchange), so a case that hangs or crashes takes nothing
 * else with it. Only pami's public headers are used here.
 */
#ifndef CF_H
#define CF_H

#include <pami.h>

#include <stddef.h>
#include <stdint.h>

/* What a case gets: the client and (unless CF_OWN_CONTEXTS) one context,
 * this task, the job size, the run's seed and the case's deadline. */
typedef struct cf_env {
    pami_client_t  client;
    pami_context_t ctx;
    pami_task_t    task;
    size_t         size;
    uint64_t       seed;
    double         deadline;  /* cf_now() after which waits give up */
    size_t         ncontexts; /* contexts the case made itself */
    pami_context_t contexts[4];
    const char    *plugin;    /* --protocol path, generic suite only */
    int            failed;
    int            no_destroy; /* the case ended its job itself */
    char           msg[768];
} cf_env_t;

enum {
    CF_OWN_CONTEXTS = 1u << 0, /* the case calls createv itself */
    CF_LOAD_PLUGIN  = 1u << 1, /* the client loads the plug-in
                                  (PAMI_PROTOCOLS) */
};

typedef struct cf_case {
    const char *suite;     /* core, rma, coll, protocols */
    const char *name;
    size_t      min_ranks; /* skipped below */
    size_t      max_ranks; /* 0: no limit */
    unsigned    flags;
    void (*run)(cf_env_t *e);
    /* "NAME=VALUE ..." set in the case process before its client is
     * created (configuration cases); NULL: none. */
    const char *env;
} cf_case_t;

/* The first failure's message stays: it says what was expected and what
 * was seen; later ones only count. */
void cf_fail(cf_env_t *e, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define CF_FAIL(e, ...) cf_fail((e), __FILE__, __LINE__, __VA_ARGS__)

/* Fails the case and returns from the case function unless cond holds. */
#define CF_CHECK(e, cond, ...)                                               \
    do {                                                                     \
        if (!(cond)) {                                                       \
            CF_FAIL(e, __VA_ARGS__);                                         \
            return;                                                          \
        }                                                                    \
    } while (0)

/* A call's result against the documented one. */
#define CF_RC(e, want, call)                                                 \
    do {                                                                     \
        pami_result_t cf_rc_ = (call);                                       \
        if (cf_rc_ != (want)) {                                              \
            CF_FAIL(e, "expected %s, seen %s from %s", cf_rc_name(want),     \
                    cf_rc_name(cf_rc_), #call);                              \
            return;                                                          \
        }                                                                    \
    } while (0)

#define CF_OK(e, call) CF_RC(e, PAMI_SUCCESS, call)

const char *cf_rc_name(pami_result_t rc);
double      cf_now(void);

/* Progress until *flag becomes non-zero (or *count reaches want); 0 on
 * success, -1 (with a failure naming what) at the case's deadline. */
int cf_wait_flag(cf_env_t *e, volatile int *flag, const char *what);
int cf_wait_count(cf_env_t *e, volatile size_t *count, size_t want,
                  const char *what);

/* pami_send_immediate, retried while it says PAMI_EAGAIN (advancing the
 * context) until the case's deadline; the call's result. cf_send_raw is
 * the same through pami_test_send_raw, for packets on protocol and core
 * ids. */
pami_result_t cf_send_immediate(cf_env_t *e, const pami_send_immediate_t *m);
pami_result_t cf_send_raw(cf_env_t *e, const pami_send_immediate_t *m);

/* Endpoint of task's context 0; fails the case on error (returns NULL
 * value PAMI_ENDPOINT_NULL). */
pami_endpoint_t cf_ep(cf_env_t *e, pami_task_t task);

/* A deterministic byte pattern of (seed, a, b, i). */
static inline uint8_t cf_byte(uint64_t seed, uint64_t a, uint64_t b,
                              size_t i)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ a * 0xbf58476d1ce4e5b9ull ^
                 b * 0x94d049bb133111ebull ^ (uint64_t)i * 0x2545f4914f6cdd1dull;
    x ^= x >> 31;
    return (uint8_t)(x ^ (x >> 17));
}
void   cf_fill(uint8_t *buf, size_t n, uint64_t seed, uint64_t a, uint64_t b);
/* Index of the first byte that differs from the pattern, or n. */
size_t cf_verify(const uint8_t *buf, size_t n, uint64_t seed, uint64_t a,
                 uint64_t b);

/* Completions counted by a callback (local_fn, remote_fn, done_fn with
 * cookie = the counter): how many ran, how many failed, the last failure. */
typedef struct {
    size_t        n, bad;
    pami_result_t rc;
} cf_count_t;
void cf_count_fn(pami_context_t c, void *cookie, pami_result_t rc);

/* Sends this task's result now (a case whose task then exits). */
void cf_report_now(cf_env_t *e);

/* Runner-side exchange every task joins (the out-of-band allgather of the
 * case's job): len bytes in, size * len out. 0 on success. */
int cf_allgather(const void *send, void *recv, size_t len);

/* The suites. */
extern const cf_case_t cf_core_cases[], cf_calls_cases[], cf_contexts_cases[],
    cf_config_cases[], cf_threads_cases[], cf_sdk_core_cases[], cf_rma_cases[],
    cf_config_rma_cases[], cf_threads_coll_cases[],
    cf_regions_cases[], cf_coll_cases[], cf_geometry_cases[],
    cf_protocols_cases[], cf_sdk_cases[], cf_wire_cases[], cf_plugin_cases[],
    cf_selftest_cases[], cf_config_bad_cases[], cf_dispatch_cases[],
    cf_coll_v_cases[], cf_coll_mismatch_cases[], cf_lock_rules_cases[],
    cf_geometry_lists_cases[], cf_coll_local_cases[],
    cf_handler_rma_cases[], cf_backpressure_cases[],
    cf_sized_more_cases[], cf_map_checks_cases[], cf_register_rules_cases[],
    cf_env_when_cases[];
extern const size_t cf_num_core_cases, cf_num_calls_cases,
    cf_num_contexts_cases, cf_num_config_cases, cf_num_threads_cases,
    cf_num_sdk_core_cases,
    cf_num_rma_cases, cf_num_config_rma_cases, cf_num_threads_coll_cases,
    cf_num_regions_cases, cf_num_coll_cases, cf_num_geometry_cases,
    cf_num_protocols_cases, cf_num_sdk_cases, cf_num_wire_cases,
    cf_num_plugin_cases, cf_num_selftest_cases, cf_num_config_bad_cases,
    cf_num_dispatch_cases, cf_num_coll_v_cases,
    cf_num_coll_mismatch_cases, cf_num_lock_rules_cases,
    cf_num_geometry_lists_cases, cf_num_coll_local_cases,
    cf_num_handler_rma_cases, cf_num_backpressure_cases,
    cf_num_sized_more_cases, cf_num_map_checks_cases,
    cf_num_register_rules_cases, cf_num_env_when_cases;

#endif /* CF_H */

/*
 * Helpers of the barrier-packets tests: a barrier that waits for its
 * done_fn with a flag and a pami_context_wait loop (checking it runs once,
 * never inside the call), the protocol's counters by name, and the shared
 * counters on every task's region used to prove nobody left early.
 */
#ifndef BP_UTIL_H
#define BP_UTIL_H

#include "rma_util.h"

#include <pami_barrier.h>
#include <pami_protocol.h>

typedef struct {
    unsigned      runs;
    pami_result_t rc;
    bool          in_call;
    uint64_t      seq;    /* for order checks */
} bar_t;

static inline void bar_on_done(pami_context_t ctx, void *cookie,
                               pami_result_t rc)
{
    (void)ctx;
    bar_t *b = cookie;
    MP_EXPECT(!b->in_call, "done_fn ran inside pami_barrier_packets");
    MP_EXPECT(b->runs == 0, "done_fn of barrier %llu ran twice",
              (unsigned long long)b->seq);
    b->runs++;
    b->rc = rc;
}

/* Starts a barrier; the call itself must succeed. */
static inline void bar_start(mp_job_t *job, const pami_task_t *tasks,
                             size_t n, bar_t *b)
{
    b->runs    = 0;
    b->rc      = PAMI_ERROR;
    b->in_call = true;
    MP_CHECK(pami_barrier_packets(job->ctx[0], tasks, n, bar_on_done, b));
    b->in_call = false;
}

/* Waits (blocking) until b's done_fn ran; returns its result. */
static inline pami_result_t bar_wait(mp_job_t *job, bar_t *b, double secs)
{
    double deadline = mp_now() + secs;
    unsigned spins = 0;
    while (b->runs == 0) {
        pami_result_t rc = pami_context_wait(job->ctx[0], 100);
        MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT,
                  "pami_context_wait: %s", pami_error_text(rc));
        if ((++spins & 255) == 0 || rc == PAMI_TIMEOUT)
            MP_EXPECT(mp_now() < deadline, "barrier %llu not done after "
                      "%.0f s", (unsigned long long)b->seq, secs);
    }
    return b->rc;
}

static inline void bar_ok(mp_job_t *job, const pami_task_t *tasks, size_t n)
{
    bar_t b = {0};
    bar_start(job, tasks, n, &b);
    pami_result_t rc = bar_wait(job, &b, MP_WAIT_S);
    MP_EXPECT(rc == PAMI_SUCCESS, "barrier over %zu tasks: %s",
              n ? n : job->size, pami_error_text(rc));
}

/* The protocol's counter called name on context i. */
static inline uint64_t bp_stat_ctx(mp_job_t *job, size_t i, const char *name)
{
    pami_protocol_stat_t st[64];
    size_t n = 0;
    MP_CHECK(pami_protocol_stats(job->ctx[i], "barrier_packets", st, 64, &n));
    MP_EXPECT(n <= 64, "%zu counters", n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("barrier_packets has no counter '%s'", name);
}

static inline uint64_t bp_stat(mp_job_t *job, const char *name)
{
    return bp_stat_ctx(job, 0, name);
}

static inline void bp_expect_no_drops(mp_job_t *job)
{
    static const char *const drops[] = {
        "dropped_short", "dropped_long", "dropped_version", "dropped_type",
        "dropped_field", "dropped_size", "dropped_epoch", "dropped_excess",
        "dropped_groups"};
    for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
        MP_EXPECT(bp_stat(job, drops[i]) == 0, "%s is %llu", drops[i],
                  (unsigned long long)bp_stat(job, drops[i]));
}

/* ---- shared counters: BP_COUNTERS words on each task's region ---- */

#define BP_COUNTERS 64

static uint64_t         bp_words[BP_COUNTERS];
static pami_memregion_t bp_mr_mine;
static pami_memregion_t bp_mr[RMA_MAX_TASKS];

static inline void bp_counters_init(mp_job_t *job)
{
    memset(bp_words, 0, sizeof(bp_words));
    MP_CHECK(pami_memregion_create(job->ctx[0], bp_words, sizeof(bp_words),
                                   &bp_mr_mine));
    rma_exchange(job, &bp_mr_mine, bp_words, sizeof(bp_words), bp_mr);
}

static inline void bp_counters_fini(mp_job_t *job)
{
    mp_sync(job);
    MP_CHECK(pami_memregion_destroy(job->ctx[0], &bp_mr_mine));
}

/* Fetch-add of add on word slot of task owner; returns the old value. */
static inline uint64_t bp_fadd(mp_job_t *job, pami_task_t owner,
                               unsigned slot, uint64_t add)
{
    uint64_t old = ~0ull;
    MP_CHECK(rma_rmw(job, owner, &bp_mr[owner], slot * sizeof(uint64_t),
                     PAMI_RMW_FETCH_ADD, 8, add, 0, &old, "counter"));
    return old;
}

#endif

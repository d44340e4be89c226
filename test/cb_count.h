/*
 * How often an operation's callbacks ran, and the result of the last
 * run of each: the counter every test harness uses (the unit tests, the
 * multi-process programs of test/rma, the two-process death tests of
 * test/rma and test/faults). Pass a cb_count_t as the cookie of
 * cb_count_local and cb_count_remote (local_fn, done_fn; remote_fn).
 *
 * in_call is set by a test around the call that starts the operation: a
 * callback must never run inside it (docs/api.md). A harness that fails
 * at once defines CB_COUNT_IN_CALL(c, which) before including this
 * header (which: "local_fn" or "remote_fn"); without it such a run is
 * only counted in in_call_runs, for the test to check.
 */
#ifndef PAMI_TEST_CB_COUNT_H
#define PAMI_TEST_CB_COUNT_H

#include <pami.h>
#include <stdbool.h>

typedef struct {
    unsigned      local, remote;
    pami_result_t local_rc, remote_rc;
    bool          in_call;
    unsigned      in_call_runs;
    const char   *what; /* names the operation in a failure */
} cb_count_t;

#ifndef CB_COUNT_IN_CALL
#define CB_COUNT_IN_CALL(c, which) ((c)->in_call_runs++)
#endif

static inline void cb_count_local(pami_context_t ctx, void *cookie,
                                  pami_result_t rc)
{
    (void)ctx;
    cb_count_t *c = cookie;
    if (c->in_call)
        CB_COUNT_IN_CALL(c, "local_fn");
    c->local++;
    c->local_rc = rc;
}

static inline void cb_count_remote(pami_context_t ctx, void *cookie,
                                   pami_result_t rc)
{
    (void)ctx;
    cb_count_t *c = cookie;
    if (c->in_call)
        CB_COUNT_IN_CALL(c, "remote_fn");
    c->remote++;
    c->remote_rc = rc;
}

#endif

/*
 * One RMA operation's callbacks, counted with their results, for the
 * two-process death tests (rma_help_death, rma_claim_death): each waits
 * on these counts while its peer is killed under it.
 */
#ifndef PAMI_TEST_RMA_DEATH_OPS_H
#define PAMI_TEST_RMA_DEATH_OPS_H

#include <pami.h>

typedef struct {
    int           local, remote;
    pami_result_t local_rc, remote_rc;
} op_t;

static inline void on_local(pami_context_t ctx, void *cookie,
                            pami_result_t rc)
{
    (void)ctx;
    op_t *o = cookie;
    o->local++;
    o->local_rc = rc;
}

static inline void on_remote(pami_context_t ctx, void *cookie,
                             pami_result_t rc)
{
    (void)ctx;
    op_t *o = cookie;
    o->remote++;
    o->remote_rc = rc;
}

#endif

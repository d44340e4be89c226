/*
 * pami_barrier_wait: the blocking form of the three built-in barriers.
 * It starts the non-blocking one and sleeps in pami_context_wait until
 * its callback ran, so a task waiting for a late peer gives up its core.
 * It lives with the shm barrier, whose blocking path polls the register
 * inline (shm_barrier_inline.h); the packet barrier it reaches through
 * the public pami_barrier_packets.
 */
#include "pami_barrier.h"
#include "pami_protocol.h"
#include "shm_barrier_inline.h"

typedef struct {
    int           done;
    pami_result_t result;
} wait_state_t;

static void finished(pami_context_t context, void *cookie,
                     pami_result_t result)
{
    (void)context;
    wait_state_t *w = cookie;
    w->result = result;
    w->done   = 1;
}

pami_result_t pami_barrier_wait(pami_context_t context,
                                pami_barrier_algo_t algo,
                                const pami_task_t *tasks, size_t ntasks)
{
    wait_state_t  w = {0, PAMI_SUCCESS};
    /* Refuse from a handler before starting anything: once started, the
     * callback must find w still there. */
    if (context == NULL)
        return PAMI_INVAL;
    if (pami_protocol_in_handler(context)) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "barrier",
                          "pami_barrier_wait called from a handler or "
                          "callback of the same context");
        return PAMI_IN_HANDLER;
    }
    pami_result_t rc;
    switch (algo) {
    case PAMI_BARRIER_PACKETS:
        rc = pami_barrier_packets(context, tasks, ntasks, finished, &w);
        break;
    case PAMI_BARRIER_SHM:
    case PAMI_BARRIER_HIER:
        if (tasks != NULL || ntasks != 0) {
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "barrier",
                              "the %s barrier runs over %s; pass no task "
                              "list", algo == PAMI_BARRIER_SHM ? "shm" : "hier",
                              algo == PAMI_BARRIER_SHM ? "this node" : "the job");
            return PAMI_INVAL;
        }
        /* Blocking, the register may be polled inline for a moment:
         * at 2 tasks that is most of the barrier's cost. */
        rc = shmb_barrier_inline(context, algo == PAMI_BARRIER_HIER,
                                 finished, &w);
        if (rc != PAMI_EAGAIN)
            return rc;
        rc = PAMI_SUCCESS;
        break;
    default:
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, "barrier",
                          "unknown barrier algorithm %d", (int)algo);
        return PAMI_INVAL;
    }
    if (rc != PAMI_SUCCESS)
        return rc;
    /* Started, so the callback will run (with an error if a task dies or
     * the context goes): wait for it. */
    while (!w.done)
        pami_context_wait(context, -1);
    return w.result;
}

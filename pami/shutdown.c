/*
 * Context destroy, for all contexts of a client at once: their phases are
 * interleaved because a context may need another one (of this task or a
 * peer's) to progress before it can finish.
 *
 * 1. drain: wait until every send has left (its local completion);
 * 2. the core barrier (barrier.c), twice;
 * 3. close the endpoints and wait for the closes.
 * Each phase ends at the shutdown deadline at the latest, and sooner when
 * a task died: the barriers fail as soon as it is seen gone (pami_idle
 * looks every PAMI_WATCH_MS), see pami_task_failed for the second one.
 */
#include <string.h>

#include "internal.h"

typedef enum { PHASE_DRAIN, PHASE_CLOSE } phase_t;

static bool phase_done(struct pami_context *ctx, phase_t phase)
{
    return phase == PHASE_DRAIN ? ctx->local_inflight == 0 &&
                                      ctx->sends.n == 0
                                : ctx->closing == 0;
}

/* Progresses all contexts until each finished the phase or the deadline;
 * sleeps on the first context's event fd when nothing moves. */
static pami_result_t run_phase(struct pami_context **ctxs, size_t n,
                               phase_t phase, uint64_t deadline)
{
    for (;;) {
        bool     all = true;
        unsigned events = 0;
        for (size_t i = 0; i < n; i++) {
            if (!phase_done(ctxs[i], phase))
                all = false;
            events += pami_progress_once(ctxs[i]);
        }
        if (all)
            return PAMI_SUCCESS;
        if (pami_time_ns() >= deadline)
            return PAMI_TIMEOUT;
        if (events == 0)
            pami_idle(ctxs, n);
    }
}

pami_result_t pami_drain(struct pami_context **ctxs, size_t n,
                         uint64_t deadline_ns)
{
    return run_phase(ctxs, n, PHASE_DRAIN, deadline_ns);
}

pami_result_t pami_shutdown(pami_context_t *ctxs, size_t n, int timeout_ms)
{
    uint64_t deadline = pami_time_ns() + (uint64_t)timeout_ms * 1000000ull;

    /* From here on peers leaving is expected, not worth a warning. */
    for (size_t i = 0; i < n; i++) {
        ctxs[i]->closing_down   = true;
        ctxs[i]->shutdown_stage = 1;
    }
    if (run_phase(ctxs, n, PHASE_DRAIN, deadline) != PAMI_SUCCESS)
        pami_warn("shutdown", "sends still in flight at the deadline");
    pami_result_t rc = pami_barrier(ctxs, n, deadline);
    /* Everyone is through the first barrier: from now on a task may finish
     * and leave before we do. */
    for (size_t i = 0; i < n; i++)
        ctxs[i]->shutdown_stage = 2;
    /* A second barrier, everyone progressing meanwhile: UCX 1.13 aborts
     * when a worker goes with a connection handshake reply still queued,
     * and such a reply may need its peer's progress to leave. */
    run_phase(ctxs, n, PHASE_DRAIN, deadline);
    if (rc == PAMI_SUCCESS)
        rc = pami_barrier(ctxs, n, deadline);
    /* Through both (or failed): what is left needs no other task. */
    for (size_t i = 0; i < n; i++)
        ctxs[i]->shutdown_stage = 3;
    if (rc != PAMI_SUCCESS)
        pami_warn("shutdown", "shutdown barrier: %s; closing anyway",
                  pami_error_text(rc));
    /* Our last barrier messages must be out before the close cancels
     * them, and what peers sent before theirs should run here too. */
    run_phase(ctxs, n, PHASE_DRAIN, deadline);
    for (size_t i = 0; i < n; i++)
        while (pami_progress_once(ctxs[i]) > 0 && pami_time_ns() < deadline)
            ;
    /* Every task drained its sends before the barriers and we progressed
     * until idle after them, so what peers sent over shared memory or
     * loopback was handled; a message still on a network wire can be lost
     * here, which is why remote_fn is the way to know. The close does not
     * flush: that would wait for peers that already left progress. */
    for (size_t i = 0; i < n; i++)
        pami_peers_close(ctxs[i], true);
    if (run_phase(ctxs, n, PHASE_CLOSE, deadline) != PAMI_SUCCESS)
        pami_warn("shutdown", "endpoints did not close in time");
    return rc;
}

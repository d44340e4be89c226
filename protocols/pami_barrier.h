/*
 * pami barriers: three built-in protocols.
 *
 *  - control packets (docs/protocols/barrier-packets.md): every
 *    participant sends one packet to every other and leaves when its
 *    counter reaches the exit value; works over any set of tasks.
 *  - shared-memory register (docs/protocols/shm-barrier.md): the tasks of
 *    this node meet in a register in shared memory; no messages at all.
 *  - hierarchical: the register on each node, control packets among the
 *    node leaders, then the register again to release the node.
 *
 * All of them run between the contexts of one offset: task t's context k
 * meets the other tasks' contexts k. The non-blocking forms return at
 * once; done_fn runs from advance/wait of context with PAMI_SUCCESS,
 * PAMI_PEER_FAILED (a participant died) or PAMI_SHUTDOWN; a packet that
 * could not be sent or queued ends the barrier with that error (e.g.
 * PAMI_ENOMEM). A barrier may be
 * started again before the previous one on the same tasks completed; they
 * complete in the order they were started.
 */
#ifndef PAMI_BARRIER_H
#define PAMI_BARRIER_H

#include "pami.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tasks: the participants, each once, in any order, the same set on each
 * of them and this task among them; NULL (ntasks 0) means every task.
 * PAMI_INVAL for a set that does not include this task, has duplicates or
 * names a task beyond the job; PAMI_SHUTDOWN once the context is being
 * destroyed. Results of every call: docs/api.md. */
PAMI_EXPORT
pami_result_t pami_barrier_packets(pami_context_t context,
                                   const pami_task_t *tasks, size_t ntasks,
                                   pami_event_fn done_fn, void *cookie);

/* Over the tasks of this node (pami_client_query's local_tasks). */
PAMI_EXPORT
pami_result_t pami_barrier_shm(pami_context_t context, pami_event_fn done_fn,
                               void *cookie);

/* Over every task of the job. */
PAMI_EXPORT
pami_result_t pami_barrier_hier(pami_context_t context, pami_event_fn done_fn,
                                void *cookie);

typedef enum {
    PAMI_BARRIER_PACKETS = 0,
    PAMI_BARRIER_SHM     = 1, /* tasks must be NULL: this node */
    PAMI_BARRIER_HIER    = 2  /* tasks must be NULL: the job */
} pami_barrier_algo_t;

/* Blocking form: starts the barrier and waits through
 * pami_context_wait until it completes; returns its result.
 * PAMI_IN_HANDLER from a handler or callback of context. */
PAMI_EXPORT
pami_result_t pami_barrier_wait(pami_context_t context,
                                pami_barrier_algo_t algo,
                                const pami_task_t *tasks, size_t ntasks);

#ifdef __cplusplus
}
#endif

#endif /* PAMI_BARRIER_H */

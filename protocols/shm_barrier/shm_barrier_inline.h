/*
 * For pami_barrier_wait (PAMI_BARRIER_SHM, and PAMI_BARRIER_HIER on one
 * node): the blocking form's fast path. When no barrier of the context
 * is pending, the register is set up and the node has no more tasks than
 * cores, it counts the task in and polls the register inline for up to
 * 2 us, without progressing the context: PAMI_SUCCESS when the barrier
 * completed there (done_fn is not called). Otherwise the barrier goes on
 * exactly as pami_barrier_shm/_hier(context, done_fn, cookie) and
 * PAMI_EAGAIN says done_fn will run from advance/wait; other results are
 * errors (done_fn not called). Not from a handler of context.
 */
#ifndef SHM_BARRIER_INLINE_H
#define SHM_BARRIER_INLINE_H

#include <stdbool.h>

#include "pami.h"

pami_result_t shmb_barrier_inline(pami_context_t context, bool hier,
                                  pami_event_fn done_fn, void *cookie);

#endif

/* shmem_global_exit: every PE ends with the status one PE gives. The PE
 * sends a message to every other PE, whose handler ends that process
 * with the status, and then ends itself. A PE receives it when it next
 * drives pami (any library call that waits or communicates); under
 * pamirun and mpirun a non-zero status also ends the job through the
 * launcher, whatever the other PEs do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

static void on_global_exit(pami_context_t context, void *cookie,
                           const void *header, size_t header_size,
                           const void *data, size_t data_size,
                           pami_endpoint_t origin, pami_recv_t *recv)
{
    int32_t status;
    pami_task_t task = 0;

    (void)context;
    (void)cookie;
    (void)data;
    (void)data_size;
    (void)recv;
    if (header_size != sizeof(status)) {
        shmemi_warn("a global-exit message of %zu bytes: ignored",
                    header_size);
        return;
    }
    memcpy(&status, header, sizeof(status));
    pami_endpoint_query(origin, &task, NULL);
    shmemi_debug("PE %u called shmem_global_exit(%d)", (unsigned)task,
                 (int)status);
    fflush(stdout);
    fflush(stderr);
    shmemi.finalized = 1;
    _Exit(status);
}

int shmemi_exit_init(void)
{
    pami_result_t rc = pami_dispatch_set(shmemi.context,
                                         SHMEMI_DISPATCH_GLOBAL_EXIT,
                                         on_global_exit, NULL, NULL);

    if (rc != PAMI_SUCCESS) {
        shmemi_warn("pami_dispatch_set: %s", pami_error_text(rc));
        return -1;
    }
    /* Safe job-wide before any PE can call shmem_global_exit. */
    rc = pami_dispatch_fence(shmemi.client);
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("pami_dispatch_fence: %s", pami_error_text(rc));
        return -1;
    }
    return 0;
}

void shmem_global_exit(int status)
{
    int32_t s = status;

    fflush(stdout);
    fflush(stderr);
    if (shmemi.initialized && !shmemi.finalized) {
        for (int pe = 0; pe < shmemi.n_pes; pe++) {
            pami_send_immediate_t m;
            pami_result_t rc;

            if (pe == shmemi.my_pe)
                continue;
            memset(&m, 0, sizeof(m));
            m.dest = shmemi.endpoints[pe];
            m.dispatch = SHMEMI_DISPATCH_GLOBAL_EXIT;
            m.header = &s;
            m.header_len = sizeof(s);
            for (;;) {
                shmemi_lock();
                rc = pami_send_immediate(shmemi.context, &m);
                shmemi_unlock();
                if (rc != PAMI_EAGAIN)
                    break;
                shmemi_advance(shmemi.context);
            }
        }
        /* Queued copies leave as the context advances: a short while of
         * progress, then go (a dead peer must not keep us here). */
        for (int i = 0; i < 1000; i++)
            shmemi_advance(shmemi.context);
    }
    /* at_exit must not run a collective finalize the others are not in */
    shmemi.finalized = 1;
    _Exit(status);
}

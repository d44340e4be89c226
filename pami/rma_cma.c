/*
 * put and get to a task of this node by writing or reading its memory
 * directly (process_vm_writev/readv, one copy, docs/protocols/rma.md).
 * UCX 1.13 would emulate small ones with messages whose handler, at the
 * owner, touches the address unchecked; here the kernel checks the
 * owner's mapping, so an access outside it fails at the origin
 * (PAMI_INVAL) and the owner never notices.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "internal.h"

/* Moves bytes between local and the task's raddr; 0 or an errno. */
static int cma_move(pid_t pid, bool put, void *local, uint64_t raddr,
                    size_t bytes)
{
    char *buf = local;
    while (bytes > 0) {
        struct iovec l = {.iov_base = buf, .iov_len = bytes};
        struct iovec r = {.iov_base = (void *)(uintptr_t)raddr,
                          .iov_len = bytes};
        ssize_t n = put ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                        : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        buf   += n;
        raddr += (uint64_t)n;
        bytes -= (size_t)n;
    }
    return 0;
}

pami_result_t pami_rma_cma(struct pami_context *ctx, uint32_t index,
                           bool put, void *local, size_t bytes,
                           uint64_t raddr, pami_event_fn local_fn,
                           pami_event_fn remote_fn, void *cookie,
                           int32_t region)
{
    pami_client_impl_t *c    = ctx->client;
    uint32_t            task = index / (uint32_t)c->num_contexts;
    int err = cma_move(c->tasks[task].pid, put, local, raddr, bytes);
    if (err == EPERM) {
        /* Not allowed here (ptrace scope, another container): the owner's
         * path from now on. */
        pami_warn("rma", "cannot access task %u's memory directly (%s); "
                         "one-sided operations go through their owner",
                  task, strerror(err));
        c->cma_denied = true;
        return PAMI_EAGAIN;
    }
    pami_result_t rc = PAMI_SUCCESS;
    if (err == ESRCH) {
        pami_task_failed(ctx, task, -ESRCH);
        rc = PAMI_PEER_FAILED;
    } else if (err != 0) {
        /* Once every task is through destroy's first barrier, the owner
         * may have finished and unmapped its regions: a departure, as
         * endpoint.c treats a closed monitor then, so the operation is
         * canceled by the shutdown rather than refused. */
        bool left = ctx->closing_down && ctx->shutdown_stage >= 2;
        pami_log(left ? PAMI_LOG_DEBUG : PAMI_LOG_WARN, "rma",
                 "%s of %zu bytes at 0x%llx of task %u failed: %s "
                 "(a destroyed region?)", put ? "put" : "get", bytes,
                 (unsigned long long)raddr, task, strerror(err));
        rc = left ? PAMI_SHUTDOWN
                  : err == EFAULT ? PAMI_INVAL : PAMI_TRANSPORT;
    }
    pami_request_t *req = pami_request_get(ctx);
    if (req == NULL)
        return PAMI_ENOMEM;
    /* Done: both callbacks from the next advance, with the outcome. */
    req->kind       = REQ_RMA;
    req->peer       = index;
    req->local_fn   = local_fn;
    req->remote_fn  = remote_fn;
    req->cookie     = cookie;
    req->ack_result = PAMI_SUCCESS;
    /* A local region stays in use until the callbacks ran, as for the
     * other paths: destroy waits for them. */
    if (region >= 0) {
        req->region = region;
        ctx->regions[region].users++;
    }
    pami_request_done(req, rc);
    return PAMI_SUCCESS;
}

/*
 * put and get to a task of this node by writing or reading its memory
 * directly (process_vm_writev/readv, one copy, docs/protocols/rma.md).
 * UCX 1.13 would emulate small ones with messages whose handler, at the
 * owner, touches the address unchecked; here the kernel checks the
 * owner's mapping, so an access outside it fails at the origin
 * (PAMI_INVAL) and the owner never notices.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* Reads of at least this many bytes are split in two halves read at once
 * by the caller and a helper thread. One core copying across the kernel
 * moves about 4 GB/s once the buffers leave the cache (64 MiB), two move
 * about 7.5 (docs/PERFORMANCE.md, issue 17); below this size the data is
 * cache-resident, one core is as fast and the hand-over would cost. */
#define CMA_SPLIT_MIN ((size_t)8 << 20)

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

/* One helper thread per process, started on the first large read and
 * blocked on its condition variable between reads (it never spins). It
 * serves one read at a time: a caller that finds it busy (another
 * context's thread) reads alone. A forked child starts its own. Each
 * pami_client_destroy joins it (pami_cma_helper_stop): nothing of pami
 * runs after the program's last destroy. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t  posted, finished;
    bool            started, failed, busy, job, done, quit;
    pthread_t       thread;
    pid_t           pid;
    char           *dst;
    uint64_t        src;
    size_t          len;
    int             err;
} helper = {.mu = PTHREAD_MUTEX_INITIALIZER,
            .posted = PTHREAD_COND_INITIALIZER,
            .finished = PTHREAD_COND_INITIALIZER};

static void helper_after_fork(void)
{
    /* Only the forking thread lives on in the child: no helper there. */
    pthread_mutex_init(&helper.mu, NULL);
    pthread_cond_init(&helper.posted, NULL);
    pthread_cond_init(&helper.finished, NULL);
    helper.started = helper.failed = false;
    helper.busy = helper.job = helper.done = helper.quit = false;
}

static void *helper_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pami-cma"); /* tests look for it */
    pthread_mutex_lock(&helper.mu);
    for (;;) {
        while (!helper.job && !helper.quit)
            pthread_cond_wait(&helper.posted, &helper.mu);
        if (helper.quit)
            break;
        helper.job = false;
        pid_t    pid = helper.pid;
        char    *dst = helper.dst;
        uint64_t src = helper.src;
        size_t   len = helper.len;
        pthread_mutex_unlock(&helper.mu);
        int err = cma_move(pid, false, dst, src, len);
        pthread_mutex_lock(&helper.mu);
        helper.err  = err;
        helper.done = true;
        pthread_cond_broadcast(&helper.finished);
    }
    pthread_mutex_unlock(&helper.mu);
    return NULL;
}

/* A second core to read with? Not when this task may run on one only. */
static bool helper_possible(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set) > 1;
    return sysconf(_SC_NPROCESSORS_ONLN) > 1;
}

/* Takes the helper for one read; false when there is none to take. */
static bool helper_claim(void)
{
    static atomic_bool atfork_set;
    pthread_mutex_lock(&helper.mu);
    if (!helper.started && !helper.failed) {
        helper.failed = true;
        if (helper_possible()) {
            if (!atomic_exchange(&atfork_set, true))
                pthread_atfork(NULL, NULL, helper_after_fork);
            /* Signals stay with the program's threads. */
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old);
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setstacksize(&attr, 64 * 1024);
            if (pthread_create(&helper.thread, &attr, helper_main, NULL) ==
                0) {
                helper.started = true;
                helper.failed  = false;
            } else {
                pami_warn("rndv", "no helper thread for large reads; they "
                                  "use one core");
            }
            pthread_attr_destroy(&attr);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
        }
    }
    bool ok = helper.started && !helper.busy;
    if (ok)
        helper.busy = true;
    pthread_mutex_unlock(&helper.mu);
    return ok;
}

void pami_cma_helper_stop(void)
{
    pthread_mutex_lock(&helper.mu);
    helper.failed = false; /* the next client may try again */
    if (!helper.started) {
        pthread_mutex_unlock(&helper.mu);
        return;
    }
    /* Another client's read finishes first; reads that start meanwhile
     * find the helper busy and read alone. */
    while (helper.busy)
        pthread_cond_wait(&helper.finished, &helper.mu);
    helper.busy = true;
    helper.quit = true;
    pthread_cond_signal(&helper.posted);
    pthread_t t = helper.thread;
    pthread_mutex_unlock(&helper.mu);
    pthread_join(t, NULL);
    pthread_mutex_lock(&helper.mu);
    helper.started = helper.quit = helper.busy = false;
    pthread_mutex_unlock(&helper.mu);
}

int pami_cma_write(pid_t pid, uint64_t dst, const void *src, size_t bytes)
{
    return cma_move(pid, true, (void *)(uintptr_t)src, dst, bytes);
}

bool pami_cma_spare_core(const pami_client_impl_t *c)
{
    return c->num_local_cpus > c->num_local_tasks;
}

int pami_cma_read(pid_t pid, void *dst, uint64_t src, size_t bytes,
                  bool spare_core)
{
    if (!spare_core || bytes < CMA_SPLIT_MIN || !helper_claim())
        return cma_move(pid, false, dst, src, bytes);
    /* The helper takes the upper half, from a page boundary. */
    size_t first = (bytes / 2) & ~(size_t)4095;
    pthread_mutex_lock(&helper.mu);
    helper.pid  = pid;
    helper.dst  = (char *)dst + first;
    helper.src  = src + first;
    helper.len  = bytes - first;
    helper.done = false;
    helper.job  = true;
    pthread_cond_signal(&helper.posted);
    pthread_mutex_unlock(&helper.mu);

    int err = cma_move(pid, false, dst, src, first);

    pthread_mutex_lock(&helper.mu);
    while (!helper.done)
        pthread_cond_wait(&helper.finished, &helper.mu);
    int herr    = helper.err;
    helper.busy = false;
    pthread_cond_broadcast(&helper.finished); /* a stop may wait for it */
    pthread_mutex_unlock(&helper.mu);
    /* A dead owner decides the outcome whichever half saw it. */
    if (err == ESRCH || herr == ESRCH)
        return ESRCH;
    return err != 0 ? err : herr;
}

/* The outcome of a CMA access that failed with err (not EPERM). */
pami_result_t pami_cma_failed(struct pami_context *ctx, uint32_t task,
                              bool put, size_t bytes, uint64_t raddr, int err)
{
    if (err == ESRCH) {
        pami_task_failed(ctx, task, -ESRCH);
        return PAMI_PEER_FAILED;
    }
    /* Once every task is through destroy's first barrier, the owner may
     * have finished and unmapped its regions: a departure, as endpoint.c
     * treats a closed monitor then, so the operation is canceled by the
     * shutdown rather than refused. */
    bool left = ctx->closing_down && ctx->shutdown_stage >= 2;
    pami_log(left ? PAMI_LOG_DEBUG : PAMI_LOG_WARN, "rma",
             "%s of %zu bytes at 0x%llx of task %u failed: %s "
             "(a destroyed region?)", put ? "put" : "get", bytes,
             (unsigned long long)raddr, task, strerror(err));
    return left ? PAMI_SHUTDOWN : err == EFAULT ? PAMI_INVAL : PAMI_TRANSPORT;
}

void pami_cma_batch_flush(struct pami_context *ctx)
{
    pami_client_impl_t *c = ctx->client;
    __typeof__(ctx->cma_batch) *b = &ctx->cma_batch;
    uint32_t n = b->n;
    if (n == 0)
        return;
    b->n = 0;
    /* The batch's entries are the last n of the ring (nothing else
     * entered it since the first: see pami_cma_batch_end). */
    uint32_t first = ctx->rma_done_tail - n;
    pid_t    pid   = c->tasks[b->task].pid;
    uint32_t i     = 0;
    while (i < n) {
        ssize_t got = b->put ? process_vm_writev(pid, &b->local[i], n - i,
                                                 &b->remote[i], n - i, 0)
                             : process_vm_readv(pid, &b->local[i], n - i,
                                                &b->remote[i], n - i, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got > 0) {
            /* Whole operations first, then what is left of one: the
             * kernel goes through the vectors in order and stops at the
             * first range it cannot reach. */
            size_t left = (size_t)got;
            while (i < n && left >= b->local[i].iov_len)
                left -= b->local[i++].iov_len;
            if (left > 0) {
                b->local[i].iov_base = (char *)b->local[i].iov_base + left;
                b->remote[i].iov_base = (char *)b->remote[i].iov_base + left;
                b->local[i].iov_len -= left;
                b->remote[i].iov_len -= left;
            }
            continue;
        }
        int err = got < 0 ? errno : EIO;
        pami_result_t rc;
        if (err == EPERM) {
            /* Allowed before, refused now: this and later ones fail,
             * later calls take the owner's path. */
            pami_warn("rma", "cannot access task %u's memory directly any "
                             "more (%s); one-sided operations go through "
                             "their owner", b->task, strerror(err));
            c->cma_denied = true;
            rc = PAMI_TRANSPORT;
        } else {
            rc = pami_cma_failed(ctx, b->task, b->put, b->local[i].iov_len,
                            (uint64_t)(uintptr_t)b->remote[i].iov_base, err);
        }
        /* A dead or refusing owner fails the rest; a bad range only the
         * operation it belongs to. */
        uint32_t end = err == ESRCH || err == EPERM ? n : i + 1;
        for (; i < end; i++)
            ctx->rma_done[(first + i) & (ctx->rma_done_cap - 1)].result = rc;
    }
}

/* Adds a small access to the batch; the callbacks' entry goes in the ring
 * now, with the outcome set by the flush. */
static pami_result_t cma_batch_add(struct pami_context *ctx, uint32_t index,
                                   uint32_t task, bool put, void *local, size_t bytes,
                                   uint64_t raddr, pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region)
{
    __typeof__(ctx->cma_batch) *b = &ctx->cma_batch;
    if (b->n != 0 && (b->task != task || b->put != put ||
                      b->n == PAMI_CMA_BATCH_OPS))
        pami_cma_batch_flush(ctx);
    pami_result_t rc = pami_rma_report_later(ctx, index, PAMI_SUCCESS,
                                             local_fn, remote_fn, cookie,
                                             region);
    if (rc != PAMI_SUCCESS)
        return rc;
    b->task        = task;
    b->put         = put;
    b->local[b->n]  = (struct iovec){.iov_base = local, .iov_len = bytes};
    b->remote[b->n] = (struct iovec){.iov_base = (void *)(uintptr_t)raddr,
                                     .iov_len = bytes};
    b->n++;
    return PAMI_SUCCESS;
}

pami_result_t pami_rma_cma(struct pami_context *ctx, uint32_t index,
                           bool put, void *local, size_t bytes,
                           uint64_t raddr, pami_event_fn local_fn,
                           pami_event_fn remote_fn, void *cookie,
                           int32_t region)
{
    pami_client_impl_t *c    = ctx->client;
    uint32_t            task = index / (uint32_t)c->num_contexts;
    /* Small ones wait for the advance and move together: the kernel call
     * costs more than the copy. Only once a call went through, so EPERM
     * is found by a direct call, which can still take the owner's path. */
    if (bytes > 0 && bytes <= c->config.cma_batch && c->cma_worked)
        return cma_batch_add(ctx, index, task, put, local, bytes, raddr, local_fn,
                             remote_fn, cookie, region);
    pami_cma_batch_end(ctx);
    /* Room for the report first: once the data moved, a failure could no
     * longer mean "nothing happened". */
    if (!pami_rma_done_room(ctx))
        return PAMI_ENOMEM;
    int err = put ? cma_move(c->tasks[task].pid, true, local, raddr, bytes)
                  : pami_cma_read(c->tasks[task].pid, local, raddr, bytes,
                                  pami_cma_spare_core(c));
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
    if (err != 0)
        rc = pami_cma_failed(ctx, task, put, bytes, raddr, err);
    else if (bytes > 0)
        c->cma_worked = true;
    /* Done: both callbacks from the next advance, with the outcome. */
    return pami_rma_report_later(ctx, index, rc, local_fn, remote_fn, cookie,
                                 region);
}

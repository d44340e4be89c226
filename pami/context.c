/*
 * Contexts: one UCX worker each, created together by all tasks so their
 * worker addresses can be exchanged in one allgather.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "params.h"

static void loop_io_noop(void *arg, int fd)
{
    (void)arg;
    (void)fd;
}

static pami_result_t context_open(pami_client_impl_t *c, size_t offset, size_t n,
                                  pami_context_t *out)
{
    struct pami_context *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return PAMI_ENOMEM;
    ctx->client    = c;
    ctx->offset    = offset;
    ctx->tp        = c->tp;
    ctx->done_tail = &ctx->done_head;
    ctx->deferred_tail = &ctx->deferred_head;
    ctx->self_tail = &ctx->self_head;
    ctx->post_tail = &ctx->post_head;
    ctx->event_fd  = -1;
    for (size_t i = 0; i < PAMI_RMA_HELP_SLOTS; i++)
        ctx->help[i].fd = -1;
    /* Recursive, so a program holding its context's lock (as it must with
     * the progress thread) can call what locks it again (the fence). */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ctx->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_init(&ctx->post_lock, NULL);

    tp_worker_params_t wp = {.am_fn = pami_am_recv, .am_arg = ctx};
    pami_shm_params(c, n, &wp);
    int rc = ctx->tp->worker_create(c->tp_ctx, &wp, &ctx->worker);
    if (rc != 0) {
        free(ctx);
        return pami_result_from_errno(rc);
    }
    rc = ctx->tp->event_fd(ctx->worker, &ctx->event_fd);
    ctx->loop = evloop_libev_ops.create();
    if (rc != 0 || ctx->loop == NULL) {
        pami_error("context", "no event fd or event loop for context %zu",
                   offset);
        if (ctx->loop != NULL)
            evloop_libev_ops.destroy(ctx->loop);
        ctx->tp->worker_destroy(ctx->worker);
        free(ctx);
        return PAMI_TRANSPORT;
    }
    ctx->loop_io = evloop_libev_ops.io_add(ctx->loop, ctx->event_fd,
                                           loop_io_noop, ctx);
    *out = ctx;
    return PAMI_SUCCESS;
}

static void context_close(struct pami_context *ctx)
{
    pami_requests_destroy(ctx);
    pami_self_discard(ctx);
    pami_rma_done_free(ctx); /* reported by pami_requests_destroy */
    pami_rma_help_fini(ctx);
    /* Both empty: every transport poll sends the answers, every
     * progress the requests (what waits for them ended above). */
    free(ctx->replies.buf);
    free(ctx->requests.buf);
    free(ctx->sends.buf);
    if (ctx->loop_io != NULL)
        evloop_libev_ops.io_del(ctx->loop, ctx->loop_io);
    evloop_libev_ops.destroy(ctx->loop);
    /* Segment names go on every path, also when the worker is left. */
    pami_shm_close(ctx);
    /* UCX 1.13 aborts or crashes when a worker goes with a close still
     * running, or with requests queued toward a task that died (it purges
     * them and trips over their state). Leaving the worker, and what UCX
     * may still point at, is the lesser harm on those error paths. */
    if (ctx->closing == 0 && !ctx->client->tasks_failed) {
        pami_regions_destroy(ctx);
        ctx->tp->worker_destroy(ctx->worker);
        pami_requests_free(ctx);
    } else {
        ctx->client->tp_leaked = true;
        pami_warn("context", "context %zu: leaving its UCX worker (%s)",
                  ctx->offset, ctx->closing ? "endpoint closes never ended"
                                            : "a task died");
    }
    pami_rma_claims_free(ctx);
    free(ctx->peers);
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->post_lock);
    free(ctx);
}

/* No worker address is this long (UCX's are a few hundred bytes): a larger
 * length in the first allgather is a corrupt bootstrap (an OOB allgather
 * of the program's, a launcher), and must not size the second. */
#define PAMI_WORKER_ADDR_MAX ((size_t)1 << 20)

/* Every task contributes the addresses of its n workers, each padded to the
 * largest address in the job (learned by a first allgather). */
static pami_result_t exchange_addresses(pami_client_impl_t *c,
                                        pami_context_t *contexts, size_t n)
{
    size_t mine = 0;
    for (size_t i = 0; i < n; i++) {
        const void *addr;
        size_t      len;
        c->tp->worker_address(contexts[i]->worker, &addr, &len);
        if (len > mine)
            mine = len;
    }

    uint64_t  info[3] = {mine, n, c->protocol_sig};
    uint64_t *infos   = malloc(c->size * sizeof(info));
    if (infos == NULL)
        return PAMI_ENOMEM;
    if (c->bs->allgather(c->bs_state, info, infos, sizeof(info)) != 0) {
        free(infos);
        return PAMI_BOOTSTRAP;
    }
    /* At least this task's own length, whatever came back for it: each
     * address is copied in at its full length below. */
    size_t stride = mine;
    pami_result_t rc = PAMI_SUCCESS;
    for (size_t t = 0; t < c->size; t++) {
        const uint64_t *its = &infos[3 * t];
        if (its[0] > PAMI_WORKER_ADDR_MAX) {
            pami_error("context", "task %zu announces worker addresses of "
                                  "%llu bytes: the bootstrap's allgather "
                                  "is corrupt", t,
                       (unsigned long long)its[0]);
            rc = PAMI_BOOTSTRAP;
        } else if (its[0] > stride) {
            stride = its[0];
        }
        if (its[1] != n) {
            pami_error("context", "task %zu creates %llu contexts, this task "
                                  "%zu: every task must pass the same n",
                       t, (unsigned long long)its[1], n);
            rc = PAMI_INVAL;
        }
        if (its[2] != c->protocol_sig) {
            pami_error("context", "task %zu registered other protocols, or "
                                  "in another order, than this task", t);
            rc = PAMI_INVAL;
        }
    }
    free(infos);
    if (rc != PAMI_SUCCESS)
        return rc;

    size_t   row  = stride * n;
    uint8_t *send = calloc(1, row);
    c->addr_blob  = malloc(row * c->size);
    if (send == NULL || c->addr_blob == NULL) {
        free(send);
        return PAMI_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const void *addr;
        size_t      len;
        c->tp->worker_address(contexts[i]->worker, &addr, &len);
        memcpy(send + i * stride, addr, len);
    }
    int brc = c->bs->allgather(c->bs_state, send, c->addr_blob, row);
    free(send);
    if (brc != 0)
        return PAMI_BOOTSTRAP;
    c->addr_stride = stride;
    return PAMI_SUCCESS;
}

/* The first failure (lowest task) of a step every task took, or
 * PAMI_SUCCESS when it went well everywhere. */
static pami_result_t agree_on_result(pami_client_impl_t *c,
                                     pami_result_t mine)
{
    int32_t  me  = (int32_t)mine;
    int32_t *all = malloc(c->size * sizeof(*all));
    if (all == NULL)
        return PAMI_ENOMEM;
    pami_result_t rc = PAMI_SUCCESS;
    if (c->bs->allgather(c->bs_state, &me, all, sizeof(me)) != 0)
        rc = PAMI_BOOTSTRAP;
    for (size_t t = 0; t < c->size && rc == PAMI_SUCCESS; t++)
        if (all[t] != PAMI_SUCCESS) {
            rc = (pami_result_t)all[t];
            if (t != c->task)
                pami_error("context", "a protocol's init failed on task "
                                      "%zu (%s)", t, pami_error_text(rc));
        }
    free(all);
    return rc;
}

pami_result_t pami_context_createv(pami_client_t c,
                                   const pami_context_params_t *params,
                                   size_t n, pami_context_t *contexts)
{
    PAMI_CHECK(c != NULL && contexts != NULL, PAMI_INVAL, "context",
               "createv with a NULL client or output");
    if (params != NULL &&
        pami_params_mask("pami_context_params_t", params->field_mask,
                         PAMI_CONTEXT_PARAM_KNOWN) != PAMI_SUCCESS)
        return PAMI_INVAL;
    PAMI_CHECK(n >= 1 && n <= PAMI_CONTEXT_MAX, PAMI_INVAL, "context",
               "createv of %zu contexts; 1 to %d allowed", n, PAMI_CONTEXT_MAX);
    PAMI_CHECK(c->num_contexts == 0, PAMI_INVAL, "context",
               "contexts already created; destroyv them first");

    pami_result_t rc = PAMI_SUCCESS;
    size_t made = 0;
    for (; made < n; made++) {
        rc = context_open(c, made, n, &contexts[made]);
        if (rc != PAMI_SUCCESS)
            break;
    }
    /* Take part in the exchange even after a local failure, so the other
     * tasks do not wait for us forever; everyone then sees the error. */
    pami_result_t xrc = exchange_addresses(c, contexts, made);
    if (rc == PAMI_SUCCESS)
        rc = xrc;

    for (size_t i = 0; rc == PAMI_SUCCESS && i < n; i++) {
        contexts[i]->peers = calloc(c->size * n, sizeof(pami_peer_t));
        if (contexts[i]->peers == NULL)
            rc = PAMI_ENOMEM;
    }
    c->contexts = calloc(n, sizeof(*c->contexts));
    if (rc == PAMI_SUCCESS && c->contexts == NULL)
        rc = PAMI_ENOMEM;
    if (rc != PAMI_SUCCESS) {
        for (size_t i = 0; i < made; i++) {
            context_close(contexts[i]);
            contexts[i] = NULL;
        }
        free(c->contexts);
        c->contexts = NULL;
        free(c->addr_blob);
        c->addr_blob = NULL;
        return rc;
    }
    memcpy(c->contexts, contexts, n * sizeof(*contexts));
    c->num_contexts = n;

    /* Before any context progresses: no protocol message finds its
     * handler missing here. */
    for (size_t i = 0; i < n && rc == PAMI_SUCCESS; i++)
        rc = pami_protocols_init(contexts[i]);
    /* An init may fail on some tasks only: all must hear it and destroy
     * together, or the others would wait for this one in their next
     * collective call. */
    rc = agree_on_result(c, rc);
    if (rc != PAMI_SUCCESS) {
        pami_context_destroyv(contexts, n);
        return rc;
    }

    /* Watch every task of other nodes from the start, connected while all
     * tasks progress here: a task that dies later is always noticed. */
    size_t monitors = 0;
    for (size_t i = 0; i < n; i++)
        monitors += pami_monitors_start(contexts[i]);
    if (monitors > 0) {
        uint64_t deadline = pami_time_ns() +
                            c->config.shutdown_timeout_ms * 1000000ull;
        pami_drain(contexts, n, deadline);
        rc = pami_barrier(contexts, n, deadline);
        if (rc != PAMI_SUCCESS) {
            pami_error("context", "tasks did not all connect: %s",
                       pami_error_text(rc));
            pami_context_destroyv(contexts, n);
            return rc;
        }
    }

    if (c->config.async_progress) {
        rc = pami_progress_thread_start(c);
        if (rc != PAMI_SUCCESS) {
            pami_context_destroyv(contexts, n);
            return rc;
        }
    }
    return PAMI_SUCCESS;
}

pami_result_t pami_context_destroyv(pami_context_t *contexts, size_t n)
{
    PAMI_CHECK(contexts != NULL && n > 0 && contexts[0] != NULL, PAMI_INVAL,
               "context", "destroyv of NULL contexts");
    PAMI_CHECK(pami_tls_progressing == NULL, PAMI_IN_HANDLER, "context",
               "pami_context_destroyv called from a handler");
    pami_client_impl_t *c = contexts[0]->client;
    /* Every element: a NULL or repeated one would be closed (or read)
     * as a context. */
    PAMI_CHECK(n == c->num_contexts &&
                   memcmp(c->contexts, contexts, n * sizeof(*contexts)) == 0,
               PAMI_INVAL, "context",
               "destroyv must be given the %zu contexts of createv, in "
               "order", c->num_contexts);

    pami_progress_thread_stop(c);
    pami_result_t rc = pami_shutdown(contexts, n,
                                     (int)c->config.shutdown_timeout_ms);
    for (size_t i = n; i-- > 0;)
        pami_protocols_fini(contexts[i]);
    /* No worker may vanish while a peer still flushes toward it; with a
     * task dead, the bootstrap could only fail or wait for it. */
    if (!c->tasks_failed && c->bs->barrier(c->bs_state) != 0 &&
        rc == PAMI_SUCCESS)
        rc = PAMI_BOOTSTRAP;
    for (size_t i = 0; i < n; i++) {
        size_t pending = contexts[i]->inflight - contexts[i]->zombies;
        if (pending > 0)
            pami_warn("context", "context %zu: %zu operations still pending "
                                 "at destroy complete with PAMI_SHUTDOWN",
                      i, pending);
        context_close(contexts[i]);
        contexts[i] = NULL;
    }
    free(c->contexts);
    c->contexts     = NULL;
    c->num_contexts = 0;
    free(c->addr_blob);
    c->addr_blob = NULL;
    return rc;
}

pami_result_t pami_context_lock(pami_context_t ctx)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "context", "lock of a NULL context");
    return pthread_mutex_lock(&ctx->lock) == 0 ? PAMI_SUCCESS : PAMI_ERROR;
}

pami_result_t pami_context_trylock(pami_context_t ctx)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "context", "trylock of a NULL context");
    int rc = pthread_mutex_trylock(&ctx->lock);
    if (rc == EBUSY)
        return PAMI_EAGAIN;
    return rc == 0 ? PAMI_SUCCESS : PAMI_ERROR;
}

pami_result_t pami_context_unlock(pami_context_t ctx)
{
    PAMI_CHECK(ctx != NULL, PAMI_INVAL, "context", "unlock of a NULL context");
    int rc = pami_context_release(ctx);
    PAMI_CHECK(rc == 0, PAMI_ERROR, "context", "unlock of a context: %s",
               rc == EPERM ? "this thread does not hold it" : strerror(rc));
    return PAMI_SUCCESS;
}

/* Any prefix of whole counters (params.h): a program built when there
 * were fewer gets those it knows. */
PAMI_PARAMS_LAYOUTS(stats_layouts, pami_context_stats_t,
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, sends),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, receives),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, dropped_unknown),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, dropped_malformed),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, peer_failures),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, posted),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, sleeps),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, bad_regions),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, shm_on),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, shm_peers),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, shm_sent),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, shm_received),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, shm_full),
                    PAMI_PARAMS_PREFIX(pami_context_stats_t, shm_wakeups));

pami_result_t pami_context_stats_sized(pami_context_t ctx,
                                       pami_context_stats_t *stats,
                                       size_t size)
{
    PAMI_CHECK(ctx != NULL && stats != NULL, PAMI_INVAL, "context",
               "stats with a NULL context or output");
    pami_result_t rc = pami_params_out(&stats_layouts, size);
    if (rc != PAMI_SUCCESS)
        return rc;
    pami_context_stats_t all = ctx->stats;
    tp_stats_t ts = {0};
    if (ctx->tp->stats != NULL)
        ctx->tp->stats(ctx->worker, &ts);
    all.shm_on       = (uint64_t)ts.shm_on;
    all.shm_peers    = ts.shm_peers;
    all.shm_sent     = ts.shm_sent;
    all.shm_received = ts.shm_received;
    all.shm_full     = ts.shm_full;
    all.shm_wakeups  = ts.shm_wakeups;
    memcpy(stats, &all, size);
    return PAMI_SUCCESS;
}

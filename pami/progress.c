/*
 * Progress: advance polls, wait polls a bounded number of times and then
 * sleeps on the UCX event fd through libev, post queues work from any
 * thread, and the optional progress thread advances every context.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "internal.h"

/* How long pami_context_wait spins with yields before it sleeps. */
#define YIELD_SPIN_MAX_NS 1000000ull

/* The contexts whose handlers this thread is running, to refuse re-entry
 * (internal.h). */
__thread struct pami_context *pami_tls_progressing
    __attribute__((tls_model("initial-exec")));
__thread pami_progress_frame_t *pami_tls_frames
    __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) unsigned run_posted_items(
    struct pami_context *ctx)
{
    pthread_mutex_lock(&ctx->post_lock);
    pami_post_item_t *items = ctx->post_head;
    ctx->post_head = NULL;
    ctx->post_tail = &ctx->post_head;
    atomic_store_explicit(&ctx->post_pending, 0, memory_order_release);
    pthread_mutex_unlock(&ctx->post_lock);

    unsigned n = 0;
    while (items != NULL) {
        pami_post_item_t *item = items;
        items = item->next;
        item->queued = 0; /* the program may post it again from fn */
        n++;
        ctx->stats.posted++;
        if (item->fn(ctx, item->cookie) == PAMI_EAGAIN) {
            /* Requeue through the same path another thread would use. */
            pami_context_post(ctx, (pami_work_t *)item, item->fn,
                              item->cookie);
        }
    }
    return n;
}

/* Every progress call looks; posts are rare. */
static inline unsigned run_posted(struct pami_context *ctx)
{
    if (likely(atomic_load_explicit(&ctx->post_pending,
                                    memory_order_acquire) == 0))
        return 0;
    return run_posted_items(ctx);
}

/* Tasks on this node that die are found by reading a byte of them: a
 * socket of a dead task does not always tell UCX soon (it may be one UCX
 * only writes to). Every PAMI_WATCH_MS at most, checked every 1024
 * polls and whenever a wait wakes. */
static void sweep_local_tasks(struct pami_context *ctx, uint64_t now)
{
    if (now - ctx->last_sweep_ns >= PAMI_WATCH_MS * 1000000ull)
        pami_sweep_local_tasks(ctx, now);
}

static inline bool sweeping(struct pami_context *ctx)
{
    return ctx->client->config.peer_errors &&
           ctx->client->num_local_tasks > 1 && !ctx->closing_down;
}

/* A yield can give the core away for long when other processes want it
 * (milliseconds each): the looks above that count polls would then come
 * seconds late, a stopped task would go unnoticed, so after a yield the
 * clock decides. Returns the time. */
static uint64_t after_yield(struct pami_context *ctx)
{
    uint64_t now = pami_time_ns();
    if (sweeping(ctx))
        sweep_local_tasks(ctx, now);
    if (pami_liveness_wanted(ctx))
        ctx->live_check = true;
    return now;
}

/* Inlined into pami_context_advance, the call a program's loop makes per
 * message: the call and the registers it saves cost more than its
 * bookkeeping on the turns where the queues had work. */
static inline __attribute__((always_inline)) unsigned
progress_once(struct pami_context *ctx)
{
    bool look = unlikely((++ctx->polls & 1023) == 0);
    if (look && sweeping(ctx))
        sweep_local_tasks(ctx, pami_time_ns());
    pami_progress_frame_t frame;
    pami_progress_enter(ctx, &frame);
    /* The progress thread's arm is spent: see pami_context_release. */
    ctx->progressed = true;
    /* Completions the program's own calls finished (a put or rmw by load
     * and store completes in the call) are reported without polling the
     * transport first, on 7 calls of 8: an idle transport costs a poll
     * (UCX's worker, the queues), and a loop of such operations would pay
     * it per operation. Incoming traffic waits 8 calls at most. */
    unsigned n = 0;
    /* Puts and gets gathered since the last progress leave first (those
     * a handler, callback or posted work issues here made this call
     * count events, so its caller progresses again). */
    if (unlikely((ctx->requests.n | ctx->sends.n) != 0)) {
        if (ctx->requests.n != 0)
            pami_rma_requests_flush(ctx);
        /* And sends gathered since (send_gather.c). */
        if (ctx->sends.n != 0)
            pami_sends_flush(ctx);
    }
    if (likely(ctx->done_head == NULL || (ctx->polls & 7) == 0))
        n = pami_tp_poll(ctx);
    /* Tasks on other nodes, once what they answered has been taken in,
     * at every poll while work with them is pending (the tick itself
     * waits PAMI_WATCH_MS between two looks): a program that comes back
     * to pami once a second and finds traffic at once must still look
     * each time, not every 64th (pami_liveness_wanted is inline and
     * cheap on one node). */
    if (unlikely(look || ctx->live_check || pami_liveness_wanted(ctx))) {
        ctx->live_check = false;
        pami_liveness_tick(ctx, pami_time_ns());
    }
    if (unlikely(ctx->self_head != NULL))
        n += pami_self_deliver(ctx);
    if (unlikely(ctx->peers_failed_pending))
        pami_peers_close_failed(ctx);
    if (unlikely(ctx->deferred_head != NULL))
        n += pami_send_deferred(ctx);
    if (ctx->done_head != NULL)
        n += pami_request_report(ctx);
    n += run_posted(ctx);
    /* What handlers and callbacks of this call gathered leaves before it
     * returns: the program may not progress again soon. Only a call that
     * ran something can have gathered (an idle poll does not look). */
    if (unlikely(n != 0 && ctx->sends.n != 0))
        pami_sends_flush(ctx);
    pami_progress_leave(&frame);
    return n;
}

unsigned pami_progress_once(struct pami_context *ctx)
{
    return progress_once(ctx);
}

pami_result_t pami_context_advance(pami_context_t ctx, size_t max)
{
    if (unlikely(ctx == NULL)) {
        pami_warn("progress", "advance of a NULL context");
        return PAMI_INVAL;
    }
    if (unlikely(pami_tls_progressing != NULL && pami_progressing(ctx))) {
        pami_warn("progress", "pami_context_advance called from a handler or "
                              "callback of the same context");
        return PAMI_IN_HANDLER;
    }
    /* The first turn inline, the rest (max > 1, rare) by call: a loop
     * around the inlined turn kept its counter and bound in registers
     * saved and restored on every call. */
    unsigned events = progress_once(ctx);
    for (size_t i = 1; i < max && events == 0; i++)
        events = pami_progress_once(ctx);
    if (events > 0)
        return PAMI_SUCCESS;
    /* More tasks than cores: a caller that loops on advance (the retry
     * loop of a full send) would keep the core from the task that shares
     * it and must run to free what we wait for. */
    if (ctx->client->oversubscribed) {
        sched_yield();
        after_yield(ctx);
    }
    return PAMI_EAGAIN;
}

pami_result_t pami_context_wait(pami_context_t ctx, int timeout_ms)
{
    if (unlikely(ctx == NULL)) {
        pami_warn("progress", "wait on a NULL context");
        return PAMI_INVAL;
    }
    if (unlikely(pami_tls_progressing != NULL && pami_progressing(ctx))) {
        pami_warn("progress", "pami_context_wait called from a handler or "
                              "callback of the same context");
        return PAMI_IN_HANDLER;
    }
    uint64_t start = pami_time_ns();
    size_t   spin  = ctx->client->config.wait_spin;

    bool     yield = ctx->client->oversubscribed;

    for (;;) {
        for (size_t i = 0; i <= spin; i++) {
            if (pami_progress_once(ctx) > 0)
                return PAMI_SUCCESS;
            /* More tasks than cores: the task we wait for may need this
             * core to make what we wait for. A spin of yields that has
             * lasted a millisecond is sharing the cores with others that
             * take them for long: sleep on the event fd instead, which
             * wakes us when something comes. */
            if (yield) {
                sched_yield();
                if (after_yield(ctx) - start >= YIELD_SPIN_MAX_NS)
                    break;
            }
        }

        int remaining = -1;
        if (timeout_ms >= 0) {
            uint64_t waited = (pami_time_ns() - start) / 1000000ull;
            if (waited >= (uint64_t)timeout_ms)
                return PAMI_TIMEOUT;
            remaining = timeout_ms - (int)waited;
        }
        /* Arm, then sleep only if nothing slipped in between: UCX says
         * EAGAIN when events are pending, the post flag covers posts. */
        if (ctx->self_head != NULL || ctx->sends.n != 0 ||
            ctx->tp->arm(ctx->worker) != 0)
            continue;
        if (atomic_load(&ctx->post_pending) != 0)
            continue;
        ctx->stats.sleeps++;
        /* Claimed puts an owner may never answer are taken back from a
         * poll: one every millisecond while they wait. */
        if (ctx->claims_out != 0 && (remaining < 0 || remaining > 1))
            remaining = 1;
        bool live = pami_liveness_wanted(ctx);
        if (sweeping(ctx) || live) {
            if (remaining < 0 || remaining > PAMI_WATCH_MS)
                remaining = PAMI_WATCH_MS;
            evloop_libev_ops.run_once(ctx->loop, remaining);
            if (sweeping(ctx))
                sweep_local_tasks(ctx, pami_time_ns());
            ctx->live_check = live;
        } else {
            evloop_libev_ops.run_once(ctx->loop, remaining);
        }
        /* Whatever woke us, the next round of progress finds it. */
        spin = 0;
    }
}

pami_result_t pami_context_post(pami_context_t ctx, pami_work_t *work,
                                pami_work_fn fn, void *cookie)
{
    if (ctx == NULL || work == NULL || fn == NULL) {
        pami_warn("progress", "post with a NULL context, work or function");
        return PAMI_INVAL;
    }
    pami_post_item_t *item = (pami_post_item_t *)work;
    uintptr_t mark = PAMI_POST_QUEUED ^ (uintptr_t)item;
    pthread_mutex_lock(&ctx->post_lock);
    if (item->queued == mark) {
        pthread_mutex_unlock(&ctx->post_lock);
        pami_warn("progress", "post of a work item that is still queued "
                              "(one work can be queued once at a time)");
        return PAMI_INVAL;
    }
    item->next   = NULL;
    item->fn     = fn;
    item->cookie = cookie;
    item->queued = mark;
    *ctx->post_tail = item;
    ctx->post_tail  = &item->next;
    atomic_store_explicit(&ctx->post_pending, 1, memory_order_release);
    pthread_mutex_unlock(&ctx->post_lock);
    evloop_libev_ops.wakeup(ctx->loop);
    pami_client_impl_t *c = ctx->client;
    if (c->progress_loop != NULL)
        evloop_libev_ops.wakeup(c->progress_loop);
    return PAMI_SUCCESS;
}

/* ---- progress thread ---- */

/* Whether what a thread did on ctx under its lock may wait for progress:
 * completions to report, sends waiting for an endpoint, requests the
 * transport holds (a send UCX queued for lack of room in the peer's
 * queue moves only when this worker progresses), endpoint closes and
 * failures to handle. Or whether it progressed the context (advance,
 * wait, fence) since the progress thread armed it: an arm is good for one
 * signal, and a thread that progresses or arms the worker may take that
 * signal (UCX's arm reads it) and the message it announced, leaving the
 * progress thread asleep on a worker that no longer signals. Read with
 * the lock held. */
static bool needs_progress(const struct pami_context *ctx)
{
    return ctx->progressed || ctx->done_head != NULL ||
           ctx->deferred_head != NULL || ctx->self_head != NULL ||
           ctx->requests.n != 0 || ctx->sends.n != 0 ||
           ctx->inflight > ctx->zombies || ctx->local_inflight > 0 ||
           ctx->closing > 0 || ctx->peers_failed_pending;
}

/* The progress thread arms a context and sleeps; what another thread
 * starts on it afterwards (under the lock) makes no event on the fd it
 * sleeps on, so that thread must wake it when it lets go. Waking costs a
 * write only while the progress thread sleeps. */
int pami_context_release(struct pami_context *ctx)
{
    pami_client_impl_t *c = ctx->client;
    if (!c->progress_running)
        return pthread_mutex_unlock(&ctx->lock);
    bool work = needs_progress(ctx);
    int  rc   = pthread_mutex_unlock(&ctx->lock);
    if (rc != 0)
        return rc; /* not held by this thread: nothing was done under it */
    /* After the unlock: a progress thread that found the lock held has
     * set the flag before trying it, so it is seen here. */
    atomic_thread_fence(memory_order_seq_cst);
    bool skipped = atomic_load(&ctx->progress_skipped) != 0 &&
                   atomic_exchange(&ctx->progress_skipped, 0) != 0;
    if (work || skipped)
        evloop_libev_ops.wakeup(c->progress_loop);
    return 0;
}

static void progress_io(void *arg, int fd)
{
    (void)arg;
    (void)fd;
}

/* A context the program holds: its fd, which nobody armed, may stay
 * readable; watching it would turn the sleep into a spin. The holder's
 * release wakes the thread instead. */
static void progress_watch(pami_client_impl_t *c, struct pami_context *ctx,
                           bool on)
{
    if (ctx->progress_watching == on)
        return;
    evloop_libev_ops.io_watch(c->progress_loop, ctx->progress_io, on);
    ctx->progress_watching = on;
}

/* Advances every context it can lock until none has anything to do, then
 * arms them all and sleeps until a context's fd, a post or a release
 * wakes it. A context the program holds is skipped; its release wakes the
 * thread, and a sleep with one skipped lasts 10 ms at most all the same. */
static void *progress_main(void *arg)
{
    pami_client_impl_t *c = arg;
    while (!atomic_load(&c->progress_stop)) {
        bool busy = false, all_armed = true, live = false;
        for (size_t i = 0; i < c->num_contexts; i++) {
            struct pami_context *ctx = c->contexts[i];
            atomic_store(&ctx->progress_skipped, 1);
            if (pthread_mutex_trylock(&ctx->lock) != 0) {
                progress_watch(c, ctx, false);
                all_armed = false;
                continue;
            }
            atomic_store(&ctx->progress_skipped, 0);
            progress_watch(c, ctx, true);
            /* Work pending with tasks on other nodes: their liveness is
             * looked at from here too (at most every PAMI_WATCH_MS), and
             * the sleep below is that short. */
            if (pami_liveness_wanted(ctx)) {
                live            = true;
                ctx->live_check = true;
            }
            if (pami_progress_once(ctx) > 0 || ctx->self_head != NULL ||
                ctx->sends.n != 0)
                busy = true;
            else if (ctx->tp->arm(ctx->worker) != 0 ||
                     atomic_load(&ctx->post_pending) != 0)
                busy = true;
            else
                ctx->progressed = false; /* armed by this thread */
            pthread_mutex_unlock(&ctx->lock);
        }
        if (busy)
            continue;
        evloop_libev_ops.run_once(c->progress_loop,
                                  !all_armed ? 10 : live ? PAMI_WATCH_MS : -1);
    }
    return NULL;
}

/* The loop frees the contexts' watchers with it: none may keep one. */
static void progress_loop_drop(pami_client_impl_t *c)
{
    evloop_libev_ops.destroy(c->progress_loop);
    c->progress_loop = NULL;
    for (size_t i = 0; i < c->num_contexts; i++)
        c->contexts[i]->progress_io = NULL;
}

pami_result_t pami_progress_thread_start(pami_client_impl_t *c)
{
    c->progress_loop = evloop_libev_ops.create();
    if (c->progress_loop == NULL)
        return PAMI_ENOMEM;
    for (size_t i = 0; i < c->num_contexts; i++) {
        struct pami_context *ctx = c->contexts[i];
        ctx->progress_io = evloop_libev_ops.io_add(
            c->progress_loop, ctx->event_fd, progress_io, c);
        if (ctx->progress_io == NULL) {
            progress_loop_drop(c);
            return PAMI_ENOMEM;
        }
        ctx->progress_watching = true;
        atomic_store(&ctx->progress_skipped, 0);
    }
    atomic_store(&c->progress_stop, 0);
    int rc = pthread_create(&c->progress_thread, NULL, progress_main, c);
    if (rc != 0) {
        pami_error("progress", "cannot start the progress thread: %s",
                   strerror(rc));
        progress_loop_drop(c);
        return PAMI_ERROR;
    }
    c->progress_running = true;
    pami_debug("progress", "progress thread started for %zu contexts",
               c->num_contexts);
    return PAMI_SUCCESS;
}

void pami_progress_thread_stop(pami_client_impl_t *c)
{
    if (!c->progress_running)
        return;
    atomic_store(&c->progress_stop, 1);
    evloop_libev_ops.wakeup(c->progress_loop);
    pthread_join(c->progress_thread, NULL);
    c->progress_running = false;
    progress_loop_drop(c);
}

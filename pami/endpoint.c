/*
 * Endpoints: plain values naming (task, context offset). The UCX endpoint
 * behind one is made on first use from the address exchanged at createv.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

pami_result_t pami_endpoint_create(pami_client_t c, pami_task_t task,
                                   size_t offset, pami_endpoint_t *ep)
{
    PAMI_CHECK(c != NULL && ep != NULL, PAMI_INVAL, "endpoint",
               "endpoint_create with a NULL client or output");
    PAMI_CHECK(task < c->size, PAMI_INVAL, "endpoint",
               "task %u is not in the job (size %zu)", task, c->size);
    PAMI_CHECK(offset < PAMI_CONTEXT_MAX, PAMI_INVAL, "endpoint",
               "context offset %zu is beyond %d", offset, PAMI_CONTEXT_MAX);
    *ep = (task << 8) | (pami_endpoint_t)offset;
    return PAMI_SUCCESS;
}

pami_result_t pami_endpoint_query(pami_endpoint_t ep, pami_task_t *task,
                                  size_t *offset)
{
    PAMI_CHECK(ep != PAMI_ENDPOINT_NULL, PAMI_INVAL, "endpoint",
               "query of PAMI_ENDPOINT_NULL");
    if (task != NULL)
        *task = pami_ep_task(ep);
    if (offset != NULL)
        *offset = pami_ep_offset(ep);
    return PAMI_SUCCESS;
}

void pami_task_failed(struct pami_context *ctx, uint32_t task, int status)
{
    size_t       n   = ctx->client->num_contexts;
    pami_peer_t *mon = &ctx->peers[task * n];
    if (mon->task_dead)
        return;
    mon->task_dead = true;
    ctx->stats.peer_failures++;
    /* In shutdown a peer that finished its barriers closes its monitors
     * first: that is a departure, and not a failure of the job. In the
     * first barrier no task can have finished, so it is a failure; later
     * the barrier gets a grace to take in what the task sent before it
     * left (pami_tasks_watch). */
    bool may_have_left = ctx->closing_down ? ctx->shutdown_stage >= 2
                                           : ctx->in_fence;
    if (!may_have_left)
        ctx->client->tasks_failed = true;
    else if (ctx->depart_deadline_ns == 0)
        ctx->depart_deadline_ns = pami_time_ns() +
                                  PAMI_DEPART_GRACE_MS * 1000000ull;
    pami_log(ctx->closing_down ? PAMI_LOG_DEBUG : PAMI_LOG_WARN, "endpoint",
             "task %u is unreachable (%s); its operations fail with "
             "PAMI_PEER_FAILED", task, strerror(-status));
    for (size_t i = 0; i < n; i++) {
        ctx->peers[task * n + i].failed = true;
        pami_request_fail_waiting(ctx, (uint32_t)(task * n + i),
                                  PAMI_PEER_FAILED);
    }
    /* What UCX holds for the dead task is failed and its endpoints
     * closed from progress, not from inside a UCX callback. */
    ctx->peers_failed_pending = true;
}

/* The task whose message the core barrier (barrier.c, dissemination:
 * round k hears from task - 2^k) waits for, or UINT32_MAX. */
uint32_t pami_barrier_waits_for(const struct pami_context *ctx)
{
    const pami_client_impl_t *c = ctx->client;
    size_t dist = (size_t)1 << ctx->bar_round;
    if (dist >= c->size ||
        (ctx->bar_seen[ctx->bar_epoch & 1] & (1ull << ctx->bar_round)))
        return UINT32_MAX;
    return (uint32_t)((c->task + c->size - dist) % c->size);
}

void pami_tasks_watch(struct pami_context *ctx)
{
    pami_client_impl_t *c   = ctx->client;
    uint64_t            now = pami_time_ns();
    /* A barrier a task may have finished and left (destroy's second, a
     * fence), idle, still waits for that task: what it sent before it left
     * would have been taken in by now. A wait for a live task is only slow
     * (a loaded machine), until it lasts so long that the live task is
     * likely waiting for the dead one itself. */
    if ((ctx->shutdown_stage == 2 || ctx->in_fence) &&
        ctx->depart_deadline_ns != 0 && now >= ctx->depart_deadline_ns) {
        uint32_t from = pami_barrier_waits_for(ctx);
        if ((from != UINT32_MAX &&
             ctx->peers[from * c->num_contexts].task_dead) ||
            now >= ctx->depart_deadline_ns + PAMI_DEPART_WAIT_MS * 1000000ull)
            c->tasks_failed = true;
    }
    /* After the next poll, which takes in the answers that came. */
    ctx->live_check = pami_liveness_wanted(ctx);
    if (!c->config.peer_errors || c->num_local_tasks <= 1 ||
        now - ctx->last_sweep_ns < PAMI_WATCH_MS * 1000000ull)
        return;
    /* Shared with progress' own sweep, which runs only every 1024 polls:
     * a context sleeping in a wait takes seconds to get there. */
    pami_sweep_local_tasks(ctx, now);
}

/* What a task sent before it died may still wait in our queue from it
 * or in UCX's buffers: take it in before its operations fail, so that an
 * ack it sent as its last act completes the send it answers. Bounded: a
 * live peer's flood must not keep us here. */
static void take_in_what_came(struct pami_context *ctx)
{
    if (ctx->in_tp_progress || pami_progressing(ctx))
        return;
    pami_progress_frame_t frame;
    pami_progress_enter(ctx, &frame);
    pami_tp_drain(ctx, 64);
    pami_progress_leave(&frame);
}

void pami_sweep_local_tasks(struct pami_context *ctx, uint64_t now)
{
    pami_client_impl_t *c = ctx->client;
    ctx->last_sweep_ns = now;
    size_t n = c->num_contexts;
    for (size_t i = 0; i < c->num_local_tasks; i++) {
        pami_task_t t = c->local_tasks[i];
        if (t == c->task || ctx->peers[t * n].task_dead)
            continue;
        if (!pami_task_alive(c, t)) {
            take_in_what_came(ctx);
            pami_task_failed(ctx, t, -ESRCH);
        }
        else if (pami_task_hung(ctx, t, now))
            pami_task_failed(ctx, t, -ETIMEDOUT);
    }
}

/* The state letter of /proc/PID/stat; '?' when it cannot be read. */
static char proc_state(pid_t pid)
{
    char path[48], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return '?';
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    /* The name may hold ')': the state follows the last one. */
    const char *p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' ? p[2] : '?';
}

/* A stopped task (T: SIGSTOP, job control) answers probes, and TCP stays
 * up for it, yet it will never send again until someone continues it.
 * A debugger's stop (t) is left alone: a breakpoint is not a failure. */
bool pami_task_hung(struct pami_context *ctx, uint32_t task, uint64_t now)
{
    pami_client_impl_t *c = ctx->client;
    if (c->config.peer_timeout_ms == 0 || !c->tasks[task].local)
        return false;
    pami_peer_t *mon = &ctx->peers[task * c->num_contexts];
    if (proc_state(c->tasks[task].pid) != 'T') {
        mon->stopped_since_ns = 0;
        return false;
    }
    if (mon->stopped_since_ns == 0)
        mon->stopped_since_ns = now;
    return now - mon->stopped_since_ns >=
           c->config.peer_timeout_ms * 1000000ull;
}

/* A monitor, or the endpoint of a context on another node, saw its task
 * die: every context of that task is gone. */
static void peer_failed(void *arg, int status)
{
    pami_peer_t *mon = arg;
    pami_task_failed(mon->ctx,
                     mon->index / (uint32_t)mon->ctx->client->num_contexts,
                     status);
}

/* The monitor's one message is out: its connection is complete. */
static void monitor_sent(tp_req_t *req, int status)
{
    (void)status;
    pami_peer_t *mon = container_of(req, pami_peer_t, hello_req);
    if (mon->hello_pending) {
        mon->hello_pending = false;
        mon->ctx->local_inflight--;
    }
}

/* Traffic to tasks on this node goes on endpoints without error handling,
 * so UCX may use shared memory; in UCX 1.13 error handling would restrict
 * them to TCP (traffic to other nodes has it: peer_connect). Besides,
 * each context keeps, per task on another node, one more endpoint in
 * UCX's peer-error mode that carries one message to get connected and then
 * only watches the task. It lives in the peer slot of the task's context
 * 0. */
static void monitor_start(struct pami_context *ctx, uint32_t task)
{
    pami_client_impl_t *c = ctx->client;
    uint32_t     index = task * (uint32_t)c->num_contexts;
    pami_peer_t *mon   = &ctx->peers[index];
    const void  *addr  = c->addr_blob + (size_t)index * c->addr_stride;
    mon->ctx   = ctx;
    mon->index = index;
    int rc = ctx->tp->ep_create(ctx->worker, addr, TP_EP_PEER_ERRORS,
                                peer_failed, mon, &mon->monitor);
    if (rc != 0) {
        mon->monitor = NULL;
        pami_warn("endpoint", "cannot watch task %u: a failure of it will "
                              "not be detected", task);
        return;
    }
    mon->hello.origin_task = c->task;
    mon->hello.dispatch    = PAMI_DISPATCH_MONITOR;
    mon->hello.origin_ctx  = (uint8_t)ctx->offset;
    mon->hello.flags       = 0;
    mon->hello_req.fn      = monitor_sent;
    rc = ctx->tp->am_send(mon->monitor, &mon->hello, sizeof(mon->hello),
                          NULL, 0, 0, &mon->hello_req);
    if (rc == 1) {
        mon->hello_pending = true;
        ctx->local_inflight++;
    } else if (rc < 0) {
        pami_warn("endpoint", "cannot connect the watch on task %u (%s): a "
                              "failure of it may go unnoticed", task,
                  strerror(-rc));
    }
}

/* Tasks on this node are watched by reading a byte of them (progress.c):
 * reliable and free of TCP. Those elsewhere get a monitor endpoint. */
size_t pami_monitors_start(struct pami_context *ctx)
{
    pami_client_impl_t *c = ctx->client;
    size_t started = 0;
    if (!c->config.peer_errors)
        return 0;
    for (uint32_t task = 0; task < c->size; task++)
        if (task != c->task && !c->tasks[task].local) {
            monitor_start(ctx, task);
            started++;
        }
    return started;
}

/* Whether the traffic endpoint of peer slot index is in peer-error mode:
 * to tasks on other nodes, which UCX reaches over TCP anyway. */
static bool peer_errors_on(const pami_client_impl_t *c, size_t index)
{
    return c->config.peer_errors && !c->tasks[index / c->num_contexts].local;
}

static pami_result_t peer_connect(struct pami_context *ctx, pami_peer_t *peer,
                                  uint32_t index)
{
    pami_client_impl_t *c = ctx->client;
    peer->ctx   = ctx;
    peer->index = index;
    const void *addr = c->addr_blob + (size_t)index * c->addr_stride;
    /* A task on another node is reached over TCP anyway, so UCX's
     * peer-error mode costs nothing there; without it UCX aborts this
     * process when that task dies while we still answer a get it asked of
     * us (UCX emulates gets over TCP with messages). */
    bool remote = peer_errors_on(c, index);
    /* A task of this node may be reached through the shared-memory
     * queues (the transport decides; docs/protocols/shm-queue.md). */
    unsigned flags = remote ? TP_EP_PEER_ERRORS : 0;
    if (c->tasks[index / c->num_contexts].local)
        flags |= TP_EP_LOCAL;
    /* Sends that follow one another here may leave together
     * (send_gather.c), but not to this context itself (its messages never
     * leave the process). */
    bool own = index == c->task * c->num_contexts + ctx->offset;
    peer->gather = c->config.send_gather == 0 || own ? PAMI_GATHER_OFF
                   : (flags & TP_EP_LOCAL) && c->config.shm_fastpath
                       ? PAMI_GATHER_QUEUE
                       : PAMI_GATHER_UCX;
    peer->sent_poll = ctx->polls - 1;
    int rc = ctx->tp->ep_create(ctx->worker, addr, flags,
                                remote ? peer_failed : NULL,
                                remote ? peer : NULL, &peer->ep);
    if (rc != 0) {
        /* Marked failed so later sends fail fast instead of retrying. */
        peer->ep     = NULL;
        peer->failed = true;
        ctx->stats.peer_failures++;
        pami_error("endpoint", "cannot reach task %zu context %zu",
                   index / c->num_contexts, index % c->num_contexts);
        return PAMI_PEER_FAILED;
    }
    return PAMI_SUCCESS;
}

pami_result_t pami_peer_slow(struct pami_context *ctx, uint32_t index,
                             pami_peer_t **out)
{
    pami_peer_t *peer = &ctx->peers[index];
    if (peer->failed)
        return PAMI_PEER_FAILED;
    if (peer->ep == NULL) {
        /* UCX 1.13 (TCP) crashes when an endpoint is created from inside
         * its own progress; the caller defers the send instead. */
        if (ctx->in_tp_progress)
            return PAMI_EAGAIN;
        if (ctx->eps_closed)
            return PAMI_SHUTDOWN;
        pami_result_t rc = peer_connect(ctx, peer, index);
        if (rc != PAMI_SUCCESS)
            return rc;
    }
    *out = peer;
    return PAMI_SUCCESS;
}

pami_result_t pami_peer_index_bad(struct pami_context *ctx,
                                  pami_endpoint_t dest)
{
    pami_client_impl_t *c = ctx->client;
    pami_warn("endpoint", "endpoint 0x%x (task %u, context %u) is not in the "
                          "job (%zu tasks, %zu contexts)", dest,
              pami_ep_task(dest), pami_ep_offset(dest), c->size,
              c->num_contexts);
    return PAMI_INVAL;
}

typedef struct {
    tp_req_t             tp;
    struct pami_context *ctx;
} close_req_t;

static void close_done(tp_req_t *req, int status)
{
    (void)status;
    close_req_t *cr = container_of(req, close_req_t, tp);
    cr->ctx->closing--;
    free(cr);
}

static void close_one(struct pami_context *ctx, tp_ep_t *ep, bool force)
{
    close_req_t *cr = malloc(sizeof(*cr));
    if (cr == NULL)
        return;
    cr->tp.fn = close_done;
    cr->ctx   = ctx;
    if (ctx->tp->ep_close(ep, force, &cr->tp) == 1)
        ctx->closing++;
    else
        free(cr);
}

void pami_peers_close_failed(struct pami_context *ctx)
{
    pami_client_impl_t *c = ctx->client;
    size_t npeers = c->size * c->num_contexts;
    ctx->peers_failed_pending = false;
    for (uint32_t t = 0; t < c->size; t++) {
        pami_peer_t *mon = &ctx->peers[t * c->num_contexts];
        if (mon->task_dead && !mon->task_told && !ctx->closing_down) {
            mon->task_told = true;
            pami_protocols_peer_failed(ctx, t);
        }
    }
    for (size_t i = 0; i < npeers; i++) {
        pami_peer_t *peer = &ctx->peers[i];
        if (!peer->failed || (peer->ep == NULL && peer->monitor == NULL))
            continue;
        /* Without error handling UCX would never end what it holds for
         * the dead peer: end it here, then drop the endpoints. With it
         * (tasks on other nodes) the forced close ends each of them once
         * UCX let go of its buffer: a get's reply that is still on its way
         * must not land in a buffer the program already got back. */
        if (peer->ep != NULL && peer_errors_on(c, i))
            pami_requests_peer_failed(ctx, (uint32_t)i);
        else
            pami_requests_abandon(ctx, (uint32_t)i);
        if (peer->hello_pending) {
            peer->hello_pending = false;
            ctx->local_inflight--;
        }
        if (peer->ep != NULL)
            close_one(ctx, peer->ep, true);
        if (peer->monitor != NULL)
            close_one(ctx, peer->monitor, true);
        peer->ep      = NULL;
        peer->monitor = NULL;
    }
}

void pami_peers_close(struct pami_context *ctx, bool force)
{
    pami_client_impl_t *c = ctx->client;
    ctx->eps_closed = true;
    size_t npeers = c->size * c->num_contexts;
    for (size_t i = 0; i < npeers; i++) {
        pami_peer_t *peer = &ctx->peers[i];
        if (peer->ep != NULL)
            close_one(ctx, peer->ep, force || peer->failed);
        if (peer->monitor != NULL)
            close_one(ctx, peer->monitor, true);
        peer->ep      = NULL;
        peer->monitor = NULL;
    }
}

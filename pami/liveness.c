/*
 * Liveness of tasks on other nodes. A stopped process (SIGSTOP) keeps its
 * TCP connections: the kernel answers for it, so neither UCX nor TCP's
 * keepalive ever fails it, and /proc (tasks.c) only shows this node's
 * tasks. So while work is pending with a task on another node, a context
 * asks it now and then (PAMI_DISPATCH_PROBE, docs/protocols/am.md) and the
 * task answers from its progress. One that left a probe unanswered, and
 * sent nothing at all, for PAMI_PEER_TIMEOUT fails like a dead one: a
 * live task whose answer waits behind its other messages in our socket
 * is not failed. An idle context sends nothing.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* Answers older than this many probes do not count (nor forged ones). */
#define PROBE_WINDOW 16u
/* A context that itself did not look for this long (the program did not
 * call progress, or one poll took long) first takes in what the peers
 * sent meanwhile, which may still wait in its sockets, then judges them.
 * (Failing nobody at such a look let a program that came back to pami
 * only every second or two, a loaded machine's, keep a cut task alive for
 * ten seconds and more.) */
#define LIVE_GAP_MS 1000u
/* Polls at most of that taking in. */
#define LIVE_GAP_POLLS 64

/* Probes go out every quarter timeout, 100 ms to 1 s apart. */
static uint64_t probe_interval_ns(const pami_client_impl_t *c)
{
    uint64_t ms = c->config.peer_timeout_ms / 4;
    if (ms < PAMI_WATCH_MS)
        ms = PAMI_WATCH_MS;
    if (ms > 1000)
        ms = 1000;
    return ms * 1000000ull;
}

/* Work with flat endpoint index idx is pending: watch its task. */
static bool mark(struct pami_context *ctx, uint32_t idx, uint64_t tick)
{
    pami_client_impl_t *c = ctx->client;
    uint32_t            t = idx / (uint32_t)c->num_contexts;
    if (t >= c->size || t == c->task || c->tasks[t].local)
        return false;
    pami_peer_t *mon = &ctx->peers[(size_t)t * c->num_contexts];
    if (mon->task_dead)
        return false;
    if (mon->live_tick != tick) {
        mon->live_tick   = tick;
        mon->probe_index = idx;
    }
    return true;
}

/* Marks every task with pending work (sent to since the last tick,
 * requests waiting on it, the core barrier waiting for it); true when
 * there is one. */
static bool mark_pending(struct pami_context *ctx, uint64_t tick)
{
    bool any = false;
    if (ctx->live_sent) {
        ctx->live_sent = false;
        size_t npeers = ctx->client->size * ctx->client->num_contexts;
        for (size_t i = 0; i < npeers; i++)
            if (ctx->peers[i].live_sent) {
                ctx->peers[i].live_sent = false;
                any |= mark(ctx, (uint32_t)i, tick);
            }
    }
    if (ctx->inflight > ctx->zombies)
        for (size_t ch = 0; ch < ctx->req_nchunks; ch++)
            for (size_t i = 0; i < (1u << PAMI_REQ_CHUNK_SHIFT); i++) {
                const pami_request_t *r = &ctx->req_chunks[ch][i];
                /* Acks and probes are answers of ours, not work. */
                if (r->kind == REQ_FREE || r->kind == REQ_ACK_SEND ||
                    r->abandoned ||
                    !(r->local_pending || r->remote_pending))
                    continue;
                any |= mark(ctx, r->peer, tick);
            }
    if (ctx->bar_sent) {
        uint32_t from = pami_barrier_waits_for(ctx);
        if (from != UINT32_MAX)
            any |= mark(ctx,
                        from * (uint32_t)ctx->client->num_contexts +
                            (uint32_t)ctx->offset,
                        tick);
    }
    return any;
}

static void send_probe(struct pami_context *ctx, pami_peer_t *mon,
                       uint64_t now)
{
    if (ctx->peers[mon->probe_index].failed || ctx->eps_closed)
        return;
    pami_probe_msg_t m = {.kind = PAMI_PROBE_ASK, .seq = ++mon->probe_seq};
    mon->probe_sent_ns = now;
    if (mon->ask_since_ns == 0)
        mon->ask_since_ns = now;
    /* A send that fails here fails for the task's other traffic too. */
    (void)pami_send_internal(ctx, mon->probe_index, PAMI_DISPATCH_PROBE, &m,
                             sizeof(m), REQ_ACK_SEND);
}

void pami_liveness_tick(struct pami_context *ctx, uint64_t now)
{
    pami_client_impl_t *c = ctx->client;
    if (!pami_liveness_on(c) ||
        now - ctx->last_live_ns < PAMI_WATCH_MS * 1000000ull)
        return;
    bool gap = now - ctx->last_live_ns > LIVE_GAP_MS * 1000000ull;
    /* Set first: a handler that the taking in runs may progress again. */
    ctx->last_live_ns = now;
    if (gap) {
        pami_tp_drain(ctx, LIVE_GAP_POLLS);
        now = pami_time_ns();
    }
    uint64_t tick = ++ctx->live_tick;
    bool     any  = mark_pending(ctx, tick);
    if (!any && !ctx->live_any)
        return;
    ctx->live_any = any;
    uint64_t timeout  = c->config.peer_timeout_ms * 1000000ull;
    uint64_t interval = probe_interval_ns(c);
    size_t   n        = c->num_contexts;
    for (uint32_t t = 0; t < c->size; t++) {
        pami_peer_t *mon = &ctx->peers[(size_t)t * n];
        if (t == c->task || c->tasks[t].local || mon->task_dead)
            continue;
        bool heard = mon->live_heard;
        mon->live_heard = false;
        if (mon->live_tick != tick) {
            /* Nothing pending with it: no longer owes an answer. */
            mon->quiet_since_ns = 0;
            mon->probe_sent_ns  = 0;
            mon->ask_since_ns   = 0;
            continue;
        }
        if (mon->quiet_since_ns == 0 || heard)
            mon->quiet_since_ns = now;
        if (mon->ask_since_ns != 0 &&
            now - mon->ask_since_ns >= timeout &&
            now - mon->quiet_since_ns >= timeout) {
            pami_task_failed(ctx, t, -ETIMEDOUT);
            continue;
        }
        /* A task that went quiet is asked at once; one that talks, every
         * interval; never more than one probe a tick. */
        if (mon->probe_sent_ns == 0 || now - mon->probe_sent_ns >= interval ||
            (!heard && mon->ask_since_ns == 0))
            send_probe(ctx, mon, now);
    }
}

void pami_probe_recv(struct pami_context *ctx, uint32_t peer,
                     uint32_t origin_task, const void *payload, size_t len)
{
    pami_probe_msg_t m;
    if (pami_probe_decode(payload, len, &m) != PAMI_WIRE_OK) {
        pami_drop_malformed(ctx, "liveness",
                            "dropped a malformed %zu-byte probe from task "
                            "%u",
                            len, origin_task);
        return;
    }
    if (m.kind == PAMI_PROBE_ASK) {
        pami_probe_msg_t a = {.kind = PAMI_PROBE_ANSWER, .seq = m.seq};
        (void)pami_send_internal(ctx, peer, PAMI_DISPATCH_PROBE, &a,
                                 sizeof(a), REQ_ACK_SEND);
        return;
    }
    pami_peer_t *mon =
        &ctx->peers[(size_t)origin_task * ctx->client->num_contexts];
    /* Only an answer to one of our last probes of that task counts. */
    if (mon->probe_seq == 0 || mon->probe_seq - m.seq >= PROBE_WINDOW) {
        pami_drop_malformed(ctx, "liveness",
                            "dropped an answer from task %u to probe %u, "
                            "which was not asked",
                            origin_task, m.seq);
        return;
    }
    if (mon->quiet_since_ns == 0)
        return;
    mon->quiet_since_ns = pami_time_ns();
    /* All asked so far are answered, or (an older one) from the last on:
     * its send time is the latest that can be owed. */
    mon->ask_since_ns = m.seq == mon->probe_seq ? 0 : mon->probe_sent_ns;
}

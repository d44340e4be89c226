/*
 * burst_oversub: every task sends a burst of 8-byte pami_send_immediate to
 * every other task, retrying a full send in two ways:
 *
 *   advance  while (pami_send_immediate(...) == PAMI_EAGAIN)
 *                pami_context_advance(ctx, 1);
 *            (the loop README.md teaches), and it waits for its own
 *            messages with pami_context_advance(ctx, 1) too;
 *   wait     the same with pami_context_wait(ctx, 0), and it waits for
 *            its messages with pami_context_wait(ctx, 100).
 *
 * Meant for more tasks than cores (pamirun -n 4 or -n 8 on two cores),
 * where a sender that spins takes the core from the receiver it waits
 * for. Value: messages each task sent per second, from a barrier before
 * the burst to the moment every task had all its messages (a barrier
 * after), on task 0; ratio = advance / wait.
 */
#include <stdio.h>
#include <stdlib.h>

#include <pami_barrier.h>

#include "bench.h"

#define ID_BURST 40

static volatile uint64_t burst_in; /* messages landed here */

static void on_burst(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)data;
    (void)origin; (void)recv;
    if (dlen != 8)
        bench_die("burst message of %zu bytes", dlen);
    burst_in++;
}

static void sync_all(group_t *g)
{
    bench_check(pami_barrier_wait(g->ctx, PAMI_BARRIER_PACKETS, NULL, 0),
                "barrier");
}

/* One burst of per_peer messages to every other task; the seconds from
 * the barrier before to the barrier after. */
static double burst(group_t *g, pami_endpoint_t *eps, size_t per_peer,
                    bool wait)
{
    uint64_t payload = g->me;
    uint64_t want    = burst_in + per_peer * (g->size - 1);
    sync_all(g);
    double t0 = bench_now();
    for (size_t i = 0; i < per_peer; i++) {
        for (size_t k = 1; k < g->size; k++) {
            pami_send_immediate_t s = {
                .dest = eps[(g->me + k) % g->size], .dispatch = ID_BURST,
                .data = &payload, .data_len = sizeof(payload)};
            pami_result_t rc;
            stall_t st;
            stall_init(&st, "burst_oversub send");
            if (wait) {
                while ((rc = pami_send_immediate(g->ctx, &s)) == PAMI_EAGAIN) {
                    pami_context_wait(g->ctx, 0);
                    stall_check(&st);
                }
            } else {
                while ((rc = pami_send_immediate(g->ctx, &s)) == PAMI_EAGAIN) {
                    pami_context_advance(g->ctx, 1);
                    stall_check(&st);
                }
            }
            bench_check(rc, "pami_send_immediate");
        }
    }
    stall_t st;
    stall_init(&st, "burst_oversub receive");
    if (wait)
        st.mask = 0; /* each round may sleep */
    while (burst_in < want) {
        if (wait)
            pami_context_wait(g->ctx, 100);
        else
            pami_context_advance(g->ctx, 1);
        stall_check(&st);
    }
    sync_all(g);
    return bench_now() - t0;
}

void burst_oversub_run(group_t *g)
{
    const opts_t *o = g->opt;
    if (g->size < 2) {
        fprintf(stderr, "pami-bench: burst_oversub needs 2 tasks or more\n");
        return;
    }
    bench_check(pami_dispatch_set(g->ctx, ID_BURST, on_burst, NULL, NULL),
                "dispatch_set");
    bench_check(pami_dispatch_fence(g->client), "pami_dispatch_fence");
    pami_endpoint_t *eps = calloc(g->size, sizeof(*eps));
    if (eps == NULL)
        bench_die("out of memory");
    for (size_t t = 0; t < g->size; t++)
        bench_check(pami_endpoint_create(g->client, (pami_task_t)t, 0,
                                         &eps[t]), "pami_endpoint_create");
    /* --iters: messages each task sends per burst (default 100 000).
     * On two cores 20 000 took 8-15 ms, a few scheduler slices: which
     * task another process or a late barrier exit stalled decided the
     * ratio more than the loops did (PERFORMANCE.md, "burst_oversub
     * (s12)"). */
    size_t total    = o->iters > 0 ? (size_t)o->iters : 100000;
    size_t per_peer = (total + g->size - 2) / (g->size - 1);
    size_t warm     = o->warmup >= 0 ? (size_t)o->warmup : per_peer / 10;
    size_t sent     = per_peer * (g->size - 1);
    if (warm > 0) {
        burst(g, eps, warm, false);
        burst(g, eps, warm, true);
    }
    double as[64], ws[64];
    for (unsigned r = 0; r < o->reps; r++) {
        /* Alternate which goes first, as the other lines do. */
        bool first_wait = r % 2 == 1;
        double a, w;
        if (first_wait) {
            w = burst(g, eps, per_peer, true);
            a = burst(g, eps, per_peer, false);
        } else {
            a = burst(g, eps, per_peer, false);
            w = burst(g, eps, per_peer, true);
        }
        as[r] = a > 0 ? (double)sent / a : -1;
        ws[r] = w > 0 ? (double)sent / w : -1;
    }
    free(eps);
    if (g->me != 0)
        return;
    summary_t sa = summarize(as, o->reps);
    summary_t sw = summarize(ws, o->reps);
    bool ok = sa.valid && sw.valid && sw.median > 0;
    if (o->json) {
        printf("{\"test\": \"burst_oversub\", \"ranks\": %zu, "
               "\"advance_msgs_per_s\": %.6g, \"wait_msgs_per_s\": %.6g, "
               "\"ratio\": %.6g}\n", g->size, sa.median, sw.median,
               ok ? sa.median / sw.median : 0);
    } else {
        printf("burst_oversub: %zu ranks, %zu messages per task per burst, "
               "median of %u\n", g->size, sent, o->reps);
        printf("  advance retry %12.0f msgs/s per task [%.0f .. %.0f]\n",
               sa.median, sa.min, sa.max);
        printf("  wait retry    %12.0f msgs/s per task [%.0f .. %.0f]\n",
               sw.median, sw.min, sw.max);
        printf("  ratio advance / wait %.3f\n",
               ok ? sa.median / sw.median : 0);
    }
    fflush(stdout);
}

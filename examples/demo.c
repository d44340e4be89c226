/*
 * The demo job (make demo): a ring of immediate sends, a ping-pong for
 * latency, and a burst of 100 000 messages per rank counted exactly at the
 * receivers. Rank 0 prints what was done and how long each part took.
 *
 *   pamirun -n 4 ./demo
 */
#include <pami.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ID_RING = 1, ID_PING = 2, ID_BURST = 3, ID_REPORT = 4 };

#define RING_LAPS     1000
#define PINGPONG_ITER 10000
#define BURST         100000

typedef struct {
    pami_client_t  client;
    pami_context_t ctx;
    pami_task_t    me;
    size_t         size;
    /* ring */
    uint64_t       token;
    int            token_here;
    /* ping-pong */
    uint64_t       pings;
    uint64_t       pongs;
    /* burst */
    uint64_t       burst_count;
    uint64_t       burst_next_seq;
    uint64_t       burst_out_of_order;
    /* reports gathered on rank 0 */
    uint64_t       reports;
    uint64_t       reported_total;
    uint64_t       reported_bad;
} demo_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(pami_result_t rc, const char *what)
{
    if (rc != PAMI_SUCCESS) {
        fprintf(stderr, "demo: %s: %s\n", what, pami_error_text(rc));
        exit(1);
    }
}

static pami_endpoint_t ep_of(demo_t *d, pami_task_t task)
{
    pami_endpoint_t ep;
    check(pami_endpoint_create(d->client, task, 0, &ep), "endpoint");
    return ep;
}

/* Immediate send, advancing while the transport is busy. Safe from a
 * handler too: there we cannot advance, so EAGAIN falls back to a send
 * whose header pami copies. */
static void send_imm(demo_t *d, pami_task_t to, size_t id, const void *hdr,
                     size_t len, int in_handler)
{
    pami_send_immediate_t s = {.dest = ep_of(d, to), .dispatch = id,
                               .header = hdr, .header_len = len};
    pami_result_t rc;
    unsigned tries = 0;
    while ((rc = pami_send_immediate(d->ctx, &s)) == PAMI_EAGAIN) {
        if (in_handler) {
            pami_send_t full = {.send = s};
            rc = pami_send(d->ctx, &full);
            break;
        }
        /* The receiver is behind: poll a little, then give it the CPU
         * (more ranks than cores) instead of spinning. */
        if (++tries < 64)
            pami_context_advance(d->ctx, 1);
        else
            pami_context_wait(d->ctx, 1);
    }
    check(rc, "send");
}

static void wait_until(demo_t *d, const uint64_t *value, uint64_t target)
{
    while (*value < target) {
        pami_result_t rc = pami_context_wait(d->ctx, 30000);
        if (rc == PAMI_TIMEOUT) {
            fprintf(stderr, "demo: task %u waited 30 s for progress\n", d->me);
            exit(1);
        }
    }
}

/* ---- handlers ---- */

static void on_ring(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)origin; (void)recv;
    demo_t *d = cookie;
    if (hlen != sizeof(uint64_t))
        return;
    memcpy(&d->token, hdr, sizeof(d->token));
    d->token_here++;
    /* Everybody but rank 0 passes the token on at once, from the handler. */
    if (d->me != 0) {
        uint64_t next = d->token + 1;
        send_imm(d, (d->me + 1) % (pami_task_t)d->size, ID_RING, &next,
                 sizeof(next), 1);
    }
}

static void on_ping(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)recv;
    demo_t *d = cookie;
    pami_task_t from;
    pami_endpoint_query(origin, &from, NULL);
    if (d->me == 1) {
        d->pings++;
        send_imm(d, from, ID_PING, hdr, hlen, 1);
    } else
        d->pongs++;
}

static void on_burst(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)origin; (void)recv;
    demo_t *d = cookie;
    uint64_t seq;
    if (hlen != sizeof(seq)) {
        d->burst_out_of_order++;
        return;
    }
    memcpy(&seq, hdr, sizeof(seq));
    if (seq != d->burst_next_seq)
        d->burst_out_of_order++;
    d->burst_next_seq = seq + 1;
    d->burst_count++;
}

static void on_report(pami_context_t ctx, void *cookie, const void *hdr,
                      size_t hlen, const void *data, size_t dlen,
                      pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)origin; (void)recv;
    demo_t *d = cookie;
    uint64_t r[2];
    if (hlen != sizeof(r))
        return;
    memcpy(r, hdr, sizeof(r));
    d->reported_total += r[0];
    d->reported_bad   += r[1];
    d->reports++;
}

/* ---- phases ---- */

static double ring(demo_t *d)
{
    double t0 = now();
    if (d->me == 0) {
        for (int lap = 0; lap < RING_LAPS; lap++) {
            uint64_t token = (uint64_t)lap * d->size;
            send_imm(d, 1 % (pami_task_t)d->size, ID_RING, &token,
                     sizeof(token), 0);
            while (d->token_here < lap + 1)
                pami_context_wait(d->ctx, 30000);
            /* Every rank added one on the way around. */
            if (d->token != token + d->size - 1) {
                fprintf(stderr, "demo: ring token %llu, expected %llu\n",
                        (unsigned long long)d->token,
                        (unsigned long long)(token + d->size - 1));
                exit(1);
            }
        }
    } else {
        while (d->token_here < RING_LAPS)
            pami_context_wait(d->ctx, 30000);
    }
    return now() - t0;
}

static double pingpong(demo_t *d)
{
    double t0 = now();
    if (d->me == 0) {
        uint64_t payload = 42;
        for (uint64_t i = 0; i < PINGPONG_ITER; i++) {
            send_imm(d, 1, ID_PING, &payload, sizeof(payload), 0);
            wait_until(d, &d->pongs, i + 1);
        }
    } else if (d->me == 1) {
        wait_until(d, &d->pings, PINGPONG_ITER);
    }
    return now() - t0;
}

static double burst(demo_t *d)
{
    pami_task_t to = (d->me + 1) % (pami_task_t)d->size;
    double t0 = now();
    for (uint64_t seq = 0; seq < BURST; seq++)
        send_imm(d, to, ID_BURST, &seq, sizeof(seq), 0);
    wait_until(d, &d->burst_count, BURST);
    return now() - t0;
}

int main(void)
{
    demo_t d = {0};
    check(pami_client_create("demo", NULL, &d.client), "client_create");
    pami_client_attr_t attr = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                             PAMI_CLIENT_ATTR_SIZE};
    check(pami_client_query(d.client, &attr), "client_query");
    d.me   = attr.task;
    d.size = attr.size;
    if (d.size < 2) {
        fprintf(stderr, "demo: run it with at least 2 tasks: pamirun -n 4\n");
        return 1;
    }
    check(pami_context_createv(d.client, NULL, 1, &d.ctx), "context_createv");
    check(pami_dispatch_set(d.ctx, ID_RING, on_ring, &d, NULL), "dispatch");
    check(pami_dispatch_set(d.ctx, ID_PING, on_ping, &d, NULL), "dispatch");
    check(pami_dispatch_set(d.ctx, ID_BURST, on_burst, &d, NULL), "dispatch");
    check(pami_dispatch_set(d.ctx, ID_REPORT, on_report, &d, NULL), "dispatch");
    check(pami_dispatch_fence(d.client), "dispatch_fence");

    double t_ring = ring(&d);
    check(pami_dispatch_fence(d.client), "fence");
    double t_pp = pingpong(&d);
    check(pami_dispatch_fence(d.client), "fence");
    double t_burst = burst(&d);

    uint64_t report[2] = {d.burst_count, d.burst_out_of_order};
    send_imm(&d, 0, ID_REPORT, report, sizeof(report), 0);
    if (d.me == 0)
        wait_until(&d, &d.reports, d.size);
    check(pami_dispatch_fence(d.client), "fence");

    int ok = 1;
    if (d.me == 0) {
        uint64_t expect = (uint64_t)BURST * d.size;
        ok = d.reported_total == expect && d.reported_bad == 0;
        printf("pami demo: %zu tasks\n", d.size);
        printf("%-10s %-40s %10s %14s\n", "part", "what", "time", "figure");
        printf("%-10s %-40s %8.3f s %9.2f us/hop\n", "ring",
               "1000 laps of an immediate-send token", t_ring,
               t_ring * 1e6 / (RING_LAPS * (double)d.size));
        printf("%-10s %-40s %8.3f s %9.2f us\n", "ping-pong",
               "10000 round trips 0<->1, 8 B, half RTT", t_pp,
               t_pp * 1e6 / (2.0 * PINGPONG_ITER));
        printf("%-10s %-40s %8.3f s %9.0f msg/s\n", "burst",
               "100000 msgs per task to the next task", t_burst,
               (double)BURST / t_burst);
        printf("%-10s received %llu of %llu, %llu out of order: %s\n",
               "check", (unsigned long long)d.reported_total,
               (unsigned long long)expect,
               (unsigned long long)d.reported_bad, ok ? "ok" : "FAILED");
    }
    check(pami_client_destroy(&d.client), "client_destroy");
    return ok ? 0 : 1;
}

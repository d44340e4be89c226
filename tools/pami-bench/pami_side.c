/*
 * The patterns written on pami. Task 0 runs them (pami_side_run); task 1
 * answers from its handlers while main.c's server loop advances it. Both
 * poll with pami_context_advance(ctx, 1) during a measurement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- waiting ---- */

static inline void wait_for(bench_t *b, volatile uint64_t *v, uint64_t target,
                            const char *what)
{
    stall_t s;
    stall_init(&s, what);
    while (*v < target) {
        pami_context_advance(b->ctx, 1);
        stall_check(&s);
    }
}

static inline void send_imm(bench_t *b, size_t id, const void *data,
                            size_t len)
{
    pami_send_immediate_t s = {.dest = b->peer, .dispatch = id,
                               .data = data, .data_len = len};
    pami_result_t rc;
    stall_t st;
    stall_init(&st, "pami_send_immediate");
    while ((rc = pami_send_immediate(b->ctx, &s)) == PAMI_EAGAIN) {
        pami_context_advance(b->ctx, 1);
        stall_check(&st);
    }
    bench_check(rc, "pami_send_immediate");
}

/* From a handler pami cannot be advanced: when an immediate send finds
 * no room, pami_send queues it (it copies the header; the data is one of
 * our buffers, valid until the end). */
static void reply(bench_t *b, pami_endpoint_t to, size_t id, const void *data,
                  size_t len)
{
    pami_send_t s = {.send = {.dest = to, .dispatch = id, .data = data,
                              .data_len = len}};
    pami_result_t rc = pami_send_immediate(b->ctx, &s.send);
    if (rc == PAMI_EAGAIN)
        rc = pami_send(b->ctx, &s);
    bench_check(rc, "reply from a handler");
}

static void count_done(pami_context_t ctx, void *cookie, pami_result_t result)
{
    (void)ctx;
    bench_check(result, "completion");
    (*(volatile uint64_t *)cookie)++;
}

/* ---- handlers ---- */

static void on_ctrl(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)data; (void)dlen; (void)origin; (void)recv;
    bench_t   *b = cookie;
    ctrl_msg_t m;
    if (hlen != sizeof(m))
        bench_die("control message of %zu bytes", hlen);
    memcpy(&m, hdr, sizeof(m));
    b->last_cmd = bench_now();
    if (m.op == CTRL_QUIT) {
        b->mode = MODE_QUIT;
        return;
    }
    if (m.op == CTRL_FLOOR) {
        if (b->floor == NULL)
            bench_die("floor requested without a floor mapping");
        b->mode = MODE_FLOOR;
        return;
    }
    if (m.test >= T_P2P_COUNT || m.bytes > b->buf_bytes || m.window == 0)
        bench_die("bad control message (test %u, %llu bytes, window %llu)",
                  m.test, (unsigned long long)m.bytes,
                  (unsigned long long)m.window);
    b->serve = (plan_t){.test = (test_id_t)m.test, .bytes = m.bytes,
                        .window = m.window};
    b->pami_cnt.received = 0;
    if (m.op == CTRL_ENTER_UCX)
        b->mode = MODE_UCX_ENTER;
}

static void on_ping(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)hdr; (void)hlen; (void)data; (void)recv;
    bench_t *b = cookie;
    if (b->me == 0)
        b->pami_cnt.replies++;
    else
        reply(b, origin, ID_PING, b->sbuf, dlen);
}

/* Task 1: one more message is in; every window answers with an ack. */
static void landed(bench_t *b, pami_endpoint_t origin)
{
    if (++b->pami_cnt.received % b->serve.window == 0)
        reply(b, origin, ID_ACK, NULL, 0);
}

static void on_rate(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)hdr; (void)hlen; (void)data; (void)dlen; (void)recv;
    landed(cookie, origin);
}

static void on_ack(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)hdr; (void)hlen; (void)data; (void)dlen; (void)origin;
    (void)recv;
    bench_t *b = cookie;
    b->pami_cnt.acks++;
}

/* A large payload landed in rbuf; the origin travels in the cookie. */
static void data_landed(pami_context_t ctx, void *cookie, pami_result_t result)
{
    (void)ctx;
    bench_t *b = cookie;
    bench_check(result, "receive of a large payload");
    landed(b, b->peer);
}

static void on_data(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)hdr; (void)hlen;
    bench_t *b = cookie;
    if (dlen > b->buf_bytes)
        bench_die("payload of %zu bytes is larger than the buffer", dlen);
    if (data != NULL) {
        memcpy(b->rbuf, data, dlen);
        landed(b, origin);
    } else if (recv != NULL) {
        recv->addr     = b->rbuf;
        recv->local_fn = data_landed;
        recv->cookie   = b;
    } else {
        landed(b, origin);
    }
}

/* Setup blobs (UCP addresses, regions, the floor's handshake), queued in
 * arrival order: the peer may send its next blob as soon as it has ours,
 * before we took its previous one (pami keeps a pair's order). */
typedef struct blob {
    struct blob *next;
    void        *data;
    size_t       len;
    volatile int here;
} blob_t;

static struct {
    blob_t  *head, **tail;
    volatile uint64_t sent;
} boot = {.tail = &boot.head};

static void boot_landed(pami_context_t ctx, void *cookie, pami_result_t result)
{
    (void)ctx;
    bench_check(result, "setup exchange");
    ((blob_t *)cookie)->here = 1;
}

static void on_boot(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)origin;
    blob_t *bl = calloc(1, sizeof(*bl));
    if (bl == NULL || (bl->data = malloc(dlen ? dlen : 1)) == NULL)
        bench_die("out of memory");
    bl->len    = dlen;
    *boot.tail = bl;
    boot.tail  = &bl->next;
    if (data != NULL || dlen == 0) {
        memcpy(bl->data, data, dlen);
        bl->here = 1;
    } else {
        recv->addr     = bl->data;
        recv->local_fn = boot_landed;
        recv->cookie   = bl;
    }
}

void pami_side_register(bench_t *b)
{
    bench_check(pami_dispatch_set(b->ctx, ID_CTRL, on_ctrl, b, NULL),
                "dispatch_set");
    bench_check(pami_dispatch_set(b->ctx, ID_PING, on_ping, b, NULL),
                "dispatch_set");
    bench_check(pami_dispatch_set(b->ctx, ID_RATE, on_rate, b, NULL),
                "dispatch_set");
    bench_check(pami_dispatch_set(b->ctx, ID_ACK, on_ack, b, NULL),
                "dispatch_set");
    bench_check(pami_dispatch_set(b->ctx, ID_DATA, on_data, b, NULL),
                "dispatch_set");
    bench_check(pami_dispatch_set(b->ctx, ID_BOOT, on_boot, b, NULL),
                "dispatch_set");
}

void *pami_side_exchange(bench_t *b, const void *blob, size_t len,
                         size_t *peer_len, void (*poll)(void *arg),
                         void *arg)
{
    uint64_t sent = boot.sent;
    pami_send_t s = {.send = {.dest = b->peer, .dispatch = ID_BOOT,
                              .data = blob, .data_len = len},
                     .local_fn = count_done, .cookie = (void *)&boot.sent};
    bench_check(pami_send(b->ctx, &s), "pami_send of a setup blob");
    stall_t st;
    stall_init(&st, "setup exchange");
    st.mask = 0; /* this loop may sleep */
    while (boot.sent == sent || boot.head == NULL || !boot.head->here) {
        if (poll != NULL) {
            pami_context_advance(b->ctx, 1);
            poll(arg);
        } else {
            pami_context_wait(b->ctx, 100);
        }
        stall_check(&st);
    }
    blob_t *bl = boot.head;
    boot.head  = bl->next;
    if (boot.head == NULL)
        boot.tail = &boot.head;
    void *got = bl->data;
    *peer_len = bl->len;
    free(bl);
    return got;
}

void pami_side_ctrl(bench_t *b, uint32_t op, const plan_t *plan)
{
    ctrl_msg_t m = {.op = op};
    if (plan != NULL) {
        m.test   = plan->test;
        m.bytes  = plan->bytes;
        m.window = plan->window;
    }
    pami_send_immediate_t s = {.dest = b->peer, .dispatch = ID_CTRL,
                               .header = &m, .header_len = sizeof(m)};
    pami_result_t rc;
    while ((rc = pami_send_immediate(b->ctx, &s)) == PAMI_EAGAIN)
        pami_context_advance(b->ctx, 1);
    bench_check(rc, "control message");
    /* A send that follows another since the last progress may wait in
     * the context's list (send_gather.c): one progress call sends it, as
     * task 0 may now wait outside pami (the floor, UCX) for the peer to
     * act on it. */
    pami_context_advance(b->ctx, 1);
}

/* ---- the patterns (task 0) ---- */

static double run_am_lat(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t base = c->replies;
    double   t0   = bench_now();
    for (size_t i = 0; i < p->warm_ops + p->ops; i++) {
        if (i == p->warm_ops)
            t0 = bench_now();
        send_imm(b, ID_PING, b->sbuf, p->bytes);
        wait_for(b, &c->replies, base + i + 1, "am_lat reply");
    }
    return bench_now() - t0;
}

static double run_am_rate(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t base = c->acks;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    double   t0   = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            send_imm(b, ID_RATE, b->sbuf, p->bytes);
        wait_for(b, &c->acks, base + w + 1, "am_rate ack");
    }
    return bench_now() - t0;
}

static double run_send_bw(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t acks = c->acks, done = c->done;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    pami_send_t s = {.send = {.dest = b->peer, .dispatch = ID_DATA,
                              .data = b->sbuf, .data_len = p->bytes},
                     .local_fn = count_done, .cookie = (void *)&c->done};
    double t0 = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            bench_check(pami_send(b->ctx, &s), "pami_send");
        wait_for(b, &c->acks, acks + w + 1, "send_bw ack");
    }
    wait_for(b, &c->done, done + n * p->window, "send_bw local completion");
    return bench_now() - t0;
}

static double run_put_lat(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t base = c->done;
    int      now  = 0;
    pami_rma_t r = {.dest = b->peer, .local = b->sbuf, .bytes = p->bytes,
                    .remote_mr = p->test == T_PUT_LAT_SHM ? &b->peer_shm_mr
                                                          : &b->peer_mr,
                    .remote_fn = count_done,
                    .cookie = (void *)&c->done, .completed = &now};
    double t0 = bench_now();
    for (size_t i = 0; i < p->warm_ops + p->ops; i++) {
        if (i == p->warm_ops)
            t0 = bench_now();
        bench_check(pami_put(b->ctx, &r), "pami_put");
        /* As a runtime would: wait only for what did not complete in
         * the call (done counts those too, for the check below). */
        if (now)
            c->done++;
        else
            wait_for(b, &c->done, base + i + 1, "put_lat remote completion");
    }
    return bench_now() - t0;
}

static double run_put_bw(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t base = c->done;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    pami_rma_t r = {.dest = b->peer, .local = b->sbuf, .bytes = p->bytes,
                    .remote_mr = &b->peer_mr};
    double t0 = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            bench_check(pami_put(b->ctx, &r), "pami_put");
        bench_check(pami_fence_endpoint(b->ctx, b->peer, count_done,
                                        (void *)&c->done),
                    "pami_fence_endpoint");
        wait_for(b, &c->done, base + w + 1, "put_bw fence");
    }
    return bench_now() - t0;
}

static double run_get_bw(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t base = c->done;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    pami_rma_t r = {.dest = b->peer, .local = b->rbuf, .bytes = p->bytes,
                    .remote_mr = &b->peer_mr, .local_fn = count_done,
                    .cookie = (void *)&c->done};
    double t0 = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            bench_check(pami_get(b->ctx, &r), "pami_get");
        wait_for(b, &c->done, base + (w + 1) * p->window, "get_bw completion");
    }
    return bench_now() - t0;
}

static double run_rmw_lat(bench_t *b, const plan_t *p)
{
    counters_t *c = &b->pami_cnt;
    uint64_t base = c->done;
    int      now  = 0;
    pami_rmw_t r = {.dest = b->peer,
                    .remote_mr = p->test == T_RMW_LAT_SHM ? &b->peer_shm_mr
                                                          : &b->peer_mr,
                    .op = PAMI_RMW_FETCH_ADD, .size = sizeof(uint64_t),
                    .value = 1, .result = &b->fetch, .done_fn = count_done,
                    .cookie = (void *)&c->done, .completed = &now};
    double t0 = bench_now();
    for (size_t i = 0; i < p->warm_ops + p->ops; i++) {
        if (i == p->warm_ops)
            t0 = bench_now();
        bench_check(pami_rmw(b->ctx, &r), "pami_rmw");
        if (now)
            c->done++;
        else
            wait_for(b, &c->done, base + i + 1, "rmw_lat completion");
    }
    return bench_now() - t0;
}

double pami_side_run(bench_t *b, const plan_t *p)
{
    bool rma = p->test == T_PUT_LAT || p->test == T_PUT_BW ||
               p->test == T_GET_BW || p->test == T_RMW_LAT;
    if (rma && !b->have_rma)
        return -1;
    bool shm = p->test == T_PUT_LAT_SHM || p->test == T_RMW_LAT_SHM;
    if (shm && !b->have_shm)
        return -1;
    pami_side_ctrl(b, CTRL_SETUP, p);
    switch (p->test) {
    case T_AM_LAT:  return run_am_lat(b, p);
    case T_AM_RATE: return run_am_rate(b, p);
    case T_SEND_BW: return run_send_bw(b, p);
    case T_PUT_LAT: return run_put_lat(b, p);
    case T_PUT_BW:  return run_put_bw(b, p);
    case T_GET_BW:  return run_get_bw(b, p);
    case T_RMW_LAT: return run_rmw_lat(b, p);
    case T_PUT_LAT_SHM: return run_put_lat(b, p);
    case T_RMW_LAT_SHM: return run_rmw_lat(b, p);
    default:        return -1;
    }
}

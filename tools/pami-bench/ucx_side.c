/*
 * The same patterns written directly on UCP, as a program without pami
 * would: its own ucp_context and ucp_worker in this process, endpoints
 * without error handling (as pami's traffic endpoints), worker addresses
 * and the remote key of task 1's rbuf exchanged through pami active
 * messages. Both tasks poll with ucp_worker_progress during a
 * measurement; pami is not advanced meanwhile.
 *
 *   am_lat    ucp_am_send_nbx ping-pong, reply sent from the AM handler
 *   am_rate   windows of ucp_am_send_nbx, an ack per window
 *   send_bw   windows of ucp_am_send_nbx (UCP's own protocol choice:
 *             eager, or rendezvous received with ucp_am_recv_data_nbx
 *             into the preallocated buffer), an ack per window
 *   send_bw_get  windows of ucp_get_nbx of the same sizes
 *   put_lat   ucp_put_nbx + ucp_ep_flush_nbx, one at a time
 *   put_bw    windows of ucp_put_nbx, then ucp_ep_flush_nbx
 *   get_bw    windows of ucp_get_nbx, each with a completion callback
 *   rmw_lat   ucp_atomic_op_nbx fetch-add (64-bit), one at a time
 *   put_lat_shm, rmw_lat_shm  put_lat and rmw_lat on a page task 1
 *             allocated with ucp_mem_map(UCP_MEM_MAP_ALLOCATE), which UCX
 *             may place where its shared-memory transports reach it; the
 *             private variant runs them on rbuf, as put_lat and rmw_lat
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "bench.h"

enum { U_CTRL = 1, U_PING = 2, U_RATE = 3, U_ACK = 4, U_DATA = 5 };
enum { UCTRL_SETUP = 1, UCTRL_READY = 2, UCTRL_LEAVE = 3 };

struct ucx_side {
    bench_t       *b;
    ucp_context_h  ucp;
    ucp_worker_h   worker;
    ucp_address_t *addr;
    size_t         addr_len;
    ucp_mem_h      memh;      /* our rbuf */
    void          *rkey_buf;
    size_t         rkey_len;
    ucp_ep_h       ep;
    ucp_rkey_h     peer_rkey; /* the peer's rbuf */
    uint64_t       peer_rbuf;
    ucp_mem_h      shm_memh;  /* our page UCP allocated */
    void          *shm_rkey_buf;
    size_t         shm_rkey_len;
    uint64_t       shm_addr;
    ucp_rkey_h     peer_shm_rkey; /* the peer's such page */
    uint64_t       peer_shm;
    volatile int   ready;     /* task 0: task 1 polls UCP now */
    counters_t     cnt;
};

/* What travels through pami at connect time, followed by the worker
 * address and the packed remote key. */
typedef struct {
    uint64_t addr_len;
    uint64_t rkey_len;
    uint64_t rbuf;
    uint64_t shm_rkey_len; /* its packed key follows rbuf's */
    uint64_t shm;
} ucx_card_t;

#define UCX_SHM_BYTES 4096

static void die_status(const char *what, ucs_status_t status)
{
    bench_die("%s: %s", what, ucs_status_string(status));
}

/* ---- sends and waits ---- */

static inline void wait_for(ucx_side_t *u, volatile uint64_t *v,
                            uint64_t target, const char *what)
{
    stall_t s;
    stall_init(&s, what);
    while (*v < target) {
        ucp_worker_progress(u->worker);
        stall_check(&s);
    }
}

static void count_sent(void *request, ucs_status_t status, void *user_data)
{
    if (status != UCS_OK)
        die_status("UCP completion", status);
    (*(volatile uint64_t *)user_data)++;
    ucp_request_free(request);
}

/* Completes through the counter: now if UCP finished at once, else from
 * the callback. */
static inline void counted(ucs_status_ptr_t sp, volatile uint64_t *counter,
                           const char *what)
{
    if (sp == NULL)
        (*counter)++;
    else if (UCS_PTR_IS_ERR(sp))
        die_status(what, UCS_PTR_STATUS(sp));
}

/* A send nobody waits for: the request, if any, goes back to UCP, which
 * completes it on its own. The buffers are ours for the whole run. */
static inline void released(ucs_status_ptr_t sp, const char *what)
{
    if (UCS_PTR_IS_ERR(sp))
        die_status(what, UCS_PTR_STATUS(sp));
    if (sp != NULL)
        ucp_request_free(sp);
}

static inline ucp_request_param_t counting(volatile uint64_t *counter)
{
    return (ucp_request_param_t){
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send      = count_sent,
        .user_data    = (void *)counter,
    };
}

/* Waits until one request is done; for control traffic, whose header
 * lives on the caller's stack. */
static void complete(ucx_side_t *u, ucs_status_ptr_t sp, const char *what)
{
    if (sp == NULL)
        return;
    if (UCS_PTR_IS_ERR(sp))
        die_status(what, UCS_PTR_STATUS(sp));
    stall_t s;
    stall_init(&s, what);
    ucs_status_t status;
    while ((status = ucp_request_check_status(sp)) == UCS_INPROGRESS) {
        ucp_worker_progress(u->worker);
        stall_check(&s);
    }
    ucp_request_free(sp);
    if (status != UCS_OK)
        die_status(what, status);
}

static void send_ctrl(ucx_side_t *u, uint32_t op, const plan_t *plan)
{
    ctrl_msg_t m = {.op = op};
    if (plan != NULL) {
        m.test   = plan->test;
        m.bytes  = plan->bytes;
        m.window = plan->window;
    }
    ucp_request_param_t p = {.op_attr_mask = 0};
    complete(u, ucp_am_send_nbx(u->ep, U_CTRL, &m, sizeof(m), NULL, 0, &p),
             "UCP control message");
}

static inline void am_send(ucx_side_t *u, unsigned id, const void *data,
                           size_t len)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    released(ucp_am_send_nbx(u->ep, id, NULL, 0, data, len, &p),
             "ucp_am_send_nbx");
}

/* ---- handlers ---- */

static ucs_status_t on_ctrl(void *arg, const void *hdr, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param)
{
    (void)data; (void)len; (void)param;
    ucx_side_t *u = arg;
    bench_t    *b = u->b;
    ctrl_msg_t  m;
    if (hlen != sizeof(m))
        bench_die("UCP control message of %zu bytes", hlen);
    memcpy(&m, hdr, sizeof(m));
    b->last_cmd = bench_now();
    switch (m.op) {
    case UCTRL_READY:
        u->ready = 1;
        break;
    case UCTRL_LEAVE:
        b->mode = MODE_PAMI;
        break;
    case UCTRL_SETUP:
        if (m.test >= T_P2P_COUNT || m.bytes > b->buf_bytes || m.window == 0)
            bench_die("bad UCP control message");
        b->serve = (plan_t){.test = (test_id_t)m.test, .bytes = m.bytes,
                            .window = m.window};
        u->cnt.received = 0;
        break;
    default:
        bench_die("unknown UCP control message %u", m.op);
    }
    return UCS_OK;
}

static ucs_status_t on_ping(void *arg, const void *hdr, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param)
{
    (void)hdr; (void)hlen; (void)data; (void)param;
    ucx_side_t *u = arg;
    if (u->b->me == 0)
        u->cnt.replies++;
    else
        am_send(u, U_PING, u->b->sbuf, len);
    return UCS_OK;
}

static inline void landed(ucx_side_t *u)
{
    if (++u->cnt.received % u->b->serve.window == 0)
        am_send(u, U_ACK, NULL, 0);
}

static ucs_status_t on_rate(void *arg, const void *hdr, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param)
{
    (void)hdr; (void)hlen; (void)data; (void)len; (void)param;
    landed(arg);
    return UCS_OK;
}

static ucs_status_t on_ack(void *arg, const void *hdr, size_t hlen,
                           void *data, size_t len,
                           const ucp_am_recv_param_t *param)
{
    (void)hdr; (void)hlen; (void)data; (void)len; (void)param;
    ucx_side_t *u = arg;
    u->cnt.acks++;
    return UCS_OK;
}

static void data_landed(void *request, ucs_status_t status, size_t length,
                        void *user_data)
{
    (void)length;
    if (status != UCS_OK)
        die_status("ucp_am_recv_data_nbx", status);
    ucp_request_free(request);
    landed(user_data);
}

static ucs_status_t on_data(void *arg, const void *hdr, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param)
{
    (void)hdr; (void)hlen;
    ucx_side_t *u = arg;
    bench_t    *b = u->b;
    if (len > b->buf_bytes)
        bench_die("UCP payload of %zu bytes is larger than the buffer", len);
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        memcpy(b->rbuf, data, len);
        landed(u);
        return UCS_OK;
    }
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.recv_am   = data_landed,
        .user_data    = u,
    };
    ucs_status_ptr_t sp = ucp_am_recv_data_nbx(u->worker, data, b->rbuf, len,
                                               &p);
    if (UCS_PTR_IS_ERR(sp))
        die_status("ucp_am_recv_data_nbx", UCS_PTR_STATUS(sp));
    if (sp == NULL)
        landed(u);
    return UCS_OK;
}

/* ---- setup and teardown ---- */

static void set_handler(ucx_side_t *u, unsigned id, ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id  = id,
        .cb  = cb,
        .arg = u,
    };
    ucs_status_t status = ucp_worker_set_am_recv_handler(u->worker, &hp);
    if (status != UCS_OK)
        die_status("ucp_worker_set_am_recv_handler", status);
}

ucx_side_t *ucx_side_create(bench_t *b)
{
    ucx_side_t *u = calloc(1, sizeof(*u));
    if (u == NULL)
        bench_die("out of memory");
    u->b = b;

    ucp_config_t *config;
    ucs_status_t  status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK)
        die_status("ucp_config_read", status);
    ucp_params_t cp = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
        .features   = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO64,
        .name       = "pami-bench",
    };
    status = ucp_init(&cp, config, &u->ucp);
    ucp_config_release(config);
    if (status != UCS_OK)
        die_status("ucp_init", status);

    ucp_worker_params_t wp = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    status = ucp_worker_create(u->ucp, &wp, &u->worker);
    if (status != UCS_OK)
        die_status("ucp_worker_create", status);
    status = ucp_worker_get_address(u->worker, &u->addr, &u->addr_len);
    if (status != UCS_OK)
        die_status("ucp_worker_get_address", status);

    set_handler(u, U_CTRL, on_ctrl);
    set_handler(u, U_PING, on_ping);
    set_handler(u, U_RATE, on_rate);
    set_handler(u, U_ACK, on_ack);
    set_handler(u, U_DATA, on_data);

    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address    = b->rbuf,
        .length     = b->buf_bytes,
    };
    status = ucp_mem_map(u->ucp, &mp, &u->memh);
    if (status != UCS_OK)
        die_status("ucp_mem_map", status);
    status = ucp_rkey_pack(u->ucp, u->memh, &u->rkey_buf, &u->rkey_len);
    if (status != UCS_OK)
        die_status("ucp_rkey_pack", status);

    ucp_mem_map_params_t ap = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                      UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .address    = NULL,
        .length     = UCX_SHM_BYTES,
        .flags      = UCP_MEM_MAP_ALLOCATE,
    };
    status = ucp_mem_map(u->ucp, &ap, &u->shm_memh);
    if (status != UCS_OK)
        die_status("ucp_mem_map(UCP_MEM_MAP_ALLOCATE)", status);
    ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    status = ucp_mem_query(u->shm_memh, &attr);
    if (status != UCS_OK)
        die_status("ucp_mem_query", status);
    u->shm_addr = (uint64_t)(uintptr_t)attr.address;
    memset(attr.address, 0, UCX_SHM_BYTES);
    status = ucp_rkey_pack(u->ucp, u->shm_memh, &u->shm_rkey_buf,
                           &u->shm_rkey_len);
    if (status != UCS_OK)
        die_status("ucp_rkey_pack", status);
    return u;
}

void ucx_side_connect(ucx_side_t *u, bench_t *b)
{
    size_t   len  = sizeof(ucx_card_t) + u->addr_len + u->rkey_len +
                    u->shm_rkey_len;
    uint8_t *card = malloc(len);
    if (card == NULL)
        bench_die("out of memory");
    ucx_card_t c = {.addr_len = u->addr_len, .rkey_len = u->rkey_len,
                    .rbuf = (uint64_t)(uintptr_t)b->rbuf,
                    .shm_rkey_len = u->shm_rkey_len, .shm = u->shm_addr};
    memcpy(card, &c, sizeof(c));
    memcpy(card + sizeof(c), u->addr, u->addr_len);
    memcpy(card + sizeof(c) + u->addr_len, u->rkey_buf, u->rkey_len);
    memcpy(card + sizeof(c) + u->addr_len + u->rkey_len, u->shm_rkey_buf,
           u->shm_rkey_len);

    size_t   peer_len;
    uint8_t *peer = pami_side_exchange(b, card, len, &peer_len, NULL, NULL);
    free(card);
    if (peer_len < sizeof(c))
        bench_die("malformed UCP card from the peer (%zu bytes)", peer_len);
    memcpy(&c, peer, sizeof(c));
    if (peer_len != sizeof(c) + c.addr_len + c.rkey_len + c.shm_rkey_len)
        bench_die("malformed UCP card from the peer (%zu bytes)", peer_len);

    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address    = (const ucp_address_t *)(peer + sizeof(c)),
        .err_mode   = UCP_ERR_HANDLING_MODE_NONE,
    };
    ucs_status_t status = ucp_ep_create(u->worker, &ep, &u->ep);
    if (status != UCS_OK)
        die_status("ucp_ep_create", status);
    status = ucp_ep_rkey_unpack(u->ep, peer + sizeof(c) + c.addr_len,
                                &u->peer_rkey);
    if (status != UCS_OK)
        die_status("ucp_ep_rkey_unpack", status);
    u->peer_rbuf = c.rbuf;
    status = ucp_ep_rkey_unpack(u->ep,
                                peer + sizeof(c) + c.addr_len + c.rkey_len,
                                &u->peer_shm_rkey);
    if (status != UCS_OK)
        die_status("ucp_ep_rkey_unpack", status);
    u->peer_shm = c.shm;
    free(peer);
}

static void progress_cb(void *arg)
{
    ucx_side_t *u = arg;
    ucp_worker_progress(u->worker);
}

void ucx_side_destroy(ucx_side_t *u, bench_t *b)
{
    if (u == NULL)
        return;
    ucp_rkey_destroy(u->peer_rkey);
    ucp_rkey_destroy(u->peer_shm_rkey);
    ucp_request_param_t p = {.op_attr_mask = 0};
    complete(u, ucp_ep_close_nbx(u->ep, &p), "ucp_ep_close_nbx");
    /* The peer's close may need this worker's progress: keep polling it
     * until both sides said they are closed. */
    char   mark = 1;
    size_t len;
    free(pami_side_exchange(b, &mark, sizeof(mark), &len, progress_cb, u));
    ucp_rkey_buffer_release(u->rkey_buf);
    ucp_mem_unmap(u->ucp, u->memh);
    ucp_rkey_buffer_release(u->shm_rkey_buf);
    ucp_mem_unmap(u->ucp, u->shm_memh);
    ucp_worker_release_address(u->worker, u->addr);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->ucp);
    free(u);
}

/* ---- switching task 1 between pami and UCP ---- */

void ucx_side_enter(ucx_side_t *u, bench_t *b, const plan_t *plan)
{
    pami_side_ctrl(b, CTRL_ENTER_UCX, plan);
    stall_t s;
    stall_init(&s, "task 1 entering UCP");
    while (!u->ready) {
        pami_context_advance(b->ctx, 1);
        ucp_worker_progress(u->worker);
        stall_check(&s);
    }
    u->ready = 0;
}

void ucx_side_leave(ucx_side_t *u, bench_t *b)
{
    (void)b;
    send_ctrl(u, UCTRL_LEAVE, NULL);
}

void ucx_side_serve(ucx_side_t *u, bench_t *b)
{
    send_ctrl(u, UCTRL_READY, NULL);
    b->mode = MODE_UCX;
    uint64_t n = 0;
    while (b->mode == MODE_UCX) {
        ucp_worker_progress(u->worker);
        if ((++n & 0xffff) == 0 && bench_now() - b->last_cmd > 2 * BENCH_STALL_S)
            bench_die("task 1 heard nothing for %.0f s", 2 * BENCH_STALL_S);
    }
}

/* ---- the patterns (task 0) ---- */

static double run_am_lat(ucx_side_t *u, const plan_t *p)
{
    counters_t *c = &u->cnt;
    uint64_t base = c->replies;
    double   t0   = bench_now();
    for (size_t i = 0; i < p->warm_ops + p->ops; i++) {
        if (i == p->warm_ops)
            t0 = bench_now();
        am_send(u, U_PING, u->b->sbuf, p->bytes);
        wait_for(u, &c->replies, base + i + 1, "UCP am_lat reply");
    }
    return bench_now() - t0;
}

static double run_am_rate(ucx_side_t *u, const plan_t *p)
{
    counters_t *c = &u->cnt;
    uint64_t base = c->acks;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    double   t0   = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            am_send(u, U_RATE, u->b->sbuf, p->bytes);
        wait_for(u, &c->acks, base + w + 1, "UCP am_rate ack");
    }
    return bench_now() - t0;
}

static double run_send_bw(ucx_side_t *u, const plan_t *p)
{
    counters_t *c = &u->cnt;
    uint64_t acks = c->acks, done = c->done;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    ucp_request_param_t rp = counting(&c->done);
    double t0 = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            counted(ucp_am_send_nbx(u->ep, U_DATA, NULL, 0, u->b->sbuf,
                                    p->bytes, &rp),
                    &c->done, "ucp_am_send_nbx");
        wait_for(u, &c->acks, acks + w + 1, "UCP send_bw ack");
    }
    wait_for(u, &c->done, done + n * p->window, "UCP send_bw completion");
    return bench_now() - t0;
}

/* Where put_lat and rmw_lat go: rbuf, or the page UCP allocated. */
static void lat_target(ucx_side_t *u, bool shm, uint64_t *addr,
                       ucp_rkey_h *rkey)
{
    *addr = shm ? u->peer_shm : u->peer_rbuf;
    *rkey = shm ? u->peer_shm_rkey : u->peer_rkey;
}

static double run_put_lat(ucx_side_t *u, const plan_t *p, bool shm)
{
    counters_t *c = &u->cnt;
    uint64_t base = c->done;
    uint64_t   raddr;
    ucp_rkey_h rkey;
    lat_target(u, shm, &raddr, &rkey);
    ucp_request_param_t none = {.op_attr_mask = 0};
    ucp_request_param_t rp   = counting(&c->done);
    double t0 = bench_now();
    for (size_t i = 0; i < p->warm_ops + p->ops; i++) {
        if (i == p->warm_ops)
            t0 = bench_now();
        released(ucp_put_nbx(u->ep, u->b->sbuf, p->bytes, raddr, rkey,
                             &none), "ucp_put_nbx");
        counted(ucp_ep_flush_nbx(u->ep, &rp), &c->done, "ucp_ep_flush_nbx");
        wait_for(u, &c->done, base + i + 1, "UCP put_lat flush");
    }
    return bench_now() - t0;
}

static double run_put_bw(ucx_side_t *u, const plan_t *p)
{
    counters_t *c = &u->cnt;
    uint64_t base = c->done;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    ucp_request_param_t none = {.op_attr_mask = 0};
    ucp_request_param_t rp   = counting(&c->done);
    double t0 = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            released(ucp_put_nbx(u->ep, u->b->sbuf, p->bytes, u->peer_rbuf,
                                 u->peer_rkey, &none), "ucp_put_nbx");
        counted(ucp_ep_flush_nbx(u->ep, &rp), &c->done, "ucp_ep_flush_nbx");
        wait_for(u, &c->done, base + w + 1, "UCP put_bw flush");
    }
    return bench_now() - t0;
}

static double run_get_bw(ucx_side_t *u, const plan_t *p)
{
    counters_t *c = &u->cnt;
    uint64_t base = c->done;
    size_t   warm = p->warm_ops / p->window;
    size_t   n    = warm + p->ops / p->window;
    ucp_request_param_t rp = counting(&c->done);
    double t0 = bench_now();
    for (size_t w = 0; w < n; w++) {
        if (w == warm)
            t0 = bench_now();
        for (size_t j = 0; j < p->window; j++)
            counted(ucp_get_nbx(u->ep, u->b->rbuf, p->bytes, u->peer_rbuf,
                                u->peer_rkey, &rp),
                    &c->done, "ucp_get_nbx");
        wait_for(u, &c->done, base + (w + 1) * p->window, "UCP get_bw");
    }
    return bench_now() - t0;
}

static double run_rmw_lat(ucx_side_t *u, const plan_t *p, bool shm)
{
    counters_t *c = &u->cnt;
    uint64_t base = c->done;
    uint64_t one  = 1;
    uint64_t   raddr;
    ucp_rkey_h rkey;
    lat_target(u, shm, &raddr, &rkey);
    ucp_request_param_t rp = counting(&c->done);
    rp.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE |
                       UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    rp.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    rp.reply_buffer = &u->b->fetch;
    double t0 = bench_now();
    for (size_t i = 0; i < p->warm_ops + p->ops; i++) {
        if (i == p->warm_ops)
            t0 = bench_now();
        counted(ucp_atomic_op_nbx(u->ep, UCP_ATOMIC_OP_ADD, &one, 1, raddr,
                                  rkey, &rp),
                &c->done, "ucp_atomic_op_nbx");
        wait_for(u, &c->done, base + i + 1, "UCP rmw_lat");
    }
    return bench_now() - t0;
}

double ucx_side_run(ucx_side_t *u, bench_t *b, const plan_t *p,
                    ucx_variant_t variant)
{
    (void)b;
    send_ctrl(u, UCTRL_SETUP, p);
    if (variant == UCX_GET_FOR_SEND)
        return run_get_bw(u, p);
    bool shm = variant != UCX_PRIVATE;
    switch (p->test) {
    case T_AM_LAT:  return run_am_lat(u, p);
    case T_AM_RATE: return run_am_rate(u, p);
    case T_SEND_BW: return run_send_bw(u, p);
    case T_PUT_LAT: return run_put_lat(u, p, false);
    case T_PUT_BW:  return run_put_bw(u, p);
    case T_GET_BW:  return run_get_bw(u, p);
    case T_RMW_LAT: return run_rmw_lat(u, p, false);
    case T_PUT_LAT_SHM: return run_put_lat(u, p, shm);
    case T_RMW_LAT_SHM: return run_rmw_lat(u, p, shm);
    default:        return -1;
    }
}

const char *ucx_side_op_name(test_id_t test, ucx_variant_t variant)
{
    if (variant == UCX_GET_FOR_SEND)
        return "ucp_get_nbx";
    switch (test) {
    case T_AM_LAT:
    case T_AM_RATE:
    case T_SEND_BW: return "ucp_am_send_nbx";
    case T_PUT_LAT: return "ucp_put_nbx+ucp_ep_flush_nbx";
    case T_PUT_BW:  return "ucp_put_nbx+ucp_ep_flush_nbx";
    case T_GET_BW:  return "ucp_get_nbx";
    case T_RMW_LAT: return "ucp_atomic_op_nbx";
    case T_PUT_LAT_SHM:
        return variant == UCX_PRIVATE
                   ? "ucp_put_nbx+ucp_ep_flush_nbx"
                   : "ucp_put_nbx+ucp_ep_flush_nbx (UCP_MEM_MAP_ALLOCATE)";
    case T_RMW_LAT_SHM:
        return variant == UCX_PRIVATE
                   ? "ucp_atomic_op_nbx"
                   : "ucp_atomic_op_nbx (UCP_MEM_MAP_ALLOCATE)";
    default:        return "?";
    }
}

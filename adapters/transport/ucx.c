/*
 * The UCX transport: UCP context, one worker per pami context, endpoints
 * from worker addresses, UCP active messages, wakeup through the worker's
 * event fd.
 */
#include "transport.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "log.h"

/* pami traffic uses one UCP AM id; the dispatch id travels in pami's own
 * header, so unknown ids can be counted instead of dropped inside UCX. */
#define TP_UCX_AM_ID 7

/* What pami holds of UCX, process-wide (remote keys carry no context).
 * LeakSanitizer cannot tell whose a UCX object is: UCX is built without
 * frame pointers, so every allocation of its own shows only ucs_malloc.
 * These counts tell instead whether pami gave back each endpoint, remote
 * key and registration it took, checked when the last UCP context goes. */
enum { HELD_CONTEXTS, HELD_EPS, HELD_RKEYS, HELD_MEMS, HELD_KINDS };
static long held[HELD_KINDS];

static inline void hold(int kind, long n)
{
    __atomic_add_fetch(&held[kind], n, __ATOMIC_RELAXED);
}

/* Anything still held when the last context goes is pami's leak (the
 * paths that leave a worker to UCX on purpose never come here): an error
 * line always, and in a sanitizer build an abort, as LeakSanitizer's own
 * report would be. */
static void check_held(void)
{
    long eps   = __atomic_load_n(&held[HELD_EPS], __ATOMIC_RELAXED);
    long rkeys = __atomic_load_n(&held[HELD_RKEYS], __ATOMIC_RELAXED);
    long mems  = __atomic_load_n(&held[HELD_MEMS], __ATOMIC_RELAXED);
    if (eps == 0 && rkeys == 0 && mems == 0)
        return;
    pami_error("ucx", "UCX objects never released: %ld endpoints, %ld "
                      "remote keys, %ld registrations", eps, rkeys, mems);
#if defined(__SANITIZE_ADDRESS__)
    abort();
#endif
}

struct tp_context {
    ucp_context_h ucp;
    int           thread_shared;
    bool          tcp; /* every transport to another node is TCP */
};

/* A small message to another node over TCP, copied into one buffer (see
 * am_send_packed): up to a 1 KiB payload behind pami's headers, where
 * one send of one buffer still cost less than UCX's sendmsg of its parts
 * (docs/performance-log.md, "Across nodes (s13)"). */
enum { PACK_MAX = 1088, PACK_OUT_MAX = 16 };

typedef struct pack_buf {
    struct pack_buf *next;
    tp_worker_t     *w;
    ucp_dt_iov_t     iov;
    uint8_t          bytes[PACK_MAX];
} pack_buf_t;

struct tp_worker {
    tp_context_t *ctx;
    ucp_worker_h  ucp;
    ucp_address_t *address;
    size_t        address_len;
    tp_am_fn      am_fn;
    void         *am_arg;
    pack_buf_t   *pack_free;
    unsigned      pack_out; /* buffers UCX still holds */
};

struct tp_ep {
    tp_worker_t    *worker;
    ucp_ep_h        ucp;
    tp_ep_error_fn  err_fn;
    void           *err_arg;
    bool            packed; /* small messages go by am_send_packed */
};

static int status_to_errno(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:                 return 0;
    case UCS_INPROGRESS:         return 1;
    case UCS_ERR_NO_RESOURCE:    return -EAGAIN;
    case UCS_ERR_BUSY:           return -EAGAIN;
    case UCS_ERR_NO_MEMORY:      return -ENOMEM;
    case UCS_ERR_INVALID_PARAM:  return -EINVAL;
    case UCS_ERR_CANCELED:       return -ECANCELED;
    case UCS_ERR_TIMED_OUT:      return -ETIMEDOUT;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:    return -ECONNRESET;
    default:                     return -EIO;
    }
}

static void collect_transports(tp_context_t *ctx, char *out, size_t size);

/* Sets UCX variable name unless the user set env. */
static void config_default(ucp_config_t *config, const char *env,
                           const char *name, const char *value)
{
    if (getenv(env) == NULL && ucp_config_modify(config, name, value) != UCS_OK)
        pami_warn("ucx", "cannot set UCX %s to %s", name, value);
}

/* Whether TCP is there and every transport that can reach another node is
 * TCP (the others listed only move data within a node). */
static bool network_is_tcp(tp_context_t *ctx)
{
    static const char *const local[] = {"self", "tcp", "sysv", "posix",
                                        "cma", "knem", "xpmem", "cuda_copy",
                                        "cuda_ipc", "rocm_copy", "rocm_ipc",
                                        "gdr_copy"};
    char list[256];
    collect_transports(ctx, list, sizeof(list));
    bool tcp = false;
    for (char *tl = strtok(list, ","); tl != NULL; tl = strtok(NULL, ",")) {
        bool known = false;
        for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
            known = known || strcmp(tl, local[i]) == 0;
        if (!known)
            return false;
        tcp = tcp || strcmp(tl, "tcp") == 0;
    }
    return tcp;
}

static ucs_status_t ucp_start(const tp_params_t *params, ucp_config_t *config,
                              ucp_context_h *out)
{
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_NAME,
        .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA |
                    UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64,
        .mt_workers_shared = params->thread_shared ? 1 : 0,
        .name = "pami",
    };
    if (params->estimated_eps > 0) {
        p.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
        p.estimated_num_eps = params->estimated_eps;
    }
    return ucp_init(&p, config, out);
}

static int ucx_init(const tp_params_t *params, tp_context_t **out)
{
    ucp_config_t *config;
    ucs_status_t  status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        pami_error("ucx", "ucp_config_read failed: %s",
                   ucs_status_string(status));
        return -EIO;
    }

    /* A dead peer whose socket UCX only writes to is noticed by keepalive
     * alone; UCX's default period is long. The user's setting wins. */
    bool keepalive = params->keepalive_ms > 0;
    if (keepalive) {
        char value[32];
        snprintf(value, sizeof(value), "%ums", params->keepalive_ms);
        config_default(config, "UCX_KEEPALIVE_INTERVAL", "KEEPALIVE_INTERVAL",
                       value);
    }

    /* By its name in the posix table ("POSIX_DIR" is refused there). */
    if (params->shm_dir != NULL)
        config_default(config, "UCX_POSIX_DIR", "DIR", params->shm_dir);
    /* UCX's SysV transport makes a segment (shmget) and marks it for
     * removal only after attaching it: a task killed in between leaves
     * the segment behind (seen in the fault suite), and launchers other
     * than pamirun do not look for it. posix does the same job in the
     * job's directory. */
    config_default(config, "UCX_TLS", "TLS", "^sysv");
    /* UCP's registration cache checks UCX's memory hooks at ucp_init by
     * making a private SysV segment and removing it after a detach: a
     * task that dies in between (a client created again and again)
     * leaves the page. The transports pami uses on one node or over TCP
     * register nothing worth caching; memory domains that pin memory
     * (InfiniBand) keep caches of their own. */
    config_default(config, "UCX_RCACHE_ENABLE", "RCACHE_ENABLE", "n");

    tp_context_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        ucp_config_release(config);
        return -ENOMEM;
    }
    status = ucp_start(params, config, &ctx->ucp);
    /* Over TCP, UCX's keepalive only writes to the socket: it sees no more
     * than TCP does, and the data it leaves unacknowledged keeps TCP's own
     * keepalive from ever probing, so a host that is gone (power, a cut
     * link) goes unnoticed for TCP's retransmission time (15 minutes).
     * When TCP is the only way to other nodes, that is left to TCP's
     * keepalive on the quiet connections (the monitors): after 1 s of
     * quiet, 3 probes a second apart. (UCX takes its TCP settings by their
     * names in its TCP table.) */
    /* UCX 1.13's TCP transport can complete a zero-copy send twice when
     * its endpoint fails with the send in flight (assertion `comp->count
     * > 0' in uct_iface.h, the process aborts: 4 of 20 runs of a node
     * dying mid-stream of 64 KiB-2 MiB messages): over TCP every message
     * goes by copy (docs/cluster.md). */
    if (status == UCS_OK && network_is_tcp(ctx)) {
        ucp_cleanup(ctx->ucp);
        if (keepalive && getenv("UCX_KEEPALIVE_INTERVAL") == NULL) {
            config_default(config, "UCX_KEEPALIVE_INTERVAL",
                           "KEEPALIVE_INTERVAL", "inf");
            config_default(config, "UCX_TCP_KEEPIDLE", "KEEPIDLE", "1s");
            config_default(config, "UCX_TCP_KEEPINTVL", "KEEPINTVL", "1s");
            config_default(config, "UCX_TCP_KEEPCNT", "KEEPCNT", "3");
        }
        config_default(config, "UCX_ZCOPY_THRESH", "ZCOPY_THRESH", "inf");
        /* By copy, UCX cuts a message into pieces of TX_SEG_SIZE (8 KiB
         * by default) and the receiver joins them again (one more copy):
         * each piece costs a send call and a header on both sides (5
         * system calls per 16 KiB message instead of 2). A piece is at
         * most RX_SEG_SIZE (64 KiB by default), so with 64 KiB a 64 KiB
         * payload behind pami's headers still left in two; 68 KiB holds
         * it (and an RTS's 1 KiB header) in one, which UCX then sends
         * from pami's buffer (its short path) without a copy. Pieces of
         * 260 KiB (a whole 256 KiB chunk) were slower from 256 KiB on
         * (docs/PERFORMANCE.md). Only when the user set neither size. */
        if (getenv("UCX_TCP_RX_SEG_SIZE") == NULL &&
            getenv("UCX_TCP_TX_SEG_SIZE") == NULL) {
            config_default(config, "UCX_TCP_RX_SEG_SIZE", "RX_SEG_SIZE",
                           "68K");
            config_default(config, "UCX_TCP_TX_SEG_SIZE", "TX_SEG_SIZE",
                           "68K");
        }
        status = ucp_start(params, config, &ctx->ucp);
        ctx->tcp = true;
    }
    ucp_config_release(config);
    if (status != UCS_OK) {
        pami_error("ucx", "ucp_init failed: %s", ucs_status_string(status));
        free(ctx);
        return status_to_errno(status);
    }
    ctx->thread_shared = params->thread_shared;
    hold(HELD_CONTEXTS, 1);
    *out = ctx;
    return 0;
}

static void ucx_fini(tp_context_t *ctx)
{
    if (ctx == NULL)
        return;
    ucp_cleanup(ctx->ucp);
    free(ctx);
    if (__atomic_sub_fetch(&held[HELD_CONTEXTS], 1, __ATOMIC_RELAXED) == 0)
        check_held();
}

/* UCX prints its transports only through a FILE; read them back from it. */
static void collect_transports(tp_context_t *ctx, char *out, size_t size)
{
    out[0] = '\0';
    char  *text = NULL;
    size_t len  = 0;
    FILE  *f    = open_memstream(&text, &len);
    if (f == NULL)
        return;
    ucp_context_print_info(ctx->ucp, f);
    fclose(f);

    size_t used = 0;
    for (char *line = strtok(text, "\n"); line != NULL;
         line = strtok(NULL, "\n")) {
        /* "#     resource 0  :  md 0  dev 0  flags -- self/memory" */
        if (strstr(line, "resource") == NULL)
            continue;
        char *tl = strrchr(line, ' ');
        if (tl == NULL)
            continue;
        tl++;
        char *slash = strchr(tl, '/');
        if (slash != NULL)
            *slash = '\0';
        if (*tl == '\0' || strstr(out, tl) != NULL)
            continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? "," : "", tl);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    free(text);
}

static int ucx_query(tp_context_t *ctx, tp_info_t *info)
{
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    snprintf(info->version, sizeof(info->version), "%u.%u.%u", major, minor,
             release);
    collect_transports(ctx, info->transports, sizeof(info->transports));
    return 0;
}

static ucs_status_t am_recv_cb(void *arg, const void *header,
                               size_t header_length, void *data,
                               size_t length, const ucp_am_recv_param_t *param)
{
    tp_worker_t *w = arg;
    void *desc = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ? data : NULL;
    w->am_fn(w->am_arg, header, header_length, desc ? NULL : data, length,
             desc);
    /* A rendezvous descriptor the callee did not take is handled by UCX:
     * returning UCS_OK without a receive completes the sender. */
    return UCS_OK;
}

static int ucx_worker_create(tp_context_t *ctx, const tp_worker_params_t *params,
                             tp_worker_t **out)
{
    tp_worker_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -ENOMEM;
    w->ctx    = ctx;
    w->am_fn  = params->am_fn;
    w->am_arg = params->am_arg;

    ucp_worker_params_t wp = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE |
                       UCP_WORKER_PARAM_FIELD_EVENTS,
        .thread_mode = ctx->thread_shared ? UCS_THREAD_MODE_SERIALIZED
                                          : UCS_THREAD_MODE_SINGLE,
        .events      = UCP_WAKEUP_RX | UCP_WAKEUP_TX | UCP_WAKEUP_AMO |
                       UCP_WAKEUP_RMA,
    };
    ucs_status_t status = ucp_worker_create(ctx->ucp, &wp, &w->ucp);
    if (status != UCS_OK) {
        pami_error("ucx", "ucp_worker_create failed: %s",
                   ucs_status_string(status));
        free(w);
        return status_to_errno(status);
    }

    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id  = TP_UCX_AM_ID,
        .cb  = am_recv_cb,
        .arg = w,
    };
    status = ucp_worker_set_am_recv_handler(w->ucp, &hp);
    if (status == UCS_OK)
        status = ucp_worker_get_address(w->ucp, &w->address, &w->address_len);
    if (status != UCS_OK) {
        pami_error("ucx", "worker setup failed: %s", ucs_status_string(status));
        ucp_worker_destroy(w->ucp);
        free(w);
        return status_to_errno(status);
    }
    *out = w;
    return 0;
}

static void ucx_worker_destroy(tp_worker_t *w)
{
    if (w == NULL)
        return;
    ucp_worker_release_address(w->ucp, w->address);
    /* Buffers UCX still held come back through pack_done in here. */
    ucp_worker_destroy(w->ucp);
    while (w->pack_free != NULL) {
        pack_buf_t *b = w->pack_free;
        w->pack_free  = b->next;
        free(b);
    }
    free(w);
}

static int ucx_worker_address(tp_worker_t *w, const void **addr, size_t *len)
{
    *addr = w->address;
    *len  = w->address_len;
    return 0;
}

static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    tp_ep_t *e = arg;
    pami_debug("ucx", "endpoint error: %s", ucs_status_string(status));
    if (e->err_fn != NULL)
        e->err_fn(e->err_arg, status_to_errno(status));
}

static int ucx_ep_create(tp_worker_t *w, const void *addr, unsigned flags,
                         tp_ep_error_fn err_fn, void *err_arg, tp_ep_t **out)
{
    tp_ep_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return -ENOMEM;
    e->worker  = w;
    e->err_fn  = err_fn;
    e->err_arg = err_arg;
    e->packed  = w->ctx->tcp && !(flags & TP_EP_LOCAL);

    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address    = addr,
    };
    if (flags & TP_EP_PEER_ERRORS) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                         UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb  = ep_error_cb;
        ep.err_handler.arg = e;
    }
    ucs_status_t status = ucp_ep_create(w->ucp, &ep, &e->ucp);
    if (status != UCS_OK) {
        pami_error("ucx", "ucp_ep_create failed: %s", ucs_status_string(status));
        free(e);
        return status_to_errno(status);
    }
    hold(HELD_EPS, 1);
    *out = e;
    return 0;
}

static void req_complete_cb(void *request, ucs_status_t status, void *user_data)
{
    tp_req_t *req = user_data;
    ucp_request_free(request);
    req->fn(req, status_to_errno(status));
}

/* Turns a UCP status pointer into 0 (done), 1 (in progress) or -errno. */
static inline int ptr_result(ucs_status_ptr_t sp)
{
    if (sp == NULL)
        return 0;
    if (UCS_PTR_IS_ERR(sp))
        return status_to_errno(UCS_PTR_STATUS(sp));
    return 1;
}

static int ucx_ep_close(tp_ep_t *e, int force, tp_req_t *req)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .flags        = force ? UCP_EP_CLOSE_FLAG_FORCE : 0,
        .cb.send      = req_complete_cb,
        .user_data    = req,
    };
    e->err_fn = NULL; /* errors of a closing endpoint are expected */
    int rc = ptr_result(ucp_ep_close_nbx(e->ucp, &p));
    /* The UCP endpoint is gone once the close started; ours goes with it. */
    free(e);
    hold(HELD_EPS, -1);
    return rc < 0 ? 0 : rc;
}

static void pack_done(void *request, ucs_status_t status, void *user_data)
{
    (void)status; /* a failed peer is reported by its endpoint */
    pack_buf_t *b = user_data;
    ucp_request_free(request);
    b->next            = b->w->pack_free;
    b->w->pack_free    = b;
    b->w->pack_out--;
}

/* UCX 1.13 sends every small active message over TCP by sendmsg of an
 * iovec (its header, the data, pami's header), where its own emulated
 * atomics and gets pack one buffer and call send: measured between two
 * simulated nodes, an 85-byte sendmsg of 3 parts took 0.22-0.30 us more
 * than send of the same bytes (docs/performance-log.md, "Across nodes (s12)").
 * A data type that is not contiguous makes UCX take that packing path
 * (am_bcopy): the message is copied into one of the worker's buffers and
 * described by one iov. When UCX cannot send it at once it keeps the
 * buffer (in order behind what it holds) and gives it back through
 * pack_done; past PACK_OUT_MAX such buffers the caller is told -EAGAIN
 * as UCX's immediate path would. */
static int am_send_packed(tp_ep_t *e, const void *hdr, size_t hdr_len,
                          const void *data, size_t data_len)
{
    tp_worker_t *w = e->worker;
    pack_buf_t  *b = w->pack_free;
    if (b != NULL) {
        w->pack_free = b->next;
    } else {
        if (w->pack_out >= PACK_OUT_MAX || (b = malloc(sizeof(*b))) == NULL)
            return -EAGAIN;
        b->w = w;
    }
    if (hdr_len > 0) /* no header: hdr may be NULL */
        memcpy(b->bytes, hdr, hdr_len);
    if (data_len > 0)
        memcpy(b->bytes + hdr_len, data, data_len);
    b->iov.buffer = b->bytes + hdr_len;
    b->iov.length = data_len;
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_DATATYPE |
                        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .flags        = UCP_AM_SEND_FLAG_EAGER,
        .datatype     = ucp_dt_make_iov(),
        .cb.send      = pack_done,
        .user_data    = b,
    };
    ucs_status_ptr_t sp = ucp_am_send_nbx(e->ucp, TP_UCX_AM_ID, b->bytes,
                                          hdr_len, &b->iov, 1, &p);
    if (UCS_PTR_IS_PTR(sp)) {
        w->pack_out++;
        return 0;
    }
    b->next      = w->pack_free;
    w->pack_free = b;
    return sp == NULL ? 0 : status_to_errno(UCS_PTR_STATUS(sp));
}

static int ucx_am_send_imm(tp_ep_t *e, const void *hdr, size_t hdr_len,
                           const void *data, size_t data_len)
{
    if (e->packed && hdr_len + data_len <= PACK_MAX)
        return am_send_packed(e, hdr, hdr_len, data, data_len);
    /* Built once: zeroing UCP's parameter struct on every call cost more
     * than the rest of this function. */
    static const ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL,
        .flags        = UCP_AM_SEND_FLAG_EAGER,
    };
    ucs_status_ptr_t sp = ucp_am_send_nbx(e->ucp, TP_UCX_AM_ID, hdr, hdr_len,
                                          data, data_len, &p);
    if (sp == NULL)
        return 0;
    if (UCS_PTR_IS_ERR(sp))
        return status_to_errno(UCS_PTR_STATUS(sp));
    /* FORCE_IMM_CMPL promises no request; treat one as a bug in UCX. */
    ucp_request_free(sp);
    return -EIO;
}

static int ucx_am_send(tp_ep_t *e, const void *hdr, size_t hdr_len,
                       const void *data, size_t data_len, unsigned flags,
                       tp_req_t *req)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .flags        = (flags & TP_SEND_EAGER) ? UCP_AM_SEND_FLAG_EAGER : 0,
        .cb.send      = req_complete_cb,
        .user_data    = req,
    };
    return ptr_result(ucp_am_send_nbx(e->ucp, TP_UCX_AM_ID, hdr, hdr_len, data,
                                      data_len, &p));
}

static unsigned ucx_progress(tp_worker_t *w)
{
    return ucp_worker_progress(w->ucp);
}

static int ucx_event_fd(tp_worker_t *w, int *fd)
{
    return status_to_errno(ucp_worker_get_efd(w->ucp, fd));
}

static int ucx_arm(tp_worker_t *w)
{
    return status_to_errno(ucp_worker_arm(w->ucp));
}

static int ucx_worker_flush(tp_worker_t *w, tp_req_t *req)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send      = req_complete_cb,
        .user_data    = req,
    };
    return ptr_result(ucp_worker_flush_nbx(w->ucp, &p));
}

static int ucx_ep_flush(tp_ep_t *e, tp_req_t *req)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send      = req_complete_cb,
        .user_data    = req,
    };
    return ptr_result(ucp_ep_flush_nbx(e->ucp, &p));
}

struct tp_mem {
    ucp_mem_h memh;
};

static int ucx_mem_reg(tp_context_t *ctx, void *addr, size_t len,
                       tp_mem_t **out, void *rkey, size_t *rkey_len)
{
    tp_mem_t *m = malloc(sizeof(*m));
    if (m == NULL)
        return -ENOMEM;
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address    = addr,
        .length     = len,
    };
    ucs_status_t status = ucp_mem_map(ctx->ucp, &mp, &m->memh);
    if (status != UCS_OK) {
        pami_warn("ucx", "ucp_mem_map of %zu bytes failed: %s", len,
                  ucs_status_string(status));
        free(m);
        return status_to_errno(status);
    }
    void  *packed;
    size_t packed_len;
    status = ucp_rkey_pack(ctx->ucp, m->memh, &packed, &packed_len);
    if (status != UCS_OK || packed_len > *rkey_len) {
        pami_warn("ucx", "remote key of %zu bytes does not fit %zu",
                  packed_len, *rkey_len);
        if (status == UCS_OK)
            ucp_rkey_buffer_release(packed);
        ucp_mem_unmap(ctx->ucp, m->memh);
        free(m);
        return status == UCS_OK ? -ENOTSUP : status_to_errno(status);
    }
    memcpy(rkey, packed, packed_len);
    *rkey_len = packed_len;
    ucp_rkey_buffer_release(packed);
    hold(HELD_MEMS, 1);
    *out = m;
    return 0;
}

static void ucx_mem_dereg(tp_context_t *ctx, tp_mem_t *m)
{
    ucp_mem_unmap(ctx->ucp, m->memh);
    free(m);
    hold(HELD_MEMS, -1);
}

static int ucx_rkey_unpack(tp_ep_t *e, const void *rkey, tp_rkey_t **out)
{
    ucp_rkey_h   rk;
    ucs_status_t status = ucp_ep_rkey_unpack(e->ucp, rkey, &rk);
    if (status != UCS_OK) {
        pami_warn("ucx", "cannot unpack a remote key: %s",
                  ucs_status_string(status));
        return status_to_errno(status);
    }
    hold(HELD_RKEYS, 1);
    *out = (tp_rkey_t *)rk;
    return 0;
}

static void ucx_rkey_destroy(tp_rkey_t *rkey)
{
    ucp_rkey_destroy((ucp_rkey_h)rkey);
    hold(HELD_RKEYS, -1);
}

static inline ucp_request_param_t rma_param(tp_req_t *req)
{
    return (ucp_request_param_t){
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send      = req_complete_cb,
        .user_data    = req,
    };
}

static int ucx_put(tp_ep_t *e, const void *local, size_t len, uint64_t raddr,
                   tp_rkey_t *rkey, tp_req_t *req)
{
    ucp_request_param_t p = rma_param(req);
    return ptr_result(ucp_put_nbx(e->ucp, local, len, raddr, (ucp_rkey_h)rkey,
                                  &p));
}

static int ucx_get(tp_ep_t *e, void *local, size_t len, uint64_t raddr,
                   tp_rkey_t *rkey, tp_req_t *req)
{
    ucp_request_param_t p = rma_param(req);
    return ptr_result(ucp_get_nbx(e->ucp, local, len, raddr, (ucp_rkey_h)rkey,
                                  &p));
}

static int ucx_atomic(tp_ep_t *e, int op, size_t size, const void *value,
                      void *result, uint64_t raddr, tp_rkey_t *rkey,
                      tp_req_t *req)
{
    static const ucp_atomic_op_t ops[] = {
        [TP_ATOMIC_ADD] = UCP_ATOMIC_OP_ADD,
        [TP_ATOMIC_FADD] = UCP_ATOMIC_OP_ADD,
        [TP_ATOMIC_SWAP] = UCP_ATOMIC_OP_SWAP,
        [TP_ATOMIC_CSWAP] = UCP_ATOMIC_OP_CSWAP,
    };
    ucp_request_param_t p = rma_param(req);
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype      = ucp_dt_make_contig(size);
    if (op != TP_ATOMIC_ADD) {
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.reply_buffer  = result;
    }
    return ptr_result(ucp_atomic_op_nbx(e->ucp, ops[op], value, 1, raddr,
                                        (ucp_rkey_h)rkey, &p));
}

const tp_ops_t tp_ucx_ops = {
    .name           = "ucx",
    .init           = ucx_init,
    .fini           = ucx_fini,
    .query          = ucx_query,
    .worker_create  = ucx_worker_create,
    .worker_destroy = ucx_worker_destroy,
    .worker_address = ucx_worker_address,
    .ep_create      = ucx_ep_create,
    .ep_close       = ucx_ep_close,
    .am_send_imm    = ucx_am_send_imm,
    .am_send        = ucx_am_send,
    .progress       = ucx_progress,
    .event_fd       = ucx_event_fd,
    .arm            = ucx_arm,
    .worker_flush   = ucx_worker_flush,
    .ep_flush       = ucx_ep_flush,
    .mem_reg        = ucx_mem_reg,
    .mem_dereg      = ucx_mem_dereg,
    .rkey_unpack    = ucx_rkey_unpack,
    .rkey_destroy   = ucx_rkey_destroy,
    .put            = ucx_put,
    .get            = ucx_get,
    .atomic         = ucx_atomic,
};

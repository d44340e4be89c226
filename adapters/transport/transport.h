/*
 * Transport seam. UCX carries everything; tp_shm_ops (shm.c) sits on top
 * of it and carries active messages between endpoints of one node through
 * shared-memory queues. The ops table also lets a test adapter wrap it
 * (delay, reorder across endpoints, kill a peer) and keeps UCX headers out
 * of pami/. Functions return 0 or a negative errno:
 * -EAGAIN no resources now, -ENOMEM, -EINVAL, -ECONNRESET peer gone,
 * -ECANCELED canceled by close, -EIO anything else.
 *
 * This layer knows nothing of pami/.
 */
#ifndef PAMI_ADAPTERS_TRANSPORT_H
#define PAMI_ADAPTERS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_context tp_context_t;
typedef struct tp_worker  tp_worker_t;
typedef struct tp_ep      tp_ep_t;
typedef struct tp_mem     tp_mem_t;   /* a local registration */
typedef struct tp_rkey    tp_rkey_t;  /* a remote key bound to an endpoint */

/* Completion slot embedded in the caller's own request; the transport calls
 * fn once when an operation that returned 1 ("in progress") ends. */
typedef struct tp_req tp_req_t;
struct tp_req {
    void (*fn)(tp_req_t *req, int status);
};

/* Incoming active message. hdr and data are valid during the call.
 * rndv_desc is non-NULL only for a message the sender let the transport
 * send by its own rendezvous (pami never does: it sends eager and moves
 * large payloads itself); returning drops it and the sender completes. */
typedef void (*tp_am_fn)(void *arg, const void *hdr, size_t hdr_len,
                         void *data, size_t data_len, void *rndv_desc);

/* The remote side of an endpoint failed; ops on it complete with errors. */
typedef void (*tp_ep_error_fn)(void *arg, int status);

typedef struct {
    int      thread_shared;   /* workers used from several threads */
    size_t   estimated_eps;
    /* How often endpoints with TP_EP_PEER_ERRORS check their peer, in
     * milliseconds; 0 leaves the transport's default. */
    unsigned keepalive_ms;
    /* Directory (on a tmpfs) for the transport's shared-memory files;
     * NULL: the transport's default. The user's own setting wins. */
    const char *shm_dir;
} tp_params_t;

/* A queue entry from a node peer that does not decode: the queue is read
 * no more. */
typedef void (*tp_drop_fn)(void *arg, const char *why);

typedef struct {
    tp_am_fn am_fn;
    void    *am_arg;
    /* tp_shm_ops only; shm_on 0 makes it UCX alone. */
    int        shm_on;
    uint32_t   shm_queue_lines; /* lines of 64 bytes per queue, power of 2 */
    uint32_t   shm_entry_lines; /* lines of the largest entry */
    /* Lines of a queue, and of its largest entry, until its sender
     * streams (shm-queue.md, "Growing"); equal to the two above: never
     * grows. */
    uint32_t   shm_start_lines, shm_start_entry_lines;
    uint32_t   shm_max_queues;  /* senders a worker takes by queue */
    size_t     shm_msg_max;     /* longest message (header + data) */
    /* Data from which am_send sends a reference the receiver reads with
     * process_vm_readv (shm-queue.md, "References"); 0: never. */
    size_t     shm_read_min;
    int        shm_membarrier;  /* asymmetric fences where the kernel can */
    tp_drop_fn drop_fn;         /* called with am_arg */
} tp_worker_params_t;

/* Counters of the shared-memory queues of one worker. */
typedef struct {
    int      shm_on;
    uint64_t shm_sent, shm_received, shm_full, shm_wakeups, shm_peers;
    uint64_t shm_dropped;
} tp_stats_t;

typedef struct {
    char   version[32];
    char   transports[256];   /* comma list of usable UCX transports */
} tp_info_t;

enum {
    TP_SEND_EAGER = 1u << 0,  /* never use the transport's rendezvous */
};

enum {
    /* Report a dead peer through err_fn. In UCX 1.13 this restricts the
     * endpoint to transports that can tell (TCP), so pami uses it on a
     * second, idle endpoint that only watches the peer. */
    TP_EP_PEER_ERRORS = 1u << 0,
    /* The peer is on this node (tp_shm_ops may use its queues; over TCP
     * tp_ucx_ops packs small messages only to other nodes). */
    TP_EP_LOCAL = 1u << 1,
};

typedef struct tp_ops {
    const char *name;
    int  (*init)(const tp_params_t *params, tp_context_t **ctx);
    void (*fini)(tp_context_t *ctx);
    int  (*query)(tp_context_t *ctx, tp_info_t *info);

    int  (*worker_create)(tp_context_t *ctx, const tp_worker_params_t *params,
                          tp_worker_t **worker);
    void (*worker_destroy)(tp_worker_t *worker);
    /* Address stays owned by the worker. */
    int  (*worker_address)(tp_worker_t *worker, const void **addr,
                           size_t *len);

    int  (*ep_create)(tp_worker_t *worker, const void *addr, unsigned flags,
                      tp_ep_error_fn err_fn, void *err_arg, tp_ep_t **ep);
    /* Starts closing; flush first unless force. Returns 0 when closed, 1
     * when the close completes later through req. */
    int  (*ep_close)(tp_ep_t *ep, int force, tp_req_t *req);

    /* Sends now or not at all: 0 sent (buffers reusable), -EAGAIN. */
    int  (*am_send_imm)(tp_ep_t *ep, const void *hdr, size_t hdr_len,
                        const void *data, size_t data_len);
    /* 0 done (buffers reusable), 1 in progress (req->fn later; hdr and data
     * must stay valid until then), < 0 error. */
    int  (*am_send)(tp_ep_t *ep, const void *hdr, size_t hdr_len,
                    const void *data, size_t data_len, unsigned flags,
                    tp_req_t *req);

    /* Runs callbacks; returns the number of events. */
    unsigned (*progress)(tp_worker_t *worker);
    /* fd that becomes readable when the worker has events after arm. */
    int  (*event_fd)(tp_worker_t *worker, int *fd);
    /* 0 armed (safe to sleep), -EAGAIN events pending (progress again). */
    int  (*arm)(tp_worker_t *worker);
    /* 0 flushed, 1 in progress (req->fn later). */
    int  (*worker_flush)(tp_worker_t *worker, tp_req_t *req);
    /* Every earlier put/atomic on ep is complete at the target. */
    int  (*ep_flush)(tp_ep_t *ep, tp_req_t *req);

    /* Memory: registers [addr, addr+len) and packs its remote key into
     * rkey (capacity *rkey_len, set to the packed size). */
    int  (*mem_reg)(tp_context_t *ctx, void *addr, size_t len, tp_mem_t **mem,
                    void *rkey, size_t *rkey_len);
    void (*mem_dereg)(tp_context_t *ctx, tp_mem_t *mem);
    int  (*rkey_unpack)(tp_ep_t *ep, const void *rkey, tp_rkey_t **out);
    void (*rkey_destroy)(tp_rkey_t *rkey);

    /* One-sided: same return convention as am_send. */
    int  (*put)(tp_ep_t *ep, const void *local, size_t len, uint64_t raddr,
                tp_rkey_t *rkey, tp_req_t *req);
    int  (*get)(tp_ep_t *ep, void *local, size_t len, uint64_t raddr,
                tp_rkey_t *rkey, tp_req_t *req);
    /* op: TP_ATOMIC_*; size 4 or 8. result receives the old value; NULL
     * for a plain add. CSWAP as UCP has it: value is the compare value,
     * result holds the new value on entry. */
    int  (*atomic)(tp_ep_t *ep, int op, size_t size, const void *value,
                   void *result, uint64_t raddr, tp_rkey_t *rkey,
                   tp_req_t *req);
    /* Optional (NULL: none). */
    void (*stats)(tp_worker_t *worker, tp_stats_t *stats);
} tp_ops_t;

enum { TP_ATOMIC_ADD, TP_ATOMIC_FADD, TP_ATOMIC_SWAP, TP_ATOMIC_CSWAP };

extern const tp_ops_t tp_ucx_ops;
extern const tp_ops_t tp_shm_ops;

#endif

/*
 * Core internals shared by the files of pami/. Nothing here is public.
 */
#ifndef PAMI_INTERNAL_H
#define PAMI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "pami.h"
#include "pami_protocol.h"
#include "config.h"
#include "log.h"
#include "clock.h"
#include "bootstrap.h"
#include "evloop.h"
#include "transport.h"
#include "wire.h"

#define container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Dispatch id space: user ids first, then the block protocols draw from,
 * then ids of the core itself. */
#define PAMI_DISPATCH_USER_MAX     256
#define PAMI_DISPATCH_PROTOCOL_MAX 256
#define PAMI_DISPATCH_CORE_BASE    (PAMI_DISPATCH_USER_MAX + PAMI_DISPATCH_PROTOCOL_MAX)
#define PAMI_DISPATCH_ACK          (PAMI_DISPATCH_CORE_BASE + 0)
#define PAMI_DISPATCH_BARRIER      (PAMI_DISPATCH_CORE_BASE + 1)
#define PAMI_DISPATCH_MONITOR      (PAMI_DISPATCH_CORE_BASE + 2)
#define PAMI_DISPATCH_RNDV         (PAMI_DISPATCH_CORE_BASE + 3)
#define PAMI_DISPATCH_RMA          (PAMI_DISPATCH_CORE_BASE + 4)
#define PAMI_DISPATCH_RNDV_CHUNK   (PAMI_DISPATCH_CORE_BASE + 5)
#define PAMI_DISPATCH_PROBE        (PAMI_DISPATCH_CORE_BASE + 6)
#define PAMI_DISPATCH_RNDV_WRITE   (PAMI_DISPATCH_CORE_BASE + 7)
#define PAMI_DISPATCH_SENDS        (PAMI_DISPATCH_CORE_BASE + 8)
#define PAMI_DISPATCH_TABLE_SIZE   (PAMI_DISPATCH_CORE_BASE + 9)

#define PAMI_HEADER_MAX 1024
/* Period of the monitors' liveness checks: bounds how long a dead task can
 * go unnoticed when its socket gives no sign. */
#define PAMI_KEEPALIVE_MS 500
/* How often a context that waits idle looks at the tasks of its node. */
#define PAMI_WATCH_MS 100
#define PAMI_DEPART_GRACE_MS 200
/* After this much more, a barrier that still waits fails whoever it waits
 * for: the dead task may hold a live one that waits for it. */
#define PAMI_DEPART_WAIT_MS 800
/* UCX's shared-memory and TCP transports carry 8 KiB in one fragment; an
 * immediate send must fit one, with pami's and UCX's headers. */
#define PAMI_IMMEDIATE_LIMIT 4096
/* The longest PAMI_SHUTDOWN_TIMEOUT and PAMI_PEER_TIMEOUT (ms, 24.8
 * days): the waits take an int of milliseconds and add nanoseconds to
 * the clock, which a larger value overflowed into a deadline already
 * past (destroyv timed out at once). */
#define PAMI_TIMEOUT_MS_MAX 2147483647u

/* The wire forms of the AM header, the ack and the rendezvous request,
 * and their decoders, are in wire.h. */
#define PAMI_PACKED_MAX 256
#define PAMI_NOW_RETRY 64

/* Requests come in chunks of 1 << this (request.c). */
#define PAMI_REQ_CHUNK_SHIFT 8

/* Headers up to this size are copied into the request itself. */
#define PAMI_REQ_INLINE_HDR 96
/* Most answers to puts one PUT_DONE carries (docs/protocols/rma.md). */
#define PAMI_RMA_PUT_DONE_MAX 32
/* Messages one REQUESTS or REPLIES carries at most, the data one of them
 * may carry, and the payload's size at most: inside pami's 64 KiB TCP
 * segment (docs/protocols/rma.md). */
#define PAMI_RMA_GATHER_MAX       32
#define PAMI_RMA_GATHER_DATA_MAX  4096
#define PAMI_RMA_GATHER_BYTES     (60 * 1024)
/* Large CMA puts or gets of a context whose owner may help at once. A
 * slot stays taken until the owner's REPLY is read by a later advance, so
 * a window of large operations issued back to back needs one per
 * operation: with 4, pami-bench get_bw at 16 MiB (windows of 16) moved
 * 30 of 63 gets on one core. */
#define PAMI_RMA_HELP_SLOTS 32
/* Small CMA operations one process_vm_writev/readv moves at most: the
 * call costs about 0.45 us whatever it moves (docs/protocols/rma.md). */
#define PAMI_CMA_BATCH_OPS 64

typedef enum {
    REQ_FREE = 0,
    REQ_SEND,       /* an AM in flight */
    REQ_ACK_SEND,   /* a reply to a remote_fn request */
    REQ_RECV,       /* a rendezvous payload being received */
    REQ_BARRIER,    /* a core barrier message */
    REQ_IMM,        /* an immediate send that had to be copied */
    REQ_RMA         /* put, get, atomic or fence */
} pami_req_kind_t;

/* Immediate sends copied because the transport could not take them at
 * once; beyond this many in flight, send_immediate says PAMI_EAGAIN. */
#define PAMI_BOUNCE_MAX 1024

typedef struct pami_request pami_request_t;
struct pami_request {
    tp_req_t         tp;
    pami_request_t  *next;        /* free list or completion queue */
    pami_request_t  *wait_prev;   /* list of sends waiting for an ack */
    pami_request_t  *wait_next;
    struct pami_context *ctx;
    uint32_t         index;       /* in the context's request table */
    uint32_t         generation;  /* changes each use: stale acks are caught */
    uint8_t          kind;
    bool             local_pending;
    bool             remote_pending;
    bool             queued;
    bool             abandoned;   /* failed by us; UCX may still call back */
    bool             reported;    /* its callbacks ran */
    pami_result_t    result;      /* of the local part */
    pami_result_t    ack_result;  /* what the target's ack said */
    uint32_t         peer;        /* flat endpoint index of the other side */
    pami_event_fn    local_fn;
    pami_event_fn    remote_fn;
    void            *cookie;
    uint64_t         ack_cookie;  /* REQ_RECV: reply to send when done */
    bool             ack_wanted;
    uint8_t         *hdr;         /* inline_hdr, bounce, or a heap copy */
    size_t           hdr_len;
    const void      *data;        /* payload, kept for a deferred start */
    size_t           data_len;
    unsigned         tp_flags;
    uint8_t         *bounce;      /* REQ_IMM copy; kept for the next use */
    uint32_t         imm_count;   /* REQ_IMM: messages it holds (a list of
                                     gathered sends holds many) */
    int32_t          region;      /* local region it uses, or -1 */
    bool             rndv;        /* active GET: RTS at the origin, the
                                     get at the target (rndv.c) */
    tp_mem_t        *rndv_mem;    /* origin: registration of the payload */
    tp_rkey_t       *rkey;        /* target: one-shot key of the payload */
    bool             rndv_cma;    /* on one node: the target reads the
                                     origin directly (rndv.c) */
    uint64_t         rndv_split;  /* target, CMA: the bytes it reads
                                     itself while the origin writes the
                                     rest (rndv_split.c); 0: reads all */
    bool             rma_owner;   /* one-sided through the owner: every
                                     callback waits for its answer */
    uint8_t          rma_type;    /* PAMI_RMA_MSG_* of that request */
    void            *rma_dst;     /* where a get or fetch lands */
    size_t           rma_len;     /* and how many bytes */
    uint64_t         rndv_base;   /* target: the origin's address;
                                     origin (rndv_msg): the payload's */
    /* Origin-served rendezvous (rndv_msg.c). */
    bool             rndv_msg;    /* the origin serves it in chunks */
    bool             rndv_first;  /* target: chunk 0 came with the RTS */
    uint32_t         rndv_out;    /* chunk messages of it not yet ended:
                                     it reports only after them */
    pami_request_t  *rndv_src;    /* a chunk message: the transfer it
                                     belongs to */
    uint64_t         rndv_bytes;  /* origin: the payload's length */
    uint64_t         rndv_next;   /* target: next chunk to ask for */
    uint64_t         rndv_lo;     /* target: first chunk not yet here */
    uint64_t         rndv_got;    /* target: chunks lo.. that are here */
    uint8_t          inline_hdr[PAMI_REQ_INLINE_HDR];
};

typedef struct {
    pami_dispatch_fn fn;
    void            *cookie;
} pami_dispatch_entry_t;

/* A registration of this context (memregion.c). */
typedef struct {
    tp_mem_t *mem;
    uint64_t  base;
    uint64_t  bytes;
    uint32_t  generation;
    uint32_t  users;      /* operations in flight that use it locally */
    bool      live;
    uint64_t  shm_bytes;  /* pami_memregion_alloc: the segment's mapped
                             length (memregion_shm.c); 0: the program's
                             memory */
    bool      shm_in_dir; /* the segment is in the client's job_dir */
} pami_region_t;

/* A pami_memregion_t, decoded and checked for form. */
typedef struct {
    uint32_t       owner_task;
    uint32_t       owner_ctx;
    uint32_t       id;
    uint32_t       generation;
    uint64_t       base;
    uint64_t       bytes;
    uint32_t       flags;      /* PAMI_MR_FLAG_* */
    const uint8_t *rkey;
} pami_mr_view_t;

/* The memory of a region is a shared segment pami allocated. */
#define PAMI_MR_FLAG_SHM    0x1u
/* ... kept in the job's directory (client job_dir), not /dev/shm. */
#define PAMI_MR_FLAG_JOBDIR 0x2u

/* A node peer's segment mapped into this context (memregion_shm.c). */
typedef struct {
    uint32_t owner_task, owner_ctx, id, generation;
    void    *addr;
    size_t   len;
} pami_shm_map_t;

typedef struct {
    uint32_t   peer;
    uint32_t   owner_ctx;
    uint32_t   id;
    uint32_t   generation;
    tp_rkey_t *rkey;
} pami_rkey_entry_t;

/* What a context knows of one remote endpoint. */
typedef struct {
    tp_ep_t             *ep;
    tp_ep_t             *monitor; /* idle endpoint that reports peer death */
    struct pami_context *ctx;     /* back pointer for the error callback */
    uint32_t             index;
    bool                 failed;
    pami_am_hdr_t        hello;   /* the monitor's one message */
    tp_req_t             hello_req;
    bool                 hello_pending;
    bool                 task_dead;  /* the monitor reported its task */
    bool                 task_told;  /* protocols heard of it */
    uint64_t             stopped_since_ns; /* task seen stopped; 0: not */
    bool                 owner_used; /* one-sided ops through the owner's
                                        path went here: fences ask it */
    /* Liveness of a task on another node (liveness.c), in its slot of
     * context 0: the tick that last found work pending with it, since
     * when it owes an answer, and the probe it must answer. */
    uint64_t             live_tick;
    uint64_t             quiet_since_ns;  /* last heard of; 0: unwatched */
    uint64_t             probe_sent_ns;   /* last probe; 0: none yet */
    uint64_t             ask_since_ns;    /* oldest probe unanswered; 0 */
    uint32_t             probe_seq;
    uint32_t             probe_index;     /* the slot probes go to */
    bool                 live_sent;  /* the program sent here since the
                                        last liveness tick */
    bool                 live_heard; /* in the task's slot of context 0:
                                        a message came from it since */
    /* Whether sends to it may be gathered (send_gather.c): PAMI_GATHER_*;
     * never to this context itself. */
    uint8_t              gather;
    /* The smallest eager send the transport did not take at once (0:
     * none; UCX completes at once only what fits its short protocol):
     * sends from that size skip the attempt, which is made again after
     * PAMI_NOW_RETRY of them, as a full queue or socket passes (send.c). */
    uint32_t             now_refused;
    uint16_t             now_skipped;  /* < PAMI_NOW_RETRY */
    /* Messages to it in copies the transport did not take at once, still
     * in flight: only then is a send gathered, so a list never waits for
     * a progress call that the copies before it did not need already. */
    uint16_t             backlog;
    /* ctx->polls at the last send of the program to it that left at
     * once: a send while it still equals the count follows that one
     * before any progress, and waits in ctx->sends (send_gather.c).
     * With gather (above), in the struct's padding: 128 bytes, so a
     * peer's address is a shift of its index on the send path. */
    uint32_t             sent_poll;
} pami_peer_t;

_Static_assert(sizeof(pami_peer_t) == 128, "a peer is 128 bytes");

/* A protocol registered on a client (protocol.c). */
typedef struct {
    const pami_protocol_ops_t *ops;     /* &table */
    const pami_protocol_ops_t *given;   /* the caller's, for identity */
    /* The caller's table as this pami's struct: what it did not have
     * (struct_size shorter than ours) stays zero. */
    pami_protocol_ops_t        table;
    void                      *cookie;
    size_t                     base;    /* first dispatch id */
    bool                       builtin;
} pami_protocol_slot_t;

typedef struct pami_post_item {
    struct pami_post_item *next;
    pami_work_fn           fn;
    void                  *cookie;
    /* PAMI_POST_QUEUED ^ the item's address while it is queued: posting
     * it again then would cut the queue (progress.c). */
    uintptr_t              queued;
} pami_post_item_t;

#define PAMI_POST_QUEUED ((uintptr_t)0x5157a17ed0c0ffeeull)

_Static_assert(sizeof(pami_post_item_t) <= sizeof(pami_work_t),
               "pami_work_t too small");

typedef struct pami_self_msg pami_self_msg_t;

/* A one-sided operation done during its call (load and store, CMA),
 * waiting for advance to run its callbacks (rma_shm.c). */
typedef struct {
    pami_event_fn local_fn, remote_fn;
    void         *cookie;
    int32_t       region;   /* local region in use until then, or -1 */
    pami_result_t result;
} pami_rma_done_t;

/* Messages of the owner's path to one endpoint, back to back (each 64
 * bytes and its data), that leave together; buf is allocated on first
 * use (rma_owner.c). */
typedef struct {
    uint8_t *buf;
    size_t   len;
    uint32_t n;
    uint32_t peer;
} pami_rma_gather_t;

struct pami_context {
    struct pami_client   *client;
    size_t                offset;
    tp_worker_t          *worker;
    const tp_ops_t       *tp;

    pami_dispatch_entry_t dispatch[PAMI_DISPATCH_TABLE_SIZE];

    pami_peer_t          *peers;      /* size * num_contexts, lazy eps */

    /* Request table: chunks of requests, addressed by index for acks. */
    pami_request_t      **req_chunks;
    size_t                req_nchunks;
    pami_request_t       *req_free;
    pami_request_t       *done_head;  /* completions to report in advance */
    pami_request_t      **done_tail;
    pami_request_t       *ack_wait;   /* sends waiting for a remote ack */
    /* Sends that need a new endpoint, asked for inside the transport's
     * progress, where UCX cannot create one: started right after it. */
    pami_request_t       *deferred_head;
    pami_request_t      **deferred_tail;
    bool                  in_tp_progress;
    /* Answers to puts through the owner, applied during this transport
     * poll and sent together when it returns (rma_owner.c). */
    uint32_t              put_done_peer;
    uint32_t              put_done_n;
    uint64_t              put_done[PAMI_RMA_PUT_DONE_MAX];
    /* Other answers made during that poll to one endpoint, sent as one
     * REPLIES when it returns; and small puts and gets to one owner
     * issued since the last progress, sent as one REQUESTS from the next
     * (rma_owner.c). */
    pami_rma_gather_t     replies;
    pami_rma_gather_t     requests;
    /* Eager sends to one endpoint that followed another since the last
     * progress, as SENDS records; leave from the next (send_gather.c). */
    pami_rma_gather_t     sends;
    /* Messages to the own endpoint, delivered from progress (self.c). */
    pami_self_msg_t      *self_head;
    pami_self_msg_t     **self_tail;
    size_t                self_count;
    size_t                bounced;    /* messages in REQ_IMM requests in
                                         flight (a gathered list: each) */
    /* Operations done during their call, reported in order from advance:
     * a ring (power-of-two capacity) that rma_batch, queued among the
     * finished requests while it is not empty, stands for. No request
     * of the table each: the load-and-store path stays a few stores. */
    pami_rma_done_t      *rma_done;
    uint32_t              rma_done_head, rma_done_tail, rma_done_cap;
    pami_request_t        rma_batch;
    /* Small CMA puts or gets to one task, one direction, whose entries are
     * the last n of that ring: their data moves in one process_vm_writev
     * or _readv, made before the ring's callbacks run (rma_cma.c). */
    struct {
        uint32_t     n;
        uint32_t     task;
        bool         put;
        struct iovec local[PAMI_CMA_BATCH_OPS];
        struct iovec remote[PAMI_CMA_BATCH_OPS];
    }                     cma_batch;
    /* Large CMA operations whose upper part was offered to the owner
     * (rma_help.c): a token eventfd per slot, claimed by whoever reads
     * the token first. */
    struct {
        int      fd;        /* -1: not made yet */
        uint64_t token;     /* 0: free */
        uint64_t cookie;    /* the waiting request */
        bool     put;
        void    *local;     /* the upper part: here */
        uint64_t raddr;     /* and at the owner */
        size_t   bytes;
        uint32_t task;
    }                     help[PAMI_RMA_HELP_SLOTS];
    uint32_t              help_posted; /* slots with a token out */
    uint64_t              help_seq;
    uint64_t              help_served;     /* parts copied for origins */
    uint64_t              help_taken_back; /* own parts nobody claimed */
    uint64_t              help_offered;    /* parts offered to owners */
    uint64_t              help_no_slot;    /* large ones that moved alone */
    /* Small puts to node peers sent as messages with a claim word
     * (rma_claim.c): NULL until the first; claims_out of them wait. */
    struct pami_rma_claims *claims;
    uint32_t              claims_out; /* (their counters: stats.claim_*) */
    uint64_t              claim_gets; /* gets sent so (claim_puts: puts) */

    pami_region_t        *regions;    /* memregion.c */
    size_t                nregions;
    pami_memregion_t      mr_verified; /* the last copy whose seal held */
    size_t                mr_verified_len; /* its sealed bytes, or 0: none */
    /* Where a peer's shared region of that copy is mapped here
     * (rma_shm.c): 0 not looked at yet, 1 at mr_verified_map, 2 none. */
    uint8_t               mr_verified_shm;
    void                 *mr_verified_map;
    pami_shm_map_t       *shm_maps;   /* peers' segments mapped here */
    size_t                shm_nmaps;
    size_t                shm_cap;
    pami_rkey_entry_t    *rkeys;      /* open addressing, power of two */
    size_t                rkey_cap;
    size_t                rkey_count;
    size_t                inflight;   /* requests not free */
    size_t                zombies;    /* reported, but UCX still holds them */
    uint32_t              polls;      /* progress calls, for the sweep */
    uint64_t              last_sweep_ns;
    uint64_t              live_tick;  /* liveness.c: ticks so far */
    uint64_t              last_live_ns;
    bool                  live_any;   /* a task was watched at the last */
    bool                  live_check; /* tick after the next poll */
    bool                  live_sent;  /* some peer's live_sent is set */

    /* Work posted from other threads. */
    pthread_mutex_t       post_lock;
    pami_post_item_t     *post_head;
    pami_post_item_t    **post_tail;
    atomic_int            post_pending;

    pthread_mutex_t       lock;

    evloop_t             *loop;
    evloop_io_t          *loop_io;
    int                   event_fd;
    /* Progress thread (progress.c): its watcher of event_fd, whether it
     * watches now, and set while it finds the context held by the
     * program, so that the holder's unlock wakes it. */
    evloop_io_t          *progress_io;
    bool                  progress_watching;
    bool                  progressed; /* since the progress thread armed */
    atomic_int            progress_skipped;

    int                   closing;    /* endpoint closes in progress */
    bool                  closing_down; /* in destroy */
    /* Destroy's stage (shutdown.c): in the first barrier no task can have
     * left normally yet, so a death there fails at once; later, a task
     * found gone may have finished its barriers and left, and it counts as
     * failed only if the barrier, idle, still waits for its message
     * PAMI_DEPART_GRACE_MS on. */
    uint8_t               shutdown_stage;
    /* In pami_dispatch_fence's barrier (client.c), where a task may also
     * finish and leave before we do: deaths get the same grace. */
    bool                  in_fence;
    uint64_t              depart_deadline_ns; /* 0: no departure pending */
    bool                  eps_closed;   /* no new endpoints from now on */
    bool                  peers_failed_pending; /* failed eps to close */

    size_t                local_inflight; /* sends not yet out */

    /* Core barrier (barrier.c): rounds heard, by epoch parity. */
    uint64_t              bar_seen[2];
    uint32_t              bar_epoch;
    uint32_t              bar_round;
    bool                  bar_sent;
    bool                  bar_nomem;   /* this barrier's ENOMEM logged */

    /* Protocols started on this context, in registration order. */
    void                 *protocol_state[PAMI_PROTOCOL_MAX];
    size_t                protocols_inited;

    pami_context_stats_t  stats;
};

typedef struct pami_client {
    char                  name[64];
    pami_config_t         config;
    const bootstrap_ops_t *bs;
    void                 *bs_state;
    pami_bootstrap_kind_t bs_kind;
    pami_task_t           task;
    size_t                size;
    pami_task_t          *local_tasks;
    size_t                num_local_tasks;
    size_t                num_local_cpus; /* CPUs this node's tasks use */
    bool                  oversubscribed; /* more tasks here than those */
    uint32_t             *task_node;      /* per task: its node's number */
    size_t                num_nodes;
    struct {
        bool     local;   /* on this node */
        pid_t    pid;
        uint64_t probe;   /* address of a byte to read in it */
    }                    *tasks;
    /* Per task, the 16-byte secret that seals its memory regions
     * (secrets[task * 16]), exchanged with the task cards. */
    uint8_t              *secrets;

    const tp_ops_t       *tp;
    tp_context_t         *tp_ctx;
    tp_info_t             tp_info;

    /* Worker addresses of every (task, context): addr[task * n + offset]. */
    uint8_t              *addr_blob;
    size_t                addr_stride;

    struct pami_context **contexts;
    size_t                num_contexts;
    bool                  tasks_failed; /* a monitor saw a task die */
    bool                  cma_denied;   /* process_vm_* refused (EPERM) */
    bool                  cma_worked;   /* one process_vm_* succeeded, so
                                           a batch will not meet EPERM */
    int                   rdma;         /* UCX has RDMA (rc/dc): 2 yes,
                                           1 no, 0 not looked at yet */
    bool                  tp_leaked;    /* a worker was left to UCX */
    /* The job's directory for shared-memory files that the launcher
     * removes at the job's end (job_dir.c); "" when there is none. */
    char                  job_dir[160];

    pami_protocol_slot_t  protocols[PAMI_PROTOCOL_MAX];
    size_t                num_protocols;
    size_t                protocol_ids;  /* dispatch ids handed out */
    /* Slot + 1 of the protocol whose block starts at an id (by id -
     * PAMI_DISPATCH_USER_MAX), 0 elsewhere: an env checked in O(1). */
    uint8_t               protocol_at[PAMI_DISPATCH_PROTOCOL_MAX];
    uint64_t              protocol_sig;  /* names and order, for createv */
    /* Plug-ins loaded from PAMI_PROTOCOLS (plugin.c), closed at destroy;
     * how loading went here, and the first task where it failed (from
     * the task cards), so every task fails client creation alike. */
    struct pami_plugin   *plugins;
    size_t                num_plugins;
    pami_result_t         plugins_rc;
    pami_result_t         plugins_failed_rc;
    uint32_t              plugins_failed_task; /* UINT32_MAX: none */

    /* Progress thread (PAMI_ASYNC_PROGRESS=1). */
    pthread_t             progress_thread;
    bool                  progress_running;
    atomic_int            progress_stop;
    evloop_t             *progress_loop;
} pami_client_impl_t;

/* ---- tasks (tasks.c) ---- */
pami_result_t pami_tasks_exchange(pami_client_impl_t *client);
/* job_dir.c: the directory for the transport's shared-memory files, made
 * and handed to the launcher for removal; NULL for the default. */
const char *pami_job_shm_dir(pami_client_impl_t *c, char *buf, size_t len);
/* Its name, whether or not it exists (false: no job id, or too long). */
bool pami_job_dir_name(pami_client_impl_t *c, char *buf, size_t len);
/* Frees what the exchange made; safe on a client that never made it. */
void pami_tasks_release(pami_client_impl_t *client);
/* False only when the task is on this node and its process is gone. */
bool pami_task_alive(pami_client_impl_t *client, uint32_t task);

/* ---- result mapping ---- */
pami_result_t pami_result_from_errno(int rc);

/* ---- endpoints (endpoint.c) ---- */
static inline uint32_t pami_ep_task(pami_endpoint_t ep) { return ep >> 8; }
static inline uint32_t pami_ep_offset(pami_endpoint_t ep) { return ep & 0xffu; }

pami_result_t pami_peer_index_bad(struct pami_context *ctx,
                                  pami_endpoint_t dest);
pami_result_t pami_peer_slow(struct pami_context *ctx, uint32_t index,
                             pami_peer_t **peer);

/* Checks dest against the job; gives the flat index of the peer. Inline:
 * every send starts here. */
static inline pami_result_t pami_peer_index(struct pami_context *ctx,
                                            pami_endpoint_t dest,
                                            uint32_t *index)
{
    pami_client_impl_t *c = ctx->client;
    uint32_t task = pami_ep_task(dest), offset = pami_ep_offset(dest);
    *index = task * (uint32_t)c->num_contexts + offset;
    if (unlikely(task >= c->size || offset >= c->num_contexts))
        return pami_peer_index_bad(ctx, dest);
    return PAMI_SUCCESS;
}

/* The connected peer, PAMI_PEER_FAILED, or PAMI_EAGAIN when it has no
 * endpoint yet and none can be made now (inside the transport). */
static inline pami_result_t pami_peer_by_index(struct pami_context *ctx,
                                               uint32_t index,
                                               pami_peer_t **out)
{
    pami_peer_t *peer = &ctx->peers[index];
    if (likely(peer->ep != NULL && !peer->failed)) {
        *out = peer;
        return PAMI_SUCCESS;
    }
    return pami_peer_slow(ctx, index, out);
}

/* Starts closing every endpoint; ctx->closing counts those still open. */
void pami_peers_close(struct pami_context *ctx, bool force);
/* A packet from a peer refused: counted in dropped_malformed, and one
 * warn line saying why (docs/protocols/am.md). */
#define pami_drop_malformed(ctx, subsys, ...)                                 \
    do {                                                                      \
        (ctx)->stats.dropped_malformed++;                                     \
        pami_warn(subsys, __VA_ARGS__);                                       \
    } while (0)
/* A send of the program or a protocol went to flat index index: its task
 * owes progress for a while (liveness.c). Two stores. */
static inline void pami_live_sent(struct pami_context *ctx, uint32_t index)
{
    ctx->peers[index].live_sent = true;
    ctx->live_sent              = true;
}
/* Closes the endpoints of peers found dead since the last call. */
void pami_peers_close_failed(struct pami_context *ctx);
/* Declares task dead on ctx: fails what waits on it, refuses new sends. */
void pami_task_failed(struct pami_context *ctx, uint32_t task, int status);
/* From pami_idle (nothing moved): looks at the tasks of this node at most
 * every PAMI_WATCH_MS, and ends a departure's grace. */
void pami_tasks_watch(struct pami_context *ctx);
/* Checks this node's other tasks (dead, or stopped too long) now. */
void pami_sweep_local_tasks(struct pami_context *ctx, uint64_t now);
/* True once task (of this node) has been seen stopped, without a break,
 * for PAMI_PEER_TIMEOUT; each call is one look. */
bool pami_task_hung(struct pami_context *ctx, uint32_t task, uint64_t now);
/* The task the core barrier waits to hear from now, or UINT32_MAX. */
uint32_t pami_barrier_waits_for(const struct pami_context *ctx);
/* Liveness of tasks on other nodes (liveness.c): at most every
 * PAMI_WATCH_MS, probes those with work pending and fails those that
 * stayed silent for PAMI_PEER_TIMEOUT. */
void pami_liveness_tick(struct pami_context *ctx, uint64_t now);
/* Whether liveness is watched at all: tasks on other nodes, peer errors
 * on, a timeout. The task count first: a job on one node (whose every
 * poll asks) pays two loads for it. */
static inline bool pami_liveness_on(const pami_client_impl_t *c)
{
    return c->num_local_tasks < c->size && c->config.peer_errors &&
           c->config.peer_timeout_ms != 0;
}
/* Whether the tick has anything to watch (waits must wake for it). */
static inline bool pami_liveness_wanted(const struct pami_context *ctx)
{
    return pami_liveness_on(ctx->client) &&
           (ctx->live_any || ctx->live_sent || ctx->inflight > ctx->zombies ||
            ctx->bar_sent);
}
/* A PAMI_DISPATCH_PROBE message from flat endpoint index peer. */
void pami_probe_recv(struct pami_context *ctx, uint32_t peer,
                     uint32_t origin_task, const void *payload, size_t len);
/* Connects one watching endpoint per task on another node
 * (PAMI_PEER_ERRORS); returns how many. */
size_t pami_monitors_start(struct pami_context *ctx);

/* ---- requests (request.c) ---- */
pami_request_t *pami_request_get(struct pami_context *ctx);
void pami_request_put(pami_request_t *req);
pami_request_t *pami_request_by_cookie(struct pami_context *ctx,
                                       uint64_t cookie);
static inline uint64_t pami_request_cookie(const pami_request_t *req)
{
    return ((uint64_t)req->generation << 32) | req->index;
}
int pami_request_set_header(pami_request_t *req, size_t len);
/* The header of a core message: pami's AM header for the core dispatch
 * id, then body. The two fit the request's inline header: callers check
 * with PAMI_CORE_MSG_FITS. */
void pami_request_core_header(pami_request_t *req, uint16_t dispatch,
                              const void *body, size_t len);
#define PAMI_CORE_MSG_FITS(body)                                              \
    _Static_assert(sizeof(pami_am_hdr_t) + sizeof(body) <=                    \
                       PAMI_REQ_INLINE_HDR,                                   \
                   "the request's header fits the request")
void pami_request_done(pami_request_t *req, pami_result_t result);
/* Ends a request that failed before or while starting: local and remote
 * parts both report result. */
void pami_request_fail(pami_request_t *req, pami_result_t result);
static inline void pami_request_local_start(pami_request_t *req)
{
    req->local_pending = true;
    req->ctx->local_inflight++;
}
static inline void pami_request_local_end(pami_request_t *req)
{
    req->local_pending = false;
    req->ctx->local_inflight--;
}
void pami_request_wait_ack(pami_request_t *req);
void pami_request_unwait(pami_request_t *req);
/* The transport's completion of a request's local part (send or
 * rendezvous receive). */
void pami_request_tp_done(tp_req_t *tp, int status);
void pami_request_acked(pami_request_t *req, pami_result_t result);
void pami_request_fail_waiting(struct pami_context *ctx, uint32_t peer,
                               pami_result_t result);
unsigned pami_request_report(struct pami_context *ctx);
/* Ends every operation toward peer with PAMI_PEER_FAILED now, without
 * waiting for UCX, which may never answer for a dead peer. */
void pami_requests_abandon(struct pami_context *ctx, uint32_t peer);
/* Marks what UCX still holds for a failed peer as failed, for UCX to end. */
void pami_requests_peer_failed(struct pami_context *ctx, uint32_t peer);
/* Fails what is left (PAMI_SHUTDOWN) and runs its callbacks. */
void pami_requests_destroy(struct pami_context *ctx);
/* Frees the table; after the worker is gone. */
void pami_requests_free(struct pami_context *ctx);

/* ---- active messages (am_recv.c, send.c) ---- */
/* The shared-memory transport's settings for a context (shm_path.c). */
#define SHM_ENTRY_HDR_BYTES 16
void pami_shm_params(const pami_client_impl_t *c, size_t num_contexts,
                     tp_worker_params_t *wp);

void pami_am_recv(void *arg, const void *hdr, size_t hdr_len, void *data,
                  size_t data_len, void *rndv_desc);
pami_result_t pami_send_ack(struct pami_context *ctx, uint32_t peer,
                            uint64_t cookie, pami_result_t result);
pami_result_t pami_send_internal(struct pami_context *ctx, uint32_t peer,
                                 uint16_t dispatch, const void *payload,
                                 size_t len, pami_req_kind_t kind);
unsigned pami_send_deferred(struct pami_context *ctx);
/* A core message sent at once, without a request: PAMI_SUCCESS when the
 * transport took it (data copied, buffers free), PAMI_EAGAIN when it must
 * go through a request (sends wait before it, no endpoint yet, the
 * transport busy, data over immediate_max, or any error, which the
 * request path then reports). */
pami_result_t pami_send_core_now(struct pami_context *ctx, uint32_t index,
                                 uint16_t dispatch, const void *body,
                                 size_t body_len, const void *data,
                                 size_t data_len);
/* Runs the handler of a user's or protocol's message that arrived whole
 * (the receive path and the records of a SENDS). */
void pami_am_deliver_user(struct pami_context *ctx, uint32_t origin_task,
                          uint32_t origin_ctx, uint16_t dispatch,
                          const uint8_t *uhdr, size_t uhdr_len, void *data,
                          size_t data_len);

/* ---- gathered eager sends (send_gather.c) ---- */
/* pami_peer_t.gather: how sends to the peer may be gathered. */
enum {
    PAMI_GATHER_OFF = 0,
    /* Reached by UCX: only while earlier sends to it wait copied (the
     * transport did not take them at once), the list up to
     * PAMI_SENDS_BYTES. */
    PAMI_GATHER_UCX = 1,
    /* Reached by the shared-memory queues: whenever the send follows
     * another since the last progress (the queue takes each message at
     * once, but as one line or more each: several small ones in one
     * entry move fewer lines to the receiver); the list holds at most
     * immediate_max bytes, so it is copied into the queue whole. */
    PAMI_GATHER_QUEUE = 2,
};
_Static_assert(PAMI_SENDS_DISPATCH_END == PAMI_DISPATCH_CORE_BASE &&
                   PAMI_SENDS_UHDR_MAX == PAMI_HEADER_MAX,
               "a SENDS record carries any user's or protocol's message");
/* The bytes a gathered list (of sends, or the RMA owner's) to endpoint
 * index may hold, of at most whole. To a task of this node whose messages
 * go through the shared-memory queues: immediate_max, what the queue
 * copies in at once; a longer list would leave as a reference the peer
 * reads with process_vm_readv, whose kernel pins each page (a window of
 * 32 puts of 1 KiB: 34 KiB). Elsewhere (UCX): whole. */
static inline size_t pami_list_cap(const struct pami_context *ctx,
                                   uint32_t index, size_t whole)
{
    const pami_client_impl_t *c = ctx->client;
    size_t imax = c->config.immediate_max;
    return c->tasks[index / (uint32_t)c->num_contexts].local &&
                   c->config.shm_fastpath && imax < whole
               ? imax : whole;
}
static inline size_t pami_sends_cap(const struct pami_context *ctx,
                                    uint32_t index)
{
    return pami_list_cap(ctx, index, PAMI_SENDS_BYTES);
}
/* Whether a send of len bytes (user header and data) to peer (slot
 * index) waits in ctx->sends: gathering is on for the peer and the size
 * (over UCX only behind the peer's backlog), the program sent to it since
 * the last progress, so this one is not alone, its record fits the cap,
 * and the list holds nothing for another endpoint (sends that
 * alternate between endpoints leave one by one, as before). Not while
 * PAMI_BOUNCE_MAX messages wait copied in the transport: a list that
 * could not leave at once counts each of its messages, so what a program
 * can leave behind a peer that does not take them stays bounded, and
 * send_immediate answers PAMI_EAGAIN beyond. */
static inline bool pami_sends_wanted(const struct pami_context *ctx,
                                     const pami_peer_t *peer, uint32_t index,
                                     uint32_t dispatch, size_t len)
{
    /* The core's ids (tests forge them) are not carried in records; toward
     * the queues only the program's own sends wait: a protocol's (a
     * collective's) may be the last its call sends before the program
     * waits elsewhere (another library, the bootstrap). */
    bool queue = peer->gather == PAMI_GATHER_QUEUE;
    return peer->sent_poll == ctx->polls && peer->gather != PAMI_GATHER_OFF &&
           dispatch < (queue ? PAMI_DISPATCH_USER_MAX
                             : PAMI_DISPATCH_CORE_BASE) &&
           (queue || peer->backlog != 0) &&
           len <= ctx->client->config.send_gather &&
           pami_sends_rec_size(0, len) <= pami_sends_cap(ctx, index) &&
           (ctx->sends.n == 0 || ctx->sends.peer == index) &&
           ctx->bounced < PAMI_BOUNCE_MAX;
}
/* Appends a message to ctx->sends (sending the list first when it holds
 * another endpoint's or has no room). False: no memory, send it alone. */
bool pami_sends_add(struct pami_context *ctx, uint32_t index,
                    uint16_t dispatch, const void *uhdr, size_t uhdr_len,
                    const void *data, size_t data_len);
/* Sends the list: one message as itself, more as one SENDS. */
void pami_sends_flush(struct pami_context *ctx);
/* A SENDS message from endpoint peer. */
void pami_sends_recv(struct pami_context *ctx, uint32_t origin_task,
                     uint32_t origin_ctx, const uint8_t *rest,
                     size_t rest_len, void *data, size_t data_len);

/* Delivers a message of this context to itself, taken from its queue. */
void pami_am_recv_self(struct pami_context *ctx, const void *hdr,
                       size_t hdr_len, void *data, size_t data_len);

/* ---- sends to the own endpoint (self.c) ---- */
/* Keeps a copy of a message this context sent itself, for progress. */
void pami_self_queue(struct pami_context *ctx, const void *hdr,
                     size_t hdr_len, const void *data, size_t data_len);
/* Delivers those queued before the call; returns how many. */
unsigned pami_self_deliver(struct pami_context *ctx);
/* Frees what is left, at context close. */
void pami_self_discard(struct pami_context *ctx);
/* pami_send_immediate / pami_send with params->dispatch anywhere in the
 * user's and the protocols' ids: for the protocol SDK, which checks first
 * that the id is the calling protocol's own. */
pami_result_t pami_send_immediate_protocol(struct pami_context *ctx,
                                           const pami_send_immediate_t *p);
pami_result_t pami_send_protocol(struct pami_context *ctx,
                                 const pami_send_t *p);
/* Starts req now, or after the transport's progress returns when its peer
 * needs an endpoint first; keeps a peer's order. */
void pami_submit(struct pami_context *ctx, pami_request_t *req);

/* ---- rendezvous by active GET (rndv.c) ---- */
pami_result_t pami_rndv_send(struct pami_context *ctx, uint32_t index,
                             const pami_send_t *params);
void pami_rndv_recv(struct pami_context *ctx, uint32_t peer,
                    pami_endpoint_t origin, uint64_t ack_cookie,
                    const uint8_t *rest, size_t rest_len, const void *data,
                    size_t data_len);
void pami_rndv_start_get(struct pami_context *ctx, pami_peer_t *peer,
                         pami_request_t *req);

/* ---- origin-served rendezvous (rndv_msg.c) ---- */
/* Whether a large send to task goes by chunk messages the origin serves. */
bool pami_rndv_msg_wanted(struct pami_context *ctx, uint32_t task);
/* Target: asks for the first window of chunks of req. */
void pami_rndv_msg_start(struct pami_context *ctx, pami_request_t *req);
/* The bytes of a payload of bytes that travel with its RTS (DATA). */
uint64_t pami_rndv_msg_first(uint64_t bytes);
/* A PAMI_DISPATCH_RNDV_CHUNK message from endpoint peer. */
void pami_rndv_msg_recv(struct pami_context *ctx, uint32_t peer,
                        uint32_t origin_task, const void *buf, size_t len,
                        const void *data, size_t data_len);
/* A chunk message (req->rndv_src set) has reported: its transfer may. */
void pami_rndv_msg_part_done(pami_request_t *req);

/* ---- the split read on one node (rndv_split.c) ---- */
/* Payloads from this size are read by two cores (docs/protocols/
 * rendezvous.md): below it the data is cache-resident, one core is as
 * fast and the hand-over would cost. */
#define PAMI_RNDV_SPLIT_MIN ((size_t)8 << 20)
/* Target: asks the origin of the CMA transfer req to write the upper part
 * of the payload; returns the bytes the target must read itself (all of
 * them when the origin is not asked). */
uint64_t pami_rndv_split_ask(struct pami_context *ctx, pami_request_t *req);
/* A PAMI_DISPATCH_RNDV_WRITE message from endpoint peer. */
void pami_rndv_split_recv(struct pami_context *ctx, uint32_t peer,
                          uint32_t origin_task, const void *buf, size_t len,
                          size_t data_len);
/* UCX has RDMA (rc/dc) toward other nodes (rma.c). */
bool pami_client_has_rdma(pami_client_impl_t *c);
/* Any request of this context that cookie names, or NULL. */
pami_request_t *pami_request_at(struct pami_context *ctx, uint64_t cookie);

/* ---- one-sided operations through the owner (rma_owner.c) ---- */
#define PAMI_RMA_MSG_VERSION 1
enum {
    PAMI_RMA_MSG_PUT = 1,  /* origin -> owner, the data follows */
    PAMI_RMA_MSG_GET,      /* origin -> owner */
    PAMI_RMA_MSG_ATOMIC,   /* origin -> owner */
    PAMI_RMA_MSG_REPLY,    /* owner -> origin, a get's data follows */
    PAMI_RMA_MSG_FENCE,    /* origin -> owner: answered once the earlier
                              messages on the endpoint were applied */
    PAMI_RMA_MSG_PUT_DONE, /* owner -> origin: puts applied, their
                              cookies follow as the data */
    PAMI_RMA_MSG_HELP,     /* origin -> owner: copy this part of a large
                              CMA put or get if you claim its token */
    PAMI_RMA_MSG_REPLIES,  /* owner -> origin: REPLY messages, each with
                              its data, back to back as the data */
    PAMI_RMA_MSG_REQUESTS, /* origin -> owner: PUT and GET messages, each
                              with its data, back to back as the data */
    PAMI_RMA_MSG_CLAIMS    /* origin -> owner on one node: the handle of
                              the origin's page of claim words follows */
};
/* Payload of a PAMI_DISPATCH_RMA message (docs/protocols/rma.md). */
typedef struct {
    uint8_t  version, type;
    uint8_t  op;          /* ATOMIC: pami_rmw_op_t */
    uint8_t  size;        /* ATOMIC: 4 or 8 */
    int32_t  result;      /* REPLY: pami_result_t of the owner's checks;
                             HELP: the origin's token descriptor */
    uint64_t cookie;      /* the origin's request */
    uint32_t owner_ctx, id, generation; /* of the region's copy */
    uint32_t reserved;
    uint64_t offset, bytes;
    uint64_t operand;     /* ATOMIC: value; REPLY: the old value */
    uint64_t compare;     /* ATOMIC CSWAP; HELP: the token; PUT, GET,
                             FENCE: the claim number, 0 for none
                             (rma_claim.c) */
} pami_rma_msg_t;
/* Bit 63 of a claim word: a side is copying (rma_claim.c); never part of
 * a claim number on the wire. */
#define PAMI_RMA_CLAIM_BUSY ((uint64_t)1 << 63)
/* A claimed PUT's op: the owner sends no answer; the origin learns from
 * the claim word that it was applied (a put without callbacks). */
#define PAMI_RMA_PUT_QUIET 1
_Static_assert(sizeof(pami_rma_msg_t) == 64, "one-sided message layout");
/* Pure: checks len bytes (and the data_len that came with them). */
pami_wire_check_t pami_rma_msg_decode(const void *buf, size_t len,
                                      size_t data_len, pami_rma_msg_t *out);
/* Pure: the next message of a REPLIES or REQUESTS (type) payload (buf,
 * len) at *off: the message in out, its data at *data; moves *off past
 * both. */
pami_wire_check_t pami_rma_gathered_next(uint8_t type, const uint8_t *buf,
                                         size_t len, size_t *off,
                                         pami_rma_msg_t *out,
                                         const uint8_t **data);
/* Sends m (type, op, size, region fields, offset, bytes, operands) to the
 * owner; src is a put's data, dst receives dst_len bytes of a get or an
 * atomic's old value. region: a local region the data uses, or -1. */
pami_result_t pami_rma_owner_start(struct pami_context *ctx, uint32_t index,
                                   const pami_rma_msg_t *m, const void *src,
                                   void *dst, size_t dst_len,
                                   pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region);
/* An operation of several parts (a fence's flush and FENCEs, a large
 * put's or get's pieces): each part completes with pami_rma_join_part
 * (cookie = the join); the last one runs local_fn, then remote_fn, with
 * the first error of any part, and frees the join (malloc'd). Parts
 * complete from advance only, never inside the call that issued them. */
typedef struct {
    size_t        left;   /* parts not yet complete */
    pami_result_t result; /* the first error of a part */
    pami_event_fn local_fn;
    pami_event_fn remote_fn;
    void         *cookie;
} pami_rma_join_t;
void pami_rma_join_part(pami_context_t ctx, void *cookie, pami_result_t rc);
/* A put or get (m: PUT or GET of bytes at local) to the owner in
 * messages of piece bytes, each answered alone; the callbacks run once,
 * when every piece was answered, with the first error (rma_pieces.c). */
pami_result_t pami_rma_owner_pieces(struct pami_context *ctx, uint32_t index,
                                    const pami_rma_msg_t *m, void *local,
                                    size_t piece, pami_event_fn local_fn,
                                    pami_event_fn remote_fn, void *cookie,
                                    int32_t region);
/* The same, handing out the request waiting for the answer (*out);
 * PAMI_EAGAIN (nothing sent, no request) for a claimed PUT that the
 * transport could not take as a copy at once. */
pami_result_t pami_rma_owner_begin(struct pami_context *ctx, uint32_t index,
                                   const pami_rma_msg_t *m, const void *src,
                                   void *dst, size_t dst_len,
                                   pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region, pami_request_t **out);
/* Sends a quiet claimed PUT m (no request: nothing waits for an
 * answer) gathered or at once; false when the transport did not take it
 * (nothing sent). */
bool pami_rma_owner_quiet(struct pami_context *ctx, uint32_t index,
                          const pami_rma_msg_t *m, const void *src);
/* Answers the origin's request named by cookie (rma_owner.c). */
void pami_rma_owner_reply(struct pami_context *ctx, uint32_t peer,
                          uint64_t cookie, pami_result_t result);

/* ---- large CMA puts and gets the owner helps with (rma_help.c) ---- */
/* A put or get of at least PAMI_CMA_SPLIT bytes to another task of this
 * node: the owner is asked to copy the upper part while the caller copies
 * the lower one. PAMI_EAGAIN: not taken (copy it all as usual). */
pami_result_t pami_rma_help_start(struct pami_context *ctx, uint32_t index,
                                  bool put, void *local, size_t bytes,
                                  uint64_t raddr, const pami_rma_msg_t *part,
                                  pami_event_fn local_fn,
                                  pami_event_fn remote_fn, void *cookie,
                                  int32_t region);
/* The owner's side of a HELP; addr is the part's address in the region,
 * NULL when the region check refused it. */
void pami_rma_help_serve(struct pami_context *ctx, uint32_t peer,
                         uint32_t task, const pami_rma_msg_t *m,
                         uint8_t *addr);
/* The origin takes back parts no owner claimed (a token given back). */
void pami_rma_help_poll(struct pami_context *ctx);

/* ---- small puts and gets to node peers by message, claimed
 * (rma_claim.c) ---- */
/* A put (or get) of vp's region to node peer index as a claimed
 * message; PAMI_EAGAIN when it should go by CMA instead (then the caller
 * calls pami_rma_claims_settle first). */
pami_result_t pami_rma_claim_start(struct pami_context *ctx, bool get,
                                   uint32_t index, const pami_mr_view_t *vp,
                                   size_t roff, void *local, size_t bytes,
                                   pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region);
/* Every claimed put to peer index (UINT32_MAX: to any peer) is in the
 * owner's memory on return: taken back and copied by CMA, or applied by
 * the owner. Before a CMA operation or a fence to that peer. */
void pami_rma_claims_settle(struct pami_context *ctx, uint32_t index);
/* Claimed puts to index wait for their answer. */
bool pami_rma_claims_to(struct pami_context *ctx, uint32_t index);
/* A FENCE to index answered after the claimed puts before it, taken
 * back like them; PAMI_EAGAIN when none could be sent and they were
 * settled instead (nothing to wait for). */
pami_result_t pami_rma_claim_fence(struct pami_context *ctx, uint32_t index,
                                   pami_event_fn fn, void *cookie);
/* From each poll while claims_out != 0: takes back what waited too long. */
void pami_rma_claims_poll(struct pami_context *ctx);
/* The owner's side: a claimed PUT's number against its claim word; true
 * when the owner applies it (then pami_rma_claim_applied after). */
bool pami_rma_claim_take(struct pami_context *ctx, uint32_t peer,
                         uint64_t seq);
void pami_rma_claim_applied(struct pami_context *ctx, uint32_t peer,
                            uint64_t seq);
/* The owner's side: an origin's CLAIMS message (its page's handle). */
void pami_rma_claims_recv(struct pami_context *ctx, uint32_t peer,
                          uint32_t task, const void *data, size_t len);
void pami_rma_claims_free(struct pami_context *ctx);
/* For fault tests: the claim word of owner endpoint index in this
 * context's page (mine), or of origin endpoint index in its page as
 * mapped here; NULL when there is none yet. */
uint64_t *pami_rma_claim_word(struct pami_context *ctx, uint32_t index,
                              bool mine);
void pami_rma_help_fini(struct pami_context *ctx);
void pami_rma_owner_recv(struct pami_context *ctx, uint32_t peer,
                         uint32_t origin_task, const void *buf, size_t len,
                         const void *data, size_t data_len);
/* Sends the answers to puts gathered during a transport poll. */
void pami_rma_owner_flush(struct pami_context *ctx);
/* Sends the other answers gathered during it (one REPLIES). */
void pami_rma_replies_flush(struct pami_context *ctx);
/* Sends whichever of the two holds answers. */
void pami_rma_answers_flush(struct pami_context *ctx);
/* Sends the puts and gets gathered since the last progress. */
void pami_rma_requests_flush(struct pami_context *ctx);
/* put/get by process_vm_writev/readv to a task of this node; the outcome
 * goes to the callbacks. PAMI_EAGAIN: not allowed here, use the owner's
 * path. (rma_cma.c) */
pami_result_t pami_rma_cma(struct pami_context *ctx, uint32_t index,
                           bool put, void *local, size_t bytes,
                           uint64_t raddr, pami_event_fn local_fn,
                           pami_event_fn remote_fn, void *cookie,
                           int32_t region);
/* Moves the data of the gathered small CMA operations (ctx->cma_batch)
 * and sets their entries' results; nothing when there are none. Called
 * before anything else enters the ring and before the ring's callbacks
 * run (rma_cma.c). */
void pami_cma_batch_flush(struct pami_context *ctx);
static inline void pami_cma_batch_end(struct pami_context *ctx)
{
    if (unlikely(ctx->cma_batch.n != 0))
        pami_cma_batch_flush(ctx);
}
/* Ends an operation done during its call: its callbacks run from the
 * next advance with rc; region (or -1) stays in use until then. Their
 * ring is run by pami_request_report when it meets ctx->rma_batch, and
 * freed by pami_rma_done_free at context close. */
pami_result_t pami_rma_report_later(struct pami_context *ctx, uint32_t index,
                                    pami_result_t rc, pami_event_fn local_fn,
                                    pami_event_fn remote_fn, void *cookie,
                                    int32_t region);
/* Load and store on a node peer's shared region (rma_shm.c). The base of
 * v's memory as this context maps it, or NULL (not a peer's shared region,
 * or it cannot be mapped); v must be the copy pami_mr_decode verified
 * last on ctx. */
void *pami_rma_shm_base(struct pami_context *ctx, const pami_mr_view_t *v);
/* When mr is the copy verified last on ctx and maps a node peer's shared
 * region here (pami_rma_shm_base said so), owned by dest's task, with
 * [offset, offset + bytes) inside it, the owner's address of offset
 * aligned by align_mask and the peer alive: the address of offset in the
 * mapping. Otherwise NULL: the full path decides (memregion.c). */
uint8_t *pami_mr_shm_fast(struct pami_context *ctx, pami_endpoint_t dest,
                          const pami_memregion_t *mr, size_t offset,
                          size_t bytes, uint64_t align_mask);
unsigned pami_rma_done_report(struct pami_context *ctx);
/* Makes room for one entry (then pami_rma_report_later cannot fail). */
bool pami_rma_done_room(struct pami_context *ctx);
void pami_rma_done_free(struct pami_context *ctx);
pami_result_t pami_rma_shm_xfer(struct pami_context *ctx, uint32_t index,
                                bool put, void *local, size_t bytes,
                                uint8_t *remote, pami_event_fn local_fn,
                                pami_event_fn remote_fn, void *cookie,
                                int32_t region, int *completed);
pami_result_t pami_rma_shm_rmw(struct pami_context *ctx, uint32_t index,
                               const pami_rmw_t *p, uint8_t *remote);
/* A sequentially consistent pami_rmw_op_t of size 4 or 8 at addr; the old
 * value. Inline: the load-and-store path is a handful of instructions. */
static inline uint64_t pami_atomic_apply(void *addr, size_t size, int op, uint64_t value,
                           uint64_t compare)
{
    if (size == 4) {
        uint32_t *p = addr, v = (uint32_t)value, old;
        switch (op) {
        case PAMI_RMW_SWAP:
            return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
        case PAMI_RMW_CSWAP:
            old = (uint32_t)compare;
            __atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return old;
        default:
            return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
        }
    }
    uint64_t *p = addr, old;
    switch (op) {
    case PAMI_RMW_SWAP:
        return __atomic_exchange_n(p, value, __ATOMIC_SEQ_CST);
    case PAMI_RMW_CSWAP:
        old = compare;
        __atomic_compare_exchange_n(p, &old, value, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return old;
    default:
        return __atomic_fetch_add(p, value, __ATOMIC_SEQ_CST);
    }
}

/* Reads bytes at src of process pid into dst, a large read on two cores
 * when spare_core (rma_cma.c); 0 or an errno, ESRCH when pid is gone. */
int pami_cma_read(pid_t pid, void *dst, uint64_t src, size_t bytes,
                  bool spare_core);
/* This node has more CPUs than tasks of the job. */
bool pami_cma_spare_core(const pami_client_impl_t *c);
/* Joins the large-read helper thread, if one runs (client destroy). */
void pami_cma_helper_stop(void);
/* Writes bytes at src to dst of process pid (rma_cma.c); 0 or an errno,
 * ESRCH when pid is gone. */
int pami_cma_write(pid_t pid, uint64_t dst, const void *src, size_t bytes);
/* The outcome of a CMA access to task that failed with err (not EPERM):
 * ESRCH declares the task dead (rma_cma.c). */
pami_result_t pami_cma_failed(struct pami_context *ctx, uint32_t task,
                              bool put, size_t bytes, uint64_t raddr, int err);

/* ---- memory regions (memregion.c) ---- */
typedef enum {
    PAMI_MR_OK = 0,
    PAMI_MR_BAD_FORM,   /* size, magic, version, reserved or key length */
    PAMI_MR_BAD_OWNER,  /* owner task outside the job */
    PAMI_MR_BAD_SEAL    /* the owner did not make these bytes */
} pami_mr_verdict_t;
/* Pure: decodes len bytes of a region's wire form and verifies its seal
 * with secrets[owner_task * 16 .. +16) of ntasks; v is written on OK
 * only (its rkey points into buf). */
pami_mr_verdict_t pami_mr_wire_decode(const void *buf, size_t len,
                                      const uint8_t *secrets, size_t ntasks,
                                      pami_mr_view_t *v);
/* The same with the client's secrets; a refusal is logged and counted
 * (stats.bad_regions). */
pami_result_t pami_mr_decode(struct pami_context *ctx,
                             const pami_memregion_t *mr, pami_mr_view_t *v);
/* Clients whose secrets pami_memregion_query checks copies against. */
void pami_mr_job_add(pami_client_impl_t *c);
void pami_mr_job_remove(pami_client_impl_t *c);
/* Registers addr and writes its wire form with region id `id` into mr. */
pami_result_t pami_mr_pack(struct pami_context *ctx, void *addr, size_t bytes,
                           uint32_t id, pami_region_t *r,
                           pami_memregion_t *mr);
/* A free slot of the region table (grown when full). */
pami_result_t pami_region_slot(struct pami_context *ctx, uint32_t *id);
/* Unmaps and unlinks the segment of a region pami allocated, once it is
 * deregistered (memregion_shm.c). */
void pami_shm_region_free(struct pami_context *ctx, uint32_t id,
                          pami_region_t *r);
/* Context close: removes the names of its live segments, and unmaps the
 * peers' segments it mapped (their own segments are unmapped with their
 * registration by pami_regions_destroy). */
void pami_shm_close(struct pami_context *ctx);
/* Maps (once per context) the segment of a node peer's shared region v
 * (verified; flag, owner and locality checked by the caller). */
pami_result_t pami_shm_map_view(struct pami_context *ctx,
                                const pami_mr_view_t *v, void **addr);
/* The live local region behind mr, or NULL (logged). */
pami_region_t *pami_region_local(struct pami_context *ctx,
                                 const pami_memregion_t *mr,
                                 pami_mr_view_t *v);
pami_result_t pami_rkey_get(struct pami_context *ctx, pami_peer_t *peer,
                            const pami_mr_view_t *v, tp_rkey_t **rkey);
void pami_regions_destroy(struct pami_context *ctx);

/* ---- progress (progress.c) ---- */
/* The innermost context whose handlers this thread runs (NULL outside
 * any), and the contexts outside it: a handler of context A may advance
 * context B, whose handler must then still find A in progress. A frame
 * joins the chain only when progress nests, so the common case costs no
 * more than the innermost pointer. */
typedef struct pami_progress_frame {
    struct pami_context        *ctx;   /* the context outside this one */
    struct pami_progress_frame *outer;
} pami_progress_frame_t;
extern __thread struct pami_context *pami_tls_progressing
    __attribute__((tls_model("initial-exec")));
extern __thread pami_progress_frame_t *pami_tls_frames
    __attribute__((tls_model("initial-exec")));

static inline void pami_progress_enter(struct pami_context *ctx,
                                       pami_progress_frame_t *frame)
{
    frame->ctx = pami_tls_progressing;
    if (unlikely(frame->ctx != NULL)) {
        frame->outer    = pami_tls_frames;
        pami_tls_frames = frame;
    }
    pami_tls_progressing = ctx;
}

static inline void pami_progress_leave(pami_progress_frame_t *frame)
{
    pami_tls_progressing = frame->ctx;
    if (unlikely(frame->ctx != NULL))
        pami_tls_frames = frame->outer;
}

/* Whether this thread runs handlers of ctx, at any depth. */
static inline bool pami_progressing(const struct pami_context *ctx)
{
    if (pami_tls_progressing == ctx)
        return true;
    for (pami_progress_frame_t *f = pami_tls_frames; f != NULL; f = f->outer)
        if (f->ctx == ctx)
            return true;
    return false;
}

/* One poll of the context's transport, marked so that what its callbacks
 * call knows it runs inside it (endpoint.c). */
static inline unsigned pami_tp_poll(struct pami_context *ctx)
{
    ctx->in_tp_progress = true;
    unsigned n          = ctx->tp->progress(ctx->worker);
    ctx->in_tp_progress = false;
    /* At most one of the two holds answers (each sends the other's
     * first). */
    if (unlikely((ctx->put_done_n | ctx->replies.n) != 0))
        pami_rma_answers_flush(ctx);
    if (unlikely(ctx->help_posted != 0))
        pami_rma_help_poll(ctx);
    if (unlikely(ctx->claims_out != 0))
        pami_rma_claims_poll(ctx);
    return n;
}

/* Polls the transport until it reports nothing more, at most max times:
 * what peers sent while this context did not look is taken in before a
 * peer is judged by it (a live peer's flood must not keep us here). */
static inline void pami_tp_drain(struct pami_context *ctx, int max)
{
    for (int i = 0; i < max && pami_tp_poll(ctx) > 0; i++)
        ;
}

unsigned pami_progress_once(struct pami_context *ctx);
pami_result_t pami_progress_thread_start(pami_client_impl_t *client);
void pami_progress_thread_stop(pami_client_impl_t *client);
/* Releases ctx->lock taken by a thread other than the progress thread and
 * wakes that thread when what was done under the lock needs progress.
 * Returns pthread_mutex_unlock's result. */
int pami_context_release(struct pami_context *ctx);

/* ---- shutdown (shutdown.c) ---- */
pami_result_t pami_shutdown(struct pami_context **ctxs, size_t n,
                            int timeout_ms);
/* Progresses until every send of the contexts has left, or the deadline. */
pami_result_t pami_drain(struct pami_context **ctxs, size_t n,
                         uint64_t deadline_ns);

/* ---- protocols (protocol.c) ---- */
pami_result_t pami_protocols_builtin(pami_client_impl_t *client);
pami_result_t pami_protocols_add(pami_client_impl_t *client,
                                 const pami_protocol_ops_t *ops, void *cookie,
                                 bool builtin);
/* plugin.c: loads PAMI_PROTOCOLS into plugins_rc (never fails alone:
 * the task cards carry the result); agree returns what every task must
 * return once the cards are in; unload closes the objects. */
void pami_plugins_load(pami_client_impl_t *client);
pami_result_t pami_plugins_agree(pami_client_impl_t *client);
void pami_plugins_unload(pami_client_impl_t *client);
pami_result_t pami_protocols_init(struct pami_context *ctx);
void pami_protocols_fini(struct pami_context *ctx);
void pami_protocols_peer_failed(struct pami_context *ctx, uint32_t task);

/* ---- core barrier (barrier.c) ---- */
pami_result_t pami_barrier(struct pami_context **ctxs, size_t n,
                           uint64_t deadline_ns);
void pami_barrier_recv(struct pami_context *ctx, const void *payload,
                       size_t len, uint32_t origin_task);
void pami_idle(struct pami_context **ctxs, size_t n);

#define PAMI_CHECK(cond, result, subsys, ...)                              \
    do {                                                                    \
        if (unlikely(!(cond))) {                                            \
            pami_warn(subsys, __VA_ARGS__);                                 \
            return (result);                                                \
        }                                                                   \
    } while (0)

#endif

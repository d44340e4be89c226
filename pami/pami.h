/*
 * pami: an active-message middleware over UCX.
 *
 * One client per runtime per process; one or more contexts per client, each
 * with its own UCX worker; endpoints name (task, context offset) pairs.
 * Everything that can fail returns a pami_result_t; callbacks receive one too.
 *
 * Memory ownership is stated next to every callback type below.
 */
#ifndef PAMI_H
#define PAMI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions libpami exports: it is built with hidden
 * visibility, so nothing else leaves the library (docs/abi.md). */
#if defined(__GNUC__)
#define PAMI_EXPORT __attribute__((visibility("default")))
#else
#define PAMI_EXPORT
#endif

#define PAMI_VERSION_MAJOR 0
#define PAMI_VERSION_MINOR 1
#define PAMI_VERSION_PATCH 0

/* ------------------------------------------------------------------------ */
/* Results                                                                   */
/* ------------------------------------------------------------------------ */

/* The one list of result codes; the enum and pami_error_text() are both
 * generated from it, so a code can never lack its text. */
#define PAMI_FOREACH_RESULT(X)                                                   \
    X(PAMI_SUCCESS,     0, "success")                                           \
    X(PAMI_EAGAIN,      1, "resources busy or nothing to do, try again")        \
    X(PAMI_ERROR,       2, "generic error")                                     \
    X(PAMI_INVAL,       3, "invalid argument")                                  \
    X(PAMI_UNIMPL,      4, "not implemented")                                   \
    X(PAMI_ENOMEM,      5, "out of memory")                                     \
    X(PAMI_TIMEOUT,     6, "timed out")                                         \
    X(PAMI_PEER_FAILED, 7, "peer task failed or is unreachable")                \
    X(PAMI_SHUTDOWN,    8, "canceled by shutdown")                              \
    X(PAMI_IN_HANDLER,  9, "not allowed from inside a handler or callback")     \
    X(PAMI_NOT_FOUND,  10, "no such entry")                                     \
    X(PAMI_TRANSPORT,  11, "transport (UCX) error")                             \
    X(PAMI_BOOTSTRAP,  12, "bootstrap (launcher, PMIx or OOB) error")

typedef enum {
#define PAMI_RESULT_ENUM_(name, value, text) name = value,
    PAMI_FOREACH_RESULT(PAMI_RESULT_ENUM_)
#undef PAMI_RESULT_ENUM_
    PAMI_RESULT_LAST
} pami_result_t;

/* Never NULL; "unknown result" for values outside the list. */
PAMI_EXPORT
const char *pami_error_text(pami_result_t result);

/* ------------------------------------------------------------------------ */
/* Handles                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct pami_client  *pami_client_t;
typedef struct pami_context *pami_context_t;

/* An endpoint names a (task, context offset) pair. It is a plain value:
 * copy it, compare it, send it in a header. Make one with
 * pami_endpoint_create(); take it apart with pami_endpoint_query(). */
typedef uint32_t pami_endpoint_t;
#define PAMI_ENDPOINT_NULL ((pami_endpoint_t)UINT32_MAX)

typedef uint32_t pami_task_t;

/* A registered range of memory, as a fixed-size plain value: copy it with
 * memcpy, send it in a header or through any exchange, and use the copy
 * on another task as the remote side of put/get/rmw. It holds the base
 * address, the length, the owner (task and context) and UCX's packed
 * remote key; pami_memregion_query reads them back. */
#define PAMI_MEMREGION_SIZE 256
typedef struct {
    uint64_t opaque[PAMI_MEMREGION_SIZE / sizeof(uint64_t)];
} pami_memregion_t;

/* Completion callback of an operation. Runs inside pami_context_advance()
 * or pami_context_wait() on the context that owns the operation, exactly
 * once, with PAMI_SUCCESS or the reason the operation failed
 * (PAMI_PEER_FAILED, PAMI_SHUTDOWN, ...). */
typedef void (*pami_event_fn)(pami_context_t context, void *cookie,
                              pami_result_t result);

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

/* Every PAMI_* environment variable, described for tools and docs. Index
 * from 0 until the function returns PAMI_NOT_FOUND. */
typedef struct {
    const char *name;          /* "PAMI_LOG_LEVEL" */
    const char *default_value; /* as a string */
    const char *description;
} pami_config_var_t;

PAMI_EXPORT
pami_result_t pami_config_var_sized(unsigned index, pami_config_var_t *var,
                                    size_t var_size);
static inline pami_result_t pami_config_var(unsigned index,
                                            pami_config_var_t *var)
{
    return pami_config_var_sized(index, var, sizeof(*var));
}

/* ------------------------------------------------------------------------ */
/* Client                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum {
    PAMI_BOOTSTRAP_AUTO  = 0, /* pamirun if present, else PMIx, else one task */
    PAMI_BOOTSTRAP_LOCAL = 1, /* served by pamirun over a Unix socket */
    PAMI_BOOTSTRAP_PMIX  = 2, /* mpirun, prterun, srun --mpi=pmix */
    PAMI_BOOTSTRAP_OOB   = 3  /* the program's own allgather, see below */
} pami_bootstrap_kind_t;

/* OOB allgather: every task passes `len` bytes in `send`; on return `recv`
 * holds size * len bytes, task i's contribution at offset i * len. Must be
 * collective over all tasks and return 0 on success. It is called during
 * pami_client_create(), pami_context_createv(), pami_context_destroyv(),
 * and pami_dispatch_fence() before createv (a one-byte allgather). */
typedef int (*pami_oob_allgather_fn)(void *cookie, const void *send,
                                     void *recv, size_t len);

/* Params structs begin with a field_mask; bits are never renumbered and
 * unset fields take their defaults, so the struct can grow. */
enum {
    PAMI_CLIENT_PARAM_BOOTSTRAP      = 1u << 0,
    PAMI_CLIENT_PARAM_OOB            = 1u << 1, /* oob_* fields */
    PAMI_CLIENT_PARAM_ASYNC_PROGRESS = 1u << 2,
    PAMI_CLIENT_PARAM_WAIT_SPIN      = 1u << 3,
    PAMI_CLIENT_PARAM_SHM_MEMBARRIER = 1u << 4
};

typedef struct {
    uint64_t              field_mask;
    pami_bootstrap_kind_t bootstrap;
    pami_oob_allgather_fn oob_allgather;
    void                 *oob_cookie;
    pami_task_t           oob_task;  /* this task's id in the OOB group */
    size_t                oob_size;  /* number of tasks in the OOB group */
    int                   async_progress; /* overrides PAMI_ASYNC_PROGRESS */
    unsigned              wait_spin; /* overrides PAMI_WAIT_SPIN */
    int                   shm_membarrier; /* overrides PAMI_SHM_MEMBARRIER */
} pami_client_params_t;

/* Joins the job: finds the bootstrap, learns task id and size, and which
 * tasks share this node. Collective over all tasks. params may be NULL. */
PAMI_EXPORT
pami_result_t pami_client_create(const char *name,
                                 const pami_client_params_t *params,
                                 pami_client_t *client);

/* Destroys the contexts that are left, then leaves the bootstrap. */
PAMI_EXPORT
pami_result_t pami_client_destroy(pami_client_t *client);

enum {
    PAMI_CLIENT_ATTR_TASK            = 1u << 0,
    PAMI_CLIENT_ATTR_SIZE            = 1u << 1,
    PAMI_CLIENT_ATTR_LOCAL_TASKS     = 1u << 2,
    PAMI_CLIENT_ATTR_DISPATCH_MAX    = 1u << 3,
    PAMI_CLIENT_ATTR_HEADER_MAX      = 1u << 4,
    PAMI_CLIENT_ATTR_IMMEDIATE_MAX   = 1u << 5,
    PAMI_CLIENT_ATTR_RNDV_THRESHOLD  = 1u << 6,
    PAMI_CLIENT_ATTR_NUM_CONTEXTS    = 1u << 7,
    PAMI_CLIENT_ATTR_NAME            = 1u << 8,
    PAMI_CLIENT_ATTR_BOOTSTRAP       = 1u << 9,
    PAMI_CLIENT_ATTR_TRANSPORT       = 1u << 10,
    PAMI_CLIENT_ATTR_JOB_ID          = 1u << 11,
    PAMI_CLIENT_ATTR_LOCAL_CPUS      = 1u << 12,
    PAMI_CLIENT_ATTR_NODES           = 1u << 13
};

typedef struct {
    uint64_t           field_mask;     /* which fields to fill */
    pami_task_t        task;
    size_t             size;
    /* Tasks on this node, sorted; owned by the client, valid until destroy. */
    const pami_task_t *local_tasks;
    size_t             num_local_tasks;
    /* User dispatch ids are 0 .. dispatch_max-1. */
    size_t             dispatch_max;
    /* Largest header of any send. */
    size_t             header_max;
    /* Largest header_len + data_len that pami_send_immediate accepts. */
    size_t             immediate_max;
    size_t             rndv_threshold;
    size_t             num_contexts;   /* created so far, 0 before createv */
    const char        *name;
    pami_bootstrap_kind_t bootstrap;
    const char        *ucx_version;    /* "1.13.1" */
    const char        *transports;     /* UCX transports usable here */
    /* Same on every task of the job, different for two jobs at once: for
     * naming what the tasks share (shared memory, files). */
    const char        *job_id;
    /* CPUs the tasks of this node may run on (the union of their affinity
     * masks): more local tasks than this means they take turns, and a
     * waiting task should yield rather than spin. */
    size_t             num_local_cpus;
    /* The node of every task: task_node[t] in 0 .. num_nodes-1, nodes
     * numbered in the order of their lowest task (task 0 is on node 0).
     * The same on every task; owned by the client, valid until destroy.
     * For hierarchical algorithms: who shares a node with whom. */
    const uint32_t    *task_node;
    size_t             num_nodes;
} pami_client_attr_t;

PAMI_EXPORT
pami_result_t pami_client_query(pami_client_t client, pami_client_attr_t *attr);

/* ------------------------------------------------------------------------ */
/* Contexts and progress                                                     */
/* ------------------------------------------------------------------------ */

#define PAMI_CONTEXT_MAX 64

typedef struct {
    uint64_t field_mask; /* no fields yet; pass NULL or zero */
} pami_context_params_t;

/* Creates n contexts, one UCX worker each, and exchanges their addresses.
 * Collective: every task calls it once with the same n. With
 * PAMI_PEER_ERRORS=1 each context also connects a watching endpoint to
 * every task on another node (tasks of this node are probed instead), so
 * a task's death is noticed, and when any such endpoint exists the tasks
 * meet in a barrier before it returns. */
PAMI_EXPORT
pami_result_t pami_context_createv(pami_client_t client,
                                   const pami_context_params_t *params,
                                   size_t n, pami_context_t *contexts);

/* Collective like createv. Completes what can still complete (bounded by
 * PAMI_SHUTDOWN_TIMEOUT); any operation still pending afterwards completes
 * with PAMI_SHUTDOWN. To be sure a message was handled, wait for its
 * remote_fn before destroying. Sets every element of contexts to NULL. */
PAMI_EXPORT
pami_result_t pami_context_destroyv(pami_context_t *contexts, size_t n);

/* Polls up to `max` times. PAMI_SUCCESS when something happened (UCX
 * reported an event, or a callback or posted work ran), PAMI_EAGAIN when
 * nothing did, PAMI_IN_HANDLER when called from a handler or callback of
 * this context. */
PAMI_EXPORT
pami_result_t pami_context_advance(pami_context_t context, size_t max);

/* Like advance, but when nothing is happening it spins a bounded number of
 * times and then sleeps on the UCX event fd (through libev) until an event,
 * a pami_context_post(), or the timeout. timeout_ms < 0 waits forever.
 * PAMI_SUCCESS when something happened, PAMI_TIMEOUT otherwise. */
PAMI_EXPORT
pami_result_t pami_context_wait(pami_context_t context, int timeout_ms);

/* The context lock (recursive). Calls on one context must not run
 * concurrently; with PAMI_ASYNC_PROGRESS=1 the progress thread takes this
 * lock around its advance, so the program holds it around its own calls. */
PAMI_EXPORT
pami_result_t pami_context_lock(pami_context_t context);
PAMI_EXPORT
pami_result_t pami_context_trylock(pami_context_t context); /* EAGAIN if held */
PAMI_EXPORT
pami_result_t pami_context_unlock(pami_context_t context);

/* Storage for one posted work item; the program owns it until fn runs. */
typedef struct {
    uintptr_t opaque[4];
} pami_work_t;

typedef pami_result_t (*pami_work_fn)(pami_context_t context, void *cookie);

/* The one call that is safe from any thread without the context lock:
 * queues fn to run from advance/wait on this context, and wakes a context
 * sleeping in pami_context_wait. fn runs once; if it returns PAMI_EAGAIN
 * it is queued again. */
PAMI_EXPORT
pami_result_t pami_context_post(pami_context_t context, pami_work_t *work,
                                pami_work_fn fn, void *cookie);

/* Counters of one context, for tests and tools. */
typedef struct {
    uint64_t sends;             /* AMs started */
    uint64_t receives;          /* AMs delivered to a handler */
    uint64_t dropped_unknown;   /* AMs for an id with no handler */
    uint64_t dropped_malformed; /* messages refused as malformed (short,
                                   bad fields, stray acks: docs/api.md) */
    uint64_t peer_failures;     /* tasks found dead, and endpoints that
                                   could not be created */
    uint64_t posted;            /* work items run */
    uint64_t sleeps;            /* times pami_context_wait slept */
    uint64_t bad_regions;       /* memregions refused: forged, corrupted,
                                   of another job (from the program or
                                   the wire) */
    /* The shared-memory queues between endpoints of one node
     * (PAMI_SHM_FASTPATH; docs/protocols/shm-queue.md). */
    uint64_t shm_on;            /* 1 when this context's queues are on */
    uint64_t shm_peers;         /* endpoints that send by queue */
    uint64_t shm_sent;          /* messages sent by queue */
    uint64_t shm_received;      /* messages taken from queues */
    uint64_t shm_full;          /* sends that found their queue full */
    uint64_t shm_wakeups;       /* sleeping peers woken */
    /* Small puts to node peers as claimed messages (docs/protocols/rma.md,
     * "Small puts by message"). */
    uint64_t claim_puts;        /* sent so by this context */
    uint64_t claim_applied;     /* of its peers', applied here (owner) */
    uint64_t claim_taken_back;  /* of its own, copied here by CMA */
    uint64_t claim_cooldowns;   /* take-backs that sent a peer's small
                                   puts by CMA for a while */
} pami_context_stats_t;

PAMI_EXPORT
pami_result_t pami_context_stats_sized(pami_context_t context,
                                       pami_context_stats_t *stats,
                                       size_t stats_size);
static inline pami_result_t pami_context_stats(pami_context_t context,
                                               pami_context_stats_t *stats)
{
    return pami_context_stats_sized(context, stats, sizeof(*stats));
}

/* ------------------------------------------------------------------------ */
/* Endpoints                                                                 */
/* ------------------------------------------------------------------------ */

/* PAMI_INVAL when task >= size or offset >= PAMI_CONTEXT_MAX. The UCX
 * endpoint behind it is created on first use. */
PAMI_EXPORT
pami_result_t pami_endpoint_create(pami_client_t client, pami_task_t task,
                                   size_t context_offset,
                                   pami_endpoint_t *endpoint);

PAMI_EXPORT
pami_result_t pami_endpoint_query(pami_endpoint_t endpoint, pami_task_t *task,
                                  size_t *context_offset);

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */
/* ------------------------------------------------------------------------ */

/* Where a message that is not yet all here should land. The handler fills
 * it when it is called with data == NULL; leaving addr NULL discards the
 * message (the origin still completes). */
typedef struct {
    void         *addr;     /* destination, data_size bytes */
    pami_event_fn local_fn; /* the data is in addr; may be NULL */
    void         *cookie;
    /* Instead of addr: a region of this context and an offset in it (the
     * range is checked; outside it the message is discarded and local_fn
     * gets PAMI_INVAL). The handle mr points at is read after the handler
     * returns: keep it outside the handler's stack. */
    const pami_memregion_t *mr;
    size_t        mr_offset;
} pami_recv_t;

/* Active-message handler. Runs inside advance/wait of the target context,
 * also for a send to the own endpoint (never inside the send call).
 *  - header: valid only during the call.
 *  - data != NULL: the whole payload, valid only during the call; recv is
 *    NULL.
 *  - data == NULL and data_size > 0: the payload is still at the origin;
 *    fill *recv to say where it goes (the buffer must stay valid until
 *    recv->local_fn runs).
 *  - data_size == 0: data may be NULL or not; recv is NULL.
 * A handler may send (immediate or not); it must not call advance or wait
 * (they return PAMI_IN_HANDLER) and must not block. */
typedef void (*pami_dispatch_fn)(pami_context_t context, void *cookie,
                                 const void *header, size_t header_size,
                                 const void *data, size_t data_size,
                                 pami_endpoint_t origin, pami_recv_t *recv);

typedef struct {
    uint64_t field_mask; /* no hints yet; pass NULL or zero */
} pami_dispatch_hint_t;

/* Registers (or with fn == NULL, clears) the handler of `id` on this
 * context. User ids are 0 .. dispatch_max-1 (see pami_client_query).
 * Registration is local: a peer must not send to an id before the target
 * registered it (such messages are dropped and counted). Register, then
 * call pami_dispatch_fence() to make the registration safe job-wide. */
PAMI_EXPORT
pami_result_t pami_dispatch_set(pami_context_t context, size_t id,
                                pami_dispatch_fn fn, void *cookie,
                                const pami_dispatch_hint_t *hints);

/* Collective over all tasks: after it returns on any task, every task has
 * finished the pami_dispatch_set calls it made before entering. Once
 * contexts exist it is a barrier over their own active messages and
 * advances every context while it waits (no other thread may use them
 * meanwhile unless the progress thread runs); before createv it is the
 * bootstrap's barrier. PAMI_PEER_FAILED once a task is known dead. Must
 * not be called from a handler. */
PAMI_EXPORT
pami_result_t pami_dispatch_fence(pami_client_t client);

/* ------------------------------------------------------------------------ */
/* Send                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    pami_endpoint_t dest;
    size_t          dispatch; /* 0 .. dispatch_max-1; higher: PAMI_INVAL
                                 (protocols: pami_protocol_send*) */
    const void     *header;
    size_t          header_len;
    const void     *data;
    size_t          data_len;
} pami_send_immediate_t;

/* Sends header + data (header_len + data_len <= immediate_max). Buffers
 * may be reused on return; no callbacks. PAMI_EAGAIN instead of blocking
 * when the transport has no room right now: advance and retry. */
PAMI_EXPORT
pami_result_t pami_send_immediate_sized(pami_context_t context,
                                        const pami_send_immediate_t *params,
                                        size_t params_size);
static inline pami_result_t
pami_send_immediate(pami_context_t context,
                    const pami_send_immediate_t *params)
{
    return pami_send_immediate_sized(context, params, sizeof(*params));
}

typedef struct {
    pami_send_immediate_t send;
    /* The data buffer may be reused (header is copied at the call). */
    pami_event_fn local_fn;
    /* The target's handler returned and, for a message not all there at
     * the call, its recv->local_fn ran. Costs one reply message. */
    pami_event_fn remote_fn;
    void         *cookie;
} pami_send_t;

/* Any size. The header is copied before return; data must stay valid until
 * local_fn runs (or, without local_fn, until remote_fn runs; with neither,
 * until the context is destroyed). */
PAMI_EXPORT
pami_result_t pami_send_sized(pami_context_t context,
                              const pami_send_t *params, size_t params_size);
static inline pami_result_t pami_send(pami_context_t context,
                                      const pami_send_t *params)
{
    return pami_send_sized(context, params, sizeof(*params));
}

/* ------------------------------------------------------------------------ */
/* Memory regions and one-sided operations                                   */
/* ------------------------------------------------------------------------ */

/* Registers [addr, addr + bytes) with the context's UCX worker. bytes > 0
 * and addr != NULL, else PAMI_INVAL. The memory must stay valid until
 * pami_memregion_destroy. */
PAMI_EXPORT
pami_result_t pami_memregion_create(pami_context_t context, void *addr,
                                    size_t bytes, pami_memregion_t *mr);

/* PAMI_INVAL for a handle this context did not create or destroyed
 * already. Operations still using the region locally complete first: the
 * call advances until they did (PAMI_TIMEOUT, region kept, if that takes
 * longer than PAMI_SHUTDOWN_TIMEOUT; PAMI_EAGAIN from a handler). */
PAMI_EXPORT
pami_result_t pami_memregion_destroy(pami_context_t context,
                                     pami_memregion_t *mr);

/* Allocates bytes (> 0) of memory that the tasks of this node can map
 * (a POSIX shared segment of pami's), zero-filled, page aligned, and
 * registers it as a region exactly as pami_memregion_create would;
 * *addr receives its address in this process. pami_memregion_destroy
 * unregisters it and frees the memory (a peer that mapped it keeps valid
 * memory until its context is destroyed: it never faults). */
PAMI_EXPORT
pami_result_t pami_memregion_alloc(pami_context_t context, size_t bytes,
                                   void **addr, pami_memregion_t *mr);

/* The address at which this task can load and store the memory of a
 * region: its own regions, and regions another task of this node made
 * with pami_memregion_alloc. PAMI_SUCCESS with *addr = the region's
 * base as mapped here; PAMI_NOT_FOUND for a region on another node or
 * over private memory (use pami_put/pami_get); PAMI_INVAL for a forged
 * or corrupted handle. The mapping lasts until the context is
 * destroyed; mapping the same region again returns the same address. */
PAMI_EXPORT
pami_result_t pami_memregion_map(pami_context_t context,
                                 const pami_memregion_t *mr, void **addr);

PAMI_EXPORT
pami_result_t pami_memregion_query(const pami_memregion_t *mr, void **base,
                                   size_t *bytes, pami_endpoint_t *owner);

/* put/get between a local address and a remote region. Every access is
 * checked against the bounds of the remote region before it is issued:
 * outside (or offset + bytes overflowing) is PAMI_INVAL and nothing is
 * sent. bytes == 0 completes at once (callbacks still run, from advance). */
typedef struct {
    pami_endpoint_t         dest;
    void                   *local;         /* put: source, get: target */
    size_t                  bytes;
    const pami_memregion_t *remote_mr;
    size_t                  remote_offset;
    /* put: the local buffer may be reused; get: the data is in local. */
    pami_event_fn           local_fn;
    /* put only: the data is visible at the target (costs a flush). */
    pami_event_fn           remote_fn;
    void                   *cookie;
    /* Optional. Non-NULL: on PAMI_SUCCESS pami writes 1 here when the
     * operation completed inside the call (through a node peer's shared
     * mapping: both sides done, a put's data visible) and then runs
     * neither callback; 0 when the callbacks will run as usual. */
    int                    *completed;
} pami_rma_t;

PAMI_EXPORT
pami_result_t pami_put_sized(pami_context_t context, const pami_rma_t *params,
                             size_t params_size);
PAMI_EXPORT
pami_result_t pami_get_sized(pami_context_t context, const pami_rma_t *params,
                             size_t params_size);
static inline pami_result_t pami_put(pami_context_t context,
                                     const pami_rma_t *params)
{
    return pami_put_sized(context, params, sizeof(*params));
}
static inline pami_result_t pami_get(pami_context_t context,
                                     const pami_rma_t *params)
{
    return pami_get_sized(context, params, sizeof(*params));
}

/* rput/rget: both sides are regions; the local side is checked too. */
typedef struct {
    pami_endpoint_t         dest;
    const pami_memregion_t *local_mr;
    size_t                  local_offset;
    const pami_memregion_t *remote_mr;
    size_t                  remote_offset;
    size_t                  bytes;
    pami_event_fn           local_fn;
    pami_event_fn           remote_fn;     /* rput only */
    void                   *cookie;
    int                    *completed;     /* as in pami_rma_t */
} pami_rrma_t;

PAMI_EXPORT
pami_result_t pami_rput_sized(pami_context_t context,
                              const pami_rrma_t *params, size_t params_size);
PAMI_EXPORT
pami_result_t pami_rget_sized(pami_context_t context,
                              const pami_rrma_t *params, size_t params_size);
static inline pami_result_t pami_rput(pami_context_t context,
                                      const pami_rrma_t *params)
{
    return pami_rput_sized(context, params, sizeof(*params));
}
static inline pami_result_t pami_rget(pami_context_t context,
                                      const pami_rrma_t *params)
{
    return pami_rget_sized(context, params, sizeof(*params));
}

typedef enum {
    PAMI_RMW_FETCH_ADD = 0, /* *result = old; remote += value */
    PAMI_RMW_SWAP      = 1, /* *result = old; remote = value */
    PAMI_RMW_CSWAP     = 2, /* *result = old; if old == compare: remote = value */
    PAMI_RMW_ADD       = 3  /* remote += value; result may be NULL */
} pami_rmw_op_t;

/* Atomic read-modify-write of a 4- or 8-byte integer in a remote region,
 * atomic with respect to every other pami_rmw on it from any task. The
 * target offset must be aligned to size. */
typedef struct {
    pami_endpoint_t         dest;
    const pami_memregion_t *remote_mr;
    size_t                  remote_offset;
    pami_rmw_op_t           op;
    size_t                  size;     /* 4 or 8 */
    uint64_t                value;
    uint64_t                compare;  /* PAMI_RMW_CSWAP only */
    void                   *result;   /* size bytes; valid when done_fn runs */
    pami_event_fn           done_fn;
    void                   *cookie;
    /* Optional, as in pami_rma_t: 1 when the operation completed inside
     * the call (*result holds the old value, done_fn will not run). */
    int                    *completed;
} pami_rmw_t;

PAMI_EXPORT
pami_result_t pami_rmw_sized(pami_context_t context, const pami_rmw_t *params,
                             size_t params_size);
static inline pami_result_t pami_rmw(pami_context_t context,
                                     const pami_rmw_t *params)
{
    return pami_rmw_sized(context, params, sizeof(*params));
}

/* fn runs when every put and rmw issued before on this context to dest
 * (or to every endpoint) is complete at its target. */
PAMI_EXPORT
pami_result_t pami_fence_endpoint(pami_context_t context,
                                  pami_endpoint_t dest, pami_event_fn fn,
                                  void *cookie);
PAMI_EXPORT
pami_result_t pami_fence_all(pami_context_t context, pami_event_fn fn,
                             void *cookie);

/* Ordering: for one origin context and one target endpoint, handlers run in
 * the order the sends were called, for every dispatch id, whatever the
 * message sizes. Nothing is promised between different origin contexts or
 * different targets. See docs/guide.md. */

#ifdef __cplusplus
}
#endif

#endif /* PAMI_H */

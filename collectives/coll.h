/*
 * Private to collectives/: the protocol's per-context state, geometries,
 * collective instances (requests) and their schedules. Sees only the
 * public headers.
 */
#ifndef PAMI_COLL_H
#define PAMI_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pami.h"
#include "pami_collectives.h"
#include "pami_protocol.h"
#include "coll_profile.h"

#define COLL_SUBSYS "coll"
#define coll_log(level, ...) pami_protocol_log(level, COLL_SUBSYS, __VA_ARGS__)
#define coll_warn(...)  coll_log(PAMI_PROTOCOL_LOG_WARN, __VA_ARGS__)
#define coll_debug(...) coll_log(PAMI_PROTOCOL_LOG_DEBUG, __VA_ARGS__)

/* ---- wire ---- */

#define COLL_WIRE_VERSION 2 /* 2: large payloads in pieces fetched by get */

enum { COLL_MSG_DATA = 1, COLL_MSG_ABORT = 2 };
enum { COLL_FLAG_CREATE = 1 }; /* the exchange that creates a geometry */

/* The header of every collectives message (docs/collectives.md). */
typedef struct __attribute__((packed)) {
    uint8_t  version;  /* COLL_WIRE_VERSION */
    uint8_t  type;     /* COLL_MSG_* */
    uint8_t  flags;    /* COLL_FLAG_* */
    uint8_t  algo;     /* algorithm id of the sender */
    uint16_t connid;   /* seq % PAMI_CONNID_BUFFER */
    uint16_t kind;     /* pami_xfer_type_t, or COLL_KIND_CREATE */
    uint32_t geom_id;
    uint32_t seq;      /* collective number on the geometry */
    uint32_t tag;      /* index among the sender's messages to this rank */
    uint32_t src_rank; /* sender's rank in the geometry */
    uint32_t sig;      /* hash of what all members must pass alike */
    uint64_t total;    /* bytes of the whole message */
    uint64_t offset;   /* where this piece goes in it */
} coll_hdr_t;

#define COLL_KIND_CREATE PAMI_XFER_COUNT

/* The checks of a received header that need no state (coll_protocol.c):
 * NULL, or why it is dropped. */
const char *coll_hdr_decode(const void *header, size_t header_size,
                            size_t data_size, coll_hdr_t *h);

/* ---- schedules ---- */

enum {
    SOP_COPY,        /* dst <- src, at step entry */
    SOP_REDUCE,      /* dst <- dst op src, at step entry */
    SOP_SEND,        /* src -> peer, issued at step entry */
    SOP_RECV,        /* peer -> dst, on arrival */
    SOP_RECV_REDUCE, /* peer -> tmp on arrival; dst <- dst op tmp at step end */
    SOP_BARRIER      /* a barrier protocol (peer: COLL_BARRIER_*), at entry */
};

/* The built-in barrier protocols a barrier step can run. */
enum { COLL_BARRIER_PACKETS, COLL_BARRIER_SHM, COLL_BARRIER_HIER };
/* A barrier step that runs the whole collective in shared memory. */
enum { COLL_EXT_SHM = 8 };

struct coll_req;

typedef struct {
    uint8_t     kind;
    uint8_t     lower;  /* reductions: src comes from lower ranks */
    uint8_t     done;   /* receives: all bytes in place */
    uint32_t    peer;   /* geometry rank */
    uint32_t    tag;    /* sends, receives: index among those with peer */
    uint32_t    step;
    size_t      got;    /* receives: bytes in place or being fetched */
    uint32_t    landing; /* receives: pieces being fetched in place */
    void       *dst;
    const void *src;    /* SOP_RECV_REDUCE: the temporary */
    size_t      bytes;
    struct coll_req *req; /* receives: for the landing callback */
} coll_sop_t;

struct coll_ctx;

/* A message kept before it can be used: early for a step not reached, for
 * a collective not posted yet, or for a geometry not created yet. */
typedef struct coll_msg {
    struct coll_msg *next;
    coll_hdr_t       hdr;
    pami_task_t      origin;
    void            *data;
    size_t           len;
    size_t           cap;      /* bytes data can hold (kept when pooled) */
    bool             complete; /* all data here (large ones arrive later) */
    bool             room_inline; /* data is the room allocated with it */
    bool             dead;     /* owner went away: free when complete */
    bool             waiting;  /* counted by coll_kept.c until it joins */
    struct coll_req *owner;    /* set once in a request's early list */
    struct coll_ctx *cc;
} coll_msg_t;

typedef struct coll_algo coll_algo_t;

typedef struct coll_req {
    struct pami_geometry *g;
    struct coll_ctx      *cc;
    const coll_algo_t    *algo;
    uint8_t               algo_id;
    pami_event_fn         done_fn;
    void                 *done_cookie;
    pami_xfer_t           x;     /* the caller's call, copied */
    uint32_t              seq;
    uint16_t              connid;
    uint16_t              kind;
    uint32_t              sig;
    size_t                dtsize;

    coll_sop_t *ops;
    size_t      nops, opcap;
    uint32_t   *steps;           /* first op of each step; nsteps + 1 */
    size_t      nsteps, stepcap;
    void      **tmps;            /* temporaries, kept for the next call */
    size_t     *tmpsz;           /* their sizes */
    size_t      ntmps, tmpcap, tmpkept; /* used now, room, allocated */
    bool        build_failed;

    size_t      cur;             /* step being run */
    size_t      recvs_left;      /* of cur */
    size_t      sends_left;      /* of cur, not yet complete locally */
    size_t      rdv_pending;     /* large payloads still being fetched */
    size_t      ext_pending;     /* barrier protocol calls not done */
    bool        peer_died;       /* a member died while only those ran */
    coll_msg_t *early;           /* for later steps, in arrival order */

    pami_result_t status;
    bool          in_advance, again, in_call, posted, completed;
    bool          zombie;        /* ended; freed once nothing is pending */
    pami_work_t   work;
    /* Geometry creation: {min h, min ~h} of the task list's hash h and
     * of the decision table's hash. */
    uint64_t      create_check[4];
    struct coll_req *pool_next;
    bool          numbered;      /* ops carry their step and tag */
    bool          finish_inline; /* completed in the call: its caller ends it */
    bool          cacheable;     /* the schedule may serve the same call */
    size_t        key_n, key_r;  /* geometry size and rank it was built for */
    bool          key_node;      /* and whether it was the node's tasks */
    uint64_t      key_list;      /* and its task list's hash (node layout) */
    bool          hidden;        /* a flow sync (coll_flow.c): not counted */
    int           online_slot;   /* an online exploration call: its turn */
    double        online_t0;     /* and when it started (us) */
} coll_req_t;

/* ---- geometries ---- */

struct pami_geometry {
    struct coll_ctx      *cc;
    struct pami_geometry *next;   /* in cc->geoms */
    uint32_t              id;
    size_t                size, rank;
    pami_task_t          *tasks;
    pami_endpoint_t      *eps;
    uint64_t              hash;   /* of the task list */
    bool                  world, ready, created;
    bool                  on_node;  /* the tasks are exactly this node's */
    bool                  list_differs; /* seen while creating */
    pami_result_t         create_rc;
    pami_event_fn         create_fn;
    void                 *create_cookie;

    uint32_t    next_seq;
    coll_req_t *slots[PAMI_CONNID_BUFFER]; /* the ConnID buffer */
    unsigned    threshold, in_use, high_water;
    uint64_t    waits, started;
    unsigned    waiters;                   /* callers waiting for a ConnID */
    /* Flow control (coll_flow.c): what one member may receive from the
     * free-running calls since the last sync, and syncs not complete. */
    uint64_t    flow_msgs, flow_bytes;
    unsigned    flow_pending;
    /* A sync that failed (a member died, or sent an abort for it): the
     * windows hold no more, and every later window's call fails so. */
    pami_result_t flow_rc;
    uint32_t      flow_seq; /* the number of the last sync */
    coll_msg_t *unexp, **unexp_tail;       /* for collectives not posted */
    uint16_t    unexp_n[PAMI_CONNID_BUFFER]; /* of those, per ConnID */

    /* Selection (coll_select.c): the geometry's shape, its decision
     * table from the profile (NULL: built-in rules), whether the members
     * confirmed it, and the (collective, size) ranges already logged. */
    coll_shape_t          shape;
    struct coll_table    *table;
    bool                  agreed, agree_started;
    struct coll_online   *online; /* PAMI_COLL_TUNE=online (coll_online.c) */
    uint64_t              agree_v[2]; /* world: {min h, min ~h} */
    uint64_t              logged[PAMI_XFER_COUNT];
    /* The measured built-in rules' span per collective and type class,
     * + 1 (0: the hand-set rules), coll_builtin.c. */
    uint16_t              builtin[PAMI_XFER_COUNT][COLL_TCLASSES];
    /* AUTO's last decision per collective for a call started on the
     * geometry, and the call's inputs that decided it (coll_select.c):
     * a loop of one call asks the table and the checks once, also when
     * calls of other collectives come between. */
    struct coll_memo { /* empty: sel.algorithm 0 */
        pami_type_t                dtype;
        pami_op_t                  op;
        unsigned                   flags;
        size_t                     count, root;
        pami_algorithm_selection_t sel;
    } memo[PAMI_XFER_ALLGATHERV];
};

#define COLL_CACHE 8      /* built schedules kept per context for reuse */
#define COLL_AUTO_IDS 64  /* AUTO rule names resolved, per context */
#define COLL_MAX_ALGOS 64 /* registry entries (ids fit the header's byte) */

typedef struct coll_global coll_global_t;

typedef struct coll_kept coll_kept_t;

typedef struct coll_ctx {
    pami_client_t    client;
    coll_global_t   *gl;       /* the client's ConnID count (coll_global.c) */
    pami_context_t   ctx;
    struct cshm     *shm;      /* ctx's coll_shm state once looked up
                                * (cshm_of_cc, coll_shm.h) */
    size_t           offset;
    pami_protocol_env_t env; /* from init: pami_protocol_send* on id 0 */
    pami_task_t      me;
    size_t           ntasks;
    const pami_task_t *local_tasks; /* of this node, sorted; the client's */
    size_t           num_local;
    size_t           immediate_max;
    size_t           rndv_threshold; /* payloads from here arrive by get */
    size_t           piece;   /* large messages go in pieces of this */
    size_t           piece_local; /* to a peer on this node */
    unsigned         threshold;
    uint64_t         flow_msgs, flow_bytes; /* a window (coll_flow.c) */
    struct pami_geometry *world;
    struct pami_geometry *geoms;
    coll_msg_t      *orphans, **orphans_tail; /* for unknown geometries */
    coll_kept_t     *kept;       /* their bound, with early ones' */
    coll_req_t      *req_pool;   /* free lists (coll_pool.c) */
    size_t           nreq_pool;
    coll_msg_t      *msg_pool;   /* payload room up to COLL_KEEP_MSG */
    size_t           nmsg_pool;
    coll_msg_t      *msg_big;    /* larger room (staging), under the budget */
    size_t           pool_bytes; /* large rooms the free lists hold */
    uint32_t        *scratch;
    size_t           scratch_cap;
    coll_req_t      *cache[COLL_CACHE]; /* ended requests, schedule built */
    unsigned         cache_next;        /* the next to evict */
    struct {
        const char      *name;
        pami_algorithm_t id;
    } auto_ids[COLL_AUTO_IDS];
    uint64_t         spin_ns;  /* PAMI_COLL_SPIN_US; 0 when oversubscribed */
    struct {
        uint64_t in_use, high_water, waits, eagain;
        uint64_t started, completed, failed;
        uint64_t early, unexpected, orphans, late;
        uint64_t malformed, aborts_sent, aborts_received;
        uint64_t large_direct, large_staged;
        uint64_t allocs;
        uint64_t kept_live, kept_high_water; /* kept messages out of the pool */
        uint64_t reqs_live, reqs_high_water; /* requests out of the pool */
        uint64_t cache_hits;
        uint64_t kept_dropped;   /* refused by the bound (coll_kept.c) */
        uint64_t waiting_high_water, waiting_bytes_high_water;
        uint64_t flow_syncs, flow_waits, flow_prepended; /* coll_flow.c */
    } st;
    /* Calls per registry id (index id - 1) and AUTO's reasons
     * (pami_selected_reason_t), for the coll_select counters. */
    uint64_t         algo_calls[COLL_MAX_ALGOS];
    uint64_t         selected[PAMI_SELECTED_ONLINE + 1];
    uint64_t         table_mismatches;
} coll_ctx_t;

/* ---- algorithms ---- */

struct coll_algo {
    const char      *name;
    pami_xfer_type_t kind;
    uint32_t         requirements; /* PAMI_ALGORITHM_REQ_* */
    size_t           range_lo, range_hi;
    pami_result_t  (*check)(const pami_xfer_t *xfer); /* NULL: always */
    pami_result_t  (*build)(coll_req_t *req);
};

extern const coll_algo_t coll_algos[];
extern const size_t      coll_num_algos;

/* coll_protocol.c */
extern const pami_protocol_ops_t coll_protocol_ops;
coll_ctx_t *coll_ctx_of(pami_context_t context);
void coll_send_abort(coll_ctx_t *cc, struct pami_geometry *g, uint32_t seq,
                     uint16_t kind);
void coll_msg_free(coll_msg_t *m);

/* coll_geometry.c */
pami_result_t coll_geometry_new(coll_ctx_t *cc, uint32_t id,
                                const pami_task_t *tasks, size_t n,
                                bool world, struct pami_geometry **out);
void coll_geometry_free(struct pami_geometry *g);
struct pami_geometry *coll_geometry_find(coll_ctx_t *cc, uint32_t id);
void coll_geometry_created(coll_req_t *req);
bool coll_task_in(const pami_task_t *tasks, size_t n, pami_task_t t);

/* coll_global.c: the client-wide ConnID count. try reserves one unit
 * below the threshold (false: at it), take one whatever the count, put
 * gives one back. */
coll_global_t *coll_global_join(coll_ctx_t *cc, unsigned threshold);
void coll_global_leave(coll_ctx_t *cc);
bool coll_global_try(coll_global_t *gl);
bool coll_global_below(const coll_global_t *gl);
void coll_global_take(coll_global_t *gl);
void coll_global_put(coll_global_t *gl);
void coll_global_waited(coll_global_t *gl);
/* A unit over the threshold after COLL_GLOBAL_WAIT_S, with a warning. */
#define COLL_GLOBAL_WAIT_S 2.0
void coll_global_overrun(coll_ctx_t *cc);
void coll_global_progress_others(coll_ctx_t *cc);
void coll_global_stats(const coll_global_t *gl, uint64_t *in_use,
                       uint64_t *high_water, uint64_t *waits,
                       uint64_t *threshold, uint64_t *overruns);

/* coll_connid.c: acquire waits until the geometry's count and the
 * client's are below their thresholds and the next element is free, and
 * reserves a unit of the client's count; lock takes the element (with
 * that unit, or a new one: with_unit false); release gives both back;
 * unreserve gives back a unit no element took. */
pami_result_t coll_connid_acquire(struct pami_geometry *g);
void coll_connid_lock(struct pami_geometry *g, coll_req_t *req,
                      bool with_unit);
void coll_connid_unreserve(struct pami_geometry *g);
/* A call that holds no ConnID (run inline, nothing of it travels) waits
 * as acquire would, and reserves nothing. */
pami_result_t coll_connid_pass(struct pami_geometry *g);
void coll_connid_release(struct pami_geometry *g, coll_req_t *req);
/* One wait of a caller waiting for its turn: PAMI_SUCCESS to look again
 * (a timeout too), PAMI_EAGAIN in a handler (counted), else the error. */
pami_result_t coll_wait_once(coll_ctx_t *cc, int timeout_ms);
void coll_deliver(struct pami_geometry *g, const coll_hdr_t *h,
                  pami_task_t origin, const void *data, size_t len,
                  pami_recv_t *recv);
void coll_claim_unexpected(coll_req_t *req);

/* coll_kept.c: the bound on messages kept for a collective not posted
 * or a geometry not created here (docs/collectives.md). Defaults of
 * PAMI_COLL_KEPT_MAX / _BYTES (per context; half of it per sending task)
 * and PAMI_COLL_KEPT_GEOM_MAX / _BYTES (per geometry id). */
#define COLL_KEPT_MAX        65536
#define COLL_KEPT_BYTES      (2ull << 30)
#define COLL_KEPT_GEOM_MAX   16384
#define COLL_KEPT_GEOM_BYTES (1ull << 30)
coll_kept_t *coll_kept_new(void);
void coll_kept_free(coll_kept_t *k);
/* Counts one message of len bytes before it is kept; false (counted in
 * kept_dropped, logged once) beyond a bound. */
bool coll_kept_admit(coll_ctx_t *cc, const coll_hdr_t *h, pami_task_t origin,
                     size_t len);
/* Takes back an admission whose message could not be kept. */
void coll_kept_unadmit(coll_ctx_t *cc, const coll_hdr_t *h,
                       pami_task_t origin, size_t len);
/* coll_msg_keep within the bound: NULL with *refused when beyond it
 * (counted), NULL without when out of memory. */
coll_msg_t *coll_kept_keep(coll_ctx_t *cc, const coll_hdr_t *h,
                           pami_task_t origin, const void *data, size_t len,
                           pami_recv_t *recv, bool *refused);
/* The message joins its collective or goes away: it no longer counts. */
void coll_kept_release(coll_msg_t *m);
size_t coll_kept_bytes(const coll_ctx_t *cc);
/* The bounds: per context (messages, bytes) and per geometry id. */
void coll_kept_limits(const coll_ctx_t *cc, size_t *ctx_n, size_t *ctx_bytes,
                      size_t *geom_n, size_t *geom_bytes);

/* coll_flow.c: how far a task may run ahead of a member in collectives
 * that complete without it (docs/collectives.md, "Running ahead"). init
 * sets the window from the kept bounds; before: ahead of a call of
 * algorithm algo_id, may start (or wait for) the geometry's sync, and
 * returns the call's weight (0: none, or prepended) for count once the
 * call started; prepends: the call's schedule begins with a barrier;
 * drain: waits for the geometry's syncs (PAMI_EAGAIN in a handler). */
void coll_flow_init(coll_ctx_t *cc);
pami_result_t coll_flow_before(struct pami_geometry *g, const pami_xfer_t *x,
                               uint8_t algo_id, uint64_t *msgs,
                               uint64_t *bytes);
void coll_flow_count(struct pami_geometry *g, uint64_t msgs, uint64_t bytes);
bool coll_flow_prepends(const coll_ctx_t *cc, const struct pami_geometry *g,
                        const pami_xfer_t *x, uint8_t algo_id);
pami_result_t coll_flow_drain(struct pami_geometry *g);
/* A call refused here (the members that run it are told to end it):
 * counted as they count it when what they all pass alike is valid. */
void coll_flow_aborted(struct pami_geometry *g, const pami_xfer_t *x);
size_t coll_kept_count(const coll_ctx_t *cc);

/* coll_pool.c */
bool coll_grow(coll_ctx_t *cc, void **arr, size_t *cap, size_t need,
               size_t elem);
/* The program's xfer as far as its field_mask says (coll_xfer.c): the
 * struct grows by fields with a bit, so a bit that is clear means the
 * field may not be there at all. */
#define COLL_XFER_FIELDS_KNOWN                                               \
    (PAMI_XFER_FIELD_ALGORITHM | PAMI_XFER_FIELD_USER_OP |                   \
     PAMI_XFER_FIELD_VCOUNTS)
const char *coll_xfer_mask_invalid(uint64_t mask); /* NULL: fine */
void coll_xfer_copy(pami_xfer_t *dst, const pami_xfer_t *x);
/* pami_geometry_algorithm_selected on the current struct (coll_select.c). */
pami_result_t coll_algorithm_selected(const pami_xfer_t *x,
                                      pami_algorithm_selection_t *out);

coll_req_t *coll_req_new(struct pami_geometry *g, const pami_xfer_t *x,
                         uint16_t kind);
void  coll_req_free(coll_req_t *req);
coll_req_t *coll_cache_take(coll_ctx_t *cc, struct pami_geometry *g,
                            const pami_xfer_t *x);
coll_msg_t *coll_msg_new(coll_ctx_t *cc, size_t len);
void  coll_msg_destroy(coll_msg_t *m);
uint32_t *coll_scratch(coll_ctx_t *cc, size_t n);
void  coll_pool_fini(coll_ctx_t *cc);

/* coll_sched.c */
void  sb_step(coll_req_t *req);
void  sb_send(coll_req_t *req, size_t peer, const void *src, size_t bytes);
void  sb_recv(coll_req_t *req, size_t peer, void *dst, size_t bytes);
void  sb_recv_reduce(coll_req_t *req, size_t peer, void *dst, size_t bytes,
                     bool lower);
void  sb_copy(coll_req_t *req, void *dst, const void *src, size_t bytes);
void  sb_reduce(coll_req_t *req, void *dst, const void *src, size_t bytes,
                bool lower);
void  sb_barrier(coll_req_t *req, int which);
void *sb_tmp(coll_req_t *req, size_t bytes);
void  coll_start(coll_req_t *req);
void  coll_start_call(coll_req_t *req, bool finish_inline);
void  coll_advance(coll_req_t *req);
void  coll_fail(coll_req_t *req, pami_result_t rc, bool tell_peers);
void  coll_kick(coll_req_t *req);
void  coll_on_message(coll_req_t *req, const coll_hdr_t *h, const void *data,
                      size_t len, pami_recv_t *recv);
void  coll_adopt(coll_req_t *req, coll_msg_t *m);
void  coll_finish_now(coll_req_t *req, pami_result_t rc);
coll_msg_t *coll_msg_keep(struct coll_ctx *cc, const coll_hdr_t *h,
                          pami_task_t origin, const void *data, size_t len,
                          pami_recv_t *recv);

/* coll_alg_*.c: schedule builders, appending steps to req. Buffers are
 * byte pointers; sizes in bytes unless named count. */
void bld_barrier_dissemination(coll_req_t *req);
void bld_bcast_binomial(coll_req_t *req, size_t root, void *buf,
                        size_t bytes);
void bld_bcast_knomial(coll_req_t *req, size_t root, void *buf, size_t bytes,
                       size_t radix);
void bld_bcast_scatter_allgather(coll_req_t *req, size_t root, void *buf,
                                 size_t count);
void bld_reduce_binomial(coll_req_t *req, size_t root, const void *in,
                         void *out, size_t bytes);
void bld_allreduce_rd(coll_req_t *req, const void *in, void *out,
                      size_t bytes);
void bld_allreduce_ring(coll_req_t *req, const void *in, void *out,
                        size_t count);
void bld_reduce_scatter_ring(coll_req_t *req, const void *in, void *out,
                             size_t bytes);
void bld_allreduce_rabenseifner(coll_req_t *req, const void *in, void *out,
                                size_t count);
void bld_reduce_scatter_halving(coll_req_t *req, const void *in, void *out,
                                size_t bytes);
void bld_alltoall_linear(coll_req_t *req, const void *in, void *out,
                         size_t bytes);
void bld_alltoall_bruck(coll_req_t *req, const void *in, void *out,
                        size_t bytes);
void bld_bcast_chain(coll_req_t *req, size_t root, void *buf, size_t count,
                     size_t chunk_bytes);
void bld_scan_rd(coll_req_t *req, const void *in, void *out, size_t bytes,
                 bool exclusive);
void bld_allgatherv_ring(coll_req_t *req, const void *in, void *out,
                         const size_t *bytes, const size_t *offs);
void bld_allgather_rd(coll_req_t *req, const void *in, void *out,
                      size_t bytes);
void bld_allgather_bruck(coll_req_t *req, const void *in, void *out,
                         size_t bytes);
void bld_gatherv_linear(coll_req_t *req, size_t root, const void *in,
                        size_t inbytes, void *out, const size_t *bytes,
                        const size_t *offs);
void bld_scatterv_linear(coll_req_t *req, size_t root, const void *in,
                         const size_t *bytes, const size_t *offs, void *out,
                         size_t outbytes);
void bld_gather_binomial(coll_req_t *req, size_t root, const void *in,
                         void *out, size_t bytes);
void bld_scatter_binomial(coll_req_t *req, size_t root, const void *in,
                          void *out, size_t bytes);
void bld_alltoallv_pairwise(coll_req_t *req, const void *in,
                            const size_t *sbytes, const size_t *soffs,
                            void *out, const size_t *rbytes,
                            const size_t *roffs);

/* coll_alg_shm.c: the shared-memory collectives of a node. Register
 * barriers (COLL_BARRIER_SHM, _HIER) and COLL_EXT_SHM steps start in call
 * order through one queue per context; done runs from progress. */
pami_result_t coll_shm_start(coll_req_t *req, int which, pami_event_fn done);
pami_result_t coll_shm_quiesce(pami_context_t ctx); /* waits: queue empty */
pami_result_t coll_shm_check(const pami_xfer_t *xfer);
pami_result_t coll_shm_build(coll_req_t *req);
pami_result_t coll_shm_blocks_check(const pami_xfer_t *xfer); /* a2a, r_s */
pami_result_t coll_shm_cma_check(const pami_xfer_t *xfer); /* a2a_cma */
pami_result_t coll_shm_cma_any_check(const pami_xfer_t *xfer); /* ar, bc */
pami_result_t coll_shm_cma_rs_check(const pami_xfer_t *xfer); /* r_s */
bool coll_shm_auto(const pami_xfer_t *xfer); /* AUTO picks the shm one */
/* ... and for a broadcast (coll_shm_auto said yes), the eager ring. */
bool coll_shm_auto_ring(const pami_xfer_t *xfer);
/* PAMI_COLL_SHM_AUTO: AUTO may take them at all (a profile too). */
bool coll_shm_auto_allowed(pami_context_t ctx);
/* A call that failed its checks here: keeps the register aligned with
 * the members that run it (a round every member reads as a mismatch). */
void coll_shm_poison(pami_context_t ctx, const pami_xfer_t *xfer);
/* Runs a small blocking call inline when it can (true, *rc its result);
 * cc is coll_ctx_of the call's context (NULL: it cannot). */
bool coll_shm_wait_inline(coll_ctx_t *cc, const pami_xfer_t *xfer,
                          pami_result_t *rc);

/* coll_alg_hier.c: allreduce over several nodes (node, leaders, node). */
pami_result_t coll_hier_check(const pami_xfer_t *xfer);
pami_result_t coll_hier_build(coll_req_t *req);

/* coll_api.c: the built-in AUTO rule's id (0: none); whether a can run
 * x on g (requirements and check). */
pami_algorithm_t coll_auto_builtin(const pami_xfer_t *x,
                                   struct pami_geometry *g);
bool coll_algo_runs(const coll_algo_t *a, const pami_xfer_t *x,
                    const struct pami_geometry *g);

/* coll_select.c: selection from a profile (docs/tuning.md). */
void coll_select_geometry(coll_ctx_t *cc, struct pami_geometry *g);
uint64_t coll_select_hash(const struct pami_geometry *g);
/* The members' tables agree (same) or not: without, built-in rules. */
void coll_select_agreed(struct pami_geometry *g, bool same);
/* Before a call on a geometry whose members have not compared tables
 * (the world): starts the comparison, and for an AUTO call with a table
 * waits for it; PAMI_EAGAIN when it would wait in a handler. */
pami_result_t coll_select_ready(coll_ctx_t *cc, struct pami_geometry *g,
                                const pami_xfer_t *x);
/* AUTO's algorithm for x on g (0: none); sel (may be NULL) says why;
 * call: the call runs now (PAMI_COLL_LOG logs it). */
pami_algorithm_t coll_auto_select(const pami_xfer_t *x,
                                  struct pami_geometry *g,
                                  pami_algorithm_selection_t *sel, bool call);
/* What besides kind, type, op, count and root a decision may depend on:
 * the checks look at in place and a user op's commutativity. */
static inline unsigned coll_memo_flags(const pami_xfer_t *x)
{
    unsigned f = (x->sbuf == PAMI_IN_PLACE) | (x->rbuf == PAMI_IN_PLACE) << 1;
    /* Nothing that decides reads the user op's fields unless op is
     * PAMI_OP_USER (coll_commutative, the checks): an AUTO call on the
     * inline shared-memory path skips them, as the named call does. */
    if (x->op != PAMI_OP_USER)
        return f;
    return f |
           (unsigned)((x->field_mask & PAMI_XFER_FIELD_USER_OP) != 0) << 2 |
           (x->user_fn != NULL) << 3 | (x->user_commutative != 0) << 4;
}

/* The memo's decision for a started AUTO call x, or 0 when it holds none
 * (the caller then asks coll_auto_select, which fills it). A memo is
 * filled only on an agreed geometry without online tuning and for a
 * collective below the v-variants, which stay so: its hit needs no more
 * than the inputs compared. Inline: it is on every small AUTO call. */
static inline pami_algorithm_t coll_auto_memo(const pami_xfer_t *x,
                                              const struct pami_geometry *g,
                                              pami_selected_reason_t *reason)
{
    if ((unsigned)x->kind >= PAMI_XFER_ALLGATHERV)
        return 0;
    const struct coll_memo *m = &g->memo[x->kind];
    if (m->count != x->count || m->dtype != x->dtype ||
        m->root != x->root || m->op != x->op ||
        m->flags != coll_memo_flags(x))
        return 0;
    *reason = m->sel.reason;
    return m->sel.algorithm;
}
/* AUTO's algorithm for a started call x: the memo's, else a selection
 * (logged, and kept in the memo when it may be); *why its reason. */
static inline pami_algorithm_t coll_auto_choice(const pami_xfer_t *x,
                                                struct pami_geometry *g,
                                                pami_selected_reason_t *why)
{
    pami_algorithm_t id = coll_auto_memo(x, g, why);
    if (id == 0) {
        pami_algorithm_selection_t s;
        id   = coll_auto_select(x, g, &s, true);
        *why = s.reason;
    }
    return id;
}
void coll_select_free(struct pami_geometry *g);
/* The size a call is selected by (equal on every member). */
uint64_t coll_select_bytes(const pami_xfer_t *x, const struct pami_geometry *g);
bool coll_select_online(void);
bool coll_select_logging(void); /* PAMI_COLL_LOG=1 */
/* At the end of a context: PAMI_COLL_PROFILE_OUT gets what it learnt. */
void coll_select_context_end(coll_ctx_t *cc);

/* coll_online.c: online refinement (PAMI_COLL_TUNE=online). peek: the
 * algorithm for x (0: not decided here), *exploring when it is a trial;
 * commit: the call runs id (a trial is timed: with req at its release,
 * else the caller records the returned slot); ready: before a call at a
 * point whose trials ended, wait for them and agree (PAMI_EAGAIN in a
 * handler). */
void coll_online_geometry(struct pami_geometry *g);
void coll_online_free(struct pami_geometry *g);
pami_algorithm_t coll_online_peek(struct pami_geometry *g,
                                  const pami_xfer_t *x, unsigned cls,
                                  uint64_t bytes, bool *exploring);
int coll_online_commit(struct pami_geometry *g, const pami_xfer_t *x,
                       pami_algorithm_t id, coll_req_t *req);
void coll_online_record(struct pami_geometry *g, int slot, double us);
void coll_online_done(coll_req_t *req);
double coll_online_now_us(void);
pami_result_t coll_online_ready(coll_ctx_t *cc, struct pami_geometry *g,
                                const pami_xfer_t *x);
void coll_online_collect(coll_ctx_t *cc, coll_profile_t *prof);

/* coll_types.c */
bool coll_type_valid(pami_type_t t);
bool coll_op_valid(pami_type_t t, pami_op_t op);
void coll_reduce_builtin(pami_type_t t, pami_op_t op, void *inout,
                         const void *in, size_t count);

/* Commutative for the call: built-in ops always, user ops when flagged. */
static inline bool coll_commutative(const pami_xfer_t *x)
{
    return x->op != PAMI_OP_USER || x->user_commutative;
}

static inline bool coll_pow2(size_t n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

#endif /* PAMI_COLL_H */

/*
 * Private to coll_shm_seg.c and coll_alg_shm.c: the per-context state of
 * the shared-memory collectives (a protocol of its own, "coll_shm", for
 * its state, counters and setting) and the node's segment.
 */
#ifndef PAMI_COLL_SHM_H
#define PAMI_COLL_SHM_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "coll.h"

#define CSHM_SUBSYS "coll_shm"
#define cshm_log(level, ...) pami_protocol_log(level, CSHM_SUBSYS, __VA_ARGS__)


#define CSHM_MAGIC   0x316d6873696d6170ull /* "pamishm1" */
#define CSHM_VERSION 8 /* 4: the ring's dense entries; 5: claims apart;
                          6: alltoall_shm_cma's lines, no barriers;
                          7: the numbered lines' areas (CSHM_LL_*);
                          8: broadcast_shm_cma's lines as alltoall's */
#define CSHM_LINE    64   /* one control line per task and parity */
#define CSHM_CTL_OFF 256  /* control lines start here in the header */
#define CSHM_SEQ_OFF 8    /* the round's number + 1, in its control line */
#define CSHM_TINY_OFF 16  /* a tiny call's data, in its control line */
#define CSHM_TINY    (CSHM_LINE - CSHM_TINY_OFF)

/* The segment's first bytes, written by the leader before the first
 * set-up barrier and checked by every follower after it. */
typedef struct {
    uint64_t         magic;
    uint32_t         version;
    uint32_t         nlocal;
    uint64_t         slot;      /* bytes of one slot */
    uint64_t         hdr_bytes; /* where the slots start */
    uint64_t         job_hash;
    _Atomic uint32_t attached;  /* tasks that mapped it and agree */
    _Atomic uint32_t sleepers;  /* flag-round waiters asleep on wake */
    _Atomic uint32_t wake;      /* bumped by a writer when sleepers > 0 */
} cshm_hdr_t;

enum { CSHM_SETUP_NONE, CSHM_SETUP_RUNNING, CSHM_SETUP_READY,
       CSHM_SETUP_FAILED };

/* What the head entry of the queue waits for. */
enum { CSHM_ST_REG, CSHM_ST_SETUP1, CSHM_ST_SETUP2, CSHM_ST_OP,
       CSHM_ST_FLAG,     /* a flag round waits for the lines' numbers */
       CSHM_ST_FLAG_BAR, /* a flag round found a mismatch: one barrier */
       CSHM_ST_RING,     /* an eager broadcast waits for its ring entry */
       CSHM_ST_A2A       /* alltoall_shm_cma reads and waits for its readers */ };

/* What the flag rounds' waiter thread is asked to do. */
enum { CSHM_CMD_NONE, CSHM_CMD_WAIT, CSHM_CMD_RING, CSHM_CMD_STOP };

/* The eager broadcast's ring (after the slots): one line per task with
 * the ring calls it entered and finished; then CSHM_RING dense entries
 * of CSHM_RING_DENSE bytes, each a header and, up to CSHM_RING_SMALL
 * bytes, the data (from CSHM_RING_DATA on); then CSHM_RING areas of
 * CSHM_RING_MAX bytes, the data of larger calls; then the entries'
 * claims, 8 bytes each, apart from the entries a waiting reader polls
 * (a claim there made the root's compare-and-swap wait for the line). Dense entries lie next
 * to each other so that a reader's stream of small calls walks memory
 * the hardware prefetches (entries a page apart each cost a miss). */
#define CSHM_RING       64
#define CSHM_RING_MAX   16384 /* coll_algos.c: broadcast_shm_eager's range */
#define CSHM_RING_DATA  32
#define CSHM_RING_SMALL 288
#define CSHM_RING_DENSE (CSHM_RING_DATA + CSHM_RING_SMALL)
#define CSHM_RING_BYTES (CSHM_RING * (CSHM_RING_DENSE + CSHM_RING_MAX + 8))

/* The numbered lines of small allgather and alltoall flag rounds
 * (coll_alg_shm_ll.c), after the ring: an area of CSHM_LL_BYTES per
 * task and parity, lines of a number (8 bytes), the signature (4) and
 * CSHM_LL_DATA bytes of data; used when the data a task writes is at
 * most CSHM_LL_MAX bytes and its lines fit the area. */
#define CSHM_LL_BYTES 4096
#define CSHM_LL_LINES (CSHM_LL_BYTES / CSHM_LINE)
#define CSHM_LL_DATA  (CSHM_LINE - 12)
#define CSHM_LL_MAX   512 /* measured better to 256 B (allgather, 2
                             tasks); 1-2 KiB not yet in one turn */

#include "coll_shm_check.h"

typedef struct {
    _Atomic uint64_t done;    /* ring calls finished here */
    _Atomic uint64_t arrived; /* ring calls entered here */
} cshm_ring_task_t;

typedef struct {
    _Atomic uint64_t seq;     /* call k's data is here: k + 1 */
    uint64_t         unused;  /* the claim until version 4 */
    uint32_t         sig;     /* of the root's call (0: a ghost root) */
    uint32_t         len;
} cshm_ring_entry_t;

/* The data collectives the engine runs. */
enum { CSHM_AR_SMALL, CSHM_AR_LARGE, CSHM_RED_SMALL, CSHM_RED_LARGE,
       CSHM_BCAST, CSHM_ALLGATHER,
       CSHM_ALLTOALL, CSHM_REDSCAT, CSHM_A2A_CMA, /* coll_alg_shm_blocks.c */
       CSHM_AR_CMA, CSHM_BC_CMA, CSHM_RS_CMA, CSHM_AG_CMA /* coll_alg_shm_cma.c */ };

/* Kinds that read the others' buffers (process_vm_readv): no data in the
 * slots, no flag rounds (alltoall_shm_cma: no barriers, its own waits). */
static inline bool cshm_cma_kind(int kind)
{
    return kind == CSHM_A2A_CMA || kind == CSHM_AR_CMA ||
           kind == CSHM_BC_CMA || kind == CSHM_RS_CMA || kind == CSHM_AG_CMA;
}

/* Kinds run by coll_alg_shm_a2a.c without barriers: alltoall_shm_cma
 * and broadcast_shm_cma. */
static inline bool cshm_nobar_kind(int kind)
{
    return kind == CSHM_A2A_CMA || kind == CSHM_BC_CMA;
}

typedef struct {
    coll_req_t          *req;
    int                  which; /* COLL_BARRIER_SHM, _HIER or COLL_EXT_SHM */
    pami_event_fn        done;  /* the executor's completion */
    bool                 attached; /* its step started: req stays valid */
    bool                 ring;  /* a poison entry of an eager broadcast */
    bool                 ring_root; /* ... whose root this task was */
} cshm_entry_t;

/* The data collective at the head of the queue. */
typedef struct {
    coll_req_t          *req;     /* NULL when run inline */
    const pami_xfer_t   *x;
    struct pami_geometry *g;
    uint32_t             sig;     /* of the call, in the control line */
    int                  kind;    /* CSHM_AR_SMALL, ... */
    size_t               n, rank, root, es;
    size_t               total;   /* bytes per rank (allgather: a block) */
    size_t               chunk;   /* bytes per round */
    size_t               pos, len; /* the round's bytes */
    const unsigned char *in;
    unsigned char       *out;
    bool                 in_place;
    bool                 user;    /* user op: folded from the top rank */
    bool                 first;   /* the next barrier is the op's first */
    bool                 tiny;    /* data in the control lines */
    bool                 flag;    /* a flag round: no register barrier */
    bool                 poison;  /* a call that failed here: one round */
    bool                 ring;    /* an eager broadcast through the ring */
    bool                 ll;      /* a flag round through numbered lines */
    bool                 ll_read; /* ... whose lines were read already */
    uint64_t             ring_k;  /* its call number on the ring */
    int                  stage;   /* large reductions: 0 parts, 1 copy-out */
    pami_result_t        cma_rc;  /* the _shm_cma kinds: how their reads went */
} cshm_op_t;

enum { CSHM_STAT_ops, CSHM_STAT_register_barriers, CSHM_STAT_rounds,
       CSHM_STAT_barriers, CSHM_STAT_queued, CSHM_STAT_queue_high_water,
       CSHM_STAT_mismatches, CSHM_STAT_failed, CSHM_STAT_setups, CSHM_STAT_inline,
       CSHM_STAT_flag_rounds, CSHM_STAT_flag_sleeps, CSHM_STAT_ring_calls,
       CSHM_STAT_ring_waits, CSHM_STAT_ring_sleeps,
       CSHM_STAT_segment_bad, /* what was read failed its check */
       CSHM_STAT_line_rounds, /* flag rounds through numbered lines */
       CSHM_NUM_STATS };

/* The last ring call's signature and its root's local index, kept for
 * the next call equal to it (a loop of one broadcast hashes and searches
 * once); auto_id, auto_why: what AUTO picked for such a call, an
 * algorithm that runs it on the ring (broadcast_shm_eager, or
 * broadcast_shm up to the ring's size), and why (0: not known); es: the
 * type's size once ring_fits_lean checked such a call whole (0: not
 * yet), so that an equal call checks only what the key does not fix. */
typedef struct {
    bool                        valid;
    const struct pami_geometry *g;
    uint32_t                    gid;
    pami_type_t                 dtype;
    size_t                      root, count, es;
    uint32_t                    sig, root_idx;
    pami_algorithm_t            auto_id;
    pami_selected_reason_t      auto_why;
} cshm_ring_memo_t;

typedef struct cshm {
    pami_context_t     ctx;
    pami_task_t        me;
    const pami_task_t *local;   /* this node's tasks, sorted */
    size_t             nlocal, my_index, offset;
    size_t             ncpus;   /* the node's CPUs (the same on all its tasks) */
    char               job_id[65]; /* pami_protocol_job_key */
    uint64_t           job_hash;
    size_t             slot;    /* PAMI_COLL_SHM_SLOT */
    char               name[160];
    bool               named;   /* this task (the leader) created name */
    int                setup;   /* CSHM_SETUP_* */
    pami_result_t      seg_rc;  /* why data collectives fail (FAILED) */
    unsigned char     *seg;
    size_t             seg_bytes, hdr_bytes;
    uint64_t           phase;   /* rounds run: parity = phase & 1 */
    cshm_entry_t      *q;       /* ring of entries in call order */
    size_t             qcap, qhead, qlen;
    bool               running; /* the head entry has started */
    bool               inline_bar; /* an inline call waits for its
                                    * barriers itself (pami_barrier_wait) */
    bool               posted;  /* kick is queued on the context */
    bool               auto_ok; /* PAMI_COLL_SHM_AUTO */
    bool               flag_ok; /* PAMI_COLL_SHM_FLAG, and nlocal <= ncpus */
    bool               ring_ok; /* PAMI_COLL_SHM_EAGER */
    bool               cma_ok;  /* PAMI_COLL_SHM_CMA, and the kernel lets
                                 * a task read the others (the _cma checks) */
    uint64_t           pid;     /* getpid() once: a _cma call's control
                                 * line, without a syscall per call */
    bool               prefetchw; /* the CPU prefetches for writing */
    size_t             ring_off; /* where the ring starts in the segment */
    uint64_t           ring_next; /* ring calls started on this context */
    uint64_t           ring_room; /* as a root, calls below this number
                                   * found their entry free (every task's
                                   * done seen, plus CSHM_RING) */
    cshm_ring_memo_t   ring_memo;
    size_t             eager_id; /* broadcast_shm_eager's algorithm id */
    uint64_t           spin_ns; /* a flag wait polls this long, then sleeps */
    uint64_t           spin_cur; /* the blocking flag wait's poll now:
                                    halved after a wait that slept, doubled
                                    back up to spin_ns after one that did not */
    bool               dead;    /* a task of this node died */
    pami_work_t        flag_work; /* the queued flag round's poll */
    uint64_t           flag_since; /* when its polling began, 0: not yet */
    pami_work_t        kick;
    int                step;    /* CSHM_ST_*: what the barrier ends */
    cshm_op_t          op;
    uint32_t          *idx;     /* geometry rank -> local index (op) */
    unsigned char     *a2a_got; /* cshm_nobar_kind: rank's line seen */
    size_t             a2a_left; /* ... blocks still to read */
    bool               a2a_own; /* ... the own block copied */
    uint64_t           stats[CSHM_NUM_STATS];
    unsigned char     *cma_tmp; /* allreduce_shm_cma's fold (2 chunks) */
    /* The waiter thread: sleeps for a queued flag round, then posts. */
    pthread_t          thr;
    bool               thr_started;
    pthread_mutex_t    lock;
    pthread_cond_t     cond;
    int                cmd;        /* CSHM_CMD_* */
    uint64_t           cmd_target; /* the line numbers it waits for */
    atomic_bool        interrupt;  /* end the wait now (a death, stop) */
} cshm_t;

/* Reductions up to this many bytes take one round: every task reduces
 * all slots; larger ones have each task reduce its part of a round. */
#define CSHM_SMALL_MAX (8 * 1024)

/* Calls of one round up to this many bytes (per task) run flag rounds. */
#define CSHM_FLAG_MAX CSHM_SMALL_MAX

static inline void cshm_count(cshm_t *s, int stat)
{
    s->stats[stat]++;
}

/* coll_alg_shm.c: the queue and the rounds */
bool cshm_push(cshm_t *s, cshm_entry_t e);
void cshm_pump(cshm_t *s);       /* starts queued entries */
void cshm_kick(cshm_t *s);       /* pumps from progress */
void cshm_seg_failed(cshm_t *s, pami_result_t rc);
void cshm_op_setup(cshm_t *s, coll_req_t *req, const pami_xfer_t *x,
                   struct pami_geometry *g, size_t es, size_t algo_id);
pami_result_t cshm_op_next(cshm_t *s, bool *done);
/* Rank's data of parity p (its slot, or its control line's tail for a
 * tiny call); dst <- slots at off of every rank folded in rank order. */
unsigned char *cshm_slot_of(cshm_t *s, size_t rank, uint32_t p);
void cshm_fold(cshm_t *s, unsigned char *dst, uint32_t p, size_t off,
               size_t count);

/* coll_alg_shm_blocks.c: alltoall and reduce_scatter, whose rounds carry
 * one slice of every block (s->op.total is one block's bytes). */
static inline bool cshm_blocks_kind(int kind)
{
    return kind == CSHM_ALLTOALL || kind == CSHM_REDSCAT;
}
/* A reduce_scatter's fold reads this task's own slice from its input
 * instead of its slot (not in place: in place, rank 0's slice is the
 * output itself, which a user op's fold overwrites first). */
static inline bool cshm_blocks_own_direct(const cshm_op_t *op)
{
    return op->kind == CSHM_REDSCAT && !op->in_place;
}
void cshm_blocks_setup(cshm_t *s, size_t algo_id); /* after the common part */
void cshm_blocks_write(cshm_t *s, uint32_t p);   /* this task's slices */
void cshm_blocks_read(cshm_t *s, uint32_t p);    /* its block from all */
/* coll_alg_shm_a2a.c: alltoall_shm_cma and broadcast_shm_cma, without
 * barriers (cshm_nobar_kind). Setup
 * (before the line is numbered); one pass of reads (CSHM_A2A_*); the
 * blocking call's whole wait (a result other than PAMI_SUCCESS: a death;
 * else *state is the last pass's). */
enum { CSHM_A2A_WAIT, CSHM_A2A_DONE, CSHM_A2A_MISMATCH, CSHM_A2A_AHEAD };
void cshm_a2a_setup(cshm_t *s);
int cshm_a2a_pass(cshm_t *s);
pami_result_t cshm_a2a_inline(cshm_t *s, int *state);
/* coll_alg_shm.c: the blocking call's whole run, its end included. */
pami_result_t cshm_a2a_run_inline(cshm_t *s);

/* coll_alg_shm_cma.c: allreduce_shm_cma, broadcast_shm_cma,
 * allgather_shm_cma and reduce_scatter_shm_cma. Setup (after
 * the common part): false when algo_id is neither; a step after each of
 * the call's barriers: true when another barrier follows. */
bool cshm_cma_setup(cshm_t *s, size_t algo_id);
bool cshm_cma_step(cshm_t *s, uint32_t p, bool ghost);

/* coll_alg_shm_ll.c: flag rounds of allgather and alltoall through
 * numbered lines. Whether op runs one (after op->flag and op->tiny are
 * set: from the call and the node alone); this task's lines of parity
 * p (a ghost numbers them without data); the reads once every control
 * line shows the round (PAMI_ERROR: a line differs from them); the
 * blocking call's poll and reads on the lines alone (1: read; else wait
 * for the control lines and read after them as usual, 0: without
 * polling them first, the poll was spent). */
bool cshm_ll_fits(const cshm_op_t *op);
void cshm_ll_write(cshm_t *s, uint32_t p, bool ghost);
pami_result_t cshm_ll_read(cshm_t *s, uint32_t p);
int cshm_ll_fast(cshm_t *s);

/* coll_alg_shm.c: a flag round of the blocking call, inline;
 * PAMI_INVAL after the barrier that keeps a mismatch aligned. */
pami_result_t cshm_flag_round_inline(cshm_t *s);

/* coll_alg_shm.c: the eager broadcast. Whether the ring can carry call
 * x (from the call and the node alone), whether x runs on it as
 * algorithm algo_id; its whole run, blocking, for the inline path; its
 * readiness (1 ready, 0 not yet, -1 a call without a root) for sleepers
 * and the waiter thread (what = 2 k + root). */
bool cshm_ring_fits(const cshm_t *s, const pami_xfer_t *x, size_t bytes);
bool cshm_ring_runs(const cshm_t *s, const pami_xfer_t *x, size_t bytes,
                    size_t algo_id);
size_t cshm_eager_id(void); /* broadcast_shm_eager's algorithm id */
pami_result_t cshm_ring_inline(cshm_t *s);
/* s->op for ring call x (cshm_ring_fits said yes); es its element size:
 * cshm_ring_memo, then cshm_ring_start. */
void cshm_ring_setup(cshm_t *s, coll_req_t *req, const pami_xfer_t *x,
                     struct pami_geometry *g, size_t es);
void cshm_ring_memo_make(cshm_t *s, const pami_xfer_t *x,
                         const struct pami_geometry *g);
/* The ring's memo, made again (without AUTO's decision) when x differs
 * from the last ring call; inline, as it is on every ring call. */
static inline const cshm_ring_memo_t *
cshm_ring_memo(cshm_t *s, const pami_xfer_t *x, const struct pami_geometry *g)
{
    const cshm_ring_memo_t *m = &s->ring_memo;
    if (!m->valid || m->g != g || m->gid != g->id || m->dtype != x->dtype ||
        m->root != x->root || m->count != x->count)
        cshm_ring_memo_make(s, x, g);
    return m;
}
/* s->op for ring call x once cshm_ring_memo holds it. */
void cshm_ring_start(cshm_t *s, coll_req_t *req, const pami_xfer_t *x,
                     struct pami_geometry *g, size_t es);
int cshm_ring_ready(const cshm_t *s, uint64_t what);

/* coll_shm_calls.c */
const coll_algo_t *cshm_algo(pami_xfer_type_t kind);

/* coll_shm_seg.c */
cshm_t *cshm_of(pami_context_t ctx);
/* The same through cc, which keeps it (both live as long as the context):
 * the protocols are searched once, not on every small call. */
static inline cshm_t *cshm_of_cc(coll_ctx_t *cc)
{
    if (cc->shm == NULL)
        cc->shm = cshm_of(cc->ctx);
    return cc->shm;
}
pami_result_t cshm_seg_create(cshm_t *s);
pami_result_t cshm_seg_attach(cshm_t *s);
bool cshm_seg_finish(cshm_t *s);
void cshm_seg_release(cshm_t *s);
/* Sleeps on the segment's wake word for up to ns unless every line of
 * the round shows target; returns cshm_flags_at. */
int  cshm_sleep(cshm_t *s, uint64_t target, uint64_t ns);
/* The same until ready(s) is not 0 (writers wake the word as for it). */
int  cshm_sleep_until(cshm_t *s, int (*ready)(cshm_t *), uint64_t ns);
/* The same for a ring wait (what as for cshm_ring_ready); its first
 * look after counting itself in comes CSHM_RING_RECHECK_NS later at the
 * latest, since the ring's writers look at sleepers without a fence. */
#define CSHM_RING_RECHECK_NS 100000
int  cshm_sleep_ring(cshm_t *s, uint64_t what, uint64_t ns);
pami_result_t cshm_waiter_give_ring(cshm_t *s, uint64_t what);
/* Hands the queued flag round's wait to the waiter thread, which posts
 * s->flag_work when it ends (ready, a death, or stop). */
pami_result_t cshm_waiter_give(cshm_t *s, uint64_t target);
void cshm_wake_sleepers(cshm_t *s);
uint64_t cshm_now_ns(void);
pami_result_t cshm_flag_engine(pami_context_t ctx, void *cookie);

/* Slot of local index i, parity p; control line of (i, p). */
static inline unsigned char *cshm_slot(const cshm_t *s, size_t i, uint32_t p)
{
    return s->seg + s->hdr_bytes + (2 * i + p) * s->slot;
}

/* The result of a failed process_vm_readv (r, errno err) from a member's
 * memory (coll_alg_shm_cma.c): PAMI_PEER_FAILED when that member's
 * process is gone (ESRCH: it died in the call), or when the address is
 * refused (EFAULT) while a member of the node has died: the member read
 * from may have seen that death first and left the call, its buffers
 * with it; PAMI_INVAL otherwise. Every _cma call's control line begins
 * with its task's pid. */
pami_result_t cshm_cma_result(const cshm_t *s, ssize_t r, int err);

static inline _Atomic uint32_t *cshm_ctl(const cshm_t *s, size_t i,
                                         uint32_t p)
{
    return (_Atomic uint32_t *)(s->seg + CSHM_CTL_OFF +
                                (2 * i + p) * CSHM_LINE);
}

/* The number in control line (i, p): the last round that wrote it,
 * plus one (0: never written). */
static inline _Atomic uint64_t *cshm_seq(const cshm_t *s, size_t i,
                                         uint32_t p)
{
    return (_Atomic uint64_t *)((unsigned char *)cshm_ctl(s, i, p) +
                                CSHM_SEQ_OFF);
}

static inline cshm_ring_task_t *cshm_ring_task(const cshm_t *s, size_t i)
{
    return (cshm_ring_task_t *)(s->seg + s->ring_off + i * CSHM_LINE);
}

static inline cshm_ring_entry_t *cshm_ring_entry(const cshm_t *s,
                                                 uint64_t k)
{
    return (cshm_ring_entry_t *)(s->seg + s->ring_off +
                                 s->nlocal * CSHM_LINE +
                                 (k % CSHM_RING) * CSHM_RING_DENSE);
}

/* Call k's claim: the call whose root took entry k mod CSHM_RING, + 1. */
static inline _Atomic uint64_t *cshm_ring_claim(const cshm_t *s, uint64_t k)
{
    return (_Atomic uint64_t *)(s->seg + s->ring_off + s->nlocal * CSHM_LINE +
                                CSHM_RING * (CSHM_RING_DENSE + CSHM_RING_MAX) +
                                (k % CSHM_RING) * 8);
}

/* Where call k's len bytes are: in its dense entry, or its area. */
static inline unsigned char *cshm_ring_data(const cshm_t *s, uint64_t k,
                                            size_t len)
{
    if (len <= CSHM_RING_SMALL)
        return (unsigned char *)cshm_ring_entry(s, k) + CSHM_RING_DATA;
    return s->seg + s->ring_off + s->nlocal * CSHM_LINE +
           CSHM_RING * CSHM_RING_DENSE + (k % CSHM_RING) * CSHM_RING_MAX;
}

/* The numbered lines' area of local task i, parity p. */
static inline unsigned char *cshm_ll_area(const cshm_t *s, size_t i,
                                          uint32_t p)
{
    return s->seg + s->ring_off + s->nlocal * CSHM_LINE + CSHM_RING_BYTES +
           (2 * i + p) * CSHM_LL_BYTES;
}

static inline cshm_hdr_t *cshm_hdr(const cshm_t *s)
{
    return (cshm_hdr_t *)s->seg;
}

/* 1 when every task's line of the round (parity of target - 1) shows
 * target, 0 when one does not yet, -1 when one is ahead (cannot be). */
static inline int cshm_flags_at(const cshm_t *s, uint64_t target)
{
    uint32_t p = (uint32_t)(target - 1) & 1;
    for (size_t i = 0; i < s->nlocal; i++) {
        int st = cshm_line_state(atomic_load_explicit(cshm_seq(s, i, p),
                                                      memory_order_acquire),
                                 target);
        if (st != 1)
            return st;
    }
    return 1;
}

/* This task's line of the current round is complete: its number goes
 * last. Sequentially consistent with the read of sleepers (a sleeper
 * counts itself in, then checks the lines): one side sees the other. */
static inline void cshm_publish(cshm_t *s)
{
    atomic_store(cshm_seq(s, s->my_index, s->phase & 1), s->phase + 1);
    if (atomic_load(&cshm_hdr(s)->sleepers) != 0)
        cshm_wake_sleepers(s);
}

#endif

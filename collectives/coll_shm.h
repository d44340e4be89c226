/*
 * Private to coll_shm_seg.c and coll_alg_shm.c: the per-context state of
 * the shared-memory collectives (a protocol of its own, "coll_shm", for
 * its state, counters and setting) and the node's segment.
 */
#ifndef PAMI_COLL_SHM_H
#define PAMI_COLL_SHM_H

#include <stdatomic.h>

#include "coll.h"

#define CSHM_SUBSYS "coll_shm"
#define cshm_log(level, ...) pami_protocol_log(level, CSHM_SUBSYS, __VA_ARGS__)

#define CSHM_MAGIC   0x316d6873696d6170ull /* "pamishm1" */
#define CSHM_VERSION 1
#define CSHM_LINE    64   /* one control line per task and parity */
#define CSHM_CTL_OFF 256  /* control lines start here in the header */
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
} cshm_hdr_t;

enum { CSHM_SETUP_NONE, CSHM_SETUP_RUNNING, CSHM_SETUP_READY,
       CSHM_SETUP_FAILED };

/* What the head entry of the queue waits for. */
enum { CSHM_ST_REG, CSHM_ST_SETUP1, CSHM_ST_SETUP2, CSHM_ST_OP };

/* The data collectives the engine runs. */
enum { CSHM_AR_SMALL, CSHM_AR_LARGE, CSHM_RED_SMALL, CSHM_RED_LARGE,
       CSHM_BCAST, CSHM_ALLGATHER };

typedef struct {
    coll_req_t          *req;
    int                  which; /* COLL_BARRIER_SHM, _HIER or COLL_EXT_SHM */
    pami_event_fn        done;  /* the executor's completion */
    bool                 attached; /* its step started: req stays valid */
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
    bool                 poison;  /* a call that failed here: one round */
    int                  stage;   /* large reductions: 0 parts, 1 copy-out */
} cshm_op_t;

enum { CSHM_STAT_ops, CSHM_STAT_register_barriers, CSHM_STAT_rounds,
       CSHM_STAT_barriers, CSHM_STAT_queued, CSHM_STAT_queue_high_water,
       CSHM_STAT_mismatches, CSHM_STAT_failed, CSHM_STAT_setups, CSHM_STAT_inline,
       CSHM_NUM_STATS };

typedef struct cshm {
    pami_context_t     ctx;
    pami_task_t        me;
    const pami_task_t *local;   /* this node's tasks, sorted */
    size_t             nlocal, my_index, offset;
    size_t             ncpus;   /* the node's CPUs (the same on all its tasks) */
    char               job_id[64];
    uint64_t           job_hash;
    size_t             slot;    /* PAMI_COLL_SHM_SLOT */
    char               name[160];
    bool               named;   /* this task (the leader) created name */
    int                setup;   /* CSHM_SETUP_* */
    pami_result_t      seg_rc;  /* why data collectives fail (FAILED) */
    unsigned char     *seg;
    size_t             seg_bytes, hdr_bytes;
    uint32_t           phase;   /* rounds run: parity = phase & 1 */
    cshm_entry_t      *q;       /* ring of entries in call order */
    size_t             qcap, qhead, qlen;
    bool               running; /* the head entry has started */
    bool               posted;  /* kick is queued on the context */
    bool               auto_ok; /* PAMI_COLL_SHM_AUTO */
    pami_work_t        kick;
    int                step;    /* CSHM_ST_*: what the barrier ends */
    cshm_op_t          op;
    uint32_t          *idx;     /* geometry rank -> local index (op) */
    uint64_t           stats[CSHM_NUM_STATS];
} cshm_t;

/* Reductions up to this many bytes take one round: every task reduces
 * all slots; larger ones have each task reduce its part of a round. */
#define CSHM_SMALL_MAX (8 * 1024)

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

/* coll_shm_calls.c */
const coll_algo_t *cshm_algo(pami_xfer_type_t kind);

/* coll_shm_seg.c */
cshm_t *cshm_of(pami_context_t ctx);
pami_result_t cshm_seg_create(cshm_t *s);
pami_result_t cshm_seg_attach(cshm_t *s);
bool cshm_seg_finish(cshm_t *s);
void cshm_seg_release(cshm_t *s);

/* Slot of local index i, parity p; control line of (i, p). */
static inline unsigned char *cshm_slot(const cshm_t *s, size_t i, uint32_t p)
{
    return s->seg + s->hdr_bytes + (2 * i + p) * s->slot;
}

static inline _Atomic uint32_t *cshm_ctl(const cshm_t *s, size_t i,
                                         uint32_t p)
{
    return (_Atomic uint32_t *)(s->seg + CSHM_CTL_OFF +
                                (2 * i + p) * CSHM_LINE);
}

#endif

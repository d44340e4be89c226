/*
 * Shared-memory collectives of one node (docs/collectives.md, "Shared
 * memory"): allreduce, reduce, broadcast and allgather move their data
 * through the node's segment (coll_shm_seg.c) and synchronise with the
 * shared-memory barrier register (pami_barrier_shm); no message travels.
 * This file runs them (the queue and the rounds); coll_shm_calls.c is
 * how calls get here.
 *
 * Every register barrier a collective of a context starts (these
 * algorithms, barrier_shm, barrier_hier) goes through one queue per
 * context and starts in call order, one entry at a time: the register
 * pairs barriers by their order on each task, and the parity argument
 * below needs the rounds of two collectives never to interleave.
 *
 * Why a slot is never overwritten while someone reads it. Each round uses
 * the slots of parity p = phase & 1 (phase counts rounds on the context,
 * the same on every task since all run the same rounds in the same
 * order) and has the form: write (own slot, or the root's), barrier,
 * read (and for large reductions: reduce parts in place, barrier, read).
 * A round's reads end before the reader arrives at the next barrier it
 * starts, which is the first barrier of round k + 1 (parity 1 - p). The
 * next write to parity p is by round k + 2, after that barrier completed,
 * i.e. after every task arrived there, so after every read of round k.
 * Writes of round k + 1 go to the other parity and never meet round k's
 * reads. Hence the queue: with two collectives' rounds in flight at once
 * the next round's writes could start before this one's reads ended.
 *
 * Flag rounds (calls of one round up to CSHM_FLAG_MAX bytes, no more
 * tasks than CPUs) replace the barrier by the round's number, written
 * last into each task's control line; a task reads once every line
 * shows it. Every task numbers its line after its reads of the round
 * before, so seeing all numbers is what the barrier gave, and the
 * argument above holds as is.
 * Whether a round is a flag round follows from the call and the node
 * only (op->flag), the same on every task of a matching call.
 *
 * Eager broadcasts (up to CSHM_RING_MAX bytes, broadcast_shm_eager, or
 * broadcast_shm or broadcast_shm_eager through AUTO) run no round:
 * a ring of CSHM_RING entries
 * after the slots. They are entries of the same queue, so ring call
 * numbers (ring_next) follow call order and agree on every task: call k
 * uses entry k % R. The root waits until every task finished call
 * k - R, claims the entry, fills it, numbers it and returns; a reader
 * waits for the number, checks the signature, copies out and counts
 * itself done. Mixing with rounds keeps every argument above: the ring's
 * memory is its own and a ring call changes neither phase nor control
 * lines nor the register, so to the rounds it does not exist; and since
 * its number comes from the queue order, a ring call sits between the
 * same two rounds on every task. Its own argument: entry e is rewritten
 * by call k + R only after every task's done passed k, and a reader of
 * call k sees number k + 1 (call k + R's root waits for that reader).
 * A root cannot see a reader's mismatch (the reader alone fails).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "coll_shm.h"
#include "pami_barrier.h"

#define IN_PLACE(p) ((const void *)(p) == (const void *)PAMI_IN_PLACE)

static void on_barrier(pami_context_t ctx, void *cookie, pami_result_t rc);

/* ---- the queue ---- */

bool cshm_push(cshm_t *s, cshm_entry_t e)
{
    if (s->qlen == s->qcap) {
        size_t cap = s->qcap ? 2 * s->qcap : 16;
        cshm_entry_t *q = malloc(cap * sizeof(*q));
        if (q == NULL)
            return false;
        for (size_t i = 0; i < s->qlen; i++)
            q[i] = s->q[(s->qhead + i) % s->qcap];
        free(s->q);
        s->q     = q;
        s->qcap  = cap;
        s->qhead = 0;
    }
    s->q[(s->qhead + s->qlen++) % s->qcap] = e;
    if (s->qlen > s->stats[CSHM_STAT_queue_high_water])
        s->stats[CSHM_STAT_queue_high_water] = s->qlen;
    return true;
}

static cshm_entry_t *head(cshm_t *s)
{
    return &s->q[s->qhead];
}

/* Pops the head and ends its collective step (which may complete the
 * collective, run the program's callback and start new entries). */
static void finish_head(cshm_t *s, pami_result_t rc)
{
    cshm_entry_t e = *head(s);
    s->qhead   = (s->qhead + 1) % s->qcap;
    s->qlen--;
    s->running = false;
    if (rc != PAMI_SUCCESS && e.attached)
        cshm_count(s, CSHM_STAT_failed);
    if (e.attached)
        e.done(s->ctx, e.req, rc);
}

static pami_result_t barrier(cshm_t *s, int step)
{
    s->step = step;
    cshm_count(s, CSHM_STAT_barriers);
    if (s->inline_bar) /* the inline call waits for it (coll_shm_calls.c) */
        return PAMI_SUCCESS;
    return pami_barrier_shm(s->ctx, on_barrier, s);
}

/* ---- moving and reducing ---- */

/* Rank's data of parity p: its slot, or for a tiny call the rest of
 * its control line, so that a reader's one cache miss brings the
 * signature and the data. */
unsigned char *cshm_slot_of(cshm_t *s, size_t rank, uint32_t p)
{
    if (s->op.tiny)
        return (unsigned char *)cshm_ctl(s, s->idx[rank], p) + CSHM_TINY_OFF;
    return cshm_slot(s, s->idx[rank], p);
}

/* dst <- slots off.. of ranks 0..n-1 folded in rank order: built-in ops
 * left to right from rank 0, user ops from the top (inout = in op inout
 * with in from the lower rank) so no copy is needed. dst may be the
 * first (built-in) or last (user) slot itself. */
/* Rank r's slice at off of round p, as a fold reads it: a
 * reduce_scatter not in place reads its own slice from its input
 * (cshm_blocks_write left it out of the slot). */
static const unsigned char *fold_src(cshm_t *s, size_t r, uint32_t p,
                                     size_t off)
{
    const cshm_op_t *op = &s->op;
    if (r == op->rank && cshm_blocks_own_direct(op))
        return op->in + r * op->total + op->pos;
    return cshm_slot_of(s, r, p) + off;
}

void cshm_fold(cshm_t *s, unsigned char *dst, uint32_t p, size_t off,
               size_t count)
{
    const cshm_op_t *op = &s->op;
    const pami_xfer_t *x = op->x;
    size_t bytes = count * op->es;
    if (count == 0)
        return;
    if (!op->user) {
        const unsigned char *first = fold_src(s, 0, p, off);
        if (dst != first)
            memcpy(dst, first, bytes);
        for (size_t r = 1; r < op->n; r++)
            coll_reduce_builtin(x->dtype, x->op, dst, fold_src(s, r, p, off),
                                count);
        return;
    }
    const unsigned char *last = fold_src(s, op->n - 1, p, off);
    if (dst != last)
        memcpy(dst, last, bytes);
    for (size_t r = op->n - 1; r-- > 0;)
        x->user_fn(dst, fold_src(s, r, p, off), count, x->user_cookie);
}

/* Elements of part j of a round of len bytes: [*off, *off + *cnt). */
static void part(const cshm_op_t *op, size_t j, size_t *off, size_t *cnt)
{
    size_t elems = op->len / op->es, base = elems / op->n,
           rem = elems % op->n;
    *cnt = base + (j < rem);
    *off = (j * base + (j < rem ? j : rem)) * op->es;
}

/* The rank whose slot holds a large reduction's result. */
static size_t result_rank(const cshm_op_t *op)
{
    return op->user ? op->n - 1 : 0;
}

/* Writes this task's share of the round at op->pos (parity p). */
static void write_round(cshm_t *s, uint32_t p, bool ghost)
{
    cshm_op_t *op = &s->op;
    op->len = op->total - op->pos < op->chunk ? op->total - op->pos
                                              : op->chunk;
    op->stage = 0;
    cshm_count(s, CSHM_STAT_rounds);
    if (op->ll) {
        cshm_count(s, CSHM_STAT_line_rounds);
        cshm_ll_write(s, p, ghost);
        return;
    }
    if (ghost)
        return;
    if (op->kind == CSHM_AR_CMA || op->kind == CSHM_BC_CMA ||
        op->kind == CSHM_RS_CMA || op->kind == CSHM_AG_CMA)
        return; /* read from the buffers themselves */
    if (op->kind == CSHM_ALLTOALL || op->kind == CSHM_REDSCAT ||
        op->kind == CSHM_A2A_CMA) {
        cshm_blocks_write(s, p);
    } else if (op->kind == CSHM_BCAST) {
        if (op->rank == op->root)
            memcpy(cshm_slot_of(s, op->root, p), op->out + op->pos,
                   op->len);
    } else {
        memcpy(cshm_slot_of(s, op->rank, p), op->in + op->pos, op->len);
    }
}

/* Asks for a line in exclusive state without waiting for it. */
static inline void prefetch_write(const volatile void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const volatile char *)p));
#else
    __builtin_prefetch((const void *)p, 1, 3);
#endif
}

/* ---- a data collective ---- */

static size_t local_index(const cshm_t *s, pami_task_t t)
{
    size_t lo = 0, hi = s->nlocal;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->local[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* What every member must pass alike, in the control line. */
static uint32_t signature(const pami_xfer_t *x, size_t algo_id)
{
    uint64_t v[] = {(uint64_t)x->kind << 32 | algo_id,
                    (uint64_t)x->dtype << 32 | (uint32_t)x->root,
                    x->kind == PAMI_XFER_ALLREDUCE ||
                            x->kind == PAMI_XFER_REDUCE ||
                            x->kind == PAMI_XFER_REDUCE_SCATTER
                        ? (uint64_t)x->op << 1 | (x->op == PAMI_OP_USER &&
                                                  x->user_commutative)
                        : 0,
                    x->count};
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        h ^= v[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return (uint32_t)h | 1; /* 0 is a poison round's */
}

void cshm_ring_memo_make(cshm_t *s, const pami_xfer_t *x,
                         const struct pami_geometry *g)
{
    s->ring_memo = (cshm_ring_memo_t){
        .valid = true, .g = g, .gid = g->id, .dtype = x->dtype,
        .root = x->root, .count = x->count,
        .sig = signature(x, cshm_eager_id()), /* AUTO or named */
        .root_idx = (uint32_t)local_index(s, g->tasks[x->root]),
        .auto_id = PAMI_ALGORITHM_AUTO, .auto_why = PAMI_SELECTED_NAMED};
}

void cshm_ring_setup(cshm_t *s, coll_req_t *req, const pami_xfer_t *x,
                     struct pami_geometry *g, size_t es)
{
    cshm_ring_memo(s, x, g);
    cshm_ring_start(s, req, x, g, es);
}

/* Every field of s->op, stored one by one: a compound literal zeroed
 * the struct first with `rep stos`, whose start-up cost a small call
 * tens of cycles (docs/PERFORMANCE.md, "28 Nov 2026 (s11): small
 * shared-memory calls without `rep stos`"). A field
 * added to cshm_op_t is added here (the size check). */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(cshm_op_t) == 144, "op_start stores each field");
#endif
static inline void op_start(cshm_op_t *op, coll_req_t *req,
                            const pami_xfer_t *x, struct pami_geometry *g,
                            size_t es, uint32_t sig, bool ring)
{
    op->req      = req;
    op->x        = x;
    op->g        = g;
    op->sig      = sig;
    op->kind     = CSHM_BCAST; /* a round's call sets its own */
    op->n        = g->size;
    op->rank     = g->rank;
    op->root     = x->root;
    op->es       = es ? es : 1;
    op->total    = x->count * es;
    op->chunk    = 0;
    op->pos      = 0;
    op->len      = 0;
    op->in       = NULL;
    op->out      = x->rbuf;
    op->in_place = false;
    op->user     = !ring && x->op == PAMI_OP_USER;
    op->first    = !ring;
    op->tiny     = false;
    op->flag     = false;
    op->poison   = false;
    op->ring     = ring;
    op->ll       = false;
    op->ll_read  = false;
    op->ring_k   = 0;
    op->stage    = 0;
    op->cma_rc   = PAMI_SUCCESS;
}

/* No round: the phase and the control lines stay as they are, and only
 * the root's place on the node is looked at. */
void cshm_ring_start(cshm_t *s, coll_req_t *req, const pami_xfer_t *x,
                     struct pami_geometry *g, size_t es)
{
    const cshm_ring_memo_t *m = &s->ring_memo;
    op_start(&s->op, req, x, g, es, m->sig, true);
    s->op.ring_k = s->ring_next++;
    s->idx[x->root] = m->root_idx;
    cshm_count(s, CSHM_STAT_ops);
    cshm_count(s, CSHM_STAT_ring_calls);
}

/* Fills s->op for call x on g and writes its first round (parity of
 * s->phase) and its signature. */
void cshm_op_setup(cshm_t *s, coll_req_t *req, const pami_xfer_t *x,
                     struct pami_geometry *g, size_t es, size_t algo_id)
{
    cshm_op_t *op = &s->op;
    if (cshm_ring_runs(s, x, x->count * es, algo_id)) {
        cshm_ring_setup(s, req, x, g, es);
        return;
    }
    op_start(op, req, x, g, es, signature(x, algo_id), false);
    for (size_t r = 0; r < g->size; r++)
        s->idx[r] = (uint32_t)local_index(s, g->tasks[r]);
    op->chunk = s->slot / op->es * op->es;
    op->out   = x->rbuf;
    op->in_place = IN_PLACE(x->sbuf);
    switch (x->kind) {
    case PAMI_XFER_ALLREDUCE:
    case PAMI_XFER_REDUCE: {
        bool small = op->total <= CSHM_SMALL_MAX && op->total <= op->chunk;
        bool all   = x->kind == PAMI_XFER_ALLREDUCE;
        op->kind = all ? (small ? CSHM_AR_SMALL : CSHM_AR_LARGE)
                       : (small ? CSHM_RED_SMALL : CSHM_RED_LARGE);
        op->in = op->in_place ? x->rbuf : x->sbuf;
        break;
    }
    case PAMI_XFER_BROADCAST:
        op->kind = CSHM_BCAST;
        break;
    case PAMI_XFER_ALLTOALL:
    case PAMI_XFER_REDUCE_SCATTER:
        cshm_blocks_setup(s, algo_id);
        break;
    default: /* PAMI_XFER_ALLGATHER */
        op->kind = CSHM_ALLGATHER;
        op->in   = op->in_place ? op->out + op->rank * op->total : x->sbuf;
        break;
    }
    if (x->kind != PAMI_XFER_REDUCE && x->kind != PAMI_XFER_ALLTOALL)
        cshm_cma_setup(s, algo_id);
    cshm_count(s, CSHM_STAT_ops);
    /* Alltoall and reduce_scatter write a slice of every block. */
    size_t all = cshm_blocks_kind(op->kind) ? op->total * op->n : op->total;
    op->tiny = all <= CSHM_TINY; /* one round whatever the kind */
    /* From the call and the node alone: every task decides alike. One
     * round up to CSHM_FLAG_MAX (the data in the slots above CSHM_TINY). */
    op->flag = s->flag_ok && !cshm_cma_kind(op->kind) &&
               (op->tiny || (all <= CSHM_FLAG_MAX &&
                             op->total <= op->chunk &&
                             op->kind != CSHM_AR_LARGE &&
                             op->kind != CSHM_RED_LARGE));
    op->ll = cshm_ll_fits(op);
    uint32_t p = s->phase & 1;
    atomic_store_explicit(cshm_ctl(s, s->my_index, p), op->sig,
                          memory_order_relaxed);
    write_round(s, p, req != NULL && req->status != PAMI_SUCCESS);
    /* Register rounds number their first line too: a member whose call
     * differs so that it runs a flag round finds the mismatch. */
    cshm_publish(s);
}

/* A call that failed here before its step started (bad arguments, an
 * abort claimed first, no memory) while the other members may run it:
 * one round with signature 0, which every member reads as a mismatch,
 * so all stop after that barrier and the register stays aligned. */
static pami_result_t poison_begin(cshm_t *s)
{
    s->op = (cshm_op_t){.poison = true, .first = true};
    cshm_count(s, CSHM_STAT_rounds);
    atomic_store_explicit(cshm_ctl(s, s->my_index, s->phase & 1), 0,
                          memory_order_relaxed);
    cshm_publish(s);
    return barrier(s, CSHM_ST_OP);
}

static pami_result_t ring_begin(cshm_t *s);
static pami_result_t a2a_engine(cshm_t *s);

/* A poison entry of an eager broadcast: its ring call as a ghost, so
 * the ring numbers stay aligned and the readers fail alike. */
static pami_result_t ring_poison_begin(cshm_t *s, const cshm_entry_t *e)
{
    s->op = (cshm_op_t){.poison = true, .ring = true,
                        .ring_k = s->ring_next++, .rank = e->ring_root ? 0 : 1};
    cshm_count(s, CSHM_STAT_ring_calls);
    return ring_begin(s);
}

static pami_result_t poison_or_ring(cshm_t *s, const cshm_entry_t *e)
{
    return e->ring ? ring_poison_begin(s, e) : poison_begin(s);
}

/* ---- flag rounds ---- */

/* Polls the round's lines for up to ns; the clock is read every 64
 * polls. */
static int poll_flags(cshm_t *s, uint64_t target, uint64_t ns)
{
    uint64_t start = 0;
    for (unsigned i = 1;; i++) {
        int done = cshm_flags_at(s, target);
        if (done != 0)
            return done;
        pami_protocol_cpu_relax();
        if ((i & 63) == 0) {
            uint64_t now = cshm_now_ns();
            if (start == 0)
                start = now;
            else if (now - start >= ns)
                return 0;
        }
    }
}

static pami_result_t flags_ahead(cshm_t *s)
{
    cshm_count(s, CSHM_STAT_segment_bad);
    cshm_log(PAMI_PROTOCOL_LOG_WARN, "a control line is ahead of round "
             "%llu: shared-memory collectives fail from now on",
             (unsigned long long)s->phase);
    return PAMI_ERROR;
}

/* The blocking call's wait: polls for spin_cur, then between short
 * sleeps on the segment's wake word progresses the context, which is
 * where a dead task is found (cshm_peer_failed). A wait that had to
 * sleep halves the next poll (down to 1 us), one that did not doubles
 * it back (up to spin_ns): when other programs hold the CPUs the task
 * waited for is not running, and polling only keeps it from the CPU;
 * with a CPU each the waits end within the poll and it stays whole.
 * polled: the poll was spent on the numbered lines (cshm_ll_fast): one
 * look at the control lines, then the sleeps. */
#define CSHM_SPIN_MIN_NS 1000
static pami_result_t flag_wait_inline(cshm_t *s, bool polled)
{
    uint64_t target = s->phase + 1;
    int done = polled ? cshm_flags_at(s, target)
                      : poll_flags(s, target, s->spin_cur);
    if (done == 0) {
        cshm_count(s, CSHM_STAT_flag_sleeps);
        s->spin_cur = s->spin_cur / 2 > CSHM_SPIN_MIN_NS ? s->spin_cur / 2
                                                         : CSHM_SPIN_MIN_NS;
    } else if (s->spin_cur < s->spin_ns) {
        s->spin_cur = s->spin_cur * 2 < s->spin_ns ? s->spin_cur * 2
                                                   : s->spin_ns;
    }
    while (done == 0) {
        if (s->dead) {
            /* A flag it set before it died still counts. */
            done = cshm_flags_at(s, target);
            if (done == 0)
                return PAMI_PEER_FAILED;
            break;
        }
        pami_context_advance(s->ctx, 1);
        done = cshm_sleep(s, target, 1000000);
    }
    return done > 0 ? PAMI_SUCCESS : flags_ahead(s);
}

/* The inline calls' mismatch: one barrier, as the members of the
 * round are in one, so all leave with rc (or the barrier's failure). */
static pami_result_t mismatch_barrier(cshm_t *s, pami_result_t rc)
{
    cshm_count(s, CSHM_STAT_barriers);
    pami_result_t brc = pami_barrier_wait(s->ctx, PAMI_BARRIER_SHM, NULL, 0);
    return brc != PAMI_SUCCESS ? brc : rc;
}

pami_result_t cshm_flag_round_inline(cshm_t *s)
{
    bool done;
    cshm_count(s, CSHM_STAT_flag_rounds);
    pami_result_t rc = PAMI_SUCCESS;
    /* Numbered lines read whole on their own: every member's signature
     * was in them, so the control lines' comparison is skipped. */
    int ll = s->op.ll ? cshm_ll_fast(s) : -1;
    if (ll == 1)
        s->op.first = false;
    else
        rc = flag_wait_inline(s, ll == 0);
    if (rc != PAMI_SUCCESS)
        return rc;
    rc = cshm_op_next(s, &done); /* one round: ends here */
    return rc == PAMI_INVAL ? mismatch_barrier(s, rc) : rc;
}

/* ---- the eager broadcast (ring) ---- */

/* A broadcast of 1 B to CSHM_RING_MAX on the node's tasks: from the
 * call and the node, so all tasks agree. */
bool cshm_ring_fits(const cshm_t *s, const pami_xfer_t *x, size_t bytes)
{
    return s->ring_ok && x->kind == PAMI_XFER_BROADCAST && bytes > 0 &&
           bytes <= CSHM_RING_MAX && x->geometry != NULL &&
           x->geometry->size == s->nlocal;
}

/* Only broadcast_shm_eager runs on the ring, named or AUTO's pick;
 * broadcast_shm always runs rounds. AUTO's pick must run as the named
 * pick was measured: where a profile chose the ring (2 tasks, 4 KiB:
 * 0.375 us against 0.793 for rounds) AUTO once ran rounds (0.794), and
 * where one chose rounds (8 tasks, 16 KiB: 10.7 us against 26.7 for the
 * ring) AUTO ran the ring (docs/collectives.md). */
bool cshm_ring_runs(const cshm_t *s, const pami_xfer_t *x, size_t bytes,
                    size_t algo_id)
{
    return algo_id == cshm_eager_id() && cshm_ring_fits(s, x, bytes);
}

/* The ring's stores are releases (a reader that sees a number sees what
 * came before it), and the look at the sleepers after a call's last
 * store has no fence: a fence waited for that store to take its line
 * from the reader polling it (2 tasks, 8 B: 0.10-0.11 us a call with
 * it, 0.09 without; 64 B: 0.17 and 0.11). So a store still in flight while a
 * sleeper counts itself in and looks may wake nobody; cshm_sleep_ring
 * looks again after CSHM_RING_RECHECK_NS, by when it has landed, and
 * every later store sees the sleeper counted. */
static void ring_wake_if_sleepers(cshm_t *s)
{
    if (atomic_load_explicit(&cshm_hdr(s)->sleepers, memory_order_relaxed) != 0)
        cshm_wake_sleepers(s);
}

/* The root of call k (what odd) needs every task done with call k - R;
 * a reader (what even) needs the entry's number k + 1. A reader that
 * sees every task entered call k and nobody claimed its entry knows no
 * task is its root (an erroneous program): -1. A root claims before it
 * counts itself entered, so a claim is seen whenever its entry is. */
int cshm_ring_ready(const cshm_t *s, uint64_t what)
{
    uint64_t k = what >> 1;
    if (what & 1) {
        if (k < CSHM_RING)
            return 1;
        for (size_t i = 0; i < s->nlocal; i++)
            if (atomic_load_explicit(&cshm_ring_task(s, i)->done,
                                     memory_order_acquire) <
                k - CSHM_RING + 1)
                return 0;
        return 1;
    }
    cshm_ring_entry_t *e = cshm_ring_entry(s, k);
    int st = cshm_line_state(atomic_load_explicit(&e->seq,
                                                  memory_order_acquire),
                             k + 1);
    if (st != 0)
        return st; /* there, or ahead (the read fails) */
    /* The root done with call k (it wrote the entry, or could not claim
     * it): the entry will not come. It stores done after seq: look at
     * seq once more. */
    size_t root = s->idx[s->op.root];
    if (root < s->nlocal &&
        atomic_load(&cshm_ring_task(s, root)->done) >= k + 1)
        return cshm_line_state(atomic_load_explicit(&e->seq,
                                                    memory_order_acquire),
                               k + 1) == 1 ? 1 : -1;
    for (size_t i = 0; i < s->nlocal; i++)
        if (atomic_load(&cshm_ring_task(s, i)->arrived) < k + 1)
            return 0;
    return atomic_load(cshm_ring_claim(s, k)) < k + 1 ? -1 : 0;
}

static uint64_t ring_what(const cshm_t *s)
{
    return s->op.ring_k * 2 + (s->op.rank == s->op.root);
}

/* A root's look at the ring, cached: the lowest done it saw frees every
 * call below it + CSHM_RING, so the readers' lines are read again only
 * when the ring looks full, not at every call (each read takes a line a
 * reader writes at every call of its own, and costs that reader a miss
 * on its next store). A root that finds the ring full waits for the
 * next entry only: waiting until half of it was free made 8 B at 2
 * tasks 0.37-0.40 us against 0.22 (quiet, 27 Nov 23:10). Readers as
 * cshm_ring_ready. */
static int ring_ready_here(cshm_t *s, uint64_t what, bool full)
{
    uint64_t k = what >> 1;
    if (!(what & 1)) {
        /* A reader polls its entry's number alone, and looks at the
         * root's and the tasks' lines (a call without a root, a root
         * that will not write) only now and then: each look took the
         * root's line, which the root writes at every call, and cost
         * the root a miss there on the next. */
        int st = cshm_line_state(
            atomic_load_explicit(&cshm_ring_entry(s, k)->seq,
                                 memory_order_acquire),
            k + 1);
        return st != 0 || !full ? st : cshm_ring_ready(s, what);
    }
    if (k < s->ring_room)
        return 1;
    uint64_t low = UINT64_MAX;
    for (size_t i = 0; i < s->nlocal; i++) {
        uint64_t d = atomic_load_explicit(&cshm_ring_task(s, i)->done,
                                          memory_order_acquire);
        if (d < low)
            low = d;
    }
    s->ring_room = low + CSHM_RING;
    return k < s->ring_room;
}

static bool op_ghost(const cshm_op_t *op)
{
    return op->poison || (op->req != NULL && op->req->status != PAMI_SUCCESS);
}

/* A reader counts itself in before it waits (see cshm_ring_ready). */
static void ring_enter(cshm_t *s)
{
    if (s->op.rank == s->op.root)
        return;
    atomic_store_explicit(&cshm_ring_task(s, s->my_index)->arrived,
                          s->op.ring_k + 1, memory_order_release);
}

/* A prefetch for writing (the line taken from the readers' caches),
 * where the CPU has one: a prefetch for reading would leave the claim's
 * compare-and-swap to take it over. */
#if defined(__x86_64__)
__attribute__((target("prfchw"))) static void prefetchw_x86(const void *p)
{
    __builtin_prefetch(p, 1);
}
#endif
static inline void ring_prefetch_write(const cshm_t *s, const void *p)
{
#if defined(__x86_64__)
    if (s->prefetchw)
        prefetchw_x86(p);
#else
    (void)s;
    __builtin_prefetch(p, 1);
#endif
}

/* The root, once the entry is free: claims it (a second task that
 * thinks it is the root finds it taken: PAMI_INVAL there), fills it and
 * numbers it last. A ghost root publishes signature 0: the readers
 * fail alike. */
static pami_result_t ring_write(cshm_t *s)
{
    cshm_op_t *op = &s->op;
    uint64_t k = op->ring_k, c;
    cshm_ring_entry_t *e = cshm_ring_entry(s, k);
    cshm_ring_task_t *me = cshm_ring_task(s, s->my_index);
    bool won = false;
    _Atomic uint64_t *claim = cshm_ring_claim(s, k);
    c = atomic_load(claim);
    while (c < k + 1 && !(won = atomic_compare_exchange_weak(claim, &c,
                                                               k + 1)))
        ;
    atomic_store_explicit(&me->arrived, k + 1, memory_order_release);
    if (won) {
        bool ghost = op_ghost(op);
        e->sig = ghost ? 0 : op->sig;
        e->len = (uint32_t)op->total;
        if (!ghost)
            memcpy(cshm_ring_data(s, k, op->total), op->out, op->total);
        atomic_store_explicit(&e->seq, k + 1, memory_order_release);
    }
    atomic_store_explicit(&me->done, k + 1, memory_order_release);
    ring_wake_if_sleepers(s);
    /* The next entry's line was read by the readers a ring ago: taking
     * it now spares the next call's claim that wait. */
    ring_prefetch_write(s, cshm_ring_entry(s, k + 1));
    if (won)
        return PAMI_SUCCESS;
    cshm_count(s, CSHM_STAT_mismatches);
    coll_warn("an eager shared-memory broadcast has two roots (this task "
              "and another): PAMI_INVAL here");
    return PAMI_INVAL;
}

/* A reader, once the entry is there (ready 1) or known never to come
 * (-1): checks the root's signature against its own call, copies out,
 * and counts the entry consumed whatever happened. */
static pami_result_t ring_read(cshm_t *s, int ready)
{
    cshm_op_t *op = &s->op;
    uint64_t k = op->ring_k;
    cshm_ring_entry_t *e = cshm_ring_entry(s, k);
    pami_result_t rc = PAMI_SUCCESS;
    int st = cshm_ring_entry_check(
        atomic_load_explicit(&e->seq, memory_order_acquire), e->sig, e->len,
        k, op->sig, op->total);
    if (ready < 0 || st != CSHM_ENTRY_OK) {
        rc = PAMI_INVAL;
        if (st == CSHM_ENTRY_AHEAD)
            cshm_count(s, CSHM_STAT_segment_bad);
        if (!op_ghost(op)) {
            cshm_count(s, CSHM_STAT_mismatches);
            coll_warn("the members' calls of an eager shared-memory "
                      "broadcast differ (%s): PAMI_INVAL here",
                      ready < 0 ? "no root" : "root, count or type");
        }
    } else if (!op_ghost(op)) {
        memcpy(op->out, cshm_ring_data(s, k, op->total), op->total);
    }
    atomic_store_explicit(&cshm_ring_task(s, s->my_index)->done, k + 1,
                          memory_order_release);
    ring_wake_if_sleepers(s);
    return rc;
}

/* Ends a ring wait; ready == 0 only once a death was seen. A root that
 * wrote its entry and then died left it whole: look once more. */
static pami_result_t ring_finish(cshm_t *s, int ready)
{
    if (ready == 0)
        ready = cshm_ring_ready(s, ring_what(s));
    if (ready == 0)
        return PAMI_PEER_FAILED;
    return s->op.rank == s->op.root ? ring_write(s) : ring_read(s, ready);
}

/* The blocking call's run: polls for spin_ns (with more tasks than
 * CPUs: gives the CPU away between polls for up to CSHM_RING_YIELD_NS,
 * since the task it waits for may need it), then sleeps on the wake
 * word in short slices with progress between them (where a death is
 * found). */
#define CSHM_RING_YIELD_NS 1000000
pami_result_t cshm_ring_inline(cshm_t *s)
{
    uint64_t what = ring_what(s), start = 0;
    bool over = s->nlocal > s->ncpus;
    uint64_t budget = over ? CSHM_RING_YIELD_NS : s->spin_ns;
    unsigned mask = over ? 7 : 63;
    ring_enter(s);
    int ready = ring_ready_here(s, what, false);
    if (ready == 0) {
        cshm_count(s, CSHM_STAT_ring_waits);
        if (!(what & 1)) /* a sleeper may wait for every task to enter */
            ring_wake_if_sleepers(s);
    }
    /* A root waiting for room polls the readers' lines 8 times less
     * often: each look costs the reader it waits for a miss. */
    unsigned relax = (what & 1) && !over ? 8 : 1;
    for (unsigned i = 1; ready == 0; i++) {
        if (over)
            sched_yield();
        else
            for (unsigned j = 0; j < relax; j++)
                pami_protocol_cpu_relax();
        ready = ring_ready_here(s, what, (i & mask) == 0);
        if ((i & mask) == 0) {
            uint64_t now = cshm_now_ns();
            if (start == 0)
                start = now;
            else if (now - start >= budget)
                break;
        }
    }
    if (ready == 0)
        cshm_count(s, CSHM_STAT_ring_sleeps);
    while (ready == 0 && !s->dead) {
        pami_context_advance(s->ctx, 1);
        ready = cshm_sleep_ring(s, what, 1000000);
    }
    return ring_finish(s, ready);
}

/* The queued call's wait, posted (as cshm_flag_engine). */
static pami_result_t ring_engine(cshm_t *s)
{
    uint64_t what = ring_what(s);
    int ready = 0;
    for (unsigned i = 0; i < 256 && ready == 0; i++) {
        ready = ring_ready_here(s, what, (i & 63) == 63);
        if (ready == 0)
            pami_protocol_cpu_relax();
    }
    if (ready == 0 && !s->dead) {
        uint64_t now = cshm_now_ns();
        if (s->flag_since == 0) {
            s->flag_since = now;
            cshm_count(s, CSHM_STAT_ring_waits);
        }
        if (now - s->flag_since < s->spin_ns)
            return PAMI_EAGAIN;
        if (cshm_waiter_give_ring(s, what) != PAMI_SUCCESS)
            return PAMI_EAGAIN;
        cshm_count(s, CSHM_STAT_ring_sleeps);
        return PAMI_SUCCESS;
    }
    s->flag_since = 0;
    pami_result_t rc = ring_finish(s, ready);
    if (rc != PAMI_SUCCESS && rc != PAMI_INVAL)
        cshm_seg_failed(s, rc);
    finish_head(s, rc);
    cshm_pump(s);
    return PAMI_SUCCESS;
}

/* Always from progress: its end may complete the request. */
static pami_result_t ring_begin(cshm_t *s)
{
    s->step       = CSHM_ST_RING;
    s->flag_since = 0;
    ring_enter(s);
    if (s->op.rank != s->op.root)
        ring_wake_if_sleepers(s);
    return pami_context_post(s->ctx, &s->flag_work, cshm_flag_engine, s);
}

/* The queued call's wait, posted: polls a moment each time, re-posts
 * itself for spin_ns, then hands the wait to the waiter thread, which
 * posts it again. */
pami_result_t cshm_flag_engine(pami_context_t ctx, void *cookie)
{
    cshm_t  *s      = cookie;
    if (s->step == CSHM_ST_RING)
        return ring_engine(s);
    if (s->step == CSHM_ST_A2A)
        return a2a_engine(s);
    uint64_t target = s->phase + 1;
    int      done   = poll_flags(s, target, 2000);
    if (done == 0 && !s->dead) {
        uint64_t now = cshm_now_ns();
        if (s->flag_since == 0)
            s->flag_since = now;
        if (now - s->flag_since < s->spin_ns)
            return PAMI_EAGAIN;
        if (cshm_waiter_give(s, target) != PAMI_SUCCESS)
            return PAMI_EAGAIN; /* no thread: keep polling */
        cshm_count(s, CSHM_STAT_flag_sleeps);
        return PAMI_SUCCESS;
    }
    s->flag_since = 0;
    if (done == 0) /* dead: its flag may have been set before it died */
        done = cshm_flags_at(s, target);
    on_barrier(ctx, s, done > 0 ? PAMI_SUCCESS
                                : done < 0 ? flags_ahead(s)
                                           : PAMI_PEER_FAILED);
    return PAMI_SUCCESS;
}

/* Always from progress: its end may complete the request. */
static pami_result_t flag_begin(cshm_t *s)
{
    s->step       = CSHM_ST_FLAG;
    s->flag_since = 0;
    cshm_count(s, CSHM_STAT_flag_rounds);
    return pami_context_post(s->ctx, &s->flag_work, cshm_flag_engine, s);
}

/* The end of alltoall_shm_cma and broadcast_shm_cma, queued or inline:
 * the round counted, or a mismatch's one barrier (as a flag round's,
 * which the members of a register round are in). */
static pami_result_t a2a_end(cshm_t *s, int state)
{
    if (state == CSHM_A2A_AHEAD)
        return flags_ahead(s);
    s->phase++;
    if (state == CSHM_A2A_MISMATCH) {
        cshm_count(s, CSHM_STAT_mismatches);
        coll_warn("geometry %u: the members' calls of a shared-memory "
                  "collective (kind %d) differ", s->op.g->id,
                  (int)s->op.x->kind);
        return PAMI_INVAL;
    }
    prefetch_write(cshm_ctl(s, s->my_index, s->phase & 1));
    return s->op.cma_rc;
}

/* The queued call: a pass each time progress runs it. */
static pami_result_t a2a_engine(cshm_t *s)
{
    int state = cshm_a2a_pass(s);
    pami_result_t rc = PAMI_PEER_FAILED;
    if (state == CSHM_A2A_WAIT && !s->dead)
        return PAMI_EAGAIN;
    if (state != CSHM_A2A_WAIT)
        rc = a2a_end(s, state);
    if (state == CSHM_A2A_MISMATCH) {
        rc = barrier(s, CSHM_ST_FLAG_BAR);
        if (rc == PAMI_SUCCESS)
            return PAMI_SUCCESS;
    }
    if (rc != PAMI_SUCCESS && rc != PAMI_INVAL)
        cshm_seg_failed(s, rc);
    finish_head(s, rc);
    cshm_pump(s);
    return PAMI_SUCCESS;
}

pami_result_t cshm_a2a_run_inline(cshm_t *s)
{
    int state = CSHM_A2A_WAIT;
    pami_result_t rc = cshm_a2a_inline(s, &state);
    if (rc != PAMI_SUCCESS)
        return rc;
    rc = a2a_end(s, state);
    return state == CSHM_A2A_MISMATCH ? mismatch_barrier(s, rc) : rc;
}

static pami_result_t op_begin(cshm_t *s, coll_req_t *req)
{
    cshm_op_setup(s, req, &req->x, req->g, req->dtsize, req->algo_id);
    if (s->op.ring)
        return ring_begin(s);
    if (cshm_nobar_kind(s->op.kind)) {
        s->step = CSHM_ST_A2A;
        return pami_context_post(s->ctx, &s->flag_work, cshm_flag_engine, s);
    }
    return s->op.flag ? flag_begin(s) : barrier(s, CSHM_ST_OP);
}

/* Every member wrote the signature of its call (kind, algorithm, type,
 * op, root, count) before the first barrier: all see the same set, so
 * all tell a mismatch alike and stop after that barrier. */
static bool same_call(cshm_t *s)
{
    uint32_t p = s->phase & 1, sig = s->op.sig;
    for (size_t r = 0; r < s->op.n; r++)
        if (atomic_load_explicit(cshm_ctl(s, s->idx[r], p),
                                 memory_order_relaxed) != sig)
            return false;
    return true;
}

/* A barrier of the op ended: runs its reads (and for large reductions
 * the parts) and starts the next barrier. PAMI_SUCCESS with *done when
 * the op ended here. A request failed meanwhile (abort, dead peer) runs
 * on as a ghost: same barriers, no access to the program's buffers. */
pami_result_t cshm_op_next(cshm_t *s, bool *done)
{
    cshm_op_t *op = &s->op;
    uint32_t p = s->phase & 1;
    bool ghost = op->req != NULL && op->req->status != PAMI_SUCCESS;
    *done = false;
    if (op->first) {
        op->first = false;
        if (op->poison) {
            s->phase++;
            return PAMI_INVAL;
        }
        if (!same_call(s)) {
            cshm_count(s, CSHM_STAT_mismatches);
            coll_warn("geometry %u: the members' calls of a shared-memory "
                      "collective (kind %d) differ", op->g->id,
                      (int)op->x->kind);
            s->phase++;
            return PAMI_INVAL;
        }
    }
    size_t off, cnt, res = result_rank(op);
    switch (op->kind) {
    case CSHM_AR_SMALL:
    case CSHM_RED_SMALL:
        if (!ghost && (op->kind == CSHM_AR_SMALL || op->rank == op->root))
            cshm_fold(s, op->out + op->pos, p, 0, op->len / op->es);
        break;
    case CSHM_AR_LARGE:
    case CSHM_RED_LARGE:
        part(op, op->rank, &off, &cnt);
        if (op->stage == 0) {
            unsigned char *acc = cshm_slot_of(s, res, p) + off;
            if (!ghost) {
                cshm_fold(s, acc, p, off, cnt);
                if (op->kind == CSHM_AR_LARGE || op->rank == op->root)
                    memcpy(op->out + op->pos + off, acc, cnt * op->es);
            }
            op->stage = 1;
            return barrier(s, CSHM_ST_OP);
        }
        if (!ghost && (op->kind == CSHM_AR_LARGE || op->rank == op->root))
            for (size_t j = 0; j < op->n; j++) {
                if (j == op->rank)
                    continue;
                part(op, j, &off, &cnt);
                memcpy(op->out + op->pos + off, cshm_slot_of(s, res, p) + off,
                       cnt * op->es);
            }
        break;
    case CSHM_BCAST:
        if (!ghost && op->rank != op->root)
            memcpy(op->out + op->pos, cshm_slot_of(s, op->root, p), op->len);
        break;
    case CSHM_ALLTOALL:
    case CSHM_REDSCAT:
        if (op->ll && !ghost && !op->ll_read) {
            pami_result_t rc = cshm_ll_read(s, p);
            if (rc != PAMI_SUCCESS)
                return rc;
        } else if (!op->ll && !ghost) {
            cshm_blocks_read(s, p);
        }
        break;
    case CSHM_A2A_CMA: /* no barrier (a2a_engine) */
    case CSHM_BC_CMA:
        break;
    case CSHM_AR_CMA:
    case CSHM_RS_CMA:
    case CSHM_AG_CMA:
        if (cshm_cma_step(s, p, ghost))
            return barrier(s, CSHM_ST_OP);
        break;
    case CSHM_ALLGATHER:
        if (op->ll && !ghost && !op->ll_read) {
            pami_result_t rc = cshm_ll_read(s, p);
            if (rc != PAMI_SUCCESS)
                return rc;
        }
        for (size_t r = 0; r < op->n && !ghost && !op->ll; r++) {
            if (r == op->rank && op->in_place)
                continue;
            memcpy(op->out + r * op->total + op->pos, cshm_slot_of(s, r, p),
                   op->len);
        }
        break;
    }
    s->phase++;
    op->pos += op->len;
    if (op->pos >= op->total) {
        /* Nobody reads our next control line until the next round's
         * barrier or number (see the top; a flag round's reader may
         * poll it early, and only takes it back): take it for writing
         * now, off the next call's path. */
        prefetch_write(cshm_ctl(s, s->my_index, s->phase & 1));
        *done = true;
        return cshm_cma_kind(op->kind) ? op->cma_rc : PAMI_SUCCESS;
    }
    p = s->phase & 1;
    write_round(s, p, ghost);
    return barrier(s, CSHM_ST_OP);
}

/* ---- running the queue ---- */

/* Data collectives fail from now on: the rounds of the tasks may no
 * longer line up. */
void cshm_seg_failed(cshm_t *s, pami_result_t rc)
{
    if (s->setup != CSHM_SETUP_FAILED)
        s->seg_rc = rc;
    s->setup = CSHM_SETUP_FAILED;
}

/* Set-up, at the first data collective: the leader creates the segment,
 * barrier, the others attach, barrier, the leader unlinks the name. A
 * task that fails still takes part in both barriers, so the others find
 * the count short and fail too instead of hanging. */
static pami_result_t setup_begin(cshm_t *s)
{
    s->setup = CSHM_SETUP_RUNNING;
    cshm_count(s, CSHM_STAT_setups);
    if (s->my_index == 0 && cshm_seg_create(s) != PAMI_SUCCESS)
        cshm_seg_release(s);
    return barrier(s, CSHM_ST_SETUP1);
}

static pami_result_t begin_head(cshm_t *s)
{
    cshm_entry_t *e = head(s);
    pami_result_t rc;
    s->running = true;
    if (e->which != COLL_EXT_SHM) {
        s->step = CSHM_ST_REG;
        cshm_count(s, CSHM_STAT_register_barriers);
        rc = e->which == COLL_BARRIER_HIER
                 ? pami_barrier_hier(s->ctx, on_barrier, s)
                 : pami_barrier_shm(s->ctx, on_barrier, s);
    } else if (s->setup == CSHM_SETUP_FAILED) {
        rc = s->seg_rc;
    } else if (s->setup == CSHM_SETUP_NONE) {
        rc = setup_begin(s);
    } else {
        rc = e->attached ? op_begin(s, e->req) : poison_or_ring(s, e);
    }
    if (rc != PAMI_SUCCESS)
        s->running = false;
    return rc;
}

/* Starts queued entries until one waits for a barrier. */
void cshm_pump(cshm_t *s)
{
    while (!s->running && s->qlen > 0) {
        pami_result_t rc = begin_head(s);
        if (rc != PAMI_SUCCESS) {
            if (head(s)->which == COLL_EXT_SHM)
                cshm_seg_failed(s, rc);
            finish_head(s, rc);
        }
    }
}

/* After the set-up barriers. */
static pami_result_t setup_next(cshm_t *s, bool *done)
{
    *done = false;
    if (s->step == CSHM_ST_SETUP1) {
        if (s->my_index != 0 && cshm_seg_attach(s) != PAMI_SUCCESS)
            cshm_seg_release(s);
        return barrier(s, CSHM_ST_SETUP2);
    }
    if (!cshm_seg_finish(s)) {
        cshm_log(PAMI_PROTOCOL_LOG_WARN, "the segment %s could not be set "
                 "up on every task of the node: shared-memory collectives "
                 "fail with PAMI_ERROR on this context", s->name);
        cshm_seg_release(s);
        cshm_seg_failed(s, PAMI_ERROR);
        *done = true;
        return PAMI_ERROR;
    }
    s->setup = CSHM_SETUP_READY;
    return head(s)->attached ? op_begin(s, head(s)->req)
                             : poison_or_ring(s, head(s));
}

static void on_barrier(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    cshm_t *s    = cookie;
    bool    done = true;
    if (rc == PAMI_SUCCESS) {
        if (s->step == CSHM_ST_OP || s->step == CSHM_ST_FLAG) {
            rc = cshm_op_next(s, &done);
            /* A mismatch seen in a flag round: members that ran a
             * register round (a poison round, a larger call) are in a
             * barrier; every member of the flag round joins one. */
            if (rc == PAMI_INVAL && s->step == CSHM_ST_FLAG) {
                rc = barrier(s, CSHM_ST_FLAG_BAR);
                if (rc == PAMI_SUCCESS)
                    return;
            }
        } else if (s->step == CSHM_ST_FLAG_BAR) {
            rc = PAMI_INVAL;
        } else if (s->step != CSHM_ST_REG) {
            rc = setup_next(s, &done);
        }
    }
    if (rc != PAMI_SUCCESS && rc != PAMI_INVAL) {
        /* A hierarchical barrier also fails for a task of another node;
         * it still counted this node's tasks in the register. */
        if (s->step != CSHM_ST_REG || head(s)->which != COLL_BARRIER_HIER)
            cshm_seg_failed(s, rc);
        done = true;
    }
    if (done || rc != PAMI_SUCCESS)
        finish_head(s, rc);
    cshm_pump(s);
}

/* ---- the executor's side ---- */

static pami_result_t on_kick(pami_context_t ctx, void *cookie)
{
    (void)ctx;
    cshm_t *s = cookie;
    s->posted = false;
    cshm_pump(s);
    return PAMI_SUCCESS;
}

/* An entry queued outside progress: pump from progress, in case nothing
 * else will (an entry whose step never starts). */
void cshm_kick(cshm_t *s)
{
    if (s->posted)
        return;
    s->posted = true;
    pami_context_post(s->ctx, &s->kick, on_kick, s);
}

/* The entry coll_shm_build queued for req, or NULL. */
static cshm_entry_t *entry_of(cshm_t *s, const coll_req_t *req)
{
    for (size_t i = s->qlen; i-- > 0;) {
        cshm_entry_t *e = &s->q[(s->qhead + i) % s->qcap];
        if (e->req == req && !e->attached && e->which == COLL_EXT_SHM)
            return e;
    }
    return NULL;
}

pami_result_t coll_shm_start(coll_req_t *req, int which, pami_event_fn done)
{
    cshm_t *s = cshm_of(req->cc->ctx);
    if (s == NULL)
        return PAMI_ERROR;
    if (which == COLL_EXT_SHM) {
        cshm_entry_t *e = entry_of(s, req);
        if (e == NULL)
            return s->setup == CSHM_SETUP_FAILED ? s->seg_rc : PAMI_ERROR;
        e->attached = true;
        e->done     = done;
        if (e != head(s) || s->running) {
            cshm_count(s, CSHM_STAT_queued);
            return PAMI_SUCCESS;
        }
    } else {
        if (!cshm_push(s, (cshm_entry_t){.req = req, .which = which,
                                    .done = done, .attached = true}))
            return PAMI_ENOMEM;
        if (s->qlen > 1 || s->running) {
            cshm_count(s, CSHM_STAT_queued);
            return PAMI_SUCCESS;
        }
    }
    /* Alone: started now, and a failure is reported here (never through
     * done, which must not run inside the executor's call). */
    pami_result_t rc = begin_head(s);
    if (rc != PAMI_SUCCESS) {
        s->qhead = (s->qhead + 1) % s->qcap;
        s->qlen--;
        if (which == COLL_EXT_SHM)
            cshm_seg_failed(s, rc);
    }
    return rc;
}

pami_result_t coll_shm_quiesce(pami_context_t ctx)
{
    cshm_t *s = cshm_of(ctx);
    while (s != NULL && s->qlen > 0) {
        pami_result_t rc = pami_context_wait(ctx, 100);
        if (rc != PAMI_SUCCESS && rc != PAMI_TIMEOUT)
            return rc;
    }
    return PAMI_SUCCESS;
}


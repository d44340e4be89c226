/*
 * alltoall_shm_cma and broadcast_shm_cma without barriers
 * (docs/collectives.md, "alltoall_shm_cma", "broadcast_shm_cma").
 *
 * Each task numbers its control line (cshm_publish: the round's number
 * after its process id, the address of its buffer and the call's
 * signature). alltoall: it copies its own block, and reads block r of
 * every other task's send buffer with process_vm_readv as soon as that
 * task's line shows the round, in the order r + 1, r + 2, ..., skipping
 * those not there yet. broadcast: a task other than the root reads the
 * root's whole buffer as soon as the root's line shows the round; every
 * task still waits until every line shows it (so that each sees every
 * member's signature, below). After each read a task adds one to the
 * source's count of readers (in the source's line); a task leaves once
 * it saw every line at the round, made its reads, and (alltoall, and a
 * broadcast's root) its own count shows n - 1, so its buffer stays
 * unchanged until all reads of it ended. No task waits for all the
 * others to have read: Open MPI's alltoall and its broadcast up to
 * 256 KiB on one node (basic linear, ob1 and vader's CMA get) have no
 * barrier either; without the two register barriers this call had,
 * alltoall took 1-12 % less time in 18 of 20 paired turns at 8 tasks on
 * 2 CPUs (docs/performance-log.md, "Collectives (s12)").
 *
 * Why the lines stay valid: a task leaves round k only once every line
 * showed round k, so every task had entered it; its next use of parity
 * p (round k + 2) comes after round k + 1, which needs every task to
 * have entered it (a barrier, a flag round, or these calls' look at
 * every line), so every look at its line of round k has ended, and no
 * line shows k + 2 while a task is in round k. The count is set to 0
 * before the line is numbered, and readers add to it only after they
 * saw the number.
 *
 * A mismatch (a line at the round with another signature: a different
 * call, a poison round) is seen by every member of this call, since each
 * looks at every line before it can finish; each then joins one register
 * barrier, as a flag round does, and fails with PAMI_INVAL. A ghost (its
 * request failed here) published address 0: it reads nothing but still
 * counts itself at every source; its readers fail with PAMI_INVAL.
 */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>

#include "coll_shm.h"

/* What alltoall_shm_cma keeps in its control line, after the number. */
typedef struct {
    uint64_t         pid;
    uint64_t         addr;
    _Atomic uint64_t readers; /* reads of this round's buffer that ended */
} a2a_line_t;

_Static_assert(sizeof(a2a_line_t) <= CSHM_TINY, "fits a control line");
_Static_assert(offsetof(a2a_line_t, pid) == 0, "pid first (cshm_cma_result)");

static a2a_line_t *a2a_line(const cshm_t *s, size_t local, uint32_t p)
{
    return (a2a_line_t *)((unsigned char *)cshm_ctl(s, local, p) +
                          CSHM_TINY_OFF);
}

static bool ghost_here(const cshm_op_t *op)
{
    return op->req != NULL && op->req->status != PAMI_SUCCESS;
}

static bool is_bcast(const cshm_op_t *op)
{
    return op->kind == CSHM_BC_CMA;
}

/* Whether this task reads rank j's buffer: alltoall every other one,
 * a broadcast's non-root the root's. */
static bool reads_from(const cshm_op_t *op, size_t j)
{
    return !is_bcast(op) || (j == op->root && op->rank != op->root);
}

/* Whether this task waits for its own count of readers. */
static bool is_read(const cshm_op_t *op)
{
    return !is_bcast(op) || op->rank == op->root;
}

void cshm_a2a_setup(cshm_t *s)
{
    cshm_op_t *op = &s->op;
    a2a_line_t *l = a2a_line(s, s->my_index, s->phase & 1);
    bool bc = is_bcast(op);
    l->pid  = s->pid;
    /* A broadcast's non-root publishes its buffer too, though nobody
     * reads it: 0 there would not tell a ghost apart. */
    l->addr = ghost_here(op) || (!bc && op->in_place)
                  ? 0
                  : (uint64_t)(uintptr_t)(bc ? op->out : op->in);
    atomic_store_explicit(&l->readers, 0, memory_order_relaxed);
    memset(s->a2a_got, 0, op->n);
    s->a2a_left = op->n - 1;
    s->a2a_own  = bc; /* a broadcast has no own block to copy */
}

static pami_result_t read_block(cshm_t *s, size_t j, const a2a_line_t *l)
{
    cshm_op_t *op = &s->op;
    bool bc = is_bcast(op);
    const char *name = bc ? "broadcast_shm_cma" : "alltoall_shm_cma";
    size_t m = op->total, got = 0, from = bc ? 0 : op->rank * m;
    unsigned char *dst = bc ? op->out : op->out + j * m;
    if (l->addr == 0) {
        cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s: rank %zu's call failed there: "
                 "PAMI_INVAL here", name, j);
        return PAMI_INVAL;
    }
    while (got < m) {
        struct iovec lo = {dst + got, m - got};
        struct iovec re = {(void *)(uintptr_t)(l->addr + from + got),
                           m - got};
        ssize_t r = process_vm_readv((pid_t)l->pid, &lo, 1, &re, 1, 0);
        if (r <= 0) {
            int           err = errno;
            pami_result_t rc  = cshm_cma_result(s, r, err);
            cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s: process_vm_readv from "
                     "rank %zu: %s: %s here", name, j,
                     r < 0 ? strerror(err) : "no data",
                     rc == PAMI_INVAL ? "PAMI_INVAL" : "PAMI_PEER_FAILED");
            return rc;
        }
        got += (size_t)r;
    }
    return PAMI_SUCCESS;
}

int cshm_a2a_pass(cshm_t *s)
{
    cshm_op_t *op = &s->op;
    uint32_t p = s->phase & 1;
    uint64_t target = s->phase + 1;
    bool ghost = ghost_here(op);
    if (!s->a2a_own) {
        /* Published first, so the others may read this task's buffer
         * while it copies its own block. */
        s->a2a_own = true;
        if (!ghost)
            memcpy(op->out + op->rank * op->total,
                   op->in + op->rank * op->total, op->total);
    }
    bool counted = false;
    for (size_t k = 1; k < op->n && s->a2a_left > 0; k++) {
        size_t j = (op->rank + k) % op->n, li = s->idx[j];
        if (s->a2a_got[j])
            continue;
        int st = cshm_line_state(atomic_load_explicit(cshm_seq(s, li, p),
                                                      memory_order_acquire),
                                 target);
        if (st == 0)
            continue;
        if (st < 0)
            return CSHM_A2A_AHEAD;
        if (atomic_load_explicit(cshm_ctl(s, li, p), memory_order_relaxed) !=
            op->sig)
            return CSHM_A2A_MISMATCH;
        s->a2a_got[j] = 1;
        s->a2a_left--;
        if (!reads_from(op, j))
            continue; /* a broadcast: its line seen, that is all */
        a2a_line_t *l = a2a_line(s, li, p);
        if (!ghost && op->cma_rc == PAMI_SUCCESS)
            op->cma_rc = read_block(s, j, l);
        atomic_fetch_add_explicit(&l->readers, 1, memory_order_release);
        counted = true;
    }
    /* A source may sleep waiting for its count (cshm_a2a_wait). */
    if (counted && atomic_load(&cshm_hdr(s)->sleepers) != 0)
        cshm_wake_sleepers(s);
    if (s->a2a_left > 0)
        return CSHM_A2A_WAIT;
    return !is_read(op) ||
                   atomic_load_explicit(&a2a_line(s, s->my_index, p)->readers,
                                        memory_order_acquire) >= op->n - 1
               ? CSHM_A2A_DONE
               : CSHM_A2A_WAIT;
}

/* Whether a pass would do anything now (for a sleeper's last look). */
static int a2a_ready(cshm_t *s)
{
    cshm_op_t *op = &s->op;
    uint32_t p = s->phase & 1;
    if (s->a2a_left == 0)
        return !is_read(op) ||
               atomic_load_explicit(&a2a_line(s, s->my_index, p)->readers,
                                    memory_order_acquire) >= op->n - 1;
    for (size_t j = 0; j < op->n; j++)
        if (j != op->rank && !s->a2a_got[j] &&
            cshm_line_state(atomic_load_explicit(cshm_seq(s, s->idx[j], p),
                                                 memory_order_acquire),
                            s->phase + 1) != 0)
            return 1;
    return 0;
}

/* The blocking call's wait between passes: with a CPU per task polls
 * for spin_ns, else yields (the task waited for may need this CPU); both
 * then sleep on the segment's wake word, progressing the context between
 * sleeps (where a dead task is found). */
#define A2A_YIELD_NS 1000000
#define BC_POLL_BYTES_PER_NS 2
pami_result_t cshm_a2a_inline(cshm_t *s, int *state)
{
    bool over = s->nlocal > s->ncpus;
    uint64_t start = 0, spin = s->spin_ns;
    /* A broadcast's root with a CPU per task waits while its readers
     * copy: it polls that long too (at BC_POLL_BYTES_PER_NS), since a
     * sleep adds a reader's wake and its own wake-up to every call (at
     * 2 tasks, 1 MiB: 108 against 88 us a call when the root slept;
     * docs/performance-log.md, "Collectives (s12)"). */
    if (is_bcast(&s->op) && s->op.rank == s->op.root)
        spin += s->op.total / BC_POLL_BYTES_PER_NS;
    for (unsigned i = 1;; i++) {
        *state = cshm_a2a_pass(s);
        if (*state != CSHM_A2A_WAIT)
            return PAMI_SUCCESS;
        if (s->dead)
            return PAMI_PEER_FAILED;
        if ((i & 15) == 0 || over) {
            uint64_t now = cshm_now_ns();
            if (start == 0)
                start = now;
            if (now - start >= (over ? A2A_YIELD_NS : spin)) {
                pami_context_advance(s->ctx, 1);
                cshm_sleep_until(s, a2a_ready, 1000000);
                continue;
            }
        }
        if (over)
            sched_yield();
        else
            pami_protocol_cpu_relax();
    }
}

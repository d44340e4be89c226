/*
 * alltoall_shm and reduce_scatter_shm: the shared-memory rounds of
 * coll_alg_shm.c for the two collectives whose input is one block per
 * rank (docs/collectives.md, "Shared memory").
 *
 * A round carries the slice [pos, pos + len) of every block: each task
 * writes its n slices one after the other into its own slot (slice j at
 * j * len), and after the round's barrier (or flag) rank r reads slice r
 * of every task's slot: alltoall copies it to block j of its output,
 * reduce_scatter folds the n slices in rank order into its output (so
 * any op works, commutative or not). One round moves n * len bytes per
 * task, so len is at most the slot over n (s->op.chunk). Each task's
 * output slices of a round are input slices that round already copied,
 * so PAMI_IN_PLACE (input in rbuf) needs no copy of its own.
 *
 * alltoall_shm_cma copies once: each task puts its process id and the
 * address of its send buffer in its control line (where a tiny call's
 * data goes; 0 for a call that failed here) and copies its own block,
 * and after the barrier reads block r of every other task's buffer
 * straight into its own with process_vm_readv; a second barrier keeps
 * every buffer unchanged until all reads ended. Not in place (the others would read what this task
 * overwrites): its check refuses PAMI_IN_PLACE. A read the kernel
 * refuses (no ptrace permission) fails the call here with PAMI_INVAL and
 * a log line; the rounds stay aligned.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "coll_shm.h"

#define IN_PLACE(p) ((const void *)(p) == (const void *)PAMI_IN_PLACE)

/* What alltoall_shm_cma puts in its control line. */
typedef struct {
    uint64_t pid;
    uint64_t addr;
} cma_line_t;

static size_t         cma_id;
static pthread_once_t cma_once = PTHREAD_ONCE_INIT;

static void find_cma(void)
{
    for (size_t i = 0; i < coll_num_algos; i++)
        if (coll_algos[i].check == coll_shm_cma_check)
            cma_id = i + 1;
}

static cma_line_t *cma_line(cshm_t *s, size_t local, uint32_t p)
{
    return (cma_line_t *)((unsigned char *)cshm_ctl(s, local, p) +
                          CSHM_TINY_OFF);
}

void cshm_blocks_setup(cshm_t *s, size_t algo_id)
{
    cshm_op_t *op = &s->op;
    const pami_xfer_t *x = op->x;
    op->kind  = x->kind == PAMI_XFER_ALLTOALL ? CSHM_ALLTOALL : CSHM_REDSCAT;
    op->in    = op->in_place ? x->rbuf : x->sbuf;
    op->chunk = s->slot / op->n / op->es * op->es;
    op->user  = x->kind == PAMI_XFER_REDUCE_SCATTER && x->op == PAMI_OP_USER;
    pthread_once(&cma_once, find_cma);
    if (op->kind != CSHM_ALLTOALL || algo_id != cma_id)
        return;
    /* One round of the whole block; published with the round's number. */
    op->kind  = CSHM_A2A_CMA;
    op->chunk = op->total;
    op->cma_rc = PAMI_SUCCESS;
    bool ghost = op->req != NULL && op->req->status != PAMI_SUCCESS;
    cma_line_t *l = cma_line(s, s->my_index, s->phase & 1);
    l->pid  = s->pid;
    l->addr = ghost || op->in_place ? 0 : (uint64_t)(uintptr_t)op->in;
}

pami_result_t cshm_cma_read(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    size_t m = op->total;
    /* Rank r reads r + 1, r + 2, ...: at each step every task has one
     * reader, where in rank order all would start on rank 0's memory
     * (its page tables and mm lock). The own block went before the
     * barrier (cshm_blocks_write). */
    for (size_t k = 1; k < op->n; k++) {
        size_t j = (op->rank + k) % op->n;
        unsigned char *dst = op->out + j * m;
        const cma_line_t *l = cma_line(s, s->idx[j], p);
        if (l->addr == 0) {
            cshm_log(PAMI_PROTOCOL_LOG_WARN, "alltoall_shm_cma: rank %zu's "
                     "call failed there: PAMI_INVAL here", j);
            return PAMI_INVAL;
        }
        size_t got = 0;
        while (got < m) {
            struct iovec lo = {dst + got, m - got};
            struct iovec re = {(void *)(uintptr_t)(l->addr + op->rank * m +
                                                   got), m - got};
            ssize_t r = process_vm_readv((pid_t)l->pid, &lo, 1, &re, 1, 0);
            if (r <= 0) {
                pami_result_t rc = cshm_cma_result(r, errno);
                cshm_log(PAMI_PROTOCOL_LOG_WARN, "alltoall_shm_cma: "
                         "process_vm_readv from rank %zu: %s: %s here", j,
                         r < 0 ? strerror(errno) : "no data",
                         rc == PAMI_INVAL ? "PAMI_INVAL" : "PAMI_PEER_FAILED");
                return rc;
            }
            got += (size_t)r;
        }
    }
    return PAMI_SUCCESS;
}

/* The registry's check: the _shm_cma one's, and not in place. */
pami_result_t coll_shm_cma_check(const pami_xfer_t *x)
{
    if (coll_shm_cma_any_check(x) != PAMI_SUCCESS || IN_PLACE(x->sbuf))
        return PAMI_INVAL;
    return PAMI_SUCCESS;
}

void cshm_blocks_write(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    if (op->kind == CSHM_A2A_CMA) {
        /* The others' blocks are read from their buffers after the
         * barrier; the own one needs nobody, so it is copied while the
         * others arrive. */
        memcpy(op->out + op->rank * op->total, op->in + op->rank * op->total,
               op->total);
        return;
    }
    unsigned char *mine = cshm_slot_of(s, op->rank, p);
    /* The own block's slice of this slot is read by nobody else:
     * alltoall copies it from input to output, reduce_scatter (not in
     * place) folds it from the input (cshm_blocks_own_direct). */
    bool skip = op->kind == CSHM_ALLTOALL || cshm_blocks_own_direct(op);
    for (size_t j = 0; j < op->n; j++)
        if (!skip || j != op->rank)
            memcpy(mine + j * op->len, op->in + j * op->total + op->pos,
                   op->len);
}

void cshm_blocks_read(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    size_t mine = op->rank * op->len;
    if (op->kind == CSHM_REDSCAT) {
        cshm_fold(s, op->out + op->pos, p, mine, op->len / op->es);
        return;
    }
    for (size_t j = 0; j < op->n; j++) {
        size_t at = j * op->total + op->pos;
        if (j != op->rank)
            memcpy(op->out + at, cshm_slot_of(s, j, p) + mine, op->len);
        else if (!op->in_place) /* in place: the slice is already there */
            memcpy(op->out + at, op->in + at, op->len);
    }
}

/* The registry's check: this node's tasks, and a slot that holds one
 * element of every block (PAMI_COLL_SHM_SLOT may be as small as 64 B). */
pami_result_t coll_shm_blocks_check(const pami_xfer_t *x)
{
    if (coll_shm_check(x) != PAMI_SUCCESS)
        return PAMI_INVAL;
    cshm_t *s = cshm_of(x->geometry->cc->ctx);
    size_t es = coll_type_valid(x->dtype) ? pami_type_size(x->dtype) : 1;
    if (s == NULL || s->slot / x->geometry->size < (es ? es : 1))
        return PAMI_INVAL;
    return PAMI_SUCCESS;
}

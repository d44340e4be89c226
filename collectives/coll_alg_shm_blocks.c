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
 * alltoall_shm_cma copies once, reading the others' buffers with
 * process_vm_readv and no barrier (coll_alg_shm_a2a.c); here only its
 * set-up and check. Not in place (the others would read what this task
 * overwrites): its check refuses PAMI_IN_PLACE.
 */
#include <pthread.h>
#include <string.h>

#include "coll_shm.h"

#define IN_PLACE(p) ((const void *)(p) == (const void *)PAMI_IN_PLACE)

static size_t         cma_id;
static pthread_once_t cma_once = PTHREAD_ONCE_INIT;

static void find_cma(void)
{
    for (size_t i = 0; i < coll_num_algos; i++)
        if (coll_algos[i].check == coll_shm_cma_check)
            cma_id = i + 1;
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
    /* One round of the whole block, run by coll_alg_shm_a2a.c. */
    op->kind  = CSHM_A2A_CMA;
    op->chunk = op->total;
    op->cma_rc = PAMI_SUCCESS;
    cshm_a2a_setup(s);
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
    if (op->kind == CSHM_A2A_CMA)
        return; /* all of it after the line is numbered (cshm_a2a_pass) */
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

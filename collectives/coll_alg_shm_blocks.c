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
 */
#include <string.h>

#include "coll_shm.h"

void cshm_blocks_setup(cshm_t *s)
{
    cshm_op_t *op = &s->op;
    const pami_xfer_t *x = op->x;
    op->kind  = x->kind == PAMI_XFER_ALLTOALL ? CSHM_ALLTOALL : CSHM_REDSCAT;
    op->in    = op->in_place ? x->rbuf : x->sbuf;
    op->chunk = s->slot / op->n / op->es * op->es;
    op->user  = x->kind == PAMI_XFER_REDUCE_SCATTER && x->op == PAMI_OP_USER;
}

void cshm_blocks_write(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    unsigned char *mine = cshm_slot_of(s, op->rank, p);
    for (size_t j = 0; j < op->n; j++)
        memcpy(mine + j * op->len, op->in + j * op->total + op->pos, op->len);
}

void cshm_blocks_read(cshm_t *s, uint32_t p)
{
    cshm_op_t *op = &s->op;
    size_t mine = op->rank * op->len;
    if (op->kind == CSHM_REDSCAT) {
        cshm_fold(s, op->out + op->pos, p, mine, op->len / op->es);
        return;
    }
    for (size_t j = 0; j < op->n; j++)
        memcpy(op->out + j * op->total + op->pos,
               cshm_slot_of(s, j, p) + mine, op->len);
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

/*
 * A large put or get on the owner's path in pieces (docs/protocols/rma.md,
 * "The owner's path"). One message of a MiB goes over TCP in UCX's
 * segments, which the receiver joins into one buffer before pami's
 * handler copies it again; pieces of PAMI_RMA_OWNER_PIECE bytes each fit
 * one segment. Each piece is an ordinary PUT or GET of its own request,
 * all sent at once in order; the user's operation ends when every piece
 * was answered. A fence after it sends its FENCE after every piece.
 */
#include <stdlib.h>

#include "internal.h"

void pami_rma_join_part(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    pami_rma_join_t *j = cookie;
    if (rc != PAMI_SUCCESS && j->result == PAMI_SUCCESS)
        j->result = rc;
    if (--j->left > 0)
        return;
    if (j->local_fn != NULL)
        j->local_fn(ctx, j->cookie, j->result);
    if (j->remote_fn != NULL)
        j->remote_fn(ctx, j->cookie, j->result);
    free(j);
}

/* A piece's answer (or its failure: a dead owner fails each piece once)
 * is a part of the join: the last runs the user's callbacks in the order
 * of one message, local_fn then remote_fn. */
pami_result_t pami_rma_owner_pieces(struct pami_context *ctx, uint32_t index,
                                    const pami_rma_msg_t *m, void *local,
                                    size_t piece, pami_event_fn local_fn,
                                    pami_event_fn remote_fn, void *cookie,
                                    int32_t region)
{
    bool           get = m->type == PAMI_RMA_MSG_GET;
    pami_rma_join_t *j = malloc(sizeof(*j));
    if (j == NULL)
        return PAMI_ENOMEM;
    *j = (pami_rma_join_t){.left = 1, .local_fn = local_fn,
                         .remote_fn = remote_fn, .cookie = cookie};
    /* left holds one extra until every piece is out, so no answer (none
     * comes before the next advance anyway) can end it early. */
    size_t sent = 0;
    for (uint64_t off = 0; off < m->bytes; off += piece) {
        pami_rma_msg_t p   = *m;
        uint8_t       *at  = (uint8_t *)local + off;
        p.offset += off;
        p.bytes   = m->bytes - off < piece ? m->bytes - off : piece;
        pami_result_t rc = pami_rma_owner_start(
            ctx, index, &p, at, get ? at : NULL, get ? p.bytes : 0, NULL,
            pami_rma_join_part, j, region);
        if (rc != PAMI_SUCCESS) {
            if (sent == 0) {
                free(j);
                return rc; /* nothing left: no callback */
            }
            /* Pieces are out: the operation ends with this error once
             * they are answered. */
            pami_warn("rma", "only %zu pieces of a %s of %llu bytes could "
                             "leave: %s", sent, get ? "get" : "put",
                      (unsigned long long)m->bytes, pami_error_text(rc));
            j->result = rc;
            break;
        }
        sent++;
        j->left++;
    }
    j->left--; /* cannot reach 0: at least one piece is out */
    return PAMI_SUCCESS;
}

/*
 * Sends of a context to its own endpoint. UCX's self transport delivers
 * them inside the send call, but a handler runs only from advance/wait of
 * its context (pami.h): the message is copied here, in arrival order, and
 * delivered from progress. Only the self path pays for the copy.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The payload starts aligned, as it may in a transport's buffer. */
#define SELF_ALIGN 16

struct pami_self_msg {
    pami_self_msg_t *next;
    size_t           hdr_len, data_len, data_off;
    uint8_t          bytes[];
};

void pami_self_queue(struct pami_context *ctx, const void *hdr,
                     size_t hdr_len, const void *data, size_t data_len)
{
    size_t off = (hdr_len + SELF_ALIGN - 1) & ~(size_t)(SELF_ALIGN - 1);
    pami_self_msg_t *m = malloc(sizeof(*m) + off + data_len);
    if (m == NULL) {
        ctx->stats.dropped_malformed++;
        pami_error("am", "dropped a %zu-byte message to the own endpoint: "
                         "no memory to keep it until advance",
                   hdr_len + data_len);
        return;
    }
    m->next     = NULL;
    m->hdr_len  = hdr_len;
    m->data_len = data_len;
    m->data_off = off;
    if (hdr_len > 0)
        memcpy(m->bytes, hdr, hdr_len);
    if (data_len > 0)
        memcpy(m->bytes + off, data, data_len);
    *ctx->self_tail = m;
    ctx->self_tail  = &m->next;
    ctx->self_count++;
}

/* Delivers the messages queued before the call, in order: one a handler
 * sends to itself waits for the next progress call, so a handler that
 * always answers itself neither recurses nor keeps advance from returning. */
unsigned pami_self_deliver(struct pami_context *ctx)
{
    size_t   n    = ctx->self_count;
    unsigned done = 0;
    while (done < n && ctx->self_head != NULL) {
        pami_self_msg_t *m = ctx->self_head;
        ctx->self_head = m->next;
        if (ctx->self_head == NULL)
            ctx->self_tail = &ctx->self_head;
        ctx->self_count--;
        pami_am_recv_self(ctx, m->hdr_len > 0 ? m->bytes : NULL, m->hdr_len,
                          m->data_len > 0 ? m->bytes + m->data_off : NULL,
                          m->data_len);
        free(m);
        done++;
    }
    return done;
}

void pami_self_discard(struct pami_context *ctx)
{
    while (ctx->self_head != NULL) {
        pami_self_msg_t *m = ctx->self_head;
        ctx->self_head = m->next;
        free(m);
    }
    ctx->self_tail  = &ctx->self_head;
    ctx->self_count = 0;
}

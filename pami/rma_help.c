/*
 * Large CMA puts and gets on two cores (docs/protocols/rma.md, "Two cores
 * on a large put or get"). One process_vm_writev/readv moves what one
 * core copies through the kernel; UCP moves the same bytes with both
 * processes copying. So the origin offers the upper part to the owner
 * (a HELP message) while it copies the lower part itself.
 *
 * Whoever reads the part's token first copies it: the token sits in an
 * eventfd of the origin, which the owner opens with pidfd_getfd. A read
 * empties the eventfd atomically, so exactly one side gets the token. An
 * owner that is busy or dead never holds the origin up: the origin takes
 * the token back once its own part is done and copies the rest. An owner
 * that took the token copies at once and answers, or dies, which ends the
 * operation with PAMI_PEER_FAILED as any request waiting on it.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "peer_fd.h"

/* A token has bit 62 set and bit 63 clear, so a sum of two or three
 * (a stale token given back late, added to a new one) never equals one. */
#define TOKEN_BIT ((uint64_t)1 << 62)
#define TOKEN_SEQ (TOKEN_BIT - 1)

/* The token in fd, or 0 when the eventfd was empty. */
static uint64_t take(int fd)
{
    uint64_t v;
    ssize_t  n;
    do
        n = read(fd, &v, sizeof(v));
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(v) ? v : 0;
}

static bool give(int fd, uint64_t v)
{
    ssize_t n;
    do
        n = write(fd, &v, sizeof(v));
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(v);
}

static void slot_free(struct pami_context *ctx, uint32_t s)
{
    ctx->help[s].token = 0;
    ctx->help_posted--;
}

/* The origin copies the part itself and ends the request, unless the
 * request ended already (its owner found dead meanwhile). */
static void part_taken_back(struct pami_context *ctx, uint32_t s)
{
    __typeof__(ctx->help[0]) *h   = &ctx->help[s];
    pami_request_t           *req = pami_request_by_cookie(ctx, h->cookie);
    slot_free(ctx, s);
    if (req == NULL || !req->rma_owner || !req->remote_pending)
        return;
    ctx->help_taken_back++;
    pid_t pid = ctx->client->tasks[h->task].pid;
    int   err = h->put ? pami_cma_write(pid, h->raddr, h->local, h->bytes)
                       : pami_cma_read(pid, h->local, h->raddr, h->bytes,
                                       false);
    pami_result_t rc = PAMI_SUCCESS;
    if (err != 0)
        rc = pami_cma_failed(ctx, h->task, h->put, h->bytes, h->raddr, err);
    /* A dead owner ended it already (pami_task_failed). Both callbacks
     * get the outcome, as from an owner's answer (rma_owner.c). */
    if (req->remote_pending) {
        if (rc != PAMI_SUCCESS && req->result == PAMI_SUCCESS)
            req->result = rc;
        pami_request_acked(req, rc);
    }
}

/* A free slot with its eventfd made and empty; -1 when none. */
static int slot_get(struct pami_context *ctx)
{
    for (uint32_t s = 0; s < PAMI_RMA_HELP_SLOTS; s++) {
        __typeof__(ctx->help[0]) *h = &ctx->help[s];
        if (h->token != 0)
            continue;
        if (h->fd < 0)
            h->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (h->fd < 0)
            return -1;
        (void)take(h->fd); /* a stale token an owner gave back late */
        return (int)s;
    }
    return -1;
}

pami_result_t pami_rma_help_start(struct pami_context *ctx, uint32_t index,
                                  bool put, void *local, size_t bytes,
                                  uint64_t raddr, const pami_rma_msg_t *part,
                                  pami_event_fn local_fn,
                                  pami_event_fn remote_fn, void *cookie,
                                  int32_t region)
{
    pami_client_impl_t *c    = ctx->client;
    uint32_t            task = index / (uint32_t)c->num_contexts;
    /* The caller checked PAMI_CMA_SPLIT. Only once CMA went through (an
     * EPERM is found by a plain call), and never to this task itself,
     * whose progress is this call. */
    if (bytes < 2 * 4096 || task == c->task || !c->cma_worked)
        return PAMI_EAGAIN;
    int s = slot_get(ctx);
    if (s < 0) {
        ctx->help_no_slot++;
        return PAMI_EAGAIN;
    }
    __typeof__(ctx->help[0]) *h = &ctx->help[s];
    size_t   first = (bytes / 2) & ~(size_t)4095;
    uint64_t token = TOKEN_BIT | (++ctx->help_seq & TOKEN_SEQ);
    if (!give(h->fd, token))
        return PAMI_EAGAIN;

    pami_rma_msg_t m = *part;
    m.type    = PAMI_RMA_MSG_HELP;
    m.op      = put ? 0 : 1;
    m.result  = h->fd;
    m.offset += first;
    m.bytes   = bytes - first;
    m.operand = (uint64_t)(uintptr_t)local + first;
    m.compare = token;
    pami_request_t *req;
    pami_result_t   rc = pami_rma_owner_begin(ctx, index, &m, NULL, NULL, 0,
                                              local_fn, remote_fn, cookie,
                                              region, &req);
    if (rc != PAMI_SUCCESS) {
        (void)take(h->fd);
        return PAMI_EAGAIN;
    }
    h->token  = token;
    h->cookie = pami_request_cookie(req);
    h->put    = put;
    h->local  = (char *)local + first;
    h->raddr  = raddr + first;
    h->bytes  = bytes - first;
    h->task   = task;
    ctx->help_posted++;
    ctx->help_offered++;

    pid_t pid = c->tasks[task].pid;
    int   err = put ? pami_cma_write(pid, raddr, local, first)
                    : pami_cma_read(pid, local, raddr, first, false);
    if (err != 0 && req->remote_pending) {
        /* The request reports the first error; the owner's part, if it
         * took it, still ends with its answer. */
        pami_result_t erc = pami_cma_failed(ctx, task, put, first, raddr, err);
        if (req->result == PAMI_SUCCESS)
            req->result = erc;
    }
    /* The owner, polling, took the token long ago; otherwise the part is
     * ours again. */
    if (take(h->fd) != 0)
        part_taken_back(ctx, (uint32_t)s);
    return PAMI_SUCCESS;
}

void pami_rma_help_poll(struct pami_context *ctx)
{
    for (uint32_t s = 0; s < PAMI_RMA_HELP_SLOTS; s++) {
        __typeof__(ctx->help[0]) *h = &ctx->help[s];
        if (h->token == 0)
            continue;
        pami_request_t *req = pami_request_by_cookie(ctx, h->cookie);
        if (req == NULL || !req->rma_owner || !req->remote_pending)
            slot_free(ctx, s); /* answered or failed */
        else if (take(h->fd) != 0)
            /* An owner that read it while serving an earlier HELP of the
             * slot gave it back: nobody copies the part yet. */
            part_taken_back(ctx, s);
    }
}

void pami_rma_help_fini(struct pami_context *ctx)
{
    /* How the parts went, for reading a put_bw or get_bw line. */
    if (ctx->help_offered + ctx->help_no_slot + ctx->help_served != 0)
        pami_log(PAMI_LOG_DEBUG, "rma", "large CMA operations: %llu parts "
                 "offered (%llu taken back), %llu moved alone for want of "
                 "a slot; %llu parts copied for origins",
                 (unsigned long long)ctx->help_offered,
                 (unsigned long long)ctx->help_taken_back,
                 (unsigned long long)ctx->help_no_slot,
                 (unsigned long long)ctx->help_served);
    for (uint32_t s = 0; s < PAMI_RMA_HELP_SLOTS; s++) {
        if (ctx->help[s].fd >= 0)
            close(ctx->help[s].fd);
        ctx->help[s].fd    = -1;
        ctx->help[s].token = 0;
    }
    ctx->help_posted = 0;
}

void pami_rma_help_serve(struct pami_context *ctx, uint32_t peer,
                         uint32_t task, const pami_rma_msg_t *m,
                         uint8_t *addr)
{
    pami_client_impl_t *c = ctx->client;
    if (task >= c->size || !c->tasks[task].local || task == c->task) {
        pami_drop_malformed(ctx, "rma",
                            "dropped a HELP from task %u, not another task "
                            "of this node", task);
        return;
    }
    pid_t pid = c->tasks[task].pid;
    int   fd  = pami_peer_eventfd(pid, m->result);
    if (fd < 0) {
        pami_debug("rma", "no token of task %u to claim (%s); it copies its "
                          "part itself", task, strerror(errno));
        return;
    }
    uint64_t v = take(fd);
    if (v != m->compare) {
        /* Taken back by the origin (0), or another HELP's token: it goes
         * back at once, so the origin can take it. */
        if (v != 0 && !give(fd, v))
            pami_warn("rma", "could not give a token back to task %u",
                      task);
        close(fd);
        return;
    }
    close(fd);
    /* Ours: copy and answer; a refused region is answered PAMI_INVAL. */
    pami_result_t rc = PAMI_INVAL;
    if (addr != NULL) {
        int err = m->op == 0
                      ? pami_cma_read(pid, addr, m->operand, m->bytes, false)
                      : pami_cma_write(pid, m->operand, addr, m->bytes);
        if (err == ESRCH) {
            pami_task_failed(ctx, task, -ESRCH);
            return;
        }
        ctx->help_served++;
        rc = err == 0        ? PAMI_SUCCESS
             : err == EFAULT ? PAMI_INVAL
                             : PAMI_TRANSPORT;
        if (err != 0)
            pami_warn("rma", "helping task %u with %llu bytes failed: %s",
                      task, (unsigned long long)m->bytes, strerror(err));
    }
    pami_rma_owner_reply(ctx, peer, m->cookie, rc);
}

/*
 * Small puts and gets to a task of this node on a region over its own
 * (private) memory, as messages its owner applies in its progress, each
 * with a claim word that says who copies it (docs/protocols/rma.md,
 * "Small puts by message", "Small gets by message"). One
 * process_vm_writev of 8 bytes costs 1.6-2.7 us on an AMD EPYC VM, where
 * a message round trip through the shared-memory queues costs a few
 * tenths; UCP does the same (software emulation over its shared-memory
 * AM), but waits for an owner that never progresses.
 *
 * The origin keeps a page of claim words in shared memory, one per owner
 * endpoint, and sends its handle once to each owner. A claimed PUT
 * carries its number s (1, 2, ... per origin and owner endpoint). The
 * owner applies it only if it moves the word from below s to s|BUSY
 * (compare-and-swap), then stores s. The origin takes back an operation
 * that waited CLAIM_WAIT_NS the same way (s|BUSY, a CMA copy, s); an
 * owner that finds the word at s or above skips the message. Whoever
 * finds the other's BUSY waits until it clears, so copies of one pair
 * never overlap and land in the order of the operations.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CLAIM_RING    256             /* claimed puts waiting, per context */
/* Unanswered this long: taken back. An owner asleep in
 * pami_context_wait is woken by the message; on a loaded VM that took
 * more than 50 us now and then, and each take-back then sent the puts
 * of the cool-down by CMA, during which the owner fell asleep again. */
#define CLAIM_WAIT_NS 200000ull
/* After a take-back, puts to that peer go by CMA for a span that starts
 * at 1 ms and doubles with each take-back in a row, up to 128 ms; an
 * answer from the owner ends the row. */
#define CLAIM_COOL_NS 1000000ull
#define CLAIM_COOL_MAX_NS 128000000ull
#define CLAIM_SPIN_NS 1000000000ull   /* the other side's copy, at most */
#define CLAIM_BUSY    PAMI_RMA_CLAIM_BUSY

typedef struct {
    uint64_t    cookie; /* the waiting request; 0: a quiet put (none) */
    uint64_t    seq;    /* 0: done */
    uint64_t    raddr;
    uint64_t    t0;     /* the first poll that found it; 0: none yet */
    void       *local;  /* a put's source, a get's destination */
    bool        stuck;  /* the word stayed busy: left to the owner */
    bool        get;
    size_t      bytes;
    uint32_t    peer;
} claim_op_t;

struct pami_rma_claims {
    uint64_t        *page;  /* shared: word i for owner endpoint i */
    pami_memregion_t mr;
    bool             failed; /* no page could be made: never again */
    claim_op_t       ring[CLAIM_RING];
    uint32_t         head, tail;
    uint64_t        *seq;      /* per peer index: last number given */
    uint64_t        *cool;     /* per peer index: CMA until then (ns) */
    uint64_t        *span;     /* per peer index: the last cool-down */
    uint8_t         *sent;     /* per peer index: the handle went out */
    uint64_t       **in;       /* owner: the word in that origin's page */
    uint8_t         *in_state; /* owner: 0 not heard, 1 mapped, 2 refused */
};

static struct pami_rma_claims *claims_get(struct pami_context *ctx)
{
    if (ctx->claims != NULL)
        return ctx->claims;
    size_t n = ctx->client->size * (size_t)ctx->client->num_contexts;
    struct pami_rma_claims *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return NULL;
    k->seq      = calloc(n, sizeof(*k->seq));
    k->cool     = calloc(n, sizeof(*k->cool));
    k->span     = calloc(n, sizeof(*k->span));
    k->sent     = calloc(n, 1);
    k->in       = calloc(n, sizeof(*k->in));
    k->in_state = calloc(n, 1);
    if (k->seq == NULL || k->cool == NULL || k->span == NULL ||
        k->sent == NULL ||
        k->in == NULL || k->in_state == NULL) {
        ctx->claims = k;
        pami_rma_claims_free(ctx);
        return NULL;
    }
    ctx->claims = k;
    return k;
}

void pami_rma_claims_free(struct pami_context *ctx)
{
    struct pami_rma_claims *k = ctx->claims;
    if (k == NULL)
        return;
    if (ctx->stats.claim_puts != 0 || ctx->claim_gets != 0)
        pami_log(PAMI_LOG_DEBUG, "rma", "%llu small puts and %llu small "
                 "gets by message, %llu of them taken back",
                 (unsigned long long)ctx->stats.claim_puts,
                 (unsigned long long)ctx->claim_gets,
                 (unsigned long long)ctx->stats.claim_taken_back);
    /* The page is a region of the context: its table frees it. */
    free(k->seq);
    free(k->cool);
    free(k->span);
    free(k->sent);
    free(k->in);
    free(k->in_state);
    free(k);
    ctx->claims     = NULL;
    ctx->claims_out = 0;
}

/* This endpoint's word in a page: its index as its peers number it. */
static uint32_t my_index(const struct pami_context *ctx)
{
    return (uint32_t)(ctx->client->task * ctx->client->num_contexts +
                      (size_t)ctx->offset);
}

/* The page's handle to owner index, once, before its first claimed put
 * (messages of one endpoint arrive in order). */
static bool page_sent(struct pami_context *ctx, struct pami_rma_claims *k,
                      uint32_t index)
{
    if (k->sent[index])
        return true;
    if (k->page == NULL) {
        if (k->failed)
            return false;
        size_t n = ctx->client->size * (size_t)ctx->client->num_contexts;
        void  *addr;
        k->failed = true;
        if (pami_memregion_alloc(ctx, n * sizeof(uint64_t), &addr, &k->mr) !=
            PAMI_SUCCESS) {
            pami_warn("rma", "no page of claim words; small puts to this "
                             "node's tasks go by CMA");
            return false;
        }
        k->failed = false;
        k->page   = addr;
    }
    pami_rma_msg_t m = {.version = PAMI_RMA_MSG_VERSION,
                        .type    = PAMI_RMA_MSG_CLAIMS,
                        .bytes   = sizeof(k->mr)};
    if (pami_send_core_now(ctx, index, PAMI_DISPATCH_RMA, &m, sizeof(m),
                           &k->mr, sizeof(k->mr)) != PAMI_SUCCESS)
        return false; /* the transport is busy: by CMA, this time */
    k->sent[index] = 1;
    return true;
}

/* A quiet put (no request) is applied once the owner stored its number
 * or a later one in the word; BUSY with its own number: being copied. */
static bool word_passed(const struct pami_rma_claims *k, const claim_op_t *o)
{
    uint64_t w = __atomic_load_n(&k->page[o->peer], __ATOMIC_ACQUIRE);
    return (w & CLAIM_BUSY) ? (w & ~CLAIM_BUSY) > o->seq : w >= o->seq;
}

/* Whether o still waits: for its owner's answer, or (quiet) for its
 * word, which is read only when look says so; a quiet one whose word
 * stayed busy waits until its owner is found dead (nobody else is told
 * of it). */
static bool waiting(struct pami_context *ctx, const struct pami_rma_claims *k,
                    const claim_op_t *o, bool look)
{
    if (o->seq == 0)
        return false;
    if (o->cookie == 0)
        return !look || (!word_passed(k, o) &&
                         !(o->stuck && ctx->peers[o->peer].failed));
    pami_request_t *req = pami_request_by_cookie(ctx, o->cookie);
    return req != NULL && req->rma_owner && req->remote_pending;
}

/* Drops finished operations from the front of the ring; look: read the
 * words of quiet puts. Nobody waits for a quiet put, so a poll reads
 * them only when the ring is half full (or its oldest entry is old, in
 * settle): the owner's stores to the word then do not meet a copy of
 * its line in this core's cache after each poll. */
static void reap(struct pami_context *ctx, struct pami_rma_claims *k,
                 bool look)
{
    while (k->head != k->tail) {
        claim_op_t *o = &k->ring[k->head % CLAIM_RING];
        if (waiting(ctx, k, o, look))
            break;
        if (o->seq != 0)
            k->span[o->peer] = 0; /* the owner answered it */
        k->head++;
        ctx->claims_out--;
    }
}

/* The request just begun with number k->seq[index] + 1 waits in the
 * ring (bytes 0: a FENCE). */
static void record(struct pami_context *ctx, struct pami_rma_claims *k,
                   uint64_t cookie, uint32_t index, uint64_t raddr,
                   void *local, size_t bytes, bool get)
{
    claim_op_t *o = &k->ring[k->tail % CLAIM_RING];
    *o = (claim_op_t){.cookie = cookie,
                      .seq    = ++k->seq[index],
                      .raddr  = raddr,
                      .local  = local,
                      .bytes  = bytes,
                      .peer   = index,
                      .get    = get};
    k->tail++;
    ctx->claims_out++;
}

pami_result_t pami_rma_claim_start(struct pami_context *ctx, bool get,
                                   uint32_t index, const pami_mr_view_t *vp,
                                   size_t roff, void *local, size_t bytes,
                                   pami_event_fn local_fn,
                                   pami_event_fn remote_fn, void *cookie,
                                   int32_t region)
{
    pami_client_impl_t *c    = ctx->client;
    uint32_t            task = index / (uint32_t)c->num_contexts;
    size_t              max  = get ? c->config.rma_get_msg
                                   : c->config.rma_put_msg;
    /* CMA proven first: a taken-back operation must be able to move. */
    if (bytes == 0 || bytes > max || task == c->task || !c->cma_worked ||
        c->cma_denied)
        return PAMI_EAGAIN;
    struct pami_rma_claims *k = claims_get(ctx);
    if (k == NULL)
        return PAMI_EAGAIN;
    if (k->cool[index] != 0) {
        if (k->cool[index] == UINT64_MAX || pami_time_ns() < k->cool[index])
            return PAMI_EAGAIN; /* UINT64_MAX: its word stayed busy */
        k->cool[index] = 0;
    }
    if (k->tail - k->head == CLAIM_RING) {
        reap(ctx, k, true);
        if (k->tail - k->head == CLAIM_RING)
            return PAMI_EAGAIN;
    }
    if (!page_sent(ctx, k, index))
        return PAMI_EAGAIN;
    /* Small CMA operations issued before move before it can land. */
    pami_cma_batch_end(ctx);
    pami_rma_msg_t m = {.type       = get ? PAMI_RMA_MSG_GET
                                          : PAMI_RMA_MSG_PUT,
                        .owner_ctx  = vp->owner_ctx,
                        .id         = vp->id,
                        .generation = vp->generation,
                        .offset     = roff,
                        .bytes      = bytes,
                        .compare    = k->seq[index] + 1};
    /* A put without callbacks streams: no request, no answer; the owner's
     * store of its number in the word says it was applied, and a fence
     * after it is answered after it. A get always waits for its data. */
    if (!get && local_fn == NULL && remote_fn == NULL && region < 0) {
        m.op = PAMI_RMA_PUT_QUIET;
        if (!pami_rma_owner_quiet(ctx, index, &m, local))
            return PAMI_EAGAIN; /* the queue is full: by CMA */
        record(ctx, k, 0, index, vp->base + roff, local, bytes, false);
        ctx->stats.claim_puts++;
        return PAMI_SUCCESS;
    }
    /* Fences settle these themselves (pami_rma_claims_settle): a FENCE
     * message would wait for an owner that may never progress. */
    bool            used = ctx->peers[index].owner_used;
    pami_request_t *req;
    pami_result_t   rc = pami_rma_owner_begin(
        ctx, index, &m, get ? NULL : local, get ? local : NULL,
        get ? bytes : 0, local_fn, remote_fn, cookie, region, &req);
    ctx->peers[index].owner_used = used;
    if (rc != PAMI_SUCCESS)
        return rc;
    record(ctx, k, pami_request_cookie(req), index, vp->base + roff, local,
           bytes, get);
    if (get)
        ctx->claim_gets++;
    else
        ctx->stats.claim_puts++;
    return PAMI_SUCCESS;
}

bool pami_rma_claims_to(struct pami_context *ctx, uint32_t index)
{
    struct pami_rma_claims *k = ctx->claims;
    if (ctx->claims_out == 0)
        return false;
    for (uint32_t i = k->head; i != k->tail; i++) {
        const claim_op_t *o = &k->ring[i % CLAIM_RING];
        if (o->seq != 0 && o->peer == index)
            return true;
    }
    return false;
}

static void settle(struct pami_context *ctx, struct pami_rma_claims *k,
                   uint32_t index);

pami_result_t pami_rma_claim_fence(struct pami_context *ctx, uint32_t index,
                                   pami_event_fn fn, void *cookie)
{
    struct pami_rma_claims *k = ctx->claims;
    reap(ctx, k, true);
    pami_request_t *req = NULL;
    pami_rma_msg_t  m   = {.type    = PAMI_RMA_MSG_FENCE,
                           .compare = k->seq[index] + 1};
    bool            used = ctx->peers[index].owner_used;
    pami_result_t   rc   = PAMI_EAGAIN;
    if (k->tail - k->head < CLAIM_RING)
        rc = pami_rma_owner_begin(ctx, index, &m, NULL, NULL, 0, fn, NULL,
                                  cookie, -1, &req);
    ctx->peers[index].owner_used = used;
    if (rc != PAMI_SUCCESS) {
        settle(ctx, k, index);
        return PAMI_EAGAIN;
    }
    record(ctx, k, pami_request_cookie(req), index, 0, NULL, 0, false);
    return PAMI_SUCCESS;
}

/* Waits (yielding) while the word shows the other side's copy; false
 * when that copy has lasted a second (a stopped or dead task: the caller
 * leaves this operation alone). */
static bool not_busy(uint64_t *w, uint32_t task, uint64_t *cur)
{
    *cur = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    if (!(*cur & CLAIM_BUSY))
        return true;
    uint64_t start = pami_time_ns();
    while ((*cur = __atomic_load_n(w, __ATOMIC_ACQUIRE)) & CLAIM_BUSY) {
        if (pami_time_ns() - start > CLAIM_SPIN_NS) {
            pami_warn("rma", "task %u has been copying a put or get for "
                             "more than a second; leaving it", task);
            return false;
        }
        sched_yield();
    }
    return true;
}

/* Takes o back unless the owner has it (a quiet one is then done); true
 * when it was taken back. req: o's request, NULL for a quiet put. */
static bool take_back(struct pami_context *ctx, struct pami_rma_claims *k,
                      claim_op_t *o, pami_request_t *req)
{
    pami_client_impl_t *c    = ctx->client;
    uint32_t            task = o->peer / (uint32_t)c->num_contexts;
    uint64_t           *w    = &k->page[o->peer];
    for (;;) {
        uint64_t cur;
        if (!not_busy(w, task, &cur)) {
            /* A dead owner (its death ends the request) or one that
             * scribbles on the word: never spin on that word again, for
             * this operation or any other toward it (else every queued
             * put would wait its own second), and claim no more puts
             * through it: they go by CMA. */
            for (uint32_t i = k->head; i != k->tail; i++) {
                claim_op_t *p = &k->ring[i % CLAIM_RING];
                if (p->seq != 0 && p->peer == o->peer)
                    p->stuck = true;
            }
            k->cool[o->peer] = UINT64_MAX;
            return false;
        }
        if (cur >= o->seq) {
            /* The owner has it: its answer ends it; a quiet one is
             * applied (not busy any more). */
            if (req == NULL)
                o->seq = 0;
            return false;
        }
        if (!__atomic_compare_exchange_n(w, &cur, o->seq | CLAIM_BUSY, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue;
        pid_t pid = c->tasks[task].pid;
        int   err = o->bytes == 0 ? 0
                    : o->get ? pami_cma_read(pid, o->local, o->raddr,
                                             o->bytes, false)
                             : pami_cma_write(pid, o->raddr, o->local,
                                              o->bytes);
        __atomic_store_n(w, o->seq, __ATOMIC_RELEASE);
        pami_result_t rc = PAMI_SUCCESS;
        if (err != 0)
            rc = pami_cma_failed(ctx, task, !o->get, o->bytes, o->raddr,
                                 err);
        o->seq = 0;
        if (o->bytes != 0)
            ctx->stats.claim_taken_back++;
        /* A dead owner may have ended it meanwhile (pami_task_failed).
         * Both callbacks get the outcome, as from an owner's answer. */
        if (req != NULL && req->remote_pending) {
            if (rc != PAMI_SUCCESS && req->result == PAMI_SUCCESS)
                req->result = rc;
            pami_request_acked(req, rc);
        }
        return true;
    }
}

/* Settles the operations to index (UINT32_MAX: all), oldest first. */
static void settle(struct pami_context *ctx, struct pami_rma_claims *k,
                   uint32_t index)
{
    bool took = false;
    for (uint32_t i = k->head; i != k->tail; i++) {
        claim_op_t *o = &k->ring[i % CLAIM_RING];
        if (o->seq == 0 || o->stuck ||
            (index != UINT32_MAX && o->peer != index))
            continue;
        pami_request_t *req = NULL;
        if (o->cookie != 0) {
            req = pami_request_by_cookie(ctx, o->cookie);
            if (req == NULL || !req->rma_owner || !req->remote_pending) {
                o->seq = 0;
                continue;
            }
        } else if (word_passed(k, o)) {
            o->seq = 0; /* a quiet put the owner applied */
            continue;
        }
        if (take_back(ctx, k, o, req)) {
            took = true;
            uint64_t *span = &k->span[o->peer];
            *span = *span == 0 ? CLAIM_COOL_NS
                               : *span * 2 > CLAIM_COOL_MAX_NS
                                     ? CLAIM_COOL_MAX_NS
                                     : *span * 2;
            k->cool[o->peer] = pami_time_ns() + *span;
            ctx->stats.claim_cooldowns++;
        }
    }
    if (took)
        reap(ctx, k, false);
}

void pami_rma_claims_settle(struct pami_context *ctx, uint32_t index)
{
    if (ctx->claims_out != 0)
        settle(ctx, ctx->claims, index);
}

void pami_rma_claims_poll(struct pami_context *ctx)
{
    struct pami_rma_claims *k = ctx->claims;
    reap(ctx, k, k->tail - k->head >= CLAIM_RING / 2);
    if (k->head == k->tail)
        return;
    /* One clock per poll, not per put (clock_gettime: 56 ns on the EPYC
     * VM, a third of UCP's whole 1 KiB put): what came since the last
     * poll takes this poll's time. */
    uint64_t now = pami_time_ns();
    for (uint32_t i = k->tail;
         i != k->head && k->ring[(i - 1) % CLAIM_RING].t0 == 0; i--)
        k->ring[(i - 1) % CLAIM_RING].t0 = now;
    /* An owner in its progress answers within microseconds. */
    const claim_op_t *o = &k->ring[k->head % CLAIM_RING];
    if (!o->stuck && now - o->t0 >= CLAIM_WAIT_NS) {
        settle(ctx, k, o->peer);
        reap(ctx, k, false); /* what settle found applied */
    }
}

void pami_rma_claims_recv(struct pami_context *ctx, uint32_t peer,
                          uint32_t task, const void *data, size_t len)
{
    pami_client_impl_t     *c = ctx->client;
    struct pami_rma_claims *k = claims_get(ctx);
    if (k == NULL || k->in_state[peer] == 1 || len != sizeof(pami_memregion_t))
        return;
    pami_memregion_t mr;
    pami_mr_view_t   v;
    void            *base = NULL;
    memcpy(&mr, data, sizeof(mr));
    uint32_t me = my_index(ctx);
    if (task == c->task || !c->tasks[task].local ||
        pami_mr_decode(ctx, &mr, &v) != PAMI_SUCCESS ||
        v.owner_task != task || !(v.flags & PAMI_MR_FLAG_SHM) ||
        v.bytes < ((uint64_t)me + 1) * sizeof(uint64_t) ||
        pami_shm_map_view(ctx, &v, &base) != PAMI_SUCCESS ||
        (uintptr_t)base % sizeof(uint64_t) != 0) {
        k->in_state[peer] = 2;
        ctx->stats.dropped_malformed++;
        pami_warn("rma", "refused the claim words of task %u; its small "
                         "puts here wait until it takes them back", task);
        return;
    }
    k->in[peer]       = (uint64_t *)base + me;
    k->in_state[peer] = 1;
}

bool pami_rma_claim_take(struct pami_context *ctx, uint32_t peer,
                         uint64_t seq)
{
    struct pami_rma_claims *k = ctx->claims;
    if (k == NULL || k->in_state[peer] != 1 || seq >= CLAIM_BUSY) {
        pami_drop_malformed(ctx, "rma",
                            "dropped a claimed operation from task %u "
                            "without its claim words", peer /
                            (uint32_t)ctx->client->num_contexts);
        return false;
    }
    uint64_t *w    = k->in[peer];
    uint32_t  task = peer / (uint32_t)ctx->client->num_contexts;
    for (;;) {
        uint64_t cur;
        if (!not_busy(w, task, &cur)) {
            /* Its origin died in a take-back, or writes the word at
             * will: refused from now on, so that each of its queued
             * puts does not cost this task another second. */
            k->in_state[peer] = 2;
            pami_drop_malformed(ctx, "rma",
                                "dropped a claimed operation from task %u "
                                "and refuse its claim words: the word "
                                "stayed busy", task);
            return false;
        }
        if (cur >= seq)
            return false; /* taken back (and copied): skip it */
        if (__atomic_compare_exchange_n(w, &cur, seq | CLAIM_BUSY, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            ctx->stats.claim_applied++;
            return true;
        }
    }
}

void pami_rma_claim_applied(struct pami_context *ctx, uint32_t peer,
                            uint64_t seq)
{
    __atomic_store_n(ctx->claims->in[peer], seq, __ATOMIC_RELEASE);
}

uint64_t *pami_rma_claim_word(struct pami_context *ctx, uint32_t index,
                              bool mine)
{
    struct pami_rma_claims *k = ctx->claims;
    if (k == NULL)
        return NULL;
    if (mine)
        return k->page != NULL ? &k->page[index] : NULL;
    return k->in_state[index] == 1 ? k->in[index] : NULL;
}

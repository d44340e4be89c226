/*
 * The executor: a collective is a list of steps, each a few local copies
 * and reductions, sends and receives. A step is entered (locals run,
 * sends issued, messages kept for it applied) and left once its receives
 * are in place and its sends are complete locally; then its reductions of
 * received data run, in schedule order. Everything is driven from
 * progress: handlers, send completions and posted work.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "pami_barrier.h"

/* ---- building ---- */

void sb_step(coll_req_t *req)
{
    if (!coll_grow(req->cc, (void **)&req->steps, &req->stepcap,
                   req->nsteps + 2, sizeof(*req->steps))) {
        req->build_failed = true;
        return;
    }
    req->steps[req->nsteps++] = (uint32_t)req->nops;
}

static void add(coll_req_t *req, uint8_t kind, size_t peer, void *dst,
                const void *src, size_t bytes, bool lower)
{
    if (req->nsteps == 0)
        sb_step(req);
    if (req->build_failed ||
        !coll_grow(req->cc, (void **)&req->ops, &req->opcap, req->nops + 1,
                   sizeof(*req->ops))) {
        req->build_failed = true;
        return;
    }
    req->ops[req->nops++] = (coll_sop_t){
        .kind = kind, .lower = lower, .peer = (uint32_t)peer,
        .dst = dst, .src = src, .bytes = bytes, .req = req};
}

void sb_send(coll_req_t *req, size_t peer, const void *src, size_t bytes)
{
    add(req, SOP_SEND, peer, NULL, src, bytes, false);
}

void sb_recv(coll_req_t *req, size_t peer, void *dst, size_t bytes)
{
    add(req, SOP_RECV, peer, dst, NULL, bytes, false);
}

void sb_recv_reduce(coll_req_t *req, size_t peer, void *dst, size_t bytes,
                    bool lower)
{
    add(req, SOP_RECV_REDUCE, peer, dst, sb_tmp(req, bytes), bytes, lower);
}

void sb_copy(coll_req_t *req, void *dst, const void *src, size_t bytes)
{
    if (bytes > 0 && dst != src)
        add(req, SOP_COPY, 0, dst, src, bytes, false);
}

void sb_barrier(coll_req_t *req, int which)
{
    add(req, SOP_BARRIER, (size_t)which, NULL, NULL, 0, false);
}

void sb_reduce(coll_req_t *req, void *dst, const void *src, size_t bytes,
               bool lower)
{
    if (bytes > 0)
        add(req, SOP_REDUCE, 0, dst, src, bytes, lower);
}

/* ---- running ---- */

/* acc <- in op acc when in comes from lower ranks, acc <- acc op in when
 * from higher ones (only a non-commutative user op tells them apart). */
static void reduce(coll_req_t *req, void *acc, void *in, bool in_writable,
                   size_t bytes, bool lower)
{
    const pami_xfer_t *x = &req->x;
    size_t count = req->dtsize ? bytes / req->dtsize : 0;
    if (count == 0)
        return;
    if (x->op != PAMI_OP_USER) {
        coll_reduce_builtin(x->dtype, x->op, acc, in, count);
        return;
    }
    if (lower || x->user_commutative) {
        x->user_fn(acc, in, count, x->user_cookie);
        return;
    }
    void *t = in;
    if (!in_writable) {
        t = malloc(bytes);
        if (t == NULL) {
            coll_fail(req, PAMI_ENOMEM, true);
            return;
        }
        memcpy(t, in, bytes);
    }
    x->user_fn(t, acc, count, x->user_cookie);
    memcpy(acc, t, bytes);
    if (t != in)
        free(t);
}

static void on_send_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    coll_req_t *req = cookie;
    req->sends_left--;
    if (rc != PAMI_SUCCESS)
        coll_fail(req, rc, false);
    coll_advance(req);
}

/* Frees a request that ended while something still pointed at it, once
 * nothing does. */
static bool zombie_release(coll_req_t *req)
{
    if (!req->zombie)
        return false;
    if (req->rdv_pending == 0 && req->ext_pending == 0)
        coll_req_free(req);
    return true;
}

static void on_barrier_done(pami_context_t ctx, void *cookie,
                            pami_result_t rc)
{
    (void)ctx;
    coll_req_t *req = cookie;
    req->ext_pending--;
    if (zombie_release(req))
        return;
    if (rc != PAMI_SUCCESS)
        coll_fail(req, rc, false);
    else if (req->peer_died && req->ext_pending == 0 &&
             req->cur + 1 < req->nsteps)
        coll_fail(req, PAMI_PEER_FAILED, false); /* coll_peer_failed */
    coll_advance(req);
}

/* A barrier protocol over the geometry's tasks. */
static pami_result_t start_barrier(coll_req_t *req, const coll_sop_t *op)
{
    struct pami_geometry *g = req->g;
    pami_context_t ctx = req->cc->ctx;
    pami_result_t rc;
    if (op->peer != COLL_BARRIER_PACKETS) /* the register, in call order */
        rc = coll_shm_start(req, (int)op->peer, on_barrier_done);
    else
        rc = pami_barrier_packets(ctx, g->tasks, g->size, on_barrier_done,
                                  req);
    if (rc == PAMI_SUCCESS)
        req->ext_pending++;
    return rc;
}

/* One message of the schedule. Below the rendezvous threshold it is one
 * message with its payload; from the threshold on it goes in pieces of
 * cc->piece bytes, and for each the core sends only a request: the
 * receiver fetches the pieces straight into their place (active GET),
 * several at once, and a piece completes here once the receiver
 * answered. A peer on this node reads each piece with one
 * process_vm_readv, one after the other: there pieces are larger
 * (piece_local), as they only cost messages. */
static pami_result_t issue_send(coll_req_t *req, const coll_sop_t *op)
{
    struct pami_geometry *g = req->g;
    coll_ctx_t *cc = req->cc;
    size_t off = 0, piece = op->bytes < cc->rndv_threshold ? op->bytes
                                                           : cc->piece;
    if (piece < op->bytes &&
        (g->on_node || coll_task_in(cc->local_tasks, cc->num_local,
                                    g->tasks[op->peer])))
        piece = cc->piece_local;
    do {
        size_t len = op->bytes - off < piece ? op->bytes - off : piece;
        coll_hdr_t h = {
            .version = COLL_WIRE_VERSION, .type = COLL_MSG_DATA,
            .flags = req->kind == COLL_KIND_CREATE ? COLL_FLAG_CREATE : 0,
            .algo = req->algo_id, .connid = req->connid, .kind = req->kind,
            .geom_id = g->id, .seq = req->seq, .tag = op->tag,
            .src_rank = (uint32_t)g->rank, .sig = req->sig,
            .total = op->bytes, .offset = off};
        pami_send_immediate_t im = {
            .dest = g->eps[op->peer], .dispatch = 0,
            .header = &h, .header_len = sizeof(h),
            .data = (const char *)op->src + off, .data_len = len};
        pami_result_t rc = PAMI_EAGAIN;
        if (sizeof(h) + len <= cc->immediate_max)
            rc = pami_protocol_send_immediate(&cc->env, &im);
        if (rc == PAMI_EAGAIN) {
            pami_send_t s = {.send = im, .local_fn = on_send_done,
                             .cookie = req};
            rc = pami_protocol_send(&cc->env, &s);
            if (rc == PAMI_SUCCESS)
                req->sends_left++;
        }
        if (rc != PAMI_SUCCESS)
            return rc;
        off += len;
    } while (off < op->bytes);
    return PAMI_SUCCESS;
}

/* The receive a message (peer, tag) is for, in the current step or a
 * later one; NULL when the schedule has none. */
static coll_sop_t *find_recv(coll_req_t *req, uint32_t peer, uint32_t tag)
{
    size_t from = req->cur < req->nsteps ? req->steps[req->cur] : req->nops;
    for (size_t i = from; i < req->nops; i++) {
        coll_sop_t *op = &req->ops[i];
        if ((op->kind == SOP_RECV || op->kind == SOP_RECV_REDUCE) &&
            op->peer == peer && op->tag == tag)
            return op;
    }
    return NULL;
}

/* The receive of message h, or NULL (then req is failed or the message
 * is to be dropped). */
static coll_sop_t *check(coll_req_t *req, const coll_hdr_t *h, size_t len)
{
    if (h->kind != req->kind || h->algo != req->algo_id ||
        h->sig != req->sig) {
        coll_warn("geometry %u seq %u: a member runs another call (kind %u "
                  "algorithm %u sig %08x, here %u %u %08x)", h->geom_id,
                  h->seq, h->kind, h->algo, h->sig, req->kind, req->algo_id,
                  req->sig);
        coll_fail(req, PAMI_INVAL, true);
        return NULL;
    }
    coll_sop_t *op = find_recv(req, h->src_rank, h->tag);
    if (op == NULL || op->bytes != h->total) {
        coll_warn("geometry %u seq %u: message %u from rank %u has %llu "
                  "bytes, expected %s%zu: the members' counts differ",
                  h->geom_id, h->seq, h->tag, h->src_rank,
                  (unsigned long long)h->total,
                  op ? "" : "no message, ", op ? op->bytes : (size_t)0);
        coll_fail(req, PAMI_INVAL, true);
        return NULL;
    }
    if (op->done || len > op->bytes - op->got) {
        req->cc->st.malformed++;
        coll_warn("geometry %u seq %u: message %u from rank %u: more "
                  "bytes than it has; dropped", h->geom_id, h->seq, h->tag,
                  h->src_rank);
        return NULL;
    }
    return op;
}

static void *recv_dest(coll_sop_t *op)
{
    return op->kind == SOP_RECV ? op->dst : (void *)op->src;
}

/* A piece of op's message is in place (or, from land, being fetched
 * there). Receives of later steps are counted when their step is
 * entered (only those not done yet). */
static void got_piece(coll_req_t *req, coll_sop_t *op, size_t len)
{
    op->got += len;
    if (op->got == op->bytes && op->landing == 0 && !op->done) {
        op->done = 1;
        if (op->step == req->cur)
            req->recvs_left--;
    }
}

/* Kept messages for the current step go to their receives. */
static void apply_early(coll_req_t *req)
{
    coll_msg_t **pp = &req->early;
    while (*pp != NULL && req->status == PAMI_SUCCESS) {
        coll_msg_t *m  = *pp;
        coll_sop_t *op = m->complete ? check(req, &m->hdr, m->len) : NULL;
        if (op == NULL || op->step != req->cur) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        if (m->len > 0)
            memcpy((char *)recv_dest(op) + m->hdr.offset, m->data, m->len);
        got_piece(req, op, m->len);
        coll_msg_free(m);
    }
}

static void enter_step(coll_req_t *req)
{
    uint32_t a = req->steps[req->cur], b = req->steps[req->cur + 1];
    req->recvs_left = 0;
    for (uint32_t i = a; i < b; i++) {
        coll_sop_t *op = &req->ops[i];
        if (op->kind == SOP_COPY)
            memmove(op->dst, op->src, op->bytes);
        else if (op->kind == SOP_REDUCE)
            reduce(req, op->dst, (void *)op->src, false, op->bytes,
                   op->lower);
        else if ((op->kind == SOP_RECV || op->kind == SOP_RECV_REDUCE) &&
                 !op->done)
            req->recvs_left++;
    }
    for (uint32_t i = a; i < b && req->status == PAMI_SUCCESS; i++) {
        if (req->ops[i].kind != SOP_SEND && req->ops[i].kind != SOP_BARRIER)
            continue;
        pami_result_t rc = req->ops[i].kind == SOP_SEND
                               ? issue_send(req, &req->ops[i])
                               : start_barrier(req, &req->ops[i]);
        if (rc != PAMI_SUCCESS) {
            coll_warn("geometry %u seq %u: send to rank %u: %s", req->g->id,
                      req->seq, req->ops[i].peer, pami_error_text(rc));
            coll_fail(req, rc, rc != PAMI_PEER_FAILED);
        }
    }
    apply_early(req);
}

static void leave_step(coll_req_t *req)
{
    uint32_t a = req->steps[req->cur], b = req->steps[req->cur + 1];
    for (uint32_t i = a; i < b; i++) {
        coll_sop_t *op = &req->ops[i];
        if (op->kind == SOP_RECV_REDUCE)
            reduce(req, op->dst, (void *)op->src, true, op->bytes,
                   op->lower);
    }
}

static void call_done(coll_req_t *req)
{
    pami_context_t ctx = req->cc->ctx;
    pami_event_fn  fn  = req->done_fn;
    void          *ck  = req->done_cookie;
    pami_result_t  rc  = req->status;
    if (req->rdv_pending > 0 || req->ext_pending > 0) {
        req->zombie = true; /* zombie_release frees it */
        req->cc->st.reqs_live--;
    }
    else
        coll_req_free(req);
    if (fn != NULL)
        fn(ctx, ck, rc);
}

static pami_result_t on_posted(pami_context_t ctx, void *cookie)
{
    (void)ctx;
    coll_req_t *req = cookie;
    req->posted = false;
    if (req->completed)
        call_done(req);
    else
        coll_advance(req);
    return PAMI_SUCCESS;
}

void coll_kick(coll_req_t *req)
{
    if (req->posted)
        return;
    req->posted = true;
    pami_context_post(req->cc->ctx, &req->work, on_posted, req);
}

static void complete(coll_req_t *req)
{
    req->completed = true;
    if (req->kind == COLL_KIND_CREATE)
        coll_geometry_created(req);
    coll_connid_release(req->g, req);
    if (req->status == PAMI_SUCCESS && !req->hidden)
        req->cc->st.completed++;
    if (req->posted)
        return; /* on_posted finishes it */
    if (req->in_call) {
        if (!req->finish_inline)
            coll_kick(req); /* done_fn runs from progress, as promised */
        return;
    }
    call_done(req);
}

void coll_finish_now(coll_req_t *req, pami_result_t rc)
{
    if (req->status == PAMI_SUCCESS)
        req->status = rc;
    req->completed = true;
    if (req->kind == COLL_KIND_CREATE)
        coll_geometry_created(req);
    coll_connid_release(req->g, req);
    call_done(req);
}

void coll_fail(coll_req_t *req, pami_result_t rc, bool tell_peers)
{
    if (req->status != PAMI_SUCCESS)
        return;
    req->status = rc;
    req->cc->st.failed++;
    if (tell_peers)
        coll_send_abort(req->cc, req->g, req->seq, req->kind);
}

/* Runs steps as far as they can go; may complete (and free) req, so the
 * caller must not touch req afterwards. */
void coll_advance(coll_req_t *req)
{
    if (req->in_advance) {
        req->again = true;
        return;
    }
    if (req->completed)
        return;
    req->in_advance = true;
    do {
        req->again = false;
        while (req->status == PAMI_SUCCESS && req->cur < req->nsteps &&
               req->recvs_left == 0 && req->sends_left == 0 &&
               req->ext_pending == 0) {
            leave_step(req);
            if (req->status != PAMI_SUCCESS)
                break;
            if (++req->cur < req->nsteps)
                enter_step(req);
        }
    } while (req->again);
    req->in_advance = false;
    bool done = req->status == PAMI_SUCCESS
                    ? req->cur >= req->nsteps
                    : req->sends_left == 0 && req->rdv_pending == 0;
    if (done)
        complete(req);
}

/* Numbers each send and receive among those with the same peer, so a
 * message names its receive whatever step either side is in. */
static bool number_messages(coll_req_t *req)
{
    size_t    n    = req->g->size;
    uint32_t *sent = coll_scratch(req->cc, 2 * n);
    if (sent == NULL)
        return false;
    uint32_t *got = sent + n;
    for (size_t s = 0; s < req->nsteps; s++)
        for (uint32_t i = req->steps[s]; i < req->steps[s + 1]; i++) {
            coll_sop_t *op = &req->ops[i];
            op->step = (uint32_t)s;
            if (op->kind == SOP_SEND)
                op->tag = sent[op->peer]++;
            else if (op->kind == SOP_RECV || op->kind == SOP_RECV_REDUCE)
                op->tag = got[op->peer]++;
        }
    return true;
}

void coll_start(coll_req_t *req)
{
    if (req->nsteps > 0)
        req->steps[req->nsteps] = (uint32_t)req->nops;
    req->cur = 0;
    if (req->nsteps > 0 && !req->numbered) {
        if (number_messages(req))
            req->numbered = true; /* a cached schedule keeps its numbers */
        else
            coll_fail(req, PAMI_ENOMEM, true);
    }
    if (req->status == PAMI_SUCCESS && req->nsteps > 0) {
        req->in_advance = true;
        enter_step(req);
        req->in_advance = false;
    }
    coll_advance(req);
}

/* Starts req from pami_collective. A collective that completes right
 * there (a root's sends taken at once, messages that came first) ends
 * through posted work, so done_fn runs from progress; with finish_inline
 * (the caller has no done_fn of the program's to run) it ends here. */
void coll_start_call(coll_req_t *req, bool finish_inline)
{
    req->in_call       = true;
    req->finish_inline = finish_inline;
    coll_start(req);
    req->in_call = false;
    if (req->completed && finish_inline && !req->posted)
        call_done(req);
}

/* ---- messages ---- */

static void on_kept_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    coll_msg_t *m = cookie;
    m->complete = true;
    if (m->dead) {
        coll_msg_destroy(m); /* its owner, maybe its context, went away */
        return;
    }
    coll_req_t *req = m->owner;
    if (req == NULL)
        return; /* still waiting for its collective or geometry */
    req->rdv_pending--;
    if (rc != PAMI_SUCCESS)
        coll_fail(req, rc, false);
    else if (req->status == PAMI_SUCCESS && !req->in_advance)
        apply_early(req);
    coll_advance(req);
}

/* Keeps a message (copying its data, or receiving it into a buffer of
 * ours when it is still at the origin). NULL when out of memory. */
coll_msg_t *coll_msg_keep(coll_ctx_t *cc, const coll_hdr_t *h,
                          pami_task_t origin, const void *data, size_t len,
                          pami_recv_t *recv)
{
    coll_msg_t *m = coll_msg_new(cc, len);
    if (m == NULL)
        return NULL;
    m->hdr    = *h;
    m->origin = origin;
    m->len    = len;
    m->complete = true;
    if (len > 0) {
        if (data != NULL) {
            memcpy(m->data, data, len);
        } else {
            cc->st.large_staged++;
            m->complete    = false;
            recv->addr     = m->data;
            recv->local_fn = on_kept_done;
            recv->cookie   = m;
        }
    }
    return m;
}

/* A kept message joins a posted collective: checked now when its data
 * is here, else when it arrives. */
void coll_adopt(coll_req_t *req, coll_msg_t *m)
{
    coll_kept_release(m);
    if (m->hdr.type == COLL_MSG_ABORT) {
        req->cc->st.aborts_received++;
        coll_fail(req, PAMI_INVAL, false);
        coll_msg_free(m);
        return;
    }
    m->owner = req;
    m->next  = NULL;
    if (!m->complete)
        req->rdv_pending++;
    coll_msg_t **pp = &req->early;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = m;
}

static bool overlaps(const void *a, size_t an, const void *b, size_t bn)
{
    const char *x = a, *y = b;
    return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

/* A large payload for a later step may land in place only when nothing
 * of the steps until then (its own included: copies at entry) touches
 * that memory; a receive-reduce's temporary is its own. */
static bool landing_safe(coll_req_t *req, const coll_sop_t *op)
{
    if (op->kind == SOP_RECV_REDUCE)
        return true;
    uint32_t a = req->steps[req->cur], b = req->steps[op->step + 1];
    for (uint32_t i = a; i < b; i++) {
        const coll_sop_t *o = &req->ops[i];
        if (o == op)
            continue;
        if (overlaps(op->dst, op->bytes, o->dst, o->bytes) ||
            overlaps(op->dst, op->bytes, o->src, o->bytes))
            return false;
    }
    return true;
}

static void on_landed(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    coll_sop_t *op  = cookie;
    coll_req_t *req = op->req;
    op->landing--;
    req->rdv_pending--;
    if (zombie_release(req))
        return;
    if (rc != PAMI_SUCCESS)
        coll_fail(req, rc, false);
    else
        got_piece(req, op, 0);
    coll_advance(req);
}

/* A large piece of op goes straight into its place. */
static void land(coll_req_t *req, coll_sop_t *op, const coll_hdr_t *h,
                 size_t len, pami_recv_t *recv)
{
    req->cc->st.large_direct++;
    op->landing++;
    op->got += len;
    req->rdv_pending++;
    recv->addr     = (char *)recv_dest(op) + h->offset;
    recv->local_fn = on_landed;
    recv->cookie   = op;
}

/* A message for req arrived (its handler runs). */
void coll_on_message(coll_req_t *req, const coll_hdr_t *h, const void *data,
                     size_t len, pami_recv_t *recv)
{
    coll_ctx_t *cc = req->cc;
    if (h->type == COLL_MSG_ABORT) {
        cc->st.aborts_received++;
        coll_fail(req, PAMI_INVAL, false);
        coll_advance(req);
        return;
    }
    if (req->status != PAMI_SUCCESS)
        return; /* ending anyway: a large payload is discarded */
    coll_sop_t *op = check(req, h, len);
    if (op == NULL) {
        coll_advance(req);
        return;
    }
    if (len > 0 && data == NULL &&
        (op->step == req->cur || landing_safe(req, op))) {
        land(req, op, h, len, recv);
        return;
    }
    if (op->step != req->cur) {
        cc->st.early++;
        coll_msg_t *m = coll_msg_keep(cc, h, 0, data, len, recv);
        if (m == NULL) {
            coll_fail(req, PAMI_ENOMEM, true);
            coll_advance(req);
            return;
        }
        coll_adopt(req, m);
        return;
    }
    if (len > 0)
        memcpy((char *)recv_dest(op) + h->offset, data, len);
    got_piece(req, op, len);
    coll_advance(req);
}

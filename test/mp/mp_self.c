/*
 * Sends to the task's own endpoint: their handlers run from advance/wait
 * of the context, never inside the send call (pami.h), in the order of
 * the sends on one dispatch id, across the rendezvous threshold, with
 * local_fn and remote_fn as for any other target. A handler that answers
 * its origin (itself at one task) neither re-enters itself nor recurses,
 * and a handler that sends to itself again gets one message per advance.
 * Runs at 1 task (everything to self) and at 2 (to self and to the peer);
 * with the argument "acks", only the answering handlers.
 */
#include "mp_util.h"

#define ID_MSG   1
#define ID_REQ   2
#define ID_ACK   3
#define ID_ACK2  4
#define ID_CHAIN 5

#define CHAIN_N 400

static struct {
    mp_job_t *job;
    int       in_send;   /* set around each send call of the test */
    int       depth;     /* handlers and callbacks running now */
    int       violations, recursions;
    uint32_t  next_seq;  /* ID_MSG: the sequence number expected next */
    int       got, local, remote, rndv_done;
    uint8_t  *big;       /* received rendezvous payload */
    size_t    big_len;
    int       reqs, acks, acks2, ack_remote;
    int       chain;
} g;

static void enter(const char *what)
{
    if (g.in_send) {
        g.violations++;
        fprintf(stderr, "mp_self: task %u: %s ran inside a send call\n",
                g.job->me, what);
    }
    if (g.depth > 0)
        g.recursions++;
    g.depth++;
}

static void leave(void) { g.depth--; }

static uint8_t pattern(size_t i) { return (uint8_t)(i * 131u + 7u); }

static void on_big_done(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k;
    MP_EXPECT(rc == PAMI_SUCCESS, "rendezvous receive: %s",
              pami_error_text(rc));
    for (size_t i = 0; i < g.big_len; i++)
        MP_EXPECT(g.big[i] == pattern(i), "rendezvous byte %zu is %u", i,
                  g.big[i]);
    g.rndv_done++;
}

static void on_msg(pami_context_t c, void *k, const void *h, size_t hs,
                   const void *d, size_t ds, pami_endpoint_t o, pami_recv_t *r)
{
    (void)c; (void)k; (void)o;
    enter("an ID_MSG handler");
    uint32_t seq;
    MP_EXPECT(hs == sizeof(seq), "header of %zu bytes", hs);
    memcpy(&seq, h, sizeof(seq));
    MP_EXPECT(seq == g.next_seq, "self message %u arrived, expected %u", seq,
              g.next_seq);
    g.next_seq++;
    if (r != NULL) {
        MP_EXPECT(d == NULL && ds == g.big_len, "rendezvous of %zu bytes", ds);
        r->addr     = g.big;
        r->local_fn = on_big_done;
    } else {
        for (size_t i = 0; i < ds; i++)
            MP_EXPECT(((const uint8_t *)d)[i] == pattern(i),
                      "message %u: byte %zu differs", seq, i);
    }
    g.got++;
    leave();
}

static void on_local(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k;
    enter("local_fn");
    MP_EXPECT(rc == PAMI_SUCCESS, "local_fn: %s", pami_error_text(rc));
    g.local++;
    leave();
}

static void on_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k;
    enter("remote_fn");
    MP_EXPECT(rc == PAMI_SUCCESS, "remote_fn: %s", pami_error_text(rc));
    g.remote++;
    leave();
}

static void on_ack2_remote(pami_context_t c, void *k, pami_result_t rc)
{
    (void)c; (void)k;
    enter("remote_fn of an ack");
    MP_EXPECT(rc == PAMI_SUCCESS, "remote_fn of an ack: %s",
              pami_error_text(rc));
    g.ack_remote++;
    leave();
}

/* Answers twice from the handler: an immediate ack and one that asks for
 * remote completion itself (both re-entered the send path before). */
static void on_req(pami_context_t c, void *k, const void *h, size_t hs,
                   const void *d, size_t ds, pami_endpoint_t o, pami_recv_t *r)
{
    (void)k; (void)d; (void)ds; (void)r;
    enter("an ID_REQ handler");
    g.reqs++;
    pami_send_immediate_t a = {.dest = o, .dispatch = ID_ACK, .header = h,
                               .header_len = hs};
    mp_send_imm_in_handler(c, &a);
    pami_send_t b = {.send = {.dest = o, .dispatch = ID_ACK2, .header = h,
                              .header_len = hs},
                     .remote_fn = on_ack2_remote};
    MP_CHECK(pami_send(c, &b));
    leave();
}

static void on_ack(pami_context_t c, void *k, const void *h, size_t hs,
                   const void *d, size_t ds, pami_endpoint_t o, pami_recv_t *r)
{
    (void)c; (void)h; (void)hs; (void)d; (void)ds; (void)o; (void)r;
    enter("an ack handler");
    if (k != NULL)
        g.acks2++;
    else
        g.acks++;
    leave();
}

static void on_chain(pami_context_t c, void *k, const void *h, size_t hs,
                     const void *d, size_t ds, pami_endpoint_t o,
                     pami_recv_t *r)
{
    (void)k; (void)d; (void)ds; (void)r;
    enter("a chain handler");
    uint32_t n;
    memcpy(&n, h, sizeof(n));
    MP_EXPECT(n == (uint32_t)g.chain, "chain link %u, expected %d", n,
              g.chain);
    g.chain++;
    if (++n < CHAIN_N) {
        pami_send_immediate_t s = {.dest = o, .dispatch = ID_CHAIN,
                                   .header = &n, .header_len = sizeof(n)};
        mp_send_imm_in_handler(c, &s);
    }
    MP_EXPECT(hs == sizeof(n), "chain header of %zu bytes", hs);
    leave();
}

/* Eager and rendezvous sends and immediate ones, interleaved on ID_MSG. */
static void ordered_self(mp_job_t *job, pami_context_t ctx,
                         pami_endpoint_t me)
{
    size_t small = 200;
    g.big_len = job->attr.rndv_threshold + 4096;
    uint8_t *src = malloc(g.big_len);
    g.big = malloc(g.big_len);
    MP_EXPECT(src != NULL && g.big != NULL, "out of memory");
    for (size_t i = 0; i < g.big_len; i++)
        src[i] = pattern(i);
    memset(g.big, 0, g.big_len);

    enum { IMM, EAGER, RNDV };
    const int kinds[] = {IMM, EAGER, RNDV, IMM, EAGER, RNDV, EAGER, IMM};
    const size_t n = sizeof(kinds) / sizeof(kinds[0]);
    int sends = 0;
    for (uint32_t seq = 0; seq < n; seq++) {
        pami_send_immediate_t s = {.dest = me, .dispatch = ID_MSG,
                                   .header = &seq, .header_len = sizeof(seq),
                                   .data = src, .data_len = small};
        pami_result_t rc;
        g.in_send = 1;
        if (kinds[seq] == IMM) {
            rc = pami_send_immediate(ctx, &s);
        } else {
            if (kinds[seq] == RNDV)
                s.data_len = g.big_len;
            pami_send_t p = {.send = s, .local_fn = on_local,
                             .remote_fn = on_remote};
            rc = pami_send(ctx, &p);
            sends++;
        }
        g.in_send = 0;
        MP_CHECK(rc);
        MP_EXPECT(g.got == 0, "a handler ran before any advance (message "
                  "%u sent)", seq);
    }
    MP_WAIT(job, ctx, g.got == (int)n && g.local == sends &&
                          g.remote == sends && g.rndv_done == 2,
            MP_WAIT_S, "%d of %zu self messages, %d + %d of %d callbacks, "
            "%d of 2 rendezvous", g.got, n, g.local, g.remote, sends,
            g.rndv_done);
    free(src);
    free(g.big);
    g.big = NULL;
}

int main(int argc, char **argv)
{
    mp_job_t job;
    mp_init(&job, "mp_self", &argc, argv, NULL, 1, false);
    g.job = &job;
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_MSG, on_msg, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_REQ, on_req, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_ACK, on_ack, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_ACK2, on_ack, &g, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_CHAIN, on_chain, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    pami_endpoint_t me = mp_ep(&job, job.me, 0);

    /* "acks": the answering handlers alone (they crashed in the send). */
    bool acks_only = argc > 1 && strcmp(argv[1], "acks") == 0;
    if (!acks_only)
        ordered_self(&job, ctx, me);
    int remote0 = g.remote;

    /* Requests to self and to the next task (self again at one task). */
    pami_endpoint_t to[2] = {me, mp_ep(&job, mp_peer(&job, 1), 0)};
    for (int i = 0; i < 2; i++) {
        uint32_t v = (uint32_t)i;
        pami_send_immediate_t s = {.dest = to[i], .dispatch = ID_REQ,
                                   .header = &v, .header_len = sizeof(v)};
        g.in_send = 1;
        MP_CHECK(pami_send_immediate(ctx, &s));
        pami_send_t p = {.send = s, .remote_fn = on_remote};
        MP_CHECK(pami_send(ctx, &p));
        g.in_send = 0;
    }
    MP_WAIT(&job, ctx, g.reqs == 4 && g.acks == 4 && g.acks2 == 4 &&
                           g.ack_remote == 4 && g.remote == remote0 + 2,
            MP_WAIT_S, "%d of 4 requests, %d + %d of 4 acks, %d of 4 ack "
            "completions", g.reqs, g.acks, g.acks2, g.ack_remote);
    if (acks_only)
        goto end;

    /* A handler that sends itself the next link: one link per advance. */
    uint32_t zero = 0;
    pami_send_immediate_t c0 = {.dest = me, .dispatch = ID_CHAIN,
                                .header = &zero, .header_len = sizeof(zero)};
    g.in_send = 1;
    MP_CHECK(pami_send_immediate(ctx, &c0));
    g.in_send = 0;
    for (int i = 0; i < CHAIN_N / 2; i++) {
        int before = g.chain;
        pami_context_advance(ctx, 1);
        MP_EXPECT(g.chain - before <= 1, "one advance ran %d chain links",
                  g.chain - before);
    }
    MP_WAIT(&job, ctx, g.chain == CHAIN_N, MP_WAIT_S,
            "%d of %d chain links", g.chain, CHAIN_N);

end:
    MP_EXPECT(g.violations == 0, "%d handlers or callbacks ran inside a "
              "send call", g.violations);
    MP_EXPECT(g.recursions == 0, "%d handlers or callbacks ran inside "
              "another", g.recursions);
    mp_sync(&job);
    mp_finish(&job);
    printf("mp_self: task %u: ok\n", job.me);
    return 0;
}

/*
 * mp_handler: replies sent from inside handlers, and the handler rules.
 *
 * Tasks pair up (0-1, 2-3, ...). The even task sends the first ping from
 * main; after that everything happens in handlers: the odd task answers
 * each ping from its handler, and the even task sends the next ping from
 * the handler of the pong, for `rounds` round trips (default 10000).
 * Rounds alternate between pami_send_immediate (falling back to pami_send
 * on PAMI_EAGAIN, since a handler cannot advance) and pami_send with a
 * 100-byte payload; every 1000th round carries 128 KiB, which may arrive
 * with data == NULL, and then the answer goes out from recv->local_fn.
 * Every message is checked (round, kind, contents).
 *
 * Now and then a handler, a send's local_fn and a recv local_fn check that
 * pami_context_advance, pami_context_wait, pami_dispatch_fence,
 * pami_context_destroyv and pami_client_destroy refuse with
 * PAMI_IN_HANDLER and leave everything working.
 *
 *   pamirun -n N mp_handler [rounds]     (N even)
 */
#include "mp_util.h"

enum { ID_PING = 50, ID_PONG = 51 };
enum { KIND_IMM, KIND_SEND, KIND_BIG };

#define SMALL 100
#define BIG   (128 * 1024)
#define IMM_DATA 16

typedef struct {
    uint32_t round;
    uint32_t kind;
} msg_hdr_t;

static mp_job_t    job;
static uint32_t    rounds = 10000;
static pami_task_t partner;
static bool        initiator;
static uint32_t    received;     /* pings (odd task) or pongs (even task) */
static uint64_t    sends_made;   /* pami_send calls (local_fn expected) */
static uint64_t    locals_run;
static unsigned    rule_checks;
static uint64_t    fallbacks;    /* immediate sends that became pami_send */

static int kind_of(uint32_t round)
{
    if (round % 1000 == 999)
        return KIND_BIG;
    return round % 2 ? KIND_SEND : KIND_IMM;
}

static size_t size_of(int kind)
{
    return kind == KIND_BIG ? BIG : kind == KIND_SEND ? SMALL : IMM_DATA;
}

/* Salt tells pings from pongs. */
static uint32_t salt_of(size_t id)
{
    return (uint32_t)id;
}

/* Everything a handler must not do, refused cleanly. */
static void check_rules(pami_context_t ctx, const char *where)
{
    MP_CHECK_RC(pami_context_advance(ctx, 1), PAMI_IN_HANDLER);
    MP_CHECK_RC(pami_context_wait(ctx, 0), PAMI_IN_HANDLER);
    MP_CHECK_RC(pami_context_wait(ctx, 10), PAMI_IN_HANDLER);
    MP_CHECK_RC(pami_dispatch_fence(job.client), PAMI_IN_HANDLER);
    pami_context_t copy[1] = {job.ctx[0]};
    MP_CHECK_RC(pami_context_destroyv(copy, 1), PAMI_IN_HANDLER);
    MP_EXPECT(copy[0] == job.ctx[0], "refused destroyv changed the array");
    pami_client_t client = job.client;
    MP_CHECK_RC(pami_client_destroy(&client), PAMI_IN_HANDLER);
    MP_EXPECT(client == job.client, "refused client_destroy cleared the "
                                    "handle (%s)", where);
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_NUM_CONTEXTS};
    MP_CHECK(pami_client_query(job.client, &a));
    MP_EXPECT(a.num_contexts == 1, "%s: after the refused destroys the "
                                   "client has %zu contexts", where,
              a.num_contexts);
    rule_checks++;
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    MP_EXPECT(rc == PAMI_SUCCESS, "send completion: %s", pami_error_text(rc));
    locals_run++;
    if (locals_run % 2000 == 1)
        check_rules(ctx, "send local_fn");
    free(cookie);
}

/* Sends (id, round) to the partner from inside a handler or callback. */
static void send_msg(pami_context_t ctx, size_t id, uint32_t round)
{
    int       kind = kind_of(round);
    size_t    len  = size_of(kind);
    msg_hdr_t h    = {round, (uint32_t)kind};
    pami_endpoint_t to = mp_ep(&job, partner, 0);
    if (kind == KIND_IMM) {
        uint8_t data[IMM_DATA];
        mp_fill(data, len, job.me, round, salt_of(id));
        pami_send_immediate_t s = {.dest = to, .dispatch = id, .header = &h,
                                   .header_len = sizeof(h), .data = data,
                                   .data_len = len};
        pami_result_t rc = pami_send_immediate(ctx, &s);
        if (rc != PAMI_EAGAIN) {
            MP_EXPECT(rc == PAMI_SUCCESS, "immediate reply: %s",
                      pami_error_text(rc));
            return;
        }
        fallbacks++;
    }
    uint8_t *buf = malloc(len);
    MP_EXPECT(buf != NULL, "out of memory");
    mp_fill(buf, len, job.me, round, salt_of(id));
    pami_send_t s = {.send = {.dest = to, .dispatch = id, .header = &h,
                              .header_len = sizeof(h), .data = buf,
                              .data_len = len},
                     .local_fn = on_local, .cookie = buf};
    MP_CHECK(pami_send(ctx, &s));
    sends_made++;
}

/* A message is here and checked: count it and answer. */
static void answer(pami_context_t ctx, size_t id, uint32_t round)
{
    received++;
    if (id == ID_PING)
        send_msg(ctx, ID_PONG, round);
    else if (round + 1 < rounds)
        send_msg(ctx, ID_PING, round + 1);
}

typedef struct {
    uint8_t  *buf;
    size_t    id;
    uint32_t  round;
} pending_t;

static void on_big_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    pending_t *p = cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "receive of round %u: %s", p->round,
              pami_error_text(rc));
    long bad = mp_verify(p->buf, BIG, partner, p->round, salt_of(p->id));
    MP_EXPECT(bad < 0, "round %u: payload wrong at byte %ld", p->round, bad);
    if (p->round % 2000 == 999)
        check_rules(ctx, "recv local_fn");
    answer(ctx, p->id, p->round);
    free(p->buf);
    free(p);
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    size_t id = (size_t)(uintptr_t)cookie;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    MP_EXPECT(origin == partner, "message from task %u, partner is %u",
              origin, partner);
    MP_EXPECT(id == (initiator ? ID_PONG : ID_PING), "%s on the wrong task",
              id == ID_PING ? "ping" : "pong");
    msg_hdr_t h;
    MP_EXPECT(hlen == sizeof(h), "header of %zu bytes", hlen);
    memcpy(&h, hdr, sizeof(h));
    MP_EXPECT(h.round == received, "round %u arrived, expected %u", h.round,
              received);
    MP_EXPECT((int)h.kind == kind_of(h.round) &&
                  dlen == size_of(kind_of(h.round)),
              "round %u: kind %u with %zu bytes", h.round, h.kind, dlen);
    if (h.round % 1000 == 0)
        check_rules(ctx, "handler");
    if (data == NULL) {
        MP_EXPECT(recv != NULL && h.kind == KIND_BIG,
                  "round %u: %zu bytes left at the origin", h.round, dlen);
        pending_t *p = malloc(sizeof(*p));
        MP_EXPECT(p != NULL, "out of memory");
        p->buf   = malloc(dlen);
        p->id    = id;
        p->round = h.round;
        MP_EXPECT(p->buf != NULL, "out of memory");
        recv->addr     = p->buf;
        recv->local_fn = on_big_done;
        recv->cookie   = p;
        return;
    }
    long bad = mp_verify(data, dlen, origin, h.round, salt_of(id));
    MP_EXPECT(bad < 0, "round %u: payload wrong at byte %ld", h.round, bad);
    answer(ctx, id, h.round);
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_handler", &argc, argv, NULL, 1, false);
    if (argc > 1)
        rounds = (uint32_t)strtoul(argv[1], NULL, 10);
    MP_EXPECT(job.size >= 2 && job.size % 2 == 0, "needs an even number of "
                                                  "tasks");
    initiator = job.me % 2 == 0;
    partner   = initiator ? job.me + 1 : job.me - 1;
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_dispatch_set(ctx, ID_PING, on_msg,
                               (void *)(uintptr_t)ID_PING, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_PONG, on_msg,
                               (void *)(uintptr_t)ID_PONG, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));

    double t0 = mp_now();
    if (initiator) {
        /* The first ping is the only send from main; a handler must not be
         * running here, so the rules do not apply. */
        send_msg(ctx, ID_PING, 0);
    }
    MP_WAIT(&job, ctx, received == rounds, MP_WAIT_S,
            "%u of %u round trips", received, rounds);
    double t = mp_now() - t0;
    MP_WAIT(&job, ctx, locals_run == sends_made, MP_WAIT_S,
            "%llu of %llu send completions", (unsigned long long)locals_run,
            (unsigned long long)sends_made);
    mp_sync(&job);
    MP_EXPECT(received == rounds && locals_run == sends_made,
              "extra messages or completions at the end");
    MP_EXPECT(rule_checks > 0, "the handler rules were never checked");
    /* Outside handlers, progress works again. */
    pami_result_t rc = pami_context_advance(ctx, 1);
    MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_EAGAIN,
              "advance outside a handler: %s", pami_error_text(rc));
    if (initiator)
        printf("pair %u-%u: %u round trips answered from handlers in %.3f s "
               "(%.1f us each), %llu immediate replies fell back to "
               "pami_send, handler rules checked %u times\n", job.me,
               partner, rounds, t, t * 1e6 / rounds,
               (unsigned long long)fallbacks, rule_checks);
    mp_finish(&job);
    return 0;
}

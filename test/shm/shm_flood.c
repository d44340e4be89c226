/*
 * shm_flood: the shared-memory fast path (docs/protocols/shm-queue.md)
 * with exact counts. Also run with PAMI_SHM_FASTPATH=0, where the same
 * checks hold over UCX and the counters say the queues were not used.
 *
 *  1. Every task sends n messages to every task (itself included), in one
 *     stream per pair whose sizes cycle: 8 B and 200 B by
 *     pami_send_immediate (one and four queue lines), 3000 B by pami_send
 *     (two entries), 100 KiB by pami_send (rendezvous: the request in the
 *     queue, the data by UCX). Each receiver checks that the messages of
 *     each origin arrive in order (sequence numbers), whole (contents),
 *     and all of them (counts).
 *  2. A slow consumer: task 1 stops advancing for 2 s; task 0 sends 8 B
 *     immediates to it without advancing until PAMI_EAGAIN (with the fast
 *     path on it must come: the queue fills, then pami's copies), then a
 *     pami_send behind them, whose local completion it awaits in
 *     pami_context_wait: with the fast path on it must sleep meanwhile
 *     (woken when task 1 frees room), not spin. Then it tells the count;
 *     task 1 must receive exactly that many, in order.
 *  3. Counters: with the fast path on, shm_on is 1 and every message to
 *     another task of this node went by queue (shm_sent, shm_received),
 *     and task 0 saw its queue full; off, shm_on and shm_sent are 0.
 *  4. Sleepers: 200 times task 0 sends one message 2 ms after task 1
 *     went to sleep in pami_context_wait; each must wake it (a lost
 *     wakeup hangs until the 10 s timeout and fails), and with the fast
 *     path on task 0's shm_wakeups must count them. Then task 1 waits 3 s
 *     for a message and may use less than 1 % of a CPU meanwhile.
 *
 *   pamirun -n N shm_flood [messages per pair]
 *
 *   pamirun -n 2 shm_flood dead
 *       Task 1 never advances and leaves after 1 s with _exit(0) (which
 *       pamirun accepts), its inbox full of task 0's messages: 8 B
 *       immediates, then 3000 B pami_sends with remote_fn, many waiting
 *       for room in task 0. Within 15 s every send's remote_fn must run
 *       exactly once with PAMI_PEER_FAILED (task 1 ran no handler), new
 *       sends to task 1 fail with PAMI_PEER_FAILED, and task 0 still
 *       talks to itself.
 */
#include <sys/resource.h>
#include <unistd.h>

#include "../mp/mp_util.h"

enum { ID_FLOOD = 30, ID_SLOW = 31, ID_SLOW_COUNT = 32 };

#define BIG    (100 * 1024)
#define MEDIUM 3000
#define SALT   7

static mp_job_t   job;
static uint64_t  *next_seq;   /* per origin: the sequence number expected */
static uint64_t   received;   /* messages of phase 1 handled */
static uint64_t   big_done;   /* rendezvous receives completed */
static uint64_t   big_expected;
static unsigned   local_done; /* pami_send local completions */
static uint64_t   slow_got, slow_count = UINT64_MAX;

static size_t size_of(uint64_t seq)
{
    if (seq % 64 == 63)
        return BIG;
    if (seq % 8 == 7)
        return MEDIUM;
    return seq % 2 ? 200 : 8;
}

static void on_big_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    mp_pending_end(cookie, rc, BIG, SALT);
    big_done++;
}

static void on_flood(pami_context_t ctx, void *cookie, const void *hdr,
                     size_t hlen, const void *data, size_t dlen,
                     pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie;
    pami_task_t origin;
    uint64_t    seq = mp_expect_next(hdr, hlen, origin_ep, next_seq, &origin);
    received++;
    size_t len = size_of(seq);
    /* The contents depend on the size only: senders keep one buffer per
     * size for all their messages. */
    if (data == NULL) {
        MP_EXPECT(len == BIG && dlen == BIG, "message %llu: %zu bytes by "
                  "rendezvous, expected %zu", (unsigned long long)seq, dlen,
                  len);
        mp_recv_into_new(recv, dlen, origin, len, on_big_done);
        return;
    }
    MP_EXPECT(dlen == len, "message %llu from task %u: %zu bytes, expected "
              "%zu", (unsigned long long)seq, origin, dlen, len);
    mp_expect_payload(data, dlen, origin, len, SALT);
}

static void on_slow(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)origin;
    (void)recv;
    uint64_t seq;
    MP_EXPECT(hlen == sizeof(seq), "slow header of %zu bytes", hlen);
    memcpy(&seq, hdr, sizeof(seq));
    MP_EXPECT(seq == slow_got, "slow message %llu, expected %llu",
              (unsigned long long)seq, (unsigned long long)slow_got);
    slow_got++;
}

static void on_slow_count(pami_context_t ctx, void *cookie, const void *hdr,
                          size_t hlen, const void *data, size_t dlen,
                          pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)origin;
    (void)recv;
    MP_EXPECT(hlen == sizeof(slow_count), "count header of %zu bytes", hlen);
    memcpy(&slow_count, hdr, sizeof(slow_count));
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "pami_send: %s", pami_error_text(rc));
    local_done++;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static pami_context_stats_t stats(void)
{
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(job.ctx[0], &st));
    return st;
}

static void flood(uint64_t n, uint8_t *const bufs[4])
{
    pami_context_t ctx   = job.ctx[0];
    unsigned       sends = 0;
    for (uint64_t seq = 0; seq < n; seq++)
        for (size_t k = 0; k < job.size; k++) {
            pami_task_t to  = mp_peer(&job, k);
            size_t      len = size_of(seq);
            uint8_t    *buf = bufs[len == 8 ? 0 : len == 200 ? 1
                                  : len == MEDIUM ? 2 : 3];
            pami_send_immediate_t s = {
                .dest = mp_ep(&job, to, 0), .dispatch = ID_FLOOD,
                .header = &seq, .header_len = sizeof(seq),
                .data = buf, .data_len = len};
            if (len <= 200) {
                mp_send_imm(&job, ctx, &s);
                continue;
            }
            pami_send_t full = {.send = s, .local_fn = on_local};
            MP_CHECK(pami_send(ctx, &full));
            sends++;
            /* Keep what is in flight bounded, as a program would. */
            if (sends - local_done > 64)
                MP_WAIT(&job, ctx, sends - local_done <= 16, MP_WAIT_S,
                        "local completion of %u sends", sends - local_done);
        }
    MP_WAIT(&job, ctx, local_done == sends && received == n * job.size &&
                           big_done == big_expected,
            120.0, "flood: %llu of %llu messages in, %llu of %llu "
            "rendezvous done, %u of %u sends out",
            (unsigned long long)received,
            (unsigned long long)(n * job.size), (unsigned long long)big_done,
            (unsigned long long)big_expected, local_done, sends);
    for (size_t t = 0; t < job.size; t++)
        MP_EXPECT(next_seq[t] == n, "%llu messages from task %zu, expected "
                  "%llu", (unsigned long long)next_seq[t], t,
                  (unsigned long long)n);
}

/* Task 0 fills task 1's queue while task 1 does not advance. */
static void slow_consumer(bool on)
{
    pami_context_t ctx = job.ctx[0];
    if (job.me == 1) {
        mp_sleep_ms(2000);
        MP_WAIT(&job, ctx, slow_count != UINT64_MAX && slow_got == slow_count,
                MP_WAIT_S, "slow: %llu messages, count %llu",
                (unsigned long long)slow_got,
                (unsigned long long)slow_count);
        printf("shm_flood: task 1 took %llu messages after its pause\n",
               (unsigned long long)slow_got);
    } else if (job.me == 0) {
        uint64_t seq = 0, again = 0;
        pami_endpoint_t to = mp_ep(&job, 1, 0);
        while (seq < 1000000 && again == 0) {
            pami_send_immediate_t s = {.dest = to, .dispatch = ID_SLOW,
                                       .header = &seq,
                                       .header_len = sizeof(seq)};
            pami_result_t rc = pami_send_immediate(ctx, &s);
            MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_EAGAIN,
                      "slow send: %s", pami_error_text(rc));
            if (rc == PAMI_EAGAIN)
                again++;
            else
                seq++;
        }
        printf("shm_flood: task 0 sent %llu messages to a task that does "
               "not advance before PAMI_EAGAIN%s\n", (unsigned long long)seq,
               again ? "" : " (never came)");
        if (on)
            MP_EXPECT(again > 0, "no PAMI_EAGAIN in %llu sends into a full "
                      "queue", (unsigned long long)seq);
        /* A send behind all those copies: its local completion means all
         * went into the queue, which needs task 1 back. Meanwhile this
         * task must sleep, not spin (the consumer wakes it when it frees
         * room). */
        static uint8_t tail[MEDIUM];
        unsigned done0 = local_done;
        pami_send_t m = {.send = {.dest = to, .dispatch = ID_SLOW,
                                  .header = &seq, .header_len = sizeof(seq),
                                  .data = tail, .data_len = sizeof(tail)},
                         .local_fn = on_local};
        MP_CHECK(pami_send(ctx, &m));
        seq++;
        uint64_t sleeps0 = stats().sleeps;
        double   t0 = mp_now();
        MP_WAIT(&job, ctx, local_done > done0, MP_WAIT_S,
                "the send behind a full queue");
        uint64_t slept = stats().sleeps - sleeps0;
        printf("shm_flood: task 0 waited %.2f s for room, sleeping %llu "
               "times\n", mp_now() - t0, (unsigned long long)slept);
        if (on && mp_now() - t0 > 0.5)
            MP_EXPECT(slept > 0, "task 0 spun %.2f s waiting for room",
                      mp_now() - t0);
        pami_send_immediate_t c = {.dest = to, .dispatch = ID_SLOW_COUNT,
                                   .header = &seq, .header_len = sizeof(seq)};
        mp_send_imm(&job, ctx, &c);
    }
}

/* Task 1 sleeps in pami_context_wait; task 0 wakes it, rounds times,
 * then once after 3 s of idling. */
static void sleepers(bool on)
{
    pami_context_t ctx    = job.ctx[0];
    const unsigned rounds = 200;
    if (job.me == 1) {
        for (unsigned r = 0; r <= rounds; r++) {
            double t0 = mp_now(), c0 = cpu_s();
            while (slow_got <= r) {
                pami_result_t rc = pami_context_wait(ctx, 10000);
                MP_EXPECT(rc == PAMI_SUCCESS, "round %u: wait: %s (a lost "
                          "wakeup?)", r, pami_error_text(rc));
            }
            if (r == rounds) {
                double cpu = (cpu_s() - c0) / (mp_now() - t0);
                printf("shm_flood: task 1 used %.2f %% of a CPU in %.1f s "
                       "blocked in pami_context_wait\n", cpu * 100,
                       mp_now() - t0);
                MP_EXPECT(cpu < 0.01, "%.2f %% of a CPU while waiting idle",
                          cpu * 100);
            }
        }
    } else if (job.me == 0) {
        uint64_t w0 = stats().shm_wakeups;
        pami_endpoint_t to = mp_ep(&job, 1, 0);
        for (uint64_t r = 0; r <= rounds; r++) {
            /* Task 1 has taken the last one and gone back to sleep. */
            mp_sleep_ms(r == rounds ? 3000 : 2);
            pami_send_immediate_t s = {.dest = to, .dispatch = ID_SLOW,
                                       .header = &r, .header_len = sizeof(r)};
            mp_send_imm(&job, ctx, &s);
            /* A send that follows another since the last progress waits
             * in the context's list (send_gather.c): progress sends it. */
            pami_context_advance(ctx, 1);
        }
        uint64_t woke = stats().shm_wakeups - w0;
        printf("shm_flood: task 0 woke task 1 %llu times in %u rounds\n",
               (unsigned long long)woke, rounds + 1);
        /* Some rounds may find task 1 still spinning before its sleep. */
        if (on)
            MP_EXPECT(woke >= rounds / 2, "only %llu wakeups in %u rounds",
                      (unsigned long long)woke, rounds + 1);
    }
}

static unsigned dead_remote[2], dead_local[2];

static void on_dead_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    unsigned *seen = cookie;
    MP_EXPECT(rc != PAMI_SUCCESS, "a send to a task that ran no handler "
              "completed remotely");
    dead_remote[rc == PAMI_PEER_FAILED ? 0 : 1]++;
    MP_EXPECT(++*seen == 1, "remote_fn ran %u times for one send", *seen);
}

static void on_dead_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    dead_local[rc == PAMI_SUCCESS ? 0 : 1]++;
}

static void mode_dead(void)
{
    pami_context_t ctx = job.ctx[0];
    MP_EXPECT(job.size == 2, "dead: 2 tasks");
    if (job.me == 1) {
        mp_sleep_ms(1000);
        fflush(stdout);
        _exit(0); /* no destroy: a crash that pamirun accepts */
    }
    enum { SENDS = 2000 };
    static uint8_t  buf[MEDIUM];
    static unsigned seen[SENDS];
    pami_endpoint_t to = mp_ep(&job, 1, 0);
    uint64_t imm = 0;
    for (;; imm++) {
        pami_send_immediate_t s = {.dest = to, .dispatch = ID_SLOW,
                                   .header = &imm, .header_len = sizeof(imm)};
        pami_result_t rc = pami_send_immediate(ctx, &s);
        if (rc != PAMI_SUCCESS) {
            MP_EXPECT(rc == PAMI_EAGAIN, "immediate: %s", pami_error_text(rc));
            break;
        }
    }
    unsigned sent = 0;
    for (; sent < SENDS; sent++) {
        uint64_t seq = sent;
        pami_send_t s = {.send = {.dest = to, .dispatch = ID_FLOOD,
                                  .header = &seq, .header_len = sizeof(seq),
                                  .data = buf, .data_len = sizeof(buf)},
                         .local_fn = on_dead_local,
                         .remote_fn = on_dead_remote, .cookie = &seen[sent]};
        pami_result_t rc = pami_send(ctx, &s);
        if (rc != PAMI_SUCCESS) {
            MP_EXPECT(rc == PAMI_PEER_FAILED, "send %u: %s", sent,
                      pami_error_text(rc));
            break;
        }
    }
    pami_context_stats_t st = stats();
    printf("shm_flood dead: %llu immediates and %u sends toward task 1 "
           "(shm full %llu)\n", (unsigned long long)imm, sent,
           (unsigned long long)st.shm_full);
    double t0 = mp_now();
    MP_WAIT(&job, ctx, dead_remote[0] + dead_remote[1] == sent, 15.0,
            "%u of %u remote completions after the death",
            dead_remote[0] + dead_remote[1], sent);
    MP_EXPECT(dead_remote[1] == 0, "%u sends ended with another error than "
              "PAMI_PEER_FAILED", dead_remote[1]);
    uint64_t x = 0;
    pami_send_immediate_t s = {.dest = to, .dispatch = ID_SLOW,
                               .header = &x, .header_len = sizeof(x)};
    MP_CHECK_RC(pami_send_immediate(ctx, &s), PAMI_PEER_FAILED);
    /* Still alive toward itself. */
    s.dest = mp_ep(&job, 0, 0);
    slow_got = 0;
    mp_send_imm(&job, ctx, &s);
    MP_WAIT(&job, ctx, slow_got == 1, MP_WAIT_S, "a message to itself");
    printf("shm_flood dead: %u sends failed with PAMI_PEER_FAILED %.2f s "
           "after the last send (local completions %u ok, %u failed)\n",
           sent, mp_now() - t0, dead_local[0], dead_local[1]);
    pami_client_destroy(&job.client); /* a task is gone: may fail */
    printf("shm_flood: task 0 ok\n");
    exit(0);
}

int main(int argc, char **argv)
{
    mp_init(&job, "shm_flood", &argc, argv, NULL, 1, false);
    bool     dead = argc > 1 && strcmp(argv[1], "dead") == 0;
    uint64_t n = argc > 1 && !dead ? strtoull(argv[1], NULL, 10) : 2000;
    const char *env = getenv("PAMI_SHM_FASTPATH");
    bool on = env != NULL && strcmp(env, "1") == 0;
    next_seq = calloc(job.size, sizeof(*next_seq));
    MP_EXPECT(next_seq != NULL, "out of memory");
    big_expected = (n / 64) * job.size;
    static const size_t lens[4] = {8, 200, MEDIUM, BIG};
    uint8_t *bufs[4];
    for (int i = 0; i < 4; i++) {
        bufs[i] = malloc(lens[i]);
        MP_EXPECT(bufs[i] != NULL, "out of memory");
        mp_fill(bufs[i], lens[i], job.me, lens[i], SALT);
    }
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_FLOOD, on_flood, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_SLOW, on_slow, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_SLOW_COUNT, on_slow_count, NULL,
                               NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    if (dead)
        mode_dead();

    double t0 = mp_now();
    flood(n, bufs);
    double dt = mp_now() - t0;
    pami_context_stats_t st = stats();
    size_t others = job.attr.num_local_tasks - 1; /* tasks of this node */
    printf("shm_flood: task %u: %llu messages in %.2f s; shm on=%llu "
           "peers=%llu sent=%llu received=%llu full=%llu wakeups=%llu\n",
           job.me, (unsigned long long)received, dt,
           (unsigned long long)st.shm_on, (unsigned long long)st.shm_peers,
           (unsigned long long)st.shm_sent,
           (unsigned long long)st.shm_received,
           (unsigned long long)st.shm_full,
           (unsigned long long)st.shm_wakeups);
    if (on) {
        /* Each message to another task of this node is one queue message
         * (a rendezvous also sends its ack back by queue). */
        MP_EXPECT(st.shm_on == 1 && st.shm_peers >= others,
                  "fast path on but shm_on %llu, %llu peers",
                  (unsigned long long)st.shm_on,
                  (unsigned long long)st.shm_peers);
        MP_EXPECT(st.shm_sent >= n * others && st.shm_received >= n * others,
                  "%llu sent and %llu received by queue, expected at least "
                  "%llu", (unsigned long long)st.shm_sent,
                  (unsigned long long)st.shm_received,
                  (unsigned long long)(n * others));
    } else {
        MP_EXPECT(st.shm_on == 0 && st.shm_sent == 0 && st.shm_received == 0,
                  "fast path off but shm_on %llu, %llu sent by queue",
                  (unsigned long long)st.shm_on,
                  (unsigned long long)st.shm_sent);
    }
    mp_sync(&job);

    if (job.size >= 2 && job.attr.num_local_tasks >= 2) {
        slow_consumer(on);
        /* Counted from 0 again before the sync: task 0 may leave it and
         * send the sleepers' first message while this task still
         * advances inside it (seen: "slow message 0, expected 1067"). */
        slow_got = 0;
        mp_sync(&job);
        if (on && job.me == 0)
            MP_EXPECT(stats().shm_full > st.shm_full, "no full queue seen");
        sleepers(on);
        mp_sync(&job);
    }
    for (int i = 0; i < 4; i++)
        free(bufs[i]);
    free(next_seq);
    mp_finish(&job);
    printf("shm_flood: task %u ok\n", job.me);
    return 0;
}

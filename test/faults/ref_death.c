/*
 * A task dies while a shared-memory reference stands between it and its
 * peer (docs/protocols/shm-queue.md, "References"): a pami_send of
 * PAMI_SHM_READ_MIN (8 KiB) to rndv_threshold (64 KiB) on one node
 * leaves its data in the sender's buffer, the receiver reads it with
 * process_vm_readv, and the send completes when the receiver's head
 * passed the entry.
 *
 *   ref_death producer|consumer [stream]   which of the two dies (task 1)
 *
 * Two processes on the oob bootstrap (no launcher kills the survivor).
 * Without "stream" a second socketpair orders the steps, so the death
 * falls at the same point every run:
 *  - producer: it put a small message, four references and a small
 *    message in the queue and died (a zombie: its memory is gone) before
 *    the consumer looked. The consumer delivers the first small message,
 *    cannot read the reference (ESRCH) and reads that queue no more: no
 *    handler runs for the references or what followed them (docs/api.md,
 *    "Ordering": the handlers that run are a prefix of the sends). It
 *    finds the task dead (a fence to it is PAMI_PEER_FAILED) and is
 *    destroyed in time.
 *  - consumer: it died before reading the four references (each with
 *    local_fn, two with remote_fn). The producer, waiting for the
 *    consumer's head to pass them, gets each callback once with
 *    PAMI_PEER_FAILED; a later send to the task is refused.
 * With "stream" the producer streams references and small messages (8
 * in flight) and the dying task kills itself 5-64 ms in, at whatever
 * point of a read or a give-back that falls: the consumer's handlers
 * ran for a prefix of the sends, each with its whole data; every
 * callback of the producer ran once, with PAMI_SUCCESS or
 * PAMI_PEER_FAILED.
 */
#include <pami.h>

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OOB_PROG "ref_death"
#include "oob_pair.h"

/* A callback inside the call that started its send fails the task. */
#define CB_COUNT_IN_CALL(c, which) CHECK(false, "%s ran inside its call", which)
#include "../cb_count.h"

#define ID_MSG  5
#define REF     ((size_t)32 << 10) /* a reference: 8 KiB <= REF < 64 KiB */
#define SMALL   64                 /* through the queue itself */
#define WINDOW  8                  /* stream: sends in flight */
#define MAX_OPS 200000

typedef struct {
    uint32_t seq, len;
} msg_hdr_t;

static int      step_fd; /* the second socketpair: steps and a pid */
static bool     stream;
static uint32_t next_seq; /* consumer: the sequence number it expects */

static uint8_t pattern(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 131u + i * 7u + 1u);
}

static void fill(uint8_t *buf, uint32_t seq, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(seq, i);
}

/* Every message arrives whole, in order, none twice. */
static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)origin;
    msg_hdr_t h;
    CHECK(hlen == sizeof(h) && recv == NULL && data != NULL,
          "a message with a header of %zu bytes, data %p", hlen, data);
    memcpy(&h, hdr, sizeof(h));
    CHECK(h.seq == next_seq, "message %u arrived where %u was due", h.seq,
          next_seq);
    CHECK(h.len == dlen, "message %u: %zu bytes, %u sent", h.seq, dlen,
          h.len);
    const uint8_t *d = data;
    for (size_t i = 0; i < dlen; i++)
        CHECK(d[i] == pattern(h.seq, i), "message %u: byte %zu differs",
              h.seq, i);
    next_seq++;
}

static void step_send(char c)
{
    CHECK(write(step_fd, &c, 1) == 1, "step write");
}

static void step_wait(char want)
{
    char c = 0;
    CHECK(read(step_fd, &c, 1) == 1 && c == want, "step read (%c)", want);
}

/* Sends message seq of len bytes from buf with the callbacks of c. */
static pami_result_t send_msg(pami_context_t ctx, pami_endpoint_t peer,
                              uint32_t seq, uint8_t *buf, size_t len,
                              bool remote, cb_count_t *c)
{
    msg_hdr_t h = {.seq = seq, .len = (uint32_t)len};
    fill(buf, seq, len);
    *c = (cb_count_t){.in_call = true};
    pami_send_t s = {
        .send = {.dest = peer, .dispatch = ID_MSG, .header = &h,
                 .header_len = sizeof(h), .data = buf, .data_len = len},
        .local_fn = cb_count_local,
        .remote_fn = remote ? cb_count_remote : NULL, .cookie = c};
    pami_result_t rc = pami_send(ctx, &s);
    c->in_call = false;
    return rc;
}

/* Waits (bounded) until the callbacks of c ran. */
static void wait_done(pami_context_t ctx, const cb_count_t *c, bool remote,
                      double secs)
{
    double end = now() + secs;
    while ((c->local == 0 || (remote && c->remote == 0)) && now() < end)
        pami_context_wait(ctx, 100);
}

/* True once the peer is known dead: a fence to it is refused. */
static bool peer_dead(pami_context_t ctx, pami_endpoint_t peer,
                      cb_count_t *fence)
{
    pami_result_t rc = pami_fence_endpoint(ctx, peer, cb_count_local, fence);
    CHECK(rc == PAMI_SUCCESS || rc == PAMI_PEER_FAILED, "fence: %s",
          pami_error_text(rc));
    return rc == PAMI_PEER_FAILED;
}

/* The survivor polls until the peer is known dead (bound: the probe's
 * 100 ms, many times over for a loaded sanitizer build). */
static double until_dead(pami_context_t ctx, pami_endpoint_t peer)
{
    /* Their callbacks may run as late as destroy. */
    static cb_count_t fences;
    double            t0 = now();
    while (!peer_dead(ctx, peer, &fences)) {
        CHECK(now() - t0 < 20, "the peer not found dead in 20 s");
        pami_context_wait(ctx, 10);
    }
    return now() - t0;
}

/* ---- the fixed order ---- */

#define NREF 4

static void producer_fixed(pami_context_t ctx, pami_endpoint_t peer,
                           bool dies)
{
    static cb_count_t c[NREF + 2];
    uint8_t *buf[NREF + 2];
    for (int i = 0; i < NREF + 2; i++) {
        buf[i] = malloc(REF);
        CHECK(buf[i] != NULL, "out of memory");
    }
    pami_context_stats_t before, after;
    pami_context_stats(ctx, &before);
    /* Message 1 small, 2..5 references (3 and 5 with remote_fn), 6
     * small: all go into the queue within their calls. Each after a
     * progress call, which the consumer's side does not see: a small send
     * that follows another since the last one would wait in the send
     * list (gathered, api.md) instead. */
    for (uint32_t i = 0; i < NREF + 2; i++) {
        bool ref = i > 0 && i <= NREF;
        if (i > 0)
            pami_context_advance(ctx, 1);
        CHECK(send_msg(ctx, peer, i + 1, buf[i], ref ? REF : SMALL,
                       ref && i % 2 == 0, &c[i]) == PAMI_SUCCESS,
              "send %u", i + 1);
    }
    pami_context_stats(ctx, &after);
    CHECK(after.shm_sent - before.shm_sent == NREF + 2 &&
              after.shm_full == before.shm_full,
          "of %d sends %llu went into the queue at once", NREF + 2,
          (unsigned long long)(after.shm_sent - before.shm_sent));
    step_send('s');
    if (dies) {
        pid_t me = getpid();
        CHECK(write(step_fd, &me, sizeof(me)) == (ssize_t)sizeof(me),
              "step write");
        raise(SIGKILL);
    }
    /* The consumer dies without reading: every reference fails, at the
     * latest when the probe finds it dead. */
    step_wait('k');
    for (int i = 0; i < NREF + 2; i++) {
        bool ref = i > 0 && i <= NREF, remote = ref && i % 2 == 0;
        wait_done(ctx, &c[i], remote, 20);
    }
    for (int k = 0; k < 8; k++)
        pami_context_advance(ctx, 8);
    for (int i = 0; i < NREF + 2; i++) {
        bool ref = i > 0 && i <= NREF, remote = ref && i % 2 == 0;
        CHECK(c[i].local == 1 && c[i].remote == (remote ? 1u : 0u),
              "send %d: local_fn %u times, remote_fn %u times", i + 1,
              c[i].local, c[i].remote);
        /* The small ones were copied into the queue: done at once. */
        CHECK(c[i].local_rc == (ref ? PAMI_PEER_FAILED : PAMI_SUCCESS),
              "send %d: local_fn got %s", i + 1,
              pami_error_text(c[i].local_rc));
        CHECK(!remote || c[i].remote_rc == PAMI_PEER_FAILED,
              "send %d: remote_fn got %s", i + 1,
              pami_error_text(c[i].remote_rc));
    }
    cb_count_t late;
    CHECK(send_msg(ctx, peer, 99, buf[0], REF, false, &late) ==
              PAMI_PEER_FAILED && late.local == 0,
          "a send to the dead consumer was not refused");
    printf("ref_death: the consumer died; %d references ended with "
           "PAMI_PEER_FAILED\n", NREF);
    for (int i = 0; i < NREF + 2; i++)
        free(buf[i]);
}

static void consumer_fixed(pami_context_t ctx, pami_endpoint_t peer,
                           bool dies)
{
    /* Not progressing: what the producer sends stays in the queue. */
    pami_context_stats_t before, after;
    pami_context_stats(ctx, &before);
    step_wait('s');
    if (dies) {
        step_send('k');
        raise(SIGKILL);
    }
    pid_t pid;
    CHECK(read(step_fd, &pid, sizeof(pid)) == (ssize_t)sizeof(pid),
          "step read (pid)");
    siginfo_t si;
    CHECK(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0,
          "waitid");
    double took = until_dead(ctx, peer);
    for (int k = 0; k < 8; k++)
        pami_context_advance(ctx, 8);
    /* 0 was the first contact, 1 stood before the references. */
    CHECK(next_seq == 2, "handlers ran up to message %u; 1 was the last "
          "one before the references", next_seq - 1);
    /* One reference could not be read; the queue was read no more. */
    pami_context_stats(ctx, &after);
    CHECK(after.dropped_malformed - before.dropped_malformed == 1,
          "%llu messages dropped, not the one unreadable reference",
          (unsigned long long)(after.dropped_malformed -
                               before.dropped_malformed));
    printf("ref_death: the producer died; the consumer delivered what "
           "stood before its references and found it dead in %.3f s\n",
           took);
}

/* ---- the stream ---- */

/* Streams until a send is refused or a callback says the peer failed;
 * then every callback has run once. */
static void producer_stream(pami_context_t ctx, pami_endpoint_t peer)
{
    static cb_count_t c[MAX_OPS];
    uint8_t *buf[WINDOW];
    for (int i = 0; i < WINDOW; i++) {
        buf[i] = malloc(REF);
        CHECK(buf[i] != NULL, "out of memory");
    }
    uint32_t sent = 0, done = 0; /* ops [done, sent) may be in flight */
    bool     failed = false;
    double   end = now() + 60;
    while (!failed) {
        CHECK(now() < end, "no failure seen in 60 s (%u sends)", sent);
        CHECK(sent < MAX_OPS, "no failure seen in %u sends", sent);
        while (done < sent && c[done].local == 1 &&
               (c[done].remote == 1 || done % 4 != 3)) {
            CHECK(ok_or_failed(c[done].local_rc, &failed) &&
                      (done % 4 != 3 || ok_or_failed(c[done].remote_rc,
                                                     &failed)),
                  "send %u ended with %s / %s", done + 1,
                  pami_error_text(c[done].local_rc),
                  pami_error_text(c[done].remote_rc));
            done++;
        }
        if (sent - done < WINDOW && !failed) {
            size_t        len = sent % 3 == 2 ? SMALL : REF;
            pami_result_t rc  = send_msg(ctx, peer, sent + 1,
                                         buf[sent % WINDOW], len,
                                         sent % 4 == 3, &c[sent]);
            if (rc == PAMI_PEER_FAILED)
                break; /* refused at the call: known dead already */
            CHECK(rc == PAMI_SUCCESS, "send %u: %s", sent + 1,
                  pami_error_text(rc));
            sent++;
            continue;
        }
        pami_context_wait(ctx, 10);
    }
    for (uint32_t i = done; i < sent; i++)
        wait_done(ctx, &c[i], i % 4 == 3, 20);
    for (int k = 0; k < 8; k++)
        pami_context_advance(ctx, 8);
    for (uint32_t i = 0; i < sent; i++) {
        bool remote = i % 4 == 3;
        CHECK(c[i].local == 1 && c[i].remote == (remote ? 1u : 0u),
              "send %u: local_fn %u times, remote_fn %u times", i + 1,
              c[i].local, c[i].remote);
        CHECK(ok_or_failed(c[i].local_rc, &failed) &&
                  (!remote || ok_or_failed(c[i].remote_rc, &failed)),
              "send %u ended with %s / %s", i + 1,
              pami_error_text(c[i].local_rc),
              pami_error_text(c[i].remote_rc));
    }
    unsigned refused = 0;
    for (uint32_t i = 0; i < sent; i++)
        refused += c[i].local_rc == PAMI_PEER_FAILED;
    printf("ref_death: the consumer died in a stream; %u sends, each "
           "ended once, %u of them with PAMI_PEER_FAILED\n", sent, refused);
    for (int i = 0; i < WINDOW; i++)
        free(buf[i]);
}

static void run(int rank, int fd, bool producer_dies)
{
    oob_t          oob = {.fd = fd, .rank = rank};
    pami_client_t  client;
    pami_context_t ctx;
    oob_pair_open(&oob, "ref_death", &client, &ctx);
    CHECK(pami_dispatch_set(ctx, ID_MSG, on_msg, NULL, NULL) ==
          PAMI_SUCCESS, "dispatch_set");
    CHECK(pami_dispatch_fence(client) == PAMI_SUCCESS, "task %d: fence",
          rank);
    pami_endpoint_t peer;
    pami_endpoint_create(client, (pami_task_t)(1 - rank), 0, &peer);

    bool is_producer = (rank == 1) == producer_dies;
    bool dies        = rank == 1;
    pami_context_stats_t st;
    pami_context_stats(ctx, &st);
    CHECK(st.shm_on == 1, "the shared-memory queues are off");
    /* First contact, message 0: the queue is claimed and in use. */
    if (is_producer) {
        uint8_t    b[SMALL];
        cb_count_t c;
        CHECK(send_msg(ctx, peer, 0, b, SMALL, true, &c) == PAMI_SUCCESS,
              "send 0");
        wait_done(ctx, &c, true, 30);
        CHECK(c.local == 1 && c.remote == 1 &&
                  c.local_rc == PAMI_SUCCESS && c.remote_rc == PAMI_SUCCESS,
              "send 0: local_fn %u times, remote_fn %u times", c.local,
              c.remote);
        step_wait('w'); /* the consumer then polls no more */
    } else {
        double end = now() + 30;
        while (next_seq == 0 && now() < end)
            pami_context_wait(ctx, 100);
        CHECK(next_seq == 1, "message 0 not here in 30 s");
        /* Its remote_fn's answer must leave. */
        for (int k = 0; k < 8; k++)
            pami_context_advance(ctx, 8);
        step_send('w');
    }
    pami_context_stats(ctx, &st);
    CHECK(is_producer ? st.shm_sent >= 1 : st.shm_received >= 1,
          "message 0 did not go by queue");

    if (!stream) {
        if (is_producer)
            producer_fixed(ctx, peer, dies);
        else
            consumer_fixed(ctx, peer, dies);
    } else {
        if (dies) {
            die_soon();
        }
        if (is_producer)
            producer_stream(ctx, peer);
        else {
            double took = until_dead(ctx, peer);
            pami_context_stats(ctx, &st);
            printf("ref_death: the producer died in a stream; the "
                   "consumer delivered %u messages whole (%llu dropped: a "
                   "reference it could not read) and found it dead %.3f s "
                   "after the stream began\n", next_seq - 1,
                   (unsigned long long)st.dropped_malformed, took);
        }
    }
    CHECK(!dies, "task 1 was still alive after its work");
    double took = oob_survivor_end(ctx, &client);
    printf("ref_death: destroy in %.2f s\n", took);
}

int main(int argc, char **argv)
{
    CHECK((argc == 2 || (argc == 3 && strcmp(argv[2], "stream") == 0)) &&
              (strcmp(argv[1], "producer") == 0 ||
               strcmp(argv[1], "consumer") == 0),
          "usage: ref_death producer|consumer [stream]");
    stream = argc == 3;
    oob_pair_run_killed(run, &step_fd, strcmp(argv[1], "producer") == 0);
    return 0;
}

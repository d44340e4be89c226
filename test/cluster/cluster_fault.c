/*
 * cluster_fault: a node dies, its link is cut, or its tasks (stop1: its
 * first task) stop, while every task streams messages to every other
 * (cluster_fault.sh drives it on a simulated cluster, docs/cluster.md).
 *
 *   cluster_fault DIR NODE kill|cut|stop|stop1
 *                 eager|mixed|rndv|async|async-burst|slow
 *
 * Every task sends to every other task without pause: a window of sends
 * per peer, small ones (immediate, and pami_send of 1 KiB) and, with
 * mixed, every eighth one of 100 KiB, which the target fetches
 * (rendezvous); with rndv every pami_send is large, 64 KiB to 2 MiB + 1,
 * sizes around the 256 KiB chunks and the 2 MiB window in which the
 * origin serves them over TCP (docs/protocols/rendezvous.md); async is
 * the eager stream with the progress thread (PAMI_ASYNC_PROGRESS=1), and
 * once it runs this thread only sends, under the lock, and sleeps;
 * async-burst the same, but this thread also advances and waits on the
 * context in bursts while it holds the lock, beside the thread; slow is
 * the eager stream from a program that, once it runs, comes back to pami
 * only every 1.2 s (a loaded machine's: each look of the liveness probe
 * then follows a gap of more than a second). Once
 * the stream runs everywhere, each task writes DIR/ready-TASK ("PID").
 * The driver then kills node NODE, cuts its link or stops its tasks. The
 * "other side" of a task is the tasks of NODE when it is elsewhere, the
 * tasks elsewhere when it is on NODE (behind a cut link both sides are
 * alive).
 *
 * Each task of another node then checks the points below. So do the tasks
 * of a cut node, but they are not required to: the test ends them once
 * the others are done (TCP on a node whose own link is down may notice
 * nothing for minutes; docs/cluster.md).
 *
 * The checks:
 *  - every task of the other side fails with PAMI_PEER_FAILED (a send's
 *    return value or callback, or a receive's callback), within 60 s;
 *    DIR/detect-TASK gets "PEER SECONDS" per such task: CLOCK_REALTIME of
 *    the first PAMI_PEER_FAILED, which the driver compares with the time
 *    of the fault;
 *  - no task of its own side fails, every callback runs exactly once,
 *    and a last exchange with remote_fn among its own side succeeds;
 *  - pami_client_destroy returns (PAMI_PEER_FAILED: its barrier failed);
 *    DIR/done-TASK gets its duration.
 * Any violation exits 1 with a line saying which.
 */
#include "mp_util.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

enum { ID_STREAM = 60, ID_LAST = 61 };

#define WINDOW     4
#define BIG        (100 * 1024)
#define MID        1024
#define SMALL      64
#define DETECT_S   60.0

/* rndv: the sizes of the large sends, in turn. */
static const size_t rndv_sizes[] = {
    64 * 1024,  256 * 1024 - 1, 256 * 1024,      256 * 1024 + 1,
    512 * 1024 + 1, 2048 * 1024 - 1, 2048 * 1024, 2048 * 1024 + 1,
};
#define RNDV_NSIZES (sizeof(rndv_sizes) / sizeof(rndv_sizes[0]))

typedef struct {
    pami_task_t to;
    uint32_t    seq;
    uint8_t    *buf;   /* pami_send's payload, freed by local_fn */
    size_t      len;   /* its length */
    int         runs;  /* local_fn calls */
} send_op_t;

typedef struct {
    bool        other;    /* on the other side of the fault */
    double      failed;   /* CLOCK_REALTIME of its first PEER_FAILED; 0 */
    unsigned    inflight; /* pami_sends whose local_fn has not run */
    uint32_t    seq;      /* messages started to it */
    uint64_t    got;      /* messages from it */
    unsigned    last_got; /* ID_LAST from it */
} peer_t;

static mp_job_t job;
static peer_t  *peers;
static uint64_t recv_pending;
static bool     mixed;
static bool     rndv;
static bool     burst; /* async-burst: this thread advances too */
static bool     slow;  /* away from pami 1.2 s per round once it runs */
static unsigned last_acked;

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void peer_failed(pami_task_t t, const char *how)
{
    MP_EXPECT(peers[t].other, "task %u of this side failed (%s)", t, how);
    if (peers[t].failed == 0)
        peers[t].failed = wall();
}

/* The result of an operation with task t: success, or PEER_FAILED from a
 * task of the other side. */
static void result(pami_task_t t, pami_result_t rc, const char *how)
{
    if (rc == PAMI_PEER_FAILED)
        peer_failed(t, how);
    else
        MP_EXPECT(rc == PAMI_SUCCESS, "%s with task %u: %s", how, t,
                  pami_error_text(rc));
}

static void on_sent(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    send_op_t *o = cookie;
    MP_EXPECT(++o->runs == 1, "local_fn of send %u to task %u ran twice",
              o->seq, o->to);
    result(o->to, rc, "send");
    peers[o->to].inflight--;
    free(o->buf);
    free(o);
}

static void on_fetched(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    send_op_t *o = cookie;
    MP_EXPECT(++o->runs == 1, "receive of %u from task %u ended twice",
              o->seq, o->to);
    result(o->to, rc, "receive");
    if (rc == PAMI_SUCCESS) {
        long bad = mp_verify(o->buf, o->len, o->to, o->seq, 1);
        MP_EXPECT(bad < 0, "message %u from task %u wrong at byte %ld",
                  o->seq, o->to, bad);
    }
    recv_pending--;
    free(o->buf);
    free(o);
}

/* The length of pami_send seq (odd). */
static size_t send_len(uint32_t seq)
{
    if (rndv)
        return rndv_sizes[(seq / 2) % RNDV_NSIZES];
    return mixed && seq % 8 == 7 ? BIG : MID;
}

static void on_stream(pami_context_t ctx, void *cookie, const void *hdr,
                      size_t hlen, const void *data, size_t dlen,
                      pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie;
    pami_task_t origin;
    uint32_t    seq;
    pami_endpoint_query(origin_ep, &origin, NULL);
    MP_EXPECT(hlen == sizeof(seq) && origin < job.size && origin != job.me,
              "stream message of %zu header bytes from task %u", hlen,
              origin);
    memcpy(&seq, hdr, sizeof(seq));
    peers[origin].got++;
    if (data != NULL || dlen == 0) {
        long bad = mp_verify(data, dlen, origin, seq, 1);
        MP_EXPECT(bad < 0, "message %u from task %u wrong at byte %ld", seq,
                  origin, bad);
        return;
    }
    send_op_t *o = calloc(1, sizeof(*o));
    MP_EXPECT(o != NULL && dlen == send_len(seq), "%zu bytes from task %u "
              "in message %u", dlen, origin, seq);
    o->to  = origin;
    o->seq = seq;
    o->len = dlen;
    o->buf = malloc(dlen);
    MP_EXPECT(o->buf != NULL, "out of memory");
    recv->addr     = o->buf;
    recv->local_fn = on_fetched;
    recv->cookie   = o;
    recv_pending++;
}

/* Starts one message to t unless its window is full, it failed or limit
 * messages went to it. */
static void send_one(pami_task_t t, uint32_t limit)
{
    peer_t *p = &peers[t];
    if (p->failed != 0 || p->inflight >= WINDOW || p->seq >= limit)
        return;
    uint32_t seq = p->seq++;
    pami_endpoint_t to = mp_ep(&job, t, 0);
    if (seq % 2 == 0) {
        uint8_t data[SMALL];
        mp_fill(data, SMALL, job.me, seq, 1);
        pami_send_immediate_t s = {.dest = to, .dispatch = ID_STREAM,
                                   .header = &seq, .header_len = sizeof(seq),
                                   .data = data, .data_len = SMALL};
        pami_result_t rc = pami_send_immediate(job.ctx[0], &s);
        if (rc != PAMI_EAGAIN)
            result(t, rc, "immediate send");
        return;
    }
    size_t     len = send_len(seq);
    send_op_t *o   = calloc(1, sizeof(*o));
    MP_EXPECT(o != NULL, "out of memory");
    o->to  = t;
    o->seq = seq;
    o->buf = malloc(len);
    MP_EXPECT(o->buf != NULL, "out of memory");
    mp_fill(o->buf, len, job.me, seq, 1);
    pami_send_t s = {.send = {.dest = to, .dispatch = ID_STREAM,
                              .header = &seq, .header_len = sizeof(seq),
                              .data = o->buf, .data_len = len},
                     .local_fn = on_sent, .cookie = o};
    pami_result_t rc = pami_send(job.ctx[0], &s);
    if (rc == PAMI_SUCCESS) {
        p->inflight++;
        return;
    }
    free(o->buf);
    free(o);
    result(t, rc, "send");
}

/* One round of the stream: refill every window, then one blocking wait. */
static void stream_step(uint32_t limit)
{
    /* async: the progress thread does all progress; this thread only
     * sends, under the context's lock, and sleeps. */
    if (job.locked) {
        mp_lock(&job, job.ctx[0]);
        for (size_t k = 1; k < job.size; k++)
            send_one(mp_peer(&job, k), limit);
        /* async-burst: both threads progress, one after the other. */
        for (int i = 0; burst && i < 8; i++) {
            pami_context_advance(job.ctx[0], 16);
            pami_result_t rc = pami_context_wait(job.ctx[0], 1);
            MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT,
                      "pami_context_wait: %s", pami_error_text(rc));
        }
        mp_unlock(&job, job.ctx[0]);
        mp_sleep_ms(burst ? 2 : 20);
        return;
    }
    for (size_t k = 1; k < job.size; k++)
        send_one(mp_peer(&job, k), limit);
    pami_result_t rc = pami_context_wait(job.ctx[0], 20);
    MP_EXPECT(rc == PAMI_SUCCESS || rc == PAMI_TIMEOUT,
              "pami_context_wait: %s", pami_error_text(rc));
    sched_yield();
}

static bool other_side_failed(void)
{
    for (size_t t = 0; t < job.size; t++)
        if (peers[t].other && peers[t].failed == 0)
            return false;
    return true;
}

static bool drained(void)
{
    if (recv_pending != 0)
        return false;
    for (size_t t = 0; t < job.size; t++)
        if (peers[t].inflight != 0)
            return false;
    return true;
}

static void write_file(const char *dir, const char *what, const char *text)
{
    char path[1024], tmp[1100];
    snprintf(path, sizeof(path), "%s/%s-%u", dir, what, job.me);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    MP_EXPECT(f != NULL, "cannot write %s: %s", tmp, strerror(errno));
    fputs(text, f);
    MP_EXPECT(fclose(f) == 0 && rename(tmp, path) == 0, "cannot write %s",
              path);
}

static void on_last(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)data; (void)dlen;
    (void)recv;
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    MP_EXPECT(!peers[origin].other, "last message from task %u of the other "
              "side", origin);
    peers[origin].last_got++;
}

static void on_last_acked(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    pami_task_t t = (pami_task_t)(uintptr_t)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "last message to task %u of this side: %s",
              t, pami_error_text(rc));
    last_acked++;
}

static size_t last_received(void)
{
    size_t got = 0;
    for (size_t t = 0; t < job.size; t++)
        got += peers[t].last_got;
    return got;
}

/* Every task of this side: one message with remote_fn to each, one from
 * each. */
/* What handlers and callbacks change, read under the lock they run
 * with when the progress thread runs them (async). */
static bool locked(bool (*fn)(void))
{
    mp_lock(&job, job.ctx[0]);
    bool r = fn();
    mp_unlock(&job, job.ctx[0]);
    return r;
}

static size_t last_same;

static bool last_done(void)
{
    return last_acked == last_same && last_received() == last_same;
}

static void last_exchange(size_t same)
{
    last_same = same;
    mp_lock(&job, job.ctx[0]);
    for (size_t t = 0; t < job.size; t++) {
        if (t == job.me || peers[t].other)
            continue;
        pami_send_t s = {
            .send = {.dest = mp_ep(&job, (pami_task_t)t, 0),
                     .dispatch = ID_LAST, .header = &job.me,
                     .header_len = sizeof(job.me)},
            .remote_fn = on_last_acked, .cookie = (void *)(uintptr_t)t};
        MP_CHECK(pami_send(job.ctx[0], &s));
    }
    mp_unlock(&job, job.ctx[0]);
    MP_WAIT(&job, job.ctx[0], locked(last_done),
            MP_WAIT_S, "last exchange: %u of %zu acked, %zu of %zu received",
            last_acked, same, last_received(), same);
}

static bool all_streaming(void)
{
    uint32_t first = rndv ? 16 : 64;
    for (size_t t = 0; t < job.size; t++)
        if (t != job.me && (peers[t].got != first || peers[t].seq != first))
            return false;
    return true;
}

int main(int argc, char **argv)
{
    /* async: the eager stream with a progress thread, which alone
     * progresses once the stream runs (the liveness probe from it). */
    burst = argc > 4 && strcmp(argv[4], "async-burst") == 0;
    if (argc > 4 && (strcmp(argv[4], "async") == 0 || burst))
        setenv("PAMI_ASYNC_PROGRESS", "1", 1);
    mp_init(&job, "cluster_fault", &argc, argv, NULL, 1, false);
    MP_EXPECT(argc == 5 &&
                  (strcmp(argv[3], "kill") == 0 ||
                   strcmp(argv[3], "cut") == 0 ||
                   strcmp(argv[3], "stop") == 0 ||
                   strcmp(argv[3], "stop1") == 0) &&
                  (strcmp(argv[4], "eager") == 0 ||
                   strcmp(argv[4], "mixed") == 0 ||
                   strcmp(argv[4], "rndv") == 0 ||
                   strcmp(argv[4], "async") == 0 ||
                   strcmp(argv[4], "slow") == 0 || burst),
              "usage: cluster_fault DIR NODE kill|cut|stop|stop1 "
              "eager|mixed|rndv|async|async-burst|slow");
    mixed = strcmp(argv[4], "mixed") == 0;
    rndv  = strcmp(argv[4], "rndv") == 0;
    slow  = strcmp(argv[4], "slow") == 0;
    const char *dir    = argv[1];
    uint32_t    victim = (uint32_t)strtoul(argv[2], NULL, 10);
    /* Behind a cut link mpirun cannot forward output: it goes to
     * DIR/log-TASK, which the driver shows. */
    char log[1024];
    snprintf(log, sizeof(log), "%s/log-%u", dir, job.me);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    MP_EXPECT(fd >= 0 && dup2(fd, 1) == 1 && dup2(fd, 2) == 2,
              "cannot write %s: %s", log, strerror(errno));
    close(fd);
    MP_EXPECT(victim < job.attr.num_nodes && job.attr.num_nodes >= 2,
              "node %u of %zu", victim, job.attr.num_nodes);
    peers = calloc(job.size, sizeof(*peers));
    MP_EXPECT(peers != NULL, "out of memory");
    uint32_t my_node   = job.attr.task_node[job.me];
    /* stop1: the side of the fault is the first task of NODE alone. */
    bool     one       = strcmp(argv[3], "stop1") == 0;
    size_t   lead      = 0;
    while (job.attr.task_node[lead] != victim)
        lead++;
    bool     on_victim = one ? job.me == lead : my_node == victim;
    size_t others = 0, same = 0;
    for (size_t t = 0; t < job.size; t++) {
        if (t == job.me)
            continue;
        bool faulty    = one ? t == lead : job.attr.task_node[t] == victim;
        peers[t].other = faulty != on_victim;
        others += peers[t].other;
        same += !peers[t].other;
    }
    mp_lock(&job, job.ctx[0]);
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_STREAM, on_stream, NULL, NULL));
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_LAST, on_last, NULL, NULL));
    mp_unlock(&job, job.ctx[0]);
    MP_CHECK(pami_dispatch_fence(job.client));

    /* The stream runs everywhere: 64 messages (rndv: 16) to and from
     * every peer, then the message barrier. */
    uint32_t first = rndv ? 16 : 64;
    do
        stream_step(first);
    while (!locked(all_streaming));
    MP_WAIT(&job, job.ctx[0], locked(drained), MP_WAIT_S,
            "the first messages");
    mp_sync(&job);
    char line[256];
    snprintf(line, sizeof(line), "%ld\n", (long)getpid());
    write_file(dir, "ready", line);

    /* Behind a cut, streaming on until killed is all right. */
    bool   isolated = on_victim && strcmp(argv[3], "cut") == 0;
    double deadline = mp_now() + DETECT_S;
    while (!locked(other_side_failed)) {
        if (mp_now() > deadline && !isolated) {
            for (size_t t = 0; t < job.size; t++)
                if (peers[t].other && peers[t].failed == 0)
                    mp_fail("task %zu (node %u) not failed after %.0f s",
                            t, job.attr.task_node[t], DETECT_S);
        }
        stream_step(UINT32_MAX);
        if (slow)
            mp_sleep_ms(1200);
    }
    /* Everything toward the other side ends; this side keeps working. */
    MP_WAIT(&job, job.ctx[0], locked(drained), MP_WAIT_S,
            "operations left after the failures");
    last_exchange(same);

    pami_context_stats_t st;
    mp_lock(&job, job.ctx[0]);
    MP_CHECK(pami_context_stats(job.ctx[0], &st));
    mp_unlock(&job, job.ctx[0]);
    MP_EXPECT(st.peer_failures >= others, "%llu peer failures counted, %zu "
              "tasks failed", (unsigned long long)st.peer_failures, others);
    char  *text = malloc(64 * job.size + 1);
    size_t used = 0;
    MP_EXPECT(text != NULL, "out of memory");
    text[0] = '\0';
    for (size_t t = 0; t < job.size; t++)
        if (peers[t].other)
            used += (size_t)sprintf(text + used, "%zu %.6f\n", t,
                                    peers[t].failed);
    write_file(dir, "detect", text);
    free(text);

    /* Its shutdown barrier fails at once after a failure (guide.md). */
    double        t0 = mp_now();
    pami_result_t rc = pami_client_destroy(&job.client);
    MP_EXPECT(rc == PAMI_PEER_FAILED || rc == PAMI_SUCCESS,
              "pami_client_destroy: %s", pami_error_text(rc));
    MP_EXPECT(job.client == NULL, "pami_client_destroy kept the client");
    snprintf(line, sizeof(line), "%.6f\n", mp_now() - t0);
    write_file(dir, "done", line);
    printf("cluster_fault: task %u (node %u): %zu tasks failed, destroy "
           "took %s", job.me, my_node, others, line);
    free(peers);
    return 0;
}

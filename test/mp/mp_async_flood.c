/*
 * mp_async_flood: nothing the program starts while the progress thread
 * sleeps may wait for another wakeup. Run with PAMI_ASYNC_PROGRESS=1 (or
 * --param: the async_progress field of the client params); the
 * main thread never advances and, while it waits, never touches the
 * context (it reads atomic counters), so only the progress thread can
 * finish what main started.
 *
 * 1. Lone rounds: in round r only task r % size sends, to every other
 *    task, `per_round` messages by pami_send with local_fn only (small
 *    ones complete at once inside the call and wait for progress to
 *    report it; nothing comes back to wake the sender). Every task
 *    sleeps a while before each round so that every progress thread is
 *    asleep when the round's sends are made.
 * 2. Bursts: in round r task r % size sends 400 messages (immediate sends
 *    and pami_send with local_fn) to the next task, all others idle (a
 *    barrier before each round), whose handler takes 20 ms over the
 *    first; the shared-memory queue between them fills, and the rest wait
 *    inside UCX for room that only the sender's progress gives them.
 *    Before the fix the progress thread slept through them and the round
 *    never ended, at every job size.
 * 3. Flood: every task sends `count` messages to every other task, mixed:
 *    header only, 200 bytes and every 50th above the rendezvous threshold;
 *    immediate sends, pami_send with local_fn, every 5th also remote_fn;
 *    a pause every 1000 messages lets the progress thread fall asleep.
 * 4. A message barrier with the same rules.
 *
 * Every message is counted per origin, checked in order and byte for
 * byte; every callback is counted; each wait fails with the counts after
 * its bound. Handlers and callbacks must all run on the progress thread.
 *
 *   PAMI_ASYNC_PROGRESS=1 pamirun -n N mp_async_flood [count [rounds]]
 *   mpirun -np N mp_async_flood --param [count [rounds]]
 *
 * The suite runs 2 tasks with count 3000 and 8 with 1500, 24 rounds
 * each (8 tasks: about 12 s under ASan); the larger
 * manual setting of the original report (8 tasks on 2 cores, 140 280
 * messages per task):
 *
 *   PAMI_ASYNC_PROGRESS=1 pamirun -n 8 --timeout 300 mp_async_flood 20040 64
 */
#include "mp_util.h"

#include <pthread.h>

enum { ID_FLOOD = 81, ID_BAR = 82 };

/* Each wait's bound; the whole program stays below the suite's 60 s. */
#define LONE_WAIT_S  10.0
#define FLOOD_WAIT_S 40.0

typedef struct {
    uint64_t seq;
    uint32_t stall_ms; /* the handler takes this long (a slow receiver) */
    uint32_t reserved;
} msg_hdr_t;

typedef enum { SEND_IMM, SEND_LOCAL, SEND_REMOTE } send_mode_t;

static mp_job_t  job;
static uint64_t  count     = 3000;
static unsigned  rounds    = 24;
static unsigned  per_round = 3;
static unsigned  burst     = 400;
static size_t    big;
static pthread_t main_thread;
static atomic_bool counting;

/* Written by handlers and callbacks (progress thread, context lock held),
 * read by main without the lock. */
static _Atomic uint64_t *next_seq;  /* per origin: messages in, in order */
static _Atomic uint64_t  received;
static _Atomic uint64_t  rndv_pending;
static _Atomic uint64_t  locals, remotes;
static _Atomic uint64_t  on_main;
static _Atomic uint64_t  bar_seen[2];
static _Atomic uint64_t  bar_sent;
static uint32_t          bar_epoch; /* main's */
/* Main's own: what it sent and what it expects back. */
static uint64_t *sent_seq;          /* per destination */
static uint64_t  expect_locals, expect_remotes;

static size_t size_of(uint64_t seq)
{
    return seq % 50 == 25 ? big : seq % 3 == 1 ? 200 : 0;
}

static void note_thread(void)
{
    if (atomic_load(&counting) && pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&on_main, 1);
}

static void on_rndv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    note_thread();
    mp_pending_end(cookie, rc, big, 9);
    atomic_fetch_sub(&rndv_pending, 1);
}

static void on_msg(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin_ep, pami_recv_t *recv)
{
    (void)ctx; (void)cookie;
    note_thread();
    pami_task_t origin;
    pami_endpoint_query(origin_ep, &origin, NULL);
    msg_hdr_t h;
    MP_EXPECT(hlen == sizeof(h), "header of %zu bytes", hlen);
    memcpy(&h, hdr, sizeof(h));
    uint64_t want = atomic_load(&next_seq[origin]);
    MP_EXPECT(h.seq == want, "message %llu from task %u, expected %llu",
              (unsigned long long)h.seq, origin, (unsigned long long)want);
    MP_EXPECT(dlen == size_of(h.seq), "message %llu: %zu bytes",
              (unsigned long long)h.seq, dlen);
    if (h.stall_ms > 0)
        mp_sleep_ms(h.stall_ms);
    if (data != NULL || dlen == 0) {
        mp_expect_payload(data, dlen, origin, h.seq, 9);
    } else {
        mp_recv_into_new(recv, dlen, origin, h.seq, on_rndv_done);
        atomic_fetch_add(&rndv_pending, 1);
    }
    atomic_fetch_add(&received, 1);
    /* Last: main reads this to know the message is in. */
    atomic_store(&next_seq[origin], want + 1);
}

/* The send's buffer is ours until local_fn. */
static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    note_thread();
    MP_EXPECT(rc == PAMI_SUCCESS, "local_fn: %s", pami_error_text(rc));
    free(cookie);
    atomic_fetch_add(&locals, 1);
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    note_thread();
    MP_EXPECT(rc == PAMI_SUCCESS, "remote_fn: %s", pami_error_text(rc));
    atomic_fetch_add(&remotes, 1);
}

static void on_bar(pami_context_t ctx, void *cookie, const void *hdr,
                   size_t hlen, const void *data, size_t dlen,
                   pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)dlen; (void)origin;
    (void)recv;
    uint32_t epoch;
    MP_EXPECT(hlen == sizeof(epoch), "barrier header of %zu bytes", hlen);
    memcpy(&epoch, hdr, sizeof(epoch));
    atomic_fetch_add(&bar_seen[epoch % 2], 1);
}

static void on_bar_sent(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    MP_EXPECT(rc == PAMI_SUCCESS, "barrier send: %s", pami_error_text(rc));
    atomic_fetch_add(&bar_sent, 1);
}

/* Sleeps (never advancing, never locking) until cond holds. */
#define WAIT_UNTIL(cond, secs, ...)                                         \
    do {                                                                    \
        double deadline_ = mp_now() + (secs);                               \
        while (!(cond)) {                                                   \
            if (mp_now() > deadline_)                                       \
                mp_fail(__VA_ARGS__);                                       \
            mp_sleep_ms(1);                                                 \
        }                                                                   \
    } while (0)

/* One message to task `to`; the context lock is held only for the call.
 * An immediate send answering PAMI_EAGAIN is retried after a sleep. */
static void send_one(pami_task_t to, send_mode_t mode, uint32_t stall_ms)
{
    pami_context_t ctx = job.ctx[0];
    uint64_t  seq = sent_seq[to]++;
    size_t    len = size_of(seq);
    msg_hdr_t h   = {.seq = seq, .stall_ms = stall_ms};
    uint8_t  *buf = NULL;
    if (len > 0) {
        buf = malloc(len);
        MP_EXPECT(buf != NULL, "out of memory");
        mp_fill(buf, len, job.me, seq, 9);
    }
    pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0),
                               .dispatch = ID_FLOOD, .header = &h,
                               .header_len = sizeof(h), .data = buf,
                               .data_len = len};
    if (mode == SEND_IMM && sizeof(h) + len <= job.attr.immediate_max) {
        mp_send_imm_no_advance(ctx, &s);
        free(buf);
        return;
    }
    bool remote = mode == SEND_REMOTE;
    pami_send_t ps = {.send = s, .local_fn = on_local,
                      .remote_fn = remote ? on_remote : NULL,
                      .cookie = buf};
    expect_locals++;
    expect_remotes += remote;
    MP_CHECK(pami_context_lock(ctx));
    MP_CHECK(pami_send(ctx, &ps));
    MP_CHECK(pami_context_unlock(ctx));
}

/* Tasks run ahead of each other: a later round's messages may come
 * first. */
static bool peers_in(const uint64_t *want)
{
    for (size_t t = 0; t < job.size; t++)
        if (t != job.me && atomic_load(&next_seq[t]) < want[t])
            return false;
    return true;
}

/* "task:in/wanted" for each task that is behind, for failure lines. */
static const char *behind(const uint64_t *want)
{
    static char line[512];
    size_t      len = 0;
    line[0] = '\0';
    for (size_t t = 0; t < job.size && len < sizeof(line) - 64; t++) {
        uint64_t in = atomic_load(&next_seq[t]);
        if (t != job.me && in < want[t])
            len += (size_t)snprintf(line + len, sizeof(line) - len,
                                    " %zu:%llu/%llu", t,
                                    (unsigned long long)in,
                                    (unsigned long long)want[t]);
    }
    return line;
}

static uint64_t in_total(void)
{
    uint64_t n = 0;
    for (size_t t = 0; t < job.size; t++)
        n += atomic_load(&next_seq[t]);
    return n;
}

static void lone_rounds(uint64_t *want)
{
    for (unsigned r = 0; r < rounds; r++) {
        pami_task_t sender = (pami_task_t)(r % job.size);
        /* Long enough for every progress thread to go to sleep. */
        mp_sleep_ms(3);
        if (sender == job.me) {
            for (size_t k = 1; k < job.size; k++)
                for (unsigned i = 0; i < per_round; i++)
                    send_one(mp_peer(&job, k), SEND_LOCAL, 0);
            WAIT_UNTIL(atomic_load(&locals) == expect_locals, LONE_WAIT_S,
                       "lone round %u: %llu of %llu local completions "
                       "after %.0f s; the progress thread was not woken "
                       "for what this thread started", r,
                       (unsigned long long)atomic_load(&locals),
                       (unsigned long long)expect_locals, LONE_WAIT_S);
        } else {
            want[sender] += per_round;
            WAIT_UNTIL(peers_in(want) && atomic_load(&rndv_pending) == 0,
                       LONE_WAIT_S,
                       "lone round %u (task %u sends): behind:%s; %llu "
                       "receives pending after %.0f s", r, sender,
                       behind(want),
                       (unsigned long long)atomic_load(&rndv_pending),
                       LONE_WAIT_S);
        }
    }
}

static void barrier_no_advance(uint32_t epoch)
{
    atomic_store(&bar_sent, 0);
    for (size_t k = 1; k < job.size; k++) {
        pami_send_t s = {
            .send = {.dest = mp_ep(&job, mp_peer(&job, k), 0),
                     .dispatch = ID_BAR, .header = &epoch,
                     .header_len = sizeof(epoch)},
            .local_fn = on_bar_sent};
        MP_CHECK(pami_context_lock(job.ctx[0]));
        MP_CHECK(pami_send(job.ctx[0], &s));
        MP_CHECK(pami_context_unlock(job.ctx[0]));
    }
    _Atomic uint64_t *seen = &bar_seen[epoch % 2];
    WAIT_UNTIL(atomic_load(seen) == job.size - 1 &&
                   atomic_load(&bar_sent) == job.size - 1,
               LONE_WAIT_S, "barrier %u: %llu of %zu peers, %llu of our "
               "messages out", epoch, (unsigned long long)atomic_load(seen),
               job.size - 1, (unsigned long long)atomic_load(&bar_sent));
    atomic_store(seen, 0);
}

/* Round r: task r % size sends `burst` messages (immediate and pami_send)
 * to the next task, whose handler takes 20 ms over the first: the
 * shared-memory queue between them fills and the rest wait in the
 * transport for room, which only the sender's progress can give them.
 * The sender waits for its local completions, the target for the
 * messages. */
static void bursts(uint64_t *want)
{
    for (unsigned r = 0; r < rounds; r++) {
        pami_task_t sender = (pami_task_t)(r % job.size);
        pami_task_t to     = (pami_task_t)((r + 1) % job.size);
        /* Alone: no other traffic may wake the sender's progress thread
         * by chance. */
        barrier_no_advance(bar_epoch++);
        mp_sleep_ms(3);
        if (sender == job.me) {
            for (unsigned i = 0; i < burst; i++)
                send_one(to, i % 2 == 0 ? SEND_IMM : SEND_LOCAL,
                         i == 0 ? 20 : 0);
            /* Nothing comes back: only our own progress moves them. */
            WAIT_UNTIL(atomic_load(&locals) == expect_locals, LONE_WAIT_S,
                       "burst round %u: %llu of %llu local completions "
                       "after %.0f s; the sends queued for room were not "
                       "moved", r, (unsigned long long)atomic_load(&locals),
                       (unsigned long long)expect_locals, LONE_WAIT_S);
        } else if (to == job.me) {
            want[sender] += burst;
            WAIT_UNTIL(peers_in(want) && atomic_load(&rndv_pending) == 0,
                       LONE_WAIT_S,
                       "burst round %u (task %u sends %u): behind:%s; %llu "
                       "receives pending after %.0f s", r, sender, burst,
                       behind(want),
                       (unsigned long long)atomic_load(&rndv_pending),
                       LONE_WAIT_S);
        }
    }
}

static void flood(uint64_t *want)
{
    uint64_t expect_in = 0;
    for (size_t t = 0; t < job.size; t++)
        if (t != job.me) {
            want[t] += count;
            expect_in += want[t];
        }
    for (uint64_t i = 0; i < count; i++) {
        send_mode_t mode = i % 2 == 0   ? SEND_IMM
                           : i % 5 == 0 ? SEND_REMOTE
                                        : SEND_LOCAL;
        for (size_t k = 1; k < job.size; k++)
            send_one(mp_peer(&job, k), mode, 0);
        if (i % 1000 == 999)
            mp_sleep_ms(2);
    }
    WAIT_UNTIL(peers_in(want) && atomic_load(&rndv_pending) == 0 &&
                   atomic_load(&locals) == expect_locals &&
                   atomic_load(&remotes) == expect_remotes,
               FLOOD_WAIT_S,
               "flood: %llu of %llu messages in (behind:%s), %llu "
               "receives pending, "
               "%llu of %llu local and %llu of %llu remote completions "
               "after %.0f s with main asleep",
               (unsigned long long)in_total(), (unsigned long long)expect_in,
               behind(want),
               (unsigned long long)atomic_load(&rndv_pending),
               (unsigned long long)atomic_load(&locals),
               (unsigned long long)expect_locals,
               (unsigned long long)atomic_load(&remotes),
               (unsigned long long)expect_remotes, FLOOD_WAIT_S);
}

int main(int argc, char **argv)
{
    /* --param anywhere (mpirun's tests put their --expect options first). */
    bool param = false;
    int  kept  = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--param") == 0)
            param = true;
        else
            argv[kept++] = argv[i];
    }
    argc       = kept;
    argv[argc] = NULL;
    pami_client_params_t params = {
        .field_mask     = PAMI_CLIENT_PARAM_ASYNC_PROGRESS,
        .async_progress = 1};
    mp_init(&job, "mp_async_flood", &argc, argv, param ? &params : NULL, 1,
            false);
    if (argc > 1)
        count = strtoull(argv[1], NULL, 10);
    if (argc > 2)
        rounds = (unsigned)strtoul(argv[2], NULL, 10);
    MP_EXPECT(job.locked, "run with PAMI_ASYNC_PROGRESS=1 or --param");
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    big = job.attr.rndv_threshold + 4000;
    if (big < 100 * 1024)
        big = 100 * 1024;
    main_thread = pthread_self();
    next_seq = calloc(job.size, sizeof(*next_seq));
    sent_seq = calloc(job.size, sizeof(*sent_seq));
    uint64_t *want = calloc(job.size, sizeof(*want));
    MP_EXPECT(next_seq != NULL && sent_seq != NULL && want != NULL,
              "out of memory");
    pami_context_t ctx = job.ctx[0];
    MP_CHECK(pami_context_lock(ctx));
    MP_CHECK(pami_dispatch_set(ctx, ID_FLOOD, on_msg, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_BAR, on_bar, NULL, NULL));
    MP_CHECK(pami_context_unlock(ctx));
    /* The fence may run handlers on this thread; from here on main never
     * does. */
    MP_CHECK(pami_dispatch_fence(job.client));
    atomic_store(&counting, true);

    double t0 = mp_now();
    lone_rounds(want);
    bursts(want);
    double t_lone = mp_now() - t0;
    flood(want);
    double t_flood = mp_now() - t0 - t_lone;
    barrier_no_advance(bar_epoch++);
    barrier_no_advance(bar_epoch++);

    MP_CHECK(pami_context_lock(ctx));
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(ctx, &st));
    MP_CHECK(pami_context_unlock(ctx));
    MP_EXPECT(atomic_load(&on_main) == 0,
              "%llu handlers or callbacks ran on the main thread",
              (unsigned long long)atomic_load(&on_main));
    uint64_t expect_in = 0;
    for (size_t t = 0; t < job.size; t++)
        expect_in += want[t];
    MP_EXPECT(in_total() == expect_in, "%llu messages in, %llu sent to us",
              (unsigned long long)in_total(), (unsigned long long)expect_in);
    MP_EXPECT(atomic_load(&received) == in_total(),
              "%llu messages counted, %llu in sequence",
              (unsigned long long)atomic_load(&received),
              (unsigned long long)in_total());
    MP_EXPECT(st.receives >= atomic_load(&received),
              "stats count %llu receives", (unsigned long long)st.receives);
    printf("%u lone rounds of %u messages and %u bursts of %u in %.3f s; "
           "%llu messages to each of %zu peers in %.3f s; %llu messages in, "
           "all callbacks run by the progress thread, main never advanced\n",
           rounds, per_round, rounds, burst, t_lone, (unsigned long long)count,
           job.size - 1, t_flood,
           (unsigned long long)atomic_load(&received));
    mp_finish(&job);
    free(next_seq);
    free(sent_seq);
    free(want);
    return 0;
}

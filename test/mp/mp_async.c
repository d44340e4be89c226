/*
 * mp_async: delivery by the progress thread (PAMI_ASYNC_PROGRESS=1 in the
 * environment, or with --param the async_progress field of the client
 * params) while the main thread never advances.
 *
 * Every task sends `count` messages (default 2000) to every other task:
 * header only, 200 bytes, and every 100th 100 KiB (received into a buffer
 * the handler gives), some with local_fn and remote_fn. The main thread
 * holds the context lock around each of its calls and, instead of
 * advancing, sleeps, and reads the counters under pami_context_lock until
 * all messages are in and all callbacks ran. The handlers and callbacks
 * must run on another thread than main (after pami_dispatch_fence, which
 * may progress). The closing barrier also runs without the main thread
 * advancing.
 *
 *   PAMI_ASYNC_PROGRESS=1 pamirun -n N mp_async [count]
 *   pamirun -n N mp_async --param [count]
 */
#include "mp_util.h"

#include <pthread.h>

enum { ID_ASYNC = 80 };

#define BIG (100 * 1024)

typedef struct {
    uint64_t seq;
} msg_hdr_t;

static mp_job_t  job;
static uint64_t  count = 2000;
static pthread_t main_thread;
static bool      counting; /* set after the fence, which may progress */

/* Written by handlers and callbacks on the progress thread (context lock
 * held); read by main under the lock. */
static uint64_t *next_seq;
static uint64_t  received;
static uint64_t  rndv_pending;
static uint64_t  locals, remotes, expect_locals, expect_remotes;
static uint64_t  on_main;         /* handlers or callbacks run by main */

static size_t size_of(uint64_t seq)
{
    return seq % 100 == 50 ? BIG : seq % 3 == 1 ? 200 : 0;
}

static void note_thread(void)
{
    if (counting && pthread_equal(pthread_self(), main_thread))
        on_main++;
}

static void on_rndv_done(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx;
    note_thread();
    mp_pending_end(cookie, rc, BIG, 8);
    rndv_pending--;
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
    MP_EXPECT(h.seq == next_seq[origin], "message %llu from task %u, "
                                         "expected %llu",
              (unsigned long long)h.seq, origin,
              (unsigned long long)next_seq[origin]);
    next_seq[origin]++;
    MP_EXPECT(dlen == size_of(h.seq), "message %llu: %zu bytes",
              (unsigned long long)h.seq, dlen);
    received++;
    if (data != NULL || dlen == 0) {
        mp_expect_payload(data, dlen, origin, h.seq, 8);
        return;
    }
    mp_recv_into_new(recv, dlen, origin, h.seq, on_rndv_done);
    rndv_pending++;
}

static void on_local(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    note_thread();
    MP_EXPECT(rc == PAMI_SUCCESS, "local_fn: %s", pami_error_text(rc));
    locals++;
}

static void on_remote(pami_context_t ctx, void *cookie, pami_result_t rc)
{
    (void)ctx; (void)cookie;
    note_thread();
    MP_EXPECT(rc == PAMI_SUCCESS, "remote_fn: %s", pami_error_text(rc));
    remotes++;
}

/* Sleeps until cond (evaluated under the context lock) holds. */
#define SLEEP_UNTIL(cond, ...)                                              \
    do {                                                                    \
        double deadline_ = mp_now() + MP_WAIT_S;                            \
        for (;;) {                                                          \
            MP_CHECK(pami_context_lock(job.ctx[0]));                        \
            bool ok_ = (cond);                                              \
            MP_CHECK(pami_context_unlock(job.ctx[0]));                      \
            if (ok_)                                                        \
                break;                                                      \
            if (mp_now() > deadline_)                                       \
                mp_fail(__VA_ARGS__);                                       \
            mp_sleep_ms(5);                                                 \
        }                                                                   \
    } while (0)

static bool all_in(void)
{
    for (size_t t = 0; t < job.size; t++)
        if (t != job.me && next_seq[t] != count)
            return false;
    return rndv_pending == 0 && locals == expect_locals &&
           remotes == expect_remotes;
}

/* The message barrier of mp_util, without advancing. */
static void sync_no_advance(void)
{
    struct mp_sync_state *st    = &job.sync[0];
    uint32_t              epoch = st->epoch++;
    atomic_store(&st->sent, 0);
    for (size_t k = 1; k < job.size; k++) {
        pami_send_t s = {
            .send = {.dest = mp_ep(&job, mp_peer(&job, k), 0),
                     .dispatch = MP_ID_SYNC, .header = &epoch,
                     .header_len = sizeof(epoch)},
            .local_fn = mp_on_sync_sent,
            .cookie   = st};
        MP_CHECK(pami_context_lock(job.ctx[0]));
        MP_CHECK(pami_send(job.ctx[0], &s));
        MP_CHECK(pami_context_unlock(job.ctx[0]));
    }
    atomic_uint *seen = &st->seen[epoch % MP_SYNC_EPOCHS];
    SLEEP_UNTIL(atomic_load(seen) >= job.size - 1 &&
                    atomic_load(&st->sent) == job.size - 1,
                "barrier %u: %u of %zu peers", epoch, atomic_load(seen),
                job.size - 1);
    atomic_store(seen, 0);
}

int main(int argc, char **argv)
{
    bool param = argc > 1 && strcmp(argv[1], "--param") == 0;
    pami_client_params_t params = {
        .field_mask     = PAMI_CLIENT_PARAM_ASYNC_PROGRESS,
        .async_progress = 1};
    mp_init(&job, "mp_async", &argc, argv, param ? &params : NULL, 1, false);
    if (param) {
        argv++;
        argc--;
    }
    if (argc > 1)
        count = strtoull(argv[1], NULL, 10);
    MP_EXPECT(job.locked, "run with PAMI_ASYNC_PROGRESS=1 or --param");
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    main_thread = pthread_self();
    pami_context_t ctx = job.ctx[0];
    next_seq = calloc(job.size, sizeof(*next_seq));
    MP_EXPECT(next_seq != NULL, "out of memory");
    MP_CHECK(pami_context_lock(ctx));
    MP_CHECK(pami_dispatch_set(ctx, ID_ASYNC, on_msg, NULL, NULL));
    MP_CHECK(pami_context_unlock(ctx));
    /* The fence may run handlers on this thread (it progresses the
     * contexts, under their locks); from here on main never does. */
    MP_CHECK(pami_dispatch_fence(job.client));
    MP_CHECK(pami_context_lock(ctx));
    counting = true;
    MP_CHECK(pami_context_unlock(ctx));

    double t0 = mp_now();
    uint8_t **bufs = calloc(count, sizeof(*bufs));
    MP_EXPECT(bufs != NULL, "out of memory");
    for (uint64_t seq = 0; seq < count; seq++) {
        msg_hdr_t h   = {seq};
        size_t    len = size_of(seq);
        if (len > 0) {
            bufs[seq] = malloc(len);
            MP_EXPECT(bufs[seq] != NULL, "out of memory");
            mp_fill(bufs[seq], len, job.me, seq, 8);
        }
        for (size_t k = 1; k < job.size; k++) {
            pami_send_immediate_t s = {
                .dest = mp_ep(&job, mp_peer(&job, k), 0),
                .dispatch = ID_ASYNC, .header = &h, .header_len = sizeof(h),
                .data = bufs[seq], .data_len = len};
            if (len == 0 && seq % 2 == 0) {
                mp_send_imm_no_advance(job.ctx[0], &s);
                continue;
            }
            bool remote = seq % 5 == 0;
            pami_send_t ps = {.send = s, .local_fn = on_local,
                              .remote_fn = remote ? on_remote : NULL};
            MP_CHECK(pami_context_lock(ctx));
            expect_locals++;
            expect_remotes += remote;
            MP_CHECK(pami_send(ctx, &ps));
            MP_CHECK(pami_context_unlock(ctx));
        }
    }
    double t_send = mp_now() - t0;
    SLEEP_UNTIL(all_in(),
                "progress thread delivered %llu of %llu messages, %llu of "
                "%llu local and %llu of %llu remote completions, %llu "
                "receives pending, while main slept",
                (unsigned long long)received,
                (unsigned long long)(count * (job.size - 1)),
                (unsigned long long)locals, (unsigned long long)expect_locals,
                (unsigned long long)remotes,
                (unsigned long long)expect_remotes,
                (unsigned long long)rndv_pending);
    double t_all = mp_now() - t0;
    sync_no_advance();

    MP_CHECK(pami_context_lock(ctx));
    pami_context_stats_t st;
    MP_CHECK(pami_context_stats(ctx, &st));
    bool     ok     = all_in() && received == count * (job.size - 1);
    uint64_t main_n = on_main;
    MP_CHECK(pami_context_unlock(ctx));
    MP_EXPECT(ok, "counts changed after the barrier");
    MP_EXPECT(main_n == 0,
              "%llu handlers or callbacks ran on the main thread",
              (unsigned long long)main_n);
    MP_EXPECT(st.receives >= received, "stats count %llu receives",
              (unsigned long long)st.receives);
    printf("%s: %llu messages to each of %zu peers, sent in %.3f s, all "
           "delivered and completed by the progress thread after %.3f s, "
           "main thread never advanced\n",
           param ? "async_progress param" : "PAMI_ASYNC_PROGRESS=1",
           (unsigned long long)count, job.size - 1, t_send, t_all);
    mp_finish(&job);
    for (uint64_t seq = 0; seq < count; seq++)
        free(bufs[seq]);
    free(bufs);
    free(next_seq);
    return 0;
}

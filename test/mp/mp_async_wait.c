/*
 * mp_async_wait: blocking waits are woken by every source, at any moment,
 * and never spin. Thousands of short rounds, each with one event made at a
 * random moment around the waiter going to sleep, so that an event falling
 * between "nothing to do" and "asleep" is exercised many times. A wakeup
 * lost there leaves a round unfinished: a watchdog fails the test when no
 * round ends for 10 s. Run with PAMI_PEER_ERRORS=0 so that a wait(-1) has
 * no periodic wakeup of its own that could hide a lost one.
 *
 * Without a progress thread:
 *  1. posts: a thread posts one item per round after 0-300 us while main
 *     sits in pami_context_wait(ctx, -1); the item answers PAMI_EAGAIN
 *     round % 3 times and must run exactly that many times more once.
 *  2. ping-pong: tasks in pairs, each side in wait(-1) until the other's
 *     message comes; the answer leaves after 0-200 us.
 * With PAMI_ASYNC_PROGRESS=1 the same rounds, but main alternates between
 * sleeping (never touching the context: the progress thread must run the
 * work and the handlers) and holding the lock in wait(-1); then
 *  3. hold: task 1 holds its context locked for 400 ms, without
 *     advancing, and tells task 0, which then sends to it: the progress
 *     thread must not spin meanwhile (less than 10 % CPU over the hold),
 *     and the messages are handled once the lock is let go.
 *
 *   PAMI_PEER_ERRORS=0 pamirun -n N mp_async_wait [rounds]
 *   PAMI_PEER_ERRORS=0 PAMI_ASYNC_PROGRESS=1 pamirun -n N mp_async_wait
 */
#include "mp_util.h"

#include <pthread.h>
#include <sys/resource.h>

enum { ID_PING = 83, ID_HOLD = 84 };

#define WATCHDOG_S 10
#define HOLD_MS    400.0
#define HOLD_MSGS  20
#define CPU_SHARE  0.10

static mp_job_t job;
static unsigned rounds = 3000;
static uint64_t seed;

static unsigned rnd(unsigned n)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (unsigned)(seed % n);
}

static void sleep_us(unsigned us)
{
    if (us > 0)
        mp_sleep_ms(us / 1000.0);
}

static _Atomic unsigned pings_in; /* ping-pong: messages from the partner */
static _Atomic unsigned pdone;    /* posts: rounds whose item finished */

/* ---- watchdog: fails when no round ends for WATCHDOG_S ---- */

static atomic_uint  wd_mark;
static const char  *_Atomic wd_phase;
static atomic_bool  wd_stop;

static void *watchdog(void *arg)
{
    (void)arg;
    unsigned last  = atomic_load(&wd_mark);
    double   since = mp_now();
    while (!atomic_load(&wd_stop)) {
        mp_sleep_ms(100);
        unsigned now = atomic_load(&wd_mark);
        if (now != last) {
            last  = now;
            since = mp_now();
        } else if (mp_now() - since > WATCHDOG_S) {
            /* Tells a lost wakeup here (an advance finds the event) from
             * an event that never came. */
            unsigned pings = atomic_load(&pings_in), posts = atomic_load(&pdone);
            pami_result_t lrc = pami_context_trylock(job.ctx[0]);
            if (lrc == PAMI_SUCCESS) {
                for (int i = 0; i < 100; i++)
                    pami_context_advance(job.ctx[0], 1);
                pami_context_unlock(job.ctx[0]);
            }
            mp_fail("watchdog: %s, round %u, not done in %d s: a wakeup "
                    "was lost (%s; pings %u -> %u, posts %u -> %u)",
                    atomic_load(&wd_phase), now, WATCHDOG_S,
                    lrc == PAMI_SUCCESS ? "advanced it from the watchdog"
                                        : "context held",
                    pings, atomic_load(&pings_in), posts,
                    atomic_load(&pdone));
        }
    }
    return NULL;
}

static void round_done(void)
{
    atomic_fetch_add(&wd_mark, 1);
}

/* ---- waiting for a flag ---- */

/* Until *flag >= want. style 0: wait(-1) (under the lock when there is a
 * progress thread); style 1: sleep without touching the context. */
static void wait_flag(_Atomic unsigned *flag, unsigned want, int style)
{
    pami_context_t ctx = job.ctx[0];
    if (style == 1) {
        while (atomic_load(flag) < want)
            mp_sleep_ms(0.1);
        return;
    }
    mp_lock(&job, ctx);
    while (atomic_load(flag) < want) {
        pami_result_t rc = pami_context_wait(ctx, -1);
        MP_EXPECT(rc == PAMI_SUCCESS, "wait(-1) returned %s",
                  pami_error_text(rc));
    }
    mp_unlock(&job, ctx);
}

static int style_of(unsigned r)
{
    return job.locked ? (int)(r % 2) : 0;
}

/* ---- 1: posts ---- */

static pami_work_t      pwork;
static _Atomic unsigned pruns;  /* runs of the item this round */
static unsigned         pagain; /* PAMI_EAGAIN answers left (in fn only) */
static uint64_t         posted_ns;
static double           post_max_ms;

static pthread_mutex_t  go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t   go_cond = PTHREAD_COND_INITIALIZER;
static unsigned         go_round; /* rounds released to the poster */
static unsigned         go_delay_us;
static bool             go_stop;

static pami_result_t post_fn(pami_context_t ctx, void *cookie)
{
    (void)ctx; (void)cookie;
    atomic_fetch_add(&pruns, 1);
    if (pagain > 0) {
        pagain--;
        return PAMI_EAGAIN;
    }
    atomic_fetch_add(&pdone, 1);
    return PAMI_SUCCESS;
}

static void *poster(void *arg)
{
    (void)arg;
    unsigned seen = 0;
    pthread_mutex_lock(&go_lock);
    for (;;) {
        while (go_round == seen && !go_stop)
            pthread_cond_wait(&go_cond, &go_lock);
        if (go_stop)
            break;
        seen = go_round;
        unsigned delay = go_delay_us;
        pthread_mutex_unlock(&go_lock);
        sleep_us(delay);
        __atomic_store_n(&posted_ns, (uint64_t)(mp_now() * 1e9),
                         __ATOMIC_RELEASE);
        MP_CHECK(pami_context_post(job.ctx[0], &pwork, post_fn, NULL));
        pthread_mutex_lock(&go_lock);
    }
    pthread_mutex_unlock(&go_lock);
    return NULL;
}

static void posts(void)
{
    atomic_store(&wd_phase, "posts");
    pthread_t th;
    MP_EXPECT(pthread_create(&th, NULL, poster, NULL) == 0, "no thread");
    for (unsigned r = 0; r < rounds; r++) {
        unsigned again = r % 3;
        /* The previous item ran to its end: pwork is free again. */
        pagain = again;
        atomic_store(&pruns, 0);
        pthread_mutex_lock(&go_lock);
        go_delay_us = rnd(4) == 0 ? 0 : rnd(300);
        go_round++;
        pthread_cond_signal(&go_cond);
        pthread_mutex_unlock(&go_lock);
        wait_flag(&pdone, r + 1, style_of(r));
        double ms = mp_now() * 1e3 -
                    (double)__atomic_load_n(&posted_ns, __ATOMIC_ACQUIRE) /
                        1e6;
        if (ms > post_max_ms)
            post_max_ms = ms;
        MP_EXPECT(atomic_load(&pruns) == again + 1,
                  "posts round %u: the item ran %u times, expected %u", r,
                  atomic_load(&pruns), again + 1);
        round_done();
    }
    pthread_mutex_lock(&go_lock);
    go_stop = true;
    pthread_cond_signal(&go_cond);
    pthread_mutex_unlock(&go_lock);
    pthread_join(th, NULL);
}

/* ---- 2: ping-pong ---- */

static double           pong_max_ms;

static void on_ping(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)origin; (void)recv;
    uint32_t r;
    MP_EXPECT(hlen == sizeof(r) && dlen == 0, "ping of %zu + %zu bytes",
              hlen, dlen);
    memcpy(&r, hdr, sizeof(r));
    MP_EXPECT(r == atomic_load(&pings_in), "ping %u, expected %u", r,
              atomic_load(&pings_in));
    atomic_store(&pings_in, r + 1);
}

static void send_ping(pami_task_t to, uint32_t r)
{
    pami_send_immediate_t s = {.dest = mp_ep(&job, to, 0),
                               .dispatch = ID_PING, .header = &r,
                               .header_len = sizeof(r)};
    mp_send_imm(&job, job.ctx[0], &s);
}

static void ping_pong(void)
{
    atomic_store(&wd_phase, "ping-pong");
    pami_task_t partner = job.me ^ 1u;
    bool        first   = job.me % 2 == 0;
    if (partner >= job.size) {
        /* The odd one out: its rounds end at once. */
        for (unsigned r = 0; r < rounds; r++)
            round_done();
        return;
    }
    for (unsigned r = 0; r < rounds; r++) {
        if (first) {
            double t0 = mp_now();
            send_ping(partner, r);
            wait_flag(&pings_in, r + 1, style_of(r));
            double ms = (mp_now() - t0) * 1e3;
            if (ms > pong_max_ms)
                pong_max_ms = ms;
        } else {
            wait_flag(&pings_in, r + 1, style_of(r));
            sleep_us(rnd(200));
            send_ping(partner, r);
        }
        round_done();
    }
}

/* ---- 3: a held context does not make the progress thread spin ---- */

static _Atomic unsigned holds_in;

static void on_hold(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)hdr; (void)hlen; (void)data; (void)dlen;
    (void)origin; (void)recv;
    atomic_fetch_add(&holds_in, 1);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void hold(void)
{
    atomic_store(&wd_phase, "hold");
    pami_context_t ctx = job.ctx[0];
    if (job.me == 1) {
        MP_CHECK(pami_context_lock(ctx));
        /* Held now: let task 0 start sending. */
        uint32_t go = UINT32_MAX;
        pami_send_immediate_t s = {.dest = mp_ep(&job, 0, 0),
                                   .dispatch = ID_HOLD, .header = &go,
                                   .header_len = sizeof(go)};
        MP_CHECK(pami_send_immediate(ctx, &s));
        double cpu0 = cpu_s(), t0 = mp_now();
        mp_sleep_ms(HOLD_MS);
        double cpu = cpu_s() - cpu0, wall = mp_now() - t0;
        unsigned in_held = atomic_load(&holds_in);
        MP_CHECK(pami_context_unlock(ctx));
        MP_EXPECT(in_held == 0, "%u messages handled while the context "
                                "was held", in_held);
        MP_EXPECT(cpu < wall * CPU_SHARE,
                  "%.3f s of CPU while the context was held for %.3f s: "
                  "the progress thread spins", cpu, wall);
        printf("hold: %.3f s of CPU over a %.3f s hold\n", cpu, wall);
        wait_flag(&holds_in, HOLD_MSGS, 1);
    } else if (job.me == 0) {
        wait_flag(&holds_in, 1, 1);
        for (uint32_t i = 0; i < HOLD_MSGS; i++) {
            pami_send_immediate_t s = {.dest = mp_ep(&job, 1, 0),
                                       .dispatch = ID_HOLD, .header = &i,
                                       .header_len = sizeof(i)};
            MP_CHECK(pami_context_lock(ctx));
            pami_result_t rc = pami_send_immediate(ctx, &s);
            MP_CHECK(pami_context_unlock(ctx));
            MP_EXPECT(rc == PAMI_SUCCESS, "send_immediate: %s",
                      pami_error_text(rc));
        }
    }
    round_done();
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_async_wait", &argc, argv, NULL, 1, false);
    if (argc > 1)
        rounds = (unsigned)strtoul(argv[1], NULL, 10);
    MP_EXPECT(job.size >= 2, "needs at least 2 tasks");
    seed = 0x9e3779b97f4a7c15ull * (job.me + 1);
    pami_context_t ctx = job.ctx[0];
    mp_lock(&job, ctx);
    MP_CHECK(pami_dispatch_set(ctx, ID_PING, on_ping, NULL, NULL));
    MP_CHECK(pami_dispatch_set(ctx, ID_HOLD, on_hold, NULL, NULL));
    mp_unlock(&job, ctx);
    MP_CHECK(pami_dispatch_fence(job.client));

    atomic_store(&wd_phase, "start");
    pthread_t wd;
    MP_EXPECT(pthread_create(&wd, NULL, watchdog, NULL) == 0, "no thread");

    double t0 = mp_now();
    posts();
    double t_posts = mp_now() - t0;
    mp_sync(&job);
    t0 = mp_now();
    ping_pong();
    double t_pp = mp_now() - t0;
    mp_sync(&job);
    if (job.locked) {
        hold();
        mp_sync(&job);
    }
    atomic_store(&wd_stop, true);
    pthread_join(wd, NULL);
    printf("%s: %u posted rounds in %.3f s (slowest %.2f ms from post to "
           "done), %u ping-pong rounds in %.3f s (slowest %.2f ms)\n",
           job.locked ? "progress thread" : "wait(-1)", rounds, t_posts,
           post_max_ms, rounds, t_pp, pong_max_ms);
    mp_finish(&job);
    return 0;
}

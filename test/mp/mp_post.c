/*
 * mp_post: pami_context_post from other threads, and waiting that sleeps.
 *
 *  1. A thread posts work after 300 ms while the main thread sits in
 *     pami_context_wait(ctx, -1): the work runs once, on the main thread,
 *     soon after the post, and the process used far less CPU than the wall
 *     time of the wait (getrusage, user + sys).
 *  2. Work that returns PAMI_EAGAIN is queued again: it runs 4 times.
 *  3. A message from the other task, sent after 300 ms, wakes
 *     pami_context_wait(ctx, -1) the same way (each task in turn).
 *  4. Four threads post 1000 items each while the main thread waits: each
 *     item runs exactly once.
 * A watchdog thread fails the test if a wait(-1) is not woken in 10 s.
 *
 *   pamirun -n 2 mp_post
 */
#include "mp_util.h"

#include <pthread.h>
#include <sys/resource.h>

enum { ID_WAKE = 70 };

#define IDLE_MS     300.0
#define CPU_SHARE   0.25  /* of the wall time, at most */
#define WATCHDOG_S  10

static mp_job_t job;

/* ---- watchdog: fails the test when armed for too long ---- */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  wd_cond = PTHREAD_COND_INITIALIZER;
static const char     *wd_what;   /* armed while not NULL */
static unsigned        wd_gen;
static bool            wd_stop;

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_lock);
    while (!wd_stop) {
        if (wd_what == NULL) {
            pthread_cond_wait(&wd_cond, &wd_lock);
            continue;
        }
        unsigned gen = wd_gen;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += WATCHDOG_S;
        while (wd_what != NULL && wd_gen == gen && !wd_stop)
            if (pthread_cond_timedwait(&wd_cond, &wd_lock, &ts) != 0)
                break;
        if (wd_what != NULL && wd_gen == gen && !wd_stop)
            mp_fail("watchdog: %s was not woken within %d s", wd_what,
                    WATCHDOG_S);
    }
    pthread_mutex_unlock(&wd_lock);
    return NULL;
}

static void wd_arm(const char *what)
{
    pthread_mutex_lock(&wd_lock);
    wd_what = what;
    wd_gen++;
    pthread_cond_broadcast(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
}

static void wd_disarm(void)
{
    wd_arm(NULL);
}

/* ---- measuring a wait ---- */

typedef struct {
    double wall;
    double cpu;
    struct rusage ru;
} meter_t;

static double cpu_seconds(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec * 1e-6 +
           (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec * 1e-6;
}

static void meter_start(meter_t *m)
{
    getrusage(RUSAGE_SELF, &m->ru);
    m->wall = mp_now();
}

static void meter_stop(meter_t *m)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    m->wall = mp_now() - m->wall;
    m->cpu  = cpu_seconds(&ru) - cpu_seconds(&m->ru);
}

static void check_idle(const meter_t *m, const char *what)
{
    MP_EXPECT(m->wall >= IDLE_MS / 1000.0 * 0.8,
              "%s: woken after %.3f s, before the event at %.3f s", what,
              m->wall, IDLE_MS / 1000.0);
    MP_EXPECT(m->wall < IDLE_MS / 1000.0 + 2.0,
              "%s: woken only after %.3f s", what, m->wall);
    MP_EXPECT(m->cpu < m->wall * CPU_SHARE,
              "%s: %.3f s of CPU during a %.3f s wait: the wait spins", what,
              m->cpu, m->wall);
}

/* The CPU figures mean something only if busy time shows up in them:
 * advance in a loop until 20 ms of CPU were counted. */
static void calibrate(void)
{
    meter_t m;
    meter_start(&m);
    double deadline = m.wall + 5.0;
    for (;;) {
        for (int i = 0; i < 1000; i++)
            pami_context_advance(job.ctx[0], 1);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        if (cpu_seconds(&ru) - cpu_seconds(&m.ru) >= 0.02)
            return;
        MP_EXPECT(mp_now() < deadline, "getrusage counted no CPU time for "
                                       "5 s of polling");
    }
}

/* Waits until the context has nothing left to do. */
static void settle(void)
{
    double deadline = mp_now() + MP_WAIT_S;
    while (pami_context_wait(job.ctx[0], 50) != PAMI_TIMEOUT)
        MP_EXPECT(mp_now() < deadline, "the context never went idle");
}

/* Blocks in wait(-1) until *flag is set; returns the number of waits. */
static unsigned wait_forever_until(volatile atomic_int *flag, const char *what)
{
    unsigned waits = 0;
    wd_arm(what);
    while (!atomic_load(flag)) {
        pami_result_t rc = pami_context_wait(job.ctx[0], -1);
        MP_EXPECT(rc == PAMI_SUCCESS, "%s: wait(-1) returned %s", what,
                  pami_error_text(rc));
        waits++;
    }
    wd_disarm();
    return waits;
}

/* ---- 1, 2: a post wakes the waiter; requeue on EAGAIN ---- */

static atomic_int work_done;
static unsigned   work_runs;
static unsigned   work_again; /* answers EAGAIN this many more times */
static pthread_t  main_thread;

static pami_result_t work_fn(pami_context_t ctx, void *cookie)
{
    MP_EXPECT(ctx == job.ctx[0] && cookie == &work_runs,
              "posted work called with the wrong context or cookie");
    MP_EXPECT(pthread_equal(pthread_self(), main_thread),
              "posted work ran on another thread than the waiting one");
    work_runs++;
    if (work_again > 0) {
        work_again--;
        return PAMI_EAGAIN;
    }
    MP_EXPECT(!atomic_load(&work_done), "posted work ran after it finished");
    atomic_store(&work_done, 1);
    return PAMI_SUCCESS;
}

static pami_work_t work;

static void *post_later(void *arg)
{
    (void)arg;
    mp_sleep_ms(IDLE_MS);
    MP_CHECK(pami_context_post(job.ctx[0], &work, work_fn, &work_runs));
    return NULL;
}

static void post_wakes(unsigned again, const char *what)
{
    pami_context_stats_t before, after;
    settle();
    MP_CHECK(pami_context_stats(job.ctx[0], &before));
    atomic_store(&work_done, 0);
    work_runs  = 0;
    work_again = again;
    pthread_t poster;
    meter_t   m;
    meter_start(&m);
    MP_EXPECT(pthread_create(&poster, NULL, post_later, NULL) == 0,
              "pthread_create");
    unsigned waits = wait_forever_until(&work_done, what);
    meter_stop(&m);
    pthread_join(poster, NULL);
    MP_CHECK(pami_context_stats(job.ctx[0], &after));
    MP_EXPECT(work_runs == again + 1, "%s: work ran %u times, expected %u",
              what, work_runs, again + 1);
    MP_EXPECT(after.posted - before.posted == again + 1,
              "%s: stats count %llu posted runs, expected %u", what,
              (unsigned long long)(after.posted - before.posted), again + 1);
    MP_EXPECT(after.sleeps > before.sleeps, "%s: the wait never slept", what);
    check_idle(&m, what);
    printf("%s: woken after %.3f s with %.3f s of CPU (%u waits, %llu "
           "sleeps)\n", what, m.wall, m.cpu, waits,
           (unsigned long long)(after.sleeps - before.sleeps));
}

/* ---- 3: a message wakes the waiter ---- */

static atomic_int woken_by_msg;

static void on_wake(pami_context_t ctx, void *cookie, const void *hdr,
                    size_t hlen, const void *data, size_t dlen,
                    pami_endpoint_t origin, pami_recv_t *recv)
{
    (void)ctx; (void)cookie; (void)data; (void)origin; (void)recv;
    uint32_t round;
    MP_EXPECT(hlen == sizeof(round) && dlen == 0, "bad wake message");
    memcpy(&round, hdr, sizeof(round));
    MP_EXPECT(!atomic_load(&woken_by_msg), "two wake messages");
    atomic_store(&woken_by_msg, 1);
}

static void message_wakes(pami_task_t sleeper, uint32_t round)
{
    settle();
    mp_sync(&job);
    if (job.me != sleeper) {
        mp_sleep_ms(IDLE_MS);
        pami_send_immediate_t s = {.dest = mp_ep(&job, sleeper, 0),
                                   .dispatch = ID_WAKE, .header = &round,
                                   .header_len = sizeof(round)};
        mp_send_imm(&job, job.ctx[0], &s);
    } else {
        atomic_store(&woken_by_msg, 0);
        /* The sync's own messages may still stir the context. */
        settle();
        meter_t m;
        meter_start(&m);
        unsigned waits = wait_forever_until(&woken_by_msg, "message wake");
        meter_stop(&m);
        /* The sender slept IDLE_MS from the sync, and we settled part of
         * that: only the CPU share is meaningful here. */
        MP_EXPECT(m.cpu < m.wall * CPU_SHARE + 0.005,
                  "message wake: %.3f s of CPU during a %.3f s wait", m.cpu,
                  m.wall);
        MP_EXPECT(m.wall < IDLE_MS / 1000.0 + 2.0,
                  "message wake: woken only after %.3f s", m.wall);
        printf("message wake: woken after %.3f s with %.3f s of CPU (%u "
               "waits)\n", m.wall, m.cpu, waits);
    }
    mp_sync(&job);
}

/* ---- 4: many posters ---- */

#define POSTERS 4
#define POSTS   1000

typedef struct {
    pami_work_t work;
    atomic_int  runs;
} item_t;

static item_t     items[POSTERS][POSTS];
static atomic_int items_done;

static pami_result_t item_fn(pami_context_t ctx, void *cookie)
{
    (void)ctx;
    item_t *it = cookie;
    MP_EXPECT(atomic_fetch_add(&it->runs, 1) == 0, "an item ran twice");
    if (atomic_fetch_add(&items_done, 1) + 1 == POSTERS * POSTS)
        atomic_store(&work_done, 1);
    return PAMI_SUCCESS;
}

static void *poster_main(void *arg)
{
    item_t *mine = arg;
    for (int i = 0; i < POSTS; i++) {
        MP_CHECK(pami_context_post(job.ctx[0], &mine[i].work, item_fn,
                                   &mine[i]));
        if (i % 100 == 99)
            mp_sleep_ms(1);
    }
    return NULL;
}

static void many_posters(void)
{
    settle();
    atomic_store(&work_done, 0);
    atomic_store(&items_done, 0);
    pthread_t t[POSTERS];
    for (int p = 0; p < POSTERS; p++)
        MP_EXPECT(pthread_create(&t[p], NULL, poster_main, items[p]) == 0,
                  "pthread_create");
    unsigned waits = wait_forever_until(&work_done, "many posters");
    for (int p = 0; p < POSTERS; p++)
        pthread_join(t[p], NULL);
    /* Nothing more may run. */
    pami_context_wait(job.ctx[0], 20);
    for (int p = 0; p < POSTERS; p++)
        for (int i = 0; i < POSTS; i++)
            MP_EXPECT(atomic_load(&items[p][i].runs) == 1,
                      "item %d of poster %d ran %d times", i, p,
                      atomic_load(&items[p][i].runs));
    printf("many posters: %d items from %d threads ran once each (%u "
           "waits)\n", POSTERS * POSTS, POSTERS, waits);
}

int main(int argc, char **argv)
{
    mp_init(&job, "mp_post", &argc, argv, NULL, 1, false);
    MP_EXPECT(job.size == 2, "run with 2 tasks");
    main_thread = pthread_self();
    MP_CHECK(pami_dispatch_set(job.ctx[0], ID_WAKE, on_wake, NULL, NULL));
    MP_CHECK(pami_dispatch_fence(job.client));
    pthread_t wd;
    MP_EXPECT(pthread_create(&wd, NULL, watchdog, NULL) == 0,
              "pthread_create");
    /* Connect both ways before measuring anything. */
    mp_sync(&job);
    calibrate();

    post_wakes(0, "post wake");
    post_wakes(3, "post requeued 3 times");
    message_wakes(0, 1);
    message_wakes(1, 2);
    many_posters();

    mp_sync(&job);
    pthread_mutex_lock(&wd_lock);
    wd_stop = true;
    pthread_cond_broadcast(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
    pthread_join(wd, NULL);
    mp_finish(&job);
    return 0;
}

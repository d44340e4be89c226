/* Progress without traffic: pami_context_wait sleeps instead of spinning,
 * pami_context_post wakes it from another thread, posted work that says
 * PAMI_EAGAIN runs again; a context that only polls keeps UCX's event fd
 * out of the epoll sets it sleeps on; and the context lock. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "pami.h"
#include "peer_fd.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* CPU time of the whole process, every thread (UCX's too). */
static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

typedef struct {
    pami_client_t  client;
    pami_context_t ctx[2];
} world_t;

static int world_up(void **state)
{
    world_t *w = calloc(1, sizeof(*w));
    if (w == NULL ||
        pami_client_create("unit", NULL, &w->client) != PAMI_SUCCESS ||
        pami_context_createv(w->client, NULL, 2, w->ctx) != PAMI_SUCCESS) {
        free(w);
        return -1;
    }
    *state = w;
    return 0;
}

static int world_down(void **state)
{
    world_t *w = *state;
    int rc = pami_client_destroy(&w->client) == PAMI_SUCCESS ? 0 : -1;
    free(w);
    return rc;
}

static pami_context_stats_t stats(pami_context_t ctx)
{
    pami_context_stats_t st;
    assert_int_equal(pami_context_stats(ctx, &st), PAMI_SUCCESS);
    return st;
}

/* ------------------------------------------------------------------------ */
/* wait                                                                      */
/* ------------------------------------------------------------------------ */

static void test_wait_timeout_sleeps(void **state)
{
    world_t *w = *state;
    /* Let whatever createv left behind settle first. */
    while (pami_context_advance(w->ctx[0], 100) == PAMI_SUCCESS)
        ;
    uint64_t sleeps = stats(w->ctx[0]).sleeps;

    double t0 = now_ms(), c0 = cpu_ms();
    pami_result_t rc = pami_context_wait(w->ctx[0], 100);
    double wall = now_ms() - t0, cpu = cpu_ms() - c0;

    assert_int_equal(rc, PAMI_TIMEOUT);
    if (wall < 98.0 || wall > 2000.0)
        fail_msg("wait(100 ms) returned after %.1f ms", wall);
    if (cpu >= 0.3 * wall)
        fail_msg("wait(100 ms) used %.1f ms of CPU in %.1f ms: it spins",
                 cpu, wall);
    assert_true(stats(w->ctx[0]).sleeps > sleeps);

    /* A zero timeout polls and returns at once. */
    t0 = now_ms();
    assert_int_equal(pami_context_wait(w->ctx[0], 0), PAMI_TIMEOUT);
    assert_true(now_ms() - t0 < 50.0);
}

/* How many epoll sets of this process hold another epoll set (UCX's
 * interface set in its worker's, the worker's in a context's, ...), from
 * the "tfd:" lines of /proc/self/fdinfo. */
static unsigned nested_epolls(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    unsigned       nested = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d) || !pami_fd_is_anon(fd, "eventpoll"))
            continue;
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        while (fgets(line, sizeof(line), f) != NULL) {
            int tfd;
            if (sscanf(line, "tfd: %d", &tfd) == 1 && pami_fd_is_anon(tfd, "eventpoll"))
                nested++;
        }
        fclose(f);
    }
    closedir(d);
    return nested;
}

/* Every packet UCX's sockets get wakes each epoll set their set is nested
 * in (docs/protocols/shm-queue.md): a context that sleeps puts UCX's fd
 * in the set it sleeps on, one that then only polls takes it out. */
/* Waits until the context slept once (a wait whose timeout ran out in
 * its spin, on a loaded machine, did not). */
static void sleep_once(pami_context_t ctx)
{
    uint64_t sleeps = stats(ctx).sleeps;
    for (int i = 0; i < 100 && stats(ctx).sleeps == sleeps; i++)
        assert_int_equal(pami_context_wait(ctx, 20), PAMI_TIMEOUT);
    assert_true(stats(ctx).sleeps > sleeps);
}

static void test_polling_unnests_ucx_fd(void **state)
{
    world_t *w = *state;
    for (int i = 0; i < 2; i++)
        sleep_once(w->ctx[i]);
    unsigned slept = nested_epolls();
    for (int n = 0; n < 10000; n++)
        for (int i = 0; i < 2; i++)
            pami_context_advance(w->ctx[i], 1);
    unsigned polled = nested_epolls();
    assert_int_equal(polled + 2, slept);
    /* A sleep puts it back. */
    sleep_once(w->ctx[0]);
    assert_int_equal(nested_epolls(), polled + 1);
    /* Sleeping again soon after does not take it out. */
    for (int n = 0; n < 100; n++)
        pami_context_advance(w->ctx[0], 1);
    sleep_once(w->ctx[0]);
    assert_int_equal(nested_epolls(), polled + 1);
}

typedef struct {
    pami_context_t   ctx;
    pami_work_t      work;
    atomic_int       runs;
    pthread_t        ran_on;
    int              eagain_left;
    unsigned         delay_ms;
    pami_result_t    post_rc;
    atomic_bool      posted;
} post_t;

static pami_result_t work_fn(pami_context_t ctx, void *cookie)
{
    post_t *p = cookie;
    (void)ctx;
    p->ran_on = pthread_self();
    atomic_fetch_add(&p->runs, 1);
    if (p->eagain_left > 0) {
        p->eagain_left--;
        return PAMI_EAGAIN;
    }
    return PAMI_SUCCESS;
}

static void *poster(void *arg)
{
    post_t *p = arg;
    sleep_ms(p->delay_ms);
    p->post_rc = pami_context_post(p->ctx, &p->work, work_fn, p);
    atomic_store(&p->posted, true);
    return NULL;
}

/* Ends the process if the waiting thread is never woken, with a message
 * instead of a bare test timeout. */
static void *watchdog(void *arg)
{
    post_t *p = arg;
    for (int i = 0; i < 500 && atomic_load(&p->runs) == 0; i++)
        sleep_ms(10);
    if (atomic_load(&p->runs) == 0) {
        fprintf(stderr, "pami_context_wait(-1) was not woken by "
                        "pami_context_post within 5 s\n");
        _exit(1);
    }
    return NULL;
}

static void test_post_wakes_waiter(void **state)
{
    world_t *w = *state;
    while (pami_context_advance(w->ctx[0], 100) == PAMI_SUCCESS)
        ;
    /* Static: the watchdog may outlive a failed assertion here. */
    static post_t p;
    memset(&p, 0, sizeof(p));
    p.ctx      = w->ctx[0];
    p.delay_ms = 200;
    uint64_t sleeps = stats(w->ctx[0]).sleeps;
    uint64_t posted = stats(w->ctx[0]).posted;

    pthread_t thr, dog;
    assert_int_equal(pthread_create(&dog, NULL, watchdog, &p), 0);
    assert_int_equal(pthread_create(&thr, NULL, poster, &p), 0);
    double t0 = now_ms();
    pami_result_t rc = PAMI_TIMEOUT;
    int waits = 0;
    while (atomic_load(&p.runs) == 0 && waits < 100) {
        rc = pami_context_wait(w->ctx[0], -1);
        waits++;
    }
    double wall = now_ms() - t0;
    assert_int_equal(pthread_join(thr, NULL), 0);
    assert_int_equal(pthread_join(dog, NULL), 0);

    assert_int_equal(p.post_rc, PAMI_SUCCESS);
    assert_int_equal(rc, PAMI_SUCCESS);
    assert_int_equal(atomic_load(&p.runs), 1);
    /* The function ran on the thread that waited, not the poster. */
    assert_true(pthread_equal(p.ran_on, pthread_self()));
    /* It really slept until the post. */
    assert_true(wall >= 150.0);
    assert_true(stats(w->ctx[0]).sleeps > sleeps);
    assert_int_equal(stats(w->ctx[0]).posted, posted + 1);

    /* It does not run again. */
    for (int i = 0; i < 50; i++)
        pami_context_advance(w->ctx[0], 1);
    assert_int_equal(atomic_load(&p.runs), 1);
}

static void test_post_eagain_runs_again(void **state)
{
    world_t *w = *state;
    post_t p = {.ctx = w->ctx[1], .eagain_left = 2};
    uint64_t posted = stats(w->ctx[1]).posted;
    assert_int_equal(pami_context_post(w->ctx[1], &p.work, work_fn, &p),
                     PAMI_SUCCESS);
    /* Not run by the post itself, nor by another context. */
    assert_int_equal(atomic_load(&p.runs), 0);
    pami_context_advance(w->ctx[0], 10);
    assert_int_equal(atomic_load(&p.runs), 0);

    double end = now_ms() + 2000.0;
    while (atomic_load(&p.runs) < 3 && now_ms() < end)
        pami_context_advance(w->ctx[1], 1);
    assert_int_equal(atomic_load(&p.runs), 3);
    for (int i = 0; i < 50; i++)
        pami_context_advance(w->ctx[1], 1);
    assert_int_equal(atomic_load(&p.runs), 3);
    assert_int_equal(p.eagain_left, 0);
    assert_int_equal(stats(w->ctx[1]).posted, posted + 3);

    /* A requeued item also wakes a waiter: wait returns, not times out. */
    post_t q = {.ctx = w->ctx[1], .eagain_left = 1};
    assert_int_equal(pami_context_post(w->ctx[1], &q.work, work_fn, &q),
                     PAMI_SUCCESS);
    end = now_ms() + 2000.0;
    while (atomic_load(&q.runs) < 2 && now_ms() < end)
        assert_int_equal(pami_context_wait(w->ctx[1], 1000), PAMI_SUCCESS);
    assert_int_equal(atomic_load(&q.runs), 2);
}

/* Many posts from several threads: each item runs exactly once. */
#define POSTERS 4
#define POSTS   200

typedef struct {
    pami_context_t ctx;
    pami_work_t    work[POSTS];
    atomic_int     runs[POSTS];
} burst_t;

static pami_result_t burst_fn(pami_context_t ctx, void *cookie)
{
    (void)ctx;
    atomic_fetch_add((atomic_int *)cookie, 1);
    return PAMI_SUCCESS;
}

static void *burst_poster(void *arg)
{
    burst_t *b = arg;
    for (int i = 0; i < POSTS; i++)
        if (pami_context_post(b->ctx, &b->work[i], burst_fn, &b->runs[i]) !=
            PAMI_SUCCESS)
            atomic_fetch_add(&b->runs[i], 1000);
    return NULL;
}

static void test_post_from_many_threads(void **state)
{
    world_t *w = *state;
    burst_t *b = calloc(POSTERS, sizeof(*b));
    assert_non_null(b);
    pthread_t thr[POSTERS];
    for (int t = 0; t < POSTERS; t++) {
        b[t].ctx = w->ctx[0];
        assert_int_equal(pthread_create(&thr[t], NULL, burst_poster, &b[t]),
                         0);
    }
    int total = 0;
    double end = now_ms() + 5000.0;
    while (total < POSTERS * POSTS && now_ms() < end) {
        pami_context_wait(w->ctx[0], 10);
        total = 0;
        for (int t = 0; t < POSTERS; t++)
            for (int i = 0; i < POSTS; i++)
                total += atomic_load(&b[t].runs[i]) > 0;
    }
    for (int t = 0; t < POSTERS; t++)
        assert_int_equal(pthread_join(thr[t], NULL), 0);
    while (pami_context_advance(w->ctx[0], 10) == PAMI_SUCCESS)
        ;
    for (int t = 0; t < POSTERS; t++)
        for (int i = 0; i < POSTS; i++)
            if (atomic_load(&b[t].runs[i]) != 1)
                fail_msg("item %d of thread %d ran %d times", i, t,
                         atomic_load(&b[t].runs[i]));
    free(b);
}

/* ------------------------------------------------------------------------ */
/* lock                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    pami_context_t ctx;
    pami_result_t  trylock_rc;
    pami_result_t  unlock_rc;
} trylock_t;

static void *try_once(void *arg)
{
    trylock_t *t = arg;
    t->trylock_rc = pami_context_trylock(t->ctx);
    if (t->trylock_rc == PAMI_SUCCESS)
        t->unlock_rc = pami_context_unlock(t->ctx);
    return NULL;
}

static void try_from_thread(trylock_t *t)
{
    pthread_t thr;
    assert_int_equal(pthread_create(&thr, NULL, try_once, t), 0);
    assert_int_equal(pthread_join(thr, NULL), 0);
}

static void test_trylock_held(void **state)
{
    world_t  *w = *state;
    trylock_t t = {.ctx = w->ctx[0], .trylock_rc = -1, .unlock_rc = -1};

    assert_int_equal(pami_context_lock(w->ctx[0]), PAMI_SUCCESS);
    try_from_thread(&t);
    assert_int_equal(t.trylock_rc, PAMI_EAGAIN);
    /* Another context's lock is independent. */
    trylock_t other = {.ctx = w->ctx[1], .trylock_rc = -1, .unlock_rc = -1};
    try_from_thread(&other);
    assert_int_equal(other.trylock_rc, PAMI_SUCCESS);
    assert_int_equal(other.unlock_rc, PAMI_SUCCESS);
    assert_int_equal(pami_context_unlock(w->ctx[0]), PAMI_SUCCESS);

    /* Released, it can be taken. */
    t.trylock_rc = t.unlock_rc = -1;
    try_from_thread(&t);
    assert_int_equal(t.trylock_rc, PAMI_SUCCESS);
    assert_int_equal(t.unlock_rc, PAMI_SUCCESS);

    /* trylock, then the holder's trylock from elsewhere is refused too. */
    assert_int_equal(pami_context_trylock(w->ctx[0]), PAMI_SUCCESS);
    t.trylock_rc = -1;
    try_from_thread(&t);
    assert_int_equal(t.trylock_rc, PAMI_EAGAIN);
    assert_int_equal(pami_context_unlock(w->ctx[0]), PAMI_SUCCESS);

    assert_int_equal(pami_context_lock(NULL), PAMI_INVAL);
    assert_int_equal(pami_context_trylock(NULL), PAMI_INVAL);
    assert_int_equal(pami_context_unlock(NULL), PAMI_INVAL);
}

typedef struct {
    pami_context_t ctx;
    atomic_bool    has_lock;
    atomic_bool    release;
} holder_t;

static void *hold_lock(void *arg)
{
    holder_t *h = arg;
    pami_context_lock(h->ctx);
    atomic_store(&h->has_lock, true);
    while (!atomic_load(&h->release))
        sleep_ms(1);
    atomic_store(&h->has_lock, false);
    pami_context_unlock(h->ctx);
    return NULL;
}

/* lock blocks while another thread holds it, and gets it once released. */
static void test_lock_blocks(void **state)
{
    world_t  *w = *state;
    holder_t  h = {.ctx = w->ctx[0]};
    pthread_t thr;
    assert_int_equal(pthread_create(&thr, NULL, hold_lock, &h), 0);
    while (!atomic_load(&h.has_lock))
        sleep_ms(1);
    assert_int_equal(pami_context_trylock(w->ctx[0]), PAMI_EAGAIN);

    /* Released after 50 ms; our lock must wait for it. */
    double t0 = now_ms();
    sleep_ms(50);
    atomic_store(&h.release, true);
    assert_int_equal(pami_context_lock(w->ctx[0]), PAMI_SUCCESS);
    assert_false(atomic_load(&h.has_lock));
    assert_true(now_ms() - t0 >= 45.0);
    assert_int_equal(pami_context_unlock(w->ctx[0]), PAMI_SUCCESS);
    assert_int_equal(pthread_join(thr, NULL), 0);
}

/* With an argument, run only the group of that name. */
#define RUN(name, tests)                                                     \
    (argc < 2 || strcmp(argv[1], name) == 0                                  \
         ? cmocka_run_group_tests_name(name, tests, NULL, NULL)              \
         : 0)

int main(int argc, char **argv)
{
    const struct CMUnitTest wait[] = {
        cmocka_unit_test_setup_teardown(test_wait_timeout_sleeps, world_up,
                                        world_down),
        cmocka_unit_test_setup_teardown(test_post_wakes_waiter, world_up,
                                        world_down),
        cmocka_unit_test_setup_teardown(test_post_eagain_runs_again,
                                        world_up, world_down),
        cmocka_unit_test_setup_teardown(test_post_from_many_threads,
                                        world_up, world_down),
        cmocka_unit_test_setup_teardown(test_polling_unnests_ucx_fd,
                                        world_up, world_down),
    };
    const struct CMUnitTest lock[] = {
        cmocka_unit_test_setup_teardown(test_trylock_held, world_up,
                                        world_down),
        cmocka_unit_test_setup_teardown(test_lock_blocks, world_up,
                                        world_down),
    };
    int failed = 0;
    failed += RUN("wait", wait);
    failed += RUN("lock", lock);
    return failed;
}

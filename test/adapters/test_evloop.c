/* Unit tests of the libev event-loop adapter. */
#include "evloop.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static const evloop_ops_t *ops = &evloop_libev_ops;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

static int setup_loop(void **state)
{
    evloop_t *loop = ops->create();
    if (loop == NULL)
        return -1;
    *state = loop;
    return 0;
}

static int teardown_loop(void **state)
{
    ops->destroy(*state);
    return 0;
}

static void test_timeout_returns_zero(void **state)
{
    evloop_t *loop = *state;

    double t0 = now_ms();
    assert_int_equal(ops->run_once(loop, 100), 0);
    double elapsed = now_ms() - t0;
    assert_true(elapsed >= 95.0);
    /* Returns, not waits on: the bound only catches a lost timeout (a
     * machine at load 30 took more than 400 ms to run us again). */
    assert_true(elapsed < 5000.0);

    t0 = now_ms();
    assert_int_equal(ops->run_once(loop, 0), 0);
    assert_true(now_ms() - t0 < 5000.0);
}

typedef struct {
    int fd;
    int calls;
    char last;
    void *arg_seen;
} io_probe_t;

static void io_read_cb(void *arg, int fd)
{
    io_probe_t *p = arg;
    char        c = 0;

    p->calls++;
    p->arg_seen = arg;
    p->fd       = fd;
    if (read(fd, &c, 1) == 1)
        p->last = c;
}

static void test_io_on_pipe_fires(void **state)
{
    evloop_t  *loop = *state;
    io_probe_t probe = {.fd = -1};
    int        fds[2];

    assert_int_equal(pipe(fds), 0);
    evloop_io_t *io = ops->io_add(loop, fds[0], io_read_cb, &probe);
    assert_non_null(io);

    /* Nothing written yet: the watcher must not fire. */
    assert_int_equal(ops->run_once(loop, 20), 0);
    assert_int_equal(probe.calls, 0);

    assert_int_equal(write(fds[1], "x", 1), 1);
    double t0 = now_ms();
    assert_int_equal(ops->run_once(loop, 5000), 1);
    assert_true(now_ms() - t0 < 1000.0);
    assert_int_equal(probe.calls, 1);
    assert_int_equal(probe.fd, fds[0]);
    assert_ptr_equal(probe.arg_seen, &probe);
    assert_int_equal(probe.last, 'x');

    /* After io_del, data on the fd no longer wakes the loop. */
    ops->io_del(loop, io);
    assert_int_equal(write(fds[1], "y", 1), 1);
    assert_int_equal(ops->run_once(loop, 50), 0);
    assert_int_equal(probe.calls, 1);

    close(fds[0]);
    close(fds[1]);
}

/* A watcher turned off ignores its readable fd without being freed; on
 * again, the data still there wakes the loop. Twice in a row is the same
 * as once. */
static void test_io_watch_off_and_on(void **state)
{
    evloop_t  *loop = *state;
    io_probe_t probe = {.fd = -1};
    int        fds[2];

    assert_int_equal(pipe(fds), 0);
    evloop_io_t *io = ops->io_add(loop, fds[0], io_read_cb, &probe);
    assert_non_null(io);
    assert_int_equal(write(fds[1], "a", 1), 1);
    ops->io_watch(loop, io, 0);
    ops->io_watch(loop, io, 0);
    double cpu0 = cpu_ms();
    assert_int_equal(ops->run_once(loop, 100), 0);
    assert_true(cpu_ms() - cpu0 < 50.0);
    assert_int_equal(probe.calls, 0);

    ops->io_watch(loop, io, 1);
    ops->io_watch(loop, io, 1);
    assert_int_equal(ops->run_once(loop, 5000), 1);
    assert_int_equal(probe.calls, 1);
    assert_int_equal(probe.last, 'a');

    /* Off while an event is pending: it is dropped, not delivered. */
    assert_int_equal(write(fds[1], "b", 1), 1);
    ops->io_watch(loop, io, 0);
    assert_int_equal(ops->run_once(loop, 50), 0);
    assert_int_equal(probe.calls, 1);
    ops->io_del(loop, io);
    close(fds[0]);
    close(fds[1]);
}

typedef struct {
    evloop_t    *loop;
    evloop_io_t *self;
    int          calls;
} self_del_t;

static void io_self_del_cb(void *arg, int fd)
{
    self_del_t *s = arg;
    char        c;

    (void)!read(fd, &c, 1);
    s->calls++;
    ops->io_del(s->loop, s->self);
    s->self = NULL;
}

/* The core removes watchers from inside their own callback. */
static void test_io_del_from_callback(void **state)
{
    evloop_t  *loop = *state;
    self_del_t s    = {.loop = loop};
    int        fds[2];

    assert_int_equal(pipe(fds), 0);
    s.self = ops->io_add(loop, fds[0], io_self_del_cb, &s);
    assert_non_null(s.self);
    assert_int_equal(write(fds[1], "ab", 2), 2);
    assert_int_equal(ops->run_once(loop, 1000), 1);
    assert_int_equal(s.calls, 1);
    assert_null(s.self);
    /* One byte is still unread, yet the removed watcher stays silent. */
    assert_int_equal(ops->run_once(loop, 30), 0);
    assert_int_equal(s.calls, 1);
    close(fds[0]);
    close(fds[1]);
}

typedef struct {
    evloop_t *loop;
    int       delay_ms;
} waker_t;

static void *waker_main(void *arg)
{
    waker_t *w = arg;
    usleep((useconds_t)w->delay_ms * 1000);
    ops->wakeup(w->loop);
    return NULL;
}

static void test_wakeup_from_thread(void **state)
{
    evloop_t *loop = *state;
    waker_t   w    = {.loop = loop, .delay_ms = 100};
    pthread_t tid;

    assert_int_equal(pthread_create(&tid, NULL, waker_main, &w), 0);
    double t0 = now_ms();
    /* No timeout: only the other thread's wakeup can end this. */
    assert_int_equal(ops->run_once(loop, -1), 1);
    double elapsed = now_ms() - t0;
    assert_int_equal(pthread_join(tid, NULL), 0);
    assert_true(elapsed >= 80.0); /* it really blocked until the wakeup */
    assert_true(elapsed < 2000.0);
}

static void test_wakeup_before_run_not_lost(void **state)
{
    evloop_t *loop = *state;

    ops->wakeup(loop);
    ops->wakeup(loop);
    double t0 = now_ms();
    assert_int_equal(ops->run_once(loop, 5000), 1);
    assert_true(now_ms() - t0 < 1000.0);
    /* Wakeups coalesce: both were consumed by that one return. */
    assert_int_equal(ops->run_once(loop, 30), 0);
}

static void test_blocked_wait_uses_no_cpu(void **state)
{
    evloop_t  *loop = *state;
    int        fds[2];
    io_probe_t probe = {.fd = -1};

    /* An idle fd watcher is present, as in a real context wait. */
    assert_int_equal(pipe(fds), 0);
    evloop_io_t *io = ops->io_add(loop, fds[0], io_read_cb, &probe);
    assert_non_null(io);

    double cpu0  = cpu_ms();
    double wall0 = now_ms();
    assert_int_equal(ops->run_once(loop, 200), 0);
    double wall = now_ms() - wall0;
    double cpu  = cpu_ms() - cpu0;
    assert_true(wall >= 190.0);
    /* A spinning loop would burn about 200 ms here. */
    assert_true(cpu < 20.0);
    assert_int_equal(probe.calls, 0);

    ops->io_del(loop, io);
    close(fds[0]);
    close(fds[1]);
}

/* Loops are independent: waking one does not end a wait on another. */
static void test_loops_are_independent(void **state)
{
    evloop_t *a = *state;
    evloop_t *b = ops->create();
    assert_non_null(b);

    ops->wakeup(b);
    assert_int_equal(ops->run_once(a, 50), 0);
    assert_int_equal(ops->run_once(b, 50), 1);
    ops->destroy(b);
}

typedef struct {
    int result;
} own_loop_t;

static void *own_loop_main(void *arg)
{
    own_loop_t *o    = arg;
    evloop_t   *loop = ops->create();

    if (loop == NULL)
        return NULL;
    ops->wakeup(loop);
    int first  = ops->run_once(loop, 1000);
    int second = ops->run_once(loop, 20);
    o->result  = first == 1 && second == 0;
    ops->destroy(loop);
    return NULL;
}

static void test_loop_per_thread(void **state)
{
    (void)state;
    own_loop_t own[4] = {{0}};
    pthread_t  tid[4];

    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&tid[i], NULL, own_loop_main, &own[i]),
                         0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        assert_int_equal(own[i].result, 1);
    }
}

/* destroy must release watchers the caller did not remove. */
static void test_destroy_with_live_watchers(void **state)
{
    (void)state;
    evloop_t  *loop = ops->create();
    int        fds[2];
    io_probe_t probe = {.fd = -1};

    assert_non_null(loop);
    assert_int_equal(pipe(fds), 0);
    assert_non_null(ops->io_add(loop, fds[0], io_read_cb, &probe));
    assert_non_null(ops->io_add(loop, fds[1], io_read_cb, &probe));
    ops->destroy(loop);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_timeout_returns_zero, setup_loop,
                                        teardown_loop),
        cmocka_unit_test_setup_teardown(test_io_on_pipe_fires, setup_loop,
                                        teardown_loop),
        cmocka_unit_test_setup_teardown(test_io_watch_off_and_on, setup_loop,
                                        teardown_loop),
        cmocka_unit_test_setup_teardown(test_io_del_from_callback, setup_loop,
                                        teardown_loop),
        cmocka_unit_test_setup_teardown(test_wakeup_from_thread, setup_loop,
                                        teardown_loop),
        cmocka_unit_test_setup_teardown(test_wakeup_before_run_not_lost,
                                        setup_loop, teardown_loop),
        cmocka_unit_test_setup_teardown(test_blocked_wait_uses_no_cpu,
                                        setup_loop, teardown_loop),
        cmocka_unit_test_setup_teardown(test_loops_are_independent,
                                        setup_loop, teardown_loop),
        cmocka_unit_test(test_loop_per_thread),
        cmocka_unit_test(test_destroy_with_live_watchers),
    };
    return cmocka_run_group_tests_name("evloop_libev", tests, NULL, NULL);
}

/*
 * evloop over libev. Each evloop_t owns a private libev loop (never the
 * default one) so contexts and threads never share watcher state; the only
 * cross-thread entry point is wakeup, which is ev_async_send.
 */
#include "evloop.h"

#include "log.h"

#include "libev_private.h"
#include <stdlib.h>

/* Set by the first create; every other entry needs a loop, so it is set. */
static const libev_api_t *E;

struct evloop_io {
    ev_io         watcher; /* first, so the libev pointer is the record */
    evloop_io_fn  fn;
    void         *arg;
    evloop_io_t  *prev;    /* every record is listed so destroy frees all */
    evloop_io_t  *next;
};

struct evloop {
    struct ev_loop *ev;
    ev_async        wake;
    ev_timer        timer;
    evloop_io_t    *ios;
    /* Set by callbacks while run_once is inside ev_run. */
    int             fired;
    int             timed_out;
};

static void evloop_wake_cb(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)ev;
    (void)revents;
    ((evloop_t *)w->data)->fired = 1;
}

static void evloop_timer_cb(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    ((evloop_t *)w->data)->timed_out = 1;
}

static void evloop_io_cb(struct ev_loop *ev, ev_io *w, int revents)
{
    evloop_io_t *io   = (evloop_io_t *)w;
    evloop_t    *loop = w->data;

    (void)ev;
    (void)revents;
    loop->fired = 1;
    /* Last use of io: fn may io_del (free) it. */
    io->fn(io->arg, w->fd);
}

static evloop_t *evloop_libev_create(void)
{
    E = libev_api();
    if (E == NULL)
        return NULL;
    evloop_t *loop = calloc(1, sizeof(*loop));
    if (loop == NULL) {
        pami_error("evloop", "out of memory for an event loop");
        return NULL;
    }
    loop->ev = E->loop_new(EVFLAG_AUTO);
    if (loop->ev == NULL) {
        pami_error("evloop", "ev_loop_new failed (no usable backend?)");
        free(loop);
        return NULL;
    }
    /* The async watcher stays active for the loop's life, which also keeps
     * ev_run from returning early for lack of watchers. */
    ev_async_init(&loop->wake, evloop_wake_cb);
    loop->wake.data = loop;
    E->async_start(loop->ev, &loop->wake);

    ev_init(&loop->timer, evloop_timer_cb);
    loop->timer.data = loop;
    return loop;
}

static void evloop_libev_destroy(evloop_t *loop)
{
    if (loop == NULL)
        return;
    while (loop->ios != NULL) {
        evloop_io_t *io = loop->ios;
        loop->ios = io->next;
        E->io_stop(loop->ev, &io->watcher);
        free(io);
    }
    E->timer_stop(loop->ev, &loop->timer);
    E->async_stop(loop->ev, &loop->wake);
    E->loop_destroy(loop->ev);
    free(loop);
}

static evloop_io_t *evloop_libev_io_add(evloop_t *loop, int fd,
                                        evloop_io_fn fn, void *arg)
{
    if (loop == NULL || fd < 0 || fn == NULL) {
        pami_error("evloop", "io_add: bad arguments (fd %d)", fd);
        return NULL;
    }
    evloop_io_t *io = calloc(1, sizeof(*io));
    if (io == NULL) {
        pami_error("evloop", "out of memory for an io watcher on fd %d", fd);
        return NULL;
    }
    io->fn  = fn;
    io->arg = arg;
    ev_io_init(&io->watcher, evloop_io_cb, fd, EV_READ);
    io->watcher.data = loop;
    E->io_start(loop->ev, &io->watcher);

    io->next = loop->ios;
    if (loop->ios != NULL)
        loop->ios->prev = io;
    loop->ios = io;
    return io;
}

static void evloop_libev_io_del(evloop_t *loop, evloop_io_t *io)
{
    if (loop == NULL || io == NULL)
        return;
    /* Stopping also clears a pending event, so a record freed from inside
     * another watcher's callback is never invoked afterwards. */
    E->io_stop(loop->ev, &io->watcher);
    if (io->prev != NULL)
        io->prev->next = io->next;
    else
        loop->ios = io->next;
    if (io->next != NULL)
        io->next->prev = io->prev;
    free(io);
}

static void evloop_libev_io_watch(evloop_t *loop, evloop_io_t *io, int on)
{
    if (loop == NULL || io == NULL)
        return;
    /* libev ignores a start of an active and a stop of a stopped watcher. */
    if (on)
        E->io_start(loop->ev, &io->watcher);
    else
        E->io_stop(loop->ev, &io->watcher);
}

static void evloop_libev_wakeup(evloop_t *loop)
{
    /* The async flag and its pipe/eventfd write persist until the loop
     * polls, so a wakeup sent before run_once is not lost. */
    E->async_send(loop->ev, &loop->wake);
}

static void evloop_arm_timer(evloop_t *loop, int timeout_ms)
{
    /* The cached loop time may be stale after a long callback; measure the
     * timeout from the real now. */
    E->now_update(loop->ev);
    ev_timer_set(&loop->timer, (ev_tstamp)timeout_ms / 1000.0, 0.0);
    E->timer_start(loop->ev, &loop->timer);
}

static int evloop_libev_run_once(evloop_t *loop, int timeout_ms)
{
    loop->fired     = 0;
    loop->timed_out = 0;
    if (timeout_ms >= 0)
        evloop_arm_timer(loop, timeout_ms);

    /* One EVRUN_ONCE may handle nothing of ours (libev wakes up for its own
     * housekeeping), so go round until our flags say why we stopped; each
     * pass blocks in the backend, so this does not spin. */
    while (!loop->fired && !loop->timed_out)
        E->run(loop->ev, EVRUN_ONCE);

    E->timer_stop(loop->ev, &loop->timer);
    return loop->fired ? 1 : 0;
}

const evloop_ops_t evloop_libev_ops = {
    .name     = "libev",
    .create   = evloop_libev_create,
    .destroy  = evloop_libev_destroy,
    .io_add   = evloop_libev_io_add,
    .io_del   = evloop_libev_io_del,
    .io_watch = evloop_libev_io_watch,
    .wakeup   = evloop_libev_wakeup,
    .run_once = evloop_libev_run_once,
};

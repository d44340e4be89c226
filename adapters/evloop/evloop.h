/*
 * The event loop behind blocking waits, the progress thread and pamirun.
 * A thin ops table over libev: one loop per waiter, fd watchers, a
 * thread-safe wakeup, and "run until one event or the timeout".
 *
 * This layer knows nothing of pami/.
 */
#ifndef PAMI_ADAPTERS_EVLOOP_H
#define PAMI_ADAPTERS_EVLOOP_H

typedef struct evloop evloop_t;
typedef struct evloop_io evloop_io_t;

typedef void (*evloop_io_fn)(void *arg, int fd);

typedef struct evloop_ops {
    const char *name;
    evloop_t *(*create)(void);
    void (*destroy)(evloop_t *loop);
    /* Watch fd for readability; fn runs from run_once. */
    evloop_io_t *(*io_add)(evloop_t *loop, int fd, evloop_io_fn fn, void *arg);
    void (*io_del)(evloop_t *loop, evloop_io_t *io);
    /* Stops (on == 0) or resumes watching io's fd without freeing it; a
     * stopped watcher's pending event is dropped. Idempotent. */
    void (*io_watch)(evloop_t *loop, evloop_io_t *io, int on);
    /* Safe from any thread and from signal handlers: makes a run_once in
     * progress (or the next one) return. */
    void (*wakeup)(evloop_t *loop);
    /* Blocks until at least one watcher fired, wakeup was called, or
     * timeout_ms passed (< 0: no timeout). Returns 1 when woken by an event
     * or wakeup, 0 on timeout. */
    int  (*run_once)(evloop_t *loop, int timeout_ms);
} evloop_ops_t;

extern const evloop_ops_t evloop_libev_ops;

#endif

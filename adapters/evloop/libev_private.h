/*
 * libev, loaded privately. libev.so exports libevent-compatible functions
 * (event_add, event_base_new, ...); linked normally it would come first in
 * the global symbol scope and capture libpmix's calls into the real
 * libevent, which crashes PMIx_Init. Loading it with dlopen(RTLD_LOCAL)
 * keeps every libev symbol out of the global scope. The ev_* names used by
 * libev.c are redirected here to the resolved functions.
 */
#ifndef PAMI_ADAPTERS_LIBEV_PRIVATE_H
#define PAMI_ADAPTERS_LIBEV_PRIVATE_H

#include <ev.h>

typedef struct {
    struct ev_loop *(*loop_new)(unsigned int flags);
    void (*loop_destroy)(struct ev_loop *loop);
    void (*io_start)(struct ev_loop *loop, ev_io *w);
    void (*io_stop)(struct ev_loop *loop, ev_io *w);
    void (*timer_start)(struct ev_loop *loop, ev_timer *w);
    void (*timer_stop)(struct ev_loop *loop, ev_timer *w);
    void (*async_start)(struct ev_loop *loop, ev_async *w);
    void (*async_stop)(struct ev_loop *loop, ev_async *w);
    void (*async_send)(struct ev_loop *loop, ev_async *w);
    int  (*run)(struct ev_loop *loop, int flags);
    void (*now_update)(struct ev_loop *loop);
} libev_api_t;

/* Resolves the table once; NULL (after a log line) if libev is missing. */
const libev_api_t *libev_api(void);

#endif

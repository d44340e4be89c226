/* Messages, size parsing, and the waits every other file uses. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmem_internal.h"

static void say(const char *level, const char *fmt, va_list ap)
{
    char line[512];

    vsnprintf(line, sizeof(line), fmt, ap);
    if (shmemi.initialized)
        fprintf(stderr, "shmem[%d] %s: %s\n", shmemi.my_pe, level, line);
    else
        fprintf(stderr, "shmem %s: %s\n", level, line);
}

void shmemi_debug(const char *fmt, ...)
{
    va_list ap;

    if (!shmemi.debug)
        return;
    va_start(ap, fmt);
    say("debug", fmt, ap);
    va_end(ap);
}

void shmemi_warn(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say("warning", fmt, ap);
    va_end(ap);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A failure may come from a PE that shmem_global_exit ended; the message
 * that ends this PE with the right status is then on its way (from the
 * PE that called it, which may have needed to connect first). When pami
 * knows of a dead peer, give it up to 2 s; otherwise drain what is here.
 * From a handler, advance refuses: no harm. */
static void await_global_exit(void)
{
    pami_context_stats_t st;
    double until;

    if (!shmemi.initialized || shmemi.finalized || shmemi.context == NULL)
        return;
    until = now_s();
    if (pami_context_stats(shmemi.context, &st) == PAMI_SUCCESS &&
        st.peer_failures > 0)
        until += 2.0;
    do {
        for (int i = 0; i < 100; i++)
            shmemi_advance(shmemi.context);
        if (now_s() < until)
            shmemi_sleep(shmemi.context, 10);
    } while (now_s() < until);
}

void shmemi_op_failed(pami_result_t result)
{
    if (shmemi.op_error == PAMI_SUCCESS)
        shmemi.op_error = result;
}

static void check_op_error(void)
{
    if (shmemi.op_error != PAMI_SUCCESS)
        shmemi_fatal("a put, get, atomic or fence failed: %s",
                     pami_error_text(shmemi.op_error));
}

void shmemi_fatal(const char *fmt, ...)
{
    va_list ap;

    await_global_exit();
    va_start(ap, fmt);
    say("error", fmt, ap);
    va_end(ap);
    fflush(stderr);
    /* A non-zero exit of one task ends the job under pamirun and mpirun. */
    _Exit(1);
}

void shmemi_require_init(const char *fn)
{
    if (!shmemi.initialized || shmemi.finalized)
        shmemi_fatal("%s called %s shmem_init", fn,
                     shmemi.finalized ? "after shmem_finalize" : "before");
}

int shmemi_parse_size(const char *text, size_t *bytes)
{
    char *end;
    unsigned long long value;
    unsigned shift = 0;

    if (text == NULL || *text == '\0' || *text == '-')
        return -1;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    /* "64MB" and "64MiB" are read as "64M". */
    if (shift != 0 && (strcmp(end, "B") == 0 || strcmp(end, "iB") == 0 ||
                       strcmp(end, "b") == 0))
        end += strlen(end);
    if (*end != '\0')
        return -1;
    if (shift != 0 && value > (~0ULL >> shift))
        return -1;
    *bytes = (size_t)(value << shift);
    return 0;
}

int shmemi_advance(pami_context_t context)
{
    if (!shmemi.pami_locked)
        return pami_context_advance(context, 16) == PAMI_SUCCESS;
    if (pami_context_trylock(context) != PAMI_SUCCESS) {
        sched_yield();
        return 0;
    }
    int happened = pami_context_advance(context, 16) == PAMI_SUCCESS;
    pami_context_unlock(context);
    return happened;
}

void shmemi_sleep(pami_context_t context, int ms)
{
    if (!shmemi.pami_locked) {
        pami_context_wait(context, ms);
        return;
    }
    if (pami_context_trylock(context) != PAMI_SUCCESS) {
        sched_yield();
        return;
    }
    pami_context_wait(context, 1);
    pami_context_unlock(context);
}

void shmemi_progress(pami_context_t context)
{
    /* A program that loops on test or test_lock is a wait too: every
     * 1024th idle call looks for dead or hung PEs as shmemi_poll does. */
    static _Thread_local unsigned idle;

    if (shmemi_advance(context))
        return;
    if (++idle % 1024 == 0)
        shmemi_check_peers(context);
    sched_yield();
}

/* A wait for a variable (wait_until, set_lock) has no operation of its
 * own in pami that a dead peer could fail, and the peer that would have
 * written the variable may be the dead one: once pami knows of a dead or
 * hung PE, no OpenSHMEM program can finish (shmem_finalize is collective),
 * so the wait ends the PE rather than wait for ever. */
void shmemi_check_peers(pami_context_t context)
{
    pami_context_stats_t st;

    if (pami_context_stats(context, &st) == PAMI_SUCCESS &&
        st.peer_failures > 0)
        shmemi_fatal("a wait cannot end: pami found %llu PE%s of the job "
                     "dead or hung", (unsigned long long)st.peer_failures,
                     st.peer_failures == 1 ? "" : "s");
}

void shmemi_poll(pami_context_t context, shmemi_poll_t *state)
{
    uint64_t now;

    if (shmemi_advance(context)) {
        state->idle_since_ns = 0;
        return;
    }
    now = (uint64_t)(now_s() * 1e9);
    if (state->idle_since_ns == 0)
        state->idle_since_ns = now;
    if (now - state->idle_since_ns < SHMEMI_POLL_SPIN_NS) {
        sched_yield();
        return;
    }
    shmemi_check_peers(context);
    shmemi_sleep(context, 1);
}

void shmemi_wait_flag(pami_context_t context, volatile int *done)
{
    while (!*done) {
        if (shmemi_advance(context))
            continue;
        if (*done)
            break;
        shmemi_sleep(context, 100);
    }
    check_op_error();
}

/* A collective's own result, so that its failure is reported as the
 * collective's (the blocking calls return it). */
typedef struct {
    volatile int  done;
    pami_result_t result;
} coll_wait_t;

static void coll_done(pami_context_t context, void *cookie,
                      pami_result_t result)
{
    coll_wait_t *w = cookie;
    (void)context;
    w->result = result;
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
}

pami_result_t shmemi_collective_run(pami_xfer_t *xfer)
{
    if (!shmemi.pami_locked)
        return xfer->kind == PAMI_XFER_BARRIER
                   ? pami_geometry_barrier(shmemi.context, xfer->geometry)
                   : pami_collective_wait(shmemi.context, xfer);
    coll_wait_t w = { 0, PAMI_SUCCESS };
    pami_result_t rc;
    xfer->algorithm = PAMI_ALGORITHM_AUTO;
    xfer->done_fn = coll_done;
    xfer->cookie = &w;
    for (;;) {
        shmemi_lock();
        rc = pami_collective(shmemi.context, xfer);
        shmemi_unlock();
        if (rc != PAMI_EAGAIN)
            break;
        shmemi_progress(shmemi.context);
    }
    if (rc == PAMI_SUCCESS) {
        shmemi_wait_flag(shmemi.context, &w.done);
        rc = w.result;
    }
    return rc;
}

void shmemi_barrier_world(void)
{
    pami_result_t rc;
    pami_xfer_t x = { .kind = PAMI_XFER_BARRIER, .geometry = shmemi.world };

    shmem_quiet();
    rc = shmemi_collective_run(&x);
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("barrier failed: %s", pami_error_text(rc));
    check_op_error();
}

int shmemi_allgather(const void *send, void *recv, size_t len)
{
    coll_wait_t w = { 0, PAMI_SUCCESS };
    pami_xfer_t xfer;
    pami_result_t rc;

    memset(&xfer, 0, sizeof(xfer));
    xfer.kind = PAMI_XFER_ALLGATHER;
    xfer.geometry = shmemi.world;
    xfer.sbuf = send;
    xfer.rbuf = recv;
    xfer.count = len;
    xfer.dtype = PAMI_TYPE_BYTE;
    xfer.done_fn = coll_done;
    xfer.cookie = &w;
    shmemi_lock();
    rc = pami_collective(shmemi.context, &xfer);
    shmemi_unlock();
    if (rc != PAMI_SUCCESS) {
        shmemi_warn("allgather failed: %s", pami_error_text(rc));
        return -1;
    }
    shmemi_wait_flag(shmemi.context, &w.done);
    if (w.result != PAMI_SUCCESS) {
        shmemi_warn("allgather failed: %s", pami_error_text(w.result));
        return -1;
    }
    return 0;
}

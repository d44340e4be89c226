/*
 * The waiter thread: the one place the protocol sleeps. The context hands
 * it a wait (a shared word to change, or the set-up) and returns to its
 * own progress, which may then sleep on the UCX event fd; when the wait
 * ends the thread posts the engine, and pami_context_post wakes the
 * context. Every sleep is bounded (100 ms) so cancel is seen soon.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm_internal.h"

#define WAIT_SLICE_MS 100

uint64_t shmb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Shared futexes (not FUTEX_PRIVATE): the word is in another process too. */
int shmb_futex_wait_ns(_Atomic uint32_t *word, uint32_t expect, uint64_t ns)
{
    struct timespec ts = {.tv_sec  = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    return (int)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expect, &ts,
                        NULL, 0);
}

int shmb_futex_wait(_Atomic uint32_t *word, uint32_t expect, int ms)
{
    return shmb_futex_wait_ns(word, expect, (uint64_t)ms * 1000000u);
}

void shmb_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

bool shmb_nap(shmb_state_t *st, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)ms * 1000000L;
    until.tv_sec  += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&st->lock);
    while (!atomic_load(&st->cancel) &&
           pthread_cond_timedwait(&st->cond, &st->lock, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&st->lock);
    return !atomic_load(&st->cancel);
}

static void *waiter_main(void *arg)
{
    shmb_state_t *st = arg;
    for (;;) {
        pthread_mutex_lock(&st->lock);
        while (st->cmd == SHMB_CMD_NONE)
            pthread_cond_wait(&st->cond, &st->lock);
        int      cmd   = st->cmd;
        int      kind  = st->wait_kind;
        uint32_t epoch = st->wait_epoch;
        unsigned intr  = st->wait_intr;
        pthread_mutex_unlock(&st->lock);
        if (cmd == SHMB_CMD_STOP)
            return NULL;

        if (cmd == SHMB_CMD_SETUP) {
            pami_result_t rc = shmb_setup_run(st);
            st->setup_rc = rc;
            atomic_store(&st->setup, rc == PAMI_SUCCESS ? SHMB_SETUP_DONE
                                                        : SHMB_SETUP_FAILED);
        } else {
            shmb_reg_sleep(st, kind, epoch, intr);
        }
        /* The command is done before the engine runs, which may give the
         * next one. */
        pthread_mutex_lock(&st->lock);
        if (st->cmd == cmd)
            st->cmd = SHMB_CMD_NONE;
        bool stop = st->cmd == SHMB_CMD_STOP;
        pthread_mutex_unlock(&st->lock);
        if (stop)
            return NULL;
        pami_context_post(st->context, &st->work, shmb_engine, st);
    }
}

pami_result_t shmb_waiter_give(shmb_state_t *st, int cmd, int kind,
                               uint32_t epoch)
{
    if (!st->thread_started) {
        int rc = pthread_create(&st->thread, NULL, waiter_main, st);
        if (rc != 0) {
            pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                              "cannot start the waiter thread: %s",
                              strerror(rc));
            return PAMI_ERROR;
        }
        st->thread_started = true;
    }
    pthread_mutex_lock(&st->lock);
    st->cmd        = cmd;
    st->wait_kind  = kind;
    st->wait_epoch = epoch;
    st->wait_intr  = atomic_load(&st->interrupts);
    pthread_cond_signal(&st->cond);
    pthread_mutex_unlock(&st->lock);
    return PAMI_SUCCESS;
}

/* A sleeper of this task wakes; those of other tasks wake too, find
 * nothing changed and sleep again. */
void shmb_waiter_interrupt(shmb_state_t *st)
{
    if (st->reg != NULL && atomic_load(&st->setup) == SHMB_SETUP_DONE)
        shmb_futex_wake(&st->reg->wake);
}

void shmb_waiter_stop(shmb_state_t *st)
{
    if (!st->thread_started)
        return;
    pthread_mutex_lock(&st->lock);
    atomic_store(&st->cancel, true);
    st->cmd = SHMB_CMD_STOP;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
    shmb_waiter_interrupt(st);
    pthread_join(st->thread, NULL);
    st->thread_started = false;
}

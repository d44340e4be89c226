/*
 * Set-up without messages: the leader creates the region, creates the
 * register and publishes its id in the region; followers watch for the
 * region and the id, attach and count themselves in; the leader is done
 * when the count is the number of local tasks, and then removes both
 * names. Runs on the waiter thread, so every wait here may sleep.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "shm_internal.h"

/* The longest a futex sleep or a poll of the region lasts, so a canceled
 * set-up (fini, a dead task) ends soon. */
#define SLEEP_MS   100
#define BACKOFF_MS 64

static pami_result_t give_up(shmb_state_t *st, uint64_t deadline,
                             const char *what)
{
    if (atomic_load(&st->cancel))
        return st->local_dead ? PAMI_PEER_FAILED : PAMI_SHUTDOWN;
    if (shmb_now_ns() >= deadline) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "task %" PRIu32 ": gave up waiting for %s after "
                          "%" PRIu64 " ms", st->me, what,
                          st->timeout_ns / 1000000);
        return PAMI_TIMEOUT;
    }
    return PAMI_SUCCESS;
}

static uint64_t new_reg_id(void)
{
    uint64_t id = 0;
    while (id == 0) {
        if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
            id = shmb_now_ns() ^ ((uint64_t)getpid() << 32);
    }
    return id;
}

static pami_result_t leader(shmb_state_t *st, uint64_t deadline)
{
    pami_result_t rc = shmb_region_create(st);
    if (rc != PAMI_SUCCESS)
        return rc;
    uint64_t id = new_reg_id();
    rc = shmb_reg_create(st, id);
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_region_t *r = st->region;
    r->reg_id = id;
    atomic_store(&r->state, SHMB_REGION_PUBLISHED);
    shmb_futex_wake(&r->state);

    for (;;) {
        uint32_t a = atomic_load(&r->attached);
        if (a == st->nlocal)
            break;
        if (a > st->nlocal) {
            shmb_count(st, SHMB_STAT_bad_region);
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                              "%s: %" PRIu32 " tasks attached of %zu",
                              st->region_name, a, st->nlocal);
            return PAMI_ERROR;
        }
        if ((rc = give_up(st, deadline, "the local tasks to attach")) !=
            PAMI_SUCCESS) {
            /* Followers already attached, or attaching now, must not
             * believe in a set-up the leader gave up on, and learn why:
             * one may see this before its own news of the death. */
            atomic_store(&r->state, rc == PAMI_PEER_FAILED
                                        ? SHMB_REGION_DEAD
                                        : SHMB_REGION_FAILED);
            shmb_futex_wake(&r->state);
            return rc;
        }
        shmb_futex_wait(&r->attached, a, SLEEP_MS);
    }
    shmb_objects_unlink(st);
    atomic_store(&r->state, SHMB_REGION_READY);
    shmb_futex_wake(&r->state);
    return PAMI_SUCCESS;
}

static pami_result_t leader_failed(shmb_state_t *st, uint32_t state)
{
    if (state == SHMB_REGION_DEAD) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "task %" PRIu32 ": %s: a task of the node died "
                          "during the set-up", st->me, st->region_name);
        return PAMI_PEER_FAILED;
    }
    pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                      "task %" PRIu32 ": %s: the leader gave up on the "
                      "set-up", st->me, st->region_name);
    return PAMI_TIMEOUT;
}

/* Waits for the leader's region; PAMI_EAGAIN when it was closed under us
 * (a leader of an earlier client of this job) and must be looked up again. */
static pami_result_t follower_region(shmb_state_t *st, uint64_t deadline)
{
    int backoff = 1;
    pami_result_t rc;
    while ((rc = shmb_region_open(st)) == PAMI_EAGAIN) {
        shmb_count(st, SHMB_STAT_setup_retries);
        if ((rc = give_up(st, deadline, "the leader's region")) !=
            PAMI_SUCCESS)
            return rc;
        shmb_nap(st, backoff);
        backoff = backoff * 2 > BACKOFF_MS ? BACKOFF_MS : backoff * 2;
    }
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_region_t *r = st->region;
    for (;;) {
        uint32_t s = atomic_load(&r->state);
        if (s == SHMB_REGION_PUBLISHED)
            return PAMI_SUCCESS;
        if (s == SHMB_REGION_CLOSED) {
            shmb_objects_unmap(st);
            shmb_nap(st, 1);
            return PAMI_EAGAIN;
        }
        if (s == SHMB_REGION_FAILED || s == SHMB_REGION_DEAD)
            return leader_failed(st, s);
        if (s != SHMB_REGION_CREATED)
            break;
        if ((rc = give_up(st, deadline, "the register's id")) !=
            PAMI_SUCCESS)
            return rc;
        shmb_futex_wait(&r->state, s, SLEEP_MS);
    }
    shmb_count(st, SHMB_STAT_bad_region);
    pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                      "%s: state became %" PRIu32, st->region_name,
                      atomic_load(&r->state));
    return PAMI_ERROR;
}

static pami_result_t follower(shmb_state_t *st, uint64_t deadline)
{
    pami_result_t rc;
    while ((rc = follower_region(st, deadline)) == PAMI_EAGAIN)
        ;
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_region_t *r  = st->region;
    uint64_t       id = r->reg_id; /* after the state's acquire */
    if (id == 0) {
        shmb_count(st, SHMB_STAT_bad_region);
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%s: published without a register id",
                          st->region_name);
        return PAMI_ERROR;
    }
    if ((rc = shmb_reg_open(st, id)) != PAMI_SUCCESS)
        return rc;
    uint32_t none = 0;
    if (!atomic_compare_exchange_strong(&r->pid[st->my_index], &none,
                                        (uint32_t)getpid())) {
        shmb_count(st, SHMB_STAT_bad_region);
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%s: slot %zu is taken by pid %" PRIu32,
                          st->region_name, st->my_index, none);
        return PAMI_ERROR;
    }
    uint32_t a = atomic_fetch_add(&r->attached, 1) + 1;
    shmb_futex_wake(&r->attached);
    if (a > st->nlocal) {
        shmb_count(st, SHMB_STAT_bad_region);
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%s: %" PRIu32 " tasks attached of %zu",
                          st->region_name, a, st->nlocal);
        return PAMI_ERROR;
    }
    /* Done only when the leader says so: it may have given up before
     * this task attached. Its verdict, not this task's deadline, ends
     * the wait (the leader has a deadline of its own, and a dead leader
     * cancels the set-up): a follower that gave up on its own while the
     * leader saw every task attached would leave the leader's barriers
     * waiting for it. */
    for (;;) {
        uint32_t s = atomic_load(&r->state);
        if (s == SHMB_REGION_READY)
            return PAMI_SUCCESS;
        if (s == SHMB_REGION_FAILED || s == SHMB_REGION_DEAD ||
            s == SHMB_REGION_CLOSED)
            return leader_failed(st, s); /* closed: its fini came first */
        if (s != SHMB_REGION_PUBLISHED) {
            shmb_count(st, SHMB_STAT_bad_region);
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                              "%s: state became %" PRIu32 " after attach",
                              st->region_name, s);
            return PAMI_ERROR;
        }
        if ((rc = give_up(st, UINT64_MAX, "the leader's verdict")) !=
            PAMI_SUCCESS)
            return rc;
        shmb_futex_wait(&r->state, s, SLEEP_MS);
    }
}

pami_result_t shmb_setup_run(shmb_state_t *st)
{
    /* Saturated: the longest PAMI_SHM_BARRIER_TIMEOUT would wrap the
     * sum into a deadline already past. */
    uint64_t now      = shmb_now_ns();
    uint64_t deadline = st->timeout_ns > UINT64_MAX - now
                            ? UINT64_MAX : now + st->timeout_ns;
    bool     lead     = st->my_index == 0;
    shmb_names(st, st->local[0]);
    pami_result_t rc = lead ? leader(st, deadline) : follower(st, deadline);
    if (rc == PAMI_SUCCESS)
        pami_protocol_log(PAMI_PROTOCOL_LOG_DEBUG, SHMB_SUBSYS,
                          "task %" PRIu32 " context %zu: %s %s, register "
                          "%s", st->me, st->offset,
                          lead ? "created" : "attached to", st->region_name,
                          st->reg_name);
    return rc;
}

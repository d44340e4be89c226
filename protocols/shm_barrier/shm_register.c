/*
 * The barrier on the register. Barrier k (this task's k-th, the same
 * on every local task): each task writes k into its own slot; the
 * barrier is complete when every slot holds k or more. In the
 * hierarchical barrier the leader instead writes k into release once the
 * node leaders met, and the followers wait for that.
 *
 * Sleeping: a task about to sleep counts itself in sleepers, reads wake,
 * checks once more, and sleeps on wake. The task whose write completes
 * what others wait for bumps wake when sleepers is not zero. Both sides
 * are sequentially consistent, so either the sleeper sees the write or
 * the writer sees the sleeper.
 */
#include <inttypes.h>

#include "shm_internal.h"

#define SLEEP_MS 100

static void wake_sleepers(shmb_register_t *g)
{
    if (atomic_load(&g->sleepers) == 0)
        return;
    atomic_fetch_add(&g->wake, 1);
    shmb_futex_wake(&g->wake);
}

int shmb_reg_gathered(shmb_state_t *st, uint32_t epoch)
{
    shmb_register_t *g = st->reg;
    for (size_t i = 0; i < st->nlocal; i++) {
        int32_t d = (int32_t)(atomic_load(shmb_slot(g, i)) - epoch);
        if (d < -1 || d > 1)
            return -1;
        if (d < 0)
            return 0;
    }
    return 1;
}

/* As shmb_reg_gathered; also *near when a task not yet there was last
 * seen on CPU cpu (0 when unknown), so that it may need this CPU. */
int shmb_reg_gathered_near(shmb_state_t *st, uint32_t epoch, uint32_t cpu,
                           bool *near)
{
    shmb_register_t *g    = st->reg;
    int              done = 1;
    *near = false;
    for (size_t i = 0; i < st->nlocal; i++) {
        int32_t d = (int32_t)(atomic_load(shmb_slot(g, i)) - epoch);
        if (d < -1 || d > 1)
            return -1;
        if (d < 0) {
            done = 0;
            uint32_t c = atomic_load_explicit(shmb_cpu_hint(g, i),
                                              memory_order_relaxed);
            if (c == 0 || c == cpu)
                *near = true;
        }
    }
    return done;
}

void shmb_reg_publish_cpu(shmb_state_t *st, uint32_t cpu)
{
    _Atomic uint32_t *h = shmb_cpu_hint(st->reg, st->my_index);
    if (atomic_load_explicit(h, memory_order_relaxed) != cpu)
        atomic_store_explicit(h, cpu, memory_order_relaxed);
}

int shmb_reg_released(shmb_state_t *st, uint32_t epoch)
{
    int32_t d = (int32_t)(atomic_load(&st->reg->release) - epoch);
    return d > 0 ? -1 : d == 0;
}

int shmb_reg_check(shmb_state_t *st, int kind, uint32_t epoch)
{
    return kind == SHMB_WAIT_GATHER ? shmb_reg_gathered(st, epoch)
                                    : shmb_reg_released(st, epoch);
}

void shmb_reg_arrive(shmb_state_t *st, uint32_t epoch)
{
    atomic_store(shmb_slot(st->reg, st->my_index), epoch);
    if (shmb_reg_gathered(st, epoch) != 0)
        wake_sleepers(st->reg);
}

/* status before release: a follower reads it after seeing release. */
void shmb_reg_release(shmb_state_t *st, uint32_t epoch, pami_result_t rc)
{
    atomic_store(&st->reg->status, (uint32_t)rc);
    atomic_store(&st->reg->release, epoch);
    wake_sleepers(st->reg);
}

pami_result_t shmb_reg_status(shmb_state_t *st)
{
    uint32_t s = atomic_load(&st->reg->status);
    if (s >= PAMI_RESULT_LAST) {
        shmb_count(st, SHMB_STAT_bad_register);
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "task %" PRIu32 ": register %s: status %" PRIu32,
                          st->me, st->reg_name, s);
        return PAMI_ERROR;
    }
    return (pami_result_t)s;
}

pami_result_t shmb_reg_corrupt(shmb_state_t *st, int kind, uint32_t epoch)
{
    shmb_register_t *g = st->reg;
    shmb_count(st, SHMB_STAT_bad_register);
    if (kind == SHMB_WAIT_RELEASE) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "task %" PRIu32 ": register %s: release %" PRIu32
                          " is ahead of barrier %" PRIu32 "; barriers on "
                          "it fail from now on", st->me, st->reg_name,
                          atomic_load(&g->release), epoch);
        return PAMI_ERROR;
    }
    for (size_t i = 0; i < st->nlocal; i++) {
        uint32_t v = atomic_load(shmb_slot(g, i));
        int32_t  d = (int32_t)(v - epoch);
        if (d < -1 || d > 1) {
            pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                              "task %" PRIu32 ": register %s: slot %zu "
                              "holds %" PRIu32 " in barrier %" PRIu32
                              "; barriers on it fail from now on", st->me,
                              st->reg_name, i, v, epoch);
            break;
        }
    }
    return PAMI_ERROR;
}

void shmb_reg_sleep(shmb_state_t *st, int kind, uint32_t epoch,
                    unsigned intr)
{
    shmb_register_t *g = st->reg;
    while (!atomic_load(&st->cancel) && atomic_load(&st->interrupts) == intr) {
        atomic_fetch_add(&g->sleepers, 1);
        uint32_t w    = atomic_load(&g->wake);
        int      done = shmb_reg_check(st, kind, epoch);
        if (done == 0)
            shmb_futex_wait(&g->wake, w, SLEEP_MS);
        atomic_fetch_sub(&g->sleepers, 1);
        if (done != 0)
            return;
    }
}

int shmb_reg_block(shmb_state_t *st, int kind, uint32_t epoch, uint64_t ns)
{
    shmb_register_t *g     = st->reg;
    uint64_t         start = shmb_now_ns();
    for (;;) {
        atomic_fetch_add(&g->sleepers, 1);
        uint32_t w    = atomic_load(&g->wake);
        int      done = shmb_reg_check(st, kind, epoch);
        uint64_t left = ns - (shmb_now_ns() - start);
        if (done == 0 && left <= ns)
            shmb_futex_wait_ns(&g->wake, w, left);
        atomic_fetch_sub(&g->sleepers, 1);
        if (done == 0)
            done = shmb_reg_check(st, kind, epoch);
        if (done != 0 || shmb_now_ns() - start >= ns)
            return done;
    }
}

/*
 * The shared-memory barrier protocol: its ops table, per-context state,
 * the queue of barriers, and the engine that completes them from
 * progress (docs/protocols/shm-barrier.md).
 *
 * Barriers on a context complete in the order they were started; only
 * the head of the queue is in the register (shm_register.c). A start
 * counts the task in at once and posts the engine; the engine checks the
 * register, polls a little inline, then returns PAMI_EAGAIN (re-posted)
 * until PAMI_SHM_BARRIER_SPIN has passed, and then hands the wait to its
 * waiter thread, which sleeps on a futex and posts the engine again.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pami_barrier.h"
#include "shm_barrier_inline.h"
#include "shm_internal.h"

#define DEFAULT_SPIN_US    "50"
#define DEFAULT_BLOCK_US   "1000"
#define DEFAULT_TIMEOUT_MS "30000"

/* A setting in whole units (the defaults are strings for the config
 * table); the SDK parses it as pami parses its own. */
#define config_u64(name, dflt)                                               \
    pami_protocol_env_size(SHMB_SUBSYS, name, strtoull(dflt, NULL, 10), 0,   \
                           UINT64_MAX / 1000000)

static const pami_config_var_t shmb_config[] = {
    {"PAMI_SHM_BARRIER_SPIN", DEFAULT_SPIN_US,
     "microseconds a task polls the shared-memory barrier register before "
     "it sleeps on a futex (with more tasks than cores it yields meanwhile)"},
    {"PAMI_SHM_BARRIER_BLOCK", DEFAULT_BLOCK_US,
     "with more tasks than cores: microseconds pami_barrier_wait sleeps on "
     "the register's futex, without progressing the context, after its "
     "spin and before it hands the wait to the waiter thread"},
    {"PAMI_SHM_BARRIER_TIMEOUT", DEFAULT_TIMEOUT_MS,
     "milliseconds the shared-memory barrier's set-up waits for the node's "
     "leader and tasks before its barriers fail with PAMI_TIMEOUT"},
};


/* ---- the queue ------------------------------------------------------- */

static void complete_head(shmb_state_t *st, pami_result_t rc)
{
    shmb_req_t *req = st->head;
    st->head = req->next;
    if (st->head == NULL)
        st->tail = &st->head;
    st->spin_start_ns = 0;
    if (rc == PAMI_SUCCESS)
        shmb_count(st, SHMB_STAT_completed);
    else
        shmb_count(st, SHMB_STAT_failed);
    if (rc == PAMI_PEER_FAILED)
        shmb_count(st, SHMB_STAT_peer_failed);
    pami_event_fn fn     = req->done_fn;
    void         *cookie = req->cookie;
    req->next     = st->free_reqs;
    st->free_reqs = req;
    if (fn != NULL)
        fn(st->context, cookie, rc);
}

/* Polls inline this long before returning to progress: a barrier
 * partner on another core usually arrives within it, and one round
 * through progress costs more than the wait. */
#define INLINE_SPIN_NS 2000

/* Polls the register for up to INLINE_SPIN_NS; the clock is read only
 * every 64 polls, the first time after the first 64. */
static int poll_inline(shmb_state_t *st, int kind, uint32_t epoch)
{
    uint64_t start = 0;
    for (unsigned i = 1;; i++) {
        int done = shmb_reg_check(st, kind, epoch);
        if (done != 0)
            return done;
        pami_protocol_cpu_relax();
        if ((i & 63) == 0) {
            uint64_t now = shmb_now_ns();
            if (start == 0)
                start = now;
            else if (now - start >= INLINE_SPIN_NS)
                return 0;
        }
    }
}

/* Waits for the check: inline, then by re-posting for spin_ns, then on
 * the waiter thread. 1 or -1 when the check gave it; 0 when the engine
 * must return *ret. */
static int wait_for(shmb_state_t *st, int kind, uint32_t epoch,
                    pami_result_t *ret)
{
    int done = 0;
    if (!st->oversubscribed && (done = poll_inline(st, kind, epoch)) != 0)
        return done;
    uint64_t now = shmb_now_ns();
    if (st->spin_start_ns == 0)
        st->spin_start_ns = now;
    if (now - st->spin_start_ns < st->spin_ns) {
        /* With more tasks than cores the ones we wait for need the core. */
        if (st->oversubscribed)
            sched_yield();
        *ret = PAMI_EAGAIN;
        return 0;
    }
    st->spin_start_ns = 0;
    shmb_count(st, SHMB_STAT_sleeps);
    st->park = SHMB_PARK_THREAD;
    *ret     = PAMI_SUCCESS;
    if (shmb_waiter_give(st, SHMB_CMD_WAIT, kind, epoch) != PAMI_SUCCESS) {
        st->park = SHMB_PARK_QUEUED;
        *ret     = PAMI_EAGAIN; /* no thread: keep polling */
    }
    return 0;
}

static void arrive(shmb_state_t *st, shmb_req_t *req)
{
    req->epoch = ++st->epoch;
    req->phase = SHMB_PHASE_ARRIVED;
    shmb_reg_arrive(st, req->epoch);
}

/* Waits for kind; 1 done, 0 the engine must return *ret, -1 the register
 * is corrupt (the context's barriers fail from now on). */
static int await(shmb_state_t *st, int kind, uint32_t epoch,
                 pami_result_t *ret)
{
    int done = shmb_reg_check(st, kind, epoch);
    if (done == 0)
        done = wait_for(st, kind, epoch, ret);
    if (done < 0)
        st->broken = shmb_reg_corrupt(st, kind, epoch);
    return done;
}

/* Hierarchical, over several nodes. The leader gathers its node, meets
 * the other leaders, then releases its node with that meeting's result. */
static pami_result_t step_hier(shmb_state_t *st, shmb_req_t *req,
                               pami_result_t *ret)
{
    bool reg = st->nlocal > 1;
    if (st->any_dead) {
        /* Still counted in, so the node's numbers stay aligned. */
        if (reg && req->phase == SHMB_PHASE_START)
            arrive(st, req);
        complete_head(st, PAMI_PEER_FAILED);
        return PAMI_SUCCESS;
    }
    if (req->phase == SHMB_PHASE_START) {
        if (reg)
            arrive(st, req);
        req->phase = SHMB_PHASE_ARRIVED;
    }
    if (st->my_index != 0) {
        int done = await(st, SHMB_WAIT_RELEASE, req->epoch, ret);
        if (done == 0)
            return PAMI_EAGAIN;
        if (done > 0)
            complete_head(st, shmb_reg_status(st));
        return PAMI_SUCCESS;
    }
    if (req->phase == SHMB_PHASE_ARRIVED) {
        int done = reg ? await(st, SHMB_WAIT_GATHER, req->epoch, ret) : 1;
        if (done <= 0)
            return done == 0 ? PAMI_EAGAIN : PAMI_SUCCESS;
        req->phase = SHMB_PHASE_LEADERS;
    }
    if (req->phase == SHMB_PHASE_LEADERS) {
        pami_result_t rc = shmb_hier_leaders(st);
        if (rc == PAMI_EAGAIN) {
            st->park = SHMB_PARK_EVENT;
            *ret     = PAMI_SUCCESS;
            return PAMI_EAGAIN;
        }
        req->rc    = rc;
        req->phase = SHMB_PHASE_RELEASE;
    }
    if (reg)
        shmb_reg_release(st, req->epoch, req->rc);
    complete_head(st, req->rc);
    return PAMI_SUCCESS;
}

/* Moves the head barrier on: PAMI_SUCCESS when it completed (popped) or
 * broke the register, PAMI_EAGAIN when the engine must return *ret. */
static pami_result_t step(shmb_state_t *st, shmb_req_t *req,
                          pami_result_t *ret)
{
    if (req->hier)
        return step_hier(st, req, ret);
    if (st->nlocal == 1) {
        complete_head(st, PAMI_SUCCESS);
        return PAMI_SUCCESS;
    }
    if (req->phase == SHMB_PHASE_START)
        arrive(st, req);
    int done = await(st, SHMB_WAIT_GATHER, req->epoch, ret);
    if (done == 0)
        return PAMI_EAGAIN;
    if (done > 0)
        complete_head(st, PAMI_SUCCESS);
    return PAMI_SUCCESS;
}

pami_result_t shmb_engine(pami_context_t context, void *cookie)
{
    (void)context;
    shmb_state_t *st = cookie;
    st->park = SHMB_PARK_QUEUED;
    for (;;) {
        shmb_req_t *req = st->head;
        if (req == NULL) {
            st->park = SHMB_PARK_IDLE;
            return PAMI_SUCCESS;
        }
        if (st->broken != PAMI_SUCCESS) {
            complete_head(st, st->broken);
            continue;
        }
        if (st->nlocal > 1 && atomic_load(&st->setup) != SHMB_SETUP_DONE) {
            int s = atomic_load(&st->setup);
            if (s == SHMB_SETUP_FAILED) {
                st->broken = st->setup_rc;
                continue;
            }
            if (s == SHMB_SETUP_NONE) {
                atomic_store(&st->setup, SHMB_SETUP_RUNNING);
                if (shmb_waiter_give(st, SHMB_CMD_SETUP, 0, 0) !=
                    PAMI_SUCCESS) {
                    st->setup_rc = PAMI_ERROR;
                    atomic_store(&st->setup, SHMB_SETUP_FAILED);
                    continue;
                }
            }
            st->park = SHMB_PARK_THREAD;
            return PAMI_SUCCESS;
        }
        pami_result_t ret = PAMI_SUCCESS;
        if (step(st, req, &ret) == PAMI_EAGAIN)
            return ret;
    }
}

void shmb_engine_kick(shmb_state_t *st)
{
    if (st->park != SHMB_PARK_EVENT)
        return;
    st->park = SHMB_PARK_QUEUED;
    pami_context_post(st->context, &st->work, shmb_engine, st);
}

/* ---- the public calls ------------------------------------------------ */

static const pami_protocol_ops_t shmb_ops;

static shmb_state_t *state_of(pami_context_t context, bool hier)
{
    const char *call = hier ? "pami_barrier_hier" : "pami_barrier_shm";
    if (context == NULL) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%s on a NULL context", call);
        return NULL;
    }
    shmb_state_t *st = pami_protocol_state(context, &shmb_ops);
    if (st == NULL)
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%s on a context without the protocol", call);
    return st;
}

static shmb_req_t *enqueue(shmb_state_t *st, bool hier,
                           pami_event_fn done_fn, void *cookie)
{
    shmb_req_t *req = st->free_reqs;
    if (req != NULL)
        st->free_reqs = req->next;
    else if ((req = malloc(sizeof(*req))) == NULL)
        return NULL;
    /* On one node the hierarchical barrier is the register's alone. */
    *req = (shmb_req_t){.done_fn = done_fn, .cookie = cookie,
                        .hier = hier && st->nlocal < st->size};
    *st->tail = req;
    st->tail  = &req->next;
    return req;
}

pami_result_t shmb_start(pami_context_t context, bool hier,
                         pami_event_fn done_fn, void *cookie)
{
    shmb_state_t *st = state_of(context, hier);
    if (st == NULL)
        return PAMI_INVAL;
    shmb_req_t *req = enqueue(st, hier, done_fn, cookie);
    if (req == NULL)
        return PAMI_ENOMEM;
    shmb_count(st, SHMB_STAT_barriers);

    if (st->park != SHMB_PARK_IDLE)
        return PAMI_SUCCESS; /* the engine is on its way and finds it */
    /* Count in now, so the last task releases the others without waiting
     * for its own progress; the result comes from progress. */
    if (st->nlocal > 1 && st->broken == PAMI_SUCCESS && !req->hier &&
        atomic_load(&st->setup) == SHMB_SETUP_DONE)
        arrive(st, req);
    st->park = SHMB_PARK_QUEUED;
    pami_context_post(context, &st->work, shmb_engine, st);
    return PAMI_SUCCESS;
}

pami_result_t pami_barrier_shm(pami_context_t context, pami_event_fn done_fn,
                               void *cookie)
{
    return shmb_start(context, false, done_fn, cookie);
}

/* Oversubscribed, between yields: how long a task polls without yielding
 * while every task still to come was last seen on another CPU (it runs,
 * or waits, there; giving this CPU away would not help it, and the one
 * that gets it would only check and give it back). */
#define OTHER_CPU_POLL_NS 5000

static uint32_t cpu_hint(void)
{
    int cpu = sched_getcpu();
    return cpu >= 0 ? (uint32_t)cpu + 1 : 0;
}

/* Blocking form with more tasks than cores: each barrier needs every task
 * to run once after the last arrival, so the cost is context switches.
 * Poll; give the CPU away (sched_yield) when a task still to come may
 * need it, poll on for up to OTHER_CPU_POLL_NS when they all are
 * elsewhere, for spin_ns in all; then sleep on the register's futex for
 * block_ns: the task whose write completes the barrier wakes us itself,
 * one wake-up where the waiter thread's post to the context takes two.
 * The context does not progress meanwhile (bounded). */
static int wait_yielding(shmb_state_t *st, uint32_t epoch, uint32_t cpu)
{
    uint64_t start = shmb_now_ns(), polled_since = 0;
    for (unsigned i = 1;; i++) {
        bool near;
        int  done = shmb_reg_gathered_near(st, epoch, cpu, &near);
        if (done != 0)
            return done;
        if (!near) {
            pami_protocol_cpu_relax();
            if ((i & 15) != 0)
                continue;
            uint64_t now = shmb_now_ns();
            if (polled_since == 0)
                polled_since = now;
            if (now - polled_since < OTHER_CPU_POLL_NS &&
                now - start < st->spin_ns)
                continue;
        }
        if (shmb_now_ns() - start >= st->spin_ns)
            break;
        sched_yield();
        polled_since = 0;
        cpu = cpu_hint();
        shmb_reg_publish_cpu(st, cpu);
    }
    return shmb_reg_block(st, SHMB_WAIT_GATHER, epoch, st->block_ns);
}

pami_result_t shmb_barrier_inline(pami_context_t context, bool hier,
                                  pami_event_fn done_fn, void *cookie)
{
    shmb_state_t *st = state_of(context, hier);
    if (st == NULL)
        return PAMI_INVAL;
    bool fast = st->park == SHMB_PARK_IDLE && st->nlocal > 1 &&
                st->broken == PAMI_SUCCESS &&
                !(hier && st->nlocal < st->size) &&
                atomic_load(&st->setup) == SHMB_SETUP_DONE;
    if (!fast) {
        pami_result_t rc = shmb_start(context, hier, done_fn, cookie);
        return rc == PAMI_SUCCESS ? PAMI_EAGAIN : rc;
    }
    shmb_count(st, SHMB_STAT_barriers);
    uint32_t epoch = ++st->epoch;
    uint32_t cpu   = 0;
    if (st->oversubscribed) {
        cpu = cpu_hint();
        shmb_reg_publish_cpu(st, cpu);
    }
    shmb_reg_arrive(st, epoch);
    int done = st->oversubscribed ? wait_yielding(st, epoch, cpu)
                                  : poll_inline(st, SHMB_WAIT_GATHER, epoch);
    if (done > 0) {
        shmb_count(st, SHMB_STAT_completed);
        return PAMI_SUCCESS;
    }
    if (done < 0) {
        st->broken = shmb_reg_corrupt(st, SHMB_WAIT_GATHER, epoch);
        shmb_count(st, SHMB_STAT_failed);
        return st->broken;
    }
    /* Not yet: it goes on as a queued barrier that has arrived. */
    shmb_req_t *req = enqueue(st, hier, done_fn, cookie);
    if (req == NULL)
        return PAMI_ENOMEM; /* arrived, never waited for: numbers stay */
    req->phase = SHMB_PHASE_ARRIVED;
    req->epoch = epoch;
    /* Oversubscribed, it has spun and slept already: straight to the
     * waiter thread. */
    if (st->oversubscribed)
        st->spin_start_ns = shmb_now_ns() - st->spin_ns;
    st->park   = SHMB_PARK_QUEUED;
    pami_context_post(context, &st->work, shmb_engine, st);
    return PAMI_EAGAIN;
}

/* ---- ops --------------------------------------------------------------- */

static void state_free(shmb_state_t *st)
{
    while (st->free_reqs != NULL) {
        shmb_req_t *r = st->free_reqs;
        st->free_reqs = r->next;
        free(r);
    }
    pthread_cond_destroy(&st->cond);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static pami_result_t shmb_init(const pami_protocol_env_t *env, void **state)
{
    pami_client_attr_t a = {
        .field_mask = PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |
                      PAMI_CLIENT_ATTR_LOCAL_TASKS |
                      PAMI_CLIENT_ATTR_LOCAL_CPUS};
    pami_result_t rc = pami_client_query(env->client, &a);
    if (rc != PAMI_SUCCESS)
        return rc;
    shmb_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PAMI_ENOMEM;
    st->client        = env->client;
    st->context       = env->context;
    st->env           = *env;
    st->me            = a.task;
    st->size          = a.size;
    st->local         = a.local_tasks;
    st->nlocal        = a.num_local_tasks;
    st->my_index      = a.num_local_tasks;
    for (size_t i = 0; i < a.num_local_tasks; i++)
        if (a.local_tasks[i] == a.task)
            st->my_index = i;
    if (st->my_index == st->nlocal) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_ERROR, SHMB_SUBSYS,
                          "task %" PRIu32 " is not among its node's tasks",
                          a.task);
        free(st);
        return PAMI_ERROR;
    }
    pami_protocol_job_key_t key;
    rc = pami_protocol_job_key(env->client, &key);
    if (rc != PAMI_SUCCESS) {
        free(st);
        return rc;
    }
    memcpy(st->job_id, key.name, sizeof(st->job_id));
    st->job_hash = key.hash;
    /* Not fatal for the context: only this protocol's barriers fail. */
    if (st->nlocal > SHMB_MAX_TASKS) {
        pami_protocol_log(PAMI_PROTOCOL_LOG_WARN, SHMB_SUBSYS,
                          "%zu tasks on this node; a register holds %d: "
                          "shared-memory barriers fail", st->nlocal,
                          SHMB_MAX_TASKS);
        st->broken = PAMI_ERROR;
    }
    st->oversubscribed = st->nlocal > a.num_local_cpus;
    st->spin_ns = config_u64("PAMI_SHM_BARRIER_SPIN", DEFAULT_SPIN_US) * 1000;
    st->block_ns =
        config_u64("PAMI_SHM_BARRIER_BLOCK", DEFAULT_BLOCK_US) * 1000;
    st->timeout_ns =
        config_u64("PAMI_SHM_BARRIER_TIMEOUT", DEFAULT_TIMEOUT_MS) * 1000000;
    st->tail  = &st->head;
    st->park  = SHMB_PARK_IDLE;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->cond, NULL);
    st->offset = env->context_offset;
    if ((rc = shmb_hier_init(st, env)) != PAMI_SUCCESS) {
        shmb_hier_fini(st);
        state_free(st);
        return rc;
    }
    *state = st;
    return PAMI_SUCCESS;
}

static void shmb_fini(pami_context_t context, void *state)
{
    (void)context;
    shmb_state_t *st = state;
    shmb_waiter_stop(st);
    while (st->head != NULL)
        complete_head(st, PAMI_SHUTDOWN);
    if (st->region != NULL && st->my_index == 0) {
        atomic_store(&st->region->state, SHMB_REGION_CLOSED);
        shmb_futex_wake(&st->region->state);
    }
    shmb_objects_unlink(st);
    shmb_objects_unmap(st);
    shmb_hier_fini(st);
    state_free(st);
}

static size_t shmb_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    static const char *const names[] = {
#define SHMB_STAT_NAME_(name, text) #name,
        SHMB_FOREACH_STAT(SHMB_STAT_NAME_)
#undef SHMB_STAT_NAME_
    };
    shmb_state_t *st = state;
    for (size_t i = 0; i < SHMB_NUM_STATS && i < max; i++)
        out[i] = (pami_protocol_stat_t){
            .name  = names[i],
            .value = atomic_load_explicit(&st->stats[i],
                                          memory_order_relaxed)};
    return SHMB_NUM_STATS;
}

/* A dead task can never arrive: a task of this node fails every shared-
 * memory barrier, now and later (the waiter thread stops at once); any
 * task fails the hierarchical ones. */
static void shmb_peer_failed(pami_context_t context, void *state,
                             pami_task_t task)
{
    (void)context;
    shmb_state_t *st = state;
    if (task == st->me)
        return;
    st->any_dead = true;
    for (size_t i = 0; i < st->nlocal; i++) {
        if (st->local[i] != task)
            continue;
        pami_protocol_log(PAMI_PROTOCOL_LOG_INFO, SHMB_SUBSYS,
                          "task %" PRIu32 " of this node died: its shared-"
                          "memory barriers fail", task);
        st->local_dead = true;
        st->broken     = PAMI_PEER_FAILED;
        pthread_mutex_lock(&st->lock);
        atomic_store(&st->cancel, true);
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->lock);
    }
    atomic_fetch_add(&st->interrupts, 1);
    shmb_waiter_interrupt(st);
    shmb_engine_kick(st);
}

static const pami_protocol_ops_t shmb_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name         = "shm_barrier",
    .version      = SHMB_VERSION,
    .num_dispatch = 1, /* the leaders' announcement (shm_hier.c) */
    .init         = shmb_init,
    .fini         = shmb_fini,
    .stats        = shmb_stats,
    .peer_failed  = shmb_peer_failed,
    .config       = shmb_config,
    .num_config   = sizeof(shmb_config) / sizeof(shmb_config[0]),
};

PAMI_PROTOCOL_BUILTIN(shmb_ops)

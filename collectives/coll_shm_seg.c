/*
 * The shared-memory collectives' own protocol ("coll_shm": per-context
 * state, counters, PAMI_COLL_SHM_SLOT; no dispatch ids, no messages) and
 * the node's segment: its name, creation by the node's lowest task,
 * attachment by the others, the checks of its header, and its removal.
 * The set-up order (create, barrier, attach, barrier, unlink) is driven
 * by coll_alg_shm.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "coll_shm.h"

#define SLOT_DEFAULT "262144"
#define SLOT_MIN     64
#define SLOT_MAX     ((size_t)1 << 30)
#define SPIN_NS      50000 /* a flag wait polls this long, then sleeps */
#define THREAD_SLICE_NS 100000000ull /* the waiter thread's sleeps */

static const pami_config_var_t cshm_config[] = {
    {"PAMI_COLL_SHM_SLOT", SLOT_DEFAULT,
     "bytes of one slot of the shared-memory collectives' segment (each "
     "task of the node has two); larger messages go in rounds of a slot; "
     "64..2^30, rounded down to a multiple of 64; the same on every task "
     "of a node"},
    {"PAMI_COLL_SHM_AUTO", "1",
     "1: PAMI_ALGORITHM_AUTO picks the shared-memory collectives on a "
     "geometry of this node's tasks; 0: only when named (the same on every "
     "task of a node)"},
    {"PAMI_COLL_SHM_FLAG", "1",
     "1: calls of one round up to 8 KiB synchronise through numbers in "
     "their control lines (flag rounds) when the node has no more tasks "
     "than CPUs; 2: also with more tasks than CPUs (for tests); 0: always "
     "through the barrier register (the same on every task of a node)"},
    {"PAMI_COLL_SHM_CMA", "1",
     "1: the _shm_cma collectives (read the node's other tasks' buffers "
     "with process_vm_readv) may run where the kernel lets a task do it "
     "(no Yama, or ptrace_scope 0; at 1 each task allows its node's "
     "tasks with prctl(PR_SET_PTRACER_ANY)); 0: their checks refuse them "
     "(the same on every task of a node)"},
    {"PAMI_COLL_SHM_EAGER", "1",
     "1: broadcast_shm_eager, and AUTO's broadcasts on a geometry of "
     "this node's tasks (up to 4 KiB with more tasks than CPUs, up to "
     "1 KiB else), go through a ring of 64 entries in the segment (the "
     "root writes and returns); 0: through rounds (the same on every "
     "task of a node)"},
};

static const pami_protocol_ops_t cshm_ops;

/* Settings parse as pami's own (the SDK); the flags default to on. */
/* PREFETCHW (CPUID 0x80000001, ECX bit 8): without it the instruction
 * may fault on older x86 CPUs, so the ring asks first. */
static bool cpu_prefetchw(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8));
#else
    return false;
#endif
}

static bool read_bool(const char *name)
{
    return pami_protocol_env_bool(CSHM_SUBSYS, name, 1) != 0;
}

/* Can this task read its node's other tasks (process_vm_readv needs
 * ptrace access)? The same answer on every task of a node: one kernel,
 * one setting. Yama's scope 1 allows only ancestors, so each task lets
 * any process of its user in, as Open MPI's shared memory does; 2 and 3
 * cannot be helped from here. */
static bool cma_allowed(void)
{
    if (!read_bool("PAMI_COLL_SHM_CMA"))
        return false;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f == NULL)
        return true; /* no Yama */
    int scope = -1;
    if (fscanf(f, "%d", &scope) != 1)
        scope = -1;
    fclose(f);
    if (scope == 0)
        return true;
    if (scope == 1 && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0)
        return true;
    cshm_log(PAMI_PROTOCOL_LOG_INFO, "Yama ptrace_scope %d: the _shm_cma "
             "collectives are off", scope);
    return false;
}

cshm_t *cshm_of(pami_context_t ctx)
{
    return pami_protocol_state(ctx, &cshm_ops);
}

static size_t read_slot(void)
{
    size_t v = (size_t)pami_protocol_env_size(
        CSHM_SUBSYS, "PAMI_COLL_SHM_SLOT", strtoull(SLOT_DEFAULT, NULL, 10),
        SLOT_MIN, SLOT_MAX);
    return v / 64 * 64;
}

static pami_result_t cshm_init(const pami_protocol_env_t *env, void **state)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_TASK |
                                          PAMI_CLIENT_ATTR_LOCAL_TASKS |
                                          PAMI_CLIENT_ATTR_LOCAL_CPUS};
    pami_result_t rc = pami_client_query(env->client, &a);
    if (rc != PAMI_SUCCESS)
        return rc;
    cshm_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return PAMI_ENOMEM;
    /* idx, then alltoall_shm_cma's flags (a byte per task): one block. */
    size_t nl = a.num_local_tasks ? a.num_local_tasks : 1;
    s->idx = calloc(nl, sizeof(*s->idx) + 1);
    if (s->idx == NULL) {
        free(s);
        return PAMI_ENOMEM;
    }
    s->a2a_got = (unsigned char *)(s->idx + nl);
    s->ctx    = env->context;
    s->me     = a.task;
    s->local  = a.local_tasks;
    s->nlocal = a.num_local_tasks;
    s->offset = env->context_offset;
    s->ncpus  = a.num_local_cpus;
    for (size_t i = 0; i < s->nlocal; i++)
        if (s->local[i] == s->me)
            s->my_index = i;
    /* Named as the shm barrier names its objects, so pamirun's clean-up
     * of "pami-<job>*" finds it. */
    pami_protocol_job_key_t key;
    rc = pami_protocol_job_key(env->client, &key);
    if (rc != PAMI_SUCCESS) {
        free(s->idx);
        free(s);
        return rc;
    }
    memcpy(s->job_id, key.name, sizeof(s->job_id));
    s->job_hash = key.hash;
    s->slot     = read_slot();
    s->auto_ok  = read_bool("PAMI_COLL_SHM_AUTO");
    /* With more tasks than CPUs a round needs context switches: the
     * register's waits yield and sleep as that needs. */
    uint64_t flag = pami_protocol_env_size(CSHM_SUBSYS, "PAMI_COLL_SHM_FLAG",
                                           1, 0, 2); /* 2: even so */
    s->flag_ok  = flag == 2 || (flag == 1 && s->nlocal <= s->ncpus);
    s->ring_ok  = read_bool("PAMI_COLL_SHM_EAGER");
    s->cma_ok   = cma_allowed();
    s->pid      = (uint64_t)getpid();
    s->eager_id = cshm_eager_id(); /* looked at on every ring call */
    s->prefetchw = cpu_prefetchw();
    s->spin_ns  = SPIN_NS;
    s->spin_cur = SPIN_NS;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (!cshm_layout(s->nlocal ? s->nlocal : 1, s->slot, &s->hdr_bytes,
                     &s->ring_off, &s->seg_bytes)) {
        free(s->idx);
        free(s);
        return PAMI_INVAL;
    }
    snprintf(s->name, sizeof(s->name), "/pami-%s-collshm-%" PRIu32 "-%zu",
             s->job_id, s->nlocal > 0 ? s->local[0] : s->me, s->offset);
    *state = s;
    return PAMI_SUCCESS;
}

static pami_result_t map(cshm_t *s, int fd)
{
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd, 0);
    if (p == MAP_FAILED) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "mmap of %s (%zu bytes): %s",
                 s->name, s->seg_bytes, strerror(errno));
        return PAMI_ERROR;
    }
    s->seg = p;
    return PAMI_SUCCESS;
}

/* Leader. A name taken already can only be left by an earlier context of
 * this offset in this job that died in its set-up: replaced. */
pami_result_t cshm_seg_create(cshm_t *s)
{
    int fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        cshm_log(PAMI_PROTOCOL_LOG_WARN, "%s exists (left by an earlier "
                 "context of this job): replacing it", s->name);
        shm_unlink(s->name);
        fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot create %s: %s", s->name,
                 strerror(errno));
        return PAMI_ERROR;
    }
    s->named = true;
    pami_result_t rc = PAMI_ERROR;
    if (ftruncate(fd, (off_t)s->seg_bytes) != 0)
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot size %s to %zu bytes: %s",
                 s->name, s->seg_bytes, strerror(errno));
    else
        rc = map(s, fd);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    cshm_hdr_t *h = (cshm_hdr_t *)s->seg; /* zero-filled by ftruncate */
    h->version   = CSHM_VERSION;
    h->nlocal    = (uint32_t)s->nlocal;
    h->slot      = s->slot;
    h->hdr_bytes = s->hdr_bytes;
    h->job_hash  = s->job_hash;
    h->magic     = CSHM_MAGIC;
    atomic_store(&h->attached, 1);
    return PAMI_SUCCESS;
}

/* Follower, after the leader's barrier: maps the segment and counts
 * itself in only when the header says what this task expects. */
pami_result_t cshm_seg_attach(cshm_t *s)
{
    int fd = shm_open(s->name, O_RDWR, 0);
    if (fd < 0) {
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot open %s: %s", s->name,
                 strerror(errno));
        return PAMI_ERROR;
    }
    struct stat sb;
    pami_result_t rc = PAMI_ERROR;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < s->seg_bytes)
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "%s has %lld bytes, expected %zu "
                 "(PAMI_COLL_SHM_SLOT differs between tasks?)", s->name,
                 (long long)sb.st_size, s->seg_bytes);
    else
        rc = map(s, fd);
    close(fd);
    if (rc != PAMI_SUCCESS)
        return rc;
    /* Read once, then checked: another process may write it meanwhile. */
    cshm_hdr_t h;
    memcpy(&h, s->seg, offsetof(cshm_hdr_t, attached));
    uint32_t attached = atomic_load(&((cshm_hdr_t *)s->seg)->attached);
    cshm_expect_t want = {.nlocal = (uint32_t)s->nlocal, .slot = s->slot,
                          .hdr_bytes = s->hdr_bytes,
                          .job_hash = s->job_hash, .bytes = s->seg_bytes};
    const char *why = cshm_hdr_check(&h, attached, &want);
    if (why != NULL) {
        cshm_count(s, CSHM_STAT_segment_bad);
        cshm_log(PAMI_PROTOCOL_LOG_ERROR, "%s: header refused: %s (version "
                 "%u, %u tasks, slot %llu, %u attached; here %d, %zu, %zu)",
                 s->name, why, h.version, h.nlocal,
                 (unsigned long long)h.slot, attached, CSHM_VERSION,
                 s->nlocal, s->slot);
        cshm_seg_release(s);
        return PAMI_ERROR;
    }
    atomic_fetch_add(&((cshm_hdr_t *)s->seg)->attached, 1);
    return PAMI_SUCCESS;
}

/* After the second barrier: the leader removes the name (the mappings
 * stay); everyone reads the same count, so all agree on the outcome. */
bool cshm_seg_finish(cshm_t *s)
{
    if (s->named) {
        shm_unlink(s->name);
        s->named = false;
    }
    return s->seg != NULL &&
           atomic_load(&((cshm_hdr_t *)s->seg)->attached) == s->nlocal;
}

void cshm_seg_release(cshm_t *s)
{
    if (s->named) {
        shm_unlink(s->name);
        s->named = false;
    }
    if (s->seg != NULL)
        munmap(s->seg, s->seg_bytes);
    s->seg = NULL;
}

/* ---- sleeping on the segment (flag rounds) ---- */

uint64_t cshm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Shared futexes: the word is in every task of the node. */
static void futex_wait(_Atomic uint32_t *word, uint32_t expect, uint64_t ns)
{
    struct timespec ts = {.tv_sec  = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expect, &ts, NULL, 0);
}

void cshm_wake_sleepers(cshm_t *s)
{
    atomic_fetch_add(&cshm_hdr(s)->wake, 1);
    syscall(SYS_futex, (uint32_t *)&cshm_hdr(s)->wake, FUTEX_WAKE, INT_MAX,
            NULL, NULL, 0);
}

/* Counted in sleepers before the last check, so a writer that completes
 * the round after it sees us and bumps wake (cshm_publish). */
int cshm_sleep(cshm_t *s, uint64_t target, uint64_t ns)
{
    cshm_hdr_t *h = cshm_hdr(s);
    atomic_fetch_add(&h->sleepers, 1);
    uint32_t w    = atomic_load(&h->wake);
    int      done = cshm_flags_at(s, target);
    if (done == 0 && !atomic_load(&s->interrupt))
        futex_wait(&h->wake, w, ns);
    atomic_fetch_sub(&h->sleepers, 1);
    return done != 0 ? done : cshm_flags_at(s, target);
}

int cshm_sleep_until(cshm_t *s, int (*ready)(cshm_t *), uint64_t ns)
{
    cshm_hdr_t *h = cshm_hdr(s);
    atomic_fetch_add(&h->sleepers, 1);
    uint32_t w    = atomic_load(&h->wake);
    int      done = ready(s);
    if (done == 0 && !atomic_load(&s->interrupt))
        futex_wait(&h->wake, w, ns);
    atomic_fetch_sub(&h->sleepers, 1);
    return done != 0 ? done : ready(s);
}

int cshm_sleep_ring(cshm_t *s, uint64_t what, uint64_t ns)
{
    cshm_hdr_t *h = cshm_hdr(s);
    atomic_fetch_add(&h->sleepers, 1);
    uint32_t w    = atomic_load(&h->wake);
    int      done = cshm_ring_ready(s, what);
    uint64_t first = ns < CSHM_RING_RECHECK_NS ? ns : CSHM_RING_RECHECK_NS;
    if (done == 0 && !atomic_load(&s->interrupt)) {
        futex_wait(&h->wake, w, first);
        /* A writer's store in flight when we counted ourselves in has
         * landed now; later writers see us (ring_wake_if_sleepers). */
        w    = atomic_load(&h->wake);
        done = cshm_ring_ready(s, what);
        if (done == 0 && ns > first && !atomic_load(&s->interrupt))
            futex_wait(&h->wake, w, ns - first);
    }
    atomic_fetch_sub(&h->sleepers, 1);
    return done != 0 ? done : cshm_ring_ready(s, what);
}

static void *waiter_main(void *arg)
{
    cshm_t *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->cmd == CSHM_CMD_NONE)
            pthread_cond_wait(&s->cond, &s->lock);
        int      cmd    = s->cmd;
        uint64_t target = s->cmd_target;
        pthread_mutex_unlock(&s->lock);
        if (cmd == CSHM_CMD_STOP)
            return NULL;
        while (!atomic_load(&s->interrupt) &&
               (cmd == CSHM_CMD_RING
                    ? cshm_sleep_ring(s, target, THREAD_SLICE_NS)
                    : cshm_sleep(s, target, THREAD_SLICE_NS)) == 0)
            ;
        /* Done before the post: the engine may give the next wait. */
        pthread_mutex_lock(&s->lock);
        bool stop = s->cmd == CSHM_CMD_STOP;
        if (!stop)
            s->cmd = CSHM_CMD_NONE;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            return NULL;
        pami_context_post(s->ctx, &s->flag_work, cshm_flag_engine, s);
    }
}

static pami_result_t waiter_give(cshm_t *s, int cmd, uint64_t target)
{
    if (!s->thr_started) {
        int rc = pthread_create(&s->thr, NULL, waiter_main, s);
        if (rc != 0) {
            cshm_log(PAMI_PROTOCOL_LOG_ERROR, "cannot start the waiter "
                     "thread: %s", strerror(rc));
            return PAMI_ERROR;
        }
        s->thr_started = true;
    }
    pthread_mutex_lock(&s->lock);
    s->cmd        = cmd;
    s->cmd_target = target;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return PAMI_SUCCESS;
}

pami_result_t cshm_waiter_give(cshm_t *s, uint64_t target)
{
    return waiter_give(s, CSHM_CMD_WAIT, target);
}

pami_result_t cshm_waiter_give_ring(cshm_t *s, uint64_t what)
{
    return waiter_give(s, CSHM_CMD_RING, what);
}

static void waiter_stop(cshm_t *s)
{
    if (!s->thr_started)
        return;
    pthread_mutex_lock(&s->lock);
    s->cmd = CSHM_CMD_STOP;
    atomic_store(&s->interrupt, true);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (s->seg != NULL)
        cshm_wake_sleepers(s);
    pthread_join(s->thr, NULL);
    s->thr_started = false;
}

/* A task of the node can never write its lines again: flag waits end
 * (the waiter thread's at once; an inline one or a polling engine sees
 * dead), and register rounds fail through the register's own hook. */
static void cshm_peer_failed(pami_context_t context, void *state,
                             pami_task_t task)
{
    (void)context;
    cshm_t *s = state;
    bool local = false;
    for (size_t i = 0; i < s->nlocal; i++)
        local = local || (s->local[i] == task && task != s->me);
    if (!local)
        return;
    s->dead = true;
    atomic_store(&s->interrupt, true);
    if (s->seg != NULL)
        cshm_wake_sleepers(s);
}

/* Entries still queued belong to requests the collectives protocol has
 * finished already (it ends before this one): they are only dropped. */
static void cshm_fini(pami_context_t context, void *state)
{
    (void)context;
    cshm_t *s = state;
    waiter_stop(s);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    cshm_seg_release(s);
    free(s->q);
    free(s->idx);
    free(s->cma_tmp);
    free(s);
}

static size_t cshm_stats(void *state, pami_protocol_stat_t *out, size_t max)
{
    static const char *const names[CSHM_NUM_STATS] = {
        "ops", "register_barriers", "rounds", "barriers", "queued",
        "queue_high_water", "mismatches", "failed", "setups", "inline",
        "flag_rounds", "flag_sleeps", "ring_calls", "ring_waits",
        "ring_sleeps", "segment_bad", "line_rounds"};
    cshm_t *s = state;
    for (size_t i = 0; i < CSHM_NUM_STATS && i < max; i++)
        out[i] = (pami_protocol_stat_t){.name = names[i],
                                        .value = s->stats[i]};
    return CSHM_NUM_STATS;
}

static const pami_protocol_ops_t cshm_ops = {
    PAMI_PROTOCOL_OPS_HEADER,
    .name       = "coll_shm",
    .version    = CSHM_VERSION,
    .init       = cshm_init,
    .fini       = cshm_fini,
    .stats      = cshm_stats,
    .peer_failed = cshm_peer_failed,
    .config     = cshm_config,
    .num_config = sizeof(cshm_config) / sizeof(cshm_config[0]),
};

PAMI_PROTOCOL_BUILTIN(cshm_ops)

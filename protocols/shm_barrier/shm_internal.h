/*
 * The shared-memory barrier's per-context state, shared by its files:
 * objects (naming, create, attach, validate), setup (leader and follower
 * sequence), waiter (the thread that sleeps on futexes and timers so the
 * context never blocks), barrier (the protocol, the queue of barriers and
 * the engine that completes them from progress) and hier (node leaders).
 */
#ifndef SHM_INTERNAL_H
#define SHM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "pami.h"
#include "pami_protocol.h"
#include "shm_layout.h"

#define SHMB_SUBSYS   "shm_barrier"
#define SHMB_NAME_MAX 160

/* Counters (ops->stats); atomic because the waiter thread counts too. */
#define SHMB_FOREACH_STAT(X)                                               \
    X(barriers,      "barriers started")                                    \
    X(completed,     "barriers completed with success")                     \
    X(failed,        "barriers completed with an error")                    \
    X(sleeps,        "waits handed to the waiter thread")                   \
    X(setup_retries, "follower polls of the region before it was ready")    \
    X(bad_region,    "regions refused: magic, version, job, counts, size")  \
    X(bad_register,  "registers refused or found corrupt")                  \
    X(bad_packets,   "leader announcements dropped as malformed")           \
    X(peer_failed,   "barriers ended by a dead task")

typedef enum {
#define SHMB_STAT_ENUM_(name, text) SHMB_STAT_##name,
    SHMB_FOREACH_STAT(SHMB_STAT_ENUM_)
#undef SHMB_STAT_ENUM_
    SHMB_NUM_STATS
} shmb_stat_t;

/* One barrier started and not yet completed. */
typedef struct shmb_req {
    struct shmb_req *next;
    pami_event_fn    done_fn;
    void            *cookie;
    bool             hier;
    int              phase; /* SHMB_PHASE_* */
    uint32_t         epoch; /* its number in the register */
    pami_result_t    rc;    /* hier, leader: the leaders' barrier's */
} shmb_req_t;

enum {
    SHMB_PHASE_START,   /* not yet counted in the register */
    SHMB_PHASE_ARRIVED, /* counted; waits for the release */
    SHMB_PHASE_LEADERS, /* hier, leader: all local tasks here; between nodes */
    SHMB_PHASE_RELEASE  /* hier, leader: the nodes met; release locals */
};

/* Set-up progress, written by the waiter thread, read by the context. */
enum { SHMB_SETUP_NONE, SHMB_SETUP_RUNNING, SHMB_SETUP_DONE,
       SHMB_SETUP_FAILED };

/* Who holds the engine's work item when the engine is not running. */
enum {
    SHMB_PARK_IDLE,   /* no barrier pending: the next start posts it */
    SHMB_PARK_QUEUED, /* posted or running */
    SHMB_PARK_THREAD, /* the waiter thread posts it when its wait ends */
    SHMB_PARK_EVENT   /* a message or callback of this context posts it */
};

/* What the waiter thread is asked to do. */
enum { SHMB_CMD_NONE, SHMB_CMD_SETUP, SHMB_CMD_WAIT, SHMB_CMD_STOP };

/* What a wait is for: every slot at the epoch, or the leader's release. */
enum { SHMB_WAIT_GATHER, SHMB_WAIT_RELEASE };

typedef struct shmb_state {
    pami_client_t      client;
    pami_context_t     context;
    size_t             offset;        /* context offset */
    pami_protocol_env_t env;          /* from init, for sends */
    pami_task_t        me;
    size_t             size;
    const pami_task_t *local;         /* owned by the client */
    size_t             nlocal;
    size_t             my_index;      /* in local */
    bool               oversubscribed;
    uint64_t           spin_ns;       /* spin before sleeping */
    uint64_t           block_ns;      /* blocking form, oversubscribed:
                                         futex sleep without progress */
    uint64_t           timeout_ns;    /* set-up deadline */
    char               job_id[65];    /* pami_protocol_job_key's name */
    uint64_t           job_hash;      /* and its hash */

    /* Shared objects (set-up writes them before SHMB_SETUP_DONE). */
    _Atomic int        setup;
    pami_result_t      setup_rc;
    shmb_region_t     *region;
    size_t             region_bytes;
    shmb_register_t   *reg;
    size_t             reg_bytes;
    char               region_name[SHMB_NAME_MAX];
    char               reg_name[SHMB_NAME_MAX + 32];
    bool               region_named;  /* leader: names still to unlink */
    bool               reg_named;

    /* Barriers, in start order; only the head is in the register. */
    shmb_req_t        *head;
    shmb_req_t       **tail;
    shmb_req_t        *free_reqs;
    uint32_t           epoch;          /* the last barrier this task entered */
    pami_result_t      broken;         /* sticky: every later barrier fails */
    bool               local_dead;     /* a task of this node died */
    int                park;           /* SHMB_PARK_* */
    uint64_t           spin_start_ns;  /* 0: not spinning */
    pami_work_t        work;
    bool               in_engine;

    /* Hierarchical: node leaders, learnt from their announcements. */
    bool               announced;
    uint8_t           *leader_seen;    /* per task: announced as leader */
    pami_task_t       *leaders;        /* sorted once complete */
    size_t             nleaders;
    size_t             covered;        /* tasks of the nodes announced */
    bool               leaders_ready;
    struct shmb_leaders_call *leaders_call; /* leaders' barrier under way */
    pami_result_t      leaders_rc;     /* of the last leaders' barrier */
    bool               leaders_done;
    bool               any_dead;       /* a task of the job died */

    /* Waiter thread. */
    pthread_t          thread;
    bool               thread_started;
    pthread_mutex_t    lock;
    pthread_cond_t     cond;
    int                cmd;            /* SHMB_CMD_* */
    int                wait_kind;      /* CMD_WAIT: SHMB_WAIT_* */
    uint32_t           wait_epoch;
    unsigned           wait_intr;      /* interrupts when it was given */
    atomic_bool        cancel;         /* end the wait or set-up now */
    atomic_uint        interrupts;     /* bumped: end the current wait */

    _Atomic uint64_t   stats[SHMB_NUM_STATS];
} shmb_state_t;

/* Each counter has one writer at a time (the context, or the waiter
 * thread during set-up, which the context waits for): a plain increment
 * of an atomic, no locked instruction on the barrier's path. */
static inline void shmb_count(shmb_state_t *st, shmb_stat_t s)
{
    atomic_store_explicit(&st->stats[s],
                          atomic_load_explicit(&st->stats[s],
                                               memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

uint64_t shmb_now_ns(void);

/* shm_objects.c */
void          shmb_names(shmb_state_t *st, pami_task_t leader);
void          shmb_reg_name(shmb_state_t *st, uint64_t reg_id);
pami_result_t shmb_region_create(shmb_state_t *st);
/* PAMI_EAGAIN while the leader has not made the region (yet). */
pami_result_t shmb_region_open(shmb_state_t *st);
pami_result_t shmb_reg_create(shmb_state_t *st, uint64_t reg_id);
pami_result_t shmb_reg_open(shmb_state_t *st, uint64_t reg_id);
void          shmb_objects_unlink(shmb_state_t *st);
void          shmb_objects_unmap(shmb_state_t *st);

/* shm_setup.c: runs on the waiter thread. */
pami_result_t shmb_setup_run(shmb_state_t *st);

/* shm_register.c: the barrier on the register. Checks return 1 when
 * done, 0 when not yet, -1 when the register holds what cannot be (the
 * caller reports it through shmb_reg_corrupt). */
void shmb_reg_arrive(shmb_state_t *st, uint32_t epoch);
int  shmb_reg_gathered(shmb_state_t *st, uint32_t epoch);
int  shmb_reg_gathered_near(shmb_state_t *st, uint32_t epoch, uint32_t cpu,
                            bool *near);
/* Oversubscribed: this task's CPU hint (CPU + 1, 0 unknown). */
void shmb_reg_publish_cpu(shmb_state_t *st, uint32_t cpu);
int  shmb_reg_released(shmb_state_t *st, uint32_t epoch);
int  shmb_reg_check(shmb_state_t *st, int kind, uint32_t epoch);
void shmb_reg_release(shmb_state_t *st, uint32_t epoch, pami_result_t rc);
pami_result_t shmb_reg_status(shmb_state_t *st);
pami_result_t shmb_reg_corrupt(shmb_state_t *st, int kind, uint32_t epoch);
/* Sleeps (bounded) until the check is not 0, cancel, or interrupts is
 * no longer intr. */
void shmb_reg_sleep(shmb_state_t *st, int kind, uint32_t epoch,
                    unsigned intr);
/* Sleeps on the register until the check is not 0 or ns have passed;
 * returns the check. For the calling thread of a blocking barrier. */
int  shmb_reg_block(shmb_state_t *st, int kind, uint32_t epoch, uint64_t ns);

/* shm_waiter.c */
int  shmb_futex_wait(_Atomic uint32_t *word, uint32_t expect, int ms);
int  shmb_futex_wait_ns(_Atomic uint32_t *word, uint32_t expect,
                        uint64_t ns);
void shmb_futex_wake(_Atomic uint32_t *word);
/* Sleeps up to ms unless cancel is set meanwhile; false when canceled. */
bool shmb_nap(shmb_state_t *st, int ms);
/* Hands a command to the waiter thread (started on first use). */
pami_result_t shmb_waiter_give(shmb_state_t *st, int cmd, int kind,
                               uint32_t epoch);
void          shmb_waiter_stop(shmb_state_t *st);
void          shmb_waiter_interrupt(shmb_state_t *st);

/* shm_barrier.c */
pami_result_t shmb_start(pami_context_t context, bool hier,
                         pami_event_fn done_fn, void *cookie);
pami_result_t shmb_engine(pami_context_t context, void *cookie);
/* Posts the engine if an event was what it waited for. */
void          shmb_engine_kick(shmb_state_t *st);

/* shm_hier.c */
extern const size_t shmb_hier_num_dispatch;
pami_result_t shmb_hier_init(shmb_state_t *st, const pami_protocol_env_t *env);
void          shmb_hier_fini(shmb_state_t *st);
/* Leader, all local tasks arrived: PAMI_EAGAIN until the leaders met
 * (the engine is kicked then), else their barrier's result. */
pami_result_t shmb_hier_leaders(shmb_state_t *st);

#endif /* SHM_INTERNAL_H */

/*
 * pmix bootstrap: started by mpirun, prterun or srun --mpi=pmix, we are a
 * PMIx client. An allgather is put + commit + fence (collecting data) + one
 * get per rank. Every allgather uses a fresh key, so a get can never
 * return a value of an earlier round: the client caches what earlier
 * fences delivered, and the standard does not say which of two values put
 * under one key a later get sees.
 *
 * The process keeps one PMIx reference of its own from its first client
 * to its exit: a PMIx_Finalize that ends the library followed by a new
 * PMIx_Init makes later fences fail (Open MPI 4.1: PMIX_ERR_PARTIAL_SUCCESS
 * within a few create/destroy cycles), and a launcher takes a task that
 * finalized and then died for one that ended normally. Fences are waited
 * for while watching the tasks of this node (their cards, put at the first
 * init): a task that died fails the fence instead of leaving it hanging,
 * and so does one stopped (SIGSTOP) for the caller's stall time.
 *
 * The client reads through its server rather than through PMIx's shared
 * datastore (gds "hash", unless the user chose one in PMIX_MCA_gds): a
 * client takes the datastore's lock for every get, and a task killed
 * while it holds it leaves the launcher's server and every other task
 * blocked on that lock for good (PMIx 3-4's lock is not robust to a dead
 * holder). Bootstrap reads are few, so the round trip costs nothing.
 */
#include "bootstrap.h"
#include "proc_card.h"

#include "fnv1a.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PMIX_BS_KEY_PREFIX "pami.bootstrap."
/* Like the local bootstrap's ids, short enough to fit inside the names of
 * shared objects next to other parts. */
#define PMIX_JOB_ID_MAX 64
/* Under this key each process puts its proc_card_t at its first init. */
#define PMIX_CARD_KEY "pami.bootstrap.card"
/* How often a fence's waiter looks at the tasks of this node. */
#define PMIX_WATCH_MS 100

/* Several clients in one process each get their own keys. Client creation
 * is collective, so every rank numbers its instances the same way. */
static _Atomic uint32_t pmix_instances;

/* The process's own reference, taken by the first init of this pid and
 * dropped at exit. */
static pthread_mutex_t pmix_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t           pmix_holder;
static bool            pmix_atexit_set;

typedef struct {
    pmix_proc_t  me;
    uint32_t     size;
    uint32_t     instance;
    uint64_t     seq; /* same on every rank: all call allgather in order */
    char         job_id[PMIX_JOB_ID_MAX + 1];
    /* Cards of the tasks, fetched while waiting in a fence; card_state:
     * 0 not asked yet, 1 known (on this node), 2 none or elsewhere. */
    proc_card_t *cards;
    uint8_t     *card_state;
    uint64_t     stall_ms;      /* bootstrap_args_t; 0: never */
    uint64_t    *stopped_since; /* per task, ms on CLOCK_MONOTONIC; 0 */
} pmix_state_t;

static int pmix_errno(pmix_status_t status)
{
    switch (status) {
    case PMIX_ERR_NOMEM:
    case PMIX_ERR_OUT_OF_RESOURCE:
        return -ENOMEM;
    case PMIX_ERR_BAD_PARAM:
        return -EINVAL;
    case PMIX_ERR_TIMEOUT:
        return -ETIMEDOUT;
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_LOST_CONNECTION:
    /* What a fence returns when a participant went away. */
    case PMIX_ERR_PARTIAL_SUCCESS:
    case PMIX_ERR_PROC_TERM_WO_SYNC:
    case PMIX_EVENT_PROC_TERMINATED:
        return -ECONNRESET;
    default:
        return -EIO;
    }
}

static int pmix_fail(const char *what, pmix_status_t status)
{
    pami_error("bootstrap", "%s failed: %s", what, PMIx_Error_string(status));
    return pmix_errno(status);
}

static int pmix_detect(void)
{
    /* Every PMIx server sets both for the clients it starts. */
    return getenv("PMIX_RANK") != NULL && getenv("PMIX_NAMESPACE") != NULL;
}

/* The namespace, with bytes unsafe in a file name turned into '_'. A long
 * namespace keeps its head and gets a hash of the whole, so two jobs whose
 * namespaces differ only at the end still get different ids. */
static void pmix_make_job_id(char dst[PMIX_JOB_ID_MAX + 1], const char *nspace)
{
    size_t len = strlen(nspace);
    size_t keep = len <= PMIX_JOB_ID_MAX ? len : PMIX_JOB_ID_MAX - 17;

    for (size_t i = 0; i < keep; i++) {
        char c  = nspace[i];
        int  ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '-';
        dst[i] = ok ? c : '_';
    }
    if (keep < len)
        snprintf(dst + keep, PMIX_JOB_ID_MAX + 1 - keep, "-%016" PRIx64,
                 pami_fnv1a_str(PAMI_FNV1A_INIT, nspace));
    else
        dst[keep] = '\0';
}

static int pmix_job_size(const pmix_proc_t *me, uint32_t *size)
{
    pmix_proc_t   wildcard;
    pmix_value_t *val = NULL;

    PMIX_LOAD_PROCID(&wildcard, me->nspace, PMIX_RANK_WILDCARD);
    pmix_status_t status = PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &val);
    if (status != PMIX_SUCCESS)
        return pmix_fail("PMIx_Get(PMIX_JOB_SIZE)", status);

    int rc = 0;
    if (val->type == PMIX_UINT32 && val->data.uint32 > 0) {
        *size = val->data.uint32;
    } else {
        pami_error("bootstrap", "PMIX_JOB_SIZE has type %d, not a positive "
                   "uint32", (int)val->type);
        rc = -EIO;
    }
    PMIX_VALUE_RELEASE(val);
    return rc;
}

static void pmix_release_at_exit(void)
{
    pthread_mutex_lock(&pmix_hold_lock);
    bool mine = pmix_holder == getpid();
    pmix_holder = 0;
    pthread_mutex_unlock(&pmix_hold_lock);
    /* A forked child inherited the variable, not the connection. */
    if (mine)
        PMIx_Finalize(NULL, 0);
}

/* Our card, for the other tasks of this node to watch us in fences. Not
 * worth failing init for: without it we are only watched less. */
static void pmix_put_card(void)
{
    proc_card_t  card;
    pmix_value_t val;
    if (proc_card_self(&card) != 0)
        return;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type          = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)&card;
    val.data.bo.size  = sizeof(card);
    pmix_status_t status = PMIx_Put(PMIX_LOCAL, PMIX_CARD_KEY, &val);
    if (status == PMIX_SUCCESS)
        status = PMIx_Commit();
    if (status != PMIX_SUCCESS)
        pami_debug("bootstrap", "cannot publish this task's card: %s",
                   PMIx_Error_string(status));
}

/* The first init of the process takes the reference it keeps. */
static pmix_status_t pmix_hold(void)
{
    pmix_status_t status = PMIX_SUCCESS;
    pthread_mutex_lock(&pmix_hold_lock);
    if (pmix_holder != getpid()) {
        pmix_proc_t me;
        if (getenv("PMIX_MCA_gds") == NULL)
            setenv("PMIX_MCA_gds", "hash", 0);
        status = PMIx_Init(&me, NULL, 0);
        if (status == PMIX_SUCCESS) {
            pmix_holder = getpid();
            if (!pmix_atexit_set && atexit(pmix_release_at_exit) == 0)
                pmix_atexit_set = true;
            pmix_put_card();
        }
    }
    pthread_mutex_unlock(&pmix_hold_lock);
    return status;
}

/* Only tasks of this node have cards we can read: with the launcher's
 * list of them, the others are never asked for one. */
static void pmix_mark_remote(pmix_state_t *st)
{
    pmix_proc_t   wildcard;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&wildcard, st->me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&wildcard, PMIX_LOCAL_PEERS, NULL, 0, &val) != PMIX_SUCCESS)
        return;
    if (val->type == PMIX_STRING && val->data.string != NULL) {
        memset(st->card_state, 2, st->size);
        for (const char *p = val->data.string; *p != '\0';) {
            char         *end;
            unsigned long r = strtoul(p, &end, 10);
            if (end == p)
                break;
            if (r < st->size)
                st->card_state[r] = 0;
            p = *end == ',' ? end + 1 : end;
        }
    }
    PMIX_VALUE_RELEASE(val);
}

static int pmix_init(const bootstrap_args_t *args, void **state,
                     uint32_t *rank, uint32_t *size)
{
    pmix_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        pami_error("bootstrap", "out of memory for the pmix bootstrap state");
        return -ENOMEM;
    }

    pmix_status_t status = pmix_hold();
    if (status == PMIX_SUCCESS)
        status = PMIx_Init(&st->me, NULL, 0);
    if (status != PMIX_SUCCESS) {
        int rc = pmix_fail("PMIx_Init", status);
        free(st);
        return rc;
    }

    int rc = pmix_job_size(&st->me, &st->size);
    if (rc == 0 && st->me.rank >= st->size) {
        pami_error("bootstrap", "pmix rank %" PRIu32 " is outside the job "
                   "size %" PRIu32, (uint32_t)st->me.rank, st->size);
        rc = -EIO;
    }
    if (rc == 0) {
        st->cards      = calloc(st->size, sizeof(*st->cards));
        st->card_state = calloc(st->size, 1);
        st->stopped_since = calloc(st->size, sizeof(*st->stopped_since));
        st->stall_ms   = args != NULL ? args->stall_ms : 0;
        if (st->cards == NULL || st->card_state == NULL ||
            st->stopped_since == NULL)
            rc = -ENOMEM;
    }
    if (rc != 0) {
        PMIx_Finalize(NULL, 0);
        free(st->cards);
        free(st->card_state);
        free(st->stopped_since);
        free(st);
        return rc;
    }
    pmix_mark_remote(st);
    pmix_make_job_id(st->job_id, st->me.nspace);
    st->instance = pmix_instances++;
    pami_debug("bootstrap", "pmix rank %" PRIu32 " of %" PRIu32 ", job %s",
               (uint32_t)st->me.rank, st->size, st->job_id);

    *state = st;
    *rank  = st->me.rank;
    *size  = st->size;
    return 0;
}

/* A fence in flight. The waiter may give up on it (a task died); the
 * callback, which PMIx still owes, then frees it. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    bool            done;
    bool            abandoned;
    pmix_status_t   status;
    pmix_info_t     info;
} pmix_fence_t;

static void pmix_fence_free(pmix_fence_t *f)
{
    PMIX_INFO_DESTRUCT(&f->info);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void pmix_fence_done(pmix_status_t status, void *cbdata)
{
    pmix_fence_t *f = cbdata;
    pthread_mutex_lock(&f->lock);
    bool abandoned = f->abandoned;
    f->done   = true;
    f->status = status;
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
    if (abandoned)
        pmix_fence_free(f);
}

static uint64_t pmix_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Whether task r (its card known) has been stopped for the stall time. */
static bool pmix_task_hung(pmix_state_t *st, uint32_t r)
{
    if (st->stall_ms == 0 || !proc_card_stopped(&st->cards[r])) {
        st->stopped_since[r] = 0;
        return false;
    }
    uint64_t now = pmix_now_ms();
    if (st->stopped_since[r] == 0)
        st->stopped_since[r] = now;
    return now - st->stopped_since[r] >= st->stall_ms;
}

/* Looks up the cards not yet known (without waiting for the server), then
 * returns the first task of this node whose process is gone, or stopped
 * for the stall time (*hung), or -1. */
static int64_t pmix_dead_task(pmix_state_t *st, bool *hung)
{
    bool         yes = true;
    pmix_info_t  info;
    PMIX_INFO_CONSTRUCT(&info);
    PMIx_Info_load(&info, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    for (uint32_t r = 0; r < st->size; r++) {
        if (r == st->me.rank || st->card_state[r] == 2)
            continue;
        if (st->card_state[r] == 0) {
            pmix_proc_t   peer;
            pmix_value_t *val = NULL;
            PMIX_LOAD_PROCID(&peer, st->me.nspace, r);
            if (PMIx_Get(&peer, PMIX_CARD_KEY, &info, 1, &val) != PMIX_SUCCESS)
                continue; /* not put yet, or on another node: ask later */
            if (val->type == PMIX_BYTE_OBJECT &&
                val->data.bo.size == sizeof(proc_card_t)) {
                memcpy(&st->cards[r], val->data.bo.bytes, sizeof(proc_card_t));
                st->cards[r].host[PROC_CARD_HOST_LEN - 1] = '\0';
                st->card_state[r] = 1;
            } else {
                st->card_state[r] = 2;
            }
            PMIX_VALUE_RELEASE(val);
        }
        if (st->card_state[r] == 1 && proc_card_dead(&st->cards[r])) {
            PMIX_INFO_DESTRUCT(&info);
            return r;
        }
        if (st->card_state[r] == 1 && pmix_task_hung(st, r)) {
            *hung = true;
            PMIX_INFO_DESTRUCT(&info);
            return r;
        }
    }
    PMIX_INFO_DESTRUCT(&info);
    return -1;
}

static int pmix_fence(pmix_state_t *st, bool collect)
{
    pmix_proc_t   wildcard;
    pmix_fence_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -ENOMEM;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    PMIX_INFO_CONSTRUCT(&f->info);
    PMIx_Info_load(&f->info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);

    PMIX_LOAD_PROCID(&wildcard, st->me.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t status = PMIx_Fence_nb(&wildcard, 1, &f->info, 1,
                                         pmix_fence_done, f);
    if (status != PMIX_SUCCESS) {
        pmix_fence_free(f);
        return pmix_fail("PMIx_Fence_nb", status);
    }
    int64_t dead = -1;
    bool    hung = false;
    memset(st->stopped_since, 0, st->size * sizeof(*st->stopped_since));
    pthread_mutex_lock(&f->lock);
    while (!f->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += PMIX_WATCH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&f->cond, &f->lock, &ts) == 0 || f->done)
            continue;
        pthread_mutex_unlock(&f->lock);
        dead = pmix_dead_task(st, &hung);
        pthread_mutex_lock(&f->lock);
        if (dead >= 0 && !f->done) {
            f->abandoned = true;
            pthread_mutex_unlock(&f->lock);
            if (hung) {
                pami_error("bootstrap", "PMIx_Fence: rank %" PRId64 " is "
                           "stopped (state T) for %" PRIu64 " ms",
                           dead, st->stall_ms);
                return -ETIMEDOUT;
            }
            pami_error("bootstrap", "PMIx_Fence: rank %" PRId64 " died "
                       "before it joined", dead);
            return -ECONNRESET;
        }
    }
    status = f->status;
    pthread_mutex_unlock(&f->lock);
    pmix_fence_free(f);
    if (status != PMIX_SUCCESS)
        return pmix_fail("PMIx_Fence", status);
    return 0;
}

static int pmix_publish(const char *key, const void *send, size_t len)
{
    pmix_value_t val;

    /* PMIx_Put copies the value; the caller's buffer is only borrowed. */
    PMIX_VALUE_CONSTRUCT(&val);
    val.type          = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)send;
    val.data.bo.size  = len;
    pmix_status_t status = PMIx_Put(PMIX_GLOBAL, key, &val);
    if (status != PMIX_SUCCESS)
        return pmix_fail("PMIx_Put", status);
    status = PMIx_Commit();
    if (status != PMIX_SUCCESS)
        return pmix_fail("PMIx_Commit", status);
    return 0;
}

static int pmix_fetch(pmix_state_t *st, const char *key, uint32_t rank,
                      void *dst, size_t len)
{
    pmix_proc_t   peer;
    pmix_value_t *val = NULL;

    /* The collecting fence brought every value here. One that is not
     * was never put: its rank died and the launcher (mpirun
     * --enable-recovery) let the fence end without it. Asking the
     * launcher for it would wait forever. */
    bool        yes = true;
    pmix_info_t info;
    PMIX_INFO_CONSTRUCT(&info);
    PMIx_Info_load(&info, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    PMIX_LOAD_PROCID(&peer, st->me.nspace, rank);
    pmix_status_t status = PMIx_Get(&peer, key, &info, 1, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (status == PMIX_ERR_NOT_FOUND) {
        pami_error("bootstrap", "rank %" PRIu32 " put nothing under %s: it "
                   "died before the fence", rank, key);
        return -ECONNRESET;
    }
    if (status != PMIX_SUCCESS) {
        pami_error("bootstrap", "PMIx_Get(%s) from rank %" PRIu32
                   " failed: %s", key, rank, PMIx_Error_string(status));
        return pmix_errno(status);
    }

    int rc = -EIO;
    if (val->type != PMIX_BYTE_OBJECT)
        pami_error("bootstrap", "rank %" PRIu32 " put pmix type %d under %s, "
                   "not bytes", rank, (int)val->type, key);
    else if (val->data.bo.size != len)
        pami_error("bootstrap", "rank %" PRIu32 " gave %zu bytes under %s, "
                   "this rank expected %zu", rank, val->data.bo.size, key, len);
    else
        rc = 0;
    if (rc == 0 && len > 0)
        memcpy(dst, val->data.bo.bytes, len);
    PMIX_VALUE_RELEASE(val);
    return rc;
}

static int pmix_allgather(void *state, const void *send, void *recv,
                          size_t len)
{
    pmix_state_t *st = state;
    char          key[sizeof(PMIX_BS_KEY_PREFIX) + 32];

    if (st == NULL || (len > 0 && (send == NULL || recv == NULL))) {
        pami_error("bootstrap", "pmix allgather: bad arguments");
        return -EINVAL;
    }
    /* Nothing to exchange, but the call stays collective. */
    if (len == 0)
        return pmix_fence(st, false);

    snprintf(key, sizeof(key), PMIX_BS_KEY_PREFIX "%" PRIu32 ".%" PRIu64,
             st->instance, st->seq++);
    int rc = pmix_publish(key, send, len);
    if (rc == 0)
        rc = pmix_fence(st, true);
    for (uint32_t r = 0; rc == 0 && r < st->size; r++)
        rc = pmix_fetch(st, key, r, (char *)recv + (size_t)r * len, len);
    return rc;
}

static int pmix_barrier(void *state)
{
    if (state == NULL)
        return -EINVAL;
    return pmix_fence(state, false);
}

static const char *pmix_job_id(void *state)
{
    return state != NULL ? ((pmix_state_t *)state)->job_id : NULL;
}

/* PMIx's server removes it at the job's end, also after SIGKILL (seen
 * with Open MPI 4.1's mpirun). */
static int pmix_cleanup_dir(void *state, const char *path)
{
    if (state == NULL || path == NULL)
        return -EINVAL;
    pmix_info_t info[2];
    bool        recursive = true;
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIx_Info_load(&info[0], PMIX_REGISTER_CLEANUP_DIR, path, PMIX_STRING);
    PMIx_Info_load(&info[1], PMIX_CLEANUP_RECURSIVE, &recursive, PMIX_BOOL);
    pmix_info_t  *results  = NULL;
    size_t        nresults = 0;
    pmix_status_t status   = PMIx_Job_control(NULL, 0, info, 2, &results,
                                              &nresults);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (results != NULL)
        PMIX_INFO_FREE(results, nresults);
    if (status != PMIX_SUCCESS)
        return pmix_fail("PMIx_Job_control (cleanup)", status);
    return 0;
}

static void pmix_fini(void *state)
{
    if (state == NULL)
        return;
    pmix_status_t status = PMIx_Finalize(NULL, 0);
    if (status != PMIX_SUCCESS)
        pami_warn("bootstrap", "PMIx_Finalize failed: %s",
                  PMIx_Error_string(status));
    pmix_state_t *st = state;
    free(st->cards);
    free(st->card_state);
    free(st->stopped_since);
    free(st);
}

const bootstrap_ops_t bootstrap_pmix_ops = {
    .name      = "pmix",
    .detect    = pmix_detect,
    .init      = pmix_init,
    .allgather = pmix_allgather,
    .barrier   = pmix_barrier,
    .job_id    = pmix_job_id,
    .cleanup_dir = pmix_cleanup_dir,
    .fini      = pmix_fini,
};

/*
 * pmix bootstrap: started by mpirun, prterun or srun --mpi=pmix, we are a
 * PMIx client. An allgather is put + commit + fence (collecting data) + one
 * get per rank. Every allgather uses a fresh key, so a get can never
 * return a value of an earlier round: the client caches what earlier
 * fences delivered, and the standard does not say which of two values put
 * under one key a later get sees.
 */
#include "bootstrap.h"

#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <pmix.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PMIX_BS_KEY_PREFIX "pami.bootstrap."
/* Like the local bootstrap's ids, short enough to fit inside the names of
 * shared objects next to other parts. */
#define PMIX_JOB_ID_MAX 64

/* Several clients in one process each get their own keys. Client creation
 * is collective, so every rank numbers its instances the same way. */
static _Atomic uint32_t pmix_instances;

typedef struct {
    pmix_proc_t me;
    uint32_t    size;
    uint32_t    instance;
    uint64_t    seq; /* same on every rank: all call allgather in order */
    char        job_id[PMIX_JOB_ID_MAX + 1];
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

static uint64_t pmix_fnv1a(const char *text)
{
    uint64_t hash = 0xcbf29ce484222325ull;

    for (; *text != '\0'; text++)
        hash = (hash ^ (uint8_t)*text) * 0x100000001b3ull;
    return hash;
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
                 pmix_fnv1a(nspace));
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

static int pmix_init(const bootstrap_args_t *args, void **state,
                     uint32_t *rank, uint32_t *size)
{
    (void)args;
    pmix_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        pami_error("bootstrap", "out of memory for the pmix bootstrap state");
        return -ENOMEM;
    }

    pmix_status_t status = PMIx_Init(&st->me, NULL, 0);
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
    if (rc != 0) {
        PMIx_Finalize(NULL, 0);
        free(st);
        return rc;
    }
    pmix_make_job_id(st->job_id, st->me.nspace);
    st->instance = pmix_instances++;
    pami_debug("bootstrap", "pmix rank %" PRIu32 " of %" PRIu32 ", job %s",
               (uint32_t)st->me.rank, st->size, st->job_id);

    *state = st;
    *rank  = st->me.rank;
    *size  = st->size;
    return 0;
}

static int pmix_fence(pmix_state_t *st, bool collect)
{
    pmix_proc_t wildcard;
    pmix_info_t info;

    PMIX_LOAD_PROCID(&wildcard, st->me.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_CONSTRUCT(&info);
    PMIx_Info_load(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_status_t status = PMIx_Fence(&wildcard, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
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

    PMIX_LOAD_PROCID(&peer, st->me.nspace, rank);
    pmix_status_t status = PMIx_Get(&peer, key, NULL, 0, &val);
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

static void pmix_fini(void *state)
{
    if (state == NULL)
        return;
    pmix_status_t status = PMIx_Finalize(NULL, 0);
    if (status != PMIX_SUCCESS)
        pami_warn("bootstrap", "PMIx_Finalize failed: %s",
                  PMIx_Error_string(status));
    free(state);
}

const bootstrap_ops_t bootstrap_pmix_ops = {
    .name      = "pmix",
    .detect    = pmix_detect,
    .init      = pmix_init,
    .allgather = pmix_allgather,
    .barrier   = pmix_barrier,
    .job_id    = pmix_job_id,
    .fini      = pmix_fini,
};

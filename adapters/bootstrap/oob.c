/*
 * oob bootstrap: the program already has a launcher and a collective of its
 * own (MPI, a PGAS runtime, UCC's OOB) and hands us its allgather. We only
 * forward to it and derive a job id that all ranks share.
 */
#include "bootstrap.h"

#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <unistd.h>

/* "oob-" + 8 hex (pid) + "-" + 16 hex (random) + NUL fits with room. */
#define OOB_JOB_ID_LEN 40

typedef struct {
    bootstrap_allgather_fn fn;
    void                  *cookie;
    uint32_t               rank;
    uint32_t               size;
    uint8_t               *scratch; /* size bytes, for barrier */
    char                   job_id[OOB_JOB_ID_LEN];
} oob_state_t;

static int oob_call(oob_state_t *st, const void *send, void *recv, size_t len)
{
    int rc = st->fn(st->cookie, send, recv, len);
    if (rc != 0) {
        pami_error("bootstrap",
                   "oob allgather callback of rank %" PRIu32 " failed (%d)",
                   st->rank, rc);
        return -EIO;
    }
    return 0;
}

static uint64_t oob_random64(void)
{
    uint64_t value = 0;

    /* Non-blocking: a job id need not be cryptographic, and init must not
     * hang on a machine whose entropy pool is not ready yet. */
    if (getrandom(&value, sizeof(value), GRND_NONBLOCK) == sizeof(value))
        return value;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    value = (uint64_t)tv.tv_sec * 1000000ull + (uint64_t)tv.tv_usec;
    return value ^ ((uint64_t)(uintptr_t)&tv << 17);
}

/* Rank 0 invents the id; one allgather tells everyone rank 0's. */
static int oob_agree_job_id(oob_state_t *st)
{
    size_t len = sizeof(st->job_id);
    char  *all = calloc(st->size, len);
    if (all == NULL) {
        pami_error("bootstrap", "out of memory for the oob job id exchange");
        return -ENOMEM;
    }
    memset(st->job_id, 0, len);
    if (st->rank == 0)
        snprintf(st->job_id, len, "oob-%08lx-%016" PRIx64,
                 (unsigned long)getpid(), oob_random64());

    int rc = oob_call(st, st->job_id, all, len);
    if (rc == 0) {
        memcpy(st->job_id, all, len);
        st->job_id[len - 1] = '\0';
        if (st->job_id[0] == '\0') {
            pami_error("bootstrap", "oob allgather returned an empty job id "
                       "from rank 0; does the callback fill recv in rank order?");
            rc = -EIO;
        }
    }
    free(all);
    return rc;
}

static int oob_check_args(const bootstrap_args_t *args)
{
    if (args == NULL || args->oob_allgather == NULL) {
        pami_error("bootstrap", "oob bootstrap needs an allgather callback");
        return -EINVAL;
    }
    if (args->oob_size == 0 || args->oob_rank >= args->oob_size) {
        pami_error("bootstrap", "oob rank %" PRIu32 " of size %" PRIu32
                   " is not a valid place in a group", args->oob_rank,
                   args->oob_size);
        return -EINVAL;
    }
    return 0;
}

static int oob_init(const bootstrap_args_t *args, void **state,
                    uint32_t *rank, uint32_t *size)
{
    int rc = oob_check_args(args);
    if (rc != 0)
        return rc;

    oob_state_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        goto err_nomem;
    st->scratch = malloc(args->oob_size);
    if (st->scratch == NULL)
        goto err_nomem;
    st->fn     = args->oob_allgather;
    st->cookie = args->oob_cookie;
    st->rank   = args->oob_rank;
    st->size   = args->oob_size;

    rc = oob_agree_job_id(st);
    if (rc != 0)
        goto err;
    pami_debug("bootstrap", "oob rank %" PRIu32 " of %" PRIu32 ", job %s",
               st->rank, st->size, st->job_id);
    *state = st;
    *rank  = st->rank;
    *size  = st->size;
    return 0;

err_nomem:
    pami_error("bootstrap", "out of memory for the oob bootstrap state");
    rc = -ENOMEM;
err:
    if (st != NULL)
        free(st->scratch);
    free(st);
    return rc;
}

static int oob_allgather(void *state, const void *send, void *recv,
                         size_t len)
{
    oob_state_t *st = state;

    if (st == NULL || (len > 0 && (send == NULL || recv == NULL))) {
        pami_error("bootstrap", "oob allgather: bad arguments");
        return -EINVAL;
    }
    return oob_call(st, send, recv, len);
}

static int oob_barrier(void *state)
{
    oob_state_t *st = state;
    uint8_t      token = 1;

    if (st == NULL)
        return -EINVAL;
    return oob_call(st, &token, st->scratch, 1);
}

static const char *oob_job_id(void *state)
{
    return state != NULL ? ((oob_state_t *)state)->job_id : NULL;
}

static void oob_fini(void *state)
{
    oob_state_t *st = state;

    if (st == NULL)
        return;
    free(st->scratch);
    free(st);
}

const bootstrap_ops_t bootstrap_oob_ops = {
    .name      = "oob",
    .detect    = NULL, /* chosen only when the program passes its allgather */
    .init      = oob_init,
    .allgather = oob_allgather,
    .barrier   = oob_barrier,
    .job_id    = oob_job_id,
    .fini      = oob_fini,
};

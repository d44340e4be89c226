/*
 * Bootstrap: how the tasks of a job find each other before UCX can talk.
 * One ops table, three implementations (local = served by pamirun, pmix,
 * oob = the program's own allgather). Functions return 0 on success or a
 * negative errno (-EINVAL, -ENOMEM, -EIO, -ETIMEDOUT, -ECONNRESET when a
 * peer or the launcher went away); the core maps those to pami results.
 *
 * This layer knows nothing of pami/ and includes only util/.
 */
#ifndef PAMI_ADAPTERS_BOOTSTRAP_H
#define PAMI_ADAPTERS_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

typedef int (*bootstrap_allgather_fn)(void *cookie, const void *send,
                                      void *recv, size_t len);

typedef struct {
    /* oob only: the program's allgather and the group it spans. */
    bootstrap_allgather_fn oob_allgather;
    void                  *oob_cookie;
    uint32_t               oob_rank;
    uint32_t               oob_size;
    /* Milliseconds a task of this node may stay stopped (SIGSTOP) while a
     * collective waits for it before the collective fails (-ETIMEDOUT);
     * 0: never. Used by pmix (pamirun watches its ranks itself). */
    uint64_t               stall_ms;
} bootstrap_args_t;

typedef struct bootstrap_ops {
    const char *name;
    /* Non-zero when the environment says this bootstrap applies (e.g. the
     * variables pamirun or a PMIx launcher set). NULL: never automatic. */
    int  (*detect)(void);
    int  (*init)(const bootstrap_args_t *args, void **state, uint32_t *rank,
                 uint32_t *size);
    /* Collective: each rank gives len bytes; recv gets size * len bytes,
     * rank i's at offset i * len. len may differ between calls but every
     * rank passes the same len in the same call. */
    int  (*allgather)(void *state, const void *send, void *recv, size_t len);
    int  (*barrier)(void *state);
    /* A stable string naming the job (same on every rank, different for two
     * jobs at once), for names of shared objects. Owned by the state. */
    const char *(*job_id)(void *state);
    /* Asks the launcher to remove the directory path, with its content,
     * when the job ends, however its processes end. NULL when the
     * launcher cannot (pamirun removes the job's files itself). */
    int  (*cleanup_dir)(void *state, const char *path);
    void (*fini)(void *state);
} bootstrap_ops_t;

extern const bootstrap_ops_t bootstrap_local_ops;
extern const bootstrap_ops_t bootstrap_pmix_ops;
extern const bootstrap_ops_t bootstrap_oob_ops;

/* Environment variables pamirun sets for each rank it starts. */
#define PAMIRUN_ENV_SOCKET "PAMI_BOOTSTRAP_SOCKET" /* path of the Unix socket */
#define PAMIRUN_ENV_RANK   "PAMI_RANK"
#define PAMIRUN_ENV_SIZE   "PAMI_SIZE"
#define PAMIRUN_ENV_JOBID  "PAMI_JOB_ID"
/* The job's directory for shared-memory files (UCX's and pami's own),
 * which the launcher removes at the job's end: pamirun makes it, under
 * PMIx each task does (pami/job_dir.c). %s: the job id. */
#define PAMI_JOB_DIR_FMT   "/dev/shm/pami-%s-ucx"
/* "1" when pamirun prefixes every output line with the rank itself
 * (--tag-output), so pami's log lines leave theirs out. */
#define PAMIRUN_ENV_TAGGED "PAMI_OUTPUT_TAGGED"

#endif

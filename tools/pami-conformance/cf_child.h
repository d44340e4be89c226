/* The pipe protocol between a rank's runner and its case process. */
#ifndef CF_CHILD_H
#define CF_CHILD_H

#include "cf.h"

/* The case process reads the runner's answers on fd 3, writes on fd 4. */
#define CF_FD_FROM_RUNNER 3
#define CF_FD_TO_RUNNER   4

/* Largest contribution to one exchange. */
#define CF_MSG_MAX (1u << 20)

/* CF_MSG_JOB: the case's job key (pami_protocol_job_key's name, 65
 * bytes), sent once the client exists, so the runner can remove what the
 * job leaves in /dev/shm if the process dies (cf_leftovers.h). */
enum { CF_MSG_ALLGATHER = 1, CF_MSG_RESULT = 2, CF_MSG_JOB = 3 };

#define CF_JOB_KEY_LEN 65

/* The runner's answer to an exchange: this status, then (when 0) the
 * gathered bytes. Non-zero: a task's case process is gone, the exchange
 * cannot complete. */
typedef struct {
    int32_t status;
} cf_reply_hdr_t;

typedef struct {
    uint32_t type;
    uint32_t len;
} cf_msg_hdr_t;

enum { CF_PASSED = 0, CF_FAILED = 1, CF_TIMEOUT = 2, CF_CRASHED = 3,
       CF_SKIPPED = 4 };

typedef struct {
    int32_t status;
    char    msg[772];
} cf_result_msg_t;

typedef struct {
    pami_task_t rank;
    size_t      size;
    uint64_t    seed;
    double      timeout;
    const char *plugin;
} cf_child_args_t;

int cf_child_main(const cf_case_t *c, const cf_child_args_t *a);

#endif /* CF_CHILD_H */

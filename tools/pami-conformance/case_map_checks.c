/*
 * map_checks: api.md, pami_memregion_map: PAMI_INVAL for "a peer's shared
 * region whose segment ... is not what the handle describes (size, owner,
 * mode)"; protocols/rma.md, shared regions: "fstat must show a regular
 * file of this effective user, no group or other permission bits, of
 * exactly the page rounded bytes; only then is it mapped ... (warned, not
 * mapped)". Each task's own segment is damaged by its owner (a group bit,
 * then the wrong size), the node's other tasks try to map it, and once
 * repaired it maps and shows what its owner wrote. Vacuous without a
 * node peer.
 */
#include "cf.h"

#include <pami_protocol.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The /dev/shm path of this task's only segment of context 0. */
static int own_segment(cf_env_t *e, char *path, size_t len)
{
    pami_protocol_job_key_t jk;
    if (pami_protocol_job_key(e->client, &jk) != PAMI_SUCCESS)
        return -1;
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "pami-%s-mr-%u-0-", jk.name, e->task);
    DIR *d = opendir("/dev/shm");
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(path, len, "/dev/shm/%s", de->d_name);
            n++;
        }
    closedir(d);
    return n == 1 ? 0 : -1;
}

/* Each local peer's region mapped once more: how many gave want. */
static int map_peers(cf_env_t *e, const pami_memregion_t *all,
                     const pami_task_t *local, size_t nlocal,
                     pami_result_t want, const char *what)
{
    for (size_t i = 0; i < nlocal; i++) {
        if (local[i] == e->task)
            continue;
        void *at = NULL;
        pami_result_t rc = pami_memregion_map(e->ctx, &all[local[i]], &at);
        if (rc != want) {
            CF_FAIL(e, "expected pami_memregion_map of task %u's region %s "
                    "to give %s, seen %s", local[i], what, cf_rc_name(want),
                    cf_rc_name(rc));
            return -1;
        }
        if (want == PAMI_SUCCESS && ((uint32_t *)at)[0] != 0xcf00 + local[i]) {
            CF_FAIL(e, "expected task %u's mark in its mapped region",
                    local[i]);
            return -1;
        }
    }
    return 0;
}

static int step(cf_env_t *e)
{
    int token = 0, tokens[1024];
    if (e->size > 1024 || cf_allgather(&token, tokens, sizeof(token)) != 0) {
        CF_FAIL(e, "expected the runner's exchange");
        return -1;
    }
    return 0;
}

static void map_checks(cf_env_t *e)
{
    pami_client_attr_t a = {.field_mask = PAMI_CLIENT_ATTR_LOCAL_TASKS};
    CF_OK(e, pami_client_query(e->client, &a));
    long page = sysconf(_SC_PAGESIZE);
    void *mine = NULL;
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_alloc(e->ctx, (size_t)page + 1, &mine, &mr));
    ((uint32_t *)mine)[0] = 0xcf00 + e->task;
    char path[512];
    CF_CHECK(e, own_segment(e, path, sizeof(path)) == 0, "expected one "
             "segment of this task's context 0 in /dev/shm");
    static pami_memregion_t all[1024];
    CF_CHECK(e, e->size <= 1024 && cf_allgather(&mr, all, sizeof(mr)) == 0,
             "expected the runner's exchange");
    /* A group permission bit. */
    CF_CHECK(e, chmod(path, 0640) == 0, "expected chmod of %s", path);
    if (step(e) || map_peers(e, all, a.local_tasks, a.num_local_tasks,
                             PAMI_INVAL, "with mode 0640") || step(e))
        return;
    /* Mode back, one page short. */
    CF_CHECK(e, chmod(path, 0600) == 0 && truncate(path, page) == 0,
             "expected chmod and truncate of %s", path);
    if (step(e) || map_peers(e, all, a.local_tasks, a.num_local_tasks,
                             PAMI_INVAL, "one page short") || step(e))
        return;
    /* Repaired: it maps, with the owner's mark. */
    CF_CHECK(e, truncate(path, 2 * page) == 0, "expected truncate of %s",
             path);
    if (step(e) || map_peers(e, all, a.local_tasks, a.num_local_tasks,
                             PAMI_SUCCESS, "once repaired") || step(e))
        return;
    CF_OK(e, pami_memregion_destroy(e->ctx, &mr));
    CF_OK(e, pami_dispatch_fence(e->client));
}

const cf_case_t cf_map_checks_cases[] = {
    {"rma", "map_checks", 1, 0, 0, map_checks, NULL},
};
const size_t cf_num_map_checks_cases =
    sizeof(cf_map_checks_cases) / sizeof(cf_map_checks_cases[0]);

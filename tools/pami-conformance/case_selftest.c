/*
 * Suite selftest: the runner's own checks, not part of `all`. Each case
 * leaves named shared-memory objects of its job in /dev/shm and then
 * dies (SIGKILL) or hangs until the runner kills it at --timeout; each
 * task prints the names it saw on stderr so that
 * test/conformance/leftovers_check.py can check that the runner removed
 * them (docs/conformance.md, "Leftovers"). Both are expected not to pass.
 */
#include "cf.h"

#include <pami_barrier.h>
#include <pami_protocol.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A region of pami_memregion_alloc and, with node peers, the
 * shared-memory barrier's objects; then every object of the job this
 * task sees, one line each. */
static void leave_objects(cf_env_t *e)
{
    void *addr;
    pami_memregion_t mr;
    CF_OK(e, pami_memregion_alloc(e->ctx, 4096, &addr, &mr));
    memset(addr, 0x5a, 4096);
    CF_OK(e, pami_barrier_wait(e->ctx, PAMI_BARRIER_SHM, NULL, 0));
    pami_protocol_job_key_t jk;
    CF_OK(e, pami_protocol_job_key(e->client, &jk));
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "pami-%s-", jk.name);
    DIR *d = opendir("/dev/shm");
    CF_CHECK(e, d != NULL, "expected /dev/shm to open");
    size_t n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            fprintf(stderr, "pami-conformance selftest: left /dev/shm/%s\n",
                    de->d_name);
            n++;
        }
    closedir(d);
    fflush(stderr);
    CF_CHECK(e, n > 0, "expected this task's segment under /dev/shm/%s*",
             prefix);
}

static void killed_with_region(cf_env_t *e)
{
    leave_objects(e);
    if (!e->failed)
        kill(getpid(), SIGKILL);
}

static void hangs_with_region(cf_env_t *e)
{
    leave_objects(e);
    while (!e->failed)
        pause();
}

const cf_case_t cf_selftest_cases[] = {
    {"selftest", "killed_with_region", 1, 0, 0, killed_with_region, NULL},
    {"selftest", "hangs_with_region", 1, 0, 0, hangs_with_region, NULL},
};
const size_t cf_num_selftest_cases =
    sizeof(cf_selftest_cases) / sizeof(cf_selftest_cases[0]);

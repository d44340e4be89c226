/*
 * UCX's shared-memory files live in the job's own directory, which
 * pamirun removes whatever way the job ends (docs/pamirun.md): UCX 1.13
 * writes a posix segment to its full size before it unlinks it, so a task
 * killed at that moment would otherwise leave a file in /dev/shm that
 * names no job. Run with UCX_POSIX_USE_PROC_LINK=n, UCX keeps its files
 * by name while they are in use, so the test can see where they are:
 * every task finds UCX's files in /dev/shm/pami-<job id>-ucx after
 * traffic between the tasks, under pamirun and under mpirun; and none
 * of the SysV segments UCX's sysv transport would make. That the directory goes with the job,
 * also after SIGKILL, is the pamirun suite's kill scenario.
 */
#include "mp_util.h"

#include <dirent.h>
#include <errno.h>
#include <unistd.h>

static unsigned count_ucx_files(const char *path)
{
    DIR *d = opendir(path);
    MP_EXPECT(d != NULL, "cannot read %s: %s", path, strerror(errno));
    unsigned       n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "ucx_shm_posix_", 14) == 0)
            n++;
    closedir(d);
    return n;
}

/* SysV segments this process created (/proc/sysvipc/shm, column cpid). */
static unsigned count_own_sysv(void)
{
    FILE *f = fopen("/proc/sysvipc/shm", "r");
    if (f == NULL)
        return 0; /* no SysV IPC here: nothing to leave either */
    char     line[512];
    unsigned n = 0;
    long     me = (long)getpid();
    if (fgets(line, sizeof(line), f) == NULL) { /* the header */
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        long key, id, perms, size, cpid;
        if (sscanf(line, "%ld %ld %lo %ld %ld", &key, &id, &perms, &size,
                   &cpid) == 5 && cpid == me)
            n++;
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    mp_job_t job;
    mp_init(&job, "mp_ucx_dir", &argc, argv, NULL, 1, true);

    /* pamirun passes the directory in UCX_POSIX_DIR; under PMIx pami
     * makes it and gives it to UCX itself. Same name either way. */
    pami_client_attr_t attr = {.field_mask = PAMI_CLIENT_ATTR_JOB_ID};
    MP_CHECK(pami_client_query(job.client, &attr));
    char dir[256];
    snprintf(dir, sizeof(dir), "/dev/shm/pami-%s-ucx", attr.job_id);
    const char *env = getenv("UCX_POSIX_DIR");
    if (job.attr.bootstrap == PAMI_BOOTSTRAP_LOCAL)
        MP_EXPECT(env != NULL && strcmp(env, dir) == 0,
                  "UCX_POSIX_DIR is %s, expected %s", env ? env : "unset",
                  dir);
    else
        MP_EXPECT(env == NULL, "UCX_POSIX_DIR is set (%s): the test needs "
                  "pami to choose", env);

    /* Traffic with every peer, so UCX connects its shared-memory
     * transports (their segments exist from context creation on). */
    mp_sync(&job);
    mp_sync(&job);

    unsigned in_job = count_ucx_files(dir);
    MP_EXPECT(in_job > 0, "no UCX file in %s: UCX did not use the job's "
              "directory", dir);
    printf("mp_ucx_dir: task %u: %u UCX files in the job's directory\n",
           job.me, in_job);
    /* UCX's SysV transport is kept off (a kill while it sets up leaves a
     * segment no launcher removes), unless the user's UCX_TLS asks. */
    if (getenv("UCX_TLS") == NULL) {
        unsigned sysv = count_own_sysv();
        MP_EXPECT(sysv == 0, "%u SysV segments made by this task", sysv);
    }
    mp_sync(&job);
    mp_finish(&job);
    return 0;
}

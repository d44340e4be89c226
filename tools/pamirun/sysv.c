/*
 * SysV segments the job's dead tasks left.
 *
 * UCX's memory hooks (libucm) check themselves by making a private SysV
 * segment, attaching it, and marking it for removal at the end: a task
 * killed inside that window leaves a page that no key reaches and nobody
 * will remove (pami turns UCX's own SysV transport and its registration
 * cache off for this reason, but the check also runs when the library is
 * loaded, and other transports' caches run it again). Only segments that
 * are surely such a leftover go: key IPC_PRIVATE, nothing attached, made
 * by this user since the job started, by a process of the job (a rank
 * pamirun started, or one that joined the bootstrap) that no longer
 * exists. A reused pid belongs to a live process and is left alone.
 */
#include "pamirun.h"

#include "log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <unistd.h>

#define SYSV_TABLE "/proc/sysvipc/shm"

void sysv_note_pid(pamirun_job_t *job, pid_t pid)
{
    if (pid <= 0)
        return;
    for (size_t i = 0; i < job->npids; i++)
        if (job->pids[i] == pid)
            return;
    if (job->npids == job->pids_cap) {
        size_t cap = job->pids_cap ? 2 * job->pids_cap : 16;
        pid_t *p   = realloc(job->pids, cap * sizeof(*p));
        if (p == NULL)
            return; /* only a leftover goes unremoved */
        job->pids     = p;
        job->pids_cap = cap;
    }
    job->pids[job->npids++] = pid;
}

static int of_dead_task(const pamirun_job_t *job, pid_t cpid)
{
    for (size_t i = 0; i < job->npids; i++)
        if (job->pids[i] == cpid)
            return kill(cpid, 0) != 0 && errno == ESRCH;
    return 0;
}

void sysv_remove_orphans(pamirun_job_t *job)
{
    FILE *f = fopen(SYSV_TABLE, "r");
    if (f == NULL)
        return;
    char line[512];
    int  removed = 0;
    if (fgets(line, sizeof(line), f) == NULL) /* the column names */
        line[0] = '\0';
    while (fgets(line, sizeof(line), f) != NULL) {
        long          key, ctime;
        int           shmid, cpid, lpid;
        unsigned      cuid;
        unsigned long size, nattch;
        /* key shmid perms size cpid lpid nattch uid gid cuid cgid atime
         * dtime ctime ... */
        if (sscanf(line, "%ld %d %*o %lu %d %d %lu %*u %*u %u %*u %*d %*d %ld",
                   &key, &shmid, &size, &cpid, &lpid, &nattch, &cuid,
                   &ctime) != 8)
            continue;
        if (key != IPC_PRIVATE || nattch != 0 || cuid != geteuid() ||
            ctime < (long)job->started || !of_dead_task(job, cpid))
            continue;
        if (shmctl(shmid, IPC_RMID, NULL) == 0) {
            removed++;
            pami_debug(PAMIRUN_SUBSYS, "removed SysV segment %d (%lu bytes) "
                       "left by task process %d", shmid, size, cpid);
        } else if (errno != EINVAL && errno != EIDRM) {
            pami_warn(PAMIRUN_SUBSYS, "cannot remove SysV segment %d left by "
                      "task process %d: %s", shmid, cpid, strerror(errno));
        }
    }
    fclose(f);
    if (removed > 0)
        pami_info(PAMIRUN_SUBSYS, "removed %d SysV segment%s that dead tasks "
                  "left", removed, removed == 1 ? "" : "s");
    free(job->pids);
    job->pids     = NULL;
    job->npids    = 0;
    job->pids_cap = 0;
}

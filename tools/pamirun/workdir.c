/*
 * The job's identity and the files it owns: a private directory holding
 * the bootstrap socket, and the /dev/shm objects ranks create under the
 * job's prefix. pamirun removes all of them whatever way the job ends, so
 * a rank that dies cannot leak shared memory.
 *
 * UCX's own shared-memory files are among them: UCX 1.13's posix
 * transport creates ucx_shm_posix_<random>, writes it to its full size
 * and only then unlinks it, so a rank killed in between (at context
 * creation) leaves a partly written file that names no job. pamirun
 * therefore gives UCX a directory of the job's own (UCX_POSIX_DIR) and
 * removes it with its content.
 */
#include "pamirun.h"

#include "bootstrap.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHM_DIR    "/dev/shm"
#define SOCK_NAME  "bootstrap.sock"

void job_make_id(pamirun_job_t *job)
{
    uint64_t rnd = 0;

    /* The pid keeps two jobs started at once apart; the random part keeps
     * a reused pid from meeting a predecessor's leftovers. */
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd ^= (uint64_t)(uintptr_t)&rnd ^ ((uint64_t)getpid() << 32);
    snprintf(job->job_id, sizeof(job->job_id), "%ld-%016llx", (long)getpid(),
             (unsigned long long)rnd);
}

/* Not fatal: without it UCX uses /dev/shm as it would outside pamirun. */
static void ucx_dir_create(pamirun_job_t *job)
{
    int n = snprintf(job->ucx_dir, sizeof(job->ucx_dir), PAMI_JOB_DIR_FMT,
                     job->job_id);
    if (n < 0 || (size_t)n >= sizeof(job->ucx_dir) ||
        mkdir(job->ucx_dir, 0700) != 0) {
        pami_warn(PAMIRUN_SUBSYS, "cannot create %s (%s): UCX keeps %s, "
                  "and a rank killed while UCX sets up may leave a file "
                  "there", job->ucx_dir, strerror(errno), SHM_DIR);
        job->ucx_dir[0] = '\0';
    }
}

static void ucx_dir_remove(pamirun_job_t *job)
{
    DIR *dir = opendir(job->ucx_dir);
    if (dir != NULL) {
        struct dirent *ent;
        while ((ent = readdir(dir)) != NULL) {
            if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
                continue;
            if (unlinkat(dirfd(dir), ent->d_name, 0) != 0)
                pami_warn(PAMIRUN_SUBSYS, "cannot remove %s/%s: %s",
                          job->ucx_dir, ent->d_name, strerror(errno));
            else
                pami_debug(PAMIRUN_SUBSYS, "removed %s/%s left by UCX",
                           job->ucx_dir, ent->d_name);
        }
        closedir(dir);
    }
    if (rmdir(job->ucx_dir) != 0 && errno != ENOENT)
        pami_warn(PAMIRUN_SUBSYS, "cannot remove %s: %s", job->ucx_dir,
                  strerror(errno));
    job->ucx_dir[0] = '\0';
}

int workdir_create(pamirun_job_t *job)
{
    const char *base = getenv("TMPDIR");

    if (base == NULL || *base == '\0')
        base = "/tmp";
    int n = snprintf(job->dir, sizeof(job->dir), "%s/pamirun-XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof(job->dir)) {
        fprintf(stderr, "pamirun: TMPDIR '%s' is too long\n", base);
        job->dir[0] = '\0';
        return -1;
    }
    /* mkdtemp creates it 0700: only this user can reach the socket. */
    if (mkdtemp(job->dir) == NULL) {
        fprintf(stderr, "pamirun: cannot create a directory in '%s': %s\n",
                base, strerror(errno));
        job->dir[0] = '\0';
        return -1;
    }
    n = snprintf(job->sock_path, sizeof(job->sock_path), "%s/%s", job->dir,
                 SOCK_NAME);
    if (n < 0 || (size_t)n >= sizeof(job->sock_path)) {
        fprintf(stderr, "pamirun: socket path under '%s' is too long for a "
                "Unix socket; set TMPDIR to a shorter directory\n", base);
        job->sock_path[0] = '\0';
        return -1;
    }
    pami_debug(PAMIRUN_SUBSYS, "job %s in %s", job->job_id, job->dir);
    ucx_dir_create(job);
    return 0;
}

/* Best effort: a dead rank may have left objects named after the job. */
static void shm_remove(const char *job_id)
{
    char prefix[80];
    int  removed = 0;

    snprintf(prefix, sizeof(prefix), "pami-%s", job_id);
    DIR *dir = opendir(SHM_DIR);
    if (dir == NULL)
        return;
    size_t         plen = strlen(prefix);
    struct dirent *ent;
    while ((ent = readdir(dir)) != NULL) {
        if (strncmp(ent->d_name, prefix, plen) != 0)
            continue;
        if (unlinkat(dirfd(dir), ent->d_name, 0) == 0)
            removed++;
        else
            pami_warn(PAMIRUN_SUBSYS, "cannot remove %s/%s: %s", SHM_DIR,
                      ent->d_name, strerror(errno));
    }
    closedir(dir);
    if (removed > 0)
        pami_debug(PAMIRUN_SUBSYS, "removed %d shared-memory objects left "
                   "by job %s", removed, job_id);
}

void workdir_remove(pamirun_job_t *job)
{
    if (job->sock_path[0] != '\0' && unlink(job->sock_path) != 0 &&
        errno != ENOENT)
        pami_warn(PAMIRUN_SUBSYS, "cannot remove %s: %s", job->sock_path,
                  strerror(errno));
    if (job->dir[0] != '\0' && rmdir(job->dir) != 0)
        pami_warn(PAMIRUN_SUBSYS, "cannot remove %s: %s", job->dir,
                  strerror(errno));
    job->sock_path[0] = '\0';
    job->dir[0]       = '\0';
    if (job->ucx_dir[0] != '\0')
        ucx_dir_remove(job);
    if (job->job_id[0] != '\0')
        shm_remove(job->job_id);
}

/*
 * The job's directory for the transport's shared-memory files.
 *
 * UCX 1.13's posix transport creates ucx_shm_posix_<random> in /dev/shm,
 * writes it to its full size and only then unlinks it: a task killed in
 * between (at context creation) leaves a partly written file that names
 * no job. So the files go to /dev/shm/pami-<job id>-ucx, which the
 * launcher removes when the job ends. pamirun makes that directory itself
 * and passes it in UCX_POSIX_DIR; under PMIx each task makes it (the
 * first one wins) and registers it with the PMIx server for removal.
 * Without a launcher that can remove it, UCX keeps /dev/shm.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Another local user could have made the name first, to read our
 * segments: use it only if it is a directory of ours, private, reached
 * without a symbolic link (/dev/shm is sticky: nobody else can then
 * replace it). */
static bool dir_is_ours(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
              st.st_uid == geteuid() && (st.st_mode & 0777) == 0700;
    close(fd);
    return ok;
}

bool pami_job_dir_name(pami_client_impl_t *c, char *buf, size_t len)
{
    const char *id = c->bs->job_id(c->bs_state);
    int n = snprintf(buf, len, PAMI_JOB_DIR_FMT, id != NULL ? id : "");
    return id != NULL && n >= 0 && (size_t)n < len;
}

const char *pami_job_shm_dir(pami_client_impl_t *c, char *buf, size_t len)
{
    if (getenv("UCX_POSIX_DIR") != NULL || c->bs->cleanup_dir == NULL ||
        !pami_job_dir_name(c, buf, len))
        return NULL;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
        pami_warn("client", "cannot create %s (%s): UCX keeps /dev/shm",
                  buf, strerror(errno));
        return NULL;
    }
    if (!dir_is_ours(buf)) {
        pami_warn("client", "%s is not a private directory of this user: "
                  "UCX keeps /dev/shm", buf);
        return NULL;
    }
    int rc = c->bs->cleanup_dir(c->bs_state, buf);
    if (rc != 0) {
        /* Nobody would remove it: leave no empty directory behind. */
        rmdir(buf);
        pami_warn("client", "the launcher cannot remove %s at the job's end "
                  "(%s): UCX keeps /dev/shm", buf, strerror(-rc));
        return NULL;
    }
    return buf;
}

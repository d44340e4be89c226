/*
 * A case's job is pami's OOB bootstrap, which has no launcher to clean
 * up after it: a case process that crashed or was killed before its
 * context destroy leaves its named segments. The runner removes them
 * after the case, when every rank's case process has ended, as pamirun
 * does for a job (tools/pamirun/workdir.c).
 */
#include "cf_leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SHM_DIR "/dev/shm"

static int key_is_name(const char *key)
{
    if (key[0] == '\0')
        return 0;
    for (const char *p = key; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
              *p == '-'))
            return 0;
    return 1;
}

size_t cf_leftovers_remove(const char *job_key)
{
    if (job_key == NULL || !key_is_name(job_key))
        return 0;
    char prefix[96];
    int  plen = snprintf(prefix, sizeof(prefix), "pami-%s-", job_key);
    if (plen < 0 || (size_t)plen >= sizeof(prefix))
        return 0;
    DIR *dir = opendir(SHM_DIR);
    if (dir == NULL)
        return 0;
    size_t         removed = 0;
    struct dirent *ent;
    while ((ent = readdir(dir)) != NULL) {
        if (strncmp(ent->d_name, prefix, (size_t)plen) != 0)
            continue;
        /* The runners of one node race for the same names: a name another
         * one removed first is no error. */
        if (unlinkat(dirfd(dir), ent->d_name, 0) == 0)
            removed++;
        else if (errno != ENOENT)
            fprintf(stderr, "pami-conformance: cannot remove %s/%s: %s\n",
                    SHM_DIR, ent->d_name, strerror(errno));
    }
    closedir(dir);
    return removed;
}

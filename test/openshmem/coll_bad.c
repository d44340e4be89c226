/*
 * Bad use of the deprecated collectives, which return nothing: the job
 * must stop with a message and a non-zero exit (meson expects failure),
 * never go on with wrong data. argv[1]: "set" (an active set larger than
 * the job), "root" (a root outside the set), "member" (a set without
 * PE 1, called by every PE: run it on 2 PEs or more).
 */
#include <string.h>

#include <shmem.h>

#include "shmem_check.h"

static long psync[SHMEM_BCAST_SYNC_SIZE];
static long src[4], dst[4];

int main(int argc, char **argv)
{
    shmem_init();
    int npes = shmem_n_pes();
    const char *what = argc > 1 ? argv[1] : "set";
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    if (strcmp(what, "set") == 0)
        shmem_barrier(0, 0, npes + 1, psync);
    else if (strcmp(what, "root") == 0)
        shmem_broadcast64(dst, src, 1, npes, 0, 0, npes, psync);
    else if (strcmp(what, "member") == 0)
        shmem_barrier(0, 0, 1, psync);
    shmem_finalize();
    return 0;
}

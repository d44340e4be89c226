/* The extensions of shmemx.h. */
#include <time.h>

#include "shmem_internal.h"
#include "shmemx.h"

double shmemx_wtime(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void shmemx_heap_query(size_t *size, size_t *used)
{
    shmemi_require_init("shmemx_heap_query");
    if (size != NULL)
        *size = shmemi.seg[SHMEMI_SEG_HEAP].size;
    if (used != NULL)
        *used = shmemi_heap_used();
}

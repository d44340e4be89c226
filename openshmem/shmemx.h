/*
 * Extensions of pami's OpenSHMEM beyond the 1.5 specification.
 */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since an arbitrary point of this process (a monotonic clock),
 * for timing. */
SHMEMI_EXPORT double shmemx_wtime(void);
/* Programs written for Sandia OpenSHMEM test this before defining a
 * shmemx_wtime of their own. */
#define HAVE_SHMEMX_WTIME 1

/* The symmetric heap of this PE: its size (SHMEM_SYMMETRIC_SIZE) and the
 * bytes its blocks take now. */
SHMEMI_EXPORT void shmemx_heap_query(size_t *size, size_t *used);

#ifdef __cplusplus
}
#endif

#endif /* SHMEMX_H */

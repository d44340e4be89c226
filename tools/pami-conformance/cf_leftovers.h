/* What a case process killed mid-way leaves in /dev/shm, removed by its
 * runner after the case. */
#ifndef CF_LEFTOVERS_H
#define CF_LEFTOVERS_H

#include <stddef.h>

/* Removes every /dev/shm entry whose name begins with "pami-<job_key>-":
 * the segments of pami_memregion_alloc and the shared-memory barrier's
 * objects of the case's job (docs/protocols/rma.md, "Shared regions";
 * docs/protocols/shm-barrier.md), which pami removes at context destroy
 * and nobody removes when the process died before. A key that is empty
 * or holds a byte a job key never has removes nothing. How many were
 * removed. */
size_t cf_leftovers_remove(const char *job_key);

#endif /* CF_LEFTOVERS_H */

/*
 * The reductions shared by the team forms (shmem_coll_reduce.c) and the
 * deprecated *_to_all forms (shmem_coll_legacy.c). 0 on success, -1
 * logged.
 */
#ifndef SHMEM_COLL_REDUCE_H
#define SHMEM_COLL_REDUCE_H

#include "shmem_coll.h"
#include "shmem_coll_types.h"

/* dest[i] = op over the team of source[i], count elements of type. */
int shmemi_reduce(struct shmemi_team *t, void *dest, const void *source,
                  size_t count, pami_type_t type, pami_op_t op,
                  const char *what);

/* The same for count elements of a list type (shmem_coll_types.h):
 * type and per from SHMEMI_PTYPE and SHMEMI_PTYPE_PER. */
int shmemi_reduce_typed(struct shmemi_team *t, void *dest,
                        const void *source, size_t count, pami_type_t type,
                        int per, pami_op_t op, const char *what);

/* out[i] = a[i] op b[i], count elements of a pami type (out may be a);
 * 0, or -1 for a type and op with no loop (nothing written). */
int shmemi_combine(pami_type_t type, pami_op_t op, void *out, const void *a,
                   const void *b, size_t count);

#endif /* SHMEM_COLL_REDUCE_H */

/*
 * Reductions on teams (OpenSHMEM 1.5 shmem_TYPENAME_OP_reduce): one pami
 * allreduce with AUTO, in place when source is dest; large ones within a
 * node through the mappings instead. The complex types
 * have no pami type: their sum is the sum of the real and imaginary
 * parts as reals, their product a gather of every PE's values multiplied
 * in PE order, the same order on every PE so that all get one result.
 */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_coll.h"
#include "shmem_coll_reduce.h"
#include "shmem_coll_types.h"

/* A large reduction within a node, through the mappings: each member
 * combines its slice of the elements from every member's source (read
 * where it is, in team order) and writes the result into every member's
 * dest, so each element is combined once and copied once per member
 * (reduce-scatter and allgather in one pass), with no copy through pami's
 * shared slots. Whether every member maps every source and dest each
 * knows without a message (shmemi_coll_direct); a barrier is the entry
 * synchronization (no member reads a source or writes a dest before all
 * have entered), another keeps the members inside until every slice has
 * landed. Returns 1 when done, 0 when pami's allreduce must run, -1 on
 * error. */
#define SHMEMI_REDUCE_DIRECT_MIN (16 * 1024)
#define SHMEMI_REDUCE_CHUNK      4096 /* bytes combined before the writes */

static int reduce_direct(struct shmemi_team *t, void *dest,
                         const void *source, size_t count, size_t esize,
                         pami_type_t type, pami_op_t op, const char *what)
{
    size_t n = (size_t)t->n_pes, bytes = count * esize;
    if (!shmemi_coll_direct(t, source, bytes, what) ||
        !shmemi_coll_direct(t, dest, bytes, what))
        return 0;
    uint8_t **src = shmemi_coll_maps(t, what), **dst = src + n;
    if (src == NULL)
        shmemi_fatal("%s: out of memory in a reduction the others take "
                     "part in", what);
    if (!shmemi_coll_map_all(t, src, source, bytes) ||
        !shmemi_coll_map_all(t, dst, dest, bytes))
        shmemi_fatal("%s: a member's source or dest is not mapped",
                     what);
    if (shmemi_coll_sync(t, what) != 0)
        return -1;
    /* Slices of whole cache lines, so no two members write one line. */
    size_t line = 64 / esize, slice = (count + n - 1) / n;
    slice = (slice + line - 1) / line * line;
    size_t lo = (size_t)t->my_pe * slice, hi = lo + slice;
    lo = lo < count ? lo : count;
    hi = hi < count ? hi : count;
    _Alignas(64) unsigned char acc[SHMEMI_REDUCE_CHUNK];
    size_t step = SHMEMI_REDUCE_CHUNK / esize;
    for (size_t i = lo; i < hi; i += step) {
        size_t m = hi - i < step ? hi - i : step, off = i * esize;
        shmemi_combine(type, op, acc, src[0] + off, src[1] + off, m);
        for (size_t j = 2; j < n; j++)
            shmemi_combine(type, op, acc, acc, src[j] + off, m);
        for (size_t j = 0; j < n; j++)
            memcpy(dst[j] + off, acc, m * esize);
    }
    return shmemi_coll_sync(t, what) == 0 ? 1 : -1;
}

int shmemi_reduce(struct shmemi_team *t, void *dest, const void *source,
                  size_t count, pami_type_t type, pami_op_t op,
                  const char *what)
{
    if (count == 0)
        return 0;
    size_t esize = pami_type_size(type);
    /* A combine of no elements says whether the loop exists; every
     * member decides the same from the same arguments. */
    if (t->n_pes > 1 && esize > 0 && esize <= 64 &&
        count * esize >= SHMEMI_REDUCE_DIRECT_MIN &&
        shmemi_combine(type, op, NULL, NULL, NULL, 0) == 0) {
        int rc = reduce_direct(t, dest, source, count, esize, type, op,
                               what);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    pami_xfer_t x = { .kind = PAMI_XFER_ALLREDUCE,
                      .sbuf = dest == source ? PAMI_IN_PLACE : source,
                      .rbuf = dest, .count = count, .dtype = type,
                      .op = op };
    return shmemi_coll_run(t, &x, what);
}

/* The product of complex values: every PE's values gathered, then
 * multiplied in PE order. */
#define COMPLEX_PROD(CTYPE)                                                   \
    {                                                                         \
        size_t n = (size_t)t->n_pes;                                          \
        CTYPE *all = malloc(n * count * sizeof(CTYPE));                       \
        if (all == NULL) {                                                    \
            shmemi_warn("%s: out of memory", what);                           \
            return -1;                                                        \
        }                                                                     \
        int rc = shmemi_fcollect(t, all, source, count * sizeof(CTYPE),      \
                                 what);                                       \
        if (rc == 0) {                                                        \
            CTYPE *d = dest;                                                  \
            for (size_t i = 0; i < count; i++) {                              \
                CTYPE p = all[i];                                             \
                for (size_t r = 1; r < n; r++)                                \
                    p *= all[r * count + i];                                  \
                d[i] = p;                                                     \
            }                                                                 \
        }                                                                     \
        free(all);                                                            \
        return rc;                                                            \
    }

int shmemi_reduce_typed(struct shmemi_team *t, void *dest,
                        const void *source, size_t count, pami_type_t type,
                        int per, pami_op_t op, const char *what)
{
    if (per == 1 || op == PAMI_OP_SUM)
        return shmemi_reduce(t, dest, source, count * (size_t)per, type, op,
                             what);
    if (op != PAMI_OP_PROD) {
        shmemi_warn("%s: complex values have only sum and prod", what);
        return -1;
    }
    if (count == 0)
        return 0;
    if (type == PAMI_TYPE_DOUBLE)
        COMPLEX_PROD(double _Complex)
    COMPLEX_PROD(float _Complex)
}

#define TEAM_REDUCE(TYPE, NAME, OPNAME, OP)                                   \
    int shmem_##NAME##_##OPNAME##_reduce(shmem_team_t team, TYPE *dest,       \
                                         const TYPE *source, size_t nreduce)  \
    {                                                                         \
        const char *what = #NAME "_" #OPNAME "_reduce";                       \
        struct shmemi_team *t = shmemi_team_get(team, what);                  \
        return t == NULL ? -1                                                 \
                         : shmemi_reduce_typed(t, dest, source, nreduce,      \
                                               SHMEMI_PTYPE(TYPE),            \
                                               SHMEMI_PTYPE_PER(TYPE), OP,    \
                                               what);                         \
    }

#define TEAM_BITWISE(TYPE, NAME)                                              \
    TEAM_REDUCE(TYPE, NAME, and, PAMI_OP_BAND)                                \
    TEAM_REDUCE(TYPE, NAME, or, PAMI_OP_BOR)                                  \
    TEAM_REDUCE(TYPE, NAME, xor, PAMI_OP_BXOR)
#define TEAM_MINMAX(TYPE, NAME)                                               \
    TEAM_REDUCE(TYPE, NAME, min, PAMI_OP_MIN)                                 \
    TEAM_REDUCE(TYPE, NAME, max, PAMI_OP_MAX)
#define TEAM_ARITH(TYPE, NAME)                                                \
    TEAM_REDUCE(TYPE, NAME, sum, PAMI_OP_SUM)                                 \
    TEAM_REDUCE(TYPE, NAME, prod, PAMI_OP_PROD)

SHMEMI_REDUCE_BIT_TYPES(TEAM_BITWISE)
SHMEMI_REDUCE_CMP_TYPES(TEAM_MINMAX)
SHMEMI_REDUCE_ARITH_TYPES(TEAM_ARITH)

/*
 * The deprecated active-set collectives (PE_start, logPE_stride,
 * PE_size, pSync, pWrk) that existing programs and benchmarks still
 * call. Each active set is a cached team (shmemi_active_set); pSync and
 * pWrk are not needed by pami's collectives and are left untouched,
 * which the specification allows (their contents are the library's).
 * These calls return nothing, so a malformed call ends the job with a
 * message (shmemi_coll_fatal) rather than going on with wrong data.
 */
#include "shmem_coll.h"
#include "shmem_coll_reduce.h"

static struct shmemi_team *set_or_die(int PE_start, int logPE_stride,
                                      int PE_size, const char *what)
{
    struct shmemi_team *t = shmemi_active_set(PE_start, logPE_stride,
                                              PE_size, what);
    if (t == NULL)
        shmemi_coll_fatal(what);
    return t;
}

static void check(int rc, const char *what)
{
    if (rc != 0)
        shmemi_coll_fatal(what);
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    shmem_quiet();
    struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,
                                       "barrier");
    check(shmemi_coll_sync(t, "barrier"), "barrier");
}

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,
                                       "sync");
    check(shmemi_coll_sync(t, "sync"), "sync");
}

#define LEGACY_MOVERS(BITS)                                                   \
    void shmem_broadcast##BITS(void *dest, const void *source,                \
                               size_t nelems, int PE_root, int PE_start,      \
                               int logPE_stride, int PE_size, long *pSync)    \
    {                                                                         \
        (void)pSync;                                                          \
        struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,   \
                                           "broadcast" #BITS);                \
        check(shmemi_broadcast(t, dest, source, nelems * (BITS / 8),          \
                               PE_root, 0, "broadcast" #BITS),                \
              "broadcast" #BITS);                                             \
    }                                                                         \
    void shmem_collect##BITS(void *dest, const void *source, size_t nelems,   \
                             int PE_start, int logPE_stride, int PE_size,     \
                             long *pSync)                                     \
    {                                                                         \
        (void)pSync;                                                          \
        struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,   \
                                           "collect" #BITS);                  \
        check(shmemi_collect(t, dest, source, nelems * (BITS / 8),            \
                             "collect" #BITS),                                \
              "collect" #BITS);                                               \
    }                                                                         \
    void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems,  \
                              int PE_start, int logPE_stride, int PE_size,    \
                              long *pSync)                                    \
    {                                                                         \
        (void)pSync;                                                          \
        struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,   \
                                           "fcollect" #BITS);                 \
        check(shmemi_fcollect(t, dest, source, nelems * (BITS / 8),           \
                              "fcollect" #BITS),                              \
              "fcollect" #BITS);                                              \
    }                                                                         \
    void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems,  \
                              int PE_start, int logPE_stride, int PE_size,    \
                              long *pSync)                                    \
    {                                                                         \
        (void)pSync;                                                          \
        struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,   \
                                           "alltoall" #BITS);                 \
        check(shmemi_alltoall(t, dest, source, nelems * (BITS / 8),           \
                              "alltoall" #BITS),                              \
              "alltoall" #BITS);                                              \
    }                                                                         \
    void shmem_alltoalls##BITS(void *dest, const void *source,                \
                               ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                               int PE_start, int logPE_stride, int PE_size,   \
                               long *pSync)                                   \
    {                                                                         \
        (void)pSync;                                                          \
        struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,   \
                                           "alltoalls" #BITS);                \
        check(shmemi_alltoalls(t, dest, source, dst, sst, nelems, BITS / 8,   \
                               "alltoalls" #BITS),                            \
              "alltoalls" #BITS);                                             \
    }

LEGACY_MOVERS(32)
LEGACY_MOVERS(64)

#define TO_ALL(TYPE, NAME, OPNAME, OP)                                        \
    void shmem_##NAME##_##OPNAME##_to_all(                                    \
        TYPE *dest, const TYPE *source, int nreduce, int PE_start,            \
        int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)               \
    {                                                                         \
        (void)pWrk;                                                           \
        (void)pSync;                                                          \
        const char *what = #NAME "_" #OPNAME "_to_all";                       \
        struct shmemi_team *t = set_or_die(PE_start, logPE_stride, PE_size,   \
                                           what);                             \
        if (nreduce < 0) {                                                    \
            shmemi_warn("%s: nreduce %d < 0", what, nreduce);                 \
            shmemi_coll_fatal(what);                                          \
        }                                                                     \
        check(shmemi_reduce_typed(t, dest, source, (size_t)nreduce,           \
                                  SHMEMI_PTYPE(TYPE), SHMEMI_PTYPE_PER(TYPE), \
                                  OP, what),                                  \
              what);                                                          \
    }

#define TO_ALL_BIT(TYPE, NAME)                                                \
    TO_ALL(TYPE, NAME, and, PAMI_OP_BAND)                                     \
    TO_ALL(TYPE, NAME, or, PAMI_OP_BOR)                                       \
    TO_ALL(TYPE, NAME, xor, PAMI_OP_BXOR)
#define TO_ALL_CMP(TYPE, NAME)                                                \
    TO_ALL(TYPE, NAME, min, PAMI_OP_MIN)                                      \
    TO_ALL(TYPE, NAME, max, PAMI_OP_MAX)
#define TO_ALL_ARITH(TYPE, NAME)                                              \
    TO_ALL(TYPE, NAME, sum, PAMI_OP_SUM)                                      \
    TO_ALL(TYPE, NAME, prod, PAMI_OP_PROD)

SHMEMI_TO_ALL_BIT_TYPES(TO_ALL_BIT)
SHMEMI_TO_ALL_CMP_TYPES(TO_ALL_CMP)
SHMEMI_TO_ALL_ARITH_TYPES(TO_ALL_ARITH)

/*
 * OpenSHMEM 1.5 C bindings of pami's OpenSHMEM (libpami-shmem).
 *
 * Written from the OpenSHMEM 1.5 specification. The typed families are
 * declared from the type tables of the specification (the SHMEMI_*_TYPES
 * lists below), so each family covers exactly the types the
 * specification gives it. What is left out of the library is listed in
 * docs/openshmem.md; a program that calls it fails to link.
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHMEMI_EXPORT __attribute__((visibility("default")))
#define SHMEMI_NORETURN __attribute__((noreturn))
#else
#define SHMEMI_EXPORT
#define SHMEMI_NORETURN
#endif

/* The deprecated routines are declared without a deprecation attribute:
 * the programs that still call them (benchmarks, old codes) build as
 * they are, without warnings. */

/* ------------------------------------------------------------------------ */
/* Constants                                                                 */
/* ------------------------------------------------------------------------ */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "pami-shmem 0.1 (OpenSHMEM 1.5 on pami)"

#define SHMEM_THREAD_SINGLE     0
#define SHMEM_THREAD_FUNNELED   1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE   3

#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE    (1L << 1)
#define SHMEM_CTX_NOSTORE    (1L << 2)

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE  (1L << 1)

#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Work and synchronization arrays of the deprecated active-set
 * collectives. The library keeps its own state for them; it still
 * requires the sizes the specification's rules imply (pSync set to
 * SHMEM_SYNC_VALUE, and not reused until every PE left the call). */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 16
#define SHMEM_BARRIER_SYNC_SIZE 16
#define SHMEM_BCAST_SYNC_SIZE 16
#define SHMEM_COLLECT_SYNC_SIZE 16
#define SHMEM_REDUCE_SYNC_SIZE 16
#define SHMEM_ALLTOALL_SYNC_SIZE 16
#define SHMEM_ALLTOALLS_SYNC_SIZE 16
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16

/* The pre-1.3 names of the same constants. */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ------------------------------------------------------------------------ */
/* Handles                                                                   */
/* ------------------------------------------------------------------------ */

/* Teams and contexts are pointers to the library's objects; the
 * predefined ones are objects of the library, so the handles are
 * address constants (usable in static initializers). */
struct shmemi_team;
struct shmemi_ctx;
typedef struct shmemi_team *shmem_team_t;
typedef struct shmemi_ctx *shmem_ctx_t;

typedef struct {
    int num_contexts;
} shmem_team_config_t;

SHMEMI_EXPORT extern struct shmemi_team shmem_team_world_object;
SHMEMI_EXPORT extern struct shmemi_team shmem_team_shared_object;
SHMEMI_EXPORT extern struct shmemi_ctx shmem_ctx_default_object;

#define SHMEM_TEAM_WORLD (&shmem_team_world_object)
#define SHMEM_TEAM_SHARED (&shmem_team_shared_object)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_DEFAULT (&shmem_ctx_default_object)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* ------------------------------------------------------------------------ */
/* Type tables of the specification: X(TYPE, TYPENAME)                      */
/* ------------------------------------------------------------------------ */

/* Standard RMA types (Table 5 of 1.5). */
#define SHMEMI_RMA_TYPES(X)                                                    \
    X(float, float) X(double, double) X(long double, longdouble)             \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)          \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)             \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)  \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)       \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                    \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)              \
    X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Standard AMO types. */
#define SHMEMI_AMO_STD_TYPES(X)                                                \
    X(int, int) X(long, long) X(long long, longlong)                         \
    X(unsigned int, uint) X(unsigned long, ulong)                            \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)     \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types: the standard ones and float, double. */
#define SHMEMI_AMO_EXT_TYPES(X)                                                \
    SHMEMI_AMO_STD_TYPES(X) X(float, float) X(double, double)

/* Bitwise AMO types. */
#define SHMEMI_AMO_BIT_TYPES(X)                                                \
    X(unsigned int, uint) X(unsigned long, ulong)                            \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)     \
    X(uint32_t, uint32) X(uint64_t, uint64)

/* Point-to-point synchronization types. */
#define SHMEMI_P2P_TYPES(X)                                                    \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)         \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)  \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)     \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

/* Reduction types: bitwise (and, or, xor), comparison (min, max),
 * arithmetic (sum, prod; the comparison ones and the complex types). */
#define SHMEMI_REDUCE_BIT_TYPES(X)                                             \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)  \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                 \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)    \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size)

#define SHMEMI_REDUCE_CMP_TYPES(X)                                             \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)          \
    X(long, long) X(long long, longlong) X(ptrdiff_t, ptrdiff)               \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)  \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                 \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)    \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)    \
    X(long double, longdouble)

#define SHMEMI_REDUCE_ARITH_TYPES(X)                                           \
    SHMEMI_REDUCE_CMP_TYPES(X)                                               \
    X(double _Complex, complexd) X(float _Complex, complexf)

/* Deprecated active-set reductions (*_to_all). */
#define SHMEMI_TO_ALL_BIT_TYPES(X)                                             \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEMI_TO_ALL_CMP_TYPES(X)                                             \
    SHMEMI_TO_ALL_BIT_TYPES(X) X(float, float) X(double, double)             \
    X(long double, longdouble)
#define SHMEMI_TO_ALL_ARITH_TYPES(X)                                           \
    SHMEMI_TO_ALL_CMP_TYPES(X)                                               \
    X(double _Complex, complexd) X(float _Complex, complexf)

/* Sizes of the sized RMA routines, in bits. */
#define SHMEMI_SIZES(X) X(8) X(16) X(32) X(64) X(128)

/* ------------------------------------------------------------------------ */
/* Library setup, exit and query                                             */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT void shmem_init(void);
SHMEMI_EXPORT int shmem_init_thread(int requested, int *provided);
SHMEMI_EXPORT void shmem_query_thread(int *provided);
SHMEMI_EXPORT void shmem_finalize(void);
SHMEMI_EXPORT SHMEMI_NORETURN void shmem_global_exit(int status);
SHMEMI_EXPORT int shmem_my_pe(void);
SHMEMI_EXPORT int shmem_n_pes(void);
SHMEMI_EXPORT int shmem_pe_accessible(int pe);
SHMEMI_EXPORT int shmem_addr_accessible(const void *addr, int pe);
SHMEMI_EXPORT void *shmem_ptr(const void *dest, int pe);
SHMEMI_EXPORT void shmem_info_get_version(int *major, int *minor);
SHMEMI_EXPORT void shmem_info_get_name(char *name);
/* Profiling control (1.5, 10.x): pami's OpenSHMEM has no profiling
 * library of its own, so every level is accepted and changes nothing. */
SHMEMI_EXPORT void shmem_pcontrol(const int level, ...);

/* Pre-1.2 names. */
SHMEMI_EXPORT void start_pes(int npes);
SHMEMI_EXPORT int _my_pe(void);
SHMEMI_EXPORT int _num_pes(void);

/* ------------------------------------------------------------------------ */
/* Symmetric memory                                                          */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT void *shmem_malloc(size_t size);
SHMEMI_EXPORT void *shmem_malloc_with_hints(size_t size, long hints);
SHMEMI_EXPORT void *shmem_calloc(size_t count, size_t size);
SHMEMI_EXPORT void *shmem_align(size_t alignment, size_t size);
SHMEMI_EXPORT void *shmem_realloc(void *ptr, size_t size);
SHMEMI_EXPORT void shmem_free(void *ptr);

SHMEMI_EXPORT void *shmalloc(size_t size);
SHMEMI_EXPORT void *shmemalign(size_t alignment,
                                                 size_t size);
SHMEMI_EXPORT void *shrealloc(void *ptr, size_t size);
SHMEMI_EXPORT void shfree(void *ptr);

/* ------------------------------------------------------------------------ */
/* Teams                                                                     */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT int shmem_team_my_pe(shmem_team_t team);
SHMEMI_EXPORT int shmem_team_n_pes(shmem_team_t team);
SHMEMI_EXPORT int shmem_team_get_config(shmem_team_t team, long config_mask,
                                        shmem_team_config_t *config);
SHMEMI_EXPORT int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                                          shmem_team_t dest_team);
SHMEMI_EXPORT void *shmem_team_ptr(shmem_team_t team, const void *dest,
                                    int pe);
SHMEMI_EXPORT int shmem_team_split_strided(shmem_team_t parent_team,
                                           int start, int stride, int size,
                                           const shmem_team_config_t *config,
                                           long config_mask,
                                           shmem_team_t *new_team);
SHMEMI_EXPORT int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                                      const shmem_team_config_t *xaxis_config,
                                      long xaxis_mask,
                                      shmem_team_t *xaxis_team,
                                      const shmem_team_config_t *yaxis_config,
                                      long yaxis_mask,
                                      shmem_team_t *yaxis_team);
SHMEMI_EXPORT void shmem_team_destroy(shmem_team_t team);

/* ------------------------------------------------------------------------ */
/* Communication contexts                                                    */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT int shmem_ctx_create(long options, shmem_ctx_t *ctx);
SHMEMI_EXPORT int shmem_team_create_ctx(shmem_team_t team, long options,
                                        shmem_ctx_t *ctx);
SHMEMI_EXPORT void shmem_ctx_destroy(shmem_ctx_t ctx);
SHMEMI_EXPORT int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ------------------------------------------------------------------------ */
/* RMA                                                                       */
/* ------------------------------------------------------------------------ */

#define SHMEMI_DECL_RMA(T, N)                                                  \
    SHMEMI_EXPORT void shmem_##N##_put(T *dest, const T *source,             \
                                       size_t nelems, int pe);               \
    SHMEMI_EXPORT void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest,         \
                                           const T *source, size_t nelems,   \
                                           int pe);                          \
    SHMEMI_EXPORT void shmem_##N##_get(T *dest, const T *source,             \
                                       size_t nelems, int pe);               \
    SHMEMI_EXPORT void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest,         \
                                           const T *source, size_t nelems,   \
                                           int pe);                          \
    SHMEMI_EXPORT void shmem_##N##_p(T *dest, T value, int pe);              \
    SHMEMI_EXPORT void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value,  \
                                         int pe);                            \
    SHMEMI_EXPORT T shmem_##N##_g(const T *source, int pe);                  \
    SHMEMI_EXPORT T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source,      \
                                      int pe);                               \
    SHMEMI_EXPORT void shmem_##N##_iput(T *dest, const T *source,            \
                                        ptrdiff_t dst, ptrdiff_t sst,        \
                                        size_t nelems, int pe);              \
    SHMEMI_EXPORT void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest,        \
                                            const T *source, ptrdiff_t dst,  \
                                            ptrdiff_t sst, size_t nelems,    \
                                            int pe);                         \
    SHMEMI_EXPORT void shmem_##N##_iget(T *dest, const T *source,            \
                                        ptrdiff_t dst, ptrdiff_t sst,        \
                                        size_t nelems, int pe);              \
    SHMEMI_EXPORT void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest,        \
                                            const T *source, ptrdiff_t dst,  \
                                            ptrdiff_t sst, size_t nelems,    \
                                            int pe);                         \
    SHMEMI_EXPORT void shmem_##N##_put_nbi(T *dest, const T *source,         \
                                           size_t nelems, int pe);           \
    SHMEMI_EXPORT void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest,     \
                                               const T *source,              \
                                               size_t nelems, int pe);       \
    SHMEMI_EXPORT void shmem_##N##_get_nbi(T *dest, const T *source,         \
                                           size_t nelems, int pe);           \
    SHMEMI_EXPORT void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest,     \
                                               const T *source,              \
                                               size_t nelems, int pe);       \
    SHMEMI_EXPORT void shmem_##N##_put_signal(T *dest, const T *source,      \
                                              size_t nelems,                 \
                                              uint64_t *sig_addr,            \
                                              uint64_t signal, int sig_op,   \
                                              int pe);                       \
    SHMEMI_EXPORT void shmem_ctx_##N##_put_signal(                           \
        shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,            \
        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);            \
    SHMEMI_EXPORT void shmem_##N##_put_signal_nbi(                           \
        T *dest, const T *source, size_t nelems, uint64_t *sig_addr,         \
        uint64_t signal, int sig_op, int pe);                                \
    SHMEMI_EXPORT void shmem_ctx_##N##_put_signal_nbi(                       \
        shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,            \
        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_RMA_TYPES(SHMEMI_DECL_RMA)
#undef SHMEMI_DECL_RMA

#define SHMEMI_DECL_SIZED(S)                                                   \
    SHMEMI_EXPORT void shmem_put##S(void *dest, const void *source,          \
                                    size_t nelems, int pe);                  \
    SHMEMI_EXPORT void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest,         \
                                        const void *source, size_t nelems,   \
                                        int pe);                             \
    SHMEMI_EXPORT void shmem_get##S(void *dest, const void *source,          \
                                    size_t nelems, int pe);                  \
    SHMEMI_EXPORT void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest,         \
                                        const void *source, size_t nelems,   \
                                        int pe);                             \
    SHMEMI_EXPORT void shmem_iput##S(void *dest, const void *source,         \
                                     ptrdiff_t dst, ptrdiff_t sst,           \
                                     size_t nelems, int pe);                 \
    SHMEMI_EXPORT void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest,        \
                                         const void *source, ptrdiff_t dst,  \
                                         ptrdiff_t sst, size_t nelems,       \
                                         int pe);                            \
    SHMEMI_EXPORT void shmem_iget##S(void *dest, const void *source,         \
                                     ptrdiff_t dst, ptrdiff_t sst,           \
                                     size_t nelems, int pe);                 \
    SHMEMI_EXPORT void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest,        \
                                         const void *source, ptrdiff_t dst,  \
                                         ptrdiff_t sst, size_t nelems,       \
                                         int pe);                            \
    SHMEMI_EXPORT void shmem_put##S##_nbi(void *dest, const void *source,    \
                                          size_t nelems, int pe);            \
    SHMEMI_EXPORT void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest,   \
                                              const void *source,            \
                                              size_t nelems, int pe);        \
    SHMEMI_EXPORT void shmem_get##S##_nbi(void *dest, const void *source,    \
                                          size_t nelems, int pe);            \
    SHMEMI_EXPORT void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest,   \
                                              const void *source,            \
                                              size_t nelems, int pe);        \
    SHMEMI_EXPORT void shmem_put_signal##S(void *dest, const void *source,   \
                                           size_t nelems,                    \
                                           uint64_t *sig_addr,               \
                                           uint64_t signal, int sig_op,      \
                                           int pe);                          \
    SHMEMI_EXPORT void shmem_ctx_put_signal##S(                              \
        shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);            \
    SHMEMI_EXPORT void shmem_put_signal##S##_nbi(                            \
        void *dest, const void *source, size_t nelems, uint64_t *sig_addr,   \
        uint64_t signal, int sig_op, int pe);                                \
    SHMEMI_EXPORT void shmem_ctx_put_signal##S##_nbi(                        \
        shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_SIZES(SHMEMI_DECL_SIZED)
#undef SHMEMI_DECL_SIZED

SHMEMI_EXPORT void shmem_putmem(void *dest, const void *source, size_t nelems,
                                int pe);
SHMEMI_EXPORT void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest,
                                    const void *source, size_t nelems,
                                    int pe);
SHMEMI_EXPORT void shmem_getmem(void *dest, const void *source, size_t nelems,
                                int pe);
SHMEMI_EXPORT void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest,
                                    const void *source, size_t nelems,
                                    int pe);
SHMEMI_EXPORT void shmem_putmem_nbi(void *dest, const void *source,
                                    size_t nelems, int pe);
SHMEMI_EXPORT void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest,
                                        const void *source, size_t nelems,
                                        int pe);
SHMEMI_EXPORT void shmem_getmem_nbi(void *dest, const void *source,
                                    size_t nelems, int pe);
SHMEMI_EXPORT void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest,
                                        const void *source, size_t nelems,
                                        int pe);
SHMEMI_EXPORT void shmem_putmem_signal(void *dest, const void *source,
                                       size_t nelems, uint64_t *sig_addr,
                                       uint64_t signal, int sig_op, int pe);
SHMEMI_EXPORT void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest,
                                           const void *source, size_t nelems,
                                           uint64_t *sig_addr,
                                           uint64_t signal, int sig_op,
                                           int pe);
SHMEMI_EXPORT void shmem_putmem_signal_nbi(void *dest, const void *source,
                                           size_t nelems, uint64_t *sig_addr,
                                           uint64_t signal, int sig_op,
                                           int pe);
SHMEMI_EXPORT void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest,
                                               const void *source,
                                               size_t nelems,
                                               uint64_t *sig_addr,
                                               uint64_t signal, int sig_op,
                                               int pe);

SHMEMI_EXPORT uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
SHMEMI_EXPORT uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
                                               uint64_t cmp_value);

/* ------------------------------------------------------------------------ */
/* Atomic memory operations                                                  */
/* ------------------------------------------------------------------------ */

#define SHMEMI_DECL_AMO_EXT(T, N)                                              \
    SHMEMI_EXPORT T shmem_##N##_atomic_fetch(const T *source, int pe);       \
    SHMEMI_EXPORT T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx,            \
                                                 const T *source, int pe);   \
    SHMEMI_EXPORT void shmem_##N##_atomic_set(T *dest, T value, int pe);     \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest,  \
                                                  T value, int pe);          \
    SHMEMI_EXPORT T shmem_##N##_atomic_swap(T *dest, T value, int pe);       \
    SHMEMI_EXPORT T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest,    \
                                                T value, int pe);            \
    SHMEMI_EXPORT void shmem_##N##_atomic_fetch_nbi(T *fetch,                \
                                                    const T *source,         \
                                                    int pe);                 \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_fetch_nbi(                     \
        shmem_ctx_t ctx, T *fetch, const T *source, int pe);                 \
    SHMEMI_EXPORT void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest,        \
                                                   T value, int pe);         \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_swap_nbi(                      \
        shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEMI_AMO_EXT_TYPES(SHMEMI_DECL_AMO_EXT)
#undef SHMEMI_DECL_AMO_EXT

#define SHMEMI_DECL_AMO_STD(T, N)                                              \
    SHMEMI_EXPORT T shmem_##N##_atomic_compare_swap(T *dest, T cond,         \
                                                    T value, int pe);        \
    SHMEMI_EXPORT T shmem_ctx_##N##_atomic_compare_swap(                     \
        shmem_ctx_t ctx, T *dest, T cond, T value, int pe);                  \
    SHMEMI_EXPORT T shmem_##N##_atomic_fetch_inc(T *dest, int pe);           \
    SHMEMI_EXPORT T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx,        \
                                                     T *dest, int pe);       \
    SHMEMI_EXPORT void shmem_##N##_atomic_inc(T *dest, int pe);              \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest,  \
                                                  int pe);                   \
    SHMEMI_EXPORT T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);  \
    SHMEMI_EXPORT T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx,        \
                                                     T *dest, T value,       \
                                                     int pe);                \
    SHMEMI_EXPORT void shmem_##N##_atomic_add(T *dest, T value, int pe);     \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest,  \
                                                  T value, int pe);          \
    SHMEMI_EXPORT void shmem_##N##_atomic_compare_swap_nbi(                  \
        T *fetch, T *dest, T cond, T value, int pe);                         \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_compare_swap_nbi(              \
        shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe);        \
    SHMEMI_EXPORT void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest,   \
                                                        int pe);             \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_fetch_inc_nbi(                 \
        shmem_ctx_t ctx, T *fetch, T *dest, int pe);                         \
    SHMEMI_EXPORT void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest,   \
                                                        T value, int pe);    \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_fetch_add_nbi(                 \
        shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEMI_AMO_STD_TYPES(SHMEMI_DECL_AMO_STD)
#undef SHMEMI_DECL_AMO_STD

#define SHMEMI_DECL_AMO_BIT_OP(T, N, OP)                                       \
    SHMEMI_EXPORT T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe); \
    SHMEMI_EXPORT T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx,       \
                                                      T *dest, T value,      \
                                                      int pe);               \
    SHMEMI_EXPORT void shmem_##N##_atomic_##OP(T *dest, T value, int pe);    \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, \
                                                   T value, int pe);         \
    SHMEMI_EXPORT void shmem_##N##_atomic_fetch_##OP##_nbi(                  \
        T *fetch, T *dest, T value, int pe);                                 \
    SHMEMI_EXPORT void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(              \
        shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_BIT(T, N)                                              \
    SHMEMI_DECL_AMO_BIT_OP(T, N, and)                                        \
    SHMEMI_DECL_AMO_BIT_OP(T, N, or)                                         \
    SHMEMI_DECL_AMO_BIT_OP(T, N, xor)
SHMEMI_AMO_BIT_TYPES(SHMEMI_DECL_AMO_BIT)
#undef SHMEMI_DECL_AMO_BIT
#undef SHMEMI_DECL_AMO_BIT_OP

/* Deprecated (1.4) atomic names. */
#define SHMEMI_DECL_AMO_OLD_EXT(T, N)                                          \
    SHMEMI_EXPORT T shmem_##N##_fetch(const T *source,     \
                                                        int pe);             \
    SHMEMI_EXPORT void shmem_##N##_set(T *dest, T value,   \
                                                         int pe);            \
    SHMEMI_EXPORT T shmem_##N##_swap(T *dest, T value,     \
                                                       int pe);
#define SHMEMI_DECL_AMO_OLD_STD(T, N)                                          \
    SHMEMI_EXPORT T shmem_##N##_cswap(T *dest, T cond,     \
                                                        T value, int pe);    \
    SHMEMI_EXPORT T shmem_##N##_finc(T *dest, int pe);     \
    SHMEMI_EXPORT void shmem_##N##_inc(T *dest, int pe);   \
    SHMEMI_EXPORT T shmem_##N##_fadd(T *dest, T value,     \
                                                       int pe);              \
    SHMEMI_EXPORT void shmem_##N##_add(T *dest, T value,   \
                                                         int pe);
#define SHMEMI_AMO_OLD_STD_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define SHMEMI_AMO_OLD_EXT_TYPES(X)                                            \
    SHMEMI_AMO_OLD_STD_TYPES(X) X(float, float) X(double, double)
SHMEMI_AMO_OLD_EXT_TYPES(SHMEMI_DECL_AMO_OLD_EXT)
SHMEMI_AMO_OLD_STD_TYPES(SHMEMI_DECL_AMO_OLD_STD)
#undef SHMEMI_DECL_AMO_OLD_EXT
#undef SHMEMI_DECL_AMO_OLD_STD

/* ------------------------------------------------------------------------ */
/* Collectives                                                               */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT void shmem_barrier_all(void);
SHMEMI_EXPORT void shmem_sync_all(void);
SHMEMI_EXPORT int shmem_team_sync(shmem_team_t team);
SHMEMI_EXPORT void shmem_barrier(int PE_start,
                                                   int logPE_stride,
                                                   int PE_size, long *pSync);
SHMEMI_EXPORT void shmem_sync(int PE_start,
                                                int logPE_stride, int PE_size,
                                                long *pSync);

#define SHMEMI_DECL_COLL(T, N)                                                 \
    SHMEMI_EXPORT int shmem_##N##_alltoall(shmem_team_t team, T *dest,       \
                                           const T *source, size_t nelems);  \
    SHMEMI_EXPORT int shmem_##N##_alltoalls(shmem_team_t team, T *dest,      \
                                            const T *source, ptrdiff_t dst,  \
                                            ptrdiff_t sst, size_t nelems);   \
    SHMEMI_EXPORT int shmem_##N##_broadcast(shmem_team_t team, T *dest,      \
                                            const T *source, size_t nelems,  \
                                            int PE_root);                    \
    SHMEMI_EXPORT int shmem_##N##_collect(shmem_team_t team, T *dest,        \
                                          const T *source, size_t nelems);   \
    SHMEMI_EXPORT int shmem_##N##_fcollect(shmem_team_t team, T *dest,       \
                                           const T *source, size_t nelems);
SHMEMI_RMA_TYPES(SHMEMI_DECL_COLL)
#undef SHMEMI_DECL_COLL

SHMEMI_EXPORT int shmem_alltoallmem(shmem_team_t team, void *dest,
                                    const void *source, size_t nelems);
SHMEMI_EXPORT int shmem_alltoallsmem(shmem_team_t team, void *dest,
                                     const void *source, ptrdiff_t dst,
                                     ptrdiff_t sst, size_t nelems);
SHMEMI_EXPORT int shmem_broadcastmem(shmem_team_t team, void *dest,
                                     const void *source, size_t nelems,
                                     int PE_root);
SHMEMI_EXPORT int shmem_collectmem(shmem_team_t team, void *dest,
                                   const void *source, size_t nelems);
SHMEMI_EXPORT int shmem_fcollectmem(shmem_team_t team, void *dest,
                                    const void *source, size_t nelems);

/* Deprecated active-set forms. */
#define SHMEMI_DECL_COLL_OLD(S)                                                \
    SHMEMI_EXPORT void shmem_alltoall##S(                  \
        void *dest, const void *source, size_t nelems, int PE_start,         \
        int logPE_stride, int PE_size, long *pSync);                         \
    SHMEMI_EXPORT void shmem_alltoalls##S(                 \
        void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,        \
        size_t nelems, int PE_start, int logPE_stride, int PE_size,          \
        long *pSync);                                                        \
    SHMEMI_EXPORT void shmem_broadcast##S(                 \
        void *dest, const void *source, size_t nelems, int PE_root,          \
        int PE_start, int logPE_stride, int PE_size, long *pSync);           \
    SHMEMI_EXPORT void shmem_collect##S(                   \
        void *dest, const void *source, size_t nelems, int PE_start,         \
        int logPE_stride, int PE_size, long *pSync);                         \
    SHMEMI_EXPORT void shmem_fcollect##S(                  \
        void *dest, const void *source, size_t nelems, int PE_start,         \
        int logPE_stride, int PE_size, long *pSync);
SHMEMI_DECL_COLL_OLD(32)
SHMEMI_DECL_COLL_OLD(64)
#undef SHMEMI_DECL_COLL_OLD

#define SHMEMI_DECL_REDUCE(T, N, OP)                                           \
    SHMEMI_EXPORT int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest,  \
                                                const T *source,             \
                                                size_t nreduce);
#define SHMEMI_DECL_REDUCE_BIT(T, N)                                           \
    SHMEMI_DECL_REDUCE(T, N, and)                                            \
    SHMEMI_DECL_REDUCE(T, N, or) SHMEMI_DECL_REDUCE(T, N, xor)
#define SHMEMI_DECL_REDUCE_CMP(T, N)                                           \
    SHMEMI_DECL_REDUCE(T, N, min) SHMEMI_DECL_REDUCE(T, N, max)
#define SHMEMI_DECL_REDUCE_ARITH(T, N)                                         \
    SHMEMI_DECL_REDUCE(T, N, sum) SHMEMI_DECL_REDUCE(T, N, prod)

#define SHMEMI_DECL_TO_ALL(T, N, OP)                                           \
    SHMEMI_EXPORT void shmem_##N##_##OP##_to_all(          \
        T *dest, const T *source, int nreduce, int PE_start,                 \
        int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define SHMEMI_DECL_TO_ALL_BIT(T, N)                                           \
    SHMEMI_DECL_TO_ALL(T, N, and)                                            \
    SHMEMI_DECL_TO_ALL(T, N, or) SHMEMI_DECL_TO_ALL(T, N, xor)
#define SHMEMI_DECL_TO_ALL_CMP(T, N)                                           \
    SHMEMI_DECL_TO_ALL(T, N, min) SHMEMI_DECL_TO_ALL(T, N, max)
#define SHMEMI_DECL_TO_ALL_ARITH(T, N)                                         \
    SHMEMI_DECL_TO_ALL(T, N, sum) SHMEMI_DECL_TO_ALL(T, N, prod)

/* Standard C++ has no _Complex; GCC and Clang accept it as an extension
 * (the same type as C's), so their C++ gets the complex routines too. */
#if defined(__cplusplus) && !defined(__GNUC__)
#define SHMEMI_CXX_SKIP_COMPLEX 1
#endif

SHMEMI_REDUCE_BIT_TYPES(SHMEMI_DECL_REDUCE_BIT)
SHMEMI_REDUCE_CMP_TYPES(SHMEMI_DECL_REDUCE_CMP)
SHMEMI_TO_ALL_BIT_TYPES(SHMEMI_DECL_TO_ALL_BIT)
SHMEMI_TO_ALL_CMP_TYPES(SHMEMI_DECL_TO_ALL_CMP)
#ifndef SHMEMI_CXX_SKIP_COMPLEX
#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#endif
SHMEMI_REDUCE_ARITH_TYPES(SHMEMI_DECL_REDUCE_ARITH)
SHMEMI_TO_ALL_ARITH_TYPES(SHMEMI_DECL_TO_ALL_ARITH)
#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic pop
#endif
#else
SHMEMI_REDUCE_CMP_TYPES(SHMEMI_DECL_REDUCE_ARITH)
SHMEMI_TO_ALL_CMP_TYPES(SHMEMI_DECL_TO_ALL_ARITH)
#endif
#undef SHMEMI_DECL_REDUCE
#undef SHMEMI_DECL_REDUCE_BIT
#undef SHMEMI_DECL_REDUCE_CMP
#undef SHMEMI_DECL_REDUCE_ARITH
#undef SHMEMI_DECL_TO_ALL
#undef SHMEMI_DECL_TO_ALL_BIT
#undef SHMEMI_DECL_TO_ALL_CMP
#undef SHMEMI_DECL_TO_ALL_ARITH

/* ------------------------------------------------------------------------ */
/* Memory ordering                                                           */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT void shmem_fence(void);
SHMEMI_EXPORT void shmem_ctx_fence(shmem_ctx_t ctx);
SHMEMI_EXPORT void shmem_quiet(void);
SHMEMI_EXPORT void shmem_ctx_quiet(shmem_ctx_t ctx);

/* ------------------------------------------------------------------------ */
/* Point-to-point synchronization                                            */
/* ------------------------------------------------------------------------ */

#define SHMEMI_DECL_P2P(T, N)                                                  \
    SHMEMI_EXPORT void shmem_##N##_wait_until(T *ivar, int cmp,              \
                                              T cmp_value);                  \
    SHMEMI_EXPORT void shmem_##N##_wait_until_all(T *ivars, size_t nelems,   \
                                                  const int *status,         \
                                                  int cmp, T cmp_value);     \
    SHMEMI_EXPORT size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, \
                                                    const int *status,       \
                                                    int cmp, T cmp_value);   \
    SHMEMI_EXPORT size_t shmem_##N##_wait_until_some(                        \
        T *ivars, size_t nelems, size_t *indices, const int *status,         \
        int cmp, T cmp_value);                                               \
    SHMEMI_EXPORT void shmem_##N##_wait_until_all_vector(                    \
        T *ivars, size_t nelems, const int *status, int cmp,                 \
        T *cmp_values);                                                      \
    SHMEMI_EXPORT size_t shmem_##N##_wait_until_any_vector(                  \
        T *ivars, size_t nelems, const int *status, int cmp,                 \
        T *cmp_values);                                                      \
    SHMEMI_EXPORT size_t shmem_##N##_wait_until_some_vector(                 \
        T *ivars, size_t nelems, size_t *indices, const int *status,         \
        int cmp, T *cmp_values);                                             \
    SHMEMI_EXPORT int shmem_##N##_test(T *ivar, int cmp, T cmp_value);       \
    SHMEMI_EXPORT int shmem_##N##_test_all(T *ivars, size_t nelems,          \
                                           const int *status, int cmp,       \
                                           T cmp_value);                     \
    SHMEMI_EXPORT size_t shmem_##N##_test_any(T *ivars, size_t nelems,       \
                                              const int *status, int cmp,    \
                                              T cmp_value);                  \
    SHMEMI_EXPORT size_t shmem_##N##_test_some(T *ivars, size_t nelems,      \
                                               size_t *indices,              \
                                               const int *status, int cmp,   \
                                               T cmp_value);                 \
    SHMEMI_EXPORT int shmem_##N##_test_all_vector(T *ivars, size_t nelems,   \
                                                  const int *status,         \
                                                  int cmp, T *cmp_values);   \
    SHMEMI_EXPORT size_t shmem_##N##_test_any_vector(                        \
        T *ivars, size_t nelems, const int *status, int cmp,                 \
        T *cmp_values);                                                      \
    SHMEMI_EXPORT size_t shmem_##N##_test_some_vector(                       \
        T *ivars, size_t nelems, size_t *indices, const int *status,         \
        int cmp, T *cmp_values);
SHMEMI_P2P_TYPES(SHMEMI_DECL_P2P)
#undef SHMEMI_DECL_P2P

/* Deprecated (1.4) waits. */
#define SHMEMI_DECL_WAIT_OLD(T, N)                                             \
    SHMEMI_EXPORT void shmem_##N##_wait(T *ivar,           \
                                                          T cmp_value);
SHMEMI_DECL_WAIT_OLD(short, short)
SHMEMI_DECL_WAIT_OLD(int, int)
SHMEMI_DECL_WAIT_OLD(long, long)
SHMEMI_DECL_WAIT_OLD(long long, longlong)
#undef SHMEMI_DECL_WAIT_OLD

/* ------------------------------------------------------------------------ */
/* Distributed locking                                                       */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT void shmem_set_lock(long *lock);
SHMEMI_EXPORT void shmem_clear_lock(long *lock);
SHMEMI_EXPORT int shmem_test_lock(long *lock);

/* ------------------------------------------------------------------------ */
/* Deprecated cache management: no-ops, the memory is coherent.              */
/* ------------------------------------------------------------------------ */

SHMEMI_EXPORT void shmem_clear_cache_inv(void);
SHMEMI_EXPORT void shmem_set_cache_inv(void);
SHMEMI_EXPORT void shmem_clear_cache_line_inv(void *dest);
SHMEMI_EXPORT void shmem_set_cache_line_inv(void *dest);
SHMEMI_EXPORT void shmem_udcflush(void);
SHMEMI_EXPORT void shmem_udcflush_line(void *dest);

#ifdef __cplusplus
}
#endif

#include "shmem_generic.h"

#endif /* SHMEM_H */

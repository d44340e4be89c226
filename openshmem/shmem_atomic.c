/* Atomic memory operations. On a target the PE can load and store (its
 * own, a heap of the node) they are the CPU's atomics; pami applies its
 * own rmw on the owner's node with the same CPU atomics, so both kinds
 * are atomic together. Otherwise pami_rmw: FETCH_ADD, SWAP, CSWAP and ADD
 * directly, fetch as a fetch-add of 0, and/or/xor as a compare-and-swap
 * loop. Every type of the tables is 4 or 8 bytes; values travel as their
 * bits in a uint64_t. */
#include <string.h>

#include "shmem_internal.h"

typedef enum {
    AMO_FETCH, AMO_SET, AMO_SWAP, AMO_CSWAP, AMO_FADD, AMO_ADD,
    AMO_FAND, AMO_FOR, AMO_FXOR
} amo_op_t;

static uint64_t local_amo(char *p, size_t size, amo_op_t op, uint64_t v,
                          uint64_t cmp)
{
#define LOCAL_AMO(T)                                                           \
    do {                                                                     \
        T *a = (T *)p, x = (T)v, c = (T)cmp;                                 \
        switch (op) {                                                        \
        case AMO_FETCH: return __atomic_load_n(a, __ATOMIC_SEQ_CST);         \
        case AMO_SET: __atomic_store_n(a, x, __ATOMIC_SEQ_CST); return 0;    \
        case AMO_SWAP: return __atomic_exchange_n(a, x, __ATOMIC_SEQ_CST);   \
        case AMO_CSWAP:                                                      \
            __atomic_compare_exchange_n(a, &c, x, 0, __ATOMIC_SEQ_CST,       \
                                        __ATOMIC_SEQ_CST);                   \
            return c;                                                        \
        case AMO_FADD:                                                       \
        case AMO_ADD: return __atomic_fetch_add(a, x, __ATOMIC_SEQ_CST);     \
        case AMO_FAND: return __atomic_fetch_and(a, x, __ATOMIC_SEQ_CST);    \
        case AMO_FOR: return __atomic_fetch_or(a, x, __ATOMIC_SEQ_CST);      \
        case AMO_FXOR: return __atomic_fetch_xor(a, x, __ATOMIC_SEQ_CST);    \
        }                                                                    \
        return 0;                                                            \
    } while (0)
    if (size == 4)
        LOCAL_AMO(uint32_t);
    LOCAL_AMO(uint64_t);
#undef LOCAL_AMO
}

static void rmw_issue(shmem_ctx_t ctx, const shmemi_remote_t *r, size_t size,
                      pami_rmw_op_t op, uint64_t v, uint64_t cmp,
                      void *result, volatile uint64_t *count)
{
    pami_rmw_t p;
    pami_result_t rc;

    memset(&p, 0, sizeof(p));
    p.dest = r->endpoint;
    p.remote_mr = r->mr;
    p.remote_offset = r->offset;
    p.op = op;
    p.size = size;
    p.value = v;
    p.compare = cmp;
    p.result = result;
    p.done_fn = shmemi_count_done;
    p.cookie = (void *)count;
    /* As a put's (shmem_rma.c): counted before, marked after, locked. */
    for (;;) {
        shmemi_lock();
        (*count)++;
        rc = pami_rmw(ctx->context, &p);
        if (rc != PAMI_SUCCESS)
            (*count)--;
        else
            shmemi.pami_unfenced = 1;
        shmemi_unlock();
        if (rc != PAMI_EAGAIN)
            break;
        shmemi_progress(ctx->context);
    }
    if (rc != PAMI_SUCCESS)
        shmemi_fatal("atomic of %zu bytes: %s", size, pami_error_text(rc));
}

/* One pami_rmw, waited for; the old value. */
static uint64_t rmw(shmem_ctx_t ctx, const shmemi_remote_t *r, size_t size,
                    pami_rmw_op_t op, uint64_t v, uint64_t cmp)
{
    volatile uint64_t count = 0;
    uint64_t old = 0;

    rmw_issue(ctx, r, size, op, v, cmp, &old, &count);
    shmemi_wait_count(ctx->context, &count);
    /* size 4: the low 4 bytes hold the old value */
    if (size == 4) {
        uint32_t o32;

        memcpy(&o32, &old, 4);
        return o32;
    }
    return old;
}

static uint64_t apply(amo_op_t op, uint64_t old, uint64_t v)
{
    switch (op) {
    case AMO_FAND: return old & v;
    case AMO_FOR: return old | v;
    default: return old ^ v;
    }
}

static uint64_t amo(shmem_ctx_t ctx, const char *fn, void *dest, size_t size,
                    amo_op_t op, uint64_t v, uint64_t cmp, int pe)
{
    shmemi_remote_t r;
    uint64_t mask = size == 4 ? 0xffffffffu : ~(uint64_t)0;
    uint64_t old;

    if (ctx == SHMEM_CTX_INVALID)
        shmemi_fatal("%s on SHMEM_CTX_INVALID", fn);
    if (((uintptr_t)dest & (size - 1)) != 0)
        shmemi_fatal("%s: %p is not aligned to %zu bytes", fn, dest, size);
    pe = shmemi_ctx_pe(ctx, pe, fn);
    shmemi_resolve(fn, dest, size, pe, &r);
    v &= mask;
    cmp &= mask;
    if (r.local != NULL)
        return local_amo(r.local, size, op, v, cmp);
    switch (op) {
    case AMO_FETCH: return rmw(ctx, &r, size, PAMI_RMW_FETCH_ADD, 0, 0);
    case AMO_SET:
    case AMO_SWAP: return rmw(ctx, &r, size, PAMI_RMW_SWAP, v, 0);
    case AMO_CSWAP: return rmw(ctx, &r, size, PAMI_RMW_CSWAP, v, cmp);
    case AMO_FADD: return rmw(ctx, &r, size, PAMI_RMW_FETCH_ADD, v, 0);
    case AMO_ADD:
        /* Completed by quiet, as a put. */
        rmw_issue(ctx, &r, size, PAMI_RMW_ADD, v, 0, NULL, &ctx->pending);
        return 0;
    default:
        old = rmw(ctx, &r, size, PAMI_RMW_FETCH_ADD, 0, 0);
        for (;;) {
            uint64_t seen = rmw(ctx, &r, size, PAMI_RMW_CSWAP,
                                apply(op, old, v) & mask, old);

            if (seen == old)
                return old;
            old = seen;
        }
    }
}

/* A value of type T as bits in a uint64_t, and back. */
#define TO_BITS(T, x) shmemi_to_bits(&(x), sizeof(T))
static inline uint64_t shmemi_to_bits(const void *x, size_t size)
{
    uint64_t b = 0;

    memcpy(&b, x, size);
    return b;
}
#define FROM_BITS(T, b)                                                        \
    ({                                                                       \
        T v_;                                                                \
        uint64_t b_ = (b);                                                   \
        memcpy(&v_, &b_, sizeof(T));                                         \
        v_;                                                                  \
    })

#define DEF_AMO_EXT(T, N)                                                      \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe) \
    {                                                                        \
        return FROM_BITS(T, amo(ctx, "shmem_atomic_fetch", (void *)source,   \
                                sizeof(T), AMO_FETCH, 0, 0, pe));            \
    }                                                                        \
    T shmem_##N##_atomic_fetch(const T *source, int pe)                      \
    {                                                                        \
        return shmem_ctx_##N##_atomic_fetch(SHMEM_CTX_DEFAULT, source, pe);  \
    }                                                                        \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value,       \
                                    int pe)                                  \
    {                                                                        \
        amo(ctx, "shmem_atomic_set", dest, sizeof(T), AMO_SET,               \
            TO_BITS(T, value), 0, pe);                                       \
    }                                                                        \
    void shmem_##N##_atomic_set(T *dest, T value, int pe)                    \
    {                                                                        \
        shmem_ctx_##N##_atomic_set(SHMEM_CTX_DEFAULT, dest, value, pe);      \
    }                                                                        \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe) \
    {                                                                        \
        return FROM_BITS(T, amo(ctx, "shmem_atomic_swap", dest, sizeof(T),   \
                                AMO_SWAP, TO_BITS(T, value), 0, pe));        \
    }                                                                        \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe)                      \
    {                                                                        \
        return shmem_ctx_##N##_atomic_swap(SHMEM_CTX_DEFAULT, dest, value,   \
                                           pe);                              \
    }                                                                        \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch,         \
                                          const T *source, int pe)           \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch(ctx, source, pe);              \
    }                                                                        \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe)     \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch(SHMEM_CTX_DEFAULT, source,     \
                                              pe);                           \
    }                                                                        \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, \
                                         T value, int pe)                    \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_swap(ctx, dest, value, pe);          \
    }                                                                        \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe)     \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_swap(SHMEM_CTX_DEFAULT, dest, value, \
                                             pe);                            \
    }
SHMEMI_AMO_EXT_TYPES(DEF_AMO_EXT)

#define DEF_AMO_STD(T, N)                                                      \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond,  \
                                          T value, int pe)                   \
    {                                                                        \
        return FROM_BITS(T, amo(ctx, "shmem_atomic_compare_swap", dest,      \
                                sizeof(T), AMO_CSWAP, TO_BITS(T, value),     \
                                TO_BITS(T, cond), pe));                      \
    }                                                                        \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe)      \
    {                                                                        \
        return shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, dest,  \
                                                   cond, value, pe);         \
    }                                                                        \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value,    \
                                       int pe)                               \
    {                                                                        \
        return FROM_BITS(T, amo(ctx, "shmem_atomic_fetch_add", dest,         \
                                sizeof(T), AMO_FADD, TO_BITS(T, value), 0,   \
                                pe));                                        \
    }                                                                        \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe)                 \
    {                                                                        \
        return shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, dest,     \
                                                value, pe);                  \
    }                                                                        \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe)     \
    {                                                                        \
        return shmem_ctx_##N##_atomic_fetch_add(ctx, dest, (T)1, pe);        \
    }                                                                        \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe)                          \
    {                                                                        \
        return shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, dest,     \
                                                (T)1, pe);                   \
    }                                                                        \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value,       \
                                    int pe)                                  \
    {                                                                        \
        amo(ctx, "shmem_atomic_add", dest, sizeof(T), AMO_ADD,               \
            TO_BITS(T, value), 0, pe);                                       \
    }                                                                        \
    void shmem_##N##_atomic_add(T *dest, T value, int pe)                    \
    {                                                                        \
        shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, dest, value, pe);      \
    }                                                                        \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe)        \
    {                                                                        \
        shmem_ctx_##N##_atomic_add(ctx, dest, (T)1, pe);                     \
    }                                                                        \
    void shmem_##N##_atomic_inc(T *dest, int pe)                             \
    {                                                                        \
        shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, dest, (T)1, pe);       \
    }                                                                        \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch,  \
                                                 T *dest, T cond, T value,   \
                                                 int pe)                     \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_compare_swap(ctx, dest, cond, value, \
                                                     pe);                    \
    }                                                                        \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond,      \
                                             T value, int pe)                \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT,      \
                                                     dest, cond, value, pe); \
    }                                                                        \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch,     \
                                              T *dest, int pe)               \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch_add(ctx, dest, (T)1, pe);      \
    }                                                                        \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe)         \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, dest,   \
                                                  (T)1, pe);                 \
    }                                                                        \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch,     \
                                              T *dest, T value, int pe)      \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch_add(ctx, dest, value, pe);     \
    }                                                                        \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value,        \
                                          int pe)                            \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, dest,   \
                                                  value, pe);                \
    }
SHMEMI_AMO_STD_TYPES(DEF_AMO_STD)

#define DEF_AMO_BIT_OP(T, N, OP, CODE)                                         \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value,   \
                                        int pe)                              \
    {                                                                        \
        return FROM_BITS(T, amo(ctx, "shmem_atomic_fetch_" #OP, dest,        \
                                sizeof(T), CODE, TO_BITS(T, value), 0, pe)); \
    }                                                                        \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe)                \
    {                                                                        \
        return shmem_ctx_##N##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT, dest,    \
                                                 value, pe);                 \
    }                                                                        \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value,      \
                                     int pe)                                 \
    {                                                                        \
        shmem_ctx_##N##_atomic_fetch_##OP(ctx, dest, value, pe);             \
    }                                                                        \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe)                   \
    {                                                                        \
        shmem_ctx_##N##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT, dest, value,    \
                                          pe);                               \
    }                                                                        \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch,  \
                                                 T *dest, T value, int pe)   \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch_##OP(ctx, dest, value, pe);    \
    }                                                                        \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value,     \
                                             int pe)                         \
    {                                                                        \
        *fetch = shmem_ctx_##N##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT, dest,  \
                                                   value, pe);               \
    }
#define DEF_AMO_BIT(T, N)                                                      \
    DEF_AMO_BIT_OP(T, N, and, AMO_FAND)                                      \
    DEF_AMO_BIT_OP(T, N, or, AMO_FOR)                                        \
    DEF_AMO_BIT_OP(T, N, xor, AMO_FXOR)
SHMEMI_AMO_BIT_TYPES(DEF_AMO_BIT)

/* The deprecated (1.4) names. */
#define DEF_AMO_OLD_EXT(T, N)                                                  \
    T shmem_##N##_fetch(const T *source, int pe)                             \
    {                                                                        \
        return shmem_##N##_atomic_fetch(source, pe);                         \
    }                                                                        \
    void shmem_##N##_set(T *dest, T value, int pe)                           \
    {                                                                        \
        shmem_##N##_atomic_set(dest, value, pe);                             \
    }                                                                        \
    T shmem_##N##_swap(T *dest, T value, int pe)                             \
    {                                                                        \
        return shmem_##N##_atomic_swap(dest, value, pe);                     \
    }
#define DEF_AMO_OLD_STD(T, N)                                                  \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe)                    \
    {                                                                        \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);       \
    }                                                                        \
    T shmem_##N##_finc(T *dest, int pe)                                      \
    {                                                                        \
        return shmem_##N##_atomic_fetch_inc(dest, pe);                       \
    }                                                                        \
    void shmem_##N##_inc(T *dest, int pe)                                    \
    {                                                                        \
        shmem_##N##_atomic_inc(dest, pe);                                    \
    }                                                                        \
    T shmem_##N##_fadd(T *dest, T value, int pe)                             \
    {                                                                        \
        return shmem_##N##_atomic_fetch_add(dest, value, pe);                \
    }                                                                        \
    void shmem_##N##_add(T *dest, T value, int pe)                           \
    {                                                                        \
        shmem_##N##_atomic_add(dest, value, pe);                             \
    }
SHMEMI_AMO_OLD_EXT_TYPES(DEF_AMO_OLD_EXT)
SHMEMI_AMO_OLD_STD_TYPES(DEF_AMO_OLD_STD)

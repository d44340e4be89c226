/* Point-to-point synchronization: wait_until and test in every form, the
 * signal reads, and the deprecated waits. A wait polls the variable and
 * drives pami between looks (a peer's update may come through pami, whose
 * owner-side atomics this PE applies only while it progresses); when
 * nothing happened it yields the CPU, so PEs that outnumber the cores
 * take turns, and after SHMEMI_POLL_SPIN_NS of nothing it naps in
 * pami_context_wait (shmemi_poll). */
#include "shmem_internal.h"

static void bad_cmp(const char *fn, int cmp)
{
    shmemi_fatal("%s: %d is not a SHMEM_CMP_* comparison", fn, cmp);
}

#define DEF_CMP(T, N)                                                          \
    static inline int cmp_##N(const char *fn, T *ivar, int cmp, T value)     \
    {                                                                        \
        T v = __atomic_load_n(ivar, __ATOMIC_ACQUIRE);                       \
        switch (cmp) {                                                       \
        case SHMEM_CMP_EQ: return v == value;                                \
        case SHMEM_CMP_NE: return v != value;                                \
        case SHMEM_CMP_GT: return v > value;                                 \
        case SHMEM_CMP_GE: return v >= value;                                \
        case SHMEM_CMP_LT: return v < value;                                 \
        case SHMEM_CMP_LE: return v <= value;                                \
        }                                                                    \
        bad_cmp(fn, cmp);                                                    \
        return 0;                                                            \
    }
SHMEMI_P2P_TYPES(DEF_CMP)

static void poll_once(void)
{
    shmemi_progress(shmemi.context);
}

#define POLL_UNTIL(cond)                                                       \
    do {                                                                     \
        shmemi_poll_t ps_ = { 0 };                                           \
        while (!(cond))                                                      \
            shmemi_poll(shmemi.context, &ps_);                               \
    } while (0)

#define ELIGIBLE(i) (status == NULL || status[i] == 0)
#define VALUE_OF(i) (values != NULL ? values[i] : value)

/* The _any forms scan from just past the index they last returned (per
 * thread), so a caller that polls without a status array still sees
 * every satisfied element in turn instead of always the first one
 * (tests-sos's shmem_test_any example waits for that). */
static _Thread_local size_t any_next;

/* The checks of the vector and scalar forms share one body: values is
 * NULL for the scalar ones. */
#define DEF_P2P(T, N)                                                          \
    static int all_##N(T *ivars, size_t n, const int *status, int cmp,       \
                       T value, const T *values)                             \
    {                                                                        \
        for (size_t i = 0; i < n; i++)                                       \
            if (ELIGIBLE(i) &&                                               \
                !cmp_##N("shmem_wait_until_all", &ivars[i], cmp,             \
                         VALUE_OF(i)))                                       \
                return 0;                                                    \
        return 1;                                                            \
    }                                                                        \
    static size_t any_##N(T *ivars, size_t n, const int *status, int cmp,    \
                          T value, const T *values)                          \
    {                                                                        \
        size_t start = n > 0 ? any_next % n : 0;                             \
        for (size_t k = 0; k < n; k++) {                                     \
            size_t i = (start + k) % n;                                      \
            if (ELIGIBLE(i) &&                                               \
                cmp_##N("shmem_wait_until_any", &ivars[i], cmp,              \
                        VALUE_OF(i))) {                                      \
                any_next = i + 1;                                            \
                return i;                                                    \
            }                                                                \
        }                                                                    \
        return SIZE_MAX;                                                     \
    }                                                                        \
    static size_t some_##N(T *ivars, size_t n, size_t *indices,              \
                           const int *status, int cmp, T value,              \
                           const T *values)                                  \
    {                                                                        \
        size_t k = 0;                                                        \
        for (size_t i = 0; i < n; i++)                                       \
            if (ELIGIBLE(i) &&                                               \
                cmp_##N("shmem_wait_until_some", &ivars[i], cmp,             \
                        VALUE_OF(i)))                                        \
                indices[k++] = i;                                            \
        return k;                                                            \
    }                                                                        \
    static int none_eligible_##N(size_t n, const int *status)                \
    {                                                                        \
        for (size_t i = 0; i < n; i++)                                       \
            if (ELIGIBLE(i))                                                 \
                return 0;                                                    \
        return 1;                                                            \
    }                                                                        \
    int shmem_##N##_test(T *ivar, int cmp, T value)                          \
    {                                                                        \
        shmemi_require_init("shmem_test");                                   \
        poll_once();                                                         \
        return cmp_##N("shmem_test", ivar, cmp, value);                      \
    }                                                                        \
    void shmem_##N##_wait_until(T *ivar, int cmp, T value)                   \
    {                                                                        \
        shmemi_require_init("shmem_wait_until");                             \
        POLL_UNTIL(cmp_##N("shmem_wait_until", ivar, cmp, value));           \
    }                                                                        \
    int shmem_##N##_test_all(T *ivars, size_t n, const int *status, int cmp, \
                             T value)                                        \
    {                                                                        \
        poll_once();                                                         \
        return all_##N(ivars, n, status, cmp, value, NULL);                  \
    }                                                                        \
    int shmem_##N##_test_all_vector(T *ivars, size_t n, const int *status,   \
                                    int cmp, T *values)                      \
    {                                                                        \
        poll_once();                                                         \
        return all_##N(ivars, n, status, cmp, 0, values);                    \
    }                                                                        \
    void shmem_##N##_wait_until_all(T *ivars, size_t n, const int *status,   \
                                    int cmp, T value)                        \
    {                                                                        \
        POLL_UNTIL(all_##N(ivars, n, status, cmp, value, NULL));             \
    }                                                                        \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t n,               \
                                           const int *status, int cmp,       \
                                           T *values)                        \
    {                                                                        \
        POLL_UNTIL(all_##N(ivars, n, status, cmp, 0, values));               \
    }                                                                        \
    size_t shmem_##N##_test_any(T *ivars, size_t n, const int *status,       \
                                int cmp, T value)                            \
    {                                                                        \
        poll_once();                                                         \
        return any_##N(ivars, n, status, cmp, value, NULL);                  \
    }                                                                        \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t n,                   \
                                       const int *status, int cmp,           \
                                       T *values)                            \
    {                                                                        \
        poll_once();                                                         \
        return any_##N(ivars, n, status, cmp, 0, values);                    \
    }                                                                        \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t n, const int *status, \
                                      int cmp, T value)                      \
    {                                                                        \
        size_t i;                                                            \
        if (none_eligible_##N(n, status))                                    \
            return SIZE_MAX;                                                 \
        POLL_UNTIL((i = any_##N(ivars, n, status, cmp, value, NULL)) !=      \
                   SIZE_MAX);                                                \
        return i;                                                            \
    }                                                                        \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t n,             \
                                             const int *status, int cmp,     \
                                             T *values)                      \
    {                                                                        \
        size_t i;                                                            \
        if (none_eligible_##N(n, status))                                    \
            return SIZE_MAX;                                                 \
        POLL_UNTIL((i = any_##N(ivars, n, status, cmp, 0, values)) !=        \
                   SIZE_MAX);                                                \
        return i;                                                            \
    }                                                                        \
    size_t shmem_##N##_test_some(T *ivars, size_t n, size_t *indices,        \
                                 const int *status, int cmp, T value)        \
    {                                                                        \
        poll_once();                                                         \
        return some_##N(ivars, n, indices, status, cmp, value, NULL);        \
    }                                                                        \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t n, size_t *indices, \
                                        const int *status, int cmp,          \
                                        T *values)                           \
    {                                                                        \
        poll_once();                                                         \
        return some_##N(ivars, n, indices, status, cmp, 0, values);          \
    }                                                                        \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t n, size_t *indices,  \
                                       const int *status, int cmp, T value)  \
    {                                                                        \
        size_t k;                                                            \
        if (none_eligible_##N(n, status))                                    \
            return 0;                                                        \
        POLL_UNTIL((k = some_##N(ivars, n, indices, status, cmp, value,      \
                                 NULL)) != 0);                               \
        return k;                                                            \
    }                                                                        \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t n,            \
                                              size_t *indices,               \
                                              const int *status, int cmp,    \
                                              T *values)                     \
    {                                                                        \
        size_t k;                                                            \
        if (none_eligible_##N(n, status))                                    \
            return 0;                                                        \
        POLL_UNTIL((k = some_##N(ivars, n, indices, status, cmp, 0,          \
                                 values)) != 0);                             \
        return k;                                                            \
    }
SHMEMI_P2P_TYPES(DEF_P2P)

#define DEF_WAIT_OLD(T, N)                                                     \
    void shmem_##N##_wait(T *ivar, T value)                                  \
    {                                                                        \
        shmem_##N##_wait_until(ivar, SHMEM_CMP_NE, value);                   \
    }
DEF_WAIT_OLD(short, short)
DEF_WAIT_OLD(int, int)
DEF_WAIT_OLD(long, long)
DEF_WAIT_OLD(long long, longlong)

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
                                 uint64_t cmp_value)
{
    shmem_uint64_wait_until(sig_addr, cmp, cmp_value);
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

/*
 * The C11 type-generic interfaces of OpenSHMEM 1.5 (included by shmem.h;
 * do not include it alone). Each generic selects on the type of its
 * symmetric argument, over the base C types of the family (typedefs such
 * as int64_t or size_t are one of them already, so they are not listed);
 * the RMA and atomic ones first check whether the first argument is a
 * shmem_ctx_t. A type outside the family selects
 * shmemi_generic_no_match, which takes no arguments: the call does not
 * compile.
 */
#ifndef SHMEM_GENERIC_H
#define SHMEM_GENERIC_H

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L &&               \
    !defined(__cplusplus)

void shmemi_generic_no_match(void); /* never defined */

#define SHMEMI_FIRST_(a, ...) a
#define SHMEMI_FIRST(...) SHMEMI_FIRST_(__VA_ARGS__, 0)
#define SHMEMI_SECOND_(a, b, ...) b
#define SHMEMI_SECOND(...) SHMEMI_SECOND_(__VA_ARGS__, 0, 0)

/* Associations: T * selects shmem_<N>_<OP> (or shmem_ctx_<N>_<OP>); the
 * _C forms accept const T * too, for routines that only read it. */
#define SHMEMI_A(T, N, OP) , T *: shmem_##N##_##OP
#define SHMEMI_AC(T, N, OP) , T *: shmem_ctx_##N##_##OP
#define SHMEMI_A_C(T, N, OP) , T *: shmem_##N##_##OP, const T *: shmem_##N##_##OP
#define SHMEMI_AC_C(T, N, OP)                                                  \
    , T *: shmem_ctx_##N##_##OP, const T *: shmem_ctx_##N##_##OP

#define SHMEMI_G_RMA(X, OP)                                                    \
    X(float, float, OP) X(double, double, OP)                                \
    X(long double, longdouble, OP) X(char, char, OP)                         \
    X(signed char, schar, OP) X(short, short, OP) X(int, int, OP)            \
    X(long, long, OP) X(long long, longlong, OP)                             \
    X(unsigned char, uchar, OP) X(unsigned short, ushort, OP)                \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP)                    \
    X(unsigned long long, ulonglong, OP)
#define SHMEMI_G_STD(X, OP)                                                    \
    X(int, int, OP) X(long, long, OP) X(long long, longlong, OP)             \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP)                    \
    X(unsigned long long, ulonglong, OP)
#define SHMEMI_G_EXT(X, OP)                                                    \
    SHMEMI_G_STD(X, OP) X(float, float, OP) X(double, double, OP)
/* The bitwise families name int32_t, int64_t (and, for reductions, int8_t,
 * int16_t) but not int or long: select those through their own names. */
#define SHMEMI_G_BIT(X, OP)                                                    \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP)                    \
    X(unsigned long long, ulonglong, OP) X(int32_t, int32, OP)               \
    X(int64_t, int64, OP)
#define SHMEMI_G_P2P(X, OP)                                                    \
    X(short, short, OP) X(int, int, OP) X(long, long, OP)                    \
    X(long long, longlong, OP) X(unsigned short, ushort, OP)                 \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP)                    \
    X(unsigned long long, ulonglong, OP)
#define SHMEMI_G_RBIT(X, OP)                                                   \
    X(unsigned char, uchar, OP) X(unsigned short, ushort, OP)                \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP)                    \
    X(unsigned long long, ulonglong, OP) X(int8_t, int8, OP)                 \
    X(int16_t, int16, OP) X(int32_t, int32, OP) X(int64_t, int64, OP)
#define SHMEMI_G_RCMP(X, OP)                                                   \
    X(char, char, OP) X(signed char, schar, OP) X(short, short, OP)          \
    X(int, int, OP) X(long, long, OP) X(long long, longlong, OP)             \
    X(unsigned char, uchar, OP) X(unsigned short, ushort, OP)                \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP)                    \
    X(unsigned long long, ulonglong, OP) X(float, float, OP)                 \
    X(double, double, OP) X(long double, longdouble, OP)
#define SHMEMI_G_RARITH(X, OP)                                                 \
    SHMEMI_G_RCMP(X, OP) X(double _Complex, complexd, OP)                    \
    X(float _Complex, complexf, OP)
#define SHMEMI_G_OLD_STD(X, OP)                                                \
    X(int, int, OP) X(long, long, OP) X(long long, longlong, OP)
#define SHMEMI_G_OLD_EXT(X, OP)                                                \
    SHMEMI_G_OLD_STD(X, OP) X(float, float, OP) X(double, double, OP)
#define SHMEMI_G_OLD_WAIT(X, OP)                                               \
    X(short, short, OP) SHMEMI_G_OLD_STD(X, OP)

/* A routine with an optional leading shmem_ctx_t: select on the first
 * argument, or on the second when the first is a context. */
#define SHMEMI_GEN_CTX(LIST, A, AC, OP, ...)                                   \
    _Generic(SHMEMI_FIRST(__VA_ARGS__),                                      \
        shmem_ctx_t: _Generic(SHMEMI_SECOND(__VA_ARGS__)                     \
                              LIST(AC, OP),                                  \
                              default: shmemi_generic_no_match),             \
        default: _Generic(SHMEMI_FIRST(__VA_ARGS__) LIST(A, OP),             \
                          default: shmemi_generic_no_match))(__VA_ARGS__)
/* A routine whose symmetric argument is the first (p2p) or the second
 * after a team (collectives). */
#define SHMEMI_GEN_1(LIST, OP, ...)                                            \
    _Generic(SHMEMI_FIRST(__VA_ARGS__) LIST(SHMEMI_A, OP),                   \
             default: shmemi_generic_no_match)(__VA_ARGS__)
#define SHMEMI_GEN_2(LIST, OP, ...)                                            \
    _Generic(SHMEMI_SECOND(__VA_ARGS__) LIST(SHMEMI_A, OP),                  \
             default: shmemi_generic_no_match)(__VA_ARGS__)

/* RMA */
#define shmem_put(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, put, __VA_ARGS__)
#define shmem_get(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, get, __VA_ARGS__)
#define shmem_p(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, p, __VA_ARGS__)
#define shmem_g(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A_C, SHMEMI_AC_C, g, __VA_ARGS__)
#define shmem_iput(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, iput, __VA_ARGS__)
#define shmem_iget(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, iget, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, get_nbi, __VA_ARGS__)
#define shmem_put_signal(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_RMA, SHMEMI_A, SHMEMI_AC, put_signal_nbi, __VA_ARGS__)

/* Atomics */
#define shmem_atomic_fetch(...) SHMEMI_GEN_CTX(SHMEMI_G_EXT, SHMEMI_A_C, SHMEMI_AC_C, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEMI_GEN_CTX(SHMEMI_G_EXT, SHMEMI_A, SHMEMI_AC, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEMI_GEN_CTX(SHMEMI_G_EXT, SHMEMI_A, SHMEMI_AC, atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_EXT, SHMEMI_A, SHMEMI_AC, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_EXT, SHMEMI_A, SHMEMI_AC, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_STD, SHMEMI_A, SHMEMI_AC, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEMI_GEN_CTX(SHMEMI_G_BIT, SHMEMI_A, SHMEMI_AC, atomic_fetch_xor_nbi, __VA_ARGS__)

/* Deprecated (1.4) atomic generics */
#define shmem_fetch(...) SHMEMI_GEN_1(SHMEMI_G_OLD_EXT, fetch, __VA_ARGS__)
#define shmem_set(...) SHMEMI_GEN_1(SHMEMI_G_OLD_EXT, set, __VA_ARGS__)
#define shmem_swap(...) SHMEMI_GEN_1(SHMEMI_G_OLD_EXT, swap, __VA_ARGS__)
#define shmem_cswap(...) SHMEMI_GEN_1(SHMEMI_G_OLD_STD, cswap, __VA_ARGS__)
#define shmem_finc(...) SHMEMI_GEN_1(SHMEMI_G_OLD_STD, finc, __VA_ARGS__)
#define shmem_inc(...) SHMEMI_GEN_1(SHMEMI_G_OLD_STD, inc, __VA_ARGS__)
#define shmem_fadd(...) SHMEMI_GEN_1(SHMEMI_G_OLD_STD, fadd, __VA_ARGS__)
#define shmem_add(...) SHMEMI_GEN_1(SHMEMI_G_OLD_STD, add, __VA_ARGS__)

/* Collectives */
#define shmem_alltoall(...) SHMEMI_GEN_2(SHMEMI_G_RMA, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEMI_GEN_2(SHMEMI_G_RMA, alltoalls, __VA_ARGS__)
#define shmem_broadcast(...) SHMEMI_GEN_2(SHMEMI_G_RMA, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEMI_GEN_2(SHMEMI_G_RMA, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEMI_GEN_2(SHMEMI_G_RMA, fcollect, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RBIT, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RBIT, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RBIT, xor_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RCMP, min_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RCMP, max_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RARITH, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEMI_GEN_2(SHMEMI_G_RARITH, prod_reduce, __VA_ARGS__)

/* shmem_sync(team) is the C11 name of shmem_team_sync; with four
 * arguments it is still the deprecated active-set routine. */
#define SHMEMI_SYNC_SEL_(a, b, c, d, f, ...) f
#define shmem_sync(...)                                                        \
    SHMEMI_SYNC_SEL_(__VA_ARGS__, shmem_sync, shmemi_generic_no_match,       \
                     shmemi_generic_no_match, shmem_team_sync, 0)(__VA_ARGS__)

/* Point-to-point synchronization */
#define shmem_wait_until(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SHMEMI_GEN_1(SHMEMI_G_P2P, wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test, __VA_ARGS__)
#define shmem_test_all(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test_all, __VA_ARGS__)
#define shmem_test_any(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test_any, __VA_ARGS__)
#define shmem_test_some(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) SHMEMI_GEN_1(SHMEMI_G_P2P, test_some_vector, __VA_ARGS__)
#define shmem_wait(...) SHMEMI_GEN_1(SHMEMI_G_OLD_WAIT, wait, __VA_ARGS__)

#endif /* C11 */

#endif /* SHMEM_GENERIC_H */

/*
 * The pami element type of each C type of the collectives' lists (the
 * core's X-macro lists in shmem.h, X(TYPE, NAME)). A complex type maps
 * to its real part's type: its sum is the sum of twice as many reals.
 */
#ifndef SHMEM_COLL_TYPES_H
#define SHMEM_COLL_TYPES_H

#include <limits.h>

#define SHMEMI_PTYPE_SIGNED(T)                                                \
    (sizeof(T) == 1   ? PAMI_TYPE_INT8                                        \
     : sizeof(T) == 2 ? PAMI_TYPE_INT16                                       \
     : sizeof(T) == 4 ? PAMI_TYPE_INT32                                       \
                      : PAMI_TYPE_INT64)
#define SHMEMI_PTYPE_UNSIGNED(T)                                              \
    (sizeof(T) == 1   ? PAMI_TYPE_UINT8                                       \
     : sizeof(T) == 2 ? PAMI_TYPE_UINT16                                      \
     : sizeof(T) == 4 ? PAMI_TYPE_UINT32                                      \
                      : PAMI_TYPE_UINT64)

/* The fixed-width and size types are typedefs of these, so every type of
 * the lists is one of them. */
#define SHMEMI_PTYPE(T)                                                       \
    _Generic((T)0,                                                            \
        char: (CHAR_MIN < 0 ? PAMI_TYPE_INT8 : PAMI_TYPE_UINT8),              \
        signed char: PAMI_TYPE_INT8,                                          \
        unsigned char: PAMI_TYPE_UINT8,                                       \
        short: SHMEMI_PTYPE_SIGNED(short),                                    \
        unsigned short: SHMEMI_PTYPE_UNSIGNED(unsigned short),                \
        int: SHMEMI_PTYPE_SIGNED(int),                                        \
        unsigned int: SHMEMI_PTYPE_UNSIGNED(unsigned int),                    \
        long: SHMEMI_PTYPE_SIGNED(long),                                      \
        unsigned long: SHMEMI_PTYPE_UNSIGNED(unsigned long),                  \
        long long: SHMEMI_PTYPE_SIGNED(long long),                            \
        unsigned long long: SHMEMI_PTYPE_UNSIGNED(unsigned long long),        \
        float: PAMI_TYPE_FLOAT,                                               \
        double: PAMI_TYPE_DOUBLE,                                             \
        long double: PAMI_TYPE_LONG_DOUBLE,                                   \
        float _Complex: PAMI_TYPE_FLOAT,                                      \
        double _Complex: PAMI_TYPE_DOUBLE)

/* Elements of the pami type per element of T: 2 for the complex types. */
#define SHMEMI_PTYPE_PER(T)                                                   \
    _Generic((T)0, float _Complex: 2, double _Complex: 2, default: 1)

#endif /* SHMEM_COLL_TYPES_H */

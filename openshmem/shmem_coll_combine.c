/*
 * The element-wise combine of the reductions that run through the node's
 * mappings (shmem_coll_reduce.c): out[i] = a[i] op b[i] for every pami
 * element type and built-in op the OpenSHMEM reductions use, with the
 * same results as pami's allreduce (signed sums and products wrap, min
 * and max keep the first operand on a tie or an unordered compare).
 */
#include <stdint.h>
#include <string.h>

#include "shmem_coll_reduce.h"

/* Elements go through memcpy: the program's buffers need not be aligned
 * for the type, and the compiler still vectorizes the loop. out may be a
 * (in place), never a partial overlap. */
#define COMBINE_LOOP(T, EXPR)                                                 \
    do {                                                                      \
        unsigned char *o_ = out;                                              \
        const unsigned char *a_ = a, *b_ = b;                                 \
        for (size_t k_ = 0; k_ < count; k_++) {                               \
            T x, y;                                                           \
            memcpy(&x, a_ + k_ * sizeof(T), sizeof(T));                       \
            memcpy(&y, b_ + k_ * sizeof(T), sizeof(T));                       \
            x = (T)(EXPR);                                                    \
            memcpy(o_ + k_ * sizeof(T), &x, sizeof(T));                       \
        }                                                                     \
    } while (0)

#define COMBINE_ORDERED(T, SUM, PROD)                                         \
    case PAMI_OP_SUM:  COMBINE_LOOP(T, SUM); return 0;                        \
    case PAMI_OP_PROD: COMBINE_LOOP(T, PROD); return 0;                       \
    case PAMI_OP_MIN:  COMBINE_LOOP(T, y < x ? y : x); return 0;              \
    case PAMI_OP_MAX:  COMBINE_LOOP(T, y > x ? y : x); return 0;

#define COMBINE_REAL(T)                                                       \
    switch (op) {                                                             \
    COMBINE_ORDERED(T, x + y, x * y)                                          \
    default: return -1;                                                       \
    }

/* Signed sums and products are computed unsigned, so they wrap instead of
 * being undefined. */
#define COMBINE_INT(T, U)                                                     \
    switch (op) {                                                             \
    COMBINE_ORDERED(T, (U)x + (U)y, (U)x * (U)y)                              \
    case PAMI_OP_BAND: COMBINE_LOOP(T, x & y); return 0;                      \
    case PAMI_OP_BOR:  COMBINE_LOOP(T, x | y); return 0;                      \
    case PAMI_OP_BXOR: COMBINE_LOOP(T, x ^ y); return 0;                      \
    default: return -1;                                                       \
    }

int shmemi_combine(pami_type_t type, pami_op_t op, void *out, const void *a,
                   const void *b, size_t count)
{
    switch (type) {
    case PAMI_TYPE_INT8:   COMBINE_INT(int8_t, uint8_t)
    case PAMI_TYPE_INT16:  COMBINE_INT(int16_t, uint16_t)
    case PAMI_TYPE_INT32:  COMBINE_INT(int32_t, uint32_t)
    case PAMI_TYPE_INT64:  COMBINE_INT(int64_t, uint64_t)
    case PAMI_TYPE_UINT8:  COMBINE_INT(uint8_t, unsigned)
    case PAMI_TYPE_UINT16: COMBINE_INT(uint16_t, unsigned)
    case PAMI_TYPE_UINT32: COMBINE_INT(uint32_t, uint32_t)
    case PAMI_TYPE_UINT64: COMBINE_INT(uint64_t, uint64_t)
    case PAMI_TYPE_FLOAT:       COMBINE_REAL(float)
    case PAMI_TYPE_DOUBLE:      COMBINE_REAL(double)
    case PAMI_TYPE_LONG_DOUBLE: COMBINE_REAL(long double)
    default: return -1;
    }
}

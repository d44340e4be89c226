/*
 * Element types and the built-in reduction operations on them.
 */
#include <string.h>

#include "coll.h"

static const size_t type_size[PAMI_TYPE_COUNT] = {
    [PAMI_TYPE_BYTE] = 1,
    [PAMI_TYPE_INT8] = 1,   [PAMI_TYPE_INT16] = 2,
    [PAMI_TYPE_INT32] = 4,  [PAMI_TYPE_INT64] = 8,
    [PAMI_TYPE_UINT8] = 1,  [PAMI_TYPE_UINT16] = 2,
    [PAMI_TYPE_UINT32] = 4, [PAMI_TYPE_UINT64] = 8,
    [PAMI_TYPE_FLOAT] = sizeof(float), [PAMI_TYPE_DOUBLE] = sizeof(double),
    [PAMI_TYPE_LONG_DOUBLE] = sizeof(long double),
};

size_t pami_type_size(pami_type_t t)
{
    return (unsigned)t < PAMI_TYPE_COUNT ? type_size[t] : 0;
}

bool coll_type_valid(pami_type_t t)
{
    return (unsigned)t < PAMI_TYPE_COUNT;
}

static bool is_float(pami_type_t t)
{
    return t == PAMI_TYPE_FLOAT || t == PAMI_TYPE_DOUBLE ||
           t == PAMI_TYPE_LONG_DOUBLE;
}

bool coll_op_valid(pami_type_t t, pami_op_t op)
{
    if (!coll_type_valid(t) || (unsigned)op >= PAMI_OP_COUNT)
        return false;
    if (op == PAMI_OP_USER)
        return true;
    if (t == PAMI_TYPE_BYTE)
        return false;
    if (is_float(t) && (op == PAMI_OP_BAND || op == PAMI_OP_BOR ||
                        op == PAMI_OP_BXOR))
        return false;
    return true;
}

/* Elements are read with memcpy: buffers of the program need not be
 * aligned for the type. */
#define COLL_LOOP(T, EXPR)                                                  \
    do {                                                                    \
        unsigned char *o_ = inout;                                          \
        const unsigned char *i_ = in;                                       \
        for (size_t k_ = 0; k_ < count; k_++) {                             \
            T a, b;                                                         \
            memcpy(&a, o_ + k_ * sizeof(T), sizeof(T));                     \
            memcpy(&b, i_ + k_ * sizeof(T), sizeof(T));                     \
            a = (T)(EXPR);                                                  \
            memcpy(o_ + k_ * sizeof(T), &a, sizeof(T));                     \
        }                                                                   \
    } while (0)

#define COLL_ARITH(T)                                                       \
    switch (op) {                                                           \
    case PAMI_OP_SUM:  COLL_LOOP(T, a + b); break;                          \
    case PAMI_OP_PROD: COLL_LOOP(T, a * b); break;                          \
    case PAMI_OP_MIN:  COLL_LOOP(T, b < a ? b : a); break;                  \
    case PAMI_OP_MAX:  COLL_LOOP(T, b > a ? b : a); break;                  \
    case PAMI_OP_LAND: COLL_LOOP(T, (a != 0) && (b != 0)); break;           \
    case PAMI_OP_LOR:  COLL_LOOP(T, (a != 0) || (b != 0)); break;           \
    case PAMI_OP_LXOR: COLL_LOOP(T, (a != 0) != (b != 0)); break;           \
    default: break;                                                         \
    }

#define COLL_INT(T)                                                         \
    switch (op) {                                                           \
    case PAMI_OP_BAND: COLL_LOOP(T, a & b); break;                          \
    case PAMI_OP_BOR:  COLL_LOOP(T, a | b); break;                          \
    case PAMI_OP_BXOR: COLL_LOOP(T, a ^ b); break;                          \
    default: COLL_ARITH(T) break;                                           \
    }

/* Signed sums and products wrap like the unsigned ones (two's
 * complement) instead of being undefined: computed unsigned. */
#define COLL_SIGNED(T, U)                                                   \
    switch (op) {                                                           \
    case PAMI_OP_SUM:  COLL_LOOP(T, (T)((U)a + (U)b)); break;               \
    case PAMI_OP_PROD: COLL_LOOP(T, (T)((U)a * (U)b)); break;               \
    default: COLL_INT(T) break;                                             \
    }

/* Sums of the common types 64 bytes at a time in vector registers (GCC
 * and clang vector extensions, SSE2 at least): the element loop above is
 * not vectorised at -O2 (its buffers may overlap), and the large
 * reductions of the shared-memory collectives spend most of their time
 * here (callgrind, allreduce_shm_cma of 1 MiB of doubles at 2 tasks: 7.9
 * million instructions in the loop, 3.3 in this one, for 21 calls). Each
 * element is still inout[k] + in[k], so the result is the same bits;
 * integers add as unsigned (two's complement wraps as COLL_SIGNED does).
 * Only for buffers that do not overlap or are the same (a block read
 * before it is written would differ otherwise). */
#define COLL_VSUM(T)                                                        \
    do {                                                                    \
        typedef T vec_t __attribute__((vector_size(16), aligned(1)));       \
        unsigned char *o_ = inout;                                          \
        const unsigned char *i_ = in;                                       \
        size_t k_ = 0, per_ = 16 / sizeof(T);                               \
        for (; k_ + 4 * per_ <= count; k_ += 4 * per_) {                    \
            vec_t a_[4], b_[4];                                             \
            memcpy(a_, o_ + k_ * sizeof(T), sizeof(a_));                    \
            memcpy(b_, i_ + k_ * sizeof(T), sizeof(b_));                    \
            a_[0] += b_[0];                                                 \
            a_[1] += b_[1];                                                 \
            a_[2] += b_[2];                                                 \
            a_[3] += b_[3];                                                 \
            memcpy(o_ + k_ * sizeof(T), a_, sizeof(a_));                    \
        }                                                                   \
        for (; k_ < count; k_++) {                                          \
            T a, b;                                                         \
            memcpy(&a, o_ + k_ * sizeof(T), sizeof(T));                     \
            memcpy(&b, i_ + k_ * sizeof(T), sizeof(T));                     \
            a = (T)(a + b);                                                 \
            memcpy(o_ + k_ * sizeof(T), &a, sizeof(T));                     \
        }                                                                   \
    } while (0)

static bool vsum(pami_type_t t, void *inout, const void *in, size_t count)
{
    size_t es = pami_type_size(t);
    const unsigned char *o = inout, *i = in;
    if (o != i && o < i + count * es && i < o + count * es)
        return false; /* partly overlapping */
    switch (t) {
    case PAMI_TYPE_INT32: case PAMI_TYPE_UINT32:
        COLL_VSUM(uint32_t); return true;
    case PAMI_TYPE_INT64: case PAMI_TYPE_UINT64:
        COLL_VSUM(uint64_t); return true;
    case PAMI_TYPE_FLOAT:  COLL_VSUM(float); return true;
    case PAMI_TYPE_DOUBLE: COLL_VSUM(double); return true;
    default: return false;
    }
}

void coll_reduce_builtin(pami_type_t t, pami_op_t op, void *inout,
                         const void *in, size_t count)
{
    if (op == PAMI_OP_SUM && count >= 8 && vsum(t, inout, in, count))
        return;
    switch (t) {
    case PAMI_TYPE_INT8:   COLL_SIGNED(int8_t, uint8_t); break;
    case PAMI_TYPE_INT16:  COLL_SIGNED(int16_t, uint16_t); break;
    case PAMI_TYPE_INT32:  COLL_SIGNED(int32_t, uint32_t); break;
    case PAMI_TYPE_INT64:  COLL_SIGNED(int64_t, uint64_t); break;
    case PAMI_TYPE_UINT8:  COLL_SIGNED(uint8_t, unsigned); break;
    case PAMI_TYPE_UINT16: COLL_SIGNED(uint16_t, unsigned); break;
    case PAMI_TYPE_UINT32: COLL_INT(uint32_t); break;
    case PAMI_TYPE_UINT64: COLL_INT(uint64_t); break;
    case PAMI_TYPE_FLOAT:       COLL_ARITH(float); break;
    case PAMI_TYPE_DOUBLE:      COLL_ARITH(double); break;
    case PAMI_TYPE_LONG_DOUBLE: COLL_ARITH(long double); break;
    default: break;
    }
}

/*
 * Helpers of the collectives tests: geometries to run on, data patterns,
 * and the serial reference of every reduction.
 */
#ifndef COLL_UTIL_H
#define COLL_UTIL_H

#include "mp_util.h"

#include <math.h>
#include <float.h>
#include <pami_collectives.h>
#include <pami_protocol.h>

typedef struct {
    const char     *name;
    pami_geometry_t g;
    size_t          n, rank;
    const pami_task_t *tasks;
} ct_geom_t;

static inline void ct_query(ct_geom_t *cg)
{
    pami_geometry_attr_t a = {.field_mask = PAMI_GEOMETRY_ATTR_SIZE |
                                            PAMI_GEOMETRY_ATTR_RANK |
                                            PAMI_GEOMETRY_ATTR_TASKS};
    MP_CHECK(pami_geometry_query(cg->g, &a));
    cg->n     = a.size;
    cg->rank  = a.rank;
    cg->tasks = a.tasks;
}

/* The world geometry of job's first context, queried. */
static inline void ct_world(mp_job_t *job, ct_geom_t *world)
{
    MP_CHECK(pami_geometry_world(job->ctx[0], &world->g));
    ct_query(world);
}

/* Creates a geometry from tasks and waits until it is ready. Returns
 * false (geometry NULL) when this task is not in the list. */
static inline bool ct_create(mp_job_t *job, ct_geom_t *cg, const char *name,
                             uint32_t id, const pami_task_t *tasks, size_t n,
                             const pami_geometry_params_t *params)
{
    pami_geometry_t world;
    MP_CHECK(pami_geometry_world(job->ctx[0], &world));
    cg->name = name;
    MP_CHECK(pami_geometry_create_tasklist(job->ctx[0], world, id, tasks, n,
                                           params, &cg->g, NULL, NULL));
    if (cg->g == NULL)
        return false;
    MP_CHECK(pami_geometry_wait_ready(job->ctx[0], cg->g));
    ct_query(cg);
    return true;
}

/* Byte k of the data block named key. */
/* Counter name of protocol proto on ctx; the test fails without it. */
static inline uint64_t ct_stat(pami_context_t ctx, const char *proto,
                               const char *name)
{
    pami_protocol_stat_t st[64];
    size_t ns;
    MP_CHECK(pami_protocol_stats(ctx, proto, st, 64, &ns));
    for (size_t i = 0; i < ns && i < 64; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].value;
    mp_fail("no counter %s of %s", name, proto);
}

static inline pami_algorithm_t ct_algo(const char *name)
{
    pami_algorithm_t id;
    MP_CHECK(pami_algorithm_by_name(name, &id));
    return id;
}

/* A call on g: the algorithm named, or AUTO for NULL; op sum. */
static inline pami_xfer_t ct_xfer(pami_geometry_t g, pami_xfer_type_t kind,
                                  const char *name, void *sbuf, void *rbuf,
                                  size_t count, pami_type_t t, size_t root)
{
    return (pami_xfer_t){
        .field_mask = name != NULL ? PAMI_XFER_FIELD_ALGORITHM : 0,
        .kind = kind, .geometry = g,
        .algorithm = name != NULL ? ct_algo(name) : 0, .root = root,
        .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = t,
        .op = PAMI_OP_SUM};
}

/* Non-blocking calls that ended (ct_on_done as done_fn, the call's
 * number as cookie; a failure ends the test). */
static unsigned ct_done_count __attribute__((unused));

static inline void ct_on_done(pami_context_t ctx, void *cookie,
                              pami_result_t rc)
{
    (void)ctx;
    if (rc != PAMI_SUCCESS)
        mp_fail("non-blocking call %zu: %s", (size_t)(uintptr_t)cookie,
                pami_error_text(rc));
    ct_done_count++;
}

/* Waits until want calls ended (MP_WAIT_S at most). */
static inline void ct_wait_done(pami_context_t ctx, unsigned want)
{
    double t0 = mp_now();
    while (ct_done_count < want) {
        pami_context_wait(ctx, 100);
        MP_EXPECT(mp_now() - t0 < MP_WAIT_S, "%u of %u non-blocking done",
                  ct_done_count, want);
    }
}

static inline uint8_t ct_pat(size_t key, size_t k)
{
    return (uint8_t)(key * 151u + k * 7u + (k >> 8) * 3u + 1u);
}

static inline void ct_fill(void *buf, size_t key, size_t bytes)
{
    uint8_t *p = buf;
    for (size_t k = 0; k < bytes; k++)
        p[k] = ct_pat(key, k);
}

/* First wrong byte, or -1. */
static inline long ct_check(const void *buf, size_t key, size_t bytes)
{
    const uint8_t *p = buf;
    for (size_t k = 0; k < bytes; k++)
        if (p[k] != ct_pat(key, k))
            return (long)k;
    return -1;
}

/* ---- reductions ---- */

enum { CT_BUILTIN = 0, CT_USER_COMM = 1, CT_USER_MATRIX = 2 };

static inline long long ct_ival(size_t rank, size_t i)
{
    return (long long)((rank * 7 + i * 3 + 2) % 23) - 5;
}

/* Element i of rank for the non-commutative user op: the affine map
 * x -> a x + b (mod 2^16) with a in the high half, b in the low one. */
static inline uint32_t ct_mval(size_t rank, size_t i)
{
    uint32_t a = (uint32_t)((rank * 5 + i * 3 + 1) % 7 + 1);
    uint32_t b = (uint32_t)((rank * 13 + i * 5 + 3) % 251);
    return a << 16 | b;
}

static inline bool ct_is_float(pami_type_t t)
{
    return t == PAMI_TYPE_FLOAT || t == PAMI_TYPE_DOUBLE ||
           t == PAMI_TYPE_LONG_DOUBLE;
}

static inline bool ct_is_unsigned(pami_type_t t)
{
    return t >= PAMI_TYPE_UINT8 && t <= PAMI_TYPE_UINT64;
}

/* Input element i of rank, stored into dst (one element of type t). */
static inline void ct_put(pami_type_t t, int user, void *dst, size_t rank,
                          size_t i)
{
    long long v = ct_ival(rank, i);
    if (user == CT_USER_MATRIX) {
        uint32_t m = ct_mval(rank, i);
        memcpy(dst, &m, 4);
        return;
    }
    if (ct_is_unsigned(t))
        v += 5;
    switch (t) {
#define CT_PUT(E, T) case E: { T x = (T)v; memcpy(dst, &x, sizeof(x)); } break;
    CT_PUT(PAMI_TYPE_INT8, int8_t) CT_PUT(PAMI_TYPE_INT16, int16_t)
    CT_PUT(PAMI_TYPE_INT32, int32_t) CT_PUT(PAMI_TYPE_INT64, int64_t)
    CT_PUT(PAMI_TYPE_UINT8, uint8_t) CT_PUT(PAMI_TYPE_UINT16, uint16_t)
    CT_PUT(PAMI_TYPE_UINT32, uint32_t) CT_PUT(PAMI_TYPE_UINT64, uint64_t)
#undef CT_PUT
    case PAMI_TYPE_FLOAT: { float x = (float)v * 0.375f; memcpy(dst, &x, sizeof(x)); } break;
    case PAMI_TYPE_DOUBLE: { double x = (double)v * 0.375; memcpy(dst, &x, sizeof(x)); } break;
    case PAMI_TYPE_LONG_DOUBLE: { long double x = (long double)v * 0.375L; memcpy(dst, &x, sizeof(x)); } break;
    default: break;
    }
}

/* The user ops: wrapping int32 sum (commutative), and composition of
 * affine maps packed in uint32 (associative, not commutative). */
static inline void ct_user_sum(void *inout, const void *in, size_t count,
                               void *cookie)
{
    (void)cookie;
    for (size_t i = 0; i < count; i++) {
        uint32_t a, b;
        memcpy(&a, (char *)inout + 4 * i, 4);
        memcpy(&b, (const char *)in + 4 * i, 4);
        a += b;
        memcpy((char *)inout + 4 * i, &a, 4);
    }
}

/* f then g, as one affine map: x -> ga (fa x + fb) + gb. Associative,
 * not commutative. */
static inline uint32_t ct_affine_then(uint32_t f, uint32_t g)
{
    uint32_t fa = f >> 16, fb = f & 0xffff, ga = g >> 16, gb = g & 0xffff;
    return ((fa * ga) & 0xffff) << 16 | ((ga * fb + gb) & 0xffff);
}

/* Element by element, inout = in then inout: in holds lower ranks. */
static inline void ct_user_matrix(void *inout, const void *in, size_t count,
                                  void *cookie)
{
    (void)cookie;
    for (size_t i = 0; i < count; i++) {
        uint32_t a, b;
        memcpy(&a, (const char *)in + 4 * i, 4);
        memcpy(&b, (char *)inout + 4 * i, 4);
        b = ct_affine_then(a, b);
        memcpy((char *)inout + 4 * i, &b, 4);
    }
}

/* Reference fold over ranks lo..hi (in order) of element i; for floats
 * also the sum of magnitudes that bounds the rounding. */
#define CT_FOLD(T, U)                                                       \
    {                                                                       \
        T acc = 0, x;                                                       \
        for (size_t q = lo; q <= hi; q++) {                                 \
            ct_put(t, CT_BUILTIN, &x, q, i);                                \
            if (q == lo) { acc = x; continue; }                             \
            switch (op) {                                                   \
            case PAMI_OP_SUM: acc = (T)((U)acc + (U)x); break;              \
            case PAMI_OP_PROD: acc = (T)((U)acc * (U)x); break;             \
            case PAMI_OP_MIN: acc = x < acc ? x : acc; break;               \
            case PAMI_OP_MAX: acc = x > acc ? x : acc; break;               \
            case PAMI_OP_LAND: acc = (T)((acc != 0) && (x != 0)); break;    \
            case PAMI_OP_LOR: acc = (T)((acc != 0) || (x != 0)); break;     \
            case PAMI_OP_LXOR: acc = (T)((acc != 0) != (x != 0)); break;    \
            case PAMI_OP_BAND: acc = (T)((U)acc & (U)x); break;             \
            case PAMI_OP_BOR: acc = (T)((U)acc | (U)x); break;              \
            case PAMI_OP_BXOR: acc = (T)((U)acc ^ (U)x); break;             \
            default: break;                                                 \
            }                                                               \
        }                                                                   \
        memcpy(out, &acc, sizeof(acc));                                     \
    }                                                                       \
    break;

#define CT_FOLDF(T)                                                         \
    {                                                                       \
        T acc = 0, x, mag = 0;                                              \
        for (size_t q = lo; q <= hi; q++) {                                 \
            ct_put(t, CT_BUILTIN, &x, q, i);                                \
            T ax = x < 0 ? -x : x;                                          \
            if (q == lo) { acc = x; mag = ax; continue; }                   \
            switch (op) {                                                   \
            case PAMI_OP_SUM: acc += x; mag += ax; break;                   \
            case PAMI_OP_PROD: acc *= x; mag *= ax; break;                  \
            case PAMI_OP_MIN: acc = x < acc ? x : acc; break;               \
            case PAMI_OP_MAX: acc = x > acc ? x : acc; break;               \
            case PAMI_OP_LAND: acc = (acc != 0) && (x != 0); break;         \
            case PAMI_OP_LOR: acc = (acc != 0) || (x != 0); break;          \
            case PAMI_OP_LXOR: acc = (acc != 0) != (x != 0); break;         \
            default: break;                                                 \
            }                                                               \
        }                                                                   \
        memcpy(out, &acc, sizeof(acc));                                     \
        *magnitude = (long double)mag;                                      \
    }                                                                       \
    break;

static inline void ct_fold(pami_type_t t, pami_op_t op, int user, size_t lo,
                           size_t hi, size_t i, void *out,
                           long double *magnitude)
{
    *magnitude = 0;
    if (user == CT_USER_COMM)
        op = PAMI_OP_SUM;
    if (user == CT_USER_MATRIX) {
        uint32_t acc = ct_mval(lo, i);
        for (size_t q = lo + 1; q <= hi; q++)
            acc = ct_affine_then(acc, ct_mval(q, i));
        memcpy(out, &acc, 4);
        return;
    }
    switch (t) {
    case PAMI_TYPE_INT8: CT_FOLD(int8_t, uint8_t)
    case PAMI_TYPE_INT16: CT_FOLD(int16_t, uint16_t)
    case PAMI_TYPE_INT32: CT_FOLD(int32_t, uint32_t)
    case PAMI_TYPE_INT64: CT_FOLD(int64_t, uint64_t)
    case PAMI_TYPE_UINT8: CT_FOLD(uint8_t, unsigned)
    case PAMI_TYPE_UINT16: CT_FOLD(uint16_t, unsigned)
    case PAMI_TYPE_UINT32: CT_FOLD(uint32_t, uint32_t)
    case PAMI_TYPE_UINT64: CT_FOLD(uint64_t, uint64_t)
    case PAMI_TYPE_FLOAT: CT_FOLDF(float)
    case PAMI_TYPE_DOUBLE: CT_FOLDF(double)
    case PAMI_TYPE_LONG_DOUBLE: CT_FOLDF(long double)
    default: break;
    }
}

/* Element got equals the reference within the rounding that n - 1
 * operations in any order may add. */
static inline bool ct_same(pami_type_t t, const void *got, const void *want,
                           long double magnitude, size_t n)
{
    size_t es = pami_type_size(t);
    if (!ct_is_float(t))
        return memcmp(got, want, es) == 0;
    long double g, w, eps;
    if (t == PAMI_TYPE_FLOAT) {
        float a, b;
        memcpy(&a, got, 4); memcpy(&b, want, 4);
        g = a; w = b; eps = FLT_EPSILON;
    } else if (t == PAMI_TYPE_DOUBLE) {
        double a, b;
        memcpy(&a, got, 8); memcpy(&b, want, 8);
        g = a; w = b; eps = DBL_EPSILON;
    } else {
        long double a, b;
        memcpy(&a, got, sizeof(a)); memcpy(&b, want, sizeof(b));
        g = a; w = b; eps = LDBL_EPSILON;
    }
    long double tol = 2.0L * (long double)n * eps * magnitude;
    long double d = g - w;
    return (d < 0 ? -d : d) <= tol;
}

/* Every type, every op, both user ops: the reductions the tests sweep. */
typedef struct {
    pami_type_t t;
    pami_op_t   op;
    int         user;
} red_t;

static const red_t reds[] __attribute__((unused)) = {
    {PAMI_TYPE_INT32, PAMI_OP_SUM, 0},   {PAMI_TYPE_INT32, PAMI_OP_PROD, 0},
    {PAMI_TYPE_INT32, PAMI_OP_MIN, 0},   {PAMI_TYPE_INT32, PAMI_OP_MAX, 0},
    {PAMI_TYPE_INT32, PAMI_OP_BAND, 0},  {PAMI_TYPE_INT32, PAMI_OP_BOR, 0},
    {PAMI_TYPE_INT32, PAMI_OP_BXOR, 0},  {PAMI_TYPE_INT32, PAMI_OP_LAND, 0},
    {PAMI_TYPE_INT32, PAMI_OP_LOR, 0},   {PAMI_TYPE_INT32, PAMI_OP_LXOR, 0},
    {PAMI_TYPE_INT8, PAMI_OP_SUM, 0},    {PAMI_TYPE_INT16, PAMI_OP_MIN, 0},
    {PAMI_TYPE_INT64, PAMI_OP_PROD, 0},  {PAMI_TYPE_UINT8, PAMI_OP_MAX, 0},
    {PAMI_TYPE_UINT16, PAMI_OP_PROD, 0}, {PAMI_TYPE_UINT32, PAMI_OP_BXOR, 0},
    {PAMI_TYPE_UINT64, PAMI_OP_SUM, 0},  {PAMI_TYPE_FLOAT, PAMI_OP_SUM, 0},
    {PAMI_TYPE_DOUBLE, PAMI_OP_SUM, 0},  {PAMI_TYPE_DOUBLE, PAMI_OP_PROD, 0},
    {PAMI_TYPE_DOUBLE, PAMI_OP_MIN, 0},  {PAMI_TYPE_LONG_DOUBLE, PAMI_OP_SUM, 0},
    {PAMI_TYPE_LONG_DOUBLE, PAMI_OP_MAX, 0},
    {PAMI_TYPE_INT32, PAMI_OP_USER, CT_USER_COMM},
    {PAMI_TYPE_UINT32, PAMI_OP_USER, CT_USER_MATRIX},
};

#endif

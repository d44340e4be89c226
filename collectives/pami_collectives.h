/*
 * pami collectives: geometries (groups of tasks), ConnID-tagged
 * collective operations, and the registry of algorithms that run them.
 *
 * A geometry lives on one context: task t's context k talks only to the
 * other members' contexts k. Every collective is non-blocking and runs as
 * a schedule advanced by pami_context_advance/wait of that context; its
 * done_fn runs from progress exactly once. Blocking helpers at the end
 * wait with pami_context_wait. See docs/collectives.md.
 */
#ifndef PAMI_COLLECTIVES_H
#define PAMI_COLLECTIVES_H

#include "pami.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pami_geometry *pami_geometry_t;

/* ConnIDs per geometry. Must be the same on every task (it is part of the
 * wire format), so it is a constant, not a setting. */
#define PAMI_CONNID_BUFFER 256

/* ------------------------------------------------------------------------ */
/* Geometries                                                                */
/* ------------------------------------------------------------------------ */

/* All tasks of the job, in task order, on context. Made when the context
 * is created; id 0; never destroyed by the program. */
PAMI_EXPORT
pami_result_t pami_geometry_world(pami_context_t context,
                                  pami_geometry_t *world);

typedef struct {
    pami_task_t lo, hi; /* inclusive */
} pami_geometry_range_t;

enum {
    /* Collectives this task may have in flight on the geometry before a
     * new call waits (default PAMI_CONNID_THRESHOLD). */
    PAMI_GEOMETRY_PARAM_CONNID_THRESHOLD = 1u << 0
};

typedef struct {
    uint64_t field_mask;
    unsigned connid_threshold; /* 1 .. PAMI_CONNID_BUFFER */
} pami_geometry_params_t;

/* A sub-geometry of parent whose rank i is tasks[i]. Collective over the
 * members only, who all pass the same id (non-zero, unused by any live
 * geometry of this context) and the same list; non-members do not take
 * part (if one calls, it gets *geometry = NULL and fn runs with
 * PAMI_SUCCESS from its next progress). Returns at once: the geometry may
 * be used once fn ran with PAMI_SUCCESS; PAMI_INVAL in fn means the
 * members passed different lists. Every task of the list must belong to
 * parent. An id may be used again once the geometry that had it is
 * destroyed. params may be NULL. */
PAMI_EXPORT
pami_result_t pami_geometry_create_tasklist(
    pami_context_t context, pami_geometry_t parent, uint32_t id,
    const pami_task_t *tasks, size_t ntasks,
    const pami_geometry_params_t *params, pami_geometry_t *geometry,
    pami_event_fn fn, void *cookie);

/* The same with the members given as ranges of tasks, in order. */
PAMI_EXPORT
pami_result_t pami_geometry_create_taskrange(
    pami_context_t context, pami_geometry_t parent, uint32_t id,
    const pami_geometry_range_t *ranges, size_t nranges,
    const pami_geometry_params_t *params, pami_geometry_t *geometry,
    pami_event_fn fn, void *cookie);

/* Local. PAMI_EAGAIN (nothing done) while collectives of this task, its
 * creation included, are still in flight on it or a caller waits for one
 * of its ConnIDs; PAMI_INVAL for the world geometry. Sets *geometry NULL. */
PAMI_EXPORT
pami_result_t pami_geometry_destroy(pami_geometry_t *geometry);

enum {
    PAMI_GEOMETRY_ATTR_ID        = 1u << 0,
    PAMI_GEOMETRY_ATTR_SIZE      = 1u << 1,
    PAMI_GEOMETRY_ATTR_RANK      = 1u << 2,
    PAMI_GEOMETRY_ATTR_TASKS     = 1u << 3,
    PAMI_GEOMETRY_ATTR_READY     = 1u << 4,
    PAMI_GEOMETRY_ATTR_CONNID    = 1u << 5  /* the connid_* fields */
};

typedef struct {
    uint64_t           field_mask;
    uint32_t           id;
    size_t             size;
    size_t             rank;       /* this task's rank in the geometry */
    const pami_task_t *tasks;      /* size entries; owned by the geometry */
    int                ready;      /* creation completed successfully */
    unsigned           connid_threshold;
    unsigned           connid_in_use;     /* ConnIDs locked right now */
    unsigned           connid_high_water; /* most ever locked at once */
    uint64_t           connid_waits;      /* calls that had to wait */
    uint64_t           collectives;       /* collectives started */
} pami_geometry_attr_t;

PAMI_EXPORT
pami_result_t pami_geometry_query(pami_geometry_t geometry,
                                  pami_geometry_attr_t *attr);

/* ------------------------------------------------------------------------ */
/* Data                                                                      */
/* ------------------------------------------------------------------------ */

typedef enum {
    PAMI_TYPE_BYTE = 0, /* no reduction */
    PAMI_TYPE_INT8, PAMI_TYPE_INT16, PAMI_TYPE_INT32, PAMI_TYPE_INT64,
    PAMI_TYPE_UINT8, PAMI_TYPE_UINT16, PAMI_TYPE_UINT32, PAMI_TYPE_UINT64,
    PAMI_TYPE_FLOAT, PAMI_TYPE_DOUBLE, PAMI_TYPE_LONG_DOUBLE,
    PAMI_TYPE_COUNT
} pami_type_t;

typedef enum {
    PAMI_OP_SUM = 0, PAMI_OP_PROD, PAMI_OP_MIN, PAMI_OP_MAX,
    PAMI_OP_BAND, PAMI_OP_BOR, PAMI_OP_BXOR, /* integer types only */
    PAMI_OP_LAND, PAMI_OP_LOR, PAMI_OP_LXOR,
    PAMI_OP_USER, /* xfer.user_fn */
    PAMI_OP_COUNT
} pami_op_t;

/* User reduction: inout[i] = in[i] op inout[i] for count elements of the
 * call's type, where in holds the contribution of lower ranks (as
 * MPI_User_function). Must be associative; when it is not commutative
 * (user_commutative == 0) only algorithms that keep rank order are used.
 * Runs inside progress: must not call pami. */
typedef void (*pami_data_function)(void *inout, const void *in, size_t count,
                                   void *cookie);

/* Size in bytes of one element (0 for an unknown type). */
PAMI_EXPORT
size_t pami_type_size(pami_type_t type);

/* ------------------------------------------------------------------------ */
/* Collectives                                                               */
/* ------------------------------------------------------------------------ */

typedef enum {
    PAMI_XFER_BARRIER = 0,
    PAMI_XFER_BROADCAST,      /* rbuf: count elements, root's sent to all */
    PAMI_XFER_REDUCE,         /* sbuf: count; rbuf at root: count */
    PAMI_XFER_ALLREDUCE,      /* sbuf, rbuf: count */
    PAMI_XFER_ALLGATHER,      /* sbuf: count; rbuf: size * count */
    PAMI_XFER_GATHER,         /* sbuf: count; rbuf at root: size * count */
    PAMI_XFER_SCATTER,        /* sbuf at root: size * count; rbuf: count */
    PAMI_XFER_ALLTOALL,       /* sbuf, rbuf: size * count */
    PAMI_XFER_REDUCE_SCATTER, /* sbuf: size * count; rbuf: count (block r) */
    PAMI_XFER_SCAN,           /* sbuf, rbuf: count; ranks 0..r reduced */
    PAMI_XFER_EXSCAN,         /* as scan over 0..r-1; rbuf of rank 0 untouched */
    PAMI_XFER_ALLGATHERV,     /* sbuf: rcounts[r]; rbuf: rcounts/rdispls */
    PAMI_XFER_GATHERV,        /* sbuf: count; root's rbuf: rcounts/rdispls */
    PAMI_XFER_SCATTERV,       /* root's sbuf: scounts/sdispls; rbuf: count */
    PAMI_XFER_ALLTOALLV,      /* scounts/sdispls, rcounts/rdispls */
    PAMI_XFER_COUNT
} pami_xfer_type_t;

/* Where MPI allows it: sbuf = PAMI_IN_PLACE (reduce and gather at the root
 * only, scatter: rbuf at the root) takes the input from rbuf. */
#define PAMI_IN_PLACE ((void *)(intptr_t)-1)

/* An algorithm, from pami_geometry_algorithms_query or
 * pami_algorithm_by_name. The same value on every task. */
typedef uint32_t pami_algorithm_t;
#define PAMI_ALGORITHM_AUTO ((pami_algorithm_t)0)

enum {
    PAMI_XFER_FIELD_ALGORITHM = 1u << 0, /* else PAMI_ALGORITHM_AUTO */
    PAMI_XFER_FIELD_USER_OP   = 1u << 1, /* user_fn, user_cookie, user_commutative */
    PAMI_XFER_FIELD_VCOUNTS   = 1u << 2  /* rcounts, rdispls, scounts, sdispls */
};

/* Counts and displacements are in elements of dtype. The struct is copied
 * at the call; the buffers must stay untouched until done_fn runs. Every
 * member must pass the same kind, algorithm, root, dtype, op and count
 * (a mismatch that a message shows ends the collective on all members
 * with PAMI_INVAL). */
typedef struct pami_xfer {
    uint64_t          field_mask;
    pami_xfer_type_t  kind;
    pami_geometry_t   geometry;
    pami_algorithm_t  algorithm;
    pami_event_fn     done_fn;   /* may be NULL */
    void             *cookie;
    size_t            root;      /* a rank of the geometry */
    const void       *sbuf;
    void             *rbuf;
    size_t            count;
    pami_type_t       dtype;
    pami_op_t         op;
    pami_data_function user_fn;
    void             *user_cookie;
    int               user_commutative;
    const size_t     *rcounts, *rdispls; /* size entries each */
    const size_t     *scounts, *sdispls;
} pami_xfer_t;

enum {
    /* The reduction must be commutative (built-in ops are). */
    PAMI_ALGORITHM_REQ_COMMUTATIVE = 1u << 0,
    /* The geometry's size must be a power of two. */
    PAMI_ALGORITHM_REQ_POW2        = 1u << 1
};

typedef struct {
    const char *name;        /* "allreduce_ring" */
    size_t      range_lo;    /* bytes per rank it is meant for */
    size_t      range_hi;
    uint32_t    requirements; /* PAMI_ALGORITHM_REQ_* */
    /* PAMI_SUCCESS when the algorithm can run this call, else PAMI_INVAL. */
    pami_result_t (*check)(const pami_xfer_t *xfer);
} pami_algorithm_metadata_t;

/* Algorithms of kind on geometry: those that always work, and those whose
 * check function must accept the call. Algorithms whose requirements the
 * geometry itself fails are in neither list. */
PAMI_EXPORT
pami_result_t pami_geometry_algorithms_num(pami_geometry_t geometry,
                                           pami_xfer_type_t kind,
                                           size_t *num_always,
                                           size_t *num_check);

/* Writes up to num_always (num_check) entries of each list; any array may
 * be NULL when its count is 0. */
PAMI_EXPORT
pami_result_t pami_geometry_algorithms_query(
    pami_geometry_t geometry, pami_xfer_type_t kind,
    pami_algorithm_t *always, pami_algorithm_metadata_t *always_md,
    size_t num_always, pami_algorithm_t *check,
    pami_algorithm_metadata_t *check_md, size_t num_check);

/* PAMI_NOT_FOUND for a name no algorithm has. */
PAMI_EXPORT
pami_result_t pami_algorithm_by_name(const char *name,
                                     pami_algorithm_t *algorithm);

/* Why AUTO picks what it picks (pami_geometry_algorithm_selected). */
typedef enum {
    PAMI_SELECTED_NAMED = 0, /* the call names its algorithm */
    PAMI_SELECTED_FORCED,    /* PAMI_COLL_<COLLECTIVE>_ALGORITHM */
    PAMI_SELECTED_PROFILE,   /* a point of the profile, this very shape */
    PAMI_SELECTED_NEAREST,   /* a point of the profile's nearest shape */
    PAMI_SELECTED_BUILTIN,   /* the built-in rules (why says which case) */
    PAMI_SELECTED_ONLINE     /* PAMI_COLL_TUNE=online: tried or learnt here */
} pami_selected_reason_t;

typedef struct {
    pami_algorithm_t       algorithm; /* PAMI_ALGORITHM_AUTO: none */
    const char            *name;      /* its name; static */
    pami_selected_reason_t reason;
    const char            *why;       /* one phrase; static */
    /* PROFILE, NEAREST: the measured size the choice comes from, the
     * range of call sizes it serves, and the profile's shape. */
    size_t point_bytes, range_lo, range_hi;
    size_t shape_size, shape_nodes, shape_tasks_per_node;
    size_t bytes; /* the call's size as the selection sees it */
    /* What the built-in rules alone would pick for the call. */
    pami_algorithm_t builtin;
    const char      *builtin_name;
} pami_algorithm_selection_t;

/* What pami_collective would run for xfer (a call with AUTO, or naming
 * its algorithm) on its geometry, and why; local, no message. The
 * world geometry's profile table is confirmed by its first collective
 * (members compare tables then): before it, the answer assumes they
 * agree. PAMI_INVAL for a NULL argument or a geometry not ready. */
PAMI_EXPORT
pami_result_t pami_geometry_algorithm_selected_sized(
    const pami_xfer_t *xfer, pami_algorithm_selection_t *selection,
    size_t selection_size);
/* The program's sizeof goes along, so the struct can grow (docs/abi.md,
 * "Structs that grow"): an older, shorter one gets the fields it has. */
static inline pami_result_t
pami_geometry_algorithm_selected(const pami_xfer_t *xfer,
                                 pami_algorithm_selection_t *selection)
{
    return pami_geometry_algorithm_selected_sized(xfer, selection,
                                                  sizeof(*selection));
}

/* Starts a collective. Before it starts, the geometry's ConnIDs in use are
 * checked against its threshold: at or above it (or while the next ConnID
 * is still locked) the call advances the context with pami_context_wait
 * until one is released, so it may run other callbacks before it returns.
 * From a handler or callback of context it cannot wait and returns
 * PAMI_EAGAIN instead: call again later (e.g. from posted work).
 * PAMI_INVAL for bad arguments or an algorithm that cannot run the call. */
PAMI_EXPORT
pami_result_t pami_collective(pami_context_t context, const pami_xfer_t *xfer);

/* Blocking: starts the collective and waits with pami_context_wait until
 * it completes (xfer->done_fn runs too); returns its result.
 * PAMI_IN_HANDLER from a handler or callback. */
PAMI_EXPORT
pami_result_t pami_collective_wait(pami_context_t context,
                                   const pami_xfer_t *xfer);

/* Blocking shorthands over pami_collective_wait with AUTO. */
PAMI_EXPORT
pami_result_t pami_geometry_barrier(pami_context_t context,
                                    pami_geometry_t geometry);
PAMI_EXPORT
pami_result_t pami_geometry_broadcast(pami_context_t context,
                                      pami_geometry_t geometry, size_t root,
                                      void *buf, size_t count,
                                      pami_type_t dtype);
PAMI_EXPORT
pami_result_t pami_geometry_allreduce(pami_context_t context,
                                      pami_geometry_t geometry,
                                      const void *sbuf, void *rbuf,
                                      size_t count, pami_type_t dtype,
                                      pami_op_t op);

/* Waits until the geometry's creation completed; its result. */
PAMI_EXPORT
pami_result_t pami_geometry_wait_ready(pami_context_t context,
                                       pami_geometry_t geometry);

#ifdef __cplusplus
}
#endif

#endif /* PAMI_COLLECTIVES_H */

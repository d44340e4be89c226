/*
 * AUTO's built-in rules from measured profiles: the table that
 * gen_builtin_rules.py generates at build time from docs/profiles/
 * builtin-*.json (docs/tuning.md, "Built-in rules"), and its look-up.
 */
#ifndef PAMI_COLL_BUILTIN_H
#define PAMI_COLL_BUILTIN_H

#include <stddef.h>
#include <stdint.h>

#include "pami_collectives.h"

/* From lo bytes (measured at point): the algorithms, fastest first,
 * NULL-terminated. */
typedef struct {
    uint64_t           lo, point;
    const char *const *algos;
} coll_builtin_row_t;

/* The rows of one measured shape, collective and type class; calls up
 * to hi bytes use them. */
typedef struct {
    pami_xfer_type_t kind;
    uint32_t         tclass, size, nodes, ppn, first, n;
    uint64_t         hi;
} coll_builtin_span_t;

extern const coll_builtin_row_t  coll_builtin_rows[];
extern const coll_builtin_span_t coll_builtin_spans[];
extern const size_t              coll_builtin_nspans;

struct pami_geometry;

/* At geometry creation: each (collective, class)'s span for the
 * geometry's shape (only shapes on one node; the nearest size). */
void coll_builtin_geometry(struct pami_geometry *g);

/* The measured rules' algorithm for x (the fastest at the call's size
 * that the geometry can run), or 0 when they have none. */
pami_algorithm_t coll_builtin_pick(const pami_xfer_t *x,
                                   const struct pami_geometry *g,
                                   uint64_t bytes);

#endif

/*
 * Performance profiles of the collectives (docs/tuning.md): the data
 * model, a reader that validates a whole file held in a buffer (a pure
 * function: no I/O, no global state, so it can be fuzzed), and a writer.
 * Used by the library (selection), pami-tune, pami-info and the tests;
 * depends only on json-c and the enums of pami_collectives.h.
 */
#ifndef PAMI_COLL_PROFILE_H
#define PAMI_COLL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pami_collectives.h"

/* The newest format_version this code reads; it writes 1 when every
 * entry is of round 0 (readers of 1 load such files) and 2 otherwise
 * (the same key in several rounds, which a reader of 1 would reject as
 * duplicates). docs/tuning.md. */
#define COLL_PROFILE_FORMAT 2
#define COLL_PROFILE_MAX_ROUNDS 64     /* rounds of measurement in a file */
#define COLL_PROFILE_NAME_MAX 64       /* algorithm names, with the NUL */
#define COLL_PROFILE_MAX_BYTES ((uint64_t)1 << 40) /* bytes of one point */
#define COLL_PROFILE_MAX_TASKS ((uint64_t)1 << 24)
#define COLL_PROFILE_MAX_US 1e9        /* a measured time above is absurd */
#define COLL_PROFILE_MAX_ENTRIES 1000000

/* Not a reduction (op of non-reducing collectives). */
#define COLL_PROFILE_OP_NONE PAMI_OP_COUNT

enum { COLL_LAYOUT_CONTIGUOUS = 0, COLL_LAYOUT_STRIDED = 1 };

/* A geometry's shape as the profile keys it. */
typedef struct {
    uint32_t size;   /* tasks */
    uint32_t nodes;
    uint32_t ppn;    /* tasks per node (the most on one node) */
    uint8_t  layout; /* COLL_LAYOUT_* */
} coll_shape_t;

typedef struct {
    uint8_t      kind;  /* pami_xfer_type_t */
    uint8_t      type;  /* pami_type_t */
    uint8_t      op;    /* pami_op_t or COLL_PROFILE_OP_NONE */
    bool         failed; /* no metrics: the algorithm failed or timed out */
    char         algo[COLL_PROFILE_NAME_MAX];
    coll_shape_t shape;
    uint64_t     bytes; /* per rank, as the call's count * type size */
    double       median_us, min_us, max_us;
    uint32_t     count; /* repetitions */
    double       cpu;   /* the smallest share of the repetitions a member
                           was not kept waiting for a CPU; 0: unknown */
    char         why[48]; /* failed: what happened */
    uint8_t      round; /* the round of measurement (coll_round_t) */
} coll_prof_entry_t;

/* A round of measurement: a sweep made at one time, in one state of the
 * machine. The floor is the half round trip of a cache line between two
 * tasks of a node (pami-bench's floor_lat), measured by pami-tune at the
 * round's start and end: on a VM it moves several-fold with where the
 * host puts the CPUs, and with it the order of close algorithms. */
typedef struct {
    double floor_us;     /* at the start; 0: unknown */
    double floor_end_us; /* at the end; 0: unknown */
    char   started[24];  /* UTC, "2026-11-28T22:41:41Z"; "": unknown */
} coll_round_t;

typedef struct {
    char     cpu[128];
    uint32_t cores, nodes, ppn;
    char     ucx[32];
    char     transports[128];
} coll_machine_t;

typedef struct {
    uint32_t          format_version;
    char              producer[64];
    coll_machine_t    machine;
    uint32_t          nrounds; /* rounds[] in use; 0: one, unrecorded */
    coll_round_t      rounds[COLL_PROFILE_MAX_ROUNDS];
    coll_prof_entry_t *e;
    size_t            n, cap;
} coll_profile_t;

/* Whether name is an algorithm of kind (the registry, for the library);
 * NULL accepts every name. */
typedef bool (*coll_profile_known_fn)(const char *name, unsigned kind);

/* Parses and validates len bytes of buf into *p (zeroed first; free with
 * coll_profile_free, also after a failure). On a problem with the file
 * as a whole (not JSON, wrong types, bad numbers, duplicates, unknown
 * collectives, types or ops) returns false with why filled and *p empty.
 * Entries whose algorithm known() rejects are skipped: *skipped counts
 * them and skip_why names the first. */
bool coll_profile_parse(const char *buf, size_t len, coll_profile_known_fn known,
                        coll_profile_t *p, size_t *skipped, char *skip_why,
                        size_t skip_len, char *why, size_t why_len);

/* Reads the file (at most 256 MiB) into a buffer and parses it; a file
 * that cannot be read is a failure with why. */
bool coll_profile_load(const char *path, coll_profile_known_fn known,
                       coll_profile_t *p, size_t *skipped, char *skip_why,
                       size_t skip_len, char *why, size_t why_len);

/* Writes p as JSON (one entry a line); 0 or -1 with errno. */
int coll_profile_write(const coll_profile_t *p, FILE *f);
/* Writes to path through a temporary file renamed over it, so a reader
 * never sees half a profile. */
int coll_profile_save(const coll_profile_t *p, const char *path);

/* Appends a copy of e; false without memory or room. */
bool coll_profile_add(coll_profile_t *p, const coll_prof_entry_t *e);
/* Entry with the same key as e (kind, algo, shape, type, op, bytes,
 * round), or NULL. Linear. */
coll_prof_entry_t *coll_profile_find(coll_profile_t *p,
                                     const coll_prof_entry_t *e);
/* Later files override earlier ones (PAMI_COLL_PROFILE): entries of src
 * replace those of dst with the same key (round included), or are
 * added; round k of src is round k of dst. */
bool coll_profile_merge(coll_profile_t *dst, const coll_profile_t *src);
/* Sweeps made at other times (pami-tune --merge): every entry of src is
 * kept, its rounds added after dst's. False without memory or room for
 * the rounds (COLL_PROFILE_MAX_ROUNDS); dst is then partly merged. */
bool coll_profile_add_rounds(coll_profile_t *dst, const coll_profile_t *src);
/* Rounds of p as its entries may use them: nrounds, at least 1. */
uint32_t coll_profile_rounds(const coll_profile_t *p);
void coll_profile_free(coll_profile_t *p);

/* Stable names of the file. NULL / -1 for unknown ones. */
const char *coll_kind_name(unsigned kind);
int         coll_kind_by_name(const char *name);
const char *coll_type_name(unsigned type);
int         coll_type_by_name(const char *name);
const char *coll_op_name(unsigned op); /* "none" for COLL_PROFILE_OP_NONE */
int         coll_op_by_name(const char *name);
bool        coll_kind_reduces(unsigned kind);

/* This machine's fingerprint (CPU model, cores); nodes, ppn, ucx and
 * transports are left for the caller. */
void coll_machine_local(coll_machine_t *m);

/* ---- decision tables (coll_table.c) ---- */

/* Type classes of a call: 0 for collectives that do not reduce; for
 * reductions the element kind (1: integers up to 32 bits, 2: 64-bit
 * integers, 3: float, 4: double and long double), plus 5 for user ops. */
#define COLL_TCLASSES 10

/* Noise must not flip the choice at one size between neighbours that
 * agree: the previous size's algorithm stays first while within this
 * factor of the fastest and the next size's fastest is it again (not at
 * a crossover, nor at the last size). gen_builtin_rules.py reads this
 * line for the built-in rules, so the two kinds of table follow one
 * rule. */
#define COLL_TABLE_STICKY 1.05
unsigned coll_tclass(unsigned kind, unsigned type, unsigned op);

typedef struct {
    uint64_t lo;    /* calls of at least lo bytes ... */
    uint64_t point; /* the measured size this row comes from */
    uint8_t  algo;  /* registry id */
} coll_rule_t;

typedef struct {
    coll_shape_t shape; /* the profile's shape the rows come from */
    bool         exact; /* the geometry's own shape */
    uint32_t     first, n; /* rows in rules[] */
    uint64_t     hi;    /* ... and at most hi bytes use the rows */
} coll_span_t;

typedef struct coll_table {
    uint64_t    hash; /* of every row: the same tables, the same hash */
    coll_span_t span[PAMI_XFER_COUNT][COLL_TCLASSES];
    size_t      nrules;
    coll_rule_t rules[];
} coll_table_t;

/* Registry id of algorithm name for kind when a geometry of the shape
 * being built can run it with calls of type class tclass, else 0. */
typedef unsigned (*coll_runnable_fn)(void *arg, const char *name,
                                     unsigned kind, unsigned tclass);

/* The decision table of shape from p (docs/tuning.md: the shape rule,
 * the best algorithm per measured size, rows between measured sizes by
 * the nearest in log scale, one power of two beyond the ends). NULL
 * when p has nothing runnable for the shape, or without memory. Free
 * with free(). */
coll_table_t *coll_table_build(const coll_profile_t *p,
                               const coll_shape_t *shape,
                               coll_runnable_fn runnable, void *arg);

/* The row of a call, or NULL (no rows of that kind and class, or bytes
 * outside them). No allocation; log2 of the rows. */
const coll_rule_t *coll_table_lookup(const coll_table_t *t, unsigned kind,
                                     unsigned tclass, uint64_t bytes);

#endif /* PAMI_COLL_PROFILE_H */

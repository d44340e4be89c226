/*
 * pami-info --coll-profile PROFILE.json [--shape N[xP]]: the decision
 * table a geometry of N tasks, P per node (default: the profile's own
 * job shape) gets from the profile, built by the library's code
 * (coll_table_build). Requirements of the registry (power-of-two size,
 * commutative op) apply; checks that need a real geometry (the
 * shared-memory algorithms need one node's tasks, allreduce_hier several
 * nodes) are applied by the job when it creates the geometry.
 */
#include <pami.h>
#include <pami_collectives.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_profile.h"
#include "coll_profile_info.h"

typedef struct {
    pami_geometry_t world;
    coll_shape_t    shape;
    const char     *names[256];
} arg_t;

static unsigned runnable(void *p, const char *name, unsigned kind,
                         unsigned tclass)
{
    arg_t *a = p;
    pami_algorithm_t ids[64];
    pami_algorithm_metadata_t md[64];
    size_t na = 0, nc = 0;
    if (pami_geometry_algorithms_num(a->world, kind, &na, &nc) !=
            PAMI_SUCCESS || na + nc > 64)
        return 0;
    pami_geometry_algorithms_query(a->world, kind, ids, md, na, ids + na,
                                   md + na, nc);
    for (size_t i = 0; i < na + nc; i++) {
        if (strcmp(md[i].name, name) != 0 || ids[i] > 255)
            continue;
        if ((md[i].requirements & PAMI_ALGORITHM_REQ_POW2) &&
            (a->shape.size & (a->shape.size - 1)) != 0)
            return 0;
        if ((md[i].requirements & PAMI_ALGORITHM_REQ_COMMUTATIVE) &&
            tclass >= 5)
            return 0;
        a->names[ids[i]] = md[i].name;
        return ids[i];
    }
    return 0;
}

static const char *class_name(unsigned kind, unsigned c)
{
    static const char *const n[] = {"", "int32 and smaller", "int64",
                                    "float", "double", "",
                                    "int32 and smaller, user op",
                                    "int64, user op", "float, user op",
                                    "double, user op"};
    return coll_kind_reduces(kind) ? n[c] : "any type";
}

int coll_profile_info(pami_context_t ctx, const char *path,
                      const char *shape)
{
    coll_profile_t p;
    char why[256], skip_why[160];
    size_t skipped = 0;
    if (!coll_profile_load(path, NULL, &p, &skipped, skip_why,
                           sizeof(skip_why), why, sizeof(why))) {
        fprintf(stderr, "pami-info: %s: %s\n", path, why);
        return 1;
    }
    arg_t a = {0};
    pami_geometry_world(ctx, &a.world);
    /* The profile's own job: its fields are each at most 2^24, so the
     * product is taken in 64 bits and capped like any size. */
    uint64_t n = (uint64_t)p.machine.nodes * p.machine.ppn,
             ppn = p.machine.ppn;
    if (n > COLL_PROFILE_MAX_TASKS)
        n = COLL_PROFILE_MAX_TASKS;
    if (ppn > n)
        ppn = n;
    if (shape != NULL) {
        char *end;
        /* strtoull takes "-1" as a huge number: no sign is allowed. */
        bool sign = strchr(shape, '-') != NULL || strchr(shape, '+') != NULL;
        n = strtoull(shape, &end, 10);
        ppn = n;
        if (*end == 'x')
            ppn = strtoull(end + 1, &end, 10);
        if (sign || *end != '\0' || n == 0 || ppn == 0 ||
            n > COLL_PROFILE_MAX_TASKS) {
            fprintf(stderr, "pami-info: --shape %s is not N or NxP\n", shape);
            coll_profile_free(&p);
            return 2;
        }
        if (ppn > n)
            ppn = n;
    }
    a.shape = (coll_shape_t){.size = (uint32_t)n,
                             .nodes = (uint32_t)((n + ppn - 1) / ppn),
                             .ppn = (uint32_t)ppn};
    printf("profile %s: %zu points by %s on %s\n", path, p.n, p.producer,
           p.machine.cpu);
    if (coll_profile_rounds(&p) > 1) /* docs/tuning.md */
        printf("%u rounds: per size the smallest worst ratio to a round's "
               "fastest\n", coll_profile_rounds(&p));
    printf("decision table of a geometry of %u tasks on %u node(s), at most "
           "%u per node:\n", a.shape.size, a.shape.nodes, a.shape.ppn);
    coll_table_t *t = coll_table_build(&p, &a.shape, runnable, &a);
    if (t == NULL) {
        printf("  (empty: nothing runnable for this shape; built-in rules)\n");
        coll_profile_free(&p);
        return 0;
    }
    for (unsigned k = 0; k < PAMI_XFER_COUNT; k++)
        for (unsigned c = 0; c < COLL_TCLASSES; c++) {
            const coll_span_t *sp = &t->span[k][c];
            if (sp->n == 0)
                continue;
            printf("  %s (%s), from the profile's %u tasks (%u x %u)%s:\n",
                   coll_kind_name(k), class_name(k, c), sp->shape.size,
                   sp->shape.nodes, sp->shape.ppn,
                   sp->exact ? "" : ", the nearest shape");
            for (uint32_t i = 0; i < sp->n; i++) {
                const coll_rule_t *r = &t->rules[sp->first + i];
                uint64_t hi = i + 1 < sp->n ? r[1].lo - 1 : sp->hi;
                printf("    %10llu .. %-10llu B  %-34s (measured at %llu B)\n",
                       (unsigned long long)r->lo, (unsigned long long)hi,
                       a.names[r->algo] ? a.names[r->algo] : "?",
                       (unsigned long long)r->point);
            }
        }
    printf("  outside these rows: the built-in rules\n");
    free(t);
    coll_profile_free(&p);
    return 0;
}

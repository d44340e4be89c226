/*
 * Structs a program fills, as the layout it was built with: the *_sized
 * entry points get sizeof(*params) from the program (the static inline
 * wrappers of pami.h pass it), so a struct can grow at its end without
 * breaking built programs (docs/abi.md, "Structs that grow").
 */
#ifndef PAMI_PARAMS_H
#define PAMI_PARAMS_H

#include <stddef.h>

#include "pami.h"

/* sizeof a struct T that ended at field f: what a program built before
 * the fields after f existed passes. */
#define PAMI_PARAMS_PREFIX(T, f)                                             \
    ((offsetof(T, f) + sizeof(((T *)0)->f) + _Alignof(T) - 1) /              \
     _Alignof(T) * _Alignof(T))

/* The layouts of one struct that pami accepts: each a prefix ending at a
 * field at or after its required ones, the last the whole struct. */
typedef struct {
    const char   *name;   /* "pami_send_t", for the log line */
    const size_t *sizes;
    size_t        num_sizes;
} pami_params_layouts_t;

#define PAMI_PARAMS_LAYOUTS(var, T, ...)                                     \
    static const size_t var##_sizes[] = {__VA_ARGS__, sizeof(T)};            \
    static const pami_params_layouts_t var = {                               \
        #T, var##_sizes, sizeof(var##_sizes) / sizeof(var##_sizes[0])}

/* A program's struct p of `given` bytes as the current layout: p itself
 * when the sizes agree, else a copy in buf (the current size) with the
 * fields the program's layout lacks zeroed. PAMI_INVAL and a log line
 * naming the struct for a size that is no layout of it (a program built
 * against a newer pami, or a wrong size). */
pami_result_t pami_params_in_copy(const pami_params_layouts_t *l,
                                  const void *p, size_t given, void *buf,
                                  const void **out);
/* Inline: every send and one-sided call passes through here, and a
 * program built against this pami.h takes the first branch. */
static inline pami_result_t pami_params_in(const pami_params_layouts_t *l,
                                           const void *p, size_t given,
                                           void *buf, const void **out)
{
    if (__builtin_expect(given == l->sizes[l->num_sizes - 1], 1)) {
        *out = p;
        return PAMI_SUCCESS;
    }
    return pami_params_in_copy(l, p, given, buf, out);
}

/* For a struct pami fills: PAMI_SUCCESS when `given` is a layout of it
 * (then exactly `given` bytes of the current struct are written). */
pami_result_t pami_params_out(const pami_params_layouts_t *l, size_t given);

/* The field_mask bits this pami knows, per struct. */
#define PAMI_CLIENT_PARAM_KNOWN                                              \
    (PAMI_CLIENT_PARAM_BOOTSTRAP | PAMI_CLIENT_PARAM_OOB |                   \
     PAMI_CLIENT_PARAM_ASYNC_PROGRESS | PAMI_CLIENT_PARAM_WAIT_SPIN |      \
     PAMI_CLIENT_PARAM_SHM_MEMBARRIER)
#define PAMI_CLIENT_ATTR_KNOWN                                               \
    (PAMI_CLIENT_ATTR_TASK | PAMI_CLIENT_ATTR_SIZE |                         \
     PAMI_CLIENT_ATTR_LOCAL_TASKS | PAMI_CLIENT_ATTR_DISPATCH_MAX |          \
     PAMI_CLIENT_ATTR_HEADER_MAX | PAMI_CLIENT_ATTR_IMMEDIATE_MAX |          \
     PAMI_CLIENT_ATTR_RNDV_THRESHOLD | PAMI_CLIENT_ATTR_NUM_CONTEXTS |       \
     PAMI_CLIENT_ATTR_NAME | PAMI_CLIENT_ATTR_BOOTSTRAP |                    \
     PAMI_CLIENT_ATTR_TRANSPORT | PAMI_CLIENT_ATTR_JOB_ID |                  \
     PAMI_CLIENT_ATTR_LOCAL_CPUS | PAMI_CLIENT_ATTR_NODES)
#define PAMI_CONTEXT_PARAM_KNOWN 0u
#define PAMI_DISPATCH_HINT_KNOWN 0u

/* PAMI_INVAL and a log line naming the struct when mask has a bit this
 * pami does not know (a program built against a newer pami.h, or a
 * stray value): such a field would be ignored without a word. */
pami_result_t pami_params_mask(const char *name, uint64_t mask,
                               uint64_t known);

/* The two send structs as pami_params_in takes them (send.c); shared
 * by the program's sends and the protocols'. */
pami_result_t pami_send_immediate_import(const pami_send_immediate_t *p,
                                         size_t size,
                                         pami_send_immediate_t *buf,
                                         const pami_send_immediate_t **out);
pami_result_t pami_send_import(const pami_send_t *p, size_t size,
                               pami_send_t *buf, const pami_send_t **out);

#endif

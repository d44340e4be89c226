/*
 * The collectives' structs as a program built against an older
 * pami_collectives.h has them. A program's pami_xfer_t as the
 * collectives read it. The struct grows by
 * fields that come with a field_mask bit (docs/abi.md, "Structs that
 * grow"), so a program built before a field existed has a shorter struct:
 * nothing past the base fields is read unless its bit is set, and a bit
 * this pami does not know is refused.
 */
#include <stdbool.h>
#include <string.h>

#include "coll.h"

const char *coll_xfer_mask_invalid(uint64_t mask)
{
    return (mask & ~(uint64_t)COLL_XFER_FIELDS_KNOWN) != 0
               ? "field_mask has bits this pami does not know (built "
                 "against a newer pami_collectives.h, or not initialised)"
               : NULL;
}

void coll_xfer_copy(pami_xfer_t *dst, const pami_xfer_t *x)
{
    memset(dst, 0, sizeof(*dst));
    /* The base fields, field_mask .. op: in every layout. */
    memcpy(dst, x, offsetof(pami_xfer_t, op) + sizeof(x->op));
    if (x->field_mask & PAMI_XFER_FIELD_USER_OP) {
        dst->user_fn          = x->user_fn;
        dst->user_cookie      = x->user_cookie;
        dst->user_commutative = x->user_commutative;
    }
    if (x->field_mask & PAMI_XFER_FIELD_VCOUNTS) {
        dst->rcounts = x->rcounts, dst->rdispls = x->rdispls;
        dst->scounts = x->scounts, dst->sdispls = x->sdispls;
    }
}

/* sizeof a pami_algorithm_selection_t that ended at field f. */
#define SEL_PREFIX(f)                                                        \
    ((offsetof(pami_algorithm_selection_t, f) +                              \
      sizeof(((pami_algorithm_selection_t *)0)->f) +                         \
      _Alignof(pami_algorithm_selection_t) - 1) /                            \
     _Alignof(pami_algorithm_selection_t) *                                  \
     _Alignof(pami_algorithm_selection_t))

pami_result_t pami_geometry_algorithm_selected_sized(
    const pami_xfer_t *x, pami_algorithm_selection_t *out, size_t size)
{
    /* Each layout ends at a field from `why` on; pami writes no more. */
    static const size_t sizes[] = {
        SEL_PREFIX(why),     SEL_PREFIX(point_bytes), SEL_PREFIX(range_lo),
        SEL_PREFIX(range_hi), SEL_PREFIX(shape_size), SEL_PREFIX(shape_nodes),
        SEL_PREFIX(shape_tasks_per_node), SEL_PREFIX(bytes),
        SEL_PREFIX(builtin), sizeof(pami_algorithm_selection_t)};
    bool known = false;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        known |= sizes[i] == size;
    if (!known) {
        coll_warn("algorithm_selected: pami_algorithm_selection_t of %zu "
                  "bytes is no layout of this pami (%zu bytes now)",
                  size, sizeof(pami_algorithm_selection_t));
        return PAMI_INVAL;
    }
    if (out == NULL)
        return coll_algorithm_selected(x, NULL);
    pami_algorithm_selection_t full;
    pami_result_t rc = coll_algorithm_selected(x, &full);
    if (rc == PAMI_SUCCESS)
        memcpy(out, &full, size);
    return rc;
}

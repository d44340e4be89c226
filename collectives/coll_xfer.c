/*
 * A program's pami_xfer_t as the collectives read it. The struct grows by
 * fields that come with a field_mask bit (docs/abi.md, "Structs that
 * grow"), so a program built before a field existed has a shorter struct:
 * nothing past the base fields is read unless its bit is set, and a bit
 * this pami does not know is refused.
 */
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

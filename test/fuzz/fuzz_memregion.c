/*
 * libFuzzer target: the wire form of a memory region that came from
 * anywhere (a peer's header, a program's forged handle):
 * pami_mr_wire_decode, which every RMA call and every packet carrying a
 * region goes through before anything in it is used, and
 * pami_memregion_query.
 *
 * Input: u8 flags (bit 0: put the right seal on it first), u8 job size,
 * then the region's bytes (any length; the wire form is 256).
 */
#include "fuzz_util.h"
#include "fuzz_mr.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f      = {in, size};
    unsigned flags  = fz_u8(&f);
    size_t   ntasks = fz_u8(&f) + 1u;
    size_t   len;
    uint8_t *mr = fz_bytes(&f, f.left, &len);
    if (flags & 1)
        fz_reseal(mr, len);

    pami_mr_view_t v;
    if (pami_mr_wire_decode(mr, len, fz_secrets(), ntasks, &v) ==
        PAMI_MR_OK) {
        /* The key the view points at lies inside the handle. */
        if (len != sizeof(pami_memregion_t) || v.owner_task >= ntasks ||
            v.rkey < mr || v.rkey >= mr + len)
            abort();
        fz_touch(v.rkey, (size_t)(mr + len - v.rkey));
    }
    if (len == sizeof(pami_memregion_t)) {
        void           *base;
        size_t          bytes;
        pami_endpoint_t owner;
        (void)pami_memregion_query((const pami_memregion_t *)mr, &base,
                                   &bytes, &owner);
    }
    free(mr);
    return 0;
}

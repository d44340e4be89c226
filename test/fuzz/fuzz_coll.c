/*
 * libFuzzer target: the collectives' message header (coll_hdr_decode in
 * collectives/coll_protocol.c), every check on_message makes before it
 * looks for the geometry.
 *
 * Input: u32 payload bytes that came with it, then the header.
 */
#include "fuzz_util.h"
#include "coll.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f    = {in, size};
    size_t   dlen = fz_u32(&f);
    size_t   len;
    uint8_t *hdr = fz_bytes(&f, f.left, &len);

    coll_hdr_t h;
    if (coll_hdr_decode(hdr, len, dlen, &h) == NULL) {
        /* What the schedule relies on: a piece inside its message, a
         * ConnID that matches the sequence number. */
        if (h.offset > h.total || dlen > h.total - h.offset ||
            h.connid >= PAMI_CONNID_BUFFER || h.kind > COLL_KIND_CREATE)
            abort();
    }
    free(hdr);
    return 0;
}

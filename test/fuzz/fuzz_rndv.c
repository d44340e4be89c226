/*
 * libFuzzer target: the rendezvous request (pami_rndv_rts_decode) with
 * the memory region inside it (pami_mr_decode), as pami_rndv_recv gets
 * them after the AM header and ack cookie.
 *
 * Input: u8 flags (bit 0: seal its region right), u8 job size, u32
 * origin task, then the request (fixed part and user header).
 */
#include "fuzz_util.h"
#include "fuzz_mr.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f      = {in, size};
    unsigned flags  = fz_u8(&f);
    size_t   ntasks = fz_u8(&f) + 1u;
    uint32_t origin = fz_u32(&f);
    size_t   len;
    uint8_t *buf = fz_bytes(&f, f.left, &len);
    if ((flags & 1) && len >= sizeof(pami_rndv_rts_t))
        fz_reseal(buf + offsetof(pami_rndv_rts_t, mr), PAMI_MEMREGION_SIZE);

    pami_rndv_rts_t rts;
    if (pami_rndv_rts_decode(buf, len, origin, fz_secrets(), ntasks, &rts) ==
        PAMI_WIRE_OK) {
        fz_touch(buf + sizeof(rts), len - sizeof(rts));
        if ((rts.flags & RNDV_FLAG_DATA) && !(rts.flags & RNDV_FLAG_MSG))
            abort(); /* the first chunk rides only with MSG */
        if ((rts.flags & RNDV_FLAG_NOACK) &&
            (!(rts.flags & RNDV_FLAG_DATA) || rts.bytes > RNDV_MSG_CHUNK))
            abort(); /* no ack only when the RTS holds all of it */
        if (rts.flags & RNDV_FLAG_MSG) {
            /* Served by the origin: nothing of its memory is named. */
            static const pami_memregion_t zero;
            if (rts.base != 0 || rts.bytes == 0 ||
                memcmp(&rts.mr, &zero, sizeof(zero)) != 0 ||
                (rts.flags & RNDV_FLAG_CMA))
                abort();
        } else if (!(rts.flags & RNDV_FLAG_CMA)) {
            pami_mr_view_t v;
            /* What the decoder accepted must describe the request. */
            if (pami_mr_wire_decode(&rts.mr, sizeof(rts.mr), fz_secrets(),
                                    ntasks, &v) != PAMI_MR_OK ||
                v.owner_task != origin || v.base != rts.base ||
                v.bytes != rts.bytes)
                abort();
        }
    }
    free(buf);
    return 0;
}

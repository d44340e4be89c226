/*
 * libFuzzer target: the active-message header as pami_am_recv sees it
 * (pami_am_decode in pami/wire.c), and the core payloads it routes by id:
 * the ack, the core barrier message, the liveness probe and the
 * rendezvous request.
 *
 * Input: u8 job size, u8 contexts per task, u16 UCX header length, u8
 * flags (bit 0: came by UCX rendezvous; bit 1: seal a request's region
 * right), then the bytes UCX delivered: the header (that many bytes),
 * the rest as payload.
 */
#include "fuzz_util.h"
#include "fuzz_mr.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f        = {in, size};
    uint32_t ntasks   = fz_u8(&f) + 1u;
    uint32_t nctx     = fz_u8(&f) % 4 + 1u;
    size_t   hdr_want = fz_u16(&f);
    unsigned flags    = fz_u8(&f);
    int      desc     = flags & 1;
    size_t   hdr_len, data_len;
    uint8_t *hdr  = fz_bytes(&f, hdr_want, &hdr_len);
    uint8_t *data = fz_bytes(&f, f.left, &data_len);

    pami_am_msg_t m;
    pami_wire_check_t rc = pami_am_decode(hdr, hdr_len, data, data_len,
                                          desc ? data : NULL, ntasks, nctx,
                                          &m);
    if (rc == PAMI_WIRE_OK) {
        fz_touch(m.uhdr, m.uhdr_len);
        fz_touch(m.data, m.data_len);
        if (m.h.origin_task >= ntasks || m.h.origin_ctx >= nctx)
            abort(); /* the decoder let an origin outside the job through */
        switch (m.h.dispatch) {
        case PAMI_DISPATCH_ACK: {
            pami_ack_t    ack;
            pami_result_t r;
            if (pami_ack_decode(m.uhdr, m.uhdr_len, &ack, &r) ==
                    PAMI_WIRE_OK &&
                (unsigned)r >= PAMI_RESULT_LAST)
                abort();
            break;
        }
        case PAMI_DISPATCH_BARRIER: {
            pami_barrier_msg_t b;
            if (pami_barrier_msg_decode(m.uhdr, m.uhdr_len, &b) ==
                    PAMI_WIRE_OK &&
                b.round >= 64)
                abort();
            break;
        }
        case PAMI_DISPATCH_PROBE: {
            pami_probe_msg_t p;
            if (pami_probe_decode(m.uhdr, m.uhdr_len, &p) == PAMI_WIRE_OK &&
                ((p.kind != PAMI_PROBE_ASK && p.kind != PAMI_PROBE_ANSWER) ||
                 p.reserved[0] | p.reserved[1] | p.reserved[2]))
                abort(); /* a probe of a form the receiver cannot use */
            break;
        }
        case PAMI_DISPATCH_RNDV: {
            pami_rndv_rts_t rts;
            if ((flags & 2) && m.uhdr_len >= sizeof(rts))
                fz_reseal((uint8_t *)m.uhdr + offsetof(pami_rndv_rts_t, mr),
                          PAMI_MEMREGION_SIZE);
            if (m.ack && pami_rndv_rts_decode(m.uhdr, m.uhdr_len,
                                              m.h.origin_task, fz_secrets(),
                                              ntasks, &rts) == PAMI_WIRE_OK)
                fz_touch(m.uhdr + sizeof(rts), m.uhdr_len - sizeof(rts));
            break;
        }
        default:
            break;
        }
    }
    free(hdr);
    free(data);
    return 0;
}

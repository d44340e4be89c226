/*
 * libFuzzer target: the messages of the split read on one node
 * (pami_rndv_write_decode), as pami_rndv_split_recv gets them after the
 * AM header: the ASK that makes an origin write part of its payload into
 * the asking task, and the DONE that ends the target's transfer.
 *
 * Input: u8 flags (bit 0: the bytes after the 56-byte message are AM
 * data), then the message (and its data).
 */
#include "fuzz_util.h"
#include "internal.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f = {in, size};
    size_t   mlen, dlen;
    uint8_t *buf = fz_message(&f, sizeof(pami_rndv_write_t), &mlen, &dlen);

    pami_rndv_write_t m;
    if (pami_rndv_write_decode(buf, mlen, dlen, &m) == PAMI_WIRE_OK) {
        /* What the decoder accepted must be what serve and take rely on:
         * no data, a range that does not wrap in the payload nor at the
         * destination, a result the receiver can name. */
        if (dlen != 0 || mlen != sizeof(m) || m.version != RNDV_VERSION ||
            m.reserved != 0 || m.bytes == 0 ||
            m.offset > UINT64_MAX - m.bytes || m.dest == 0 ||
            m.dest > UINT64_MAX - m.bytes)
            abort();
        if (m.type == RNDV_WRITE_ASK ? m.result != PAMI_SUCCESS
                                     : m.type != RNDV_WRITE_DONE ||
                                           m.result < 0 ||
                                           m.result >= PAMI_RESULT_LAST)
            abort();
        fz_touch(pami_error_text((pami_result_t)m.result), 1);
    }
    free(buf);
    return 0;
}

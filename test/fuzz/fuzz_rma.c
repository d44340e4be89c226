/*
 * libFuzzer target: the messages of one-sided operations through the
 * owner (pami_rma_msg_decode, docs/protocols/rma.md), as the owner gets
 * PUT, GET, ATOMIC, FENCE, HELP, CLAIMS and REQUESTS and the origin REPLY,
 * PUT_DONE and REPLIES (the two gathered kinds walked with
 * pami_rma_gathered_next) after the AM header, over TCP from any peer.
 *
 * Input: u8 flags (bit 0: the bytes after the 64-byte message are AM
 * data), then the message (and its data).
 */
#include "fuzz_util.h"
#include "internal.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f = {in, size};
    size_t   mlen, dlen;
    uint8_t *buf = fz_message(&f, sizeof(pami_rma_msg_t), &mlen, &dlen);

    pami_rma_msg_t m;
    if (pami_rma_msg_decode(buf, mlen, dlen, &m) == PAMI_WIRE_OK) {
        /* What the decoder accepted must be what the owner and the
         * origin rely on: the whole message, this version, the data a
         * type carries and nothing else, fields in their ranges. */
        if (mlen != sizeof(m) || m.version != PAMI_RMA_MSG_VERSION ||
            m.reserved != 0)
            abort();
        switch (m.type) {
        case PAMI_RMA_MSG_PUT:
            /* Unanswered (quiet) only when claimed: its word answers. */
            if (dlen != m.bytes || m.op > PAMI_RMA_PUT_QUIET ||
                (m.op == PAMI_RMA_PUT_QUIET && m.compare == 0))
                abort();
            break;
        case PAMI_RMA_MSG_GET:
            /* A claimed get's number never has the busy bit. */
            if (dlen != 0 || m.compare >= PAMI_RMA_CLAIM_BUSY)
                abort();
            break;
        case PAMI_RMA_MSG_FENCE:
            if (dlen != 0)
                abort();
            break;
        case PAMI_RMA_MSG_ATOMIC:
            if (dlen != 0 || (m.size != 4 && m.size != 8) ||
                m.bytes != m.size || m.op > PAMI_RMW_ADD)
                abort();
            break;
        case PAMI_RMA_MSG_REPLY:
            if (m.result < 0 || m.result >= PAMI_RESULT_LAST)
                abort();
            fz_touch(pami_error_text((pami_result_t)m.result), 1);
            break;
        case PAMI_RMA_MSG_PUT_DONE:
            if (m.result != PAMI_SUCCESS || dlen != m.bytes || m.bytes == 0 ||
                m.bytes % sizeof(uint64_t) != 0 ||
                m.bytes > PAMI_RMA_PUT_DONE_MAX * sizeof(uint64_t))
                abort();
            /* The cookies as the origin reads them. */
            for (size_t i = 0; i < dlen / sizeof(uint64_t); i++) {
                uint64_t c;
                memcpy(&c, buf + mlen + i * sizeof(c), sizeof(c));
                fz_touch(&c, sizeof(c));
            }
            break;
        case PAMI_RMA_MSG_HELP:
            /* The owner opens result as a descriptor of the origin and
             * claims only the exact token. */
            if (dlen != 0 || m.op > 1 || m.size != 0 || m.result < 0 ||
                m.bytes == 0 || m.compare == 0)
                abort();
            break;
        case PAMI_RMA_MSG_CLAIMS:
            /* The origin's page of claim words: exactly one region's
             * handle, which the owner then checks as any copy. */
            if (m.result != PAMI_SUCCESS || m.op != 0 || m.size != 0 ||
                m.bytes != sizeof(pami_memregion_t) || dlen != m.bytes)
                abort();
            fz_touch(buf + mlen, dlen);
            break;
        case PAMI_RMA_MSG_REPLIES:
        case PAMI_RMA_MSG_REQUESTS: {
            if (m.result != PAMI_SUCCESS || m.op != 0 || m.size != 0 ||
                dlen != m.bytes || m.bytes < sizeof(m) ||
                m.bytes > PAMI_RMA_GATHER_BYTES)
                abort();
            /* The walk the origin (REPLIES) or the owner (REQUESTS)
             * makes: every message of its kind, its data inside the
             * payload, the offset only moving forward. */
            const uint8_t *all = buf + mlen;
            size_t         off = 0;
            while (off < dlen) {
                size_t         was = off;
                pami_rma_msg_t one;
                const uint8_t *data;
                if (pami_rma_gathered_next(m.type, all, dlen, &off, &one,
                                           &data) != PAMI_WIRE_OK)
                    break;
                size_t carried = one.type == PAMI_RMA_MSG_GET ? 0 : one.bytes;
                bool   kind    = m.type == PAMI_RMA_MSG_REPLIES
                                     ? one.type == PAMI_RMA_MSG_REPLY
                                     : one.type == PAMI_RMA_MSG_PUT ||
                                           one.type == PAMI_RMA_MSG_GET;
                if (!kind || off <= was || off > dlen ||
                    one.bytes > PAMI_RMA_GATHER_DATA_MAX ||
                    data != all + was + sizeof(one) ||
                    data + carried != all + off)
                    abort();
                fz_touch(data, carried);
            }
            break;
        }
        default:
            abort();
        }
    }
    free(buf);
    return 0;
}

/*
 * libFuzzer target: the messages of the rendezvous served by its origin
 * (pami_rndv_chunk_decode), and the target's test of a DATA against the
 * chunks it asked for (pami_rndv_chunk_wanted), as pami_rndv_msg_recv
 * gets them after the AM header.
 *
 * Input: u8 flags (bit 0: the bytes after the 48-byte message are its AM
 * data), u64 payload length, u8 chunk size in KiB - 1, u16 first chunk
 * not here, u8 chunks asked for beyond it (at most 64), u64 bitmap of the
 * chunks here, then the message (and its data).
 */
#include "fuzz_util.h"
#include "internal.h"

FZ_QUIET_INIT

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    fz_t     f     = {in, size};
    unsigned flags = fz_u8(&f);
    uint64_t total = fz_take(&f, 8);
    uint64_t chunk = ((uint64_t)fz_u8(&f) + 1) * 1024;
    uint64_t lo    = fz_u16(&f);
    uint64_t next  = lo + fz_u8(&f) % 65;
    uint64_t got   = fz_take(&f, 8);
    size_t   len;
    uint8_t *buf = fz_bytes(&f, f.left, &len);
    size_t   mlen = len, dlen = 0;
    if ((flags & 1) && len >= sizeof(pami_rndv_chunk_t)) {
        mlen = sizeof(pami_rndv_chunk_t);
        dlen = len - mlen;
    }

    pami_rndv_chunk_t m;
    if (pami_rndv_chunk_decode(buf, mlen, dlen, &m) == PAMI_WIRE_OK) {
        /* What the decoder accepted must be what the receiver relies on. */
        if (m.bytes == 0 || m.bytes > RNDV_CHUNK_MAX ||
            m.offset > UINT64_MAX - m.bytes ||
            (m.type != RNDV_CHUNK_FETCH && m.type != RNDV_CHUNK_DATA))
            abort();
        bool with_data = m.type == RNDV_CHUNK_DATA &&
                         m.result == PAMI_SUCCESS;
        if (with_data ? dlen != m.bytes : dlen != 0)
            abort();
        fz_touch(buf + mlen, dlen);
        uint64_t k;
        if (with_data && pami_rndv_chunk_wanted(total, chunk, lo, next, got,
                                                m.offset, m.bytes, &k)) {
            /* The landing range lies inside the announced payload, in a
             * chunk asked for and not here yet. */
            if (m.offset > total || m.bytes > total - m.offset ||
                k < lo || k >= next || ((got >> (k - lo)) & 1u) ||
                k * chunk != m.offset)
                abort();
        }
    }
    free(buf);
    return 0;
}
